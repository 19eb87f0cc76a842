//! `writerctl run` end to end: the real binary supervising real writer processes (small bash
//! scripts) through real signals and the real preStop control socket.
//!
//! Every supervisor runs with a cleared environment (plus the gate when a test needs it) and
//! is bounded: no wait in this file may take longer than [`RUN_LIMIT`], so a hang fails the
//! test instead of blocking it. A supervisor left behind by a failing test is killed (with
//! its writer's process group) on drop.
//!
//! What is checked: exit statuses, `--json` documents (exact fields), the `event=` log lines
//! on stderr (names, order and fields), the exact bytes of the lock and the transcript, and
//! what the writer itself saw (its environment, its process group, its stop signal).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::process::Signal;
use serde::Deserialize;
use serde_json::Value;

use crate::support::*;

const GATE: &str = "WRITERCTL_SESSION_WRITER_LEASE";
/// No single wait in this file may take longer than this.
const RUN_LIMIT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------
// JSON documents
// ---------------------------------------------------------------------------------------

/// `run --json` on success (and on a non-zero writer exit).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunJson {
    session_id: String,
    handoff: String,
    sealed_at: Option<String>,
    child_exit_code: Option<i32>,
    child_signal: Option<i32>,
    pid_namespace: Option<String>,
    exit_code: u8,
}

// ---------------------------------------------------------------------------------------
// a supervisor under test
// ---------------------------------------------------------------------------------------

/// One running `writerctl run` (or any writerctl command) whose stderr is read live.
struct Proc {
    child: Option<Child>,
    stderr: Arc<Mutex<String>>,
    t_out: Option<JoinHandle<Vec<u8>>>,
    t_err: Option<JoinHandle<()>>,
    what: String,
}

impl Proc {
    fn spawn(mut cmd: Command, what: &str) -> Proc {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start `{what}`: {e}"));
        let mut out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let t_out = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = out.read_to_end(&mut v);
            v
        });
        let sink = stderr.clone();
        let t_err = std::thread::spawn(move || {
            let mut r = BufReader::new(err);
            let mut line = Vec::new();
            loop {
                line.clear();
                match r.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => sink.lock().unwrap().push_str(&String::from_utf8_lossy(&line)),
                }
            }
        });
        Proc { child: Some(child), stderr, t_out: Some(t_out), t_err: Some(t_err), what: what.to_owned() }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Everything the process wrote to stderr so far.
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (bounded) until stderr has a line starting with `writerctl: event=<name>`.
    #[track_caller]
    fn wait_event(&mut self, name: &str) {
        let deadline = Instant::now() + RUN_LIMIT;
        loop {
            if events(&self.stderr()).iter().any(|e| e.name == name) {
                return;
            }
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                // It may have written the line just before exiting.
                std::thread::sleep(Duration::from_millis(50));
                if events(&self.stderr()).iter().any(|e| e.name == name) {
                    return;
                }
                panic!("`{}` exited ({st}) without event={name}; stderr:\n{}", self.what, self.stderr());
            }
            if Instant::now() > deadline {
                panic!("`{}`: no event={name} within {RUN_LIMIT:?}; stderr:\n{}", self.what, self.stderr());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// True while the process runs.
    fn running(&mut self) -> bool {
        self.child.as_mut().unwrap().try_wait().unwrap().is_none()
    }

    fn signal(&self, sig: Signal) {
        rustix::process::kill_process(rustix::process::Pid::from_raw(self.pid() as i32).unwrap(), sig)
            .unwrap_or_else(|e| panic!("kill {} `{}`: {e}", self.pid(), self.what));
    }

    /// Waits at most [`RUN_LIMIT`] for the exit; fails the test if it hangs.
    #[track_caller]
    fn finish(mut self) -> Run {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + RUN_LIMIT;
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > deadline {
                kill_writer_group(&self.stderr());
                let _ = child.kill();
                let _ = child.wait();
                panic!("`{}` did not finish within {RUN_LIMIT:?}: it hangs; stderr:\n{}", self.what, self.stderr());
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        // Its output pipes close once nothing of its writer's group holds them any more.
        let (t_out, t_err) = (self.t_out.take().unwrap(), self.t_err.take().unwrap());
        while !(t_out.is_finished() && t_err.is_finished()) {
            if Instant::now() > deadline {
                kill_writer_group(&self.stderr());
                panic!("`{}` exited ({status}), but something it started still holds its output", self.what);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let stdout = String::from_utf8_lossy(&t_out.join().unwrap()).into_owned();
        t_err.join().unwrap();
        Run { code: status.code().unwrap_or(-1), stdout, stderr: self.stderr() }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            kill_writer_group(&self.stderr());
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// SIGKILLs the process group of the writer a supervisor started (from its log).
fn kill_writer_group(stderr: &str) {
    for e in events(stderr).iter().filter(|e| e.name == "writer_started") {
        if let Some(pid) = e.fields.get("writer_pid").and_then(|p| p.parse::<i32>().ok())
            && let Some(pid) = rustix::process::Pid::from_raw(pid)
        {
            let _ = rustix::process::kill_process_group(pid, Signal::KILL);
        }
    }
}

// ---------------------------------------------------------------------------------------
// log lines
// ---------------------------------------------------------------------------------------

/// One `writerctl: event=<name> key="value" ...` line.
#[derive(Debug, Clone)]
struct Ev {
    name: String,
    /// Keys in order with their (unescaped) values.
    keys: Vec<String>,
    fields: BTreeMap<String, String>,
}

/// Every event line of `stderr`, in order (other lines, e.g. a writer's own, are skipped).
fn events(stderr: &str) -> Vec<Ev> {
    stderr.lines().filter_map(|l| l.strip_prefix("writerctl: event=")).map(parse_event).collect()
}

fn parse_event(rest: &str) -> Ev {
    let (name, mut tail) = rest.split_once(' ').unwrap_or((rest, ""));
    let mut keys = Vec::new();
    let mut fields = BTreeMap::new();
    while !tail.is_empty() {
        // A malformed remainder is kept (as `_garbage`) for the assertions to see; parsing
        // never panics, since it also runs while a failing test cleans up.
        let Some((k, after)) = tail.split_once("=\"") else {
            fields.insert("_garbage".to_owned(), tail.to_owned());
            break;
        };
        let mut v = String::new();
        let mut chars = after.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    let (_, n) = chars.next().unwrap();
                    v.push(match n {
                        'n' => '\n',
                        't' => '\t',
                        other => other,
                    });
                }
                '"' => {
                    end = Some(i);
                    break;
                }
                c => v.push(c),
            }
        }
        let Some(end) = end else {
            fields.insert("_garbage".to_owned(), tail.to_owned());
            break;
        };
        keys.push(k.to_owned());
        fields.insert(k.to_owned(), v);
        tail = after[end + 1..].trim_start();
    }
    Ev { name: name.to_owned(), keys, fields }
}

/// The event names in order, `waiting` left out.
/// `names`, after `gate_off` when the gate is off (issue 38: `run` warns at start).
fn gate_off_first<'a>(gate: bool, names: &[&'a str]) -> Vec<&'a str> {
    (!gate).then_some("gate_off").into_iter().chain(names.iter().copied()).collect()
}

fn names_without_waiting(evs: &[Ev]) -> Vec<&str> {
    evs.iter().map(|e| e.name.as_str()).filter(|n| *n != "waiting").collect()
}

/// The one event called `name` (it must occur exactly once).
#[track_caller]
fn one<'a>(evs: &'a [Ev], name: &str) -> &'a Ev {
    let found: Vec<&Ev> = evs.iter().filter(|e| e.name == name).collect();
    assert_eq!(found.len(), 1, "expected exactly one event={name}: {evs:#?}");
    found[0]
}

/// Every event line names the session first.
#[track_caller]
fn assert_session_on_every_event(evs: &[Ev], session: &str) {
    assert!(!evs.is_empty(), "no event lines at all");
    for e in evs {
        assert_eq!(e.keys.first().map(String::as_str), Some("session"), "{e:?}");
        assert_eq!(e.fields["session"], session, "{e:?}");
    }
}

// ---------------------------------------------------------------------------------------
// commands and files
// ---------------------------------------------------------------------------------------

/// A private (0700) directory for control sockets under the test's tempdir.
fn private_dir(env: &TestEnv) -> PathBuf {
    let d = env.tmp.path().join("ctl");
    if !d.exists() {
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
    }
    d
}

fn socket_for(env: &TestEnv, session: &str) -> PathBuf {
    private_dir(env).join(format!("{session}.sock"))
}

/// `writerctl run --runtime-dir R --session S --control-socket P <extra> -- bash -c SCRIPT`,
/// with a cleared environment, the gate when `gate`, and `vars` (the writer inherits them).
fn run_cmd(env: &TestEnv, session: &str, gate: bool, extra: &[&str], script: &str, vars: &[(&str, &str)]) -> Command {
    let mut c = env.cmd();
    c.arg("run").arg("--runtime-dir").arg(env.runtime()).args(["--session", session]);
    c.arg("--control-socket").arg(socket_for(env, session));
    c.args(extra).args(["--", "bash", "-c", script, "writer"]);
    c.env("T_ERR", env.tmp.path().join(format!("writer-{session}.err")));
    if gate {
        c.env(GATE, "1");
    }
    for (k, v) in vars {
        c.env(k, v);
    }
    c
}

fn start_run(env: &TestEnv, session: &str, gate: bool, extra: &[&str], script: &str, vars: &[(&str, &str)]) -> Proc {
    Proc::spawn(run_cmd(env, session, gate, extra, script, vars), &format!("run --session {session} {extra:?}"))
}

/// Any writerctl command with `--runtime-dir R` appended, bounded.
fn cli(env: &TestEnv, args: &[&str], gate: bool) -> Run {
    let mut c = env.cmd();
    c.args(args).arg("--runtime-dir").arg(env.runtime());
    if gate {
        c.env(GATE, "1");
    }
    Proc::spawn(c, &args.join(" ")).finish()
}

fn transcript_path(env: &TestEnv, session: &str) -> PathBuf {
    env.runtime().join(format!("chats/{session}.jsonl"))
}

/// Nothing appends to `session`'s transcript any more (its length holds for 300 ms, six
/// times the test writers' append interval).
#[track_caller]
fn assert_transcript_stays(env: &TestEnv, session: &str, why: &str) {
    let len = std::fs::metadata(transcript_path(env, session)).unwrap().len();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::metadata(transcript_path(env, session)).unwrap().len(), len, "{why}");
}

fn status_of(env: &TestEnv, session: &str) -> StatusJson {
    cli(env, &["status", "--json", "--session", session], false).assert_ok().json()
}

/// The lock file as JSON (panics when absent).
#[track_caller]
fn lock_json(env: &TestEnv, session: &str) -> serde_json::Map<String, Value> {
    let raw = std::fs::read(env.lock(session)).unwrap_or_else(|e| panic!("read lock of {session}: {e}"));
    match serde_json::from_slice(&raw) {
        Ok(Value::Object(m)) => m,
        other => panic!("lock is not a JSON object: {other:?}"),
    }
}

/// SHA-256 by the system's `sha256sum`.
fn sha256sum(path: &Path) -> String {
    let o = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap().split_whitespace().next().unwrap().to_owned()
}

