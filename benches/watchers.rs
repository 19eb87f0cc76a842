//! What `master status --watch` costs a server per watcher (issue 30: "no more than one
//! idle connection per watcher, measured with 1,000 watchers").
//!
//! For N = 1, 100 and 1000 a fresh `writerctl coordinator serve` (the release binary, over
//! an SQLite store, `--open-registration`) gets N long polls on
//! `GET /v1/projects/P/master/watch?after=V&wait_ms=30000` — what N `master status --watch`
//! processes hold open between two changes — from this process, one socket each. Then,
//! measured on the server process (`/proc/PID`):
//!
//! * threads, and RSS growth over the server before the watchers came;
//! * CPU time (user + system) over an idle window of [`IDLE`];
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
    cpu_idle_ms: f64,
    reads_per_s: f64,
    all_told: Duration,
}

/// `/proc/PID/status` field `key` (first number).
fn proc_status(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines().find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

/// User + system CPU time of `pid` so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) end at the last ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after ')'.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    // /proc reports them in USER_HZ, which the kernel ABI fixes at 100 on every Linux
    // architecture we run on (whatever CONFIG_HZ is).
    Duration::from_secs_f64(ticks as f64 / 100.0)
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

/// One watcher: sends the long poll, then waits for the first byte of its answer.
async fn hold(addr: String, after: String) -> Option<Instant> {
    let mut sock = tokio::net::TcpStream::connect(&addr).await.ok()?;
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
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("c.sqlite");
    let conns = (n + 64).to_string();
    let (child, url) = live::start_server(&[
        "--store".into(),
        format!("sqlite:{}", store.display()),
        "--open-registration".into(),
        "--max-connections".into(),
        conns.clone(),
        "--max-connections-per-source".into(),
        conns,
    ]);
    let pid = child.id();
    let after = version(&url);
    let rss_before = proc_status(pid, "VmRSS:");
    let addr = url.trim_start_matches("http://").to_string();
    let watchers: Vec<_> = (0..n).map(|_| rt.spawn(hold(addr.clone(), after.clone()))).collect();
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
    println!(
        "master status --watch: the server's cost per idle watcher (release binary, SQLite store, idle window {} s, open files {:?})",
        IDLE.as_secs(),
        limit.soft
    );
    println!(
        "{:>6} {:>6} {:>8} {:>14} {:>14} {:>12} {:>14} | vs N=1: {:>7} {:>7} {:>7} {:>7} {:>7}",
        "N",
        "held",
        "threads",
        "RSS growth KiB",
        "CPU idle ms",
        "reads/s",
        "all told ms",
        "threads",
        "RSS",
        "CPU",
        "reads",
        "told"
    );
    for r in &rows {
        println!(
            "{:>6} {:>6} {:>8} {:>14} {:>14.1} {:>12.2} {:>14.1} | {:>15} {:>7} {:>7} {:>7} {:>7}",
            r.n,
            r.held,
            r.threads,
            r.rss_growth_kib,
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
    let big = rows.last().unwrap();
    println!(
        "per watcher at N={}: {:.1} KiB RSS, {:.3} ms CPU per idle second, {:.4} store reads/s (threads {} vs {} at N=1)",
        big.n,
        big.rss_growth_kib as f64 / big.n as f64,
        big.cpu_idle_ms / IDLE.as_secs_f64() / big.n as f64,
        big.reads_per_s / big.n as f64,
        big.threads,
        base.threads
    );
}
