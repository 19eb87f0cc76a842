//! The JSON bodies of the HTTP API (`/v1/...`), shared by the server and the client so the
//! two can never disagree. Secrets travel only in request bodies and `Authorization`
//! headers, never in URLs (which end up in logs); no response carries a token hash.

use serde::{Deserialize, Serialize};

use crate::claim::engine::{ControllerView, Status};
use crate::claim::model::{AuditEntry, Controller, Event, MasterRef, MasterSlot, Millis};

/// `POST /v1/projects/{project}/sessions`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RegisterReq {
    /// Identity.
    pub identity: String,
    /// Surface.
    pub surface: String,
    /// Machine id.
    pub machine_id: String,
    /// The row's current token, when re-registering a row that is still live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_token: Option<String>,
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
