//! Issue 30 point 3: `writerctl pause|resume`. While a project is paused, no sweep (neither
//! `claim sweep` nor the server's `sweep_all`) makes a TTL release or a deputy handoff: it
//! reports what it held back. Owner writes and master verbs go on; after `resume` (or once
//! `until` passes) the next sweep releases what is due. The pause survives restarts (on
//! Redis + Postgres, a Redis that lost everything is restored from Postgres) and shows in
//! `master status`, `claim list`, `steward report`, `claim sweep`, `/metrics` and audit.
//!
//! The engine tests run on the embedded SQLite store and on Redis + Postgres (a namespace of
//! their own; a loud skip when the services are unreachable), with a manual clock: no
//! sleeps. The CLI tests run the real binary in-process and through `coordinator serve`.

#![allow(clippy::result_large_err)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use writerctl::claim::Coordinator;
use writerctl::claim::clock::{Clock, ManualClock};
use writerctl::claim::masters::{ControllerKey, HandoffRequest, MasterClaimRequest, OperatorRequest, RegisterRequest};
use writerctl::claim::model::Millis;
use writerctl::claim::secret::Secret;
use writerctl::claim::stores::Store;
use writerctl::claim::stores::redis_pg::RedisPgStore;
use writerctl::claim::stores::sqlite::SqliteStore;
use writerctl::claim::work_claims::{
    ChannelRequest, HELD_BY_PAUSE, PauseRequest, ReleaseRequest, SweepReport, SweepRequest, TakeRequest, TaskAddress,
    WorkClaim, WorkClaimStatus,
};
use writerctl::error::ErrorCode;

use crate::master::{Co, PROJECT, err_doc, exec, keys, s, set};
use crate::serve::{http_error_code, http_post, metric};
use crate::services::Ns;

const T0: Millis = 1_800_000_000_000;
const M: Millis = 60_000;
const P: &str = "fleet";
const CH: &str = "ops";

/// One store under test, a coordinator over it with a manual clock, and how to restart it.
struct Backend {
    name: &'static str,
    coord: Coordinator,
    clock: Arc<ManualClock>,
    /// The SQLite file, reopened by a restart.
    sqlite: Option<std::path::PathBuf>,
    /// The namespace and a store on it, for a restart that loses Redis.
    redis: Option<(Arc<Ns>, Arc<RedisPgStore>)>,
    _dir: tempfile::TempDir,
}

fn backends(test: &str) -> Vec<Backend> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coord.sqlite");
    let clock = Arc::new(ManualClock::at(T0));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let mut out = vec![Backend {
        name: "sqlite",
        coord: Coordinator::new(store, clock.clone(), Duration::from_secs(30)),
        clock,
        sqlite: Some(path),
        redis: None,
        _dir: dir,
    }];
    if let Some(ns) = Ns::new(test) {
        let ns = Arc::new(ns);
        let clock = Arc::new(ManualClock::at(T0));
        let store = ns.store();
        out.push(Backend {
            name: "redis_pg",
            coord: Coordinator::new(store.clone(), clock.clone(), Duration::from_secs(30)),
            clock,
            sqlite: None,
            redis: Some((ns, store)),
            _dir: tempfile::tempdir().unwrap(),
        });
    }
    out
}

impl Backend {
    /// A coordinator as a restarted process has it: SQLite reopened from its file; Redis +
    /// Postgres after Redis lost every key of the namespace (Postgres caught up first, as
    /// the background writer does), rebuilt from Postgres by a new store.
    fn restarted(&self) -> Coordinator {
        let store: Arc<dyn Store> = match (&self.sqlite, &self.redis) {
            (Some(path), _) => Arc::new(SqliteStore::open(path).unwrap()),
            (None, Some((ns, store))) => {
                store.flush_postgres().unwrap();
                ns.wipe_redis();
                assert!(ns.redis_keys().is_empty(), "{}: Redis still holds the namespace", self.name);
                ns.store()
            }
            (None, None) => unreachable!(),
        };
        Coordinator::new(store, self.clock.clone(), Duration::from_secs(30))
    }

