//! The crash matrix: every failpoint of the engine × every operation that mutates a lock
//! (plain acquire of a missing primary, acquire reclaiming a dead owner, release, seal,
//! takeover of a writerctl seal, `acquire --managed` taking over a qwen seal) × the actions
//! `kill` (SIGKILL to itself) and `error` (fail there). Each case stages its scenario in a
//! fresh runtime directory, snapshots every file, runs the operation with
//! `WRITERCTL_FAILPOINTS` armed, then runs one checker (QWEN_FORMAT §1.2, §5):
//!
//! * the primary is missing, or byte for byte exactly one record that was staged or that
//!   the actor wrote (rebuilt here independently: never a blend, never a partial file);
//! * nothing the actor did not write was overwritten or deleted (a staged primary may only
//!   move to a side file with identical bytes, unless the operation consumes it by design);
//! * at most one active owner, at the primary (a claim file is not an owner);
//! * `status` exits 0, names every file in the lock directory and gives a next step;
//! * `recover --writers-fenced --yes` (dead holders, so never blocked) deletes nothing,
//!   and afterwards a takeover or plain acquire succeeds or fails with a documented code;
//! * no transcript byte changed.
//!
//! Failpoints an operation never reaches just let it complete: the checker still applies.
//! Violations are counted, not panicked on, and printed together at the end.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

const S: &str = "crash-session";
const GATE: (&str, &str) = ("WRITERCTL_SESSION_WRITER_LEASE", "1");
/// The dead owner a reclaim finds.
const DEAD_OWNER: &str = "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f";
/// The (dead) owner of the qwen seal `acquire --managed` takes over.
const QWEN_SEALER: &str = "7a7a7a7a-1b1b-4c2c-8d3d-e4e4e4e4e4e4";
/// A drained transcript: complete JSONL lines.
const BODY: &[u8] = b"{\"type\":\"user\",\"text\":\"hi\"}\n{\"type\":\"assistant\",\"text\":\"hello\"}\n";
/// No single run may take longer than this; a hang is a violation.
const LIMIT: Duration = Duration::from_secs(20);

/// The failpoints the brief of this matrix names; the matrix runs every failpoint found in
/// src/ (see [`failpoints`]), which must include all of these.
const KNOWN_FAILPOINTS: &[&str] = &[
    "acquire.before_install",
    "acquire.after_install",
    "acquire.before_dir_sync",
    "reclaim.before_rename",
    "reclaim.after_rename",
    "reclaim.after_unlink",
    "reclaim.after_install",
    "release.before_rename",
    "release.after_rename",
    "release.before_dir_sync",
    "seal.after_claim",
    "seal.after_transition",
    "takeover.after_claim",
    "takeover.after_transition",
    "transition.before_rename",
    "transition.after_rename",
    "transition.before_link",
    "transition.after_link",
    "rollback.before_remove",
    "rollback.before_relink",
    "rollback.after_relink",
    "recover.before_action",
    "recover.after_restore_link",
    "transcript.fsync",
    "token_file.fsync",
];

/// Every `failpoint!("…")` name in src/, sorted: the matrix follows the sources, so a new
/// failpoint is crashed at without editing this file.
pub(crate) fn failpoints() -> Vec<String> {
    fn walk(dir: &Path, found: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p: PathBuf = e.unwrap().path();
            if p.is_dir() {
                walk(&p, found);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                let mut rest = text.as_str();
                while let Some(at) = rest.find("failpoint!(\"") {
                    rest = &rest[at + "failpoint!(\"".len()..];
                    let end = rest.find('"').unwrap();
                    found.push(rest[..end].to_owned());
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut found);
    found.sort();
    found.dedup();
    found
}

const ACTIONS: &[&str] = &["kill", "error"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// Plain `acquire` of a missing primary.
    Acquire,
    /// Plain `acquire` of a primary held by a provably dead local owner.
    Reclaim,
    /// `release` of our own lock.
    Release,
    /// `seal` after `acquire --managed` with a transcript.
    Seal,
    /// `takeover` of a writerctl seal (gate on).
    Takeover,
    /// `acquire --managed` (gate on) finding a qwen seal: a certified takeover.
    ManagedTakeover,
}

const OPS: &[Op] = &[Op::Acquire, Op::Reclaim, Op::Release, Op::Seal, Op::Takeover, Op::ManagedTakeover];

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Acquire => "acquire",
            Op::Reclaim => "acquire-reclaim",
            Op::Release => "release",
            Op::Seal => "seal",
            Op::Takeover => "takeover",
            Op::ManagedTakeover => "acquire-managed-takeover",
        }
    }

    /// Operations that install a new active record of their own.
    fn installs_owner(self) -> bool {
        matches!(self, Op::Acquire | Op::Reclaim | Op::Takeover | Op::ManagedTakeover)
    }
}

struct Case {
    op: Op,
    /// `name=action[,name=action]`.
    spec: String,
    /// Whether a clean failure (no kill) is expected to surface as an exit code.
    killing: bool,
}

impl Case {
    fn label(&self) -> String {
        format!("[{} {}]", self.op.name(), self.spec)
    }
}

/// Documented (exit, code) pairs of the README table an operation may fail with.
fn documented(exit: i32, code: &str) -> bool {
    matches!(
        (exit, code),
        (3, "session_writer_conflict" | "session_not_owner" | "session_not_sealed")
            | (4, "session_transcript_changed" | "session_lock_malformed" | "session_transcript_unsafe")
            | (75, "session_writer_unavailable")
    )
}

