//! The lock-file history: who took, sealed, took over and gave up each session, when and
//! why (issue 30). Advisory only: nothing in the engine ever reads it to decide anything.
//!
//! # On disk
//!
//! `R/tmp/writerctl-history/history.jsonl` — a sibling of the lock directory
//! `R/tmp/session-writer-locks/`, not an entry in it — one JSON object per line, and one
//! older generation `history.jsonl.1`. Beside the lock directory, not inside it, because:
//!
//! * qwen-code only ever creates `R/tmp/session-writer-locks` in `R/tmp` and addresses
//!   files in it by name; the lock directory itself stays exactly qwen's format, and every
//!   tool that lists it (qwen, `status`, `recover`, an operator's `ls`) sees locks and side
//!   files only (QWEN_FORMAT §1.3);
//! * `status` reads every entry of the lock directory once per scan; the history costs it
//!   nothing, however long it grows.
//!
//! With `--lock DIR/NAME.lock` the history is `DIR/../writerctl-history/`, beside that lock
//! directory. The same trust rule as the lock directory (issue 22) applies to the parent,
//! the history directory and the log file: owned by the caller or root and writable by
//! nobody else (a trusted group aside); anything else is skipped with the reason, never
//! followed.
//!
//! # Calling sequence
//!
//! ```text
//! acquire / seal / takeover / release / recover / give_back   (committed)
//!   ─► HistoryEvent::of_lease / of_seal / of_release / ...     (no I/O)
//!   ─► record(&site.dir, &event)                               (one write(2); Err = a warning)
//! writerctl history ─► read(lock_dir_path, &query)              (both generations, oldest first)
//! ```
//!
//! A line is appended only after the step it records committed (a line for a step that did
//! not happen would lie); a crash between the step and the line loses the line, which is
//! why nothing may depend on it. A failure to append never fails the lock operation: the
//! caller gets it back as an error to print as a warning.
//!
//! # Bounded
//!
//! [`ROTATE_AT`] per generation, two generations: about 2 MiB whatever runs. The append and
//! rotation are [`super::sys::history_log::append_rotating`].

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::acquire::Lease;
use super::error::LockError;
use super::give_back::GaveBack;
use super::record::{LockRecord, format_timestamp, parse_timestamp};
use super::seal::SealOutcome;
use super::sys::history_log::{self, AppendError, CURRENT, PREVIOUS};
use super::sys::{self, Dir, FileMeta};
use super::trust;

/// The history directory's name, beside the lock directory.
pub const HISTORY_DIR: &str = "writerctl-history";
/// A generation is rotated when a line would take it past this many bytes (1 MiB).
pub const ROTATE_AT: u64 = 1 << 20;
/// At most this many bytes of a generation are read (a file grown past it by hand, or by
/// writers that lost the rotation election, is read from its tail).
pub const READ_CAP: u64 = 4 * ROTATE_AT;
/// Longest `--reason`, in bytes (UTF-8): a sentence or two, never a log dump.
pub const MAX_REASON_BYTES: usize = 512;

/// Why an operator did something (`--reason`): at most [`MAX_REASON_BYTES`] bytes, not
/// empty, no control characters (a history line is shown on terminals and must stay one
/// line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Reason(String);

/// What is wrong with `text` as a `--reason`, or `None`: empty (or only spaces), longer than
/// [`MAX_REASON_BYTES`], or holding a control character — a reason is printed in tables,
/// CSV and terminals, where a newline or an escape sequence would forge or hide lines of
/// someone else's row. The one rule for every `--reason`: the coordinator's
/// ([`crate::claim::names::validate_reason`]) is this one too.
pub fn reason_problem(text: &str) -> Option<String> {
    if text.trim().is_empty() {
        return Some("--reason must not be empty".into());
    }
    if text.len() > MAX_REASON_BYTES {
        return Some(format!("--reason is {} bytes; at most {MAX_REASON_BYTES} are kept", text.len()));
    }
    text.chars().find(|c| c.is_control()).map(|c| {
        format!("--reason contains the control character {c:?}; write it on one line without control characters")
    })
}

