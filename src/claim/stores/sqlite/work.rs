//! Seed 002's work claims in the embedded store.
//!
//! Each row carries its own version; a write is an `UPDATE ... WHERE version = expected`
//! (or an `INSERT` that must not collide), so the compare-and-set is one statement and a
//! batch of sweep writes commits in one `BEGIN IMMEDIATE` transaction without any write
//! ever applying on top of a row it did not decide from.

use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::de::DeserializeOwned;

use super::{SqliteStore, db_err, insert_audit, insert_event};
use crate::claim::error::ClaimError;
use crate::claim::model::{AuditEntry, Millis};
use crate::claim::secret::token_hash_matches;
use crate::claim::stores::{Commit, FocusWrite, SeatProof, WorkClaimWrite, WorkStore, seat_unproven};
use crate::claim::stores::{from_json as parse, to_i64, to_json as body};
use crate::claim::work_claims::{Channel, FocusLease, WorkClaim, WorkClaimStep};

fn parse_all<T: DeserializeOwned>(rows: rusqlite::Result<Vec<String>>) -> Result<Vec<T>, ClaimError> {
    rows.map_err(db_err)?.iter().map(|t| parse(t)).collect()
}

/// One compare-and-set claim write inside the caller's transaction. The version check is
/// part of the `UPDATE`'s `WHERE` (or the `INSERT`'s primary key), so nothing else in the
/// write happens unless the row is still the one the decision read.
fn apply_claim_write(tx: &rusqlite::Connection, w: &WorkClaimWrite, inbox_keep: u64) -> Result<Commit, ClaimError> {
    let r = &w.row;
    let due = r.due_at();
    let text = body(r)?;
    let written = if w.expected_version == 0 {
        tx.prepare_cached(
            "INSERT INTO claims (project, channel, task, version, due_at, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT DO NOTHING",
        )
        .and_then(|mut s| s.execute(params![r.project, r.channel, r.task, to_i64(r.version), due, text]))
    } else {
        tx.prepare_cached(
            "UPDATE claims SET version = ?5, due_at = ?6, body = ?7
             WHERE project = ?1 AND channel = ?2 AND task = ?3 AND version = ?4",
        )
        .and_then(|mut s| {
            s.execute(params![r.project, r.channel, r.task, to_i64(w.expected_version), to_i64(r.version), due, text])
        })
    }
    .map_err(db_err)?;
    if written == 0 {
        return Ok(Commit::Conflict);
    }
    let step = body(&w.step())?;
    tx.prepare_cached("INSERT INTO claim_history (project, channel, task, body) VALUES (?1, ?2, ?3, ?4)")
        .and_then(|mut s| s.execute(params![r.project, r.channel, r.task, step]))
        .map_err(db_err)?;
    for e in &w.events {
        insert_event(tx, &r.project, e, w.audit.at, inbox_keep)?;
    }
    insert_audit(tx, &w.audit)?;
    Ok(Commit::Done(r.version))
}

