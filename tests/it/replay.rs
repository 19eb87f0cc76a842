//! Replays are decisions, not lookups (issue 28 point 2, and point 5's "no existence oracle
//! before authentication" and "proof checked inside the write"), on the embedded SQLite
//! store through the engine itself, with a clock the test moves.
//!
//! Each test here failed on the main branch before issue 28: a replayed request id returned
//! its kept answer before anything was checked, kept secrets were XORed with a keystream
//! drawn from the request id, expired records stayed in SQLite, and a claim write proved
//! its seat on a read made before the write.

#![allow(clippy::result_large_err)] // ClaimError is the engine's own error type

use std::path::PathBuf;
use std::sync::Arc;

use sha2::{Digest, Sha512};
use writerctl::claim::ClaimError;
use writerctl::claim::clock::ManualClock;
use writerctl::claim::engine::{Actor, Coordinator, DEFAULT_FRESHNESS, Registered, RequestCtx};
use writerctl::claim::masters::{ControllerKey, HandoffRequest, OperatorRequest, RegisterRequest};
use writerctl::claim::requests::RequestId;
use writerctl::claim::retention::Retention;
use writerctl::claim::secret::Secret;
use writerctl::claim::stores::sqlite::SqliteStore;
use writerctl::claim::work_claims::{ChannelRequest, FocusRequest, TakeRequest, TaskAddress};
use writerctl::error::ErrorCode;

use crate::master::{Co, PROJECT, err_doc, ok_doc, s};
use crate::support_api::handoff_by;

const P: &str = "web";

struct Env {
    _dir: tempfile::TempDir,
    path: PathBuf,
    clock: Arc<ManualClock>,
    c: Coordinator,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sqlite");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let clock = Arc::new(ManualClock::at(1_700_000_000_000));
    let c = Coordinator::new(store, clock.clone(), DEFAULT_FRESHNESS);
    Env { _dir: dir, path, clock, c }
}

impl Env {
    /// The coordinator carrying request id `id`.
    fn with(&self, id: &str) -> Coordinator {
        self.c.for_request(request(id))
    }

    /// Enrolls `identity` (no request id) and returns its key.
    fn enroll(&self, identity: &str) -> Secret {
        self.c.enroll_identity(P, identity).unwrap().key
    }

    /// Every kept answer in the SQLite file, as the store holds it.
    fn raw_answers(&self) -> Vec<String> {
        let db = rusqlite::Connection::open(&self.path).unwrap();
        let mut st = db.prepare("SELECT answer FROM requests ORDER BY key").unwrap();
        st.query_map([], |r| r.get::<_, String>(0)).unwrap().map(Result::unwrap).collect()
    }
}

fn key(identity: &str, machine: &str) -> ControllerKey {
    ControllerKey { identity: identity.into(), surface: "cli".into(), machine_id: machine.into() }
}

/// Request id `id`, in-process.
fn request(id: &str) -> RequestCtx {
    RequestCtx { id: Some(RequestId::parse(id).unwrap()), ..Default::default() }
}

/// `key` registered with the identity's key `k`.
fn with_key(key: &ControllerKey, k: &Secret) -> RegisterRequest {
    RegisterRequest::of(key, Some(k), None)
}

/// Channel `c` of `project`, stewarded by alice.
fn channel(project: &str, c: &Coordinator) {
    c.create_channel(project, &ChannelRequest { channel: "c".into(), steward: "alice".into(), ..Default::default() })
        .unwrap();
}

#[track_caller]
fn refused<T: std::fmt::Debug>(r: Result<T, ClaimError>, code: ErrorCode) -> ClaimError {
    match r {
        Err(e) if e.code() == code => e,
        other => panic!("expected {code}, got {other:?}"),
    }
}

fn take_req(seat: &str, next_step: Option<&str>) -> TakeRequest {
    TakeRequest { seat: seat.into(), next_step: next_step.map(str::to_string), ..Default::default() }
}

