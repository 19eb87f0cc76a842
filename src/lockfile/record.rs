//! Lock records (QWEN_FORMAT §2): parsing with qwen's exact validation rules, and
//! serialization of writerctl's own schema-2 active record.
//!
//! A parsed [`LockRecord`] always carries the exact bytes it was parsed from. Ownership is
//! proved by comparing bytes, never by re-serializing: writerctl compares its own records
//! against the bytes it wrote and never rewrites a record someone else wrote.

use super::holder_lock::{HOLDER_LOCK_ID_KEY, HOLDER_LOCK_KEY};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::{Iso8601, Rfc3339};

/// The largest integer JavaScript represents exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The value writerctl puts in the extra `writer` key of its records.
pub fn writer_tag() -> String {
    format!("writerctl {}", env!("CARGO_PKG_VERSION"))
}

/// A lock owner id (qwen's `owner_id`): the secret that proves ownership. Never printed in
/// diagnostics, logs or errors; `Debug` is redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct OwnerToken(String);

impl OwnerToken {
    /// A fresh random lowercase v4 UUID, as qwen generates.
    pub fn generate() -> OwnerToken {
        OwnerToken(uuid::Uuid::new_v4().to_string())
    }

    /// Whether `t` has the shape [`OwnerToken::generate`] (and qwen) make: a 36-character
    /// UUID. How `--token-file` tells an owner token from a file that holds something else.
    pub fn is_uuid_shaped(t: &str) -> bool {
        t.len() == 36 && uuid::Uuid::try_parse(t).is_ok()
    }

    /// Wraps a token read from a file or the environment; `None` if empty after trimming.
    pub fn parse(s: &str) -> Option<OwnerToken> {
        let t = s.trim();
        if t.is_empty() { None } else { Some(OwnerToken(t.to_owned())) }
    }

    /// The raw token (only for writing it to the token file or stdout on acquire).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for OwnerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OwnerToken(<redacted>)")
    }
}

/// `process_kind` values qwen accepts.
pub const PROCESS_KINDS: &[&str] = &["interactive", "acp", "daemon", "unknown"];

/// Record schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// Legacy: always active, never sealed.
    V1,
    /// Baseline: active or sealed.
    V2,
    /// qwen's managed schema, with its `format_version`.
    V3 {
        /// `format_version` (a safe integer ≥ 1).
        format_version: u64,
    },
}

impl Schema {
    /// The `schema_version` number.
    pub fn number(self) -> u8 {
        match self {
            Schema::V1 => 1,
            Schema::V2 => 2,
            Schema::V3 { .. } => 3,
        }
    }
}

/// The sealed transcript proof (`transcript`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct TranscriptProof {
    /// Transcript path relative to the runtime directory, `/`-separated.
    pub relative_path: String,
    /// Whether the transcript existed when sealed.
    pub exists: bool,
    /// Its length in bytes.
    pub byte_length: u64,
    /// Lowercase hex SHA-256 of bytes `[0, byte_length)`.
    pub sha256: String,
}

/// Key of writerctl's extension to a sealed record (qwen ignores unknown keys).
pub const IDENTITY_KEY: &str = "writerctl_transcript_identity";

/// writerctl's extension to a sealed record: the transcript's hard metadata at seal time
/// (QWEN_FORMAT §4.2 "hard-equal", less the device number, which differs between hosts
/// mounting one network volume).
///
/// Why: qwen's four proof fields certify content, not the file. An extra hard link or a
/// permission change after the seal means someone else can now write the transcript; a
/// takeover of a writerctl seal refuses it (`session_transcript_changed`). Timestamps are
/// left out on purpose: a `touch` changes no byte, and the digest still proves the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealedIdentity {
    /// Inode number.
    pub ino: u64,
    /// Full `st_mode`.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Link count.
    pub nlink: u64,
}

/// The extra record key holding the writer's pod identity (see [`super::pod`]).
pub const POD_KEY: &str = "writerctl_pod";
/// The extra record key of a record that replaced a crashed writer's under a proof rule.
pub const RECOVERED_KEY: &str = "writerctl_recovered_from";

/// A writer's pod and container, as recorded in `writerctl_pod`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodIdentity {
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// The container's name in the pod spec.
    pub container: String,
}

