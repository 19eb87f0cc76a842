//! `verify`: check a sealed proof against the transcript, changing nothing.

use std::path::Path;

use super::error::LockError;
use super::identity::ProcessProbe;
use super::primitives::{Inspection, inspect_record};
use super::record::{LockRecord, TranscriptProof};
use super::site::LockSite;
use super::transcript::{ProofOptions, TranscriptKey, read_proof};

/// What `verify` found.
#[derive(Debug)]
pub struct Verification {
    /// The sealed record.
    pub record: LockRecord,
    /// The proof recomputed from the transcript now (when it could be read).
    pub actual: Option<TranscriptProof>,
    /// `Ok` when every field matches; the reason otherwise.
    pub result: Result<(), LockError>,
}

/// Reads the sealed record at `L` and checks its proof against the transcript at `key`.
/// Errors only when there is no sealed record to check; a mismatch is a [`Verification`]
/// whose `result` is the `session_transcript_changed` (or unsafe) error.
pub fn verify(
    site: &LockSite,
    runtime_dir: &Path,
    key: &TranscriptKey,
    opts: ProofOptions,
    probe: &dyn ProcessProbe,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Verification, LockError> {
    let record = match inspect_record(&site.dir, &site.paths.lock_name, &site.session_id, &site.local, probe) {
        Inspection::Sealed(r) => r,
        Inspection::Missing => return Err(not_sealed(site, "no lock")),
        Inspection::Active(..) => return Err(not_sealed(site, "an active lock")),
        other => return Err(super::acquire::inspection_error(site, &site.paths.lock_name, other)),
    };
    let recorded = record.seal().expect("sealed").transcript.clone();
    if recorded.relative_path != key.as_str() {
        let result =
            Err(LockError::TranscriptChanged { reason: "the sealed proof names another transcript key".into() });
        return Ok(Verification { record, actual: None, result });
    }
    match read_proof(runtime_dir, key, opts, progress) {
        Ok(p) => {
            let result = p.matches_seal(record.seal().expect("sealed"));
            Ok(Verification { record, actual: Some(p.proof), result })
        }
        Err(e @ (LockError::TranscriptChanged { .. } | LockError::TranscriptUnsafe { .. })) => {
            Ok(Verification { record, actual: None, result: Err(e) })
        }
        Err(e) => Err(e),
    }
}

fn not_sealed(site: &LockSite, found: &str) -> LockError {
    LockError::NotSealed { session_id: site.session_id.clone(), found: found.into() }
}
