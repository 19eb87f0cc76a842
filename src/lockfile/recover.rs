//! `recover`: the operator runbook (QWEN_FORMAT §8.1) as a command.
//!
//! A [`plan`] is computed from what is on disk and changes nothing. [`execute`] carries it
//! out only when the caller states that every writer is fenced: it never deletes, it moves
//! each residual file into a dated folder beside the locks (`renameat2(RENAME_NOREPLACE)`),
//! restores the predecessor of a crashed transition by `link` (never over an existing
//! primary), and appends one audit line per action to `writerctl-recovery.log`.
//!
//! What it never does: touch a sealed primary (a valid handoff); move an active owner that
//! the kernel here sees — a recorded process that runs, a held holder lock, a transcript
//! open for writing (issue 38) — whatever `--writers-fenced` says; move one the kernel
//! proves reclaimable (the next `run` takes it); pick between several predecessors; touch a
//! file that does not follow qwen's side-file naming.

use std::ffi::OsStr;

use serde::Serialize;
use time::OffsetDateTime;

use super::error::LockError;
use super::exclusive::prove_beneath;
use super::holder_lock::residue_is_free;
use super::identity::ProcessProbe;
use super::liveness::{LiveReason, Liveness};
use super::paths::{SideKind, redact_side_file_name};
use super::primitives::{Inspection, inspect_record};
use super::record::format_timestamp;
use super::record::{LockRecord, parse_record};
use super::site::{LockSite, TranscriptRef, sync_error};
use super::status::entries_of_lock;
use super::sys::ReadRegular;
use super::sys::{self, Kind};
use super::tail_repair::{self, TornTail};
use super::transcript::{ProofOptions, read_proof};
use super::transcript_lock::check_transcript_free;

/// Name of the audit log in the lock directory.
pub const AUDIT_LOG: &str = "writerctl-recovery.log";
/// Prefix of the dated folders residue is moved into.
pub const RECOVERED_PREFIX: &str = "writerctl-recovered-";

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum Action {
    /// Link this retired record back into the missing primary path, then move it aside.
    Restore {
        /// Real file name (not serialized: may contain an owner id).
        #[serde(skip)]
        name: String,
        /// Name for output, owner ids redacted.
        file: String,
        /// Why.
        reason: String,
    },
    /// Move this file into the recovery folder.
    MoveAside {
        /// Real file name (not serialized).
        #[serde(skip)]
        name: String,
        /// Name for output.
        file: String,
        /// Why.
        reason: String,
    },
    /// Leave this file where it is.
    Keep {
        /// Name for output.
        file: String,
        /// Why.
        reason: String,
    },
    /// Keep the transcript's incomplete last line in a side file beside it, then truncate
    /// the transcript at its last complete line (issue 38: a torn tail has a path back).
    RepairTail {
        /// The torn transcript as planned (not serialized).
        #[serde(skip)]
        torn: TornTail,
        /// The side file's name in the transcript's directory (not serialized).
        #[serde(skip)]
        side_name: String,
        /// The transcript's key beneath the runtime directory.
        file: String,
        /// Where its last complete line ends: its length after the repair.
        complete_bytes: u64,
        /// How many bytes move into the side file.
        cut_bytes: u64,
        /// The side file, as a key beneath the runtime directory.
        side_file: String,
        /// Why.
        reason: String,
    },
}

/// What `recover` would do (or did) for one session.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Session id.
    pub session_id: String,
    /// Steps in order.
    pub actions: Vec<Action>,
    /// Set when nothing may be done (a running owner): the reason.
    pub blocked: Option<String>,
}

impl Plan {
    /// True when the plan would change something.
    pub fn changes_anything(&self) -> bool {
        self.blocked.is_none() && self.actions.iter().any(|a| !matches!(a, Action::Keep { .. }))
    }
}

fn shown(site: &LockSite, name: &str, kind: SideKind) -> String {
    redact_side_file_name(&site.paths.lock_name, name, kind)
}

/// Computes the plan for one session. Changes nothing.
///
/// With `transcript`, a sealed primary's proof is checked: a seal that no longer matches its
/// transcript can never be taken over, so (with every writer fenced) it is moved aside too.
pub fn plan(site: &LockSite, transcript: Option<&TranscriptRef>, probe: &dyn ProcessProbe) -> Result<Plan, LockError> {
    let side = entries_of_lock(&site.dir, &site.paths.lock_name)?;
    let primary = inspect_record(&site.dir, &site.paths.lock_name, &site.session_id, &site.local, probe);
    plan_from(site, side, primary, transcript, probe)
}

