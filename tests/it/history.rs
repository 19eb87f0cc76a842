//! `writerctl history` and `--reason` (issue 30 point 2, lock-file half): every handoff is
//! listed with epoch, host, pid, pod and reason; the history survives a crash mid-seal; it
//! is filtered by session, time and count; a failure to write it never fails a lock
//! operation; and the lock directory stays exactly what qwen-code and `status` expect.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::support::*;

const GATE: (&str, &str) = ("WRITERCTL_SESSION_WRITER_LEASE", "1");
const LIMIT: Duration = Duration::from_secs(30);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryJson {
    events: Vec<EventJson>,
    skipped_lines: usize,
    warnings: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventJson {
    at: String,
    session_id: String,
    event: String,
    epoch: Option<u64>,
    host: String,
    pid: u64,
    pod: Option<String>,
    reason: Option<String>,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    previous: Option<PreviousJson>,
    #[serde(default)]
    detail: Option<String>,
    by_pid: u32,
    by_uid: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PreviousJson {
    host: String,
    pid: u64,
    epoch: u64,
}

/// `args` + `--runtime-dir R`, with the gate on.
fn gated(env: &TestEnv, args: &[&str]) -> Run {
    cli_bounded(env, args, &[GATE], LIMIT).expect("writerctl hung")
}

fn history(env: &TestEnv, extra: &[&str]) -> HistoryJson {
    let mut args = vec!["history", "--json"];
    args.extend_from_slice(extra);
    let r = env.run(&args);
    r.assert_ok();
    r.json()
}

fn transcript(env: &TestEnv, session: &str) {
    let p = env.runtime().join("chats").join(format!("{session}.jsonl"));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, b"{\"type\":\"user\",\"text\":\"hi\"}\n").unwrap();
}

fn token(env: &TestEnv, name: &str) -> String {
    env.tmp.path().join(name).display().to_string()
}

fn history_dir(env: &TestEnv) -> PathBuf {
    env.runtime().join("tmp/writerctl-history")
}

#[test]
fn a_handoff_with_reasons_is_listed_with_epoch_host_pid_and_reason() {
    let env = TestEnv::new();
    transcript(&env, "s");
    let (a, b) = (LiveHolder::start(), LiveHolder::start());
    let (t1, t2) = (token(&env, "t1"), token(&env, "t2"));
    let (pa, pb) = (a.pid().to_string(), b.pid().to_string());
    gated(&env, &["acquire", "--session", "s", "--pid", &pa, "--token-file", &t1, "--reason", "first start"])
        .assert_ok();
    gated(&env, &["seal", "--session", "s", "--token-file", &t1, "--reason", "node drain"]).assert_ok();
    gated(&env, &["takeover", "--session", "s", "--pid", &pb, "--token-file", &t2, "--reason", "failover, OPS-12"])
        .assert_ok();
    gated(&env, &["release", "--session", "s", "--token-file", &t2, "--reason", "done for today"]).assert_ok();

    let h = history(&env, &[]);
    assert_eq!((h.skipped_lines, h.warnings.len()), (0, 0), "{h:?}");
    let got: Vec<(&str, Option<u64>, u64, Option<&str>)> =
        h.events.iter().map(|e| (e.event.as_str(), e.epoch, e.pid, e.reason.as_deref())).collect();
    let (pa, pb) = (u64::from(a.pid()), u64::from(b.pid()));
    assert_eq!(
        got,
        [
            ("acquire", Some(1), pa, Some("first start")),
            ("seal", Some(1), pa, Some("node drain")),
            ("takeover", Some(2), pb, Some("failover, OPS-12")),
            ("release", Some(2), pb, Some("done for today")),
        ]
    );
    let host = writerctl::lockfile::sys::hostname();
    for e in &h.events {
        assert_eq!((e.session_id.as_str(), e.host.as_str(), e.pod.as_deref()), ("s", host.as_str(), None));
        assert!(e.at.ends_with('Z') && e.by_pid != 0, "{e:?}");
        assert_eq!(e.by_uid, rustix::process::geteuid().as_raw());
    }
    let prev = h.events[2].previous.as_ref().expect("a takeover names what it replaced");
    assert_eq!((prev.host.as_str(), prev.pid, prev.epoch), (host.as_str(), pa, 1));
    // The reason is in the history only: never in a lock record qwen-code reads.
    gated(
        &env,
        &[
            "acquire",
            "--session",
            "s",
            "--pid",
            &pa.to_string(),
            "--token-file",
            &token(&env, "t3"),
            "--reason",
            "marker-7",
        ],
    )
    .assert_ok();
    let record = std::fs::read_to_string(env.lock("s")).unwrap();
    assert!(!record.contains("marker-7") && !record.contains("reason"), "{record}");
    // The human table says the same.
    let r = env.run(&["history", "--session", "s"]);
    r.assert_ok();
    for want in ["acquire", "seal", "takeover", "release", "node drain", "failover, OPS-12", &pb.to_string()] {
        assert!(r.stdout.contains(want), "{want:?} missing:\n{}", r.stdout);
    }
}

#[test]
fn a_history_survives_a_crash_mid_seal_and_still_lists_what_happened() {
    let env = TestEnv::new();
    transcript(&env, "s");
    let holder = LiveHolder::start();
    let t1 = token(&env, "t1");
    let pid = holder.pid().to_string();
    gated(&env, &["acquire", "--session", "s", "--pid", &pid, "--token-file", &t1, "--reason", "start"]).assert_ok();
    // SIGKILL in the middle of the seal: the claim is installed, the transition not made.
    let crashed = cli_bounded(
        &env,
        &["seal", "--session", "s", "--token-file", &t1, "--reason", "drain"],
        &[GATE, ("WRITERCTL_FAILPOINTS", "seal.after_claim=kill")],
        LIMIT,
    )
    .expect("the seal hung");
    assert_eq!(crashed.code, -1, "the seal was to die of SIGKILL:\n{}", crashed.stderr);
    // A crash mid-append as well: a torn last line.
    let log = history_dir(&env).join("history.jsonl");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{\"at\":\"2026-12-03T03:12:00.000Z\",\"session_id\":\"s\",\"ev");
    std::fs::write(&log, bytes).unwrap();

    let h = history(&env, &[]);
    assert_eq!(
        h.events.iter().map(|e| e.event.as_str()).collect::<Vec<_>>(),
        ["acquire"],
        "no seal line: it never happened"
    );
    assert_eq!(h.skipped_lines, 1, "the torn line is skipped and counted");
    let r = env.run(&["history"]);
    r.assert_ok();
    assert!(r.stderr.contains("1 line(s) of the history were not events"), "{}", r.stderr);

    // The writer is gone; the operator fences and recovers (issue 38: a stale record `run`
    // could never reclaim is moved aside), then a plain acquire takes the free session.
    holder.stop();
    let r = gated(
        &env,
        &["recover", "--session", "s", "--writers-fenced", "--yes", "--json", "--reason", "crash at 03:12"],
    );
    r.assert_ok();
    let t2 = token(&env, "t2");
    let me = std::process::id().to_string();
    gated(&env, &["acquire", "--session", "s", "--pid", &me, "--token-file", &t2, "--reason", "back in service"])
        .assert_ok();

    let h = history(&env, &[]);
    let got: Vec<(&str, Option<&str>)> = h.events.iter().map(|e| (e.event.as_str(), e.reason.as_deref())).collect();
    assert_eq!(
        got,
        [("acquire", Some("start")), ("recover", Some("crash at 03:12")), ("acquire", Some("back in service"))]
    );
    let recover = &h.events[1];
    assert!(recover.detail.as_deref().is_some_and(|d| d.contains("moved aside")), "{recover:?}");
    assert_eq!(recover.epoch, None);
    let acquired = &h.events[2];
    assert_eq!((acquired.rule.as_deref(), acquired.previous.as_ref().map(|p| p.pid)), (None, None));
    // Lines appended after the torn one are whole: it is still the only one skipped.
    assert_eq!(h.skipped_lines, 1);
}

#[test]
fn session_since_and_limit_filter_newest_last() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    for (s, reason) in [("a", "one"), ("b", "two"), ("a", "three")] {
        let t = token(&env, &format!("{s}-{reason}"));
        env.run(&["acquire", "--session", s, "--pid", &pid, "--token-file", &t, "--reason", reason]).assert_ok();
        env.run(&["release", "--session", s, "--token-file", &t]).assert_ok();
    }
    let all = history(&env, &[]);
    assert_eq!(all.events.len(), 6);
    let a = history(&env, &["--session", "a"]);
    assert_eq!(a.events.iter().filter_map(|e| e.reason.as_deref()).collect::<Vec<_>>(), ["one", "three"]);
    assert!(a.events.iter().all(|e| e.session_id == "a"));
    // --limit keeps the newest N, still oldest first.
    let last = history(&env, &["--limit", "2"]);
    let got: Vec<(&str, &str)> = last.events.iter().map(|e| (e.session_id.as_str(), e.event.as_str())).collect();
    assert_eq!(got, [("a", "acquire"), ("a", "release")]);
    // --since: from the time of the third event on; far in the future: nothing.
    let since = all.events[2].at.clone();
    let recent = history(&env, &["--since", &since]);
    assert_eq!(recent.events.len(), all.events.iter().filter(|e| e.at >= since).count());
    assert!(recent.events.len() >= 4 && recent.events.len() < 6, "{recent:?}");
    assert!(history(&env, &["--since", "2999-01-01T00:00:00Z"]).events.is_empty());
    env.run(&["history", "--json", "--since", "yesterday"]).assert_error(2, "usage");
    env.run(&["history", "--json", "--limit", "0"]).assert_error(2, "usage");
}