    /// Enrolls `seat` and registers a controller as it: (session id, token).
    fn seat(&self, seat: &str) -> (String, Secret) {
        let key = self.coord.enroll_identity(P, seat).unwrap().key;
        let k = ControllerKey { identity: seat.into(), surface: "cli".into(), machine_id: "m".into() };
        let r = self.coord.register(P, &RegisterRequest::of(&k, Some(&key), None)).unwrap();
        (r.controller.session_id, r.token)
    }

    /// `seat` takes `task` with a 5-minute TTL (and `deputy`), proven by `token`.
    fn take(&self, task: &str, seat: &str, token: &Secret, deputy: Option<&str>) -> WorkClaim {
        let req = TakeRequest {
            seat: seat.into(),
            deputy: deputy.map(Into::into),
            ttl_minutes: Some(5),
            next_step: Some(format!("finish {task}")),
            reason: None,
        };
        self.coord.take_work_claim(&TaskAddress::new(P, CH, task), &req, Some(token)).unwrap().claim
    }

    /// The channel, and `seat` holding task `a` with a 5-minute TTL (and `deputy`): its token.
    fn channel_with_claim(&self, seat: &str, deputy: Option<&str>) -> Secret {
        let ch = ChannelRequest {
            channel: CH.into(),
            steward: "steward".into(),
            sla_minutes: Some(30),
            ttl_floor_minutes: Some(1),
        };
        self.coord.create_channel(P, &ch).unwrap();
        let (_, token) = self.seat(seat);
        self.take("a", seat, &token, deputy);
        token
    }

    fn show(&self, task: &str) -> WorkClaim {
        self.coord.show_work_claim(P, CH, task).unwrap()
    }

    fn advance(&self, minutes: i64) {
        self.clock.advance(minutes * M);
    }
}

/// (task, owner, to) of what a sweep held back, each for the pause's reason.
fn held(r: &SweepReport) -> Vec<(String, String, Option<String>)> {
    assert!(r.held_back.iter().all(|h| h.why == HELD_BY_PAUSE), "{r:?}");
    r.held_back.iter().map(|h| (h.task.clone(), h.owner.clone(), h.to.clone())).collect()
}

/// (task, to) of what a sweep released.
fn released(r: &SweepReport) -> Vec<(String, Option<String>)> {
    r.released.iter().map(|a| (a.address.task.clone(), a.to.clone())).collect()
}

fn t(task: &str, owner: &str, to: Option<&str>) -> (String, String, Option<String>) {
    (task.into(), owner.into(), to.map(Into::into))
}

fn rel(task: &str, to: Option<&str>) -> (String, Option<String>) {
    (task.into(), to.map(Into::into))
}

