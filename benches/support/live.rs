//! A live `writerctl coordinator serve` for the benches that drive it over HTTP (`soak`,
//! `abuse`): the binary to run, starting it on a free port, its `/metrics`, the store's own
//! sizes (SQLite file and WAL; Redis memory and the namespace's keys; Postgres relation
//! sizes), the local services and leaving nothing behind in them.
//!
//! Included by each bench with `#[path = "support/live.rs"] mod live;` (Cargo builds every
//! file under `benches/` only when a `[[bench]]` names it: `autobenches = false`).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// `coordinator serve --max-connections` when not given.
pub const DEFAULT_MAX_CONNECTIONS: usize = writerctl::coordinator::server::DEFAULT_MAX_CONNECTIONS;

/// The server binary: `WRITERCTL_BIN` when set (e.g. a debug build while developing a
/// bench), otherwise the one Cargo built for this bench (release under `cargo bench`).
pub fn writerctl_bin() -> PathBuf {
    std::env::var_os("WRITERCTL_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_writerctl")), PathBuf::from)
}

/// `writerctl coordinator serve` on a free loopback port with `args`; its URL is read from
/// the `{"listening": URL}` line it prints on stdout.
pub fn start_server(args: &[String]) -> (Child, String) {
    try_start_server(args).unwrap_or_else(|e| panic!("{e}"))
}

/// [`start_server`], or why the server exited before listening (e.g. it refused a flag's
/// value: the store-copy row asks whether a weak admin token is accepted).
pub fn try_start_server(args: &[String]) -> Result<(Child, String), String> {
    let bin = writerctl_bin();
    let mut child = Command::new(&bin)
        .args(["coordinator", "serve", "--listen", "127.0.0.1:0", "--json"])
        .args(args)
        // ABUSE_SERVER_LOG=info shows each verb's outcome and time (what a slow sample was).
        .env("WRITERCTL_LOG", std::env::var("ABUSE_SERVER_LOG").unwrap_or_else(|_| "warn".into()))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let url = child.stdout.take().and_then(|out| {
        BufReader::new(out).lines().map_while(Result::ok).find_map(|line| {
            let v = serde_json::from_str::<serde_json::Value>(&line).ok()?;
            v["listening"].as_str().map(str::to_string)
        })
    });
    match url {
        Some(url) => Ok((child, url)),
        None => {
            let status = child.wait();
            Err(format!("{} exited before listening ({status:?}; args {args:?})", bin.display()))
        }
    }
}

/// Stops a server the way an orchestrator does (SIGTERM), and waits for it.
pub fn stop_server(mut child: Child) {
    let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
    let _ = child.wait();
}

/// The server's `coordinator serve --help` text (to tell which flags this build has).
pub fn serve_help() -> String {
    Command::new(writerctl_bin())
        .args(["coordinator", "serve", "--help"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// `/metrics` as name (with labels) -> value; empty when the server does not answer.
pub fn metrics(url: &str) -> BTreeMap<String, f64> {
    let body = ureq::get(&format!("{url}/metrics"))
        .config()
        .timeout_global(Some(std::time::Duration::from_secs(10)))
        .build()
        .call()
        .ok()
        .and_then(|r| r.into_body().read_to_string().ok())
        .unwrap_or_default();
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' ').and_then(|(k, v)| Some((k.to_string(), v.parse().ok()?))))
        .collect()
}

/// The `q` quantile of sorted latencies, in milliseconds (0 when there are none).
pub fn pct(sorted: &[std::time::Duration], q: f64) -> f64 {
    sorted
        .get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1)))
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// An admin token file the server accepts (mode 0600, 64 random hex digits: 256 bits from
/// the OS generator, the form issue 39 point 6 asks servers to require) in `dir`, and the token.
pub fn admin_token_file(dir: &Path) -> (PathBuf, String) {
    let token = random_hex(32);
    (write_admin_token(dir, &token), token)
}

/// `token` written as an admin token file (mode 0600) in `dir`.
pub fn write_admin_token(dir: &Path, token: &str) -> PathBuf {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join("admin.token");
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path).unwrap();
    std::io::Write::write_all(&mut f, token.as_bytes()).unwrap();
    path
}

