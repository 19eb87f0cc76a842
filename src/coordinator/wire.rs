//! The JSON bodies of the HTTP API (`/v1/...`), shared by the server and the client so the
//! two can never disagree. Secrets travel only in request bodies and `Authorization`
//! headers, never in URLs (which end up in logs); no response carries a token hash.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::claim::engine::{ControllerView, Status};
use crate::claim::model::{AuditEntry, Controller, Event, MasterRef, MasterSlot, Millis};
use crate::claim::work_claims::TaskAddress;

/// The master verbs' requests are the domain's own (one definition: the engine reads what
/// travels); see [`crate::claim::masters::requests`].
pub use crate::claim::masters::requests::{HandoffRequest, MasterClaimRequest, OperatorRequest, RegisterRequest};

/// The header a write verb's request id travels in (`--request-id`; see
/// [`crate::claim::requests`]). Optional: a write without it is not kept for retries.
pub const REQUEST_ID_HEADER: &str = "idempotency-key";

/// `POST /v1/projects/{project}/identities`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IdentityReq {
    /// The identity to enroll.
    pub identity: String,
}

/// An enrolled identity, without its key hash.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(as = Identity)]
pub struct IdentityOut {
    /// The identity.
    pub identity: String,
    /// When it was enrolled.
    pub enrolled_at: i64,
    /// When its current key was issued.
    pub key_issued_at: i64,
}

impl From<&crate::claim::model::EnrolledIdentity> for IdentityOut {
    fn from(e: &crate::claim::model::EnrolledIdentity) -> IdentityOut {
        IdentityOut { identity: e.identity.clone(), enrolled_at: e.enrolled_at, key_issued_at: e.key_issued_at }
    }
}

/// The answer to `identity add` / `identity rotate`; the only response that carries a key.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(as = IssuedKey)]
pub struct IssuedKeyResp {
    /// The enrollment.
    pub identity: IdentityOut,
    /// The identity key (shown once).
    pub key: String,
}

/// `GET /v1/projects/{project}/identities`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct IdentitiesResp {
    /// The enrolled identities, by name.
    pub identities: Vec<IdentityOut>,
}

/// A controller row without its token hash.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, ToSchema)]
#[schema(as = Controller)]
pub struct ControllerOut {
    /// Session id.
    pub session_id: String,
    /// Identity.
    pub identity: String,
    /// Surface.
    pub surface: String,
    /// Machine id.
    pub machine_id: String,
    /// Master flag.
    pub is_master: bool,
    /// First registration (ms).
    #[schema(value_type = i64)]
    pub registered_at: Millis,
    /// Last heartbeat (ms).
    #[schema(value_type = i64)]
    pub last_heartbeat: Millis,
}

impl From<&Controller> for ControllerOut {
    fn from(c: &Controller) -> ControllerOut {
        ControllerOut {
            session_id: c.session_id.clone(),
            identity: c.identity.clone(),
            surface: c.surface.clone(),
            machine_id: c.machine_id.clone(),
            is_master: c.is_master,
            registered_at: c.registered_at,
            last_heartbeat: c.last_heartbeat,
        }
    }
}

impl From<ControllerOut> for Controller {
    fn from(c: ControllerOut) -> Controller {
        Controller {
            session_id: c.session_id,
            identity: c.identity,
            surface: c.surface,
            machine_id: c.machine_id,
            token_hash: String::new(),
            is_master: c.is_master,
            registered_at: c.registered_at,
            last_heartbeat: c.last_heartbeat,
        }
    }
}

/// The answer to a registration; the only response that carries a token.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RegisterResp {
    /// The row.
    pub controller: ControllerOut,
    /// The session token (shown once).
    pub token: String,
    /// The epoch after registering.
    pub epoch: u64,
}

/// `POST /v1/projects/{project}/sessions/{sid}/deregister`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DeregisterResp {
    /// Whether it was master.
    pub was_master: bool,
    /// The epoch after.
    pub epoch: u64,
}

/// One controller in a status answer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(as = ControllerView)]
pub struct ControllerViewOut {
    /// The row.
    pub controller: ControllerOut,
    /// Heartbeat within the server's freshness threshold.
    pub fresh: bool,
}

