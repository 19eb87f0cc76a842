//! Opening a lock site, ordinary acquisition (QWEN_FORMAT §5.2), stale-owner reclaim
//! (§5.4) and the post-install verification (§5.3).
//!
//! # Calling sequence
//!
//! ```text
//! open_site(R, paths, session, Create) ─► acquire(site, opts) ─► Lease ─► release(site, token)
//! ```
//!
//! # States a crash can leave
//!
//! * during install: `L.<owner>.tmp` (never a torn `L`);
//! * after install, before verification: our complete active `L` — live while the holder
//!   process runs, stale (reclaimable by plain acquire) once it is gone;
//! * during reclaim: `L.reclaim.<stale>` (our record; blocks other reclaimers while our
//!   holder lives, is chained past once it is gone) and `L.stale.<pid>.<uuid>` (the stale
//!   record moved aside; `L` is then missing or ours).
//!
//! # Why the transition claim is checked twice
//!
//! A seal or takeover (seed 001 "Fixed claim") temporarily removes `L` while holding `L.claim`.
//! An acquirer can pass the first check just before the transition claim appears and then
//! install into the gap; the second check, right after the install, catches that and removes
//! our exact record so the transition's bounded candidate wait (§5.7) can finish. Our record
//! is schema 2 and for the same session precisely so a qwen transition recognises it as a
//! claim-aware candidate and waits instead of failing.
//!
//! Why one file of over 1,000 lines: the code is under 900; the rest is its unit tests, which
//! stay beside the private functions they pin.

use std::ffi::OsStr;
use time::OffsetDateTime;

use super::error::{HolderInfo, LockError, TranscriptWriter, Unavailable};
use super::exclusive::{Exclusive, prove_beneath};
use super::holder_lock::{HolderLock, create_holder_lock, remove_holder_file};
use super::identity::ProcessProbe;
use super::liveness::Liveness;
use super::primitives::{
    Inspection, check_transition_claim, inspect_record, install, remove_exact, remove_owned, require_absent,
    same_regular,
};
use super::record::{
    Extensions, Holder, KERNEL_PROOF_RULE, LockRecord, OwnerToken, RecoveredFrom, Schema, new_active_record,
};
use super::release::release_lease;
use super::site::sync_error;
pub use super::site::{DirMode, LockSite, TranscriptRef, check_runtime_dir, open_lock_dir, open_site};
use super::sys::{self, FileMeta, ReadRegular};
use super::transcript::{ProofOptions, ProofRead, Tail, check_shape, check_transcript_dirs, read_proof, tail_of};
use super::transcript_lock::{TranscriptLock, check_transcript_free, lock_transcript};
use super::transition::{Stage, Transition, release_transition_claim};
use std::sync::Arc;

/// `ACQUIRE_ATTEMPTS`.
pub const ACQUIRE_ATTEMPTS: u32 = 8;
/// Reclaim guard attempts (§5.4 step 1).
pub const GUARD_ATTEMPTS: u32 = 8;

/// Transition claim check #2 (§5.2 step 2.2.1), with the failpoint in front of it: any failure
/// here, real or injected, leaves the primary path empty again.
fn second_transition_claim_check(site: &LockSite, transition_claim: &str) -> Result<(), LockError> {
    crate::failpoint!("acquire.after_install");
    check_transition_claim(&site.dir, transition_claim)
}

/// qwen's `reclaimPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReclaimPolicy {
    /// Plain acquisition: reclaim a provably stale local owner.
    Local,
    /// Managed mode: never reclaim; a stale owner is a conflict.
    Never,
}

/// What to acquire with.
#[derive(Debug, Clone)]
pub struct AcquireOptions {
    /// The process the record names as holder.
    pub holder: Holder,
    /// `process_kind` (one of interactive, acp, daemon, unknown).
    pub process_kind: String,
    /// Reclaim policy.
    pub reclaim: ReclaimPolicy,
    /// The transcript this writer will append to. When set, acquisition checks its shape
    /// (QWEN_FORMAT §5.3 step 3: no symlink, a regular file or absent, a complete last
    /// line) and gives the lock back if it is unfit. Required for certified takeover.
    pub transcript: Option<TranscriptRef>,
    /// qwen's `takeoverPolicy: certified`: take over a sealed record after validating its
    /// proof against `transcript`. `None`: a sealed record is a conflict.
    pub certified: Option<Certified>,
    /// Keep a holder lock ([`super::holder_lock`]) for the lease's lifetime: the record names
    /// it, and readers judge the holder by the kernel's lock instead of by its pid. Only for
    /// a holder that lives as long as the [`Lease`] (the library, `run`, which hands a
    /// duplicate to its writer); `writerctl acquire` exits at once and cannot keep it.
    pub holder_lock: bool,
}

/// How a certified takeover reads its proof.
#[derive(Clone, Default)]
pub struct Certified {
    /// Proof-read options.
    pub proof: ProofOptions,
    /// Called with (bytes hashed, total) while the proof is read.
    pub progress: Option<Arc<dyn Fn(u64, u64) + Send + Sync>>,
    /// `takeover`: only a sealed record may be continued; with no lock at all, nothing is
    /// installed and the answer is `session_not_sealed` (issue 27: it used to acquire).
    pub sealed_only: bool,
}

impl std::fmt::Debug for Certified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certified").field("proof", &self.proof).finish()
    }
}

/// The sealing owner a certified takeover replaced (for the log line; no owner id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Predecessor {
    /// Hostname of the sealing writer.
    pub hostname: String,
    /// Its pid.
    pub pid: u64,
    /// `sealed_at`.
    pub sealed_at: String,
    /// The exact sealed record replaced, so a takeover whose token cannot be delivered can
    /// put it back byte for byte ([`super::seal::restore_seal`]).
    pub sealed: LockRecord,
}

/// An acquired lock.
#[derive(Debug)]
pub struct Lease {
    /// The owner token (secret).
    pub owner: OwnerToken,
    /// Our exact record.
    pub record: LockRecord,
    /// Identity of `L` as verified after install.
    pub meta: FileMeta,
    /// True when a stale owner was reclaimed on the way.
    pub reclaimed: bool,
    /// Set when this acquisition was a certified takeover of a sealed record.
    pub took_over: Option<Predecessor>,
    /// False when the final directory fsync of a takeover failed.
    pub durable: bool,
    /// Set when this acquisition reclaimed a crashed writer's lock under a pod proof rule.
    pub recovered: Option<Recovery>,
    /// The holder lock the record names, held for as long as this value lives (`None`
    /// without [`AcquireOptions::holder_lock`], or where the filesystem refused the lock).
    pub holder_lock: Option<HolderLock>,
    /// The exact record a reclaim replaced (for [`super::give_back`]), if this acquisition
    /// was a reclaim.
    pub replaced: Option<LockRecord>,
    /// The transcript's own lock, held for as long as this value lives or until released
    /// (`None` without [`AcquireOptions::holder_lock`] or a transcript; see
    /// [`super::transcript_lock`]).
    pub transcript_lock: Option<TranscriptLock>,
}

/// A reclaim under a pod proof rule (issue 18 item 3): what it replaced, and how the
/// crashed writer's transcript ends. The transcript itself is never modified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// The previous holder and the rule (as recorded in `writerctl_recovered_from`).
    pub previous: RecoveredFrom,
    /// Clean, or torn mid-line by the crash.
    pub tail: Tail,
}

