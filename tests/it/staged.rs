//! Staged states: qwen-format records and side files written by hand into a lock directory,
//! then `acquire`, `release` and `status` run against them (git's t0031 style). Every refusal
//! is checked three ways: exit status, `--json` error code, and the exact bytes of every file
//! in the lock directory afterwards (nothing changed, nothing new).

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::support::*;

type MakeFile = fn(&Path);

const S: &str = "staged-session";
const OWNER: &str = "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f";
const FOREIGN_TOKEN: &str = "00000000-0000-4000-8000-000000000000";

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

/// What one directory entry is, compared byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File(Vec<u8>),
    Dir(Vec<String>),
    Symlink(PathBuf),
    Fifo,
    Other,
}

/// Every entry of `dir` (not following symlinks), with its exact content.
fn snapshot(dir: &Path) -> BTreeMap<String, Node> {
    use std::os::unix::fs::FileTypeExt;
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        let p = e.path();
        let ft = std::fs::symlink_metadata(&p).unwrap().file_type();
        let node = if ft.is_symlink() {
            Node::Symlink(std::fs::read_link(&p).unwrap())
        } else if ft.is_file() {
            Node::File(std::fs::read(&p).unwrap())
        } else if ft.is_dir() {
            let mut names: Vec<String> =
                std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
            names.sort();
            Node::Dir(names)
        } else if ft.is_fifo() {
            Node::Fifo
        } else {
            Node::Other
        };
        out.insert(name, node);
    }
    out
}

fn mkfifo(p: &Path) {
    let ok = std::process::Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok, "mkfifo {} failed", p.display());
}

fn lock_name(session: &str) -> String {
    format!("{session}.lock")
}

/// Stages `bytes` as `L` of session `S`; returns the lock directory snapshot.
fn stage_lock(env: &TestEnv, bytes: &[u8]) -> BTreeMap<String, Node> {
    stage(&env.lock(S), bytes);
    snapshot(&env.lock_dir())
}

fn acquire(env: &TestEnv, managed: bool) -> Run {
    let mut args = vec!["acquire", "--json", "--session", S];
    if managed {
        args.push("--managed");
    }
    env.run(&args)
}

fn status(env: &TestEnv) -> StatusJson {
    env.run(&["status", "--json", "--session", S]).assert_ok().json()
}

fn status_all(env: &TestEnv) -> StatusAllJson {
    env.run(&["status", "--json"]).assert_ok().json()
}

/// Runs acquire (plain, then `--managed`) and requires both to fail with `exit`/`code`
/// leaving the lock directory exactly as staged.
#[track_caller]
fn assert_both_refused(env: &TestEnv, before: &BTreeMap<String, Node>, exit: i32, code: &str) {
    for managed in [false, true] {
        let r = acquire(env, managed);
        r.assert_error(exit, code);
        assert_eq!(&snapshot(&env.lock_dir()), before, "managed={managed}: the lock directory changed");
    }
}

/// Plain acquire reclaimed the staged record: exit 0, `reclaimed: true`, `L` is now
/// writerctl's own record for the token it printed, and no `.stale.`/`.reclaim.` residue.
#[track_caller]
fn assert_reclaimed(env: &TestEnv, r: &Run) {
    let a: AcquireJson = r.assert_ok().json();
    assert!(a.reclaimed, "expected a reclaim: {}", r.stdout);
    assert_eq!(a.session_id, S);
    let token = a.owner_token.expect("owner token printed without --token-file");
    let bytes = std::fs::read(env.lock(S)).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["state"], "active");
    assert_eq!(v["session_id"], S);
    assert_eq!(v["owner_id"], token.as_str());
    assert_eq!(v["pid"], a.pid);
    assert_eq!(a.pid, std::process::id(), "the default holder is writerctl's parent (this test)");
    assert!(v["writer"].as_str().unwrap().starts_with("writerctl "), "not writerctl's record: {v}");
    assert_eq!(env.lock_dir_names(), vec![lock_name(S)], "reclaim left residue");
}

