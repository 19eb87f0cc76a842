//! Seed 002 (issue 8): work claims with deputy, TTL, mandatory next step, doorbells, focus
//! leases, the steward report and the sweep — each rule as a named test on the embedded
//! SQLite store and on Redis + Postgres, driven through the engine with a manual clock, and
//! the seed's 8-seat validation exercise as a deterministic simulation.

// The tests handle the engine's own error type, as a caller sees it (Remote carries a JSON
// object, which makes it large).
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use writerctl::claim::Coordinator;
use writerctl::claim::clock::{Clock, ManualClock};
use writerctl::claim::engine::{IssuedKey, RequestCtx};
use writerctl::claim::error::ClaimError;
use writerctl::claim::masters::{ControllerKey, RegisterRequest};
use writerctl::claim::model::Millis;
use writerctl::claim::secret::Secret;
use writerctl::claim::stores::Store;
use writerctl::claim::stores::sqlite::SqliteStore;
use writerctl::claim::work_claims::{
    CLAIM_RELEASED, ChannelRequest, FocusLease, FocusOutcome, FocusRequest, MAX_FOCUS_MINUTES, ReleaseRequest,
    SweepReport, SweepRequest, TakeRequest, TaskAddress, TouchRequest, WorkClaim, WorkClaimOutcome, WorkClaimStatus,
};
use writerctl::coordinator::api::Endpoint;
use writerctl::coordinator::client::HttpCoordinator;
use writerctl::coordinator::verbs::{admin, master, work};
use writerctl::coordinator::wire::{ChannelPath, IdentityPath, IdentityReq, InboxQuery, NoBody, ProjectPath, TaskPath};
use writerctl::error::ErrorCode;

use crate::services::Ns;

const T0: Millis = 1_800_000_000_000;
const M: i64 = 60_000;
const P: &str = "fleet";
const CH: &str = "integration";
const STEWARD: &str = "steward";

/// One backend under test: a coordinator over it, its manual clock, and what keeps it alive.
struct Backend {
    name: &'static str,
    coord: Coordinator,
    /// The same coordinator behind the verbs, as a command runs them in-process.
    endpoint: Endpoint,
    /// Each seat's session token (enrolled and registered on first use).
    tokens: std::sync::Mutex<BTreeMap<String, Secret>>,
    clock: Arc<ManualClock>,
    /// Opens another store instance on the same data (another process, another replica).
    reopen: Box<dyn Fn() -> Arc<dyn Store>>,
    _dir: Option<tempfile::TempDir>,
    _ns: Option<Arc<Ns>>,
}

fn coordinator(store: Arc<dyn Store>, clock: &Arc<ManualClock>) -> Coordinator {
    Coordinator::new(store, clock.clone(), Duration::from_secs(30))
}

fn embedded(c: &Coordinator) -> Endpoint {
    Endpoint::Embedded(c.for_request(RequestCtx::default()))
}

/// The embedded store, and Redis + Postgres when the services answer (a loud skip otherwise).
fn backends(test: &str) -> Vec<Backend> {
    let clock = Arc::new(ManualClock::at(T0));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coord.sqlite");
    let sqlite: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let coord = coordinator(sqlite, &clock);
    let mut out = vec![Backend {
        name: "sqlite",
        endpoint: embedded(&coord),
        coord,
        tokens: Default::default(),
        clock,
        reopen: Box::new(move || Arc::new(SqliteStore::open(&path).unwrap())),
        _dir: Some(dir),
        _ns: None,
    }];
    if let Some(ns) = Ns::new(test) {
        let ns = Arc::new(ns);
        let clock = Arc::new(ManualClock::at(T0));
        let store: Arc<dyn Store> = ns.store();
        let again = ns.clone();
        let coord = coordinator(store, &clock);
        out.push(Backend {
            name: "redis_pg",
            endpoint: embedded(&coord),
            coord,
            tokens: Default::default(),
            clock,
            reopen: Box::new(move || again.store()),
            _dir: None,
            _ns: Some(ns),
        });
    }
    out
}

/// Enrolls `seat` in project `P` (or gives it a new key if enrolled) and registers a
/// controller as it with that key: the session token a seat proves its writes with.
pub(crate) fn seat_token(api: &Endpoint, seat: &str) -> Secret {
    let enrolled = api.call::<admin::AddIdentity>(ProjectPath::of(P), IdentityReq { identity: seat.into() }, None);
    let key = match enrolled {
        Ok(k) => IssuedKey::from(k).key,
        Err(e) if e.code() == ErrorCode::IdentityExists => {
            IssuedKey::from(api.call::<admin::RotateIdentity>(IdentityPath::of(P, seat), NoBody {}, None).unwrap()).key
        }
        Err(e) => panic!("enroll {seat}: {e}"),
    };
    let controller = ControllerKey { identity: seat.into(), surface: "cli".into(), machine_id: "drill".into() };
    let req = RegisterRequest::of(&controller, Some(&key), None);
    Secret::new(api.call::<master::Register>(ProjectPath::of(P), req, None).unwrap().token)
}

/// Task `task` of channel `CH`.
fn at(task: &str) -> TaskAddress {
    TaskAddress::new(P, CH, task)
}

impl Backend {
    /// `seat`'s session token, registering it on first use.
    fn token(&self, seat: &str) -> Secret {
        let mut tokens = self.tokens.lock().unwrap();
        tokens.entry(seat.to_string()).or_insert_with(|| seat_token(&self.endpoint, seat)).clone()
    }

    fn take_r(&self, at: &TaskAddress, req: &TakeRequest) -> Result<WorkClaimOutcome, ClaimError> {
        self.coord.take_work_claim(at, req, Some(&self.token(&req.seat)))
    }

    fn touch_r(&self, at: &TaskAddress, req: &TouchRequest) -> Result<WorkClaimOutcome, ClaimError> {
        self.coord.touch_work_claim(at, req, Some(&self.token(&req.seat)))
    }

    fn release_r(&self, at: &TaskAddress, req: &ReleaseRequest) -> Result<WorkClaim, ClaimError> {
        self.coord.release_work_claim(at, req, Some(&self.token(&req.seat)))
    }

