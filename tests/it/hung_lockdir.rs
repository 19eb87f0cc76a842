//! Issue 38, reproduction 6: a hung lock directory must not stop the watchdog.
//!
//! The runtime directory is a `bindfs` FUSE mount whose server is then stopped (SIGSTOP):
//! every lookup, `stat` and read on it sleeps in the kernel until the server runs again —
//! what a `hard` NFS mount does when its server goes away. Before the fix, `run`'s lock
//! check ran on its main thread and slept there, so `--max-unverified` never fired, SIGTERM
//! was never forwarded and the writer ran for as long as the mount hung.
//!
//! Checked here: with the mount hung, `run` stops its writer and exits 3 (the watchdog, from
//! its clock alone), and a SIGTERM is forwarded and `run` exits (the handoff, which needs a
//! fresh check, is refused rather than attempted) — both with the lock left exactly as it
//! was (no seal, no release, nothing written) and exactly one `event=lock_lost` line saying
//! why. Every wait is bounded by [`LIMIT`] so a regression fails instead of hanging the suite;
//! nothing asserts how fast anything happens.
//!
//! The mount is always resumed (SIGCONT) and lazily unmounted by [`HungFuse`]'s drop, so a
//! failing test never leaves a hung mount behind. Without root, `/dev/fuse` or `bindfs` the
//! tests print a loud `SKIPPED` line (a failure under `WRITERCTL_REQUIRE_SERVICES=1`).

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

use crate::fsmount::mountinfo_type;
use crate::services::skip;
use crate::support::*;

/// The bound on every wait (a hang fails the test); not a speed requirement.
const LIMIT: Duration = Duration::from_secs(60);

/// `fuse.bindfs` must be allowed for `run` to use it (every defence stays on).
const ALLOW: (&str, &str) = ("WRITERCTL_ALLOW_FILESYSTEM", "fuse.bindfs");

/// A bindfs mount served by a foreground `bindfs -f` we own, so its server can be stopped.
/// Dropping it resumes the server, unmounts lazily and reaps it, in that order.
struct HungFuse {
    server: Child,
    dir: PathBuf,
    _tmp: tempfile::TempDir,
}

