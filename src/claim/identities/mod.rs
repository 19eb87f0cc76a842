//! Pure decisions for enrolled identities and their keys (issue 19): `identity add`,
//! `identity rotate`, `identity remove`, and how a write proves its seat. Like
//! [`super::masters`], each reads one [`Snapshot`] and returns the [`Change`] to commit.

use super::error::ClaimError;
use super::masters::invalidate;
use super::model::{Change, EnrolledIdentity, MasterSlot, Millis, Snapshot};
use super::names::refuse_confusable_identity;
use super::secret::token_hash_matches;

/// `identity add`: enrolls `identity` with the hash of a new key. An enrolled identity is
/// never overwritten (`identity_exists`); `identity rotate` issues a new key.
pub fn enroll(
    snap: &Snapshot,
    identity: &str,
    key_hash: String,
    now: Millis,
) -> Result<(Change, EnrolledIdentity), ClaimError> {
    if snap.identity(identity).is_some() {
        return Err(ClaimError::IdentityExists { project: snap.project.clone(), identity: identity.to_string() });
    }
    refuse_confusable_identity(snap, identity)?;
    let row = EnrolledIdentity { identity: identity.to_string(), key_hash, enrolled_at: now, key_issued_at: now };
    let mut change = Change { enroll: vec![row.clone()], ..Change::default() };
    // Issue 28 point 3: enrollment ends open registration. The first identity enrolled in
    // a project makes it a proven project, so every session open registration created in
    // it is deregistered (a squatter does not keep its seat); a later enrollment ends the
    // open sessions that took that identity's name. Their ids are in `change.delete`, which
    // the caller audits.
    let first = snap.identities.is_empty();
    let mut slot = snap.slot.clone();
    invalidate(snap, &mut change, &mut slot, |c| c.open_registered() && (first || c.identity == identity));
    if slot != snap.slot {
        change.slot = Some(slot);
    }
    Ok((change, row))
}

/// `identity rotate`: a new key; the old one is refused from this commit on. Sessions
/// already registered keep their own tokens.
pub fn rotate_key(
    snap: &Snapshot,
    identity: &str,
    key_hash: String,
    now: Millis,
) -> Result<(Change, EnrolledIdentity), ClaimError> {
    let row = EnrolledIdentity { key_hash, key_issued_at: now, ..enrolled(snap, identity)?.clone() };
    Ok((Change { enroll: vec![row.clone()], ..Change::default() }, row))
}

/// What `identity remove` took away.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct Removed {
    /// The identity.
    pub identity: String,
    /// Its sessions, deregistered in the same commit.
    pub sessions: Vec<String>,
    /// Whether one of them was master (the slot is then empty, as after a master's
    /// deregistration: the next registrant becomes master, or an operator claims).
    pub was_master: bool,
    /// The master epoch after the removal.
    pub epoch: u64,
}

/// `identity remove`: its key is refused and its sessions deregistered, in one commit. A
/// master among them leaves the slot empty by the deregistration rule; claims it holds
/// stay where seed 002 sends them (its TTL, its deputy, the steward), since nobody can
/// prove the seat any more.
pub fn remove_identity(snap: &Snapshot, identity: &str) -> Result<(Change, Removed), ClaimError> {
    enrolled(snap, identity)?;
    let sessions: Vec<String> =
        snap.controllers.iter().filter(|c| c.identity == identity).map(|c| c.session_id.clone()).collect();
    let was_master = snap.slot.master.as_ref().is_some_and(|m| m.identity == identity);
    let mut change = Change { delete: sessions.clone(), unenroll: vec![identity.to_string()], ..Change::default() };
    let mut epoch = snap.slot.epoch;
    if was_master {
        epoch += 1;
        change.slot = Some(MasterSlot { master: None, epoch });
    }
    Ok((change, Removed { identity: identity.to_string(), sessions, was_master, epoch }))
}

fn enrolled<'a>(snap: &'a Snapshot, identity: &str) -> Result<&'a EnrolledIdentity, ClaimError> {
    snap.identity(identity)
        .ok_or_else(|| ClaimError::NotFound(format!("identity {identity} is not enrolled in project {}", snap.project)))
}

/// Whether `token_hash` is the token of a controller registered as `identity`: how a claim
/// or focus write proves its seat, and an inbox read its identity (issue 15).
pub fn proves_identity(snap: &Snapshot, identity: &str, token_hash: &str) -> bool {
    // Every row is compared, match or not, so the time taken does not say which row (or
    // whether any) belongs to the identity.
    snap.controllers
        .iter()
        .fold(false, |found, c| (token_hash_matches(&c.token_hash, token_hash) & (c.identity == identity)) | found)
}
