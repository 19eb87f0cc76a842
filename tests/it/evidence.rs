//! Issue 27 items 1 and 2 (the lock side): proof, not labels. A lock is reclaimed across pid
//! namespaces only on evidence that its holder's whole process tree is gone — the kernel
//! lock on its holder-lock file — never on the `WRITERCTL_POD_*` variables, and never while
//! a process of a SIGKILLed supervisor's tree still holds that lock.
//!
//! * reproduction 1, with real pid namespaces (root): a writer under `run` in one
//!   namespace; `acquire` and `acquire --managed` from a second namespace with the same four
//!   pod variables are refused, `status` there says `holder_lock_held`; once the first
//!   namespace is gone, `acquire --managed` reclaims under `container_restarted`;
//! * reproduction 2, lock side: `run`'s writer leaves a `setsid` descendant behind, the
//!   supervisor and the writer are SIGKILLed; `status` says `holder_lock_held` and `acquire`
//!   refuses until the descendant exits, then plain `acquire` reclaims.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde_json::Value;

use crate::pod_recovery::{LIMIT, S, UID, can_unshare, cli, container, lock_obj, pod_env};
use crate::services::skip;
use crate::support::*;

/// Extra `writerctl run` arguments that keep the writer out of a pid namespace of its own,
/// so that its descendants can outlive a SIGKILLed supervisor (the setup issue 27 item 2
/// must still defend with the holder lock).
const RUN_WITHOUT_PID_NAMESPACE: &[&str] = &["--pid-namespace", "off"];

/// `writerctl ARGS --runtime-dir R` as pid 1 of a new pid namespace (a second container of
/// the same pod, a debug container, a sidecar), with `vars`.
fn in_new_pid_namespace(env: &TestEnv, args: &[&str], vars: &[(&'static str, String)]) -> Run {
    let mut c = Command::new("unshare");
    c.args(["--pid", "--fork", "--mount-proc", "--kill-child"]).arg(BIN).args(args);
    c.arg("--runtime-dir").arg(env.runtime());
    c.env_clear().env("HOME", env.tmp.path()).env("PATH", "/usr/bin:/bin").stdin(Stdio::null());
    for (k, v) in vars {
        c.env(k, v);
    }
    run_bounded(c, LIMIT).unwrap_or_else(|| panic!("`{}` hung", args.join(" ")))
}

fn status_json(r: &Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("status is not JSON ({e}):\n{}\n{}", r.stdout, r.stderr))
}

fn wait_for(path: &Path, what: &str) {
    let until = Instant::now() + LIMIT;
    while !path.exists() && Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(path.exists(), "{what} never happened");
}

fn private_dir(env: &TestEnv) -> PathBuf {
    let private = env.tmp.path().join("sock");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::set_permissions(&private, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    private
}

#[test]
fn a_writer_in_another_pid_namespace_with_the_same_pod_variables_is_never_reclaimed() {
    const TEST: &str = "a_writer_in_another_pid_namespace_with_the_same_pod_variables_is_never_reclaimed";
    if let Err(why) = can_unshare() {
        return skip(TEST, &why);
    }
    let env = TestEnv::new();
    let private = private_dir(&env);
    let ready = env.tmp.path().join("ready");
    std::fs::create_dir_all(env.runtime().join("chats")).unwrap();
    // Namespace 1: the writer, under `run`, appending and alive.
    let script = format!(r#"printf '{{"a":1}}\n' >>"$WRITERCTL_TRANSCRIPT"; : >{}; exec sleep 1000"#, ready.display());
    let mut ns1 = container(&env, &private.join("1.sock"), &[], &script)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&ready, "the writer in namespace 1 starting");
    let held = std::fs::read(env.lock(S)).unwrap();
    let vars = pod_env(UID, "w-abc", "writer");
    // Namespace 2, the same four variables (a sidecar, a debug container, a copied
    // environment): neither a plain nor a managed acquire may take the session.
    let plain = in_new_pid_namespace(&env, &["acquire", "--json", "--session", S, "--pid", "1"], &vars);
    let managed = in_new_pid_namespace(&env, &["acquire", "--managed", "--json", "--session", S, "--pid", "1"], &vars);
    let st = status_json(&in_new_pid_namespace(&env, &["status", "--json", "--session", S], &vars));
    let after = std::fs::read(env.lock(S)).unwrap();
    ns1.kill().unwrap(); // SIGKILL to unshare; --kill-child takes namespace 1 down
    ns1.wait().unwrap();
    plain.assert_error(3, "session_writer_conflict");
    managed.assert_error(3, "session_writer_conflict");
    assert_eq!(after, held, "the running writer's record was replaced: two writers hold the session");
    assert_eq!(st["liveness"]["code"], "holder_lock_held", "{st}");
    assert_eq!(st["live"], true, "{st}");
    // Namespace 1 is gone with every process of the writer's tree: the kernel released the
    // holder lock, and the same container's restart reclaims, managed.
    let tf = env.tmp.path().join("t.token");
    let r = in_new_pid_namespace(
        &env,
        &["acquire", "--managed", "--json", "--session", S, "--pid", "1", "--token-file", tf.to_str().unwrap()],
        &vars,
    );
    r.assert_ok();
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["recovered_from"]["rule"], "kernel_proof", "{}", r.stdout);
    assert_eq!(j["recovered_from"]["pod_rule"], "container_restarted", "{}", r.stdout);
    // `acquire` keeps no holder lock (writerctl exits at once); the predecessor's file went
    // with the record it belonged to.
    assert!(!lock_obj(&env).contains_key("writerctl_holder_lock"));
    let holder_files: Vec<String> = env.lock_dir_names().into_iter().filter(|n| n.contains(".holder.")).collect();
    assert!(holder_files.is_empty(), "{holder_files:?}");
}

/// A `writerctl run` whose writer starts a `setsid` descendant that keeps every inherited
/// descriptor (a daemonizing helper), then sleeps; both pids are written out.
fn run_with_escaping_descendant(env: &TestEnv, dir: &Path) -> Child {
    let script = format!(
        r#"echo $$ >{d}/writer.pid; setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >{d}/escaped.pid; : >{d}/ready; exec sleep 1000"#,
        d = dir.display()
    );
    let mut c = env.cmd();
    c.args(["run", "--json", "--session", S]).arg("--runtime-dir").arg(env.runtime());
    c.arg("--control-socket").arg(private_dir(env).join("run.sock")).args(RUN_WITHOUT_PID_NAMESPACE);
    c.args(["--", "sh", "-c", &script]).stdout(Stdio::null()).stderr(Stdio::null());
    c.spawn().unwrap()
}

fn pid_in(dir: &Path, name: &str) -> i32 {
    std::fs::read_to_string(dir.join(name)).unwrap().trim().parse().unwrap()
}

fn alive(pid: i32) -> bool {
    let pid = rustix::process::Pid::from_raw(pid).unwrap();
    rustix::process::test_kill_process(pid).is_ok()
}

fn sigkill(pid: i32) {
    let _ = rustix::process::kill_process(rustix::process::Pid::from_raw(pid).unwrap(), rustix::process::Signal::KILL);
}

/// Kills `pid` (not our child: init reaps it) and waits until it is gone.
fn kill_and_wait_gone(pid: i32) {
    sigkill(pid);
    let until = Instant::now() + LIMIT;
    while alive(pid) && Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!alive(pid), "pid {pid} survived SIGKILL");
}