/// Registers `identity` on `machine` with its key, under request id `id`.
fn register(e: &Env, id: &str, identity: &str, machine: &str, k: &Secret) -> Result<Registered, ClaimError> {
    e.with(id).register(P, &with_key(&key(identity, machine), k))
}

/// The failed audit rows for `verb`, by result code.
fn refusals(e: &Env, verb: &str) -> Vec<String> {
    e.c.audit_log(Some(P), 1000)
        .unwrap()
        .into_iter()
        .filter(|a| a.verb == verb && a.result != "ok")
        .map(|a| a.result)
        .collect()
}

/// Issue 28 point 2: a rotated identity's old request id no longer yields a token.
#[test]
fn a_registration_replayed_after_identity_rotate_is_refused_without_its_token() {
    let e = env();
    let k = e.enroll("alice");
    let first = register(&e, "r1", "alice", "h1", &k).unwrap();
    // The plain retry still works: nothing changed.
    let again = register(&e, "r1", "alice", "h1", &k).unwrap();
    assert_eq!((again.token.expose(), &again.controller), (first.token.expose(), &first.controller));
    e.c.rotate_identity(P, "alice").unwrap();
    let err = refused(register(&e, "r1", "alice", "h1", &k), ErrorCode::Unauthorized);
    assert!(!format!("{err:?} {err}").contains(first.token.expose()));
    assert_eq!(refusals(&e, "session.register"), ["unauthorized"], "refused and audited like a fresh request");
}

/// Issue 28 point 2: a removed identity's old request id no longer yields a token.
#[test]
fn a_registration_replayed_after_identity_remove_is_refused() {
    let e = env();
    let k = e.enroll("alice");
    register(&e, "r1", "alice", "h1", &k).unwrap();
    e.c.remove_identity(P, "alice").unwrap();
    refused(register(&e, "r1", "alice", "h1", &k), ErrorCode::Unauthorized);
}

/// Issue 28 point 2: the session a kept registration names must still exist with the kept
/// token: after a deregistration, or after the controller registered again (a new token the
/// live-session rule now protects), the old token is never handed out.
#[test]
fn a_registration_replayed_after_its_session_ended_or_moved_on_is_refused() {
    let e = env();
    let k = e.enroll("alice");
    let first = register(&e, "r1", "alice", "h1", &k).unwrap();
    e.c.deregister(P, &first.controller.session_id, &first.token).unwrap();
    let err = refused(register(&e, "r1", "alice", "h1", &k), ErrorCode::AnswerNotKept);
    assert!(!err.to_string().contains(first.token.expose()));

    let second = register(&e, "r2", "alice", "h2", &k).unwrap();
    // The controller restarts with its previous token: a new token for the same row.
    let restarted = e.c.register(P, &RegisterRequest::of(&key("alice", "h2"), None, Some(&second.token))).unwrap();
    assert_eq!(restarted.controller.session_id, second.controller.session_id);
    refused(register(&e, "r2", "alice", "h2", &k), ErrorCode::AnswerNotKept);
}

/// Issue 28 point 2: "a replay by anyone but the original credential gets nothing". Alice's
/// second session proves the seat, but not the first session's request: unauthorized, both
/// for the same request (before: the first session's answer) and for another one (before:
/// "already used for a different request").
#[test]
fn a_replay_with_another_credential_is_unauthorized() {
    let e = env();
    let k = e.enroll("alice");
    let one = register(&e, "a", "alice", "h1", &k).unwrap();
    let two = register(&e, "b", "alice", "h2", &k).unwrap();
    channel(P, &e.c);
    let (t, req) = (TaskAddress::new(P, "c", "t"), take_req("alice", None));
    e.with("take-1").take_work_claim(&t, &req, Some(&one.token)).unwrap();
    assert_eq!(
        e.with("take-1").take_work_claim(&t, &req, Some(&one.token)).unwrap().claim.version,
        1,
        "the owner's retry"
    );
    refused(e.with("take-1").take_work_claim(&t, &req, Some(&two.token)), ErrorCode::Unauthorized);
    let other = take_req("alice", Some("merge"));
    refused(e.with("take-1").take_work_claim(&t, &other, Some(&two.token)), ErrorCode::Unauthorized);
    // The original credential with another request is told it is another request.
    refused(e.with("take-1").take_work_claim(&t, &other, Some(&one.token)), ErrorCode::InvalidArgument);
}

