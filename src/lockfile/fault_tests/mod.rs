//! Engine-level fault injection for the two primary-path transitions: seal (active → sealed)
//! and certified takeover (sealed → active).
//!
//! Sources: seed 001 "Fixed claim", "Sealing", "Certified takeover", "Failure contract";
//! QWEN_FORMAT §5.6 (takeover), §5.7 (transition), §5.8 (rollback), §5.10 (seal).
//!
//! Every test runs in its own tempdir runtime `R` with a transcript at `R/chats/s.jsonl`,
//! fails the operation at a named failpoint or a faulted `link`/`rename`/`unlink`, and then
//! asserts the **exact bytes of every file** in the lock directory:
//!
//! * a failure before the primary moved, or one whose predecessor was provably restored,
//!   leaves exactly the pre-operation `L` and nothing else (the transition claim is released);
//! * a failure whose predecessor could not be proven restored leaves the transition claim (our
//!   exact record) and the predecessor at its retired name, and reports
//!   `TransitionClaimRetained`;
//! * an unknown file at `L` or at the transition claim path is never removed or overwritten.
//!
//! Hooks and syscall faults are thread-local, so every `#[test]` is isolated.
//!
//! This file holds the fixture and the exact-bytes assertions; the tests are grouped by what
//! goes wrong: [`syscalls`] (an error at each failpoint, a syscall failing before or after its
//! effect), [`gap`] (someone else acts between our steps: an unknown successor, a claim-aware
//! candidate, a rollback, a replaced transition claim, a loser), [`certify`] (what a seal
//! certifies and its undo, issue 21; network filesystems, issue 27).

#![allow(clippy::disallowed_methods)] // tests stage files by hand

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use super::acquire::{self, AcquireOptions, Certified, DirMode, Lease, LockSite, ReclaimPolicy, TranscriptRef};
use super::error::{LockError, Unavailable};
use super::failpoint::{When, clear_hooks, inject_syscall, set_hook};
use super::identity::{SystemProbe, holder};
use super::paths::LockPaths;
use super::record::{Extensions, OwnerToken, new_active_record, parse_record};
use super::seal::{SealOutcome, seal};
use super::sys;
use super::transcript::{ProofOptions, TranscriptKey, hex};

const TRANSCRIPT: &[u8] = b"{\"type\":\"user\",\"text\":\"hello\"}\n{\"type\":\"assistant\",\"text\":\"hi\"}\n";

fn eio() -> i32 {
    rustix::io::Errno::IO.raw_os_error()
}

fn injected() -> io::Error {
    io::Error::other("injected by fault_tests")
}

/// File bytes, compared exactly, printed as text so a failing snapshot is readable.
#[derive(Clone, PartialEq, Eq)]
struct Bytes(Vec<u8>);

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(&self.0))
    }
}

/// The lock directory: every entry name with its exact bytes.
type Snap = BTreeMap<String, Bytes>;

fn key() -> TranscriptKey {
    TranscriptKey::default_for("s").unwrap()
}

fn plain_opts() -> AcquireOptions {
    AcquireOptions {
        holder: holder(sys::own_pid()),
        process_kind: "unknown".into(),
        reclaim: ReclaimPolicy::Never,
        transcript: None,
        certified: None,
        holder_lock: false,
    }
}

fn certified_opts(r: &Path) -> AcquireOptions {
    AcquireOptions {
        transcript: Some(TranscriptRef { runtime_dir: r.to_path_buf(), key: key() }),
        certified: Some(Certified { proof: ProofOptions::default(), progress: None, sealed_only: false }),
        ..plain_opts()
    }
}

/// Paths a hook closure needs (hooks must be `'static`).
#[derive(Clone)]
struct Ctx {
    paths: LockPaths,
    transcript: PathBuf,
}

