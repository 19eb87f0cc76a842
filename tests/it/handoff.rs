//! Certified session-writer handoff through the real binary (seed 001; QWEN_FORMAT §2, §4,
//! §5.6, §5.10): `seal`, `takeover`, `acquire --managed` as a certified takeover, `verify`
//! and the feature gate.
//!
//! Every test runs `writerctl` with a cleared environment and checks three things: the exit
//! status, the `--json` error code, and the exact bytes (plus inode, mode and link count) of
//! every file under the runtime directory afterwards — the lock, every side file and the
//! transcript. A refusal must change nothing and leave no claim, candidate or retired file.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::support::*;

const GATE: &str = "WRITERCTL_SESSION_WRITER_LEASE";
const S: &str = "handoff-session";
/// SHA-256 of empty input.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// A transcript as a drained writer leaves it: complete JSONL lines, UTF-8 included.
const BODY: &[u8] =
    "{\"type\":\"user\",\"text\":\"hi\"}\n{\"type\":\"assistant\",\"text\":\"h\u{e9}llo \u{1F600}\"}\n".as_bytes();
/// No `writerctl` run may take longer than this (a FIFO transcript must never block).
const RUN_LIMIT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------
// JSON documents
// ---------------------------------------------------------------------------------------

/// `takeover --json` / `acquire --json` (which carries `previous` too).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TakeoverJson {
    session_id: String,
    state: String,
    owner_token: Option<String>,
    lock_path: String,
    pid: u32,
    reclaimed: bool,
    token_file: Option<String>,
    previous: Option<PreviousJson>,
    epoch: u64,
    /// Complete SHA-256 passes over the transcript, after a certified takeover.
    transcript_hash_passes: Option<u64>,
}

/// `verify --json` on a match.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VerifyJson {
    session_id: String,
    state: String,
    matches: bool,
    sealed_at: String,
    recorded: ProofOut,
    actual: Option<ProofOut>,
    exclusive: Option<String>,
}

// ---------------------------------------------------------------------------------------
// running the binary
// ---------------------------------------------------------------------------------------

/// Runs `args` plus `--runtime-dir R` with a cleared environment plus `extra`.
fn run_with(env: &TestEnv, args: &[&str], extra: &[(&str, &str)]) -> Run {
    let mut c = env.cmd();
    c.args(args).arg("--runtime-dir").arg(env.runtime());
    for (k, v) in extra {
        c.env(k, v);
    }
    run_bounded(c, RUN_LIMIT)
        .unwrap_or_else(|| panic!("`{}` did not finish within {RUN_LIMIT:?}: it hangs", args.join(" ")))
}

/// With the gate on (`WRITERCTL_SESSION_WRITER_LEASE=1`).
fn gated(env: &TestEnv, args: &[&str]) -> Run {
    run_with(env, args, &[(GATE, "1")])
}

/// With the gate at its default (off: no variable, no config file under the scratch HOME).
fn ungated(env: &TestEnv, args: &[&str]) -> Run {
    run_with(env, args, &[])
}

fn me() -> String {
    std::process::id().to_string()
}

// ---------------------------------------------------------------------------------------
// files
// ---------------------------------------------------------------------------------------

/// What one entry is: files compared by bytes, inode, permission bits and link count.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir,
    File { bytes: Vec<u8>, ino: u64, mode: u32, nlink: u64 },
    Symlink(PathBuf),
    Fifo,
    Other,
}

/// Every entry under `root` (recursively, never following a symlink).
fn tree(root: &Path) -> BTreeMap<String, Node> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Node>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_str().unwrap().to_owned();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let ft = m.file_type();
            let node = if ft.is_symlink() {
                Node::Symlink(std::fs::read_link(&p).unwrap())
            } else if ft.is_dir() {
                walk(root, &p, out);
                Node::Dir
            } else if ft.is_file() {
                Node::File {
                    bytes: std::fs::read(&p).unwrap(),
                    ino: m.ino(),
                    mode: m.mode() & 0o7777,
                    nlink: m.nlink(),
                }
            } else if ft.is_fifo() {
                Node::Fifo
            } else {
                Node::Other
            };
            out.insert(rel, node);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn transcript_key(session: &str) -> String {
    format!("chats/{session}.jsonl")
}

fn transcript_path(env: &TestEnv, session: &str) -> PathBuf {
    env.runtime().join(transcript_key(session))
}

/// Writes a 0600 transcript at `path`, creating its directory.
fn write_transcript(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// SHA-256 by the system's `sha256sum`, independent of writerctl's own hashing.
fn sha256sum(path: &Path) -> String {
    let o = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(o.status.success(), "sha256sum {} failed", path.display());
    let text = String::from_utf8(o.stdout).unwrap();
    let hex = text.split_whitespace().next().unwrap().to_owned();
    assert_eq!(hex.len(), 64, "{text}");
    hex
}

/// SHA-256 of empty input by `sha256sum` reading an empty stdin.
fn sha256sum_of_nothing() -> String {
    let o = Command::new("sha256sum").stdin(Stdio::null()).output().unwrap();
    String::from_utf8(o.stdout).unwrap().split_whitespace().next().unwrap().to_owned()
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok, "mkfifo {} failed", p.display());
}

/// `status --json --session` as loose JSON.
fn status_value(env: &TestEnv, session: &str) -> Value {
    ungated(env, &["status", "--json", "--session", session]).assert_ok().json()
}

fn read_token(f: &Path) -> String {
    std::fs::read_to_string(f).unwrap().trim().to_owned()
}

fn fresh_token_file(env: &TestEnv, tag: &str) -> PathBuf {
    env.tmp.path().join(format!("{tag}.{}.token", uuid::Uuid::new_v4()))
}

/// The only entry for `session` in the lock directory is its primary lock (no claim,
/// candidate, handoff, retired, temp or guard file).
#[track_caller]
fn assert_only_primary(env: &TestEnv, session: &str) {
    let mine: Vec<String> =
        env.lock_dir_names().into_iter().filter(|n| n.starts_with(&format!("{session}.lock"))).collect();
    assert_eq!(mine, vec![format!("{session}.lock")], "side files left beside the primary");
}

/// Neither output stream names an owner token or the transcript (seed 001 "Failure
/// contract": public errors and logs are sanitized).
#[track_caller]
fn assert_sanitized(r: &Run, secrets: &[&str], what: &str) {
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        assert!(
            !r.stdout.contains(s) && !r.stderr.contains(s),
            "{what}: output leaks {s:?}\nstdout:\n{}\nstderr:\n{}",
            r.stdout,
            r.stderr
        );
    }
}

// ---------------------------------------------------------------------------------------
// records
// ---------------------------------------------------------------------------------------

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (JavaScript `toISOString`) and a real instant.
#[track_caller]
fn assert_iso_ms(s: &str) {
    assert!(is_iso_ms(s.as_bytes()), "{s:?} is not toISOString format");
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("{s:?} is not a valid instant: {e}"));
}

fn is_lower_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

fn keys(m: &Map<String, Value>) -> Vec<String> {
    m.keys().cloned().collect()
}

fn parse_obj(raw: &[u8]) -> Map<String, Value> {
    match serde_json::from_slice::<Value>(raw) {
        Ok(Value::Object(m)) => m,
        other => panic!("not a JSON object: {other:?}\n{}", String::from_utf8_lossy(raw)),
    }
}

/// Checks `raw` field by field against qwen's validator for a schema-2 sealed record
/// (QWEN_FORMAT §2.2) and qwen's serialization (§2.1: compact, no BOM, no trailing newline,
/// `transcript` keys in qwen's order). Returns the parsed object.
#[track_caller]
fn assert_qwen_sealed_v2(raw: &[u8]) -> Map<String, Value> {
    const MAX_SAFE: u64 = (1 << 53) - 1;
    assert!(!raw.starts_with(&[0xEF, 0xBB, 0xBF]), "a BOM makes the record invalid for qwen");
    let m = parse_obj(raw);
    assert_eq!(serde_json::to_vec(&Value::Object(m.clone())).unwrap(), raw, "not compact JSON.stringify output");
    let text = std::str::from_utf8(raw).unwrap();
    let non_empty = |k: &str| match m.get(k) {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        other => panic!("`{k}` must be a non-empty string, got {other:?} in {text}"),
    };
    assert!(m["schema_version"].is_u64() && m["schema_version"] == 2, "schema_version: {text}");
    assert_eq!(m["state"], "sealed", "{text}");
    non_empty("session_id");
    non_empty("owner_id");
    non_empty("hostname");
    let pid = m["pid"].as_u64().unwrap_or_else(|| panic!("pid must be an integer: {text}"));
    assert!(pid > 0, "pid must be > 0");
    if m.contains_key("process_start_identity") {
        non_empty("process_start_identity");
    }
    if let Some(ns) = m.get("pid_namespace_id") {
        let ns = ns.as_u64().unwrap_or_else(|| panic!("pid_namespace_id must be an integer: {text}"));
        assert!(ns > 0 && ns <= MAX_SAFE, "pid_namespace_id out of range");
    }
    assert!(
        ["interactive", "acp", "daemon", "unknown"].contains(&m["process_kind"].as_str().unwrap_or("")),
        "process_kind: {text}"
    );
    assert_iso_ms(m["acquired_at"].as_str().expect("acquired_at is a string"));
    let qv = m.get("qwen_version").expect("qwen_version is a required key");
    assert!(qv.is_null() || qv.is_string(), "qwen_version: {qv}");
    assert_iso_ms(m["sealed_at"].as_str().expect("sealed_at is a string"));
    let t = m["transcript"].as_object().expect("transcript is an object");
    assert_eq!(keys(t), ["relative_path", "exists", "byte_length", "sha256"], "transcript keys in qwen's order");
    assert!(t["relative_path"].as_str().is_some_and(|s| !s.is_empty()), "relative_path");
    let exists = t["exists"].as_bool().expect("exists is a boolean");
    let len = t["byte_length"].as_u64().expect("byte_length is a non-negative integer");
    assert!(len <= MAX_SAFE);
    assert!(is_lower_hex64(t["sha256"].as_str().expect("sha256 is a string")), "sha256 must be lowercase hex");
    assert!(exists || len == 0, "a missing transcript must have byte_length 0");
    m
}

