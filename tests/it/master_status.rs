//! `master status` (seed 000 #11) and the store it reads: the new master shows as soon as a
//! verb returns; `--coordinator`, `WRITERCTL_COORDINATOR` and the default store; a fresh
//! store's first open while another process writes.

use std::time::Duration;

use serde_json::json;

use crate::master::{Co, PASSWORD, PROJECT, err_doc, exec, keys, ok_doc, set};

/// Seed #11: `master status` names the new master as soon as the verb returns, every time.
pub(crate) fn check_seed_11(co: &Co) {
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    let carol = co.reg("carol");
    co.add_operator("ops", PASSWORD);
    let ctl = [&alice, &bob, &carol];

    let mut master = &alice;
    for step in 0..6u64 {
        let to = ctl[(step as usize + 1) % 3];
        if step % 2 == 0 {
            ok_doc(&co.handoff(master, &to.identity, &["--expect-epoch", &(step + 1).to_string()]));
        } else {
            ok_doc(&co.claim(&to.identity, "ops", PASSWORD, &["--expect-epoch", &(step + 1).to_string()]));
        }
        master = to;
        let st = co.assert_master(Some(master), step + 2);
        assert_eq!(
            keys(&st),
            set(&["project", "master", "controllers", "freshness_seconds", "read_at", "paused"]),
            "{st:#}"
        );
        for row in st["controllers"].as_array().unwrap() {
            assert_eq!(
                keys(row),
                set(&[
                    "session_id",
                    "identity",
                    "surface",
                    "machine_id",
                    "is_master",
                    "fresh",
                    "last_heartbeat",
                    "registered_at"
                ])
            );
        }
        // The human view says the same.
        let r = co.run(&["master", "status", "--project", PROJECT]);
        r.assert_ok();
        let first = r.stdout.lines().next().unwrap();
        assert_eq!(first, format!("project {PROJECT}: master {} ({}) epoch {}", master.identity, master.sid, step + 2));
    }
    // A project nobody registered in: no master, epoch 0, no rows.
    let v = co.ok(&["master", "status", "--project", "empty"]);
    assert_eq!(v["master"], json!({"identity": null, "session_id": null, "epoch": 0}));
    assert_eq!(v["controllers"], json!([]));
}

#[test]
fn seed_11_status_reflects_new_master_immediately() {
    check_seed_11(&Co::new());
}

/// WRITERCTL_COORDINATOR selects the store like --coordinator; without either, the default
/// store lives under XDG_STATE_HOME (0700 directory, 0600 file).
#[test]
fn coordinator_env_and_default_store() {
    let co = Co::new();
    let mut c = co.base();
    c.args(["session", "register", "--project", PROJECT, "--identity", "alice", "--machine", "m1", "--json"])
        .env("WRITERCTL_COORDINATOR", co.url())
        .env("WRITERCTL_IDENTITY_KEY", co.key_of("alice"));
    let v = ok_doc(&exec(c, None));
    assert_eq!(co.status()["master"]["session_id"], v["session_id"]);

    let mut c = co.base();
    c.args(["identity", "add", "--project", PROJECT, "bob", "--json"]);
    let bob_key = ok_doc(&exec(c, None))["key"].as_str().unwrap().to_string();
    let mut c = co.base();
    c.args(["session", "register", "--project", PROJECT, "--identity", "bob", "--machine", "m1", "--json"])
        .env("WRITERCTL_IDENTITY_KEY", bob_key);
    ok_doc(&exec(c, None));
    let default = co.dir().join("state/writerctl/coordinator.sqlite");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&default).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(default.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
    // bob is master of the default store's project, alice of the explicit one.
    let mut c = co.base();
    c.args(["master", "status", "--project", PROJECT, "--json"]);
    assert_eq!(ok_doc(&exec(c, None))["master"]["identity"], "bob");
    assert_eq!(co.status()["master"]["identity"], "alice");
    // An unsupported coordinator address is an invalid argument.
    let mut c = co.base();
    c.args(["master", "status", "--project", PROJECT, "--json", "--coordinator", "redis://x"]);
    err_doc(&exec(c, None), 2, "invalid_argument");
}

/// The store waits up to 30 s for another process's lock (BUSY_TIMEOUT) before answering
/// `coordinator_unavailable`. On a store that is already in WAL mode it does; on a fresh
/// (empty) store file the switch to WAL fails at once with "database is locked" (exit 75)
/// while another connection holds the write lock for a moment. That is what several
/// processes using a new store for the first time hit at random (one registrant of 16 fails
/// in a few percent of fresh stores); here the other writer is held deterministically.
#[test]
fn a_fresh_store_waits_for_a_concurrent_writer_instead_of_failing_busy() {
    let co = Co::new();
    {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&co.store).unwrap();
    }
    // Another process's write transaction, committed after 1.5 s.
    let holder = rusqlite::Connection::open(&co.store).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        holder.execute_batch("COMMIT").unwrap();
    });
    let r = co.run(&["master", "status", "--project", PROJECT, "--json"]);
    release.join().unwrap();
    let v = ok_doc(&r);
    assert_eq!(v["master"], json!({"identity": null, "session_id": null, "epoch": 0}));

    // The same wait on an initialized store succeeds (the control case).
    let holder = rusqlite::Connection::open(&co.store).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        holder.execute_batch("COMMIT").unwrap();
    });
    let r = co.run(&["master", "status", "--project", PROJECT, "--json"]);
    release.join().unwrap();
    ok_doc(&r);
}
