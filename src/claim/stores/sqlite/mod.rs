//! The embedded store: one SQLite file (bundled SQLite, WAL), one `BEGIN IMMEDIATE`
//! transaction per verb, schema migrations by `PRAGMA user_version`.
//!
//! `BEGIN IMMEDIATE` takes the database's write lock before the snapshot is read, so two
//! processes deciding at once are serialized: the second reads what the first committed
//! and its epoch check fails with `stale_master`. That is the compare-and-set, with no retry.
//!
//! Two connections (issue 39 point 6: a `master history` scan held the only connection's
//! mutex and put a handoff's p50 from 2.6 to 781 ms). Every verb's decision and write runs
//! on the writer connection, under its mutex. The reads that decide nothing — the audit log
//! (`audit`, `audit export`, `master history`), the sizes `/metrics` reports, and a reader's
//! proof ([`Store::read_snapshot`]) — run on a second, read-only connection under a mutex of
//! their own: in WAL mode a reader sees the last committed state and never waits for a
//! writer, so a history read never delays a handoff, and a handoff never waits for one.
//! Each of these reads walks an index to its `LIMIT` (see `the_audit_reads_walk_an_index`
//! in the tests, which checks every plan).
//!
//! # What it guarantees, and the test for each
//!
//! Tests named without a file are in `tests.rs` beside this one.
//!
//! * **A verb is one transaction.** Its rows, its audit row, its inbox events and the answer
//!   kept under its request id are written in one `BEGIN IMMEDIATE` transaction and commit
//!   together: a kept answer found live fails the transaction after the verb's rows were
//!   written, and they roll back with it (`sqlite_keeps_one_write_per_request`,
//!   `tests/it/request_id.rs`); a conflicting commit writes no audit row
//!   (`commit_is_a_compare_and_set_on_the_version`). Claim, focus and pause writes are one
//!   transaction each in the same way (`work.rs`, `pause.rs`; their tests are listed in
//!   [`super`]).
//! * **Compare-and-set on the version, serialized across processes.** The write lock is taken
//!   before the snapshot is read, so [`Store::transact`] never conflicts; the epoch check in
//!   the decision then refuses a stale caller. 16 processes racing one epoch on one file elect
//!   exactly one winner, 100 trials: `concurrent_verbs_elect_exactly_one_winner`
//!   (`tests/it/master.rs`). [`Store::commit`] from an older snapshot answers `Conflict` and
//!   writes nothing: `commit_is_a_compare_and_set_on_the_version`.
//! * **A verb waits for another process's write instead of failing busy**, also on a store
//!   file another process is still creating:
//!   `a_fresh_store_waits_for_a_concurrent_writer_instead_of_failing_busy`
//!   (`tests/it/master.rs`, a write held for 1.5 s). The limit, [`BUSY_TIMEOUT`], after which
//!   it answers `coordinator_unavailable`, has no test. A read that decides nothing never
//!   waits for the writer, and sees the last committed state:
//!   `an_audit_read_never_waits_for_the_writer`.
//! * **The file is private.** Created 0600; a file others may read, a symlink or a non-regular
//!   file at the path is refused: `a_store_others_can_read_is_refused`,
//!   `the_file_is_private_and_symlinks_are_refused`. A schema newer than this build is refused,
//!   never downgraded, and reopening keeps the data:
//!   `a_newer_schema_is_refused_and_reopening_is_idempotent`.
//! * **Bounded** as every store is (see [`super`]): the inbox bound on write, retention and the
//!   audit reads' plans, each with its test there.
//!
//! # What a crash leaves
//!
//! A process killed after a commit leaves the verb committed, its answer kept with it: a
//! server SIGKILLed between the commit and its reply, then asked again with the same request
//! id, returns the first answer and acts once
//! (`a_lost_reply_is_recovered_with_its_request_id_over_http_on_sqlite`,
//! `tests/it/request_id.rs`). A process killed inside the transaction leaves uncommitted
//! frames in the `-wal` file, which SQLite ignores and the next writer overwrites: nothing of
//! the verb, no audit row, no kept answer. That rests on SQLite's own atomic commit; no test
//! of ours kills a process mid-transaction. There is nothing for anyone to finish.
//!
//! # Durability
//!
//! `synchronous = FULL` in WAL mode: a commit returns only after its WAL frames are fsynced,
//! so a committed epoch survives power loss (a fencing number must never go back). This
//! rests on SQLite and on the filesystem honouring fsync; no test cuts power.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior, params};

use super::{AuditPage, Commit, Decide, ProjectWrite, Store, json_err, to_i64};
use crate::claim::error::{ClaimError, StoreError};
use crate::claim::model::{AuditEntry, Event, MasterRef, MasterSlot, Millis, NewEvent, OperatorRecord, Snapshot};
use crate::claim::requests::{self, KeptAnswer, RequestRecord};
use crate::claim::retention::{Cutoffs, PRUNE_BATCH, Pruned, Sizes, check_cursor};

mod pause;
mod work;

