//! The coordinator's typed errors, each with one stable [`ErrorCode`].
//!
//! A store failure keeps the error that caused it ([`StoreError`], returned by
//! [`source`](std::error::Error::source)); an invalid argument names its field
//! ([`InvalidArgument`]). Neither changes what a caller reads: the code, message, hint and
//! details of every error are the ones scripts already match on.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use super::work_claims::shapes::WorkClaimStatus;
use crate::error::ErrorCode;

/// Why a coordinator verb failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    /// A handoff by a session that is not the current master (seed 000 `not_master`).
    #[error("session {session_id} is not the master of project {project}")]
    NotMaster {
        /// The project.
        project: String,
        /// The caller.
        session_id: String,
    },
    /// The caller's view of the master is stale: the epoch moved (seed 000 `stale_master`).
    #[error("the master changed: expected epoch {expected}, the project is at epoch {actual}")]
    StaleMaster {
        /// The epoch the caller saw.
        expected: u64,
        /// The epoch now.
        actual: u64,
    },
    /// No registered row matches the target (seed 000 resolution step 3).
    #[error("no controller is registered as {what} in project {project}")]
    TargetNotRegistered {
        /// The project.
        project: String,
        /// The identity (and session id, when one was named).
        what: String,
    },
    /// Rows exist for the identity but none heartbeat within the freshness threshold (step 4).
    #[error("every controller registered as {identity} is stale (no heartbeat within {freshness_seconds} s)")]
    TargetStale {
        /// The identity.
        identity: String,
        /// The threshold.
        freshness_seconds: u64,
        /// The stale rows' session ids.
        sessions: Vec<String>,
    },
    /// More than one fresh row for the identity and no session id named (step 6).
    #[error("{identity} has {} fresh controllers: {}", candidates.len(), candidates.join(", "))]
    TargetAmbiguous {
        /// The identity.
        identity: String,
        /// The candidate session ids, sorted.
        candidates: Vec<String>,
    },
    /// Unknown operator or wrong password; which of the two is never said.
    #[error("invalid operator credentials")]
    InvalidOperatorCredentials {
        /// How long this refusal is held back before it is answered: the back-off the
        /// operator id's recent failures (this one included) earned.
        next_delay_ms: u64,
    },
    /// The session token does not belong to that session in that project.
    #[error("the session token does not match session {session_id} in project {project}")]
    Unauthorized {
        /// The project.
        project: String,
        /// The session named.
        session_id: String,
    },
    /// Re-registering a controller key whose row is alive, without that row's token.
    #[error(
        "{identity} is registered on this key with a live session {session_id}; re-registering it needs its current token"
    )]
    RegistrationHeld {
        /// The identity.
        identity: String,
        /// The live session.
        session_id: String,
    },
    /// `session register` with neither the identity's key nor the row's current token (and
    /// the identity not open to registration). Says nothing about whether the identity is
    /// enrolled or registered.
    #[error(
        "registering as {identity} in project {project} needs proof: the identity's key or the row's current session token"
    )]
    RegistrationUnproven {
        /// The project.
        project: String,
        /// The identity named.
        identity: String,
    },
    /// A claim or focus write, or an inbox read, without a session token of a controller
    /// registered as that identity. The same answer whether or not such a controller exists.
    #[error("{act} needs a session token of a controller registered as {identity} in project {project}")]
    IdentityUnproven {
        /// The project.
        project: String,
        /// The seat or inbox identity.
        identity: String,
        /// What was attempted (`claim take by alice`, `reading the inbox of`...).
        act: String,
    },
    /// `identity add` for an identity already enrolled (never overwritten).
    #[error("identity {identity} is already enrolled in project {project}")]
    IdentityExists {
        /// The project.
        project: String,
        /// The identity.
        identity: String,
    },
    /// A new name a person would read as an existing one (TR39 skeleton, case folded):
    /// issue 28 point 6. The existing spelling is named so the caller can use it.
    #[error("{what} {name:?} looks like the existing {what} {existing:?}; names that read alike are refused")]
    NameConfusable {
        /// What kind of name (`identity`).
        what: String,
        /// The refused name.
        name: String,
        /// The existing look-alike.
        existing: String,
    },
    /// A call that needs a bearer token (a session token) sent without one.
    #[error("missing Authorization: Bearer <token>")]
    MissingToken,
    /// An administrative call without the server's admin token.
    #[error("this call needs the coordinator's admin token")]
    AdminRequired,
    /// `operator add` for an id that already has a credential (never overwritten).
    #[error("operator {0} already exists")]
    OperatorExists(String),
    /// A take on a task whose claim is live or done (seed 002: one live claim per task).
    #[error("task {task} {}", held(.owner, .status))]
    ClaimTaken {
        /// The task.
        task: String,
        /// Its owner.
        owner: Option<String>,
        /// Its status.
        status: WorkClaimStatus,
        /// Its version.
        version: u64,
    },
    /// An owner write sent with a version the claim is no longer at.
    #[error("claim {task} is at version {actual}, not {expected}")]
    VersionConflict {
        /// The task.
        task: String,
        /// The version the caller read.
        expected: u64,
        /// The version now.
        actual: u64,
    },
    /// A claim that declares a TTL or a deputy without a next step.
    #[error("claim {task} declares a TTL or a deputy, so it needs a non-empty next step")]
    NextStepRequired {
        /// The task.
        task: String,
    },
    /// An owner write by a seat that does not own the claim.
    #[error("{seat} does not own claim {task} (it {})", held(.owner, .status))]
    NotClaimOwner {
        /// The task.
        task: String,
        /// The caller.
        seat: String,
        /// The owner, if any.
        owner: Option<String>,
        /// The status.
        status: WorkClaimStatus,
    },
    /// No such channel or claim.
    #[error("{0}")]
    NotFound(String),
    /// `channel create` for an existing channel.
    #[error("channel {0} already exists")]
    ChannelExists(String),
    /// An inbox read from a cursor behind the inbox's retention trim: events after the
    /// cursor may have been removed unread, so nothing is returned (never a silent skip).
    #[error(
        "inbox cursor {after} is behind the retention trim: events up to cursor {trimmed_through} were removed{}",
        oldest_held(.oldest)
    )]
    InboxCursorTrimmed {
        /// The cursor the reader sent.
        after: u64,
        /// The highest cursor retention removed from this inbox.
        trimmed_through: u64,
        /// The oldest cursor the inbox still holds, if it holds any.
        oldest: Option<u64>,
    },
    /// `audit export --cursor C` for a row the log does not hold (issue 30): removed by
    /// retention, or never handed out. Exporting on from it could skip rows unseen.
    #[error("audit cursor {cursor} names no row the audit log holds (removed by retention, or never handed out){}", oldest_audit(.oldest))]
    AuditCursorUnknown {
        /// The cursor the reader sent.
        cursor: u64,
        /// The oldest cursor the log still holds, if it holds any.
        oldest: Option<u64>,
    },
    /// A bad argument (empty identity, bad store address, ...), naming the field or flag.
    /// Built with [`ClaimError::invalid`].
    #[error("{0}")]
    InvalidArgument(InvalidArgument),
    /// The store cannot be reached or stayed busy; retry later.
    #[error("coordinator store unavailable: {0}")]
    Unavailable(String),
    /// The store failed in a way retrying will not fix (corrupt file, newer schema). Its
    /// [`source`](std::error::Error::source) is the error that caused it, when there is one.
    /// Built with [`ClaimError::store`] or [`ClaimError::store_because`].
    #[error(transparent)]
    Store(StoreError),
    /// A seat's (or session's) writes came faster than the server's per-seat rate (issue
    /// 28): refused before the engine, so nothing was written.
    #[error("{what} wrote faster than this coordinator's per-seat rate; nothing was written")]
    RateLimited {
        /// The seat or session (`seat alice`, `session s-1`).
        what: String,
        /// How long until the next write is accepted.
        retry_after_ms: u64,
    },
    /// A replayed request id whose write was applied, but whose answer cannot be given: it
    /// held a secret the store could not keep sealed (the request presented no credential),
    /// or what it named is gone (the session was deregistered or re-registered, the key
    /// rotated). Issue 28 point 2: a replay never hands out a secret that no longer holds.
    #[error("the {verb} with request id {request_id} was applied, but its answer is not kept: {reason}")]
    AnswerNotKept {
        /// The request id.
        request_id: String,
        /// The verb (`session.register`, `identity.add`, ...).
        verb: String,
        /// Why (`the session it registered was deregistered or registered again since`).
        reason: String,
    },
    /// An error a remote coordinator answered with, relayed with its code unchanged.
    #[error("{message}")]
    Remote {
        /// The code the server sent.
        code: ErrorCode,
        /// Its message.
        message: String,
        /// Its hint.
        hint: Option<String>,
        /// Its details (candidates, epochs), if any.
        details: Option<serde_json::Value>,
    },
}

