//! The `WorkStore` contract (seed 002's storage) on both stores, below the engine: per-row
//! compare-and-set (a conflict writes nothing: no row, no history step, no doorbell, no due
//! index change), batches where a conflict stops only itself, the due index, history order,
//! channels, focus leases and doorbells in `Store::inbox`. On Redis + Postgres also: the
//! queued Postgres writes (audit, rows, history) and the cold restore (versions moved on by
//! `EPOCH_RESTORE_GAP`, history and due index intact).
//!
//! Redis + Postgres run when the services answer (see `services.rs`: one namespace per
//! test, a loud skip otherwise, a failure under `WRITERCTL_REQUIRE_SERVICES=1`).

use std::sync::Arc;

use serde_json::json;

use crate::services::{Ns, Proxy, counts, postgres_addr};
use writerctl::claim::error::ClaimError;
use writerctl::claim::model::{AuditEntry, Millis, NewEvent};
use writerctl::claim::stores::redis_pg::{EPOCH_RESTORE_GAP, RedisPgStore};
use writerctl::claim::stores::sqlite::SqliteStore;
use writerctl::claim::stores::{Commit, FocusWrite, Store, WorkClaimWrite, WorkStore};
use writerctl::claim::work_claims::{
    self as work, Channel, FocusLease, TakeRequest, TaskAddress, TouchRequest, WorkClaim, WorkClaimStatus,
    WorkClaimStep,
};

const T0: Millis = 1_800_000_000_000;
const M: Millis = 60_000;
const P: &str = "fleet";
const CH: &str = "integration";
const G: u64 = EPOCH_RESTORE_GAP;

/// One store under test, and what keeps it alive.
pub(crate) struct Subject {
    pub(crate) name: &'static str,
    pub(crate) store: Arc<dyn Store>,
    _dir: Option<tempfile::TempDir>,
}

/// The embedded store, and Redis + Postgres when the services answer.
pub(crate) fn subjects(test: &str) -> (Vec<Subject>, Option<(Ns, Arc<RedisPgStore>)>) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Arc::new(SqliteStore::open(&dir.path().join("coord.sqlite")).unwrap());
    let mut out = vec![Subject { name: "sqlite", store: sqlite, _dir: Some(dir) }];
    let services = Ns::new(test).map(|ns| {
        let store = ns.store();
        out.push(Subject { name: "redis_pg", store: store.clone(), _dir: None });
        (ns, store)
    });
    (out, services)
}

/// A focus write without a seat proof (the store tests exercise the write itself).
fn unproven<'a>(lease: &'a FocusLease, replaces: Option<Millis>, audit: &'a AuditEntry) -> FocusWrite<'a> {
    FocusWrite { lease, replaces, audit, proof: None }
}

fn audit(project: &str, verb: &str, target: &str, at: Millis) -> AuditEntry {
    AuditEntry {
        at,
        project: project.into(),
        verb: verb.into(),
        actor: "test".into(),
        target: Some(target.into()),
        result: "ok".into(),
        epoch: None,
        detail: json!({}),
        request: None,
        reason: None,
    }
}

fn channel(project: &str) -> Channel {
    work::new_channel(project, CH, "steward", Some(30), Some(1), T0).unwrap()
}

/// A write of `row` decided from `expected`, with its step and audit row.
pub(crate) fn write(expected: u64, row: WorkClaim, action: &str, events: Vec<NewEvent>) -> WorkClaimWrite {
    let at = row.updated_at;
    WorkClaimWrite {
        expected_version: expected,
        action: action.into(),
        audit: audit(&row.project, &format!("claim.{action}"), &row.target(), at),
        events,
        row,
        proof: None,
    }
}

/// `seat` takes `task` (after `existing`, if released) with an optional TTL, at `now`.
fn taken(
    project: &str,
    existing: Option<&WorkClaim>,
    task: &str,
    seat: &str,
    ttl: Option<u32>,
    now: Millis,
) -> WorkClaim {
    let req = TakeRequest {
        seat: seat.into(),
        ttl_minutes: ttl,
        next_step: Some("merge the drop-ins".into()),
        ..Default::default()
    };
    work::take(existing, &channel(project), &TaskAddress::new(project, CH, task), &req, now).unwrap().claim
}

/// The owner's touch of `row` at `now`.
fn touched(row: &WorkClaim, now: Millis) -> WorkClaim {
    let req =
        TouchRequest { seat: row.owner.clone().unwrap(), expect_version: Some(row.version), ..Default::default() };
    work::touch(row, &channel(&row.project), &req, now).unwrap().claim
}

