//! The Postgres write queue (`{ns}:pgq`): how a write's Postgres half is enqueued, bounded,
//! drained in batches under a short lock, and retried by the background writer with
//! backoff while Postgres fails.
//!
//! The queue is shared by every store on the namespace, and so is the work: whichever
//! store's writer holds the drain lock applies every entry, its own or another process's,
//! and a writer that sits idle still looks every `IDLE_POLL`, which is how the entries of a
//! process that died before draining reach Postgres. Applying an entry twice changes
//! nothing, so a drainer killed between Postgres's commit and the entries' removal costs a
//! repeat, never a duplicate row. The parent's documentation lists what a crash leaves at
//! each step and the test for each.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use redis::Value;

use super::errors::lock;
use super::pg::{Job, apply_batch};
use super::replies::{parse_u64, stream_entries};
use super::scripts::{DEQUEUE_LUA, entry_bytes};
use super::{
    BACKOFF_MAX, BACKOFF_MIN, DEGRADED_LAG, DRAIN_BATCH, DRAIN_LOCK_MS, DrainError, Drained, FAILING_TTL, IDLE_POLL,
    INLINE_ROUNDS, Inner, Plane,
};
use crate::claim::error::ClaimError;
use crate::claim::model::AuditEntry;
use crate::claim::stores::Backlog;
use crate::claim::stores::codec::to_json;
use crate::lockfile::wait::jittered;

#[derive(Default)]
pub(super) struct Signal {
    pub(super) state: Mutex<(bool, bool)>, // (kicked, stop)
    pub(super) cv: Condvar,
}

impl Signal {
    pub(super) fn kick(&self) {
        lock(&self.state).0 = true;
        self.cv.notify_all();
    }

    pub(super) fn stop(&self) {
        lock(&self.state).1 = true;
        self.cv.notify_all();
    }

    /// Waits up to `d`; a kick ends the wait early only when `kickable`. An idle writer
    /// wakes for new work at once; a writer backing off after a failure waits its back-off
    /// out whatever the verbs do (issue 20: every Redis write woke it, so a Postgres outage
    /// meant 100 retries, log lines and connections a second per replica). False once
    /// stopped; a stop always ends the wait.
    pub(super) fn wait(&self, d: Duration, kickable: bool) -> bool {
        let deadline = Instant::now() + d;
        let mut g = lock(&self.state);
        while !(g.1 || kickable && g.0) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            g = self.cv.wait_timeout(g, left).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
        // Whatever kicked during a back-off is drained by the attempt that follows it.
        g.0 = false;
        !g.1
    }
}

/// The next back-off after `prev`: [`BACKOFF_MIN`], doubling up to [`BACKOFF_MAX`].
pub(super) fn next_backoff(prev: Option<Duration>) -> Duration {
    prev.map_or(BACKOFF_MIN, |d| (d * 2).min(BACKOFF_MAX))
}

/// How often a failure streak that goes on is logged again (with its count so far).
pub(super) const STREAK_REMINDER: Duration = Duration::from_secs(60);

/// A run of failed drains on one service. Logged when it starts, every [`STREAK_REMINDER`]
/// while it lasts and once when a drain succeeds again, each time with the count and the
/// service that failed (Redis or Postgres: issue 28's drill found a Redis outage logged as
/// a Postgres one): an outage costs a few log lines, not one per attempt.
pub(super) struct Streak {
    pub(super) plane: Plane,
    pub(super) failures: u64,
    pub(super) since: Instant,
    pub(super) logged: Instant,
}

impl Streak {
    /// Counts one failure; logs it if it starts a streak (a failure on the other service
    /// ends the streak going on and starts one) or a reminder is due.
    pub(super) fn fail(streak: &mut Option<Streak>, e: &DrainError, queued: impl FnOnce() -> Option<u64>) {
        let now = Instant::now();
        if streak.as_ref().is_some_and(|s| s.plane != e.plane) {
            Streak::end(streak);
        }
        let (plane, error) = (e.plane.name(), &e.error);
        match streak {
            None => {
                match e.plane {
                    Plane::Postgres => {
                        tracing::warn!(plane, error = %error, queued = queued(), "postgres writes failing; they wait in the redis queue, retried with back-off (logged again once a minute and on recovery)")
                    }
                    Plane::Redis => {
                        tracing::warn!(plane, error = %error, "redis unreachable: verbs are refused and the postgres queue cannot be read; retrying with back-off (logged again once a minute and on recovery)")
                    }
                }
                *streak = Some(Streak { plane: e.plane, failures: 1, since: now, logged: now });
            }
            Some(s) => {
                s.failures += 1;
                if now.duration_since(s.logged) >= STREAK_REMINDER {
                    s.logged = now;
                    let seconds = s.since.elapsed().as_secs();
                    match e.plane {
                        Plane::Postgres => {
                            tracing::warn!(plane, error = %error, failures = s.failures, seconds, queued = queued(), "postgres writes still failing")
                        }
                        Plane::Redis => {
                            tracing::warn!(plane, error = %error, failures = s.failures, seconds, "redis still unreachable")
                        }
                    }
                }
            }
        }
    }