/// `GET /v1/projects/{project}/master`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StatusResp {
    /// The master, if any.
    pub master: Option<MasterRef>,
    /// The epoch.
    pub epoch: u64,
    /// Every controller.
    pub controllers: Vec<ControllerViewOut>,
    /// The server's freshness threshold (ms).
    pub freshness_ms: u64,
    /// When the server read it (ms).
    #[schema(value_type = i64)]
    pub now: Millis,
    /// The project's pause, when one holds (`pause`/`resume`).
    #[serde(default)]
    pub paused: Option<crate::claim::work_claims::Paused>,
}

impl From<&Status> for StatusResp {
    fn from(s: &Status) -> StatusResp {
        StatusResp {
            master: s.slot.master.clone(),
            epoch: s.slot.epoch,
            controllers: s
                .controllers
                .iter()
                .map(|v| ControllerViewOut { controller: (&v.controller).into(), fresh: v.fresh })
                .collect(),
            freshness_ms: u64::try_from(s.freshness.as_millis()).unwrap_or(u64::MAX),
            now: s.now,
            paused: s.paused.clone(),
        }
    }
}

impl From<StatusResp> for Status {
    fn from(s: StatusResp) -> Status {
        Status {
            slot: MasterSlot { master: s.master, epoch: s.epoch },
            controllers: s
                .controllers
                .into_iter()
                .map(|v| ControllerView { controller: v.controller.into(), fresh: v.fresh })
                .collect(),
            freshness: std::time::Duration::from_millis(s.freshness_ms),
            now: s.now,
            paused: s.paused,
        }
    }
}

/// `GET /v1/projects/{project}/inbox/{identity}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct InboxResp {
    /// Events, oldest first.
    pub events: Vec<Event>,
}

/// `GET /v1/audit`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AuditResp {
    /// Rows, oldest first.
    pub entries: Vec<AuditEntry>,
}

// ---------------------------------------------------------------------------------------
// work claims (seed 002): the answers are the engine's own types (`Channel`, `WorkClaim`,
// `WorkClaimOutcome`, `WorkClaimStep`, `SweepReport`, `FocusOutcome`, `FocusLease`,
// `StewardReport`), and so are the requests, which carry what the path does not
// ([`crate::claim::work_claims::requests`]).
// ---------------------------------------------------------------------------------------

pub use crate::claim::work_claims::requests::{
    ChannelRequest, FocusRequest, PauseRequest, ReleaseRequest, SweepRequest, TakeRequest, TouchRequest,
};

/// The answer to `operator add` (`POST /v1/operators`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OperatorResp {
    /// The operator id.
    pub operator_id: String,
    /// Always true: an existing operator is refused, never overwritten.
    pub created: bool,
}

impl From<&crate::claim::engine::IssuedKey> for IssuedKeyResp {
    fn from(k: &crate::claim::engine::IssuedKey) -> IssuedKeyResp {
        IssuedKeyResp { identity: (&k.identity).into(), key: k.key.expose().to_string() }
    }
}

impl From<IssuedKeyResp> for crate::claim::engine::IssuedKey {
    fn from(r: IssuedKeyResp) -> crate::claim::engine::IssuedKey {
        crate::claim::engine::IssuedKey { identity: r.identity.into(), key: crate::claim::secret::Secret::new(r.key) }
    }
}

impl From<IdentityOut> for crate::claim::model::EnrolledIdentity {
    /// The server never sends key hashes: the enrollment comes back with an empty one.
    fn from(i: IdentityOut) -> crate::claim::model::EnrolledIdentity {
        crate::claim::model::EnrolledIdentity {
            identity: i.identity,
            key_hash: String::new(),
            enrolled_at: i.enrolled_at,
            key_issued_at: i.key_issued_at,
        }
    }
}

// ---------------------------------------------------------------------------------------
// What a URL carries: path parameters (each a name, validated as the engine does) and the
// query strings of the GET verbs.
// ---------------------------------------------------------------------------------------

/// A route without path parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct NoPath {}

/// `{project}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ProjectPath {
    /// The project.
    #[param(min_length = 1, max_length = 256)]
    pub project: String,
}

/// `{project}` and a controller's `{sid}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct SessionPath {
    /// The project.
    #[param(min_length = 1, max_length = 256)]
    pub project: String,
    /// The session id.
    #[param(min_length = 1, max_length = 256)]
    pub sid: String,
}

/// `{project}` and an `{identity}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct IdentityPath {
    /// The project.
    #[param(min_length = 1, max_length = 256)]
    pub project: String,
    /// The identity.
    #[param(min_length = 1, max_length = 256)]
    pub identity: String,
}

