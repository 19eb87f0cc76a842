//! The clap definitions: every flag is defined once here and reused for `--help`, the man
//! pages, shell completions and the CLI reference.
//!
//! A command's help lives on its `*Args` struct (first paragraph: the summary; the rest: the
//! long `--help` and the man page's DESCRIPTION). A variant here carries a doc comment only
//! when its type has none to give (subcommand groups): clap applies the variant's doc after
//! the struct's, so a variant doc would hide the struct's long text.

use clap::{CommandFactory, Parser, Subcommand};

use crate::commands::{codes, examples};

/// Hands a session transcript from one writer to the next without ever having two writers.
///
/// writerctl reads and writes qwen-code's session-writer lock directories
/// (R/tmp/session-writer-locks). Every command takes --json, never needs a TTY, and exits
/// with a stable code: 0 ok, 1 failure, 2 usage, 3 conflict, 4 integrity (fail closed),
/// 5 target resolution, 6 authentication, 7 disabled by gate, 75 unavailable (retry later).
///
/// The coordinator commands (session, master, operator, inbox, audit) elect one master per
/// project with a fencing epoch; without --coordinator they use an embedded SQLite store.
#[derive(Debug, Parser)]
#[command(name = "writerctl", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// Print one JSON document on stdout (errors as {"error":{"code","message","hint"}}).
    #[arg(long, global = true)]
    pub json: bool,

    /// Add causes to error messages (never an owner id).
    #[arg(long, short = 'v', global = true)]
    pub verbose: bool,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// writerctl's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    Acquire(crate::commands::acquire::AcquireArgs),
    Release(crate::commands::release::ReleaseArgs),
    Seal(crate::commands::seal::SealArgs),
    Takeover(crate::commands::takeover::TakeoverArgs),
    Run(crate::commands::run::RunArgs),
    Completions(crate::commands::docs::CompletionsArgs),
    /// Internal: regenerate man/ and completions/.
    #[command(name = "__generate", hide = true)]
    Generate(crate::commands::docs::GenerateArgs),
    /// Internal: the launcher `run` starts writers through.
    #[command(name = "__exec-writer", hide = true)]
    ExecWriter(crate::commands::run::ExecWriterArgs),
    Verify(crate::commands::verify::VerifyArgs),
    Recover(crate::commands::recover::RecoverArgs),
    Status(crate::commands::status::StatusArgs),
    /// Coordinator: register, heartbeat and deregister controller sessions.
    #[command(subcommand)]
    Session(crate::commands::controller::SessionCmd),
    /// Coordinator: show the master, hand it off, or claim it for a named target.
    #[command(subcommand)]
    Master(crate::commands::master::MasterCmd),
    /// Coordinator: operator credentials for `master claim`.
    #[command(subcommand)]
    Operator(crate::commands::operator::OperatorCmd),
    /// Coordinator: enroll identities (each gets a key `session register` proves it with).
    #[command(subcommand)]
    Identity(crate::commands::identity::IdentityCmd),
    Inbox(crate::commands::inbox::InboxArgs),
    Audit(crate::commands::audit::AuditArgs),
    /// Work claims: create a channel (steward, SLA, TTL floor).
    #[command(subcommand)]
    Channel(crate::commands::work::ChannelCmd),
    /// Work claims: take, touch, release, show, list and sweep claims (deputy, TTL, next step).
    #[command(subcommand)]
    Claim(crate::commands::work::ClaimCmd),
    /// Work claims: a focus lease keeps a heads-down seat's claims from TTL release.
    #[command(subcommand)]
    Focus(crate::commands::work::FocusCmd),
    /// Work claims: the steward's report of old claims without a TTL.
    #[command(subcommand)]
    Steward(crate::commands::work::StewardCmd),
    /// Coordinator: run the HTTP server (`coordinator serve`).
    #[command(subcommand)]
    Coordinator(crate::commands::serve::CoordinatorCmd),
    History(crate::commands::history::HistoryArgs),
    Doctor(crate::commands::doctor::DoctorArgs),
    Pause(crate::commands::pause::PauseArgs),
    Resume(crate::commands::pause::ResumeArgs),
}

/// The full command tree: the derive's, with each command's examples
/// ([`examples::EXAMPLES`]) after its help, and its error codes ([`codes::COMMANDS`]) after
/// the examples in the long `--help` (and so in the man pages' source and the CLI reference).
pub fn command() -> clap::Command {
    with_examples_and_error_codes(Cli::command(), "")
}

