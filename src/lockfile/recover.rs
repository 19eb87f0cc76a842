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
use super::transcript::{ProofOptions, read_proof};

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
        Inspection::Active(r, l) => match active_primary(&r, l, transcript) {
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

    // A crashed transition leaves L missing, its claim, and the predecessor at the retired
    // name that claim pairs with. A retired file no claim pairs with is leftover cleanup of
    // a transition that completed: residue, never a primary to restore.
    let claim = claim_record(site);
    let predecessors: Vec<&(String, SideKind)> =
        side.iter().filter(|(n, k)| pairs_with_claim(site, n, *k, claim.as_ref(), probe)).collect();
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
            SideKind::Claim if holder_is_running(site, name, probe) => {
                blocked.get_or_insert_with(|| {
                    "the transition claim names a process that is running on this host; a seal or takeover may be in progress".into()
                });
                Action::Keep { file, reason: "held by a running process".into() }
            }
            _ => Action::MoveAside { name: name.clone(), file, reason: kind.meaning().into() },
        };
        actions.push(action);
    }
    Ok(Plan { session_id: site.session_id.clone(), actions, blocked })
}

/// What `recover` does with an active primary, by the rule every transition to a new
/// writer follows (issue 38 item 1): never move an owner that this kernel sees — a
/// recorded process that runs, a holder lock that is held, a transcript open for writing —
/// whatever `--writers-fenced` says. That flag is the operator's word about *other hosts*
/// (and other kernels), the only thing the kernel here cannot see; it is not a licence to
/// overrule what the kernel does see. `Err` is why nothing may be done.
fn active_primary(r: &LockRecord, l: Liveness, transcript: Option<&TranscriptRef>) -> Result<PrimaryAction, String> {
    match l {
        Liveness::Live(LiveReason::Running) => {
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

/// The record held by `L.claim`, if it is a valid active record.
fn claim_record(site: &LockSite) -> Option<LockRecord> {
    match site.dir.read_regular(OsStr::new(&site.paths.claim())) {
        ReadRegular::Regular(bytes, _) => parse_record(&bytes).ok().filter(|r| r.is_active()),
        _ => None,
    }
}

/// Is `name` the predecessor that the transition holding `claim` moved aside?
///
/// * seal: the claim holds the sealer's active record, and `L.handoff.<o>` holds exactly
///   those bytes;
/// * takeover: the claim holds the new owner `n`'s active record, and
///   `L.sealed.<s>.<n>` holds a sealed record of owner `s`.
fn pairs_with_claim(
    site: &LockSite,
    name: &str,
    kind: SideKind,
    claim: Option<&LockRecord>,
    probe: &dyn ProcessProbe,
) -> bool {
    let Some(claim) = claim else { return false };
    match (kind, inspect_record(&site.dir, name, &site.session_id, &site.local, probe)) {
        (SideKind::Handoff, Inspection::Active(r, _)) => r.raw == claim.raw && name == site.paths.handoff(&r.owner_id),
        (SideKind::SealedRetired, Inspection::Sealed(r)) => {
            name == site.paths.sealed_retired(&r.owner_id, &claim.owner_id)
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
    let folder = format!(
        "{RECOVERED_PREFIX}{:04}{:02}{:02}T{:02}{:02}{:02}Z-{}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        sys::own_pid()
    );
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
    };
    let line = format!(
        "{} pid={} session={:?} action={verb} file={file:?} folder={folder:?} result={result:?}",
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
        // A malformed claim: residue recover moves aside.
        std::fs::write(site.paths.dir.join(site.paths.claim()), b"garbage").unwrap();
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
        let claim = site.paths.claim();
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
        assert!(site.paths.dir.join(site.paths.claim()).exists(), "the claim is still in place");
        let log = std::fs::read_to_string(site.paths.dir.join(AUDIT_LOG)).unwrap();
        assert!(log.contains("result=\"failed"), "{log}");
        // A move that answered success but left the file in place (or did not put it in the
        // folder) is caught by the re-read: never "ok".
        let dest = site.dir.create_subdir(OsStr::new("folder")).unwrap();
        assert!(moved_out(&site, &site.paths.claim(), &dest).starts_with("failed: the file is still"));
        std::fs::remove_file(site.paths.dir.join(site.paths.claim())).unwrap();
        assert!(moved_out(&site, &site.paths.claim(), &dest).starts_with("failed: the moved file is not"));
    }
}
