//! Issue 38, reproduction 7: a torn tail has a path back.
//!
//! A writer killed in the middle of a line used to leave a dead end: every later `acquire`
//! and `run` exited 4 speaking of a "sealed proof" that did not exist, `recover` planned
//! nothing and exited 0, and `status` said `acquire` could take the session. Here the real
//! binary is taken through the whole way back: the writer dies mid-line, `status` and
//! `doctor` name the tail with its offsets and the repair command, `acquire` refuses without
//! speaking of a seal, `recover` plans the repair and, with `--writers-fenced --yes`, keeps
//! the cut bytes beside the transcript and truncates it, after which `acquire` and `run`
//! start normally.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

const S: &str = "torn-session";
const LIMIT: Duration = Duration::from_secs(30);
const WHOLE: &[u8] = b"{\"a\":1}\n";
const CUT: &[u8] = b"{\"torn\":";

fn transcript(env: &TestEnv) -> PathBuf {
    env.runtime().join(format!("chats/{S}.jsonl"))
}

fn cli(env: &TestEnv, args: &[&str]) -> Run {
    let mut c = env.cmd();
    c.args(args).arg("--runtime-dir").arg(env.runtime());
    run_bounded(c, LIMIT).unwrap_or_else(|| panic!("`{}` hung", args.join(" ")))
}

fn json(r: &Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", r.stdout, r.stderr))
}

/// Starts `writerctl run` whose writer appends one whole line and half of the next, then
/// waits; returns the supervisor once the half line is written.
fn writer_mid_line(env: &TestEnv) -> std::process::Child {
    let ready = env.tmp.path().join("ready");
    let script =
        format!(r#"printf '{{"a":1}}\n{{"torn":' >>"$WRITERCTL_TRANSCRIPT"; : >{}; exec sleep 1000"#, ready.display());
    let mut c = env.cmd();
    c.args(["run", "--session", S, "--runtime-dir"]).arg(env.runtime()).args(["--", "sh", "-c", &script]);
    let run = c.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let until = Instant::now() + LIMIT;
    while !ready.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ready.exists(), "the writer never started");
    run
}

/// `pid`'s parent and whether it has exited (no process, or a zombie: its descriptors,
/// holder lock included, are closed).
fn stat_of(pid: i32) -> Option<(i32, bool)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    let mut fields = rest.split(' ');
    let zombie = fields.next()? == "Z";
    Some((fields.next()?.parse().ok()?, zombie))
}

/// Every process descended from `root` now (the supervisor, its exec helper, the writer's
/// pid-namespace init and the writer), found by parent links in /proc: the writer runs in
/// its own pid namespace, so its `$$` is not a pid this test can signal.
fn tree_of(root: i32) -> Vec<i32> {
    let all: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, stat_of(pid)?.0)))
        .collect();
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(all.iter().filter(|(_, pp)| *pp == parent).map(|(pid, _)| *pid));
        i += 1;
    }
    tree
}

/// SIGKILLs the supervisor and everything it started, at once (an OOM kill of the
/// container, a node's power loss), and waits until none of them runs.
fn kill_tree(mut run: std::process::Child) {
    let tree = tree_of(run.id() as i32);
    assert!(tree.len() >= 3, "the writer's processes were not found: {tree:?}");
    for pid in &tree {
        let _ =
            rustix::process::kill_process(rustix::process::Pid::from_raw(*pid).unwrap(), rustix::process::Signal::KILL);
    }
    run.wait().unwrap();
    let alive = || tree.iter().any(|pid| stat_of(*pid).is_some_and(|(_, zombie)| !zombie));
    let until = Instant::now() + LIMIT;
    while alive() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(), "a process of the writer's tree survived SIGKILL");
}

/// Side files beside the transcript whose names say they hold cut bytes.
fn side_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(&format!("{S}.jsonl.torn-")))
        .collect();
    v.sort();
    v
}

