//! The clap definitions: every flag is defined once here and reused for `--help`, the man
//! pages, shell completions and the CLI reference.
//!
//! A command's help lives on its `*Args` struct (first paragraph: the summary; the rest: the
//! long `--help` and the man page's DESCRIPTION). A variant here carries a doc comment only
//! when its type has none to give (subcommand groups): clap applies the variant's doc after
//! the struct's, so a variant doc would hide the struct's long text.

use std::cell::Cell;
use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

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

/// writerctl's subcommands (each wrapped in [`Lazy`], which changes nothing but when clap
/// builds it).
#[derive(Debug, Subcommand)]
pub enum Command {
    Acquire(Lazy<crate::commands::acquire::AcquireArgs>),
    Release(Lazy<crate::commands::release::ReleaseArgs>),
    Seal(Lazy<crate::commands::seal::SealArgs>),
    Takeover(Lazy<crate::commands::takeover::TakeoverArgs>),
    Run(Lazy<crate::commands::run::RunArgs>),
    Completions(Lazy<crate::commands::docs::CompletionsArgs>),
    Man(Lazy<crate::commands::docs::ManArgs>),
    /// Internal: regenerate man/ and completions/.
    #[command(name = "__generate", hide = true)]
    Generate(Lazy<crate::commands::docs::GenerateArgs>),
    /// Internal: the launcher `run` starts writers through.
    #[command(name = "__exec-writer", hide = true)]
    ExecWriter(Lazy<crate::commands::run::ExecWriterArgs>),
    Verify(Lazy<crate::commands::verify::VerifyArgs>),
    Recover(Lazy<crate::commands::recover::RecoverArgs>),
    Status(Lazy<crate::commands::status::StatusArgs>),
    /// Coordinator: register, heartbeat and deregister controller sessions.
    #[command(subcommand)]
    Session(Lazy<crate::commands::controller::SessionCmd>),
    /// Coordinator: show the master, hand it off, or claim it for a named target.
    #[command(subcommand)]
    Master(Lazy<crate::commands::master::MasterCmd>),
    /// Coordinator: operator credentials for `master claim`.
    #[command(subcommand)]
    Operator(Lazy<crate::commands::operator::OperatorCmd>),
    /// Coordinator: enroll identities (each gets a key `session register` proves it with).
    #[command(subcommand)]
    Identity(Lazy<crate::commands::identity::IdentityCmd>),
    Inbox(Lazy<crate::commands::inbox::InboxArgs>),
    Audit(Lazy<crate::commands::audit::AuditArgs>),
    /// Work claims: create a channel (steward, SLA, TTL floor).
    #[command(subcommand)]
    Channel(Lazy<crate::commands::work::ChannelCmd>),
    /// Work claims: take, touch, release, show, list and sweep claims (deputy, TTL, next step).
    #[command(subcommand)]
    Claim(Lazy<crate::commands::work::ClaimCmd>),
    /// Work claims: a focus lease keeps a heads-down seat's claims from TTL release.
    #[command(subcommand)]
    Focus(Lazy<crate::commands::work::FocusCmd>),
    /// Work claims: the steward's report of old claims without a TTL.
    #[command(subcommand)]
    Steward(Lazy<crate::commands::work::StewardCmd>),
    /// Coordinator: run the HTTP server (`coordinator serve`), make its admin token
    /// (`coordinator admin-token new`).
    #[command(subcommand)]
    Coordinator(Lazy<crate::commands::serve::CoordinatorCmd>),
    History(Lazy<crate::commands::history::HistoryArgs>),
    Doctor(Lazy<crate::commands::doctor::DoctorArgs>),
    Pause(Lazy<crate::commands::pause::PauseArgs>),
    Resume(Lazy<crate::commands::pause::ResumeArgs>),
}

