//! `writerctl status` over a whole lock directory at 1k, 10k and 100k locks, and over
//! 10,000 malformed locks, against a floor measured in the same run.
//!
//! Floor = what any scan of the same directory must pay: list it and read every file once
//! (`cat`-equivalent, in this process). writerctl adds parsing, grouping side files by
//! lock, one more read of each primary, a claim `lstat`, a liveness probe per active
//! record, and the JSON document. The figures that must hold (issue 14): 10k ≤ 0.3 s,
//! 100k ≤ 3 s, and 100k/10k ≤ 12 (linear: 10 plus noise); 10,000 malformed ≤ 1 s, which
//! a per-record 100 ms malformed-read pause would turn into 17 minutes.
//!
//! Each directory holds a mix: live active records (this process is the holder), stale
//! ones (a dead pid on this host), foreign-host ones, sealed ones, one malformed primary in
//! a thousand, and side files (a claim, released and install-temp residue) beside some.
//! The real binary runs (`--json` and text), ROUNDS times alternated with the floor; the
//! medians are reported. Run: `cargo bench --bench status` (stages ~150k files under
//! target/tmp, or $WRITERCTL_BENCH_DIR, and removes them afterwards).
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const ROUNDS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn active(session: &str, owner: &str, pid: u32, host: &str) -> String {
    format!(
        r#"{{"schema_version":2,"state":"active","session_id":"{session}","owner_id":"{owner}","pid":{pid},"hostname":"{host}","process_kind":"unknown","acquired_at":"2026-07-28T00:00:00.000Z","qwen_version":null}}"#
    )
}

fn sealed(session: &str, owner: &str) -> String {
    format!(
        r#"{{"schema_version":2,"state":"sealed","session_id":"{session}","owner_id":"{owner}","pid":1,"hostname":"elsewhere","process_kind":"acp","acquired_at":"2026-07-28T00:00:00.000Z","qwen_version":null,"sealed_at":"2026-07-28T00:00:01.000Z","transcript":{{"relative_path":"chats/{session}.jsonl","exists":true,"byte_length":3,"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}}}}"#
    )
}

/// Stages `n` sessions in `rt`'s lock directory; `all_malformed` makes every primary fail
/// validation (valid JSON, wrong types: what qwen's validator rejects).
fn stage(rt: &Path, n: usize, all_malformed: bool) {
    let dir = rt.join("tmp/session-writer-locks");
    std::fs::create_dir_all(&dir).unwrap();
    let me = std::process::id();
    let host = rustix::system::uname().nodename().to_string_lossy().into_owned();
    for i in 0..n {
        let session = format!("{:08x}-0000-4000-8000-{:012x}", i, i);
        let owner = format!("{:08x}-1111-4111-8111-{:012x}", i, i);
        let lock = dir.join(format!("{session}.lock"));
        let body = if all_malformed || i % 1000 == 999 {
            format!(
                r#"{{"schema_version":2,"state":"active","session_id":"{session}","owner_id":"{owner}","pid":"not a number"}}"#
            )
        } else {
            match i % 4 {
                0 => active(&session, &owner, me, &host),
                1 => active(&session, &owner, i32::MAX as u32, &host),
                2 => active(&session, &owner, 4242, "another-host"),
                _ => sealed(&session, &owner),
            }
        };
        std::fs::write(&lock, body).unwrap();
        if all_malformed {
            continue;
        }
        let other = format!("{:08x}-2222-4222-8222-{:012x}", i, i);
        match i % 10 {
            0 => std::fs::write(dir.join(format!("{session}.lock.claim")), active(&session, &other, 1, "h")).unwrap(),
            3 => std::fs::write(dir.join(format!("{session}.lock.released.{other}")), active(&session, &other, 1, "h"))
                .unwrap(),
            6 => std::fs::write(dir.join(format!("{session}.lock.{other}.tmp")), active(&session, &other, 1, "h"))
                .unwrap(),
            _ => {}
        }
    }
}

/// The floor: list the directory and read every file once.
fn floor(rt: &Path) -> usize {
    let mut bytes = 0;
    for e in std::fs::read_dir(rt.join("tmp/session-writer-locks")).unwrap() {
        bytes += std::fs::read(e.unwrap().path()).unwrap().len();
    }
    bytes
}

