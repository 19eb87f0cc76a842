//! `session register`, `session heartbeat` and `session deregister` (seed 000, SPEC-082):
//! one row per (project, identity, surface, machine), the session token each verb proves,
//! and the first registrant of a project becoming master.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::master::{Co, Ctl, PASSWORD, PROJECT, Racer, err_doc, keys, ok_doc, race, s, set, strings};
use crate::support::Run;

/// Register is an UPSERT on (project, identity, surface, machine): same key, same row and
/// a rotated token; another surface or machine is another row.
#[test]
fn upsert_keeps_one_row_per_key() {
    let co = Co::new();
    let first = co.register("alice", "cli", "m1");
    // The row is live: re-registering its key needs its token (else anyone could take the
    // master's session), with a clear refusal.
    let r = co.run(&["session", "register", "--project", PROJECT, "--identity", "alice", "--machine", "m1", "--json"]);
    err_doc(&r, 6, "unauthorized");
    let again = co.reregister(&first, "cli", "m1");
    assert_eq!(again.sid, first.sid, "same key, same session id");
    assert_ne!(again.token, first.token, "the token rotates");
    // Still master, epoch unchanged.
    co.assert_master(Some(&again), 1);

    let hb = |c: &Ctl, tok: &Path| {
        co.run(&["session", "heartbeat", "--project", PROJECT, "--session", &c.sid, "--token-file", s(tok), "--json"])
    };
    err_doc(&hb(&first, &first.token_file), 6, "unauthorized");
    let v = ok_doc(&hb(&again, &again.token_file));
    assert_eq!(keys(&v), set(&["session_id", "is_master", "last_heartbeat"]));
    assert_eq!((&v["session_id"], &v["is_master"]), (&json!(again.sid), &json!(true)));

    let other_surface = co.register("alice", "ide", "m1");
    let other_machine = co.register("alice", "cli", "m2");
    let sids: BTreeSet<&str> =
        [&first.sid, &other_surface.sid, &other_machine.sid].iter().map(|x| x.as_str()).collect();
    assert_eq!(sids.len(), 3, "another surface or machine is a new row");
    let st = co.status();
    let rows = st["controllers"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{st:#}");
    // Printed without --token-file, the token comes once on stdout; again with the same key.
    let v = co.ok(&[
        "session",
        "register",
        "--project",
        PROJECT,
        "--identity",
        "alice",
        "--surface",
        "ide",
        "--machine",
        "m1",
        "--previous-token-file",
        s(&other_surface.token_file),
    ]);
    assert_eq!(v["session_id"], json!(other_surface.sid));
    let t = v["token"].as_str().unwrap();
    assert_eq!(t.len(), 64);
    err_doc(&hb(&other_surface, &other_surface.token_file), 6, "unauthorized");
    let r = co.run_env(
        &["session", "heartbeat", "--project", PROJECT, "--session", &other_surface.sid, "--json"],
        &[("WRITERCTL_SESSION_TOKEN", t)],
    );
    ok_doc(&r);
    assert_eq!(co.status()["controllers"].as_array().unwrap().len(), 3);
    // A token file is private and never overwritten.
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&first.token_file).unwrap().permissions().mode() & 0o777, 0o600);
    let r = co.run(&[
        "session",
        "register",
        "--project",
        PROJECT,
        "--identity",
        "alice",
        "--machine",
        "m1",
        "--token-file",
        s(&first.token_file),
        "--json",
    ]);
    // An existing token file is read as the row's current token: first's is dead (the row
    // was re-registered since), so it proves nothing, and the file is left as it was.
    let before = std::fs::read(&first.token_file).unwrap();
    err_doc(&r, 6, "unauthorized");
    assert_eq!(std::fs::read(&first.token_file).unwrap(), before);
    ok_doc(&hb(&again, &again.token_file));
    // The current token file restarts the controller: same session, the file now holds
    // the new token (the old one is dead).
    let restart = ["session", "register", "--project", PROJECT, "--identity", "alice", "--machine", "m1"];
    let mut args = restart.to_vec();
    args.extend(["--token-file", s(&again.token_file), "--json"]);
    let v = ok_doc(&co.run(&args));
    assert_eq!((&v["session_id"], &v["token"]), (&json!(again.sid), &Value::Null));
    let new_token = std::fs::read_to_string(&again.token_file).unwrap();
    assert_ne!(new_token.trim(), again.token);
    assert_eq!(std::fs::metadata(&again.token_file).unwrap().permissions().mode() & 0o777, 0o600);
    err_doc(&hb(&again, &first.token_file), 6, "unauthorized");
    ok_doc(&hb(&again, &again.token_file));
    // Anything but a session token there is refused before anything changes.
    let notes = co.file("notes");
    std::fs::write(&notes, "my notes\n").unwrap();
    let mut args = restart.to_vec();
    args.extend(["--token-file", s(&notes), "--json"]);
    err_doc(&co.run(&args), 2, "invalid_argument");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes\n");
    ok_doc(&hb(&again, &again.token_file));
}

