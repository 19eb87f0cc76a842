//! Abuse bench (issue 28 point 6, issue 39 point 7): each attack run against a live
//! `writerctl coordinator serve` on loopback, on the embedded SQLite store and on Redis +
//! Postgres, while a legitimate client hands the master role back and forth and heartbeats,
//! an operator claims, and a prober asks `/livez` and `/readyz` the way a kubelet does.
//!
//! Issue 28's attacks (ABUSE_ATTACKS=issue28) share one server per store:
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
//! Issue 39's rows (ABUSE_ATTACKS=issue39; `support/abuse39.rs`) each get a server and store
//! of their own, and come from many addresses in 127.0.0.0/8: `argon2_memory_{20,40,200}`
//! (row 1), `long_polls` (2), `dist_flood` and `dist_flood_tls` (3), `big_headers` (4),
//! `big_names_admin`, `big_names_watch`, `varying_names` (5), `history_scan` (6),
//! `queue_jump` (7), `store_copy` (8, offline). `--scale N` (or ABUSE_SCALE) multiplies
//! their sizes. See docs/src/reference/abuse-bench.md for what each sends.
//!
//! Every attack but issue 28's `argon2` and issue 39's rows comes from 127.0.0.1, like the
//! legitimate clients and the prober. The legitimate client does one `master handoff` at a
//! time over a fresh connection (as the CLI does), retrying a failed one every 250 ms until
//! it succeeds; its latency is from the first attempt to the success (or to the end of the
//! window); a heartbeat client does the same with `session heartbeat`. An operator does one
//! correct `master claim` every 2 s on its own project. The prober asks `/livez` then
//! `/readyz` every 250 ms on a fresh connection with a 1 s deadline (and on `--probe-listen`
//! when the server has that flag).
//!
//! Per window: the server's memory (RSS when it starts, `VmHWM` over it after resetting it
//! through `/proc/PID/clear_refs`, RSS 3 s after it ends) and store growth (the SQLite file
//! and WAL, or the namespace's Redis keys with Redis `used_memory` and Postgres relations;
//! audit rows from `/metrics`), also per 10,000 refusals. A markdown table and one JSON line
//! per row end the run; a row that misses issue 28's or issue 39's targets is flagged. The
//! bench always exits 0: it is a measurement.
//!
//! Run: `cargo bench --bench abuse [-- --scale N]`. Env: ABUSE_SECONDS (default 60),
//! ABUSE_STORES (`sqlite,redis`), ABUSE_ATTACKS (names, `issue28`, `issue39`; default all),
//! ABUSE_SCALE, ABUSE_CONNECTIONS, ABUSE_SOURCES, ABUSE_MAX_CONNECTIONS, ABUSE_HISTORY_ROWS,
//! ABUSE_SERVER_LOG (the servers' WRITERCTL_LOG, default warn; `info` logs every verb's time),
//! ABUSE_MEMORY_BUDGET_MIB, WRITERCTL_BIN (the server binary; default the one Cargo built),
//! WRITERCTL_TEST_REDIS_URL / WRITERCTL_TEST_POSTGRES_URL.
#![allow(clippy::disallowed_methods)]

#[path = "support/live.rs"]
mod live;

#[path = "support/abuse39.rs"]
mod abuse39;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use writerctl::claim::ClaimError;
use writerctl::claim::engine::{IssuedKey, Registered, Status};
use writerctl::claim::masters::{ControllerKey, HandoffRequest, MasterClaimRequest, OperatorRequest, RegisterRequest};
use writerctl::claim::requests::RequestId;
use writerctl::claim::secret::Secret;
use writerctl::claim::work_claims::ChannelRequest;
use writerctl::coordinator::client::HttpCoordinator;
use writerctl::coordinator::verbs::{admin, master, work};
use writerctl::coordinator::wire::{IdentityPath, IdentityReq, NoBody, NoPath, ProjectPath, SessionPath};

use live::{Backing, StoreSizes};

/// Issue 28's targets: every probe answered 200 within this...
const PROBE_DEADLINE: Duration = Duration::from_secs(1);
/// ...and a handoff's p99 under this many times its no-attack p99.
const P99_RATIO_TARGET: f64 = 5.0;
const PROBE_EVERY: Duration = Duration::from_millis(250);
const LEGIT_RETRY: Duration = Duration::from_millis(250);
const OPERATOR_EVERY: Duration = Duration::from_secs(2);
/// Issue 39: the operator's correct claim completes within this whatever floods.
const CLAIM_TARGET: Duration = Duration::from_secs(2);
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
    // Issue 39's rows (`abuse39`), each against a server and store of its own.
    /// Row 1: this many wrong-password `master claim`s for unknown operator ids, one per address.
    Argon2Memory(usize),
    /// Row 2: unauthenticated long-polls filling `--max-connections`.
    LongPolls,
    /// Row 3: single-connection idle addresses past the cap, against a legitimate 8-client host.
    DistFlood {
        tls: bool,
    },
    /// Row 4: ~400 KB of unfinished request head per connection.
    BigHeaders,
    /// Row 5: refused admin requests with a 30 KB project and a 60 KB identity.
    BigNamesAdmin,
    /// Row 5: `watch` on many distinct 30 KB project names.
    BigNamesWatch,
    /// Row 5: refusals each carrying another (short, valid) project name.
    VaryingNames,
    /// Row 6: unauthenticated `master history` over a large audit log.
    HistoryScan,
    /// Row 7: fresh addresses x 2 wrong-password claims against the operator's correct one.
    QueueJump,
    /// Row 8: a copy of the store and a 10,000-word guess list against its sealed kept answers.
    StoreCopy,
}

impl Attack {
    const ISSUE28: [Attack; 6] =
        [Attack::SlowBody, Attack::Idle, Attack::Replay, Attack::Refusals, Attack::Argon2, Attack::SeatFlood];

    /// Issue 39's rows at `scale` (1: the default sizes; 10: ten times).
    fn issue39(scale: usize) -> Vec<Attack> {
        vec![
            Attack::Argon2Memory(20),
            Attack::Argon2Memory(40),
            Attack::Argon2Memory(200 * scale),
            Attack::LongPolls,
            Attack::DistFlood { tls: false },
            Attack::DistFlood { tls: true },
            Attack::BigHeaders,
            Attack::BigNamesAdmin,
            Attack::BigNamesWatch,
            Attack::VaryingNames,
            Attack::HistoryScan,
            Attack::QueueJump,
            Attack::StoreCopy,
        ]
    }

