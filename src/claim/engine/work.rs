//! Seed 002's verbs on the coordinator: read the claim, decide with [`crate::claim::work_claims`],
//! write by compare-and-set on the claim's version, audit every outcome.

use crate::claim::verb_names;
use std::collections::HashMap;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::Coordinator;
use crate::claim::error::ClaimError;
use crate::claim::model::{AuditEntry, Millis, NewEvent};
use crate::claim::names::validate_name;
use crate::claim::secret;
use crate::claim::secret::Secret;
use crate::claim::stores::{Commit, FocusWrite, MAX_CAS_ATTEMPTS, SeatProof, WorkClaimWrite};
use crate::claim::work_claims::{
    self, COORDINATOR_ACTOR, Channel, ChannelRequest, FocusLease, FocusOutcome, FocusRequest, ReleaseRequest,
    StewardReport, SweepAction, SweepReport, SweepRequest, TakeRequest, TaskAddress, TouchRequest, WorkClaim,
    WorkClaimOutcome, WorkClaimStatus, WorkClaimStep,
};

/// How many due claims one sweep reads at most; the rest wait for the next sweep.
pub const SWEEP_LIMIT: usize = 1_000_000;
/// How many sweep writes share one store round (one SQLite transaction, one Redis pipeline).
pub const SWEEP_BATCH: usize = 2_000;

/// Each project's sweep result, failures included.
pub type SweepAll = Vec<(String, Result<SweepReport, ClaimError>)>;

/// What an owner verb decided: the new row, the history action, its doorbells, its result.
struct OwnerDecision<T> {
    row: WorkClaim,
    action: &'static str,
    events: Vec<NewEvent>,
    value: T,
}

fn seat_actor(seat: &str) -> String {
    format!("seat:{seat}")
}

fn validate_work_claim_names(project: &str, channel: &str, task: &str) -> Result<(), ClaimError> {
    validate_name("project", project)?;
    validate_name("channel", channel)?;
    validate_name("task", task)
}

fn validate_optional(what: &str, v: Option<&str>) -> Result<(), ClaimError> {
    v.map_or(Ok(()), |v| validate_name(what, v))
}

fn validate_step(step: Option<&str>) -> Result<(), ClaimError> {
    step.map_or(Ok(()), work_claims::validate_next_step)
}

/// What every owner write (take, touch, release) names beside its address, validated in
/// this order before the seat proves itself.
struct OwnerNames<'a> {
    seat: &'a str,
    deputy: Option<&'a str>,
    next_step: Option<&'a str>,
}

/// A request [`Coordinator::write_work_claim`] runs: its names, its `--reason`, and the input
/// a kept answer is fingerprinted from.
trait OwnerWrite {
    fn names(&self) -> OwnerNames<'_>;
    fn reason(&self) -> Option<&String>;
    /// The request for the task `at` as its kept answer's fingerprint reads it: every field
    /// the decision reads, absent ones as null, in the order the request carried them when
    /// the address was part of it, so an answer kept before (or by an older replica during a
    /// rolling deploy) still replays. `--reason` is not part of it: a retry with another
    /// reason is the same request.
    fn fingerprint(&self, at: &TaskAddress) -> serde_json::Value;
}

impl OwnerWrite for TakeRequest {
    fn names(&self) -> OwnerNames<'_> {
        OwnerNames { seat: &self.seat, deputy: self.deputy.as_deref(), next_step: self.next_step.as_deref() }
    }
    fn reason(&self) -> Option<&String> {
        self.reason.as_ref()
    }
    fn fingerprint(&self, at: &TaskAddress) -> serde_json::Value {
        json!({"project": at.project, "channel": at.channel, "task": at.task, "seat": self.seat,
               "deputy": self.deputy, "ttl_minutes": self.ttl_minutes, "next_step": self.next_step})
    }
}

