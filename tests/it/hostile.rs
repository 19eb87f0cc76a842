//! Hostile paths (README "Handoff", "Exit codes"; QWEN_FORMAT §1.1, §4): symlinks at every
//! component of the transcript path beneath R, dangling symlinks, FIFOs, sockets and
//! directories at the transcript path, a hard-linked transcript after a seal, a symlinked
//! lock directory, mode-000 lock and transcript files for an unprivileged user, and a full
//! file system; and, for issue 22, another local user's lock directory, `R/tmp` or transcript
//! directory, a swap of `run`'s control-socket directory, control characters in record
//! fields, a file that lies about its size, a FIFO or device as the config or token file,
//! and errors that must not be told as tampering or as "retry later". The multi-user cases
//! create two throwaway users (root only; a loud SKIPPED line elsewhere, a failure under
//! `WRITERCTL_REQUIRE_SERVICES=1`). Each one must fail closed with its documented code and change nothing: the
//! whole scratch tree (runtime directory, token files) is snapshotted with bytes, inode,
//! mode, owner, link count, mtime and ctime before and after. Every command is bounded at
//! 20 s, so a FIFO that blocks an open is a failure, not a hung test.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::*;

const S: &str = "hostile-session";
const GATE: (&str, &str) = ("WRITERCTL_SESSION_WRITER_LEASE", "1");
const BODY: &[u8] = b"{\"type\":\"user\",\"text\":\"hi\"}\n{\"type\":\"assistant\",\"text\":\"hello\"}\n";
const LIMIT: Duration = Duration::from_secs(20);
/// The default transcript key and a qwen project key with four components beneath R.
const DEFAULT_KEY: &str = "chats/hostile-session.jsonl";
const PROJECT_KEY: &str = "projects/-home-u-repo/chats/hostile-session.jsonl";

const UNSAFE: (i32, &str) = (4, "session_transcript_unsafe");
const CHANGED: (i32, &str) = (4, "session_transcript_changed");
const UNAVAILABLE: (i32, &str) = (75, "session_writer_unavailable");

type Snapshot = BTreeMap<String, MetaNode>;

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

/// Runs `args` (gate on) and fails the test if it does not finish within [`LIMIT`].
#[track_caller]
fn gated(env: &TestEnv, args: &[&str]) -> Run {
    cli_bounded(env, args, &[GATE], LIMIT).unwrap_or_else(|| panic!("`{}` hung for {LIMIT:?}", args.join(" ")))
}

fn snapshot(env: &TestEnv) -> Snapshot {
    meta_tree(env.tmp.path())
}

/// The first difference between two snapshots, for a readable failure.
fn diff(before: &Snapshot, after: &Snapshot) -> String {
    for (k, v) in before {
        match after.get(k) {
            None => return format!("{k} disappeared (was {v:?})"),
            Some(w) if w != v => return format!("{k} changed:\n  before {v:?}\n  after  {w:?}"),
            _ => {}
        }
    }
    for (k, v) in after {
        if !before.contains_key(k) {
            return format!("{k} appeared: {v:?}");
        }
    }
    "no difference".into()
}

/// Runs `args` and requires exactly `(exit, code)` and an unchanged scratch tree.
#[track_caller]
fn assert_refused(env: &TestEnv, args: &[&str], want: (i32, &str), what: &str) -> Run {
    let before = snapshot(env);
    let r = gated(env, args);
    assert_eq!(
        (r.code, try_error_code(&r).as_deref()),
        (want.0, Some(want.1)),
        "{what}: `{}`\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        r.stdout,
        r.stderr
    );
    let after = snapshot(env);
    assert!(before == after, "{what}: `{}` changed files: {}", args.join(" "), diff(&before, &after));
    r
}

