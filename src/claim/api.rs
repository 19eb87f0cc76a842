//! The coordinator's verbs as one trait, so a command runs the same against the embedded
//! store in-process ([`super::Coordinator`]) and against `writerctl coordinator serve` over
//! HTTP (`crate::coordinator::client::HttpCoordinator`).

use super::engine::{MasterRequest, Registered, Status};
use super::error::ClaimError;
use super::master::{ControllerKey, MasterOutcome};
use super::model::{AuditEntry, Controller, Event};
use super::secret::Secret;

/// Every coordinator verb a command can call.
pub trait CoordinatorApi {
    /// `session register`; `previous_token` proves a still-live row is being re-registered by
    /// its own controller.
    fn register(
        &self,
        project: &str,
        key: &ControllerKey,
        previous_token: Option<&Secret>,
    ) -> Result<Registered, ClaimError>;
    /// `session heartbeat`.
    fn heartbeat(&self, project: &str, session_id: &str, token: &Secret) -> Result<Controller, ClaimError>;
    /// `session deregister`: whether it was master, and the epoch after.
    fn deregister(&self, project: &str, session_id: &str, token: &Secret) -> Result<(bool, u64), ClaimError>;
    /// `master status`.
    fn status(&self, project: &str) -> Result<Status, ClaimError>;
    /// Resolves a target without changing anything.
    fn preview_target(
        &self,
        project: &str,
        to_identity: &str,
        to_session: Option<&str>,
    ) -> Result<Controller, ClaimError>;
    /// `master handoff`.
    fn handoff(&self, req: &MasterRequest, caller: &str, token: &Secret) -> Result<MasterOutcome, ClaimError>;
    /// `master claim`.
    fn claim(&self, req: &MasterRequest, operator_id: &str, password: &Secret) -> Result<MasterOutcome, ClaimError>;
    /// `operator add`.
    fn add_operator(&self, operator_id: &str, password: &Secret) -> Result<(), ClaimError>;
    /// Inbox events after `after`. `wait` lets a remote coordinator hold the request open
    /// until an event arrives (long poll); the embedded store answers at once.
    fn inbox(
        &self,
        project: &str,
        identity: &str,
        after: u64,
        limit: usize,
        wait: std::time::Duration,
    ) -> Result<Vec<Event>, ClaimError>;
    /// The newest `limit` audit rows.
    fn audit_log(&self, project: Option<&str>, limit: usize) -> Result<Vec<AuditEntry>, ClaimError>;
}

impl CoordinatorApi for super::Coordinator {
    fn register(
        &self,
        project: &str,
        key: &ControllerKey,
        previous_token: Option<&Secret>,
    ) -> Result<Registered, ClaimError> {
        super::Coordinator::register(self, project, key, previous_token)
    }
    fn heartbeat(&self, project: &str, session_id: &str, token: &Secret) -> Result<Controller, ClaimError> {
        super::Coordinator::heartbeat(self, project, session_id, token)
    }
    fn deregister(&self, project: &str, session_id: &str, token: &Secret) -> Result<(bool, u64), ClaimError> {
        super::Coordinator::deregister(self, project, session_id, token)
    }
    fn status(&self, project: &str) -> Result<Status, ClaimError> {
        super::Coordinator::status(self, project)
    }
    fn preview_target(
        &self,
        project: &str,
        to_identity: &str,
        to_session: Option<&str>,
    ) -> Result<Controller, ClaimError> {
        super::Coordinator::preview_target(self, project, to_identity, to_session)
    }
    fn handoff(&self, req: &MasterRequest, caller: &str, token: &Secret) -> Result<MasterOutcome, ClaimError> {
        super::Coordinator::handoff(self, req, caller, token)
    }
    fn claim(&self, req: &MasterRequest, operator_id: &str, password: &Secret) -> Result<MasterOutcome, ClaimError> {
        super::Coordinator::claim(self, req, operator_id, password)
    }
    fn add_operator(&self, operator_id: &str, password: &Secret) -> Result<(), ClaimError> {
        super::Coordinator::add_operator(self, operator_id, password)
    }
    fn inbox(
        &self,
        project: &str,
        identity: &str,
        after: u64,
        limit: usize,
        _wait: std::time::Duration,
    ) -> Result<Vec<Event>, ClaimError> {
        super::Coordinator::inbox(self, project, identity, after, limit)
    }
    fn audit_log(&self, project: Option<&str>, limit: usize) -> Result<Vec<AuditEntry>, ClaimError> {
        super::Coordinator::audit_log(self, project, limit)
    }
}