/// Parses `argv` into the command to run and its path (`"master claim"`).
///
/// Why not just `command().try_get_matches_from`: building the whole tree (every command's
/// arguments, their help text copied onto the heap, the examples and error codes) made
/// 3.2 MiB of writerctl's pages resident before parsing began — the kernel maps a
/// touched page's 64 KiB neighbourhood of the binary — and 0.6 MiB of heap, most of a
/// `seal`'s or `takeover`'s peak RSS budget (issue 14: 8 MiB; issue 38 measured 9.3–9.8).
/// So the first parse builds each subcommand only when clap enters it ([`Lazy`]: clap's own
/// `Command::defer`), from the same definitions, so with the same result (1.2 MiB, and
/// about 1 MiB less at the peak). Anything it does not accept — `--help`, `--version`, a
/// usage error, an unknown command — is parsed again with the full [`command`], so every
/// message and help page is exactly the full tree's.
pub fn parse(argv: &[OsString]) -> Result<(Cli, String), clap::Error> {
    let lean = {
        let _lazy = LazyScope::enter();
        Cli::command()
    };
    if let Ok(m) = lean.try_get_matches_from(argv)
        && let Ok(cli) = Cli::from_arg_matches(&m)
    {
        return Ok((cli, command_path(&m)));
    }
    let m = command().try_get_matches_from(argv)?;
    Ok((Cli::from_arg_matches(&m)?, command_path(&m)))
}

thread_local! {
    /// Whether [`Lazy`] defers (only while [`parse`] builds its lean tree).
    static DEFER: Cell<bool> = const { Cell::new(false) };
}

/// Defers [`Lazy`] subcommands on this thread until dropped.
struct LazyScope;

impl LazyScope {
    fn enter() -> LazyScope {
        DEFER.with(|d| d.set(true));
        LazyScope
    }
}

impl Drop for LazyScope {
    fn drop(&mut self) {
        DEFER.with(|d| d.set(false));
    }
}

/// A subcommand whose arguments (or nested subcommands) clap builds only when it enters it,
/// inside [`parse`]'s lean tree; everywhere else (help, man pages, completions, the CLI
/// reference, tests) it is built at once, exactly as `T` alone. Parsing is `T`'s.
#[derive(Debug)]
pub struct Lazy<T>(pub T);

fn defer() -> bool {
    DEFER.with(Cell::get)
}

impl<T: FromArgMatches> FromArgMatches for Lazy<T> {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(m).map(Lazy)
    }
    fn from_arg_matches_mut(m: &mut clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(m).map(Lazy)
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(m)
    }
    fn update_from_arg_matches_mut(&mut self, m: &mut clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(m)
    }
}

impl<T: clap::Args> clap::Args for Lazy<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        if defer() { cmd.defer(T::augment_args) } else { T::augment_args(cmd) }
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        if defer() { cmd.defer(T::augment_args_for_update) } else { T::augment_args_for_update(cmd) }
    }
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

impl<T: Subcommand> Subcommand for Lazy<T> {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        if defer() { cmd.defer(T::augment_subcommands) } else { T::augment_subcommands(cmd) }
    }
    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        if defer() { cmd.defer(T::augment_subcommands_for_update) } else { T::augment_subcommands_for_update(cmd) }
    }
    fn has_subcommand(name: &str) -> bool {
        T::has_subcommand(name)
    }
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

    /// The lean tree [`parse`] builds first names every command but builds none of them;
    /// the full tree builds all.
    #[test]
    fn the_lean_tree_builds_no_subcommand_until_entered() {
        let lean = {
            let _lazy = LazyScope::enter();
            Cli::command()
        };
        let full = Cli::command();
        assert!(!defer(), "the scope ends with the lean tree");
        let names = |c: &clap::Command| c.get_subcommands().map(|s| s.get_name().to_owned()).collect::<Vec<_>>();
        assert_eq!(names(&lean), names(&full));
        let takeover = |c: &clap::Command| c.find_subcommand("takeover").unwrap().get_arguments().count();
        let master = |c: &clap::Command| c.find_subcommand("master").unwrap().get_subcommands().count();
        assert_eq!((takeover(&lean), master(&lean)), (0, 0));
        assert!(takeover(&full) > 3 && master(&full) > 1);
    }

    /// What the lean tree does not accept is answered by the full tree: `--help` shows the
    /// examples and error codes, a usage error is the full tree's.
    #[test]
    fn help_and_usage_errors_come_from_the_full_tree() {
        let argv = |s: &str| s.split(' ').map(OsString::from).collect::<Vec<_>>();
        let help = parse(&argv("writerctl takeover --help")).unwrap_err();
        assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
        let text = help.to_string();
        assert!(text.contains("Examples:\n  writerctl takeover") && text.contains("Error codes"), "{text}");
        let bad = parse(&argv("writerctl takeover --no-such-flag")).unwrap_err();
        let full = command().try_get_matches_from(argv("writerctl takeover --no-such-flag")).unwrap_err();
        assert_eq!((bad.kind(), bad.to_string()), (full.kind(), full.to_string()));
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
