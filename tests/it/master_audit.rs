//! `audit` (seed 000; issue 15 for heartbeats) and secrets: every verb lands in the audit
//! with its result, and no output of any verb (human or `--json`, success or error) nor the
//! store shows a token, an identity key or a password.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::master::{Co, PASSWORD, PROJECT, err_doc, exec, keys, mref, ok_doc, s, set};
use crate::support::Run;

/// Every verb lands in the audit: who, what, result (ok or the error code), epoch; but a
/// routine heartbeat does not (issue 15: beats are counted on /metrics; a return from stale
/// is audited, see `claim::engine::retain`).
#[test]
fn audit_records_every_verb() {
    let co = Co::new();
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    co.ok(&[
        "session",
        "heartbeat",
        "--project",
        PROJECT,
        "--session",
        &alice.sid,
        "--token-file",
        s(&alice.token_file),
    ]);
    co.add_operator("ops", PASSWORD);
    ok_doc(&co.handoff(&alice, "bob", &[]));
    err_doc(&co.handoff(&alice, "bob", &[]), 3, "not_master");
    err_doc(&co.handoff(&bob, "alice", &["--to-session", &alice.sid, "--expect-epoch", "1"]), 3, "stale_master");
    err_doc(&co.claim("alice", "ops", "wrong", &[]), 6, "invalid_operator_credentials");
    ok_doc(&co.claim("alice", "ops", PASSWORD, &[]));
    err_doc(
        &co.run(&[
            "session",
            "heartbeat",
            "--project",
            PROJECT,
            "--session",
            &bob.sid,
            "--token-file",
            s(&alice.token_file),
            "--json",
        ]),
        6,
        "unauthorized",
    );
    co.ok(&["session", "deregister", "--project", PROJECT, "--session", &bob.sid, "--token-file", s(&bob.token_file)]);
    err_doc(&co.run_stdin(&["operator", "add", "ops", "--password-stdin", "--json"], b"x\n"), 3, "operator_exists");

    // Enrollment (`identity add`, by Co::register) has its own tests (identity.rs).
    let all: Vec<Value> =
        co.audit(None).into_iter().filter(|a| !a["verb"].as_str().unwrap().starts_with("identity.")).collect();
    for a in &all {
        assert_eq!(
            keys(a),
            set(&["at", "project", "verb", "actor", "target", "result", "epoch", "detail", "reason"]),
            "{a:#}"
        );
    }
    let ats: Vec<&str> = all.iter().map(|a| a["at"].as_str().unwrap()).collect();
    assert!(ats.windows(2).all(|w| w[0] <= w[1]), "oldest first: {ats:?}");
    let rows: Vec<Value> = all
        .iter()
        .map(|a| json!([a["project"], a["verb"], a["actor"], a["target"], a["result"], a["epoch"]]))
        .collect();
    let sa = format!("session:{}", alice.sid);
    let sb = format!("session:{}", bob.sid);
    let expect = vec![
        json!([PROJECT, "session.register", "identity:alice", null, "ok", 1]),
        json!([PROJECT, "session.register", "identity:bob", null, "ok", 1]),
        json!(["", "operator.add", "local", "operator:ops", "ok", null]),
        json!([PROJECT, "master.handoff", sa, "bob", "ok", 2]),
        json!([PROJECT, "master.handoff", sa, "bob", "not_master", 2]),
        json!([PROJECT, "master.handoff", sb, format!("alice ({})", alice.sid), "stale_master", 2]),
        json!([PROJECT, "master.claim", "operator:ops", "alice", "invalid_operator_credentials", null]),
        json!([PROJECT, "master.claim", "operator:ops", "alice", "ok", 3]),
        json!([PROJECT, "session.heartbeat", sb, null, "unauthorized", 3]),
        json!([PROJECT, "session.deregister", sb, null, "ok", 3]),
        json!(["", "operator.add", "local", "operator:ops", "operator_exists", null]),
    ];
    assert_eq!(rows, expect, "{all:#?}");
    // Details: the outcome of a master verb, the refusal's facts.
    let handoff_ok = &all[3]["detail"];
    assert_eq!((&handoff_ok["previous_master"], &handoff_ok["new_master"]), (&mref(&alice), &mref(&bob)));
    assert_eq!(all[5]["detail"], json!({"expected_epoch": 1, "epoch": 2}));
    assert_eq!(all[7]["detail"]["by_operator"], "ops");
    assert_eq!(all[0]["detail"]["session_id"], json!(alice.sid));
    // --project leaves out operator administration; --limit keeps the newest, oldest first.
    let web = co.audit(Some(PROJECT));
    assert_eq!(web.len(), 11, "9 verbs and 2 enrollments");
    assert!(web.iter().all(|a| a["project"] == PROJECT));
    let last2 = co.ok(&["audit", "--project", PROJECT, "--limit", "2"])["entries"].clone();
    // (the newest rows are verbs, not enrollments, so `all` still indexes them)
    assert_eq!(last2, json!([all[8], all[9]]));
    // The human table shows the same rows.
    let r = co.run(&["audit", "--project", PROJECT]);
    r.assert_ok();
    assert!(r.stdout.contains("master.claim") && r.stdout.contains("invalid_operator_credentials"), "{}", r.stdout);
    let text = format!("{all:?}{}", r.stdout);
    assert!(!text.contains(&alice.token) && !text.contains(&bob.token) && !text.contains(PASSWORD));
}

