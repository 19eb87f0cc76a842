//! The embedded store's unit tests.

use super::*;
use crate::claim::model::{Change, Controller, MasterRef};
use crate::claim::stores::{WorkClaimWrite, WorkStore};
use crate::claim::work_claims::{Channel, FocusLease, WorkClaim, WorkClaimStep};
use std::sync::atomic::{AtomicUsize, Ordering};

fn audit(project: &str) -> AuditEntry {
    AuditEntry {
        at: 1,
        project: project.into(),
        verb: "test".into(),
        actor: "local".into(),
        target: None,
        result: "ok".into(),
        epoch: None,
        request: None,
        detail: serde_json::json!({}),
        reason: None,
    }
}

fn row(sid: &str) -> Controller {
    Controller {
        session_id: sid.into(),
        identity: format!("id-{sid}"),
        surface: "cli".into(),
        machine_id: "m".into(),
        token_hash: "h".into(),
        is_master: false,
        registered_at: 1,
        last_heartbeat: 1,
    }
}

#[test]
fn a_store_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("c.sqlite");
    SqliteStore::open(&p).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    match SqliteStore::open(&p) {
        Err(ClaimError::InvalidArgument(a)) => assert!(a.field == "store" && a.message.contains("0644"), "{a:?}"),
        other => panic!("{other:?}"),
    }
    // A symlinked directory above the file is fine (a symlinked home is common).
    let link = d.path().join("dirlink");
    std::os::unix::fs::symlink(d.path(), &link).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    SqliteStore::open(&link.join("c.sqlite")).unwrap();
}

#[test]
fn the_file_is_private_and_symlinks_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("c.sqlite");
    SqliteStore::open(&p).unwrap();
    assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
    let link = d.path().join("link.sqlite");
    std::os::unix::fs::symlink(&p, &link).unwrap();
    assert!(matches!(SqliteStore::open(&link), Err(ClaimError::InvalidArgument(_))));
}

#[test]
fn a_failed_statement_keeps_the_sqlite_error_as_its_cause() {
    use std::error::Error as _;
    let d = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&d.path().join("c.sqlite")).unwrap();
    let e = db_err(s.lock().execute("SELECT * FROM no_such_table", []).unwrap_err());
    assert_eq!(e.code(), crate::error::ErrorCode::Internal);
    let cause = e.source().and_then(|c| c.downcast_ref::<rusqlite::Error>()).expect("the rusqlite error is kept");
    // The message is the SQLite error's own text, as before the cause was kept.
    assert_eq!(e.to_string(), format!("coordinator store failed: {cause}"));
    assert!(e.to_string().contains("no such table: no_such_table"), "{e}");
}