// ---------------------------------------------------------------------------------------
// records, rebuilt independently of writerctl
// ---------------------------------------------------------------------------------------

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(&c),
        })
}

fn obj(raw: &[u8]) -> Option<serde_json::Map<String, Value>> {
    match serde_json::from_slice::<Value>(raw) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// The holder every actor names (a sleeper, killed before `recover`).
struct HolderFacts {
    pid: u32,
    identity: String,
    ns: u64,
    host: String,
    /// The fencing epoch of the actor's record once it knows what it replaces (the
    /// replaced record's + 1). Its first attempt, made before it looks, carries 1.
    epoch: u64,
}

/// Is `raw` exactly writerctl's active record for `holder` (any fresh owner id and
/// `acquired_at`, everything else fixed), i.e. a complete record an actor wrote?
fn is_actor_active(raw: &[u8], h: &HolderFacts) -> bool {
    let Some(m) = obj(raw) else { return false };
    let (Some(owner), Some(at)) =
        (m.get("owner_id").and_then(Value::as_str), m.get("acquired_at").and_then(Value::as_str))
    else {
        return false;
    };
    if !is_uuid(owner) || at.len() != 24 {
        return false;
    }
    [1, h.epoch].iter().any(|&epoch| raw == actor_active(h, owner, at, epoch).as_bytes())
}

fn actor_active(h: &HolderFacts, owner: &str, at: &str, epoch: u64) -> String {
    format!(
        r#"{{"schema_version":2,"state":"active","session_id":"{S}","owner_id":"{owner}","pid":{},"process_start_identity":"{}","pid_namespace_id":{},"hostname":"{}","process_kind":"unknown","acquired_at":"{at}","qwen_version":null,"writer":"writerctl {}","writerctl_epoch":{}}}"#,
        h.pid,
        h.identity,
        h.ns,
        h.host,
        env!("CARGO_PKG_VERSION"),
        epoch
    )
}

fn owner_of(raw: &[u8]) -> Option<String> {
    obj(raw)?.get("owner_id")?.as_str().map(str::to_owned)
}

fn state_of(raw: &[u8]) -> Option<String> {
    obj(raw)?.get("state")?.as_str().map(str::to_owned)
}

/// Is `raw` exactly the sealed record writerctl derives from `active` for the transcript at
/// `transcript` (qwen's §2.1 rule plus writerctl's transcript-identity extension)?
fn is_actor_sealed(raw: &[u8], active: &[u8], transcript: &Path) -> bool {
    let Some(m) = obj(raw) else { return false };
    let Some(at) = m.get("sealed_at").and_then(Value::as_str) else { return false };
    if at.len() != 24 {
        return false;
    }
    let Ok(a) = std::str::from_utf8(active) else { return false };
    let body = a.replacen(r#""schema_version":2,"state":"active","#, r#""schema_version":2,"state":"sealed","#, 1);
    let Some(body) = body.strip_suffix('}') else { return false };
    let Ok(md) = std::fs::metadata(transcript) else { return false };
    let want = format!(
        r#"{body},"sealed_at":"{at}","transcript":{{"relative_path":"chats/{S}.jsonl","exists":true,"byte_length":{},"sha256":"{}"}},"writerctl_transcript_identity":{{"ino":{},"mode":{},"uid":{},"gid":{},"nlink":{}}}}}"#,
        BODY.len(),
        sha256_hex(BODY),
        md.ino(),
        md.mode(),
        md.uid(),
        md.gid(),
        md.nlink()
    );
    raw == want.as_bytes()
}

/// `<owner:xxxxxxxx>`: how status shows an owner-id component of a side-file name.
fn fp(segment: &str) -> String {
    let h = sha256_hex(segment.as_bytes());
    format!("<owner:{}>", &h[..8])
}

/// The names `status` may show for side file `name`: every owner-id component replaced by
/// its fingerprint (a `.stale.<pid>.<nonce>` nonce is not an owner id and stays). An install
/// temp `<target>.<owner ids>.tmp` may show its owner ids as one fingerprint.
fn shown(name: &str) -> Vec<String> {
    let lock = format!("{S}.lock");
    let Some(rest) = name.strip_prefix(&format!("{lock}.")) else { return vec![name.to_owned()] };
    if rest.starts_with("stale.") || rest == "claim" {
        return vec![name.to_owned()];
    }
    let parts: Vec<String> = rest.split('.').map(|p| if is_uuid(p) { fp(p) } else { p.to_owned() }).collect();
    let mut v = vec![format!("{lock}.{}", parts.join("."))];
    if let Some(body) = rest.strip_suffix(".tmp") {
        let segs: Vec<&str> = body.split('.').collect();
        if let Some(first) = segs.iter().position(|p| is_uuid(p)) {
            let mut head: Vec<String> = segs[..first].iter().map(|s| s.to_string()).collect();
            head.push(fp(&segs[first..].join(".")));
            v.push(format!("{lock}.{}.tmp", head.join(".")));
        }
    }
    v
}

// ---------------------------------------------------------------------------------------
// one case
// ---------------------------------------------------------------------------------------

/// Regular files of the lock directory (top level) by name; anything else as `None`.
fn lock_files(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    for e in rd {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        out.insert(name, m.file_type().is_file().then(|| std::fs::read(e.path()).unwrap()));
    }
    out
}

/// Every regular file's bytes under `dir`, recursively, the audit log aside (a multiset).
fn all_file_bytes(dir: &Path) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = tree(dir)
        .into_iter()
        .filter(|(k, _)| !k.ends_with("writerctl-recovery.log"))
        .filter_map(|(_, n)| match n {
            TreeNode::File(b) => Some(b),
            _ => None,
        })
        .collect();
    v.sort();
    v
}

/// Everything under R outside the lock directory (the transcript and its folder).
fn outside_locks(env: &TestEnv) -> BTreeMap<String, TreeNode> {
    tree(&env.runtime()).into_iter().filter(|(k, _)| !k.starts_with("tmp")).collect()
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

struct Outcome {
    violations: Vec<String>,
    /// How the case ended: op exit, final step exit.
    op_exit: i32,
    final_exit: i32,
}

fn run_case(case: &Case) -> Outcome {
    let label = case.label();
    let mut v: Vec<String> = Vec::new();
    let mut out = Outcome { violations: Vec::new(), op_exit: i32::MIN, final_exit: i32::MIN };
    macro_rules! bad {
        ($($t:tt)*) => { v.push(format!("{label} {}", format!($($t)*))) };
    }

    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let l = local();
    let h = HolderFacts {
        pid: holder.pid(),
        identity: writerctl::lockfile::identity::process_start_identity(holder.pid() as u64).unwrap(),
        ns: l.pid_ns,
        host: l.hostname.clone(),
        // A takeover replaces the seal of an acquire (epoch 1); everything else replaces
        // nothing or a qwen record without an epoch (0).
        epoch: if case.op == Op::Takeover { 2 } else { 1 },
    };
    let pid = h.pid.to_string();
    let transcript = env.runtime().join(format!("chats/{S}.jsonl"));
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    std::fs::write(&transcript, BODY).unwrap();
    std::fs::set_permissions(&transcript, std::fs::Permissions::from_mode(0o600)).unwrap();
    let lock_dir = env.lock_dir();
    let lock_name = format!("{S}.lock");
    let claim_name = format!("{S}.lock.claim");
    let lock = lock_dir.join(&lock_name);

    // ----- stage -----
    let token0 = env.tmp.path().join("setup.token");
    let tf0 = token0.to_str().unwrap();
    let setup = |args: &[&str], gated: bool| -> Result<(), String> {
        let extra: &[(&str, &str)] = if gated { &[GATE] } else { &[] };
        match cli_bounded(&env, args, extra, LIMIT) {
            Some(r) if r.code == 0 => Ok(()),
            Some(r) => Err(format!("setup `{}` exited {}:\n{}\n{}", args.join(" "), r.code, r.stdout, r.stderr)),
            None => Err(format!("setup `{}` hung", args.join(" "))),
        }
    };
    let staged_ok = match case.op {
        Op::Acquire => Ok(()),
        Op::Reclaim => {
            stage(&lock, qwen_active_dead(S, DEAD_OWNER).as_bytes());
            Ok(())
        }
        Op::Release => setup(&["acquire", "--json", "--session", S, "--pid", &pid, "--token-file", tf0], false),
        Op::Seal => {
            setup(&["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", tf0], true)
        }
        Op::Takeover => {
            setup(&["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", tf0], true)
                .and_then(|_| setup(&["seal", "--json", "--session", S, "--token-file", tf0], true))
        }
        Op::ManagedTakeover => {
            let key = format!("chats/{S}.jsonl");
            stage(&lock, qwen_sealed_for(S, QWEN_SEALER, &key, Some(BODY)).as_bytes());
            Ok(())
        }
    };
    if let Err(e) = staged_ok {
        bad!("{e}");
        out.violations = v;
        return out;
    }

    // ----- snapshot -----
    let staged: BTreeMap<String, Vec<u8>> =
        lock_files(&lock_dir).into_iter().map(|(k, b)| (k, b.expect("staged files are regular"))).collect();
    let staged_outside = outside_locks(&env);
    // The actor's own record (release and seal act on a lock they hold).
    let own: Option<Vec<u8>> = matches!(case.op, Op::Release | Op::Seal).then(|| staged[&lock_name].clone());
    let staged_primary = staged.get(&lock_name).cloned();

    // ----- the operation, with the failpoint armed -----
    let token_file = env.tmp.path().join("actor.token");
    let tf = token_file.to_str().unwrap();
    let (args, gated): (Vec<&str>, bool) = match case.op {
        Op::Acquire | Op::Reclaim => {
            (vec!["acquire", "--json", "--session", S, "--pid", &pid, "--token-file", tf], false)
        }
        Op::Release => (vec!["release", "--json", "--session", S, "--token-file", tf0], false),
        Op::Seal => (vec!["seal", "--json", "--session", S, "--token-file", tf0], true),
        Op::Takeover => (vec!["takeover", "--json", "--session", S, "--pid", &pid, "--token-file", tf], true),
        Op::ManagedTakeover => {
            (vec!["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", tf], true)
        }
    };
    let mut extra = vec![("WRITERCTL_FAILPOINTS", case.spec.as_str())];
    if gated {
        extra.push(GATE);
    }
    let Some(op) = cli_bounded(&env, &args, &extra, LIMIT) else {
        bad!("the operation hung for {LIMIT:?}");
        out.violations = v;
        return out;
    };
    out.op_exit = op.code;
    let token: Option<String> = std::fs::read_to_string(&token_file).ok().map(|s| s.trim().to_owned());

    // ----- the checker -----
    let after = lock_files(&lock_dir);
    let files: BTreeMap<&String, &Vec<u8>> = after.iter().filter_map(|(k, b)| b.as_ref().map(|b| (k, b))).collect();
    for (name, b) in &after {
        if b.is_none() {
            bad!("{name} in the lock directory is not a regular file");
        }
    }
    let staged_bytes = |b: &[u8]| staged.values().any(|s| s.as_slice() == b);
    let actor_record = |b: &[u8]| {
        is_actor_active(b, &h)
            || own.as_deref().is_some_and(|a| case.op == Op::Seal && is_actor_sealed(b, a, &transcript))
    };
    let primary: Option<&Vec<u8>> = files.get(&lock_name).copied();

    // 1. The primary: missing, or exactly one staged or actor-written record.
    if let Some(p) = primary
        && !staged_bytes(p)
        && !actor_record(p)
    {
        bad!("the primary is neither a staged record nor a complete record the actor wrote: {}", show(p));
    }
    // Every file the actor left is complete: a staged record moved aside or its own record.
    for (name, b) in &files {
        if staged.get(*name).is_some_and(|s| s == *b) || name.as_str() == lock_name {
            continue;
        }
        if !staged_bytes(b) && !actor_record(b) {
            bad!("{name} is neither a staged record nor a complete record the actor wrote: {}", show(b));
        }
    }

    // 2. Nothing the actor did not write was overwritten or deleted.
    for (name, b) in &staged {
        match files.get(name) {
            Some(now) if *now == b => continue,
            Some(now) if name != &lock_name => {
                bad!("staged {name} was overwritten: {} -> {}", show(b), show(now));
                continue;
            }
            None if name != &lock_name => {
                bad!("staged {name} was deleted");
                continue;
            }
            _ => {}
        }
        // The staged primary is no longer at L.
        let moved = files.iter().any(|(n, x)| n.as_str() != lock_name && *x == b);
        if moved {
            continue;
        }
        let consumed = match case.op {
            // The actor's own record: releasing or sealing it is the point.
            Op::Release | Op::Seal => true,
            // A provably dead owner's record is discarded by design (§5.4 step 7).
            Op::Reclaim => true,
            // A seal may only go once the new owner is in place.
            Op::Takeover | Op::ManagedTakeover => primary.is_some_and(|p| is_actor_active(p, &h)),
            Op::Acquire => false,
        };
        if !consumed {
            bad!(
                "staged primary {} is gone (L now: {}) without being kept in any side file",
                show(b),
                primary.map(|p| show(p)).unwrap_or_else(|| "missing".into())
            );
        }
    }
    if outside_locks(&env) != staged_outside {
        bad!("files outside the lock directory (the transcript) changed");
    }

    // 3. At most one active owner: the primary (a claim is not an owner).
    let owners =
        files.iter().filter(|(n, b)| n.as_str() == lock_name && state_of(b).as_deref() == Some("active")).count();
    if owners > 1 {
        bad!("{owners} active owners");
    }

    // The operation's own result: a clean exit is documented; success means the new state.
    let killed = op.code == -1;
    if killed && !case.killing {
        bad!("the operation died of a signal without a kill failpoint:\n{}", op.stderr);
    }
    if !killed && op.code != 0 {
        match try_error_code(&op) {
            Some(code) if documented(op.code, &code) => {}
            code => bad!("failed with an undocumented exit/code {} {code:?}:\n{}\n{}", op.code, op.stdout, op.stderr),
        }
        // A clean failure changes the primary only as documented.
        let ok = match case.op {
            Op::Acquire | Op::Reclaim => !primary.is_some_and(|p| is_actor_active(p, &h)),
            Op::Release => primary.is_none() || primary == own.as_ref(),
            // §5.7 step 3 / §5.8: a failed transition puts the exact predecessor back. Only
            // when that link itself failed (an error armed at the link or in the rollback) is
            // the documented fallback acceptable: the claim is retained (every acquirer then
            // answers unavailable) and the predecessor is kept byte-exact in its retired file.
            Op::Seal | Op::Takeover | Op::ManagedTakeover => {
                let restored = primary == staged_primary.as_ref();
                let link_failed = case.spec.split(',').any(|s| {
                    s == "transition.before_link=error" || (s.starts_with("rollback.") && s.ends_with("=error"))
                });
                let retained = after.contains_key(&claim_name)
                    && staged_primary
                        .as_ref()
                        .is_some_and(|b| files.iter().any(|(n, x)| n.as_str() != lock_name && *x == b));
                restored || (link_failed && retained)
            }
        };
        if !ok {
            bad!(
                "a failed {} (exit {}) left the primary {}",
                case.op.name(),
                op.code,
                primary.map(|p| show(p)).unwrap_or_else(|| "missing".into())
            );
        }
        if case.op.installs_owner() && token.is_some() {
            bad!("a failed {} wrote a token file", case.op.name());
        }
    }
    if op.code == 0 {
        let ok = match case.op {
            Op::Acquire | Op::Reclaim | Op::Takeover | Op::ManagedTakeover => primary.is_some_and(|p| {
                is_actor_active(p, &h) && token.is_some() && owner_of(p).as_deref() == token.as_deref()
            }),
            Op::Release => primary.is_none(),
            Op::Seal => primary.is_some_and(|p| is_actor_sealed(p, own.as_ref().unwrap(), &transcript)),
        };
        if !ok {
            bad!(
                "{} exited 0 but the primary is {}",
                case.op.name(),
                primary.map(|p| show(p)).unwrap_or_else(|| "missing".into())
            );
        }
        if files.contains_key(&claim_name) {
            bad!("{} exited 0 and left a transition claim", case.op.name());
        }
    }

    // 4. status names every file and gives a next step.
    match cli_bounded(&env, &["status", "--json", "--session", S], &[], LIMIT) {
        None => bad!("status hung"),
        Some(r) if r.code != 0 => bad!("status exited {}:\n{}\n{}", r.code, r.stdout, r.stderr),
        Some(r) => match serde_json::from_str::<StatusJson>(&r.stdout) {
            Err(e) => bad!("status --json is not a status document ({e}):\n{}", r.stdout),
            Ok(st) => {
                if st.next_step.trim().is_empty() {
                    bad!("status gives no next step");
                }
                if st.claim.is_some() != after.contains_key(&claim_name) {
                    bad!("status claim {:?} but claim file present: {}", st.claim, after.contains_key(&claim_name));
                }
                if after.contains_key(&claim_name) && st.state != "in_transition" {
                    bad!("a claim exists but status says {}", st.state);
                }
                let want_state = match primary {
                    _ if after.contains_key(&claim_name) => "in_transition",
                    None => "missing",
                    Some(p) => match state_of(p).as_deref() {
                        Some("active") => "active",
                        Some("sealed") => "sealed",
                        _ => "malformed",
                    },
                };
                if st.state != want_state {
                    bad!("status state {} where {want_state} was expected", st.state);
                }
                let names: Vec<&str> = st.side_files.iter().map(|s| s.name.as_str()).collect();
                for name in after.keys() {
                    if *name == lock_name || *name == claim_name {
                        continue;
                    }
                    if !shown(name).iter().any(|n| names.contains(&n.as_str())) {
                        bad!("status does not name {name} (shown as one of {:?}); side_files: {names:?}", shown(name));
                    }
                }
                if st.side_files.len() + 2 < after.len() {
                    bad!("status lists fewer side files than the directory holds");
                }
            }
        },
    }

    // 5. recover (every holder dead), then the session can be continued or fails documented.
    holder.stop();
    let before_recover = all_file_bytes(&lock_dir);
    match cli_bounded(&env, &["recover", "--json", "--session", S, "--writers-fenced", "--yes"], &[], LIMIT) {
        None => bad!("recover hung"),
        Some(r) if r.code != 0 => bad!("recover exited {} with every holder dead:\n{}\n{}", r.code, r.stdout, r.stderr),
        Some(_) => {}
    }
    let after_recover = all_file_bytes(&lock_dir);
    {
        // Recover never deletes: every record is still somewhere (moved or linked back).
        let mut pool = after_recover.clone();
        for b in &before_recover {
            match pool.iter().position(|x| x == b) {
                Some(i) => {
                    pool.swap_remove(i);
                }
                None => bad!("recover deleted a file holding {}", show(b)),
            }
        }
    }
    let me = std::process::id().to_string();
    let tf2 = env.tmp.path().join("final.token");
    let sealed_now = std::fs::read(&lock).ok().is_some_and(|b| state_of(&b).as_deref() == Some("sealed"));
    let (fin_args, fin_extra): (Vec<&str>, Vec<(&str, &str)>) = if sealed_now {
        (vec!["takeover", "--json", "--session", S, "--pid", &me, "--token-file", tf2.to_str().unwrap()], vec![GATE])
    } else {
        (vec!["acquire", "--json", "--session", S, "--pid", &me, "--token-file", tf2.to_str().unwrap()], vec![])
    };
    match cli_bounded(&env, &fin_args, &fin_extra, LIMIT) {
        None => bad!("the final {} hung", fin_args[0]),
        Some(r) => {
            out.final_exit = r.code;
            if !(r.code == 0 || matches!((r.code, try_error_code(&r)), (3 | 4 | 75, Some(c)) if documented(r.code, &c)))
            {
                bad!("after recover, {} exited {}:\n{}\n{}", fin_args[0], r.code, r.stdout, r.stderr);
            }
        }
    }
    if std::fs::read(&transcript).ok().as_deref() != Some(BODY) || outside_locks(&env) != staged_outside {
        bad!("a transcript byte changed");
    }
    out.violations = v;
    out
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    let fps = failpoints();
    for &op in OPS {
        for fp in &fps {
            for action in ACTIONS {
                v.push(Case { op, spec: format!("{fp}={action}"), killing: *action == "kill" });
            }
        }
    }
    v
}

/// Rollback is reached only after a committed transition fails: arm a late error together
/// with each rollback failpoint.
fn rollback_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for (op, late) in [
        (Op::Seal, "seal.after_transition"),
        (Op::Takeover, "takeover.after_transition"),
        (Op::ManagedTakeover, "takeover.after_transition"),
        (Op::Seal, "transition.after_link"),
        (Op::Takeover, "transition.after_link"),
    ] {
        for fp in ["rollback.before_remove", "rollback.before_relink", "rollback.after_relink"] {
            for action in ACTIONS {
                v.push(Case { op, spec: format!("{late}=error,{fp}={action}"), killing: *action == "kill" });
            }
        }
    }
    v
}

/// Runs `cases` on a few threads; returns every violation and a tally of outcomes.
fn run_all(cases: &[Case]) -> (Vec<String>, BTreeMap<String, usize>) {
    let next = AtomicUsize::new(0);
    let violations = Mutex::new(Vec::new());
    let tally = Mutex::new(BTreeMap::new());
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(2, 8) * 2;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(case) = cases.get(i) else { break };
                    let o =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case(case))).unwrap_or_else(|e| {
                            Outcome {
                                violations: vec![format!(
                                    "{} the case panicked: {:?}",
                                    case.label(),
                                    e.downcast_ref::<String>()
                                )],
                                op_exit: i32::MIN,
                                final_exit: i32::MIN,
                            }
                        });
                    let key = format!("{} op_exit={} final_exit={}", case.op.name(), o.op_exit, o.final_exit);
                    *tally.lock().unwrap().entry(key).or_insert(0) += 1;
                    violations.lock().unwrap().extend(o.violations);
                }
            });
        }
    });
    (violations.into_inner().unwrap(), tally.into_inner().unwrap())
}