impl Reason {
    /// Validates `text` by [`reason_problem`] (`invalid_argument`, exit 2, when it breaks
    /// the rule).
    pub fn parse(text: &str) -> Result<Reason, LockError> {
        match reason_problem(text) {
            Some(problem) => Err(LockError::InvalidArgument(problem)),
            None => Ok(Reason(text.to_owned())),
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What happened to a session's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A new active lock where there was none.
    Acquire,
    /// A new active lock over a holder proven gone (`rule` says by what).
    Reclaim,
    /// The owner sealed its lock for a handoff.
    Seal,
    /// A certified takeover of a sealed lock.
    Takeover,
    /// The owner released its lock.
    Release,
    /// `recover --writers-fenced --yes` moved residue aside or restored a predecessor.
    Recover,
    /// A lock whose owner token reached nobody was given back (see [`super::give_back`]).
    GiveBack,
}

impl EventKind {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Acquire => "acquire",
            EventKind::Reclaim => "reclaim",
            EventKind::Seal => "seal",
            EventKind::Takeover => "takeover",
            EventKind::Release => "release",
            EventKind::Recover => "recover",
            EventKind::GiveBack => "give_back",
        }
    }
}

/// The holder an event replaced (reclaim, takeover).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Previous {
    /// Its hostname.
    pub host: String,
    /// Its pid.
    pub pid: u64,
    /// Its epoch (`writerctl_epoch`, 0 when absent).
    pub epoch: u64,
}

/// One line of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEvent {
    /// When the line was written (UTC, milliseconds), just after the step committed.
    pub at: String,
    /// The session.
    pub session_id: String,
    /// What happened.
    pub event: EventKind,
    /// The lock's epoch after the step (`writerctl_epoch`); null for `recover`.
    pub epoch: Option<u64>,
    /// The holder's host as the record names it (for `recover`: where it ran).
    pub host: String,
    /// The holder's pid as the record names it (for `recover`: writerctl's own).
    pub pid: u64,
    /// The holder's pod (`namespace/name`), when the record names one.
    pub pod: Option<String>,
    /// `--reason`, when given.
    pub reason: Option<Reason>,
    /// For `reclaim`: the rule that proved the previous holder gone
    /// (`container_restarted`, `statefulset_pod_replaced`, `holder_lock_released`,
    /// `process_gone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// For `reclaim` and `takeover`: the holder replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<Previous>,
    /// For `recover` and `give_back`: what was done, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The writerctl process that wrote the line (differs from `pid` with `--pid`).
    pub by_pid: u32,
    /// Its effective uid.
    pub by_uid: u32,
}

impl HistoryEvent {
    fn new(session_id: &str, event: EventKind, record: Option<&LockRecord>, reason: Option<&Reason>) -> HistoryEvent {
        let (epoch, host, pid, pod) = match record {
            Some(r) => (
                Some(r.owner.epoch),
                r.owner.hostname.clone(),
                r.owner.pid,
                r.owner.pod.as_ref().map(|p| format!("{}/{}", p.namespace, p.name)),
            ),
            None => (None, sys::hostname(), u64::from(sys::own_pid()), None),
        };
        HistoryEvent {
            at: format_timestamp(OffsetDateTime::now_utc()),
            session_id: session_id.to_owned(),
            event,
            epoch,
            host,
            pid,
            pod,
            reason: reason.cloned(),
            rule: None,
            previous: None,
            detail: None,
            by_pid: sys::own_pid(),
            by_uid: trust::caller_uid(),
        }
    }

    /// An acquisition: `takeover` of a seal, `reclaim` of a holder proven gone, or a plain
    /// `acquire`.
    pub fn of_lease(session_id: &str, lease: &Lease, reason: Option<&Reason>) -> HistoryEvent {
        if let Some(prev) = &lease.took_over {
            let mut e = HistoryEvent::new(session_id, EventKind::Takeover, Some(&lease.record), reason);
            e.previous = Some(Previous { host: prev.hostname.clone(), pid: prev.pid, epoch: prev.sealed.owner.epoch });
            return e;
        }
        if !lease.reclaimed {
            return HistoryEvent::new(session_id, EventKind::Acquire, Some(&lease.record), reason);
        }
        let mut e = HistoryEvent::new(session_id, EventKind::Reclaim, Some(&lease.record), reason);
        e.rule = Some(reclaim_rule(lease));
        // Issue 38: what the kernel proved, beside the rule it proved.
        e.detail = lease
            .recovered
            .as_ref()
            .filter(|r| !r.previous.evidence.is_empty())
            .map(|r| format!("evidence: {}", r.previous.evidence.join(", ")));
        e.previous = lease.replaced.as_ref().map(|r| Previous {
            host: r.owner.hostname.clone(),
            pid: r.owner.pid,
            epoch: r.owner.epoch,
        });
        e
    }