#[test]
fn a_newer_schema_is_refused_and_reopening_is_idempotent() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("c.sqlite");
    let s = SqliteStore::open(&p).unwrap();
    let change = Change { upsert: vec![row("a")], ..Change::default() };
    s.commit(ProjectWrite { project: "p", expected_version: 0, change: &change, audit: Some(&audit("p")) }).unwrap();
    drop(s);
    let s = SqliteStore::open(&p).unwrap();
    assert_eq!(s.snapshot("p").unwrap().controllers.len(), 1, "reopening keeps the data");
    s.lock().pragma_update(None, "user_version", 99).unwrap();
    drop(s);
    match SqliteStore::open(&p) {
        Err(ClaimError::Store(e)) => assert!(e.message().contains("schema 99"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn commit_is_a_compare_and_set_on_the_version() {
    let d = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&d.path().join("c.sqlite")).unwrap();
    let slot = MasterSlot { master: Some(MasterRef { identity: "id-a".into(), session_id: "a".into() }), epoch: 1 };
    let c = Change { upsert: vec![row("a")], slot: Some(slot.clone()), ..Change::default() };
    let a = audit("p");
    let write = ProjectWrite { project: "p", expected_version: 0, change: &c, audit: Some(&a) };
    assert_eq!(s.commit(write).unwrap(), Commit::Done(1));
    assert_eq!(s.commit(write).unwrap(), Commit::Conflict);
    let snap = s.snapshot("p").unwrap();
    assert_eq!((snap.version, snap.slot), (1, slot));
    // An empty change audits without bumping the version.
    let empty = Change::default();
    assert_eq!(s.commit(ProjectWrite { expected_version: 1, change: &empty, ..write }).unwrap(), Commit::Done(1));
    assert_eq!(s.audit_log(Some("p"), 10).unwrap().len(), 2, "the conflicting commit wrote no audit row");
    assert_eq!(s.snapshot("other").unwrap().version, 0, "projects are separate");
}

/// A store with only snapshot + commit, so `transact` is the trait's CAS loop (the one
/// stores without a held write lock use). The first commit meets a concurrent writer.
struct CasOnly {
    inner: SqliteStore,
    interfere: AtomicUsize,
}

/// Work claims are not what this double is about: straight through.
impl WorkStore for CasOnly {
    fn insert_channel(&self, c: &Channel, a: &AuditEntry) -> Result<(), ClaimError> {
        self.inner.insert_channel(c, a)
    }
    fn channel(&self, p: &str, c: &str) -> Result<Option<Channel>, ClaimError> {
        self.inner.channel(p, c)
    }
    fn work_claim(&self, p: &str, c: &str, t: &str) -> Result<Option<WorkClaim>, ClaimError> {
        self.inner.work_claim(p, c, t)
    }
    fn work_claims(&self, p: &str, c: &str) -> Result<Vec<WorkClaim>, ClaimError> {
        self.inner.work_claims(p, c)
    }
    fn work_claim_history(&self, p: &str, c: &str, t: &str) -> Result<Vec<WorkClaimStep>, ClaimError> {
        self.inner.work_claim_history(p, c, t)
    }
    fn write_work_claims(&self, w: &[WorkClaimWrite]) -> Result<Vec<Commit>, ClaimError> {
        self.inner.write_work_claims(w)
    }
    fn due_claims(&self, p: &str, at: Millis, l: usize) -> Result<Vec<WorkClaim>, ClaimError> {
        self.inner.due_claims(p, at, l)
    }
    fn projects_with_due(&self, at: Millis) -> Result<Vec<String>, ClaimError> {
        self.inner.projects_with_due(at)
    }
    fn focus_leases(&self, p: &str) -> Result<Vec<FocusLease>, ClaimError> {
        self.inner.focus_leases(p)
    }
    fn put_focus(&self, w: crate::claim::stores::FocusWrite<'_>) -> Result<Commit, ClaimError> {
        self.inner.put_focus(w)
    }
}

impl crate::claim::stores::PauseStore for CasOnly {
    fn pause(&self, p: &str) -> Result<Option<crate::claim::work_claims::ProjectPause>, ClaimError> {
        self.inner.pause(p)
    }
    fn pauses(&self) -> Result<Vec<crate::claim::work_claims::ProjectPause>, ClaimError> {
        self.inner.pauses()
    }
    fn put_pause(
        &self,
        p: &crate::claim::work_claims::ProjectPause,
        v: u64,
        a: &AuditEntry,
    ) -> Result<Commit, ClaimError> {
        self.inner.put_pause(p, v, a)
    }
}

impl Store for CasOnly {
    fn snapshot(&self, project: &str) -> Result<Snapshot, ClaimError> {
        self.inner.snapshot(project)
    }
    fn commit(&self, write: ProjectWrite<'_>) -> Result<Commit, ClaimError> {
        if self.interfere.fetch_add(1, Ordering::SeqCst) == 0 {
            let other = Change { upsert: vec![row("intruder")], ..Change::default() };
            assert_eq!(
                self.inner.commit(ProjectWrite { change: &other, ..write })?,
                Commit::Done(write.expected_version + 1)
            );
        }
        self.inner.commit(write)
    }
    fn append_audit(&self, e: &AuditEntry) -> Result<(), ClaimError> {
        self.inner.append_audit(e)
    }
    fn recall_request(&self, verb: &str, key: &str, now: Millis) -> Result<Option<KeptAnswer>, ClaimError> {
        self.inner.recall_request(verb, key, now)
    }
    fn audit_log(&self, p: Option<&str>, l: usize) -> Result<Vec<AuditEntry>, ClaimError> {
        self.inner.audit_log(p, l)
    }
    fn audit_page(&self, p: &crate::claim::stores::AuditPage<'_>) -> Result<Vec<(u64, AuditEntry)>, ClaimError> {
        self.inner.audit_page(p)
    }
    fn audit_cursor(&self, c: u64) -> Result<(bool, Option<u64>), ClaimError> {
        self.inner.audit_cursor(c)
    }
    fn projects_without_master(&self) -> Result<u64, ClaimError> {
        self.inner.projects_without_master()
    }
    fn operator(&self, id: &str) -> Result<Option<OperatorRecord>, ClaimError> {
        self.inner.operator(id)
    }
    fn insert_operator(&self, r: &OperatorRecord, a: &AuditEntry) -> Result<(), ClaimError> {
        self.inner.insert_operator(r, a)
    }
    fn record_failure(&self, id: &str, at: Millis) -> Result<u32, ClaimError> {
        self.inner.record_failure(id, at)
    }
    fn attempt_succeeded(&self, id: &str) -> Result<(), ClaimError> {
        self.inner.attempt_succeeded(id)
    }
    fn inbox(&self, p: &str, i: &str, after: u64, l: usize) -> Result<Vec<Event>, ClaimError> {
        self.inner.inbox(p, i, after, l)
    }
    fn prune(&self, c: &Cutoffs) -> Result<Pruned, ClaimError> {
        self.inner.prune(c)
    }
    fn sizes(&self) -> Result<Sizes, ClaimError> {
        self.inner.sizes()
    }
}

#[test]
fn the_default_transact_redecides_after_a_conflict() {
    let d = tempfile::tempdir().unwrap();
    let s = CasOnly { inner: SqliteStore::open(&d.path().join("c.sqlite")).unwrap(), interfere: AtomicUsize::new(0) };
    let mut seen = Vec::new();
    let v = s
        .transact("p", &mut |snap| {
            seen.push(snap.controllers.len());
            Ok((
                Change { upsert: vec![row(&format!("n{}", snap.controllers.len()))], ..Change::default() },
                Some(audit("p")),
            ))
        })
        .unwrap();
    assert_eq!(seen, [0, 1], "decided again on the snapshot that includes the intruder");
    assert_eq!(v, 2);
    let ids: Vec<String> = s.snapshot("p").unwrap().controllers.into_iter().map(|c| c.session_id).collect();
    assert_eq!(ids, ["intruder", "n1"]);
}

/// The plan SQLite makes for `sql` with `args`: one `detail` line per step.
fn plan(conn: &Connection, sql: &str, args: &[rusqlite::types::Value]) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    stmt.query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Issue 39 point 6: every read of the audit log (`audit`, `audit export`, `master history`,
/// the cursor check) walks an index in the order it answers and stops at its `LIMIT`: no
/// step scans the table (or a whole index), none sorts. With `?1 IS NULL OR project = ?1`
/// the plan was `SCAN audit`, and a history read examined the whole log. `/metrics`'s
/// counts are the one read that must visit every row; they run on the read connection, at
/// most once per `STORE_SERIES_MAX_AGE` (see `server::metrics`).
#[test]
fn the_audit_reads_walk_an_index() {
    use rusqlite::types::Value;
    let d = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&d.path().join("c.sqlite")).unwrap();
    for i in 0..200 {
        let mut a = audit(if i % 2 == 0 { "p" } else { "q" });
        if i % 10 == 0 {
            a.detail = serde_json::json!({crate::claim::model::MASTER_CHANGE: {"from": null, "to": null}});
        }
        s.append_audit(&a).unwrap();
    }
    let conn = s.read();
    // (what, (statement, parameters), the plan step expected)
    type Read = (String, (String, Vec<Value>), &'static str);
    let mut reads: Vec<Read> = vec![
        ("audit --project".into(), audit_log_query(Some("p"), 50), "USING INDEX audit_project (project=?)"),
        ("audit".into(), audit_log_query(None, 50), "USING INTEGER PRIMARY KEY (rowid<?)"),
        (
            "audit cursor".into(),
            (AUDIT_CURSOR_QUERY.into(), vec![Value::Integer(3)]),
            "USING INTEGER PRIMARY KEY (rowid=?)",
        ),
    ];
    for newest_first in [true, false] {
        let page = |project, master_changes| AuditPage {
            project,
            since: 5,
            after: 7,
            limit: 100,
            master_changes,
            newest_first,
        };
        reads.push((
            format!("master history (newest first: {newest_first})"),
            audit_page_query(&page(Some("p"), true)).unwrap(),
            "USING INDEX audit_master_changes (project=? AND id>?)",
        ));
        reads.push((
            format!("audit export --project (newest first: {newest_first})"),
            audit_page_query(&page(Some("p"), false)).unwrap(),
            "USING INDEX audit_project (project=? AND id>?)",
        ));
        reads.push((
            format!("audit export (newest first: {newest_first})"),
            audit_page_query(&page(None, false)).unwrap(),
            "USING INTEGER PRIMARY KEY (rowid>?)",
        ));
        assert_eq!(
            audit_page_query(&page(None, true)).unwrap_err().code(),
            crate::error::ErrorCode::InvalidArgument,
            "no index serves the changes of master across projects: refused, never scanned"
        );
    }
    for (what, (sql, args), expected) in &reads {
        let steps = plan(&conn, sql, args);
        assert!(
            !steps.iter().any(|l| l.contains("TEMP B-TREE") || (l.starts_with("SCAN") && l != "SCAN CONSTANT ROW")),
            "{what}: a scan or a sort in {steps:?}"
        );
        assert!(steps.iter().any(|l| l.starts_with("SEARCH audit") && l.contains(expected)), "{what}: {steps:?}");
    }
    // The partial index is used only while the query says exactly what its predicate says.
    assert!(MASTER_CHANGES_ONLY.contains(&format!("'$.{}'", crate::claim::model::MASTER_CHANGE)));
    assert!(MIGRATIONS.iter().any(|m| m.contains(MASTER_CHANGES_ONLY)));
    // And the reads answer what they did before the split.
    drop(conn);
    let history = s
        .audit_page(&AuditPage {
            project: Some("p"),
            since: 0,
            after: 0,
            limit: 100,
            master_changes: true,
            newest_first: true,
        })
        .unwrap();
    assert_eq!(history.len(), 20, "every 10th row is a change of master, all of them in p");
    assert!(history.windows(2).all(|w| w[0].0 > w[1].0), "newest first");
    assert_eq!(s.audit_log(None, 1000).unwrap().len(), 200);
    assert_eq!(s.audit_log(Some("q"), 1000).unwrap().len(), 100);
    let export = s
        .audit_page(&AuditPage {
            project: None,
            since: 0,
            after: 150,
            limit: 1000,
            master_changes: false,
            newest_first: false,
        })
        .unwrap();
    assert_eq!(export.iter().map(|r| r.0).collect::<Vec<_>>(), (151..=200).collect::<Vec<u64>>());
}

/// Issue 39 point 6: a read of the audit log, and a reader's proof, never wait for the
/// writer. The writer connection's mutex is held, with a write transaction open on it (an
/// uncommitted change of master), while another thread reads the history, proves a
/// session and reads the audit log: the reads complete before the writer lets go (the
/// receive below would otherwise never return), and see the last committed state.
#[test]
fn an_audit_read_never_waits_for_the_writer() {
    use crate::claim::engine::{Coordinator, DEFAULT_FRESHNESS};
    use crate::claim::masters::ControllerKey;
    use crate::claim::masters::RegisterRequest;
    use std::sync::Arc;
    let d = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&d.path().join("c.sqlite")).unwrap());
    let clock = Arc::new(crate::claim::clock::ManualClock::at(1_700_000_000_000));
    let c = Coordinator::new(store.clone(), clock, DEFAULT_FRESHNESS).with_open_registration(true);
    let key = ControllerKey { identity: "alice".into(), surface: "cli".into(), machine_id: "m".into() };
    let alice = c.register("p", &RegisterRequest::of(&key, None, None)).unwrap();

    let writer = store.lock();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    let mut moved = audit("p");
    moved.epoch = Some(2);
    moved.detail = serde_json::json!({crate::claim::model::MASTER_CHANGE: {"from": null, "to": null}});
    insert_audit(&writer, &moved).unwrap();

    let (tx, rx) = std::sync::mpsc::channel();
    let token = alice.token.clone();
    let reader = std::thread::spawn(move || {
        let got = (
            c.master_history("p", 10).map(|h| h.len()),
            c.reads_history_in_full("p", Some(&token)),
            c.audit_log(Some("p"), 10).map(|r| r.len()),
        );
        tx.send(got).unwrap();
        c
    });
    // Not a timing assertion: a read behind the writer's mutex never returns while it is
    // held, and the bound only turns that hang into a failure.
    let (history, in_full, rows) =
        rx.recv_timeout(std::time::Duration::from_secs(300)).expect("the reads waited for the writer");
    assert_eq!(history.unwrap(), 1, "the registration; the open transaction's change is not committed");
    assert!(in_full.unwrap(), "alice's token proves a part in p, read beside the writer");
    assert_eq!(rows.unwrap(), 1);
    writer.execute_batch("COMMIT").unwrap();
    drop(writer);
    let c = reader.join().unwrap();
    assert_eq!(c.master_history("p", 10).unwrap().len(), 2, "committed: now read");
}
