//! The coordinator's verbs as one trait, so a command runs the same against the embedded
//! store in-process ([`Coordinator`]) and against `writerctl coordinator serve` over HTTP
//! ([`HttpCoordinator`]). Every method is one [`Verb`] sent through
//! [`Endpoint::call`]: an implementation only says where its verbs run.

use std::time::{Duration, Instant};

use super::client::HttpCoordinator;
use super::verb::{Caller, Origin, Verb};
use super::verbs::{admin, history, master, work};
use super::wire::*;
use crate::claim::engine::{Credentials, ExportPage, IssuedKey, MasterRequest, Registered, Status};
use crate::claim::identities::Removed;
use crate::claim::masters::{ControllerKey, MasterOutcome};
use crate::claim::model::{AuditEntry, Controller, EnrolledIdentity, Event, Millis};
use crate::claim::secret::Secret;
use crate::claim::work_claims::{
    Channel, ClaimOutcome, ClaimRow, ClaimStep, FocusLease, FocusOutcome, ReleaseRequest, StewardReport, SweepReport,
    TakeRequest, TouchRequest,
};
use crate::claim::{ClaimError, Coordinator};

/// How long a long-poll waits before returning when the server answered "nothing new" in
/// less than half the wait asked for: the server had no room to hold the request (issue 39
/// point 2: its long-poll pool, or this address's share of it, was full) and answered at
/// once, so polling again at once would turn `--watch` and `inbox --follow` into a busy
/// loop against a server under load.
pub const NOT_HELD_PAUSE: Duration = Duration::from_secs(1);

/// Sleeps [`NOT_HELD_PAUSE`] when a long-poll that asked to wait `wait` came back with
/// nothing new early (see there).
fn pause_if_not_held(wait: Duration, started: Instant, nothing_new: bool) {
    if nothing_new && !wait.is_zero() && started.elapsed() < wait / 2 {
        std::thread::sleep(NOT_HELD_PAUSE);
    }
}

fn project(p: &str) -> ProjectPath {
    ProjectPath { project: p.to_string() }
}

fn channel_at(project: &str, channel: &str) -> ChannelPath {
    ChannelPath { project: project.to_string(), channel: channel.to_string() }
}

fn task_at(project: &str, channel: &str, task: &str) -> TaskPath {
    TaskPath { project: project.to_string(), channel: channel.to_string(), task: task.to_string() }
}

fn seat_at(project: &str, seat: &str) -> SeatPath {
    SeatPath { project: project.to_string(), seat: seat.to_string() }
}

fn identity_at(project: &str, identity: &str) -> IdentityPath {
    IdentityPath { project: project.to_string(), identity: identity.to_string() }
}

fn session_at(project: &str, sid: &str) -> SessionPath {
    SessionPath { project: project.to_string(), sid: sid.to_string() }
}

/// `--reason` and `--dry-run` of a master verb (issue 30).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MasterOptions {
    /// Why, recorded on the audit row and in `master history`.
    pub reason: Option<String>,
    /// Plan only: every check the real verb makes, nothing changed.
    pub dry_run: bool,
}

/// Where a verb runs: in-process on the embedded store, or on a server.
#[derive(Clone, Copy)]
pub enum Endpoint<'a> {
    /// The embedded store, in this process.
    Embedded(&'a Coordinator),
    /// A `writerctl coordinator serve`.
    Remote(&'a HttpCoordinator),
}

impl Endpoint<'_> {
    /// Runs `V` with `bearer` as the caller's token: the same verb definition, the same
    /// conversions, in-process or over HTTP.
    pub fn call<V: Verb>(
        self,
        path: V::Path,
        input: V::Input,
        bearer: Option<&Secret>,
    ) -> Result<V::Answer, ClaimError> {
        match self {
            Endpoint::Embedded(c) => {
                V::apply(c, path, input, &Caller { bearer: bearer.cloned(), origin: Origin::Local, admin: false })
            }
            Endpoint::Remote(h) => h.call::<V>(&path, &input, bearer),
        }
    }
}

/// Every coordinator verb a command can call.
pub trait CoordinatorApi {
    /// Where this coordinator's verbs run.
    fn endpoint(&self) -> Endpoint<'_>;

