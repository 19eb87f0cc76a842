//! Lock-directory metrics in the Prometheus text exposition format (version 0.0.4), for
//! `writerctl status --format prometheus [--output F]`.
//!
//! # Calling sequence
//!
//! ```text
//! let started = Instant::now();
//! let all = status::status_all(R, &SystemProbe)?;           // the ordinary read-only scan
//! let m = LockDirMetrics::summarize(&all, started.elapsed(), SystemTime::now());
//! let text = m.render(R);                                    // exposition text
//! publish_atomically(Path::new("/var/lib/node_exporter/textfile/writerctl.prom"), text.as_bytes())?;
//! ```
//!
//! # Guarantees
//!
//! * Read-only: the numbers come from what [`super::status`] already classified; nothing
//!   here opens a lock directory or hashes a transcript.
//! * Bounded labels: `state` and `kind` take a fixed set of values, every one of them always
//!   emitted (0 when none) so that an alert on a state that just appeared has a series to
//!   compare against; `runtime_dir` is the directory scanned (one per configured directory).
//!   A session id, an owner id, a hostname or a pid never becomes a label value.
//! * [`publish_atomically`]: a reader (node_exporter's textfile collector) sees the previous
//!   file or the new one, never a partial write, and no temp file is left behind by a
//!   failure it can observe. A crash (SIGKILL, power loss) between create and rename leaves
//!   one `.NAME.<uuid>.tmp` file; its name does not end in `.prom`, so the collector
//!   ignores it.
//!
//! # Ages
//!
//! The oldest sealed record's age comes from its `sealed_at` (written by the sealing host's
//! clock); the oldest transition claim's age from its file's mtime (see
//! [`super::sys::Dir::modified`]). A time in the future (clock skew between hosts) counts
//! as age 0. Both are 0 when there is no such record.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::paths::SideKind;
use super::record::parse_timestamp;
use super::status::{LockState, SessionStatus};
use super::sys::{Dir, is_eexist, is_enoent};
use crate::error::ErrorCode;

/// The `state` label of `writerctl_locks`: a lock's state as an operator alerts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MetricState {
    /// Active, and counted live (running, or fenced: another host, boot or namespace).
    ActiveLive,
    /// Active, and provably gone (plain `acquire` would reclaim it).
    ActiveStale,
    /// Sealed for handoff, waiting for a certified takeover.
    Sealed,
    /// A transition claim exists (a seal or takeover running, or crashed mid-way).
    InTransition,
    /// No valid record for this session at the lock path.
    Malformed,
}

impl MetricState {
    /// Every state, in output order.
    pub const ALL: [MetricState; 5] = [
        MetricState::ActiveLive,
        MetricState::ActiveStale,
        MetricState::Sealed,
        MetricState::InTransition,
        MetricState::Malformed,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            MetricState::ActiveLive => "active_live",
            MetricState::ActiveStale => "active_stale",
            MetricState::Sealed => "sealed",
            MetricState::InTransition => "in_transition",
            MetricState::Malformed => "malformed",
        }
    }

    /// The metric state of one session; `None` for a session with no lock (side files only).
    pub fn of(s: &SessionStatus) -> Option<MetricState> {
        Some(match s.state {
            LockState::Missing => return None,
            // An active record whose liveness is unknown is counted live: fail closed, as
            // `status` and `acquire` do.
            LockState::Active if s.live == Some(false) => MetricState::ActiveStale,
            LockState::Active => MetricState::ActiveLive,
            LockState::Sealed => MetricState::Sealed,
            LockState::InTransition => MetricState::InTransition,
            LockState::Malformed => MetricState::Malformed,
        })
    }
}

/// Every side-file kind `status` reports (the transition claim is counted as `in_transition`
/// instead), in output order, with its label value (the same word `status --json` uses).
pub const SIDE_KINDS: [(SideKind, &str); 8] = [
    (SideKind::Released, "released"),
    (SideKind::SealedCandidate, "sealed_candidate"),
    (SideKind::Handoff, "handoff"),
    (SideKind::SealedRetired, "sealed_retired"),
    (SideKind::Stale, "stale"),
    (SideKind::ReclaimGuard, "reclaim_guard"),
    (SideKind::InstallTemp, "install_temp"),
    (SideKind::Unknown, "unknown"),
];

