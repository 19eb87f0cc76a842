//! `inbox` (seed 000 #10): the MasterPreempted event's exact payload, the `--after` and
//! `--limit` cursor, and `--follow` with the `--timeout` it promises to honor.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::master::{Co, LIMIT, PASSWORD, PROJECT, assert_preempted, err_doc, keys, ok_doc, s, set};
use crate::support::Follower;

/// Seed #10: MasterPreempted's payload: exact keys, `reason` on both paths, `by_operator`
/// only on preempt.
pub(crate) fn check_seed_10(co: &Co) {
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    let carol = co.reg("carol");
    co.add_operator("ops", PASSWORD);

    ok_doc(&co.handoff(&alice, "bob", &[]));
    ok_doc(&co.claim("carol", "ops", PASSWORD, &[]));

    let a = co.events("alice");
    assert_eq!(a.len(), 1);
    assert_preempted(&a[0], &alice, &bob, 2, None);
    assert_eq!(
        keys(&a[0]["payload"]),
        set(&[
            "previous_master_identity",
            "previous_master_session_id",
            "new_master_identity",
            "new_master_session_id",
            "reason",
            "epoch"
        ])
    );
    let b = co.events("bob");
    assert_eq!(b.len(), 1);
    assert_preempted(&b[0], &bob, &carol, 3, Some("ops"));
    assert_eq!(b[0]["payload"]["by_operator"], "ops");
    assert!(b[0]["cursor"].as_u64() > a[0]["cursor"].as_u64());
    assert!(co.events("carol").is_empty());
    // The event names no secret and is MasterPreempted, never MasterChanged.
    let all = format!("{a:?}{b:?}");
    assert!(!all.contains(&alice.token) && !all.contains(&bob.token) && !all.contains(PASSWORD));
    assert!(!all.contains("MasterChanged"));
}

#[test]
fn seed_10_master_preempted_payload_shape() {
    check_seed_10(&Co::new());
}

/// `inbox --after` skips what was read; `--follow --timeout --json` prints, one compact JSON
/// object per line, an event produced while it runs, and exits 0 at the timeout.
#[test]
fn inbox_cursor_and_follow() {
    let co = Co::new();
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    co.add_operator("ops", PASSWORD);

    ok_doc(&co.handoff(&alice, "bob", &[])); // E1 -> alice
    ok_doc(&co.claim("alice", "ops", PASSWORD, &[])); // -> bob
    ok_doc(&co.handoff(&alice, "bob", &[])); // E2 -> alice

    let all = co.inbox("alice", 0);
    assert_eq!(keys(&all), set(&["events", "next_cursor"]));
    let evs = all["events"].as_array().unwrap().clone();
    assert_eq!(evs.len(), 2);
    assert_preempted(&evs[0], &alice, &bob, 2, None);
    assert_preempted(&evs[1], &alice, &bob, 4, None);
    let (c1, c2) = (evs[0]["cursor"].as_u64().unwrap(), evs[1]["cursor"].as_u64().unwrap());
    assert!(c1 < c2);
    assert_eq!(all["next_cursor"], c2);

    let after1 = co.inbox("alice", c1);
    assert_eq!(after1["events"], json!([evs[1]]));
    assert_eq!(after1["next_cursor"], c2);
    let after2 = co.inbox("alice", c2);
    assert_eq!(after2, json!({"events": [], "next_cursor": c2}));
    // --limit caps a read; the cursor says where to go on.
    let first = co.ok(&[
        "inbox",
        "--project",
        PROJECT,
        "--identity",
        "alice",
        "--token-file",
        s(&co.token_of("alice")),
        "--limit",
        "1",
    ]);
    assert_eq!(first, json!({"events": [evs[0]], "next_cursor": c1}));
    // bob's inbox is his own.
    let b = co.events("bob");
    assert_eq!(b.len(), 1);
    assert_preempted(&b[0], &bob, &alice, 3, Some("ops"));
    // The human view: one line per event.
    let r = co.run(&[
        "inbox",
        "--project",
        PROJECT,
        "--identity",
        "alice",
        "--token-file",
        s(&co.token_of("alice")),
        "--after",
        &c1.to_string(),
    ]);
    r.assert_ok();
    assert_eq!(
        r.stdout.trim_end(),
        format!(
            "#{c2} {} MasterPreempted: alice ({}) -> bob ({}), reason handoff, epoch 4",
            evs[1]["at"].as_str().unwrap(),
            alice.sid,
            bob.sid
        )
    );
    err_doc(
        &co.run(&[
            "inbox",
            "--project",
            PROJECT,
            "--identity",
            "alice",
            "--token-file",
            s(&co.token_of("alice")),
            "--timeout",
            "1",
            "--json",
        ]),
        2,
        "usage",
    );

    // --follow from cursor 0: the two old events first (which proves it is running), then
    // the one a handoff produces now.
    let follower = Follower::spawn(co.inbox_follow("alice", &["--timeout", "2"]));
    let l1 = follower.line(LIMIT);
    let l2 = follower.line(LIMIT);
    assert_eq!(serde_json::from_str::<Value>(&l1).unwrap(), evs[0], "{l1}");
    assert_eq!(serde_json::from_str::<Value>(&l2).unwrap(), evs[1], "{l2}");
    // While it runs: bob is master; make alice master and hand off again.
    ok_doc(&co.claim("alice", "ops", PASSWORD, &[]));
    ok_doc(&co.handoff(&alice, "bob", &[]));
    let l3 = follower.line(LIMIT);
    let rest = follower.finish(LIMIT);
    assert_eq!(rest.code, 0, "{rest:?}");
    assert_eq!(rest.stdout, "", "exactly three lines");
    for l in [&l1, &l2, &l3] {
        assert!(l.ends_with('\n') && !l.trim_end().contains('\n'), "one compact object per line: {l:?}");
    }
    let e3: Value = serde_json::from_str(&l3).unwrap_or_else(|e| panic!("{e}: {l3:?}"));
    assert_preempted(&e3, &alice, &bob, 6, None);
    assert!(e3["cursor"].as_u64().unwrap() > c2);
}

/// `inbox --follow --timeout SECONDS` promises to stop: a negative or NaN timeout must be
/// refused as a bad argument, not silently turned into "follow forever".
#[test]
fn inbox_follow_refuses_a_timeout_it_would_not_honor() {
    let co = Co::new();
    co.reg("alice");
    let children: Vec<(String, Child)> = ["--timeout=-1", "--timeout=NaN"]
        .iter()
        .map(|t| {
            let mut c = co.inbox_follow("alice", &[t]);
            c.stdout(Stdio::piped()).stderr(Stdio::piped());
            (t.to_string(), c.spawn().unwrap())
        })
        .collect();
    // Every child is reaped (killed if still following) before anything is asserted.
    let deadline = Instant::now() + Duration::from_secs(5);
    let outcomes: Vec<(String, Option<i32>)> = children
        .into_iter()
        .map(|(t, mut child)| {
            loop {
                if let Some(st) = child.try_wait().unwrap() {
                    break (t, Some(st.code().unwrap_or(-1)));
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break (t, None);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
        .collect();
    for (t, code) in outcomes {
        let code = code.unwrap_or_else(|| panic!("inbox --follow {t} was still following after 5 s"));
        assert_eq!(code, 2, "inbox --follow {t}");
    }
}
