//! `coordinator serve` against floods from many addresses that used to take its connection
//! slots or turn eviction against real clients (issue 39 points 2 and 3), through the real
//! server binary over SQLite, with a small `--max-connections` (64) to keep them cheap:
//!
//! * unauthenticated `master/watch` long-polls from 8 addresses, more than the cap: `/livez`,
//!   `/readyz` and a heartbeat are still served, because long-polls are held only within a
//!   quarter of the cap (8 per address) and the rest are answered at once;
//! * the same flood with a new project name on every request: the watch registry holds a
//!   checker for at most the held watches, and none once they are answered;
//! * a distributed idle flood (120 addresses, one connection each, reconnecting when
//!   evicted) at the cap: a host with 4 keep-alive clients, two reading `master status`
//!   and two heartbeating with their session token, is never evicted (on main the source
//!   holding the most connections lost one: the host). The flood's connections are the
//!   oldest waiters, the host's unauthenticated ones wait 100 ms between requests and its
//!   proven ones are evicted only after every unauthenticated one.
//!
//! Attackers and clients use loopback addresses (every 127/8 address reaches a 127.0.0.1
//! listener on Linux). Every wait is a generous "did not hang" guard, never a timing
//! assertion.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::abuse_net::server;
use crate::master::{PROJECT, ok_doc};
use crate::serve::{http_get, metric};
use crate::support::try_connect_from;

const CAP: usize = 64;
/// Long-polls the server holds at once with `--max-connections 64` (a quarter).
const POOL: f64 = 16.0;

/// One answer read from a kept-alive connection: (status, body); Err when the server
/// closed the connection (or did not answer within 30 s), with what it sent.
fn read_answer(c: &mut TcpStream, stop: Option<&AtomicBool>) -> Result<(u16, String), String> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let started = Instant::now();
    loop {
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if seen.len() >= end + 4 + len {
                let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
                return Ok((status, String::from_utf8_lossy(&seen[end + 4..end + 4 + len]).into_owned()));
            }
        }
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            return Err("stopped".into());
        }
        match c.read(&mut buf) {
            Ok(0) => return Err(format!("closed by the server after {:?}", String::from_utf8_lossy(&seen))),
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stop.is_none() && started.elapsed() > Duration::from_secs(30) {
                    return Err(format!("no answer within 30 s: {:?}", String::from_utf8_lossy(&seen)));
                }
            }
            Err(e) => return Err(format!("{e} after {:?}", String::from_utf8_lossy(&seen))),
        }
    }
}

/// The watch answer's version for an empty project (every empty project has the same).
fn empty_version(to: SocketAddr) -> String {
    let (status, _, body) = http_get(&format!("http://{to}/v1/projects/nobody-here/master/watch?wait_ms=0"));
    assert_eq!(status, 200, "{body}");
    serde_json::from_str::<Value>(&body).unwrap()["version"].as_str().unwrap().to_string()
}

/// `per_address` attacker threads on each of `addresses` (127.0.2.x), each sending
/// `master/watch?after=version&wait_ms=wait_ms` on a kept-alive connection, again as soon
/// as it is answered, and reconnecting when the server closes it; `distinct` names a new
/// project on every request. Returns the threads and how many requests they sent.
fn watch_flood(
    to: SocketAddr,
    addresses: u8,
    per_address: usize,
    version: &str,
    wait_ms: u64,
    distinct: bool,
    stop: &Arc<AtomicBool>,
) -> (Vec<thread::JoinHandle<()>>, Arc<AtomicU64>) {
    let sent = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for a in 1..=addresses {
        for t in 0..per_address {
            let (stop, sent, version) = (stop.clone(), sent.clone(), version.to_string());
            let from = IpAddr::V4(Ipv4Addr::new(127, 0, 2, a));
            threads.push(thread::spawn(move || {
                let mut k = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut c) = try_connect_from(from, to) else {
                        thread::sleep(Duration::from_millis(100));
                        continue;
                    };
                    c.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        k += 1;
                        let project = if distinct { format!("flood-{a}-{t}-{k}") } else { "flood".to_string() };
                        let req = format!(
                            "GET /v1/projects/{project}/master/watch?after={version}&wait_ms={wait_ms} HTTP/1.1\r\nhost: x\r\n\r\n"
                        );
                        if c.write_all(req.as_bytes()).is_err() {
                            break;
                        }
                        sent.fetch_add(1, Ordering::Relaxed);
                        if read_answer(&mut c, Some(&stop)).is_err() {
                            break;
                        }
                        thread::sleep(Duration::from_millis(50));
                    }
                    thread::sleep(Duration::from_millis(100));
                }
            }));
        }
    }
    (threads, sent)
}

