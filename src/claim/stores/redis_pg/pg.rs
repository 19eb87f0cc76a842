//! The audit plane: Postgres's schema, its connection with prepared statements, and how a
//! queued write is applied (a batch per transaction, a savepoint per entry, idempotent and
//! version-guarded, so replaying an entry changes nothing).

use std::collections::HashMap;
use std::sync::Mutex;

use super::connect;
use super::errors::{lock, pg_err, pg_rejects_entry};
use super::replies::parse_u64;
use crate::claim::error::ClaimError;
use crate::claim::model::{AuditEntry, Controller, EnrolledIdentity, MasterRef, Millis};
use crate::claim::requests::{self, RequestRecord};
use crate::claim::stores::codec::{from_json, to_i64};
use crate::claim::work_claims::{Channel, FocusLease, ProjectPause, WorkClaim, WorkClaimStep};

/// Postgres schema migrations, in order; `@.` stands for the quoted schema. Migration `i`
/// is recorded as version `i + 1` in `schema_migrations`. Append only.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE @.projects (
    project           TEXT PRIMARY KEY,
    version           BIGINT NOT NULL,
    epoch             BIGINT NOT NULL,
    master_session_id TEXT,
    master_identity   TEXT,
    last_cursor       BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE @.controller_status (
    project        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    identity       TEXT NOT NULL,
    surface        TEXT NOT NULL,
    machine_id     TEXT NOT NULL,
    token_hash     TEXT NOT NULL,
    is_master      BOOLEAN NOT NULL,
    registered_at  BIGINT NOT NULL,
    last_heartbeat BIGINT NOT NULL,
    version        BIGINT NOT NULL,
    PRIMARY KEY (project, session_id),
    UNIQUE (project, identity, surface, machine_id)
);
CREATE TABLE @.operators (
    operator_id     TEXT PRIMARY KEY,
    password_hash   TEXT NOT NULL,
    failures        INTEGER NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    last_failure_at BIGINT
);
CREATE TABLE @.audit (
    id      BIGSERIAL PRIMARY KEY,
    op_id   TEXT NOT NULL UNIQUE,
    at      BIGINT NOT NULL,
    project TEXT NOT NULL,
    verb    TEXT NOT NULL,
    actor   TEXT NOT NULL,
    target  TEXT,
    result  TEXT NOT NULL,
    epoch   BIGINT,
    detail  JSON NOT NULL
);
CREATE INDEX audit_project ON @.audit (project, id);
CREATE FUNCTION @.audit_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only';
END
$$;
CREATE TRIGGER audit_no_update BEFORE UPDATE OR DELETE ON @.audit
    FOR EACH ROW EXECUTE FUNCTION @.audit_is_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON @.audit
    FOR EACH STATEMENT EXECUTE FUNCTION @.audit_is_append_only();
"#,
    r#"
CREATE TABLE @.operator_attempts (
    operator_id     TEXT PRIMARY KEY,
    failures        INTEGER NOT NULL,
    last_failure_at BIGINT
);
"#,
    // Seed 002's work claims. `body` is the JSON Redis holds; the other columns are what a
    // query or a guard needs without parsing it.
    r#"
CREATE TABLE @.channels (
    project    TEXT NOT NULL,
    channel    TEXT NOT NULL,
    steward    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    body       JSON NOT NULL,
    PRIMARY KEY (project, channel)
);
CREATE TABLE @.claims (
    project    TEXT NOT NULL,
    channel    TEXT NOT NULL,
    task       TEXT NOT NULL,
    version    BIGINT NOT NULL,
    status     TEXT NOT NULL,
    owner      TEXT,
    due_at     BIGINT,
    updated_at BIGINT NOT NULL,
    body       JSON NOT NULL,
    PRIMARY KEY (project, channel, task)
);
CREATE TABLE @.claim_history (
    id          BIGSERIAL PRIMARY KEY,
    op_id       TEXT NOT NULL UNIQUE,
    project     TEXT NOT NULL,
    channel     TEXT NOT NULL,
    task        TEXT NOT NULL,
    version     BIGINT NOT NULL,
    at          BIGINT NOT NULL,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    last_cursor BIGINT NOT NULL,
    body        JSON NOT NULL
);
CREATE INDEX claim_history_task ON @.claim_history (project, channel, task, version, id);
CREATE TABLE @.focus_leases (
    project    TEXT NOT NULL,
    seat       TEXT NOT NULL,
    version    BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    until_at   BIGINT NOT NULL,
    ended_at   BIGINT,
    body       JSON NOT NULL,
    PRIMARY KEY (project, seat)
);
"#,
    // Issue 19: identities enrolled per project (in Redis: `identity:NAME` fields of the
    // project's head hash, committed with the rest of its state).
    r#"
