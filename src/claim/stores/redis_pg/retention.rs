//! Retention on Redis + Postgres (see [`crate::claim::retention`]).
//!
//! * Postgres: audit rows older than the cutoff, deleted in batches inside transactions that
//!   set `writerctl.audit_retention` (the append-only trigger lets only those delete), claim
//!   history steps older than the cutoff but each task's newest, and idle
//!   `operator_attempts` rows.
//! * Redis: each claim's history list loses the same steps from its head
//!   ([`TRIM_HISTORY_LUA`], never the last one).
//! * Redis: every inbox stream (found by `SCAN ... TYPE stream`, never `KEYS`) is trimmed by
//!   one script ([`TRIM_INBOX_LUA`]) that removes its events older than the age cutoff and
//!   beyond the newest N, and raises its trim mark in `{ns}:inbox_trims` in the same atomic
//!   step; the refused queue entries (`{ns}:pgq:dead`, audit rows Postgres would not take)
//!   older than the audit cutoff are deleted.
//!
//! Inbox ids are `0-<cursor>`, not times, so `XTRIM MINID` cannot cut by age directly: the
//! script reads from the head (the oldest, in cursor order) while `at` is before the cutoff
//! and trims by `MINID` just past the last such entry. Cursors and times grow together (both
//! are taken inside the commit), so the head holds the oldest events.

use redis::{Script, Value};

use super::Inner;
use super::errors::pg_err;
use super::masters::{glob_escape, scan_keys};
use super::replies::{as_int, stream_entries};
use super::work::PIPELINE_CHUNK;
use crate::claim::error::ClaimError;
use crate::claim::model::AuditEntry;
use crate::claim::retention::{Cutoffs, PRUNE_BATCH, Pruned, Sizes};
use crate::claim::stores::{from_json, to_i64};

/// Entries read per step of a scan through a stream.
const STREAM_PAGE: usize = 1000;

