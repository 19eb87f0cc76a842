//! Seed 002's shapes: channels, claim rows and their status, history steps, focus leases,
//! and each verb's request and answer. The decisions over them are in the parent module;
//! the shapes stand apart because [`crate::claim::error`] names a claim's status, and the
//! decisions return its errors.

use serde::{Deserialize, Serialize};

use crate::claim::clock::Millis;

/// A channel's TTL floor when `channel create` names none (issue 8: "default 5").
pub const DEFAULT_TTL_FLOOR_MINUTES: u32 = 5;
/// A channel's SLA when `channel create` names none.
pub const DEFAULT_SLA_MINUTES: u32 = 60;
/// The longest TTL or SLA accepted: one week. Longer is a typo, not a plan.
pub const MAX_MINUTES: u32 = 7 * 24 * 60;
/// The latest moment a sweep or report may be judged by: 9999-12-31T23:59:59.999Z.
pub const MAX_AS_OF: Millis = 253_402_300_799_999;
/// The longest focus lease: a seat may go heads-down, not disappear.
pub const MAX_FOCUS_MINUTES: u32 = 240;
/// The longest next step accepted.
pub const MAX_NEXT_STEP: usize = 4096;
/// The inbox event kind every release rings.
pub const CLAIM_RELEASED: &str = "ClaimReleased";
/// The audit actor of writes the coordinator makes on its own (TTL releases).
pub const COORDINATOR_ACTOR: &str = "coordinator";

pub(crate) const MINUTE_MS: Millis = 60_000;

/// A channel: where claims live, who stewards them, and its clocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Channel {
    /// The project.
    pub project: String,
    /// The channel name.
    pub channel: String,
    /// The identity that receives release doorbells and reads the SLA report.
    pub steward: String,
    /// Claims older than this without a TTL show up in the steward report.
    #[schema(value_type = u64)]
    pub sla_minutes: u32,
    /// The smallest TTL a claim in this channel may declare; smaller ones are raised.
    #[schema(value_type = u64)]
    pub ttl_floor_minutes: u32,
    /// When it was created.
    #[schema(value_type = i64)]
    pub created_at: Millis,
}

/// A claim's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = ClaimStatus)]
pub enum WorkClaimStatus {
    /// Live: one owner advances the task.
    Claimed,
    /// Open: anyone may take it.
    Released,
    /// Finished: never taken again.
    Done,
}

impl WorkClaimStatus {
    /// The lowercase name (`claimed`, `released`, `done`).
    pub fn as_str(self) -> &'static str {
        match self {
            WorkClaimStatus::Claimed => "claimed",
            WorkClaimStatus::Released => "released",
            WorkClaimStatus::Done => "done",
        }
    }
}

/// One task's claim row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = ClaimRow)]
pub struct WorkClaim {
    /// The project.
    pub project: String,
    /// The channel.
    pub channel: String,
    /// The task.
    pub task: String,
    /// Who advances it; None unless claimed.
    #[schema(required = true)]
    pub owner: Option<String>,
    /// Claimed, released or done.
    #[schema(schema_with = <WorkClaimStatus as utoipa::PartialSchema>::schema)]
    pub status: WorkClaimStatus,
    /// Bumped by every write; the compare-and-set token.
    pub version: u64,
    /// The named successor (declarative until the TTL fires).
    #[schema(required = true)]
    pub deputy: Option<String>,
    /// Minutes without an owner write before the coordinator releases the claim.
    #[schema(value_type = Option<u64>, required = true)]
    pub ttl_minutes: Option<u32>,
    /// What the next hands should do.
    #[schema(required = true)]
    pub next_step: Option<String>,
    /// The owner the claim last moved away from.
    #[schema(required = true)]
    pub handoff_from: Option<String>,
    /// The current owner's last write; None until it writes.
    #[schema(value_type = Option<i64>, required = true)]
    pub last_owner_touch: Option<Millis>,
    /// When the current owner became owner.
    #[schema(value_type = Option<i64>, required = true)]
    pub owner_since: Option<Millis>,
    /// When this live claim was first taken (the steward report's age).
    #[schema(value_type = Option<i64>, required = true)]
    pub claimed_at: Option<Millis>,
    /// The last write of any kind.
    #[schema(value_type = i64)]
    pub updated_at: Millis,
}

impl WorkClaim {
    /// `channel/task`, the audit target.
    pub fn target(&self) -> String {
        format!("{}/{}", self.channel, self.task)
    }

    /// When the TTL clock started: the owner's last write, or when it became owner.
    pub fn anchor(&self) -> Option<Millis> {
        match (self.last_owner_touch, self.owner_since) {
            (Some(t), Some(s)) => Some(t.max(s)),
            (t, s) => t.or(s),
        }
    }

