//! `writerctl coordinator serve` end to end: the real server binary, driven by the real CLI
//! over HTTP(S), over the embedded SQLite store and over Redis + Postgres.
//!
//! * The 12 seed acceptance tests (SPEC-082) reuse the `check_seed_NN` bodies of the
//!   `master_<verb>.rs` files on a server over SQLite (`http_sqlite_seed_*`) and over Redis +
//!   Postgres (`http_redis_pg_seed_*`).
//! * Replicas, Redis-first while Postgres is down, cold restore, admin token, TLS, graceful
//!   shutdown, logs, `/healthz` `/metrics` `/openapi.json`, and parity with the embedded
//!   store.
//!
//! Services: Redis at `WRITERCTL_TEST_REDIS_URL` (default redis://127.0.0.1:6379) and
//! PostgreSQL at `WRITERCTL_TEST_POSTGRES_URL` (default postgres://postgres@127.0.0.1:5432/test),
//! one namespace (Redis key prefix + Postgres schema) per test, removed afterwards.
//! Unreachable services (or a missing `openssl`) skip a test with a loud `SKIPPED` line, or
//! fail it under `WRITERCTL_REQUIRE_SERVICES=1`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::master::{
    Co, Ctl, LIMIT, MixedRace, PASSWORD, PROJECT, Racer, assert_one_winner, assert_preempted, err_doc, exec, mref,
    ok_doc, race, s, strings, trial_targets, wait_bounded,
};
use crate::master_claim::{check_seed_07, check_seed_08};
use crate::master_handoff::{check_seed_01, check_seed_02, check_seed_12};
use crate::master_inbox::check_seed_10;
use crate::master_race::check_seed_09;
use crate::master_status::check_seed_11;
use crate::master_target::{check_seed_03, check_seed_04, check_seed_05, check_seed_06};
use crate::services::{Ns, Proxy, counts, postgres_addr, redis_via, skip, wait_until};
use crate::support::{BIN, Follower, Run, is_iso_ms};

/// How long a server may take to print its listening line (a loaded machine, a cold
/// Postgres schema migration).
const START_LIMIT: Duration = Duration::from_secs(60);
/// How long a stopped server may take to exit (it finishes in-flight requests, up to 10 s).
const STOP_LIMIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// the server process
// ---------------------------------------------------------------------------------------

/// One `writerctl coordinator serve` process: started on port 0, its URL read from the one
/// stdout line, its stderr captured; stopped with SIGTERM (and waited for) on drop.
pub(crate) struct Server {
    child: Option<Child>,
    pub(crate) url: String,
    /// The listening line exactly as printed.
    pub(crate) line: String,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Whatever stdout printed after the listening line.
    stdout_rest: Arc<Mutex<Vec<u8>>>,
    threads: Vec<JoinHandle<()>>,
    exit: Option<i32>,
}

/// How a server start went, when the caller expects it may fail.
pub(crate) enum Started {
    Up(Server),
    /// It exited (or hung) without a listening line: (exit code or -1, stdout, stderr).
    Failed(i32, String, String),
}

fn collect(mut r: impl Read + Send + 'static, into: Arc<Mutex<Vec<u8>>>) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => into.lock().unwrap().extend_from_slice(&buf[..n]),
            }
        }
    })
}

impl Server {
    /// `writerctl coordinator serve --listen 127.0.0.1:0 ARGS` with a cleared environment
    /// (HOME and TMPDIR in `home`) plus `envs`. Panics (with the server's stderr) when no
    /// listening line comes.
    pub(crate) fn start(home: &Path, args: &[String], envs: &[(String, String)]) -> Server {
        match Server::try_start(home, args, envs) {
            Started::Up(s) => s,
            Started::Failed(code, out, err) => {
                panic!("the server did not start (exit {code}): args {args:?}\nstdout:\n{out}\nstderr:\n{err}")
            }
        }
    }

    pub(crate) fn try_start(home: &Path, args: &[String], envs: &[(String, String)]) -> Started {
        let mut c = Command::new(BIN);
        c.env_clear()
            .env("HOME", home)
            .env("TMPDIR", home)
            .env("PATH", "/usr/bin:/bin")
            .env("XDG_STATE_HOME", home.join("state"))
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .args(["coordinator", "serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stdout_rest = Arc::new(Mutex::new(Vec::new()));
        let err_thread = collect(child.stderr.take().unwrap(), stderr.clone());
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let rest = stdout_rest.clone();
        let out_thread = thread::spawn(move || {
            let mut first = String::new();
            if out.read_line(&mut first).unwrap_or(0) > 0 {
                let _ = tx.send(first);
            }
            let mut v = Vec::new();
            let _ = out.read_to_end(&mut v);
            rest.lock().unwrap().extend_from_slice(&v);
        });
        let threads = vec![err_thread, out_thread];
        match rx.recv_timeout(START_LIMIT) {
            Ok(line) => {
                let line = line.trim_end_matches('\n').to_string();
                let url = match line.strip_prefix("listening on ") {
                    Some(u) => u.to_string(),
                    None => serde_json::from_str::<Value>(&line)
                        .ok()
                        .and_then(|v| v["listening"].as_str().map(str::to_string))
                        .unwrap_or_else(|| panic!("unexpected first stdout line {line:?}")),
                };
                Started::Up(Server { child: Some(child), url, line, stderr, stdout_rest, threads, exit: None })
            }
            Err(_) => {
                let _ = child.kill();
                let status = child.wait().unwrap();
                for t in threads {
                    let _ = t.join();
                }
                let err = String::from_utf8_lossy(&stderr.lock().unwrap()).into_owned();
                let out = String::from_utf8_lossy(&stdout_rest.lock().unwrap()).into_owned();
                Started::Failed(status.code().unwrap_or(-1), out, err)
            }
        }
    }

    /// The process id (while it runs).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Everything the server wrote to stderr so far.
    pub(crate) fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Everything stdout held after the listening line (complete once stopped).
    pub(crate) fn stdout_rest(&self) -> String {
        String::from_utf8_lossy(&self.stdout_rest.lock().unwrap()).into_owned()
    }

    /// Sends `sig` (the process is ours and still unreaped, so its pid is still its own).
    pub(crate) fn signal(&self, sig: rustix::process::Signal) {
        if let Some(c) = &self.child {
            let _ = rustix::process::kill_process(rustix::process::Pid::from_child(c), sig);
        }
    }

    /// Sends `sig` and waits (bounded) for the exit code; SIGKILL after [`STOP_LIMIT`] (then
    /// the code is -1). Idempotent.
    pub(crate) fn stop_with(&mut self, sig: rustix::process::Signal) -> i32 {
        self.signal(sig);
        self.wait()
    }

    /// Waits (bounded) for the process to exit on its own; SIGKILL after [`STOP_LIMIT`] (the
    /// code is then -1). Idempotent.
    pub(crate) fn wait(&mut self) -> i32 {
        if let Some(code) = self.exit {
            return code;
        }
        let Some(mut child) = self.child.take() else { return -1 };
        let deadline = Instant::now() + STOP_LIMIT;
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                break child.wait().unwrap();
            }
            thread::sleep(Duration::from_millis(10));
        };
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let code = status.code().unwrap_or(-1);
        self.exit = Some(code);
        code
    }

    pub(crate) fn stop(&mut self) -> i32 {
        self.stop_with(rustix::process::Signal::TERM)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let code = self.stop();
        if thread::panicking() {
            let _ = writeln!(std::io::stderr(), "--- server {} (exit {code}) stderr:\n{}", self.url, self.stderr());
        }
    }
}

// ---------------------------------------------------------------------------------------
// a deployment: the store and the servers over it
// ---------------------------------------------------------------------------------------

/// What the servers store in.
pub(crate) enum Backing {
    Sqlite(PathBuf),
    RedisPg { ns: Ns, redis: String, postgres: String },
}

/// Servers over one store, started on demand: one per (freshness threshold, replica
/// number). `Co::url_for` routes a command that passes `--freshness-seconds N` to a server
/// started with `--freshness-seconds N` (the client's value is ignored over HTTP).
pub(crate) struct Deployment {
    /// Declared first so they stop first (before the namespace is dropped).
    servers: Mutex<BTreeMap<(u64, usize), Server>>,
    /// stderr of every server stopped so far.
    logs: Mutex<String>,
    home: PathBuf,
    pub(crate) backing: Backing,
    pub(crate) admin_token: Option<String>,
    admin_file: Option<PathBuf>,
    extra_args: Vec<String>,
    server_env: Vec<(String, String)>,
    client_env: Vec<(String, String)>,
}

