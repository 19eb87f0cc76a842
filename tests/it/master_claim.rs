//! `master claim` by an operator (seed 000 #7, #8): credentials checked first, the named
//! target promoted and never the caller, the back-off after wrong passwords, and an unknown
//! operator refused exactly like a wrong password.

use serde_json::{Value, json};

use crate::master::{Co, PASSWORD, PROJECT, err_doc, mref, ok_doc};

/// Seed #7: a claim with a wrong password is refused and changes nothing. Credentials come
/// before the epoch and target checks.
pub(crate) fn check_seed_07(co: &Co) {
    let alice = co.reg("alice");
    co.reg("bob");
    co.add_operator("ops", PASSWORD);

    let e =
        err_doc(&co.claim("bob", "ops", "wrong password", &["--expect-epoch", "1"]), 6, "invalid_operator_credentials");
    assert_eq!(e["next_delay_ms"], 250);
    // Credentials first: a stale epoch or a missing target does not change the answer.
    err_doc(&co.claim("bob", "ops", "wrong password", &["--expect-epoch", "0"]), 6, "invalid_operator_credentials");
    err_doc(&co.claim("ghost", "ops", "wrong password", &[]), 6, "invalid_operator_credentials");
    // The right password with a trailing space is a different password.
    err_doc(&co.claim("bob", "ops", &format!("{PASSWORD} "), &[]), 6, "invalid_operator_credentials");
    // An unknown operator is refused the same way.
    err_doc(&co.claim("bob", "nobody", PASSWORD, &[]), 6, "invalid_operator_credentials");

    co.assert_master(Some(&alice), 1);
    assert!(co.events("alice").is_empty());
}

#[test]
fn seed_07_invalid_operator_credentials() {
    check_seed_07(&Co::new());
}

/// Seed #8: a valid claim promotes the named target, never the caller (an operator whose id
/// is also a registered identity stays a non-master).
pub(crate) fn check_seed_08(co: &Co) {
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    let carol = co.reg("carol");
    let ops_ctl = co.reg("ops");
    co.add_operator("ops", PASSWORD);

    let v = ok_doc(&co.claim("bob", "ops", PASSWORD, &["--expect-epoch", "1"]));
    assert_eq!(
        v,
        json!({"ok": true, "project": PROJECT, "previous_master": mref(&alice), "new_master": mref(&bob),
               "epoch": 2, "changed": true, "preempted": [mref(&alice)], "by_operator": "ops"})
    );
    let st = co.assert_master(Some(&bob), 2);
    let ops_row = st["controllers"].as_array().unwrap().iter().find(|c| c["session_id"] == json!(ops_ctl.sid)).unwrap();
    assert_eq!(ops_row["is_master"], false);

    // The password also comes from stdin and from the environment.
    let r = co.run_stdin(
        &["master", "claim", "--project", PROJECT, "--to", "carol", "--operator", "ops", "--password-stdin", "--json"],
        format!("{PASSWORD}\n").as_bytes(),
    );
    assert_eq!(ok_doc(&r)["new_master"], mref(&carol));
    let r = co.run_env(
        &[
            "master",
            "claim",
            "--project",
            PROJECT,
            "--to",
            "alice",
            "--operator",
            "ops",
            "--expect-epoch",
            "3",
            "--json",
        ],
        &[("WRITERCTL_OPERATOR_PASSWORD", PASSWORD)],
    );
    let v = ok_doc(&r);
    assert_eq!((&v["new_master"], &v["preempted"], &v["epoch"]), (&mref(&alice), &json!([mref(&carol)]), &json!(4)));
    co.assert_master(Some(&alice), 4);
}

#[test]
fn seed_08_operator_claim_promotes_named_target_not_caller() {
    check_seed_08(&Co::new());
}

/// Wrong passwords earn 250, 500, 1000 ms; the audit shows each; the right one still works
/// and resets the count.
#[test]
fn wrong_password_delay_grows() {
    let co = Co::new();
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    co.add_operator("ops", PASSWORD);

    for expect in [250, 500, 1000] {
        let e = err_doc(&co.claim("bob", "ops", "guess", &["--expect-epoch", "1"]), 6, "invalid_operator_credentials");
        assert_eq!(e["next_delay_ms"], expect, "{e:#}");
    }
    let claims: Vec<Value> = co.audit(Some(PROJECT)).into_iter().filter(|a| a["verb"] == "master.claim").collect();
    assert_eq!(claims.len(), 3, "{claims:#?}");
    for a in &claims {
        assert_eq!(
            (&a["result"], &a["actor"], &a["target"], &a["project"]),
            (&json!("invalid_operator_credentials"), &json!("operator:ops"), &json!("bob"), &json!(PROJECT)),
            "{a:#}"
        );
        assert!(a["detail"]["next_delay_ms"].as_u64().is_some(), "{a:#}");
    }
    co.assert_master(Some(&alice), 1);

    let v = ok_doc(&co.claim("bob", "ops", PASSWORD, &["--expect-epoch", "1"]));
    assert_eq!(v["new_master"], mref(&bob));
    let claims: Vec<Value> = co.audit(Some(PROJECT)).into_iter().filter(|a| a["verb"] == "master.claim").collect();
    assert_eq!(claims.len(), 4);
    assert_eq!((&claims[3]["result"], &claims[3]["epoch"]), (&json!("ok"), &json!(2)));
    // A success resets the count: the next failure is back at 250.
    let e = err_doc(&co.claim("alice", "ops", "guess", &[]), 6, "invalid_operator_credentials");
    assert_eq!(e["next_delay_ms"], 250);
}

/// "Unknown operator or wrong password; which of the two is never said": the first failed
/// attempt for an unknown operator id must look exactly like one for a known id.
#[test]
fn unknown_operator_is_indistinguishable_from_wrong_password() {
    let co = Co::new();
    co.reg("alice");
    co.reg("bob");
    co.add_operator("ops", PASSWORD);
    let known = err_doc(&co.claim("bob", "ops", "guess", &[]), 6, "invalid_operator_credentials");
    let unknown = err_doc(&co.claim("bob", "nobody", "guess", &[]), 6, "invalid_operator_credentials");
    assert_eq!(unknown, known, "the error reveals whether the operator id exists");
}
