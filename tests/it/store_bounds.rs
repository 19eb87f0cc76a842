//! Issue 28 point 4 on the store side, and the store-fault drill's defects: the Redis queue of
//! Postgres writes has a row and a byte bound (refusal audit rows dropped and counted, write
//! verbs refused with `coordinator_unavailable` having written nothing), Redis keeps a
//! bounded tail of each claim's history while `claim history` still answers in full,
//! `degraded` follows the shared Postgres state rather than who won the drain lock, a Redis
//! outage is named Redis, and `/metrics` logs one WARN per outage rather than one per scrape.
//!
//! Services as in `services.rs` (one namespace per test, a loud skip without them, a failure
//! under `WRITERCTL_REQUIRE_SERVICES=1`). Outages are the `Proxy` cut, as in `redis_pg.rs`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::serve::{Server, http_get, metric};
use crate::services::{Ns, Proxy, postgres_addr, redis_via, wait_until};
use crate::support_api::{handoff_by, unproven};
use writerctl::claim::clock::ManualClock;
use writerctl::claim::engine::{Coordinator, DEFAULT_FRESHNESS};
use writerctl::claim::masters::ControllerKey;
use writerctl::claim::model::{AuditEntry, Millis, NewEvent};
use writerctl::claim::stores::redis_pg::{HISTORY_KEEP, QueueBounds, RedisPgStore};
use writerctl::claim::stores::sqlite::SqliteStore;
use writerctl::claim::stores::{Commit, Store, WorkClaimWrite, WorkStore};
use writerctl::claim::work_claims::{self as work, TakeRequest, TaskAddress, TouchRequest, WorkClaim};

const T0: Millis = 1_800_000_000_000;

fn key(identity: &str, machine: &str) -> ControllerKey {
    ControllerKey { identity: identity.into(), surface: "cli".into(), machine_id: machine.into() }
}

fn coordinator(store: &Arc<RedisPgStore>) -> Coordinator {
    Coordinator::new(store.clone(), Arc::new(ManualClock::at(T0)), DEFAULT_FRESHNESS).with_open_registration(true)
}

/// A failed verb's audit row, as `Coordinator::audit_refusal` writes one.
fn refusal(i: usize) -> AuditEntry {
    AuditEntry {
        at: T0,
        project: "web".into(),
        verb: "master.handoff".into(),
        actor: format!("stranger-{i}"),
        target: None,
        result: "unauthorized".into(),
        epoch: None,
        detail: json!({"padding": "x".repeat(200)}),
        request: None,
        reason: None,
    }
}

/// A store whose Postgres is reached through `proxy` (cut it for an outage).
fn store_via(ns: &Ns, proxy: &Proxy) -> Arc<RedisPgStore> {
    Arc::new(RedisPgStore::connect(&ns.redis_url, &proxy.postgres_url(&ns.postgres_url), &ns.name).unwrap())
}

fn xlen(ns: &Ns, what: &str) -> u64 {
    redis::cmd("XLEN").arg(ns.key(what)).query(&mut ns.redis()).unwrap()
}

fn queue_bytes(ns: &Ns) -> u64 {
    redis::cmd("GET").arg(ns.key("pgq:bytes")).query::<Option<u64>>(&mut ns.redis()).unwrap().unwrap_or(0)
}

