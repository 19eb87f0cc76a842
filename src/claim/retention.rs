//! Bounded growth: what a coordinator store keeps, and for how long (issue 15 part 4).
//!
//! Five things grow with use and nothing else ever removes them: the audit log, each work
//! claim's history, the per-identity inboxes, the operator-attempt rows (one per operator id
//! ever tried, known or not) and, on Redis + Postgres, the queue entries Postgres refused
//! (`{ns}:pgq:dead`, audit rows an operator should look at). A claim's history is an audit
//! of that claim and is kept as long as the audit log, except each task's newest step, which
//! is always kept (it says how the claim got to where it is). A [`Retention`] policy says how much of each to keep; a
//! store's [`Store::prune`](super::stores::Store::prune) applies the [`Cutoffs`] computed from
//! it at one moment. `coordinator serve` prunes periodically; `writerctl audit prune` does it
//! once on the embedded store.
//!
//! Heartbeats are the fourth source and are handled at the source instead: a heartbeat writes
//! an audit row only when the controller had gone stale and comes back (see
//! [`Coordinator::heartbeat`](super::Coordinator::heartbeat)); beats are counted on
//! `/metrics`.
//!
//! # Inboxes: never a silent skip
//!
//! An inbox is read with a cursor (`after`). Trimming removes its oldest events, so a reader
//! whose cursor is below the newest trimmed cursor may have missed events it never saw. Each
//! store therefore records, per inbox, the highest cursor it ever trimmed (its *trim mark*,
//! raised in the same step as the removal) and [`check_cursor`] refuses such a read with
//! `inbox_cursor_trimmed`, naming the oldest cursor still held. `after = 0` means "whatever is
//! held" (a reader that has seen nothing cannot have skipped anything) and is never refused.
//!
//! # Attempt rows
//!
//! An attempt row is forgotten once its id has had no attempt for [`ATTEMPT_IDLE`], whether
//! the id is a known operator or not. Pruning only unknown ids would tell an attacker which
//! ids exist (after the window an unknown id's delay would be back to zero and a known one's
//! would not); forgetting both costs a patient attacker a handful of faster guesses per day
//! against a delay that is back at its 60 s cap within about ten attempts.

use std::time::Duration;

use super::error::ClaimError;
use super::model::Millis;

/// `--audit-retention-days` default: a quarter. Long enough for a quarterly access review
/// and for most incident investigations that start weeks late, short enough that a fleet's
/// audit table stays a few million rows once heartbeats no longer write one each.
pub const DEFAULT_AUDIT_RETENTION_DAYS: u32 = 90;
/// `--inbox-retention-days` default: a week, so a controller that was off over a long weekend
/// still finds its MasterPreempted and doorbell events.
pub const DEFAULT_INBOX_RETENTION_DAYS: u32 = 7;
/// `--inbox-max-events` default: the newest 1,000 events per inbox (a few hundred KiB of
/// Redis memory at most per identity; a reader a thousand events behind should resync from
/// `claim list` and `master status` anyway).
pub const DEFAULT_INBOX_MAX_EVENTS: u64 = 1000;
/// How long an operator id may go without an attempt before its attempt row is forgotten.
pub const ATTEMPT_IDLE: Duration = Duration::from_secs(24 * 3600);
/// Rows a store deletes per statement, so a first prune of a large table never holds a lock
/// for long; verbs run between batches.
pub const PRUNE_BATCH: usize = 10_000;

const DAY_MS: i64 = 24 * 3600 * 1000;

/// What to keep. `None` keeps everything of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Audit rows (and refused queue entries) younger than this many days are kept.
    pub audit_days: Option<u32>,
    /// Inbox events younger than this many days are kept.
    pub inbox_days: Option<u32>,
    /// At most this many of the newest events are kept per inbox.
    pub inbox_max_events: Option<u64>,
}

