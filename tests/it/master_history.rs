//! Issue 30 on the coordinator: `--reason`, `master history`, `audit export` and `--dry-run`
//! on `master handoff|claim`, through the engine on both stores (SQLite and Redis +
//! Postgres, each in a namespace of its own) and through the real binary, embedded and over
//! HTTP. Also the migrations: an old SQLite file and an old Postgres schema open and gain
//! the audit `reason` column.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::master::{Co, PASSWORD, PROJECT, err_doc, ok_doc};
use crate::services::Ns;
use crate::support_api::{claim_by, handoff_by, unproven};
use writerctl::claim::ClaimError;
use writerctl::claim::clock::ManualClock;
use writerctl::claim::engine::{Coordinator, DEFAULT_FRESHNESS, RequestCtx};
use writerctl::claim::masters::{ControllerKey, HandoffRequest, MasterClaimRequest, OperatorRequest};
use writerctl::claim::model::AuditEntry;
use writerctl::claim::stores::Store;
use writerctl::claim::stores::sqlite::SqliteStore;

const T0: i64 = 1_700_000_000_000;

fn key(identity: &str) -> ControllerKey {
    ControllerKey { identity: identity.into(), surface: "cli".into(), machine_id: "m".into() }
}

fn coordinator(store: Arc<dyn Store>) -> Coordinator {
    Coordinator::new(store, Arc::new(ManualClock::at(T0)), DEFAULT_FRESHNESS).with_open_registration(true)
}

/// The engine on one store: every change of master in the history with verb, actor and
/// reason; a dry run that changes nothing and refuses as the real verb does; an export
/// that pages in order and refuses a cursor it does not hold. Then `reopen` (a restart:
/// a new store value on the same file or namespace) still sees the history.
fn check_history_on(store: Arc<dyn Store>, reopen: impl FnOnce() -> Arc<dyn Store>) {
    let c = coordinator(store);
    c.add_operator(&OperatorRequest { operator_id: "ops".into(), password: PASSWORD.into() }).unwrap();
    let a = c.register("p", &unproven(&key("alice"))).unwrap();
    let b = c.register("p", &unproven(&key("bob"))).unwrap();

    // A dry-run claim leaves the epoch unchanged, and refuses as the real claim would.
    let dry_claim = |to, epoch, password| MasterClaimRequest {
        reason: Some("drill".into()),
        dry_run: true,
        ..claim_by("ops", password, to, epoch)
    };
    let dry_handoff =
        |from, to, epoch| HandoffRequest { reason: Some("drill".into()), dry_run: true, ..handoff_by(from, to, epoch) };
    let plan = c.master_claim("p", &dry_claim("bob", 1, PASSWORD)).unwrap();
    assert!(plan.dry_run && plan.changed && plan.epoch == 2, "{plan:?}");
    assert_eq!(c.status("p").unwrap().slot.epoch, 1, "a dry-run claim leaves the epoch unchanged");
    assert!(matches!(
        c.master_claim("p", &dry_claim("bob", 1, "wrong")),
        Err(ClaimError::InvalidOperatorCredentials { .. })
    ));
    assert!(matches!(c.master_claim("p", &dry_claim("bob", 0, PASSWORD)), Err(ClaimError::StaleMaster { .. })));
    let plan = c.handoff("p", &dry_handoff(&a, "bob", 1), &a.token).unwrap();
    assert_eq!((plan.dry_run, plan.epoch, plan.new_master.identity.as_str()), (true, 2, "bob"));
    assert!(matches!(c.handoff("p", &dry_handoff(&b, "alice", 1), &b.token), Err(ClaimError::NotMaster { .. })));
    assert_eq!(c.status("p").unwrap().slot.epoch, 1);
    assert!(c.store().inbox("p", "alice", 0, 10).unwrap().is_empty(), "a dry run rings nobody");

    // The real verbs, with reasons.
    c.handoff("p", &HandoffRequest { reason: Some("deploy 4.2".into()), ..handoff_by(&a, "bob", 1) }, &a.token)
        .unwrap();
    c.master_claim(
        "p",
        &MasterClaimRequest { reason: Some("bob's host is down".into()), ..claim_by("ops", PASSWORD, "alice", 2) },
    )
    .unwrap();
    c.deregister("p", &a.controller.session_id, &a.token).unwrap();
    let expect = json!([
        {"epoch": 1, "from": null, "to": "alice", "verb": "session.register", "reason": null},
        {"epoch": 2, "from": "alice", "to": "bob", "verb": "master.handoff", "reason": "deploy 4.2"},
        {"epoch": 3, "from": "bob", "to": "alice", "verb": "master.claim", "reason": "bob's host is down"},
        {"epoch": 4, "from": "alice", "to": null, "verb": "session.deregister", "reason": null},
    ]);
    let summary = |c: &Coordinator| -> Value {
        c.master_history("p", 100)
            .unwrap()
            .iter()
            .map(|m| {
                json!({"epoch": m.epoch, "from": m.from.as_ref().map(|r| &r.identity), "to": m.to.as_ref().map(|r| &r.identity),
                       "verb": m.verb, "reason": m.reason})
            })
            .collect()
    };
    assert_eq!(summary(&c), expect);

    // The reason is on the audit rows, and the export pages through every row in order.
    let audit = c.audit_log(Some("p"), 1000).unwrap();
    assert!(audit.iter().any(|r| r.verb == "master.handoff" && r.reason.as_deref() == Some("deploy 4.2")));
    let mut cursor = None;
    let mut exported = Vec::new();
    loop {
        let page = c.audit_export(Some("p"), 0, cursor, 2).unwrap();
        exported.extend(page.rows.iter().map(|(at, r)| (*at, r.verb.clone())));
        cursor = page.rows.last().map(|r| r.0).or(cursor);
        if page.rows.len() < 2 {
            break;
        }
    }
    assert_eq!(
        exported.iter().map(|e| e.1.clone()).collect::<Vec<_>>(),
        audit.iter().map(|r| r.verb.clone()).collect::<Vec<_>>()
    );
    assert!(exported.windows(2).all(|w| w[0].0 < w[1].0), "cursors grow: {exported:?}");
    let last = exported.last().unwrap().0;
    assert!(c.audit_export(Some("p"), 0, Some(last), 10).unwrap().rows.is_empty(), "nothing after the end");
    match c.audit_export(None, 0, Some(last + 1_000_000), 10) {
        Err(ClaimError::AuditCursorUnknown { oldest: Some(_), .. }) => {}
        other => panic!("{other:?}"),
    }

    // A restart: the history is read back from what was stored.
    assert_eq!(summary(&coordinator(reopen())), expect);
}

