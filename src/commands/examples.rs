//! Every command's examples: one table, shown after the command's help.
//!
//! `cli::command()` puts each list into the clap tree as the "Examples:" block of `--help`
//! (short and long), so the man pages and the generated CLI reference show the same lines.
//! Unit tests check the table names every visible command, and that clap accepts every line.

/// Every visible command path (as typed after `writerctl`; `""` for `writerctl` itself) with
/// its example command lines, shown in this order. A line may go on after a `\` and a newline
/// (indented by four spaces), as a shell continues it.
pub const EXAMPLES: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "writerctl status --runtime-dir ~/.qwen",
            "writerctl run --session \"$SID\" -- my-writer",
            "writerctl master status --project web",
        ],
    ),
    (
        "acquire",
        &[
            "writerctl acquire --runtime-dir ~/.qwen --session \"$SID\" --token-file owner.token",
            "writerctl acquire --session \"$SID\" --managed --pid \"$WRITER_PID\" --json",
            "writerctl acquire --session \"$SID\" --wait 30 --token-file owner.token   # like flock -w 30",
            "writerctl acquire --session \"$SID\" --token-file owner.token --reason \"manual repair, ticket OPS-7\"",
        ],
    ),
    (
        "release",
        &[
            "writerctl release --session \"$SID\" --token-file owner.token",
            "writerctl release --session \"$SID\" --token-file owner.token --dry-run --json   # check only",
            "writerctl release --session \"$SID\" --token-file owner.token --reason \"session closed by operator\"",
        ],
    ),
    (
        "seal",
        &[
            "writerctl seal --session \"$SID\" --token-file owner.token --json",
            "writerctl seal --session \"$SID\" --token-file owner.token --reason \"maintenance window\"",
            "writerctl seal --session \"$SID\"        # preStop: asks the local `writerctl run`",
        ],
    ),
    (
        "takeover",
        &[
            "writerctl takeover --session \"$SID\" --dry-run --json             # the plan; nothing changes",
            "writerctl takeover --session \"$SID\" --token-file owner.token --json",
            "writerctl takeover --session \"$SID\" --wait 60 --token-file owner.token   # until the old writer seals",
            "writerctl takeover --session \"$SID\" --token-file owner.token --reason \"failover after node drain\"",
        ],
    ),
    (
        "run",
        &[
            "writerctl run --session \"$SID\" --grace 30 -- my-writer --serve",
            "WRITERCTL_SESSION_WRITER_LEASE=1 writerctl run --session \"$SID\" --wait 60 -- my-writer",
            "writerctl run --session \"$SID\" --reason \"deploy v2.3 (rollout 41)\" -- my-writer",
        ],
    ),
    (
        "completions",
        &[
            "writerctl completions bash > /etc/bash_completion.d/writerctl",
            "writerctl completions zsh > \"${fpath[1]}/_writerctl\"",
        ],
    ),
    (
        "man",
        &[
            "writerctl man run                    # what `man writerctl-run` shows, without installed pages",
            "writerctl man master claim --roff > writerctl-master-claim.1",
            "writerctl man --out-dir ~/.local/share/man/man1 && man writerctl-run",
        ],
    ),
    ("verify", &["writerctl verify --session \"$SID\" || echo \"the transcript changed since it was sealed\""]),
    (
        "recover",
        &[
            "writerctl recover --session \"$SID\"                          # dry run: the plan",
            "writerctl recover --session \"$SID\" --writers-fenced --yes   # carry it out (moves, never deletes)",
            "writerctl recover --session \"$SID\" --writers-fenced --yes --reason \"node lost, fenced by OPS-42\"",
        ],
    ),
    (
        "status",
        &[
            "writerctl status                      # every session under the runtime directory",
            "writerctl status --session \"$SID\" --json",
            "writerctl status --format prometheus --output /var/lib/prometheus/node-exporter/writerctl.prom",
            "writerctl status --watch                   # a new report each time a lock changes; Ctrl-C ends it",
            "writerctl status --session \"$SID\" --watch --json | jq -c '{at, state, live}'",
        ],
    ),
    (
        "session register",
        &[
            "writerctl session register --project web --identity alice --identity-key-file alice.key --token-file alice.tok",
            "WRITERCTL_IDENTITY_KEY=... writerctl session register --project web --identity bob --machine host-b --json",
            "writerctl session register --project web --identity alice --previous-token-file alice.tok --token-file alice.tok.new",
        ],
    ),
    ("session heartbeat", &["writerctl session heartbeat --project web --session SID --token-file alice.tok"]),
    ("session deregister", &["writerctl session deregister --project web --session SID --token-file alice.tok"]),
    (
        "master status",
        &[
            "writerctl master status --project web",
            "writerctl master status --project web --watch --coordinator https://coord:7878",
            "writerctl master status --project web --watch --json | jq -c '{at, master}'",
        ],
    ),
    (
        "master handoff",
        &[
            "writerctl master handoff --project web --session SID --token-file alice.tok --to bob",
            "writerctl master handoff --project web --session SID --to bob --to-session SID2 --expect-epoch 4 --yes",
            "writerctl master handoff --project web --session SID --to bob --reason \"deploy of 4.2\" --yes",
            "writerctl master handoff --project web --session SID --to bob --dry-run --json",
        ],
    ),
    (
        "master claim",
        &[
            "writerctl master claim --project web --to bob --operator ops --password-file ops.pw --yes",
            "WRITERCTL_OPERATOR_PASSWORD=... writerctl master claim --project web --to bob --operator ops --json",
            "writerctl master claim --project web --to bob --operator ops --password-file ops.pw --dry-run",
            "writerctl master claim --project web --to bob --operator ops --password-file ops.pw --reason \"alice's host is down\" --yes",
        ],
    ),
    (
        "master history",
        &["writerctl master history --project web", "writerctl master history --project web --limit 10 --json"],
    ),
    (
        "operator add",
        &[
            "writerctl operator add ops                      # prompts twice on a terminal",
            "printf '%s\\n' \"$PW\" | writerctl operator add ops --password-stdin --json",
        ],
    ),
    (
        "identity add",
        &[
            "writerctl identity add --project web alice --key-file alice.key",
            "writerctl identity add --project web bob --json",
        ],
    ),
    ("identity list", &["writerctl identity list --project web --json"]),
    ("identity rotate", &["writerctl identity rotate --project web alice --key-file alice.key.new"]),
    ("identity remove", &["writerctl identity remove --project web alice --json"]),
    (
        "inbox",
        &[
            "writerctl inbox --project web --identity alice --token-file alice.tok",
            "writerctl inbox --project web --identity alice --token-file alice.tok --after 12 --follow --json",
        ],
    ),
    ("audit", &["writerctl audit --project web --limit 20", "writerctl audit prune --older-than-days 90"]),
    (
        "audit prune",
        &[
            "writerctl audit prune --older-than-days 90",
            "writerctl audit prune --older-than-days 90 --inbox-older-than-days 7 --inbox-max-events 1000 --json",
        ],
    ),
    (
        "audit export",
        &[
            "writerctl audit export --since 2026-12-01T00:00:00Z > audit.jsonl",
            "writerctl audit export --project web --since 2026-12-01T00:00:00Z --format csv > web.csv",
            "writerctl audit export --since 2026-12-01T00:00:00Z --cursor 4211 >> audit.jsonl",
        ],
    ),
    (
        "channel create",
        &[
            "writerctl channel create --project web --channel merges --steward carol --sla-minutes 60",
            "writerctl channel create --project web --channel triage --steward carol --ttl-floor-minutes 10 --json",
        ],
    ),
    ("channel show", &["writerctl channel show --project web --channel merges --json"]),
    (
        "claim take",
        &[
            "writerctl claim take --project web --channel merges --task PR-42 --seat alice --token-file alice.tok",
            "writerctl claim take --project web --channel merges --task PR-42 --seat alice --token-file alice.tok \\\n    --deputy bob --ttl-minutes 20 --next-step 'rebase on main, then merge' --json",
            "writerctl claim take --project web --channel merges --task PR-42 --seat alice --token-file alice.tok --reason 'bob is out today'",
        ],
    ),
    (
        "claim touch",
        &[
            "writerctl claim touch --project web --channel merges --task PR-42 --seat alice --token-file alice.tok --expect-version 3",
            "WRITERCTL_SESSION_TOKEN=... writerctl claim touch --project web --channel merges --task PR-42 --seat alice --next-step 'CI green; merge'",
        ],
    ),
    (
        "claim release",
        &[
            "writerctl claim release --project web --channel merges --task PR-42 --seat alice --token-file alice.tok --next-step 'needs review'",
            "writerctl claim release --project web --channel merges --task PR-42 --seat alice --token-file alice.tok --done --json",
            "writerctl claim release --project web --channel merges --task PR-42 --seat alice --token-file alice.tok --reason 'blocked on infra'",
        ],
    ),
    ("claim show", &["writerctl claim show --project web --channel merges --task PR-42 --json"]),
    ("claim history", &["writerctl claim history --project web --channel merges --task PR-42"]),
    ("claim list", &["writerctl claim list --project web --channel merges --json"]),
    (
        "claim sweep",
        &[
            "writerctl claim sweep --project web",
            "writerctl claim sweep --project web --as-of 2026-12-01T09:00:00Z --dry-run --json",
            "* * * * * writerctl claim sweep --project web --json   # crontab, embedded store",
        ],
    ),
    ("focus start", &["writerctl focus start --project web --seat alice --minutes 90 --token-file alice.tok"]),
    ("focus end", &["writerctl focus end --project web --seat alice --token-file alice.tok"]),
    ("focus show", &["writerctl focus show --project web --seat alice --json"]),
    (
        "steward report",
        &[
            "writerctl steward report --project web --channel merges",
            "writerctl steward report --project web --channel merges --as-of 2026-12-01T09:00:00Z --json",
        ],
    ),
    (
        "coordinator serve",
        &[
            "writerctl coordinator serve --listen 127.0.0.1:7700 --store sqlite:/var/lib/writerctl/c.sqlite",
            "writerctl coordinator serve --listen 0.0.0.0:7700 --redis redis://127.0.0.1:6379 --postgres postgres://writerctl@db/writerctl --admin-token-file /run/secrets/admin --tls-cert cert.pem --tls-key key.pem",
            "writerctl coordinator serve --listen 0.0.0.0:7700 --redis rediss+sentinel://s1:26379,s2:26379,s3:26379/mymaster --redis-ca-file /etc/writerctl/redis-ca.pem --redis-min-replicas 1 --postgres 'postgres://writerctl@db1,db2/writerctl?target_session_attrs=read-write&sslmode=verify-full&sslrootcert=/etc/writerctl/pg-ca.pem'",
            "writerctl coordinator serve --listen 127.0.0.1:7700 --store sqlite:/var/lib/writerctl/c.sqlite --sweep-interval-seconds 10",
            "writerctl coordinator serve --listen 0.0.0.0:7700 --store sqlite:/var/lib/writerctl/c.sqlite --max-connections 4096 --header-timeout-seconds 5",
            "writerctl coordinator serve --listen 0.0.0.0:7700 --store sqlite:/var/lib/writerctl/c.sqlite --max-connections-per-source 32 --body-timeout-seconds 5 --probe-listen 0.0.0.0:7701",
            "writerctl coordinator serve --listen 127.0.0.1:7700 --store sqlite:/var/lib/writerctl/c.sqlite --audit-retention-days 365 --inbox-retention-days 14 --inbox-max-events 5000",
        ],
    ),
    (
        "coordinator admin-token new",
        &[
            "writerctl coordinator admin-token new --out /etc/writerctl/admin-token",
            "writerctl coordinator admin-token new --json",
        ],
    ),
    (
        "history",
        &[
            "writerctl history --runtime-dir ~/.qwen",
            "writerctl history --session \"$SID\" --since 2026-12-01T00:00:00Z --json",
            "writerctl history --limit 20                         # the 20 newest events",
            "writerctl takeover --session \"$SID\" --reason \"node drain, ticket OPS-123\" --token-file t",
            "writerctl history --session \"$SID\" --limit 1 --json   # who took it over, and why",
        ],
    ),
    (
        "doctor",
        &[
            "writerctl doctor --runtime-dir ~/.qwen",
            "writerctl doctor --runtime-dir /data/qwen --coordinator https://coord.example:7700 --json",
            "writerctl doctor --storage --runtime-dir /data/qwen   # a Kubernetes initContainer: the volume only",
            "writerctl doctor --json | jq -r '.checks[] | select(.verdict != \"ok\") | \"\\(.name): \\(.detail)\"'",
            "*/5 * * * *  writerctl doctor --runtime-dir /data/qwen --json > /var/lib/writerctl/doctor.json || alert",
        ],
    ),
    (
        "pause",
        &[
            "writerctl pause --project web --reason 'db migration, CHG-1234'",
            "writerctl pause --project web --reason 'provider outage' --until 2026-12-01T09:00:00Z --json",
            "WRITERCTL_ADMIN_TOKEN=... writerctl pause --coordinator https://coord:7070 --project web --reason 'release freeze'",
        ],
    ),
    (
        "resume",
        &[
            "writerctl resume --project web",
            "writerctl resume --project web --json && writerctl claim sweep --project web --json",
        ],
    ),
];

