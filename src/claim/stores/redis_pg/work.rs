//! Seed 002's work claims in the Redis + Postgres store (keys in the parent module's
//! documentation).
//!
//! Every write is one Lua script that checks, writes and enqueues its Postgres write
//! atomically, like a commit: a claim write compares the stored row's own version, so two
//! seats taking one task elect exactly one owner, and a conflict writes nothing (no history
//! step, no doorbell, no index change, no queued row). A batch (a sweep) is one EVALSHA per
//! write, [`PIPELINE_CHUNK`] of them per round trip: Redis runs each script atomically, not
//! the batch, which is all [`WorkStore::write_work_claims`] promises.
//!
//! Postgres follows through the parent's queue: a queued claim write upserts the row only
//! if its version is newer than the stored one and inserts its history step once per op id,
//! so a replay, or an older entry applied after a newer one, changes nothing.

use std::collections::{HashMap, HashSet};

use redis::{Cmd, RedisResult, Script, Value};
use serde::de::DeserializeOwned;

use super::errors::{pg_err, redis_err, to_u64};
use super::keys::esc;
use super::replies::{as_array, as_int, as_text, bad_reply};
use super::scripts::{event_args, event_keys, request_args, with_inbox, with_queue, with_request};
use super::{AUDIT_READ_WAIT, EPOCH_RESTORE_GAP, Inner, RedisPgStore};
use crate::claim::error::ClaimError;
use crate::claim::model::{AuditEntry, Millis};
use crate::claim::requests;
use crate::claim::stores::codec::json_err;
use crate::claim::stores::{Commit, FocusWrite, WorkClaimWrite, WorkStore, seat_unproven};
use crate::claim::stores::{from_json as parse, to_i64, to_json};
use crate::claim::work_claims::{Channel, FocusLease, WorkClaim, WorkClaimStep};

/// Scripts (or plain commands) per pipeline round trip: a sweep of 100,000 claims is 100
/// round trips, and no single reply grows without bound.
pub(super) const PIPELINE_CHUNK: usize = 1000;

/// How many of a task's newest history steps Redis keeps (issue 28 point 4: one seat grew
/// Redis by 54 MB in 5 s through an untrimmed list). Postgres keeps every step (subject to
/// retention) and [`WorkStore::work_claim_history`] reads the older ones from there. 32 steps of
/// ~400 bytes is ~13 KB per task at most, and covers a task's recent story when Postgres is
/// out of reach.
pub const HISTORY_KEEP: usize = 32;

/// A seat write's proof, inside the write's own script (issue 28 point 5: a proof read
/// before the write let a `take` commit after `identity remove`): true unless a controller
/// in the project's controllers hash `ctl` is registered as `seat` with the token hash
/// `proof` now. `seat` empty: no proof to check (a sweep write). Every row is compared.
const PROOF_LUA: &str = r#"
local function seat_unproven(ctl, seat, proof)
  if seat == '' then return false end
  local proven = false
  for _, row in ipairs(redis.call('HVALS', ctl)) do
    local c = cjson.decode(row)
    if c.identity == seat and c.token_hash == proof then proven = true end
  end
  return not proven
end
"#;

/// The version of the JSON record stored in field `field` of hash `hash`: '0' when there is
/// none, nil when its text holds no version. Read from the text rather than decoded (see
/// [`CLAIM_LUA`]): `"version":` followed by digits only occurs as the record's own key.
const STORED_VERSION_LUA: &str = r#"
local function stored_version(hash, field)
  local stored = redis.call('HGET', hash, field)
  if not stored then return '0' end
  return string.match(stored, '"version":(%d+)')
end
"#;

/// A compare-and-set script on a record's JSON version, with [`STORED_VERSION_LUA`]'s
/// function.
pub(super) fn with_stored_version(body: &str) -> String {
    [STORED_VERSION_LUA, body].concat()
}

/// A write script with [`PROOF_LUA`]'s function.
fn with_proof(body: &str) -> String {
    [PROOF_LUA, body].concat()
}

