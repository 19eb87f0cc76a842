//! Abuse bench (issue 28 point 6): each attack of issue 28 run for a fixed time against a
//! live `writerctl coordinator serve` on loopback, on the embedded SQLite store and on
//! Redis + Postgres, while a legitimate client hands the master role back and forth and a
//! prober asks `/livez` and `/readyz` the way a kubelet does.
//!
//! Attacks (ABUSE_ATTACKS, comma-separated; default all):
//!
//! * `slow_body`: request heads with `Content-Length: 60000`, then one body byte every 2 s,
//!   on ABUSE_CONNECTIONS connections (default 1100, past the default cap of 1024); a
//!   connection the server closes or refuses is reopened after 250 ms.
//! * `idle`: the same number of connections that send nothing, reopened 250 ms after the
//!   server closes them (the header timeout) or refuses them (the cap).
//! * `replay`: 16 connections repeating one `session register` request id (same body, same
//!   `Idempotency-Key`) whose identity was rotated after it registered; answers that still
//!   carry a token are counted.
//! * `refusals`: 16 connections sending requests that are refused before authentication
//!   succeeds (a wrong seat token on `claim take`, a wrong session token on heartbeat and
//!   handoff, a wrong admin token on `operator add` and `audit`). On Redis + Postgres it
//!   runs a second time with Postgres cut off (the bench sits between the server and
//!   Postgres as a TCP relay and drops it), against a baseline with Postgres cut off too.
//! * `argon2`: ABUSE_SOURCES source addresses (default 450: 127.0.0.2 onwards; loopback
//!   takes any 127/8 source), 2 connections each, sending `master claim` with wrong
//!   passwords, alternately for the real operator's id and for ids nobody added.
//! * `seat_flood`: one enrolled seat with a valid token, 8 connections each taking, touching
//!   and releasing its own task as fast as it is answered, each write with a fresh request id.
//!
//! Every attack but `argon2` comes from 127.0.0.1, like the legitimate client and the prober.
//! The legitimate client does one `master handoff` at a time over a fresh connection (as
//! the CLI does), retrying a failed one every 250 ms until it succeeds; its latency is from
//! the first attempt to the success (or to the end of the window). An operator does one
//! correct `master claim` every 2 s on its own project (shown on the argon2 row). The
//! prober asks `/livez` then `/readyz` every 250 ms on a fresh connection with a 1 s
//! deadline (and on `--probe-listen` when the server has that flag).
//!
//! Per store: one server, a no-attack baseline of ABUSE_SECONDS, then each attack for
//! ABUSE_SECONDS. Store growth over an attack's window: the SQLite file and WAL, or the
//! namespace's Redis keys (with Redis `used_memory` and the longest list) and Postgres
//! relations; audit rows from `/metrics`. A markdown table ends the run; a row that misses
//! issue 28's targets (every probe 200 within 1 s; handoff p99 under 5x the baseline's) is
//! flagged. The bench always exits 0: it is a measurement.
//!
//! Run: `cargo bench --bench abuse`. Env: ABUSE_SECONDS (default 60), ABUSE_STORES
//! (`sqlite,redis`), ABUSE_ATTACKS, ABUSE_CONNECTIONS, ABUSE_SOURCES, WRITERCTL_BIN (the
//! server binary; default the one Cargo built), WRITERCTL_TEST_REDIS_URL /
//! WRITERCTL_TEST_POSTGRES_URL. See docs/src/reference/abuse-bench.md.
#![allow(clippy::disallowed_methods)]

#[path = "support/live.rs"]
mod live;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use writerctl::claim::api::CoordinatorApi;
use writerctl::claim::engine::{Credentials, MasterRequest, Registered};
use writerctl::claim::masters::ControllerKey;
use writerctl::claim::requests::RequestId;
use writerctl::claim::secret::Secret;
use writerctl::coordinator::client::HttpCoordinator;

use live::{Backing, StoreSizes};

/// Issue 28's targets: every probe answered 200 within this...
const PROBE_DEADLINE: Duration = Duration::from_secs(1);
/// ...and a handoff's p99 under this many times its no-attack p99.
const P99_RATIO_TARGET: f64 = 5.0;
const PROBE_EVERY: Duration = Duration::from_millis(250);
const LEGIT_RETRY: Duration = Duration::from_millis(250);
const OPERATOR_EVERY: Duration = Duration::from_secs(2);
/// How often the legitimate client means to hand off (a handoff takes ~10 ms unloaded).
const HANDOFF_EVERY: Duration = Duration::from_millis(50);
const OPERATOR: &str = "ops";
const PASSWORD: &str = "correct horse battery staple";
/// Connections of the single-source request floods (replay, refusals).
const FLOOD_CONNECTIONS: usize = 16;
const SEAT_CONNECTIONS: usize = 8;
/// `master claim` connections per source address in the argon2 attack.
const PER_SOURCE: usize = 2;
/// A slow body's declared length: under the server's 64 KiB body limit, so it is read.
const SLOW_LENGTH: usize = 60_000;
const SLOW_BYTE_EVERY: Duration = Duration::from_secs(2);
const RECONNECT_AFTER: Duration = Duration::from_millis(250);
/// Between two of an attack's first connects (see [`Tally::stagger`]).
const STAGGER: Duration = Duration::from_millis(2);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Attack {
    SlowBody,
    Idle,
    Replay,
    Refusals,
    Argon2,
    SeatFlood,
}

