//! Bounded growth (issue 15 part 4) on both stores: inbox retention by count and age with
//! `inbox_cursor_trimmed` for a reader behind the trim (the same transcript on SQLite and on
//! Redis + Postgres), audit and idle attempt-row pruning (Postgres's audit log staying
//! append-only for everything but the prune), heartbeats counted rather than audited, and
//! the server's periodic prune and `/metrics` sizes over HTTP.
//!
//! Redis + Postgres run when the services answer (see `services.rs`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::master::{Co, Ctl, err_doc, ok_doc};
use crate::serve::{Deployment, http_get, metric};
use crate::services::wait_until;
use crate::work_store::{Subject, subjects};
use writerctl::claim::Coordinator;
use writerctl::claim::clock::ManualClock;
use writerctl::claim::engine::DEFAULT_FRESHNESS;
use writerctl::claim::error::ClaimError;
use writerctl::claim::masters::{ControllerKey, RegisterRequest};
use writerctl::claim::model::{AuditEntry, Change, Millis, NewEvent};
use writerctl::claim::retention::Cutoffs;
use writerctl::claim::secret::Secret;
use writerctl::claim::stores::redis_pg::RedisPgStore;
use writerctl::claim::stores::{Commit, ProjectWrite, Store};
use writerctl::claim::work_claims::{ChannelRequest, TakeRequest, TaskAddress, TouchRequest};

const T0: Millis = 1_800_000_000_000;
const DAY: Millis = 24 * 3600 * 1000;
const P: &str = "fleet";

fn audit(verb: &str, at: Millis) -> AuditEntry {
    AuditEntry {
        at,
        project: P.into(),
        verb: verb.into(),
        actor: "test".into(),
        target: None,
        result: "ok".into(),
        epoch: None,
        detail: json!({}),
        request: None,
        reason: None,
    }
}

/// One event for `recipient`'s inbox, committed at `at`.
fn push(store: &Arc<dyn Store>, recipient: &str, at: Millis) {
    let event = NewEvent {
        recipient: recipient.into(),
        recipient_session: None,
        kind: "Test".into(),
        payload: json!({"at": at}),
    };
    let change = Change { events: vec![event], ..Change::default() };
    let version = store.snapshot(P).unwrap().version;
    let audit = audit("test.event", at);
    let write = ProjectWrite { project: P, expected_version: version, change: &change, audit: Some(&audit) };
    assert!(matches!(store.commit(write).unwrap(), Commit::Done(_)));
}

fn cutoffs(inbox_before: Option<Millis>, inbox_keep: Option<u64>) -> Cutoffs {
    Cutoffs { audit_before: None, inbox_before, inbox_keep, attempts_before: 0 }
}

/// A coordinator over `store` on a manual clock at T0.
fn at_t0(store: &Arc<dyn Store>) -> (Arc<ManualClock>, Coordinator) {
    let clock = Arc::new(ManualClock::at(T0));
    // Open registration: these tests are about retention, not enrollment.
    (clock.clone(), Coordinator::new(store.clone(), clock, DEFAULT_FRESHNESS).with_open_registration(true))
}

/// On Redis + Postgres, applies the queued Postgres writes (audit rows, history steps) now.
fn flush(s: &Subject, services: &Option<(crate::services::Ns, Arc<RedisPgStore>)>) {
    if let Some((_, store)) = services.as_ref().filter(|_| s.name == "redis_pg") {
        store.flush_postgres().unwrap();
    }
}

/// An inbox read as text, cursors relative to `base` (the first cursor), so two stores'
/// transcripts compare.
fn read(store: &Arc<dyn Store>, after: u64, base: u64) -> String {
    let rel = |c: u64| c + 1 - base;
    match store.inbox(P, "alice", after, 100) {
        Ok(events) => format!("ok {:?}", events.iter().map(|e| rel(e.cursor)).collect::<Vec<_>>()),
        Err(ClaimError::InboxCursorTrimmed { after, trimmed_through, oldest }) => {
            format!("trimmed after={} through={} oldest={:?}", rel(after), rel(trimmed_through), oldest.map(rel))
        }
        Err(e) => format!("error {e}"),
    }
}