/// How long a verb waits for another process's write transaction before answering
/// `coordinator_unavailable`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Schema migrations, in order; migration `i` takes `user_version` from `i` to `i + 1`.
/// Append only: a released migration is never edited.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE projects (
    project           TEXT PRIMARY KEY,
    version           INTEGER NOT NULL,
    epoch             INTEGER NOT NULL,
    master_session_id TEXT,
    master_identity   TEXT
);
CREATE TABLE controllers (
    project        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    identity       TEXT NOT NULL,
    surface        TEXT NOT NULL,
    machine_id     TEXT NOT NULL,
    token_hash     TEXT NOT NULL,
    is_master      INTEGER NOT NULL,
    registered_at  INTEGER NOT NULL,
    last_heartbeat INTEGER NOT NULL,
    PRIMARY KEY (project, session_id),
    UNIQUE (project, identity, surface, machine_id)
);
CREATE TABLE operators (
    operator_id     TEXT PRIMARY KEY,
    password_hash   TEXT NOT NULL,
    failures        INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    last_failure_at INTEGER
);
CREATE TABLE events (
    cursor            INTEGER PRIMARY KEY AUTOINCREMENT,
    project           TEXT NOT NULL,
    recipient         TEXT NOT NULL,
    recipient_session TEXT,
    kind              TEXT NOT NULL,
    payload           TEXT NOT NULL,
    at                INTEGER NOT NULL
);
CREATE INDEX events_inbox ON events (project, recipient, cursor);
CREATE TABLE audit (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      INTEGER NOT NULL,
    project TEXT NOT NULL,
    verb    TEXT NOT NULL,
    actor   TEXT NOT NULL,
    target  TEXT,
    result  TEXT NOT NULL,
    epoch   INTEGER,
    detail  TEXT NOT NULL
);
CREATE INDEX audit_project ON audit (project, id);
"#,
    r#"
CREATE TABLE operator_attempts (
    operator_id     TEXT PRIMARY KEY,
    failures        INTEGER NOT NULL,
    last_failure_at INTEGER
);
"#,
    r#"
CREATE TABLE channels (
    project TEXT NOT NULL,
    channel TEXT NOT NULL,
    body    TEXT NOT NULL,
    PRIMARY KEY (project, channel)
);
CREATE TABLE claims (
    project TEXT NOT NULL,
    channel TEXT NOT NULL,
    task    TEXT NOT NULL,
    version INTEGER NOT NULL,
    due_at  INTEGER,
    body    TEXT NOT NULL,
    PRIMARY KEY (project, channel, task)
);
CREATE INDEX claims_due ON claims (project, due_at) WHERE due_at IS NOT NULL;
CREATE TABLE claim_history (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    project TEXT NOT NULL,
    channel TEXT NOT NULL,
    task    TEXT NOT NULL,
    body    TEXT NOT NULL
);
CREATE INDEX claim_history_task ON claim_history (project, channel, task, id);
CREATE TABLE focus_leases (
    project    TEXT NOT NULL,
    seat       TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    body       TEXT NOT NULL,
    PRIMARY KEY (project, seat)
);
"#,
    // Issue 19: identities enrolled per project (part of the project's compare-and-set state).
    r#"
CREATE TABLE identities (
    project       TEXT NOT NULL,
    identity      TEXT NOT NULL,
    key_hash      TEXT NOT NULL,
    enrolled_at   INTEGER NOT NULL,
    key_issued_at INTEGER NOT NULL,
    PRIMARY KEY (project, identity)
);
"#,
    // Retention: each inbox's trim mark (the highest cursor retention removed from it), and
    // the indexes the age cutoffs scan by.
    r#"
CREATE TABLE inbox_trims (
    project         TEXT NOT NULL,
    recipient       TEXT NOT NULL,
    trimmed_through INTEGER NOT NULL,
    PRIMARY KEY (project, recipient)
);
CREATE INDEX audit_at ON audit (at);
CREATE INDEX events_at ON events (at);
"#,
    // Answers kept under request ids (`crate::claim::requests`), written in the verb's own
    // transaction.
    r#"
CREATE TABLE requests (
    key         TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    answer      TEXT NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX requests_expiry ON requests (expires_at);
"#,
    // Issue 30: the caller's `--reason` on each audit row (NULL on rows written before).
    r#"
ALTER TABLE audit ADD COLUMN reason TEXT;
"#,
    // Issue 30: each project's latest maintenance pause (resumed or not), with its own
    // compare-and-set version (`pause.rs`).
    r#"
CREATE TABLE pauses (
    project TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    body    TEXT NOT NULL
);
"#,
    // Issue 39 point 6: `master history` reads a project's changes of master newest first;
    // through `audit_project` it examined every row of the project (refusals included) until
    // it had found enough changes. This partial index holds the changes only, so the read
    // examines what it returns. Its predicate must stay word for word the one
    // `MASTER_CHANGES_ONLY` puts in the query (`master_change` is
    // `crate::claim::model::MASTER_CHANGE`): SQLite uses a partial index only when the
    // query's WHERE clause contains the index's. The plan test fails if they drift apart.
    r#"
CREATE INDEX audit_master_changes ON audit (project, id)
    WHERE json_extract(detail, '$.master_change') IS NOT NULL;
"#,
];

/// The filter that makes a query eligible for the `audit_master_changes` partial index
/// (see its migration): the same words as the index's predicate.
const MASTER_CHANGES_ONLY: &str = "json_extract(detail, '$.master_change') IS NOT NULL";

