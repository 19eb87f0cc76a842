//! Load on `coordinator serve`: master handoffs over HTTP at 1, 16 and 64 concurrent
//! clients, on the embedded SQLite store and on Redis + Postgres, with a raw Redis
//! round-trip (PING) from the same number of clients measured in the same run for the ratio.
//!
//! Each client works its own project (a handoff ping-pong between two controllers), so every
//! verb commits: the figures are the cost of a successful verb, not of losing a CAS.
//! Redis/Postgres come from WRITERCTL_TEST_REDIS_URL / WRITERCTL_TEST_POSTGRES_URL (default:
//! the local services); without them that half is skipped with a note.
//!
//! After each Redis + Postgres point it prints the Postgres queue (entries, the age of the
//! oldest, how many seconds of verbs it holds) and how long the background writer then
//! took to empty it. With WRITERCTL_BENCH_SUSTAIN=N it first runs 16 clients for N seconds
//! on Redis + Postgres alone (issue 20's target: after 60 s the queue holds < 1 s of verbs).
//! First it measures the background writer's capacity: the queue built up by 16 clients
//! while the bench holds the drain lock, drained once it lets go (target: at least twice the
//! verb rate).
//!
//! Run: `cargo bench --bench http_load` (WRITERCTL_BENCH_SECONDS per point, default 3).
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use writerctl::claim::Coordinator;
use writerctl::claim::clock::SystemClock;
use writerctl::claim::engine::{DEFAULT_FRESHNESS, Registered, Status};
use writerctl::claim::masters::{ControllerKey, HandoffRequest, RegisterRequest};
use writerctl::claim::secret::Secret;
use writerctl::claim::stores::Store;
use writerctl::coordinator::client::HttpCoordinator;
use writerctl::coordinator::verbs::master;
use writerctl::coordinator::wire::{NoBody, ProjectPath};

struct Figures {
    per_sec: f64,
    p50: Duration,
    p99: Duration,
}

fn figures(mut lat: Vec<Duration>, wall: Duration) -> Figures {
    lat.sort();
    let pick = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    Figures { per_sec: lat.len() as f64 / wall.as_secs_f64(), p50: pick(0.5), p99: pick(0.99) }
}

/// Starts a server over `store` on a free port; returns its URL (the runtime lives on).
fn start(store: Arc<dyn Store>) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            // Open registration: the bench measures handoffs, not enrollment.
            let coordinator =
                Coordinator::new(store, Arc::new(SystemClock), DEFAULT_FRESHNESS).with_open_registration(true);
            let opts = writerctl::coordinator::server::ServeOptions {
                listen: "127.0.0.1:0".parse().unwrap(),
                coordinator,
                admin_token_hash: None,
                tls: None,
                sweep_every: None,
                max_connections: writerctl::coordinator::server::DEFAULT_MAX_CONNECTIONS,
                header_timeout: writerctl::coordinator::server::DEFAULT_HEADER_TIMEOUT,
                retention: None,
                max_connections_per_source: writerctl::coordinator::limits::DEFAULT_MAX_CONNECTIONS_PER_SOURCE,
                body_timeout: writerctl::coordinator::limits::DEFAULT_BODY_TIMEOUT,
                probe_listen: None,
                memory_budget: writerctl::coordinator::memory::MemoryBudget::fallback(),
            };
            writerctl::coordinator::server::serve(opts, std::future::pending(), move |addr, _| {
                tx.send(format!("http://{addr}")).unwrap();
            })
            .await
            .unwrap();
        });
    });
    rx.recv_timeout(Duration::from_secs(10)).unwrap()
}

