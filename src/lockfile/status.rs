//! The read-only classifier behind `writerctl status`: what is on disk for one session (or
//! every session under R), what it means, and the next safe step. It never writes, never
//! creates the lock directory, and never reports an owner id.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::LockError;
use super::exclusive::prove_beneath;
use super::holder_lock::residue_is_free;
use super::identity::{LocalDomain, ProcessProbe};
use super::liveness::{LiveReason, Liveness, StaleReason};
use super::paths::{
    Entry, LOCK_SUBDIR, LockPaths, SideKind, decode_uri_component, owner_of, redact_side_file_name, side_kind_of,
};
use super::primitives::{Inspection, inspect_record, inspect_records_read};
use super::record::{LockRecord, OwnerFields, Schema, TranscriptProof, parse_record};
use super::site::{TranscriptRef, check_runtime_dir, open_lock_dir};
use super::sys::{Dir, ReadRegular, is_enoent};
use super::tail_repair::kept_cut_files;
use super::transcript::{ProofOptions, Tail, open_tail, read_proof};

/// The coarse state of a session's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LockState {
    /// No primary lock.
    Missing,
    /// An active record (see `live`).
    Active,
    /// A sealed handoff record.
    Sealed,
    /// Something that is not a valid record for this session.
    Malformed,
    /// A transition claim exists.
    InTransition,
}

/// Owner diagnostics without the owner id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OwnerView {
    /// Schema version of the record.
    pub schema_version: u8,
    /// `format_version` for schema 3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format_version: Option<u64>,
    /// What the record says about its holder, flattened into the view.
    #[serde(flatten)]
    pub holder: OwnerFields,
    /// The rule that allowed the last reclaim (`recovered_from.rule`), for scripts.
    pub rule: Option<String>,
}

impl OwnerView {
    /// The diagnostics of `r` (never its owner id).
    pub fn of(r: &LockRecord) -> OwnerView {
        OwnerView {
            schema_version: r.schema.number(),
            format_version: match r.schema {
                Schema::V3 { format_version } => Some(format_version),
                _ => None,
            },
            holder: r.owner.clone(),
            rule: r.owner.recovered_from.as_ref().map(|f| f.rule.clone()),
        }
    }
}

/// Liveness verdict with its reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LivenessView {
    /// Stable short code (`running`, `process_gone`, `foreign_host`, …).
    pub code: &'static str,
    /// Operator sentence.
    pub description: &'static str,
}

/// The sealed proof as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProofView {
    /// `sealed_at`.
    pub sealed_at: String,
    /// The recorded transcript facts.
    #[serde(flatten)]
    pub transcript: TranscriptProof,
    /// Whether the proof matches the transcript now (`None`: not checked — status of every
    /// session does not hash transcripts).
    pub matches: Option<bool>,
    /// Why it does not match (sanitized; never the transcript path).
    pub mismatch: Option<String>,
    /// writerctl's identity extension, when present (not serialized).
    #[serde(skip)]
    pub identity: Option<super::record::SealedIdentity>,
    /// `writerctl_exclusive`: how the sealer proved no other open file description could
    /// write the transcript (see [`super::exclusive`]); `None` when the seal does not say.
    pub exclusive: Option<String>,
}

/// The transition claim file, if present.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TransitionClaimView {
    /// File type found at `L.claim`.
    pub file_type: &'static str,
    /// Whether it holds a valid record.
    pub valid_record: bool,
    /// Its owner diagnostics, when valid.
    pub owner: Option<OwnerView>,
    /// When it was written (its own mtime, see [`super::sys::Dir::modified`]); for the
    /// transition-claim age metric, not serialized.
    #[serde(skip)]
    pub modified: Option<std::time::SystemTime>,
}

/// One file beside the lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideFileView {
    /// File name, with owner ids replaced by `<owner:xxxxxxxx>` fingerprints.
    pub name: String,
    /// What kind of side file.
    pub kind: SideKind,
    /// What it means.
    pub meaning: &'static str,
}

