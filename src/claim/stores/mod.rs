//! Where coordinator state lives, behind one trait.
//!
//! A verb reads a [`Snapshot`] of its project, decides with a pure function, and commits the
//! [`Change`] only if the project is still at the snapshot's version (compare-and-set). A
//! store that can hold a write lock across read and write (SQLite's `BEGIN IMMEDIATE`)
//! overrides [`Store::transact`] and never conflicts; a store that cannot (Redis) commits
//! with an atomic version check and the default loop re-decides on a conflict.
//!
//! # What every store promises
//!
//! What the engine relies on, each with the test that checks it. "Both stores": one test
//! body run on SQLite and on Redis + Postgres (the latter when the services answer; CI
//! requires them).
//!
//! * **A write and its audit row are one step.** A [`ProjectWrite`], [`WorkClaimWrite`],
//!   [`FocusWrite`] or pause is written with its audit row and the answer kept under its
//!   request id ([`AuditEntry::request`]), or none of them is; a live answer under the id
//!   refuses the whole write. `sqlite_keeps_one_write_per_request` and
//!   `redis_pg_keeps_one_write_per_request` (`tests/it/request_id.rs`) check the change and
//!   the answer: the second write under a kept id leaves the project as the first left it.
//!   The audit row is checked by count: one per committed write and none for a conflict in
//!   `commit_is_a_compare_and_set_on_the_version` (`sqlite/tests.rs`), and in Postgres in
//!   `redis_pg_work_reaches_postgres_and_survives_a_cold_restore` (`tests/it/work_store.rs`).
//! * **Compare-and-set.** A project write applies only at the version it was decided from,
//!   and a conflict writes nothing, audit row included: `commit_is_a_compare_and_set_on_the_version`
//!   (`sqlite/tests.rs`). Of racers decided from one epoch exactly one wins and the rest get
//!   `stale_master`: `concurrent_verbs_elect_exactly_one_winner` (`tests/it/master.rs`, 16
//!   processes on one SQLite file) and `concurrent_verbs_on_one_epoch_have_exactly_one_winner`
//!   (`tests/it/redis_pg.rs`, 16 stores, one `ok` audit row per trial in Postgres). The
//!   default [`Store::transact`] decides again on the newer snapshot:
//!   `the_default_transact_redecides_after_a_conflict` (`sqlite/tests.rs`). A claim row
//!   carries its own version, and a stale claim write leaves no row, history step, doorbell
//!   or due-index change: `creating_a_claim_twice_elects_one_owner`,
//!   `a_stale_write_conflicts_and_writes_nothing`, `a_conflict_in_a_batch_stops_only_itself`
//!   (`tests/it/work_store.rs`, both stores); a focus lease the same way,
//!   `ending_a_focus_lease_never_overwrites_a_newer_one` (same file). A pause decided from a
//!   stale read conflicts: `a_pause_decided_from_a_stale_read_conflicts_and_writes_nothing`
//!   (`engine/pause.rs`, SQLite only; no test races a pause on Redis + Postgres).
//! * **A seat's proof holds at commit**, not only when the engine checked it:
//!   `a_take_racing_identity_remove_never_commits_after_the_removal_on_sqlite` and
//!   `a_take_racing_identity_remove_never_commits_after_the_removal_on_redis_pg`
//!   (`tests/it/replay.rs`).
//! * **Bounded.** Each inbox keeps its newest N on every append and raises its trim mark, so
//!   a reader behind it is told (`inbox_cursor_trimmed`): `the_inbox_bound_is_enforced_on_write`
//!   (`tests/it/store_bounds.rs`, both stores). Retention removes old audit rows, inbox events
//!   and idle attempt rows: `inbox_retention_refuses_readers_behind_the_trim_alike_on_both_stores`,
//!   `old_audit_rows_and_idle_attempt_rows_are_pruned_on_both_stores` (`tests/it/retention.rs`).
//!   Expired kept answers go: `expired_requests_are_purged` (SQLite) and
//!   `redis_pg_kept_answers_expire_by_themselves` (`tests/it/replay.rs`). Every audit read is
//!   one bounded page that walks an index: `the_audit_reads_walk_an_index` (`sqlite/tests.rs`)
//!   and `the_postgres_audit_reads_walk_an_index` (`tests/it/master_history.rs`).
//!
//! What a crash leaves behind and how durable a commit is differ by store: see
//! [`sqlite`] and [`redis_pg`].