#[test]
fn a_bad_reason_is_refused_before_anything_changes() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    let t = token(&env, "t");
    let long = "x".repeat(513);
    for bad in ["two\nlines", "esc\u{1b}[2J", "", long.as_str()] {
        let r = env.run(&["acquire", "--json", "--session", "s", "--pid", &pid, "--token-file", &t, "--reason", bad]);
        r.assert_error(2, "invalid_argument");
        assert!(!env.lock("s").exists(), "{bad:?}: the lock was taken");
        assert!(!std::path::Path::new(&t).exists(), "{bad:?}: the token file was made");
    }
    env.run(&["acquire", "--session", "s", "--pid", &pid, "--token-file", &t, "--reason", &"x".repeat(512)])
        .assert_ok();
    env.run(&["release", "--json", "--session", "s", "--token-file", &t, "--reason", "bad\u{7}"])
        .assert_error(2, "invalid_argument");
    assert!(env.lock("s").exists(), "a refused release released");
    // A preStop seal (no token) checks its reason before it asks any supervisor.
    let r = gated(&env, &["seal", "--json", "--session", "s", "--reason", "two\nlines"]);
    r.assert_error(2, "invalid_argument");
}

#[test]
fn a_history_that_cannot_be_written_never_fails_the_lock_operation() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    // Someone planted a symlink where the history goes: never followed, only a warning.
    let elsewhere = env.tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir_all(env.runtime().join("tmp")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, history_dir(&env)).unwrap();
    let t = token(&env, "t");
    let r = env.run(&["acquire", "--json", "--session", "s", "--pid", &pid, "--token-file", &t, "--reason", "r"]);
    r.assert_ok();
    assert!(r.stderr.contains("event=history_not_recorded"), "{}", r.stderr);
    assert!(env.lock("s").exists());
    env.run(&["release", "--session", "s", "--token-file", &t]).assert_ok();
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "the symlink was followed");
    let h = history(&env, &[]);
    assert!(h.events.is_empty());
    assert_eq!(h.warnings.len(), 1, "{h:?}");
    // A history file others could write is not believed.
    std::fs::remove_file(history_dir(&env)).unwrap();
    env.run(&["acquire", "--session", "s", "--pid", &pid, "--token-file", &token(&env, "t2")]).assert_ok();
    let log = history_dir(&env).join("history.jsonl");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
    let h = history(&env, &[]);
    assert!(h.events.is_empty() && h.warnings[0].contains("0666"), "{h:?}");
}