/// Issue 28 point 4: with Postgres unreachable, a flood of refusals leaves the queue at its
/// row bound (then at its byte bound, overshot by at most one entry) and counts every drop.
/// On main the queue grew by one entry per refusal, without bound.
#[test]
fn a_flood_of_refusals_during_a_postgres_outage_stays_within_the_bound() {
    let Some(ns) = Ns::new("a_flood_of_refusals_during_a_postgres_outage_stays_within_the_bound") else { return };
    let proxy = Proxy::start(postgres_addr(&ns.postgres_url));
    let store = store_via(&ns, &proxy);
    store.set_queue_bounds(QueueBounds { max_rows: 40, max_bytes: 0 });
    proxy.cut();
    for i in 0..300 {
        store.append_audit(&refusal(i)).unwrap();
    }
    let q = store.audit_queue().unwrap();
    assert_eq!(xlen(&ns, "pgq"), 40, "the row bound holds exactly");
    assert_eq!((q.rows, q.max_rows), (40, 40));
    assert_eq!(q.dropped_refusals, 260, "every refusal past the bound is counted");
    assert_eq!(q.refused_writes, 0);

    // The byte bound: below it before each entry, so at most one entry over.
    let entry = q.bytes / 40;
    store.set_queue_bounds(QueueBounds { max_rows: 0, max_bytes: q.bytes + 10 * entry + 1 });
    for i in 0..300 {
        store.append_audit(&refusal(i)).unwrap();
    }
    let q2 = store.audit_queue().unwrap();
    assert!(q2.bytes <= q2.max_bytes + 2 * entry, "{q2:?}: one entry of overshoot at most");
    assert!(q2.rows <= 52, "{q2:?}");
    assert_eq!(q2.dropped_refusals, 260 + 300 - (q2.rows - 40));

    // Postgres back: the queue drains, and its byte count with it.
    proxy.restore();
    store.flush_postgres().unwrap();
    assert_eq!(xlen(&ns, "pgq"), 0);
    assert_eq!(queue_bytes(&ns), 0, "the byte count follows the queue down");
}

/// Issue 28 point 4: a write verb past the bound is refused with `coordinator_unavailable`
/// (exit 75) and writes nothing to Redis (no state, no event, no queue entry); a routine
/// heartbeat still applies and skips only its Postgres write. On main the write went in
/// and the queue grew.
#[test]
fn a_write_verb_past_the_bound_is_refused_and_writes_nothing() {
    let Some(ns) = Ns::new("a_write_verb_past_the_bound_is_refused_and_writes_nothing") else { return };
    let proxy = Proxy::start(postgres_addr(&ns.postgres_url));
    let store = store_via(&ns, &proxy);
    let c = coordinator(&store);
    let a = c.register("web", &unproven(&key("alice", "h1"))).unwrap();
    c.register("web", &unproven(&key("bob", "h2"))).unwrap();
    let ch = work::new_channel("web", "ops", "alice", Some(30), Some(1), T0).unwrap();
    store.insert_channel(&ch, &refusal(0)).unwrap();
    store.flush_postgres().unwrap();

    store.set_queue_bounds(QueueBounds { max_rows: 5, max_bytes: 0 });
    proxy.cut();
    for i in 0..20 {
        store.append_audit(&refusal(i)).unwrap();
    }
    assert_eq!(xlen(&ns, "pgq"), 5);
    let before = store.snapshot("web").unwrap();
    // The queue's own keys (drain lock, failing marker) come and go with the background
    // writer; every other key is the verbs' state.
    let state_keys = || {
        let mut k: Vec<String> = ns.redis_keys().into_iter().filter(|k| !k.starts_with(&ns.key("pgq"))).collect();
        k.sort();
        k
    };
    let keys_before = state_keys();

    let req = handoff_by(&a, "bob", 1);
    let e = c.handoff("web", &req, &a.token).unwrap_err();
    assert_eq!(e.code().as_str(), "coordinator_unavailable", "{e}");
    assert_eq!(e.code().exit_code(), 75);
    assert!(e.to_string().contains("nothing was written"), "{e}");
    assert_eq!(store.snapshot("web").unwrap(), before, "the handoff changed nothing");
    assert!(c.inbox("web", "alice", 0, 10, Some(&a.token)).unwrap().is_empty(), "no MasterPreempted");
    assert_eq!(xlen(&ns, "pgq"), 5, "nothing queued");

    let take = TakeRequest { seat: "alice".into(), ..Default::default() };
    let row = work::take(None, &ch, &TaskAddress::new("web", "ops", "t1"), &take, T0).unwrap().claim;
    let w = WorkClaimWrite {
        proof: None,
        expected_version: 0,
        action: "take".into(),
        audit: AuditEntry { verb: "claim.take".into(), ..refusal(0) },
        events: vec![],
        row,
    };
    let e = store.write_work_claims(&[w]).unwrap_err();
    assert_eq!(e.code().as_str(), "coordinator_unavailable", "{e}");
    assert_eq!(store.work_claim("web", "ops", "t1").unwrap(), None, "no claim row");
    assert!(store.work_claim_history("web", "ops", "t1").unwrap().is_empty(), "no history step");
    assert_eq!(state_keys(), keys_before, "no new Redis key");
    assert_eq!(xlen(&ns, "pgq"), 5);

    // A routine heartbeat is applied (controllers must not go stale for a Postgres outage)
    // and only skips its Postgres write.
    c.heartbeat("web", &a.controller.session_id, &a.token).unwrap();
    let q = store.audit_queue().unwrap();
    assert_eq!((q.rows, q.dropped_heartbeats, q.refused_writes), (5, 1, 2), "{q:?}");
    assert!(q.dropped_refusals >= 15, "{q:?}");

    proxy.restore();
    store.flush_postgres().unwrap();
    let out = c.handoff("web", &req, &a.token).unwrap();
    assert_eq!(out.epoch, 2, "once Postgres caught up the same verb goes through");
}

