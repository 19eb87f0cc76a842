//! The Redis + Postgres store (issue 7) through the real engine: Redis first and
//! authoritative, Postgres second through a durable retry queue, cold restore, operators.
//!
//! Services: Redis at `WRITERCTL_TEST_REDIS_URL` (default redis://127.0.0.1:6379) and
//! PostgreSQL at `WRITERCTL_TEST_POSTGRES_URL` (default postgres://postgres@127.0.0.1:5432/test).
//! Each test uses its own namespace (Redis key prefix and Postgres schema) and removes it
//! afterwards. Unreachable services skip a test loudly, or fail it under
//! `WRITERCTL_REQUIRE_SERVICES=1` (CI).

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::services::{DEFAULT_POSTGRES, DEFAULT_REDIS, Ns, Proxy, counts, postgres_addr, redis_via, wait_until};
use crate::support_api::{claim_by, handoff_by, unproven};
use writerctl::claim::ClaimError;
use writerctl::claim::clock::{ManualClock, SystemClock};
use writerctl::claim::engine::{Coordinator, DEFAULT_FRESHNESS, Registered};
use writerctl::claim::masters::{ControllerKey, OperatorRequest, RegisterRequest};
use writerctl::claim::model::{AuditEntry, Change, Controller, Snapshot};
use writerctl::claim::secret::Secret;
use writerctl::claim::stores::redis_pg::RedisPgStore;
use writerctl::claim::stores::{Commit, ProjectWrite, Store};

const PASSWORD: &str = "correct horse battery staple";
const T0: i64 = 1_700_000_000_000;

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

fn key(identity: &str, machine: &str) -> ControllerKey {
    ControllerKey { identity: identity.into(), surface: "cli".into(), machine_id: machine.into() }
}

fn operator(id: &str, password: &str) -> OperatorRequest {
    OperatorRequest { operator_id: id.into(), password: password.into() }
}

fn pw(s: &str) -> Secret {
    Secret::new(s.into())
}

fn manual(store: &Arc<RedisPgStore>) -> Coordinator {
    // Open registration: these tests are about the store; enrollment has its own tests.
    Coordinator::new(store.clone(), Arc::new(ManualClock::at(T0)), DEFAULT_FRESHNESS).with_open_registration(true)
}

// ---------------------------------------------------------------------------------------
// tests
// ---------------------------------------------------------------------------------------

