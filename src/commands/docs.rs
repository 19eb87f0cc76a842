//! Man pages, shell completions and the book's reference pages, generated from the clap
//! definitions, the error registry and the coordinator's route table (never by build.rs).
//!
//! `writerctl __generate` writes `man/`, `completions/` and `docs/src/reference/`; a test
//! renders them in memory and fails with the regeneration command when the checked-in files
//! are stale. The command tree comes from the caller (`cli::command()`), so this module does
//! not depend on `cli.rs`, which depends on it.

#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use clap_complete::Shell;
use writerctl::error::ErrorCode;

use super::codes;
use super::output::Output;

/// Print a shell completion script (bash, zsh, fish, powershell).
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Show a command's man page, rendered from the same definitions as --help: no installed
/// page needed.
///
/// `writerctl man run` shows what `man writerctl-run` would, on a machine where writerctl
/// came from `cargo install` (which installs no man pages). On a terminal the page goes
/// through `man -l -` when man is installed (its pager and formatting); otherwise, or with
/// --roff, the roff source is printed, to pipe into `man -l -` or `mandoc -a`, or to save.
/// --out-dir DIR writes every page (writerctl.1, writerctl-run.1, ...) into DIR, so that
/// `man writerctl-run` works once DIR is a man1 directory on the MANPATH. With --json:
/// {"page","roff"}, or {"written":[paths]} with --out-dir.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to show, as typed after `writerctl` (`run`, `master claim`);
    /// none: writerctl(1), the overview.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,

    /// Print the roff source even on a terminal.
    #[arg(long, conflicts_with = "out_dir")]
    pub roff: bool,

    /// Write every page into DIR (created if missing) instead of showing one, e.g.
    /// ~/.local/share/man/man1.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub out_dir: Option<PathBuf>,
}

/// Arguments of the hidden generator.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Repository root to write `man/` and `completions/` under.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
}

const SHELLS: [(Shell, &str); 4] = [
    (Shell::Bash, "writerctl.bash"),
    (Shell::Zsh, "_writerctl"),
    (Shell::Fish, "writerctl.fish"),
    (Shell::PowerShell, "_writerctl.ps1"),
];

fn completion(shell: Shell, root: &clap::Command) -> Vec<u8> {
    let mut cmd = root.clone();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "writerctl", &mut buf);
    buf
}

/// The codes the command at `path` can return; for a group (`master`), those of every
/// command under it; for the root (`""`), the whole registry.
pub fn codes_under(path: &str) -> Vec<ErrorCode> {
    if let Some(codes) = codes::declared(path) {
        return codes;
    }
    let prefix = if path.is_empty() { String::new() } else { format!("{path} ") };
    let under: Vec<Vec<ErrorCode>> = codes::COMMANDS
        .iter()
        .filter(|(p, _)| p.starts_with(&prefix))
        .filter_map(|(p, _)| codes::declared(p))
        .collect();
    ErrorCode::ALL.iter().copied().filter(|c| under.iter().any(|u| u.contains(c))).collect()
}

/// The EXIT STATUS section: the error codes this page's command can return, with their exit
/// statuses and meanings.
fn exit_status_section(codes: &[ErrorCode]) -> String {
    let mut s = String::from(
        ".SH \"EXIT STATUS\"\n0 on success. Errors print a stable code (with \\fB\\-\\-json\\fR: \\fB{\"error\":{\"code\",\"message\",\"hint\"}}\\fR on stdout); this command's are:\n",
    );
    for c in codes {
        s.push_str(&format!(
            ".TP\n\\fB{}\\fR ({})\n{}\n",
            c.as_str().replace('_', "\\_"),
            c.exit_code(),
            roff_escape(c.meaning())
        ));
    }
    s
}

/// The lock-file commands: their pages get the [`lockfile_environment_section`].
const LOCKFILE_COMMANDS: &[&str] = &["acquire", "release", "seal", "takeover", "verify", "status", "recover", "run"];

