//! `writerctl seal`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use writerctl::config::Settings;
use writerctl::lockfile::record::TranscriptProof;
use writerctl::lockfile::seal::seal;
use writerctl::lockfile::transcript::ProofOptions;
use writerctl::lockfile::{DirMode, LockError, open_site};

use super::output::{Output, hash_progress, log_event};
use super::session::{read_token, resolve, transcript_key};
use crate::cli::SessionArgs;

/// Seal the lock you own for handoff (managed shutdown), after the writer has drained.
///
/// Hashes the transcript through one kept-open descriptor and replaces the active lock with
/// a sealed record carrying its key, existence, length and SHA-256, in one claimed
/// transition. On any failure the active lock stays. Needs experimental.session_writer_lease.
#[derive(Debug, Args)]
pub struct SealArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    /// Read the owner token from this file [default: env WRITERCTL_OWNER_TOKEN].
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
}

#[derive(Serialize)]
struct SealJson<'a> {
    session_id: &'a str,
    state: &'static str,
    sealed_at: &'a str,
    transcript: &'a TranscriptProof,
}

/// Runs `seal`.
pub fn run(args: SealArgs, out: Output, settings: Settings) -> Result<()> {
    if !settings.session_writer_lease {
        return Err(LockError::FeatureDisabled.into());
    }
    let r = resolve(&args.session)?;
    let key = transcript_key(&args.session, &r.session_id)?;
    let token = read_token(args.token_file.as_deref())?;
    let site = open_site(&r.runtime_dir, r.paths.clone(), &r.session_id, DirMode::Existing)?;
    let progress = hash_progress(out);
    let sealed = seal(&site, &r.runtime_dir, &key, &token, ProofOptions::default(), &mut |d, t| progress(d, t))?;
    log_event(
        "seal",
        &[
            ("session", r.session_id.clone()),
            ("host", sealed.holder.hostname.clone()),
            ("pid", sealed.holder.pid.to_string()),
            ("sealed_at", sealed.sealed_at.clone()),
        ],
    );
    if !sealed.durable {
        out.note("warning: the lock directory could not be fsynced; the seal may not survive a crash");
    }
    if out.json {
        out.json(&SealJson {
            session_id: &r.session_id,
            state: "sealed",
            sealed_at: &sealed.sealed_at,
            transcript: &sealed.proof,
        })?;
    } else {
        let p = &sealed.proof;
        out.line(&format!(
            "sealed session {} at {}: {} ({}, {} bytes, sha256 {})",
            r.session_id,
            sealed.sealed_at,
            p.relative_path,
            if p.exists { "exists" } else { "absent" },
            p.byte_length,
            p.sha256
        ))?;
    }
    Ok(())
}
