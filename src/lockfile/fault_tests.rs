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
//!   leaves exactly the pre-operation `L` and nothing else (the claim is released);
//! * a failure whose predecessor could not be proven restored leaves the claim (our exact
//!   record) and the predecessor at its retired name, and reports `ClaimRetained`;
//! * an unknown file at `L` or at the claim path is never removed or overwritten.
//!
//! Hooks and syscall faults are thread-local, so every `#[test]` is isolated.

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
    fn claim(&self) -> PathBuf {
        self.at(&self.paths.claim())
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
    /// The owner id of the record in the claim (the takeover's new owner).
    fn claim_owner(&self) -> io::Result<String> {
        let raw = std::fs::read(self.claim())?;
        Ok(parse_record(&raw).map_err(|m| io::Error::other(m.0))?.owner.owner_id)
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
    fn claim(&self) -> String {
        self.site.paths.claim()
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
        assert_eq!(rec.owner, self.lease.record.owner, "the sealed record keeps the owner diagnostics");
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
    assert!(rec.is_active() && rec.owner.session_id == session);
    raw
}

// ───────────────────────── 1. an Err returned at each failpoint ─────────────────────────

#[test]
fn seal_error_before_the_primary_moves_keeps_the_exact_active_lock_and_drops_the_claim() {
    for fp in ["seal.after_claim", "transition.before_rename"] {
        let fx = Fx::active();
        failing_hook(fp);
        let e = fx.seal().unwrap_err();
        assert_failpoint_error(&e, fp);
        assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()), "{fp}: exact active L, no claim, no candidate");
        fx.retry_seal_succeeds();
    }
}

#[test]
fn seal_error_after_the_rename_restores_the_exact_active_lock() {
    // The primary path is in its gap (L missing): the failure goes through the same restore
    // as a failed link (§5.7 step 3), so the exact predecessor is back and the claim gone.
    let fx = Fx::active();
    failing_hook("transition.after_rename");
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, "transition.after_rename");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()));
    fx.retry_seal_succeeds();
}

#[test]
fn seal_error_before_the_link_restores_the_predecessor_when_the_restore_link_works() {
    let fx = Fx::active();
    failing_once("transition.before_link");
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, "transition.before_link");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()));
    fx.retry_seal_succeeds();
}

#[test]
fn seal_error_before_every_link_retains_the_claim_when_the_restore_fails_too() {
    let fx = Fx::active();
    failing_hook("transition.before_link");
    let e = fx.seal().unwrap_err();
    assert_unavailable(&e, Unavailable::ClaimRetained);
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.claim(), &a), (&fx.handoff(), &a)]));
}

#[test]
fn seal_error_after_commit_rolls_back_to_the_exact_active_lock() {
    for fp in ["transition.after_link", "seal.after_transition"] {
        let fx = Fx::active();
        failing_hook(fp);
        let e = fx.seal().unwrap_err();
        assert_failpoint_error(&e, fp);
        assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()), "{fp}: rolled back, claim/candidate/handoff gone");
        fx.retry_seal_succeeds();
    }
}

#[test]
fn takeover_error_before_the_primary_moves_keeps_the_exact_seal_and_drops_the_claim() {
    for fp in ["takeover.after_claim", "transition.before_rename"] {
        let (fx, sealed) = Fx::sealed();
        failing_hook(fp);
        let e = fx.takeover().unwrap_err();
        assert_failpoint_error(&e, fp);
        assert_eq!(fx.snap(), fx.only_l(&sealed), "{fp}: exact sealed L, no claim");
        fx.retry_takeover_succeeds();
    }
}

/// Hooks `takeover.after_claim` to record the new owner's claim bytes (and run `then`).
fn record_claim(fx: &Fx, then: impl Fn(&Ctx, &str) -> io::Result<()> + 'static) -> Rc<RefCell<Option<Vec<u8>>>> {
    let seen = Rc::new(RefCell::new(None));
    let (ctx, s) = (fx.ctx.clone(), seen.clone());
    set_hook("takeover.after_claim", move || {
        *s.borrow_mut() = Some(std::fs::read(ctx.claim())?);
        then(&ctx, &ctx.claim_owner()?)
    });
    seen
}

fn new_owner_of(raw: &[u8]) -> String {
    parse_record(raw).unwrap().owner.owner_id
}

#[test]
fn takeover_error_after_the_rename_restores_the_seal() {
    let (fx, sealed) = Fx::sealed();
    failing_hook("transition.after_rename");
    let e = fx.takeover().unwrap_err();
    assert_failpoint_error(&e, "transition.after_rename");
    assert_eq!(fx.snap(), fx.only_l(&sealed));
}