/// The owner's release of `row` at `now`.
fn released(row: &WorkClaim, now: Millis) -> WorkClaim {
    let req = work::ReleaseRequest {
        seat: row.owner.clone().unwrap(),
        expect_version: Some(row.version),
        ..Default::default()
    };
    work::release(row, &req, now).unwrap()
}

fn doorbell(to: &str, row: &WorkClaim) -> NewEvent {
    NewEvent {
        recipient: to.into(),
        recipient_session: None,
        kind: work::CLAIM_RELEASED.into(),
        payload: json!({"task": row.task, "version": row.version}),
    }
}

/// Writes one claim and expects it to go in.
fn put(store: &dyn Store, w: WorkClaimWrite) -> WorkClaim {
    let row = w.row.clone();
    assert_eq!(store.write_work_claims(&[w]).unwrap(), [Commit::Done(row.version)]);
    row
}

fn tasks(rows: &[WorkClaim]) -> Vec<&str> {
    rows.iter().map(|r| r.task.as_str()).collect()
}

fn actions(steps: &[WorkClaimStep]) -> Vec<(&str, u64)> {
    steps.iter().map(|s| (s.action.as_str(), s.claim.version)).collect()
}

// ---------------------------------------------------------------------------------------
// the contract, on both stores
// ---------------------------------------------------------------------------------------

#[test]
fn creating_a_claim_twice_elects_one_owner() {
    let (subjects, _services) = subjects("creating_a_claim_twice_elects_one_owner");
    for s in &subjects {
        let st = &*s.store;
        let a = taken(P, None, "t1", "alice", None, T0);
        let b = taken(P, None, "t1", "bob", None, T0);
        let out = st.write_work_claims(&[write(0, a.clone(), "take", vec![]), write(0, b, "take", vec![])]).unwrap();
        assert_eq!(out, [Commit::Done(1), Commit::Conflict], "{}", s.name);
        assert_eq!(st.work_claim(P, CH, "t1").unwrap(), Some(a.clone()), "{}", s.name);
        assert_eq!(actions(&st.work_claim_history(P, CH, "t1").unwrap()), [("take", 1)], "{}", s.name);
        assert_eq!(st.work_claim(P, CH, "nope").unwrap(), None, "{}", s.name);
        assert_eq!(st.work_claim("other", CH, "t1").unwrap(), None, "{}: rows are per project", s.name);
        assert!(st.work_claim_history(P, CH, "nope").unwrap().is_empty(), "{}", s.name);
    }
}

#[test]
fn a_stale_write_conflicts_and_writes_nothing() {
    let (subjects, _services) = subjects("a_stale_write_conflicts_and_writes_nothing");
    for s in &subjects {
        let st = &*s.store;
        let v1 = put(st, write(0, taken(P, None, "t1", "alice", Some(10), T0), "take", vec![]));
        let v2 = put(st, write(1, touched(&v1, T0 + M), "touch", vec![]));
        assert_eq!(v2.due_at(), Some(T0 + 11 * M));
        // Decided from v1: a release (leaves the due index, rings a doorbell) and a touch
        // (moves the due time).
        let stale_release = write(1, released(&v1, T0 + 2 * M), "release", vec![doorbell("steward", &v1)]);
        let stale_touch = write(1, touched(&v1, T0 + 3 * M), "touch", vec![doorbell("bob", &v1)]);
        assert_eq!(st.write_work_claims(&[stale_release, stale_touch]).unwrap(), [Commit::Conflict; 2], "{}", s.name);
        assert_eq!(st.work_claim(P, CH, "t1").unwrap(), Some(v2.clone()), "{}: the row", s.name);
        assert_eq!(actions(&st.work_claim_history(P, CH, "t1").unwrap()), [("take", 1), ("touch", 2)], "{}", s.name);
        assert!(st.inbox(P, "steward", 0, 10).unwrap().is_empty(), "{}: no doorbell", s.name);
        assert!(st.inbox(P, "bob", 0, 10).unwrap().is_empty(), "{}: no doorbell", s.name);
        assert_eq!(
            st.due_claims(P, T0 + 11 * M, 10).unwrap(),
            std::slice::from_ref(&v2),
            "{}: still due at v2's time",
            s.name
        );
        assert!(st.due_claims(P, T0 + 11 * M - 1, 10).unwrap().is_empty(), "{}", s.name);
        // An expected version from the future conflicts too.
        assert_eq!(
            st.write_work_claims(&[write(7, touched(&v2, T0 + 4 * M), "touch", vec![])]).unwrap(),
            [Commit::Conflict]
        );
        // The right version goes in.
        let v3 = put(st, write(2, released(&v2, T0 + 5 * M), "release", vec![doorbell("steward", &v2)]));
        assert_eq!(v3.version, 3);
        assert_eq!(st.inbox(P, "steward", 0, 10).unwrap().len(), 1, "{}", s.name);
    }
}