#[test]
fn a_sigkilled_supervisor_whose_escaped_descendant_still_runs_is_alive() {
    let env = TestEnv::new();
    let dir = env.tmp.path().join("pids");
    std::fs::create_dir_all(&dir).unwrap();
    let mut supervisor = run_with_escaping_descendant(&env, &dir);
    wait_for(&dir.join("ready"), "the writer starting");
    let escaped = pid_in(&dir, "escaped.pid");
    let writer = pid_in(&dir, "writer.pid");
    let held = std::fs::read(env.lock(S)).unwrap();
    let names_a_holder_lock = lock_obj(&env).contains_key("writerctl_holder_lock");
    // SIGKILL the supervisor (no handoff) and its direct writer; the escaped descendant lives.
    supervisor.kill().unwrap();
    supervisor.wait().unwrap();
    kill_and_wait_gone(writer);
    assert!(alive(escaped), "the escaped descendant must outlive the supervisor for this test");
    let st_held: StatusJson = env.run(&["status", "--json", "--session", S]).json();
    let refused = env.run(&["acquire", "--json", "--session", S]);
    let after = std::fs::read(env.lock(S)).unwrap();
    // Now the last process of the tree exits: the kernel releases the lock.
    kill_and_wait_gone(escaped);
    let st_free: StatusJson = env.run(&["status", "--json", "--session", S]).json();
    let tf = env.tmp.path().join("t.token");
    let reclaimed = env.run(&["acquire", "--json", "--session", S, "--token-file", tf.to_str().unwrap()]);

    let liveness = st_held.liveness.as_ref().map(|l| l.code.as_str());
    assert_eq!(liveness, Some("holder_lock_held"), "status after the supervisor died: {}", st_held.next_step);
    assert_eq!(st_held.live, Some(true));
    assert!(!st_held.next_step.contains("acquire` reclaims"), "never recommend a reclaim here: {}", st_held.next_step);
    refused.assert_error(3, "session_writer_conflict");
    assert_eq!(after, held, "a new writer got the session while the old tree still wrote");
    assert!(names_a_holder_lock, "run must record a holder lock");
    assert_eq!(st_free.liveness.as_ref().map(|l| l.code.as_str()), Some("holder_lock_released"));
    reclaimed.assert_ok();
    let j: AcquireJson = reclaimed.json();
    assert!(j.reclaimed);
    let holder_files: Vec<String> = env.lock_dir_names().into_iter().filter(|n| n.contains(".holder.")).collect();
    assert!(holder_files.is_empty(), "the released holder file stays behind: {holder_files:?}");
}

