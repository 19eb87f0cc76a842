//! The coordinator engine: every verb of seeds 000 and 002 run against a [`Store`], one
//! request at a time.
//!
//! # Calling sequence
//!
//! ```text
//! edge: RequestCtx { id, source, admin, reason, dry_run, actor }
//!   └─► Coordinator::for_request(ctx) ─► verb(path parts, &Request, credential)
//!         1. authenticate   the caller's proof: a session token (`masters::authenticate`),
//!                           a seat's token (`prove_identity`), an operator's password
//!                           (`verify_operator`, argon2) or, over HTTP, the admin token the
//!                           server checked before the verb ran
//!         2. snapshot       one read of the project (`Store::transact` hands it to the
//!                           decision; a work claim reads its row and channel)
//!         3. decide         a pure function in `masters`, `identities` or `work_claims`:
//!                           the snapshot and the request in, a `Decision` (change, answer,
//!                           epoch, audit detail) or the seed's error out; no I/O, no clock
//!         4. compare-and-set the store commits the change only if the project (or claim)
//!                           is still at the version the snapshot saw; a lost race decides
//!                           again on a fresh snapshot (`MAX_CAS_ATTEMPTS`)
//!         5. audit          in the same commit: the verb's audit row (and a change of
//!                           master marked on it, `with_master_change`); a refusal is
//!                           audited best effort after the fact (`audit_failure`)
//!         6. keep           with a request id, the answer rides on that audit row
//!                           (`Pending::record`), sealed under the request's credential when
//!                           it holds a secret
//! ```
//!
//! `Coordinator::run` is steps 2 to 6 for the master and identity verbs; work-claim
//! writes run the same steps in `work.rs` (`write_work_claim`). A dry run ([`RequestCtx::dry_run`])
//! stops after step 3 on one snapshot: it commits, keeps and audits nothing but a refusal.
//!
//! # The replay rule
//!
//! A request id is a promise that the same request acts once. A verb run again with an id
//! whose answer is kept does not decide again: it authenticates the caller against *current*
//! state as a fresh request would (a rotated key, a deregistered session refuse it), opens
//! the kept record with the caller's credential (only the credential it was sealed under
//! opens it), compares the request's fingerprint (the same id with another request is
//! refused), and checks the kept answer still holds (`Recheck`). In that order, so a caller
//! who proves nothing gets exactly the refusal a fresh request would, whether or not the id
//! exists (issue 28 points 2 and 5). A refusal keeps no answer: its retry decides again.
//! Answers are kept for [`REQUEST_TTL`](super::requests::REQUEST_TTL).
//!
//! # A crash between the Redis write and the Postgres write
//!
//! On the server store Redis is authoritative and Postgres is the audit plane. Step 4's
//! commit is one Lua script that applies the change, appends the events, writes the kept
//! answer and enqueues the Postgres write (audit row included) on a queue in Redis, so no
//! moment exists at which Redis holds the change without its queued audit: a crash after
//! the script leaves the verb done and its entry queued, and whichever store on the
//! namespace drains next (the restarted process, another replica, any store's background
//! writer) carries it to Postgres; replaying an entry twice changes nothing (op ids, version
//! guards). The engine does not finish anything itself: it returns once Redis committed,
//! and a reply lost with the process is recovered by retrying with the same request id.
//! What each store guarantees, and the test behind each guarantee, opens its module
//! (`stores/redis_pg/mod.rs`, `stores/sqlite/mod.rs`).
//!
//! Why one file of over 1,000 lines: the code is under 900; the rest is its unit tests, which
//! stay beside the private functions they pin.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::clock::Clock;
use super::error::ClaimError;
use super::masters::{
    self, ControllerKey, HandoffRequest, Judged, MasterClaimRequest, MasterOutcome, MasterTarget, OperatorRequest,
    RegisterProof, RegisterRequest,
};
use super::model::{
    AuditEntry, Change, Controller, Event, MASTER_CHANGE, MasterSlot, Millis, OperatorRecord, Snapshot,
};
use super::names;
use super::refusals::RefusalLimiter;
use super::requests::{KeptAnswer, Pending, RequestId, Unopened};
use super::secret::{self, Secret};
use super::stores::Store;
use super::verb_names;

mod history;
mod identities;
mod pause;
mod retain;
mod work;

pub use history::{ExportPage, MAX_PAGE, MasterChange};
pub use identities::IssuedKey;
pub use work::{SWEEP_BATCH, SWEEP_LIMIT, SweepAll};

/// Seed 000's default heartbeat freshness for target resolution.
pub const DEFAULT_FRESHNESS: Duration = Duration::from_secs(30);

/// The coordinator over one store.
pub struct Coordinator {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    freshness: Duration,
    open_registration: bool,
    /// Refusal audit rows per source and interval, shared by every value made from one
    /// [`Coordinator::new`] (issue 28 point 4).
    refusals: Arc<RefusalLimiter>,
    /// The request every verb run through this value serves (see [`RequestCtx`]).
    ctx: RequestCtx,
}

/// Who acts on the audit rows of an administrative verb.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Actor {
    /// The CLI on the embedded store: having the store file is the authority.
    #[default]
    Local,
    /// A server, after it checked the admin token.
    Admin,
}

impl Actor {
    /// The actor as the audit log names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::Local => "local",
            Actor::Admin => "admin",
        }
    }
}

/// One request as the engine sees it beyond its arguments: built once at the edge (the
/// server's handler for each HTTP request, the CLI's endpoint for each command) and bound
/// to the coordinator with [`Coordinator::for_request`], so no verb has to thread it and no
/// verb can forget a part of it.
#[derive(Debug, Clone, Default)]
pub struct RequestCtx {
    /// The request id (`Idempotency-Key`, `--request-id`): a write verb's answer is kept
    /// with its write under it, and a verb run again with the same id returns that answer
    /// instead of acting twice (see [`super::requests`]).
    pub id: Option<RequestId>,
    /// The address the request came from; None in-process. Its refusals are audited through
    /// the shared [`RefusalLimiter`] (the first per source, project, verb and code per
    /// interval, then a count), so a flood of refusals writes a bounded number of rows.
    pub source: Option<IpAddr>,
    /// The admin token the caller presented (a server's admin verbs, after the server
    /// checked it): the credential an administrative answer holding a key is sealed under
    /// (see [`super::requests`]), so a replay needs it again and a copy of the store (which
    /// holds at most its digest) cannot open it. None in-process.
    pub admin: Option<Secret>,
    /// The caller's `--reason` (issue 30), recorded on every audit row the request writes,
    /// the verb's own and a refusal's ("who took this over at 03:12 and why").
    pub reason: Option<String>,
    /// Plan only (`--dry-run`, issue 30): a verb makes every check the real verb makes, on
    /// the same decision function (`Coordinator::run` decides, and only the real
    /// run commits), and changes nothing: no epoch, no event, no kept answer, no audit row
    /// of a change. A refusal is audited like the real refusal (marked `dry_run`), and a
    /// wrong operator password counts towards its back-off as it would: a dry run is no
    /// free guess.
    pub dry_run: bool,
    /// Who administrative verbs are audited as.
    pub actor: Actor,
}