CREATE TABLE @.identities (
    project       TEXT NOT NULL,
    identity      TEXT NOT NULL,
    key_hash      TEXT NOT NULL,
    enrolled_at   BIGINT NOT NULL,
    key_issued_at BIGINT NOT NULL,
    PRIMARY KEY (project, identity)
);
"#,
    // Retention (issue 15): the audit log stays append-only for everyone but the retention
    // prune, which deletes old rows inside a transaction that says so
    // (`SET LOCAL writerctl.audit_retention = 'on'`); UPDATE and TRUNCATE stay refused.
    r#"
CREATE OR REPLACE FUNCTION @.audit_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('writerctl.audit_retention', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only';
END
$$;
CREATE INDEX audit_at ON @.audit (at);
"#,
    // Answers kept under request ids for the one verb Postgres decides (`operator add`:
    // operators live here), written in its transaction. Every other verb keeps its answer in
    // Redis, with its write (`REQUEST_LUA`).
    r#"
CREATE TABLE @.requests (
    key         TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    answer      TEXT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX requests_expiry ON @.requests (expires_at);
"#,
    // Issue 30: the caller's `--reason` on each audit row (NULL on rows written before).
    // ALTER is not an UPDATE: the append-only triggers do not fire.
    r#"
ALTER TABLE @.audit ADD COLUMN reason TEXT;
"#,
    // Issue 30: each project's latest maintenance pause (resumed or not); `body` is the JSON
    // Redis holds, restored from here when Redis starts empty.
    r#"
CREATE TABLE @.project_pauses (
    project TEXT PRIMARY KEY,
    version BIGINT NOT NULL,
    body    JSON NOT NULL
);
"#,
    // Issue 39 point 6: `master history` reads a project's changes of master newest first;
    // through `audit_project` it examined every row of the project until it had found
    // enough. This partial index holds the changes only. Its predicate is word for word
    // the one `MASTER_CHANGES_ONLY` adds to the query (`master_change` is
    // `crate::claim::model::MASTER_CHANGE`): Postgres uses a partial index only when it
    // can prove the query's WHERE clause implies the index's.
    r#"
CREATE INDEX audit_master_changes ON @.audit (project, id) WHERE (detail -> 'master_change') IS NOT NULL;
"#,
];

/// The filter that makes a query eligible for the `audit_master_changes` partial index
/// (see its migration).
pub(super) const MASTER_CHANGES_ONLY: &str = "(detail -> 'master_change') IS NOT NULL";

/// The statement for the newest rows of the audit log (parameters: `$1` limit, and `$2`
/// the project when `project`): one statement per shape, each served newest first by an
/// index (`audit_project`, the primary key) whatever plan the server keeps for it.
pub(super) fn audit_log_sql(project: bool) -> String {
    let columns = super::AUDIT_COLUMNS;
    let filter = if project { "WHERE project = $2 " } else { "" };
    format!("SELECT {columns} FROM @.audit {filter}ORDER BY id DESC LIMIT $1")
}

/// The statement for one page of the audit log (parameters: `$1` since, `$2` after, `$3`
/// limit, and `$4` the project when there is one): one statement per shape, each served in
/// cursor order by an index (`audit_master_changes`, `audit_project`, the primary key), so
/// a page examines about the rows it returns (issue 39 point 6). `@.` is the schema.
pub(super) fn audit_page_sql(page: &crate::claim::stores::AuditPage<'_>) -> Result<String, ClaimError> {
    let columns = super::AUDIT_COLUMNS;
    let order = if page.newest_first { "DESC" } else { "ASC" };
    let filter = match (page.project.is_some(), page.master_changes) {
        (true, true) => format!("project = $4 AND {MASTER_CHANGES_ONLY} AND "),
        (true, false) => "project = $4 AND ".to_string(),
        (false, false) => String::new(),
        (false, true) => return Err(crate::claim::stores::master_changes_need_a_project()),
    };
    Ok(format!("SELECT {columns}, id FROM @.audit WHERE {filter}at >= $1 AND id > $2 ORDER BY id {order} LIMIT $3"))
}

/// The verb whose answer Postgres keeps (see the last migration).
pub(super) const POSTGRES_DECIDES: &str = "operator.add";

/// One Postgres connection, opened (and the schema migrated) on first use and again after
/// any connection failure.
pub(super) struct Pg {
    pub(super) target: connect::PgTarget,
    pub(super) ns: String,
    /// `"ns".`, substituted for `@.` in every statement.
    pub(super) prefix: String,
    pub(super) conn: Mutex<Option<PgConn>>,
}

/// A live connection and the statements prepared on it.
pub(super) struct PgConn {
    pub(super) client: postgres::Client,
    pub(super) st: Statements,
}

/// The queue's statements, prepared once per connection.
pub(super) struct Statements {
    pub(super) upsert_project: postgres::Statement,
    pub(super) delete_rows: postgres::Statement,
    pub(super) upsert_rows: postgres::Statement,
    pub(super) delete_identities: postgres::Statement,
    pub(super) upsert_identities: postgres::Statement,
    pub(super) insert_audit: postgres::Statement,
    pub(super) insert_audits: postgres::Statement,
    pub(super) work: WorkStatements,
}

impl Pg {
    pub(super) fn sql(&self, text: &str) -> String {
        text.replace("@.", &self.prefix)
    }

    pub(super) fn open(&self) -> Result<PgConn, ClaimError> {
        let mut client = self.target.connect()?;
        // Server-side bounds: a stuck lock or statement gives up instead of holding a verb.
        client.batch_execute("SET statement_timeout = 5000; SET lock_timeout = 5000").map_err(pg_err)?;
        self.migrate(&mut client)?;
        let mut prepare = |sql: &str| client.prepare(&self.sql(sql)).map_err(pg_err);
        let st = Statements {
            // The project's head, only if newer than what Postgres holds, in one statement:
            // the conflicting row is locked even when the version guard skips it, so
            // concurrent drainers of one project serialize (and a new project's first two
            // drainers never fail on the primary key). Touches a row iff it wrote.
            upsert_project: prepare(
                "INSERT INTO @.projects AS p (project, version, epoch, master_session_id, master_identity, last_cursor)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (project) DO UPDATE SET
                   version = excluded.version, epoch = excluded.epoch,
                   master_session_id = excluded.master_session_id, master_identity = excluded.master_identity,
                   last_cursor = GREATEST(p.last_cursor, excluded.last_cursor)
                 WHERE p.version < excluded.version",
            )?,
            delete_rows: prepare("DELETE FROM @.controller_status WHERE project = $1 AND NOT (session_id = ANY($2))")?,
            upsert_rows: prepare(
                "INSERT INTO @.controller_status AS cs (project, session_id, identity, surface, machine_id, token_hash,
                                                      is_master, registered_at, last_heartbeat, version)
                 SELECT $1, r.*, $10 FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                                                $7::boolean[], $8::bigint[], $9::bigint[]) AS r
                 ON CONFLICT (project, session_id) DO UPDATE SET
                   identity = excluded.identity, surface = excluded.surface, machine_id = excluded.machine_id,
                   token_hash = excluded.token_hash, is_master = excluded.is_master,
                   registered_at = excluded.registered_at, last_heartbeat = excluded.last_heartbeat,
                   version = excluded.version
                 WHERE cs.version <= excluded.version",
            )?,
            delete_identities: prepare("DELETE FROM @.identities WHERE project = $1 AND NOT (identity = ANY($2))")?,
            upsert_identities: prepare(
                "INSERT INTO @.identities (project, identity, key_hash, enrolled_at, key_issued_at)
                 SELECT $1, r.* FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS r
                 ON CONFLICT (project, identity) DO UPDATE SET
                   key_hash = excluded.key_hash, enrolled_at = excluded.enrolled_at,
                   key_issued_at = excluded.key_issued_at",
            )?,
            insert_audit: prepare(
                "INSERT INTO @.audit (op_id, at, project, verb, actor, target, result, epoch, detail, reason)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::json, $10)
                 ON CONFLICT (op_id) DO NOTHING",
            )?,
            // A drain's audit rows in one statement, in queue order (the log reads by id).
            // Issue 20: one INSERT per row held the writer to 1,300-1,700 entries/s.
            insert_audits: prepare(
                "INSERT INTO @.audit (op_id, at, project, verb, actor, target, result, epoch, detail, reason)
                 SELECT o, a, p, v, ac, t, r, e, d::json, w
                 FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[],
                             $7::text[], $8::bigint[], $9::text[], $10::text[])
                      WITH ORDINALITY AS u(o, a, p, v, ac, t, r, e, d, w, n)
                 ORDER BY n
                 ON CONFLICT (op_id) DO NOTHING",
            )?,
            work: WorkStatements::prepare(&mut prepare)?,
        };
        Ok(PgConn { client, st })
    }

    /// Creates the schema if missing and applies the migrations it lacks, serialized across
    /// processes by an advisory lock (two `CREATE SCHEMA IF NOT EXISTS` can still collide).
    pub(super) fn migrate(&self, client: &mut postgres::Client) -> Result<(), ClaimError> {
        let mut tx = client.transaction().map_err(pg_err)?;
        tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&format!("writerctl:{}", self.ns)])
            .map_err(pg_err)?;
        // Looked up first: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on the
        // database even when the schema exists, which a least-privilege role may lack.
        let exists =
            tx.query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&self.ns]).map_err(pg_err)?.is_some();
        let schema = self.prefix.trim_end_matches('.');
        if !exists {
            tx.batch_execute(&format!("CREATE SCHEMA {schema}")).map_err(pg_err)?;
        }
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
                 version    INTEGER PRIMARY KEY,
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
             )"
        ))
        .map_err(pg_err)?;
        let current: Option<i32> = tx
            .query_one(&self.sql("SELECT max(version) FROM @.schema_migrations"), &[])
            .and_then(|r| r.try_get(0))
            .map_err(pg_err)?;
        let current = usize::try_from(current.unwrap_or(0)).unwrap_or(0);
        if current > MIGRATIONS.len() {
            return Err(ClaimError::store(format!(
                "postgres schema {} is at version {current}; this writerctl knows version {} (upgrade writerctl)",
                self.ns,
                MIGRATIONS.len()
            )));
        }
        for (i, m) in MIGRATIONS.iter().enumerate().skip(current) {
            tx.batch_execute(&self.sql(m)).map_err(pg_err)?;
            let v = i32::try_from(i + 1).unwrap_or(i32::MAX);
            tx.execute(&self.sql("INSERT INTO @.schema_migrations (version) VALUES ($1)"), &[&v]).map_err(pg_err)?;
        }
        tx.commit().map_err(pg_err)
    }

    /// Runs `f` on the connection (opening it first if needed); a connection failure drops
    /// it so the next call reconnects.
    pub(super) fn run<T>(&self, f: impl FnOnce(&mut PgConn) -> Result<T, ClaimError>) -> Result<T, ClaimError> {
        let mut guard = lock(&self.conn);
        if guard.as_ref().is_none_or(|c| c.client.is_closed()) {
            *guard = None;
            *guard = Some(self.open()?);
        }
        let Some(conn) = guard.as_mut() else {
            return Err(ClaimError::store("postgres connection vanished"));
        };
        let result = f(conn);
        if matches!(result, Err(ClaimError::Unavailable(_))) {
            *guard = None;
        }
        result
    }
}