/// The ENVIRONMENT section of a lock-file command's page (issue 27: the pod labels and the
/// filesystem override were named nowhere a man reader looks).
fn lockfile_environment_section(command: &str) -> String {
    let mut vars: Vec<(&str, &str)> = vec![
        ("WRITERCTL_RUNTIME_DIR, QWEN_RUNTIME_DIR", "the runtime directory R when --runtime-dir is absent"),
        (
            "WRITERCTL_POD_UID, WRITERCTL_POD_NAME, WRITERCTL_POD_NAMESPACE, WRITERCTL_CONTAINER_NAME",
            "the writer's Pod (downward API) and container, all four or none: recorded in the lock (writerctl_pod) as labels for status and audit. They never prove a holder gone alone: a reclaim under container_restarted or statefulset_pod_replaced also needs the record's holder lock released (the kernel's evidence)",
        ),
        (
            "WRITERCTL_STATEFULSET_IDENTITY=1",
            "as --statefulset-identity: a released holder lock of a Pod of this name with another UID may be reclaimed",
        ),
        (
            "WRITERCTL_ALLOW_FILESYSTEM=TYPE[,TYPE]",
            "run on a filesystem type that is refused with filesystem_unsupported (types as /proc/self/mountinfo names them: nfs, nfs4, fuse.sshfs, fuse.juicefs, ...), with every defence on. A filesystem without hard links is never allowed",
        ),
        (
            "WRITERCTL_TRUSTED_GROUPS=G[,G]",
            "group names or ids (config key trusted_groups) whose group-writable lock, R/tmp and transcript directories are trusted: the Kubernetes fsGroup. World-writable stays refused; an unknown name is an error",
        ),
    ];
    if command == "run" {
        vars.push((
            "WRITERCTL_PID_NAMESPACE=auto|require|off",
            "as --pid-namespace. The writer sees WRITERCTL_PID_NAMESPACE=own or shared, and WRITERCTL_HOLDER_LOCK_FD, the descriptor of the lock's holder lock, which it must keep open",
        ));
        vars.push(("WRITERCTL_MAX_UNVERIFIED=SECONDS", "as --max-unverified"));
    }
    if command == "run" || command == "seal" {
        vars.push((
            "XDG_RUNTIME_DIR",
            "the control socket's directory is $XDG_RUNTIME_DIR/writerctl when set, else /tmp/writerctl-UID; with a read-only root filesystem (Kubernetes) set it to an emptyDir. run proves it can bind its socket there before it takes the lock",
        ));
    }
    let mut s = String::from(".SH ENVIRONMENT\n");
    for (name, meaning) in vars {
        s.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff_escape(name), roff_escape(meaning)));
    }
    s.push_str(".SH FILESYSTEMS\nWhat holds on each filesystem and process setup is in docs/filesystems\\-and\\-orchestrators.md of the source tree.\n");
    s
}

fn roff_escape(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    // A line starting with `.` or `'` would be read as a request.
    if t.starts_with('.') || t.starts_with('\'') { format!("\\&{t}") } else { t }
}

/// The date on every page: fixed per release, so regenerating is deterministic.
const MAN_DATE: &str = "2026-11-30";

fn man_page(cmd: clap::Command, extra: &str) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    let title = cmd.get_name().to_uppercase();
    // The error codes of the long help are the EXIT STATUS section here, with meanings.
    let cmd = cmd.after_long_help(None::<&str>);
    clap_mangen::Man::new(cmd)
        .title(title)
        .date(MAN_DATE)
        .source(format!("writerctl {}", env!("CARGO_PKG_VERSION")))
        .manual("writerctl manual")
        .render(&mut buf)?;
    buf.extend_from_slice(extra.as_bytes());
    Ok(buf)
}

/// Every generated file, relative to the repository root, with its contents. `root` is the
/// whole command tree (`cli::command()`).
pub fn render_all(root: &clap::Command) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut files = man_pages(root)?;
    for (shell, file) in SHELLS {
        files.push((PathBuf::from(format!("completions/{file}")), completion(shell, root)));
    }
    files.extend(super::reference::render(root)?);
    Ok(files)
}

