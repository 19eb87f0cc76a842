//! The local lock-file engine (seed 001), compatible with qwen-code's lock directories.
//!
//! # On disk
//!
//! A session's primary lock `L` lives at `R/tmp/session-writer-locks/<enc(session)>.lock`
//! and holds one JSON record (QWEN_FORMAT §2): *active* (a writer owns the transcript) or
//! *sealed* (the writer drained, hashed the transcript and handed it over). Side files sit
//! beside it; [`paths`] names every one of them and `status` explains each.
//!
//! # Calling sequence
//!
//! ```text
//! let site  = site::open_site(R, paths, session, DirMode::Create)?;
//! let lease = acquire::acquire(&site, &opts, &SystemProbe)?;   // writes L (schema 2, active)
//! ... the holder appends to the transcript ...
//! release::release(&site, &lease.owner)?;                      // removes exactly our L
//! ```
//!
//! # Guarantees
//!
//! * `L` is only ever created by `link(2)` from a fully written, fsynced temp file, so it
//!   is never torn and never replaces anything.
//! * Nothing removes a record whose exact bytes it has not verified; a record written by
//!   someone else is never rewritten.
//! * The transcript is the arbiter (issue 38): nothing gives it a new writer — install,
//!   reclaim, takeover, `recover` — while the kernel says an open file description can still
//!   write it ([`exclusive::prove_beneath`]), and one transcript has one holder at a time,
//!   whatever session or lock path names it ([`transcript_lock`]).
//! * An active record is reclaimed only when its holder is provably dead: by the kernel's
//!   holder lock ([`holder_lock`]) — the very file the record names — for a record that
//!   names one, from any pid namespace of the same boot, or by pid in our boot and pid
//!   namespace (QWEN_FORMAT §3.3) for one that does not. Managed mode (and `run`) reclaims
//!   only on the kernel's full proof — holder lock free and no writer on the transcript —
//!   never on pid or pod labels. Sealed, schema-3, malformed and foreign records are never
//!   reclaimed.
//! * Every install and removal that matters is followed by a directory fsync.
//!
//! # Errors
//!
//! Every function returns [`LockError`], whose [`LockError::code`] is a stable
//! [`crate::error::ErrorCode`]. No error message contains an owner id.

pub mod acquire;
pub mod diagnose;
pub mod error;
pub mod exclusive;
pub mod failpoint;
pub mod filesystem;
pub mod give_back;
pub mod history;
pub mod holder_lock;
pub mod identity;
pub mod liveness;
pub mod metrics;
pub mod paths;
pub mod pod;
pub mod primitives;
pub mod record;
pub mod recover;
pub mod release;
pub mod seal;
pub mod site;
pub mod status;
pub mod sys;
pub mod transcript;
pub mod transcript_lock;
pub mod transition;
pub mod trust;
pub mod verify;
pub mod wait;
pub mod watch;

pub use acquire::{AcquireOptions, Lease, ReclaimPolicy, acquire};
pub use error::LockError;
pub use identity::{LocalDomain, ProcessProbe, SystemProbe};
pub use liveness::Liveness;
pub use paths::LockPaths;
pub use record::{LockRecord, OwnerToken};
pub use release::{ReleaseOutcome, release};
pub use site::{DirMode, LockSite, open_site};
pub use status::{SessionStatus, status_all, status_one};

#[cfg(test)]
mod fault_tests;
