//! Pure decisions for controllers and the master slot (seed 000): each function reads one
//! [`Snapshot`] and returns the [`Change`] to commit, or the seed's error. No I/O, no
//! clock: the caller passes `now`, so every branch is a unit test.

use serde_json::json;

use super::error::ClaimError;
use std::borrow::Cow;

use super::model::{Change, Controller, MasterRef, MasterSlot, Millis, NewEvent, OPEN_SESSION_PREFIX, Snapshot};
use super::names;
use super::secret::{Secret, token_hash_matches};

pub mod requests;

pub use requests::{HandoffRequest, MasterClaimRequest, MasterTarget, OperatorRequest, RegisterRequest};

/// The seed's signal kind; reused, never `MasterChanged` (seed 000 §Signal contract).
pub const MASTER_PREEMPTED: &str = "MasterPreempted";

/// A controller's natural key: register is an UPSERT on it (seed 000 §Dependencies).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ControllerKey {
    /// Its identity.
    pub identity: String,
    /// Its surface.
    pub surface: String,
    /// Its machine.
    pub machine_id: String,
}

impl RegisterRequest {
    /// A registration of `key`, proven by the identity's key and/or the row's current token
    /// (a restart).
    pub fn of(key: &ControllerKey, identity_key: Option<&Secret>, previous_token: Option<&Secret>) -> RegisterRequest {
        RegisterRequest {
            identity: key.identity.clone(),
            surface: key.surface.clone(),
            machine_id: key.machine_id.clone(),
            previous_token: previous_token.map(|t| t.expose().to_string()),
            identity_key: identity_key.map(|k| k.expose().to_string()),
        }
    }

    /// The controller's natural key.
    pub fn key(&self) -> ControllerKey {
        ControllerKey {
            identity: self.identity.clone(),
            surface: self.surface.clone(),
            machine_id: self.machine_id.clone(),
        }
    }
}

/// What a master verb decided.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct MasterOutcome {
    /// The master before the verb (None when the slot was empty).
    #[schema(required = true)]
    pub previous_master: Option<MasterRef>,
    /// The master after it.
    pub new_master: MasterRef,
    /// Rows that lost mastership (claim's `preempted`).
    pub preempted: Vec<MasterRef>,
    /// The epoch after the verb.
    pub epoch: u64,
    /// False when the target already was master: nothing was written, the epoch is unchanged.
    pub changed: bool,
    /// A plan (`--dry-run`, issue 30): `epoch` and `changed` say what the verb would do;
    /// nothing was written.
    #[serde(default)]
    #[schema(required = true)]
    pub dry_run: bool,
}

/// What a registration presents to prove it may act as its identity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegisterProof<'a> {
    /// SHA-256 of the identity key presented (`--identity-key-file`), if any.
    pub key_hash: Option<&'a str>,
    /// SHA-256 of a session token presented: the current token of the row being
    /// re-registered (a restart), if any.
    pub token_hash: Option<&'a str>,
    /// The server runs `--open-registration`: an identity nobody enrolled registers
    /// without proof (a lab). An enrolled identity still needs its key or its row's token.
    pub open: bool,
}