/// The embedded store.
#[derive(Debug)]
pub struct SqliteStore {
    /// The writer: every decision and write, one transaction at a time.
    conn: Mutex<Connection>,
    /// The read-only connection for reads that decide nothing (see the module
    /// documentation): never behind the writer's mutex.
    reader: Mutex<Connection>,
    path: PathBuf,
    /// The newest events each inbox keeps, enforced on every append (0: no bound); see
    /// [`SqliteStore::set_inbox_max_events`].
    inbox_keep: AtomicU64,
}

fn db_err(e: rusqlite::Error) -> ClaimError {
    use rusqlite::ErrorCode as C;
    match e.sqlite_error_code() {
        Some(C::DatabaseBusy | C::DatabaseLocked) => ClaimError::Unavailable(format!("the store stayed busy: {e}")),
        Some(C::CannotOpen | C::PermissionDenied | C::ReadOnly) => ClaimError::Unavailable(e.to_string()),
        _ => StoreError::new(e.to_string()).with_source(e).into(),
    }
}

/// Creates the database file 0600 if it is missing, refusing a symlink or a non-regular
/// file at the path: the store holds password and token hashes.
fn create_private_file(path: &Path) -> Result<(), ClaimError> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .map_err(|e| ClaimError::invalid("store", format!("cannot open store {}: {e}", path.display())))?;
    let meta = f.metadata().map_err(|e| StoreError::new(e.to_string()).with_source(e))?;
    if !meta.is_file() {
        return Err(ClaimError::invalid("store", format!("store {} is not a regular file", path.display())));
    }
    // The store holds password and token hashes: an existing file others can read is
    // refused rather than silently used (or silently changed).
    use std::os::unix::fs::PermissionsExt;
    match private_mode_problem(path, meta.permissions().mode()) {
        Some(problem) => Err(ClaimError::invalid("store", problem)),
        None => Ok(()),
    }
}

/// Why a store file with this `mode` is refused (others may read or write it), or `None`.
/// `writerctl doctor` judges the file with the same rule.
pub fn private_mode_problem(path: &Path, mode: u32) -> Option<String> {
    let mode = mode & 0o777;
    (mode & 0o077 != 0).then(|| {
        format!(
            "store {} has mode {mode:04o}: others may read its password and token hashes (chmod 600 it)",
            path.display()
        )
    })
}

impl SqliteStore {
    /// Bounds each inbox to its newest `n` events on every append (`serve
    /// --inbox-max-events`; 0: no bound), so a flood of doorbells cannot outgrow the bound
    /// between two retention prunes (issue 28 point 4). Until called, no bound (`serve`
    /// passes its flag, whose default is
    /// [`DEFAULT_INBOX_MAX_EVENTS`](crate::claim::retention::DEFAULT_INBOX_MAX_EVENTS)).
    pub fn set_inbox_max_events(&self, n: u64) {
        self.inbox_keep.store(n, Ordering::Relaxed);
    }

    /// The inbox bound as [`insert_event`] takes it.
    pub(crate) fn inbox_keep(&self) -> u64 {
        self.inbox_keep.load(Ordering::Relaxed)
    }

    /// Opens (creating if missing) the store at `path` and migrates it to the current schema.
    /// A store written by a newer writerctl is refused, never downgraded.
    pub fn open(path: &Path) -> Result<SqliteStore, ClaimError> {
        create_private_file(path)?;
        // No SQLITE_OPEN_NOFOLLOW: it refuses a symlink anywhere in the path (a symlinked
        // home directory is common); create_private_file already refused one at the file.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(path, flags).map_err(db_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db_err)?;
        let mode = switch_to_wal(&conn)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(ClaimError::store(format!("could not switch {} to WAL (journal_mode {mode})", path.display())));
        }
        // FULL: a committed epoch survives power loss; a fencing number must never go back.
        conn.pragma_update(None, "synchronous", "FULL").map_err(db_err)?;
        migrate(&mut conn)?;
        let reader = open_reader(path)?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            reader: Mutex::new(reader),
            path: path.to_path_buf(),
            inbox_keep: AtomicU64::new(0),
        })
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The read-only connection (see the module documentation). Never taken while the
    /// writer's mutex is held, nor the other way round, so the two cannot deadlock.
    fn read(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.reader.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Opens the read-only connection to a store the writer connection has already opened,
/// switched to WAL and migrated. Read-only at open (`SQLITE_OPEN_READ_ONLY`) and by
/// `query_only`, so a bug in a read can never write. In WAL mode its reads see the last
/// committed state without taking any lock a writer waits for.
fn open_reader(path: &Path) -> Result<Connection, ClaimError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(db_err)?;
    // A reader waits only while a checkpoint or a WAL recovery runs (short); never for a
    // write transaction.
    conn.busy_timeout(BUSY_TIMEOUT).map_err(db_err)?;
    conn.pragma_update(None, "query_only", true).map_err(db_err)?;
    Ok(conn)
}

/// Switches a database to WAL. On a brand-new file another process may be holding the
/// write lock (creating the schema); SQLite does not run the busy handler for this switch,
/// so it answers "database is locked" at once. Retry for as long as the busy timeout would
/// have waited, instead of failing a verb that merely raced the store's creation.
fn switch_to_wal(conn: &Connection) -> Result<String, ClaimError> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(2);
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(mode) => return Ok(mode),
            Err(e)
                if matches!(
                    e.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err(db_err(e)),
        }
    }
}