#[test]
fn the_lock_directory_with_a_history_beside_it_is_still_read_by_status_as_before() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    let t = token(&env, "t");
    env.run(&["acquire", "--session", "s", "--pid", &pid, "--token-file", &t, "--reason", "r"]).assert_ok();
    env.run(&["acquire", "--session", "other", "--pid", &pid, "--token-file", &token(&env, "t2")]).assert_ok();
    env.run(&["release", "--session", "other", "--token-file", &token(&env, "t2")]).assert_ok();
    assert!(history_dir(&env).join("history.jsonl").is_file());
    // Only qwen's names in the lock directory.
    assert_eq!(env.lock_dir_names(), ["s.lock"]);
    let all: StatusAllJson = {
        let r = env.run(&["status", "--json"]);
        r.assert_ok();
        r.json()
    };
    assert_eq!(all.sessions.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), ["s"]);
    assert!(all.sessions[0].side_files.is_empty(), "{:?}", all.sessions[0].side_files);
    // Released everything: status sees no session at all, history still lists them.
    env.run(&["release", "--session", "s", "--token-file", &t]).assert_ok();
    let r = env.run(&["status", "--json"]);
    r.assert_ok();
    let all: StatusAllJson = r.json();
    assert!(all.sessions.is_empty(), "{:?}", all.sessions);
    assert_eq!(history(&env, &[]).events.len(), 4);
}

