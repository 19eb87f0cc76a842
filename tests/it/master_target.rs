//! How `master handoff` and `master claim` resolve `--to` / `--to-session` to one controller
//! row (seed 000 #3 to #6): not registered, stale, ambiguous, picked by session.

use std::time::Duration;

use serde_json::json;

use crate::master::{Co, PASSWORD, PROJECT, assert_preempted, err_doc, mref, ok_doc, s};

/// Seed #3: a target identity with no registered row.
pub(crate) fn check_seed_03(co: &Co) {
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    co.add_operator("ops", PASSWORD);

    err_doc(&co.handoff(&alice, "ghost", &["--expect-epoch", "1"]), 5, "target_not_registered");
    err_doc(&co.claim("ghost", "ops", PASSWORD, &["--expect-epoch", "1"]), 5, "target_not_registered");
    // A --to-session that names no row, or a row of another identity.
    err_doc(&co.handoff(&alice, "bob", &["--to-session", "no-such-session"]), 5, "target_not_registered");
    err_doc(&co.handoff(&alice, "carol", &["--to-session", &bob.sid]), 5, "target_not_registered");
    // Another project's rows are not this project's.
    let dave_key = co.key_file_in("other", "dave");
    co.ok(&[
        "session",
        "register",
        "--project",
        "other",
        "--identity",
        "dave",
        "--machine",
        "m1",
        "--identity-key-file",
        s(&dave_key),
    ]);
    err_doc(&co.handoff(&alice, "dave", &[]), 5, "target_not_registered");

    co.assert_master(Some(&alice), 1);
    assert!(co.events("alice").is_empty());
}

#[test]
fn seed_03_target_not_registered() {
    check_seed_03(&Co::new());
}

/// Seed #4: every row of the target identity aged out of the freshness threshold.
pub(crate) fn check_seed_04(co: &Co) {
    let alice = co.reg("alice");
    let bob_cli = co.register("bob", "cli", "m1");
    let bob_ide = co.register("bob", "ide", "m1");
    co.add_operator("ops", PASSWORD);
    std::thread::sleep(Duration::from_millis(1500));

    let mut stale = vec![bob_cli.sid.clone(), bob_ide.sid.clone()];
    stale.sort();
    let e = err_doc(&co.handoff(&alice, "bob", &["--freshness-seconds", "1"]), 5, "target_stale");
    assert_eq!(e["stale_sessions"], json!(stale), "{e:#}");
    let e = err_doc(&co.claim("bob", "ops", PASSWORD, &["--freshness-seconds", "1"]), 5, "target_stale");
    assert_eq!(e["stale_sessions"], json!(stale), "{e:#}");

    let st = co.ok(&["master", "status", "--project", PROJECT, "--freshness-seconds", "1"]);
    assert_eq!(st["freshness_seconds"], 1);
    assert!(st["controllers"].as_array().unwrap().iter().all(|c| c["fresh"] == false), "{st:#}");
    // At the default threshold (30 s) the same rows are fresh (and so ambiguous).
    let st = co.status();
    assert_eq!(st["freshness_seconds"], 30);
    assert!(st["controllers"].as_array().unwrap().iter().all(|c| c["fresh"] == true), "{st:#}");
    // 0 is below the minimum.
    let r = co.run(&["master", "status", "--project", PROJECT, "--freshness-seconds", "0", "--json"]);
    err_doc(&r, 2, "usage");
    co.assert_master(Some(&alice), 1);

    // One heartbeat makes that row the single fresh candidate.
    co.ok(&[
        "session",
        "heartbeat",
        "--project",
        PROJECT,
        "--session",
        &bob_ide.sid,
        "--token-file",
        s(&bob_ide.token_file),
    ]);
    let v = ok_doc(&co.handoff(&alice, "bob", &["--freshness-seconds", "1"]));
    assert_eq!(v["new_master"], mref(&bob_ide));
    co.assert_master(Some(&bob_ide), 2);
}

#[test]
fn seed_04_target_stale() {
    check_seed_04(&Co::new());
}

/// Seed #5: several fresh rows for the identity and no --to-session: the error lists them.
pub(crate) fn check_seed_05(co: &Co) {
    let alice = co.reg("alice");
    let c1 = co.register("carol", "cli", "m1");
    let c2 = co.register("carol", "ide", "m1");
    let c3 = co.register("carol", "cli", "m2");
    co.add_operator("ops", PASSWORD);
    let mut candidates = vec![c1.sid, c2.sid, c3.sid];
    candidates.sort();

    let e = err_doc(&co.handoff(&alice, "carol", &["--expect-epoch", "1"]), 5, "target_ambiguous");
    assert_eq!(e["candidates"], json!(candidates), "{e:#}");
    let e = err_doc(&co.claim("carol", "ops", PASSWORD, &["--expect-epoch", "1"]), 5, "target_ambiguous");
    assert_eq!(e["candidates"], json!(candidates), "{e:#}");
    co.assert_master(Some(&alice), 1);
    assert!(co.events("alice").is_empty());
}

#[test]
fn seed_05_target_ambiguous_lists_candidates() {
    check_seed_05(&Co::new());
}

/// Seed #6: --to-session picks that row even though others of the identity are fresh.
pub(crate) fn check_seed_06(co: &Co) {
    let alice = co.reg("alice");
    co.register("carol", "cli", "m1");
    let c2 = co.register("carol", "ide", "m1");
    let c3 = co.register("carol", "cli", "m2");
    co.add_operator("ops", PASSWORD);

    let v = ok_doc(&co.handoff(&alice, "carol", &["--to-session", &c2.sid, "--expect-epoch", "1"]));
    assert_eq!((&v["new_master"], &v["epoch"]), (&mref(&c2), &json!(2)));
    co.assert_master(Some(&c2), 2);
    assert_preempted(&co.events("alice")[0], &alice, &c2, 2, None);

    let v = ok_doc(&co.claim("carol", "ops", PASSWORD, &["--to-session", &c3.sid, "--expect-epoch", "2"]));
    assert_eq!((&v["new_master"], &v["epoch"]), (&mref(&c3), &json!(3)));
    co.assert_master(Some(&c3), 3);
    // The event goes to the previous master's identity (carol), addressed to its session.
    let evs = co.events("carol");
    assert_eq!(evs.len(), 1);
    assert_preempted(&evs[0], &c2, &c3, 3, Some("ops"));
}

#[test]
fn seed_06_to_session_disambiguates() {
    check_seed_06(&Co::new());
}