impl OwnerWrite for TouchRequest {
    fn names(&self) -> OwnerNames<'_> {
        OwnerNames { seat: &self.seat, deputy: self.deputy.as_deref(), next_step: self.next_step.as_deref() }
    }
    fn reason(&self) -> Option<&String> {
        None
    }
    /// "Keep" and "remove" read the same here (null), as they always did.
    fn fingerprint(&self, at: &TaskAddress) -> serde_json::Value {
        json!({"project": at.project, "channel": at.channel, "task": at.task, "seat": self.seat,
               "expect_version": self.expect_version, "deputy": self.deputy, "ttl_minutes": self.ttl_minutes,
               "next_step": self.next_step})
    }
}

impl OwnerWrite for ReleaseRequest {
    fn names(&self) -> OwnerNames<'_> {
        OwnerNames { seat: &self.seat, deputy: None, next_step: self.next_step.as_deref() }
    }
    fn reason(&self) -> Option<&String> {
        self.reason.as_ref()
    }
    fn fingerprint(&self, at: &TaskAddress) -> serde_json::Value {
        json!({"project": at.project, "channel": at.channel, "task": at.task, "seat": self.seat,
               "expect_version": self.expect_version, "done": self.done, "next_step": self.next_step})
    }
}

fn work_claim_detail(row: &WorkClaim) -> serde_json::Value {
    json!({
        "owner": row.owner,
        "status": row.status.as_str(),
        "version": row.version,
        "deputy": row.deputy,
        "ttl_minutes": row.ttl_minutes,
        "handoff_from": row.handoff_from,
    })
}

impl Coordinator {
    fn channel_or_not_found(&self, project: &str, channel: &str) -> Result<Channel, ClaimError> {
        self.store
            .channel(project, channel)?
            .ok_or_else(|| ClaimError::NotFound(format!("no channel {channel} in project {project}")))
    }

    /// Reads a claim, decides, writes it if its version is still the one read; a lost race
    /// re-reads and decides again (the second decision sees the winner: `claim_taken` or
    /// `version_conflict`). Audits the outcome either way.
    ///
    /// The seat proves itself first (`token`: a session token of a controller registered as
    /// the seat, issue 15); a refusal is audited and writes nothing. The proof is checked
    /// again by the store inside the write itself ([`SeatProof`], issue 28 point 5): the first
    /// check answers early (and before any kept answer is opened), the second is the one an
    /// `identity remove` or a deregistration racing this write can never overtake.
    fn write_work_claim<T: Serialize + DeserializeOwned>(
        &self,
        address: &TaskAddress,
        input: &impl OwnerWrite,
        token: Option<&Secret>,
        verb: &str,
        mut decide: impl FnMut(Option<&WorkClaim>, &Channel, Millis) -> Result<OwnerDecision<T>, ClaimError>,
    ) -> Result<T, ClaimError> {
        let this = self.for_request(self.ctx.clone().planned(input.reason().cloned(), false)?);
        let OwnerNames { seat, deputy, next_step } = input.names();
        let TaskAddress { project, channel, task } = address;
        validate_work_claim_names(project, channel, task)?;
        validate_name("seat", seat)?;
        validate_optional("deputy", deputy)?;
        validate_step(next_step)?;
        let base = this.audit(project, verb, seat_actor(seat), Some(format!("{channel}/{task}")));
        // The seat proves itself before anything else, a kept answer included: a request id
        // never stands in for the seat's token.
        if let Err(e) = this.prove_identity(project, seat, token, || format!("{verb} by {seat}")) {
            this.audit_failure(base, &e, None);
            return Err(e);
        }
        // A kept answer opens only with the token it was sealed under: another session of
        // the same seat proves the seat but not this request (issue 28 point 2).
        let fingerprint = input.fingerprint(address);
        let pending = this.pending(&base, &fingerprint, &token.into_iter().collect::<Vec<_>>())?;
        let refuse = || unproven(project, seat, verb);
        if let Some(answer) = this.replay_after_proof(&base, pending.as_ref(), refuse)? {
            return Ok(answer);
        }
        let proof = seat_proof(seat, token);
        let mut attempt = || -> Result<T, ClaimError> {
            let ch = this.channel_or_not_found(project, channel)?;
            for _ in 0..MAX_CAS_ATTEMPTS {
                let existing = this.store.work_claim(project, channel, task)?;
                let now = this.clock.now();
                let d = decide(existing.as_ref(), &ch, now)?;
                let mut audit = base.clone();
                audit.at = now;
                audit.detail = work_claim_detail(&d.row);
                audit.request = pending.as_ref().map(|p| p.record(&d.value, now)).transpose()?;
                let write = WorkClaimWrite {
                    expected_version: existing.map_or(0, |r| r.version),
                    action: d.action.into(),
                    row: d.row,
                    events: d.events,
                    audit,
                    proof: proof.clone(),
                };
                before_write()?;
                let committed = self
                    .store
                    .write_work_claims(std::slice::from_ref(&write))
                    .map_err(|e| reword_unproven(e, project, seat, verb))?;
                if let [Commit::Done(_)] = committed.as_slice() {
                    return Ok(d.value);
                }
            }
            Err(ClaimError::Unavailable(format!("claim {channel}/{task} kept changing ({MAX_CAS_ATTEMPTS} attempts)")))
        };
        let result = attempt();
        result.inspect_err(|e| this.audit_failure(base.clone(), e, None))
    }

