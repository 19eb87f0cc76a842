//! Sealing (seed 001 "Sealing" steps 1–7; QWEN_FORMAT §5.10): replace our active lock with
//! a sealed record that certifies the transcript, so a replacement can take over.
//!
//! # Calling sequence
//!
//! ```text
//! read_owned(token) ─► proof read (fd kept) ─► install L.sealed-candidate.<o>
//!   ─► L.handoff.<o> must be absent ─► install L.claim (our active bytes)
//!   ─► re-read owned L + revalidate proof ─► transition L → L.handoff.<o>, candidate → L
//!   ─► revalidate proof ─► drop transition claim, handoff and candidate (exact bytes only) ─► fsync dir
//! ```
//!
//! The caller must have stopped every append first (the `run` supervisor drains its child);
//! a transcript that moves during the seal fails it closed with the active lock kept.
//!
//! # Failure
//!
//! Before the transition: our candidate and our exact transition claim are removed, the active
//! lock stays. After it: rollback restores our exact active record, and the transition claim is
//! dropped only once that is proven; otherwise the transition claim is kept and the error says
//! so.

use std::path::Path;

use serde_json::{Map, Value};
use time::OffsetDateTime;

use super::error::{HolderInfo, LockError, Unavailable};
use super::exclusive::{EXCLUSIVE_KEY, Exclusive};
use super::holder_lock::{HOLDER_LOCK_ID_KEY, HOLDER_LOCK_KEY, remove_holder_file};
use super::primitives::{check_transition_claim, install, remove_exact, require_absent};
use super::record::{
    IDENTITY_KEY, LockRecord, OwnerToken, Schema, SealedIdentity, TranscriptProof, format_timestamp, parse_record,
};
use super::release::read_owned_retrying;
use super::site::LockSite;
use super::sys::FileMeta;
use super::transcript::{ProofOptions, ProofRead, TranscriptKey, read_proof};
use super::transition::{Stage, Transition, release_transition_claim};

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
/// `identity` (writerctl's extension, see [`SealedIdentity`]) goes after `transcript`, then
/// `exclusive` (`writerctl_exclusive`, see [`super::exclusive`]) when the sealer proved or
/// tried to prove exclusivity.
pub fn sealed_record(
    active: &LockRecord,
    proof: &TranscriptProof,
    identity: Option<SealedIdentity>,
    exclusive: Option<&Exclusive>,
    sealed_at: &str,
) -> Result<LockRecord, LockError> {
    let mut map: Map<String, Value> = serde_json::from_slice(&active.raw)
        .map_err(|e| LockError::InvalidArgument(format!("cannot re-read our own record: {e}")))?;
    map.insert("schema_version".into(), Value::from(2));
    map.insert("state".into(), Value::from("sealed"));
    map.shift_remove("sealed_at");
    map.shift_remove("transcript");
    map.shift_remove(IDENTITY_KEY);
    // A seal's holder is judged by nothing: the holder lock dies with the active record.
    map.shift_remove(HOLDER_LOCK_KEY);
    map.shift_remove(HOLDER_LOCK_ID_KEY);
    map.shift_remove(super::record::TRANSCRIPT_INO_KEY);
    map.shift_remove(EXCLUSIVE_KEY);
    map.insert("sealed_at".into(), Value::from(sealed_at));
    map.insert("transcript".into(), serde_json::to_value(proof).expect("proof serializes"));
    if let Some(id) = identity {
        map.insert(IDENTITY_KEY.into(), serde_json::to_value(id).expect("identity serializes"));
    }
    if let Some(ex) = exclusive {
        map.insert(EXCLUSIVE_KEY.into(), Value::from(ex.record_value()));
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
    seal_as(site, runtime_dir, key, token, Sealing::New(None), proof_opts, progress)
}

/// [`seal`], recording the exclusivity proof the caller (`run`, after its drain) obtained
/// with [`super::exclusive::prove`] just before.
pub fn seal_proven(
    site: &LockSite,
    runtime_dir: &Path,
    key: &TranscriptKey,
    token: &OwnerToken,
    exclusive: &Exclusive,
    proof_opts: ProofOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<SealOutcome, LockError> {
    seal_as(site, runtime_dir, key, token, Sealing::New(Some(exclusive)), proof_opts, progress)
}

/// Puts back, byte for byte, the sealed record `sealed` that a certified takeover by `token`
/// just replaced — the undo of a takeover whose owner token could not be delivered (issue
/// 21 item 0). Releasing instead would destroy the proof and let a plain acquire take a
/// transcript that changed after the seal. The transcript must still match the restored
/// proof exactly, or nothing changes and our active lock stays (fail closed).
pub fn restore_seal(
    site: &LockSite,
    runtime_dir: &Path,
    key: &TranscriptKey,
    token: &OwnerToken,
    sealed: &LockRecord,
    proof_opts: ProofOptions,
) -> Result<SealOutcome, LockError> {
    seal_as(site, runtime_dir, key, token, Sealing::Restore(sealed), proof_opts, &mut |_, _| {})
}

/// What [`seal_as`] writes.
enum Sealing<'a> {
    /// A new sealed record, with the exclusivity proof when the caller has one.
    New(Option<&'a Exclusive>),
    /// The sealed record to put back instead of a new one.
    Restore(&'a LockRecord),
}

/// The seal protocol.
fn seal_as(
    site: &LockSite,
    runtime_dir: &Path,
    key: &TranscriptKey,
    token: &OwnerToken,
    sealing: Sealing<'_>,
    proof_opts: ProofOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<SealOutcome, LockError> {
    let (active, active_meta) = read_owned_retrying(site, |r| r.owner_id == token.expose())?;
    if let Schema::V3 { .. } = active.schema {
        return Err(LockError::unavailable(Unavailable::ManagedSealNeedsCommitProof));
    }
    let proof = read_proof(runtime_dir, key, proof_opts, progress)?;
    let (sealed, sealed_at) = match sealing {
        Sealing::New(exclusive) => {
            let at = format_timestamp(OffsetDateTime::now_utc());
            (sealed_record(&active, &proof.proof, proof.identity(), exclusive, &at)?, at)
        }
        Sealing::Restore(prev) => {
            let info = prev
                .seal()
                .ok_or_else(|| LockError::InvalidArgument("the record to restore is not a sealed record".into()))?;
            proof.matches_seal(info)?;
            (prev.clone(), info.sealed_at.clone())
        }
    };
    // Durable bytes before a durable proof (issue 21 item 4).
    proof.sync()?;
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
        transition_claim_raw: &active.raw,
    };
    let mut stage = Stage::NotStarted;
    let mut transition_claim_installed = false;
    let owned = Owned { record: &active, meta: &active_meta };
    let result =
        seal_under_transition_claim(site, &t, &proof, owned, &ret, &mut stage, &mut transition_claim_installed);
    match result {
        Ok(()) => {
            let _ = remove_exact(&site.dir, &ret, &active.raw);
            let _ = remove_exact(&site.dir, &cand, &sealed.raw);
            // The active record that named our holder lock is replaced: its file is residue.
            if let Some(name) = &active.owner.holder_lock {
                remove_holder_file(&site.dir, name);
            }
            // Sealed already: a failed fsync is reported, not turned into an error (after a
            // crash the active record could reappear, which keeps the session fenced).
            let durable = site.dir.sync().is_ok();
            Ok(SealOutcome {
                durable,
                holder: HolderInfo { pid: sealed.owner.pid, hostname: sealed.owner.hostname.clone(), liveness: None },
                proof: proof.proof.clone(),
                record: sealed,
                sealed_at,
            })
        }
        Err(original) => {
            let err = t.cleanup_after_failure(stage, transition_claim_installed, original);
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

/// Our active record as first read: its exact bytes and the inode they were read from.
#[derive(Clone, Copy)]
struct Owned<'a> {
    record: &'a LockRecord,
    meta: &'a FileMeta,
}

/// Inside the transition claim, `L` must still be our active record — the same bytes *on the
/// same inode* (issue 21 item 5). A byte-identical copy moved over `L` (`cp L L.copy && mv
/// L.copy L`) means someone else rewrote the primary while we were not looking: the lease is
/// lost, exactly as qwen's reference reports it, and acquisition already checks the same way.
fn recheck_owner(site: &LockSite, owned: Owned<'_>) -> Result<(), LockError> {
    let (_, now) = read_owned_retrying(site, |r| r.raw == owned.record.raw)?;
    if !now.same_identity(owned.meta) {
        return Err(LockError::NotOwner {
            path: site.lock_path(),
            reason: "the lock was replaced by a copy (another inode) while it was being sealed".into(),
        });
    }
    Ok(())
}

fn after_candidate() -> Result<(), LockError> {
    crate::failpoint!("seal.after_candidate");
    Ok(())
}

fn seal_under_transition_claim(
    site: &LockSite,
    t: &Transition<'_>,
    proof: &ProofRead,
    owned: Owned<'_>,
    ret: &str,
    stage: &mut Stage,
    transition_claim_installed: &mut bool,
) -> Result<(), LockError> {
    require_absent(&site.dir, ret, "handoff record")?;
    check_transition_claim(&site.dir, &site.paths.transition_claim())?;
    let active = owned.record;
    t.install_transition_claim(&active.owner_id, transition_claim_installed)?;
    crate::failpoint!("seal.after_claim");
    recheck_owner(site, owned)?;
    proof.revalidate()?;
    t.run(stage)?;
    crate::failpoint!("seal.after_transition");
    proof.revalidate()?;
    // §5.10 step 14: a transition claim we cannot remove is a failure (rolled back by the
    // caller), never a success that leaves every later acquirer facing a residual transition
    // claim.
    release_transition_claim(site, &active.raw)
}