#[test]
fn takeover_error_before_the_link_restores_the_seal_when_the_restore_link_works() {
    let (fx, sealed) = Fx::sealed();
    failing_once("transition.before_link");
    let e = fx.takeover().unwrap_err();
    assert_failpoint_error(&e, "transition.before_link");
    assert_eq!(fx.snap(), fx.only_l(&sealed));
    fx.retry_takeover_succeeds();
}

#[test]
fn takeover_error_before_every_link_retains_the_claim_when_the_restore_fails_too() {
    let (fx, sealed) = Fx::sealed();
    let seen = record_claim(&fx, |_, _| Ok(()));
    failing_hook("transition.before_link");
    let e = fx.takeover().unwrap_err();
    assert_unavailable(&e, Unavailable::ClaimRetained);
    let claim = seen.borrow().clone().unwrap();
    let retired = fx.retired_for(&new_owner_of(&claim));
    assert_eq!(fx.snap(), snap_of(&[(&fx.claim(), &claim), (&retired, &sealed)]));
}

#[test]
fn takeover_error_after_commit_rolls_back_to_the_exact_seal() {
    for fp in ["transition.after_link", "takeover.after_transition"] {
        let (fx, sealed) = Fx::sealed();
        failing_hook(fp);
        let e = fx.takeover().unwrap_err();
        assert_failpoint_error(&e, fp);
        assert_eq!(fx.snap(), fx.only_l(&sealed), "{fp}: rolled back, claim and retired gone");
        fx.retry_takeover_succeeds();
    }
}

// ───────────────────── 2. link / rename / unlink failing AFTER effect ─────────────────────

#[test]
fn seal_reconciles_every_error_after_effect_by_exact_bytes() {
    // (op, which target) — each one must still end in a clean, successful seal.
    let cases: [(&str, &str); 4] = [
        ("link", "claim install"),
        ("rename", "transition rename"),
        ("link", "link into L"),
        ("unlink", "claim unlink"),
    ];
    for (op, what) in cases {
        let fx = Fx::active();
        match what {
            "claim install" => inject_syscall("link", ".claim", When::After, eio(), 1),
            "transition rename" => inject_syscall("rename", &fx.handoff(), When::After, eio(), 1),
            // Armed inside the claim so nothing earlier can consume it.
            "link into L" => set_hook("seal.after_claim", || {
                inject_syscall("link", ".lock", When::After, eio(), 1);
                Ok(())
            }),
            _ => inject_syscall("unlink", ".claim", When::After, eio(), 1),
        }
        let out = fx.seal().unwrap_or_else(|e| panic!("{op} of the {what} failing after effect: {e:?}"));
        fx.assert_sealed_ok(&out);
        clear_hooks();
    }
}

#[test]
fn seal_failure_cleanup_reconciles_claim_and_rollback_unlinks_failing_after_effect() {
    // The claim unlink of a failure cleanup.
    let fx = Fx::active();
    failing_hook("seal.after_claim");
    inject_syscall("unlink", ".claim", When::After, eio(), 1);
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, "seal.after_claim");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()));
    clear_hooks();

    // The rollback's unlink of the committed sealed L.
    let fx = Fx::active();
    set_hook("seal.after_transition", || {
        inject_syscall("unlink", ".lock", When::After, eio(), 1);
        Err(injected())
    });
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, "seal.after_transition");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()));
    fx.retry_seal_succeeds();
}

#[test]
fn takeover_reconciles_every_error_after_effect_by_exact_bytes() {
    for what in ["claim install", "transition rename", "link into L", "claim unlink"] {
        let (fx, _) = Fx::sealed();
        match what {
            "claim install" => inject_syscall("link", ".claim", When::After, eio(), 1),
            "transition rename" => {
                let paths = fx.site.paths.clone();
                let sealed_owner = fx.lease.owner.expose().to_owned();
                record_claim(&fx, move |_, new_owner| {
                    inject_syscall("rename", &paths.sealed_retired(&sealed_owner, new_owner), When::After, eio(), 1);
                    Ok(())
                });
            }
            "link into L" => {
                record_claim(&fx, |_, _| {
                    inject_syscall("link", ".lock", When::After, eio(), 1);
                    Ok(())
                });
            }
            _ => inject_syscall("unlink", ".claim", When::After, eio(), 1),
        }
        let lease = fx.takeover().unwrap_or_else(|e| panic!("{what} failing after effect: {e:?}"));
        fx.assert_took_over(&lease);
        clear_hooks();
    }
}