/// Issue 28 point 5: before authentication, no answer says whether a request id exists. A
/// caller without the key gets the same refusal for a used id as for a fresh one (before:
/// "already used for a different request" for the used one).
#[test]
fn no_answer_before_authentication_says_whether_an_id_exists() {
    let e = env();
    let k = e.enroll("carol");
    register(&e, "used", "carol", "h1", &k).unwrap();
    let wrong = Secret::new("00".repeat(32));
    for proof in [None, Some(&wrong)] {
        let req = RegisterRequest::of(&key("carol", "h1"), proof, None);
        let used = e.with("used").register(P, &req).unwrap_err();
        let fresh = e.with("never-used").register(P, &req).unwrap_err();
        assert_eq!((used.code(), used.to_string()), (fresh.code(), fresh.to_string()));
        assert_eq!(used.code(), ErrorCode::Unauthorized);
    }

    // The same for a handoff with a wrong token: carol (master) hands off under "h-1".
    let carol = e.c.status(P).unwrap().slot;
    let sid = carol.master.unwrap().session_id;
    let kd = e.enroll("dave");
    register(&e, "d", "dave", "h1", &kd).unwrap();
    let req = HandoffRequest { session_id: sid, to: "dave".into(), expect_epoch: carol.epoch, ..Default::default() };
    let token = carol_token(&e, &k);
    e.with("h-1").handoff(P, &req, &token).unwrap();
    let used = e.with("h-1").handoff(P, &req, &wrong).unwrap_err();
    let fresh = e.with("h-2").handoff(P, &req, &wrong).unwrap_err();
    assert_eq!((used.code(), used.to_string()), (fresh.code(), fresh.to_string()));
    assert_eq!(used.code(), ErrorCode::Unauthorized);
}

/// Carol's session token, from the replay of her registration (the plain retry).
fn carol_token(e: &Env, k: &Secret) -> Secret {
    register(e, "used", "carol", "h1", k).unwrap().token
}

/// The keystream the main branch masked kept secrets with (SHA-512 of a tag, the request id
/// and a block counter): what an attacker with a store copy and the id would try.
fn old_unmask(id: &str, bytes: &[u8]) -> Vec<u8> {
    bytes
        .chunks(64)
        .enumerate()
        .flat_map(|(block, chunk)| {
            let mut h = Sha512::new();
            h.update(b"writerctl kept secret\0");
            h.update(id.as_bytes());
            h.update((block as u64).to_be_bytes());
            let pad = h.finalize();
            chunk.iter().zip(pad.iter()).map(|(b, p)| b ^ p).collect::<Vec<u8>>()
        })
        .collect()
}

/// Every run of at least 64 hex digits in `text`, decoded.
fn hex_runs(text: &str) -> Vec<Vec<u8>> {
    text.split(|c: char| !c.is_ascii_hexdigit())
        .filter(|r| r.len() >= 64)
        .map(|r| {
            let r = &r[..r.len() / 2 * 2];
            (0..r.len()).step_by(2).map(|i| u8::from_str_radix(&r[i..i + 2], 16).unwrap()).collect()
        })
        .collect()
}