impl WorkStore for SqliteStore {
    fn insert_channel(&self, channel: &Channel, audit: &AuditEntry) -> Result<(), ClaimError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db_err)?;
        let n = tx
            .execute(
                "INSERT INTO channels (project, channel, body) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                params![channel.project, channel.channel, body(channel)?],
            )
            .map_err(db_err)?;
        if n == 0 {
            return Err(ClaimError::ChannelExists(channel.channel.clone()));
        }
        insert_audit(&tx, audit)?;
        tx.commit().map_err(db_err)
    }

    fn channel(&self, project: &str, channel: &str) -> Result<Option<Channel>, ClaimError> {
        let text: Option<String> = self
            .lock()
            .query_row("SELECT body FROM channels WHERE project = ?1 AND channel = ?2", [project, channel], |r| {
                r.get(0)
            })
            .optional()
            .map_err(db_err)?;
        text.map(|t| parse(&t)).transpose()
    }

    fn work_claim(&self, project: &str, channel: &str, task: &str) -> Result<Option<WorkClaim>, ClaimError> {
        let text: Option<String> = self
            .lock()
            .prepare_cached("SELECT body FROM claims WHERE project = ?1 AND channel = ?2 AND task = ?3")
            .and_then(|mut s| s.query_row([project, channel, task], |r| r.get(0)).optional())
            .map_err(db_err)?;
        text.map(|t| parse(&t)).transpose()
    }

    fn work_claims(&self, project: &str, channel: &str) -> Result<Vec<WorkClaim>, ClaimError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached("SELECT body FROM claims WHERE project = ?1 AND channel = ?2 ORDER BY task")
            .map_err(db_err)?;
        parse_all(stmt.query_map([project, channel], |r| r.get(0)).and_then(|rows| rows.collect()))
    }

    fn work_claim_history(&self, project: &str, channel: &str, task: &str) -> Result<Vec<WorkClaimStep>, ClaimError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT body FROM claim_history WHERE project = ?1 AND channel = ?2 AND task = ?3 ORDER BY id",
            )
            .map_err(db_err)?;
        parse_all(stmt.query_map([project, channel, task], |r| r.get(0)).and_then(|rows| rows.collect()))
    }

    fn write_work_claims(&self, writes: &[WorkClaimWrite]) -> Result<Vec<Commit>, ClaimError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db_err)?;
        for w in writes {
            if let Some(p) = &w.proof {
                check_seat_proof(&tx, &w.row.project, p)?;
            }
        }
        let out = writes.iter().map(|w| apply_claim_write(&tx, w, self.inbox_keep())).collect::<Result<Vec<_>, _>>()?;
        tx.commit().map_err(db_err)?;
        Ok(out)
    }

    fn due_claims(&self, project: &str, as_of: Millis, limit: usize) -> Result<Vec<WorkClaim>, ClaimError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT body FROM claims WHERE project = ?1 AND due_at IS NOT NULL AND due_at <= ?2
                 ORDER BY due_at, channel, task LIMIT ?3",
            )
            .map_err(db_err)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        parse_all(stmt.query_map(params![project, as_of, limit], |r| r.get(0)).and_then(|rows| rows.collect()))
    }

    fn projects_with_due(&self, as_of: Millis) -> Result<Vec<String>, ClaimError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT DISTINCT project FROM claims WHERE due_at IS NOT NULL AND due_at <= ?1 ORDER BY project",
            )
            .map_err(db_err)?;
        stmt.query_map([as_of], |r| r.get(0)).and_then(|rows| rows.collect()).map_err(db_err)
    }

    fn focus_leases(&self, project: &str) -> Result<Vec<FocusLease>, ClaimError> {
        let conn = self.lock();
        let mut stmt =
            conn.prepare_cached("SELECT body FROM focus_leases WHERE project = ?1 ORDER BY seat").map_err(db_err)?;
        parse_all(stmt.query_map([project], |r| r.get(0)).and_then(|rows| rows.collect()))
    }

    fn put_focus(&self, write: FocusWrite<'_>) -> Result<Commit, ClaimError> {
        let FocusWrite { lease, replaces, audit, proof } = write;
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db_err)?;
        if let Some(p) = proof {
            check_seat_proof(&tx, &lease.project, p)?;
        }
        let text = body(lease)?;
        let n = match replaces {
            None => tx.execute(
                "INSERT INTO focus_leases (project, seat, started_at, body) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (project, seat) DO UPDATE SET started_at = excluded.started_at, body = excluded.body",
                params![lease.project, lease.seat, lease.started_at, text],
            ),
            Some(started_at) => tx.execute(
                "UPDATE focus_leases SET started_at = ?4, body = ?5 WHERE project = ?1 AND seat = ?2 AND started_at = ?3",
                params![lease.project, lease.seat, started_at, lease.started_at, text],
            ),
        }
        .map_err(db_err)?;
        if n == 0 {
            return Ok(Commit::Conflict);
        }
        insert_audit(&tx, audit)?;
        tx.commit().map_err(db_err)?;
        Ok(Commit::Done(0))
    }
}

/// A seat write's proof, read inside the write's own `BEGIN IMMEDIATE` transaction: no
/// `identity remove`, deregistration or re-registration can commit between this read and the
/// claim write (issue 28 point 5). Every row of the identity is compared, match or not.
fn check_seat_proof(tx: &rusqlite::Connection, project: &str, proof: &SeatProof) -> Result<(), ClaimError> {
    let hashes: Vec<String> = tx
        .prepare_cached("SELECT token_hash FROM controllers WHERE project = ?1 AND identity = ?2")
        .and_then(|mut s| s.query_map(params![project, proof.identity], |r| r.get(0))?.collect())
        .map_err(db_err)?;
    let proven = hashes.iter().fold(false, |found, h| token_hash_matches(h, &proof.token_hash) | found);
    if proven { Ok(()) } else { Err(seat_unproven(project, proof)) }
}