    /// `session register`, proven by the identity's key or the row's current token.
    fn register(
        &self,
        project_id: &str,
        key: &ControllerKey,
        credentials: Credentials<'_>,
    ) -> Result<Registered, ClaimError> {
        let body = RegisterReq {
            identity: key.identity.clone(),
            surface: key.surface.clone(),
            machine_id: key.machine_id.clone(),
            previous_token: credentials.token.map(|t| t.expose().trim().to_string()),
            identity_key: credentials.identity_key.map(|k| k.expose().trim().to_string()),
        };
        let r = self.endpoint().call::<master::Register>(project(project_id), body, None)?;
        Ok(Registered { controller: r.controller.into(), token: Secret::new(r.token), epoch: r.epoch })
    }
    /// `session heartbeat`.
    fn heartbeat(&self, project: &str, session_id: &str, token: &Secret) -> Result<Controller, ClaimError> {
        Ok(self.endpoint().call::<master::Heartbeat>(session_at(project, session_id), NoBody {}, Some(token))?.into())
    }
    /// `session deregister`: whether it was master, and the epoch after.
    fn deregister(&self, project: &str, session_id: &str, token: &Secret) -> Result<(bool, u64), ClaimError> {
        let r = self.endpoint().call::<master::Deregister>(session_at(project, session_id), NoBody {}, Some(token))?;
        Ok((r.was_master, r.epoch))
    }
    /// `master status`.
    fn status(&self, project_id: &str) -> Result<Status, ClaimError> {
        Ok(self.endpoint().call::<master::Status>(project(project_id), NoBody {}, None)?.into())
    }
    /// `master status --watch`: the status with its version, once it differs from `after`.
    /// `wait` lets a server hold the request open until it does (pushed by its watch
    /// registry); the embedded store answers at once.
    fn watch_master(&self, project_id: &str, after: Option<&str>, wait: Duration) -> Result<WatchResp, ClaimError> {
        let q = WatchQuery {
            after: after.map(str::to_string),
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
        };
        let started = Instant::now();
        let w = self.endpoint().call::<master::Watch>(project(project_id), q, None)?;
        pause_if_not_held(wait, started, after == Some(w.version.as_str()));
        Ok(w)
    }
    /// Resolves a target without changing anything.
    fn preview_target(
        &self,
        project_id: &str,
        to_identity: &str,
        to_session: Option<&str>,
    ) -> Result<Controller, ClaimError> {
        let q = TargetQuery { to: to_identity.to_string(), to_session: to_session.map(str::to_string) };
        Ok(self.endpoint().call::<master::Target>(project(project_id), q, None)?.into())
    }
    /// `master handoff`.
    fn handoff(&self, req: &MasterRequest, caller: &str, token: &Secret) -> Result<MasterOutcome, ClaimError> {
        self.handoff_with(req, caller, token, &MasterOptions::default())
    }
    /// `master handoff` with `--reason` and `--dry-run`.
    fn handoff_with(
        &self,
        req: &MasterRequest,
        caller: &str,
        token: &Secret,
        options: &MasterOptions,
    ) -> Result<MasterOutcome, ClaimError> {
        let body = HandoffReq {
            session_id: caller.to_string(),
            to: req.to_identity.clone(),
            to_session: req.to_session.clone(),
            expect_epoch: req.expect_epoch,
            reason: options.reason.clone(),
            dry_run: options.dry_run,
        };
        self.endpoint().call::<master::Handoff>(project(&req.project), body, Some(token))
    }
    /// `master claim`.
    fn claim(&self, req: &MasterRequest, operator_id: &str, password: &Secret) -> Result<MasterOutcome, ClaimError> {
        self.claim_with(req, operator_id, password, &MasterOptions::default())
    }
    /// `master claim` with `--reason` and `--dry-run`.
    fn claim_with(
        &self,
        req: &MasterRequest,
        operator_id: &str,
        password: &Secret,
        options: &MasterOptions,
    ) -> Result<MasterOutcome, ClaimError> {
        let body = ClaimReq {
            to: req.to_identity.clone(),
            to_session: req.to_session.clone(),
            expect_epoch: req.expect_epoch,
            operator: operator_id.to_string(),
            password: password.expose().to_string(),
            reason: options.reason.clone(),
            dry_run: options.dry_run,
        };
        self.endpoint().call::<master::MasterClaim>(project(&req.project), body, None)
    }
    /// `master history`: the newest `limit` changes of master, oldest first. Over HTTP,
    /// who made each and why only with `token`, a session token of the project or the
    /// admin token (otherwise withheld, and `redacted` says so); in-process, everything.
    fn master_history(
        &self,
        project_id: &str,
        limit: usize,
        token: Option<&Secret>,
    ) -> Result<HistoryResp, ClaimError> {
        let q = HistoryQuery { limit: Some(limit) };
        self.endpoint().call::<history::MasterHistory>(project(project_id), q, token)
    }
    /// One page of `audit export` (administrative).
    fn audit_export(&self, query: ExportQuery) -> Result<ExportPage, ClaimError> {
        let r = self.endpoint().call::<history::AuditExport>(NoPath {}, query, None)?;
        Ok(ExportPage { rows: r.rows.into_iter().map(|r| (r.cursor, r.entry)).collect() })
    }
    /// `operator add`.
    fn add_operator(&self, operator_id: &str, password: &Secret) -> Result<(), ClaimError> {
        let body = OperatorReq { operator_id: operator_id.to_string(), password: password.expose().to_string() };
        self.endpoint().call::<master::AddOperator>(NoPath {}, body, None).map(drop)
    }
    /// Inbox events after `after`, for a holder of one of the identity's session tokens.
    /// `wait` lets a remote coordinator hold the request open until an event arrives (long
    /// poll); the embedded store answers at once.
    fn inbox(
        &self,
        project: &str,
        identity: &str,
        after: u64,
        limit: usize,
        wait: Duration,
        token: Option<&Secret>,
    ) -> Result<Vec<Event>, ClaimError> {
        let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        let q = InboxQuery { after, limit: Some(limit), wait_ms };
        let started = Instant::now();
        let events = self.endpoint().call::<admin::Inbox>(identity_at(project, identity), q, token)?.events;
        pause_if_not_held(wait, started, events.is_empty());
        Ok(events)
    }
    /// `identity add` (administrative): the key is shown once.
    fn enroll_identity(&self, project_id: &str, identity: &str) -> Result<IssuedKey, ClaimError> {
        let body = IdentityReq { identity: identity.to_string() };
        Ok(self.endpoint().call::<admin::AddIdentity>(project(project_id), body, None)?.into())
    }
    /// `identity rotate` (administrative).
    fn rotate_identity(&self, project: &str, identity: &str) -> Result<IssuedKey, ClaimError> {
        Ok(self.endpoint().call::<admin::RotateIdentity>(identity_at(project, identity), NoBody {}, None)?.into())
    }
    /// `identity remove` (administrative).
    fn remove_identity(&self, project: &str, identity: &str) -> Result<Removed, ClaimError> {
        self.endpoint().call::<admin::RemoveIdentity>(identity_at(project, identity), NoBody {}, None)
    }
    /// `identity list` (administrative): names and times (never key hashes).
    fn identities(&self, project_id: &str) -> Result<Vec<EnrolledIdentity>, ClaimError> {
        let r = self.endpoint().call::<admin::ListIdentities>(project(project_id), NoBody {}, None)?;
        Ok(r.identities.into_iter().map(EnrolledIdentity::from).collect())
    }
    /// The newest `limit` audit rows.
    fn audit_log(&self, project: Option<&str>, limit: usize) -> Result<Vec<AuditEntry>, ClaimError> {
        let q = AuditQuery { limit: Some(limit), project: project.map(str::to_string) };
        Ok(self.endpoint().call::<admin::Audit>(NoPath {}, q, None)?.entries)
    }

