//! Throwaway service processes a test (or `benches/failover.rs`, which includes this file)
//! starts on free loopback ports and kills on drop: `redis-server` (plain, TLS, replicas),
//! Redis Sentinels, Postgres clusters (`initdb`, `pg_ctl`, `pg_basebackup`), and a test CA.
//!
//! Self-contained on purpose (no `crate::` paths), so the bench can `#[path]`-include it.
//! A missing program is an `Err` naming it; callers skip loudly (`services::skip`).
#![allow(dead_code)] // the bench uses a part of it

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free loopback TCP port (bound, then released: a tiny race another process could win,
/// which shows up as a start failure, not a wrong result).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `name` on PATH, in /usr/local/bin, or in the newest /usr/lib/postgresql/*/bin.
pub fn program(name: &str) -> Result<PathBuf, String> {
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    dirs.push("/usr/local/bin".into());
    if let Ok(rd) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<PathBuf> = rd.flatten().map(|e| e.path().join("bin")).collect();
        versions.sort();
        dirs.extend(versions.into_iter().rev());
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file()).ok_or_else(|| format!("{name} is not installed"))
}

/// Polls `f` every 50 ms until it is true, for at most `limit`.
pub fn poll(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process killed (SIGKILL) and reaped on drop.
pub struct Proc {
    child: Option<Child>,
    pub what: String,
}

impl Proc {
    fn spawn(what: &str, cmd: &mut Command) -> Result<Proc, String> {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {what}: {e}"))?;
        Ok(Proc { child: Some(child), what: what.to_string() })
    }

    /// SIGKILL now (a crashed host), and reap.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---------------------------------------------------------------------------------------
// a test CA
// ---------------------------------------------------------------------------------------

/// A CA and one server certificate it signed, as PEM files in their own directory.
pub struct TestCa {
    pub dir: tempfile::TempDir,
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TestCa {
    /// A CA, and a server certificate for `names` (DNS names or IP addresses).
    pub fn new(names: &[&str]) -> TestCa {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "writerctl test CA");
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        params.distinguished_name.push(DnType::CommonName, names.first().copied().unwrap_or("server"));
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("ca.pem"), ca.pem()).unwrap();
        std::fs::write(p("server.pem"), cert.pem()).unwrap();
        std::fs::write(p("server.key"), key.serialize_pem()).unwrap();
        TestCa { ca: p("ca.pem"), cert: p("server.pem"), key: p("server.key"), dir }
    }
}

// ---------------------------------------------------------------------------------------
// Redis
// ---------------------------------------------------------------------------------------

/// A `redis-server` on a free port, without persistence; `extra` are more config options
/// (`--name value` pairs).
pub fn redis(dir: &Path, port: u16, extra: &[&str]) -> Result<Proc, String> {
    let bin = program("redis-server")?;
    // One directory per node: a replica's full sync writes an RDB file there.
    let dir = dir.join(format!("redis-{port}"));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(bin);
    cmd.args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"]);
    cmd.arg("--dir").arg(&dir).args(extra);
    let p = Proc::spawn(&format!("redis-server :{port}"), &mut cmd)?;
    if !poll(Duration::from_secs(10), || ping(port)) {
        return Err(format!("redis-server on port {port} did not answer"));
    }
    Ok(p)
}

/// A TLS-only `redis-server` (its plain port off) with `ca`'s server certificate.
pub fn redis_tls(dir: &Path, ca: &TestCa) -> Result<(Proc, u16), String> {
    let port = free_port();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (cert, key, root) = (s(&ca.cert), s(&ca.key), s(&ca.ca));
    let bin = program("redis-server")?;
    let mut cmd = Command::new(bin);
    cmd.args(["--bind", "127.0.0.1", "--port", "0", "--save", "", "--appendonly", "no"]);
    cmd.args(["--tls-port", &port.to_string(), "--tls-cert-file", &cert, "--tls-key-file", &key]);
    cmd.args(["--tls-ca-cert-file", &root, "--tls-auth-clients", "no"]).arg("--dir").arg(dir);
    let p = Proc::spawn(&format!("redis-server tls :{port}"), &mut cmd)?;
    let up = poll(Duration::from_secs(10), || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    if !up {
        return Err(format!("redis-server --tls-port {port} did not listen (built without TLS?)"));
    }
    Ok((p, port))
}

fn conn(port: u16) -> Option<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).ok()?;
    let c = client.get_connection_with_timeout(Duration::from_millis(500)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    Some(c)
}

pub fn ping(port: u16) -> bool {
    conn(port).is_some_and(|mut c| redis::cmd("PING").query::<String>(&mut c).is_ok())
}

/// `ROLE`'s first element ("master", "slave", "sentinel"), if the node answers.
pub fn role(port: u16) -> Option<String> {
    let mut c = conn(port)?;
    let v: redis::Value = redis::cmd("ROLE").query(&mut c).ok()?;
    match v {
        redis::Value::Array(items) => match items.first()? {
            redis::Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
            redis::Value::SimpleString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// One master, `replicas` replicas and three Sentinels (quorum 2) watching `name`, with a
/// short down-after (1 s) and failover timeout, so a failover takes seconds.
pub struct SentinelSet {
    pub dir: tempfile::TempDir,
    pub name: String,
    /// Data nodes: (process, port); the first is the initial master.
    pub nodes: Vec<(Proc, u16)>,
    pub sentinels: Vec<(Proc, u16)>,
}

/// How long a Sentinel waits before it calls a silent master down.
pub const DOWN_AFTER_MS: u64 = 1000;

impl SentinelSet {
    pub fn start(replicas: usize) -> Result<SentinelSet, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let name = "wmaster".to_string();
        let mp = free_port();
        let mut nodes = vec![(redis(dir.path(), mp, &[])?, mp)];
        let upstream = mp.to_string();
        for _ in 0..replicas {
            let p = free_port();
            let r = redis(dir.path(), p, &["--replicaof", "127.0.0.1", &upstream])?;
            nodes.push((r, p));
        }
        let bin = program("redis-sentinel").or_else(|_| program("redis-server"))?;
        let mut sentinels = Vec::new();
        for i in 0..3 {
            let port = free_port();
            let conf = dir.path().join(format!("sentinel-{i}.conf"));
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor {name} 127.0.0.1 {mp} 2\n\
                     sentinel down-after-milliseconds {name} {DOWN_AFTER_MS}\n\
                     sentinel failover-timeout {name} 5000\nsentinel parallel-syncs {name} 1\n",
                    dir.path().display()
                ),
            )
            .map_err(|e| e.to_string())?;
            let mut cmd = Command::new(&bin);
            cmd.arg(&conf).arg("--sentinel");
            sentinels.push((Proc::spawn(&format!("sentinel :{port}"), &mut cmd)?, port));
        }
        let set = SentinelSet { dir, name, nodes, sentinels };
        // A failover needs a majority of the Sentinels that know each other, and a replica
        // in sync: wait until every Sentinel sees the other two and every replica.
        let ready = poll(Duration::from_secs(30), || {
            set.sentinels.iter().all(|(_, p)| {
                set.sentinel_master_info(*p).is_some_and(|m| {
                    m.get("num-other-sentinels").map(String::as_str) == Some("2")
                        && m.get("num-slaves").and_then(|n| n.parse::<usize>().ok()) == Some(replicas)
                })
            }) && set.nodes[1..].iter().all(|(_, p)| replica_in_sync(*p))
        });
        if !ready {
            return Err("the sentinels did not discover each other and the replicas".into());
        }
        Ok(set)
    }

    /// `SENTINEL MASTER name` as a map, asked of the Sentinel on `port`.
    pub fn sentinel_master_info(&self, port: u16) -> Option<std::collections::HashMap<String, String>> {
        let mut c = conn(port)?;
        redis::cmd("SENTINEL").arg("MASTER").arg(&self.name).query(&mut c).ok()
    }

    /// The master address every answering Sentinel names (None while they disagree).
    pub fn agreed_master(&self) -> Option<u16> {
        let mut seen = None;
        for (_, p) in &self.sentinels {
            let Some(mut c) = conn(*p) else { continue };
            let (_, port): (String, u16) =
                redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg(&self.name).query(&mut c).ok()?;
            if seen.is_some_and(|s| s != port) {
                return None;
            }
            seen = Some(port);
        }
        seen
    }

    /// The Sentinel URL, `redis+sentinel://127.0.0.1:P1,.../wmaster`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.sentinels.iter().map(|(_, p)| format!("127.0.0.1:{p}")).collect();
        format!("redis+sentinel://{}/{}", hosts.join(","), self.name)
    }

    /// Data nodes that answer ROLE as a master right now.
    pub fn masters(&self) -> Vec<u16> {
        self.nodes.iter().map(|(_, p)| *p).filter(|p| role(*p).as_deref() == Some("master")).collect()
    }
}