/// Everything `status` reports about one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionStatus {
    /// Session id (from the argument, else decoded from the file name).
    pub session_id: String,
    /// Full path of `L`.
    pub lock_path: PathBuf,
    /// Coarse state.
    pub state: LockState,
    /// Owner diagnostics of the primary record (no owner id).
    pub owner: Option<OwnerView>,
    /// For an active record: whether it counts as live (fenced).
    pub live: Option<bool>,
    /// For an active record: why.
    pub liveness: Option<LivenessView>,
    /// True for qwen's managed schema 3, which writerctl never reclaims or takes over.
    pub managed_schema: bool,
    /// For a sealed record: the recorded proof.
    pub proof: Option<ProofView>,
    /// The transition claim, if any.
    #[serde(rename = "claim")]
    pub transition_claim: Option<TransitionClaimView>,
    /// Every other file that belongs to this lock.
    pub side_files: Vec<SideFileView>,
    /// What is wrong, for malformed or in-transition states.
    pub problem: Option<String>,
    /// The next safe step, in words.
    pub next_step: String,
    /// How the session's transcript ends (`None` when not looked at: the status of every
    /// session reads no transcript).
    pub transcript_tail: Option<TailView>,
}

/// How a transcript ends (issue 38): where its last complete line ends, and the cut bytes
/// an earlier repair kept beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TailView {
    /// `clean` (absent, empty, or ending in a newline) or `torn`.
    pub state: &'static str,
    /// Where the last complete line ends (the offset just past the last newline); equal to
    /// `length` when clean.
    pub complete_bytes: u64,
    /// The transcript's length (0 when absent).
    pub length: u64,
    /// Side files beside the transcript holding cut bytes `recover` kept (keys beneath the
    /// runtime directory).
    pub kept_cut_files: Vec<String>,
}

/// Status of every session under `runtime_dir` (sorted by lock file name), plus sessions that
/// have only side files left.
///
/// Cost: one listing, one read of every entry ([`scan_directory`]), an `lstat` per transition
/// claim the listing shows, and at most one malformed-record pause for the whole directory.
/// Nothing here may be per (session × entry): at 10,000 locks that was 12 s.
pub fn status_all(runtime_dir: &Path, probe: &dyn ProcessProbe) -> Result<Vec<SessionStatus>, LockError> {
    check_runtime_dir(runtime_dir)?;
    let dir_path = runtime_dir.join(LOCK_SUBDIR);
    let dir = match open_existing(&dir_path)? {
        Some(d) => d,
        None => return Ok(Vec::new()),
    };
    let scanned = scan_directory(&dir, probe)?;
    Ok(scanned
        .sessions
        .into_iter()
        .map(|(g, primary)| {
            let paths = LockPaths { dir: dir_path.clone(), lock_name: g.lock_name };
            let transition_claim_listed = scanned.transition_claims.contains(&paths.transition_claim());
            classify(&dir, &paths, &g.session_id, &g.side_files, primary, transition_claim_listed)
        })
        .collect())
}

/// A whole lock directory, read once: every session's group with what its primary holds.
pub struct DirectoryScan {
    /// Every session (sorted by lock name) and the inspection of its primary.
    pub sessions: Vec<(LockGroup, Inspection)>,
    /// Every listed name ending in `.claim` (a transition claim's presence without another
    /// `lstat`).
    pub transition_claims: HashSet<String>,
}

/// Lists `dir` and reads every entry once (the record inside decides which lock a side file
/// belongs to), groups the entries by lock ([`group_entries`]) and classifies every primary
/// from that same read ([`inspect_records_read`]: at most one malformed-record pause for
/// the whole directory). `status` and `recover` over a directory both start here.
pub fn scan_directory(dir: &Dir, probe: &dyn ProcessProbe) -> Result<DirectoryScan, LockError> {
    let mut first_reads = HashMap::new();
    let mut transition_claims = HashSet::new();
    let listed = entries_matching(
        dir,
        |_| true,
        |name, read| {
            if name.ends_with(".claim") {
                transition_claims.insert(name.to_owned());
            }
            // Only a name ending in `.lock` can be a primary; keep that read for its inspection.
            if name.ends_with(".lock") {
                first_reads.insert(name.to_owned(), read);
            }
        },
    )?;
    let groups = group_entries(listed);
    let local = LocalDomain::current();
    let primaries: Vec<(&str, &str, Option<ReadRegular>)> = groups
        .iter()
        .map(|g| (g.lock_name.as_str(), g.session_id.as_str(), first_reads.remove(&g.lock_name)))
        .collect();
    let found = inspect_records_read(dir, primaries, &local, probe);
    Ok(DirectoryScan { sessions: groups.into_iter().zip(found).collect(), transition_claims })
}

