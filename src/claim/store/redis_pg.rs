//! The server store: Redis is authoritative and written first; Postgres keeps
//! `controller_status`, `projects`, operators, the append-only audit log and seed 002's work
//! claims (`channels`, `claims`, `claim_history`, `focus_leases`), written second and never
//! allowed to roll Redis back (seed 000 §Dual-plane state).
//!
//! # Redis (one namespace `ns`; every key carries the hash tag `{ns}`, so one Lua script may
//! touch all of them even on a cluster)
//!
//! * `{ns}:p:<project>:head` — hash: `version`, `epoch`, `master_session_id`, `master_identity`
//! * `{ns}:p:<project>:ctl` — hash: session id → [`Controller`] JSON
//! * `{ns}:p:<project>:inbox:<identity>` — stream; entry id `0-<cursor>`, fields `at`, `kind`,
//!   `payload` and, when addressed to one session, `session`
//! * `{ns}:inbox_trims` — hash: inbox key → the highest cursor retention removed from it (its
//!   trim mark; see `retention`)
//! * `{ns}:cursor` — the event cursor counter (one sequence for every inbox)
//! * `{ns}:pgq` — the durable queue of Postgres writes, bounded ([`QueueBounds`]);
//!   `{ns}:pgq:bytes` — the bytes it holds; `{ns}:pgq:dead` — entries Postgres refused for
//!   good; `{ns}:pgq:lock` — the drain lock; `{ns}:pgq:failing` — set while drains fail
//!   on Postgres (every replica's `degraded`)
//! * `{ns}:ready` — set once Redis holds (or has been restored to) the namespace's state
//! * `{ns}:p:<project>:channels` — hash: channel → [`Channel`](crate::claim::work::Channel) JSON
//! * `{ns}:p:<project>:claims:<channel>` — hash: task → [`ClaimRow`](crate::claim::work::ClaimRow)
//!   JSON (the row carries its own compare-and-set `version`)
//! * `{ns}:p:<project>:hist:<channel>:<task>` — list of
//!   [`ClaimStep`](crate::claim::work::ClaimStep) JSON, oldest first: the newest
//!   [`HISTORY_KEEP`] steps (Postgres keeps them all)
//! * `{ns}:p:<project>:due` — sorted set: `<channel>:<task>` (both escaped) scored by
//!   [`ClaimRow::due_at`](crate::claim::work::ClaimRow::due_at); rows that are not due leave it
//! * `{ns}:due_projects` — set of the projects whose `due` set is not empty (the sweeper's list)
//! * `{ns}:p:<project>:focus` — hash: seat → [`FocusLease`](crate::claim::work::FocusLease)
//!   JSON; `{ns}:p:<project>:focus_version` — hash: seat → how many times it was written (the
//!   Postgres write's order guard)
//!
//! Names inside keys escape `%` and `:`, so no project or identity can collide with another.
//!
//! # A commit
//!
//! One Lua script (`COMMIT_LUA`, sent by EVALSHA) checks the version, applies the change,
//! appends the events, bumps the version and enqueues the Postgres write, all atomically: a
//! conflict writes nothing. No WATCH/MULTI: the trait's default CAS loop re-decides after a
//! conflict. The queued write carries the project's whole state after the commit (head and
//! every controller row), not the delta, so replaying it is idempotent and applying an older
//! entry after a newer one changes nothing (the `projects.version` guard); its audit row has
//! an op id fixed at enqueue time (`ON CONFLICT (op_id) DO NOTHING`).
//!
//! After the script the caller drains the queue into Postgres (a batch per transaction, a
//! savepoint per entry, then XDEL). When Postgres fails, the verb still succeeds (routing
//! already changed) and a background thread retries with exponential backoff
//! ([`BACKOFF_MIN`] to [`BACKOFF_MAX`]). Several processes may drain at once: a short Redis
//! lock avoids duplicate work, and idempotence makes a lost lock harmless.
//!
//! # Restore
//!
//! [`RedisPgStore::connect`] rebuilds every project that Postgres has and Redis lacks, then
//! sets `{ns}:ready`. Commits refuse to run without that key, so a Redis that lost its data
//! while a store was running is restored before anything is decided on the empty state.
//! A restore resumes each epoch [`EPOCH_RESTORE_GAP`] above Postgres's, so an epoch Redis
//! handed out before losing its data (and Postgres never saw) is never handed out again.
//! Work claims are restored the same way: a claim row Redis lacks comes back with its history,
//! its place in the due index and a version [`EPOCH_RESTORE_GAP`] above Postgres's, for the
//! same reason (a caller holding a version Redis handed out and Postgres never saw must
//! conflict, never match a reused one); history steps keep the versions they were written at.
//! Events are not kept in Postgres: inboxes start empty after a restore, but cursors keep
//! growing from the last one Postgres saw. Run Redis with `maxmemory-policy noeviction`: an
//! evicted head is indistinguishable from a new project.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use redis::{ErrorKind, RedisError, Script, ServerErrorKind, Value};

use super::{Backlog, Commit, Store, from_json, json_err, to_i64, to_json};
use crate::claim::error::ClaimError;
use crate::claim::model::{
    AuditEntry, Change, Controller, EnrolledIdentity, Event, MasterRef, MasterSlot, Millis, NewEvent, OperatorRecord,
    Snapshot,
};
use crate::claim::request::{self, KeptAnswer, RequestRecord};
use crate::claim::retention::{Cutoffs, Pruned, Sizes, check_cursor};
use crate::lockfile::wait::jittered;

mod connect;
mod masters;
mod retention;
mod work;

pub use connect::{ConnectOptions, MIN_REPLICAS_WAIT};
pub use work::HISTORY_KEEP;

/// The namespace (Redis key prefix and Postgres schema) used in production.
pub const DEFAULT_NAMESPACE: &str = "writerctl";

/// Connect, read and write timeout for both services: a dead service answers
/// `coordinator_unavailable` fast instead of hanging a verb.
pub const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// First retry delay of the background Postgres writer; doubles up to [`BACKOFF_MAX`].
pub const BACKOFF_MIN: Duration = Duration::from_millis(50);
/// Longest retry delay of the background Postgres writer.
pub const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// A queue whose oldest entry waited longer than this makes the store `degraded` (Postgres
/// is behind even if no write failed: too slow, or a drain lease held by a dead replica).
const DEGRADED_LAG: Duration = Duration::from_secs(5);
/// How often an idle store looks for queue entries another (crashed) process left behind.
const IDLE_POLL: Duration = Duration::from_secs(5);
/// How far a restore from Postgres moves each project's epoch beyond what Postgres saw:
/// more changes of master than Redis can have committed without Postgres catching up.
pub const EPOCH_RESTORE_GAP: u64 = 1_000_000;
/// Queue entries read per drain round, applied in one Postgres transaction. 256 rather than
/// 64: a quarter of the transactions and round trips per entry (with the batched audit
/// INSERT, the writer drained 7,330 entries/s, 3x the verb rate; README, Benchmarks).
const DRAIN_BATCH: usize = 256;
/// Drain rounds `audit_log` does itself before reading Postgres (best effort).
const INLINE_ROUNDS: usize = 2;
/// How long an audit read waits for the queue entries that existed when it started.
pub(super) const AUDIT_READ_WAIT: Duration = Duration::from_secs(5);
/// The drain lock's lease, renewed before each batch. Correctness never depends on it (every
/// write is idempotent and version-guarded); it only keeps replicas from doing the same work
/// at once. Short, because a replica killed while holding it stalls every other replica's
/// Postgres writes until it runs out (issue 20: 10 s let the queue grow to ~2,000 entries);
/// a batch slower than the lease only lets another replica apply the same entries again,
/// which changes nothing.
const DRAIN_LOCK_MS: u64 = 2_000;
/// How long `flush_postgres` waits for another process's drain before giving up.
const FLUSH_DEADLINE: Duration = Duration::from_secs(30);
/// Idle Redis connections kept for reuse.
const MAX_IDLE_REDIS: usize = 8;
/// A pooled Redis connection idle longer than this is pinged before use.
const PING_AFTER_IDLE: Duration = Duration::from_secs(30);

/// `--audit-queue-max-rows` default. The queue holds what Postgres has not taken yet; a
/// Postgres outage is the only thing that fills it. At the drain rate measured in issue 20
/// (7,330 entries/s) 100,000 entries drain in well under a minute once Postgres is back,
/// and at a busy fleet's few hundred writes a second they buy several minutes of outage
/// before write verbs are refused; at the ~1.2 KB an entry measured in issue 28 (23 MB per
/// 20,000 refusals) they are ~120 MB of Redis memory, so the byte bound below binds first.
pub const DEFAULT_QUEUE_MAX_ROWS: u64 = 100_000;
/// `--audit-queue-max-bytes` default: 64 MiB of entry data (field names and values; Redis's
/// own overhead per stream entry adds a few tens of bytes on top), a small share of any
/// Redis sized for production, so an outage can never take Redis's memory from the state
/// it is authoritative for (with `noeviction`, a full Redis refuses every write).
pub const DEFAULT_QUEUE_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// How long the "Postgres is failing" marker (`{ns}:pgq:failing`) outlives the last failed
/// drain that set it: above the longest back-off (so a failing drainer refreshes it before
/// it lapses), short, because a replica that dies while Postgres fails must not leave every
/// replica degraded for long (after [`DEGRADED_LAG`] a queue Postgres does not take reads as
/// lagging anyway).
const FAILING_TTL: Duration = Duration::from_secs(10);

/// The bounds of the Postgres retry queue (issue 28 point 4). 0: no bound of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueBounds {
    /// Entries.
    pub max_rows: u64,
    /// Bytes of entry data (see [`DEFAULT_QUEUE_MAX_BYTES`]).
    pub max_bytes: u64,
}

impl Default for QueueBounds {
    fn default() -> QueueBounds {
        QueueBounds { max_rows: DEFAULT_QUEUE_MAX_ROWS, max_bytes: DEFAULT_QUEUE_MAX_BYTES }
    }
}

/// Postgres schema migrations, in order; `@.` stands for the quoted schema. Migration `i`
/// is recorded as version `i + 1` in `schema_migrations`. Append only.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE @.projects (
    project           TEXT PRIMARY KEY,
    version           BIGINT NOT NULL,
    epoch             BIGINT NOT NULL,
    master_session_id TEXT,
    master_identity   TEXT,
    last_cursor       BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE @.controller_status (
    project        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    identity       TEXT NOT NULL,
    surface        TEXT NOT NULL,
    machine_id     TEXT NOT NULL,
    token_hash     TEXT NOT NULL,
    is_master      BOOLEAN NOT NULL,
    registered_at  BIGINT NOT NULL,
    last_heartbeat BIGINT NOT NULL,
    version        BIGINT NOT NULL,
    PRIMARY KEY (project, session_id),
    UNIQUE (project, identity, surface, machine_id)
);
CREATE TABLE @.operators (
    operator_id     TEXT PRIMARY KEY,
    password_hash   TEXT NOT NULL,
    failures        INTEGER NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    last_failure_at BIGINT
);
CREATE TABLE @.audit (
    id      BIGSERIAL PRIMARY KEY,
    op_id   TEXT NOT NULL UNIQUE,
    at      BIGINT NOT NULL,
    project TEXT NOT NULL,
    verb    TEXT NOT NULL,
    actor   TEXT NOT NULL,
    target  TEXT,
    result  TEXT NOT NULL,
    epoch   BIGINT,
    detail  JSON NOT NULL
);
CREATE INDEX audit_project ON @.audit (project, id);
CREATE FUNCTION @.audit_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only';
END
$$;
CREATE TRIGGER audit_no_update BEFORE UPDATE OR DELETE ON @.audit
    FOR EACH ROW EXECUTE FUNCTION @.audit_is_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON @.audit
    FOR EACH STATEMENT EXECUTE FUNCTION @.audit_is_append_only();
"#,
    r#"
CREATE TABLE @.operator_attempts (
    operator_id     TEXT PRIMARY KEY,
    failures        INTEGER NOT NULL,
    last_failure_at BIGINT
);
"#,
    // Seed 002's work claims. `body` is the JSON Redis holds; the other columns are what a
    // query or a guard needs without parsing it.
    r#"