#[test]
fn history_reason_export_and_dry_run_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sqlite");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    check_history_on(store, || Arc::new(SqliteStore::open(&path).unwrap()));
}

#[test]
fn history_reason_export_and_dry_run_on_redis_pg() {
    let Some(ns) = Ns::new("history_reason_export_and_dry_run_on_redis_pg") else { return };
    check_history_on(ns.store(), || ns.store());
}

/// An AuditEntry queued by a writerctl without `reason` (the durable retry queue's
/// serialized form) still decodes.
#[test]
fn an_audit_entry_queued_before_reasons_still_decodes() {
    let old = r#"{"at":1,"project":"p","verb":"v","actor":"a","target":null,"result":"ok","epoch":2,"detail":{}}"#;
    let e: AuditEntry = serde_json::from_str(old).unwrap();
    assert_eq!((e.reason, e.epoch), (None, Some(2)));
}

/// An SQLite file from before the `reason` column opens, migrates, keeps its rows (reason
/// NULL) and records reasons from then on.
#[test]
fn an_old_sqlite_store_gains_the_reason_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sqlite");
    drop(SqliteStore::open(&path).unwrap());
    {
        // Back to the schema before issue 30 (its two migrations: the audit `reason`
        // column, then the `pauses` table; and issue 39's after them, the partial index of
        // changes of master), with a row and a change of master written then.
        let conn = rusqlite::Connection::open(&path).unwrap();
        let v: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        conn.execute_batch(&format!(
            "DROP INDEX audit_master_changes; DROP TABLE pauses; ALTER TABLE audit DROP COLUMN reason;
             PRAGMA user_version = {};
             INSERT INTO audit (at, project, verb, actor, target, result, epoch, detail)
             VALUES (1, 'p', 'old.verb', 'local', NULL, 'ok', NULL, '{{}}');
             INSERT INTO audit (at, project, verb, actor, target, result, epoch, detail)
             VALUES (2, 'p', 'old.claim', 'operator:ops', NULL, 'ok', 7, '{{\"master_change\":{{\"from\":null,\"to\":null}}}}');",
            v - 3
        ))
        .unwrap();
        let cols: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('audit')")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(!cols.contains(&"reason".to_string()), "{cols:?}");
    }
    let c = coordinator(Arc::new(SqliteStore::open(&path).unwrap()));
    c.register("p", &unproven(&key("alice"))).unwrap();
    let b = c.register("p", &unproven(&key("bob"))).unwrap();
    c.for_request(RequestCtx::default().planned(Some("after the upgrade".into()), false).unwrap())
        .deregister("p", &b.controller.session_id, &b.token)
        .unwrap();
    let rows = c.audit_log(None, 10).unwrap();
    assert_eq!((rows[0].verb.as_str(), rows[0].reason.as_deref()), ("old.verb", None));
    let history = c.master_history("p", 10).unwrap();
    assert_eq!((history[0].verb.as_str(), history[0].epoch), ("old.claim", 7), "the index holds the old changes");
    assert_eq!(rows.last().unwrap().reason.as_deref(), Some("after the upgrade"));
}