/// [`plan`] from a scan already made: `side` is this lock's side files (sorted by name, as
/// [`super::status::group_entries`] gives them) and `primary` what its primary holds.
///
/// Why: `recover` over a whole directory lists and reads the directory once and inspects
/// every primary in one batch (one malformed-record pause for all of them); asking each
/// session to list the directory again made that scan quadratic.
pub fn plan_from(
    site: &LockSite,
    side: Vec<(String, SideKind)>,
    primary: Inspection,
    transcript: Option<&TranscriptRef>,
    probe: &dyn ProcessProbe,
) -> Result<Plan, LockError> {
    let lock = site.paths.lock_name.clone();
    let mut actions = Vec::new();
    let mut blocked = None;
    let primary_missing = matches!(primary, Inspection::Missing);
    // The holder-lock file a primary we keep names is that record's evidence: moving it
    // would fence the record forever (`holder_lock_unverifiable`).
    let primary_holder_lock = match &primary {
        Inspection::Active(r, _) => r.owner.holder_lock.clone(),
        _ => None,
    };
    match primary {
        Inspection::Missing => {}
        Inspection::Active(r, l) => match active_primary(&r, l, transcript, &site.dir) {
            Ok(action) => actions.push(action.into_action(&lock)),
            Err(why) => blocked = Some(why),
        },
        Inspection::Sealed(r) => actions.push(match sealed_mismatch(&r, transcript) {
            Some(why) => Action::MoveAside {
                name: lock.clone(),
                file: lock.clone(),
                reason: format!(
                    "sealed, but its proof no longer matches the transcript ({why}); no takeover can continue it"
                ),
            },
            None => Action::Keep {
                file: lock.clone(),
                reason: "sealed handoff record: a certified takeover continues it".into(),
            },
        }),
        Inspection::Malformed(m) => actions.push(Action::MoveAside {
            name: lock.clone(),
            file: lock.clone(),
            reason: format!("malformed lock ({m})"),
        }),
        Inspection::NotRegular(k) => actions.push(Action::MoveAside {
            name: lock.clone(),
            file: lock.clone(),
            reason: format!("not a regular file ({})", k.describe()),
        }),
        Inspection::OtherSession(_) => actions.push(Action::MoveAside {
            name: lock.clone(),
            file: lock.clone(),
            reason: "a record for another session".into(),
        }),
        Inspection::Error(e) => return Err(LockError::io("read lock", e)),
    }

    // A crashed transition leaves L missing, its transition claim, and the predecessor at the
    // retired name that claim pairs with. A retired file no transition claim pairs with is
    // leftover cleanup of a transition that completed: residue, never a primary to restore.
    let transition_claim = transition_claim_record(site);
    let predecessors: Vec<&(String, SideKind)> = side
        .iter()
        .filter(|(n, k)| pairs_with_transition_claim(site, n, *k, transition_claim.as_ref(), probe))
        .collect();
    let restore = if primary_missing && predecessors.len() == 1 { Some(predecessors[0].0.clone()) } else { None };
    if let Some(name) = &restore {
        let kind = predecessors[0].1;
        actions.push(Action::Restore {
            name: name.clone(),
            file: shown(site, name, kind),
            reason: "the primary is missing and this is the one exact predecessor a crashed transition moved aside"
                .into(),
        });
    }

    for (name, kind) in &side {
        if restore.as_ref() == Some(name) {
            continue; // restore moves the retired copy aside itself
        }
        let file = shown(site, name, *kind);
        let ambiguous = primary_missing && predecessors.len() > 1 && predecessors.iter().any(|(n, _)| n == name);
        let action = match kind {
            SideKind::Unknown => Action::Keep { file, reason: "not a file writerctl knows; inspect it by hand".into() },
            _ if ambiguous => Action::Keep {
                file,
                reason: "one of several predecessors; decide by hand which transcript and record are authoritative"
                    .into(),
            },
            SideKind::ReclaimGuard if holder_is_running(site, name, probe) => {
                Action::Keep { file, reason: "a running reclaimer holds this guard".into() }
            }
            SideKind::HolderLock if primary_holder_lock.as_deref() == Some(name.as_str()) => {
                Action::Keep { file, reason: "the holder lock the active record names: its evidence".into() }
            }
            SideKind::HolderLock if !residue_is_free(&site.dir, name) => {
                blocked.get_or_insert_with(|| {
                    "a holder-lock file is still locked (or cannot be probed): a process of some writer's tree may be alive".into()
                });
                Action::Keep { file, reason: "held by a live process tree, or cannot be probed".into() }
            }
            SideKind::TransitionClaim if holder_is_running(site, name, probe) => {
                blocked.get_or_insert_with(|| {
                    "the transition claim names a process that is running on this host; a seal or takeover may be in progress".into()
                });
                Action::Keep { file, reason: "held by a running process".into() }
            }
            _ => Action::MoveAside { name: name.clone(), file, reason: kind.meaning().into() },
        };
        actions.push(action);
    }
    actions.extend(plan_tail_repair(site, transcript, &actions, blocked.is_some(), probe));
    Ok(Plan { session_id: site.session_id.clone(), actions, blocked })
}

