//! `writerctl verify`.

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use writerctl::lockfile::record::TranscriptProof;
use writerctl::lockfile::transcript::ProofOptions;
use writerctl::lockfile::verify::verify;
use writerctl::lockfile::{DirMode, LockError, SystemProbe, open_site};

use super::args::SessionArgs;
use super::output::{Output, clean, hash_progress};
use super::session::{resolve, transcript_key};

/// Check a sealed lock's proof against the transcript; change nothing.
///
/// Exit 0 when key, existence, length and SHA-256 all match; 4
/// (session_transcript_changed) when they do not; 3 (session_not_sealed) when the lock is
/// not sealed.
#[derive(Debug, Args)]
#[command(mut_arg("session", super::args::session_from_env))]
pub struct VerifyArgs {
    #[command(flatten)]
    pub session: SessionArgs,
}

#[derive(Serialize)]
struct VerifyJson<'a> {
    session_id: &'a str,
    state: &'static str,
    matches: bool,
    sealed_at: &'a str,
    recorded: &'a TranscriptProof,
    actual: Option<&'a TranscriptProof>,
    /// `writerctl_exclusive` as the seal recorded it (null when it does not say).
    exclusive: Option<&'a str>,
}

/// Runs `verify`.
pub fn run(args: VerifyArgs, out: Output) -> Result<()> {
    let r = resolve(&args.session)?;
    let key = transcript_key(&args.session, &r.session_id)?;
    let site = open_site(&r.runtime_dir, r.paths.clone(), &r.session_id, DirMode::Existing).map_err(|e| match e {
        LockError::NotOwner { .. } => {
            LockError::NotSealed { session_id: r.session_id.clone(), found: "no lock".into() }
        }
        other => other,
    })?;
    let progress = hash_progress(out);
    let v = verify(&site, &r.runtime_dir, &key, ProofOptions::default(), &SystemProbe, &mut |d, t| progress(d, t))?;
    let seal = v.record.seal().expect("sealed");
    if out.json && v.result.is_ok() {
        out.json(&VerifyJson {
            session_id: &r.session_id,
            state: "sealed",
            matches: true,
            sealed_at: &seal.sealed_at,
            recorded: &seal.transcript,
            actual: v.actual.as_ref(),
            exclusive: seal.exclusive.as_deref(),
        })?;
    } else if v.result.is_ok() {
        out.line(&format!(
            "proof matches: session {} sealed {} · {} · {} bytes · sha256 {}",
            clean(&r.session_id),
            clean(&seal.sealed_at),
            clean(&seal.transcript.relative_path),
            seal.transcript.byte_length,
            seal.transcript.sha256
        ))?;
    }
    v.result?;
    Ok(())
}
