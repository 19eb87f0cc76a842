//! The embedded store's unit tests.

use super::*;
use crate::claim::model::{Change, Controller, MasterRef};
use crate::claim::stores::{ClaimWrite, WorkStore};
use crate::claim::work_claims::{Channel, ClaimRow, ClaimStep, FocusLease};
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
        Err(ClaimError::InvalidArgument(m)) => assert!(m.contains("0644"), "{m}"),
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
        Err(ClaimError::Store(m)) => assert!(m.contains("schema 99"), "{m}"),
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
    fn claim(&self, p: &str, c: &str, t: &str) -> Result<Option<ClaimRow>, ClaimError> {
        self.inner.claim(p, c, t)
    }
    fn claims(&self, p: &str, c: &str) -> Result<Vec<ClaimRow>, ClaimError> {
        self.inner.claims(p, c)
    }
    fn claim_history(&self, p: &str, c: &str, t: &str) -> Result<Vec<ClaimStep>, ClaimError> {
        self.inner.claim_history(p, c, t)
    }
    fn write_claims(&self, w: &[ClaimWrite]) -> Result<Vec<Commit>, ClaimError> {
        self.inner.write_claims(w)
    }
    fn due_claims(&self, p: &str, at: Millis, l: usize) -> Result<Vec<ClaimRow>, ClaimError> {
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