    /// A seal (the sealed record now at `L`).
    pub fn of_seal(session_id: &str, sealed: &SealOutcome, reason: Option<&Reason>) -> HistoryEvent {
        HistoryEvent::new(session_id, EventKind::Seal, Some(&sealed.record), reason)
    }

    /// A release of `released` (the exact record removed: [`super::ReleaseOutcome::record`],
    /// or the lease's own record).
    pub fn of_release(session_id: &str, released: &LockRecord, reason: Option<&Reason>) -> HistoryEvent {
        HistoryEvent::new(session_id, EventKind::Release, Some(released), reason)
    }

    /// A lease given back because its token reached nobody.
    pub fn of_give_back(session_id: &str, lease: &Lease, done: GaveBack, reason: Option<&Reason>) -> HistoryEvent {
        let mut e = HistoryEvent::new(session_id, EventKind::GiveBack, Some(&lease.record), reason);
        e.detail = Some(done.describe().to_owned());
        e
    }

    /// A recovery that changed something (`detail`: what), run by this process.
    pub fn of_recover(session_id: &str, detail: String, reason: Option<&Reason>) -> HistoryEvent {
        let mut e = HistoryEvent::new(session_id, EventKind::Recover, None, reason);
        e.detail = Some(detail);
        e
    }

    /// `at` as a time (`None` when a hand-edited line holds something else).
    pub fn time(&self) -> Option<OffsetDateTime> {
        parse_timestamp(&self.at)
    }
}

/// The rule a reclaim rested on, by the names `status` uses. A pod rule is recorded in the
/// new record; otherwise plain acquisition judged the old record by its holder lock when it
/// named one (the kernel released it), and by its pid when not (the process is gone, or the
/// pid belongs to another process now).
fn reclaim_rule(lease: &Lease) -> String {
    if let Some(r) = &lease.recovered {
        return r.previous.rule.clone();
    }
    match lease.replaced.as_ref().and_then(|r| r.owner.holder_lock.as_ref()) {
        Some(_) => "holder_lock_released".into(),
        None => "process_gone".into(),
    }
}

