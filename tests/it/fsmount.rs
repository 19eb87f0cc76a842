//! Test filesystems that behave like the shared volumes writerctl is deployed on (issue 27,
//! item 5), for `netfs.rs`:
//!
//! * [`TwoHosts`]: one backing directory (the "file server") seen through two `bindfs` FUSE
//!   mounts, each with its own kernel client cache — entry, negative-entry and attribute
//!   timeouts and kept pages (`kernel_cache`) — so each mount is a "host" that caches what
//!   an NFS client caches: a name looked up as missing stays missing, attributes and file
//!   bytes stay what they were when first read. bindfs (built on libfuse 2) also refuses
//!   `renameat2(RENAME_NOREPLACE)` with `EINVAL`, exactly as the Linux NFS client does:
//!   [`refuses_rename_noreplace`] checks that on every mount, so a test never silently runs
//!   on a mount that would hide the NFS behaviour. Mounted with `-o subtype=bindfs`, so
//!   `/proc/self/mountinfo` names the type `fuse.bindfs`.
//! * [`NoHardLinks`]: exFAT through `exfat-fuse` on a loop device (type `fuseblk`): no hard
//!   links (`link(2)` answers `EPERM`), `chmod` silently ignored (every mode reads 0777).
//!
//! Everything is mounted under a fresh temporary directory and unmounted (lazily, so a
//! failing test cannot leave a busy mount behind) when the value is dropped; a loop device
//! is detached after its mount.
//!
//! When the tools are missing (`bindfs`, `/dev/fuse`, `mkfs.exfat`, `mount.exfat-fuse`,
//! `losetup`, loop devices, root) a test prints a loud `SKIPPED` line, or fails under
//! `WRITERCTL_REQUIRE_SERVICES=1` as `.ci/run` sets (`scripts/ci-deps.sh` installs them).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::services::skip;

/// Seconds each host's kernel keeps what it learnt (FUSE `entry_timeout`,
/// `negative_timeout`, `attr_timeout`); pages are kept regardless (`kernel_cache`) until the
/// size changes.
#[derive(Debug, Clone, Copy)]
pub struct Cache {
    pub entry: u32,
    pub negative: u32,
    pub attr: u32,
}

impl Cache {
    /// Longer than any test: whatever a host cached stays cached while the test runs, so
    /// a reproduction does not depend on timing.
    pub const STICKY: Cache = Cache { entry: 600, negative: 600, attr: 600 };
    /// An NFS client's order of magnitude (`acregmin=3`): caches expire within the
    /// bounded waits of a handoff.
    pub const SHORT: Cache = Cache { entry: 1, negative: 1, attr: 1 };
}

fn quiet_ok(c: &mut Command) -> Result<(), String> {
    let o = c.stdin(Stdio::null()).output().map_err(|e| format!("{c:?}: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!("{c:?} failed ({}): {}", o.status, String::from_utf8_lossy(&o.stderr).trim()))
    }
}

fn have(cmd: &str) -> bool {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/local/sbin"]
        .iter()
        .any(|d| Path::new(d).join(cmd).exists())
}

/// The filesystem type `/proc/self/mountinfo` gives the mount at exactly `dir`.
pub fn mountinfo_type(dir: &Path) -> Option<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let dir = dir.to_str()?;
    info.lines().rev().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        let sep = f.iter().position(|x| *x == "-")?;
        (f.get(4) == Some(&dir)).then(|| f.get(sep + 1).map(|t| t.to_string()))?
    })
}

/// The tiny check: does `rename(src, dst, RENAME_NOREPLACE)` inside `dir` answer `EINVAL`
/// (as NFS does)? Leaves nothing behind.
pub fn refuses_rename_noreplace(dir: &Path) -> bool {
    let src = dir.join(".noreplace-probe.src");
    let dst = dir.join(".noreplace-probe.dst");
    std::fs::write(&src, b"probe").unwrap();
    let r = rustix::fs::renameat_with(rustix::fs::CWD, &src, rustix::fs::CWD, &dst, rustix::fs::RenameFlags::NOREPLACE);
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&dst);
    r == Err(rustix::io::Errno::INVAL)
}

/// One mount point, unmounted lazily on drop (and its loop device detached).
pub struct Mount {
    pub dir: PathBuf,
    loop_dev: Option<String>,
}

impl Drop for Mount {
    fn drop(&mut self) {
        // Lazy: a process a failing test left inside must not keep the mount (or the test)
        // hanging; the FUSE daemon exits once the last reference is gone.
        let unmounted = Command::new("umount").arg("-l").arg(&self.dir).stderr(Stdio::null()).status();
        if !unmounted.is_ok_and(|s| s.success()) {
            let _ = Command::new("fusermount").arg("-u").arg("-z").arg(&self.dir).stderr(Stdio::null()).status();
        }
        if let Some(dev) = &self.loop_dev {
            let _ = Command::new("losetup").arg("-d").arg(dev).stderr(Stdio::null()).status();
        }
    }
}

/// What a FUSE mount needs on this machine; `Err` says what is missing.
fn fuse_available() -> Result<(), String> {
    if !rustix::process::geteuid().is_root() {
        return Err("mounting test filesystems needs root".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("/dev/fuse is missing (no FUSE in this kernel or container)".into());
    }
    Ok(())
}

/// `bindfs` mounts `backing` at `dir` with its own client cache.
fn bindfs(backing: &Path, dir: &Path, cache: Cache) -> Result<Mount, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let opts = format!(
        "subtype=bindfs,entry_timeout={},negative_timeout={},attr_timeout={},kernel_cache",
        cache.entry, cache.negative, cache.attr
    );
    quiet_ok(Command::new("bindfs").arg("-o").arg(&opts).arg(backing).arg(dir))?;
    let m = Mount { dir: dir.to_path_buf(), loop_dev: None };
    match mountinfo_type(dir).as_deref() {
        Some("fuse.bindfs") => Ok(m),
        other => Err(format!("bindfs mounted {} as {other:?}, not fuse.bindfs", dir.display())),
    }
}

