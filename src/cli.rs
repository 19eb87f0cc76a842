//! The clap definitions: every flag is defined once here and reused for `--help`, the man
//! pages and shell completions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
#[command(
    name = "writerctl",
    version,
    propagate_version = true,
    max_term_width = 100,
    after_help = "Examples:\n  writerctl status --runtime-dir ~/.qwen\n  writerctl run --session \"$SID\" -- my-writer\n  writerctl master status --project web\n\nEvery subcommand has --help with examples, and a man page (man writerctl-<subcommand>)."
)]
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
    /// Take the session's writer lock (prints the owner token, or writes it to --token-file).
    Acquire(crate::commands::acquire::AcquireArgs),
    /// Release a lock you own (ordinary close); the token comes from --token-file or
    /// WRITERCTL_OWNER_TOKEN.
    Release(crate::commands::release::ReleaseArgs),
    /// Seal the lock you own for handoff: certify the drained transcript so a replacement
    /// can take over (needs experimental.session_writer_lease).
    Seal(crate::commands::seal::SealArgs),
    /// Take over a sealed session after validating its proof (needs
    /// experimental.session_writer_lease).
    Takeover(crate::commands::takeover::TakeoverArgs),
    /// Supervise a writer so that every stop (SIGTERM, preStop) hands its session over.
    Run(crate::commands::run::RunArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell).
    Completions(crate::commands::docs::CompletionsArgs),
    /// Internal: regenerate man/ and completions/.
    #[command(name = "__generate", hide = true)]
    Generate(crate::commands::docs::GenerateArgs),
    /// Internal: the launcher `run` starts writers through.
    #[command(name = "__exec-writer", hide = true)]
    ExecWriter(crate::commands::run::ExecWriterArgs),
    /// Check a sealed lock's proof against the transcript; change nothing.
    Verify(crate::commands::verify::VerifyArgs),
    /// Plan, and with --writers-fenced --yes carry out, moving residue of crashed writers
    /// aside (never deleting).
    Recover(crate::commands::recover::RecoverArgs),
    /// Show what is on disk for one session, or for every session under the runtime
    /// directory, with the next safe step.
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
    /// Coordinator: read an identity's inbox (MasterPreempted, ClaimReleased), by cursor or --follow.
    Inbox(crate::commands::inbox::InboxArgs),
    /// Coordinator: show the audit log (every verb, who, what, result, epoch).
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
}

/// `--process-kind`, shared by every command that writes a new active record.
#[derive(Debug, Clone, Args)]
pub struct ProcessKindArgs {
    /// process_kind recorded in the lock.
    #[arg(long, value_name = "K", default_value = "unknown",
          value_parser = ["interactive", "acp", "daemon", "unknown"])]
    pub process_kind: String,
}

/// How a lock-file command addresses one session.
#[derive(Debug, Clone, Args)]
pub struct SessionArgs {
    /// Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR].
    #[arg(long, value_name = "DIR")]
    pub runtime_dir: Option<PathBuf>,

    /// Session id (any non-empty string; the lock file name encodes it as qwen-code does).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock].
    #[arg(long, value_name = "PATH")]
    pub lock: Option<PathBuf>,

    /// Transcript path relative to R [default: chats/<encoded ID>.jsonl].
    #[arg(long, value_name = "K", conflicts_with = "project_root")]
    pub transcript_key: Option<String>,

    /// Use qwen-code's transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR
    /// sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID
    /// must be one path component).
    #[arg(long, value_name = "DIR")]
    pub project_root: Option<PathBuf>,

    /// Trust the StatefulSet rule: a lock written by a pod of this pod's name and namespace
    /// with another pod UID was written by a replaced pod, which may be reclaimed once its
    /// holder lock proves the old pod's processes gone — never on the WRITERCTL_POD_*
    /// variables alone (only a StatefulSet's manifest should set this; a force delete voids
    /// it) [env: WRITERCTL_STATEFULSET_IDENTITY=1].
    #[arg(long)]
    pub statefulset_identity: bool,
}
