//! Work claims that cannot freeze a fleet (seed 002): channels, one live claim per task,
//! an optional deputy and TTL, a mandatory next step, focus leases, and the sweep that
//! releases a claim whose owner went quiet.
//!
//! Everything here is a pure decision over rows a store read: no I/O, no clock. The engine
//! ([`super::Coordinator`]) reads, calls these, and writes the result by compare-and-set on
//! the claim's own version, so two seats taking one task elect exactly one owner.
//!
//! The TTL clock. A claim with `ttl_minutes = N` is *due* N minutes after its anchor: the
//! current owner's last write (`last_owner_touch`), or, for an owner that has not written
//! yet (a deputy the sweep just handed the claim to), the moment it became owner
//! (`owner_since`). Only owner writes move the anchor; reads, doorbells and sweeps never
//! do. A focus lease is the seat's liveness proof: while it lasts the seat's claims are not
//! released, and the TTL counts again from the lease's end.

use serde_json::json;

use super::error::ClaimError;
use super::model::{Millis, NewEvent};

pub mod pause;
pub mod requests;
pub(crate) mod shapes;

pub use requests::{
    ChannelRequest, FocusRequest, PauseRequest, ReleaseRequest, SweepRequest, TakeRequest, TouchRequest,
};
use shapes::MINUTE_MS;
pub use shapes::{
    CLAIM_RELEASED, COORDINATOR_ACTOR, Channel, DEFAULT_SLA_MINUTES, DEFAULT_TTL_FLOOR_MINUTES, FocusLease,
    FocusOutcome, MAX_AS_OF, MAX_FOCUS_MINUTES, MAX_MINUTES, MAX_NEXT_STEP, StewardItem, StewardReport, SweepAction,
    SweepReport, TaskAddress, WorkClaim, WorkClaimOutcome, WorkClaimStatus, WorkClaimStep,
};
pub use shapes::{HELD_BY_PAUSE, HeldBack, PauseOutcome, PauseState, Paused, ProjectPause, ResumeOutcome};

/// Refuses a next step that is too long or carries control characters other than newlines.
pub fn validate_next_step(step: &str) -> Result<(), ClaimError> {
    if step.len() > MAX_NEXT_STEP {
        return Err(ClaimError::invalid("--next-step", format!("--next-step is longer than {MAX_NEXT_STEP} bytes")));
    }
    if step.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(ClaimError::invalid("--next-step", "--next-step contains a control character"));
    }
    Ok(())
}

/// Refuses a moment before 1970 or after 9999 to judge a sweep or a report by.
pub fn check_as_of(as_of: Option<Millis>) -> Result<(), ClaimError> {
    match as_of {
        Some(t) if !(0..=MAX_AS_OF).contains(&t) => Err(ClaimError::invalid(
            "as_of",
            format!("as_of must be between 1970 and 9999 (milliseconds 0 to {MAX_AS_OF}), not {t}"),
        )),
        _ => Ok(()),
    }
}

/// Validates a channel's clocks and builds it.
pub fn new_channel(
    project: &str,
    channel: &str,
    steward: &str,
    sla_minutes: Option<u32>,
    ttl_floor_minutes: Option<u32>,
    now: Millis,
) -> Result<Channel, ClaimError> {
    let sla = sla_minutes.unwrap_or(DEFAULT_SLA_MINUTES);
    let floor = ttl_floor_minutes.unwrap_or(DEFAULT_TTL_FLOOR_MINUTES);
    for (what, v) in [("--sla-minutes", sla), ("--ttl-floor-minutes", floor)] {
        if v == 0 || v > MAX_MINUTES {
            return Err(ClaimError::invalid(what, format!("{what} must be between 1 and {MAX_MINUTES}, not {v}")));
        }
    }
    Ok(Channel {
        project: project.into(),
        channel: channel.into(),
        steward: steward.into(),
        sla_minutes: sla,
        ttl_floor_minutes: floor,
        created_at: now,
    })
}

/// Applies the channel's floor: a TTL below it is raised (and the asked value reported).
fn floored(ttl: Option<u32>, channel: &Channel) -> Result<(Option<u32>, Option<u32>), ClaimError> {
    match ttl {
        None => Ok((None, None)),
        Some(0) => Err(ClaimError::invalid("--ttl-minutes", "--ttl-minutes must be at least 1")),
        Some(n) if n > MAX_MINUTES => {
            Err(ClaimError::invalid("--ttl-minutes", format!("--ttl-minutes must be at most {MAX_MINUTES}, not {n}")))
        }
        Some(n) if n < channel.ttl_floor_minutes => Ok((Some(channel.ttl_floor_minutes), Some(n))),
        Some(n) => Ok((Some(n), None)),
    }
}