/// A [`Controller`](crate::claim::model::Controller) or an
/// [`EnrolledIdentity`](crate::claim::model::EnrolledIdentity) from a row whose columns,
/// from `$at` on, are the record's fields in declaration order. `$get` is the row's own
/// getter (`get` in SQLite, `try_get` in Postgres): the two drivers share no trait, so one
/// macro keeps both stores' column orders in one place.
macro_rules! record_from_row {
    (Controller, $r:ident.$get:ident, $at:expr) => {
        record_from_row!(@fields $r.$get, $at, crate::claim::model::Controller {
            session_id, identity, surface, machine_id, token_hash, is_master, registered_at, last_heartbeat
        })
    };
    (EnrolledIdentity, $r:ident.$get:ident, $at:expr) => {
        record_from_row!(@fields $r.$get, $at, crate::claim::model::EnrolledIdentity {
            identity, key_hash, enrolled_at, key_issued_at
        })
    };
    // A struct expression evaluates its fields in the order written: column `$at + n` is
    // the n-th field.
    (@fields $r:ident.$get:ident, $at:expr, $ty:path { $($field:ident),* }) => {{
        let mut col: usize = $at;
        $ty { $($field: { col += 1; $r.$get(col - 1)? },)* }
    }};
}

pub(crate) mod codec;
pub mod redis_pg;
pub mod sqlite;

pub(crate) use codec::{from_json, json_err, to_i64, to_json};

use super::error::ClaimError;
use super::model::{AuditEntry, Change, Event, Millis, NewEvent, OperatorRecord, Snapshot};
use super::requests::KeptAnswer;
use super::retention::{Cutoffs, Pruned, Sizes};
use super::work_claims::{Channel, FocusLease, ProjectPause, WorkClaim, WorkClaimStep};

/// A verb's decision: from a snapshot to the change and its audit row (None: a change not
/// worth a row of its own, such as a routine heartbeat).
pub type Decide<'a> = dyn FnMut(&Snapshot) -> Result<(Change, Option<AuditEntry>), ClaimError> + 'a;

/// Which audit rows [`Store::audit_page`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditPage<'a> {
    /// Only this project (None: every project and operator administration).
    pub project: Option<&'a str>,
    /// Only rows written at or after this time.
    pub since: Millis,
    /// Only rows after this cursor (0: from the first).
    pub after: u64,
    /// At most this many rows.
    pub limit: usize,
    /// Only rows that changed the master (their detail holds
    /// [`MASTER_CHANGE`](crate::claim::model::MASTER_CHANGE)); only with a `project`
    /// (no index serves them across every project: `invalid_argument` otherwise).
    pub master_changes: bool,
    /// The newest rows first (`master history --limit N`); else the oldest first.
    pub newest_first: bool,
}

/// The refusal of an [`AuditPage`] of changes of master without a project.
pub(crate) fn master_changes_need_a_project() -> ClaimError {
    ClaimError::invalid("project", "the changes of master are read one project at a time")
}

/// How far the audit plane is behind the authoritative one (`/readyz`, `/metrics`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Backlog {
    /// The audit plane is failing or lagging: verbs are still served, but their Postgres
    /// rows (and Redis's loss window) wait.
    pub degraded: bool,
    /// Writes accepted by the authoritative plane, not yet by the audit plane.
    pub queue_depth: u64,
    /// How long the oldest of them has waited, in seconds (None when there is none).
    pub oldest_age_seconds: Option<f64>,
}

/// The bounded Postgres retry queue of a two-plane store (issue 28 point 4), for `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditQueue {
    /// Entries waiting for Postgres.
    pub rows: u64,
    /// Bytes they carry (field names and values; Redis's own per-entry overhead comes on top).
    pub bytes: u64,
    /// The row bound (0: none).
    pub max_rows: u64,
    /// The byte bound (0: none).
    pub max_bytes: u64,
    /// Failed verbs' audit rows dropped at the bound since this process started.
    pub dropped_refusals: u64,
    /// Routine heartbeats whose Postgres state write was skipped at the bound (Redis has
    /// them; the next state write of the project carries them to Postgres).
    pub dropped_heartbeats: u64,
    /// Write verbs refused at the bound (`coordinator_unavailable`, nothing written).
    pub refused_writes: u64,
}