/// `{project}` and a `{channel}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ChannelPath {
    /// The project.
    #[param(min_length = 1, max_length = 256)]
    pub project: String,
    /// The channel.
    #[param(min_length = 1, max_length = 256)]
    pub channel: String,
}

/// `{project}`, `{channel}` and a `{task}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct TaskPath {
    /// The project.
    #[param(min_length = 1, max_length = 256)]
    pub project: String,
    /// The channel.
    #[param(min_length = 1, max_length = 256)]
    pub channel: String,
    /// The task.
    #[param(min_length = 1, max_length = 256)]
    pub task: String,
}

impl From<TaskPath> for TaskAddress {
    fn from(p: TaskPath) -> TaskAddress {
        TaskAddress { project: p.project, channel: p.channel, task: p.task }
    }
}

impl From<&TaskAddress> for TaskPath {
    fn from(a: &TaskAddress) -> TaskPath {
        TaskPath { project: a.project.clone(), channel: a.channel.clone(), task: a.task.clone() }
    }
}

/// `{project}` and a `{seat}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct SeatPath {
    /// The project.
    #[param(min_length = 1, max_length = 256)]
    pub project: String,
    /// The seat.
    #[param(min_length = 1, max_length = 256)]
    pub seat: String,
}

/// What the server's edge reads from a verb's path parameters, typed: the project a request
/// is about (its watchers, its audit rows), the seat or session whose write rate it spends,
/// and every name it carries, checked before anything else sees them.
pub trait Scope {
    /// The `{project}`, if the route has one.
    fn project(&self) -> Option<&str> {
        None
    }
    /// The `{seat}`, if the route has one.
    fn seat(&self) -> Option<&str> {
        None
    }
    /// The `{sid}`, if the route has one.
    fn session(&self) -> Option<&str> {
        None
    }
    /// Every parameter, each a name, with what it is (for messages).
    fn names(&self) -> Vec<(&'static str, &str)>;
    /// What an administrative verb on this path acts on, as its audit row names it (a
    /// refused admin token is audited there too).
    fn audit_target(&self) -> Option<String> {
        None
    }
}

impl Scope for NoPath {
    fn names(&self) -> Vec<(&'static str, &str)> {
        Vec::new()
    }
}

impl Scope for ProjectPath {
    fn project(&self) -> Option<&str> {
        Some(&self.project)
    }
    fn names(&self) -> Vec<(&'static str, &str)> {
        vec![("project", &self.project)]
    }
}

impl Scope for SessionPath {
    fn project(&self) -> Option<&str> {
        Some(&self.project)
    }
    fn session(&self) -> Option<&str> {
        Some(&self.sid)
    }
    fn names(&self) -> Vec<(&'static str, &str)> {
        vec![("project", &self.project), ("session id", &self.sid)]
    }
}

impl Scope for IdentityPath {
    fn project(&self) -> Option<&str> {
        Some(&self.project)
    }
    fn names(&self) -> Vec<(&'static str, &str)> {
        vec![("project", &self.project), ("identity", &self.identity)]
    }
    fn audit_target(&self) -> Option<String> {
        Some(format!("identity:{}", self.identity))
    }
}

impl Scope for ChannelPath {
    fn project(&self) -> Option<&str> {
        Some(&self.project)
    }
    fn names(&self) -> Vec<(&'static str, &str)> {
        vec![("project", &self.project), ("channel", &self.channel)]
    }
}

impl Scope for TaskPath {
    fn project(&self) -> Option<&str> {
        Some(&self.project)
    }
    fn names(&self) -> Vec<(&'static str, &str)> {
        vec![("project", &self.project), ("channel", &self.channel), ("task", &self.task)]
    }
}

impl Scope for SeatPath {
    fn project(&self) -> Option<&str> {
        Some(&self.project)
    }
    fn seat(&self) -> Option<&str> {
        Some(&self.seat)
    }
    fn names(&self) -> Vec<(&'static str, &str)> {
        vec![("project", &self.project), ("seat", &self.seat)]
    }
}

impl ProjectPath {
    /// The path of `project`.
    pub fn of(project: &str) -> ProjectPath {
        ProjectPath { project: project.to_string() }
    }
}

impl SessionPath {
    /// The path of session `sid` in `project`.
    pub fn of(project: &str, sid: &str) -> SessionPath {
        SessionPath { project: project.to_string(), sid: sid.to_string() }
    }
}

impl IdentityPath {
    /// The path of `identity` in `project`.
    pub fn of(project: &str, identity: &str) -> IdentityPath {
        IdentityPath { project: project.to_string(), identity: identity.to_string() }
    }
}

impl ChannelPath {
    /// The path of `channel` in `project`.
    pub fn of(project: &str, channel: &str) -> ChannelPath {
        ChannelPath { project: project.to_string(), channel: channel.to_string() }
    }
}

impl SeatPath {
    /// The path of `seat` in `project`.
    pub fn of(project: &str, seat: &str) -> SeatPath {
        SeatPath { project: project.to_string(), seat: seat.to_string() }
    }
}

/// A POST verb without a body: whatever is sent is ignored (the client sends `{}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NoBody {}

/// `GET /v1/projects/{project}/master/target`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TargetQuery {
    /// The target identity.
    pub to: String,
    /// The exact target row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_session: Option<String>,
}

