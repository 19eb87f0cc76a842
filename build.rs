//! Link order for the release binary (issue 38): the functions the one-shot lock-file
//! commands run, listed in `scripts/hot_functions.txt`, are laid out together at the start
//! of `.text` (`--symbol-ordering-file`).
//!
//! Why: the kernel makes a file page's neighbourhood resident when one page of it faults
//! (64 KiB of fault-around, or the whole large folio the page cache holds it in). A `seal`
//! runs about 280 distinct pages of code scattered over ~75 such windows of the binary, so
//! its peak RSS was 9-10 MiB against issue 14's 8 MiB; packed together, ~5 MiB. The order
//! changes no behaviour: a listed name that no longer exists (a renamed function, a new
//! toolchain) is skipped and the layout merely gets worse; `scripts/hot_functions.sh`
//! regenerates the list and `benches/seal_takeover.sh` shows the RSS it buys.
//!
//! Only where the linker is known to be LLD, which takes the option: release builds for
//! x86_64-unknown-linux-gnu with Rust 1.90 or later (its default linker there is the
//! bundled rust-lld), with no linker chosen in the environment, `.cargo/config.toml` or
//! RUSTFLAGS. Anywhere else the build is what it was.

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    let list = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("scripts/hot_functions.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rerun-if-changed=build.rs");
    if uses_bundled_lld() && env::var("PROFILE").as_deref() == Ok("release") && list.is_file() {
        println!("cargo:rustc-link-arg-bin=writerctl=-Wl,--symbol-ordering-file={}", list.display());
        println!("cargo:rustc-link-arg-bin=writerctl=-Wl,--no-warn-symbol-ordering");
    }
}

/// True when rustc will link with its bundled LLD: the target's default since Rust 1.90,
/// and nothing overrides the linker.
fn uses_bundled_lld() -> bool {
    if env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu") {
        return false;
    }
    // A linker from `.cargo/config.toml` or CARGO_TARGET_*_LINKER reaches build scripts as
    // RUSTC_LINKER; RUSTFLAGS may set -Clinker, -Clinker-flavor, -Clinker-features or
    // -Clink-self-contained.
    if env::var_os("RUSTC_LINKER").is_some() {
        return false;
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.split('\x1f').any(|f| f.contains("linker") || f.contains("link-self-contained")) {
        return false;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else { return false };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let version = String::from_utf8_lossy(&out.stdout);
    let mut numbers = version.split_whitespace().nth(1).unwrap_or("").split('.').map(|n| n.parse::<u32>().ok());
    match (numbers.next().flatten(), numbers.next().flatten()) {
        (Some(1), Some(minor)) => minor >= 90,
        (Some(major), _) => major > 1,
        _ => false,
    }
}
