//! The ordinary lifecycle through the real binary: acquire, status, release, and a holder
//! killed with SIGKILL.

use std::os::unix::fs::PermissionsExt;

use crate::support::*;

#[test]
fn acquire_writes_a_qwen_schema2_record_and_a_0600_token_file() {
    let env = TestEnv::new();
    let tok = env.tmp.path().join("tok");
    let me = std::process::id();
    let run = env.run(&[
        "acquire",
        "--json",
        "--session",
        "s1",
        "--pid",
        &me.to_string(),
        "--token-file",
        tok.to_str().unwrap(),
    ]);
    run.assert_ok();
    let j: AcquireJson = run.json();
    assert_eq!((j.session_id.as_str(), j.state.as_str(), j.pid, j.reclaimed), ("s1", "active", me, false));
    assert_eq!(j.owner_token, None, "the token went to the file, not stdout");
    assert_eq!(j.lock_path, env.lock("s1").display().to_string());
    let token = std::fs::read_to_string(&tok).unwrap().trim().to_string();
    assert_eq!(std::fs::metadata(&tok).unwrap().permissions().mode() & 0o777, 0o600);

    let raw = std::fs::read_to_string(env.lock("s1")).unwrap();
    let l = local();
    let identity = writerctl::lockfile::identity::process_start_identity(me as u64).unwrap();
    let prefix = format!(
        r#"{{"schema_version":2,"state":"active","session_id":"s1","owner_id":"{token}","pid":{me},"process_start_identity":"{identity}","pid_namespace_id":{},"hostname":"{}","process_kind":"unknown","acquired_at":""#,
        l.pid_ns, l.hostname
    );
    assert!(raw.starts_with(&prefix), "{raw}\nexpected prefix\n{prefix}");
    assert!(
        raw.ends_with(&format!(
            r#"Z","qwen_version":null,"writer":"writerctl {}","writerctl_epoch":1}}"#,
            env!("CARGO_PKG_VERSION")
        )),
        "{raw}"
    );
    assert_eq!(std::fs::metadata(env.lock("s1")).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(env.lock_dir_names(), vec!["s1.lock"], "no temp left behind");
    let lock_dir_mode = std::fs::metadata(env.lock_dir()).unwrap().permissions().mode() & 0o777;
    assert_eq!(lock_dir_mode & 0o077, 0, "lock directory is owner-only");
}

#[test]
fn human_acquire_prints_only_the_token_on_stdout_and_release_takes_it_from_the_environment() {
    let env = TestEnv::new();
    let me = std::process::id().to_string();
    let run = env.run(&["acquire", "--session", "s", "--pid", &me]);
    run.assert_ok();
    let token = run.stdout.trim().to_string();
    assert_eq!(token.len(), 36, "a v4 uuid: {:?}", run.stdout);
    assert!(run.stderr.contains("acquired session s"));
    let rel = env.run_env(&["release", "--json", "--session", "s"], "WRITERCTL_OWNER_TOKEN", &token);
    rel.assert_ok();
    let j: ReleaseJson = rel.json();
    assert_eq!((j.state.as_str(), j.retired_file_left), ("released", false));
    assert!(env.lock_dir_names().is_empty(), "{:?}", env.lock_dir_names());
}

#[test]
fn a_second_acquire_conflicts_and_the_lock_is_untouched() {
    let env = TestEnv::new();
    let me = std::process::id();
    env.acquire_for("s", me);
    let before = std::fs::read(env.lock("s")).unwrap();
    for managed in [false, true] {
        let mut args = vec!["acquire", "--json", "--session", "s"];
        if managed {
            args.push("--managed");
        }
        let run = env.run(&args);
        run.assert_error(3, "session_writer_conflict");
        let e: ErrorDoc = run.json();
        assert!(e.error.message.contains(&format!("pid {me}")), "{}", e.error.message);
        assert!(e.error.hint.is_some());
    }
    assert_eq!(std::fs::read(env.lock("s")).unwrap(), before);
    assert_eq!(env.lock_dir_names(), vec!["s.lock"]);
}

#[test]
fn release_then_acquire_again() {
    let env = TestEnv::new();
    let me = std::process::id();
    let tok = env.acquire_for("s", me);
    env.run(&["release", "--json", "--session", "s", "--token-file", tok.to_str().unwrap()]).assert_ok();
    let again = env.run(&["release", "--json", "--session", "s", "--token-file", tok.to_str().unwrap()]);
    again.assert_error(3, "session_not_owner");
    env.acquire_for("s", me);
}

#[test]
fn sigkill_the_holder_then_plain_acquire_reclaims_and_managed_refuses() {
    let env = TestEnv::new();
    let mut holder = sleeper();
    let tok = env.acquire_for("s", holder.id());
    let held = std::fs::read(env.lock("s")).unwrap();
    // While the holder runs: conflict for everyone.
    env.run(&["acquire", "--json", "--session", "s"]).assert_error(3, "session_writer_conflict");
    holder.kill().unwrap();
    holder.wait().unwrap();

    let st: StatusJson = env.run(&["status", "--json", "--session", "s"]).assert_ok().json();
    assert_eq!((st.state.as_str(), st.live), ("active", Some(false)));
    assert_eq!(st.liveness.unwrap().code, "process_gone");
    assert!(st.next_step.contains("reclaim"), "{}", st.next_step);

    let managed = env.run(&["acquire", "--json", "--managed", "--session", "s"]);
    managed.assert_error(3, "session_writer_conflict");
    let e: ErrorDoc = managed.json();
    // Issue 38: no holder lock, so no kernel proof: the hint names the one command.
    assert!(e.error.hint.unwrap().contains("writerctl recover --session s --writers-fenced --yes"));
    assert_eq!(std::fs::read(env.lock("s")).unwrap(), held, "managed mode changed nothing");
    assert_eq!(env.lock_dir_names(), vec!["s.lock"]);

    let me = std::process::id().to_string();
    let plain = env.run(&["acquire", "--json", "--session", "s", "--pid", &me]);
    plain.assert_ok();
    let j: AcquireJson = plain.json();
    assert!(j.reclaimed);
    let now = std::fs::read_to_string(env.lock("s")).unwrap();
    assert!(now.contains(j.owner_token.as_deref().unwrap()));
    assert_eq!(env.lock_dir_names(), vec!["s.lock"], "guard and stale copy are gone");

    // The dead holder's token no longer owns anything, and its attempt changes nothing.
    let stale_release = env.run(&["release", "--json", "--session", "s", "--token-file", tok.to_str().unwrap()]);
    stale_release.assert_error(3, "session_not_owner");
    assert_eq!(std::fs::read_to_string(env.lock("s")).unwrap(), now);
}

#[test]
fn acquire_refuses_a_holder_pid_that_does_not_exist() {
    let env = TestEnv::new();
    env.run(&["acquire", "--json", "--session", "s", "--pid", "2147483647"]).assert_error(2, "invalid_argument");
    assert!(env.lock_dir_names().is_empty());
}

#[test]
fn qwen_runtime_dir_is_the_fallback_for_the_runtime_directory() {
    let env = TestEnv::new();
    let r = env.runtime();
    let mut c = env.cmd();
    c.args(["acquire", "--json", "--session", "q", "--pid", &std::process::id().to_string()])
        .env("QWEN_RUNTIME_DIR", &r);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(env.lock("q").exists());
}

#[test]
fn json_usage_errors_are_json() {
    let env = TestEnv::new();
    let run = env.run_raw(&["acquire", "--json", "--no-such-flag"]);
    run.assert_error(2, "usage");
}

#[test]
fn status_reports_a_live_owner_without_its_token() {
    let env = TestEnv::new();
    let tok = env.acquire_for("s", std::process::id());
    let token = std::fs::read_to_string(&tok).unwrap().trim().to_string();
    let run = env.run(&["status", "--json", "--session", "s"]);
    run.assert_ok();
    assert!(!run.stdout.contains(&token) && !run.stderr.contains(&token));
    let st: StatusJson = run.json();
    assert_eq!((st.state.as_str(), st.live), ("active", Some(true)));
    let o = st.owner.unwrap();
    assert_eq!((o.schema_version, o.pid), (2, std::process::id() as u64));
    assert_eq!(st.liveness.unwrap().code, "running");
    let human = env.run(&["status", "--session", "s"]);
    human.assert_ok();
    assert!(!human.stdout.contains(&token));
    assert!(human.stdout.contains("next step:"));
    let all: StatusAllJson = env.run(&["status", "--json"]).assert_ok().json();
    assert_eq!(all.sessions.len(), 1);
    assert_eq!(all.sessions[0].session_id, "s");
}

#[test]
fn the_default_holder_is_the_script_not_a_forked_subshell() {
    // Inside `$(...)` bash forks a copy of itself; that copy exits as soon as the
    // substitution ends, so it must not become the holder.
    let env = TestEnv::new();
    for (i, script) in [
        r#"T=$("$W" acquire --json --session s0 --runtime-dir "$R"); echo "$$"; echo "$T""#,
        r#"T=$( ( "$W" acquire --json --session s1 --runtime-dir "$R" ) ); echo "$$"; echo "$T""#,
        r#"T=$("$W" acquire --json --session s2 --runtime-dir "$R" | cat); echo "$$"; echo "$T""#,
    ]
    .iter()
    .enumerate()
    {
        let out = env
            .cmd()
            .args(["-c", script])
            .env("W", BIN)
            .env("R", env.runtime())
            .env("PATH", "/usr/bin:/bin")
            .output_of("bash");
        let mut lines = out.splitn(2, '\n');
        let shell_pid: u32 = lines.next().unwrap().trim().parse().unwrap();
        let j: AcquireJson = serde_json::from_str(lines.next().unwrap()).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(j.pid, shell_pid, "case {i}: {script}");
    }
}

trait OutputOf {
    fn output_of(&mut self, program: &str) -> String;
}

impl OutputOf for std::process::Command {
    /// Re-targets this command at `program` with the same args and env, and returns stdout.
    fn output_of(&mut self, program: &str) -> String {
        let mut c = std::process::Command::new(program);
        c.args(self.get_args());
        c.env_clear();
        for (k, v) in self.get_envs() {
            if let Some(v) = v {
                c.env(k, v);
            }
        }
        let o = c.output().unwrap();
        String::from_utf8(o.stdout).unwrap()
    }
}