/// Where to read on, under the top-level examples.
const READ_ON: &str = "Every subcommand has --help with examples, and a man page: writerctl man <subcommand> (man writerctl-<subcommand> where the pages are installed: writerctl man --out-dir DIR).";

/// The "Examples:" block of `path`'s `--help` (e.g. `"master claim"`); None for a path the
/// table does not list (a group such as `master`, or a hidden command).
pub fn help_section(path: &str) -> Option<String> {
    let (_, lines) = EXAMPLES.iter().find(|(p, _)| *p == path)?;
    let mut s = String::from("Examples:");
    for line in *lines {
        s.push_str("\n  ");
        s.push_str(&line.replace('\n', "\n  "));
    }
    if path.is_empty() {
        s.push_str("\n\n");
        s.push_str(READ_ON);
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shell word, or an operator (`|`, `||`, `&&`, `;`, `&`, `>`, `>>`, `<`) outside quotes.
    #[derive(Debug, PartialEq)]
    enum Token {
        Word(String),
        Op(String),
    }

    /// Splits one example as a POSIX shell would, far enough for the table: quotes, backslash
    /// escapes, `\`+newline continuations, `# comments` and operators. A variable (`$SID`,
    /// `${X}`) stands for a value the reader supplies: it becomes `1`, which every flag
    /// taking a name, path or number accepts.
    fn tokens(line: &str) -> Vec<Token> {
        let mut out = Vec::new();
        let mut word: Option<String> = None;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&'\n') => {
                    chars.next();
                }
                '\\' => word.get_or_insert_default().extend(chars.next()),
                '\'' => word.get_or_insert_default().extend(chars.by_ref().take_while(|&c| c != '\'')),
                '"' => {
                    let w = word.get_or_insert_default();
                    while let Some(c) = chars.next() {
                        match c {
                            '"' => break,
                            '\\' => w.extend(chars.next()),
                            '$' => {
                                skip_variable(&mut chars);
                                w.push('1');
                            }
                            c => w.push(c),
                        }
                    }
                }
                '$' => {
                    skip_variable(&mut chars);
                    word.get_or_insert_default().push('1');
                }
                '#' if word.is_none() => break,
                '|' | '&' | ';' | '>' | '<' => {
                    out.extend(word.take().map(Token::Word));
                    let mut op = c.to_string();
                    if matches!((c, chars.peek()), ('|', Some('|')) | ('&', Some('&')) | ('>', Some('>'))) {
                        op.extend(chars.next());
                    }
                    out.push(Token::Op(op));
                }
                c if c.is_whitespace() => out.extend(word.take().map(Token::Word)),
                c => word.get_or_insert_default().push(c),
            }
        }
        out.extend(word.map(Token::Word));
        out
    }

    fn skip_variable(chars: &mut std::iter::Peekable<std::str::Chars>) {
        if chars.peek() == Some(&'{') {
            chars.by_ref().take_while(|&c| c != '}').for_each(drop);
        } else {
            while chars.next_if(|c| c.is_ascii_alphanumeric() || *c == '_').is_some() {}
        }
    }

    /// The argv of every `writerctl` command in an example: its simple commands (split at
    /// `|`, `||`, `&&`, `;`, `&`), without redirections (`> file`), a leading `VAR=value`
    /// or the five time fields of a crontab line; those not starting with `writerctl` (`jq`,
    /// `echo`) are left out.
    fn writerctl_commands(line: &str) -> Vec<Vec<String>> {
        let mut commands = vec![Vec::new()];
        let mut redirect = false;
        for token in tokens(line) {
            match token {
                Token::Op(op) if [">", ">>", "<"].contains(&op.as_str()) => redirect = true,
                Token::Op(_) => commands.push(Vec::new()),
                Token::Word(_) if std::mem::take(&mut redirect) => {}
                Token::Word(w) => commands.last_mut().unwrap().push(w),
            }
        }
        let cron_field = |w: &str| w.chars().all(|c| c.is_ascii_digit() || "*/,-".contains(c));
        let env = |w: &str| {
            w.split_once('=')
                .is_some_and(|(name, _)| name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
        };
        commands
            .into_iter()
            .map(|words| {
                let crontab = words.len() > 5 && words[..5].iter().all(|w| cron_field(w));
                words.into_iter().skip(if crontab { 5 } else { 0 }).skip_while(|w| env(w)).collect::<Vec<_>>()
            })
            .filter(|argv| argv.first().is_some_and(|w| w == "writerctl"))
            .collect()
    }

    #[test]
    fn the_tokenizer_reads_the_shell_the_table_uses() {
        let argv = writerctl_commands(
            "*/5 * * * *  A=1 writerctl x --r \"a $SID\" 'b \"c\"' \\\n    --d e\\ f > out.json || alert   # why",
        );
        assert_eq!(argv, vec![vec!["writerctl", "x", "--r", "a 1", "b \"c\"", "--d", "e f"]]);
        let two = writerctl_commands("printf '%s\\n' \"$PW\" | writerctl a && writerctl b >> \"${fpath[1]}/x\"; echo");
        assert_eq!(two, vec![vec!["writerctl", "a"], vec!["writerctl", "b"]]);
    }

    #[test]
    fn clap_accepts_every_example() {
        let mut failures = Vec::new();
        for (path, lines) in EXAMPLES {
            for line in *lines {
                let argvs = writerctl_commands(line);
                assert!(!argvs.is_empty(), "`{path}`: no writerctl command in example: {line}");
                for argv in argvs {
                    match crate::cli::command().try_get_matches_from(&argv) {
                        Err(e) => failures.push(format!("`{path}`: {line}\n{e}")),
                        // The lean first parse (`cli::parse`) must give exactly what the full tree gives.
                        Ok(m) => {
                            use clap::FromArgMatches;
                            let full = (crate::cli::Cli::from_arg_matches(&m).unwrap(), crate::cli::command_path(&m));
                            let lean = crate::cli::parse(&argv.iter().map(Into::into).collect::<Vec<_>>()).unwrap();
                            assert_eq!(format!("{lean:?}"), format!("{full:?}"), "`{path}`: {line}");
                        }
                    }
                }
            }
        }
        assert!(failures.is_empty(), "examples clap refuses:\n\n{}", failures.join("\n\n"));
    }
}
