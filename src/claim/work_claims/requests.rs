//! What a work-claim verb's caller sends (seed 002; a project's pause, issue 30): each type
//! is the verb's request exactly as it travels (the JSON body of its HTTP route, the OpenAPI
//! schema of that body) and exactly as the engine and the pure decision read it. One
//! definition, so a new field is written here and where the decision uses it.
//!
//! The route's path names the project, channel, task or seat; the engine takes those
//! beside the request ([`TaskAddress`](super::TaskAddress) for an owner write).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::claim::clock::Millis;
use crate::claim::error::ClaimError;

/// `channel create` (`POST /v1/projects/{project}/channels`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = ChannelReq)]
pub struct ChannelRequest {
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

/// `claim take` (`POST /v1/projects/{project}/channels/{channel}/claims/{task}/take`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = TakeReq)]
pub struct TakeRequest {
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

/// `claim touch` (`POST /v1/projects/{project}/channels/{channel}/claims/{task}/touch`): an
/// owner write; fields left out keep their value.
///
/// "Keep", "remove" and "set" do not survive JSON as one optional field (`null` and absent
/// read the same), so removing travels as its own flag: `clear_deputy` removes the deputy,
/// `clear_ttl` the TTL; a value and its clear flag together are refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = TouchReq)]
pub struct TouchRequest {
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

impl TouchRequest {
    /// The deputy change: None keeps it, `Some(None)` removes it, `Some(Some(d))` sets it.
    /// `invalid_argument` when a deputy and `clear_deputy` are both given.
    pub fn deputy_change(&self) -> Result<Option<Option<String>>, ClaimError> {
        change("deputy", "clear_deputy", self.deputy.clone(), self.clear_deputy)
    }

    /// The TTL change, as [`TouchRequest::deputy_change`].
    pub fn ttl_change(&self) -> Result<Option<Option<u32>>, ClaimError> {
        change("ttl_minutes", "clear_ttl", self.ttl_minutes, self.clear_ttl)
    }
}

/// A value and its clear flag as a change; both set is a contradiction.
fn change<T>(what: &str, flag: &str, value: Option<T>, clear: bool) -> Result<Option<Option<T>>, ClaimError> {
    match (value, clear) {
        (Some(_), true) => {
            Err(ClaimError::invalid(what.to_string(), format!("{what} and {flag} contradict each other")))
        }
        (Some(v), false) => Ok(Some(Some(v))),
        (None, true) => Ok(Some(None)),
        (None, false) => Ok(None),
    }
}

/// `claim release` (`POST /v1/projects/{project}/channels/{channel}/claims/{task}/release`):
/// the owner opens the task again, or marks it done.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = ReleaseReq)]
pub struct ReleaseRequest {
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

/// `claim sweep` (`POST /v1/projects/{project}/sweep`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = SweepReq)]
pub struct SweepRequest {
    /// The time to judge by (ms since the epoch); the server's clock when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>)]
    pub as_of: Option<Millis>,
    /// Report without writing.
    #[serde(default)]
    pub dry_run: bool,
}

/// `focus start` (`POST /v1/projects/{project}/focus/{seat}/start`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = FocusStartReq)]
pub struct FocusRequest {
    /// The lease's length in minutes (capped server-side).
    pub minutes: u32,
}

/// `pause` (`POST /v1/projects/{project}/pause`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = PauseReq)]
pub struct PauseRequest {
    /// Why (at most 512 bytes, no control characters): shown in `master status` and audited.
    pub reason: String,
    /// When the pause ends by itself (ms since the epoch, in the future); absent: at `resume`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>)]
    pub until: Option<Millis>,
}
