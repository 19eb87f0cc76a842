//! Sealing (seed 001 "Sealing" steps 1–7; QWEN_FORMAT §5.10): replace our active lock with
//! a sealed record that certifies the transcript, so a replacement can take over.
//!
//! # Calling sequence
//!
//! ```text
//! read_owned(token) ─► proof read (fd kept) ─► install L.sealed-candidate.<o>
//!   ─► L.handoff.<o> must be absent ─► install L.claim (our active bytes)
//!   ─► re-read owned L + revalidate proof ─► transition L → L.handoff.<o>, candidate → L
//!   ─► revalidate proof ─► drop claim, handoff and candidate (exact bytes only) ─► fsync dir
//! ```
//!
//! The caller must have stopped every append first (the `run` supervisor drains its child);
//! a transcript that moves during the seal fails it closed with the active lock kept.
//!
//! # Failure
//!
//! Before the transition: our candidate and our exact claim are removed, the active lock
//! stays. After it: rollback restores our exact active record, and the claim is dropped only
//! once that is proven; otherwise the claim is kept and the error says so.

use std::path::Path;

use serde_json::{Map, Value};
use time::OffsetDateTime;

use super::error::{HolderInfo, LockError, Unavailable};
use super::primitives::{check_claim, install, remove_exact, require_absent};
use super::record::{
    IDENTITY_KEY, LockRecord, OwnerToken, Schema, SealedIdentity, TranscriptProof, format_timestamp, parse_record,
};
use super::release::read_owned_retrying;
use super::site::LockSite;
use super::transcript::{ProofOptions, ProofRead, TranscriptKey, read_proof};
use super::transition::{Stage, Transition, release_claim};

/// What a seal produced.
#[derive(Debug, Clone)]
pub struct SealOutcome {
    /// The sealed record now at `L`.
    pub record: LockRecord,
    /// Its proof.
    pub proof: TranscriptProof,
    /// `sealed_at`.
    pub sealed_at: String,
    /// The sealing owner's diagnostics (for the log line; no owner id).
    pub holder: HolderInfo,
    /// False when the final directory fsync failed.
    pub durable: bool,
}

/// Builds the sealed record from our exact active bytes: same keys in the same order,
/// `schema_version` and `state` overwritten in place, then `sealed_at` and `transcript`
/// appended (QWEN_FORMAT §2.1).
///
/// `identity` (writerctl's extension, see [`SealedIdentity`]) goes last, after `transcript`.
pub fn sealed_record(
    active: &LockRecord,
    proof: &TranscriptProof,
    identity: Option<SealedIdentity>,
    sealed_at: &str,
) -> Result<LockRecord, LockError> {
    let mut map: Map<String, Value> = serde_json::from_slice(&active.raw)
        .map_err(|e| LockError::InvalidArgument(format!("cannot re-read our own record: {e}")))?;
    map.insert("schema_version".into(), Value::from(2));
    map.insert("state".into(), Value::from("sealed"));
    map.shift_remove("sealed_at");
    map.shift_remove("transcript");
    map.shift_remove(IDENTITY_KEY);
    map.insert("sealed_at".into(), Value::from(sealed_at));
    map.insert("transcript".into(), serde_json::to_value(proof).expect("proof serializes"));
    if let Some(id) = identity {
        map.insert(IDENTITY_KEY.into(), serde_json::to_value(id).expect("identity serializes"));
    }
    let raw = serde_json::to_vec(&map).expect("record serializes");
    let rec = parse_record(&raw)
        .map_err(|m| LockError::InvalidArgument(format!("the sealed record would not validate: {m}")))?;
    debug_assert!(!rec.is_active());
    Ok(rec)
}