/// Register (or re-register) a controller: keep the row for the same key, rotate its token,
/// count the registration as a heartbeat; with no master, the registrant becomes master.
///
/// The caller proves the identity (issue 19) with the identity's enrolled key, or with the
/// current token of the row it re-registers (a restarted controller); without either the
/// answer is `unauthorized` and never says whether the identity is enrolled or registered.
/// A stale row is therefore never handed to a caller that proved nothing: before, anyone
/// could register a stale master's key and receive its session, `is_master: true` and a
/// fresh token.
///
/// Re-registering a row that is still fresh needs that row's current token even with the
/// key: the live controller keeps its session until it stops heartbeating.
pub fn register(
    snap: &Snapshot,
    key: &ControllerKey,
    new_session_id: String,
    token_hash: String,
    proof: RegisterProof<'_>,
    now: Millis,
    freshness_ms: i64,
) -> Result<(Change, Controller), ClaimError> {
    let existing = snap
        .controllers
        .iter()
        .find(|c| c.identity == key.identity && c.surface == key.surface && c.machine_id == key.machine_id);
    // A coordinator started without --open-registration takes no token of a row open
    // registration created as proof: that row was never proven (issue 28 point 3).
    let token_proves_row = existing.is_some_and(|c| {
        (proof.open || !c.open_registered()) && proof.token_hash.is_some_and(|p| token_hash_matches(&c.token_hash, p))
    });
    let enrolled = snap.identity(&key.identity);
    let key_proves = enrolled.is_some_and(|e| proof.key_hash.is_some_and(|p| token_hash_matches(&e.key_hash, p)));
    let open = proof.open && enrolled.is_none();
    if !(token_proves_row || key_proves || open) {
        return Err(ClaimError::RegistrationUnproven { project: snap.project.clone(), identity: key.identity.clone() });
    }
    if let Some(c) = existing
        && c.is_fresh(now, freshness_ms)
        && !token_proves_row
    {
        return Err(ClaimError::RegistrationHeld { identity: c.identity.clone(), session_id: c.session_id.clone() });
    }
    // Issue 28 point 3: open registration only ever creates a row. Before, an open
    // registrant named a stale row's key and was handed that row — its session id, its
    // `is_master: true` at the old epoch, and a fresh token — so anyone could step into a
    // master that had merely stopped heartbeating, with no change of epoch to fence it.
    if existing.is_some() && !(token_proves_row || key_proves) {
        return Err(ClaimError::RegistrationUnproven { project: snap.project.clone(), identity: key.identity.clone() });
    }
    if existing.is_none() {
        names::refuse_confusable_identity(snap, &key.identity)?;
    }
    let by_open = !(token_proves_row || key_proves);
    let mut change = Change::default();
    let mut slot = snap.slot.clone();
    if !proof.open {
        // A closed coordinator cleans up what open registration left (audited by the caller
        // from `change.delete`).
        let keep = existing.map(|c| c.session_id.as_str());
        invalidate(snap, &mut change, &mut slot, |c| c.open_registered() && Some(c.session_id.as_str()) != keep);
    }
    let mut row = match existing {
        Some(c) => Controller { token_hash, last_heartbeat: now, ..c.clone() },
        None => Controller {
            session_id: if by_open { format!("{OPEN_SESSION_PREFIX}{new_session_id}") } else { new_session_id },
            identity: key.identity.clone(),
            surface: key.surface.clone(),
            machine_id: key.machine_id.clone(),
            token_hash,
            is_master: false,
            registered_at: now,
            last_heartbeat: now,
        },
    };
    if slot.master.is_none() {
        row.is_master = true;
        slot = MasterSlot { master: Some(row.reference()), epoch: slot.epoch + 1 };
    }
    if slot != snap.slot {
        change.slot = Some(slot);
    }
    change.upsert.push(row.clone());
    Ok((change, row))
}

/// Deletes every row `which` selects into `change`, emptying `slot` (a change of master,
/// epoch + 1) when the master is among them, as a deregistration would.
pub(crate) fn invalidate(
    snap: &Snapshot,
    change: &mut Change,
    slot: &mut MasterSlot,
    which: impl Fn(&Controller) -> bool,
) {
    for c in snap.controllers.iter().filter(|c| which(c)) {
        change.delete.push(c.session_id.clone());
        if slot.master.as_ref().is_some_and(|m| m.session_id == c.session_id) {
            *slot = MasterSlot { master: None, epoch: slot.epoch + 1 };
        }
    }
}

/// The snapshot as a coordinator sees it when authenticating: without --open-registration
/// the rows open registration created are not there, so their tokens prove nothing (no
/// heartbeat, handoff, claim or inbox read) and no verb targets them (issue 28 point 3:
/// restarting without the flag ends the lab).
pub fn visible(snap: &Snapshot, open_registration: bool) -> Cow<'_, Snapshot> {
    if open_registration || !snap.controllers.iter().any(Controller::open_registered) {
        return Cow::Borrowed(snap);
    }
    let mut s = snap.clone();
    s.controllers.retain(|c| !c.open_registered());
    Cow::Owned(s)
}

/// The row `session_id` if `token_hash` is its token's hash; `unauthorized` otherwise (an
/// unknown session and a wrong token look the same).
pub fn authenticate<'a>(snap: &'a Snapshot, session_id: &str, token_hash: &str) -> Result<&'a Controller, ClaimError> {
    snap.controller(session_id)
        .filter(|c| token_hash_matches(&c.token_hash, token_hash))
        .ok_or_else(|| ClaimError::Unauthorized { project: snap.project.clone(), session_id: session_id.to_string() })
}

/// A heartbeat from an authenticated session.
pub fn heartbeat(
    snap: &Snapshot,
    session_id: &str,
    token_hash: &str,
    now: Millis,
) -> Result<(Change, Controller), ClaimError> {
    let row = Controller { last_heartbeat: now, ..authenticate(snap, session_id, token_hash)?.clone() };
    Ok((Change { upsert: vec![row.clone()], ..Change::default() }, row))
}

/// Deregister an authenticated session (seed 000 `prism_session_deregister`). A master that
/// leaves empties the slot (a change of master: the epoch grows) so the next registrant
/// becomes master.
pub fn deregister(snap: &Snapshot, session_id: &str, token_hash: &str) -> Result<(Change, bool), ClaimError> {
    let row = authenticate(snap, session_id, token_hash)?;
    let mut change = Change { delete: vec![row.session_id.clone()], ..Change::default() };
    let was_master = snap.slot.master.as_ref().is_some_and(|m| m.session_id == row.session_id);
    if was_master {
        change.slot = Some(MasterSlot { master: None, epoch: snap.slot.epoch + 1 });
    }
    Ok((change, was_master))
}

