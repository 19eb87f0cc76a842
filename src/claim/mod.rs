//! The coordinator domain (seeds 000 and 002): controllers, the master slot with its fencing
//! epoch, operators, inboxes and the audit log.
//!
//! * [`master`] — pure decisions over a [`model::Snapshot`]: register, heartbeat,
//!   deregister, seed 000's target resolution, `handoff` and `claim`.
//! * [`engine`] — [`engine::Coordinator`]: authenticate, decide, commit by compare-and-set,
//!   audit. Never prints, never parses argv.
//! * [`store`] — the [`store::Store`] trait and the embedded SQLite store.
//! * [`secret`] — session tokens (SHA-256 at rest), argon2id passwords, failure delays.
//! * [`work`] — seed 002's work claims: deputy, TTL, next step, focus leases, sweeps.
//! * [`retention`] — bounded growth: audit, inbox and attempt-row retention, store sizes.
//! * [`clock`] — time behind a trait so tests control freshness and delays.
//! * [`request`] — request ids: a write's answer kept with it, so a retry acts once.
//! * [`refusals`] — refusal audit rows per source and interval: one row and a count.

pub mod api;
pub mod clock;
pub mod engine;
pub mod error;
pub mod master;
pub mod model;
pub mod refusals;
pub mod request;
pub mod retention;
pub mod secret;
pub mod store;
pub mod work;

pub use engine::Coordinator;
pub use error::ClaimError;