/// A schema-1 record from a schema-2 one: same fields, no `state`.
fn to_v1(rec: &str) -> String {
    let out = rec.replacen(r#""schema_version":2,"state":"active","#, r#""schema_version":1,"#, 1);
    assert_ne!(out, rec);
    out
}

/// A schema-3 active record (format_version 1) from a schema-2 active one.
fn to_v3(rec: &str) -> String {
    let out = rec.replacen(
        r#""schema_version":2,"state":"active","#,
        r#""schema_version":3,"format_version":1,"state":"active","#,
        1,
    );
    assert_ne!(out, rec);
    out
}

/// A valid schema-3 sealed record (with the managed commit proof).
fn qwen_sealed_v3(session: &str, owner: &str) -> String {
    let out = qwen_sealed(session, owner)
        .replacen(r#""schema_version":2,"#, r#""schema_version":3,"format_version":1,"#, 1)
        .replacen(
            r#","transcript":"#,
            &format!(r#","last_commit_sequence":7,"committed_prefix_hash":"{}","transcript":"#, "b".repeat(64)),
            1,
        );
    assert!(out.contains("committed_prefix_hash") && out.contains(r#""format_version":1"#));
    out
}

/// A local record for a dead pid whose identity/namespace/host is given.
fn dead_with(identity: Option<&str>, ns: Option<u64>, host: &str) -> String {
    qwen_active(S, OWNER, i32::MAX as u64, identity, ns, host)
}

fn local_identity_dead() -> String {
    format!("linux:{}:12345", local().boot_id)
}

/// Stages an active record that is fenced (live) for `code`: both acquires conflict, status
/// says active + live with that liveness code, and nothing changes.
#[track_caller]
fn assert_fenced(rec: &str, code: &str) {
    let env = TestEnv::new();
    let before = stage_lock(&env, rec.as_bytes());
    assert_both_refused(&env, &before, 3, "session_writer_conflict");
    let st = status(&env);
    assert_eq!(st.state, "active");
    assert_eq!(st.live, Some(true));
    assert_eq!(st.liveness.as_ref().map(|l| l.code.as_str()), Some(code), "record: {rec}");
    assert_eq!(snapshot(&env.lock_dir()), before);
}

// ---------------------------------------------------------------------------------------
// 1. hand-written qwen records
// ---------------------------------------------------------------------------------------

#[test]
fn v1_live_record_is_a_conflict_and_status_shows_schema_1_running() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let rec = to_v1(&qwen_active_local(S, OWNER, holder.pid()));
    let before = stage_lock(&env, rec.as_bytes());
    assert_both_refused(&env, &before, 3, "session_writer_conflict");
    let st = status(&env);
    assert_eq!(st.state, "active");
    assert_eq!(st.live, Some(true));
    assert_eq!(st.liveness.unwrap().code, "running");
    let owner = st.owner.unwrap();
    assert_eq!(owner.schema_version, 1);
    assert_eq!(owner.pid, holder.pid() as u64);
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn v1_dead_record_is_reclaimed_by_plain_acquire_without_residue() {
    let env = TestEnv::new();
    stage_lock(&env, to_v1(&qwen_active_dead(S, OWNER)).as_bytes());
    let st = status(&env);
    assert_eq!((st.state.as_str(), st.live), ("active", Some(false)));
    assert_eq!(st.liveness.unwrap().code, "process_gone");
    assert_eq!(st.owner.unwrap().schema_version, 1);
    assert_reclaimed(&env, &acquire(&env, false));
}

#[test]
fn v1_dead_record_is_a_conflict_for_managed_acquire() {
    let env = TestEnv::new();
    let before = stage_lock(&env, to_v1(&qwen_active_dead(S, OWNER)).as_bytes());
    acquire(&env, true).assert_error(3, "session_writer_conflict");
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn v2_live_record_is_a_conflict_for_plain_and_managed() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let before = stage_lock(&env, qwen_active_local(S, OWNER, holder.pid()).as_bytes());
    assert_both_refused(&env, &before, 3, "session_writer_conflict");
    let st = status(&env);
    assert_eq!((st.state.as_str(), st.live), ("active", Some(true)));
    assert_eq!(st.liveness.unwrap().code, "running");
    assert_eq!(st.owner.unwrap().schema_version, 2);
    assert!(!st.managed_schema);
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn v2_dead_record_is_reclaimed_by_plain_acquire() {
    let env = TestEnv::new();
    stage_lock(&env, qwen_active_dead(S, OWNER).as_bytes());
    assert_reclaimed(&env, &acquire(&env, false));
}

#[test]
fn v2_dead_record_is_a_conflict_for_managed_acquire() {
    let env = TestEnv::new();
    let before = stage_lock(&env, qwen_active_dead(S, OWNER).as_bytes());
    acquire(&env, true).assert_error(3, "session_writer_conflict");
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn reused_pid_with_other_start_ticks_is_stale_and_reclaimed() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let l = local();
    let id = format!("linux:{}:1", l.boot_id);
    let rec = qwen_active(S, OWNER, holder.pid() as u64, Some(&id), Some(l.pid_ns), &l.hostname);
    stage_lock(&env, rec.as_bytes());
    let st = status(&env);
    assert_eq!((st.state.as_str(), st.live), ("active", Some(false)));
    assert_eq!(st.liveness.unwrap().code, "pid_reused");
    assert_reclaimed(&env, &acquire(&env, false));
}

#[test]
fn v2_sealed_record_is_a_conflict_and_status_shows_its_proof() {
    let env = TestEnv::new();
    let before = stage_lock(&env, qwen_sealed(S, OWNER).as_bytes());
    assert_both_refused(&env, &before, 3, "session_writer_conflict");
    let st = status(&env);
    assert_eq!(st.state, "sealed");
    assert!(!st.managed_schema);
    assert_eq!(st.live, None);
    let p = st.proof.expect("sealed status carries the proof");
    assert_eq!(p.sealed_at, "2026-07-28T00:00:01.000Z");
    assert_eq!(p.relative_path, format!("chats/{S}.jsonl"));
    assert!(p.exists);
    assert_eq!(p.byte_length, 6);
    assert_eq!(p.sha256, "a".repeat(64));
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn v3_dead_active_record_is_unavailable_never_reclaimed() {
    let env = TestEnv::new();
    let before = stage_lock(&env, to_v3(&qwen_active_dead(S, OWNER)).as_bytes());
    assert_both_refused(&env, &before, 75, "session_writer_unavailable");
    let st = status(&env);
    assert_eq!(st.state, "active");
    assert!(st.managed_schema);
    let owner = st.owner.unwrap();
    assert_eq!((owner.schema_version, owner.format_version), (3, Some(1)));
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn v3_live_active_record_is_a_conflict() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let before = stage_lock(&env, to_v3(&qwen_active_local(S, OWNER, holder.pid())).as_bytes());
    assert_both_refused(&env, &before, 3, "session_writer_conflict");
    let st = status(&env);
    assert_eq!((st.state.as_str(), st.live, st.managed_schema), ("active", Some(true), true));
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn v3_sealed_record_is_a_conflict_without_certified_takeover() {
    // QWEN_FORMAT §5.2 step 2.3 and §7 test 78: plain acquisition of any sealed record is a
    // conflict; the schema-3 "unavailable" answer belongs to the certified-takeover path.
    let env = TestEnv::new();
    let before = stage_lock(&env, qwen_sealed_v3(S, OWNER).as_bytes());
    assert_both_refused(&env, &before, 3, "session_writer_conflict");
    let st = status(&env);
    assert_eq!(st.state, "sealed");
    assert!(st.managed_schema);
    assert_eq!(st.proof.unwrap().sha256, "a".repeat(64));
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn foreign_host_record_is_a_conflict_for_plain_and_managed() {
    let l = local();
    assert_fenced(&dead_with(Some(&local_identity_dead()), Some(l.pid_ns), "some-other-host"), "foreign_host");
}

#[test]
fn other_boot_record_is_fenced() {
    let l = local();
    let id = "linux:00000000-0000-0000-0000-000000000000:12345";
    assert_fenced(&dead_with(Some(id), Some(l.pid_ns), &l.hostname), "other_boot");
}

#[test]
fn other_pid_namespace_record_is_fenced() {
    let l = local();
    assert_fenced(&dead_with(Some(&local_identity_dead()), Some(l.pid_ns + 1), &l.hostname), "other_pid_namespace");
}

#[test]
fn record_without_pid_namespace_is_fenced() {
    let l = local();
    assert_fenced(&dead_with(Some(&local_identity_dead()), None, &l.hostname), "pid_namespace_missing");
}

#[test]
fn records_without_a_linux_start_identity_are_fenced() {
    let l = local();
    for id in [Some("linux:zz"), Some("darwin:Tue Sep  1 00:00:00 2026"), None] {
        assert_fenced(&dead_with(id, Some(l.pid_ns), &l.hostname), "start_identity_not_linux");
    }
}

// ---------------------------------------------------------------------------------------
// 2. bad input
// ---------------------------------------------------------------------------------------

#[test]
fn malformed_records_are_session_lock_malformed_and_untouched() {
    let valid = qwen_active_dead(S, OWNER);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("not json", b"not-json".to_vec()),
        ("pid as string", valid.replace(r#""pid":2147483647"#, r#""pid":"2147483647""#).into_bytes()),
        ("schema 4", valid.replace(r#""schema_version":2"#, r#""schema_version":4"#).into_bytes()),
        ("schema \"2\"", valid.replace(r#""schema_version":2"#, r#""schema_version":"2""#).into_bytes()),
        ("utf-8 bom", [&[0xEF, 0xBB, 0xBF][..], valid.as_bytes()].concat()),
        ("empty", Vec::new()),
    ];
    for (name, bytes) in cases {
        assert_ne!(bytes, valid.as_bytes(), "{name}: the case did not alter the record");
        let env = TestEnv::new();
        let before = stage_lock(&env, &bytes);
        let r = acquire(&env, false);
        assert_eq!((r.code, r.error_code()), (4, "session_lock_malformed".to_string()), "{name}: {}", r.stdout);
        let st = status(&env);
        assert_eq!(st.state, "malformed", "{name}");
        assert!(st.problem.as_deref().is_some_and(|p| !p.is_empty()), "{name}: no problem given");
        assert_eq!(snapshot(&env.lock_dir()), before, "{name}: the lock directory changed");
    }
}

#[test]
fn directory_or_fifo_at_lock_path_is_malformed() {
    let kinds: [(&str, MakeFile); 2] = [("directory", |p| std::fs::create_dir(p).unwrap()), ("fifo", mkfifo)];
    for (name, make) in kinds {
        let env = TestEnv::new();
        make(&env.lock(S));
        let before = snapshot(&env.lock_dir());
        assert_both_refused(&env, &before, 4, "session_lock_malformed");
        let st = status(&env);
        assert_eq!(st.state, "malformed", "{name}");
        assert!(st.problem.is_some(), "{name}");
        assert!(st.owner.is_none(), "{name}");
        assert_eq!(snapshot(&env.lock_dir()), before, "{name}");
    }
}

#[test]
fn symlink_at_lock_path_is_malformed_and_its_target_untouched() {
    let env = TestEnv::new();
    let target = env.tmp.path().join("elsewhere.lock");
    let rec = qwen_active_dead(S, OWNER);
    stage(&target, rec.as_bytes());
    std::os::unix::fs::symlink(&target, env.lock(S)).unwrap();
    let before = snapshot(&env.lock_dir());
    acquire(&env, false).assert_error(4, "session_lock_malformed");
    let st = status(&env);
    assert_eq!(st.state, "malformed");
    assert!(st.problem.is_some());
    assert_eq!(snapshot(&env.lock_dir()), before);
    assert_eq!(std::fs::read(&target).unwrap(), rec.as_bytes(), "the symlink target was changed");
}

#[test]
fn record_for_another_session_is_malformed() {
    let env = TestEnv::new();
    let before = stage_lock(&env, qwen_active_dead("another-session", OWNER).as_bytes());
    assert_both_refused(&env, &before, 4, "session_lock_malformed");
    let st = status(&env);
    assert_eq!(st.state, "malformed");
    assert!(st.problem.is_some());
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn claim_of_any_file_type_makes_acquire_unavailable() {
    let kinds: [(&str, MakeFile); 4] = [
        ("regular file", |p| stage(p, qwen_active_dead(S, OWNER).as_bytes())),
        ("directory", |p| std::fs::create_dir(p).unwrap()),
        ("symlink", |p| std::os::unix::fs::symlink("/nonexistent/claim-target", p).unwrap()),
        ("fifo", mkfifo),
    ];
    for (name, make) in kinds {
        let env = TestEnv::new();
        make(&env.lock_dir().join(format!("{}.claim", lock_name(S))));
        let before = snapshot(&env.lock_dir());
        for managed in [false, true] {
            let r = acquire(&env, managed);
            assert_eq!(
                (r.code, r.error_code()),
                (75, "session_writer_unavailable".to_string()),
                "{name}, managed={managed}: {}",
                r.stdout
            );
            assert_eq!(snapshot(&env.lock_dir()), before, "{name}: something was installed");
        }
        let st = status(&env);
        assert_eq!(st.state, "in_transition", "{name}");
        let claim = st.claim.expect("status describes the claim");
        assert_eq!(claim.file_type, name);
        assert_eq!(claim.valid_record, name == "regular file", "{name}");
        assert!(st.problem.is_some(), "{name}");
        assert_eq!(snapshot(&env.lock_dir()), before, "{name}");
    }
}

#[test]
fn missing_runtime_dir_is_runtime_dir_missing_and_nothing_is_created() {
    let env = TestEnv::new();
    let missing = env.tmp.path().join("no-such-runtime");
    let m = missing.to_str().unwrap();
    env.run_raw(&["acquire", "--json", "--session", S, "--runtime-dir", m]).assert_error(2, "runtime_dir_missing");
    env.run_raw(&["status", "--json", "--session", S, "--runtime-dir", m]).assert_error(2, "runtime_dir_missing");
    env.run_raw(&["status", "--json", "--runtime-dir", m]).assert_error(2, "runtime_dir_missing");
    assert!(missing.symlink_metadata().is_err(), "the runtime directory was created");
}

#[test]
fn symlinked_lock_dir_is_unavailable_and_its_target_untouched() {
    let env = TestEnv::new();
    let real = env.tmp.path().join("real-locks");
    std::fs::create_dir(&real).unwrap();
    let tmp = env.runtime().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::os::unix::fs::symlink(&real, tmp.join("session-writer-locks")).unwrap();
    let before_tmp = snapshot(&tmp);
    for managed in [false, true] {
        acquire(&env, managed).assert_error(75, "session_writer_unavailable");
    }
    env.run(&["status", "--json", "--session", S]).assert_error(75, "session_writer_unavailable");
    assert_eq!(snapshot(&real), BTreeMap::new(), "something was created through the symlink");
    assert_eq!(snapshot(&tmp), before_tmp);
}

#[test]
fn unreadable_lock_dir_is_an_environment_error_for_another_user() {
    let uid = std::fs::metadata("/proc/self").unwrap().uid();
    let setpriv = Path::new("/usr/bin/setpriv");
    if uid != 0 || !setpriv.exists() {
        eprintln!(
            "SKIPPED unreadable_lock_dir_is_an_environment_error_for_another_user: needs root and /usr/bin/setpriv (uid {uid}, setpriv {})",
            setpriv.exists()
        );
        return;
    }
    let env = TestEnv::new();
    let dir = env.lock_dir();
    // Let nobody traverse to the lock directory itself, which stays 0700 root.
    for p in [env.tmp.path().to_path_buf(), env.runtime(), env.runtime().join("tmp")] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let before = stage_lock(&env, qwen_active_dead(S, OWNER).as_bytes());
    let runtime = env.runtime();
    let as_nobody = |args: &[&str]| {
        let mut cmd = std::process::Command::new(setpriv);
        cmd.env_clear()
            .env("HOME", env.tmp.path())
            .env("TMPDIR", "/tmp")
            .env("PATH", "/usr/bin:/bin")
            .stdin(std::process::Stdio::null())
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args(args)
            .arg("--runtime-dir")
            .arg(&runtime);
        let o = cmd.output().unwrap();
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    };
    // Sanity: the binary runs as nobody at all.
    assert_eq!(as_nobody(&["--version"]).code, 0, "the test binary is not executable by nobody");
    for managed in [false, true] {
        let mut args = vec!["acquire", "--json", "--session", S];
        if managed {
            args.push("--managed");
        }
        // Permission denied: exit 2, not "retry later" (issue 22); retrying cannot help.
        as_nobody(&args).assert_error(2, "invalid_argument");
        assert_eq!(snapshot(&dir), before);
    }
    as_nobody(&["status", "--json", "--session", S]).assert_error(2, "invalid_argument");
    assert_eq!(snapshot(&dir), before);
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
}

#[test]
fn session_ids_are_encoded_inside_the_lock_dir() {
    let env = TestEnv::new();
    let cases = [("a/b", "a%2Fb.lock"), ("100%", "100%25.lock"), ("../x", "..%2Fx.lock"), ("a b", "a%20b.lock")];
    for (id, file) in cases {
        let a: AcquireJson = env.run(&["acquire", "--json", "--session", id]).assert_ok().json();
        assert_eq!(a.session_id, id);
        assert_eq!(Path::new(&a.lock_path), env.lock_dir().join(file), "{id}");
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(env.lock_dir().join(file)).unwrap()).unwrap();
        assert_eq!(v["session_id"], id);
        let st: StatusJson = env.run(&["status", "--json", "--session", id]).assert_ok().json();
        assert_eq!((st.session_id.as_str(), st.state.as_str()), (id, "active"), "{id}");
        assert_eq!(Path::new(&st.lock_path), env.lock_dir().join(file));
    }
    let mut expected: Vec<String> = cases.iter().map(|(_, f)| f.to_string()).collect();
    expected.sort();
    assert_eq!(env.lock_dir_names(), expected, "only the encoded lock files, nothing else");
    // Nothing escaped the lock directory.
    assert_eq!(snapshot(&env.runtime()).keys().collect::<Vec<_>>(), vec!["tmp"]);
    // Beside the lock directory: the advisory history (issue 30), never an entry in it.
    assert_eq!(
        snapshot(&env.runtime().join("tmp")).keys().collect::<Vec<_>>(),
        vec!["session-writer-locks", "writerctl-history"]
    );
    let all = status_all(&env);
    let mut ids: Vec<&str> = all.sessions.iter().map(|s| s.session_id.as_str()).collect();
    ids.sort();
    let mut want: Vec<&str> = cases.iter().map(|(id, _)| *id).collect();
    want.sort();
    assert_eq!(ids, want, "status (all) decodes the session ids back");
    assert!(all.sessions.iter().all(|s| s.state == "active"));
}

#[test]
fn empty_session_is_invalid_argument() {
    let env = TestEnv::new();
    env.run(&["acquire", "--json", "--session", ""]).assert_error(2, "invalid_argument");
    env.run(&["status", "--json", "--session", ""]).assert_error(2, "invalid_argument");
    assert!(!env.runtime().join("tmp").exists(), "an empty session id created the lock directory");
}

#[test]
fn release_without_a_token_is_invalid_argument() {
    let env = TestEnv::new();
    let tok = env.acquire_for(S, std::process::id());
    let before = snapshot(&env.lock_dir());
    env.run(&["release", "--json", "--session", S]).assert_error(2, "invalid_argument");
    assert_eq!(snapshot(&env.lock_dir()), before);
    assert!(tok.exists());
}

#[test]
fn release_with_a_wrong_token_is_not_owner_and_keeps_the_lock() {
    let env = TestEnv::new();
    let _tok = env.acquire_for(S, std::process::id());
    let wrong = env.tmp.path().join("wrong.token");
    stage(&wrong, format!("{FOREIGN_TOKEN}\n").as_bytes());
    let before = snapshot(&env.lock_dir());
    env.run(&["release", "--json", "--session", S, "--token-file", wrong.to_str().unwrap()])
        .assert_error(3, "session_not_owner");
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn release_of_a_qwen_record_with_a_wrong_token_is_not_owner() {
    let env = TestEnv::new();
    let before = stage_lock(&env, qwen_active_dead(S, OWNER).as_bytes());
    let r = env.run_env(&["release", "--json", "--session", S], "WRITERCTL_OWNER_TOKEN", FOREIGN_TOKEN);
    r.assert_error(3, "session_not_owner");
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn release_when_no_lock_exists_is_not_owner() {
    let env = TestEnv::new();
    let before = snapshot(&env.lock_dir());
    let r = env.run_env(&["release", "--json", "--session", S], "WRITERCTL_OWNER_TOKEN", FOREIGN_TOKEN);
    r.assert_error(3, "session_not_owner");
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn release_before_any_lock_dir_exists_is_not_owner() {
    let env = TestEnv::new();
    let r = env.run_env(&["release", "--json", "--session", S], "WRITERCTL_OWNER_TOKEN", FOREIGN_TOKEN);
    r.assert_error(3, "session_not_owner");
    assert!(!env.runtime().join("tmp").exists(), "release created directories");
}

#[test]
fn existing_token_file_is_refused_and_no_lock_is_taken() {
    let env = TestEnv::new();
    let f = env.tmp.path().join("existing.token");
    stage(&f, b"precious\n");
    let r = env.run(&["acquire", "--json", "--session", S, "--token-file", f.to_str().unwrap()]);
    r.assert_error(2, "invalid_argument");
    assert_eq!(std::fs::read(&f).unwrap(), b"precious\n");
    let lock = env.runtime().join("tmp/session-writer-locks").join(lock_name(S));
    assert!(lock.symlink_metadata().is_err(), "a lock was taken although the token file was refused");
    let st = status(&env);
    assert_eq!(st.state, "missing");
}

// ---------------------------------------------------------------------------------------
// 3. the owner token stays secret
// ---------------------------------------------------------------------------------------

#[test]
fn token_file_is_0600_and_the_token_never_appears_in_status_or_errors() {
    let env = TestEnv::new();
    let tok = env.acquire_for(S, std::process::id());
    let meta = std::fs::metadata(&tok).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "token file mode");
    let token = std::fs::read_to_string(&tok).unwrap().trim().to_owned();
    assert_eq!(token.len(), 36, "token: {token:?}");
    let lock_bytes = std::fs::read(env.lock(S)).unwrap();
    // The same record copied under another session's name (a case-insensitive filesystem
    // collision): its errors and status must not leak the owner id either.
    stage(&env.lock("other"), &lock_bytes);
    let wrong = env.tmp.path().join("wrong.token");
    stage(&wrong, FOREIGN_TOKEN.as_bytes());
    let t = tok.to_str().unwrap();
    let runs: Vec<(&str, Run)> = vec![
        ("status one human", env.run(&["status", "--session", S])),
        ("status one json", env.run(&["status", "--json", "--session", S])),
        ("status one verbose", env.run(&["status", "-v", "--session", S])),
        ("status all human", env.run(&["status"])),
        ("status all json", env.run(&["status", "--json"])),
        ("status other json", env.run(&["status", "--json", "--session", "other"])),
        ("acquire conflict human", env.run(&["acquire", "-v", "--session", S])),
        ("acquire conflict json", env.run(&["acquire", "--json", "-v", "--session", S])),
        ("acquire managed conflict", env.run(&["acquire", "--json", "--managed", "--session", S])),
        ("acquire existing token file", env.run(&["acquire", "-v", "--session", "third", "--token-file", t])),
        ("acquire other-session record", env.run(&["acquire", "-v", "--session", "other"])),
        ("acquire other-session json", env.run(&["acquire", "--json", "-v", "--session", "other"])),
        ("release wrong token", env.run(&["release", "-v", "--session", S, "--token-file", wrong.to_str().unwrap()])),
        ("release right token, other session", env.run(&["release", "-v", "--session", "other", "--token-file", t])),
        (
            "release right token, missing lock",
            env.run(&["release", "--json", "-v", "--session", "nope", "--token-file", t]),
        ),
    ];
    for (name, r) in &runs {
        assert!(
            !r.stdout.contains(&token) && !r.stderr.contains(&token),
            "{name} leaked the owner token:\nstdout:\n{}\nstderr:\n{}",
            r.stdout,
            r.stderr
        );
    }
    // The refusals really were refusals (not vacuous passes).
    let codes: Vec<i32> = runs.iter().map(|(_, r)| r.code).collect();
    assert_eq!(codes, vec![0, 0, 0, 0, 0, 0, 3, 3, 3, 2, 4, 4, 3, 3, 3], "{runs:#?}");
    assert_eq!(std::fs::read(env.lock(S)).unwrap(), lock_bytes);
    assert_eq!(std::fs::read(env.lock("other")).unwrap(), lock_bytes);
}

// ---------------------------------------------------------------------------------------
// 4. side files
// ---------------------------------------------------------------------------------------

#[test]
fn side_files_beside_a_missing_primary_are_listed_with_their_kinds() {
    let env = TestEnv::new();
    let l = lock_name(S);
    let expected = [
        (format!("{l}.released.x"), "released"),
        (format!("{l}.stale.1.u"), "stale"),
        (format!("{l}.reclaim.o"), "reclaim_guard"),
        (format!("{l}.handoff.o"), "handoff"),
        (format!("{l}.sealed.o.n"), "sealed_retired"),
        (format!("{l}.sealed-candidate.o"), "sealed_candidate"),
        (format!("{l}.o.tmp"), "install_temp"),
    ];
    for (i, (name, _)) in expected.iter().enumerate() {
        stage(&env.lock_dir().join(name), format!("side file {i}").as_bytes());
    }
    let before = snapshot(&env.lock_dir());
    let st = status(&env);
    assert_eq!(st.state, "missing");
    // Names are shown with owner-id components replaced by `<owner:…>` fingerprints.
    let mut got: Vec<String> = st.side_files.iter().map(|f| f.kind.clone()).collect();
    got.sort();
    let mut want: Vec<String> = expected.iter().map(|(_, k)| k.to_string()).collect();
    want.sort();
    assert_eq!(got, want);
    for f in &st.side_files {
        assert!(f.name.starts_with(&format!("{l}.")), "{}", f.name);
        if f.kind == "stale" {
            assert_eq!(f.name, format!("{l}.stale.1.u"));
        } else {
            assert!(f.name.contains("<owner:"), "{}", f.name);
        }
    }
    assert!(st.side_files.iter().all(|f| !f.meaning.trim().is_empty()), "{:?}", st.side_files);
    let all = status_all(&env);
    assert_eq!(all.sessions.len(), 1, "{:?}", all.sessions);
    let one = &all.sessions[0];
    assert_eq!((one.session_id.as_str(), one.state.as_str()), (S, "missing"));
    assert_eq!(one.side_files.len(), expected.len());
    // Human output of both forms works too.
    env.run(&["status", "--session", S]).assert_ok();
    env.run(&["status"]).assert_ok();
    assert_eq!(snapshot(&env.lock_dir()), before, "status changed the lock directory");
}

#[test]
fn side_files_of_a_session_id_containing_dot_lock_belong_to_that_session() {
    // encodeURIComponent keeps `.`, so `a.lock.b` is a legal id whose files all start with
    // `a.lock.` — the same prefix as session `a`'s side files.
    let env = TestEnv::new();
    env.acquire_for("a", std::process::id());
    let stale = "a.lock.b.lock.stale.1.u";
    stage(&env.lock_dir().join(stale), b"moved aside");
    let before = snapshot(&env.lock_dir());
    let all = status_all(&env);
    let mut listed: Vec<(String, Vec<String>)> = all
        .sessions
        .iter()
        .map(|s| (s.session_id.clone(), s.side_files.iter().map(|f| format!("{}:{}", f.name, f.kind)).collect()))
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        vec![("a".to_string(), vec![]), ("a.lock.b".to_string(), vec![format!("{stale}:stale")])],
        "status (all) must attribute {stale} to session a.lock.b, and only to it"
    );
    let a: StatusJson = env.run(&["status", "--json", "--session", "a"]).assert_ok().json();
    assert!(a.side_files.is_empty(), "session a claims another session's file: {:?}", a.side_files);
    let b: StatusJson = env.run(&["status", "--json", "--session", "a.lock.b"]).assert_ok().json();
    assert_eq!(b.side_files.len(), 1);
    assert_eq!(b.side_files[0].kind, "stale");
    assert_eq!(snapshot(&env.lock_dir()), before);
}

#[test]
fn a_guard_whose_owner_id_ends_in_dot_lock_is_reported_as_the_sessions_guard() {
    // By name, `S.lock.reclaim.x.lock` is the primary of session `S.lock.reclaim.x`; the record
    // inside is S's, so status lists it as S's reclaim guard and invents no session.
    let env = TestEnv::new();
    let guard = env.lock_dir().join(format!("{S}.lock.reclaim.x.lock"));
    stage(&guard, qwen_active_dead(S, "guard-owner").as_bytes());
    let all: StatusAllJson = env.run(&["status", "--json"]).assert_ok().json();
    assert_eq!(all.sessions.len(), 1, "{:?}", all.sessions.iter().map(|s| &s.session_id).collect::<Vec<_>>());
    assert_eq!(all.sessions[0].session_id, S);
    let kinds: Vec<&str> = all.sessions[0].side_files.iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds, vec!["reclaim_guard"]);
}

#[test]
fn a_stray_dot_lock_file_names_no_session_and_blocks_nothing() {
    let env = TestEnv::new();
    stage(&env.lock_dir().join(".lock"), b"{}");
    let all: StatusAllJson = env.run(&["status", "--json"]).assert_ok().json();
    assert!(all.sessions.is_empty(), "{:?}", all.sessions.iter().map(|s| &s.session_id).collect::<Vec<_>>());
    env.run(&["recover", "--json"]).assert_ok();
    assert_eq!(std::fs::read(env.lock_dir().join(".lock")).unwrap(), b"{}");
}
