//! A SIGKILLed `writerctl run` takes every writer process with it (issue 27 item 2).
//!
//! `PR_SET_PDEATHSIG` alone is void for a writer that execs a setuid or file-capability
//! binary (the kernel clears it when credentials change) and never covered processes that
//! double-fork or `setsid` away. With the writer in a pid namespace of its own, the death
//! of `run` kills the namespace's init, and the kernel kills everything in it.
//!
//! Each test starts `run` with `WRITERCTL_PID_NAMESPACE=require` (an unknown variable on a
//! build without namespaces, so there the test *reproduces* the survivors instead of
//! failing on a flag), finds the writer processes by the unique path of the binary copies
//! they run, SIGKILLs `run`, and then proves death positively: each process, identified by
//! pid *and* start time, must be gone or a zombie within [`DEATH_LIMIT`] (a generous bound
//! on an event, not a timing assertion). Survivors are killed by the guard on the way out.
//!
//! Needs root (chown, setcap, setpriv) and `setcap` (libcap2-bin): a loud skip otherwise,
//! a failure under `WRITERCTL_REQUIRE_SERVICES=1`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::services::skip;
use crate::support::*;

/// How long a writer process may take to die after its supervisor was SIGKILLed.
const DEATH_LIMIT: Duration = Duration::from_secs(30);
/// How long the writer processes may take to appear.
const START_LIMIT: Duration = Duration::from_secs(20);
/// The unprivileged user the file-capability case runs as.
const NOBODY: u32 = 65534;

/// A process as seen from the test's pid namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Proc {
    pid: i32,
    start: u64,
}

fn stat_of(pid: i32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((f.first()?.chars().next()?, f.get(19)?.parse().ok()?))
}

/// Alive: the same process (pid and start time) still exists and is not a zombie.
fn alive(p: Proc) -> bool {
    matches!(stat_of(p.pid), Some((state, start)) if start == p.start && state != 'Z')
}

/// Every live process whose argv[0] lies under `dir` (the binary copies of this test).
fn processes_under(dir: &Path) -> Vec<Proc> {
    let prefix = dir.as_os_str().as_encoded_bytes();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        if cmd.starts_with(prefix)
            && let Some((state, start)) = stat_of(pid)
            && state != 'Z'
        {
            out.push(Proc { pid, start });
        }
    }
    out
}

/// A `/proc/<pid>/status` field (e.g. `Uid`, `CapPrm`).
fn status_field(pid: i32, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines().find_map(|l| l.strip_prefix(&format!("{key}:")).map(|v| v.trim().to_owned()))
}

