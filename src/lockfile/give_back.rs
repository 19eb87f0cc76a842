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
}

impl GaveBack {
    /// How an operator is told, e.g. "the sealed record was restored".
    pub fn describe(self) -> &'static str {
        match self {
            GaveBack::Released => "the lock was released again",
            GaveBack::SealRestored => "the sealed record it replaced was restored, proof unchanged",
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
        (None, _) => {
            release(site, &lease.owner)?;
            Ok(GaveBack::Released)
        }
    }
}