/// Brings the schema to `MIGRATIONS.len()` inside one write transaction.
fn migrate(conn: &mut Connection) -> Result<(), ClaimError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db_err)?;
    let current: usize = tx.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0)).map_err(db_err)? as usize;
    if current > MIGRATIONS.len() {
        return Err(ClaimError::store(format!(
            "the store has schema {current}; this writerctl knows schema {} (upgrade writerctl)",
            MIGRATIONS.len()
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current) {
        tx.execute_batch(sql).map_err(db_err)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64).map_err(db_err)?;
    }
    tx.commit().map_err(db_err)
}

fn load(tx: &Connection, project: &str) -> Result<Snapshot, ClaimError> {
    let head: Option<(i64, i64, Option<String>, Option<String>)> = tx
        .query_row(
            "SELECT version, epoch, master_session_id, master_identity FROM projects WHERE project = ?1",
            [project],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()
        .map_err(db_err)?;
    let (version, epoch, msid, mid) = head.unwrap_or((0, 0, None, None));
    let master = match (msid, mid) {
        (Some(session_id), Some(identity)) => Some(MasterRef { identity, session_id }),
        _ => None,
    };
    let mut stmt = tx
        .prepare_cached(
            "SELECT session_id, identity, surface, machine_id, token_hash, is_master, registered_at, last_heartbeat
             FROM controllers WHERE project = ?1 ORDER BY session_id",
        )
        .map_err(db_err)?;
    let controllers = stmt
        .query_map([project], |r| Ok(record_from_row!(Controller, r.get, 0)))
        .map_err(db_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err)?;
    let identities = tx
        .prepare_cached(
            "SELECT identity, key_hash, enrolled_at, key_issued_at FROM identities WHERE project = ?1 ORDER BY identity",
        )
        .map_err(db_err)?
        .query_map([project], |r| {
            Ok(record_from_row!(EnrolledIdentity, r.get, 0))
        })
        .map_err(db_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err)?;
    Ok(Snapshot {
        project: project.to_string(),
        version: version as u64,
        slot: MasterSlot { master, epoch: epoch as u64 },
        controllers,
        identities,
    })
}

/// How many expired request records one write removes (bounded work per verb; with one
/// write adding one record, this keeps the table at what the retention window holds).
const REQUEST_PURGE: i64 = 16;

/// Keeps a verb's answer under its request id, inside the verb's transaction. A live record
/// under the key means another attempt with the same id committed first: this one fails and
/// its transaction (the verb's write with it) rolls back.
fn keep_request(tx: &Connection, r: &RequestRecord, now: Millis) -> Result<(), ClaimError> {
    tx.prepare_cached("DELETE FROM requests WHERE key IN (SELECT key FROM requests WHERE expires_at <= ?1 LIMIT ?2)")
        .and_then(|mut s| s.execute(params![now, REQUEST_PURGE]))
        .and_then(|_| tx.prepare_cached("DELETE FROM requests WHERE key = ?1 AND expires_at <= ?2"))
        .and_then(|mut s| s.execute(params![r.key, now]))
        .map_err(db_err)?;
    let inserted = tx
        .prepare_cached(
            "INSERT INTO requests (key, fingerprint, answer, expires_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (key) DO NOTHING",
        )
        .and_then(|mut s| s.execute(params![r.key, r.fingerprint, r.answer, r.expires_at]))
        .map_err(db_err)?;
    if inserted == 0 {
        return Err(requests::in_flight());
    }
    Ok(())
}

/// Inserts an audit row and keeps the answer it carries, if any (one transaction).
fn insert_audit(tx: &Connection, a: &AuditEntry) -> Result<(), ClaimError> {
    if let Some(r) = &a.request {
        keep_request(tx, r, a.at)?;
    }
    tx.prepare_cached(
        "INSERT INTO audit (at, project, verb, actor, target, result, epoch, detail, reason)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )
    .and_then(|mut s| {
        s.execute(params![
            a.at,
            a.project,
            a.verb,
            a.actor,
            a.target,
            a.result,
            a.epoch.map(|e| e as i64),
            a.detail.to_string(),
            a.reason
        ])
    })
    .map_err(db_err)?;
    Ok(())
}

/// Appends one inbox event, then keeps the inbox to its newest `keep` events (0: no bound),
/// raising its trim mark in the same transaction as the removal, as the retention prune
/// does (a reader behind the mark gets `inbox_cursor_trimmed`, never a silent skip). On
/// write, not only in the periodic prune (issue 28 point 4): one seat's doorbells could
/// otherwise grow an inbox without bound between two prunes. The lookup walks at most
/// `keep + 1` index entries of `events_inbox`.
fn insert_event(tx: &Connection, project: &str, e: &NewEvent, at: Millis, keep: u64) -> Result<(), ClaimError> {
    tx.prepare_cached(
        "INSERT INTO events (project, recipient, recipient_session, kind, payload, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .and_then(|mut s| s.execute(params![project, e.recipient, e.recipient_session, e.kind, e.payload.to_string(), at]))
    .map_err(db_err)?;
    if keep == 0 {
        return Ok(());
    }
    let through: Option<i64> = tx
        .prepare_cached(
            "SELECT cursor FROM events WHERE project = ?1 AND recipient = ?2 ORDER BY cursor DESC LIMIT 1 OFFSET ?3",
        )
        .and_then(|mut s| s.query_row(params![project, e.recipient, to_i64(keep)], |r| r.get(0)).optional())
        .map_err(db_err)?;
    if let Some(through) = through {
        tx.prepare_cached(
            "INSERT INTO inbox_trims (project, recipient, trimmed_through) VALUES (?1, ?2, ?3)
             ON CONFLICT (project, recipient) DO UPDATE SET trimmed_through = MAX(trimmed_through, excluded.trimmed_through)",
        )
        .and_then(|mut s| s.execute(params![project, e.recipient, through]))
        .map_err(db_err)?;
        tx.prepare_cached("DELETE FROM events WHERE project = ?1 AND recipient = ?2 AND cursor <= ?3")
            .and_then(|mut s| s.execute(params![project, e.recipient, through]))
            .map_err(db_err)?;
    }
    Ok(())
}

/// Writes `write` (its version already checked by the caller, inside its transaction).
fn apply(tx: &Transaction<'_>, write: ProjectWrite<'_>, inbox_keep: u64) -> Result<u64, ClaimError> {
    let ProjectWrite { project, expected_version: version, change, audit } = write;
    let at = write.events_at()?;
    let mut new_version = version;
    if !change.is_empty() {
        new_version = version + 1;
        tx.execute(
            "INSERT INTO projects (project, version, epoch) VALUES (?1, 0, 0) ON CONFLICT DO NOTHING",
            [project],
        )
        .map_err(db_err)?;
        for c in &change.upsert {
            tx.prepare_cached(
                "INSERT INTO controllers (project, session_id, identity, surface, machine_id, token_hash, is_master,
                                          registered_at, last_heartbeat)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (project, session_id) DO UPDATE SET
                   identity = excluded.identity, surface = excluded.surface, machine_id = excluded.machine_id,
                   token_hash = excluded.token_hash, is_master = excluded.is_master,
                   registered_at = excluded.registered_at, last_heartbeat = excluded.last_heartbeat",
            )
            .and_then(|mut s| {
                s.execute(params![
                    project,
                    c.session_id,
                    c.identity,
                    c.surface,
                    c.machine_id,
                    c.token_hash,
                    c.is_master,
                    c.registered_at,
                    c.last_heartbeat
                ])
            })
            .map_err(db_err)?;
        }
        for sid in &change.delete {
            tx.execute("DELETE FROM controllers WHERE project = ?1 AND session_id = ?2", params![project, sid])
                .map_err(db_err)?;
        }
        for i in &change.enroll {
            tx.execute(
                "INSERT INTO identities (project, identity, key_hash, enrolled_at, key_issued_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (project, identity) DO UPDATE SET
                   key_hash = excluded.key_hash, key_issued_at = excluded.key_issued_at",
                params![project, i.identity, i.key_hash, i.enrolled_at, i.key_issued_at],
            )
            .map_err(db_err)?;
        }
        for name in &change.unenroll {
            tx.execute("DELETE FROM identities WHERE project = ?1 AND identity = ?2", params![project, name])
                .map_err(db_err)?;
        }
        if let Some(slot) = &change.slot {
            tx.execute(
                "UPDATE projects SET epoch = ?2, master_session_id = ?3, master_identity = ?4 WHERE project = ?1",
                params![
                    project,
                    slot.epoch as i64,
                    slot.master.as_ref().map(|m| &m.session_id),
                    slot.master.as_ref().map(|m| &m.identity)
                ],
            )
            .map_err(db_err)?;
        }
        for e in &change.events {
            insert_event(tx, project, e, at, inbox_keep)?;
        }
        tx.execute("UPDATE projects SET version = ?2 WHERE project = ?1", params![project, new_version as i64])
            .map_err(db_err)?;
    }
    if let Some(audit) = audit {
        insert_audit(tx, audit)?;
    }
    Ok(new_version)
}

/// The columns [`audit_row`] reads, in its order (then `id` for a page).
const AUDIT_COLUMNS: &str = "at, project, verb, actor, target, result, epoch, detail, reason";

fn audit_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AuditEntry> {
    let detail: String = r.get(7)?;
    Ok(AuditEntry {
        at: r.get(0)?,
        project: r.get(1)?,
        verb: r.get(2)?,
        actor: r.get(3)?,
        target: r.get(4)?,
        result: r.get(5)?,
        epoch: r.get::<_, Option<i64>>(6)?.map(|e| e as u64),
        detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::String(detail)),
        request: None,
        reason: r.get(8)?,
    })
}

/// The newest `limit` audit rows (of `project`, or of all), newest first, with their
/// parameters. Two statements rather than one with `?1 IS NULL OR project = ?1` (issue 39
/// point 6): SQLite plans a statement once, for every value, so that filter could use no
/// index and the read scanned the whole log. The rowid bound of the second (every row
/// below the largest id there can be) makes its plan a search in rowid order that the plan
/// test can tell from a full scan; it stops at the `LIMIT` either way.
fn audit_log_query(project: Option<&str>, limit: usize) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let limit = Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX));
    match project {
        Some(p) => (
            format!("SELECT {AUDIT_COLUMNS} FROM audit WHERE project = ?1 ORDER BY id DESC LIMIT ?2"),
            vec![Value::Text(p.to_string()), limit],
        ),
        None => (
            format!("SELECT {AUDIT_COLUMNS} FROM audit WHERE id <= ?1 ORDER BY id DESC LIMIT ?2"),
            vec![Value::Integer(i64::MAX), limit],
        ),
    }
}