/// Ordinary acquisition (§5.2): transition claim check, install, transition claim check,
/// verify; on an existing record, conflict / malformed / reclaim by the table in the module
/// docs.
///
/// With [`AcquireOptions::holder_lock`], the holder lock is created and locked *before* any
/// record naming it exists, so no reader can ever find such a record with a free lock while
/// its holder lives. A failed acquisition removes it again — unless our record may have been
/// left behind (`CleanupFailed`), where the file stays so that record is judged by it.
pub fn acquire(site: &LockSite, opts: &AcquireOptions, probe: &dyn ProcessProbe) -> Result<Lease, LockError> {
    check_options(opts)?;
    // Issue 38 item 3: a holder that asked for a holder lock never goes on without one — a
    // record without it could never be proven gone, and `run` would start a writer whose
    // crash only a person could clear.
    // Item 4: one transcript, one writer, by the kernel's lock on its inode — held for the
    // lease by a holder that outlives this call, checked by one that does not.
    let transcript_lock = match (&opts.transcript, opts.holder_lock) {
        (Some(t), true) => lock_transcript(&t.runtime_dir, t.key.as_str(), &site.session_id, &site.dir).map(Some),
        (Some(t), false) => {
            check_transcript_free(&t.runtime_dir, t.key.as_str(), &site.session_id, &site.dir).map(|()| None)
        }
        (None, _) => Ok(None),
    }
    .map_err(|e| own_holder_conflict(site, probe).unwrap_or(e))?;
    let holder_lock = match opts.holder_lock.then(|| take_holder_lock(site)).transpose() {
        Ok(h) => h,
        Err(e) => {
            if let Some(t) = &transcript_lock {
                t.undo_creation();
            }
            return Err(e);
        }
    };
    let named = holder_lock.as_ref().map(|h| (h.name().to_owned(), h.id().encode()));
    let held = Held {
        holder_lock: named.as_ref().map(|(n, i)| (n.as_str(), i.as_str())),
        transcript_ino: transcript_lock.as_ref().and_then(TranscriptLock::held_ino),
    };
    match acquire_naming(site, opts, probe, held) {
        Ok(mut lease) => {
            lease.holder_lock = holder_lock;
            lease.transcript_lock = transcript_lock;
            Ok(lease)
        }
        Err(e) => {
            if let Some(t) = &transcript_lock {
                t.undo_creation();
            }
            if let Some(h) = holder_lock {
                let name = h.name().to_owned();
                drop(h); // our lock is free from here on
                if !matches!(e, LockError::Unavailable { reason: Unavailable::CleanupFailed, .. }) {
                    remove_holder_file(&site.dir, &name);
                }
            }
            Err(e)
        }
    }
}

/// When the transcript's lock is taken because our own session is held live, that is the
/// refusal to report (a plain conflict with the holder named, as before issue 38).
fn own_holder_conflict(site: &LockSite, probe: &dyn ProcessProbe) -> Option<LockError> {
    match inspect_record(&site.dir, &site.paths.lock_name, &site.session_id, &site.local, probe) {
        Inspection::Active(r, l) if l.is_live() => Some(conflict(site, &r, false)),
        _ => None,
    }
}

/// Creates our holder lock ([`create_holder_lock`]), three times at most: a creation fails
/// when something opened its private file between create and lock — never a real holder,
/// whose files have other names — and a fresh name is free again.
fn take_holder_lock(site: &LockSite) -> Result<HolderLock, LockError> {
    let mut last = None;
    for _ in 0..3 {
        match create_holder_lock(&site.dir, &site.paths.lock_name) {
            Ok(h) => return Ok(h),
            Err(e) => last = Some(e),
        }
    }
    let e = last.expect("three attempts");
    let no_locks = [rustix::io::Errno::NOLCK, rustix::io::Errno::OPNOTSUPP, rustix::io::Errno::NOSYS]
        .iter()
        .any(|n| e.raw_os_error() == Some(n.raw_os_error()));
    if no_locks {
        return Err(LockError::FilesystemUnsupported {
            path: site.paths.dir.clone(),
            fs_type: site.dir.filesystem().map(|f| f.fs_type).unwrap_or_else(|_| "unknown".into()),
            lacks: format!("flock(2) locks ({e}), which hold the evidence that a writer's tree is gone"),
            allowable: false,
        });
    }
    Err(LockError::io("create the holder lock", e))
}

/// The kernel locks an acquisition holds, as its record names them.
#[derive(Clone, Copy, Default)]
struct Held<'a> {
    /// The holder-lock file's name and identity.
    holder_lock: Option<(&'a str, &'a str)>,
    /// The inode of the transcript whose lock we hold.
    transcript_ino: Option<u64>,
}

/// [`acquire`], with our record naming the locks in `held`.
fn acquire_naming(
    site: &LockSite,
    opts: &AcquireOptions,
    probe: &dyn ProcessProbe,
    held: Held<'_>,
) -> Result<Lease, LockError> {
    let owner = OwnerToken::generate();
    let successor = |previous: u64, recovered: Option<RecoveredFrom>| {
        successor_record(site, opts, &owner, previous, recovered, held)
    };
    // Nothing is replaced when the primary is missing: epoch 0 + 1.
    let record = successor(0, None)?;
    let transition_claim = site.paths.transition_claim();
    let sealed_only = opts.certified.as_ref().is_some_and(|c| c.sealed_only);
    // Issue 38 item 1 (b), asked once before anything is written: can anything still write
    // the transcript? A refusal stops every path to a new writer — install, reclaim and
    // takeover alike; "unproven" only matters to a reclaim (see `decide`).
    let writers = transcript_writers(site, opts)?;
    // A torn tail is refused before anything is changed, unless a reclaim the kernel
    // proved hands it over as it is (see `finish_acquisition`).
    let torn = match (&opts.transcript, sealed_only) {
        (Some(t), false) => matches!(tail_of(&t.runtime_dir, &t.key)?, Tail::Torn { .. }),
        _ => false,
    };
    for _ in 0..ACQUIRE_ATTEMPTS {
        check_transition_claim(&site.dir, &transition_claim)?;
        crate::failpoint!("acquire.before_install");
        // A torn transcript is never given to a fresh owner: nothing is installed, and a
        // missing primary below is the refusal.
        let installed = if sealed_only || torn {
            None
        } else {
            install(&site.dir, &site.paths.lock_name, &record.raw, owner.expose())?
        };
        if let Some(linked) = installed {
            if let Err(e) = second_transition_claim_check(site, &transition_claim) {
                // A transition claimed the path after our first check: leave its gap empty.
                let _ = remove_owned(&site.dir, &site.paths.lock_name, owner.expose());
                return Err(e);
            }
            let (meta, _) = finish_acquisition(site, &owner, &record, &linked, opts.transcript.as_ref())?;
            return Ok(Lease {
                owner,
                record,
                meta,
                reclaimed: false,
                took_over: None,
                durable: true,
                recovered: None,
                holder_lock: None,
                replaced: None,
                transcript_lock: None,
            });
        }
        match decide(site, opts, probe, &writers)? {
            Decision::Missing if torn => return Err(torn_refusal(opts)),
            Decision::Missing => continue,
            Decision::Reclaim { existing, recovered } => {
                if torn && recovered.is_none() {
                    return Err(torn_refusal(opts));
                }
                let record = successor(existing.owner.epoch, recovered)?;
                let lease = reclaim(Reclaim {
                    site,
                    owner: &owner,
                    record: &record,
                    existing: &existing,
                    transcript: opts.transcript.as_ref(),
                    probe,
                })?;
                // The predecessor's holder-lock file stays until the caller has put the lease
                // to use ([`settle`]): giving the lease back restores the predecessor's record,
                // which must find the very file it names (issue 38, reproduction 4).
                return Ok(lease);
            }
            Decision::TakeOver { sealed, certified, transcript } => {
                let record = successor(sealed.owner.epoch, None)?;
                return take_over(site, certified, transcript, &owner, &record, &sealed, probe);
            }
        }
    }
    Err(LockError::unavailable(Unavailable::AcquireBudgetExhausted))
}