#[test]
fn register_handoff_claim_round_trip() {
    let Some(ns) = Ns::new("register_handoff_claim_round_trip") else { return };
    let store = ns.store();
    let c = manual(&store);
    let a = c.register("web", &unproven(&key("alice", "h1"))).unwrap();
    assert!(a.controller.is_master && a.epoch == 1, "the first registrant becomes master");
    let b = c.register("web", &unproven(&key("bob", "h2"))).unwrap();

    let out = c.handoff("web", &handoff_by(&a, "bob", 1), &a.token).unwrap();
    assert_eq!((out.epoch, out.new_master.session_id.as_str()), (2, b.controller.session_id.as_str()));
    let st = c.status("web").unwrap();
    assert_eq!(st.slot.master.as_ref().unwrap().session_id, b.controller.session_id, "status reflects it at once");
    assert_eq!(st.slot.epoch, 2);

    let inbox = c.inbox("web", "alice", 0, 10, Some(&a.token)).unwrap();
    assert_eq!(inbox.len(), 1);
    let ev = &inbox[0];
    assert_eq!(ev.kind, "MasterPreempted");
    assert_eq!(ev.recipient_session.as_deref(), Some(a.controller.session_id.as_str()));
    assert_eq!(ev.payload["reason"], "handoff");
    assert_eq!(ev.payload["epoch"], 2);
    assert_eq!(ev.payload["new_master_session_id"], json!(b.controller.session_id));
    assert!(ev.payload.get("by_operator").is_none(), "by_operator only on preempt");
    assert!(ev.cursor > 0 && ev.at == T0);
    assert!(c.inbox("web", "alice", ev.cursor, 10, Some(&a.token)).unwrap().is_empty(), "read on after the cursor");

    assert!(matches!(c.handoff("web", &handoff_by(&a, "bob", 2), &a.token), Err(ClaimError::NotMaster { .. })));

    c.add_operator(&operator("ops", PASSWORD)).unwrap();
    let out = c.master_claim("web", &claim_by("ops", PASSWORD, "alice", 2)).unwrap();
    assert_eq!((out.epoch, out.new_master.session_id.as_str()), (3, a.controller.session_id.as_str()));
    let bob_inbox = c.inbox("web", "bob", 0, 10, Some(&b.token)).unwrap();
    assert_eq!(bob_inbox.len(), 1);
    assert_eq!(bob_inbox[0].payload["reason"], "preempt");
    assert_eq!(bob_inbox[0].payload["by_operator"], "ops");
    assert!(bob_inbox[0].cursor > ev.cursor, "one cursor sequence across inboxes");

    assert_eq!(
        c.handoff("web", &handoff_by(&a, "bob", 2), &a.token).unwrap_err(),
        ClaimError::StaleMaster { expected: 2, actual: 3 }
    );

    // Postgres catches up: the same state, and every verb audited once.
    store.flush_postgres().unwrap();
    assert_eq!(store.pending_postgres_writes().unwrap(), 0);
    let snap = store.snapshot("web").unwrap();
    assert_eq!(ns.pg_controllers("web"), snap.controllers);
    assert_eq!(ns.pg_head("web"), (snap.version as i64, 3, Some(a.controller.session_id.clone())));
    let verbs: Vec<(String, String)> =
        c.audit_log(Some("web"), 100).unwrap().into_iter().map(|e| (e.verb, e.result)).collect();
    let expected = [
        ("session.register", "ok"),
        ("session.register", "ok"),
        ("master.handoff", "ok"),
        ("master.handoff", "not_master"),
        ("master.claim", "ok"),
        ("master.handoff", "stale_master"),
    ];
    assert_eq!(verbs, expected.iter().map(|(v, r)| (v.to_string(), r.to_string())).collect::<Vec<_>>());
    assert_eq!(store.dead_postgres_writes().unwrap(), 0);
}

