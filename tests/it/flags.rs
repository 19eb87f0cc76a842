//! No flag is silently ignored: a flag that a command accepts but cannot honour on some path
//! is refused there (`usage`, exit 2) with a hint naming what does honour it, and nothing is
//! changed. One test per case found in the audit of every command's flags (issue 14 §5).

use serde_json::Value;

use crate::master::{Co, ok_doc};
use crate::support::{Run, TestEnv, qwen_sealed_for, sha256_hex, stage};

const GATE: (&str, &str) = ("WRITERCTL_SESSION_WRITER_LEASE", "1");

fn usage(r: &Run) -> Value {
    r.assert_error(2, "usage");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    v["error"].clone()
}

fn gated(env: &TestEnv, args: &[&str]) -> Run {
    env.run_env(args, GATE.0, GATE.1)
}

/// The case: over HTTP a server judges freshness by its own threshold; a client's
/// `--freshness-seconds 1` used to be dropped, handing mastership to a controller whose
/// heartbeat was far older than 1 s.
#[test]
fn freshness_seconds_over_http_is_refused_and_mastership_does_not_move() {
    let co = Co::http_sqlite();
    let alice = co.reg("alice");
    co.reg("bob");
    let before = co.status();
    let mut c = co.base();
    c.args(["master", "handoff", "--json", "--project", crate::master::PROJECT, "--session", &alice.sid])
        .arg("--token-file")
        .arg(&alice.token_file)
        .args(["--to", "bob", "--freshness-seconds", "1", "--coordinator"])
        .arg(co.url());
    let r = crate::master::exec(c, None);
    let e = usage(&r);
    let said = format!("{} {}", e["message"], e["hint"]);
    assert!(said.contains("coordinator serve --freshness-seconds"), "{said}");
    assert_eq!(co.status()["master"], before["master"], "nothing was handed off");
}

/// Every coordinator command refuses it over HTTP, before it connects (no server here).
#[test]
fn freshness_seconds_is_refused_by_every_coordinator_command_over_http() {
    let env = TestEnv::new();
    let url = "http://127.0.0.1:9";
    let cases: [&[&str]; 5] = [
        &["master", "status", "--project", "p"],
        &["audit"],
        &["inbox", "--project", "p", "--identity", "i"],
        &["claim", "list", "--project", "p", "--channel", "c"],
        &["steward", "report", "--project", "p", "--channel", "c"],
    ];
    for args in cases {
        let r = env.run_raw(&[args, &["--json", "--freshness-seconds", "5", "--coordinator", url]].concat());
        let e = usage(&r);
        assert!(e["hint"].as_str().unwrap().contains("coordinator serve --freshness-seconds"), "{args:?}: {e}");
    }
}

/// `seal` with a token seals directly; the supervisor flags would be ignored.
#[test]
fn seal_with_a_token_refuses_the_supervisor_flags() {
    let env = TestEnv::new();
    let tok = env.acquire_for("s", std::process::id());
    let lock = std::fs::read(env.lock("s")).unwrap();
    for extra in [&["--control-socket", "/tmp/nowhere.sock"][..], &["--timeout", "5"]] {
        let mut a = vec!["seal", "--json", "--session", "s", "--token-file", tok.to_str().unwrap()];
        a.extend(extra);
        let e = usage(&gated(&env, &a));
        assert!(e["message"].as_str().unwrap().contains("no token"), "{e}");
        assert_eq!(std::fs::read(env.lock("s")).unwrap(), lock, "still active, unchanged");
    }
}

/// `seal` without a token asks the supervisor, which seals the key it was started with.
#[test]
fn seal_via_the_supervisor_refuses_a_transcript_key() {
    let env = TestEnv::new();
    env.runtime();
    for extra in [&["--transcript-key", "chats/other.jsonl"][..], &["--project-root", "/home/u/repo"]] {
        let mut a = vec!["seal", "--json", "--session", "s"];
        a.extend(extra);
        let e = usage(&gated(&env, &a));
        assert!(e["hint"].as_str().unwrap().contains("writerctl run"), "{e}");
    }
}

/// `status` of every session checks no proof: a transcript flag there would mean nothing.
#[test]
fn status_of_every_session_refuses_transcript_flags() {
    let env = TestEnv::new();
    env.acquire_for("s", std::process::id());
    for extra in [&["--transcript-key", "chats/s.jsonl"][..], &["--project-root", "/home/u/repo"]] {
        let mut a = vec!["status", "--json"];
        a.extend(extra);
        let e = usage(&env.run(&a));
        assert!(e["hint"].as_str().unwrap().contains("--session"), "{e}");
    }
}

/// `recover` over a directory: one `--transcript-key` cannot name every session's
/// transcript (refused), and `--project-root` names each one's (honoured: it decides
/// whether a seal still matches).
#[test]
fn recover_of_every_session_refuses_a_transcript_key_and_honours_a_project_root() {
    let env = TestEnv::new();
    let e = usage(&env.run(&["recover", "--json", "--transcript-key", "chats/s.jsonl"]));
    assert!(e["hint"].as_str().unwrap().contains("--project-root"), "{e}");

    // A seal for the project key whose transcript changed since.
    let key = "projects/-home-u-repo/chats/s.jsonl";
    let t = env.runtime().join(key);
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    std::fs::write(&t, b"{\"a\":1}\n").unwrap();
    stage(&env.lock("s"), qwen_sealed_for("s", "o", key, Some(b"{\"a\":2}\n")).as_bytes());
    assert_ne!(sha256_hex(b"{\"a\":2}\n"), sha256_hex(&std::fs::read(&t).unwrap()));
    let action = |extra: &[&str]| {
        let mut a = vec!["recover", "--json"];
        a.extend(extra);
        let v = ok_doc(&env.run(&a));
        v["sessions"][0]["actions"][0]["action"].as_str().unwrap().to_owned()
    };
    assert_eq!(action(&[]), "keep", "writerctl's default key is another transcript: nothing judged");
    assert_eq!(action(&["--project-root", "/home/u/repo"]), "move_aside", "the project's transcript changed");
}

/// `completions --json` is one JSON document, as `--json` promises for every command.
#[test]
fn completions_honour_json() {
    let env = TestEnv::new();
    let r = env.run_raw(&["completions", "bash", "--json"]);
    let v = ok_doc(&r);
    assert_eq!(v["shell"], "bash");
    assert!(v["script"].as_str().unwrap().contains("writerctl"));
}