/// `bytes` random bytes from the OS generator, as lowercase hex.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    let mut filled = 0;
    while filled < bytes {
        filled += rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty()).unwrap();
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// A process's resident memory from `/proc/PID/status`, in KiB: now (`VmRSS`) and its
/// high-water mark (`VmHWM`, since start or since [`reset_hwm`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Mem {
    pub rss_kib: u64,
    pub hwm_kib: u64,
}

impl Mem {
    pub fn rss_mib(&self) -> f64 {
        self.rss_kib as f64 / 1024.0
    }
    pub fn hwm_mib(&self) -> f64 {
        self.hwm_kib as f64 / 1024.0
    }
}

/// [`Mem`] of `pid`, or None when it is gone.
pub fn proc_mem(pid: u32) -> Option<Mem> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some(Mem { rss_kib: field("VmRSS:")?, hwm_kib: field("VmHWM:")? })
}

/// Resets `pid`'s `VmHWM` to its current RSS (`echo 5 > /proc/PID/clear_refs`, Linux 4.0+;
/// needs the same user). False when the kernel refused: the high-water mark is then since start.
pub fn reset_hwm(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), b"5").is_ok()
}

/// The local Redis and Postgres (WRITERCTL_TEST_REDIS_URL / WRITERCTL_TEST_POSTGRES_URL,
/// default the local services), or None with the reason when either does not answer.
pub fn services() -> Result<(String, String), String> {
    let redis = std::env::var("WRITERCTL_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let postgres = std::env::var("WRITERCTL_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    postgres::Client::connect(&postgres, postgres::NoTls).map_err(|e| format!("Postgres: {e}"))?;
    redis::Client::open(redis.as_str()).and_then(|c| c.get_connection()).map_err(|e| format!("Redis: {e}"))?;
    Ok((redis, postgres))
}

/// The local services and a fresh namespace `<prefix>_<random>` for one run, or None after
/// printing why `label` is skipped.
pub fn services_or_skip(label: &str, prefix: &str) -> Option<(String, String, String)> {
    match services() {
        Ok((redis, postgres)) => {
            Some((redis, postgres, format!("{prefix}_{}", &uuid::Uuid::new_v4().simple().to_string()[..12])))
        }
        Err(why) => {
            println!("\n== {label}: skipped ({why}) ==");
            None
        }
    }
}

/// Removes a namespace's Redis keys (they carry the `{ns}` hash tag) and its Postgres schema.
pub fn drop_namespace(redis: &str, postgres: &str, ns: &str) {
    if let Ok(mut r) = redis::Client::open(redis).and_then(|c| c.get_connection()) {
        let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{{{ns}}}*")).query(&mut r).unwrap_or_default();
        for chunk in keys.chunks(500) {
            let _: Result<(), _> = redis::cmd("DEL").arg(chunk).query(&mut r);
        }
    }
    if let Ok(mut pg) = postgres::Client::connect(postgres, postgres::NoTls) {
        let _ = pg.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{ns}\" CASCADE"));
    }
}

/// Where a store's sizes are read from.
pub enum Backing {
    Sqlite(PathBuf),
    RedisPg { redis: String, postgres: String, ns: String },
}

/// A store's own sizes at one moment.
#[derive(Default, Clone)]
pub struct StoreSizes {
    pub sqlite_file: u64,
    pub sqlite_wal: u64,
    /// Redis `used_memory` (the whole server, other tenants included).
    pub redis_used: u64,
    /// Keys under the namespace, their `MEMORY USAGE` summed.
    pub ns_keys: u64,
    pub ns_bytes: u64,
    /// The namespace's key with the most elements (list, set, hash, sorted set, stream).
    pub longest: Option<(String, u64)>,
    /// Postgres tables of the namespace's schema with `pg_total_relation_size`.
    pub pg_tables: Vec<(String, i64)>,
}

impl StoreSizes {
    /// Bytes the store holds for this deployment: the SQLite file and WAL, or the
    /// namespace's Redis keys plus its Postgres relations.
    pub fn bytes(&self) -> i64 {
        (self.sqlite_file + self.sqlite_wal + self.ns_bytes) as i64 + self.pg_total()
    }

    pub fn pg_total(&self) -> i64 {
        self.pg_tables.iter().map(|(_, b)| b).sum()
    }
}