/// A bad argument, with the field (or flag, or argument) it is about as data, so a caller
/// can tell which input to fix without parsing the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidArgument {
    /// The field, flag or argument at fault, by the name the caller knows it by: the flag
    /// when the message names one (`--ttl-minutes`, `--redis-ca-file`), else the noun the
    /// message opens with (`request id`, `postgres address`, `identity`).
    pub field: Cow<'static, str>,
    /// The whole message the caller reads (it usually names the field itself).
    pub message: String,
}

impl fmt::Display for InvalidArgument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A store failure retrying will not fix, and the error that caused it when there is one
/// (a Redis, Postgres, SQLite, I/O or JSON error), returned by
/// [`source`](std::error::Error::source) so a caller can walk the chain or downcast it.
///
/// The message is rendered once, when the error is built, so what the caller reads stays
/// exactly what it was before the cause was kept. The cause sits behind an `Arc`, not a
/// `Box`, because [`ClaimError`] is `Clone`: a watch's latest answer, error included, is
/// handed to every request waiting on it (`coordinator::server::watchers`).
#[derive(Debug, Clone)]
pub struct StoreError {
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl StoreError {
    /// A failure the store noticed itself (a reply of the wrong shape, a broken invariant):
    /// there is no underlying error to keep.
    pub fn new(message: impl Into<String>) -> StoreError {
        StoreError { message: message.into(), source: None }
    }

    /// A failure caused by `source`, said as "`context`: `source`".
    pub fn because<E>(context: impl fmt::Display, source: E) -> StoreError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        StoreError { message: format!("{context}: {source}"), source: Some(Arc::new(source)) }
    }