/// Files of `session` in the lock directory (primary and any side file).
fn session_files(env: &TestEnv, session: &str) -> Vec<String> {
    env.lock_dir_names().into_iter().filter(|n| n.starts_with(&format!("{session}.lock"))).collect()
}

/// Waits (bounded) until `cond` holds.
#[track_caller]
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + RUN_LIMIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Asserts that `lock` is sealed, its proof is exactly `proof` and `verify` agrees.
#[track_caller]
fn assert_sealed_matching(env: &TestEnv, session: &str, owner_pid: u32) -> (String, ProofOut) {
    let lock = lock_json(env, session);
    assert_eq!(lock["state"], "sealed", "{lock:?}");
    assert_eq!(lock["pid"], owner_pid, "sealed by the supervisor (the lock's holder): {lock:?}");
    let proof: ProofOut = serde_json::from_value(lock["transcript"].clone()).unwrap();
    let t = transcript_path(env, session);
    assert_eq!(proof.relative_path, format!("chats/{session}.jsonl"));
    if proof.exists {
        assert_eq!(proof.byte_length, std::fs::metadata(&t).unwrap().len(), "sealed length");
        assert_eq!(proof.sha256, sha256sum(&t), "sealed digest (by sha256sum)");
    }
    cli(env, &["verify", "--json", "--session", session], false).assert_ok();
    assert_eq!(session_files(env, session), vec![format!("{session}.lock")], "side files beside the seal");
    (lock["sealed_at"].as_str().unwrap().to_owned(), proof)
}

/// A qwen schema-2 sealed record for a dead holder whose proof is `transcript` as it is now.
fn stage_qwen_seal(env: &TestEnv, session: &str, owner: &str) {
    let t = transcript_path(env, session);
    let len = std::fs::metadata(&t).unwrap().len();
    let active = qwen_active_dead(session, owner);
    let body = active.replace(r#""state":"active""#, r#""state":"sealed""#);
    let rec = format!(
        r#"{},"sealed_at":"2026-07-28T00:00:01.000Z","transcript":{{"relative_path":"chats/{session}.jsonl","exists":true,"byte_length":{len},"sha256":"{}"}}}}"#,
        body.trim_end_matches('}'),
        sha256sum(&t)
    );
    stage(&env.lock(session), rec.as_bytes());
}

/// Writes `mib` MiB of 64-byte JSON lines to `path` through a buffered writer.
fn write_big_transcript(path: &Path, mib: usize) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let f = std::fs::File::create(path).unwrap();
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    for i in 0..(mib << 14) {
        // {"writer":"bulk","i":NNNNNNNNNN,"pad":"xxxxxxxxxxxxxxxxxx"}\n = 64 bytes
        writeln!(w, r#"{{"writer":"bulk","i":{i:010},"pad":"xxxxxxxxxxxxxxxxxxxxxx"}}"#).unwrap();
    }
    w.flush().unwrap();
    assert_eq!(std::fs::metadata(path).unwrap().len(), (mib as u64) << 20, "64-byte lines");
}

fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// True when process `pid` has `path` open.
fn has_open(pid: u32, path: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    rd.filter_map(|e| e.ok()).any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l == path))
}

// ---------------------------------------------------------------------------------------
// writers
// ---------------------------------------------------------------------------------------

/// Appends `{"writer":$T_GEN,"seq":N}` lines (each in two writes) until SIGTERM, finishing
/// the line it is on; then exits 0. Its own stderr goes to $T_ERR.
const GEN_WRITER: &str = r#"
set -u
exec 2>>"$T_ERR"
mkdir -p "$(dirname "$WRITERCTL_TRANSCRIPT")"
exec 3>>"$WRITERCTL_TRANSCRIPT"
stop=
trap 'stop=1' TERM
seq=0
while [ -z "$stop" ]; do
  printf '{"writer":%s,' "$T_GEN" >&3
  printf '"seq":%s}\n' "$seq" >&3
  seq=$((seq+1))
  sleep 0.02
done
exit 0
"#;

/// Like [`GEN_WRITER`], but after the stop it takes a moment and writes `{"stopped":true}`
/// as its last line (so a seal that waits for it covers that line).
const STOPPING_WRITER: &str = r#"
set -u
exec 2>>"$T_ERR"
mkdir -p "$(dirname "$WRITERCTL_TRANSCRIPT")"
exec 3>>"$WRITERCTL_TRANSCRIPT"
stop=
trap 'stop=1' TERM
seq=0
while [ -z "$stop" ]; do
  printf '{"writer":1,"seq":%s}\n' "$seq" >&3
  seq=$((seq+1))
  sleep 0.02
done
sleep 0.5
printf '{"stopped":true}\n' >&3
exit 0
"#;

/// The lines of a transcript, each parsed as a JSON object.
#[track_caller]
fn jsonl(path: &Path) -> Vec<serde_json::Map<String, Value>> {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.is_empty() || bytes.ends_with(b"\n"), "the transcript ends mid-line");
    let text = std::str::from_utf8(&bytes).expect("transcript is UTF-8");
    text.lines()
        .enumerate()
        .map(|(i, l)| match serde_json::from_str::<Value>(l) {
            Ok(Value::Object(m)) => m,
            other => panic!("line {} is not a whole JSON object ({other:?}): {l:?}", i + 1),
        })
        .collect()
}

/// True once the transcript holds at least one line of writer `generation`.
fn has_line_of(path: &Path, generation: u64) -> bool {
    let needle = format!("{{\"writer\":{generation},\"seq\":");
    std::fs::read_to_string(path).is_ok_and(|t| t.lines().any(|l| l.starts_with(&needle) && l.ends_with('}')))
}

// ---------------------------------------------------------------------------------------
// 1. generations hand the session over one at a time
// ---------------------------------------------------------------------------------------

#[test]
fn twenty_four_generations_hand_over_one_at_a_time_through_verified_takeovers() {
    const S: &str = "run-generations";
    const LAST: u64 = 24; // 25 runs, 24 takeovers
    let env = TestEnv::new();
    let t = transcript_path(&env, S);
    let started = Instant::now();

    let start_gen = |n: u64| {
        let g = n.to_string();
        start_run(&env, S, true, &["--wait", "30", "--grace", "10"], GEN_WRITER, &[("T_GEN", &g)])
    };

    let mut prev = start_gen(0);
    prev.wait_event("writer_started");
    wait_until("generation 0 writes", || has_line_of(&t, 0));
    let mut prev_pid = prev.pid();
    let mut runs: Vec<(u32, Run)> = Vec::new();
    for n in 1..=LAST {
        let mut next = start_gen(n);
        // The next supervisor is up and waiting before the current one is told to stop.
        next.wait_event("waiting");
        assert!(!events(&next.stderr()).iter().any(|e| e.name == "takeover" || e.name == "acquired"));
        prev.signal(Signal::TERM);
        next.wait_event("writer_started");
        let done = prev.finish();
        runs.push((prev_pid, done));
        wait_until(&format!("generation {n} writes"), || has_line_of(&t, n));
        prev = next;
        prev_pid = prev.pid();
    }
    prev.signal(Signal::TERM);
    runs.push((prev_pid, prev.finish()));
    let elapsed = started.elapsed();

    // Every run: exit 0, the exact event sequence, one seal of its own.
    let mut seals: Vec<(u32, String)> = Vec::new();
    for (n, (pid, r)) in runs.iter().enumerate() {
        assert_eq!(r.code, 0, "generation {n}: stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        assert_eq!(r.stdout, "", "generation {n}: nothing on stdout without --json");
        let evs = events(&r.stderr);
        assert_session_on_every_event(&evs, S);
        let first = if n == 0 { "acquired" } else { "takeover" };
        assert_eq!(
            names_without_waiting(&evs),
            [first, "listening", "pid_namespace", "writer_started", "stopping", "writer_exited", "sealing", "seal"],
            "generation {n}:\n{}",
            r.stderr
        );
        if n == 0 {
            assert_eq!(one(&evs, "acquired").fields["pid"], pid.to_string());
        } else {
            // It waited first (the predecessor was live), then took over.
            assert_eq!(evs[0].name, "waiting", "generation {n} did not wait:\n{}", r.stderr);
            let tk = one(&evs, "takeover");
            let (prev_pid, prev_sealed_at) = &seals[n - 1];
            assert_eq!(tk.fields["previous_pid"], prev_pid.to_string(), "generation {n}: {tk:?}");
            assert_eq!(&tk.fields["sealed_at"], prev_sealed_at, "generation {n} took over another seal");
            assert_eq!(tk.fields["previous_host"], local().hostname);
        }
        assert_eq!(one(&evs, "stopping").fields.get("signal").map(String::as_str), Some("15"));
        assert_eq!(one(&evs, "writer_exited").fields["status"], "exit status: 0", "generation {n}");
        let seal = one(&evs, "seal");
        assert_eq!(seal.fields["pid"], pid.to_string(), "generation {n} sealed as its own holder");
        seals.push((*pid, seal.fields["sealed_at"].clone()));
    }

    // The transcript: whole JSON lines, generations strictly in order, no line lost or
    // repeated within a generation, and every generation wrote.
    let lines = jsonl(&t);
    let mut expect_gen = 0u64;
    let mut expect_seq = 0u64;
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l.keys().collect::<Vec<_>>(), ["writer", "seq"], "line {}: {l:?}", i + 1);
        let (g, s) = (l["writer"].as_u64().unwrap(), l["seq"].as_u64().unwrap());
        if g != expect_gen {
            assert_eq!(g, expect_gen + 1, "line {}: generation {g} after {expect_gen}: two writers overlapped", i + 1);
            assert!(expect_seq > 0, "generation {expect_gen} wrote nothing");
            expect_gen = g;
            expect_seq = 0;
        }
        assert_eq!(s, expect_seq, "line {}: generation {g} lost or repeated a line", i + 1);
        expect_seq += 1;
    }
    assert_eq!(expect_gen, LAST, "the last generation's lines are last");

    // The final seal is on disk, certifies the whole transcript and is the last run's.
    let (sealed_at, _) = assert_sealed_matching(&env, S, seals.last().unwrap().0);
    assert_eq!(sealed_at, seals.last().unwrap().1);
    let writer_errors = std::fs::read_to_string(env.tmp.path().join(format!("writer-{S}.err"))).unwrap_or_default();
    // Nothing went wrong inside the writers (bash only reports its `sleep` ended by the stop).
    assert!(writer_errors.lines().all(|l| l.trim() == "Terminated"), "writer errors:\n{writer_errors}");
    assert!(elapsed < Duration::from_secs(40), "{LAST} generations took {elapsed:?}");
}

// ---------------------------------------------------------------------------------------
// 2. a writer that ignores the stop is killed and the lock is kept
// ---------------------------------------------------------------------------------------

/// Ignores SIGTERM (so does its `sleep`), says it is ready, runs forever.
const STUBBORN_WRITER: &str = r#"
exec 2>>"$T_ERR"
trap '' TERM
mkdir -p "$(dirname "$WRITERCTL_TRANSCRIPT")"
printf '{"writer":"stubborn"}\n' >>"$WRITERCTL_TRANSCRIPT"
: >"$T_READY"
while :; do sleep 0.05; done
"#;