#[test]
fn takeover_failure_cleanup_reconciles_claim_and_rollback_unlinks_failing_after_effect() {
    let (fx, sealed) = Fx::sealed();
    failing_hook("takeover.after_claim");
    inject_syscall("unlink", ".claim", When::After, eio(), 1);
    let e = fx.takeover().unwrap_err();
    assert_failpoint_error(&e, "takeover.after_claim");
    assert_eq!(fx.snap(), fx.only_l(&sealed));
    clear_hooks();

    let (fx, sealed) = Fx::sealed();
    set_hook("takeover.after_transition", || {
        inject_syscall("unlink", ".lock", When::After, eio(), 1);
        Err(injected())
    });
    let e = fx.takeover().unwrap_err();
    assert_failpoint_error(&e, "takeover.after_transition");
    assert_eq!(fx.snap(), fx.only_l(&sealed));
    fx.retry_takeover_succeeds();
}

// ───────────────────── 3. link / rename / unlink failing BEFORE effect ─────────────────────

#[test]
fn seal_syscalls_failing_before_effect_leave_the_exact_active_lock() {
    for what in ["claim install", "transition rename", "link into L"] {
        let fx = Fx::active();
        match what {
            "claim install" => inject_syscall("link", ".claim", When::Before, eio(), 1),
            "transition rename" => inject_syscall("rename", &fx.handoff(), When::Before, eio(), 1),
            // The restore link (the next ".lock" link) works.
            _ => set_hook("seal.after_claim", || {
                inject_syscall("link", ".lock", When::Before, eio(), 1);
                Ok(())
            }),
        }
        let e = fx.seal().unwrap_err();
        assert_unavailable(&e, Unavailable::Io);
        assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()), "{what} failing before effect");
        fx.retry_seal_succeeds();
    }
}

#[test]
fn seal_whose_link_and_restore_link_both_fail_retains_the_claim() {
    let fx = Fx::active();
    set_hook("seal.after_claim", || {
        inject_syscall("link", ".lock", When::Before, eio(), 2);
        Ok(())
    });
    let e = fx.seal().unwrap_err();
    assert_unavailable(&e, Unavailable::ClaimRetained);
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.claim(), &a), (&fx.handoff(), &a)]));
}

#[test]
fn seal_failure_cleanup_whose_claim_unlink_fails_keeps_the_claim_and_the_active_lock() {
    let fx = Fx::active();
    failing_hook("seal.after_claim");
    inject_syscall("unlink", ".claim", When::Before, eio(), 1);
    let e = fx.seal().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &a), (&fx.claim(), &a)]), "fail closed: the claim fences");
}

#[test]
fn seal_rollback_whose_unlink_fails_once_retries_and_restores() {
    let fx = Fx::active();
    set_hook("seal.after_transition", || {
        inject_syscall("unlink", ".lock", When::Before, eio(), 1);
        Err(injected())
    });
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, "seal.after_transition");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()));
}

/// QWEN_FORMAT §5.6 step 13 (used by §5.10 step 14): a claim that cannot be unlinked is
/// **unavailable**; only the retired/candidate removals ignore errors. A seal or takeover
/// that reports success must therefore leave no claim behind.
#[test]
fn seal_whose_success_path_claim_unlink_fails_must_not_report_success_with_a_residual_claim() {
    let fx = Fx::active();
    inject_syscall("unlink", ".claim", When::Before, eio(), 1);
    let result = fx.seal();
    clear_hooks();
    match result {
        Ok(out) => fx.assert_sealed_ok(&out),
        Err(e) => {
            assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
            let snap = fx.snap();
            let l = &snap.get(&fx.l()).expect("L is present").0;
            let claim_ok = snap.get(&fx.claim()).is_none_or(|c| c.0 == fx.active_raw());
            assert!(snap.len() <= 2 && claim_ok, "{snap:?}");
            assert!(*l == fx.active_raw() || !parse_record(l).unwrap().is_active(), "one owner at most");
        }
    }
}

#[test]
fn takeover_syscalls_failing_before_effect_leave_the_exact_seal() {
    for what in ["claim install", "transition rename", "link into L"] {
        let (fx, sealed) = Fx::sealed();
        match what {
            "claim install" => inject_syscall("link", ".claim", When::Before, eio(), 1),
            "transition rename" => {
                let paths = fx.site.paths.clone();
                let sealed_owner = fx.lease.owner.expose().to_owned();
                record_claim(&fx, move |_, new_owner| {
                    inject_syscall("rename", &paths.sealed_retired(&sealed_owner, new_owner), When::Before, eio(), 1);
                    Ok(())
                });
            }
            _ => {
                record_claim(&fx, |_, _| {
                    inject_syscall("link", ".lock", When::Before, eio(), 1);
                    Ok(())
                });
            }
        }
        let e = fx.takeover().unwrap_err();
        assert_unavailable(&e, Unavailable::Io);
        assert_eq!(fx.snap(), fx.only_l(&sealed), "{what} failing before effect");
        fx.retry_takeover_succeeds();
    }
}

