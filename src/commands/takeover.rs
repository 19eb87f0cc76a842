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
#[command(
    after_help = "Examples:\n  writerctl takeover --session \"$SID\" --token-file owner.token --json\n  writerctl takeover --session \"$SID\" --wait 60 --token-file owner.token   # until the old writer seals\n  writerctl takeover --session \"$SID\" --token-file owner.token --reason \"failover after node drain\""
)]
pub struct TakeoverArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    #[command(flatten)]
    pub holder: HolderArgs,
}

/// Runs `takeover`.
pub fn run(args: TakeoverArgs, out: Output, settings: Settings) -> Result<()> {
    if !settings.session_writer_lease {
        return Err(LockError::FeatureDisabled.into());
    }
    take(AcquireArgs { session: args.session, managed: true, holder: args.holder, takeover: true }, out, settings)
}