    /// Keeps `source` as the cause of a failure whose message is already written (for a
    /// message that is not "context: source", e.g. one that quotes only part of it).
    pub fn with_source<E>(mut self, source: E) -> StoreError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        self.source = Some(Arc::new(source));
        self
    }

    /// What went wrong, without the "coordinator store failed" prefix.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "coordinator store failed: {}", self.message)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<StoreError> for ClaimError {
    fn from(e: StoreError) -> ClaimError {
        ClaimError::Store(e)
    }
}

impl From<InvalidArgument> for ClaimError {
    fn from(e: InvalidArgument) -> ClaimError {
        ClaimError::InvalidArgument(e)
    }
}

/// Two store errors are equal when they say the same thing: an error's cause has no
/// equality of its own, and tests compare what a caller would read.
impl PartialEq for StoreError {
    fn eq(&self, other: &StoreError) -> bool {
        self.message == other.message
    }
}

impl Eq for StoreError {}

/// "; the oldest cursor still held is N" (or that none is).
fn oldest_held(oldest: &Option<u64>) -> String {
    match oldest {
        Some(c) => format!("; the oldest cursor still held is {c}"),
        None => "; the inbox holds no older event".into(),
    }
}

fn oldest_audit(oldest: &Option<u64>) -> String {
    match oldest {
        Some(c) => format!("; the oldest cursor held is {c}"),
        None => "; the audit log is empty".into(),
    }
}

/// "is claimed by alice", "is released", "is done".
fn held(owner: &Option<String>, status: &WorkClaimStatus) -> String {
    match (status, owner) {
        (WorkClaimStatus::Claimed, Some(o)) => format!("is claimed by {o}"),
        (s, _) => format!("is {}", s.as_str()),
    }
}

impl ClaimError {
    /// An invalid argument: `field` names the field, flag or argument at fault, `message`
    /// is the whole text the caller reads.
    pub fn invalid(field: impl Into<Cow<'static, str>>, message: impl Into<String>) -> ClaimError {
        ClaimError::InvalidArgument(InvalidArgument { field: field.into(), message: message.into() })
    }

    /// A store failure with no underlying error to keep (see [`StoreError::new`]).
    pub fn store(message: impl Into<String>) -> ClaimError {
        ClaimError::Store(StoreError::new(message))
    }

