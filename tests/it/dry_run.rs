//! `--dry-run` on `takeover` and `release` (issue 30 point 5, lock-file half): the real
//! command's checks, nothing changed on disk (a metadata snapshot of the whole runtime
//! directory: names, bytes, inodes, modes, mtimes), the plan printed, and the exit code the
//! real command gives.

use serde_json::Value;

use crate::support::*;

const GATE: (&str, &str) = ("WRITERCTL_SESSION_WRITER_LEASE", "1");
const S: &str = "dry-session";
const OWNER: &str = "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f";
const BODY: &[u8] = b"{\"turn\":1}\n{\"turn\":2}\n";

fn run(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut c = env.cmd();
    c.args(args).arg("--runtime-dir").arg(env.runtime()).envs(vars.iter().copied());
    run_bounded(c, std::time::Duration::from_secs(60)).expect("hangs")
}

/// A session sealed by a writer that is gone, its transcript matching the proof.
fn sealed(env: &TestEnv) {
    let t = env.runtime().join(format!("chats/{S}.jsonl"));
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    std::fs::write(&t, BODY).unwrap();
    stage(&env.lock(S), qwen_sealed_for(S, OWNER, &format!("chats/{S}.jsonl"), Some(BODY)).as_bytes());
}

/// `takeover --dry-run --json` (gate on); asserts nothing under R changed.
fn dry_takeover(env: &TestEnv, extra: &[&str], vars: &[(&str, &str)]) -> Run {
    let before = meta_tree(&env.runtime());
    let pid = std::process::id().to_string();
    let mut args = vec!["takeover", "--dry-run", "--json", "--session", S, "--pid", &pid];
    args.extend(extra);
    let r = run(env, &args, vars);
    assert_eq!(meta_tree(&env.runtime()), before, "the dry run changed the runtime directory");
    r
}

#[test]
fn a_dry_run_takeover_of_a_seal_changes_nothing_and_the_real_one_then_succeeds() {
    let env = TestEnv::new();
    sealed(&env);
    let tf = env.tmp.path().join("new.token");
    let r = dry_takeover(&env, &["--token-file", tf.to_str().unwrap()], &[GATE]);
    let v: Value = r.assert_ok().json();
    assert_eq!(v["dry_run"], true, "{v:#}");
    assert_eq!(v["action"], "takeover");
    assert_eq!(v["session_id"], S);
    assert_eq!(v["new_epoch"], 1, "a record without writerctl_epoch counts as 0");
    let l = local();
    assert_eq!(v["previous"]["hostname"], l.hostname.as_str());
    assert_eq!(v["previous"]["pid"], i32::MAX as u64);
    assert_eq!(v["previous"]["sealed_at"], "2026-07-28T00:00:01.000Z");
    assert_eq!(v["would_remove"]["state"], "sealed");
    assert_eq!(v["would_write"]["state"], "active");
    assert_eq!(v["would_write"]["pid"], std::process::id());
    assert!(!r.stdout.contains(OWNER), "a dry run never shows an owner id");
    assert!(!tf.exists(), "the dry run created the token file");

    // The real takeover afterwards succeeds, with the epoch the plan named.
    let pid = std::process::id().to_string();
    let real = run(
        &env,
        &["takeover", "--json", "--session", S, "--pid", &pid, "--token-file", tf.to_str().unwrap()],
        &[GATE],
    );
    let j: Value = real.assert_ok().json();
    assert_eq!((j["state"].as_str(), j["epoch"].as_u64()), (Some("active"), Some(1)), "{j:#}");
    assert_eq!(j["previous"], v["previous"]);
}

#[test]
fn a_dry_run_takeover_gives_the_real_commands_refusals() {
    let env = TestEnv::new();
    sealed(&env);
    // Gate off: 7, as the real takeover.
    dry_takeover(&env, &[], &[]).assert_error(7, "feature_disabled");
    // A transcript changed after the seal: 4, and still nothing changed.
    std::fs::write(env.runtime().join(format!("chats/{S}.jsonl")), b"{\"turn\":1}\n{\"turn\":9}\n").unwrap();
    dry_takeover(&env, &[], &[GATE]).assert_error(4, "session_transcript_changed");
    let pid = std::process::id().to_string();
    run(&env, &["takeover", "--json", "--session", S, "--pid", &pid], &[GATE])
        .assert_error(4, "session_transcript_changed");
    // A live holder: 3.
    let holder = LiveHolder::start();
    std::fs::remove_file(env.lock(S)).unwrap();
    stage(&env.lock(S), qwen_active_local(S, OWNER, holder.pid()).as_bytes());
    dry_takeover(&env, &[], &[GATE]).assert_error(3, "session_writer_conflict");
    holder.stop();
    // An existing token file: 2, as the real command's reservation.
    let tf = env.tmp.path().join("taken.token");
    std::fs::write(&tf, b"x").unwrap();
    dry_takeover(&env, &["--token-file", tf.to_str().unwrap()], &[GATE]).assert_error(2, "invalid_argument");
    // No lock directory at all: not sealed (3), and no directory is created.
    let bare = TestEnv::new();
    let r = bare.runtime();
    dry_takeover(&bare, &[], &[GATE]).assert_error(3, "session_not_sealed");
    assert!(!r.join("tmp").exists());
    // --wait cannot be honoured by a plan.
    dry_takeover(&env, &["--wait", "5"], &[GATE]).assert_error(2, "usage");
}

#[test]
fn a_dry_run_release_names_the_record_and_refuses_a_wrong_token_with_3() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let tf = env.acquire_for(S, holder.pid());
    let before = meta_tree(&env.runtime());
    let tfs = tf.to_str().unwrap();
    let r = run(&env, &["release", "--dry-run", "--json", "--session", S, "--token-file", tfs], &[]);
    let v: Value = r.assert_ok().json();
    assert_eq!((v["dry_run"].as_bool(), v["action"].as_str()), (Some(true), Some("release")), "{v:#}");
    assert_eq!(v["would_remove"]["pid"], holder.pid());
    assert_eq!(v["would_remove"]["epoch"], 1);
    let token = std::fs::read_to_string(&tf).unwrap();
    assert!(!r.stdout.contains(token.trim()), "a dry run never shows the owner token");
    let wrong = [("WRITERCTL_OWNER_TOKEN", "11111111-2222-4333-8444-555555555555")];
    run(&env, &["release", "--dry-run", "--json", "--session", S], &wrong).assert_error(3, "session_not_owner");
    run(&env, &["release", "--json", "--session", S], &wrong).assert_error(3, "session_not_owner");
    assert_eq!(meta_tree(&env.runtime()), before, "the dry runs changed the runtime directory");
    // The real release with the right token still works.
    run(&env, &["release", "--json", "--session", S, "--token-file", tfs], &[]).assert_ok();
    assert!(!env.lock(S).exists());
    holder.stop();
}
