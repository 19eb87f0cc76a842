//! Seed 002's work claims over HTTP: `writerctl coordinator serve` (the real binary) driven
//! through the library's HTTP client (`HttpCoordinator`) and raw HTTP, over the embedded
//! SQLite store and over Redis + Postgres.
//!
//! * Every route's happy path, through the client (`*_happy_path_*`).
//! * Each error code's HTTP status and JSON code on the wire, and relayed by the client.
//! * The touch body's `clear_deputy` / `clear_ttl` flags (keep, remove and set of one
//!   optional field do not survive JSON, where `null` and absent read the same).
//! * The background sweeper (`--sweep-interval-seconds`): a claim made stale through an
//!   embedded coordinator on a manual clock (TTLs are in minutes, the server reads the real
//!   clock) is released by the server on its own, its doorbells land in the inboxes, and
//!   `/metrics` counts it; 0 turns the sweeper off; absurd values are usage errors.
//!
//! Redis + Postgres tests skip loudly unless the services answer (see `services.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use writerctl::claim::ClaimError;
use writerctl::claim::Coordinator;
use writerctl::claim::clock::{Clock, ManualClock, SystemClock};
use writerctl::claim::masters::{ControllerKey, RegisterRequest};
use writerctl::claim::secret::Secret;
use writerctl::claim::stores::Store;
use writerctl::claim::stores::sqlite::SqliteStore;
use writerctl::claim::work_claims::{
    CLAIM_RELEASED, Channel, ChannelRequest, FocusLease, FocusRequest, MAX_FOCUS_MINUTES, ReleaseRequest, SweepRequest,
    TakeRequest, TaskAddress, TouchRequest, WorkClaim, WorkClaimOutcome, WorkClaimStatus, WorkClaimStep,
};
use writerctl::coordinator::client::HttpCoordinator;
use writerctl::coordinator::verbs::{admin, work};
use writerctl::coordinator::wire::{
    AsOfQuery, ChannelPath, IdentityPath, InboxQuery, NoBody, ProjectPath, SeatPath, TaskPath,
};
use writerctl::error::ErrorCode;

use crate::master::{Co, PROJECT, err_doc, exec};
use crate::serve::{Deployment, http_error_code, http_get, http_post, metric};
use crate::services::{Ns, wait_until};

/// How long the sweeper may take to release a stale claim (it sweeps every second).
const SWEEP_LIMIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

/// The library's HTTP client for the Co's server, with the deployment's admin token.
fn api(co: &Co) -> HttpCoordinator {
    let admin = co.http.as_ref().and_then(|d| d.admin_token.clone()).map(Secret::new);
    HttpCoordinator::new(&co.url(), None, admin).unwrap()
}

/// A session token of a controller registered as `seat` through `co` (enrolled and
/// registered on first use; one per seat and server for the whole test run).
fn tok(co: &Co, seat: &str) -> Secret {
    static TOKENS: std::sync::Mutex<BTreeMap<(String, String), String>> = std::sync::Mutex::new(BTreeMap::new());
    let mut tokens = TOKENS.lock().unwrap_or_else(|p| p.into_inner());
    let t = tokens.entry((co.url(), seat.to_string())).or_insert_with(|| co.reg(seat).token).clone();
    Secret::new(t)
}

fn c_take(co: &Co, api: &HttpCoordinator, at: &TaskAddress, r: &TakeRequest) -> Result<WorkClaimOutcome, ClaimError> {
    api.call::<work::TakeClaim>(&TaskPath::from(at), r, Some(&tok(co, &r.seat)))
}

fn c_touch(co: &Co, api: &HttpCoordinator, at: &TaskAddress, r: &TouchRequest) -> Result<WorkClaimOutcome, ClaimError> {
    api.call::<work::TouchClaim>(&TaskPath::from(at), r, Some(&tok(co, &r.seat)))
}

fn c_release(co: &Co, api: &HttpCoordinator, at: &TaskAddress, r: &ReleaseRequest) -> Result<WorkClaim, ClaimError> {
    api.call::<work::ReleaseClaim>(&TaskPath::from(at), r, Some(&tok(co, &r.seat)))
}

/// `channel create` through the client (the admin token is the client's own).
fn create_channel(api: &HttpCoordinator, r: &ChannelRequest) -> Result<Channel, ClaimError> {
    api.call::<work::CreateChannel>(&ProjectPath::of(PROJECT), r, None)
}

/// Channel `channel`, stewarded by `steward`, with the default SLA and TTL floor.
fn channel_req(channel: &str, steward: &str) -> ChannelRequest {
    ChannelRequest { channel: channel.into(), steward: steward.into(), ..Default::default() }
}

fn show_claim(api: &HttpCoordinator, channel: &str, task: &str) -> Result<WorkClaim, ClaimError> {
    api.call::<work::ShowClaim>(&TaskPath::from(&at(channel, task)), &NoBody {}, None)
}