#[test]
fn concurrent_verbs_on_one_epoch_have_exactly_one_winner() {
    const THREADS: usize = 16;
    const TRIALS: usize = 30;
    let Some(ns) = Ns::new("concurrent_verbs_on_one_epoch_have_exactly_one_winner") else { return };
    // One store per thread: separate Redis and Postgres connections, as separate replicas.
    let coords: Vec<Arc<Coordinator>> = (0..THREADS)
        .map(|_| {
            Arc::new(
                Coordinator::new(ns.store(), Arc::new(SystemClock), DEFAULT_FRESHNESS).with_open_registration(true),
            )
        })
        .collect();
    // One operator per thread: the throttle counts one operator's parallel attempts (even
    // right ones) and would serialize them; this test is about the epoch CAS.
    for i in 0..THREADS {
        coords[0].add_operator(&operator(&format!("ops{i}"), PASSWORD)).unwrap();
    }
    for trial in 0..TRIALS {
        let project = format!("cas-{trial}");
        let alice = coords[0].register(&project, &unproven(&key("alice", "h0"))).unwrap();
        let targets: Vec<Registered> = (0..THREADS)
            .map(|i| coords[i].register(&project, &unproven(&key(&format!("t{i}"), "h1"))).unwrap())
            .collect();
        // Odd trials race operator claims, even trials race handoffs by the master.
        let by_claim = trial % 2 == 1;
        let barrier = Arc::new(Barrier::new(THREADS));
        let alice = Arc::new(alice);
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let (c, barrier, alice, project) = (coords[i].clone(), barrier.clone(), alice.clone(), project.clone());
                thread::spawn(move || {
                    let (to, op) = (format!("t{i}"), format!("ops{i}"));
                    let (by_operator, by_master) =
                        (claim_by(&op, PASSWORD, &to, alice.epoch), handoff_by(&alice, &to, alice.epoch));
                    barrier.wait();
                    let result = if by_claim {
                        c.master_claim(&project, &by_operator)
                    } else {
                        c.handoff(&project, &by_master, &alice.token)
                    };
                    // None: this thread won.
                    result.err()
                })
            })
            .collect();
        let results: Vec<Option<ClaimError>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let winners: Vec<usize> = results.iter().enumerate().filter(|(_, r)| r.is_none()).map(|(i, _)| i).collect();
        assert_eq!(winners.len(), 1, "trial {trial}: {results:?}");
        for (i, r) in results.iter().enumerate().filter(|(i, _)| *i != winners[0]) {
            assert_eq!(
                r.as_ref(),
                Some(&ClaimError::StaleMaster { expected: 1, actual: 2 }),
                "trial {trial} thread {i}"
            );
        }
        let snap = coords[0].store().snapshot(&project).unwrap();
        assert_eq!(snap.slot.epoch, 2);
        assert_eq!(snap.slot.master.unwrap().session_id, targets[winners[0]].controller.session_id);
        assert_eq!(snap.controllers.iter().filter(|c| c.is_master).count(), 1);
        assert_eq!(
            coords[0].inbox(&project, "alice", 0, 100, Some(&alice.token)).unwrap().len(),
            1,
            "losers wrote no event"
        );
    }
    // Every replica's queue entries reach Postgres exactly once.
    let store = ns.store();
    store.flush_postgres().unwrap();
    for trial in 0..TRIALS {
        let verb = if trial % 2 == 1 { "master.claim" } else { "master.handoff" };
        let project = format!("cas-{trial}");
        assert_eq!(
            ns.pg_audit_counts(&project),
            counts(&[
                ("session.register", "ok", THREADS as i64 + 1),
                (verb, "ok", 1),
                (verb, "stale_master", THREADS as i64 - 1)
            ]),
            "{project}"
        );
        assert_eq!(ns.pg_controllers(&project), store.snapshot(&project).unwrap().controllers);
    }
}

#[test]
fn redis_first_while_postgres_is_unreachable() {
    let Some(ns) = Ns::new("redis_first_while_postgres_is_unreachable") else { return };
    let proxy = Proxy::start(postgres_addr(&ns.postgres_url));
    let via_proxy = proxy.postgres_url(&ns.postgres_url);
    let store = Arc::new(RedisPgStore::connect(&ns.redis_url, &via_proxy, &ns.name).unwrap());
    let c = manual(&store);
    let a = c.register("web", &unproven(&key("alice", "h1"))).unwrap();
    let b = c.register("web", &unproven(&key("bob", "h2"))).unwrap();
    store.flush_postgres().unwrap();

    proxy.cut();
    let started = Instant::now();
    let out = c.handoff("web", &handoff_by(&a, "bob", 1), &a.token).unwrap();
    assert_eq!(out.epoch, 2);
    let st = c.status("web").unwrap();
    assert_eq!(st.slot.master.unwrap().session_id, b.controller.session_id, "routing changed at once");
    assert!(matches!(c.handoff("web", &handoff_by(&a, "alice", 2), &a.token), Err(ClaimError::NotMaster { .. })));
    c.heartbeat("web", &b.controller.session_id, &b.token).unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "degraded verbs stay fast: {:?}", started.elapsed());
    assert!(store.pending_postgres_writes().unwrap() >= 3);
    assert!(matches!(store.flush_postgres(), Err(ClaimError::Unavailable(_))));
    assert!(matches!(store.operator("ops"), Err(ClaimError::Unavailable(_))));
    assert!(matches!(store.health(), Err(ClaimError::Unavailable(_))));
    // A replica starting now still serves: Redis holds the state.
    let late = RedisPgStore::connect(&ns.redis_url, &via_proxy, &ns.name).unwrap();
    assert_eq!(late.snapshot("web").unwrap(), store.snapshot("web").unwrap());
    drop(late);
    // Keep a copy of the queue to replay later, as a drainer that died before XDEL would.
    let queued = ns.queue_copy();
    assert_eq!(queued.len() as u64, store.pending_postgres_writes().unwrap());

    proxy.restore();
    // The background writer retries on its own (backoff capped at 5 s).
    wait_until(Duration::from_secs(15), "the background writer drains the queue", || {
        store.pending_postgres_writes().unwrap() == 0
    });
    ns.requeue(&queued);
    store.flush_postgres().unwrap();
    assert_eq!(store.pending_postgres_writes().unwrap(), 0);
    assert_eq!(store.dead_postgres_writes().unwrap(), 0);
    assert_eq!(
        ns.pg_audit_counts("web"),
        counts(&[("session.register", "ok", 2), ("master.handoff", "ok", 1), ("master.handoff", "not_master", 1),]),
        "each audit row exactly once, replays included (a routine heartbeat writes its row state, no audit row)"
    );
    let snap = store.snapshot("web").unwrap();
    assert_eq!(ns.pg_controllers("web"), snap.controllers, "replayed older entries did not regress the rows");
    assert_eq!(ns.pg_head("web"), (snap.version as i64, 2, Some(b.controller.session_id.clone())));
    store.health().unwrap();
}