fn touched(row: &WorkClaim, ch: &work::Channel, now: Millis) -> WorkClaim {
    let req = TouchRequest {
        seat: row.owner.clone().unwrap(),
        expect_version: Some(row.version),
        next_step: Some(format!("step at {now}")),
        ..Default::default()
    };
    work::touch(row, ch, &req, now).unwrap().claim
}

/// Issue 28 point 4 ("history lists are trimmed"): after many writes to one task, Redis
/// holds at most `HISTORY_KEEP` steps of it, and `claim history` still answers every step,
/// oldest first, the older ones from Postgres. On main the list grew by one step per write.
#[test]
fn history_in_redis_is_bounded_and_claim_history_answers_in_full() {
    let Some(ns) = Ns::new("history_in_redis_is_bounded_and_claim_history_answers_in_full") else { return };
    let store = ns.store();
    let ch = work::new_channel("web", "ops", "alice", Some(30), Some(1), T0).unwrap();
    store.insert_channel(&ch, &refusal(0)).unwrap();
    let take = TakeRequest { seat: "alice".into(), ..Default::default() };
    let mut row = work::take(None, &ch, &TaskAddress::new("web", "ops", "t1"), &take, T0).unwrap().claim;
    let audit = |verb: &str| AuditEntry { verb: verb.into(), result: "ok".into(), ..refusal(0) };
    let w = WorkClaimWrite {
        proof: None,
        expected_version: 0,
        action: "take".into(),
        audit: audit("claim.take"),
        events: vec![],
        row: row.clone(),
    };
    assert_eq!(store.write_work_claims(&[w]).unwrap(), vec![Commit::Done(row.version)]);
    const WRITES: usize = 3 * HISTORY_KEEP;
    for i in 0..WRITES {
        let next = touched(&row, &ch, T0 + 1 + i as Millis);
        let w = WorkClaimWrite {
            proof: None,
            expected_version: row.version,
            action: "touch".into(),
            audit: audit("claim.touch"),
            events: vec![],
            row: next.clone(),
        };
        assert_eq!(store.write_work_claims(&[w]).unwrap(), vec![Commit::Done(next.version)]);
        row = next;
    }
    let len: usize = redis::cmd("LLEN").arg(ns.key("p:web:hist:ops:t1")).query(&mut ns.redis()).unwrap();
    assert_eq!(len, HISTORY_KEEP, "Redis keeps the newest steps only");
    let history = store.work_claim_history("web", "ops", "t1").unwrap();
    assert_eq!(history.len(), WRITES + 1, "every step, the older ones from Postgres");
    let versions: Vec<u64> = history.iter().map(|s| s.claim.version).collect();
    assert_eq!(versions, (1..=(WRITES as u64 + 1)).collect::<Vec<_>>(), "oldest first, none twice");
    assert_eq!(history[0].action, "take");
}

