//! `status --watch` and `master status --watch` (issue 30 point 1): a watching process sees
//! changes made by other processes, says how it watches, survives a coordinator restart
//! (saying so), and ends with exit 0 on SIGINT/SIGTERM.
//!
//! Each wait for a line has a generous bound (a loaded machine); the observed latency is
//! printed, not asserted — benches prove speed.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::master::{Co, PROJECT, s};
use crate::support::{BIN, Follower, LiveHolder, TestEnv};
use crate::throwaway::free_port;

/// How long a watcher may take to show a change before the test fails.
const BOUND: Duration = Duration::from_secs(10);
/// How long a watcher may take to exit after a signal.
const EXIT_BOUND: Duration = Duration::from_secs(10);
const GATE: &str = "WRITERCTL_SESSION_WRITER_LEASE";

/// A running `--watch` process ([`Follower`]) whose every line is a JSON document with an
/// `at` time, waited for within [`BOUND`] and stopped within [`EXIT_BOUND`].
struct Watcher(Follower);

impl Watcher {
    fn spawn(c: Command) -> Watcher {
        Watcher(Follower::spawn(c))
    }

    /// The next JSON line satisfying `want` (earlier lines are checked for shape and
    /// skipped), with how long it took; panics with stderr after [`BOUND`].
    #[track_caller]
    fn until(&self, what: &str, mut want: impl FnMut(&Value) -> bool) -> (Value, Duration) {
        let started = Instant::now();
        loop {
            let left = BOUND.saturating_sub(started.elapsed());
            let line = self
                .0
                .next_line(left)
                .unwrap_or_else(|| panic!("no line showing {what} within {BOUND:?}; stderr:\n{}", self.0.stderr()));
            let doc: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not one JSON document: {e}: {line}"));
            assert!(doc["at"].as_str().is_some_and(|a| a.ends_with('Z')), "no \"at\" time: {line}");
            if want(&doc) {
                return (doc, started.elapsed());
            }
        }
    }

    /// Waits until stderr contains `text`.
    #[track_caller]
    fn stderr_shows(&self, text: &str) -> String {
        self.0.stderr_shows_within(text, BOUND)
    }

    /// Sends `signal` and returns the exit code (panics after [`EXIT_BOUND`]).
    #[track_caller]
    fn stop(self, signal: &str) -> i32 {
        self.0.stop(signal, EXIT_BOUND)
    }
}

fn session_state(doc: &Value) -> &str {
    doc["state"].as_str().unwrap_or("")
}

/// `status --session S --watch --json` with `extra` flags.
fn watch_session(env: &TestEnv, session: &str, extra: &[&str]) -> Watcher {
    let mut c = env.cmd();
    c.args(["status", "--watch", "--json", "--session", session]).args(extra).arg("--runtime-dir").arg(env.runtime());
    Watcher::spawn(c)
}

#[test]
fn status_watch_sees_another_process_acquire_and_seal_then_ends_on_sigterm() {
    let env = TestEnv::new();
    let w = watch_session(&env, "s1", &[]);
    let (first, _) = w.until("the missing lock", |d| session_state(d) == "missing");
    assert_eq!(first["session_id"], "s1");
    let err = w.stderr_shows("(inotify");
    assert!(err.contains("watching ") && err.contains("session-writer-locks"), "{err}");

    let started = Instant::now();
    let tok = env.acquire_for("s1", std::process::id());
    let acquired_after = started.elapsed();
    let (doc, waited) = w.until("the acquire", |d| session_state(d) == "active");
    assert_eq!(doc["owner"]["pid"], std::process::id());
    eprintln!(
        "status --watch (inotify) showed another process's acquire {:?} after it returned",
        waited.saturating_sub(acquired_after)
    );

    let seal = env.run_env(&["seal", "--json", "--session", "s1", "--token-file", s(&tok)], GATE, "1");
    seal.assert_ok();
    let (doc, waited) = w.until("the seal", |d| session_state(d) == "sealed");
    assert!(doc["proof"]["sealed_at"].is_string(), "{doc}");
    eprintln!("status --watch (inotify) showed the seal within {waited:?} of reading on");
    assert_eq!(w.stop("TERM"), 0);
}