/// Issue 28 point 2 ("kept secrets are only masked"): the raw row holds no token, and
/// nothing the id alone gives turns it into one.
#[test]
fn a_store_copy_and_the_request_id_do_not_recover_the_token() {
    let e = env();
    let k = e.enroll("alice");
    let reg = register(&e, "guessable-1", "alice", "h1", &k).unwrap();
    let token = reg.token.expose();
    let answers = e.raw_answers();
    assert_eq!(answers.len(), 1);
    assert!(!answers[0].contains(token), "the token is not in the row");
    for run in hex_runs(&answers[0]) {
        let unmasked = old_unmask("guessable-1", &run);
        assert!(
            !unmasked.windows(token.len()).any(|w| w == token.as_bytes()),
            "the request id alone recovered the token from the store"
        );
    }
}

/// Issue 28 point 2 ("two answers under one id leak each other"): two registrations under
/// one id (two identities) share no keystream: XORing their stored bytes does not give the
/// XOR of the two tokens.
#[test]
fn two_answers_under_one_id_do_not_leak_each_other() {
    let e = env();
    let (ka, kb) = (e.enroll("alice"), e.enroll("bob"));
    let a = register(&e, "same", "alice", "h1", &ka).unwrap();
    let b = register(&e, "same", "bob", "h1", &kb).unwrap();
    let answers = e.raw_answers();
    assert_eq!(answers.len(), 2);
    let target: Vec<u8> = a.token.expose().bytes().zip(b.token.expose().bytes()).map(|(x, y)| x ^ y).collect();
    for ra in hex_runs(&answers[0]) {
        for rb in hex_runs(&answers[1]) {
            let xor: Vec<u8> = ra.iter().zip(&rb).map(|(x, y)| x ^ y).collect();
            assert!(!xor.windows(target.len()).any(|w| w == &target[..]), "one answer unmasks the other");
        }
    }
}

/// Issue 28 point 3: expired kept answers are purged from SQLite by the retention prune,
/// even when no later write keeps an answer.
#[test]
fn expired_requests_are_purged() {
    let e = env();
    let k = e.enroll("alice");
    register(&e, "r1", "alice", "h1", &k).unwrap();
    assert_eq!(e.raw_answers().len(), 1);
    e.clock.advance(11 * 60 * 1000);
    e.c.prune(&Retention::from_flags(0, 0, 0), "test").unwrap();
    assert_eq!(e.raw_answers().len(), 0, "the expired answer was purged");
}

/// Issue 28 point 2: an identity key issued in-process (no admin token to seal it under) is
/// not kept; its replay says the write was applied and to rotate (before: the key itself).
#[test]
fn a_key_issued_without_a_credential_is_not_kept() {
    let e = env();
    let issued = e.with("add-1").enroll_identity(P, "alice").unwrap();
    let err = refused(e.with("add-1").enroll_identity(P, "alice"), ErrorCode::AnswerNotKept);
    assert!(!err.to_string().contains(issued.key.expose()));
    assert!(err.hint().unwrap().contains("identity rotate"), "{:?}", err.hint());
    assert!(!e.raw_answers()[0].contains(issued.key.expose()));
}

/// Issue 28 point 2: a key issued under the admin token is kept sealed under it; its replay
/// needs that token, and stops once the key was rotated again.
#[test]
fn a_key_issued_under_the_admin_token_replays_only_while_it_is_enrolled() {
    let e = env();
    let admin = Secret::new("ad".repeat(32));
    let c = |id: &str, t: &Secret| {
        e.c.for_request(RequestCtx { admin: Some(t.clone()), actor: Actor::Admin, ..request(id) })
    };
    let first = c("add-1", &admin).enroll_identity(P, "alice").unwrap();
    let again = c("add-1", &admin).enroll_identity(P, "alice").unwrap();
    assert_eq!(first.key.expose(), again.key.expose());
    refused(c("add-1", &Secret::new("bd".repeat(32))).enroll_identity(P, "alice"), ErrorCode::Unauthorized);
    e.c.rotate_identity(P, "alice").unwrap();
    refused(c("add-1", &admin).enroll_identity(P, "alice"), ErrorCode::AnswerNotKept);
}