/// A deregistered row is no target any more, and its token is dead.
#[test]
fn deregister_removes_a_target() {
    let co = Co::new();
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    let args = |c: &Ctl| {
        vec![
            "session".to_string(),
            "deregister".into(),
            "--project".into(),
            PROJECT.into(),
            "--session".into(),
            c.sid.clone(),
            "--token-file".into(),
            s(&c.token_file).into(),
            "--json".into(),
        ]
    };
    let a = args(&bob);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let v = ok_doc(&co.run(&a));
    assert_eq!(v, json!({"session_id": bob.sid, "deregistered": true, "was_master": false, "epoch": 1}));

    err_doc(&co.handoff(&alice, "bob", &["--expect-epoch", "1"]), 5, "target_not_registered");
    err_doc(&co.handoff(&alice, "bob", &["--to-session", &bob.sid]), 5, "target_not_registered");
    err_doc(&co.run(&a), 6, "unauthorized");
    let hb = co.run(&[
        "session",
        "heartbeat",
        "--project",
        PROJECT,
        "--session",
        &bob.sid,
        "--token-file",
        s(&bob.token_file),
        "--json",
    ]);
    err_doc(&hb, 6, "unauthorized");
    let st = co.assert_master(Some(&alice), 1);
    assert_eq!(st["controllers"].as_array().unwrap().len(), 1);
    // Registering the same key again makes a new row (the old one is gone).
    let bob2 = co.reg("bob");
    assert_ne!(bob2.sid, bob.sid);
    ok_doc(&co.handoff(&alice, "bob", &[]));
    co.assert_master(Some(&bob2), 2);
}

/// A master that deregisters empties the slot (the epoch moves on); the next registrant
/// becomes master at a higher epoch.
#[test]
fn master_deregister_empties_slot_and_next_registrant_becomes_master() {
    let co = Co::new();
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    let v = ok_doc(&co.run(&[
        "session",
        "deregister",
        "--project",
        PROJECT,
        "--session",
        &alice.sid,
        "--token-file",
        s(&alice.token_file),
        "--json",
    ]));
    assert_eq!(v, json!({"session_id": alice.sid, "deregistered": true, "was_master": true, "epoch": 2}));
    let st = co.assert_master(None, 2);
    assert_eq!(st["controllers"].as_array().unwrap().len(), 1);
    // The old master cannot act any more; a non-master still cannot hand off.
    err_doc(&co.handoff(&alice, "bob", &[]), 6, "unauthorized");
    err_doc(&co.handoff(&bob, "bob", &[]), 3, "not_master");

    let carol = co.register("carol", "cli", "m1");
    co.assert_master(Some(&carol), 3);
    let st = co.status();
    let bob_row = st["controllers"].as_array().unwrap().iter().find(|c| c["session_id"] == json!(bob.sid)).unwrap();
    assert_eq!(bob_row["is_master"], false);
    // The epoch never goes back: the first registrant of a fresh project is at 1, this one at 3.
    assert!(co.epoch() > 1);
}

