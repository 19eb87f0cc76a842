//! `operator add` (seed 000): never overwrites an operator and takes no password on argv.

use serde_json::{Value, json};

use crate::master::{Co, PASSWORD, err_doc, ok_doc, s};

/// `operator add` never overwrites an operator, and has no argv password flag.
#[test]
fn operator_add_refuses_existing_and_argv_password() {
    let co = Co::new();
    co.reg("alice");
    co.reg("bob");
    co.add_operator("ops", PASSWORD);

    let pf = co.pw_file("another password");
    let r = co.run(&["operator", "add", "ops", "--password-file", s(&pf), "--json"]);
    err_doc(&r, 3, "operator_exists");
    let r = co.run_env(&["operator", "add", "ops", "--json"], &[("WRITERCTL_OPERATOR_PASSWORD", "third password")]);
    err_doc(&r, 3, "operator_exists");
    // The stored credential is the first one.
    err_doc(&co.claim("bob", "ops", "another password", &[]), 6, "invalid_operator_credentials");
    ok_doc(&co.claim("bob", "ops", PASSWORD, &[]));

    // No --password flag: a usage error (exit 2), in both spellings and modes; nothing added.
    for args in [
        vec!["operator", "add", "ops2", "--password", "hunter2"],
        vec!["operator", "add", "ops2", "--password=hunter2"],
    ] {
        let mut j = args.clone();
        j.push("--json");
        err_doc(&co.run(&j), 2, "usage");
        let r = co.run(&args);
        assert_eq!(r.code, 2, "{r:?}");
        assert!(r.stdout.is_empty() && r.stderr.contains("--password"), "{r:?}");
    }
    // Both sources at once is a usage error; no source (no terminal) and an empty password
    // are invalid arguments.
    let r = co.run_stdin(&["operator", "add", "ops2", "--password-stdin", "--password-file", s(&pf), "--json"], b"x\n");
    err_doc(&r, 2, "usage");
    err_doc(&co.run(&["operator", "add", "ops2", "--json"]), 2, "invalid_argument");
    err_doc(&co.run_stdin(&["operator", "add", "ops2", "--password-stdin", "--json"], b"\n"), 2, "invalid_argument");
    // ops2 was never created by any of those.
    let r = co.run_env(&["operator", "add", "ops2", "--json"], &[("WRITERCTL_OPERATOR_PASSWORD", "env password")]);
    assert_eq!(ok_doc(&r), json!({"operator_id": "ops2", "created": true}));
    ok_doc(&co.claim("alice", "ops2", "env password", &[]));

    // The audit tells who added what and which attempt was refused.
    let adds: Vec<(Value, Value)> = co
        .audit(None)
        .into_iter()
        .filter(|a| a["verb"] == "operator.add")
        .map(|a| (a["target"].clone(), a["result"].clone()))
        .collect();
    assert_eq!(
        adds,
        [
            (json!("operator:ops"), json!("ok")),
            (json!("operator:ops"), json!("operator_exists")),
            (json!("operator:ops"), json!("operator_exists")),
            (json!("operator:ops2"), json!("ok")),
        ]
    );
}