    /// Ends a streak, if one was going on, with one line.
    pub(super) fn end(streak: &mut Option<Streak>) {
        if let Some(s) = streak.take() {
            let (failures, seconds) = (s.failures, s.since.elapsed().as_secs_f64());
            match s.plane {
                Plane::Postgres => tracing::info!(plane = "postgres", failures, seconds, "postgres writes recovered"),
                Plane::Redis => tracing::info!(plane = "redis", failures, seconds, "redis reachable again"),
            }
        }
    }
}

/// Drains the queue whenever kicked, when an earlier attempt failed (exponential back-off
/// with jitter, never cut short by a kick), and every [`IDLE_POLL`] (entries a crashed
/// process enqueued but never applied). Holds the store weakly: it ends when the store is
/// dropped.
///
/// `degraded` (this process's shortcut for verbs) follows the shared state, not whether this
/// replica won the drain lock (issue 28's drill: `Busy` left it set forever on a replica
/// that never drained again while another kept the queue moving).
pub(super) fn background_writer(inner: Weak<Inner>, signal: Arc<Signal>) {
    lower_priority();
    let mut backoff: Option<Duration> = None;
    let mut streak: Option<Streak> = None;
    while signal.wait(backoff.map_or(IDLE_POLL, jittered), backoff.is_none()) {
        let Some(inner) = inner.upgrade() else { return };
        backoff = match inner.drain(None) {
            Ok(Drained::Empty) => {
                Streak::end(&mut streak);
                inner.degraded.store(false, Ordering::SeqCst);
                None
            }
            // Another process holds the drain lock (it drains until the queue is empty, so
            // this is only a safety net): look again, less often each time. Redis answered,
            // so a Redis streak is over; Postgres is as the drainers last saw it.
            Ok(Drained::Busy | Drained::More) => {
                if streak.as_ref().is_some_and(|s| s.plane == Plane::Redis) {
                    Streak::end(&mut streak);
                }
                if let Ok(failing) = inner.postgres_failing() {
                    inner.degraded.store(failing, Ordering::SeqCst);
                    if !failing {
                        Streak::end(&mut streak);
                    }
                }
                Some(next_backoff(backoff))
            }
            Err(e) => {
                // Seed 000: on a Postgres failure, log and retry; Redis is never rolled back.
                Streak::fail(&mut streak, &e, || inner.queue_len(&inner.keys.queue()).ok());
                if e.plane == Plane::Postgres {
                    inner.degraded.store(true, Ordering::SeqCst);
                    inner.mark_postgres_failing(true);
                }
                Some(next_backoff(backoff))
            }
        };
        inner.check_queue_recovered();
    }
}

/// How much nicer than the request threads the Postgres writer runs (Linux `nice`, per
/// thread), so it does not take their CPU (issue 20 measured, with 16 clients: 3,285 verbs/s
/// at equal priority, 3,698 lowered). Not more: at +10 on an overloaded 2-core machine the
/// writer got so little CPU that 60 s of 16 clients left 1.9 s of verbs queued; at +5, 0.02 s
/// (`benches/http_load.rs`, README). Measured back to back at 16 clients: 1,885 verbs/s,
/// p50 7.5 ms at +0; 2,637 verbs/s, p50 5.4 ms at +5 (a noisy shared machine).
pub(super) const WRITER_NICE: i32 = 5;

/// Lowers the calling thread's priority by [`WRITER_NICE`] (best effort: a platform or a
/// sandbox that refuses only costs the request threads some CPU).
pub(super) fn lower_priority() {
    let tid = rustix::thread::gettid();
    let current = rustix::process::getpriority_process(Some(tid)).unwrap_or(0);
    if let Err(e) = rustix::process::setpriority_process(Some(tid), (current + WRITER_NICE).min(19)) {
        tracing::debug!(error = %e, "cannot lower the postgres writer's priority");
    }
}

