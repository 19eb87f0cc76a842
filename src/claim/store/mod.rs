//! Where coordinator state lives, behind one trait.
//!
//! A verb reads a [`Snapshot`] of its project, decides with a pure function, and commits the
//! [`Change`] only if the project is still at the snapshot's version (compare-and-set). A
//! store that can hold a write lock across read and write (SQLite's `BEGIN IMMEDIATE`)
//! overrides [`Store::transact`] and never conflicts; a store that cannot (Redis) commits
//! with an atomic version check and the default loop re-decides on a conflict.

pub mod redis_pg;
pub mod sqlite;

use super::error::ClaimError;
use super::model::{AuditEntry, Change, Event, Millis, OperatorRecord, Snapshot};

/// A verb's decision: from a snapshot to the change and its audit row.
pub type Decide<'a> = dyn FnMut(&Snapshot) -> Result<(Change, AuditEntry), ClaimError> + 'a;

/// The result of a compare-and-set commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// Written; the project is now at this version.
    Done(u64),
    /// The project moved on since the snapshot; nothing was written.
    Conflict,
}

/// How many times [`Store::transact`]'s default loop re-decides before giving up.
pub const MAX_CAS_ATTEMPTS: usize = 64;

/// Coordinator state for many projects.
pub trait Store: Send + Sync {
    /// The project's current state (an unknown project reads as empty at version 0).
    fn snapshot(&self, project: &str) -> Result<Snapshot, ClaimError>;

    /// Writes `change` and `audit` atomically if the project is still at `expected_version`.
    fn commit(
        &self,
        project: &str,
        expected_version: u64,
        change: &Change,
        audit: &AuditEntry,
    ) -> Result<Commit, ClaimError>;

    /// Reads, decides and commits one verb. `decide` returns the change and its audit row;
    /// it may run more than once (after a conflict) and must not have side effects beyond
    /// recording its last result.
    fn transact(&self, project: &str, decide: &mut Decide<'_>) -> Result<u64, ClaimError> {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let snap = self.snapshot(project)?;
            let (change, audit) = decide(&snap)?;
            if let Commit::Done(v) = self.commit(project, snap.version, &change, &audit)? {
                return Ok(v);
            }
        }
        Err(ClaimError::Unavailable(format!("project {project} kept changing ({MAX_CAS_ATTEMPTS} attempts)")))
    }

    /// Appends an audit row on its own (failed verbs, operator administration).
    fn append_audit(&self, entry: &AuditEntry) -> Result<(), ClaimError>;

    /// The newest `limit` audit rows, oldest first; all projects when `project` is None.
    fn audit_log(&self, project: Option<&str>, limit: usize) -> Result<Vec<AuditEntry>, ClaimError>;

    /// An operator's stored credential.
    fn operator(&self, operator_id: &str) -> Result<Option<OperatorRecord>, ClaimError>;

    /// Stores a new operator; `operator_exists` if the id is taken (never overwritten).
    fn insert_operator(&self, record: &OperatorRecord, audit: &AuditEntry) -> Result<(), ClaimError>;

    /// Starts a password verification for `operator_id` (known or not): atomically adds one
    /// to its failure count and returns the count before. Counting before verifying means
    /// parallel guesses each see a higher count (and wait longer) instead of all waiting
    /// the same delay; an unknown id is counted like a known one, so the delays never tell
    /// which ids exist.
    fn begin_attempt(&self, operator_id: &str, at: Millis) -> Result<u32, ClaimError>;

    /// A verification succeeded: the operator's failure count goes back to zero.
    fn attempt_succeeded(&self, operator_id: &str) -> Result<(), ClaimError>;

    /// Inbox events for `identity` in `project` with cursor > `after`, oldest first.
    fn inbox(&self, project: &str, identity: &str, after: u64, limit: usize) -> Result<Vec<Event>, ClaimError>;

    /// Whether every plane answers (`/healthz`); by default, one snapshot read.
    fn health(&self) -> Result<(), ClaimError> {
        self.snapshot("writerctl-health").map(|_| ())
    }

    /// Writes accepted by the authoritative plane but not yet by the audit plane (the
    /// retry queue's depth, for `/metrics`); None for a store with one plane.
    fn pending_audit_writes(&self) -> Option<u64> {
        None
    }
}
