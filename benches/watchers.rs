//! What `master status --watch` costs a server per watcher (issue 30: "no more than one
//! idle connection per watcher, measured with 1,000 watchers").
//!
//! For N = 1, 100 and 1000 a fresh `writerctl coordinator serve` (the binary Cargo built for the bench: release under `cargo bench`, over
//! an SQLite store, `--open-registration`) gets N long polls on
//! `GET /v1/projects/P/master/watch?after=V&wait_ms=30000` — what N `master status --watch`
//! processes hold open between two changes — from this process, one socket each, spread
//! over loopback addresses ([`LONG_POLLS_PER_SOURCE`] per address, the most one address may
//! have held; issue 39), with `--max-connections` four times N (long-polls may hold a
//! quarter of it). Then,
//! measured on the server process (`/proc/PID`):
//!
//! * threads, and RSS growth over the server before the watchers came, next to the
//!   reference: the growth for N plain idle connections (half a request head each, held
//!   by the server) on another fresh server — "one idle connection per watcher" is a ratio
//!   near 1;
//! * CPU time over an idle window of [`IDLE`] (every thread's schedstat);
//! * store reads per second over that window (`writerctl_master_watch_reads_total`: the
//!   shared per-project re-check; a design reading per watcher would show N times more);
//! * one change (a controller registers and becomes master): the time until every one of
//!   the N watchers has its answer.
//!
//! The reference is N = 1 in the same run: each row's ratio shows how the cost grows with N.
//! Run: `cargo bench --bench watchers` (needs nothing but loopback; raises this process's
//! open-file limit, which the server inherits).
#![allow(clippy::disallowed_methods)]

#[path = "support/live.rs"]
mod live;

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use writerctl::coordinator::limits::{LONG_POLL_SHARE, LONG_POLLS_PER_SOURCE};

const PROJECT: &str = "bench";
const SIZES: [usize; 3] = [1, 100, 1000];
/// The idle window CPU time and store reads are measured over (the long polls last 30 s).
const IDLE: Duration = Duration::from_secs(8);

/// One row of the table.
struct Row {
    n: usize,
    held: f64,
    threads: u64,
    rss_growth_kib: u64,
    idle_conn_kib: u64,
    cpu_idle_ms: f64,
    reads_per_s: f64,
    all_told: Duration,
}

