//! Lock and side-file names (QWEN_FORMAT §1).
//!
//! Every side file's name is the primary lock's file name plus a suffix, so all of them sit
//! in the lock directory beside `L`. Names are built here and nowhere else; the status
//! classifier parses them back with [`classify_side_file`].

use std::path::{Path, PathBuf};

/// Subdirectory of the runtime directory holding the locks.
pub const LOCK_SUBDIR: &str = "tmp/session-writer-locks";

/// JavaScript `encodeURIComponent`: keeps `A–Z a–z 0–9 - _ . ! ~ * ' ( )`, percent-encodes
/// every other UTF-8 byte with uppercase hex. A session id can therefore never contain a
/// path separator once encoded (`/` → `%2F`), nor a bare `%`.
pub fn encode_uri_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        let keep =
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'!' | b'~' | b'*' | b'\'' | b'(' | b')');
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Inverse of [`encode_uri_component`]; `None` for malformed escapes or non-UTF-8 results.
pub fn decode_uri_component(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            // Two hex digits exactly (`from_str_radix` alone would accept a sign, `%+1`).
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// qwen's `sanitizeCwd` on POSIX: every character outside `[a-zA-Z0-9]` becomes `-`.
///
/// Why one dash per UTF-16 code unit, not per character: qwen runs
/// `normalizedCwd.replace(/[^a-zA-Z0-9]/g, '-')` on a JavaScript string, and a regex without
/// the `u` flag matches code units. A character outside the Basic Multilingual Plane (an
/// emoji, a CJK extension B ideograph) is a surrogate pair there and becomes `--`; a BMP
/// character (`é`, a combining mark) is one unit and one dash. Any other count names a
/// different directory, and a seal would certify a file qwen never reads.
pub fn sanitize_cwd(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    out
}

/// The primary lock `L` of one session and the names of its side files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockPaths {
    /// The directory holding `L` and every side file.
    pub dir: PathBuf,
    /// The file name of `L` (e.g. `<enc(session)>.lock`).
    pub lock_name: String,
}

impl LockPaths {
    /// `R/tmp/session-writer-locks/<enc(session)>.lock`.
    pub fn for_session(runtime_dir: &Path, session_id: &str) -> LockPaths {
        LockPaths {
            dir: runtime_dir.join(LOCK_SUBDIR),
            lock_name: format!("{}.lock", encode_uri_component(session_id)),
        }
    }

    /// An explicit lock path (`--lock`); `None` if it has no UTF-8 file name or no parent.
    pub fn for_lock_path(lock: &Path) -> Option<LockPaths> {
        let name = lock.file_name()?.to_str()?.to_owned();
        let dir = lock.parent()?;
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        Some(LockPaths { dir: dir.to_path_buf(), lock_name: name })
    }

    /// Full path of `L` (for messages and output).
    pub fn lock_path(&self) -> PathBuf {
        self.dir.join(&self.lock_name)
    }

    /// `L.claim`: the fixed transition claim.
    pub fn transition_claim(&self) -> String {
        format!("{}.claim", self.lock_name)
    }

    /// `L.released.<enc(o)>`: where release renames `L` before unlinking it.
    pub fn released(&self, owner_id: &str) -> String {
        format!("{}.released.{}", self.lock_name, encode_uri_component(owner_id))
    }

    /// `L.sealed-candidate.<enc(o)>`: the sealed record a seal links into `L`.
    pub fn sealed_candidate(&self, owner_id: &str) -> String {
        format!("{}.sealed-candidate.{}", self.lock_name, encode_uri_component(owner_id))
    }

    /// `L.handoff.<enc(o)>`: where a seal moves the active `L`.
    pub fn handoff(&self, owner_id: &str) -> String {
        format!("{}.handoff.{}", self.lock_name, encode_uri_component(owner_id))
    }