/// Seed 000 §Target resolution, steps 1–6, in order.
pub fn resolve_target<'a>(
    snap: &'a Snapshot,
    to_identity: &str,
    to_session: Option<&str>,
    now: Millis,
    freshness_ms: i64,
) -> Result<&'a Controller, ClaimError> {
    // Step 1: an explicit session id is authoritative; it must be an active (registered) row
    // of that identity in this project. Freshness is not required: the operator chose it.
    if let Some(sid) = to_session {
        return snap.controller(sid).filter(|c| c.identity == to_identity).ok_or_else(|| {
            ClaimError::TargetNotRegistered {
                project: snap.project.clone(),
                what: format!("{to_identity} with session {sid}"),
            }
        });
    }
    let rows: Vec<&Controller> = snap.controllers.iter().filter(|c| c.identity == to_identity).collect();
    // Step 3: no active row at all.
    if rows.is_empty() {
        return Err(ClaimError::TargetNotRegistered { project: snap.project.clone(), what: to_identity.to_string() });
    }
    // Step 2: the candidates are the fresh rows.
    let mut fresh: Vec<&Controller> = rows.iter().copied().filter(|c| c.is_fresh(now, freshness_ms)).collect();
    match fresh.len() {
        // Step 4: rows exist, all aged out.
        0 => Err(ClaimError::TargetStale {
            identity: to_identity.to_string(),
            freshness_seconds: u64::try_from(freshness_ms / 1000).unwrap_or(0),
            sessions: rows.iter().map(|c| c.session_id.clone()).collect(),
        }),
        // Step 5.
        1 => Ok(fresh.remove(0)),
        // Step 6: list the candidates (sorted: the snapshot is ordered by session id).
        _ => Err(ClaimError::TargetAmbiguous {
            identity: to_identity.to_string(),
            candidates: fresh.iter().map(|c| c.session_id.clone()).collect(),
        }),
    }
}

/// Fails with `stale_master` unless the project is still at the epoch the caller saw.
pub fn check_epoch(snap: &Snapshot, expect_epoch: u64) -> Result<(), ClaimError> {
    if snap.slot.epoch == expect_epoch {
        Ok(())
    } else {
        Err(ClaimError::StaleMaster { expected: expect_epoch, actual: snap.slot.epoch })
    }
}

/// The moment a decision judges heartbeats by: a row is fresh when its last heartbeat is
/// within `freshness_ms` of `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judged {
    /// The moment the rows' heartbeats are judged by.
    pub now: Millis,
    /// How recent a heartbeat must be for a row to count as fresh.
    pub freshness_ms: i64,
}

/// What `master handoff` and `master claim` both ask of a snapshot: mastership for the
/// request's target, if the project is still at the epoch it saw, with the target's rows
/// judged fresh or stale `at`.
fn transfer<'s>(snap: &'s Snapshot, req: &impl MasterTarget, at: Judged) -> Result<&'s Controller, ClaimError> {
    check_epoch(snap, req.expect_epoch())?;
    resolve_target(snap, req.to(), req.to_session(), at.now, at.freshness_ms)
}

/// Why mastership moved, with the operator on the preempt path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason<'a> {
    /// `master handoff` by the current master.
    Handoff,
    /// `master claim` authorized by this operator.
    Preempt {
        /// The operator id (never the password).
        by_operator: &'a str,
    },
}

/// `master handoff` (seed 000 §prism_master_handoff): the caller proves it is the session,
/// the epoch must be the one it saw (else `stale_master`: a concurrent verb won), it must
/// be master (`not_master`), and the target resolves by the six steps.
pub fn handoff(
    snap: &Snapshot,
    caller_token_hash: &str,
    req: &HandoffRequest,
    at: Judged,
) -> Result<(Change, MasterOutcome), ClaimError> {
    let me = authenticate(snap, &req.session_id, caller_token_hash)?;
    check_epoch(snap, req.expect_epoch)?;
    if snap.slot.master.as_ref().is_none_or(|m| m.session_id != me.session_id) {
        return Err(ClaimError::NotMaster { project: snap.project.clone(), session_id: req.session_id.clone() });
    }
    let to = transfer(snap, req, at)?;
    Ok(promote(snap, to, Reason::Handoff))
}

/// `master claim` (seed 000 §prism_master_claim) after the operator's credentials checked
/// out: epoch, then target; every row loses mastership and the named target, never the
/// caller, gains it.
pub fn master_claim(
    snap: &Snapshot,
    req: &MasterClaimRequest,
    at: Judged,
) -> Result<(Change, MasterOutcome), ClaimError> {
    let to = transfer(snap, req, at)?;
    Ok(promote(snap, to, Reason::Preempt { by_operator: &req.operator }))
}