impl Retention {
    /// The policy from the command line's numbers, where 0 means "keep everything".
    pub fn from_flags(audit_days: u32, inbox_days: u32, inbox_max_events: u64) -> Retention {
        Retention {
            audit_days: (audit_days > 0).then_some(audit_days),
            inbox_days: (inbox_days > 0).then_some(inbox_days),
            inbox_max_events: (inbox_max_events > 0).then_some(inbox_max_events),
        }
    }

    /// The cutoffs at `now`.
    pub fn cutoffs(&self, now: Millis) -> Cutoffs {
        let before = |days: u32| now.saturating_sub(i64::from(days).saturating_mul(DAY_MS));
        Cutoffs {
            audit_before: self.audit_days.map(before),
            inbox_before: self.inbox_days.map(before),
            inbox_keep: self.inbox_max_events,
            attempts_before: now.saturating_sub(i64::try_from(ATTEMPT_IDLE.as_millis()).unwrap_or(i64::MAX)),
        }
    }
}

/// One prune's bounds, fixed at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cutoffs {
    /// Audit rows, refused queue entries and claim history steps (but each task's newest)
    /// with `at` before this go.
    pub audit_before: Option<Millis>,
    /// Inbox events with `at` before this go.
    pub inbox_before: Option<Millis>,
    /// Each inbox keeps at most this many of its newest events.
    pub inbox_keep: Option<u64>,
    /// Attempt rows whose last attempt is before this go.
    pub attempts_before: Millis,
}

/// What one prune removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Pruned {
    /// Audit rows (Postgres or SQLite), plus refused queue entries on Redis + Postgres.
    pub audit_rows: u64,
    /// Claim history steps (Postgres or SQLite, and Redis's history lists).
    pub history_steps: u64,
    /// Inbox events.
    pub inbox_entries: u64,
    /// Operator-attempt rows.
    pub attempt_rows: u64,
}

impl Pruned {
    /// Whether nothing was removed.
    pub fn is_empty(&self) -> bool {
        *self == Pruned::default()
    }
}

/// The sizes that grow with use, for `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sizes {
    /// Audit rows in the audit plane (Postgres, or the SQLite file).
    pub audit_rows: u64,
    /// Claim history steps in the audit plane (Postgres, or the SQLite file).
    pub history_steps: u64,
    /// Inbox events held, over every inbox.
    pub inbox_entries: u64,
    /// Operator-attempt rows.
    pub attempt_rows: u64,
}

/// Refuses an inbox read whose cursor is behind the inbox's trim mark (see the module
/// documentation). `oldest` is the oldest cursor the inbox still holds, if any.
pub fn check_cursor(after: u64, trimmed_through: u64, oldest: Option<u64>) -> Result<(), ClaimError> {
    if after == 0 || after >= trimmed_through {
        return Ok(());
    }
    Err(ClaimError::InboxCursorTrimmed { after, trimmed_through, oldest })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_keeps_everything_and_cutoffs_count_back_from_now() {
        let r = Retention::from_flags(0, 7, 0);
        assert_eq!(r, Retention { audit_days: None, inbox_days: Some(7), inbox_max_events: None });
        let c = r.cutoffs(10 * DAY_MS);
        assert_eq!((c.audit_before, c.inbox_before, c.inbox_keep), (None, Some(3 * DAY_MS), None));
        assert_eq!(c.attempts_before, 9 * DAY_MS);
    }

    #[test]
    fn a_cursor_behind_the_trim_mark_is_refused_with_the_oldest_held() {
        assert!(check_cursor(0, 50, Some(51)).is_ok(), "a reader that saw nothing skips nothing");
        assert!(check_cursor(50, 50, Some(51)).is_ok(), "it saw everything that was trimmed");
        assert!(check_cursor(7, 0, None).is_ok(), "nothing was ever trimmed");
        match check_cursor(10, 50, Some(51)) {
            Err(ClaimError::InboxCursorTrimmed { after: 10, trimmed_through: 50, oldest: Some(51) }) => {}
            other => panic!("{other:?}"),
        }
    }
}