#[test]
fn redis_down_means_unavailable_and_audit_rows_go_to_postgres_directly() {
    let Some(ns) = Ns::new("redis_down_means_unavailable_and_audit_rows_go_to_postgres_directly") else { return };
    let (_, target) = redis_via(&ns.redis_url, 0);
    let proxy = Proxy::start(target);
    let (via_proxy, _) = redis_via(&ns.redis_url, proxy.port);
    let store = Arc::new(RedisPgStore::connect(&via_proxy, &ns.postgres_url, &ns.name).unwrap());
    let c = manual(&store);
    let a = c.register("web", &unproven(&key("alice", "h1"))).unwrap();
    c.register("web", &unproven(&key("bob", "h2"))).unwrap();

    proxy.cut();
    let started = Instant::now();
    assert!(matches!(c.status("web"), Err(ClaimError::Unavailable(_))));
    let e = c.handoff("web", &handoff_by(&a, "bob", 1), &a.token).unwrap_err();
    assert!(matches!(e, ClaimError::Unavailable(_)), "{e:?}");
    assert_eq!(e.code().as_str(), "coordinator_unavailable");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // The failed handoff's audit row could not be queued in Redis: it went to Postgres.
    assert_eq!(
        ns.pg_audit_counts("web").get(&("master.handoff".to_string(), "coordinator_unavailable".to_string())),
        Some(&1)
    );

    proxy.restore();
    assert_eq!(c.status("web").unwrap().slot.epoch, 1, "the pool reconnects once Redis is back");
    c.handoff("web", &handoff_by(&a, "bob", 1), &a.token).unwrap();
    store.flush_postgres().unwrap();
    assert_eq!(ns.pg_controllers("web"), store.snapshot("web").unwrap().controllers);
}