impl Deployment {
    fn with(home: &Path, backing: Backing) -> Deployment {
        // What `coordinator admin-token new` writes (64 random hex digits, issue 39 point
        // 8), with a trailing newline (the server trims it).
        let token = writerctl::claim::secret::new_admin_token().unwrap().expose().to_string();
        let admin_file = home.join("admin.token");
        std::fs::write(&admin_file, format!("{token}\n")).unwrap();
        // The server refuses an admin token file other users can read (issue 28 point 6).
        std::fs::set_permissions(&admin_file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        Deployment {
            servers: Mutex::default(),
            logs: Mutex::default(),
            home: home.to_path_buf(),
            backing,
            admin_token: Some(token),
            admin_file: Some(admin_file),
            extra_args: Vec::new(),
            server_env: Vec::new(),
            client_env: Vec::new(),
        }
    }

    /// Servers over the SQLite file `store`, with an admin token.
    pub(crate) fn sqlite(home: &Path, store: &Path) -> Deployment {
        Deployment::with(home, Backing::Sqlite(store.to_path_buf()))
    }

    /// Servers over Redis + Postgres in `ns`, with an admin token.
    pub(crate) fn redis_pg(home: &Path, ns: Ns) -> Deployment {
        let (redis, postgres) = (ns.redis_url.clone(), ns.postgres_url.clone());
        Deployment::redis_pg_via(home, ns, redis, postgres)
    }

    /// Servers over Redis + Postgres in `ns`, reaching them at these addresses (proxies).
    fn redis_pg_via(home: &Path, ns: Ns, redis: String, postgres: String) -> Deployment {
        Deployment::with(home, Backing::RedisPg { ns, redis, postgres })
    }

    /// Servers started without `--admin-token-file` (clients still send the token).
    fn without_admin_file(mut self) -> Deployment {
        self.admin_file = None;
        self
    }

    pub(crate) fn server_args(mut self, args: &[&str]) -> Deployment {
        self.extra_args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    pub(crate) fn server_env(mut self, k: &str, v: &str) -> Deployment {
        self.server_env.push((k.into(), v.into()));
        self
    }

    fn client_env_var(mut self, k: &str, v: &str) -> Deployment {
        self.client_env.push((k.into(), v.into()));
        self
    }

    /// The namespace, for a deployment over Redis + Postgres.
    fn ns(&self) -> &Ns {
        match &self.backing {
            Backing::RedisPg { ns, .. } => ns,
            Backing::Sqlite(_) => panic!("not a Redis + Postgres deployment"),
        }
    }

    /// What a client needs: the admin token (and whatever the test added).
    pub(crate) fn client_env(&self) -> Vec<(String, String)> {
        let mut v = self.client_env.clone();
        if let Some(t) = &self.admin_token {
            v.push(("WRITERCTL_ADMIN_TOKEN".into(), t.clone()));
        }
        v
    }

    fn args(&self, freshness: u64) -> Vec<String> {
        let mut a: Vec<String> = match &self.backing {
            Backing::Sqlite(p) => vec!["--store".into(), format!("sqlite:{}", p.display())],
            Backing::RedisPg { ns, redis, postgres } => vec![
                "--redis".into(),
                redis.clone(),
                "--postgres".into(),
                postgres.clone(),
                "--namespace".into(),
                ns.name.clone(),
            ],
        };
        if let Some(f) = &self.admin_file {
            a.extend(["--admin-token-file".into(), f.display().to_string()]);
        }
        a.extend(["--freshness-seconds".into(), freshness.to_string()]);
        a.extend(self.extra_args.iter().cloned());
        a
    }

    /// The URL of replica `i` of the servers with this freshness threshold (started now if
    /// it is not running).
    pub(crate) fn replica(&self, freshness: u64, i: usize) -> String {
        let mut servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        servers
            .entry((freshness, i))
            .or_insert_with(|| Server::start(&self.home, &self.args(freshness), &self.server_env))
            .url
            .clone()
    }

    /// The process id of the (first) server with this freshness threshold (started now if
    /// it is not running).
    pub(crate) fn pid(&self, freshness: u64) -> u32 {
        self.replica(freshness, 0);
        let servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        servers[&(freshness, 0)].pid().expect("a running server")
    }

    /// The URL of the (first) server with this freshness threshold.
    pub(crate) fn url(&self, freshness: u64) -> String {
        self.replica(freshness, 0)
    }

    /// Stops every server (SIGTERM) and returns their exit codes; their stderr is kept.
    pub(crate) fn stop_all(&self) -> Vec<i32> {
        let servers = std::mem::take(&mut *self.servers.lock().unwrap_or_else(|p| p.into_inner()));
        let mut codes = Vec::new();
        for (_, mut srv) in servers {
            codes.push(srv.stop());
            self.logs.lock().unwrap().push_str(&srv.stderr());
        }
        codes
    }

    /// Takes replica `i` of the servers with this threshold out of the deployment (starting
    /// it if needed), for a test that stops it itself.
    pub(crate) fn take(&self, freshness: u64, i: usize) -> Server {
        self.replica(freshness, i);
        self.servers.lock().unwrap().remove(&(freshness, i)).unwrap()
    }

    /// stderr of every server, stopped or running.
    pub(crate) fn all_logs(&self) -> String {
        let mut s = self.logs.lock().unwrap().clone();
        for srv in self.servers.lock().unwrap().values() {
            s.push_str(&srv.stderr());
        }
        s
    }
}

// ---------------------------------------------------------------------------------------
// plain HTTP
// ---------------------------------------------------------------------------------------

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// (status, content type, body) of a response.
fn answer(r: Result<ureq::http::Response<ureq::Body>, ureq::Error>, what: &str) -> (u16, String, String) {
    let mut r = r.unwrap_or_else(|e| panic!("{what}: {e}"));
    let ct = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let body = r.body_mut().read_to_string().unwrap_or_default();
    (r.status().as_u16(), ct, body)
}

pub(crate) fn http_get(url: &str) -> (u16, String, String) {
    answer(agent().get(url).call(), url)
}

pub(crate) fn http_post(url: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String, String) {
    let mut req = agent().post(url).header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    answer(req.send(body), url)
}

/// The JSON error document of an HTTP error answer; returns its code.
#[track_caller]
pub(crate) fn http_error_code(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not a JSON error ({e}): {body:?}"));
    assert!(v["error"]["message"].is_string(), "{v}");
    v["error"]["code"].as_str().unwrap_or_else(|| panic!("no error.code: {v}")).to_string()
}

/// `writerctl_audit_retry_queue_depth` from `/metrics`, when the gauge is there.
fn queue_depth(base: &str) -> Option<u64> {
    let (status, _, body) = http_get(&format!("{base}/metrics"));
    assert_eq!(status, 200, "{body}");
    body.lines().find_map(|l| l.strip_prefix("writerctl_audit_retry_queue_depth ")).map(|n| n.trim().parse().unwrap())
}

/// A metric line's value, e.g. `writerctl_verbs_total{verb="x",result="ok"}`.
pub(crate) fn metric(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

// ---------------------------------------------------------------------------------------
// small CLI helpers
// ---------------------------------------------------------------------------------------

/// `args` against `url` (instead of the Co's own routing), with the Co's client environment
/// plus `vars`, minus `remove`.
fn run_at(co: &Co, url: &str, args: &[&str], vars: &[(&str, &str)], remove: &[&str]) -> Run {
    let mut c = co.base();
    c.args(args).arg("--coordinator").arg(url);
    c.envs(vars.iter().copied());
    for k in remove {
        c.env_remove(k);
    }
    exec(c, None)
}

fn run_at_stdin(co: &Co, url: &str, args: &[&str], vars: &[(&str, &str)], remove: &[&str], input: &[u8]) -> Run {
    let mut c = co.base();
    c.args(args).arg("--coordinator").arg(url);
    c.envs(vars.iter().copied());
    for k in remove {
        c.env_remove(k);
    }
    exec(c, Some(input))
}

/// A port on 127.0.0.1 that nothing listens on (bound, then released).
fn dead_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One racer: a label, its arguments, the server it talks to, a delay after the barrier.
fn deployment(co: &Co) -> &Deployment {
    co.http.as_ref().expect("an HTTP deployment")
}

// ---------------------------------------------------------------------------------------
// 1. the seed's 12 acceptance tests over HTTP (bodies in the master_<verb>.rs files)
// ---------------------------------------------------------------------------------------

#[test]
fn http_sqlite_seed_01_cooperative_handoff() {
    check_seed_01(&Co::http_sqlite());
}
#[test]
fn http_sqlite_seed_02_not_master_rejected() {
    check_seed_02(&Co::http_sqlite());
}
#[test]
fn http_sqlite_seed_03_target_not_registered() {
    check_seed_03(&Co::http_sqlite());
}
#[test]
fn http_sqlite_seed_04_target_stale() {
    check_seed_04(&Co::http_sqlite());
}
#[test]
fn http_sqlite_seed_05_target_ambiguous() {
    check_seed_05(&Co::http_sqlite());
}
#[test]
fn http_sqlite_seed_06_to_session_disambiguates() {
    check_seed_06(&Co::http_sqlite());
}
#[test]
fn http_sqlite_seed_07_invalid_operator_credentials() {
    check_seed_07(&Co::http_sqlite());
}
#[test]
fn http_sqlite_seed_08_claim_promotes_named_target() {
    check_seed_08(&Co::http_sqlite());
}
#[test]
fn http_sqlite_seed_09_concurrent_exactly_one_wins() {
    check_seed_09(&Co::http_sqlite());
}
#[test]
fn http_sqlite_seed_10_master_preempted_payload() {
    check_seed_10(&Co::http_sqlite());
}
#[test]
fn http_sqlite_seed_11_status_reflects_new_master() {
    check_seed_11(&Co::http_sqlite());
}
#[test]
fn http_sqlite_seed_12_cross_machine_handoff() {
    check_seed_12(&Co::http_sqlite());
}

#[test]
fn http_redis_pg_seed_01_cooperative_handoff() {
    let Some(co) = Co::http_redis_pg("http_redis_pg_seed_01_cooperative_handoff") else { return };
    check_seed_01(&co);
}
#[test]
fn http_redis_pg_seed_02_not_master_rejected() {
    let Some(co) = Co::http_redis_pg("http_redis_pg_seed_02_not_master_rejected") else { return };
    check_seed_02(&co);
}
#[test]
fn http_redis_pg_seed_03_target_not_registered() {
    let Some(co) = Co::http_redis_pg("http_redis_pg_seed_03_target_not_registered") else { return };
    check_seed_03(&co);
}
#[test]
fn http_redis_pg_seed_04_target_stale() {
    let Some(co) = Co::http_redis_pg("http_redis_pg_seed_04_target_stale") else { return };
    check_seed_04(&co);
}
#[test]
fn http_redis_pg_seed_05_target_ambiguous() {
    let Some(co) = Co::http_redis_pg("http_redis_pg_seed_05_target_ambiguous") else { return };
    check_seed_05(&co);
}
#[test]
fn http_redis_pg_seed_06_to_session_disambiguates() {
    let Some(co) = Co::http_redis_pg("http_redis_pg_seed_06_to_session_disambiguates") else { return };
    check_seed_06(&co);
}
#[test]
fn http_redis_pg_seed_07_invalid_operator_credentials() {
    let Some(co) = Co::http_redis_pg("http_redis_pg_seed_07_invalid_operator_credentials") else { return };
    check_seed_07(&co);
}
#[test]
fn http_redis_pg_seed_08_claim_promotes_named_target() {
    let Some(co) = Co::http_redis_pg("http_redis_pg_seed_08_claim_promotes_named_target") else { return };
    check_seed_08(&co);
}
#[test]
fn http_redis_pg_seed_09_concurrent_exactly_one_wins() {
    let Some(co) = Co::http_redis_pg("http_redis_pg_seed_09_concurrent_exactly_one_wins") else { return };
    check_seed_09(&co);
}
#[test]
fn http_redis_pg_seed_10_master_preempted_payload() {
    let Some(co) = Co::http_redis_pg("http_redis_pg_seed_10_master_preempted_payload") else { return };
    check_seed_10(&co);
}
#[test]
fn http_redis_pg_seed_11_status_reflects_new_master() {
    let Some(co) = Co::http_redis_pg("http_redis_pg_seed_11_status_reflects_new_master") else { return };
    check_seed_11(&co);
}
#[test]
fn http_redis_pg_seed_12_cross_machine_handoff() {
    let Some(co) = Co::http_redis_pg("http_redis_pg_seed_12_cross_machine_handoff") else { return };
    check_seed_12(&co);
}

// ---------------------------------------------------------------------------------------
// helpers for the tests below
// ---------------------------------------------------------------------------------------

/// Registers `identity` through the server at `url` (with a token file); the `Ctl` of it.
#[track_caller]
fn register_at(co: &Co, url: &str, identity: &str, machine: &str) -> Ctl {
    let tf = co.file(&format!("{identity}.tok"));
    let kf = co.key_file(identity);
    let r = run_at(
        co,
        url,
        &[
            "session",
            "register",
            "--project",
            PROJECT,
            "--identity",
            identity,
            "--machine",
            machine,
            "--token-file",
            s(&tf),
            "--identity-key-file",
            s(&kf),
            "--json",
        ],
        &[],
        &[],
    );
    let v = ok_doc(&r);
    let token = std::fs::read_to_string(&tf).unwrap().trim_end().to_string();
    co.tokens.lock().unwrap().insert(identity.to_string(), tf.clone());
    Ctl { identity: identity.into(), sid: v["session_id"].as_str().unwrap().into(), token, token_file: tf }
}

/// `master status --json` through the server at `url`.
#[track_caller]
fn status_at(co: &Co, url: &str) -> Value {
    ok_doc(&run_at(co, url, &["master", "status", "--project", PROJECT, "--json"], &[], &[]))
}

/// A status document without the time it was read (and so comparable across reads).
fn timeless(mut st: Value) -> Value {
    st.as_object_mut().unwrap().remove("read_at");
    st
}

// ---------------------------------------------------------------------------------------
// 2. two replicas over one Redis + Postgres: exactly one winner
// ---------------------------------------------------------------------------------------

/// Two `serve` processes on one namespace; 16 CLI processes (10 handoffs by the master, 6
/// claims by 6 different operators) spread over both replicas, all from one epoch: exactly
/// one exits 0, 15 get `stale_master`, and both replicas report the winner. 20 trials.
#[test]
fn two_replicas_one_winner() {
    const N: usize = 16;
    const TRIALS: u64 = 20;
    let Some(co) = Co::http_redis_pg("two_replicas_one_winner") else { return };
    let d = deployment(&co);
    // A long freshness threshold: the targets registered once must stay fresh all along.
    let urls = [d.replica(86_400, 0), d.replica(86_400, 1)];
    assert_ne!(urls[0], urls[1]);
    let ids: Vec<Ctl> = (0..=N).map(|i| register_at(&co, &urls[i % 2], &format!("id{i:02}"), "m1")).collect();
    // One operator per claimer: the throttle counts every attempt of one operator before
    // verifying, so one operator's parallel claims would queue behind each other.
    let operators: Vec<String> = (0..N).map(|i| format!("ops{i}")).collect();
    for (i, op) in operators.iter().enumerate() {
        let r = run_at_stdin(
            &co,
            &urls[i % 2],
            &["operator", "add", op, "--password-stdin", "--json"],
            &[],
            &[],
            format!("{PASSWORD}\n").as_bytes(),
        );
        assert_eq!(ok_doc(&r), json!({"operator_id": op, "created": true}));
    }
    let pw = co.pw_file(PASSWORD);
    let mut st = status_at(&co, &urls[1]);
    assert_eq!(st["master"]["epoch"], 1);
    let mut wins = BTreeMap::<&str, u64>::new();
    for trial in 0..TRIALS {
        let epoch = st["master"]["epoch"].as_u64().unwrap();
        assert_eq!(epoch, 1 + trial);
        let (master, targets) = trial_targets(&ids, &st, trial);
        let e = epoch.to_string();
        // On odd trials the handoffs wait 100 ms so that the claims (argon2 first) win too.
        let handoff_delay = if trial % 2 == 1 { 100 } else { 0 };
        let racers: Vec<Racer> = targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let url = urls[(i + trial as usize) % 2].clone();
                let race = MixedRace { master, pw: &pw, epoch: &e, handoff_delay, extra: &[] };
                race.racer(t, &operators[i], (i + trial as usize) % 8 >= 3, Some(url))
            })
            .collect();
        assert_eq!(racers.iter().filter(|r| r.label.starts_with("claim:")).count(), 6);
        let results = race(&co, &racers);
        let w = assert_one_winner(&results, &targets, epoch, trial);
        let target = targets[w];
        // Both replicas agree, at once.
        let a = status_at(&co, &urls[0]);
        let b = status_at(&co, &urls[1]);
        let expect = json!({"identity": target.identity, "session_id": target.sid, "epoch": epoch + 1});
        assert_eq!((&a["master"], &b["master"]), (&expect, &expect), "trial {trial}");
        assert_eq!(a["controllers"], b["controllers"], "trial {trial}");
        let flagged: Vec<&Value> =
            a["controllers"].as_array().unwrap().iter().filter(|c| c["is_master"] == true).collect();
        assert_eq!(flagged.len(), 1, "trial {trial}: {a:#}");
        assert_eq!(flagged[0]["session_id"], json!(target.sid));
        *wins.entry(if results[w].0.starts_with("handoff") { "handoff" } else { "claim" }).or_default() += 1;
        st = b;
    }
    eprintln!("two_replicas_one_winner: wins by verb {wins:?}");
    // One MasterPreempted per trial across all inboxes, whichever replica reads them.
    let events: usize = ids
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let r = run_at(
                &co,
                &urls[i % 2],
                &[
                    "inbox",
                    "--project",
                    PROJECT,
                    "--identity",
                    &c.identity,
                    "--token-file",
                    s(&co.token_of(&c.identity)),
                    "--json",
                ],
                &[],
                &[],
            );
            ok_doc(&r)["events"].as_array().unwrap().len()
        })
        .collect::<Vec<_>>()
        .iter()
        .sum();
    assert_eq!(events as u64, TRIALS);
    // Postgres got every verb exactly once, from whichever replica ran it.
    let ns = d.ns();
    wait_until(Duration::from_secs(30), "the Postgres queue drains", || queue_depth(&urls[0]) == Some(0));
    let pg = ns.pg_audit_counts(PROJECT);
    let n = |verb: &str, result: &str| pg.get(&(verb.to_string(), result.to_string())).copied().unwrap_or(0);
    let ok = n("master.handoff", "ok") + n("master.claim", "ok");
    let stale = n("master.handoff", "stale_master") + n("master.claim", "stale_master");
    assert_eq!((ok, stale), (TRIALS as i64, 15 * TRIALS as i64), "{pg:#?}");
    let (rows, distinct) = ns.pg_audit_ids();
    assert_eq!(rows, distinct, "an audit row went in twice");
    assert_eq!(ns.pg_master(PROJECT).0, 1 + TRIALS as i64);
}

