//! Argument groups several commands flatten in: defined once here, below both `cli.rs`
//! (which only assembles commands) and the command modules that read them.

use std::path::PathBuf;

use clap::Args;
use writerctl::lockfile::LockError;
use writerctl::lockfile::history::Reason;

/// `--process-kind`, shared by every command that writes a new active record.
#[derive(Debug, Clone, Args)]
pub struct ProcessKindArgs {
    /// process_kind recorded in the lock.
    #[arg(long, value_name = "K", default_value = "unknown",
          value_parser = ["interactive", "acp", "daemon", "unknown"])]
    pub process_kind: String,
}

/// The environment variable a command that addresses exactly one session reads `--session`
/// from (issue 40: an exec-form preStop hook, `["writerctl", "seal"]`, has no shell to
/// expand `$SESSION_ID`). `run` exports it to its writer, so a writer's own `writerctl seal`
/// or `release` needs no flag either.
pub const SESSION_ENV: &str = "WRITERCTL_SESSION";

/// Gives `--session` its environment variable ([`SESSION_ENV`]); applied by `acquire`,
/// `release`, `seal`, `takeover`, `verify` and `run` (`#[command(mut_arg(..))]`), not by
/// the commands where no `--session` means every session, which a variable set in a pod's
/// environment must not silently narrow.
pub fn session_from_env(arg: clap::Arg) -> clap::Arg {
    arg.env(SESSION_ENV)
}

/// How a lock-file command addresses one session.
#[derive(Debug, Clone, Args)]
pub struct SessionArgs {
    /// Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR].
    #[arg(long, value_name = "DIR")]
    pub runtime_dir: Option<PathBuf>,

    /// Session id (any non-empty string; the lock file name encodes it as qwen-code does).
    /// The commands that address exactly one session also read it from WRITERCTL_SESSION
    /// (which `run` exports to its writer); status, history and recover read only the flag,
    /// since without it they cover every session.
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

/// The lock-file commands' `--reason TEXT`. Checked by [`ReasonArgs::parse`], not by a clap
/// value parser: a bad reason is `invalid_argument`, as the coordinator answers for its own
/// `--reason`, where clap would answer `usage`.
#[derive(Debug, Clone, Args)]
pub struct ReasonArgs {
    /// Why (recorded in the lock-file history, never in the lock record): one line, at
    /// most 512 bytes, no control characters.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

impl ReasonArgs {
    /// The validated reason (`invalid_argument`, exit 2, when it breaks a rule). Called
    /// before anything changes.
    pub fn parse(&self) -> Result<Option<Reason>, LockError> {
        self.reason.as_deref().map(Reason::parse).transpose()
    }
}