impl RequestCtx {
    /// This context with the caller's `--reason` and `--dry-run`, as a master or work verb's
    /// request carries them. `invalid_argument` for a reason [`names::validate_reason`]
    /// refuses.
    pub fn planned(self, reason: Option<String>, dry_run: bool) -> Result<RequestCtx, ClaimError> {
        if let Some(r) = &reason {
            names::validate_reason(r)?;
        }
        Ok(RequestCtx { reason, dry_run, ..self })
    }
}

/// What a verb's decision commits, named: the change to write, the answer to give (and
/// keep under the request id), the epoch the audit row records, and the row's detail
/// (None for a success not worth a row; failures always are).
pub struct Decision<T> {
    /// What the transaction writes.
    pub change: Change,
    /// The verb's answer.
    pub answer: T,
    /// The master epoch after the change, for the audit row.
    pub epoch: u64,
    /// The audit row's detail; None: no row for this success.
    pub audit: Option<serde_json::Value>,
}

impl<T> Decision<T> {
    /// A decision whose success is audited with `detail`.
    fn audited(change: Change, answer: T, epoch: u64, detail: serde_json::Value) -> Decision<T> {
        Decision { change, answer, epoch, audit: Some(detail) }
    }
}

/// A replay's proof of the caller against one snapshot.
type Authorize<'a> = Box<dyn Fn(&Snapshot) -> Result<(), ClaimError> + 'a>;
/// A replay's check that its opened answer still holds against one snapshot.
type Holds<'a, T> = Box<dyn Fn(&Snapshot, &T) -> Result<(), ClaimError> + 'a>;

/// What a replayed request id must pass, against current state, before its kept answer is
/// returned (issue 28 point 2: "replays are decisions, not lookups"). A replay never acts,
/// so it checks on one snapshot: the answer is as current as that read.
struct Recheck<'a, T> {
    /// The verb's own proof as a fresh request checks it, before the record is even opened:
    /// the identity's key still the enrolled one, the session's token still its token.
    authorize: Authorize<'a>,
    /// The verb's refusal of an unproven caller, for a record the caller's credential does
    /// not open: the same answer as a fresh request with that credential, so no answer
    /// before authentication says whether the id exists (issue 28 point 5).
    refuse: Box<dyn Fn() -> ClaimError + 'a>,
    /// Whether the opened answer still holds (the session it registered still carries the
    /// kept token's hash; the key it issued is still the enrolled one).
    holds: Holds<'a, T>,
}

impl<'a, T> Recheck<'a, T> {
    /// A verb whose caller was authorized before the engine ran it (an operator's password,
    /// the admin token at the server): the record must still open with its credential.
    fn authorized(refuse: impl Fn() -> ClaimError + 'a) -> Recheck<'a, T> {
        Recheck { authorize: Box::new(|_| Ok(())), refuse: Box::new(refuse), holds: Box::new(|_, _| Ok(())) }
    }

    /// A verb whose caller proves itself against the snapshot.
    fn proven_by(
        authorize: impl Fn(&Snapshot) -> Result<(), ClaimError> + 'a,
        refuse: impl Fn() -> ClaimError + 'a,
    ) -> Recheck<'a, T> {
        Recheck { authorize: Box::new(authorize), refuse: Box::new(refuse), holds: Box::new(|_, _| Ok(())) }
    }

    /// With a check that the kept answer still holds.
    fn holding(mut self, holds: impl Fn(&Snapshot, &T) -> Result<(), ClaimError> + 'a) -> Recheck<'a, T> {
        self.holds = Box::new(holds);
        self
    }
}

/// What `session register` presents to prove its identity (issue 19): the identity's key,
/// and/or the current token of the row it re-registers (a restart).
#[derive(Debug, Clone, Copy, Default)]
struct Credentials<'a> {
    /// The identity key `identity add` issued.
    pub identity_key: Option<&'a Secret>,
    /// The current session token of the row being re-registered.
    pub token: Option<&'a Secret>,
}

/// A registration's result; the token is shown once and never stored.
#[derive(Debug)]
pub struct Registered {
    /// The controller row.
    pub controller: Controller,
    /// The session token (bearer secret).
    pub token: Secret,
    /// The master epoch after registering.
    pub epoch: u64,
}

/// One controller as `master status` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerView {
    /// The row.
    pub controller: Controller,
    /// Heartbeat within the freshness threshold.
    pub fresh: bool,
}

/// The project's topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The master slot.
    pub slot: MasterSlot,
    /// Every controller.
    pub controllers: Vec<ControllerView>,
    /// The threshold used for `fresh`.
    pub freshness: Duration,
    /// When it was read.
    pub now: Millis,
    /// The project's maintenance pause, when one holds now (issue 30): part of the status so
    /// `master status` and its watchers see a pause or resume as a change.
    pub paused: Option<crate::claim::work_claims::Paused>,
}

/// Names, in a verb's audit detail, the sessions its change deregistered as open
/// registration's (issue 28 point 3: an enrollment, or a registration on a coordinator
/// started without --open-registration, ends them visibly).
fn invalidated_detail(detail: &mut serde_json::Value, change: &Change) {
    if !change.delete.is_empty() {
        detail["invalidated_open_sessions"] = json!(change.delete);
    }
}

/// Largest inbox cursor any store holds: SQLite and Postgres keep cursors as signed 64-bit
/// integers, so a larger `after` is out of range everywhere (and would wrap on a cast).
pub const MAX_CURSOR: u64 = i64::MAX as u64;

