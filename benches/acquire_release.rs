//! Acquire+release cycle cost against the raw durable floor, measured in the same run.
//!
//! Floor = what any durable lock file must pay for the same bytes: create a temp, write,
//! fsync, link it into place, unlink the temp, fsync the directory, unlink the lock.
//! writerctl's cycle adds the protocol around that: claim checks, exact re-reads, the
//! rename-then-verify release and one more directory fsync to make the release durable.
//!
//! Rounds alternate floor and cycle batches so machine noise hits both alike; the figure
//! reported is the ratio of medians. Run: `cargo bench --bench acquire_release`.
#![allow(clippy::disallowed_methods)]

use std::ffi::OsStr;
use std::time::{Duration, Instant};

use writerctl::lockfile::acquire::TranscriptRef;
use writerctl::lockfile::identity::{SystemProbe, holder};
use writerctl::lockfile::sys::{Dir, own_pid};
use writerctl::lockfile::transcript::TranscriptKey;
use writerctl::lockfile::{AcquireOptions, DirMode, LockPaths, ReclaimPolicy, acquire, open_site, release};

const ROUNDS: usize = 15;
const BATCH: usize = 100;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let base = std::env::var_os("WRITERCTL_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    std::fs::create_dir_all(&base).unwrap();
    let tmp = tempfile::tempdir_in(&base).unwrap();
    let rt = tmp.path();
    let site = open_site(rt, LockPaths::for_session(rt, "bench"), "bench", DirMode::Create).unwrap();
    let opts = AcquireOptions {
        holder: holder(own_pid()),
        process_kind: "unknown".into(),
        reclaim: ReclaimPolicy::Local,
        // As the CLI does: the transcript's shape is checked on every acquisition.
        transcript: Some(TranscriptRef {
            runtime_dir: rt.to_path_buf(),
            key: TranscriptKey::default_for("bench").unwrap(),
        }),
        certified: None,
        // As the CLI does: `writerctl acquire` keeps no holder lock (issue 27).
        holder_lock: false,
    };

    // The exact bytes a cycle writes, for the floor.
    let sample = acquire(&site, &opts, &SystemProbe).unwrap();
    let bytes = sample.record.raw.clone();
    release(&site, &sample.owner).unwrap();

    let floor_dir = rt.join("floor");
    std::fs::create_dir(&floor_dir).unwrap();
    let fdir = Dir::open(&floor_dir).unwrap();
    let (tmp_name, lock_name) = (OsStr::new("x.lock.tmp"), OsStr::new("x.lock"));
    let floor_once = |durable_remove: bool| {
        fdir.create_new_synced(tmp_name, &bytes).unwrap();
        fdir.link(tmp_name, lock_name).unwrap();
        fdir.unlink(tmp_name).unwrap();
        fdir.sync().unwrap();
        fdir.unlink(lock_name).unwrap();
        if durable_remove {
            fdir.sync().unwrap();
        }
    };

    let (mut floor, mut floor_durable, mut cycle) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for _ in 0..BATCH {
            floor_once(false);
        }
        floor.push(t.elapsed() / BATCH as u32);

        let t = Instant::now();
        for _ in 0..BATCH {
            let lease = acquire(&site, &opts, &SystemProbe).unwrap();
            release(&site, &lease.owner).unwrap();
        }
        cycle.push(t.elapsed() / BATCH as u32);

        let t = Instant::now();
        for _ in 0..BATCH {
            floor_once(true);
        }
        floor_durable.push(t.elapsed() / BATCH as u32);
    }
    let (f, fd, c) = (median(floor), median(floor_durable), median(cycle));
    println!("acquire_release bench: {} rounds x {} ops in {}", ROUNDS, BATCH, rt.display());
    println!("  floor (write+fsync+link+dir fsync+unlink):        {:>9.1} us/op", f.as_secs_f64() * 1e6);
    println!("  floor + durable removal (one more dir fsync):      {:>9.1} us/op", fd.as_secs_f64() * 1e6);
    println!("  writerctl acquire+release cycle:                   {:>9.1} us/op", c.as_secs_f64() * 1e6);
    println!(
        "  ratio cycle / floor:                               {:>9.3}x  (target <= 1.25x)",
        c.as_secs_f64() / f.as_secs_f64()
    );
    println!("  ratio cycle / floor with durable removal:          {:>9.3}x", c.as_secs_f64() / fd.as_secs_f64());
}