/// Issue 28 point 2: a heartbeat or handoff replay needs the session to still prove itself.
#[test]
fn a_handoff_replayed_after_its_session_ended_is_refused() {
    let e = env();
    let (ka, kb) = (e.enroll("alice"), e.enroll("bob"));
    let a = register(&e, "a", "alice", "h1", &ka).unwrap();
    register(&e, "b", "bob", "h1", &kb).unwrap();
    let req = handoff_by(&a, "bob", a.epoch);
    e.with("h-1").handoff(P, &req, &a.token).unwrap();
    e.with("h-1").handoff(P, &req, &a.token).unwrap();
    e.c.remove_identity(P, "alice").unwrap();
    refused(e.with("h-1").handoff(P, &req, &a.token), ErrorCode::Unauthorized);
}

/// Issue 28 point 5 ("proof checked inside the write"): `identity remove` lands exactly
/// between the engine's early proof of the seat and the claim write (the failpoint
/// `claim.before_write` runs it through `other`, a second handle on the same store, as
/// another server would). The take must commit nothing; before, it committed after the
/// removal.
fn take_racing_remove(c: &Coordinator, other: Coordinator, project: &str) {
    use writerctl::lockfile::failpoint;
    let k = c.enroll_identity(project, "alice").unwrap().key;
    let alice = c.register(project, &with_key(&key("alice", "h1"), &k)).unwrap();
    channel(project, c);
    let removed = std::rc::Rc::new(std::cell::Cell::new(false));
    let flag = removed.clone();
    let p = project.to_string();
    let victim = std::rc::Rc::new(std::cell::RefCell::new("alice"));
    let next = victim.clone();
    failpoint::set_hook("claim.before_write", move || {
        if !flag.replace(true) {
            other.remove_identity(&p, *next.borrow()).unwrap();
        }
        Ok(())
    });
    let result = c.take_work_claim(&TaskAddress::new(project, "c", "t"), &take_req("alice", None), Some(&alice.token));
    assert!(removed.get(), "the removal ran between the proof and the write");
    refused(result, ErrorCode::Unauthorized);
    refused(c.show_work_claim(project, "c", "t"), ErrorCode::NotFound);

    // The same for a focus lease: bob is removed between his proof and his focus write.
    let k = c.enroll_identity(project, "bob").unwrap().key;
    let bob = c.register(project, &with_key(&key("bob", "h1"), &k)).unwrap();
    removed.set(false);
    *victim.borrow_mut() = "bob";
    let result = c.focus_start(project, "bob", &FocusRequest { minutes: 30 }, Some(&bob.token));
    failpoint::clear_hooks();
    assert!(removed.get());
    refused(result, ErrorCode::Unauthorized);
    assert_eq!(c.focus_show(project, "bob").unwrap(), None, "no lease was written");
}

#[test]
fn a_take_racing_identity_remove_never_commits_after_the_removal_on_sqlite() {
    let e = env();
    let other = Coordinator::new(Arc::new(SqliteStore::open(&e.path).unwrap()), e.clock.clone(), DEFAULT_FRESHNESS);
    take_racing_remove(&e.c, other, P);
}

#[test]
fn a_take_racing_identity_remove_never_commits_after_the_removal_on_redis_pg() {
    let Some(ns) = crate::services::Ns::new("a_take_racing_identity_remove_on_redis_pg") else { return };
    let clock = Arc::new(writerctl::claim::clock::SystemClock);
    let c = Coordinator::new(ns.store(), clock.clone(), DEFAULT_FRESHNESS);
    let other = Coordinator::new(ns.store(), clock, DEFAULT_FRESHNESS);
    take_racing_remove(&c, other, P);
}