/// /metrics now, from 127.0.0.1.
fn scrape(to: SocketAddr) -> String {
    let (status, _, m) = http_get(&format!("http://{to}/metrics"));
    assert_eq!(status, 200, "{m}");
    m
}

/// Issue 39 point 2: 8 addresses x 10 unauthenticated watch long-polls, 80 > the cap of
/// 64, each re-sent as soon as it is answered. On main they were held as busy, never
/// evicted: 64 held filled the cap and `/livez` got 503 for as long as they liked. Now
/// at most 16 are held (a quarter of the cap, 8 per address), the others are answered at
/// once with the state, and probes and a heartbeat are served.
#[test]
fn unauthenticated_long_polls_cannot_take_the_slots() {
    let co = server(&["--max-connections", &CAP.to_string()]);
    let to = co.addr();
    let alice = co.reg("alice");
    let version = empty_version(to);
    let stop = Arc::new(AtomicBool::new(false));
    let (threads, sent) = watch_flood(to, 8, 10, &version, 30_000, false, &stop);
    while sent.load(Ordering::Relaxed) < 200 {
        thread::sleep(Duration::from_millis(50));
    }
    let mut answers = Vec::new();
    for _ in 0..5 {
        for path in ["/livez", "/readyz"] {
            answers.push((path, http_get(&format!("http://{to}{path}"))));
        }
        thread::sleep(Duration::from_millis(100));
    }
    let beat = co.heartbeat(&alice, &alice.token_file);
    let m = scrape(to);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    for (path, (status, _, body)) in &answers {
        assert_eq!(*status, 200, "{path} during the long-poll flood: {body}");
    }
    ok_doc(&beat);
    assert_eq!(metric(&m, "writerctl_long_polls_max"), Some(POOL), "{m}");
    assert!(metric(&m, "writerctl_long_polls_held").unwrap() <= POOL, "{m}");
    assert!(metric(&m, "writerctl_long_polls_not_held_total").unwrap() >= 1.0, "{m}");
}

/// Issue 39 points 2 and 5: watches of ever new project names (from 8 addresses, past the
/// cap). On main every name got a checker, held with its watch (64 at once here, and
/// 6,500 from 30 KB names in the issue); now only held watches subscribe, so the checkers
/// stay within a small multiple of the long-poll pool (the held watches, plus checkers
/// still ending, each within 200 ms of its last watcher: a newcomer at the cap evicts a
/// held watch first, so they end often), and once the watches are answered no checker is
/// left.
#[test]
fn the_watch_registry_stays_bounded_under_many_names() {
    let co = server(&["--max-connections", &CAP.to_string()]);
    let to = co.addr();
    let version = empty_version(to);
    let stop = Arc::new(AtomicBool::new(false));
    let (threads, sent) = watch_flood(to, 8, 10, &version, 3_000, true, &stop);
    let mut most: f64 = 0.0;
    let started = Instant::now();
    while sent.load(Ordering::Relaxed) < 600 {
        let m = scrape(to);
        most = most.max(metric(&m, "writerctl_master_watched_projects").unwrap());
        assert!(started.elapsed() < Duration::from_secs(120), "the flood never sent 600 watches");
        thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    assert!(most <= 4.0 * POOL, "{most} projects watched at once, from a flood of distinct names");
    // Held watches end within their 3 s wait; a checker ends with its last watcher.
    let started = Instant::now();
    loop {
        let m = scrape(to);
        if metric(&m, "writerctl_master_watched_projects") == Some(0.0) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "checkers outlived their watchers: {m}");
        thread::sleep(Duration::from_millis(200));
    }
}

/// Idle flood threads from 127.0.1.1 ..= 127.0.1.`addresses`, one connection each that
/// never sends anything, reconnecting 2 s after the server drops it (the 1,500 addresses of
/// the issue each held one connection; they did not spin).
fn idle_flood(to: SocketAddr, addresses: u8, stop: &Arc<AtomicBool>) -> (Vec<thread::JoinHandle<()>>, Arc<AtomicU64>) {
    let opened = Arc::new(AtomicU64::new(0));
    let threads = (1..=addresses)
        .map(|a| {
            let (stop, opened) = (stop.clone(), opened.clone());
            let from = IpAddr::V4(Ipv4Addr::new(127, 0, 1, a));
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(mut c) = try_connect_from(from, to) {
                        opened.fetch_add(1, Ordering::Relaxed);
                        c.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
                        let mut buf = [0u8; 1024];
                        while !stop.load(Ordering::Relaxed) {
                            match c.read(&mut buf) {
                                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                                _ => break, // answered (503) or closed: evicted
                            }
                        }
                    }
                    for _ in 0..20 {
                        if !stop.load(Ordering::Relaxed) {
                            thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            })
        })
        .collect();
    (threads, opened)
}