impl Attack {
    const ALL: [Attack; 6] =
        [Attack::SlowBody, Attack::Idle, Attack::Replay, Attack::Refusals, Attack::Argon2, Attack::SeatFlood];

    fn name(self) -> &'static str {
        match self {
            Attack::SlowBody => "slow_body",
            Attack::Idle => "idle",
            Attack::Replay => "replay",
            Attack::Refusals => "refusals",
            Attack::Argon2 => "argon2",
            Attack::SeatFlood => "seat_flood",
        }
    }
}

struct Config {
    seconds: f64,
    connections: usize,
    sources: usize,
    attacks: Vec<Attack>,
}

fn env_num(name: &str, default: f64) -> f64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn window(cfg: &Config) -> Duration {
    Duration::from_secs_f64(cfg.seconds)
}

// ---------------------------------------------------------------------------------------
// the deployment under test
// ---------------------------------------------------------------------------------------

/// A TCP relay between the server and Postgres that the bench can cut (connections dropped,
/// new ones accepted and closed at once) and restore: a Postgres outage on demand.
struct PgRelay {
    addr: SocketAddr,
    up: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl PgRelay {
    fn start(upstream: SocketAddr) -> PgRelay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(AtomicBool::new(true));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (up2, open2) = (up.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if !up2.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream) else { continue };
                let mut o = open2.lock().unwrap();
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server.try_clone().unwrap(), client.try_clone().unwrap()),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
                o.extend([client, server]);
            }
        });
        PgRelay { addr, up, open }
    }

    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

/// `url` with its host:port replaced by `addr`, and the host:port it named.
fn via_relay(url: &str, addr: SocketAddr) -> (String, SocketAddr) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let (user, hostport) = authority.rsplit_once('@').map_or(("", authority), |(u, h)| (u, h));
    let hostport = if hostport.contains(':') { hostport.to_string() } else { format!("{hostport}:5432") };
    let upstream = std::net::ToSocketAddrs::to_socket_addrs(&hostport).unwrap().next().unwrap();
    let at = if user.is_empty() { String::new() } else { format!("{user}@") };
    (format!("{scheme}://{at}{addr}{tail}"), upstream)
}

/// One server over one store, with what the attacks and the legitimate clients need.
struct Deployment {
    store: &'static str,
    url: String,
    addr: SocketAddr,
    probe_addr: Option<SocketAddr>,
    backing: Backing,
    relay: Option<PgRelay>,
    admin: Secret,
    child: Option<std::process::Child>,
    _dir: tempfile::TempDir,
}

impl Deployment {
    fn start(store: &'static str, backing: Backing, mut args: Vec<String>, relay: Option<PgRelay>) -> Deployment {
        let dir = tempfile::tempdir().unwrap();
        let (admin_file, admin) = live::admin_token_file(dir.path());
        args.extend(["--admin-token-file".into(), admin_file.display().to_string()]);
        // The legitimate controllers never heartbeat; their rows must stay fresh.
        args.extend(["--freshness-seconds".into(), "86400".into()]);
        let probe_addr = live::serve_help().contains("--probe-listen").then(|| {
            let a = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
            args.extend(["--probe-listen".into(), a.to_string()]);
            a
        });
        let (child, url) = live::start_server(&args);
        let addr = url.strip_prefix("http://").unwrap().parse().unwrap();
        Deployment {
            store,
            url,
            addr,
            probe_addr,
            backing,
            relay,
            admin: Secret::new(admin),
            child: Some(child),
            _dir: dir,
        }
    }

    fn admin_client(&self) -> HttpCoordinator {
        HttpCoordinator::new(&self.url, None, Some(self.admin.clone())).unwrap()
    }

    /// An enrolled identity in `project`, registered (with `id` as its request id when given).
    fn seat(&self, project: &str, identity: &str, id: Option<RequestId>) -> (Registered, Secret) {
        let key = self.admin_client().enroll_identity(project, identity).unwrap().key;
        let c = HttpCoordinator::new(&self.url, None, None).unwrap().with_request(id);
        let row = ControllerKey { identity: identity.into(), surface: "abuse".into(), machine_id: "bench".into() };
        let r = c
            .register(project, &row, Credentials { identity_key: Some(&key), ..Credentials::default() })
            .unwrap_or_else(|e| panic!("register {project}/{identity}: {e}"));
        (r, key)
    }

    /// Waits (up to 60 s) until `/readyz` answers 200 and the Postgres queue is empty.
    fn settle(&self) -> Duration {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            let ok = ureq::get(&format!("{}/readyz", self.url))
                .config()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(2)))
                .build()
                .call()
                .ok()
                .filter(|r| r.status() == 200)
                .and_then(|r| r.into_body().read_json::<serde_json::Value>().ok())
                .is_some_and(|v| v["queue_depth"].as_u64().unwrap_or(0) == 0);
            if ok {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        t.elapsed()
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot { sizes: self.backing.sizes(), metrics: live::metrics(&self.url) }
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        if let Some(r) = &self.relay {
            r.restore();
        }
        if let Some(c) = self.child.take() {
            live::stop_server(c);
        }
        if let Backing::RedisPg { redis, postgres, ns } = &self.backing {
            live::drop_namespace(redis, postgres, ns);
        }
    }
}