#[test]
fn a_conflict_in_a_batch_stops_only_itself() {
    let (subjects, _services) = subjects("a_conflict_in_a_batch_stops_only_itself");
    for s in &subjects {
        let st = &*s.store;
        let rows: Vec<WorkClaim> = ["t1", "t2", "t3"]
            .iter()
            .map(|t| put(st, write(0, taken(P, None, t, "alice", Some(5), T0), "take", vec![])))
            .collect();
        let as_of = T0 + 5 * M;
        let expire = |r: &WorkClaim| work::expire(r, None, as_of).unwrap().0;
        let batch = [
            write(1, expire(&rows[0]), "ttl_release", vec![doorbell("steward", &rows[0])]),
            write(7, expire(&rows[1]), "ttl_release", vec![doorbell("steward", &rows[1])]),
            write(1, expire(&rows[2]), "ttl_release", vec![doorbell("steward", &rows[2])]),
        ];
        assert_eq!(
            st.write_work_claims(&batch).unwrap(),
            [Commit::Done(2), Commit::Conflict, Commit::Done(2)],
            "{}",
            s.name
        );
        assert_eq!(st.work_claim(P, CH, "t1").unwrap().unwrap().status, WorkClaimStatus::Released, "{}", s.name);
        assert_eq!(st.work_claim(P, CH, "t2").unwrap(), Some(rows[1].clone()), "{}", s.name);
        assert_eq!(st.work_claim(P, CH, "t3").unwrap().unwrap().status, WorkClaimStatus::Released, "{}", s.name);
        assert_eq!(tasks(&st.due_claims(P, as_of, 10).unwrap()), ["t2"], "{}", s.name);
        let bells: Vec<String> =
            st.inbox(P, "steward", 0, 10).unwrap().into_iter().map(|e| e.payload["task"].to_string()).collect();
        assert_eq!(bells, ["\"t1\"", "\"t3\""], "{}", s.name);
        assert_eq!(tasks(&st.work_claims(P, CH).unwrap()), ["t1", "t2", "t3"], "{}: ordered by task", s.name);
        assert!(st.write_work_claims(&[]).unwrap().is_empty());
    }
}

#[test]
fn due_claims_are_earliest_first_and_leave_the_index_when_not_due() {
    let (subjects, _services) = subjects("due_claims_are_earliest_first_and_leave_the_index_when_not_due");
    for s in &subjects {
        let st = &*s.store;
        // Due at T0 + 10, + 6, + 20 minutes; one without a TTL is never due.
        let a = put(st, write(0, taken(P, None, "a", "alice", Some(10), T0), "take", vec![]));
        let b = put(st, write(0, taken(P, None, "b", "bob", Some(5), T0 + M), "take", vec![]));
        let c = put(st, write(0, taken(P, None, "c", "carol", Some(20), T0), "take", vec![]));
        put(st, write(0, taken(P, None, "d", "dave", None, T0), "take", vec![]));
        // Another project, due later.
        let o = put(st, write(0, taken("other", None, "x", "alice", Some(30), T0), "take", vec![]));

        assert!(st.due_claims(P, T0 + 6 * M - 1, 10).unwrap().is_empty(), "{}", s.name);
        assert_eq!(
            st.due_claims(P, T0 + 6 * M, 10).unwrap(),
            std::slice::from_ref(&b),
            "{}: due exactly at as_of",
            s.name
        );
        assert_eq!(tasks(&st.due_claims(P, T0 + 60 * M, 10).unwrap()), ["b", "a", "c"], "{}", s.name);
        assert_eq!(tasks(&st.due_claims(P, T0 + 60 * M, 2).unwrap()), ["b", "a"], "{}: the limit", s.name);
        assert!(st.due_claims(P, T0 + 60 * M, 0).unwrap().is_empty(), "{}", s.name);
        assert!(st.due_claims("nobody", T0 + 60 * M, 10).unwrap().is_empty(), "{}", s.name);

        assert!(st.projects_with_due(T0 + 6 * M - 1).unwrap().is_empty(), "{}", s.name);
        assert_eq!(st.projects_with_due(T0 + 6 * M).unwrap(), [P], "{}", s.name);
        assert_eq!(st.projects_with_due(T0 + 30 * M).unwrap(), ["fleet", "other"], "{}", s.name);

        // A touch moves a claim's due time; a release takes it out of the index.
        let a2 = put(st, write(1, touched(&a, T0 + 5 * M), "touch", vec![]));
        assert_eq!(tasks(&st.due_claims(P, T0 + 60 * M, 10).unwrap()), ["b", "a", "c"], "{}", s.name);
        assert_eq!(tasks(&st.due_claims(P, T0 + 14 * M, 10).unwrap()), ["b"], "{}: a moved to +15", s.name);
        put(st, write(1, released(&b, T0 + 7 * M), "release", vec![]));
        put(st, write(2, released(&a2, T0 + 7 * M), "release", vec![]));
        assert_eq!(st.due_claims(P, T0 + 60 * M, 10).unwrap(), std::slice::from_ref(&c), "{}", s.name);
        put(st, write(1, released(&c, T0 + 7 * M), "release", vec![]));
        assert!(st.due_claims(P, T0 + 60 * M, 10).unwrap().is_empty(), "{}", s.name);
        assert_eq!(st.projects_with_due(T0 + 60 * M).unwrap(), ["other"], "{}", s.name);
        // Taken again: back in the index.
        let rel = st.work_claim(P, CH, "b").unwrap().unwrap();
        let b2 = put(st, write(2, taken(P, Some(&rel), "b", "erin", Some(5), T0 + 8 * M), "take", vec![]));
        assert_eq!(st.due_claims(P, T0 + 60 * M, 10).unwrap(), [b2], "{}", s.name);
        assert_eq!(st.projects_with_due(T0 + 60 * M).unwrap(), ["fleet", "other"], "{}", s.name);
        assert_eq!(st.due_claims("other", T0 + 60 * M, 10).unwrap(), [o], "{}", s.name);
    }
}