    /// `channel create`: a steward and the channel's clocks. Never overwritten.
    pub fn create_channel(&self, project: &str, req: &ChannelRequest) -> Result<Channel, ClaimError> {
        let actor = self.ctx.actor.as_str();
        let ChannelRequest { channel, steward, sla_minutes, ttl_floor_minutes } = req;
        let (sla_minutes, ttl_floor_minutes) = (*sla_minutes, *ttl_floor_minutes);
        validate_name("project", project)?;
        validate_name("channel", channel)?;
        validate_name("steward", steward)?;
        let mut audit = self.audit(project, verb_names::CHANNEL_CREATE, actor.into(), Some(channel.into()));
        let input = json!([steward, sla_minutes, ttl_floor_minutes]);
        let pending = self.pending(&audit, &input, &self.admin_credentials())?;
        if let Some(answer) = self.replay_after_proof(&audit, pending.as_ref(), || ClaimError::AdminRequired)? {
            return Ok(answer);
        }
        let result = work_claims::new_channel(project, channel, steward, sla_minutes, ttl_floor_minutes, audit.at)
            .and_then(|ch| {
                audit.detail = json!({"steward": ch.steward, "sla_minutes": ch.sla_minutes,
                                      "ttl_floor_minutes": ch.ttl_floor_minutes});
                audit.request = pending.as_ref().map(|p| p.record(&ch, audit.at)).transpose()?;
                self.store.insert_channel(&ch, &audit).map(|()| ch)
            });
        result.inspect_err(|e| self.audit_failure(audit.clone(), e, None))
    }

    /// `claim take`.
    pub fn take_work_claim(
        &self,
        at: &TaskAddress,
        req: &TakeRequest,
        token: Option<&Secret>,
    ) -> Result<WorkClaimOutcome, ClaimError> {
        self.write_work_claim(at, req, token, verb_names::CLAIM_TAKE, |existing, ch, now| {
            let out = work_claims::take(existing, ch, at, req, now)?;
            Ok(OwnerDecision { row: out.claim.clone(), action: "take", events: Vec::new(), value: out })
        })
    }