    /// When the TTL releases it, ignoring focus leases; None without a TTL or when not
    /// claimed. Stores index this.
    pub fn due_at(&self) -> Option<Millis> {
        if self.status != WorkClaimStatus::Claimed || self.owner.is_none() {
            return None;
        }
        let ttl = self.ttl_minutes?;
        Some(self.anchor()?.saturating_add(Millis::from(ttl) * MINUTE_MS))
    }

    /// When the TTL releases it, given its owner's latest focus lease: never while the lease
    /// lasts at `at`, and not before a full TTL after the lease ended.
    pub fn due_with_focus(&self, focus: Option<&FocusLease>, at: Millis) -> Option<Millis> {
        let due = self.due_at()?;
        match focus {
            // A lease that started later (a preview of the past) proves nothing about `at`.
            Some(f) if f.started_at > at => Some(due),
            Some(f) if f.active_at(at) => None,
            Some(f) => Some(due.max(f.ends_at().saturating_add(Millis::from(self.ttl_minutes?) * MINUTE_MS))),
            None => Some(due),
        }
    }
}

/// One step of a claim's history: the row as a write left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = ClaimStep)]
pub struct WorkClaimStep {
    /// When.
    #[schema(value_type = i64)]
    pub at: Millis,
    /// Who: `seat:<identity>` or `coordinator`.
    pub actor: String,
    /// `take`, `touch`, `release`, `done`, `ttl_handoff` or `ttl_release`.
    pub action: String,
    /// The row after the step.
    pub claim: WorkClaim,
}

/// A seat's focus lease: while it lasts, the seat's claims are not released by TTL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FocusLease {
    /// The project.
    pub project: String,
    /// The seat.
    pub seat: String,
    /// When it started.
    #[schema(value_type = i64)]
    pub started_at: Millis,
    /// When it runs out.
    #[schema(value_type = i64)]
    pub until: Millis,
    /// When `focus end` ended it early, if it did.
    #[schema(value_type = Option<i64>, required = true)]
    pub ended_at: Option<Millis>,
}

impl FocusLease {
    /// When it stops counting as liveness.
    pub fn ends_at(&self) -> Millis {
        self.ended_at.map_or(self.until, |e| e.min(self.until))
    }

    /// Whether it holds at `at`.
    pub fn active_at(&self, at: Millis) -> bool {
        self.started_at <= at && at < self.ends_at()
    }
}

/// Where a task is: what every request about one task names. The requests flatten it, so
/// their JSON reads `project`, `channel` and `task` at the top level: a kept answer's
/// fingerprint is a digest of that JSON, and a retry must match it across versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TaskAddress {
    /// The project.
    pub project: String,
    /// The channel.
    pub channel: String,
    /// The task.
    pub task: String,
}

impl TaskAddress {
    /// `task` in `project`'s `channel`.
    pub fn new(project: impl Into<String>, channel: impl Into<String>, task: impl Into<String>) -> TaskAddress {
        TaskAddress { project: project.into(), channel: channel.into(), task: task.into() }
    }

    /// Where `row` is.
    pub fn of(row: &WorkClaim) -> TaskAddress {
        TaskAddress::new(&row.project, &row.channel, &row.task)
    }
}

/// A claim write's result: the row, and the TTL the seat asked for when the channel's
/// floor raised it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = ClaimOutcome)]
pub struct WorkClaimOutcome {
    /// The row as written.
    pub claim: WorkClaim,
    /// The TTL asked for, when it was below the channel's floor and was raised.
    #[schema(value_type = Option<u64>, required = true)]
    pub ttl_raised_from: Option<u32>,
}

/// One release a sweep made (or, dry, would make).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SweepAction {
    /// Which task.
    #[serde(flatten)]
    #[schema(schema_with = <TaskAddress as utoipa::PartialSchema>::schema)]
    pub address: TaskAddress,
    /// The owner it was taken from.
    pub from: String,
    /// The deputy it went to; None when it was opened.
    #[schema(required = true)]
    pub to: Option<String>,
    /// The version after the release.
    pub version: u64,
    /// When the TTL ran out.
    #[schema(value_type = i64)]
    pub due_at: Millis,
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SweepReport {
    /// The time the sweep judged by.
    #[schema(value_type = i64)]
    pub as_of: Millis,
    /// Nothing was written.
    pub dry_run: bool,
    /// Claims released (or that would be).
    pub released: Vec<SweepAction>,
    /// Due claims kept because their owner holds a focus lease.
    pub deferred_by_focus: u64,
    /// Due claims that changed between the sweep's read and its write (an owner write, or
    /// another sweeper's release); the sweep left them as they are.
    pub conflicts: u64,
    /// The project's pause when it held the sweep back (issue 30: `writerctl pause`).
    #[serde(default)]
    #[schema(required = true)]
    pub paused: Option<Paused>,
    /// Due claims the pause held back: each would have been released (or handed to its
    /// deputy) otherwise. Nothing of them was written.
    #[serde(default)]
    #[schema(required = true)]
    pub held_back: Vec<HeldBack>,
}