fn with_examples_and_error_codes(mut cmd: clap::Command, path: &str) -> clap::Command {
    let names: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_string()).collect();
    for name in names {
        let sub_path = if path.is_empty() { name.clone() } else { format!("{path} {name}") };
        cmd = cmd.mut_subcommand(&name, |sub| with_examples_and_error_codes(sub, &sub_path));
    }
    if let Some(examples) = examples::help_section(path) {
        // What a command's struct says after its help (run's exit rule) comes first.
        let after = match cmd.get_after_help() {
            Some(before) => format!("{before}\n\n{examples}"),
            None => examples,
        };
        cmd = cmd.after_help(after);
    }
    if let Some(codes) = codes::declared(path) {
        let examples = cmd.get_after_help().map(|h| format!("{h}\n\n")).unwrap_or_default();
        cmd = cmd.after_long_help(format!("{examples}{}", codes::help_section(&codes)));
    }
    cmd
}

/// The command path (`"master claim"`) the parsed arguments ran.
pub fn command_path(matches: &clap::ArgMatches) -> String {
    let mut path = Vec::new();
    let mut m = matches;
    while let Some((name, sub)) = m.subcommand() {
        path.push(name);
        m = sub;
    }
    path.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every runnable command (a leaf, hidden ones included), as its path, and whether it is
    /// hidden.
    fn leaves(cmd: &clap::Command, path: &str, out: &mut Vec<(String, bool)>) {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let p = if path.is_empty() { sub.get_name().to_string() } else { format!("{path} {}", sub.get_name()) };
            // `audit` runs on its own and has `audit prune` below it.
            if !sub.has_subcommands() || !sub.is_subcommand_required_set() {
                out.push((p.clone(), sub.is_hide_set()));
            }
            leaves(sub, &p, out);
        }
    }

    #[test]
    fn the_error_code_table_names_exactly_the_commands() {
        let mut all = Vec::new();
        leaves(&Cli::command(), "", &mut all);
        let all: Vec<String> = all.into_iter().map(|(p, _)| p).collect();
        let table: Vec<String> = codes::COMMANDS.iter().map(|(p, _)| p.to_string()).collect();
        let (mut a, mut t) = (all.clone(), table.clone());
        a.sort();
        t.sort();
        assert_eq!(a, t, "src/commands/codes.rs must list every command, and only commands");
    }

    #[test]
    fn the_example_table_names_exactly_the_visible_commands() {
        let mut all = Vec::new();
        leaves(&Cli::command(), "", &mut all);
        // `writerctl` itself has examples; hidden commands need none.
        let mut visible: Vec<String> = all.into_iter().filter(|(_, hidden)| !hidden).map(|(p, _)| p).collect();
        visible.push(String::new());
        let mut table: Vec<String> = examples::EXAMPLES.iter().map(|(p, _)| p.to_string()).collect();
        visible.sort();
        table.sort();
        assert_eq!(visible, table, "src/commands/examples.rs must list every visible command, and only those");
        assert!(examples::EXAMPLES.iter().all(|(_, lines)| !lines.is_empty()), "a command without examples");
    }

    #[test]
    fn long_help_shows_the_examples_then_the_error_codes() {
        let mut cmd = command();
        let claim = cmd.find_subcommand_mut("master").unwrap().find_subcommand_mut("claim").unwrap();
        let long = claim.render_long_help().to_string();
        let (examples, codes) =
            (long.find("Examples:\n  writerctl master claim").unwrap(), long.find("Error codes").unwrap());
        assert!(examples < codes, "{long}");
        let short = claim.render_help().to_string();
        assert!(short.contains("Examples:\n  writerctl master claim") && !short.contains("Error codes"), "{short}");
    }

    #[test]
    fn long_help_shows_the_struct_docs_and_the_error_codes() {
        let mut cmd = command();
        let run = cmd.find_subcommand_mut("run").unwrap();
        let help = run.render_long_help().to_string();
        // The second paragraph of RunArgs' doc comment: once hidden by the variant's doc.
        assert!(help.contains("starts CMD with WRITERCTL_RUNTIME_DIR"), "{help}");
        assert!(help.contains("Error codes"), "{help}");
        assert!(help.contains("writer_crashed"), "{help}");
        assert!(!help.contains("claim_taken"), "run lists a code it cannot return:\n{help}");
        let short = run.render_help().to_string();
        assert!(!short.contains("starts CMD with WRITERCTL_RUNTIME_DIR") && !short.contains("Error codes"), "{short}");
    }
}