/// One session's share of a lock directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockGroup {
    /// File name of the primary `L` (present or not).
    pub lock_name: String,
    /// Session id decoded from the lock file name.
    pub session_id: String,
    /// Every other entry that belongs to this lock, with its kind, sorted by name.
    pub side_files: Vec<(String, SideKind)>,
}

/// Groups a directory listing by the lock each entry belongs to, in one pass: every
/// primary, plus every lock whose primary is gone but whose side files remain (those still
/// deserve a line). Sorted by lock name.
///
/// Why one pass: deciding which lock an entry belongs to ([`owner_of`]) builds and encodes a
/// name, and asking that of every entry for every lock made a scan quadratic. Each entry
/// is asked once here, and each lock then sees only its own files.
pub fn group_entries(entries: Vec<Entry>) -> Vec<LockGroup> {
    let mut by_lock: std::collections::BTreeMap<String, Vec<(String, SideKind)>> = Default::default();
    for e in entries {
        match owner_of(&e) {
            Some((lock, kind)) => by_lock.entry(lock).or_default().push((e.name, kind)),
            None if e.name.ends_with(".lock") && e.name != ".lock" => {
                by_lock.entry(e.name).or_default();
            }
            None => {}
        }
    }
    by_lock
        .into_iter()
        .map(|(lock_name, mut side_files)| {
            side_files.sort_by(|a, b| a.0.cmp(&b.0));
            let enc = lock_name.trim_end_matches(".lock");
            let session_id = decode_uri_component(enc).unwrap_or_else(|| enc.to_owned());
            LockGroup { lock_name, session_id, side_files }
        })
        .collect()
}

/// Every session that has a primary or side files among `entries`, as (lock name, session
/// id decoded from the file name), sorted by lock name.
pub fn sessions_in(entries: &[Entry]) -> Vec<(String, String)> {
    group_entries(entries.to_vec()).into_iter().map(|g| (g.lock_name, g.session_id)).collect()
}

/// The UTF-8 entries of a lock directory, each with the session recorded inside it.
pub fn entries(dir: &Dir) -> Result<Vec<Entry>, LockError> {
    entries_matching(dir, |_| true, |_, _| {})
}

/// [`entries`], reading only the files whose name passes `keep`; each read is handed to
/// `keep_read` afterwards (a scan keeps the primaries' reads instead of reading them again).
fn entries_matching(
    dir: &Dir,
    keep: impl Fn(&str) -> bool,
    mut keep_read: impl FnMut(&str, ReadRegular),
) -> Result<Vec<Entry>, LockError> {
    let names: Vec<String> = dir
        .list()
        .map_err(|e| LockError::io("list lock directory", e))?
        .into_iter()
        .filter_map(|n| n.into_string().ok())
        .filter(|n| keep(n))
        .collect();
    let read = |name: String| {
        let read = dir.read_regular(OsStr::new(&name));
        let record = match &read {
            ReadRegular::Regular(bytes, _) => parse_record(bytes).ok(),
            _ => None,
        };
        let (recorded_session, recorded_owner) = match record {
            Some(r) => (Some(r.session_id), Some(r.owner_id)),
            None => (None, None),
        };
        (Entry { name, recorded_session, recorded_owner }, read)
    };
    // Reading and parsing every file is the whole cost of a directory scan, and each file
    // is independent: large directories are read by one thread per core (the listing's
    // order is kept, and nothing here writes).
    let read_all: Vec<(Entry, ReadRegular)> = if names.len() < PARALLEL_SCAN_MIN {
        names.into_iter().map(read).collect()
    } else {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
        let per = names.len().div_ceil(threads);
        let mut chunks: Vec<Vec<String>> = Vec::new();
        let mut rest = names;
        while !rest.is_empty() {
            let tail = rest.split_off(per.min(rest.len()));
            chunks.push(std::mem::replace(&mut rest, tail));
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = chunks
                .into_iter()
                .map(|chunk| s.spawn(move || chunk.into_iter().map(read).collect::<Vec<_>>()))
                .collect();
            handles.into_iter().flat_map(|h| h.join().expect("a scan thread panicked")).collect()
        })
    };
    Ok(read_all
        .into_iter()
        .map(|(entry, read)| {
            keep_read(&entry.name, read);
            entry
        })
        .collect())
}

