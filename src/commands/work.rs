//! `writerctl channel|claim|focus|steward` (seed 002): work claims that cannot freeze a
//! fleet. Flags and output only; every decision is the coordinator's.

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use writerctl::claim::model::Millis;
use writerctl::claim::work_claims::{Channel, FocusLease, SweepReport, WorkClaim, WorkClaimOutcome, WorkClaimStep};
use writerctl::coordinator::verb::Verb;
use writerctl::coordinator::verbs::work as verbs;
use writerctl::coordinator::wire::{
    AsOfQuery, ChannelPath, ChannelRequest, FocusRequest, NoBody, ProjectPath, ReleaseRequest, SeatPath, SweepRequest,
    TakeRequest, TaskPath, TouchRequest,
};

use super::coord::{AuditReasonArgs, ProjectArgs, RequestArgs, SeatTokenArgs, parse_time, rfc3339};
use super::output::{Output, table};
use super::pause::{held_back_json, paused_json, paused_line};

/// Channels: where claims live, with a steward and an SLA.
#[derive(Debug, Subcommand)]
pub enum ChannelCmd {
    /// Create a channel. Its steward gets a doorbell on every release and reads the SLA
    /// report; its TTL floor raises shorter claim TTLs. Never overwritten.
    Create(ChannelCreateArgs),
    /// Show a channel.
    Show(ChannelArgs),
}

/// A channel's address.
#[derive(Debug, Args)]
pub struct ChannelArgs {
    #[command(flatten)]
    pub at: ProjectArgs,
    /// Channel name.
    #[arg(long, value_name = "C")]
    pub channel: String,
}

/// `channel create`.
#[derive(Debug, Args)]
pub struct ChannelCreateArgs {
    #[command(flatten)]
    pub at: ChannelArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    /// Who receives release doorbells and reads the SLA report.
    #[arg(long, value_name = "IDENTITY")]
    pub steward: String,
    /// Claims older than this without a TTL are reported to the steward [default: 60].
    #[arg(long, value_name = "N", value_parser = minutes)]
    pub sla_minutes: Option<u32>,
    /// The smallest TTL a claim here may declare; shorter ones are raised [default: 5].
    #[arg(long, value_name = "N", value_parser = minutes)]
    pub ttl_floor_minutes: Option<u32>,
}

/// Work claims: one live claim per task, with an optional deputy and TTL.
#[derive(Debug, Subcommand)]
pub enum ClaimCmd {
    /// Take a task: open a claim, or take a released one. A live claim is `claim_taken`.
    ///
    /// With --ttl-minutes N, the coordinator releases the claim after N minutes without a
    /// write by its owner: to the deputy if one is named, otherwise to open. A claim with a
    /// TTL or a deputy needs --next-step (what the next hands should do).
    Take(TakeArgs),
    /// The owner's write: resets the TTL clock; may change deputy, TTL and next step.
    ///
    /// With --expect-version N the write is refused (version_conflict) if the claim is no
    /// longer at the version you read; without it, it applies to whatever the claim is at
    /// while the seat still owns it.
    Touch(TouchArgs),
    /// The owner opens the task again (or, with --done, closes it). Rings the deputy and
    /// the steward.
    Release(ReleaseArgs),
    /// Show one claim.
    Show(TaskArgs),
    /// Every step of one claim, oldest first (takes, touches, releases, TTL releases).
    History(TaskArgs),
    /// Every claim in a channel.
    List(ChannelArgs),
    /// Release every claim whose TTL ran out (a server sweeps on its own; with the
    /// embedded store, run this from cron). --dry-run previews; --as-of previews a moment
    /// (a future --as-of needs --dry-run).
    Sweep(SweepArgs),
}

/// A task's address.
#[derive(Debug, Args)]
pub struct TaskArgs {
    #[command(flatten)]
    pub at: ChannelArgs,
    /// Task id.
    #[arg(long, value_name = "T")]
    pub task: String,
}

impl TaskArgs {
    /// The task's address in a verb's path.
    fn path(&self) -> TaskPath {
        TaskPath { project: self.at.at.project.clone(), channel: self.at.channel.clone(), task: self.task.clone() }
    }
}

/// A write to one task: its address and the request id, flattened in that order.
#[derive(Debug, Args)]
pub struct TaskWriteArgs {
    #[command(flatten)]
    pub at: TaskArgs,
    #[command(flatten)]
    pub request: RequestArgs,
}

