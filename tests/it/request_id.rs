//! Request ids (issue 20, "outcomes are never unknown"): a write whose reply was lost is
//! retried with the same `--request-id` and returns the first answer, acting once, on the
//! embedded store, over HTTP on SQLite and over HTTP on Redis + Postgres.
//!
//! Over HTTP the reply is lost for real: the server runs with the failpoint
//! `serve.after_commit=pause:GATE`, which holds a write between its commit and its reply
//! while GATE is absent; the test removes GATE, sends the verb, waits for the server to
//! reach the failpoint, kills it (SIGKILL), and retries against a new server on the same
//! store. On the embedded store the first answer is discarded and the verb run again.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use writerctl::claim::ClaimError;
use writerctl::claim::clock::Clock;
use writerctl::claim::model::{AuditEntry, Change, Controller};
use writerctl::claim::requests::{KeptAnswer, RequestRecord};
use writerctl::claim::stores::{Commit, ProjectWrite, Store};

use crate::master::{Co, Ctl, PROJECT, err_doc, ok_doc, s};
use crate::serve::Deployment;
use crate::services::wait_until;
use crate::support::{Run, wait_child_bounded};

/// How long a CLI run or a server's arrival at the failpoint may take on a loaded machine.
const LIMIT: Duration = Duration::from_secs(60);

/// A gate file that exists (writes pass the failpoint) and the server environment that
/// arms the failpoint on it.
fn gate() -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    std::fs::write(&gate, b"").unwrap();
    let spec = format!("serve.after_commit=pause:{}", gate.display());
    (dir, gate, spec)
}

/// Runs `args --json` so that its reply is lost after the write: over HTTP by killing the
/// server at the failpoint (then the first run must exit 75, say the outcome is unknown
/// and name the id); on the embedded store by discarding the answer. Returns the first run.
fn lose_reply(co: &Co, gate: Option<&Path>, args: &[&str], id: &str) -> Run {
    let mut a = args.to_vec();
    a.extend(["--request-id", id, "--json"]);
    let Some(gate) = gate else { return co.run(&a) };
    let reached = PathBuf::from(format!("{}.reached", gate.display()));
    std::fs::remove_file(gate).unwrap();
    let _ = std::fs::remove_file(&reached);
    let mut cmd = co.command(&a);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    wait_until(LIMIT, "the server reaches serve.after_commit", || reached.exists());
    let d = co.http.as_ref().unwrap();
    let mut server = d.take(30, 0);
    server.stop_with(rustix::process::Signal::KILL);
    std::fs::write(gate, b"").unwrap();
    let first = wait_child_bounded(child, LIMIT).expect("the client returns after the server died");
    let doc = err_doc(&first, 75, "coordinator_unavailable");
    let (message, hint) = (doc["message"].as_str().unwrap(), doc["hint"].as_str().unwrap());
    assert!(message.contains("outcome is unknown") && message.contains(id), "{doc}");
    assert!(hint.contains(&format!("--request-id {id}")), "{doc}");
    first
}

/// The retry: same arguments, same id; must succeed.
#[track_caller]
fn retry(co: &Co, args: &[&str], id: &str) -> Value {
    let mut a = args.to_vec();
    a.extend(["--request-id", id, "--json"]);
    ok_doc(&co.run(&a))
}

fn register(co: &Co, identity: &str) -> Ctl {
    co.register(identity, "cli", &format!("{identity}-host"))
}

fn body(co: &Co, gate: Option<&Path>) {
    let alice = register(co, "alice");
    let bob = register(co, "bob");
    co.ok(&["channel", "create", "--project", PROJECT, "--channel", "c", "--steward", "alice"]);

    // A claim whose reply was lost: the retry gets it (not claim_taken), and it was taken once.
    let alice_tok = s(&alice.token_file);
    let take = [
        "claim",
        "take",
        "--project",
        PROJECT,
        "--channel",
        "c",
        "--task",
        "t",
        "--seat",
        "alice",
        "--token-file",
        alice_tok,
    ];
    let first = lose_reply(co, gate, &take, "take-1");
    let again = retry(co, &take, "take-1");
    assert_eq!((again["owner"].as_str(), again["version"].as_u64()), (Some("alice"), Some(1)), "{again}");
    if gate.is_none() {
        assert_eq!(ok_doc(&first), again, "the retry returns the first answer");
    }
    let history = co.ok(&["claim", "history", "--project", PROJECT, "--channel", "c", "--task", "t"]);
    assert_eq!(history["history"].as_array().unwrap().len(), 1, "taken once: {history}");
    // The same id for a different request is refused, and acts on nothing.
    let mut deputy = take.to_vec();
    deputy.extend(["--deputy", "bob", "--next-step", "merge", "--request-id", "take-1", "--json"]);
    let refused = err_doc(&co.run(&deputy), 2, "invalid_argument");
    assert!(refused["message"].as_str().unwrap().contains("different"), "{refused}");
    // Another caller's id never meets alice's: bob acts, and is refused as usual.
    let mut bobs = take.to_vec();
    bobs[9] = "bob";
    bobs[11] = s(&bob.token_file);
    bobs.extend(["--request-id", "take-1", "--json"]);
    err_doc(&co.run(&bobs), 3, "claim_taken");

    // A handoff whose reply was lost: the retry gets the first outcome, not stale_master, and
    // the epoch moved once.
    let before = co.ok(&["master", "status", "--project", PROJECT])["master"]["epoch"].as_u64().unwrap();
    let handoff = ["master", "handoff", "--project", PROJECT, "--session", &alice.sid, "--to", "bob", "--token-file"];
    let handoff: Vec<&str> = handoff.iter().copied().chain([s(&alice.token_file)]).collect();
    lose_reply(co, gate, &handoff, "handoff-1");
    let outcome = retry(co, &handoff, "handoff-1");
    assert_eq!(outcome["new_master"]["session_id"].as_str(), Some(bob.sid.as_str()), "{outcome}");
    let after = co.ok(&["master", "status", "--project", PROJECT])["master"]["epoch"].as_u64().unwrap();
    assert_eq!(after, before + 1, "one change of master");

    // A registration whose reply was lost: the retry gets the same session and token.
    let carol_key = co.key_file("carol");
    let reg = [
        "session",
        "register",
        "--project",
        PROJECT,
        "--identity",
        "carol",
        "--machine",
        "carol-host",
        "--identity-key-file",
        s(&carol_key),
    ];
    let first = lose_reply(co, gate, &reg, "register-1");
    let again = retry(co, &reg, "register-1");
    if gate.is_none() {
        assert_eq!(ok_doc(&first)["token"], again["token"]);
    }
    let heartbeat =
        ["session", "heartbeat", "--project", PROJECT, "--session", again["session_id"].as_str().unwrap(), "--json"];
    let mut hb = co.command(&heartbeat);
    hb.env("WRITERCTL_SESSION_TOKEN", again["token"].as_str().unwrap());
    ok_doc(&crate::master::exec(hb, None));
    let status = co.ok(&["master", "status", "--project", PROJECT]);
    let carols = status["controllers"].as_array().unwrap().iter().filter(|c| c["identity"] == "carol").count();
    assert_eq!(carols, 1, "registered once: {status}");
}