CREATE TABLE @.channels (
    project    TEXT NOT NULL,
    channel    TEXT NOT NULL,
    steward    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    body       JSON NOT NULL,
    PRIMARY KEY (project, channel)
);
CREATE TABLE @.claims (
    project    TEXT NOT NULL,
    channel    TEXT NOT NULL,
    task       TEXT NOT NULL,
    version    BIGINT NOT NULL,
    status     TEXT NOT NULL,
    owner      TEXT,
    due_at     BIGINT,
    updated_at BIGINT NOT NULL,
    body       JSON NOT NULL,
    PRIMARY KEY (project, channel, task)
);
CREATE TABLE @.claim_history (
    id          BIGSERIAL PRIMARY KEY,
    op_id       TEXT NOT NULL UNIQUE,
    project     TEXT NOT NULL,
    channel     TEXT NOT NULL,
    task        TEXT NOT NULL,
    version     BIGINT NOT NULL,
    at          BIGINT NOT NULL,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    last_cursor BIGINT NOT NULL,
    body        JSON NOT NULL
);
CREATE INDEX claim_history_task ON @.claim_history (project, channel, task, version, id);
CREATE TABLE @.focus_leases (
    project    TEXT NOT NULL,
    seat       TEXT NOT NULL,
    version    BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    until_at   BIGINT NOT NULL,
    ended_at   BIGINT,
    body       JSON NOT NULL,
    PRIMARY KEY (project, seat)
);
"#,
    // Issue 19: identities enrolled per project (in Redis: `identity:NAME` fields of the
    // project's head hash, committed with the rest of its state).
    r#"
CREATE TABLE @.identities (
    project       TEXT NOT NULL,
    identity      TEXT NOT NULL,
    key_hash      TEXT NOT NULL,
    enrolled_at   BIGINT NOT NULL,
    key_issued_at BIGINT NOT NULL,
    PRIMARY KEY (project, identity)
);
"#,
    // Retention (issue 15): the audit log stays append-only for everyone but the retention
    // prune, which deletes old rows inside a transaction that says so
    // (`SET LOCAL writerctl.audit_retention = 'on'`); UPDATE and TRUNCATE stay refused.
    r#"