#[test]
fn inbox_retention_refuses_readers_behind_the_trim_alike_on_both_stores() {
    let (subjects, _services) = subjects("inbox_retention_refuses_readers_behind_the_trim_alike_on_both_stores");
    let mut transcripts = Vec::new();
    for s in &subjects {
        let st = &s.store;
        for day in 0..5 {
            push(st, "alice", T0 + day * DAY);
        }
        push(st, "bob", T0);
        let c: Vec<u64> = st.inbox(P, "alice", 0, 100).unwrap().iter().map(|e| e.cursor).collect();
        assert_eq!(c.len(), 5, "{}", s.name);
        let mut t = Vec::new();
        // By count: the newest two per inbox stay.
        t.push(format!("pruned {}", st.prune(&cutoffs(None, Some(2))).unwrap().inbox_entries));
        t.push(read(st, 0, c[0]));
        t.push(read(st, c[0], c[0]));
        t.push(read(st, c[2], c[0]));
        // By age: alice's day-3 event and bob's day-0 event go.
        t.push(format!("pruned {}", st.prune(&cutoffs(Some(T0 + 4 * DAY), None)).unwrap().inbox_entries));
        t.push(read(st, c[2], c[0]));
        t.push(read(st, c[3], c[0]));
        t.push(format!("held {}", st.sizes().unwrap().inbox_entries));
        t.push(format!("again {}", st.prune(&cutoffs(Some(T0 + 4 * DAY), Some(2))).unwrap().inbox_entries));
        transcripts.push((s.name, t));
    }
    let expected = [
        "pruned 3",
        "ok [4, 5]",
        "trimmed after=1 through=3 oldest=Some(4)",
        "ok [4, 5]",
        "pruned 2",
        "trimmed after=3 through=4 oldest=Some(5)",
        "ok [5]",
        "held 1",
        "again 0",
    ];
    for (name, t) in &transcripts {
        assert_eq!(t, &expected, "{name}");
    }
}

#[test]
fn old_audit_rows_and_idle_attempt_rows_are_pruned_on_both_stores() {
    let (subjects, services) = subjects("old_audit_rows_and_idle_attempt_rows_are_pruned_on_both_stores");
    for s in &subjects {
        let st = &s.store;
        st.append_audit(&audit("old", T0 - 10 * DAY)).unwrap();
        st.append_audit(&audit("new", T0)).unwrap();
        st.record_failure("ghost", T0 - 2 * DAY).unwrap();
        st.record_failure("ops", T0).unwrap();
        flush(s, &services);
        let c =
            Cutoffs { audit_before: Some(T0 - DAY), inbox_before: None, inbox_keep: None, attempts_before: T0 - DAY };
        let p = st.prune(&c).unwrap();
        assert_eq!((p.audit_rows, p.attempt_rows), (1, 1), "{}", s.name);
        let verbs: Vec<String> = st.audit_log(None, 10).unwrap().into_iter().map(|a| a.verb).collect();
        assert_eq!(verbs, ["new"], "{}", s.name);
        let z = st.sizes().unwrap();
        assert_eq!((z.audit_rows, z.attempt_rows), (1, 1), "{}", s.name);
        assert_eq!(st.record_failure("ghost", T0).unwrap(), 1, "{}: the idle row was forgotten", s.name);
        assert_eq!(st.record_failure("ops", T0).unwrap(), 2, "{}: the recent row was kept", s.name);
    }
    if let Some((ns, _)) = &services {
        // The prune vacuumed the tables it deleted from, so their space is reused at once.
        let mut pg = ns.pg();
        let vacuumed: bool = pg
            .query_one(
                "SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'audit'",
                &[&ns.name],
            )
            .unwrap()
            .get(0);
        assert!(vacuumed, "the prune vacuumed the audit table");
        // Outside a retention prune, the audit log is still append-only.
        for sql in ["DELETE FROM {}.audit", "UPDATE {}.audit SET verb = 'x'", "TRUNCATE {}.audit"] {
            let e = pg.batch_execute(&sql.replace("{}", &format!("\"{}\"", ns.name))).unwrap_err();
            assert!(e.to_string().contains("append-only") || format!("{e:?}").contains("append-only"), "{sql}: {e:?}");
        }
    }
}