/// The issue's acceptance test, on both stores: a due TTL release (and a due deputy
/// handoff) is held through the sweep while paused, a manual release still works, and the
/// first sweep after `resume` releases what is due.
#[test]
fn a_paused_project_holds_a_due_ttl_release_through_a_sweep_and_releases_it_after_resume() {
    for b in backends("a_paused_project_holds_a_due_ttl_release") {
        let n = b.name;
        b.channel_with_claim("alice", None);
        let a = b.show("a");
        let (_, bob) = b.seat("bob");
        let (_, dave) = b.seat("dave");
        let bb = b.take("b", "bob", &bob, Some("carol"));
        b.take("c", "dave", &dave, None);
        let out = b.coord.pause_project(P, &PauseRequest { reason: "db migration CHG-1".into(), until: None }).unwrap();
        assert_eq!((out.paused.since, out.paused.until, out.replaced), (T0, None, None), "{n}");
        b.advance(10);

        // Every due claim is held, by `claim sweep`, its preview and the server's sweeper.
        let preview = b.coord.sweep(P, &SweepRequest { as_of: Some(b.clock.now() + 60 * M), dry_run: true }).unwrap();
        assert!(preview.released.is_empty(), "{n}: {preview:?}");
        assert_eq!(held(&preview).len(), 3, "{n}");
        let r = b.coord.sweep(P, &SweepRequest::default()).unwrap();
        assert!(r.released.is_empty(), "{n}: {r:?}");
        assert_eq!(held(&r), [t("a", "alice", None), t("b", "bob", Some("carol")), t("c", "dave", None)], "{n}");
        assert_eq!(r.paused.as_ref().map(|p| p.reason.as_str()), Some("db migration CHG-1"), "{n}");
        for (project, rep) in b.coord.sweep_all().unwrap() {
            let rep = rep.unwrap();
            assert!(rep.released.is_empty() && rep.held_back.len() == 3, "{n}: sweep_all of {project}: {rep:?}");
        }
        assert_eq!(b.show("a"), a, "{n}: the TTL release was held: the row is as it was");
        assert_eq!(b.show("b"), bb, "{n}: the deputy handoff was held");
        let report = b.coord.steward_report(P, CH, None).unwrap();
        assert_eq!(report.paused.map(|p| p.reason), Some("db migration CHG-1".into()), "{n}");

        // A person's move still works while paused.
        let c = b.show("c");
        let req = ReleaseRequest { seat: "dave".into(), expect_version: Some(c.version), ..Default::default() };
        let after = b.coord.release_work_claim(&TaskAddress::new(P, CH, "c"), &req, Some(&dave)).unwrap();
        assert_eq!((after.status, after.owner), (WorkClaimStatus::Released, None), "{n}");

        // Resume: the next sweep releases what is due, the handoff included.
        let res = b.coord.resume_project(P).unwrap();
        assert!(res.was_paused, "{n}");
        assert_eq!(res.previous.map(|p| p.reason), Some("db migration CHG-1".into()), "{n}");
        let r = b.coord.sweep(P, &SweepRequest::default()).unwrap();
        assert_eq!(released(&r), [rel("a", None), rel("b", Some("carol"))], "{n}: {r:?}");
        assert!(r.held_back.is_empty() && r.paused.is_none(), "{n}: {r:?}");
        assert_eq!(b.show("a").status, WorkClaimStatus::Released, "{n}");
        assert_eq!(b.show("b").owner.as_deref(), Some("carol"), "{n}");

        // Audited, with the actor and the reason (in-process, the store file's authority: `local`).
        let rows = b.coord.audit_log(Some(P), 10_000).unwrap();
        let pause = rows.iter().find(|a| a.verb == "project.pause").unwrap_or_else(|| panic!("{n}: {rows:?}"));
        assert_eq!((pause.actor.as_str(), pause.result.as_str()), ("local", "ok"), "{n}");
        assert_eq!(pause.detail["reason"], json!("db migration CHG-1"), "{n}");
        let resume = rows.iter().find(|a| a.verb == "project.resume").unwrap();
        assert_eq!((resume.actor.as_str(), &resume.detail["was_paused"]), ("local", &json!(true)), "{n}");
    }
}