/// What a reclaim proven by the kernel replaced (`writerctl_recovered_from`).
///
/// Issue 38: the proof is the kernel's (`rule` [`KERNEL_PROOF_RULE`], `evidence` naming what
/// it granted); the previous holder's pod, when it ran in one, and the pod rule its labels
/// match (`pod_rule`) are kept as diagnostics. Records written before issue 38 carry a pod
/// rule's name in `rule` and no `evidence`; they still read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveredFrom {
    /// What proved the previous holder gone: `kernel_proof` (issue 38), or the pod rule of
    /// an older record (`container_restarted`, `statefulset_pod_replaced`).
    pub rule: String,
    /// The evidence the kernel gave, by stable name: `holder_lock_released` (the recorded
    /// holder file's lock was free) and `read_lease` or `no_transcript` (no open file
    /// description could write the transcript).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// The pod rule the labels match (`container_restarted`, `statefulset_pod_replaced`),
    /// a diagnostic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_rule: Option<String>,
    /// The previous holder's pod UID, when it ran in a pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
    /// The previous holder's pod name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// The previous holder's container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The previous holder's pid.
    pub pid: u64,
    /// The previous record's `acquired_at`.
    pub acquired_at: String,
}

impl RecoveredFrom {
    /// One phrase for operators: the rule and its evidence, then the previous holder, e.g.
    /// "kernel_proof (holder_lock_released, read_lease) from pid 7 of pod w-0 (uid …),
    /// container writer (labels: container_restarted), acquired 2026-…".
    pub fn describe(&self) -> String {
        let mut s = self.rule.clone();
        if !self.evidence.is_empty() {
            s.push_str(&format!(" ({})", self.evidence.join(", ")));
        }
        s.push_str(&format!(" from pid {}", self.pid));
        if let (Some(name), Some(uid)) = (&self.pod_name, &self.pod_uid) {
            s.push_str(&format!(" of pod {name} (uid {uid})"));
        }
        if let Some(c) = &self.container {
            s.push_str(&format!(", container {c}"));
        }
        if let Some(r) = &self.pod_rule {
            s.push_str(&format!(" (labels: {r})"));
        }
        s.push_str(&format!(", acquired {}", self.acquired_at));
        s
    }
}

/// The record key naming the inode of the transcript whose lock the holder keeps (see
/// [`super::transcript_lock`]).
pub const TRANSCRIPT_INO_KEY: &str = "writerctl_transcript_ino";

/// [`RecoveredFrom::rule`] of a reclaim the kernel proved (issue 38).
pub const KERNEL_PROOF_RULE: &str = "kernel_proof";

/// Facts only a sealed record carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealInfo {
    /// `sealed_at` as written.
    pub sealed_at: String,
    /// The transcript proof.
    pub transcript: TranscriptProof,
    /// Schema 3 only: `last_commit_sequence`.
    pub last_commit_sequence: Option<u64>,
    /// Schema 3 only: `committed_prefix_hash`.
    pub committed_prefix_hash: Option<String>,
    /// writerctl's identity extension, when the seal was written by writerctl.
    pub identity: Option<SealedIdentity>,
    /// writerctl's `writerctl_exclusive`: how the sealer proved that no other open file
    /// description could write the transcript (see [`super::exclusive`]); `None` when the
    /// seal does not say (qwen, a direct `writerctl seal` by the writer itself).
    pub exclusive: Option<String>,
}

/// Record state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordState {
    /// An active owner.
    Active,
    /// A sealed handoff record.
    Sealed(SealInfo),
}

/// The owner diagnostics every record carries: what it says about its holder, without the
/// secret owner id (that is [`LockRecord::owner_id`]), so they can be shown as they are
/// (`status`, the dry runs) and judged without access to the secret (liveness).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OwnerFields {
    /// `pid` (values beyond `u64` saturate; any pid above `i32::MAX` is treated as alive).
    pub pid: u64,
    /// `process_start_identity`, if present.
    pub process_start_identity: Option<String>,
    /// `pid_namespace_id`, if present.
    pub pid_namespace_id: Option<u64>,
    /// `hostname`.
    pub hostname: String,
    /// `process_kind`.
    pub process_kind: String,
    /// `acquired_at` as written.
    pub acquired_at: String,
    /// `qwen_version` (`null` → `None`).
    pub qwen_version: Option<String>,
    /// writerctl's extra `writer` key, if present and a string.
    pub writer: Option<String>,
    /// writerctl's epoch (extra key `writerctl_epoch`): a counter of replacements since the
    /// lock was last created — every acquire, takeover and reclaim writes the replaced
    /// record's epoch + 1, but it starts again at 1 after a release or a recovery, so it is
    /// not a fencing token across those. Absent (qwen-written records) or not a non-negative
    /// safe integer counts as 0, as an unknown key must not make a record qwen accepts
    /// unusable.
    pub epoch: u64,
    /// writerctl's `writerctl_pod`: the writer's pod and container, when it ran in one.
    pub pod: Option<PodIdentity>,
    /// writerctl's `writerctl_recovered_from`: what this record replaced under a pod proof
    /// rule (see [`super::pod`]).
    pub recovered_from: Option<RecoveredFrom>,
    /// writerctl's `writerctl_holder_lock`: the holder-lock file whose kernel lock the
    /// holder's process tree keeps (see [`super::holder_lock`]). Kept as written, even when
    /// it is not a valid name or not a string (then `""`): a record that claims a holder
    /// lock is judged by it, and an unusable one only leaves the record fenced.
    pub holder_lock: Option<String>,
    /// writerctl's `writerctl_holder_lock_id`: which file the holder lock is (see
    /// [`super::holder_lock::HolderFileId`]); absent in records of older writerctl, whose
    /// holder lock then proves nothing (issue 38, reproduction 4).
    pub holder_lock_id: Option<String>,
    /// writerctl's `writerctl_transcript_ino`: the inode of the transcript whose lock the
    /// holder keeps (see [`super::transcript_lock`]); names the holding session when another
    /// is refused.
    pub transcript_ino: Option<u64>,
}