#[test]
fn takeover_failure_cleanup_whose_claim_unlink_fails_keeps_the_claim_and_the_seal() {
    let (fx, sealed) = Fx::sealed();
    let seen = record_claim(&fx, |_, _| Err(injected()));
    inject_syscall("unlink", ".claim", When::Before, eio(), 1);
    let e = fx.takeover().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let claim = seen.borrow().clone().unwrap();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &sealed), (&fx.claim(), &claim)]));
}

#[test]
fn takeover_rollback_whose_unlink_fails_once_retries_and_restores() {
    let (fx, sealed) = Fx::sealed();
    set_hook("takeover.after_transition", || {
        inject_syscall("unlink", ".lock", When::Before, eio(), 1);
        Err(injected())
    });
    let e = fx.takeover().unwrap_err();
    assert_failpoint_error(&e, "takeover.after_transition");
    assert_eq!(fx.snap(), fx.only_l(&sealed));
}

/// See the seal variant: a takeover that reports success must leave no claim behind.
#[test]
fn takeover_whose_success_path_claim_unlink_fails_must_not_report_success_with_a_residual_claim() {
    let (fx, sealed) = Fx::sealed();
    inject_syscall("unlink", ".claim", When::Before, eio(), 1);
    let result = fx.takeover();
    clear_hooks();
    match result {
        Ok(lease) => fx.assert_took_over(&lease),
        Err(e) => {
            assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
            let snap = fx.snap();
            assert!(snap.get(&fx.l()).map(|b| &b.0) == Some(&sealed) || snap.contains_key(&fx.claim()), "{snap:?}");
        }
    }
}

// ───────────────────── 4. an unknown successor appears in the gap ─────────────────────

fn unknown_successors() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("another session's active record", foreign_active("other")),
        ("garbage", b"garbage\n".to_vec()),
        ("a same-session schema-3 active record", schema3_active("s")),
    ]
}

#[test]
fn seal_never_removes_or_overwrites_an_unknown_successor() {
    for (what, bytes) in unknown_successors() {
        let fx = Fx::active();
        let (ctx, b) = (fx.ctx.clone(), bytes.clone());
        set_hook("transition.after_rename", move || std::fs::write(ctx.l(), &b));
        let e = fx.seal().unwrap_err();
        assert_unavailable(&e, Unavailable::ClaimRetained);
        let a = fx.active_raw();
        assert_eq!(
            fx.snap(),
            snap_of(&[(&fx.l(), &bytes), (&fx.claim(), &a), (&fx.handoff(), &a)]),
            "{what}: untouched, claim retained, predecessor at its handoff name, candidate removed"
        );
    }
}

#[test]
fn seal_never_removes_a_directory_that_appears_at_the_primary_path() {
    let fx = Fx::active();
    let ctx = fx.ctx.clone();
    set_hook("transition.after_rename", move || std::fs::create_dir(ctx.l()));
    let e = fx.seal().unwrap_err();
    assert_unavailable(&e, Unavailable::ClaimRetained);
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), b"<dir>"), (&fx.claim(), &a), (&fx.handoff(), &a)]));
}

#[test]
fn takeover_never_removes_or_overwrites_an_unknown_successor() {
    for (what, bytes) in unknown_successors() {
        let (fx, sealed) = Fx::sealed();
        let seen = record_claim(&fx, |_, _| Ok(()));
        let (ctx, b) = (fx.ctx.clone(), bytes.clone());
        set_hook("transition.after_rename", move || std::fs::write(ctx.l(), &b));
        let e = fx.takeover().unwrap_err();
        assert_unavailable(&e, Unavailable::ClaimRetained);
        let claim = seen.borrow().clone().unwrap();
        let retired = fx.retired_for(&new_owner_of(&claim));
        assert_eq!(
            fx.snap(),
            snap_of(&[(&fx.l(), &bytes), (&fx.claim(), &claim), (&retired, &sealed)]),
            "{what}: untouched, claim retained, seal at its retired name"
        );
    }
}

// ───────────────────── 5. a claim-aware candidate in the gap ─────────────────────

/// The background thread that plays the candidate's second claim check.
type Leaver = Rc<RefCell<Option<std::thread::JoinHandle<()>>>>;