    /// `L.sealed.<enc(sealed)>.<enc(new)>`: where a takeover moves the sealed `L`.
    pub fn sealed_retired(&self, sealed_owner: &str, new_owner: &str) -> String {
        format!("{}.sealed.{}.{}", self.lock_name, encode_uri_component(sealed_owner), encode_uri_component(new_owner))
    }

    /// `L.stale.<pid>.<uuid>`: where a reclaim moves a stale `L` before unlinking it.
    pub fn stale(&self, reclaimer_pid: u32, nonce: &str) -> String {
        format!("{}.stale.{}.{}", self.lock_name, reclaimer_pid, nonce)
    }

    /// `L.reclaim.<enc(stale)>`: the base reclaim guard for one stale owner.
    pub fn reclaim_guard(&self, stale_owner: &str) -> String {
        format!("{}.reclaim.{}", self.lock_name, encode_uri_component(stale_owner))
    }

    /// `L.reclaim.<enc(stale)>.<enc(guard)>`: the guard used when the base guard is stale.
    pub fn reclaim_guard_chained(&self, stale_owner: &str, guard_owner: &str) -> String {
        format!("{}.{}", self.reclaim_guard(stale_owner), encode_uri_component(guard_owner))
    }
}

/// The longest file name Linux filesystems accept (`NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// The longest suffix writerctl ever appends to a lock's file name: the install temp of a
/// chained reclaim guard, `L.reclaim.<stale>.<guard>.<owner>.tmp`, with 36-byte UUID owner
/// ids. Seal (`L.sealed-candidate.<o>.<o>.tmp`) and takeover (`L.sealed.<o>.<n>`) need less.
pub const LONGEST_SIDE_SUFFIX: usize = ".reclaim.".len() + 36 + 1 + 36 + 1 + 36 + ".tmp".len();

/// Issue 22: can every file of this lock's life (install temps, transition claim, candidate,
/// retired and guard names) be created? A session id whose lock name leaves no room for them
/// made `acquire` fail with "retry later" while `status` promised "acquire can take it";
/// checking the name up front gives both the same answer, and the one that says what to change.
pub fn check_lock_name_room(lock_name: &str) -> Result<(), String> {
    let max = NAME_MAX - LONGEST_SIDE_SUFFIX;
    if lock_name.len() > max {
        return Err(format!(
            "the lock file name is {} bytes (the session id percent-encoded, plus `.lock`); its side files need it to be at most {max} bytes so that every name stays within the filesystem's {NAME_MAX}-byte limit: use a shorter session id (or --lock name)",
            lock_name.len()
        ));
    }
    Ok(())
}

/// `<target>.<owner_id>.tmp`: the install temp for any target (owner id NOT encoded, as qwen).
pub fn install_temp(target: &str, owner_id: &str) -> String {
    format!("{target}.{owner_id}.tmp")
}

/// What a side file is, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SideKind {
    /// `L.claim`: the transition claim.
    #[serde(rename = "claim")]
    TransitionClaim,
    /// `L.released.<o>`.
    Released,
    /// `L.sealed-candidate.<o>`.
    SealedCandidate,
    /// `L.handoff.<o>`.
    Handoff,
    /// `L.sealed.<o>.<n>`.
    SealedRetired,
    /// `L.stale.<pid>.<uuid>`.
    Stale,
    /// `L.reclaim.<o>[.<o2>]`.
    ReclaimGuard,
    /// `L.holder.<uuid>`: a holder lock (see [`super::holder_lock`]).
    HolderLock,
    /// `*.tmp`.
    InstallTemp,
    /// Starts with `L.` but matches no known pattern.
    Unknown,
}