#[test]
fn a_writer_that_ignores_the_stop_past_grace_is_killed_and_the_active_lock_is_kept() {
    let env = TestEnv::new();
    // A: SIGTERM, `run --json`. B: preStop `seal`, `run` without --json.
    let (a, b) = ("run-drain-json", "run-drain-prestop");
    let ready_a = env.tmp.path().join("ready-a");
    let ready_b = env.tmp.path().join("ready-b");
    let mut run_a = start_run(
        &env,
        a,
        true,
        &["--json", "--grace", "1"],
        STUBBORN_WRITER,
        &[("T_READY", ready_a.to_str().unwrap())],
    );
    let mut run_b =
        start_run(&env, b, true, &["--grace", "1"], STUBBORN_WRITER, &[("T_READY", ready_b.to_str().unwrap())]);
    run_a.wait_event("writer_started");
    run_b.wait_event("writer_started");
    wait_until("the stubborn writers to be ready", || ready_a.exists() && ready_b.exists());
    let (pid_a, pid_b) = (run_a.pid(), run_b.pid());
    let lock_a = std::fs::read(env.lock(a)).unwrap();
    let lock_b = std::fs::read(env.lock(b)).unwrap();
    let writer_a: u32 = one(&events(&run_a.stderr()), "writer_started").fields["writer_pid"].parse().unwrap();

    let t0 = Instant::now();
    run_a.signal(Signal::TERM);
    let mut seal_b = env.cmd();
    seal_b.args(["seal", "--json", "--session", b, "--runtime-dir"]).arg(env.runtime());
    seal_b.arg("--control-socket").arg(socket_for(&env, b)).env(GATE, "1");
    let seal_b = Proc::spawn(seal_b, "seal (preStop) b");
    let ra = run_a.finish();
    let rb = run_b.finish();
    let sb = seal_b.finish();
    let took = t0.elapsed();
    assert!(took >= Duration::from_secs(1), "the writer got less than --grace 1: {took:?}");

    // A: exit 1 and the drain_timeout JSON error document (nothing else on stdout).
    ra.assert_error(1, "drain_timeout");
    let doc: ErrorDoc = ra.json();
    assert!(doc.error.hint.as_deref().is_some_and(|h| !h.is_empty()), "{doc:?}");
    let evs = events(&ra.stderr);
    assert_session_on_every_event(&evs, a);
    assert_eq!(
        names_without_waiting(&evs),
        ["acquired", "listening", "pid_namespace", "writer_started", "stopping", "writer_killed", "writer_exited"],
        "{}",
        ra.stderr
    );
    assert!(one(&evs, "writer_exited").fields["status"].contains("signal: 9"), "{evs:?}");
    assert!(!pid_alive(writer_a), "the writer survived the kill");

    // B: the preStop client gets the same failure; `run` reports it in human form.
    sb.assert_error(1, "drain_timeout");
    assert_eq!(rb.code, 1, "stdout:\n{}\nstderr:\n{}", rb.stdout, rb.stderr);
    assert_eq!(rb.stdout, "");
    assert!(rb.stderr.contains("(code: drain_timeout, exit 1)"), "{}", rb.stderr);
    let evs = events(&rb.stderr);
    assert_eq!(
        names_without_waiting(&evs),
        ["acquired", "listening", "pid_namespace", "writer_started", "stopping", "writer_killed", "writer_exited"],
        "{}",
        rb.stderr
    );
    assert_eq!(one(&evs, "stopping").fields.get("cause").map(String::as_str), Some("prestop"));

    for (s, pid, before) in [(a, pid_a, lock_a), (b, pid_b, lock_b)] {
        assert_eq!(std::fs::read(env.lock(s)).unwrap(), before, "{s}: the active lock changed");
        // Besides the kept record, only the holder-lock file it names (issue 27): free now
        // that the run's whole tree is gone, which is what lets a plain acquire reclaim it.
        let st = status_of(&env, s);
        let holder = st.owner.as_ref().and_then(|o| o.holder_lock.clone()).expect("run records a holder lock");
        assert_eq!(session_files(&env, s), vec![format!("{s}.lock"), holder], "{s}: side files");
        assert_eq!(st.liveness.as_ref().map(|l| l.code.as_str()), Some("holder_lock_released"), "{s}");
        assert_eq!(st.state, "active", "{s}: {st:?}");
        assert_eq!(st.owner.as_ref().unwrap().pid, pid as u64, "{s}: held by the run");
        assert_eq!(st.live, Some(false), "{s}: the run is gone: {st:?}");
        assert!(!st.next_step.is_empty(), "{s}");
        assert!(
            st.next_step.contains("acquire") || st.next_step.contains("recover"),
            "{s}: status does not say what to do: {}",
            st.next_step
        );
        cli(&env, &["verify", "--json", "--session", s], false).assert_error(3, "session_not_sealed");
        assert!(!socket_for(&env, s).exists(), "{s}: the control socket was left behind");
    }
}

// ---------------------------------------------------------------------------------------
// 3. a writer that exits on its own
// ---------------------------------------------------------------------------------------

/// Seed 001 and issue 21 item 2: a writer that exits non-zero did not drain (a crash, a
/// failed flush, a shell reporting an OOM kill as 137), so nothing certifies or releases
/// its transcript: the active lock is kept, byte for byte, whatever the gate says.
#[test]
fn a_writer_exiting_non_zero_keeps_the_active_lock() {
    let script = |code: u8| {
        format!(
            r#"
exec 2>>"$T_ERR"
mkdir -p "$(dirname "$WRITERCTL_TRANSCRIPT")"
printf '{{"writer":"early","seq":0}}\n{{"writer":"early","seq":1}}\n' >>"$WRITERCTL_TRANSCRIPT"
exit {code}
"#
        )
    };
    for (gate, code) in [(true, 7u8), (false, 7), (true, 1), (true, 137), (false, 137)] {
        let env = TestEnv::new();
        let s = "run-exit-non-zero";
        let p = start_run(&env, s, gate, &["--json", "--grace", "10"], &script(code), &[]);
        let pid = p.pid();
        let r = p.finish();
        r.assert_error(1, "writer_crashed");
        let msg: ErrorDoc = r.json();
        assert!(
            msg.error.message.contains(&format!("exited with status {code} without being asked to stop")),
            "gate {gate}, exit {code}: {}",
            msg.error.message
        );
        let lock = lock_json(&env, s);
        assert_eq!((lock["state"].as_str(), lock["pid"].as_u64()), (Some("active"), Some(pid as u64)), "gate {gate}");
        assert_eq!(jsonl(&transcript_path(&env, s)).len(), 2);
        let evs = events(&r.stderr);
        assert_session_on_every_event(&evs, s);
        assert_eq!(
            names_without_waiting(&evs),
            gate_off_first(gate, &["acquired", "listening", "pid_namespace", "writer_started", "writer_exited"])
        );
        assert!(!socket_for(&env, s).exists(), "gate {gate}: the control socket was left behind");
    }
}

/// A writer that exits 0 without being asked to stop closed its session normally: the lock
/// is released, never sealed (seed 001: "normal per-session close still releases its lock
/// instead of leaving a sealed record"), gate on or off.
#[test]
fn a_writer_exiting_0_on_its_own_releases_and_never_seals() {
    let script = r#"
exec 2>>"$T_ERR"
mkdir -p "$(dirname "$WRITERCTL_TRANSCRIPT")"
printf '{"writer":"done"}\n' >>"$WRITERCTL_TRANSCRIPT"
exit 0
"#;
    for gate in [true, false] {
        let env = TestEnv::new();
        let s = "run-exit-0";
        let r = start_run(&env, s, gate, &["--json", "--grace", "10"], script, &[]).finish();
        r.assert_ok();
        let j: RunJson = r.json();
        assert_eq!(
            j,
            RunJson {
                session_id: s.into(),
                handoff: "released".into(),
                sealed_at: None,
                child_exit_code: Some(0),
                child_signal: None,
                pid_namespace: Some("own".into()),
                exit_code: 0
            },
            "gate {gate}"
        );
        assert!(!env.lock(s).exists(), "gate {gate}: the lock was not released");
        assert_eq!(session_files(&env, s), Vec::<String>::new(), "gate {gate}: residue");
        assert_eq!(
            names_without_waiting(&events(&r.stderr)),
            gate_off_first(
                gate,
                &["acquired", "listening", "pid_namespace", "writer_started", "writer_exited", "releasing", "released"]
            )
        );
    }
}

// ---------------------------------------------------------------------------------------
// 4. signals during acquisition and during sealing
// ---------------------------------------------------------------------------------------

#[test]
fn a_signal_while_waiting_for_a_live_owner_interrupts_with_130_and_changes_nothing() {
    const S: &str = "run-interrupted";
    let env = TestEnv::new();
    let holder = LiveHolder::start();
    let _tok = env.acquire_for(S, holder.0.id());
    let before = tree(&env.runtime());
    let marker = env.tmp.path().join("writer-ran");
    let script = r#"exec 2>>"$T_ERR"; : >"$T_MARK"; sleep 1000"#;
    for (sig, name) in [(Signal::TERM, "TERM"), (Signal::INT, "INT"), (Signal::HUP, "HUP")] {
        let mut p =
            start_run(&env, S, true, &["--json", "--wait", "30"], script, &[("T_MARK", marker.to_str().unwrap())]);
        p.wait_event("waiting");
        let t0 = Instant::now();
        p.signal(sig);
        let r = p.finish();
        assert!(t0.elapsed() < Duration::from_secs(5), "SIG{name}: the interrupt took {:?}", t0.elapsed());
        r.assert_error(130, "interrupted");
        let evs = events(&r.stderr);
        assert_session_on_every_event(&evs, S);
        assert!(evs.iter().all(|e| e.name == "waiting"), "SIG{name}: {evs:?}");
        assert!(evs[0].fields["reason"].contains(&holder.0.id().to_string()), "{evs:?}");
        assert_eq!(tree(&env.runtime()), before, "SIG{name}: something changed under R");
        assert!(!marker.exists(), "SIG{name}: the writer was started");
        assert!(!socket_for(&env, S).exists(), "SIG{name}: a control socket was created");
    }
    // Without --wait a live owner is an immediate conflict; --wait gives up at its deadline
    // with the same conflict; a stale owner is never reclaimed by a managed run and is not
    // worth waiting for.
    let r = Proc::spawn(run_cmd(&env, S, true, &["--json"], script, &[("T_MARK", marker.to_str().unwrap())]), "run")
        .finish();
    r.assert_error(3, "session_writer_conflict");
    assert_eq!(tree(&env.runtime()), before);
    let t0 = Instant::now();
    let r = Proc::spawn(
        run_cmd(&env, S, true, &["--json", "--wait", "1"], script, &[("T_MARK", marker.to_str().unwrap())]),
        "run --wait 1",
    )
    .finish();
    let waited = t0.elapsed();
    r.assert_error(3, "session_writer_conflict");
    assert!(waited >= Duration::from_secs(1) && waited < Duration::from_secs(5), "--wait 1 waited {waited:?}");
    assert_eq!(one(&events(&r.stderr), "waiting").fields["session"], S);
    assert_eq!(tree(&env.runtime()), before);
    drop(holder);
    let t0 = Instant::now();
    let r = Proc::spawn(
        run_cmd(&env, S, true, &["--json", "--wait", "30"], script, &[("T_MARK", marker.to_str().unwrap())]),
        "run",
    )
    .finish();
    r.assert_error(3, "session_writer_conflict");
    assert!(t0.elapsed() < Duration::from_secs(10), "waited for a stale owner: {:?}", t0.elapsed());
    assert_eq!(tree(&env.runtime()), before, "a managed run reclaimed a stale owner");
    assert!(!marker.exists());
}