impl std::fmt::Display for StoreSizes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pg_tables.is_empty() && self.redis_used == 0 {
            return write!(f, "sqlite file {} KiB, wal {} KiB", self.sqlite_file / 1024, self.sqlite_wal / 1024);
        }
        let tables: Vec<String> = self.pg_tables.iter().map(|(t, b)| format!("{t} {} KiB", b / 1024)).collect();
        write!(
            f,
            "redis used_memory {} KiB, namespace {} keys {} KiB; postgres {}",
            self.redis_used / 1024,
            self.ns_keys,
            self.ns_bytes / 1024,
            tables.join(", ")
        )
    }
}

fn file_size(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

impl Backing {
    /// SQLite: moves the WAL into the file and truncates it (`PRAGMA wal_checkpoint(TRUNCATE)`
    /// from a connection of the bench's own; it changes no data), so that file + WAL measure
    /// what the store holds rather than how far the WAL has grown since the server started.
    /// False when the checkpoint could not complete (a reader or writer in the way): the
    /// sizes then include the WAL as it is. Nothing to do on Redis + Postgres.
    pub fn checkpoint(&self) -> bool {
        let Backing::Sqlite(path) = self else { return true };
        let Ok(conn) = rusqlite::Connection::open(path) else { return false };
        let _ = conn.busy_timeout(std::time::Duration::from_secs(2));
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0)).is_ok_and(|busy| busy == 0)
    }

    /// The store's sizes now (zeros for a part that does not answer).
    pub fn sizes(&self) -> StoreSizes {
        match self {
            Backing::Sqlite(path) => StoreSizes {
                sqlite_file: file_size(path),
                sqlite_wal: file_size(&PathBuf::from(format!("{}-wal", path.display()))),
                ..StoreSizes::default()
            },
            Backing::RedisPg { redis, postgres, ns } => {
                let mut s = redis_sizes(redis, ns).unwrap_or_default();
                s.pg_tables = pg_tables(postgres, ns).unwrap_or_default();
                s
            }
        }
    }
}

/// Redis `used_memory`, and the namespace's keys: count, bytes, the one with most elements.
fn redis_sizes(url: &str, ns: &str) -> redis::RedisResult<StoreSizes> {
    let mut r = redis::Client::open(url)?.get_connection()?;
    let info: String = redis::cmd("INFO").arg("memory").query(&mut r)?;
    let mut s = StoreSizes {
        redis_used: info
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0),
        ..StoreSizes::default()
    };
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{{{ns}}}*"))
            .arg("COUNT")
            .arg(1000)
            .query(&mut r)?;
        let mut p = redis::pipe();
        for k in &batch {
            p.cmd("MEMORY").arg("USAGE").arg(k).cmd("TYPE").arg(k);
        }
        let answers: Vec<redis::Value> = p.query(&mut r)?;
        let mut lengths = redis::pipe();
        let mut measured = Vec::new();
        for (k, pair) in batch.iter().zip(answers.chunks(2)) {
            s.ns_keys += 1;
            s.ns_bytes += redis::from_redis_value::<Option<u64>>(pair[0].clone()).ok().flatten().unwrap_or(0);
            let len_cmd = match redis::from_redis_value::<String>(pair[1].clone()).unwrap_or_default().as_str() {
                "list" => "LLEN",
                "set" => "SCARD",
                "zset" => "ZCARD",
                "hash" => "HLEN",
                "stream" => "XLEN",
                _ => continue,
            };
            lengths.cmd(len_cmd).arg(k);
            measured.push(k);
        }
        let lens: Vec<u64> = if measured.is_empty() { Vec::new() } else { lengths.query(&mut r)? };
        for (k, n) in measured.into_iter().zip(lens) {
            if s.longest.as_ref().is_none_or(|(_, m)| n > *m) {
                s.longest = Some((k.clone(), n));
            }
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    Ok(s)
}

/// The namespace's Postgres tables with their total relation size (indexes and TOAST in).
fn pg_tables(url: &str, ns: &str) -> Result<Vec<(String, i64)>, postgres::Error> {
    let mut pg = postgres::Client::connect(url, postgres::NoTls)?;
    Ok(pg
        .query(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname <> 'schema_migrations' ORDER BY 1",
            &[&ns],
        )?
        .iter()
        .map(|row| (row.get::<_, String>(0), row.get::<_, i64>(1)))
        .collect())
}
