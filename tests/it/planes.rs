//! The store's two planes off the local machine (issues 15 and 20): Redis over TLS with a
//! private CA, Postgres over TLS with each `sslmode` and never a fallback to clear text, a
//! Sentinel failover followed without a restart (no epoch reused, one master), and a
//! Postgres standby promoted and found through a multi-host URL.
//!
//! Every service here is a throwaway process the test starts on free loopback ports
//! (`throwaway.rs`); the namespace's Redis keys and schema on the default services come
//! from `services::Ns`. A missing program skips loudly, and fails under
//! `WRITERCTL_REQUIRE_SERVICES=1`.

#![allow(clippy::result_large_err)] // ClaimError is the engine's own error type

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::services::{Ns, skip};
use crate::support_api::handoff_by;
use crate::throwaway::{PgCluster, SentinelSet, TestCa, program, redis_tls};
use writerctl::claim::ClaimError;
use writerctl::claim::clock::SystemClock;
use writerctl::claim::engine::{Coordinator, DEFAULT_FRESHNESS, Registered};
use writerctl::claim::masters::{ControllerKey, RegisterRequest};
use writerctl::claim::stores::Store;
use writerctl::claim::stores::redis_pg::{ConnectOptions, RedisPgStore};

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

/// The throwaway programs `test` needs, or a loud skip.
fn programs(test: &str, names: &[&str]) -> bool {
    for n in names {
        if let Err(why) = program(n) {
            skip(test, &why);
            return false;
        }
    }
    true
}

fn coordinator(store: &Arc<RedisPgStore>) -> Coordinator {
    Coordinator::new(store.clone(), Arc::new(SystemClock), DEFAULT_FRESHNESS)
}

/// Enrolls `identity` (or gives it a new key) and registers a controller with that key.
fn register(c: &Coordinator, project: &str, identity: &str) -> Registered {
    let issued = match c.enroll_identity(project, identity) {
        Ok(k) => k,
        Err(e) if e.code() == writerctl::error::ErrorCode::IdentityExists => {
            c.rotate_identity(project, identity).unwrap()
        }
        Err(e) => panic!("enroll {identity}: {e}"),
    };
    let key = ControllerKey { identity: identity.into(), surface: "cli".into(), machine_id: "m".into() };
    c.register(project, &RegisterRequest::of(&key, Some(&issued.key), None)).unwrap()
}

fn handoff(c: &Coordinator, from: &Registered, to: &str, epoch: u64) -> Result<u64, ClaimError> {
    c.handoff("web", &handoff_by(from, to, epoch), &from.token).map(|o| o.epoch)
}

fn opts(ca: Option<&TestCa>, min_replicas: u32) -> ConnectOptions {
    ConnectOptions { redis_ca_file: ca.map(|c| c.ca.clone()), redis_min_replicas: min_replicas }
}

// ---------------------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------------------

#[test]
fn redis_over_tls_with_a_private_ca() {
    const T: &str = "redis_over_tls_with_a_private_ca";
    if !programs(T, &["redis-server"]) {
        return;
    }
    let Some(ns) = Ns::new(T) else { return };
    let ca = TestCa::new(&["localhost", "127.0.0.1"]);
    let (_redis, port) = redis_tls(ca.dir.path(), &ca).unwrap();
    let url = format!("rediss://127.0.0.1:{port}");

    let store = Arc::new(RedisPgStore::connect_with(&url, &ns.postgres_url, &ns.name, &opts(Some(&ca), 0)).unwrap());
    let c = coordinator(&store);
    let a = register(&c, "web", "alice");
    assert!(a.controller.is_master);
    assert_eq!(store.snapshot("web").unwrap().controllers.len(), 1, "the write went over TLS and reads back");
    store.flush_postgres().unwrap();
    assert_eq!(ns.pg_controllers("web").len(), 1);

    // The server's certificate is signed by a CA the system does not trust: refused.
    let e = RedisPgStore::connect(&url, &ns.postgres_url, &ns.name).unwrap_err();
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
    // Clear text to the TLS port never gets an answer that passes for Redis.
    assert!(RedisPgStore::connect(&format!("redis://127.0.0.1:{port}"), &ns.postgres_url, &ns.name).is_err());
    // A CA file with a clear-text address is a usage mistake, said before connecting.
    let e = RedisPgStore::connect_with(
        &format!("redis://127.0.0.1:{port}"),
        &ns.postgres_url,
        &ns.name,
        &opts(Some(&ca), 0),
    )
    .unwrap_err();
    assert!(matches!(&e, ClaimError::InvalidArgument(a) if a.field == "--redis-ca-file"), "{e}");
}

