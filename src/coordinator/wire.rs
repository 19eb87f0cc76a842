//! The JSON bodies of the HTTP API (`/v1/...`), shared by the server and the client so the
//! two can never disagree. Secrets travel only in request bodies and `Authorization`
//! headers, never in URLs (which end up in logs); no response carries a token hash.

use serde::{Deserialize, Serialize};

use crate::claim::ClaimError;
use crate::claim::engine::{ControllerView, Status};
use crate::claim::model::{AuditEntry, Controller, Event, MasterRef, MasterSlot, Millis};
use crate::claim::work::{ReleaseRequest, TakeRequest, TouchRequest};

/// `POST /v1/projects/{project}/sessions`.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityReq {
    /// The identity to enroll.
    pub identity: String,
}

/// An enrolled identity, without its key hash.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IssuedKeyResp {
    /// The enrollment.
    pub identity: IdentityOut,
    /// The identity key (shown once).
    pub key: String,
}

/// `GET /v1/projects/{project}/identities`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IdentitiesResp {
    /// The enrolled identities, by name.
    pub identities: Vec<IdentityOut>,
}

/// A controller row without its token hash.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
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
    pub registered_at: Millis,
    /// Last heartbeat (ms).
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
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RegisterResp {
    /// The row.
    pub controller: ControllerOut,
    /// The session token (shown once).
    pub token: String,
    /// The epoch after registering.
    pub epoch: u64,
}

/// `POST /v1/projects/{project}/sessions/{sid}/deregister`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeregisterResp {
    /// Whether it was master.
    pub was_master: bool,
    /// The epoch after.
    pub epoch: u64,
}

/// One controller in a status answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ControllerViewOut {
    /// The row.
    pub controller: ControllerOut,
    /// Heartbeat within the server's freshness threshold.
    pub fresh: bool,
}

/// `GET /v1/projects/{project}/master`.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    pub now: Millis,
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
        }
    }
}

/// `POST /v1/projects/{project}/master/handoff` (caller's token in `Authorization`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HandoffReq {
    /// The caller's session id.
    pub session_id: String,
    /// Target identity.
    pub to: String,
    /// Exact target row.
    pub to_session: Option<String>,
    /// The epoch the caller decided from.
    pub expect_epoch: u64,
}

/// `POST /v1/projects/{project}/master/claim`.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
}

/// `POST /v1/operators` (admin token in `Authorization`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OperatorReq {
    /// Operator id.
    pub operator_id: String,
    /// Password.
    pub password: String,
}

/// `GET /v1/projects/{project}/inbox/{identity}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InboxResp {
    /// Events, oldest first.
    pub events: Vec<Event>,
}

/// `GET /v1/audit`.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelReq {
    /// The channel name.
    pub channel: String,
    /// The identity that receives release doorbells and reads the SLA report.
    pub steward: String,
    /// The SLA (default [`crate::claim::work::DEFAULT_SLA_MINUTES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sla_minutes: Option<u32>,
    /// The TTL floor (default [`crate::claim::work::DEFAULT_TTL_FLOOR_MINUTES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_floor_minutes: Option<u32>,
}

/// `POST /v1/projects/{project}/channels/{channel}/claims/{task}/take`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

impl TakeReq {
    /// The request body of `req`.
    pub fn of(req: &TakeRequest) -> TakeReq {
        TakeReq {
            seat: req.seat.clone(),
            deputy: req.deputy.clone(),
            ttl_minutes: req.ttl_minutes,
            next_step: req.next_step.clone(),
        }
    }

    /// The engine's request, with the names the path carried.
    pub fn into_request(self, project: String, channel: String, task: String) -> TakeRequest {
        TakeRequest {
            project,
            channel,
            task,
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

    /// The engine's request, with the names the path carried; `invalid_argument` when a
    /// value and its clear flag are both set.
    pub fn into_request(self, project: String, channel: String, task: String) -> Result<TouchRequest, ClaimError> {
        Ok(TouchRequest {
            deputy: join("deputy", "clear_deputy", self.deputy, self.clear_deputy)?,
            ttl_minutes: join("ttl_minutes", "clear_ttl", self.ttl_minutes, self.clear_ttl)?,
            project,
            channel,
            task,
            seat: self.seat,
            expect_version: self.expect_version,
            next_step: self.next_step,
        })
    }
}

/// `POST /v1/projects/{project}/channels/{channel}/claims/{task}/release`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

impl ReleaseReq {
    /// The request body of `req`.
    pub fn of(req: &ReleaseRequest) -> ReleaseReq {
        ReleaseReq {
            seat: req.seat.clone(),
            expect_version: req.expect_version,
            done: req.done,
            next_step: req.next_step.clone(),
        }
    }

    /// The engine's request, with the names the path carried.
    pub fn into_request(self, project: String, channel: String, task: String) -> ReleaseRequest {
        ReleaseRequest {
            project,
            channel,
            task,
            seat: self.seat,
            expect_version: self.expect_version,
            done: self.done,
            next_step: self.next_step,
        }
    }
}

/// `POST /v1/projects/{project}/sweep`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepReq {
    /// The time to judge by (ms since the epoch); the server's clock when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<Millis>,
    /// Report without writing.
    #[serde(default)]
    pub dry_run: bool,
}

/// `POST /v1/projects/{project}/focus/{seat}/start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FocusStartReq {
    /// The lease's length in minutes (capped server-side).
    pub minutes: u32,
}