// ---------------------------------------------------------------------------------------
// the queued Postgres write
// ---------------------------------------------------------------------------------------

/// A project's state after a commit, as the queue carries it.
#[derive(Debug, Clone)]
pub(super) struct ProjectState {
    pub(super) version: u64,
    pub(super) epoch: u64,
    pub(super) master: Option<MasterRef>,
    pub(super) cursor: u64,
    pub(super) controllers: Vec<Controller>,
    /// None for an entry queued before identities were carried (left as Postgres has them).
    pub(super) identities: Option<Vec<EnrolledIdentity>>,
}

/// One queue entry: an audit row (all but routine heartbeats) and a project state (after a
/// change) or a work claim write (a claim row and its history step, a channel, a focus lease).
#[derive(Debug, Clone)]
pub(super) struct Job {
    pub(super) op_id: String,
    pub(super) project: String,
    pub(super) audit: Option<AuditEntry>,
    pub(super) state: Option<ProjectState>,
    pub(super) work: Option<Payload>,
}

impl Job {
    pub(super) fn decode(f: &HashMap<String, String>) -> Result<Job, ClaimError> {
        let get = |k: &str| f.get(k).ok_or_else(|| ClaimError::store(format!("queue entry without {k}")));
        let audit: Option<AuditEntry> = f.get("audit").map(|a| from_json(a)).transpose()?;
        let state = match f.get("controllers") {
            None => None,
            Some(rows) => Some(ProjectState {
                version: parse_u64("version", get("version")?)?,
                epoch: parse_u64("epoch", get("epoch")?)?,
                master: match (f.get("master_session_id"), f.get("master_identity")) {
                    (Some(s), Some(i)) => Some(MasterRef { identity: i.clone(), session_id: s.clone() }),
                    _ => None,
                },
                cursor: parse_u64("cursor", get("cursor")?)?,
                controllers: from_json(rows)?,
                identities: f.get("identities").map(|t| from_json(t)).transpose()?,
            }),
        };
        let work = Payload::decode(f)?;
        Ok(Job { op_id: get("op")?.clone(), project: get("project")?.clone(), audit, state, work })
    }
}