#[test]
fn cold_restore_from_postgres_keeps_epoch_and_version() {
    let Some(ns) = Ns::new("cold_restore_from_postgres_keeps_epoch_and_version") else { return };
    let store = ns.store();
    let c = manual(&store);
    let a = c.register("web", &unproven(&key("alice", "h1"))).unwrap();
    let b = c.register("web", &unproven(&key("bob", "h2"))).unwrap();
    let carol = c.register("web", &unproven(&key("carol", "h3"))).unwrap();
    c.handoff("web", &handoff_by(&a, "bob", 1), &a.token).unwrap();
    c.deregister("web", &carol.controller.session_id, &carol.token).unwrap();
    c.register("api", &unproven(&key("alice", "h1"))).unwrap();
    let last_cursor = c.inbox("web", "alice", 0, 10, Some(&a.token)).unwrap()[0].cursor;
    store.flush_postgres().unwrap();
    let web = store.snapshot("web").unwrap();
    let api = store.snapshot("api").unwrap();
    assert_eq!((web.slot.epoch, web.version), (2, 5));

    // A restore resumes each epoch EPOCH_RESTORE_GAP above Postgres's: an epoch Redis handed
    // out before losing its data (and Postgres never saw) is never handed out again.
    const G: u64 = writerctl::claim::stores::redis_pg::EPOCH_RESTORE_GAP;
    let bumped = |mut s: writerctl::claim::model::Snapshot| {
        s.slot.epoch += G;
        s
    };
    ns.wipe_redis();
    let fresh = ns.store();
    assert_eq!(fresh.snapshot("web").unwrap(), bumped(web.clone()));
    assert_eq!(fresh.snapshot("api").unwrap(), bumped(api.clone()));
    assert_eq!(fresh.restore_from_postgres().unwrap(), 0, "a second restore finds nothing missing");

    // Verbs go on from the restored state: bob's token still works, the epoch grows from there;
    // the pre-loss epoch is stale.
    let c2 = manual(&fresh);
    assert!(matches!(c2.handoff("web", &handoff_by(&b, "alice", 2), &b.token), Err(ClaimError::StaleMaster { .. })));
    let out = c2.handoff("web", &handoff_by(&b, "alice", 2 + G), &b.token).unwrap();
    assert_eq!(out.epoch, 3 + G);
    let after = fresh.snapshot("web").unwrap();
    assert_eq!(after.version, web.version + 1);
    let ev = c2.inbox("web", "bob", 0, 10, Some(&b.token)).unwrap();
    assert!(ev[0].cursor > last_cursor, "cursors never go back across a restore");
    fresh.flush_postgres().unwrap();

    // A store that was running when Redis lost its data restores before deciding anything.
    ns.wipe_redis();
    assert_eq!(store.snapshot("web").unwrap(), bumped(after.clone()));
    let out = c.handoff("web", &handoff_by(&a, "bob", 3 + 2 * G), &a.token).unwrap();
    assert_eq!(out.epoch, 4 + 2 * G);
    // A commit that meets an emptied Redis writes nothing, restores, and reports a conflict
    // so that the caller decides again on the restored state.
    store.flush_postgres().unwrap();
    let before = store.snapshot("web").unwrap();
    ns.wipe_redis();
    let intruder = Controller { session_id: "x".into(), ..before.controllers[0].clone() };
    let change = Change { upsert: vec![intruder], ..Change::default() };
    let audit = AuditEntry {
        at: T0,
        project: "web".into(),
        verb: "test".into(),
        actor: "local".into(),
        target: None,
        result: "ok".into(),
        epoch: None,
        detail: json!({}),
        request: None,
        reason: None,
    };
    let write = ProjectWrite { project: "web", expected_version: before.version, change: &change, audit: Some(&audit) };
    assert_eq!(store.commit(write).unwrap(), Commit::Conflict);
    assert_eq!(store.snapshot("web").unwrap(), bumped(before.clone()));
    // Through the engine the same happens inside the CAS loop.
    ns.wipe_redis();
    let d = c.register("web", &unproven(&key("dave", "h4"))).unwrap();
    assert!(!d.controller.is_master, "decided on the restored state, where bob is master");
    assert_eq!(d.epoch, 4 + 3 * G);
    assert_eq!(store.snapshot("web").unwrap().controllers.len(), 3);
}