/// A holder that dies changes no file: inotify says nothing, and only the periodic read
/// (`--interval`) shows the lock turn stale.
#[test]
fn status_watch_shows_a_holder_that_died_without_touching_the_directory() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    env.acquire_for("d1", holder.pid());
    let w = watch_session(&env, "d1", &["--interval", "0.2"]);
    w.stderr_shows("(inotify; read again every 0.2s for holder liveness)");
    let (doc, _) = w.until("the live holder", |d| session_state(d) == "active");
    assert_eq!(doc["live"], true, "{doc}");
    let names = env.lock_dir_names();
    holder.stop();
    let (doc, waited) = w.until("the dead holder", |d| d["live"] == false);
    assert_eq!(session_state(&doc), "active", "{doc}");
    assert_eq!(env.lock_dir_names(), names, "the directory changed: this test would not prove the periodic read");
    eprintln!("status --watch showed the holder's death {waited:?} after it was killed");
    assert_eq!(w.stop("TERM"), 0);
}

#[test]
fn status_watch_polls_when_asked_and_sees_every_session_of_the_directory() {
    let env = TestEnv::new();
    let mut c = env.cmd();
    c.args(["status", "--watch", "--json", "--poll", "--interval", "0.2", "--runtime-dir"]).arg(env.runtime());
    let w = Watcher::spawn(c);
    let (first, _) = w.until("an empty directory", |d| d["sessions"].as_array().is_some_and(|a| a.is_empty()));
    assert!(first["runtime_dir"].is_string());
    let err = w.stderr_shows("(polling every 0.2s: asked for with --poll)");
    assert!(!err.contains("inotify"), "{err}");
    env.acquire_for("p1", std::process::id());
    let (doc, waited) = w.until("the new session", |d| {
        d["sessions"].as_array().is_some_and(|a| a.iter().any(|s| s["session_id"] == "p1" && s["state"] == "active"))
    });
    eprintln!("status --watch --poll --interval 0.2 showed the acquire after {waited:?}");
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(w.stop("INT"), 0);
}

#[test]
fn status_watch_prints_only_changes() {
    let env = TestEnv::new();
    let w = watch_session(&env, "q1", &["--interval", "0.1"]);
    w.until("the missing lock", |d| session_state(d) == "missing");
    // Read again every 0.1 s with nothing changed: nothing printed.
    std::thread::sleep(Duration::from_millis(500));
    assert!(w.0.next_line(Duration::ZERO).is_none(), "a state was printed again without a change");
    env.acquire_for("q1", std::process::id());
    // An acquire may be seen half-done (its install temp file), then done: every line
    // differs from the one before it.
    let mut previous: Option<Value> = None;
    w.until("the acquire", |d| {
        let mut shown = d.clone();
        shown.as_object_mut().unwrap().remove("at");
        assert_ne!(previous.as_ref(), Some(&shown), "the same state was printed twice in a row");
        previous = Some(shown);
        session_state(d) == "active"
    });
    assert_eq!(w.stop("TERM"), 0);
}