impl Ctx {
    fn at(&self, name: &str) -> PathBuf {
        self.paths.dir.join(name)
    }
    fn l(&self) -> PathBuf {
        self.paths.lock_path()
    }
    fn transition_claim(&self) -> PathBuf {
        self.at(&self.paths.transition_claim())
    }
    /// Replaces `name` with `bytes` on a NEW inode (write + rename), as another process would.
    fn replace(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let tmp = self.at("fault-tests-replacement");
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, self.at(name))
    }
    fn append_transcript(&self) -> io::Result<()> {
        let mut f = std::fs::OpenOptions::new().append(true).open(&self.transcript)?;
        f.write_all(b"{\"type\":\"user\",\"text\":\"late\"}\n")
    }
    /// The owner id of the record in the transition claim (the takeover's new owner).
    fn transition_claim_owner(&self) -> io::Result<String> {
        let raw = std::fs::read(self.transition_claim())?;
        Ok(parse_record(&raw).map_err(|m| io::Error::other(m.0))?.owner_id)
    }
}

struct Fx {
    _tmp: tempfile::TempDir,
    r: PathBuf,
    site: LockSite,
    lease: Lease,
    ctx: Ctx,
}

impl Fx {
    /// A runtime with a transcript and an active lease (schema 2, this process).
    fn active() -> Fx {
        clear_hooks(); // a loop's previous iteration must not leak into this fixture
        let tmp = tempfile::tempdir().unwrap();
        let r = tmp.path().to_path_buf();
        std::fs::create_dir_all(r.join("chats")).unwrap();
        std::fs::write(r.join("chats/s.jsonl"), TRANSCRIPT).unwrap();
        let site = acquire::open_site(&r, LockPaths::for_session(&r, "s"), "s", DirMode::Create).unwrap();
        let lease = acquire::acquire(&site, &plain_opts(), &SystemProbe).unwrap();
        let ctx = Ctx { paths: site.paths.clone(), transcript: r.join("chats/s.jsonl") };
        let fx = Fx { _tmp: tmp, r, site, lease, ctx };
        assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()), "fixture: only our active L");
        fx
    }

    /// An active lease that was then sealed successfully; returns the sealed bytes.
    fn sealed() -> (Fx, Vec<u8>) {
        let fx = Fx::active();
        let out = fx.seal().unwrap();
        fx.assert_sealed_ok(&out);
        let raw = out.record.raw.clone();
        (fx, raw)
    }

    fn l(&self) -> String {
        self.site.paths.lock_name.clone()
    }
    fn transition_claim(&self) -> String {
        self.site.paths.transition_claim()
    }
    fn handoff(&self) -> String {
        self.site.paths.handoff(self.lease.owner.expose())
    }
    fn active_raw(&self) -> Vec<u8> {
        self.lease.record.raw.clone()
    }
    fn retired_for(&self, new_owner: &str) -> String {
        self.site.paths.sealed_retired(self.lease.owner.expose(), new_owner)
    }

    fn seal(&self) -> Result<SealOutcome, LockError> {
        seal(&self.site, &self.r, &key(), &self.lease.owner, ProofOptions::default(), &mut |_, _| {})
    }

    fn takeover(&self) -> Result<Lease, LockError> {
        acquire::acquire(&self.site, &certified_opts(&self.r), &SystemProbe)
    }

    /// Every entry of the lock directory with its exact bytes (`<dir>`/`<symlink>` markers
    /// for non-regular entries).
    fn snap(&self) -> Snap {
        let mut m = Snap::new();
        for e in std::fs::read_dir(&self.site.paths.dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            let ft = e.path().symlink_metadata().unwrap().file_type();
            let bytes = if ft.is_symlink() {
                b"<symlink>".to_vec()
            } else if ft.is_dir() {
                b"<dir>".to_vec()
            } else {
                std::fs::read(e.path()).unwrap()
            };
            m.insert(name, Bytes(bytes));
        }
        m
    }

    fn only_l(&self, raw: &[u8]) -> Snap {
        snap_of(&[(&self.l(), raw)])
    }

    /// A successful seal leaves exactly the sealed record at `L`, certifying the transcript.
    fn assert_sealed_ok(&self, out: &SealOutcome) {
        assert_eq!(self.snap(), self.only_l(&out.record.raw), "a seal leaves only the sealed L");
        let rec = parse_record(&out.record.raw).unwrap();
        assert!(!rec.is_active());
        let active = &self.lease.record;
        assert_eq!(
            (&rec.session_id, &rec.owner_id, &rec.owner),
            (&active.session_id, &active.owner_id, &active.owner),
            "the sealed record keeps the session, the owner and its diagnostics"
        );
        let proof = &rec.seal().unwrap().transcript;
        let now = std::fs::read(&self.ctx.transcript).unwrap();
        assert_eq!(proof.relative_path, "chats/s.jsonl");
        assert!(proof.exists);
        assert_eq!(proof.byte_length, now.len() as u64);
        assert_eq!(proof.sha256, hex(&Sha256::digest(&now)));
    }

    /// A successful takeover leaves exactly the new active record at `L`.
    fn assert_took_over(&self, lease: &Lease) {
        assert_eq!(self.snap(), self.only_l(&lease.record.raw), "a takeover leaves only the new active L");
        assert!(lease.record.is_active());
        assert_ne!(lease.owner.expose(), self.lease.owner.expose());
        assert!(lease.took_over.is_some());
    }

    /// After a clean failure, the operation must be repeatable (nothing left behind blocks it).
    fn retry_seal_succeeds(&self) {
        clear_hooks();
        let out = self.seal().expect("a clean failure leaves the seal repeatable");
        self.assert_sealed_ok(&out);
    }

    fn retry_takeover_succeeds(&self) {
        clear_hooks();
        let lease = self.takeover().expect("a clean failure leaves the takeover repeatable");
        self.assert_took_over(&lease);
    }
}