impl TaskWriteArgs {
    /// Runs the write `V` on this task with `body`, proven by the seat's token. The token
    /// is read first: a missing one fails before the coordinator is opened.
    fn call<V: Verb<Path = TaskPath>>(&self, body: V::Input, token: &SeatTokenArgs) -> Result<V::Answer> {
        let token = token.token()?;
        let c = self.at.at.at.coord.open_write(&self.request)?;
        Ok(c.call::<V>(self.at.path(), body, token.as_ref())?)
    }
}

/// `claim take`.
#[derive(Debug, Args)]
pub struct TakeArgs {
    #[command(flatten)]
    pub task: TaskWriteArgs,
    /// The seat taking the task.
    #[arg(long, value_name = "IDENTITY")]
    pub seat: String,
    /// The successor if the TTL fires.
    #[arg(long, value_name = "IDENTITY")]
    pub deputy: Option<String>,
    /// Release the claim after N minutes without an owner write (floored by the channel).
    #[arg(long, value_name = "N", value_parser = minutes)]
    pub ttl_minutes: Option<u32>,
    /// What the next hands should do (required with --ttl-minutes or --deputy).
    #[arg(long, value_name = "TEXT")]
    pub next_step: Option<String>,
    #[command(flatten)]
    pub token: SeatTokenArgs,
    #[command(flatten)]
    pub reason: AuditReasonArgs,
}

/// The owner of a claim writing to it, with the version it read.
#[derive(Debug, Args)]
pub struct OwnerArgs {
    #[command(flatten)]
    pub task: TaskWriteArgs,
    /// The owner.
    #[arg(long, value_name = "IDENTITY")]
    pub seat: String,
    /// The version you read; the write is refused (version_conflict) if the claim moved
    /// since [default: not checked].
    #[arg(long, value_name = "N")]
    pub expect_version: Option<u64>,
    #[command(flatten)]
    pub token: SeatTokenArgs,
}

impl OwnerArgs {
    /// Runs the owner's write `V` on this claim with `body`, proven by the seat's token.
    fn write<V: Verb<Path = TaskPath>>(&self, body: V::Input) -> Result<V::Answer> {
        self.task.call::<V>(body, &self.token)
    }
}

/// `claim touch`.
#[derive(Debug, Args)]
pub struct TouchArgs {
    #[command(flatten)]
    pub owner: OwnerArgs,
    /// A new deputy.
    #[arg(long, value_name = "IDENTITY", conflicts_with = "no_deputy")]
    pub deputy: Option<String>,
    /// Remove the deputy.
    #[arg(long)]
    pub no_deputy: bool,
    /// A new TTL.
    #[arg(long, value_name = "N", conflicts_with = "no_ttl", value_parser = minutes)]
    pub ttl_minutes: Option<u32>,
    /// Remove the TTL.
    #[arg(long)]
    pub no_ttl: bool,
    /// A new next step.
    #[arg(long, value_name = "TEXT")]
    pub next_step: Option<String>,
}

/// `claim release`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    #[command(flatten)]
    pub owner: OwnerArgs,
    /// The task is finished (status done; never taken again).
    #[arg(long)]
    pub done: bool,
    /// What whoever takes it next should do.
    #[arg(long, value_name = "TEXT")]
    pub next_step: Option<String>,
    #[command(flatten)]
    pub reason: AuditReasonArgs,
}

/// `claim sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub at: ProjectArgs,
    /// Judge by this moment instead of now (RFC 3339).
    #[arg(long, value_name = "RFC3339", value_parser = parse_time)]
    pub as_of: Option<Millis>,
    /// Report what would be released; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Focus leases: a heads-down seat's claims are not released by TTL while the lease lasts.
#[derive(Debug, Subcommand)]
pub enum FocusCmd {
    /// Start (or restart) a focus lease of N minutes, capped at 240.
    Start(FocusStartArgs),
    /// End the seat's focus lease now; its claims' TTLs count from now.
    End(FocusEndArgs),
    /// Show the seat's focus lease, if it holds one.
    Show(SeatArgs),
}

/// A seat's address.
#[derive(Debug, Args)]
pub struct SeatArgs {
    #[command(flatten)]
    pub at: ProjectArgs,
    /// The seat.
    #[arg(long, value_name = "IDENTITY")]
    pub seat: String,
}

/// `focus start`.
#[derive(Debug, Args)]
pub struct FocusStartArgs {
    #[command(flatten)]
    pub seat: SeatArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    /// Lease length in minutes (capped at 240; a capped value is reported).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub minutes: u32,
    #[command(flatten)]
    pub token: SeatTokenArgs,
}