#[test]
fn watches_refuse_flags_they_would_ignore() {
    let env = TestEnv::new();
    let r = env.run(&["status", "--watch", "--format", "prometheus", "--json"]);
    r.assert_error(2, "usage");
    let r = env.run(&["status", "--interval", "1", "--json"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    // A server pushes changes: an interval would be silently ignored.
    let args = ["master", "status", "--project", "p", "--watch", "--interval", "1", "--json"];
    let r = env.run_raw(&[&args[..], &["--coordinator", "http://127.0.0.1:9"]].concat());
    r.assert_error(2, "usage");
}

// ---------------------------------------------------------------------------------------
// master status --watch
// ---------------------------------------------------------------------------------------

fn watch_master(co: &Co, extra: &[&str]) -> Watcher {
    let mut args = vec!["master", "status", "--project", PROJECT, "--watch", "--json"];
    args.extend_from_slice(extra);
    Watcher::spawn(co.command(&args))
}

fn master_identity(doc: &Value) -> &str {
    doc["master"]["identity"].as_str().unwrap_or("")
}

#[test]
fn master_watch_is_pushed_a_handoff_by_the_server_and_ends_on_sigint() {
    let co = Co::http_sqlite();
    let alice = co.reg("alice");
    co.reg("bob");
    let w = watch_master(&co, &[]);
    let (first, _) = w.until("alice as master", |d| master_identity(d) == "alice");
    assert_eq!(first["project"], PROJECT);
    assert_eq!(first["controllers"].as_array().unwrap().len(), 2);
    w.stderr_shows("(pushed by the coordinator)");
    let started = Instant::now();
    let r = co.handoff(&alice, "bob", &["--yes"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let returned = started.elapsed();
    let (doc, waited) = w.until("bob as master", |d| master_identity(d) == "bob");
    assert_eq!(doc["master"]["epoch"], first["master"]["epoch"].as_u64().unwrap() + 1);
    eprintln!("master status --watch got the handoff {waited:?} after it was started (the handoff took {returned:?})");
    assert_eq!(w.stop("INT"), 0);
}

/// A write through another replica pokes nobody here: the replica's shared re-check
/// (every 2 s) finds it. Two servers over one SQLite store; the watcher's server is the
/// one started with --freshness-seconds 31 (see `Co::url_for`).
#[test]
fn master_watch_sees_a_handoff_made_through_another_replica() {
    sees_another_replicas_handoff(&Co::http_sqlite());
}

/// The same over Redis + Postgres, the store replicas share in production.
#[test]
fn master_watch_sees_another_replicas_handoff_over_redis_pg() {
    if let Some(co) = Co::http_redis_pg("watch_replica") {
        sees_another_replicas_handoff(&co);
    }
}

fn sees_another_replicas_handoff(co: &Co) {
    let alice = co.reg("alice");
    co.reg("bob");
    let w = watch_master(co, &["--freshness-seconds", "31"]);
    let (first, _) = w.until("alice as master", |d| master_identity(d) == "alice");
    assert_eq!(first["freshness_seconds"], 31, "the watcher is not on the second replica");
    let started = Instant::now();
    assert_eq!(co.handoff(&alice, "bob", &["--yes"]).code, 0);
    w.until("bob as master", |d| master_identity(d) == "bob");
    eprintln!("master status --watch on another replica got the handoff {:?} after it was started", started.elapsed());
    assert_eq!(w.stop("TERM"), 0);
}

#[test]
fn master_watch_on_the_embedded_store_polls_and_says_so() {
    let co = Co::new();
    let alice = co.reg("alice");
    co.reg("bob");
    let w = watch_master(&co, &["--interval", "0.2"]);
    w.until("alice as master", |d| master_identity(d) == "alice");
    let err = w.stderr_shows("(polling every 0.2s: the embedded store has no server to push changes)");
    assert!(err.contains("in the embedded store at "), "{err}");
    assert_eq!(co.handoff(&alice, "bob", &["--yes"]).code, 0);
    w.until("bob as master", |d| master_identity(d) == "bob");
    assert_eq!(w.stop("TERM"), 0);
}

/// A server process killed and reaped on drop, so a failing test leaves none behind.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `coordinator serve` on `port` over the SQLite `store`; returns once it listens.
fn serve_on(home: &Path, store: &Path, port: u16) -> Served {
    let mut c = Command::new(BIN);
    c.env_clear()
        .env("HOME", home)
        .env("TMPDIR", home)
        .env("PATH", "/usr/bin:/bin")
        .args(["coordinator", "serve", "--json", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--store")
        .arg(format!("sqlite:{}", store.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut served = Served(c.spawn().unwrap());
    let mut first = String::new();
    BufReader::new(served.0.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.contains("listening"), "the server did not start: {first:?}");
    served
}

#[test]
fn master_watch_says_when_the_server_is_lost_and_when_it_is_back() {
    let env = TestEnv::new();
    let store = env.tmp.path().join("c.sqlite");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let server = serve_on(env.tmp.path(), &store, port);
    let mut c = env.cmd();
    c.args(["master", "status", "--project", "w", "--watch", "--json", "--coordinator", &url]);
    let w = Watcher::spawn(c);
    w.until("the empty project", |d| d["master"]["identity"].is_null());
    drop(server);
    let err = w.stderr_shows(&format!("writerctl: lost the coordinator at {url} ("));
    assert!(err.contains("); retrying"), "{err}");
    let _server = serve_on(env.tmp.path(), &store, port);
    // The watch retries with a pause growing to 4 s: bound that, plus a loaded machine.
    w.0.stderr_shows_within(&format!("writerctl: coordinator at {url} is back"), 3 * BOUND);
    assert_eq!(w.stop("TERM"), 0);
}