/// Installs a same-session schema-2 active candidate at `L` in the gap; when `leave_after`
/// is set, a background thread removes exactly that candidate after the delay (its second
/// claim check). Returns the candidate bytes and the thread handle slot.
fn candidate_in_gap(fx: &Fx, leave_after: Option<Duration>) -> (Vec<u8>, Leaver) {
    let cand = foreign_active("s");
    assert_eq!(parse_record(&cand).unwrap().schema, super::record::Schema::V2);
    let handle = Rc::new(RefCell::new(None));
    let (ctx, c, h) = (fx.ctx.clone(), cand.clone(), handle.clone());
    set_hook("transition.after_rename", move || {
        std::fs::write(ctx.l(), &c)?;
        if let Some(d) = leave_after {
            let (l, c) = (ctx.l(), c.clone());
            *h.borrow_mut() = Some(std::thread::spawn(move || {
                std::thread::sleep(d);
                if std::fs::read(&l).map(|b| b == c).unwrap_or(false) {
                    std::fs::remove_file(&l).unwrap();
                }
            }));
        }
        Ok(())
    });
    (cand, handle)
}

fn join(h: &Leaver) {
    if let Some(h) = h.borrow_mut().take() {
        h.join().unwrap();
    }
}

#[test]
fn seal_waits_for_a_claim_aware_candidate_to_leave() {
    let fx = Fx::active();
    let (_, h) = candidate_in_gap(&fx, Some(Duration::from_millis(200)));
    let started = Instant::now();
    let out = fx.seal();
    join(&h);
    let out = out.expect("the transition waits for the candidate");
    assert!(started.elapsed() >= Duration::from_millis(200));
    fx.assert_sealed_ok(&out);
}

#[test]
fn seal_gives_up_on_a_candidate_that_never_leaves_and_keeps_everything() {
    let fx = Fx::active();
    let (cand, _) = candidate_in_gap(&fx, None);
    let started = Instant::now();
    let e = fx.seal().unwrap_err();
    let took = started.elapsed();
    // The wait is bounded (19 sleeps of 50 ms per link loop); the upper bound only guards
    // against a hang, since this machine may be loaded.
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(60), "{took:?}");
    assert_unavailable(&e, Unavailable::ClaimRetained);
    assert!(e.to_string().contains("did not release the claimed primary path"), "{e}");
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &cand), (&fx.claim(), &a), (&fx.handoff(), &a)]));
}

#[test]
fn takeover_waits_for_a_claim_aware_candidate_to_leave() {
    let (fx, _) = Fx::sealed();
    let (_, h) = candidate_in_gap(&fx, Some(Duration::from_millis(200)));
    let out = fx.takeover();
    join(&h);
    let lease = out.expect("the transition waits for the candidate");
    fx.assert_took_over(&lease);
}

#[test]
fn takeover_gives_up_on_a_candidate_that_never_leaves_and_keeps_everything() {
    let (fx, sealed) = Fx::sealed();
    let seen = record_claim(&fx, |_, _| Ok(()));
    let (cand, _) = candidate_in_gap(&fx, None);
    let started = Instant::now();
    let e = fx.takeover().unwrap_err();
    let took = started.elapsed();
    // The wait is bounded (19 sleeps of 50 ms per link loop); the upper bound only guards
    // against a hang, since this machine may be loaded.
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(60), "{took:?}");
    assert_unavailable(&e, Unavailable::ClaimRetained);
    assert!(e.to_string().contains("did not release the claimed primary path"), "{e}");
    let claim = seen.borrow().clone().unwrap();
    let retired = fx.retired_for(&new_owner_of(&claim));
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &cand), (&fx.claim(), &claim), (&retired, &sealed)]));
}

// ───────────────────────────────── 6. rollback ─────────────────────────────────

#[test]
fn seal_whose_transcript_changes_after_commit_rolls_back_exactly() {
    let fx = Fx::active();
    let ctx = fx.ctx.clone();
    set_hook("seal.after_transition", move || ctx.append_transcript());
    let e = fx.seal().unwrap_err();
    assert!(matches!(e, LockError::TranscriptChanged { .. }), "{e:?}");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()), "exact predecessor, no claim/candidate/handoff");
}

