//! Giving back a lease whose owner token reached nobody (issue 21 item 0).
//!
//! # Why
//!
//! The owner token is the only proof of ownership. A command that took a lock and then
//! cannot deliver its token (the token file's write or fsync failed, stdout is closed or
//! full) leaves a lock nobody can release or seal. It must give the lock back — but *how*
//! depends on what the acquisition replaced:
//!
//! * a missing lock, or a stale owner's record reclaimed by a plain acquire: nothing but the
//!   lock itself was gained, so releasing it loses nothing;
//! * a crashed writer's record reclaimed by the kernel's proof (issues 27, 38): releasing would drop
//!   what the next writer needs to know — that the transcript is a crashed writer's, maybe
//!   torn mid-line — and let a plain acquire take it as if it were clean. The exact record
//!   is put back instead (`restore_predecessor`), naming its released holder-lock file
//!   (still in place: see [`super::acquire::settle`]), so the same proof reclaims it again
//!   and reports the tail;
//! * a sealed record taken over by a certified takeover: releasing would destroy the seal
//!   and its proof, and the next plain `acquire --managed` would take a transcript that may
//!   have changed since with no proof check at all. The exact sealed record is put back
//!   instead ([`restore_seal`]), after checking that the transcript still matches it.
//!
//! # Calling sequence
//!
//! ```text
//! reserve the token destination (O_EXCL) ─► acquire ─► deliver the token
//!                                                          │ failed
//!                                                          ▼
//!                                              give_back(site, lease, transcript)
//! ```
//!
//! Reserving the destination first keeps this path rare: it only runs when delivery fails
//! *after* the destination was proven writable (an I/O error, a full disk, a closed stdout).

use super::acquire::{Lease, LockSite, TranscriptRef};
use super::error::LockError;
use super::holder_lock::remove_holder_file;
use super::primitives::install;
use super::record::LockRecord;
use super::release::release;
use super::seal::restore_seal;
use super::transcript::ProofOptions;

/// What [`give_back`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaveBack {
    /// The lock was released (nothing else had been replaced).
    Released,
    /// The sealed record the takeover replaced is back at `L`, byte for byte.
    SealRestored,
    /// The crashed writer's record a proven reclaim replaced is back at `L`, byte for byte.
    PredecessorRestored,
}

impl GaveBack {
    /// How an operator is told, e.g. "the sealed record was restored".
    pub fn describe(self) -> &'static str {
        match self {
            GaveBack::Released => "the lock was released again",
            GaveBack::SealRestored => "the sealed record it replaced was restored, proof unchanged",
            GaveBack::PredecessorRestored => {
                "the crashed writer's record it replaced was restored, so the same proof reclaims it again"
            }
        }
    }
}

/// Undoes `lease` without losing anything it replaced: restores the sealed record a
/// certified takeover replaced (the transcript must still match it), or releases a lock
/// that replaced nothing worth keeping. On error the active lock stays as it is, and the
/// error says why (fail closed: `status` shows it, the owner token is gone).
pub fn give_back(site: &LockSite, lease: &Lease, transcript: Option<&TranscriptRef>) -> Result<GaveBack, LockError> {
    match (&lease.took_over, transcript) {
        (Some(prev), Some(t)) => {
            restore_seal(site, &t.runtime_dir, &t.key, &lease.owner, &prev.sealed, ProofOptions::default())?;
            Ok(GaveBack::SealRestored)
        }
        (Some(_), None) => Err(LockError::InvalidArgument(
            "a certified takeover can only be given back with its transcript; the active lock was kept".into(),
        )),
        (None, _) => match (&lease.recovered, &lease.replaced) {
            (Some(_), Some(predecessor)) => restore_predecessor(site, lease, predecessor),
            _ => {
                release(site, &lease.owner)?;
                Ok(GaveBack::Released)
            }
        },
    }
}

/// Undoes a reclaim the kernel proved: releases our record exactly as `release` does
/// (rename aside, prove it ours, unlink), then links the predecessor's exact bytes back at
/// `L`, never over a new primary.
///
/// Why this is exact: the record is the very bytes the reclaim judged and replaced, and its
/// holder-lock file is still the very file it names — the reclaim leaves it in place until
/// the lease is settled ([`super::acquire::settle`], issue 38) — whose lock says "released",
/// as it did then (nothing can re-take that lock: its holders are gone). Between the release
/// and the link `L` is empty for a moment; an acquirer that installs there wins, and the
/// outcome is a plain release — what give-back did before.
fn restore_predecessor(site: &LockSite, lease: &Lease, predecessor: &LockRecord) -> Result<GaveBack, LockError> {
    release(site, &lease.owner)?;
    let lock = &site.paths.lock_name;
    match install(&site.dir, lock, &predecessor.raw, &predecessor.owner_id) {
        Ok(Some(_)) => {
            // Restored already: a failed fsync must not turn into an error that says the
            // active lock was kept. After a crash the record may be missing, which leaves
            // the session free and the transcript's torn tail refused by plain acquire.
            let _ = site.dir.sync();
            Ok(GaveBack::PredecessorRestored)
        }
        Ok(None) | Err(_) => {
            // Someone else holds the session now: the predecessor's file is residue again.
            if let Some(name) = &predecessor.owner.holder_lock {
                remove_holder_file(&site.dir, name);
            }
            Ok(GaveBack::Released)
        }
    }
}
