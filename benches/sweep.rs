//! The TTL sweep over 100,000 claims (issue 8: "≤ 1 s on redis_pg and on sqlite"), with a
//! reference measured in the same run on the same store.
//!
//! Two shapes, each on both stores:
//! * `scan`: 100,000 live claims with TTLs, 1,000 of them due — the sweep a server runs
//!   every interval (find what is due, release it).
//! * `all due`: all 100,000 due at once (the fleet went dark together) — every claim is
//!   rewritten with its history step, three doorbells and an audit row.
//!
//! References: SQLite — one transaction updating the same 100,000 rows by primary key
//! (the floor of rewriting them on the same file and pragmas); Redis — 100,000 pipelined
//! `HSET`s of the same rows (the floor of touching them at all).
//!
//! Run: `cargo bench --bench sweep` (WRITERCTL_BENCH_CLAIMS, default 100000). Redis +
//! Postgres at WRITERCTL_TEST_REDIS_URL / WRITERCTL_TEST_POSTGRES_URL (defaults: local).
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use writerctl::claim::Coordinator;
use writerctl::claim::clock::ManualClock;
use writerctl::claim::model::{AuditEntry, Millis};
use writerctl::claim::stores::redis_pg::RedisPgStore;
use writerctl::claim::stores::sqlite::SqliteStore;
use writerctl::claim::stores::{Store, WorkClaimWrite};
use writerctl::claim::work_claims::{self as work, ChannelRequest, SweepRequest, TakeRequest, TaskAddress};

const T0: Millis = 1_800_000_000_000;
const M: Millis = 60_000;
const P: &str = "bench";
const CH: &str = "work";

fn claims() -> usize {
    std::env::var("WRITERCTL_BENCH_CLAIMS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000)
}

/// Loads `n` claims straight through the store (the engine's take, minus one round trip
/// per claim): `due` of them with a 5-minute TTL, the rest with a 600-minute one; every
/// other claim names a deputy.
fn load(store: &Arc<dyn Store>, n: usize, due: usize) {
    let c = Coordinator::new(store.clone(), Arc::new(ManualClock::at(T0)), Duration::from_secs(30));
    c.create_channel(P, &ChannelRequest { channel: CH.into(), steward: "steward".into(), ..Default::default() })
        .unwrap();
    let ch = store.channel(P, CH).unwrap().unwrap();
    let mut batch = Vec::with_capacity(5000);
    for i in 0..n {
        let at = TaskAddress::new(P, CH, format!("task-{i:06}"));
        let req = TakeRequest {
            seat: format!("seat{}", i % 64),
            deputy: (i % 2 == 0).then(|| format!("seat{}", (i + 1) % 64)),
            ttl_minutes: Some(if i < due { 5 } else { 600 }),
            next_step: Some("merge it".into()),
            reason: None,
        };
        let claim = work::take(None, &ch, &at, &req, T0).unwrap().claim;
        let audit = AuditEntry {
            at: T0,
            project: P.into(),
            verb: "claim.take".into(),
            actor: format!("seat:{}", req.seat),
            target: Some(claim.target()),
            result: "ok".into(),
            epoch: None,
            detail: serde_json::json!({}),
            request: None,
            reason: None,
        };
        batch.push(WorkClaimWrite {
            expected_version: 0,
            row: claim,
            action: "take".into(),
            events: Vec::new(),
            audit,
            proof: None,
        });
        if batch.len() == 5000 || i + 1 == n {
            store.write_work_claims(&batch).unwrap();
            batch.clear();
        }
    }
}

fn sweep(store: &Arc<dyn Store>, expect: usize) -> Duration {
    let c = Coordinator::new(store.clone(), Arc::new(ManualClock::at(T0 + 5 * M)), Duration::from_secs(30));
    let now = SweepRequest::default();
    let t = Instant::now();
    let report = c.sweep(P, &now).unwrap();
    let took = t.elapsed();
    assert_eq!(report.released.len(), expect, "the sweep released what was due");
    took
}

fn line(store: &str, shape: &str, n: usize, took: Duration, reference: Duration) {
    let verdict = if took <= Duration::from_secs(1) { "met" } else { "NOT met" };
    println!(
        "{store:<8} {shape:<8} claims {n:>7}  sweep {:>8.1} ms  reference {:>8.1} ms  ratio {:>5.1}x  target <= 1 s: {verdict}",
        took.as_secs_f64() * 1e3,
        reference.as_secs_f64() * 1e3,
        took.as_secs_f64() / reference.as_secs_f64().max(1e-9),
    );
}

fn sqlite_reference(path: &std::path::Path, n: usize) -> Duration {
    let mut conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "synchronous", "FULL").unwrap();
    let t = Instant::now();
    let tx = conn.transaction().unwrap();
    {
        let mut stmt = tx
            .prepare("UPDATE claims SET version = version + 1 WHERE project = ?1 AND channel = ?2 AND task = ?3")
            .unwrap();
        for i in 0..n {
            stmt.execute(rusqlite::params![P, CH, format!("task-{i:06}")]).unwrap();
        }
    }
    tx.commit().unwrap();
    t.elapsed()
}

