//! The coordinator's records: what a store keeps and what a verb changes.

use serde::{Deserialize, Serialize};

pub use super::clock::Millis;

/// The session-id prefix of a row open registration created (see
/// [`Controller::open_registered`]).
pub const OPEN_SESSION_PREFIX: &str = "open-";

/// One registered controller row (seed 000 `controller_status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Controller {
    /// Stable per (project, identity, surface, machine_id): a re-registration keeps it.
    pub session_id: String,
    /// Who the controller is (an agent or operator name).
    pub identity: String,
    /// Where it runs inside its machine (cli, ide, daemon, ...).
    pub surface: String,
    /// The machine it runs on.
    pub machine_id: String,
    /// SHA-256 of the session token, lowercase hex; the token itself is never stored.
    pub token_hash: String,
    /// Mirrors the master slot (audit and cold restore); the slot is authoritative.
    pub is_master: bool,
    /// When it registered (first time).
    pub registered_at: Millis,
    /// Its last heartbeat (registration counts as one).
    pub last_heartbeat: Millis,
}

impl Controller {
    /// Whether its last heartbeat is within `freshness_ms` of `now` (seed 000 §Target
    /// resolution step 2).
    pub fn is_fresh(&self, now: Millis, freshness_ms: i64) -> bool {
        now.saturating_sub(self.last_heartbeat) <= freshness_ms
    }

    /// Whether open registration (`serve --open-registration`) created it, without proof.
    /// Marked in the session id itself ([`OPEN_SESSION_PREFIX`]), so every store, a cold
    /// restore and an old client keep the mark with no schema change: such a row is never
    /// re-issued to a proof it did not get (issue 28 point 3).
    pub fn open_registered(&self) -> bool {
        self.session_id.starts_with(OPEN_SESSION_PREFIX)
    }

    /// Its public reference.
    pub fn reference(&self) -> MasterRef {
        MasterRef { identity: self.identity.clone(), session_id: self.session_id.clone() }
    }
}

/// A controller named by identity and session id (the MasterPreempted payload's halves).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MasterRef {
    /// Its identity.
    pub identity: String,
    /// Its session id.
    pub session_id: String,
}

/// The project's master slot: who is master, and the fencing epoch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MasterSlot {
    /// The master, if any.
    pub master: Option<MasterRef>,
    /// Grows by one on every change of master; never decreases, never reused.
    pub epoch: u64,
}

/// Everything a master verb decides from: one project, read at one version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The project.
    pub project: String,
    /// Bumped by every committed change; the compare-and-set token.
    pub version: u64,
    /// The master slot.
    pub slot: MasterSlot,
    /// Every registered controller, ordered by session id.
    pub controllers: Vec<Controller>,
    /// The identities enrolled in the project, ordered by name. They live in the project's
    /// state (not beside it) so that registering, rotating a key and removing an identity
    /// are one compare-and-set each: a key rotated or an identity removed can never lose a
    /// race to a registration that checked the old key.
    pub identities: Vec<EnrolledIdentity>,
}

/// An identity enrolled in a project: who may register controllers under that name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnrolledIdentity {
    /// The identity.
    pub identity: String,
    /// SHA-256 of its identity key, lowercase hex; the key itself is never stored.
    pub key_hash: String,
    /// When it was enrolled.
    pub enrolled_at: Millis,
    /// When its current key was issued (enrollment or the last rotation).
    pub key_issued_at: Millis,
}

impl Snapshot {
    /// The controller with this session id.
    pub fn controller(&self, session_id: &str) -> Option<&Controller> {
        self.controllers.iter().find(|c| c.session_id == session_id)
    }

    /// The enrolled identity with this name.
    pub fn identity(&self, identity: &str) -> Option<&EnrolledIdentity> {
        self.identities.iter().find(|i| i.identity == identity)
    }
}

/// An event for one recipient's inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewEvent {
    /// The recipient identity (the inbox it lands in).
    pub recipient: String,
    /// The recipient session, when the event is addressed to one session of that identity.
    pub recipient_session: Option<String>,
    /// The event kind, e.g. `MasterPreempted`.
    pub kind: String,
    /// The payload (a JSON object).
    pub payload: serde_json::Value,
}

/// An event as read from an inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Event {
    /// Position in the store's event sequence; read on with `after = cursor`.
    pub cursor: u64,
    /// When it was written.
    #[schema(value_type = i64)]
    pub at: Millis,
    /// The recipient session, if addressed to one.
    #[schema(required = true)]
    pub recipient_session: Option<String>,
    /// The event kind.
    pub kind: String,
    /// The payload.
    pub payload: serde_json::Value,
}

/// One audit row: every verb, who, what, result, epoch (issue 6 item 8). Never a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AuditEntry {
    /// When.
    #[schema(value_type = i64)]
    pub at: Millis,
    /// The project (empty for operator administration).
    pub project: String,
    /// The verb, e.g. `master.handoff`.
    pub verb: String,
    /// Who: `session:<id>`, `operator:<id>` or `local`.
    pub actor: String,
    /// What it acted on (a target, a session id), if anything.
    #[schema(required = true)]
    pub target: Option<String>,
    /// `ok` or the error code.
    pub result: String,
    /// The master epoch after the verb.
    #[schema(required = true)]
    pub epoch: Option<u64>,
    /// Extra facts (never a token or password).
    pub detail: serde_json::Value,
    /// Why, in the caller's words (`--reason`, issue 30): bounded, no control characters
    /// ([`crate::claim::names::validate_reason`]). Absent from rows written before it
    /// existed (old queue entries and databases read as None).
    #[serde(default)]
    #[schema(required = true)]
    pub reason: Option<String>,
    /// The answer to keep under the verb's request id, written by the store in the same
    /// atomic step as the verb (see [`crate::claim::requests`]). Never part of the audit row
    /// itself (it may hold a new session token), so never serialized.
    #[serde(skip)]
    pub request: Option<crate::claim::requests::records::RequestRecord>,
}

/// The key under which an audit row's [`detail`](AuditEntry::detail) marks a change of
/// master: `master_change: {from, to}`, each a `{identity, session_id}` or null (issue 30).
/// The engine adds it to the row of every verb that moves the epoch; `master history` reads
/// it, and both stores keep a partial index of the rows that hold it, whose predicate spells
/// this key out in SQL.
pub const MASTER_CHANGE: &str = "master_change";

/// What a verb writes, committed atomically if the project is still at the version the
/// decision was made from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    /// Rows inserted or replaced (keyed by session id).
    pub upsert: Vec<Controller>,
    /// Rows removed.
    pub delete: Vec<String>,
    /// The new master slot, if it changed.
    pub slot: Option<MasterSlot>,
    /// Inbox events to append.
    pub events: Vec<NewEvent>,
    /// Identities enrolled or given a new key (keyed by name).
    pub enroll: Vec<EnrolledIdentity>,
    /// Identities removed.
    pub unenroll: Vec<String>,
}

impl Change {
    /// Whether committing it would change nothing.
    pub fn is_empty(&self) -> bool {
        self.upsert.is_empty()
            && self.delete.is_empty()
            && self.slot.is_none()
            && self.events.is_empty()
            && self.enroll.is_empty()
            && self.unenroll.is_empty()
    }
}

/// A stored operator credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorRecord {
    /// The operator id.
    pub operator_id: String,
    /// argon2id PHC string.
    pub password_hash: String,
    /// When it was created.
    pub created_at: Millis,
}