#[test]
fn seal_rollback_that_cannot_restore_retains_the_claim() {
    let fx = Fx::active();
    let (ctx, handoff) = (fx.ctx.clone(), fx.handoff());
    set_hook("seal.after_transition", move || {
        ctx.append_transcript()?;
        std::fs::remove_file(ctx.at(&handoff))
    });
    let e = fx.seal().unwrap_err();
    assert_unavailable(&e, Unavailable::ClaimRetained);
    let snap = fx.snap();
    assert_eq!(snap.get(&fx.claim()), Some(&Bytes(fx.active_raw())), "claim retained: {snap:?}");
    assert!(!snap.keys().any(|k| k.contains(".sealed-candidate.")), "our candidate is ours to remove");
    assert_eq!(snap, snap_of(&[(&fx.claim(), &fx.active_raw())]), "(§5.8 removes the claimed primary first)");
}

#[test]
fn takeover_whose_transcript_changes_after_commit_rolls_back_exactly() {
    let (fx, sealed) = Fx::sealed();
    let ctx = fx.ctx.clone();
    set_hook("takeover.after_transition", move || ctx.append_transcript());
    let e = fx.takeover().unwrap_err();
    assert!(matches!(e, LockError::TranscriptChanged { .. }), "{e:?}");
    assert_eq!(fx.snap(), fx.only_l(&sealed), "exact sealed predecessor, no claim, no retired");
}

#[test]
fn takeover_rollback_that_cannot_restore_retains_the_claim() {
    let (fx, _) = Fx::sealed();
    let seen = record_claim(&fx, |_, _| Ok(()));
    let (ctx, paths, sealed_owner) = (fx.ctx.clone(), fx.site.paths.clone(), fx.lease.owner.expose().to_owned());
    set_hook("takeover.after_transition", move || {
        ctx.append_transcript()?;
        std::fs::remove_file(ctx.at(&paths.sealed_retired(&sealed_owner, &ctx.claim_owner()?)))
    });
    let e = fx.takeover().unwrap_err();
    assert_unavailable(&e, Unavailable::ClaimRetained);
    let claim = seen.borrow().clone().unwrap();
    assert_eq!(fx.snap(), snap_of(&[(&fx.claim(), &claim)]));
}

// ───────────────────── 7. a claim replaced by someone else ─────────────────────

#[test]
fn seal_never_rolls_back_under_a_replaced_claim() {
    let foreign = foreign_active("s");
    // After commit: L stays sealed, the foreign claim and the handoff are untouched.
    let fx = Fx::active();
    let (ctx, f, claim) = (fx.ctx.clone(), foreign.clone(), fx.claim());
    let sealed = Rc::new(RefCell::new(Vec::new()));
    let s = sealed.clone();
    set_hook("seal.after_transition", move || {
        *s.borrow_mut() = std::fs::read(ctx.l())?;
        ctx.replace(&claim, &f)?;
        Err(injected())
    });
    let e = fx.seal().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let sealed = sealed.borrow().clone();
    assert!(!parse_record(&sealed).unwrap().is_active());
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &sealed), (&fx.claim(), &foreign), (&fx.handoff(), &a)]));

    // In the gap: L is not restored by a transition that lost its claim.
    let fx = Fx::active();
    let (ctx, f, claim) = (fx.ctx.clone(), foreign.clone(), fx.claim());
    set_hook("transition.after_rename", move || ctx.replace(&claim, &f));
    let e = fx.seal().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.claim(), &foreign), (&fx.handoff(), &a)]));
}

#[test]
fn takeover_never_rolls_back_under_a_replaced_claim() {
    let foreign = foreign_active("s");
    let (fx, sealed) = Fx::sealed();
    let seen = record_claim(&fx, |_, _| Ok(()));
    let (ctx, f, claim) = (fx.ctx.clone(), foreign.clone(), fx.claim());
    set_hook("takeover.after_transition", move || {
        ctx.replace(&claim, &f)?;
        Err(injected())
    });
    let e = fx.takeover().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let ours = seen.borrow().clone().unwrap();
    let retired = fx.retired_for(&new_owner_of(&ours));
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &ours), (&fx.claim(), &foreign), (&retired, &sealed)]));

    let (fx, sealed) = Fx::sealed();
    let seen = record_claim(&fx, |_, _| Ok(()));
    let (ctx, f, claim) = (fx.ctx.clone(), foreign.clone(), fx.claim());
    set_hook("transition.after_rename", move || ctx.replace(&claim, &f));
    let e = fx.takeover().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let ours = seen.borrow().clone().unwrap();
    let retired = fx.retired_for(&new_owner_of(&ours));
    assert_eq!(fx.snap(), snap_of(&[(&fx.claim(), &foreign), (&retired, &sealed)]));
}

// ───────────────────────────────── 8. losers ─────────────────────────────────