/// `clients` threads doing handoffs for `secs`; every latency and the wall time.
fn handoff_load(url: &str, clients: usize, secs: f64, tag: &str) -> (Vec<Duration>, Duration) {
    let barrier = Arc::new(std::sync::Barrier::new(clients + 1));
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let url = url.to_string();
            let barrier = barrier.clone();
            let project = format!("{tag}-{i}");
            std::thread::spawn(move || {
                let c = HttpCoordinator::new(&url, None, None).unwrap();
                let at = ProjectPath::of(&project);
                let register = |id: &str| {
                    let key = ControllerKey { identity: id.into(), surface: "bench".into(), machine_id: "m".into() };
                    let r = c.call::<master::Register>(&at, &RegisterRequest::of(&key, None, None), None).unwrap();
                    Registered { controller: r.controller.into(), token: Secret::new(r.token), epoch: r.epoch }
                };
                let (a, b) = (register("alice"), register("bob"));
                let status = || Status::from(c.call::<master::Status>(&at, &NoBody {}, None).unwrap());
                let mut epoch = status().slot.epoch;
                let mut master_is_a = status().slot.master.unwrap().session_id == a.controller.session_id;
                barrier.wait();
                let end = Instant::now() + Duration::from_secs_f64(secs);
                let mut lat = Vec::new();
                while Instant::now() < end {
                    let (from, to, to_row) = if master_is_a { (&a, "bob", &b) } else { (&b, "alice", &a) };
                    // The exact row: nobody heartbeats here, and a run longer than the
                    // freshness threshold (WRITERCTL_BENCH_SUSTAIN) would find it stale.
                    let req = HandoffRequest {
                        session_id: from.controller.session_id.clone(),
                        to: to.into(),
                        to_session: Some(to_row.controller.session_id.clone()),
                        expect_epoch: epoch,
                        ..Default::default()
                    };
                    let t = Instant::now();
                    let out = c.call::<master::Handoff>(&at, &req, Some(&from.token)).unwrap();
                    lat.push(t.elapsed());
                    epoch = out.epoch;
                    master_is_a = !master_is_a;
                }
                lat
            })
        })
        .collect();
    barrier.wait();
    let t = Instant::now();
    let all: Vec<Duration> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    (all, t.elapsed())
}

/// The same number of clients doing raw Redis PINGs for `secs`.
fn redis_ping_load(url: &str, clients: usize, secs: f64) -> (Vec<Duration>, Duration) {
    let barrier = Arc::new(std::sync::Barrier::new(clients + 1));
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let url = url.to_string();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
                barrier.wait();
                let end = Instant::now() + Duration::from_secs_f64(secs);
                let mut lat = Vec::new();
                while Instant::now() < end {
                    let t = Instant::now();
                    let _: String = redis::cmd("PING").query(&mut conn).unwrap();
                    lat.push(t.elapsed());
                }
                lat
            })
        })
        .collect();
    barrier.wait();
    let t = Instant::now();
    let all: Vec<Duration> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    (all, t.elapsed())
}

fn print(label: &str, clients: usize, f: &Figures, reference: Option<&Figures>) {
    let mut line = format!(
        "{label:<22} {clients:>3} clients  {:>8.0} verbs/s  p50 {:>9.2?}  p99 {:>9.2?}",
        f.per_sec, f.p50, f.p99
    );
    if let Some(r) = reference {
        line.push_str(&format!(
            "  | redis PING {:>8.0}/s p50 {:>9.2?} p99 {:>9.2?} | p50 ratio {:.1}x",
            r.per_sec,
            r.p50,
            r.p99,
            f.p50.as_secs_f64() / r.p50.as_secs_f64()
        ));
    }
    println!("{line}");
}

/// The Postgres queue after a point: its depth and oldest entry, then how long the
/// background writer takes to empty it (read every 10 ms).
fn report_queue(store: &dyn Store, per_sec: f64) {
    let b = store.readiness().unwrap();
    let t = Instant::now();
    let deadline = t + Duration::from_secs(120);
    while store.readiness().unwrap().queue_depth > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let left = store.readiness().unwrap().queue_depth;
    println!(
        "{:<22} queue after the run: {} entries ({:.2} s of verbs), oldest {:.2} s; drained in {:.2} s{}",
        "",
        b.queue_depth,
        b.queue_depth as f64 / per_sec.max(1.0),
        b.oldest_age_seconds.unwrap_or(0.0),
        t.elapsed().as_secs_f64(),
        if left > 0 { format!(" (NOT EMPTY: {left} left)") } else { String::new() }
    );
}

