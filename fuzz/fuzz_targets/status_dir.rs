//! `status_dir`: a fuzzed lock directory through `status_all`, `status_one` and
//! `recover::plan`.
//!
//! The input is read as a small list of entries (name, kind, contents); kinds are regular
//! file, directory, symlink and fifo. Names and record contents are mostly assembled from
//! qwen-shaped pieces (sessions, side-file suffixes, owner ids, valid records of every
//! schema and state) so the fuzzer reaches deep states quickly, with raw bytes mixed in.
//! They are materialized in a fresh `R/tmp/session-writer-locks`, then:
//!
//! * nothing panics;
//! * neither `status_all`, `status_one` nor `plan` changes any file (snapshot of every path
//!   under R before and after: type, permissions, bytes, symlink target);
//! * every entry that `side_file_owner` attributes to a lock appears in that session's
//!   `side_files` (redacted name and kind) or, for `L.claim`, as its `claim`;
//! * `status_one` agrees with `status_all` for every session;
//! * no owner id that only appears inside redactable names or records shows up in the JSON
//!   of any status or plan.
//!
//! Speed: `inspect_record` sleeps 2 × 50 ms before it declares a record malformed
//! (`MALFORMED_RETRY_*`). Inputs that put an unparseable regular file at a name status or
//! plan inspects (a primary, a claim, a handoff, a retired seal or a reclaim guard) are
//! therefore skipped unless `WRITERCTL_FUZZ_SLOW=1` is set; run that variant separately
//! (see fuzz/README.md).
#![no_main]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use writerctl::lockfile::acquire::{DirMode, TranscriptRef, open_site};
use writerctl::lockfile::identity::{LocalDomain, ProcessProbe};
use writerctl::lockfile::paths::{LOCK_SUBDIR, LockPaths, SideKind, redact_side_file_name, side_file_owner};
use writerctl::lockfile::record::parse_record;
use writerctl::lockfile::recover::plan;
use writerctl::lockfile::paths::owner_of;
use writerctl::lockfile::status::{entries as dir_entries, status_all, status_one};
use writerctl::lockfile::sys::Dir;
use writerctl::lockfile::sys::Signal0;
use writerctl::lockfile::transcript::TranscriptKey;

/// Reads the input front to back; past its end every read yields zeros.
struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }
    fn bytes(&mut self, max: usize) -> &'a [u8] {
        let n = (self.byte() as usize).min(max).min(self.data.len());
        let (a, b) = self.data.split_at(n);
        self.data = b;
        a
    }
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.byte() as usize % from.len()]
    }
}

const OWNERS: &[&str] = &[
    "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f",
    "11111111-2222-4333-8444-555555555555",
    "a0a0a0a0-b1b1-4c2c-8d3d-e4e4e4e4e4e4",
    "x.lock",
    "o.p",
];
const SESSIONS: &[&str] = &["s", "a.lock.b", "%zz", "a/b", "é", "", "s.lock.handoff.x", "S"];

struct Env {
    base: PathBuf,
    local: LocalDomain,
    slow: bool,
    counter: AtomicU64,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let root = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
        let base = root.join(format!("writerctl-fuzz-status-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        Env {
            base,
            local: LocalDomain::current(),
            slow: std::env::var_os("WRITERCTL_FUZZ_SLOW").is_some_and(|v| v == "1"),
            counter: AtomicU64::new(0),
        }
    })
}

struct Probe {
    signal: Signal0,
    identity: Option<String>,
}

impl ProcessProbe for Probe {
    fn signal0(&self, _pid: u64) -> Signal0 {
        self.signal
    }
    fn start_identity(&self, _pid: u64) -> Option<String> {
        self.identity.clone()
    }
}

fn identity_for(local: &LocalDomain, ticks: u8) -> String {
    format!("linux:{}:{ticks}", local.boot_id.as_deref().unwrap_or("00000000-0000-0000-0000-000000000000"))
}

fn session_name(inp: &mut Input) -> String {
    match inp.byte() % 10 {
        9 => String::from_utf8_lossy(inp.bytes(24)).into_owned(),
        i => SESSIONS[i as usize % SESSIONS.len()].to_owned(),
    }
}

fn owner(inp: &mut Input) -> String {
    match inp.byte() % 8 {
        7 => String::from_utf8_lossy(inp.bytes(16)).into_owned(),
        i => OWNERS[i as usize % OWNERS.len()].to_owned(),
    }
}

fn enc(s: &str) -> String {
    writerctl::lockfile::paths::encode_uri_component(s)
}