    /// `claim touch`: the owner's write; resets the TTL clock.
    pub fn touch_work_claim(
        &self,
        at: &TaskAddress,
        req: &TouchRequest,
        token: Option<&Secret>,
    ) -> Result<WorkClaimOutcome, ClaimError> {
        // A value and its clear flag together is refused before anything else, as an
        // argument the request cannot mean.
        req.deputy_change()?;
        req.ttl_change()?;
        self.write_work_claim(at, req, token, verb_names::CLAIM_TOUCH, |existing, ch, now| {
            let row = existing.ok_or_else(|| not_found(&at.channel, &at.task))?;
            let out = work_claims::touch(row, ch, req, now)?;
            Ok(OwnerDecision { row: out.claim.clone(), action: "touch", events: Vec::new(), value: out })
        })
    }

    /// `claim release`: the owner opens the task again (or, `done`, closes it); rings the
    /// deputy and the steward.
    pub fn release_work_claim(
        &self,
        at: &TaskAddress,
        req: &ReleaseRequest,
        token: Option<&Secret>,
    ) -> Result<WorkClaim, ClaimError> {
        self.write_work_claim(at, req, token, verb_names::CLAIM_RELEASE, |existing, ch, now| {
            let row = existing.ok_or_else(|| not_found(&at.channel, &at.task))?;
            let after = work_claims::release(row, req, now)?;
            let events = work_claims::doorbells(row, &after, Some(&ch.steward), "owner", Some(&req.seat));
            let action = if req.done { "done" } else { "release" };
            Ok(OwnerDecision { row: after.clone(), action, events, value: after })
        })
    }

    /// `claim show`.
    pub fn show_work_claim(&self, project: &str, channel: &str, task: &str) -> Result<WorkClaim, ClaimError> {
        validate_work_claim_names(project, channel, task)?;
        self.store.work_claim(project, channel, task)?.ok_or_else(|| not_found(channel, task))
    }

    /// `claim history`, oldest first.
    pub fn work_claim_history(
        &self,
        project: &str,
        channel: &str,
        task: &str,
    ) -> Result<Vec<WorkClaimStep>, ClaimError> {
        validate_work_claim_names(project, channel, task)?;
        let steps = self.store.work_claim_history(project, channel, task)?;
        if steps.is_empty() {
            return Err(not_found(channel, task));
        }
        Ok(steps)
    }

    /// `claim list`: every claim in a channel.
    pub fn list_work_claims(&self, project: &str, channel: &str) -> Result<Vec<WorkClaim>, ClaimError> {
        validate_name("project", project)?;
        validate_name("channel", channel)?;
        self.channel_or_not_found(project, channel)?;
        self.store.work_claims(project, channel)
    }

    /// `channel show`.
    pub fn show_channel(&self, project: &str, channel: &str) -> Result<Channel, ClaimError> {
        validate_name("project", project)?;
        validate_name("channel", channel)?;
        self.channel_or_not_found(project, channel)
    }

    /// `focus start`: while the lease lasts, the seat's claims are not released by TTL.
    pub fn focus_start(
        &self,
        project: &str,
        seat: &str,
        req: &FocusRequest,
        token: Option<&Secret>,
    ) -> Result<FocusOutcome, ClaimError> {
        let minutes = req.minutes;
        validate_name("project", project)?;
        validate_name("seat", seat)?;
        let mut audit = self.audit(project, verb_names::FOCUS_START, seat_actor(seat), Some(seat.into()));
        let proven = self.prove_identity(project, seat, token, || format!("focus.start by {seat}"));
        if let Err(e) = proven {
            self.audit_failure(audit, &e, None);
            return Err(e);
        }
        let pending = self.pending(&audit, &minutes, &token.into_iter().collect::<Vec<_>>())?;
        let refuse = || unproven(project, seat, verb_names::FOCUS_START);
        if let Some(answer) = self.replay_after_proof(&audit, pending.as_ref(), refuse)? {
            return Ok(answer);
        }
        let result = work_claims::focus_lease(project, seat, minutes, audit.at).and_then(|out| {
            audit.detail = json!({"until": out.lease.until, "capped_from": out.capped_from});
            audit.request = pending.as_ref().map(|p| p.record(&out, audit.at)).transpose()?;
            let proof = seat_proof(seat, token);
            before_write()?;
            let written = self.store.put_focus(FocusWrite {
                lease: &out.lease,
                replaces: None,
                audit: &audit,
                proof: proof.as_ref(),
            });
            written.map(|_| out).map_err(|e| reword_unproven(e, project, seat, verb_names::FOCUS_START))
        });
        result.inspect_err(|e| self.audit_failure(audit.clone(), e, None))
    }