/// The options' own checks, made before anything is read or written: a process kind qwen
/// knows, and (issue 22) transcript directories nobody else can change.
fn check_options(opts: &AcquireOptions) -> Result<(), LockError> {
    if !super::record::PROCESS_KINDS.contains(&opts.process_kind.as_str()) {
        return Err(LockError::InvalidArgument(format!(
            "process kind `{}` is not one of interactive, acp, daemon, unknown",
            opts.process_kind
        )));
    }
    if let Some(t) = &opts.transcript {
        check_transcript_dirs(&t.runtime_dir, &t.key)?;
    }
    Ok(())
}

/// What an acquisition does with what `L` holds now (§5.2's table), or the refusal.
enum Decision<'a> {
    /// Nothing at `L` (an install raced us, or there was nothing to take over).
    Missing,
    /// A stale active record this acquisition may reclaim, with what a pod rule recovers.
    Reclaim { existing: LockRecord, recovered: Option<RecoveredFrom> },
    /// A sealed record to take over with its proof validated.
    TakeOver { sealed: LockRecord, certified: &'a Certified, transcript: &'a TranscriptRef },
}

/// Inspects `L` and decides, by the rules both [`acquire`] and [`plan`] follow: a live
/// record is a conflict, a managed (schema 3) one unavailable, a stale one reclaimed only
/// under the reclaim policy (or a pod proof rule), a seal taken over only with certified
/// takeover and its transcript; anything else is the inspection's error.
fn decide<'a>(
    site: &LockSite,
    opts: &'a AcquireOptions,
    probe: &dyn ProcessProbe,
    writers: &Exclusive,
) -> Result<Decision<'a>, LockError> {
    let sealed_only = opts.certified.as_ref().is_some_and(|c| c.sealed_only);
    match inspect_record(&site.dir, &site.paths.lock_name, &site.session_id, &site.local, probe) {
        Inspection::Missing if sealed_only => Err(LockError::NotSealed {
            session_id: site.session_id.clone(),
            found: super::error::NO_LOCK_TO_TAKE_OVER.into(),
        }),
        Inspection::Missing => Ok(Decision::Missing),
        Inspection::Active(existing, liveness) => {
            if liveness.is_live() {
                return Err(conflict(site, &existing, false));
            }
            if matches!(existing.schema, Schema::V3 { .. }) {
                return Err(LockError::unavailable(Unavailable::ManagedSchema));
            }
            // Issue 38 item 2: the kernel's proof — the holder's tree gone by its holder lock
            // (a), nothing open for writing on the transcript (b) — lets managed acquisition
            // and `run` reclaim, whatever the pod labels say. Anything less is the pid
            // table's weak word, which only plain acquisition may act on, as qwen does.
            let proven = liveness.holder_proven_gone() && writers.evidence().is_some();
            if opts.reclaim == ReclaimPolicy::Never && !proven {
                return Err(conflict(site, &existing, true));
            }
            let recovered = proven.then(|| recovered_from(&existing, liveness, writers));
            Ok(Decision::Reclaim { existing, recovered })
        }
        // Without certified takeover a seal is a conflict, whatever its schema (§5.2).
        Inspection::Sealed(existing) => match (&opts.certified, &opts.transcript) {
            (Some(certified), Some(transcript)) => Ok(Decision::TakeOver { sealed: existing, certified, transcript }),
            (Some(_), None) => {
                Err(LockError::InvalidArgument("certified takeover needs the transcript it validates".into()))
            }
            (None, _) => Err(conflict(site, &existing, false)),
        },
        other => Err(inspection_error(site, &site.paths.lock_name, other)),
    }
}

/// What an acquisition or takeover would do now (`--dry-run`), decided by the very checks
/// the real one makes before it writes — the options, the transition claim, §5.2's table
/// (`decide`) and, for a takeover, the sealed proof against the transcript
/// (`check_seal`) — with nothing written, moved or removed. Races the real command
/// re-checks under its transition claim (a record replaced meanwhile) cannot be foreseen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// `L` is missing: a new record (epoch 1) would be installed.
    Install,
    /// A stale record would be reclaimed (moved aside, ours linked in).
    Reclaim {
        /// The record that would be replaced.
        replaced: LockRecord,
        /// The pod rule's account of it, when one proves it gone.
        recovered: Option<RecoveredFrom>,
    },
    /// A sealed record whose proof matches the transcript would be taken over.
    TakeOver {
        /// The sealed record that would be replaced (moved to its retired name, then removed).
        sealed: LockRecord,
    },
}

impl Plan {
    /// The epoch the new record would carry (one more than what it replaces).
    pub fn new_epoch(&self) -> u64 {
        match self {
            Plan::Install => 1,
            Plan::Reclaim { replaced: r, .. } | Plan::TakeOver { sealed: r } => r.owner.epoch.saturating_add(1),
        }
    }
}

/// `--dry-run` of [`acquire`] (see [`Plan`]): same checks, same errors, no change on disk.
pub fn plan(site: &LockSite, opts: &AcquireOptions, probe: &dyn ProcessProbe) -> Result<Plan, LockError> {
    check_options(opts)?;
    check_transition_claim(&site.dir, &site.paths.transition_claim())?;
    let writers = transcript_writers(site, opts)?;
    match decide(site, opts, probe, &writers)? {
        Decision::Missing => Ok(Plan::Install),
        Decision::Reclaim { existing, recovered } => Ok(Plan::Reclaim { replaced: existing, recovered }),
        Decision::TakeOver { sealed, certified, transcript } => {
            check_seal(certified, transcript, &sealed)?;
            Ok(Plan::TakeOver { sealed })
        }
    }
}

/// Steps 1 and 2 of a certified takeover, before anything is written: a qwen-code managed
/// seal is not ours to take, the recorded key must be the transcript this writer expects
/// (never used to open anything), and the transcript — hashed once, the descriptor kept
/// for the revalidations under the transition claim — must match the seal's proof.
fn check_seal(c: &Certified, t_ref: &TranscriptRef, sealed: &LockRecord) -> Result<ProofRead, LockError> {
    if matches!(sealed.schema, Schema::V3 { .. }) {
        return Err(LockError::unavailable(Unavailable::ManagedSchema));
    }
    let seal = sealed.seal().expect("a sealed inspection carries a seal");
    if seal.transcript.relative_path != t_ref.key.as_str() {
        return Err(LockError::TranscriptChanged { reason: "the sealed proof names another transcript key".into() });
    }
    let mut progress = |done, total| {
        if let Some(p) = &c.progress {
            p(done, total)
        }
    };
    let proof = read_proof(&t_ref.runtime_dir, &t_ref.key, c.proof, &mut progress)?;
    proof.matches_seal(seal)?;
    Ok(proof)
}