#[test]
fn the_matrix_covers_every_failpoint_in_the_sources() {
    let found = failpoints();
    for k in KNOWN_FAILPOINTS {
        assert!(found.iter().any(|f| f == k), "failpoint {k} is no longer in src/: {found:?}");
    }
    assert!(cases().len() >= OPS.len() * KNOWN_FAILPOINTS.len() * ACTIONS.len());
}

#[test]
fn crash_matrix_every_failpoint_every_operation_kill_and_error() {
    let started = Instant::now();
    let main = cases();
    let (mut violations, tally) = run_all(&main);
    eprintln!(
        "crash matrix: {} operations x {} failpoints x {} actions = {} cases, {} violations",
        OPS.len(),
        failpoints().len(),
        ACTIONS.len(),
        main.len(),
        violations.len()
    );
    let extra = rollback_cases();
    let (extra_violations, extra_tally) = run_all(&extra);
    eprintln!(
        "crash matrix (rollback reached after a late error): {} cases, {} violations",
        extra.len(),
        extra_violations.len()
    );
    eprintln!("crash matrix outcomes (op exit, exit of the final acquire/takeover after recover):");
    for (k, n) in tally.iter().chain(extra_tally.iter()) {
        eprintln!("  {k}: {n}");
    }
    eprintln!("crash matrix took {:?}", started.elapsed());
    violations.extend(extra_violations);
    for v in &violations {
        eprintln!("VIOLATION {v}");
    }
    assert_eq!(violations.len(), 0, "{} crash-matrix violations:\n{}", violations.len(), violations.join("\n"));
}