fn write_transcript(path: &Path, body: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn token_path(env: &TestEnv, tag: &str) -> String {
    env.tmp.path().join(format!("{tag}.{}.token", uuid::Uuid::new_v4())).to_str().unwrap().to_owned()
}

/// `acquire --managed` for `pid` with `key`; returns the token file.
#[track_caller]
fn managed(env: &TestEnv, key: &str, pid: u32) -> String {
    let tf = token_path(env, "owner");
    let pid = pid.to_string();
    gated(
        env,
        &[
            "acquire",
            "--managed",
            "--json",
            "--session",
            S,
            "--pid",
            &pid,
            "--token-file",
            &tf,
            "--transcript-key",
            key,
        ],
    )
    .assert_ok();
    tf
}

/// `acquire --managed` then `seal` of the transcript at `key`; returns the token file.
#[track_caller]
fn sealed(env: &TestEnv, key: &str, pid: u32) -> String {
    let tf = managed(env, key, pid);
    gated(env, &["seal", "--json", "--session", S, "--token-file", &tf, "--transcript-key", key]).assert_ok();
    tf
}

/// The certified-path commands that read a sealed proof: `takeover`, `acquire --managed`
/// and `verify`, each with `key`, for holder `pid` (token files that must never appear).
fn certified_commands(env: &TestEnv, key: &str, pid: u32) -> Vec<(&'static str, Vec<String>)> {
    let pid = pid.to_string();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    vec![
        (
            "takeover",
            s(&[
                "takeover",
                "--json",
                "--session",
                S,
                "--pid",
                &pid,
                "--token-file",
                &token_path(env, "new"),
                "--transcript-key",
                key,
            ]),
        ),
        (
            "acquire --managed",
            s(&[
                "acquire",
                "--managed",
                "--json",
                "--session",
                S,
                "--pid",
                &pid,
                "--token-file",
                &token_path(env, "new"),
                "--transcript-key",
                key,
            ]),
        ),
        ("verify", s(&["verify", "--json", "--session", S, "--transcript-key", key])),
    ]
}

fn seal_args(tf: &str, key: &str) -> Vec<String> {
    ["seal", "--json", "--session", S, "--token-file", tf, "--transcript-key", key]
        .iter()
        .map(|x| x.to_string())
        .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Replaces the path component `R/<prefix>` by a symlink to an identical copy beside it.
fn symlink_component(r: &Path, prefix: &str) {
    let comp = r.join(prefix);
    let real = r.join(format!("{prefix}.real"));
    std::fs::rename(&comp, &real).unwrap();
    std::os::unix::fs::symlink(&real, &comp).unwrap();
}

fn mkfifo(p: &Path) {
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success(), "mkfifo {}", p.display());
}

// ---------------------------------------------------------------------------------------
// 1. a symlink at every component of the transcript path
// ---------------------------------------------------------------------------------------

#[test]
fn a_symlink_at_any_component_of_the_transcript_path_is_unsafe_for_seal_takeover_and_verify() {
    let holder = LiveHolder::start();
    let mut ran = 0;
    for key in [DEFAULT_KEY, PROJECT_KEY] {
        let parts: Vec<&str> = key.split('/').collect();
        for depth in 1..=parts.len() {
            let prefix = parts[..depth].join("/");
            for command in ["seal", "takeover", "acquire --managed", "verify"] {
                let what = format!("{command} with R/{prefix} a symlink (key {key})");
                let env = TestEnv::new();
                let r = env.runtime();
                write_transcript(&r.join(key), BODY);
                let args = if command == "seal" {
                    let tf = managed(&env, key, holder.pid());
                    seal_args(&tf, key)
                } else {
                    sealed(&env, key, holder.pid());
                    certified_commands(&env, key, holder.pid()).into_iter().find(|(n, _)| *n == command).unwrap().1
                };
                symlink_component(&r, &prefix);
                assert_refused(&env, &strs(&args), UNSAFE, &what);
                ran += 1;
            }
        }
    }
    assert_eq!(ran, (2 + 4) * 4);
}

// ---------------------------------------------------------------------------------------
// 2. dangling symlink, FIFO, socket, directory at the transcript path
// ---------------------------------------------------------------------------------------

#[test]
fn a_dangling_symlink_fifo_socket_or_directory_at_the_transcript_path_is_unsafe() {
    let holder = LiveHolder::start();
    type Make = fn(&Path) -> Option<std::os::unix::net::UnixListener>;
    let kinds: [(&str, Make); 4] = [
        ("dangling symlink", |p| {
            std::os::unix::fs::symlink("/nonexistent/writerctl/t.jsonl", p).unwrap();
            None
        }),
        ("FIFO", |p| {
            mkfifo(p);
            None
        }),
        ("socket", |p| Some(std::os::unix::net::UnixListener::bind(p).unwrap())),
        ("directory", |p| {
            std::fs::create_dir(p).unwrap();
            std::fs::write(p.join("inner.jsonl"), BODY).unwrap();
            None
        }),
    ];
    for (kind, make) in kinds {
        for command in ["seal", "takeover", "acquire --managed", "verify"] {
            let what = format!("{command} with a {kind} at the transcript path");
            let env = TestEnv::new();
            let t = env.runtime().join(DEFAULT_KEY);
            write_transcript(&t, BODY);
            let args = if command == "seal" {
                let tf = managed(&env, DEFAULT_KEY, holder.pid());
                seal_args(&tf, DEFAULT_KEY)
            } else {
                sealed(&env, DEFAULT_KEY, holder.pid());
                certified_commands(&env, DEFAULT_KEY, holder.pid()).into_iter().find(|(n, _)| *n == command).unwrap().1
            };
            std::fs::remove_file(&t).unwrap();
            let _listener = make(&t);
            assert_refused(&env, &strs(&args), UNSAFE, &what);
        }
    }
}

// ---------------------------------------------------------------------------------------
// 3. a hard link to the transcript after a writerctl seal
// ---------------------------------------------------------------------------------------

#[test]
fn a_hard_link_to_the_transcript_after_a_writerctl_seal_is_a_changed_transcript() {
    let holder = LiveHolder::start();
    for (place, command) in
        [("inside R", "takeover"), ("outside R", "takeover"), ("inside R", "acquire --managed"), ("inside R", "verify")]
    {
        let what = format!("{command} after a hard link {place}");
        let env = TestEnv::new();
        let t = env.runtime().join(DEFAULT_KEY);
        write_transcript(&t, BODY);
        sealed(&env, DEFAULT_KEY, holder.pid());
        let link = match place {
            "inside R" => env.runtime().join("chats/second-name.jsonl"),
            _ => env.tmp.path().join("second-name.jsonl"),
        };
        std::fs::hard_link(&t, &link).unwrap();
        let args =
            certified_commands(&env, DEFAULT_KEY, holder.pid()).into_iter().find(|(n, _)| *n == command).unwrap().1;
        assert_refused(&env, &strs(&args), CHANGED, &what);
    }
}

// ---------------------------------------------------------------------------------------
// 4. the lock directory is a symlink
// ---------------------------------------------------------------------------------------

#[test]
fn a_symlinked_lock_directory_is_unavailable_for_every_command_and_nothing_moves_through_it() {
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    // (name, stage the session in the real directory, then the command to run)
    type Stager = fn(&TestEnv, u32) -> Vec<String>;
    let cases: Vec<(&str, Stager)> = vec![
        ("acquire over a dead owner's lock", |env, _| {
            stage(&env.lock(S), qwen_active_dead(S, "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f").as_bytes());
            vec![
                "acquire".into(),
                "--json".into(),
                "--session".into(),
                S.into(),
                "--token-file".into(),
                token_path(env, "new"),
            ]
        }),
        ("acquire --managed of a seal", |env, p| {
            write_transcript(&env.runtime().join(DEFAULT_KEY), BODY);
            sealed(env, DEFAULT_KEY, p);
            let p = p.to_string();
            ["acquire", "--managed", "--json", "--session", S, "--pid", &p, "--token-file", &token_path(env, "new")]
                .iter()
                .map(|s| s.to_string())
                .collect()
        }),
        ("release", |env, p| {
            let tf = token_path(env, "owner");
            let p = p.to_string();
            gated(env, &["acquire", "--json", "--session", S, "--pid", &p, "--token-file", &tf]).assert_ok();
            ["release", "--json", "--session", S, "--token-file", &tf].iter().map(|s| s.to_string()).collect()
        }),
        ("seal", |env, p| {
            write_transcript(&env.runtime().join(DEFAULT_KEY), BODY);
            let tf = managed(env, DEFAULT_KEY, p);
            seal_args(&tf, DEFAULT_KEY)
        }),
        ("takeover", |env, p| {
            write_transcript(&env.runtime().join(DEFAULT_KEY), BODY);
            sealed(env, DEFAULT_KEY, p);
            let p = p.to_string();
            ["takeover", "--json", "--session", S, "--pid", &p, "--token-file", &token_path(env, "new")]
                .iter()
                .map(|s| s.to_string())
                .collect()
        }),
        ("verify", |env, p| {
            write_transcript(&env.runtime().join(DEFAULT_KEY), BODY);
            sealed(env, DEFAULT_KEY, p);
            ["verify", "--json", "--session", S].iter().map(|s| s.to_string()).collect()
        }),
        ("recover of a residual claim", |env, _| {
            stage(
                &env.lock_dir().join(format!("{S}.lock.claim")),
                qwen_active_dead(S, "3c3c3c3c-7d7d-4e4e-8f8f-a0a0a0a0a0a0").as_bytes(),
            );
            ["recover", "--json", "--session", S, "--writers-fenced", "--yes"].iter().map(|s| s.to_string()).collect()
        }),
    ];
    let _ = pid;
    for (what, stager) in cases {
        let env = TestEnv::new();
        let args = stager(&env, holder.pid());
        let locks = env.lock_dir();
        let real = env.runtime().join("real-locks");
        std::fs::rename(&locks, &real).unwrap();
        std::os::unix::fs::symlink(&real, &locks).unwrap();
        assert_refused(&env, &strs(&args), UNAVAILABLE, what);
    }
}

// ---------------------------------------------------------------------------------------
// 5. mode-000 lock and transcript for an unprivileged user
// ---------------------------------------------------------------------------------------

const NOBODY: u32 = 65534;

/// Why the unprivileged cases cannot run here, if they cannot.
fn setpriv_unavailable() -> Option<String> {
    if rustix::process::geteuid().as_raw() != 0 {
        return Some("not running as root".into());
    }
    match Command::new("setpriv")
        .args([
            format!("--reuid={NOBODY}"),
            format!("--regid={NOBODY}"),
            "--clear-groups".into(),
            BIN.into(),
            "--version".into(),
        ])
        .output()
    {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!("setpriv cannot run writerctl as {NOBODY}: {}", String::from_utf8_lossy(&o.stderr))),
        Err(e) => Some(format!("no setpriv: {e}")),
    }
}