/// The sealed record qwen's §2.1 rule derives from `active`: the same keys and bytes in the
/// same order, `state` overwritten in place, then `sealed_at` and `transcript` appended.
fn sealed_from(active: &[u8], sealed_at: &str, p: &ProofOut) -> Vec<u8> {
    sealed_from_with(active, sealed_at, p, None)
}

/// A sealed record as writerctl writes it: qwen's bytes plus, when the transcript exists,
/// the `writerctl_transcript_identity` extension read from `transcript` now.
fn writerctl_sealed_from(active: &[u8], sealed_at: &str, p: &ProofOut, transcript: &Path) -> Vec<u8> {
    sealed_from_with(active, sealed_at, p, p.exists.then_some(transcript))
}

fn sealed_from_with(active: &[u8], sealed_at: &str, p: &ProofOut, identity_of: Option<&Path>) -> Vec<u8> {
    use std::os::unix::fs::MetadataExt;
    let a = std::str::from_utf8(active).unwrap();
    let body = a.replacen(r#""schema_version":2,"state":"active","#, r#""schema_version":2,"state":"sealed","#, 1);
    assert_ne!(body, a, "not a schema-2 active record: {a}");
    let body = body.strip_suffix('}').unwrap();
    let identity = match identity_of {
        Some(t) => {
            let m = std::fs::metadata(t).unwrap();
            format!(
                r#","writerctl_transcript_identity":{{"ino":{},"mode":{},"uid":{},"gid":{},"nlink":{}}}"#,
                m.ino(),
                m.mode(),
                m.uid(),
                m.gid(),
                m.nlink()
            )
        }
        None => String::new(),
    };
    format!(
        r#"{body},"sealed_at":"{sealed_at}","transcript":{{"relative_path":"{}","exists":{},"byte_length":{},"sha256":"{}"}}{identity}}}"#,
        p.relative_path, p.exists, p.byte_length, p.sha256
    )
    .into_bytes()
}

/// The exact bytes of writerctl's active record for `token`/`pid` (process_kind `unknown`),
/// with the `acquired_at` found on disk (checked for format).
#[track_caller]
fn assert_writerctl_active(raw: &[u8], session: &str, token: &str, pid: u32) {
    let m = parse_obj(raw);
    let at = m["acquired_at"].as_str().expect("acquired_at").to_owned();
    assert_iso_ms(&at);
    let l = local();
    let identity = writerctl::lockfile::identity::process_start_identity(pid as u64).unwrap();
    // The fencing epoch grows along the chain of takeovers (checked where it matters).
    let epoch = m["writerctl_epoch"].as_u64().filter(|e| *e >= 1).expect("writerctl_epoch >= 1");
    let want = format!(
        r#"{{"schema_version":2,"state":"active","session_id":"{session}","owner_id":"{token}","pid":{pid},"process_start_identity":"{identity}","pid_namespace_id":{},"hostname":"{}","process_kind":"unknown","acquired_at":"{at}","qwen_version":null,"writer":"writerctl {}","writerctl_epoch":{epoch}}}"#,
        l.pid_ns,
        l.hostname,
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(String::from_utf8_lossy(raw), want, "the lock is not writerctl's exact active record");
}

// ---------------------------------------------------------------------------------------
// fixtures
// ---------------------------------------------------------------------------------------

/// A session acquired with `acquire --managed` and sealed with `seal`.
struct Sealed {
    token_file: PathBuf,
    token: String,
    /// The active record as it was before the seal.
    active: Vec<u8>,
    seal: SealJson,
    seal_run: Run,
}

/// `acquire --managed` (gate on) for `pid`; returns the token file, token and record bytes.
fn acquire_managed(env: &TestEnv, session: &str, pid: u32, extra: &[&str]) -> (PathBuf, String, Vec<u8>) {
    let tf = fresh_token_file(env, session);
    let pid = pid.to_string();
    let mut args = vec!["acquire", "--managed", "--json", "--session", session, "--pid", &pid];
    args.extend(["--token-file", tf.to_str().unwrap()]);
    args.extend(extra);
    let r = gated(env, &args);
    let j: TakeoverJson = r.assert_ok().json();
    assert_eq!((j.state.as_str(), j.previous.is_none()), ("active", true), "{}", r.stdout);
    let token = read_token(&tf);
    let active = std::fs::read(env.lock(session)).unwrap();
    assert_writerctl_active(&active, session, &token, pid.parse().unwrap());
    (tf, token, active)
}

/// `seal --json` (gate on) that must succeed.
fn seal_ok(env: &TestEnv, session: &str, token_file: &Path, extra: &[&str]) -> (SealJson, Run) {
    let mut args = vec!["seal", "--json", "--session", session, "--token-file", token_file.to_str().unwrap()];
    args.extend(extra);
    let r = gated(env, &args);
    let j: SealJson = r.assert_ok().json();
    (j, r)
}

/// Writes `transcript` (unless `None`), acquires managed for `pid` and seals.
fn sealed_session(env: &TestEnv, session: &str, pid: u32, transcript: Option<&[u8]>) -> Sealed {
    if let Some(body) = transcript {
        write_transcript(&transcript_path(env, session), body);
    }
    let (token_file, token, active) = acquire_managed(env, session, pid, &[]);
    let (seal, seal_run) = seal_ok(env, session, &token_file, &[]);
    Sealed { token_file, token, active, seal, seal_run }
}

/// `takeover --json --pid me` (gate on) with a new token file.
fn takeover(env: &TestEnv, session: &str, extra: &[&str]) -> (Run, PathBuf) {
    let tf = fresh_token_file(env, "takeover");
    let pid = me();
    let mut args =
        vec!["takeover", "--json", "--session", session, "--pid", &pid, "--token-file", tf.to_str().unwrap()];
    args.extend(extra);
    (gated(env, &args), tf)
}

// ---------------------------------------------------------------------------------------
// 1. sealing records the exact proof
// ---------------------------------------------------------------------------------------

#[test]
fn sealing_records_the_exact_key_existence_length_and_sha256() {
    assert_eq!(sha256sum_of_nothing(), EMPTY_SHA256, "sanity: the empty-input digest");
    let cases: [(&str, Option<&[u8]>); 3] = [("content", Some(BODY)), ("empty", Some(b"")), ("absent", None)];
    for (name, body) in cases {
        let env = TestEnv::new();
        let t = transcript_path(&env, S);
        let sealed = sealed_session(&env, S, std::process::id(), body);
        let p = &sealed.seal.transcript;
        assert_eq!((sealed.seal.session_id.as_str(), sealed.seal.state.as_str()), (S, "sealed"), "{name}");
        assert_iso_ms(&sealed.seal.sealed_at);
        assert_eq!(p.relative_path, transcript_key(S), "{name}: the exact runtime-relative key");
        match body {
            Some(b) => {
                assert!(p.exists, "{name}");
                assert_eq!(p.byte_length, std::fs::metadata(&t).unwrap().len(), "{name}: length of the file");
                assert_eq!(p.byte_length, b.len() as u64, "{name}");
                assert_eq!(p.sha256, sha256sum(&t), "{name}: digest by sha256sum");
                assert_eq!(std::fs::read(&t).unwrap(), b, "{name}: the seal changed the transcript");
            }
            None => {
                assert_eq!((p.exists, p.byte_length, p.sha256.as_str()), (false, 0, EMPTY_SHA256), "{name}");
                assert!(t.symlink_metadata().is_err(), "the seal created the transcript");
                assert!(!env.runtime().join("chats").exists(), "the seal created the transcript directory");
            }
        }
        if name == "empty" {
            assert_eq!(p.sha256, EMPTY_SHA256);
        }

        // On disk: exactly the active record's bytes turned sealed, nothing beside it.
        let raw = std::fs::read(env.lock(S)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&raw),
            String::from_utf8_lossy(&writerctl_sealed_from(&sealed.active, &sealed.seal.sealed_at, p, &t)),
            "{name}"
        );
        let m = assert_qwen_sealed_v2(&raw);
        let active = parse_obj(&sealed.active);
        let mut want_keys = keys(&active);
        want_keys.extend(["sealed_at".to_owned(), "transcript".to_owned()]);
        if p.exists {
            want_keys.push("writerctl_transcript_identity".to_owned());
        }
        assert_eq!(keys(&m), want_keys, "{name}: active keys in order, then sealed_at, transcript");
        for (k, v) in &active {
            if k != "state" {
                assert_eq!(&m[k], v, "{name}: `{k}` changed in the sealed record");
            }
        }
        assert_eq!(m["owner_id"], sealed.token.as_str(), "the previous owner's diagnostics are retained");
        assert_eq!(m["transcript"]["sha256"], p.sha256.as_str());
        assert_eq!(std::fs::metadata(env.lock(S)).unwrap().permissions().mode() & 0o777, 0o600, "{name}");
        assert_only_primary(&env, S);

        // status reads the same proof back.
        // status reads the same proof back (checked loosely: status's own schema is not
        // this test's subject).
        let st = status_value(&env, S);
        assert_eq!(st["state"], "sealed", "{st}");
        for (k, v) in [
            ("sealed_at", Value::from(sealed.seal.sealed_at.as_str())),
            ("relative_path", Value::from(p.relative_path.as_str())),
            ("exists", Value::from(p.exists)),
            ("byte_length", Value::from(p.byte_length)),
            ("sha256", Value::from(p.sha256.as_str())),
        ] {
            assert_eq!(st["proof"][k], v, "status proof `{k}`: {st}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// 2. a certified replacement becomes active
// ---------------------------------------------------------------------------------------

#[test]
fn a_certified_takeover_by_a_new_holder_becomes_the_active_owner() {
    let env = TestEnv::new();
    let t = transcript_path(&env, S);
    let old = LiveHolder::start();
    let old_pid = old.pid();
    let sealed = sealed_session(&env, S, old_pid, Some(BODY));
    // The old pod goes away after sealing; a seal never depends on its holder.
    drop(old);
    let new = LiveHolder::start();
    let tf = fresh_token_file(&env, "new");
    let new_pid = new.pid().to_string();
    let r =
        gated(&env, &["takeover", "--json", "--session", S, "--pid", &new_pid, "--token-file", tf.to_str().unwrap()]);
    let j: TakeoverJson = r.assert_ok().json();
    let host = local().hostname;
    assert_eq!((j.session_id.as_str(), j.state.as_str(), j.pid, j.reclaimed), (S, "active", new.pid(), false));
    assert_eq!(j.owner_token, None, "the token went to the token file");
    assert_eq!(j.token_file.as_deref(), Some(tf.to_str().unwrap()));
    assert_eq!(Path::new(&j.lock_path), env.lock(S));
    // At least the one pass; more only when the transcript was written within the
    // racily-clean margin (benches/seal_takeover.sh reports how often).
    assert!(j.transcript_hash_passes.is_some_and(|n| n >= 1), "{:?}", j.transcript_hash_passes);
    assert_eq!(
        j.previous,
        Some(PreviousJson { hostname: host.clone(), pid: old_pid as u64, sealed_at: sealed.seal.sealed_at.clone() })
    );
    let new_token = read_token(&tf);
    assert_eq!(std::fs::metadata(&tf).unwrap().permissions().mode() & 0o777, 0o600);
    assert_ne!(new_token, sealed.token);

    // A new active schema-2 record for the new holder, nothing beside it, transcript as sealed.
    let lock_bytes = std::fs::read(env.lock(S)).unwrap();
    assert_writerctl_active(&lock_bytes, S, &new_token, new.pid());
    assert_eq!(std::fs::metadata(env.lock(S)).unwrap().permissions().mode() & 0o777, 0o600);
    assert_only_primary(&env, S);
    assert_eq!(std::fs::read(&t).unwrap(), BODY);

    // Logs: session id, previous host/pid and sealing time; never a token or the transcript.
    let key = transcript_key(S);
    let abs = t.to_str().unwrap().to_owned();
    let secrets = [sealed.token.as_str(), new_token.as_str(), key.as_str(), abs.as_str()];
    let line = r.stderr.lines().find(|l| l.contains("takeover")).unwrap_or_else(|| panic!("no log line: {}", r.stderr));
    for want in [S, host.as_str(), &old_pid.to_string(), sealed.seal.sealed_at.as_str()] {
        assert!(line.contains(want), "the takeover log line lacks {want:?}: {line}");
    }
    assert_sanitized(&r, &secrets, "takeover");
    let seal_line = sealed.seal_run.stderr.lines().find(|l| l.contains("seal")).expect("a seal log line");
    for want in [S, host.as_str(), &old_pid.to_string(), sealed.seal.sealed_at.as_str()] {
        assert!(seal_line.contains(want), "the seal log line lacks {want:?}: {seal_line}");
    }
    assert!(
        !sealed.seal_run.stderr.contains(&sealed.token) && !sealed.seal_run.stderr.contains(&abs),
        "the seal log leaks: {}",
        sealed.seal_run.stderr
    );

    // The new holder owns it: live, not sealed; the old token owns nothing.
    let st = status_value(&env, S);
    assert_eq!(
        (&st["state"], &st["live"], &st["owner"]["pid"]),
        (&Value::from("active"), &Value::from(true), &Value::from(new.pid())),
        "{st}"
    );
    ungated(&env, &["verify", "--json", "--session", S]).assert_error(3, "session_not_sealed");
    let old_tf = sealed.token_file.to_str().unwrap();
    ungated(&env, &["release", "--json", "--session", S, "--token-file", old_tf]).assert_error(3, "session_not_owner");
    assert_eq!(std::fs::read(env.lock(S)).unwrap(), lock_bytes, "status/verify/stale release changed the lock");
    ungated(&env, &["release", "--json", "--session", S, "--token-file", tf.to_str().unwrap()]).assert_ok();
    assert!(env.lock_dir_names().is_empty(), "{:?}", env.lock_dir_names());
}

// ---------------------------------------------------------------------------------------
// 3. racing replacements elect one owner
// ---------------------------------------------------------------------------------------

/// `n` copies of `writerctl args` (gate on) released together; (exit, stdout) of each.
fn race(env: &TestEnv, n: usize, args: &[&str]) -> Vec<(i32, String)> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let cmds: Vec<(&str, Vec<String>)> = (0..n).map(|_| ("racer", args.clone())).collect();
    race_commands(env, &cmds, &[(GATE, "1"), ("TMPDIR", env.tmp.path().to_str().unwrap())])
        .into_iter()
        .map(|(_, code, out)| (code, out))
        .collect()
}

fn race_takeovers(env: &TestEnv, session: &str, n: usize) -> Vec<(i32, String)> {
    let me = me();
    race(env, n, &["takeover", "--json", "--session", session, "--pid", &me])
}

#[test]
fn racing_certified_takeovers_of_one_seal_elect_exactly_one_owner() {
    const RACERS: usize = 16;
    const TRIALS: usize = 50;
    let started = Instant::now();
    let env = TestEnv::new();
    let (mut conflicts, mut unavailable) = (0, 0);
    for trial in 0..TRIALS {
        let session = format!("race-{trial}");
        let sealed = sealed_session(&env, &session, std::process::id(), Some(BODY));
        let outcomes = race_takeovers(&env, &session, RACERS);
        let winners: Vec<&(i32, String)> = outcomes.iter().filter(|(c, _)| *c == 0).collect();
        assert_eq!(
            winners.len(),
            1,
            "trial {trial}: exactly one owner; exit codes {:?}",
            outcomes.iter().map(|(c, _)| *c).collect::<Vec<_>>()
        );
        for (code, out) in outcomes.iter().filter(|(c, _)| *c != 0) {
            let e: ErrorDoc =
                serde_json::from_str(out).unwrap_or_else(|e| panic!("trial {trial}: loser output ({e}): {out}"));
            match (*code, e.error.code.as_str()) {
                (3, "session_writer_conflict") => conflicts += 1,
                (75, "session_writer_unavailable") => unavailable += 1,
                other => panic!("trial {trial}: a loser got {other:?}: {}", e.error.message),
            }
        }
        let j: TakeoverJson = serde_json::from_str(&winners[0].1).unwrap();
        let prev = j.previous.expect("the winner replaced the seal");
        assert_eq!(prev.sealed_at, sealed.seal.sealed_at, "trial {trial}");
        let token = j.owner_token.expect("token printed without --token-file");
        assert_writerctl_active(&std::fs::read(env.lock(&session)).unwrap(), &session, &token, std::process::id());
        assert_only_primary(&env, &session);
        assert_eq!(std::fs::read(transcript_path(&env, &session)).unwrap(), BODY);
    }
    eprintln!(
        "{TRIALS} trials x {RACERS} racers: {conflicts} conflict, {unavailable} unavailable losers in {:?}",
        started.elapsed()
    );
    assert_eq!(conflicts + unavailable, TRIALS * (RACERS - 1));
}

/// Beyond the brief: one owner running `seal` several times at once (a retried shutdown
/// hook) seals exactly once; the others fail without residue (QWEN_FORMAT §5.10).
#[test]
fn concurrent_seals_by_one_owner_seal_exactly_once() {
    let env = TestEnv::new();
    for trial in 0..10 {
        let session = format!("seal-race-{trial}");
        write_transcript(&transcript_path(&env, &session), BODY);
        let (tf, _, active) = acquire_managed(&env, &session, std::process::id(), &[]);
        let outcomes = race(&env, 8, &["seal", "--json", "--session", &session, "--token-file", tf.to_str().unwrap()]);
        let winners: Vec<&(i32, String)> = outcomes.iter().filter(|(c, _)| *c == 0).collect();
        assert_eq!(winners.len(), 1, "trial {trial}: {:?}", outcomes.iter().map(|(c, _)| *c).collect::<Vec<_>>());
        for (code, out) in outcomes.iter().filter(|(c, _)| *c != 0) {
            let e: ErrorDoc = serde_json::from_str(out).unwrap();
            assert!(
                matches!((*code, e.error.code.as_str()), (3, "session_not_owner") | (75, "session_writer_unavailable")),
                "trial {trial}: a losing seal got {code} {}: {}",
                e.error.code,
                e.error.message
            );
        }
        let seal: SealJson = serde_json::from_str(&winners[0].1).unwrap();
        let raw = std::fs::read(env.lock(&session)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&raw),
            String::from_utf8_lossy(&writerctl_sealed_from(
                &active,
                &seal.sealed_at,
                &seal.transcript,
                &transcript_path(&env, &session)
            ))
        );
        assert_only_primary(&env, &session);
    }
}

// ---------------------------------------------------------------------------------------
// 4. tampering after the seal fails closed
// ---------------------------------------------------------------------------------------

/// Paths a tamper step works on.
struct Site {
    runtime: PathBuf,
    transcript: PathBuf,
    lock: PathBuf,
}

type Tamper = fn(&Site);

/// (name, tamper step, extra takeover args, expected exit and code).
type TamperCase = (&'static str, Tamper, &'static [&'static str], (i32, &'static str));

fn edit_lock(s: &Site, from: &str, to: &str) {
    let text = std::fs::read_to_string(&s.lock).unwrap();
    let out = text.replacen(from, to, 1);
    assert_ne!(out, text, "the edit {from:?} -> {to:?} did not apply to {text}");
    std::fs::write(&s.lock, out).unwrap();
}

fn edit_sha(s: &Site, to: &str) {
    let text = std::fs::read_to_string(&s.lock).unwrap();
    let at = text.find(r#""sha256":""#).unwrap() + r#""sha256":""#.len();
    let current = &text[at..at + 64];
    edit_lock(s, &format!(r#""sha256":"{current}""#), &format!(r#""sha256":"{to}""#));
}

/// A JSONL body of the same length as [`BODY`] with different content.
fn same_length_other_body() -> Vec<u8> {
    let mut b = BODY.to_vec();
    b[2] = b'T';
    assert_eq!(b.len(), BODY.len());
    assert_ne!(b, BODY);
    b
}

#[test]
fn tampering_after_the_seal_fails_closed_and_changes_nothing() {
    const CHANGED: (i32, &str) = (4, "session_transcript_changed");
    const MALFORMED: (i32, &str) = (4, "session_lock_malformed");
    const UNSAFE: (i32, &str) = (4, "session_transcript_unsafe");
    const UNAVAILABLE: (i32, &str) = (75, "session_writer_unavailable");
    let cases: Vec<TamperCase> = vec![
        (
            "append a line",
            |s| {
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&s.transcript)
                    .unwrap()
                    .write_all(b"{\"late\":1}\n")
                    .unwrap()
            },
            &[],
            CHANGED,
        ),
        (
            "in-place same-length overwrite, mtime restored",
            |s| {
                let mtime = std::fs::metadata(&s.transcript).unwrap().modified().unwrap();
                let mut f = std::fs::OpenOptions::new().write(true).open(&s.transcript).unwrap();
                f.write_all(&same_length_other_body()).unwrap();
                f.set_modified(mtime).unwrap();
            },
            &[],
            CHANGED,
        ),
        (
            "replaced by rename (same length)",
            |s| {
                let tmp = s.transcript.with_extension("new");
                write_transcript(&tmp, &same_length_other_body());
                std::fs::rename(&tmp, &s.transcript).unwrap();
            },
            &[],
            CHANGED,
        ),
        (
            "truncated to its first line",
            |s| {
                let first = BODY.iter().position(|b| *b == b'\n').unwrap() + 1;
                std::fs::OpenOptions::new().write(true).open(&s.transcript).unwrap().set_len(first as u64).unwrap();
            },
            &[],
            CHANGED,
        ),
        (
            "truncated mid-line",
            |s| {
                std::fs::OpenOptions::new().write(true).open(&s.transcript).unwrap().set_len(5).unwrap();
            },
            &[],
            CHANGED,
        ),
        (
            "deleted after a seal that recorded exists:true",
            |s| std::fs::remove_file(&s.transcript).unwrap(),
            &[],
            CHANGED,
        ),
        ("proof digest replaced by another valid digest", |s| edit_sha(s, EMPTY_SHA256), &[], CHANGED),
        (
            "proof byte_length off by one",
            |s| {
                edit_lock(
                    s,
                    &format!(r#""byte_length":{}"#, BODY.len()),
                    &format!(r#""byte_length":{}"#, BODY.len() + 1),
                )
            },
            &[],
            CHANGED,
        ),
        (
            "proof says absent",
            |s| {
                edit_lock(
                    s,
                    &format!(r#""exists":true,"byte_length":{}"#, BODY.len()),
                    r#""exists":false,"byte_length":0"#,
                );
                edit_sha(s, EMPTY_SHA256);
            },
            &[],
            CHANGED,
        ),
        ("proof digest is not a digest", |s| edit_sha(s, "invalid"), &[], MALFORMED),
        (
            "proof digest in uppercase hex",
            |s| {
                let text = std::fs::read_to_string(&s.lock).unwrap();
                let at = text.find(r#""sha256":""#).unwrap() + r#""sha256":""#.len();
                let upper = text[at..at + 64].to_ascii_uppercase();
                edit_sha(s, &upper);
            },
            &[],
            MALFORMED,
        ),
        ("proof absent with a length", |s| edit_lock(s, r#""exists":true"#, r#""exists":false"#), &[], MALFORMED),
        ("sealed record is not JSON", |s| std::fs::write(&s.lock, b"not-json").unwrap(), &[], MALFORMED),
        (
            "sealed record without sealed_at",
            |s| {
                let text = std::fs::read_to_string(&s.lock).unwrap();
                let at = text.find(r#","sealed_at":""#).unwrap();
                let end = at + r#","sealed_at":""#.len() + 24 + 1;
                std::fs::write(&s.lock, format!("{}{}", &text[..at], &text[end..])).unwrap();
            },
            &[],
            MALFORMED,
        ),
        (
            "residual claim of a dead claimant (never reclaimed by pid)",
            |s| {
                let claim = PathBuf::from(format!("{}.claim", s.lock.display()));
                stage(&claim, qwen_active_dead(S, "dead-claimant").as_bytes());
            },
            &[],
            UNAVAILABLE,
        ),
        (
            "residual empty claim",
            |s| {
                std::fs::write(PathBuf::from(format!("{}.claim", s.lock.display())), b"").unwrap();
            },
            &[],
            UNAVAILABLE,
        ),
        (
            "dangling symlink at the transcript path",
            |s| {
                std::fs::remove_file(&s.transcript).unwrap();
                std::os::unix::fs::symlink("/nonexistent/transcript.jsonl", &s.transcript).unwrap();
            },
            &[],
            UNSAFE,
        ),
        (
            "symlink to an identical copy at the transcript path",
            |s| {
                let copy = s.runtime.join("copy.jsonl");
                std::fs::copy(&s.transcript, &copy).unwrap();
                std::fs::remove_file(&s.transcript).unwrap();
                std::os::unix::fs::symlink(&copy, &s.transcript).unwrap();
            },
            &[],
            UNSAFE,
        ),
        (
            "symlinked transcript directory with an identical copy",
            |s| {
                let dir = s.transcript.parent().unwrap();
                let real = s.runtime.join("real-chats");
                std::fs::rename(dir, &real).unwrap();
                std::os::unix::fs::symlink(&real, dir).unwrap();
            },
            &[],
            UNSAFE,
        ),
        (
            "FIFO at the transcript path",
            |s| {
                std::fs::remove_file(&s.transcript).unwrap();
                mkfifo(&s.transcript);
            },
            &[],
            UNSAFE,
        ),
        (
            "directory at the transcript path",
            |s| {
                std::fs::remove_file(&s.transcript).unwrap();
                std::fs::create_dir(&s.transcript).unwrap();
            },
            &[],
            UNSAFE,
        ),
        (
            "transcript key mismatch (identical file at the other key)",
            |s| {
                write_transcript(&s.runtime.join("other/key.jsonl"), BODY);
            },
            &["--transcript-key", "other/key.jsonl"],
            CHANGED,
        ),
    ];
    for (name, tamper, extra, (exit, code)) in cases {
        let env = TestEnv::new();
        let sealed = sealed_session(&env, S, std::process::id(), Some(BODY));
        let site = Site { runtime: env.runtime(), transcript: transcript_path(&env, S), lock: env.lock(S) };
        tamper(&site);
        let before = tree(&env.runtime());
        let abs = site.transcript.to_str().unwrap().to_owned();
        let key = transcript_key(S);
        // `takeover`, and `acquire --managed` with the gate on (the same certified path).
        let (r, tf) = takeover(&env, S, extra);
        assert_eq!((r.code, r.error_code().as_str()), (exit, code), "{name}: takeover\n{}", r.stdout);
        assert_eq!(tree(&env.runtime()), before, "{name}: takeover changed files");
        assert!(tf.symlink_metadata().is_err(), "{name}: a token file was written for a failed takeover");
        let secrets: Vec<&str> =
            if extra.is_empty() { vec![&sealed.token, &abs, &key] } else { vec![&sealed.token, &abs] };
        assert_sanitized(&r, &secrets, name);
        let mut args = vec!["acquire", "--managed", "--json", "--session", S];
        args.extend(extra);
        let a = gated(&env, &args);
        assert_eq!((a.code, a.error_code().as_str()), (exit, code), "{name}: acquire --managed\n{}", a.stdout);
        assert_eq!(tree(&env.runtime()), before, "{name}: acquire --managed changed files");
        if code == UNAVAILABLE.1 {
            let mut names = env.lock_dir_names();
            names.sort();
            assert_eq!(names, vec![format!("{S}.lock"), format!("{S}.lock.claim")], "{name}");
        } else {
            assert_only_primary(&env, S);
        }
    }
}

/// A chmod or an extra hard link after a writerctl seal changes neither the key, the
/// existence, the length nor the digest — qwen's four proof fields — but it means someone
/// else can now write the transcript. writerctl's seal also records the transcript's hard
/// metadata (`writerctl_transcript_identity`), and its takeover fails closed on a change.
#[test]
fn metadata_changes_after_a_writerctl_seal_fail_closed() {
    let cases: [(&str, Tamper); 2] = [
        ("chmod", |s| std::fs::set_permissions(&s.transcript, std::fs::Permissions::from_mode(0o644)).unwrap()),
        ("extra hard link", |s| std::fs::hard_link(&s.transcript, s.runtime.join("extra-link.jsonl")).unwrap()),
    ];
    for (name, tamper) in cases {
        let env = TestEnv::new();
        sealed_session(&env, S, std::process::id(), Some(BODY));
        let site = Site { runtime: env.runtime(), transcript: transcript_path(&env, S), lock: env.lock(S) };
        tamper(&site);
        let before = tree(&env.runtime());
        let (r, tf) = takeover(&env, S, &[]);
        assert_eq!((r.code, r.error_code().as_str()), (4, "session_transcript_changed"), "{name}\n{}", r.stdout);
        assert_eq!(tree(&env.runtime()), before, "{name}: the takeover changed files");
        assert!(tf.symlink_metadata().is_err(), "{name}: a token file was written for a failed takeover");
    }
}

/// A seal written by qwen carries only the four proof fields: there, metadata-only changes
/// are outside the proof and the takeover succeeds, as qwen's own would.
#[test]
fn metadata_changes_after_a_qwen_seal_are_outside_its_proof() {
    let env = TestEnv::new();
    let t = transcript_path(&env, S);
    write_transcript(&t, BODY);
    let proof = ProofOut {
        relative_path: transcript_key(S),
        exists: true,
        byte_length: BODY.len() as u64,
        sha256: sha256sum(&t),
    };
    let dead = qwen_active_dead(S, "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f");
    stage(&env.lock(S), &sealed_from(dead.as_bytes(), "2026-07-28T00:00:01.000Z", &proof));
    std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (r, tf) = takeover(&env, S, &[]);
    r.assert_ok();
    assert_writerctl_active(&std::fs::read(env.lock(S)).unwrap(), S, &read_token(&tf), std::process::id());
}

// ---------------------------------------------------------------------------------------
// 5. a failed seal keeps the active lock
// ---------------------------------------------------------------------------------------

#[test]
fn a_failed_seal_keeps_the_active_lock_and_leaves_nothing_beside_it() {
    let cases: Vec<(&str, Tamper, (i32, &str))> = vec![
        (
            "no trailing newline",
            |s| write_transcript(&s.transcript, b"{\"a\":1}\n{\"partial\""),
            (4, "session_transcript_changed"),
        ),
        (
            "symlinked transcript",
            |s| {
                let real = s.runtime.join("real.jsonl");
                write_transcript(&real, BODY);
                std::fs::create_dir_all(s.transcript.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink(&real, &s.transcript).unwrap();
            },
            (4, "session_transcript_unsafe"),
        ),
        (
            "dangling symlink is not an absent transcript",
            |s| {
                std::fs::create_dir_all(s.transcript.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink("/nonexistent/t.jsonl", &s.transcript).unwrap();
            },
            (4, "session_transcript_unsafe"),
        ),
        (
            "FIFO transcript",
            |s| {
                std::fs::create_dir_all(s.transcript.parent().unwrap()).unwrap();
                mkfifo(&s.transcript);
            },
            (4, "session_transcript_unsafe"),
        ),
    ];
    for (name, tamper, (exit, code)) in cases {
        let env = TestEnv::new();
        let (tf, token, active) = acquire_managed(&env, S, std::process::id(), &[]);
        let site = Site { runtime: env.runtime(), transcript: transcript_path(&env, S), lock: env.lock(S) };
        tamper(&site);
        let before = tree(&env.runtime());
        let r = gated(&env, &["seal", "--json", "--session", S, "--token-file", tf.to_str().unwrap()]);
        assert_eq!((r.code, r.error_code().as_str()), (exit, code), "{name}\n{}", r.stdout);
        assert_sanitized(&r, &[&token, site.transcript.to_str().unwrap()], name);
        assert_eq!(tree(&env.runtime()), before, "{name}: the failed seal changed files");
        assert_eq!(std::fs::read(&site.lock).unwrap(), active, "{name}: the active lock was not kept");
        assert_only_primary(&env, S);
        // Still ours and still active: a normal release works.
        ungated(&env, &["release", "--json", "--session", S, "--token-file", tf.to_str().unwrap()]).assert_ok();
        assert!(env.lock_dir_names().is_empty(), "{name}: {:?}", env.lock_dir_names());
    }
}

// ---------------------------------------------------------------------------------------
// 6. normal close releases
// ---------------------------------------------------------------------------------------

#[test]
fn a_normal_close_releases_instead_of_sealing() {
    let env = TestEnv::new();
    write_transcript(&transcript_path(&env, S), BODY);
    let (tf, _, _) = acquire_managed(&env, S, std::process::id(), &[]);
    let r = gated(&env, &["release", "--json", "--session", S, "--token-file", tf.to_str().unwrap()]);
    let j: ReleaseJson = r.assert_ok().json();
    assert_eq!((j.state.as_str(), j.retired_file_left), ("released", false));
    assert!(env.lock_dir_names().is_empty(), "no sealed record, no side file: {:?}", env.lock_dir_names());
    assert_eq!(status_value(&env, S)["state"], "missing");
    ungated(&env, &["verify", "--json", "--session", S]).assert_error(3, "session_not_sealed");
    // The missing primary is already a safe handoff, but there is no seal to validate:
    // takeover says so and changes nothing (issue 27; it used to acquire), and the
    // replacement starts with a managed acquire.
    let (r, _) = takeover(&env, S, &[]);
    r.assert_error(3, "session_not_sealed");
    assert!(env.lock_dir_names().is_empty(), "{:?}", env.lock_dir_names());
    let tf2 = fresh_token_file(&env, "replacement");
    let pid = std::process::id().to_string();
    let args = ["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", tf2.to_str().unwrap()];
    let j: TakeoverJson = gated(&env, &args).assert_ok().json();
    assert!(j.previous.is_none(), "nothing was sealed, so nothing was taken over");
    assert_writerctl_active(&std::fs::read(env.lock(S)).unwrap(), S, &read_token(&tf2), std::process::id());
    assert_only_primary(&env, S);
    assert_eq!(std::fs::read(transcript_path(&env, S)).unwrap(), BODY);
}

// ---------------------------------------------------------------------------------------
// 7. the feature gate
// ---------------------------------------------------------------------------------------

#[test]
fn seal_and_takeover_are_feature_disabled_with_the_gate_off_and_change_nothing() {
    let env = TestEnv::new();
    write_transcript(&transcript_path(&env, S), BODY);
    let tf = fresh_token_file(&env, "plain");
    let pid = me();
    ungated(
        &env,
        &["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", tf.to_str().unwrap()],
    )
    .assert_ok();
    let seal_args = ["seal", "--json", "--session", S, "--token-file", tf.to_str().unwrap()];
    let before = tree(&env.runtime());
    for gate in [None, Some("0"), Some("false")] {
        let extra: Vec<(&str, &str)> = gate.map(|v| (GATE, v)).into_iter().collect();
        run_with(&env, &seal_args, &extra).assert_error(7, "feature_disabled");
        assert_eq!(tree(&env.runtime()), before, "seal with gate {gate:?} changed files");
    }
    // The environment overrides a config file that turns the gate on.
    let cfg = env.tmp.path().join("writerctl.toml");
    std::fs::write(&cfg, "[experimental]\nsession_writer_lease = true\n").unwrap();
    let cfg = cfg.to_str().unwrap();
    run_with(&env, &seal_args, &[("WRITERCTL_CONFIG", cfg), (GATE, "0")]).assert_error(7, "feature_disabled");
    assert_eq!(tree(&env.runtime()), before);

    // The config file alone turns it on.
    let r = run_with(&env, &seal_args, &[("WRITERCTL_CONFIG", cfg)]);
    let _: SealJson = r.assert_ok().json();
    let sealed_tree = tree(&env.runtime());
    let tf2 = fresh_token_file(&env, "takeover");
    let take_args = ["takeover", "--json", "--session", S, "--pid", &pid, "--token-file", tf2.to_str().unwrap()];
    for gate in [None, Some("0")] {
        let extra: Vec<(&str, &str)> = gate.map(|v| (GATE, v)).into_iter().collect();
        run_with(&env, &take_args, &extra).assert_error(7, "feature_disabled");
        assert_eq!(tree(&env.runtime()), sealed_tree, "takeover with gate {gate:?} changed files");
        assert!(tf2.symlink_metadata().is_err(), "a disabled takeover wrote a token file");
    }
    // Disabled takeover of a missing session creates nothing either (not even the lock dir).
    let env2 = TestEnv::new();
    let r = ungated(&env2, &["takeover", "--json", "--session", S, "--pid", &pid]);
    r.assert_error(7, "feature_disabled");
    assert_eq!(tree(&env2.runtime()), BTreeMap::new());
}

/// One plain lifecycle: its observable outcome per step (exit, error code, lock-dir names,
/// and the lock record minus its random owner id and time).
/// (step, exit, error code, lock-dir names, lock record minus owner id and time).
type Step = (String, i32, Option<String>, Vec<String>, Option<Value>);

fn plain_lifecycle(gate: Option<&str>) -> Vec<Step> {
    let env = TestEnv::new();
    let extra: Vec<(&str, &str)> = gate.map(|v| (GATE, v)).into_iter().collect();
    let pid = me();
    let tf = fresh_token_file(&env, "t");
    let t = tf.to_str().unwrap();
    let mut steps = Vec::new();
    let mut step = |name: &str, args: &[&str], env: &TestEnv| {
        let r = run_with(env, args, &extra);
        let code = (r.code != 0).then(|| r.error_code());
        let lock = std::fs::read(env.lock(S)).ok().map(|b| {
            let mut v: Value = serde_json::from_slice(&b).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("owner_id");
            o.remove("acquired_at");
            v
        });
        steps.push((name.to_owned(), r.code, code, env.lock_dir_names(), lock));
    };
    step("acquire", &["acquire", "--json", "--session", S, "--pid", &pid, "--token-file", t], &env);
    step("second acquire", &["acquire", "--json", "--session", S, "--pid", &pid], &env);
    step("second acquire --managed", &["acquire", "--managed", "--json", "--session", S, "--pid", &pid], &env);
    step("release", &["release", "--json", "--session", S, "--token-file", t], &env);
    step("release again", &["release", "--json", "--session", S, "--token-file", t], &env);
    stage(&env.lock(S), qwen_active_dead(S, "dead-owner").as_bytes());
    step("managed on a dead owner", &["acquire", "--managed", "--json", "--session", S, "--pid", &pid], &env);
    step("plain reclaims a dead owner", &["acquire", "--json", "--session", S, "--pid", &pid], &env);
    // Transcript checks at acquisition do not depend on the gate either.
    write_transcript(&transcript_path(&env, "torn"), b"{\"a\":1}\n{\"incomplete\"");
    step("plain, incomplete transcript", &["acquire", "--json", "--session", "torn", "--pid", &pid], &env);
    step(
        "managed, incomplete transcript",
        &["acquire", "--managed", "--json", "--session", "torn", "--pid", &pid],
        &env,
    );
    steps
}

#[test]
fn plain_acquire_and_release_behave_the_same_with_the_gate_off_and_on() {
    let off = plain_lifecycle(None);
    let on = plain_lifecycle(Some("1"));
    assert_eq!(off, on);
    let codes: Vec<(i32, Option<&str>)> = off.iter().take(7).map(|s| (s.1, s.2.as_deref())).collect();
    assert_eq!(
        codes,
        vec![
            (0, None),
            (3, Some("session_writer_conflict")),
            (3, Some("session_writer_conflict")),
            (0, None),
            (3, Some("session_not_owner")),
            (3, Some("session_writer_conflict")),
            (0, None),
        ]
    );
}

#[test]
fn managed_acquire_of_a_seal_is_a_conflict_with_the_gate_off_and_a_takeover_with_it_on() {
    let env = TestEnv::new();
    let sealed = sealed_session(&env, S, std::process::id(), Some(BODY));
    let before = tree(&env.runtime());
    let pid = me();
    ungated(&env, &["acquire", "--managed", "--json", "--session", S, "--pid", &pid])
        .assert_error(3, "session_writer_conflict");
    assert_eq!(tree(&env.runtime()), before, "gate off: the seal was touched");
    // Plain acquire never takes over, gate or not.
    for gate in [None, Some("1")] {
        let extra: Vec<(&str, &str)> = gate.map(|v| (GATE, v)).into_iter().collect();
        run_with(&env, &["acquire", "--json", "--session", S, "--pid", &pid], &extra)
            .assert_error(3, "session_writer_conflict");
        assert_eq!(tree(&env.runtime()), before, "plain acquire (gate {gate:?}) touched the seal");
    }
    let tf = fresh_token_file(&env, "managed");
    let r = gated(
        &env,
        &["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", tf.to_str().unwrap()],
    );
    let j: TakeoverJson = r.assert_ok().json();
    assert_eq!(j.previous.map(|p| (p.pid, p.sealed_at)), Some((std::process::id() as u64, sealed.seal.sealed_at)));
    assert_writerctl_active(&std::fs::read(env.lock(S)).unwrap(), S, &read_token(&tf), std::process::id());
    assert_only_primary(&env, S);
}

// ---------------------------------------------------------------------------------------
// 8. interoperability with qwen-code
// ---------------------------------------------------------------------------------------

const QWEN_SESSION: &str = "550e8400-e29b-41d4-a716-446655440000";
const QWEN_OWNER: &str = "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f";
const PROJECT_ROOT: &str = "/home/u/repo";
const QWEN_KEY: &str = "projects/-home-u-repo/chats/550e8400-e29b-41d4-a716-446655440000.jsonl";

#[test]
fn a_seal_written_by_qwen_for_a_project_root_is_taken_over() {
    let env = TestEnv::new();
    let t = env.runtime().join(QWEN_KEY);
    write_transcript(&t, BODY);
    let l = local();
    // A sealing qwen ACP child on another pod: qwen's key order, no `writer` key.
    let active = qwen_active(
        QWEN_SESSION,
        QWEN_OWNER,
        4242,
        Some("linux:6a1d4c3e-9b2f-4f11-8a77-2c5d9e0f1a2b:987654"),
        Some(l.pid_ns),
        "qwen-pod-7",
    );
    let proof = ProofOut {
        relative_path: QWEN_KEY.into(),
        exists: true,
        byte_length: BODY.len() as u64,
        sha256: sha256sum(&t),
    };
    let sealed = sealed_from(active.as_bytes(), "2026-07-28T00:00:01.000Z", &proof);
    assert_qwen_sealed_v2(&sealed);
    stage(&env.lock(QWEN_SESSION), &sealed);
    let before = tree(&env.runtime());

    // Verified against writerctl's default key, the proof names another transcript.
    let (r, _) = takeover(&env, QWEN_SESSION, &[]);
    r.assert_error(4, "session_transcript_changed");
    assert_eq!(tree(&env.runtime()), before);
    ungated(&env, &["verify", "--json", "--session", QWEN_SESSION, "--project-root", PROJECT_ROOT]).assert_ok();
    assert_eq!(tree(&env.runtime()), before);

    let (r, tf) = takeover(&env, QWEN_SESSION, &["--project-root", PROJECT_ROOT]);
    let j: TakeoverJson = r.assert_ok().json();
    assert_eq!(
        j.previous,
        Some(PreviousJson { hostname: "qwen-pod-7".into(), pid: 4242, sealed_at: "2026-07-28T00:00:01.000Z".into() })
    );
    assert_writerctl_active(
        &std::fs::read(env.lock(QWEN_SESSION)).unwrap(),
        QWEN_SESSION,
        &read_token(&tf),
        std::process::id(),
    );
    assert_only_primary(&env, QWEN_SESSION);
    assert_eq!(std::fs::read(&t).unwrap(), BODY);
    assert_sanitized(&r, &[QWEN_OWNER, QWEN_KEY], "takeover of a qwen seal");
}

#[test]
fn a_writerctl_seal_for_a_project_root_is_a_valid_qwen_sealed_record() {
    let env = TestEnv::new();
    let t = env.runtime().join(QWEN_KEY);
    write_transcript(&t, BODY);
    let (tf, token, active) =
        acquire_managed(&env, QWEN_SESSION, std::process::id(), &["--project-root", PROJECT_ROOT]);
    let (seal, _) = seal_ok(&env, QWEN_SESSION, &tf, &["--project-root", PROJECT_ROOT]);
    assert_eq!(seal.transcript.relative_path, QWEN_KEY);
    let raw = std::fs::read(env.lock(QWEN_SESSION)).unwrap();
    assert_eq!(raw, writerctl_sealed_from(&active, &seal.sealed_at, &seal.transcript, &t));

    // Every field and type by hand, as qwen's validator (QWEN_FORMAT §2.2) checks them.
    let m = assert_qwen_sealed_v2(&raw);
    let l = local();
    assert_eq!(m["schema_version"], 2);
    assert_eq!(m["state"], "sealed");
    assert_eq!(m["session_id"], QWEN_SESSION);
    assert_eq!(m["owner_id"], token.as_str());
    assert_eq!(m["pid"], std::process::id());
    let identity = writerctl::lockfile::identity::process_start_identity(std::process::id() as u64).unwrap();
    assert_eq!(m["process_start_identity"], identity.as_str());
    assert!(identity.starts_with(&format!("linux:{}:", l.boot_id)));
    assert_eq!(m["pid_namespace_id"], l.pid_ns);
    assert_eq!(m["hostname"], l.hostname.as_str());
    assert_eq!(m["process_kind"], "unknown");
    assert_eq!(m["qwen_version"], Value::Null);
    assert_eq!(m["sealed_at"], seal.sealed_at.as_str());
    let tr = &m["transcript"];
    assert_eq!(tr["relative_path"], QWEN_KEY, "qwen's path.relative(R, T) for project root {PROJECT_ROOT}");
    assert_eq!(tr["exists"], true);
    assert_eq!(tr["byte_length"], BODY.len() as u64);
    assert_eq!(tr["sha256"], sha256sum(&t).as_str());
    // The extra keys — `writer` among the owner fields, `writerctl_transcript_identity`
    // after the proof — are unknown keys, which qwen ignores (QWEN_FORMAT §2.2).
    assert_eq!(
        keys(&m).iter().rev().take(3).collect::<Vec<_>>(),
        ["writerctl_transcript_identity", "transcript", "sealed_at"]
    );
    assert_only_primary(&env, QWEN_SESSION);

    // A replacement with the same Config takes it over; one with another key cannot.
    let before = tree(&env.runtime());
    takeover(&env, QWEN_SESSION, &[]).0.assert_error(4, "session_transcript_changed");
    assert_eq!(tree(&env.runtime()), before);
    let (r, tf2) = takeover(&env, QWEN_SESSION, &["--project-root", PROJECT_ROOT]);
    r.assert_ok();
    assert_writerctl_active(
        &std::fs::read(env.lock(QWEN_SESSION)).unwrap(),
        QWEN_SESSION,
        &read_token(&tf2),
        std::process::id(),
    );
    assert_only_primary(&env, QWEN_SESSION);
}

/// qwen derives the key from the Config's project root, which Node's `path.resolve` has
/// normalized (no trailing slash, no `.`/`..` segments, no doubled slashes). writerctl's
/// `--project-root` must land on the same transcript, or its seal certifies another file.
#[test]
fn project_root_spellings_resolve_like_qwen_path_resolve() {
    let env = TestEnv::new();
    let mut wrong = Vec::new();
    for root in ["/home/u/repo", "/home/u/repo/", "/home/u/./repo", "/home/x/../u/repo", "//home/u/repo"] {
        let session = format!("root-{}", uuid::Uuid::new_v4());
        let (tf, _, _) = acquire_managed(&env, &session, std::process::id(), &[]);
        let r = gated(
            &env,
            &["seal", "--json", "--session", &session, "--token-file", tf.to_str().unwrap(), "--project-root", root],
        );
        let j: SealJson = r.assert_ok().json();
        let want = format!("projects/-home-u-repo/chats/{session}.jsonl");
        if j.transcript.relative_path != want {
            wrong.push(format!("{root:?} -> {}", j.transcript.relative_path.replace(&session, "<id>")));
        }
    }
    assert!(
        wrong.is_empty(),
        "path.resolve gives /home/u/repo for every spelling, so the key must be \
         projects/-home-u-repo/chats/<id>.jsonl; writerctl gave:\n{}",
        wrong.join("\n")
    );
}

/// qwen's `sanitizeCwd` replaces UTF-16 code units (an emoji is two, so two dashes) and its
/// transcript file name is the raw session id: a seal by either side must name the file
/// the other reads. Expected keys are what qwen-code's TypeScript gives (checked with node).
#[test]
fn project_root_keys_match_qwen_for_astral_characters_and_raw_ids() {
    let env = TestEnv::new();
    let cases = [
        ("/home/user/\u{1F600}proj", "x y", "projects/-home-user---proj/chats/x y.jsonl"),
        ("/src/\u{20000}x", QWEN_SESSION, &*format!("projects/-src---x/chats/{QWEN_SESSION}.jsonl")),
        ("/cafe\u{301}", "s-1", "projects/-cafe-/chats/s-1.jsonl"),
    ];
    for (root, session, key) in cases {
        let t = env.runtime().join(key);
        write_transcript(&t, BODY);
        let tf = fresh_token_file(&env, "astral");
        let me = me();
        let tfs = tf.to_str().unwrap();
        let root_args = ["--session", session, "--project-root", root];
        let mut a = vec!["acquire", "--managed", "--json", "--pid", &me, "--token-file", tfs];
        a.extend(root_args);
        gated(&env, &a).assert_ok();
        let mut a = vec!["seal", "--json", "--token-file", tfs];
        a.extend(root_args);
        let j: SealJson = gated(&env, &a).assert_ok().json();
        assert_eq!(j.transcript.relative_path, key, "{root} {session}");
        assert_eq!(j.transcript.sha256, sha256sum(&t));
        let mut a = vec!["verify", "--json"];
        a.extend(root_args);
        ungated(&env, &a).assert_ok();
        let (r, _) = takeover(&env, session, &["--project-root", root]);
        r.assert_ok();
    }
}

/// With a project root the raw id is the file name, so an id that is not one safe path
/// component is refused before anything is created or changed.
#[test]
fn a_project_root_id_that_is_not_one_path_component_is_refused_and_nothing_is_touched() {
    let env = TestEnv::new();
    env.runtime();
    let before = tree(&env.runtime());
    for session in ["a/b", ".", "..", "../x"] {
        for verb in
            [&["acquire", "--managed"][..], &["takeover"], &["seal", "--token-file", "/nonexistent"], &["verify"]]
        {
            let mut a = verb.to_vec();
            a.extend(["--json", "--session", session, "--project-root", PROJECT_ROOT]);
            let r = gated(&env, &a);
            r.assert_error(2, "invalid_argument");
            assert_eq!(tree(&env.runtime()), before, "{verb:?} {session:?} touched nothing");
        }
    }
    // Without a project root the id is encoded into writerctl's own key, as before.
    gated(&env, &["acquire", "--json", "--session", "a/b", "--pid", &me()]).assert_ok();
}

// ---------------------------------------------------------------------------------------
// 9. schema 3 and schema 1
// ---------------------------------------------------------------------------------------

#[test]
fn schema_3_seals_are_unavailable_and_schema_1_records_are_never_taken_over() {
    let holder = LiveHolder::start();
    let l = local();
    let dead_identity = format!("linux:{}:12345", l.boot_id);
    let live_v2 = qwen_active_local(S, QWEN_OWNER, holder.pid());
    let dead_v2 = qwen_active(S, QWEN_OWNER, i32::MAX as u64, Some(&dead_identity), Some(l.pid_ns), &l.hostname);
    let to_v1 = |rec: &str| rec.replacen(r#""schema_version":2,"state":"active","#, r#""schema_version":1,"#, 1);
    let proof = ProofOut {
        relative_path: transcript_key(S),
        exists: true,
        byte_length: BODY.len() as u64,
        sha256: String::new(), // filled per env below (same body, same digest)
    };
    let sealed_v3 = |sha: &str| {
        let p = ProofOut { sha256: sha.to_owned(), ..proof.clone() };
        let v2 = String::from_utf8(sealed_from(dead_v2.as_bytes(), "2026-07-28T00:00:01.000Z", &p)).unwrap();
        v2.replacen(r#""schema_version":2,"#, r#""schema_version":3,"format_version":1,"#, 1).replacen(
            r#","transcript":"#,
            &format!(r#","last_commit_sequence":7,"committed_prefix_hash":"{}","transcript":"#, "b".repeat(64)),
            1,
        )
    };
    type RecordCase<'a> = (&'a str, Box<dyn Fn(&str) -> String + 'a>, (i32, &'a str));
    let cases: Vec<RecordCase> = vec![
        (
            "schema 3 seal with a matching proof",
            Box::new(|sha: &str| sealed_v3(sha)),
            (75, "session_writer_unavailable"),
        ),
        ("schema 1 live record", Box::new(|_: &str| to_v1(&live_v2)), (3, "session_writer_conflict")),
        (
            "schema 1 dead record (managed never reclaims)",
            Box::new(|_: &str| to_v1(&dead_v2)),
            (3, "session_writer_conflict"),
        ),
        (
            "schema 1 record shaped like a seal",
            Box::new(|sha: &str| {
                let p = ProofOut { sha256: sha.to_owned(), ..proof.clone() };
                let v2 = String::from_utf8(sealed_from(dead_v2.as_bytes(), "2026-07-28T00:00:01.000Z", &p)).unwrap();
                v2.replacen(r#""schema_version":2,"#, r#""schema_version":1,"#, 1)
            }),
            (4, "session_lock_malformed"),
        ),
        (
            "schema 1 live record carrying a proof is still active",
            Box::new(|sha: &str| {
                let p = ProofOut { sha256: sha.to_owned(), ..proof.clone() };
                let v2 = String::from_utf8(sealed_from(live_v2.as_bytes(), "2026-07-28T00:00:01.000Z", &p)).unwrap();
                v2.replacen(r#""schema_version":2,"state":"sealed","#, r#""schema_version":1,"#, 1)
            }),
            (3, "session_writer_conflict"),
        ),
    ];
    for (name, record, (exit, code)) in cases {
        let env = TestEnv::new();
        let t = transcript_path(&env, S);
        write_transcript(&t, BODY);
        let rec = record(&sha256sum(&t));
        stage(&env.lock(S), rec.as_bytes());
        let before = tree(&env.runtime());
        let (r, tf) = takeover(&env, S, &[]);
        assert_eq!((r.code, r.error_code().as_str()), (exit, code), "{name}\n{}", r.stdout);
        assert_eq!(tree(&env.runtime()), before, "{name}: changed files");
        assert!(tf.symlink_metadata().is_err());
        let pid = me();
        let a = gated(&env, &["acquire", "--managed", "--json", "--session", S, "--pid", &pid]);
        assert_eq!((a.code, a.error_code().as_str()), (exit, code), "{name}: acquire --managed\n{}", a.stdout);
        assert_eq!(tree(&env.runtime()), before, "{name}: changed files");
        assert_only_primary(&env, S);
    }
}

// ---------------------------------------------------------------------------------------
// 10. verify
// ---------------------------------------------------------------------------------------

#[test]
fn verify_reports_the_proof_and_changes_nothing() {
    let env = TestEnv::new();
    let t = transcript_path(&env, S);
    let sealed = sealed_session(&env, S, std::process::id(), Some(BODY));
    let before = tree(&env.runtime());

    // Match: exit 0, JSON says so; verify needs no gate (it only reads).
    let r = ungated(&env, &["verify", "--json", "--session", S]);
    let j: VerifyJson = r.assert_ok().json();
    assert_eq!((j.session_id.as_str(), j.state.as_str(), j.matches), (S, "sealed", true));
    assert_eq!(j.sealed_at, sealed.seal.sealed_at);
    assert_eq!(j.recorded, sealed.seal.transcript);
    assert_eq!(j.actual.as_ref(), Some(&sealed.seal.transcript));
    assert_eq!(j.exclusive, None, "a direct `writerctl seal` makes no exclusivity claim");
    assert_sanitized(&r, &[&sealed.token], "verify");
    let human = ungated(&env, &["verify", "--session", S]);
    human.assert_ok();
    assert!(human.stdout.contains("proof matches"), "{}", human.stdout);
    assert_eq!(tree(&env.runtime()), before, "verify changed files");

    // Another key: no match.
    ungated(&env, &["verify", "--json", "--session", S, "--transcript-key", "other/key.jsonl"])
        .assert_error(4, "session_transcript_changed");
    assert_eq!(tree(&env.runtime()), before);

    // After an append: no match, nothing changed.
    std::fs::OpenOptions::new().append(true).open(&t).unwrap().write_all(b"{\"late\":1}\n").unwrap();
    let appended = tree(&env.runtime());
    let r = ungated(&env, &["verify", "--json", "--session", S]);
    r.assert_error(4, "session_transcript_changed");
    assert_sanitized(&r, &[&sealed.token, t.to_str().unwrap()], "verify mismatch");
    let human = ungated(&env, &["verify", "--session", S]);
    assert_eq!(human.code, 4, "{}", human.stderr);
    assert_eq!(tree(&env.runtime()), appended);

    // An active lock and a missing lock are not sealed.
    let (_, _, _) = acquire_managed(&env, "active-one", std::process::id(), &[]);
    let with_active = tree(&env.runtime());
    ungated(&env, &["verify", "--json", "--session", "active-one"]).assert_error(3, "session_not_sealed");
    ungated(&env, &["verify", "--json", "--session", "never-acquired"]).assert_error(3, "session_not_sealed");
    assert_eq!(tree(&env.runtime()), with_active);
    let empty = TestEnv::new();
    ungated(&empty, &["verify", "--json", "--session", S]).assert_error(3, "session_not_sealed");
    assert_eq!(tree(&empty.runtime()), BTreeMap::new(), "verify created the lock directory");
}

// ---------------------------------------------------------------------------------------
// the fencing epoch (issue 18 item 4)
// ---------------------------------------------------------------------------------------

/// Every acquire, takeover and reclaim writes the replaced record's `writerctl_epoch` + 1
/// (a record without one counts as 0); a seal keeps it. `acquire --json`, `takeover --json`
/// and `status --json` show it.
#[test]
fn the_fencing_epoch_grows_along_every_takeover_and_reclaim() {
    const S: &str = "epoch-chain";
    let env = TestEnv::new();
    write_transcript(&transcript_path(&env, S), BODY);
    let epoch_on_disk = || parse_obj(&std::fs::read(env.lock(S)).unwrap())["writerctl_epoch"].as_u64();
    let (mut tf, _, _) = acquire_managed(&env, S, std::process::id(), &[]);
    assert_eq!(epoch_on_disk(), Some(1), "nothing replaced: 0 + 1");
    for want in 2..=4u64 {
        seal_ok(&env, S, &tf, &[]);
        assert_eq!(epoch_on_disk(), Some(want - 1), "a seal keeps the epoch");
        let (r, next) = takeover(&env, S, &[]);
        let j: TakeoverJson = r.assert_ok().json();
        assert_eq!(j.epoch, want);
        assert_eq!(epoch_on_disk(), Some(want));
        let st: StatusJson = ungated(&env, &["status", "--json", "--session", S]).assert_ok().json();
        assert_eq!(st.owner.unwrap().epoch, want);
        tf = next;
    }

    // A qwen seal (no epoch) taken over: 1. A dead qwen owner reclaimed: 1. A dead
    // writerctl owner at epoch 41 reclaimed: 42.
    let env = TestEnv::new();
    let key = transcript_key(S);
    write_transcript(&transcript_path(&env, S), BODY);
    stage(&env.lock(S), qwen_sealed_for(S, "7a7a7a7a-1b1b-4c2c-8d3d-e4e4e4e4e4e4", &key, Some(BODY)).as_bytes());
    let (r, _) = takeover(&env, S, &[]);
    assert_eq!(r.assert_ok().json::<TakeoverJson>().epoch, 1);
    for (record, want) in [
        (qwen_active_dead(S, "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f"), 1),
        (qwen_active_dead(S, "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f").replacen('}', r#","writerctl_epoch":41}"#, 1), 42),
    ] {
        let env = TestEnv::new();
        stage(&env.lock(S), record.as_bytes());
        let tf = fresh_token_file(&env, "reclaim");
        let r =
            ungated(&env, &["acquire", "--json", "--session", S, "--pid", &me(), "--token-file", tf.to_str().unwrap()]);
        let j: TakeoverJson = r.assert_ok().json();
        assert!(j.reclaimed, "{}", r.stdout);
        assert_eq!(j.epoch, want);
    }
}

// ---------------------------------------------------------------------------------------
// waiting, as `flock -w` does (issue 18 item 6)
// ---------------------------------------------------------------------------------------

/// `acquire --wait` outlasts a live holder that releases; `takeover --wait` outlasts a live
/// writer that seals; on timeout the last refusal comes back with its own code, and a
/// refusal that waiting cannot clear comes back at once.
#[test]
fn acquire_and_takeover_wait_for_a_live_holder_then_give_its_refusal() {
    const S: &str = "wait-s";
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let hp = holder.pid().to_string();
    let held = fresh_token_file(&env, "held");
    ungated(&env, &["acquire", "--json", "--session", S, "--pid", &hp, "--token-file", held.to_str().unwrap()])
        .assert_ok();
    // Timeout: the last refusal, a conflict.
    let tf = fresh_token_file(&env, "waiter");
    let r = ungated(
        &env,
        &["acquire", "--json", "--session", S, "--pid", &me(), "--wait", "0.3", "--token-file", tf.to_str().unwrap()],
    );
    r.assert_error(3, "session_writer_conflict");
    assert!(!tf.exists(), "a refused acquire leaves no token file");
    // The holder releases while we wait.
    let releaser = {
        let (runtime, held) = (env.runtime(), held.clone());
        let mut c = env.cmd();
        c.args(["release", "--session", S, "--token-file"]).arg(&held).arg("--runtime-dir").arg(runtime);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(400));
            c.output().unwrap()
        })
    };
    let r = ungated(
        &env,
        &["acquire", "--json", "--session", S, "--pid", &me(), "--wait", "20", "--token-file", tf.to_str().unwrap()],
    );
    r.assert_ok();
    assert!(releaser.join().unwrap().status.success());
    ungated(&env, &["release", "--session", S, "--token-file", tf.to_str().unwrap()]).assert_ok();

    // takeover --wait: the live managed writer seals while we wait.
    write_transcript(&transcript_path(&env, S), BODY);
    let (wtf, _, _) = acquire_managed(&env, S, holder.pid(), &[]);
    let sealer = {
        let mut c = env.cmd();
        c.args(["seal", "--session", S, "--token-file"])
            .arg(&wtf)
            .arg("--runtime-dir")
            .arg(env.runtime())
            .env(GATE, "1");
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(400));
            c.output().unwrap()
        })
    };
    let (r, _) = takeover(&env, S, &["--wait", "20"]);
    let j: TakeoverJson = r.assert_ok().json();
    assert!(sealer.join().unwrap().status.success());
    assert!(j.previous.is_some(), "a certified takeover of the seal: {}", r.stdout);

    // Waiting cannot clear a malformed record: refused with its own code (that it is refused
    // without a pause is proven in src/lockfile/wait.rs; RUN_LIMIT bounds this run).
    let env = TestEnv::new();
    stage(&env.lock(S), b"{not a record");
    let r = ungated(&env, &["acquire", "--json", "--session", S, "--pid", &me(), "--wait", "600"]);
    r.assert_error(4, "session_lock_malformed");
    // Bad values are usage errors.
    for bad in ["-1", "abc", "inf"] {
        let r = ungated(&env, &["acquire", "--session", S, "--wait", bad]);
        assert_eq!(r.code, 2, "--wait {bad}: {}", r.stderr);
    }
}

/// Issue 27: `takeover` validates a seal; with no lock at all there is nothing to validate,
/// and it used to acquire the session anyway. Now: session_not_sealed (3), no lock file, no
/// token, and a hint that names `acquire`.
#[test]
fn takeover_with_no_lock_is_not_sealed_and_installs_nothing() {
    let env = TestEnv::new();
    write_transcript(&transcript_path(&env, S), BODY);
    let tf = fresh_token_file(&env, "takeover");
    let r = gated(&env, &["takeover", "--session", S, "--pid", &me(), "--token-file", tf.to_str().unwrap()]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("session_not_sealed") && r.stderr.contains("no lock to take over"), "{}", r.stderr);
    assert!(r.stderr.contains("writerctl acquire --managed"), "{}", r.stderr);
    let tf2 = fresh_token_file(&env, "takeover-json");
    let args = ["takeover", "--json", "--session", S, "--pid", &me(), "--token-file", tf2.to_str().unwrap()];
    gated(&env, &args).assert_error(3, "session_not_sealed");
    assert!(tf.symlink_metadata().is_err(), "a refused takeover wrote a token file");
    assert!(tf2.symlink_metadata().is_err(), "a refused takeover wrote a token file");
    let locks = env.runtime().join("tmp/session-writer-locks");
    let files: Vec<_> =
        std::fs::read_dir(&locks).map(|d| d.map(|e| e.unwrap().file_name()).collect()).unwrap_or_default();
    assert!(files.is_empty(), "a refused takeover left {files:?}");
}