/// One page of the audit log as [`AuditPage`] says, with its parameters: one statement per
/// shape (with or without a project, all rows or the changes of master), each with an index
/// that serves it in cursor order (`audit_project`, `audit_master_changes`, the rowid), so
/// a page examines the rows it returns, not the log (issue 39 point 6). The changes of
/// master are read per project only: across every project no index serves them.
fn audit_page_query(page: &AuditPage<'_>) -> Result<(String, Vec<rusqlite::types::Value>), ClaimError> {
    use rusqlite::types::Value;
    let order = if page.newest_first { "DESC" } else { "ASC" };
    let limit = Value::Integer(i64::try_from(page.limit).unwrap_or(i64::MAX));
    let (since, after) = (Value::Integer(page.since), Value::Integer(to_i64(page.after)));
    let select = format!("SELECT {AUDIT_COLUMNS}, id FROM audit");
    Ok(match (page.project, page.master_changes) {
        (Some(p), true) => (
            format!(
                "{select} WHERE project = ?1 AND {MASTER_CHANGES_ONLY} AND at >= ?2 AND id > ?3 ORDER BY id {order} LIMIT ?4"
            ),
            vec![Value::Text(p.to_string()), since, after, limit],
        ),
        (Some(p), false) => (
            format!("{select} WHERE project = ?1 AND at >= ?2 AND id > ?3 ORDER BY id {order} LIMIT ?4"),
            vec![Value::Text(p.to_string()), since, after, limit],
        ),
        (None, false) => {
            (format!("{select} WHERE id > ?2 AND at >= ?1 ORDER BY id {order} LIMIT ?3"), vec![since, after, limit])
        }
        (None, true) => return Err(super::master_changes_need_a_project()),
    })
}