struct Snapshot {
    sizes: StoreSizes,
    metrics: BTreeMap<String, f64>,
}

impl Snapshot {
    fn metric(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).copied()
    }
}

// ---------------------------------------------------------------------------------------
// the legitimate clients and the prober
// ---------------------------------------------------------------------------------------

/// Two enrolled controllers of one project handing the master role back and forth.
struct Pair {
    project: String,
    a: Registered,
    b: Registered,
}

impl Pair {
    fn new(d: &Deployment, project: &str, a: &str, b: &str) -> Pair {
        Pair { project: project.into(), a: d.seat(project, a, None).0, b: d.seat(project, b, None).0 }
    }

    /// The current master, the other row, and the epoch (None when the server does not answer).
    fn state(&self, c: &HttpCoordinator) -> Option<(&Registered, &Registered, u64)> {
        let st = c.status(&self.project).ok()?;
        let a_master = st.slot.master.as_ref().is_some_and(|m| m.session_id == self.a.controller.session_id);
        Some(if a_master { (&self.a, &self.b, st.slot.epoch) } else { (&self.b, &self.a, st.slot.epoch) })
    }
}

fn request(project: &str, to: &Registered, epoch: u64) -> MasterRequest {
    MasterRequest {
        project: project.into(),
        to_identity: to.controller.identity.clone(),
        to_session: Some(to.controller.session_id.clone()),
        expect_epoch: epoch,
    }
}

#[derive(Default)]
struct Latencies {
    lat: Vec<Duration>,
    failures: u64,
}

/// Runs `op` (true on success) until `stop`, meant once every `every`, retrying a failure
/// after [`LEGIT_RETRY`]. Each latency runs from when the call was due to its success (or to
/// `stop`), and a call that came due while an earlier one was still running counts from
/// when it was due to when that one ended (a serial client could not start it sooner): a
/// client stuck for 8 s yields 8 s worth of slow samples, not one (no coordinated omission).
fn timed_loop(stop: &AtomicBool, every: Duration, mut op: impl FnMut() -> bool) -> Latencies {
    let mut out = Latencies::default();
    let t0 = Instant::now();
    let due = |k: u32| t0 + every * k;
    let mut k = 0u32;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(due(k).saturating_duration_since(Instant::now()));
        loop {
            if op() {
                break;
            }
            out.failures += 1;
            if stop.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(LEGIT_RETRY);
        }
        let done = Instant::now();
        out.lat.push(done - due(k));
        k += 1;
        while due(k) < done {
            out.lat.push(done - due(k));
            k += 1;
        }
    }
    out
}

/// The legitimate client: a handoff every [`HANDOFF_EVERY`], each on a fresh connection (a
/// new client per call, as each CLI command is), one at a time.
fn handoffs(url: &str, pair: &Pair, stop: &AtomicBool) -> Latencies {
    timed_loop(stop, HANDOFF_EVERY, || {
        let Ok(c) = HttpCoordinator::new(url, None, None) else { return false };
        let Some((from, to, epoch)) = pair.state(&c) else { return false };
        let c = HttpCoordinator::new(url, None, None).unwrap();
        c.handoff(&request(&pair.project, to, epoch), &from.controller.session_id, &from.token).is_ok()
    })
}

/// The operator: a correct `master claim` every [`OPERATOR_EVERY`] on its own project.
fn operator_claims(url: &str, pair: &Pair, stop: &AtomicBool) -> Latencies {
    let password = Secret::new(PASSWORD.into());
    timed_loop(stop, OPERATOR_EVERY, || {
        let c = HttpCoordinator::new(url, None, None).unwrap();
        let Some((_, to, epoch)) = pair.state(&c) else { return false };
        let c = HttpCoordinator::new(url, None, None).unwrap();
        c.claim(&request(&pair.project, to, epoch), OPERATOR, &password).is_ok()
    })
}

#[derive(Default, Clone)]
struct Probes {
    ok: u64,
    not_200: u64,
    no_answer: u64,
    worst: Duration,
}

impl Probes {
    fn total(&self) -> u64 {
        self.ok + self.not_200 + self.no_answer
    }
    fn cell(&self) -> String {
        format!("{}/{}, {:.0}", self.ok, self.total(), self.worst.as_secs_f64() * 1e3)
    }
}