impl SideKind {
    /// What the file means and what leaves it behind (QWEN_FORMAT §1.2).
    pub fn meaning(self) -> &'static str {
        match self {
            SideKind::TransitionClaim => {
                "transition claim: a seal or takeover is in progress or crashed mid-transition; never reclaimed by pid, host or age"
            }
            SideKind::Released => {
                "retired by a release whose final unlink failed or crashed; holds the released owner's record"
            }
            SideKind::SealedCandidate => "sealed record prepared by a seal that did not finish cleanup",
            SideKind::Handoff => "active record moved aside by a seal transition; removed only when its bytes match",
            SideKind::SealedRetired => {
                "sealed record moved aside by a takeover transition; removed only when its bytes match"
            }
            SideKind::Stale => "stale record moved aside by a reclaim that crashed before unlinking it",
            SideKind::ReclaimGuard => {
                "reclaim guard holding a reclaimer's record; a live-looking guard blocks reclaim until an operator removes it"
            }
            SideKind::HolderLock => {
                "holder lock: its kernel lock is kept by a holder's process tree; residue once free and named by no record"
            }
            SideKind::InstallTemp => "temp file of an install that crashed between create and cleanup",
            SideKind::Unknown => "unrecognised file beside the lock; writerctl never touches it, inspect it by hand",
        }
    }
}

/// One owner-id component of a side-file name: non-empty, in `encodeURIComponent`'s output
/// alphabet, without `.` (qwen owner ids are UUIDs).
fn is_owner_segment(seg: &str) -> bool {
    !seg.is_empty()
        && seg.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'!' | b'~' | b'*' | b'\'' | b'(' | b')' | b'%')
        })
}

fn owner_segments(rest: &str, min: usize, max: usize) -> bool {
    let parts: Vec<&str> = rest.split('.').collect();
    (min..=max).contains(&parts.len()) && parts.iter().all(|p| is_owner_segment(p))
}

/// Classifies the part of a side-file name after `L.`, strictly by qwen's patterns
/// (QWEN_FORMAT §1.2). A name that only starts like one (`handoff.`, `sealed.bak`) is
/// `Unknown`, so `recover` never mistakes an operator's backup copy for residue to move or,
/// worse, for a predecessor to restore.
fn classify_remainder(rest: &str) -> SideKind {
    if let Some(body) = rest.strip_suffix(".tmp") {
        // `<target suffix>.<owner>.tmp`, the target being L itself or one of its side files.
        let (target, owner) = match body.rsplit_once('.') {
            Some((t, o)) => (t, o),
            None => ("", body),
        };
        let target_ok =
            target.is_empty() || !matches!(classify_remainder(target), SideKind::Unknown | SideKind::InstallTemp);
        return if is_owner_segment(owner) && target_ok { SideKind::InstallTemp } else { SideKind::Unknown };
    }
    if rest == "claim" {
        return SideKind::TransitionClaim;
    }
    let Some((word, tail)) = rest.split_once('.') else { return SideKind::Unknown };
    let (kind, ok) = match word {
        "released" => (SideKind::Released, owner_segments(tail, 1, 1)),
        "sealed-candidate" => (SideKind::SealedCandidate, owner_segments(tail, 1, 1)),
        "handoff" => (SideKind::Handoff, owner_segments(tail, 1, 1)),
        "sealed" => (SideKind::SealedRetired, owner_segments(tail, 2, 2)),
        "reclaim" => (SideKind::ReclaimGuard, owner_segments(tail, 1, 2)),
        // A random UUID, never an owner id: see `holder_lock::is_holder_lock_name`.
        "holder" => (SideKind::HolderLock, tail.len() == 36 && uuid::Uuid::parse_str(tail).is_ok()),
        "stale" => (
            SideKind::Stale,
            matches!(tail.split_once('.'), Some((pid, nonce))
                if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && is_owner_segment(nonce)),
        ),
        _ => (SideKind::Unknown, true),
    };
    if ok { kind } else { SideKind::Unknown }
}