/// A claim that can change hands must say what the next hands should do (seed 002).
fn require_next_step(row: &WorkClaim) -> Result<(), ClaimError> {
    let blank = row.next_step.as_deref().is_none_or(|s| s.trim().is_empty());
    if (row.ttl_minutes.is_some() || row.deputy.is_some()) && blank {
        return Err(ClaimError::NextStepRequired { task: row.task.clone() });
    }
    Ok(())
}

fn check_deputy(seat: &str, deputy: Option<&str>) -> Result<(), ClaimError> {
    if deputy == Some(seat) {
        return Err(ClaimError::invalid("--deputy", format!("{seat} cannot be its own deputy")));
    }
    Ok(())
}

/// `claim take`: opens a claim on a task that has none, or takes a released one.
pub fn take(
    existing: Option<&WorkClaim>,
    channel: &Channel,
    at: &TaskAddress,
    req: &TakeRequest,
    now: Millis,
) -> Result<WorkClaimOutcome, ClaimError> {
    check_deputy(&req.seat, req.deputy.as_deref())?;
    if let Some(row) = existing
        && row.status != WorkClaimStatus::Released
    {
        return Err(ClaimError::ClaimTaken {
            task: row.task.clone(),
            owner: row.owner.clone(),
            status: row.status,
            version: row.version,
        });
    }
    let (ttl_minutes, ttl_raised_from) = floored(req.ttl_minutes, channel)?;
    let claim = WorkClaim {
        project: at.project.clone(),
        channel: at.channel.clone(),
        task: at.task.clone(),
        owner: Some(req.seat.clone()),
        status: WorkClaimStatus::Claimed,
        version: existing.map_or(0, |r| r.version) + 1,
        deputy: req.deputy.clone(),
        ttl_minutes,
        next_step: req.next_step.clone().or_else(|| existing.and_then(|r| r.next_step.clone())),
        handoff_from: existing.and_then(|r| r.handoff_from.clone()),
        last_owner_touch: Some(now),
        owner_since: Some(now),
        claimed_at: Some(now),
        updated_at: now,
    };
    require_next_step(&claim)?;
    Ok(WorkClaimOutcome { claim, ttl_raised_from })
}

/// The checks every owner write shares: the version the seat read, then ownership.
fn owned<'a>(row: &'a WorkClaim, seat: &str, expect_version: Option<u64>) -> Result<&'a WorkClaim, ClaimError> {
    if let Some(expect_version) = expect_version
        && row.version != expect_version
    {
        return Err(ClaimError::VersionConflict {
            task: row.task.clone(),
            expected: expect_version,
            actual: row.version,
        });
    }
    if row.status != WorkClaimStatus::Claimed || row.owner.as_deref() != Some(seat) {
        return Err(ClaimError::NotClaimOwner {
            task: row.task.clone(),
            seat: seat.to_string(),
            owner: row.owner.clone(),
            status: row.status,
        });
    }
    Ok(row)
}

/// `claim touch`: the owner's write; resets the TTL clock and may change the deputy, the
/// TTL and the next step.
pub fn touch(
    row: &WorkClaim,
    channel: &Channel,
    req: &TouchRequest,
    now: Millis,
) -> Result<WorkClaimOutcome, ClaimError> {
    let (deputy, ttl) = (req.deputy_change()?, req.ttl_change()?);
    let row = owned(row, &req.seat, req.expect_version)?;
    let mut claim = row.clone();
    if let Some(deputy) = deputy {
        check_deputy(&req.seat, deputy.as_deref())?;
        claim.deputy = deputy;
    }
    let mut ttl_raised_from = None;
    if let Some(ttl) = ttl {
        (claim.ttl_minutes, ttl_raised_from) = floored(ttl, channel)?;
    }
    if let Some(step) = &req.next_step {
        claim.next_step = Some(step.clone());
    }
    claim.version += 1;
    claim.last_owner_touch = Some(now);
    claim.updated_at = now;
    require_next_step(&claim)?;
    Ok(WorkClaimOutcome { claim, ttl_raised_from })
}