/// Our new active record, replacing a record of epoch `previous` (0: nothing, or a record
/// without `writerctl_epoch`). The epoch counts replacements since the lock was last
/// created: every acquire, takeover and reclaim writes a larger one than the record it
/// replaces, so a writer that stamps its output with it makes a replaced writer's lines
/// recognizable — but it starts again at 1 once the lock is released or recovered, so it is
/// not a fencing token across those.
///
/// It records our pod when we run in one, the holder lock we keep, and — after a reclaim
/// under a pod proof rule — what it replaced (`recovered`).
fn successor_record(
    site: &LockSite,
    opts: &AcquireOptions,
    owner: &OwnerToken,
    previous: u64,
    recovered: Option<RecoveredFrom>,
    held: Held<'_>,
) -> Result<LockRecord, LockError> {
    let ext = Extensions {
        epoch: previous.saturating_add(1),
        pod: site.local.pod.as_ref().map(|p| p.identity.clone()),
        recovered_from: recovered,
        holder_lock: held.holder_lock.map(|(name, _)| name.to_owned()),
        holder_lock_id: held.holder_lock.map(|(_, id)| id.to_owned()),
        transcript_ino: held.transcript_ino,
    };
    new_active_record(&site.session_id, owner, &opts.holder, &opts.process_kind, OffsetDateTime::now_utc(), &ext)
        .map_err(|m| LockError::InvalidArgument(format!("cannot build a valid record: {m}")))
}

/// What a reclaim the kernel proved replaces, for `writerctl_recovered_from` (issue 38):
/// the evidence by name, and the predecessor's pod with the rule its labels match, as
/// diagnostics.
fn recovered_from(existing: &LockRecord, liveness: Liveness, writers: &Exclusive) -> RecoveredFrom {
    let pod = existing.owner.pod.as_ref();
    RecoveredFrom {
        rule: KERNEL_PROOF_RULE.into(),
        evidence: ["holder_lock_released"].into_iter().chain(writers.evidence()).map(str::to_owned).collect(),
        pod_rule: liveness.proof_rule().map(|r| r.as_str().to_owned()),
        pod_uid: pod.map(|p| p.uid.clone()),
        pod_name: pod.map(|p| p.name.clone()),
        container: pod.map(|p| p.container.clone()),
        pid: existing.owner.pid,
        acquired_at: existing.owner.acquired_at.clone(),
    }
}

/// Issue 38 item 1 (b): what the kernel says about open write descriptions of the
/// transcript, before a new writer is given it. `Err` when one exists: the transcript has a
/// writer this lock does not name, and nothing may proceed. Without a transcript (a library
/// caller that named none) nothing is proven.
fn transcript_writers(site: &LockSite, opts: &AcquireOptions) -> Result<Exclusive, LockError> {
    let Some(t) = &opts.transcript else { return Ok(Exclusive::Unproven("no transcript was named".into())) };
    prove_beneath(&t.runtime_dir, t.key.as_str()).map_err(|_| LockError::TranscriptBusy {
        session_id: site.session_id.clone(),
        by: TranscriptWriter::OpenForWriting,
    })
}

/// [`transcript_writers`] for a step that only needs the refusal: `Err` when the kernel says
/// an open file description can write the transcript; anything else (no transcript named,
/// no lease here) lets the step go on, as the first question decided.
fn no_writer_now(site: &LockSite, transcript: Option<&TranscriptRef>) -> Result<(), LockError> {
    match transcript {
        Some(t) => prove_beneath(&t.runtime_dir, t.key.as_str()).map(|_| ()).map_err(|_| LockError::TranscriptBusy {
            session_id: site.session_id.clone(),
            by: TranscriptWriter::OpenForWriting,
        }),
        None => Ok(()),
    }
}

/// The refusal of a torn transcript to a fresh owner, made before anything was changed.
fn torn_refusal(opts: &AcquireOptions) -> LockError {
    match opts.transcript.as_ref().map(|t| check_shape(&t.runtime_dir, &t.key)) {
        Some(Err(e)) => e,
        // It was repaired meanwhile: the next attempt decides again.
        _ => LockError::unavailable(Unavailable::ReclaimRaced),
    }
}

/// Removes the holder-lock file of the record a reclaim replaced, once the lease is in use
/// (the token delivered, the writer started): until then [`super::give_back`] may need to
/// put that record back, judged by that very file. The file's lock is free — that is what
/// let the reclaim happen — so it is residue now; a leftover is only listed by `status`.
pub fn settle(site: &LockSite, lease: &Lease) {
    if let Some(name) = lease.replaced.as_ref().and_then(|r| r.owner.holder_lock.as_deref()) {
        remove_holder_file(&site.dir, name);
    }
}

fn conflict(site: &LockSite, existing: &LockRecord, managed_refused_stale: bool) -> LockError {
    let liveness = existing
        .is_active()
        .then(|| super::identity::decide(&existing.owner, &site.local, &super::identity::SystemProbe, &site.dir));
    LockError::Conflict {
        session_id: site.session_id.clone(),
        holder: HolderInfo { pid: existing.owner.pid, hostname: existing.owner.hostname.clone(), liveness },
        sealed: !existing.is_active(),
        managed_refused_stale,
    }
}

/// Maps a non-record inspection outcome (malformed, not regular, other session, I/O) to its error.
pub fn inspection_error(site: &LockSite, name: &str, found: Inspection) -> LockError {
    let path = site.paths.dir.join(name);
    match found {
        Inspection::Malformed(m) => LockError::Malformed { path, reason: m.0 },
        Inspection::NotRegular(k) => {
            LockError::Malformed { path, reason: format!("not a regular file (found a {})", k.describe()) }
        }
        Inspection::OtherSession(_) => {
            LockError::Malformed { path, reason: "the record belongs to another session".into() }
        }
        Inspection::Error(e) => LockError::io(format!("read {}", path.display()), e),
        Inspection::Missing => LockError::unavailable(Unavailable::AcquireBudgetExhausted),
        Inspection::Active(..) | Inspection::Sealed(_) => LockError::unavailable(Unavailable::Io),
    }
}

/// §5.3 step 1 plus a directory fsync: proves `L` is our exact record on a verifiable inode,
/// then makes the link durable. On failure, releases our record (two attempts) so a failed
/// acquisition never leaves an owner behind.
///
/// The transcript must end cleanly, except after a reclaim under a pod proof rule: a crashed
/// writer may have died mid-line, and its successor gets the transcript as it is with its
/// tail reported (never modified).
fn finish_acquisition(
    site: &LockSite,
    owner: &OwnerToken,
    record: &LockRecord,
    linked: &FileMeta,
    transcript: Option<&TranscriptRef>,
) -> Result<(FileMeta, Tail), LockError> {
    let verified = verify_lock_identity(site, record, linked).and_then(|meta| {
        // Once more with our record in place (the model's LEASE=3): a writer that handed its
        // descriptor out and released after our first question left the path empty for us;
        // the kernel still sees that descriptor, and our lock is given back below.
        no_writer_now(site, transcript)?;
        let tail = match transcript {
            Some(t) if record.owner.recovered_from.is_some() => tail_of(&t.runtime_dir, &t.key)?,
            Some(t) => {
                check_shape(&t.runtime_dir, &t.key)?;
                Tail::Clean
            }
            None => Tail::Clean,
        };
        crate::failpoint!("acquire.before_dir_sync");
        site.dir.sync().map_err(sync_error)?;
        Ok((meta, tail))
    });
    match verified {
        Ok(done) => Ok(done),
        Err(original) => {
            let mut cleaned = false;
            for _ in 0..2 {
                match release_lease(site, owner, &record.raw) {
                    Ok(_) => {
                        cleaned = true;
                        break;
                    }
                    Err(LockError::NotOwner { .. }) => break,
                    Err(_) => continue,
                }
            }
            if cleaned {
                Err(original)
            } else {
                Err(LockError::Unavailable {
                    reason: Unavailable::CleanupFailed,
                    detail: Some(original.to_string()),
                    source: None,
                })
            }
        }
    }
}