/// `focus end`.
#[derive(Debug, Args)]
pub struct FocusEndArgs {
    #[command(flatten)]
    pub seat: SeatArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub token: SeatTokenArgs,
}

/// The steward's view of a channel.
#[derive(Debug, Subcommand)]
pub enum StewardCmd {
    /// Live claims older than the channel's SLA that carry no TTL: the ones that would
    /// freeze the fleet if their owner went dark.
    Report(StewardArgs),
}

/// `steward report`.
#[derive(Debug, Args)]
pub struct StewardArgs {
    #[command(flatten)]
    pub at: ChannelArgs,
    /// Judge by this moment instead of now (RFC 3339).
    #[arg(long, value_name = "RFC3339", value_parser = parse_time)]
    pub as_of: Option<Millis>,
}

/// A number of minutes from 1 to a week (the coordinator's own bounds, said up front).
fn minutes(s: &str) -> Result<u32, String> {
    use writerctl::claim::work_claims::MAX_MINUTES;
    match s.parse::<u32>() {
        Ok(n) if (1..=MAX_MINUTES).contains(&n) => Ok(n),
        _ => Err(format!("{s:?} is not a number of minutes from 1 to {MAX_MINUTES}")),
    }
}

fn opt_time(ms: Option<Millis>) -> Value {
    ms.map_or(Value::Null, |m| Value::String(rfc3339(m)))
}

/// The claim as CLI.md's JSON contract spells it, plus the clock's other facts.
fn claim_json(r: &WorkClaim) -> Value {
    json!({
        "project": r.project,
        "channel": r.channel,
        "task": r.task,
        "owner": r.owner,
        "status": r.status.as_str(),
        "version": r.version,
        "deputy": r.deputy,
        "ttl_minutes": r.ttl_minutes,
        "next_step": r.next_step,
        "handoff_from": r.handoff_from,
        "last_owner_touch": opt_time(r.last_owner_touch),
        "owner_since": opt_time(r.owner_since),
        "claimed_at": opt_time(r.claimed_at),
        "due_at": opt_time(r.due_at()),
        "updated_at": rfc3339(r.updated_at),
    })
}

fn outcome_json(o: &WorkClaimOutcome) -> Value {
    let mut v = claim_json(&o.claim);
    v["ttl_raised_from"] = json!(o.ttl_raised_from);
    v
}

fn channel_json(c: &Channel) -> Value {
    json!({"project": c.project, "channel": c.channel, "steward": c.steward, "sla_minutes": c.sla_minutes,
           "ttl_floor_minutes": c.ttl_floor_minutes, "created_at": rfc3339(c.created_at)})
}

fn lease_json(l: &FocusLease) -> Value {
    json!({"project": l.project, "seat": l.seat, "started_at": rfc3339(l.started_at), "until": rfc3339(l.until),
           "ended_at": opt_time(l.ended_at)})
}

fn step_json(s: &WorkClaimStep) -> Value {
    json!({"at": rfc3339(s.at), "actor": s.actor, "action": s.action, "claim": claim_json(&s.claim)})
}

/// One line per claim for humans.
fn claim_line(r: &WorkClaim) -> String {
    let mut line = format!("{}/{} {} v{}", r.channel, r.task, r.status.as_str(), r.version);
    if let Some(o) = &r.owner {
        line.push_str(&format!(" owner {o}"));
    }
    if let Some(d) = &r.deputy {
        line.push_str(&format!(", deputy {d}"));
    }
    if let Some(t) = r.ttl_minutes {
        line.push_str(&format!(", ttl {t}m"));
    }
    if let Some(due) = r.due_at() {
        line.push_str(&format!(" (due {})", rfc3339(due)));
    }
    if let Some(h) = &r.handoff_from {
        line.push_str(&format!(", from {h}"));
    }
    if let Some(s) = &r.next_step {
        line.push_str(&format!("\n  next step: {s}"));
    }
    line
}

fn print_claim(out: Output, row: &WorkClaim) -> Result<()> {
    if out.json { Ok(out.json(&claim_json(row))?) } else { Ok(out.line(&claim_line(row))?) }
}

fn print_outcome(out: Output, o: &WorkClaimOutcome) -> Result<()> {
    if out.json {
        return Ok(out.json(&outcome_json(o))?);
    }
    out.line(&claim_line(&o.claim))?;
    if let Some(asked) = o.ttl_raised_from {
        out.note(&format!(
            "note: --ttl-minutes {asked} is below the channel's floor; the TTL is {}",
            o.claim.ttl_minutes.unwrap_or_default()
        ));
    }
    Ok(())
}

