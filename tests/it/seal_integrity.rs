//! Issue 21: a seal certifies only a stopped, drained, durable transcript, and nothing
//! destroys a seal but a takeover that stands.
//!
//! * item 0 — a takeover (or acquire) whose owner token cannot be delivered gives the lock
//!   back without losing what it replaced: a missing directory, a pre-created path, a full
//!   stdout and a failed fsync each leave the sealed record byte for byte;
//! * item 3 — on a filesystem with whole-second timestamps (a loop-mounted ext4 with
//!   128-byte inodes), a same-length rewrite inside a takeover's claim window fails closed;
//! * items 4 and 5 are proven at the engine level (`src/lockfile/fault_tests.rs`), item 1
//!   and 2 through `run` (`tests/it/run.rs`).

use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::services::skip;
use crate::support::*;

const GATE: (&str, &str) = ("WRITERCTL_SESSION_WRITER_LEASE", "1");
const LIMIT: Duration = Duration::from_secs(30);
const BODY: &[u8] = b"{\"type\":\"user\",\"text\":\"hi\"}\n";

/// `writerctl ARGS --runtime-dir R` with the gate on and `extra` variables.
fn cmd(env: &TestEnv, runtime: &Path, args: &[&str], extra: &[(&str, &str)]) -> Command {
    let mut c = env.cmd();
    c.args(args).arg("--runtime-dir").arg(runtime).env(GATE.0, GATE.1);
    for (k, v) in extra {
        c.env(k, v);
    }
    c
}

fn run(env: &TestEnv, runtime: &Path, args: &[&str], extra: &[(&str, &str)]) -> Run {
    run_bounded(cmd(env, runtime, args, extra), LIMIT).unwrap_or_else(|| panic!("`{}` hung", args.join(" ")))
}

/// A session sealed by a managed writer held by `holder`: returns the exact sealed bytes.
fn sealed_session(env: &TestEnv, runtime: &Path, s: &str, holder: &LiveHolder) -> Vec<u8> {
    let tok = env.tmp.path().join(format!("{s}.sealer.token"));
    let pid = holder.pid().to_string();
    run(
        env,
        runtime,
        &["acquire", "--managed", "--json", "--session", s, "--pid", &pid, "--token-file", tok.to_str().unwrap()],
        &[],
    )
    .assert_ok();
    let transcript = runtime.join(format!("chats/{s}.jsonl"));
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    std::fs::write(&transcript, BODY).unwrap();
    run(env, runtime, &["seal", "--json", "--session", s, "--token-file", tok.to_str().unwrap()], &[]).assert_ok();
    std::fs::read(lock_path(runtime, s)).unwrap()
}

fn lock_path(runtime: &Path, s: &str) -> PathBuf {
    runtime.join(format!("tmp/session-writer-locks/{s}.lock"))
}