    /// `channel create`.
    fn create_channel(
        &self,
        project_id: &str,
        channel: &str,
        steward: &str,
        sla_minutes: Option<u32>,
        ttl_floor_minutes: Option<u32>,
    ) -> Result<Channel, ClaimError> {
        let body =
            ChannelReq { channel: channel.to_string(), steward: steward.to_string(), sla_minutes, ttl_floor_minutes };
        self.endpoint().call::<work::CreateChannel>(project(project_id), body, None)
    }
    /// `channel show`.
    fn show_channel(&self, project: &str, channel: &str) -> Result<Channel, ClaimError> {
        self.endpoint().call::<work::ShowChannel>(channel_at(project, channel), NoBody {}, None)
    }
    /// `claim take`; `token` proves the seat.
    fn take(&self, req: &TakeRequest, token: Option<&Secret>) -> Result<ClaimOutcome, ClaimError> {
        let at = TaskPath::from(&req.address);
        self.endpoint().call::<work::TakeClaim>(at, TakeReq::of(req), token)
    }
    /// `claim touch`; `token` proves the seat.
    fn touch(&self, req: &TouchRequest, token: Option<&Secret>) -> Result<ClaimOutcome, ClaimError> {
        let at = TaskPath::from(&req.address);
        self.endpoint().call::<work::TouchClaim>(at, TouchReq::of(req), token)
    }
    /// `claim release`; `token` proves the seat.
    fn release_claim(&self, req: &ReleaseRequest, token: Option<&Secret>) -> Result<ClaimRow, ClaimError> {
        let at = TaskPath::from(&req.address);
        self.endpoint().call::<work::ReleaseClaim>(at, ReleaseReq::of(req), token)
    }
    /// `claim show`.
    fn show_claim(&self, project: &str, channel: &str, task: &str) -> Result<ClaimRow, ClaimError> {
        self.endpoint().call::<work::ShowClaim>(task_at(project, channel, task), NoBody {}, None)
    }
    /// `claim history`.
    fn claim_history(&self, project: &str, channel: &str, task: &str) -> Result<Vec<ClaimStep>, ClaimError> {
        self.endpoint().call::<work::ClaimHistory>(task_at(project, channel, task), NoBody {}, None)
    }
    /// `claim list`.
    fn list_claims(&self, project: &str, channel: &str) -> Result<Vec<ClaimRow>, ClaimError> {
        self.endpoint().call::<work::ListClaims>(channel_at(project, channel), NoBody {}, None)
    }
    /// `claim sweep`.
    fn sweep(&self, project_id: &str, as_of: Option<Millis>, dry_run: bool) -> Result<SweepReport, ClaimError> {
        self.endpoint().call::<work::Sweep>(project(project_id), SweepReq { as_of, dry_run }, None)
    }
    /// `focus start`; `token` proves the seat.
    fn focus_start(
        &self,
        project: &str,
        seat: &str,
        minutes: u32,
        token: Option<&Secret>,
    ) -> Result<FocusOutcome, ClaimError> {
        self.endpoint().call::<work::StartFocus>(seat_at(project, seat), FocusStartReq { minutes }, token)
    }
    /// `focus end`; `token` proves the seat.
    fn focus_end(&self, project: &str, seat: &str, token: Option<&Secret>) -> Result<FocusLease, ClaimError> {
        self.endpoint().call::<work::EndFocus>(seat_at(project, seat), NoBody {}, token)
    }
    /// `focus show`: the seat's lease if it holds one now.
    fn focus_show(&self, project: &str, seat: &str) -> Result<Option<FocusLease>, ClaimError> {
        self.endpoint().call::<work::ShowFocus>(seat_at(project, seat), NoBody {}, None)
    }
    /// `steward report`.
    fn steward_report(&self, project: &str, channel: &str, as_of: Option<Millis>) -> Result<StewardReport, ClaimError> {
        self.endpoint().call::<work::Steward>(channel_at(project, channel), AsOfQuery { as_of }, None)
    }
    /// `pause` (administrative).
    fn pause_project(
        &self,
        project_id: &str,
        reason: &str,
        until: Option<Millis>,
    ) -> Result<crate::claim::work_claims::PauseOutcome, ClaimError> {
        let body = super::verbs::pause::PauseReq { reason: reason.to_string(), until };
        self.endpoint().call::<super::verbs::pause::Pause>(project(project_id), body, None)
    }
    /// `resume` (administrative).
    fn resume_project(&self, project_id: &str) -> Result<crate::claim::work_claims::ResumeOutcome, ClaimError> {
        self.endpoint().call::<super::verbs::pause::Resume>(project(project_id), NoBody {}, None)
    }
    /// Whether the project is paused now.
    fn pause_state(&self, project_id: &str) -> Result<crate::claim::work_claims::PauseState, ClaimError> {
        self.endpoint().call::<super::verbs::pause::ShowPause>(project(project_id), NoBody {}, None)
    }
}

impl CoordinatorApi for Coordinator {
    fn endpoint(&self) -> Endpoint<'_> {
        Endpoint::Embedded(self)
    }
}

impl CoordinatorApi for HttpCoordinator {
    fn endpoint(&self) -> Endpoint<'_> {
        Endpoint::Remote(self)
    }
}