/// For a side file of a standard `<enc(session)>.lock` primary, the primary it belongs to.
///
/// Why the longest match: `encodeURIComponent` keeps `.`, so a session id may itself contain
/// `.lock.` (`a.lock.b` → `a.lock.b.lock`), and `a.lock.b.lock.stale.1.u` starts with both
/// `a.lock.` and `a.lock.b.lock.`. The file belongs to the longest primary name after which a
/// known suffix follows; a name ending in `.lock` is itself a primary, never a side file.
pub fn side_file_owner(entry: &str) -> Option<(&str, SideKind)> {
    if entry.ends_with(".lock") {
        return None;
    }
    let cuts: Vec<usize> = entry.match_indices(".lock.").map(|(i, _)| i + ".lock".len()).collect();
    let mut fallback = None;
    for &cut in cuts.iter().rev() {
        let (lock, rest) = (&entry[..cut], &entry[cut + 1..]);
        // `.lock` alone would be the lock of the empty session id, which is never valid.
        if lock == ".lock" {
            continue;
        }
        match classify_remainder(rest) {
            SideKind::Unknown => fallback = fallback.or(Some((lock, SideKind::Unknown))),
            kind => return Some((lock, kind)),
        }
    }
    fallback
}

/// A lock-directory entry and the session id recorded inside it, when it holds a valid record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// File name.
    pub name: String,
    /// `session_id` of the record in the file, if it parses as one.
    pub recorded_session: Option<String>,
    /// `owner_id` of that record.
    pub recorded_owner: Option<String>,
}

/// The lock `entry` is a side file of, and its kind; `None` for a primary or an unrelated
/// file.
///
/// Why the recorded session decides first: names alone are ambiguous once an owner id
/// contains `.lock` (`encodeURIComponent` keeps `.`): the guard for stale owner `x.lock` is
/// `s.lock.reclaim.x.lock`, which by name is the primary of session `s.lock.reclaim.x`.
/// Every side file holds a record of its own session, so when the recorded session's lock
/// name is a prefix of the entry, the entry is that lock's side file. Files holding no record
/// fall back to the name rule of [`side_file_owner`].
pub fn owner_of(entry: &Entry) -> Option<(String, SideKind)> {
    if let Some(session) = &entry.recorded_session {
        let lock = format!("{}.lock", encode_uri_component(session));
        if let Some(rest) = entry.name.strip_prefix(&lock).and_then(|r| r.strip_prefix('.')) {
            return Some((lock, classify_recorded(rest, entry.recorded_owner.as_deref())));
        }
    }
    side_file_owner(&entry.name).map(|(lock, kind)| (lock.to_owned(), kind))
}

/// Is `entry` some session's primary lock?
pub fn is_primary(entry: &Entry) -> bool {
    entry.name.ends_with(".lock") && entry.name != ".lock" && owner_of(entry).is_none()
}

/// The kind of `entry` as a side file of `lock_name`, if it is one.
pub fn side_kind_of(lock_name: &str, entry: &Entry) -> Option<SideKind> {
    if lock_name.ends_with(".lock") {
        return owner_of(entry).filter(|(lock, _)| lock == lock_name).map(|(_, kind)| kind);
    }
    classify_side_file(lock_name, &entry.name)
}

/// A remainder whose lock is known from the record inside. Owner ids may contain `.`, so
/// where the strict segment rule fails, the name must carry the recorded owner id exactly
/// where qwen puts it — an operator's backup copy (`L.sealed.bak`) still matches nothing.
fn classify_recorded(rest: &str, owner: Option<&str>) -> SideKind {
    let strict = classify_remainder(rest);
    let Some(owner) = owner.filter(|_| strict == SideKind::Unknown) else { return strict };
    let enc = encode_uri_component(owner);
    if rest.ends_with(&format!(".{owner}.tmp")) || rest == format!("{owner}.tmp") {
        return SideKind::InstallTemp;
    }
    for (word, kind) in [
        ("released", SideKind::Released),
        ("handoff", SideKind::Handoff),
        ("sealed-candidate", SideKind::SealedCandidate),
    ] {
        if rest == format!("{word}.{enc}") {
            return kind;
        }
    }
    // `sealed.<sealed owner>.<new owner>`: the file holds the sealed owner's record.
    if rest.strip_prefix(&format!("sealed.{enc}.")).is_some_and(|n| !n.is_empty()) {
        return SideKind::SealedRetired;
    }
    // `reclaim.<stale>[.<guard>]` holds the reclaimer's record, not the stale owner's: any
    // owner-id characters after the word.
    if let Some(ids) = rest.strip_prefix("reclaim.")
        && !ids.is_empty()
        && ids.split('.').all(is_owner_segment)
    {
        return SideKind::ReclaimGuard;
    }
    SideKind::Unknown
}