/// Why a history line was not written (never a reason to fail the lock operation).
#[derive(Debug, thiserror::Error)]
#[error("history not recorded ({path}): {reason}")]
pub struct HistoryError {
    /// Where.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// The history directory and its parent may only be changed by those the lock directory
/// trusts (issue 22): the same rule, on their own descriptors.
fn judge_dir(what: &str, meta: &FileMeta) -> Result<(), String> {
    trust::judge(meta, trust::caller_uid(), trust::trusted_groups()).map_err(|d| match d {
        trust::Distrust::ForeignOwner { owner, caller } => {
            format!("{what} is owned by uid {owner}, not by this user (uid {caller}) or root; skipped")
        }
        trust::Distrust::WritableByOthers { mode, .. } => {
            format!("{what} has mode {mode:04o}: others could replace the log; skipped (`chmod go-w` it)")
        }
    })
}

/// Where the history of the lock directory `lock_dir` is kept: its sibling `writerctl-history`.
pub fn history_dir(lock_dir: &Path) -> PathBuf {
    parent_of(lock_dir).join(HISTORY_DIR)
}

fn parent_of(lock_dir: &Path) -> PathBuf {
    match lock_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Opens (with `create`: makes) the history directory beside `lock_dir`, judging its parent
/// and itself. `Ok(None)`: there is none (and `create` was false).
fn open_history(lock_dir: &Path, create: bool) -> Result<Option<OwnedFd>, String> {
    let parent = parent_of(lock_dir);
    let Some((pfd, pmeta)) =
        history_log::open_dir_path(&parent).map_err(|e| format!("cannot open {}: {e}", parent.display()))?
    else {
        return Ok(None);
    };
    judge_dir(&parent.display().to_string(), &pmeta)?;
    let Some((hfd, meta)) = history_log::open_subdir(&pfd, OsStr::new(HISTORY_DIR), create)
        .map_err(|e| format!("cannot open {HISTORY_DIR}: {e} (a symlink there is never followed)"))?
    else {
        return Ok(None);
    };
    judge_dir(HISTORY_DIR, &meta)?;
    Ok(Some(hfd))
}

/// A log file is trusted when its owner is the caller or root and nobody else may write it
/// (a trusted group aside): otherwise its lines could be anyone's.
fn judge_file(meta: &FileMeta) -> Result<(), String> {
    let caller = trust::caller_uid();
    if meta.uid != caller && meta.uid != 0 {
        return Err(format!("the log is owned by uid {}, not by this user (uid {caller}) or root; skipped", meta.uid));
    }
    if trust::writable_by_strangers(meta.mode & 0o777, meta.gid, trust::trusted_groups()) {
        return Err(format!("the log has mode {:04o}: others could write lines into it; skipped", meta.mode & 0o777));
    }
    Ok(())
}

/// Appends `event` to the history beside the lock directory `dir` (creating
/// `writerctl-history/` 0700 when missing). Call it only after the step committed.
pub fn record(dir: &Dir, event: &HistoryEvent) -> Result<(), HistoryError> {
    record_at(dir.path(), event, ROTATE_AT)
}

fn record_at(lock_dir: &Path, event: &HistoryEvent, rotate_at: u64) -> Result<(), HistoryError> {
    let fail = |reason: String| HistoryError { path: history_dir(lock_dir).display().to_string(), reason };
    let hdir =
        open_history(lock_dir, true).map_err(fail)?.ok_or_else(|| fail("its parent directory is gone".into()))?;
    let mut line = serde_json::to_vec(event).map_err(|e| fail(e.to_string()))?;
    line.push(b'\n');
    history_log::append_rotating(&hdir, &line, rotate_at, &judge_file).map_err(|e| fail(e.to_string()))?;
    Ok(())
}

/// Which events [`read`] returns.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Only this session.
    pub session: Option<String>,
    /// Only events at or after this time.
    pub since: Option<OffsetDateTime>,
    /// Only the newest N (after the other filters); `None`: all.
    pub limit: Option<usize>,
}

/// What [`read`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryRead {
    /// Matching events, oldest first (the order they were appended).
    pub events: Vec<HistoryEvent>,
    /// Lines that were not an event (a torn last line after a crash, garbage): skipped.
    pub skipped_lines: usize,
    /// Generations or directories that were not read, each with why.
    pub warnings: Vec<String>,
}

/// Reads both generations of the history beside the lock directory `lock_dir`, older
/// first. A missing history is empty; a torn or garbage line is counted and skipped; an
/// untrusted file or directory is skipped with a warning. Never an error: the history is
/// advisory, and a command reading it reports what it could not read.
pub fn read(lock_dir: &Path, query: &Query) -> HistoryRead {
    let mut out = HistoryRead::default();
    let hdir = match open_history(lock_dir, false) {
        Ok(Some(h)) => h,
        Ok(None) => return out,
        Err(why) => {
            out.warnings.push(why);
            return out;
        }
    };
    for name in [PREVIOUS, CURRENT] {
        match history_log::read_generation(&hdir, name, READ_CAP, &judge_file) {
            Ok(None) => {}
            Ok(Some((bytes, cut))) => parse_lines(&bytes, cut, query, &mut out),
            Err(AppendError::Untrusted(why)) => out.warnings.push(format!("{name}: {why}")),
            Err(e) => out.warnings.push(format!("{name} not read: {e}")),
        }
    }
    if let Some(n) = query.limit {
        let extra = out.events.len().saturating_sub(n);
        out.events.drain(..extra);
    }
    out
}