pub(super) fn insert_audit(
    tx: &mut postgres::Transaction<'_>,
    st: &Statements,
    op_id: &str,
    a: &AuditEntry,
) -> Result<(), postgres::Error> {
    let epoch = a.epoch.map(to_i64);
    tx.execute(
        &st.insert_audit,
        &[&op_id, &a.at, &a.project, &a.verb, &a.actor, &a.target, &a.result, &epoch, &a.detail.to_string(), &a.reason],
    )?;
    Ok(())
}

/// Writes a project's state inside the caller's transaction if it is newer than what
/// Postgres holds (the row lock serializes concurrent drainers per project). Writing a
/// state twice, or after a newer one, changes nothing.
pub(super) fn apply_state(
    tx: &mut postgres::Transaction<'_>,
    st: &Statements,
    project: &str,
    s: &ProjectState,
) -> Result<(), postgres::Error> {
    let version = to_i64(s.version);
    let written = tx.execute(
        &st.upsert_project,
        &[
            &project,
            &version,
            &to_i64(s.epoch),
            &s.master.as_ref().map(|m| &m.session_id),
            &s.master.as_ref().map(|m| &m.identity),
            &to_i64(s.cursor),
        ],
    )?;
    if written == 0 {
        // Postgres already holds this state or a newer one.
        return Ok(());
    }
    // Rows gone from Redis go first, so a re-registration under the same natural key (a
    // new session id) never meets its predecessor's UNIQUE row.
    let sids: Vec<&str> = s.controllers.iter().map(|c| c.session_id.as_str()).collect();
    tx.execute(&st.delete_rows, &[&project, &sids])?;
    let col = |f: fn(&Controller) -> &str| s.controllers.iter().map(f).collect::<Vec<&str>>();
    tx.execute(
        &st.upsert_rows,
        &[
            &project,
            &sids,
            &col(|c| &c.identity),
            &col(|c| &c.surface),
            &col(|c| &c.machine_id),
            &col(|c| &c.token_hash),
            &s.controllers.iter().map(|c| c.is_master).collect::<Vec<bool>>(),
            &s.controllers.iter().map(|c| c.registered_at).collect::<Vec<i64>>(),
            &s.controllers.iter().map(|c| c.last_heartbeat).collect::<Vec<i64>>(),
            &version,
        ],
    )?;
    if let Some(ids) = &s.identities {
        let names: Vec<&str> = ids.iter().map(|i| i.identity.as_str()).collect();
        tx.execute(&st.delete_identities, &[&project, &names])?;
        tx.execute(
            &st.upsert_identities,
            &[
                &project,
                &names,
                &ids.iter().map(|i| i.key_hash.as_str()).collect::<Vec<&str>>(),
                &ids.iter().map(|i| i.enrolled_at).collect::<Vec<i64>>(),
                &ids.iter().map(|i| i.key_issued_at).collect::<Vec<i64>>(),
            ],
        )?;
    }
    Ok(())
}