// ---------------------------------------------------------------------------------------
// 3. Redis first while Postgres is down
// ---------------------------------------------------------------------------------------

/// A server over Redis + Postgres in a namespace of its own, reaching Postgres through a
/// proxy the test can cut (the proxy outlives the servers: bound first, dropped last).
fn behind_postgres_proxy(test: &str) -> Option<(Proxy, Co)> {
    let ns = Ns::new(test)?;
    let proxy = Proxy::start(postgres_addr(&ns.postgres_url));
    let via = proxy.postgres_url(&ns.postgres_url);
    let redis = ns.redis_url.clone();
    let co = Co::http(|home, _| Deployment::redis_pg_via(home, ns, redis, via));
    Some((proxy, co))
}

/// Postgres cut (behind a proxy): a handoff still succeeds and `master status` shows the new
/// master at once; the writes wait in the queue (`/metrics`); once Postgres is back the
/// background writer lands every audit row exactly once and the queue empties.
#[test]
fn redis_first_status_while_postgres_is_down() {
    let Some((proxy, co)) = behind_postgres_proxy("redis_first_status_while_postgres_is_down") else { return };
    let d = deployment(&co);
    let url = d.url(30);
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    wait_until(Duration::from_secs(30), "the registrations reach Postgres", || queue_depth(&url) == Some(0));
    assert_eq!(d.ns().pg_master(PROJECT), (1, Some(alice.sid.clone())));

    proxy.cut();
    let v = ok_doc(&co.handoff(&alice, "bob", &["--expect-epoch", "1"]));
    assert_eq!((&v["new_master"], &v["epoch"], &v["changed"]), (&mref(&bob), &json!(2), &json!(true)));
    // Right after the verb, from Redis.
    co.assert_master(Some(&bob), 2);
    err_doc(&co.handoff(&alice, "bob", &[]), 3, "not_master");
    co.ok(&["session", "heartbeat", "--project", PROJECT, "--session", &bob.sid, "--token-file", s(&bob.token_file)]);
    let evs = co.events("alice");
    assert_eq!(evs.len(), 1);
    assert_preempted(&evs[0], &alice, &bob, 2, None);
    let depth = queue_depth(&url).expect("the queue depth gauge on a Redis + Postgres server");
    assert!(depth >= 3, "three writes wait for Postgres, the gauge says {depth}");
    // Health covers both planes: Postgres is down.
    let (status, _, body) = http_get(&format!("{url}/healthz"));
    assert_eq!(status, 503, "{body}");
    assert_eq!(http_error_code(&body), "coordinator_unavailable");
    // Postgres (read directly) has not seen any of it.
    let pg = d.ns().pg_audit_counts(PROJECT);
    assert_eq!(pg, counts(&[("identity.add", "ok", 2), ("session.register", "ok", 2)]), "{pg:#?}");

    proxy.restore();
    wait_until(Duration::from_secs(30), "the background writer drains the queue", || queue_depth(&url) == Some(0));
    let ns = d.ns();
    assert_eq!(
        ns.pg_audit_counts(PROJECT),
        counts(&[
            ("identity.add", "ok", 2),
            ("session.register", "ok", 2),
            ("master.handoff", "ok", 1),
            ("master.handoff", "not_master", 1),
        ]),
        "each audit row exactly once (a routine heartbeat queues its row state, no audit row)"
    );
    let (rows, distinct) = ns.pg_audit_ids();
    assert_eq!(rows, distinct);
    assert_eq!(ns.pg_master(PROJECT), (2, Some(bob.sid.clone())));
    wait_until(Duration::from_secs(30), "/healthz answers 200 again", || http_get(&format!("{url}/healthz")).0 == 200);
    co.assert_master(Some(&bob), 2);
}