    fn focus_start_r(&self, seat: &str, minutes: u32) -> Result<FocusOutcome, ClaimError> {
        self.coord.focus_start(P, seat, &FocusRequest { minutes }, Some(&self.token(seat)))
    }

    fn focus_end_r(&self, seat: &str) -> Result<FocusLease, ClaimError> {
        self.coord.focus_end(P, seat, Some(&self.token(seat)))
    }

    fn inbox_events(&self, who: &str, limit: usize) -> Vec<writerctl::claim::model::Event> {
        self.coord.inbox(P, who, 0, limit, Some(&self.token(who))).unwrap()
    }

    fn channel(&self) {
        self.coord.create_channel(P, &channel_req(CH, Some(30), None)).unwrap();
    }

    fn take(&self, task: &str, seat: &str, deputy: Option<&str>, ttl: Option<u32>) -> Result<WorkClaim, ClaimError> {
        self.take_r(&at(task), &take_req(seat, deputy, ttl, Some(&format!("finish {task}")))).map(|o| o.claim)
    }

    fn touch(&self, task: &str, seat: &str, version: u64) -> Result<WorkClaim, ClaimError> {
        self.touch_r(&at(task), &touch_req(seat, version)).map(|o| o.claim)
    }

    fn show(&self, task: &str) -> WorkClaim {
        self.coord.show_work_claim(P, CH, task).unwrap()
    }

    fn advance(&self, minutes: i64) {
        self.clock.advance(minutes * M);
    }

    fn sweep(&self) -> SweepReport {
        self.coord.sweep(P, &SweepRequest::default()).unwrap()
    }

    /// `(kind, payload)` of every event in `who`'s inbox.
    fn inbox(&self, who: &str) -> Vec<serde_json::Value> {
        self.inbox_events(who, 1000).into_iter().map(|e| e.payload).collect()
    }

    fn audit(&self) -> Vec<(String, String, String, Option<String>)> {
        self.coord
            .audit_log(Some(P), 10_000)
            .unwrap()
            .into_iter()
            .filter(|a| !a.verb.starts_with("identity.") && !a.verb.starts_with("session."))
            .map(|a| (a.verb, a.actor, a.result, a.target))
            .collect()
    }
}

/// Channel `channel` of project `P`, stewarded by `STEWARD`.
fn channel_req(channel: &str, sla_minutes: Option<u32>, ttl_floor_minutes: Option<u32>) -> ChannelRequest {
    ChannelRequest { channel: channel.into(), steward: STEWARD.into(), sla_minutes, ttl_floor_minutes }
}

fn take_req(seat: &str, deputy: Option<&str>, ttl: Option<u32>, step: Option<&str>) -> TakeRequest {
    TakeRequest {
        seat: seat.into(),
        deputy: deputy.map(Into::into),
        ttl_minutes: ttl,
        next_step: step.map(Into::into),
        reason: None,
    }
}

fn touch_req(seat: &str, version: u64) -> TouchRequest {
    TouchRequest { seat: seat.into(), expect_version: Some(version), ..Default::default() }
}

fn release_req(seat: &str, version: u64, done: bool) -> ReleaseRequest {
    ReleaseRequest { seat: seat.into(), expect_version: Some(version), done, ..Default::default() }
}

fn code(r: Result<impl std::fmt::Debug, ClaimError>) -> ErrorCode {
    r.expect_err("the verb should fail").code()
}

#[test]
fn channel_create_sets_steward_sla_and_floor_and_never_overwrites() {
    for b in backends("channel_create_sets_steward_sla_and_floor_and_never_overwrites") {
        let ch = b.coord.create_channel(P, &channel_req(CH, Some(45), None)).unwrap();
        assert_eq!((ch.steward.as_str(), ch.sla_minutes, ch.ttl_floor_minutes), (STEWARD, 45, 5), "{}", b.name);
        let mallory = ChannelRequest { steward: "mallory".into(), ..channel_req(CH, None, None) };
        assert_eq!(code(b.coord.create_channel(P, &mallory)), ErrorCode::ChannelExists);
        assert_eq!(b.coord.show_channel(P, CH).unwrap().steward, STEWARD, "{}: never overwritten", b.name);
        assert_eq!(code(b.coord.create_channel(P, &channel_req("x", Some(0), None))), ErrorCode::InvalidArgument);
        assert_eq!(code(b.coord.show_channel(P, "nope")), ErrorCode::NotFound);
        assert_eq!(
            code(b.take_r(&TaskAddress::new(P, "nope", "t"), &take_req("a", None, None, None))),
            ErrorCode::NotFound
        );
    }
}

#[test]
fn one_live_claim_per_task_a_competing_take_is_claim_taken() {
    for b in backends("one_live_claim_per_task_a_competing_take_is_claim_taken") {
        b.channel();
        let row = b.take("t1", "alice", None, None).unwrap();
        assert_eq!((row.owner.as_deref(), row.status, row.version), (Some("alice"), WorkClaimStatus::Claimed, 1));
        let e = b.take("t1", "bob", None, None).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ClaimTaken, "{}", b.name);
        assert_eq!(e.details().unwrap()["owner"], "alice");
        // Taking it again oneself is no exception: still one live claim.
        assert_eq!(code(b.take("t1", "alice", None, None)), ErrorCode::ClaimTaken);
        // Released, it can be taken; done, never again.
        b.release_r(&at("t1"), &release_req("alice", 1, false)).unwrap();
        let again = b.take("t1", "bob", None, None).unwrap();
        assert_eq!((again.owner.as_deref(), again.version), (Some("bob"), 3), "{}", b.name);
        b.release_r(&at("t1"), &release_req("bob", 3, true)).unwrap();
        assert_eq!(code(b.take("t1", "carol", None, None)), ErrorCode::ClaimTaken);
        assert_eq!(b.show("t1").status, WorkClaimStatus::Done);
    }
}

