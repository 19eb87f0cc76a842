//! `TestEnv`: a scratch runtime directory and a way to run the real binary with a cleared
//! environment, plus helpers to stage qwen-format records by hand.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde::Deserialize;

pub const BIN: &str = env!("CARGO_BIN_EXE_writerctl");

/// The result of one run.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    /// Parses stdout as JSON into `T`.
    pub fn json<T: for<'de> Deserialize<'de>>(&self) -> T {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!("stdout is not the expected JSON ({e}):\n{}\nstderr:\n{}", self.stdout, self.stderr)
        })
    }

    /// The `error.code` of a `--json` failure.
    pub fn error_code(&self) -> String {
        let e: ErrorDoc = self.json();
        e.error.code
    }

    /// Asserts exit code and JSON error code together.
    #[track_caller]
    pub fn assert_error(&self, exit: i32, code: &str) {
        assert_eq!(
            (self.code, self.error_code().as_str()),
            (exit, code),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
    }

    #[track_caller]
    pub fn assert_ok(&self) -> &Run {
        assert_eq!(self.code, 0, "stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        self
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorDoc {
    pub error: ErrorBody,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
    pub hint: Option<String>,
    /// coordinator_unavailable's `false` (never sent) or `"unknown"` (issue 28).
    #[serde(default)]
    pub applied: Option<serde_json::Value>,
}

/// `acquire --json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcquireJson {
    pub session_id: String,
    pub state: String,
    pub owner_token: Option<String>,
    pub lock_path: String,
    pub pid: u32,
    pub reclaimed: bool,
    pub token_file: Option<String>,
    pub previous: Option<PreviousJson>,
    pub epoch: u64,
    /// Complete SHA-256 passes over the transcript, after a certified takeover.
    pub transcript_hash_passes: Option<u64>,
    /// What a reclaim the kernel proved replaced (issue 38).
    pub recovered_from: Option<serde_json::Value>,
    /// `clean` or `torn`, after such a reclaim.
    pub transcript_tail: Option<String>,
}

/// `previous` of a certified takeover.
#[derive(Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreviousJson {
    pub hostname: String,
    pub pid: u64,
    pub sealed_at: String,
}

/// The `transcript` proof in `seal --json`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProofOut {
    pub relative_path: String,
    pub exists: bool,
    pub byte_length: u64,
    pub sha256: String,
}

/// `seal --json` (also what the preStop path prints).
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealJson {
    pub session_id: String,
    pub state: String,
    pub sealed_at: String,
    pub transcript: ProofOut,
    /// `writerctl_exclusive` (null unless a `run` supervisor sealed).
    pub exclusive: Option<String>,
}

/// `release --json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseJson {
    pub session_id: String,
    pub state: String,
    pub lock_path: String,
    pub retired_file_left: bool,
    pub durable: bool,
}

