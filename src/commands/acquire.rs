//! `writerctl acquire`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use writerctl::lockfile::identity::{SystemProbe, holder};
use writerctl::lockfile::sys::{Signal0, parent_pid, signal0};
use writerctl::lockfile::{AcquireOptions, DirMode, LockError, ReclaimPolicy, acquire, open_site, release};

use super::output::Output;
use super::session::{resolve, write_token_file};
use crate::cli::SessionArgs;

/// Take the session's writer lock.
///
/// The record names a holder process (--pid, default: the process that ran writerctl, e.g.
/// your shell or script). The lock counts as live while that process runs. A lock whose
/// holder is provably gone on this host is reclaimed, unless --managed.
#[derive(Debug, Args)]
pub struct AcquireArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    /// Managed mode (qwen's reclaimPolicy `never`): never reclaim a stale lock.
    #[arg(long)]
    pub managed: bool,

    /// The process the lock names as holder [default: the parent of writerctl].
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,

    /// process_kind recorded in the lock.
    #[arg(long, value_name = "K", default_value = "unknown",
          value_parser = ["interactive", "acp", "daemon", "unknown"])]
    pub process_kind: String,

    /// Write the owner token to this new file (created 0600; never overwritten) instead of
    /// printing it.
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
}

#[derive(Serialize)]
struct AcquireJson<'a> {
    session_id: &'a str,
    state: &'static str,
    owner_token: Option<&'a str>,
    lock_path: String,
    pid: u32,
    reclaimed: bool,
    token_file: Option<String>,
}

/// Runs `acquire`.
pub fn run(args: AcquireArgs, out: Output) -> Result<()> {
    let r = resolve(&args.session)?;
    let pid = match args.pid {
        Some(p) => p,
        None => parent_pid().ok_or_else(|| LockError::InvalidArgument("writerctl has no parent process; pass --pid".into()))?,
    };
    if pid == 0 || signal0(pid as u64) == Signal0::NoSuchProcess {
        return Err(LockError::InvalidArgument(format!("--pid {pid}: no such process")).into());
    }
    // Reserve the token file before taking the lock, so a lock is never left without a way
    // to release it.
    if let Some(f) = &args.token_file {
        if f.symlink_metadata().is_ok() {
            return Err(LockError::InvalidArgument(format!(
                "token file {} already exists; writerctl never overwrites it (remove it or pick another path)",
                f.display()
            ))
            .into());
        }
    }
    let site = open_site(&r.runtime_dir, r.paths.clone(), &r.session_id, DirMode::Create)?;
    let opts = AcquireOptions {
        holder: holder(pid),
        process_kind: args.process_kind.clone(),
        reclaim: if args.managed { ReclaimPolicy::Never } else { ReclaimPolicy::Local },
    };
    let lease = acquire(&site, &opts, &SystemProbe)?;
    if let Some(f) = &args.token_file {
        if let Err(e) = write_token_file(f, &lease.owner) {
            // Without the token nobody could release the lock: give it back.
            let _ = release(&site, &lease.owner);
            return Err(e).with_context(|| format!("cannot write token file {}; the lock was released again", f.display()));
        }
    }
    let lock_path = site.lock_path().display().to_string();
    if out.json {
        out.json(&AcquireJson {
            session_id: &r.session_id,
            state: "active",
            owner_token: args.token_file.is_none().then(|| lease.owner.expose()),
            lock_path,
            pid,
            reclaimed: lease.reclaimed,
            token_file: args.token_file.as_ref().map(|f| f.display().to_string()),
        })?;
    } else {
        let how = if lease.reclaimed { " (reclaimed from a dead holder)" } else { "" };
        match &args.token_file {
            Some(f) => out.line(&format!(
                "acquired session {} for pid {pid}{how}; owner token written to {}",
                r.session_id,
                f.display()
            ))?,
            None => {
                out.note(&format!("acquired session {} for pid {pid}{how}; lock {lock_path}", r.session_id));
                out.line(lease.owner.expose())?;
            }
        }
    }
    Ok(())
}