/// Runs `args` plus `--runtime-dir R` as uid/gid 65534 (gate on), bounded.
#[track_caller]
fn as_nobody(env: &TestEnv, args: &[&str]) -> Run {
    let mut c = Command::new("setpriv");
    c.env_clear()
        .env("HOME", env.tmp.path())
        .env("TMPDIR", env.tmp.path())
        .env("PATH", "/usr/bin:/bin")
        .env(GATE.0, GATE.1)
        .stdin(std::process::Stdio::null())
        .args([format!("--reuid={NOBODY}"), format!("--regid={NOBODY}"), "--clear-groups".into(), BIN.into()])
        .args(args)
        .arg("--runtime-dir")
        .arg(env.runtime());
    run_bounded(c, LIMIT).unwrap_or_else(|| panic!("`{}` as {NOBODY} hung", args.join(" ")))
}

/// A scratch tree owned by 65534, so that only the mode-000 file is out of its reach.
fn nobody_env() -> TestEnv {
    let env = TestEnv::new();
    env.runtime();
    let ok = Command::new("chown").args(["-R", &format!("{NOBODY}:{NOBODY}")]).arg(env.tmp.path()).status().unwrap();
    assert!(ok.success());
    env
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[track_caller]
fn assert_refused_as_nobody(env: &TestEnv, args: &[&str], want: &[(i32, &str)], what: &str) -> (i32, String) {
    let before = snapshot(env);
    let r = as_nobody(env, args);
    let got = (r.code, try_error_code(&r).unwrap_or_default());
    assert!(
        want.iter().any(|(e, c)| (*e, *c) == (got.0, got.1.as_str())),
        "{what}: `{}` as {NOBODY} gave {got:?}, want one of {want:?}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        r.stdout,
        r.stderr
    );
    let after = snapshot(env);
    assert!(before == after, "{what}: `{}` changed files: {}", args.join(" "), diff(&before, &after));
    got
}

#[test]
fn mode_000_lock_and_transcript_files_fail_closed_for_an_unprivileged_user() {
    if let Some(why) = setpriv_unavailable() {
        eprintln!("SKIPPED mode_000_lock_and_transcript_files_fail_closed_for_an_unprivileged_user: {why}");
        return;
    }
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    // Permission denied is the environment, not "retry later" (issue 22): exit 2.
    let lock_rules = [ENV_REFUSED];

    // The lock file at mode 000: acquire, release, seal, takeover and acquire --managed.
    {
        let env = nobody_env();
        let tf = token_path(&env, "owner");
        as_nobody(&env, &["acquire", "--json", "--session", S, "--pid", &pid, "--token-file", &tf]).assert_ok();
        chmod(&env.lock(S), 0o000);
        let other = token_path(&env, "other");
        assert_refused_as_nobody(
            &env,
            &["acquire", "--json", "--session", S, "--pid", &pid, "--token-file", &other],
            &lock_rules,
            "acquire of a mode-000 lock",
        );
        assert_refused_as_nobody(
            &env,
            &["release", "--json", "--session", S, "--token-file", &tf],
            &lock_rules,
            "release of a mode-000 lock",
        );
    }
    {
        let env = nobody_env();
        write_transcript(&env.runtime().join(DEFAULT_KEY), BODY);
        let ok = Command::new("chown").args(["-R", &format!("{NOBODY}:{NOBODY}")]).arg(env.runtime()).status().unwrap();
        assert!(ok.success());
        let tf = token_path(&env, "owner");
        as_nobody(&env, &["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", &tf])
            .assert_ok();
        chmod(&env.lock(S), 0o000);
        assert_refused_as_nobody(
            &env,
            &["seal", "--json", "--session", S, "--token-file", &tf],
            &lock_rules,
            "seal of a mode-000 lock",
        );
        chmod(&env.lock(S), 0o600);
        as_nobody(&env, &["seal", "--json", "--session", S, "--token-file", &tf]).assert_ok();
        chmod(&env.lock(S), 0o000);
        let new = token_path(&env, "new");
        assert_refused_as_nobody(
            &env,
            &["takeover", "--json", "--session", S, "--pid", &pid, "--token-file", &new],
            &lock_rules,
            "takeover of a mode-000 seal",
        );
        assert_refused_as_nobody(
            &env,
            &["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", &new],
            &lock_rules,
            "acquire --managed of a mode-000 seal",
        );
    }

    // The transcript at mode 000: the documented codes are 2 (permission denied) or 4.
    let transcript_rules = [ENV_REFUSED, UNSAFE, CHANGED];
    let mut seen = Vec::new();
    {
        let env = nobody_env();
        write_transcript(&env.runtime().join(DEFAULT_KEY), BODY);
        let ok = Command::new("chown").args(["-R", &format!("{NOBODY}:{NOBODY}")]).arg(env.runtime()).status().unwrap();
        assert!(ok.success());
        let tf = token_path(&env, "owner");
        as_nobody(&env, &["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", &tf])
            .assert_ok();
        chmod(&env.runtime().join(DEFAULT_KEY), 0o000);
        let got = assert_refused_as_nobody(
            &env,
            &["seal", "--json", "--session", S, "--token-file", &tf],
            &transcript_rules,
            "seal of a mode-000 transcript",
        );
        seen.push(("seal", got));
        chmod(&env.runtime().join(DEFAULT_KEY), 0o600);
        as_nobody(&env, &["seal", "--json", "--session", S, "--token-file", &tf]).assert_ok();
        chmod(&env.runtime().join(DEFAULT_KEY), 0o000);
        let new = token_path(&env, "new");
        for (name, args) in [
            ("takeover", vec!["takeover", "--json", "--session", S, "--pid", &pid, "--token-file", &new]),
            (
                "acquire --managed",
                vec!["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", &new],
            ),
            ("verify", vec!["verify", "--json", "--session", S]),
        ] {
            let got =
                assert_refused_as_nobody(&env, &args, &transcript_rules, &format!("{name} of a mode-000 transcript"));
            seen.push((name, got));
        }
    }
    eprintln!("mode-000 transcript as uid {NOBODY}: {seen:?}");
    // One behaviour for every command that reads the transcript: it cannot be opened.
    for (name, got) in &seen {
        assert_eq!(
            (got.0, got.1.as_str()),
            ENV_REFUSED,
            "{name}: a transcript this user may not read is an environment error (issue 22)"
        );
    }
}

// ---------------------------------------------------------------------------------------
// 6. a full file system
// ---------------------------------------------------------------------------------------

/// A tmpfs mounted over `dir`, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Result<Tmpfs, String> {
        if rustix::process::geteuid().as_raw() != 0 {
            return Err("not running as root".into());
        }
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !o.status.success() {
            return Err(format!("mount failed: {}", String::from_utf8_lossy(&o.stderr)));
        }
        Ok(Tmpfs(dir.to_owned()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Writes zeros into `R/filler` until the file system is full.
fn fill(dir: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("filler")).unwrap();
    let chunk = [0u8; 512];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(28) => break,
            Err(e) => panic!("filling the tmpfs: {e}"),
        }
    }
    // Nothing is left for a record: even a tiny new file cannot take one byte.
    let probe = dir.join("probe");
    let r = std::fs::write(&probe, b"x");
    let _ = std::fs::remove_file(&probe);
    assert!(r.is_err(), "the tmpfs still has room after filling");
}