/// `/proc/PID/status` field `key` (first number).
fn proc_status(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines().find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

/// CPU time `pid`'s threads have run so far (`/proc/PID/task/*/schedstat`, nanoseconds:
/// `/proc/PID/stat`'s 10 ms ticks cannot tell an idle second from a busy millisecond).
/// Only threads alive now are counted: the caller checks the thread count did not change.
fn cpu_time(pid: u32) -> Duration {
    let tasks =
        std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.flatten().collect::<Vec<_>>()).unwrap_or_default();
    let ns: u64 = tasks
        .iter()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

/// The server under test: `coordinator serve` over a fresh SQLite store, with room for `n`
/// long-polls (a quarter of its connections) and `n` connections from one address.
fn server(dir: &std::path::Path, n: usize) -> (std::process::Child, String) {
    let conns = (LONG_POLL_SHARE * (n + 16)).to_string();
    live::start_server(&[
        "--store".into(),
        format!("sqlite:{}", dir.join("c.sqlite").display()),
        "--open-registration".into(),
        "--max-connections".into(),
        conns.clone(),
        "--max-connections-per-source".into(),
        conns,
        // The reference's idle connections send half a request head; keep them past the
        // measurement (the default closes them after 10 s).
        "--header-timeout-seconds".into(),
        "120".into(),
    ])
}

/// A fresh server under test, with its state before anything is held.
struct Fresh {
    _dir: tempfile::TempDir,
    child: std::process::Child,
    url: String,
    pid: u32,
    /// host:port, for raw sockets.
    addr: String,
    /// The watch answer's version now (the project is empty).
    version: String,
    rss_before: u64,
}

impl Fresh {
    fn start(n: usize) -> Fresh {
        let dir = tempfile::tempdir().unwrap();
        let (child, url) = server(dir.path(), n);
        let pid = child.id();
        let version = version(&url);
        let rss_before = proc_status(pid, "VmRSS:");
        let addr = url.trim_start_matches("http://").to_string();
        Fresh { _dir: dir, child, url, pid, addr, version, rss_before }
    }
}

/// The reference: the server's RSS growth for `n` plain idle connections (each has sent
/// half a request head, so the server holds it and waits) — what "one idle connection per
/// watcher" costs.
fn idle_connections_kib(rt: &tokio::runtime::Runtime, n: usize) -> u64 {
    let Fresh { _dir, child, url, pid, addr, rss_before: before, .. } = Fresh::start(n);
    let held: Vec<tokio::net::TcpStream> = rt.block_on(async {
        let mut socks = Vec::with_capacity(n);
        for _ in 0..n {
            let mut s = tokio::net::TcpStream::connect(&addr).await.expect("connect");
            s.write_all(format!("GET /v1/projects/{PROJECT}/master HTTP/1.1\r\nHost: {addr}\r\n").as_bytes())
                .await
                .expect("half a head");
            socks.push(s);
        }
        socks
    });
    let started = Instant::now();
    // The scrape's own connection counts too.
    while live::metrics(&url).get("writerctl_connections_open").copied().unwrap_or(0.0) < n as f64 {
        assert!(started.elapsed() < Duration::from_secs(60), "the server never held {n} idle connections");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let grown = proc_status(pid, "VmRSS:").saturating_sub(before);
    drop(held);
    live::stop_server(child);
    grown
}

/// The watch answer's version now.
fn version(url: &str) -> String {
    let body: serde_json::Value = ureq::get(&format!("{url}/v1/projects/{PROJECT}/master/watch"))
        .call()
        .expect("watch read")
        .into_body()
        .read_json()
        .expect("watch JSON");
    body["version"].as_str().expect("a version").to_string()
}

/// One watcher, the `i`th: sends the long poll from 127.1.x.y (one address per
/// [`LONG_POLLS_PER_SOURCE`] watchers), then waits for the first byte of its answer.
async fn hold(addr: String, after: String, i: usize) -> Option<Instant> {
    let source = i / LONG_POLLS_PER_SOURCE;
    let from = std::net::Ipv4Addr::new(127, 1, (source / 250) as u8, (source % 250 + 1) as u8);
    let socket = tokio::net::TcpSocket::new_v4().ok()?;
    socket.bind((from, 0).into()).ok()?;
    let mut sock = socket.connect(addr.parse().ok()?).await.ok()?;
    let req =
        format!("GET /v1/projects/{PROJECT}/master/watch?after={after}&wait_ms=30000 HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    sock.write_all(req.as_bytes()).await.ok()?;
    let mut buf = [0u8; 1];
    match sock.read(&mut buf).await {
        Ok(1) => Some(Instant::now()),
        _ => None,
    }
}

fn measure(rt: &tokio::runtime::Runtime, n: usize) -> Row {
    let Fresh { _dir, child, url, pid, addr, version: after, rss_before } = Fresh::start(n);
    let watchers: Vec<_> = (0..n).map(|i| rt.spawn(hold(addr.clone(), after.clone(), i))).collect();
    // Every long poll is held when the server counts them all.
    let started = Instant::now();
    let metric = |name: &str| live::metrics(&url).get(name).copied().unwrap_or(0.0);
    while metric("writerctl_master_watchers") < n as f64 {
        assert!(started.elapsed() < Duration::from_secs(60), "the server never held {n} watchers");
        std::thread::sleep(Duration::from_millis(50));
    }
    let held = metric("writerctl_master_watchers");
    let threads = proc_status(pid, "Threads:");
    let rss_growth_kib = proc_status(pid, "VmRSS:").saturating_sub(rss_before);
    let (cpu0, reads0) = (cpu_time(pid), metric("writerctl_master_watch_reads_total"));
    std::thread::sleep(IDLE);
    let (cpu1, reads1) = (cpu_time(pid), metric("writerctl_master_watch_reads_total"));
    let threads_after = proc_status(pid, "Threads:");
    if threads_after != threads {
        // A blocking-pool thread that exits takes its schedstat with it.
        eprintln!(
            "N={n}: threads went from {threads} to {threads_after} during the idle window: CPU may be undercounted"
        );
    }
    // The change: the first controller registers and becomes master.
    let changed = Instant::now();
    let body = serde_json::json!({"identity": "alice", "surface": "cli", "machine_id": "m1"});
    ureq::post(&format!("{url}/v1/projects/{PROJECT}/sessions")).send_json(&body).expect("register");
    let answered: Vec<Option<Instant>> = rt.block_on(async {
        let mut out = Vec::with_capacity(n);
        for w in watchers {
            out.push(w.await.ok().flatten());
        }
        out
    });
    let told = answered.iter().flatten().count();
    assert_eq!(told, n, "{} of {n} watchers got no answer", n - told);
    let all_told = answered.iter().flatten().map(|t| t.saturating_duration_since(changed)).max().unwrap_or_default();
    live::stop_server(child);
    Row {
        n,
        held,
        threads,
        rss_growth_kib,
        idle_conn_kib: idle_connections_kib(rt, n),
        cpu_idle_ms: (cpu1 - cpu0).as_secs_f64() * 1e3,
        reads_per_s: (reads1 - reads0) / IDLE.as_secs_f64(),
        all_told,
    }
}

fn ratio(a: f64, b: f64) -> String {
    if b <= 0.0 { if a <= 0.0 { "1.0x".into() } else { "inf".into() } } else { format!("{:.1}x", a / b) }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let limit = writerctl::coordinator::limits::raise_nofile_limit();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let rows: Vec<Row> = SIZES.iter().map(|&n| measure(&rt, n)).collect();
    let base = &rows[0];
    let build = if cfg!(debug_assertions) { "debug" } else { "release" };
    println!(
        "master status --watch: the server's cost per idle watcher ({build} build, SQLite store, idle window {} s, open files {:?})",
        IDLE.as_secs(),
        limit.soft
    );
    println!(
        "{:>5} {:>5} {:>7} {:>9} {:>9} {:>8} {:>10} {:>9} {:>9} | vs N=1: {:>7} {:>6} {:>6} {:>6} {:>6}",
        "N",
        "held",
        "threads",
        "RSS KiB",
        "idle KiB",
        "RSS/idle",
        "CPU ms",
        "reads/s",
        "told ms",
        "threads",
        "RSS",
        "CPU",
        "reads",
        "told"
    );
    for r in &rows {
        println!(
            "{:>5} {:>5} {:>7} {:>9} {:>9} {:>8} {:>10.2} {:>9.2} {:>9.1} | {:>15} {:>6} {:>6} {:>6} {:>6}",
            r.n,
            r.held,
            r.threads,
            r.rss_growth_kib,
            r.idle_conn_kib,
            ratio(r.rss_growth_kib as f64, r.idle_conn_kib as f64),
            r.cpu_idle_ms,
            r.reads_per_s,
            r.all_told.as_secs_f64() * 1e3,
            ratio(r.threads as f64, base.threads as f64),
            ratio(r.rss_growth_kib as f64, base.rss_growth_kib.max(1) as f64),
            ratio(r.cpu_idle_ms, base.cpu_idle_ms),
            ratio(r.reads_per_s, base.reads_per_s),
            ratio(r.all_told.as_secs_f64(), base.all_told.as_secs_f64()),
        );
    }
    println!(
        "(RSS KiB: the server's growth with N watchers held; idle KiB: with N plain idle connections, the reference;\n CPU ms: the server's CPU time over the idle window; reads/s: its store reads for watchers; told ms: one change until all N had it)"
    );
    let big = rows.last().unwrap();
    println!(
        "per watcher at N={}: {:.1} KiB RSS (an idle connection: {:.1} KiB), {:.4} ms CPU per idle second, {:.5} store reads/s; threads {} (N=1: {})",
        big.n,
        big.rss_growth_kib as f64 / big.n as f64,
        big.idle_conn_kib as f64 / big.n as f64,
        big.cpu_idle_ms / IDLE.as_secs_f64() / big.n as f64,
        big.reads_per_s / big.n as f64,
        big.threads,
        base.threads
    );
}
