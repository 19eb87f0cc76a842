//! Issue 38: the transcript is the arbiter. A new writer gets the transcript only when the
//! kernel proves that nothing can still write it — the old holder's tree gone by its holder
//! lock (the very file the record names) and no open write description anywhere — and a
//! crash never ends where only a person can find the way back.
//!
//! One test per reproduction of the issue, each run as a user would, with the real binary:
//!
//! 1. a write descriptor outside `run`'s tree blocks every reclaim (plain, managed, `run`,
//!    `recover`) until it closes, then the next writer gets the session by proof; the same
//!    after a plain release;
//! 2. `recover --writers-fenced` never moves a running owner whose holder evidence is
//!    unverifiable (holder file removed, or hard-linked);
//! 4. a replaced holder file is not "released";
//! 5. one transcript, one writer: a second session, or a second lock path, is refused;
//! 8. a pod SIGKILLed past its grace (or whose writer crashed) is taken over by the next
//!    pod's `run` by proof, with no label rule; `run --wait` on a lock only a person can
//!    clear says so at once, once, with the command;
//! 9. a gate-off preStop seal is not silent, and `run` warns at start;
//!
//! and `doctor` fails a session `run` can never take without a person.
//! Reproduction 3 (a probe racing the holder lock's creation) is a unit test of
//! `holder_lock::create_holder_lock`; 6 and 7 have their own files.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

const S: &str = "arb";
const LIMIT: Duration = Duration::from_secs(60);

/// A writer that appends one line, says it is ready (its pid in `ready`) and sleeps.
fn sleeping_writer(ready: &Path) -> String {
    format!(
        r#"printf '{{"a":1}}\n' >>"$WRITERCTL_TRANSCRIPT"; echo $$ >{}.tmp; mv {0}.tmp {0}; exec sleep 1000"#,
        ready.display()
    )
}

struct Supervisor {
    child: Child,
    socket: PathBuf,
    stderr: PathBuf,
}

