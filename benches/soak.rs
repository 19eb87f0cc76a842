//! Soak of `coordinator serve` (issue 15 part 5): does a server a fleet leaves running stay
//! the same size, and as fast, once its retention window has passed?
//!
//! For each store (the embedded SQLite file, then Redis + Postgres) it starts the release
//! binary `writerctl coordinator serve` with a drill clock (`--time-scale`, so one retention
//! day passes in about a minute) and drives, over HTTP:
//!
//! * 1,000 controllers (50 projects x 20) heartbeating every 10 real seconds;
//! * master handoffs (each MasterPreempted lands in an inbox);
//! * work claims with a TTL and a deputy on a bounded set of tasks, released by the server's
//!   sweeper to the deputy, then to open, then taken again (doorbells in inboxes);
//! * operator claims under ids that do not exist (one attempt row each, pruned when idle).
//!
//! Every `seconds / 6` it prints the store's sizes (rows from `/metrics`; Postgres table
//! sizes, Redis `used_memory` and the namespace's own key memory; the SQLite file and its
//! WAL) and each verb's p50/p99 over the last interval. Flat rows after the first window,
//! and latency that does not grow, are the pass.
//!
//! Run: `cargo bench --bench soak` (or `scripts/soak.sh coordinator`). WRITERCTL_SOAK_SECONDS
//! per store (default 180), WRITERCTL_SOAK_STORES (default `sqlite,redis_pg`); Redis and
//! Postgres from WRITERCTL_TEST_REDIS_URL / WRITERCTL_TEST_POSTGRES_URL (default the local
//! services; that half is skipped with a note when they do not answer).
#![allow(clippy::disallowed_methods)]

#[path = "support/live.rs"]
mod live;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use writerctl::claim::ClaimError;
use writerctl::claim::masters::{ControllerKey, HandoffRequest, MasterClaimRequest, RegisterRequest};
use writerctl::claim::secret::Secret;
use writerctl::claim::work_claims::{ChannelRequest, TakeRequest, TaskAddress, WorkClaimOutcome};
use writerctl::coordinator::client::HttpCoordinator;
use writerctl::coordinator::verbs::{master, work};
use writerctl::coordinator::wire::{NoBody, ProjectPath, SessionPath, TaskPath};

use live::{Backing, metrics, pct, start_server, stop_server};

const PROJECTS: usize = 50;
const PER_PROJECT: usize = 20;
/// Tasks per project; each cycles take -> TTL to the deputy -> TTL to open -> take.
const TASKS: usize = 4;
/// One retention day in about a minute (86,400 s / 1,440).
const TIME_SCALE: &str = "1440";
const BEAT_EVERY: Duration = Duration::from_secs(10);
const HEARTBEAT_THREADS: usize = 8;
const CHANNEL: &str = "work";

/// A registered controller: what a write must carry to prove its seat.
#[derive(Clone)]
struct Seat {
    project: String,
    identity: String,
    session_id: String,
    token: Secret,
}

/// The one place a controller registers (so a change in what registering must prove, such as
/// an enrolled identity key, is made once).
fn register(c: &HttpCoordinator, project: &str, identity: &str) -> Seat {
    let key = ControllerKey { identity: identity.into(), surface: "soak".into(), machine_id: "bench".into() };
    let r = c
        .call::<master::Register>(&ProjectPath::of(project), &RegisterRequest::of(&key, None, None), None)
        .unwrap_or_else(|e| panic!("register {project}/{identity}: {e}"));
    let token = Secret::new(r.token);
    Seat { project: project.into(), identity: identity.into(), session_id: r.controller.session_id, token }
}

/// The one place a seat takes a claim (so a change in how a claim write proves its seat, such
/// as a session token, is made once). TTL 20 scaled minutes (under a second), deputy the
/// next identity.
fn take_claim(c: &HttpCoordinator, seat: &Seat, task: &str, deputy: &str) -> Result<WorkClaimOutcome, ClaimError> {
    let at = TaskAddress::new(seat.project.clone(), CHANNEL, task);
    let req = TakeRequest {
        seat: seat.identity.clone(),
        deputy: Some(deputy.into()),
        ttl_minutes: Some(20),
        next_step: Some("finish the soak step".into()),
        reason: None,
    };
    c.call::<work::TakeClaim>(&TaskPath::from(&at), &req, Some(&seat.token))
}

