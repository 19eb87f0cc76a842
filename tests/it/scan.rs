//! Directory scans (`status` and `recover` without `--session`): one pass that groups every
//! entry by the lock it belongs to, and one malformed-record pause for the whole batch.
//! These tests prove behaviour (each lock sees exactly its own files, each malformed record
//! keeps its own reason); `cargo bench --bench status` proves the speed.

use std::collections::BTreeMap;

use crate::support::{
    RecoverAllJson, StatusAllJson, StatusJson, TestEnv, qwen_active, qwen_active_dead, qwen_sealed, stage,
};

/// A directory of malformed primaries: every one is reported `malformed` with the reason
/// its own bytes give, by `status` and by `recover`'s plan.
#[test]
fn a_directory_of_malformed_records_is_reported_record_by_record() {
    let env = TestEnv::new();
    let dir = env.lock_dir();
    let mut expect = BTreeMap::new();
    for i in 0..40 {
        let session = format!("m{i:02}");
        let body = match i % 4 {
            0 => "not json".to_string(),
            1 => r#"{"schema_version":2,"state":"active"}"#.to_string(),
            2 => qwen_active(&session, "o", 1, None, None, "h").replace(r#""pid":1"#, r#""pid":"one""#),
            _ => "\u{feff}".to_string() + &qwen_active(&session, "o", 1, None, None, "h"),
        };
        stage(&dir.join(format!("{session}.lock")), body.as_bytes());
        expect.insert(session, i % 4);
    }
    stage(&env.lock("ok"), qwen_sealed("ok", "o").as_bytes());

    let all: StatusAllJson = env.run(&["status", "--json"]).assert_ok().json();
    assert_eq!(all.sessions.len(), 41);
    let mut reason_by_kind: BTreeMap<usize, String> = BTreeMap::new();
    for s in &all.sessions {
        if s.session_id == "ok" {
            assert_eq!(s.state, "sealed");
            continue;
        }
        assert_eq!(s.state, "malformed", "{}", s.session_id);
        let problem = s.problem.clone().unwrap_or_default();
        assert!(!problem.is_empty(), "{} has a reason", s.session_id);
        // Records damaged the same way give the same reason, different damage another.
        let kind = expect[&s.session_id];
        let seen = reason_by_kind.entry(kind).or_insert_with(|| problem.clone());
        assert_eq!(*seen, problem, "{}", s.session_id);
        // The same answer as asking for that one session.
        let one: StatusJson = env.run(&["status", "--json", "--session", &s.session_id]).assert_ok().json();
        assert_eq!((one.state.as_str(), one.problem.as_deref()), ("malformed", Some(problem.as_str())));
    }
    assert_eq!(reason_by_kind.len(), 4, "four kinds of damage, four reasons: {reason_by_kind:#?}");

    let plan: RecoverAllJson = env.run(&["recover", "--json"]).assert_ok().json();
    assert_eq!(plan.sessions.len(), 41);
    for s in plan.sessions.iter().filter(|s| s.session_id != "ok") {
        let a = &s.actions[0];
        assert_eq!((a.action.as_str(), a.file.as_str()), ("move_aside", &*format!("{}.lock", s.session_id)));
        assert!(a.reason.starts_with("malformed lock ("), "{}: {}", s.session_id, a.reason);
    }
}

/// Side files, primaries gone but residue left, and session ids that contain `.lock`: the
/// one-pass grouping gives every session exactly the view `status --session` gives it.
#[test]
fn the_directory_view_groups_every_file_under_its_own_lock() {
    let env = TestEnv::new();
    let dir = env.lock_dir();
    let o = "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f";
    let n = "11111111-2222-4333-8444-555555555555";
    // a: active + claim + released; a.lock.b (an id containing `.lock`) with a stale file;
    // c: only residue (no primary); d: sealed with a retired sealed file and a temp.
    stage(&env.lock("a"), qwen_active_dead("a", o).as_bytes());
    stage(&dir.join("a.lock.claim"), qwen_active_dead("a", n).as_bytes());
    stage(&dir.join(format!("a.lock.released.{n}")), qwen_active_dead("a", n).as_bytes());
    stage(&dir.join("a.lock.b.lock"), qwen_active_dead("a.lock.b", o).as_bytes());
    stage(&dir.join("a.lock.b.lock.stale.7.u"), qwen_active_dead("a.lock.b", n).as_bytes());
    stage(&dir.join(format!("c.lock.handoff.{o}")), qwen_active_dead("c", o).as_bytes());
    stage(&env.lock("d"), qwen_sealed("d", o).as_bytes());
    stage(&dir.join(format!("d.lock.sealed.{o}.{n}")), qwen_sealed("d", o).as_bytes());
    stage(&dir.join(format!("d.lock.{n}.tmp")), qwen_active_dead("d", n).as_bytes());
    stage(&dir.join("unrelated.txt"), b"x");

    let all: StatusAllJson = env.run(&["status", "--json"]).assert_ok().json();
    let ids: Vec<&str> = all.sessions.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(ids, ["a", "a.lock.b", "c", "d"]);
    for s in &all.sessions {
        let one: StatusJson = env.run(&["status", "--json", "--session", &s.session_id]).assert_ok().json();
        let names = |v: &StatusJson| v.side_files.iter().map(|f| (f.name.clone(), f.kind.clone())).collect::<Vec<_>>();
        assert_eq!(names(s), names(&one), "{}", s.session_id);
        assert_eq!(
            (s.state.as_str(), s.claim.is_some()),
            (one.state.as_str(), one.claim.is_some()),
            "{}",
            s.session_id
        );
    }
    let kinds = |id: &str| -> Vec<String> {
        all.sessions.iter().find(|s| s.session_id == id).unwrap().side_files.iter().map(|f| f.kind.clone()).collect()
    };
    assert_eq!(kinds("a"), ["released"]);
    assert_eq!(kinds("a.lock.b"), ["stale"]);
    assert_eq!(kinds("c"), ["handoff"]);
    assert_eq!(kinds("d"), ["install_temp", "sealed_retired"]);
    assert_eq!(all.sessions[0].state, "in_transition", "a's claim");
}

/// A directory large enough to be read by one thread per core: every lock is still listed
/// once, in order, with the state and side files its own bytes give.
#[test]
fn a_large_directory_read_in_parallel_keeps_every_lock_and_its_order() {
    let env = TestEnv::new();
    let dir = env.lock_dir();
    const N: usize = 2_600; // above the parallel threshold (2,000 entries)
    for i in 0..N {
        let session = format!("p{i:05}");
        let body = match i % 3 {
            0 => qwen_sealed(&session, "o"),
            1 => qwen_active_dead(&session, "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f"),
            _ => "not json".to_string(),
        };
        stage(&dir.join(format!("{session}.lock")), body.as_bytes());
        if i % 5 == 0 {
            stage(&dir.join(format!("{session}.lock.claim")), b"x");
        }
    }
    let all: StatusAllJson = env.run(&["status", "--json"]).assert_ok().json();
    assert_eq!(all.sessions.len(), N);
    for (i, s) in all.sessions.iter().enumerate() {
        assert_eq!(s.session_id, format!("p{i:05}"), "order");
        let want = if i % 5 == 0 { "in_transition" } else { ["sealed", "active", "malformed"][i % 3] };
        assert_eq!(s.state, want, "{}", s.session_id);
    }
}