#[test]
fn history_is_oldest_first_and_kept_across_owners() {
    let (subjects, _services) = subjects("history_is_oldest_first_and_kept_across_owners");
    for s in &subjects {
        let st = &*s.store;
        let v1 = put(st, write(0, taken(P, None, "t", "alice", Some(5), T0), "take", vec![]));
        let v2 = put(st, write(1, touched(&v1, T0 + M), "touch", vec![]));
        let v3 = put(st, write(2, released(&v2, T0 + 2 * M), "release", vec![]));
        let v4 = put(st, write(3, taken(P, Some(&v3), "t", "bob", None, T0 + 3 * M), "take", vec![]));
        let steps = st.work_claim_history(P, CH, "t").unwrap();
        assert_eq!(actions(&steps), [("take", 1), ("touch", 2), ("release", 3), ("take", 4)], "{}", s.name);
        assert_eq!(steps.iter().map(|s| s.claim.clone()).collect::<Vec<_>>(), [v1, v2, v3, v4.clone()]);
        assert_eq!(steps[3].at, T0 + 3 * M);
        assert_eq!(st.work_claims(P, CH).unwrap(), [v4], "{}", s.name);
    }
}

#[test]
fn channels_are_never_overwritten() {
    let (subjects, _services) = subjects("channels_are_never_overwritten");
    for s in &subjects {
        let st = &*s.store;
        let ch = channel(P);
        st.insert_channel(&ch, &audit(P, "channel.create", CH, T0)).unwrap();
        let other = Channel { steward: "mallory".into(), ..ch.clone() };
        assert_eq!(
            st.insert_channel(&other, &audit(P, "channel.create", CH, T0)).unwrap_err(),
            ClaimError::ChannelExists(CH.into()),
            "{}",
            s.name
        );
        assert_eq!(st.channel(P, CH).unwrap(), Some(ch.clone()), "{}", s.name);
        assert_eq!(st.channel(P, "nope").unwrap(), None, "{}", s.name);
        assert_eq!(st.channel("other", CH).unwrap(), None, "{}: channels are per project", s.name);
        st.insert_channel(&channel("other"), &audit("other", "channel.create", CH, T0)).unwrap();
    }
}

