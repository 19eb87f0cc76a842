//! A Redis master killed under load (issue 20, "Prove it"): one master, two replicas and
//! three Sentinels (down-after 1 s) started by the bench on free loopback ports, 16 clients
//! each doing master handoffs on its own project through a `RedisPgStore` over the Sentinel
//! URL, and the master SIGKILLed after a warm-up. Run once without and once with
//! `--redis-min-replicas 1` (two replicas, so the promoted master still has one to wait
//! for), each mode WRITERCTL_BENCH_RUNS times (default 3), figures per run and the median.
//!
//! Two scenarios: the replicas in sync when the master dies, and the replicas cut off
//! (the master drops their connections, `CLIENT KILL TYPE replica`, every 5 ms) for 300 ms
//! before the kill, so the master has acknowledged writes that no replica holds.
//!
//! Per run it prints: verbs answered and failed, the time from the kill to the first verb
//! that succeeded again (and to the Sentinels' agreement on the new master), acknowledged
//! verbs lost (a client reads its project's epoch back lower than the last one it was
//! acknowledged), epochs reused (a handoff acknowledged with an epoch the client had
//! already been given), double masters (samples, every 50 ms, with more than one data node
//! answering ROLE as master), and p50/p99 of the successful verbs.
//!
//! Postgres (the audit plane) is WRITERCTL_TEST_POSTGRES_URL (default the local service).
//! Run: `cargo bench --bench failover`.
#![allow(clippy::disallowed_methods)]

#[path = "../tests/it/throwaway.rs"]
mod throwaway;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use writerctl::claim::ClaimError;
use writerctl::claim::clock::SystemClock;
use writerctl::claim::engine::{Coordinator, Registered};
use writerctl::claim::masters::{ControllerKey, HandoffRequest, RegisterRequest};
use writerctl::claim::stores::redis_pg::{ConnectOptions, RedisPgStore};

const CLIENTS: usize = 16;
/// Load before the kill.
const WARMUP: Duration = Duration::from_secs(2);
/// Load after the first success following the kill.
const AFTER: Duration = Duration::from_secs(3);
/// Give up on a failover that never completes.
const GIVE_UP: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Tally {
    ok: u64,
    failed: u64,
    lost: u64,
    reused: u64,
    latencies: Vec<Duration>,
}

struct Run {
    tally: Tally,
    first_success: Option<Duration>,
    sentinels_agree: Option<Duration>,
    double_masters: u64,
}