/// A Postgres schema from before the `reason` column opens, migrates and records reasons.
#[test]
fn an_old_postgres_schema_gains_the_reason_column() {
    let Some(ns) = Ns::new("an_old_postgres_schema_gains_the_reason_column") else { return };
    let c = coordinator(ns.store());
    c.register("p", &unproven(&key("alice"))).unwrap();
    assert_eq!(c.audit_log(None, 10).unwrap().len(), 1, "the schema exists");
    let schema = &ns.name;
    // Back to the schema before issue 30: its two migrations (the audit `reason` column,
    // then the `project_pauses` table) undone, and issue 39's after them (the partial index
    // of changes of master).
    ns.pg()
        .batch_execute(&format!(
            "DROP INDEX \"{schema}\".audit_master_changes;
             DROP TABLE \"{schema}\".project_pauses;
             ALTER TABLE \"{schema}\".audit DROP COLUMN reason;
             DELETE FROM \"{schema}\".schema_migrations
              WHERE version >= (SELECT max(version) - 2 FROM \"{schema}\".schema_migrations);"
        ))
        .unwrap();
    let c = coordinator(ns.store());
    let b = c.register("p", &unproven(&key("bob"))).unwrap();
    c.for_request(RequestCtx::default().planned(Some("after the upgrade".into()), false).unwrap())
        .deregister("p", &b.controller.session_id, &b.token)
        .unwrap();
    let rows = c.audit_log(Some("p"), 10).unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0].reason, None, "the old row");
    assert_eq!(rows[2].reason.as_deref(), Some("after the upgrade"));
    let has: bool = ns
        .pg()
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'audit' AND column_name = 'reason')",
            &[schema],
        )
        .unwrap()
        .get(0);
    assert!(has);
}

/// Issue 39 point 6 on Postgres: each read of the audit log has an index that serves it in
/// cursor order under a generic plan (the one a prepared statement keeps, whatever its
/// parameters): no sequential scan, no sort. The SQLite side's plan test is
/// `the_audit_reads_walk_an_index` (a unit test of the store).
#[test]
fn the_postgres_audit_reads_walk_an_index() {
    let Some(ns) = Ns::new("the_postgres_audit_reads_walk_an_index") else { return };
    let store = ns.store();
    coordinator(store.clone()).register("p", &unproven(&key("alice"))).unwrap();
    let plans = store.audit_read_plans().unwrap();
    assert_eq!(plans.len(), 8);
    for (what, plan) in &plans {
        assert!(!plan.contains("Seq Scan") && !plan.contains("Sort"), "{what}:\n{plan}");
        let index = match what.split(" (").next().unwrap() {
            "master history" => "audit_master_changes",
            "audit --project" | "audit export --project" => "audit_project",
            _ => "audit_pkey",
        };
        assert!(plan.contains(&format!("using {index}")), "{what} should use {index}:\n{plan}");
    }
}

// ---------------------------------------------------------------------------------------
// the binary, embedded and over HTTP
// ---------------------------------------------------------------------------------------