/// What `recover` does with an active primary, by the rule every transition to a new
/// writer follows (issue 38 item 1): never move an owner that this kernel sees — a
/// recorded process that runs, a holder lock that is held, a transcript open for writing —
/// whatever `--writers-fenced` says. That flag is the operator's word about *other hosts*
/// (and other kernels), the only thing the kernel here cannot see; it is not a licence to
/// overrule what the kernel does see. `Err` is why nothing may be done.
fn active_primary(
    r: &LockRecord,
    l: Liveness,
    transcript: Option<&TranscriptRef>,
    dir: &super::sys::Dir,
) -> Result<PrimaryAction, String> {
    match l {
        // A process that answers with this pid, even one whose start time cannot be read
        // or compared, is treated as running (QWEN_FORMAT §3.3 rules 4 and 6).
        Liveness::Live(LiveReason::Running | LiveReason::IdentityUnreadable | LiveReason::NoStartIdentity) => {
            return Err(format!(
                "pid {} on this host is running and holds the lock; stop it (or let it release or seal) first",
                r.owner.pid
            ));
        }
        // Issue 27: the kernel still holds the record's holder lock for some process of the
        // holder's tree — a write may be in flight whatever `--writers-fenced` states.
        Liveness::Live(LiveReason::HolderLockHeld) => {
            return Err(format!(
                "the holder lock of pid {} is still held by a process of its tree (the kernel says so); stop that tree first",
                r.owner.pid
            ));
        }
        _ => {}
    }
    let Some(t) = transcript else {
        return Err("this session's transcript is not known here, so nothing proves that no process can still write it; run recover with --session (and --transcript-key or --project-root)".into());
    };
    let writers = prove_beneath(&t.runtime_dir, t.key.as_str()).map_err(|_| {
        "the transcript is open for writing on this host (the kernel refused a read lease): some process can still append, so the owner is not moved; find it with `fuser -v` or `lsof` on the transcript and stop it first".to_string()
    })?;
    // The transcript's own lock is held by a live writer's tree (the model's RECOVER=1: a
    // replaced holder file and a writer between appends, from another pid namespace, pass
    // both checks above). Any holder of it may still append.
    if let Err(e) = check_transcript_free(&t.runtime_dir, t.key.as_str(), &r.session_id, dir) {
        return Err(format!(
            "{e}: a live writer's tree still holds the transcript's lock, so the owner is not moved; stop it first"
        ));
    }
    Ok(match l {
        // The kernel proves the holder's tree gone and nothing writing: the next `run` or
        // `acquire` reclaims it by that proof and reports the tail — no person needed.
        l if l.holder_proven_gone() && writers.evidence().is_some() => PrimaryAction::Keep(
            "the kernel proves the holder's tree gone and nothing has the transcript open for writing: the next `writerctl run` or `acquire` reclaims it (no person needed)".into(),
        ),
        Liveness::Stale(_) => PrimaryAction::MoveAside(format!(
            "stale active record ({}), which `writerctl run` may not reclaim without the kernel's full proof; moved aside so `run` can start",
            l.describe()
        )),
        _ => PrimaryAction::MoveAside(format!(
            "fenced active record ({}); the kernel here sees no writer, and every writer elsewhere is stated to be fenced",
            l.describe()
        )),
    })
}

/// [`active_primary`]'s decision for the primary.
enum PrimaryAction {
    Keep(String),
    MoveAside(String),
}