    fn name(self) -> String {
        match self {
            Attack::Argon2Memory(n) => format!("argon2_memory_{n}"),
            Attack::DistFlood { tls: true } => "dist_flood_tls".into(),
            other => other.group().into(),
        }
    }

    /// The name ABUSE_ATTACKS selects it by (every `argon2_memory_N` is `argon2_memory`).
    fn group(self) -> &'static str {
        match self {
            Attack::SlowBody => "slow_body",
            Attack::Idle => "idle",
            Attack::Replay => "replay",
            Attack::Refusals => "refusals",
            Attack::Argon2 => "argon2",
            Attack::SeatFlood => "seat_flood",
            Attack::Argon2Memory(_) => "argon2_memory",
            Attack::LongPolls => "long_polls",
            Attack::DistFlood { .. } => "dist_flood",
            Attack::BigHeaders => "big_headers",
            Attack::BigNamesAdmin => "big_names_admin",
            Attack::BigNamesWatch => "big_names_watch",
            Attack::VaryingNames => "varying_names",
            Attack::HistoryScan => "history_scan",
            Attack::QueueJump => "queue_jump",
            Attack::StoreCopy => "store_copy",
        }
    }

    /// Issue 39's row number, for its attacks.
    fn issue39_row(self) -> Option<u8> {
        Some(match self {
            Attack::Argon2Memory(_) => 1,
            Attack::LongPolls => 2,
            Attack::DistFlood { .. } => 3,
            Attack::BigHeaders => 4,
            Attack::BigNamesAdmin | Attack::BigNamesWatch | Attack::VaryingNames => 5,
            Attack::HistoryScan => 6,
            Attack::QueueJump => 7,
            Attack::StoreCopy => 8,
            _ => return None,
        })
    }

    /// A fixed number of requests: its window ends when all are answered (at least
    /// [`MIN_WINDOW`], at most the window), and it is not ramped up first.
    fn counted(self) -> bool {
        matches!(self, Attack::Argon2Memory(_) | Attack::BigNamesAdmin | Attack::QueueJump)
    }

    fn selected_by(self, word: &str) -> bool {
        match word {
            "" | "all" => true,
            "issue28" => self.issue39_row().is_none(),
            "issue39" => self.issue39_row().is_some(),
            w => w == self.name() || w == self.group(),
        }
    }
}