/// Kills whatever this test found and left alive (a survivor on a build without the fix).
struct Reaper(Vec<Proc>, Option<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for p in &self.0 {
            if alive(*p) {
                let _ = rustix::process::kill_process(
                    rustix::process::Pid::from_raw(p.pid).unwrap(),
                    rustix::process::Signal::KILL,
                );
            }
        }
        if let Some(c) = &mut self.1 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Preconditions: root and the tools; `false` after a loud skip.
fn can_run(test: &str, tools: &[&str]) -> bool {
    if !rustix::process::geteuid().is_root() {
        skip(test, "needs root (chown to another user, setcap, setpriv)");
        return false;
    }
    for t in tools {
        let found = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"].iter().any(|d| Path::new(d).join(t).exists());
        if !found {
            skip(test, &format!("`{t}` is not installed (apt-get install libcap2-bin util-linux)"));
            return false;
        }
    }
    true
}

/// A copy of `sleep` at `dir/name`, mode `mode`.
fn sleep_copy(dir: &Path, name: &str, mode: u32) -> PathBuf {
    let p = dir.join(name);
    std::fs::copy("/bin/sleep", &p).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

fn sh(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A directory tree an unprivileged user can use: `bin` (copies), `runtime` owned by `uid`,
/// `ctl` (private control-socket directory) owned by `uid`, all reachable.
struct Stage {
    env: TestEnv,
    bin: PathBuf,
    ctl: PathBuf,
}

fn stage(uid: u32) -> Stage {
    let env = TestEnv::new();
    std::fs::set_permissions(env.tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = env.tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ctl = env.tmp.path().join("ctl");
    std::fs::create_dir(&ctl).unwrap();
    std::fs::set_permissions(&ctl, std::fs::Permissions::from_mode(0o700)).unwrap();
    let runtime = env.runtime();
    for d in [&runtime, &ctl] {
        rustix::fs::chown(d.as_path(), Some(rustix::fs::Uid::from_raw(uid)), Some(rustix::fs::Gid::from_raw(uid)))
            .unwrap();
    }
    Stage { env, bin, ctl }
}

/// Starts `writerctl run` (as `uid` through setpriv when not root) on `session` with
/// `writer`, its environment cleared but for HOME/TMPDIR/PATH and the namespace request.
fn start(st: &Stage, uid: u32, session: &str, writer: &[&str]) -> Child {
    let mut c = if uid == 0 {
        st.env.cmd()
    } else {
        let mut c = st.env.cmd();
        let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].into_iter().find(|p| Path::new(p).exists()).unwrap();
        let bin = c.get_program().to_owned();
        c = Command::new(setpriv);
        c.env_clear()
            .env("HOME", st.env.tmp.path())
            .env("TMPDIR", st.env.tmp.path())
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .args([format!("--reuid={uid}"), format!("--regid={uid}"), "--clear-groups".into(), "--".into()])
            .arg(bin);
        c
    };
    c.arg("run").arg("--runtime-dir").arg(st.env.runtime()).args(["--session", session]);
    c.arg("--control-socket").arg(st.ctl.join(format!("{session}.sock")));
    c.arg("--").args(writer);
    c.env("WRITERCTL_PID_NAMESPACE", "require").env("T_BIN", &st.bin);
    c.stdout(Stdio::null()).stderr(Stdio::piped());
    c.spawn().unwrap()
}

/// Waits until `want` writer processes run under `dir` and `ready` holds for each.
fn wait_for_writers(dir: &Path, want: usize, run: &mut Child, ready: impl Fn(Proc) -> bool) -> Vec<Proc> {
    let deadline = Instant::now() + START_LIMIT;
    loop {
        let found = processes_under(dir);
        if found.len() >= want && found.iter().all(|p| ready(*p)) {
            return found;
        }
        if let Some(status) = run.try_wait().unwrap() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(run.stderr.as_mut().unwrap(), &mut err);
            panic!("run exited ({status}) before its writers ran: {err}");
        }
        assert!(Instant::now() < deadline, "the writer processes did not start; found {found:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGKILLs `run`, then waits for every process in `procs` to die.
#[track_caller]
fn kill_run_and_expect_death(reaper: &mut Reaper, procs: &[Proc], what: &str) {
    let mut run = reaper.1.take().unwrap();
    run.kill().unwrap();
    let _ = run.wait();
    let deadline = Instant::now() + DEATH_LIMIT;
    loop {
        let left: Vec<Proc> = procs.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {left:?} still alive {DEATH_LIMIT:?} after `writerctl run` was SIGKILLed: the writer tree outlived its supervisor"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Root runs a setuid-nobody writer: its exec changes the effective uid, which clears the
/// launcher's death signal.
#[test]
fn a_setuid_writer_dies_with_its_supervisor() {
    if !can_run("a_setuid_writer_dies_with_its_supervisor", &["setpriv"]) {
        return;
    }
    let st = stage(0);
    let w = sleep_copy(&st.bin, "suid-sleep", 0o755);
    rustix::fs::chown(&w, Some(rustix::fs::Uid::from_raw(NOBODY)), Some(rustix::fs::Gid::from_raw(NOBODY))).unwrap();
    std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let mut run = start(&st, 0, "suid", &[w.to_str().unwrap(), "1000"]);
    // Ready once exec has switched the effective uid (a nosuid mount would never get there).
    let found = wait_for_writers(&st.bin, 1, &mut run, |p| {
        status_field(p.pid, "Uid").and_then(|u| u.split_whitespace().nth(1).map(|e| e == NOBODY.to_string()))
            == Some(true)
    });
    let mut reaper = Reaper(found.clone(), Some(run));
    kill_run_and_expect_death(&mut reaper, &found, "setuid writer");
}

/// An unprivileged run (a user namespace) with a file-capability writer: gaining permitted
/// capabilities at exec clears the death signal too.
#[test]
fn a_file_capability_writer_dies_with_its_supervisor() {
    if !can_run("a_file_capability_writer_dies_with_its_supervisor", &["setcap", "setpriv"]) {
        return;
    }
    let st = stage(NOBODY);
    let w = sleep_copy(&st.bin, "fcap-sleep", 0o755);
    sh(Command::new("setcap").arg("cap_net_bind_service+ep").arg(&w));
    let mut run = start(&st, NOBODY, "fcap", &[w.to_str().unwrap(), "1000"]);
    let found = wait_for_writers(&st.bin, 1, &mut run, |p| {
        status_field(p.pid, "CapPrm").and_then(|c| u64::from_str_radix(&c, 16).ok()).is_some_and(|c| c != 0)
    });
    let mut reaper = Reaper(found.clone(), Some(run));
    kill_run_and_expect_death(&mut reaper, &found, "file-capability writer");
}

/// A writer whose child double-forks (reparented away from the writer) and one that
/// `setsid`s (a session and process group of its own).
#[test]
fn double_forked_and_setsid_escapees_die_with_their_supervisor() {
    if !can_run("double_forked_and_setsid_escapees_die_with_their_supervisor", &["setsid"]) {
        return;
    }
    let st = stage(0);
    sleep_copy(&st.bin, "double-forked", 0o755);
    sleep_copy(&st.bin, "setsid-ed", 0o755);
    let script = r#"( "$T_BIN/double-forked" 1000 & ); setsid "$T_BIN/setsid-ed" 1000 & while :; do sleep 0.05; done"#;
    let mut run = start(&st, 0, "escapees", &["bash", "-c", script]);
    let found = wait_for_writers(&st.bin, 2, &mut run, |_| true);
    // They did escape: neither is in the writer's process group any more, or below it.
    let sid = |p: Proc| std::fs::read_to_string(format!("/proc/{}/stat", p.pid)).unwrap();
    assert!(found.iter().any(|p| {
        let s = sid(*p);
        let f: Vec<&str> = s[s.rfind(')').unwrap() + 2..].split_whitespace().collect();
        f[3] == p.pid.to_string() // session leader: setsid worked
    }));
    let mut reaper = Reaper(found.clone(), Some(run));
    kill_run_and_expect_death(&mut reaper, &found, "double-forked and setsid escapees");
}

/// Where the kernel refuses every namespace (simulated: a user namespace of our own whose
/// `max_user_namespaces` is 0, and every capability dropped from the bounding set, so
/// `unshare(CLONE_NEWPID)` is EPERM and `unshare(CLONE_NEWUSER|CLONE_NEWPID)` is ENOSPC),
/// `require` refuses clearly, before the writer starts, and hands the session back; `auto`
/// runs the writer in the shared namespace and says which guarantee holds instead.
#[test]
fn require_refuses_clearly_where_no_namespace_can_be_had_and_auto_falls_back() {
    if !can_run("require_refuses_clearly_where_no_namespace_can_be_had_and_auto_falls_back", &["unshare", "setpriv"]) {
        return;
    }
    let env = TestEnv::new();
    let marker = env.tmp.path().join("ran");
    let ctl = env.tmp.path().join("ctl");
    std::fs::create_dir(&ctl).unwrap();
    std::fs::set_permissions(&ctl, std::fs::Permissions::from_mode(0o700)).unwrap();
    let wrap = |mode: &str, session: &str| {
        let bin = env.cmd().get_program().to_owned();
        let inner = format!(
            "echo 0 >/proc/sys/user/max_user_namespaces && exec setpriv --bounding-set=-all --inh-caps=-all -- \"$0\" --json run --runtime-dir \"$1\" --session {session} --control-socket \"$2\" -- sh -c ': >\"$0\"' \"$3\""
        );
        let mut c = Command::new("unshare");
        c.env_clear()
            .env("HOME", env.tmp.path())
            .env("TMPDIR", env.tmp.path())
            .env("PATH", "/usr/bin:/bin")
            .env("WRITERCTL_PID_NAMESPACE", mode)
            .stdin(Stdio::null());
        c.args(["--user", "--map-root-user", "--", "sh", "-c", &inner]).arg(bin).arg(env.runtime());
        c.arg(ctl.join(format!("{session}.sock"))).arg(&marker);
        c
    };
    let r = run_bounded(wrap("require", "req"), Duration::from_secs(60)).expect("run with require hangs");
    if r.stderr.contains("max_user_namespaces") || r.stderr.contains("unshare:") || r.stderr.contains("setpriv:") {
        skip(
            "require_refuses_clearly_where_no_namespace_can_be_had_and_auto_falls_back",
            &format!("cannot stage a refusing kernel here: {}", r.stderr),
        );
        return;
    }
    r.assert_error(2, "invalid_argument");
    let doc: ErrorDoc = r.json();
    assert!(doc.error.message.contains("pid namespace"), "{}\n{}", doc.error.message, r.stderr);
    assert!(doc.error.message.contains("unshare(CLONE_NEWPID)"), "names what the kernel said: {}", doc.error.message);
    assert!(doc.error.hint.as_deref().unwrap_or("").contains("--pid-namespace auto"), "{:?}", doc.error.hint);
    assert!(!marker.exists(), "the writer must not start without the namespace it requires");
    assert!(!env.lock("req").exists(), "the session is handed back");

    let r = run_bounded(wrap("auto", "auto"), Duration::from_secs(60)).expect("run with auto hangs");
    r.assert_ok();
    assert!(marker.exists(), "auto runs the writer in the shared namespace");
    let line = r.stderr.lines().find(|l| l.contains("event=pid_namespace")).unwrap_or_else(|| panic!("{}", r.stderr));
    assert!(line.contains(r#"mode="shared""#) && line.contains("guarantee=") && line.contains("reason="), "{line}");
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["pid_namespace"], "shared", "{j}");
}