/// `<owner:xxxxxxxx>`: a short, irreversible stand-in for an owner id in a file name.
fn owner_fingerprint(segment: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(segment.as_bytes());
    format!("<owner:{:02x}{:02x}{:02x}{:02x}>", d[0], d[1], d[2], d[3])
}

/// The side-file name with every owner-id component replaced by a fingerprint, for output.
///
/// Why: several side-file names embed owner ids (`L.handoff.<o>`, `L.<o>.tmp`, …), some of
/// them of a still-active owner, and no writerctl output may show an owner id (seed 001
/// "Failure contract"). The fingerprint still lets an operator tell files apart.
pub fn redact_side_file_name(lock_name: &str, entry: &str, kind: SideKind) -> String {
    let Some(rest) = entry.strip_prefix(lock_name).and_then(|r| r.strip_prefix('.')) else {
        return entry.to_owned();
    };
    let redacted = match kind {
        // A holder lock's name carries a random UUID, never an owner id.
        SideKind::TransitionClaim | SideKind::Stale | SideKind::HolderLock | SideKind::Unknown => rest.to_owned(),
        SideKind::InstallTemp => {
            // `<target suffix>.<owner>.tmp`: keep a known target word, hide the rest.
            let body = rest.trim_end_matches(".tmp");
            let (word, owners) = match body.split_once('.') {
                Some((w, o)) if ["claim", "sealed-candidate", "reclaim"].contains(&w) => (Some(w), o),
                _ => (None, body),
            };
            let fp = owner_fingerprint(owners);
            match word {
                Some(w) => format!("{w}.{fp}.tmp"),
                None => format!("{fp}.tmp"),
            }
        }
        _ => {
            let (word, owners) = rest.split_once('.').unwrap_or((rest, ""));
            let parts: Vec<String> = owners.split('.').map(owner_fingerprint).collect();
            format!("{word}.{}", parts.join("."))
        }
    };
    format!("{lock_name}.{redacted}")
}