/// §5.3 step 1: open `L` without following symlinks, require a regular file on a
/// verifiable inode whose bytes are exactly ours, with the path naming that same inode
/// before and after the read.
///
/// Beyond qwen: the inode must also be the one we linked (`linked`), so a byte-identical
/// copy swapped in between the link and this check is not mistaken for our record.
fn verify_lock_identity(site: &LockSite, record: &LockRecord, linked: &FileMeta) -> Result<FileMeta, LockError> {
    let name = site.paths.lock_name.as_str();
    let lost = |reason: &str| LockError::NotOwner { path: site.lock_path(), reason: reason.into() };
    let (bytes, meta) = match site.dir.read_regular(OsStr::new(name)) {
        ReadRegular::Regular(b, m) => (b, m),
        ReadRegular::Missing | ReadRegular::NotRegular(_) | ReadRegular::TooLarge(_) => {
            return Err(lost("the lock was replaced right after install"));
        }
        ReadRegular::Error(e) => return Err(LockError::io("re-read lock", e)),
    };
    if meta.ino == 0 {
        return Err(LockError::Unavailable {
            reason: Unavailable::Io,
            detail: Some("the lock filesystem does not provide a verifiable inode identity (ino=0)".into()),
            source: None,
        });
    }
    let same = |s: &LockSite| same_regular(&s.dir, name, &meta).map_err(|e| LockError::io("lstat lock", e));
    if !meta.same_identity(linked) && bytes == record.raw && !site.dir.lookups_authoritative() {
        // Issue 27: our exact bytes under another inode number than the file we linked is
        // what a filesystem without stable inode numbers does (sshfs numbers each path).
        return Err(super::filesystem::inode_numbers_unstable(site.dir.path(), site.dir.filesystem().ok()));
    }
    if !meta.same_identity(linked) || !same(site)? || bytes != record.raw || !same(site)? {
        return Err(lost("the lock was replaced right after install"));
    }
    Ok(meta)
}

/// One stale-owner reclaim (§5.4): our new `record` replacing `existing`, the stale record
/// we observed at `L`.
#[derive(Clone, Copy)]
struct Reclaim<'a> {
    site: &'a LockSite,
    owner: &'a OwnerToken,
    record: &'a LockRecord,
    existing: &'a LockRecord,
    transcript: Option<&'a TranscriptRef>,
    probe: &'a dyn ProcessProbe,
}

/// Stale-owner reclaim (§5.4): under a guard, and undone as far as it got on failure.
fn reclaim(r: Reclaim<'_>) -> Result<Lease, LockError> {
    let Reclaim { site, owner, record, existing, probe, .. } = r;
    let guard = take_reclaim_guard(site, owner, record, &existing.owner_id, probe)?;
    let mut progress = ReclaimProgress::default();
    let result = reclaim_under_guard(r, &mut progress);
    let ReclaimProgress { stale_aside, installed } = progress;
    if result.is_err() {
        if let Some(stale) = &stale_aside {
            // Put the stale record back exactly where it was; never over a new primary.
            if site.dir.link(OsStr::new(stale), OsStr::new(&site.paths.lock_name)).is_ok() {
                let _ = site.dir.unlink(OsStr::new(stale));
            }
        }
        if installed {
            let _ = remove_owned(&site.dir, &site.paths.lock_name, owner.expose());
        }
    }
    let _ = remove_owned(&site.dir, &guard, owner.expose());
    if result.is_ok() {
        // The guard removal is part of leaving no residue; make it durable too.
        let _ = site.dir.sync();
    }
    result
}

/// §5.4 step 1: install a guard holding our own record at `L.reclaim.<stale>`, chaining past
/// a guard whose own holder is provably gone. Returns the guard's name.
///
/// Why a guard: two reclaimers that both saw the same stale record must not both rename
/// `L` aside — the second would move the first one's fresh record. The guard elects one;
/// the loser sees a live guard and reports unavailable.
fn take_reclaim_guard(
    site: &LockSite,
    owner: &OwnerToken,
    record: &LockRecord,
    stale_owner: &str,
    probe: &dyn ProcessProbe,
) -> Result<String, LockError> {
    let mut guard = site.paths.reclaim_guard(stale_owner);
    for _ in 0..GUARD_ATTEMPTS {
        if install(&site.dir, &guard, &record.raw, owner.expose())?.is_some() {
            return Ok(guard);
        }
        match inspect_record(&site.dir, &guard, &site.session_id, &site.local, probe) {
            Inspection::Missing => continue,
            Inspection::Active(g, l) if !l.is_live() => {
                guard = site.paths.reclaim_guard_chained(stale_owner, &g.owner_id);
            }
            Inspection::Error(e) => return Err(LockError::io("read reclaim guard", e)),
            _ => return Err(LockError::unavailable(Unavailable::GuardHeld)),
        }
    }
    Err(LockError::unavailable(Unavailable::GuardBudgetExhausted))
}

/// What a reclaim had done when it failed, for its cleanup.
#[derive(Default)]
struct ReclaimProgress {
    /// The stale record's temporary name while it is moved aside.
    stale_aside: Option<String>,
    /// True once our record is at `L` and verification has not taken over its cleanup.
    installed: bool,
}