#[test]
fn a_full_file_system_fails_closed_without_a_partial_record() {
    let env = TestEnv::new();
    let r = env.runtime();
    let mnt = match Tmpfs::mount(&r, "64k") {
        Ok(m) => m,
        Err(why) => {
            eprintln!("SKIPPED the tmpfs ENOSPC cases ({why}); running the failpoint variant instead");
            let holder = LiveHolder::start();
            let pid = holder.pid().to_string();
            let tf = token_path(&env, "new");
            let before = snapshot(&env);
            let run = cli_bounded(
                &env,
                &["acquire", "--json", "--session", S, "--pid", &pid, "--token-file", &tf],
                &[("WRITERCTL_FAILPOINTS", "acquire.before_install=error")],
                LIMIT,
            )
            .unwrap();
            assert_eq!((run.code, try_error_code(&run).as_deref()), (75, Some(UNAVAILABLE.1)), "{}", run.stdout);
            assert!(env.lock(S).symlink_metadata().is_err(), "a failed acquire left a primary");
            assert_eq!(before, snapshot(&env));
            return;
        }
    };
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();

    // The session states are staged before the disk fills: a managed owner (for seal) in one
    // session, a sealed one (for takeover) in another, nothing in a third (for acquire).
    const SEAL_S: &str = "hostile-seal";
    const TAKE_S: &str = "hostile-takeover";
    let key = |s: &str| format!("chats/{s}.jsonl");
    write_transcript(&r.join(key(SEAL_S)), BODY);
    write_transcript(&r.join(key(TAKE_S)), BODY);
    let seal_tf = token_path(&env, "seal-owner");
    gated(&env, &["acquire", "--managed", "--json", "--session", SEAL_S, "--pid", &pid, "--token-file", &seal_tf])
        .assert_ok();
    let take_tf = token_path(&env, "take-owner");
    gated(&env, &["acquire", "--managed", "--json", "--session", TAKE_S, "--pid", &pid, "--token-file", &take_tf])
        .assert_ok();
    gated(&env, &["seal", "--json", "--session", TAKE_S, "--token-file", &take_tf]).assert_ok();
    fill(&r);

    let new = token_path(&env, "new");
    assert_refused(
        &env,
        &["acquire", "--json", "--session", S, "--pid", &pid, "--token-file", &new],
        UNAVAILABLE,
        "acquire on a full file system",
    );
    assert!(env.lock(S).symlink_metadata().is_err(), "a partial record at the primary path");
    assert!(
        !env.lock_dir_names().iter().any(|n| n.starts_with(&format!("{S}.lock"))),
        "files of the failed acquire: {:?}",
        env.lock_dir_names()
    );
    assert_refused(
        &env,
        &["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", &new],
        UNAVAILABLE,
        "acquire --managed on a full file system",
    );
    assert_refused(
        &env,
        &["seal", "--json", "--session", SEAL_S, "--token-file", &seal_tf],
        UNAVAILABLE,
        "seal on a full file system (the active lock is kept)",
    );
    assert_refused(
        &env,
        &["takeover", "--json", "--session", TAKE_S, "--pid", &pid, "--token-file", &new],
        UNAVAILABLE,
        "takeover on a full file system (the seal is kept)",
    );
    // Room again: the kept states still work.
    std::fs::remove_file(r.join("filler")).unwrap();
    gated(&env, &["seal", "--json", "--session", SEAL_S, "--token-file", &seal_tf]).assert_ok();
    gated(&env, &["takeover", "--json", "--session", TAKE_S, "--pid", &pid, "--token-file", &new]).assert_ok();
    drop(mnt);
}