struct Config {
    seconds: f64,
    connections: usize,
    sources: usize,
    attacks: Vec<Attack>,
    /// Issue 39's sizes multiplied by this (`--scale N` or ABUSE_SCALE; default 1).
    scale: usize,
    /// `--max-connections` of every server (the default 1024 times the scale).
    max_connections: usize,
    /// Audit rows seeded for `history_scan`.
    history_rows: u64,
    /// The memory a server must stay under (issue 39: the shipped manifests' 256 MiB).
    budget_mib: f64,
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

/// Which store a deployment runs on.
#[derive(Clone)]
enum StoreSpec {
    Sqlite,
    RedisPg { redis: String, postgres: String },
}

/// How to start one deployment beyond the defaults.
#[derive(Default)]
struct DeployOpts {
    /// `--tls-cert`/`--tls-key` with a fresh self-signed certificate.
    tls: bool,
    /// This admin token instead of 64 random hex digits.
    admin_token: Option<String>,
    /// Audit rows to seed before the attack (`history_scan`).
    seed_audit: u64,
    /// Through the cuttable Postgres relay (the shared Redis + Postgres server).
    relay: bool,
    max_connections: usize,
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
    /// The self-signed certificate clients trust (TLS deployments).
    ca: Option<Vec<u8>>,
    pid: u32,
    child: Option<std::process::Child>,
    _dir: tempfile::TempDir,
}

impl Deployment {
    /// A server on `spec` (a fresh SQLite file, or a fresh Redis + Postgres namespace).
    fn deploy(spec: &StoreSpec, o: &DeployOpts) -> Result<Deployment, String> {
        let dir = tempfile::tempdir().unwrap();
        match spec {
            StoreSpec::Sqlite => {
                let path = dir.path().join("abuse.sqlite");
                if o.seed_audit > 0 {
                    abuse39::seed_sqlite_audit(&path, o.seed_audit);
                }
                let args = vec!["--store".into(), format!("sqlite:{}", path.display())];
                Deployment::start("sqlite", Backing::Sqlite(path), args, None, o, dir)
            }
            StoreSpec::RedisPg { redis, postgres } => {
                let ns = format!("abuse_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
                let (relay, pg_url) = if o.relay {
                    let (_, upstream) = via_relay(postgres, SocketAddr::from(([127, 0, 0, 1], 0)));
                    let relay = PgRelay::start(upstream);
                    let (through, _) = via_relay(postgres, relay.addr);
                    (Some(relay), through)
                } else {
                    (None, postgres.clone())
                };
                let args = vec![
                    "--redis".into(),
                    redis.clone(),
                    "--postgres".into(),
                    pg_url,
                    "--namespace".into(),
                    ns.clone(),
                ];
                let backing = Backing::RedisPg { redis: redis.clone(), postgres: postgres.clone(), ns: ns.clone() };
                let d = Deployment::start("redis+pg", backing, args, relay, o, dir);
                if d.is_err() {
                    live::drop_namespace(redis, postgres, &ns);
                }
                let d = d?;
                if o.seed_audit > 0 {
                    abuse39::seed_pg_audit(postgres, &ns, o.seed_audit);
                }
                Ok(d)
            }
        }
    }

    fn start(
        store: &'static str,
        backing: Backing,
        mut args: Vec<String>,
        relay: Option<PgRelay>,
        o: &DeployOpts,
        dir: tempfile::TempDir,
    ) -> Result<Deployment, String> {
        let (admin_file, admin) = match &o.admin_token {
            Some(t) => (live::write_admin_token(dir.path(), t), t.clone()),
            None => live::admin_token_file(dir.path()),
        };
        args.extend(["--admin-token-file".into(), admin_file.display().to_string()]);
        // The legitimate controllers' rows must stay fresh whatever their heartbeats do.
        args.extend(["--freshness-seconds".into(), "86400".into()]);
        if o.max_connections != live::DEFAULT_MAX_CONNECTIONS {
            args.extend(["--max-connections".into(), o.max_connections.to_string()]);
        }
        let probe_addr = live::serve_help().contains("--probe-listen").then(|| {
            let a = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
            args.extend(["--probe-listen".into(), a.to_string()]);
            a
        });
        let ca = o.tls.then(|| abuse39::self_signed(dir.path(), &mut args));
        let (child, url) = live::try_start_server(&args)?;
        let addr = url.split_once("://").unwrap().1.parse().unwrap();
        Ok(Deployment {
            store,
            url,
            addr,
            probe_addr,
            backing,
            relay,
            admin: Secret::new(admin),
            ca,
            pid: child.id(),
            child: Some(child),
            _dir: dir,
        })
    }

    /// A client of the main port (a new one is a new connection, as each CLI command is).
    fn client(&self) -> HttpCoordinator {
        HttpCoordinator::new(&self.url, self.ca.as_deref(), None).unwrap()
    }

    fn admin_client(&self) -> HttpCoordinator {
        HttpCoordinator::new(&self.url, self.ca.as_deref(), Some(self.admin.clone())).unwrap()
    }

    /// Plain HTTP for `/readyz` and `/metrics`: the probe port when there is one.
    fn plain_url(&self) -> String {
        match self.probe_addr {
            Some(a) => format!("http://{a}"),
            None => self.url.clone(),
        }
    }

    /// The server's memory now.
    fn mem(&self) -> Option<live::Mem> {
        live::proc_mem(self.pid)
    }

    /// An enrolled identity in `project`, registered (with `id` as its request id when given).
    fn seat(&self, project: &str, identity: &str, id: Option<RequestId>) -> (Registered, Secret) {
        let key = enroll(&self.admin_client(), project, identity).unwrap().key;
        let c = self.client().with_request(id);
        let row = ControllerKey { identity: identity.into(), surface: "abuse".into(), machine_id: "bench".into() };
        let r = register(&c, project, &row, &key).unwrap_or_else(|e| panic!("register {project}/{identity}: {e}"));
        (r, key)
    }

    /// Waits (up to 60 s) until `/readyz` answers 200 and the Postgres queue is empty.
    fn settle(&self) -> Duration {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            let ok = ureq::get(&format!("{}/readyz", self.plain_url()))
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
        self.backing.checkpoint();
        Snapshot { sizes: self.backing.sizes(), metrics: live::metrics(&self.plain_url()) }
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
        let st = status(c, &self.project).ok()?;
        let a_master = st.slot.master.as_ref().is_some_and(|m| m.session_id == self.a.controller.session_id);
        Some(if a_master { (&self.a, &self.b, st.slot.epoch) } else { (&self.b, &self.a, st.slot.epoch) })
    }
}

// The verbs the bench's own clients call, through the library's client (`call::<V>`).

/// `master status` of `project`.
fn status(c: &HttpCoordinator, project: &str) -> Result<Status, ClaimError> {
    c.call::<master::Status>(&ProjectPath::of(project), &NoBody {}, None).map(Status::from)
}

/// `identity add` (the client's admin token): the identity's key.
fn enroll(c: &HttpCoordinator, project: &str, identity: &str) -> Result<IssuedKey, ClaimError> {
    c.call::<admin::AddIdentity>(&ProjectPath::of(project), &IdentityReq { identity: identity.into() }, None)
        .map(IssuedKey::from)
}

/// `session register` of `row`, proven by the identity's `key`.
fn register(c: &HttpCoordinator, project: &str, row: &ControllerKey, key: &Secret) -> Result<Registered, ClaimError> {
    let r = c.call::<master::Register>(&ProjectPath::of(project), &RegisterRequest::of(row, Some(key), None), None)?;
    Ok(Registered { controller: r.controller.into(), token: Secret::new(r.token), epoch: r.epoch })
}

/// `channel create` (the client's admin token), default SLA and TTL floor.
fn create_channel(c: &HttpCoordinator, project: &str, channel: &str, steward: &str) {
    let r = ChannelRequest { channel: channel.into(), steward: steward.into(), ..ChannelRequest::default() };
    c.call::<work::CreateChannel>(&ProjectPath::of(project), &r, None).unwrap();
}

/// `from` hands the master role to the exact row `to`, decided at `epoch`.
fn handoff(c: &HttpCoordinator, project: &str, from: &Registered, to: &Registered, epoch: u64) -> bool {
    let req = HandoffRequest {
        session_id: from.controller.session_id.clone(),
        to: to.controller.identity.clone(),
        to_session: Some(to.controller.session_id.clone()),
        expect_epoch: epoch,
        ..HandoffRequest::default()
    };
    c.call::<master::Handoff>(&ProjectPath::of(project), &req, Some(&from.token)).is_ok()
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
fn handoffs(d: &Deployment, pair: &Pair, stop: &AtomicBool) -> Latencies {
    timed_loop(stop, HANDOFF_EVERY, || {
        let Some((from, to, epoch)) = pair.state(&d.client()) else { return false };
        handoff(&d.client(), &pair.project, from, to, epoch)
    })
}

/// A legitimate controller's heartbeats (issue 39's second latency), every
/// [`HANDOFF_EVERY`] on a fresh connection, the pair's two sessions in turn.
fn heartbeats(d: &Deployment, pair: &Pair, stop: &AtomicBool) -> Latencies {
    let mut n = 0u64;
    timed_loop(stop, HANDOFF_EVERY, || {
        n += 1;
        let r = if n.is_multiple_of(2) { &pair.a } else { &pair.b };
        let at = SessionPath::of(&pair.project, &r.controller.session_id);
        d.client().call::<master::Heartbeat>(&at, &NoBody {}, Some(&r.token)).is_ok()
    })
}

/// The operator: a correct `master claim` every [`OPERATOR_EVERY`] on its own project.
fn operator_claims(d: &Deployment, pair: &Pair, stop: &AtomicBool) -> Latencies {
    timed_loop(stop, OPERATOR_EVERY, || operator_claim(d, pair))
}

/// One correct `master claim` by the operator (from 127.0.0.1).
fn operator_claim(d: &Deployment, pair: &Pair) -> bool {
    let Some((_, to, epoch)) = pair.state(&d.client()) else { return false };
    let req = MasterClaimRequest {
        to: to.controller.identity.clone(),
        to_session: Some(to.controller.session_id.clone()),
        expect_epoch: epoch,
        operator: OPERATOR.into(),
        password: PASSWORD.into(),
        ..MasterClaimRequest::default()
    };
    d.client().call::<master::MasterClaim>(&ProjectPath::of(&pair.project), &req, None).is_ok()
}

#[derive(Default, Clone)]
struct Probes {
    ok: u64,
    not_200: u64,
    no_answer: u64,
    worst: Duration,
    /// `/livez` alone: asked, and not answered 200 within [`PROBE_DEADLINE`].
    livez_total: u64,
    livez_failed: u64,
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

/// Where a prober asks: a plain HTTP port, or a TLS main port (through the library's client).
enum ProbeAt {
    Plain(SocketAddr),
    Tls(String, Vec<u8>),
}

impl ProbeAt {
    fn main_port(d: &Deployment) -> ProbeAt {
        match &d.ca {
            Some(ca) => ProbeAt::Tls(d.url.clone(), ca.clone()),
            None => ProbeAt::Plain(d.addr),
        }
    }

    fn once(&self, path: &str) -> Option<u16> {
        match self {
            ProbeAt::Plain(addr) => probe_once(*addr, path),
            ProbeAt::Tls(url, ca) => {
                let t = Instant::now();
                let status = HttpCoordinator::new(url, Some(ca), None).ok()?.probe(path).ok()?.status;
                (t.elapsed() <= PROBE_DEADLINE).then_some(status)
            }
        }
    }
}

/// `/livez` then `/readyz` every [`PROBE_EVERY`] until `stop`.
fn prober(at: ProbeAt, stop: &AtomicBool) -> Probes {
    let mut p = Probes::default();
    while !stop.load(Ordering::SeqCst) {
        let round = Instant::now();
        for path in ["/livez", "/readyz"] {
            let t = Instant::now();
            let status = at.once(path);
            match status {
                Some(200) => p.ok += 1,
                Some(_) => p.not_200 += 1,
                None => p.no_answer += 1,
            }
            if path == "/livez" {
                p.livez_total += 1;
                p.livez_failed += u64::from(status != Some(200));
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
    /// Answers 400 and above (refusals: what store growth per 10,000 refusals divides by).
    refused: AtomicU64,
    rate_limited_429: AtomicU64,
    /// A counted attack's connections that sent all theirs, and when the last one did
    /// (milliseconds after launch).
    finished: AtomicU64,
    done_ms: AtomicU64,
    done: AtomicBool,
    /// Set when the window ends: threads an attack started of its own stop.
    stop: AtomicBool,
    /// Every answer's status, counted (a fixed server answers 413/414/431/429/503 where
    /// today's answers 401/400: the bench takes any and shows which).
    statuses: Mutex<BTreeMap<u16, u64>>,
}

impl Tally {
    fn answer(&self, status: u16) {
        *self.statuses.lock().unwrap().entry(status).or_default() += 1;
        if status >= 400 {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        if status == 429 {
            self.rate_limited_429.fetch_add(1, Ordering::Relaxed);
        }
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
                let open = tally.open.fetch_add(1, Ordering::Relaxed) + 1;
                tally.max_open.fetch_max(open, Ordering::Relaxed);
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
                tally.open.fetch_sub(1, Ordering::Relaxed);
            }
        });
    }
}

/// Where connection `i` of an attack comes from (None: 127.0.0.1).
type SourceOf = Arc<dyn Fn(usize) -> Option<IpAddr> + Send + Sync>;

/// A counted flood: `conns` connections, connection `i` from `from(i)`, each sending
/// `per_conn` requests `next(i, n)` one after the other (reconnecting when one breaks),
/// then closing; the tally is `done` when every connection has finished.
fn flood_counted(
    rt: &tokio::runtime::Runtime,
    to: SocketAddr,
    from: SourceOf,
    conns: usize,
    per_conn: u64,
    tally: &Arc<Tally>,
    next: Arc<dyn Fn(usize, u64) -> Vec<u8> + Send + Sync>,
) {
    let launched = Instant::now();
    for i in 0..conns {
        let (tally, next, from) = (tally.clone(), next.clone(), from.clone());
        rt.spawn(async move {
            tally.stagger().await;
            let mut n = 0u64;
            while n < per_conn {
                let Some(s) = connect(from(i), to, &tally).await else { continue };
                let mut conn = BufReader::new(s);
                while n < per_conn {
                    n += 1;
                    match exchange(&mut conn, &next(i, n)).await {
                        Some((status, _, close)) => {
                            tally.answer(status);
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
            if tally.finished.fetch_add(1, Ordering::SeqCst) + 1 == conns as u64 {
                tally.done_ms.store(launched.elapsed().as_millis() as u64, Ordering::SeqCst);
                tally.done.store(true, Ordering::SeqCst);
            }
        });
    }
}

/// What a connection that holds a slot sends.
#[derive(Clone)]
enum HoldKind {
    /// Nothing.
    Idle,
    /// A request head with a large Content-Length, then a body byte every [`SLOW_BYTE_EVERY`].
    Trickle,
    /// These bytes (an unfinished request head), then nothing.
    Prefix(Arc<Vec<u8>>),
}

/// `conns` connections that hold a slot, connection `i` from `from(i)`, each sending what
/// `kind` says; reopened `reconnect` after the server answers or closes.
fn hold(
    rt: &tokio::runtime::Runtime,
    to: SocketAddr,
    conns: usize,
    kind: HoldKind,
    from: SourceOf,
    reconnect: Duration,
    tally: &Arc<Tally>,
) {
    for i in 0..conns {
        let (tally, kind, from) = (tally.clone(), kind.clone(), from.clone());
        rt.spawn(async move {
            tally.stagger().await;
            loop {
                let Some(mut s) = connect(from(i), to, &tally).await else { continue };
                let open = tally.open.fetch_add(1, Ordering::Relaxed) + 1;
                tally.max_open.fetch_max(open, Ordering::Relaxed);
                let trickle = matches!(kind, HoldKind::Trickle);
                let sent = match &kind {
                    HoldKind::Idle => true,
                    HoldKind::Trickle => {
                        let head = format!(
                            "POST /v1/projects/slow/sessions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\ncontent-length: {SLOW_LENGTH}\r\n\r\n"
                        );
                        s.write_all(head.as_bytes()).await.is_ok()
                    }
                    HoldKind::Prefix(bytes) => s.write_all(bytes).await.is_ok(),
                };
                let mut buf = [0u8; 256];
                let mut tick = tokio::time::interval(SLOW_BYTE_EVERY);
                tick.tick().await;
                let answered = if !sent {
                    None
                } else {
                    loop {
                        tokio::select! {
                            r = s.read(&mut buf) => break matches!(r, Ok(n) if n > 0).then(|| buf.get(9..12).and_then(|b| std::str::from_utf8(b).ok()?.parse::<u16>().ok())).flatten(),
                            _ = tick.tick(), if trickle => {
                                if s.write_all(b" ").await.is_err() {
                                    break None;
                                }
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
                tokio::time::sleep(reconnect).await;
            }
        });
    }
}

/// A project name of its own for one attack window (an attack may run twice on a server).
fn fresh(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

/// What an attack did, as a sentence for the table and as fields for its JSON line.
#[derive(Default)]
struct Note {
    text: String,
    json: serde_json::Map<String, serde_json::Value>,
}

/// Sets up and starts `attack` on `rt`; returns a function that describes what it did.
fn launch(
    attack: Attack,
    d: &Deployment,
    cfg: &Config,
    rt: &tokio::runtime::Runtime,
    tally: &Arc<Tally>,
) -> Box<dyn Fn() -> Note> {
    if attack.issue39_row().is_some() {
        let f = abuse39::launch(attack, d, cfg, rt, tally);
        let t = tally.clone();
        return Box::new(move || {
            let mut note = f();
            let statuses = t.statuses.lock().unwrap().clone();
            if !statuses.is_empty() {
                let list: Vec<String> = statuses.iter().map(|(s, n)| format!("{s}: {n}")).collect();
                note.text.push_str(&format!("; statuses {}", list.join(", ")));
                let map: serde_json::Map<String, serde_json::Value> =
                    statuses.iter().map(|(s, n)| (s.to_string(), (*n).into())).collect();
                note.json.insert("attack_statuses".into(), map.into());
            }
            note
        });
    }
    let f = launch28(attack, d, cfg, rt, tally);
    Box::new(move || Note { text: f(), json: serde_json::Map::new() })
}

/// [`launch`] for issue 28's attacks.
fn launch28(
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
            let kind = if attack == Attack::SlowBody { HoldKind::Trickle } else { HoldKind::Idle };
            hold(rt, to, cfg.connections, kind, Arc::new(|_| None), RECONNECT_AFTER, tally);
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
            d.admin_client()
                .call::<admin::RotateIdentity>(&IdentityPath::of(&project, "victim"), &NoBody {}, None)
                .unwrap();
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
            create_channel(&d.admin_client(), &project, "work", "seat");
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
        Attack::Argon2Memory(_)
        | Attack::LongPolls
        | Attack::DistFlood { .. }
        | Attack::BigHeaders
        | Attack::BigNamesAdmin
        | Attack::BigNamesWatch
        | Attack::VaryingNames
        | Attack::HistoryScan
        | Attack::QueueJump
        | Attack::StoreCopy => unreachable!("issue 39's attacks are launched by abuse39::launch"),
        Attack::SeatFlood => {
            let project = fresh("abuse-seat");
            let (r, _) = d.seat(&project, "seat", None);
            create_channel(&d.admin_client(), &project, "work", "seat");
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
    heartbeat: Vec<Duration>,
    heartbeat_failures: u64,
    claim: Vec<Duration>,
    probes: Probes,
    probe_port: Option<Probes>,
    before: Snapshot,
    after: Snapshot,
    note: Note,
    /// Replay answers that carried a session token (issue 28 point 2: should be none).
    tokens: u64,
    /// Attack answers 400 and above.
    refusals: u64,
    /// From the attack's launch to the after-snapshot (what store growth is divided by).
    elapsed: Duration,
    /// The server's RSS when the window began, its high-water mark over the window (VmHWM
    /// reset at the start when the kernel allows), and its RSS [`AFTER_IDLE`] after the end.
    mem_before: Option<live::Mem>,
    mem_after: Option<live::Mem>,
    hwm_reset: bool,
}

struct Clients {
    legit: Pair,
    oper: Pair,
}

impl Clients {
    /// The operator and the two pairs; the operator's first correct claim is made here, so
    /// its address has a record of success before any attack (issue 39 point 5).
    fn new(d: &Deployment) -> Clients {
        let op = OperatorRequest { operator_id: OPERATOR.into(), password: PASSWORD.into() };
        d.admin_client().call::<master::AddOperator>(&NoPath {}, &op, None).unwrap();
        let c =
            Clients { legit: Pair::new(d, "abuse-legit", "alice", "bob"), oper: Pair::new(d, "abuse-oper", "a", "b") };
        operator_claim(d, &c.oper);
        c
    }
}

/// How long after a window the server's RSS is read again ("RSS after the attack").
const AFTER_IDLE: Duration = Duration::from_secs(3);
/// The shortest window of a counted attack (enough for two operator claims).
const MIN_WINDOW: Duration = Duration::from_secs(5);

fn run_window(d: &Deployment, clients: &Clients, cfg: &Config, attack: Option<Attack>) -> Window {
    let before = d.snapshot();
    let stop = AtomicBool::new(false);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let tally = Arc::new(Tally::default());
    let hwm_reset = live::reset_hwm(d.pid);
    let mem_before = d.mem();
    let started = Instant::now();
    let note = attack.map(|a| launch(a, d, cfg, &rt, &tally));
    if let Some(a) = attack {
        ramp_up(a, &tally, cfg);
    }
    let counted = attack.is_some_and(Attack::counted);
    let stop = &stop;
    let (legit, beats, claims, probes, probe_port) = std::thread::scope(|s| {
        let legit = s.spawn(|| handoffs(d, &clients.legit, stop));
        let beats = s.spawn(|| heartbeats(d, &clients.legit, stop));
        let claims = s.spawn(|| operator_claims(d, &clients.oper, stop));
        let probes = s.spawn(|| prober(ProbeAt::main_port(d), stop));
        let probe_port = d.probe_addr.map(|a| s.spawn(move || prober(ProbeAt::Plain(a), stop)));
        let t = Instant::now();
        while t.elapsed() < window(cfg) && !(counted && tally.done.load(Ordering::SeqCst) && t.elapsed() >= MIN_WINDOW)
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        stop.store(true, Ordering::SeqCst);
        (
            legit.join().unwrap(),
            beats.join().unwrap(),
            claims.join().unwrap(),
            probes.join().unwrap(),
            probe_port.map(|p| p.join().unwrap()),
        )
    });
    tally.stop.store(true, Ordering::SeqCst);
    let note = note.map(|n| n()).unwrap_or_default();
    // Every attacking socket closes with the runtime.
    rt.shutdown_background();
    let elapsed = started.elapsed();
    std::thread::sleep(AFTER_IDLE);
    let mem_after = d.mem();
    let after = d.snapshot();
    let (mut handoff, mut heartbeat, mut claim) = (legit.lat, beats.lat, claims.lat);
    handoff.sort();
    heartbeat.sort();
    claim.sort();
    Window {
        handoff,
        handoff_failures: legit.failures,
        heartbeat,
        heartbeat_failures: beats.failures,
        claim,
        probes,
        probe_port,
        before,
        after,
        note,
        tokens: Tally::get(&tally.tokens),
        refusals: Tally::get(&tally.refused),
        elapsed,
        mem_before,
        mem_after,
        hwm_reset,
    }
}

/// Lets an attack reach full strength before the window is measured: connection holders
/// until they hold as many connections as they open (or the server's cap, or no more are
/// let in), request floods for a second; counted attacks are measured from their launch.
fn ramp_up(attack: Attack, tally: &Tally, cfg: &Config) {
    let holders = match attack {
        Attack::SlowBody | Attack::Idle => Some(cfg.connections),
        Attack::LongPolls | Attack::DistFlood { .. } | Attack::BigHeaders => Some(abuse39::connections(attack, cfg)),
        _ => None,
    };
    if attack.counted() {
        return;
    }
    let Some(conns) = holders else {
        std::thread::sleep(Duration::from_secs(1) + STAGGER * Tally::get(&tally.launched) as u32);
        return;
    };
    // A server with a per-source cap never lets them all in: stop when the count has not
    // grown for 2 s.
    let full = conns.min(cfg.max_connections) as u64;
    let (mut seen, mut grew) = (0, Instant::now());
    while Tally::get(&tally.max_open) < full && grew.elapsed() < Duration::from_secs(2) {
        if Tally::get(&tally.max_open) > seen {
            (seen, grew) = (Tally::get(&tally.max_open), Instant::now());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ---------------------------------------------------------------------------------------
// the report
// ---------------------------------------------------------------------------------------

fn mib(bytes: i64) -> String {
    format!("{:+.2} MiB", bytes as f64 / (1 << 20) as f64)
}

/// Audit rows added over a window (from `/metrics`), when both snapshots had them.
fn audit_rows(w: &Window) -> Option<f64> {
    Some(w.after.metric("writerctl_audit_rows")? - w.before.metric("writerctl_audit_rows")?)
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
        "; audit rows {} ({}/10 s), history {}, attempts {}",
        d("writerctl_audit_rows"),
        audit_rows(w).map_or("?".into(), |n| format!("{:.0}", n / secs * 10.0)),
        d("writerctl_claim_history_steps"),
        d("writerctl_operator_attempt_rows")
    ));
    if let Some(q) = w.after.metric("writerctl_audit_retry_queue_depth").filter(|q| *q > 0.0) {
        s.push_str(&format!(", pg queue {q}"));
    }
    s
}

/// p50 and p99 (or max) of a sorted latency list, in ms.
#[derive(Clone, Copy, Default)]
struct Lat {
    p50: f64,
    p99: f64,
    max: f64,
    n: usize,
}

impl Lat {
    fn of(sorted: &[Duration]) -> Lat {
        Lat { p50: live::pct(sorted, 0.5), p99: live::pct(sorted, 0.99), max: live::pct(sorted, 1.0), n: sorted.len() }
    }
}

struct Row {
    attack: String,
    store: &'static str,
    /// False for the store-copy row: no live window, only its own figures.
    live: bool,
    base_handoff: Lat,
    handoff: Lat,
    base_heartbeat: Lat,
    heartbeat: Lat,
    base_claim: Lat,
    claim: Lat,
    probes: Probes,
    probe_port: Option<Probes>,
    /// RSS before, VmHWM over the window, RSS after (MiB), and whether VmHWM was reset.
    mem: Option<(f64, f64, f64, bool)>,
    growth_bytes: i64,
    /// The baseline window's store growth per second (the legitimate clients' own writes),
    /// taken off before growth is divided by refusals.
    base_growth_per_s: f64,
    growth: String,
    refusals: u64,
    audit_rows: Option<f64>,
    secs: f64,
    notes: String,
    json: serde_json::Map<String, serde_json::Value>,
    tokens: u64,
    /// Set by rows judged on something else than the live targets (the store copy).
    verdict: Option<Vec<&'static str>>,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.handoff.p99 / self.base_handoff.p99.max(1e-3)
    }

    fn heartbeat_ratio(&self) -> f64 {
        self.heartbeat.p99 / self.base_heartbeat.p99.max(1e-3)
    }

    /// Store growth net of the legitimate clients' (the baseline's rate over this window),
    /// per 10,000 refusals, in bytes (None under 100 refusals: too few to scale).
    fn per_10k(&self) -> Option<f64> {
        let net = (self.growth_bytes as f64 - self.base_growth_per_s * self.secs).max(0.0);
        (self.refusals >= 100).then(|| net * 10_000.0 / self.refusals as f64)
    }

    fn missed(&self, cfg: &Config) -> Vec<&'static str> {
        if let Some(v) = &self.verdict {
            return v.clone();
        }
        let mut m = Vec::new();
        let probes_ok = |p: &Probes| p.ok == p.total() && p.worst <= PROBE_DEADLINE;
        if self.probes.livez_failed > 0 {
            m.push("livez");
        }
        if !probes_ok(&self.probes) || self.probe_port.as_ref().is_some_and(|p| !probes_ok(p)) {
            m.push("probes");
        }
        if self.ratio() >= P99_RATIO_TARGET {
            m.push("p99");
        }
        if self.heartbeat_ratio() >= P99_RATIO_TARGET {
            m.push("heartbeat p99");
        }
        if self.claim.max >= CLAIM_TARGET.as_secs_f64() * 1e3 || self.claim.n == 0 {
            m.push("claim 2 s");
        }
        if self.mem.is_some_and(|(_, hwm, _, _)| hwm >= cfg.budget_mib) {
            m.push("memory");
        }
        if self.per_10k().is_some_and(|b| b >= 1e6) {
            m.push("store/10k");
        }
        if self.tokens > 0 {
            m.push("replay token");
        }
        m
    }

    fn json_line(&self, cfg: &Config) -> serde_json::Value {
        let lat = |l: &Lat| serde_json::json!({"p50_ms": round1(l.p50), "p99_ms": round1(l.p99), "max_ms": round1(l.max), "n": l.n});
        let mut v = serde_json::json!({
            "bench": "abuse",
            "row": self.attack,
            "store": self.store,
            "scale": cfg.scale,
            "window_s": round1(self.secs),
            "targets_missed": self.missed(cfg),
            "notes": self.notes,
        });
        if self.live {
            let o = v.as_object_mut().unwrap();
            o.insert("livez_failed".into(), self.probes.livez_failed.into());
            o.insert("livez_total".into(), self.probes.livez_total.into());
            o.insert("probes_ok".into(), self.probes.ok.into());
            o.insert("probes_total".into(), self.probes.total().into());
            o.insert("probe_worst_ms".into(), round1(self.probes.worst.as_secs_f64() * 1e3).into());
            if let Some(p) = &self.probe_port {
                o.insert("probe_port_ok".into(), p.ok.into());
                o.insert("probe_port_total".into(), p.total().into());
            }
            o.insert("heartbeat_base".into(), lat(&self.base_heartbeat));
            o.insert("heartbeat".into(), lat(&self.heartbeat));
            o.insert("handoff_base".into(), lat(&self.base_handoff));
            o.insert("handoff".into(), lat(&self.handoff));
            o.insert("operator_claim_base".into(), lat(&self.base_claim));
            o.insert("operator_claim".into(), lat(&self.claim));
            if let Some((before, hwm, after, reset)) = self.mem {
                o.insert("rss_before_mib".into(), round1(before).into());
                o.insert("vmhwm_mib".into(), round1(hwm).into());
                o.insert("rss_after_mib".into(), round1(after).into());
                o.insert("vmhwm_since".into(), (if reset { "window" } else { "server start" }).into());
            }
            o.insert("store_growth_bytes".into(), self.growth_bytes.into());
            o.insert("refusals".into(), self.refusals.into());
            o.insert("store_growth_per_10k_refusals_bytes".into(), self.per_10k().map(|b| b.round()).into());
            o.insert("audit_rows".into(), self.audit_rows.into());
            o.insert(
                "audit_rows_per_10s".into(),
                self.audit_rows.map(|n| (n / self.secs.max(1e-3) * 10.0).round()).into(),
            );
        }
        v.as_object_mut().unwrap().extend(self.json.clone());
        v
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn row(attack: &str, store: &'static str, base: &Window, w: &Window) -> Row {
    let mut notes = w.note.text.clone();
    if w.handoff_failures > 0 {
        notes.push_str(&format!("; handoff attempts failed {}", w.handoff_failures));
    }
    if w.heartbeat_failures > 0 {
        notes.push_str(&format!("; heartbeat attempts failed {}", w.heartbeat_failures));
    }
    let mem = match (w.mem_before, w.mem_after) {
        (Some(b), Some(a)) => Some((b.rss_mib(), a.hwm_mib(), a.rss_mib(), w.hwm_reset)),
        _ => None,
    };
    Row {
        attack: attack.into(),
        store,
        live: true,
        base_handoff: Lat::of(&base.handoff),
        handoff: Lat::of(&w.handoff),
        base_heartbeat: Lat::of(&base.heartbeat),
        heartbeat: Lat::of(&w.heartbeat),
        base_claim: Lat::of(&base.claim),
        claim: Lat::of(&w.claim),
        probes: w.probes.clone(),
        probe_port: w.probe_port.clone(),
        mem,
        growth_bytes: w.after.sizes.bytes() - w.before.sizes.bytes(),
        base_growth_per_s: (base.after.sizes.bytes() - base.before.sizes.bytes()) as f64
            / base.elapsed.as_secs_f64().max(1e-3),
        growth: growth(w),
        refusals: w.refusals,
        audit_rows: audit_rows(w),
        secs: w.elapsed.as_secs_f64(),
        tokens: w.tokens,
        notes: notes.trim_start_matches("; ").to_string(),
        json: w.note.json.clone(),
        verdict: None,
    }
}

fn print_row(r: &Row, cfg: &Config) {
    let missed = r.missed(cfg);
    let targets = if missed.is_empty() { "met".to_string() } else { format!("**MISSED: {}**", missed.join(", ")) };
    if !r.live {
        println!("| {} | {} | - | - | - | - | - | - | - | - | {} | {} |", r.attack, r.store, targets, r.notes);
        return;
    }
    let l2 = |b: &Lat, a: &Lat| format!("{:.1}/{:.1} → {:.1}/{:.1}", b.p50, b.p99, a.p50, a.p99);
    let mem = r.mem.map_or("?".into(), |(b, h, a, reset)| {
        format!("{b:.0} / {h:.0}{} / {a:.0}", if reset { "" } else { " (since start)" })
    });
    println!(
        "| {} | {} | {}/{} | {} | {} ({:.1}x) | {:.0}/{:.0} → {:.0}/{:.0} | {}{} | {} | {} | {} | {} | {} |",
        r.attack,
        r.store,
        r.probes.livez_failed,
        r.probes.livez_total,
        l2(&r.base_heartbeat, &r.heartbeat),
        l2(&r.base_handoff, &r.handoff),
        r.ratio(),
        r.base_claim.p50,
        r.base_claim.max,
        r.claim.p50,
        r.claim.max,
        r.probes.cell(),
        r.probe_port.as_ref().map_or(String::new(), |p| format!(" (probe port {})", p.cell())),
        mem,
        r.growth,
        r.per_10k().map_or(format!("- ({} refusals)", r.refusals), |b| format!(
            "{} ({} refusals)",
            mib(b as i64),
            r.refusals
        )),
        targets,
        r.notes
    );
}

fn print_header() {
    println!(
        "| attack | store | /livez failed/sent (main port) | heartbeat p50/p99 ms, base → attack | handoff p50/p99 ms, base → attack (p99 ratio) | correct master claim p50/max ms, base → attack | probes ok/total, worst ms | server RSS MiB before / VmHWM / after | store growth | growth per 10k refusals | targets | notes |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
}

fn print_table(rows: &[Row], cfg: &Config) {
    println!(
        "\nabuse bench: {} s per window, scale {}, memory budget {} MiB; latencies in ms (baseline → under attack)\n",
        cfg.seconds, cfg.scale, cfg.budget_mib
    );
    print_header();
    for r in rows {
        print_row(r, cfg);
    }
    println!();
    for r in rows {
        println!("{}", r.json_line(cfg));
    }
}

// ---------------------------------------------------------------------------------------
// per store
// ---------------------------------------------------------------------------------------

fn bench_store(spec: &StoreSpec, cfg: &Config, rows: &mut Vec<Row>) {
    let opts = |relay| DeployOpts { relay, max_connections: cfg.max_connections, ..DeployOpts::default() };
    let d = match Deployment::deploy(spec, &opts(true)) {
        Ok(d) => d,
        Err(e) => {
            println!("\n== server did not start: {e} ==");
            return;
        }
    };
    let clients = Clients::new(&d);
    println!("\n== {}: {} (probe port: {}) ==", d.store, d.url, d.probe_addr.map_or("none".into(), |a| a.to_string()));
    let base = run_window(&d, &clients, cfg, None);
    println!(
        "baseline: {} handoffs, p50 {:.1} ms, p99 {:.1} ms; {} heartbeats, p50 {:.1} ms, p99 {:.1} ms; probes {}; RSS {:.1} MiB, VmHWM {:.1} MiB",
        base.handoff.len(),
        live::pct(&base.handoff, 0.5),
        live::pct(&base.handoff, 0.99),
        base.heartbeat.len(),
        live::pct(&base.heartbeat, 0.5),
        live::pct(&base.heartbeat, 0.99),
        base.probes.cell(),
        base.mem_after.map_or(0.0, |m| m.rss_mib()),
        base.mem_after.map_or(0.0, |m| m.hwm_mib()),
    );
    let store = d.store;
    let report = |rows: &mut Vec<Row>, name: &str, base: &Window, w: &Window| {
        let r = row(name, store, base, w);
        print_header();
        print_row(&r, cfg);
        rows.push(r);
    };
    report(rows, "none (baseline)", &base, &base);
    for &attack in cfg.attacks.iter().filter(|a| a.issue39_row().is_none()) {
        let settled = d.settle();
        println!("-- {} (settled in {:.1} s)", attack.name(), settled.as_secs_f64());
        let w = run_window(&d, &clients, cfg, Some(attack));
        report(rows, &attack.name(), &base, &w);
        if attack == Attack::Refusals
            && let Some(relay) = &d.relay
        {
            // The same flood while Postgres is unreachable: the retry queue in Redis grows.
            d.settle();
            relay.cut();
            let base_down = run_window(&d, &clients, cfg, None);
            report(rows, "none (Postgres down)", &base, &base_down);
            let w = run_window(&d, &clients, cfg, Some(attack));
            report(rows, "refusals (Postgres down)", &base_down, &w);
            relay.restore();
            let t = Instant::now();
            d.settle();
            println!("   Postgres back: queue drained in {:.1} s", t.elapsed().as_secs_f64());
        }
    }
    drop(d);
    // Issue 39's rows: each on a server and store of its own, so that its memory and store
    // figures are its own (an allocator keeps what an earlier attack made it take).
    for &attack in cfg.attacks.iter().filter(|a| a.issue39_row().is_some()) {
        println!("-- {} (issue 39 row {}): a fresh server", attack.name(), attack.issue39_row().unwrap());
        if attack == Attack::StoreCopy {
            let r = abuse39::store_copy(spec, cfg);
            print_header();
            print_row(&r, cfg);
            rows.push(r);
            continue;
        }
        let o = DeployOpts {
            tls: attack == Attack::DistFlood { tls: true },
            seed_audit: if attack == Attack::HistoryScan { cfg.history_rows } else { 0 },
            ..opts(false)
        };
        let t = Instant::now();
        let d = match Deployment::deploy(spec, &o) {
            Ok(d) => d,
            Err(e) => {
                println!("   server did not start: {e}");
                continue;
            }
        };
        if o.seed_audit > 0 {
            println!(
                "   {} audit rows seeded and the server started in {:.1} s",
                o.seed_audit,
                t.elapsed().as_secs_f64()
            );
        }
        let clients = Clients::new(&d);
        d.settle();
        let w = run_window(&d, &clients, cfg, Some(attack));
        report(rows, &attack.name(), &base, &w);
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
    let args: Vec<String> = std::env::args().collect();
    let scale = args
        .iter()
        .position(|a| a == "--scale")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| env_num("ABUSE_SCALE", 1.0) as usize)
        .max(1);
    let wanted = std::env::var("ABUSE_ATTACKS").unwrap_or_default();
    let words: Vec<&str> = wanted.split(',').map(str::trim).collect();
    let cfg = Config {
        seconds: env_num("ABUSE_SECONDS", 60.0),
        connections: env_num("ABUSE_CONNECTIONS", 1100.0) as usize,
        sources: env_num("ABUSE_SOURCES", 450.0) as usize,
        attacks: Attack::ISSUE28
            .into_iter()
            .chain(Attack::issue39(scale))
            .filter(|a| words.iter().any(|w| a.selected_by(w)))
            .collect(),
        scale,
        max_connections: env_num("ABUSE_MAX_CONNECTIONS", (live::DEFAULT_MAX_CONNECTIONS * scale) as f64) as usize,
        history_rows: env_num("ABUSE_HISTORY_ROWS", 1e6 * scale as f64) as u64,
        budget_mib: env_num("ABUSE_MEMORY_BUDGET_MIB", 256.0),
    };
    let stores = std::env::var("ABUSE_STORES").unwrap_or_else(|_| "sqlite,redis".into());
    println!(
        "abuse bench: server {}, {} s per window, scale {}, attacks {:?}, stores {stores}",
        live::writerctl_bin().display(),
        cfg.seconds,
        cfg.scale,
        cfg.attacks.iter().map(|a| a.name()).collect::<Vec<_>>()
    );
    let mut rows = Vec::new();
    for store in stores.split(',').map(str::trim) {
        match store {
            "sqlite" => bench_store(&StoreSpec::Sqlite, &cfg, &mut rows),
            "redis" | "redis_pg" => {
                let Ok((redis, postgres)) = live::services().map_err(|why| println!("\n== redis: skipped ({why}) =="))
                else {
                    continue;
                };
                bench_store(&StoreSpec::RedisPg { redis, postgres }, &cfg, &mut rows);
            }
            other => println!("unknown store {other:?} in ABUSE_STORES (sqlite, redis)"),
        }
    }
    print_table(&rows, &cfg);
}