/// Issue 39 point 3, the 1,500-address flood scaled down: 120 addresses with one idle
/// connection each keep a cap of 64 full (each evicted one reconnects and evicts another),
/// while a host (127.0.0.1) runs 4 clients on kept-alive connections, each a request
/// every 100 ms: two read `master status` (no credential: idle between answers), two
/// heartbeat with their session token (proven). On main the host, holding the most
/// connections, lost its idle ones to the flood; now the flood only evicts its own
/// connections (the oldest waiters, or unauthenticated where the host's are proven), and
/// every one of the host's requests is answered on its one connection.
#[test]
fn a_distributed_idle_flood_does_not_evict_a_host_with_many_clients() {
    let co = server(&["--max-connections", &CAP.to_string()]);
    let to = co.addr();
    let ctls = [co.reg("alice"), co.reg("bob")];
    let stop = Arc::new(AtomicBool::new(false));
    let (flood, opened) = idle_flood(to, 120, &stop);
    let started = Instant::now();
    while opened.load(Ordering::Relaxed) < 180 {
        assert!(started.elapsed() < Duration::from_secs(60), "the flood never reached the cap");
        thread::sleep(Duration::from_millis(50));
    }
    let failures = Arc::new(Mutex::new(Vec::new()));
    let mut host = Vec::new();
    for i in 0..4 {
        let (failures, ctl) = (failures.clone(), ctls[i % 2].clone());
        host.push(thread::spawn(move || {
            let mut c = try_connect_from(IpAddr::V4(Ipv4Addr::LOCALHOST), to).unwrap();
            c.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
            for n in 0..40 {
                let req = if i < 2 {
                    format!("GET /v1/projects/{PROJECT}/master HTTP/1.1\r\nhost: x\r\n\r\n")
                } else {
                    format!(
                        "POST /v1/projects/{PROJECT}/sessions/{}/heartbeat HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{{}}",
                        ctl.sid,
                        ctl.token.trim()
                    )
                };
                let answer = c.write_all(req.as_bytes()).map_err(|e| e.to_string()).and_then(|()| read_answer(&mut c, None));
                match answer {
                    Ok((200, _)) => {}
                    other => {
                        failures.lock().unwrap().push(format!("client {i}, request {n}: {other:?}"));
                        return;
                    }
                }
                thread::sleep(Duration::from_millis(100));
            }
        }));
    }
    for h in host {
        h.join().unwrap();
    }
    let m = scrape(to);
    stop.store(true, Ordering::Relaxed);
    for t in flood {
        t.join().unwrap();
    }
    let failures = failures.lock().unwrap();
    assert!(failures.is_empty(), "the host's clients were cut off: {failures:#?}");
    assert!(metric(&m, "writerctl_connections_evicted_total").unwrap() >= 1.0, "the flood evicted nothing: {m}");
}