/// The CLI end to end on `co`: dry runs (epoch unchanged; a wrong password exits 6, a
/// stale --expect-epoch 3, as the real claim would), reasons, `master history --json`,
/// `audit export` as JSON lines and CSV with the resume cursor, an unknown cursor.
fn check_cli(co: &Co) {
    co.add_operator("ops", PASSWORD);
    let alice = co.reg("alice");
    let bob = co.register("bob", "cli", "m2");
    let epoch = co.epoch();

    let plan = ok_doc(&co.claim("bob", "ops", PASSWORD, &["--dry-run", "--yes"]));
    assert_eq!(
        plan,
        json!({"dry_run": true, "project": PROJECT, "previous_master": {"identity": "alice", "session_id": alice.sid},
               "new_master": {"identity": "bob", "session_id": bob.sid}, "new_epoch": epoch + 1,
               "preempted": [{"identity": "alice", "session_id": alice.sid}], "changed": true})
    );
    assert_eq!(co.epoch(), epoch, "a dry-run claim leaves the epoch unchanged");
    err_doc(&co.claim("bob", "ops", "wrong password", &["--dry-run"]), 6, "invalid_operator_credentials");
    let stale = (epoch - 1).to_string();
    err_doc(&co.claim("bob", "ops", PASSWORD, &["--dry-run", "--expect-epoch", &stale]), 3, "stale_master");
    let plan = ok_doc(&co.handoff(&alice, "bob", &["--dry-run"]));
    assert_eq!((plan["dry_run"].clone(), plan["new_epoch"].clone()), (json!(true), json!(epoch + 1)));
    err_doc(&co.handoff(&bob, "alice", &["--dry-run"]), 3, "not_master");
    assert_eq!(co.epoch(), epoch);
    assert!(co.events("alice").is_empty(), "a dry run rings nobody");
    err_doc(&co.claim("bob", "ops", PASSWORD, &["--reason", "two\nlines", "--yes"]), 2, "invalid_argument");

    let real = ok_doc(&co.handoff(&alice, "bob", &["--reason", "deploy 4.2", "--yes"]));
    assert_eq!(real["epoch"], json!(epoch + 1));
    ok_doc(&co.claim("alice", "ops", PASSWORD, &["--reason", "bob's host, \"down\"", "--yes"]));

    let h = co.ok(&["master", "history", "--project", PROJECT]);
    let changes = h["changes"].as_array().unwrap();
    let last: Vec<Value> = changes[changes.len() - 2..]
        .iter()
        .map(|c| {
            let mut c = c.clone();
            assert!(c["at"].as_str().is_some_and(|t| t.ends_with('Z')), "{c}");
            c.as_object_mut().unwrap().remove("at");
            c
        })
        .collect();
    assert_eq!(
        last,
        [
            json!({"epoch": epoch + 1, "from": {"identity": "alice", "session_id": alice.sid},
                   "to": {"identity": "bob", "session_id": bob.sid}, "verb": "master.handoff",
                   "actor": format!("session:{}", alice.sid), "reason": "deploy 4.2"}),
            json!({"epoch": epoch + 2, "from": {"identity": "bob", "session_id": bob.sid},
                   "to": {"identity": "alice", "session_id": alice.sid}, "verb": "master.claim",
                   "actor": "operator:ops", "reason": "bob's host, \"down\""}),
        ]
    );
    assert_eq!(changes[0]["from"], Value::Null, "the first master came from an empty slot");
    let audit = co.audit(Some(PROJECT));
    assert!(audit.iter().any(|r| r["reason"] == "deploy 4.2"), "{audit:?}");

    // audit export: JSON lines, each with its cursor; the resume line on stderr.
    let since = "2000-01-01T00:00:00Z";
    let r = co.run(&["audit", "export", "--project", PROJECT, "--since", since]);
    r.assert_ok();
    let rows: Vec<Value> = r.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), audit.len(), "every row of the project");
    assert!(rows.iter().all(|r| r["cursor"].as_u64().is_some()));
    let last_cursor = rows.last().unwrap()["cursor"].as_u64().unwrap();
    assert!(r.stderr.contains(&format!("writerctl: next --cursor {last_cursor}")), "{}", r.stderr);
    // Resuming gives only what was written since.
    ok_doc(&co.claim("bob", "ops", PASSWORD, &["--yes", "--reason", "resume test"]));
    let r = co.run(&["audit", "export", "--project", PROJECT, "--since", since, "--cursor", &last_cursor.to_string()]);
    r.assert_ok();
    let more: Vec<Value> = r.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(more.len(), 1, "{more:?}");
    assert_eq!((more[0]["verb"].as_str(), more[0]["reason"].as_str()), (Some("master.claim"), Some("resume test")));

    // CSV: a header row, a cursor column, quoting of the comma and the quotes.
    let r = co.run(&["audit", "export", "--project", PROJECT, "--since", since, "--format", "csv"]);
    r.assert_ok();
    let mut lines = r.stdout.split("\r\n");
    assert_eq!(lines.next(), Some("cursor,at,project,verb,actor,target,result,epoch,reason,detail"));
    assert!(r.stdout.contains(",\"bob's host, \"\"down\"\"\","), "{}", r.stdout);
    assert_eq!(r.stdout.split("\r\n").filter(|l| !l.is_empty()).count(), rows.len() + 2);

    // A cursor the log does not hold names the oldest one held.
    let e = err_doc(
        &co.run(&["audit", "export", "--since", since, "--cursor", "999999999", "--json"]),
        4,
        "audit_cursor_unknown",
    );
    assert!(e["oldest_cursor"].as_u64().is_some(), "{e}");
}