/// `until` ends a pause by itself; pausing a paused project replaces its reason and end;
/// resuming what is not paused changes nothing; bad input is refused and audited.
#[test]
fn until_ends_a_pause_and_a_second_pause_replaces_the_first() {
    for b in backends("until_ends_a_pause") {
        let n = b.name;
        b.channel_with_claim("alice", None);
        b.coord.pause_project(P, &PauseRequest { reason: "window".into(), until: Some(T0 + 20 * M) }).unwrap();
        b.advance(1);
        let second = b
            .coord
            .pause_project(P, &PauseRequest { reason: "longer window".into(), until: Some(T0 + 30 * M) })
            .unwrap();
        assert_eq!(second.replaced.as_ref().map(|p| (p.reason.as_str(), p.until)), Some(("window", Some(T0 + 20 * M))));
        assert_eq!((second.paused.since, second.paused.until), (T0, Some(T0 + 30 * M)), "{n}: since is kept");
        b.advance(20);
        assert_eq!(
            held(&b.coord.sweep(P, &SweepRequest::default()).unwrap()),
            [t("a", "alice", None)],
            "{n}: first until passed"
        );
        b.advance(8);
        assert_eq!(
            held(&b.coord.sweep(P, &SweepRequest::default()).unwrap()).len(),
            1,
            "{n}: one minute before the end"
        );
        b.advance(1);
        assert_eq!(b.coord.pause_state(P).unwrap().paused, None, "{n}");
        let r = b.coord.sweep(P, &SweepRequest::default()).unwrap();
        assert_eq!(released(&r), [rel("a", None)], "{n}: `until` reached: released without a resume");
        let res = b.coord.resume_project(P).unwrap();
        assert_eq!((res.was_paused, res.previous), (false, None), "{n}");

        let now = b.clock.now();
        for (reason, until) in [("", None), ("two\nlines", None), ("esc \u{1b}[31m", None), ("past", Some(now - 1))] {
            let e = b.coord.pause_project(P, &PauseRequest { reason: reason.into(), until }).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidArgument, "{n}: {reason:?} {until:?}");
        }
        assert_eq!(b.coord.pause_state(P).unwrap().paused, None, "{n}: nothing refused was written");
        let refused = b.coord.audit_log(Some(P), 10_000).unwrap();
        let refused = refused.iter().filter(|a| a.verb == "project.pause" && a.result == "invalid_argument").count();
        assert_eq!(refused, 4, "{n}");
    }
}

/// `master handoff` and `master claim` are a person's moves: a pause never stops them.
#[test]
fn master_verbs_go_on_while_paused() {
    for b in backends("master_verbs_go_on_while_paused") {
        let n = b.name;
        let (alice_sid, alice) = b.seat("alice");
        b.seat("bob");
        b.coord.pause_project(P, &PauseRequest { reason: "incident".into(), until: None }).unwrap();
        let epoch = b.coord.status(P).unwrap().slot.epoch;
        let req = HandoffRequest { session_id: alice_sid, to: "bob".into(), expect_epoch: epoch, ..Default::default() };
        let out = b.coord.handoff(P, &req, &alice).unwrap();
        assert_eq!(out.new_master.identity, "bob", "{n}");
        b.coord.add_operator(&OperatorRequest { operator_id: "ops".into(), password: "pw".into() }).unwrap();
        let req = MasterClaimRequest {
            to: "alice".into(),
            expect_epoch: out.epoch,
            operator: "ops".into(),
            password: "pw".into(),
            ..Default::default()
        };
        let out = b.coord.master_claim(P, &req).unwrap();
        assert_eq!(out.new_master.identity, "alice", "{n}");
        assert!(b.coord.pause_state(P).unwrap().paused.is_some(), "{n}: still paused");
    }
}

/// A pause survives a restart: SQLite reopened; Redis + Postgres with Redis emptied and
/// restored from Postgres. So does a resume.
#[test]
fn a_pause_survives_a_coordinator_restart_and_a_redis_restore() {
    for b in backends("a_pause_survives_a_restart") {
        let n = b.name;
        b.channel_with_claim("alice", Some("bob"));
        b.coord.pause_project(P, &PauseRequest { reason: "maintenance".into(), until: Some(T0 + 600 * M) }).unwrap();
        b.advance(10);
        let c = b.restarted();
        let paused = c.pause_state(P).unwrap().paused.unwrap_or_else(|| panic!("{n}: the pause was lost"));
        assert_eq!((paused.reason.as_str(), paused.since, paused.until), ("maintenance", T0, Some(T0 + 600 * M)));
        let r = c.sweep(P, &SweepRequest::default()).unwrap();
        assert_eq!(held(&r), [t("a", "alice", Some("bob"))], "{n}: the restored pause holds the handoff");
        assert_eq!(c.paused_projects().unwrap(), 1, "{n}");
        assert!(c.resume_project(P).unwrap().was_paused, "{n}");
        let c = b.restarted();
        assert_eq!(c.pause_state(P).unwrap().paused, None, "{n}: the resume was kept");
        assert_eq!(c.paused_projects().unwrap(), 0, "{n}");
        let r = c.sweep(P, &SweepRequest::default()).unwrap();
        assert_eq!(released(&r), [rel("a", Some("bob"))], "{n}");
    }
}