/// `GET /v1/projects/{project}/inbox/{identity}`: a long poll.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InboxQuery {
    /// Only events after this cursor.
    #[serde(default)]
    pub after: u64,
    /// At most this many events (default 1000, at most 100000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Hold the request open this long for an event (capped at 30 s).
    #[serde(default)]
    pub wait_ms: u64,
}

/// `GET /v1/audit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// The newest N rows (default 50; a server answers at most 1000, whatever is asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Only this project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// `GET /v1/projects/{project}/channels/{channel}/steward-report`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AsOfQuery {
    /// The time to judge by (ms since the epoch); the server's clock when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[param(value_type = Option<i64>)]
    pub as_of: Option<Millis>,
}

// ---------------------------------------------------------------------------------------
// issue 30: master history and audit export
// ---------------------------------------------------------------------------------------

/// `GET /v1/projects/{project}/master/history`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// The newest N changes (default 50; a server answers at most 1000, whatever is asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// The answer to `GET /v1/projects/{project}/master/history`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct HistoryResp {
    /// Every change of master kept (the audit log's retention), oldest first.
    pub changes: Vec<crate::claim::engine::MasterChange>,
    /// True when `actor` and `reason` are withheld (null): the request proved no part in
    /// the project (a session token of a controller registered there, or the admin token).
    #[serde(default)]
    pub redacted: bool,
}

/// `GET /v1/audit/export`: one page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// Only this project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Only rows written at or after this time (ms since the epoch).
    #[param(value_type = i64)]
    pub since: Millis,
    /// Only rows after this cursor (a row's `cursor`); `audit_cursor_unknown` if the log no
    /// longer holds (or never held) that row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
    /// At most this many rows (default 1000; a server answers at most 1000, whatever is asked:
    /// page on while a page comes back full).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// One exported audit row and the cursor to resume after it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ExportRow {
    /// Pass as `after` to read on from here.
    pub cursor: u64,
    /// The row.
    pub entry: AuditEntry,
}

/// The answer to `GET /v1/audit/export`: fewer rows than the limit means the end.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ExportResp {
    /// Rows in cursor order.
    pub rows: Vec<ExportRow>,
}

/// `GET /v1/projects/{project}/master/watch` (`master status --watch`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WatchQuery {
    /// The `version` of the last state the caller saw: the answer waits for another one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Hold the request open this long for a change (capped at 30 s); then the state is
    /// answered as it is (the same version: ask again).
    #[serde(default)]
    pub wait_ms: u64,
}

/// The master status as `master status --watch` shows it, with its version.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WatchResp {
    /// A fingerprint of everything the status shows except the read time and the
    /// controllers' heartbeat times (a heartbeat changes nothing a watcher shows; a
    /// controller turning stale does, through `fresh`).
    pub version: String,
    /// The status.
    pub status: StatusResp,
}

impl WatchResp {
    /// `status` with its version.
    pub fn of(status: StatusResp) -> WatchResp {
        use sha2::Digest as _;
        let mut shown = serde_json::to_value(&status).unwrap_or_default();
        if let Some(map) = shown.as_object_mut() {
            map.remove("now");
        }
        if let Some(list) = shown.get_mut("controllers").and_then(|c| c.as_array_mut()) {
            for c in list {
                if let Some(row) = c.get_mut("controller").and_then(|r| r.as_object_mut()) {
                    row.remove("last_heartbeat");
                }
            }
        }
        let digest = sha2::Sha256::digest(shown.to_string().as_bytes());
        let version = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
        WatchResp { version, status }
    }
}