#[test]
fn cli_dry_run_history_and_export_embedded() {
    check_cli(&Co::new());
}

#[test]
fn cli_dry_run_history_and_export_over_http_sqlite() {
    check_cli(&Co::http_sqlite());
}

#[test]
fn cli_dry_run_history_and_export_over_http_redis_pg() {
    let Some(co) = Co::http_redis_pg("cli_dry_run_history_and_export_over_http_redis_pg") else { return };
    check_cli(&co);
}

/// Issue 39 point 6 through the real binary over HTTP: `master history` without any
/// credential keeps every key, with actor and reason null, `"redacted": true` and a note;
/// with a session token of the project (`--token-file` or WRITERCTL_SESSION_TOKEN), or the
/// admin token, the CLI sends it and shows who and why.
fn check_history_visibility(co: &Co) {
    co.add_operator("ops", PASSWORD);
    let alice = co.reg("alice");
    co.register("bob", "cli", "m2");
    ok_doc(&co.claim("bob", "ops", PASSWORD, &["--reason", "alice's host is down", "--yes"]));
    let args = ["master", "history", "--project", PROJECT, "--json"];
    let newest = |doc: &Value| doc["changes"].as_array().unwrap().last().unwrap().clone();

    let mut anonymous = co.command(&args);
    anonymous.env_remove("WRITERCTL_ADMIN_TOKEN").env_remove("WRITERCTL_SESSION_TOKEN");
    let doc = ok_doc(&crate::master::exec(anonymous, None));
    assert_eq!(doc["redacted"], json!(true), "{doc}");
    let change = newest(&doc);
    assert_eq!((change["verb"].as_str(), change["to"]["identity"].as_str()), (Some("master.claim"), Some("bob")));
    assert!(change.as_object().unwrap().contains_key("actor") && change["actor"].is_null(), "{change}");
    assert!(change.as_object().unwrap().contains_key("reason") && change["reason"].is_null(), "{change}");
    let mut table = co.command(&args[..4]);
    table.env_remove("WRITERCTL_ADMIN_TOKEN").env_remove("WRITERCTL_SESSION_TOKEN");
    let r = crate::master::exec(table, None);
    r.assert_ok();
    assert!(r.stderr.contains("actor and reason withheld"), "{}", r.stderr);

    let mut with_session = co.command(&[&args[..], &["--token-file", crate::master::s(&alice.token_file)]].concat());
    with_session.env_remove("WRITERCTL_ADMIN_TOKEN");
    let doc = ok_doc(&crate::master::exec(with_session, None));
    assert!(doc.get("redacted").is_none(), "{doc}");
    let change = newest(&doc);
    assert_eq!(
        (change["actor"].as_str(), change["reason"].as_str()),
        (Some("operator:ops"), Some("alice's host is down"))
    );

    // The admin token the client environment carries counts too.
    let doc = co.ok(&args[..4]);
    assert_eq!(newest(&doc)["actor"], json!("operator:ops"), "{doc}");
}

#[test]
fn history_over_http_shows_who_and_why_only_to_a_part_in_the_project() {
    check_history_visibility(&Co::http_sqlite());
    if let Some(co) = Co::http_redis_pg("history_over_http_shows_who_and_why_only_to_a_part_in_the_project (redis_pg)")
    {
        check_history_visibility(&co);
    }
}