    /// `focus end`: ends the seat's lease now; its claims' TTLs count from now.
    pub fn focus_end(&self, project: &str, seat: &str, token: Option<&Secret>) -> Result<FocusLease, ClaimError> {
        validate_name("project", project)?;
        validate_name("seat", seat)?;
        let mut audit = self.audit(project, verb_names::FOCUS_END, seat_actor(seat), Some(seat.into()));
        if let Err(e) = self.prove_identity(project, seat, token, || format!("focus.end by {seat}")) {
            self.audit_failure(audit, &e, None);
            return Err(e);
        }
        let pending = self.pending(&audit, &(), &token.into_iter().collect::<Vec<_>>())?;
        let refuse = || unproven(project, seat, verb_names::FOCUS_END);
        if let Some(answer) = self.replay_after_proof(&audit, pending.as_ref(), refuse)? {
            return Ok(answer);
        }
        let result = (|| {
            for _ in 0..MAX_CAS_ATTEMPTS {
                let lease = self
                    .store
                    .focus_leases(project)?
                    .into_iter()
                    .find(|l| l.seat == seat && l.active_at(audit.at))
                    .ok_or_else(|| ClaimError::NotFound(format!("{seat} holds no focus lease in project {project}")))?;
                let started_at = lease.started_at;
                let ended = FocusLease { ended_at: Some(audit.at), ..lease };
                audit.request = pending.as_ref().map(|p| p.record(&ended, audit.at)).transpose()?;
                // A `focus start` landing between the read and the write wins the race and
                // is read (and ended) on the next round, never overwritten blind.
                let proof = seat_proof(seat, token);
                let written = self.store.put_focus(FocusWrite {
                    lease: &ended,
                    replaces: Some(started_at),
                    audit: &audit,
                    proof: proof.as_ref(),
                });
                if let Commit::Done(_) =
                    written.map_err(|e| reword_unproven(e, project, seat, verb_names::FOCUS_END))?
                {
                    return Ok(ended);
                }
            }
            Err(ClaimError::Unavailable(format!("{seat}'s focus lease kept changing")))
        })();
        result.inspect_err(|e| self.audit_failure(audit.clone(), e, None))
    }

    /// The seat's focus lease, if it holds one now.
    pub fn focus_show(&self, project: &str, seat: &str) -> Result<Option<FocusLease>, ClaimError> {
        validate_name("project", project)?;
        validate_name("seat", seat)?;
        let now = self.clock.now();
        Ok(self.store.focus_leases(project)?.into_iter().find(|l| l.seat == seat && l.active_at(now)))
    }

    /// `steward report`: claims older than the channel's SLA that carry no TTL.
    pub fn steward_report(
        &self,
        project: &str,
        channel: &str,
        as_of: Option<Millis>,
    ) -> Result<StewardReport, ClaimError> {
        work_claims::check_as_of(as_of)?;
        let ch = self.show_channel(project, channel)?;
        let as_of = as_of.unwrap_or_else(|| self.clock.now());
        let rows = self.store.work_claims(project, channel)?;
        let paused = self.paused_at(project, as_of)?;
        Ok(StewardReport { overdue: work_claims::steward_overdue(&ch, &rows, as_of), channel: ch, as_of, paused })
    }