/// Every man page, as `man/NAME.1` with its contents: writerctl(1) and one page per
/// visible subcommand. `__generate` writes them to man/; `writerctl man` shows one.
fn man_pages(root: &clap::Command) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut files = Vec::new();
    files.push((PathBuf::from("man/writerctl.1"), man_page(root.clone(), &exit_status_section(ErrorCode::ALL))?));
    sub_pages(root, "writerctl", "", &mut files)?;
    Ok(files)
}

/// The page name of the command typed as `words` after `writerctl` (`["master", "claim"]`
/// → `writerctl-master-claim`).
fn page_name(words: &[String]) -> String {
    std::iter::once("writerctl").chain(words.iter().map(String::as_str)).collect::<Vec<_>>().join("-")
}

/// `writerctl man [COMMAND]...`.
pub fn man(args: ManArgs, out: Output, root: &clap::Command) -> Result<()> {
    use std::io::{IsTerminal, Write};
    let pages = man_pages(root)?;
    if let Some(dir) = &args.out_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        let mut written = Vec::new();
        for (rel, bytes) in &pages {
            let path = dir.join(rel.file_name().expect("man/NAME.1"));
            std::fs::write(&path, bytes).with_context(|| format!("write {}", path.display()))?;
            written.push(path.display().to_string());
        }
        if out.json {
            out.json(&serde_json::json!({ "written": written }))?;
        } else {
            out.line(&format!("wrote {} pages to {}", written.len(), dir.display()))?;
        }
        return Ok(());
    }
    let name = page_name(&args.command);
    let Some((_, roff)) = pages.iter().find(|(rel, _)| rel.file_stem().is_some_and(|s| s == name.as_str())) else {
        return Err(super::usage(
            format!("no man page for `writerctl {}`", args.command.join(" ")),
            "name a command as typed after `writerctl` (`writerctl man run`, `writerctl man master claim`); `writerctl --help` lists them",
        ));
    };
    if out.json {
        let roff = String::from_utf8(roff.clone()).context("man page is not UTF-8")?;
        out.json(&serde_json::json!({ "page": name, "roff": roff }))?;
        return Ok(());
    }
    if !args.roff && std::io::stdout().is_terminal() && show_with_man(roff)? {
        return Ok(());
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(roff)?;
    Ok(())
}

/// Shows `roff` through `man -l -` (formatting and pager); false when man is not installed.
fn show_with_man(roff: &[u8]) -> Result<bool> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = match Command::new("man").args(["-l", "-"]).stdin(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).context("start `man -l -`"),
    };
    // A pager quit before the end closes the pipe: not an error.
    let mut stdin = child.stdin.take().expect("piped");
    match stdin.write_all(roff) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e).context("write to `man -l -`"),
        _ => {}
    }
    drop(stdin);
    let status = child.wait().context("wait for `man -l -`")?;
    anyhow::ensure!(status.success(), "`man -l -` failed ({status})");
    Ok(true)
}

/// One page per visible subcommand, recursively: `writerctl-master.1` and
/// `writerctl-master-handoff.1`.
fn sub_pages(parent: &clap::Command, prefix: &str, path: &str, files: &mut Vec<(PathBuf, Vec<u8>)>) -> Result<()> {
    for sub in parent.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        let name = format!("{prefix}-{}", sub.get_name());
        let path = if path.is_empty() { sub.get_name().to_string() } else { format!("{path} {}", sub.get_name()) };
        let bin = format!("{} {}", prefix.replace('-', " "), sub.get_name());
        let mut extra = String::new();
        if prefix == "writerctl" && LOCKFILE_COMMANDS.contains(&sub.get_name()) {
            extra.push_str(&lockfile_environment_section(sub.get_name()));
        }
        extra.push_str(&exit_status_section(&codes_under(&path)));
        let page = man_page(sub.clone().name(name.clone()).bin_name(bin), &extra)?;
        files.push((PathBuf::from(format!("man/{name}.1")), page));
        sub_pages(sub, &name, &path, files)?;
    }
    Ok(())
}

