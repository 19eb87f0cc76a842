//! Restore (see the parent's documentation): every project Postgres has and Redis lacks is
//! rebuilt in Redis, epochs and claim versions moved [`EPOCH_RESTORE_GAP`] beyond what
//! Postgres saw, before `{ns}:ready` lets any commit run.

use std::collections::HashMap;

use redis::Value;

use super::errors::{pg_err, to_u64};
use super::replies::{as_array, as_int, as_text, bad_reply, pairs, parse_u64};
use super::{EPOCH_RESTORE_GAP, Inner};
use crate::claim::error::ClaimError;
use crate::claim::model::{Controller, EnrolledIdentity, MasterRef, MasterSlot, Snapshot};
use crate::claim::stores::codec::{from_json, json_err, to_json};

/// Runs `sql`, whose first column is the project and the rest one `T` (read by `decode`),
/// and groups the records by project in the query's order: the controllers and the
/// enrolled identities restore the same way.
fn grouped_by_project<T>(
    tx: &mut postgres::Transaction<'_>,
    sql: &str,
    decode: impl Fn(&postgres::Row) -> Result<T, postgres::Error>,
) -> Result<HashMap<String, Vec<T>>, ClaimError> {
    let mut grouped: HashMap<String, Vec<T>> = HashMap::new();
    for r in tx.query(sql, &[]).map_err(pg_err)? {
        let project: String = r.try_get(0).map_err(pg_err)?;
        grouped.entry(project).or_default().push(decode(&r).map_err(pg_err)?);
    }
    Ok(grouped)
}

impl Inner {
    pub(super) fn ready(&self) -> Result<bool, ClaimError> {
        let key = self.keys.ready();
        self.redis.run_idempotent(|c| redis::cmd("EXISTS").arg(&key).query::<i64>(c)).map(|n| n > 0)
    }

    pub(super) fn restore_from_postgres(&self) -> Result<usize, ClaimError> {
        type Head = (String, i64, i64, Option<String>, Option<String>, i64);
        let (heads, mut by_project, mut enrolled, work) = self.pg.run(|conn| {
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
            let rows = grouped_by_project(
                &mut tx,
                &self.pg.sql(
                    "SELECT project, session_id, identity, surface, machine_id, token_hash, is_master,
                            registered_at, last_heartbeat
                     FROM @.controller_status ORDER BY project, session_id",
                ),
                |r| Ok(record_from_row!(Controller, r.try_get, 1)),
            )?;
            let identities = grouped_by_project(
                &mut tx,
                &self.pg.sql(
                    "SELECT project, identity, key_hash, enrolled_at, key_issued_at
                     FROM @.identities ORDER BY project, identity",
                ),
                |r| Ok(record_from_row!(EnrolledIdentity, r.try_get, 1)),
            )?;
            let work = self.read_work(&mut tx)?;
            tx.commit().map_err(pg_err)?;
            Ok((heads, rows, identities, work))
        })?;
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

    pub(super) fn read_snapshot(&self, project: &str) -> Result<(Snapshot, bool), ClaimError> {
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
}