// ---------------------------------------------------------------------------------------
// the CLI, in-process and through `coordinator serve`
// ---------------------------------------------------------------------------------------

fn check_cli(co: &Co) {
    let project = PROJECT;
    // Nothing paused yet: the keys are there, null.
    assert_eq!(co.ok(&["master", "status", "--project", project])["paused"], Value::Null);
    co.ok(&["channel", "create", "--project", project, "--channel", "merges", "--steward", "carol"]);
    let alice = co.reg("alice");
    co.ok(&[
        "claim",
        "take",
        "--project",
        project,
        "--channel",
        "merges",
        "--task",
        "PR-1",
        "--seat",
        "alice",
        "--token-file",
        s(&alice.token_file),
        "--ttl-minutes",
        "5",
        "--next-step",
        "merge it",
    ]);

    let v = co.ok(&["pause", "--project", project, "--reason", "db migration", "--until", "2099-01-01T00:00:00Z"]);
    assert_eq!(keys(&v), set(&["project", "paused", "replaced"]), "{v:#}");
    assert_eq!(keys(&v["paused"]), set(&["reason", "since", "until"]), "{v:#}");
    assert_eq!(
        (&v["paused"]["reason"], &v["paused"]["until"]),
        (&json!("db migration"), &json!("2099-01-01T00:00:00.000Z"))
    );
    assert_eq!(v["replaced"], Value::Null);
    let v = co.ok(&["pause", "--project", project, "--reason", "db migration, part 2"]);
    assert_eq!(v["replaced"]["reason"], json!("db migration"), "{v:#}");
    assert_eq!(v["paused"]["until"], Value::Null, "{v:#}");

    for doc in [
        co.ok(&["master", "status", "--project", project]),
        co.ok(&["claim", "list", "--project", project, "--channel", "merges"]),
        co.ok(&["steward", "report", "--project", project, "--channel", "merges"]),
    ] {
        assert_eq!(doc["paused"]["reason"], json!("db migration, part 2"), "{doc:#}");
        assert_eq!(keys(&doc["paused"]), set(&["reason", "since", "until"]), "{doc:#}");
    }
    // The TTL is due an hour from now: a preview at that moment holds it back.
    let preview = ["claim", "sweep", "--project", project, "--as-of", "2098-01-01T00:00:00Z", "--dry-run"];
    let sw = co.ok(&preview);
    assert_eq!(sw["released"], json!([]), "{sw:#}");
    let h = &sw["held_back"][0];
    assert_eq!(keys(h), set(&["channel", "task", "owner", "to", "due_at", "why"]), "{sw:#}");
    assert_eq!(
        (&h["task"], &h["owner"], &h["to"], &h["why"]),
        (&json!("PR-1"), &json!("alice"), &Value::Null, &json!("project_paused"))
    );
    assert_eq!(sw["paused"]["reason"], json!("db migration, part 2"));

    for bad in [
        vec!["pause", "--project", project, "--reason", "two\nlines", "--json"],
        vec!["pause", "--project", project, "--reason", "late", "--until", "2001-01-01T00:00:00Z", "--json"],
    ] {
        err_doc(&co.run(&bad), 2, "invalid_argument");
    }

    let v = co.ok(&["resume", "--project", project]);
    assert_eq!(keys(&v), set(&["project", "was_paused", "previous", "resumed_at"]), "{v:#}");
    assert_eq!((&v["was_paused"], &v["previous"]["reason"]), (&json!(true), &json!("db migration, part 2")));
    let v = co.ok(&["resume", "--project", project]);
    assert_eq!((&v["was_paused"], &v["previous"]), (&json!(false), &Value::Null), "{v:#}");
    assert_eq!(co.ok(&["master", "status", "--project", project])["paused"], Value::Null);
    let sw = co.ok(&preview);
    assert_eq!(sw["released"][0]["task"], json!("PR-1"), "resumed: the preview releases it: {sw:#}");
    assert_eq!((&sw["held_back"], &sw["paused"]), (&json!([]), &Value::Null));

    let audit = co.audit(Some(project));
    let verbs: Vec<(&str, &str)> = audit
        .iter()
        .filter(|a| a["verb"].as_str().is_some_and(|v| v.starts_with("project.")))
        .map(|a| (a["verb"].as_str().unwrap(), a["result"].as_str().unwrap()))
        .collect();
    assert_eq!(
        verbs,
        [
            ("project.pause", "ok"),
            ("project.pause", "ok"),
            ("project.pause", "invalid_argument"),
            ("project.pause", "invalid_argument"),
            ("project.resume", "ok"),
            ("project.resume", "ok")
        ],
        "{audit:#?}"
    );
}