#[test]
fn entries_postgres_refuses_are_set_aside_and_the_rest_go_on() {
    let Some(ns) = Ns::new("entries_postgres_refuses_are_set_aside_and_the_rest_go_on") else { return };
    let store = ns.store();
    let c = manual(&store);
    let a = c.register("web", &unproven(&key("alice", "h1"))).unwrap();
    store.flush_postgres().unwrap();
    let mut r = ns.redis();
    // An entry that does not decode, and one whose state breaks the UNIQUE natural key (two
    // sessions for one (identity, surface, machine)), at a version above every real one.
    redis::cmd("XADD")
        .arg(ns.key("pgq"))
        .arg("*")
        .arg("op")
        .arg("junk")
        .arg("audit")
        .arg("{")
        .query::<String>(&mut r)
        .unwrap();
    let twin = Controller { session_id: "twin".into(), ..a.controller.clone() };
    let audit = json!({"at": T0, "project": "web", "verb": "forged", "actor": "local", "target": null,
                       "result": "ok", "epoch": 1, "detail": {}});
    redis::cmd("XADD")
        .arg(ns.key("pgq"))
        .arg("*")
        .arg(&[("op", "forged"), ("project", "web"), ("version", "99"), ("epoch", "1"), ("cursor", "0")])
        .arg("audit")
        .arg(audit.to_string())
        .arg("controllers")
        .arg(serde_json::to_string(&[a.controller.clone(), twin]).unwrap())
        .query::<String>(&mut r)
        .unwrap();
    // A real verb behind them, drained in the same batch.
    c.register("web", &unproven(&key("bob", "h2"))).unwrap();
    store.flush_postgres().unwrap();
    assert_eq!(store.pending_postgres_writes().unwrap(), 0);
    assert_eq!(store.dead_postgres_writes().unwrap(), 2);
    let snap = store.snapshot("web").unwrap();
    assert_eq!(ns.pg_controllers("web"), snap.controllers, "the refused newer state did not hide bob's");
    assert_eq!(ns.pg_head("web").0, snap.version as i64);
    assert_eq!(
        ns.pg_audit_counts("web"),
        counts(&[("session.register", "ok", 2), ("forged", "ok", 1)]),
        "audit rows go in on their own; only the forged state was refused"
    );
}

#[test]
fn operators_live_in_postgres_and_are_never_overwritten() {
    let Some(ns) = Ns::new("operators_live_in_postgres_and_are_never_overwritten") else { return };
    let store = ns.store();
    let c = manual(&store);
    c.add_operator(&operator("ops", "one")).unwrap();
    assert_eq!(c.add_operator(&operator("ops", "two")), Err(ClaimError::OperatorExists("ops".into())));
    let rec = store.operator("ops").unwrap().unwrap();
    assert!(writerctl::claim::secret::verify_password(&rec.password_hash, &pw("one")));
    assert_eq!(rec.created_at, T0);
    assert_eq!(store.operator("nobody").unwrap(), None);
    // Failures count for known and unknown ids alike, and decay with time.
    let decay = writerctl::claim::secret::FAILURE_DECAY_MS;
    for n in 1..=3 {
        assert_eq!(store.record_failure("ops", T0 + i64::from(n)).unwrap(), n);
    }
    assert_eq!(store.record_failure("ops", T0 + 3 + 2 * decay).unwrap(), 2, "two quiet minutes forgave two");
    store.attempt_succeeded("ops").unwrap();
    assert_eq!(store.record_failure("ops", T0 + 9 + 2 * decay).unwrap(), 1);
    assert_eq!(store.record_failure("nobody", T0).unwrap(), 1);
    assert_eq!(store.record_failure("nobody", T0).unwrap(), 2);
    assert_eq!(store.record_failure("nobody", T0 + 100 * decay).unwrap(), 1, "never below one new failure");
    let n: i64 = ns.pg().query_one(&format!("SELECT count(*) FROM \"{}\".operators", ns.name), &[]).unwrap().get(0);
    assert_eq!(n, 1);
    let adds: Vec<String> =
        c.audit_log(None, 100).unwrap().into_iter().filter(|e| e.verb == "operator.add").map(|e| e.result).collect();
    assert_eq!(adds, ["ok", "operator_exists"]);
    // The audit log is append-only in Postgres itself.
    let err = ns.pg().batch_execute(&format!("DELETE FROM \"{}\".audit", ns.name)).unwrap_err();
    assert!(err.to_string().contains("db error"), "{err}");
}

