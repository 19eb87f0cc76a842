//! Issues 15 and 19: who may register as whom, and every claim or focus write proves its
//! seat. The same rules, through the real binary, on the embedded store, over HTTP on
//! SQLite and over HTTP on Redis + Postgres (skipped loudly without the services).
//!
//! * Registering needs the identity's key (`identity add`) or the row's current token; a
//!   stale row is never handed to a caller that proved neither (the exploit in issue 19).
//! * `identity rotate` refuses the old key at once; `identity remove` refuses the key and
//!   deregisters the sessions (a master leaves the slot empty).
//! * Claim and focus writes, and inbox reads, need a session token of a controller
//!   registered as that seat; a refusal is `unauthorized`, audited, changes nothing, and
//!   reads the same whether or not the seat exists.
//! * `serve --open-registration` opens unenrolled identities only, and says so on /metrics.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use crate::master::{Co, Ctl, PROJECT, err_doc, ok_doc, s};
use crate::serve::{Deployment, http_get, metric};

/// The three ways to reach the coordinator, each with its own store.
fn each_store(test: &str, check: impl Fn(&Co)) {
    check(&Co::new());
    check(&Co::http_sqlite());
    if let Some(co) = Co::http_redis_pg(test) {
        check(&co);
    }
}

fn register_args<'a>(identity: &'a str, machine: &'a str) -> Vec<&'a str> {
    vec!["session", "register", "--project", PROJECT, "--identity", identity, "--machine", machine, "--json"]
}

/// The message of an `unauthorized` refusal, with the name it mentions replaced, so two
/// refusals can be compared for what they give away.
fn blind(err: &Value, name: &str) -> String {
    err["message"].as_str().unwrap().replace(name, "NAME")
}

/// The audit rows of `verb` in [`PROJECT`], as (actor, result, target).
fn audited(co: &Co, verb: &str) -> Vec<(String, String, Option<String>)> {
    let doc = co.ok(&["audit", "--project", PROJECT, "--limit", "1000"]);
    doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["verb"] == verb)
        .map(|e| {
            (
                e["actor"].as_str().unwrap().to_string(),
                e["result"].as_str().unwrap().to_string(),
                e["target"].as_str().map(String::from),
            )
        })
        .collect()
}

fn check_registration_needs_proof(co: &Co) {
    // Nobody enrolled: refused, and the same answer as for an identity that is enrolled.
    let r = co.run(&register_args("alice", "m1"));
    let unknown = err_doc(&r, 6, "unauthorized");
    let kf = co.key_file("alice");
    assert_eq!(std::fs::metadata(&kf).unwrap().permissions().mode() & 0o777, 0o600);
    let key = std::fs::read_to_string(&kf).unwrap();
    assert_eq!(key.trim().len(), 64, "{key:?}");
    let enrolled = err_doc(&co.run(&register_args("alice", "m1")), 6, "unauthorized");
    assert_eq!(blind(&unknown, "alice"), blind(&enrolled, "alice"));
    assert_eq!(unknown["hint"], enrolled["hint"]);
    let zed = err_doc(&co.run(&register_args("zed", "m1")), 6, "unauthorized");
    assert_eq!(blind(&zed, "zed"), blind(&enrolled, "alice"));
    // Enrolled twice: never overwritten.
    err_doc(&co.run(&["identity", "add", "--project", PROJECT, "alice", "--json"]), 3, "identity_exists");
    // Without --key-file the key is printed once, in the JSON.
    let bob = co.ok(&["identity", "add", "--project", PROJECT, "bob"]);
    assert_eq!(bob["identity"], "bob");
    let bob_key = bob["key"].as_str().unwrap().to_string();
    assert_eq!(bob_key.len(), 64);

    // With the key (file or environment): registered; the first one becomes master.
    let alice = co.register("alice", "cli", "m1");
    let r = co.run_env(&register_args("bob", "m2"), &[("WRITERCTL_IDENTITY_KEY", &bob_key)]);
    r.assert_ok();
    assert_eq!(r.json::<Value>()["is_master"], false);
    let st = co.ok(&["master", "status", "--project", PROJECT]);
    assert_eq!(st["master"]["identity"], "alice");

    // Another identity's key proves nothing.
    let r = co.run_env(&register_args("alice", "m9"), &[("WRITERCTL_IDENTITY_KEY", &bob_key)]);
    err_doc(&r, 6, "unauthorized");

    // Issue 19's exploit: alice's row goes stale; registering her key with no credential
    // used to hand over her session, is_master and a new token. Now: refused.
    std::thread::sleep(std::time::Duration::from_millis(1_200));
    let mut stale = register_args("alice", "m1");
    stale.extend(["--freshness-seconds", "1"]);
    err_doc(&co.run(&stale), 6, "unauthorized");
    // Her own key, or her row's current token, still restarts her.
    let mut with_token = stale.clone();
    with_token.extend(["--previous-token-file", s(&alice.token_file)]);
    let back = co.run(&with_token);
    back.assert_ok();
    assert_eq!(
        (back.json::<Value>()["session_id"].as_str(), back.json::<Value>()["is_master"].as_bool()),
        (Some(alice.sid.as_str()), Some(true))
    );
    let audit = audited(co, "session.register");
    let refused = audit.iter().filter(|(_, result, _)| result == "unauthorized").count();
    assert!(refused >= 5, "every refusal is audited: {audit:?}");
}