#[test]
fn a_signal_after_the_takeover_but_before_the_writer_starts_hands_the_session_off_again() {
    const S: &str = "run-acquisition-signal";
    let env = TestEnv::new();
    let t = transcript_path(&env, S);
    write_big_transcript(&t, 64);
    stage_qwen_seal(&env, S, "0b0b0b0b-0000-4000-8000-000000000001");
    let transcript_before = sha256sum(&t);
    let marker = env.tmp.path().join("writer-ran");
    let mut p = start_run(
        &env,
        S,
        true,
        &["--json", "--grace", "10"],
        r#"exec 2>>"$T_ERR"; : >"$T_MARK"; sleep 1000"#,
        &[("T_MARK", marker.to_str().unwrap())],
    );
    let pid = p.pid();
    // The takeover is hashing the (large) transcript: the lock is not ours yet, the writer
    // cannot have started.
    let t_real = t.canonicalize().unwrap();
    wait_until("the takeover to open the transcript", || has_open(pid, &t_real) || !p.running());
    assert!(events(&p.stderr()).iter().all(|e| e.name != "writer_started"));
    p.signal(Signal::TERM);
    let r = p.finish();
    r.assert_ok();
    let evs = events(&r.stderr);
    assert_session_on_every_event(&evs, S);
    assert_eq!(names_without_waiting(&evs), ["takeover", "stopping", "sealing", "seal"], "{}", r.stderr);
    assert_eq!(one(&evs, "takeover").fields["previous_pid"], (i32::MAX).to_string());
    assert_eq!(one(&evs, "stopping").fields.get("signal").map(String::as_str), Some("15"));
    assert!(!marker.exists(), "the writer was started");
    let (sealed_at, proof) = assert_sealed_matching(&env, S, pid);
    assert_eq!((proof.byte_length, proof.sha256.as_str()), (64 << 20, transcript_before.as_str()));
    let j: RunJson = r.json();
    assert_eq!(
        j,
        RunJson {
            session_id: S.into(),
            handoff: "sealed".into(),
            sealed_at: Some(sealed_at),
            child_exit_code: None,
            child_signal: None,
            pid_namespace: None,
            exit_code: 0
        }
    );
    assert!(!socket_for(&env, S).exists());
}