/// One GET on a fresh connection within [`PROBE_DEADLINE`]: Some(status), or None.
fn probe_once(addr: SocketAddr, path: &str) -> Option<u16> {
    let deadline = Instant::now() + PROBE_DEADLINE;
    let left = || deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero());
    let mut s = TcpStream::connect_timeout(&addr, PROBE_DEADLINE).ok()?;
    s.set_write_timeout(left()).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n").as_bytes()).ok()?;
    let mut head = Vec::new();
    let mut buf = [0u8; 512];
    while head.len() < 12 {
        s.set_read_timeout(left()).ok()?;
        let n = s.read(&mut buf).ok().filter(|n| *n > 0)?;
        head.extend_from_slice(&buf[..n]);
    }
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// `/livez` then `/readyz` on `addr` every [`PROBE_EVERY`] until `stop`.
fn prober(addr: SocketAddr, stop: &AtomicBool) -> Probes {
    let mut p = Probes::default();
    while !stop.load(Ordering::SeqCst) {
        let round = Instant::now();
        for path in ["/livez", "/readyz"] {
            let t = Instant::now();
            match probe_once(addr, path) {
                Some(200) => p.ok += 1,
                Some(_) => p.not_200 += 1,
                None => p.no_answer += 1,
            }
            p.worst = p.worst.max(t.elapsed());
        }
        std::thread::sleep(PROBE_EVERY.saturating_sub(round.elapsed()));
    }
    p
}

// ---------------------------------------------------------------------------------------
// the attacks: raw HTTP/1.1 on tokio sockets
// ---------------------------------------------------------------------------------------

/// What an attack's connections saw.
#[derive(Default)]
struct Tally {
    connects: AtomicU64,
    connect_errors: AtomicU64,
    open: AtomicU64,
    max_open: AtomicU64,
    ok: AtomicU64,
    refused_503: AtomicU64,
    other: AtomicU64,
    closed: AtomicU64,
    /// Replay answers that carried a session token.
    tokens: AtomicU64,
    /// Connections launched so far (each waits its turn: see [`Tally::stagger`]).
    launched: AtomicU64,
}