#[test]
fn concurrent_takes_of_one_task_elect_exactly_one_owner() {
    for b in backends("concurrent_takes_of_one_task_elect_exactly_one_owner") {
        b.channel();
        for round in 0..5 {
            let task = format!("race-{round}");
            let n = 8;
            let barrier = Arc::new(Barrier::new(n));
            let results: Vec<Result<WorkClaim, ClaimError>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..n)
                    .map(|i| {
                        // Each racer has its own store instance: separate processes on one
                        // SQLite file, separate replicas on one Redis.
                        let c = coordinator((b.reopen)(), &b.clock);
                        let (barrier, task) = (barrier.clone(), task.clone());
                        let seat = format!("seat{i}");
                        let token = b.token(&seat);
                        s.spawn(move || {
                            barrier.wait();
                            c.take_work_claim(&at(&task), &take_req(&seat, None, None, None), Some(&token))
                                .map(|o| o.claim)
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let winners: Vec<&WorkClaim> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
            assert_eq!(winners.len(), 1, "{}: {results:?}", b.name);
            for r in results.iter().filter_map(|r| r.as_ref().err()) {
                assert_eq!(r.code(), ErrorCode::ClaimTaken, "{}", b.name);
            }
            assert_eq!(b.show(&task).owner, winners[0].owner);
            assert_eq!(b.coord.work_claim_history(P, CH, &task).unwrap().len(), 1, "{}: one take recorded", b.name);
        }
    }
}

#[test]
fn every_owner_write_is_compare_and_set_on_the_version() {
    for b in backends("every_owner_write_is_compare_and_set_on_the_version") {
        b.channel();
        let row = b.take("t", "alice", Some("bob"), Some(10)).unwrap();
        let e = b.touch("t", "alice", row.version + 1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::VersionConflict, "{}", b.name);
        assert_eq!(
            (e.details().unwrap()["version"].clone(), e.details().unwrap()["expected_version"].clone()),
            (1.into(), 2.into())
        );
        let touched = b.touch("t", "alice", 1).unwrap();
        assert_eq!(touched.version, 2);
        // The version alice read before her own touch is stale now, for release too.
        assert_eq!(code(b.release_r(&at("t"), &release_req("alice", 1, false))), ErrorCode::VersionConflict);
        // A non-owner with the right version is still refused.
        assert_eq!(code(b.touch("t", "bob", 2)), ErrorCode::NotClaimOwner);
        assert_eq!(code(b.release_r(&at("t"), &release_req("bob", 2, false))), ErrorCode::NotClaimOwner);
        assert_eq!(b.show("t"), touched, "{}: refused writes change nothing", b.name);
        // Without an expected version the owner's write applies to the current one; a
        // non-owner is still refused.
        let unchecked = TouchRequest { expect_version: None, ..touch_req("alice", 0) };
        assert_eq!(b.touch_r(&at("t"), &unchecked).unwrap().claim.version, 3, "{}", b.name);
        let unchecked = TouchRequest { expect_version: None, ..touch_req("bob", 0) };
        assert_eq!(code(b.touch_r(&at("t"), &unchecked)), ErrorCode::NotClaimOwner);
        assert_eq!(code(b.touch("missing", "alice", 1)), ErrorCode::NotFound);
    }
}

#[test]
fn a_ttl_below_the_channel_floor_is_raised_and_reported() {
    for b in backends("a_ttl_below_the_channel_floor_is_raised_and_reported") {
        b.channel();
        let out = b.take_r(&at("t"), &take_req("alice", None, Some(2), Some("x"))).unwrap();
        assert_eq!((out.claim.ttl_minutes, out.ttl_raised_from), (Some(5), Some(2)), "{}", b.name);
        let mut req = touch_req("alice", 1);
        req.ttl_minutes = Some(3);
        let out = b.touch_r(&at("t"), &req).unwrap();
        assert_eq!((out.claim.ttl_minutes, out.ttl_raised_from), (Some(5), Some(3)));
        b.coord.create_channel(P, &channel_req("slow", None, Some(30))).unwrap();
        let out = b.take_r(&TaskAddress::new(P, "slow", "u"), &take_req("a", None, Some(10), Some("x")));
        assert_eq!(out.unwrap().claim.ttl_minutes, Some(30), "{}: the floor is per channel", b.name);
        assert_eq!(code(b.take_r(&at("v"), &take_req("a", None, Some(0), Some("x")))), ErrorCode::InvalidArgument);
    }
}

#[test]
fn next_step_is_required_when_a_ttl_or_a_deputy_is_set() {
    for b in backends("next_step_is_required_when_a_ttl_or_a_deputy_is_set") {
        b.channel();
        for (deputy, ttl) in [(Some("bob"), None), (None, Some(10))] {
            let e = b.take_r(&at("t"), &take_req("alice", deputy, ttl, None)).unwrap_err();
            assert_eq!((e.code(), e.code().exit_code()), (ErrorCode::NextStepRequired, 2), "{}", b.name);
            assert_eq!(
                code(b.take_r(&at("t"), &take_req("alice", deputy, ttl, Some(" ")))),
                ErrorCode::NextStepRequired
            );
        }
        assert_eq!(code(b.coord.work_claim_history(P, CH, "t")), ErrorCode::NotFound, "{}: nothing written", b.name);
        let row = b.take_r(&at("t"), &take_req("alice", None, None, None)).unwrap().claim;
        // Adding a deputy later needs a next step too.
        let mut req = touch_req("alice", row.version);
        req.deputy = Some("bob".into());
        assert_eq!(code(b.touch_r(&at("t"), &req)), ErrorCode::NextStepRequired);
        req.next_step = Some("ship it".into());
        assert_eq!(b.touch_r(&at("t"), &req).unwrap().claim.deputy.as_deref(), Some("bob"));
    }
}

#[test]
fn the_ttl_hands_the_claim_to_the_deputy_with_handoff_from_and_a_new_version() {
    for b in backends("the_ttl_hands_the_claim_to_the_deputy_with_handoff_from_and_a_new_version") {
        b.channel();
        b.take("t", "alice", Some("bob"), Some(10)).unwrap();
        b.advance(9);
        assert!(b.sweep().released.is_empty(), "{}: not due yet", b.name);
        b.advance(1);
        let report = b.sweep();
        assert_eq!(report.released.len(), 1, "{}", b.name);
        let row = b.show("t");
        assert_eq!(row.owner.as_deref(), Some("bob"));
        assert_eq!(row.handoff_from.as_deref(), Some("alice"));
        assert_eq!((row.status, row.version, row.deputy.clone()), (WorkClaimStatus::Claimed, 2, None));
        assert_eq!(row.next_step.as_deref(), Some("finish t"), "{}: the next step travels with the claim", b.name);
        // The deputy's own clock: a full TTL from the handoff, then to open.
        b.advance(9);
        assert!(b.sweep().released.is_empty());
        b.advance(1);
        b.sweep();
        let row = b.show("t");
        assert_eq!((row.status, row.owner.clone(), row.version), (WorkClaimStatus::Released, None, 3), "{}", b.name);
        assert_eq!(row.handoff_from.as_deref(), Some("bob"));
    }
}

#[test]
fn the_ttl_without_a_deputy_opens_the_claim() {
    for b in backends("the_ttl_without_a_deputy_opens_the_claim") {
        b.channel();
        b.take("t", "alice", None, Some(5)).unwrap();
        b.advance(5);
        let report = b.sweep();
        assert_eq!(report.released[0].to, None, "{}", b.name);
        let row = b.show("t");
        assert_eq!((row.status, row.owner.clone(), row.version), (WorkClaimStatus::Released, None, 2));
        assert_eq!(row.handoff_from.as_deref(), Some("alice"));
        // Open again: anyone may take it, and the next step is waiting for them.
        let taken = b.take("t", "carol", None, None).unwrap();
        assert_eq!((taken.version, taken.next_step.as_deref()), (3, Some("finish t")), "{}", b.name);
    }
}

#[test]
fn only_owner_writes_reset_the_ttl_clock() {
    for b in backends("only_owner_writes_reset_the_ttl_clock") {
        b.channel();
        b.coord.create_channel(P, &channel_req("other", None, None)).unwrap();
        let row = b.take("t", "alice", Some("bob"), Some(10)).unwrap();
        b.advance(4);
        let touched = b.touch("t", "alice", row.version).unwrap();
        assert_eq!(touched.due_at(), Some(T0 + 14 * M), "{}: an owner touch restarts the clock", b.name);
        // Alice is dave's deputy on u, which runs out at T0 + 12: its doorbell reaches her
        // before t is due.
        b.advance(3);
        b.take_r(&TaskAddress::new(P, "other", "u"), &take_req("dave", Some("alice"), Some(5), Some("x"))).unwrap();
        // Reads, refused writes by others, sweeps and doorbells never move t's clock.
        b.advance(2);
        b.show("t");
        b.coord.list_work_claims(P, CH).unwrap();
        b.coord.work_claim_history(P, CH, "t").unwrap();
        let _ = b.touch("t", "bob", touched.version);
        let _ = b.take("t", "carol", None, None);
        assert!(b.sweep().released.is_empty());
        b.advance(3); // T0 + 12
        let report = b.sweep();
        assert_eq!(report.released.iter().map(|a| a.address.task.as_str()).collect::<Vec<_>>(), ["u"], "{}", b.name);
        assert_eq!(b.inbox("alice").len(), 1, "{}: alice was rung", b.name);
        assert_eq!(b.show("t").due_at(), Some(T0 + 14 * M), "{}: t's clock did not move", b.name);
        b.advance(1);
        assert!(b.sweep().released.is_empty(), "{}", b.name);
        b.advance(1);
        assert_eq!(b.show("t").last_owner_touch, Some(T0 + 4 * M));
        let report = b.sweep();
        assert_eq!(report.released.iter().map(|a| a.address.task.as_str()).collect::<Vec<_>>(), ["t"], "{}", b.name);
    }
}

#[test]
fn a_release_rings_the_old_owner_the_deputy_and_the_steward() {
    for b in backends("a_release_rings_the_old_owner_the_deputy_and_the_steward") {
        b.channel();
        b.take("t", "alice", Some("bob"), Some(5)).unwrap();
        b.advance(5);
        b.sweep();
        for who in ["alice", "bob", STEWARD] {
            let events = b.inbox_events(who, 100);
            assert_eq!(events.len(), 1, "{}: {who}", b.name);
            assert_eq!(events[0].kind, CLAIM_RELEASED);
            let p = &events[0].payload;
            assert_eq!(
                (p["task"].clone(), p["from"].clone(), p["to"].clone()),
                ("t".into(), "alice".into(), "bob".into())
            );
            assert_eq!(
                (p["reason"].clone(), p["version"].clone(), p["next_step"].clone()),
                ("ttl".into(), 2.into(), "finish t".into())
            );
        }
        assert!(b.inbox("carol").is_empty());
        // An owner's own release rings the others, not itself.
        b.release_r(&at("t"), &release_req("bob", 2, false)).unwrap();
        assert_eq!(b.inbox("bob").len(), 1, "{}: only the TTL doorbell", b.name);
        let steward = b.inbox(STEWARD);
        assert_eq!(
            (steward.len(), steward[1]["reason"].clone(), steward[1]["status"].clone()),
            (2, "owner".into(), "released".into())
        );
    }
}

#[test]
fn a_focus_lease_suppresses_ttl_release_while_it_lasts() {
    for b in backends("a_focus_lease_suppresses_ttl_release_while_it_lasts") {
        b.channel();
        b.take("t", "alice", Some("bob"), Some(5)).unwrap();
        let lease = b.focus_start_r("alice", 60).unwrap();
        assert_eq!((lease.lease.until, lease.capped_from), (T0 + 60 * M, None));
        b.advance(30);
        let report = b.sweep();
        assert_eq!((report.released.len(), report.deferred_by_focus), (0, 1), "{}", b.name);
        assert_eq!(b.coord.focus_show(P, "alice").unwrap().map(|l| l.until), Some(T0 + 60 * M));
        // Ended early, the lease still proved liveness until then: a full TTL from its end.
        b.focus_end_r("alice").unwrap();
        assert_eq!(b.coord.focus_show(P, "alice").unwrap(), None);
        assert_eq!(code(b.focus_end_r("alice")), ErrorCode::NotFound);
        b.advance(4);
        assert!(b.sweep().released.is_empty(), "{}", b.name);
        b.advance(1);
        assert_eq!(b.sweep().released.len(), 1);
        assert_eq!(b.show("t").owner.as_deref(), Some("bob"));
        // Another seat's lease protects nothing of alice's.
        b.take("u", "alice", None, Some(5)).unwrap();
        b.focus_start_r("bob", 60).unwrap();
        b.advance(5);
        let report = b.sweep();
        assert_eq!(report.released.iter().map(|a| a.address.task.as_str()).collect::<Vec<_>>(), ["u"], "{}", b.name);
    }
}

#[test]
fn a_focus_lease_is_capped_and_the_cap_reported() {
    for b in backends("a_focus_lease_is_capped_and_the_cap_reported") {
        let out = b.focus_start_r("alice", 10_000).unwrap();
        assert_eq!(out.capped_from, Some(10_000), "{}", b.name);
        assert_eq!(out.lease.until, T0 + i64::from(MAX_FOCUS_MINUTES) * M);
        assert_eq!(code(b.focus_start_r("alice", 0)), ErrorCode::InvalidArgument);
    }
}

#[test]
fn the_steward_report_lists_claims_older_than_the_sla_without_a_ttl() {
    for b in backends("the_steward_report_lists_claims_older_than_the_sla_without_a_ttl") {
        b.channel(); // SLA 30 minutes
        b.take("old-no-ttl", "alice", None, None).unwrap();
        b.take("old-with-ttl", "bob", None, Some(600)).unwrap();
        b.advance(20);
        b.take("young-no-ttl", "carol", None, None).unwrap();
        b.advance(11);
        let r = b.coord.steward_report(P, CH, None).unwrap();
        let tasks: Vec<&str> = r.overdue.iter().map(|i| i.claim.task.as_str()).collect();
        assert_eq!(tasks, ["old-no-ttl"], "{}", b.name);
        assert_eq!(r.overdue[0].age_minutes, 31);
        // A touch is not a new claim: age counts from the take.
        let v = b.show("old-no-ttl").version;
        b.touch("old-no-ttl", "alice", v).unwrap();
        let later = b.coord.steward_report(P, CH, Some(T0 + 60 * M)).unwrap();
        let tasks: Vec<&str> = later.overdue.iter().map(|i| i.claim.task.as_str()).collect();
        assert_eq!(tasks, ["old-no-ttl", "young-no-ttl"], "{}", b.name);
    }
}

#[test]
fn a_dry_run_sweep_previews_as_of_a_moment_and_writes_nothing() {
    for b in backends("a_dry_run_sweep_previews_as_of_a_moment_and_writes_nothing") {
        b.channel();
        b.take("t", "alice", Some("bob"), Some(10)).unwrap();
        b.take("u", "carol", None, Some(20)).unwrap();
        let audit_before = b.audit().len();
        let sweep_as_of = |as_of, dry_run| b.coord.sweep(P, &SweepRequest { as_of: Some(as_of), dry_run });
        let preview = sweep_as_of(T0 + 15 * M, true).unwrap();
        assert!(preview.dry_run);
        let what: Vec<(String, Option<String>)> =
            preview.released.iter().map(|a| (a.address.task.clone(), a.to.clone())).collect();
        assert_eq!(what, [("t".to_string(), Some("bob".to_string()))], "{}", b.name);
        assert_eq!(b.show("t").version, 1, "{}: nothing written", b.name);
        assert!(b.inbox(STEWARD).is_empty());
        assert_eq!(b.audit().len(), audit_before);
        // --as-of is a preview: without --dry-run it is refused, future or past (a past
        // moment would hand the deputy a claim already due).
        assert_eq!(code(sweep_as_of(T0 + 15 * M, false)), ErrorCode::InvalidArgument);
        assert_eq!(code(sweep_as_of(T0 - M, false)), ErrorCode::InvalidArgument);
        // Before 1970 or after 9999 is a typo, in-process as over HTTP.
        assert_eq!(code(sweep_as_of(-1, true)), ErrorCode::InvalidArgument);
        assert_eq!(code(b.coord.steward_report(P, CH, Some(i64::MAX))), ErrorCode::InvalidArgument);
        // The real sweep at that moment does what the preview said.
        b.advance(15);
        let done = b.sweep();
        assert_eq!(done.released, preview.released, "{}", b.name);
    }
}

#[test]
fn every_transition_is_attributable_in_the_audit_log() {
    for b in backends("every_transition_is_attributable_in_the_audit_log") {
        b.channel();
        b.take("t", "alice", Some("bob"), Some(5)).unwrap();
        let _ = b.take("t", "mallory", None, None);
        b.touch("t", "alice", 1).unwrap();
        b.focus_start_r("carol", 10).unwrap();
        b.focus_end_r("carol").unwrap();
        b.advance(5);
        b.sweep();
        b.release_r(&at("t"), &release_req("bob", 3, true)).unwrap();
        let got: Vec<(String, String, String, Option<String>)> =
            b.audit().into_iter().filter(|(verb, ..)| !verb.starts_with("session.")).collect();
        let t = Some(format!("{CH}/t"));
        let want = vec![
            ("channel.create".to_string(), "local".to_string(), "ok".to_string(), Some(CH.to_string())),
            ("claim.take".into(), "seat:alice".into(), "ok".into(), t.clone()),
            ("claim.take".into(), "seat:mallory".into(), "claim_taken".into(), t.clone()),
            ("claim.touch".into(), "seat:alice".into(), "ok".into(), t.clone()),
            ("focus.start".into(), "seat:carol".into(), "ok".into(), Some("carol".into())),
            ("focus.end".into(), "seat:carol".into(), "ok".into(), Some("carol".into())),
            ("claim.ttl_release".into(), "coordinator".into(), "ok".into(), t.clone()),
            ("claim.release".into(), "seat:bob".into(), "ok".into(), t),
        ];
        assert_eq!(got, want, "{}", b.name);
    }
}

#[test]
fn a_claim_keeps_its_whole_history() {
    for b in backends("a_claim_keeps_its_whole_history") {
        b.channel();
        b.take("t", "alice", Some("bob"), Some(5)).unwrap();
        b.advance(1);
        b.touch("t", "alice", 1).unwrap();
        b.advance(5);
        b.sweep();
        b.advance(5);
        b.sweep();
        b.take("t", "carol", None, None).unwrap();
        b.release_r(&at("t"), &release_req("carol", 5, true)).unwrap();
        let steps = b.coord.work_claim_history(P, CH, "t").unwrap();
        let summary: Vec<(&str, &str, Option<&str>, u64)> = steps
            .iter()
            .map(|s| (s.action.as_str(), s.actor.as_str(), s.claim.owner.as_deref(), s.claim.version))
            .collect();
        assert_eq!(
            summary,
            [
                ("take", "seat:alice", Some("alice"), 1),
                ("touch", "seat:alice", Some("alice"), 2),
                ("ttl_handoff", "coordinator", Some("bob"), 3),
                ("ttl_release", "coordinator", None, 4),
                ("take", "seat:carol", Some("carol"), 5),
                ("done", "seat:carol", None, 6),
            ],
            "{}",
            b.name
        );
        assert_eq!(steps.last().unwrap().claim, b.show("t"));
    }
}

// ---------------------------------------------------------------------------------------
// The seed's validation exercise, simulated
// ---------------------------------------------------------------------------------------

const SEATS: usize = 8;
const TTL: u32 = 5;
const SWEEP_EVERY: i64 = 1;
const TOUCH_EVERY: i64 = 2;
const MINUTES: i64 = 30;
const KILLED: usize = 3;
const KILLED_AT: i64 = 10;

fn seat(i: usize) -> String {
    format!("seat{i}")
}

/// A seat's view of one claim it works on.
struct Job {
    task: String,
    version: u64,
    left: i64,
    last_write: i64,
}

/// What the exercise observed.
#[derive(Default)]
pub(crate) struct Observed {
    /// Takes of a claimed task whose owner had gone quiet: the move the seed's field test
    /// ruled out. Each must be refused.
    competing_attempts: u64,
    competing_refused: u64,
    lost_claims: u64,
    done: BTreeSet<String>,
    inherited: BTreeMap<String, String>,
    killed_tasks: BTreeSet<String>,
}

/// Where the exercise runs: a coordinator and a way to let one (simulated) minute pass.
pub(crate) trait Drill {
    /// The coordinator the seats talk to.
    fn api(&self) -> &Endpoint;
    /// Lets one minute pass (and, where no server sweeps, runs the sweep).
    fn next_minute(&self);
    /// The coordinator's time.
    fn now(&self) -> Millis;
}

impl Drill for Backend {
    fn api(&self) -> &Endpoint {
        &self.endpoint
    }
    fn next_minute(&self) {
        // The sweep interval is one minute: sweep at the end of every minute.
        if SWEEP_EVERY == 1 {
            self.sweep();
        }
        self.advance(1);
    }
    fn now(&self) -> Millis {
        self.clock.now()
    }
}

/// A deterministic work length per task: 4 to 11 minutes.
fn work_minutes(task_no: usize) -> i64 {
    4 + ((task_no * 7919 + 13) % 8) as i64
}

/// Every claim in channel `CH`, through `api`.
fn list_claims(api: &Endpoint) -> Vec<WorkClaim> {
    api.call::<work::ListClaims>(ChannelPath::of(P, CH), NoBody {}, None).unwrap()
}

/// Every step of `task` in channel `CH`, through `api`.
fn claim_history(api: &Endpoint, task: &str) -> Vec<writerctl::claim::work_claims::WorkClaimStep> {
    api.call::<work::ClaimHistory>(TaskPath::from(&at(task)), NoBody {}, None).unwrap()
}

/// Eight seats work a queue of tasks for 30 minutes; each names the next seat as deputy
/// with a 5-minute TTL and touches every 2 minutes; the sweep runs every minute; seat 3
/// dies at minute 10. Deputies learn of inherited work from their inbox doorbells.
pub(crate) fn exercise(d: &dyn Drill) -> Observed {
    let api = d.api();
    api.call::<work::CreateChannel>(ProjectPath::of(P), channel_req(CH, Some(30), None), None).unwrap();
    let mut obs = Observed::default();
    let mut queue: std::collections::VecDeque<usize> = (0..60).collect();
    let mut jobs: Vec<Vec<Job>> = (0..SEATS).map(|_| Vec::new()).collect();
    let mut cursors = [0u64; SEATS];
    let tokens: Vec<Secret> = (0..SEATS).map(|i| seat_token(api, &seat(i))).collect();
    for minute in 0..=MINUTES {
        for i in 0..SEATS {
            if i == KILLED && minute >= KILLED_AT {
                continue;
            }
            let me = seat(i);
            // Doorbells first: work handed to me by a TTL release.
            let after = InboxQuery { after: cursors[i], limit: Some(100), wait_ms: 0 };
            let inbox = api.call::<admin::Inbox>(IdentityPath::of(P, &me), after, Some(&tokens[i])).unwrap();
            for e in inbox.events {
                cursors[i] = e.cursor;
                let p = &e.payload;
                if p["reason"] == "ttl" && p["to"] == me.as_str() {
                    let task = p["task"].as_str().unwrap().to_string();
                    obs.inherited.insert(task.clone(), me.clone());
                    let version = p["version"].as_u64().unwrap();
                    jobs[i].push(Job { task, version, left: 3, last_write: minute });
                }
            }
            // Seat 0 watches the board: a claim whose owner went quiet for 3 minutes looks
            // stalled, and it tries to take it. One live claim per task: always refused.
            if i == 0 {
                let now = d.now();
                for row in list_claims(api) {
                    let quiet = row.anchor().is_some_and(|a| now - a >= 3 * M);
                    if row.status == WorkClaimStatus::Claimed && row.owner.as_deref() != Some(me.as_str()) && quiet {
                        obs.competing_attempts += 1;
                        let take = take_req(&me, None, None, None);
                        match api.call::<work::TakeClaim>(TaskPath::from(&at(&row.task)), take, Some(&tokens[i])) {
                            Err(e) if e.code() == ErrorCode::ClaimTaken => obs.competing_refused += 1,
                            other => panic!("a competing take of {} was not refused: {other:?}", row.task),
                        }
                    }
                }
            }
            let mut keep = Vec::new();
            for mut job in std::mem::take(&mut jobs[i]) {
                job.left -= 1;
                let result = if job.left <= 0 {
                    let done = release_req(&me, job.version, true);
                    api.call::<work::ReleaseClaim>(TaskPath::from(&at(&job.task)), done, Some(&tokens[i]))
                        .map(|r| (r, true))
                } else if minute - job.last_write >= TOUCH_EVERY {
                    let touch = touch_req(&me, job.version);
                    api.call::<work::TouchClaim>(TaskPath::from(&at(&job.task)), touch, Some(&tokens[i]))
                        .map(|o| (o.claim, false))
                } else {
                    keep.push(job);
                    continue;
                };
                match result {
                    Ok((_, true)) => {
                        obs.done.insert(job.task.clone());
                    }
                    Ok((row, false)) => {
                        job.version = row.version;
                        job.last_write = minute;
                        keep.push(job);
                    }
                    Err(_) => obs.lost_claims += 1,
                }
            }
            jobs[i] = keep;
            if jobs[i].iter().all(|j| obs.inherited.get(&j.task) == Some(&me))
                && let Some(n) = queue.pop_front()
            {
                let task = format!("task-{n:02}");
                let deputy = seat((i + 1) % SEATS);
                let req = take_req(&me, Some(&deputy), Some(TTL), Some(&format!("integrate {task}")));
                match api.call::<work::TakeClaim>(TaskPath::from(&at(&task)), req, Some(&tokens[i])) {
                    Ok(out) => {
                        if i == KILLED {
                            obs.killed_tasks.insert(task.clone());
                        }
                        jobs[i].push(Job {
                            task,
                            version: out.claim.version,
                            left: work_minutes(n),
                            last_write: minute,
                        });
                    }
                    Err(e) => panic!("take {task}: {e}"),
                }
            }
        }
        d.next_minute();
    }
    // The killed seat's unfinished claims are whatever it held when it died.
    let held: BTreeSet<String> = jobs[KILLED].iter().map(|j| j.task.clone()).collect();
    obs.killed_tasks = obs.killed_tasks.intersection(&held).cloned().collect();
    obs
}

/// The seed's validation criteria over what the exercise left behind. `slack` is extra
/// tolerance for a real-time run (scheduling delays); zero on the virtual clock.
pub(crate) fn check_exercise(d: &dyn Drill, obs: &Observed, slack: i64, what: &str) {
    let api = d.api();
    let rows = list_claims(api);
    assert!(obs.done.len() >= 20, "{what}: the fleet made progress ({} done)", obs.done.len());
    // No integration stall: on every claim, no two consecutive steps of a live claim are
    // further apart than TTL + sweep interval (a dark owner's claim moves on by then).
    let limit = (i64::from(TTL) + SWEEP_EVERY) * M + slack;
    let mut longest = 0;
    for row in &rows {
        let steps = claim_history(api, &row.task);
        for pair in steps.windows(2) {
            if pair[0].claim.status == WorkClaimStatus::Claimed {
                longest = longest.max(pair[1].at - pair[0].at);
            }
        }
        // And a claim still live at the end was written to within the limit.
        if row.status == WorkClaimStatus::Claimed {
            longest = longest.max(d.now() - M - steps.last().unwrap().at);
        }
        // No competing claim was ever opened: versions grow by one, and every take follows
        // nothing or a release.
        for (k, s) in steps.iter().enumerate() {
            assert_eq!(s.claim.version, k as u64 + 1, "{what}: {}", row.task);
            if s.action == "take" && k > 0 {
                assert_eq!(steps[k - 1].claim.status, WorkClaimStatus::Released, "{what}: {}", row.task);
            }
        }
        assert_ne!(row.owner.as_deref(), Some(seat(KILLED).as_str()), "{what}: the dead seat owns nothing");
    }
    assert!(
        longest <= limit,
        "{what}: a stall of {:.1} min > {:.1} min",
        longest as f64 / M as f64,
        limit as f64 / M as f64
    );
    assert!(obs.competing_attempts > 0, "{what}: the watcher saw the dead seat's stalled claim");
    assert_eq!(obs.competing_refused, obs.competing_attempts, "{what}: no competing claim was ever opened");
    assert_eq!(obs.lost_claims, 0, "{what}: no live seat lost a claim");
    // The dead seat's work went to its deputy, which finished it without a new claim.
    assert!(!obs.killed_tasks.is_empty(), "{what}: seat {KILLED} died holding work");
    let deputy = seat((KILLED + 1) % SEATS);
    for task in &obs.killed_tasks {
        assert_eq!(obs.inherited.get(task), Some(&deputy), "{what}: {task}");
        let steps = claim_history(api, task);
        let actions: Vec<&str> = steps.iter().map(|s| s.action.as_str()).collect();
        let handoff = actions.iter().position(|a| *a == "ttl_handoff").expect("a TTL handoff");
        assert_eq!(steps[handoff].claim.handoff_from.as_deref(), Some(seat(KILLED).as_str()));
        assert_eq!(steps[handoff].claim.owner.as_deref(), Some(deputy.as_str()));
        assert_eq!(*actions.last().unwrap(), "done", "{what}: {task}: {actions:?}");
        assert!(steps[handoff..].iter().all(|s| s.action != "take"), "{what}: picked up without a new claim");
    }
}

#[test]
fn eight_seats_with_one_killed_never_stall_longer_than_ttl_plus_sweep() {
    for b in backends("eight_seats_with_one_killed_never_stall_longer_than_ttl_plus_sweep") {
        let obs = exercise(&b);
        check_exercise(&b, &obs, 0, b.name);
    }
}

/// The exercise against `coordinator serve` on Redis + Postgres, in compressed real time:
/// the server's clock runs 60 times faster (`--time-scale 60`: one second is one minute)
/// and its own sweeper runs every second. The seats are HTTP clients.
struct RealTime {
    /// The server, through the library's HTTP client.
    api: Endpoint,
    start: std::time::Instant,
    minute: std::cell::Cell<u32>,
}

impl Drill for RealTime {
    fn api(&self) -> &Endpoint {
        &self.api
    }
    fn next_minute(&self) {
        let m = self.minute.get() + 1;
        self.minute.set(m);
        let at = self.start + Duration::from_secs(u64::from(m));
        std::thread::sleep(at.saturating_duration_since(std::time::Instant::now()));
    }
    fn now(&self) -> Millis {
        // The server's clock, as its own sweep reads it (a dry run writes nothing).
        let dry = SweepRequest { as_of: None, dry_run: true };
        self.api.call::<work::Sweep>(ProjectPath::of(P), dry, None).unwrap().as_of
    }
}

#[test]
fn eight_seats_with_one_killed_in_compressed_real_time_over_serve_redis_pg() {
    let test = "eight_seats_with_one_killed_in_compressed_real_time_over_serve_redis_pg";
    let Some(ns) = Ns::new(test) else { return };
    let co = crate::master::Co::http(|home, _| {
        crate::serve::Deployment::redis_pg(home, ns).server_args(&[
            "--time-scale",
            "60",
            "--sweep-interval-seconds",
            "1",
        ])
    });
    let drill = RealTime {
        api: Endpoint::Remote(
            HttpCoordinator::new(
                &co.url(),
                None,
                co.http.as_ref().and_then(|d| d.admin_token.clone()).map(Secret::new),
            )
            .unwrap(),
        ),
        start: std::time::Instant::now(),
        minute: std::cell::Cell::new(0),
    };
    let obs = exercise(&drill);
    // One extra minute (one real second) of tolerance for scheduling on a shared machine.
    check_exercise(&drill, &obs, M, "serve redis_pg at 60x");
}

/// Loads `n` claims of alice (deputy bob, TTL 5) straight through the store, all taken at
/// T0, so all are due at T0 + 5.
fn load_due(b: &Backend, n: usize) {
    let ch = b.coord.show_channel(P, CH).unwrap();
    let writes: Vec<_> = (0..n)
        .map(|i| {
            let req = take_req("alice", Some("bob"), Some(5), Some("go"));
            crate::work_store::write(
                0,
                writerctl::claim::work_claims::take(None, &ch, &at(&format!("t{i:05}")), &req, T0).unwrap().claim,
                "take",
                vec![],
            )
        })
        .collect();
    for chunk in writes.chunks(1000) {
        assert!(
            b.coord
                .store()
                .write_work_claims(chunk)
                .unwrap()
                .iter()
                .all(|c| matches!(c, writerctl::claim::stores::Commit::Done(1)))
        );
    }
}

/// More due claims than one sweep batch, so a race lands in a later batch too.
const RACE_CLAIMS: usize = 2_500;

#[test]
fn an_owner_write_racing_a_sweep_wins_or_loses_whole() {
    for b in backends("an_owner_write_racing_a_sweep_wins_or_loses_whole") {
        b.channel();
        load_due(&b, RACE_CLAIMS);
        b.advance(5);
        let barrier = Barrier::new(2);
        let sweeper = coordinator((b.reopen)(), &b.clock);
        let owner = coordinator((b.reopen)(), &b.clock);
        let alice = b.token("alice");
        let (report, touched) = std::thread::scope(|s| {
            let sweep = s.spawn(|| {
                barrier.wait();
                sweeper.sweep(P, &SweepRequest::default()).unwrap()
            });
            let touches = s.spawn(|| {
                barrier.wait();
                // Newest first, against the sweep's earliest-first order: they meet mid-way.
                (0..RACE_CLAIMS)
                    .rev()
                    .filter(|i| {
                        owner.touch_work_claim(&at(&format!("t{i:05}")), &touch_req("alice", 1), Some(&alice)).is_ok()
                    })
                    .count() as u64
            });
            (sweep.join().unwrap(), touches.join().unwrap())
        });
        let released = report.released.len() as u64;
        assert_eq!(released + touched, RACE_CLAIMS as u64, "{}: every claim went one way: {report:?}", b.name);
        assert!(report.conflicts <= touched, "{}", b.name);
        let rows = b.coord.list_work_claims(P, CH).unwrap();
        for row in &rows {
            let steps = b.coord.work_claim_history(P, CH, &row.task).unwrap();
            let actions: Vec<&str> = steps.iter().map(|s| s.action.as_str()).collect();
            assert_eq!(row.version, 2, "{}: {} written once after the take: {actions:?}", b.name, row.task);
            match row.owner.as_deref() {
                Some("bob") => assert_eq!(actions, ["take", "ttl_handoff"], "{}", b.name),
                Some("alice") => assert_eq!(actions, ["take", "touch"], "{}", b.name),
                other => panic!("{}: {} owned by {other:?}", b.name, row.task),
            }
        }
        assert_eq!(rows.iter().filter(|r| r.owner.as_deref() == Some("bob")).count() as u64, released);
        assert_eq!(b.inbox_events(STEWARD, 100_000).len() as u64, released, "{}: one doorbell each", b.name);
    }
}

#[test]
fn two_sweepers_at_once_release_each_claim_once() {
    for b in backends("two_sweepers_at_once_release_each_claim_once") {
        b.channel();
        load_due(&b, RACE_CLAIMS);
        b.advance(5);
        let barrier = Barrier::new(2);
        let reports: Vec<writerctl::claim::work_claims::SweepReport> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    let c = coordinator((b.reopen)(), &b.clock);
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        c.sweep(P, &SweepRequest::default()).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut released: Vec<String> =
            reports.iter().flat_map(|r| r.released.iter().map(|a| a.address.task.clone())).collect();
        released.sort();
        let before = released.len();
        released.dedup();
        assert_eq!((before, released.len()), (RACE_CLAIMS, RACE_CLAIMS), "{}: each claim released once", b.name);
        assert_eq!(reports.iter().map(|r| r.conflicts).sum::<u64>() as usize, RACE_CLAIMS * 2 - before, "{}", b.name);
        for who in ["alice", "bob", STEWARD] {
            assert_eq!(b.inbox_events(who, 100_000).len(), RACE_CLAIMS, "{}: {who} rung once per claim", b.name);
        }
        assert!(
            b.coord
                .list_work_claims(P, CH)
                .unwrap()
                .iter()
                .all(|r| r.version == 2 && r.owner.as_deref() == Some("bob"))
        );
    }
}
