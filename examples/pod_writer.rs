//! A test writer for `writerctl run` inside a container image that has no shell
//! (tests/it/container.rs puts it beside `writerctl` in a test image; the product image holds
//! `writerctl` only).
//!
//! It appends one line every `--interval-ms` (default 20) to `$WRITERCTL_TRANSCRIPT`, naming
//! itself, and makes each line durable before the next:
//!
//! ```text
//! writer=<name> pid=<pid> epoch=<WRITERCTL_EPOCH> pidns=<WRITERCTL_PID_NAMESPACE> recovered=<0|1> seq=<n>
//! ```
//!
//! `<name>` is `$POD_WRITER_NAME`, else the host name (a container's id or `--hostname`). One
//! `write(2)` per line on an `O_APPEND` descriptor, then `fdatasync`: a line is either whole
//! in the file or absent, so two writers at once would show up as interleaved names, never as
//! torn text.
//!
//! On SIGTERM (or SIGINT) it finishes the line it is writing, appends `... seq=<n> drained`,
//! syncs and exits 0 — a writer that drains, so `run` seals. With `--ignore-sigterm` it takes
//! no notice of SIGTERM and keeps writing until it is killed (the writer `podman stop` has to
//! SIGKILL after its timeout).
//!
//! It never touches the descriptors `run` hands it (`WRITERCTL_HOLDER_LOCK_FD`,
//! `WRITERCTL_TRANSCRIPT_LOCK_FD`): inheriting them is what lets the next `run` see this
//! writer as alive.

use std::fs::OpenOptions;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn main() {
    let mut ignore_sigterm = false;
    let mut interval = Duration::from_millis(20);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--ignore-sigterm" => ignore_sigterm = true,
            "--interval-ms" => {
                let ms =
                    args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage("--interval-ms needs a number"));
                interval = Duration::from_millis(ms);
            }
            other => usage(&format!("unknown argument {other:?}")),
        }
    }

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        // A handler of our own either way: ignoring SIGTERM means noting it and going on.
        signal_hook::flag::register(sig, Arc::clone(&stop)).unwrap_or_else(|e| fail(&format!("signal handler: {e}")));
    }

    let path = std::env::var_os("WRITERCTL_TRANSCRIPT").unwrap_or_else(|| fail("WRITERCTL_TRANSCRIPT is not set"));
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| "-".into());
    let name = std::env::var("POD_WRITER_NAME").ok().filter(|n| !n.is_empty()).unwrap_or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_owned()).unwrap_or_else(|_| "?".into())
    });
    let prefix = format!(
        "writer={name} pid={} epoch={} pidns={} recovered={}",
        std::process::id(),
        var("WRITERCTL_EPOCH"),
        var("WRITERCTL_PID_NAMESPACE"),
        std::env::var("WRITERCTL_RECOVERED").unwrap_or_else(|_| "0".into()),
    );
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| fail(&format!("open {}: {e}", path.to_string_lossy())));

    let mut seq: u64 = 0;
    loop {
        let draining = stop.load(Ordering::SeqCst) && !ignore_sigterm;
        let line = if draining { format!("{prefix} seq={seq} drained\n") } else { format!("{prefix} seq={seq}\n") };
        file.write_all(line.as_bytes()).unwrap_or_else(|e| fail(&format!("append: {e}")));
        file.sync_data().unwrap_or_else(|e| fail(&format!("fdatasync: {e}")));
        if draining {
            return;
        }
        seq += 1;
        std::thread::sleep(interval);
    }
}

fn usage(why: &str) -> ! {
    eprintln!("pod_writer: {why}\nusage: pod_writer [--ignore-sigterm] [--interval-ms N]");
    std::process::exit(2)
}

fn fail(why: &str) -> ! {
    eprintln!("pod_writer: {why}");
    std::process::exit(1)
}