/// A valid lock record with the exact bytes it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockRecord {
    /// The exact bytes read or written.
    pub raw: Vec<u8>,
    /// Schema.
    pub schema: Schema,
    /// Active or sealed.
    pub state: RecordState,
    /// `session_id`.
    pub session_id: String,
    /// `owner_id` — secret; never printed.
    pub owner_id: String,
    /// Owner diagnostics.
    pub owner: OwnerFields,
}

impl LockRecord {
    /// True for an active record (schema 1, or `state: "active"`).
    pub fn is_active(&self) -> bool {
        matches!(self.state, RecordState::Active)
    }

    /// Seal facts, if sealed.
    pub fn seal(&self) -> Option<&SealInfo> {
        match &self.state {
            RecordState::Sealed(s) => Some(s),
            RecordState::Active => None,
        }
    }
}

/// Why bytes are not a valid record. The text is for operators; it never contains a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub String);

fn bad(msg: impl Into<String>) -> Malformed {
    Malformed(msg.into())
}

fn non_empty_string<'a>(m: &'a Map<String, Value>, key: &str) -> Result<&'a str, Malformed> {
    match m.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(_) => Err(bad(format!("`{key}` must be a non-empty string"))),
        None => Err(bad(format!("`{key}` is missing"))),
    }
}

/// A JSON number that is an integer (`5.0` and `1e3` count, as `Number.isInteger` does).
fn integer(v: &Value) -> Option<f64> {
    let n = v.as_number()?;
    if let Some(u) = n.as_u64() {
        return Some(u as f64);
    }
    if let Some(i) = n.as_i64() {
        return Some(i as f64);
    }
    let f = n.as_f64()?;
    (f.is_finite() && f.fract() == 0.0).then_some(f)
}

fn safe_integer(v: &Value) -> Option<u64> {
    let f = integer(v)?;
    (f.abs() <= MAX_SAFE_INTEGER && f >= 0.0).then_some(f as u64)
}

/// `Date.parse`-compatible enough: RFC 3339 and ISO 8601. Anything else is rejected, which
/// only fails closed (QWEN_FORMAT §8.3).
pub fn parse_timestamp(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &Rfc3339).or_else(|_| OffsetDateTime::parse(s, &Iso8601::DEFAULT)).ok()
}