impl Tally {
    fn answer(&self, status: u16) {
        let c = match status {
            200..=299 => &self.ok,
            503 => &self.refused_503,
            _ => &self.other,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
    /// Waits [`STAGGER`] per connection launched before this one: a thousand connects at
    /// once overflow the server's accept queue (the kernel then drops the handshake's last
    /// ACK, and the attacker holds connections the server never sees), so the attack would
    /// measure the kernel's backlog instead of the server.
    async fn stagger(&self) {
        let k = self.launched.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(STAGGER * k as u32).await;
    }

    fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

/// A connection to `to` from `from` (127.0.0.1 when None).
async fn connect(from: Option<IpAddr>, to: SocketAddr, t: &Tally) -> Option<tokio::net::TcpStream> {
    let sock = tokio::net::TcpSocket::new_v4().ok()?;
    if let Some(ip) = from {
        sock.bind(SocketAddr::new(ip, 0)).ok()?;
    }
    match sock.connect(to).await {
        Ok(s) => {
            t.connects.fetch_add(1, Ordering::Relaxed);
            Some(s)
        }
        Err(_) => {
            t.connect_errors.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(RECONNECT_AFTER).await;
            None
        }
    }
}

/// A request's bytes: `method path` with a JSON body and extra headers.
fn http_request(method: &str, path: &str, headers: &[(&str, String)], body: &serde_json::Value) -> Vec<u8> {
    let body = body.to_string();
    let mut r = format!("{method} {path} HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n");
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    r.into_bytes()
}

/// One request on a kept-alive connection: the status and body, or None when the
/// connection broke (the caller reconnects).
async fn exchange(conn: &mut BufReader<tokio::net::TcpStream>, req: &[u8]) -> Option<(u16, Vec<u8>, bool)> {
    conn.get_mut().write_all(req).await.ok()?;
    let mut line = String::new();
    conn.read_line(&mut line).await.ok().filter(|n| *n > 0)?;
    let status: u16 = line.get(9..12)?.parse().ok()?;
    let (mut length, mut chunked, mut close) = (None, false, false);
    loop {
        line.clear();
        conn.read_line(&mut line).await.ok().filter(|n| *n > 0)?;
        let l = line.trim_end().to_ascii_lowercase();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        }
        chunked |= l.starts_with("transfer-encoding:") && l.contains("chunked");
        close |= l.starts_with("connection:") && l.contains("close");
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            conn.read_line(&mut line).await.ok().filter(|n| *n > 0)?;
            let n = usize::from_str_radix(line.trim(), 16).ok()?;
            let mut chunk = vec![0u8; n + 2];
            conn.read_exact(&mut chunk).await.ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        conn.read_exact(&mut body).await.ok()?;
    } else {
        conn.read_to_end(&mut body).await.ok()?;
        close = true;
    }
    Some((status, body, close))
}

/// A request flood: `conns` connections from `from`, each sending `next(i, n)` again and
/// again on one kept-alive connection (a new one when it breaks or is closed).
fn flood(
    rt: &tokio::runtime::Runtime,
    to: SocketAddr,
    from: Option<IpAddr>,
    conns: usize,
    tally: &Arc<Tally>,
    next: Arc<dyn Fn(usize, u64) -> Vec<u8> + Send + Sync>,
) {
    for i in 0..conns {
        let (tally, next) = (tally.clone(), next.clone());
        rt.spawn(async move {
            tally.stagger().await;
            let mut n = 0u64;
            loop {
                let Some(s) = connect(from, to, &tally).await else { continue };
                let mut conn = BufReader::new(s);
                loop {
                    n += 1;
                    match exchange(&mut conn, &next(i, n)).await {
                        Some((status, body, close)) => {
                            tally.answer(status);
                            let doc = serde_json::from_slice::<serde_json::Value>(&body).unwrap_or_default();
                            if (200..300).contains(&status) && doc["token"].is_string() {
                                tally.tokens.fetch_add(1, Ordering::Relaxed);
                            }
                            if close {
                                break;
                            }
                        }
                        None => {
                            tally.closed.fetch_add(1, Ordering::Relaxed);
                            break;
                        }
                    }
                }
            }
        });
    }
}

/// Connections that hold a slot: `trickle` sends a request head with a large
/// Content-Length and then a body byte every [`SLOW_BYTE_EVERY`]; otherwise nothing is
/// sent. Reopened [`RECONNECT_AFTER`] after the server answers or closes.
fn hold(rt: &tokio::runtime::Runtime, to: SocketAddr, conns: usize, trickle: bool, tally: &Arc<Tally>) {
    for _ in 0..conns {
        let tally = tally.clone();
        rt.spawn(async move {
            tally.stagger().await;
            loop {
                let Some(mut s) = connect(None, to, &tally).await else { continue };
                let open = tally.open.fetch_add(1, Ordering::Relaxed) + 1;
                tally.max_open.fetch_max(open, Ordering::Relaxed);
                if trickle {
                    let head = format!(
                        "POST /v1/projects/slow/sessions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\ncontent-length: {SLOW_LENGTH}\r\n\r\n"
                    );
                    let _ = s.write_all(head.as_bytes()).await;
                }
                let mut buf = [0u8; 256];
                let mut tick = tokio::time::interval(SLOW_BYTE_EVERY);
                tick.tick().await;
                let answered = loop {
                    tokio::select! {
                        r = s.read(&mut buf) => break matches!(r, Ok(n) if n > 0).then(|| buf.get(9..12).and_then(|b| std::str::from_utf8(b).ok()?.parse::<u16>().ok())).flatten(),
                        _ = tick.tick(), if trickle => {
                            if s.write_all(b" ").await.is_err() {
                                break None;
                            }
                        }
                    }
                };
                tally.open.fetch_sub(1, Ordering::Relaxed);
                match answered {
                    Some(status) => tally.answer(status),
                    None => {
                        tally.closed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                drop(s);
                tokio::time::sleep(RECONNECT_AFTER).await;
            }
        });
    }
}

/// A project name of its own for one attack window (an attack may run twice on a server).
fn fresh(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

/// Sets up and starts `attack` on `rt`; returns a function that describes what it did.
fn launch(
    attack: Attack,
    d: &Deployment,
    cfg: &Config,
    rt: &tokio::runtime::Runtime,
    tally: &Arc<Tally>,
) -> Box<dyn Fn() -> String> {
    let to = d.addr;
    let t = tally.clone();
    let answers = move || {
        format!(
            "{} answers 2xx, {} 503, {} other; {} connects",
            Tally::get(&t.ok),
            Tally::get(&t.refused_503),
            Tally::get(&t.other),
            Tally::get(&t.connects)
        )
    };
    match attack {
        Attack::SlowBody | Attack::Idle => {
            hold(rt, to, cfg.connections, attack == Attack::SlowBody, tally);
            let t = tally.clone();
            Box::new(move || {
                format!(
                    "{} connections held at most; {} refused with 503, {} closed by the server",
                    Tally::get(&t.max_open),
                    Tally::get(&t.refused_503),
                    Tally::get(&t.closed)
                )
            })
        }
        Attack::Replay => {
            // A registration whose request id the attacker repeats after the identity was
            // rotated (issue 28 point 2: the old id still yielded a live token).
            let project = fresh("abuse-replay");
            let id = RequestId::generate();
            let (r, key) = d.seat(&project, "victim", Some(id.clone()));
            d.admin_client().rotate_identity(&project, "victim").unwrap();
            let body = serde_json::json!({"identity": "victim", "surface": "abuse", "machine_id": "bench",
                                          "identity_key": key.expose()});
            let req = http_request(
                "POST",
                &format!("/v1/projects/{project}/sessions"),
                &[("idempotency-key", id.as_str().to_string())],
                &body,
            );
            drop(r);
            flood(rt, to, None, FLOOD_CONNECTIONS, tally, Arc::new(move |_, _| req.clone()));
            let t = tally.clone();
            Box::new(move || format!("{}; {} replays returned a session token", answers(), Tally::get(&t.tokens)))
        }
        Attack::Refusals => {
            let project = fresh("abuse-refusals");
            let (r, _) = d.seat(&project, "seat", None);
            d.admin_client().create_channel(&project, "work", "seat", None, None).unwrap();
            let sid = r.controller.session_id.clone();
            let wrong = |_: ()| vec![("authorization", format!("Bearer wrong-{}", uuid::Uuid::new_v4().simple()))];
            let reqs: Vec<(String, String, serde_json::Value)> = vec![
                (
                    "POST".into(),
                    format!("/v1/projects/{project}/channels/work/claims/t/take"),
                    serde_json::json!({"seat": "seat"}),
                ),
                ("POST".into(), format!("/v1/projects/{project}/sessions/{sid}/heartbeat"), serde_json::json!({})),
                (
                    "POST".into(),
                    format!("/v1/projects/{project}/master/handoff"),
                    serde_json::json!({"session_id": sid, "to": "seat", "to_session": null, "expect_epoch": 1}),
                ),
                ("POST".into(), "/v1/operators".into(), serde_json::json!({"operator_id": "x", "password": "y"})),
                ("GET".into(), "/v1/audit".into(), serde_json::json!({})),
            ];
            flood(
                rt,
                to,
                None,
                FLOOD_CONNECTIONS,
                tally,
                Arc::new(move |i, n| {
                    let (m, p, b) = &reqs[(i + n as usize) % reqs.len()];
                    http_request(m, p, &wrong(()), b)
                }),
            );
            Box::new(answers)
        }
        Attack::Argon2 => {
            let base = u32::from(Ipv4Addr::new(127, 0, 0, 2));
            for s in 0..cfg.sources {
                let from = IpAddr::V4(Ipv4Addr::from(base + s as u32));
                flood(
                    rt,
                    to,
                    Some(from),
                    PER_SOURCE,
                    tally,
                    Arc::new(move |i, n| {
                        let operator = if n % 2 == 0 { OPERATOR.to_string() } else { format!("ghost-{s}-{i}-{n}") };
                        let body = serde_json::json!({"to": "a", "to_session": null, "expect_epoch": 0,
                                                      "operator": operator, "password": format!("guess-{n}")});
                        http_request("POST", "/v1/projects/abuse-oper/master/claim", &[], &body)
                    }),
                );
            }
            Box::new(answers)
        }
        Attack::SeatFlood => {
            let project = fresh("abuse-seat");
            let (r, _) = d.seat(&project, "seat", None);
            d.admin_client().create_channel(&project, "work", "seat", None, None).unwrap();
            let token = r.token.expose().to_string();
            flood(
                rt,
                to,
                None,
                SEAT_CONNECTIONS,
                tally,
                Arc::new(move |i, n| {
                    let verb = ["take", "touch", "release"][(n % 3) as usize];
                    let body = match verb {
                        "take" => serde_json::json!({"seat": "seat", "ttl_minutes": 60, "next_step": "flood"}),
                        _ => serde_json::json!({"seat": "seat"}),
                    };
                    let headers = [
                        ("authorization", format!("Bearer {token}")),
                        ("idempotency-key", uuid::Uuid::new_v4().to_string()),
                    ];
                    http_request(
                        "POST",
                        &format!("/v1/projects/{project}/channels/work/claims/t{i}/{verb}"),
                        &headers,
                        &body,
                    )
                }),
            );
            Box::new(answers)
        }
    }
}

// ---------------------------------------------------------------------------------------
// one window: legitimate clients, prober, maybe an attack
// ---------------------------------------------------------------------------------------

struct Window {
    handoff: Vec<Duration>,
    handoff_failures: u64,
    claim: Vec<Duration>,
    probes: Probes,
    probe_port: Option<Probes>,
    before: Snapshot,
    after: Snapshot,
    attack_note: String,
    /// Replay answers that carried a session token (issue 28 point 2: should be none).
    tokens: u64,
    /// From the attack's launch to the after-snapshot (what store growth is divided by).
    elapsed: Duration,
}

struct Clients {
    legit: Pair,
    oper: Pair,
}

fn run_window(d: &Deployment, clients: &Clients, cfg: &Config, attack: Option<Attack>) -> Window {
    let before = d.snapshot();
    let stop = AtomicBool::new(false);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let note = attack.map(|a| launch(a, d, cfg, &rt, &tally));
    if let Some(a) = attack {
        ramp_up(a, &tally, cfg);
    }
    let stop = &stop;
    let (legit, claims, probes, probe_port) = std::thread::scope(|s| {
        let legit = s.spawn(|| handoffs(&d.url, &clients.legit, stop));
        let claims = s.spawn(|| operator_claims(&d.url, &clients.oper, stop));
        let probes = s.spawn(|| prober(d.addr, stop));
        let probe_port = d.probe_addr.map(|a| s.spawn(move || prober(a, stop)));
        std::thread::sleep(window(cfg));
        stop.store(true, Ordering::SeqCst);
        (legit.join().unwrap(), claims.join().unwrap(), probes.join().unwrap(), probe_port.map(|p| p.join().unwrap()))
    });
    let attack_note = note.map(|n| n()).unwrap_or_default();
    // Every attacking socket closes with the runtime.
    rt.shutdown_background();
    let after = d.snapshot();
    let (mut handoff, mut claim) = (legit.lat, claims.lat);
    handoff.sort();
    claim.sort();
    Window {
        handoff,
        handoff_failures: legit.failures,
        claim,
        probes,
        probe_port,
        before,
        after,
        attack_note,
        tokens: Tally::get(&tally.tokens),
        elapsed: started.elapsed(),
    }
}

/// Lets an attack reach full strength before the window is measured: connection holders
/// until they hold as many connections as they open (or the server's cap, or no more are
/// let in), request floods for a second.
fn ramp_up(attack: Attack, tally: &Tally, cfg: &Config) {
    match attack {
        Attack::SlowBody | Attack::Idle => {
            // A server with a per-source cap never lets them all in: stop when the count
            // has not grown for 2 s.
            let full = cfg.connections.min(live::DEFAULT_MAX_CONNECTIONS) as u64;
            let (mut seen, mut grew) = (0, Instant::now());
            while Tally::get(&tally.max_open) < full && grew.elapsed() < Duration::from_secs(2) {
                if Tally::get(&tally.max_open) > seen {
                    (seen, grew) = (Tally::get(&tally.max_open), Instant::now());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        _ => std::thread::sleep(Duration::from_secs(1) + STAGGER * Tally::get(&tally.launched) as u32),
    }
}

// ---------------------------------------------------------------------------------------
// the report
// ---------------------------------------------------------------------------------------

fn mib(bytes: i64) -> String {
    format!("{:+.2} MiB", bytes as f64 / (1 << 20) as f64)
}

/// Store growth over a window, one line.
fn growth(w: &Window) -> String {
    let secs = w.elapsed.as_secs_f64();
    let (b, a) = (&w.before.sizes, &w.after.sizes);
    let d = |k: &str| match (w.before.metric(k), w.after.metric(k)) {
        (Some(x), Some(y)) => format!("{:+}", y - x),
        _ => "?".into(),
    };
    let bytes = a.bytes() - b.bytes();
    let mut s = format!("{} ({}/s)", mib(bytes), mib((bytes as f64 / secs) as i64));
    if a.redis_used > 0 {
        s.push_str(&format!(
            "; redis used {}, ns keys {:+}, pg {}",
            mib(a.redis_used as i64 - b.redis_used as i64),
            a.ns_keys as i64 - b.ns_keys as i64,
            mib(a.pg_total() - b.pg_total())
        ));
        if let Some((k, n)) = &a.longest {
            s.push_str(&format!(", longest {} {n}", k.split_once(':').map_or(k.as_str(), |(_, rest)| rest)));
        }
    }
    s.push_str(&format!(
        "; audit rows {}, history {}, attempts {}",
        d("writerctl_audit_rows"),
        d("writerctl_claim_history_steps"),
        d("writerctl_operator_attempt_rows")
    ));
    if let Some(q) = w.after.metric("writerctl_audit_retry_queue_depth").filter(|q| *q > 0.0) {
        s.push_str(&format!(", pg queue {q}"));
    }
    s
}

struct Row {
    attack: String,
    store: &'static str,
    base_p50: f64,
    base_p99: f64,
    p50: f64,
    p99: f64,
    probes: Probes,
    probe_port: Option<Probes>,
    growth: String,
    notes: String,
    tokens: u64,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.p99 / self.base_p99.max(1e-3)
    }

    fn missed(&self) -> Vec<&'static str> {
        let mut m = Vec::new();
        let probes_ok = |p: &Probes| p.ok == p.total() && p.worst <= PROBE_DEADLINE;
        if !probes_ok(&self.probes) || self.probe_port.as_ref().is_some_and(|p| !probes_ok(p)) {
            m.push("probes");
        }
        if self.ratio() >= P99_RATIO_TARGET {
            m.push("p99");
        }
        if self.tokens > 0 {
            m.push("replay token");
        }
        m
    }
}

fn row(attack: &str, store: &'static str, base: &Window, w: &Window) -> Row {
    let mut notes = w.attack_note.clone();
    if w.handoff_failures > 0 {
        notes.push_str(&format!("; handoff attempts failed {}", w.handoff_failures));
    }
    notes.push_str(&format!(
        "; correct master claim p50 {:.0}/{:.0} ms, max {:.0}/{:.0} ms",
        live::pct(&base.claim, 0.5),
        live::pct(&w.claim, 0.5),
        live::pct(&base.claim, 1.0),
        live::pct(&w.claim, 1.0)
    ));
    Row {
        attack: attack.into(),
        store,
        base_p50: live::pct(&base.handoff, 0.5),
        base_p99: live::pct(&base.handoff, 0.99),
        p50: live::pct(&w.handoff, 0.5),
        p99: live::pct(&w.handoff, 0.99),
        probes: w.probes.clone(),
        probe_port: w.probe_port.clone(),
        growth: growth(w),
        tokens: w.tokens,
        notes: notes.trim_start_matches("; ").to_string(),
    }
}

fn print_row(r: &Row) {
    let missed = r.missed();
    println!(
        "| {} | {} | {:.1} / {:.1} | {:.1} / {:.1} | {:.1}x | {}{} | {} | {} | {} |",
        r.attack,
        r.store,
        r.base_p50,
        r.p50,
        r.base_p99,
        r.p99,
        r.ratio(),
        r.probes.cell(),
        r.probe_port.as_ref().map_or(String::new(), |p| format!(" (probe port {})", p.cell())),
        r.growth,
        if missed.is_empty() { "met".to_string() } else { format!("**MISSED: {}**", missed.join(", ")) },
        r.notes
    );
}

fn print_table(rows: &[Row], cfg: &Config) {
    println!(
        "\nabuse bench: {} s per window, handoff latencies in ms (baseline / under attack), probes 200 within 1 s / sent, worst ms\n",
        cfg.seconds
    );
    println!(
        "| attack | store | legit p50 base/attack | p99 base/attack | ratio | probes ok/total, worst ms | store growth | targets | notes |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        print_row(r);
    }
}

// ---------------------------------------------------------------------------------------
// per store
// ---------------------------------------------------------------------------------------

fn bench_store(d: &Deployment, cfg: &Config, rows: &mut Vec<Row>) {
    let admin = d.admin_client();
    admin.add_operator(OPERATOR, &Secret::new(PASSWORD.into())).unwrap();
    let clients =
        Clients { legit: Pair::new(d, "abuse-legit", "alice", "bob"), oper: Pair::new(d, "abuse-oper", "a", "b") };
    println!("\n== {}: {} (probe port: {}) ==", d.store, d.url, d.probe_addr.map_or("none".into(), |a| a.to_string()));
    let base = run_window(d, &clients, cfg, None);
    println!(
        "baseline: {} handoffs, p50 {:.1} ms, p99 {:.1} ms; probes {}",
        base.handoff.len(),
        live::pct(&base.handoff, 0.5),
        live::pct(&base.handoff, 0.99),
        base.probes.cell()
    );
    let mut report = |name: &str, base: &Window, w: &Window| {
        let r = row(name, d.store, base, w);
        print_row(&r);
        rows.push(r);
    };
    for &attack in &cfg.attacks {
        let settled = d.settle();
        println!("-- {} (settled in {:.1} s)", attack.name(), settled.as_secs_f64());
        let w = run_window(d, &clients, cfg, Some(attack));
        report(attack.name(), &base, &w);
        if attack == Attack::Refusals
            && let Some(relay) = &d.relay
        {
            // The same flood while Postgres is unreachable: the retry queue in Redis grows.
            d.settle();
            relay.cut();
            let base_down = run_window(d, &clients, cfg, None);
            report("none (Postgres down)", &base, &base_down);
            let w = run_window(d, &clients, cfg, Some(attack));
            report("refusals (Postgres down)", &base_down, &w);
            relay.restore();
            let t = Instant::now();
            d.settle();
            println!("   Postgres back: queue drained in {:.1} s", t.elapsed().as_secs_f64());
        }
    }
}

/// Raises this process's open-file soft limit to the hard one (the slow-body attack holds
/// more than a thousand sockets).
fn raise_nofile() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut l = getrlimit(Resource::Nofile);
    l.current = l.maximum;
    let _ = setrlimit(Resource::Nofile, l);
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    raise_nofile();
    let wanted = std::env::var("ABUSE_ATTACKS").unwrap_or_default();
    let cfg = Config {
        seconds: env_num("ABUSE_SECONDS", 60.0),
        connections: env_num("ABUSE_CONNECTIONS", 1100.0) as usize,
        sources: env_num("ABUSE_SOURCES", 450.0) as usize,
        attacks: Attack::ALL
            .into_iter()
            .filter(|a| wanted.is_empty() || wanted.split(',').any(|w| w.trim() == a.name()))
            .collect(),
    };
    let stores = std::env::var("ABUSE_STORES").unwrap_or_else(|_| "sqlite,redis".into());
    println!(
        "abuse bench: server {}, {} s per window, attacks {:?}, stores {stores}",
        live::writerctl_bin().display(),
        cfg.seconds,
        cfg.attacks.iter().map(|a| a.name()).collect::<Vec<_>>()
    );
    let mut rows = Vec::new();
    for store in stores.split(',').map(str::trim) {
        match store {
            "sqlite" => {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("abuse.sqlite");
                let args = vec!["--store".into(), format!("sqlite:{}", path.display())];
                let d = Deployment::start("sqlite", Backing::Sqlite(path), args, None);
                bench_store(&d, &cfg, &mut rows);
            }
            "redis" | "redis_pg" => {
                let Some((redis, postgres, ns)) = live::services_or_skip("redis", "abuse") else { continue };
                let relay_url = |addr| via_relay(&postgres, addr);
                let (_, upstream) = relay_url(SocketAddr::from(([127, 0, 0, 1], 0)));
                let relay = PgRelay::start(upstream);
                let (through_relay, _) = relay_url(relay.addr);
                let args = vec![
                    "--redis".into(),
                    redis.clone(),
                    "--postgres".into(),
                    through_relay,
                    "--namespace".into(),
                    ns.clone(),
                ];
                let backing = Backing::RedisPg { redis, postgres, ns };
                let d = Deployment::start("redis+pg", backing, args, Some(relay));
                bench_store(&d, &cfg, &mut rows);
            }
            other => println!("unknown store {other:?} in ABUSE_STORES (sqlite, redis)"),
        }
    }
    print_table(&rows, &cfg);
}