#[test]
fn takeover_loses_to_an_existing_claim_and_leaves_it_untouched() {
    // A claim that already exists before the takeover starts.
    let (fx, sealed) = Fx::sealed();
    let theirs = foreign_active("s");
    std::fs::write(fx.ctx.claim(), &theirs).unwrap();
    let e = fx.takeover().unwrap_err();
    assert_unavailable(&e, Unavailable::ClaimPresent);
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &sealed), (&fx.claim(), &theirs)]));

    // A claim that appears after our claim check, so our own claim install meets it.
    let (fx, sealed) = Fx::sealed();
    let theirs = foreign_active("s");
    let (ctx, t) = (fx.ctx.clone(), theirs.clone());
    let fired = Rc::new(Cell::new(false));
    let f = fired.clone();
    set_hook("acquire.before_install", move || {
        f.set(true);
        std::fs::write(ctx.claim(), &t)
    });
    let reached_claim = Rc::new(Cell::new(false));
    let r = reached_claim.clone();
    set_hook("takeover.after_claim", move || {
        r.set(true);
        Ok(())
    });
    let e = fx.takeover().unwrap_err();
    assert!(fired.get() && !reached_claim.get());
    assert_unavailable(&e, Unavailable::ClaimPresent);
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &sealed), (&fx.claim(), &theirs)]));
}

#[test]
fn takeover_that_finds_a_live_active_winner_inside_its_claim_conflicts_and_leaves_it() {
    let (fx, _) = Fx::sealed();
    let winner = foreign_active("s");
    let (ctx, w, l) = (fx.ctx.clone(), winner.clone(), fx.l());
    set_hook("takeover.after_claim", move || ctx.replace(&l, &w));
    let e = fx.takeover().unwrap_err();
    assert!(matches!(e, LockError::Conflict { sealed: false, .. }), "{e:?}");
    assert_eq!(fx.snap(), fx.only_l(&winner), "their L untouched, our claim removed");
}

// ───────────────────── issue 21: what a seal certifies, and its undo ─────────────────────

/// Item 5: under the claim the owner is rechecked by inode, not only by bytes. A
/// byte-identical copy moved over `L` (`cp L L.copy && mv L.copy L`) means someone rewrote
/// the primary: the lease is lost, and the copy is left alone.
#[test]
fn seal_with_the_active_lock_copied_over_in_the_claim_window_reports_the_lease_lost() {
    let fx = Fx::active();
    let ctx = fx.ctx.clone();
    let (l, raw) = (fx.l(), fx.active_raw());
    set_hook("seal.after_claim", move || ctx.replace(&l, &raw));
    let before = std::fs::metadata(fx.ctx.l()).unwrap();
    let e = fx.seal().unwrap_err();
    assert!(matches!(&e, LockError::NotOwner { reason, .. } if reason.contains("another inode")), "{e:?}");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()), "the copy stays, nothing else");
    use std::os::unix::fs::MetadataExt;
    assert_ne!(std::fs::metadata(fx.ctx.l()).unwrap().ino(), before.ino(), "the copy is what is at L");
}

/// Item 4: the transcript is fsynced through the kept-open descriptor before the sealed
/// candidate exists; a failed fsync fails the seal with the exact active lock kept.
#[test]
fn seal_whose_transcript_fsync_fails_keeps_the_exact_active_lock() {
    let fx = Fx::active();
    let candidates = Rc::new(Cell::new(0u32));
    failing_hook("transcript.fsync");
    {
        let c = candidates.clone();
        set_hook("seal.after_candidate", move || {
            c.set(c.get() + 1);
            Ok(())
        });
    }
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, "transcript.fsync");
    assert_eq!(candidates.get(), 0, "the fsync comes before the sealed candidate is installed");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()));
    fx.retry_seal_succeeds();
}

/// Item 0, engine half: a takeover whose token could not be delivered puts back the exact
/// sealed record it replaced — never a release — and only while the transcript still
/// matches that seal's proof.
#[test]
fn a_taken_over_seal_is_restored_byte_for_byte_and_only_over_the_same_transcript() {
    use super::give_back::{GaveBack, give_back};
    let (fx, sealed_raw) = Fx::sealed();
    let lease = fx.takeover().unwrap();
    fx.assert_took_over(&lease);
    let t = TranscriptRef { runtime_dir: fx.r.clone(), key: key() };
    assert_eq!(give_back(&fx.site, &lease, Some(&t)).unwrap(), GaveBack::SealRestored);
    assert_eq!(fx.snap(), fx.only_l(&sealed_raw), "exactly the sealed record, nothing else");
    fx.retry_takeover_succeeds();

    // The transcript changed after the takeover: the seal cannot be restored honestly, so
    // the active lock stays and the error says the transcript changed.
    let (fx, _) = Fx::sealed();
    let lease = fx.takeover().unwrap();
    fx.ctx.append_transcript().unwrap();
    let t = TranscriptRef { runtime_dir: fx.r.clone(), key: key() };
    let e = give_back(&fx.site, &lease, Some(&t)).unwrap_err();
    assert!(matches!(e, LockError::TranscriptChanged { .. }), "{e:?}");
    assert_eq!(fx.snap(), fx.only_l(&lease.record.raw), "our active lock stays, untouched");

    // A plain acquisition replaced nothing worth keeping: it is released.
    let fx = Fx::active();
    assert_eq!(give_back(&fx.site, &fx.lease, None).unwrap(), GaveBack::Released);
    assert_eq!(fx.snap(), Snap::new());
}