/// How often a failure that goes on is logged again.
pub const EPISODE_REMINDER: std::time::Duration = std::time::Duration::from_secs(60);

/// A failure that can last (a store down, a full queue), logged per episode rather than per
/// occurrence (issue 28's drill: a WARN per scrape, per refusal, buries everything else): one
/// WARN when it starts, one reminder with the count at most every [`EPISODE_REMINDER`] while
/// it lasts, one INFO when it ends. Thread-safe; `const` so a `static` can hold one.
#[derive(Debug)]
pub struct Episode {
    what: &'static str,
    state: std::sync::Mutex<Option<EpisodeState>>,
}

#[derive(Debug, Clone, Copy)]
struct EpisodeState {
    count: u64,
    since: std::time::Instant,
    logged: std::time::Instant,
}

impl Episode {
    /// An episode log for `what` (the subject of every line: "postgres retry queue full").
    pub const fn new(what: &'static str) -> Episode {
        Episode { what, state: std::sync::Mutex::new(None) }
    }

    /// One more occurrence; logs a WARN if it starts an episode or a reminder is due.
    /// Returns whether it logged.
    pub fn fail(&self, error: &dyn std::fmt::Display) -> bool {
        let now = std::time::Instant::now();
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match g.as_mut() {
            None => {
                *g = Some(EpisodeState { count: 1, since: now, logged: now });
                tracing::warn!(error = %error, "{} (logged again at most once a minute, and on recovery)", self.what);
                true
            }
            Some(s) => {
                s.count += 1;
                if now.duration_since(s.logged) < EPISODE_REMINDER {
                    return false;
                }
                s.logged = now;
                tracing::warn!(error = %error, count = s.count, seconds = s.since.elapsed().as_secs(), "{} (still)", self.what);
                true
            }
        }
    }

    /// The failure is over: one INFO line, if an episode was going on. Returns whether it
    /// logged.
    pub fn recover(&self) -> bool {
        let ended = self.state.lock().unwrap_or_else(|p| p.into_inner()).take();
        match ended {
            Some(s) => {
                tracing::info!(count = s.count, seconds = s.since.elapsed().as_secs_f64(), "{}: recovered", self.what);
                true
            }
            None => false,
        }
    }

    /// Whether an episode is going on.
    pub fn ongoing(&self) -> bool {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }
}

/// The result of a compare-and-set commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// Written; the project is now at this version.
    Done(u64),
    /// The project moved on since the snapshot; nothing was written.
    Conflict,
}

/// One project-state write ([`Store::commit`]): `change` and its audit row, written
/// atomically only if the project is still at `expected_version`, like a [`WorkClaimWrite`].
#[derive(Debug, Clone, Copy)]
pub struct ProjectWrite<'a> {
    /// The project.
    pub project: &'a str,
    /// The version the change was decided from (compare-and-set).
    pub expected_version: u64,
    /// The change.
    pub change: &'a Change,
    /// Its audit row (None: a change not worth a row of its own, such as a routine
    /// heartbeat).
    pub audit: Option<&'a AuditEntry>,
}

impl ProjectWrite<'_> {
    /// When the change's inbox events happened: its audit row's time. A change without an
    /// audit row (a routine heartbeat) must carry no events; one that does is refused as a
    /// bug rather than stamped with a time no clock gave.
    pub(crate) fn events_at(&self) -> Result<Millis, ClaimError> {
        match self.audit {
            Some(a) => Ok(a.at),
            None if self.change.events.is_empty() => Ok(0),
            None => Err(ClaimError::store("a change with inbox events needs its audit row")),
        }
    }
}

/// How many times [`Store::transact`]'s default loop re-decides before giving up.
pub const MAX_CAS_ATTEMPTS: usize = 64;

/// One claim write: `row` replaces the task's row only if the stored row is still at
/// `expected_version` (0: the task has no row yet). The history step, the doorbells and the
/// audit row are written with it, atomically, or not at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkClaimWrite {
    /// The version the decision was made from; 0 when the task had no row.
    pub expected_version: u64,
    /// The new row (its `version` is the new version).
    pub row: WorkClaim,
    /// The history step's action (`take`, `touch`, `ttl_handoff`, ...); the step itself is
    /// [`WorkClaimWrite::step`].
    pub action: String,
    /// Inbox events (release doorbells).
    pub events: Vec<NewEvent>,
    /// The audit row.
    pub audit: AuditEntry,
    /// The seat's proof, checked by the store in the same atomic step as the write (an
    /// owner verb's; None for the coordinator's own sweep writes).
    pub proof: Option<SeatProof>,
}