/// Keeps `operator add`'s answer in its Postgres transaction (see [`POSTGRES_DECIDES`]);
/// a live record under the key fails the transaction, as in the other stores.
pub(super) fn keep_request_pg(
    tx: &mut postgres::Transaction<'_>,
    pg: &Pg,
    r: &RequestRecord,
    now: Millis,
) -> Result<(), ClaimError> {
    tx.execute(&pg.sql("DELETE FROM @.requests WHERE expires_at <= $1"), &[&now]).map_err(pg_err)?;
    let inserted = tx
        .execute(
            &pg.sql(
                "INSERT INTO @.requests (key, fingerprint, answer, expires_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (key) DO NOTHING",
            ),
            &[&r.key, &r.fingerprint, &r.answer, &r.expires_at],
        )
        .map_err(pg_err)?;
    if inserted == 0 {
        return Err(requests::in_flight());
    }
    Ok(())
}

/// Runs `f` inside a savepoint: Ok(None) when it succeeded, Ok(Some(why)) when Postgres
/// refused the entry for good (rolled back alone), Err for anything retrying may fix.
pub(super) fn in_savepoint(
    tx: &mut postgres::Transaction<'_>,
    f: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<(), postgres::Error>,
) -> Result<Option<String>, ClaimError> {
    let mut sp = tx.savepoint("entry").map_err(pg_err)?;
    match f(&mut sp) {
        Ok(()) => sp.commit().map(|_| None).map_err(pg_err),
        Err(e) if pg_rejects_entry(&e) => {
            sp.rollback().map_err(pg_err)?;
            Ok(Some(pg_err(e).to_string()))
        }
        Err(e) => Err(pg_err(e)),
    }
}

