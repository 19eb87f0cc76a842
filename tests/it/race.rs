//! Real processes racing for one lock, released together through a FIFO barrier.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::*;

/// Spawns `n` copies of `args`, each blocked reading `fifo` until the barrier opens.
fn spawn_blocked(env: &TestEnv, fifo: &Path, n: usize, args: &[String]) -> Vec<Child> {
    (0..n)
        .map(|_| {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(r#"cat "$0" >/dev/null; exec "$@""#)
                .arg(fifo)
                .arg(BIN)
                .args(args)
                .arg("--runtime-dir")
                .arg(env.runtime())
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            c.spawn().unwrap()
        })
        .collect()
}

/// Opens the barrier: every blocked `cat` sees EOF at the same moment.
fn release_barrier(fifo: &Path) {
    // The test holds a read+write end so openers never block; closing it is the signal.
    let holder = std::fs::OpenOptions::new().read(true).write(true).open(fifo).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(holder);
    // Late starters (a loaded machine) would block in open() forever; let them through too.
    std::thread::sleep(Duration::from_millis(100));
    if let Ok(mut late) =
        std::fs::OpenOptions::new().write(true).custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32).open(fifo)
    {
        let _ = late.write_all(b"");
    }
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
        .unwrap();
}

struct Outcome {
    code: i32,
    stdout: String,
}

fn race(env: &TestEnv, n: usize, args: &[String]) -> Vec<Outcome> {
    let fifo = env.tmp.path().join(format!("barrier-{}", uuid::Uuid::new_v4()));
    mkfifo(&fifo);
    let children = spawn_blocked(env, &fifo, n, args);
    release_barrier(&fifo);
    children
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            Outcome { code: o.status.code().unwrap_or(-1), stdout: String::from_utf8_lossy(&o.stdout).into_owned() }
        })
        .collect()
}

fn check_one_winner(env: &TestEnv, session: &str, outcomes: &[Outcome]) -> String {
    let winners: Vec<&Outcome> = outcomes.iter().filter(|o| o.code == 0).collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one owner; exit codes: {:?}",
        outcomes.iter().map(|o| o.code).collect::<Vec<_>>()
    );
    for o in outcomes.iter().filter(|o| o.code != 0) {
        let e: ErrorDoc = serde_json::from_str(&o.stdout).unwrap();
        assert!(
            matches!(
                (o.code, e.error.code.as_str()),
                (3, "session_writer_conflict") | (75, "session_writer_unavailable")
            ),
            "loser got {} {}",
            o.code,
            e.error.code
        );
    }
    let j: AcquireJson = serde_json::from_str(&winners[0].stdout).unwrap();
    let token = j.owner_token.unwrap();
    let on_disk = std::fs::read_to_string(env.lock(session)).unwrap();
    assert!(on_disk.contains(&token), "the lock on disk belongs to the reported winner");
    let mine: Vec<String> =
        env.lock_dir_names().into_iter().filter(|n| n.starts_with(&format!("{session}.lock"))).collect();
    assert_eq!(mine, vec![format!("{session}.lock")], "no residue");
    token
}

#[test]
fn thirty_two_processes_acquire_one_session_exactly_one_wins() {
    let env = TestEnv::new();
    let me = std::process::id().to_string();
    for trial in 0..20 {
        let session = format!("race-{trial}");
        let args: Vec<String> =
            ["acquire", "--json", "--session", &session, "--pid", &me].iter().map(|s| s.to_string()).collect();
        let outcomes = race(&env, 32, &args);
        check_one_winner(&env, &session, &outcomes);
    }
}

#[test]
fn sixteen_reclaimers_of_one_dead_owner_elect_exactly_one() {
    let env = TestEnv::new();
    let me = std::process::id().to_string();
    for trial in 0..10 {
        let session = format!("reclaim-{trial}");
        stage(&env.lock(&session), qwen_active_dead(&session, &format!("dead-{trial}")).as_bytes());
        let args: Vec<String> =
            ["acquire", "--json", "--session", &session, "--pid", &me].iter().map(|s| s.to_string()).collect();
        let outcomes = race(&env, 16, &args);
        check_one_winner(&env, &session, &outcomes);
    }
}
