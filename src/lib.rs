//! writerctl: certified session-writer handoff over qwen-code compatible lock files.
//!
//! The library holds the engines; the `writerctl` binary (`src/main.rs`, `src/cli.rs`,
//! `src/commands/`) only parses arguments, calls into them and prints. Engines never
//! print and never read argv.
//!
//! * [`lockfile`] — the local lock-file engine of seed 001: records, process identity and
//!   liveness, the install/inspect/remove primitives, ordinary acquisition with stale-owner
//!   reclaim, release, and the read-only `status` classifier.
//! * [`supervisor`] — `writerctl run`: a writer process supervised so that every stop
//!   hands its session over, plus the local control socket a preStop hook uses.
//! * [`error`] — the stable error-code registry shared by every engine and the CLI.
// `deny`, not `forbid`: exactly one function may opt out (`lockfile::exclusive`'s
// `F_SETLEASE`, which neither rustix nor std exposes); everything else stays safe.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod claim;
pub mod config;
pub mod coordinator;
pub mod doctor;
pub mod error;
pub mod lockfile;
pub mod supervisor;
pub(crate) mod tls;