/// Classifies `entry` as a side file of the lock named `lock_name`, or `None` if it does not
/// belong to that lock.
pub fn classify_side_file(lock_name: &str, entry: &str) -> Option<SideKind> {
    if lock_name.ends_with(".lock") {
        return match side_file_owner(entry) {
            Some((owner, kind)) if owner == lock_name => Some(kind),
            _ => None,
        };
    }
    // A `--lock` override with another suffix: plain prefix match.
    let rest = entry.strip_prefix(lock_name)?.strip_prefix('.')?;
    Some(classify_remainder(rest))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;

    #[test]
    fn encodes_like_encode_uri_component() {
        assert_eq!(
            encode_uri_component("550e8400-e29b-41d4-a716-446655440000"),
            "550e8400-e29b-41d4-a716-446655440000"
        );
        assert_eq!(encode_uri_component("a/b"), "a%2Fb");
        assert_eq!(encode_uri_component("100%"), "100%25");
        assert_eq!(encode_uri_component("../x"), "..%2Fx");
        assert_eq!(encode_uri_component("é"), "%C3%A9");
        assert_eq!(encode_uri_component("a b"), "a%20b");
        assert_eq!(encode_uri_component("!~*'()_-."), "!~*'()_-.");
    }

    #[test]
    fn decode_round_trips_and_rejects_garbage() {
        for s in ["a/b", "100%", "é ü", "plain"] {
            assert_eq!(decode_uri_component(&encode_uri_component(s)).as_deref(), Some(s));
        }
        assert_eq!(decode_uri_component("%zz"), None);
        assert_eq!(decode_uri_component("%4"), None);
        assert_eq!(decode_uri_component("%FF"), None);
        assert_eq!(decode_uri_component("%+1"), None);
    }

    #[test]
    fn session_with_separator_stays_inside_the_lock_dir() {
        let p = LockPaths::for_session(Path::new("/r"), "../../etc/passwd");
        assert_eq!(p.dir, Path::new("/r/tmp/session-writer-locks"));
        assert!(!p.lock_name.contains('/'));
        assert_eq!(p.lock_name, "..%2F..%2Fetc%2Fpasswd.lock");
    }

    #[test]
    fn side_file_names_match_qwen() {
        let p = LockPaths::for_session(Path::new("/r"), "s");
        assert_eq!(p.transition_claim(), "s.lock.claim");
        assert_eq!(p.released("o"), "s.lock.released.o");
        assert_eq!(p.sealed_candidate("o"), "s.lock.sealed-candidate.o");
        assert_eq!(p.handoff("o"), "s.lock.handoff.o");
        assert_eq!(p.sealed_retired("o", "n"), "s.lock.sealed.o.n");
        assert_eq!(p.stale(42, "u"), "s.lock.stale.42.u");
        assert_eq!(p.reclaim_guard("o"), "s.lock.reclaim.o");
        assert_eq!(p.reclaim_guard_chained("o", "g"), "s.lock.reclaim.o.g");
        assert_eq!(install_temp("s.lock", "o"), "s.lock.o.tmp");
    }

    #[test]
    fn classifies_every_side_file() {
        let p = LockPaths::for_session(Path::new("/r"), "s");
        let cases = [
            (p.transition_claim(), SideKind::TransitionClaim),
            (p.released("o"), SideKind::Released),
            (p.sealed_candidate("o"), SideKind::SealedCandidate),
            (p.handoff("o"), SideKind::Handoff),
            (p.sealed_retired("o", "n"), SideKind::SealedRetired),
            (p.stale(1, "u"), SideKind::Stale),
            (p.reclaim_guard("o"), SideKind::ReclaimGuard),
            (p.reclaim_guard_chained("o", "g"), SideKind::ReclaimGuard),
            (install_temp("s.lock", "o"), SideKind::InstallTemp),
            (install_temp(&p.transition_claim(), "o"), SideKind::InstallTemp),
            ("s.lock.holder.0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f".to_string(), SideKind::HolderLock),
            ("s.lock.holder.not-a-uuid".to_string(), SideKind::Unknown),
            ("s.lock.weird".to_string(), SideKind::Unknown),
        ];
        for (name, kind) in cases {
            assert_eq!(classify_side_file("s.lock", &name), Some(kind), "{name}");
        }
        assert_eq!(classify_side_file("s.lock", "s.lock"), None);
        assert_eq!(classify_side_file("s.lock", "t.lock.claim"), None);
        assert_eq!(classify_side_file("s.lock", "s.lockx"), None);
    }

    #[test]
    fn names_that_only_start_like_a_side_file_are_unknown() {
        for rest in [
            "handoff.",
            "sealed.bak",
            "sealed.a.b.c",
            "released.",
            "reclaim.",
            "stale.bak",
            "stale.x.y",
            "claimx",
            ".tmp",
            "bogus.o.tmp",
            "handoff.a.b",
        ] {
            assert_eq!(classify_side_file("s.lock", &format!("s.lock.{rest}")), Some(SideKind::Unknown), "{rest}");
        }
    }

    #[test]
    fn a_session_id_containing_dot_lock_keeps_its_own_side_files() {
        assert_eq!(side_file_owner("a.lock.b.lock.stale.1.u"), Some(("a.lock.b.lock", SideKind::Stale)));
        assert_eq!(side_file_owner("a.lock.b.lock.9.tmp"), Some(("a.lock.b.lock", SideKind::InstallTemp)));
        assert_eq!(side_file_owner("a.lock.claim"), Some(("a.lock", SideKind::TransitionClaim)));
        assert_eq!(side_file_owner("a.lock.b.lock"), None);
        assert_eq!(side_file_owner(".lock.claim"), None, "the empty session has no lock");
        assert_eq!(classify_side_file("a.lock", "a.lock.b.lock.stale.1.u"), None);
        assert_eq!(classify_side_file("a.lock.b.lock", "a.lock.b.lock.stale.1.u"), Some(SideKind::Stale));
        assert_eq!(classify_side_file("x.lck", "x.lck.claim"), Some(SideKind::TransitionClaim));
    }

    #[test]
    fn redaction_hides_every_owner_id() {
        let p = LockPaths::for_session(Path::new("/r"), "s");
        let o = "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f";
        let n = "11111111-2222-4333-8444-555555555555";
        for name in [
            p.released(o),
            p.sealed_candidate(o),
            p.handoff(o),
            p.sealed_retired(o, n),
            p.reclaim_guard(o),
            p.reclaim_guard_chained(o, n),
            install_temp("s.lock", o),
            install_temp(&p.transition_claim(), o),
            install_temp(&p.sealed_candidate(n), o),
        ] {
            let kind = classify_side_file("s.lock", &name).unwrap();
            let shown = redact_side_file_name("s.lock", &name, kind);
            assert!(!shown.contains(o) && !shown.contains(n), "{shown}");
            assert!(shown.starts_with("s.lock.") && shown.contains("<owner:"), "{shown}");
        }
        assert_eq!(redact_side_file_name("s.lock", "s.lock.claim", SideKind::TransitionClaim), "s.lock.claim");
        assert_eq!(redact_side_file_name("s.lock", "s.lock.stale.7.u", SideKind::Stale), "s.lock.stale.7.u");
    }

    #[test]
    fn a_lock_name_must_leave_room_for_its_side_files() {
        let fits = "a".repeat(NAME_MAX - LONGEST_SIDE_SUFFIX - ".lock".len());
        let p = LockPaths::for_session(Path::new("/r"), &fits);
        check_lock_name_room(&p.lock_name).unwrap();
        let longest = format!("{}.reclaim.{}.{}.{}.tmp", p.lock_name, "o".repeat(36), "g".repeat(36), "n".repeat(36));
        assert_eq!(longest.len(), NAME_MAX);
        let p = LockPaths::for_session(Path::new("/r"), &format!("{fits}b"));
        assert!(check_lock_name_room(&p.lock_name).unwrap_err().contains("shorter session id"));
        // A UUID (qwen's ids) is far inside the limit.
        check_lock_name_room("550e8400-e29b-41d4-a716-446655440000.lock").unwrap();
    }

    #[test]
    fn sanitizes_like_qwen() {
        assert_eq!(sanitize_cwd("/home/u/repo"), "-home-u-repo");
        assert_eq!(sanitize_cwd("/a_b.c"), "-a-b-c");
    }

    #[test]
    fn sanitizes_per_utf16_code_unit_as_javascript_does() {
        // Expected values are what `'…'.replace(/[^a-zA-Z0-9]/g, '-')` gives in node.
        // U+1F600 (an emoji) is a surrogate pair: two dashes.
        assert_eq!(sanitize_cwd("/home/user/\u{1F600}proj"), "-home-user---proj");
        // U+20000 (CJK Unified Ideographs Extension B) is outside the BMP too.
        assert_eq!(sanitize_cwd("/src/\u{20000}x"), "-src---x");
        // `é` precomposed is one code unit; `e` + U+0301 (combining acute) is two characters,
        // each one unit: `e` stays, the mark becomes one dash.
        assert_eq!(sanitize_cwd("/caf\u{E9}"), "-caf-");
        assert_eq!(sanitize_cwd("/cafe\u{301}"), "-cafe-");
        // A BMP CJK character is one unit.
        assert_eq!(sanitize_cwd("/\u{4E2D}"), "--");
    }
}