/// Below this many entries a scan reads on one thread (a thread costs more than it saves).
const PARALLEL_SCAN_MIN: usize = 2_000;

/// The entries that can belong to the lock `lock_name`: every side file's name starts with
/// the primary's (QWEN_FORMAT §1.2), so the rest of the directory is never read. This keeps
/// `status --session` (and `seal`'s preStop poll, which runs it every 200 ms) independent
/// of how many other sessions share the directory.
pub fn entries_of_lock(dir: &Dir, lock_name: &str) -> Result<Vec<(String, SideKind)>, LockError> {
    let candidates = entries_matching(dir, |n| n.starts_with(lock_name), |_, _| {})?;
    let mut side: Vec<(String, SideKind)> =
        candidates.into_iter().filter_map(|e| side_kind_of(lock_name, &e).map(|k| (e.name, k))).collect();
    side.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(side)
}

/// Status of one session's lock.
///
/// With `transcript`, a sealed record's proof is checked against the transcript now (one
/// streaming hash), exactly as `verify` and a certified takeover would.
pub fn status_one(
    runtime_dir: &Path,
    paths: &LockPaths,
    session_id: &str,
    transcript: Option<&TranscriptRef>,
    probe: &dyn ProcessProbe,
) -> Result<SessionStatus, LockError> {
    check_runtime_dir(runtime_dir)?;
    let local = LocalDomain::current();
    let Some(dir) = open_existing(&paths.dir)? else {
        // Issue 38 item 7: say that there is no lock directory at all — the commonest
        // cause is a runtime directory that is not the writer's.
        let mut st = classify_missing_dir(paths, session_id);
        st.next_step = format!(
            "there is no lock directory ({}): nothing was ever locked under this runtime directory. If a writer should be running, check that --runtime-dir (or WRITERCTL_RUNTIME_DIR / QWEN_RUNTIME_DIR) names its runtime directory; otherwise `writerctl acquire` or `writerctl run` creates it",
            paths.dir.display()
        );
        if let Some(t) = transcript {
            judge_tail(&mut st, t);
        }
        return Ok(st);
    };
    let side = entries_of_lock(&dir, &paths.lock_name)?;
    let primary = inspect_record(&dir, &paths.lock_name, session_id, &local, probe);
    let mut st = classify(&dir, paths, session_id, &side, primary, true);
    let identity = st.proof.as_ref().and_then(|p| p.identity);
    if let (Some(proof), Some(t)) = (st.proof.as_mut(), transcript) {
        let result = if proof.transcript.relative_path != t.key.as_str() {
            Err(LockError::TranscriptChanged { reason: "the sealed proof names another transcript key".into() })
        } else {
            read_proof(&t.runtime_dir, &t.key, ProofOptions::default(), &mut |_, _| {}).and_then(
                |now| match &identity {
                    Some(id) => now.matches(&proof.transcript).and_then(|_| now.matches_identity(id)),
                    None => now.matches(&proof.transcript),
                },
            )
        };
        proof.matches = Some(result.is_ok());
        proof.mismatch = result.err().map(|e| e.to_string());
        if proof.matches == Some(false) && !st.managed_schema {
            st.next_step = "sealed, but the proof no longer matches the transcript: a takeover will fail closed (session_transcript_changed). Something wrote to the transcript after the seal; fence every writer, decide which transcript is authoritative, then `writerctl recover`".into();
        }
    }
    if let (Some(t), Some(owner), Some(false)) = (transcript, st.owner.as_ref(), st.live) {
        // Issue 38 item 1 (b): a holder proven gone by its lock or pid is not the end of it —
        // an open write description elsewhere still writes. Say so instead of "reclaimable".
        if prove_beneath(&t.runtime_dir, t.key.as_str()).is_err() {
            let l = Liveness::Live(LiveReason::TranscriptOpenForWriting);
            st.live = Some(true);
            st.liveness = Some(LivenessView { code: l.code(), description: l.describe() });
            st.next_step = active_next_step(session_id, &owner.holder, l, st.managed_schema);
        }
    }
    if let (Some(t), LockState::Missing) = (transcript, st.state)
        && prove_beneath(&t.runtime_dir, t.key.as_str()).is_err()
    {
        st.problem = Some("the transcript is open for writing, though no lock names a writer".into());
        st.next_step = "no lock holds this session, but some process can still write its transcript (the kernel refused a read lease): `acquire` and `run` refuse until it is closed. Find it with `fuser -v` or `lsof` on the transcript and stop it".into();
    }
    if st.problem.is_none() {
        let caller = super::trust::caller_uid();
        st.problem = identity.and_then(|id| super::trust::transcript_exposure(id.mode, id.uid, caller));
    }
    if let Some(t) = transcript {
        judge_tail(&mut st, t);
    }
    Ok(st)
}