/// Latencies by verb since the last sample.
#[derive(Default)]
struct Latencies(Mutex<BTreeMap<&'static str, Vec<Duration>>>);

impl Latencies {
    fn time<T>(&self, verb: &'static str, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = f();
        self.0.lock().unwrap().entry(verb).or_default().push(started.elapsed());
        out
    }

    fn take(&self) -> BTreeMap<&'static str, Vec<Duration>> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// A thread that runs `round` (given its client, the seats and the round number) until
/// `stop`.
fn spawn_rounds(
    url: &str,
    seats: &Arc<Vec<Vec<Seat>>>,
    lat: &Arc<Latencies>,
    stop: &Arc<AtomicBool>,
    mut round: impl FnMut(&HttpCoordinator, &[Vec<Seat>], &Latencies, &AtomicBool, usize) + Send + 'static,
) -> std::thread::JoinHandle<()> {
    let (seats, url, lat, stop) = (seats.clone(), url.to_string(), lat.clone(), stop.clone());
    std::thread::spawn(move || {
        let c = HttpCoordinator::new(&url, None, None).unwrap();
        let mut n = 0usize;
        while !stop.load(Ordering::Relaxed) {
            round(&c, &seats, &lat, &stop, n);
            n += 1;
        }
    })
}

/// Drives the load until `stop`; returns the threads.
fn drive(
    url: &str,
    seats: &Arc<Vec<Vec<Seat>>>,
    lat: &Arc<Latencies>,
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut threads = Vec::new();
    let all: Vec<Seat> = seats.iter().flatten().cloned().collect();
    // Heartbeats: each thread beats its share of the 1,000 controllers every BEAT_EVERY.
    for part in all.chunks(all.len().div_ceil(HEARTBEAT_THREADS)) {
        let part = part.to_vec();
        let pause = BEAT_EVERY / part.len() as u32;
        threads.push(spawn_rounds(url, seats, lat, stop, move |c, _, lat, stop, _| {
            for s in &part {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let next = Instant::now() + pause;
                let at = SessionPath::of(&s.project, &s.session_id);
                let r = lat.time("session.heartbeat", || c.call::<master::Heartbeat>(&at, &NoBody {}, Some(&s.token)));
                r.unwrap_or_else(|e| panic!("heartbeat: {e}"));
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        }));
    }
    // Handoffs: project after project, the master hands off to another identity.
    threads.push(spawn_rounds(url, seats, lat, stop, |c, seats, lat, _, round| {
        for project in seats {
            let at = ProjectPath::of(&project[0].project);
            let st = lat.time("master.status", || c.call::<master::Status>(&at, &NoBody {}, None)).unwrap();
            let Some(m) = st.master else { continue };
            let Some(i) = project.iter().position(|s| s.session_id == m.session_id) else { continue };
            let to = &project[(i + 1 + round % (PER_PROJECT - 1)) % PER_PROJECT];
            let from = &project[i];
            let req = HandoffRequest {
                session_id: from.session_id.clone(),
                to: to.identity.clone(),
                to_session: Some(to.session_id.clone()),
                expect_epoch: st.epoch,
                ..Default::default()
            };
            let at = ProjectPath::of(&to.project);
            match lat.time("master.handoff", || c.call::<master::Handoff>(&at, &req, Some(&from.token))) {
                Ok(_) | Err(ClaimError::Remote { .. }) => {}
                Err(e) => panic!("handoff: {e}"),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }));
    // Claims: each round, every task that is open is taken again, with a TTL and a deputy
    // (a task still held answers claim_taken, which is audited too).
    threads.push(spawn_rounds(url, seats, lat, stop, |c, seats, lat, stop, round| {
        for project in seats {
            for t in 0..TASKS {
                let seat = &project[(t + round) % PER_PROJECT];
                let deputy = &project[(t + round + 1) % PER_PROJECT].identity;
                match lat.time("claim.take", || take_claim(c, seat, &format!("task-{t}"), deputy)) {
                    Ok(_) | Err(ClaimError::Remote { .. }) => {}
                    Err(e) => panic!("take: {e}"),
                }
            }
            if stop.load(Ordering::Relaxed) {
                return;
            }
        }
        std::thread::sleep(Duration::from_secs(1));
    }));
    // Operator claims under ids nobody added: refused, one attempt row per id.
    threads.push(spawn_rounds(url, seats, lat, stop, |c, seats, lat, _, n| {
        let s = &seats[n % PROJECTS][0];
        let req = MasterClaimRequest {
            to: s.identity.clone(),
            expect_epoch: 0,
            operator: format!("ghost-{n}"),
            password: "x".into(),
            ..Default::default()
        };
        let at = ProjectPath::of(&s.project);
        let r = lat.time("master.claim", || c.call::<master::MasterClaim>(&at, &req, None));
        assert!(r.is_err(), "an unknown operator must be refused");
        std::thread::sleep(Duration::from_millis(500));
    }));
    threads
}

fn soak(name: &str, backing: &Backing, server_args: Vec<String>, seconds: u64) {
    println!("\n== {name}: 1,000 controllers, {seconds} s, --time-scale {TIME_SCALE} (one retention day ~60 s) ==");
    let mut args = vec![
        "--time-scale".into(),
        TIME_SCALE.into(),
        "--freshness-seconds".into(),
        "86400".into(),
        "--sweep-interval-seconds".into(),
        "1".into(),
        "--audit-retention-days".into(),
        "1".into(),
        "--inbox-retention-days".into(),
        "1".into(),
        "--retention-interval-seconds".into(),
        "5".into(),
        // Registration proves nothing here: the soak measures growth, not enrollment (claim
        // writes still prove their seat with the session token).
        "--open-registration".into(),
    ];
    // Channels are created with the admin token, as in production.
    let admin_dir = tempfile::tempdir().unwrap();
    let (admin_file, admin_token) = live::admin_token_file(admin_dir.path());
    args.extend(["--admin-token-file".into(), admin_file.display().to_string()]);
    args.extend(server_args);
    let (child, url) = start_server(&args);
    let c = HttpCoordinator::new(&url, None, Some(Secret::new(admin_token))).unwrap();
    let seats: Vec<Vec<Seat>> = (0..PROJECTS)
        .map(|p| {
            let project = format!("soak-{p}");
            let seats: Vec<Seat> = (0..PER_PROJECT).map(|i| register(&c, &project, &format!("c{i}"))).collect();
            let ch = ChannelRequest {
                channel: CHANNEL.into(),
                steward: "c0".into(),
                sla_minutes: Some(60),
                ttl_floor_minutes: Some(1),
            };
            c.call::<work::CreateChannel>(&ProjectPath::of(&project), &ch, None).unwrap();
            seats
        })
        .collect();
    let seats = Arc::new(seats);
    let lat = Arc::new(Latencies::default());
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let threads = drive(&url, &seats, &lat, &stop);
    let samples = 6u64;
    let verbs = ["session.heartbeat", "master.handoff", "claim.take", "master.claim"];
    println!(
        "{:>5}  {:>8} {:>8} {:>8} {:>8} {:>6}  {}  | {}",
        "t(s)",
        "audit",
        "history",
        "inbox",
        "attempts",
        "queue",
        verbs.iter().map(|v| format!("{v} p50/p99 ms")).collect::<Vec<_>>().join("  "),
        "store"
    );
    for i in 1..=samples {
        let at = started + Duration::from_secs(seconds * i / samples);
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let m = metrics(&url);
        let get = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
        let lats = lat.take();
        let cols: Vec<String> = verbs
            .iter()
            .map(|v| {
                let mut l = lats.get(v).cloned().unwrap_or_default();
                l.sort();
                format!("{:>6} {:>6.2}/{:<7.2}", l.len(), pct(&l, 0.5), pct(&l, 0.99))
            })
            .collect();
        println!(
            "{:>5}  {:>8} {:>8} {:>8} {:>8} {:>6}  {}  | {}",
            started.elapsed().as_secs(),
            get("writerctl_audit_rows"),
            get("writerctl_claim_history_steps"),
            get("writerctl_inbox_entries"),
            get("writerctl_operator_attempt_rows"),
            m.get("writerctl_audit_retry_queue_depth").map_or("-".into(), |d| d.to_string()),
            cols.join("  "),
            backing.sizes()
        );
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let m = metrics(&url);
    println!(
        "heartbeats {} (none audited), pruned: audit rows {}, history steps {}, inbox events {}, attempt rows {}",
        m.get("writerctl_heartbeats_total").copied().unwrap_or(0.0),
        m.get(r#"writerctl_retention_pruned_total{kind="audit_rows"}"#).copied().unwrap_or(0.0),
        m.get(r#"writerctl_retention_pruned_total{kind="history_steps"}"#).copied().unwrap_or(0.0),
        m.get(r#"writerctl_retention_pruned_total{kind="inbox_entries"}"#).copied().unwrap_or(0.0),
        m.get(r#"writerctl_retention_pruned_total{kind="attempt_rows"}"#).copied().unwrap_or(0.0),
    );
    stop_server(child);
}

fn main() {
    let seconds: u64 = std::env::var("WRITERCTL_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(180);
    let stores = std::env::var("WRITERCTL_SOAK_STORES").unwrap_or_else(|_| "sqlite,redis_pg".into());
    println!(
        "columns: rows from /metrics (audit log, claim history steps, inbox events, operator-attempt rows, Postgres queue);"
    );
    println!("per verb: calls in the interval, p50/p99 in ms; then the store's own sizes");
    if stores.contains("sqlite") {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("soak.sqlite");
        let backing = Backing::Sqlite(path.clone());
        soak("sqlite", &backing, vec!["--store".into(), format!("sqlite:{}", path.display())], seconds);
    }
    if stores.contains("redis_pg") {
        let Some((redis, postgres, ns)) = live::services_or_skip("redis_pg", "soak") else { return };
        let backing = Backing::RedisPg { redis: redis.clone(), postgres: postgres.clone(), ns: ns.clone() };
        let args = vec![
            "--redis".into(),
            redis.clone(),
            "--postgres".into(),
            postgres.clone(),
            "--namespace".into(),
            ns.clone(),
        ];
        soak("redis_pg", &backing, args, seconds);
        // Leave nothing behind: the namespace's keys and schema.
        live::drop_namespace(&redis, &postgres, &ns);
    }
}