/// One focus-lease write ([`WorkStore::put_focus`]): the lease and its audit row, written
/// atomically or not at all, like a [`WorkClaimWrite`].
#[derive(Debug, Clone, Copy)]
pub struct FocusWrite<'a> {
    /// The seat's lease as it is to be stored.
    pub lease: &'a FocusLease,
    /// `Some(started_at)`: write only if the stored lease is still the one that started then
    /// (`focus end` must not end a lease a concurrent `focus start` just wrote). None:
    /// unconditionally.
    pub replaces: Option<Millis>,
    /// The audit row.
    pub audit: &'a AuditEntry,
    /// The seat's proof, checked in the same atomic step as the write (`focus start|end`,
    /// issue 28 point 5: a proof read before the write let it commit after `identity
    /// remove`); an unproven seat writes nothing and answers `identity_unproven`.
    pub proof: Option<&'a SeatProof>,
}

/// A seat write's proof (issue 28 point 5: a claim `take` committed after `identity remove`
/// because its proof was read before the write, not inside it): the store commits the write
/// only if, at commit, a controller registered as `identity` in the row's project holds the
/// token whose hash is `token_hash`; otherwise it writes nothing and answers
/// `identity_unproven`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatProof {
    /// The seat.
    pub identity: String,
    /// SHA-256 of the session token presented.
    pub token_hash: String,
}

/// The refusal a store answers for a [`SeatProof`] that no longer holds at commit.
pub(crate) fn seat_unproven(project: &str, proof: &SeatProof) -> ClaimError {
    ClaimError::IdentityUnproven {
        project: project.into(),
        identity: proof.identity.clone(),
        act: format!("a claim write by {}", proof.identity),
    }
}

impl WorkClaimWrite {
    /// The history step this write appends: the new row, as of the audit row's time and
    /// actor (one source for both, so history and audit never disagree on who and when).
    pub fn step(&self) -> WorkClaimStep {
        WorkClaimStep {
            at: self.audit.at,
            actor: self.audit.actor.clone(),
            action: self.action.clone(),
            claim: self.row.clone(),
        }
    }
}

/// Seed 002's work claims: channels, per-task rows with their own compare-and-set version,
/// history, focus leases and the index of claims whose TTL runs out.
pub trait WorkStore {
    /// Creates a channel; `channel_exists` if it exists (never overwritten).
    fn insert_channel(&self, channel: &Channel, audit: &AuditEntry) -> Result<(), ClaimError>;

    /// A channel.
    fn channel(&self, project: &str, channel: &str) -> Result<Option<Channel>, ClaimError>;

    /// A task's row.
    fn work_claim(&self, project: &str, channel: &str, task: &str) -> Result<Option<WorkClaim>, ClaimError>;

    /// Every row in a channel, ordered by task.
    fn work_claims(&self, project: &str, channel: &str) -> Result<Vec<WorkClaim>, ClaimError>;

    /// A task's history, oldest first.
    fn work_claim_history(&self, project: &str, channel: &str, task: &str) -> Result<Vec<WorkClaimStep>, ClaimError>;

    /// Applies each write if its row is still at its expected version; one result per write,
    /// in order (`Done(new version)` or `Conflict`). A store may commit the batch in one
    /// transaction; a conflict on one write never stops the others.
    fn write_work_claims(&self, writes: &[WorkClaimWrite]) -> Result<Vec<Commit>, ClaimError>;

    /// Up to `limit` claimed rows of `project` whose TTL ran out by `as_of`
    /// ([`WorkClaim::due_at`], focus leases not considered), earliest first.
    fn due_claims(&self, project: &str, as_of: Millis, limit: usize) -> Result<Vec<WorkClaim>, ClaimError>;

    /// The projects holding at least one claim due by `as_of` (the server's sweeper).
    fn projects_with_due(&self, as_of: Millis) -> Result<Vec<String>, ClaimError>;