/// `YYYYMMDDTHHMMSSZ` (UTC, to the second): the stamp in the names of files `recover`
/// makes (its folders, the side file of a cut tail).
pub fn compact_timestamp(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// `toISOString()` format: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_timestamp(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

fn is_lower_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `m[key]` as a safe integer >= 0; `context` prefixes the error (`"transcript: "`).
fn safe_integer_at(m: &Map<String, Value>, context: &str, key: &str) -> Result<u64, Malformed> {
    m.get(key).and_then(safe_integer).ok_or_else(|| bad(format!("{context}`{key}` must be a safe integer >= 0")))
}

/// `m[key]` as 64 lowercase hex digits (a SHA-256); `context` prefixes the error.
fn lower_hex64_at(m: &Map<String, Value>, context: &str, key: &str) -> Result<String, Malformed> {
    match m.get(key) {
        Some(Value::String(s)) if is_lower_hex64(s) => Ok(s.clone()),
        _ => Err(bad(format!("{context}`{key}` must be 64 lowercase hex digits"))),
    }
}

fn parse_proof(v: Option<&Value>) -> Result<TranscriptProof, Malformed> {
    let Some(Value::Object(t)) = v else {
        return Err(bad("`transcript` must be an object"));
    };
    let relative_path = non_empty_string(t, "relative_path").map_err(|e| bad(format!("transcript: {e}")))?;
    let Some(Value::Bool(exists)) = t.get("exists") else {
        return Err(bad("transcript: `exists` must be a boolean"));
    };
    let byte_length = safe_integer_at(t, "transcript: ", "byte_length")?;
    let sha256 = lower_hex64_at(t, "transcript: ", "sha256")?;
    if !*exists && byte_length != 0 {
        return Err(bad("transcript: a missing transcript must have byte_length 0"));
    }
    Ok(TranscriptProof { relative_path: relative_path.to_owned(), exists: *exists, byte_length, sha256 })
}

/// Parses and validates record bytes exactly as qwen does (QWEN_FORMAT §2.2).
///
/// Accepted: surrounding JSON whitespace, duplicate keys (last wins), unknown keys.
/// Rejected as malformed: a UTF-8 BOM, invalid UTF-8, any schema other than 1/2/3 (as a
/// number), any state other than active/sealed, and every field rule of §2.2.
pub fn parse_record(raw: &[u8]) -> Result<LockRecord, Malformed> {
    if raw.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(bad("record starts with a UTF-8 byte-order mark"));
    }
    let value: Value = serde_json::from_slice(raw).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    let Value::Object(m) = value else {
        return Err(bad("record is not a JSON object"));
    };

    let session_id = non_empty_string(&m, "session_id")?.to_owned();
    let owner_id = non_empty_string(&m, "owner_id")?.to_owned();
    let pid_f =
        m.get("pid").and_then(integer).filter(|p| *p > 0.0).ok_or_else(|| bad("`pid` must be an integer > 0"))?;
    // `as` saturates at u64::MAX; every pid above i32::MAX is treated as alive anyway.
    let pid = pid_f as u64;
    let process_start_identity = match m.get("process_start_identity") {
        None => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => return Err(bad("`process_start_identity` must be absent or a non-empty string")),
    };
    let pid_namespace_id = match m.get("pid_namespace_id") {
        None => None,
        Some(v) => match safe_integer(v) {
            Some(n) if n > 0 => Some(n),
            _ => return Err(bad("`pid_namespace_id` must be absent or a safe integer > 0")),
        },
    };
    let hostname = non_empty_string(&m, "hostname")?.to_owned();
    let process_kind = match m.get("process_kind") {
        Some(Value::String(s)) if PROCESS_KINDS.contains(&s.as_str()) => s.clone(),
        _ => return Err(bad("`process_kind` must be one of interactive, acp, daemon, unknown")),
    };
    let acquired_at = match m.get("acquired_at") {
        Some(Value::String(s)) if parse_timestamp(s).is_some() => s.clone(),
        _ => return Err(bad("`acquired_at` must be an RFC 3339 / ISO 8601 timestamp")),
    };
    let qwen_version = match m.get("qwen_version") {
        Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("`qwen_version` must be null or a string")),
        None => return Err(bad("`qwen_version` is missing")),
    };
    let writer = m.get("writer").and_then(Value::as_str).map(str::to_owned);
    let epoch = m.get(EPOCH_KEY).and_then(safe_integer).unwrap_or(0);
    // Extra keys are read leniently: one that does not parse is as if absent (qwen ignores
    // them all), which only ever leaves a record fenced.
    let pod = m.get(POD_KEY).and_then(|v| serde_json::from_value(v.clone()).ok());
    let recovered_from = m.get(RECOVERED_KEY).and_then(|v| serde_json::from_value(v.clone()).ok());
    // Not lenient like the others: a record naming a holder lock must never fall back to the
    // pid rule because its value is odd (see `OwnerFields::holder_lock`).
    let holder_lock = m.get(HOLDER_LOCK_KEY).map(|v| v.as_str().unwrap_or_default().to_owned());
    // Lenient: an odd value is as if absent, which leaves the holder lock unverifiable.
    let holder_lock_id = m.get(HOLDER_LOCK_ID_KEY).and_then(Value::as_str).map(str::to_owned);
    let transcript_ino = m.get(TRANSCRIPT_INO_KEY).and_then(Value::as_u64);
    let owner = OwnerFields {
        pid,
        process_start_identity,
        pid_namespace_id,
        hostname,
        process_kind,
        acquired_at,
        qwen_version,
        writer,
        epoch,
        pod,
        recovered_from,
        holder_lock,
        holder_lock_id,
        transcript_ino,
    };

    let schema_version = m.get("schema_version").and_then(integer);
    let state = m.get("state");
    let (schema, state) = match schema_version {
        Some(1.0) => {
            if state.is_some() {
                return Err(bad("schema 1 records must not carry `state`"));
            }
            (Schema::V1, RecordState::Active)
        }
        Some(2.0) => (Schema::V2, parse_state(&m, state, false)?),
        Some(3.0) => {
            let format_version = m
                .get("format_version")
                .and_then(safe_integer)
                .filter(|f| *f >= 1)
                .ok_or_else(|| bad("`format_version` must be a safe integer >= 1"))?;
            (Schema::V3 { format_version }, parse_state(&m, state, true)?)
        }
        _ => return Err(bad("`schema_version` must be the number 1, 2 or 3")),
    };
    Ok(LockRecord { raw: raw.to_vec(), schema, state, session_id, owner_id, owner })
}

