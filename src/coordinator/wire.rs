//! The JSON bodies of the HTTP API (`/v1/...`), shared by the server and the client so the
//! two can never disagree. Secrets travel only in request bodies and `Authorization`
//! headers, never in URLs (which end up in logs); no response carries a token hash.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::claim::ClaimError;
use crate::claim::engine::{ControllerView, Status};
use crate::claim::model::{AuditEntry, Controller, Event, MasterRef, MasterSlot, Millis};
use crate::claim::work_claims::{ReleaseRequest, TakeRequest, TaskAddress, TouchRequest};

/// The header a write verb's request id travels in (`--request-id`; see
/// [`crate::claim::requests`]). Optional: a write without it is not kept for retries.
pub const REQUEST_ID_HEADER: &str = "idempotency-key";

/// `POST /v1/projects/{project}/sessions`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RegisterReq {
    /// Identity.
    pub identity: String,
    /// Surface.
    pub surface: String,
    /// Machine id.
    pub machine_id: String,
    /// The row's current token, when re-registering a row (a restart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_token: Option<String>,
    /// The identity's key (`identity add`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_key: Option<String>,
}

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

/// `POST /v1/projects/{project}/master/handoff` (caller's token in `Authorization`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct HandoffReq {
    /// The caller's session id.
    pub session_id: String,
    /// Target identity.
    pub to: String,
    /// Exact target row.
    pub to_session: Option<String>,
    /// The epoch the caller decided from.
    pub expect_epoch: u64,
    /// Why, recorded on the audit row (`--reason`; at most 512 bytes, no control characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Plan only (`--dry-run`): every check, nothing changed; the answer says `dry_run`.
    #[serde(default)]
    pub dry_run: bool,
}

/// `POST /v1/projects/{project}/master/claim`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ClaimReq {
    /// Target identity.
    pub to: String,
    /// Exact target row.
    pub to_session: Option<String>,
    /// The epoch the caller decided from.
    pub expect_epoch: u64,
    /// Operator id.
    pub operator: String,
    /// Operator password (use TLS beyond localhost).
    pub password: String,
    /// Why, recorded on the audit row (`--reason`; at most 512 bytes, no control characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Plan only (`--dry-run`): every check, nothing changed; the answer says `dry_run`.
    #[serde(default)]
    pub dry_run: bool,
}

/// `POST /v1/operators` (admin token in `Authorization`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OperatorReq {
    /// Operator id.
    pub operator_id: String,
    /// Password.
    pub password: String,
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
// work claims (seed 002): the answers are the engine's own types (`Channel`, `ClaimRow`,
// `ClaimOutcome`, `ClaimStep`, `SweepReport`, `FocusOutcome`, `FocusLease`,
// `StewardReport`); the requests carry what the path does not.
// ---------------------------------------------------------------------------------------

/// `POST /v1/projects/{project}/channels`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ChannelReq {
    /// The channel name.
    pub channel: String,
    /// The identity that receives release doorbells and reads the SLA report.
    pub steward: String,
    /// The SLA (default [`crate::claim::work_claims::DEFAULT_SLA_MINUTES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sla_minutes: Option<u32>,
    /// The TTL floor (default [`crate::claim::work_claims::DEFAULT_TTL_FLOOR_MINUTES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_floor_minutes: Option<u32>,
}

/// `POST /v1/projects/{project}/channels/{channel}/claims/{task}/take`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TakeReq {
    /// The seat taking it.
    pub seat: String,
    /// Its deputy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deputy: Option<String>,
    /// Its TTL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_minutes: Option<u32>,
    /// Its next step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    /// Why, recorded on the audit row (`--reason`; at most 512 bytes, no control characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl TakeReq {
    /// The request body of `req`.
    pub fn of(req: &TakeRequest) -> TakeReq {
        TakeReq {
            seat: req.seat.clone(),
            deputy: req.deputy.clone(),
            ttl_minutes: req.ttl_minutes,
            next_step: req.next_step.clone(),
            reason: None,
        }
    }

    /// The engine's request, for the task the path names.
    pub fn into_request(self, address: TaskAddress) -> TakeRequest {
        TakeRequest {
            address,
            seat: self.seat,
            deputy: self.deputy,
            ttl_minutes: self.ttl_minutes,
            next_step: self.next_step,
        }
    }
}