#[test]
fn postgres_over_tls_never_falls_back_to_clear_text() {
    const T: &str = "postgres_over_tls_never_falls_back_to_clear_text";
    if !programs(T, &["initdb", "pg_ctl", "postgres"]) {
        return;
    }
    let Some(ns) = Ns::new(T) else { return };
    // The certificate names `localhost` only, so 127.0.0.1 passes verify-ca, not verify-full.
    let ca = TestCa::new(&["localhost"]);
    let mut pg = PgCluster::init("").unwrap();
    pg.enable_ssl(&ca).unwrap();
    pg.start().unwrap_or_else(|e| panic!("{e}\n{}", pg.log()));
    let root = ca.ca.display().to_string();
    let url = |host: &str, params: &str| format!("postgres://postgres@{host}:{}/postgres?{params}", pg.port);
    let connect = |u: &str| RedisPgStore::connect(&ns.redis_url, u, &ns.name);

    let store = connect(&url("localhost", &format!("sslmode=verify-full&sslrootcert={root}"))).unwrap();
    store.flush_postgres().unwrap();
    let mut plain = postgres::Client::connect(&url("127.0.0.1", "sslmode=disable"), postgres::NoTls).unwrap();
    let encrypted: i64 = plain
        .query_one("SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE s.ssl AND a.pid <> pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    assert!(encrypted >= 1, "the store's connection is encrypted");
    drop(store);

    assert!(connect(&url("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={root}"))).is_ok());
    let e = connect(&url("127.0.0.1", &format!("sslmode=verify-full&sslrootcert={root}"))).unwrap_err();
    assert!(matches!(e, ClaimError::Store(_)) && e.to_string().contains("TLS"), "the name is checked: {e}");
    let cause = std::error::Error::source(&e);
    assert!(cause.is_some_and(|c| c.is::<postgres::Error>()), "the driver's error is kept: {cause:?}");
    let e = connect(&url("localhost", "sslmode=verify-full")).unwrap_err();
    assert!(matches!(e, ClaimError::Store(_)) && e.to_string().contains("TLS"), "system roots do not know it: {e}");
    assert!(connect(&url("127.0.0.1", "sslmode=require")).is_ok(), "require encrypts without checking (libpq)");

    // The server stops offering TLS: require fails at start, and says why.
    plain.batch_execute("ALTER SYSTEM SET ssl = off").unwrap();
    plain.batch_execute("SELECT pg_reload_conf()").unwrap();
    let mut refused = None;
    crate::throwaway::poll(Duration::from_secs(10), || {
        refused = connect(&url("127.0.0.1", "sslmode=require")).err();
        refused.is_some()
    });
    let e = refused.expect("sslmode=require against a server without TLS must fail");
    assert!(matches!(e, ClaimError::Store(_)), "{e}");
    assert!(e.to_string().contains("does not accept TLS") && e.to_string().contains("clear text"), "{e}");
}

// ---------------------------------------------------------------------------------------
// failover
// ---------------------------------------------------------------------------------------

#[test]
fn sentinel_failover_is_followed_without_reusing_an_epoch() {
    const T: &str = "sentinel_failover_is_followed_without_reusing_an_epoch";
    if !programs(T, &["redis-server"]) {
        return;
    }
    let Some(ns) = Ns::new(T) else { return };
    let mut set = SentinelSet::start(1).unwrap();
    let url = set.url();
    let store = Arc::new(RedisPgStore::connect_with(&url, &ns.postgres_url, &ns.name, &opts(None, 0)).unwrap());
    let acked = Arc::new(RedisPgStore::connect_with(&url, &ns.postgres_url, &ns.name, &opts(None, 1)).unwrap());
    let (c, c_acked) = (coordinator(&store), coordinator(&acked));
    let alice = register(&c, "web", "alice");
    let bob = register(&c, "web", "bob");
    // With --redis-min-replicas 1 the write is acknowledged only once the replica has it,
    // so the failover below cannot lose it.
    assert_eq!(handoff(&c_acked, &alice, "bob", 1).unwrap(), 2);

    let old = set.nodes[0].1;
    set.nodes[0].0.kill();
    let started = Instant::now();
    let mut failed = 0;
    let epoch = loop {
        match handoff(&c, &bob, "alice", 2) {
            Ok(epoch) => break epoch,
            Err(ClaimError::Unavailable(_)) if started.elapsed() < Duration::from_secs(60) => {
                failed += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("after {failed} unavailable answers: {e}"),
        }
    };
    assert_eq!(epoch, 3, "the promoted replica held epoch 2, so the next change of master is 3, not a reused 2");
    let new = set.nodes[1].1;
    assert_eq!(set.agreed_master(), Some(new), "the sentinels promoted the replica");
    assert_eq!(set.masters(), vec![new], "one master (the old one is gone, not answering as a second)");
    assert_ne!(old, new);
    let st = c.status("web").unwrap();
    assert_eq!((st.slot.epoch, st.slot.master.unwrap().session_id), (3, alice.controller.session_id.clone()));

    // The promoted node has no replica left: a store that asks for one fails closed and
    // says the write may have applied.
    match handoff(&c_acked, &alice, "bob", 3) {
        Err(ClaimError::Unavailable(m)) => assert!(m.contains("may have applied"), "{m}"),
        other => panic!("expected unavailable, got {other:?}"),
    }
    store.flush_postgres().unwrap();
}

#[test]
fn a_promoted_postgres_standby_is_found_without_a_restart() {
    const T: &str = "a_promoted_postgres_standby_is_found_without_a_restart";
    if !programs(T, &["initdb", "pg_ctl", "postgres", "pg_basebackup"]) {
        return;
    }
    let Some(ns) = Ns::new(T) else { return };
    let mut primary = PgCluster::init("wal_level = replica\nmax_wal_senders = 4\nhot_standby = on").unwrap();
    primary.start().unwrap_or_else(|e| panic!("{e}\n{}", primary.log()));
    let mut standby = PgCluster::standby_of(&primary).unwrap();
    standby.start().unwrap_or_else(|e| panic!("{e}\n{}", standby.log()));
    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write",
        primary.port, standby.port
    );
    let store = Arc::new(RedisPgStore::connect(&ns.redis_url, &url, &ns.name).unwrap());
    let c = coordinator(&store);
    register(&c, "web", "alice");
    store.flush_postgres().unwrap();

    primary.stop().unwrap();
    standby.promote().unwrap_or_else(|e| panic!("{e}\n{}", standby.log()));
    register(&c, "web", "bob");
    // The writer reconnects through the URL's host list and skips nothing but the dead
    // primary: the promoted standby takes the queued writes.
    store.flush_postgres().unwrap();
    assert_eq!(store.pending_postgres_writes().unwrap(), 0);
    let mut promoted =
        postgres::Client::connect(&format!("postgres://postgres@127.0.0.1:{}/postgres", standby.port), postgres::NoTls)
            .unwrap();
    let rows: i64 = promoted
        .query_one(&format!("SELECT count(*) FROM \"{}\".controller_status WHERE project = 'web'", ns.name), &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 2, "both registrations reached Postgres, the second through the promoted standby");
}