/// Runs a `channel` subcommand.
pub fn run_channel(cmd: ChannelCmd, out: Output) -> Result<()> {
    let (ch, created) = match cmd {
        ChannelCmd::Create(a) => {
            let c = a.at.at.coord.open_write(&a.request)?;
            let body = ChannelRequest {
                channel: a.at.channel.clone(),
                steward: a.steward.clone(),
                sla_minutes: a.sla_minutes,
                ttl_floor_minutes: a.ttl_floor_minutes,
                // What the command has no flag for keeps its default.
                ..ChannelRequest::default()
            };
            (c.call::<verbs::CreateChannel>(ProjectPath::of(&a.at.at.project), body, None)?, true)
        }
        ChannelCmd::Show(a) => {
            let at = ChannelPath::of(&a.at.project, &a.channel);
            (a.at.coord.open()?.call::<verbs::ShowChannel>(at, NoBody {}, None)?, false)
        }
    };
    if out.json {
        return Ok(out.json(&channel_json(&ch))?);
    }
    out.line(&format!(
        "{}channel {} in {}: steward {}, SLA {} min, TTL floor {} min",
        if created { "created " } else { "" },
        ch.channel,
        ch.project,
        ch.steward,
        ch.sla_minutes,
        ch.ttl_floor_minutes
    ))?;
    Ok(())
}

/// Runs a `claim` subcommand.
pub fn run_claim(cmd: ClaimCmd, out: Output) -> Result<()> {
    match cmd {
        ClaimCmd::Take(a) => {
            let body = TakeRequest {
                seat: a.seat,
                deputy: a.deputy,
                ttl_minutes: a.ttl_minutes,
                next_step: a.next_step,
                reason: a.reason.reason,
                // What the command has no flag for keeps its default.
                ..TakeRequest::default()
            };
            let o = a.task.call::<verbs::TakeClaim>(body, &a.token)?;
            print_outcome(out, &o)
        }
        ClaimCmd::Touch(a) => {
            let w = &a.owner;
            let body = TouchRequest {
                seat: w.seat.clone(),
                expect_version: w.expect_version,
                deputy: a.deputy,
                clear_deputy: a.no_deputy,
                ttl_minutes: a.ttl_minutes,
                clear_ttl: a.no_ttl,
                next_step: a.next_step,
                // What the command has no flag for keeps its default.
                ..TouchRequest::default()
            };
            print_outcome(out, &w.write::<verbs::TouchClaim>(body)?)
        }
        ClaimCmd::Release(a) => {
            let w = &a.owner;
            let body = ReleaseRequest {
                seat: w.seat.clone(),
                expect_version: w.expect_version,
                done: a.done,
                next_step: a.next_step,
                reason: a.reason.reason,
                // What the command has no flag for keeps its default.
                ..ReleaseRequest::default()
            };
            let row = w.write::<verbs::ReleaseClaim>(body)?;
            print_claim(out, &row)
        }
        ClaimCmd::Show(a) => {
            let row = a.at.at.coord.open()?.call::<verbs::ShowClaim>(a.path(), NoBody {}, None)?;
            print_claim(out, &row)
        }
        ClaimCmd::History(a) => {
            let steps = a.at.at.coord.open()?.call::<verbs::ClaimHistory>(a.path(), NoBody {}, None)?;
            if out.json {
                let list: Vec<Value> = steps.iter().map(step_json).collect();
                return Ok(out.json(&json!({"history": list}))?);
            }
            let mut t = table(&["at", "actor", "action", "owner", "status", "version", "deputy", "next step"]);
            for s in &steps {
                let r = &s.claim;
                t.add_row(vec![
                    rfc3339(s.at),
                    s.actor.clone(),
                    s.action.clone(),
                    r.owner.clone().unwrap_or_else(|| "-".into()),
                    r.status.as_str().into(),
                    r.version.to_string(),
                    r.deputy.clone().unwrap_or_else(|| "-".into()),
                    r.next_step.clone().unwrap_or_default(),
                ]);
            }
            Ok(out.line(&t.to_string())?)
        }
        ClaimCmd::List(a) => {
            let c = a.at.coord.open()?;
            let rows = c.call::<verbs::ListClaims>(ChannelPath::of(&a.at.project, &a.channel), NoBody {}, None)?;
            let at = ProjectPath::of(&a.at.project);
            let paused = c.call::<writerctl::coordinator::verbs::pause::ShowPause>(at, NoBody {}, None)?.paused;
            if out.json {
                let list: Vec<Value> = rows.iter().map(claim_json).collect();
                return Ok(out.json(&json!({"claims": list, "paused": paused_json(paused.as_ref())}))?);
            }
            if let Some(p) = &paused {
                out.line(&paused_line(&a.at.project, p))?;
            }
            if rows.is_empty() {
                return Ok(out.line(&format!("no claims in channel {}", a.channel))?);
            }
            let mut t = table(&["task", "status", "owner", "version", "deputy", "ttl", "due"]);
            for r in &rows {
                t.add_row(vec![
                    r.task.clone(),
                    r.status.as_str().into(),
                    r.owner.clone().unwrap_or_else(|| "-".into()),
                    r.version.to_string(),
                    r.deputy.clone().unwrap_or_else(|| "-".into()),
                    r.ttl_minutes.map_or("-".into(), |m| format!("{m}m")),
                    r.due_at().map_or("-".into(), rfc3339),
                ]);
            }
            Ok(out.line(&t.to_string())?)
        }
        ClaimCmd::Sweep(a) => {
            let body = SweepRequest { as_of: a.as_of, dry_run: a.dry_run };
            let report = a.at.coord.open()?.call::<verbs::Sweep>(ProjectPath::of(&a.at.project), body, None)?;
            print_sweep(out, &report)
        }
    }
}

