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

use std::io::Write;
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
    bindfs_as(backing, dir, cache, true)
}

/// `bindfs_as(.., subtype)`: with `subtype`, mountinfo names the type `fuse.bindfs`;
/// without, a libfuse 2 filesystem mounted by root is plain `fuse` (no subtype), as many
/// FUSE volumes arrive.
fn bindfs_as(backing: &Path, dir: &Path, cache: Cache, subtype: bool) -> Result<Mount, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let opts = format!(
        "{}entry_timeout={},negative_timeout={},attr_timeout={},kernel_cache",
        if subtype { "subtype=bindfs," } else { "" },
        cache.entry,
        cache.negative,
        cache.attr
    );
    quiet_ok(Command::new("bindfs").arg("-o").arg(&opts).arg(backing).arg(dir))?;
    let m = Mount { dir: dir.to_path_buf(), loop_dev: None };
    let want = if subtype { "fuse.bindfs" } else { "fuse" };
    match mountinfo_type(dir).as_deref() {
        Some(t) if t == want => Ok(m),
        other => Err(format!("bindfs mounted {} as {other:?}, not {want}", dir.display())),
    }
}

/// One bindfs mount whose mountinfo type is plain `fuse` (no subtype).
pub struct PlainFuse {
    mount: Mount,
    _tmp: tempfile::TempDir,
}

/// A fresh temp dir holding the "server" directory `server/runtime` that bindfs mounts
/// share; `None` after a loud skip when bindfs or FUSE is missing (a panic under
/// `WRITERCTL_REQUIRE_SERVICES=1`).
fn bindfs_server(test: &str) -> Option<(tempfile::TempDir, PathBuf)> {
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
    Some((tmp, backing))
}

impl PlainFuse {
    /// `None` after a loud skip when bindfs or FUSE is missing (a panic under
    /// `WRITERCTL_REQUIRE_SERVICES=1`).
    pub fn mount(test: &str) -> Option<PlainFuse> {
        let (tmp, backing) = bindfs_server(test)?;
        let mount = bindfs_as(&backing, &tmp.path().join("host"), Cache::SHORT, false)
            .unwrap_or_else(|e| panic!("{test}: {e}"));
        Some(PlainFuse { mount, _tmp: tmp })
    }

    /// R on it.
    pub fn runtime(&self) -> PathBuf {
        self.mount.dir.join("runtime")
    }
}

/// Two "hosts" over one "server" directory: two bindfs mounts of it, or two NFS mounts of
/// an nfs-ganesha export of it. Host A's runtime directory is `<mount A>/runtime`, host B's
/// the same path under mount B; both name `<server>/runtime`.
pub struct TwoHosts {
    // Dropped in this order: the mounts, the NFS server (a hard mount must not outlive it),
    // then the directory they live in.
    a: Mount,
    b: Mount,
    _server: Option<NfsServer>,
    tmp: tempfile::TempDir,
    /// The filesystem type both mounts have (`fuse.bindfs`, `nfs4`).
    pub fs_type: String,
}

impl TwoHosts {
    /// Two bindfs mounts with `cache`; `None` after a loud skip when bindfs or FUSE is
    /// missing (a panic under `WRITERCTL_REQUIRE_SERVICES=1`). Panics when the mounts do not
    /// refuse `RENAME_NOREPLACE`, which every test here relies on to model NFS.
    pub fn mount(test: &str, cache: Cache) -> Option<TwoHosts> {
        let (tmp, backing) = bindfs_server(test)?;
        let a = bindfs(&backing, &tmp.path().join("host-a"), cache).unwrap_or_else(|e| panic!("{test}: {e}"));
        let b = bindfs(&backing, &tmp.path().join("host-b"), cache).unwrap_or_else(|e| panic!("{test}: {e}"));
        let hosts = TwoHosts { a, b, _server: None, tmp, fs_type: "fuse.bindfs".into() };
        for dir in [&hosts.a.dir, &hosts.b.dir] {
            assert!(
                refuses_rename_noreplace(dir),
                "{test}: {} accepts RENAME_NOREPLACE; the NFS model needs a mount that refuses it",
                dir.display()
            );
        }
        Some(hosts)
    }