/// Handoff, heartbeat and deregister refuse a wrong or foreign token (exit 6) and a missing
/// one (exit 2), and change nothing.
#[test]
fn wrong_session_token_is_unauthorized() {
    let co = Co::new();
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    let wrong = co.file("wrong.tok");
    std::fs::write(&wrong, format!("{}\n", "ab".repeat(32))).unwrap();
    let empty = co.file("empty.tok");
    std::fs::write(&empty, "\n").unwrap();

    let verbs: [Vec<&str>; 3] = [
        vec!["master", "handoff", "--project", PROJECT, "--session", &alice.sid, "--to", "bob", "--expect-epoch", "1"],
        vec!["session", "heartbeat", "--project", PROJECT, "--session", &alice.sid],
        vec!["session", "deregister", "--project", PROJECT, "--session", &alice.sid],
    ];
    for verb in &verbs {
        let with = |extra: &[&str], vars: &[(&str, &str)]| {
            let mut a = verb.clone();
            a.extend_from_slice(extra);
            a.push("--json");
            co.run_env(&a, vars)
        };
        err_doc(&with(&["--token-file", s(&wrong)], &[]), 6, "unauthorized");
        err_doc(&with(&["--token-file", s(&bob.token_file)], &[]), 6, "unauthorized");
        err_doc(&with(&[], &[("WRITERCTL_SESSION_TOKEN", &bob.token)]), 6, "unauthorized");
        err_doc(&with(&[], &[("WRITERCTL_SESSION_TOKEN", "not-a-token")]), 6, "unauthorized");
        err_doc(&with(&[], &[]), 2, "invalid_argument");
        err_doc(&with(&["--token-file", s(&empty)], &[]), 2, "invalid_argument");
        err_doc(&with(&[], &[("WRITERCTL_SESSION_TOKEN", "")]), 2, "invalid_argument");
    }
    // An unknown session with a real token looks the same as a wrong token.
    let r = co.run(&[
        "session",
        "heartbeat",
        "--project",
        PROJECT,
        "--session",
        "no-such-session",
        "--token-file",
        s(&alice.token_file),
        "--json",
    ]);
    err_doc(&r, 6, "unauthorized");
    // A real session and token in another project.
    let r = co.run(&[
        "session",
        "heartbeat",
        "--project",
        "other",
        "--session",
        &alice.sid,
        "--token-file",
        s(&alice.token_file),
        "--json",
    ]);
    err_doc(&r, 6, "unauthorized");
    // The token check comes before the epoch check.
    let r = co.run(&[
        "master",
        "handoff",
        "--project",
        PROJECT,
        "--session",
        &alice.sid,
        "--token-file",
        s(&wrong),
        "--to",
        "bob",
        "--expect-epoch",
        "7",
        "--json",
    ]);
    err_doc(&r, 6, "unauthorized");

    // Nothing changed: alice is still registered and master; her real token works (env too).
    co.assert_master(Some(&alice), 1);
    assert_eq!(co.status()["controllers"].as_array().unwrap().len(), 2);
    let r = co.run_env(
        &["session", "heartbeat", "--project", PROJECT, "--session", &alice.sid, "--json"],
        &[("WRITERCTL_SESSION_TOKEN", &alice.token)],
    );
    ok_doc(&r);
    assert!(co.events("alice").is_empty());
}

/// A token file or password file that does not exist is a bad argument (exit 2
/// invalid_argument, as `release --token-file` does), not an internal failure.
#[test]
fn missing_token_or_password_file_is_invalid_argument() {
    let co = Co::new();
    let alice = co.reg("alice");
    co.reg("bob");
    co.add_operator("ops", PASSWORD);
    let missing = co.dir().join("no-such-file");
    let r = co.run(&[
        "session",
        "heartbeat",
        "--project",
        PROJECT,
        "--session",
        &alice.sid,
        "--token-file",
        s(&missing),
        "--json",
    ]);
    err_doc(&r, 2, "invalid_argument");
    let r = co.run(&[
        "master",
        "handoff",
        "--project",
        PROJECT,
        "--session",
        &alice.sid,
        "--token-file",
        s(&missing),
        "--to",
        "bob",
        "--json",
    ]);
    err_doc(&r, 2, "invalid_argument");
    let r = co.run(&[
        "master",
        "claim",
        "--project",
        PROJECT,
        "--to",
        "bob",
        "--operator",
        "ops",
        "--password-file",
        s(&missing),
        "--json",
    ]);
    err_doc(&r, 2, "invalid_argument");
    co.assert_master(Some(&alice), 1);
}