/// Whether the log holds the row at a cursor, and its oldest cursor: two rowid lookups.
const AUDIT_CURSOR_QUERY: &str = "SELECT EXISTS (SELECT 1 FROM audit WHERE id = ?1), (SELECT MIN(id) FROM audit)";

impl Store for SqliteStore {
    fn snapshot(&self, project: &str) -> Result<Snapshot, ClaimError> {
        let mut conn = self.lock();
        // One read transaction: the head row and the controllers come from the same state.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred).map_err(db_err)?;
        let snap = load(&tx, project)?;
        tx.commit().map_err(db_err)?;
        Ok(snap)
    }

    fn commit(&self, write: ProjectWrite<'_>) -> Result<Commit, ClaimError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db_err)?;
        if load(&tx, write.project)?.version != write.expected_version {
            return Ok(Commit::Conflict);
        }
        let v = apply(&tx, write, self.inbox_keep())?;
        tx.commit().map_err(db_err)?;
        Ok(Commit::Done(v))
    }

    fn transact(&self, project: &str, decide: &mut Decide<'_>) -> Result<u64, ClaimError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db_err)?;
        let snap = load(&tx, project)?;
        let (change, audit) = decide(&snap)?;
        let write = ProjectWrite { project, expected_version: snap.version, change: &change, audit: audit.as_ref() };
        let v = apply(&tx, write, self.inbox_keep())?;
        tx.commit().map_err(db_err)?;
        Ok(v)
    }

    fn append_audit(&self, entry: &AuditEntry) -> Result<(), ClaimError> {
        insert_audit(&self.lock(), entry)
    }

    fn recall_request(&self, _verb: &str, key: &str, now: Millis) -> Result<Option<KeptAnswer>, ClaimError> {
        self.lock()
            .prepare_cached("SELECT fingerprint, answer FROM requests WHERE key = ?1 AND expires_at > ?2")
            .and_then(|mut s| {
                s.query_row(params![key, now], |r| Ok(KeptAnswer { fingerprint: r.get(0)?, answer: r.get(1)? }))
                    .optional()
            })
            .map_err(db_err)
    }

    fn purge_requests(&self, now: Millis) -> Result<u64, ClaimError> {
        self.delete_in_batches(
            "DELETE FROM requests WHERE key IN (SELECT key FROM requests WHERE expires_at <= ?1 LIMIT ?2)",
            now,
        )
    }