/// Trims one inbox. KEYS: the inbox, `{ns}:inbox_trims`. ARGV: age cutoff in ms ('' for none),
/// how many newest events to keep ('' for no limit). Returns how many entries it removed.
const TRIM_INBOX_LUA: &str = r#"
local key = KEYS[1]
local through = nil
local function seq(id) return tonumber(string.match(id, '^0%-(%d+)$')) end
if ARGV[2] ~= '' then
  local extra = redis.call('XLEN', key) - tonumber(ARGV[2])
  if extra > 0 then
    local r = redis.call('XRANGE', key, '-', '+', 'COUNT', extra)
    through = seq(r[#r][1])
  end
end
if ARGV[1] ~= '' then
  local cutoff = tonumber(ARGV[1])
  local start = '-'
  local done = false
  while not done do
    local r = redis.call('XRANGE', key, start, '+', 'COUNT', 100)
    for _, e in ipairs(r) do
      local at = nil
      for i = 1, #e[2], 2 do if e[2][i] == 'at' then at = tonumber(e[2][i + 1]) end end
      if at == nil or at >= cutoff then done = true; break end
      local s = seq(e[1])
      if through == nil or s > through then through = s end
    end
    if #r < 100 then done = true else start = '(' .. r[#r][1] end
  end
end
if through == nil then return 0 end
local removed = redis.call('XTRIM', key, 'MINID', string.format('0-%d', through + 1))
local mark = tonumber(redis.call('HGET', KEYS[2], key) or '0')
if through > mark then redis.call('HSET', KEYS[2], key, string.format('%d', through)) end
return removed
"#;

/// Trims one claim's history list. KEYS: the list. ARGV: the cutoff in ms. Removes steps from
/// the head (the oldest) while their `at` is before the cutoff, never the last one. Returns
/// how many it removed.
const TRIM_HISTORY_LUA: &str = r#"
local n = redis.call('LLEN', KEYS[1])
local cutoff = tonumber(ARGV[1])
local drop = 0
while drop < n - 1 do
  local ok, step = pcall(cjson.decode, redis.call('LINDEX', KEYS[1], drop))
  if not ok or type(step.at) ~= 'number' or step.at >= cutoff then break end
  drop = drop + 1
end
if drop > 0 then redis.call('LTRIM', KEYS[1], drop, -1) end
return drop
"#;

/// The namespace's keys of one kind under `{ns}:p:`: `{ns}:p:<project>:<segment>:<names>` of
/// Redis type `kind`, with `names` components after the segment (every name escaped, so no
/// `:` inside one).
fn project_keys(inner: &Inner, segment: &str, names: usize, kind: &str) -> Result<Vec<String>, ClaimError> {
    let prefix = format!("{}:p:", inner.keys.base);
    let pattern = format!("{}*:{segment}:*", glob_escape(&prefix));
    Ok(scan_keys(inner, &pattern, Some(kind))?
        .into_iter()
        .filter(|k| {
            k.strip_prefix(&prefix).is_some_and(|rest| {
                let parts: Vec<&str> = rest.split(':').collect();
                parts.len() == 2 + names && parts[1] == segment
            })
        })
        .collect())
}

/// The namespace's inbox streams: `{ns}:p:<project>:inbox:<identity>` with both names escaped
/// (no `:` inside), so exactly three segments after `{ns}:p:`.
fn inbox_keys(inner: &Inner) -> Result<Vec<String>, ClaimError> {
    project_keys(inner, "inbox", 1, "stream")
}

/// Applies `cutoffs` to both planes.
pub(super) fn prune(inner: &Inner, cutoffs: &Cutoffs) -> Result<Pruned, ClaimError> {
    let mut out = Pruned::default();
    if cutoffs.inbox_before.is_some() || cutoffs.inbox_keep.is_some() {
        let script = Script::new(TRIM_INBOX_LUA);
        let trims = inner.keys.inbox_trims();
        let age = cutoffs.inbox_before.map_or(String::new(), |b| b.to_string());
        let keep = cutoffs.inbox_keep.map_or(String::new(), |k| k.to_string());
        for key in inbox_keys(inner)? {
            let mut inv = script.prepare_invoke();
            inv.key(&key).key(&trims).arg(&age).arg(&keep);
            // Idempotent: a second run finds nothing more to remove.
            let removed = inner.redis.run_idempotent(|c| inv.invoke::<i64>(c))?;
            out.inbox_entries += u64::try_from(removed).unwrap_or(0);
        }
    }
    if let Some(before) = cutoffs.audit_before {
        // Redis's lists and Postgres's rows hold the same steps; the count reported is
        // Postgres's, like the audit rows'.
        let script = Script::new(TRIM_HISTORY_LUA);
        for key in project_keys(inner, "hist", 2, "list")? {
            let mut inv = script.prepare_invoke();
            inv.key(&key).arg(before);
            inner.redis.run_idempotent(|c| inv.invoke::<i64>(c))?;
        }
        out.history_steps = delete_in_batches(
            inner,
            "DELETE FROM @.claim_history WHERE id IN (
                 SELECT h.id FROM @.claim_history h
                 WHERE h.at < $1 AND h.id < (SELECT max(m.id) FROM @.claim_history m
                     WHERE m.project = h.project AND m.channel = h.channel AND m.task = h.task)
                 LIMIT $2)",
            before,
        )?;
        out.audit_rows += prune_dead_letters(inner, before)?;
        out.audit_rows += delete_in_batches(
            inner,
            "DELETE FROM @.audit WHERE id IN (SELECT id FROM @.audit WHERE at < $1 ORDER BY id LIMIT $2)",
            before,
        )?;
        if out.audit_rows + out.history_steps > 0 {
            vacuum(inner);
        }
    }
    out.attempt_rows = delete_in_batches(
        inner,
        "DELETE FROM @.operator_attempts WHERE operator_id IN
             (SELECT operator_id FROM @.operator_attempts WHERE last_failure_at < $1 LIMIT $2)",
        cutoffs.attempts_before,
    )?;
    Ok(out)
}

/// Makes the space of deleted audit and history rows reusable now. Autovacuum would get
/// there by its own thresholds (a fifth of the table by default), which a table pruned a
/// little every few minutes may take long to reach while its file keeps growing (the soak
/// bench showed it). Plain VACUUM takes no lock that blocks reads or writes. Best effort: a
/// role that does not own the tables cannot, and autovacuum remains.
fn vacuum(inner: &Inner) {
    let pg = &inner.pg;
    let sql = pg.sql("VACUUM @.audit, @.claim_history");
    if let Err(e) = pg.run(|conn| conn.client.batch_execute(&sql).map_err(pg_err)) {
        tracing::warn!(error = %e, "retention: VACUUM after the prune failed; autovacuum will reclaim the space");
    }
}

/// Runs a Postgres `DELETE ... LIMIT $2` (parameter 1: `arg`) until it deletes less than a
/// batch, each batch its own transaction that may delete audit rows.
fn delete_in_batches(inner: &Inner, sql: &str, arg: i64) -> Result<u64, ClaimError> {
    let pg = &inner.pg;
    let sql = pg.sql(sql);
    let batch = to_i64(PRUNE_BATCH as u64);
    let mut total = 0u64;
    loop {
        let n = pg.run(|conn| {
            let mut tx = conn.client.transaction().map_err(pg_err)?;
            tx.batch_execute("SET LOCAL writerctl.audit_retention = 'on'").map_err(pg_err)?;
            let n = tx.execute(&sql, &[&arg, &batch]).map_err(pg_err)?;
            tx.commit().map_err(pg_err)?;
            Ok(n)
        })?;
        total += n;
        if n < PRUNE_BATCH as u64 {
            return Ok(total);
        }
    }
}

/// Deletes refused queue entries whose audit row is older than `before` (entries without a
/// readable audit row are kept for the operator).
fn prune_dead_letters(inner: &Inner, before: i64) -> Result<u64, ClaimError> {
    let dead = inner.keys.dead();
    let mut start = "-".to_string();
    let mut removed = 0u64;
    loop {
        let reply: Value = inner.redis.run_idempotent(|c| {
            redis::cmd("XRANGE").arg(&dead).arg(&start).arg("+").arg("COUNT").arg(STREAM_PAGE).query(c)
        })?;
        let entries = stream_entries("dead letters", &reply)?;
        let old: Vec<&String> = entries
            .iter()
            .filter(|(_, f)| {
                f.get("audit").and_then(|a| from_json::<AuditEntry>(a).ok()).is_some_and(|a| a.at < before)
            })
            .map(|(id, _)| id)
            .collect();
        if !old.is_empty() {
            let n = inner.redis.run_idempotent(|c| redis::cmd("XDEL").arg(&dead).arg(&old).query::<Value>(c))?;
            removed += u64::try_from(as_int("xdel", &n)?).unwrap_or(0);
        }
        match entries.last() {
            Some((id, _)) if entries.len() == STREAM_PAGE => start = format!("({id}"),
            _ => return Ok(removed),
        }
    }
}

/// Audit and attempt rows in Postgres, inbox events over every inbox stream in Redis.
pub(super) fn sizes(inner: &Inner) -> Result<Sizes, ClaimError> {
    let pg = &inner.pg;
    let (audit_rows, attempt_rows, history_steps) = pg.run(|conn| {
        let row = conn
            .client
            .query_one(
                &pg.sql(
                    "SELECT (SELECT count(*) FROM @.audit), (SELECT count(*) FROM @.operator_attempts),
                            (SELECT count(*) FROM @.claim_history)",
                ),
                &[],
            )
            .map_err(pg_err)?;
        let get = |i: usize| row.try_get::<_, i64>(i).map_err(pg_err);
        Ok((get(0)?, get(1)?, get(2)?))
    })?;
    let mut inbox_entries = 0u64;
    for chunk in inbox_keys(inner)?.chunks(PIPELINE_CHUNK) {
        let mut p = redis::pipe();
        for key in chunk {
            p.cmd("XLEN").arg(key);
        }
        let lens: Vec<i64> = inner.redis.run_idempotent(|c| p.query(c))?;
        inbox_entries += lens.iter().map(|&n| u64::try_from(n).unwrap_or(0)).sum::<u64>();
    }
    Ok(Sizes {
        audit_rows: u64::try_from(audit_rows).unwrap_or(0),
        inbox_entries,
        attempt_rows: u64::try_from(attempt_rows).unwrap_or(0),
        history_steps: u64::try_from(history_steps).unwrap_or(0),
    })
}