/// Makes the master on `port` drop its replicas' connections (they reconnect by
/// themselves): writes in between reach no replica.
pub fn drop_replicas(port: u16) {
    if let Some(mut c) = conn(port) {
        let _ = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("replica").query::<redis::Value>(&mut c);
    }
}

fn replica_in_sync(port: u16) -> bool {
    let Some(mut c) = conn(port) else { return false };
    let info: String = redis::cmd("INFO").arg("replication").query(&mut c).unwrap_or_default();
    info.contains("master_link_status:up")
}

// ---------------------------------------------------------------------------------------
// Postgres
// ---------------------------------------------------------------------------------------

/// Postgres refuses to run as root: as root, its programs run as the `postgres` user.
fn pg_command(bin: &Path) -> Command {
    if rustix_is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin);
        c
    } else {
        Command::new(bin)
    }
}

fn rustix_is_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap_or(false)
}

fn run_ok(what: &str, cmd: &mut Command) -> Result<(), String> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }
}

/// Makes `path` (a directory this process created) usable by the user Postgres runs as.
fn hand_to_postgres(path: &Path) -> Result<(), String> {
    if !rustix_is_root() {
        return Ok(());
    }
    let out = Command::new("id").args(["-u", "postgres"]).output().map_err(|e| e.to_string())?;
    let uid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().map_err(|_| "no postgres user".to_string())?;
    let out = Command::new("id").args(["-g", "postgres"]).output().map_err(|e| e.to_string())?;
    let gid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().map_err(|_| "no postgres group".to_string())?;
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(|e| format!("chown {}: {e}", path.display()))
}

