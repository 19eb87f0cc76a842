//! Projects' maintenance pauses in the embedded store: one row per project, written by
//! compare-and-set on its version in one `BEGIN IMMEDIATE` transaction with its audit row.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::{SqliteStore, db_err, insert_audit};
use crate::claim::error::ClaimError;
use crate::claim::model::AuditEntry;
use crate::claim::stores::{Commit, PauseStore, from_json as parse, to_i64, to_json};
use crate::claim::work_claims::ProjectPause;

impl PauseStore for SqliteStore {
    fn pause(&self, project: &str) -> Result<Option<ProjectPause>, ClaimError> {
        let text: Option<String> = self
            .lock()
            .prepare_cached("SELECT body FROM pauses WHERE project = ?1")
            .and_then(|mut s| s.query_row([project], |r| r.get(0)).optional())
            .map_err(db_err)?;
        text.map(|t| parse(&t)).transpose()
    }

    fn pauses(&self) -> Result<Vec<ProjectPause>, ClaimError> {
        // Only `/metrics` reads every pause: on the read connection (issue 39 point 6).
        let conn = self.read();
        let mut stmt = conn.prepare_cached("SELECT body FROM pauses ORDER BY project").map_err(db_err)?;
        let rows: Vec<String> = stmt.query_map([], |r| r.get(0)).and_then(|r| r.collect()).map_err(db_err)?;
        rows.iter().map(|t| parse(t)).collect()
    }

    fn put_pause(&self, pause: &ProjectPause, expected_version: u64, audit: &AuditEntry) -> Result<Commit, ClaimError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db_err)?;
        let body = to_json(pause)?;
        // The version check is the statement's own: an INSERT that must not collide, or an
        // UPDATE of the row still at the version the decision read.
        let written = if expected_version == 0 {
            tx.execute(
                "INSERT INTO pauses (project, version, body) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                params![pause.project, to_i64(pause.version), body],
            )
        } else {
            tx.execute(
                "UPDATE pauses SET version = ?3, body = ?4 WHERE project = ?1 AND version = ?2",
                params![pause.project, to_i64(expected_version), to_i64(pause.version), body],
            )
        }
        .map_err(db_err)?;
        if written == 0 {
            return Ok(Commit::Conflict);
        }
        insert_audit(&tx, audit)?;
        tx.commit().map_err(db_err)?;
        Ok(Commit::Done(pause.version))
    }
}