/// Issue 27: network filesystems (NFS, FUSE) without `RENAME_NOREPLACE`, and with clients
/// that cache lookups.
mod network {
    use super::*;
    use rustix::io::Errno;

    #[test]
    fn a_lock_that_reads_back_under_another_inode_is_filesystem_unsupported_on_a_network_filesystem() {
        // sshfs numbers each path: the linked lock has our bytes but not our inode. The
        // hook plays that by swapping in a byte-identical copy right after the install.
        for network in [false, true] {
            let mut fx = Fx::active();
            crate::lockfile::release::release(&fx.site, &fx.lease.owner).unwrap();
            if network {
                fx.site.dir.assume_network();
            }
            let l = fx.ctx.l();
            set_hook("acquire.after_install", move || {
                let bytes = std::fs::read(&l)?;
                let copy = l.with_extension("copy");
                std::fs::write(&copy, bytes)?;
                std::fs::rename(&copy, &l)
            });
            let e = acquire::acquire(&fx.site, &plain_opts(), &SystemProbe).unwrap_err();
            clear_hooks();
            if network {
                assert_eq!(e.code().as_str(), "filesystem_unsupported", "{e:?}");
                assert!(e.to_string().contains("stable inode numbers"), "{e}");
            } else {
                assert_eq!(e.code().as_str(), "session_not_owner", "a local disk: someone replaced it: {e:?}");
            }
        }
    }

    #[test]
    fn seal_and_takeover_complete_where_rename_noreplace_answers_einval() {
        let fx = Fx::active();
        inject_syscall("rename", "", When::Before, Errno::INVAL.raw_os_error(), 1);
        let out = fx.seal().unwrap();
        fx.assert_sealed_ok(&out);
        inject_syscall("rename", "", When::Before, Errno::INVAL.raw_os_error(), 1);
        let lease = fx.takeover().unwrap();
        clear_hooks();
        fx.assert_took_over(&lease);
    }

    #[test]
    fn an_acquire_whose_client_cached_the_claims_absence_does_not_enter_a_transition() {
        // Reproduction 4: a transition is under way (claim installed, L moved aside). This
        // client cached "no such file" for the claim. On a network filesystem the listing
        // fences the acquire; L stays empty for the transition to fill.
        let (mut fx, _) = Fx::sealed();
        std::fs::remove_file(fx.ctx.l()).unwrap();
        std::fs::write(fx.ctx.claim(), b"another host's claim").unwrap();
        fx.site.dir.assume_network();
        inject_syscall("lstat", ".claim", When::Before, Errno::NOENT.raw_os_error(), 100);
        let e = acquire::acquire(&fx.site, &plain_opts(), &SystemProbe).unwrap_err();
        clear_hooks();
        assert_unavailable(&e, Unavailable::ClaimPresent);
        assert!(fx.ctx.l().symlink_metadata().is_err(), "nothing was installed into the gap");
    }

    #[test]
    fn the_second_claim_check_on_a_network_filesystem_removes_a_candidate() {
        // The claim appears between the first check and the install, and this client's
        // cache says it is absent: the second check, by listing, still sees it.
        let mut fx = Fx::active();
        crate::lockfile::release::release(&fx.site, &fx.lease.owner).unwrap();
        fx.site.dir.assume_network();
        let claim = fx.ctx.claim();
        set_hook("acquire.after_install", move || std::fs::write(&claim, b"claim"));
        inject_syscall("lstat", ".claim", When::Before, Errno::NOENT.raw_os_error(), 100);
        let e = acquire::acquire(&fx.site, &plain_opts(), &SystemProbe).unwrap_err();
        clear_hooks();
        assert_unavailable(&e, Unavailable::ClaimPresent);
        assert!(fx.ctx.l().symlink_metadata().is_err(), "the candidate left the gap");
    }
}
