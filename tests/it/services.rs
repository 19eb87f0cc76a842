//! What the Redis + Postgres tests share (`redis_pg.rs` on the store, `serve.rs` through
//! the server): where the services are, the loud skip (a failure under
//! `WRITERCTL_REQUIRE_SERVICES=1`, as CI sets), one namespace per test, and a TCP proxy a
//! test can cut to make a service unreachable.
//!
//! Services: Redis at `WRITERCTL_TEST_REDIS_URL` (default redis://127.0.0.1:6379) and
//! PostgreSQL at `WRITERCTL_TEST_POSTGRES_URL` (default postgres://postgres@127.0.0.1:5432/test).

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use writerctl::claim::model::Controller;
use writerctl::claim::stores::redis_pg::RedisPgStore;

pub(crate) const DEFAULT_REDIS: &str = "redis://127.0.0.1:6379";
pub(crate) const DEFAULT_POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/test";

fn redis_url() -> String {
    std::env::var("WRITERCTL_TEST_REDIS_URL").unwrap_or_else(|_| DEFAULT_REDIS.into())
}

fn postgres_url() -> String {
    std::env::var("WRITERCTL_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_POSTGRES.into())
}

/// A loud `SKIPPED` line straight to the process's stderr (libtest captures eprintln! of
/// passing tests), or a panic under WRITERCTL_REQUIRE_SERVICES=1.
pub(crate) fn skip(test: &str, why: &str) {
    if std::env::var("WRITERCTL_REQUIRE_SERVICES").as_deref() == Ok("1") {
        panic!("{test}: {why} and WRITERCTL_REQUIRE_SERVICES=1");
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

fn probe(redis_url: &str, postgres_url: &str) -> Result<(), String> {
    let client = redis::Client::open(redis_url).map_err(|e| format!("redis {redis_url}: {e}"))?;
    let mut conn =
        client.get_connection_with_timeout(Duration::from_secs(2)).map_err(|e| format!("redis {redis_url}: {e}"))?;
    redis::cmd("PING").query::<String>(&mut conn).map_err(|e| format!("redis {redis_url}: {e}"))?;
    let mut config = postgres::Config::from_str(postgres_url).map_err(|e| format!("postgres: {e}"))?;
    config.connect_timeout(Duration::from_secs(2));
    let mut pg = config.connect(postgres::NoTls).map_err(|e| format!("postgres {postgres_url}: {e}"))?;
    pg.simple_query("SELECT 1").map_err(|e| format!("postgres: {e}"))?;
    Ok(())
}

/// One test's namespace (Redis prefix and Postgres schema), removed on drop. None, after a
/// loud line on stderr, when the services are unreachable; a panic instead under
/// `WRITERCTL_REQUIRE_SERVICES=1`.
pub(crate) struct Ns {
    pub(crate) name: String,
    pub(crate) redis_url: String,
    pub(crate) postgres_url: String,
}

impl Ns {
    pub(crate) fn new(test: &str) -> Option<Ns> {
        let (redis_url, postgres_url) = (redis_url(), postgres_url());
        if let Err(why) = probe(&redis_url, &postgres_url) {
            skip(test, &format!("Redis/Postgres unreachable ({why})"));
            return None;
        }
        let name = format!("t_{}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
        Some(Ns { name, redis_url, postgres_url })
    }

    pub(crate) fn store(&self) -> Arc<RedisPgStore> {
        Arc::new(RedisPgStore::connect(&self.redis_url, &self.postgres_url, &self.name).unwrap())
    }

    pub(crate) fn redis(&self) -> redis::Connection {
        redis::Client::open(self.redis_url.as_str()).unwrap().get_connection().unwrap()
    }

    pub(crate) fn pg(&self) -> postgres::Client {
        postgres::Client::connect(&self.postgres_url, postgres::NoTls).unwrap()
    }

    pub(crate) fn key(&self, rest: &str) -> String {
        format!("{{{}}}:{rest}", self.name)
    }

    /// Every Redis key of the namespace.
    pub(crate) fn redis_keys(&self) -> Vec<String> {
        redis::cmd("KEYS").arg(format!("{{{}}}:*", self.name)).query(&mut self.redis()).unwrap()
    }

    /// Deletes every Redis key of the namespace (a Redis restart without persistence).
    pub(crate) fn wipe_redis(&self) {
        let keys = self.redis_keys();
        if !keys.is_empty() {
            redis::cmd("DEL").arg(&keys).query::<i64>(&mut self.redis()).unwrap();
        }
    }

    /// A copy of the Postgres write queue, to replay later as a drainer that died before
    /// XDEL would.
    pub(crate) fn queue_copy(&self) -> Vec<(String, Vec<(String, String)>)> {
        redis::cmd("XRANGE").arg(self.key("pgq")).arg("-").arg("+").query(&mut self.redis()).unwrap()
    }

    /// Appends every entry of `copy` to the queue again (new ids, same fields).
    pub(crate) fn requeue(&self, copy: &[(String, Vec<(String, String)>)]) {
        let mut r = self.redis();
        for (_, fields) in copy {
            let mut add = redis::cmd("XADD");
            add.arg(self.key("pgq")).arg("*");
            for (k, v) in fields {
                add.arg(k).arg(v);
            }
            add.query::<String>(&mut r).unwrap();
        }
    }

    /// controller_status rows of `project`, ordered by session id.
    pub(crate) fn pg_controllers(&self, project: &str) -> Vec<Controller> {
        self.pg()
            .query(
                &format!(
                    "SELECT session_id, identity, surface, machine_id, token_hash, is_master, registered_at,
                            last_heartbeat FROM \"{}\".controller_status WHERE project = $1 ORDER BY session_id",
                    self.name
                ),
                &[&project],
            )
            .unwrap()
            .iter()
            .map(|r| Controller {
                session_id: r.get(0),
                identity: r.get(1),
                surface: r.get(2),
                machine_id: r.get(3),
                token_hash: r.get(4),
                is_master: r.get(5),
                registered_at: r.get(6),
                last_heartbeat: r.get(7),
            })
            .collect()
    }

    /// The projects row: (version, epoch, master session id).
    pub(crate) fn pg_head(&self, project: &str) -> (i64, i64, Option<String>) {
        let r = self
            .pg()
            .query_one(
                &format!("SELECT version, epoch, master_session_id FROM \"{}\".projects WHERE project = $1", self.name),
                &[&project],
            )
            .unwrap();
        (r.get(0), r.get(1), r.get(2))
    }

    /// The projects row's (epoch, master session id).
    pub(crate) fn pg_master(&self, project: &str) -> (i64, Option<String>) {
        let (_, epoch, master) = self.pg_head(project);
        (epoch, master)
    }

    /// (rows, distinct op ids) of the audit table.
    pub(crate) fn pg_audit_ids(&self) -> (i64, i64) {
        let r = self
            .pg()
            .query_one(&format!("SELECT count(*), count(DISTINCT op_id) FROM \"{}\".audit", self.name), &[])
            .unwrap();
        (r.get(0), r.get(1))
    }

    /// How many audit rows per (verb, result) for `project`.
    pub(crate) fn pg_audit_counts(&self, project: &str) -> BTreeMap<(String, String), i64> {
        self.pg()
            .query(
                &format!(
                    "SELECT verb, result, count(*) FROM \"{}\".audit WHERE project = $1 GROUP BY verb, result",
                    self.name
                ),
                &[&project],
            )
            .unwrap()
            .iter()
            .map(|r| ((r.get(0), r.get(1)), r.get(2)))
            .collect()
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        // Best effort: a failed cleanup must not hide the test's own result.
        if let Ok(client) = redis::Client::open(self.redis_url.as_str())
            && let Ok(mut r) = client.get_connection_with_timeout(Duration::from_secs(2))
            && let Ok(keys) = redis::cmd("KEYS").arg(format!("{{{}}}:*", self.name)).query::<Vec<String>>(&mut r)
            && !keys.is_empty()
        {
            let _ = redis::cmd("DEL").arg(&keys).query::<i64>(&mut r);
        }
        if let Ok(mut pg) = postgres::Client::connect(&self.postgres_url, postgres::NoTls) {
            let _ = pg.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name));
        }
    }
}

pub(crate) fn counts(rows: &[(&str, &str, i64)]) -> BTreeMap<(String, String), i64> {
    rows.iter().map(|(v, r, n)| ((v.to_string(), r.to_string()), *n)).collect()
}

/// A TCP forwarder to Postgres that the test can cut (closing every connection and
/// refusing new ones) and restore.
pub(crate) struct Proxy {
    pub(crate) port: u16,
    up: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
    accept: Option<JoinHandle<()>>,
}

impl Proxy {
    pub(crate) fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let stop = Arc::new(AtomicBool::new(false));
        let live: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (up2, stop2, live2) = (up.clone(), stop.clone(), live.clone());
        let accept = thread::spawn(move || {
            for client in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                if !up2.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(target) else { continue };
                let mut live = live2.lock().unwrap();
                live.push(client.try_clone().unwrap());
                live.push(server.try_clone().unwrap());
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                thread::spawn(move || pump(client, server));
                thread::spawn(move || pump(s2, c2));
            }
        });
        Proxy { port, up, stop, live, accept: Some(accept) }
    }

    /// A key-value connection string reaching Postgres through the proxy.
    pub(crate) fn postgres_url(&self, direct: &str) -> String {
        let c = postgres::Config::from_str(direct).unwrap();
        let mut s = format!("host=127.0.0.1 port={}", self.port);
        if let Some(u) = c.get_user() {
            s += &format!(" user={u}");
        }
        if let Some(p) = c.get_password() {
            s += &format!(" password={}", String::from_utf8_lossy(p));
        }
        if let Some(d) = c.get_dbname() {
            s += &format!(" dbname={d}");
        }
        s
    }

    pub(crate) fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for s in self.live.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    pub(crate) fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.cut();
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

pub(crate) fn postgres_addr(url: &str) -> SocketAddr {
    let c = postgres::Config::from_str(url).unwrap();
    let host = match c.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "127.0.0.1".into(),
    };
    let port = c.get_ports().first().copied().unwrap_or(5432);
    (host.as_str(), port).to_socket_addrs().unwrap().next().unwrap()
}

/// `url` with its host and port replaced by the proxy's, and the address it named.
pub(crate) fn redis_via(url: &str, port: u16) -> (String, SocketAddr) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (format!("{u}@"), h),
        None => (String::new(), authority),
    };
    let target = if hostport.contains(':') { hostport.to_string() } else { format!("{hostport}:6379") };
    (format!("{scheme}://{userinfo}127.0.0.1:{port}{path}"), target.to_socket_addrs().unwrap().next().unwrap())
}

/// Polls `f` every 20 ms for at most `limit` (a bound on a hang, not a timing assertion).
#[track_caller]
pub(crate) fn wait_until(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        thread::sleep(Duration::from_millis(20));
    }
}