/// No session token and no password shows up in any output (human or --json, success or
/// error), except the register output that exists to show the token; the store keeps
/// neither in clear.
#[test]
fn no_secret_in_any_output() {
    let co = Co::new();
    let wrong_pw = "Tr0ub4dor&3-wrong-guess";
    let other_pw = "second-operator-passphrase";
    let argv_pw = "argv-password-never-echoed";
    let forged_token = "cd".repeat(32);
    let forged = co.file("forged.tok");
    std::fs::write(&forged, &forged_token).unwrap();
    let pw_right = co.pw_file(PASSWORD);
    let pw_wrong = co.pw_file(wrong_pw);
    co.add_operator("ops", PASSWORD);

    let mut tokens: Vec<String> = vec![forged_token.clone()];
    let mut checked: Vec<(String, Run)> = Vec::new();
    for json_mode in [false, true] {
        let m = if json_mode { "json" } else { "human" };
        let run = |args: &[&str], vars: &[(&str, &str)], input: Option<&[u8]>| {
            let mut a = args.to_vec();
            if json_mode {
                a.push("--json");
            }
            let mut c = co.command(&a);
            c.envs(vars.iter().copied());
            exec(c, input)
        };
        // Registration that prints the token: its stdout is exempt, its stderr is not.
        let printed_key = co.key_of(&format!("printed-{m}"));
        let r = run(
            &["session", "register", "--project", PROJECT, "--identity", &format!("printed-{m}")],
            &[("WRITERCTL_IDENTITY_KEY", &printed_key)],
            None,
        );
        r.assert_ok();
        let printed = if json_mode {
            r.json::<Value>()["token"].as_str().unwrap().to_string()
        } else {
            r.stdout.lines().find_map(|l| l.strip_prefix("token ")).unwrap().to_string()
        };
        assert_eq!(printed.len(), 64, "{}", r.stdout);
        tokens.push(printed.clone());
        checked.push((
            format!("{m} register (stderr only)"),
            Run { code: r.code, stdout: String::new(), stderr: r.stderr },
        ));

        let mut go = |label: &str, args: &[&str], vars: &[(&str, &str)], input: Option<&[u8]>| {
            let r = run(args, vars, input);
            checked.push((format!("{m} {label}"), r));
        };
        let a_tok = co.file("a.tok");
        let b_tok = co.file("b.tok");
        let a_id = format!("alice-{m}");
        let b_id = format!("bob-{m}");
        // Identity keys are secrets too: never in any output but their key file.
        let (a_key, b_key) = (co.key_of(&a_id), co.key_of(&b_id));
        tokens.extend([a_key.clone(), b_key.clone(), printed_key.clone()]);
        go(
            "register a",
            &["session", "register", "--project", PROJECT, "--identity", &a_id, "--token-file", s(&a_tok)],
            &[("WRITERCTL_IDENTITY_KEY", &a_key)],
            None,
        );
        go(
            "register b",
            &["session", "register", "--project", PROJECT, "--identity", &b_id, "--token-file", s(&b_tok)],
            &[("WRITERCTL_IDENTITY_KEY", &b_key)],
            None,
        );
        let a_token = std::fs::read_to_string(&a_tok).unwrap().trim().to_string();
        let b_token = std::fs::read_to_string(&b_tok).unwrap().trim().to_string();
        tokens.push(a_token.clone());
        tokens.push(b_token.clone());
        let st = co.ok(&["master", "status", "--project", PROJECT]);
        let sid_of = |ident: &str| {
            st["controllers"].as_array().unwrap().iter().find(|c| c["identity"] == ident).unwrap()["session_id"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let (a_sid, b_sid) = (sid_of(&a_id), sid_of(&b_id));
        let printed_id = format!("printed-{m}");

        go(
            "heartbeat file",
            &["session", "heartbeat", "--project", PROJECT, "--session", &a_sid, "--token-file", s(&a_tok)],
            &[],
            None,
        );
        go(
            "heartbeat env",
            &["session", "heartbeat", "--project", PROJECT, "--session", &a_sid],
            &[("WRITERCTL_SESSION_TOKEN", &a_token)],
            None,
        );
        go(
            "heartbeat wrong",
            &["session", "heartbeat", "--project", PROJECT, "--session", &a_sid, "--token-file", s(&forged)],
            &[],
            None,
        );
        go(
            "heartbeat foreign env",
            &["session", "heartbeat", "--project", PROJECT, "--session", &a_sid],
            &[("WRITERCTL_SESSION_TOKEN", &b_token)],
            None,
        );
        go(
            "heartbeat -v wrong",
            &["-v", "session", "heartbeat", "--project", PROJECT, "--session", &a_sid, "--token-file", s(&forged)],
            &[],
            None,
        );
        // Make alice master by claim (whoever holds it now), then hand off with her token.
        go(
            "claim wrong pw file",
            &[
                "master",
                "claim",
                "--project",
                PROJECT,
                "--to",
                &a_id,
                "--operator",
                "ops",
                "--password-file",
                s(&pw_wrong),
            ],
            &[],
            None,
        );
        go(
            "claim wrong pw env -v",
            &["-v", "master", "claim", "--project", PROJECT, "--to", &a_id, "--operator", "ops"],
            &[("WRITERCTL_OPERATOR_PASSWORD", wrong_pw)],
            None,
        );
        go(
            "claim wrong pw unknown op",
            &["master", "claim", "--project", PROJECT, "--to", &a_id, "--operator", "nobody", "--password-stdin"],
            &[],
            Some(format!("{PASSWORD}\n").as_bytes()),
        );
        go(
            "claim right pw stdin",
            &["master", "claim", "--project", PROJECT, "--to", &a_id, "--operator", "ops", "--password-stdin", "--yes"],
            &[],
            Some(format!("{PASSWORD}\n").as_bytes()),
        );
        go(
            "claim right pw file stale",
            &[
                "master",
                "claim",
                "--project",
                PROJECT,
                "--to",
                &b_id,
                "--operator",
                "ops",
                "--password-file",
                s(&pw_right),
                "--expect-epoch",
                "0",
            ],
            &[],
            None,
        );
        go(
            "claim right pw env ghost",
            &["master", "claim", "--project", PROJECT, "--to", "ghost", "--operator", "ops"],
            &[("WRITERCTL_OPERATOR_PASSWORD", PASSWORD)],
            None,
        );
        go(
            "handoff wrong token",
            &[
                "master",
                "handoff",
                "--project",
                PROJECT,
                "--session",
                &a_sid,
                "--token-file",
                s(&forged),
                "--to",
                &b_id,
            ],
            &[],
            None,
        );
        go(
            "handoff not master",
            &["master", "handoff", "--project", PROJECT, "--session", &b_sid, "--token-file", s(&b_tok), "--to", &a_id],
            &[],
            None,
        );
        go(
            "handoff ok env",
            &["master", "handoff", "--project", PROJECT, "--session", &a_sid, "--to", &b_id, "--yes"],
            &[("WRITERCTL_SESSION_TOKEN", &a_token)],
            None,
        );
        go(
            "handoff missing token",
            &["master", "handoff", "--project", PROJECT, "--session", &b_sid, "--to", &a_id],
            &[],
            None,
        );
        go(
            "claim argv --password",
            &["master", "claim", "--project", PROJECT, "--to", &a_id, "--operator", "ops", "--password", argv_pw],
            &[],
            None,
        );
        go(
            "claim argv --password=",
            &[
                "master",
                "claim",
                "--project",
                PROJECT,
                "--to",
                &a_id,
                "--operator",
                "ops",
                &format!("--password={argv_pw}"),
            ],
            &[],
            None,
        );
        let op = format!("ops-{m}");
        go(
            "operator add stdin",
            &["operator", "add", &op, "--password-stdin"],
            &[],
            Some(format!("{other_pw}\n").as_bytes()),
        );
        go("operator add env exists", &["operator", "add", &op], &[("WRITERCTL_OPERATOR_PASSWORD", other_pw)], None);
        go("operator add argv --password", &["operator", "add", "x", "--password", argv_pw], &[], None);
        go("operator add argv --password=", &["operator", "add", "x", &format!("--password={argv_pw}")], &[], None);
        go("inbox a", &["inbox", "--project", PROJECT, "--identity", &a_id, "--token-file", s(&a_tok)], &[], None);
        go(
            "inbox printed",
            &["inbox", "--project", PROJECT, "--identity", &printed_id],
            &[("WRITERCTL_SESSION_TOKEN", &printed)],
            None,
        );
        go(
            "inbox follow",
            &[
                "inbox",
                "--project",
                PROJECT,
                "--identity",
                &a_id,
                "--token-file",
                s(&a_tok),
                "--follow",
                "--timeout",
                "0.3",
            ],
            &[],
            None,
        );
        go("audit", &["audit", "--limit", "100000"], &[], None);
        go("audit project", &["audit", "--project", PROJECT], &[], None);
        go("status", &["master", "status", "--project", PROJECT], &[], None);
        go(
            "deregister b",
            &["session", "deregister", "--project", PROJECT, "--session", &b_sid, "--token-file", s(&b_tok)],
            &[],
            None,
        );
        go(
            "deregister b again",
            &["session", "deregister", "--project", PROJECT, "--session", &b_sid, "--token-file", s(&b_tok)],
            &[],
            None,
        );
    }
    // The runs did what they were meant to (so their output is the output worth checking).
    let code = |label: &str| checked.iter().find(|(l, _)| l == label).unwrap_or_else(|| panic!("{label}")).1.code;
    for m in ["human", "json"] {
        for (label, want) in [
            ("register a", 0),
            ("heartbeat file", 0),
            ("heartbeat env", 0),
            ("heartbeat wrong", 6),
            ("heartbeat foreign env", 6),
            ("claim wrong pw file", 6),
            ("claim wrong pw unknown op", 6),
            ("claim right pw stdin", 0),
            ("claim right pw file stale", 3),
            ("claim right pw env ghost", 5),
            ("handoff wrong token", 6),
            ("handoff not master", 3),
            ("handoff ok env", 0),
            ("handoff missing token", 2),
            ("claim argv --password", 2),
            ("claim argv --password=", 2),
            ("operator add stdin", 0),
            ("operator add env exists", 3),
            ("operator add argv --password", 2),
            ("operator add argv --password=", 2),
            ("inbox a", 0),
            ("inbox follow", 0),
            ("audit", 0),
            ("status", 0),
            ("deregister b", 0),
            ("deregister b again", 6),
        ] {
            assert_eq!(
                code(&format!("{m} {label}")),
                want,
                "{m} {label}: {:#?}",
                checked.iter().find(|(l, _)| *l == format!("{m} {label}"))
            );
        }
    }
    let secrets: Vec<String> =
        tokens.iter().cloned().chain([PASSWORD, wrong_pw, other_pw, argv_pw].iter().map(|s| s.to_string())).collect();
    for (label, r) in &checked {
        for secret in &secrets {
            assert!(
                !r.stdout.contains(secret.as_str()) && !r.stderr.contains(secret.as_str()),
                "{label} shows a secret ({secret:?}):\nstdout:\n{}\nstderr:\n{}",
                r.stdout,
                r.stderr
            );
        }
    }
    // The store (and its WAL, if still there) keeps hashes only.
    let mut files = 0;
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let p = PathBuf::from(format!("{}{suffix}", co.store.display()));
        let Ok(bytes) = std::fs::read(&p) else { continue };
        files += 1;
        for secret in &secrets {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{} holds {secret:?} in clear",
                p.display()
            );
        }
    }
    assert!(files >= 1);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&co.store).unwrap().permissions().mode() & 0o777, 0o600);
}