/// `claim release`: the owner opens the task again (or marks it done).
pub fn release(row: &WorkClaim, req: &ReleaseRequest, now: Millis) -> Result<WorkClaim, ClaimError> {
    let row = owned(row, &req.seat, req.expect_version)?;
    let mut claim = row.clone();
    claim.status = if req.done { WorkClaimStatus::Done } else { WorkClaimStatus::Released };
    claim.owner = None;
    claim.deputy = None;
    claim.ttl_minutes = None;
    claim.handoff_from = Some(req.seat.clone());
    claim.owner_since = None;
    claim.last_owner_touch = None;
    claim.claimed_at = None;
    if let Some(step) = &req.next_step {
        claim.next_step = Some(step.clone());
    }
    claim.version += 1;
    claim.updated_at = now;
    Ok(claim)
}

/// The TTL release (seed 002): to the deputy, who becomes owner with a fresh clock, or to
/// open. Either way the version is bumped and the next step kept. Returns the new row and
/// when the TTL ran out; None when the row is not due at `as_of` (no TTL, not claimed, or
/// held by a focus lease).
pub fn expire(row: &WorkClaim, focus: Option<&FocusLease>, as_of: Millis) -> Option<(WorkClaim, Millis)> {
    let due = row.due_with_focus(focus, as_of)?;
    if due > as_of {
        return None;
    }
    let old = row.owner.clone()?;
    let mut claim = row.clone();
    match row.deputy.clone().filter(|d| *d != old) {
        Some(deputy) => {
            claim.owner = Some(deputy);
            claim.owner_since = Some(as_of);
        }
        None => {
            claim.status = WorkClaimStatus::Released;
            claim.owner = None;
            claim.owner_since = None;
            claim.claimed_at = None;
            // The next owner declares its own clock.
            claim.ttl_minutes = None;
        }
    }
    claim.deputy = None;
    claim.handoff_from = Some(old);
    claim.last_owner_touch = None;
    claim.version += 1;
    claim.updated_at = as_of;
    Some((claim, due))
}

/// The doorbells a release rings (seed 002): the old owner, the deputy and the channel's
/// steward, each once, except the seat that released it itself.
pub fn doorbells(
    before: &WorkClaim,
    after: &WorkClaim,
    steward: Option<&str>,
    reason: &str,
    actor_seat: Option<&str>,
) -> Vec<NewEvent> {
    let payload = json!({
        "channel": after.channel,
        "task": after.task,
        "reason": reason,
        "from": before.owner,
        "to": after.owner,
        "status": after.status.as_str(),
        "version": after.version,
        "next_step": after.next_step,
    });
    let mut recipients: Vec<&str> = Vec::new();
    for r in [before.owner.as_deref(), before.deputy.as_deref(), steward].into_iter().flatten() {
        if Some(r) != actor_seat && !recipients.contains(&r) {
            recipients.push(r);
        }
    }
    recipients
        .into_iter()
        .map(|r| NewEvent {
            recipient: r.to_string(),
            recipient_session: None,
            kind: CLAIM_RELEASED.into(),
            payload: payload.clone(),
        })
        .collect()
}

/// `focus start`: a lease of `minutes`, capped at [`MAX_FOCUS_MINUTES`].
pub fn focus_lease(project: &str, seat: &str, minutes: u32, now: Millis) -> Result<FocusOutcome, ClaimError> {
    if minutes == 0 {
        return Err(ClaimError::invalid("--minutes", "--minutes must be at least 1"));
    }
    let granted = minutes.min(MAX_FOCUS_MINUTES);
    Ok(FocusOutcome {
        lease: FocusLease {
            project: project.into(),
            seat: seat.into(),
            started_at: now,
            until: now + Millis::from(granted) * MINUTE_MS,
            ended_at: None,
        },
        capped_from: (granted != minutes).then_some(minutes),
    })
}

