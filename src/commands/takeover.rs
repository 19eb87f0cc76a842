//! `writerctl takeover`.

use anyhow::Result;
use clap::Args;
use writerctl::config::Settings;
use writerctl::lockfile::LockError;

use super::acquire::{AcquireArgs, HolderArgs, take};
use super::args::SessionArgs;
use super::output::Output;

/// Take over a sealed session after validating its proof (needs
/// experimental.session_writer_lease).
///
/// A replacement writer's start: validates the sealed record's proof against the transcript (key,
/// existence, length, SHA-256) and, only if every field matches, makes a new active lock for --pid
/// in one claimed transition. With no lock at all there is nothing to validate: it fails with
/// session_not_sealed and changes nothing (use `writerctl acquire --managed` to start a session).
/// An active lock (live or stale) is a conflict. Needs experimental.session_writer_lease.
#[derive(Debug, Args)]
#[command(mut_arg("session", super::args::session_from_env))]
pub struct TakeoverArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    #[command(flatten)]
    pub holder: HolderArgs,

    /// Make every check the takeover makes (gate, --pid, the token file's destination, the
    /// directory's filesystem and trust, the claim, the lock's state and liveness, the
    /// sealed proof against the transcript) and print the plan — who loses the session,
    /// the new epoch, the record that would be replaced and the one that would be written
    /// — changing nothing. Exits with the code the takeover would give (4 for a changed
    /// transcript, 3 for a live holder, ...). With --json: {"dry_run":true,...}.
    #[arg(long)]
    pub dry_run: bool,
}

/// Runs `takeover`.
pub fn run(args: TakeoverArgs, out: Output, settings: Settings) -> Result<()> {
    if !settings.session_writer_lease {
        return Err(LockError::FeatureDisabled.into());
    }
    take(
        AcquireArgs {
            session: args.session,
            managed: true,
            holder: args.holder,
            takeover: true,
            dry_run: args.dry_run,
        },
        out,
        settings,
    )
}