    fn projects_without_master(&self) -> Result<u64, ClaimError> {
        // From the controllers' side: a project with controllers and no `projects` row (or a
        // row with an empty slot) counts. On the read connection: `/metrics` asks.
        self.read()
            .query_row(
                "SELECT COUNT(DISTINCT c.project) FROM controllers c
                 LEFT JOIN projects p ON p.project = c.project
                 WHERE p.master_session_id IS NULL",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as u64)
            .map_err(db_err)
    }

    fn audit_log(&self, project: Option<&str>, limit: usize) -> Result<Vec<AuditEntry>, ClaimError> {
        let conn = self.read();
        let (sql, args) = audit_log_query(project, limit);
        let mut stmt = conn.prepare_cached(&sql).map_err(db_err)?;
        let mut rows = stmt
            .query_map(rusqlite::params_from_iter(args), audit_row)
            .map_err(db_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err)?;
        rows.reverse();
        Ok(rows)
    }

    fn audit_page(&self, page: &AuditPage<'_>) -> Result<Vec<(u64, AuditEntry)>, ClaimError> {
        let (sql, args) = audit_page_query(page)?;
        let conn = self.read();
        let mut stmt = conn.prepare_cached(&sql).map_err(db_err)?;
        stmt.query_map(rusqlite::params_from_iter(args), |r| Ok((r.get::<_, i64>(9)?.max(0) as u64, audit_row(r)?)))
            .map_err(db_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err)
    }

    fn audit_cursor(&self, cursor: u64) -> Result<(bool, Option<u64>), ClaimError> {
        self.read()
            .query_row(AUDIT_CURSOR_QUERY, [to_i64(cursor)], |r| {
                Ok((r.get::<_, bool>(0)?, r.get::<_, Option<i64>>(1)?.map(|i| i.max(0) as u64)))
            })
            .map_err(db_err)
    }

    fn read_snapshot(&self, project: &str) -> Result<Snapshot, ClaimError> {
        let mut conn = self.read();
        // One read transaction, as `snapshot`: the head row and the controllers agree.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred).map_err(db_err)?;
        let snap = load(&tx, project)?;
        tx.commit().map_err(db_err)?;
        Ok(snap)
    }

    fn operator(&self, operator_id: &str) -> Result<Option<OperatorRecord>, ClaimError> {
        self.lock()
            .query_row(
                "SELECT operator_id, password_hash, created_at FROM operators WHERE operator_id = ?1",
                [operator_id],
                |r| Ok(OperatorRecord { operator_id: r.get(0)?, password_hash: r.get(1)?, created_at: r.get(2)? }),
            )
            .optional()
            .map_err(db_err)
    }

    fn insert_operator(&self, rec: &OperatorRecord, audit: &AuditEntry) -> Result<(), ClaimError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db_err)?;
        let exists: bool = tx
            .query_row("SELECT EXISTS (SELECT 1 FROM operators WHERE operator_id = ?1)", [&rec.operator_id], |r| {
                r.get(0)
            })
            .map_err(db_err)?;
        if exists {
            return Err(ClaimError::OperatorExists(rec.operator_id.clone()));
        }
        tx.execute(
            "INSERT INTO operators (operator_id, password_hash, failures, created_at) VALUES (?1, ?2, 0, ?3)",
            params![rec.operator_id, rec.password_hash, rec.created_at],
        )
        .map_err(db_err)?;
        insert_audit(&tx, audit)?;
        tx.commit().map_err(db_err)
    }

    fn record_failure(&self, operator_id: &str, at: Millis) -> Result<u32, ClaimError> {
        let now: u32 = self
            .lock()
            .query_row(
                "INSERT INTO operator_attempts (operator_id, failures, last_failure_at) VALUES (?1, 1, ?2)
                 ON CONFLICT (operator_id) DO UPDATE SET
                     failures = MAX(0, failures - MAX(0, ?2 - COALESCE(last_failure_at, ?2)) / ?3) + 1,
                     last_failure_at = ?2
                 RETURNING failures",
                params![operator_id, at, crate::claim::secret::FAILURE_DECAY_MS],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        Ok(now)
    }

    fn attempt_succeeded(&self, operator_id: &str) -> Result<(), ClaimError> {
        self.lock()
            .execute("UPDATE operator_attempts SET failures = 0 WHERE operator_id = ?1", [operator_id])
            .map_err(db_err)?;
        Ok(())
    }

    fn inbox(&self, project: &str, identity: &str, after: u64, limit: usize) -> Result<Vec<Event>, ClaimError> {
        // Never `as i64`: a cursor past i64::MAX would wrap negative and replay events
        // already read (the engine refuses it first; this keeps the store honest alone).
        let after_db = i64::try_from(after)
            .map_err(|_| ClaimError::invalid("after", format!("inbox cursor {after} is beyond the largest cursor")))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut conn = self.lock();
        // One read transaction: the trim mark and the events come from the same state, so a
        // prune between them can neither hide a gap nor report one that is not there.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred).map_err(db_err)?;
        let mark: i64 = tx
            .query_row(
                "SELECT COALESCE(MAX(trimmed_through), 0) FROM inbox_trims WHERE project = ?1 AND recipient = ?2",
                params![project, identity],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        if after > 0 && after < mark as u64 {
            let oldest: Option<i64> = tx
                .query_row(
                    "SELECT MIN(cursor) FROM events WHERE project = ?1 AND recipient = ?2",
                    params![project, identity],
                    |r| r.get(0),
                )
                .map_err(db_err)?;
            check_cursor(after, mark as u64, oldest.map(|c| c as u64))?;
        }
        let rows = {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT cursor, at, recipient_session, kind, payload FROM events
                     WHERE project = ?1 AND recipient = ?2 AND cursor > ?3 ORDER BY cursor LIMIT ?4",
                )
                .map_err(db_err)?;
            stmt.query_map(params![project, identity, after_db, limit], |r| {
                Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get::<_, String>(4)?))
            })
            .map_err(db_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err)?
        };
        tx.commit().map_err(db_err)?;
        rows.into_iter()
            .map(|(cursor, at, recipient_session, kind, payload)| {
                Ok(Event {
                    cursor: cursor as u64,
                    at,
                    recipient_session,
                    kind,
                    payload: serde_json::from_str(&payload).map_err(json_err)?,
                })
            })
            .collect()
    }

    fn prune(&self, c: &Cutoffs) -> Result<Pruned, ClaimError> {
        let mut out = Pruned::default();
        if let Some(before) = c.audit_before {
            out.audit_rows = self.delete_in_batches(
                "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < ?1 LIMIT ?2)",
                before,
            )?;
            out.history_steps = self.delete_in_batches(
                "DELETE FROM claim_history WHERE id IN (
                     SELECT h.id FROM claim_history h
                     WHERE json_extract(h.body, '$.at') < ?1
                       AND h.id < (SELECT MAX(m.id) FROM claim_history m
                                   WHERE m.project = h.project AND m.channel = h.channel AND m.task = h.task)
                     LIMIT ?2)",
                before,
            )?;
        }
        if let Some(before) = c.inbox_before {
            out.inbox_entries += self.trim_events("SELECT cursor FROM events WHERE at < ?1 LIMIT ?2", before)?;
        }
        if let Some(keep) = c.inbox_keep {
            out.inbox_entries += self.trim_events(
                "SELECT cursor FROM (SELECT cursor, ROW_NUMBER() OVER
                     (PARTITION BY project, recipient ORDER BY cursor DESC) AS rn FROM events)
                 WHERE rn > ?1 LIMIT ?2",
                to_i64(keep),
            )?;
        }
        out.attempt_rows = self.delete_in_batches(
            "DELETE FROM operator_attempts WHERE operator_id IN
                 (SELECT operator_id FROM operator_attempts WHERE last_failure_at < ?1 LIMIT ?2)",
            c.attempts_before,
        )?;
        Ok(out)
    }

    fn sizes(&self) -> Result<Sizes, ClaimError> {
        // Counts read every row by nature: on the read connection, so they never hold the
        // writer up; `/metrics` asks at most once per `STORE_SERIES_MAX_AGE` whatever the
        // number of scrapes (see `server::metrics`).
        self.read()
            .query_row(
                "SELECT (SELECT COUNT(*) FROM audit), (SELECT COUNT(*) FROM events),
                        (SELECT COUNT(*) FROM operator_attempts), (SELECT COUNT(*) FROM claim_history)",
                [],
                |r| {
                    Ok(Sizes {
                        audit_rows: r.get::<_, i64>(0)?.max(0) as u64,
                        inbox_entries: r.get::<_, i64>(1)?.max(0) as u64,
                        attempt_rows: r.get::<_, i64>(2)?.max(0) as u64,
                        history_steps: r.get::<_, i64>(3)?.max(0) as u64,
                    })
                },
            )
            .map_err(db_err)
    }
}