/// Moves the slot to `to` (epoch + 1), rewrites every row's flag, and addresses
/// MasterPreempted to the previous master. A target that already is master changes nothing.
fn promote(snap: &Snapshot, to: &Controller, reason: Reason<'_>) -> (Change, MasterOutcome) {
    let previous = snap.slot.master.clone();
    let new_master = to.reference();
    let already = previous.as_ref() == Some(&new_master);
    let stray_flags = snap.controllers.iter().any(|c| c.is_master != (c.session_id == to.session_id));
    let mut preempted: Vec<MasterRef> = Vec::new();
    if !already {
        preempted.extend(previous.iter().cloned());
    }
    for c in snap.controllers.iter().filter(|c| c.is_master && c.session_id != to.session_id) {
        if !preempted.iter().any(|p| p.session_id == c.session_id) {
            preempted.push(c.reference());
        }
    }
    if already && !stray_flags {
        let outcome = MasterOutcome {
            previous_master: previous,
            new_master,
            preempted,
            epoch: snap.slot.epoch,
            changed: false,
            dry_run: false,
        };
        return (Change::default(), outcome);
    }
    let epoch = if already { snap.slot.epoch } else { snap.slot.epoch + 1 };
    let mut change = Change::default();
    for c in &snap.controllers {
        let is_master = c.session_id == to.session_id;
        if c.is_master != is_master {
            change.upsert.push(Controller { is_master, ..c.clone() });
        }
    }
    if !already {
        change.slot = Some(MasterSlot { master: Some(new_master.clone()), epoch });
        if let Some(prev) = &previous {
            change.events.push(preempted_event(prev, &new_master, &reason, epoch));
        }
    }
    let outcome =
        MasterOutcome { previous_master: previous, new_master, preempted, epoch, changed: !already, dry_run: false };
    (change, outcome)
}