/// One compare-and-set claim write (run with [`super::INBOX_LUA`] and [`super::QUEUE_LUA`]
/// prefixed).
///
/// KEYS: ready marker, cursor counter, pg queue, claims hash, history list, due index, the
/// set of projects with due claims, then one inbox per event, then the project's controllers
/// hash, `{ns}:inbox_trims`, the queue's byte count, then the request record's key. ARGV:
/// expected version, task, row JSON, step JSON, due score ('' when the row is not due), due
/// member, project, op id, event time, audit JSON, then the events, then the seat proof's
/// identity and token hash ('' and '' for a sweep write), how many history steps to keep,
/// the inbox bound (newest events kept, 0: none), the queue's bounds (max rows, max bytes),
/// then the request record and its lifetime ([`super::REQUEST_LUA`]). A full queue answers
/// `full` and writes nothing (the write's audit row and step must reach Postgres).
///
/// The stored version is read from the row's JSON text rather than decoded: serde_json
/// escapes every `"` inside a string and a row has no nested object, so `"version":`
/// followed by digits only occurs as the row's own key, and comparing digit strings is exact
/// for every u64 (cjson would round above 2^53, and decoding costs a sweep its speed).
/// Every check runs before the first write: Redis does not roll a script back.
const CLAIM_LUA: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return 'lost' end
local current = stored_version(KEYS[4], ARGV[2])
if not current then return redis.error_reply('claim row ' .. ARGV[2] .. ' in ' .. KEYS[4] .. ' has no version') end
if current ~= ARGV[1] then return 'conflict' end
if seat_unproven(KEYS[#KEYS - 3], ARGV[#ARGV - 7], ARGV[#ARGV - 6]) then return 'unproven' end
if request_seen() then return 'replayed' end
if not queue_room(KEYS[3], KEYS[#KEYS - 1], ARGV[#ARGV - 3], ARGV[#ARGV - 2]) then return 'full' end
local i = 11
local function take() local v = ARGV[i]; i = i + 1; return v end
local events = take_events(take)
local counter, err = inbox_counter(KEYS[2], 8, #events)
if not counter then return err end
-- Writes.
redis.call('HSET', KEYS[4], ARGV[2], ARGV[3])
redis.call('RPUSH', KEYS[5], ARGV[4])
redis.call('LTRIM', KEYS[5], -tonumber(ARGV[#ARGV - 5]), -1)
if ARGV[5] == '' then
  redis.call('ZREM', KEYS[6], ARGV[6])
  -- The sweeper's list names only projects whose index holds something.
  if redis.call('ZCARD', KEYS[6]) == 0 then redis.call('SREM', KEYS[7], ARGV[7]) end
else
  redis.call('ZADD', KEYS[6], ARGV[5], ARGV[6])
  redis.call('SADD', KEYS[7], ARGV[7])
end
inbox_append(KEYS[2], counter, 8, ARGV[9], events, KEYS[#KEYS - 2], ARGV[#ARGV - 4])
-- The Postgres write: the audit row, the row and its step, and the cursor (so a restore
-- never hands out a cursor these doorbells used).
queue_add(KEYS[3], KEYS[#KEYS - 1], {'op', ARGV[8], 'project', ARGV[7], 'audit', ARGV[10],
  'claim', ARGV[3], 'step', ARGV[4], 'cursor', redis.call('GET', KEYS[2]) or '0'})
request_keep()
return 'ok'
"#;

/// Creates a channel unless it exists. KEYS: ready marker, channels hash, pg queue, the
/// queue's byte count, request record key. ARGV: channel, JSON, op id, project, audit JSON,
/// the queue's bounds (max rows, max bytes), request record, lifetime.
const CHANNEL_LUA: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return 'lost' end
if request_seen() then return 'replayed' end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 'exists' end
if not queue_room(KEYS[3], KEYS[4], ARGV[6], ARGV[7]) then return 'full' end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
queue_add(KEYS[3], KEYS[4], {'op', ARGV[3], 'project', ARGV[4], 'audit', ARGV[5], 'channel', ARGV[2]})
request_keep()
return 'ok'
"#;

/// Replaces a seat's focus lease. KEYS: ready marker, focus hash, focus version hash, pg
/// queue, the queue's byte count, the project's controllers hash, request record key. ARGV:
/// seat, JSON, op id, project, audit JSON, the `started_at` the stored lease must have ('' to
/// write unconditionally), the queue's bounds (max rows, max bytes), the seat proof's
/// identity and token hash ('' when none), request record, lifetime.
///
/// A lease has no version of its own; the per-seat counter orders its Postgres writes, so
/// two drainers applying overlapping batches (a drain lock that expired) never leave an
/// older lease in Postgres.
const FOCUS_LUA: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return 'lost' end
if ARGV[6] ~= '' then
  -- The first unescaped "started_at" key is the lease's own: strings before it (project,
  -- seat) have their quotes escaped.
  local stored = redis.call('HGET', KEYS[2], ARGV[1])
  if not stored or string.match(stored, '"started_at":(%-?%d+)') ~= ARGV[6] then return 'conflict' end
end
if seat_unproven(KEYS[6], ARGV[9], ARGV[10]) then return 'unproven' end
if request_seen() then return 'replayed' end
if not queue_room(KEYS[4], KEYS[5], ARGV[7], ARGV[8]) then return 'full' end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
local v = redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
queue_add(KEYS[4], KEYS[5], {'op', ARGV[3], 'project', ARGV[4], 'audit', ARGV[5], 'focus', ARGV[2],
  'focus_version', string.format('%d', v)})
request_keep()
return 'ok'
"#;

/// Rebuilds one claim row from Postgres, only if Redis still lacks it (another replica may
/// have restored it and moved on). KEYS: claims hash, history list, due index, projects
/// with due claims. ARGV: task, row JSON, due score ('' when not due), due member, project,
/// then the history steps, oldest first.
const RESTORE_CLAIM_LUA: &str = r#"
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('DEL', KEYS[2])
for i = 6, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] ~= '' then
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
  redis.call('SADD', KEYS[4], ARGV[5])
end
return 1
"#;

/// Rebuilds one focus lease from Postgres, only if Redis still lacks it. KEYS: focus hash,
/// focus version hash. ARGV: seat, JSON, version.
const RESTORE_FOCUS_LUA: &str = r#"
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1
"#;

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

/// A script sent by EVALSHA inside pipelines, with its source for the SCRIPT LOAD that
/// leads each round trip (`Script::invoke` reloads after NOSCRIPT, but a pipeline cannot).
struct Piped {
    source: String,
    script: Script,
}

impl Piped {
    fn new(source: String) -> Piped {
        let script = Script::new(&source);
        Piped { source, script }
    }

    /// An EVALSHA of the script on `keys`; the caller appends ARGV.
    fn call(&self, keys: Vec<String>) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.script.get_hash()).arg(keys.len()).arg(keys);
        cmd
    }
}

/// The work claims' scripts.
pub(super) struct Scripts {
    claim: Piped,
    channel: Script,
    focus: Script,
    restore_claim: Piped,
    restore_focus: Piped,
}

impl Scripts {
    pub(super) fn new() -> Scripts {
        Scripts {
            claim: Piped::new(with_request(&with_queue(&with_inbox(&with_proof(&with_stored_version(CLAIM_LUA)))))),
            channel: Script::new(&with_request(&with_queue(CHANNEL_LUA))),
            focus: Script::new(&with_request(&with_queue(&with_proof(FOCUS_LUA)))),
            restore_claim: Piped::new(RESTORE_CLAIM_LUA.to_string()),
            restore_focus: Piped::new(RESTORE_FOCUS_LUA.to_string()),
        }
    }
}

/// A name as it comes back out of a key component ([`esc`] reversed). Every `%` of an
/// escaped name starts `%25` or `%3A`, so undoing `%3A` first cannot split a `%25`.
fn unesc(s: &str) -> String {
    s.replace("%3A", ":").replace("%25", "%")
}

/// The due index's member for a claim: both names escaped, so the first `:` separates them.
fn due_member(channel: &str, task: &str) -> String {
    format!("{}:{}", esc(channel), esc(task))
}

/// (channel, task) of a due index member.
fn split_member(member: &str) -> Result<(String, String), ClaimError> {
    member
        .split_once(':')
        .map(|(c, t)| (unesc(c), unesc(t)))
        .ok_or_else(|| ClaimError::store(format!("redis: due index member {member:?} names no task")))
}

/// A JSON value from a reply; None for a missing one.
pub(super) fn from_json<T: DeserializeOwned>(what: &str, v: &Value) -> Result<Option<T>, ClaimError> {
    match v {
        Value::Nil => Ok(None),
        v => {
            let text = as_text(v).ok_or_else(|| bad_reply(what, v))?;
            serde_json::from_str(&text).map(Some).map_err(json_err)
        }
    }
}

/// An array reply of JSON values.
pub(super) fn json_list<T: DeserializeOwned>(what: &str, v: &Value) -> Result<Vec<T>, ClaimError> {
    as_array(what, v)?.iter().map(|x| from_json(what, x)?.ok_or_else(|| bad_reply(what, x))).collect()
}

/// An array reply of names.
fn text_list(what: &str, v: &Value) -> Result<Vec<String>, ClaimError> {
    as_array(what, v)?.iter().map(|x| as_text(x).ok_or_else(|| bad_reply(what, x))).collect()
}

/// The only reply of a one-command read.
pub(super) fn only(what: &str, replies: Vec<Value>) -> Result<Value, ClaimError> {
    match <[Value; 1]>::try_from(replies) {
        Ok([v]) => Ok(v),
        Err(replies) => Err(bad_reply(what, &Value::Array(replies))),
    }
}

/// How a write script answered.
pub(super) enum Reply {
    Ok,
    Conflict,
    Exists,
    Lost,
    /// The Postgres queue is at its bound; nothing was written.
    Full,
    /// A claim write's seat proof no longer held (nothing was written).
    Unproven,
}

fn reply_of(what: &str, v: &Value) -> Result<Reply, ClaimError> {
    match as_text(v).as_deref() {
        Some("ok") => Ok(Reply::Ok),
        Some("conflict") => Ok(Reply::Conflict),
        Some("exists") => Ok(Reply::Exists),
        Some("lost") => Ok(Reply::Lost),
        Some("full") => Ok(Reply::Full),
        Some("unproven") => Ok(Reply::Unproven),
        // Another attempt with the same request id was applied; nothing was written.
        Some("replayed") => Err(requests::in_flight()),
        _ => Err(bad_reply(what, v)),
    }
}

// ---------------------------------------------------------------------------------------
// restore
// ---------------------------------------------------------------------------------------

/// What a restore rebuilds of the work claims, read in the restore's Postgres snapshot.
pub(super) struct Restore {
    /// (project, channel, JSON) of every channel.
    channels: Vec<(String, String, String)>,
    /// Every claim row Redis lacked when read, with its history steps' JSON, oldest first.
    claims: Vec<(WorkClaim, Vec<String>)>,
    /// Every focus lease, with its JSON and its write counter.
    focus: Vec<(FocusLease, String, u64)>,
    /// (project, JSON) of every project's pause record (issue 30).
    pauses: Vec<(String, String)>,
    /// The last event cursor a claim write's doorbells used, as Postgres saw it.
    pub(super) last_cursor: u64,
}

impl Inner {
    /// Reads the work claims to restore inside the restore's snapshot `tx`. Only rows Redis
    /// lacks have their history read: every store reads this at connect, and reading every
    /// history ever written each time would grow without bound. (The presence check asks
    /// Redis while the Postgres snapshot is open, so the history read matches the rows read;
    /// the restore scripts check again, atomically, before writing.)
    pub(super) fn read_work(&self, tx: &mut postgres::Transaction<'_>) -> Result<Restore, ClaimError> {
        let mut query = |sql: &str, params: &[&(dyn postgres::types::ToSql + Sync)]| {
            tx.query(&self.pg.sql(sql), params).map_err(pg_err)
        };
        let text = |r: &postgres::Row, i: usize| r.try_get::<_, String>(i).map_err(pg_err);
        let channels = query("SELECT project, channel, body::text FROM @.channels ORDER BY project, channel", &[])?
            .iter()
            .map(|r| Ok((text(r, 0)?, text(r, 1)?, text(r, 2)?)))
            .collect::<Result<Vec<_>, ClaimError>>()?;
        let pauses = query("SELECT project, body::text FROM @.project_pauses ORDER BY project", &[])?
            .iter()
            .map(|r| Ok((text(r, 0)?, text(r, 1)?)))
            .collect::<Result<Vec<_>, ClaimError>>()?;
        let focus = query("SELECT version, body::text FROM @.focus_leases ORDER BY project, seat", &[])?
            .iter()
            .map(|r| {
                let json = text(r, 1)?;
                Ok((parse(&json)?, json, to_u64("focus version", r.try_get(0).map_err(pg_err)?)?))
            })
            .collect::<Result<Vec<_>, ClaimError>>()?;
        let rows = query("SELECT body::text FROM @.claims ORDER BY project, channel, task", &[])?
            .iter()
            .map(|r| parse::<WorkClaim>(&text(r, 0)?))
            .collect::<Result<Vec<_>, ClaimError>>()?;
        let last_cursor: i64 = query("SELECT COALESCE(max(last_cursor), 0) FROM @.claim_history", &[])?
            .first()
            .map_or(Ok(0), |r| r.try_get(0).map_err(pg_err))?;
        let missing = self.missing_claims(rows)?;
        let col = |f: fn(&WorkClaim) -> &str| missing.iter().map(f).collect::<Vec<&str>>();
        let (projects, chans, tasks) = (col(|r| &r.project), col(|r| &r.channel), col(|r| &r.task));
        let mut history: HashMap<(String, String, String), Vec<String>> = HashMap::new();
        if !missing.is_empty() {
            for r in query(
                "SELECT h.project, h.channel, h.task, h.body::text FROM @.claim_history h
                 JOIN unnest($1::text[], $2::text[], $3::text[]) AS m (project, channel, task)
                   ON h.project = m.project AND h.channel = m.channel AND h.task = m.task
                 ORDER BY h.project, h.channel, h.task, h.version, h.id",
                &[&projects, &chans, &tasks],
            )? {
                history.entry((text(&r, 0)?, text(&r, 1)?, text(&r, 2)?)).or_default().push(text(&r, 3)?);
            }
        }
        let claims = missing
            .into_iter()
            .map(|row| {
                let steps = history.remove(&(row.project.clone(), row.channel.clone(), row.task.clone()));
                (row, steps.unwrap_or_default())
            })
            .collect();
        Ok(Restore { channels, claims, focus, pauses, last_cursor: to_u64("cursor", last_cursor)? })
    }

    /// The rows Redis does not hold (one HKEYS per channel).
    fn missing_claims(&self, rows: Vec<WorkClaim>) -> Result<Vec<WorkClaim>, ClaimError> {
        let mut channels: Vec<(&str, &str)> = rows.iter().map(|r| (r.project.as_str(), r.channel.as_str())).collect();
        channels.dedup();
        let mut present: HashSet<(&str, &str, String)> = HashSet::new();
        for chunk in channels.chunks(PIPELINE_CHUNK) {
            let mut p = redis::pipe();
            for (project, channel) in chunk {
                p.cmd("HKEYS").arg(self.keys.claims(project, channel));
            }
            let replies: Vec<Value> = self.redis.run_idempotent(|c| p.query(c))?;
            for ((project, channel), tasks) in chunk.iter().zip(&replies) {
                present.extend(text_list("claim tasks", tasks)?.into_iter().map(|t| (*project, *channel, t)));
            }
        }
        let missing: Vec<bool> =
            rows.iter().map(|r| !present.contains(&(r.project.as_str(), r.channel.as_str(), r.task.clone()))).collect();
        Ok(rows.into_iter().zip(missing).filter_map(|(r, m)| m.then_some(r)).collect())
    }

    /// Writes what [`Inner::read_work`] read into Redis; each piece only where Redis still
    /// lacks it, so restores racing each other (or racing writes after one finished) never
    /// overwrite newer state.
    pub(super) fn restore_work(&self, work: Restore) -> Result<(), ClaimError> {
        let k = &self.keys;
        // Channels and pauses: one hash field each, set only where Redis lacks it.
        let fields: Vec<(String, &String, &String)> = (work.channels.iter())
            .map(|(project, channel, json)| (k.channels(project), channel, json))
            .chain(work.pauses.iter().map(|(project, json)| (k.pauses(), project, json)))
            .collect();
        for chunk in fields.chunks(PIPELINE_CHUNK) {
            let mut p = redis::pipe();
            for (key, field, json) in chunk {
                p.cmd("HSETNX").arg(key).arg(field.as_str()).arg(json.as_str()).ignore();
            }
            self.redis.run_idempotent(|c| p.query::<()>(c))?;
        }
        let focus = work.focus.iter().map(|(lease, json, version)| {
            let mut cmd = self.work.restore_focus.call(vec![k.focus(&lease.project), k.focus_version(&lease.project)]);
            cmd.arg(&lease.seat).arg(json).arg(version);
            Ok(cmd)
        });
        self.eval_all(&self.work.restore_focus, focus)?;
        let claims = work.claims.into_iter().map(|(mut row, steps)| {
            // Postgres is written second: Redis may have handed out versions Postgres never
            // saw. A caller still holding one (an --expect-version read before the loss) must
            // conflict, never match a reused version: resume far above what Postgres saw.
            // The history keeps the versions its steps were written at.
            row.version = row.version.saturating_add(EPOCH_RESTORE_GAP);
            let r = &row;
            let mut cmd = self.work.restore_claim.call(vec![
                k.claims(&r.project, &r.channel),
                k.history(&r.project, &r.channel, &r.task),
                k.due(&r.project),
                k.due_projects(),
            ]);
            cmd.arg(&r.task)
                .arg(to_json(r)?)
                .arg(r.due_at().map(|d| d.to_string()).unwrap_or_default())
                .arg(due_member(&r.channel, &r.task))
                .arg(&r.project)
                // Redis keeps only the newest steps (see HISTORY_KEEP); Postgres has them all.
                .arg(&steps[steps.len().saturating_sub(HISTORY_KEEP)..]);
            Ok(cmd)
        });
        self.eval_all(&self.work.restore_claim, claims)
    }

    /// Runs idempotent script calls, [`PIPELINE_CHUNK`] per round trip; any error stops.
    fn eval_all(&self, script: &Piped, calls: impl Iterator<Item = Result<Cmd, ClaimError>>) -> Result<(), ClaimError> {
        let mut calls = calls.peekable();
        while calls.peek().is_some() {
            let chunk = calls.by_ref().take(PIPELINE_CHUNK).collect::<Result<Vec<_>, _>>()?;
            for reply in self.eval_pipelined(script, chunk, true)? {
                reply.map_err(redis_err)?;
            }
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------
    // Redis round trips
    // -----------------------------------------------------------------------------------

    /// Sends `calls` (EVALSHAs of `script`) in one round trip (see [`pipelined`]). One result
    /// per call: a script's error stops only itself. `idempotent` calls are sent again on a
    /// new connection when a pooled one turns out broken; writes never are (they may have
    /// run).
    fn eval_pipelined(
        &self,
        script: &Piped,
        calls: Vec<Cmd>,
        idempotent: bool,
    ) -> Result<Vec<RedisResult<Value>>, ClaimError> {
        let n = calls.len();
        self.send_pipelined(&pipelined(script, calls), n, idempotent)
    }

    /// Sends a pipeline [`pipelined`] made of `n` calls.
    fn send_pipelined(
        &self,
        p: &redis::Pipeline,
        n: usize,
        idempotent: bool,
    ) -> Result<Vec<RedisResult<Value>>, ClaimError> {
        let replies: Vec<RedisResult<Value>> = if idempotent {
            self.redis.run_idempotent(|c| p.query(c))?
        } else {
            self.redis.run_write(|c| p.query(c))?
        };
        if replies.len() != n {
            return Err(ClaimError::store(format!("redis: {} replies to {n} scripts", replies.len())));
        }
        Ok(replies)
    }

    /// Runs the read pipeline `build` makes after an EXISTS of the ready marker, in one
    /// round trip. When Redis lost the namespace, restores and reads again, as a snapshot
    /// does: an empty read must never pass for the truth (a take would decide a live claim
    /// was free).
    pub(super) fn read_ready(&self, build: impl Fn(&mut redis::Pipeline)) -> Result<Vec<Value>, ClaimError> {
        let ready_key = self.keys.ready();
        let read = || -> Result<(bool, Vec<Value>), ClaimError> {
            let mut p = redis::pipe();
            p.cmd("EXISTS").arg(&ready_key);
            build(&mut p);
            let mut replies: Vec<Value> = self.redis.run_idempotent(|c| p.query(c))?;
            if replies.is_empty() {
                return Err(ClaimError::store("redis: an empty reply to a read"));
            }
            let ready = replies.remove(0);
            Ok((as_int("ready marker", &ready)? == 1, replies))
        };
        match read()? {
            (true, replies) => Ok(replies),
            (false, _) => {
                self.restore_from_postgres()?;
                Ok(read()?.1)
            }
        }
    }

    /// Runs a write script that answers `lost` when the ready marker is gone: then restores
    /// and runs it once more (a second loss answers `Unavailable`). `invoke` is never
    /// retried on a lost reply: the script may have run.
    pub(super) fn write_or_restore(
        &self,
        what: &str,
        invoke: impl Fn() -> Result<Value, ClaimError>,
    ) -> Result<Reply, ClaimError> {
        for _ in 0..2 {
            match reply_of(what, &invoke()?)? {
                Reply::Lost => {
                    // Nothing was written: restore, and write on the restored state.
                    self.restore_from_postgres()?;
                }
                reply => {
                    self.after_write();
                    return Ok(reply);
                }
            }
        }
        Err(ClaimError::Unavailable(format!("redis lost its data again while {what} waited for a restore")))
    }

    /// One claim write as an EVALSHA of [`CLAIM_LUA`].
    fn claim_call(&self, w: &WorkClaimWrite) -> Result<Cmd, ClaimError> {
        let (k, r) = (&self.keys, &w.row);
        let op = uuid::Uuid::new_v4().to_string();
        let mut keys = vec![
            k.ready(),
            k.cursor(),
            k.queue(),
            k.claims(&r.project, &r.channel),
            k.history(&r.project, &r.channel, &r.task),
            k.due(&r.project),
            k.due_projects(),
        ];
        keys.extend(event_keys(k, &r.project, &w.events));
        keys.push(k.ctl(&r.project));
        let (request_key, request, request_ms) = request_args(k, &w.audit)?;
        keys.push(k.inbox_trims());
        keys.push(k.queue_bytes());
        keys.push(request_key);
        let (max_rows, max_bytes) = self.bounds();
        let mut cmd = self.work.claim.call(keys);
        cmd.arg(w.expected_version)
            .arg(&r.task)
            .arg(to_json(r)?)
            .arg(to_json(&w.step())?)
            .arg(r.due_at().map(|d| d.to_string()).unwrap_or_default())
            .arg(due_member(&r.channel, &r.task))
            .arg(&r.project)
            .arg(&op)
            .arg(w.audit.at)
            .arg(to_json(&w.audit)?)
            .arg(event_args(&w.events))
            .arg(w.proof.as_ref().map_or("", |p| p.identity.as_str()))
            .arg(w.proof.as_ref().map_or("", |p| p.token_hash.as_str()))
            .arg(HISTORY_KEEP)
            .arg(self.inbox_keep.load(std::sync::atomic::Ordering::Relaxed))
            .arg(max_rows)
            .arg(max_bytes)
            .arg(request)
            .arg(request_ms);
        Ok(cmd)
    }

    /// Sends `writes`, [`PIPELINE_CHUNK`] per round trip, in order on one connection (two
    /// writes of one batch to one row apply in batch order). Returns each result, and
    /// whether any write found the ready marker gone (nothing of that write was written).
    /// A script error ends the batch with that error; the writes before it, and those after
    /// it in the same round trip, were applied.
    fn claim_round(&self, writes: &[WorkClaimWrite]) -> Result<(Vec<Commit>, bool), ClaimError> {
        let (mut out, mut lost) = (Vec::with_capacity(writes.len()), false);
        for chunk in writes.chunks(PIPELINE_CHUNK) {
            let calls = chunk.iter().map(|w| self.claim_call(w)).collect::<Result<Vec<_>, _>>()?;
            let p = pipelined(&self.work.claim, calls);
            // Not retried on a lost reply: a write that ran would then report a conflict.
            for (w, reply) in chunk.iter().zip(self.send_pipelined(&p, chunk.len(), false)?) {
                out.push(match reply_of("claim write", &reply.map_err(redis_err)?)? {
                    Reply::Ok => Commit::Done(w.row.version),
                    Reply::Conflict => Commit::Conflict,
                    Reply::Lost => {
                        lost = true;
                        Commit::Conflict
                    }
                    // Nothing of this write was written; the ones before it were.
                    Reply::Full => return Err(self.queue_full(&w.audit.verb)),
                    Reply::Exists => return Err(ClaimError::store("redis: unexpected reply to a claim write")),
                    Reply::Unproven => match &w.proof {
                        Some(p) => return Err(seat_unproven(&w.row.project, p)),
                        None => return Err(ClaimError::store("redis: a sweep write answered unproven")),
                    },
                });
            }
        }
        Ok((out, lost))
    }
}

/// `calls` (EVALSHAs of `script`) as one pipeline, led by a SCRIPT LOAD (a no-op when
/// cached) so a Redis that restarted or flushed its scripts never answers NOSCRIPT halfway
/// through; errors stay per call.
fn pipelined(script: &Piped, calls: Vec<Cmd>) -> redis::Pipeline {
    let mut p = redis::pipe();
    p.ignore_errors();
    p.cmd("SCRIPT").arg("LOAD").arg(&script.source).ignore();
    for c in calls {
        p.add_command(c);
    }
    p
}

impl WorkStore for RedisPgStore {
    fn insert_channel(&self, channel: &Channel, audit: &AuditEntry) -> Result<(), ClaimError> {
        let inner = &self.inner;
        let k = &inner.keys;
        let op = uuid::Uuid::new_v4().to_string();
        let (json, audit_json) = (to_json(channel)?, to_json(audit)?);
        let mut inv = inner.work.channel.prepare_invoke();
        let (request_key, request, request_ms) = request_args(k, audit)?;
        inv.key(k.ready()).key(k.channels(&channel.project)).key(k.queue()).key(k.queue_bytes()).key(request_key);
        inv.arg(&channel.channel).arg(&json).arg(&op).arg(&channel.project).arg(&audit_json);
        let (max_rows, max_bytes) = inner.bounds();
        inv.arg(max_rows).arg(max_bytes);
        inv.arg(request).arg(request_ms);
        match inner.write_or_restore("channel create", || inner.redis.run_write(|c| inv.invoke::<Value>(c)))? {
            Reply::Ok => Ok(()),
            Reply::Exists => Err(ClaimError::ChannelExists(channel.channel.clone())),
            Reply::Full => Err(inner.queue_full(&audit.verb)),
            Reply::Conflict | Reply::Lost | Reply::Unproven => {
                Err(ClaimError::store("redis: unexpected reply to channel create"))
            }
        }
    }

    fn channel(&self, project: &str, channel: &str) -> Result<Option<Channel>, ClaimError> {
        let key = self.inner.keys.channels(project);
        let replies = self.inner.read_ready(|p| {
            p.cmd("HGET").arg(&key).arg(channel);
        })?;
        from_json("channel", &only("channel", replies)?)
    }

    fn work_claim(&self, project: &str, channel: &str, task: &str) -> Result<Option<WorkClaim>, ClaimError> {
        let key = self.inner.keys.claims(project, channel);
        let replies = self.inner.read_ready(|p| {
            p.cmd("HGET").arg(&key).arg(task);
        })?;
        from_json("claim", &only("claim", replies)?)
    }

    fn work_claims(&self, project: &str, channel: &str) -> Result<Vec<WorkClaim>, ClaimError> {
        let key = self.inner.keys.claims(project, channel);
        let replies = self.inner.read_ready(|p| {
            p.cmd("HVALS").arg(&key);
        })?;
        let mut rows: Vec<WorkClaim> = json_list("claims", &only("claims", replies)?)?;
        rows.sort_by(|a, b| a.task.cmp(&b.task));
        Ok(rows)
    }

    /// Redis's list holds the newest [`HISTORY_KEEP`] steps. A shorter list was never cut
    /// and is the whole history; a full one may have been, and the steps before it are read
    /// from Postgres (after waiting, as an audit read does, for the queue entries that exist
    /// now). If Postgres cannot be read or has not caught up, the read fails with
    /// `coordinator_unavailable` rather than answer a history with its beginning missing.
    fn work_claim_history(&self, project: &str, channel: &str, task: &str) -> Result<Vec<WorkClaimStep>, ClaimError> {
        let inner = &self.inner;
        let key = inner.keys.history(project, channel, task);
        let replies = inner.read_ready(|p| {
            p.cmd("LRANGE").arg(&key).arg(0).arg(-1);
        })?;
        let newest: Vec<WorkClaimStep> = json_list("claim history", &only("claim history", replies)?)?;
        let Some(first) = newest.first().filter(|_| newest.len() >= HISTORY_KEEP) else { return Ok(newest) };
        if !inner.drain_written_so_far(AUDIT_READ_WAIT)? {
            return Err(ClaimError::Unavailable(format!(
                "the older steps of {channel}/{task}'s history are still queued for postgres; retry once it catches up \
                 (redis keeps the newest {HISTORY_KEEP})"
            )));
        }
        let before = to_i64(first.claim.version);
        let pg = &inner.pg;
        let older = pg.run(|conn| {
            conn.client
                .query(
                    &pg.sql(
                        "SELECT body::text FROM @.claim_history
                         WHERE project = $1 AND channel = $2 AND task = $3 AND version < $4 ORDER BY version, id",
                    ),
                    &[&project, &channel, &task, &before],
                )
                .map_err(pg_err)?
                .iter()
                .map(|r| parse::<WorkClaimStep>(&r.try_get::<_, String>(0).map_err(pg_err)?))
                .collect::<Result<Vec<_>, ClaimError>>()
        })?;
        Ok(older.into_iter().chain(newest).collect())
    }

    fn write_work_claims(&self, writes: &[WorkClaimWrite]) -> Result<Vec<Commit>, ClaimError> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        let inner = &self.inner;
        let result = inner.claim_round(writes).and_then(|(out, lost)| {
            // Redis lost the namespace: those writes were not written. Restore and answer
            // them as conflicts, as a master commit does: restored versions moved on by
            // EPOCH_RESTORE_GAP, so a write decided before the loss could only conflict; the
            // caller reads again and decides on the restored state.
            if lost {
                inner.restore_from_postgres()?;
            }
            Ok(out)
        });
        // Even after an error, earlier writes of the batch may be queued for Postgres.
        inner.after_write();
        result
    }

    fn due_claims(&self, project: &str, as_of: Millis, limit: usize) -> Result<Vec<WorkClaim>, ClaimError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let inner = &self.inner;
        let due = inner.keys.due(project);
        let count = i64::try_from(limit).unwrap_or(i64::MAX);
        let replies = inner.read_ready(|p| {
            p.cmd("ZRANGEBYSCORE").arg(&due).arg("-inf").arg(as_of).arg("LIMIT").arg(0).arg(count);
        })?;
        let members = text_list("due index", &only("due index", replies)?)?;
        let mut rows = Vec::with_capacity(members.len());
        for chunk in members.chunks(PIPELINE_CHUNK) {
            let mut p = redis::pipe();
            for m in chunk {
                let (channel, task) = split_member(m)?;
                p.cmd("HGET").arg(inner.keys.claims(project, &channel)).arg(task);
            }
            let replies: Vec<Value> = inner.redis.run_idempotent(|c| p.query(c))?;
            for v in &replies {
                // Two reads, not one snapshot: a row written in between may have vanished or
                // stopped being due (an owner touch, a release). Only rows due now count.
                if let Some(row) = from_json::<WorkClaim>("due claim", v)?
                    && row.due_at().is_some_and(|d| d <= as_of)
                {
                    rows.push(row);
                }
            }
        }
        // The index orders by score, then by escaped member; order as the rows say.
        rows.sort_by(|a, b| (a.due_at(), &a.channel, &a.task).cmp(&(b.due_at(), &b.channel, &b.task)));
        Ok(rows)
    }

    fn projects_with_due(&self, as_of: Millis) -> Result<Vec<String>, ClaimError> {
        let inner = &self.inner;
        let set = inner.keys.due_projects();
        let replies = inner.read_ready(|p| {
            p.cmd("SMEMBERS").arg(&set);
        })?;
        let projects = text_list("projects with due claims", &only("projects with due claims", replies)?)?;
        let mut out = Vec::new();
        for chunk in projects.chunks(PIPELINE_CHUNK) {
            let mut p = redis::pipe();
            for project in chunk {
                p.cmd("ZRANGEBYSCORE").arg(inner.keys.due(project)).arg("-inf").arg(as_of).arg("LIMIT").arg(0).arg(1);
            }
            let replies: Vec<Value> = inner.redis.run_idempotent(|c| p.query(c))?;
            for (project, first) in chunk.iter().zip(&replies) {
                if !as_array("due index", first)?.is_empty() {
                    out.push(project.clone());
                }
            }
        }
        out.sort();
        Ok(out)
    }

    fn focus_leases(&self, project: &str) -> Result<Vec<FocusLease>, ClaimError> {
        let key = self.inner.keys.focus(project);
        let replies = self.inner.read_ready(|p| {
            p.cmd("HVALS").arg(&key);
        })?;
        let mut leases: Vec<FocusLease> = json_list("focus leases", &only("focus leases", replies)?)?;
        leases.sort_by(|a, b| a.seat.cmp(&b.seat));
        Ok(leases)
    }

    fn put_focus(&self, write: FocusWrite<'_>) -> Result<Commit, ClaimError> {
        let FocusWrite { lease, replaces, audit, proof } = write;
        let inner = &self.inner;
        let k = &inner.keys;
        let op = uuid::Uuid::new_v4().to_string();
        let (json, audit_json) = (to_json(lease)?, to_json(audit)?);
        let mut inv = inner.work.focus.prepare_invoke();
        let (request_key, request, request_ms) = request_args(k, audit)?;
        inv.key(k.ready()).key(k.focus(&lease.project)).key(k.focus_version(&lease.project)).key(k.queue());
        inv.key(k.queue_bytes()).key(k.ctl(&lease.project)).key(request_key);
        inv.arg(&lease.seat).arg(&json).arg(&op).arg(&lease.project).arg(&audit_json);
        inv.arg(replaces.map_or(String::new(), |s| s.to_string()));
        let (max_rows, max_bytes) = inner.bounds();
        inv.arg(max_rows).arg(max_bytes);
        inv.arg(proof.map_or("", |p| p.identity.as_str())).arg(proof.map_or("", |p| p.token_hash.as_str()));
        inv.arg(request).arg(request_ms);
        match inner.write_or_restore("focus", || inner.redis.run_write(|c| inv.invoke::<Value>(c)))? {
            Reply::Unproven => Err(proof.map_or_else(
                || ClaimError::store("redis: an unproven focus write carried no proof"),
                |p| seat_unproven(&lease.project, p),
            )),
            Reply::Ok => Ok(Commit::Done(0)),
            Reply::Conflict => Ok(Commit::Conflict),
            Reply::Full => Err(inner.queue_full(&audit.verb)),
            _ => Err(ClaimError::store("redis: unexpected reply to focus")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::pg::Payload;
    use super::*;

    #[test]
    fn due_members_round_trip_and_never_collide() {
        let names = ["", "a", ":", "a:b", "%", "%3A", "%25", "a%3Ab", "::%%", "x:%3A:%25y"];
        let mut seen = HashSet::new();
        for channel in names {
            for task in names {
                let m = due_member(channel, task);
                assert_eq!(split_member(&m).unwrap(), (channel.to_string(), task.to_string()), "{m:?}");
                assert!(seen.insert(m.clone()), "{channel:?}/{task:?} shares member {m:?}");
            }
        }
        assert!(split_member("no-separator").is_err());
    }

    #[test]
    fn unescaping_reverses_escaping() {
        for s in ["", "plain", "%", "%%", ":", "%3A", "%253A", "a:%25:b", "%3%A"] {
            assert_eq!(unesc(&esc(s)), s);
        }
    }

    #[test]
    fn work_keys_never_run_together() {
        let k = super::super::Keys::new("ns");
        assert_ne!(k.history("a:hist:b", "c", "d"), k.history("a", "b", "c:d"));
        assert_ne!(k.history("p", "a:b", "c"), k.history("p", "a", "b:c"));
        assert_ne!(k.claims("p", "c"), k.channels("p"));
        assert_ne!(k.focus("p"), k.focus_version("p"));
        assert!(k.due_projects().starts_with("{ns}:") && k.due("p").starts_with("{ns}:"));
    }

    #[test]
    fn queue_payloads_decode() {
        let row = WorkClaim {
            project: "p".into(),
            channel: "c".into(),
            task: "t".into(),
            owner: Some("a".into()),
            status: crate::claim::work_claims::WorkClaimStatus::Claimed,
            version: 3,
            deputy: None,
            ttl_minutes: Some(5),
            next_step: Some("x".into()),
            handoff_from: None,
            last_owner_touch: Some(1),
            owner_since: Some(1),
            claimed_at: Some(1),
            updated_at: 1,
        };
        let step = WorkClaimStep { at: 1, actor: "seat:a".into(), action: "take".into(), claim: row.clone() };
        let f: HashMap<String, String> =
            [("claim", to_json(&row).unwrap()), ("step", to_json(&step).unwrap()), ("cursor", "7".into())]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
        match Payload::decode(&f).unwrap() {
            Some(Payload::Claim { row: r, step: s, cursor, .. }) => {
                assert_eq!((*r, *s, cursor), (row.clone(), step, 7))
            }
            other => panic!("{other:?}"),
        }
        assert!(Payload::decode(&HashMap::new()).unwrap().is_none(), "an audit-only entry");
        let no_step: HashMap<String, String> = [("claim".to_string(), to_json(&row).unwrap())].into();
        assert!(Payload::decode(&no_step).is_err());
    }

    #[test]
    fn the_claim_script_reads_the_version_serde_writes() {
        // CLAIM_LUA reads `"version":<digits>` from the row's JSON text: serde must write it
        // so, and a name holding that text must not come first.
        let row = WorkClaim {
            project: "\"version\":9".into(),
            channel: "c".into(),
            task: "t\"version\":8".into(),
            owner: None,
            status: crate::claim::work_claims::WorkClaimStatus::Released,
            version: 12,
            deputy: None,
            ttl_minutes: None,
            next_step: Some("\"version\":7".into()),
            handoff_from: None,
            last_owner_touch: None,
            owner_since: None,
            claimed_at: None,
            updated_at: 1,
        };
        let json = to_json(&row).unwrap();
        let at = json.find("\"version\":").unwrap();
        assert!(json[at..].starts_with("\"version\":12,"), "{json}");
    }
}