/// One client: handoffs back and forth between its project's two controllers.
fn client(
    c: &Coordinator,
    project: &str,
    a: &Registered,
    b: &Registered,
    stop: &AtomicBool,
    killed_at: &Mutex<Option<Instant>>,
    first_success: &Mutex<Option<Duration>>,
) -> Tally {
    let mut t = Tally::default();
    let mut acked: HashSet<u64> = HashSet::new();
    let mut last_acked = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        let st = match c.status(project) {
            Ok(st) => st,
            Err(_) => {
                t.failed += 1;
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        if st.slot.epoch < last_acked {
            // Acknowledged handoffs the new master never received.
            t.lost += last_acked - st.slot.epoch;
            last_acked = st.slot.epoch;
        }
        let a_is_master = st.slot.master.as_ref().is_some_and(|m| m.session_id == a.controller.session_id);
        let (from, to) = if a_is_master { (a, "b") } else { (b, "a") };
        let req = HandoffRequest {
            session_id: from.controller.session_id.clone(),
            to: to.into(),
            expect_epoch: st.slot.epoch,
            ..Default::default()
        };
        match c.handoff(project, &req, &from.token) {
            Ok(out) => {
                t.ok += 1;
                t.latencies.push(started.elapsed());
                if !acked.insert(out.epoch) {
                    t.reused += 1;
                }
                last_acked = out.epoch;
                // Only a verb that started after the kill proves the service is back (one
                // answered by the old master just before it died does not).
                if let Some(k) = *killed_at.lock().unwrap()
                    && started >= k
                {
                    let mut first = first_success.lock().unwrap();
                    if first.is_none() {
                        *first = Some(k.elapsed());
                    }
                }
            }
            Err(ClaimError::StaleMaster { .. } | ClaimError::NotMaster { .. }) => t.failed += 1,
            Err(_) => {
                t.failed += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    t
}

/// How long the replicas are kept off before the kill in the lagging scenario.
const LAG: Duration = Duration::from_millis(300);

fn run(pg_url: &str, min_replicas: u32, lagging: bool) -> Result<Run, String> {
    let mut set = throwaway::SentinelSet::start(2)?;
    let ns = format!("bench_failover_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let opts = ConnectOptions { redis_ca_file: None, redis_min_replicas: min_replicas };
    let store = Arc::new(RedisPgStore::connect_with(&set.url(), pg_url, &ns, &opts).map_err(|e| e.to_string())?);
    // Freshness well beyond the run, so no controller goes stale while the master is down.
    // Open registration: the bench measures failover, not enrollment.
    let c = Arc::new(
        Coordinator::new(store.clone(), Arc::new(SystemClock), Duration::from_secs(3600)).with_open_registration(true),
    );
    let key = |i: &str| ControllerKey { identity: i.into(), surface: "bench".into(), machine_id: "m".into() };
    let stop = Arc::new(AtomicBool::new(false));
    let killed_at = Arc::new(Mutex::new(None::<Instant>));
    let first_success = Arc::new(Mutex::new(None::<Duration>));
    let mut handles = Vec::new();
    for i in 0..CLIENTS {
        let project = format!("p{i}");
        let a = c.register(&project, &RegisterRequest::of(&key("a"), None, None)).map_err(|e| e.to_string())?;
        let b = c.register(&project, &RegisterRequest::of(&key("b"), None, None)).map_err(|e| e.to_string())?;
        let (c, stop, killed_at, first) = (c.clone(), stop.clone(), killed_at.clone(), first_success.clone());
        handles.push(std::thread::spawn(move || client(&c, &project, &a, &b, &stop, &killed_at, &first)));
    }
    // Double masters: sampled every 50 ms for the whole run.
    let doubles = Arc::new(AtomicU64::new(0));
    let ports: Vec<u16> = set.nodes.iter().map(|(_, p)| *p).collect();
    let sampler = {
        let (stop, doubles) = (stop.clone(), doubles.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let masters = ports.iter().filter(|p| throwaway::role(**p).as_deref() == Some("master")).count();
                if masters > 1 {
                    doubles.fetch_add(1, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    std::thread::sleep(WARMUP);
    if lagging {
        // Replicas that fall behind (a flapping link): the master drops its replicas'
        // connections again and again (they reconnect within a second, and Sentinel would
        // undo a proxy), so it acknowledges writes no replica has, then dies.
        let deadline = Instant::now() + LAG;
        while Instant::now() < deadline {
            throwaway::drop_replicas(set.nodes[0].1);
            std::thread::sleep(Duration::from_millis(5));
        }
        throwaway::drop_replicas(set.nodes[0].1);
    }
    let old = set.nodes[0].1;
    set.nodes[0].0.kill();
    let kill = Instant::now();

    *killed_at.lock().unwrap() = Some(kill);
    let mut sentinels_agree = None;
    while kill.elapsed() < GIVE_UP {
        if sentinels_agree.is_none() && set.agreed_master().is_some_and(|p| p != old) {
            sentinels_agree = Some(kill.elapsed());
        }
        if let Some(first) = *first_success.lock().unwrap()
            && kill.elapsed() >= first + AFTER
            && sentinels_agree.is_some()
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    let mut tally = Tally::default();
    for h in handles {
        let t = h.join().map_err(|_| "a client panicked".to_string())?;
        tally.ok += t.ok;
        tally.failed += t.failed;
        tally.lost += t.lost;
        tally.reused += t.reused;
        tally.latencies.extend(t.latencies);
    }
    let _ = sampler.join();
    drop(c);
    drop(store);
    if let Ok(mut pg) = postgres::Client::connect(pg_url, postgres::NoTls) {
        let _ = pg.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{ns}\" CASCADE"));
    }
    let first_success = *first_success.lock().unwrap();
    Ok(Run { tally, first_success, sentinels_agree, double_masters: doubles.load(Ordering::SeqCst) })
}

fn pct(lat: &mut [Duration], q: f64) -> Duration {
    lat.sort();
    lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1))).copied().unwrap_or_default()
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("never".into(), |d| format!("{:.0} ms", d.as_secs_f64() * 1000.0))
}

fn median<T: Copy + Ord>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let pg_url = std::env::var("WRITERCTL_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let runs: usize = std::env::var("WRITERCTL_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(3).max(1);
    if let Err(why) = throwaway::program("redis-server") {
        eprintln!("failover bench skipped: {why}");
        return;
    }
    println!(
        "failover: {CLIENTS} clients (handoffs, one project each), 1 master + 2 replicas + 3 sentinels \
         (down-after {} ms), master SIGKILLed after {} s",
        throwaway::DOWN_AFTER_MS,
        WARMUP.as_secs()
    );
    for (lagging, min_replicas) in [(false, 0u32), (false, 1), (true, 0), (true, 1)] {
        let scenario = if lagging {
            format!("replicas cut off {} ms before the kill", LAG.as_millis())
        } else {
            "replicas in sync".to_string()
        };
        println!("{scenario}:");
        let mut all: Vec<Run> = Vec::new();
        for i in 0..runs {
            match run(&pg_url, min_replicas, lagging) {
                Ok(mut r) => {
                    let (p50, p99) = (pct(&mut r.tally.latencies, 0.5), pct(&mut r.tally.latencies, 0.99));
                    println!(
                        "  --redis-min-replicas {min_replicas} run {}: {} verbs ok, {} failed; first success after \
                         the kill {} (sentinels agreed {}); acknowledged verbs lost {}; epochs reused {}; double \
                         masters {}; p50 {:.2} ms p99 {:.2} ms",
                        i + 1,
                        r.tally.ok,
                        r.tally.failed,
                        ms(r.first_success),
                        ms(r.sentinels_agree),
                        r.tally.lost,
                        r.tally.reused,
                        r.double_masters,
                        p50.as_secs_f64() * 1000.0,
                        p99.as_secs_f64() * 1000.0
                    );
                    all.push(r);
                }
                Err(e) => eprintln!("  --redis-min-replicas {min_replicas} run {}: failed to run: {e}", i + 1),
            }
        }
        if all.is_empty() {
            continue;
        }
        let mut p = |q: f64| {
            median(all.iter_mut().map(|r| pct(&mut r.tally.latencies, q)).collect::<Vec<_>>()).as_secs_f64() * 1000.0
        };
        let (p50, p99) = (p(0.5), p(0.99));
        println!(
            "median, {scenario}, --redis-min-replicas {min_replicas} ({} runs): verbs failed {}, first success after the kill {}, \
             acknowledged verbs lost {}, epochs reused {}, double masters {}, p50 {p50:.2} ms, p99 {p99:.2} ms",
            all.len(),
            median(all.iter().map(|r| r.tally.failed).collect()),
            ms(Some(median(all.iter().map(|r| r.first_success.unwrap_or(GIVE_UP)).collect()))),
            median(all.iter().map(|r| r.tally.lost).collect()),
            median(all.iter().map(|r| r.tally.reused).collect()),
            median(all.iter().map(|r| r.double_masters).collect()),
        );
    }
}