/// `run` passes its holder lock to the writer (`WRITERCTL_HOLDER_LOCK_FD`), and a clean
/// release removes the holder-lock file with the record.
#[test]
fn run_hands_the_holder_lock_to_its_writer_and_a_release_removes_it() {
    let env = TestEnv::new();
    let out = env.tmp.path().join("seen");
    let script = format!(
        r#"ls -l /proc/$$/fd/$WRITERCTL_HOLDER_LOCK_FD >{o}; grep -c . /proc/$$/fdinfo/$WRITERCTL_HOLDER_LOCK_FD >>{o}; exit 0"#,
        o = out.display()
    );
    let mut c = env.cmd();
    c.args(["run", "--json", "--session", S]).arg("--runtime-dir").arg(env.runtime());
    c.arg("--control-socket").arg(private_dir(&env).join("run.sock")).args(RUN_WITHOUT_PID_NAMESPACE);
    c.args(["--", "sh", "-c", &script]);
    let r = run_bounded(c, LIMIT).expect("run hung");
    r.assert_ok();
    let seen = std::fs::read_to_string(&out).unwrap();
    assert!(seen.contains(&format!("{S}.lock.holder.")), "the writer did not inherit the holder lock:\n{seen}");
    assert!(!env.lock(S).exists(), "a clean exit releases");
    assert_eq!(env.lock_dir_names().into_iter().filter(|n| n.contains(".holder.")).count(), 0);
}

/// Issue 27 item 6: a pod-rule reclaim whose owner token cannot be delivered (stdout on
/// `/dev/full`) gives the session back by restoring the crashed writer's exact record and its
/// released holder-lock file — not by releasing, which would let a plain acquire take the
/// crashed writer's torn transcript as if nothing had happened.
#[test]
fn a_pod_rule_reclaim_that_cannot_deliver_its_token_restores_the_crashed_writers_record() {
    use crate::pod_recovery::{Evidence, stage_pod_record_with};
    let env = TestEnv::new();
    std::fs::create_dir_all(env.runtime().join("chats")).unwrap();
    std::fs::write(env.runtime().join(format!("chats/{S}.jsonl")), b"{\"a\":1}\n{\"torn\":").unwrap();
    stage_pod_record_with(&env, UID, "w-abc", "writer", Evidence::Released);
    let before = std::fs::read(env.lock(S)).unwrap();
    let names_before = env.lock_dir_names();
    let vars = pod_env(UID, "w-abc", "writer");
    let mut c = env.cmd();
    // Not --json: the refusal then goes to stderr, which still works.
    c.args(["acquire", "--managed", "--session", S]).arg("--runtime-dir").arg(env.runtime());
    for (k, v) in &vars {
        c.env(k, v);
    }
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let status = c.stdout(Stdio::from(full)).stderr(Stdio::piped()).output().unwrap();
    assert_ne!(status.status.code(), Some(0), "the token could not be delivered");
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert_eq!(std::fs::read(env.lock(S)).unwrap(), before, "the crashed writer's record is not back: {stderr}");
    assert_eq!(env.lock_dir_names(), names_before, "exactly the files that were there, holder lock included");
    assert!(stderr.contains("restored"), "{stderr}");
    // And the same rule takes it again, reporting the torn tail.
    let tf = env.tmp.path().join("t.token");
    let r = cli(&env, &["acquire", "--managed", "--json", "--session", S, "--token-file", tf.to_str().unwrap()], &vars);
    r.assert_ok();
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    // Issue 38: the kernel's proof; the label rule stays as a diagnostic.
    assert_eq!(
        (j["recovered_from"]["rule"].as_str(), j["recovered_from"]["pod_rule"].as_str(), j["transcript_tail"].as_str()),
        (Some("kernel_proof"), Some("container_restarted"), Some("torn"))
    );
}