/// Issue 38, reproduction 7: a transcript that ends mid-line is named with its offsets, and
/// where `recover` would repair it (nothing recorded can still write it), the next step is
/// that repair instead of an acquire that would be refused. A transcript that cannot be
/// read is left to the commands that read it (they say why); status still reports the lock.
fn judge_tail(st: &mut SessionStatus, t: &TranscriptRef) {
    let Ok(opened) = open_tail(&t.runtime_dir, &t.key) else { return };
    let (tail, length) = opened.map_or((Tail::Clean, 0), |o| (o.tail, o.fingerprint.size));
    let complete = match tail {
        Tail::Torn { complete, .. } => complete,
        Tail::Clean => length,
    };
    let kept = kept_cut_files(&t.runtime_dir, &t.key).unwrap_or_default();
    st.transcript_tail =
        Some(TailView { state: tail.as_str(), complete_bytes: complete, length, kept_cut_files: kept });
    if let Tail::Torn { complete, length } = tail
        && repair_would_be_planned(st)
    {
        st.next_step = format!(
            "the transcript ends in an incomplete line at byte {length} (last complete line ends at byte {complete}): `writerctl acquire` and `run` refuse it until it is repaired. Once no writer can reach it, `writerctl recover --session {} --writers-fenced --yes` keeps the incomplete line in a side file beside the transcript and truncates it at byte {complete}",
            st.session_id
        );
    }
}

/// Whether `recover` would plan a tail repair for this lock ([`super::recover`]'s gate):
/// no lock, a stale one, or a fenced one it moves aside — never a live owner's, a sealed
/// one, or one in transition or malformed.
pub fn repair_would_be_planned(st: &SessionStatus) -> bool {
    let answers = |l: &LivenessView| {
        [LiveReason::Running, LiveReason::HolderLockHeld, LiveReason::TranscriptOpenForWriting]
            .iter()
            .any(|r| l.code == Liveness::Live(*r).code())
    };
    match st.state {
        LockState::Missing => true,
        LockState::Active => st.live == Some(false) || !st.liveness.as_ref().is_some_and(answers),
        _ => false,
    }
}

/// Opens a lock directory if it exists (`None` when it does not).
pub fn open_existing(path: &Path) -> Result<Option<Dir>, LockError> {
    match super::sys::lstat_path(path) {
        Err(e) if is_enoent(&e) => return Ok(None),
        _ => {}
    }
    open_lock_dir(path).map(Some)
}

fn classify_missing_dir(paths: &LockPaths, session_id: &str) -> SessionStatus {
    SessionStatus {
        session_id: session_id.to_owned(),
        lock_path: paths.lock_path(),
        state: LockState::Missing,
        owner: None,
        live: None,
        liveness: None,
        managed_schema: false,
        proof: None,
        transition_claim: None,
        side_files: Vec::new(),
        problem: None,
        next_step: "no writer holds this session; `writerctl acquire` can take it".into(),
        transcript_tail: None,
    }
}