/// What one scan of a runtime directory says, as numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct LockDirMetrics {
    /// Locks by state, in [`MetricState::ALL`] order.
    pub locks: [u64; 5],
    /// Side files by kind, in [`SIDE_KINDS`] order.
    pub side_files: [u64; 8],
    /// Age of the oldest sealed record (state `sealed`), zero when none.
    pub oldest_sealed_age: Duration,
    /// Age of the oldest transition claim, zero when none.
    pub oldest_transition_claim_age: Duration,
    /// How long the scan took.
    pub scan_duration: Duration,
    /// When the scan finished.
    pub scanned_at: SystemTime,
}

impl LockDirMetrics {
    /// Counts `sessions` (as `status_all` or `status_one` returned them) as of `now`.
    pub fn summarize(sessions: &[SessionStatus], scan_duration: Duration, now: SystemTime) -> LockDirMetrics {
        let mut m = LockDirMetrics {
            locks: [0; 5],
            side_files: [0; 8],
            oldest_sealed_age: Duration::ZERO,
            oldest_transition_claim_age: Duration::ZERO,
            scan_duration,
            scanned_at: now,
        };
        for s in sessions {
            if let Some(state) = MetricState::of(s) {
                m.locks[MetricState::ALL.iter().position(|x| *x == state).unwrap_or(0)] += 1;
            }
            for f in &s.side_files {
                if let Some(i) = SIDE_KINDS.iter().position(|(k, _)| *k == f.kind) {
                    m.side_files[i] += 1;
                }
            }
            if s.state == LockState::Sealed
                && let Some(at) = s.proof.as_ref().and_then(|p| sealed_at(&p.sealed_at))
            {
                m.oldest_sealed_age = m.oldest_sealed_age.max(age(at, now));
            }
            if let Some(at) = s.transition_claim.as_ref().and_then(|c| c.modified) {
                m.oldest_transition_claim_age = m.oldest_transition_claim_age.max(age(at, now));
            }
        }
        m
    }

    /// The exposition text: HELP and TYPE for every family, every label value present,
    /// each series labelled with `runtime_dir`.
    pub fn render(&self, runtime_dir: &Path) -> String {
        let dir = escape_label_value(&runtime_dir.to_string_lossy());
        let mut out = String::new();
        family(
            &mut out,
            "writerctl_locks",
            "Session lock files under the runtime directory by state (every state, 0 when none).",
        );
        for (state, n) in MetricState::ALL.iter().zip(self.locks) {
            let _ = writeln!(out, "writerctl_locks{{runtime_dir=\"{dir}\",state=\"{}\"}} {n}", state.label());
        }
        family(
            &mut out,
            "writerctl_side_files",
            "Files left beside session locks by kind (every kind, 0 when none); `writerctl status` explains each.",
        );
        for ((_, kind), n) in SIDE_KINDS.iter().zip(self.side_files) {
            let _ = writeln!(out, "writerctl_side_files{{runtime_dir=\"{dir}\",kind=\"{kind}\"}} {n}");
        }
        let gauges = [
            (
                "writerctl_oldest_sealed_age_seconds",
                "Seconds since the oldest sealed record not yet taken over was sealed (its sealed_at); 0 when none.",
                seconds(self.oldest_sealed_age),
            ),
            (
                "writerctl_oldest_claim_age_seconds",
                "Seconds since the oldest transition claim (L.claim) was written (its mtime); 0 when none.",
                seconds(self.oldest_transition_claim_age),
            ),
            (
                "writerctl_status_scan_duration_seconds",
                "How long the scan of the lock directory took.",
                seconds(self.scan_duration),
            ),
            (
                "writerctl_status_scan_timestamp_seconds",
                "Unix time the scan finished; compare with time() to detect a stale textfile.",
                seconds(self.scanned_at.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default()),
            ),
        ];
        for (name, help, value) in gauges {
            family(&mut out, name, help);
            let _ = writeln!(out, "{name}{{runtime_dir=\"{dir}\"}} {value}");
        }
        out
    }
}