fn claim_history(api: &HttpCoordinator, channel: &str, task: &str) -> Result<Vec<WorkClaimStep>, ClaimError> {
    api.call::<work::ClaimHistory>(&TaskPath::from(&at(channel, task)), &NoBody {}, None)
}

/// POSTs `body` to `url` with the bearer a real caller sends: the admin token to create a
/// channel, otherwise the session token of the seat the body (or the focus path) names.
fn post_as(co: &Co, url: &str, body: Value) -> (u16, String, String) {
    let bearer = if url.ends_with("/channels") {
        co.http.as_ref().and_then(|d| d.admin_token.clone())
    } else if let Some(seat) = body["seat"].as_str() {
        Some(tok(co, seat).expose().to_string())
    } else {
        url.split("/focus/")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .map(|seat| tok(co, seat).expose().to_string())
    };
    let auth = bearer.map(|t| ("Authorization".to_string(), format!("Bearer {t}")));
    let headers: Vec<(&str, &str)> = auth.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    http_post(url, &headers, body.to_string().as_bytes())
}

/// Task `task` of `channel` in `PROJECT`.
fn at(channel: &str, task: &str) -> TaskAddress {
    TaskAddress::new(PROJECT, channel, task)
}

fn take_req(seat: &str) -> TakeRequest {
    TakeRequest { seat: seat.into(), ..Default::default() }
}

fn touch_req(seat: &str, expect_version: u64) -> TouchRequest {
    TouchRequest { seat: seat.into(), expect_version: Some(expect_version), ..Default::default() }
}

fn release_req(seat: &str, expect_version: u64) -> ReleaseRequest {
    ReleaseRequest { seat: seat.into(), expect_version: Some(expect_version), ..Default::default() }
}

/// The `ClaimReleased` doorbells in `identity`'s inbox, as payloads.
fn doorbells(co: &Co, api: &HttpCoordinator, identity: &str) -> Vec<Value> {
    let q = InboxQuery { after: 0, limit: Some(1000), wait_ms: 0 };
    api.call::<admin::Inbox>(&IdentityPath::of(PROJECT, identity), &q, Some(&tok(co, identity)))
        .unwrap()
        .events
        .into_iter()
        .filter(|e| e.kind == CLAIM_RELEASED)
        .map(|e| e.payload)
        .collect()
}

/// `/v1/projects/web...` on the Co's server.
fn v1(co: &Co, rest: &str) -> String {
    format!("{}/v1/projects/{PROJECT}{rest}", co.url())
}

/// Asserts an HTTP answer's status and JSON error code; returns the error object.
#[track_caller]
fn http_err((status, ct, body): (u16, String, String), want: u16, code: &str) -> Value {
    assert_eq!((status, http_error_code(&body).as_str()), (want, code), "{body}");
    assert!(ct.starts_with("application/json"), "{ct}");
    serde_json::from_str::<Value>(&body).unwrap()["error"].clone()
}