impl SqliteStore {
    /// Runs a `DELETE ... LIMIT ?2` statement (parameter 1: `arg`) until it deletes less than
    /// a batch; each batch is its own transaction, so verbs run between them.
    fn delete_in_batches(&self, sql: &str, arg: i64) -> Result<u64, ClaimError> {
        let mut total = 0u64;
        loop {
            let n = self.lock().execute(sql, params![arg, PRUNE_BATCH as i64]).map_err(db_err)?;
            total += n as u64;
            if n < PRUNE_BATCH {
                return Ok(total);
            }
        }
    }

    /// Removes the inbox events `select` names (a query of cursors, parameter 1: `arg`,
    /// `LIMIT ?2`) a batch at a time, raising each trimmed inbox's trim mark in the same
    /// transaction as the removal.
    fn trim_events(&self, select: &str, arg: i64) -> Result<u64, ClaimError> {
        let mut total = 0u64;
        loop {
            let mut conn = self.lock();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db_err)?;
            tx.execute_batch(
                "CREATE TEMP TABLE IF NOT EXISTS trim_victims (cursor INTEGER PRIMARY KEY); DELETE FROM trim_victims",
            )
            .map_err(db_err)?;
            let n = tx
                .execute(&format!("INSERT INTO trim_victims {select}"), params![arg, PRUNE_BATCH as i64])
                .map_err(db_err)?;
            tx.execute_batch(
                "INSERT INTO inbox_trims (project, recipient, trimmed_through)
                     SELECT project, recipient, MAX(cursor) FROM events
                     WHERE cursor IN (SELECT cursor FROM trim_victims) GROUP BY project, recipient
                 ON CONFLICT (project, recipient) DO UPDATE
                     SET trimmed_through = MAX(trimmed_through, excluded.trimmed_through);
                 DELETE FROM events WHERE cursor IN (SELECT cursor FROM trim_victims);",
            )
            .map_err(db_err)?;
            tx.commit().map_err(db_err)?;
            total += n as u64;
            if n < PRUNE_BATCH {
                return Ok(total);
            }
        }
    }
}

#[cfg(test)]
mod tests;