/// Refuses an inbox cursor beyond [`MAX_CURSOR`], the same way on every store.
pub fn validate_cursor(after: u64) -> Result<(), ClaimError> {
    if after > MAX_CURSOR {
        return Err(ClaimError::invalid(
            "after",
            format!("inbox cursor {after} is beyond the largest cursor a store holds ({MAX_CURSOR})"),
        ));
    }
    Ok(())
}

/// Validates a master verb's names (every one of them ends up in the audit log).
fn validate_target(project: &str, req: &impl MasterTarget) -> Result<(), ClaimError> {
    names::validate_name("project", project)?;
    names::validate_name("identity", req.to())?;
    if let Some(sid) = req.to_session() {
        names::validate_name("session id", sid)?;
    }
    Ok(())
}

impl Coordinator {
    /// A coordinator over `store`, reading time from `clock`.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, freshness: Duration) -> Coordinator {
        Coordinator {
            store,
            clock,
            freshness,
            open_registration: false,
            refusals: Arc::default(),
            ctx: RequestCtx::default(),
        }
    }

    /// The refusal limiter (its counters are on `/metrics`).
    pub fn refusals(&self) -> &RefusalLimiter {
        &self.refusals
    }

    /// Writes the summary rows of refusal windows that closed (every window with a count,
    /// with `all`: at shutdown), best effort like every failure audit.
    pub fn flush_refusals(&self, all: bool) {
        let now = self.clock.now();
        let rows = if all { self.refusals.drain(now) } else { self.refusals.due(now) };
        for row in rows {
            let _ = self.store.append_audit(&row);
        }
    }

    /// Lets identities nobody enrolled register without proof (`serve --open-registration`,
    /// a lab); enrolled identities still prove themselves.
    pub fn with_open_registration(mut self, open: bool) -> Coordinator {
        self.open_registration = open;
        self
    }

    /// Whether unenrolled identities may register without proof.
    pub fn open_registration(&self) -> bool {
        self.open_registration
    }

    /// This coordinator serving `ctx` (see [`RequestCtx`]): one value per request, made by
    /// the edge that received it.
    pub fn for_request(&self, ctx: RequestCtx) -> Coordinator {
        Coordinator {
            store: self.store.clone(),
            clock: self.clock.clone(),
            freshness: self.freshness,
            open_registration: self.open_registration,
            refusals: self.refusals.clone(),
            ctx,
        }
    }

    /// The request this value serves.
    pub fn request_ctx(&self) -> &RequestCtx {
        &self.ctx
    }

    /// The verb `audit` describes, with `input` and the `credentials` it presented, as a
    /// request under this value's id (None without one).
    fn pending(
        &self,
        audit: &AuditEntry,
        input: &impl Serialize,
        credentials: &[&Secret],
    ) -> Result<Option<Pending>, ClaimError> {
        self.ctx.id.as_ref().map(|id| Pending::new(id, audit, input, credentials)).transpose()
    }

    /// The admin credential as a credential list (empty in-process).
    fn admin_credentials(&self) -> Vec<&Secret> {
        self.ctx.admin.iter().collect()
    }

    /// The record kept for `pending`, unopened (see [`Recheck`] for what opens it).
    fn recall(&self, pending: Option<&Pending>) -> Result<Option<KeptAnswer>, ClaimError> {
        pending.map_or(Ok(None), |p| {
            let (verb, key) = p.record_key();
            self.store.recall_request(verb, key, self.clock.now())
        })
    }

    /// A replay: authorizes the caller against current state as a fresh request would,
    /// opens the kept record with the caller's credential, compares the request, and
    /// checks the answer still holds, in that order — so a caller who proves nothing gets
    /// exactly the refusal a fresh request gets, whether or not the id exists. A refusal is
    /// audited like a fresh one.
    fn answer_replay<T: DeserializeOwned>(
        &self,
        base: &AuditEntry,
        pending: &Pending,
        kept: &KeptAnswer,
        check: &Recheck<'_, T>,
    ) -> Result<T, ClaimError> {
        let snap = self.store.snapshot(&base.project)?;
        let decided = (check.authorize)(&snap)
            .and_then(|()| {
                pending.open::<T>(kept).map_err(|u| match u {
                    Unopened::Credential => (check.refuse)(),
                    Unopened::Different(e) => *e,
                })
            })
            .and_then(|answer| (check.holds)(&snap, &answer).map(|()| answer));
        decided.inspect_err(|e| self.audit_failure(base.clone(), e, Some(snap.slot.epoch)))
    }

    /// A replay for a verb whose caller already proved itself (a work verb's seat token, an
    /// admin verb's token at the server): the record must open with the caller's credential
    /// (else `refuse`) and match the request. Audits a refusal.
    fn replay_after_proof<T: DeserializeOwned>(
        &self,
        base: &AuditEntry,
        pending: Option<&Pending>,
        refuse: impl Fn() -> ClaimError,
    ) -> Result<Option<T>, ClaimError> {
        let (Some(p), Some(kept)) = (pending, self.recall(pending)?) else { return Ok(None) };
        let opened = p.open::<T>(&kept).map_err(|u| match u {
            Unopened::Credential => refuse(),
            Unopened::Different(e) => *e,
        });
        opened.map(Some).inspect_err(|e| self.audit_failure(base.clone(), e, None))
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    fn freshness_ms(&self) -> i64 {
        i64::try_from(self.freshness.as_millis()).unwrap_or(i64::MAX)
    }

    /// How the decisions judge heartbeats at `now`.
    fn judged(&self, now: Millis) -> Judged {
        Judged { now, freshness_ms: self.freshness_ms() }
    }

    fn audit(&self, project: &str, verb: &str, actor: String, target: Option<String>) -> AuditEntry {
        AuditEntry {
            at: self.clock.now(),
            project: project.to_string(),
            verb: verb.to_string(),
            actor,
            target,
            result: "ok".into(),
            epoch: None,
            detail: json!({}),
            request: None,
            reason: self.ctx.reason.clone(),
        }
    }

    /// Audits a verb refused before it reached the engine (e.g. a missing admin token).
    pub fn audit_refusal(&self, project: &str, verb: &str, actor: &str, target: Option<String>, err: &ClaimError) {
        let entry = self.audit(project, verb, actor.to_string(), target);
        self.audit_failure(entry, err, None);
    }

    /// Audits a failed verb (best effort: the verb's own error is what the caller needs).
    fn audit_failure(&self, mut entry: AuditEntry, err: &ClaimError, epoch: Option<u64>) {
        // A failure keeps no answer: its retry decides again.
        entry.request = None;
        entry.result = err.code().as_str().to_string();
        entry.epoch = epoch;
        entry.detail = err.details().unwrap_or_else(|| json!({}));
        if self.ctx.dry_run {
            entry.detail["dry_run"] = json!(true);
        }
        // A credential refusal from the network is rate-limited per source: a flood costs
        // a row and a count per interval, not a row per request (issue 28 point 4).
        if let Some(source) = self.ctx.source.filter(|_| super::refusals::limited(err.code())) {
            let admitted = self.refusals.admit(source, &entry, self.clock.now());
            for row in &admitted.summaries {
                let _ = self.store.append_audit(row);
            }
            if !admitted.audit {
                return;
            }
        }
        let _ = self.store.append_audit(&entry);
    }

    /// Runs `decide` in one store transaction; audits failures with the epoch it saw. With
    /// a request id (`pending`), a kept answer is returned instead once `check` passed
    /// ([`Coordinator::answer_replay`]), and the new answer is kept with the write.
    ///
    /// A success is audited only when its [`Decision::audit`] says so (failures always
    /// are). A request id's answer rides on the audit row, so a success without one (a
    /// routine heartbeat, which changes nothing a retry could repeat harmfully) keeps no
    /// answer.
    fn run<T: Serialize + DeserializeOwned>(
        &self,
        base: AuditEntry,
        pending: Option<Pending>,
        check: Recheck<'_, T>,
        mut decide: impl FnMut(&Snapshot, Millis) -> Result<Decision<T>, ClaimError>,
    ) -> Result<T, ClaimError> {
        if self.ctx.dry_run {
            return self.plan(base, |snap, now| decide(snap, now).map(|d| d.answer));
        }
        if let (Some(p), Some(kept)) = (pending.as_ref(), self.recall(pending.as_ref())?) {
            return self.answer_replay(&base, p, &kept, &check);
        }
        let project = base.project.clone();
        let mut out: Option<T> = None;
        let mut seen_epoch = None;
        let result = self.store.transact(&project, &mut |snap| {
            seen_epoch = Some(snap.slot.epoch);
            let now = self.clock.now();
            let Decision { change, answer, epoch, audit } = decide(snap, now)?;
            let detail = with_master_change(audit, snap, &change);
            let mut audit = detail.map(|detail| AuditEntry { at: now, epoch: Some(epoch), detail, ..base.clone() });
            if let Some(a) = audit.as_mut() {
                a.request = pending.as_ref().map(|p| p.record(&answer, now)).transpose()?;
            }
            out = Some(answer);
            Ok((change, audit))
        });
        match result {
            Ok(_) => out.ok_or_else(|| ClaimError::store("transaction committed without a decision")),
            Err(e) => {
                self.audit_failure(base, &e, seen_epoch);
                Err(e)
            }
        }
    }

    /// A dry run of a verb (see [`Coordinator::with_dry_run`]): `decide` on one snapshot, the
    /// change thrown away. No request id is recalled or kept: a plan is not an answer a
    /// retry may be given. A refusal is audited as the real run's would be.
    fn plan<T>(
        &self,
        base: AuditEntry,
        mut decide: impl FnMut(&Snapshot, Millis) -> Result<T, ClaimError>,
    ) -> Result<T, ClaimError> {
        let mut seen_epoch = None;
        let planned = self.store.snapshot(&base.project).and_then(|snap| {
            seen_epoch = Some(snap.slot.epoch);
            decide(&snap, self.clock.now())
        });
        planned.inspect_err(|e| self.audit_failure(base, e, seen_epoch))
    }

    /// `session register`: UPSERT on (project, identity, surface, machine_id).
    pub fn register(&self, project: &str, req: &RegisterRequest) -> Result<Registered, ClaimError> {
        let key = &req.key();
        let identity_key = req.identity_key.clone().map(Secret::new);
        let previous_token = req.previous_token.clone().map(Secret::new);
        let credentials = Credentials { identity_key: identity_key.as_ref(), token: previous_token.as_ref() };
        names::validate_name("project", project)?;
        names::validate_name("identity", &key.identity)?;
        names::validate_name("surface", &key.surface)?;
        names::validate_name("machine id", &key.machine_id)?;
        let token = secret::new_session_token()?;
        let hash = secret::token_hash(&token);
        let fresh_id = secret::new_session_id();
        let key_hash = credentials.identity_key.map(secret::token_hash);
        let token_hash = credentials.token.map(secret::token_hash);
        let proof = RegisterProof {
            key_hash: key_hash.as_deref(),
            token_hash: token_hash.as_deref(),
            open: self.open_registration,
        };
        let f = self.freshness_ms();
        let base = self.audit(project, verb_names::SESSION_REGISTER, format!("identity:{}", key.identity), None);
        // The credentials are part of the request: a retry must present them again to be
        // answered (as digests; the key and token themselves are never kept).
        let input = json!({"key": key, "identity_key": key_hash, "previous_token": token_hash});
        let presented: Vec<&Secret> = [credentials.identity_key, credentials.token].into_iter().flatten().collect();
        let pending = self.pending(&base, &input, &presented)?;
        // The token is part of the answer: a retry of a registration whose reply was lost
        // must get the session token that was stored (hashed) then, not a new one. Kept only
        // sealed under the credential the request presented; an open registration presented
        // none, so its token is not kept at all (its replay answers `answer_not_kept`).
        let keep_token = pending.as_ref().is_some_and(Pending::can_keep_secrets);
        let kept_token = keep_token.then(|| token.expose().to_string());
        let check = self.register_recheck(project, key, key_hash.as_deref(), token_hash.is_some());
        let (controller, epoch, kept): (Controller, u64, Option<String>) =
            self.run(base, pending, check, |snap, now| {
                let (change, row) = masters::register(snap, key, fresh_id.clone(), hash.clone(), proof, now, f)?;
                let epoch = change.slot.as_ref().map_or(snap.slot.epoch, |s| s.epoch);
                let mut detail = json!({"session_id": row.session_id, "surface": row.surface, "machine_id": row.machine_id,
                                "is_master": row.is_master});
                invalidated_detail(&mut detail, &change);
                Ok(Decision::audited(change, (row, epoch, kept_token.clone()), epoch, detail))
            })?;
        // A replay's answer always holds its token (the recheck refuses one without); a fresh
        // answer holds it only when it was kept, and this call made it either way.
        let token = kept.map_or(token, Secret::new);
        Ok(Registered { controller, token, epoch })
    }

    /// What a replayed `session register` must pass (issue 28 point 2: a kept answer
    /// returned a live token after the identity's key was rotated or removed, or its session
    /// deregistered or replaced):
    ///
    /// - the proof again, on current state: a key presented must still be the identity's
    ///   enrolled key (rotation and removal refuse it, `unauthorized`); a previous token
    ///   presented was consumed by the registration itself (the row now carries the new
    ///   token), so its proof is that it opens the sealed record; no credential at all is
    ///   proof only while the identity is open to registration;
    /// - the session the kept answer names must still exist with the kept token's hash and
    ///   the same key: deregistered, expired and removed sessions, and rows registered again
    ///   since (a new token: the live-session rule now protects *that* controller), answer
    ///   `answer_not_kept`, never the old token;
    /// - the token must have been kept (sealed) at all.
    fn register_recheck<'a>(
        &'a self,
        project: &'a str,
        key: &'a ControllerKey,
        key_hash: Option<&'a str>,
        presented_token: bool,
    ) -> Recheck<'a, (Controller, u64, Option<String>)> {
        let unproven =
            move || ClaimError::RegistrationUnproven { project: project.to_string(), identity: key.identity.clone() };
        let open = self.open_registration;
        let authorize = move |snap: &Snapshot| {
            let enrolled = snap.identity(&key.identity);
            let proven = match key_hash {
                Some(kh) => enrolled.is_some_and(|e| secret::token_hash_matches(&e.key_hash, kh)),
                None => presented_token || (open && enrolled.is_none()),
            };
            if proven { Ok(()) } else { Err(unproven()) }
        };
        let request_id = self.ctx.id.as_ref().map(|r| r.to_string()).unwrap_or_default();
        Recheck::proven_by(authorize, unproven).holding(
            move |snap: &Snapshot, (row, _, token): &(Controller, u64, Option<String>)| {
                let not_kept = |reason: &str| ClaimError::AnswerNotKept {
                    request_id: request_id.clone(),
                    verb: verb_names::SESSION_REGISTER.into(),
                    reason: reason.into(),
                };
                if token.is_none() {
                    return Err(not_kept("the request presented no credential to seal its session token under"));
                }
                let live = snap.controller(&row.session_id).is_some_and(|c| {
                    secret::token_hash_matches(&c.token_hash, &row.token_hash)
                        && (&c.identity, &c.surface, &c.machine_id) == (&row.identity, &row.surface, &row.machine_id)
                });
                if live {
                    Ok(())
                } else {
                    Err(not_kept(&format!(
                        "session {} was deregistered, expired, removed or registered again since",
                        row.session_id
                    )))
                }
            },
        )
    }

    /// `session heartbeat`. A routine beat changes nothing worth auditing and is counted on
    /// `/metrics` instead (1,000 controllers beating every 10 s would write 8.6 M audit rows a
    /// day); a beat from a controller that had gone stale (no beat within the freshness
    /// threshold) is audited, with how long it was silent: that is when routing changed.
    /// Refused beats are always audited.
    pub fn heartbeat(&self, project: &str, session_id: &str, token: &Secret) -> Result<Controller, ClaimError> {
        names::validate_name("project", project)?;
        names::validate_name("session id", session_id)?;
        let hash = secret::token_hash(token);
        let f = self.freshness_ms();
        let base = self.audit(project, verb_names::SESSION_HEARTBEAT, format!("session:{session_id}"), None);
        let pending = self.pending(&base, &json!({"token": hash}), &[token])?;
        let unauthorized =
            || ClaimError::Unauthorized { project: project.to_string(), session_id: session_id.to_string() };
        let check = Recheck::proven_by(
            |snap| {
                masters::authenticate(&masters::visible(snap, self.open_registration), session_id, &hash).map(|_| ())
            },
            unauthorized,
        );
        self.run(base, pending, check, |snap, now| {
            let previous = snap.controller(session_id).map(|c| c.last_heartbeat);
            let (change, row) =
                masters::heartbeat(&masters::visible(snap, self.open_registration), session_id, &hash, now)?;
            let detail = previous
                .filter(|&p| now.saturating_sub(p) > f)
                .map(|p| json!({"back_after_stale_ms": now.saturating_sub(p), "last_heartbeat": p}));
            Ok(Decision { change, answer: row, epoch: snap.slot.epoch, audit: detail })
        })
    }

    /// `session deregister`; returns whether it was master, and the epoch after.
    pub fn deregister(&self, project: &str, session_id: &str, token: &Secret) -> Result<(bool, u64), ClaimError> {
        names::validate_name("project", project)?;
        names::validate_name("session id", session_id)?;
        let hash = secret::token_hash(token);
        let base = self.audit(project, verb_names::SESSION_DEREGISTER, format!("session:{session_id}"), None);
        let pending = self.pending(&base, &json!({"token": hash}), &[token])?;
        // The session is gone after the first attempt, so no current state proves the token:
        // the sealed record does (only the token it was sealed under opens it).
        let check = Recheck::authorized(|| ClaimError::Unauthorized {
            project: project.to_string(),
            session_id: session_id.to_string(),
        });
        self.run(base, pending, check, |snap, _| {
            let (change, was_master) =
                masters::deregister(&masters::visible(snap, self.open_registration), session_id, &hash)?;
            let epoch = change.slot.as_ref().map_or(snap.slot.epoch, |s| s.epoch);
            Ok(Decision::audited(change, (was_master, epoch), epoch, json!({"was_master": was_master})))
        })
    }

    /// `master status`: read-only, straight from the authoritative store.
    pub fn status(&self, project: &str) -> Result<Status, ClaimError> {
        names::validate_name("project", project)?;
        let snap = self.store.snapshot(project)?;
        let now = self.clock.now();
        let f = self.freshness_ms();
        let controllers =
            snap.controllers.into_iter().map(|c| ControllerView { fresh: c.is_fresh(now, f), controller: c }).collect();
        let paused = self.paused_at(project, now)?;
        Ok(Status { slot: snap.slot, controllers, freshness: self.freshness, now, paused })
    }

    /// Resolves a target without changing anything (for the confirmation prompt).
    pub fn preview_target(
        &self,
        project: &str,
        to_identity: &str,
        to_session: Option<&str>,
    ) -> Result<Controller, ClaimError> {
        let snap = self.store.snapshot(project)?;
        masters::resolve_target(&snap, to_identity, to_session, self.clock.now(), self.freshness_ms()).cloned()
    }

    /// `master handoff`: the caller, authenticated by its session token, must be master.
    pub fn handoff(&self, project: &str, req: &HandoffRequest, token: &Secret) -> Result<MasterOutcome, ClaimError> {
        let c = self.for_request(self.ctx.clone().planned(req.reason.clone(), req.dry_run)?);
        validate_target(project, req)?;
        let caller = req.session_id.as_str();
        names::validate_name("session id", caller)?;
        let hash = secret::token_hash(token);
        let base = c.audit(project, verb_names::MASTER_HANDOFF, format!("session:{caller}"), Some(target_text(req)));
        let pending = c.pending(&base, &json!({"request": request_input(project, req), "token": hash}), &[token])?;
        let unauthorized = || ClaimError::Unauthorized { project: project.to_string(), session_id: caller.to_string() };
        let check = Recheck::proven_by(
            |snap| masters::authenticate(&masters::visible(snap, c.open_registration), caller, &hash).map(|_| ()),
            unauthorized,
        );
        c.run(base, pending, check, |snap, now| {
            let snap = &*masters::visible(snap, c.open_registration);
            let (change, mut out) = masters::handoff(snap, &hash, req, c.judged(now))?;
            out.dry_run = c.ctx.dry_run;
            let detail = outcome_detail(&out, None);
            Ok(Decision::audited(change, out.clone(), out.epoch, detail))
        })
    }

    /// `master claim`: operator-authorized preempt of the named target. A refusal for bad
    /// credentials is held back by the operator id's back-off ([`secret::failure_delay`]) on
    /// this thread before it returns; a server holds it back itself instead
    /// ([`Coordinator::master_claim_unheld`]).
    pub fn master_claim(&self, project: &str, req: &MasterClaimRequest) -> Result<MasterOutcome, ClaimError> {
        let result = self.master_claim_unheld(project, req);
        if let Err(ClaimError::InvalidOperatorCredentials { next_delay_ms }) = &result {
            self.clock.sleep(Duration::from_millis(*next_delay_ms));
        }
        result
    }

    /// [`Coordinator::master_claim`] without the hold-back: a bad-credentials refusal
    /// returns at once and says (`next_delay_ms`) how long the caller must hold it back
    /// before answering.
    pub fn master_claim_unheld(&self, project: &str, req: &MasterClaimRequest) -> Result<MasterOutcome, ClaimError> {
        let c = self.for_request(self.ctx.clone().planned(req.reason.clone(), req.dry_run)?);
        validate_target(project, req)?;
        let operator_id = req.operator.as_str();
        names::validate_name("operator id", operator_id)?;
        let base =
            c.audit(project, verb_names::MASTER_CLAIM, format!("operator:{operator_id}"), Some(target_text(req)));
        if let Err(e) = c.verify_operator(operator_id, &Secret::new(req.password.clone())) {
            c.audit_failure(base, &e, None);
            return Err(e);
        }
        // The password is checked above on every attempt, a retry included, and never
        // enters the fingerprint or a seal key (a fast digest of it would be a way to guess
        // it): the answer holds no secret and is kept unsealed.
        let pending = c.pending(&base, &request_input(project, req), &[])?;
        let check = Recheck::authorized(|| ClaimError::InvalidOperatorCredentials { next_delay_ms: 0 });
        c.run(base, pending, check, |snap, now| {
            let snap = &*masters::visible(snap, c.open_registration);
            let (change, mut out) = masters::master_claim(snap, req, c.judged(now))?;
            out.dry_run = c.ctx.dry_run;
            let detail = outcome_detail(&out, Some(operator_id));
            Ok(Decision::audited(change, out.clone(), out.epoch, detail))
        })
    }

    /// Checks an operator's password at once, with no wait before the hash (issue 19:
    /// a back-off served *before* verifying let strangers' wrong guesses lock the real
    /// operator out). A wrong password (or an unknown id, verified against a decoy hash so
    /// it costs the same argon2 time) is counted against the id, and its refusal carries the
    /// back-off that count earned, which the caller holds back before answering: the
    /// guesser waits, the operator with the right password does not. The count decays with
    /// time ([`secret::FAILURE_DECAY_MS`]) and a success resets it.
    fn verify_operator(&self, operator_id: &str, password: &Secret) -> Result<(), ClaimError> {
        let record = self.store.operator(operator_id)?;
        let stored = record.as_ref().map_or(secret::DECOY_HASH, |r| r.password_hash.as_str());
        if secret::verify_password(stored, password) && record.is_some() {
            return self.store.attempt_succeeded(operator_id);
        }
        let counted_as = if record.is_some() { operator_id.to_string() } else { unknown_operator_key(operator_id) };
        let failures = self.store.record_failure(&counted_as, self.clock.now())?;
        let hold = secret::failure_delay(failures);
        Err(ClaimError::InvalidOperatorCredentials {
            next_delay_ms: u64::try_from(hold.as_millis()).unwrap_or(u64::MAX),
        })
    }

    /// The real time `d` of this coordinator's clock takes (shorter under `--time-scale`),
    /// for a server that holds an answer back on its own timer.
    pub fn real_duration(&self, d: Duration) -> Duration {
        self.clock.real_duration(d)
    }

    /// `operator add`: stores an argon2id hash; an existing id is never overwritten. Audited
    /// as the request's [`Actor`].
    pub fn add_operator(&self, req: &OperatorRequest) -> Result<(), ClaimError> {
        let (operator_id, actor) = (req.operator_id.as_str(), self.ctx.actor.as_str());
        let password = &Secret::new(req.password.clone());
        names::validate_name("operator id", operator_id)?;
        let password_hash = secret::hash_password(password)?;
        let now = self.clock.now();
        let rec = OperatorRecord { operator_id: operator_id.to_string(), password_hash, created_at: now };
        let mut audit = self.audit("", verb_names::OPERATOR_ADD, actor.into(), Some(format!("operator:{operator_id}")));
        // The password stays out of the fingerprint (see `claim`): a retry is the same
        // operator id from the same actor.
        let pending = self.pending(&audit, &operator_id, &self.admin_credentials())?;
        if let Some(()) = self.replay_after_proof(&audit, pending.as_ref(), || ClaimError::AdminRequired)? {
            return Ok(());
        }
        audit.request = pending.as_ref().map(|p| p.record(&(), now)).transpose()?;
        match self.store.insert_operator(&rec, &audit) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.audit_failure(audit, &e, None);
                Err(e)
            }
        }
    }

    /// Inbox events for `identity`, after `cursor`; `token` must be a session token of a
    /// controller registered as `identity` (an inbox says who was preempted and which
    /// claims were handed on: not for everyone who reaches the coordinator).
    pub fn inbox(
        &self,
        project: &str,
        identity: &str,
        after: u64,
        limit: usize,
        token: Option<&Secret>,
    ) -> Result<Vec<Event>, ClaimError> {
        names::validate_name("project", project)?;
        names::validate_name("identity", identity)?;
        validate_cursor(after)?;
        let act = || format!("reading the inbox of {identity}");
        if let Err(e) = self.prove_identity(project, identity, token, act) {
            self.audit_refusal(project, verb_names::INBOX_READ, "anonymous", Some(identity.to_string()), &e);
            return Err(e);
        }
        self.store.inbox(project, identity, after, limit)
    }

    /// The newest `limit` audit rows for `project` (all projects when None), oldest first.
    pub fn audit_log(&self, project: Option<&str>, limit: usize) -> Result<Vec<AuditEntry>, ClaimError> {
        self.store.audit_log(project, limit)
    }

    /// The clock's time.
    pub fn now(&self) -> Millis {
        self.clock.now()
    }
}

