//! `recover`: qwen's residual-lock runbook (QWEN_FORMAT §8.1) as a command. Residue of crashed
//! seals, takeovers, releases, reclaims and installs (QWEN_FORMAT §1.2) is written by hand,
//! then the real binary runs against it. Every test checks the exit code, the `--json`
//! document, and the exact bytes of every file in the lock directory and in the recovery
//! folder afterwards (a recursive snapshot): nothing is ever deleted, only moved or linked.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use crate::support::*;

type Tree = BTreeMap<String, TreeNode>;
type Staged = Vec<(String, Vec<u8>)>;

const S: &str = "recover-session";
const S2: &str = "second-session";
const S3: &str = "third-session";
/// The sealing (or sealed) owner.
const O: &str = "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f";
/// The new owner of a takeover.
const N: &str = "11111111-2222-4333-8444-555555555555";
/// A releaser, reclaimer or installer.
const R3: &str = "3c3c3c3c-7d7d-4e4e-8f8f-a0a0a0a0a0a0";
/// The random nonce of a `.stale.` name: not an owner id, shown as is.
const NONCE: &str = "5a5a5a5a-6b6b-4c7c-8d8d-9e9e9e9e9e9e";
const LOG: &str = "writerctl-recovery.log";
const FOLDER_PREFIX: &str = "writerctl-recovered-";
const FENCED: &[&str] = &["--writers-fenced", "--yes"];

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

fn lock(session: &str) -> String {
    format!("{session}.lock")
}

/// `L.<suffix>` of `session`.
fn side(session: &str, suffix: &str) -> String {
    format!("{session}.lock.{suffix}")
}

/// `<owner:xxxxxxxx>`: how output shows an owner-id component of a file name (the first
/// four bytes of its SHA-256, computed here independently of writerctl).
fn fp(segment: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(segment.as_bytes());
    format!("<owner:{:02x}{:02x}{:02x}{:02x}>", d[0], d[1], d[2], d[3])
}

fn stage_all(env: &TestEnv, files: &Staged) {
    for (name, bytes) in files {
        stage(&env.lock_dir().join(name), bytes);
    }
}

/// The expected snapshot of `files` (paths relative to the lock directory; every parent
/// folder is added as a directory entry).
fn expect(files: impl IntoIterator<Item = (String, Vec<u8>)>) -> Tree {
    let mut t = Tree::new();
    for (path, bytes) in files {
        let mut parent = path.as_str();
        while let Some((p, _)) = parent.rsplit_once('/') {
            t.insert(p.to_owned(), TreeNode::Dir);
            parent = p;
        }
        t.insert(path, TreeNode::File(bytes));
    }
    t
}

/// `files` moved into `folder`, same names, same bytes.
fn moved(folder: &str, files: &Staged) -> Staged {
    files.iter().map(|(n, b)| (format!("{folder}/{n}"), b.clone())).collect()
}

fn recover(env: &TestEnv, args: &[&str]) -> Run {
    let mut a = vec!["recover"];
    a.extend_from_slice(args);
    env.run(&a)
}

/// `recover --json --session <session> <flags>`: exit 0 and the one-session document.
#[track_caller]
fn recover_one(env: &TestEnv, session: &str, flags: &[&str]) -> RecoverJson {
    let mut a = vec!["--json", "--session", session];
    a.extend_from_slice(flags);
    recover(env, &a).assert_ok().json()
}

/// `recover --json <flags>` (every session): exit 0 and the all-sessions document.
#[track_caller]
fn recover_all(env: &TestEnv, flags: &[&str]) -> RecoverAllJson {
    let mut a = vec!["--json"];
    a.extend_from_slice(flags);
    recover(env, &a).assert_ok().json()
}

/// Requires exactly these `(action, file, result)` steps, in order, each with a reason.
#[track_caller]
fn assert_actions(j: &RecoverJson, want: &[(&str, String, &str)]) {
    let got: Vec<(&str, &str, &str)> =
        j.actions.iter().map(|a| (a.action.as_str(), a.file.as_str(), a.result.as_str())).collect();
    let want: Vec<(&str, &str, &str)> = want.iter().map(|(a, f, r)| (*a, f.as_str(), *r)).collect();
    assert_eq!(got, want, "{j:#?}");
    assert!(j.actions.iter().all(|a| !a.reason.trim().is_empty()), "an action without a reason: {j:#?}");
}

/// A carried-out plan: not a dry run, not blocked, a well-named folder. Returns the folder.
#[track_caller]
fn acted(j: &RecoverJson) -> String {
    assert!(!j.dry_run, "{j:#?}");
    assert_eq!(j.blocked, None, "{j:#?}");
    let f = j.folder.clone().unwrap_or_else(|| panic!("no recovery folder reported: {j:#?}"));
    folder_pid(&f);
    f
}

/// `writerctl-recovered-<YYYYMMDDTHHMMSSZ>-<pid>`, the time within minutes of now (UTC).
/// Returns the pid.
#[track_caller]
fn folder_pid(folder: &str) -> u32 {
    let rest = folder.strip_prefix(FOLDER_PREFIX).unwrap_or_else(|| panic!("folder name {folder:?}"));
    let (ts, pid) = rest.split_once('-').unwrap_or_else(|| panic!("folder name {folder:?}"));
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let at = time::PrimitiveDateTime::parse(ts, fmt)
        .unwrap_or_else(|e| panic!("folder name {folder:?}: bad UTC time ({e})"))
        .assume_utc();
    let skew = (time::OffsetDateTime::now_utc() - at).whole_seconds().abs();
    assert!(skew < 600, "folder name {folder:?} is not the current UTC time (off by {skew} s)");
    pid.parse().unwrap_or_else(|_| panic!("folder name {folder:?}: bad pid"))
}

/// One audit line without its leading timestamp.
fn audit(pid: u32, session: &str, verb: &str, file: &str, folder: &str, result: &str) -> String {
    format!("pid={pid} session={session:?} action={verb} file={file:?} folder={folder:?} result={result:?}")
}

/// The audit lines a carried-out plan must have written: one per action, in order.
fn audit_of(j: &RecoverJson) -> Vec<String> {
    let folder = j.folder.as_deref().expect("acted");
    let pid = folder_pid(folder);
    j.actions.iter().map(|a| audit(pid, &j.session_id, &a.action, &a.file, folder, &a.result)).collect()
}

