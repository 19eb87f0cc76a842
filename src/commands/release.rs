//! `writerctl release`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use writerctl::lockfile::history::HistoryEvent;
use writerctl::lockfile::release::plan_release;
use writerctl::lockfile::status::OwnerView;
use writerctl::lockfile::{DirMode, open_site, release};

use super::args::SessionArgs;
use super::output::{Output, clean};
use super::session::{read_token, resolve};

/// Release a lock you own (ordinary close); the token comes from --token-file or
/// WRITERCTL_OWNER_TOKEN.
///
/// Removes the lock only if it is exactly the active record your token owns; anything else
/// is left untouched.
#[derive(Debug, Args)]
#[command(mut_arg("session", super::args::session_from_env))]
pub struct ReleaseArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    /// Read the owner token from this file (a regular file, not a symlink, FIFO or device)
    /// [default: env WRITERCTL_OWNER_TOKEN].
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,

    #[command(flatten)]
    pub reason: super::args::ReasonArgs,
    /// Make every check the release makes (the directory's filesystem and trust, and that
    /// the lock is exactly the active record this token owns) and print the record that
    /// would be removed, changing nothing. Exits with the code the release would give (3
    /// session_not_owner for a wrong token, ...). With --json: {"dry_run":true,...}.
    #[arg(long)]
    pub dry_run: bool,
}

/// `release --dry-run --json`.
#[derive(Serialize)]
struct DryRunJson<'a> {
    dry_run: bool,
    session_id: &'a str,
    action: &'static str,
    lock_path: String,
    /// The record that would be removed (no owner token): who loses the session.
    would_remove: OwnerView,
}

#[derive(Serialize)]
struct ReleaseJson<'a> {
    session_id: &'a str,
    state: &'static str,
    lock_path: String,
    retired_file_left: bool,
    durable: bool,
}

/// Runs `release`.
pub fn run(args: ReleaseArgs, out: Output) -> Result<()> {
    let r = resolve(&args.session)?;
    let token = read_token(args.token_file.as_deref())?;
    let reason = args.reason.parse()?;
    let site = open_site(&r.runtime_dir, r.paths.clone(), &r.session_id, DirMode::Existing)?;
    if args.dry_run {
        let record = plan_release(&site, &token)?;
        let lock_path = site.lock_path().display().to_string();
        if out.json {
            let doc = DryRunJson {
                dry_run: true,
                session_id: &r.session_id,
                action: "release",
                lock_path,
                would_remove: OwnerView::of(&record),
            };
            return Ok(out.json(&doc)?);
        }
        out.line(&format!(
            "dry run: nothing was changed; `writerctl release` would remove {} (session {}, pid {} on host {}, epoch {})",
            clean(&lock_path),
            clean(&r.session_id),
            record.owner.pid,
            clean(&record.owner.hostname),
            record.owner.epoch
        ))?;
        return Ok(());
    }
    let outcome = release(&site, &token)?;
    super::history::note(&site.dir, &HistoryEvent::of_release(&r.session_id, &outcome.record, reason.as_ref()));
    let lock_path = site.lock_path().display().to_string();
    if out.json {
        out.json(&ReleaseJson {
            session_id: &r.session_id,
            state: "released",
            lock_path,
            retired_file_left: outcome.retired_left,
            durable: outcome.durable,
        })?;
    } else {
        out.line(&format!("released session {}", r.session_id))?;
        if !outcome.durable {
            out.note("warning: the lock directory could not be fsynced; after a crash the old lock may reappear (fenced, see `writerctl status`)");
        }
        if outcome.retired_left {
            out.note("note: the retired record could not be unlinked; `writerctl status` lists it");
        }
    }
    Ok(())
}