#[test]
fn registration_needs_the_identity_key_or_the_rows_token() {
    each_store("registration_needs_the_identity_key_or_the_rows_token", check_registration_needs_proof);
}

fn check_rotate_and_remove(co: &Co) {
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    let old_key = co.key_file("alice");
    let new_key = co.dir().join("alice.key.new");
    let v = co.ok(&["identity", "rotate", "--project", PROJECT, "alice", "--key-file", s(&new_key)]);
    assert_eq!((&v["identity"], &v["key_file"], v.get("key")), (&json!("alice"), &json!(s(&new_key)), None));
    // An existing file is never overwritten (and no key is issued: the old one still holds).
    let r = co.run(&["identity", "rotate", "--project", PROJECT, "alice", "--key-file", s(&new_key), "--json"]);
    err_doc(&r, 2, "invalid_argument");
    let mut old = register_args("alice", "m2");
    old.extend(["--identity-key-file", s(&old_key)]);
    err_doc(&co.run(&old), 6, "unauthorized");
    let mut new = register_args("alice", "m2");
    new.extend(["--identity-key-file", s(&new_key)]);
    co.run(&new).assert_ok();
    // Her existing session keeps its token.
    ok_doc(&co.heartbeat(&alice, &alice.token_file));

    let list = co.ok(&["identity", "list", "--project", PROJECT]);
    let names: Vec<&str> =
        list["identities"].as_array().unwrap().iter().map(|i| i["identity"].as_str().unwrap()).collect();
    assert_eq!(names, ["alice", "bob"]);
    assert!(!list.to_string().contains("key_hash"), "{list}");

    // Removing the master's identity: both of her sessions go, the slot empties.
    let gone = co.ok(&["identity", "remove", "--project", PROJECT, "alice"]);
    assert_eq!((&gone["removed"], &gone["was_master"]), (&json!(true), &json!(true)));
    assert_eq!(gone["sessions"].as_array().unwrap().len(), 2, "{gone}");
    let st = co.ok(&["master", "status", "--project", PROJECT]);
    assert_eq!((&st["master"]["identity"], &st["master"]["epoch"]), (&Value::Null, &json!(2)));
    let ids: Vec<&str> =
        st["controllers"].as_array().unwrap().iter().map(|c| c["identity"].as_str().unwrap()).collect();
    assert_eq!(ids, ["bob"]);
    err_doc(&co.heartbeat(&alice, &alice.token_file), 6, "unauthorized");
    err_doc(&co.run(&new), 6, "unauthorized");
    err_doc(&co.run(&["identity", "remove", "--project", PROJECT, "alice", "--json"]), 5, "not_found");
    assert!(bob.sid != alice.sid);
    let verbs: Vec<String> = ["identity.add", "identity.rotate", "identity.remove"]
        .iter()
        .flat_map(|v| audited(co, v).into_iter().map(move |(_, r, _)| format!("{v}:{r}")))
        .collect();
    assert!(verbs.contains(&"identity.rotate:ok".into()) && verbs.contains(&"identity.remove:ok".into()), "{verbs:?}");
}

#[test]
fn rotate_refuses_the_old_key_and_remove_deregisters() {
    each_store("rotate_refuses_the_old_key_and_remove_deregisters", check_rotate_and_remove);
}

/// `claim take` as `seat` with `token` (a token file), `--json`.
fn take(co: &Co, task: &str, seat: &str, token: Option<&Ctl>) -> crate::support::Run {
    let mut a =
        vec!["claim", "take", "--project", PROJECT, "--channel", "ch", "--task", task, "--seat", seat, "--json"];
    if let Some(t) = token {
        a.extend(["--token-file", s(&t.token_file)]);
    }
    co.run(&a)
}