/// Seals the lock owned by `token`, certifying the transcript at `key` beneath `runtime_dir`.
pub fn seal(
    site: &LockSite,
    runtime_dir: &Path,
    key: &TranscriptKey,
    token: &OwnerToken,
    proof_opts: ProofOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<SealOutcome, LockError> {
    let (active, _) = read_owned_retrying(site, |r| r.owner.owner_id == token.expose())?;
    if let Schema::V3 { .. } = active.schema {
        return Err(LockError::unavailable(Unavailable::ManagedSealNeedsCommitProof));
    }
    let proof = read_proof(runtime_dir, key, proof_opts, progress)?;
    let sealed_at = format_timestamp(OffsetDateTime::now_utc());
    let sealed = sealed_record(&active, &proof.proof, proof.identity(), &sealed_at)?;
    let owner_id = token.expose();
    let cand = site.paths.sealed_candidate(owner_id);
    let ret = site.paths.handoff(owner_id);

    if install(&site.dir, &cand, &sealed.raw, owner_id)?.is_none() {
        return Err(LockError::Unavailable {
            reason: Unavailable::TransitionFileExists,
            detail: Some("sealed candidate".into()),
            source: None,
        });
    }
    if let Err(e) = after_candidate() {
        let _ = remove_exact(&site.dir, &cand, &sealed.raw);
        return Err(e);
    }
    let t = Transition {
        site,
        expected: &active.raw,
        source: &cand,
        source_raw: &sealed.raw,
        retired: &ret,
        claim_raw: &active.raw,
    };
    let mut stage = Stage::NotStarted;
    let mut claim_installed = false;
    let result = seal_under_claim(site, &t, &proof, &active, &ret, &mut stage, &mut claim_installed);
    match result {
        Ok(()) => {
            let _ = remove_exact(&site.dir, &ret, &active.raw);
            let _ = remove_exact(&site.dir, &cand, &sealed.raw);
            // Sealed already: a failed fsync is reported, not turned into an error (after a
            // crash the active record could reappear, which keeps the session fenced).
            let durable = site.dir.sync().is_ok();
            Ok(SealOutcome {
                durable,
                holder: HolderInfo { pid: active.owner.pid, hostname: active.owner.hostname.clone(), liveness: None },
                proof: proof.proof.clone(),
                record: sealed,
                sealed_at,
            })
        }
        Err(original) => {
            let err = t.cleanup_after_failure(stage, claim_installed, original);
            // Always take our candidate back; a mismatch means it is not ours any more.
            let err = match remove_exact(&site.dir, &cand, &sealed.raw) {
                Ok(()) => err,
                Err(_) => LockError::Unavailable {
                    reason: Unavailable::CleanupFailed,
                    detail: Some(format!("{err}; the sealed candidate could not be removed")),
                    source: None,
                },
            };
            Err(err)
        }
    }
}

fn after_candidate() -> Result<(), LockError> {
    crate::failpoint!("seal.after_candidate");
    Ok(())
}

fn seal_under_claim(
    site: &LockSite,
    t: &Transition<'_>,
    proof: &ProofRead,
    active: &LockRecord,
    ret: &str,
    stage: &mut Stage,
    claim_installed: &mut bool,
) -> Result<(), LockError> {
    require_absent(&site.dir, ret, "handoff record")?;
    check_claim(&site.dir, &site.paths.claim())?;
    // An install whose outcome is unclear may have linked our claim: cleanup must look.
    match install(&site.dir, &site.paths.claim(), &active.raw, &active.owner.owner_id) {
        Ok(Some(_)) => {}
        Ok(None) => return Err(LockError::unavailable(Unavailable::ClaimPresent)),
        Err(e) => {
            *claim_installed = true;
            return Err(e);
        }
    }
    *claim_installed = true;
    crate::failpoint!("seal.after_claim");
    read_owned_retrying(site, |r| r.raw == active.raw)?;
    proof.revalidate()?;
    t.run(stage)?;
    crate::failpoint!("seal.after_transition");
    proof.revalidate()?;
    // §5.10 step 14: a claim we cannot remove is a failure (rolled back by the caller), never
    // a success that leaves every later acquirer facing a residual claim.
    release_claim(site, &active.raw)
}