/// Issue 39 point 3, TLS: a handshake in progress (its client hello sent, the server's
/// answer read, the client's last flight not yet sent) is evicted only after the waiting
/// connections of every source. Here 16 idle connections from other addresses (plain TCP to
/// the TLS port, sending nothing) keep a cap of 8 full, each evicted one reconnecting: the
/// flood evicts its own connections while the handshake stays open. On main handshakes
/// counted as waiting, and this one, the oldest, was the first victim.
#[test]
fn a_tls_handshake_in_progress_is_not_the_first_victim() {
    use rcgen::{CertificateParams, KeyPair};
    let co = crate::master::Co::http(|home, store| {
        let params = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let (cert_file, key_file) = (home.join("cert.pem"), home.join("key.pem"));
        std::fs::write(&cert_file, cert.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        crate::serve::Deployment::sqlite(home, store).server_args(&[
            "--max-connections",
            "8",
            "--tls-cert",
            cert_file.to_str().unwrap(),
            "--tls-key",
            key_file.to_str().unwrap(),
        ])
    });
    let to: SocketAddr = co.url().strip_prefix("https://").unwrap().parse().unwrap();
    // The client hello of a real TLS client (it never gets to verify anything).
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let mut client = rustls::ClientConnection::new(Arc::new(config), "localhost".try_into().unwrap()).unwrap();
    let mut hello = Vec::new();
    client.write_tls(&mut hello).unwrap();
    let started = Instant::now();
    let mut handshake = try_connect_from(IpAddr::V4(Ipv4Addr::LOCALHOST), to).unwrap();
    handshake.write_all(&hello).unwrap();
    // The server's flight (ServerHello ...) arrives: it has read the hello and now waits.
    handshake.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 16 * 1024];
    assert!(handshake.read(&mut buf).unwrap() > 0, "the server did not answer the client hello");
    let stop = Arc::new(AtomicBool::new(false));
    let evicted = Arc::new(AtomicU64::new(0));
    let flood: Vec<_> = (1..=16u8)
        .map(|a| {
            let (stop, evicted) = (stop.clone(), evicted.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut c) = try_connect_from(IpAddr::V4(Ipv4Addr::new(127, 0, 3, a)), to) else {
                        thread::sleep(Duration::from_millis(50));
                        continue;
                    };
                    c.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
                    let mut b = [0u8; 64];
                    while !stop.load(Ordering::Relaxed) {
                        match c.read(&mut b) {
                            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                            _ => {
                                evicted.fetch_add(1, Ordering::Relaxed);
                                break;
                            }
                        }
                    }
                    thread::sleep(Duration::from_millis(50));
                }
            })
        })
        .collect();
    while evicted.load(Ordering::Relaxed) < 20 {
        assert!(started.elapsed() < Duration::from_secs(60), "the flood was never evicted");
        thread::sleep(Duration::from_millis(20));
    }
    // Still open: a read finds nothing to read yet (not an end of stream or a reset).
    handshake.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let open =
        matches!(handshake.read(&mut buf), Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut));
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for t in flood {
        t.join().unwrap();
    }
    // The handshake's own deadline (5 s) is not what this checks: the flood must have
    // evicted its 20 connections before it.
    assert!(elapsed < Duration::from_millis(4500), "inconclusive: the flood took {elapsed:?} on this machine");
    assert!(open, "the handshake in progress was cut while the flood's idle connections were there");
}

/// Issue 39 points 2 and 7: wrong-password `master claim`s from many addresses, queued for
/// their source's slot or an argon2 permit, or held back for the operator id's back-off,
/// used to hold their connections as busy (never evicted): 48 addresses x 2 more than fill
/// a cap of 64, and `/livez` and a heartbeat were refused. Now a queued or held-back claim
/// is evictable like an unauthenticated long-poll, so the probes and the heartbeat are
/// served; the evicted claims are answered `coordinator_unavailable` or their refusal.
#[test]
fn queued_wrong_password_claims_cannot_take_the_slots() {
    let co = server(&["--max-connections", &CAP.to_string()]);
    let to = co.addr();
    let alice = co.reg("alice");
    let stop = Arc::new(AtomicBool::new(false));
    let answers: Arc<Mutex<Vec<u16>>> = Arc::default();
    let body = r#"{"to":"alice","expect_epoch":0,"operator":"nobody","password":"wrong"}"#;
    let mut threads = Vec::new();
    for a in 1..=48u8 {
        for _ in 0..2 {
            let (stop, answers) = (stop.clone(), answers.clone());
            let from = IpAddr::V4(Ipv4Addr::new(127, 0, 3, a));
            threads.push(thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut c) = try_connect_from(from, to) else {
                        thread::sleep(Duration::from_millis(100));
                        continue;
                    };
                    c.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
                    let req = format!(
                        "POST /v1/projects/{PROJECT}/master/claim HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if c.write_all(req.as_bytes()).is_ok()
                        && let Ok((status, _)) = read_answer(&mut c, Some(&stop))
                    {
                        answers.lock().unwrap().push(status);
                    }
                }
            }));
        }
    }
    // Wait until the flood holds the cap (connections open, counted by the gate).
    let started = Instant::now();
    while metric(&scrape(to), "writerctl_connections_open").unwrap_or(0.0) < (CAP - 4) as f64 {
        assert!(started.elapsed() < Duration::from_secs(60), "the flood never reached the cap");
        thread::sleep(Duration::from_millis(100));
    }
    let mut probes = Vec::new();
    for _ in 0..5 {
        probes.push(http_get(&format!("http://{to}/livez")));
        thread::sleep(Duration::from_millis(100));
    }
    let beat = co.heartbeat(&alice, &alice.token_file);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    for (status, _, body) in &probes {
        assert_eq!(*status, 200, "/livez during the claim flood: {body}");
    }
    ok_doc(&beat);
    let answers = answers.lock().unwrap();
    assert!(answers.iter().all(|s| [401, 503].contains(s)), "{answers:?}");
}
