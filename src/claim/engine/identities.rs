//! The identity verbs (`identity add|rotate|remove|list`) and the seat proof every work
//! verb runs: the engine half of [`crate::claim::identities`].

use crate::claim::verb_names;
use serde_json::json;

use super::{Coordinator, Decision, Recheck, invalidated_detail};
use crate::claim::error::ClaimError;
use crate::claim::identities::{self, Removed};
use crate::claim::masters;
use crate::claim::model::{Change, EnrolledIdentity, Millis, Snapshot};
use crate::claim::names::validate_name;
use crate::claim::requests::Pending;
use crate::claim::secret::{self, Secret};

/// An identity key, shown once, with the enrollment it belongs to.
#[derive(Debug)]
pub struct IssuedKey {
    /// The enrollment (its key hash is what the store keeps).
    pub identity: EnrolledIdentity,
    /// The key itself; never stored.
    pub key: Secret,
}

/// The pure decision `identity add` or `identity rotate` makes with a new key's hash:
/// [`identities::enroll`] or [`identities::rotate_key`].
type IssueDecision = fn(&Snapshot, &str, String, Millis) -> Result<(Change, EnrolledIdentity), ClaimError>;

impl Coordinator {
    /// Succeeds when `token` is a session token of a controller registered as `identity`
    /// in `project`; otherwise `unauthorized`, the same answer whether the identity has no
    /// controller, another controller, or the token is missing (issue 15).
    pub(crate) fn prove_identity(
        &self,
        project: &str,
        identity: &str,
        token: Option<&Secret>,
        act: impl FnOnce() -> String,
    ) -> Result<(), ClaimError> {
        let proven = match token {
            Some(t) => identities::proves_identity(
                &masters::visible(&self.store.snapshot(project)?, self.open_registration),
                identity,
                &secret::token_hash(t),
            ),
            None => false,
        };
        if proven {
            Ok(())
        } else {
            Err(ClaimError::IdentityUnproven { project: project.into(), identity: identity.into(), act: act() })
        }
    }

    /// `identity add`: enrolls `identity` in `project` and returns its key, shown once.
    pub fn enroll_identity(&self, project: &str, identity: &str) -> Result<IssuedKey, ClaimError> {
        self.issue_key(project, identity, verb_names::IDENTITY_ADD, identities::enroll)
    }

    /// `identity rotate`: a new key for an enrolled identity; the old one is refused at once.
    pub fn rotate_identity(&self, project: &str, identity: &str) -> Result<IssuedKey, ClaimError> {
        self.issue_key(project, identity, verb_names::IDENTITY_ROTATE, identities::rotate_key)
    }

    fn issue_key(
        &self,
        project: &str,
        identity: &str,
        verb: &str,
        decide: IssueDecision,
    ) -> Result<IssuedKey, ClaimError> {
        validate_name("project", project)?;
        validate_name("identity", identity)?;
        let key = secret::new_identity_key()?;
        let hash = secret::token_hash(&key);
        let base = self.audit(project, verb, self.ctx.actor.as_str().to_string(), Some(format!("identity:{identity}")));
        let input = json!({"identity": identity});
        // As for a registration's token: a retry after a lost reply gets the key that was
        // issued (its hash is what the store checks), kept sealed under the admin token the
        // request presented; in-process (no credential) the key is not kept.
        let pending = self.pending(&base, &input, &self.admin_credentials())?;
        let kept_key = pending.as_ref().is_some_and(Pending::can_keep_secrets).then(|| key.expose().to_string());
        let request_id = self.ctx.id.as_ref().map(|r| r.to_string()).unwrap_or_default();
        // A replay answers the key only while it is still the identity's enrolled key: a
        // key rotated again, or an identity removed, is never handed out (issue 28 point 2).
        let check = Recheck::authorized(|| ClaimError::AdminRequired).holding(
            |snap: &Snapshot, (row, kept): &(EnrolledIdentity, Option<String>)| {
                let not_kept = |reason: &str| ClaimError::AnswerNotKept {
                    request_id: request_id.clone(),
                    verb: verb.into(),
                    reason: reason.into(),
                };
                if kept.is_none() {
                    return Err(not_kept("the request presented no credential to seal the key under"));
                }
                match snap.identity(identity) {
                    Some(e) if secret::token_hash_matches(&e.key_hash, &row.key_hash) => Ok(()),
                    _ => Err(not_kept(&format!("the key of {identity} was rotated or the identity removed since"))),
                }
            },
        );
        let (row, kept) = self.run(base, pending, check, |snap, now| {
            // The row's `at` is when the key was issued; the key itself is never audited.
            let (change, row) = decide(snap, identity, hash.clone(), now)?;
            let epoch = change.slot.as_ref().map_or(snap.slot.epoch, |s| s.epoch);
            let mut detail = json!({});
            invalidated_detail(&mut detail, &change);
            Ok(Decision::audited(change, (row, kept_key.clone()), epoch, detail))
        })?;
        Ok(IssuedKey { identity: row, key: kept.map_or(key, Secret::new) })
    }

    /// `identity remove`: refuses its key from now on and deregisters its sessions.
    pub fn remove_identity(&self, project: &str, identity: &str) -> Result<Removed, ClaimError> {
        let actor = self.ctx.actor.as_str();
        validate_name("project", project)?;
        validate_name("identity", identity)?;
        let base =
            self.audit(project, verb_names::IDENTITY_REMOVE, actor.to_string(), Some(format!("identity:{identity}")));
        let pending = self.pending(&base, &json!({"identity": identity}), &self.admin_credentials())?;
        let check = Recheck::authorized(|| ClaimError::AdminRequired);
        self.run(base, pending, check, |snap, _| {
            let (change, removed) = identities::remove_identity(snap, identity)?;
            let detail = json!({"sessions": removed.sessions, "was_master": removed.was_master});
            Ok(Decision::audited(change, removed.clone(), removed.epoch, detail))
        })
    }

    /// `identity list`: the identities enrolled in `project`, by name.
    pub fn identities(&self, project: &str) -> Result<Vec<EnrolledIdentity>, ClaimError> {
        validate_name("project", project)?;
        Ok(self.store.snapshot(project)?.identities)
    }
}