/// Classifies one session from its side files (`side`, already grouped) and what its
/// primary holds (`primary`, already inspected: a directory scan inspects all primaries in
/// one batch).
fn classify(
    dir: &Dir,
    paths: &LockPaths,
    session_id: &str,
    side: &[(String, SideKind)],
    primary: Inspection,
    transition_claim_listed: bool,
) -> SessionStatus {
    let mut st = classify_missing_dir(paths, session_id);
    let transition_claim_name = paths.transition_claim();
    let primary_holder_lock = match &primary {
        Inspection::Active(r, _) => r.owner.holder_lock.as_deref(),
        _ => None,
    };
    for (n, kind) in side {
        if *kind == SideKind::TransitionClaim {
            continue;
        }
        let name = redact_side_file_name(&paths.lock_name, n, *kind);
        let meaning = match kind {
            SideKind::HolderLock => holder_file_meaning(dir, n, primary_holder_lock == Some(n.as_str())),
            _ => kind.meaning(),
        };
        st.side_files.push(SideFileView { name, kind: *kind, meaning });
    }
    st.side_files.sort_by(|a, b| a.name.cmp(&b.name));

    match primary {
        Inspection::Missing => {}
        Inspection::Active(r, l) => {
            st.state = LockState::Active;
            st.owner = Some(OwnerView::of(&r));
            st.live = Some(l.is_live());
            st.liveness = Some(LivenessView { code: l.code(), description: l.describe() });
            st.managed_schema = matches!(r.schema, Schema::V3 { .. });
            st.next_step = active_next_step(session_id, &r.owner, l, st.managed_schema);
        }
        Inspection::Sealed(r) => {
            st.state = LockState::Sealed;
            st.owner = Some(OwnerView::of(&r));
            st.managed_schema = matches!(r.schema, Schema::V3 { .. });
            if let Some(seal) = r.seal() {
                st.proof = Some(ProofView {
                    sealed_at: seal.sealed_at.clone(),
                    transcript: seal.transcript.clone(),
                    matches: None,
                    mismatch: None,
                    identity: seal.identity,
                    exclusive: seal.exclusive.clone(),
                });
            }
            st.next_step = if st.managed_schema {
                "sealed by a qwen-code managed writer (schema 3); only a managed qwen-code takeover continues it".into()
            } else {
                "sealed for handoff; a certified takeover (`writerctl takeover`) continues it after validating the proof. Nothing reclaims a seal automatically".into()
            };
        }
        Inspection::OtherSession(r) => {
            st.state = LockState::Malformed;
            st.owner = Some(OwnerView::of(&r));
            st.problem =
                Some("the record belongs to another session (case-insensitive filesystem or a copied file)".into());
            st.next_step = malformed_next_step();
        }
        Inspection::Malformed(m) => {
            st.state = LockState::Malformed;
            st.problem = Some(m.0);
            st.next_step = malformed_next_step();
        }
        Inspection::NotRegular(k) => {
            st.state = LockState::Malformed;
            st.problem = Some(format!("the lock path is not a regular file (found a {})", k.describe()));
            st.next_step = malformed_next_step();
        }
        Inspection::Error(e) => {
            st.state = LockState::Malformed;
            st.problem = Some(format!("the lock could not be read: {e}"));
            st.next_step = "fix the permissions or storage error, then re-run `writerctl status`".into();
        }
    }

    // `transition_claim_listed`: a directory scan knows from its listing which transition
    // claims exist.
    if let Some(meta) = transition_claim_listed.then(|| dir.lstat(OsStr::new(&transition_claim_name)).ok()).flatten() {
        let (valid_record, owner) = match dir.read_regular(OsStr::new(&transition_claim_name)) {
            ReadRegular::Regular(b, _) => match parse_record(&b) {
                Ok(r) => (true, Some(OwnerView::of(&r))),
                Err(_) => (false, None),
            },
            _ => (false, None),
        };
        let modified = dir.modified(OsStr::new(&transition_claim_name)).ok();
        st.transition_claim =
            Some(TransitionClaimView { file_type: meta.kind.describe(), valid_record, owner, modified });
        st.state = LockState::InTransition;
        st.problem = Some(format!("transition claim {transition_claim_name} exists"));
        st.next_step = "a seal or takeover is in progress or crashed mid-transition; every acquire and takeover answers unavailable until it is gone. Wait and re-check; if it persists, fence every writer and run `writerctl recover` (a claim is never reclaimed by pid, host or age)".into();
    }

    if st.state == LockState::Missing && !st.side_files.is_empty() {
        st.next_step = "no writer holds this session, but residue files remain; `writerctl acquire` still works. Run `writerctl recover` to see the plan for moving them aside".into();
    }
    st
}