fn sqlite(n: usize) {
    for (shape, due) in [("scan", n / 100), ("all due", n)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.sqlite");
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
        load(&store, n, due);
        let took = sweep(&store, due);
        let reference = sqlite_reference(&path, due);
        line("sqlite", shape, n, took, reference);
    }
}

/// Waits until Postgres has every queued write. `flush_postgres` gives up after 30 s when
/// the background writer holds the drain lock; 100,000 releases take longer than that.
fn drain(store: &RedisPgStore) {
    let deadline = Instant::now() + Duration::from_secs(900);
    while store.pending_postgres_writes().unwrap() > 0 {
        assert!(Instant::now() < deadline, "postgres did not catch up within 15 minutes");
        if store.flush_postgres().is_err() {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn redis_pg(n: usize) {
    let redis_url = std::env::var("WRITERCTL_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let pg_url = std::env::var("WRITERCTL_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    for (shape, due) in [("scan", n / 100), ("all due", n)] {
        let ns = format!("bench_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let store = match RedisPgStore::connect(&redis_url, &pg_url, &ns) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                println!("redis_pg SKIPPED: {e}");
                return;
            }
        };
        let dyn_store: Arc<dyn Store> = store.clone();
        load(&dyn_store, n, due);
        drain(&store);
        let took = sweep(&dyn_store, due);
        let t = Instant::now();
        drain(&store);
        let pg_catch_up = t.elapsed();
        // Reference: pipelined HSETs of as many rows, on a scratch key.
        let mut conn = redis::Client::open(redis_url.as_str()).unwrap().get_connection().unwrap();
        let scratch = format!("{{{ns}}}:reference");
        let t = Instant::now();
        for chunk in (0..due).collect::<Vec<_>>().chunks(1000) {
            let mut pipe = redis::pipe();
            for i in chunk {
                pipe.hset(&scratch, format!("task-{i:06}"), "{\"version\":2}").ignore();
            }
            pipe.query::<()>(&mut conn).unwrap();
        }
        let reference = t.elapsed();
        line("redis_pg", shape, n, took, reference);
        println!("{:<8} {shape:<8} postgres caught up {:.1} s after the sweep", "", pg_catch_up.as_secs_f64());
        drop(dyn_store);
        drop(store);
        let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{{{ns}}}:*")).query(&mut conn).unwrap();
        for chunk in keys.chunks(10_000) {
            let _: i64 = redis::cmd("DEL").arg(chunk).query(&mut conn).unwrap();
        }
        let mut pg = postgres::Client::connect(&pg_url, postgres::NoTls).unwrap();
        pg.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{ns}\" CASCADE")).unwrap();
    }
}

fn main() {
    let n = claims();
    sqlite(n);
    redis_pg(n);
}
