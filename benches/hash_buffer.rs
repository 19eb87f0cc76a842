//! Which read size hashes a transcript fastest: the engine's loop (`pread` into one buffer,
//! then SHA-256 over it, `sha2` as the engine uses it) at each buffer size, against
//! `openssl dgst -sha256` of the same file, measured alternately in the same run.
//!
//! Why this exists: the buffer decides whether each byte crosses the memory bus twice.
//! `pread` copies from the page cache into the buffer, then the hash reads the buffer; a
//! buffer that fits in the core's L2 cache is still cached when the hash reads it, a
//! larger one is not. The size in `transcript::HASH_BUFFER_BYTES` is chosen from this
//! table, not guessed. `benches/seal_takeover.sh` runs it on its 1 GiB transcript:
//!
//!   cargo bench --bench hash_buffer -- FILE        (ROUNDS=5 by default; warm cache)
//!
//! Every buffer starts on a page, as the engine's does (`AlignedBuf`), and one more row
//! reads 128 KiB into a buffer 16 bytes past a page — where glibc puts a fresh 128 KiB
//! allocation — to show what the engine's alignment is worth on this machine (issue 38:
//! the kernel's copy from the page cache runs ~3x slower there, 4K aliasing).
#![allow(clippy::disallowed_methods)]

use std::os::fd::OwnedFd;
use std::process::Command;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use writerctl::lockfile::sys::{AlignedBuf, pread_full};

const SIZES_KIB: [usize; 8] = [16, 32, 64, 128, 256, 512, 1024, 4096];

/// The misaligned row: 128 KiB starting this many bytes past a page boundary.
const MISALIGNED_BY: usize = 16;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn hash(fd: &OwnedFd, size: u64, buf: &mut [u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut off = 0u64;
    while off < size {
        let want = buf.len().min((size - off) as usize);
        let n = pread_full(fd, &mut buf[..want], off).unwrap();
        assert!(n > 0, "the file shrank");
        h.update(&buf[..n]);
        off += n as u64;
    }
    h.finalize().into()
}

/// This thread's CPU time (user + system) from /proc, in clock ticks of 10 ms: on a shared
/// machine wall time counts other processes' turns, CPU time does not.
fn cpu_now() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = after_comm.split(' ').skip(11).take(2).map(|x| x.parse().unwrap()).collect();
    Duration::from_millis((f[0] + f[1]) * 10)
}

/// `openssl dgst -sha256 FILE` under /usr/bin/time: (wall, user + system CPU).
fn openssl(path: &str) -> (Duration, Duration) {
    let t = Instant::now();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%U %S", "openssl", "dgst", "-sha256", path])
        .stdout(std::process::Stdio::null())
        .output()
        .expect("/usr/bin/time and openssl");
    let wall = t.elapsed();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    let cpu: f64 = text.lines().last().unwrap().split(' ').map(|x| x.parse::<f64>().unwrap()).sum();
    (wall, Duration::from_secs_f64(cpu))
}

fn main() {
    // `cargo bench` passes `--bench`; the file is the first other argument.
    let path = std::env::args().skip(1).find(|a| !a.starts_with("--")).expect("usage: hash_buffer FILE");
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(5);
    let file = std::fs::File::open(&path).unwrap();
    let size = file.metadata().unwrap().len();
    let fd: OwnedFd = file.into();
    let mut aligned: Vec<AlignedBuf> = SIZES_KIB.iter().map(|k| AlignedBuf::new(k * 1024)).collect();
    let mut shifted = AlignedBuf::new(128 * 1024 + 4096);
    let mut bufs: Vec<&mut [u8]> = aligned.iter_mut().map(|b| b.as_mut_slice()).collect();
    bufs.push(&mut shifted.as_mut_slice()[MISALIGNED_BY..MISALIGNED_BY + 128 * 1024]);
    let mut labels: Vec<String> = SIZES_KIB.iter().map(|k| format!("pread+sha2, {k} KiB buffer")).collect();
    labels.push(format!("pread+sha2, 128 KiB, page+{MISALIGNED_BY}"));
    // Warm the page cache and check every size gives one digest.
    let reference = hash(&fd, size, &mut *bufs[0]);
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); bufs.len()];
    let mut cpus: Vec<Vec<Duration>> = vec![Vec::new(); bufs.len()];
    let (mut ossl, mut ossl_cpu) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (w, c) = openssl(&path);
        ossl.push(w);
        ossl_cpu.push(c);
        for (i, buf) in bufs.iter_mut().enumerate() {
            let (t, c) = (Instant::now(), cpu_now());
            assert_eq!(hash(&fd, size, &mut buf[..]), reference);
            times[i].push(t.elapsed());
            cpus[i].push(cpu_now() - c);
        }
    }
    let (o, oc) = (median(ossl).as_secs_f64(), median(ossl_cpu).as_secs_f64());
    println!("hash buffer sweep: {} MiB, median of {rounds} alternated runs, warm cache", size >> 20);
    println!("  {:<28} {:>8} {:>9} {:>8} {:>9}", "", "wall s", "vs ossl", "CPU s", "vs ossl");
    println!("  {:<28} {o:>8.3} {:>9} {oc:>8.2} {:>9}", "openssl dgst -sha256", "1.000x", "1.000x");
    for ((label, t), c) in labels.iter().zip(times).zip(cpus) {
        let (m, mc) = (median(t).as_secs_f64(), median(c).as_secs_f64());
        println!("  {label:<28} {m:>8.3} {:>8.3}x {mc:>8.2} {:>8.3}x", m / o, mc / oc);
    }
}