#[test]
fn registration_keeps_one_controller_status_row_per_key() {
    let Some(ns) = Ns::new("registration_keeps_one_controller_status_row_per_key") else { return };
    let store = ns.store();
    let c = manual(&store);
    let first = c.register("web", &unproven(&key("alice", "h1"))).unwrap();
    // A live row is re-registered only with its current token.
    assert_eq!(c.register("web", &unproven(&key("alice", "h1"))).unwrap_err().code().as_str(), "unauthorized");
    let mut prev = first.token.clone();
    for _ in 0..3 {
        let again = c.register("web", &RegisterRequest::of(&key("alice", "h1"), None, Some(&prev))).unwrap();
        assert_eq!(again.controller.session_id, first.controller.session_id, "the UPSERT keeps the row");
        prev = again.token;
    }
    let other_machine = c.register("web", &unproven(&key("alice", "h2"))).unwrap();
    let ide = c
        .register(
            "web",
            &unproven(&ControllerKey { identity: "alice".into(), surface: "ide".into(), machine_id: "h1".into() }),
        )
        .unwrap();
    assert_ne!(other_machine.controller.session_id, first.controller.session_id);
    assert_ne!(ide.controller.session_id, first.controller.session_id);
    // Leave and come back under the same key: a new session id, still one row for the key.
    let latest = c.register("web", &RegisterRequest::of(&key("alice", "h1"), None, Some(&prev))).unwrap();
    c.deregister("web", &latest.controller.session_id, &latest.token).unwrap();
    let back = c.register("web", &unproven(&key("alice", "h1"))).unwrap();
    assert_ne!(back.controller.session_id, first.controller.session_id);
    store.flush_postgres().unwrap();
    let rows = ns.pg_controllers("web");
    assert_eq!(rows, store.snapshot("web").unwrap().controllers);
    let mut keys: Vec<(String, String, String)> =
        rows.iter().map(|r| (r.identity.clone(), r.surface.clone(), r.machine_id.clone())).collect();
    keys.sort();
    keys.dedup();
    assert_eq!((rows.len(), keys.len()), (3, 3));
}

#[test]
fn unreachable_services_answer_unavailable_fast() {
    let started = Instant::now();
    let e = RedisPgStore::connect("redis://127.0.0.1:1", DEFAULT_POSTGRES, "t_unreachable").unwrap_err();
    assert!(matches!(e, ClaimError::Unavailable(_)), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    for bad in ["", "Upper", "a-b", "pg_x"] {
        assert!(matches!(
            RedisPgStore::connect(DEFAULT_REDIS, DEFAULT_POSTGRES, bad),
            Err(ClaimError::InvalidArgument(a)) if a.field == "namespace"
        ));
    }
    let Some(ns) = Ns::new("unreachable_services_answer_unavailable_fast") else { return };
    // Redis up but Postgres down and the namespace never restored: refusing beats serving
    // an empty state as the truth.
    let started = Instant::now();
    let e = RedisPgStore::connect(&ns.redis_url, "postgres://postgres@127.0.0.1:1/test", &ns.name).unwrap_err();
    assert!(matches!(e, ClaimError::Unavailable(_)), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// The snapshot a second store reads equals the first's: nothing lives in process memory.
#[test]
fn two_stores_see_one_state() {
    let Some(ns) = Ns::new("two_stores_see_one_state") else { return };
    let (s1, s2) = (ns.store(), ns.store());
    let c = manual(&s1);
    c.register("web", &unproven(&key("alice", "h1"))).unwrap();
    let snap: Snapshot = s2.snapshot("web").unwrap();
    assert_eq!(snap, s1.snapshot("web").unwrap());
    assert_eq!(snap.version, 1);
    assert_eq!(s2.snapshot("elsewhere").unwrap(), Snapshot { project: "elsewhere".into(), ..Snapshot::default() });
}