impl PrimaryAction {
    fn into_action(self, lock: &str) -> Action {
        match self {
            PrimaryAction::Keep(reason) => Action::Keep { file: lock.to_owned(), reason },
            PrimaryAction::MoveAside(reason) => {
                Action::MoveAside { name: lock.to_owned(), file: lock.to_owned(), reason }
            }
        }
    }
}

/// Whether the primary lock leaves the transcript to no writer, for a tail repair
/// (issue 38).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TailGate {
    /// No record, or a stale one: nothing recorded can still write the transcript.
    Free,
    /// A fenced active record: free only if this plan moves it aside.
    IfMovedAside,
    /// Something may write the transcript, or a record decides what it must hold.
    Closed(&'static str),
}

impl TailGate {
    fn of(primary: &Inspection) -> TailGate {
        match primary {
            Inspection::Missing => TailGate::Free,
            Inspection::Active(_, Liveness::Stale(_)) => TailGate::Free,
            Inspection::Active(_, Liveness::Live(LiveReason::Running)) => {
                TailGate::Closed("a running owner holds the lock and may be in the middle of an append")
            }
            Inspection::Active(_, Liveness::Live(LiveReason::HolderLockHeld)) => TailGate::Closed(
                "the lock's holder lock is held: a process of its tree may be in the middle of an append",
            ),
            Inspection::Active(..) => TailGate::IfMovedAside,
            Inspection::Sealed(_) => {
                TailGate::Closed("the lock is sealed: its proof, not a repair, decides what the transcript must hold")
            }
            _ => TailGate::Closed(
                "the lock holds no record that says who writes the transcript; run recover again once it is moved aside",
            ),
        }
    }
}

/// The tail repair of this session's transcript, if it is torn (issue 38, reproduction 7:
/// a writer killed mid-line left every later acquire refused and nothing planned).
///
/// Planned only when nothing recorded can still write the transcript: the primary is
/// missing (and no crashed transition's predecessor is being restored), stale, or a fenced
/// record this plan moves aside — never beside a running owner, a held holder lock, a
/// sealed record (its proof covers the bytes) or a blocked plan. Otherwise a `keep` line
/// says why. The repair itself asks the kernel again, right before it cuts
/// ([`tail_repair::repair`]). A transcript that cannot be read plans nothing: acquisition
/// reports it as it is.
///
/// The primary is inspected again here, and only for a torn transcript: the plan above
/// consumed its inspection, and a clean transcript (every session, nearly always) costs a
/// directory scan nothing more than its tail check. Should the record have changed in
/// between, this judges the newer one; the repair re-checks everything before it cuts.
fn plan_tail_repair(
    site: &LockSite,
    transcript: Option<&TranscriptRef>,
    actions: &[Action],
    blocked: bool,
    probe: &dyn ProcessProbe,
) -> Option<Action> {
    let t = transcript?;
    let torn = tail_repair::find(&t.runtime_dir, &t.key).ok()??;
    let gate = TailGate::of(&inspect_record(&site.dir, &site.paths.lock_name, &site.session_id, &site.local, probe));
    let lock = site.paths.lock_name.as_str();
    let moves_primary = actions.iter().any(|a| matches!(a, Action::MoveAside { name, .. } if name == lock));
    let restores = actions.iter().any(|a| matches!(a, Action::Restore { .. }));
    let why_not = match gate {
        _ if blocked => Some("the plan is blocked (see above)"),
        TailGate::Closed(why) => Some(why),
        TailGate::IfMovedAside if !moves_primary => Some("the lock's active record stays in place"),
        _ if restores => Some("a crashed transition's record is restored first; run recover again after it"),
        _ => None,
    };
    let (complete, length) = (torn.complete, torn.length);
    let found = format!(
        "the transcript ends in an incomplete line at byte {length} (last complete line ends at byte {complete})"
    );
    let file = t.key.as_str().to_owned();
    if let Some(why) = why_not {
        return Some(Action::Keep { file, reason: format!("{found}; not repaired: {why}") });
    }
    let side_name = tail_repair::side_file_name(&t.key, OffsetDateTime::now_utc(), sys::own_pid());
    let side_file = tail_repair::side_file_key(&t.key, &side_name);
    let cut_bytes = torn.cut_bytes();
    Some(Action::RepairTail {
        reason: format!(
            "{found}; no writer is recorded: keep the {cut_bytes} cut byte(s) in {side_file}, then truncate the transcript at byte {complete}"
        ),
        torn,
        side_name,
        file,
        complete_bytes: complete,
        cut_bytes,
        side_file,
    })
}