#[test]
fn run_records_its_steps_with_its_reason() {
    let env = TestEnv::new();
    let mut c = env.cmd();
    c.arg("run").arg("--runtime-dir").arg(env.runtime()).args(["--session", "s", "--reason", "deploy 41"]);
    let ctl = env.tmp.path().join("ctl");
    std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700).create(&ctl).unwrap();
    c.arg("--control-socket").arg(ctl.join("s.sock"));
    c.args(["--", "bash", "-c", "exit 0"]);
    let r = run_bounded(c, LIMIT).expect("run hung");
    r.assert_ok();
    let h = history(&env, &[]);
    let got: Vec<(&str, Option<&str>)> = h.events.iter().map(|e| (e.event.as_str(), e.reason.as_deref())).collect();
    assert_eq!(got, [("acquire", Some("deploy 41")), ("release", Some("deploy 41"))]);
    assert_eq!(h.events[0].epoch, h.events[1].epoch);
}

#[test]
fn history_reads_beside_a_lock_kept_outside_the_runtime_directory() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    let locks = env.tmp.path().join("own/locks");
    std::fs::create_dir_all(&locks).unwrap();
    let lock = locks.join("s.lock").display().to_string();
    let t = token(&env, "t");
    env.run(&["acquire", "--session", "s", "--lock", &lock, "--pid", &pid, "--token-file", &t, "--reason", "own dir"])
        .assert_ok();
    assert!(env.tmp.path().join("own/writerctl-history/history.jsonl").is_file());
    let r = env.run_raw(&["history", "--json", "--lock", &lock]);
    r.assert_ok();
    let h: HistoryJson = r.json();
    assert_eq!(h.events.iter().map(|e| e.reason.as_deref()).collect::<Vec<_>>(), [Some("own dir")]);
    // The runtime directory's own history knows nothing of it; a missing R is an error.
    assert!(history(&env, &[]).events.is_empty());
    let missing = env.tmp.path().join("no-such-runtime").display().to_string();
    env.run_raw(&["history", "--json", "--runtime-dir", &missing]).assert_error(2, "runtime_dir_missing");
}