/// Parses one generation's bytes into `out`: every complete line that is an event and
/// matches `query`. `cut`: the bytes start mid-file, so the first line is partial.
fn parse_lines(bytes: &[u8], cut: bool, query: &Query, out: &mut HistoryRead) {
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    // The piece after the last newline is empty for a whole file, and a torn line otherwise.
    if let Some(last) = lines.pop()
        && !last.is_empty()
    {
        out.skipped_lines += 1;
    }
    if cut && !lines.is_empty() {
        lines.remove(0);
        out.skipped_lines += 1;
    }
    for line in lines.into_iter().filter(|l| !l.is_empty()) {
        let Ok(event) = serde_json::from_slice::<HistoryEvent>(line) else {
            out.skipped_lines += 1;
            continue;
        };
        if query.session.as_ref().is_some_and(|s| *s != event.session_id) {
            continue;
        }
        if let Some(since) = query.since
            && event.time().is_none_or(|t| t < since)
        {
            continue;
        }
        out.events.push(event);
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A lock directory `locks` in a fresh directory; the history goes beside it.
    fn site() -> (tempfile::TempDir, Dir) {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("locks")).unwrap();
        let d = Dir::open(&t.path().join("locks")).unwrap();
        (t, d)
    }

    fn event(session: &str, kind: EventKind, at: &str) -> HistoryEvent {
        let mut e = HistoryEvent::new(session, kind, None, Some(&Reason::parse("why not").unwrap()));
        e.at = at.to_owned();
        e
    }

    #[test]
    fn a_reason_is_short_single_line_text() {
        assert_eq!(Reason::parse("node drain for kernel update").unwrap().as_str(), "node drain for kernel update");
        assert!(Reason::parse("é".repeat(MAX_REASON_BYTES / 2).as_str()).is_ok());
        for bad in ["", "  ", "two\nlines", "bell\x07", "esc\x1b[2J", "nul\0"] {
            let e = Reason::parse(bad).unwrap_err();
            assert_eq!(e.code().exit_code(), 2, "{bad:?}");
            assert_eq!(e.code().as_str(), "invalid_argument");
        }
        assert!(Reason::parse(&"x".repeat(MAX_REASON_BYTES + 1)).unwrap_err().to_string().contains("513 bytes"));
    }

    #[test]
    fn events_round_trip_oldest_first_with_filters() {
        let (_t, d) = site();
        record(&d, &event("a", EventKind::Acquire, "2026-01-01T00:00:00.000Z")).unwrap();
        record(&d, &event("b", EventKind::Acquire, "2026-01-02T00:00:00.000Z")).unwrap();
        record(&d, &event("a", EventKind::Seal, "2026-01-03T00:00:00.000Z")).unwrap();
        record(&d, &event("a", EventKind::Takeover, "2026-01-04T00:00:00.000Z")).unwrap();
        let all = read(d.path(), &Query::default());
        let kinds: Vec<_> = all.events.iter().map(|e| (e.session_id.as_str(), e.event)).collect();
        assert_eq!(
            kinds,
            [("a", EventKind::Acquire), ("b", EventKind::Acquire), ("a", EventKind::Seal), ("a", EventKind::Takeover)]
        );
        assert_eq!(all.events[0].reason.as_ref().unwrap().as_str(), "why not");
        let a = read(d.path(), &Query { session: Some("a".into()), ..Query::default() });
        assert_eq!(a.events.len(), 3);
        let since = parse_timestamp("2026-01-02T00:00:00Z");
        let recent = read(d.path(), &Query { since, ..Query::default() });
        assert_eq!(recent.events.len(), 3);
        let last = read(d.path(), &Query { session: Some("a".into()), limit: Some(2), ..Query::default() });
        assert_eq!(last.events.iter().map(|e| e.event).collect::<Vec<_>>(), [EventKind::Seal, EventKind::Takeover]);
    }

    #[test]
    fn a_torn_last_line_and_garbage_are_skipped_and_counted() {
        let (t, d) = site();
        record(&d, &event("a", EventKind::Acquire, "2026-01-01T00:00:00.000Z")).unwrap();
        let log = t.path().join(HISTORY_DIR).join(CURRENT);
        let mut bytes = std::fs::read(&log).unwrap();
        bytes.extend_from_slice(b"not json\n{\"at\":\"2026-01-02T0");
        std::fs::write(&log, &bytes).unwrap();
        let r = read(d.path(), &Query::default());
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.skipped_lines, 2);
        // The next append starts on a line of its own: only the torn piece is lost.
        record(&d, &event("a", EventKind::Seal, "2026-01-03T00:00:00.000Z")).unwrap();
        let r = read(d.path(), &Query::default());
        assert_eq!(r.events.iter().map(|e| e.event).collect::<Vec<_>>(), [EventKind::Acquire, EventKind::Seal]);
        assert_eq!(r.skipped_lines, 2);
    }

    #[test]
    fn both_generations_are_read_across_a_rotation() {
        let (_t, d) = site();
        let one = serde_json::to_vec(&event("a", EventKind::Acquire, "2026-01-01T00:00:00.000Z")).unwrap().len() as u64;
        // Room for two lines per generation.
        let limit = 2 * (one + 1);
        for (i, kind) in [EventKind::Acquire, EventKind::Seal, EventKind::Takeover].into_iter().enumerate() {
            record_at(d.path(), &event("a", kind, &format!("2026-01-0{}T00:00:00.000Z", i + 1)), limit).unwrap();
        }
        let r = read(d.path(), &Query::default());
        assert_eq!(
            r.events.iter().map(|e| e.event).collect::<Vec<_>>(),
            [EventKind::Acquire, EventKind::Seal, EventKind::Takeover]
        );
        assert_eq!(r.skipped_lines, 0);
    }

    #[test]
    fn an_untrusted_history_is_skipped_with_a_reason_never_followed() {
        let (t, d) = site();
        // A symlinked history directory pointing elsewhere: neither written nor read.
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), t.path().join(HISTORY_DIR)).unwrap();
        let e = record(&d, &event("a", EventKind::Acquire, "2026-01-01T00:00:00.000Z")).unwrap_err();
        assert!(e.to_string().contains("history not recorded"), "{e}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
        let r = read(d.path(), &Query::default());
        assert!(r.events.is_empty());
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        // A directory others can write: skipped on both sides.
        std::fs::remove_file(t.path().join(HISTORY_DIR)).unwrap();
        record(&d, &event("a", EventKind::Acquire, "2026-01-01T00:00:00.000Z")).unwrap();
        std::fs::set_permissions(t.path().join(HISTORY_DIR), std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = record(&d, &event("a", EventKind::Seal, "2026-01-02T00:00:00.000Z")).unwrap_err();
        assert!(e.reason.contains("0777"), "{e}");
        let r = read(d.path(), &Query::default());
        assert!(r.events.is_empty() && r.warnings[0].contains("0777"), "{r:?}");
        // A log file others can write: its lines are not believed.
        std::fs::set_permissions(t.path().join(HISTORY_DIR), std::fs::Permissions::from_mode(0o700)).unwrap();
        let log = t.path().join(HISTORY_DIR).join(CURRENT);
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
        let r = read(d.path(), &Query::default());
        assert!(r.events.is_empty() && r.warnings[0].contains("0666"), "{r:?}");
        assert!(record(&d, &event("a", EventKind::Seal, "2026-01-02T00:00:00.000Z")).is_err());
    }

    #[test]
    fn the_json_line_names_the_contract_keys() {
        let v = serde_json::to_value(event("s", EventKind::GiveBack, "2026-01-01T00:00:00.000Z")).unwrap();
        for key in ["at", "session_id", "event", "epoch", "host", "pid", "pod", "reason", "by_pid", "by_uid"] {
            assert!(v.get(key).is_some(), "{key} missing from {v}");
        }
        assert_eq!(v["event"], "give_back");
        assert!(v.get("rule").is_none(), "absent unless a reclaim");
    }

    #[test]
    fn the_history_is_kept_beside_the_lock_directory_never_in_it() {
        let (t, d) = site();
        record(&d, &event("a", EventKind::Acquire, "2026-01-01T00:00:00.000Z")).unwrap();
        assert_eq!(std::fs::read_dir(t.path().join("locks")).unwrap().count(), 0, "the lock directory stays qwen's");
        assert!(t.path().join(HISTORY_DIR).join(CURRENT).is_file());
        assert_eq!(history_dir(d.path()), t.path().join(HISTORY_DIR));
        assert_eq!(history_dir(Path::new("locks")), Path::new(".").join(HISTORY_DIR));
    }
}