    /// `claim sweep`: releases every claim of `project` whose TTL ran out by now, unless the
    /// project is paused (then it reports them as held back and writes nothing). With
    /// `dry_run`, reports what a sweep at `as_of` (now by default) would release, writing
    /// nothing; `as_of` without `dry_run` is refused. A sweep is the coordinator's own write:
    /// it never counts as an owner touch, and an owner write that lands between the sweep's
    /// read and its write wins (the sweep's compare-and-set fails and the claim is kept).
    pub fn sweep(&self, project: &str, req: &SweepRequest) -> Result<SweepReport, ClaimError> {
        let SweepRequest { as_of, dry_run } = *req;
        validate_name("project", project)?;
        work_claims::check_as_of(as_of)?;
        let now = self.clock.now();
        // A write judged by another moment would stamp the release (and a deputy's fresh
        // clock) with that moment: early releases in the future, a deputy handed a claim
        // already due in the past. --as-of is a preview only.
        if !dry_run && as_of.is_some() {
            return Err(ClaimError::invalid(
                "--as-of",
                "--as-of previews a sweep; add --dry-run (a real sweep judges by now)",
            ));
        }
        let as_of = as_of.unwrap_or(now);
        let focus: HashMap<String, FocusLease> =
            self.store.focus_leases(project)?.into_iter().map(|l| (l.seat.clone(), l)).collect();
        let mut channels: HashMap<String, Option<Channel>> = HashMap::new();
        // A paused project (issue 30) makes no TTL release and no deputy handoff: every due
        // claim is reported as held back and nothing is written. Judged at `as_of`, so a
        // preview past the pause's `until` shows what the first sweep after it releases.
        let paused = self.paused_at(project, as_of)?;
        let mut report = SweepReport { as_of, dry_run, paused: paused.clone(), ..SweepReport::default() };
        let (mut actions, mut writes) = (Vec::new(), Vec::new());
        // Stamped `now`, the moment the sweep judged by: the history step and the deputy's
        // `owner_since` read the same instant.
        let audit = AuditEntry { at: now, ..self.audit(project, "claim.ttl_release", COORDINATOR_ACTOR.into(), None) };
        for row in self.store.due_claims(project, as_of, SWEEP_LIMIT)? {
            let lease = row.owner.as_ref().and_then(|o| focus.get(o));
            let Some((after, due_at)) = work_claims::expire(&row, lease, as_of) else {
                report.deferred_by_focus += 1;
                continue;
            };
            let action = SweepAction {
                address: TaskAddress::new(project, &row.channel, &row.task),
                from: row.owner.clone().unwrap_or_default(),
                to: after.owner.clone(),
                version: after.version,
                due_at,
            };
            if paused.is_some() {
                report.held_back.push(work_claims::pause::held_back(&row, &after, due_at));
                continue;
            }
            if dry_run {
                report.released.push(action);
                continue;
            }
            if !channels.contains_key(&row.channel) {
                channels.insert(row.channel.clone(), self.store.channel(project, &row.channel)?);
            }
            let steward = channels[&row.channel].as_ref().map(|c| c.steward.as_str());
            let step_action = if after.status == WorkClaimStatus::Claimed { "ttl_handoff" } else { "ttl_release" };
            let mut detail = work_claim_detail(&after);
            detail["from"] = json!(row.owner);
            detail["due_at"] = json!(due_at);
            actions.push(action);
            writes.push(WorkClaimWrite {
                expected_version: row.version,
                events: work_claims::doorbells(&row, &after, steward, "ttl", None),
                action: step_action.into(),
                audit: AuditEntry { target: Some(row.target()), detail, ..audit.clone() },
                row: after,
                // The coordinator's own write: no seat to prove.
                proof: None,
            });
        }
        // Batches bound how long one sweep holds SQLite's write lock (verbs interleave).
        let mut actions = actions.into_iter();
        for batch in writes.chunks(SWEEP_BATCH) {
            // Results first: zip stops at the batch's end without taking the next action.
            for (commit, action) in self.store.write_work_claims(batch)?.into_iter().zip(actions.by_ref()) {
                match commit {
                    Commit::Done(_) => report.released.push(action),
                    Commit::Conflict => report.conflicts += 1,
                }
            }
        }
        Ok(report)
    }