fn reclaim_under_guard(r: Reclaim<'_>, progress: &mut ReclaimProgress) -> Result<Lease, LockError> {
    let Reclaim { site, owner, record, existing, transcript, probe } = r;
    let stale_aside = &mut progress.stale_aside;
    let installed = &mut progress.installed;
    let lock = site.paths.lock_name.as_str();
    let stale = site.paths.stale(sys::own_pid(), &uuid::Uuid::new_v4().to_string());
    check_transition_claim(&site.dir, &site.paths.transition_claim())?;
    still_stale(site, lock, existing, probe)?;
    // Ask the kernel again, beside the judgement it completes (the model's LEASE=2): a
    // writer may have handed its descriptor out and exited since the first question.
    no_writer_now(site, transcript)?;
    crate::failpoint!("reclaim.before_rename");
    site.dir.rename(OsStr::new(lock), OsStr::new(&stale)).map_err(|e| LockError::io("move stale lock aside", e))?;
    *stale_aside = Some(stale.clone());
    crate::failpoint!("reclaim.after_rename");
    // Re-validate what we actually moved: between the check and the rename the owner could
    // have been replaced, and we must only ever discard the record we judged stale.
    if let Err(e) = still_stale(site, &stale, existing, probe) {
        match site.dir.link(OsStr::new(&stale), OsStr::new(lock)) {
            Ok(()) => {
                let _ = site.dir.unlink(OsStr::new(&stale));
            }
            Err(le) if sys::is_eexist(&le) => {
                // Someone installed a new primary meanwhile; our moved copy is a duplicate of
                // a record that is no longer the primary. Leave it for `status` to report.
            }
            Err(le) => {
                *stale_aside = None;
                return Err(LockError::io("restore moved lock", le));
            }
        }
        *stale_aside = None;
        return Err(e);
    }
    site.dir.unlink(OsStr::new(&stale)).map_err(|e| LockError::io("unlink stale lock", e))?;
    *stale_aside = None;
    crate::failpoint!("reclaim.after_unlink");
    let Some(linked) = install(&site.dir, lock, &record.raw, owner.expose())? else {
        return Err(LockError::unavailable(Unavailable::ReclaimRaced));
    };
    *installed = true;
    crate::failpoint!("reclaim.after_install");
    check_transition_claim(&site.dir, &site.paths.transition_claim())?;
    *installed = false; // finish_acquisition now owns cleanup of L.
    let (meta, tail) = finish_acquisition(site, owner, record, &linked, transcript)?;
    let recovered = record.owner.recovered_from.clone().map(|previous| Recovery { previous, tail });
    Ok(Lease {
        owner: owner.clone(),
        record: record.clone(),
        meta,
        reclaimed: true,
        took_over: None,
        durable: true,
        recovered,
        holder_lock: None,
        replaced: Some(existing.clone()),
        transcript_lock: None,
    })
}

/// Certified takeover of the sealed record `sealed` (seed 001 "Certified takeover" 1–7;
/// QWEN_FORMAT §5.6). `record` is our new active record.
///
/// Two replacements racing one sealed record: both may hash the transcript, but only one can
/// install `L.claim`; the other answers unavailable (transition claim present) or, arriving
/// after the winner finished, conflict (a live active primary). Re-reading the exact sealed
/// bytes inside the transition claim is what makes a delayed loser fail instead of replacing
/// the winner.
fn take_over(
    site: &LockSite,
    c: &Certified,
    t_ref: &TranscriptRef,
    owner: &OwnerToken,
    record: &LockRecord,
    sealed: &LockRecord,
    probe: &dyn ProcessProbe,
) -> Result<Lease, LockError> {
    // Steps 1 and 2, shared with `--dry-run` ([`plan`]).
    let proof = check_seal(c, t_ref, sealed)?;
    let seal = sealed.seal().expect("a sealed inspection carries a seal");
    let retired = site.paths.sealed_retired(&sealed.owner_id, owner.expose());
    require_absent(&site.dir, &retired, "takeover retired record")?;
    let transition_claim = site.paths.transition_claim();
    let t = Transition {
        site,
        expected: &sealed.raw,
        source: &transition_claim,
        source_raw: &record.raw,
        retired: &retired,
        transition_claim_raw: &record.raw,
    };
    let mut stage = Stage::NotStarted;
    let mut transition_claim_installed = false;
    let result = (|| -> Result<FileMeta, LockError> {
        // Step 3: the transition claim holds our new active record; after the link, L shares
        // its inode.
        let linked = t.install_transition_claim(owner.expose(), &mut transition_claim_installed)?;
        crate::failpoint!("takeover.after_claim");
        // Step 4: inside the transition claim, the primary must still be exactly the sealed
        // record.
        match inspect_record(&site.dir, &site.paths.lock_name, &site.session_id, &site.local, probe) {
            Inspection::Sealed(now) if now.raw == sealed.raw => {}
            Inspection::Active(now, l) if l.is_live() => return Err(conflict(site, &now, false)),
            _ => return Err(LockError::unavailable(Unavailable::ReclaimRaced)),
        }
        proof.revalidate()?;
        proof.matches_seal(seal)?;
        // Steps 5 and 6.
        t.run(&mut stage)?;
        crate::failpoint!("takeover.after_transition");
        proof.revalidate()?;
        let meta = verify_lock_identity(site, record, &linked)?;
        // Step 7: our exact transition claim; failing to remove it is a failure (rolled back
        // below).
        release_transition_claim(site, &record.raw)?;
        Ok(meta)
    })();
    match result {
        Ok(meta) => {
            // Step 7: the exact retired seal; a leftover is only residue for `recover`.
            let _ = remove_exact(&site.dir, &retired, &sealed.raw);
            // The lock is ours now: a failed fsync must not turn into an error that loses the
            // token. The lease says the transition may not survive a crash (after which the
            // sealed record reappears: a fail-closed state).
            let durable = site.dir.sync().is_ok();
            Ok(Lease {
                recovered: None,
                holder_lock: None,
                replaced: None,
                transcript_lock: None,
                durable,
                owner: owner.clone(),
                record: record.clone(),
                meta,
                reclaimed: false,
                took_over: Some(Predecessor {
                    hostname: sealed.owner.hostname.clone(),
                    pid: sealed.owner.pid,
                    sealed_at: seal.sealed_at.clone(),
                    sealed: sealed.clone(),
                }),
            })
        }
        Err(original) => Err(t.cleanup_after_failure(stage, transition_claim_installed, original)),
    }
}

