//! Issue 27: never two writers on the shared volumes people actually run — the network
//! filesystem reproductions, each through the real binary on filesystems that behave like
//! the real thing (`fsmount.rs`):
//!
//! * two bindfs "hosts" over one "server" directory, each with its own client cache, and no
//!   `RENAME_NOREPLACE` (as NFS): reproductions 3 (`recover` exits 0 with the session still in
//!   transition), 4 (an `acquire` that cached the claim as missing wins during another
//!   host's transition) and 5 (a takeover hashes the client's cached pages, not what the
//!   server holds), a full `run` handoff from host A to host B, and the refusal of
//!   `fuse.bindfs` unless `WRITERCTL_ALLOW_FILESYSTEM` names it;
//! * exFAT (no hard links): refused with `filesystem_unsupported` whatever
//!   `WRITERCTL_ALLOW_FILESYSTEM` says, nothing left behind, and `run` exits instead of
//!   retrying forever;
//! * a real NFS server (nfs-ganesha, two `nosharecache` NFSv4.1 mounts as the two hosts)
//!   where this kernel has an NFS client: reproductions 3, 4, 5 and the `run` handoff again;
//!   a visible `SKIPPED` line with the reason where it has none (never a failure).
//!
//! Host A's runtime directory is `<mount A>/runtime`, host B's the same path under mount B:
//! lock files and transcript live once, on the "server". Every test on two hosts sets
//! `WRITERCTL_ALLOW_FILESYSTEM` to their type (`fuse.bindfs`, `nfs4`: every defence stays
//! on), except the one that checks the refusal. Holders are live local processes, so liveness is never the question.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fsmount::{Cache, NoHardLinks, PlainFuse, TwoHosts, mountinfo_type};
use crate::support::*;

const GATE: (&str, &str) = ("WRITERCTL_SESSION_WRITER_LEASE", "1");
/// No single command may take longer than this; a hang fails the test.
const LIMIT: Duration = Duration::from_secs(60);
const BODY: &[u8] = b"{\"type\":\"user\",\"text\":\"hello from host a\"}\n";

/// `writerctl ARGS --runtime-dir R`, cleared environment, the gate on, plus `extra`.
fn cmd(env: &TestEnv, runtime: &Path, args: &[&str], extra: &[(&str, &str)]) -> Command {
    let mut c = env.cmd();
    // `--runtime-dir` right after the subcommand: after `run ... --` it would be the writer's.
    let (sub, rest) = args.split_first().expect("a subcommand");
    c.arg(sub).arg("--runtime-dir").arg(runtime).args(rest).env(GATE.0, GATE.1);
    for (k, v) in extra {
        c.env(k, v);
    }
    c
}

/// Runs it, bounded.
fn cli(env: &TestEnv, runtime: &Path, args: &[&str], extra: &[(&str, &str)]) -> Run {
    run_bounded(cmd(env, runtime, args, extra), LIMIT).unwrap_or_else(|| panic!("`{}` hung", args.join(" ")))
}

/// The state `status --json` reports (read as plain JSON, so new fields do not matter).
fn state(env: &TestEnv, runtime: &Path, s: &str, extra: &[(&str, &str)]) -> String {
    let r = cli(env, runtime, &["status", "--json", "--session", s], extra);
    r.assert_ok();
    let v: Value = r.json();
    v["state"].as_str().unwrap_or_else(|| panic!("status without a state: {}", r.stdout)).to_owned()
}

fn lock_dir(runtime: &Path) -> PathBuf {
    runtime.join("tmp/session-writer-locks")
}

/// Names in the lock directory that belong to session `s`, sorted.
fn session_files(runtime: &Path, s: &str) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(lock_dir(runtime)) else { return Vec::new() };
    let mut v: Vec<String> = rd
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(&format!("{s}.lock")))
        .collect();
    v.sort();
    v
}

/// The record at `L` on the server, as JSON.
fn lock_record(server: &Path, s: &str) -> serde_json::Map<String, Value> {
    let raw = std::fs::read(lock_dir(server).join(format!("{s}.lock"))).unwrap();
    match serde_json::from_slice(&raw) {
        Ok(Value::Object(m)) => m,
        other => panic!("lock of {s} is not a JSON object: {other:?}"),
    }
}

