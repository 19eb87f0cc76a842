//! Master verbs on the embedded SQLite store: verbs per second and p50/p99 latency, for one
//! client and for 8 processes sharing one store file, against a reference measured in the
//! same run.
//!
//! Verb: `master handoff` ping-pong between two controllers of a project (authenticate,
//! snapshot, decide, audit, commit: every one changes the master and appends an event).
//! Reference: the floor any durable SQLite write pays on the same file and pragmas (WAL,
//! synchronous=FULL): `BEGIN IMMEDIATE; UPDATE one row; COMMIT`.
//! With 8 processes each works on its own project, so no verb loses a CAS; they contend
//! for SQLite's single write lock, which is the point.
//!
//! Run: `cargo bench --bench coordinator` (WRITERCTL_BENCH_N verbs per client, default 400).
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use writerctl::claim::Coordinator;
use writerctl::claim::clock::SystemClock;
use writerctl::claim::engine::DEFAULT_FRESHNESS;
use writerctl::claim::masters::{ControllerKey, HandoffRequest, RegisterRequest};
use writerctl::claim::stores::sqlite::SqliteStore;

const PROCS: usize = 8;

fn open(path: &Path) -> Coordinator {
    Coordinator::new(Arc::new(SqliteStore::open(path).unwrap()), Arc::new(SystemClock), DEFAULT_FRESHNESS)
        .with_open_registration(true)
}

/// `n` handoffs alternating between two controllers of `project`; one latency per verb.
fn handoffs(path: &Path, project: &str, n: usize, ready: impl FnOnce()) -> Vec<Duration> {
    let c = open(path);
    let key = |id: &str| ControllerKey { identity: id.into(), surface: "bench".into(), machine_id: "m".into() };
    let a = c.register(project, &RegisterRequest::of(&key("alice"), None, None)).unwrap();
    let b = c.register(project, &RegisterRequest::of(&key("bob"), None, None)).unwrap();
    let mut epoch = b.epoch;
    ready();
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        let (from, to) = if i % 2 == 0 { (&a, "bob") } else { (&b, "alice") };
        let req = HandoffRequest {
            session_id: from.controller.session_id.clone(),
            to: to.into(),
            expect_epoch: epoch,
            ..Default::default()
        };
        let t = Instant::now();
        let out = c.handoff(project, &req, &from.token).unwrap();
        lat.push(t.elapsed());
        epoch = out.epoch;
    }
    lat
}

/// The reference: one durable single-row write transaction, same file settings.
fn floor(path: &Path, tag: &str, n: usize, ready: impl FnOnce()) -> Vec<Duration> {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(30)).unwrap();
    let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).unwrap();
    conn.pragma_update(None, "synchronous", "FULL").unwrap();
    conn.execute_batch("CREATE TABLE IF NOT EXISTS floor (k TEXT PRIMARY KEY, v INTEGER)").unwrap();
    conn.execute("INSERT OR IGNORE INTO floor VALUES (?1, 0)", [tag]).unwrap();
    ready();
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        conn.execute("UPDATE floor SET v = v + 1 WHERE k = ?1", [tag]).unwrap();
        conn.execute_batch("COMMIT").unwrap();
        lat.push(t.elapsed());
    }
    lat
}

struct Figures {
    per_sec: f64,
    p50: Duration,
    p99: Duration,
    max: Duration,
}

fn figures(mut lat: Vec<Duration>, wall: Duration) -> Figures {
    lat.sort();
    let pick = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    Figures {
        per_sec: lat.len() as f64 / wall.as_secs_f64(),
        p50: pick(0.50),
        p99: pick(0.99),
        max: lat[lat.len() - 1],
    }
}

/// Runs `role` in PROCS child processes at once; returns every latency and the wall time.
fn in_processes(path: &Path, role: &str, n: usize) -> (Vec<Duration>, Duration) {
    let me = std::env::current_exe().unwrap();
    // Every worker opens its store, then waits for this wall-clock instant, so the
    // measured verbs really overlap (process start-up is not part of any figure).
    let go = std::time::SystemTime::now() + Duration::from_millis(500);
    let go_ns = go.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let children: Vec<_> = (0..PROCS)
        .map(|i| {
            Command::new(&me)
                .env("WRITERCTL_BENCH_WORKER", format!("{role}\t{}\tp{i}\t{n}\t{go_ns}", path.display()))
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut all = Vec::new();
    let mut last_end = 0u128;
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        last_end = last_end.max(lines.next().unwrap().parse().unwrap());
        all.extend(lines.map(|l| Duration::from_nanos(l.parse().unwrap())));
    }
    (all, Duration::from_nanos((last_end - go_ns) as u64))
}

fn worker(spec: &str) {
    let f: Vec<&str> = spec.split('\t').collect();
    let (path, tag, n) = (Path::new(f[1]), f[2], f[3].parse().unwrap());
    let go = std::time::UNIX_EPOCH + Duration::from_nanos(f[4].parse().unwrap());
    let wait = || {
        if let Ok(d) = go.duration_since(std::time::SystemTime::now()) {
            std::thread::sleep(d);
        }
    };
    let lat = if f[0] == "verb" { handoffs(path, tag, n, wait) } else { floor(path, tag, n, wait) };
    let end = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let text: String = lat.iter().map(|d| format!("{}\n", d.as_nanos())).collect();
    print!("{end}\n{text}");
}

fn timed(f: impl FnOnce() -> Vec<Duration>) -> (Vec<Duration>, Duration) {
    let t = Instant::now();
    let lat = f();
    (lat, t.elapsed())
}

fn row(label: &str, verb: &Figures, reference: &Figures) {
    println!(
        "{label:<12} {:>6.0} verbs/s p50 {:>8.2?} p99 {:>8.2?} max {:>8.2?} | reference {:>6.0}/s p50 {:>8.2?} p99 {:>8.2?} max {:>8.2?} | ratio p50 {:.2}x, throughput {:.2}x",
        verb.per_sec,
        verb.p50,
        verb.p99,
        verb.max,
        reference.per_sec,
        reference.p50,
        reference.p99,
        reference.max,
        verb.p50.as_secs_f64() / reference.p50.as_secs_f64(),
        reference.per_sec / verb.per_sec,
    );
}

fn main() {
    if let Ok(spec) = std::env::var("WRITERCTL_BENCH_WORKER") {
        return worker(&spec);
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let n: usize = std::env::var("WRITERCTL_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
    let base = std::env::var_os("WRITERCTL_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    std::fs::create_dir_all(&base).unwrap();
    let tmp = tempfile::tempdir_in(&base).unwrap();
    let store = tmp.path().join("bench.sqlite");
    let reference = tmp.path().join("floor.sqlite");
    // Warm both files (page cache, WAL) before measuring.
    handoffs(&store, "warm", 20, || ());
    floor(&reference, "warm", 20, || ());

    println!("embedded store, master handoff, {n} verbs per client ({} in {})", PROCS, store.display());
    let (rl, rw) = timed(|| floor(&reference, "one", n, || ()));
    let (vl, vw) = timed(|| handoffs(&store, "one", n, || ()));
    row("1 client", &figures(vl, vw), &figures(rl, rw));
    let (rl, rw) = in_processes(&reference, "floor", n);
    let (vl, vw) = in_processes(&store, "verb", n);
    row(&format!("{PROCS} processes"), &figures(vl, vw), &figures(rl, rw));
}