/// `writerctl completions SHELL`.
pub fn completions(args: CompletionsArgs, out: Output, root: &clap::Command) -> Result<()> {
    // Every command honours --json (one JSON document on stdout): here the script is the
    // document's one string, so `--json` is never silently dropped.
    if out.json {
        let script = String::from_utf8(completion(args.shell, root)).context("completion script is not UTF-8")?;
        out.json(&serde_json::json!({ "shell": args.shell.to_string(), "script": script }))?;
        return Ok(());
    }
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&completion(args.shell, root))?;
    Ok(())
}

/// `writerctl __generate`.
pub fn generate(args: GenerateArgs, root: &clap::Command) -> Result<()> {
    for (rel, bytes) in render_all(root)? {
        let path = args.out.join(&rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        }
        std::fs::write(&path, bytes).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}

/// Files under `root` that differ from a fresh render (for the currency test).
#[cfg(test)]
pub fn stale_files(root: &Path, tree: &clap::Command) -> Result<Vec<PathBuf>> {
    let mut stale = Vec::new();
    for (rel, bytes) in render_all(tree)? {
        if std::fs::read(root.join(&rel)).ok().as_deref() != Some(&bytes[..]) {
            stale.push(rel);
        }
    }
    Ok(stale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::command;

    #[test]
    fn man_pages_and_completions_are_current() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let stale = stale_files(root, &command()).unwrap();
        assert!(
            stale.is_empty(),
            "generated files are stale: {stale:?}\nregenerate with: cargo run --quiet -- __generate --out ."
        );
        // And nothing generated is left over from a removed command.
        let rendered: Vec<PathBuf> = render_all(&command()).unwrap().into_iter().map(|(p, _)| p).collect();
        for dir in ["man", "completions"] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                let rel = PathBuf::from(dir).join(e.unwrap().file_name());
                assert!(rendered.contains(&rel), "{} is not generated any more; delete it", rel.display());
            }
        }
    }

    /// The rendered `man/NAME.1` among `files`.
    fn man_page_text(files: &[(PathBuf, Vec<u8>)], name: &str) -> String {
        let (_, bytes) = files.iter().find(|(p, _)| p == &PathBuf::from(format!("man/{name}.1"))).unwrap();
        String::from_utf8(bytes.clone()).unwrap()
    }

    #[test]
    fn lock_file_pages_name_the_pod_labels_and_the_filesystem_override() {
        let files = render_all(&command()).unwrap();
        let page = |name: &str| man_page_text(&files, name);
        for name in ["writerctl-acquire", "writerctl-run", "writerctl-status", "writerctl-takeover"] {
            let text = page(name);
            for var in ["WRITERCTL_POD_UID", "WRITERCTL_CONTAINER_NAME", "WRITERCTL_ALLOW_FILESYSTEM"] {
                assert!(text.contains(var), "{name} does not name {var}");
            }
        }
        assert!(page("writerctl-run").contains("WRITERCTL_PID_NAMESPACE"));
        assert!(!page("writerctl-master-status").contains("WRITERCTL_POD_UID"), "coordinator pages stay as they were");
    }

    #[test]
    fn the_man_page_lists_every_error_code() {
        let page = String::from_utf8(render_all(&command()).unwrap()[0].1.clone()).unwrap();
        for c in ErrorCode::ALL {
            assert!(page.contains(&c.as_str().replace('_', "\\_")), "man page lacks {c}");
        }
    }

    #[test]
    fn a_command_page_has_its_long_doc_and_only_its_error_codes() {
        let files = render_all(&command()).unwrap();
        let page = |name: &str| man_page_text(&files, name);
        let run = page("writerctl-run");
        // RunArgs' second paragraph, and an argument's second sentence.
        assert!(run.contains("starts CMD with WRITERCTL_RUNTIME_DIR"), "{run}");
        assert!(run.contains("Each check is one stat and one small read"), "{run}");
        let exit_status = &run[run.find(".SH \"EXIT STATUS\"").unwrap()..];
        assert!(exit_status.contains("writer\\_crashed") && !exit_status.contains("claim\\_taken"), "{exit_status}");
        let claim = page("writerctl-master-claim");
        assert!(claim.contains("invalid\\_operator\\_credentials") && !claim.contains("session\\_writer\\_conflict"));
        // A group's page lists what its commands can return.
        assert!(page("writerctl-master").contains("not\\_master"));
    }

    /// Every visible command, as its path of names.
    fn commands(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<(Vec<String>, clap::Command)>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            out.push((p.clone(), sub.clone()));
            commands(sub, p, out);
        }
    }

    #[test]
    fn every_help_has_a_summary_an_explanation_or_example() {
        let mut all = Vec::new();
        commands(&command(), Vec::new(), &mut all);
        for (path, cmd) in all {
            let name = path.join(" ");
            assert!(cmd.get_about().is_some(), "`writerctl {name}` has no one-line summary");
            if cmd.has_subcommands() {
                continue;
            }
            let after = cmd.get_after_help().map(|s| s.to_string()).unwrap_or_default();
            assert!(
                after.starts_with("Examples:\n  writerctl ") || after.contains("\n  writerctl "),
                "`writerctl {name} --help` shows no example"
            );
            for line in after.lines().skip(1).filter(|l| l.contains("writerctl ")) {
                assert_command_exists(&format!("--help of `writerctl {name}`"), line);
            }
        }
    }

    /// Checks that `line` (shell text containing `writerctl ...`) names a real command path
    /// and only flags that command accepts.
    fn assert_command_exists(origin: &str, line: &str) {
        let start = line.find("writerctl ").unwrap();
        let rest = &line[start + "writerctl ".len()..];
        let mut cmd = command();
        cmd.build();
        let mut path = vec!["writerctl".to_string()];
        for word in rest.split_whitespace() {
            if word.starts_with('#') || ["|", "||", "&&", ">", ";", "--"].contains(&word) {
                break;
            }
            if let Some(flag) = word.strip_prefix("--") {
                let flag = flag.split('=').next().unwrap();
                let known = cmd.get_arguments().any(|a| a.get_long() == Some(flag))
                    || ["help", "json", "verbose", "version"].contains(&flag);
                assert!(known, "{origin}: `{}` has no flag --{flag} (line: {line})", path.join(" "));
                continue;
            }
            if word.starts_with('-') || !cmd.has_subcommands() {
                continue;
            }
            match cmd.find_subcommand(word) {
                Some(sub) => {
                    path.push(word.to_string());
                    cmd = sub.clone();
                }
                None if path.len() == 1 => panic!("{origin}: there is no command `writerctl {word}` (line: {line})"),
                None => panic!("{origin}: `{}` has no subcommand {word} (line: {line})", path.join(" ")),
            }
        }
    }

    #[test]
    fn every_command_the_readme_and_the_book_show_exists_with_its_flags() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        // The README and every page of the book written by hand: the reference pages
        // `__generate` writes come from the same clap definitions this test checks against.
        let generated = ["cli.md", "errors.md", "environment.md", "metrics.md", "http-api.md"]
            .map(|page| root.join("docs/src/reference").join(page));
        let mut docs = vec![root.join("README.md")];
        let mut dirs = vec![root.join("docs/src")];
        while let Some(dir) = dirs.pop() {
            for path in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "md") && !generated.contains(&path) {
                    docs.push(path);
                }
            }
        }
        let mut checked = 0;
        for doc in docs {
            let origin = doc.strip_prefix(root).unwrap().display().to_string();
            let mut in_code = false;
            for line in std::fs::read_to_string(&doc).unwrap().lines() {
                if line.trim_start().starts_with("```") {
                    in_code = !in_code;
                    continue;
                }
                // Code blocks, and inline `writerctl ...` spans in the prose.
                if in_code || line.starts_with("    ") {
                    // A path ending in the binary (`WRITERCTL_BIN=target/debug/writerctl ...`) is
                    // no command line.
                    if line.contains("writerctl ")
                        && !line.contains("/writerctl ")
                        && !line.contains("cargo ")
                        && !line.trim_start().starts_with("src/")
                    {
                        assert_command_exists(&origin, line);
                        checked += 1;
                    }
                } else {
                    for span in line.split('`').skip(1).step_by(2).filter(|s| s.starts_with("writerctl ")) {
                        assert_command_exists(&origin, span);
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 100, "only {checked} README and book commands found: is the parser broken?");
    }
}
