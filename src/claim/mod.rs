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
//!                 deregister, seed 000's target resolution, handoff, master claim;
//!                 requests.rs: what those verbs' callers send (the wire bodies)
//!   identities/   enrolled identities and their keys: enroll, rotate, remove, seat proof
//!   work_claims/  seed 002: channels, work claims, deputies, TTLs, focus leases, sweeps;
//!                 pause.rs: a project's maintenance pause (issue 30); requests.rs:
//!                 what those verbs' callers send (the wire bodies)
//!   requests/     request ids and kept answers, so a retried write acts once
//!   stores/       the Store trait (mod.rs), how stores encode records (codec.rs), and
//!     sqlite/     the embedded store (mod.rs; work.rs: work claims; pause.rs: pauses)
//!     redis_pg/   the server store, Redis then Postgres (see its mod.rs for each file)
//!   engine/       the Coordinator: authenticate, snapshot, decide, commit by compare-and-
//!                 set, audit, keep the answer (mod.rs: its calling sequence, the request
//!                 context, replays, master verbs; identities.rs, work.rs, retain.rs,
//!                 pause.rs, history.rs: those verbs)
//!   model.rs      the shared shapes: snapshot, controllers, events, audit rows
//!   names.rs      names people read: length, control and format characters, look-alikes
//!   error.rs      ClaimError and its stable codes
//!   secret.rs     session tokens and keys (SHA-256 at rest), argon2id passwords, delays
//!   retention.rs  bounded growth: audit, inbox and attempt-row retention, store sizes
//!   refusals.rs   refusal audit rows per source and interval: one row and a count
//!   clock.rs      time behind a trait so tests control freshness and delays
//!   verb_names.rs every verb's name in the audit log, metrics and logs (`master.claim`)
//! ```
//!
//! Dependencies point one way (no file imports one that imports it back): `engine` →
//! `stores` → the domain modules (`masters`, `identities`, `work_claims`, `requests`) →
//! `model`, `names`, `secret` → `error`, `clock`. The few shapes that `error` and `model`
//! themselves name live in leaf files so that this holds: a claim's status in
//! `work_claims/shapes.rs`, the kept request record in `requests/records.rs`, [`Millis`] in
//! `clock.rs`, the stores' JSON encoding in `stores/codec.rs`.
//!
//! [`Millis`]: clock::Millis

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
pub mod verb_names;
pub mod work_claims;

pub use engine::Coordinator;
pub use error::ClaimError;