#[test]
fn pause_and_resume_on_the_embedded_store() {
    let co = Co::new();
    check_cli(&co);
    // In-process, having the store file is the authority: audited as `local`.
    let rows = co.audit(Some(PROJECT));
    assert!(rows.iter().filter(|a| a["verb"] == "project.pause").all(|a| a["actor"] == "local"), "{rows:#?}");
}

/// Over HTTP: the admin token is required (a client without it, a wrong one, a raw request),
/// `/metrics` counts paused projects, and the CLI shapes are the same.
fn check_http(co: &Co) {
    check_cli(co);
    let url = co.url();
    let args = ["pause", "--project", PROJECT, "--reason", "x", "--json"];
    let mut no_token = co.command(&args);
    no_token.env_remove("WRITERCTL_ADMIN_TOKEN");
    err_doc(&exec(no_token, None), 6, "unauthorized");
    err_doc(&co.run_env(&args, &[("WRITERCTL_ADMIN_TOKEN", "not-the-token")]), 6, "unauthorized");
    let (status, _, body) = http_post(&format!("{url}/v1/projects/{PROJECT}/pause"), &[], br#"{"reason":"x"}"#);
    assert_eq!((status, http_error_code(&body).as_str()), (401, "unauthorized"), "{body}");
    let (status, _, body) = http_post(&format!("{url}/v1/projects/{PROJECT}/resume"), &[], b"");
    assert_eq!((status, http_error_code(&body).as_str()), (401, "unauthorized"), "{body}");

    let paused = || {
        let (status, _, m) = crate::serve::http_get(&format!("{url}/metrics"));
        assert_eq!(status, 200, "{m}");
        assert!(m.contains("# TYPE writerctl_project_paused gauge\n"), "{m}");
        assert!(!m.contains(PROJECT), "a project name is on /metrics:\n{m}");
        metric(&m, "writerctl_project_paused").unwrap_or_else(|| panic!("no gauge in\n{m}"))
    };
    assert_eq!(paused(), 0.0, "refused pauses paused nothing");
    co.ok(&["pause", "--project", PROJECT, "--reason", "window"]);
    co.ok(&["pause", "--project", "other", "--reason", "window"]);
    assert_eq!(paused(), 2.0);
    co.ok(&["resume", "--project", "other"]);
    assert_eq!(paused(), 1.0);
    co.ok(&["resume", "--project", PROJECT]);
    assert_eq!(paused(), 0.0);
    // Over HTTP the actor is `admin` (the token was checked).
    let rows = co.audit(Some(PROJECT));
    let actors: Vec<&Value> = rows.iter().filter(|a| a["verb"] == "project.pause").map(|a| &a["actor"]).collect();
    assert!(actors.contains(&&json!("admin")), "{rows:#?}");
}

#[test]
fn pause_and_resume_through_the_server_on_both_stores() {
    check_http(&Co::http_sqlite());
    if let Some(co) = Co::http_redis_pg("pause_and_resume_through_the_server (redis_pg)") {
        check_http(&co);
    }
}