fn parse_state(m: &Map<String, Value>, state: Option<&Value>, managed: bool) -> Result<RecordState, Malformed> {
    match state {
        Some(Value::String(s)) if s == "active" => Ok(RecordState::Active),
        Some(Value::String(s)) if s == "sealed" => {
            let sealed_at = match m.get("sealed_at") {
                Some(Value::String(s)) if parse_timestamp(s).is_some() => s.clone(),
                _ => return Err(bad("`sealed_at` must be an RFC 3339 / ISO 8601 timestamp")),
            };
            let transcript = parse_proof(m.get("transcript"))?;
            let (last_commit_sequence, committed_prefix_hash) = if managed {
                let seq = safe_integer_at(m, "", "last_commit_sequence")?;
                let hash = lower_hex64_at(m, "", "committed_prefix_hash")?;
                (Some(seq), Some(hash))
            } else {
                (None, None)
            };
            let identity = match m.get(IDENTITY_KEY) {
                None => None,
                Some(v) => Some(
                    serde_json::from_value::<SealedIdentity>(v.clone())
                        // Not the serde message: it would echo the record's values.
                        .map_err(|_| bad(format!("`{IDENTITY_KEY}` is not an object of ino, mode, uid, gid, nlink")))?,
                ),
            };
            let exclusive = match m.get(super::exclusive::EXCLUSIVE_KEY) {
                None => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return Err(bad(format!("`{}` must be a string", super::exclusive::EXCLUSIVE_KEY))),
            };
            Ok(RecordState::Sealed(SealInfo {
                sealed_at,
                transcript,
                last_commit_sequence,
                committed_prefix_hash,
                identity,
                exclusive,
            }))
        }
        _ => Err(bad("`state` must be \"active\" or \"sealed\"")),
    }
}

/// The identity of the process a new record names as its holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// Its pid.
    pub pid: u32,
    /// `linux:<boot_id>:<ticks>`, when readable.
    pub process_start_identity: Option<String>,
    /// Its pid namespace inode, when readable.
    pub pid_namespace_id: Option<u64>,
    /// `os.hostname()`.
    pub hostname: String,
}

/// The extra record key of writerctl's epoch: a counter of replacements since the lock was
/// last created (not a fencing token across release or recovery, where it restarts at 1).
pub const EPOCH_KEY: &str = "writerctl_epoch";

/// writerctl's own schema-2 active record, in qwen's key order plus `writer`,
/// `writerctl_epoch` and the optional extensions.
#[derive(Serialize)]
struct ActiveRecordV2<'a> {
    schema_version: u8,
    state: &'static str,
    session_id: &'a str,
    owner_id: &'a str,
    pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    process_start_identity: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pid_namespace_id: Option<u64>,
    hostname: &'a str,
    process_kind: &'a str,
    acquired_at: &'a str,
    qwen_version: Option<&'a str>,
    writer: &'a str,
    writerctl_epoch: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    writerctl_pod: Option<&'a PodIdentity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    writerctl_recovered_from: Option<&'a RecoveredFrom>,
    #[serde(skip_serializing_if = "Option::is_none")]
    writerctl_holder_lock: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    writerctl_holder_lock_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    writerctl_transcript_ino: Option<u64>,
}

/// writerctl's extra keys of a new active record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extensions {
    /// `writerctl_epoch`.
    pub epoch: u64,
    /// `writerctl_pod`.
    pub pod: Option<PodIdentity>,
    /// `writerctl_recovered_from`.
    pub recovered_from: Option<RecoveredFrom>,
    /// `writerctl_holder_lock`: the holder-lock file name.
    pub holder_lock: Option<String>,
    /// `writerctl_holder_lock_id`: the holder-lock file's identity.
    pub holder_lock_id: Option<String>,
    /// `writerctl_transcript_ino`: the transcript whose lock the holder keeps.
    pub transcript_ino: Option<u64>,
}

impl Extensions {
    /// Only an epoch.
    pub fn epoch(epoch: u64) -> Extensions {
        Extensions { epoch, ..Extensions::default() }
    }
}