fn print_sweep(out: Output, r: &SweepReport) -> Result<()> {
    let released: Vec<Value> = r
        .released
        .iter()
        .map(|a| {
            json!({"channel": a.address.channel, "task": a.address.task, "from": a.from, "to": a.to,
                   "status": if a.to.is_some() { "claimed" } else { "released" },
                   "version": a.version, "due_at": rfc3339(a.due_at)})
        })
        .collect();
    if out.json {
        return Ok(out.json(&json!({"as_of": rfc3339(r.as_of), "dry_run": r.dry_run, "released": released,
                                    "deferred_by_focus": r.deferred_by_focus, "conflicts": r.conflicts,
                                    "paused": paused_json(r.paused.as_ref()),
                                    "held_back": held_back_json(&r.held_back)}))?);
    }
    let verb = if r.dry_run { "would release" } else { "released" };
    out.line(&format!("sweep as of {}: {verb} {} claim(s)", rfc3339(r.as_of), r.released.len()))?;
    for a in &r.released {
        let to = a.to.as_deref().map_or("open".to_string(), |d| format!("deputy {d}"));
        out.line(&format!("  {}/{}: {} -> {to} (v{})", a.address.channel, a.address.task, a.from, a.version))?;
    }
    if r.deferred_by_focus > 0 {
        out.line(&format!("  {} due claim(s) kept: their owner holds a focus lease", r.deferred_by_focus))?;
    }
    if r.conflicts > 0 {
        out.line(&format!(
            "  {} claim(s) changed during the sweep (an owner write, or another sweeper); left as they are",
            r.conflicts
        ))?;
    }
    if let Some(p) = &r.paused {
        out.line(&format!("  {} due claim(s) held back: the project is paused ({})", r.held_back.len(), p.reason))?;
        for h in &r.held_back {
            let to = h.to.as_deref().map_or("open".to_string(), |d| format!("deputy {d}"));
            out.line(&format!("    {}/{}: {} -> {to} (due {})", h.channel, h.task, h.owner, rfc3339(h.due_at)))?;
        }
    }
    Ok(())
}