/// Issue 20: Postgres unreachable for a while under load (heartbeats from four clients).
/// Verbs keep working; `/readyz` stays 200 and says `degraded` (so a readiness probe keeps
/// the fleet in service) while `/livez` answers; the background writer waits out its
/// back-off instead of retrying on every verb's wake-up, so the outage costs a few log
/// lines, not one per attempt (before: 100-113 a second); once Postgres is back the queue
/// drains and Postgres holds exactly what Redis holds.
#[test]
fn postgres_outage_under_load_logs_a_few_lines_and_drains_after() {
    let Some((proxy, co)) = behind_postgres_proxy("postgres_outage_under_load") else { return };
    let d = deployment(&co);
    let url = d.url(30);
    let ctls: Vec<Ctl> = ["a", "b", "c", "d"].iter().map(|i| co.reg(i)).collect();
    wait_until(Duration::from_secs(30), "the registrations reach Postgres", || queue_depth(&url) == Some(0));

    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<JoinHandle<u64>> = ctls
        .iter()
        .map(|c| {
            let (stop, url, sid, token) = (stop.clone(), url.clone(), c.sid.clone(), c.token.clone());
            thread::spawn(move || {
                let path = format!("{url}/v1/projects/{PROJECT}/sessions/{sid}/heartbeat");
                let auth = format!("Bearer {token}");
                let mut ok = 0;
                while !stop.load(Ordering::SeqCst) {
                    let (status, _, body) = http_post(&path, &[("authorization", &auth)], b"{}");
                    if status == 429 {
                        // Past the per-seat write rate (issue 28): nothing written; wait as told.
                        let doc: Value = serde_json::from_str(&body).unwrap();
                        assert_eq!(doc["error"]["code"], "rate_limited", "{body}");
                        thread::sleep(Duration::from_millis(doc["error"]["retry_after_ms"].as_u64().unwrap()));
                        continue;
                    }
                    assert_eq!(status, 200, "a heartbeat while Postgres is down: {body}");
                    ok += 1;
                }
                ok
            })
        })
        .collect();
    let logs_before = d.all_logs().len();
    proxy.cut();
    wait_until(Duration::from_secs(30), "/readyz says degraded", || {
        let (status, _, body) = http_get(&format!("{url}/readyz"));
        assert_eq!(status, 200, "readiness must not fail with Postgres alone: {body}");
        serde_json::from_str::<Value>(&body).unwrap()["degraded"] == json!(true)
    });
    let outage = Instant::now();
    // Long enough for a retry per verb to have shown (thousands of verbs), short for a test;
    // WRITERCTL_PG_OUTAGE_SECONDS=30 runs issue 20's drill (the figures are printed).
    let outage_for = std::env::var("WRITERCTL_PG_OUTAGE_SECONDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    thread::sleep(Duration::from_secs(outage_for));
    let (status, _, body) = http_get(&format!("{url}/livez"));
    assert_eq!(status, 200, "{body}");
    let (_, _, body) = http_get(&format!("{url}/readyz"));
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert!(ready["queue_depth"].as_u64().unwrap() > 0 && ready["oldest_queue_age_seconds"].as_f64().unwrap() > 0.0);
    let outage_secs = outage.elapsed().as_secs_f64().ceil() as usize;
    proxy.restore();
    stop.store(true, Ordering::SeqCst);
    let verbs: u64 = load.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(verbs > 0);
    let back = Instant::now();
    let queued = queue_depth(&url).unwrap_or(0);
    wait_until(Duration::from_secs(30), "the queue drains after Postgres is back", || queue_depth(&url) == Some(0));
    println!(
        "postgres outage {outage_secs} s: {verbs} verbs answered, {queued} queued at the return, drained in {:.2} s",
        back.elapsed().as_secs_f64()
    );
    wait_until(Duration::from_secs(30), "/readyz no longer says degraded", || {
        serde_json::from_str::<Value>(&http_get(&format!("{url}/readyz")).2).unwrap()["degraded"] == json!(false)
    });

    let logs = d.all_logs();
    let lines: Vec<&str> = logs[logs_before..].lines().filter(|l| l.to_lowercase().contains("postgres")).collect();
    assert!(
        lines.len() <= 2 + outage_secs,
        "{} postgres log lines for {verbs} verbs in a {outage_secs} s outage:\n{}",
        lines.len(),
        lines.join("\n")
    );
    assert!(lines.iter().any(|l| l.contains("recovered")), "the recovery is logged:\n{}", lines.join("\n"));
    println!("postgres log lines during the outage: {} ({outage_secs} s)", lines.len());

    // Postgres equals Redis.
    use writerctl::claim::stores::Store as _;
    let ns = d.ns();
    let redis_side = ns.store().snapshot(PROJECT).unwrap();
    assert_eq!(ns.pg_controllers(PROJECT), redis_side.controllers);
    assert_eq!(ns.pg_head(PROJECT).0, redis_side.version as i64);
}

// ---------------------------------------------------------------------------------------
// 4. cold restore
// ---------------------------------------------------------------------------------------

/// State made through `serve`; the server stops; Redis loses the namespace; a new server
/// rebuilds it from Postgres: same master, epoch and rows; old tokens and operators work; the
/// epoch (and the event cursor) go on from there.
#[test]
fn cold_restore_after_redis_flush() {
    let Some(co) = Co::http_redis_pg("cold_restore_after_redis_flush") else { return };
    let d = deployment(&co);
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    let carol = co.register("carol", "cli", "m2");
    co.add_operator("ops", PASSWORD);
    ok_doc(&co.handoff(&alice, "bob", &["--expect-epoch", "1"]));
    ok_doc(&co.claim("carol", "ops", PASSWORD, &["--expect-epoch", "2"]));
    let mut before = timeless(co.assert_master(Some(&carol), 3));
    // A restore resumes the epoch far above Postgres's (an epoch Redis handed out but
    // Postgres never saw must not be handed out again); everything else comes back as is.
    let e = 3 + writerctl::claim::stores::redis_pg::EPOCH_RESTORE_GAP;
    before["master"]["epoch"] = json!(e);
    let old_cursor = co.events("bob")[0]["cursor"].as_u64().unwrap();
    let url = d.url(30);
    wait_until(Duration::from_secs(30), "the queue drains", || queue_depth(&url) == Some(0));

    d.stop_all();
    d.ns().wipe_redis();
    assert_eq!(d.ns().redis_keys(), Vec::<String>::new());
    // A new server restores before it answers.
    let url2 = d.url(30);
    assert_ne!(url2, url);
    let after = timeless(co.status());
    assert_eq!(after, before, "the restored state");
    assert!(!d.ns().redis_keys().is_empty());
    // Tokens and operators came back: bob's old token, ops's password.
    co.ok(&["session", "heartbeat", "--project", PROJECT, "--session", &bob.sid, "--token-file", s(&bob.token_file)]);
    err_doc(&co.handoff(&carol, "alice", &["--expect-epoch", "3"]), 3, "stale_master");
    let v = ok_doc(&co.handoff(&carol, "alice", &["--expect-epoch", &e.to_string()]));
    assert_eq!((&v["new_master"], &v["epoch"]), (&mref(&alice), &json!(e + 1)));
    co.assert_master(Some(&alice), e + 1);
    let evs = co.events("carol");
    assert_eq!(evs.len(), 1);
    assert_preempted(&evs[0], &carol, &alice, e + 1, None);
    assert!(evs[0]["cursor"].as_u64().unwrap() > old_cursor, "cursors never go back across a restore");
    let v = ok_doc(&co.claim("bob", "ops", PASSWORD, &["--expect-epoch", &(e + 1).to_string()]));
    assert_eq!(v["epoch"], e + 2);
    co.assert_master(Some(&bob), e + 2);
    err_doc(&co.handoff(&alice, "carol", &["--expect-epoch", &(e + 1).to_string()]), 3, "stale_master");
}

// ---------------------------------------------------------------------------------------
// 5. the admin token
// ---------------------------------------------------------------------------------------

/// `operator add` and `audit` over HTTP: no token → invalid_argument (client side); a wrong
/// token → unauthorized; the right one works; a server without --admin-token-file refuses
/// even a token; an admin token a generator did not make keeps the server from starting.
#[test]
fn admin_token_guards_operator_add_and_audit() {
    let co = Co::http_sqlite();
    let url = co.url();
    let token = deployment(&co).admin_token.clone().unwrap();
    co.reg("alice");
    co.reg("bob");
    let add = |vars: &[(&str, &str)], remove: &[&str], op: &str| {
        run_at_stdin(
            &co,
            &url,
            &["operator", "add", op, "--password-stdin", "--json"],
            vars,
            remove,
            b"pw-for-the-op\n",
        )
    };
    let audit = |vars: &[(&str, &str)], remove: &[&str]| run_at(&co, &url, &["audit", "--json"], vars, remove);
    const T: &str = "WRITERCTL_ADMIN_TOKEN";

    // No admin token at all: unauthorized (6), as the README says (issue 28 point 6).
    err_doc(&add(&[], &[T], "ops"), 6, "unauthorized");
    err_doc(&audit(&[], &[T]), 6, "unauthorized");
    for wrong in ["wrong-admin-token-0000", &format!("{token}x"), " ", &token[..16]] {
        err_doc(&add(&[(T, wrong)], &[], "ops"), 6, "unauthorized");
        err_doc(&audit(&[(T, wrong)], &[]), 6, "unauthorized");
    }
    // Nothing was added by those: the claim with that password fails, ops can still be added.
    err_doc(&co.claim("bob", "ops", "pw-for-the-op", &[]), 6, "invalid_operator_credentials");
    assert_eq!(ok_doc(&add(&[], &[], "ops")), json!({"operator_id": "ops", "created": true}));
    ok_doc(&co.claim("bob", "ops", "pw-for-the-op", &[]));
    let entries = ok_doc(&audit(&[], &[]))["entries"].as_array().unwrap().clone();
    // Every refused call is audited (4 wrong tokens each); the one success says who did it.
    let adds: Vec<&Value> = entries.iter().filter(|e| e["verb"] == "operator.add").collect();
    let results: Vec<&Value> = adds.iter().map(|e| &e["result"]).collect();
    assert_eq!(results.iter().filter(|r| **r == "unauthorized").count(), 4, "{entries:#?}");
    let ok: Vec<&&Value> = adds.iter().filter(|e| e["result"] == "ok").collect();
    assert_eq!(ok.len(), 1, "{entries:#?}");
    assert_eq!((&ok[0]["target"], &ok[0]["actor"]), (&json!("operator:ops"), &json!("admin")));

    // The same on the wire: 401 with a JSON error, for a missing or a wrong bearer.
    let body = br#"{"operator_id":"x","password":"y"}"#;
    for headers in [vec![], vec![("authorization", "Bearer nope-nope-nope-nope")], vec![("authorization", "Basic x")]] {
        let (status, _, b) = http_post(&format!("{url}/v1/operators"), &headers, body);
        assert_eq!((status, http_error_code(&b).as_str()), (401, "unauthorized"), "{headers:?}: {b}");
    }
    let auth = format!("Bearer {token}");
    let (status, _, b) = http_post(&format!("{url}/v1/operators"), &[("authorization", &auth)], body);
    assert_eq!(status, 200, "{b}");

    // A server started without --admin-token-file refuses every admin call.
    let bare = Co::http(|home, store| Deployment::sqlite(home, store).without_admin_file());
    let bare_url = bare.url();
    let bare_token = deployment(&bare).admin_token.clone().unwrap();
    let r = run_at_stdin(
        &bare,
        &bare_url,
        &["operator", "add", "ops", "--password-stdin", "--json"],
        &[(T, &bare_token)],
        &[],
        b"pw\n",
    );
    err_doc(&r, 6, "unauthorized");
    err_doc(&run_at(&bare, &bare_url, &["audit", "--json"], &[(T, &bare_token)], &[]), 6, "unauthorized");
    let (status, _, b) =
        http_post(&format!("{bare_url}/v1/operators"), &[("authorization", &format!("Bearer {bare_token}"))], body);
    assert_eq!((status, http_error_code(&b).as_str()), (401, "unauthorized"));

    // An admin token a generator did not make (issue 39 point 8; 32 bytes were enough
    // before): the server refuses to start (exit 2) and names the command that makes one.
    let short = co.file("short.token");
    std::fs::write(&short, "correct horse battery staple 2024\n").unwrap();
    std::fs::set_permissions(&short, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let args = strings(&["--store", &format!("sqlite:{}", co.store.display()), "--admin-token-file", s(&short)]);
    match Server::try_start(co.dir(), &args, &[]) {
        Started::Up(srv) => panic!("a passphrase admin token was accepted: {}", srv.url),
        Started::Failed(code, out, err) => {
            assert_eq!(code, 2, "stdout:\n{out}\nstderr:\n{err}");
            assert!(err.contains("not 64 hex digits") && err.contains("admin-token new"), "{err}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// 6. an unreachable server
// ---------------------------------------------------------------------------------------

/// Nothing listens (or the peer hangs up at once): every command answers
/// `coordinator_unavailable`, exit 75.
#[test]
fn unreachable_server_is_unavailable_75() {
    let co = Co::new();
    let tok = co.file("t.tok");
    std::fs::write(&tok, format!("{}\n", "ab".repeat(32))).unwrap();
    let pw = co.pw_file(PASSWORD);
    // A listener that accepts and closes every connection at once.
    let hangup = TcpListener::bind("127.0.0.1:0").unwrap();
    let hangup_port = hangup.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let acceptor = thread::spawn(move || {
        for c in hangup.incoming() {
            if stop2.load(Ordering::SeqCst) {
                return;
            }
            if let Ok(c) = c {
                let _ = c.shutdown(Shutdown::Both);
            }
        }
    });
    let dead = dead_port();
    let urls = [
        format!("http://127.0.0.1:{dead}"),
        format!("https://127.0.0.1:{dead}"),
        format!("http://127.0.0.1:{hangup_port}"),
    ];
    let verbs: Vec<(Vec<&str>, Option<&[u8]>)> = vec![
        (vec!["master", "status", "--project", PROJECT], None),
        (vec!["session", "register", "--project", PROJECT, "--identity", "alice"], None),
        (vec!["session", "heartbeat", "--project", PROJECT, "--session", "s1", "--token-file", s(&tok)], None),
        (vec!["session", "deregister", "--project", PROJECT, "--session", "s1", "--token-file", s(&tok)], None),
        (
            vec!["master", "handoff", "--project", PROJECT, "--session", "s1", "--token-file", s(&tok), "--to", "bob"],
            None,
        ),
        (
            vec![
                "master",
                "handoff",
                "--project",
                PROJECT,
                "--session",
                "s1",
                "--token-file",
                s(&tok),
                "--to",
                "bob",
                "--expect-epoch",
                "1",
            ],
            None,
        ),
        (
            vec![
                "master",
                "claim",
                "--project",
                PROJECT,
                "--to",
                "bob",
                "--operator",
                "ops",
                "--password-file",
                s(&pw),
                "--expect-epoch",
                "1",
            ],
            None,
        ),
        (vec!["inbox", "--project", PROJECT, "--identity", "alice"], None),
        (
            vec![
                "inbox",
                "--project",
                PROJECT,
                "--identity",
                "alice",
                "--token-file",
                s(&tok),
                "--follow",
                "--timeout",
                "1",
            ],
            None,
        ),
        (vec!["operator", "add", "ops", "--password-stdin"], Some(b"pw\n")),
        (vec!["audit"], None),
    ];
    for url in &urls {
        for (args, input) in &verbs {
            let mut a = args.clone();
            a.push("--json");
            let mut c = co.base();
            c.args(&a).arg("--coordinator").arg(url).env("WRITERCTL_ADMIN_TOKEN", "admin-token-0123456789");
            let r = exec(c, *input);
            err_doc(&r, 75, "coordinator_unavailable");
        }
    }
    // The environment variable names the server just as well.
    let mut c = co.base();
    c.args(["master", "status", "--project", PROJECT, "--json"]).env("WRITERCTL_COORDINATOR", &urls[0]);
    err_doc(&exec(c, None), 75, "coordinator_unavailable");
    stop.store(true, Ordering::SeqCst);
    let _ = TcpStream::connect(("127.0.0.1", hangup_port));
    acceptor.join().unwrap();
}

// ---------------------------------------------------------------------------------------
// 7. /healthz, /metrics, /openapi.json, limits
// ---------------------------------------------------------------------------------------

/// The router's routes as (method, path), read from the server's source.
fn router_routes() -> BTreeSet<(String, String)> {
    // The router is built from the verb list and the fixed routes; this is that table.
    let routes: BTreeSet<(String, String)> = writerctl::coordinator::server::route_table()
        .into_iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert!(routes.len() >= 13, "could not read the router's routes: {routes:?}");
    routes
}

/// Every `$ref` in `v` (recursively).
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref" {
                    out.push(x.as_str().unwrap().to_string());
                } else {
                    refs(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[test]
fn healthz_metrics_openapi() {
    let co = Co::http_sqlite();
    let url = co.url();
    let (status, ct, body) = http_get(&format!("{url}/healthz"));
    assert_eq!((status, serde_json::from_str::<Value>(&body).unwrap()), (200, json!({"ok": true})), "{body}");
    assert!(ct.starts_with("application/json"), "{ct}");

    // A failing verb and a succeeding one are counted by result.
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    err_doc(&co.handoff(&bob, "alice", &["--expect-epoch", "1"]), 3, "not_master");
    ok_doc(&co.handoff(&alice, "bob", &["--expect-epoch", "1"]));
    let (status, ct, m) = http_get(&format!("{url}/metrics"));
    assert_eq!(status, 200);
    assert!(ct.starts_with("text/plain"), "{ct}");
    let get = |series: &str| metric(&m, series).unwrap_or_else(|| panic!("no {series} in\n{m}"));
    assert_eq!(get(r#"writerctl_verbs_total{verb="master.handoff",result="not_master"}"#), 1.0);
    assert_eq!(get(r#"writerctl_verbs_total{verb="master.handoff",result="ok"}"#), 1.0);
    assert_eq!(get(r#"writerctl_verbs_total{verb="session.register",result="ok"}"#), 2.0);
    assert_eq!(get(r#"writerctl_verb_duration_seconds_count{verb="master.handoff"}"#), 2.0);
    assert_eq!(get(r#"writerctl_verb_duration_seconds_bucket{verb="master.handoff",le="+Inf"}"#), 2.0);
    assert!(get(r#"writerctl_verb_duration_seconds_sum{verb="master.handoff"}"#) >= 0.0);
    assert!(
        m.contains("# TYPE writerctl_verbs_total counter")
            && m.contains("# TYPE writerctl_verb_duration_seconds histogram")
    );
    assert!(!m.contains("writerctl_audit_retry_queue_depth"), "no Postgres queue on SQLite:\n{m}");
    // Buckets are cumulative.
    let buckets: Vec<f64> = m
        .lines()
        .filter(|l| l.starts_with(r#"writerctl_verb_duration_seconds_bucket{verb="master.handoff""#))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(buckets.len(), 13, "{m}");
    assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");

    // /openapi.json: valid, and it describes exactly the router's paths.
    let (status, _, doc) = http_get(&format!("{url}/openapi.json"));
    assert_eq!(status, 200);
    let doc: Value = serde_json::from_str(&doc).expect("/openapi.json is JSON");
    assert_eq!(doc["openapi"], "3.1.0");
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(p, ops)| ops.as_object().unwrap().keys().map(move |m| (m.clone(), p.clone())))
        .collect();
    let routed: BTreeSet<(String, String)> =
        router_routes().into_iter().filter(|(_, p)| p != "/openapi.json").collect();
    assert_eq!(documented, routed, "the OpenAPI paths and the router's routes differ");
    assert!(routed.iter().filter(|(_, p)| p.starts_with("/v1/")).count() >= 10);
    let mut all = Vec::new();
    refs(&doc, &mut all);
    for r in &all {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{r}"));
        assert!(doc["components"]["schemas"].get(name).is_some(), "dangling $ref {r}");
    }

    // Unknown paths: 404 with a JSON error (issue 19).
    for path in ["/nope", "/v1", "/v1/projects/web", "/v2/projects/web/master"] {
        let (status, ct, body) = http_get(&format!("{url}{path}"));
        assert_eq!((status, http_error_code(&body).as_str()), (404, "not_found"), "{path}: {body}");
        assert!(ct.starts_with("application/json"), "{path}: {ct}");
    }
    // Bodies over 64 KiB: 413 in the envelope; just under: read (and refused for its content).
    let big = |n: usize| format!(r#"{{"identity":"{}","surface":"cli","machine_id":"m1"}}"#, "a".repeat(n));
    let register = format!("{url}/v1/projects/web/sessions");
    let (status, _, body) = http_post(&register, &[], big(70 * 1024).as_bytes());
    assert_eq!((status, http_error_code(&body).as_str()), (413, "invalid_argument"), "{body}");
    let (status, _, body) = http_post(&register, &[], big(60 * 1024).as_bytes());
    assert_eq!((status, http_error_code(&body).as_str()), (400, "invalid_argument"), "{body}");
    // Malformed bodies are the caller's mistake.
    let (status, _, body) = http_post(&register, &[], b"{not json");
    assert_eq!((status, http_error_code(&body).as_str()), (400, "invalid_argument"), "{body}");
    // Nothing of that changed the state.
    co.assert_master(Some(&bob), 2);
}

/// `writerctl_projects_without_master` on `/metrics`: a project whose master deregistered
/// while another controller stays registered counts until someone is master again; a
/// project nobody is registered in does not count; no project name appears.
fn check_projects_without_master(co: &Co) {
    let url = co.url();
    let count = || {
        let (status, _, m) = http_get(&format!("{url}/metrics"));
        assert_eq!(status, 200, "{m}");
        assert!(m.contains("# TYPE writerctl_projects_without_master gauge\n"), "{m}");
        assert!(!m.contains(PROJECT), "a project name is on /metrics:\n{m}");
        metric(&m, "writerctl_projects_without_master").unwrap_or_else(|| panic!("no gauge in\n{m}"))
    };
    let deregister = |c: &Ctl| {
        co.ok(&["session", "deregister", "--project", PROJECT, "--session", &c.sid, "--token-file", s(&c.token_file)]);
    };
    assert_eq!(count(), 0.0, "no project yet");
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    assert_eq!(count(), 0.0, "alice is master");
    deregister(&alice);
    assert_eq!(count(), 1.0, "bob is registered, nobody is master");
    let carol = co.reg("carol");
    co.assert_master(Some(&carol), 3);
    assert_eq!(count(), 0.0, "carol registered into the empty slot");
    deregister(&carol);
    assert_eq!(count(), 1.0);
    deregister(&bob);
    assert_eq!(count(), 0.0, "nobody is registered: nothing is blocked");
}

/// Both stores in one test: SQLite always, Redis + Postgres when reachable (a loud skip
/// otherwise, a failure under WRITERCTL_REQUIRE_SERVICES=1).
#[test]
fn metrics_count_projects_without_a_master() {
    check_projects_without_master(&Co::http_sqlite());
    if let Some(co) = Co::http_redis_pg("metrics_count_projects_without_a_master (redis_pg)") {
        check_projects_without_master(&co);
    }
}

/// A Redis + Postgres server: `/healthz` 200 with both planes, 503 with a JSON error while
/// Redis is unreachable (through a proxy the test cuts), 200 again once it is back; the
/// queue gauge is on `/metrics`.
#[test]
fn healthz_is_503_while_redis_is_unreachable() {
    let Some(ns) = Ns::new("healthz_is_503_while_redis_is_unreachable") else { return };
    let (_, target) = redis_via(&ns.redis_url, 0);
    let proxy = Proxy::start(target);
    let (via, _) = redis_via(&ns.redis_url, proxy.port);
    let postgres = ns.postgres_url.clone();
    let co = Co::http(|home, _| Deployment::redis_pg_via(home, ns, via, postgres));
    let url = co.url();
    let (status, _, body) = http_get(&format!("{url}/healthz"));
    assert_eq!((status, body.as_str()), (200, r#"{"ok":true}"#));
    let alice = co.reg("alice");
    wait_until(Duration::from_secs(30), "the queue gauge at 0", || queue_depth(&url) == Some(0));

    proxy.cut();
    let (status, ct, body) = http_get(&format!("{url}/healthz"));
    assert_eq!((status, http_error_code(&body).as_str()), (503, "coordinator_unavailable"), "{body}");
    assert!(ct.starts_with("application/json"), "{ct}");
    err_doc(&co.run(&["master", "status", "--project", PROJECT, "--json"]), 75, "coordinator_unavailable");
    err_doc(&co.handoff(&alice, "alice", &["--expect-epoch", "1"]), 75, "coordinator_unavailable");
    let (status, _, m) = http_get(&format!("{url}/metrics"));
    assert_eq!(status, 200, "/metrics answers without Redis");
    assert!(m.contains(r#"writerctl_verbs_total{verb="master.status",result="coordinator_unavailable"}"#), "{m}");

    proxy.restore();
    wait_until(Duration::from_secs(30), "/healthz answers 200 again", || http_get(&format!("{url}/healthz")).0 == 200);
    co.assert_master(Some(&alice), 1);
}

// ---------------------------------------------------------------------------------------
// 8. TLS
// ---------------------------------------------------------------------------------------

fn have_openssl() -> bool {
    Command::new("openssl")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `openssl ARGS` in `dir`; panics with its stderr on failure.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

const EC: [&str; 5] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
const SAN: &str = "subjectAltName=IP:127.0.0.1,DNS:localhost";

/// A self-signed certificate for 127.0.0.1 and localhost: (cert, key) in `dir`. `extra`
/// adds `-addext` values (without any, OpenSSL marks it `CA:TRUE`).
fn self_signed(dir: &Path, stem: &str, extra: &[&str]) -> (PathBuf, PathBuf) {
    let (cert, key) = (format!("{stem}.cert.pem"), format!("{stem}.key.pem"));
    let mut args = vec!["req", "-x509"];
    args.extend(EC);
    args.extend(["-subj", "/CN=localhost", "-addext", SAN, "-days", "1", "-keyout", &key, "-out", &cert]);
    for e in extra {
        args.extend(["-addext", e]);
    }
    openssl(dir, &args);
    (dir.join(cert), dir.join(key))
}

/// A private CA and a server certificate it signed: (ca cert, server cert, server key).
fn private_ca(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let mut ca = vec!["req", "-x509"];
    ca.extend(EC);
    ca.extend(["-subj", "/CN=writerctl-test-ca", "-days", "1", "-keyout", "ca.key", "-out", "ca.pem"]);
    openssl(dir, &ca);
    let mut csr = vec!["req"];
    csr.extend(EC);
    csr.extend(["-subj", "/CN=localhost", "-keyout", "leaf.key", "-out", "leaf.csr"]);
    openssl(dir, &csr);
    std::fs::write(dir.join("leaf.ext"), format!("{SAN}\nbasicConstraints=critical,CA:FALSE\n")).unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "leaf.ext",
            "-out",
            "leaf.pem",
        ],
    );
    (dir.join("ca.pem"), dir.join("leaf.pem"), dir.join("leaf.key"))
}

/// A server with `--tls-cert cert --tls-key key`, clients trusting `ca`.
fn tls_co(make: impl FnOnce(&Path) -> (PathBuf, PathBuf, PathBuf)) -> Co {
    Co::http(|home, store| {
        let (ca, cert, key) = make(home);
        Deployment::sqlite(home, store)
            .server_args(&["--tls-cert", s(&cert), "--tls-key", s(&key)])
            .client_env_var("WRITERCTL_COORDINATOR_CA", s(&ca))
    })
}

/// `serve --tls-cert --tls-key` with a self-signed server certificate (`CA:FALSE`): clients
/// that trust it (WRITERCTL_COORDINATOR_CA) work, admin calls included; without it, or
/// trusting another certificate, or speaking plain HTTP, the client answers
/// `coordinator_unavailable` (75); a CA file without a certificate is invalid_argument; bad
/// TLS material keeps the server from starting.
#[test]
fn tls_with_a_self_signed_certificate() {
    if !have_openssl() {
        skip("tls_with_a_self_signed_certificate", "no `openssl` CLI to make a certificate");
        return;
    }
    let co = tls_co(|home| {
        let (cert, key) = self_signed(home, "server", &["basicConstraints=critical,CA:FALSE"]);
        (cert.clone(), cert, key)
    });
    let url = co.url();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let alice = co.reg("alice");
    let bob = co.register("bob", "cli", "host-b");
    co.assert_master(Some(&alice), 1);
    ok_doc(&co.handoff(&alice, "bob", &["--expect-epoch", "1"]));
    co.assert_master(Some(&bob), 2);
    co.add_operator("ops", PASSWORD);
    ok_doc(&co.claim("alice", "ops", PASSWORD, &["--expect-epoch", "2"]));
    let verbs = co.audit(Some(PROJECT)).into_iter().filter(|a| !a["verb"].as_str().unwrap().starts_with("identity."));
    assert_eq!(verbs.count(), 4);
    // "localhost" is in the certificate too.
    let local = url.replace("127.0.0.1", "localhost");
    assert_eq!(status_at(&co, &local)["master"]["identity"], "alice");

    const CA: &str = "WRITERCTL_COORDINATOR_CA";
    let status = ["master", "status", "--project", PROJECT, "--json"];
    err_doc(&run_at(&co, &url, &status, &[], &[CA]), 75, "coordinator_unavailable");
    let (other, _) = self_signed(co.dir(), "other", &["basicConstraints=critical,CA:FALSE"]);
    err_doc(&run_at(&co, &url, &status, &[(CA, s(&other))], &[]), 75, "coordinator_unavailable");
    // Plain HTTP to the TLS port.
    let plain = url.replace("https://", "http://");
    err_doc(&run_at(&co, &plain, &status, &[], &[]), 75, "coordinator_unavailable");
    // A CA file without a certificate is the caller's mistake.
    let junk = co.file("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    err_doc(&run_at(&co, &url, &status, &[(CA, s(&junk))], &[]), 2, "invalid_argument");

    // Bad TLS material: the server does not start.
    let args =
        strings(&["--store", &format!("sqlite:{}", co.store.display()), "--tls-cert", s(&junk), "--tls-key", s(&junk)]);
    match Server::try_start(co.dir(), &args, &[]) {
        Started::Up(srv) => panic!("a server started with junk TLS material: {}", srv.url),
        Started::Failed(code, _, err) => assert_ne!(code, 0, "{err}"),
    }
}

/// A server certificate signed by a private CA; clients trust the CA.
#[test]
fn tls_with_a_private_ca() {
    if !have_openssl() {
        skip("tls_with_a_private_ca", "no `openssl` CLI to make a certificate");
        return;
    }
    let co = tls_co(private_ca);
    assert!(co.url().starts_with("https://"));
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    ok_doc(&co.handoff(&alice, "bob", &["--expect-epoch", "1"]));
    co.assert_master(Some(&bob), 2);
    // The server's own certificate is no CA: trusting it alone is not enough.
    let leaf = co.dir().join("leaf.pem");
    let r = run_at(
        &co,
        &co.url(),
        &["master", "status", "--project", PROJECT, "--json"],
        &[("WRITERCTL_COORDINATOR_CA", s(&leaf))],
        &[],
    );
    err_doc(&r, 75, "coordinator_unavailable");
}

/// PRODUCT BUG: the client documents WRITERCTL_COORDINATOR_CA as trusting "a private CA or a
/// self-signed server certificate"; one made CA:TRUE (OpenSSL's default) is refused by
/// TLS itself, and the error must say why.
#[test]
fn tls_refuses_a_ca_certificate_as_server_certificate_clearly() {
    if !have_openssl() {
        skip("tls_refuses_a_ca_certificate_as_server_certificate_clearly", "no `openssl` CLI to make a certificate");
        return;
    }
    // `openssl req -x509` marks its certificate CA:TRUE; TLS clients (rustls/webpki) refuse
    // a CA certificate as the server's own. The README says to add basicConstraints
    // CA:FALSE; here the refusal must at least say what is wrong, and never succeed.
    let co = tls_co(|home| {
        let (cert, key) = self_signed(home, "server", &[]);
        (cert.clone(), cert, key)
    });
    let r = co.run(&["master", "status", "--project", PROJECT, "--json"]);
    let e = err_doc(&r, 75, "coordinator_unavailable");
    assert!(e["message"].as_str().unwrap().contains("CaUsedAsEndEntity"), "{e}");
}

// ---------------------------------------------------------------------------------------
// 9. shutdown and logs
// ---------------------------------------------------------------------------------------

/// The operator-attempt counter in the SQLite store (the throttle counts an attempt before
/// verifying it, so it shows a claim that is inside the server).
fn sqlite_attempts(store: &Path, operator: &str) -> i64 {
    let c = rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    c.busy_timeout(Duration::from_secs(5)).unwrap();
    c.query_row("SELECT failures FROM operator_attempts WHERE operator_id = ?1", [operator], |r| r.get(0)).unwrap_or(0)
}

/// SIGTERM while a request is in flight: the request completes (exit 0 for the client), the
/// server exits 0, stops answering, and printed nothing on stdout but its listening line.
/// SIGINT too; and `--json` prints the listening line as JSON.
#[test]
fn graceful_shutdown_exits_zero() {
    let co = Co::http(|home, store| Deployment::sqlite(home, store).server_args(&["--json"]));
    let d = deployment(&co);
    let mut srv = d.take(30, 0);
    assert_eq!(srv.line, json!({"listening": srv.url}).to_string(), "one JSON line with --json");
    let url = srv.url.clone();
    let alice = register_at(&co, &url, "alice", "m1");
    let bob = register_at(&co, &url, "bob", "m1");
    let add = run_at_stdin(&co, &url, &["operator", "add", "ops", "--password-stdin", "--json"], &[], &[], b"pw-ops\n");
    ok_doc(&add);
    let wrong = co.pw_file("wrong");
    let right = co.pw_file("pw-ops");
    let claim_at = |pw: &Path, url: &str| {
        let mut c = co.base();
        c.args(["master", "claim", "--project", PROJECT, "--to", "bob", "--operator", "ops", "--password-file", s(pw)])
            .args(["--expect-epoch", "1", "--json", "--coordinator", url]);
        c
    };
    let claim = |pw: &Path| claim_at(pw, &url);
    // Four failures: the fifth wrong password's refusal is held back 4 s inside the server.
    for _ in 0..4 {
        err_doc(&exec(claim(&wrong), None), 6, "invalid_operator_credentials");
    }
    assert_eq!(sqlite_attempts(&co.store, "ops"), 4);
    let mut c = claim(&wrong);
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    wait_until(Duration::from_secs(30), "the claim reaches the server", || sqlite_attempts(&co.store, "ops") == 5);
    srv.signal(rustix::process::Signal::TERM);
    let r = wait_bounded(child, LIMIT, "the in-flight claim");
    let e = err_doc(&r, 6, "invalid_operator_credentials");
    assert_eq!(e["next_delay_ms"], 4000, "answered after its hold-back, not cut off");
    assert_eq!(srv.wait(), 0, "stderr:\n{}", srv.stderr());
    assert!(srv.stderr().contains("stop signal"), "{}", srv.stderr());
    assert_eq!(srv.stdout_rest(), "", "stdout holds the listening line only");
    err_doc(
        &run_at(&co, &url, &["master", "status", "--project", PROJECT, "--json"], &[], &[]),
        75,
        "coordinator_unavailable",
    );
    // A new server (SIGINT this time) over the same store; the right password works at once.
    let mut again = d.take(30, 0);
    let r = exec(claim_at(&right, &again.url), None);
    let v = ok_doc(&r);
    assert_eq!((&v["new_master"], &v["epoch"]), (&mref(&bob), &json!(2)));
    assert_eq!(status_at(&co, &again.url)["master"]["session_id"], json!(bob.sid));
    assert_eq!(status_at(&co, &again.url)["controllers"].as_array().unwrap().len(), 2, "{}", alice.sid);
    assert_eq!(again.stop_with(rustix::process::Signal::INT), 0, "stderr:\n{}", again.stderr());
}

/// The same on Redis + Postgres: SIGTERM with nothing in flight must exit 0 (it finishes
/// in-flight requests, then stops).
#[test]
fn graceful_shutdown_exits_zero_redis_pg() {
    let Some(co) = Co::http_redis_pg("graceful_shutdown_exits_zero_redis_pg") else { return };
    let d = deployment(&co);
    let mut srv = d.take(30, 0);
    let alice = register_at(&co, &srv.url, "alice", "m1");
    assert_eq!(status_at(&co, &srv.url)["master"]["session_id"], json!(alice.sid));
    let code = srv.stop();
    let err = srv.stderr();
    assert!(!err.contains("panicked"), "the server panicked on SIGTERM (exit {code}):\n{err}");
    assert_eq!(code, 0, "stderr:\n{err}");
}

/// Runs every verb with secrets in play (right and wrong tokens and passwords, the admin
/// token, right and wrong) against `co`'s server; returns the secrets.
fn secret_script(co: &Co) -> Vec<String> {
    let url = co.url();
    let admin = deployment(co).admin_token.clone().unwrap();
    let wrong_admin = format!("{admin}-but-wrong");
    let wrong_pw = "Tr0ub4dor&3-wrong-guess";
    let other_pw = "second-operator-passphrase";
    let alice = co.reg("alice");
    let bob = co.register("bob", "cli", "host-b");
    let carol_key = co.key_of("carol");
    let printed = ok_doc(&co.run_env(
        &["session", "register", "--project", PROJECT, "--identity", "carol", "--json"],
        &[("WRITERCTL_IDENTITY_KEY", &carol_key)],
    ));
    let carol_token = printed["token"].as_str().unwrap().to_string();
    let carol_sid = printed["session_id"].as_str().unwrap().to_string();
    let hb = |sid: &str, vars: &[(&str, &str)]| {
        co.run_env(&["session", "heartbeat", "--project", PROJECT, "--session", sid, "--json"], vars)
    };
    ok_doc(&hb(&alice.sid, &[("WRITERCTL_SESSION_TOKEN", &alice.token)]));
    ok_doc(&hb(&carol_sid, &[("WRITERCTL_SESSION_TOKEN", &carol_token)]));
    err_doc(&hb(&alice.sid, &[("WRITERCTL_SESSION_TOKEN", &bob.token)]), 6, "unauthorized");
    ok_doc(&co.handoff(&alice, "bob", &[]));
    err_doc(&co.handoff(&alice, "bob", &[]), 3, "not_master");
    co.add_operator("ops", PASSWORD);
    let r = co.run_env(&["operator", "add", "ops2", "--json"], &[("WRITERCTL_OPERATOR_PASSWORD", other_pw)]);
    ok_doc(&r);
    let r = run_at_stdin(
        co,
        &url,
        &["operator", "add", "ops3", "--password-stdin", "--json"],
        &[("WRITERCTL_ADMIN_TOKEN", &wrong_admin)],
        &[],
        format!("{other_pw}\n").as_bytes(),
    );
    err_doc(&r, 6, "unauthorized");
    err_doc(&co.claim("alice", "ops", wrong_pw, &[]), 6, "invalid_operator_credentials");
    err_doc(&co.claim("alice", "nobody", PASSWORD, &[]), 6, "invalid_operator_credentials");
    ok_doc(&co.claim("alice", "ops", PASSWORD, &[]));
    ok_doc(&co.claim("bob", "ops2", other_pw, &["--to-session", &bob.sid]));
    co.audit(None);
    co.events("alice");
    let r = co.run_env(
        &["session", "deregister", "--project", PROJECT, "--session", &carol_sid, "--json"],
        &[("WRITERCTL_SESSION_TOKEN", &carol_token)],
    );
    ok_doc(&r);
    vec![
        alice.token,
        bob.token,
        carol_token,
        PASSWORD.to_string(),
        wrong_pw.to_string(),
        other_pw.to_string(),
        admin,
        wrong_admin,
    ]
}

#[track_caller]
fn assert_no_secret(logs: &str, secrets: &[String]) {
    assert!(logs.contains("master.claim") && logs.contains("operator.add"), "the verbs were logged:\n{logs}");
    for secret in secrets {
        assert!(!logs.contains(secret.as_str()), "the server log holds {secret:?}:\n{logs}");
    }
}

/// At WRITERCTL_LOG=debug (JSON lines) the server's stderr holds no session token, password
/// or admin token.
#[test]
fn no_secret_in_server_logs() {
    let co = Co::http(|home, store| {
        Deployment::sqlite(home, store).server_env("WRITERCTL_LOG", "debug").server_args(&["--log-format", "json"])
    });
    let secrets = secret_script(&co);
    let d = deployment(&co);
    assert_eq!(d.stop_all(), vec![0]);
    let logs = d.all_logs();
    assert_no_secret(&logs, &secrets);
    for line in logs.lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("--log-format json: not JSON ({e}): {line}"));
    }
}

/// The same over Redis + Postgres, at debug level (which includes the Postgres driver's).
#[test]
fn no_secret_in_server_logs_redis_pg() {
    let Some(ns) = Ns::new("no_secret_in_server_logs_redis_pg") else { return };
    let co = Co::http(|home, _| Deployment::redis_pg(home, ns).server_env("WRITERCTL_LOG", "debug"));
    let secrets = secret_script(&co);
    let d = deployment(&co);
    d.stop_all();
    assert_no_secret(&d.all_logs(), &secrets);
}

// ---------------------------------------------------------------------------------------
// 10. the same output as the embedded store
// ---------------------------------------------------------------------------------------

/// One step of the parity script: its label, the run, and whether it ran with `--json`.
struct Step {
    label: String,
    run: Run,
    json: bool,
}

/// A fixed script of verbs (successes and every kind of refusal) against `co`. Returns the
/// steps and the replacements that make two runs comparable (session ids, tokens, the temp
/// dir).
fn parity_script(co: &Co) -> (Vec<Step>, Vec<(String, String)>) {
    let mut steps: Vec<Step> = Vec::new();
    // Enrolled first (identity add prints times, so it stays out of the compared steps).
    let [ka, kb, kc, kd] = ["alice", "bob", "carol", "dave"].map(|who| co.key_of(who));
    // Enrollment is the admin's act over HTTP and the store owner's in-process.
    let mut names: Vec<(String, String)> = vec![
        // Refused credentials and names not found name the coordinator that answered
        // (issue 29): the one part of a message that must differ.
        (format!("the embedded store at {}", co.store.display()), "<coordinator>".into()),
        (co.url(), "<coordinator>".into()),
        (co.dir().display().to_string(), "<dir>".into()),
        (r#""actor": "admin""#.into(), r#""actor": "<enroller>""#.into()),
        (r#""actor": "local""#.into(), r#""actor": "<enroller>""#.into()),
    ];
    let mut go = |label: &str, args: &[&str], vars: &[(&str, &str)], input: Option<&[u8]>| -> Run {
        let json = args.contains(&"--json");
        let mut c = co.command(args);
        c.envs(vars.iter().copied());
        let run = exec(c, input);
        steps.push(Step { label: label.into(), run: clone_run(&run), json });
        run
    };
    let tok = |n: &str| co.dir().join(format!("{n}.tok"));
    let (a_tok, b_tok, a2_tok) = (tok("alice"), tok("bob"), tok("alice2"));
    let sid = |r: &Run| r.json::<Value>()["session_id"].as_str().unwrap_or("").to_string();
    let st = ["master", "status", "--project", PROJECT, "--json"];
    go("status of an empty project", &st, &[], None);
    let a = go(
        "register alice",
        &["session", "register", "--project", PROJECT, "--identity", "alice", "--token-file", s(&a_tok), "--json"],
        &[("WRITERCTL_IDENTITY_KEY", &ka)],
        None,
    );
    let a_sid = sid(&a);
    let b = go(
        "register bob on host-b",
        &[
            "session",
            "register",
            "--project",
            PROJECT,
            "--identity",
            "bob",
            "--machine",
            "host-b",
            "--token-file",
            s(&b_tok),
            "--json",
        ],
        &[("WRITERCTL_IDENTITY_KEY", &kb)],
        None,
    );
    let b_sid = sid(&b);
    let c = go(
        "register carol, token printed",
        &["session", "register", "--project", PROJECT, "--identity", "carol", "--json"],
        &[("WRITERCTL_IDENTITY_KEY", &kc)],
        None,
    );
    let c_sid = sid(&c);
    let c_token = c.json::<Value>()["token"].as_str().unwrap_or("").to_string();
    let c_tok = co.dir().join("carol.tok");
    std::fs::write(&c_tok, format!("{c_token}\n")).unwrap();
    go(
        "register alice again (same key)",
        &["session", "register", "--project", PROJECT, "--identity", "alice", "--token-file", s(&a2_tok), "--json"],
        &[("WRITERCTL_IDENTITY_KEY", &ka)],
        None,
    );
    // Re-registering a live key may need its previous token: alice goes on with whichever
    // token file is current.
    let a_cur = if a2_tok.exists() { a2_tok.clone() } else { a_tok.clone() };
    let a_token = std::fs::read_to_string(&a_cur).unwrap_or_default().trim().to_string();
    let b_token = std::fs::read_to_string(&b_tok).unwrap_or_default().trim().to_string();
    let old_a_token = std::fs::read_to_string(&a_tok).unwrap_or_default().trim().to_string();
    go(
        "register a bad identity",
        &["session", "register", "--project", PROJECT, "--identity", " x", "--json"],
        &[],
        None,
    );
    go(
        "register a 300-byte identity",
        &["session", "register", "--project", PROJECT, "--identity", &"x".repeat(300), "--json"],
        &[],
        None,
    );
    go("status of a 300-byte project", &["master", "status", "--project", &"p".repeat(300), "--json"], &[], None);
    fn hb(sid: &str) -> Vec<&str> {
        vec!["session", "heartbeat", "--project", PROJECT, "--session", sid]
    }
    let mut v = hb(&a_sid);
    v.extend(["--token-file", s(&a_cur), "--json"]);
    go("heartbeat alice", &v, &[], None);
    let mut v = hb(&a_sid);
    v.extend(["--token-file", s(&a_tok), "--json"]);
    go("heartbeat alice with her first token", &v, &[], None);
    let mut v = hb(&a_sid);
    v.push("--json");
    go("heartbeat alice with bob's token", &v, &[("WRITERCTL_SESSION_TOKEN", &b_token)], None);
    go("heartbeat alice without a token", &v, &[], None);
    let mut v = hb("no-such-session");
    v.extend(["--token-file", s(&b_tok), "--json"]);
    go("heartbeat an unknown session", &v, &[], None);
    let handoff = |caller: &str, tf: &Path, to: &str, extra: &[&str]| {
        let mut v: Vec<String> = strings(&[
            "master",
            "handoff",
            "--project",
            PROJECT,
            "--session",
            caller,
            "--token-file",
            s(tf),
            "--to",
            to,
        ]);
        v.extend(extra.iter().map(|x| x.to_string()));
        v.push("--json".into());
        v
    };
    let mut run_v = |label: &str, v: Vec<String>, vars: &[(&str, &str)], input: Option<&[u8]>| {
        let a: Vec<&str> = v.iter().map(String::as_str).collect();
        go(label, &a, vars, input)
    };
    run_v("handoff by a non-master", handoff(&b_sid, &b_tok, "carol", &[]), &[], None);
    run_v("handoff to nobody", handoff(&a_sid, &a_cur, "ghost", &["--expect-epoch", "1"]), &[], None);
    run_v("handoff from a stale epoch", handoff(&a_sid, &a_cur, "bob", &["--expect-epoch", "0"]), &[], None);
    run_v(
        "handoff to another identity's session",
        handoff(&a_sid, &a_cur, "bob", &["--to-session", &c_sid]),
        &[],
        None,
    );
    run_v("handoff with a wrong token", handoff(&a_sid, &b_tok, "bob", &[]), &[], None);
    run_v("handoff to the master itself", handoff(&a_sid, &a_cur, "alice", &["--expect-epoch", "1"]), &[], None);
    run_v(
        "operator add",
        strings(&["operator", "add", "ops", "--password-stdin", "--json"]),
        &[],
        Some(format!("{PASSWORD}\n").as_bytes()),
    );
    run_v(
        "operator add again",
        strings(&["operator", "add", "ops", "--json"]),
        &[("WRITERCTL_OPERATOR_PASSWORD", "other")],
        None,
    );
    run_v("operator add without a password", strings(&["operator", "add", "ops9", "--json"]), &[], None);
    let claim = |to: &str, op: &str, extra: &[&str]| {
        let mut v = strings(&["master", "claim", "--project", PROJECT, "--to", to, "--operator", op, "--json"]);
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    run_v("claim with a wrong password", claim("carol", "ops", &[]), &[("WRITERCTL_OPERATOR_PASSWORD", "wrong")], None);
    run_v(
        "claim by an unknown operator",
        claim("carol", "nobody", &[]),
        &[("WRITERCTL_OPERATOR_PASSWORD", "wrong")],
        None,
    );
    run_v("cooperative handoff", handoff(&a_sid, &a_cur, "bob", &["--expect-epoch", "1"]), &[], None);
    run_v(
        "claim for carol",
        claim("carol", "ops", &["--expect-epoch", "2"]),
        &[("WRITERCTL_OPERATOR_PASSWORD", PASSWORD)],
        None,
    );
    run_v(
        "claim from a stale epoch",
        claim("bob", "ops", &["--expect-epoch", "2"]),
        &[("WRITERCTL_OPERATOR_PASSWORD", PASSWORD)],
        None,
    );
    run_v("claim to the master itself", claim("carol", "ops", &[]), &[("WRITERCTL_OPERATOR_PASSWORD", PASSWORD)], None);
    for (m, surface) in [("m1", "cli"), ("m1", "ide")] {
        run_v(
            &format!("register dave {surface}"),
            strings(&[
                "session",
                "register",
                "--project",
                PROJECT,
                "--identity",
                "dave",
                "--surface",
                surface,
                "--machine",
                m,
                "--json",
            ]),
            &[("WRITERCTL_IDENTITY_KEY", &kd)],
            None,
        );
    }
    run_v("handoff to an ambiguous identity", handoff(&c_sid, &c_tok, "dave", &[]), &[], None);
    run_v(
        "claim to an ambiguous identity",
        claim("dave", "ops", &[]),
        &[("WRITERCTL_OPERATOR_PASSWORD", PASSWORD)],
        None,
    );
    // "nobody" reads with carol's token: refused alike on every store.
    let tok_of = |who: &str| match who {
        "alice" => a_cur.clone(),
        "bob" => b_tok.clone(),
        _ => c_tok.clone(),
    };
    for who in ["alice", "bob", "carol", "nobody"] {
        run_v(
            &format!("inbox {who}"),
            strings(&["inbox", "--project", PROJECT, "--identity", who, "--token-file", s(&tok_of(who)), "--json"]),
            &[],
            None,
        );
    }
    run_v(
        "inbox after 1",
        strings(&[
            "inbox",
            "--project",
            PROJECT,
            "--identity",
            "alice",
            "--token-file",
            s(&tok_of("alice")),
            "--after",
            "1",
            "--json",
        ]),
        &[],
        None,
    );
    run_v(
        "inbox limit 1",
        strings(&[
            "inbox",
            "--project",
            PROJECT,
            "--identity",
            "bob",
            "--token-file",
            s(&tok_of("bob")),
            "--limit",
            "1",
            "--json",
        ]),
        &[],
        None,
    );
    run_v(
        "inbox follow",
        strings(&[
            "inbox",
            "--project",
            PROJECT,
            "--identity",
            "alice",
            "--token-file",
            s(&tok_of("alice")),
            "--follow",
            "--timeout",
            "0.5",
            "--json",
        ]),
        &[],
        None,
    );
    run_v("status", strings(&st), &[], None);
    run_v(
        "status with freshness 0",
        strings(&["master", "status", "--project", PROJECT, "--freshness-seconds", "0", "--json"]),
        &[],
        None,
    );
    run_v("audit of the project", strings(&["audit", "--project", PROJECT, "--json"]), &[], None);
    run_v("audit of everything, last 3", strings(&["audit", "--limit", "3", "--json"]), &[], None);
    let deregister_bob = strings(&[
        "session",
        "deregister",
        "--project",
        PROJECT,
        "--session",
        &b_sid,
        "--token-file",
        s(&b_tok),
        "--json",
    ]);
    run_v("deregister bob", deregister_bob.clone(), &[], None);
    run_v("deregister bob again", deregister_bob, &[], None);
    // Names that need escaping in a URL.
    for p in ["a/b", "..", "ü x?#%41&y=1"] {
        let r = run_v(
            &format!("register in {p:?}"),
            strings(&["session", "register", "--project", p, "--identity", "i/d?#", "--json"]),
            &[],
            None,
        );
        names.push((sid(&r), format!("<sid:{p}>")));
        names.push((r.json::<Value>()["token"].as_str().unwrap_or("-").to_string(), format!("<token:{p}>")));
        run_v(&format!("status of {p:?}"), strings(&["master", "status", "--project", p, "--json"]), &[], None);
    }
    // Human output of a few verbs.
    run_v("status, human", strings(&["master", "status", "--project", PROJECT]), &[], None);
    run_v(
        "a refused handoff, human",
        strings(&[
            "master",
            "handoff",
            "--project",
            PROJECT,
            "--session",
            &b_sid,
            "--token-file",
            s(&b_tok),
            "--to",
            "x",
        ]),
        &[],
        None,
    );
    run_v("inbox, human", strings(&["inbox", "--project", PROJECT, "--identity", "alice"]), &[], None);
    for (v, n) in [(&a_sid, "<sid:alice>"), (&b_sid, "<sid:bob>"), (&c_sid, "<sid:carol>")] {
        names.push((v.clone(), n.into()));
    }
    for (v, n) in [
        (&a_token, "<token:alice>"),
        (&old_a_token, "<token:alice-old>"),
        (&b_token, "<token:bob>"),
        (&c_token, "<token:carol>"),
    ] {
        names.push((v.clone(), n.into()));
    }
    // Every token a registration printed.
    for st in &steps {
        if let Ok(v) = serde_json::from_str::<Value>(&st.run.stdout)
            && let Some(t) = v["token"].as_str()
        {
            names.push((t.to_string(), format!("<token:{}>", st.label)));
        }
    }
    // Dave's two rows, by surface.
    let status: Value = steps.iter().rev().find(|s| s.label == "status").unwrap().run.json();
    for row in status["controllers"].as_array().unwrap() {
        if row["identity"] == "dave" {
            names.push((
                row["session_id"].as_str().unwrap().into(),
                format!("<sid:dave-{}>", row["surface"].as_str().unwrap()),
            ));
        }
    }
    (steps, names)
}

/// The `error.code` of a `--json` run, if its stdout is an error document.
fn json_error_code(r: &Run) -> Option<String> {
    serde_json::from_str::<Value>(&r.stdout).ok()?["error"]["code"].as_str().map(str::to_string)
}

fn clone_run(r: &Run) -> Run {
    Run { code: r.code, stdout: r.stdout.clone(), stderr: r.stderr.clone() }
}

/// `text` with every replacement applied and every RFC 3339 time (and "Ns ago") masked.
fn normalize(text: &str, names: &[(String, String)]) -> String {
    let mut t = text.to_string();
    for (from, to) in names {
        if from.len() >= 8 {
            t = t.replace(from.as_str(), to);
        }
    }
    // 2026-11-30T17:57:11.587Z
    let b = t.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if i + 24 <= b.len() && is_iso_ms(&b[i..i + 24]) {
            out.push_str("<time>");
            i += 24;
        } else {
            let ch = t[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    // "12s ago" in human tables.
    out.split(' ')
        .map(|w| {
            if w.ends_with('s') && w[..w.len() - 1].chars().all(|c| c.is_ascii_digit()) && !w.is_empty() && w.len() > 1
            {
                "<n>s"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The recursive key structure of a JSON document (objects by key, arrays by element).
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), shape(x))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(shape).collect()),
        _ => Value::Null,
    }
}

/// `v` with the lists the product orders by session id (controllers, candidates, stale
/// sessions) sorted by their masked form, so that two runs with different ids compare.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let x = canonical(x);
                    let x = match (k.as_str(), x) {
                        ("controllers" | "candidates" | "stale_sessions", Value::Array(mut a)) => {
                            a.sort_by_key(|e| e.to_string());
                            Value::Array(a)
                        }
                        // "dave has 2 fresh controllers: <sid:a>, <sid:b> (coordinator: <coordinator>)"
                        ("message", Value::String(m)) => {
                            let (text, asked) = match m.rfind(" (coordinator: ") {
                                Some(i) => (&m[..i], &m[i..]),
                                None => (m.as_str(), ""),
                            };
                            match text.rsplit_once(": ") {
                                Some((head, list)) if list.starts_with("<sid:") => {
                                    let mut ids: Vec<&str> = list.split(", ").collect();
                                    ids.sort();
                                    Value::String(format!("{head}: {}{asked}", ids.join(", ")))
                                }
                                _ => Value::String(m),
                            }
                        }
                        (_, x) => x,
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        x => x.clone(),
    }
}

/// Every JSON document in a `--json` stdout (one document, or one per line for --follow),
/// canonical.
fn docs(stdout: &str) -> Vec<Value> {
    match serde_json::from_str::<Value>(stdout) {
        Ok(v) => vec![canonical(&v)],
        Err(_) => stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| canonical(&serde_json::from_str(l).unwrap_or(Value::Null)))
            .collect(),
    }
}

/// Human output with its lines sorted (tables list rows by session id).
fn sorted_lines(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text.lines().collect();
    v.sort();
    v
}

/// The same script against the embedded store and against a server over SQLite: the same
/// exit codes, error codes and key sets for every step, and (with ids, tokens and times
/// masked) the same documents and the same human output.
#[test]
fn same_output_as_embedded() {
    let embedded = Co::new();
    let http = Co::http_sqlite();
    let (e_steps, e_names) = parity_script(&embedded);
    let (h_steps, h_names) = parity_script(&http);
    assert_eq!(e_steps.len(), h_steps.len());
    // The script exercises what it means to (on the embedded store, the reference).
    let outcome = |label: &str| {
        let st = e_steps.iter().find(|s| s.label == label).unwrap_or_else(|| panic!("no step {label}"));
        (st.run.code, json_error_code(&st.run))
    };
    for label in [
        "register alice",
        "heartbeat alice",
        "operator add",
        "cooperative handoff",
        "claim for carol",
        "claim to the master itself",
        "inbox follow",
        "audit of the project",
        "deregister bob",
        "status",
    ] {
        assert_eq!(outcome(label), (0, None), "{label}");
    }
    for (label, exit, code) in [
        ("register a 300-byte identity", 2, "invalid_argument"),
        ("heartbeat alice with bob's token", 6, "unauthorized"),
        ("heartbeat alice without a token", 2, "invalid_argument"),
        ("handoff by a non-master", 3, "not_master"),
        ("handoff to nobody", 5, "target_not_registered"),
        ("handoff from a stale epoch", 3, "stale_master"),
        ("operator add again", 3, "operator_exists"),
        ("claim with a wrong password", 6, "invalid_operator_credentials"),
        ("claim from a stale epoch", 3, "stale_master"),
        ("handoff to an ambiguous identity", 5, "target_ambiguous"),
        ("deregister bob again", 6, "unauthorized"),
        ("status with freshness 0", 2, "usage"),
    ] {
        assert_eq!(outcome(label), (exit, Some(code.to_string())), "{label}");
    }
    let mut differences = Vec::new();
    for (e, h) in e_steps.iter().zip(&h_steps) {
        assert_eq!(e.label, h.label);
        let label = &e.label;
        let (en, hn) = (normalize(&e.run.stdout, &e_names), normalize(&h.run.stdout, &h_names));
        assert_eq!(
            e.run.code, h.run.code,
            "{label}: exit codes differ\nembedded:\n{}{}\nhttp:\n{}{}",
            e.run.stdout, e.run.stderr, h.run.stdout, h.run.stderr
        );
        if e.json {
            let (ed, hd) = (docs(&en), docs(&hn));
            let code = |d: &[Value]| d.first().and_then(|v| v["error"]["code"].as_str().map(str::to_string));
            assert_eq!(code(&ed), code(&hd), "{label}: error codes differ\nembedded:\n{en}\nhttp:\n{hn}");
            let (es, hs): (Vec<Value>, Vec<Value>) = (ed.iter().map(shape).collect(), hd.iter().map(shape).collect());
            assert_eq!(es, hs, "{label}: key sets differ\nembedded:\n{en}\nhttp:\n{hn}");
            if ed != hd {
                differences.push(format!("{label}:\nembedded:\n{en}\nhttp:\n{hn}"));
            }
        } else if sorted_lines(&en) != sorted_lines(&hn) {
            differences.push(format!("{label} (human):\nembedded:\n{en}\nhttp:\n{hn}"));
        }
    }
    assert!(
        differences.is_empty(),
        "{} steps print different documents:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

/// PRODUCT BUG: a name too long for the server's request limits fails differently over HTTP
/// than in-process. Embedded: `invalid_argument` (exit 2, "identity is longer than 256
/// bytes"). Over HTTP: a register body over 64 KiB gets a bare 413 (no JSON error), which the
/// client turns into `internal` (exit 1); a 70 KB project name in the URL fails in the
/// client ("uri too long"), also `internal` (exit 1).
#[test]
fn oversized_names_fail_like_embedded() {
    let embedded = Co::new();
    let http = Co::http_sqlite();
    let long = "a".repeat(70_000);
    let cases: [(&str, Vec<&str>); 3] = [
        ("register a 70 KB identity", vec!["session", "register", "--project", PROJECT, "--identity", &long, "--json"]),
        ("status of a 70 KB project", vec!["master", "status", "--project", &long, "--json"]),
        ("inbox of a 70 KB identity", vec!["inbox", "--project", PROJECT, "--identity", &long, "--json"]),
    ];
    let mut differ = Vec::new();
    for (label, args) in &cases {
        let e = embedded.run(args);
        let h = http.run(args);
        let outcome = |r: &Run| (r.code, json_error_code(r));
        assert_eq!(outcome(&e), (2, Some("invalid_argument".to_string())), "{label}: {e:?}");
        if outcome(&e) != outcome(&h) {
            let msg: Value = serde_json::from_str(&h.stdout).unwrap_or(Value::Null);
            differ.push(format!(
                "{label}: embedded {:?}, http {:?} ({})",
                outcome(&e),
                outcome(&h),
                msg["error"]["message"]
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// PRODUCT BUG (audit completeness): "Every verb, successful or not, lands in an audit log",
/// and a wrong session token on a heartbeat is audited as `unauthorized`; but an `operator
/// add` refused over HTTP for a wrong admin token leaves no audit row at all (nor does a
/// refused `audit` read), so attempts to guess the admin token are invisible.
#[test]
fn refused_admin_calls_are_audited() {
    let co = Co::http_sqlite();
    let url = co.url();
    co.reg("alice");
    let r = run_at_stdin(
        &co,
        &url,
        &["operator", "add", "intruder", "--password-stdin", "--json"],
        &[("WRITERCTL_ADMIN_TOKEN", "not-the-admin-token-0000")],
        &[],
        b"pw\n",
    );
    err_doc(&r, 6, "unauthorized");
    let adds: Vec<Value> = co.audit(None).into_iter().filter(|a| a["verb"] == "operator.add").collect();
    assert_eq!(
        adds.iter().map(|a| (a["target"].clone(), a["result"].clone())).collect::<Vec<_>>(),
        vec![(json!("operator:intruder"), json!("unauthorized"))],
        "the refused operator add is not in the audit log: {adds:#?}"
    );
}

/// `inbox --follow` over HTTP (a long poll): the old event at once, a new one as soon as a
/// verb produces it, and exit 0 at the timeout.
#[test]
fn inbox_follow_long_polls() {
    let co = Co::http_sqlite();
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    ok_doc(&co.handoff(&alice, "bob", &["--expect-epoch", "1"]));
    let follower = Follower::spawn(co.inbox_follow("alice", &["--timeout", "6"]));
    let first = follower.json_line(LIMIT);
    assert_preempted(&first, &alice, &bob, 2, None);
    // While the follower waits inside the server: bob hands back, alice hands off again.
    ok_doc(&co.handoff(&bob, "alice", &["--expect-epoch", "2"]));
    ok_doc(&co.handoff(&alice, "bob", &["--expect-epoch", "3"]));
    let second = follower.json_line(LIMIT);
    assert_preempted(&second, &alice, &bob, 4, None);
    let rest = follower.finish(LIMIT);
    assert_eq!((rest.code, rest.stdout.as_str()), (0, ""), "{rest:?}");
}

/// The HTTP statuses of refusals (4xx for the caller's mistakes, 409 for conflicts) and the
/// target preview endpoint, on the wire.
#[test]
fn http_statuses_of_refusals() {
    let co = Co::http_sqlite();
    let url = co.url();
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    co.add_operator("ops", PASSWORD);
    let v1 = |p: &str| format!("{url}/v1/projects/{PROJECT}{p}");
    let bearer = |t: &str| format!("Bearer {t}");
    let handoff = |token: &str, sid: &str, to: &str, epoch: u64| {
        let body = json!({"session_id": sid, "to": to, "expect_epoch": epoch}).to_string();
        http_post(&v1("/master/handoff"), &[("authorization", &bearer(token))], body.as_bytes())
    };
    let expect = |(status, _, body): (u16, String, String), want: u16, code: &str| {
        assert_eq!((status, http_error_code(&body).as_str()), (want, code), "{body}");
    };
    expect(handoff(&bob.token, &bob.sid, "alice", 1), 409, "not_master");
    expect(handoff(&alice.token, &alice.sid, "bob", 0), 409, "stale_master");
    expect(handoff(&alice.token, &alice.sid, "ghost", 1), 404, "target_not_registered");
    expect(handoff(&bob.token, &alice.sid, "bob", 1), 401, "unauthorized");
    let no_auth = http_post(&v1("/master/handoff"), &[], br#"{"session_id":"x","to":"y","expect_epoch":1}"#);
    expect(no_auth, 401, "unauthorized");
    let claim = json!({"to": "bob", "expect_epoch": 1, "operator": "ops", "password": "wrong"}).to_string();
    let (status, _, body) = http_post(&v1("/master/claim"), &[], claim.as_bytes());
    assert_eq!((status, http_error_code(&body).as_str()), (401, "invalid_operator_credentials"), "{body}");
    let (status, _, body) = http_post(&v1("/sessions"), &[], br#"{"identity":"x"}"#);
    assert_eq!((status, http_error_code(&body).as_str()), (400, "invalid_argument"), "{body}");
    // The preview of a target: the row, or the resolution's refusal.
    let (status, _, body) = http_get(&format!("{}?to=bob", v1("/master/target")));
    assert_eq!(status, 200, "{body}");
    let row: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((&row["session_id"], &row["is_master"]), (&json!(bob.sid), &json!(false)));
    assert!(row.get("token_hash").is_none(), "{row}");
    let (status, _, body) = http_get(&format!("{}?to=ghost", v1("/master/target")));
    assert_eq!((status, http_error_code(&body).as_str()), (404, "target_not_registered"), "{body}");
    // No answer carries a token hash.
    let (_, _, st) = http_get(&v1("/master"));
    assert!(!st.contains("token_hash"), "{st}");
    co.assert_master(Some(&alice), 1);
}