/// The record held by `L.claim`, if it is a valid active record.
fn transition_claim_record(site: &LockSite) -> Option<LockRecord> {
    match site.dir.read_regular(OsStr::new(&site.paths.transition_claim())) {
        ReadRegular::Regular(bytes, _) => parse_record(&bytes).ok().filter(|r| r.is_active()),
        _ => None,
    }
}

/// Is `name` the predecessor that the transition holding `transition_claim` moved aside?
///
/// * seal: the transition claim holds the sealer's active record, and `L.handoff.<o>` holds
///   exactly those bytes;
/// * takeover: the transition claim holds the new owner `n`'s active record, and
///   `L.sealed.<s>.<n>` holds a sealed record of owner `s`.
fn pairs_with_transition_claim(
    site: &LockSite,
    name: &str,
    kind: SideKind,
    transition_claim: Option<&LockRecord>,
    probe: &dyn ProcessProbe,
) -> bool {
    let Some(tc) = transition_claim else { return false };
    match (kind, inspect_record(&site.dir, name, &site.session_id, &site.local, probe)) {
        (SideKind::Handoff, Inspection::Active(r, _)) => r.raw == tc.raw && name == site.paths.handoff(&r.owner_id),
        (SideKind::SealedRetired, Inspection::Sealed(r)) => {
            name == site.paths.sealed_retired(&r.owner_id, &tc.owner_id)
        }
        _ => false,
    }
}

/// Why a sealed record's proof does not match the transcript now, if it does not.
fn sealed_mismatch(sealed: &LockRecord, transcript: Option<&TranscriptRef>) -> Option<String> {
    let t = transcript?;
    let seal = sealed.seal()?;
    if seal.transcript.relative_path != t.key.as_str() {
        // Another key: this invocation does not know the right transcript; judge nothing.
        return None;
    }
    match read_proof(&t.runtime_dir, &t.key, ProofOptions::default(), &mut |_, _| {}) {
        Ok(now) => now.matches_seal(seal).err().map(|e| e.to_string()),
        Err(e @ (LockError::TranscriptChanged { .. } | LockError::TranscriptUnsafe { .. })) => Some(e.to_string()),
        Err(_) => None,
    }
}

fn holder_is_running(site: &LockSite, name: &str, probe: &dyn ProcessProbe) -> bool {
    matches!(
        inspect_record(&site.dir, name, &site.session_id, &site.local, probe),
        Inspection::Active(_, Liveness::Live(LiveReason::Running | LiveReason::HolderLockHeld))
    )
}

/// The result of one executed action.
#[derive(Debug, Clone, Serialize)]
pub struct Done {
    /// The action.
    #[serde(flatten)]
    pub action: Action,
    /// `ok`, or why it failed.
    pub result: String,
}

/// Carries out `plan`. The caller must have confirmed that every writer is fenced.
/// Returns what was done and the recovery folder's name (if anything was moved).
pub fn execute(site: &LockSite, plan: &Plan) -> Result<(Vec<Done>, Option<String>), LockError> {
    if !plan.changes_anything() {
        return Ok((plan.actions.iter().map(|a| Done { action: a.clone(), result: "kept".into() }).collect(), None));
    }
    let now = OffsetDateTime::now_utc();
    let folder = format!("{RECOVERED_PREFIX}{}-{}", super::record::compact_timestamp(now), sys::own_pid());
    // The audit log first: if it cannot be written, nothing moves without its line.
    let log = site.dir.open_log(OsStr::new(AUDIT_LOG)).map_err(|e| LockError::io("open the recovery audit log", e))?;
    let dest = site.dir.create_subdir(OsStr::new(&folder)).map_err(|e| LockError::io("create recovery folder", e))?;
    let mut done = Vec::new();
    let mut failed = false;
    for action in &plan.actions {
        crate::failpoint!("recover.before_action");
        let result = match action {
            Action::Keep { .. } => "kept".to_owned(),
            Action::Restore { name, .. } => restore(site, name, &dest),
            Action::MoveAside { name, .. } => {
                match sys::move_into(&site.dir, OsStr::new(name), &dest, OsStr::new(name)) {
                    Ok(()) => moved_out(site, name, &dest),
                    Err(e) => format!("failed: {e}"),
                }
            }
            Action::RepairTail { torn, side_name, .. } => match tail_repair::repair(torn, side_name) {
                Ok(_) => "ok".into(),
                Err(e) => format!("failed: {e}"),
            },
        };
        if result.starts_with("failed") {
            failed = true;
        }
        audit(site, &log, action, &folder, &result)?;
        done.push(Done { action: action.clone(), result });
        if failed {
            break;
        }
    }
    sys::fsync_fd(&dest).map_err(|e| LockError::io("fsync recovery folder", e))?;
    site.dir.sync().map_err(sync_error)?;
    Ok((done, Some(folder)))
}