/// What a holder-lock file means now: the active record's own, or — named by no primary —
/// held by a tree whose record is elsewhere (a reclaim guard, a transition claim, or a record
/// moved aside), or free residue.
fn holder_file_meaning(dir: &Dir, name: &str, named_by_primary: bool) -> &'static str {
    if named_by_primary {
        return "holder lock of the active record: its kernel lock says whether the holder's process tree lives (see liveness)";
    }
    if residue_is_free(dir, name) {
        "residue: a holder lock whose kernel lock is free and that the primary does not name; `writerctl recover` may move it aside"
    } else {
        "holder lock held by a live process tree (or that cannot be probed here), though the primary does not name it (a holder about to install its record, a reclaim guard, a record moved aside); a process of that tree may still write"
    }
}

fn active_next_step(session_id: &str, r: &OwnerFields, l: Liveness, managed: bool) -> String {
    if managed {
        return "held by a qwen-code managed writer (schema 3); writerctl never reclaims or takes it over. Let its managed writer release or seal it".into();
    }
    let recover = format!("`writerctl recover --session {session_id} --writers-fenced --yes`");
    match l {
        Liveness::Live(LiveReason::Running) => format!(
            "held by pid {} on host {} (running); wait for it to release or seal. A conflict is not proof that it is alive: a PID can be reused",
            r.pid, r.hostname
        ),
        Liveness::Live(LiveReason::HolderLockHeld) => format!(
            "held: pid {} on host {} may be gone, but a process of its tree still holds the holder lock, so a write may be in flight. Nothing reclaims it while the lock is held; wait for that tree to exit (find it with `fuser` on the holder-lock file), or stop it. The next `writerctl run` then takes over by itself",
            r.pid, r.hostname
        ),
        Liveness::Live(LiveReason::TranscriptOpenForWriting) => format!(
            "held: pid {}'s tree may be gone, but some process can still write the transcript (the kernel refused a read lease): find it with `fuser -v` or `lsof` on the transcript and stop it. Nothing reclaims it until then; afterwards the next `writerctl run` takes over by itself",
            r.pid
        ),
        Liveness::Live(reason) if reason.ends_by_itself() => {
            format!("held by pid {} on host {} ({}); wait for it to release or seal", r.pid, r.hostname, l.describe())
        }
        Liveness::Live(_) => format!(
            "held by pid {} on host {}, fenced ({}). Nothing here can prove it gone, so no `run` will take it without a person: fence every writer on other hosts, then run {recover}",
            r.pid,
            r.hostname,
            l.describe()
        ),
        Liveness::Stale(StaleReason::HolderLockReleased | StaleReason::Proven(_)) => format!(
            "the holder's tree (pid {}) is gone: its holder lock is released. Once nothing has the transcript open for writing, the next `run` or `acquire` (also --managed) reclaims it by the kernel's proof and reports the transcript's tail",
            r.pid
        ),
        Liveness::Stale(_) => format!(
            "the holder (pid {} on this host) is gone by the pid table; plain `writerctl acquire` reclaims it, but `run` and --managed cannot (the record names no holder lock): {recover} moves it aside so `run` can start",
            r.pid
        ),
    }
}

fn malformed_next_step() -> String {
    "nothing reclaims a malformed lock; back it up, fence every writer, then run `writerctl recover` to move it aside"
        .into()
}