// ---------------------------------------------------------------------------------------
// clients
// ---------------------------------------------------------------------------------------

#[test]
fn clear_text_http_off_this_machine_is_refused_unless_allowed() {
    let env = crate::support::TestEnv::new();
    let status = |url: &str| ["master", "status", "--project", "p", "--json", "--coordinator", url].map(String::from);
    let run = |args: &[String]| env.run_raw(&args.iter().map(String::as_str).collect::<Vec<_>>());

    let refused = run(&status("http://192.0.2.7:7700"));
    refused.assert_error(2, "usage");
    let doc: serde_json::Value = refused.json();
    assert!(doc["error"]["message"].as_str().unwrap().contains("192.0.2.7"), "{}", refused.stdout);
    let hint = doc["error"]["hint"].as_str().unwrap();
    assert!(hint.contains("https://") && hint.contains("--allow-insecure-http"), "{hint}");
    run(&status("http://coordinator.example:7700")).assert_error(2, "usage");

    // Loopback is this machine: the client goes ahead (and finds nothing listening).
    for url in ["http://127.0.0.1:1", "http://localhost:1", "http://[::1]:1"] {
        run(&status(url)).assert_error(75, "coordinator_unavailable");
    }
    // Allowed explicitly, by flag or environment: no usage error.
    let mut allowed = status("http://192.0.2.7:1").to_vec();
    allowed.push("--allow-insecure-http".into());
    assert_ne!(run(&allowed).error_code(), "usage");
    let by_env =
        env.cmd().args(status("http://192.0.2.7:1")).env("WRITERCTL_ALLOW_INSECURE_HTTP", "1").output().unwrap();
    assert!(!String::from_utf8_lossy(&by_env.stdout).contains("\"usage\""), "{by_env:?}");
}

#[test]
fn serve_refuses_store_addresses_that_could_fall_back_to_clear_text() {
    let env = crate::support::TestEnv::new();
    let ca = TestCa::new(&["localhost"]);
    let ca_file = ca.ca.display().to_string();
    let serve = |redis: &str, postgres: &str, extra: &[&str]| {
        let mut args = vec!["coordinator", "serve", "--json", "--listen", "127.0.0.1:0", "--redis", redis];
        args.extend(["--postgres", postgres]);
        args.extend(extra);
        env.run_raw(&args)
    };
    // Refused before any connection is attempted (nothing listens on port 1).
    let pg = "postgres://postgres@127.0.0.1:1/test";
    serve("redis://127.0.0.1:1", pg, &["--redis-ca-file", &ca_file]).assert_error(2, "invalid_argument");
    for mode in ["prefer", "allow"] {
        let r = serve("redis://127.0.0.1:1", &format!("{pg}?sslmode={mode}"), &[]);
        r.assert_error(2, "invalid_argument");
        assert!(r.stdout.contains("clear text"), "{}", r.stdout);
    }
    serve("redis+sentinel://127.0.0.1:1", pg, &[]).assert_error(2, "invalid_argument");
}