impl Inner {
    /// Read-your-writes for the audit log: applies (or waits for another drainer to apply)
    /// every queue entry that exists now, for at most `wait`. Entries enqueued later are not
    /// waited for, so a busy fleet never holds a reader up; a drainer holding the lock (the
    /// background writer, another replica) is waited for instead of skipped, so a verb's own
    /// audit row is there when the caller reads the log right after it. True when they were
    /// all applied, false when `wait` ran out first.
    pub(super) fn drain_written_so_far(&self, wait: Duration) -> Result<bool, ClaimError> {
        let queue = self.keys.queue();
        let newest: Value = self
            .redis
            .run_idempotent(|c| redis::cmd("XREVRANGE").arg(&queue).arg("+").arg("-").arg("COUNT").arg(1).query(c))?;
        let Some(mark) = stream_entries("queue", &newest)?.into_iter().next().map(|(id, _)| id) else {
            return Ok(true);
        };
        let deadline = Instant::now() + wait;
        loop {
            let oldest: Value = self.redis.run_idempotent(|c| {
                redis::cmd("XRANGE").arg(&queue).arg("-").arg(&mark).arg("COUNT").arg(1).query(c)
            })?;
            if stream_entries("queue", &oldest)?.is_empty() {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            // Wait only for another drainer; after our own rounds, look again at once.
            if self.drain(Some(INLINE_ROUNDS)).map_err(ClaimError::from)? == Drained::Busy {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// Redis's side of `/readyz`, in one round trip: the namespace is restored, and the
    /// queue's depth and oldest entry (its id is Redis's clock at enqueue; compared with
    /// Redis's own TIME, so no clock skew enters).
    ///
    /// `degraded` is the shared state every replica sees alike: a drainer (any replica) saw
    /// Postgres fail within [`FAILING_TTL`], or the queue's oldest entry waited longer than
    /// [`DEGRADED_LAG`]. Never whether this replica drained (issue 28's drill).
    pub(super) fn readiness(&self) -> Result<Backlog, ClaimError> {
        let queue = self.keys.queue();
        let ready = self.keys.ready();
        let failing_key = self.keys.pg_failing();
        let (exists, failing, depth, oldest, time): (i64, i64, u64, Value, Vec<String>) =
            self.redis.run_idempotent(|c| {
                redis::pipe()
                    .cmd("EXISTS")
                    .arg(&ready)
                    .cmd("EXISTS")
                    .arg(&failing_key)
                    .cmd("XLEN")
                    .arg(&queue)
                    .cmd("XRANGE")
                    .arg(&queue)
                    .arg("-")
                    .arg("+")
                    .arg("COUNT")
                    .arg(1)
                    .cmd("TIME")
                    .query(c)
            })?;
        if exists == 0 {
            return Err(ClaimError::Unavailable("redis has not been restored from postgres yet".into()));
        }
        let now_ms = match time.as_slice() {
            [s, us] => parse_u64("time", s)? * 1000 + parse_u64("time", us)? / 1000,
            _ => return Err(ClaimError::store(format!("redis: unexpected TIME reply {time:?}"))),
        };
        let oldest_age_seconds = stream_entries("queue", &oldest)?
            .first()
            .and_then(|(id, _)| id.split('-').next().and_then(|ms| ms.parse::<u64>().ok()))
            .map(|at| now_ms.saturating_sub(at) as f64 / 1000.0);
        let lagging = oldest_age_seconds.is_some_and(|a| a > DEGRADED_LAG.as_secs_f64());
        Ok(Backlog { degraded: failing > 0 || lagging, queue_depth: depth, oldest_age_seconds })
    }

    pub(super) fn queue_len(&self, key: &str) -> Result<u64, ClaimError> {
        let n = self.redis.run_idempotent(|c| redis::cmd("XLEN").arg(key).query::<i64>(c))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Enqueues an audit row on its own; false when the queue was full and the row was
    /// dropped (counted and logged per episode, see [`AUDIT_LUA`]).
    pub(super) fn enqueue_audit(&self, entry: &AuditEntry) -> Result<bool, ClaimError> {
        let op = uuid::Uuid::new_v4().to_string();
        let audit = to_json(entry)?;
        let (max_rows, max_bytes) = self.bounds();
        let mut inv = self.audit.prepare_invoke();
        inv.key(self.keys.queue()).key(self.keys.queue_bytes()).arg(max_rows).arg(max_bytes);
        inv.arg("op").arg(&op).arg("project").arg(&entry.project).arg("audit").arg(&audit);
        // Not retried: a lost reply may mean it was added, and a second add would be a
        // second op id (a duplicate row).
        let added = self.redis.run(|c| inv.invoke::<i64>(c))? == 1;
        if !added {
            self.dropped_refusals.fetch_add(1, Ordering::Relaxed);
            self.full.fail(&format_args!("dropped the audit row of a failed {}", entry.verb));
        }
        Ok(added)
    }

    /// The queue's bounds as the scripts take them (0: none).
    pub(super) fn bounds(&self) -> (u64, u64) {
        (self.max_rows.load(Ordering::Relaxed), self.max_bytes.load(Ordering::Relaxed))
    }

    /// A write verb refused at the queue's bound: counted, logged per episode, and answered
    /// `coordinator_unavailable` saying nothing was written (the script refused before its
    /// first write), so the caller can retry without checking.
    pub(super) fn queue_full(&self, verb: &str) -> ClaimError {
        self.refused_writes.fetch_add(1, Ordering::Relaxed);
        let (max_rows, max_bytes) = self.bounds();
        let why = format!(
            "the postgres retry queue is full (--audit-queue-max-rows {max_rows}, --audit-queue-max-bytes \
             {max_bytes}): Postgres is down or behind; {verb} was not applied (nothing was written); retry once \
             Postgres catches up"
        );
        self.full.fail(&why);
        ClaimError::Unavailable(why)
    }

    /// Ends a full-queue episode once the queue is below half of each bound (not merely
    /// below the bound, so a queue hovering at it does not log a start and an end per entry).
    pub(super) fn check_queue_recovered(&self) {
        if !self.full.ongoing() {
            return;
        }
        let (queue, bytes) = (self.keys.queue(), self.keys.queue_bytes());
        let Ok((rows, held)) = self.redis.run_idempotent(|c| {
            redis::pipe().cmd("XLEN").arg(&queue).cmd("GET").arg(&bytes).query::<(u64, Option<u64>)>(c)
        }) else {
            return;
        };
        let (max_rows, max_bytes) = self.bounds();
        if (max_rows == 0 || rows < max_rows / 2) && (max_bytes == 0 || held.unwrap_or(0) < max_bytes / 2) {
            self.full.recover();
        }
    }

    /// Sets or clears the shared "Postgres failing" marker (best effort: Redis may be the
    /// one failing, and the marker lapses by itself).
    pub(super) fn mark_postgres_failing(&self, failing: bool) {
        let key = self.keys.pg_failing();
        let ttl = u64::try_from(FAILING_TTL.as_millis()).unwrap_or(u64::MAX);
        let _ = self.redis.run_idempotent(|c| {
            if failing {
                redis::cmd("SET").arg(&key).arg("1").arg("PX").arg(ttl).query::<Value>(c)
            } else {
                redis::cmd("DEL").arg(&key).query::<Value>(c)
            }
        });
    }

    /// Whether a drainer (any replica) saw Postgres fail within [`FAILING_TTL`].
    pub(super) fn postgres_failing(&self) -> Result<bool, ClaimError> {
        let key = self.keys.pg_failing();
        self.redis.run_idempotent(|c| redis::cmd("EXISTS").arg(&key).query::<i64>(c)).map(|n| n > 0)
    }

    /// After a Redis write: wake the background writer. Postgres is written second and off
    /// the verb's path (seed 000: Redis is authoritative; the audit plane follows), so a
    /// verb costs Redis round trips only and a slow or failing Postgres never slows it.
    pub(super) fn after_write(&self) {
        self.signal.kick();
    }

    /// Applies queue entries to Postgres in order, a batch at a time, deleting them once
    /// applied; stops at the first failure that retrying may fix. `rounds` bounds the batches.
    /// Holds the drain lock throughout, renewing its lease before each batch.
    pub(super) fn drain(&self, rounds: Option<usize>) -> Result<Drained, DrainError> {
        let queue = self.keys.queue();
        let lock_key = self.keys.drain_lock();
        if self.queue_len(&queue).map_err(DrainError::redis)? == 0 {
            return Ok(Drained::Empty);
        }
        let token = uuid::Uuid::new_v4().to_string();
        let got: Value = self
            .redis
            .run(|c| redis::cmd("SET").arg(&lock_key).arg(&token).arg("NX").arg("PX").arg(DRAIN_LOCK_MS).query(c))
            .map_err(DrainError::redis)?;
        if matches!(got, Value::Nil) {
            return Ok(Drained::Busy);
        }
        *lock(&self.drain_token) = Some(token.clone());
        let result = self.drain_holding(&queue, &lock_key, &token, rounds);
        // Taken back first: a concurrent drop then has nothing left to release twice.
        if lock(&self.drain_token).take().is_some() {
            self.release_drain_lock(&token);
        }
        result
    }

    /// [`Inner::drain`]'s rounds, under the drain lock `token`.
    pub(super) fn drain_holding(
        &self,
        queue: &str,
        lock_key: &str,
        token: &str,
        rounds: Option<usize>,
    ) -> Result<Drained, DrainError> {
        let mut done = 0;
        loop {
            if done > 0 && self.queue_len(queue).map_err(DrainError::redis)? == 0 {
                return Ok(Drained::Empty);
            }
            if rounds.is_some_and(|r| done >= r) {
                return Ok(Drained::More);
            }
            if done > 0 {
                let mut renew = self.renew.prepare_invoke();
                renew.key(lock_key).arg(token).arg(DRAIN_LOCK_MS);
                if self.redis.run_idempotent(|c| renew.invoke::<i64>(c)).map_err(DrainError::redis)? == 0 {
                    // The lease ran out under a slow batch (or the store is shutting down):
                    // whoever holds the lock now carries on.
                    return Ok(Drained::Busy);
                }
            }
            done += 1;
            self.drain_batch(queue)?;
        }
    }

    /// Releases the drain lock if `token` still holds it (best effort: the lease expires on
    /// its own).
    pub(super) fn release_drain_lock(&self, token: &str) {
        let mut unlock = self.unlock.prepare_invoke();
        unlock.key(self.keys.drain_lock()).arg(token);
        let _ = self.redis.run(|c| unlock.invoke::<i64>(c));
    }

    /// Applies up to [`DRAIN_BATCH`] entries in one Postgres transaction (one commit, one
    /// fsync, for the batch; see [`apply_batch`]), then deletes them from the queue. An entry
    /// Postgres refuses for good is rolled back alone and moved to the dead letters; any
    /// other failure rolls the batch back and leaves the queue as it was.
    pub(super) fn drain_batch(&self, queue: &str) -> Result<(), DrainError> {
        let reply = self
            .redis
            .run_idempotent(|c| {
                redis::cmd("XRANGE").arg(queue).arg("-").arg("+").arg("COUNT").arg(DRAIN_BATCH).query(c)
            })
            .map_err(DrainError::redis)?;
        let entries = stream_entries("queue", &reply).map_err(DrainError::redis)?;
        // Another replica emptied the queue between our length check and this read: nothing
        // to apply, and an XDEL without ids is a Redis error that would be logged as a
        // Postgres failure and mark the store degraded (issue 20: false alarms).
        if entries.is_empty() {
            return Ok(());
        }
        let jobs: Vec<Result<Job, String>> =
            entries.iter().map(|(_, f)| Job::decode(f).map_err(|e| e.to_string())).collect();
        let refused = self.pg.run(|conn| apply_batch(conn, &jobs)).map_err(DrainError::postgres)?;
        // Postgres took a batch: whoever reported it failing can stop (issue 28: `degraded`
        // follows Postgres, not which replica happened to drain).
        self.mark_postgres_failing(false);
        let dead = self.keys.dead();
        for why in refused.iter().flatten() {
            tracing::warn!(error = %why, queue = %dead, "postgres refused a queued write for good; set aside");
        }
        self.redis
            .run_idempotent(|c| {
                let mut p = redis::pipe();
                for ((id, fields), why) in entries.iter().zip(&refused) {
                    if let Some(why) = why {
                        // Kept for an operator; the entries behind it go on (each carries its
                        // project's whole state, so the next one repairs what this one missed).
                        let mut add = redis::cmd("XADD");
                        add.arg(&dead).arg("*").arg("queue_id").arg(id).arg("error").arg(why);
                        for (k, v) in fields {
                            add.arg(k).arg(v);
                        }
                        p.add_command(add).ignore();
                    }
                }
                // Through EVAL (not EVALSHA) inside the pipeline: a pipeline cannot reload a
                // script Redis forgot. The script is a few hundred bytes per batch.
                let mut eval = redis::cmd("EVAL");
                eval.arg(DEQUEUE_LUA).arg(2).arg(queue).arg(self.keys.queue_bytes());
                for (id, fields) in &entries {
                    eval.arg(id).arg(entry_bytes(fields));
                }
                p.add_command(eval).ignore();
                p.query::<()>(c)
            })
            .map_err(DrainError::redis)?;
        Ok(())
    }
}
