//! The exact-primary transition (QWEN_FORMAT §5.7), its rollback (§5.8) and the failure
//! cleanup shared by seal and takeover (seed 001 "Failure contract").
//!
//! # Calling sequence
//!
//! ```text
//! install L.claim ─► Transition::run:  rename L → retired ─► link replacement → L
//!                                          │ (Started)            │ (Committed)
//!               on failure ─► cleanup_after_failure: rollback if committed and the
//!                             transition claim is still exactly ours; drop it only once L
//!                             is proven to be the exact predecessor again; otherwise keep it.
//! ```
//!
//! # Why the transition claim is kept on an unproven rollback
//!
//! While `L` is missing, a cooperating ordinary acquirer may have installed its own record into
//! the gap and be about to notice our transition claim and remove itself. Dropping the
//! transition claim before `L` is provably our predecessor again could leave that candidate —
//! or an unknown successor — as the primary without anyone having certified it. A retained
//! transition claim makes every acquirer answer unavailable until an operator, with every
//! writer fenced, runs `writerctl recover`.
//!
//! # What a crash leaves
//!
//! After the rename and before the link: `L` missing, the predecessor at `retired`, the
//! transition claim present (and, for a seal, the sealed candidate). `status` reports it as
//! `in_transition`; `recover` restores the predecessor by link (never by overwrite).

use std::ffi::OsStr;
use std::thread::sleep;

use super::error::{LockError, Unavailable};
use super::primitives::{ExactState, MALFORMED_RETRY_DELAY, RemoveError, inspect_exact, install, remove_exact};
use super::record::{Schema, parse_record};
use super::site::LockSite;
use super::sys::{FileMeta, ReadRegular, is_enoent};

/// Candidate observations before a transition gives up (50 ms apart).
///
/// qwen waits 20 (≈ 950 ms). writerctl waits up to 100 (≈ 5 s): a claim-aware candidate removes
/// itself microseconds after its second transition claim check, so the bound is only ever
/// reached when the candidate process died — or was descheduled for a long time on a loaded
/// machine, which under qwen's bound makes a racing takeover fail closed with no winner and a
/// retained transition claim. The longer bound costs nothing in the normal case and does not
/// change what other writers see. Unit tests keep qwen's bound so they stay fast.
#[cfg(not(test))]
pub const CLAIMED_PRIMARY_WAIT_ATTEMPTS: u32 = 100;
/// qwen's bound, for unit tests.
#[cfg(test)]
pub const CLAIMED_PRIMARY_WAIT_ATTEMPTS: u32 = 20;

fn os(name: &str) -> &OsStr {
    OsStr::new(name)
}

/// How far a transition got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// The primary was not touched.
    NotStarted,
    /// The predecessor was moved to the retired path.
    Started,
    /// The replacement was linked into the primary path.
    Committed,
}

/// One transition of the primary path while holding the transition claim.
#[derive(Debug, Clone, Copy)]
pub struct Transition<'a> {
    /// The site.
    pub site: &'a LockSite,
    /// Exact bytes of the current primary (the predecessor).
    pub expected: &'a [u8],
    /// Name of the replacement file to link into `L`.
    pub source: &'a str,
    /// Its exact bytes.
    pub source_raw: &'a [u8],
    /// Owner-unique name the predecessor is moved to.
    pub retired: &'a str,
    /// Exact bytes of our transition claim.
    pub transition_claim_raw: &'a [u8],
}

/// A failed link into `L`; `unclear` when what is at `L` now could not be read, so the link
/// may have taken effect.
struct LinkFailure {
    error: LockError,
    unclear: bool,
}

impl LinkFailure {
    fn definite(error: LockError) -> LinkFailure {
        LinkFailure { error, unclear: false }
    }
}

/// What sits at `L` while we try to link into it.
enum AtPrimary {
    /// Exactly the bytes we are linking (an error reported after the link took effect).
    Source,
    /// A same-session schema-2 active record: a claim-aware ordinary acquirer that will
    /// remove itself after its second transition claim check.
    Candidate,
    /// Anything else: never removed, never overwritten.
    Other,
    Missing,
    Unknown,
}