/// Unknown operator ids that share one failure count (issue 39 point 3).
pub const UNKNOWN_OPERATOR_BUCKETS: u8 = 255;

/// The failure count a wrong attempt for an operator id that does not exist goes to: one
/// of [`UNKNOWN_OPERATOR_BUCKETS`] keys by a digest of the id, never the id itself. Every
/// distinct unknown id used to get a row of its own in the attempts table, so guesses
/// carrying fresh ids grew the store by a row each (10,000 refusals: ~3 MB on Postgres).
/// Sharing keeps the timing an unknown id shows (its back-off doubles as it is retried,
/// like a real id's) and bounds the rows. The key holds a control character, which no
/// real operator id may ([`names::validate_name`]), so it cannot be anyone's count.
fn unknown_operator_key(operator_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let bucket = Sha256::digest(operator_id.as_bytes())[0] % UNKNOWN_OPERATOR_BUCKETS;
    format!("\u{1}unknown operator {bucket}")
}

/// A master verb's request as its fingerprint input (see [`super::requests`]). Without the
/// expected epoch: the CLI fills it from a status read when `--expect-epoch` is absent, and
/// a retry's read sees the epoch the first attempt moved, so it would never match.
fn request_input(project: &str, req: &impl MasterTarget) -> serde_json::Value {
    json!([project, req.to(), req.to_session()])
}