/// Issue 28 point 2 over HTTP (the CLI against `coordinator serve`): a registration's retry
/// gets its token while nothing changed, is refused `unauthorized` with no token after the
/// identity's key was rotated, and an identity key issued under the admin token replays only
/// while it is enrolled.
fn replays_over_http(co: &Co) {
    let key = co.key_file("erin");
    let reg = [
        "session",
        "register",
        "--project",
        PROJECT,
        "--identity",
        "erin",
        "--machine",
        "erin-host",
        "--identity-key-file",
        s(&key),
        "--request-id",
        "reg-erin",
        "--json",
    ];
    let first = ok_doc(&co.run(&reg));
    let again = ok_doc(&co.run(&reg));
    assert_eq!(first["token"], again["token"], "the retry gets the first token");
    let new_key = co.file("erin.key2");
    co.ok(&["identity", "rotate", "--project", PROJECT, "erin", "--key-file", s(&new_key)]);
    let r = co.run(&reg);
    let doc = err_doc(&r, 6, "unauthorized");
    let token = first["token"].as_str().unwrap();
    assert!(!r.stdout.contains(token) && !r.stderr.contains(token), "{doc}");

    // An identity key kept under the admin token: the retry gets it until it is rotated.
    let kf = co.file("fay.key");
    let add =
        ["identity", "add", "--project", PROJECT, "fay", "--key-file", s(&kf), "--request-id", "add-fay", "--json"];
    ok_doc(&co.run(&add));
    let issued = std::fs::read_to_string(&kf).unwrap();
    std::fs::remove_file(&kf).unwrap();
    ok_doc(&co.run(&add));
    assert_eq!(std::fs::read_to_string(&kf).unwrap(), issued, "the retry wrote the same key");
    std::fs::remove_file(&kf).unwrap();
    co.ok(&["identity", "rotate", "--project", PROJECT, "fay", "--key-file", s(&co.file("fay.key2"))]);
    err_doc(&co.run(&add), 3, "answer_not_kept");
}

#[test]
fn replays_are_decisions_over_http_on_sqlite() {
    replays_over_http(&Co::http_sqlite());
}

#[test]
fn replays_are_decisions_over_http_on_redis_pg() {
    let Some(co) = Co::http_redis_pg("replays_are_decisions_over_http_on_redis_pg") else { return };
    replays_over_http(&co);
}

/// Issue 28 point 3 ("expired rows are purged on every store"): on Redis + Postgres every
/// kept answer is a Redis key with a TTL no longer than the retention window (Redis removes
/// it by itself), and the Postgres rows `operator add` keeps go with the retention prune.
#[test]
fn redis_pg_kept_answers_expire_by_themselves() {
    let Some(ns) = crate::services::Ns::new("redis_pg_kept_answers_expire_by_themselves") else { return };
    let clock = Arc::new(writerctl::claim::clock::SystemClock);
    let c = Coordinator::new(ns.store(), clock, DEFAULT_FRESHNESS);
    let k = c.enroll_identity(P, "alice").unwrap().key;
    c.for_request(request("r1")).register(P, &with_key(&key("alice", "h1"), &k)).unwrap();
    let mut redis = ns.redis();
    let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{{{}}}:req:*", ns.name)).query(&mut redis).unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    let ttl: i64 = redis::cmd("PTTL").arg(&keys[0]).query(&mut redis).unwrap();
    let window = i64::try_from(writerctl::claim::requests::REQUEST_TTL.as_millis()).unwrap();
    assert!(ttl > 0 && ttl <= window, "a kept answer carries a TTL: {ttl}");
    let op = |id: &str| OperatorRequest { operator_id: id.into(), password: "pw".into() };
    c.add_operator(&op("ops")).unwrap();
    assert_eq!(c.store().purge_requests(i64::MAX).unwrap(), 0, "operator add without an id keeps nothing");
    c.for_request(request("op-1")).add_operator(&op("ops2")).unwrap();
    assert_eq!(c.store().purge_requests(i64::MAX).unwrap(), 1, "the Postgres row is purged once expired");
}