/// Runs `writerctl status` over `rt`; returns the time and the number of sessions listed.
fn status(rt: &Path, json: bool) -> (Duration, usize) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_writerctl"));
    cmd.arg("status").arg("--runtime-dir").arg(rt).env_clear();
    if json {
        cmd.arg("--json");
    }
    let t = Instant::now();
    let out = cmd.output().unwrap();
    let took = t.elapsed();
    assert!(out.status.success(), "status failed: {}", String::from_utf8_lossy(&out.stderr));
    let n = if json {
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["sessions"].as_array().unwrap().len()
    } else {
        out.stdout.split(|b| *b == b'\n').count()
    };
    (took, n)
}

struct Row {
    locks: usize,
    floor: Duration,
    json: Duration,
    text: Duration,
}

fn measure(rt: &Path, locks: usize) -> Row {
    let (mut f, mut j, mut t) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let s = Instant::now();
        std::hint::black_box(floor(rt));
        f.push(s.elapsed());
        let (took, n) = status(rt, true);
        assert_eq!(n, locks, "every session is listed");
        j.push(took);
        t.push(status(rt, false).0);
    }
    Row { locks, floor: median(f), json: median(j), text: median(t) }
}

fn main() {
    let base = std::env::var_os("WRITERCTL_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    std::fs::create_dir_all(&base).unwrap();
    let mut rows = Vec::new();
    for n in [1_000, 10_000, 100_000] {
        let tmp = tempfile::tempdir_in(&base).unwrap();
        let s = Instant::now();
        stage(tmp.path(), n, false);
        eprintln!("staged {n} locks in {:.1} s", s.elapsed().as_secs_f64());
        // Warm the page and dentry caches, as the floor and every round find them.
        floor(tmp.path());
        rows.push(measure(tmp.path(), n));
    }
    let malformed = {
        let tmp = tempfile::tempdir_in(&base).unwrap();
        stage(tmp.path(), 10_000, true);
        floor(tmp.path());
        let (took, n) = status(tmp.path(), true);
        assert_eq!(n, 10_000);
        let mut times = vec![took];
        for _ in 1..ROUNDS {
            times.push(status(tmp.path(), true).0);
        }
        let out = Command::new(env!("CARGO_BIN_EXE_writerctl"))
            .args(["status", "--json", "--runtime-dir"])
            .arg(tmp.path())
            .env_clear()
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let reported = doc["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["state"] == "malformed" && s["problem"].as_str().is_some_and(|p| !p.is_empty()))
            .count();
        (median(times), reported)
    };

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("status bench: writerctl status --runtime-dir R over N locks, median of {ROUNDS} alternated runs");
    println!("  {:>8}  {:>10}  {:>12}  {:>12}  {:>12}", "locks", "floor ms", "--json ms", "text ms", "json/floor");
    for r in &rows {
        println!(
            "  {:>8}  {:>10.1}  {:>12.1}  {:>12.1}  {:>11.1}x",
            r.locks,
            ms(r.floor),
            ms(r.json),
            ms(r.text),
            r.json.as_secs_f64() / r.floor.as_secs_f64()
        );
    }
    let (k10, k100) = (&rows[1], &rows[2]);
    println!(
        "  100k/10k ratio: --json {:.1}, text {:.1}, floor {:.1}   (target <= 12)",
        k100.json.as_secs_f64() / k10.json.as_secs_f64(),
        k100.text.as_secs_f64() / k10.text.as_secs_f64(),
        k100.floor.as_secs_f64() / k10.floor.as_secs_f64()
    );
    println!(
        "  targets: 10k {:.3} s (<= 0.3 s), 100k {:.3} s (<= 3 s) [slower of --json and text]",
        k10.json.max(k10.text).as_secs_f64(),
        k100.json.max(k100.text).as_secs_f64()
    );
    println!(
        "  10,000 malformed locks: {:.3} s (target <= 1 s), {} of 10000 reported malformed with a reason",
        malformed.0.as_secs_f64(),
        malformed.1
    );
}