/// A throwaway Postgres cluster on a free port (trust auth on loopback), stopped on drop.
pub struct PgCluster {
    pub root: tempfile::TempDir,
    pub data: PathBuf,
    pub port: u16,
    running: bool,
}

impl PgCluster {
    fn dirs() -> Result<(tempfile::TempDir, PathBuf), String> {
        let root = tempfile::tempdir().map_err(|e| e.to_string())?;
        std::fs::set_permissions(root.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .map_err(|e| e.to_string())?;
        let data = root.path().join("data");
        std::fs::create_dir(&data).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&data, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .map_err(|e| e.to_string())?;
        hand_to_postgres(&data)?;
        // The log and the socket: somewhere the server's user may write.
        let run = root.path().join("run");
        std::fs::create_dir(&run).map_err(|e| e.to_string())?;
        hand_to_postgres(&run)?;
        Ok((root, data))
    }

    /// `initdb` a new cluster (not started). `conf` lines are appended to postgresql.conf.
    pub fn init(conf: &str) -> Result<PgCluster, String> {
        let initdb = program("initdb")?;
        program("pg_ctl")?;
        let (root, data) = Self::dirs()?;
        run_ok("initdb", pg_command(&initdb).args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"]).arg(&data))?;
        let port = free_port();
        let mut c = PgCluster { root, data, port, running: false };
        c.append_conf(conf)?;
        Ok(c)
    }

    /// A streaming standby of `primary` (`pg_basebackup -R`), not started.
    pub fn standby_of(primary: &PgCluster) -> Result<PgCluster, String> {
        let bb = program("pg_basebackup")?;
        let (root, data) = Self::dirs()?;
        run_ok(
            "pg_basebackup",
            pg_command(&bb)
                .args([
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &primary.port.to_string(),
                    "-U",
                    "postgres",
                    "-R",
                    "-X",
                    "stream",
                    "-D",
                ])
                .arg(&data),
        )?;
        let port = free_port();
        Ok(PgCluster { root, data, port, running: false })
    }

    fn append_conf(&mut self, conf: &str) -> Result<(), String> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(self.data.join("postgresql.conf"))
            .map_err(|e| e.to_string())?;
        writeln!(f, "\n{conf}").map_err(|e| e.to_string())
    }

    /// Copies a certificate and key into the data directory, owned by Postgres, and turns
    /// TLS on.
    pub fn enable_ssl(&mut self, ca: &TestCa) -> Result<(), String> {
        for (from, to) in [(&ca.cert, "server.crt"), (&ca.key, "server.key")] {
            let dest = self.data.join(to);
            std::fs::copy(from, &dest).map_err(|e| e.to_string())?;
            std::fs::set_permissions(&dest, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .map_err(|e| e.to_string())?;
            hand_to_postgres(&dest)?;
        }
        self.append_conf("ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'")
    }

    pub fn start(&mut self) -> Result<(), String> {
        let pg_ctl = program("pg_ctl")?;
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -c port={} -c unix_socket_directories='{}' -c fsync=off",
            self.port,
            self.root.path().join("run").display()
        );
        run_ok(
            "pg_ctl start",
            pg_command(&pg_ctl)
                .args(["-w", "-t", "60", "-l"])
                .arg(self.root.path().join("run/log"))
                .arg("-o")
                .arg(opts)
                .arg("-D")
                .arg(&self.data)
                .arg("start"),
        )?;
        self.running = true;
        Ok(())
    }

    /// `pg_ctl stop -m immediate`: a crash, as far as clients can tell.
    pub fn stop(&mut self) -> Result<(), String> {
        let pg_ctl = program("pg_ctl")?;
        self.running = false;
        run_ok("pg_ctl stop", pg_command(&pg_ctl).args(["-m", "immediate", "-w", "-D"]).arg(&self.data).arg("stop"))
    }

    pub fn promote(&self) -> Result<(), String> {
        let pg_ctl = program("pg_ctl")?;
        run_ok("pg_ctl promote", pg_command(&pg_ctl).args(["-w", "-D"]).arg(&self.data).arg("promote"))
    }

    /// The server log, for a failure message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.path().join("run/log")).unwrap_or_default()
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        if self.running {
            let _ = self.stop();
        }
    }
}