fn family(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
}

fn seconds(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}

fn sealed_at(text: &str) -> Option<SystemTime> {
    let t = parse_timestamp(text)?;
    let nanos = t.unix_timestamp_nanos();
    let since = Duration::from_nanos(u64::try_from(nanos).ok()?);
    Some(SystemTime::UNIX_EPOCH + since)
}

/// `now - then`, or zero when `then` is in the future (clock skew).
fn age(then: SystemTime, now: SystemTime) -> Duration {
    now.duration_since(then).unwrap_or_default()
}

/// A label value as the exposition format requires: backslash, double quote and line feed
/// escaped.
pub fn escape_label_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Why [`publish_atomically`] did not replace the file.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The directory that should hold the file does not exist (it is never created).
    #[error("output directory {} does not exist", .0.display())]
    DirectoryMissing(PathBuf),
    /// The output's parent is not a directory, or is a symlink (never followed).
    #[error("output directory {} is not a directory (or is a symlink)", .0.display())]
    NotADirectory(PathBuf),
    /// The output path names no file (`/`, `..`, or ends in `/`).
    #[error("output path {} does not name a file", .0.display())]
    NoFileName(PathBuf),
    /// A step failed; the previous file, if any, is unchanged.
    #[error("could not write {}: {step}", .path.display())]
    Io {
        /// The output path.
        path: PathBuf,
        /// Which step failed.
        step: &'static str,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

impl PublishError {
    /// The stable code: a bad path is `invalid_argument` (exit 2), a failed write `internal`.
    pub fn code(&self) -> ErrorCode {
        match self {
            PublishError::DirectoryMissing(_) | PublishError::NotADirectory(_) | PublishError::NoFileName(_) => {
                ErrorCode::InvalidArgument
            }
            PublishError::Io { .. } => ErrorCode::Internal,
        }
    }

    /// What to do next.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            PublishError::DirectoryMissing(_) | PublishError::NotADirectory(_) => {
                "point --output at a file in an existing directory (node_exporter's --collector.textfile.directory)"
                    .into()
            }
            PublishError::NoFileName(_) => "name a file, e.g. --output /var/lib/node_exporter/writerctl.prom".into(),
            PublishError::Io { .. } => {
                "the previous file, if any, is unchanged; check the directory's permissions and free space".into()
            }
        })
    }
}

/// `ENOTDIR`, or `ELOOP` (a symlink where `O_NOFOLLOW|O_DIRECTORY` wants a directory).
fn is_not_a_directory(e: &io::Error) -> bool {
    use rustix::io::Errno;
    [Errno::NOTDIR, Errno::LOOP].iter().any(|n| e.raw_os_error() == Some(n.raw_os_error()))
}