#[test]
fn a_second_sigterm_during_the_seal_does_not_interrupt_it() {
    const S: &str = "run-signal-while-sealing";
    let env = TestEnv::new();
    let t = transcript_path(&env, S);
    write_big_transcript(&t, 64);
    let mut p = start_run(&env, S, true, &["--json", "--grace", "10"], GEN_WRITER, &[("T_GEN", "1")]);
    let pid = p.pid();
    p.wait_event("writer_started");
    wait_until("the writer to append", || std::fs::metadata(&t).unwrap().len() > 64 << 20);
    p.signal(Signal::TERM);
    p.wait_event("sealing");
    p.signal(Signal::TERM);
    // Sent while the seal was still hashing: the lock was not sealed yet.
    let lock_now = std::fs::read_to_string(env.lock(S)).unwrap_or_default();
    assert!(!lock_now.contains(r#""state":"sealed""#), "the seal finished before the second signal: test too fast");
    let r = p.finish();
    r.assert_ok();
    let evs = events(&r.stderr);
    assert_eq!(
        names_without_waiting(&evs),
        ["acquired", "listening", "pid_namespace", "writer_started", "stopping", "writer_exited", "sealing", "seal"],
        "{}",
        r.stderr
    );
    let (sealed_at, proof) = assert_sealed_matching(&env, S, pid);
    assert!(proof.byte_length > 64 << 20);
    let j: RunJson = r.json();
    assert_eq!(
        j,
        RunJson {
            session_id: S.into(),
            handoff: "sealed".into(),
            sealed_at: Some(sealed_at),
            child_exit_code: Some(0),
            child_signal: None,
            pid_namespace: Some("own".into()),
            exit_code: 0
        }
    );
    // Every line is whole: the bulk lines, then the writer's own.
    let text = std::fs::read_to_string(&t).unwrap();
    let tail: Vec<&str> = text.lines().skip(1 << 20).collect();
    assert!(!tail.is_empty());
    for (i, l) in tail.iter().enumerate() {
        assert_eq!(*l, format!(r#"{{"writer":1,"seq":{i}}}"#));
    }
}

// ---------------------------------------------------------------------------------------
// 5. preStop over the control socket
// ---------------------------------------------------------------------------------------

#[test]
fn a_prestop_seal_returns_once_the_writer_stopped_and_the_seal_is_on_disk() {
    const S: &str = "run-prestop";
    let env = TestEnv::new();
    let t = transcript_path(&env, S);
    let sock = socket_for(&env, S);
    let mut p = start_run(&env, S, true, &["--json", "--grace", "10"], STOPPING_WRITER, &[]);
    let pid = p.pid();
    p.wait_event("writer_started");
    let listening = one(&events(&p.stderr()), "listening").clone();
    assert_eq!(listening.fields["control_socket"], sock.to_str().unwrap());
    wait_until("the writer to append", || std::fs::read_to_string(&t).is_ok_and(|s| s.lines().count() >= 3));
    assert_eq!(lock_json(&env, S)["state"], "active");

    // preStop: no token anywhere, only the socket.
    let mut c = env.cmd();
    c.args(["seal", "--json", "--session", S, "--runtime-dir"]).arg(env.runtime());
    c.arg("--control-socket").arg(&sock).env(GATE, "1");
    let t0 = Instant::now();
    let sr = Proc::spawn(c, "seal (preStop)").finish();
    // Right after it returns: the seal is on disk and matches what it printed.
    let lock_after = std::fs::read(env.lock(S)).unwrap();
    let took = t0.elapsed();
    sr.assert_ok();
    assert!(took >= Duration::from_millis(500), "seal returned before the writer finished stopping: {took:?}");
    let sj: SealJson = sr.json();
    let lock: serde_json::Map<String, Value> = serde_json::from_slice(&lock_after).unwrap();
    assert_eq!(lock["state"], "sealed", "seal returned before the seal was on disk");
    assert_eq!((sj.session_id.as_str(), sj.state.as_str()), (S, "sealed"));
    assert_eq!(lock["sealed_at"], sj.sealed_at.as_str());
    let on_disk: ProofOut = serde_json::from_value(lock["transcript"].clone()).unwrap();
    assert_eq!(on_disk, sj.transcript);
    // The writer saw its stop first: its final line is the last and is covered by the seal.
    let lines = jsonl(&t);
    assert_eq!(Value::Object(lines.last().unwrap().clone()), serde_json::json!({"stopped": true}));
    assert_eq!(
        sj.transcript,
        ProofOut {
            relative_path: format!("chats/{S}.jsonl"),
            exists: true,
            byte_length: std::fs::metadata(&t).unwrap().len(),
            sha256: sha256sum(&t),
        }
    );
    cli(&env, &["verify", "--json", "--session", S], false).assert_ok();

    // The supervisor stays until the signal that ends the pod; its socket is gone.
    std::thread::sleep(Duration::from_millis(300));
    assert!(p.running(), "run exited right after the preStop handoff");
    assert!(!sock.exists(), "the control socket outlived the handoff");
    let evs = events(&p.stderr());
    assert_eq!(
        names_without_waiting(&evs),
        ["acquired", "listening", "pid_namespace", "writer_started", "stopping", "writer_exited", "sealing", "seal"]
    );
    assert_eq!(one(&evs, "stopping").fields.get("cause").map(String::as_str), Some("prestop"));
    assert_eq!(one(&evs, "writer_exited").fields["status"], "exit status: 0");
    p.signal(Signal::TERM);
    let r = p.finish();
    r.assert_ok();
    let evs = events(&r.stderr);
    assert_session_on_every_event(&evs, S);
    let last = evs.last().unwrap();
    assert_eq!((last.name.as_str(), last.fields.get("signal").map(String::as_str)), ("stopping", Some("15")));
    let j: RunJson = r.json();
    assert_eq!(
        j,
        RunJson {
            session_id: S.into(),
            handoff: "sealed".into(),
            sealed_at: Some(sj.sealed_at.clone()),
            child_exit_code: Some(0),
            child_signal: None,
            pid_namespace: Some("own".into()),
            exit_code: 0
        }
    );
    // The final signal changed nothing.
    assert_eq!(std::fs::read(env.lock(S)).unwrap(), lock_after);
    assert_sealed_matching(&env, S, pid);
}

#[test]
fn a_tokenless_seal_without_a_supervisor_is_invalid_argument() {
    const S: &str = "run-no-supervisor";
    let env = TestEnv::new();
    let xdg = env.tmp.path().join("xdg");
    std::fs::DirBuilder::new().mode(0o700).create(&xdg).unwrap();
    // `sock`: --control-socket; None: the default path under $XDG_RUNTIME_DIR/writerctl.
    let seal = |sock: Option<&Path>| {
        let mut c = env.cmd();
        c.args(["seal", "--json", "--session", S, "--runtime-dir"]).arg(env.runtime()).env(GATE, "1");
        match sock {
            Some(p) => c.arg("--control-socket").arg(p),
            None => c.env("XDG_RUNTIME_DIR", &xdg),
        };
        Proc::spawn(c, "seal (no supervisor)").finish()
    };
    let before = tree(&env.runtime());
    // No socket file at all, at an explicit and at the default path.
    seal(Some(&socket_for(&env, S))).assert_error(2, "invalid_argument");
    seal(None).assert_error(2, "invalid_argument");
    // A dead supervisor's socket file (nobody listens).
    let stale = private_dir(&env).join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    seal(Some(&stale)).assert_error(2, "invalid_argument");
    // There was not even a lock: nothing was created.
    assert_eq!(tree(&env.runtime()), before, "seal changed something");
    // With an active lock (held by a live process) it is still invalid_argument, and the
    // lock stays as it is.
    let holder = LiveHolder::start();
    env.acquire_for(S, holder.0.id());
    let lock = std::fs::read(env.lock(S)).unwrap();
    seal(Some(&socket_for(&env, S))).assert_error(2, "invalid_argument");
    seal(None).assert_error(2, "invalid_argument");
    assert_eq!(std::fs::read(env.lock(S)).unwrap(), lock);
}

/// `run` and `seal` derive the same default socket path from R and S.
#[test]
fn a_prestop_seal_finds_the_supervisor_at_the_default_socket_path() {
    const S: &str = "run-default-socket";
    let env = TestEnv::new();
    let xdg = env.tmp.path().join("xdg");
    std::fs::DirBuilder::new().mode(0o700).create(&xdg).unwrap();
    let script = r#"exec 2>>"$T_ERR"; trap 'exit 0' TERM; : >"$T_READY"; while :; do sleep 0.05; done"#;
    let ready = env.tmp.path().join("ready");
    let mut c = env.cmd();
    c.arg("run").arg("--runtime-dir").arg(env.runtime()).args(["--session", S]).env(GATE, "1");
    c.args(["--", "bash", "-c", script, "writer"]).env("XDG_RUNTIME_DIR", &xdg).env("T_READY", &ready);
    c.env("T_ERR", env.tmp.path().join("writer.err"));
    let mut p = Proc::spawn(c, "run (default socket)");
    p.wait_event("writer_started");
    wait_until("the writer to be ready", || ready.exists());
    let sock = PathBuf::from(&one(&events(&p.stderr()), "listening").fields["control_socket"]);
    assert_eq!(sock.parent(), Some(xdg.join("writerctl").as_path()), "{}", sock.display());
    assert!(sock.exists());
    let mut c = env.cmd();
    c.args(["seal", "--json", "--session", S, "--runtime-dir"]).arg(env.runtime());
    c.env(GATE, "1").env("XDG_RUNTIME_DIR", &xdg);
    let sr = Proc::spawn(c, "seal (default socket)").finish();
    sr.assert_ok();
    let sj: SealJson = sr.json();
    assert_eq!(sj.state, "sealed");
    assert_eq!(lock_json(&env, S)["sealed_at"], sj.sealed_at.as_str());
    let run_pid = p.pid();
    p.signal(Signal::TERM);
    p.finish().assert_ok();
    let (_, proof) = assert_sealed_matching(&env, S, run_pid);
    // Issue 38: `run` creates an absent transcript (empty) to hold its one-writer lock.
    assert!(proof.exists && proof.byte_length == 0, "the writer wrote nothing: {proof:?}");
    assert!(!sock.exists(), "the default socket was left behind");
}

// ---------------------------------------------------------------------------------------
// 6. the writer's environment
// ---------------------------------------------------------------------------------------

#[test]
fn the_writer_sees_the_lock_coordinates_and_the_owner_token_in_its_own_process_group() {
    const S: &str = "run-env";
    let script = r#"
{
  for v in WRITERCTL_RUNTIME_DIR WRITERCTL_SESSION WRITERCTL_LOCK WRITERCTL_TRANSCRIPT WRITERCTL_OWNER_TOKEN WRITERCTL_EPOCH; do
    if [ -n "${!v+x}" ]; then printf '%s=%s\n' "$v" "${!v}"; else printf '%s unset\n' "$v"; fi
  done
  # /proc/self read by the shell itself: pids as run's namespace numbers them.
  read -r pid _ _ ppid pgid _ </proc/self/stat
  read -r _ _ _ gppid _ </proc/$ppid/stat
  printf 'PID=%s\nPGID=%s\nGPPID=%s\nNS=%s\n' "$pid" "$pgid" "$gppid" "$WRITERCTL_PID_NAMESPACE"
} >"$T_OUT"
cp "$WRITERCTL_LOCK" "$T_OUT.lock"
"#;
    for relative in [false, true] {
        let env = TestEnv::new();
        let out = env.tmp.path().join("env.txt");
        let mut c = env.cmd();
        c.arg("run").arg("--runtime-dir");
        if relative {
            c.current_dir(env.tmp.path()).arg("runtime");
        } else {
            c.arg(env.runtime());
        }
        c.args(["--session", S, "--json", "--control-socket"]).arg(socket_for(&env, S));
        c.args(["--", "bash", "-c", script, "writer"]).env(GATE, "1").env("T_OUT", &out);
        env.runtime(); // R exists before the run (writerctl never creates it)
        let p = Proc::spawn(c, "run (env)");
        let run_pid = p.pid();
        let r = p.finish();
        r.assert_ok();
        let text = std::fs::read_to_string(&out).unwrap();
        let vars: BTreeMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
        let lock_seen = std::fs::read(format!("{}.lock", out.display())).unwrap();
        let lock_seen: serde_json::Map<String, Value> = serde_json::from_slice(&lock_seen).unwrap();
        let rt = env.runtime();
        assert!(rt.is_absolute());
        let expected: BTreeMap<&str, String> = [
            ("WRITERCTL_RUNTIME_DIR", rt.display().to_string()),
            ("WRITERCTL_SESSION", S.to_owned()),
            ("WRITERCTL_LOCK", env.lock(S).display().to_string()),
            ("WRITERCTL_TRANSCRIPT", rt.join(format!("chats/{S}.jsonl")).display().to_string()),
            ("WRITERCTL_OWNER_TOKEN", lock_seen["owner_id"].as_str().unwrap().to_owned()),
            ("WRITERCTL_EPOCH", lock_seen["writerctl_epoch"].as_u64().unwrap().to_string()),
        ]
        .into_iter()
        .collect();
        for (k, v) in &expected {
            assert_eq!(vars.get(k).copied(), Some(v.as_str()), "relative {relative}: {k} in\n{text}");
        }
        // The lock the writer saw was the supervisor's active lock, and its token is that
        // lock's owner_id. The writer then exited 0 on its own: a normal close, released.
        assert_eq!(lock_seen["state"], "active");
        assert_eq!(lock_seen["pid"], run_pid);
        assert_eq!(r.json::<RunJson>().handoff, "released");
        assert!(!env.lock(S).exists(), "a normal close releases");
        assert!(uuid::Uuid::parse_str(vars["WRITERCTL_OWNER_TOKEN"]).is_ok(), "{text}");
        // Its own process group, as the log says.
        let writer_pid = vars["PID"];
        assert_eq!(vars["PGID"], writer_pid, "the writer is not its own process group leader");
        assert_ne!(writer_pid, run_pid.to_string());
        // In its own pid namespace, under init, under the launcher the log names.
        assert_eq!(vars["NS"], "own", "{text}");
        assert_eq!(one(&events(&r.stderr), "writer_started").fields["writer_pid"], vars["GPPID"]);
        assert_eq!(r.json::<RunJson>().pid_namespace.as_deref(), Some("own"));
        // The token is never logged.
        assert!(!r.stderr.contains(vars["WRITERCTL_OWNER_TOKEN"]) && !r.stdout.contains(vars["WRITERCTL_OWNER_TOKEN"]));
    }
}

// ---------------------------------------------------------------------------------------
// 7. gate off
// ---------------------------------------------------------------------------------------

#[test]
fn with_the_gate_off_a_stop_signal_releases_and_exits_0() {
    // Records which stop signal it got, then exits 0.
    let trapping = r#"
exec 2>>"$T_ERR"
trap 'echo TERM >"$T_SIG"; exit 0' TERM
trap 'echo INT >"$T_SIG"; exit 0' INT
trap 'echo HUP >"$T_SIG"; exit 0' HUP
# A grandchild in the writer's process group (background jobs ignore SIGINT, so INT is not
# checked for it). It records the first stop it got: after the writer exits, the supervisor
# also sends SIGTERM to anything left in the group.
(
  set -C
  trap 'echo TERM >"$T_SIG.grand"; exit 0' TERM
  trap 'echo HUP >"$T_SIG.grand"; exit 0' HUP
  : >"$T_READY.grand"
  while :; do sleep 0.05; done
) >/dev/null 2>&1 &
: >"$T_READY"
while :; do sleep 0.05; done
"#;
    let cases = [
        (Signal::TERM, "TERM", trapping, Some(0), None),
        (Signal::INT, "INT", trapping, Some(0), None),
        (Signal::HUP, "HUP", trapping, Some(0), None),
    ];
    for (sig, name, script, code, signal) in cases {
        let env = TestEnv::new();
        let s = "run-gate-off";
        let ready = env.tmp.path().join("ready");
        let got = env.tmp.path().join("got");
        let mut p = start_run(
            &env,
            s,
            false,
            &["--json", "--grace", "10"],
            script,
            &[("T_READY", ready.to_str().unwrap()), ("T_SIG", got.to_str().unwrap())],
        );
        let pid = p.pid();
        p.wait_event("writer_started");
        let grand_ready = PathBuf::from(format!("{}.grand", ready.display()));
        wait_until("the writer to be ready", || ready.exists() && grand_ready.exists());
        let lock = lock_json(&env, s);
        assert_eq!((lock["state"].as_str(), lock["pid"].as_u64()), (Some("active"), Some(pid as u64)));
        p.signal(sig);
        let r = p.finish();
        r.assert_ok();
        assert!(!env.lock(s).exists(), "SIG{name}: the lock was not released");
        assert_eq!(session_files(&env, s), Vec::<String>::new(), "SIG{name}: residue");
        let j: RunJson = r.json();
        assert_eq!(
            j,
            RunJson {
                session_id: s.into(),
                handoff: "released".into(),
                sealed_at: None,
                child_exit_code: code,
                child_signal: signal,
                pid_namespace: Some("own".into()),
                exit_code: 0
            },
            "SIG{name}"
        );
        let evs = events(&r.stderr);
        assert_session_on_every_event(&evs, s);
        // SIGINT reaches the writer only (a background job ignores it): its grandchild is
        // stopped by the supervisor before the release, as anything left behind is. After
        // SIGTERM or SIGHUP the grandchild may still be exiting when the writer is gone, so
        // the supervisor may or may not find it to stop.
        let mut got_names = names_without_waiting(&evs);
        if name != "INT" {
            got_names.retain(|n| *n != "descendants_stopped");
        }
        // Issue 38: with the gate off, `run` says at start that a stop only releases.
        let mut want =
            vec!["gate_off", "acquired", "listening", "pid_namespace", "writer_started", "stopping", "writer_exited"];
        if name == "INT" {
            want.push("descendants_stopped");
        }
        want.extend(["releasing", "released"]);
        assert_eq!(got_names, want, "SIG{name}");
        assert_eq!(one(&evs, "stopping").fields["signal"], sig.as_raw().to_string(), "SIG{name}");
        assert_eq!(std::fs::read_to_string(&got).unwrap().trim(), name, "the writer got another signal");
        if name != "INT" {
            // Forwarded to the whole group: the grandchild got it too.
            let grand = PathBuf::from(format!("{}.grand", got.display()));
            wait_until("the grandchild to get the signal", || grand.exists());
            assert_eq!(std::fs::read_to_string(&grand).unwrap().trim(), name);
        }
        kill_writer_group(&r.stderr);
        assert!(!socket_for(&env, s).exists());
    }
}

/// Issue 21 item 2: a writer that dies of the very stop signal it was sent had no handler,
/// so it drained nothing: the active lock is kept, gate on or off (before, this released or
/// sealed as if the stop had been clean).
#[test]
fn a_writer_killed_by_an_unhandled_stop_signal_keeps_the_active_lock() {
    let dying = r#"exec 2>>"$T_ERR"; : >"$T_READY"; exec sleep 1000"#;
    for gate in [false, true] {
        let env = TestEnv::new();
        let s = "run-unhandled-term";
        let ready = env.tmp.path().join("ready");
        let mut p =
            start_run(&env, s, gate, &["--json", "--grace", "10"], dying, &[("T_READY", ready.to_str().unwrap())]);
        let pid = p.pid();
        p.wait_event("writer_started");
        wait_until("the writer to be ready", || ready.exists());
        p.signal(Signal::TERM);
        let r = p.finish();
        r.assert_error(1, "writer_crashed");
        let msg: ErrorDoc = r.json();
        assert!(msg.error.message.contains("died of signal 15 after it was asked to stop"), "{}", msg.error.message);
        let lock = lock_json(&env, s);
        assert_eq!((lock["state"].as_str(), lock["pid"].as_u64()), (Some("active"), Some(pid as u64)), "gate {gate}");
        assert!(!socket_for(&env, s).exists());
    }
}

// ---------------------------------------------------------------------------------------
// 8. failures after the takeover, log lines, unsafe socket directories
// ---------------------------------------------------------------------------------------

/// A run that took over a seal and then cannot start (its writer does not exist, or its
/// control socket directory is not private) must not leave the session unsealed: like a
/// stop during acquisition, it hands the session back (seal), or refuses before taking it.
/// Either way the lock ends sealed with a matching proof, so the next managed run can still
/// take over only after validating it.
#[test]
fn a_run_that_cannot_start_after_a_takeover_leaves_the_session_sealed() {
    const S: &str = "run-cannot-start";
    for case in ["no such writer", "unsafe control socket directory"] {
        let env = TestEnv::new();
        let t = transcript_path(&env, S);
        std::fs::create_dir_all(t.parent().unwrap()).unwrap();
        std::fs::write(&t, b"{\"writer\":0,\"seq\":0}\n").unwrap();
        stage_qwen_seal(&env, S, "0c0c0c0c-0000-4000-8000-000000000001");
        let staged = std::fs::read(env.lock(S)).unwrap();
        let marker = env.tmp.path().join("writer-ran");
        let mut c = env.cmd();
        c.arg("run").arg("--runtime-dir").arg(env.runtime()).args(["--session", S, "--json"]).env(GATE, "1");
        if case == "no such writer" {
            c.arg("--control-socket").arg(socket_for(&env, S));
            c.args(["--", "/nonexistent/writer"]);
        } else {
            let open = env.tmp.path().join("open");
            std::fs::DirBuilder::new().mode(0o755).create(&open).unwrap();
            std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
            c.arg("--control-socket").arg(open.join("s.sock"));
            c.args(["--", "bash", "-c", r#": >"$T_MARK""#]).env("T_MARK", &marker);
        }
        let r = Proc::spawn(c, case).finish();
        r.assert_error(2, "invalid_argument");
        assert!(!marker.exists(), "{case}: the writer ran");
        let st = status_of(&env, S);
        assert_eq!(st.state, "sealed", "{case}: the session was left {} (stderr:\n{})", st.state, r.stderr);
        cli(&env, &["verify", "--json", "--session", S], false).assert_ok();
        assert_eq!(std::fs::read(env.lock(S)).unwrap(), staged, "{case}: the seal taken over is back byte for byte");
    }
}

/// The supervisor's log lines share stderr with its writer (and the writer's process
/// group); each must reach it whole, in one write of line and newline, or the writer's output
/// splices into them. Here a grandchild writes to stderr until the stop reaches it too.
#[test]
fn log_lines_stay_whole_while_the_writer_writes_to_the_same_stderr() {
    const RUNS: usize = 10;
    let script = r#"
( trap 'exit 0' TERM; while :; do printf 'writer noise\n' >&2; done ) &
read -r pid _ </proc/self/stat; echo $pid >"$T_READY.tmp" && mv "$T_READY.tmp" "$T_READY"
trap 'exit 0' TERM
while :; do sleep 0.05; done
"#;
    let env = TestEnv::new();
    let mut broken = Vec::new();
    for i in 0..RUNS {
        let ready = env.tmp.path().join(format!("ready-{i}"));
        let s = format!("run-noisy-{i}");
        let mut p = start_run(&env, &s, false, &["--grace", "10"], script, &[("T_READY", ready.to_str().unwrap())]);
        wait_until("the noisy writer to run", || ready.exists());
        let pgid: i32 = std::fs::read_to_string(&ready).unwrap().trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        p.signal(Signal::TERM);
        wait_until("the run to exit", || !p.running());
        // The grandchild ignores SIGTERM and holds the pipes: end it before collecting.
        let _ = rustix::process::kill_process_group(rustix::process::Pid::from_raw(pgid).unwrap(), Signal::KILL);
        let r = p.finish();
        assert_eq!(
            r.code,
            0,
            "{}",
            r.stderr.lines().filter(|l| l.contains("writerctl")).collect::<Vec<_>>().join("\n")
        );
        assert!(!env.lock(&s).exists(), "not released");
        for l in r.stderr.lines().filter(|l| l.contains("writerctl: event=")) {
            if !l.starts_with("writerctl: event=") || !l.ends_with('"') {
                broken.push(l.to_owned());
            }
        }
    }
    assert!(broken.is_empty(), "log lines spliced with the writer's output:\n{}", broken.join("\n"));
}

#[test]
fn a_tokenless_seal_with_an_unsafe_socket_directory_is_invalid_argument() {
    const S: &str = "run-unsafe-socket-dir";
    let env = TestEnv::new();
    let open = env.tmp.path().join("open");
    std::fs::DirBuilder::new().mode(0o755).create(&open).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let before = tree(&env.runtime());
    let mut c = env.cmd();
    c.args(["seal", "--json", "--session", S, "--runtime-dir"]).arg(env.runtime()).env(GATE, "1");
    c.arg("--control-socket").arg(open.join("s.sock"));
    let r = Proc::spawn(c, "seal (unsafe socket dir)").finish();
    // No supervisor can serve this path (`run` refuses it with invalid_argument too).
    r.assert_error(2, "invalid_argument");
    assert_eq!(tree(&env.runtime()), before);
}

// ---------------------------------------------------------------------------------------
// the writer's whole process group, crashes, and the supervisor's own death
// ---------------------------------------------------------------------------------------

/// The writer's leader exits cleanly, but a process it left in its group keeps appending
/// and ignores SIGTERM: it gets the rest of the grace period, then SIGKILL, and only once
/// the kernel says no descendant is left is the transcript sealed (issue 21: "past --grace
/// it kills them and still seals only a transcript no process can reach").
///
/// The same in the shared pid namespace (`off`) and in an own one (`auto`): init stays until
/// the namespace is empty, so the supervisor's drain reaches the straggler the same way.
#[test]
fn a_straggler_in_the_writers_group_is_killed_before_the_seal() {
    for mode in ["off", "auto"] {
        straggler_is_killed_before_the_seal(mode);
    }
}

fn straggler_is_killed_before_the_seal(mode: &str) {
    let s = format!("run-straggler-{mode}");
    let s = s.as_str();
    let env = TestEnv::new();
    let ready = env.tmp.path().join("ready");
    let script = r#"
trap 'exit 0' TERM
( trap '' TERM; : >"$T_READY"; while :; do echo '{"straggler":true}' >> "$WRITERCTL_TRANSCRIPT"; sleep 0.05; done ) &
while :; do sleep 0.05; done
"#;
    let extra = ["--json", "--grace", "1", "--pid-namespace", mode];
    let mut p = start_run(&env, s, true, &extra, script, &[("T_READY", ready.to_str().unwrap())]);
    let pid = p.pid();
    p.wait_event("writer_started");
    wait_until("the writer to be ready", || ready.exists());
    p.signal(Signal::TERM);
    let r = p.finish();
    r.assert_ok();
    let evs = events(&r.stderr);
    let mut want = vec!["acquired", "listening", "pid_namespace", "writer_started", "stopping", "writer_exited"];
    want.push("descendants_stopped");
    assert_eq!(one(&evs, "descendants_stopped").fields["killed"], "true", "{mode}");
    want.extend(["sealing", "seal"]);
    assert_eq!(names_without_waiting(&evs), want, "{mode}");
    assert_eq!(one(&evs, "pid_namespace").fields["mode"], if mode == "off" { "shared" } else { "own" });
    // Nothing writes any more, and the seal certifies exactly what is there.
    assert_transcript_stays(&env, s, "a writer survived");
    assert_sealed_matching(&env, s, pid);
}

/// Issue 21 item 1, reproduced as filed: generation 1's writer starts a process that
/// leaves its process group (`setsid`) and appends 1.5 s later; generation 2 waits; SIGTERM
/// to generation 1. Before: generation 1 sealed at once, generation 2 took over, and the
/// late line landed between generation 2's lines. Now generation 1 stops the escaped
/// process before it seals, so the late line never lands.
#[test]
fn an_escaped_descendant_is_stopped_before_the_seal_and_never_writes_after_the_handoff() {
    for mode in ["off", "auto"] {
        escaped_descendant_never_writes_after_the_handoff(mode);
    }
}

/// In both modes the supervisor's drain stops it with SIGTERM (in an own namespace, init
/// waits for it).
fn escaped_descendant_never_writes_after_the_handoff(mode: &str) {
    let s = format!("run-escaped-{mode}");
    let s = s.as_str();
    let env = TestEnv::new();
    let ready = env.tmp.path().join("ready");
    let gen1 = r#"
trap 'exit 0' TERM
echo '{"gen":1}' >> "$WRITERCTL_TRANSCRIPT"
setsid sh -c 'sleep 1.5; echo "{\"late\":1}" >> "$WRITERCTL_TRANSCRIPT"' &
: >"$T_READY"
while :; do sleep 0.05; done
"#;
    let gen2 = r#"
trap 'exit 0' TERM
while :; do echo '{"gen":2}' >> "$WRITERCTL_TRANSCRIPT"; sleep 0.1; done
"#;
    std::fs::create_dir_all(transcript_path(&env, s).parent().unwrap()).unwrap();
    let extra = ["--json", "--grace", "10", "--pid-namespace", mode];
    let mut g1 = start_run(&env, s, true, &extra, gen1, &[("T_READY", ready.to_str().unwrap())]);
    g1.wait_event("writer_started");
    wait_until("generation 1 to be ready", || ready.exists());
    // The same control socket: generation 2 binds it only once it holds the lock.
    let mut g2 = start_run(&env, s, true, &["--json", "--wait", "20"], gen2, &[]);
    std::thread::sleep(Duration::from_millis(300));
    g1.signal(Signal::TERM);
    let r1 = g1.finish();
    r1.assert_ok();
    let j: RunJson = r1.json();
    assert_eq!(j.handoff, "sealed");
    let evs = events(&r1.stderr);
    assert_eq!(one(&evs, "descendants_stopped").fields["killed"], "false", "{mode}: SIGTERM was enough");
    g2.wait_event("writer_started");
    // Past the escaped process's 1.5 s: its line must not appear.
    std::thread::sleep(Duration::from_millis(2500));
    g2.signal(Signal::TERM);
    g2.finish().assert_ok();
    let lines = jsonl(&transcript_path(&env, s));
    assert!(
        lines.iter().all(|l| !l.contains_key("late")),
        "{mode}: the escaped descendant wrote after the handoff: {lines:?}"
    );
    assert!(lines.iter().filter(|l| l.get("gen") == Some(&Value::from(2))).count() >= 5, "{lines:?}");
}

/// A writer that dies of a signal nobody sent as a stop (a crash, an OOM kill) did not
/// drain: the lock is kept, whatever the gate says.
#[test]
fn a_writer_that_crashes_keeps_the_active_lock() {
    for gate in [true, false] {
        let env = TestEnv::new();
        let s = "run-crash";
        let p = start_run(&env, s, gate, &["--json"], r#"sleep 0.2; kill -SEGV $$"#, &[]);
        let r = p.finish();
        r.assert_error(1, "writer_crashed");
        let lock = lock_json(&env, s);
        assert_eq!(lock["state"].as_str(), Some("active"), "gate {gate}");
    }
}

/// SIGKILL to the supervisor takes its writer down with it (the launcher set
/// PR_SET_PDEATHSIG), so no writer appends under a lock whose holder is gone.
#[test]
fn a_killed_supervisor_takes_its_writer_with_it() {
    const S: &str = "run-kill-9";
    let env = TestEnv::new();
    let ready = env.tmp.path().join("ready");
    let mut p = start_run(
        &env,
        S,
        true,
        &[],
        r#"read -r pid _ </proc/self/stat; echo $pid >"$T_READY.tmp"; mv "$T_READY.tmp" "$T_READY"; while :; do sleep 0.05; done"#,
        &[("T_READY", ready.to_str().unwrap())],
    );
    p.wait_event("writer_started");
    wait_until("the writer to be ready", || ready.exists());
    let writer: u32 = std::fs::read_to_string(&ready).unwrap().trim().parse().unwrap();
    p.signal(Signal::KILL);
    let _ = p.finish();
    wait_until("the writer to die with its supervisor", || !pid_alive(writer));
}

/// A writer stopped by job control cannot run its stop handler; the supervisor sends
/// SIGCONT after the stop signal, so it drains and the session is sealed.
#[test]
fn a_stopped_writer_is_continued_so_it_can_drain() {
    const S: &str = "run-stopped";
    let env = TestEnv::new();
    let ready = env.tmp.path().join("ready");
    let script = r#"trap 'exit 0' TERM; : >"$T_READY"; kill -STOP $$; while :; do sleep 0.05; done"#;
    let mut p = start_run(&env, S, true, &["--json", "--grace", "10"], script, &[("T_READY", ready.to_str().unwrap())]);
    p.wait_event("writer_started");
    wait_until("the writer to stop itself", || ready.exists());
    std::thread::sleep(Duration::from_millis(200));
    p.signal(Signal::TERM);
    let r = p.finish();
    r.assert_ok();
    assert_eq!(lock_json(&env, S)["state"].as_str(), Some("sealed"));
}

/// A second preStop `seal` after the handoff (the supervisor no longer listens) reports the
/// seal already on disk instead of "no supervisor".
#[test]
fn a_repeated_prestop_seal_reports_the_seal_on_disk() {
    const S: &str = "run-prestop-twice";
    let env = TestEnv::new();
    let ready = env.tmp.path().join("ready");
    let mut p = start_run(
        &env,
        S,
        true,
        &[],
        r#"trap 'exit 0' TERM; : >"$T_READY"; while :; do sleep 0.05; done"#,
        &[("T_READY", ready.to_str().unwrap())],
    );
    p.wait_event("writer_started");
    wait_until("the writer to be ready", || ready.exists());
    let seal = || {
        let mut c = env.cmd();
        c.args(["seal", "--json", "--session", S, "--runtime-dir"]).arg(env.runtime());
        c.arg("--control-socket").arg(socket_for(&env, S)).env(GATE, "1");
        Proc::spawn(c, "seal (preStop)").finish()
    };
    let first: SealJson = seal().assert_ok().json();
    let second: SealJson = seal().assert_ok().json();
    assert_eq!(first, second);
    p.signal(Signal::TERM);
    p.finish().assert_ok();
}

/// Issue 18 item 5: while the writer runs, the supervisor re-reads its lock every
/// `--check-interval`. Moved away (as a `recover` elsewhere would) or replaced by a
/// byte-identical copy, the lock is lost: the writer is stopped, nothing is sealed or
/// released, and run exits 3 (session_not_owner). So is a lock whose whole directory was
/// moved away (issue 27 item 3): the record still reads as ours through the held directory
/// descriptor, but the path — where everyone else looks — names another directory.
#[test]
fn a_lost_lock_stops_the_writer_and_nothing_is_handed_off() {
    for how in ["moved away", "replaced by a copy", "directory moved away"] {
        let env = TestEnv::new();
        let s = "run-lost";
        let ready = env.tmp.path().join("ready");
        let script = r#"trap 'exit 0' TERM; : >"$T_READY"; while :; do echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"; sleep 0.05; done"#;
        std::fs::create_dir_all(transcript_path(&env, s).parent().unwrap()).unwrap();
        let mut p = start_run(
            &env,
            s,
            true,
            &["--json", "--grace", "5", "--check-interval", "0.2"],
            script,
            &[("T_READY", ready.to_str().unwrap())],
        );
        p.wait_event("writer_started");
        wait_until("the writer to be ready", || ready.exists());
        let lock = env.lock(s);
        let aside = env.lock_dir().join("moved-by-an-operator");
        let dir_aside = env.runtime().join("tmp/locks-moved-by-an-operator");
        let original = std::fs::read(&lock).unwrap();
        match how {
            "moved away" => std::fs::rename(&lock, &aside).unwrap(),
            "directory moved away" => std::fs::rename(env.lock_dir(), &dir_aside).unwrap(),
            _ => {
                std::fs::write(&aside, &original).unwrap();
                std::fs::rename(&aside, &lock).unwrap();
            }
        }
        let r = p.finish();
        r.assert_error(3, "session_not_owner");
        let evs = events(&r.stderr);
        let names = names_without_waiting(&evs);
        assert!(
            names.contains(&"lock_lost") && !names.contains(&"sealing") && !names.contains(&"releasing"),
            "{how}: {names:?}"
        );
        if how == "directory moved away" {
            assert!(one(&evs, "lock_lost").fields["reason"].contains("moved or replaced"), "{evs:?}");
        }
        // Nothing was handed off: the moved record is untouched, and L is whatever the
        // operator left (absent, or the copy).
        match how {
            "moved away" => {
                assert!(!lock.exists(), "{how}: the supervisor recreated the lock");
                assert_eq!(std::fs::read(&aside).unwrap(), original);
            }
            "directory moved away" => {
                assert!(!lock.exists(), "{how}: the supervisor recreated the lock");
                assert_eq!(std::fs::read(dir_aside.join(format!("{s}.lock"))).unwrap(), original, "{how}");
            }
            _ => assert_eq!(std::fs::read(&lock).unwrap(), original),
        }
        // The writer is gone: the transcript stops growing.
        assert_transcript_stays(&env, s, &format!("{how}: the writer still writes"));
    }
}

/// Issue 27 item 3: the lock is checked while the writer drains, too. Replaced by a copy
/// after the stop began, it is lost: no seal, no release, exit 3 — where before the drain
/// went unchecked and the loss surfaced only as a failed seal.
#[test]
fn a_lock_lost_while_the_writer_drains_is_lost_and_nothing_is_handed_off() {
    let env = TestEnv::new();
    let s = "run-lost-draining";
    let ready = env.tmp.path().join("ready");
    let drained = env.tmp.path().join("drained");
    // The writer takes its time to drain: until the test has replaced the lock.
    let script = r#"trap 'while [ ! -e "$T_GO" ]; do sleep 0.05; done; exit 0' TERM; : >"$T_READY"; while :; do sleep 0.05; done"#;
    let mut p = start_run(
        &env,
        s,
        true,
        &["--json", "--grace", "15", "--check-interval", "0.1"],
        script,
        &[("T_READY", ready.to_str().unwrap()), ("T_GO", drained.to_str().unwrap())],
    );
    p.wait_event("writer_started");
    wait_until("the writer to be ready", || ready.exists());
    p.signal(Signal::TERM);
    p.wait_event("stopping");
    let lock = env.lock(s);
    let original = std::fs::read(&lock).unwrap();
    let aside = env.lock_dir().join("copy-by-an-operator");
    std::fs::write(&aside, &original).unwrap();
    std::fs::rename(&aside, &lock).unwrap();
    p.wait_event("lock_lost");
    std::fs::write(&drained, b"").unwrap();
    let r = p.finish();
    r.assert_error(3, "session_not_owner");
    let names = names_without_waiting(&events(&r.stderr)).into_iter().map(str::to_owned).collect::<Vec<_>>();
    let lost_at = names.iter().position(|n| n == "lock_lost").unwrap();
    assert!(names.iter().position(|n| n == "writer_exited").is_none_or(|e| e > lost_at), "{names:?}");
    assert!(!names.iter().any(|n| n == "sealing" || n == "releasing"), "{names:?}");
    assert_eq!(std::fs::read(&lock).unwrap(), original, "the copy is left as the operator put it");
}

/// Issue 27 item 3: `--check-interval` must not ignore I/O errors forever. The lock
/// directory's path turned into a symlink loop (ELOOP on every check: nothing proves the
/// lock lost, nothing proves it held) — after `--max-unverified` the writer is stopped as if
/// the lock were lost, and nothing is handed off.
#[test]
fn a_lock_unverifiable_past_max_unverified_is_treated_as_lost() {
    let env = TestEnv::new();
    let s = "run-unverifiable";
    let ready = env.tmp.path().join("ready");
    let script = r#"trap 'exit 0' TERM; : >"$T_READY"; while :; do sleep 0.05; done"#;
    let extra = ["--json", "--grace", "5", "--check-interval", "0.1", "--max-unverified", "1"];
    let mut p = start_run(&env, s, true, &extra, script, &[("T_READY", ready.to_str().unwrap())]);
    p.wait_event("writer_started");
    wait_until("the writer to be ready", || ready.exists());
    let dir = env.lock_dir();
    let aside = env.runtime().join("tmp/locks-aside");
    let original = std::fs::read(env.lock(s)).unwrap();
    std::fs::rename(&dir, &aside).unwrap();
    std::os::unix::fs::symlink("session-writer-locks", &dir).unwrap();
    p.wait_event("lock_lost");
    let r = p.finish();
    r.assert_error(3, "session_not_owner");
    let evs = events(&r.stderr);
    let reason = &one(&evs, "lock_lost").fields["reason"];
    assert!(reason.contains("could not be verified") && reason.contains("--max-unverified 1s"), "{reason}");
    let names = names_without_waiting(&evs);
    assert!(!names.contains(&"sealing") && !names.contains(&"releasing"), "{names:?}");
    assert_eq!(std::fs::read(aside.join(format!("{s}.lock"))).unwrap(), original, "nothing was handed off");
}

// ---------------------------------------------------------------------------------------
// the seal's exclusivity proof (issue 27 item 3)
// ---------------------------------------------------------------------------------------

/// A plain handoff proves, with a momentary read lease, that nothing could still write the
/// transcript, and the seal says so: in the record (`writerctl_exclusive`), and in verify
/// and status --json (`exclusive`).
#[test]
fn a_seal_records_its_exclusivity_proof() {
    const S: &str = "run-exclusive";
    let env = TestEnv::new();
    let ready = env.tmp.path().join("ready");
    let script =
        r#"trap 'exit 0' TERM; echo '{"a":1}' >>"$WRITERCTL_TRANSCRIPT"; : >"$T_READY"; while :; do sleep 0.05; done"#;
    let mut p = start_run(&env, S, true, &["--json"], script, &[("T_READY", ready.to_str().unwrap())]);
    p.wait_event("writer_started");
    wait_until("the writer to be ready", || ready.exists());
    p.signal(Signal::TERM);
    let r = p.finish();
    r.assert_ok();
    assert_eq!(lock_json(&env, S)["writerctl_exclusive"], "read_lease");
    assert_eq!(one(&events(&r.stderr), "seal").fields["exclusive"], "read_lease");
    let v: Value =
        serde_json::from_str(&cli(&env, &["verify", "--json", "--session", S], false).assert_ok().stdout).unwrap();
    assert_eq!(v["exclusive"], "read_lease", "{v}");
    assert_eq!(status_of(&env, S).proof.expect("sealed").exclusive.as_deref(), Some("read_lease"));
}

/// Issue 27 item 3, reproduced: the writer passes its transcript descriptor over a unix
/// socket (SCM_RIGHTS) to a process outside its tree, then stops cleanly. The drain proves
/// no process of the tree is left — but the passed description can still append. Before:
/// sealed, exit 0. Now: the lease is refused, nothing is sealed, the active lock is kept,
/// and run exits 75 (session_writer_unavailable) naming the cause.
#[test]
fn a_transcript_descriptor_passed_outside_the_tree_refuses_the_seal() {
    const S: &str = "run-scm-rights";
    let Some(python) = ["/usr/bin/python3", "/bin/python3"].into_iter().find(|p| Path::new(p).exists()) else {
        crate::services::skip(
            "a_transcript_descriptor_passed_outside_the_tree_refuses_the_seal",
            "python3 is not installed",
        );
        return;
    };
    let env = TestEnv::new();
    let sock = env.tmp.path().join("fd.sock");
    let got = env.tmp.path().join("got");
    let ready = env.tmp.path().join("ready");
    // The outside process: not started by run, so neither its drain nor its namespace reaches it.
    let mut holder = Command::new(python)
        .args([
            "-c",
            "import socket,sys,time\nl=socket.socket(socket.AF_UNIX)\nl.bind(sys.argv[1])\nl.listen(1)\nc,_=l.accept()\n_,fds,_,_=socket.recv_fds(c,16,4)\nopen(sys.argv[2]+'.tmp','w').write(str(fds))\nimport os\nos.rename(sys.argv[2]+'.tmp',sys.argv[2])\ntime.sleep(600)\n",
        ])
        .arg(&sock)
        .arg(&got)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    struct Kill<'a>(&'a mut Child);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _guard = Kill(&mut holder);
    wait_until("the outside process to listen", || sock.exists());
    let script = format!(
        r#"trap 'exit 0' TERM
{python} -c 'import socket,os,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
fd=os.open(sys.argv[2], os.O_WRONLY|os.O_APPEND|os.O_CREAT, 0o600)
os.write(fd, b"{{\"a\":1}}\n")
socket.send_fds(s, [b"x"], [fd])' "$T_SOCK" "$WRITERCTL_TRANSCRIPT" || exit 9
: >"$T_READY"
while :; do sleep 0.05; done"#
    );
    let vars = [("T_READY", ready.to_str().unwrap()), ("T_SOCK", sock.to_str().unwrap())];
    let mut p = start_run(&env, S, true, &["--json"], &script, &vars);
    p.wait_event("writer_started");
    wait_until("the writer to pass its descriptor", || ready.exists() && got.exists());
    let lock_before = std::fs::read(env.lock(S)).unwrap();
    p.signal(Signal::TERM);
    let r = p.finish();
    r.assert_error(75, "session_writer_unavailable");
    let doc: ErrorDoc = r.json();
    assert!(doc.error.message.contains("open file description"), "{}", doc.error.message);
    assert!(doc.error.hint.as_deref().is_some_and(|h| h.contains("holds the transcript open")), "{:?}", doc.error.hint);
    assert_eq!(std::fs::read(env.lock(S)).unwrap(), lock_before, "the active lock is kept, byte for byte");
    assert!(!names_without_waiting(&events(&r.stderr)).contains(&"seal"), "{}", r.stderr);
}

// ---------------------------------------------------------------------------------------
// issue 40: a control socket that cannot be made, found before the lock is taken
// ---------------------------------------------------------------------------------------

/// A tmpfs at `dir`, unmounted (lazily) on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs at `dir` holding `writerctl/` (0700, ours) and remounts it read-only:
    /// an image's read-only root filesystem that ships the socket directory. None (after a
    /// loud skip) where this process may not mount.
    fn read_only_with_socket_dir(test: &str, dir: &Path) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let mount = |args: &[&str]| Command::new("mount").args(args).arg(dir).output();
        match mount(&["-t", "tmpfs", "-o", "mode=0700,size=1m", "tmpfs"]) {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                crate::services::skip(test, &format!("cannot mount a tmpfs (root needed): {}", String::from_utf8_lossy(&o.stderr).trim()));
                return None;
            }
            Err(e) => {
                crate::services::skip(test, &format!("cannot run mount: {e}"));
                return None;
            }
        }
        let t = Tmpfs(dir.to_path_buf());
        std::fs::DirBuilder::new().mode(0o700).create(dir.join("writerctl")).unwrap();
        let o = mount(&["-o", "remount,ro"]).unwrap();
        assert!(o.status.success(), "remount ro: {}", String::from_utf8_lossy(&o.stderr));
        Some(t)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Issue 40: with a read-only root filesystem the socket directory may already exist
/// (`mkdir` answers EEXIST before EROFS), so only binding finds out that no socket can be
/// made there. `run` must find out before it takes the session — not take over a seal, fail
/// to bind, hand the session back and exit, once per container restart — and say where a
/// socket can go.
#[test]
fn a_control_socket_that_cannot_be_bound_fails_run_before_the_lock_is_taken() {
    const S: &str = "run-read-only-socket-dir";
    let test = "a_control_socket_that_cannot_be_bound_fails_run_before_the_lock_is_taken";
    let env = TestEnv::new();
    let xdg = env.tmp.path().join("xdg");
    let Some(_ro) = Tmpfs::read_only_with_socket_dir(test, &xdg) else { return };
    let t = transcript_path(&env, S);
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    std::fs::write(&t, b"{\"writer\":0,\"seq\":0}\n").unwrap();
    stage_qwen_seal(&env, S, "0c0c0c0c-0000-4000-8000-000000000040");
    let before = tree(&env.runtime());
    let marker = env.tmp.path().join("writer-ran");
    let run = |xdg: &Path| {
        let mut c = env.cmd();
        c.arg("run").arg("--runtime-dir").arg(env.runtime()).args(["--session", S, "--json"]).env(GATE, "1");
        c.env("XDG_RUNTIME_DIR", xdg).env("T_MARK", &marker);
        c.args(["--", "bash", "-c", r#": >"$T_MARK""#]);
        Proc::spawn(c, "run (read-only socket directory)").finish()
    };
    let r = run(&xdg);
    r.assert_error(2, "invalid_argument");
    let doc: ErrorDoc = r.json();
    let dir = xdg.join("writerctl");
    assert!(doc.error.message.contains(dir.to_str().unwrap()), "{}", doc.error.message);
    assert!(doc.error.message.contains("Read-only file system"), "{}", doc.error.message);
    let hint = doc.error.hint.unwrap_or_default();
    assert!(hint.contains("XDG_RUNTIME_DIR") && hint.contains("emptyDir") && hint.contains("nothing was taken"), "{hint}");
    assert!(!marker.exists(), "the writer ran");
    // Nothing under R changed: no takeover, no give-back, no history line.
    assert_eq!(tree(&env.runtime()), before, "run touched the session before checking its socket");
    // The same run with a writable socket directory takes the session over.
    let writable = env.tmp.path().join("xdg-rw");
    std::fs::DirBuilder::new().mode(0o700).create(&writable).unwrap();
    let ok = run(&writable);
    ok.assert_ok();
    assert!(marker.exists(), "the writer did not run: {}", ok.stderr);
}

/// Issue 40: the manifests' exec-form preStop hook, `["writerctl", "seal", "--timeout",
/// "100"]`: no shell to expand `$SESSION_ID`, no flag naming the session or R. `run` and
/// `seal` both read WRITERCTL_SESSION, WRITERCTL_RUNTIME_DIR and XDG_RUNTIME_DIR from the
/// container's environment, and meet at the same control socket.
#[test]
fn an_exec_form_prestop_seal_finds_its_session_in_the_environment() {
    const S: &str = "run-session-from-env";
    let env = TestEnv::new();
    let xdg = env.tmp.path().join("xdg");
    std::fs::DirBuilder::new().mode(0o700).create(&xdg).unwrap();
    let pod = |c: &mut Command| {
        c.env("WRITERCTL_SESSION", S).env("WRITERCTL_RUNTIME_DIR", env.runtime()).env("XDG_RUNTIME_DIR", &xdg);
        c.env(GATE, "1");
    };
    let script = r#"exec 2>>"$T_ERR"; trap 'exit 0' TERM; echo "$WRITERCTL_SESSION" >"$T_READY.tmp"; mv "$T_READY.tmp" "$T_READY"; while :; do sleep 0.05; done"#;
    let ready = env.tmp.path().join("ready");
    let mut c = env.cmd();
    c.args(["run", "--", "bash", "-c", script, "writer"]).env("T_READY", &ready);
    c.env("T_ERR", env.tmp.path().join("writer.err"));
    pod(&mut c);
    let mut p = Proc::spawn(c, "run (session from the environment)");
    p.wait_event("writer_started");
    wait_until("the writer to be ready", || ready.exists());
    assert_eq!(std::fs::read_to_string(&ready).unwrap().trim(), S);
    let mut c = env.cmd();
    c.args(["seal", "--timeout", "100", "--json"]);
    pod(&mut c);
    let sr = Proc::spawn(c, "seal (exec-form preStop)").finish();
    sr.assert_ok();
    let sj: SealJson = sr.json();
    assert_eq!((sj.session_id.as_str(), sj.state.as_str()), (S, "sealed"));
    let run_pid = p.pid();
    p.signal(Signal::TERM);
    p.finish().assert_ok();
    assert_sealed_matching(&env, S, run_pid);
    // Without the variable (and no --session), seal names both ways to give it.
    let mut c = env.cmd();
    c.args(["seal", "--json"]).env("WRITERCTL_RUNTIME_DIR", env.runtime()).env("XDG_RUNTIME_DIR", &xdg).env(GATE, "1");
    let r = Proc::spawn(c, "seal (no session anywhere)").finish();
    r.assert_error(2, "invalid_argument");
    let doc: ErrorDoc = r.json();
    assert!(doc.error.message.contains("--session") && doc.error.message.contains("WRITERCTL_SESSION"), "{}", doc.error.message);
    // `status` reads only the flag: a WRITERCTL_SESSION naming another session does not
    // narrow "every session under R".
    let mut c = env.cmd();
    c.args(["status"]).env("WRITERCTL_SESSION", "some-other-session").env("WRITERCTL_RUNTIME_DIR", env.runtime());
    let st = Proc::spawn(c, "status (every session)").finish();
    st.assert_ok();
    assert!(st.stdout.contains(S) && !st.stdout.contains("some-other-session"), "{}", st.stdout);
}