impl HungFuse {
    /// `None` after a loud skip (a panic under `WRITERCTL_REQUIRE_SERVICES=1`).
    fn mount(test: &str) -> Option<HungFuse> {
        if !rustix::process::geteuid().is_root() {
            skip(test, "mounting a FUSE filesystem needs root");
            return None;
        }
        if !Path::new("/dev/fuse").exists() {
            skip(test, "/dev/fuse is missing (no FUSE in this kernel or container)");
            return None;
        }
        if !["/usr/bin/bindfs", "/bin/bindfs", "/usr/local/bin/bindfs"].iter().any(|p| Path::new(p).exists()) {
            skip(test, "bindfs is not installed (scripts/ci-deps.sh installs it)");
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        let backing = tmp.path().join("server");
        let dir = tmp.path().join("mnt");
        std::fs::create_dir_all(backing.join("runtime")).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        // No kernel caching at all: every lookup and attribute goes to the server, so the
        // first check after the server stops is the one that hangs.
        let server = Command::new("bindfs")
            .args(["-f", "-o", "subtype=bindfs,entry_timeout=0,negative_timeout=0,attr_timeout=0"])
            .arg(&backing)
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{test}: cannot start bindfs: {e}"));
        let mut fuse = HungFuse { server, dir, _tmp: tmp };
        let until = Instant::now() + LIMIT;
        while mountinfo_type(&fuse.dir).as_deref() != Some("fuse.bindfs") {
            if let Some(st) = fuse.server.try_wait().unwrap() {
                panic!("{test}: bindfs exited ({st}) before mounting {}", fuse.dir.display());
            }
            assert!(Instant::now() < until, "{test}: bindfs did not mount {} within {LIMIT:?}", fuse.dir.display());
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(fuse)
    }

    /// R on the mount.
    fn runtime(&self) -> PathBuf {
        self.dir.join("runtime")
    }

    fn signal(&self, sig: Signal) {
        let _ = kill_process(Pid::from_raw(self.server.id() as i32).unwrap(), sig);
    }

    /// Stops the server and waits (bounded) until the kernel reports it stopped: from then
    /// on, every request to the mount sleeps until [`HungFuse::resume`].
    fn hang(&self) {
        self.signal(Signal::STOP);
        let stat = format!("/proc/{}/stat", self.server.id());
        let until = Instant::now() + LIMIT;
        loop {
            let text = std::fs::read_to_string(&stat).unwrap_or_default();
            let state = text.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
            if state == Some('T') {
                return;
            }
            assert!(Instant::now() < until, "bindfs did not stop: {text}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn resume(&self) {
        self.signal(Signal::CONT);
    }
}

impl Drop for HungFuse {
    fn drop(&mut self) {
        self.resume();
        let unmounted = Command::new("umount").arg("-l").arg(&self.dir).stderr(Stdio::null()).status();
        if !unmounted.is_ok_and(|s| s.success()) {
            let _ = Command::new("fusermount").args(["-u", "-z"]).arg(&self.dir).stderr(Stdio::null()).status();
        }
        // The server leaves once the (lazily detached) mount is released; never wait for
        // ever on a process we started.
        let until = Instant::now() + Duration::from_secs(10);
        while self.server.try_wait().ok().flatten().is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// `writerctl run --json` on the hung-able mount, with its control socket on local disk
/// and `vars` passed to the writer.
fn start_run(env: &TestEnv, fuse: &HungFuse, s: &str, extra: &[&str], script: &str, vars: &[(&str, &str)]) -> Child {
    let ctl = env.tmp.path().join("ctl");
    std::fs::DirBuilder::new().mode(0o700).create(&ctl).unwrap();
    let mut c = env.cmd();
    c.arg("run").arg("--runtime-dir").arg(fuse.runtime()).args(["--json", "--session", s]);
    c.arg("--control-socket").arg(ctl.join("run.sock")).args(extra);
    c.args(["--", "bash", "-c", script, "writer"]).env(ALLOW.0, ALLOW.1);
    for (k, v) in vars {
        c.env(k, v);
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Waits (bounded) for the writer's marker file on local disk.
#[track_caller]
fn wait_for(path: &Path, run: &mut Child) {
    let until = Instant::now() + LIMIT;
    while !path.exists() {
        if let Some(st) = run.try_wait().unwrap() {
            panic!("run exited ({st}) before {} appeared", path.display());
        }
        assert!(Instant::now() < until, "{} did not appear within {LIMIT:?}", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The `event=NAME` lines of `stderr`.
fn event_lines<'a>(stderr: &'a str, name: &str) -> Vec<&'a str> {
    let prefix = format!("writerctl: event={name} ");
    stderr.lines().filter(|l| l.starts_with(&prefix)).collect()
}

/// No live process carries `marker` in its environment (the writer and everything it
/// started were given it).
#[track_caller]
fn assert_no_process_with(marker: &str) {
    let needle = marker.as_bytes();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(env) = std::fs::read(entry.path().join("environ")) else { continue };
        let found = env.split(|b| *b == 0).any(|kv| kv.ends_with(needle));
        assert!(!found, "process {} of the writer is still alive", entry.file_name().to_string_lossy());
    }
}

/// What every case checks once `run` has exited: the lock is exactly what it was before the
/// mount hung (read after the server resumed), and nothing was handed off.
#[track_caller]
fn assert_lock_kept(fuse: &HungFuse, lock: &Path, before: &[u8], r: &Run) {
    fuse.resume();
    let after = std::fs::read(lock).unwrap_or_else(|e| panic!("the lock is gone: {e}\n{}", r.stderr));
    assert_eq!(after, before, "the lock changed while the mount hung:\n{}", r.stderr);
    for name in ["sealing", "releasing", "seal", "released"] {
        assert!(event_lines(&r.stderr, name).is_empty(), "nothing may be handed off:\n{}", r.stderr);
    }
}

/// The writer appends for as long as it is allowed to (it ignores no signal): once the
/// mount hangs, the lock cannot be verified, and after `--max-unverified` the watchdog stops
/// the writer (SIGTERM, the rest of `--grace`, SIGKILL) and exits 3, the lock kept as it is.
#[test]
fn a_hung_lock_directory_stops_the_writer_and_keeps_the_lock() {
    let test = "a_hung_lock_directory_stops_the_writer_and_keeps_the_lock";
    let env = TestEnv::new();
    let Some(fuse) = HungFuse::mount(test) else { return };
    let s = "hung-watchdog";
    let ready = env.tmp.path().join("ready");
    let marker = env.tmp.path().join("writer-marker");
    let script = r#"while :; do echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"; : >"$T_READY"; sleep 0.2; done"#;
    let vars = [("T_READY", ready.to_str().unwrap()), ("T_MARK", marker.to_str().unwrap())];
    let extra = ["--check-interval", "1", "--max-unverified", "3", "--grace", "2"];
    let mut run = start_run(&env, &fuse, s, &extra, script, &vars);
    wait_for(&ready, &mut run);
    let lock = fuse.runtime().join(format!("tmp/session-writer-locks/{s}.lock"));
    let before = std::fs::read(&lock).unwrap();
    fuse.hang();
    let r = wait_child_bounded(run, LIMIT).unwrap_or_else(|| panic!("run kept going with the lock directory hung"));
    r.assert_error(3, "session_not_owner");
    let lost = event_lines(&r.stderr, "lock_lost");
    assert_eq!(lost.len(), 1, "exactly one line says why:\n{}", r.stderr);
    assert!(lost[0].contains("did not answer for") && lost[0].contains("--max-unverified 3s"), "{}", lost[0]);
    assert!(
        !event_lines(&r.stderr, "writer_exited").is_empty() || !event_lines(&r.stderr, "writer_killed").is_empty(),
        "the writer was stopped:\n{}",
        r.stderr
    );
    assert_no_process_with(marker.to_str().unwrap());
    assert_lock_kept(&fuse, &lock, &before, &r);
}

/// A SIGTERM while the mount hangs reaches the writer, and `run` exits without waiting on
/// the mount: a writer that drains and exits 0 would be handed off, but the handoff needs a
/// check that started after the drain, which cannot answer — the lock counts as lost (kept,
/// exit 3); a writer that dies of the signal keeps the lock as any crash does (exit 1).
#[test]
fn a_sigterm_while_the_lock_directory_hangs_is_forwarded_and_run_exits() {
    let test = "a_sigterm_while_the_lock_directory_hangs_is_forwarded_and_run_exits";
    let cases = [
        // Touches the mount once, then only local files: its trap can run.
        (
            "drains and exits 0",
            r#"trap ': >"$T_TERM"; exit 0' TERM; echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"; : >"$T_READY"; while :; do sleep 0.1; done"#,
            3,
            "session_not_owner",
        ),
        (
            "dies of the signal",
            r#"echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"; : >"$T_READY"; while :; do sleep 0.1; done"#,
            1,
            "writer_crashed",
        ),
    ];
    for (how, script, exit, code) in cases {
        let env = TestEnv::new();
        let Some(fuse) = HungFuse::mount(test) else { return };
        let s = "hung-sigterm";
        let ready = env.tmp.path().join("ready");
        let term = env.tmp.path().join("got-term");
        let marker = env.tmp.path().join("writer-marker");
        let vars = [
            ("T_READY", ready.to_str().unwrap()),
            ("T_TERM", term.to_str().unwrap()),
            ("T_MARK", marker.to_str().unwrap()),
        ];
        // --max-unverified leaves the SIGTERM ample room to come first (the watchdog would
        // stop the writer too, but this case is about the signal).
        let extra = ["--check-interval", "1", "--max-unverified", "10", "--grace", "5"];
        let mut run = start_run(&env, &fuse, s, &extra, script, &vars);
        wait_for(&ready, &mut run);
        let lock = fuse.runtime().join(format!("tmp/session-writer-locks/{s}.lock"));
        let before = std::fs::read(&lock).unwrap();
        fuse.hang();
        kill_process(Pid::from_raw(run.id() as i32).unwrap(), Signal::TERM).unwrap();
        let r = wait_child_bounded(run, LIMIT).unwrap_or_else(|| panic!("{how}: run hung after SIGTERM"));
        r.assert_error(exit, code);
        let stopping = event_lines(&r.stderr, "stopping");
        assert!(
            stopping.len() == 1 && stopping[0].contains("signal=\"15\""),
            "{how}: the SIGTERM was forwarded:\n{}",
            r.stderr
        );
        if how == "drains and exits 0" {
            assert!(term.exists(), "{how}: the writer got the SIGTERM:\n{}", r.stderr);
            let lost = event_lines(&r.stderr, "lock_lost");
            assert_eq!(lost.len(), 1, "{how}: exactly one line says why:\n{}", r.stderr);
            assert!(lost[0].contains("did not answer for"), "{how}: {}", lost[0]);
        }
        assert_no_process_with(marker.to_str().unwrap());
        assert_lock_kept(&fuse, &lock, &before, &r);
    }
}
