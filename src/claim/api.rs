//! The coordinator's verbs as one trait, so a command runs the same against the embedded
//! store in-process ([`super::Coordinator`]) and against `writerctl coordinator serve` over
//! HTTP (`crate::coordinator::client::HttpCoordinator`).

use super::engine::{Credentials, IssuedKey, MasterRequest, Registered, Status};
use super::error::ClaimError;
use super::master::{ControllerKey, MasterOutcome, Removed};
use super::model::Millis;
use super::model::{AuditEntry, Controller, EnrolledIdentity, Event};
use super::secret::Secret;
use super::work::{
    Channel, ClaimOutcome, ClaimRow, ClaimStep, FocusLease, FocusOutcome, ReleaseRequest, StewardReport, SweepReport,
    TakeRequest, TouchRequest,
};

/// Every coordinator verb a command can call.
pub trait CoordinatorApi {
    /// `session register`, proven by the identity's key or the row's current token.
    fn register(
        &self,
        project: &str,
        key: &ControllerKey,
        credentials: Credentials<'_>,
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
    /// Inbox events after `after`, for a holder of one of the identity's session tokens.
    /// `wait` lets a remote coordinator hold the request open until an event arrives (long
    /// poll); the embedded store answers at once.
    fn inbox(
        &self,
        project: &str,
        identity: &str,
        after: u64,
        limit: usize,
        wait: std::time::Duration,
        token: Option<&Secret>,
    ) -> Result<Vec<Event>, ClaimError>;
    /// `identity add` (administrative): the key is shown once.
    fn enroll_identity(&self, project: &str, identity: &str) -> Result<IssuedKey, ClaimError>;
    /// `identity rotate` (administrative).
    fn rotate_identity(&self, project: &str, identity: &str) -> Result<IssuedKey, ClaimError>;
    /// `identity remove` (administrative).
    fn remove_identity(&self, project: &str, identity: &str) -> Result<Removed, ClaimError>;
    /// `identity list` (administrative).
    fn identities(&self, project: &str) -> Result<Vec<EnrolledIdentity>, ClaimError>;
    /// The newest `limit` audit rows.
    fn audit_log(&self, project: Option<&str>, limit: usize) -> Result<Vec<AuditEntry>, ClaimError>;

    /// `channel create`.
    fn create_channel(
        &self,
        project: &str,
        channel: &str,
        steward: &str,
        sla_minutes: Option<u32>,
        ttl_floor_minutes: Option<u32>,
    ) -> Result<Channel, ClaimError>;
    /// `channel show`.
    fn show_channel(&self, project: &str, channel: &str) -> Result<Channel, ClaimError>;
    /// `claim take`; `token` proves the seat.
    fn take(&self, req: &TakeRequest, token: Option<&Secret>) -> Result<ClaimOutcome, ClaimError>;
    /// `claim touch`; `token` proves the seat.
    fn touch(&self, req: &TouchRequest, token: Option<&Secret>) -> Result<ClaimOutcome, ClaimError>;
    /// `claim release`; `token` proves the seat.
    fn release_claim(&self, req: &ReleaseRequest, token: Option<&Secret>) -> Result<ClaimRow, ClaimError>;
    /// `claim show`.
    fn show_claim(&self, project: &str, channel: &str, task: &str) -> Result<ClaimRow, ClaimError>;
    /// `claim history`.
    fn claim_history(&self, project: &str, channel: &str, task: &str) -> Result<Vec<ClaimStep>, ClaimError>;
    /// `claim list`.
    fn list_claims(&self, project: &str, channel: &str) -> Result<Vec<ClaimRow>, ClaimError>;
    /// `claim sweep`.
    fn sweep(&self, project: &str, as_of: Option<Millis>, dry_run: bool) -> Result<SweepReport, ClaimError>;
    /// `focus start`; `token` proves the seat.
    fn focus_start(
        &self,
        project: &str,
        seat: &str,
        minutes: u32,
        token: Option<&Secret>,
    ) -> Result<FocusOutcome, ClaimError>;
    /// `focus end`; `token` proves the seat.
    fn focus_end(&self, project: &str, seat: &str, token: Option<&Secret>) -> Result<FocusLease, ClaimError>;
    /// `focus show`: the seat's lease if it holds one now.
    fn focus_show(&self, project: &str, seat: &str) -> Result<Option<FocusLease>, ClaimError>;
    /// `steward report`.
    fn steward_report(&self, project: &str, channel: &str, as_of: Option<Millis>) -> Result<StewardReport, ClaimError>;
}

impl CoordinatorApi for super::Coordinator {
    fn register(
        &self,
        project: &str,
        key: &ControllerKey,
        credentials: Credentials<'_>,
    ) -> Result<Registered, ClaimError> {
        super::Coordinator::register(self, project, key, credentials)
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
        token: Option<&Secret>,
    ) -> Result<Vec<Event>, ClaimError> {
        super::Coordinator::inbox(self, project, identity, after, limit, token)
    }
    fn enroll_identity(&self, project: &str, identity: &str) -> Result<IssuedKey, ClaimError> {
        super::Coordinator::enroll_identity(self, project, identity, "local")
    }
    fn rotate_identity(&self, project: &str, identity: &str) -> Result<IssuedKey, ClaimError> {
        super::Coordinator::rotate_identity(self, project, identity, "local")
    }
    fn remove_identity(&self, project: &str, identity: &str) -> Result<Removed, ClaimError> {
        super::Coordinator::remove_identity(self, project, identity, "local")
    }
    fn identities(&self, project: &str) -> Result<Vec<EnrolledIdentity>, ClaimError> {
        super::Coordinator::identities(self, project)
    }
    fn audit_log(&self, project: Option<&str>, limit: usize) -> Result<Vec<AuditEntry>, ClaimError> {
        super::Coordinator::audit_log(self, project, limit)
    }
    fn create_channel(
        &self,
        project: &str,
        channel: &str,
        steward: &str,
        sla_minutes: Option<u32>,
        ttl_floor_minutes: Option<u32>,
    ) -> Result<Channel, ClaimError> {
        super::Coordinator::create_channel(self, project, channel, steward, sla_minutes, ttl_floor_minutes, "local")
    }
    fn show_channel(&self, project: &str, channel: &str) -> Result<Channel, ClaimError> {
        super::Coordinator::show_channel(self, project, channel)
    }
    fn take(&self, req: &TakeRequest, token: Option<&Secret>) -> Result<ClaimOutcome, ClaimError> {
        super::Coordinator::take(self, req, token)
    }
    fn touch(&self, req: &TouchRequest, token: Option<&Secret>) -> Result<ClaimOutcome, ClaimError> {
        super::Coordinator::touch(self, req, token)
    }
    fn release_claim(&self, req: &ReleaseRequest, token: Option<&Secret>) -> Result<ClaimRow, ClaimError> {
        super::Coordinator::release_claim(self, req, token)
    }
    fn show_claim(&self, project: &str, channel: &str, task: &str) -> Result<ClaimRow, ClaimError> {
        super::Coordinator::show_claim(self, project, channel, task)
    }
    fn claim_history(&self, project: &str, channel: &str, task: &str) -> Result<Vec<ClaimStep>, ClaimError> {
        super::Coordinator::claim_history(self, project, channel, task)
    }
    fn list_claims(&self, project: &str, channel: &str) -> Result<Vec<ClaimRow>, ClaimError> {
        super::Coordinator::list_claims(self, project, channel)
    }
    fn sweep(&self, project: &str, as_of: Option<Millis>, dry_run: bool) -> Result<SweepReport, ClaimError> {
        super::Coordinator::sweep(self, project, as_of, dry_run)
    }
    fn focus_start(
        &self,
        project: &str,
        seat: &str,
        minutes: u32,
        token: Option<&Secret>,
    ) -> Result<FocusOutcome, ClaimError> {
        super::Coordinator::focus_start(self, project, seat, minutes, token)
    }
    fn focus_end(&self, project: &str, seat: &str, token: Option<&Secret>) -> Result<FocusLease, ClaimError> {
        super::Coordinator::focus_end(self, project, seat, token)
    }
    fn focus_show(&self, project: &str, seat: &str) -> Result<Option<FocusLease>, ClaimError> {
        super::Coordinator::focus_show(self, project, seat)
    }
    fn steward_report(&self, project: &str, channel: &str, as_of: Option<Millis>) -> Result<StewardReport, ClaimError> {
        super::Coordinator::steward_report(self, project, channel, as_of)
    }
}