/// The target as the audit row names it.
fn target_text(req: &impl MasterTarget) -> String {
    match req.to_session() {
        Some(s) => format!("{} ({s})", req.to()),
        None => req.to().to_string(),
    }
}

/// Marks a change of master in its audit row's detail (`master_change: {from, to}`, each a
/// `{identity, session_id}` or null): the record `master history` reads (issue 30). Done
/// here, for every verb [`Coordinator::run`] commits, rather than in each verb, so
/// no path that moves the epoch (register into an empty slot, handoff, claim, deregister,
/// identity add or remove ending a master's session, a closed coordinator cleaning up open
/// rows) can leave it out; the row is then written even for a verb that audits only some
/// successes.
fn with_master_change(
    detail: Option<serde_json::Value>,
    snap: &Snapshot,
    change: &Change,
) -> Option<serde_json::Value> {
    let Some(slot) = change.slot.as_ref().filter(|s| s.epoch != snap.slot.epoch) else { return detail };
    let mut detail = detail.unwrap_or_else(|| json!({}));
    detail[MASTER_CHANGE] = json!({"from": snap.slot.master, "to": slot.master});
    Some(detail)
}

fn outcome_detail(out: &MasterOutcome, by_operator: Option<&str>) -> serde_json::Value {
    json!({
        "previous_master": out.previous_master,
        "new_master": out.new_master,
        "preempted": out.preempted,
        "changed": out.changed,
        "by_operator": by_operator,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::clock::ManualClock;
    use crate::claim::stores::sqlite::SqliteStore;

    /// A coordinator over a fresh SQLite file, with open registration (also for the
    /// engine's other test modules).
    pub(super) fn coordinator() -> (tempfile::TempDir, Arc<ManualClock>, Coordinator) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("c.sqlite")).unwrap());
        let clock = Arc::new(ManualClock::at(1_700_000_000_000));
        // Open registration: these tests are about throttles and freshness, not enrollment
        // (master.rs and tests/it/identity.rs cover that).
        let c = Coordinator::new(store, clock.clone(), DEFAULT_FRESHNESS).with_open_registration(true);
        (dir, clock, c)
    }

    pub(super) fn key(identity: &str, machine: &str) -> ControllerKey {
        ControllerKey { identity: identity.into(), surface: "cli".into(), machine_id: machine.into() }
    }

    /// `operator add` of `id` with `password`.
    pub(super) fn operator(id: &str, password: &str) -> OperatorRequest {
        OperatorRequest { operator_id: id.into(), password: password.into() }
    }

    /// A master claim of `to` from `expect_epoch`, by operator `id` with `password`.
    pub(super) fn master_claim(to: &str, expect_epoch: u64, id: &str, password: &str) -> MasterClaimRequest {
        MasterClaimRequest {
            to: to.into(),
            expect_epoch,
            operator: id.into(),
            password: password.into(),
            ..MasterClaimRequest::default()
        }
    }

    /// Issue 39 point 3: wrong attempts naming operator ids that do not exist are counted
    /// in a bounded number of shared keys, never one row per id, and no shared key can be a
    /// real operator's.
    #[test]
    fn unknown_operator_ids_share_a_bounded_number_of_failure_counts() {
        let keys: std::collections::BTreeSet<String> =
            (0..10_000).map(|i| unknown_operator_key(&format!("guess-{i}"))).collect();
        assert!(keys.len() <= usize::from(UNKNOWN_OPERATOR_BUCKETS), "{}", keys.len());
        assert!(keys.iter().all(|k| names::validate_name("operator id", k).is_err()));
        let (d, _clock, c) = coordinator();
        c.add_operator(&operator("ops", "right")).unwrap();
        let a = c.register("p", &RegisterRequest::of(&key("alice", "h1"), None, None)).unwrap();
        for id in ["nobody-1", "nobody-2", "nobody-3"] {
            assert!(matches!(
                c.master_claim("p", &master_claim("alice", a.epoch, id, "x")),
                Err(ClaimError::InvalidOperatorCredentials { .. })
            ));
        }
        let db = rusqlite::Connection::open(d.path().join("c.sqlite")).unwrap();
        let ids: Vec<String> = db
            .prepare("SELECT operator_id FROM operator_attempts")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(ids.iter().all(|i| i.starts_with('\u{1}')), "{ids:?}");
    }

    #[test]
    fn failed_passwords_earn_a_growing_delay_and_success_resets_it() {
        let (_d, clock, c) = coordinator();
        c.add_operator(&operator("ops", "right")).unwrap();
        let a = c.register("p", &RegisterRequest::of(&key("alice", "h1"), None, None)).unwrap();
        c.register("p", &RegisterRequest::of(&key("bob", "h1"), None, None)).unwrap();
        for expected_next in [250, 500, 1000] {
            match c.master_claim("p", &master_claim("bob", a.epoch, "ops", "wrong")) {
                Err(ClaimError::InvalidOperatorCredentials { next_delay_ms }) => {
                    assert_eq!(next_delay_ms, expected_next)
                }
                other => panic!("{other:?}"),
            }
        }
        let slept: Vec<u128> = clock.sleeps().iter().map(|d| d.as_millis()).collect();
        assert_eq!(slept, [250, 500, 1000], "each refusal is held back by the back-off it earned");
        c.master_claim("p", &master_claim("bob", a.epoch, "ops", "right")).unwrap();
        assert_eq!(clock.sleeps().len(), 3, "the right password is not held back by earlier failures");
        let now = c.now();
        assert_eq!(c.store().record_failure("ops", now).unwrap(), 1, "success reset the count");
        c.store().attempt_succeeded("ops").unwrap();
        // An unknown operator is refused the same way, with the same growing delay.
        for expected_next in [250, 500] {
            match c.master_claim("p", &master_claim("bob", a.epoch, "nobody", "right")) {
                Err(ClaimError::InvalidOperatorCredentials { next_delay_ms }) => {
                    assert_eq!(next_delay_ms, expected_next)
                }
                other => panic!("{other:?}"),
            }
        }
        let audit = c.audit_log(None, 100).unwrap();
        let results: Vec<&str> = audit.iter().filter(|a| a.verb == "master.claim").map(|a| a.result.as_str()).collect();
        assert_eq!(
            results,
            ["invalid_operator_credentials"; 3]
                .iter()
                .copied()
                .chain(["ok", "invalid_operator_credentials", "invalid_operator_credentials"])
                .collect::<Vec<_>>()
        );
        assert!(!format!("{audit:?}").contains("right") && !format!("{audit:?}").contains("wrong"));
    }

    #[test]
    fn parallel_guesses_are_each_held_back_longer_instead_of_all_the_same() {
        let (_d, clock, c) = coordinator();
        c.add_operator(&operator("ops", "right")).unwrap();
        let req = master_claim("bob", 0, "ops", "wrong");
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| assert!(c.master_claim("p", &req).is_err()));
            }
        });
        let mut slept: Vec<u128> = clock.sleeps().iter().map(|d| d.as_millis()).collect();
        slept.sort();
        assert_eq!(slept, [250, 500, 1000, 2000]);
    }

    #[test]
    fn freshness_follows_the_clock() {
        let (_d, clock, c) = coordinator();
        let a = c.register("p", &RegisterRequest::of(&key("alice", "h1"), None, None)).unwrap();
        c.register("p", &RegisterRequest::of(&key("bob", "h1"), None, None)).unwrap();
        clock.advance(30_001);
        c.heartbeat("p", &a.controller.session_id, &a.token).unwrap();
        let st = c.status("p").unwrap();
        let fresh: Vec<(String, bool)> =
            st.controllers.iter().map(|v| (v.controller.identity.clone(), v.fresh)).collect();
        assert!(fresh.contains(&("alice".into(), true)) && fresh.contains(&("bob".into(), false)));
        let req = HandoffRequest {
            session_id: a.controller.session_id.clone(),
            to: "bob".into(),
            expect_epoch: 1,
            ..HandoffRequest::default()
        };
        assert!(matches!(c.handoff("p", &req, &a.token), Err(ClaimError::TargetStale { .. })));
    }

    #[test]
    fn operators_are_never_overwritten() {
        let (_d, _clock, c) = coordinator();
        c.add_operator(&operator("ops", "one")).unwrap();
        assert_eq!(c.add_operator(&operator("ops", "two")), Err(ClaimError::OperatorExists("ops".into())));
        assert!(secret::verify_password(
            &c.store().operator("ops").unwrap().unwrap().password_hash,
            &Secret::new("one".into())
        ));
    }

    #[test]
    fn the_back_off_decays_with_time() {
        let (_d, _clock, c) = coordinator();
        let (t, decay) = (c.now(), secret::FAILURE_DECAY_MS);
        for n in 1..=3 {
            assert_eq!(c.store().record_failure("ops", t + i64::from(n)).unwrap(), n);
        }
        assert_eq!(c.store().record_failure("ops", t + 3 + 2 * decay).unwrap(), 2, "two quiet minutes forgave two");
        assert_eq!(
            c.store().record_failure("ops", t + 3 + 2 * decay + 30_000).unwrap(),
            3,
            "half a minute forgives none"
        );
        assert_eq!(c.store().record_failure("ops", t + 1000 * decay).unwrap(), 1, "never below this one failure");
    }

    #[test]
    fn cursors_beyond_the_store_range_are_refused() {
        assert!(validate_cursor(0).is_ok());
        assert!(validate_cursor(MAX_CURSOR).is_ok());
        for bad in [MAX_CURSOR + 1, u64::MAX] {
            assert_eq!(validate_cursor(bad).unwrap_err().code(), crate::error::ErrorCode::InvalidArgument);
        }
    }
}