fn check_seat_writes_prove_the_seat(co: &Co) {
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    co.ok(&["channel", "create", "--project", PROJECT, "--channel", "ch", "--steward", "bob"]);

    // No token, bob's token, a seat nobody registered: the same refusal, nothing written.
    let none = err_doc(&take(co, "t", "alice", None), 6, "unauthorized");
    let wrong = err_doc(&take(co, "t", "alice", Some(&bob)), 6, "unauthorized");
    let ghost = err_doc(&take(co, "t", "ghost", Some(&bob)), 6, "unauthorized");
    assert_eq!(none["message"], wrong["message"]);
    assert_eq!(blind(&ghost, "ghost"), blind(&wrong, "alice"));
    let show = ["claim", "show", "--project", PROJECT, "--channel", "ch", "--task", "t", "--json"];
    err_doc(&co.run(&show), 5, "not_found");
    // The environment variable works like the file.
    let r = co.run_env(
        &["claim", "take", "--project", PROJECT, "--channel", "ch", "--task", "t", "--seat", "alice", "--json"],
        &[("WRITERCTL_SESSION_TOKEN", &alice.token)],
    );
    r.assert_ok();
    assert_eq!(r.json::<Value>()["owner"], "alice");

    // Touch and release by someone else's token: refused; by the owner's: applied.
    let owner = |verb: &str, t: &Ctl| {
        co.run(&[
            "claim",
            verb,
            "--project",
            PROJECT,
            "--channel",
            "ch",
            "--task",
            "t",
            "--seat",
            "alice",
            "--token-file",
            s(&t.token_file),
            "--json",
        ])
    };
    err_doc(&owner("touch", &bob), 6, "unauthorized");
    err_doc(&owner("release", &bob), 6, "unauthorized");
    assert_eq!(co.ok(&show[..8])["version"], 1, "nothing changed");
    owner("touch", &alice).assert_ok();
    owner("release", &alice).assert_ok();

    // Focus leases likewise.
    let focus = |verb: &str, t: &Ctl| {
        let mut a =
            vec!["focus", verb, "--project", PROJECT, "--seat", "alice", "--token-file", s(&t.token_file), "--json"];
        if verb == "start" {
            a.extend(["--minutes", "10"]);
        }
        co.run(&a)
    };
    err_doc(&focus("start", &bob), 6, "unauthorized");
    focus("start", &alice).assert_ok();
    err_doc(&focus("end", &bob), 6, "unauthorized");
    focus("end", &alice).assert_ok();

    // The inbox: the steward (bob) got a doorbell; only bob's token reads it.
    let inbox = |t: Option<&Ctl>| {
        let mut a = vec!["inbox", "--project", PROJECT, "--identity", "bob", "--json"];
        if let Some(t) = t {
            a.extend(["--token-file", s(&t.token_file)]);
        }
        co.run(&a)
    };
    err_doc(&inbox(None), 6, "unauthorized");
    err_doc(&inbox(Some(&alice)), 6, "unauthorized");
    let r = inbox(Some(&bob));
    r.assert_ok();
    assert_eq!(r.json::<Value>()["events"].as_array().unwrap().len(), 1, "{}", r.stdout);

    // Every refusal is in the audit log, attributed to the seat it claimed.
    let takes = audited(co, "claim.take");
    let refused: Vec<&str> =
        takes.iter().filter(|(_, r, _)| r == "unauthorized").map(|(actor, ..)| actor.as_str()).collect();
    assert_eq!(refused, ["seat:alice", "seat:alice", "seat:ghost"], "{takes:?}");
    for verb in ["claim.touch", "claim.release", "focus.start", "focus.end", "inbox.read"] {
        assert!(audited(co, verb).iter().any(|(_, r, _)| r == "unauthorized"), "{verb}");
    }
}

#[test]
fn claim_and_focus_writes_and_inbox_reads_prove_the_seat() {
    each_store("claim_and_focus_writes_and_inbox_reads_prove_the_seat", check_seat_writes_prove_the_seat);
}

/// `channel create` and the identity verbs are administrative over HTTP: without the admin
/// token (or with a wrong one) they are refused and audited.
#[test]
fn identity_and_channel_administration_needs_the_admin_token() {
    let co = Co::http_sqlite();
    for args in [
        vec!["identity", "add", "--project", PROJECT, "carol", "--json"],
        vec!["identity", "list", "--project", PROJECT, "--json"],
        vec!["channel", "create", "--project", PROJECT, "--channel", "c", "--steward", "bob", "--json"],
    ] {
        let r = co.run_env(&args, &[("WRITERCTL_ADMIN_TOKEN", "wrong-admin-token-0000")]);
        err_doc(&r, 6, "unauthorized");
    }
    assert!(co.ok(&["identity", "list", "--project", PROJECT])["identities"].as_array().unwrap().is_empty());
    let refused = audited(&co, "channel.create");
    assert_eq!(refused, [("admin".to_string(), "unauthorized".to_string(), Some("c".to_string()))]);
}

/// `--open-registration`: unenrolled identities register without a key (a lab); enrolled
/// ones still need theirs; `/metrics` says the server is open.
#[test]
fn open_registration_opens_only_unenrolled_identities() {
    let co = Co::http(|home, store| Deployment::sqlite(home, store).server_args(&["--open-registration"]));
    let r = co.run(&register_args("lab", "m1"));
    r.assert_ok();
    assert_eq!(r.json::<Value>()["is_master"], true);
    co.key_file("alice");
    err_doc(&co.run(&register_args("alice", "m1")), 6, "unauthorized");
    co.reg("alice");
    let (status, _, body) = http_get(&format!("{}/metrics", co.url()));
    assert_eq!(status, 200);
    assert_eq!(metric(&body, "writerctl_open_registration"), Some(1.0), "{body}");
    let closed = Co::http_sqlite();
    let (_, _, body) = http_get(&format!("{}/metrics", closed.url()));
    assert_eq!(metric(&body, "writerctl_open_registration"), Some(0.0), "{body}");
}