/// Asserts a 2xx answer's status; returns its JSON.
#[track_caller]
fn http_ok((status, _, body): (u16, String, String), want: u16) -> Value {
    assert_eq!(status, want, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// `/metrics` of the Co's server.
fn metrics(co: &Co) -> String {
    let (status, _, body) = http_get(&format!("{}/metrics", co.url()));
    assert_eq!(status, 200, "{body}");
    body
}

/// Now by the real clock, in ms.
fn now() -> i64 {
    SystemClock.now()
}

// ---------------------------------------------------------------------------------------
// every route's happy path
// ---------------------------------------------------------------------------------------

fn check_happy_path(co: &Co) {
    let api = api(co);
    // POST /channels: 201 and the channel (raw, for the status), then through the client.
    let raw = post_as(co, &v1(co, "/channels"), json!({"channel": "raw", "steward": "stew"}));
    let ch = http_ok(raw, 201);
    assert_eq!(
        (&ch["channel"], &ch["steward"], &ch["sla_minutes"], &ch["ttl_floor_minutes"]),
        (&json!("raw"), &json!("stew"), &json!(60), &json!(5))
    );
    // Names travel percent-encoded: slashes, spaces, '#', '?', non-ASCII.
    let chan = "ops/back end #1?";
    let r = ChannelRequest { sla_minutes: Some(30), ttl_floor_minutes: Some(3), ..channel_req(chan, "stew ard") };
    let channel = create_channel(&api, &r).unwrap();
    assert_eq!((channel.channel.as_str(), channel.steward.as_str()), (chan, "stew ard"));
    assert_eq!((channel.sla_minutes, channel.ttl_floor_minutes), (30, 3));
    assert_eq!(api.call::<work::ShowChannel>(&ChannelPath::of(PROJECT, chan), &NoBody {}, None).unwrap(), channel);

    // take: a TTL below the floor is raised and reported.
    let task = "fix ü/42";
    let out = c_take(
        co,
        &api,
        &at(chan, task),
        &TakeRequest {
            deputy: Some("bob".into()),
            ttl_minutes: Some(2),
            next_step: Some("merge the drop-ins".into()),
            ..take_req("alice")
        },
    )
    .unwrap();
    assert_eq!(
        (out.claim.version, out.claim.owner.as_deref(), out.claim.status),
        (1, Some("alice"), WorkClaimStatus::Claimed)
    );
    assert_eq!((out.claim.ttl_minutes, out.ttl_raised_from), (Some(3), Some(2)));
    assert_eq!(out.claim.deputy.as_deref(), Some("bob"));
    assert_eq!(show_claim(&api, chan, task).unwrap(), out.claim);
    let list = api.call::<work::ListClaims>(&ChannelPath::of(PROJECT, chan), &NoBody {}, None).unwrap();
    assert_eq!(list, vec![out.claim.clone()]);

    // touch: the owner's write.
    let touched = c_touch(
        co,
        &api,
        &at(chan, task),
        &TouchRequest { next_step: Some("rebase first".into()), ..touch_req("alice", 1) },
    )
    .unwrap();
    assert_eq!((touched.claim.version, touched.claim.next_step.as_deref()), (2, Some("rebase first")));
    assert_eq!(touched.ttl_raised_from, None);

    // release: open again; the deputy and the steward hear of it.
    let released = c_release(co, &api, &at(chan, task), &release_req("alice", 2)).unwrap();
    assert_eq!((released.status, released.owner.clone(), released.version), (WorkClaimStatus::Released, None, 3));
    assert_eq!(released.handoff_from.as_deref(), Some("alice"));
    for who in ["bob", "stew ard"] {
        let bells = doorbells(co, &api, who);
        assert_eq!(bells.len(), 1, "{who}: {bells:?}");
        assert_eq!(
            (&bells[0]["task"], &bells[0]["reason"], &bells[0]["status"]),
            (&json!(task), &json!("owner"), &json!("released"))
        );
    }
    assert!(doorbells(co, &api, "alice").is_empty(), "the releasing seat rings no bell for itself");

    // Taken again, then done.
    let again = c_take(co, &api, &at(chan, task), &take_req("bob")).unwrap().claim;
    assert_eq!(
        (again.version, again.owner.as_deref(), again.next_step.as_deref()),
        (4, Some("bob"), Some("rebase first"))
    );
    let done = c_release(co, &api, &at(chan, task), &ReleaseRequest { done: true, ..release_req("bob", 4) }).unwrap();
    assert_eq!((done.status, done.version), (WorkClaimStatus::Done, 5));

    // history: every step, oldest first.
    let history = claim_history(&api, chan, task).unwrap();
    let actions: Vec<(&str, &str, u64)> =
        history.iter().map(|h| (h.action.as_str(), h.actor.as_str(), h.claim.version)).collect();
    assert_eq!(
        actions,
        [
            ("take", "seat:alice", 1),
            ("touch", "seat:alice", 2),
            ("release", "seat:alice", 3),
            ("take", "seat:bob", 4),
            ("done", "seat:bob", 5)
        ]
    );
    assert_eq!(history.last().unwrap().claim, done);

    // sweep: nothing is due; a dry run writes nothing either way.
    let sweep = |r: SweepRequest| api.call::<work::Sweep>(&ProjectPath::of(PROJECT), &r, None);
    let dry = sweep(SweepRequest { as_of: None, dry_run: true }).unwrap();
    assert!(dry.dry_run && dry.released.is_empty(), "{dry:?}");
    let wet = sweep(SweepRequest::default()).unwrap();
    assert!(!wet.dry_run && wet.released.is_empty(), "{wet:?}");
    // --as-of is a preview only.
    let e = sweep(SweepRequest { as_of: Some(now() - 1000), dry_run: false }).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e:?}");

    // focus: start (capped), show, end, show again.
    let focus_show = |seat| api.call::<work::ShowFocus>(&SeatPath::of(PROJECT, seat), &NoBody {}, None);
    let focus_start = |seat, minutes| {
        api.call::<work::StartFocus>(&SeatPath::of(PROJECT, seat), &FocusRequest { minutes }, Some(&tok(co, seat)))
    };
    assert_eq!(focus_show("alice").unwrap(), None);
    let lease = focus_start("alice", 30).unwrap();
    assert_eq!((lease.capped_from, lease.lease.until - lease.lease.started_at), (None, 30 * 60_000));
    assert_eq!(focus_show("alice").unwrap(), Some(lease.lease.clone()));
    let ended: FocusLease =
        api.call::<work::EndFocus>(&SeatPath::of(PROJECT, "alice"), &NoBody {}, Some(&tok(co, "alice"))).unwrap();
    assert!(ended.ended_at.is_some_and(|e| e >= lease.lease.started_at), "{ended:?}");
    assert_eq!(focus_show("alice").unwrap(), None);
    let capped = focus_start("carol", 10_000).unwrap();
    assert_eq!(capped.capped_from, Some(10_000));
    assert_eq!(capped.lease.until - capped.lease.started_at, i64::from(MAX_FOCUS_MINUTES) * 60_000);

    // steward report: a claim without a TTL, older than the SLA by the time asked about.
    let open = c_take(co, &api, &at(chan, "no-ttl"), &take_req("dave")).unwrap().claim;
    let later = open.claimed_at.unwrap() + 31 * 60_000;
    let steward_report = |as_of| api.call::<work::Steward>(&ChannelPath::of(PROJECT, chan), &AsOfQuery { as_of }, None);
    let report = steward_report(Some(later)).unwrap();
    assert_eq!((report.as_of, &report.channel), (later, &channel));
    assert_eq!(report.overdue.len(), 1, "{report:?}");
    assert_eq!((report.overdue[0].claim.task.as_str(), report.overdue[0].age_minutes), ("no-ttl", 31));
    assert!(steward_report(None).unwrap().overdue.is_empty());

    // Raw GETs answer the same JSON the client decoded.
    let show = http_ok(http_get(&v1(co, "/channels/raw")), 200);
    assert_eq!(show, ch);
    assert_eq!(http_ok(http_get(&v1(co, "/focus/nobody")), 200), Value::Null);

    // Every verb is counted on /metrics like the master verbs.
    let m = metrics(co);
    for (verb, n, all) in [
        ("channel.create", 2.0, 2.0),
        ("channel.show", 2.0, 2.0),
        ("claim.take", 3.0, 3.0),
        ("claim.touch", 1.0, 1.0),
        ("claim.release", 2.0, 2.0),
        ("claim.show", 1.0, 1.0),
        ("claim.list", 1.0, 1.0),
        ("claim.history", 1.0, 1.0),
        ("claim.sweep", 2.0, 3.0),
        ("focus.start", 2.0, 2.0),
        ("focus.end", 1.0, 1.0),
        ("focus.show", 4.0, 4.0),
        ("steward.report", 2.0, 2.0),
    ] {
        let series = format!(r#"writerctl_verbs_total{{verb="{verb}",result="ok"}}"#);
        assert_eq!(metric(&m, &series), Some(n), "{series} in\n{m}");
        let count = format!(r#"writerctl_verb_duration_seconds_count{{verb="{verb}"}}"#);
        assert_eq!(metric(&m, &count), Some(all), "{count} in\n{m}");
    }
}

#[test]
fn work_routes_happy_path_sqlite() {
    check_happy_path(&Co::http_sqlite());
}

#[test]
fn work_routes_happy_path_redis_pg() {
    let Some(co) = Co::http_redis_pg("work_routes_happy_path_redis_pg") else { return };
    check_happy_path(&co);
}

// ---------------------------------------------------------------------------------------
// error codes on the wire
// ---------------------------------------------------------------------------------------

fn check_error_codes(co: &Co) {
    let api = api(co);
    create_channel(&api, &channel_req("ch", "stew")).unwrap();
    let show_channel = |channel| api.call::<work::ShowChannel>(&ChannelPath::of(PROJECT, channel), &NoBody {}, None);
    let take = |body: Value| post_as(co, &v1(co, "/channels/ch/claims/t/take"), body);
    let touch = |body: Value| post_as(co, &v1(co, "/channels/ch/claims/t/touch"), body);
    let release = |body: Value| post_as(co, &v1(co, "/channels/ch/claims/t/release"), body);

    // channel_exists: 409, never overwritten.
    http_err(post_as(co, &v1(co, "/channels"), json!({"channel": "ch", "steward": "other"})), 409, "channel_exists");
    assert_eq!(show_channel("ch").unwrap().steward, "stew");

    // not_found: 404 for a missing channel or claim.
    http_err(http_get(&v1(co, "/channels/nope")), 404, "not_found");
    http_err(http_get(&v1(co, "/channels/nope/claims")), 404, "not_found");
    http_err(http_get(&v1(co, "/channels/ch/claims/t")), 404, "not_found");
    http_err(http_get(&v1(co, "/channels/ch/claims/t/history")), 404, "not_found");
    http_err(http_get(&v1(co, "/channels/nope/steward-report")), 404, "not_found");
    http_err(touch(json!({"seat": "a", "expect_version": 1})), 404, "not_found");
    http_err(post_as(co, &v1(co, "/channels/nope/claims/t/take"), json!({"seat": "a"})), 404, "not_found");
    http_err(post_as(co, &v1(co, "/focus/a/end"), json!({})), 404, "not_found");

    // next_step_required: 400, like invalid_argument (both exit 2).
    http_err(take(json!({"seat": "a", "ttl_minutes": 10})), 400, "next_step_required");
    http_err(take(json!({"seat": "a", "deputy": "b", "next_step": "  "})), 400, "next_step_required");

    // claim_taken: 409 with the owner and version.
    http_ok(take(json!({"seat": "a", "ttl_minutes": 10, "next_step": "go"})), 200);
    let e = http_err(take(json!({"seat": "b"})), 409, "claim_taken");
    assert_eq!((&e["owner"], &e["status"], &e["version"]), (&json!("a"), &json!("claimed"), &json!(1)), "{e}");

    // version_conflict: 409 with both versions.
    let e = http_err(touch(json!({"seat": "a", "expect_version": 7})), 409, "version_conflict");
    assert_eq!((&e["expected_version"], &e["version"]), (&json!(7), &json!(1)), "{e}");
    http_err(release(json!({"seat": "a", "expect_version": 0})), 409, "version_conflict");

    // not_claim_owner: 409 with the owner.
    let e = http_err(touch(json!({"seat": "b", "expect_version": 1})), 409, "not_claim_owner");
    assert_eq!((&e["owner"], &e["status"]), (&json!("a"), &json!("claimed")), "{e}");
    http_err(release(json!({"seat": "b", "expect_version": 1})), 409, "not_claim_owner");

    // invalid_argument: 400 for contradictions, bad bodies, bad names and bad times.
    let e = http_err(
        touch(json!({"seat": "a", "expect_version": 1, "deputy": "b", "clear_deputy": true})),
        400,
        "invalid_argument",
    );
    assert!(e["message"].as_str().unwrap().contains("clear_deputy"), "{e}");
    http_err(
        touch(json!({"seat": "a", "expect_version": 1, "ttl_minutes": 9, "clear_ttl": true})),
        400,
        "invalid_argument",
    );
    http_err(touch(json!({"seat": "a", "expect_version": 1, "deputy": "a"})), 400, "invalid_argument");
    http_err(take(json!({"deputy": "b"})), 400, "invalid_argument");
    http_err(http_post(&v1(co, "/channels/ch/claims/t/take"), &[], b"{not json"), 400, "invalid_argument");
    http_err(touch(json!({"seat": "a", "expect_version": -1})), 400, "invalid_argument");
    http_err(
        post_as(co, &v1(co, "/channels"), json!({"channel": "c2", "steward": "s", "sla_minutes": 0})),
        400,
        "invalid_argument",
    );
    http_err(post_as(co, &v1(co, "/channels"), json!({"channel": " c3", "steward": "s"})), 400, "invalid_argument");
    http_err(http_get(&v1(co, "/channels/%20lead")), 400, "invalid_argument");
    http_err(http_get(&v1(co, &format!("/channels/{}", "x".repeat(257)))), 400, "invalid_argument");
    http_err(http_get(&v1(co, "/channels/ctl%07bell")), 400, "invalid_argument");
    http_err(post_as(co, &v1(co, "/focus/a/start"), json!({"minutes": 0})), 400, "invalid_argument");
    http_err(post_as(co, &v1(co, "/sweep"), json!({"as_of": -5})), 400, "invalid_argument");
    http_err(post_as(co, &v1(co, "/sweep"), json!({"as_of": now() + 3_600_000})), 400, "invalid_argument");
    http_err(http_get(&format!("{}?as_of=-1", v1(co, "/channels/ch/steward-report"))), 400, "invalid_argument");
    http_err(
        http_get(&format!("{}?as_of={}", v1(co, "/channels/ch/steward-report"), i64::MAX)),
        400,
        "invalid_argument",
    );
    let (status, ct, body) = http_get(&format!("{}?as_of=soon", v1(co, "/channels/ch/steward-report")));
    http_err((status, ct, body), 400, "invalid_argument");
    // No body sweeps now (nothing is due yet).
    let swept = http_ok(http_post(&v1(co, "/sweep"), &[], b""), 200);
    assert_eq!((&swept["dry_run"], &swept["released"]), (&json!(false), &json!([])), "{swept}");
    // A dry run may look into the future.
    let dry = http_ok(post_as(co, &v1(co, "/sweep"), json!({"as_of": now() + 3_600_000, "dry_run": true})), 200);
    assert_eq!(dry["released"].as_array().unwrap().len(), 1, "{dry}");

    // Nothing of that changed the claim.
    let row = show_claim(&api, "ch", "t").unwrap();
    assert_eq!((row.version, row.owner.as_deref(), row.deputy.clone()), (1, Some("a"), None));

    // The client relays every code unchanged (and refuses bad names before sending).
    let code = |r: Result<(), ClaimError>| r.unwrap_err().code();
    assert_eq!(code(create_channel(&api, &channel_req("ch", "x")).map(drop)), ErrorCode::ChannelExists);
    assert_eq!(code(show_channel("nope").map(drop)), ErrorCode::NotFound);
    let t = at("ch", "t");
    assert_eq!(code(c_take(co, &api, &t, &take_req("b")).map(drop)), ErrorCode::ClaimTaken);
    assert_eq!(code(c_touch(co, &api, &t, &touch_req("a", 9)).map(drop)), ErrorCode::VersionConflict);
    assert_eq!(code(c_release(co, &api, &t, &release_req("b", 1)).map(drop)), ErrorCode::NotClaimOwner);
    let no_step = TakeRequest { ttl_minutes: Some(5), ..take_req("a") };
    assert_eq!(code(c_take(co, &api, &at("ch", "t2"), &no_step).map(drop)), ErrorCode::NextStepRequired);
    let end_a = api.call::<work::EndFocus>(&SeatPath::of(PROJECT, "a"), &NoBody {}, Some(&tok(co, "a")));
    assert_eq!(code(end_a.map(drop)), ErrorCode::NotFound);
    assert_eq!(code(show_claim(&api, "ch", &"x".repeat(257)).map(drop)), ErrorCode::InvalidArgument);
    let e = c_touch(co, &api, &t, &touch_req("a", 9)).unwrap_err();
    assert_eq!(e.details(), Some(json!({"expected_version": 9, "version": 1})), "{e:?}");

    // Refusals are counted by code.
    let m = metrics(co);
    for series in [
        r#"writerctl_verbs_total{verb="channel.create",result="channel_exists"}"#,
        r#"writerctl_verbs_total{verb="claim.take",result="claim_taken"}"#,
        r#"writerctl_verbs_total{verb="claim.touch",result="version_conflict"}"#,
        r#"writerctl_verbs_total{verb="claim.touch",result="not_claim_owner"}"#,
        r#"writerctl_verbs_total{verb="claim.take",result="next_step_required"}"#,
        r#"writerctl_verbs_total{verb="channel.show",result="not_found"}"#,
        r#"writerctl_verbs_total{verb="claim.sweep",result="invalid_argument"}"#,
    ] {
        assert!(metric(&m, series).is_some_and(|n| n >= 1.0), "{series} in\n{m}");
    }
}

#[test]
fn work_error_codes_over_http_sqlite() {
    check_error_codes(&Co::http_sqlite());
}

#[test]
fn work_error_codes_over_http_redis_pg() {
    let Some(co) = Co::http_redis_pg("work_error_codes_over_http_redis_pg") else { return };
    check_error_codes(&co);
}

// ---------------------------------------------------------------------------------------
// the touch body
// ---------------------------------------------------------------------------------------

/// Every keep / remove / set combination of deputy and TTL survives the wire body.
#[test]
fn touch_body_round_trips_every_option_option() {
    let deputies = [None, Some(None), Some(Some("b".to_string()))];
    let ttls = [None, Some(None), Some(Some(9))];
    for deputy in &deputies {
        for ttl in &ttls {
            let req = TouchRequest {
                deputy: deputy.clone().flatten(),
                clear_deputy: deputy == &Some(None),
                ttl_minutes: ttl.flatten(),
                clear_ttl: ttl == &Some(None),
                ..touch_req("a", 3)
            };
            let wire: TouchRequest = serde_json::from_str(&serde_json::to_string(&req).unwrap()).unwrap();
            assert_eq!(wire, req);
            assert_eq!((&wire.deputy_change().unwrap(), &wire.ttl_change().unwrap()), (deputy, ttl));
        }
    }
    let both: TouchRequest =
        serde_json::from_value(json!({"seat": "a", "expect_version": 1, "deputy": "b", "clear_deputy": true})).unwrap();
    let e = both.deputy_change().unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    // The flags default to false.
    let bare: TouchRequest = serde_json::from_value(json!({"seat": "a", "expect_version": 1})).unwrap();
    assert!(!bare.clear_deputy && !bare.clear_ttl);
}

/// Over a server: clear_deputy and clear_ttl remove, absent keeps, a value sets.
#[test]
fn touch_clears_and_keeps_over_http() {
    let co = Co::http_sqlite();
    let api = api(&co);
    create_channel(&api, &channel_req("ch", "stew")).unwrap();
    let take =
        TakeRequest { deputy: Some("b".into()), ttl_minutes: Some(10), next_step: Some("x".into()), ..take_req("a") };
    let t = at("ch", "t");
    c_take(&co, &api, &t, &take).unwrap();
    // Keep both.
    let kept = c_touch(&co, &api, &t, &touch_req("a", 1)).unwrap().claim;
    assert_eq!((kept.deputy.as_deref(), kept.ttl_minutes, kept.version), (Some("b"), Some(10), 2));
    // Remove the deputy through the client.
    let r = c_touch(&co, &api, &t, &TouchRequest { clear_deputy: true, ..touch_req("a", 2) }).unwrap().claim;
    assert_eq!((r.deputy.as_deref(), r.ttl_minutes), (None, Some(10)));
    // Set the deputy and change the TTL (raised to the floor, reported).
    let out =
        c_touch(&co, &api, &t, &TouchRequest { deputy: Some("c".into()), ttl_minutes: Some(1), ..touch_req("a", 3) })
            .unwrap();
    assert_eq!(
        (out.claim.deputy.as_deref(), out.claim.ttl_minutes, out.ttl_raised_from),
        (Some("c"), Some(5), Some(1))
    );
    // Remove the TTL through the client.
    let r = c_touch(&co, &api, &t, &TouchRequest { clear_ttl: true, ..touch_req("a", 4) }).unwrap().claim;
    assert_eq!((r.deputy.as_deref(), r.ttl_minutes), (Some("c"), None));
    // Raw: both clear flags at once.
    let raw = post_as(
        &co,
        &v1(&co, "/channels/ch/claims/t/touch"),
        json!({"seat": "a", "expect_version": 5, "clear_deputy": true, "clear_ttl": false, "ttl_minutes": 7}),
    );
    let out = http_ok(raw, 200);
    assert_eq!(
        (&out["claim"]["deputy"], &out["claim"]["ttl_minutes"], &out["claim"]["version"]),
        (&Value::Null, &json!(7), &json!(6))
    );
    let raw = post_as(
        &co,
        &v1(&co, "/channels/ch/claims/t/touch"),
        json!({"seat": "a", "expect_version": 6, "clear_deputy": true, "clear_ttl": true}),
    );
    let out = http_ok(raw, 200);
    assert_eq!((&out["claim"]["deputy"], &out["claim"]["ttl_minutes"]), (&Value::Null, &Value::Null));
    let history = claim_history(&api, "ch", "t").unwrap();
    assert_eq!(history.len(), 7);
    assert!(history[1..].iter().all(|h| h.action == "touch" && h.actor == "seat:a"), "{history:?}");
}

// ---------------------------------------------------------------------------------------
// the background sweeper
// ---------------------------------------------------------------------------------------

/// Stales two claims through an embedded coordinator whose clock reads ten minutes ago:
/// `open-me` (TTL 5, no deputy) and `to-deputy` (TTL 5, deputy bob); both were due five
/// minutes ago by the real clock. Channel `ch`, steward `stew`.
fn seed_stale(store: Arc<dyn Store>) {
    let ten_minutes_ago = now() - 10 * 60_000;
    let c = Coordinator::new(store, Arc::new(ManualClock::at(ten_minutes_ago)), Duration::from_secs(30))
        .with_open_registration(true);
    c.create_channel(PROJECT, &channel_req("ch", "stew")).unwrap();
    let alice = ControllerKey { identity: "alice".into(), surface: "cli".into(), machine_id: "seed".into() };
    let token = c.register(PROJECT, &RegisterRequest::of(&alice, None, None)).unwrap().token;
    for (task, deputy) in [("open-me", None), ("to-deputy", Some("bob"))] {
        let req = TakeRequest {
            deputy: deputy.map(Into::into),
            ttl_minutes: Some(5),
            next_step: Some(format!("finish {task}")),
            ..take_req("alice")
        };
        c.take_work_claim(&at("ch", task), &req, Some(&token)).unwrap();
    }
}

fn check_sweeper_releases_stale_claims(co: &Co) {
    let api = api(co);
    // A claim taken now is not due for five minutes.
    let fresh = TakeRequest { ttl_minutes: Some(5), next_step: Some("go".into()), ..take_req("carol") };
    c_take(co, &api, &at("ch", "fresh"), &fresh).unwrap();

    wait_until(SWEEP_LIMIT, "the sweeper releasing open-me", || {
        show_claim(&api, "ch", "open-me").unwrap().status == WorkClaimStatus::Released
    });
    let open = show_claim(&api, "ch", "open-me").unwrap();
    assert_eq!((open.owner.clone(), open.handoff_from.as_deref(), open.version), (None, Some("alice"), 2));
    assert_eq!(open.next_step.as_deref(), Some("finish open-me"));
    wait_until(SWEEP_LIMIT, "the sweeper handing to-deputy to bob", || {
        show_claim(&api, "ch", "to-deputy").unwrap().owner.as_deref() == Some("bob")
    });
    let handed = show_claim(&api, "ch", "to-deputy").unwrap();
    assert_eq!(
        (handed.status, handed.handoff_from.as_deref(), handed.deputy.clone()),
        (WorkClaimStatus::Claimed, Some("alice"), None)
    );

    // The doorbells: the steward and the old owner hear of both, the deputy of its own.
    wait_until(SWEEP_LIMIT, "the doorbells in the steward's inbox", || doorbells(co, &api, "stew").len() == 2);
    let mut tasks: Vec<String> =
        doorbells(co, &api, "stew").iter().map(|b| b["task"].as_str().unwrap().to_string()).collect();
    tasks.sort();
    assert_eq!(tasks, ["open-me", "to-deputy"]);
    assert!(doorbells(co, &api, "stew").iter().all(|b| b["reason"] == "ttl" && b["from"] == "alice"));
    assert_eq!(doorbells(co, &api, "alice").len(), 2);
    let bob = doorbells(co, &api, "bob");
    assert_eq!(bob.len(), 1, "{bob:?}");
    assert_eq!(
        (&bob[0]["task"], &bob[0]["to"], &bob[0]["status"]),
        (&json!("to-deputy"), &json!("bob"), &json!("claimed"))
    );

    // The history says the coordinator did it.
    let steps = claim_history(&api, "ch", "open-me").unwrap();
    let last = steps.last().unwrap();
    assert_eq!((last.action.as_str(), last.actor.as_str()), ("ttl_release", "coordinator"));
    let last = claim_history(&api, "ch", "to-deputy").unwrap().pop().unwrap();
    assert_eq!(last.action, "ttl_handoff");

    // The fresh claim is untouched; the deputy's claim has a fresh clock.
    let f = show_claim(&api, "ch", "fresh").unwrap();
    assert_eq!((f.status, f.owner.as_deref(), f.version), (WorkClaimStatus::Claimed, Some("carol"), 1));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(show_claim(&api, "ch", "to-deputy").unwrap().version, handed.version);

    // /metrics counts them once, and sweeps run without failures.
    let m = metrics(co);
    assert_eq!(metric(&m, "writerctl_sweep_released_total"), Some(2.0), "{m}");
    assert!(metric(&m, r#"writerctl_sweep_runs_total{result="ok"}"#).is_some_and(|n| n >= 1.0), "{m}");
    let failed: Vec<&str> =
        m.lines().filter(|l| l.starts_with("writerctl_sweep_runs_total{") && !l.contains(r#"result="ok""#)).collect();
    assert!(failed.is_empty(), "a sweep failed: {failed:?}");

    // The log says what it did; a graceful stop stops the sweeper and exits 0.
    let d = co.http.as_ref().unwrap();
    let logs = d.all_logs();
    assert!(logs.contains("sweeper started"), "{logs}");
    assert!(logs.contains("sweep released claims whose TTL ran out"), "{logs}");
    assert_eq!(d.stop_all(), [0]);
    let logs = d.all_logs();
    assert!(logs.contains("sweeper stopped"), "{logs}");
}

#[test]
fn sweeper_releases_stale_claims_sqlite() {
    let co = Co::http(|home, store| Deployment::sqlite(home, store).server_args(&["--sweep-interval-seconds", "1"]));
    // The server starts on first use: stale the claims in its store file before that.
    seed_stale(Arc::new(SqliteStore::open(&co.store).unwrap()));
    check_sweeper_releases_stale_claims(&co);
}

#[test]
fn sweeper_releases_stale_claims_redis_pg() {
    let Some(ns) = Ns::new("sweeper_releases_stale_claims_redis_pg") else { return };
    seed_stale(ns.store());
    let co = Co::http(|home, _| Deployment::redis_pg(home, ns).server_args(&["--sweep-interval-seconds", "1"]));
    check_sweeper_releases_stale_claims(&co);
}

/// `--sweep-interval-seconds 0` turns the sweeper off: a stale claim stays until someone
/// sweeps (here, over HTTP).
#[test]
fn sweeper_off_with_interval_zero() {
    let co = Co::http(|home, store| Deployment::sqlite(home, store).server_args(&["--sweep-interval-seconds", "0"]));
    seed_stale(Arc::new(SqliteStore::open(&co.store).unwrap()));
    let api = api(&co);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(show_claim(&api, "ch", "open-me").unwrap().status, WorkClaimStatus::Claimed);
    let m = metrics(&co);
    assert!(!m.contains("writerctl_sweep_runs_total{"), "{m}");
    assert_eq!(metric(&m, "writerctl_sweep_released_total"), Some(0.0), "{m}");
    assert!(!co.http.as_ref().unwrap().all_logs().contains("sweeper started"));
    // A sweep over HTTP releases both (and is a verb, not a background run).
    let report = api.call::<work::Sweep>(&ProjectPath::of(PROJECT), &SweepRequest::default(), None).unwrap();
    assert_eq!(report.released.len(), 2, "{report:?}");
    assert_eq!(show_claim(&api, "ch", "open-me").unwrap().status, WorkClaimStatus::Released);
    let m = metrics(&co);
    assert_eq!(metric(&m, "writerctl_sweep_released_total"), Some(0.0), "{m}");
    assert_eq!(metric(&m, r#"writerctl_verbs_total{verb="claim.sweep",result="ok"}"#), Some(1.0), "{m}");
}

/// Absurd intervals are usage errors, like other out-of-range flags.
#[test]
fn sweep_interval_rejects_absurd_values() {
    let co = Co::new();
    let store = format!("sqlite:{}", co.store.display());
    for bad in ["86401", "-1", "soon", "1e9"] {
        let mut c = co.base();
        c.args(["coordinator", "serve", "--listen", "127.0.0.1:0", "--store", &store, "--json"])
            .arg(format!("--sweep-interval-seconds={bad}"));
        let r = exec(c, None);
        err_doc(&r, 2, "usage");
        assert!(r.stdout.contains("sweep-interval-seconds"), "{bad}: {}", r.stdout);
    }
    assert!(!co.store.exists(), "a refused serve never opened the store");
}