/// Serializes and re-parses a new active record; the returned record's `raw` is exactly
/// the bytes to install. `process_kind` must be one of [`PROCESS_KINDS`].
pub fn new_active_record(
    session_id: &str,
    owner: &OwnerToken,
    holder: &Holder,
    process_kind: &str,
    acquired_at: OffsetDateTime,
    ext: &Extensions,
) -> Result<LockRecord, Malformed> {
    let acquired_at = format_timestamp(acquired_at);
    let writer = writer_tag();
    let rec = ActiveRecordV2 {
        schema_version: 2,
        state: "active",
        session_id,
        owner_id: owner.expose(),
        pid: holder.pid,
        process_start_identity: holder.process_start_identity.as_deref(),
        pid_namespace_id: holder.pid_namespace_id,
        hostname: &holder.hostname,
        process_kind,
        acquired_at: &acquired_at,
        qwen_version: None,
        writer: &writer,
        writerctl_epoch: ext.epoch,
        writerctl_pod: ext.pod.as_ref(),
        writerctl_recovered_from: ext.recovered_from.as_ref(),
        writerctl_holder_lock: ext.holder_lock.as_deref(),
        writerctl_holder_lock_id: ext.holder_lock_id.as_deref(),
        writerctl_transcript_ino: ext.transcript_ino,
    };
    let raw = serde_json::to_vec(&rec).map_err(|e| bad(e.to_string()))?;
    // Round-trip through the validator: we never install a record qwen would reject.
    parse_record(&raw)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;

    const V2: &str = r#"{"schema_version":2,"state":"active","session_id":"s","owner_id":"o","pid":12345,"process_start_identity":"linux:6a1d4c3e-9b2f-4f11-8a77-2c5d9e0f1a2b:987654","pid_namespace_id":4026531836,"hostname":"devbox","process_kind":"acp","acquired_at":"2026-07-28T00:00:00.000Z","qwen_version":"0.0.1"}"#;
    const PROOF: &str = r#""transcript":{"relative_path":"chats/s.jsonl","exists":true,"byte_length":3,"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}"#;

    fn with(base: &str, edit: impl FnOnce(&mut Map<String, Value>)) -> Vec<u8> {
        let mut m: Map<String, Value> = serde_json::from_str(base).unwrap();
        edit(&mut m);
        serde_json::to_vec(&m).unwrap()
    }

    fn sealed_v2() -> String {
        V2.replace(r#""state":"active""#, r#""state":"sealed""#).trim_end_matches('}').to_string()
            + r#","sealed_at":"2026-07-28T00:00:01.000Z","#
            + PROOF
            + "}"
    }

    #[test]
    fn parses_v2_active_and_keeps_bytes() {
        let r = parse_record(V2.as_bytes()).unwrap();
        assert_eq!(r.raw, V2.as_bytes());
        assert_eq!(r.schema, Schema::V2);
        assert!(r.is_active());
        assert_eq!(r.owner.pid, 12345);
        assert_eq!(r.owner.pid_namespace_id, Some(4026531836));
        assert_eq!(r.owner.qwen_version.as_deref(), Some("0.0.1"));
    }

    #[test]
    fn parses_v1_without_state_only() {
        let v1 = with(V2, |m| {
            m.insert("schema_version".into(), 1.into());
            m.remove("state");
        });
        let r = parse_record(&v1).unwrap();
        assert_eq!(r.schema, Schema::V1);
        assert!(r.is_active());
        let v1_state = with(V2, |m| {
            m.insert("schema_version".into(), 1.into());
        });
        assert!(parse_record(&v1_state).is_err());
        let v1_sealed = sealed_v2().replace(r#""schema_version":2"#, r#""schema_version":1"#);
        assert!(parse_record(v1_sealed.as_bytes()).is_err(), "schema 1 can never be sealed");
    }

    #[test]
    fn parses_v2_sealed() {
        let s = sealed_v2();
        let r = parse_record(s.as_bytes()).unwrap();
        let seal = r.seal().unwrap();
        assert_eq!(seal.transcript.relative_path, "chats/s.jsonl");
        assert_eq!(seal.transcript.byte_length, 3);
    }

    #[test]
    fn parses_v3_active_and_sealed() {
        let a = with(V2, |m| {
            m.insert("schema_version".into(), 3.into());
            m.insert("format_version".into(), 1.into());
        });
        assert_eq!(parse_record(&a).unwrap().schema, Schema::V3 { format_version: 1 });
        let no_fv = with(V2, |m| {
            m.insert("schema_version".into(), 3.into());
        });
        assert!(parse_record(&no_fv).is_err());
        let sealed: Map<String, Value> = serde_json::from_str(&sealed_v2()).unwrap();
        let mut s3 = sealed.clone();
        s3.insert("schema_version".into(), 3.into());
        s3.insert("format_version".into(), 2.into());
        assert!(parse_record(&serde_json::to_vec(&s3).unwrap()).is_err(), "needs commit proof");
        s3.insert("last_commit_sequence".into(), 0.into());
        s3.insert("committed_prefix_hash".into(), "a".repeat(64).into());
        let r = parse_record(&serde_json::to_vec(&s3).unwrap()).unwrap();
        assert_eq!(r.seal().unwrap().last_commit_sequence, Some(0));
        s3.insert("committed_prefix_hash".into(), "A".repeat(64).into());
        assert!(parse_record(&serde_json::to_vec(&s3).unwrap()).is_err(), "uppercase hash");
    }

    #[test]
    fn accepts_whitespace_duplicates_unknown_keys_and_integral_floats() {
        let spaced = format!(" \n{V2}\n");
        assert!(parse_record(spaced.as_bytes()).is_ok());
        let dup = V2.replace(r#""pid":12345"#, r#""pid":-1,"pid":7"#);
        assert_eq!(parse_record(dup.as_bytes()).unwrap().owner.pid, 7);
        let extra = V2.replace(r#""pid":12345"#, r#""pid":12345,"zzz":[1,2]"#);
        assert!(parse_record(extra.as_bytes()).is_ok());
        for p in ["5.0", "1e3"] {
            let s = V2.replace("12345", p);
            assert!(parse_record(s.as_bytes()).is_ok(), "{p}");
        }
        let huge = V2.replace("12345", "99999999999999999999999");
        assert_eq!(parse_record(huge.as_bytes()).unwrap().owner.pid, u64::MAX);
    }

    #[test]
    fn rejects_every_malformed_kind() {
        let bom = [&[0xEF, 0xBB, 0xBF][..], V2.as_bytes()].concat();
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("not json", b"not-json".to_vec()),
            ("empty", Vec::new()),
            ("array", b"[]".to_vec()),
            ("bom", bom),
            ("schema string", V2.replace(r#""schema_version":2"#, r#""schema_version":"2""#).into_bytes()),
            ("schema 4", V2.replace(r#""schema_version":2"#, r#""schema_version":4"#).into_bytes()),
            (
                "schema missing",
                with(V2, |m| {
                    m.remove("schema_version");
                }),
            ),
            ("state other", V2.replace(r#""active""#, r#""paused""#).into_bytes()),
            (
                "state missing",
                with(V2, |m| {
                    m.remove("state");
                }),
            ),
            ("session empty", V2.replace(r#""session_id":"s""#, r#""session_id":"""#).into_bytes()),
            ("owner number", V2.replace(r#""owner_id":"o""#, r#""owner_id":5"#).into_bytes()),
            ("pid zero", V2.replace("12345", "0").into_bytes()),
            ("pid negative", V2.replace("12345", "-3").into_bytes()),
            ("pid fraction", V2.replace("12345", "1.5").into_bytes()),
            ("pid string", V2.replace("12345", r#""12345""#).into_bytes()),
            (
                "identity null",
                with(V2, |m| {
                    m.insert("process_start_identity".into(), Value::Null);
                }),
            ),
            (
                "identity empty",
                with(V2, |m| {
                    m.insert("process_start_identity".into(), "".into());
                }),
            ),
            (
                "ns null",
                with(V2, |m| {
                    m.insert("pid_namespace_id".into(), Value::Null);
                }),
            ),
            (
                "ns zero",
                with(V2, |m| {
                    m.insert("pid_namespace_id".into(), 0.into());
                }),
            ),
            (
                "ns unsafe",
                with(V2, |m| {
                    m.insert("pid_namespace_id".into(), (1u64 << 53).into());
                }),
            ),
            (
                "host missing",
                with(V2, |m| {
                    m.remove("hostname");
                }),
            ),
            ("kind other", V2.replace(r#""acp""#, r#""robot""#).into_bytes()),
            ("acquired garbage", V2.replace("2026-07-28T00:00:00.000Z", "yesterday").into_bytes()),
            (
                "qwen_version missing",
                with(V2, |m| {
                    m.remove("qwen_version");
                }),
            ),
            (
                "qwen_version number",
                with(V2, |m| {
                    m.insert("qwen_version".into(), 1.into());
                }),
            ),
            (
                "invalid utf8",
                V2.replace("devbox", "dev\u{FFFD}box")
                    .replace('\u{FFFD}', "\u{1}")
                    .into_bytes()
                    .into_iter()
                    .map(|b| if b == 1 { 0xFF } else { b })
                    .collect(),
            ),
        ];
        for (name, raw) in cases {
            assert!(parse_record(&raw).is_err(), "{name} should be malformed");
        }
    }

    #[test]
    fn rejects_bad_proofs() {
        let s = sealed_v2();
        let cases = [
            s.replace(r#""exists":true"#, r#""exists":"yes""#),
            s.replace(r#""byte_length":3"#, r#""byte_length":-1"#),
            s.replace(r#""exists":true"#, r#""exists":false"#),
            s.replace("e3b0c442", "E3B0C442"),
            s.replace("e3b0c442", "e3b0c44"),
            s.replace(r#""relative_path":"chats/s.jsonl""#, r#""relative_path":"""#),
            s.replace(r#","sealed_at":"2026-07-28T00:00:01.000Z""#, ""),
            s.replace(PROOF, r#""transcript":[]"#),
        ];
        for c in cases {
            assert!(parse_record(c.as_bytes()).is_err(), "{c}");
        }
        let missing_ok = s.replace(r#""exists":true,"byte_length":3"#, r#""exists":false,"byte_length":0"#);
        assert!(parse_record(missing_ok.as_bytes()).is_ok());
    }

    /// A holder with every identity field set: pid 42 on host `h`.
    fn full_holder() -> Holder {
        Holder {
            pid: 42,
            process_start_identity: Some("linux:abc:1".into()),
            pid_namespace_id: Some(7),
            hostname: "h".into(),
        }
    }

    #[test]
    fn serializes_in_qwen_key_order_and_validates() {
        let holder = full_holder();
        let owner = OwnerToken::parse("0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f").unwrap();
        let t = OffsetDateTime::from_unix_timestamp_nanos(1_785_196_800_123_456_789).unwrap();
        let r = new_active_record("s", &owner, &holder, "unknown", t, &Extensions::epoch(3)).unwrap();
        let expected = format!(
            r#"{{"schema_version":2,"state":"active","session_id":"s","owner_id":"0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f","pid":42,"process_start_identity":"linux:abc:1","pid_namespace_id":7,"hostname":"h","process_kind":"unknown","acquired_at":"2026-07-28T00:00:00.123Z","qwen_version":null,"writer":"writerctl {}","writerctl_epoch":3}}"#,
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(String::from_utf8(r.raw.clone()).unwrap(), expected);
        assert_eq!(r.owner.epoch, 3);
        let bare = Holder { process_start_identity: None, pid_namespace_id: None, ..holder };
        let r = new_active_record("s", &owner, &bare, "acp", t, &Extensions::epoch(1)).unwrap();
        let text = String::from_utf8(r.raw).unwrap();
        assert!(!text.contains("process_start_identity") && !text.contains("pid_namespace_id"));
        assert!(new_active_record("s", &owner, &bare, "robot", t, &Extensions::epoch(1)).is_err());
    }

    /// The epoch is an extra key: absent (every qwen record) or unusable counts as
    /// 0 and never makes a record qwen accepts malformed.
    #[test]
    fn the_epoch_is_read_leniently() {
        assert_eq!(parse_record(V2.as_bytes()).unwrap().owner.epoch, 0);
        for (v, want) in [(Value::from(7), 7), (Value::from("7"), 0), (Value::from(-1), 0), (Value::from(1.5), 0)] {
            let raw = with(V2, |m| {
                m.insert(EPOCH_KEY.into(), v.clone());
            });
            assert_eq!(parse_record(&raw).unwrap().owner.epoch, want, "{v}");
        }
    }

    /// Issue 27: `writerctl_holder_lock` comes last (then its identity, issue 38), and any
    /// value — even one that is not a string — is kept, so a record that claims a holder
    /// lock is never judged by pid alone.
    #[test]
    fn the_holder_lock_key_is_written_last_and_read_as_written() {
        let holder = full_holder();
        let owner = OwnerToken::generate();
        let t = OffsetDateTime::now_utc();
        let name = "s.lock.holder.0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f";
        let id = "42:1700000000.000000001";
        let ext =
            Extensions { holder_lock: Some(name.into()), holder_lock_id: Some(id.into()), ..Extensions::epoch(2) };
        let r = new_active_record("s", &owner, &holder, "unknown", t, &ext).unwrap();
        let text = String::from_utf8(r.raw.clone()).unwrap();
        assert!(
            text.ends_with(&format!(
                r#","writerctl_epoch":2,"writerctl_holder_lock":"{name}","writerctl_holder_lock_id":"{id}"}}"#
            )),
            "{text}"
        );
        assert_eq!(r.owner.holder_lock.as_deref(), Some(name));
        assert_eq!(r.owner.holder_lock_id.as_deref(), Some(id));
        assert_eq!(parse_record(V2.as_bytes()).unwrap().owner.holder_lock, None);
        for v in [Value::from(5), Value::Null, Value::from("../x")] {
            let raw = with(V2, |m| {
                m.insert(HOLDER_LOCK_KEY.into(), v.clone());
            });
            let rec = parse_record(&raw).expect("qwen ignores the key");
            assert!(rec.owner.holder_lock.is_some(), "{v}: a claimed holder lock must not vanish");
        }
    }

    #[test]
    fn owner_token_debug_is_redacted() {
        let t = OwnerToken::generate();
        assert!(!format!("{t:?}").contains(t.expose()));
        assert_eq!(t.expose().len(), 36);
        assert!(OwnerToken::parse("  \n").is_none());
    }
}