/// Inserts audit rows in one statement (see `insert_audits`).
pub(super) fn insert_audits(
    tx: &mut postgres::Transaction<'_>,
    st: &Statements,
    rows: &[(&str, &AuditEntry)],
) -> Result<(), postgres::Error> {
    let col = |f: fn(&AuditEntry) -> &str| rows.iter().map(|(_, a)| f(a)).collect::<Vec<&str>>();
    let ops: Vec<&str> = rows.iter().map(|(op, _)| *op).collect();
    let at: Vec<i64> = rows.iter().map(|(_, a)| a.at).collect();
    let target: Vec<Option<&str>> = rows.iter().map(|(_, a)| a.target.as_deref()).collect();
    let epoch: Vec<Option<i64>> = rows.iter().map(|(_, a)| a.epoch.map(to_i64)).collect();
    let detail: Vec<String> = rows.iter().map(|(_, a)| a.detail.to_string()).collect();
    let reason: Vec<Option<&str>> = rows.iter().map(|(_, a)| a.reason.as_deref()).collect();
    tx.execute(
        &st.insert_audits,
        &[
            &ops,
            &at,
            &col(|a| &a.project),
            &col(|a| &a.verb),
            &col(|a| &a.actor),
            &target,
            &col(|a| &a.result),
            &epoch,
            &detail,
            &reason,
        ],
    )?;
    Ok(())
}

/// Runs `all` (a whole batch's writes of one kind) in one savepoint. When Postgres refuses
/// it for some entry's own fault, rolls it back and runs `each` instead, which finds that
/// entry with a savepoint per entry. The common case costs two statements for the batch
/// instead of two per entry.
pub(super) fn all_or_each(
    tx: &mut postgres::Transaction<'_>,
    all: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<(), postgres::Error>,
    each: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<(), ClaimError>,
) -> Result<(), ClaimError> {
    let mut sp = tx.savepoint("batch").map_err(pg_err)?;
    match all(&mut sp) {
        Ok(()) => sp.commit().map_err(pg_err),
        Err(e) if pg_rejects_entry(&e) => {
            sp.rollback().map_err(pg_err)?;
            each(tx)
        }
        Err(e) => Err(pg_err(e)),
    }
}