/// A file name: qwen-shaped (`<enc(session)>.lock` plus a side-file suffix) or raw bytes.
fn entry_name(inp: &mut Input) -> Vec<u8> {
    let mode = inp.byte();
    if mode % 8 == 7 {
        return inp.bytes(40).to_vec();
    }
    let lock = format!("{}.lock", enc(&session_name(inp)));
    let o = enc(&owner(inp));
    let suffix = match inp.byte() % 16 {
        0 | 1 => String::new(),
        2 => ".claim".into(),
        3 => format!(".released.{o}"),
        4 => format!(".sealed-candidate.{o}"),
        5 => format!(".handoff.{o}"),
        6 => format!(".sealed.{o}.{}", enc(&owner(inp))),
        7 => format!(".stale.{}.{o}", inp.byte()),
        8 => format!(".reclaim.{o}"),
        9 => format!(".reclaim.{o}.{}", enc(&owner(inp))),
        10 => format!(".{}.tmp", owner(inp)),
        11 => format!(".claim.{}.tmp", owner(inp)),
        12 => format!(".sealed-candidate.{o}.{}.tmp", owner(inp)),
        13 => format!(".handoff.{o}.bak"),
        14 => ".weird".into(),
        _ => format!(".{}", String::from_utf8_lossy(inp.bytes(24))),
    };
    format!("{lock}{suffix}").into_bytes()
}

/// A single path component: no `/`, no NUL, not empty, `.` or `..`, at most 255 bytes.
fn sanitize(mut name: Vec<u8>) -> Option<Vec<u8>> {
    name.retain(|b| *b != b'/' && *b != 0);
    name.truncate(255);
    if name.is_empty() || name == b"." || name == b".." { None } else { Some(name) }
}

/// A record: every schema and state, our domain or another, with field mutations.
fn record(inp: &mut Input, local: &LocalDomain) -> Vec<u8> {
    let shape = inp.byte();
    let session = session_name(inp);
    let owner_id = owner(inp);
    let host = if shape & 0x80 == 0 { local.hostname.clone() } else { "elsewhere".into() };
    let mut m = json!({
        "schema_version": 2,
        "state": "active",
        "session_id": session,
        "owner_id": owner_id,
        "pid": 1 + inp.byte() as u64,
        "process_start_identity": identity_for(local, inp.byte() % 4),
        "pid_namespace_id": local.pid_namespace_id.unwrap_or(4026531836),
        "hostname": host,
        "process_kind": "unknown",
        "acquired_at": "2026-07-28T00:00:00.000Z",
        "qwen_version": null,
        "writer": "writerctl 0.1.0",
    });
    let o = m.as_object_mut().unwrap();
    match shape % 4 {
        0 => {
            o.insert("schema_version".into(), 1.into());
            o.remove("state");
        }
        1 => {}
        2 | 3 => {
            if shape % 4 == 3 {
                o.insert("schema_version".into(), 3.into());
                o.insert("format_version".into(), 1.into());
                o.insert("last_commit_sequence".into(), 4.into());
                o.insert("committed_prefix_hash".into(), "ab".repeat(32).into());
            }
            if shape & 0x04 != 0 {
                o.insert("state".into(), "sealed".into());
                o.insert("sealed_at".into(), "2026-07-28T00:00:01.000Z".into());
                o.insert(
                    "transcript".into(),
                    json!({"relative_path": format!("chats/{}.jsonl", enc(&session)), "exists": false,
                           "byte_length": 0,
                           "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}),
                );
            }
        }
        _ => unreachable!(),
    }
    if shape & 0x08 != 0 {
        o.remove("process_start_identity");
    }
    if shape & 0x10 != 0 {
        o.insert("pid_namespace_id".into(), 1.into());
    }
    // A field mutation (most of them make the record malformed).
    let fields = ["pid", "owner_id", "session_id", "state", "transcript", "schema_version", "acquired_at"];
    if shape & 0x20 != 0 {
        let f = inp.pick(&fields);
        let v: Value = match inp.byte() % 6 {
            0 => Value::Null,
            1 => 0.into(),
            2 => "".into(),
            3 => json!(1.5),
            4 => json!([]),
            _ => json!(u64::MAX),
        };
        o.insert(f.into(), v);
    }
    let mut raw = serde_json::to_vec(&m).unwrap();
    if shape & 0x40 != 0 {
        raw.extend_from_slice(b"\n");
    }
    raw
}

#[derive(Clone, Copy)]
enum EntryKind {
    Regular,
    Directory,
    Symlink,
    Fifo,
}

struct Entry {
    name: Vec<u8>,
    kind: EntryKind,
    contents: Vec<u8>,
}

#[derive(Debug, PartialEq, Eq)]
enum Snap {
    File { mode: u32, bytes: Vec<u8> },
    Dir { mode: u32 },
    Link { target: PathBuf },
    Other { mode: u32 },
}

fn snapshot(root: &Path) -> BTreeMap<PathBuf, Snap> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p).unwrap();
        let mode = meta.permissions().mode();
        let ft = meta.file_type();
        let snap = if ft.is_symlink() {
            Snap::Link { target: std::fs::read_link(&p).unwrap() }
        } else if ft.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
            Snap::Dir { mode }
        } else if ft.is_file() {
            Snap::File { mode, bytes: std::fs::read(&p).unwrap() }
        } else {
            Snap::Other { mode }
        };
        out.insert(p, snap);
    }
    out
}