// ---------------------------------------------------------------------------------------
// 7. issue 22: other local users and hostile files
// ---------------------------------------------------------------------------------------

/// Exit 2, `invalid_argument`: refused because of the environment (an untrusted directory,
/// a file that is not a small regular file, a name too long, permission denied, read-only).
const ENV_REFUSED: (i32, &str) = (2, "invalid_argument");

fn is_root() -> bool {
    rustix::process::geteuid().as_raw() == 0
}

/// Runs `cmd args` until it succeeds, at most five times: `useradd` and `userdel` take the
/// passwd lock, which tests creating users in parallel contend for.
fn admin(cmd: &str, args: &[&str]) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..20 {
        match Command::new(cmd).args(args).output() {
            Ok(o) if o.status.success() => return Ok(()),
            Ok(o) => last = String::from_utf8_lossy(&o.stderr).into_owned(),
            Err(e) => return Err(format!("{cmd}: {e}")),
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Err(format!("{cmd} {}: {last}", args.join(" ")))
}

/// A throwaway local user: name, uid, gid.
struct User {
    name: String,
    uid: u32,
    gid: u32,
}

/// Two throwaway local users, deleted on drop. `None` (after a loud skip, or a panic under
/// `WRITERCTL_REQUIRE_SERVICES=1`) when this process cannot create users.
struct Users(Vec<User>);

impl Users {
    fn create(test: &str) -> Option<Users> {
        if !is_root() {
            crate::services::skip(test, "creating local users needs root");
            return None;
        }
        let mut users = Users(Vec::new());
        for _ in 0..2 {
            let name = format!("wctl{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
            if let Err(why) = admin("useradd", &["--no-create-home", "--user-group", "--shell", "/bin/false", &name]) {
                crate::services::skip(test, &why);
                return None;
            }
            let id = |flag: &str| -> u32 {
                let o = Command::new("id").args([flag, &name]).output().unwrap();
                String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
            };
            let (uid, gid) = (id("-u"), id("-g"));
            users.0.push(User { name, uid, gid });
        }
        Some(users)
    }
}

impl Drop for Users {
    fn drop(&mut self) {
        for u in &self.0 {
            let _ = admin("userdel", &[&u.name]);
        }
    }
}

/// Runs `program args` as `user` (gate on, cleared environment), bounded.
#[track_caller]
fn as_user(env: &TestEnv, user: &User, program: &str, args: &[&str]) -> Run {
    let mut c = Command::new("setpriv");
    c.env_clear()
        .env("HOME", env.tmp.path())
        .env("PATH", "/usr/bin:/bin")
        .env(GATE.0, GATE.1)
        .stdin(std::process::Stdio::null())
        .args([format!("--reuid={}", user.uid), format!("--regid={}", user.gid), "--clear-groups".into()])
        .arg(program)
        .args(args);
    run_bounded(c, LIMIT).unwrap_or_else(|| panic!("`{program} {}` as {} hung", args.join(" "), user.name))
}

/// A plain `acquire` for `pid` (as root, gate on) that must be refused with exit 2 and
/// change nothing.
#[track_caller]
fn refused_acquire(env: &TestEnv, pid: &str, what: &str) -> Run {
    assert_refused(env, &["acquire", "--json", "--session", S, "--pid", pid], ENV_REFUSED, what)
}

fn chown_to(user: &User, path: &Path) {
    let ok = Command::new("chown").arg(format!("{}:{}", user.uid, user.gid)).arg(path).status().unwrap();
    assert!(ok.success(), "chown {}", path.display());
}

/// `writerctl args --runtime-dir R` as `user`.
#[track_caller]
fn writerctl_as(env: &TestEnv, user: &User, args: &[&str]) -> Run {
    let r = env.runtime();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--runtime-dir", r.to_str().unwrap()]);
    as_user(env, user, BIN, &all)
}

#[track_caller]
fn assert_code(r: &Run, want: (i32, &str), what: &str) {
    assert_eq!(
        (r.code, try_error_code(r).as_deref()),
        (want.0, Some(want.1)),
        "{what}\nstdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
}

#[test]
fn a_lock_directory_or_runtime_tmp_another_user_controls_is_refused_before_anything_is_written() {
    let test = "a_lock_directory_or_runtime_tmp_another_user_controls_is_refused_before_anything_is_written";
    let Some(users) = Users::create(test) else { return };
    let (a, b) = (&users.0[0], &users.0[1]);
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    let env = TestEnv::new();
    let r = env.runtime();
    chmod(env.tmp.path(), 0o755);
    chmod(&r, 0o755);
    // The attack of issue 22: R/tmp is a shared 1777 directory, and user A creates the lock
    // directory first, mode 0777.
    std::fs::create_dir(r.join("tmp")).unwrap();
    chmod(&r.join("tmp"), 0o1777);
    let locks = r.join("tmp/session-writer-locks");
    as_user(&env, a, "mkdir", &[locks.to_str().unwrap()]).assert_ok();
    as_user(&env, a, "chmod", &["0777", locks.to_str().unwrap()]).assert_ok();

    let refused = refused_acquire(&env, &pid, "root's acquire in a lock directory user A made");
    assert!(refused.stdout.contains(&format!("owned by uid {}", a.uid)), "{}", refused.stdout);
    assert!(refused.stdout.contains("chown"), "the hint says what to run: {}", refused.stdout);
    for cmd in [vec!["status", "--json"], vec!["status", "--json", "--session", S]] {
        assert_refused(&env, &cmd, ENV_REFUSED, "root's status over user A's lock directory");
    }

    // The other user B could write there (0777), and must not either; nor A while the mode
    // lets B in.
    let before = snapshot(&env);
    for (user, why) in [(b, format!("owned by uid {}", a.uid)), (a, "mode 0777".to_string())] {
        let run = writerctl_as(&env, user, &["acquire", "--json", "--session", S, "--pid", &pid]);
        assert_code(&run, ENV_REFUSED, &format!("acquire as {} in A's 0777 lock directory", user.name));
        assert!(run.stdout.contains(&why), "{}", run.stdout);
    }
    assert!(before == snapshot(&env), "a refused acquire changed files: {}", diff(&before, &snapshot(&env)));

    // Owner-only, A's directory is A's: A acquires, and B cannot move A's record aside.
    as_user(&env, a, "chmod", &["0700", locks.to_str().unwrap()]).assert_ok();
    writerctl_as(&env, a, &["acquire", "--json", "--session", S, "--pid", &pid]).assert_ok();
    refused_acquire(&env, &pid, "root's acquire in user A's private lock directory");
    let run = writerctl_as(&env, b, &["acquire", "--json", "--session", S, "--pid", &pid]);
    assert!(run.code != 0, "B acquired in A's lock directory:\n{}", run.stdout);

    // R/tmp itself owned by A (no sticky bit): refused before the lock directory is made.
    let env = TestEnv::new();
    let r = env.runtime();
    chmod(env.tmp.path(), 0o755);
    chmod(&r, 0o755);
    std::fs::create_dir(r.join("tmp")).unwrap();
    chown_to(a, &r.join("tmp"));
    let refused = refused_acquire(&env, &pid, "root's acquire under an R/tmp user A owns");
    assert!(refused.stdout.contains("runtime tmp directory"), "{}", refused.stdout);
    assert!(!r.join("tmp/session-writer-locks").exists(), "the lock directory was created in A's R/tmp");
}

#[test]
fn a_transcript_directory_another_user_controls_is_refused_by_seal() {
    let test = "a_transcript_directory_another_user_controls_is_refused_by_seal";
    let Some(users) = Users::create(test) else { return };
    let a = &users.0[0];
    let holder = LiveHolder::start();
    for how in ["owned by user A", "world-writable without the sticky bit"] {
        let env = TestEnv::new();
        let chats = env.runtime().join("chats");
        write_transcript(&env.runtime().join(DEFAULT_KEY), BODY);
        let tf = managed(&env, DEFAULT_KEY, holder.pid());
        if how == "owned by user A" {
            chown_to(a, &chats);
        } else {
            chmod(&chats, 0o777);
        }
        let r = assert_refused(&env, &strs(&seal_args(&tf, DEFAULT_KEY)), ENV_REFUSED, &format!("seal, R/chats {how}"));
        assert!(r.stdout.contains("transcript directory"), "{}", r.stdout);
    }
}

#[test]
fn a_world_writable_lock_directory_is_refused_without_another_user() {
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    let env = TestEnv::new();
    chmod(&env.lock_dir(), 0o777);
    let r = refused_acquire(&env, &pid, "acquire in a 0777 lock directory");
    assert!(r.stdout.contains("chmod go-w"), "{}", r.stdout);
    // The sticky bit makes a shared directory safe to use (only a file's owner renames it).
    chmod(&env.lock_dir(), 0o1777);
    gated(&env, &["acquire", "--json", "--session", S, "--pid", &pid]).assert_ok();
}

/// The control socket's name for a lock path (the supervisor's rule: 10 bytes of SHA-256).
fn control_socket_name(lock_path: &Path) -> String {
    format!("{}.sock", &sha256_hex(lock_path.as_os_str().as_encoded_bytes())[..20])
}

#[test]
fn runs_control_socket_directory_swapped_for_a_symlink_never_redirects_the_chmod() {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    let env = TestEnv::new();
    let r = env.runtime();
    // XDG_RUNTIME_DIR inside a directory someone else can rename in (a plain `su`).
    let xdg = env.tmp.path().join("xdg");
    std::fs::create_dir(&xdg).unwrap();
    // The victim: a file that must keep mode 0644, and the trap the symlink leads to.
    let victim = env.tmp.path().join("victim");
    std::fs::write(&victim, b"not yours\n").unwrap();
    chmod(&victim, 0o644);
    let trap = env.tmp.path().join("trap");
    std::fs::create_dir(&trap).unwrap();
    let name = control_socket_name(&env.lock(S));
    std::os::unix::fs::symlink(&victim, trap.join(&name)).unwrap();
    std::os::unix::fs::symlink(&trap, xdg.join("decoy")).unwrap();

    // The attacker: swaps `xdg/writerctl` and the symlink `xdg/decoy` atomically, over and
    // over, for as long as the runs below last.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, xdg) = (stop.clone(), xdg.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if renameat_with(CWD, xdg.join("writerctl"), CWD, xdg.join("decoy"), RenameFlags::EXCHANGE).is_ok() {
                    swaps += 1;
                } else {
                    std::thread::yield_now();
                }
            }
            swaps
        })
    };
    // A bounded loop: at most 400 runs or 10 s (the race hit within 5–25 runs before the fix).
    let started = std::time::Instant::now();
    let mut runs = 0;
    let mut bound = 0;
    while runs < 400 && started.elapsed() < Duration::from_secs(10) {
        let mut c = env.cmd();
        c.env("XDG_RUNTIME_DIR", &xdg).args(["run", "--session", S, "--runtime-dir"]).arg(&r).args(["--", "true"]);
        let run = run_bounded(c, LIMIT).expect("run hung");
        runs += 1;
        if run.code == 0 {
            bound += 1;
        }
        let mode = std::fs::metadata(&victim).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o644, "run {runs} chmod'ed the file a symlink swap pointed at\n{}", run.stderr);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    eprintln!("control-socket swap race: {runs} runs ({bound} bound their socket), {swaps} swaps");
    assert!(swaps > 0, "the swap loop never ran");
    // Never a run that bound through the trap either.
    assert!(std::fs::symlink_metadata(trap.join(&name)).unwrap().file_type().is_symlink());
}