/// `status --json` for one session.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusJson {
    pub session_id: String,
    pub lock_path: String,
    pub state: String,
    pub owner: Option<OwnerJson>,
    pub live: Option<bool>,
    pub liveness: Option<LivenessJson>,
    pub managed_schema: bool,
    pub proof: Option<ProofJson>,
    pub claim: Option<ClaimJson>,
    pub side_files: Vec<SideFileJson>,
    pub problem: Option<String>,
    pub next_step: String,
    /// How the transcript ends (`status --session`; null over a whole directory).
    pub transcript_tail: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerJson {
    pub schema_version: u8,
    pub format_version: Option<u64>,
    pub pid: u64,
    pub hostname: String,
    pub process_kind: String,
    pub acquired_at: String,
    pub process_start_identity: Option<String>,
    pub pid_namespace_id: Option<u64>,
    pub qwen_version: Option<String>,
    pub writer: Option<String>,
    pub epoch: u64,
    pub pod: Option<serde_json::Value>,
    pub recovered_from: Option<serde_json::Value>,
    pub rule: Option<String>,
    /// The holder-lock file (`writerctl_holder_lock`), for locks taken by `run`.
    pub holder_lock: Option<String>,
    /// Which file that is (`writerctl_holder_lock_id`, issue 38).
    pub holder_lock_id: Option<String>,
    /// The transcript whose lock the holder keeps (`writerctl_transcript_ino`, issue 38).
    pub transcript_ino: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LivenessJson {
    pub code: String,
    pub description: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProofJson {
    pub sealed_at: String,
    pub relative_path: String,
    pub exists: bool,
    pub byte_length: u64,
    pub sha256: String,
    pub matches: Option<bool>,
    pub mismatch: Option<String>,
    pub exclusive: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimJson {
    pub file_type: String,
    pub valid_record: bool,
    pub owner: Option<OwnerJson>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SideFileJson {
    pub name: String,
    pub kind: String,
    pub meaning: String,
}

/// `status --json` for every session.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusAllJson {
    pub runtime_dir: String,
    pub sessions: Vec<StatusJson>,
}

/// A scratch runtime directory R with a pinned HOME/TMPDIR.
pub struct TestEnv {
    pub tmp: tempfile::TempDir,
}

impl TestEnv {
    pub fn new() -> TestEnv {
        TestEnv { tmp: tempfile::tempdir().unwrap() }
    }

    /// The runtime directory R (created).
    pub fn runtime(&self) -> PathBuf {
        let r = self.tmp.path().join("runtime");
        std::fs::create_dir_all(&r).unwrap();
        r
    }

    /// R/tmp/session-writer-locks (created).
    pub fn lock_dir(&self) -> PathBuf {
        let d = self.runtime().join("tmp/session-writer-locks");
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Path of `L` for `session` (ids used in tests need no encoding unless the test says).
    pub fn lock(&self, session: &str) -> PathBuf {
        self.lock_dir().join(format!("{session}.lock"))
    }

    /// A command for the binary with a cleared environment.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(BIN);
        c.env_clear()
            .env("HOME", self.tmp.path())
            .env("TMPDIR", self.tmp.path())
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null());
        c
    }

    /// Runs with `args`, `--runtime-dir R` appended after the subcommand's own args.
    pub fn run(&self, args: &[&str]) -> Run {
        let mut c = self.cmd();
        c.args(args).arg("--runtime-dir").arg(self.runtime());
        Run::from(c.output().unwrap())
    }

    /// Runs exactly `args` (no runtime dir added).
    pub fn run_raw(&self, args: &[&str]) -> Run {
        Run::from(self.cmd().args(args).output().unwrap())
    }

    /// Runs with an extra environment variable.
    pub fn run_env(&self, args: &[&str], key: &str, val: &str) -> Run {
        let mut c = self.cmd();
        c.args(args).arg("--runtime-dir").arg(self.runtime()).env(key, val);
        Run::from(c.output().unwrap())
    }

    /// Every file name in the lock directory, sorted.
    pub fn lock_dir_names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.lock_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    /// Acquires `session` for `pid` with a token file; returns the token file path.
    pub fn acquire_for(&self, session: &str, pid: u32) -> PathBuf {
        let tok = self.tmp.path().join(format!("{session}.{pid}.{}.token", uuid_like()));
        self.run(&[
            "acquire",
            "--json",
            "--session",
            session,
            "--pid",
            &pid.to_string(),
            "--token-file",
            tok.to_str().unwrap(),
        ])
        .assert_ok();
        tok
    }
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst).to_string()
}

/// Facts about this machine for staging records that look local.
pub struct Local {
    pub hostname: String,
    pub boot_id: String,
    pub pid_ns: u64,
}

pub fn local() -> Local {
    Local {
        hostname: writerctl::lockfile::sys::hostname(),
        boot_id: writerctl::lockfile::identity::read_boot_id().unwrap(),
        pid_ns: writerctl::lockfile::identity::pid_namespace_id(None).unwrap(),
    }
}

/// A hand-written qwen schema-2 active record (qwen's exact key order, no `writer` key).
pub fn qwen_active(
    session: &str,
    owner: &str,
    pid: u64,
    identity: Option<&str>,
    ns: Option<u64>,
    host: &str,
) -> String {
    let mut s =
        format!(r#"{{"schema_version":2,"state":"active","session_id":"{session}","owner_id":"{owner}","pid":{pid}"#);
    if let Some(i) = identity {
        s.push_str(&format!(r#","process_start_identity":"{i}""#));
    }
    if let Some(n) = ns {
        s.push_str(&format!(r#","pid_namespace_id":{n}"#));
    }
    s.push_str(&format!(
        r#","hostname":"{host}","process_kind":"acp","acquired_at":"2026-07-28T00:00:00.000Z","qwen_version":"0.0.1"}}"#
    ));
    s
}

/// A qwen schema-2 active record for a live-looking local process `pid` (identity read now).
pub fn qwen_active_local(session: &str, owner: &str, pid: u32) -> String {
    let l = local();
    let id = writerctl::lockfile::identity::process_start_identity(pid as u64).unwrap();
    qwen_active(session, owner, pid as u64, Some(&id), Some(l.pid_ns), &l.hostname)
}

/// A qwen schema-2 active record for a dead local pid (i32::MAX is never a live pid).
pub fn qwen_active_dead(session: &str, owner: &str) -> String {
    let l = local();
    let id = format!("linux:{}:12345", l.boot_id);
    qwen_active(session, owner, i32::MAX as u64, Some(&id), Some(l.pid_ns), &l.hostname)
}

/// A hand-written qwen schema-2 sealed record.
pub fn qwen_sealed(session: &str, owner: &str) -> String {
    let active = qwen_active_dead(session, owner);
    let body = active.replace(r#""state":"active""#, r#""state":"sealed""#);
    format!(
        r#"{},"sealed_at":"2026-07-28T00:00:01.000Z","transcript":{{"relative_path":"chats/{session}.jsonl","exists":true,"byte_length":6,"sha256":"{}"}}}}"#,
        body.trim_end_matches('}'),
        "a".repeat(64)
    )
}

/// The `writerctl_holder_lock_id` a record written now would carry for the file at `path`
/// (issue 38: inode and change time), as the engine encodes it.
pub fn holder_file_id(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path).unwrap();
    format!("{}:{}.{:09}", m.ino(), m.ctime(), m.ctime_nsec())
}

/// Writes `bytes` at `path`.
pub fn stage(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}

/// Starts a process that sleeps until killed (a stand-in holder).
pub fn sleeper() -> std::process::Child {
    Command::new("sleep").arg("1000").stdin(Stdio::null()).spawn().unwrap()
}

// ---------------------------------------------------------------------------------------
// recover
// ---------------------------------------------------------------------------------------

/// `recover --json` for one session.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoverJson {
    pub session_id: String,
    pub dry_run: bool,
    pub blocked: Option<String>,
    pub folder: Option<String>,
    pub actions: Vec<RecoverActionJson>,
}

/// One step of a `recover` plan (or its result).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoverActionJson {
    pub action: String,
    pub file: String,
    pub reason: String,
    pub result: String,
}

/// `recover --json` without `--session`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoverAllJson {
    pub dry_run: bool,
    pub sessions: Vec<RecoverJson>,
}

/// One entry of a recursive snapshot, compared byte for byte (shown as text when it is).
#[derive(Clone, PartialEq, Eq)]
pub enum TreeNode {
    File(Vec<u8>),
    Dir,
    Symlink(PathBuf),
    Fifo,
    Other,
}

impl std::fmt::Debug for TreeNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TreeNode::File(b) => match std::str::from_utf8(b) {
                Ok(s) => write!(f, "File({s:?})"),
                Err(_) => write!(f, "File({b:?})"),
            },
            TreeNode::Dir => write!(f, "Dir"),
            TreeNode::Symlink(p) => write!(f, "Symlink({p:?})"),
            TreeNode::Fifo => write!(f, "Fifo"),
            TreeNode::Other => write!(f, "Other"),
        }
    }
}