/// The background writer's capacity against the verb rate: 16 clients run for `secs` while
/// the bench holds the drain lock (nothing drains, the queue grows), then the lock goes and
/// the backlog is timed from the first entry drained to the last (read every 5 ms).
fn drain_capacity(url: &str, store: &dyn Store, redis_url: &str, ns: &str, secs: f64) {
    let mut c = redis::Client::open(redis_url).unwrap().get_connection().unwrap();
    let lock = format!("{{{ns}}}:pgq:lock");
    let _: () = redis::cmd("SET").arg(&lock).arg("bench").arg("PX").arg(600_000).query(&mut c).unwrap();
    let (l, w) = handoff_load(url, 16, secs, "capacity");
    let verbs = figures(l, w);
    let backlog = store.readiness().unwrap().queue_depth;
    let _: () = redis::cmd("DEL").arg(&lock).query(&mut c).unwrap();
    while store.readiness().unwrap().queue_depth >= backlog {
        std::thread::sleep(Duration::from_millis(5));
    }
    let t = Instant::now();
    while store.readiness().unwrap().queue_depth > 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let drained = backlog as f64 / t.elapsed().as_secs_f64();
    println!(
        "{:<22} 16 clients  {:>8.0} verbs/s; writer drains a {backlog}-entry backlog at {drained:.0} entries/s ({:.1}x the verb rate)",
        "redis_pg capacity",
        verbs.per_sec,
        drained / verbs.per_sec
    );
}

/// Removes this run's Redis keys (they carry the `{ns}` hash tag) and Postgres schema.
fn clean_up(redis_url: &str, pg_url: &str, ns: &str) {
    if let Ok(mut c) = redis::Client::open(redis_url).and_then(|c| c.get_connection()) {
        let keys: Vec<String> = redis::Commands::scan_match::<_, String>(&mut c, format!("{{{ns}}}:*"))
            .map(|i| i.filter_map(Result::ok).collect())
            .unwrap_or_default();
        for chunk in keys.chunks(500) {
            let _: Result<(), _> = redis::cmd("DEL").arg(chunk).query(&mut c);
        }
    }
    if let Ok(mut pg) = postgres::Client::connect(pg_url, postgres::NoTls) {
        let _ = pg.batch_execute(&format!("DROP SCHEMA IF EXISTS {ns} CASCADE"));
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let secs: f64 = std::env::var("WRITERCTL_BENCH_SECONDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3.0);
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let redis_url = std::env::var("WRITERCTL_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let pg_url = std::env::var("WRITERCTL_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let ns = format!("bench_{}", std::process::id());
    let redis_pg = writerctl::claim::stores::redis_pg::RedisPgStore::connect(&redis_url, &pg_url, &ns);
    let sqlite: Arc<dyn Store> =
        Arc::new(writerctl::claim::stores::sqlite::SqliteStore::open(&tmp.path().join("bench.sqlite")).unwrap());
    let sqlite_url = start(sqlite);
    let pg_server = match redis_pg {
        Ok(s) => {
            let s: Arc<dyn Store> = Arc::new(s);
            Some((start(s.clone()), s))
        }
        Err(e) => {
            println!("NOTE: Redis/Postgres unreachable ({e}); only the sqlite half runs");
            None
        }
    };
    if let (Some((url, store)), Some(sustain)) =
        (&pg_server, std::env::var("WRITERCTL_BENCH_SUSTAIN").ok().and_then(|v| v.parse::<f64>().ok()))
    {
        println!("master handoff over HTTP on redis_pg, 16 clients for {sustain} s");
        let (l, w) = handoff_load(url, 16, sustain, "sustain");
        let f = figures(l, w);
        print("redis_pg sustained", 16, &f, None);
        report_queue(store.as_ref(), f.per_sec);
    }
    if let Some((url, store)) = &pg_server {
        drain_capacity(url, store.as_ref(), &redis_url, &ns, secs);
    }
    println!("master handoff over HTTP, {secs} s per point");
    for clients in [1, 16, 64] {
        let ping = pg_server.as_ref().map(|_| {
            let (l, w) = redis_ping_load(&redis_url, clients, secs);
            figures(l, w)
        });
        if let Some((url, store)) = &pg_server {
            let (l, w) = handoff_load(url, clients, secs, &format!("c{clients}"));
            let f = figures(l, w);
            print("redis_pg", clients, &f, ping.as_ref());
            report_queue(store.as_ref(), f.per_sec);
        }
        let (l, w) = handoff_load(&sqlite_url, clients, secs, &format!("c{clients}"));
        print("sqlite", clients, &figures(l, w), ping.as_ref());
    }
    if pg_server.is_some() {
        clean_up(&redis_url, &pg_url, &ns);
    }
}
