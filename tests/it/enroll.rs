//! Issue 28: enrollment ends open registration (point 3), and the smaller holes of point 6
//! this branch closes: confusable identities, undeliverable answers, the admin token file,
//! exit 75's wording, the missing admin token's code.

use std::path::Path;

use serde_json::Value;

use crate::master::{Co, PROJECT, err_doc, s};
use crate::serve::Deployment;

/// `session register` of `identity` on machine `m1` with no proof, the token to `tf`.
fn open_register(co: &Co, identity: &str, tf: &Path) -> Value {
    let r = co.run(&[
        "session",
        "register",
        "--project",
        PROJECT,
        "--identity",
        identity,
        "--machine",
        "m1",
        "--token-file",
        s(tf),
        "--json",
    ]);
    r.assert_ok();
    r.json()
}

fn heartbeat(co: &Co, sid: &str, tf: &Path, coordinator: Option<&str>) -> crate::support::Run {
    let mut args =
        vec!["session", "heartbeat", "--project", PROJECT, "--session", sid, "--token-file", s(tf), "--json"];
    if let Some(c) = coordinator {
        args.extend(["--coordinator", c]);
    }
    co.run(&args)
}

/// Point 3: a squatter registered under --open-registration lost its seat when the first
/// identity was enrolled, and the audit row of the enrollment names its session. Fails on
/// main (the squatter's heartbeat kept working).
#[test]
fn first_enrollment_invalidates_open_sessions_visibly() {
    let co = Co::http(|home, store| Deployment::sqlite(home, store).server_args(&["--open-registration"]));
    let tf = co.file("squat.token");
    let v = open_register(&co, "mallory", &tf);
    let sid = v["session_id"].as_str().unwrap().to_string();
    assert_eq!(v["is_master"], true);
    heartbeat(&co, &sid, &tf, None).assert_ok();
    co.key_file("alice");
    err_doc(&heartbeat(&co, &sid, &tf, None), 6, "unauthorized");
    let doc = co.ok(&["audit", "--project", PROJECT, "--limit", "100"]);
    let add = doc["entries"].as_array().unwrap().iter().find(|e| e["verb"] == "identity.add").unwrap().clone();
    assert_eq!(add["detail"]["invalidated_open_sessions"], serde_json::json!([sid]), "{add}");
    assert_eq!(co.status()["master"]["session_id"], Value::Null, "the squatter's mastership ended with its session");
}

/// Point 6: look-alike identities (Cyrillic, fullwidth, case) are refused with
/// name_confusable (2), naming the existing spelling. Fails on main (all accepted).
#[test]
fn confusable_identities_are_refused() {
    for co in [Co::new(), Co::http_sqlite()] {
        co.key_file("alice");
        for look_alike in ["\u{430}lice", "ａｌｉｃｅ", "Alice"] {
            let r = co.run(&["identity", "add", "--project", PROJECT, look_alike, "--json"]);
            let e = err_doc(&r, 2, "name_confusable");
            assert_eq!(e["existing"], "alice", "{e}");
        }
    }
}

/// Point 6: a missing admin token is unauthorized (6) client-side. Fails on main (2).
#[test]
fn a_missing_admin_token_is_unauthorized() {
    let co = Co::http_sqlite();
    let mut c = co.command(&["identity", "list", "--project", PROJECT, "--json"]);
    c.env_remove("WRITERCTL_ADMIN_TOKEN");
    err_doc(&crate::master::exec(c, None), 6, "unauthorized");
}

/// Point 6: an admin token file readable by others, or short, keeps the server from
/// starting (exit 2) with the fix in the message. Fails on main (both accepted).
#[test]
fn a_loose_or_short_admin_token_file_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let co = Co::new();
    for (text, mode, says) in [("a".repeat(64), 0o644, "chmod 600"), ("b".repeat(31), 0o600, "openssl rand -hex 32")] {
        let f = co.file("admin.token");
        std::fs::write(&f, &text).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        let args = crate::master::strings(&[
            "--store",
            &format!("sqlite:{}", co.store.display()),
            "--admin-token-file",
            s(&f),
        ]);
        match crate::serve::Server::try_start(co.dir(), &args, &[]) {
            crate::serve::Started::Up(srv) => panic!("accepted {mode:o}: {}", srv.url),
            crate::serve::Started::Failed(code, _, err) => {
                assert_eq!(code, 2, "{err}");
                assert!(err.contains(says), "{err}");
            }
        }
        std::fs::remove_file(&f).unwrap();
    }
}