// ---------------------------------------------------------------------------------------
// the writer's end under `run` (issue 21 items 1 and 2)
// ---------------------------------------------------------------------------------------

/// One way a supervised writer can end, and the lock it must leave.
struct WriterEnding {
    name: &'static str,
    /// The writer (bash). `$T_READY` is created once it is running.
    script: &'static str,
    /// SIGTERM to the supervisor once the writer is ready (a requested stop).
    stop: bool,
    /// `sealed`, `released` (no lock) or `active` (kept, fail closed).
    lock: &'static str,
    /// The supervisor's exit code and, when it fails, its error code.
    exit: (i32, Option<&'static str>),
}

const WRITER_ENDINGS: &[WriterEnding] = &[
    WriterEnding {
        name: "exit 0 on its own",
        script: r#"echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"; exit 0"#,
        stop: false,
        lock: "released",
        exit: (0, None),
    },
    WriterEnding {
        name: "exit 1 (a crash)",
        script: r#"echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"; exit 1"#,
        stop: false,
        lock: "active",
        exit: (1, Some("writer_crashed")),
    },
    WriterEnding {
        name: "exit 137 (an OOM kill through a shell)",
        script: r#"echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"; exit 137"#,
        stop: false,
        lock: "active",
        exit: (1, Some("writer_crashed")),
    },
    WriterEnding {
        name: "SIGKILL (an OOM kill)",
        script: r#"echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"; kill -KILL $$"#,
        stop: false,
        lock: "active",
        exit: (1, Some("writer_crashed")),
    },
    WriterEnding {
        name: "SIGSEGV",
        script: r#"echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"; kill -SEGV $$"#,
        stop: false,
        lock: "active",
        exit: (1, Some("writer_crashed")),
    },
    WriterEnding {
        name: "stop requested, drained, exit 0",
        script: r#"trap 'exit 0' TERM; echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"; : >"$T_READY"; while :; do sleep 0.05; done"#,
        stop: true,
        lock: "sealed",
        exit: (0, None),
    },
    WriterEnding {
        name: "stop requested, unhandled SIGTERM",
        script: r#"echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"; : >"$T_READY"; exec sleep 1000"#,
        stop: true,
        lock: "active",
        exit: (1, Some("writer_crashed")),
    },
    WriterEnding {
        name: "stop requested, exit 3",
        script: r#"trap 'exit 3' TERM; : >"$T_READY"; while :; do sleep 0.05; done"#,
        stop: true,
        lock: "active",
        exit: (1, Some("writer_crashed")),
    },
    WriterEnding {
        name: "stop requested, ignored past --grace",
        script: r#"trap '' TERM; : >"$T_READY"; while :; do sleep 0.05; done"#,
        stop: true,
        lock: "active",
        exit: (1, Some("drain_timeout")),
    },
    WriterEnding {
        name: "stop requested, an escaped descendant appends later",
        script: r#"trap 'exit 0' TERM; echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"
setsid sh -c 'sleep 0.8; echo "{\"late\":1}" >>"$WRITERCTL_TRANSCRIPT"' &
: >"$T_READY"; while :; do sleep 0.05; done"#,
        stop: true,
        lock: "sealed",
        exit: (0, None),
    },
    WriterEnding {
        name: "stop requested, an escaped descendant ignores SIGTERM",
        script: r#"trap 'exit 0' TERM
setsid sh -c 'trap "" TERM; while :; do echo "{\"stray\":1}" >>"$WRITERCTL_TRANSCRIPT"; sleep 0.05; done' &
: >"$T_READY"; while :; do sleep 0.05; done"#,
        stop: true,
        lock: "sealed",
        exit: (0, None),
    },
];

fn run_writer_ending(e: &WriterEnding) -> Vec<String> {
    let mut v = Vec::new();
    let env = TestEnv::new();
    let ready = env.tmp.path().join("ready");
    let transcript = env.runtime().join(format!("chats/{S}.jsonl"));
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    let mut c = env.cmd();
    c.arg("run").arg("--runtime-dir").arg(env.runtime()).args(["--session", S, "--json", "--grace", "1"]);
    let private = env.tmp.path().join("ctl");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    c.arg("--control-socket").arg(private.join("s.sock"));
    c.args(["--", "bash", "-c", e.script]).env(GATE.0, GATE.1).env("T_READY", &ready);
    let child = c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    if e.stop {
        let until = Instant::now() + LIMIT;
        while !ready.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    let Some(r) = wait_child_bounded(child, LIMIT) else {
        return vec![format!("[run: {}] the supervisor hung", e.name)];
    };
    let code = try_error_code(&r);
    if (r.code, code.as_deref()) != e.exit {
        v.push(format!("[run: {}] exit {} {code:?}, want {:?}:\n{}\n{}", e.name, r.code, e.exit, r.stdout, r.stderr));
    }
    // Whatever the writer left is gone: wait past the escaped writers' delays, then check
    // the lock and that a seal still certifies exactly what is on disk.
    std::thread::sleep(Duration::from_millis(1200));
    let files = lock_files(&env.lock_dir());
    // A kept active record names its holder-lock file (issue 27): that file belongs to it.
    let named = files
        .get(&format!("{S}.lock"))
        .and_then(|b| b.as_deref())
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
        .and_then(|r| r["writerctl_holder_lock"].as_str().map(str::to_owned));
    if files.keys().any(|n| n != &format!("{S}.lock") && Some(n) != named.as_ref()) {
        v.push(format!("[run: {}] residue in the lock directory: {:?}", e.name, files.keys()));
    }
    let state = files.get(&format!("{S}.lock")).and_then(|b| b.as_deref().and_then(state_of));
    let lock = state.as_deref().unwrap_or("released");
    if lock != e.lock {
        v.push(format!("[run: {}] the lock is {lock}, want {}", e.name, e.lock));
    }
    // Issue 38: a kept lock is never a dead end. The writer's tree is gone, nothing has the
    // transcript open: the next `run` gets the session by the kernel's proof, no person.
    if lock == "active" {
        let mut next = env.cmd();
        next.arg("run").arg("--runtime-dir").arg(env.runtime()).args(["--session", S, "--json", "--", "true"]);
        next.env(GATE.0, GATE.1);
        match run_bounded(next, LIMIT) {
            Some(r) if r.code == 0 && !env.lock(S).exists() => {}
            other => v.push(format!("[run: {}] the next run could not get back in: {other:?}", e.name)),
        }
    }
    if lock == "sealed" {
        match cli_bounded(&env, &["verify", "--json", "--session", S], &[], LIMIT) {
            Some(r) if r.code == 0 => {}
            other => v.push(format!("[run: {}] the seal no longer matches the transcript: {other:?}", e.name)),
        }
        let text = std::fs::read_to_string(&transcript).unwrap_or_default();
        if text.contains("late") {
            v.push(format!("[run: {}] an escaped descendant wrote: {text}", e.name));
        }
    }
    v
}

/// Every way a supervised writer can end × the lock it must leave: a requested stop
/// answered by exit 0 seals, exit 0 on its own releases, anything else keeps the active
/// lock — which the next `run` takes by the kernel's proof (issue 38) — and nothing the
/// writer started can write after a seal.
#[test]
fn crash_matrix_every_writer_ending_under_run() {
    let violations: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = WRITER_ENDINGS.iter().map(|e| s.spawn(move || run_writer_ending(e))).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    eprintln!(
        "crash matrix (writer endings under run): {} cases, {} violations",
        WRITER_ENDINGS.len(),
        violations.len()
    );
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

// ---------------------------------------------------------------------------------------
// two hosts of a network filesystem (issue 27): a crash on host A mid-transition, seen by
// host B whose client cached the claim's absence, on mounts without RENAME_NOREPLACE
// ---------------------------------------------------------------------------------------

/// The failpoints of a seal or a takeover (their own, the transition's and the rollback's):
/// the steps between which a claim may exist and the primary be moved aside.
fn transition_failpoints() -> Vec<String> {
    failpoints()
        .into_iter()
        .filter(|f| ["seal.", "takeover.", "transition.", "rollback."].iter().any(|p| f.starts_with(p)))
        .collect()
}

/// One case: `op` (`seal` or `takeover`) on host A killed at `fp`, host B having looked at
/// the session first. Returns its violations.
fn run_two_host_case(env: &TestEnv, hosts: &crate::fsmount::TwoHosts, n: usize, op: Op, fp: &str) -> Vec<String> {
    let s = format!("two-host-{n}");
    let label = format!("[{} {fp}=kill on host A, host B cached]", op.name());
    let mut v = Vec::new();
    let allow = hosts.allow();
    let (a, b, server) = (hosts.runtime_a(), hosts.runtime_b(), hosts.runtime_server());
    let run = |runtime: &Path, args: &[&str], extra: &[(&str, &str)]| -> Option<Run> {
        let mut c = env.cmd();
        c.args(args).arg("--runtime-dir").arg(runtime).env(GATE.0, GATE.1).env(allow.0, allow.1);
        for (k, val) in extra {
            c.env(k, val);
        }
        run_bounded(c, LIMIT)
    };
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    let tok = env.tmp.path().join(format!("{s}.token"));
    let tf = tok.to_str().unwrap();
    let key = format!("chats/{s}.jsonl");
    // ----- stage on host A -----
    let mut staged =
        run(&a, &["acquire", "--managed", "--json", "--session", &s, "--pid", &pid, "--token-file", tf], &[])
            .is_some_and(|r| r.code == 0);
    std::fs::create_dir_all(a.join("chats")).unwrap();
    std::fs::write(a.join(&key), BODY).unwrap();
    if staged && op == Op::Takeover {
        staged = run(&a, &["seal", "--json", "--session", &s, "--token-file", tf], &[]).is_some_and(|r| r.code == 0);
    }
    if !staged {
        return vec![format!("{label} staging on host A failed")];
    }
    // Host B looks first: its client caches the claim as missing.
    if run(&b, &["status", "--json", "--session", &s], &[]).is_none_or(|r| r.code != 0) {
        v.push(format!("{label} status on host B failed"));
    }
    // ----- the operation on host A, killed at the failpoint -----
    let spec = format!("{fp}=kill");
    let tf_new = env.tmp.path().join(format!("{s}.new.token"));
    let args: Vec<&str> = match op {
        Op::Seal => vec!["seal", "--json", "--session", &s, "--token-file", tf],
        _ => vec!["takeover", "--json", "--session", &s, "--pid", &pid, "--token-file", tf_new.to_str().unwrap()],
    };
    if run(&a, &args, &[("WRITERCTL_FAILPOINTS", &spec)]).is_none() {
        v.push(format!("{label} the operation hung"));
    }
    // ----- host B acquires while whatever the crash left is on the server -----
    let claim_left = server.join(format!("tmp/session-writer-locks/{s}.lock.claim")).exists();
    let other = LiveHolder::start();
    let other_pid = other.pid().to_string();
    match run(&b, &["acquire", "--json", "--session", &s, "--pid", &other_pid], &[]) {
        None => v.push(format!("{label} host B's acquire hung")),
        Some(r) if claim_left && r.code == 0 => v.push(format!(
            "{label} host B acquired the session while host A's claim was on the server (its cached lookup said none)"
        )),
        Some(_) => {}
    }
    // ----- every writer fenced: recover on host B, judged by what the server holds -----
    holder.stop();
    other.stop();
    match run(&b, &["recover", "--json", "--session", &s, "--writers-fenced", "--yes"], &[]) {
        None => v.push(format!("{label} recover hung")),
        Some(r) if r.code == 0 => {
            let st = run(&server, &["status", "--json", "--session", &s], &[]);
            let state = st.and_then(|st| serde_json::from_str::<Value>(&st.stdout).ok()).map(|j| j["state"].clone());
            if state.as_ref().and_then(Value::as_str) == Some("in_transition") {
                let failed: Vec<&str> = r.stdout.lines().filter(|l| l.contains("\"result\": \"failed")).collect();
                v.push(format!(
                    "{label} recover on host B exited 0 with the session still in transition on the server ({})",
                    failed.join("; ").replace("  ", "")
                ));
            }
        }
        Some(_) => {}
    }
    if std::fs::read(server.join(&key)).ok().as_deref() != Some(BODY) {
        v.push(format!("{label} a transcript byte changed"));
    }
    v
}

#[test]
fn crash_matrix_on_two_hosts_with_cached_lookups_and_no_rename_noreplace() {
    const TEST: &str = "crash_matrix_on_two_hosts_with_cached_lookups_and_no_rename_noreplace";
    let Some(hosts) = crate::fsmount::TwoHosts::mount(TEST, crate::fsmount::Cache::STICKY) else { return };
    let env = TestEnv::new();
    let mut violations = Vec::new();
    let mut n = 0;
    for op in [Op::Seal, Op::Takeover] {
        for fp in transition_failpoints() {
            violations.extend(run_two_host_case(&env, &hosts, n, op, &fp));
            n += 1;
        }
    }
    eprintln!("crash matrix on two hosts: {n} cases, {} violations", violations.len());
    assert!(n >= 20, "too few transition failpoints found: {:?}", transition_failpoints());
    assert_eq!(violations.len(), 0, "{} two-host crash violations:\n{}", violations.len(), violations.join("\n"));
}