/// Runs a `focus` subcommand.
pub fn run_focus(cmd: FocusCmd, out: Output) -> Result<()> {
    match cmd {
        FocusCmd::Start(a) => {
            let token = a.token.token()?;
            let at = SeatPath::of(&a.seat.at.project, &a.seat.seat);
            let body = FocusRequest { minutes: a.minutes };
            let o = a.seat.at.coord.open_write(&a.request)?.call::<verbs::StartFocus>(at, body, token.as_ref())?;
            if out.json {
                let mut v = lease_json(&o.lease);
                v["capped_from"] = json!(o.capped_from);
                return Ok(out.json(&v)?);
            }
            out.line(&format!("{} is focused until {}", o.lease.seat, rfc3339(o.lease.until)))?;
            if let Some(asked) = o.capped_from {
                out.note(&format!(
                    "note: --minutes {asked} was capped at {}",
                    writerctl::claim::work_claims::MAX_FOCUS_MINUTES
                ));
            }
            Ok(())
        }
        FocusCmd::End(a) => {
            let token = a.token.token()?;
            let at = SeatPath::of(&a.seat.at.project, &a.seat.seat);
            let l = a.seat.at.coord.open_write(&a.request)?.call::<verbs::EndFocus>(at, NoBody {}, token.as_ref())?;
            if out.json {
                Ok(out.json(&lease_json(&l))?)
            } else {
                Ok(out.line(&format!("{} is no longer focused", l.seat))?)
            }
        }
        FocusCmd::Show(a) => {
            let l =
                a.at.coord.open()?.call::<verbs::ShowFocus>(SeatPath::of(&a.at.project, &a.seat), NoBody {}, None)?;
            match (out.json, l) {
                (true, l) => Ok(out.json(&json!({"focus": l.as_ref().map(lease_json)}))?),
                (false, Some(l)) => Ok(out.line(&format!("{} is focused until {}", l.seat, rfc3339(l.until)))?),
                (false, None) => Ok(out.line(&format!("{} holds no focus lease", a.seat))?),
            }
        }
    }
}

/// Runs a `steward` subcommand.
pub fn run_steward(cmd: StewardCmd, out: Output) -> Result<()> {
    let StewardCmd::Report(a) = cmd;
    let at = ChannelPath::of(&a.at.at.project, &a.at.channel);
    let r = a.at.at.coord.open()?.call::<verbs::Steward>(at, AsOfQuery { as_of: a.as_of }, None)?;
    if out.json {
        let list: Vec<Value> = r
            .overdue
            .iter()
            .map(|i| {
                let mut v = claim_json(&i.claim);
                v["age_minutes"] = json!(i.age_minutes);
                v
            })
            .collect();
        return Ok(out.json(&json!({"channel": channel_json(&r.channel), "as_of": rfc3339(r.as_of),
                                    "overdue": list, "paused": paused_json(r.paused.as_ref())}))?);
    }
    if let Some(p) = &r.paused {
        out.line(&paused_line(&r.channel.project, p))?;
    }
    if r.overdue.is_empty() {
        return Ok(out.line(&format!(
            "no claim in {} is older than its {} min SLA without a TTL",
            r.channel.channel, r.channel.sla_minutes
        ))?);
    }
    let mut t = table(&["task", "owner", "age", "next step"]);
    for i in &r.overdue {
        t.add_row(vec![
            i.claim.task.clone(),
            i.claim.owner.clone().unwrap_or_default(),
            format!("{} min", i.age_minutes),
            i.claim.next_step.clone().unwrap_or_default(),
        ]);
    }
    out.line(&format!(
        "{} claim(s) older than the {} min SLA carry no TTL; ask their owners to set one (--ttl-minutes, --deputy):",
        r.overdue.len(),
        r.channel.sla_minutes
    ))?;
    Ok(out.line(&t.to_string())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_as_rfc3339_only() {
        assert_eq!(parse_time("1970-01-01T00:01:00Z"), Ok(60_000));
        assert_eq!(parse_time("2026-12-01T09:00:00.5+01:00"), Ok(1_796_112_000_500));
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("2026-12-01").is_err());
        assert!(parse_time("0000-01-01T00:00:00Z").is_ok_and(|t| t < 0), "refused by the coordinator, not here");
        assert_eq!(minutes("5"), Ok(5));
        assert!(minutes("0").is_err() && minutes("10081").is_err() && minutes("-1").is_err());
    }

    #[test]
    fn a_claim_json_has_the_contract_keys() {
        let row = WorkClaim {
            project: "p".into(),
            channel: "c".into(),
            task: "t".into(),
            owner: None,
            status: writerctl::claim::work_claims::WorkClaimStatus::Released,
            version: 2,
            deputy: None,
            ttl_minutes: Some(5),
            next_step: Some("x".into()),
            handoff_from: Some("a".into()),
            last_owner_touch: None,
            owner_since: None,
            claimed_at: None,
            updated_at: 0,
        };
        let v = claim_json(&row);
        for k in [
            "channel",
            "task",
            "owner",
            "status",
            "version",
            "deputy",
            "ttl_minutes",
            "next_step",
            "handoff_from",
            "last_owner_touch",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        assert_eq!((v["owner"].clone(), v["status"].clone()), (Value::Null, json!("released")));
    }
}
