//! Projects' maintenance pauses in the Redis + Postgres store (issue 30): the record lives
//! in the hash `{ns}:pauses` (project → JSON), written by one Lua script that compares its
//! version, writes it and enqueues its Postgres write (`project_pauses`, version-guarded)
//! atomically. A restore puts back every record Redis lacks (`work.rs`, `restore_work`), so
//! a pause survives a Redis that lost its data.
//!
//! Postgres is written second: a resume Redis accepted and lost before Postgres saw it
//! comes back as the pause it ended (the project is paused again and releases wait: the
//! side that keeps claims), and a pause lost the same way is gone (the same loss window
//! every write of this store has; see the parent's documentation).

use std::sync::LazyLock;

use redis::{Script, Value};

use super::RedisPgStore;
use super::scripts::{request_args, with_queue, with_request};
use super::work::{Reply, from_json, json_list, only, with_stored_version};
use crate::claim::error::ClaimError;
use crate::claim::model::AuditEntry;
use crate::claim::stores::{Commit, PauseStore, to_json};
use crate::claim::work_claims::ProjectPause;

/// Writes a project's pause record if the stored one is still at the expected version.
/// KEYS: ready marker, pauses hash, pg queue, the queue's byte count, request record key.
/// ARGV: project, expected version ('0': none stored), JSON, op id, audit JSON, the queue's
/// bounds (max rows, max bytes), request record, lifetime.
///
/// The stored version is read from the JSON text, as the claim script does
/// (`stored_version`): `version` is the record's first key and serde escapes every `"`
/// inside a string, so `"version":` followed by digits is the record's own, and comparing
/// digit strings is exact for every u64. Every check runs before the first write.
const PAUSE_LUA: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return 'lost' end
local current = stored_version(KEYS[2], ARGV[1])
if not current then return redis.error_reply('pause of ' .. ARGV[1] .. ' has no version') end
if current ~= ARGV[2] then return 'conflict' end
if request_seen() then return 'replayed' end
if not queue_room(KEYS[3], KEYS[4], ARGV[6], ARGV[7]) then return 'full' end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
queue_add(KEYS[3], KEYS[4], {'op', ARGV[4], 'project', ARGV[1], 'audit', ARGV[5], 'pause', ARGV[3]})
request_keep()
return 'ok'
"#;

static PAUSE: LazyLock<Script> =
    LazyLock::new(|| Script::new(&with_request(&with_queue(&with_stored_version(PAUSE_LUA)))));

impl PauseStore for RedisPgStore {
    fn pause(&self, project: &str) -> Result<Option<ProjectPause>, ClaimError> {
        let key = self.inner.keys.pauses();
        let replies = self.inner.read_ready(|p| {
            p.cmd("HGET").arg(&key).arg(project);
        })?;
        from_json("pause", &only("pause", replies)?)
    }

    fn pauses(&self) -> Result<Vec<ProjectPause>, ClaimError> {
        let key = self.inner.keys.pauses();
        let replies = self.inner.read_ready(|p| {
            p.cmd("HVALS").arg(&key);
        })?;
        let mut all: Vec<ProjectPause> = json_list("pauses", &only("pauses", replies)?)?;
        all.sort_by(|a, b| a.project.cmp(&b.project));
        Ok(all)
    }

    fn put_pause(&self, pause: &ProjectPause, expected_version: u64, audit: &AuditEntry) -> Result<Commit, ClaimError> {
        let inner = &self.inner;
        let k = &inner.keys;
        let op = uuid::Uuid::new_v4().to_string();
        let (json, audit_json) = (to_json(pause)?, to_json(audit)?);
        let (request_key, request, request_ms) = request_args(k, audit)?;
        let mut inv = PAUSE.prepare_invoke();
        inv.key(k.ready()).key(k.pauses()).key(k.queue()).key(k.queue_bytes()).key(request_key);
        inv.arg(&pause.project).arg(expected_version).arg(&json).arg(&op).arg(&audit_json);
        let (max_rows, max_bytes) = inner.bounds();
        inv.arg(max_rows).arg(max_bytes).arg(request).arg(request_ms);
        match inner.write_or_restore("pause", || inner.redis.run_write(|c| inv.invoke::<Value>(c)))? {
            Reply::Ok => Ok(Commit::Done(pause.version)),
            Reply::Conflict => Ok(Commit::Conflict),
            Reply::Full => Err(inner.queue_full(&audit.verb)),
            Reply::Exists | Reply::Lost | Reply::Unproven => {
                Err(ClaimError::store("redis: unexpected reply to a pause write"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_script_reads_the_version_serde_writes() {
        // PAUSE_LUA reads `"version":<digits>` from the JSON text: serde must write the
        // record's own version first, and no name or reason holding that text may come
        // before it.
        let p = ProjectPause {
            version: 12,
            project: "\"version\":9".into(),
            reason: "\"version\":8".into(),
            since: 1,
            until: None,
            paused_by: "admin".into(),
            resumed_at: None,
            resumed_by: None,
        };
        let json = to_json(&p).unwrap();
        assert!(json.starts_with("{\"version\":12,"), "{json}");
        assert_eq!(json.matches("\"version\":").count(), 1, "{json}");
    }
}