fn snap_of(items: &[(&str, &[u8])]) -> Snap {
    items.iter().map(|(n, b)| (n.to_string(), Bytes(b.to_vec()))).collect()
}

#[track_caller]
fn assert_unavailable(e: &LockError, want: Unavailable) {
    match e {
        LockError::Unavailable { reason, .. } if *reason == want => {}
        other => panic!("expected unavailable {want:?}, got {other:?}"),
    }
}

/// The original error of a failpoint that returned Err (no cleanup failure recorded).
#[track_caller]
fn assert_failpoint_error(e: &LockError, name: &str) {
    match e {
        LockError::Unavailable { reason: Unavailable::Io, detail: Some(d), .. } if d.contains(name) => {}
        other => panic!("expected the failpoint {name} error itself, got {other:?}"),
    }
}

fn failing_hook(name: &'static str) {
    set_hook(name, || Err(injected()));
}

/// A hook that fails only on its first call.
fn failing_once(name: &'static str) {
    let n = Rc::new(Cell::new(0u32));
    set_hook(name, move || {
        n.set(n.get() + 1);
        if n.get() == 1 { Err(injected()) } else { Ok(()) }
    });
}

/// A fresh schema-2 active record for `session` held by this (live) process.
fn foreign_active(session: &str) -> Vec<u8> {
    new_active_record(
        session,
        &OwnerToken::generate(),
        &holder(sys::own_pid()),
        "unknown",
        OffsetDateTime::now_utc(),
        &Extensions::epoch(1),
    )
    .unwrap()
    .raw
}

/// A same-session schema-3 active record (qwen managed): not a claim-aware candidate.
fn schema3_active(session: &str) -> Vec<u8> {
    let mut m: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&foreign_active(session)).unwrap();
    m.insert("schema_version".into(), 3.into());
    m.insert("format_version".into(), 1.into());
    let raw = serde_json::to_vec(&m).unwrap();
    let rec = parse_record(&raw).unwrap();
    assert!(rec.is_active() && rec.session_id == session);
    raw
}

/// Hooks `takeover.after_claim` to record the new owner's transition claim bytes (and run
/// `then`).
fn record_transition_claim(
    fx: &Fx,
    then: impl Fn(&Ctx, &str) -> io::Result<()> + 'static,
) -> Rc<RefCell<Option<Vec<u8>>>> {
    let seen = Rc::new(RefCell::new(None));
    let (ctx, s) = (fx.ctx.clone(), seen.clone());
    set_hook("takeover.after_claim", move || {
        *s.borrow_mut() = Some(std::fs::read(ctx.transition_claim())?);
        then(&ctx, &ctx.transition_claim_owner()?)
    });
    seen
}

fn new_owner_of(raw: &[u8]) -> String {
    parse_record(raw).unwrap().owner_id
}

mod certify;
mod gap;
mod syscalls;