impl Transition<'_> {
    fn lock(&self) -> &str {
        &self.site.paths.lock_name
    }

    fn transition_claim(&self) -> String {
        self.site.paths.transition_claim()
    }

    /// Installs our transition claim (`transition_claim_raw`, whose owner id is `owner_id`) at
    /// `L.claim`; another transition claim there is unavailable. An install whose outcome is
    /// unclear may have linked our transition claim, so `transition_claim_installed` is set on
    /// an error too: the cleanup must look.
    pub fn install_transition_claim(
        &self,
        owner_id: &str,
        transition_claim_installed: &mut bool,
    ) -> Result<FileMeta, LockError> {
        match install(&self.site.dir, &self.transition_claim(), self.transition_claim_raw, owner_id) {
            Ok(Some(linked)) => {
                *transition_claim_installed = true;
                Ok(linked)
            }
            Ok(None) => Err(LockError::unavailable(Unavailable::TransitionClaimPresent)),
            Err(e) => {
                *transition_claim_installed = true;
                Err(e)
            }
        }
    }

    fn transition_claim_is_exact(&self) -> bool {
        matches!(inspect_exact(&self.site.dir, &self.transition_claim(), self.transition_claim_raw), ExactState::Exact)
    }

    fn classify_primary(&self, source_raw: &[u8]) -> AtPrimary {
        match self.site.dir.read_regular(os(self.lock())) {
            ReadRegular::Missing => self.missing_by_server(source_raw),
            read => self.classify_read(read, source_raw),
        }
    }

    fn classify_read(&self, read: ReadRegular, source_raw: &[u8]) -> AtPrimary {
        match read {
            ReadRegular::Regular(bytes, _) if bytes == source_raw => AtPrimary::Source,
            ReadRegular::Regular(bytes, _) => match parse_record(&bytes) {
                Ok(r) if r.schema == Schema::V2 && r.is_active() && r.session_id == self.site.session_id => {
                    AtPrimary::Candidate
                }
                _ => AtPrimary::Other,
            },
            ReadRegular::NotRegular(_) | ReadRegular::TooLarge(_) => AtPrimary::Other,
            ReadRegular::Missing => AtPrimary::Missing,
            ReadRegular::Error(_) => AtPrimary::Unknown,
        }
    }

    /// A read of `L` said "missing". On a local disk that is the truth. On a network or FUSE
    /// filesystem it may be a negative entry cached before a candidate (another host's
    /// acquirer) linked itself into the gap (issue 27): ask the server's listing. Listed but
    /// still unreadable through the cache is [`AtPrimary::Unknown`], which the transition
    /// treats as "may be there" (fail closed: the transition claim is kept).
    fn missing_by_server(&self, source_raw: &[u8]) -> AtPrimary {
        let dir = &self.site.dir;
        if dir.lookups_authoritative() {
            return AtPrimary::Missing;
        }
        match dir.listed_by_server(os(self.lock())) {
            Ok(false) => AtPrimary::Missing,
            // The listing forced the directory's revalidation, so on NFS the stale negative
            // entry is gone now: read once more.
            Ok(true) => match dir.read_regular(os(self.lock())) {
                ReadRegular::Missing => AtPrimary::Unknown,
                read => self.classify_read(read, source_raw),
            },
            Err(_) => AtPrimary::Unknown,
        }
    }

    /// Runs the transition. `stage` tells the caller how far it got, also on error.
    pub fn run(&self, stage: &mut Stage) -> Result<(), LockError> {
        crate::failpoint!("transition.before_rename");
        if let Err(e) = self.site.dir.rename_noreplace(os(self.lock()), os(self.retired)) {
            // Did the rename happen anyway (error after effect)?
            let at_lock = inspect_exact(&self.site.dir, self.lock(), self.expected);
            let at_retired = inspect_exact(&self.site.dir, self.retired, self.expected);
            match (at_lock, at_retired) {
                (_, ExactState::Exact) => {}
                // Provably not moved: the primary is untouched.
                (ExactState::Exact, ExactState::Missing) => return Err(LockError::io("move primary aside", e)),
                // Anything unclear counts as started, so cleanup keeps the transition claim
                // unless the exact predecessor is proven back at L.
                _ => {
                    *stage = Stage::Started;
                    return Err(LockError::io("move primary aside", e));
                }
            }
        }
        *stage = Stage::Started;
        if let Err(e) = self.after_rename() {
            return Err(self.restore(e));
        }
        // We hold the transition claim, so nobody cooperating replaced L before our rename;
        // prove it.
        if !matches!(inspect_exact(&self.site.dir, self.retired, self.expected), ExactState::Exact) {
            return Err(self.restore(LockError::unavailable(Unavailable::PrimaryReplaced)));
        }
        match self.link_primary_under_transition_claim(self.source, self.source_raw) {
            Ok(()) => {
                *stage = Stage::Committed;
                crate::failpoint!("transition.after_link");
                Ok(())
            }
            // The link may have happened: treat it as committed, so cleanup runs the
            // byte-exact rollback guarded by the transition claim instead of a restore that
            // could mistake our own new record for a candidate.
            Err(LinkFailure { error, unclear: true }) => {
                *stage = Stage::Committed;
                Err(error)
            }
            Err(LinkFailure { error, unclear: false }) => Err(self.restore(error)),
        }
    }

    /// §5.7 step 3: put the predecessor back (same link loop), then drop the retired copy.
    fn restore(&self, original: LockError) -> LockError {
        match self.link_primary_under_transition_claim(self.retired, self.expected) {
            Ok(()) => {
                let _ = remove_exact(&self.site.dir, self.retired, self.expected);
                original
            }
            Err(LinkFailure { error: restore, .. }) => LockError::Unavailable {
                reason: Unavailable::TransitionClaimRetained,
                detail: Some(format!(
                    "transition failed ({original}) and the primary could not be restored ({restore})"
                )),
                source: None,
            },
        }
    }

    /// §5.7 step 2: link `source` into the missing `L`, waiting (bounded) for a claim-aware
    /// candidate to leave, never removing or overwriting anything else.
    fn link_primary_under_transition_claim(&self, source: &str, source_raw: &[u8]) -> Result<(), LinkFailure> {
        let mut observations = 0;
        loop {
            if !self.transition_claim_is_exact() {
                return Err(LinkFailure::definite(LockError::unavailable(Unavailable::TransitionClaimLost)));
            }
            let err = match self.try_link(source) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            match self.classify_primary(source_raw) {
                AtPrimary::Source => return Ok(()),
                AtPrimary::Candidate => self.wait_for_candidate(&mut observations).map_err(LinkFailure::definite)?,
                AtPrimary::Other => {
                    return Err(LinkFailure::definite(LockError::unavailable(Unavailable::PrimaryReplaced)));
                }
                AtPrimary::Missing => return Err(LinkFailure::definite(err)),
                AtPrimary::Unknown => return Err(LinkFailure { error: err, unclear: true }),
            }
        }
    }

    /// The seam between the rename and the link; a failure here goes through `restore`, as a
    /// real one would.
    fn after_rename(&self) -> Result<(), LockError> {
        crate::failpoint!("transition.after_rename");
        Ok(())
    }

    fn try_link(&self, source: &str) -> Result<(), LockError> {
        crate::failpoint!("transition.before_link");
        self.site.dir.link(os(source), os(self.lock())).map_err(|e| LockError::io("link primary", e))
    }

    fn wait_for_candidate(&self, observations: &mut u32) -> Result<(), LockError> {
        *observations += 1;
        if *observations >= CLAIMED_PRIMARY_WAIT_ATTEMPTS {
            return Err(LockError::unavailable(Unavailable::CandidateWaitExpired));
        }
        sleep(MALFORMED_RETRY_DELAY);
        Ok(())
    }

    /// §5.8: after a committed transition, put the predecessor back. Only while the transition
    /// claim is exactly ours.
    pub fn rollback(&self) -> Result<(), LockError> {
        let mut observations = 0;
        let mut unlink_failures = 0;
        loop {
            if !self.transition_claim_is_exact() {
                return Err(LockError::unavailable(Unavailable::TransitionClaimLost));
            }
            crate::failpoint!("rollback.before_remove");
            match self.classify_primary(self.source_raw) {
                AtPrimary::Missing => break,
                AtPrimary::Candidate => self.wait_for_candidate(&mut observations)?,
                AtPrimary::Other => return Err(LockError::unavailable(Unavailable::PrimaryReplaced)),
                AtPrimary::Unknown => return Err(LockError::unavailable(Unavailable::Io)),
                AtPrimary::Source => match self.site.dir.unlink(os(self.lock())) {
                    Ok(()) => break,
                    Err(e) if is_enoent(&e) => break,
                    Err(e) => {
                        // Re-inspect after a failed unlink (it may have taken effect), but
                        // give up on a path that keeps refusing.
                        unlink_failures += 1;
                        if unlink_failures >= 3 {
                            return Err(LockError::io("remove the replacement primary", e));
                        }
                    }
                },
            }
        }
        match inspect_exact(&self.site.dir, self.retired, self.expected) {
            ExactState::Exact => {}
            ExactState::Other => return Err(LockError::unavailable(Unavailable::PrimaryReplaced)),
            ExactState::Missing | ExactState::Unknown(_) => return Err(LockError::unavailable(Unavailable::Io)),
        }
        crate::failpoint!("rollback.before_relink");
        self.link_primary_under_transition_claim(self.retired, self.expected).map_err(|f| f.error)?;
        crate::failpoint!("rollback.after_relink");
        let _ = remove_exact(&self.site.dir, self.retired, self.expected);
        Ok(())
    }

    /// Failure cleanup (§5.6 / §5.10 "Failure cleanup"). Returns the error to report.
    ///
    /// * before the transition started: release only our exact transition claim (a delayed
    ///   loser must not strand one after the winner became active);
    /// * committed and the transition claim still ours: roll back;
    /// * started: drop the transition claim only if `L` is again exactly the predecessor;
    ///   otherwise keep it and report `TransitionClaimRetained`.
    pub fn cleanup_after_failure(
        &self,
        stage: Stage,
        transition_claim_installed: bool,
        original: LockError,
    ) -> LockError {
        if !transition_claim_installed {
            return original;
        }
        let mut failures: Vec<String> = Vec::new();
        let transition_claim_state = inspect_exact(&self.site.dir, &self.transition_claim(), self.transition_claim_raw);
        if let ExactState::Unknown(e) = &transition_claim_state {
            failures.push(format!("the claim's ownership is unreadable ({e})"));
        }
        let transition_claim_exact = matches!(transition_claim_state, ExactState::Exact);
        if stage == Stage::Committed
            && transition_claim_exact
            && let Err(e) = self.rollback()
        {
            failures.push(format!("rollback failed: {e}"));
        }
        if transition_claim_exact {
            let restored = matches!(inspect_exact(&self.site.dir, self.lock(), self.expected), ExactState::Exact);
            if stage == Stage::NotStarted || restored {
                if let Err(e) = release_transition_claim(self.site, self.transition_claim_raw) {
                    failures.push(format!("the claim could not be removed: {e}"));
                }
            } else {
                failures.push("the previous primary was not restored; the transition claim was retained".into());
            }
        }
        let _ = self.site.dir.sync();
        if failures.is_empty() {
            original
        } else {
            LockError::Unavailable {
                reason: Unavailable::TransitionClaimRetained,
                detail: Some(format!("{original}; cleanup: {}", failures.join("; "))),
                source: None,
            }
        }
    }
}

/// §5.6 step 13: remove the transition claim if it still holds exactly `raw`; one holding
/// anything else is not ours and is left alone.
pub fn release_transition_claim(site: &LockSite, raw: &[u8]) -> Result<(), LockError> {
    let transition_claim = site.paths.transition_claim();
    match remove_exact(&site.dir, &transition_claim, raw) {
        Ok(()) | Err(RemoveError::Lost) => Ok(()),
        Err(RemoveError::Io(e)) => match inspect_exact(&site.dir, &transition_claim, raw) {
            ExactState::Missing | ExactState::Other => Ok(()),
            _ => Err(LockError::io("remove transition claim", e)),
        },
    }
}
