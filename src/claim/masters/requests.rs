//! What a master verb's caller sends: each type is the verb's request exactly as it travels
//! (the JSON body of its HTTP route, the OpenAPI schema of that body) and exactly as the
//! engine and the pure decision read it. One definition, so a new field is written here and
//! where the decision uses it, and nowhere in between.
//!
//! The path's `{project}` is not part of a request: the route names it, and the engine takes
//! it beside the request. Secrets (a password, a key, a token) are plain strings here
//! because they travel in the body; the engine wraps them into [`Secret`](crate::claim::secret::Secret)
//! before anything else sees them, and never keeps them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `session register` (`POST /v1/projects/{project}/sessions`): a controller's natural key
/// and the proof of its identity.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = RegisterReq)]
pub struct RegisterRequest {
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

/// `master handoff` (`POST /v1/projects/{project}/master/handoff`; the caller's session
/// token in `Authorization`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = HandoffReq)]
pub struct HandoffRequest {
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

/// `master claim`, the operator-authorized preempt (`POST /v1/projects/{project}/master/claim`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = ClaimReq)]
pub struct MasterClaimRequest {
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

/// `operator add` (`POST /v1/operators`; the admin token in `Authorization`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = OperatorReq)]
pub struct OperatorRequest {
    /// Operator id.
    pub operator_id: String,
    /// Password.
    pub password: String,
}

/// The target a handoff or a master claim names, read the same from either request.
pub trait MasterTarget {
    /// The identity to make master.
    fn to(&self) -> &str;
    /// The exact row, if named.
    fn to_session(&self) -> Option<&str>;
    /// The epoch the caller decided from.
    fn expect_epoch(&self) -> u64;
}

/// Implements [`MasterTarget`] for requests with `to`, `to_session` and `expect_epoch`.
macro_rules! master_target {
    ($($t:ty),*) => {$(
        impl MasterTarget for $t {
            fn to(&self) -> &str {
                &self.to
            }
            fn to_session(&self) -> Option<&str> {
                self.to_session.as_deref()
            }
            fn expect_epoch(&self) -> u64 {
                self.expect_epoch
            }
        }
    )*};
}

master_target!(HandoffRequest, MasterClaimRequest);