    /// One sweep of every project that has a due claim (the server's sweeper); reports
    /// per project, failures included, so one bad project never stops the others.
    pub fn sweep_all(&self) -> Result<SweepAll, ClaimError> {
        let now = self.clock.now();
        Ok(self
            .store
            .projects_with_due(now)?
            .into_iter()
            .map(|p| (p.clone(), self.sweep(&p, &SweepRequest::default())))
            .collect())
    }
}

/// Failpoint `claim.before_write`: a seat write (claim or focus) between the engine's early
/// proof and the store's write that checks the proof again. Tests run an `identity remove`
/// here (issue 28 point 5).
fn before_write() -> Result<(), ClaimError> {
    #[cfg(any(test, debug_assertions, feature = "failpoints"))]
    crate::lockfile::failpoint::hit("claim.before_write")
        .map_err(|e| ClaimError::Unavailable(format!("failpoint: {e}")))?;
    Ok(())
}

/// The proof a seat write hands the store to check inside the write (issue 28 point 5).
fn seat_proof(seat: &str, token: Option<&Secret>) -> Option<SeatProof> {
    token.map(|t| SeatProof { identity: seat.to_string(), token_hash: secret::token_hash(t) })
}

/// A store's refusal of a seat proof at commit, in the verb's own words.
fn reword_unproven(e: ClaimError, project: &str, seat: &str, verb: &str) -> ClaimError {
    match e {
        ClaimError::IdentityUnproven { .. } => unproven(project, seat, verb),
        other => other,
    }
}

/// The refusal of a seat write whose token does not prove the seat (or does not open the
/// request's kept answer): the same words [`Coordinator::prove_identity`] uses.
fn unproven(project: &str, seat: &str, verb: &str) -> ClaimError {
    ClaimError::IdentityUnproven { project: project.into(), identity: seat.into(), act: format!("{verb} by {seat}") }
}

fn not_found(channel: &str, task: &str) -> ClaimError {
    ClaimError::NotFound(format!("no claim on task {task} in channel {channel}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept answer's fingerprint is a digest of this JSON: the same bytes as before the
    /// address moved out of the requests (issue 41), absent fields as null, no reason.
    #[test]
    fn owner_write_fingerprints_keep_their_bytes() {
        let at = TaskAddress::new("p", "c", "t");
        let take = TakeRequest { seat: "a".into(), reason: Some("why".into()), ..TakeRequest::default() };
        assert_eq!(
            take.fingerprint(&at).to_string(),
            r#"{"project":"p","channel":"c","task":"t","seat":"a","deputy":null,"ttl_minutes":null,"next_step":null}"#
        );
        let full = TakeRequest {
            seat: "a".into(),
            deputy: Some("b".into()),
            ttl_minutes: Some(10),
            next_step: Some("x".into()),
            reason: None,
        };
        assert_eq!(
            full.fingerprint(&at).to_string(),
            r#"{"project":"p","channel":"c","task":"t","seat":"a","deputy":"b","ttl_minutes":10,"next_step":"x"}"#
        );
        let clear = TouchRequest { seat: "a".into(), clear_deputy: true, ..TouchRequest::default() };
        assert_eq!(
            clear.fingerprint(&at).to_string(),
            r#"{"project":"p","channel":"c","task":"t","seat":"a","expect_version":null,"deputy":null,"ttl_minutes":null,"next_step":null}"#
        );
        let release = ReleaseRequest { seat: "a".into(), expect_version: Some(3), ..ReleaseRequest::default() };
        assert_eq!(
            release.fingerprint(&at).to_string(),
            r#"{"project":"p","channel":"c","task":"t","seat":"a","expect_version":3,"done":false,"next_step":null}"#
        );
    }
}