#[test]
fn a_focus_lease_is_put_and_replaced() {
    let (subjects, _services) = subjects("a_focus_lease_is_put_and_replaced");
    for s in &subjects {
        let st = &*s.store;
        assert!(st.focus_leases(P).unwrap().is_empty());
        let bob = work::focus_lease(P, "bob", 30, T0).unwrap().lease;
        let alice = work::focus_lease(P, "alice", 60, T0).unwrap().lease;
        st.put_focus(unproven(&bob, None, &audit(P, "focus.start", "bob", T0))).unwrap();
        st.put_focus(unproven(&alice, None, &audit(P, "focus.start", "alice", T0))).unwrap();
        assert_eq!(st.focus_leases(P).unwrap(), [alice.clone(), bob.clone()], "{}: ordered by seat", s.name);
        let ended = FocusLease { ended_at: Some(T0 + M), ..alice };
        st.put_focus(unproven(&ended, None, &audit(P, "focus.end", "alice", T0 + M))).unwrap();
        assert_eq!(st.focus_leases(P).unwrap(), [ended, bob], "{}: replaced", s.name);
        assert!(st.focus_leases("other").unwrap().is_empty(), "{}", s.name);
    }
}

#[test]
fn ending_a_focus_lease_never_overwrites_a_newer_one() {
    let (subjects, _services) = subjects("ending_a_focus_lease_never_overwrites_a_newer_one");
    for s in &subjects {
        let st = &*s.store;
        let first = work::focus_lease(P, "alice", 30, T0).unwrap().lease;
        st.put_focus(unproven(&first, None, &audit(P, "focus.start", "alice", T0))).unwrap();
        // A `focus start` lands between `focus end`'s read and its write.
        let second = work::focus_lease(P, "alice", 60, T0 + M).unwrap().lease;
        st.put_focus(unproven(&second, None, &audit(P, "focus.start", "alice", T0 + M))).unwrap();
        let ended = FocusLease { ended_at: Some(T0 + 2 * M), ..first.clone() };
        let got = st.put_focus(unproven(&ended, Some(first.started_at), &audit(P, "focus.end", "alice", T0 + 2 * M)));
        assert_eq!(got.unwrap(), Commit::Conflict, "{}", s.name);
        assert_eq!(st.focus_leases(P).unwrap(), std::slice::from_ref(&second), "{}: the newer lease stands", s.name);
        let ended = FocusLease { ended_at: Some(T0 + 2 * M), ..second.clone() };
        let got = st.put_focus(unproven(&ended, Some(second.started_at), &audit(P, "focus.end", "alice", T0 + 2 * M)));
        assert_eq!(got.unwrap(), Commit::Done(0), "{}", s.name);
        assert_eq!(st.focus_leases(P).unwrap(), [ended], "{}", s.name);
        // Nothing to end: a conflict, not a row out of nowhere.
        let ghost = work::focus_lease(P, "ghost", 5, T0).unwrap().lease;
        let got = st.put_focus(unproven(&ghost, Some(T0), &audit(P, "focus.end", "ghost", T0)));
        assert_eq!(got.unwrap(), Commit::Conflict, "{}", s.name);
        assert_eq!(st.focus_leases(P).unwrap().len(), 1, "{}", s.name);
    }
}

#[test]
fn doorbells_land_in_the_inbox_in_cursor_order() {
    let (subjects, _services) = subjects("doorbells_land_in_the_inbox_in_cursor_order");
    for s in &subjects {
        let st = &*s.store;
        let a = put(st, write(0, taken(P, None, "a", "alice", Some(5), T0), "take", vec![]));
        let b = put(st, write(0, taken(P, None, "b", "alice", Some(5), T0), "take", vec![]));
        let as_of = T0 + 5 * M;
        let ring = |r: &WorkClaim| vec![doorbell("alice", r), doorbell("steward", r)];
        let out = st
            .write_work_claims(&[
                write(1, work::expire(&a, None, as_of).unwrap().0, "ttl_release", ring(&a)),
                write(1, work::expire(&b, None, as_of).unwrap().0, "ttl_release", ring(&b)),
            ])
            .unwrap();
        assert_eq!(out, [Commit::Done(2); 2], "{}", s.name);
        let alice = st.inbox(P, "alice", 0, 10).unwrap();
        let steward = st.inbox(P, "steward", 0, 10).unwrap();
        assert_eq!(alice.iter().map(|e| e.payload["task"].clone()).collect::<Vec<_>>(), [json!("a"), json!("b")]);
        assert_eq!(steward.len(), 2, "{}", s.name);
        for e in alice.iter().chain(&steward) {
            assert_eq!((e.kind.as_str(), e.at, e.recipient_session.as_deref()), (work::CLAIM_RELEASED, as_of, None));
        }
        // One cursor sequence across inboxes, in write order.
        let mut cursors: Vec<u64> = alice.iter().chain(&steward).map(|e| e.cursor).collect();
        assert!(alice[0].cursor < steward[0].cursor && steward[0].cursor < alice[1].cursor, "{}", s.name);
        cursors.sort();
        cursors.dedup();
        assert_eq!(cursors.len(), 4, "{}", s.name);
        assert_eq!(st.inbox(P, "alice", alice[0].cursor, 10).unwrap(), alice[1..], "{}", s.name);
        assert!(st.inbox("other", "alice", 0, 10).unwrap().is_empty(), "{}", s.name);
    }
}