/// Two "hosts" over one backing directory. Host A's runtime directory is
/// `<mount A>/runtime`, host B's the same path under mount B; both name
/// `<backing>/runtime` on the "server".
pub struct TwoHosts {
    // Dropped in this order: the mounts first, then the directory they live in.
    a: Mount,
    b: Mount,
    tmp: tempfile::TempDir,
}

impl TwoHosts {
    /// Mounts both hosts with `cache`; `None` after a loud skip when bindfs or FUSE is
    /// missing (a panic under `WRITERCTL_REQUIRE_SERVICES=1`). Panics when the mounts do not
    /// refuse `RENAME_NOREPLACE`, which every test here relies on to model NFS.
    pub fn mount(test: &str, cache: Cache) -> Option<TwoHosts> {
        if let Err(why) = fuse_available() {
            skip(test, &why);
            return None;
        }
        if !have("bindfs") {
            skip(test, "bindfs is not installed (scripts/ci-deps.sh installs it)");
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        let backing = tmp.path().join("server");
        std::fs::create_dir_all(backing.join("runtime")).unwrap();
        let a = bindfs(&backing, &tmp.path().join("host-a"), cache).unwrap_or_else(|e| panic!("{test}: {e}"));
        let b = bindfs(&backing, &tmp.path().join("host-b"), cache).unwrap_or_else(|e| panic!("{test}: {e}"));
        let hosts = TwoHosts { a, b, tmp };
        for dir in [&hosts.a.dir, &hosts.b.dir] {
            assert!(
                refuses_rename_noreplace(dir),
                "{test}: {} accepts RENAME_NOREPLACE; the NFS model needs a mount that refuses it",
                dir.display()
            );
        }
        Some(hosts)
    }

    /// R as host A sees it.
    pub fn runtime_a(&self) -> PathBuf {
        self.a.dir.join("runtime")
    }

    /// R as host B sees it.
    pub fn runtime_b(&self) -> PathBuf {
        self.b.dir.join("runtime")
    }

    /// R on the "server" (the backing directory itself, no client cache).
    pub fn runtime_server(&self) -> PathBuf {
        self.tmp.path().join("server/runtime")
    }
}

/// A fresh exFAT filesystem through exfat-fuse: no hard links, no permission bits.
pub struct NoHardLinks {
    mount: Mount,
    _tmp: tempfile::TempDir,
}

impl NoHardLinks {
    /// Mounts it with exfat-fuse `options` (`""` for the defaults: every mode reads 0777;
    /// `umask=077` as a careful administrator mounts it: 0700, owned by root). `None` after a
    /// loud skip when a tool, loop devices or root are missing (a panic under
    /// `WRITERCTL_REQUIRE_SERVICES=1`).
    pub fn mount(test: &str, options: &str) -> Option<NoHardLinks> {
        if let Err(why) = fuse_available() {
            skip(test, &why);
            return None;
        }
        for (tool, pkg) in [("mkfs.exfat", "exfatprogs"), ("mount.exfat-fuse", "exfat-fuse"), ("losetup", "mount")] {
            if !have(tool) {
                skip(test, &format!("{tool} is not installed (package {pkg}; scripts/ci-deps.sh installs it)"));
                return None;
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join("exfat.img");
        std::fs::File::create(&img).and_then(|f| f.set_len(16 << 20)).unwrap();
        quiet_ok(Command::new("mkfs.exfat").arg(&img)).unwrap_or_else(|e| panic!("{test}: {e}"));
        // exfat-fuse run by root wants a block device (`fuseblk`): attach a loop device.
        let o = Command::new("losetup").args(["-f", "--show"]).arg(&img).output().unwrap();
        if !o.status.success() {
            skip(test, &format!("no loop device ({})", String::from_utf8_lossy(&o.stderr).trim()));
            return None;
        }
        let dev = String::from_utf8_lossy(&o.stdout).trim().to_owned();
        let dir = tmp.path().join("exfat");
        std::fs::create_dir(&dir).unwrap();
        // From here on, dropping `mount` detaches the loop device (and unmounts, if mounted).
        let mount = Mount { dir: dir.clone(), loop_dev: Some(dev.clone()) };
        let mut c = Command::new("mount.exfat-fuse");
        if !options.is_empty() {
            c.arg("-o").arg(options);
        }
        quiet_ok(c.arg(&dev).arg(&dir)).unwrap_or_else(|e| panic!("{test}: {e}"));
        // The premise of every test on it: link(2) is refused.
        std::fs::write(dir.join("probe"), b"probe").unwrap();
        let linked = std::fs::hard_link(dir.join("probe"), dir.join("probe.link"));
        std::fs::remove_file(dir.join("probe")).unwrap();
        assert!(linked.is_err(), "{test}: exFAT accepted a hard link");
        Some(NoHardLinks { mount, _tmp: tmp })
    }

    /// The mount point.
    pub fn dir(&self) -> &Path {
        &self.mount.dir
    }

    /// Its type as `/proc/self/mountinfo` names it (`fuseblk`).
    pub fn fs_type(&self) -> String {
        mountinfo_type(&self.mount.dir).expect("mounted")
    }
}