/// The drill: a replica that never wins the drain lock again (another keeps the queue
/// moving) reports `degraded: false` once Postgres answers, instead of keeping the flag its
/// own failed drain set. Two stores on one Redis; the test plays the other replica, holding
/// the drain lock and keeping a fresh entry in the queue. On main `Drained::Busy` left the
/// flag set for good.
#[test]
fn a_replica_that_loses_the_drain_race_is_not_left_degraded() {
    let Some(ns) = Ns::new("a_replica_that_loses_the_drain_race_is_not_left_degraded") else { return };
    let proxy = Proxy::start(postgres_addr(&ns.postgres_url));
    let b = store_via(&ns, &proxy);
    let cb = coordinator(&b);
    cb.register("web", &unproven(&key("alice", "h1"))).unwrap();
    b.flush_postgres().unwrap();

    proxy.cut();
    cb.register("web", &unproven(&key("bob", "h2"))).unwrap();
    wait_until(Duration::from_secs(30), "b's own drain fails and marks it degraded", || {
        b.readiness().unwrap().degraded
    });
    // The other replica takes the drain lock (b releases it between its failed attempts).
    let mut r = ns.redis();
    wait_until(Duration::from_secs(30), "the other replica gets the drain lock", || {
        redis::cmd("SET")
            .arg(ns.key("pgq:lock"))
            .arg("other-replica")
            .arg("NX")
            .arg("PX")
            .arg(600_000)
            .query::<Option<String>>(&mut r)
            .unwrap()
            .is_some()
    });
    proxy.restore();
    // Postgres answers again; the other replica drains as traffic comes: the queue always
    // holds a fresh entry, never an old one, so b never sees it empty and never drains.
    let copy = ns.queue_copy();
    assert!(!copy.is_empty());
    wait_until(Duration::from_secs(60), "b reports degraded false", || {
        let old: Vec<String> = ns.queue_copy().into_iter().map(|(id, _)| id).collect();
        ns.requeue(&copy[..1]);
        if !old.is_empty() {
            redis::cmd("XDEL").arg(ns.key("pgq")).arg(&old).query::<i64>(&mut r).unwrap();
        }
        !b.readiness().unwrap().degraded
    });
    let _: i64 = redis::cmd("DEL").arg(ns.key("pgq:lock")).query(&mut r).unwrap();
    b.flush_postgres().unwrap();
}

/// The JSON lines a server wrote to stderr (`--log-format json`).
fn log_lines(stderr: &str) -> Vec<Value> {
    stderr.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect()
}

fn message(v: &Value) -> String {
    v["fields"]["message"].as_str().unwrap_or_default().to_string()
}