    /// Each seat's latest focus lease in `project`.
    fn focus_leases(&self, project: &str) -> Result<Vec<FocusLease>, ClaimError>;

    /// Writes the seat's focus lease, with its audit row, as [`FocusWrite`] says.
    fn put_focus(&self, write: FocusWrite<'_>) -> Result<Commit, ClaimError>;
}

/// Projects' maintenance pauses (issue 30 point 3): one record per project, the latest
/// pause (resumed or not), with its own compare-and-set version.
pub trait PauseStore {
    /// The project's pause record, resumed or not; None if it was never paused.
    fn pause(&self, project: &str) -> Result<Option<ProjectPause>, ClaimError>;

    /// Every project's pause record, resumed or not, ordered by project (`/metrics` counts
    /// the active ones).
    fn pauses(&self) -> Result<Vec<ProjectPause>, ClaimError>;

    /// Writes `pause` with its audit row (and the audit row's kept answer) only if the
    /// stored record is still at `expected_version` (0: none stored); `Conflict` writes
    /// nothing.
    fn put_pause(&self, pause: &ProjectPause, expected_version: u64, audit: &AuditEntry) -> Result<Commit, ClaimError>;
}

/// Coordinator state for many projects.
pub trait Store: WorkStore + PauseStore + Send + Sync {
    /// The project's current state (an unknown project reads as empty at version 0).
    fn snapshot(&self, project: &str) -> Result<Snapshot, ClaimError>;

    /// Writes the change and its audit row (if any) atomically if the project is still at
    /// the write's expected version.
    fn commit(&self, write: ProjectWrite<'_>) -> Result<Commit, ClaimError>;

    /// Reads, decides and commits one verb. `decide` returns the change and its audit row;
    /// it may run more than once (after a conflict) and must not have side effects beyond
    /// recording its last result.
    fn transact(&self, project: &str, decide: &mut Decide<'_>) -> Result<u64, ClaimError> {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let snap = self.snapshot(project)?;
            let (change, audit) = decide(&snap)?;
            let write =
                ProjectWrite { project, expected_version: snap.version, change: &change, audit: audit.as_ref() };
            if let Commit::Done(v) = self.commit(write)? {
                return Ok(v);
            }
        }
        Err(ClaimError::Unavailable(format!("project {project} kept changing ({MAX_CAS_ATTEMPTS} attempts)")))
    }

    /// Appends an audit row on its own (failed verbs, operator administration). A
    /// [`AuditEntry::request`] on it is ignored: only a verb's own write keeps an answer.
    fn append_audit(&self, entry: &AuditEntry) -> Result<(), ClaimError>;

    /// The answer kept under a request key (see [`super::requests`]) if it has not expired
    /// by `now`. Every write that carries an [`AuditEntry::request`] keeps it atomically
    /// with the write, refusing it (and the write) when the key holds a live record.
    fn recall_request(&self, verb: &str, key: &str, now: Millis) -> Result<Option<KeptAnswer>, ClaimError>;

    /// Removes every kept request record expired by `now` and returns how many (issue 28
    /// point 3: expired SQLite rows were only removed, 16 at a time, by a later write that
    /// itself kept an answer, so a store that went quiet kept its answers forever). Called by
    /// the retention prune; a store whose records expire by themselves (Redis keys carry a
    /// TTL) removes nothing.
    fn purge_requests(&self, now: Millis) -> Result<u64, ClaimError> {
        let _ = now;
        Ok(0)
    }

    /// The project's state for a reader's proof (issue 39 point 6: `master history` shows
    /// who and why only to a session of the project), never for a decision: a store with a
    /// separate read connection (SQLite) reads it there, so a reader never waits behind a
    /// write. By default, [`Store::snapshot`].
    fn read_snapshot(&self, project: &str) -> Result<Snapshot, ClaimError> {
        self.snapshot(project)
    }

    /// The newest `limit` audit rows, oldest first; all projects when `project` is None.
    fn audit_log(&self, project: Option<&str>, limit: usize) -> Result<Vec<AuditEntry>, ClaimError>;