/// `acquire --managed` for `holder` on the host at `runtime`, then the transcript written
/// there; returns the token file.
fn managed_writer(env: &TestEnv, runtime: &Path, s: &str, holder: &LiveHolder, allow: (&str, &str)) -> PathBuf {
    let tok = env.tmp.path().join(format!("{s}.a.token"));
    let pid = holder.pid().to_string();
    cli(
        env,
        runtime,
        &["acquire", "--managed", "--json", "--session", s, "--pid", &pid, "--token-file", tok.to_str().unwrap()],
        &[allow],
    )
    .assert_ok();
    let t = runtime.join(format!("chats/{s}.jsonl"));
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    std::fs::write(&t, BODY).unwrap();
    tok
}

/// A seal by host A's writer (acquire --managed, transcript, seal), all through mount A.
fn seal_on(env: &TestEnv, runtime: &Path, s: &str, holder: &LiveHolder, allow: (&str, &str)) {
    let tok = managed_writer(env, runtime, s, holder, allow);
    cli(env, runtime, &["seal", "--json", "--session", s, "--token-file", tok.to_str().unwrap()], &[allow]).assert_ok();
}

/// Waits (bounded) until `path` exists.
#[track_caller]
fn wait_for(path: &Path, what: &str) {
    let until = Instant::now() + LIMIT;
    while !path.exists() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Asserts a `--json` refusal with `filesystem_unsupported` (exit 2) whose message names
/// `fs_type` and, when given, what it lacks; never "retry later".
#[track_caller]
fn assert_unsupported(r: &Run, what: &str, fs_type: &str, lacks: Option<&str>) {
    let code = try_error_code(r);
    assert_eq!(
        (r.code, code.as_deref()),
        (2, Some("filesystem_unsupported")),
        "{what}: want exit 2 filesystem_unsupported\nstdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    let e: ErrorDoc = r.json();
    let all = format!("{} {}", e.error.message, e.error.hint.as_deref().unwrap_or(""));
    assert!(e.error.message.contains(fs_type), "{what}: the message must name {fs_type}: {}", e.error.message);
    if let Some(lacks) = lacks {
        assert!(e.error.message.contains(lacks), "{what}: the message must say it lacks {lacks}: {}", e.error.message);
    }
    assert!(!all.contains("retry later"), "{what}: a filesystem that cannot carry the protocol is no retry: {all}");
}

// ---------------------------------------------------------------------------------------
// the harness models what the reproductions need
// ---------------------------------------------------------------------------------------

#[test]
fn each_bindfs_host_caches_like_an_nfs_client() {
    const TEST: &str = "each_bindfs_host_caches_like_an_nfs_client";
    let Some(hosts) = TwoHosts::mount(TEST, Cache::STICKY) else { return };
    let (a, b) = (hosts.runtime_a(), hosts.runtime_b());
    // A name host B looked up as missing stays missing there after host A created it...
    assert!(!b.join("late").exists());
    std::fs::write(a.join("late"), b"x").unwrap();
    assert!(!b.join("late").exists(), "host B has no negative-entry cache");
    assert!(hosts.runtime_server().join("late").exists());
    // ...but an exclusive operation still asks the server (as `link` does over NFS).
    assert!(std::fs::OpenOptions::new().write(true).create_new(true).open(b.join("late")).is_err());
    // Bytes host B read stay what it read after a same-size rewrite on host A.
    std::fs::write(a.join("page"), b"before").unwrap();
    assert_eq!(std::fs::read(b.join("page")).unwrap(), b"before");
    std::fs::OpenOptions::new().write(true).open(a.join("page")).unwrap().write_all_at(b"AFTER!", 0).unwrap();
    assert_eq!(std::fs::read(hosts.runtime_server().join("page")).unwrap(), b"AFTER!");
    assert_eq!(std::fs::read(b.join("page")).unwrap(), b"before", "host B kept no pages");
    // And the type writerctl sees.
    assert_eq!(mountinfo_type(a.parent().unwrap()).as_deref(), Some("fuse.bindfs"));
}

// ---------------------------------------------------------------------------------------
// detection: fuse.bindfs refused unless allowed; no hard links refused always
// ---------------------------------------------------------------------------------------

#[test]
fn bindfs_is_refused_unless_writerctl_allow_filesystem_names_it() {
    const TEST: &str = "bindfs_is_refused_unless_writerctl_allow_filesystem_names_it";
    let Some(hosts) = TwoHosts::mount(TEST, Cache::SHORT) else { return };
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    let a = hosts.runtime_a();
    let r = cli(&env, &a, &["acquire", "--json", "--session", "refused", "--pid", &pid], &[]);
    assert_unsupported(&r, "acquire on fuse.bindfs without WRITERCTL_ALLOW_FILESYSTEM", "fuse.bindfs", None);
    let e: ErrorDoc = r.json();
    let all = format!("{} {}", e.error.message, e.error.hint.unwrap_or_default());
    assert!(all.contains("WRITERCTL_ALLOW_FILESYSTEM"), "name the variable that allows it: {all}");
    assert_eq!(session_files(&hosts.runtime_server(), "refused"), Vec::<String>::new(), "a refusal wrote a lock");
    // A list that names another type does not allow this one.
    let r = cli(
        &env,
        &a,
        &["acquire", "--json", "--session", "refused", "--pid", &pid],
        &[("WRITERCTL_ALLOW_FILESYSTEM", "fuse.sshfs")],
    );
    assert_unsupported(&r, "WRITERCTL_ALLOW_FILESYSTEM=fuse.sshfs", "fuse.bindfs", None);
    // Named (in a list): it runs.
    let r = cli(
        &env,
        &a,
        &["acquire", "--json", "--session", "allowed", "--pid", &pid],
        &[("WRITERCTL_ALLOW_FILESYSTEM", "fuse.sshfs,fuse.bindfs")],
    );
    r.assert_ok();
    assert_eq!(session_files(&hosts.runtime_server(), "allowed"), ["allowed.lock"]);
}

#[test]
fn a_fuse_mount_without_a_subtype_is_refused_as_fuse() {
    // libfuse 2 filesystems mounted by root appear in mountinfo as plain `fuse`: an unknown
    // FUSE filesystem, refused like any type not proven safe, and allowed only by name.
    const TEST: &str = "a_fuse_mount_without_a_subtype_is_refused_as_fuse";
    let Some(fs) = PlainFuse::mount(TEST) else { return };
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    let r_dir = fs.runtime();
    for allow in [None, Some("fuse.bindfs")] {
        let extra: Vec<(&str, &str)> = allow.map(|v| ("WRITERCTL_ALLOW_FILESYSTEM", v)).into_iter().collect();
        let r = cli(&env, &r_dir, &["acquire", "--json", "--session", "plain", "--pid", &pid], &extra);
        assert_unsupported(&r, &format!("acquire on plain fuse (WRITERCTL_ALLOW_FILESYSTEM={allow:?})"), "fuse", None);
        assert_eq!(session_files(&r_dir, "plain"), Vec::<String>::new(), "a refusal wrote a lock");
    }
    let r = cli(
        &env,
        &r_dir,
        &["acquire", "--json", "--session", "plain", "--pid", &pid],
        &[("WRITERCTL_ALLOW_FILESYSTEM", "fuse")],
    );
    r.assert_ok();
}

/// On exFAT mounted `options`: acquire (with and without `WRITERCTL_ALLOW_FILESYSTEM`
/// naming it) and `run` are refused with `filesystem_unsupported` naming the type and the
/// missing hard links, and leave nothing in R.
fn refused_without_hard_links(test: &str, options: &str) {
    let Some(fs) = NoHardLinks::mount(test, options) else { return };
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    let fs_type = fs.fs_type();
    let r_dir = fs.dir().join("runtime");
    std::fs::create_dir(&r_dir).unwrap();
    for allow in [None, Some(fs_type.as_str()), Some("fuseblk,exfat,vfat,fuse.bindfs")] {
        let what = format!("acquire on exFAT -o {options:?} (WRITERCTL_ALLOW_FILESYSTEM={allow:?})");
        let extra: Vec<(&str, &str)> = allow.map(|v| ("WRITERCTL_ALLOW_FILESYSTEM", v)).into_iter().collect();
        let r = cli(&env, &r_dir, &["acquire", "--json", "--session", "exfat", "--pid", &pid], &extra);
        assert_unsupported(&r, &what, &fs_type, Some("hard link"));
        let left: Vec<String> = tree(&r_dir).into_keys().collect();
        assert!(left.is_empty(), "{what}: a refusal left {left:?} behind");
    }
    // `run` says so at once and exits with the same code — not 75, the "retry later" that
    // an orchestrator restarts forever — even when told to wait for the session.
    let c = cmd(&env, &r_dir, &["run", "--json", "--session", "exfat", "--wait", "600", "--", "true"], &[]);
    let r = run_bounded(c, LIMIT).unwrap_or_else(|| {
        panic!("`run` on exFAT -o {options:?} was still retrying after {LIMIT:?} instead of exiting")
    });
    assert_unsupported(&r, &format!("run on exFAT -o {options:?}"), &fs_type, Some("hard link"));
    let left: Vec<String> = tree(&r_dir).into_keys().collect();
    assert!(left.is_empty(), "run left {left:?} behind");
}

#[test]
fn exfat_is_refused_for_its_missing_hard_links_not_for_its_modes() {
    // The default mount shows every directory 0777: the refusal must name what cannot be
    // fixed (no hard links), not suggest a chmod that exFAT ignores.
    refused_without_hard_links("exfat_is_refused_for_its_missing_hard_links_not_for_its_modes", "");
}

#[test]
fn exfat_mounted_private_is_refused_and_run_does_not_retry_forever() {
    // Mounted 0700 the directory checks pass and only link(2) fails: no "retry later".
    refused_without_hard_links("exfat_mounted_private_is_refused_and_run_does_not_retry_forever", "umask=077");
}

// ---------------------------------------------------------------------------------------
// reproduction 3: recover without RENAME_NOREPLACE
// ---------------------------------------------------------------------------------------

#[test]
fn recover_without_rename_noreplace_never_exits_0_with_the_session_still_in_transition() {
    const TEST: &str = "recover_without_rename_noreplace_never_exits_0_with_the_session_still_in_transition";
    if let Some(hosts) = TwoHosts::mount(TEST, Cache::SHORT) {
        recover_never_exits_0_in_transition(&hosts);
    }
}

fn recover_never_exits_0_in_transition(hosts: &TwoHosts) {
    const S: &str = "repro3";
    let allow = hosts.allow();
    let env = TestEnv::new();
    let a = hosts.runtime_a();
    // A seal on host A dies between moving the primary aside and linking the seal in: the
    // claim, the moved predecessor and the sealed candidate stay, L is missing.
    let holder = LiveHolder::start();
    let tok = managed_writer(&env, &a, S, &holder, allow);
    let r = cli(
        &env,
        &a,
        &["seal", "--json", "--session", S, "--token-file", tok.to_str().unwrap()],
        &[allow, ("WRITERCTL_FAILPOINTS", "transition.after_rename=kill")],
    );
    assert_eq!(r.code, -1, "the seal was to be killed mid-transition: {}{}", r.stdout, r.stderr);
    holder.stop();
    let server = hosts.runtime_server();
    assert_eq!(state(&env, &server, S, &[]), "in_transition");
    // Every writer is fenced (the holder is dead): recover on host A.
    let rec = cli(&env, &a, &["recover", "--writers-fenced", "--yes", "--json", "--session", S], &[allow]);
    // What the server holds now (no client cache in the way).
    let after = state(&env, &server, S, &[]);
    assert!(
        rec.code != 0 || after != "in_transition",
        "recover exited 0 with the session still in transition on a filesystem without RENAME_NOREPLACE\n\
         recover stdout:\n{}\nstderr:\n{}\nlock directory on the server: {:?}",
        rec.stdout,
        rec.stderr,
        session_files(&server, S)
    );
    if rec.code == 0 {
        // Done means done: the predecessor is back, no claim is left.
        assert!(!session_files(&server, S).contains(&format!("{S}.lock.claim")), "{:?}", session_files(&server, S));
        assert_eq!(lock_record(&server, S)["state"], "active", "the predecessor is restored");
    }
}

// ---------------------------------------------------------------------------------------
// reproduction 4: a cached "no such file" for the claim
// ---------------------------------------------------------------------------------------

#[test]
fn an_acquire_that_cached_the_claim_as_missing_does_not_win_during_another_hosts_transition() {
    const TEST: &str = "an_acquire_that_cached_the_claim_as_missing_does_not_win_during_another_hosts_transition";
    if let Some(hosts) = TwoHosts::mount(TEST, Cache::STICKY) {
        cached_claim_absence_never_wins(&hosts);
    }
}

fn cached_claim_absence_never_wins(hosts: &TwoHosts) {
    const S: &str = "repro4";
    let allow = hosts.allow();
    let env = TestEnv::new();
    let (a, b, server) = (hosts.runtime_a(), hosts.runtime_b(), hosts.runtime_server());
    let holder_a = LiveHolder::start();
    let holder_b = LiveHolder::start();
    let tok = managed_writer(&env, &a, S, &holder_a, allow);
    // Host B looks at the session first: its client now caches "no such file" for the claim.
    assert_eq!(state(&env, &b, S, &[allow]), "active");
    assert!(!lock_dir(&b).join(format!("{S}.lock.claim")).exists());
    let status: Value = cli(&env, &server, &["status", "--json", "--session", S], &[]).json();
    let epoch_a = status["owner"]["epoch"].clone();
    // Host A seals and is held after creating the claim and moving the primary aside.
    let gate = env.tmp.path().join("gate");
    let reached = env.tmp.path().join("gate.reached");
    let spec = format!("transition.after_rename=pause:{}", gate.display());
    let seal = cmd(
        &env,
        &a,
        &["seal", "--json", "--session", S, "--token-file", tok.to_str().unwrap()],
        &[allow, ("WRITERCTL_FAILPOINTS", &spec)],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    wait_for(&reached, "host A's seal to reach its transition");
    assert!(lock_dir(&server).join(format!("{S}.lock.claim")).exists(), "the claim is on the server");
    assert!(!lock_dir(&server).join(format!("{S}.lock")).exists(), "the primary is moved aside");
    // Host B acquires inside that window.
    let pid_b = holder_b.pid().to_string();
    let acq = cli(&env, &b, &["acquire", "--json", "--session", S, "--pid", &pid_b], &[allow]);
    std::fs::File::create(&gate).unwrap();
    let seal = wait_child_bounded(seal, LIMIT).expect("host A's seal hung");
    let files = session_files(&server, S);
    assert_ne!(
        acq.code,
        0,
        "host B acquired the session during host A's transition (its cached lookup said no claim): \
         epoch {} (host A's record: {epoch_a}, so not raised), lock directory now {files:?}, \
         host A's seal: exit {} {}\n{}",
        serde_json::from_str::<Value>(&acq.stdout).map(|v| v["epoch"].clone()).unwrap_or_default(),
        seal.code,
        seal.stdout,
        acq.stderr,
    );
    // Host A's seal finished as if B had never tried: sealed, no claim stranded.
    seal.assert_ok();
    assert_eq!(files, [format!("{S}.lock")], "residue beside the seal (a stranded claim?)");
    let rec = lock_record(&server, S);
    assert_eq!(rec["state"], "sealed");
    assert_eq!(rec["pid"], holder_a.pid(), "host A's seal is at L");
    cli(&env, &server, &["verify", "--json", "--session", S], &[]).assert_ok();
}

// ---------------------------------------------------------------------------------------
// reproduction 5: transcript bytes from the client cache
// ---------------------------------------------------------------------------------------

/// One trial: seal on A, host B reads the transcript (its pages and size are cached), the
/// transcript is rewritten on A with the same length, then `op` runs on host B.
fn tamper_after_seal(env: &TestEnv, hosts: &TwoHosts, s: &str, holder: &LiveHolder, op: &[&str]) -> Run {
    let (a, b) = (hosts.runtime_a(), hosts.runtime_b());
    seal_on(env, &a, s, holder, hosts.allow());
    let key = format!("chats/{s}.jsonl");
    assert_eq!(std::fs::read(b.join(&key)).unwrap(), BODY, "host B reads what was sealed");
    let f = std::fs::OpenOptions::new().write(true).open(a.join(&key)).unwrap();
    f.write_all_at(&BODY.to_ascii_uppercase(), 0).unwrap();
    f.sync_all().unwrap();
    drop(f);
    assert_eq!(std::fs::read(hosts.runtime_server().join(&key)).unwrap(), BODY.to_ascii_uppercase());
    let mut args: Vec<&str> = op.to_vec();
    args.extend(["--json", "--session", s]);
    cli(env, &b, &args, &[hosts.allow()])
}

#[test]
fn a_takeover_on_another_host_hashes_what_the_server_holds_not_its_cached_pages() {
    const TEST: &str = "a_takeover_on_another_host_hashes_what_the_server_holds_not_its_cached_pages";
    if let Some(hosts) = TwoHosts::mount(TEST, Cache::STICKY) {
        takeover_hashes_what_the_server_holds(&hosts);
    }
}

fn takeover_hashes_what_the_server_holds(hosts: &TwoHosts) {
    const TRIALS: usize = 8;
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let pid = holder.pid().to_string();
    let mut accepted = Vec::new();
    for i in 0..TRIALS {
        let s = format!("repro5-{i}");
        let r = tamper_after_seal(&env, hosts, &s, &holder, &["takeover", "--pid", &pid]);
        if (r.code, try_error_code(&r).as_deref()) != (4, Some("session_transcript_changed")) {
            let took = r.stderr.lines().find(|l| l.contains("event=takeover")).unwrap_or(r.stderr.trim());
            accepted.push(format!("{s}: exit {} {took}", r.code));
            continue;
        }
        assert_eq!(lock_record(&hosts.runtime_server(), &s)["state"], "sealed", "{s}: the seal must stay");
    }
    assert!(
        accepted.is_empty(),
        "{} of {TRIALS} takeovers on host B accepted a transcript rewritten on host A after the seal:\n{}",
        accepted.len(),
        accepted.join("\n")
    );
}

#[test]
fn verify_on_another_host_hashes_what_the_server_holds_not_its_cached_pages() {
    const TEST: &str = "verify_on_another_host_hashes_what_the_server_holds_not_its_cached_pages";
    let Some(hosts) = TwoHosts::mount(TEST, Cache::STICKY) else { return };
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    for i in 0..4 {
        let s = format!("verify5-{i}");
        let r = tamper_after_seal(&env, &hosts, &s, &holder, &["verify"]);
        assert_eq!(
            (r.code, try_error_code(&r).as_deref()),
            (4, Some("session_transcript_changed")),
            "{s}: verify on host B vouched for a transcript rewritten on host A after the seal\nstdout:\n{}\nstderr:\n{}",
            r.stdout,
            r.stderr
        );
    }
}

// ---------------------------------------------------------------------------------------
// a full handoff across the two hosts
// ---------------------------------------------------------------------------------------

/// Appends `{"host":H,"seq":N}` lines until SIGTERM, then exits 0.
const HOST_WRITER: &str = r#"
set -u
mkdir -p "$(dirname "$WRITERCTL_TRANSCRIPT")"
exec 3>>"$WRITERCTL_TRANSCRIPT"
stop=
trap 'stop=1' TERM
seq=0
while [ -z "$stop" ]; do
  printf '{"host":"%s","seq":%s}\n' "$T_HOST" "$seq" >&3
  seq=$((seq+1))
  sleep 0.02
done
exit 0
"#;

/// A `writerctl run` whose stdout and stderr go to files (read while it runs).
struct Supervisor {
    child: Child,
    err: PathBuf,
    out: PathBuf,
}

impl Supervisor {
    fn start(env: &TestEnv, runtime: &Path, s: &str, host: &str, allow: (&str, &str)) -> Supervisor {
        let err = env.tmp.path().join(format!("run-{host}.err"));
        let out = env.tmp.path().join(format!("run-{host}.out"));
        // The control socket lives in a private directory (run refuses anything else).
        let ctl = env.tmp.path().join(format!("ctl-{host}"));
        std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700).create(&ctl).unwrap();
        let sock = ctl.join("control.sock");
        let mut c = cmd(
            env,
            runtime,
            &["run", "--json", "--session", s, "--wait", "60", "--grace", "10", "--check-interval", "1"],
            &[allow, ("T_HOST", host)],
        );
        c.arg("--control-socket").arg(&sock).args(["--", "bash", "-c", HOST_WRITER, "writer"]);
        c.stdout(std::fs::File::create(&out).unwrap()).stderr(std::fs::File::create(&err).unwrap());
        Supervisor { child: c.spawn().unwrap(), err, out }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    #[track_caller]
    fn wait_event(&mut self, name: &str) {
        let until = Instant::now() + LIMIT;
        while !self.stderr().contains(&format!("event={name} ")) {
            if let Some(st) = self.child.try_wait().unwrap() {
                let out = std::fs::read_to_string(&self.out).unwrap_or_default();
                panic!("run exited ({st}) before event={name}:\n{out}\n{}", self.stderr());
            }
            assert!(Instant::now() < until, "timed out waiting for event={name}:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn stop(mut self) -> Run {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let until = Instant::now() + LIMIT;
        let st = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                panic!("run did not finish its handoff:\n{}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Run {
            code: st.code().unwrap_or(-1),
            stdout: std::fs::read_to_string(&self.out).unwrap_or_default(),
            stderr: self.stderr(),
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The `host` of every transcript line, in order (a torn or foreign line fails the test).
fn hosts_in(path: &Path) -> Vec<(String, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("line {}: {e}: {l:?}", i + 1));
            (v["host"].as_str().unwrap().to_owned(), v["seq"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn a_run_on_host_a_hands_over_to_a_run_on_host_b() {
    const TEST: &str = "a_run_on_host_a_hands_over_to_a_run_on_host_b";
    if let Some(hosts) = TwoHosts::mount(TEST, Cache::SHORT) {
        run_hands_over_from_a_to_b(&hosts);
    }
}

fn run_hands_over_from_a_to_b(hosts: &TwoHosts) {
    const S: &str = "handoff";
    let allow = hosts.allow();
    let env = TestEnv::new();
    let server = hosts.runtime_server();
    let transcript = server.join(format!("chats/{S}.jsonl"));
    let mut a = Supervisor::start(&env, &hosts.runtime_a(), S, "a", allow);
    a.wait_event("writer_started");
    wait_for(&transcript, "host A's writer to write");
    let mut b = Supervisor::start(&env, &hosts.runtime_b(), S, "b", allow);
    b.wait_event("waiting");
    let done_a = a.stop();
    assert_eq!(done_a.code, 0, "host A's run:\nstdout:\n{}\nstderr:\n{}", done_a.stdout, done_a.stderr);
    assert!(done_a.stderr.contains("event=seal "), "{}", done_a.stderr);
    b.wait_event("writer_started");
    let until = Instant::now() + LIMIT;
    while !hosts_in(&transcript).iter().any(|(h, _)| h == "b") {
        assert!(Instant::now() < until, "host B's writer never wrote");
        std::thread::sleep(Duration::from_millis(5));
    }
    let done_b = b.stop();
    assert_eq!(done_b.code, 0, "host B's run:\nstdout:\n{}\nstderr:\n{}", done_b.stdout, done_b.stderr);
    assert!(done_b.stderr.contains("event=takeover "), "host B took over A's seal: {}", done_b.stderr);
    // One writer at a time: all of A's lines, then all of B's, each without a gap.
    let lines = hosts_in(&transcript);
    let split = lines.iter().position(|(h, _)| h == "b").unwrap();
    for (part, host) in [(&lines[..split], "a"), (&lines[split..], "b")] {
        assert!(!part.is_empty());
        for (i, (h, seq)) in part.iter().enumerate() {
            assert_eq!((h.as_str(), *seq), (host, i as u64), "interleaved or lost lines: {lines:?}");
        }
    }
    let rec = lock_record(&server, S);
    assert_eq!(rec["state"], "sealed", "{rec:?}");
    assert_eq!(session_files(&server, S), [format!("{S}.lock")]);
    cli(&env, &server, &["verify", "--json", "--session", S], &[]).assert_ok();
}

// ---------------------------------------------------------------------------------------
// the same against a real NFS server, where this machine has an NFS client
// ---------------------------------------------------------------------------------------

#[test]
fn the_reproductions_and_a_handoff_over_real_nfs() {
    const TEST: &str = "the_reproductions_and_a_handoff_over_real_nfs";
    let Some(hosts) = TwoHosts::nfs(TEST) else { return };
    recover_never_exits_0_in_transition(&hosts);
    cached_claim_absence_never_wins(&hosts);
    takeover_hashes_what_the_server_holds(&hosts);
    run_hands_over_from_a_to_b(&hosts);
}