#[test]
fn a_writer_killed_mid_line_is_named_repaired_with_its_bytes_kept_and_the_session_starts_again() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.runtime().join("chats")).unwrap();
    kill_tree(writer_mid_line(&env));
    let length = (WHOLE.len() + CUT.len()) as u64;
    assert_eq!(std::fs::read(transcript(&env)).unwrap(), [WHOLE, CUT].concat());

    // status names the tail, its offsets and the repair (it used to say `acquire` could take it).
    let st = cli(&env, &["status", "--session", S, "--json"]);
    st.assert_ok();
    let st = json(&st);
    assert_eq!(
        st["transcript_tail"],
        serde_json::json!({"state": "torn", "complete_bytes": WHOLE.len(), "length": length, "kept_cut_files": []}),
        "{st:#}"
    );
    let next = st["next_step"].as_str().unwrap();
    assert!(next.contains(&format!("writerctl recover --session {S} --writers-fenced --yes")), "{next}");
    assert!(next.contains("last complete line ends at byte 8"), "{next}");
    let text = cli(&env, &["status", "--session", S]);
    assert!(text.stdout.contains("transcript: torn — ends in an incomplete line at byte 16"), "{}", text.stdout);

    // doctor fails it, with the same repair as its hint.
    let doc = cli(&env, &["doctor", "--json"]);
    assert_eq!(doc.code, 1, "{}{}", doc.stdout, doc.stderr);
    let doc = json(&doc);
    let check = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == format!("transcript.{S}"));
    let check = check.unwrap_or_else(|| panic!("no transcript check: {doc:#}"));
    assert_eq!(check["verdict"], "fail");
    assert!(check["detail"].as_str().unwrap().contains("last complete line ends at byte 8"), "{check}");
    assert!(
        check["hint"].as_str().unwrap().contains(&format!("writerctl recover --session {S} --writers-fenced --yes"))
    );

    // The crashed run's lock is proven free by the kernel (issue 38): acquire takes it and is
    // told the tail is torn — no dead end. Released again, the session has no lock, and a
    // fresh acquire refuses the torn transcript: exit 4, speaking of the tail, not of a seal.
    let tok0 = env.tmp.path().join("t0.token");
    let taken = cli(&env, &["acquire", "--json", "--session", S, "--token-file", tok0.to_str().unwrap()]);
    taken.assert_ok();
    assert_eq!(json(&taken)["transcript_tail"], "torn", "{}", taken.stdout);
    cli(&env, &["release", "--json", "--session", S, "--token-file", tok0.to_str().unwrap()]).assert_ok();
    let a = cli(&env, &["acquire", "--json", "--session", S]);
    a.assert_error(4, "session_transcript_changed");
    let err = json(&a);
    let (message, hint) = (err["error"]["message"].as_str().unwrap(), err["error"]["hint"].as_str().unwrap());
    assert!(message.contains("incomplete line at byte 16 (last complete line ends at byte 8)"), "{message}");
    assert!(!message.contains("seal") && !hint.contains("sealed proof"), "{message} / {hint}");
    assert!(!hint.contains("nothing was changed"), "{hint}");
    assert!(hint.contains("writerctl recover"), "{hint}");

    // recover plans the repair (it used to plan nothing) and changes nothing without consent.
    let plan = cli(&env, &["recover", "--session", S, "--json"]);
    plan.assert_ok();
    let plan = json(&plan);
    let repair = plan["actions"].as_array().unwrap().iter().find(|a| a["action"] == "repair_tail").cloned();
    let repair = repair.unwrap_or_else(|| panic!("no repair planned: {plan:#}"));
    assert_eq!(
        (repair["file"].as_str(), repair["complete_bytes"].as_u64(), repair["cut_bytes"].as_u64()),
        (Some(format!("chats/{S}.jsonl").as_str()), Some(8), Some(CUT.len() as u64))
    );
    assert_eq!(std::fs::read(transcript(&env)).unwrap(), [WHOLE, CUT].concat(), "a plan changes nothing");

    // Carried out: the cut bytes in a side file beside the transcript, then the cut.
    let done = cli(&env, &["recover", "--session", S, "--writers-fenced", "--yes", "--json"]);
    done.assert_ok();
    let done = json(&done);
    let repaired = done["actions"].as_array().unwrap().iter().find(|a| a["action"] == "repair_tail").cloned();
    let repaired = repaired.unwrap_or_else(|| panic!("no repair done: {done:#}"));
    assert_eq!(repaired["result"], "ok", "{done:#}");
    let side_file = repaired["side_file"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::read(transcript(&env)).unwrap(), WHOLE, "cut at the last complete line");
    assert_eq!(side_files(&env.runtime().join("chats")).len(), 1);
    assert_eq!(std::fs::read(env.runtime().join(&side_file)).unwrap(), CUT, "the cut bytes, kept exactly");
    let log = std::fs::read_to_string(env.lock_dir().join("writerctl-recovery.log")).unwrap();
    assert!(log.contains("action=repair_tail") && log.contains(&format!("side_file={side_file:?}")), "{log}");

    // status now reads clean and names where the cut bytes are.
    let st = json(&cli(&env, &["status", "--session", S, "--json"]));
    assert_eq!(st["transcript_tail"]["state"], "clean", "{st:#}");
    assert_eq!(st["transcript_tail"]["kept_cut_files"], serde_json::json!([side_file]));

    // And the session starts again: acquire, then run with a writer that appends.
    let tok = env.tmp.path().join("t.token");
    cli(&env, &["acquire", "--json", "--session", S, "--token-file", tok.to_str().unwrap()]).assert_ok();
    cli(&env, &["release", "--json", "--session", S, "--token-file", tok.to_str().unwrap()]).assert_ok();
    let mut c: Command = env.cmd();
    c.args(["run", "--session", S, "--runtime-dir"]).arg(env.runtime()).args([
        "--",
        "sh",
        "-c",
        r#"printf '{"b":2}\n' >>"$WRITERCTL_TRANSCRIPT""#,
    ]);
    run_bounded(c, LIMIT).expect("run hung").assert_ok();
    assert_eq!(std::fs::read(transcript(&env)).unwrap(), b"{\"a\":1}\n{\"b\":2}\n");
}