CREATE OR REPLACE FUNCTION @.audit_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('writerctl.audit_retention', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only';
END
$$;
CREATE INDEX audit_at ON @.audit (at);
"#,
    // Answers kept under request ids for the one verb Postgres decides (`operator add`:
    // operators live here), written in its transaction. Every other verb keeps its answer in
    // Redis, with its write (`REQUEST_LUA`).
    r#"
CREATE TABLE @.requests (
    key         TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    answer      TEXT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX requests_expiry ON @.requests (expires_at);
"#,
];

/// The verb whose answer Postgres keeps (see the last migration).
const POSTGRES_DECIDES: &str = "operator.add";

/// Inbox events, shared by every script that appends them (prefixed to it by [`with_inbox`]).
///
/// An event is four ARGV entries (session flag, session, kind, payload) after their count
/// (see [`event_args`]); the inbox of the `k`-th is `KEYS[first + k - 1]` (see
/// [`event_keys`]). Ids are explicit, `0-<cursor>`, from the one `{ns}:cursor` counter, so a
/// reader's cursor orders events across inboxes. `inbox_counter` only reads and runs before a
/// script's first write (a Lua error after a write would leave it half-applied);
/// `inbox_append` writes.
const INBOX_LUA: &str = r#"
local function take_events(take)
  local events = {}
  for _ = 1, tonumber(take()) do events[#events + 1] = {take(), take(), take(), take()} end
  return events
end
-- Explicit ids must grow within each inbox: start above the counter and above every
-- inbox's last id, in case the counter was lost while a stream survived. Returns the
-- counter, or nil and the error to reply.
local function inbox_counter(cursor, first, n)
  local counter = tonumber(redis.call('GET', cursor) or '0')
  for k = first, first + n - 1 do
    local last = redis.call('XREVRANGE', KEYS[k], '+', '-', 'COUNT', 1)
    if last[1] then
      local ms, seq = string.match(last[1][1], '^(%d+)%-(%d+)$')
      if ms ~= '0' then return nil, redis.error_reply('inbox ' .. KEYS[k] .. ' holds an entry writerctl did not write') end
      seq = tonumber(seq)
      if seq > counter then counter = seq end
    end
  end
  return counter
end
-- Keeps an inbox to its newest `keep` events ('0': no bound), raising its trim mark in
-- `trims` with the removal, as the retention prune does (issue 28 point 4: enforced on
-- write, not only by the periodic prune). One append removes one event at most.
local function inbox_bound(key, trims, keep)
  keep = tonumber(keep)
  if keep <= 0 then return end
  local extra = redis.call('XLEN', key) - keep
  if extra <= 0 then return end
  local r = redis.call('XRANGE', key, '-', '+', 'COUNT', extra)
  local through = tonumber(string.match(r[#r][1], '^0%-(%d+)$'))
  redis.call('XTRIM', key, 'MINID', string.format('0-%d', through + 1))
  local mark = tonumber(redis.call('HGET', trims, key) or '0')
  if through > mark then redis.call('HSET', trims, key, string.format('%d', through)) end
end
local function inbox_append(cursor, counter, first, at, events, trims, keep)
  for k, e in ipairs(events) do
    counter = counter + 1
    local fields = {'at', at, 'kind', e[3], 'payload', e[4]}
    if e[1] == '1' then fields[#fields + 1] = 'session'; fields[#fields + 1] = e[2] end
    redis.call('XADD', KEYS[first + k - 1], string.format('0-%d', counter), unpack(fields))
    inbox_bound(KEYS[first + k - 1], trims, keep)
  end
  if #events > 0 then redis.call('SET', cursor, string.format('%d', counter)) end
end
"#;

/// A script that appends inbox events: [`INBOX_LUA`]'s functions, then its body.
fn with_inbox(body: &str) -> String {
    [INBOX_LUA, body].concat()
}

/// The answer kept under a request id (`crate::claim::request`), shared by every write
/// script (prefixed to it by [`with_request`]): the script's last KEY is the record's key,
/// its last two ARGV the record (`''` when the verb carries no id) and its lifetime in ms
/// (see [`request_args`]). `request_seen` runs before a script's first write: a live record
/// means another attempt with the same id was applied, and this one must write nothing.
const REQUEST_LUA: &str = r#"
local function request_seen()
  return ARGV[#ARGV - 1] ~= '' and redis.call('EXISTS', KEYS[#KEYS]) == 1
end
local function request_keep()
  if ARGV[#ARGV - 1] ~= '' then redis.call('SET', KEYS[#KEYS], ARGV[#ARGV - 1], 'PX', ARGV[#ARGV]) end
end
"#;

/// A write script: [`REQUEST_LUA`]'s functions, then its body.
fn with_request(body: &str) -> String {
    [REQUEST_LUA, body].concat()
}

/// The queue's bound (issue 28 point 4), shared by every script that enqueues a Postgres write
/// (prefixed to it by [`with_queue`]). Each checks [`queue_room`](QUEUE_LUA) before its first
/// write and enqueues with `queue_add`, which counts the entry's bytes in `{ns}:pgq:bytes`
/// (the drain subtracts them in [`DEQUEUE_LUA`]).
///
/// The check and the enqueue run in one script, so Redis serializes them across every
/// replica: the row bound is never exceeded, and the byte bound by at most one entry (the
/// check is "below the bound" before an entry whose size a commit only knows after its
/// writes). The largest entry is a master commit's, which carries its project's whole state
/// (~300 bytes per controller row), so the worst case is `max_bytes` plus one project's state.
/// Entries written outside these scripts (a queue kept from an older version) are not in the
/// byte count until the queue next empties, when the count is reset to 0.
const QUEUE_LUA: &str = r#"
local function queue_room(queue, bytes_key, max_rows, max_bytes)
  max_rows = tonumber(max_rows)
  max_bytes = tonumber(max_bytes)
  if max_rows > 0 and redis.call('XLEN', queue) >= max_rows then return false end
  if max_bytes > 0 and tonumber(redis.call('GET', bytes_key) or '0') >= max_bytes then return false end
  return true
end
local function queue_add(queue, bytes_key, fields)
  local id = redis.call('XADD', queue, '*', unpack(fields))
  local n = 0
  for _, f in ipairs(fields) do n = n + string.len(f) end
  redis.call('INCRBY', bytes_key, n)
  return id
end
"#;

/// A script that enqueues: [`QUEUE_LUA`]'s functions, then its body.
fn with_queue(body: &str) -> String {
    [QUEUE_LUA, body].concat()
}

/// Enqueues an audit row on its own (a failed verb's, a prune's) unless the queue is full.
/// KEYS: queue, byte count. ARGV: max rows, max bytes, then the entry's fields. 1 when
/// enqueued, 0 when dropped at the bound.
const AUDIT_LUA: &str = r#"
if not queue_room(KEYS[1], KEYS[2], ARGV[1], ARGV[2]) then return 0 end
local fields = {}
for i = 3, #ARGV do fields[#fields + 1] = ARGV[i] end
queue_add(KEYS[1], KEYS[2], fields)
return 1
"#;

/// Deletes applied entries and subtracts the bytes of those it deleted (an entry another
/// drainer deleted first is not subtracted twice). KEYS: queue, byte count. ARGV: (id, bytes)
/// pairs. An empty queue resets the count, so a count that drifted (entries written by an
/// older version) heals.
const DEQUEUE_LUA: &str = r#"
local freed = 0
for i = 1, #ARGV, 2 do
  if redis.call('XDEL', KEYS[1], ARGV[i]) == 1 then freed = freed + tonumber(ARGV[i + 1]) end
end
if redis.call('XLEN', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[2])
elseif freed > 0 then
  if redis.call('DECRBY', KEYS[2], freed) < 0 then redis.call('SET', KEYS[2], '0') end
end
return freed
"#;

/// An entry's size as `queue_add` counts it.
fn entry_bytes(fields: &HashMap<String, String>) -> u64 {
    fields.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum()
}

/// The request record's key and arguments as [`REQUEST_LUA`] reads them: (key, record
/// text or `''`, lifetime in ms). Without a record the key is a placeholder in the
/// namespace's hash slot that no script touches.
fn request_args(keys: &Keys, audit: &AuditEntry) -> Result<(String, String, i64), ClaimError> {
    match &audit.request {
        Some(r) => Ok((keys.request(&r.key), r.stored_text()?, r.expires_at.saturating_sub(audit.at).max(1))),
        None => Ok((keys.request("-"), String::new(), 0)),
    }
}

/// The compare-and-set commit (run with [`INBOX_LUA`] prefixed).
///
/// KEYS: head, ctl, cursor counter, pg queue, ready marker, then one inbox per event, then
/// `{ns}:inbox_trims`, the queue's byte count, then the request record's key. ARGV: expected version, op id,
/// project, event time, audit JSON (empty: no audit row), then the change: `n` upserts as
/// (session id, JSON) pairs; `n` deletes; slot flag, epoch, master flag, master session id,
/// master identity; `n` events as (session flag, session, kind, payload); `n` enrolled
/// identities as (name, JSON) pairs; `n` identities removed; then the inbox bound (newest
/// events kept, 0: none), the queue's bounds (max rows, max bytes), then the request record
/// and its lifetime ([`REQUEST_LUA`]).
///
/// Every check runs before the first write: a Lua error after a write would leave a
/// half-applied commit (Redis does not roll scripts back).
///
/// A full queue (issue 28 point 4) refuses a commit with an audit row (`full`, nothing
/// written: its row must reach Postgres, and the caller is told to retry). A routine
/// heartbeat (no audit row) is applied without its Postgres write (`ok` with `skipped`):
/// its state write carries only a newer `last_heartbeat`, which the project's next queued
/// state carries anyway (every entry holds the whole state) and which only a cold restore
/// would read; refusing it would let every controller go stale during a long outage.
const COMMIT_LUA: &str = r#"
if redis.call('EXISTS', KEYS[5]) == 0 then return {'lost'} end
local current = redis.call('HGET', KEYS[1], 'version') or '0'
if current ~= ARGV[1] then return {'conflict', current} end
if request_seen() then return {'replayed'} end
local room = queue_room(KEYS[4], KEYS[#KEYS - 1], ARGV[#ARGV - 3], ARGV[#ARGV - 2])
if not room and ARGV[5] ~= '' then return {'full'} end
local i = 6
local function take() local v = ARGV[i]; i = i + 1; return v end
local ups = {}
for _ = 1, tonumber(take()) do local sid = take(); ups[#ups + 1] = {sid, take()} end
local dels = {}
for _ = 1, tonumber(take()) do dels[#dels + 1] = take() end
local has_slot = take() == '1'
local epoch = take()
local has_master = take() == '1'
local msid = take()
local mident = take()
local events = take_events(take)
local enrolls = {}
for _ = 1, tonumber(take()) do local name = take(); enrolls[#enrolls + 1] = {name, take()} end
local unenrolls = {}
for _ = 1, tonumber(take()) do unenrolls[#unenrolls + 1] = take() end
local counter, err = inbox_counter(KEYS[3], 6, #events)
if not counter then return err end
-- Writes.
for _, u in ipairs(ups) do redis.call('HSET', KEYS[2], u[1], u[2]) end
for _, sid in ipairs(dels) do redis.call('HDEL', KEYS[2], sid) end
if has_slot then
  redis.call('HSET', KEYS[1], 'epoch', epoch)
  if has_master then
    redis.call('HSET', KEYS[1], 'master_session_id', msid, 'master_identity', mident)
  else
    redis.call('HDEL', KEYS[1], 'master_session_id', 'master_identity')
  end
end
for _, e in ipairs(enrolls) do redis.call('HSET', KEYS[1], 'identity:' .. e[1], e[2]) end
for _, name in ipairs(unenrolls) do redis.call('HDEL', KEYS[1], 'identity:' .. name) end
inbox_append(KEYS[3], counter, 6, ARGV[4], events, KEYS[#KEYS - 2], ARGV[#ARGV - 4])
local changed = #ups > 0 or #dels > 0 or has_slot or #events > 0 or #enrolls > 0 or #unenrolls > 0
local version = current
if changed then
  redis.call('HSETNX', KEYS[1], 'epoch', '0')
  version = string.format('%d', redis.call('HINCRBY', KEYS[1], 'version', 1))
end
-- The Postgres write: the audit row (none for a routine heartbeat) and, after a change, the
-- project's whole new state.
if not changed and ARGV[5] == '' then return {'ok', version, ''} end
if not room then return {'ok', version, '', 'skipped'} end
local job = {'op', ARGV[2], 'project', ARGV[3], 'version', version}
if ARGV[5] ~= '' then job[#job + 1] = 'audit'; job[#job + 1] = ARGV[5] end
if changed then
  local h = redis.call('HMGET', KEYS[1], 'epoch', 'master_session_id', 'master_identity')
  local rows = redis.call('HVALS', KEYS[2])
  job[#job + 1] = 'epoch'; job[#job + 1] = h[1]
  job[#job + 1] = 'cursor'; job[#job + 1] = redis.call('GET', KEYS[3]) or '0'
  job[#job + 1] = 'controllers'; job[#job + 1] = '[' .. table.concat(rows, ',') .. ']'
  local ids = {}
  local fields = redis.call('HGETALL', KEYS[1])
  for k = 1, #fields, 2 do
    if string.sub(fields[k], 1, 9) == 'identity:' then ids[#ids + 1] = fields[k + 1] end
  end
  job[#job + 1] = 'identities'; job[#job + 1] = '[' .. table.concat(ids, ',') .. ']'
  if h[2] then
    job[#job + 1] = 'master_session_id'; job[#job + 1] = h[2]
    job[#job + 1] = 'master_identity'; job[#job + 1] = h[3]
  end
end
local id = queue_add(KEYS[4], KEYS[#KEYS - 1], job)
request_keep()
return {'ok', version, id}
"#;

/// One consistent read of a project. KEYS: head, ctl, ready marker.
const SNAPSHOT_LUA: &str = r#"
return {redis.call('HGETALL', KEYS[1]), redis.call('HVALS', KEYS[2]), redis.call('EXISTS', KEYS[3])}
"#;

/// Rebuilds one project from Postgres, only if its head is still absent (another replica
/// may have restored it and moved on). KEYS: head, ctl. ARGV: version, epoch, master flag,
/// master session id, master identity, `n` enrolled identity (name, JSON) pairs, then
/// controller (session id, JSON) pairs.
const RESTORE_LUA: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'epoch', ARGV[2])
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[1], 'master_session_id', ARGV[4], 'master_identity', ARGV[5])
end
local rows = 7 + 2 * tonumber(ARGV[6])
for i = 7, rows - 1, 2 do redis.call('HSET', KEYS[1], 'identity:' .. ARGV[i], ARGV[i + 1]) end
for i = rows, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
return 1
"#;

/// Raises the event cursor counter to the last cursor Postgres saw (project heads and claim
/// history alike), never lowers it. KEYS: cursor counter. ARGV: cursor.
const RAISE_CURSOR_LUA: &str = r#"
if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
end
return 0
"#;

/// Releases the drain lock only if this holder still owns it. KEYS: lock. ARGV: token.
const UNLOCK_LUA: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"#;

/// Extends the drain lock's lease only if this holder still owns it. KEYS: lock. ARGV:
/// token, lease in ms. 1 when renewed, 0 when another holder has it (or nobody).
const RENEW_LUA: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"#;

// ---------------------------------------------------------------------------------------
// errors
// ---------------------------------------------------------------------------------------

fn redis_err(e: RedisError) -> ClaimError {
    let transient = e.is_io_error()
        || e.is_timeout()
        || e.is_connection_refusal()
        || e.is_connection_dropped()
        || matches!(
            e.kind(),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::ReadOnly
            )
        )
        // A script of someone else's running too long.
        || e.code() == Some("BUSY");
    if transient { ClaimError::Unavailable(format!("redis: {e}")) } else { ClaimError::Store(format!("redis: {e}")) }
}

/// Whether a Redis error means the connection itself is suspect (drop it, and its siblings).
/// READONLY counts: the node was demoted (a Sentinel failover), and only a new connection
/// asks the Sentinels where the master went.
fn redis_conn_broken(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_unrecoverable_error()
        || matches!(e.kind(), ErrorKind::Server(ServerErrorKind::ReadOnly))
}

fn pg_err(e: postgres::Error) -> ClaimError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        // 08 connection exception, 53 insufficient resources, 57 operator intervention
        // (shutdown, statement timeout), 58 system error, 40 rollback (serialization,
        // deadlock), 55P03 lock not available: retrying later can succeed.
        let transient = ["08", "53", "57", "58", "40"].iter().any(|c| code.starts_with(c)) || code == "55P03";
        let msg = format!("postgres: {} ({code})", db.message());
        return if transient { ClaimError::Unavailable(msg) } else { ClaimError::Store(msg) };
    }
    // Connect, I/O and closed-connection errors carry an io::Error or say so; the client's
    // own timeout has neither, only its message.
    let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
    if io || e.is_closed() || e.to_string().contains("timeout") {
        ClaimError::Unavailable(format!("postgres: {e}"))
    } else {
        ClaimError::Store(format!("postgres: {e}"))
    }
}

/// Whether a Postgres failure is the entry's own fault (bad data, a violated constraint),
/// so retrying it can never succeed and it must not block the entries behind it.
fn pg_rejects_entry(e: &postgres::Error) -> bool {
    e.code().is_some_and(|c| c.code().starts_with("22") || c.code().starts_with("23"))
}

fn to_u64(what: &str, v: i64) -> Result<u64, ClaimError> {
    u64::try_from(v).map_err(|_| ClaimError::Store(format!("stored {what} {v} is negative")))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

// ---------------------------------------------------------------------------------------
// names
// ---------------------------------------------------------------------------------------

/// Refuses a namespace that is not `[a-z0-9_]{1,40}` (it becomes a Postgres schema name and
/// a Redis hash tag) or that Postgres reserves (`pg_*`).
pub fn validate_namespace(ns: &str) -> Result<(), ClaimError> {
    let ok = !ns.is_empty()
        && ns.len() <= 40
        && ns.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !ns.starts_with("pg_");
    if ok {
        Ok(())
    } else {
        Err(ClaimError::InvalidArgument(format!(
            "namespace {ns:?} must be 1 to 40 of [a-z0-9_] and must not start with pg_"
        )))
    }
}

/// A name as a key component: `%` and `:` escaped, so components never run together.
fn esc(s: &str) -> String {
    s.replace('%', "%25").replace(':', "%3A")
}

/// The namespace's Redis keys.
#[derive(Debug, Clone)]
struct Keys {
    base: String,
}

impl Keys {
    fn new(ns: &str) -> Keys {
        Keys { base: format!("{{{ns}}}") }
    }
    fn head(&self, project: &str) -> String {
        format!("{}:p:{}:head", self.base, esc(project))
    }
    fn ctl(&self, project: &str) -> String {
        format!("{}:p:{}:ctl", self.base, esc(project))
    }
    fn inbox(&self, project: &str, identity: &str) -> String {
        format!("{}:p:{}:inbox:{}", self.base, esc(project), esc(identity))
    }
    fn cursor(&self) -> String {
        format!("{}:cursor", self.base)
    }
    fn queue(&self) -> String {
        format!("{}:pgq", self.base)
    }
    /// `{ns}:pgq:bytes`: the bytes of entry data the queue holds ([`QUEUE_LUA`]).
    fn queue_bytes(&self) -> String {
        format!("{}:pgq:bytes", self.base)
    }
    /// `{ns}:pgq:failing`: set (with [`FAILING_TTL`]) by a drainer Postgres failed, deleted
    /// by one it served: what every replica reports as `degraded`, whoever drains.
    fn pg_failing(&self) -> String {
        format!("{}:pgq:failing", self.base)
    }
    fn dead(&self) -> String {
        format!("{}:pgq:dead", self.base)
    }
    fn drain_lock(&self) -> String {
        format!("{}:pgq:lock", self.base)
    }
    fn ready(&self) -> String {
        format!("{}:ready", self.base)
    }
    fn inbox_trims(&self) -> String {
        format!("{}:inbox_trims", self.base)
    }
    /// `{ns}:req:<key>`: a kept answer (string, expires with it).
    fn request(&self, key: &str) -> String {
        format!("{}:req:{}", self.base, key)
    }
    fn channels(&self, project: &str) -> String {
        format!("{}:p:{}:channels", self.base, esc(project))
    }
    fn claims(&self, project: &str, channel: &str) -> String {
        format!("{}:p:{}:claims:{}", self.base, esc(project), esc(channel))
    }
    fn history(&self, project: &str, channel: &str, task: &str) -> String {
        format!("{}:p:{}:hist:{}:{}", self.base, esc(project), esc(channel), esc(task))
    }
    fn due(&self, project: &str) -> String {
        format!("{}:p:{}:due", self.base, esc(project))
    }
    fn due_projects(&self) -> String {
        format!("{}:due_projects", self.base)
    }
    fn focus(&self, project: &str) -> String {
        format!("{}:p:{}:focus", self.base, esc(project))
    }
    fn focus_version(&self, project: &str) -> String {
        format!("{}:p:{}:focus_version", self.base, esc(project))
    }
}

// ---------------------------------------------------------------------------------------
// Redis values
// ---------------------------------------------------------------------------------------

fn bad_reply(what: &str, v: &Value) -> ClaimError {
    ClaimError::Store(format!("redis: unexpected reply for {what}: {v:?}"))
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Okay => Some("OK".into()),
        _ => None,
    }
}

fn as_array<'a>(what: &str, v: &'a Value) -> Result<&'a [Value], ClaimError> {
    match v {
        Value::Array(items) => Ok(items),
        Value::Nil => Ok(&[]),
        other => Err(bad_reply(what, other)),
    }
}

fn as_int(what: &str, v: &Value) -> Result<i64, ClaimError> {
    match v {
        Value::Int(i) => Ok(*i),
        other => as_text(other).and_then(|s| s.parse().ok()).ok_or_else(|| bad_reply(what, other)),
    }
}

/// A flat `[field, value, ...]` reply as a map.
fn pairs(what: &str, v: &Value) -> Result<HashMap<String, String>, ClaimError> {
    let items = as_array(what, v)?;
    let mut out = HashMap::with_capacity(items.len() / 2);
    for kv in items.chunks(2) {
        match kv {
            [k, val] => {
                let k = as_text(k).ok_or_else(|| bad_reply(what, v))?;
                let val = as_text(val).ok_or_else(|| bad_reply(what, v))?;
                out.insert(k, val);
            }
            _ => return Err(bad_reply(what, v)),
        }
    }
    Ok(out)
}

/// A stream entry: its id and its fields.
type Entry = (String, HashMap<String, String>);

/// An XRANGE reply.
fn stream_entries(what: &str, v: &Value) -> Result<Vec<Entry>, ClaimError> {
    as_array(what, v)?
        .iter()
        .map(|e| match as_array(what, e)? {
            [id, fields] => Ok((as_text(id).ok_or_else(|| bad_reply(what, e))?, pairs(what, fields)?)),
            _ => Err(bad_reply(what, e)),
        })
        .collect()
}

fn parse_u64(what: &str, s: &str) -> Result<u64, ClaimError> {
    s.parse().map_err(|_| ClaimError::Store(format!("redis: {what} {s:?} is not a number")))
}

// ---------------------------------------------------------------------------------------
// Redis connections
// ---------------------------------------------------------------------------------------

/// A few sync connections reused across threads: one is taken for one command (or one
/// script) and put back, so no two threads ever share a connection.
struct RedisPool {
    source: connect::RedisSource,
    /// `--redis-min-replicas`: see [`RedisPool::run_write`].
    min_replicas: u32,
    idle: Mutex<Vec<(redis::Connection, Instant)>>,
}

impl RedisPool {
    fn open(&self) -> Result<redis::Connection, ClaimError> {
        self.source.open(IO_TIMEOUT)
    }

    /// A connection: a pooled one (pinged first if it sat idle long enough to have been
    /// dropped by a restarted server or a proxy), else a new one. True when pooled.
    fn take(&self) -> Result<(redis::Connection, bool), ClaimError> {
        loop {
            let pooled = lock(&self.idle).pop();
            let Some((mut conn, since)) = pooled else { return Ok((self.open()?, false)) };
            if since.elapsed() < PING_AFTER_IDLE || redis::cmd("PING").query::<Value>(&mut conn).is_ok() {
                return Ok((conn, true));
            }
        }
    }

    fn give_back(&self, conn: redis::Connection) {
        let mut idle = lock(&self.idle);
        if idle.len() < MAX_IDLE_REDIS {
            idle.push((conn, Instant::now()));
        }
    }

    /// Runs `f` on one connection. A broken connection is dropped together with every idle
    /// one (a server restart breaks them all); the flag says whether it was a pooled one
    /// that broke, which a new connection may well replace.
    fn attempt<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> (Result<T, ClaimError>, bool) {
        let (mut conn, pooled) = match self.take() {
            Ok(c) => c,
            Err(e) => return (Err(e), false),
        };
        match f(&mut conn) {
            Ok(v) => {
                self.give_back(conn);
                (Ok(v), false)
            }
            Err(e) => {
                let broken = redis_conn_broken(&e);
                if broken {
                    lock(&self.idle).clear();
                } else {
                    self.give_back(conn);
                }
                (Err(redis_err(e)), broken && pooled)
            }
        }
    }

    /// Runs `f` once. Never retried: a script whose reply was lost may have run, and only
    /// the caller knows whether running it again is safe.
    fn run<T>(&self, f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>) -> Result<T, ClaimError> {
        self.attempt(f).0
    }

    /// [`RedisPool::run`] for a verb's write: with `--redis-min-replicas N`, then `WAIT N` on
    /// the same connection (WAIT counts the replicas that hold this connection's writes).
    /// Fewer than N within [`MIN_REPLICAS_WAIT`] fails the verb closed: the write applied on
    /// the master, but a failover now could lose it, and the caller must not take it as
    /// acknowledged.
    fn run_write<T>(&self, f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>) -> Result<T, ClaimError> {
        let n = self.min_replicas;
        if n == 0 {
            return self.run(f);
        }
        let wait_ms = u64::try_from(MIN_REPLICAS_WAIT.as_millis()).unwrap_or(u64::MAX);
        let (value, acked) = self.run(|c| {
            let value = f(c)?;
            let acked: i64 = redis::cmd("WAIT").arg(n).arg(wait_ms).query(c)?;
            Ok((value, acked))
        })?;
        if acked < i64::from(n) {
            return Err(ClaimError::Unavailable(format!(
                "redis: the write reached {acked} of the {n} replicas --redis-min-replicas asks for within \
                 {wait_ms} ms; it may have applied (check before retrying), but a failover could lose it"
            )));
        }
        Ok(value)
    }

    /// [`RedisPool::run`] for reads and other idempotent commands: when a pooled connection
    /// turns out broken, tries once more on a new one.
    fn run_idempotent<T>(
        &self,
        mut f: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, ClaimError> {
        match self.attempt(&mut f) {
            (Err(_), true) => self.run(f),
            (result, _) => result,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Postgres connection
// ---------------------------------------------------------------------------------------

/// One Postgres connection, opened (and the schema migrated) on first use and again after
/// any connection failure.
struct Pg {
    target: connect::PgTarget,
    ns: String,
    /// `"ns".`, substituted for `@.` in every statement.
    prefix: String,
    conn: Mutex<Option<PgConn>>,
}

/// A live connection and the statements prepared on it.
struct PgConn {
    client: postgres::Client,
    st: Statements,
}

/// The queue's statements, prepared once per connection.
struct Statements {
    upsert_project: postgres::Statement,
    delete_rows: postgres::Statement,
    upsert_rows: postgres::Statement,
    delete_identities: postgres::Statement,
    upsert_identities: postgres::Statement,
    insert_audit: postgres::Statement,
    insert_audits: postgres::Statement,
    work: work::Statements,
}

impl Pg {
    fn sql(&self, text: &str) -> String {
        text.replace("@.", &self.prefix)
    }

    fn open(&self) -> Result<PgConn, ClaimError> {
        let mut client = self.target.connect()?;
        // Server-side bounds: a stuck lock or statement gives up instead of holding a verb.
        client.batch_execute("SET statement_timeout = 5000; SET lock_timeout = 5000").map_err(pg_err)?;
        self.migrate(&mut client)?;
        let mut prepare = |sql: &str| client.prepare(&self.sql(sql)).map_err(pg_err);
        let st = Statements {
            // The project's head, only if newer than what Postgres holds, in one statement:
            // the conflicting row is locked even when the version guard skips it, so
            // concurrent drainers of one project serialize (and a new project's first two
            // drainers never fail on the primary key). Touches a row iff it wrote.
            upsert_project: prepare(
                "INSERT INTO @.projects AS p (project, version, epoch, master_session_id, master_identity, last_cursor)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (project) DO UPDATE SET
                   version = excluded.version, epoch = excluded.epoch,
                   master_session_id = excluded.master_session_id, master_identity = excluded.master_identity,
                   last_cursor = GREATEST(p.last_cursor, excluded.last_cursor)
                 WHERE p.version < excluded.version",
            )?,
            delete_rows: prepare("DELETE FROM @.controller_status WHERE project = $1 AND NOT (session_id = ANY($2))")?,
            upsert_rows: prepare(
                "INSERT INTO @.controller_status AS cs (project, session_id, identity, surface, machine_id, token_hash,
                                                      is_master, registered_at, last_heartbeat, version)
                 SELECT $1, r.*, $10 FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                                                $7::boolean[], $8::bigint[], $9::bigint[]) AS r
                 ON CONFLICT (project, session_id) DO UPDATE SET
                   identity = excluded.identity, surface = excluded.surface, machine_id = excluded.machine_id,
                   token_hash = excluded.token_hash, is_master = excluded.is_master,
                   registered_at = excluded.registered_at, last_heartbeat = excluded.last_heartbeat,
                   version = excluded.version
                 WHERE cs.version <= excluded.version",
            )?,
            delete_identities: prepare("DELETE FROM @.identities WHERE project = $1 AND NOT (identity = ANY($2))")?,
            upsert_identities: prepare(
                "INSERT INTO @.identities (project, identity, key_hash, enrolled_at, key_issued_at)
                 SELECT $1, r.* FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS r
                 ON CONFLICT (project, identity) DO UPDATE SET
                   key_hash = excluded.key_hash, enrolled_at = excluded.enrolled_at,
                   key_issued_at = excluded.key_issued_at",
            )?,
            insert_audit: prepare(
                "INSERT INTO @.audit (op_id, at, project, verb, actor, target, result, epoch, detail)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::json)
                 ON CONFLICT (op_id) DO NOTHING",
            )?,
            // A drain's audit rows in one statement, in queue order (the log reads by id).
            // Issue 20: one INSERT per row held the writer to 1,300-1,700 entries/s.
            insert_audits: prepare(
                "INSERT INTO @.audit (op_id, at, project, verb, actor, target, result, epoch, detail)
                 SELECT o, a, p, v, ac, t, r, e, d::json
                 FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[],
                             $7::text[], $8::bigint[], $9::text[])
                      WITH ORDINALITY AS u(o, a, p, v, ac, t, r, e, d, n)
                 ORDER BY n
                 ON CONFLICT (op_id) DO NOTHING",
            )?,
            work: work::Statements::prepare(&mut prepare)?,
        };
        Ok(PgConn { client, st })
    }

    /// Creates the schema if missing and applies the migrations it lacks, serialized across
    /// processes by an advisory lock (two `CREATE SCHEMA IF NOT EXISTS` can still collide).
    fn migrate(&self, client: &mut postgres::Client) -> Result<(), ClaimError> {
        let mut tx = client.transaction().map_err(pg_err)?;
        tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&format!("writerctl:{}", self.ns)])
            .map_err(pg_err)?;
        // Looked up first: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on the
        // database even when the schema exists, which a least-privilege role may lack.
        let exists =
            tx.query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&self.ns]).map_err(pg_err)?.is_some();
        let schema = self.prefix.trim_end_matches('.');
        if !exists {
            tx.batch_execute(&format!("CREATE SCHEMA {schema}")).map_err(pg_err)?;
        }
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
                 version    INTEGER PRIMARY KEY,
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
             )"
        ))
        .map_err(pg_err)?;
        let current: Option<i32> = tx
            .query_one(&self.sql("SELECT max(version) FROM @.schema_migrations"), &[])
            .and_then(|r| r.try_get(0))
            .map_err(pg_err)?;
        let current = usize::try_from(current.unwrap_or(0)).unwrap_or(0);
        if current > MIGRATIONS.len() {
            return Err(ClaimError::Store(format!(
                "postgres schema {} is at version {current}; this writerctl knows version {} (upgrade writerctl)",
                self.ns,
                MIGRATIONS.len()
            )));
        }
        for (i, m) in MIGRATIONS.iter().enumerate().skip(current) {
            tx.batch_execute(&self.sql(m)).map_err(pg_err)?;
            let v = i32::try_from(i + 1).unwrap_or(i32::MAX);
            tx.execute(&self.sql("INSERT INTO @.schema_migrations (version) VALUES ($1)"), &[&v]).map_err(pg_err)?;
        }
        tx.commit().map_err(pg_err)
    }

    /// Runs `f` on the connection (opening it first if needed); a connection failure drops
    /// it so the next call reconnects.
    fn run<T>(&self, f: impl FnOnce(&mut PgConn) -> Result<T, ClaimError>) -> Result<T, ClaimError> {
        let mut guard = lock(&self.conn);
        if guard.as_ref().is_none_or(|c| c.client.is_closed()) {
            *guard = None;
            *guard = Some(self.open()?);
        }
        let Some(conn) = guard.as_mut() else {
            return Err(ClaimError::Store("postgres connection vanished".into()));
        };
        let result = f(conn);
        if matches!(result, Err(ClaimError::Unavailable(_))) {
            *guard = None;
        }
        result
    }
}

// ---------------------------------------------------------------------------------------
// the queued Postgres write
// ---------------------------------------------------------------------------------------

/// A project's state after a commit, as the queue carries it.
#[derive(Debug, Clone)]
struct ProjectState {
    version: u64,
    epoch: u64,
    master: Option<MasterRef>,
    cursor: u64,
    controllers: Vec<Controller>,
    /// None for an entry queued before identities were carried (left as Postgres has them).
    identities: Option<Vec<EnrolledIdentity>>,
}

/// One queue entry: an audit row (all but routine heartbeats) and a project state (after a
/// change) or a work claim write (a claim row and its history step, a channel, a focus lease).
#[derive(Debug, Clone)]
struct Job {
    op_id: String,
    project: String,
    audit: Option<AuditEntry>,
    state: Option<ProjectState>,
    work: Option<work::Payload>,
}

impl Job {
    fn decode(f: &HashMap<String, String>) -> Result<Job, ClaimError> {
        let get = |k: &str| f.get(k).ok_or_else(|| ClaimError::Store(format!("queue entry without {k}")));
        let audit: Option<AuditEntry> = f.get("audit").map(|a| from_json(a)).transpose()?;
        let state = match f.get("controllers") {
            None => None,
            Some(rows) => Some(ProjectState {
                version: parse_u64("version", get("version")?)?,
                epoch: parse_u64("epoch", get("epoch")?)?,
                master: match (f.get("master_session_id"), f.get("master_identity")) {
                    (Some(s), Some(i)) => Some(MasterRef { identity: i.clone(), session_id: s.clone() }),
                    _ => None,
                },
                cursor: parse_u64("cursor", get("cursor")?)?,
                controllers: from_json(rows)?,
                identities: f.get("identities").map(|t| from_json(t)).transpose()?,
            }),
        };
        let work = work::Payload::decode(f)?;
        Ok(Job { op_id: get("op")?.clone(), project: get("project")?.clone(), audit, state, work })
    }
}

fn insert_audit(
    tx: &mut postgres::Transaction<'_>,
    st: &Statements,
    op_id: &str,
    a: &AuditEntry,
) -> Result<(), postgres::Error> {
    let epoch = a.epoch.map(to_i64);
    tx.execute(
        &st.insert_audit,
        &[&op_id, &a.at, &a.project, &a.verb, &a.actor, &a.target, &a.result, &epoch, &a.detail.to_string()],
    )?;
    Ok(())
}

/// Writes a project's state inside the caller's transaction if it is newer than what
/// Postgres holds (the row lock serializes concurrent drainers per project). Writing a
/// state twice, or after a newer one, changes nothing.
fn apply_state(
    tx: &mut postgres::Transaction<'_>,
    st: &Statements,
    project: &str,
    s: &ProjectState,
) -> Result<(), postgres::Error> {
    let version = to_i64(s.version);
    let written = tx.execute(
        &st.upsert_project,
        &[
            &project,
            &version,
            &to_i64(s.epoch),
            &s.master.as_ref().map(|m| &m.session_id),
            &s.master.as_ref().map(|m| &m.identity),
            &to_i64(s.cursor),
        ],
    )?;
    if written == 0 {
        // Postgres already holds this state or a newer one.
        return Ok(());
    }
    // Rows gone from Redis go first, so a re-registration under the same natural key (a
    // new session id) never meets its predecessor's UNIQUE row.
    let sids: Vec<&str> = s.controllers.iter().map(|c| c.session_id.as_str()).collect();
    tx.execute(&st.delete_rows, &[&project, &sids])?;
    let col = |f: fn(&Controller) -> &str| s.controllers.iter().map(f).collect::<Vec<&str>>();
    tx.execute(
        &st.upsert_rows,
        &[
            &project,
            &sids,
            &col(|c| &c.identity),
            &col(|c| &c.surface),
            &col(|c| &c.machine_id),
            &col(|c| &c.token_hash),
            &s.controllers.iter().map(|c| c.is_master).collect::<Vec<bool>>(),
            &s.controllers.iter().map(|c| c.registered_at).collect::<Vec<i64>>(),
            &s.controllers.iter().map(|c| c.last_heartbeat).collect::<Vec<i64>>(),
            &version,
        ],
    )?;
    if let Some(ids) = &s.identities {
        let names: Vec<&str> = ids.iter().map(|i| i.identity.as_str()).collect();
        tx.execute(&st.delete_identities, &[&project, &names])?;
        tx.execute(
            &st.upsert_identities,
            &[
                &project,
                &names,
                &ids.iter().map(|i| i.key_hash.as_str()).collect::<Vec<&str>>(),
                &ids.iter().map(|i| i.enrolled_at).collect::<Vec<i64>>(),
                &ids.iter().map(|i| i.key_issued_at).collect::<Vec<i64>>(),
            ],
        )?;
    }
    Ok(())
}

/// Keeps `operator add`'s answer in its Postgres transaction (see [`POSTGRES_DECIDES`]);
/// a live record under the key fails the transaction, as in the other stores.
fn keep_request_pg(
    tx: &mut postgres::Transaction<'_>,
    pg: &Pg,
    r: &RequestRecord,
    now: Millis,
) -> Result<(), ClaimError> {
    tx.execute(&pg.sql("DELETE FROM @.requests WHERE expires_at <= $1"), &[&now]).map_err(pg_err)?;
    let inserted = tx
        .execute(
            &pg.sql(
                "INSERT INTO @.requests (key, fingerprint, answer, expires_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (key) DO NOTHING",
            ),
            &[&r.key, &r.fingerprint, &r.answer, &r.expires_at],
        )
        .map_err(pg_err)?;
    if inserted == 0 {
        return Err(request::in_flight());
    }
    Ok(())
}

/// Runs `f` inside a savepoint: Ok(None) when it succeeded, Ok(Some(why)) when Postgres
/// refused the entry for good (rolled back alone), Err for anything retrying may fix.
fn in_savepoint(
    tx: &mut postgres::Transaction<'_>,
    f: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<(), postgres::Error>,
) -> Result<Option<String>, ClaimError> {
    let mut sp = tx.savepoint("entry").map_err(pg_err)?;
    match f(&mut sp) {
        Ok(()) => sp.commit().map(|_| None).map_err(pg_err),
        Err(e) if pg_rejects_entry(&e) => {
            sp.rollback().map_err(pg_err)?;
            Ok(Some(pg_err(e).to_string()))
        }
        Err(e) => Err(pg_err(e)),
    }
}

/// Inserts audit rows in one statement (see `insert_audits`).
fn insert_audits(
    tx: &mut postgres::Transaction<'_>,
    st: &Statements,
    rows: &[(&str, &AuditEntry)],
) -> Result<(), postgres::Error> {
    let col = |f: fn(&AuditEntry) -> &str| rows.iter().map(|(_, a)| f(a)).collect::<Vec<&str>>();
    let ops: Vec<&str> = rows.iter().map(|(op, _)| *op).collect();
    let at: Vec<i64> = rows.iter().map(|(_, a)| a.at).collect();
    let target: Vec<Option<&str>> = rows.iter().map(|(_, a)| a.target.as_deref()).collect();
    let epoch: Vec<Option<i64>> = rows.iter().map(|(_, a)| a.epoch.map(to_i64)).collect();
    let detail: Vec<String> = rows.iter().map(|(_, a)| a.detail.to_string()).collect();
    tx.execute(
        &st.insert_audits,
        &[
            &ops,
            &at,
            &col(|a| &a.project),
            &col(|a| &a.verb),
            &col(|a| &a.actor),
            &target,
            &col(|a| &a.result),
            &epoch,
            &detail,
        ],
    )?;
    Ok(())
}

/// Runs `all` (a whole batch's writes of one kind) in one savepoint. When Postgres refuses
/// it for some entry's own fault, rolls it back and runs `each` instead, which finds that
/// entry with a savepoint per entry. The common case costs two statements for the batch
/// instead of two per entry.
fn all_or_each(
    tx: &mut postgres::Transaction<'_>,
    all: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<(), postgres::Error>,
    each: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<(), ClaimError>,
) -> Result<(), ClaimError> {
    let mut sp = tx.savepoint("batch").map_err(pg_err)?;
    match all(&mut sp) {
        Ok(()) => sp.commit().map_err(pg_err),
        Err(e) if pg_rejects_entry(&e) => {
            sp.rollback().map_err(pg_err)?;
            each(tx)
        }
        Err(e) => Err(pg_err(e)),
    }
}

/// Applies a batch of queue entries in one transaction: audit rows in queue order, then work
/// claim writes in queue order (a claim's history keeps the order Redis committed it in;
/// each write is version-guarded or insert-once, so a replay changes nothing), then each
/// project's state once, from the newest entry Postgres accepts (every entry carries the
/// whole state, so older ones are superseded; if the newest is refused, the next newest is
/// tried). Returns, per entry, why Postgres refused it, if it did.
fn apply_batch(conn: &mut PgConn, jobs: &[Result<Job, String>]) -> Result<Vec<Option<String>>, ClaimError> {
    let st = &conn.st;
    let mut tx = conn.client.transaction().map_err(pg_err)?;
    let mut refused: Vec<Option<String>> = jobs.iter().map(|j| j.as_ref().err().cloned()).collect();
    let audits: Vec<(&str, &AuditEntry)> = jobs
        .iter()
        .filter_map(|j| j.as_ref().ok())
        .filter_map(|j| j.audit.as_ref().map(|a| (j.op_id.as_str(), a)))
        .collect();
    all_or_each(
        &mut tx,
        |t| insert_audits(t, st, &audits),
        |t| {
            for (i, job) in jobs.iter().enumerate() {
                if let Ok(Job { op_id, audit: Some(audit), .. }) = job {
                    refused[i] = in_savepoint(t, |t| insert_audit(t, st, op_id, audit))?;
                }
            }
            Ok(())
        },
    )?;
    let works: Vec<(usize, &str, &work::Payload)> = jobs
        .iter()
        .enumerate()
        .filter(|(i, _)| refused[*i].is_none())
        .filter_map(|(i, j)| j.as_ref().ok().and_then(|j| j.work.as_ref().map(|w| (i, j.op_id.as_str(), w))))
        .collect();
    all_or_each(
        &mut tx,
        |t| works.iter().try_for_each(|(_, op_id, w)| w.apply(t, &st.work, op_id)),
        |t| {
            for (i, op_id, w) in &works {
                refused[*i] = in_savepoint(t, |t| w.apply(t, &st.work, op_id))?;
            }
            Ok(())
        },
    )?;
    let mut states: Vec<(usize, &str, &ProjectState)> = jobs
        .iter()
        .enumerate()
        .filter(|(i, _)| refused[*i].is_none())
        .filter_map(|(i, j)| j.as_ref().ok().and_then(|j| j.state.as_ref().map(|s| (i, j.project.as_str(), s))))
        .collect();
    states.sort_by(|a, b| a.1.cmp(b.1).then(b.2.version.cmp(&a.2.version)));
    let mut newest = states.clone();
    newest.dedup_by(|later, first| later.1 == first.1);
    all_or_each(
        &mut tx,
        |t| newest.iter().try_for_each(|(_, project, state)| apply_state(t, st, project, state)),
        |t| {
            let mut written: Option<&str> = None;
            for (i, project, state) in states {
                if written == Some(project) {
                    continue;
                }
                refused[i] = in_savepoint(t, |t| apply_state(t, st, project, state))?;
                if refused[i].is_none() {
                    written = Some(project);
                }
            }
            Ok(())
        },
    )?;
    tx.commit().map_err(pg_err)?;
    Ok(refused)
}

// ---------------------------------------------------------------------------------------
// the background writer
// ---------------------------------------------------------------------------------------

#[derive(Default)]
struct Signal {
    state: Mutex<(bool, bool)>, // (kicked, stop)
    cv: Condvar,
}

impl Signal {
    fn kick(&self) {
        lock(&self.state).0 = true;
        self.cv.notify_all();
    }

    fn stop(&self) {
        lock(&self.state).1 = true;
        self.cv.notify_all();
    }

    /// Waits up to `d`; a kick ends the wait early only when `kickable`. An idle writer
    /// wakes for new work at once; a writer backing off after a failure waits its back-off
    /// out whatever the verbs do (issue 20: every Redis write woke it, so a Postgres outage
    /// meant 100 retries, log lines and connections a second per replica). False once
    /// stopped; a stop always ends the wait.
    fn wait(&self, d: Duration, kickable: bool) -> bool {
        let deadline = Instant::now() + d;
        let mut g = lock(&self.state);
        while !(kickable && g.0) && !g.1 {
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
fn next_backoff(prev: Option<Duration>) -> Duration {
    prev.map_or(BACKOFF_MIN, |d| (d * 2).min(BACKOFF_MAX))
}

/// How often a failure streak that goes on is logged again (with its count so far).
const STREAK_REMINDER: Duration = Duration::from_secs(60);

/// A run of failed drains on one service. Logged when it starts, every [`STREAK_REMINDER`]
/// while it lasts and once when a drain succeeds again, each time with the count and the
/// service that failed (Redis or Postgres: issue 28's drill found a Redis outage logged as
/// a Postgres one): an outage costs a few log lines, not one per attempt.
struct Streak {
    plane: Plane,
    failures: u64,
    since: Instant,
    logged: Instant,
}

impl Streak {
    /// Counts one failure; logs it if it starts a streak (a failure on the other service
    /// ends the streak going on and starts one) or a reminder is due.
    fn fail(streak: &mut Option<Streak>, e: &DrainError, queued: impl FnOnce() -> Option<u64>) {
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
    fn end(streak: &mut Option<Streak>) {
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
fn background_writer(inner: Weak<Inner>, signal: Arc<Signal>) {
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
const WRITER_NICE: i32 = 5;

/// Lowers the calling thread's priority by [`WRITER_NICE`] (best effort: a platform or a
/// sandbox that refuses only costs the request threads some CPU).
fn lower_priority() {
    let tid = rustix::thread::gettid();
    let current = rustix::process::getpriority_process(Some(tid)).unwrap_or(0);
    if let Err(e) = rustix::process::setpriority_process(Some(tid), (current + WRITER_NICE).min(19)) {
        tracing::debug!(error = %e, "cannot lower the postgres writer's priority");
    }
}

// ---------------------------------------------------------------------------------------
// the store
// ---------------------------------------------------------------------------------------

/// Which service a drain failed on: the log and the `degraded` flag must name the right
/// one (issue 28's drill: a Redis outage was logged and flagged as a Postgres failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plane {
    Redis,
    Postgres,
}

impl Plane {
    fn name(self) -> &'static str {
        match self {
            Plane::Redis => "redis",
            Plane::Postgres => "postgres",
        }
    }
}

/// A failed drain and the service that failed it.
#[derive(Debug)]
struct DrainError {
    plane: Plane,
    /// Boxed: a drain's `Result` stays small (clippy's `result_large_err`).
    error: Box<ClaimError>,
}

impl DrainError {
    fn redis(error: ClaimError) -> DrainError {
        DrainError { plane: Plane::Redis, error: Box::new(error) }
    }
    fn postgres(error: ClaimError) -> DrainError {
        DrainError { plane: Plane::Postgres, error: Box::new(error) }
    }
}

impl From<DrainError> for ClaimError {
    fn from(e: DrainError) -> ClaimError {
        *e.error
    }
}

/// What a drain ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Drained {
    /// The queue is empty.
    Empty,
    /// Another drainer holds the lock: entries may remain.
    Busy,
    /// The round limit was reached: entries remain, and the lock was free.
    More,
}

struct Inner {
    ns: String,
    keys: Keys,
    redis: RedisPool,
    pg: Pg,
    commit: Script,
    snapshot: Script,
    restore: Script,
    raise_cursor: Script,
    unlock: Script,
    renew: Script,
    /// The drain lock's token while this store holds it: released on drop, so a replica
    /// that shuts down mid-drain does not make the others wait out the lease.
    drain_token: Mutex<Option<String>>,
    work: work::Scripts,
    /// Set while Postgres writes are failing: verbs then leave draining to the background
    /// thread instead of each waiting out a connection timeout.
    degraded: AtomicBool,
    signal: Arc<Signal>,
    audit: Script,
    /// [`QueueBounds`], settable after connect ([`RedisPgStore::set_queue_bounds`]).
    max_rows: AtomicU64,
    max_bytes: AtomicU64,
    /// What the bound turned away since this process started (for `/metrics`).
    dropped_refusals: AtomicU64,
    dropped_heartbeats: AtomicU64,
    refused_writes: AtomicU64,
    /// One log line per episode of a full queue, not one per drop.
    full: super::Episode,
    /// The newest events each inbox keeps, enforced on every append (0: none); see
    /// [`RedisPgStore::set_inbox_max_events`].
    inbox_keep: AtomicU64,
}

/// Redis first, Postgres second (see the module documentation).
pub struct RedisPgStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RedisPgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisPgStore").field("namespace", &self.inner.ns).finish_non_exhaustive()
    }
}

impl Drop for RedisPgStore {
    fn drop(&mut self) {
        self.inner.signal.stop();
        // A drain in progress on the writer thread finds the lock gone at its next renewal
        // and stops; its batch, if it commits, is idempotent.
        let held = lock(&self.inner.drain_token).take();
        if let Some(token) = held {
            self.inner.release_drain_lock(&token);
        }
    }
}

impl RedisPgStore {
    /// Connects to both services, migrates the Postgres schema `namespace`, restores from
    /// Postgres every project Redis lacks, and starts the background Postgres writer.
    ///
    /// Redis must answer. Postgres may be down if Redis still holds the namespace's state:
    /// the store then starts degraded and queues its Postgres writes.
    pub fn connect(redis_url: &str, postgres_url: &str, namespace: &str) -> Result<RedisPgStore, ClaimError> {
        Self::connect_with(redis_url, postgres_url, namespace, &ConnectOptions::default())
    }

    /// [`RedisPgStore::connect`] with TLS roots and replica acknowledgements (see
    /// [`ConnectOptions`]; the address forms are in the `connect` module's documentation:
    /// `rediss://`, `redis+sentinel://`, Postgres `sslmode`, several Postgres hosts).
    pub fn connect_with(
        redis_url: &str,
        postgres_url: &str,
        namespace: &str,
        opts: &ConnectOptions,
    ) -> Result<RedisPgStore, ClaimError> {
        validate_namespace(namespace)?;
        let source = connect::redis_source(redis_url, opts)?;
        let mut target = connect::postgres_target(postgres_url)?;
        let config = &mut target.config;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(IO_TIMEOUT);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(IO_TIMEOUT);
        }
        config.keepalives_idle(Duration::from_secs(10));
        let signal = Arc::new(Signal::default());
        let inner = Arc::new(Inner {
            ns: namespace.to_string(),
            keys: Keys::new(namespace),
            redis: RedisPool { source, min_replicas: opts.redis_min_replicas, idle: Mutex::new(Vec::new()) },
            pg: Pg { target, ns: namespace.to_string(), prefix: format!("\"{namespace}\"."), conn: Mutex::new(None) },
            commit: Script::new(&with_request(&with_queue(&with_inbox(COMMIT_LUA)))),
            snapshot: Script::new(SNAPSHOT_LUA),
            restore: Script::new(RESTORE_LUA),
            raise_cursor: Script::new(RAISE_CURSOR_LUA),
            unlock: Script::new(UNLOCK_LUA),
            renew: Script::new(RENEW_LUA),
            drain_token: Mutex::new(None),
            work: work::Scripts::new(),
            degraded: AtomicBool::new(false),
            signal: signal.clone(),
            audit: Script::new(&with_queue(AUDIT_LUA)),
            max_rows: AtomicU64::new(DEFAULT_QUEUE_MAX_ROWS),
            max_bytes: AtomicU64::new(DEFAULT_QUEUE_MAX_BYTES),
            dropped_refusals: AtomicU64::new(0),
            dropped_heartbeats: AtomicU64::new(0),
            refused_writes: AtomicU64::new(0),
            inbox_keep: AtomicU64::new(0),
            full: super::Episode::new(
                "postgres retry queue full: failed verbs' audit rows are dropped, write verbs refused",
            ),
        });
        inner.redis.run_idempotent(|c| redis::cmd("PING").query::<Value>(c))?;
        match inner.restore_from_postgres() {
            Ok(_) => {}
            Err(ClaimError::Unavailable(_)) if inner.ready()? => {
                inner.degraded.store(true, Ordering::SeqCst);
                inner.mark_postgres_failing(true);
            }
            Err(e) => return Err(e),
        }
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name(format!("writerctl-pgq-{namespace}"))
            .spawn(move || background_writer(weak, signal))
            .map_err(|e| ClaimError::Store(format!("cannot start the postgres writer thread: {e}")))?;
        if inner.degraded.load(Ordering::SeqCst) {
            inner.signal.kick();
        }
        Ok(RedisPgStore { inner })
    }

    /// Bounds the Postgres retry queue (`serve --audit-queue-max-rows|bytes`); until called,
    /// [`QueueBounds::default`]. Each replica enforces its own bounds on its own writes.
    pub fn set_queue_bounds(&self, bounds: QueueBounds) {
        self.inner.max_rows.store(bounds.max_rows, Ordering::SeqCst);
        self.inner.max_bytes.store(bounds.max_bytes, Ordering::SeqCst);
    }

    /// Bounds each inbox to its newest `n` events on every append (`serve
    /// --inbox-max-events`; 0: none), raising its trim mark as the retention prune does;
    /// until called, no bound (the library's callers choose; `serve` passes its flag, whose
    /// default is [`DEFAULT_INBOX_MAX_EVENTS`](crate::claim::retention::DEFAULT_INBOX_MAX_EVENTS)).
    pub fn set_inbox_max_events(&self, n: u64) {
        self.inner.inbox_keep.store(n, Ordering::Relaxed);
    }

    /// The namespace (Redis key prefix and Postgres schema).
    pub fn namespace(&self) -> &str {
        &self.inner.ns
    }

    /// Postgres writes waiting in the queue (for `/metrics`).
    pub fn pending_postgres_writes(&self) -> Result<u64, ClaimError> {
        self.inner.queue_len(&self.inner.keys.queue())
    }

    /// Queue entries Postgres refused for good (bad data, a violated constraint), kept in
    /// `{ns}:pgq:dead` for an operator (for `/metrics`).
    pub fn dead_postgres_writes(&self) -> Result<u64, ClaimError> {
        self.inner.queue_len(&self.inner.keys.dead())
    }

    /// Applies every queued Postgres write now (tests, graceful shutdown). Waits for another
    /// process's drain and retries a lost connection; fails with `Unavailable` once Postgres
    /// stayed down for 30 s.
    pub fn flush_postgres(&self) -> Result<(), ClaimError> {
        let deadline = Instant::now() + FLUSH_DEADLINE;
        loop {
            let drained = match self.inner.drain(None).map_err(ClaimError::from) {
                // The pooled connection may have died while idle (an outage that ended):
                // the failed attempt dropped it, and the next one reconnects.
                Err(ClaimError::Unavailable(_)) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                other => other?,
            };
            match drained {
                Drained::Empty => {
                    self.inner.degraded.store(false, Ordering::SeqCst);
                    return Ok(());
                }
                Drained::Busy | Drained::More if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Drained::Busy | Drained::More => {
                    return Err(ClaimError::Unavailable(
                        "another process kept the postgres queue locked; retry later".into(),
                    ));
                }
            }
        }
    }

    /// Rebuilds in Redis every project that Postgres has and Redis lacks (epoch and version
    /// preserved), and every channel, claim row (with its history and its place in the due
    /// index) and focus lease Redis lacks, then marks the namespace ready. Returns how many
    /// projects it rebuilt.
    pub fn restore_from_postgres(&self) -> Result<usize, ClaimError> {
        self.inner.restore_from_postgres()
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
    fn readiness(&self) -> Result<Backlog, ClaimError> {
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
            _ => return Err(ClaimError::Store(format!("redis: unexpected TIME reply {time:?}"))),
        };
        let oldest_age_seconds = stream_entries("queue", &oldest)?
            .first()
            .and_then(|(id, _)| id.split('-').next().and_then(|ms| ms.parse::<u64>().ok()))
            .map(|at| now_ms.saturating_sub(at) as f64 / 1000.0);
        let lagging = oldest_age_seconds.is_some_and(|a| a > DEGRADED_LAG.as_secs_f64());
        Ok(Backlog { degraded: failing > 0 || lagging, queue_depth: depth, oldest_age_seconds })
    }

    fn queue_len(&self, key: &str) -> Result<u64, ClaimError> {
        let n = self.redis.run_idempotent(|c| redis::cmd("XLEN").arg(key).query::<i64>(c))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn ready(&self) -> Result<bool, ClaimError> {
        let key = self.keys.ready();
        self.redis.run_idempotent(|c| redis::cmd("EXISTS").arg(&key).query::<i64>(c)).map(|n| n > 0)
    }

    fn restore_from_postgres(&self) -> Result<usize, ClaimError> {
        type Head = (String, i64, i64, Option<String>, Option<String>, i64);
        let (heads, rows, identities, work) = self.pg.run(|conn| {
            // One snapshot of Postgres: heads, rows and work claims from the same moment.
            let mut tx = conn
                .client
                .build_transaction()
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .map_err(pg_err)?;
            let heads = tx
                .query(
                    &self.pg.sql(
                        "SELECT project, version, epoch, master_session_id, master_identity, last_cursor
                         FROM @.projects WHERE version > 0 ORDER BY project",
                    ),
                    &[],
                )
                .map_err(pg_err)?
                .iter()
                .map(|r| -> Result<Head, postgres::Error> {
                    Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?, r.try_get(4)?, r.try_get(5)?))
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(pg_err)?;
            let rows = tx
                .query(
                    &self.pg.sql(
                        "SELECT project, session_id, identity, surface, machine_id, token_hash, is_master,
                                registered_at, last_heartbeat
                         FROM @.controller_status ORDER BY project, session_id",
                    ),
                    &[],
                )
                .map_err(pg_err)?
                .iter()
                .map(|r| -> Result<(String, Controller), postgres::Error> {
                    Ok((
                        r.try_get(0)?,
                        Controller {
                            session_id: r.try_get(1)?,
                            identity: r.try_get(2)?,
                            surface: r.try_get(3)?,
                            machine_id: r.try_get(4)?,
                            token_hash: r.try_get(5)?,
                            is_master: r.try_get(6)?,
                            registered_at: r.try_get(7)?,
                            last_heartbeat: r.try_get(8)?,
                        },
                    ))
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(pg_err)?;
            let identities = tx
                .query(
                    &self.pg.sql(
                        "SELECT project, identity, key_hash, enrolled_at, key_issued_at
                         FROM @.identities ORDER BY project, identity",
                    ),
                    &[],
                )
                .map_err(pg_err)?
                .iter()
                .map(|r| -> Result<(String, EnrolledIdentity), postgres::Error> {
                    Ok((
                        r.try_get(0)?,
                        EnrolledIdentity {
                            identity: r.try_get(1)?,
                            key_hash: r.try_get(2)?,
                            enrolled_at: r.try_get(3)?,
                            key_issued_at: r.try_get(4)?,
                        },
                    ))
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(pg_err)?;
            let work = self.read_work(&mut tx)?;
            tx.commit().map_err(pg_err)?;
            Ok((heads, rows, identities, work))
        })?;
        let mut by_project: HashMap<String, Vec<Controller>> = HashMap::new();
        for (p, c) in rows {
            by_project.entry(p).or_default().push(c);
        }
        let mut enrolled: HashMap<String, Vec<EnrolledIdentity>> = HashMap::new();
        for (p, i) in identities {
            enrolled.entry(p).or_default().push(i);
        }
        let mut restored = 0;
        let mut last_cursor = work.last_cursor;
        for (project, version, epoch, msid, mident, cursor) in heads {
            last_cursor = last_cursor.max(to_u64("cursor", cursor)?);
            let mut inv = self.restore.prepare_invoke();
            inv.key(self.keys.head(&project)).key(self.keys.ctl(&project));
            // Postgres is written second, so changes of master Redis had committed (and
            // announced in MasterPreempted) may never have reached it. The epoch is a fencing
            // number and must never be handed out twice: resume far above what Postgres saw.
            inv.arg(to_u64("version", version)?).arg(to_u64("epoch", epoch)?.saturating_add(EPOCH_RESTORE_GAP));
            match (msid, mident) {
                (Some(s), Some(i)) => inv.arg("1").arg(s).arg(i),
                _ => inv.arg("0").arg("").arg(""),
            };
            let ids = enrolled.remove(&project).unwrap_or_default();
            inv.arg(ids.len());
            for i in &ids {
                inv.arg(&i.identity).arg(to_json(i)?);
            }
            for c in by_project.remove(&project).unwrap_or_default() {
                inv.arg(&c.session_id).arg(to_json(&c)?);
            }
            // Idempotent: the script does nothing once the head exists.
            if self.redis.run_idempotent(|c| inv.invoke::<i64>(c))? == 1 {
                restored += 1;
            }
        }
        self.restore_work(work)?;
        // Cursors never go back: every event cursor Postgres saw was handed out already.
        let mut raise = self.raise_cursor.prepare_invoke();
        raise.key(self.keys.cursor()).arg(last_cursor);
        self.redis.run_idempotent(|c| raise.invoke::<i64>(c))?;
        let ready = self.keys.ready();
        self.redis.run_idempotent(|c| redis::cmd("SET").arg(&ready).arg("1").query::<Value>(c))?;
        Ok(restored)
    }

    fn read_snapshot(&self, project: &str) -> Result<(Snapshot, bool), ClaimError> {
        let mut inv = self.snapshot.prepare_invoke();
        inv.key(self.keys.head(project)).key(self.keys.ctl(project)).key(self.keys.ready());
        let reply = self.redis.run_idempotent(|c| inv.invoke::<Value>(c))?;
        let [head, rows, ready] = as_array("snapshot", &reply)? else {
            return Err(bad_reply("snapshot", &reply));
        };
        let head = pairs("snapshot head", head)?;
        let num = |k: &str| head.get(k).map_or(Ok(0), |v| parse_u64(k, v));
        let master = match (head.get("master_session_id"), head.get("master_identity")) {
            (Some(s), Some(i)) => Some(MasterRef { identity: i.clone(), session_id: s.clone() }),
            _ => None,
        };
        let mut controllers = as_array("snapshot rows", rows)?
            .iter()
            .map(|v| {
                let text = as_text(v).ok_or_else(|| bad_reply("snapshot rows", v))?;
                serde_json::from_str::<Controller>(&text).map_err(json_err)
            })
            .collect::<Result<Vec<_>, _>>()?;
        controllers.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        let mut identities = head
            .iter()
            .filter(|(k, _)| k.starts_with("identity:"))
            .map(|(_, v)| from_json::<EnrolledIdentity>(v))
            .collect::<Result<Vec<_>, _>>()?;
        identities.sort_by(|a, b| a.identity.cmp(&b.identity));
        let snap = Snapshot {
            project: project.to_string(),
            version: num("version")?,
            slot: MasterSlot { master, epoch: num("epoch")? },
            controllers,
            identities,
        };
        Ok((snap, as_int("snapshot ready", ready)? == 1))
    }

    /// Enqueues an audit row on its own; false when the queue was full and the row was
    /// dropped (counted and logged per episode, see [`AUDIT_LUA`]).
    fn enqueue_audit(&self, entry: &AuditEntry) -> Result<bool, ClaimError> {
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
    fn bounds(&self) -> (u64, u64) {
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
    fn check_queue_recovered(&self) {
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
    fn mark_postgres_failing(&self, failing: bool) {
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
    fn postgres_failing(&self) -> Result<bool, ClaimError> {
        let key = self.keys.pg_failing();
        self.redis.run_idempotent(|c| redis::cmd("EXISTS").arg(&key).query::<i64>(c)).map(|n| n > 0)
    }

    /// After a Redis write: wake the background writer. Postgres is written second and off
    /// the verb's path (seed 000: Redis is authoritative; the audit plane follows), so a
    /// verb costs Redis round trips only and a slow or failing Postgres never slows it.
    fn after_write(&self) {
        self.signal.kick();
    }

    /// Applies queue entries to Postgres in order, a batch at a time, deleting them once
    /// applied; stops at the first failure that retrying may fix. `rounds` bounds the batches.
    /// Holds the drain lock throughout, renewing its lease before each batch.
    fn drain(&self, rounds: Option<usize>) -> Result<Drained, DrainError> {
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
    fn drain_holding(
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
    fn release_drain_lock(&self, token: &str) {
        let mut unlock = self.unlock.prepare_invoke();
        unlock.key(self.keys.drain_lock()).arg(token);
        let _ = self.redis.run(|c| unlock.invoke::<i64>(c));
    }

    /// Applies up to [`DRAIN_BATCH`] entries in one Postgres transaction (one commit, one
    /// fsync, for the batch; see [`apply_batch`]), then deletes them from the queue. An entry
    /// Postgres refuses for good is rolled back alone and moved to the dead letters; any
    /// other failure rolls the batch back and leaves the queue as it was.
    fn drain_batch(&self, queue: &str) -> Result<(), DrainError> {
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

/// The commit script's arguments after the five fixed ones (see [`COMMIT_LUA`]).
fn change_args(inv: &mut redis::ScriptInvocation<'_>, change: &Change) -> Result<(), ClaimError> {
    inv.arg(change.upsert.len());
    for c in &change.upsert {
        inv.arg(&c.session_id).arg(to_json(c)?);
    }
    inv.arg(change.delete.len());
    for sid in &change.delete {
        inv.arg(sid);
    }
    match &change.slot {
        None => inv.arg("0").arg("0").arg("0").arg("").arg(""),
        Some(MasterSlot { master: None, epoch }) => inv.arg("1").arg(*epoch).arg("0").arg("").arg(""),
        Some(MasterSlot { master: Some(m), epoch }) => {
            inv.arg("1").arg(*epoch).arg("1").arg(&m.session_id).arg(&m.identity)
        }
    };
    inv.arg(event_args(&change.events));
    inv.arg(change.enroll.len());
    for i in &change.enroll {
        inv.arg(&i.identity).arg(to_json(i)?);
    }
    inv.arg(change.unenroll.len()).arg(&change.unenroll);
    Ok(())
}

/// The inbox of each event, in order: the keys [`INBOX_LUA`] appends to.
fn event_keys(keys: &Keys, project: &str, events: &[NewEvent]) -> Vec<String> {
    events.iter().map(|e| keys.inbox(project, &e.recipient)).collect()
}

/// The events as [`INBOX_LUA`] reads them: their count, then (session flag, session, kind,
/// payload) each.
fn event_args(events: &[NewEvent]) -> Vec<String> {
    let mut args = Vec::with_capacity(1 + 4 * events.len());
    args.push(events.len().to_string());
    for e in events {
        match &e.recipient_session {
            Some(s) => args.extend(["1".to_string(), s.clone()]),
            None => args.extend(["0".to_string(), String::new()]),
        }
        args.extend([e.kind.clone(), e.payload.to_string()]);
    }
    args
}

impl Store for RedisPgStore {
    fn snapshot(&self, project: &str) -> Result<Snapshot, ClaimError> {
        let (snap, ready) = self.inner.read_snapshot(project)?;
        if ready {
            return Ok(snap);
        }
        // Redis lost the namespace (a restart without persistence): restore before anyone
        // reads an empty project as the truth.
        self.inner.restore_from_postgres()?;
        Ok(self.inner.read_snapshot(project)?.0)
    }

    fn commit(
        &self,
        project: &str,
        expected_version: u64,
        change: &Change,
        audit: Option<&AuditEntry>,
    ) -> Result<Commit, ClaimError> {
        let k = &self.inner.keys;
        let op = uuid::Uuid::new_v4().to_string();
        let mut inv = self.inner.commit.prepare_invoke();
        inv.key(k.head(project)).key(k.ctl(project)).key(k.cursor()).key(k.queue()).key(k.ready());
        inv.key(event_keys(k, project, &change.events));
        let (request_key, request, request_ms) = match audit {
            Some(a) => request_args(k, a)?,
            None => (k.request("-"), String::new(), 0),
        };
        inv.key(k.inbox_trims()).key(k.queue_bytes()).key(request_key);
        inv.arg(expected_version).arg(&op).arg(project).arg(super::events_at(change, audit)?);
        inv.arg(audit.map(to_json).transpose()?.unwrap_or_default());
        change_args(&mut inv, change)?;
        let (max_rows, max_bytes) = self.inner.bounds();
        inv.arg(self.inner.inbox_keep.load(Ordering::Relaxed)).arg(max_rows).arg(max_bytes);
        inv.arg(request).arg(request_ms);
        // Not retried on a lost reply: the script may have run, and running it again would
        // report a conflict for a commit that in fact succeeded.
        let reply = self.inner.redis.run_write(|c| inv.invoke::<Value>(c))?;
        let parts = as_array("commit", &reply)?;
        match parts.first().and_then(as_text).as_deref() {
            Some("ok") => {
                let version = parts.get(1).and_then(as_text).ok_or_else(|| bad_reply("commit", &reply))?;
                let version = parse_u64("version", &version)?;
                if parts.get(3).and_then(as_text).as_deref() == Some("skipped") {
                    self.inner.dropped_heartbeats.fetch_add(1, Ordering::Relaxed);
                    self.inner.full.fail(&"a routine heartbeat's postgres write was skipped");
                }
                self.inner.after_write();
                Ok(Commit::Done(version))
            }
            Some("full") => Err(self.inner.queue_full(audit.map_or("the write", |a| a.verb.as_str()))),
            Some("conflict") => Ok(Commit::Conflict),
            Some("replayed") => Err(request::in_flight()),
            Some("lost") => {
                // Nothing was written; restore, and let the caller decide again on the
                // restored state.
                self.inner.restore_from_postgres()?;
                Ok(Commit::Conflict)
            }
            _ => Err(bad_reply("commit", &reply)),
        }
    }

    fn append_audit(&self, entry: &AuditEntry) -> Result<(), ClaimError> {
        match self.inner.enqueue_audit(entry) {
            Ok(true) => {
                self.inner.after_write();
                Ok(())
            }
            // Dropped at the queue's bound (issue 28 point 4: a flood of refusals must not
            // grow Redis during a Postgres outage); counted on /metrics. Not an error: the
            // row is best effort by design, the refused verb's own answer is what matters.
            Ok(false) => Ok(()),
            // Redis is down: write the row to Postgres directly rather than lose it.
            Err(ClaimError::Unavailable(why)) => {
                let op = uuid::Uuid::new_v4().to_string();
                self.inner
                    .pg
                    .run(|conn| {
                        let mut tx = conn.client.transaction().map_err(pg_err)?;
                        insert_audit(&mut tx, &conn.st, &op, entry).map_err(pg_err)?;
                        tx.commit().map_err(pg_err)
                    })
                    .map_err(|e| ClaimError::Unavailable(format!("{why}; and {e}")))
            }
            Err(e) => Err(e),
        }
    }

    fn audit_log(&self, project: Option<&str>, limit: usize) -> Result<Vec<AuditEntry>, ClaimError> {
        if !self.inner.degraded.load(Ordering::SeqCst) {
            // Best effort: rows still queued are shown once they reach Postgres.
            let _ = self.inner.drain_written_so_far(AUDIT_READ_WAIT);
        }
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let pg = &self.inner.pg;
        let mut rows = pg.run(|conn| {
            conn.client
                .query(
                    &pg.sql(
                        "SELECT at, project, verb, actor, target, result, epoch, detail::text FROM @.audit
                         WHERE $1::text IS NULL OR project = $1 ORDER BY id DESC LIMIT $2",
                    ),
                    &[&project, &limit],
                )
                .map_err(pg_err)?
                .iter()
                .map(|r| {
                    let detail: String = r.try_get(7).map_err(pg_err)?;
                    Ok(AuditEntry {
                        at: r.try_get(0).map_err(pg_err)?,
                        project: r.try_get(1).map_err(pg_err)?,
                        verb: r.try_get(2).map_err(pg_err)?,
                        actor: r.try_get(3).map_err(pg_err)?,
                        target: r.try_get(4).map_err(pg_err)?,
                        result: r.try_get(5).map_err(pg_err)?,
                        epoch: r
                            .try_get::<_, Option<i64>>(6)
                            .map_err(pg_err)?
                            .map(|e| to_u64("epoch", e))
                            .transpose()?,
                        detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::String(detail)),
                        request: None,
                    })
                })
                .collect::<Result<Vec<_>, ClaimError>>()
        })?;
        rows.reverse();
        Ok(rows)
    }

    fn operator(&self, operator_id: &str) -> Result<Option<OperatorRecord>, ClaimError> {
        let pg = &self.inner.pg;
        pg.run(|conn| {
            let row = conn
                .client
                .query_opt(
                    &pg.sql("SELECT operator_id, password_hash, created_at FROM @.operators WHERE operator_id = $1"),
                    &[&operator_id],
                )
                .map_err(pg_err)?;
            row.map(|r| {
                Ok(OperatorRecord {
                    operator_id: r.try_get(0).map_err(pg_err)?,
                    password_hash: r.try_get(1).map_err(pg_err)?,
                    created_at: r.try_get(2).map_err(pg_err)?,
                })
            })
            .transpose()
        })
    }

    fn insert_operator(&self, rec: &OperatorRecord, audit: &AuditEntry) -> Result<(), ClaimError> {
        let pg = &self.inner.pg;
        let op = uuid::Uuid::new_v4().to_string();
        pg.run(|conn| {
            let mut tx = conn.client.transaction().map_err(pg_err)?;
            let inserted = tx
                .execute(
                    &pg.sql(
                        "INSERT INTO @.operators (operator_id, password_hash, failures, created_at)
                         VALUES ($1, $2, 0, $3) ON CONFLICT (operator_id) DO NOTHING",
                    ),
                    &[&rec.operator_id, &rec.password_hash, &rec.created_at],
                )
                .map_err(pg_err)?;
            if inserted == 0 {
                return Err(ClaimError::OperatorExists(rec.operator_id.clone()));
            }
            insert_audit(&mut tx, &conn.st, &op, audit).map_err(pg_err)?;
            if let Some(r) = &audit.request {
                keep_request_pg(&mut tx, pg, r, audit.at)?;
            }
            tx.commit().map_err(pg_err)
        })
    }

    fn recall_request(&self, verb: &str, key: &str, now: Millis) -> Result<Option<KeptAnswer>, ClaimError> {
        if verb == POSTGRES_DECIDES {
            let pg = &self.inner.pg;
            return pg.run(|conn| {
                let row = conn
                    .client
                    .query_opt(
                        &pg.sql("SELECT fingerprint, answer FROM @.requests WHERE key = $1 AND expires_at > $2"),
                        &[&key, &now],
                    )
                    .map_err(pg_err)?;
                row.map(|r| {
                    Ok(KeptAnswer { fingerprint: r.try_get(0).map_err(pg_err)?, answer: r.try_get(1).map_err(pg_err)? })
                })
                .transpose()
            });
        }
        let k = self.inner.keys.request(key);
        let text: Option<String> = self.inner.redis.run_idempotent(|c| redis::cmd("GET").arg(&k).query(c))?;
        text.as_deref().map(KeptAnswer::from_stored_text).transpose()
    }

    fn record_failure(&self, operator_id: &str, at: Millis) -> Result<u32, ClaimError> {
        let pg = &self.inner.pg;
        pg.run(|conn| {
            let row = conn
                .client
                .query_one(
                    &pg.sql(
                        "INSERT INTO @.operator_attempts AS a (operator_id, failures, last_failure_at) VALUES ($1, 1, $2)
                         ON CONFLICT (operator_id) DO UPDATE SET
                             failures = GREATEST(0, a.failures - GREATEST(0, $2 - COALESCE(a.last_failure_at, $2)) / $3) + 1,
                             last_failure_at = $2
                         RETURNING failures",
                    ),
                    &[&operator_id, &at, &crate::claim::secret::FAILURE_DECAY_MS],
                )
                .map_err(pg_err)?;
            Ok(u32::try_from(row.try_get::<_, i32>(0).map_err(pg_err)?).unwrap_or(1))
        })
    }

    fn attempt_succeeded(&self, operator_id: &str) -> Result<(), ClaimError> {
        let pg = &self.inner.pg;
        pg.run(|conn| {
            conn.client
                .execute(&pg.sql("UPDATE @.operator_attempts SET failures = 0 WHERE operator_id = $1"), &[&operator_id])
                .map_err(pg_err)?;
            Ok(())
        })
    }

    fn health(&self) -> Result<(), ClaimError> {
        if !self.inner.ready()? {
            return Err(ClaimError::Unavailable("redis has not been restored from postgres yet".into()));
        }
        let pg = &self.inner.pg;
        pg.run(|conn| conn.client.simple_query("SELECT 1").map(|_| ()).map_err(pg_err))
    }

    fn pending_audit_writes(&self) -> Option<u64> {
        self.pending_postgres_writes().ok()
    }

    fn audit_queue(&self) -> Option<super::AuditQueue> {
        let inner = &self.inner;
        let (queue, bytes) = (inner.keys.queue(), inner.keys.queue_bytes());
        let (rows, held) = inner
            .redis
            .run_idempotent(|c| {
                redis::pipe().cmd("XLEN").arg(&queue).cmd("GET").arg(&bytes).query::<(u64, Option<u64>)>(c)
            })
            .ok()?;
        let (max_rows, max_bytes) = inner.bounds();
        Some(super::AuditQueue {
            rows,
            bytes: held.unwrap_or(0),
            max_rows,
            max_bytes,
            dropped_refusals: inner.dropped_refusals.load(Ordering::Relaxed),
            dropped_heartbeats: inner.dropped_heartbeats.load(Ordering::Relaxed),
            refused_writes: inner.refused_writes.load(Ordering::Relaxed),
        })
    }

    fn readiness(&self) -> Result<Backlog, ClaimError> {
        self.inner.readiness()
    }

    fn projects_without_master(&self) -> Result<u64, ClaimError> {
        masters::projects_without_master(&self.inner)
    }

    /// Redis's records expire by their own TTL (`SET ... PX`); Postgres keeps `operator
    /// add`'s, removed here.
    fn purge_requests(&self, now: Millis) -> Result<u64, ClaimError> {
        let pg = &self.inner.pg;
        pg.run(|conn| {
            conn.client.execute(&pg.sql("DELETE FROM @.requests WHERE expires_at <= $1"), &[&now]).map_err(pg_err)
        })
    }

    fn prune(&self, cutoffs: &Cutoffs) -> Result<Pruned, ClaimError> {
        retention::prune(&self.inner, cutoffs)
    }

    fn sizes(&self) -> Result<Sizes, ClaimError> {
        retention::sizes(&self.inner)
    }

    fn inbox(&self, project: &str, identity: &str, after: u64, limit: usize) -> Result<Vec<Event>, ClaimError> {
        if limit == 0 || after == u64::MAX {
            return Ok(Vec::new());
        }
        let key = self.inner.keys.inbox(project, identity);
        let start = format!("(0-{after}");
        // MULTI/EXEC: the trim mark, the oldest entry and the page come from one moment, so a
        // prune in between can neither hide a gap nor report one that is not there.
        let (mark, oldest, reply): (Option<u64>, Value, Value) = self.inner.redis.run_idempotent(|c| {
            redis::pipe()
                .atomic()
                .cmd("HGET")
                .arg(self.inner.keys.inbox_trims())
                .arg(&key)
                .cmd("XRANGE")
                .arg(&key)
                .arg("-")
                .arg("+")
                .arg("COUNT")
                .arg(1)
                .cmd("XRANGE")
                .arg(&key)
                .arg(&start)
                .arg("+")
                .arg("COUNT")
                .arg(limit)
                .query(c)
        })?;
        if let Some(mark) = mark {
            let oldest = stream_entries("inbox", &oldest)?.into_iter().next().map(|(id, _)| id);
            let oldest = oldest.map(|id| parse_u64("cursor", id.strip_prefix("0-").unwrap_or(&id))).transpose()?;
            check_cursor(after, mark, oldest)?;
        }
        stream_entries("inbox", &reply)?
            .into_iter()
            .map(|(id, f)| {
                let cursor = id.strip_prefix("0-").ok_or_else(|| ClaimError::Store(format!("inbox entry id {id}")))?;
                let get = |k: &str| f.get(k).ok_or_else(|| ClaimError::Store(format!("inbox entry {id} without {k}")));
                Ok(Event {
                    cursor: parse_u64("cursor", cursor)?,
                    at: get("at")?.parse().map_err(|_| ClaimError::Store(format!("inbox entry {id}: bad time")))?,
                    recipient_session: f.get("session").cloned(),
                    kind: get("kind")?.clone(),
                    payload: from_json(get("payload")?)?,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_validated() {
        for ok in ["writerctl", "t_0af3", "a", &"x".repeat(40)] {
            assert!(validate_namespace(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Upper", "dash-ed", "sp ace", "pg_catalog", "quo\"te", &"x".repeat(41)] {
            assert!(matches!(validate_namespace(bad), Err(ClaimError::InvalidArgument(_))), "{bad:?}");
        }
    }

    #[test]
    fn key_components_never_run_together() {
        let k = Keys::new("ns");
        // Without escaping, project "a:inbox:b" + identity "c" would equal project "a" +
        // identity "b:inbox:c".
        assert_ne!(k.inbox("a:inbox:b", "c"), k.inbox("a", "b:inbox:c"));
        assert_ne!(k.inbox("a%3A", "c"), k.inbox("a:", "c"));
        assert!(k.head("p").starts_with("{ns}:"), "every key shares the namespace's hash tag");
    }
}