/// Would status or plan run `inspect_record` on this name (and so sleep on garbage)?
fn inspected(name: &[u8]) -> bool {
    let Ok(name) = std::str::from_utf8(name) else { return false };
    if name.ends_with(".lock") {
        return true;
    }
    matches!(
        side_file_owner(name),
        Some((_, SideKind::TransitionClaim | SideKind::Handoff | SideKind::SealedRetired | SideKind::ReclaimGuard))
    )
}

fn run(data: &[u8]) {
    let env = env();
    let mut inp = Input { data };
    let header = inp.byte();
    let probe = Probe {
        signal: [Signal0::Delivered, Signal0::NoSuchProcess, Signal0::Indeterminate][header as usize % 3],
        identity: match (header / 3) % 3 {
            0 => None,
            1 => Some(identity_for(&env.local, 0)),
            _ => Some(identity_for(&env.local, 1)),
        },
    };
    let dir_kind = (header >> 5) & 0x07; // 0..=4: real directory; 5: symlink; 6: file; 7: missing
    let n = 1 + inp.byte() as usize % 8;
    let mut entries: Vec<Entry> = Vec::new();
    for _ in 0..n {
        if inp.data.is_empty() && !entries.is_empty() {
            break;
        }
        let Some(name) = sanitize(entry_name(&mut inp)) else { continue };
        let kind = match inp.byte() % 8 {
            0..=3 => EntryKind::Regular,
            4 => EntryKind::Directory,
            5 | 6 => EntryKind::Symlink,
            _ => EntryKind::Fifo,
        };
        let contents = match kind {
            EntryKind::Regular => match inp.byte() % 4 {
                0 => inp.bytes(255).to_vec(),
                _ => record(&mut inp, &env.local),
            },
            EntryKind::Symlink => match inp.byte() % 5 {
                0 => b"s.lock".to_vec(),
                1 => b"/etc/passwd".to_vec(),
                2 => b"..".to_vec(),
                3 => b"nonexistent".to_vec(),
                _ => {
                    let mut t = inp.bytes(40).to_vec();
                    t.retain(|b| *b != 0);
                    if t.is_empty() { b"x".to_vec() } else { t }
                }
            },
            _ => Vec::new(),
        };
        if entries.iter().any(|e| e.name == name) {
            continue;
        }
        if matches!(kind, EntryKind::Regular) && !env.slow && inspected(&name) && parse_record(&contents).is_err() {
            return; // see the module docs: 100 ms per inspection
        }
        entries.push(Entry { name, kind, contents });
    }

    let id = env.counter.fetch_add(1, Ordering::Relaxed);
    let rt = env.base.join(id.to_string());
    std::fs::create_dir(&rt).unwrap();
    let lock_dir = rt.join(LOCK_SUBDIR);
    std::fs::create_dir(rt.join("tmp")).unwrap();
    match dir_kind {
        5 => {
            std::fs::create_dir(rt.join("real")).unwrap();
            std::os::unix::fs::symlink(rt.join("real"), &lock_dir).unwrap();
        }
        6 => std::fs::write(&lock_dir, b"not a directory").unwrap(),
        7 => {}
        _ => std::fs::create_dir(&lock_dir).unwrap(),
    }
    let target_dir = if dir_kind == 5 { rt.join("real") } else { lock_dir.clone() };
    if dir_kind <= 5 {
        for e in &entries {
            let p = target_dir.join(OsStr::from_bytes(&e.name));
            match e.kind {
                EntryKind::Regular => std::fs::write(&p, &e.contents).unwrap(),
                EntryKind::Directory => std::fs::create_dir(&p).unwrap(),
                EntryKind::Symlink => std::os::unix::fs::symlink(OsStr::from_bytes(&e.contents), &p).unwrap(),
                EntryKind::Fifo => rustix::fs::mknodat(
                    rustix::fs::CWD,
                    &p,
                    rustix::fs::FileType::Fifo,
                    rustix::fs::Mode::from_raw_mode(0o600),
                    0,
                )
                .unwrap(),
            }
        }
    }

    let before = snapshot(&rt);
    let all = status_all(&rt, &probe);
    // Which lock each entry belongs to, by the library's own rule (the session recorded
    // inside a file decides before its name does).
    let attributed: BTreeMap<String, (String, SideKind)> = Dir::open(&target_dir)
        .ok()
        .and_then(|d| dir_entries(&d).ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| owner_of(&e).map(|o| (e.name, o)))
        .collect();
    let owner = |name: &str| attributed.get(name).map(|(l, k)| (l.as_str(), *k));
    assert_eq!(snapshot(&rt), before, "status_all changed the runtime directory");

    match &all {
        Err(_) => assert!(dir_kind >= 5, "status_all failed on a real lock directory: {all:?}"),
        Ok(v) if dir_kind == 7 => assert!(v.is_empty()),
        Ok(_) => assert!(dir_kind <= 4, "status_all accepted a lock directory that is not a directory"),
    }
    let Ok(all) = all else {
        cleanup(&rt);
        return;
    };

    // Owner ids that may legitimately appear: any that sits in a name shown unredacted.
    let mut shown_ok: Vec<&str> = Vec::new();
    for o in OWNERS.iter().take(3) {
        for e in &entries {
            let Ok(name) = std::str::from_utf8(&e.name) else { continue };
            // Shown as is: a primary, a name kept unredacted, or a side file whose lock name
            // (shown as the session) itself embeds the id — the `.lock`-in-an-owner-id
            // misattribution reported in fuzz/README.md.
            let redacted = matches!(owner(name), Some((lock, k))
                if !lock.contains(o) && !matches!(k, SideKind::Unknown | SideKind::Stale | SideKind::TransitionClaim));
            if name.contains(o) && !redacted {
                shown_ok.push(o);
            }
        }
    }
    let no_owner_id = |what: &str, json: &str| {
        for o in OWNERS.iter().take(3) {
            assert!(shown_ok.contains(o) || !json.contains(o), "{what} shows owner id {o}: {json}");
        }
    };

    let materialized = if dir_kind == 7 { &[][..] } else { &entries[..] };
    for e in materialized {
        let Ok(name) = std::str::from_utf8(&e.name) else { continue };
        let Some((lock, kind)) = owner(name) else { continue };
        let st = all
            .iter()
            .find(|s| s.lock_path.file_name() == Some(OsStr::new(lock)))
            .unwrap_or_else(|| panic!("{name:?} belongs to {lock:?}, which status_all does not report"));
        if kind == SideKind::TransitionClaim {
            assert!(st.claim.is_some(), "claim {name:?} not reported");
        } else {
            let shown = redact_side_file_name(lock, name, kind);
            assert!(
                st.side_files.iter().any(|f| f.name == shown && f.kind == kind),
                "{name:?} ({kind:?}) missing from {:?}",
                st.side_files
            );
        }
    }

    for st in &all {
        let json = serde_json::to_string(st).unwrap();
        no_owner_id("status", &json);
        let lock_name = st.lock_path.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(lock_name.ends_with(".lock"));
        let paths = LockPaths { dir: lock_dir.clone(), lock_name };
        let one = status_one(&rt, &paths, &st.session_id, None, &probe).expect("status_one");
        assert_eq!(&one, st, "status_one disagrees with status_all");
        match open_site(&rt, paths, &st.session_id, DirMode::Existing) {
            Ok(site) => {
                let key = TranscriptKey::default_for(&st.session_id).unwrap();
                let t = TranscriptRef { runtime_dir: rt.clone(), key };
                for tr in [None, Some(&t)] {
                    if let Ok(p) = plan(&site, tr, &probe) {
                        no_owner_id("plan", &serde_json::to_string(&p).unwrap());
                    }
                }
            }
            // An empty session id (a file named `.lock`) is refused by open_site.
            Err(e) => assert!(st.session_id.is_empty(), "open_site failed for {:?}: {e}", st.session_id),
        }
    }
    assert_eq!(snapshot(&rt), before, "status_one or plan changed the runtime directory");
    cleanup(&rt);
}

fn cleanup(rt: &Path) {
    std::fs::remove_dir_all(rt).unwrap();
}

fuzz_target!(|data: &[u8]| run(data));