#[test]
fn routine_heartbeats_write_no_audit_row_on_both_stores() {
    let (subjects, services) = subjects("routine_heartbeats_write_no_audit_row_on_both_stores");
    for s in &subjects {
        let (clock, c) = at_t0(&s.store);
        let key = ControllerKey { identity: "alice".into(), surface: "cli".into(), machine_id: "m".into() };
        let a = c.register(P, &RegisterRequest::of(&key, None, None)).unwrap();
        for _ in 0..3 {
            clock.advance(10_000);
            c.heartbeat(P, &a.controller.session_id, &a.token).unwrap();
        }
        clock.advance(45_000);
        c.heartbeat(P, &a.controller.session_id, &a.token).unwrap();
        flush(s, &services);
        let rows = c.audit_log(Some(P), 100).unwrap();
        let verbs: Vec<&str> = rows.iter().map(|r| r.verb.as_str()).collect();
        assert_eq!(verbs, ["session.register", "session.heartbeat"], "{}", s.name);
        assert_eq!(rows[1].detail["back_after_stale_ms"], 45_000, "{}", s.name);
        let last = c.status(P).unwrap().controllers[0].controller.last_heartbeat;
        assert_eq!(last, T0 + 75_000, "{}: every beat still counts for freshness", s.name);
    }
}

/// The one place these tests take a claim (seat proof changes are made here).
fn take_as(c: &Coordinator, seat: &str, task: &str) {
    let req = TakeRequest { seat: seat.into(), ..Default::default() };
    c.take_work_claim(&TaskAddress::new(P, "ch", task), &req, Some(&seat_token(c, seat))).unwrap();
}

/// A session token of `seat`: a controller registered for this one write (its own machine
/// id, so a live row of the seat is never in the way).
fn seat_token(c: &Coordinator, seat: &str) -> Secret {
    let key =
        ControllerKey { identity: seat.into(), surface: "cli".into(), machine_id: uuid::Uuid::new_v4().to_string() };
    c.register(P, &RegisterRequest::of(&key, None, None)).unwrap().token
}

/// The one place these tests touch a claim.
fn touch_as(c: &Coordinator, seat: &str, task: &str) {
    let req = TouchRequest { seat: seat.into(), next_step: Some("go on".into()), ..Default::default() };
    c.touch_work_claim(&TaskAddress::new(P, "ch", task), &req, Some(&seat_token(c, seat))).unwrap();
}

#[test]
fn claim_history_keeps_each_tasks_newest_step_on_both_stores() {
    let (subjects, services) = subjects("claim_history_keeps_each_tasks_newest_step_on_both_stores");
    for s in &subjects {
        let (clock, c) = at_t0(&s.store);
        c.create_channel(P, &ChannelRequest { channel: "ch".into(), steward: "steward".into(), ..Default::default() })
            .unwrap();
        take_as(&c, "alice", "a");
        take_as(&c, "bob", "b");
        clock.advance(DAY);
        touch_as(&c, "alice", "a");
        clock.advance(DAY);
        touch_as(&c, "alice", "a");
        flush(s, &services);
        assert_eq!(s.store.sizes().unwrap().history_steps, 4, "{}", s.name);
        let cut = Cutoffs { audit_before: Some(T0 + DAY + DAY / 2), ..cutoffs(None, None) };
        assert_eq!(s.store.prune(&cut).unwrap().history_steps, 2, "{}", s.name);
        let steps = |task: &str| -> Vec<Millis> {
            c.work_claim_history(P, "ch", task).unwrap().iter().map(|st| st.at).collect()
        };
        assert_eq!(steps("a"), [T0 + 2 * DAY], "{}: the old steps went", s.name);
        assert_eq!(steps("b"), [T0], "{}: a task's newest step stays, however old", s.name);
        assert_eq!(s.store.sizes().unwrap().history_steps, 2, "{}", s.name);
    }
}

// ---------------------------------------------------------------------------------------
// over HTTP: the server prunes by itself and reports sizes
// ---------------------------------------------------------------------------------------

/// Server flags that prune every second and keep one event per inbox.
const PRUNE_FAST: &[&str] = &["--retention-interval-seconds", "1", "--inbox-max-events", "1"];

/// `identity`'s inbox read after `after` (the one place a test reads an inbox, so a change in
/// how an inbox proves its reader is made once).
fn read_inbox(co: &Co, reader: &Ctl, after: u64) -> crate::support::Run {
    co.run(&[
        "inbox",
        "--project",
        crate::master::PROJECT,
        "--identity",
        &reader.identity,
        "--after",
        &after.to_string(),
        "--token-file",
        crate::master::s(&reader.token_file),
        "--json",
    ])
}

/// Five handoffs: alice gets three MasterPreempted events, bob two. Returns alice's first
/// cursor: a reader that read only that one is behind once the inbox keeps one event.
fn preempt_alice_three_times(co: &Co, alice: &Ctl, bob: &Ctl) -> u64 {
    five_handoffs(co, alice, bob);
    let events = ok_doc(&read_inbox(co, alice, 0))["events"].clone();
    assert_eq!(events.as_array().unwrap().len(), 3, "{events}");
    events[0]["cursor"].as_u64().unwrap()
}