#[test]
fn a_lost_reply_is_recovered_with_its_request_id_on_the_embedded_store() {
    body(&Co::new(), None);
}

#[test]
fn a_lost_reply_is_recovered_with_its_request_id_over_http_on_sqlite() {
    let (_dir, gate, spec) = gate();
    let co = Co::http(|home, store| Deployment::sqlite(home, store).server_env("WRITERCTL_FAILPOINTS", &spec));
    body(&co, Some(&gate));
}

#[test]
fn a_lost_reply_is_recovered_with_its_request_id_over_http_on_redis_pg() {
    let Some(ns) = crate::services::Ns::new("request_id_redis_pg") else { return };
    let (_dir, gate, spec) = gate();
    let co = Co::http(|home, _| Deployment::redis_pg(home, ns).server_env("WRITERCTL_FAILPOINTS", &spec));
    body(&co, Some(&gate));
}

// ---------------------------------------------------------------------------------------
// the stores: a kept answer and its write are one atomic step
// ---------------------------------------------------------------------------------------

fn row(sid: &str) -> Controller {
    Controller {
        session_id: sid.into(),
        identity: sid.into(),
        surface: "cli".into(),
        machine_id: "m".into(),
        token_hash: "h".into(),
        is_master: false,
        registered_at: 0,
        last_heartbeat: 0,
    }
}

/// Two attempts under one request key: the first writes and keeps its answer, the second
/// (its record refused) writes nothing at all; the answer expires with its record.
fn one_write_per_kept_request(store: &dyn Store, check_expiry: bool) {
    let at = writerctl::claim::clock::SystemClock.now();
    let rec =
        RequestRecord { key: "k1".into(), fingerprint: "f1".into(), answer: "[1]".into(), expires_at: at + 60_000 };
    let audit = |sid: &str| AuditEntry {
        at,
        project: "p".into(),
        verb: "session.register".into(),
        actor: format!("identity:{sid}"),
        target: None,
        result: "ok".into(),
        epoch: None,
        detail: serde_json::json!({}),
        request: Some(rec.clone()),
        reason: None,
    };
    let change = |sid: &str| Change { upsert: vec![row(sid)], ..Change::default() };
    assert_eq!(store.recall_request("session.register", "k1", at).unwrap(), None);
    let commit = |expected_version, sid: &str| {
        store.commit(ProjectWrite { project: "p", expected_version, change: &change(sid), audit: Some(&audit(sid)) })
    };
    assert_eq!(commit(0, "a").unwrap(), Commit::Done(1));
    let kept = KeptAnswer { fingerprint: "f1".into(), answer: "[1]".into() };
    assert_eq!(store.recall_request("session.register", "k1", at).unwrap(), Some(kept));
    match commit(1, "b") {
        Err(ClaimError::Unavailable(m)) => assert!(m.contains("same id"), "{m}"),
        other => panic!("a second write under a kept request: {other:?}"),
    }
    let snap = store.snapshot("p").unwrap();
    assert_eq!((snap.version, snap.controllers.len()), (1, 1), "the second write wrote nothing");
    if check_expiry {
        assert_eq!(store.recall_request("session.register", "k1", rec.expires_at).unwrap(), None, "expired");
    }
}

#[test]
fn sqlite_keeps_one_write_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let store = writerctl::claim::stores::sqlite::SqliteStore::open(&dir.path().join("c.sqlite")).unwrap();
    one_write_per_kept_request(&store, true);
}

#[test]
fn redis_pg_keeps_one_write_per_request() {
    let Some(ns) = crate::services::Ns::new("redis_pg_keeps_one_write_per_request") else { return };
    one_write_per_kept_request(ns.store().as_ref(), false);
}