    /// One page of the audit log, in cursor order, for `audit export` and `master history`
    /// (issue 30); each row with its cursor (the row's id: increasing in the order rows were
    /// written, never reused). Reads one bounded page: an export never holds the table.
    fn audit_page(&self, page: &AuditPage<'_>) -> Result<Vec<(u64, AuditEntry)>, ClaimError>;

    /// Whether the audit log still holds the row at `cursor`, and the oldest cursor it
    /// holds (None when empty): an export resumes only from a row it can see, so a cursor
    /// behind the retention trim, or one never handed out, is refused instead of silently
    /// skipping rows.
    fn audit_cursor(&self, cursor: u64) -> Result<(bool, Option<u64>), ClaimError>;

    /// An operator's stored credential.
    fn operator(&self, operator_id: &str) -> Result<Option<OperatorRecord>, ClaimError>;

    /// Stores a new operator; `operator_exists` if the id is taken (never overwritten).
    fn insert_operator(&self, record: &OperatorRecord, audit: &AuditEntry) -> Result<(), ClaimError>;

    /// Counts a failed password verification for `operator_id` (known or not) at `at` and
    /// returns its failure count now, this one included. The count decays: one failure is
    /// forgiven per [`crate::claim::secret::FAILURE_DECAY_MS`] since the previous failure,
    /// so a back-off strangers earned for an operator id wears off by itself. Atomic, so
    /// parallel failures each see a higher count; an unknown id is counted like a known
    /// one, so the back-off never tells which ids exist.
    fn record_failure(&self, operator_id: &str, at: Millis) -> Result<u32, ClaimError>;

    /// A verification succeeded: the operator's failure count goes back to zero.
    fn attempt_succeeded(&self, operator_id: &str) -> Result<(), ClaimError>;

    /// Inbox events for `identity` in `project` with cursor > `after`, oldest first;
    /// `inbox_cursor_trimmed` when `after` is behind the inbox's trim mark
    /// ([`super::retention::check_cursor`]).
    fn inbox(&self, project: &str, identity: &str, after: u64, limit: usize) -> Result<Vec<Event>, ClaimError>;

    /// Removes what the retention [`Cutoffs`] no longer keep: audit rows, inbox events
    /// (raising each trimmed inbox's trim mark in the same step, so a reader behind it gets
    /// `inbox_cursor_trimmed`), idle operator-attempt rows (see [`super::retention`]).
    fn prune(&self, cutoffs: &Cutoffs) -> Result<Pruned, ClaimError>;

    /// The sizes that grow with use (for `/metrics`).
    fn sizes(&self) -> Result<Sizes, ClaimError>;

    /// Whether every plane answers (`/healthz`); by default, one snapshot read.
    fn health(&self) -> Result<(), ClaimError> {
        self.snapshot("writerctl-health").map(|_| ())
    }

    /// Whether verbs can be served now (`/readyz`): the authoritative plane answers. Never
    /// waits for the audit plane, whose lag is reported as [`Backlog::degraded`] instead.
    /// By default, [`Store::health`] (a store with one plane has no backlog).
    fn readiness(&self) -> Result<Backlog, ClaimError> {
        self.health().map(|()| Backlog::default())
    }

    /// How many projects have at least one registered controller and no master (for
    /// `/metrics`: master verbs have nobody to run them until an operator claims or a
    /// controller registers). A count, not a list: the number of projects is not bounded, so
    /// project names never become metric labels.
    fn projects_without_master(&self) -> Result<u64, ClaimError>;

    /// Writes accepted by the authoritative plane but not yet by the audit plane (the
    /// retry queue's depth, for `/metrics`); None for a store with one plane.
    fn pending_audit_writes(&self) -> Option<u64> {
        None
    }

    /// The retry queue's size, bounds and drops (issue 28 point 4); None for a store with
    /// one plane.
    fn audit_queue(&self) -> Option<AuditQueue> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28's drill: a failure that goes on logs once, not once per occurrence.
    #[test]
    fn an_episode_logs_its_start_once_and_its_end_once() {
        let e = Episode::new("test episode");
        assert!(!e.ongoing());
        assert!(!e.recover(), "nothing to recover from");
        assert!(e.fail(&"down"), "the first failure starts the episode and logs");
        for _ in 0..100 {
            assert!(!e.fail(&"down"), "the rest wait for the reminder");
        }
        assert!(e.ongoing());
        assert!(e.recover(), "the end logs once");
        assert!(!e.recover());
        assert!(e.fail(&"down again"), "a new episode logs again");
    }
}
