//! A project's maintenance pause (issue 30 point 3): the decisions of `pause` and `resume`,
//! and what a paused sweep holds back.
//!
//! A pause is an operator's statement that, for a while, nobody's silence means they are
//! gone: a maintenance window, a provider outage that silences every seat at once (seed
//! 002's field test), an incident under investigation. It stops the two moves the
//! coordinator makes on its own, TTL release and deputy handoff; it never stops a move a
//! person makes (an owner's `claim release`, `master handoff`, `master claim`), so the
//! pause cannot freeze work that someone is actively moving.

use super::shapes::{HELD_BY_PAUSE, HeldBack, MAX_AS_OF, Paused, ProjectPause};
use crate::claim::clock::Millis;
use crate::claim::error::ClaimError;
use crate::claim::names::validate_reason;
use crate::claim::work_claims::WorkClaim;

/// Refuses an `until` that is not after `now` (a pause that ended before it began would
/// hold nothing back and say the opposite) or beyond 9999.
fn validate_until(until: Option<Millis>, now: Millis) -> Result<(), ClaimError> {
    match until {
        Some(u) if u <= now => Err(ClaimError::invalid(
            "--until",
            format!(
                "--until is not in the future (it is {} ms before now); a pause must end after it begins",
                now.saturating_sub(u)
            ),
        )),
        Some(u) if u > MAX_AS_OF => {
            Err(ClaimError::invalid("--until", format!("--until must be before the year 10000, not {u} ms")))
        }
        _ => Ok(()),
    }
}

/// `pause`: the record to write, and the pause it replaces when one is in force at `now`.
///
/// Pausing a paused project replaces its reason and `until` (an operator extending a
/// window, or correcting the reason) and keeps its `since`: the project has been paused
/// without a break since then. The replaced pause is returned so the answer can say so.
pub fn pause(
    existing: Option<&ProjectPause>,
    project: &str,
    reason: &str,
    until: Option<Millis>,
    actor: &str,
    now: Millis,
) -> Result<(ProjectPause, Option<Paused>), ClaimError> {
    validate_reason(reason)?;
    validate_until(until, now)?;
    let active = existing.filter(|p| p.active_at(now));
    let record = ProjectPause {
        version: existing.map_or(0, |p| p.version) + 1,
        project: project.to_string(),
        reason: reason.to_string(),
        since: active.map_or(now, |p| p.since),
        until,
        paused_by: actor.to_string(),
        resumed_at: None,
        resumed_by: None,
    };
    Ok((record, active.map(ProjectPause::view)))
}

/// `resume`: the record to write when a pause is in force at `now`; None when there is
/// none (never paused, resumed already, or its `until` passed), which changes nothing.
pub fn resume(existing: Option<&ProjectPause>, actor: &str, now: Millis) -> Option<ProjectPause> {
    let active = existing.filter(|p| p.active_at(now))?;
    Some(ProjectPause {
        version: active.version + 1,
        resumed_at: Some(now),
        resumed_by: Some(actor.to_string()),
        ..active.clone()
    })
}

/// The held-back entry for a due claim a paused sweep would have moved to `after`.
pub fn held_back(row: &WorkClaim, after: &WorkClaim, due_at: Millis) -> HeldBack {
    HeldBack {
        channel: row.channel.clone(),
        task: row.task.clone(),
        owner: row.owner.clone().unwrap_or_default(),
        to: after.owner.clone(),
        due_at,
        why: HELD_BY_PAUSE.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Millis = 1_700_000_000_000;

    fn paused(until: Option<Millis>) -> ProjectPause {
        pause(None, "p", "db migration", until, "admin", T).unwrap().0
    }

    #[test]
    fn a_pause_holds_until_resumed_or_until_its_end() {
        let open = paused(None);
        assert!(open.active_at(T) && open.active_at(T + 10 * 365 * 86_400_000));
        let window = paused(Some(T + 60_000));
        assert!(window.active_at(T + 59_999), "the last millisecond before `until` is paused");
        assert!(!window.active_at(T + 60_000), "`until` itself is not");
        let resumed = resume(Some(&open), "local", T + 5).unwrap();
        assert!(!resumed.active_at(T + 5) && !resumed.active_at(T + 6));
        assert_eq!((resumed.version, resumed.resumed_by.as_deref()), (2, Some("local")));
    }

    #[test]
    fn pausing_a_paused_project_replaces_reason_and_until_and_keeps_since() {
        let first = paused(Some(T + 60_000));
        let (second, replaced) = pause(Some(&first), "p", "longer window", None, "admin", T + 1_000).unwrap();
        assert_eq!(replaced, Some(first.view()));
        assert_eq!((second.since, second.until, second.version), (T, None, 2));
        assert_eq!(second.reason, "longer window");
        // After the first ran out, a new pause starts afresh and replaces nothing.
        let (third, replaced) = pause(Some(&first), "p", "again", None, "admin", T + 60_000).unwrap();
        assert_eq!((third.since, replaced, third.version), (T + 60_000, None, 2));
    }

    #[test]
    fn resuming_what_is_not_paused_changes_nothing() {
        assert_eq!(resume(None, "admin", T), None);
        let window = paused(Some(T + 1));
        assert_eq!(resume(Some(&window), "admin", T + 1), None, "its until passed");
        let resumed = resume(Some(&paused(None)), "admin", T).unwrap();
        assert_eq!(resume(Some(&resumed), "admin", T + 1), None, "resumed already");
    }

    #[test]
    fn bad_reasons_and_ends_are_refused() {
        let code = |r: Result<(ProjectPause, Option<Paused>), ClaimError>| r.unwrap_err().code();
        let bad = crate::error::ErrorCode::InvalidArgument;
        assert_eq!(code(pause(None, "p", "", None, "a", T)), bad);
        assert_eq!(code(pause(None, "p", "   ", None, "a", T)), bad);
        assert_eq!(code(pause(None, "p", "two\nlines", None, "a", T)), bad);
        assert_eq!(code(pause(None, "p", "bell\u{7}", None, "a", T)), bad);
        assert_eq!(code(pause(None, "p", &"x".repeat(crate::claim::names::MAX_REASON + 1), None, "a", T)), bad);
        assert!(pause(None, "p", &"x".repeat(crate::claim::names::MAX_REASON), None, "a", T).is_ok());
        assert_eq!(code(pause(None, "p", "r", Some(T), "a", T)), bad, "until now is not in the future");
        assert_eq!(code(pause(None, "p", "r", Some(T - 1), "a", T)), bad);
        assert_eq!(code(pause(None, "p", "r", Some(MAX_AS_OF + 1), "a", T)), bad);
        assert!(pause(None, "p", "r", Some(T + 1), "a", T).is_ok());
    }
}