/// The lock directory's entries for session `s`.
fn lock_dir_entries(runtime: &Path, s: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(runtime.join("tmp/session-writer-locks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(&format!("{s}.")))
        .collect();
    v.sort();
    v
}

/// The seal is still there, byte for byte, alone, and still takes a certified takeover.
#[track_caller]
fn assert_seal_intact(env: &TestEnv, runtime: &Path, s: &str, sealed: &[u8], holder: &LiveHolder, case: &str) {
    assert_eq!(std::fs::read(lock_path(runtime, s)).unwrap(), sealed, "{case}: the sealed record changed");
    assert_eq!(lock_dir_entries(runtime, s), vec![format!("{s}.lock")], "{case}: residue beside the seal");
    run(env, runtime, &["verify", "--json", "--session", s], &[]).assert_ok();
    let tok = env.tmp.path().join(format!("{s}.after.token"));
    let pid = holder.pid().to_string();
    let r = run(
        env,
        runtime,
        &["takeover", "--json", "--session", s, "--pid", &pid, "--token-file", tok.to_str().unwrap()],
        &[],
    );
    r.assert_ok();
    assert!(r.stderr.contains("event=takeover"), "{case}: {}", r.stderr);
}

/// stdout on `/dev/full`: every write fails with ENOSPC.
fn dev_full() -> Stdio {
    Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full"))
}

#[test]
fn a_takeover_that_cannot_deliver_its_token_leaves_the_seal_byte_for_byte() {
    let env = TestEnv::new();
    let r = env.runtime();
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    // A shared, sticky directory where another user already made the path (root can make
    // that user's file; anyone else makes it as themselves: O_EXCL refuses both the same).
    let shared = env.tmp.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let planted = shared.join("b.tok");
    std::fs::write(&planted, b"not yours\n").unwrap();
    if rustix::process::geteuid().is_root() {
        rustix::fs::chown(&planted, Some(rustix::fs::Uid::from_raw(65534)), Some(rustix::fs::Gid::from_raw(65534)))
            .unwrap();
    }
    let planted_meta = std::fs::metadata(&planted).unwrap();

    let cases: [(&str, usize); 4] = [
        ("token file in a missing directory", 0),
        ("token path pre-created by another user", 1),
        ("stdout on /dev/full", 2),
        ("token file fsync fails", 3),
    ];
    for (case, i) in cases {
        let s = format!("tok-{i}");
        let sealed = sealed_session(&env, &r, &s, &holder);
        let fresh = env.tmp.path().join(format!("fresh-{i}.tok"));
        let (out, want) = match i {
            0 => {
                let bad = env.tmp.path().join("nonexistent/b.tok");
                (
                    run(
                        &env,
                        &r,
                        &["takeover", "--json", "--session", &s, "--pid", &pid, "--token-file", bad.to_str().unwrap()],
                        &[],
                    ),
                    (2, "invalid_argument"),
                )
            }
            1 => (
                run(
                    &env,
                    &r,
                    &["takeover", "--json", "--session", &s, "--pid", &pid, "--token-file", planted.to_str().unwrap()],
                    &[],
                ),
                (2, "invalid_argument"),
            ),
            2 => {
                let mut c = cmd(&env, &r, &["takeover", "--session", &s, "--pid", &pid], &[]);
                c.stdout(dev_full()).stderr(Stdio::piped());
                let o = c.output().unwrap();
                let run = Run {
                    code: o.status.code().unwrap_or(-1),
                    stdout: String::new(),
                    stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
                };
                (run, (75, "session_writer_unavailable"))
            }
            _ => (
                run(
                    &env,
                    &r,
                    &["takeover", "--json", "--session", &s, "--pid", &pid, "--token-file", fresh.to_str().unwrap()],
                    &[("WRITERCTL_FAILPOINTS", "token_file.fsync=error")],
                ),
                (75, "session_writer_unavailable"),
            ),
        };
        assert_eq!(out.code, want.0, "{case}: stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
        assert!(out.stderr.contains(want.1) || out.stdout.contains(want.1), "{case}: {}\n{}", out.stdout, out.stderr);
        if want.0 == 75 {
            assert!(
                out.stderr.contains("restored") || out.stdout.contains("restored"),
                "{case}: say the seal was restored: {}{}",
                out.stdout,
                out.stderr
            );
        }
        assert!(!out.stderr.contains("event=takeover"), "{case}: an undone takeover must not be logged as one");
        assert!(!fresh.exists(), "{case}: the undelivered token file was left behind");
        assert_seal_intact(&env, &r, &s, &sealed, &holder, case);
    }
    let now = std::fs::metadata(&planted).unwrap();
    assert_eq!((now.ino(), now.uid(), now.len()), (planted_meta.ino(), planted_meta.uid(), planted_meta.len()));
    assert_eq!(std::fs::read(&planted).unwrap(), b"not yours\n", "the other user's file was touched");
}

#[test]
fn an_acquire_that_cannot_deliver_its_token_gives_back_only_what_it_took() {
    let env = TestEnv::new();
    let r = env.runtime();
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    // A missing lock: released again, nothing left.
    let mut c = cmd(&env, &r, &["acquire", "--session", "plain", "--pid", &pid], &[]);
    c.stdout(dev_full()).stderr(Stdio::piped());
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(75), "{err}");
    assert!(err.contains("released again"), "{err}");
    assert!(!lock_path(&r, "plain").exists());
    // `acquire --managed` that took over a seal: the seal comes back, never a release.
    let sealed = sealed_session(&env, &r, "managed", &holder);
    let mut c = cmd(&env, &r, &["acquire", "--managed", "--session", "managed", "--pid", &pid], &[]);
    c.stdout(dev_full()).stderr(Stdio::piped());
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(75), "{err}");
    assert!(err.contains("restored"), "{err}");
    assert_eq!(std::fs::read(lock_path(&r, "managed")).unwrap(), sealed);
}

// ---------------------------------------------------------------------------------------
// item 3: the racily-clean margin on a one-second filesystem
// ---------------------------------------------------------------------------------------

/// A loop-mounted filesystem, unmounted (lazily) on drop.
struct Mounted {
    dir: PathBuf,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// Mounts a fresh ext4 made with 128-byte inodes (whole-second timestamps) at `dir`; `Err`
/// says why not (not root, no mkfs.ext4, no loop devices).
fn one_second_fs(img: &Path, dir: &Path) -> Result<Mounted, String> {
    if !rustix::process::geteuid().is_root() {
        return Err("loop mounts need root".into());
    }
    let ok = |c: &mut Command| c.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    std::fs::File::create(img).and_then(|f| f.set_len(32 << 20)).map_err(|e| e.to_string())?;
    if !ok(Command::new("mkfs.ext4").args(["-q", "-F", "-I", "128"]).arg(img)) {
        return Err("mkfs.ext4 -I 128 failed or is missing".into());
    }
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    if !ok(Command::new("mount").args(["-o", "loop"]).arg(img).arg(dir)) {
        return Err("mount -o loop failed (no loop devices here?)".into());
    }
    Ok(Mounted { dir: dir.to_path_buf() })
}

fn now() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap()
}

/// One trial: seal, then a takeover paused inside its claim while the transcript is
/// rewritten in place with the same length. `None` when the rewrite missed the second of
/// the original write (the trial proves nothing; the caller tries again).
fn rewrite_in_claim_window(env: &TestEnv, runtime: &Path, s: &str, holder: &LiveHolder) -> Option<Run> {
    // Start early in a second, so write, seal, takeover and rewrite share it.
    while now().subsec_millis() > 150 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let sealed = sealed_session(env, runtime, s, holder);
    let written = std::fs::metadata(runtime.join(format!("chats/{s}.jsonl"))).unwrap().mtime();
    let gate = env.tmp.path().join(format!("{s}.gate"));
    let reached = env.tmp.path().join(format!("{s}.gate.reached"));
    let tok = env.tmp.path().join(format!("{s}.taker.token"));
    let pid = holder.pid().to_string();
    let spec = format!("takeover.after_claim=pause:{}", gate.display());
    let mut c = cmd(
        env,
        runtime,
        &["takeover", "--json", "--session", s, "--pid", &pid, "--token-file", tok.to_str().unwrap()],
        &[("WRITERCTL_FAILPOINTS", &spec)],
    );
    let child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let until = Instant::now() + LIMIT;
    while !reached.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(reached.exists(), "the takeover never reached its claim");
    // Same length, same inode, new content.
    let f = std::fs::OpenOptions::new().write(true).open(runtime.join(format!("chats/{s}.jsonl"))).unwrap();
    f.write_all_at(&BODY.to_ascii_uppercase(), 0).unwrap();
    drop(f);
    let same_second = now().as_secs() as i64 == written;
    std::fs::File::create(&gate).unwrap().flush().unwrap();
    let r = wait_child_bounded(child, LIMIT).expect("takeover hung");
    if !same_second {
        return None;
    }
    let _ = sealed;
    Some(r)
}

#[test]
fn a_same_length_rewrite_in_the_claim_window_fails_closed_on_a_one_second_filesystem() {
    const TEST: &str = "a_same_length_rewrite_in_the_claim_window_fails_closed_on_a_one_second_filesystem";
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    // A nanosecond filesystem (the scratch directory) always runs: it must fail closed too.
    let r = env.runtime();
    let fine = (0..10).find_map(|i| rewrite_in_claim_window(&env, &r, &format!("fine-{i}"), &holder));
    let fine = fine.expect("no trial kept the rewrite within one second");
    fine.assert_error(4, "session_transcript_changed");
    let mnt = env.tmp.path().join("ext4-128");
    let _mounted = match one_second_fs(&env.tmp.path().join("ext4-128.img"), &mnt) {
        Ok(m) => m,
        Err(why) => return skip(TEST, &why),
    };
    let r = mnt.join("runtime");
    std::fs::create_dir_all(&r).unwrap();
    for i in 0..10 {
        let s = format!("coarse-{i}");
        if let Some(run) = rewrite_in_claim_window(&env, &r, &s, &holder) {
            run.assert_error(4, "session_transcript_changed");
            let lock = std::fs::read_to_string(lock_path(&r, &s)).unwrap();
            assert!(lock.contains(r#""state":"sealed""#), "the seal must stay: {lock}");
            return;
        }
    }
    panic!("no trial kept the rewrite within one second");
}
