//! The Lua scripts of a commit and of the queue, and the arguments they read. Every key a
//! script touches carries the namespace's hash tag, so one script may touch all of them.

use std::collections::HashMap;

use super::keys::Keys;
use crate::claim::error::ClaimError;
use crate::claim::model::{AuditEntry, Change, MasterSlot, NewEvent};
use crate::claim::stores::codec::to_json;

/// Inbox events, shared by every script that appends them (prefixed to it by [`with_inbox`]).
///
/// An event is four ARGV entries (session flag, session, kind, payload) after their count
/// (see [`event_args`]); the inbox of the `k`-th is `KEYS[first + k - 1]` (see
/// [`event_keys`]). Ids are explicit, `0-<cursor>`, from the one `{ns}:cursor` counter, so a
/// reader's cursor orders events across inboxes. `inbox_counter` only reads and runs before a
/// script's first write (a Lua error after a write would leave it half-applied);
/// `inbox_append` writes.
pub(super) const INBOX_LUA: &str = r#"
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
pub(super) fn with_inbox(body: &str) -> String {
    [INBOX_LUA, body].concat()
}

/// The answer kept under a request id (`crate::claim::requests`), shared by every write
/// script (prefixed to it by [`with_request`]): the script's last KEY is the record's key,
/// its last two ARGV the record (`''` when the verb carries no id) and its lifetime in ms
/// (see [`request_args`]). `request_seen` runs before a script's first write: a live record
/// means another attempt with the same id was applied, and this one must write nothing.
pub(super) const REQUEST_LUA: &str = r#"
local function request_seen()
  return ARGV[#ARGV - 1] ~= '' and redis.call('EXISTS', KEYS[#KEYS]) == 1
end
local function request_keep()
  if ARGV[#ARGV - 1] ~= '' then redis.call('SET', KEYS[#KEYS], ARGV[#ARGV - 1], 'PX', ARGV[#ARGV]) end
end
"#;

/// A write script: [`REQUEST_LUA`]'s functions, then its body.
pub(super) fn with_request(body: &str) -> String {
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
pub(super) const QUEUE_LUA: &str = r#"
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
pub(super) fn with_queue(body: &str) -> String {
    [QUEUE_LUA, body].concat()
}

/// Enqueues an audit row on its own (a failed verb's, a prune's) unless the queue is full.
/// KEYS: queue, byte count. ARGV: max rows, max bytes, then the entry's fields. 1 when
/// enqueued, 0 when dropped at the bound.
pub(super) const AUDIT_LUA: &str = r#"
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
pub(super) const DEQUEUE_LUA: &str = r#"
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
pub(super) fn entry_bytes(fields: &HashMap<String, String>) -> u64 {
    fields.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum()
}

/// The request record's key and arguments as [`REQUEST_LUA`] reads them: (key, record
/// text or `''`, lifetime in ms). Without a record the key is a placeholder in the
/// namespace's hash slot that no script touches.
pub(super) fn request_args(keys: &Keys, audit: &AuditEntry) -> Result<(String, String, i64), ClaimError> {
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
pub(super) const COMMIT_LUA: &str = r#"
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
pub(super) const SNAPSHOT_LUA: &str = r#"
return {redis.call('HGETALL', KEYS[1]), redis.call('HVALS', KEYS[2]), redis.call('EXISTS', KEYS[3])}
"#;

/// Rebuilds one project from Postgres, only if its head is still absent (another replica
/// may have restored it and moved on). KEYS: head, ctl. ARGV: version, epoch, master flag,
/// master session id, master identity, `n` enrolled identity (name, JSON) pairs, then
/// controller (session id, JSON) pairs.
pub(super) const RESTORE_LUA: &str = r#"
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
pub(super) const RAISE_CURSOR_LUA: &str = r#"
if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
end
return 0
"#;

/// Releases the drain lock only if this holder still owns it. KEYS: lock. ARGV: token.
pub(super) const UNLOCK_LUA: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"#;

/// Extends the drain lock's lease only if this holder still owns it. KEYS: lock. ARGV:
/// token, lease in ms. 1 when renewed, 0 when another holder has it (or nobody).
pub(super) const RENEW_LUA: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"#;

/// The commit script's arguments after the five fixed ones (see [`COMMIT_LUA`]).
pub(super) fn change_args(inv: &mut redis::ScriptInvocation<'_>, change: &Change) -> Result<(), ClaimError> {
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
pub(super) fn event_keys(keys: &Keys, project: &str, events: &[NewEvent]) -> Vec<String> {
    events.iter().map(|e| keys.inbox(project, &e.recipient)).collect()
}

/// The events as [`INBOX_LUA`] reads them: their count, then (session flag, session, kind,
/// payload) each.
pub(super) fn event_args(events: &[NewEvent]) -> Vec<String> {
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