/// Replaces `path` with `bytes` atomically, mode 0644: a reader sees the old file or the new
/// one, never a mix, and after a successful return the new file survives a power loss.
///
/// Sequence, all relative to one descriptor of the parent directory (never created):
/// 1. create `.<name>.<uuid>.tmp` with `O_CREAT|O_EXCL|O_NOFOLLOW` (a name nobody else
///    uses; a file already there is never truncated or followed), `fchmod` 0644 (the umask
///    of a cron job must not hide the file from node_exporter), write, `fsync`;
/// 2. `renameat` it over `name` (atomic replacement within one directory);
/// 3. `fsync` the directory, so the rename itself is durable.
///
/// On a failure in step 1 or 2 the temp file is unlinked (unless creating it failed with
/// `EEXIST`: then it is not ours) and the previous file stays as it was.
pub fn publish_atomically(path: &Path, bytes: &[u8]) -> Result<(), PublishError> {
    let name = match path.file_name() {
        Some(n) if !path.as_os_str().as_encoded_bytes().ends_with(b"/") => n,
        _ => return Err(PublishError::NoFileName(path.to_path_buf())),
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = Dir::open(parent).map_err(|e| {
        if is_enoent(&e) {
            PublishError::DirectoryMissing(parent.to_path_buf())
        } else if is_not_a_directory(&e) {
            PublishError::NotADirectory(parent.to_path_buf())
        } else {
            PublishError::Io { path: path.to_path_buf(), step: "open its directory", source: e }
        }
    })?;
    let io_err = |step, source| PublishError::Io { path: path.to_path_buf(), step, source };
    let temp = format!(".{}.{}.tmp", name.to_string_lossy(), uuid::Uuid::new_v4().simple());
    let temp = OsStr::new(&temp);
    if let Err(e) = dir.create_new_synced_mode(temp, bytes, Some(0o644)) {
        if !is_eexist(&e) {
            let _ = dir.unlink(temp);
        }
        return Err(io_err("write a temp file", e));
    }
    if let Err(e) = dir.rename(temp, name) {
        let _ = dir.unlink(temp);
        return Err(io_err("rename the temp file over it", e));
    }
    dir.sync().map_err(|e| match e {
        super::sys::DirSyncError::Io(e) => io_err("fsync its directory", e),
        super::sys::DirSyncError::Changed => {
            io_err("fsync its directory", io::Error::other("the directory was replaced while writing"))
        }
    })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::lockfile::status::{ProofView, SideFileView, TransitionClaimView};

    /// A session with nothing on disk (what `status` says about an absent lock directory),
    /// then set to `state`.
    fn session(state: LockState) -> SessionStatus {
        let r = tempfile::tempdir().unwrap();
        let paths = crate::lockfile::LockPaths {
            dir: r.path().join(crate::lockfile::paths::LOCK_SUBDIR),
            lock_name: "secret-session.lock".into(),
        };
        let probe = crate::lockfile::SystemProbe;
        let mut s = crate::lockfile::status_one(r.path(), &paths, "secret-session", None, &probe).unwrap();
        assert_eq!(s.state, LockState::Missing);
        s.state = state;
        s
    }

    fn sealed(at: &str) -> SessionStatus {
        let mut s = session(LockState::Sealed);
        s.proof = Some(ProofView {
            sealed_at: at.into(),
            transcript: crate::lockfile::record::TranscriptProof {
                relative_path: "chats/x.jsonl".into(),
                exists: true,
                byte_length: 0,
                sha256: "a".repeat(64),
            },
            matches: None,
            mismatch: None,
            identity: None,
            exclusive: None,
        });
        s
    }

    fn in_transition(modified: SystemTime) -> SessionStatus {
        let mut s = session(LockState::InTransition);
        s.transition_claim = Some(TransitionClaimView {
            file_type: "regular file",
            valid_record: true,
            owner: None,
            modified: Some(modified),
        });
        s
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    // 2026-07-28T00:00:00Z
    const T0: u64 = 1_785_196_800;

    #[test]
    fn counts_every_state_and_side_kind_and_the_oldest_ages() {
        let mut live = session(LockState::Active);
        live.live = Some(true);
        let mut stale = session(LockState::Active);
        stale.live = Some(false);
        stale.side_files.push(SideFileView { name: "x".into(), kind: SideKind::Stale, meaning: "" });
        let mut residue = session(LockState::Missing);
        residue.side_files.push(SideFileView { name: "y".into(), kind: SideKind::InstallTemp, meaning: "" });
        residue.side_files.push(SideFileView { name: "z".into(), kind: SideKind::InstallTemp, meaning: "" });
        let all = vec![
            live,
            stale,
            sealed("2026-07-28T00:00:00.000Z"),
            sealed("2026-07-28T00:01:00.000Z"),
            in_transition(at(T0 + 100)),
            in_transition(at(T0 + 10)),
            session(LockState::Malformed),
            residue,
        ];
        let m = LockDirMetrics::summarize(&all, Duration::from_millis(12), at(T0 + 300));
        assert_eq!(m.locks, [1, 1, 2, 2, 1]);
        assert_eq!(m.side_files, [0, 0, 0, 0, 1, 0, 2, 0]);
        assert_eq!(m.oldest_sealed_age, Duration::from_secs(300));
        assert_eq!(m.oldest_transition_claim_age, Duration::from_secs(290));
    }

    #[test]
    fn unknown_liveness_counts_live_and_future_times_count_zero() {
        let all = vec![session(LockState::Active), sealed("2026-07-28T01:00:00.000Z"), in_transition(at(T0 + 3600))];
        let m = LockDirMetrics::summarize(&all, Duration::ZERO, at(T0));
        assert_eq!(m.locks, [1, 0, 1, 1, 0]);
        assert_eq!(m.oldest_sealed_age, Duration::ZERO);
        assert_eq!(m.oldest_transition_claim_age, Duration::ZERO);
    }

    #[test]
    fn side_kind_labels_are_the_words_status_json_uses() {
        for (kind, label) in SIDE_KINDS {
            assert_eq!(serde_json::to_value(kind).unwrap(), serde_json::json!(label));
        }
    }

    #[test]
    fn render_has_every_series_no_session_id_and_escaped_labels() {
        let m = LockDirMetrics::summarize(&[sealed("2026-07-28T00:00:00.000Z")], Duration::from_millis(5), at(T0 + 61));
        let text = m.render(Path::new("/r/a\"b\\c"));
        assert!(!text.contains("secret-session"), "{text}");
        assert!(text.contains("writerctl_locks{runtime_dir=\"/r/a\\\"b\\\\c\",state=\"sealed\"} 1\n"), "{text}");
        assert!(text.contains("writerctl_locks{runtime_dir=\"/r/a\\\"b\\\\c\",state=\"malformed\"} 0\n"), "{text}");
        assert!(
            text.contains("writerctl_oldest_sealed_age_seconds{runtime_dir=\"/r/a\\\"b\\\\c\"} 61.000\n"),
            "{text}"
        );
        assert!(text.contains("writerctl_status_scan_duration_seconds{runtime_dir=\"/r/a\\\"b\\\\c\"} 0.005\n"));
        assert!(text.contains(&format!(
            "writerctl_status_scan_timestamp_seconds{{runtime_dir=\"/r/a\\\"b\\\\c\"}} {}.000\n",
            T0 + 61
        )));
        let series = text.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(series, 5 + 8 + 4);
        assert_eq!(text.lines().filter(|l| l.starts_with("# TYPE")).count(), 6);
        assert_eq!(escape_label_value("a\nb"), "a\\nb");
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    }

    #[test]
    fn publish_replaces_the_file_whole_with_mode_0644_and_leaves_no_temp() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("writerctl.prom");
        publish_atomically(&out, b"first\n").unwrap();
        publish_atomically(&out, b"second\n").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"second\n");
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o644);
        assert_eq!(names(t.path()), vec!["writerctl.prom"]);
    }

    #[test]
    fn publish_refuses_a_missing_directory_and_a_path_without_a_file_name() {
        let t = tempfile::tempdir().unwrap();
        let e = publish_atomically(&t.path().join("absent/m.prom"), b"x").unwrap_err();
        assert!(matches!(e, PublishError::DirectoryMissing(_)), "{e:?}");
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        std::fs::write(t.path().join("file"), b"").unwrap();
        let e = publish_atomically(&t.path().join("file/m.prom"), b"x").unwrap_err();
        assert!(matches!(e, PublishError::NotADirectory(_)), "{e:?}");
        let e = publish_atomically(&t.path().join("sub/"), b"x").unwrap_err();
        assert!(matches!(e, PublishError::NoFileName(_)), "{e:?}");
        assert_eq!(names(t.path()), vec!["file"]);
    }

    #[test]
    fn a_failed_rename_unlinks_the_temp_and_keeps_what_was_there() {
        let t = tempfile::tempdir().unwrap();
        // A directory at the output name: the rename fails (EISDIR) after the temp exists.
        std::fs::create_dir(t.path().join("m.prom")).unwrap();
        let e = publish_atomically(&t.path().join("m.prom"), b"x").unwrap_err();
        assert!(matches!(e, PublishError::Io { step: "rename the temp file over it", .. }), "{e:?}");
        assert_eq!(e.code(), ErrorCode::Internal);
        assert_eq!(names(t.path()), vec!["m.prom"]);
        assert!(t.path().join("m.prom").is_dir());
    }
}