#[test]
fn record_fields_with_control_characters_are_escaped_in_text_output() {
    let env = TestEnv::new();
    // A foreign-host record (fenced: a conflict) whose hostname carries ESC, CR and LF.
    let host = r"evil\u001b[2J\r\nstate:     missing\u009b";
    stage(&env.lock(S), qwen_active(S, "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f", 4242, None, None, host).as_bytes());
    let status = gated(&env, &["status", "--session", S]);
    let acquire = gated(&env, &["acquire", "--session", S]);
    assert_eq!(acquire.code, 3, "{}", acquire.stderr);
    for (what, text) in [("status", &status.stdout), ("acquire's conflict error", &acquire.stderr)] {
        assert!(!text.contains(['\u{1b}', '\r', '\u{9b}']), "{what} printed a raw control character:\n{text:?}");
        assert!(text.contains(r"evil\u{1b}[2J\r\nstate:"), "{what} does not show the escaped hostname:\n{text}");
        let forged: Vec<&str> = text.lines().filter(|l| l.starts_with("state:") && l.contains("missing")).collect();
        assert!(forged.is_empty(), "{what} printed a forged line: {forged:?}");
    }
    assert_eq!(status.stdout.lines().filter(|l| l.starts_with("state:")).count(), 1, "{}", status.stdout);
    // JSON keeps the exact value (serde escapes it).
    let json: StatusJson = gated(&env, &["status", "--json", "--session", S]).json();
    assert_eq!(json.owner.unwrap().hostname, "evil\u{1b}[2J\r\nstate:     missing\u{9b}");
}

