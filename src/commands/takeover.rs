//! `writerctl takeover`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use writerctl::config::Settings;
use writerctl::lockfile::LockError;

use super::acquire::{AcquireArgs, take};
use super::output::Output;
use crate::cli::SessionArgs;

/// Take over a sealed session with a certified proof (a replacement writer's start).
///
/// Validates the sealed record's proof against the transcript (key, existence, length,
/// SHA-256) and, only if every field matches, makes a new active lock for --pid in one
/// claimed transition. A missing lock is acquired in managed mode; an active one (live or
/// stale) is a conflict: takeover never reclaims. Needs experimental.session_writer_lease.
#[derive(Debug, Args)]
pub struct TakeoverArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    /// The process the new lock names as holder [default: the process that ran writerctl,
    /// skipping forked subshells such as `$(...)`].
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,

    /// process_kind recorded in the new lock.
    #[arg(long, value_name = "K", default_value = "unknown",
          value_parser = ["interactive", "acp", "daemon", "unknown"])]
    pub process_kind: String,

    /// Write the new owner token to this new file (created 0600) instead of printing it.
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
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
            pid: args.pid,
            process_kind: args.process_kind,
            token_file: args.token_file,
        },
        out,
        settings,
    )
}