/// Applies a batch of queue entries in one transaction: audit rows in queue order, then work
/// claim writes in queue order (a claim's history keeps the order Redis committed it in;
/// each write is version-guarded or insert-once, so a replay changes nothing), then each
/// project's state once, from the newest entry Postgres accepts (every entry carries the
/// whole state, so older ones are superseded; if the newest is refused, the next newest is
/// tried). Returns, per entry, why Postgres refused it, if it did.
pub(super) fn apply_batch(conn: &mut PgConn, jobs: &[Result<Job, String>]) -> Result<Vec<Option<String>>, ClaimError> {
    let st = &conn.st;
    let mut tx = conn.client.transaction().map_err(pg_err)?;
    let mut refused: Vec<Option<String>> = jobs.iter().map(|j| j.as_ref().err().cloned()).collect();
    let audits: Vec<(&str, &AuditEntry)> = jobs
        .iter()
        .filter_map(|j| j.as_ref().ok())
        .filter_map(|j| j.audit.as_ref().map(|a| (j.op_id.as_str(), a)))
        .collect();
    all_or_each(
        &mut tx,
        |t| insert_audits(t, st, &audits),
        |t| {
            for (i, job) in jobs.iter().enumerate() {
                if let Ok(Job { op_id, audit: Some(audit), .. }) = job {
                    refused[i] = in_savepoint(t, |t| insert_audit(t, st, op_id, audit))?;
                }
            }
            Ok(())
        },
    )?;
    let works: Vec<(usize, &str, &Payload)> = jobs
        .iter()
        .enumerate()
        .filter(|(i, _)| refused[*i].is_none())
        .filter_map(|(i, j)| j.as_ref().ok().and_then(|j| j.work.as_ref().map(|w| (i, j.op_id.as_str(), w))))
        .collect();
    all_or_each(
        &mut tx,
        |t| works.iter().try_for_each(|(_, op_id, w)| w.apply(t, &st.work, op_id)),
        |t| {
            for (i, op_id, w) in &works {
                refused[*i] = in_savepoint(t, |t| w.apply(t, &st.work, op_id))?;
            }
            Ok(())
        },
    )?;
    let mut states: Vec<(usize, &str, &ProjectState)> = jobs
        .iter()
        .enumerate()
        .filter(|(i, _)| refused[*i].is_none())
        .filter_map(|(i, j)| j.as_ref().ok().and_then(|j| j.state.as_ref().map(|s| (i, j.project.as_str(), s))))
        .collect();
    states.sort_by(|a, b| a.1.cmp(b.1).then(b.2.version.cmp(&a.2.version)));
    let mut newest = states.clone();
    newest.dedup_by(|later, first| later.1 == first.1);
    all_or_each(
        &mut tx,
        |t| newest.iter().try_for_each(|(_, project, state)| apply_state(t, st, project, state)),
        |t| {
            let mut written: Option<&str> = None;
            for (i, project, state) in states {
                if written == Some(project) {
                    continue;
                }
                refused[i] = in_savepoint(t, |t| apply_state(t, st, project, state))?;
                if refused[i].is_none() {
                    written = Some(project);
                }
            }
            Ok(())
        },
    )?;
    tx.commit().map_err(pg_err)?;
    Ok(refused)
}

// ---------------------------------------------------------------------------------------
// the queued Postgres write of a work claim
// ---------------------------------------------------------------------------------------

/// A queue entry's work claim payload, with the JSON Redis holds (written to Postgres as is).
#[derive(Debug, Clone)]
pub(super) enum Payload {
    /// A claim write: the row, its history step, and the event cursor after its doorbells.
    Claim { row: Box<WorkClaim>, row_json: String, step: Box<WorkClaimStep>, step_json: String, cursor: u64 },
    /// A new channel.
    Channel { channel: Channel, json: String },
    /// A seat's focus lease, with the seat's write counter.
    Focus { lease: FocusLease, json: String, version: u64 },
    /// A project's pause record (its own version orders the writes).
    Pause { pause: ProjectPause, json: String },
}

fn field<'a>(f: &'a HashMap<String, String>, k: &str) -> Result<&'a String, ClaimError> {
    f.get(k).ok_or_else(|| ClaimError::store(format!("queue entry without {k}")))
}

impl Payload {
    /// The payload of a queue entry's fields, if it carries one.
    pub(super) fn decode(f: &HashMap<String, String>) -> Result<Option<Payload>, ClaimError> {
        if let Some(row_json) = f.get("claim") {
            let step_json = field(f, "step")?;
            return Ok(Some(Payload::Claim {
                row: from_json(row_json)?,
                row_json: row_json.clone(),
                step: from_json(step_json)?,
                step_json: step_json.clone(),
                cursor: parse_u64("cursor", field(f, "cursor")?)?,
            }));
        }
        if let Some(json) = f.get("channel") {
            return Ok(Some(Payload::Channel { channel: from_json(json)?, json: json.clone() }));
        }
        if let Some(json) = f.get("pause") {
            return Ok(Some(Payload::Pause { pause: from_json(json)?, json: json.clone() }));
        }
        if let Some(json) = f.get("focus") {
            return Ok(Some(Payload::Focus {
                lease: from_json(json)?,
                json: json.clone(),
                version: parse_u64("focus_version", field(f, "focus_version")?)?,
            }));
        }
        Ok(None)
    }