/// The audit log holds exactly `want`, each line prefixed by a UTC millisecond timestamp.
#[track_caller]
fn assert_log(bytes: &[u8], want: &[String]) {
    let text = String::from_utf8(bytes.to_vec()).expect("the audit log is UTF-8");
    assert!(text.ends_with('\n'), "unterminated audit log:\n{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), want.len(), "audit log:\n{text}\nwant:\n{want:#?}");
    let fmt = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    for (line, w) in lines.iter().zip(want) {
        let (ts, rest) = line.split_once(' ').unwrap_or_else(|| panic!("audit line {line:?}"));
        assert!(time::PrimitiveDateTime::parse(ts, fmt).is_ok(), "audit line {line:?}: bad timestamp");
        assert_eq!(rest, w, "audit log:\n{text}");
    }
}

/// The lock directory (recursively) is exactly `want` plus an audit log holding `log`.
#[track_caller]
fn assert_tree_and_log(env: &TestEnv, want: &Tree, log: &[String]) {
    let mut got = tree(&env.lock_dir());
    match got.remove(LOG) {
        Some(TreeNode::File(b)) => assert_log(&b, log),
        other => panic!("no audit log {LOG} (found {other:?}); lock dir: {:#?}", got.keys().collect::<Vec<_>>()),
    }
    assert_eq!(&got, want);
}

/// Regular files anywhere under the lock directory, the audit log aside.
fn record_files(t: &Tree) -> usize {
    t.iter().filter(|(k, v)| matches!(v, TreeNode::File(_)) && k.as_str() != LOG).count()
}

fn status(env: &TestEnv, session: &str) -> StatusJson {
    env.run(&["status", "--json", "--session", session]).assert_ok().json()
}

fn acquire(env: &TestEnv, session: &str) -> Run {
    env.run(&["acquire", "--json", "--session", session])
}

/// `L` of `session` is writerctl's own fresh active record for the token `a` printed.
#[track_caller]
fn assert_own_lock(env: &TestEnv, session: &str, a: &AcquireJson) {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(env.lock(session)).unwrap()).unwrap();
    assert_eq!(v["state"], "active");
    assert_eq!(v["session_id"], session);
    assert_eq!(v["owner_id"], a.owner_token.as_deref().expect("token printed"));
    assert!(v["writer"].as_str().unwrap().starts_with("writerctl "), "not writerctl's record: {v}");
}

/// The subtree of `t` under `folder` (the folder itself included).
fn subtree(t: &Tree, folder: &str) -> Tree {
    t.iter()
        .filter(|(k, _)| k.as_str() == folder || k.starts_with(&format!("{folder}/")))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A seal that crashed after moving the active `L` to its handoff name and before linking
/// the sealed candidate into `L` (QWEN_FORMAT §5.7, §5.10): `L` is missing, the claim and the
/// handoff hold the sealer's active record (its pid is dead), the candidate its sealed one.
fn crashed_seal(session: &str) -> Staged {
    let active = qwen_active_dead(session, O).into_bytes();
    vec![
        (side(session, "claim"), active.clone()),
        (side(session, &format!("handoff.{O}")), active),
        (side(session, &format!("sealed-candidate.{O}")), qwen_sealed(session, O).into_bytes()),
    ]
}

fn shown_handoff(session: &str) -> String {
    side(session, &format!("handoff.{}", fp(O)))
}

fn shown_candidate(session: &str) -> String {
    side(session, &format!("sealed-candidate.{}", fp(O)))
}

/// A takeover that crashed after moving the sealed `L` aside and before linking its claim:
/// `L` is missing, the claim holds the new owner's active record (dead pid), and
/// `L.sealed.<o>.<n>` the sealed record.
fn crashed_takeover(session: &str) -> Staged {
    vec![
        (side(session, "claim"), qwen_active_dead(session, N).into_bytes()),
        (side(session, &format!("sealed.{O}.{N}")), qwen_sealed(session, O).into_bytes()),
    ]
}

fn shown_sealed_retired(session: &str) -> String {
    side(session, &format!("sealed.{}.{}", fp(O), fp(N)))
}

fn foreign_host_record(session: &str) -> String {
    let l = local();
    let id = format!("linux:{}:12345", l.boot_id);
    qwen_active(session, O, i32::MAX as u64, Some(&id), Some(l.pid_ns), "some-other-host")
}

fn other_boot_record(session: &str) -> String {
    let l = local();
    let id = "linux:00000000-0000-0000-0000-000000000000:12345";
    qwen_active(session, O, i32::MAX as u64, Some(id), Some(l.pid_ns), &l.hostname)
}

// ---------------------------------------------------------------------------------------
// 1. the plan changes nothing
// ---------------------------------------------------------------------------------------

#[test]
fn dry_run_changes_nothing_without_both_flags_and_lists_the_plan() {
    let env = TestEnv::new();
    let mut files = crashed_seal(S);
    let tmp = side(S, &format!("{R3}.tmp"));
    files.push((tmp, qwen_active_dead(S, R3).into_bytes()));
    stage_all(&env, &files);
    let before = tree(&env.lock_dir());
    assert_eq!(before, expect(files.clone()));
    let plan = [
        ("restore", shown_handoff(S), "planned"),
        ("move_aside", side(S, &format!("{}.tmp", fp(R3))), "planned"),
        ("move_aside", side(S, "claim"), "planned"),
        ("move_aside", shown_candidate(S), "planned"),
    ];
    let mut first = None;
    for flags in [&[][..], &["--writers-fenced"], &["--yes"]] {
        let j = recover_one(&env, S, flags);
        assert_eq!(j.session_id, S);
        assert!(j.dry_run, "{flags:?}: {j:#?}");
        assert_eq!((j.blocked.as_deref(), j.folder.as_deref()), (None, None), "{flags:?}");
        assert_actions(&j, &plan);
        assert_eq!(tree(&env.lock_dir()), before, "{flags:?}: a dry run changed the lock directory");
        first.get_or_insert(j);
    }
    // Without --session: the same plan, in the all-sessions document.
    for flags in [&[][..], &["--writers-fenced"], &["--yes"]] {
        let all = recover_all(&env, flags);
        assert!(all.dry_run);
        assert_eq!(all.sessions, vec![first.clone().unwrap()], "{flags:?}");
        assert_eq!(tree(&env.lock_dir()), before, "{flags:?}");
    }
    // Human output lists the plan, says nothing changed, and how to carry it out.
    for args in [&["--session", S][..], &[], &["--session", S, "--yes"], &["--session", S, "--writers-fenced"]] {
        let r = recover(&env, args);
        r.assert_ok();
        for (_, file, _) in &plan {
            assert!(r.stdout.contains(file.as_str()), "{args:?}: {file} not listed:\n{}", r.stdout);
        }
        assert!(r.stdout.contains("nothing changed"), "{args:?}:\n{}", r.stdout);
        assert!(r.stdout.contains("--writers-fenced --yes"), "{args:?}:\n{}", r.stdout);
        assert_eq!(tree(&env.lock_dir()), before, "{args:?}");
    }
}

#[test]
fn session_without_a_lock_directory_prints_the_one_session_document_and_creates_nothing() {
    let env = TestEnv::new();
    let runtime = env.runtime();
    for flags in [&[][..], FENCED] {
        let mut args = vec!["recover", "--json", "--session", S];
        args.extend_from_slice(flags);
        let r = env.run(&args);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let j: RecoverJson = serde_json::from_str(&r.stdout).unwrap_or_else(|e| {
            panic!("`recover --json --session` must print the one-session document ({e}):\n{}", r.stdout)
        });
        assert_eq!((j.session_id.as_str(), j.blocked.as_deref(), j.folder.as_deref()), (S, None, None));
        assert_eq!(j.dry_run, flags.is_empty());
        assert!(j.actions.is_empty(), "{j:#?}");
        assert!(!runtime.join("tmp").exists(), "recover created the lock directory");
    }
}

#[test]
fn missing_runtime_dir_is_runtime_dir_missing_with_or_without_session() {
    // As for `status` and `acquire`: a mistyped runtime directory is an error, never an
    // empty "nothing to recover" success.
    let env = TestEnv::new();
    let missing = env.tmp.path().join("no-such-runtime");
    let m = missing.to_str().unwrap();
    for args in [&["recover", "--json"][..], &["recover", "--json", "--session", S]] {
        for flags in [&[][..], FENCED] {
            let mut a = args.to_vec();
            a.extend_from_slice(flags);
            a.extend(["--runtime-dir", m]);
            let r = env.run_raw(&a);
            assert_eq!(
                (r.code, r.error_code().as_str()),
                (2, "runtime_dir_missing"),
                "{a:?}:\n{}{}",
                r.stdout,
                r.stderr
            );
        }
    }
    assert!(missing.symlink_metadata().is_err(), "the runtime directory was created");
}

#[test]
fn symlinked_lock_dir_is_unavailable_and_nothing_is_moved_through_it() {
    let env = TestEnv::new();
    let real = env.tmp.path().join("real-locks");
    std::fs::create_dir(&real).unwrap();
    for (n, b) in crashed_seal(S) {
        stage(&real.join(n), &b);
    }
    let tmp = env.runtime().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::os::unix::fs::symlink(&real, tmp.join("session-writer-locks")).unwrap();
    let before = tree(&real);
    for args in [&["--json", "--session", S][..], &["--json"]] {
        for flags in [&[][..], FENCED] {
            let mut a = args.to_vec();
            a.extend_from_slice(flags);
            recover(&env, &a).assert_error(75, "session_writer_unavailable");
            assert_eq!(tree(&real), before, "{a:?}: something changed through the symlink");
        }
    }
}

// ---------------------------------------------------------------------------------------
// 2–4. crashed transitions
// ---------------------------------------------------------------------------------------

#[test]
fn crashed_seal_residue_restores_the_handoff_and_moves_the_rest_aside() {
    let env = TestEnv::new();
    let files = crashed_seal(S);
    stage_all(&env, &files);
    let before = tree(&env.lock_dir());
    assert_eq!(record_files(&before), 3);

    let j = recover_one(&env, S, FENCED);
    let folder = acted(&j);
    assert_actions(
        &j,
        &[
            ("restore", shown_handoff(S), "ok"),
            ("move_aside", side(S, "claim"), "ok"),
            ("move_aside", shown_candidate(S), "ok"),
        ],
    );
    let active = qwen_active_dead(S, O).into_bytes();
    let mut want = moved(&folder, &files);
    want.push((lock(S), active.clone()));
    let after = tree(&env.lock_dir());
    assert_tree_and_log(&env, &expect(want), &audit_of(&j));
    assert_eq!(record_files(&after), 4, "nothing deleted: three staged files moved, one restored");

    // Restored by link: `L` is the handoff's inode, and the folder is private.
    let dir = env.lock_dir();
    let l = std::fs::symlink_metadata(env.lock(S)).unwrap();
    let h = std::fs::symlink_metadata(dir.join(&folder).join(side(S, &format!("handoff.{O}")))).unwrap();
    assert_eq!((l.dev(), l.ino()), (h.dev(), h.ino()), "the primary was not restored by link");
    let f = std::fs::symlink_metadata(dir.join(&folder)).unwrap();
    assert!(f.is_dir());
    assert_eq!(f.permissions().mode() & 0o077, 0, "the recovery folder is readable by others");

    // The restored record is the sealer's stale active record: plain acquire reclaims it.
    let st = status(&env, S);
    assert_eq!((st.state.as_str(), st.live), ("active", Some(false)), "{st:#?}");
    assert_eq!(st.liveness.unwrap().code, "process_gone");
    assert!(st.claim.is_none() && st.side_files.is_empty(), "{:?} {:?}", st.claim, st.side_files);
    let r = acquire(&env, S);
    let a: AcquireJson = r.assert_ok().json();
    assert!(a.reclaimed, "{}", r.stdout);
    assert_own_lock(&env, S, &a);
    let now = tree(&env.lock_dir());
    assert_eq!(subtree(&now, &folder), subtree(&after, &folder), "the reclaim touched the recovery folder");
    assert_eq!(now.get(LOG), after.get(LOG));
    assert_eq!(now.len(), after.len(), "{:#?}", now.keys().collect::<Vec<_>>());
}

#[test]
fn crashed_takeover_residue_restores_the_sealed_record() {
    let env = TestEnv::new();
    let files = crashed_takeover(S);
    stage_all(&env, &files);

    let j = recover_one(&env, S, FENCED);
    let folder = acted(&j);
    assert_actions(&j, &[("restore", shown_sealed_retired(S), "ok"), ("move_aside", side(S, "claim"), "ok")]);
    let sealed = qwen_sealed(S, O).into_bytes();
    let mut want = moved(&folder, &files);
    want.push((lock(S), sealed));
    assert_tree_and_log(&env, &expect(want), &audit_of(&j));
    let after = tree(&env.lock_dir());
    assert_eq!(record_files(&after), 3);

    let st = status(&env, S);
    assert_eq!(st.state, "sealed", "{st:#?}");
    assert_eq!(st.proof.expect("proof").sha256, "a".repeat(64));
    assert!(st.claim.is_none() && st.side_files.is_empty());
    // A sealed record is a conflict for plain acquire, and nothing changes.
    acquire(&env, S).assert_error(3, "session_writer_conflict");
    assert_eq!(tree(&env.lock_dir()), after);
}

#[test]
fn two_predecessors_are_both_kept_and_nothing_is_restored() {
    // Both retired files pair with the claim (a seal by N and a takeover by N): which one is
    // authoritative is a human decision.
    let env = TestEnv::new();
    let claim = (side(S, "claim"), qwen_active_dead(S, N).into_bytes());
    let handoff = (side(S, &format!("handoff.{N}")), qwen_active_dead(S, N).into_bytes());
    let retired = (side(S, &format!("sealed.{R3}.{N}")), qwen_sealed(S, R3).into_bytes());
    let files: Staged = vec![claim.clone(), handoff.clone(), retired.clone()];
    stage_all(&env, &files);

    let j = recover_one(&env, S, FENCED);
    let folder = acted(&j);
    assert_actions(
        &j,
        &[
            ("move_aside", side(S, "claim"), "ok"),
            ("keep", side(S, &format!("handoff.{}", fp(N))), "kept"),
            ("keep", side(S, &format!("sealed.{}.{}", fp(R3), fp(N))), "kept"),
        ],
    );
    let want = expect([(format!("{folder}/{}", claim.0), claim.1), handoff, retired]);
    assert_tree_and_log(&env, &want, &audit_of(&j));
    assert!(env.lock(S).symlink_metadata().is_err(), "a primary appeared");
    assert_eq!(status(&env, S).state, "missing");
}

#[test]
fn a_retired_file_no_claim_pairs_with_is_residue_never_restored() {
    // A completed seal whose handoff cleanup failed, then a release: L is missing, but no
    // transition is in flight, so the old active record must not come back as the primary.
    let env = TestEnv::new();
    let handoff = (side(S, &format!("handoff.{O}")), qwen_active_dead(S, O).into_bytes());
    let unpaired = (side(S, &format!("sealed.{R3}.{N}")), qwen_sealed(S, R3).into_bytes());
    let claim_of_other = (side(S, "claim"), qwen_active_dead(S, R3).into_bytes());
    for files in [vec![handoff.clone()], vec![handoff.clone(), unpaired.clone(), claim_of_other.clone()]] {
        let env2 = TestEnv::new();
        stage_all(&env2, &files);
        let j = recover_one(&env2, S, FENCED);
        assert!(j.actions.iter().all(|a| a.action != "restore"), "{j:#?}");
        assert!(env2.lock(S).symlink_metadata().is_err(), "a primary appeared");
    }
    stage_all(&env, &vec![handoff]);
    let j = recover_one(&env, S, FENCED);
    assert_actions(&j, &[("move_aside", shown_handoff(S), "ok")]);
}

/// A qwen-format sealed record whose proof matches a transcript this writes now at
/// `chats/<session>.jsonl` (so `recover` sees a valid, continuable seal).
fn matching_sealed(env: &TestEnv, session: &str) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let body = b"{\"turn\":1}\n";
    let chats = env.runtime().join("chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::write(chats.join(format!("{session}.jsonl")), body).unwrap();
    let digest: String = Sha256::digest(body).iter().map(|b| format!("{b:02x}")).collect();
    qwen_sealed(session, O)
        .replace(r#""byte_length":6"#, &format!(r#""byte_length":{}"#, body.len()))
        .replace(&"a".repeat(64), &digest)
        .into_bytes()
}

#[test]
fn a_sealed_primary_whose_proof_no_longer_matches_is_moved_aside() {
    let env = TestEnv::new();
    let sealed = matching_sealed(&env, S);
    stage_all(&env, &vec![(lock(S), sealed.clone())]);
    // A non-lease writer appended after the seal: no takeover can ever continue it.
    let t = env.runtime().join(format!("chats/{S}.jsonl"));
    let mut body = std::fs::read(&t).unwrap();
    body.extend_from_slice(b"{\"turn\":2}\n");
    std::fs::write(&t, &body).unwrap();
    let j = recover_one(&env, S, FENCED);
    let folder = acted(&j);
    assert_actions(&j, &[("move_aside", lock(S), "ok")]);
    assert!(j.actions[0].reason.contains("no longer matches"), "{j:#?}");
    assert_eq!(std::fs::read(env.lock_dir().join(&folder).join(lock(S))).unwrap(), sealed);
    assert_eq!(std::fs::read(&t).unwrap(), body, "the transcript is never touched");
}

// ---------------------------------------------------------------------------------------
// 5–6. what happens to the primary
// ---------------------------------------------------------------------------------------

#[test]
fn malformed_directory_and_fenced_primaries_are_moved_aside_then_acquire_succeeds() {
    let inner = b"something an operator left inside".to_vec();
    let cases: Vec<(&str, Staged)> = vec![
        ("not json", vec![(lock(S), b"not-json".to_vec())]),
        ("directory", vec![(format!("{}/inner", lock(S)), inner)]),
        ("foreign host", vec![(lock(S), foreign_host_record(S).into_bytes())]),
        ("other boot", vec![(lock(S), other_boot_record(S).into_bytes())]),
        ("another session's record", vec![(lock(S), qwen_active_dead(S2, O).into_bytes())]),
        ("symlink", vec![]),
        ("fifo", vec![]),
    ];
    for (name, files) in cases {
        let env = TestEnv::new();
        let outside = env.tmp.path().join("outside.lock");
        stage(&outside, qwen_active_dead(S, O).as_bytes());
        match name {
            "directory" => std::fs::create_dir(env.lock(S)).unwrap(),
            "symlink" => std::os::unix::fs::symlink(&outside, env.lock(S)).unwrap(),
            "fifo" => assert!(std::process::Command::new("mkfifo").arg(env.lock(S)).status().unwrap().success()),
            _ => {}
        }
        stage_all(&env, &files);
        let before = tree(&env.lock_dir());
        let special = before.get(&lock(S)).cloned().unwrap();
        if files.is_empty() {
            assert!(matches!(special, TreeNode::Symlink(_) | TreeNode::Fifo), "{name}");
        } else {
            assert_eq!(before, expect(files.clone()), "{name}");
        }

        let j = recover_one(&env, S, FENCED);
        let folder = acted(&j);
        assert_actions(&j, &[("move_aside", lock(S), "ok")]);
        let mut want = expect(moved(&folder, &files));
        if files.is_empty() {
            want.insert(folder.clone(), TreeNode::Dir);
            want.insert(format!("{folder}/{}", lock(S)), special.clone());
        }
        assert_tree_and_log(&env, &want, &audit_of(&j));
        let after = tree(&env.lock_dir());
        assert_eq!(std::fs::read(&outside).unwrap(), qwen_active_dead(S, O).as_bytes(), "{name}: symlink target");

        let r = acquire(&env, S);
        let a: AcquireJson = r.assert_ok().json();
        assert!(!a.reclaimed, "{name}: nothing was left to reclaim: {}", r.stdout);
        assert_own_lock(&env, S, &a);
        let now = tree(&env.lock_dir());
        assert_eq!(subtree(&now, &folder), subtree(&after, &folder), "{name}");
        assert_eq!(now.get(LOG), after.get(LOG), "{name}");
    }
}

#[test]
fn sealed_primary_is_kept_and_every_kind_of_residue_beside_it_moved() {
    let env = TestEnv::new();
    let sealed = (lock(S), matching_sealed(&env, S));
    let dead = |o: &str| qwen_active_dead(S, o).into_bytes();
    // (real name, bytes, shown name, kept?)
    let sides: Vec<(String, Vec<u8>, String, bool)> = vec![
        (side(S, &format!("handoff.{O}")), dead(O), shown_handoff(S), false),
        (side(S, &format!("released.{R3}")), dead(R3), side(S, &format!("released.{}", fp(R3))), false),
        (side(S, &format!("stale.4242.{NONCE}")), dead(N), side(S, &format!("stale.4242.{NONCE}")), false),
        (side(S, &format!("reclaim.{N}")), dead(R3), side(S, &format!("reclaim.{}", fp(N))), false),
        (side(S, &format!("reclaim.{N}.{R3}")), dead(O), side(S, &format!("reclaim.{}.{}", fp(N), fp(R3))), false),
        (side(S, &format!("{R3}.tmp")), dead(R3), side(S, &format!("{}.tmp", fp(R3))), false),
        (side(S, &format!("claim.{N}.tmp")), dead(N), side(S, &format!("claim.{}.tmp", fp(N))), false),
        (side(S, "notes"), b"operator notes\n".to_vec(), side(S, "notes"), true),
    ];
    let mut files: Staged = vec![sealed.clone()];
    files.extend(sides.iter().map(|(n, b, _, _)| (n.clone(), b.clone())));
    stage_all(&env, &files);

    let j = recover_one(&env, S, FENCED);
    let folder = acted(&j);
    let mut sorted = sides.clone();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut plan = vec![("keep", lock(S), "kept")];
    plan.extend(sorted.iter().map(|(_, _, shown, kept)| {
        if *kept { ("keep", shown.clone(), "kept") } else { ("move_aside", shown.clone(), "ok") }
    }));
    assert_actions(&j, &plan);

    let mut want: Staged = vec![sealed, (side(S, "notes"), b"operator notes\n".to_vec())];
    want.extend(sides.iter().filter(|s| !s.3).map(|(n, b, _, _)| (format!("{folder}/{n}"), b.clone())));
    assert_tree_and_log(&env, &expect(want), &audit_of(&j));
    let st = status(&env, S);
    assert_eq!(st.state, "sealed");
    assert_eq!(st.side_files.iter().map(|f| f.kind.as_str()).collect::<Vec<_>>(), vec!["unknown"]);
}

/// Issue 38: a stale primary that names no holder lock (plain `acquire`, qwen-code) is one
/// no `run` can reclaim: recover moves it aside with the residue, and the session is free.
#[test]
fn stale_active_primary_without_holder_evidence_is_moved_aside_with_the_residue() {
    let env = TestEnv::new();
    let primary = (lock(S), qwen_active_dead(S, O).into_bytes());
    let claim = (side(S, "claim"), qwen_active_dead(S, N).into_bytes());
    let candidate = (side(S, &format!("sealed-candidate.{O}")), qwen_sealed(S, O).into_bytes());
    let unknown = (side(S, "README"), b"do not touch\n".to_vec());
    let files: Staged = vec![primary.clone(), claim.clone(), candidate.clone(), unknown.clone()];
    stage_all(&env, &files);

    let j = recover_one(&env, S, FENCED);
    let folder = acted(&j);
    assert_actions(
        &j,
        &[
            ("move_aside", lock(S), "ok"),
            ("keep", side(S, "README"), "kept"),
            ("move_aside", side(S, "claim"), "ok"),
            ("move_aside", shown_candidate(S), "ok"),
        ],
    );
    let want = expect([unknown.clone()].into_iter().chain(moved(&folder, &vec![primary, claim, candidate])));
    assert_tree_and_log(&env, &want, &audit_of(&j));
    let after = tree(&env.lock_dir());

    let r = acquire(&env, S);
    let a: AcquireJson = r.assert_ok().json();
    assert!(!a.reclaimed, "the session was free: {}", r.stdout);
    assert_own_lock(&env, S, &a);
    let now = tree(&env.lock_dir());
    assert_eq!(subtree(&now, &folder), subtree(&after, &folder));
    assert_eq!(now.get(&unknown.0), Some(&TreeNode::File(unknown.1)));
    assert_eq!(now.get(LOG), after.get(LOG));
    assert_eq!(now.len(), after.len() + 1, "our new lock, nothing else: {:#?}", now.keys().collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------------------
// 7. a running process blocks everything
// ---------------------------------------------------------------------------------------

/// Blocked: a reason, no folder, nothing carried out, nothing changed, no audit log.
#[track_caller]
fn assert_blocked(env: &TestEnv, before: &Tree, flags: &[&str]) -> RecoverJson {
    // Asked to act but blocked: the report is printed and the exit status is 3, so that
    // `recover --writers-fenced --yes && next-step` does not carry on as if recovered.
    let mut a = vec!["--json", "--session", S];
    a.extend_from_slice(flags);
    let r = recover(env, &a);
    assert_eq!(r.code, if flags.is_empty() { 0 } else { 3 }, "{}", r.stdout);
    let j: RecoverJson = r.json();
    assert_eq!(j.dry_run, flags.is_empty(), "{j:#?}");
    assert!(j.blocked.as_deref().is_some_and(|b| !b.trim().is_empty()), "not blocked: {j:#?}");
    assert_eq!(j.folder, None, "{j:#?}");
    assert!(
        j.actions.iter().all(|a| !a.result.starts_with("ok") && a.result != "kept"),
        "a blocked plan was carried out: {j:#?}"
    );
    assert_eq!(&tree(&env.lock_dir()), before, "flags {flags:?}: a blocked plan changed the lock directory");
    j
}

#[test]
fn running_owner_blocks_the_plan_even_with_both_flags() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let files: Staged = vec![
        (lock(S), qwen_active_local(S, O, holder.pid()).into_bytes()),
        (side(S, &format!("released.{R3}")), qwen_active_dead(S, R3).into_bytes()),
        (side(S, &format!("{R3}.tmp")), qwen_active_dead(S, R3).into_bytes()),
        (side(S, "claim"), qwen_active_dead(S, N).into_bytes()),
    ];
    stage_all(&env, &files);
    let before = tree(&env.lock_dir());
    for flags in [&[][..], FENCED] {
        let j = assert_blocked(&env, &before, flags);
        assert!(j.blocked.unwrap().contains(&holder.pid().to_string()), "the reason names the running pid");
    }
    // Without --session too.
    let r = recover(&env, &["--json", "--writers-fenced", "--yes"]);
    assert_eq!(r.code, 3, "{}", r.stdout);
    let all: RecoverAllJson = r.json();
    assert_eq!(all.sessions.len(), 1);
    assert!(all.sessions[0].blocked.is_some() && all.sessions[0].folder.is_none(), "{all:#?}");
    assert_eq!(tree(&env.lock_dir()), before);
    let st = status(&env, S);
    assert_eq!((st.live, st.liveness.map(|l| l.code)), (Some(true), Some("running".to_string())));
}

#[test]
fn claim_of_a_running_process_blocks_the_plan_until_it_is_gone() {
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let claim = (side(S, "claim"), qwen_active_local(S, N, holder.pid()).into_bytes());
    let retired = (side(S, &format!("sealed.{O}.{N}")), qwen_sealed(S, O).into_bytes());
    let files: Staged = vec![claim.clone(), retired.clone()];
    stage_all(&env, &files);
    let before = tree(&env.lock_dir());
    for flags in [&[][..], FENCED] {
        let j = assert_blocked(&env, &before, flags);
        assert!(
            j.actions.iter().any(|a| a.action == "keep" && a.file == side(S, "claim")),
            "the running claim must be kept: {j:#?}"
        );
    }
    let r = recover(&env, &["--json", "--writers-fenced", "--yes"]);
    assert_eq!(r.code, 3, "{}", r.stdout);
    let all: RecoverAllJson = r.json();
    assert!(all.sessions[0].blocked.is_some() && all.sessions[0].folder.is_none(), "{all:#?}");
    assert_eq!(tree(&env.lock_dir()), before);

    // Once the claimant is gone (its record stays byte-identical), recovery proceeds.
    holder.stop();
    let j = recover_one(&env, S, FENCED);
    let folder = acted(&j);
    assert_actions(&j, &[("restore", shown_sealed_retired(S), "ok"), ("move_aside", side(S, "claim"), "ok")]);
    let mut want = moved(&folder, &files);
    want.push((lock(S), retired.1));
    assert_tree_and_log(&env, &expect(want), &audit_of(&j));
}

// ---------------------------------------------------------------------------------------
// 8. every session
// ---------------------------------------------------------------------------------------

#[test]
fn recover_without_session_covers_every_session_in_the_directory() {
    let env = TestEnv::new();
    let one = crashed_takeover(S);
    let two: Staged = vec![
        (lock(S2), b"not-json".to_vec()),
        (side(S2, &format!("stale.77.{NONCE}")), qwen_active_dead(S2, R3).into_bytes()),
    ];
    // A session id that qwen encodes (`a/b` → `a%2Fb.lock`), with only a temp file left.
    let three: Staged = vec![(format!("a%2Fb.lock.{R3}.tmp"), qwen_active_dead("a/b", R3).into_bytes())];
    stage_all(&env, &one);
    stage_all(&env, &two);
    stage_all(&env, &three);
    let before = tree(&env.lock_dir());

    let dry = recover_all(&env, &[]);
    assert!(dry.dry_run);
    assert_eq!(dry.sessions.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), vec!["a/b", S, S2]);
    assert!(dry.sessions.iter().all(|s| s.dry_run && s.folder.is_none() && s.blocked.is_none()));
    assert_eq!(tree(&env.lock_dir()), before);

    let all = recover_all(&env, FENCED);
    assert!(!all.dry_run);
    assert_eq!(all.sessions.len(), 3, "{all:#?}");
    let (c, a, b) = (&all.sessions[0], &all.sessions[1], &all.sessions[2]);
    assert_eq!((c.session_id.as_str(), a.session_id.as_str(), b.session_id.as_str()), ("a/b", S, S2));
    let (fc, fa, fb) = (acted(c), acted(a), acted(b));
    assert_eq!(folder_pid(&fa), folder_pid(&fb), "one run, one pid");
    assert_eq!(folder_pid(&fa), folder_pid(&fc), "one run, one pid");
    assert_actions(c, &[("move_aside", format!("a%2Fb.lock.{}.tmp", fp(R3)), "ok")]);
    assert_actions(a, &[("restore", shown_sealed_retired(S), "ok"), ("move_aside", side(S, "claim"), "ok")]);
    assert_actions(b, &[("move_aside", lock(S2), "ok"), ("move_aside", side(S2, &format!("stale.77.{NONCE}")), "ok")]);
    let mut want = moved(&fa, &one);
    want.push((lock(S), qwen_sealed(S, O).into_bytes()));
    want.extend(moved(&fb, &two));
    want.extend(moved(&fc, &three));
    let mut log = audit_of(c);
    log.extend(audit_of(a));
    log.extend(audit_of(b));
    assert_tree_and_log(&env, &expect(want), &log);
    assert_eq!(status(&env, S).state, "sealed");
    assert_eq!(status(&env, S2).state, "missing");
}

// ---------------------------------------------------------------------------------------
// 9. no owner id in any output
// ---------------------------------------------------------------------------------------

/// Every kind of residue, with owner ids in names and in records, over three sessions.
fn stage_owner_ids_everywhere(env: &TestEnv) {
    let dead = |s: &str, o: &str| qwen_active_dead(s, o).into_bytes();
    // S: a record schema 4 nobody accepts (malformed, but it carries owner O), and every side file.
    let schema4 = qwen_active_dead(S, O).replace(r#""schema_version":2"#, r#""schema_version":4"#);
    let mut files: Staged = vec![
        (lock(S), schema4.into_bytes()),
        (side(S, "claim"), dead(S, N)),
        (side(S, &format!("released.{R3}")), dead(S, R3)),
        (side(S, &format!("sealed-candidate.{O}")), qwen_sealed(S, O).into_bytes()),
        (side(S, &format!("handoff.{O}")), dead(S, O)),
        (side(S, &format!("sealed.{O}.{N}")), qwen_sealed(S, O).into_bytes()),
        (side(S, &format!("stale.9.{NONCE}")), dead(S, R3)),
        (side(S, &format!("reclaim.{O}")), dead(S, R3)),
        (side(S, &format!("reclaim.{O}.{R3}")), dead(S, N)),
        (side(S, &format!("{O}.tmp")), dead(S, O)),
        (side(S, &format!("claim.{N}.tmp")), dead(S, N)),
        (side(S, &format!("sealed-candidate.{O}.{R3}.tmp")), dead(S, R3)),
        (side(S, &format!("reclaim.{O}.{N}.tmp")), dead(S, N)),
    ];
    // S2: a fenced foreign-host primary of owner O.
    files.push((lock(S2), foreign_host_record(S2).into_bytes()));
    files.push((side(S2, &format!("{N}.tmp")), dead(S2, N)));
    // S3: a crashed seal (one predecessor: restored).
    files.extend(crashed_seal(S3));
    stage_all(env, &files);
}

#[test]
fn output_and_audit_log_never_contain_an_owner_id() {
    let human = TestEnv::new();
    let json = TestEnv::new();
    stage_owner_ids_everywhere(&human);
    stage_owner_ids_everywhere(&json);
    let mut runs: Vec<(String, Run)> = Vec::new();
    for (env, j) in [(&human, false), (&json, true)] {
        let base: &[&str] = if j { &["--json"] } else { &[] };
        for session in [None, Some(S), Some(S2), Some(S3)] {
            for flags in [&[][..], &["--writers-fenced"], &["--yes"]] {
                let mut args = base.to_vec();
                if let Some(s) = session {
                    args.extend(["--session", s]);
                }
                args.extend_from_slice(flags);
                runs.push((format!("dry {args:?}"), recover(env, &args)));
            }
        }
        // Carry it out for one session, then for every session, then again (nothing to do).
        for args in [&["--session", S][..], &[], &[]] {
            let mut a = base.to_vec();
            a.extend_from_slice(args);
            a.extend_from_slice(FENCED);
            runs.push((format!("act {a:?}"), recover(env, &a)));
        }
    }
    for (name, r) in &runs {
        assert_eq!(r.code, 0, "{name}:\n{}{}", r.stdout, r.stderr);
        for id in [O, N, R3] {
            assert!(
                !r.stdout.contains(id) && !r.stderr.contains(id),
                "{name} shows owner id {id}:\nstdout:\n{}\nstderr:\n{}",
                r.stdout,
                r.stderr
            );
        }
    }
    // Not vacuous: the plans named the files, with fingerprints in place of the ids.
    let first_json = &runs.iter().find(|(n, _)| n.starts_with("dry [\"--json\"")).unwrap().1;
    let plan: RecoverAllJson = first_json.json();
    assert_eq!(plan.sessions.len(), 3);
    assert!(first_json.stdout.contains(&fp(O)) && first_json.stdout.contains(&fp(N)));
    for env in [&human, &json] {
        let log = std::fs::read_to_string(env.lock_dir().join(LOG)).expect("an audit log was written");
        assert!(log.lines().count() >= 15, "{log}");
        assert!(log.contains("<owner:"), "{log}");
        for id in [O, N, R3] {
            assert!(!log.contains(id), "the audit log shows owner id {id}:\n{log}");
        }
        // Everything the plans moved is there under its real name; nothing was deleted.
        let t = tree(&env.lock_dir());
        assert_eq!(record_files(&t), 19, "18 staged files + the restored one: {:#?}", t.keys().collect::<Vec<_>>());
    }
}

#[test]
fn a_malformed_reason_never_echoes_an_owner_id_from_the_record() {
    // A sealed record whose writerctl identity field holds a string (here the owner id)
    // is malformed; the reason must say why without quoting the record's contents.
    let env = TestEnv::new();
    let sealed = qwen_sealed(S, O);
    let body = sealed.strip_suffix('}').unwrap();
    let rec = format!(r#"{body},"writerctl_transcript_identity":"{O}"}}"#);
    let v: serde_json::Value = serde_json::from_str(&rec).expect("valid JSON: only the identity field is wrong");
    assert_eq!(v["writerctl_transcript_identity"], O);
    stage(&env.lock(S), rec.as_bytes());
    let before = tree(&env.lock_dir());
    for args in [&["--json", "--session", S][..], &["--session", S], &["--json"], &[]] {
        let r = recover(&env, args);
        r.assert_ok();
        assert!(r.stdout.contains("malformed"), "{args:?}:\n{}", r.stdout);
        assert!(!r.stdout.contains(O) && !r.stderr.contains(O), "{args:?} shows the owner id:\n{}", r.stdout);
    }
    assert_eq!(tree(&env.lock_dir()), before);
}

// ---------------------------------------------------------------------------------------
// 10. idempotence, and earlier recovery folders
// ---------------------------------------------------------------------------------------

#[test]
fn a_second_run_finds_nothing_to_do_and_creates_no_folder() {
    let env = TestEnv::new();
    stage_all(&env, &crashed_seal(S));
    let first = recover_one(&env, S, FENCED);
    let folder = acted(&first);
    // The restored predecessor's holder is gone by the pid table only (no holder lock): no
    // `run` could ever reclaim it, so the next recovery moves it aside (issue 38); after
    // that there is nothing left to do.
    let second = recover_one(&env, S, FENCED);
    acted(&second);
    assert_actions(&second, &[("move_aside", lock(S), "ok")]);
    let after = tree(&env.lock_dir());
    assert_eq!(after.keys().filter(|k| k.starts_with(FOLDER_PREFIX) && !k.contains('/')).count(), 2);

    for flags in [&[][..], FENCED] {
        let j = recover_one(&env, S, flags);
        assert_eq!(j.dry_run, flags.is_empty());
        assert_eq!((j.blocked.as_deref(), j.folder.as_deref()), (None, None), "{j:#?}");
        assert_actions(&j, &[]);
        assert_eq!(tree(&env.lock_dir()), after, "flags {flags:?}: the second run changed something");
        let all = recover_all(&env, flags);
        assert!(all.sessions.is_empty(), "the recovery folder or log became a session: {all:#?}");
        assert_eq!(tree(&env.lock_dir()), after);
    }
    assert!(tree(&env.lock_dir()).contains_key(&format!("{folder}/{}", side(S, "claim"))));
}

#[test]
fn an_earlier_recovery_folder_is_never_a_lock_or_a_side_file() {
    let env = TestEnv::new();
    // A folder and log from an earlier run: it holds a claim, a handoff (the one predecessor
    // it would restore if it looked inside), a primary and a temp file of session S.
    let old = format!("{FOLDER_PREFIX}20200101T000000Z-1");
    std::fs::create_dir(env.lock_dir().join(&old)).unwrap();
    let mut old_files = moved(&old, &crashed_seal(S));
    old_files.push((format!("{old}/{}", lock(S)), b"not-json".to_vec()));
    old_files.push((format!("{old}/{}", side(S, &format!("{R3}.tmp"))), qwen_active_dead(S, R3).into_bytes()));
    stage_all(&env, &old_files);
    let old_line = format!(
        "2020-01-01T00:00:00.000Z pid=1 session=\"{S}\" action=move_aside file=\"x\" folder=\"{old}\" result=\"ok\"\n"
    );
    stage(&env.lock_dir().join(LOG), old_line.as_bytes());
    let before = tree(&env.lock_dir());

    // Only the earlier run's leftovers: no session at all, nothing done.
    for flags in [&[][..], FENCED] {
        let all = recover_all(&env, flags);
        assert_eq!(all.sessions, vec![], "{all:#?}");
        let j = recover_one(&env, S, flags);
        assert_eq!((j.folder.as_deref(), j.blocked.as_deref()), (None, None));
        assert!(j.actions.is_empty(), "the earlier folder's files were planned: {j:#?}");
        assert_eq!(tree(&env.lock_dir()), before, "flags {flags:?}");
    }

    // New residue beside it: handled on its own; the earlier folder and lines stay as they were.
    let released = (side(S, &format!("released.{R3}")), qwen_active_dead(S, R3).into_bytes());
    let claim = (side(S, "claim"), qwen_active_dead(S, N).into_bytes());
    stage_all(&env, &vec![released.clone(), claim.clone()]);
    let all = recover_all(&env, FENCED);
    assert_eq!(all.sessions.len(), 1, "{all:#?}");
    let j = &all.sessions[0];
    let folder = acted(j);
    assert_ne!(folder, old);
    assert_actions(
        j,
        &[("move_aside", side(S, "claim"), "ok"), ("move_aside", side(S, &format!("released.{}", fp(R3))), "ok")],
    );
    let mut want = before.clone();
    want.remove(LOG);
    want.extend(expect(moved(&folder, &vec![claim, released])));
    let mut got = tree(&env.lock_dir());
    let log = match got.remove(LOG) {
        Some(TreeNode::File(b)) => b,
        other => panic!("audit log: {other:?}"),
    };
    assert_eq!(got, want);
    let rest = log.strip_prefix(old_line.as_bytes()).expect("the earlier audit lines were rewritten");
    assert_log(rest, &audit_of(j));
    assert!(env.lock(S).symlink_metadata().is_err(), "something was restored from the earlier folder");
}

// ---------------------------------------------------------------------------------------
// names that match no pattern, and the audit log
// ---------------------------------------------------------------------------------------

#[test]
fn names_that_only_start_like_a_side_file_match_no_pattern_and_are_kept() {
    // QWEN_FORMAT §1.2: `L.sealed.<o>.<n>` has two owner components, `L.stale.<pid>.<uuid>` a
    // decimal pid and a uuid, `L.handoff.<o>`, `L.released.<o>` and `L.reclaim.<o>` a
    // non-empty owner. These names (an operator's backup copies) match none of them, so
    // recover keeps them — above all, it never "restores" a copy that no transition made.
    let env = TestEnv::new();
    let backup = (side(S, "sealed.bak"), qwen_sealed(S, O).into_bytes());
    let claim = (side(S, "claim"), qwen_active_dead(S, N).into_bytes());
    stage_all(&env, &vec![backup.clone(), claim.clone()]);
    let j = recover_one(&env, S, FENCED);
    let folder = acted(&j);
    assert_actions(&j, &[("move_aside", side(S, "claim"), "ok"), ("keep", side(S, "sealed.bak"), "kept")]);
    let want = expect([backup, (format!("{folder}/{}", claim.0), claim.1)]);
    assert_tree_and_log(&env, &want, &audit_of(&j));
    assert!(env.lock(S).symlink_metadata().is_err(), "a backup copy was restored as the primary");

    let env = TestEnv::new();
    let mut files: Staged = vec![(lock(S), matching_sealed(&env, S))];
    for suffix in ["handoff.", "reclaim.", "released.", "stale.bak"] {
        files.push((side(S, suffix), qwen_active_dead(S, O).into_bytes()));
    }
    stage_all(&env, &files);
    let before = tree(&env.lock_dir());
    let j = recover_one(&env, S, FENCED);
    assert_eq!((j.folder.as_deref(), j.blocked.as_deref(), j.dry_run), (None, None, false), "{j:#?}");
    assert_actions(
        &j,
        &[
            ("keep", lock(S), "kept"),
            ("keep", side(S, "handoff."), "kept"),
            ("keep", side(S, "reclaim."), "kept"),
            ("keep", side(S, "released."), "kept"),
            ("keep", side(S, "stale.bak"), "kept"),
        ],
    );
    assert_eq!(tree(&env.lock_dir()), before);
}

#[test]
fn an_unwritable_audit_log_stops_recovery_before_anything_moves() {
    // Every change gets an audit line: when the log cannot be appended (here a directory sits
    // at its path; for an operator, a log left 0600 by a root run), nothing may be moved.
    let env = TestEnv::new();
    let files: Staged = vec![
        (side(S, "claim"), qwen_active_dead(S, N).into_bytes()),
        (side(S, &format!("released.{R3}")), qwen_active_dead(S, R3).into_bytes()),
    ];
    stage_all(&env, &files);
    std::fs::create_dir(env.lock_dir().join(LOG)).unwrap();
    let before = tree(&env.lock_dir());
    let r = recover(&env, &["--json", "--session", S, "--writers-fenced", "--yes"]);
    assert_ne!(r.code, 0, "recover claimed success without an audit log:\n{}", r.stdout);
    assert_eq!(
        tree(&env.lock_dir()),
        before,
        "files were moved without an audit line (exit {}):\n{}",
        r.code,
        r.stdout
    );
}