/// `writerctl run` for session `session` with the gate on (unless `vars` says otherwise),
/// the writer in our pid namespace (so its death can be waited for), stderr kept in a file.
fn start_run(env: &TestEnv, session: &str, script: &str, extra: &[&str], vars: &[(&str, &str)]) -> Supervisor {
    let dir = env.tmp.path().join(format!("run-{session}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let socket = dir.join("run.sock");
    let stderr = dir.join("stderr");
    let mut c = env.cmd();
    c.args(["run", "--json", "--session", session, "--pid-namespace", "off", "--grace", "2"])
        .arg("--runtime-dir")
        .arg(env.runtime())
        .arg("--control-socket")
        .arg(&socket)
        .args(extra)
        .env("WRITERCTL_SESSION_WRITER_LEASE", "1");
    for (k, v) in vars {
        c.env(k, v);
    }
    c.args(["--", "sh", "-c", script]).stdout(Stdio::null()).stderr(std::fs::File::create(&stderr).unwrap());
    Supervisor { child: c.spawn().unwrap(), socket, stderr }
}

/// The exit code of `child` once it exits by itself within [`LIMIT`] (killed otherwise).
fn wait_bounded(child: &mut Child) -> Option<i32> {
    let until = Instant::now() + LIMIT;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code();
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_for(path: &Path, what: &str) {
    let until = Instant::now() + LIMIT;
    while !path.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(path.exists(), "{what} never happened");
}

fn pid_in(path: &Path) -> i32 {
    std::fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

fn alive(pid: i32) -> bool {
    rustix::process::test_kill_process(rustix::process::Pid::from_raw(pid).unwrap()).is_ok()
}

/// SIGKILLs `pid` (maybe not our child) and waits until it is gone.
fn kill_and_wait_gone(pid: i32) {
    let _ = rustix::process::kill_process(rustix::process::Pid::from_raw(pid).unwrap(), rustix::process::Signal::KILL);
    let until = Instant::now() + LIMIT;
    while alive(pid) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "pid {pid} survived SIGKILL");
}

/// SIGKILLs the supervisor (no handoff: a pod killed past its grace) and waits until its
/// writer `writer` is gone too (the launcher's parent-death signal takes it down).
fn crash(mut sup: Supervisor, writer: i32) {
    sup.child.kill().unwrap();
    sup.child.wait().unwrap();
    kill_and_wait_gone(writer);
}

/// `writerctl SUBCOMMAND --runtime-dir R ARGS...` (the runtime directory before any `--`),
/// with a cleared environment plus `vars`, bounded.
fn cli(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut c = env.cmd();
    c.arg(args[0]).arg("--runtime-dir").arg(env.runtime()).args(&args[1..]);
    for (k, v) in vars {
        c.env(k, v);
    }
    run_bounded(c, LIMIT).unwrap_or_else(|| panic!("`{}` hung", args.join(" ")))
}

fn status(env: &TestEnv, session: &str) -> Value {
    let r = cli(env, &["status", "--json", "--session", session], &[]);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("status is not JSON ({e}): {}\n{}", r.stdout, r.stderr))
}

fn transcript(env: &TestEnv, session: &str) -> PathBuf {
    env.runtime().join("chats").join(format!("{session}.jsonl"))
}

fn record(env: &TestEnv, session: &str) -> Value {
    serde_json::from_slice(&std::fs::read(env.lock(session)).unwrap()).unwrap()
}

const GATE: &[(&str, &str)] = &[("WRITERCTL_SESSION_WRITER_LEASE", "1")];

#[test]
fn an_escaped_write_descriptor_blocks_every_reclaim_until_it_closes() {
    let env = TestEnv::new();
    let ready = env.tmp.path().join("ready");
    let sup = start_run(&env, S, &sleeping_writer(&ready), &[], &[]);
    wait_for(&ready, "the writer starting");
    // The writer's transcript descriptor escapes the tree (what an SCM_RIGHTS pass, a
    // sidecar or a daemon amounts to): this test process holds it open for writing.
    let escaped = std::fs::OpenOptions::new().append(true).open(transcript(&env, S)).unwrap();
    crash(sup, pid_in(&ready));
    let held = std::fs::read(env.lock(S)).unwrap();

    let st = status(&env, S);
    let plain = cli(&env, &["acquire", "--json", "--session", S], &[]);
    let managed = cli(&env, &["acquire", "--managed", "--json", "--session", S], GATE);
    let recover = cli(&env, &["recover", "--json", "--session", S, "--writers-fenced", "--yes"], &[]);
    let next = cli(&env, &["run", "--json", "--session", S, "--", "true"], GATE);
    let after = std::fs::read(env.lock(S)).unwrap();

    assert_eq!(st["liveness"]["code"], "transcript_open_for_writing", "{st}");
    assert_eq!(st["live"], true, "{st}");
    assert!(!st["next_step"].as_str().unwrap().contains("acquire` reclaims"), "{st}");
    plain.assert_error(3, "session_writer_conflict");
    managed.assert_error(3, "session_writer_conflict");
    assert_eq!(recover.code, 3, "recover must refuse: {}\n{}", recover.stdout, recover.stderr);
    assert!(recover.stdout.contains("open for writing"), "{}", recover.stdout);
    assert_ne!(next.code, 0, "run took a transcript that another description still writes: {}", next.stderr);
    assert_eq!(after, held, "a new writer got the session while the escaped descriptor could still append");

    // Closed: the next writer gets the session by the kernel's proof, no person involved.
    drop(escaped);
    let tf = env.tmp.path().join("t.token");
    let r = cli(&env, &["acquire", "--managed", "--json", "--session", S, "--token-file", tf.to_str().unwrap()], GATE);
    r.assert_ok();
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["recovered_from"]["rule"], "kernel_proof", "{}", r.stdout);
    assert_eq!(
        j["recovered_from"]["evidence"],
        serde_json::json!(["holder_lock_released", "read_lease"]),
        "{}",
        r.stdout
    );
}

#[test]
fn after_a_release_an_open_write_descriptor_still_blocks_a_new_writer() {
    let env = TestEnv::new();
    let tf = env.tmp.path().join("t.token");
    cli(&env, &["acquire", "--json", "--session", S, "--token-file", tf.to_str().unwrap()], &[]).assert_ok();
    std::fs::create_dir_all(env.runtime().join("chats")).unwrap();
    let escaped = std::fs::OpenOptions::new().create(true).append(true).open(transcript(&env, S)).unwrap();
    cli(&env, &["release", "--json", "--session", S, "--token-file", tf.to_str().unwrap()], &[]).assert_ok();
    std::fs::remove_file(&tf).unwrap();
    let refused = cli(&env, &["acquire", "--json", "--session", S, "--token-file", tf.to_str().unwrap()], &[]);
    refused.assert_error(3, "session_writer_conflict");
    assert!(refused.stdout.contains("open for writing"), "{}", refused.stdout);
    assert!(!env.lock(S).exists(), "nothing may be installed");
    let st = status(&env, S);
    assert!(
        st["next_step"].as_str().unwrap().contains("open for writing")
            || st["problem"].as_str().is_some_and(|p| p.contains("open for writing")),
        "{st}"
    );
    drop(escaped);
    cli(&env, &["acquire", "--json", "--session", S, "--token-file", tf.to_str().unwrap()], &[]).assert_ok();
}

#[test]
fn recover_never_moves_a_running_owner_whose_holder_evidence_is_unverifiable() {
    for how in ["removed", "hard-linked"] {
        let env = TestEnv::new();
        let ready = env.tmp.path().join("ready");
        let mut sup = start_run(&env, S, &sleeping_writer(&ready), &[], &[]);
        wait_for(&ready, "the writer starting");
        let holder = record(&env, S)["writerctl_holder_lock"].as_str().unwrap().to_owned();
        let holder_path = env.lock_dir().join(&holder);
        match how {
            "removed" => std::fs::remove_file(&holder_path).unwrap(),
            _ => std::fs::hard_link(&holder_path, env.tmp.path().join("backup-copy")).unwrap(),
        }
        let held = std::fs::read(env.lock(S)).unwrap();
        let r = cli(&env, &["recover", "--json", "--session", S, "--writers-fenced", "--yes"], &[]);
        let after = std::fs::read(env.lock(S)).ok();
        let st = status(&env, S);
        sup.child.kill().unwrap();
        sup.child.wait().unwrap();
        kill_and_wait_gone(pid_in(&ready));
        assert_eq!(r.code, 3, "{how}: recover must refuse: {}\n{}", r.stdout, r.stderr);
        let j: RecoverJson = serde_json::from_str(&r.stdout).unwrap();
        assert!(j.blocked.as_deref().is_some_and(|b| b.contains("running")), "{how}: {j:?}");
        assert_eq!(after.as_deref(), Some(&held[..]), "{how}: a running owner was moved aside");
        assert_eq!(st["liveness"]["code"], "running", "{how}: {st}");
    }
}

#[test]
fn a_replaced_holder_file_is_not_released() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.lock_dir()).unwrap();
    let l = local();
    let name = format!("{S}.lock.holder.{}", uuid::Uuid::new_v4());
    let path = env.lock_dir().join(&name);
    // The holder's file, held by "its tree" (this test), recorded with its identity, from
    // another pid namespace of this boot (the pid rule cannot judge it).
    let original = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path).unwrap();
    rustix::fs::flock(&original, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    let id = holder_file_id(&path);
    let rec = qwen_active(
        S,
        "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f",
        7,
        Some(&format!("linux:{}:100", l.boot_id)),
        Some(l.pid_ns + 1),
        &l.hostname,
    )
    .replacen('}', &format!(r#","writerctl_holder_lock":"{name}","writerctl_holder_lock_id":"{id}"}}"#), 1);
    stage(&env.lock(S), rec.as_bytes());
    assert_eq!(status(&env, S)["liveness"]["code"], "holder_lock_held");
    // Removed and recreated (a backup restore, an operator "cleaning up"): a free lock on a
    // new file says nothing about the writer, which still holds the old one.
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, b"").unwrap();
    let st = status(&env, S);
    let r = cli(&env, &["acquire", "--json", "--session", S], &[]);
    drop(original);
    assert_eq!(st["liveness"]["code"], "holder_lock_unverifiable", "{st}");
    assert!(st["liveness"]["description"].as_str().unwrap().contains("replaced"), "{st}");
    r.assert_error(3, "session_writer_conflict");
    assert_eq!(std::fs::read(env.lock(S)).unwrap(), rec.as_bytes(), "the writer's record was reclaimed");
}

#[test]
fn one_transcript_has_one_writer_whatever_session_or_lock_path_names_it() {
    let env = TestEnv::new();
    let ready = env.tmp.path().join("ready");
    let mut sup = start_run(&env, "a", &sleeping_writer(&ready), &[], &[]);
    wait_for(&ready, "the writer starting");
    let other_lock = env.tmp.path().join("elsewhere.lock");
    let second_session = cli(&env, &["acquire", "--json", "--session", "b", "--transcript-key", "chats/a.jsonl"], &[]);
    let second_path = cli(&env, &["acquire", "--json", "--session", "a", "--lock", other_lock.to_str().unwrap()], &[]);
    let second_run =
        cli(&env, &["run", "--json", "--session", "b", "--transcript-key", "chats/a.jsonl", "--", "true"], GATE);
    sup.child.kill().unwrap();
    sup.child.wait().unwrap();
    kill_and_wait_gone(pid_in(&ready));
    second_session.assert_error(3, "session_writer_conflict");
    assert!(second_session.stdout.contains("session a"), "the holding session is named: {}", second_session.stdout);
    second_path.assert_error(3, "session_writer_conflict");
    assert!(!other_lock.exists(), "a lock at another path was installed for the same transcript");
    assert_ne!(second_run.code, 0, "{}", second_run.stderr);
    assert!(!env.lock("b").exists(), "session b got a lock on session a's transcript");
    // Once a's tree is gone, b may write the transcript (a's crash is a's to recover).
    let tf = env.tmp.path().join("b.token");
    cli(
        &env,
        &[
            "acquire",
            "--json",
            "--session",
            "b",
            "--transcript-key",
            "chats/a.jsonl",
            "--token-file",
            tf.to_str().unwrap(),
        ],
        &[],
    )
    .assert_ok();
}

#[test]
fn a_pod_killed_past_its_grace_is_taken_over_by_the_next_pod_by_proof() {
    let env = TestEnv::new();
    let ready = env.tmp.path().join("ready");
    let pod = |uid: &'static str, name: &'static str| -> Vec<(&'static str, &'static str)> {
        vec![
            ("WRITERCTL_POD_UID", uid),
            ("WRITERCTL_POD_NAME", name),
            ("WRITERCTL_POD_NAMESPACE", "writers"),
            ("WRITERCTL_CONTAINER_NAME", "writer"),
        ]
    };
    // Generation 1 appends a complete line, then half of one, and is SIGKILLed (its grace
    // ran out): no seal, the active lock stays.
    let script = format!(
        r#"printf '{{"a":1}}\n{{"torn' >>"$WRITERCTL_TRANSCRIPT"; echo $$ >{r}.tmp; mv {r}.tmp {r}; exec sleep 1000"#,
        r = ready.display()
    );
    let sup = start_run(&env, S, &script, &[], &pod("6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f", "w-7d9f-abcde"));
    wait_for(&ready, "generation 1 starting");
    crash(sup, pid_in(&ready));
    // Generation 2: another pod of the Deployment (another name and UID: no label rule
    // matches). It gets the session by the kernel's proof and is told the tail is torn.
    let seen = env.tmp.path().join("seen");
    let script = format!(r#"echo "$WRITERCTL_RECOVERED $WRITERCTL_TRANSCRIPT_TAIL" >{}"#, seen.display());
    let mut sup2 =
        start_run(&env, S, &script, &["--wait", "10"], &pod("0d9e8f7a-6b5c-4d3e-8f1a-2b3c4d5e6f70", "w-7d9f-fghij"));
    let code = wait_bounded(&mut sup2.child);
    let log = std::fs::read_to_string(&sup2.stderr).unwrap();
    assert_eq!(code, Some(0), "generation 2 could not get back in: {log}");
    assert_eq!(std::fs::read_to_string(&seen).unwrap().trim(), "1 torn", "{log}");
    assert!(log.contains("kernel_proof"), "the evidence is logged: {log}");
    let history = cli(&env, &["history", "--json", "--session", S], &[]);
    assert!(history.stdout.contains("\"reclaim\""), "{}", history.stdout);
    assert!(
        history.stdout.contains("kernel_proof") && history.stdout.contains("evidence: holder_lock_released"),
        "{}",
        history.stdout
    );
}

#[test]
fn a_writer_that_crashed_leaves_a_lock_the_next_run_takes_by_proof() {
    let env = TestEnv::new();
    let first =
        cli(&env, &["run", "--json", "--session", S, "--pid-namespace", "off", "--", "sh", "-c", "exit 3"], GATE);
    assert_eq!(first.code, 1, "a crashed writer keeps the lock: {}", first.stderr);
    assert_eq!(record(&env, S)["state"], "active");
    let second = cli(&env, &["run", "--json", "--session", S, "--pid-namespace", "off", "--", "true"], GATE);
    assert_eq!(second.code, 0, "the next run must get back in without a person: {}", second.stderr);
    assert!(!env.lock(S).exists(), "a clean exit releases");
}

#[test]
fn run_wait_on_a_lock_only_a_person_can_clear_says_so_once_with_the_command() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.lock_dir()).unwrap();
    let l = local();
    // Written before a reboot (another boot id), naming a holder lock: no kernel here can
    // prove that holder gone.
    let name = format!("{S}.lock.holder.{}", uuid::Uuid::new_v4());
    std::fs::write(env.lock_dir().join(&name), b"").unwrap();
    let id = holder_file_id(&env.lock_dir().join(&name));
    let rec = qwen_active(
        S,
        "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f",
        7,
        Some("linux:00000000-0000-4000-8000-000000000000:100"),
        Some(l.pid_ns),
        &l.hostname,
    )
    .replacen('}', &format!(r#","writerctl_holder_lock":"{name}","writerctl_holder_lock_id":"{id}"}}"#), 1);
    stage(&env.lock(S), rec.as_bytes());
    // "Not yet" is waited for; "never without a person" is said at once, once, with the
    // command — not waited out until --wait expires and the pod restarts into the same.
    let r = cli(&env, &["run", "--json", "--session", S, "--wait", "300", "--", "true"], GATE);
    r.assert_error(3, "session_writer_conflict");
    let out = format!("{}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("event=waiting"), "nothing to wait for: {}", r.stderr);
    let fix = format!("writerctl recover --session {S} --writers-fenced --yes");
    assert_eq!(out.matches(&fix).count(), 1, "said once, with the command: {out}");
    // The command it names clears it, and then `run` starts.
    cli(&env, &["recover", "--json", "--session", S, "--writers-fenced", "--yes"], &[]).assert_ok();
    let again = cli(&env, &["run", "--json", "--session", S, "--", "true"], GATE);
    assert_eq!(again.code, 0, "{}", again.stderr);
}

#[test]
fn doctor_fails_a_session_run_can_never_take_and_prints_the_fix() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.lock_dir()).unwrap();
    // A plain-acquire record (no holder lock) whose process is gone: plain acquire could
    // reclaim it by pid, `run` never can.
    stage(&env.lock(S), qwen_active_dead(S, "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f").as_bytes());
    let d = cli(&env, &["doctor", "--json"], &[]);
    assert_ne!(d.code, 0, "{}", d.stdout);
    let j: Value = serde_json::from_str(&d.stdout).unwrap();
    let check = j["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == format!("lock.{S}"))
        .expect("a check for the lock")
        .clone();
    assert_eq!(check["verdict"], "fail", "{check}");
    assert!(check["hint"].as_str().unwrap().contains("writerctl recover"), "{check}");
    let refused = cli(&env, &["run", "--json", "--session", S, "--", "true"], GATE);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    // The fix doctor prints: recover moves it aside, and `run` starts.
    cli(&env, &["recover", "--json", "--session", S, "--writers-fenced", "--yes"], &[]).assert_ok();
    let ran = cli(&env, &["run", "--json", "--session", S, "--", "true"], GATE);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
}

#[test]
fn a_gate_off_prestop_seal_is_not_silent_and_run_warns_at_start() {
    let env = TestEnv::new();
    let ready = env.tmp.path().join("ready");
    let script = format!(
        r#"trap 'exit 0' TERM; echo $$ >{r}.tmp; mv {r}.tmp {r}; while :; do sleep 0.1; done"#,
        r = ready.display()
    );
    let mut sup = start_run(&env, S, &script, &[], &[("WRITERCTL_SESSION_WRITER_LEASE", "0")]);
    wait_for(&ready, "the writer starting");
    let seal = cli(&env, &["seal", "--json", "--session", S, "--control-socket", sup.socket.to_str().unwrap()], &[]);
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(sup.child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    );
    let _ = sup.child.wait();
    seal.assert_error(7, "feature_disabled");
    assert!(seal.stdout.contains("released, not sealed"), "{}", seal.stdout);
    let log = std::fs::read_to_string(&sup.stderr).unwrap();
    assert!(log.contains("gate_off"), "run must warn at start: {log}");
}
