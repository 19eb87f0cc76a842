//! Hostile paths (README "Handoff", "Exit codes"; QWEN_FORMAT §1.1, §4): symlinks at every
//! component of the transcript path beneath R, dangling symlinks, FIFOs, sockets and
//! directories at the transcript path, a hard-linked transcript after a seal, a symlinked
//! lock directory, mode-000 lock and transcript files for an unprivileged user, and a full
//! file system. Each one must fail closed with its documented code and change nothing: the
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
    let lock_rules = [UNAVAILABLE];

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

    // The transcript at mode 000: the documented codes are 75 (it cannot be read) or 4.
    let transcript_rules = [UNAVAILABLE, UNSAFE, CHANGED];
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
        assert_eq!((got.0, got.1.as_str()), UNAVAILABLE, "{name}: a transcript that cannot be read is unavailable");
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