#[test]
fn transcript_flags_are_refused_by_history() {
    let env = TestEnv::new();
    env.run(&["history", "--json", "--transcript-key", "chats/x.jsonl"]).assert_error(2, "usage");
    env.run(&["history", "--json", "--project-root", "/tmp"]).assert_error(2, "usage");
}

#[test]
fn concurrent_writerctl_processes_keep_every_history_line_whole() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    const PROCS: usize = 6;
    const ROUNDS: usize = 4;
    std::thread::scope(|s| {
        for n in 0..PROCS {
            let (env, pid) = (&env, holder.pid().to_string());
            s.spawn(move || {
                let session = format!("p{n}");
                for i in 0..ROUNDS {
                    let t = token(env, &format!("{session}-{i}"));
                    let reason = format!("process {n} round {i}");
                    env.run(&[
                        "acquire",
                        "--session",
                        &session,
                        "--pid",
                        &pid,
                        "--token-file",
                        &t,
                        "--reason",
                        &reason,
                    ])
                    .assert_ok();
                    env.run(&["release", "--session", &session, "--token-file", &t, "--reason", &reason]).assert_ok();
                }
            });
        }
    });
    let h = history(&env, &["--limit", "1000"]);
    assert_eq!((h.skipped_lines, h.warnings.len()), (0, 0), "{h:?}");
    assert_eq!(h.events.len(), PROCS * ROUNDS * 2);
    for n in 0..PROCS {
        let mine: Vec<(&str, &str)> = h
            .events
            .iter()
            .filter(|e| e.session_id == format!("p{n}"))
            .map(|e| (e.event.as_str(), e.reason.as_deref().unwrap()))
            .collect();
        // Each process's own lines stay in its order.
        let want: Vec<(&str, String)> = (0..ROUNDS)
            .flat_map(|i| {
                [("acquire", format!("process {n} round {i}")), ("release", format!("process {n} round {i}"))]
            })
            .collect();
        assert_eq!(mine, want.iter().map(|(e, r)| (*e, r.as_str())).collect::<Vec<_>>());
    }
}

#[test]
fn a_prestop_seal_is_recorded_with_the_reason_given_to_seal() {
    let env = TestEnv::new();
    transcript(&env, "s");
    let ctl = env.tmp.path().join("ctl");
    std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700).create(&ctl).unwrap();
    let socket = ctl.join("s.sock");
    let mut c = env.cmd();
    c.arg("run").arg("--runtime-dir").arg(env.runtime()).args(["--session", "s", "--reason", "rollout 42"]);
    c.arg("--control-socket").arg(&socket).env(GATE.0, GATE.1);
    let ready = env.tmp.path().join("ready");
    c.args(["--", "bash", "-c", r#"trap 'exit 0' TERM; : >"$T_READY"; while :; do sleep 0.05; done"#, "writer"]);
    c.env("T_READY", &ready);
    let child = c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // Once the writer handles SIGTERM, `seal` without a token asks the supervisor.
    let deadline = std::time::Instant::now() + LIMIT;
    while !(socket.exists() && ready.exists()) {
        assert!(std::time::Instant::now() < deadline, "run never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut s = env.cmd();
    s.arg("seal").arg("--runtime-dir").arg(env.runtime()).args(["--session", "s", "--reason", "preStop: node drain"]);
    s.arg("--control-socket").arg(&socket).env(GATE.0, GATE.1);
    let sealed = run_bounded(s, LIMIT).expect("seal hung");
    sealed.assert_ok();
    // Sealed; run stays until the kubelet's SIGTERM that follows a preStop hook.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    wait_child_bounded(child, LIMIT).expect("run hung").assert_ok();
    let h = history(&env, &[]);
    let got: Vec<(&str, Option<&str>)> = h.events.iter().map(|e| (e.event.as_str(), e.reason.as_deref())).collect();
    assert_eq!(got, [("acquire", Some("rollout 42")), ("seal", Some("preStop: node drain"))]);
}