/// `POST /v1/projects/{project}/channels/{channel}/claims/{task}/touch`.
///
/// [`TouchRequest`]'s `Option<Option<..>>` ("keep", "remove", "set") does not survive JSON
/// (`null` and absent read the same), so removing travels as its own flag: `clear_deputy`
/// removes the deputy, `clear_ttl` the TTL; a value and its clear flag together are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TouchReq {
    /// The seat (must be the owner).
    pub seat: String,
    /// The version the seat read; absent: not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_version: Option<u64>,
    /// A new deputy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deputy: Option<String>,
    /// Remove the deputy.
    #[serde(default)]
    pub clear_deputy: bool,
    /// A new TTL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_minutes: Option<u32>,
    /// Remove the TTL.
    #[serde(default)]
    pub clear_ttl: bool,
    /// A new next step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
}

/// `Some(None)` (remove) becomes the clear flag; `Some(Some(v))` the value.
fn split<T: Clone>(v: &Option<Option<T>>) -> (Option<T>, bool) {
    match v {
        None => (None, false),
        Some(None) => (None, true),
        Some(Some(x)) => (Some(x.clone()), false),
    }
}

/// The flag back into `Option<Option<..>>`; both set is a contradiction.
fn join<T>(what: &str, flag: &str, value: Option<T>, clear: bool) -> Result<Option<Option<T>>, ClaimError> {
    match (value, clear) {
        (Some(_), true) => Err(ClaimError::InvalidArgument(format!("{what} and {flag} contradict each other"))),
        (Some(v), false) => Ok(Some(Some(v))),
        (None, true) => Ok(Some(None)),
        (None, false) => Ok(None),
    }
}

impl TouchReq {
    /// The request body of `req`.
    pub fn of(req: &TouchRequest) -> TouchReq {
        let (deputy, clear_deputy) = split(&req.deputy);
        let (ttl_minutes, clear_ttl) = split(&req.ttl_minutes);
        TouchReq {
            seat: req.seat.clone(),
            expect_version: req.expect_version,
            deputy,
            clear_deputy,
            ttl_minutes,
            clear_ttl,
            next_step: req.next_step.clone(),
        }
    }

    /// The engine's request, for the task the path names; `invalid_argument` when a value
    /// and its clear flag are both set.
    pub fn into_request(self, address: TaskAddress) -> Result<TouchRequest, ClaimError> {
        Ok(TouchRequest {
            deputy: join("deputy", "clear_deputy", self.deputy, self.clear_deputy)?,
            ttl_minutes: join("ttl_minutes", "clear_ttl", self.ttl_minutes, self.clear_ttl)?,
            address,
            seat: self.seat,
            expect_version: self.expect_version,
            next_step: self.next_step,
        })
    }
}

/// `POST /v1/projects/{project}/channels/{channel}/claims/{task}/release`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReleaseReq {
    /// The seat (must be the owner).
    pub seat: String,
    /// The version the seat read; absent: not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_version: Option<u64>,
    /// Done instead of released.
    #[serde(default)]
    pub done: bool,
    /// A last next step for whoever takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    /// Why, recorded on the audit row (`--reason`; at most 512 bytes, no control characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ReleaseReq {
    /// The request body of `req`.
    pub fn of(req: &ReleaseRequest) -> ReleaseReq {
        ReleaseReq {
            seat: req.seat.clone(),
            expect_version: req.expect_version,
            done: req.done,
            next_step: req.next_step.clone(),
            reason: None,
        }
    }

    /// The engine's request, for the task the path names.
    pub fn into_request(self, address: TaskAddress) -> ReleaseRequest {
        ReleaseRequest {
            address,
            seat: self.seat,
            expect_version: self.expect_version,
            done: self.done,
            next_step: self.next_step,
        }
    }
}

/// `POST /v1/projects/{project}/sweep`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SweepReq {
    /// The time to judge by (ms since the epoch); the server's clock when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>)]
    pub as_of: Option<Millis>,
    /// Report without writing.
    #[serde(default)]
    pub dry_run: bool,
}

/// `POST /v1/projects/{project}/focus/{seat}/start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FocusStartReq {
    /// The lease's length in minutes (capped server-side).
    pub minutes: u32,
}

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