/// The five handoffs of [`preempt_alice_three_times`], without reading the inboxes.
fn five_handoffs(co: &Co, alice: &Ctl, bob: &Ctl) {
    for (from, to) in [(alice, "bob"), (bob, "alice"), (alice, "bob"), (bob, "alice"), (alice, "bob")] {
        ok_doc(&co.handoff(from, to, &[]));
    }
}

fn metrics(co: &Co) -> String {
    let (status, _, body) = http_get(&format!("{}/metrics", co.url()));
    assert_eq!(status, 200, "{body}");
    body
}

fn served_retention(co: &Co) {
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    // A server keeps --inbox-max-events on every append (issue 28 point 4), not only at the
    // periodic prune: alice holds her newest event at once, and a reader that read only her
    // first (cursor 1 or later, below the trim) is behind.
    five_handoffs(co, &alice, &bob);
    let first = 1;
    for _ in 0..3 {
        co.ok(&[
            "session",
            "heartbeat",
            "--project",
            crate::master::PROJECT,
            "--session",
            &alice.sid,
            "--token-file",
            crate::master::s(&alice.token_file),
        ]);
    }
    wait_until(Duration::from_secs(30), "a prune", || {
        metric(&metrics(co), r#"writerctl_retention_runs_total{result="ok"}"#).unwrap_or(0.0) >= 1.0
    });
    let err = err_doc(&read_inbox(co, &alice, first), 4, "inbox_cursor_trimmed");
    let held = ok_doc(&read_inbox(co, &alice, 0))["events"].clone();
    assert_eq!(held.as_array().unwrap().len(), 1, "{held}");
    assert_eq!(err["oldest_cursor"], held[0]["cursor"], "{err}");
    assert_eq!(err["after"], json!(first), "{err}");
    let m = metrics(co);
    assert_eq!(metric(&m, "writerctl_heartbeats_total"), Some(3.0), "{m}");
    assert_eq!(metric(&m, "writerctl_inbox_entries"), Some(2.0), "one per inbox:\n{m}");
    let rows = co.ok(&["audit", "--limit", "1000"])["entries"].as_array().unwrap().len() as f64;
    let m = metrics(co);
    assert_eq!(metric(&m, "writerctl_audit_rows"), Some(rows), "{m}");
    assert!(metric(&m, r#"writerctl_retention_runs_total{result="ok"}"#).unwrap_or(0.0) >= 1.0, "{m}");
    let beats = co.ok(&["audit", "--limit", "1000"])["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["verb"] == "session.heartbeat")
        .count();
    assert_eq!(beats, 0, "routine beats are counted, not audited");
}

#[test]
fn a_server_over_sqlite_prunes_and_reports_sizes() {
    let co = Co::http(|home, store| Deployment::sqlite(home, store).server_args(PRUNE_FAST));
    served_retention(&co);
}

#[test]
fn a_server_over_redis_pg_prunes_and_reports_sizes() {
    let Some(ns) = crate::services::Ns::new("a_server_over_redis_pg_prunes_and_reports_sizes") else { return };
    let co = Co::http(|home, _| Deployment::redis_pg(home, ns).server_args(PRUNE_FAST));
    served_retention(&co);
}

/// `audit prune` on the embedded store: JSON with the counts, then the reader behind the
/// trim gets exit 4.
#[test]
fn audit_prune_on_the_embedded_store() {
    let co = Co::new();
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    let first = preempt_alice_three_times(&co, &alice, &bob);
    let out = co.ok(&["audit", "prune", "--older-than-days", "30", "--inbox-max-events", "1"]);
    assert_eq!(out["pruned"], 0, "{out}");
    assert_eq!(out["inbox_entries_pruned"], 3, "two of alice's, one of bob's: {out}");
    assert_eq!(out["older_than_days"], 30, "{out}");
    let e: Value = err_doc(&read_inbox(&co, &alice, first), 4, "inbox_cursor_trimmed");
    assert!(e["hint"].as_str().unwrap().contains("--after"), "{e}");
    let verbs: Vec<Value> =
        co.ok(&["audit"])["entries"].as_array().unwrap().iter().map(|a| a["verb"].clone()).collect();
    assert_eq!(verbs.last(), Some(&json!("retention.prune")), "{verbs:?}");
    err_doc(&co.run(&["audit", "prune", "--older-than-days", "0", "--json"]), 2, "usage");
}