#[test]
fn a_large_batch_goes_in_whole() {
    let (subjects, _services) = subjects("a_large_batch_goes_in_whole");
    for s in &subjects {
        let st = &*s.store;
        // More than one Redis pipeline round trip.
        let n = 2_500;
        let takes: Vec<WorkClaimWrite> = (0..n)
            .map(|i| write(0, taken(P, None, &format!("t{i:05}"), "alice", Some(5), T0 + i), "take", vec![]))
            .collect();
        assert!(st.write_work_claims(&takes).unwrap().iter().all(|c| *c == Commit::Done(1)), "{}", s.name);
        let due = st.due_claims(P, T0 + 5 * M + n, n as usize + 1).unwrap();
        assert_eq!(due.len(), n as usize, "{}", s.name);
        assert!(due.windows(2).all(|w| w[0].due_at() < w[1].due_at()), "{}: earliest first", s.name);
        let expired: Vec<WorkClaimWrite> = due
            .iter()
            .map(|r| write(1, work::expire(r, None, T0 + 5 * M + n).unwrap().0, "ttl_release", vec![doorbell("s", r)]))
            .collect();
        let out = st.write_work_claims(&expired).unwrap();
        assert!(out.iter().all(|c| *c == Commit::Done(2)), "{}", s.name);
        assert!(st.due_claims(P, Millis::MAX, 10).unwrap().is_empty(), "{}", s.name);
        assert_eq!(st.inbox(P, "s", 0, 10_000).unwrap().len(), n as usize, "{}", s.name);
        // The same batch again: every write conflicts.
        assert!(st.write_work_claims(&expired).unwrap().iter().all(|c| *c == Commit::Conflict), "{}", s.name);
    }
}

// ---------------------------------------------------------------------------------------
// Redis + Postgres
// ---------------------------------------------------------------------------------------