    /// Writes the payload inside the caller's transaction; idempotent, and never moves a row
    /// back to an older version.
    pub(super) fn apply(
        &self,
        tx: &mut postgres::Transaction<'_>,
        st: &WorkStatements,
        op_id: &str,
    ) -> Result<(), postgres::Error> {
        match self {
            Payload::Claim { row, row_json, step, step_json, cursor } => {
                tx.execute(
                    &st.upsert_claim,
                    &[
                        &row.project,
                        &row.channel,
                        &row.task,
                        &to_i64(row.version),
                        &row.status.as_str(),
                        &row.owner,
                        &row.due_at(),
                        &row.updated_at,
                        row_json,
                    ],
                )?;
                let c = &step.claim;
                tx.execute(
                    &st.insert_step,
                    &[
                        &op_id,
                        &c.project,
                        &c.channel,
                        &c.task,
                        &to_i64(c.version),
                        &step.at,
                        &step.actor,
                        &step.action,
                        &to_i64(*cursor),
                        step_json,
                    ],
                )?;
            }
            Payload::Channel { channel: c, json } => {
                tx.execute(&st.insert_channel, &[&c.project, &c.channel, &c.steward, &c.created_at, json])?;
            }
            Payload::Focus { lease: l, json, version } => {
                tx.execute(
                    &st.upsert_focus,
                    &[&l.project, &l.seat, &to_i64(*version), &l.started_at, &l.until, &l.ended_at, json],
                )?;
            }
            Payload::Pause { pause: p, json } => {
                tx.execute(&st.upsert_pause, &[&p.project, &to_i64(p.version), json])?;
            }
        }
        Ok(())
    }
}

/// The work claims' queue statements, prepared once per connection.
pub(super) struct WorkStatements {
    upsert_claim: postgres::Statement,
    insert_step: postgres::Statement,
    insert_channel: postgres::Statement,
    upsert_focus: postgres::Statement,
    upsert_pause: postgres::Statement,
}

impl WorkStatements {
    pub(super) fn prepare(
        prepare: &mut impl FnMut(&str) -> Result<postgres::Statement, ClaimError>,
    ) -> Result<WorkStatements, ClaimError> {
        Ok(WorkStatements {
            // Version-guarded: a replayed or reordered entry never moves the row back.
            upsert_claim: prepare(
                "INSERT INTO @.claims AS c (project, channel, task, version, status, owner, due_at, updated_at, body)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::json)
                 ON CONFLICT (project, channel, task) DO UPDATE SET
                   version = excluded.version, status = excluded.status, owner = excluded.owner,
                   due_at = excluded.due_at, updated_at = excluded.updated_at, body = excluded.body
                 WHERE c.version < excluded.version",
            )?,
            insert_step: prepare(
                "INSERT INTO @.claim_history (op_id, project, channel, task, version, at, actor, action, last_cursor,
                                              body)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::text::json)
                 ON CONFLICT (op_id) DO NOTHING",
            )?,
            insert_channel: prepare(
                "INSERT INTO @.channels (project, channel, steward, created_at, body)
                 VALUES ($1, $2, $3, $4, $5::text::json)
                 ON CONFLICT (project, channel) DO NOTHING",
            )?,
            upsert_focus: prepare(
                "INSERT INTO @.focus_leases AS f (project, seat, version, started_at, until_at, ended_at, body)
                 VALUES ($1, $2, $3, $4, $5, $6, $7::text::json)
                 ON CONFLICT (project, seat) DO UPDATE SET
                   version = excluded.version, started_at = excluded.started_at, until_at = excluded.until_at,
                   ended_at = excluded.ended_at, body = excluded.body
                 WHERE f.version < excluded.version",
            )?,
            // Version-guarded like a claim: a replayed or reordered entry never moves it back.
            upsert_pause: prepare(
                "INSERT INTO @.project_pauses AS p (project, version, body) VALUES ($1, $2, $3::text::json)
                 ON CONFLICT (project) DO UPDATE SET version = excluded.version, body = excluded.body
                 WHERE p.version < excluded.version",
            )?,
        })
    }
}