/// Links the predecessor back into the missing primary (never replacing one that appeared),
/// then moves the retired copy aside.
fn restore(site: &LockSite, name: &str, dest: &std::os::fd::OwnedFd) -> String {
    match site.dir.link(OsStr::new(name), OsStr::new(&site.paths.lock_name)) {
        Ok(()) => {}
        Err(e) => return format!("failed: cannot link the predecessor back ({e}); nothing else was changed"),
    }
    if let Err(e) = after_restore_link() {
        return format!("failed: {e}");
    }
    // The primary must now be the very inode of the predecessor (a link shares it).
    match (site.dir.lstat(OsStr::new(&site.paths.lock_name)), site.dir.lstat(OsStr::new(name))) {
        (Ok(m), Ok(p)) if m.kind == Kind::Regular && m.same_identity(&p) => {}
        _ => return "failed: the restored primary could not be verified".into(),
    }
    match sys::move_into(&site.dir, OsStr::new(name), dest, OsStr::new(name)) {
        Ok(()) => "ok".into(),
        Err(e) => format!("ok (restored; the retired copy stays in place: {e})"),
    }
}

/// Re-reads the result of a move before calling it done (issue 27, reproduction 3: on NFS
/// the move failed and `recover` still exited 0): `name` must be gone from the lock
/// directory — by the server's listing where lookups may be cached — and present in the
/// recovery folder.
fn moved_out(site: &LockSite, name: &str, dest: &std::os::fd::OwnedFd) -> String {
    let gone = match site.dir.lstat(OsStr::new(name)) {
        Ok(_) => false,
        Err(e) if sys::is_enoent(&e) && site.dir.lookups_authoritative() => true,
        Err(e) if sys::is_enoent(&e) => matches!(site.dir.listed_by_server(OsStr::new(name)), Ok(false)),
        Err(_) => false,
    };
    if !gone {
        return "failed: the file is still in the lock directory after the move".into();
    }
    match sys::lstat_at(dest, OsStr::new(name)) {
        Ok(_) => "ok".into(),
        Err(e) => format!("failed: the moved file is not in the recovery folder ({e})"),
    }
}

/// The failpoint seam inside `restore`, which reports results as text.
fn after_restore_link() -> Result<(), LockError> {
    crate::failpoint!("recover.after_restore_link");
    Ok(())
}

