//! `master handoff` (seed 000 #1, #2, #12): the master promotes a target and the previous
//! master hears of it, a non-master is refused, across machines, and promoting the current
//! master changes nothing.

use serde_json::{Value, json};

use crate::master::{Co, Ctl, PASSWORD, PROJECT, assert_preempted, err_doc, mref, ok_doc};

/// Seed #1: the master hands off; the target is promoted; MasterPreempted(reason=handoff)
/// reaches the previous master's inbox.
pub(crate) fn check_seed_01(co: &Co) {
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    co.assert_master(Some(&alice), 1);

    let v = ok_doc(&co.handoff(&alice, "bob", &["--expect-epoch", "1"]));
    assert_eq!(
        v,
        json!({"ok": true, "project": PROJECT, "previous_master": mref(&alice), "new_master": mref(&bob),
               "epoch": 2, "changed": true})
    );
    co.assert_master(Some(&bob), 2);

    let evs = co.events("alice");
    assert_eq!(evs.len(), 1, "{evs:#?}");
    assert_preempted(&evs[0], &alice, &bob, 2, None);
    assert_eq!(co.events("bob"), Vec::<Value>::new(), "the new master gets no event");

    // Without --expect-epoch the verb decides from the epoch it reads first.
    let v = ok_doc(&co.handoff(&bob, "alice", &[]));
    assert_eq!((&v["new_master"], &v["epoch"]), (&mref(&alice), &json!(3)));
    co.assert_master(Some(&alice), 3);
}

#[test]
fn seed_01_cooperative_handoff_promotes_target_and_emits_master_preempted_handoff() {
    check_seed_01(&Co::new());
}

/// Seed #2: a non-master's handoff is refused and changes nothing. Check order: a wrong
/// token is `unauthorized` and a stale epoch `stale_master` before `not_master`.
pub(crate) fn check_seed_02(co: &Co) {
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    co.reg("carol");

    err_doc(&co.handoff(&bob, "carol", &["--expect-epoch", "1"]), 3, "not_master");
    err_doc(&co.handoff(&bob, "carol", &[]), 3, "not_master");
    err_doc(&co.handoff(&bob, "bob", &["--expect-epoch", "1"]), 3, "not_master");
    // A target that does not even exist: the caller check comes first.
    err_doc(&co.handoff(&bob, "nobody", &["--expect-epoch", "1"]), 3, "not_master");
    // Epoch before master: the non-master with an old view learns the epoch moved.
    let e = err_doc(&co.handoff(&bob, "carol", &["--expect-epoch", "0"]), 3, "stale_master");
    assert_eq!((&e["expected_epoch"], &e["epoch"]), (&json!(0), &json!(1)));
    // Token before everything.
    let forged = Ctl { token_file: alice.token_file.clone(), ..bob.clone() };
    err_doc(&co.handoff(&forged, "carol", &["--expect-epoch", "0"]), 6, "unauthorized");

    co.assert_master(Some(&alice), 1);
    assert!(co.events("alice").is_empty() && co.events("bob").is_empty());
}

#[test]
fn seed_02_not_master_rejected() {
    check_seed_02(&Co::new());
}

/// Seed #12: handoff to an identity registered on another machine.
pub(crate) fn check_seed_12(co: &Co) {
    let alice = co.register("alice", "cli", "host-a");
    let bob = co.register("bob", "cli", "host-b");

    let v = ok_doc(&co.handoff(&alice, "bob", &["--expect-epoch", "1"]));
    assert_eq!(v["new_master"], mref(&bob));
    let st = co.assert_master(Some(&bob), 2);
    let row = st["controllers"].as_array().unwrap().iter().find(|c| c["session_id"] == json!(bob.sid)).unwrap();
    assert_eq!(row["machine_id"], "host-b");
    assert_preempted(&co.events("alice")[0], &alice, &bob, 2, None);

    // And back, from host-b to host-a.
    ok_doc(&co.handoff(&bob, "alice", &["--expect-epoch", "2"]));
    co.assert_master(Some(&alice), 3);

    // One identity on two machines: ambiguous, then picked by session.
    let d_a = co.register("dave", "cli", "host-a");
    let d_b = co.register("dave", "cli", "host-b");
    let e = err_doc(&co.handoff(&alice, "dave", &[]), 5, "target_ambiguous");
    let mut c = vec![d_a.sid.clone(), d_b.sid.clone()];
    c.sort();
    assert_eq!(e["candidates"], json!(c));
    ok_doc(&co.handoff(&alice, "dave", &["--to-session", &d_b.sid]));
    co.assert_master(Some(&d_b), 4);
}

#[test]
fn seed_12_cross_machine_handoff() {
    check_seed_12(&Co::new());
}

/// Handing off or claiming to the identity that already is master: ok, unchanged, no event.
#[test]
fn promoting_the_current_master_changes_nothing() {
    let co = Co::new();
    let alice = co.reg("alice");
    co.reg("bob");
    co.add_operator("ops", PASSWORD);

    let v = ok_doc(&co.handoff(&alice, "alice", &["--expect-epoch", "1"]));
    assert_eq!(
        v,
        json!({"ok": true, "project": PROJECT, "previous_master": mref(&alice), "new_master": mref(&alice),
               "epoch": 1, "changed": false})
    );
    let v = ok_doc(&co.claim("alice", "ops", PASSWORD, &["--expect-epoch", "1"]));
    assert_eq!(
        v,
        json!({"ok": true, "project": PROJECT, "previous_master": mref(&alice), "new_master": mref(&alice),
               "epoch": 1, "changed": false, "preempted": [], "by_operator": "ops"})
    );
    co.assert_master(Some(&alice), 1);
    assert!(co.events("alice").is_empty());
}