    /// A store failure caused by `source`, said as "`context`: `source`"; `source` stays
    /// reachable through [`std::error::Error::source`].
    pub fn store_because<E>(context: impl fmt::Display, source: E) -> ClaimError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        ClaimError::Store(StoreError::because(context, source))
    }

    /// The `{"error":{...}}` document the CLI prints and the server answers with.
    pub fn to_json(&self) -> serde_json::Value {
        let mut body =
            serde_json::json!({"code": self.code().as_str(), "message": self.to_string(), "hint": self.hint()});
        if let Some(serde_json::Value::Object(extra)) = self.details() {
            for (k, v) in extra {
                body[k] = v;
            }
        }
        serde_json::json!({ "error": body })
    }

    /// Rebuilds a relayed error from an `{"error":{...}}` document; None if it is not one
    /// or names a code this build does not know.
    pub fn from_json(doc: &serde_json::Value) -> Option<ClaimError> {
        let e = doc.get("error")?.as_object()?;
        let code = ErrorCode::parse(e.get("code")?.as_str()?)?;
        let message = e.get("message").and_then(|m| m.as_str()).unwrap_or("").to_string();
        let hint = e.get("hint").and_then(|h| h.as_str()).map(str::to_string);
        let extra: serde_json::Map<String, serde_json::Value> = e
            .iter()
            .filter(|(k, _)| !["code", "message", "hint"].contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let details = (!extra.is_empty()).then_some(serde_json::Value::Object(extra));
        Some(ClaimError::Remote { code, message, hint, details })
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            ClaimError::NotMaster { .. } => ErrorCode::NotMaster,
            ClaimError::StaleMaster { .. } => ErrorCode::StaleMaster,
            ClaimError::TargetNotRegistered { .. } => ErrorCode::TargetNotRegistered,
            ClaimError::TargetStale { .. } => ErrorCode::TargetStale,
            ClaimError::TargetAmbiguous { .. } => ErrorCode::TargetAmbiguous,
            ClaimError::InvalidOperatorCredentials { .. } => ErrorCode::InvalidOperatorCredentials,
            ClaimError::Unauthorized { .. }
            | ClaimError::RegistrationHeld { .. }
            | ClaimError::RegistrationUnproven { .. }
            | ClaimError::IdentityUnproven { .. }
            | ClaimError::AdminRequired
            | ClaimError::MissingToken => ErrorCode::Unauthorized,
            ClaimError::IdentityExists { .. } => ErrorCode::IdentityExists,
            ClaimError::OperatorExists(_) => ErrorCode::OperatorExists,
            ClaimError::ClaimTaken { .. } => ErrorCode::ClaimTaken,
            ClaimError::VersionConflict { .. } => ErrorCode::VersionConflict,
            ClaimError::NextStepRequired { .. } => ErrorCode::NextStepRequired,
            ClaimError::NotClaimOwner { .. } => ErrorCode::NotClaimOwner,
            ClaimError::NotFound(_) => ErrorCode::NotFound,
            ClaimError::ChannelExists(_) => ErrorCode::ChannelExists,
            ClaimError::InboxCursorTrimmed { .. } => ErrorCode::InboxCursorTrimmed,
            ClaimError::AuditCursorUnknown { .. } => ErrorCode::AuditCursorUnknown,
            ClaimError::InvalidArgument(_) => ErrorCode::InvalidArgument,
            ClaimError::NameConfusable { .. } => ErrorCode::NameConfusable,
            ClaimError::Unavailable(_) => ErrorCode::CoordinatorUnavailable,
            ClaimError::Store(_) => ErrorCode::Internal,
            ClaimError::RateLimited { .. } => ErrorCode::RateLimited,
            ClaimError::AnswerNotKept { .. } => ErrorCode::AnswerNotKept,
            ClaimError::Remote { code, .. } => *code,
        }
    }

    /// What to do next, for humans.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            ClaimError::NotMaster { project, .. } => {
                format!(
                    "only the master hands off; an operator can preempt with `writerctl master claim --project {project}`"
                )
            }
            ClaimError::StaleMaster { .. } => {
                "another handoff or claim won; read `writerctl master status` and decide again".into()
            }
            ClaimError::TargetNotRegistered { .. } => {
                "the target must `writerctl session register` first; check the identity's spelling".into()
            }
            ClaimError::TargetStale { .. } => {
                "the target must heartbeat (`writerctl session heartbeat`), or name a row with --to-session".into()
            }
            ClaimError::TargetAmbiguous { .. } => "pick one with --to-session SID".into(),
            ClaimError::InvalidOperatorCredentials { .. } => {
                "check the operator id and password; failed attempts slow further attempts down".into()
            }
            ClaimError::Unauthorized { .. } => {
                "pass the token `session register` gave this session (--token-file F or WRITERCTL_SESSION_TOKEN)".into()
            }
            ClaimError::OperatorExists(_) => "operators are never overwritten; pick another id".into(),
            ClaimError::RegistrationUnproven { .. } => {
                "pass the identity key an administrator issued (`writerctl identity add`): --identity-key-file F or \
                 WRITERCTL_IDENTITY_KEY; a restarted controller may instead pass its row's current token \
                 (--previous-token-file F or WRITERCTL_SESSION_TOKEN)"
                    .into()
            }
            ClaimError::IdentityUnproven { identity, .. } => format!(
                "register a controller as {identity} (`writerctl session register`) and pass its token: --token-file F \
                 or WRITERCTL_SESSION_TOKEN"
            ),
            ClaimError::IdentityExists { .. } => {
                "an identity's key is never overwritten; `writerctl identity rotate` issues a new one".into()
            }
            ClaimError::RegistrationHeld { .. } => {
                "a restarted controller passes its previous token (--previous-token-file F); otherwise wait until \
                 the old session stops heartbeating (--freshness-seconds), or deregister it with its token"
                    .into()
            }
            ClaimError::MissingToken => {
                "send the session's token as `Authorization: Bearer <token>` (the CLI reads --token-file F or \
                 WRITERCTL_SESSION_TOKEN)"
                    .into()
            }
            ClaimError::NameConfusable { existing, .. } => {
                format!(
                    "use the existing spelling {existing:?} (the same name), or choose a name that reads differently"
                )
            }
            ClaimError::AdminRequired => {
                "start the server with --admin-token-file F and set WRITERCTL_ADMIN_TOKEN to that token".into()
            }
            ClaimError::ClaimTaken { status: WorkClaimStatus::Done, .. } => {
                "a done task is never taken again; pick another task".into()
            }
            ClaimError::ClaimTaken { .. } => {
                "one live claim per task: wait for the owner's release or its TTL, or pick another task".into()
            }
            ClaimError::VersionConflict { .. } => {
                "read the claim again (`writerctl claim show`) and decide again".into()
            }
            ClaimError::NextStepRequired { .. } => {
                "say what the next hands should do: --next-step TEXT (a claim that can change hands needs one)".into()
            }
            ClaimError::NotClaimOwner { .. } => {
                "only the owner touches or releases a claim; `writerctl claim show` says who owns it".into()
            }
            ClaimError::NotFound(_) => {
                "check the names (`writerctl claim list`, `writerctl focus show`); a channel must be created first \
                 (`writerctl channel create`)"
                    .into()
            }
            ClaimError::ChannelExists(_) => "channels are never overwritten; pick another name".into(),
            ClaimError::InboxCursorTrimmed { trimmed_through, .. } => format!(
                "events were lost to retention (serve --inbox-retention-days, --inbox-max-events); resync from \
                 `writerctl master status` and `writerctl claim list`, then read on with --after {trimmed_through}"
            ),
            ClaimError::AuditCursorUnknown { .. } => {
                "rows may have been removed unread: export again with --since (the oldest cursor held is in the \
                 error's details); raise serve --audit-retention-days to keep rows longer"
                    .into()
            }
            ClaimError::Unavailable(_) => "retry later".into(),
            ClaimError::RateLimited { retry_after_ms, .. } => format!("retry after {retry_after_ms} ms"),
            ClaimError::AnswerNotKept { verb, .. } if verb.starts_with("identity.") => {
                "the write happened and its key is not kept: `writerctl identity rotate` issues a new one".into()
            }
            ClaimError::AnswerNotKept { .. } => {
                "the write happened and its token is not kept: `writerctl session register` again with a new \
                 --request-id and the identity's key"
                    .into()
            }
            ClaimError::InvalidArgument(_) | ClaimError::Store(_) => return None,
            ClaimError::Remote { hint, .. } => return hint.clone(),
        })
    }

    /// Machine-readable facts for the JSON error object (candidates, epochs).
    pub fn details(&self) -> Option<serde_json::Value> {
        use serde_json::json;
        match self {
            ClaimError::TargetAmbiguous { candidates, .. } => Some(json!({ "candidates": candidates })),
            ClaimError::TargetStale { sessions, freshness_seconds, .. } => {
                Some(json!({ "stale_sessions": sessions, "freshness_seconds": freshness_seconds }))
            }
            ClaimError::StaleMaster { expected, actual } => {
                Some(json!({ "expected_epoch": expected, "epoch": actual }))
            }
            ClaimError::InvalidOperatorCredentials { next_delay_ms } => Some(json!({ "next_delay_ms": next_delay_ms })),
            ClaimError::NameConfusable { existing, .. } => Some(json!({ "existing": existing })),
            ClaimError::ClaimTaken { owner, status, version, .. } => {
                Some(json!({ "owner": owner, "status": status.as_str(), "version": version }))
            }
            ClaimError::VersionConflict { expected, actual, .. } => {
                Some(json!({ "expected_version": expected, "version": actual }))
            }
            ClaimError::NotClaimOwner { owner, status, .. } => {
                Some(json!({ "owner": owner, "status": status.as_str() }))
            }
            ClaimError::InboxCursorTrimmed { after, trimmed_through, oldest } => {
                Some(json!({ "after": after, "trimmed_through": trimmed_through, "oldest_cursor": oldest }))
            }
            ClaimError::AuditCursorUnknown { cursor, oldest } => {
                Some(json!({ "cursor": cursor, "oldest_cursor": oldest }))
            }
            ClaimError::RateLimited { retry_after_ms, .. } => Some(json!({ "retry_after_ms": retry_after_ms })),
            ClaimError::Remote { details, .. } => details.clone(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    /// Issue 41 point 5: the typed forms read exactly as the untyped ones did, byte for byte
    /// (the JSON below is what the untyped forms printed).
    #[test]
    fn typed_errors_read_as_the_untyped_ones_did() {
        let io_err = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "no access");
        let cases: [(ClaimError, &str); 5] = [
            (
                ClaimError::invalid("--ttl-minutes", "--ttl-minutes must be at least 1"),
                r#"{"error":{"code":"invalid_argument","message":"--ttl-minutes must be at least 1","hint":null}}"#,
            ),
            (
                ClaimError::invalid("request id", r#"request id "a b" must be 1 to 128 of [A-Za-z0-9._:-]"#),
                r#"{"error":{"code":"invalid_argument","message":"request id \"a b\" must be 1 to 128 of [A-Za-z0-9._:-]","hint":null}}"#,
            ),
            (
                ClaimError::store("redis: an empty reply to a read"),
                r#"{"error":{"code":"internal","message":"coordinator store failed: redis: an empty reply to a read","hint":null}}"#,
            ),
            (
                ClaimError::store_because("stored JSON", serde_json::from_str::<u64>("nope").unwrap_err()),
                r#"{"error":{"code":"internal","message":"coordinator store failed: stored JSON: expected ident at line 1 column 2","hint":null}}"#,
            ),
            (
                StoreError::new(io_err.to_string()).with_source(io_err).into(),
                r#"{"error":{"code":"internal","message":"coordinator store failed: no access","hint":null}}"#,
            ),
        ];
        for (typed, json) in cases {
            assert_eq!(typed.to_json().to_string(), json);
            assert!(typed.hint().is_none() && typed.details().is_none());
        }
    }

    #[test]
    fn an_invalid_argument_names_its_field() {
        let e = ClaimError::invalid("--until", "--until must be before the year 10000, not 1 ms");
        assert!(matches!(&e, ClaimError::InvalidArgument(a) if a.field == "--until"), "{e:?}");
        assert_eq!(e.to_string(), "--until must be before the year 10000, not 1 ms");
        assert!(e.source().is_none());
        let owned = ClaimError::invalid(String::from("session id"), "session id contains a control character");
        assert!(matches!(&owned, ClaimError::InvalidArgument(a) if a.field == "session id"));
    }

    /// The cause is reachable from the `ClaimError` itself, as its own type, through
    /// clones too; the message is what it was before the cause was kept.
    #[test]
    fn a_store_error_keeps_its_cause() {
        let e = crate::claim::stores::codec::from_json::<u64>("nope").unwrap_err();
        assert_eq!(e.code(), ErrorCode::Internal);
        assert_eq!(e.to_string(), "coordinator store failed: stored JSON: expected ident at line 1 column 2");
        let cause = e.source().expect("the JSON error is kept");
        assert_eq!(cause.to_string(), "expected ident at line 1 column 2");
        assert!(cause.is::<serde_json::Error>());
        let copy = e.clone();
        assert!(copy.source().is_some_and(|c| c.is::<serde_json::Error>()));
        assert_eq!(copy, e);
        // Equal when they say the same, whatever their causes.
        assert_eq!(ClaimError::store("stored JSON: expected ident at line 1 column 2"), e);
        assert!(ClaimError::store("an invariant broke").source().is_none());
    }
}
