//! The committed OpenAPI document (`docs/openapi.json`) is the one the server serves at
//! `/openapi.json`, and the schemas the document gives the engine's own answer types match
//! what those types serialize to.

use std::path::Path;

use serde_json::{Value, json};

/// Where the committed copy lives.
const COMMITTED: &str = "docs/openapi.json";

#[test]
fn the_committed_document_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(COMMITTED);
    let generated = serde_json::to_string_pretty(&writerctl::coordinator::server::openapi()).unwrap() + "\n";
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{COMMITTED} is not the document the server serves; regenerate it with \
         `UPDATE_OPENAPI=1 cargo test --test it openapi::the_committed_document_is_current` and commit it"
    );
}

/// Checks `value` against `schema` for what the document promises: the type, every
/// required property present, no property the schema does not list, and the same for
/// nested objects, arrays and `$ref`s.
fn conforms(doc: &Value, schema: &Value, value: &Value, at: &str) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/components/schemas/").unwrap();
        return conforms(doc, &doc["components"]["schemas"][name], value, at);
    }
    if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
        let fits = |s: &Value| std::panic::catch_unwind(|| conforms(doc, s, value, at)).is_ok();
        assert!(options.iter().any(fits), "{at}: {value} fits none of {schema}");
        return;
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return,
    };
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    assert!(
        types.contains(&kind) || (kind == "integer" && types.contains(&"number")),
        "{at}: {value} is not {types:?}"
    );
    match value {
        // A free-form object (an event's payload, an audit row's detail).
        Value::Object(_) if schema.get("properties").is_none() => {}
        Value::Object(fields) => {
            let props = schema["properties"].as_object().cloned().unwrap_or_default();
            for name in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                assert!(fields.contains_key(name), "{at}: required {name} missing from {value}");
            }
            for (name, v) in fields {
                let s = props.get(name).unwrap_or_else(|| panic!("{at}: {name} is not in the schema {schema}"));
                conforms(doc, s, v, &format!("{at}.{name}"));
            }
        }
        Value::Array(items) => items.iter().for_each(|v| conforms(doc, &schema["items"], v, &format!("{at}[]"))),
        _ => {}
    }
}

#[test]
fn the_engine_types_serialize_as_their_schemas_say() {
    use writerctl::claim::engine::MasterChange;
    use writerctl::claim::identities::Removed;
    use writerctl::claim::masters::MasterOutcome;
    use writerctl::claim::model::{AuditEntry, Event, MasterRef};
    use writerctl::claim::work_claims::*;
    let doc = writerctl::coordinator::server::openapi();
    let m = MasterRef { identity: "alice".into(), session_id: "s1".into() };
    let row = WorkClaim {
        project: "p".into(),
        channel: "c".into(),
        task: "t".into(),
        owner: Some("alice".into()),
        status: WorkClaimStatus::Claimed,
        version: 3,
        deputy: None,
        ttl_minutes: Some(20),
        next_step: Some("merge".into()),
        handoff_from: None,
        last_owner_touch: Some(5),
        owner_since: Some(4),
        claimed_at: Some(3),
        updated_at: 6,
    };
    let channel = Channel {
        project: "p".into(),
        channel: "c".into(),
        steward: "carol".into(),
        sla_minutes: 60,
        ttl_floor_minutes: 5,
        created_at: 1,
    };
    let lease = FocusLease { project: "p".into(), seat: "alice".into(), started_at: 1, until: 2, ended_at: None };
    let paused = Paused { reason: "db migration".into(), since: 1, until: Some(2) };
    let action = SweepAction {
        address: TaskAddress::new("p", "c", "t"),
        from: "a".into(),
        to: Some("b".into()),
        version: 2,
        due_at: 3,
    };
    let held = HeldBack {
        channel: "c".into(),
        task: "u".into(),
        owner: "a".into(),
        to: None,
        due_at: 3,
        why: HELD_BY_PAUSE.into(),
    };
    let item = StewardItem { claim: row.clone(), age_minutes: 90 };
    let samples: Vec<(&str, Value)> = vec![
        ("MasterRef", json!(m)),
        (
            "MasterOutcome",
            json!(MasterOutcome {
                previous_master: None,
                new_master: m.clone(),
                preempted: vec![m.clone()],
                epoch: 2,
                changed: true,
                dry_run: false,
            }),
        ),
        ("Removed", json!(Removed { identity: "a".into(), sessions: vec!["s".into()], was_master: false, epoch: 1 })),
        (
            "Event",
            json!(Event { cursor: 1, at: 2, recipient_session: None, kind: "k".into(), payload: json!({"x": 1}) }),
        ),
        (
            "AuditEntry",
            json!(AuditEntry {
                at: 1,
                project: "p".into(),
                verb: "v".into(),
                actor: "a".into(),
                target: Some("t".into()),
                result: "ok".into(),
                epoch: None,
                detail: json!({}),
                request: None,
                reason: None,
            }),
        ),
        (
            "MasterChange",
            json!(MasterChange {
                at: 1,
                epoch: 2,
                from: None,
                to: Some(m.clone()),
                verb: "master.claim".into(),
                actor: Some("operator:o".into()),
                reason: None,
            }),
        ),
        ("Channel", json!(channel)),
        ("ClaimRow", json!(row)),
        ("ClaimStep", json!(WorkClaimStep { at: 1, actor: "a".into(), action: "take".into(), claim: row.clone() })),
        ("ClaimOutcome", json!(WorkClaimOutcome { claim: row.clone(), ttl_raised_from: Some(2) })),
        (
            "SweepReport",
            json!(SweepReport {
                as_of: 1,
                dry_run: true,
                released: vec![action.clone()],
                deferred_by_focus: 0,
                conflicts: 1,
                paused: Some(paused.clone()),
                held_back: vec![held.clone()],
            }),
        ),
        ("SweepAction", json!(action)),
        ("HeldBack", json!(held)),
        ("FocusLease", json!(lease)),
        ("FocusOutcome", json!(FocusOutcome { lease: lease.clone(), capped_from: None })),
        ("StewardItem", json!(item)),
        ("StewardReport", json!(StewardReport { channel, as_of: 1, overdue: vec![item], paused: None })),
        ("Paused", json!(paused)),
        (
            "PauseOutcome",
            json!(PauseOutcome { project: "p".into(), paused: paused.clone(), replaced: Some(paused.clone()) }),
        ),
        (
            "ResumeOutcome",
            json!(ResumeOutcome {
                project: "p".into(),
                was_paused: true,
                previous: Some(paused.clone()),
                resumed_at: 9
            }),
        ),
        ("PauseState", json!(PauseState { project: "p".into(), paused: Some(paused.clone()) })),
    ];
    // One sample of each engine type the API answers with (the types that derive their
    // schema in `crate::claim`), each checked at the top level, not only through a `$ref`.
    assert_eq!(samples.len(), 21, "a sample of each engine answer type");
    for (name, value) in samples {
        let schema = &doc["components"]["schemas"][name];
        assert!(schema.is_object(), "no schema {name}");
        conforms(&doc, schema, &value, name);
        // Every property the schema lists is one the type serializes.
        for prop in schema["properties"].as_object().unwrap().keys() {
            assert!(value.get(prop).is_some(), "{name}: the schema lists {prop}, which the type does not serialize");
        }
    }
}