/// `session register` of alice on machine m1 with `--token-file F`, as JSON.
fn register_alice_into(co: &Co, token_file: &Path) -> Run {
    co.run(&[
        "session",
        "register",
        "--project",
        PROJECT,
        "--identity",
        "alice",
        "--machine",
        "m1",
        "--token-file",
        s(token_file),
        "--json",
    ])
}

/// `session register --token-file F` where F cannot be written must not leave a registered
/// row whose token nobody has (the source says "a bad path never leaves a row whose token is
/// lost"); on a fresh project that row even becomes master, with no token to hand off.
#[test]
fn register_with_unwritable_token_file_leaves_no_row() {
    let co = Co::new();
    let bad = co.dir().join("no-such-dir/alice.tok");
    let r = register_alice_into(&co, &bad);
    assert_ne!(r.code, 0, "{r:?}");
    let st = co.status();
    assert_eq!(st["controllers"], json!([]), "a row whose token was never delivered: {st:#}");
    assert_eq!(st["master"], json!({"identity": null, "session_id": null, "epoch": 0}));
}

/// Same root cause on a re-registration: a failed `register --token-file` for an existing
/// key rotates the holder's token to one nobody has, locking the holder out.
#[test]
fn reregister_with_unwritable_token_file_keeps_the_old_token() {
    let co = Co::new();
    let bad = co.dir().join("no-such-dir/alice.tok");
    let alice = co.reg("alice");
    let r = register_alice_into(&co, &bad);
    assert_ne!(r.code, 0, "{r:?}");
    ok_doc(&co.heartbeat(&alice, &alice.token_file));
}

/// "First registered with no master becomes master (epoch 1)", even when 8 registrants of
/// a fresh project start at once.
#[test]
fn racing_first_registrants_elect_exactly_one_master() {
    let co = Co::new();
    // The store exists before the race (its creation race is another test's subject).
    co.ok(&["master", "status", "--project", "p"]);
    for trial in 0..10 {
        let project = format!("p{trial}");
        let keys: Vec<PathBuf> = (0..8).map(|i| co.key_file_in(&project, &format!("id{i}"))).collect();
        let racers: Vec<Racer> = (0..8)
            .map(|i| Racer {
                url: None,
                label: format!("r{i}"),
                args: strings(&[
                    "session",
                    "register",
                    "--project",
                    &project,
                    "--identity",
                    &format!("id{i}"),
                    "--machine",
                    "m1",
                    "--identity-key-file",
                    s(&keys[i]),
                    "--json",
                ]),
                delay_ms: 0,
            })
            .collect();
        let results = race(&co, &racers);
        for (label, r) in &results {
            assert_eq!(r.code, 0, "trial {trial} {label}: {r:?}");
        }
        let docs: Vec<Value> = results.iter().map(|(_, r)| r.json()).collect();
        let masters: Vec<&Value> = docs.iter().filter(|d| d["is_master"] == true).collect();
        assert_eq!(masters.len(), 1, "trial {trial}: {docs:#?}");
        assert!(docs.iter().all(|d| d["epoch"] == 1), "trial {trial}: {docs:#?}");
        let st = co.ok(&["master", "status", "--project", &project]);
        assert_eq!(
            st["master"],
            json!({"identity": masters[0]["identity"], "session_id": masters[0]["session_id"], "epoch": 1})
        );
        let rows = st["controllers"].as_array().unwrap();
        assert_eq!(rows.len(), 8);
        assert_eq!(rows.iter().filter(|r| r["is_master"] == true).count(), 1);
    }
}
