//! The coordinator domain (seeds 000 and 002): controllers, the master slot with its fencing
//! epoch, operators, enrolled identities, work claims, inboxes, kept answers and the audit
//! log. HTTP lives in `src/coordinator/`; this module never prints and never parses argv.
//!
//! One module per thing it holds; each domain module is pure decisions over its shapes, the
//! engine runs them against a store:
//!
//! ```text
//! claim/
//!   masters/      controllers and sessions, the master slot: register, heartbeat,
//!                 deregister, seed 000's target resolution, handoff, claim
//!   identities/   enrolled identities and their keys: enroll, rotate, remove, seat proof
//!   work_claims/  seed 002: channels, claims, deputies, TTLs, focus leases, sweeps
//!   requests/     request ids and kept answers, so a retried write acts once
//!   stores/       the Store trait; sqlite/ (embedded), redis_pg/ (Redis + Postgres)
//!   engine/       the Coordinator: authenticate, decide, commit by compare-and-set, audit
//!   model.rs      the shared shapes: snapshot, controllers, events, audit rows
//!   names.rs      names people read: length, control and format characters, look-alikes
//!   error.rs      ClaimError and its stable codes
//!   secret.rs     session tokens and keys (SHA-256 at rest), argon2id passwords, delays
//!   retention.rs  bounded growth: audit, inbox and attempt-row retention, store sizes
//!   refusals.rs   refusal audit rows per source and interval: one row and a count
//!   clock.rs      time behind a trait so tests control freshness and delays
//! ```
//!
//! Dependencies point one way: `engine` → `stores` → the domain modules → `model` →
//! `error`; nothing below the engine uses it.

pub mod api;
pub mod clock;
pub mod engine;
pub mod error;
pub mod identities;
pub mod masters;
pub mod model;
pub mod names;
pub mod refusals;
pub mod requests;
pub mod retention;
pub mod secret;
pub mod stores;
pub mod work_claims;

pub use engine::Coordinator;
pub use error::ClaimError;

// Old paths, kept until the issue-29 merge; the lead removes them.
pub use masters as master;
pub use requests as request;
pub use stores as store;
pub use work_claims as work;