/// A claim older than its channel's SLA that carries no TTL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StewardItem {
    /// The claim.
    pub claim: WorkClaim,
    /// Its age in whole minutes.
    pub age_minutes: i64,
}

/// `steward report`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StewardReport {
    /// The channel.
    pub channel: Channel,
    /// The time the report judged by.
    #[schema(value_type = i64)]
    pub as_of: Millis,
    /// Claims older than the SLA with no TTL, oldest first.
    pub overdue: Vec<StewardItem>,
    /// The project's pause at `as_of`, if it is paused then (no TTL release, no deputy
    /// handoff).
    #[serde(default)]
    #[schema(required = true)]
    pub paused: Option<Paused>,
}

/// `focus start`'s result: the lease, and the minutes asked for when they were capped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FocusOutcome {
    /// The lease.
    pub lease: FocusLease,
    /// The minutes asked for, when above [`MAX_FOCUS_MINUTES`].
    #[schema(value_type = Option<u64>, required = true)]
    pub capped_from: Option<u32>,
}

/// A [`HeldBack`]'s `why`: the project is paused.
pub const HELD_BY_PAUSE: &str = "project_paused";

/// A project's maintenance pause (issue 30 point 3, `writerctl pause|resume`): while it is
/// active the coordinator makes no TTL release and no deputy handoff in the project; owner
/// writes, `master handoff` and `master claim` go on. The latest record is kept after
/// `resume` (with `resumed_at`), so the record's `version` only ever grows: it is the
/// compare-and-set token of the next pause or resume, and the order guard of its Postgres
/// write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectPause {
    /// Bumped by every pause and resume (first, so a store reads it from the JSON text
    /// before any name: see the Redis script).
    pub version: u64,
    /// The project.
    pub project: String,
    /// Why, as the operator gave it.
    pub reason: String,
    /// When the project was paused (a pause that replaced an active one keeps its `since`).
    pub since: Millis,
    /// When the pause ends by itself; None: until `resume`.
    pub until: Option<Millis>,
    /// Who paused it (`admin` over HTTP, `local` on the embedded store).
    pub paused_by: String,
    /// When `resume` ended it; None while it has not.
    pub resumed_at: Option<Millis>,
    /// Who resumed it.
    pub resumed_by: Option<String>,
}

impl ProjectPause {
    /// Whether the pause holds at `t`: not resumed, and `until` (if any) not reached.
    pub fn active_at(&self, t: Millis) -> bool {
        self.resumed_at.is_none() && self.until.is_none_or(|u| t < u)
    }

    /// What `master status`, `claim list` and the reports show of it.
    pub fn view(&self) -> Paused {
        Paused { reason: self.reason.clone(), since: self.since, until: self.until }
    }
}

/// An active pause as CLI.md's `"paused"` shows it: `{"reason","since","until"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Paused {
    /// Why.
    pub reason: String,
    /// Since when.
    #[schema(value_type = i64)]
    pub since: Millis,
    /// Until when; None: until `resume`.
    #[schema(value_type = Option<i64>, required = true)]
    pub until: Option<Millis>,
}

/// `pause`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PauseOutcome {
    /// The project.
    pub project: String,
    /// The pause now in force.
    pub paused: Paused,
    /// The pause this one replaced (the project was paused already): its reason and `until`
    /// are gone, its `since` kept.
    #[schema(required = true)]
    pub replaced: Option<Paused>,
}

/// `resume`'s result. Resuming a project that is not paused is not an error: it answers
/// `was_paused: false` and changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ResumeOutcome {
    /// The project.
    pub project: String,
    /// Whether a pause was in force.
    pub was_paused: bool,
    /// The pause that ended, if one was in force.
    #[schema(required = true)]
    pub previous: Option<Paused>,
    /// When it was resumed.
    #[schema(value_type = i64)]
    pub resumed_at: Millis,
}

/// A project's pause state (`GET /v1/projects/{project}/pause`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PauseState {
    /// The project.
    pub project: String,
    /// The pause in force now; None when the project is not paused.
    #[schema(required = true)]
    pub paused: Option<Paused>,
}

/// A due claim a paused sweep did not release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HeldBack {
    /// The channel.
    pub channel: String,
    /// The task.
    pub task: String,
    /// Its owner.
    pub owner: String,
    /// The deputy it would have gone to; None: it would have been opened.
    #[schema(required = true)]
    pub to: Option<String>,
    /// When its TTL ran out.
    #[schema(value_type = i64)]
    pub due_at: Millis,
    /// Why it was held back ([`HELD_BY_PAUSE`]).
    pub why: String,
}