/// The drill: with Redis down, `/readyz` names Redis (not Postgres), the background writer
/// logs a Redis failure (on main: "postgres writes failing"), and five `/metrics` scrapes
/// log one WARN between them (on main: one per scrape), then one INFO when Redis is back.
#[test]
fn redis_down_is_named_redis_and_metrics_warn_once_per_outage() {
    let Some(ns) = Ns::new("redis_down_is_named_redis_and_metrics_warn_once_per_outage") else { return };
    let (_, target) = redis_via(&ns.redis_url, 0);
    let proxy = Proxy::start(target);
    let (via_proxy, _) = redis_via(&ns.redis_url, proxy.port);
    let home = tempfile::tempdir().unwrap();
    let args: Vec<String> = [
        "--redis",
        &via_proxy,
        "--postgres",
        &ns.postgres_url,
        "--namespace",
        &ns.name,
        "--log-format",
        "json",
        "--retention-interval-seconds",
        "0",
        "--sweep-interval-seconds",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut server = Server::start(home.path(), &args, &[]);
    let (status, _, body) = http_get(&format!("{}/metrics", server.url));
    assert_eq!(status, 200);
    assert_eq!(metric(&body, "writerctl_audit_queue_max_rows"), Some(100_000.0), "{body}");
    assert_eq!(metric(&body, "writerctl_audit_queue_dropped_total{kind=\"write\"}"), Some(0.0), "{body}");

    proxy.cut();
    let (status, _, body) = http_get(&format!("{}/readyz", server.url));
    assert_eq!(status, 503, "{body}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    let said = doc["error"]["message"].as_str().unwrap_or_default().to_lowercase();
    assert!(said.contains("redis") && !said.contains("postgres"), "{doc}");
    for _ in 0..5 {
        let (status, _, _) = http_get(&format!("{}/metrics", server.url));
        assert_eq!(status, 200, "a scrape still succeeds");
    }
    // The background writer polls the queue every few seconds and finds Redis gone.
    wait_until(Duration::from_secs(30), "the background writer logs the Redis outage", || {
        log_lines(&server.stderr()).iter().any(|l| message(l).starts_with("redis unreachable"))
    });
    proxy.restore();
    wait_until(Duration::from_secs(30), "a scrape succeeds again", || {
        let (status, _, body) = http_get(&format!("{}/metrics", server.url));
        status == 200 && body.contains("writerctl_store_degraded")
    });
    server.stop();
    let lines = log_lines(&server.stderr());
    let metrics_warns: Vec<&Value> =
        lines.iter().filter(|l| l["level"] == "WARN" && message(l).starts_with("metrics:")).collect();
    assert_eq!(metrics_warns.len(), 1, "one WARN for the outage, not one per scrape: {metrics_warns:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l["level"] == "INFO" && message(l).starts_with("metrics:") && message(l).contains("recovered")),
        "one INFO when the store answers again"
    );
    assert!(
        !lines.iter().any(|l| message(l).contains("postgres writes failing")),
        "a Redis outage is not reported as a Postgres one: {lines:#?}"
    );
}

/// Issue 28 point 4 (inboxes): `--inbox-max-events` is enforced on every append, not only by
/// the periodic prune, on both stores; the trim mark rises with it, so a reader behind it
/// gets `inbox_cursor_trimmed`, never a silent skip. On main an inbox grew without bound
/// between two prunes.
#[test]
fn the_inbox_bound_is_enforced_on_write() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Arc::new(SqliteStore::open(&dir.path().join("c.sqlite")).unwrap());
    sqlite.set_inbox_max_events(5);
    let mut stores: Vec<(&str, Arc<dyn Store>)> = vec![("sqlite", sqlite)];
    let ns = Ns::new("the_inbox_bound_is_enforced_on_write");
    if let Some(ns) = &ns {
        let store = ns.store();
        store.set_inbox_max_events(5);
        stores.push(("redis_pg", store));
    }
    for (name, store) in stores {
        let ch = work::new_channel("web", "ops", "alice", Some(30), Some(1), T0).unwrap();
        store.insert_channel(&ch, &refusal(0)).unwrap();
        let take = TakeRequest { seat: "alice".into(), ..Default::default() };
        let mut row = work::take(None, &ch, &TaskAddress::new("web", "ops", "t1"), &take, T0).unwrap().claim;
        let w = WorkClaimWrite {
            proof: None,
            expected_version: 0,
            action: "take".into(),
            audit: refusal(0),
            events: vec![],
            row: row.clone(),
        };
        store.write_work_claims(&[w]).unwrap();
        for i in 0..20 {
            let next = touched(&row, &ch, T0 + 1 + i);
            let bell = NewEvent {
                recipient: "steward".into(),
                recipient_session: None,
                kind: work::CLAIM_RELEASED.into(),
                payload: json!({"i": i}),
            };
            let w = WorkClaimWrite {
                proof: None,
                expected_version: row.version,
                action: "touch".into(),
                audit: refusal(0),
                events: vec![bell],
                row: next.clone(),
            };
            assert_eq!(store.write_work_claims(&[w]).unwrap(), vec![Commit::Done(next.version)], "{name}");
            row = next;
        }
        let held = store.inbox("web", "steward", 0, 100).unwrap();
        assert_eq!(held.len(), 5, "{name}: the newest five, kept on write");
        assert_eq!(held.iter().map(|e| e.payload["i"].as_i64().unwrap()).collect::<Vec<_>>(), vec![15, 16, 17, 18, 19]);
        let first = held[0].cursor;
        match store.inbox("web", "steward", 1, 100) {
            Err(e) => assert_eq!(e.code().as_str(), "inbox_cursor_trimmed", "{name}: {e}"),
            Ok(v) => panic!("{name}: a reader behind the trim got {} events silently", v.len()),
        }
        assert_eq!(store.inbox("web", "steward", first - 1, 100).unwrap().len(), 5, "{name}");
    }
}