fn audit(
    site: &LockSite,
    log: &std::os::fd::OwnedFd,
    action: &Action,
    folder: &str,
    result: &str,
) -> Result<(), LockError> {
    let (verb, file) = match action {
        Action::Restore { file, .. } => ("restore", file),
        Action::MoveAside { file, .. } => ("move_aside", file),
        Action::Keep { file, .. } => ("keep", file),
        Action::RepairTail { file, .. } => ("repair_tail", file),
    };
    // A tail repair's line names where the cut bytes went, and the cut.
    let repair = match action {
        Action::RepairTail { side_file, complete_bytes, cut_bytes, .. } => {
            format!(" side_file={side_file:?} complete_bytes={complete_bytes} cut_bytes={cut_bytes}")
        }
        _ => String::new(),
    };
    let line = format!(
        "{} pid={} session={:?} action={verb} file={file:?}{repair} folder={folder:?} result={result:?}",
        format_timestamp(OffsetDateTime::now_utc()),
        sys::own_pid(),
        site.session_id
    );
    sys::append_line(log, &line).map_err(|e| LockError::io("append recovery audit log", e))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use crate::lockfile::failpoint::{When, clear_hooks, inject_syscall};
    use crate::lockfile::identity::SystemProbe;
    use crate::lockfile::paths::LockPaths;
    use crate::lockfile::site::{DirMode, open_site};
    use rustix::io::Errno;

    fn site_with_residue() -> (tempfile::TempDir, LockSite) {
        let t = tempfile::tempdir().unwrap();
        let site = open_site(t.path(), LockPaths::for_session(t.path(), "s"), "s", DirMode::Create).unwrap();
        // A malformed transition claim: residue recover moves aside.
        std::fs::write(site.paths.dir.join(site.paths.transition_claim()), b"garbage").unwrap();
        (t, site)
    }

    fn moved(done: &[Done]) -> Vec<&str> {
        done.iter().filter(|d| matches!(d.action, Action::MoveAside { .. })).map(|d| d.result.as_str()).collect()
    }

    #[test]
    fn residue_is_moved_where_rename_noreplace_answers_einval() {
        // Issue 27, reproduction 3: on NFS the move used to fail with EINVAL.
        let (_t, site) = site_with_residue();
        let p = plan(&site, None, &SystemProbe).unwrap();
        assert!(p.changes_anything(), "{p:?}");
        inject_syscall("rename", ".claim", When::Before, Errno::INVAL.raw_os_error(), 1);
        let (done, folder) = execute(&site, &p).unwrap();
        clear_hooks();
        assert_eq!(moved(&done), vec!["ok"]);
        let claim = site.paths.transition_claim();
        assert!(site.paths.dir.join(&claim).symlink_metadata().is_err());
        assert!(site.paths.dir.join(folder.unwrap()).join(&claim).exists());
    }

    #[test]
    fn a_move_that_did_not_happen_is_reported_failed_never_ok() {
        let (_t, site) = site_with_residue();
        let p = plan(&site, None, &SystemProbe).unwrap();
        inject_syscall("rename", ".claim", When::Before, Errno::INVAL.raw_os_error(), 1);
        inject_syscall("link", ".claim", When::Before, Errno::IO.raw_os_error(), 1);
        let (done, _) = execute(&site, &p).unwrap();
        clear_hooks();
        let results = moved(&done);
        assert!(results.len() == 1 && results[0].starts_with("failed"), "{results:?}");
        assert!(site.paths.dir.join(site.paths.transition_claim()).exists(), "the claim is still in place");
        let log = std::fs::read_to_string(site.paths.dir.join(AUDIT_LOG)).unwrap();
        assert!(log.contains("result=\"failed"), "{log}");
        // A move that answered success but left the file in place (or did not put it in the
        // folder) is caught by the re-read: never "ok".
        let dest = site.dir.create_subdir(OsStr::new("folder")).unwrap();
        assert!(moved_out(&site, &site.paths.transition_claim(), &dest).starts_with("failed: the file is still"));
        std::fs::remove_file(site.paths.dir.join(site.paths.transition_claim())).unwrap();
        assert!(moved_out(&site, &site.paths.transition_claim(), &dest).starts_with("failed: the moved file is not"));
    }

    struct Gone;
    impl ProcessProbe for Gone {
        fn signal0(&self, _: u64) -> sys::Signal0 {
            sys::Signal0::NoSuchProcess
        }
        fn start_identity(&self, _: u64) -> Option<String> {
            None
        }
    }

    const TORN: &[u8] = b"{\"a\":1}\n{\"to";

    fn torn_site() -> (tempfile::TempDir, LockSite, TranscriptRef) {
        let t = tempfile::tempdir().unwrap();
        let site = open_site(t.path(), LockPaths::for_session(t.path(), "s"), "s", DirMode::Create).unwrap();
        std::fs::create_dir_all(t.path().join("chats")).unwrap();
        std::fs::write(t.path().join("chats/s.jsonl"), TORN).unwrap();
        let tr = TranscriptRef {
            runtime_dir: t.path().to_path_buf(),
            key: crate::lockfile::transcript::TranscriptKey::default_for("s").unwrap(),
        };
        (t, site, tr)
    }

    fn repairs(p: &Plan) -> Vec<&Action> {
        p.actions.iter().filter(|a| matches!(a, Action::RepairTail { .. })).collect()
    }

    /// Issue 38, reproduction 7: `recover` planned nothing for a torn transcript and exited
    /// 0, leaving every later acquire refused.
    #[test]
    fn a_torn_tail_with_no_recorded_writer_is_planned_and_repaired_with_its_bytes_kept() {
        let (t, site, tr) = torn_site();
        let p = plan(&site, Some(&tr), &SystemProbe).unwrap();
        assert!(p.changes_anything() && p.blocked.is_none(), "{p:?}");
        let planned = repairs(&p);
        assert_eq!(planned.len(), 1, "{p:?}");
        let json = serde_json::to_value(planned[0]).unwrap();
        assert_eq!(json["action"], "repair_tail");
        assert_eq!(
            (json["file"].as_str(), json["complete_bytes"].as_u64(), json["cut_bytes"].as_u64()),
            (Some("chats/s.jsonl"), Some(8), Some(4))
        );
        let side_file = json["side_file"].as_str().unwrap().to_owned();
        assert!(side_file.starts_with("chats/s.jsonl.torn-"), "{side_file}");
        assert!(json["reason"].as_str().unwrap().contains("last complete line ends at byte 8"), "{json}");
        let (done, _) = execute(&site, &p).unwrap();
        let result: Vec<&str> = done.iter().map(|d| d.result.as_str()).collect();
        assert_eq!(result, vec!["ok"], "{done:?}");
        assert_eq!(std::fs::read(t.path().join("chats/s.jsonl")).unwrap(), &TORN[..8]);
        assert_eq!(std::fs::read(t.path().join(&side_file)).unwrap(), &TORN[8..]);
        let log = std::fs::read_to_string(site.paths.dir.join(AUDIT_LOG)).unwrap();
        assert!(
            log.contains("action=repair_tail")
                && log.contains(&format!("side_file={side_file:?}"))
                && log.contains("result=\"ok\""),
            "{log}"
        );
        // Repaired: nothing more to plan.
        assert!(repairs(&plan(&site, Some(&tr), &SystemProbe).unwrap()).is_empty());
    }

    #[test]
    fn a_torn_tail_beside_a_running_owner_is_kept_and_beside_a_stale_one_is_repaired() {
        let (t, site, tr) = torn_site();
        let opts = crate::lockfile::AcquireOptions {
            holder: crate::lockfile::identity::holder(sys::own_pid()),
            process_kind: "unknown".into(),
            reclaim: crate::lockfile::ReclaimPolicy::Local,
            transcript: None,
            certified: None,
            holder_lock: false,
        };
        crate::lockfile::acquire(&site, &opts, &SystemProbe).unwrap();
        // This process runs and holds the lock: it may be in the middle of an append.
        let p = plan(&site, Some(&tr), &SystemProbe).unwrap();
        assert!(p.blocked.is_some() && repairs(&p).is_empty(), "{p:?}");
        let kept = p.actions.iter().find(|a| matches!(a, Action::Keep { file, .. } if file == "chats/s.jsonl"));
        let Some(Action::Keep { reason, .. }) = kept else { panic!("no keep line for the transcript: {p:?}") };
        assert!(reason.contains("incomplete line at byte 12") && reason.contains("not repaired"), "{reason}");
        // The same record, its holder gone: stale, so nothing recorded can write.
        let p = plan(&site, Some(&tr), &Gone).unwrap();
        assert!(p.blocked.is_none() && repairs(&p).len() == 1, "{p:?}");
        execute(&site, &p).unwrap();
        assert_eq!(std::fs::read(t.path().join("chats/s.jsonl")).unwrap(), &TORN[..8]);
        // No holder lock, so no `run` could reclaim it: moved aside with the repair (issue 38).
        assert!(!site.lock_path().exists(), "the stale record is moved aside so `run` can start");
    }

    #[test]
    fn a_writer_that_opened_the_transcript_after_the_plan_stops_the_repair() {
        let (t, site, tr) = torn_site();
        let p = plan(&site, Some(&tr), &SystemProbe).unwrap();
        let writer = std::fs::OpenOptions::new().append(true).open(t.path().join("chats/s.jsonl")).unwrap();
        let (done, _) = execute(&site, &p).unwrap();
        assert!(done[0].result.starts_with("failed: another open file description can still write"), "{done:?}");
        assert_eq!(std::fs::read(t.path().join("chats/s.jsonl")).unwrap(), TORN, "not cut");
        let log = std::fs::read_to_string(site.paths.dir.join(AUDIT_LOG)).unwrap();
        assert!(log.contains("action=repair_tail") && log.contains("result=\"failed"), "{log}");
        drop(writer);
    }
}