/// The record at `name` must still be the stale record `existing` (same owner id, still stale).
fn still_stale(site: &LockSite, name: &str, existing: &LockRecord, probe: &dyn ProcessProbe) -> Result<(), LockError> {
    match inspect_record(&site.dir, name, &site.session_id, &site.local, probe) {
        Inspection::Active(r, l) if r.owner_id == existing.owner_id && !l.is_live() => Ok(()),
        Inspection::Active(r, l) if l.is_live() => Err(conflict(site, &r, false)),
        // §5.4 steps 4 and 6: conflict only for a live record, unavailable otherwise.
        _ => Err(LockError::unavailable(Unavailable::ReclaimRaced)),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use crate::lockfile::identity::{SystemProbe, holder};
    use crate::lockfile::paths::{LOCK_SUBDIR, LockPaths};
    use crate::lockfile::release::release;
    use crate::lockfile::sys::counters;
    use crate::lockfile::transcript::TranscriptKey;

    fn site(t: &tempfile::TempDir) -> LockSite {
        let paths = LockPaths::for_session(t.path(), "s");
        open_site(t.path(), paths, "s", DirMode::Create).unwrap()
    }

    /// A holder that is provably dead in our domain (pid i32::MAX never runs).
    fn dead_holder() -> Holder {
        let boot = crate::lockfile::identity::read_boot_id().unwrap();
        Holder {
            pid: i32::MAX as u32,
            process_start_identity: Some(format!("linux:{boot}:1")),
            ..holder(sys::own_pid())
        }
    }

    /// Writes a fresh active record for `h` at `name` in the site's directory.
    fn stage_record(s: &LockSite, name: &str, h: &Holder) -> (OwnerToken, LockRecord) {
        let owner = OwnerToken::generate();
        let rec =
            new_active_record("s", &owner, h, "unknown", OffsetDateTime::now_utc(), &Extensions::epoch(1)).unwrap();
        std::fs::write(s.paths.dir.join(name), &rec.raw).unwrap();
        (owner, rec)
    }

    /// A dead writer's record at `L` and, beside it, a reclaim guard for that record held
    /// by `guard_holder`: the state a second reclaimer finds.
    struct StagedGuard {
        stale_owner: OwnerToken,
        stale: LockRecord,
        guard_name: String,
        guard_owner: OwnerToken,
        guard: LockRecord,
    }

    fn stage_stale_lock_and_guard(s: &LockSite, guard_holder: &Holder) -> StagedGuard {
        let (stale_owner, stale) = stage_record(s, &s.paths.lock_name, &dead_holder());
        let guard_name = s.paths.reclaim_guard(stale_owner.expose());
        let (guard_owner, guard) = stage_record(s, &guard_name, guard_holder);
        StagedGuard { stale_owner, stale, guard_name, guard_owner, guard }
    }

    fn opts(reclaim: ReclaimPolicy) -> AcquireOptions {
        AcquireOptions {
            holder: holder(sys::own_pid()),
            process_kind: "unknown".into(),
            reclaim,
            transcript: None,
            certified: None,
            holder_lock: false,
        }
    }

    #[test]
    fn acquire_fast_path_costs_two_fsyncs_and_release_one() {
        let t = tempfile::tempdir().unwrap();
        let s = site(&t);
        let before = counters::fsyncs();
        let lease = acquire(&s, &opts(ReclaimPolicy::Local), &SystemProbe).unwrap();
        assert_eq!(counters::fsyncs() - before, 2, "temp file + lock directory");
        let before = counters::fsyncs();
        release(&s, &lease.owner).unwrap();
        assert_eq!(counters::fsyncs() - before, 1, "lock directory");
        let left: Vec<_> = std::fs::read_dir(t.path().join(LOCK_SUBDIR)).unwrap().collect();
        assert!(left.is_empty());
    }

    #[test]
    fn second_acquire_conflicts_while_holder_lives() {
        let t = tempfile::tempdir().unwrap();
        let s = site(&t);
        let lease = acquire(&s, &opts(ReclaimPolicy::Local), &SystemProbe).unwrap();
        let e = acquire(&s, &opts(ReclaimPolicy::Local), &SystemProbe).unwrap_err();
        assert!(matches!(e, LockError::Conflict { sealed: false, .. }), "{e:?}");
        let on_disk = std::fs::read(s.lock_path()).unwrap();
        assert_eq!(on_disk, lease.record.raw);
    }

    #[test]
    fn second_transition_claim_check_removes_our_record_when_a_transition_claim_appears() {
        // A transition claims the path between our install and our second transition claim
        // check: we must answer unavailable and leave the gap empty (seed 001 "Fixed claim").
        let t = tempfile::tempdir().unwrap();
        let s = site(&t);
        let claim = s.paths.dir.join(s.paths.transition_claim());
        let c = claim.clone();
        crate::lockfile::failpoint::set_hook("acquire.after_install", move || std::fs::write(&c, b"claim"));
        let e = acquire(&s, &opts(ReclaimPolicy::Local), &SystemProbe).unwrap_err();
        crate::lockfile::failpoint::clear_hooks();
        assert!(matches!(e, LockError::Unavailable { reason: Unavailable::TransitionClaimPresent, .. }), "{e:?}");
        assert!(!s.lock_path().exists(), "our candidate must be gone");
        assert_eq!(std::fs::read(&claim).unwrap(), b"claim", "the claim is not ours to touch");
    }

    #[test]
    fn a_lock_replaced_right_after_install_is_never_reported_as_ours() {
        // Someone swaps L for a byte-identical copy (another inode) before verification; the
        // acquisition must fail instead of claiming a record it cannot prove.
        let t = tempfile::tempdir().unwrap();
        let s = site(&t);
        let l = s.lock_path();
        let copy = s.paths.dir.join("copy");
        crate::lockfile::failpoint::set_hook("acquire.after_install", move || {
            let bytes = std::fs::read(&l)?;
            std::fs::write(&copy, &bytes)?;
            std::fs::rename(&copy, &l)
        });
        let e = acquire(&s, &opts(ReclaimPolicy::Local), &SystemProbe).unwrap_err();
        crate::lockfile::failpoint::clear_hooks();
        assert!(matches!(e, LockError::NotOwner { .. }), "{e:?}");
        // Cleanup released the copy: it carried our own owner id and bytes.
        assert!(!s.lock_path().exists());
    }

    #[test]
    fn managed_mode_never_reclaims_a_dead_owner() {
        let t = tempfile::tempdir().unwrap();
        let s = site(&t);
        let (_, rec) = stage_record(&s, &s.paths.lock_name, &dead_holder());
        let e = acquire(&s, &opts(ReclaimPolicy::Never), &SystemProbe).unwrap_err();
        assert!(matches!(e, LockError::Conflict { managed_refused_stale: true, .. }), "{e:?}");
        assert_eq!(std::fs::read(s.lock_path()).unwrap(), rec.raw);
        let lease = acquire(&s, &opts(ReclaimPolicy::Local), &SystemProbe).unwrap();
        assert!(lease.reclaimed);
        let names: Vec<String> =
            std::fs::read_dir(&s.paths.dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert_eq!(names, vec!["s.lock".to_string()], "no guard or stale residue");
    }

    #[test]
    fn a_live_reclaim_guard_makes_the_second_reclaimer_unavailable() {
        let t = tempfile::tempdir().unwrap();
        let s = site(&t);
        // A live reclaimer (this process) already holds the guard.
        let g = stage_stale_lock_and_guard(&s, &holder(sys::own_pid()));
        let e = acquire(&s, &opts(ReclaimPolicy::Local), &SystemProbe).unwrap_err();
        assert!(matches!(e, LockError::Unavailable { reason: Unavailable::GuardHeld, .. }), "{e:?}");
        assert_eq!(std::fs::read(s.lock_path()).unwrap(), g.stale.raw);
        assert_eq!(std::fs::read(s.paths.dir.join(&g.guard_name)).unwrap(), g.guard.raw);
    }

    #[test]
    fn a_dead_reclaim_guard_is_chained_past_and_left_in_place() {
        let t = tempfile::tempdir().unwrap();
        let s = site(&t);
        let g = stage_stale_lock_and_guard(&s, &dead_holder());
        let lease = acquire(&s, &opts(ReclaimPolicy::Local), &SystemProbe).unwrap();
        assert!(lease.reclaimed);
        // The dead reclaimer's guard is not ours to delete; the chained guard is gone.
        assert_eq!(std::fs::read(s.paths.dir.join(&g.guard_name)).unwrap(), g.guard.raw);
        let chained = s.paths.reclaim_guard_chained(g.stale_owner.expose(), g.guard_owner.expose());
        assert!(!s.paths.dir.join(chained).exists());
    }

    #[test]
    fn an_incomplete_transcript_tail_or_a_symlink_gives_the_lock_back() {
        // QWEN_FORMAT §7 test 27: a truncated tail is `changed` and leaves no L behind.
        let t = tempfile::tempdir().unwrap();
        let s = site(&t);
        std::fs::create_dir_all(t.path().join("chats")).unwrap();
        let with_transcript = AcquireOptions {
            transcript: Some(TranscriptRef {
                runtime_dir: t.path().to_path_buf(),
                key: TranscriptKey::default_for("s").unwrap(),
            }),
            ..opts(ReclaimPolicy::Local)
        };
        std::fs::write(t.path().join("chats/s.jsonl"), b"{\"a\":1}\n{\"b\"").unwrap();
        let e = acquire(&s, &with_transcript, &SystemProbe).unwrap_err();
        assert!(matches!(e, LockError::TranscriptChanged { .. }), "{e:?}");
        assert!(!s.lock_path().exists());
        std::fs::remove_file(t.path().join("chats/s.jsonl")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", t.path().join("chats/s.jsonl")).unwrap();
        let e = acquire(&s, &with_transcript, &SystemProbe).unwrap_err();
        assert!(matches!(e, LockError::TranscriptUnsafe { .. }), "{e:?}");
        assert!(!s.lock_path().exists());
        std::fs::remove_file(t.path().join("chats/s.jsonl")).unwrap();
        std::fs::write(t.path().join("chats/s.jsonl"), b"{\"a\":1}\n").unwrap();
        acquire(&s, &with_transcript, &SystemProbe).unwrap();
    }

    fn holder_files(s: &LockSite) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&s.paths.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.contains(".holder."))
            .collect();
        v.sort();
        v
    }

    /// Options that keep a holder lock, a lease acquired with them at `s`, and the name of
    /// the lease's holder-lock file.
    fn acquire_with_holder_lock(s: &LockSite) -> (AcquireOptions, Lease, String) {
        let with_lock = AcquireOptions { holder_lock: true, ..opts(ReclaimPolicy::Local) };
        let lease = acquire(s, &with_lock, &SystemProbe).unwrap();
        let name = lease.holder_lock.as_ref().expect("a holder lock").name().to_owned();
        (with_lock, lease, name)
    }

    /// Issue 27: a library lease keeps its holder lock for its lifetime; a refused
    /// acquisition leaves no holder file; release removes it with the record.
    #[test]
    fn a_lease_keeps_its_holder_lock_and_release_removes_it() {
        use crate::lockfile::holder_lock::{HolderLockState, holder_lock_state};
        let t = tempfile::tempdir().unwrap();
        let s = site(&t);
        let (with_lock, lease, name) = acquire_with_holder_lock(&s);
        assert_eq!(lease.record.owner.holder_lock.as_deref(), Some(name.as_str()));
        assert_eq!(holder_files(&s), vec![name.clone()]);
        let id = lease.record.owner.holder_lock_id.clone();
        assert_eq!(holder_lock_state(&s.dir, &name, id.as_deref()), HolderLockState::Held);
        // A second acquisition is refused and cleans up its own holder file.
        let e = acquire(&s, &with_lock, &SystemProbe).unwrap_err();
        assert!(matches!(e, LockError::Conflict { .. }), "{e:?}");
        assert_eq!(holder_files(&s), vec![name.clone()]);
        release(&s, &lease.owner).unwrap();
        assert!(holder_files(&s).is_empty());
        let left: Vec<_> = std::fs::read_dir(&s.paths.dir).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    /// A holder whose process runs on (this test process) but whose lease was dropped
    /// without a release: the lock is free, and the pid rule still says running — live.
    /// Once the pid is provably gone (a record naming a dead pid with a free lock): plain
    /// acquisition reclaims; managed acquisition only with the transcript's read lease too
    /// (issue 38), recording the kernel's proof; the predecessor's holder file goes once the
    /// lease is settled.
    #[test]
    fn a_free_holder_lock_is_reclaimed_by_proof_and_its_file_removed_once_settled() {
        let t = tempfile::tempdir().unwrap();
        let s = site(&t);
        let (with_lock, lease, old_name) = acquire_with_holder_lock(&s);
        let old_id = lease.record.owner.holder_lock_id.clone();
        drop(lease.holder_lock);
        let e = acquire(&s, &with_lock, &SystemProbe).unwrap_err();
        assert!(matches!(e, LockError::Conflict { .. }), "a running recorded holder stays live: {e:?}");
        // The same record, but naming a dead pid: only the free lock speaks.
        let stage_dead = |name: String, id: Option<String>, epoch: u64| {
            let ext = Extensions { holder_lock: Some(name), holder_lock_id: id, ..Extensions::epoch(epoch) };
            let dead = new_active_record(
                "s",
                &OwnerToken::generate(),
                &dead_holder(),
                "unknown",
                OffsetDateTime::now_utc(),
                &ext,
            )
            .unwrap();
            let _ = std::fs::remove_file(s.lock_path());
            std::fs::write(s.lock_path(), &dead.raw).unwrap();
        };
        stage_dead(old_name, old_id, 3);
        // Managed, without a transcript to lease: (b) is not proven, so no reclaim.
        let managed = AcquireOptions { reclaim: ReclaimPolicy::Never, ..with_lock.clone() };
        let e = acquire(&s, &managed, &SystemProbe).unwrap_err();
        assert!(matches!(e, LockError::Conflict { managed_refused_stale: true, .. }), "{e:?}");
        let lease = acquire(&s, &with_lock, &SystemProbe).unwrap();
        assert!(lease.reclaimed);
        assert_eq!(lease.record.owner.epoch, 4);
        let new_name = lease.holder_lock.as_ref().unwrap().name().to_owned();
        assert_eq!(holder_files(&s).len(), 2, "the predecessor's file stays until the lease is settled");
        settle(&s, &lease);
        assert_eq!(holder_files(&s), vec![new_name], "the predecessor's holder file is gone");
        release(&s, &lease.owner).unwrap();
        // Managed with the transcript: the kernel proves both, whatever the pod labels.
        let new_lease = acquire(&s, &with_lock, &SystemProbe).unwrap();
        let name = new_lease.holder_lock.as_ref().unwrap().name().to_owned();
        let id = new_lease.record.owner.holder_lock_id.clone();
        drop(new_lease);
        stage_dead(name, id, 7);
        let t_ref = TranscriptRef { runtime_dir: t.path().to_owned(), key: TranscriptKey::default_for("s").unwrap() };
        let managed = AcquireOptions { transcript: Some(t_ref), ..managed };
        let lease = acquire(&s, &managed, &SystemProbe).unwrap();
        let proof = lease.recovered.as_ref().expect("a proven reclaim").previous.clone();
        assert_eq!(proof.rule, KERNEL_PROOF_RULE);
        assert_eq!(proof.evidence, vec!["holder_lock_released".to_string(), "read_lease".to_string()]);
        assert_eq!(lease.record.owner.recovered_from.as_ref(), Some(&proof));
    }

    /// A seal replaces the record that named the holder lock: the sealed record names none
    /// and the file is gone.
    #[test]
    fn a_seal_removes_the_holder_lock_and_the_sealed_record_names_none() {
        let t = tempfile::tempdir().unwrap();
        let s = site(&t);
        std::fs::create_dir_all(t.path().join("chats")).unwrap();
        std::fs::write(t.path().join("chats/s.jsonl"), b"{\"a\":1}\n").unwrap();
        let (_, lease, _) = acquire_with_holder_lock(&s);
        let key = TranscriptKey::default_for("s").unwrap();
        let out =
            crate::lockfile::seal::seal(&s, t.path(), &key, &lease.owner, Default::default(), &mut |_, _| {}).unwrap();
        assert_eq!(out.record.owner.holder_lock, None);
        assert!(holder_files(&s).is_empty());
    }

    #[test]
    fn a_missing_runtime_dir_is_reported_and_never_created() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("nope");
        let e = open_site(&r, LockPaths::for_session(&r, "s"), "s", DirMode::Create).unwrap_err();
        assert!(matches!(e, LockError::RuntimeDirMissing(_)));
        assert!(!r.exists());
    }
}