#[test]
fn status_warns_about_a_sealed_transcript_others_can_write() {
    let holder = LiveHolder::start();
    let env = TestEnv::new();
    let t = env.runtime().join(DEFAULT_KEY);
    write_transcript(&t, BODY);
    chmod(&t, 0o666);
    sealed(&env, DEFAULT_KEY, holder.pid());
    let st: StatusJson = gated(&env, &["status", "--json", "--session", S]).json();
    assert_eq!(st.state, "sealed");
    let problem = st.problem.unwrap_or_default();
    assert!(problem.contains("world-writable (mode 0666)"), "{problem}");
    let text = gated(&env, &["status", "--session", S]);
    assert!(text.stdout.contains("problem:   the sealed transcript is world-writable"), "{}", text.stdout);
}

/// `mount --bind from to`, unmounted on drop.
struct BindMount(PathBuf);

impl BindMount {
    fn new(from: &Path, to: &Path) -> BindMount {
        let o = Command::new("mount").arg("--bind").arg(from).arg(to).output().unwrap();
        assert!(o.status.success(), "mount --bind: {}", String::from_utf8_lossy(&o.stderr));
        BindMount(to.to_owned())
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_file_that_lies_about_its_size_is_never_certified() {
    let test = "a_file_that_lies_about_its_size_is_never_certified";
    if !is_root() {
        crate::services::skip(test, "bind mounts need root");
        return;
    }
    let holder = LiveHolder::start();
    // A procfs file bind-mounted over the transcript: size 0, yet it yields bytes.
    {
        let env = TestEnv::new();
        let t = env.runtime().join(DEFAULT_KEY);
        write_transcript(&t, BODY);
        let tf = managed(&env, DEFAULT_KEY, holder.pid());
        let _m = BindMount::new(Path::new("/proc/version"), &t);
        assert_eq!(std::fs::metadata(&t).unwrap().len(), 0, "procfs reports size 0");
        let r = assert_refused(&env, &strs(&seal_args(&tf, DEFAULT_KEY)), UNSAFE, "seal of a bind-mounted procfs file");
        assert!(r.stdout.contains("another mount"), "{}", r.stdout);
    }
    // The same file reached inside a bind-mounted procfs directory (one mount for both):
    // caught by reading past the size it reports.
    {
        let env = TestEnv::new();
        let dir = env.runtime().join("kernel");
        std::fs::create_dir(&dir).unwrap();
        let key = "kernel/hostname";
        let tf = managed(&env, key, holder.pid());
        let _m = BindMount::new(Path::new("/proc/sys/kernel"), &dir);
        let lock_before = std::fs::read(env.lock(S)).unwrap();
        let r = gated(&env, &strs(&seal_args(&tf, key)));
        assert_code(&r, UNSAFE, "seal of a procfs file that lies about its size");
        assert!(r.stdout.contains("more bytes than its size"), "{}", r.stdout);
        assert_eq!(std::fs::read(env.lock(S)).unwrap(), lock_before, "the active lock changed");
    }
}

#[test]
fn a_fifo_or_device_as_config_or_token_file_is_refused_without_hanging() {
    let env = TestEnv::new();
    let fifo = env.tmp.path().join("fifo");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    for config in [fifo, "/dev/zero"] {
        for args in [vec!["status", "--json"], vec!["status", "--json", "--session", S]] {
            let r = cli_bounded(&env, &args, &[GATE, ("WRITERCTL_CONFIG", config)], LIMIT)
                .unwrap_or_else(|| panic!("`{}` hung with WRITERCTL_CONFIG={config}", args.join(" ")));
            assert_eq!(r.code, 2, "WRITERCTL_CONFIG={config}\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
            assert!(format!("{}{}", r.stdout, r.stderr).contains("config"), "{}{}", r.stdout, r.stderr);
        }
    }
    for token in [fifo, "/dev/zero"] {
        let r = gated(&env, &["release", "--json", "--session", S, "--token-file", token]);
        assert_code(&r, ENV_REFUSED, &format!("release --token-file {token}"));
        assert!(r.stdout.contains("not a regular file"), "{}", r.stdout);
    }
}

#[test]
fn a_session_id_too_long_for_its_side_files_is_refused_alike_by_status_and_acquire() {
    let env = TestEnv::new();
    env.lock_dir();
    let long = "s".repeat(250);
    let before = snapshot(&env);
    let status = gated(&env, &["status", "--json", "--session", &long]);
    assert_code(&status, ENV_REFUSED, "status of a 250-character id");
    let acquire = gated(&env, &["acquire", "--json", "--session", &long]);
    assert_code(&acquire, ENV_REFUSED, "acquire of a 250-character id");
    assert!(acquire.stdout.contains("shorter session id"), "{}", acquire.stdout);
    assert!(before == snapshot(&env), "{}", diff(&before, &snapshot(&env)));
}

#[test]
fn a_name_too_long_or_a_read_only_filesystem_is_an_environment_error_not_retry_later() {
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    // ENAMETOOLONG: a transcript key component longer than NAME_MAX.
    let env = TestEnv::new();
    std::fs::create_dir(env.runtime().join("chats")).unwrap();
    let key = format!("chats/{}.jsonl", "k".repeat(300));
    let r = gated(&env, &["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--transcript-key", &key]);
    assert_code(&r, ENV_REFUSED, "acquire with a transcript name too long for the filesystem");
    assert!(r.stdout.contains("longer than the filesystem allows"), "{}", r.stdout);
    assert!(env.lock(S).symlink_metadata().is_err(), "a failed acquire left a lock");

    // EROFS: the runtime directory on a read-only mount.
    let env = TestEnv::new();
    let rt = env.runtime();
    let mnt = match Tmpfs::mount(&rt, "1m") {
        Ok(m) => m,
        Err(why) => {
            crate::services::skip("a_name_too_long_or_a_read_only_filesystem (EROFS)", &why);
            return;
        }
    };
    env.lock_dir();
    let o = Command::new("mount").args(["-o", "remount,ro"]).arg(&rt).output().unwrap();
    assert!(o.status.success(), "remount ro: {}", String::from_utf8_lossy(&o.stderr));
    let r = refused_acquire(&env, &pid, "acquire on a read-only filesystem");
    assert!(r.stdout.contains("read-only"), "{}", r.stdout);
    drop(mnt);
}

#[test]
fn running_out_of_descriptors_is_unavailable_never_tampering() {
    let holder = LiveHolder::start();
    let env = TestEnv::new();
    write_transcript(&env.runtime().join(DEFAULT_KEY), BODY);
    sealed(&env, DEFAULT_KEY, holder.pid());
    let before = snapshot(&env);
    // Issue 22: every descriptor limit from "almost none" to "plenty", so that each open in
    // verify, the transcript path re-check's included, fails with EMFILE at one of
    // them. Before the fix the re-check's EMFILE was told as "a symlink" (exit 4).
    let mut seen = BTreeMap::new();
    for limit in 4..=32 {
        let script = format!("ulimit -n {limit} && exec \"$WRITERCTL_BIN\" \"$@\"");
        let mut sh = Command::new("bash");
        sh.env_clear().env("WRITERCTL_BIN", BIN).env(GATE.0, GATE.1).env("HOME", env.tmp.path());
        sh.args(["-c", &script, "writerctl", "verify", "--json", "--session", S, "--runtime-dir"]).arg(env.runtime());
        let r = run_bounded(sh, LIMIT).expect("verify hung");
        let got = (r.code, try_error_code(&r).unwrap_or_default());
        assert!(
            matches!(got.0, 0 | 75),
            "verify with {limit} descriptors said {got:?}: EMFILE is not tampering\n{}{}",
            r.stdout,
            r.stderr
        );
        if got.0 == 75 {
            assert!(r.stdout.contains("EMFILE"), "the cause is named: {}", r.stdout);
        }
        seen.entry(got).or_insert(limit);
    }
    eprintln!("verify under descriptor limits (outcome: first limit): {seen:?}");
    assert!(seen.keys().any(|(code, _)| *code == 75), "no limit made verify run out of descriptors: {seen:?}");
    assert!(seen.keys().any(|(code, _)| *code == 0), "verify never succeeded: {seen:?}");
    assert!(before == snapshot(&env), "{}", diff(&before, &snapshot(&env)));
}