fn pg_claims(ns: &Ns) -> Vec<(String, String, i64, Option<i64>)> {
    ns.pg()
        .query(
            &format!("SELECT project, task, version, due_at FROM \"{}\".claims ORDER BY project, task", ns.name),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

fn pg_count(ns: &Ns, table: &str) -> i64 {
    ns.pg().query_one(&format!("SELECT count(*) FROM \"{}\".{table}", ns.name), &[]).unwrap().get(0)
}

#[test]
fn redis_pg_work_reaches_postgres_and_survives_a_cold_restore() {
    let Some(ns) = Ns::new("redis_pg_work_reaches_postgres_and_survives_a_cold_restore") else { return };
    let store = ns.store();
    let st: &dyn Store = &*store;
    st.insert_channel(&channel(P), &audit(P, "channel.create", CH, T0)).unwrap();
    let lease = work::focus_lease(P, "bob", 30, T0).unwrap().lease;
    st.put_focus(unproven(&lease, None, &audit(P, "focus.start", "bob", T0))).unwrap();
    let lease = FocusLease { ended_at: Some(T0 + M), ..lease };
    st.put_focus(unproven(&lease, None, &audit(P, "focus.start", "bob", T0 + M))).unwrap();
    let a1 = put(st, write(0, taken(P, None, "a", "alice", Some(10), T0), "take", vec![]));
    let a2 = put(st, write(1, touched(&a1, T0 + M), "touch", vec![]));
    let b1 = put(st, write(0, taken(P, None, "b", "bob", None, T0), "take", vec![]));
    let b2 = put(st, write(1, released(&b1, T0 + M), "release", vec![doorbell("steward", &b1)]));
    // A project with claims only (no controller ever registered): its doorbell cursors must
    // survive a restore too.
    let o1 = put(st, write(0, taken("solo", None, "x", "carol", Some(5), T0), "take", vec![]));
    let solo_bell = work::expire(&o1, None, T0 + 5 * M).unwrap().0;
    let o2 = put(st, write(1, solo_bell, "ttl_release", vec![doorbell("carol", &o1)]));
    let o3 = put(st, write(2, taken("solo", Some(&o2), "x", "dave", Some(5), T0 + 6 * M), "take", vec![]));
    let last_cursor = st.inbox("solo", "carol", 0, 10).unwrap()[0].cursor;
    // A conflict queues nothing.
    assert_eq!(
        st.write_work_claims(&[write(1, touched(&a1, T0 + 2 * M), "touch", vec![])]).unwrap(),
        [Commit::Conflict]
    );

    store.flush_postgres().unwrap();
    assert_eq!((store.pending_postgres_writes().unwrap(), store.dead_postgres_writes().unwrap()), (0, 0));
    assert_eq!(
        ns.pg_audit_counts(P),
        counts(&[
            ("channel.create", "ok", 1),
            ("focus.start", "ok", 2),
            ("claim.take", "ok", 2),
            ("claim.touch", "ok", 1),
            ("claim.release", "ok", 1)
        ])
    );
    assert_eq!(
        pg_claims(&ns),
        [
            (P.into(), "a".into(), 2, a2.due_at()),
            (P.into(), "b".into(), 2, None),
            ("solo".into(), "x".into(), 3, o3.due_at())
        ]
    );
    let history = pg_count(&ns, "claim_history");
    assert_eq!((history, pg_count(&ns, "channels"), pg_count(&ns, "focus_leases")), (7, 1, 1));

    // Cold restore: Redis loses the namespace; a new store rebuilds it from Postgres.
    ns.wipe_redis();
    let fresh = ns.store();
    let f: &dyn Store = &*fresh;
    let bump = |r: &WorkClaim| WorkClaim { version: r.version + G, ..r.clone() };
    assert_eq!(f.work_claims(P, CH).unwrap(), [bump(&a2), bump(&b2)]);
    assert_eq!(f.work_claim("solo", CH, "x").unwrap(), Some(bump(&o3)));
    assert_eq!(actions(&f.work_claim_history(P, CH, "a").unwrap()), [("take", 1), ("touch", 2)], "steps keep versions");
    assert_eq!(f.work_claim_history(P, CH, "b").unwrap().last().unwrap().claim, b2);
    assert_eq!(
        actions(&f.work_claim_history("solo", CH, "x").unwrap()),
        [("take", 1), ("ttl_release", 2), ("take", 3)]
    );
    assert_eq!(f.channel(P, CH).unwrap(), Some(channel(P)));
    assert_eq!(f.focus_leases(P).unwrap(), std::slice::from_ref(&lease));
    assert_eq!(f.due_claims(P, Millis::MAX, 10).unwrap(), [bump(&a2)], "the due index is rebuilt");
    assert_eq!(f.projects_with_due(Millis::MAX).unwrap(), [P, "solo"]);
    assert_eq!(fresh.restore_from_postgres().unwrap(), 0);
    assert_eq!(f.work_claims(P, CH).unwrap(), [bump(&a2), bump(&b2)], "a second restore overwrites nothing");

    // A version handed out before the loss conflicts; the restored one goes in.
    let stale = write(2, touched(&a2, T0 + 3 * M), "touch", vec![]);
    assert_eq!(f.write_work_claims(&[stale]).unwrap(), [Commit::Conflict]);
    let a3 = put(f, write(2 + G, touched(&bump(&a2), T0 + 3 * M), "touch", vec![]));
    assert_eq!(a3.version, 3 + G);
    assert_eq!(actions(&f.work_claim_history(P, CH, "a").unwrap()), [("take", 1), ("touch", 2), ("touch", 3 + G)]);
    assert_eq!(f.due_claims(P, Millis::MAX, 10).unwrap(), std::slice::from_ref(&a3));
    // Cursors never go back, even for a project Postgres knows only through its claims.
    let after = st_bell(f, &bump(&o3), "carol");
    assert!(after > last_cursor, "cursor {after} after {last_cursor}");
    fresh.flush_postgres().unwrap();
    assert_eq!(pg_claims(&ns)[0], (P.into(), "a".into(), (3 + G) as i64, a3.due_at()));
    assert_eq!(pg_count(&ns, "claim_history"), history + 2);

    // A running store whose Redis lost the namespace restores and answers the writes it
    // could not run as conflicts (the caller decides again on the restored state, like a
    // master commit): a write decided before the loss conflicts for good, a new task goes
    // in on the next attempt, readers see restored rows.
    ns.wipe_redis();
    let stale = write(3 + G, touched(&a3, T0 + 4 * M), "touch", vec![]);
    let new = write(0, taken(P, None, "c", "erin", None, T0 + 4 * M), "take", vec![]);
    assert_eq!(store.write_work_claims(&[stale.clone(), new.clone()]).unwrap(), [Commit::Conflict, Commit::Conflict]);
    assert_eq!(store.write_work_claims(&[stale, new]).unwrap(), [Commit::Conflict, Commit::Done(1)]);
    assert_eq!(store.work_claim(P, CH, "a").unwrap().unwrap().version, 3 + 2 * G);
    ns.wipe_redis();
    assert_eq!(store.focus_leases(P).unwrap(), std::slice::from_ref(&lease), "a read restores too");
    ns.wipe_redis();
    assert_eq!(
        store.insert_channel(&channel(P), &audit(P, "channel.create", CH, T0)).unwrap_err(),
        ClaimError::ChannelExists(CH.into())
    );
    ns.wipe_redis();
    let again = work::focus_lease(P, "bob", 10, T0 + 9 * M).unwrap().lease;
    store.put_focus(unproven(&again, None, &audit(P, "focus.start", "bob", T0 + 9 * M))).unwrap();
    store.flush_postgres().unwrap();
    assert_eq!(store.focus_leases(P).unwrap(), std::slice::from_ref(&again));
    let pg_focus: String = ns
        .pg()
        .query_one(&format!("SELECT body::text FROM \"{}\".focus_leases WHERE seat = 'bob'", ns.name), &[])
        .unwrap()
        .get(0);
    assert_eq!(serde_json::from_str::<FocusLease>(&pg_focus).unwrap(), again, "the newer lease won in Postgres");
    assert_eq!(store.dead_postgres_writes().unwrap(), 0);
}

/// Rings `to` about `row` (a conflicting no-op would ring nothing: this one is a real write)
/// and returns the doorbell's cursor.
fn st_bell(st: &dyn Store, row: &WorkClaim, to: &str) -> u64 {
    let after = work::expire(row, None, Millis::MAX / 2).unwrap().0;
    put(st, write(row.version, after, "ttl_release", vec![doorbell(to, row)]));
    st.inbox(&row.project, to, 0, 100).unwrap().last().unwrap().cursor
}

#[test]
fn redis_pg_queued_claim_writes_replay_idempotently() {
    let Some(ns) = Ns::new("redis_pg_queued_claim_writes_replay_idempotently") else { return };
    let proxy = Proxy::start(postgres_addr(&ns.postgres_url));
    let via_proxy = proxy.postgres_url(&ns.postgres_url);
    let store = Arc::new(RedisPgStore::connect(&ns.redis_url, &via_proxy, &ns.name).unwrap());
    let st: &dyn Store = &*store;
    // Postgres unreachable: Redis takes the writes and the queue keeps them.
    proxy.cut();
    let v1 = put(st, write(0, taken(P, None, "t", "alice", Some(5), T0), "take", vec![]));
    let v2 = put(st, write(1, touched(&v1, T0 + M), "touch", vec![]));
    let lease = work::focus_lease(P, "alice", 30, T0).unwrap().lease;
    st.put_focus(unproven(&lease, None, &audit(P, "focus.start", "alice", T0))).unwrap();
    st.insert_channel(&channel(P), &audit(P, "channel.create", CH, T0)).unwrap();
    assert_eq!(st.work_claim(P, CH, "t").unwrap(), Some(v2.clone()), "Redis answers while Postgres is away");
    // Keep a copy of the queue to replay later, as a drainer that died before XDEL would.
    let queued = ns.queue_copy();
    assert_eq!(queued.len(), 4);

    proxy.restore();
    store.flush_postgres().unwrap();
    let newer = FocusLease { ended_at: Some(T0 + 2 * M), ..lease };
    st.put_focus(unproven(&newer, None, &audit(P, "focus.end", "alice", T0 + 2 * M))).unwrap();
    store.flush_postgres().unwrap();
    let before = (pg_claims(&ns), pg_count(&ns, "claim_history"), pg_count(&ns, "channels"), ns.pg_audit_ids());
    assert_eq!(before.0, [(P.into(), "t".into(), 2, v2.due_at())]);
    assert_eq!((before.1, before.2, before.3), (2, 1, (5, 5)));
    ns.requeue(&queued);
    store.flush_postgres().unwrap();
    let after = (pg_claims(&ns), pg_count(&ns, "claim_history"), pg_count(&ns, "channels"), ns.pg_audit_ids());
    assert_eq!(after, before, "replayed older entries changed nothing");
    let pg_focus: String =
        ns.pg().query_one(&format!("SELECT body::text FROM \"{}\".focus_leases", ns.name), &[]).unwrap().get(0);
    assert_eq!(serde_json::from_str::<FocusLease>(&pg_focus).unwrap(), newer, "the older lease did not win");
    assert_eq!(store.dead_postgres_writes().unwrap(), 0);
}