/// Every entry under `dir`, recursively and without following symlinks, keyed by its path
/// relative to `dir` (`folder/name`), with the exact bytes of every regular file.
pub fn tree(dir: &Path) -> std::collections::BTreeMap<String, TreeNode> {
    fn walk(dir: &Path, prefix: &str, out: &mut std::collections::BTreeMap<String, TreeNode>) {
        use std::os::unix::fs::FileTypeExt;
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = format!("{prefix}{}", e.file_name().into_string().unwrap());
            let p = e.path();
            let ft = std::fs::symlink_metadata(&p).unwrap().file_type();
            let node = if ft.is_symlink() {
                TreeNode::Symlink(std::fs::read_link(&p).unwrap())
            } else if ft.is_file() {
                TreeNode::File(std::fs::read(&p).unwrap())
            } else if ft.is_dir() {
                walk(&p, &format!("{name}/"), out);
                TreeNode::Dir
            } else if ft.is_fifo() {
                TreeNode::Fifo
            } else {
                TreeNode::Other
            };
            out.insert(name, node);
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, "", &mut out);
    out
}

/// A `sleeper()` child killed and reaped on drop, so a failing test leaves no process.
pub struct LiveHolder(pub std::process::Child);

impl LiveHolder {
    pub fn start() -> LiveHolder {
        LiveHolder(sleeper())
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Kills and reaps it now.
    pub fn stop(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for LiveHolder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// ---------------------------------------------------------------------------------------
// crash matrix and hostile paths: bounded runs and metadata snapshots
// ---------------------------------------------------------------------------------------

/// Runs `c` with piped output and waits at most `limit`. `None` when it had to be killed
/// because it hung (the caller decides whether that is a failure). A process that died of a
/// signal has `code == -1`.
pub fn run_bounded(mut c: Command, limit: std::time::Duration) -> Option<Run> {
    wait_child_bounded(c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap(), limit)
}

/// Waits at most `limit` for a child spawned with piped stdout and stderr, collecting both.
/// `None` when it had to be killed because it hung.
pub fn wait_child_bounded(mut child: std::process::Child, limit: std::time::Duration) -> Option<Run> {
    use std::io::Read;
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    let stdout = String::from_utf8_lossy(&t_out.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&t_err.join().unwrap()).into_owned();
    status.map(|st| Run { code: st.code().unwrap_or(-1), stdout, stderr })
}

/// `args` plus `--runtime-dir R`, a cleared environment plus `extra`, bounded by `limit`.
pub fn cli_bounded(env: &TestEnv, args: &[&str], extra: &[(&str, &str)], limit: std::time::Duration) -> Option<Run> {
    let mut c = env.cmd();
    c.args(args).arg("--runtime-dir").arg(env.runtime());
    for (k, v) in extra {
        c.env(k, v);
    }
    run_bounded(c, limit)
}

/// The `error.code` of a `--json` failure, or `None` when stdout is no error document.
pub fn try_error_code(r: &Run) -> Option<String> {
    serde_json::from_str::<ErrorDoc>(&r.stdout).ok().map(|d| d.error.code)
}

/// One entry of a metadata snapshot: files by bytes, inode, mode, owner, link count, mtime
/// and ctime; directories by mode and owner (their mtime is left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaNode {
    Dir { mode: u32, uid: u32 },
    File { bytes: Vec<u8>, ino: u64, mode: u32, uid: u32, nlink: u64, mtime: (i64, i64), ctime: (i64, i64) },
    Symlink(PathBuf),
    Fifo { ino: u64, mode: u32 },
    Socket { ino: u64, mode: u32 },
    Other,
}

/// Every entry under `root`, recursively and never following a symlink, keyed by its path
/// relative to `root`. Regular files are read as the calling user (root reads mode 000).
pub fn meta_tree(root: &Path) -> std::collections::BTreeMap<String, MetaNode> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, MetaNode>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let ft = m.file_type();
            let node = if ft.is_symlink() {
                MetaNode::Symlink(std::fs::read_link(&p).unwrap())
            } else if ft.is_dir() {
                walk(root, &p, out);
                MetaNode::Dir { mode: m.mode(), uid: m.uid() }
            } else if ft.is_file() {
                MetaNode::File {
                    bytes: std::fs::read(&p).unwrap_or_else(|e| format!("<unreadable: {e}>").into_bytes()),
                    ino: m.ino(),
                    mode: m.mode(),
                    uid: m.uid(),
                    nlink: m.nlink(),
                    mtime: (m.mtime(), m.mtime_nsec()),
                    ctime: (m.ctime(), m.ctime_nsec()),
                }
            } else if ft.is_fifo() {
                MetaNode::Fifo { ino: m.ino(), mode: m.mode() }
            } else if ft.is_socket() {
                MetaNode::Socket { ino: m.ino(), mode: m.mode() }
            } else {
                MetaNode::Other
            };
            out.insert(rel, node);
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Whether `b` is a time as JavaScript's `toISOString` prints it, `YYYY-MM-DDTHH:MM:SS.mmmZ`
/// (the shape qwen's records and writerctl's JSON use; it says nothing of the instant).
pub fn is_iso_ms(b: &[u8]) -> bool {
    b.len() == 24
        && b.iter().enumerate().all(|(k, c)| match k {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// SHA-256 of `bytes` as lowercase hex (the `sha2` crate, not writerctl's hashing code).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A qwen schema-2 sealed record for a dead local owner whose proof certifies `body` at
/// `key` (qwen's §2.1 serialization: the active record with `state` flipped, then
/// `sealed_at` and `transcript` appended).
pub fn qwen_sealed_for(session: &str, owner: &str, key: &str, body: Option<&[u8]>) -> String {
    let active = qwen_active_dead(session, owner);
    let b = active.replacen(r#""state":"active""#, r#""state":"sealed""#, 1);
    let (exists, len, sha) = match body {
        Some(b) => (true, b.len(), sha256_hex(b)),
        None => (false, 0, sha256_hex(b"")),
    };
    format!(
        r#"{},"sealed_at":"2026-07-28T00:00:01.000Z","transcript":{{"relative_path":"{key}","exists":{exists},"byte_length":{len},"sha256":"{sha}"}}}}"#,
        b.strip_suffix('}').unwrap()
    )
}

/// Spawns every command (the real binary with `--runtime-dir R`, a cleared environment plus
/// `vars`) blocked on one pipe until the barrier opens, then collects (label, exit code,
/// stdout) for each. A late starter can never block: once the write end is closed, every
/// reader sees EOF whenever it gets there.
pub fn race_commands(env: &TestEnv, cmds: &[(&str, Vec<String>)], vars: &[(&str, &str)]) -> Vec<(String, i32, String)> {
    use std::io::Read;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};
    let (reader, writer) = std::io::pipe().unwrap();
    let children: Vec<(String, Child)> = cmds
        .iter()
        .map(|(label, args)| {
            let child = Command::new("sh")
                .arg("-c")
                .arg(r#"cat >/dev/null; exec "$0" "$@""#)
                .arg(BIN)
                .args(args)
                .arg("--runtime-dir")
                .arg(env.runtime())
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("HOME", env.tmp.path())
                .envs(vars.iter().copied())
                .stdin(Stdio::from(reader.try_clone().unwrap()))
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            (label.to_string(), child)
        })
        .collect();
    drop(reader);
    std::thread::sleep(Duration::from_millis(30));
    drop(writer);
    children
        .into_iter()
        .map(|(label, mut c)| {
            let mut out = String::new();
            c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
            let deadline = Instant::now() + Duration::from_secs(60);
            let status = loop {
                if let Some(st) = c.try_wait().unwrap() {
                    break st;
                }
                assert!(Instant::now() < deadline, "{label} hangs");
                std::thread::sleep(Duration::from_millis(2));
            };
            (label, status.code().unwrap_or(-1), out)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// followers: `inbox --follow`, `status --watch`, `master status --watch`
// ---------------------------------------------------------------------------------------

/// A running command that prints a line per event (`inbox --follow`, `status --watch`),
/// read while the test changes what it follows. Its lines arrive through a channel from a
/// reader thread, so every wait is bounded: a follower that falls silent or never stops
/// fails the test (with its stderr) instead of stalling the suite. Dropping it kills the
/// process and reaps it.
pub struct Follower {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
}

impl Follower {
    /// Spawns `c` with stdout and stderr piped (stdin as `c` has it).
    pub fn spawn(mut c: Command) -> Follower {
        use std::io::{BufRead, Read};
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            loop {
                // Lines keep their newline: a test may check how the follower ends them.
                let mut line = String::new();
                match out.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) if tx.send(line).is_err() => return,
                    Ok(_) => {}
                }
            }
        });
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (mut err, into) = (child.stderr.take().unwrap(), stderr.clone());
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    return;
                }
                into.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Follower { child, lines, stderr, stderr_reader: Some(stderr_reader) }
    }

    /// The next stdout line, newline included, if one comes within `within` (zero: only one
    /// already printed); `None` also once stdout has ended.
    pub fn next_line(&self, within: std::time::Duration) -> Option<String> {
        self.lines.recv_timeout(within).ok()
    }

    /// The next stdout line, newline included; panics, showing stderr, when none comes
    /// within `within`.
    #[track_caller]
    pub fn line(&self, within: std::time::Duration) -> String {
        self.next_line(within).unwrap_or_else(|| panic!("no line within {within:?}; stderr:\n{}", self.stderr()))
    }

    /// The next stdout line as one JSON document (see [`Follower::line`]).
    #[track_caller]
    pub fn json_line(&self, within: std::time::Duration) -> serde_json::Value {
        let l = self.line(within);
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l:?}"))
    }

    /// What the process wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until stderr contains `text`, at most `within`; returns all of stderr.
    #[track_caller]
    pub fn stderr_shows_within(&self, text: &str, within: std::time::Duration) -> String {
        let started = std::time::Instant::now();
        loop {
            let err = self.stderr();
            if err.contains(text) {
                return err;
            }
            assert!(started.elapsed() < within, "stderr never said {text:?}:\n{err}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Waits at most `within` for the process to stop by itself (its own `--timeout`):
    /// its exit code (-1 for a signal), the stdout lines nobody read, and its stderr.
    #[track_caller]
    pub fn finish(mut self, within: std::time::Duration) -> Run {
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st;
            }
            assert!(started.elapsed() < within, "still running after {within:?}; stderr:\n{}", self.stderr());
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        // The process is gone, so both pipes reach EOF: what is left comes at once.
        let mut stdout = String::new();
        while let Ok(l) = self.lines.recv_timeout(within) {
            stdout.push_str(&l);
        }
        if let Some(t) = self.stderr_reader.take() {
            t.join().unwrap();
        }
        Run { code: status.code().unwrap_or(-1), stdout, stderr: self.stderr() }
    }

    /// Sends `signal` (`TERM`, `INT`) and returns the exit code; panics when the process
    /// does not exit within `within` or dies of a signal.
    #[track_caller]
    pub fn stop(mut self, signal: &str, within: std::time::Duration) -> i32 {
        let ok = Command::new("kill").arg(format!("-{signal}")).arg(self.child.id().to_string()).status().unwrap();
        assert!(ok.success());
        let started = std::time::Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.code().unwrap_or_else(|| panic!("killed by a signal: {st:?}"));
            }
            assert!(started.elapsed() < within, "did not exit within {within:?} of SIG{signal}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------
// many sources: connections from other loopback addresses
// ---------------------------------------------------------------------------------------

/// A TCP connection to `to` from the loopback address `from` (port chosen by the kernel).
/// On Linux every 127/8 address reaches a 127.0.0.1 listener, so a test can play as many
/// sources as a server tells apart by address.
pub fn connect_from(from: std::net::IpAddr, to: std::net::SocketAddr) -> std::net::TcpStream {
    try_connect_from(from, to).unwrap()
}

/// [`connect_from`], or why not (a flood's threads retry instead of failing).
pub fn try_connect_from(from: std::net::IpAddr, to: std::net::SocketAddr) -> std::io::Result<std::net::TcpStream> {
    use rustix::net::{AddressFamily, SocketType, bind, connect, ipproto, socket};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, Some(ipproto::TCP))?;
    bind(&fd, &std::net::SocketAddr::new(from, 0))?;
    connect(&fd, &to)?;
    Ok(std::net::TcpStream::from(fd))
}

/// One HTTP/1.1 request with a JSON `body` on a fresh connection from `from`, `headers`
/// added to its head: (status, the answer's head in lower case, its body as JSON or Null).
pub fn request_from(
    from: std::net::IpAddr,
    to: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
) -> (u16, String, serde_json::Value) {
    use std::io::{Read, Write};
    let mut c = connect_from(from, to);
    c.set_read_timeout(Some(std::time::Duration::from_secs(120))).unwrap();
    let body = body.to_string();
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {to}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    c.write_all(head.as_bytes()).unwrap();
    c.write_all(body.as_bytes()).unwrap();
    let mut raw = String::new();
    c.read_to_string(&mut raw).unwrap();
    let status = raw.get(9..12).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not HTTP: {raw:?}"));
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    (status, head.to_ascii_lowercase(), serde_json::from_str(body).unwrap_or(serde_json::Value::Null))
}