/// The MasterPreempted payload (seed 000 §Signal contract) plus the new epoch.
fn preempted_event(prev: &MasterRef, new: &MasterRef, reason: &Reason<'_>, epoch: u64) -> NewEvent {
    let mut payload = json!({
        "previous_master_identity": prev.identity,
        "previous_master_session_id": prev.session_id,
        "new_master_identity": new.identity,
        "new_master_session_id": new.session_id,
        "reason": match reason { Reason::Handoff => "handoff", Reason::Preempt { .. } => "preempt" },
        "epoch": epoch,
    });
    if let Reason::Preempt { by_operator } = reason {
        payload["by_operator"] = json!(by_operator);
    }
    NewEvent {
        recipient: prev.identity.clone(),
        recipient_session: Some(prev.session_id.clone()),
        kind: MASTER_PREEMPTED.into(),
        payload,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::identities::{enroll, proves_identity, remove_identity, rotate_key};
    use crate::claim::model::EnrolledIdentity;

    const F: i64 = 30_000;
    const NOW: Millis = 1_000_000;

    fn row(sid: &str, identity: &str, machine: &str, hb: Millis) -> Controller {
        Controller {
            session_id: sid.into(),
            identity: identity.into(),
            surface: "cli".into(),
            machine_id: machine.into(),
            token_hash: format!("h-{sid}"),
            is_master: false,
            registered_at: 0,
            last_heartbeat: hb,
        }
    }

    /// `m` (alice) is master at epoch 3; bob has one fresh row; carol two fresh; dave one stale.
    fn snap() -> Snapshot {
        let mut m = row("m", "alice", "h1", NOW);
        m.is_master = true;
        Snapshot {
            project: "p".into(),
            version: 9,
            slot: MasterSlot { master: Some(m.reference()), epoch: 3 },
            controllers: vec![
                row("b1", "bob", "h2", NOW - 1_000),
                row("c1", "carol", "h1", NOW),
                row("c2", "carol", "h2", NOW - F),
                row("d1", "dave", "h1", NOW - F - 1),
                m,
            ],
            identities: Vec::new(),
        }
    }

    const AT: Judged = Judged { now: NOW, freshness_ms: F };

    /// A handoff by `caller` to `identity` (row `sid`) from `expect_epoch`.
    fn ho(caller: &str, identity: &str, sid: Option<&str>, expect_epoch: u64) -> HandoffRequest {
        HandoffRequest {
            session_id: caller.into(),
            to: identity.into(),
            to_session: sid.map(str::to_string),
            expect_epoch,
            reason: None,
            dry_run: false,
        }
    }

    /// A master claim by operator `ops` for `identity` (row `sid`) from `expect_epoch`.
    fn mc(identity: &str, sid: Option<&str>, expect_epoch: u64) -> MasterClaimRequest {
        MasterClaimRequest {
            to: identity.into(),
            to_session: sid.map(str::to_string),
            expect_epoch,
            operator: "ops".into(),
            password: String::new(),
            reason: None,
            dry_run: false,
        }
    }

    #[test]
    fn resolution_follows_the_six_steps() {
        let s = snap();
        assert_eq!(resolve_target(&s, "bob", None, NOW, F).unwrap().session_id, "b1");
        assert!(matches!(resolve_target(&s, "erin", None, NOW, F), Err(ClaimError::TargetNotRegistered { .. })));
        match resolve_target(&s, "dave", None, NOW, F) {
            Err(ClaimError::TargetStale { sessions, freshness_seconds: 30, .. }) => assert_eq!(sessions, ["d1"]),
            other => panic!("{other:?}"),
        }
        match resolve_target(&s, "carol", None, NOW, F) {
            Err(ClaimError::TargetAmbiguous { candidates, .. }) => assert_eq!(candidates, ["c1", "c2"]),
            other => panic!("{other:?}"),
        }
        assert_eq!(resolve_target(&s, "carol", Some("c2"), NOW, F).unwrap().session_id, "c2");
        // Step 1 is authoritative even for a stale row, but the identity must match.
        assert_eq!(resolve_target(&s, "dave", Some("d1"), NOW, F).unwrap().session_id, "d1");
        assert!(matches!(resolve_target(&s, "bob", Some("c1"), NOW, F), Err(ClaimError::TargetNotRegistered { .. })));
        assert!(matches!(resolve_target(&s, "bob", Some("zz"), NOW, F), Err(ClaimError::TargetNotRegistered { .. })));
    }

    #[test]
    fn handoff_promotes_target_and_signals_previous_master() {
        let s = snap();
        let (change, out) = handoff(&s, "h-m", &ho("m", "bob", None, 3), AT).unwrap();
        assert_eq!(out.epoch, 4);
        assert!(out.changed);
        assert_eq!(out.new_master.session_id, "b1");
        assert_eq!(out.previous_master.unwrap().session_id, "m");
        assert_eq!(change.slot.as_ref().unwrap().epoch, 4);
        let flags: Vec<(String, bool)> = change.upsert.iter().map(|c| (c.session_id.clone(), c.is_master)).collect();
        assert_eq!(flags, [("b1".to_string(), true), ("m".to_string(), false)]);
        let ev = &change.events[0];
        assert_eq!((ev.recipient.as_str(), ev.recipient_session.as_deref()), ("alice", Some("m")));
        assert_eq!(ev.payload["reason"], "handoff");
        assert_eq!(ev.payload["epoch"], 4);
        assert!(ev.payload.get("by_operator").is_none());
    }

    #[test]
    fn handoff_errors_in_order() {
        let s = snap();
        assert!(matches!(handoff(&s, "h-x", &ho("m", "bob", None, 3), AT), Err(ClaimError::Unauthorized { .. })));
        assert!(matches!(
            handoff(&s, "h-m", &ho("m", "bob", None, 2), AT),
            Err(ClaimError::StaleMaster { expected: 2, actual: 3 })
        ));
        // A non-master with a stale epoch learns the epoch moved first: that is the CAS loser.
        assert!(matches!(handoff(&s, "h-b1", &ho("b1", "carol", None, 2), AT), Err(ClaimError::StaleMaster { .. })));
        assert!(matches!(handoff(&s, "h-b1", &ho("b1", "carol", None, 3), AT), Err(ClaimError::NotMaster { .. })));
        assert!(matches!(handoff(&s, "h-m", &ho("m", "dave", None, 3), AT), Err(ClaimError::TargetStale { .. })));
    }

    #[test]
    fn claim_clears_every_flag_and_names_the_operator() {
        let mut s = snap();
        s.controllers[0].is_master = true; // a stray flag left by an old writer
        let (change, out) = master_claim(&s, &mc("carol", Some("c2"), 3), AT).unwrap();
        assert_eq!(out.new_master.session_id, "c2");
        let pre: Vec<&str> = out.preempted.iter().map(|p| p.session_id.as_str()).collect();
        assert_eq!(pre, ["m", "b1"]);
        assert!(change.upsert.iter().all(|c| c.is_master == (c.session_id == "c2")));
        assert_eq!(change.events[0].payload["reason"], "preempt");
        assert_eq!(change.events[0].payload["by_operator"], "ops");
        assert!(matches!(master_claim(&s, &mc("carol", None, 3), AT), Err(ClaimError::TargetAmbiguous { .. })));
        assert!(matches!(master_claim(&s, &mc("carol", Some("c1"), 4), AT), Err(ClaimError::StaleMaster { .. })));
    }

    #[test]
    fn claiming_the_current_master_changes_nothing() {
        let s = snap();
        let (change, out) = master_claim(&s, &mc("alice", None, 3), AT).unwrap();
        assert!(change.is_empty());
        assert!(!out.changed);
        assert_eq!(out.epoch, 3);
        assert!(out.preempted.is_empty());
    }

    #[test]
    fn claim_into_an_empty_slot_signals_nobody() {
        let mut s = snap();
        s.slot.master = None;
        s.controllers.iter_mut().for_each(|c| c.is_master = false);
        let (change, out) = master_claim(&s, &mc("bob", None, 3), AT).unwrap();
        assert!(change.events.is_empty());
        assert_eq!(out.previous_master, None);
        assert_eq!(out.epoch, 4);
    }

    fn open() -> RegisterProof<'static> {
        RegisterProof { open: true, ..RegisterProof::default() }
    }

    fn by_token(h: &str) -> RegisterProof<'_> {
        RegisterProof { token_hash: Some(h), ..RegisterProof::default() }
    }

    fn by_key(h: &str) -> RegisterProof<'_> {
        RegisterProof { key_hash: Some(h), ..RegisterProof::default() }
    }

    /// `snap()` with alice and dave enrolled (keys `k-alice`, `k-dave`).
    fn enrolled_snap() -> Snapshot {
        let mut s = snap();
        for who in ["alice", "dave"] {
            s = apply_enroll(&s, enroll(&s, who, format!("k-{who}"), 0).unwrap().0);
        }
        s
    }

    fn apply_enroll(s: &Snapshot, c: Change) -> Snapshot {
        let mut s = s.clone();
        s.identities
            .retain(|i| !c.unenroll.contains(&i.identity) && !c.enroll.iter().any(|e| e.identity == i.identity));
        s.identities.extend(c.enroll);
        s.controllers.retain(|r| !c.delete.contains(&r.session_id));
        if let Some(slot) = c.slot {
            s.slot = slot;
        }
        s
    }

    #[test]
    fn register_upserts_and_first_one_becomes_master() {
        let empty = Snapshot { project: "p".into(), ..Snapshot::default() };
        let key = ControllerKey { identity: "bob".into(), surface: "cli".into(), machine_id: "h2".into() };
        let (c, r) = register(&empty, &key, "new".into(), "h".into(), open(), NOW, F).unwrap();
        assert!(r.is_master);
        assert_eq!(c.slot.unwrap().epoch, 1);
        let s = snap();
        let (c, r) = register(&s, &key, "new".into(), "h2".into(), by_token("h-b1"), NOW + 5, F).unwrap();
        assert_eq!(r.session_id, "b1", "same key keeps its row");
        assert_eq!((r.token_hash.as_str(), r.last_heartbeat, r.is_master), ("h2", NOW + 5, false));
        assert!(c.slot.is_none());
        let other = ControllerKey { machine_id: "h9".into(), ..key.clone() };
        assert_eq!(register(&s, &other, "new".into(), "h".into(), open(), NOW, F).unwrap().1.session_id, "open-new");
    }

    #[test]
    fn a_live_row_is_re_registered_only_with_its_token() {
        let s = enrolled_snap();
        let master_key = ControllerKey { identity: "alice".into(), surface: "cli".into(), machine_id: "h1".into() };
        // The key proves alice, but her row is live: only its token re-registers it.
        for proof in
            [by_key("k-alice"), RegisterProof { key_hash: Some("k-alice"), token_hash: Some("h-b1"), open: true }]
        {
            assert!(matches!(
                register(&s, &master_key, "x".into(), "h".into(), proof, NOW, F),
                Err(ClaimError::RegistrationHeld { .. })
            ));
        }
        let (_, r) = register(&s, &master_key, "x".into(), "h".into(), by_token("h-m"), NOW, F).unwrap();
        assert!(r.is_master && r.session_id == "m", "a restart with its token keeps the session");
        // A stale row (dave) is taken over with the identity's key, as a restarted
        // controller that lost its token would.
        let dave = ControllerKey { identity: "dave".into(), surface: "cli".into(), machine_id: "h1".into() };
        assert_eq!(register(&s, &dave, "x".into(), "h".into(), by_key("k-dave"), NOW, F).unwrap().1.session_id, "d1");
        assert_eq!(register(&s, &dave, "x".into(), "h".into(), by_token("h-d1"), NOW, F).unwrap().1.session_id, "d1");
    }

    #[test]
    fn an_unproven_registration_is_refused_alike_whether_or_not_the_identity_exists() {
        let s = enrolled_snap();
        let stale_dave = ControllerKey { identity: "dave".into(), surface: "cli".into(), machine_id: "h1".into() };
        let new_alice = ControllerKey { machine_id: "h7".into(), identity: "alice".into(), surface: "cli".into() };
        let nobody = ControllerKey { identity: "zed".into(), ..stale_dave.clone() };
        for key in [&stale_dave, &new_alice, &nobody] {
            for proof in
                [RegisterProof::default(), by_key("k-wrong"), by_key("k-bob"), by_token("h-m"), by_token("nope")]
            {
                let e = register(&s, key, "x".into(), "h".into(), proof, NOW, F).unwrap_err();
                assert_eq!(
                    e.to_string(),
                    format!(
                        "registering as {} in project p needs proof: the identity's key or the row's current session token",
                        key.identity
                    ),
                    "{key:?} {proof:?}"
                );
            }
        }
        // Another identity's key proves nothing; open registration never opens an enrolled
        // identity, but does open one nobody enrolled.
        assert!(register(&s, &new_alice, "x".into(), "h".into(), by_key("k-dave"), NOW, F).is_err());
        assert!(register(&s, &new_alice, "x".into(), "h".into(), open(), NOW, F).is_err());
        assert_eq!(register(&s, &nobody, "x".into(), "h".into(), open(), NOW, F).unwrap().1.session_id, "open-x");
        assert_eq!(
            register(&s, &new_alice, "x".into(), "h".into(), by_key("k-alice"), NOW, F).unwrap().1.session_id,
            "x"
        );
    }

    #[test]
    fn identities_are_enrolled_once_rotated_and_removed_with_their_sessions() {
        let s = enrolled_snap();
        assert!(matches!(enroll(&s, "alice", "k2".into(), NOW), Err(ClaimError::IdentityExists { .. })));
        let (c, row) = rotate_key(&s, "dave", "k-new".into(), NOW).unwrap();
        assert_eq!((row.key_hash.as_str(), row.enrolled_at, row.key_issued_at), ("k-new", 0, NOW));
        let rotated = apply_enroll(&s, c);
        let dave = ControllerKey { identity: "dave".into(), surface: "cli".into(), machine_id: "h9".into() };
        assert!(register(&rotated, &dave, "x".into(), "h".into(), by_key("k-dave"), NOW, F).is_err(), "old key");
        assert!(register(&rotated, &dave, "x".into(), "h".into(), by_key("k-new"), NOW, F).is_ok());
        assert!(matches!(rotate_key(&s, "bob", "k".into(), NOW), Err(ClaimError::NotFound(_))));
        // Removing the master's identity deregisters its sessions and empties the slot.
        let (c, removed) = remove_identity(&s, "alice").unwrap();
        assert_eq!((removed.sessions.as_slice(), removed.was_master, removed.epoch), (&["m".to_string()][..], true, 4));
        assert_eq!(c.slot, Some(MasterSlot { master: None, epoch: 4 }));
        let gone = apply_enroll(&s, c);
        assert!(gone.identity("alice").is_none() && gone.controller("m").is_none());
        let alice = ControllerKey { identity: "alice".into(), surface: "cli".into(), machine_id: "h1".into() };
        assert!(register(&gone, &alice, "x".into(), "h".into(), by_key("k-alice"), NOW, F).is_err());
        assert!(register(&gone, &alice, "x".into(), "h".into(), by_token("h-m"), NOW, F).is_err());
        let (c, removed) = remove_identity(&s, "dave").unwrap();
        assert!(!removed.was_master && c.slot.is_none() && c.delete == ["d1"]);
    }

    #[test]
    fn a_seat_is_proven_only_by_a_token_of_one_of_its_own_rows() {
        let s = snap();
        assert!(proves_identity(&s, "carol", "h-c2") && proves_identity(&s, "carol", "h-c1"));
        assert!(!proves_identity(&s, "carol", "h-b1"), "bob's token is not carol's");
        assert!(!proves_identity(&s, "zed", "h-b1") && !proves_identity(&s, "carol", "nope"));
    }

    #[test]
    fn master_leaving_empties_the_slot() {
        let s = snap();
        let (c, was) = deregister(&s, "m", "h-m").unwrap();
        assert!(was);
        assert_eq!(c.slot, Some(MasterSlot { master: None, epoch: 4 }));
        let (c, was) = deregister(&s, "b1", "h-b1").unwrap();
        assert!(!was && c.slot.is_none() && c.delete == ["b1"]);
        assert!(matches!(deregister(&s, "b1", "h-m"), Err(ClaimError::Unauthorized { .. })));
        assert!(heartbeat(&s, "b1", "nope", NOW).is_err());
        assert_eq!(heartbeat(&s, "b1", "h-b1", NOW + 7).unwrap().1.last_heartbeat, NOW + 7);
    }

    fn key(identity: &str, machine: &str) -> ControllerKey {
        ControllerKey { identity: identity.into(), surface: "cli".into(), machine_id: machine.into() }
    }

    /// Issue 28 point 3: open registration handed a stale master's row (its session, its
    /// `is_master: true` at the old epoch, a fresh token) to anyone naming its key.
    #[test]
    fn open_registration_never_hands_out_a_stale_row() {
        let mut s = snap();
        s.controllers.iter_mut().find(|c| c.session_id == "m").unwrap().last_heartbeat = NOW - F - 1;
        for proof in [open(), RegisterProof { token_hash: Some("h-b1"), ..open() }] {
            let e = register(&s, &key("alice", "h1"), "x".into(), "h".into(), proof, NOW, F).unwrap_err();
            assert!(matches!(e, ClaimError::RegistrationUnproven { .. }), "{e:?}");
        }
        // Its own token still re-registers it (a restarted lab controller).
        let (_, r) = register(&s, &key("alice", "h1"), "x".into(), "h".into(), by_token("h-m"), NOW, F).unwrap();
        assert_eq!((r.session_id.as_str(), r.is_master), ("m", true));
        // A new key gets a new, marked row that is not master (the slot is held).
        let (c, r) = register(&s, &key("alice", "h5"), "x".into(), "h".into(), open(), NOW, F).unwrap();
        assert!(r.open_registered() && !r.is_master && c.slot.is_none());
    }

    /// Issue 28 point 3: the first enrollment ends every open session of the project (the
    /// master's too: the slot empties, epoch + 1); a later one ends that identity's.
    #[test]
    fn enrollment_ends_open_sessions() {
        let empty = Snapshot { project: "p".into(), ..Snapshot::default() };
        let (c, lab) = register(&empty, &key("lab", "h1"), "1".into(), "h1".into(), open(), NOW, F).unwrap();
        let mut s = empty.clone();
        s.controllers.push(lab.clone());
        s.slot = c.slot.unwrap();
        let (_, sq) = register(&s, &key("bob", "h2"), "2".into(), "h2".into(), open(), NOW, F).unwrap();
        s.controllers.push(sq);
        let (c, _) = enroll(&s, "alice", "k".into(), NOW).unwrap();
        assert_eq!(c.delete, ["open-1", "open-2"]);
        assert_eq!(c.slot, Some(MasterSlot { master: None, epoch: 2 }));
        // With an identity already enrolled, enrolling bob ends bob's open rows only.
        s.identities.push(EnrolledIdentity {
            identity: "carol".into(),
            key_hash: "k".into(),
            enrolled_at: 0,
            key_issued_at: 0,
        });
        let (c, _) = enroll(&s, "bob", "k".into(), NOW).unwrap();
        assert_eq!((c.delete.as_slice(), c.slot.is_none()), (&["open-2".to_string()][..], true));
    }

    /// Issue 28 point 3: without --open-registration an open row's token proves nothing,
    /// and the next registration in the project deregisters every open row.
    #[test]
    fn a_closed_coordinator_refuses_and_cleans_up_open_rows() {
        let empty = Snapshot { project: "p".into(), ..Snapshot::default() };
        let (c, lab) = register(&empty, &key("lab", "h1"), "1".into(), "h-lab".into(), open(), NOW, F).unwrap();
        let mut s = empty.clone();
        s.controllers.push(lab);
        s.slot = c.slot.unwrap();
        let e = register(&s, &key("lab", "h1"), "x".into(), "h".into(), by_token("h-lab"), NOW, F).unwrap_err();
        assert!(matches!(e, ClaimError::RegistrationUnproven { .. }), "{e:?}");
        assert!(authenticate(&visible(&s, false), "open-1", "h-lab").is_err());
        assert!(authenticate(&visible(&s, true), "open-1", "h-lab").is_ok());
        s.identities.push(EnrolledIdentity {
            identity: "ann".into(),
            key_hash: "k-ann".into(),
            enrolled_at: 0,
            key_issued_at: 0,
        });
        let (c, r) = register(&s, &key("ann", "h1"), "2".into(), "h".into(), by_key("k-ann"), NOW, F).unwrap();
        assert_eq!(c.delete, ["open-1"]);
        assert!(r.is_master && !r.open_registered());
        assert_eq!(c.slot.unwrap().epoch, 3, "the open master's removal and the new master are two changes");
    }

    /// Issue 28 point 6: look-alike identities (TR39 skeleton, case folded) are refused at
    /// registration and enrollment, naming the existing spelling; mixed scripts too.
    #[test]
    fn confusable_identities_are_refused() {
        let s = enrolled_snap(); // alice, dave enrolled; bob, carol registered
        for look_alike in ["\u{430}lice", "ＡＬＩＣＥ", "Alice", "ALICE", "b\u{43e}b", "Carol"] {
            let e = enroll(&s, look_alike, "k".into(), NOW).unwrap_err();
            assert_eq!(e.code(), crate::error::ErrorCode::NameConfusable, "{look_alike}: {e:?}");
            let e = register(&s, &key(look_alike, "h9"), "x".into(), "h".into(), open(), NOW, F).unwrap_err();
            assert!(
                matches!(&e, ClaimError::NameConfusable { .. } | ClaimError::InvalidArgument(_)),
                "{look_alike}: {e:?}"
            );
        }
        // A whole-script look-alike (Cyrillic `асе`) is single-script, and still refused.
        let with_ace = apply_enroll(&s, enroll(&s, "ace", "k".into(), NOW).unwrap().0);
        match enroll(&with_ace, "\u{430}\u{441}\u{435}", "k".into(), NOW) {
            Err(ClaimError::NameConfusable { existing, .. }) => assert_eq!(existing, "ace"),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(enroll(&s, "p\u{430}ypal", "k".into(), NOW), Err(ClaimError::InvalidArgument(a)) if a.field == "identity")
        );
        // Different names, the same name again, and a single non-Latin script are fine.
        assert!(enroll(&s, "erin", "k".into(), NOW).is_ok());
        assert!(enroll(&s, "\u{432}\u{430}\u{441}\u{44f}", "k".into(), NOW).is_ok());
        assert!(enroll(&s, "アリス", "k".into(), NOW).is_ok());
        assert!(register(&s, &key("bob", "h9"), "x".into(), "h".into(), open(), NOW, F).is_ok());
    }
}