    /// Two NFSv4.1 mounts (`nosharecache`: each its own client cache, default `hard`,
    /// close-to-open and attribute caching) of an nfs-ganesha export of the server
    /// directory. `None` after a visible `SKIPPED` line when this kernel has no NFS client
    /// or refuses the mount (never a failure: the machine does not allow it); a missing
    /// nfs-ganesha or mount.nfs where the kernel could mount is a loud skip (a failure under
    /// `WRITERCTL_REQUIRE_SERVICES=1`, since `scripts/ci-deps.sh` installs them there).
    pub fn nfs(test: &str) -> Option<TwoHosts> {
        if let Err(why) = nfs_client() {
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
            return None;
        }
        for (tool, pkg) in [("ganesha.nfsd", "nfs-ganesha-vfs"), ("mount.nfs", "nfs-common")] {
            if !have(tool) {
                skip(test, &format!("{tool} is not installed (package {pkg}; scripts/ci-deps.sh installs it)"));
                return None;
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let export = tmp.path().join("server");
        std::fs::create_dir_all(export.join("runtime")).unwrap();
        let server = NfsServer::start(tmp.path(), &export).unwrap_or_else(|e| panic!("{test}: {e}"));
        let mut mounts = Vec::new();
        for host in ["host-a", "host-b"] {
            let dir = tmp.path().join(host);
            std::fs::create_dir(&dir).unwrap();
            let opts = format!("vers=4.1,proto=tcp,port={},nosharecache,hard", server.port);
            let r = quiet_ok(Command::new("mount").args(["-t", "nfs4", "-o", &opts, "127.0.0.1:/export"]).arg(&dir));
            if let Err(e) = r {
                let _ = writeln!(std::io::stderr(), "SKIPPED {test}: this machine cannot mount NFS ({e})");
                return None;
            }
            mounts.push(Mount { dir, loop_dev: None });
        }
        let b = mounts.pop().unwrap();
        let a = mounts.pop().unwrap();
        let fs_type = mountinfo_type(&a.dir).unwrap_or_else(|| "nfs4".into());
        Some(TwoHosts { a, b, _server: Some(server), tmp, fs_type })
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

    /// `WRITERCTL_ALLOW_FILESYSTEM` naming this type: every test runs with every defence on
    /// whether or not the type is refused by default.
    pub fn allow(&self) -> (&'static str, &str) {
        ("WRITERCTL_ALLOW_FILESYSTEM", &self.fs_type)
    }
}

/// Whether this kernel has an NFS client: built in, or a module `modprobe` loads.
fn nfs_client() -> Result<(), String> {
    let has = || {
        std::fs::read_to_string("/proc/filesystems")
            .is_ok_and(|f| f.lines().any(|l| matches!(l.split_whitespace().last(), Some("nfs" | "nfs4"))))
    };
    if has() {
        return Ok(());
    }
    let _ = Command::new("modprobe").args(["-q", "nfs"]).stderr(Stdio::null()).status();
    if has() {
        return Ok(());
    }
    Err("this kernel has no NFS client (neither nfs nor nfs4 in /proc/filesystems, and no module to load), \
         so nothing can mount an nfs-ganesha export here; the bindfs tests model the NFS client caches instead"
        .into())
}

/// nfs-ganesha serving one directory over NFSv4 on a free local port, stopped on drop.
struct NfsServer {
    child: std::process::Child,
    port: u16,
}

impl NfsServer {
    fn start(work: &Path, export: &Path) -> Result<NfsServer, String> {
        let port =
            std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        let conf = work.join("ganesha.conf");
        // NFSv4 only (no rpcbind, NLM or rquota needed), no grace period (a fresh server
        // would otherwise refuse opens for 90 s), root not squashed (the tests run as root).
        std::fs::write(
            &conf,
            format!(
                "NFS_CORE_PARAM {{ Protocols = 4; NFS_Port = {port}; Bind_addr = 127.0.0.1; \
                 Enable_NLM = false; Enable_RQUOTA = false; }}\n\
                 NFSV4 {{ Graceless = true; }}\n\
                 EXPORT {{ Export_Id = 1; Path = {}; Pseudo = /export; Access_Type = RW; \
                 Squash = No_Root_Squash; Protocols = 4; Transports = TCP; SecType = sys; \
                 FSAL {{ Name = VFS; }} }}\n\
                 LOG {{ Default_Log_Level = WARN; }}\n",
                export.display()
            ),
        )
        .map_err(|e| e.to_string())?;
        let child = Command::new("ganesha.nfsd")
            .arg("-F")
            .arg("-f")
            .arg(&conf)
            .arg("-L")
            .arg(work.join("ganesha.log"))
            .arg("-p")
            .arg(work.join("ganesha.pid"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("ganesha.nfsd: {e}"))?;
        let mut server = NfsServer { child, port };
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(st)) = server.child.try_wait() {
                let log = std::fs::read_to_string(work.join("ganesha.log")).unwrap_or_default();
                return Err(format!("ganesha.nfsd exited ({st}):\n{log}"));
            }
            if std::time::Instant::now() > until {
                let _ = server.child.kill();
                return Err(format!("ganesha.nfsd did not listen on port {port} within 30 s"));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Ok(server)
    }
}

impl Drop for NfsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