/// The steward report: live claims with no TTL taken more than the SLA ago, oldest first.
pub fn steward_overdue(channel: &Channel, rows: &[WorkClaim], as_of: Millis) -> Vec<StewardItem> {
    let sla = Millis::from(channel.sla_minutes) * MINUTE_MS;
    let mut out: Vec<StewardItem> = rows
        .iter()
        .filter(|r| r.status == WorkClaimStatus::Claimed && r.ttl_minutes.is_none())
        .filter_map(|r| {
            let age = as_of.saturating_sub(r.claimed_at?);
            (age > sla).then(|| StewardItem { claim: r.clone(), age_minutes: age / MINUTE_MS })
        })
        .collect();
    out.sort_by_key(|i| std::cmp::Reverse(i.age_minutes));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: Millis = MINUTE_MS;

    fn channel() -> Channel {
        new_channel("p", "c", "steward", Some(30), None, 0).unwrap()
    }

    fn take_req(seat: &str, deputy: Option<&str>, ttl: Option<u32>, step: Option<&str>) -> TakeRequest {
        TakeRequest {
            seat: seat.into(),
            deputy: deputy.map(Into::into),
            ttl_minutes: ttl,
            next_step: step.map(Into::into),
            reason: None,
        }
    }

    fn at() -> TaskAddress {
        TaskAddress::new("p", "c", "t")
    }

    fn taken(deputy: Option<&str>, ttl: Option<u32>) -> WorkClaim {
        take(None, &channel(), &at(), &take_req("a", deputy, ttl, Some("merge it")), 0).unwrap().claim
    }

    /// A sweep's actions travel as JSON: the flattened address leaves them as they were,
    /// keys and order (a kept answer's fingerprint: `engine/work.rs`).
    #[test]
    fn the_address_reads_at_the_top_level_of_the_json() {
        let action = SweepAction {
            address: TaskAddress::new("p", "c", "t"),
            from: "a".into(),
            to: None,
            version: 3,
            due_at: 60_000,
        };
        let text = serde_json::to_string(&action).unwrap();
        let expected = r#"{"project":"p","channel":"c","task":"t","from":"a","to":null,"version":3,"due_at":60000}"#;
        assert_eq!(text, expected);
        assert_eq!(serde_json::from_str::<SweepAction>(&text).unwrap(), action);
    }

    #[test]
    fn next_step_is_required_with_a_ttl_or_a_deputy() {
        let ch = channel();
        for (deputy, ttl) in [(Some("b"), None), (None, Some(10)), (Some("b"), Some(10))] {
            for step in [None, Some(""), Some("  ")] {
                let e = take(None, &ch, &at(), &take_req("a", deputy, ttl, step), 0).unwrap_err();
                assert!(matches!(e, ClaimError::NextStepRequired { .. }), "{e:?}");
            }
        }
        assert!(take(None, &ch, &at(), &take_req("a", None, None, None), 0).is_ok());
    }

    #[test]
    fn a_ttl_below_the_floor_is_raised_and_reported() {
        let out = take(None, &channel(), &at(), &take_req("a", None, Some(2), Some("x")), 0).unwrap();
        assert_eq!((out.claim.ttl_minutes, out.ttl_raised_from), (Some(5), Some(2)));
        let out = take(None, &channel(), &at(), &take_req("a", None, Some(7), Some("x")), 0).unwrap();
        assert_eq!((out.claim.ttl_minutes, out.ttl_raised_from), (Some(7), None));
        assert!(take(None, &channel(), &at(), &take_req("a", None, Some(0), Some("x")), 0).is_err());
    }

    #[test]
    fn a_live_or_done_claim_cannot_be_taken_and_a_released_one_can() {
        let row = taken(None, None);
        let e = take(Some(&row), &channel(), &at(), &take_req("b", None, None, None), 1).unwrap_err();
        assert!(matches!(e, ClaimError::ClaimTaken { .. }));
        let req =
            ReleaseRequest { seat: "a".into(), expect_version: Some(1), done: false, next_step: None, reason: None };
        let open = release(&row, &req, 2).unwrap();
        assert_eq!((open.status, open.owner.as_deref(), open.version), (WorkClaimStatus::Released, None, 2));
        let again = take(Some(&open), &channel(), &at(), &take_req("b", None, None, None), 3).unwrap().claim;
        assert_eq!(
            (again.owner.as_deref(), again.version, again.next_step.as_deref()),
            (Some("b"), 3, Some("merge it"))
        );
        let done = release(&row, &ReleaseRequest { done: true, ..req }, 2).unwrap();
        assert!(matches!(
            take(Some(&done), &channel(), &at(), &take_req("b", None, None, None), 3),
            Err(ClaimError::ClaimTaken { .. })
        ));
    }

    #[test]
    fn owner_writes_check_the_version_then_the_owner() {
        let row = taken(None, Some(10));
        let mut req = TouchRequest {
            seat: "a".into(),
            expect_version: Some(7),
            deputy: None,
            clear_deputy: false,
            ttl_minutes: None,
            clear_ttl: false,
            next_step: None,
        };
        assert!(matches!(touch(&row, &channel(), &req, 5 * M), Err(ClaimError::VersionConflict { .. })));
        req.expect_version = Some(1);
        req.seat = "b".into();
        assert!(matches!(touch(&row, &channel(), &req, 5 * M), Err(ClaimError::NotClaimOwner { .. })));
        req.seat = "a".into();
        let out = touch(&row, &channel(), &req, 5 * M).unwrap().claim;
        assert_eq!((out.version, out.last_owner_touch, out.due_at()), (2, Some(5 * M), Some(15 * M)));
        req.expect_version = Some(2);
        req.next_step = Some(String::new());
        assert!(matches!(touch(&out, &channel(), &req, 6 * M), Err(ClaimError::NextStepRequired { .. })));
    }

    #[test]
    fn the_ttl_hands_to_the_deputy_with_a_fresh_clock_then_opens() {
        let row = taken(Some("b"), Some(10));
        assert_eq!(expire(&row, None, 10 * M - 1), None);
        let to_deputy = expire(&row, None, 10 * M).unwrap().0;
        assert_eq!(to_deputy.owner.as_deref(), Some("b"));
        assert_eq!(to_deputy.handoff_from.as_deref(), Some("a"));
        assert_eq!(
            (to_deputy.deputy.clone(), to_deputy.version, to_deputy.status),
            (None, 2, WorkClaimStatus::Claimed)
        );
        assert_eq!(to_deputy.next_step.as_deref(), Some("merge it"));
        // The sweep is not an owner touch: the deputy's clock starts when it became owner.
        assert_eq!(to_deputy.last_owner_touch, None);
        assert_eq!(to_deputy.due_at(), Some(20 * M));
        let (open, due) = expire(&to_deputy, None, 20 * M).unwrap();
        assert_eq!(due, 20 * M);
        assert_eq!((open.status, open.owner.clone(), open.version), (WorkClaimStatus::Released, None, 3));
        assert_eq!(open.handoff_from.as_deref(), Some("b"));
        assert_eq!(open.due_at(), None);
    }

    #[test]
    fn a_focus_lease_holds_the_claim_and_the_ttl_counts_from_its_end() {
        let row = taken(None, Some(10));
        let (lease, _) = (focus_lease("p", "a", 30, 5 * M).unwrap().lease, ());
        assert_eq!(expire(&row, Some(&lease), 20 * M), None);
        assert_eq!(expire(&row, Some(&lease), 35 * M - 1), None);
        assert_eq!(expire(&row, Some(&lease), 44 * M), None);
        assert!(expire(&row, Some(&lease), 45 * M).is_some());
        let ended = FocusLease { ended_at: Some(8 * M), ..lease };
        assert_eq!(row.due_with_focus(Some(&ended), 9 * M), Some(18 * M));
    }

    #[test]
    fn focus_is_capped_and_reported() {
        let out = focus_lease("p", "a", 1000, 0).unwrap();
        assert_eq!((out.lease.until, out.capped_from), (Millis::from(MAX_FOCUS_MINUTES) * M, Some(1000)));
        assert!(focus_lease("p", "a", 0, 0).is_err());
    }

    #[test]
    fn doorbells_ring_owner_deputy_and_steward_once_each() {
        let row = taken(Some("b"), Some(10));
        let after = expire(&row, None, 10 * M).unwrap().0;
        let to: Vec<String> =
            doorbells(&row, &after, Some("steward"), "ttl", None).into_iter().map(|e| e.recipient).collect();
        assert_eq!(to, ["a", "b", "steward"]);
        let to: Vec<String> =
            doorbells(&row, &after, Some("a"), "owner", Some("a")).into_iter().map(|e| e.recipient).collect();
        assert_eq!(to, ["b"]);
    }

    #[test]
    fn the_steward_report_lists_old_claims_without_a_ttl() {
        let mut rows = vec![taken(None, None), taken(None, Some(10))];
        rows.push(WorkClaim { task: "young".into(), claimed_at: Some(20 * M), ..taken(None, None) });
        let overdue = steward_overdue(&channel(), &rows, 31 * M);
        assert_eq!(overdue.len(), 1);
        assert_eq!((overdue[0].claim.task.as_str(), overdue[0].age_minutes), ("t", 31));
        assert!(steward_overdue(&channel(), &rows, 30 * M).is_empty());
    }
}
