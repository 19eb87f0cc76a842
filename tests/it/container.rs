//! Issue 40: writerctl's image under a real OCI runtime (podman + runc), as a strict cluster
//! runs it — and which pid-namespace guarantee that setup gets.
//!
//! Every container here runs the image `scripts/image.sh` builds (deploy/container/
//! Containerfile: FROM scratch, no shell), with a test writer (`examples/pod_writer.rs`) added
//! in a layer of its own, as uid 65532 with `--cap-drop=ALL`, `--security-opt
//! no-new-privileges`, podman's default seccomp profile (checked: `Seccomp: 2` in the
//! container's /proc status), a read-only root and a tmpfs at `/run/writerctl`
//! (`XDG_RUNTIME_DIR`) for the control socket, no network. Two containers share one volume
//! (the runtime directory and the transcript), as two pods of a Deployment share an RWX
//! volume on one node. Cases:
//!
//! * a rollout: B waits (`run --wait`), A's preStop seal through `podman exec` (exec form, no
//!   shell), `podman stop -t`; B takes the seal over;
//! * a writer that ignores SIGTERM: `podman stop -t 5` kills the container after its timeout;
//!   until then B stays out, then it reclaims by the kernel's proof (the filesystems page's
//!   "same node, SIGKILLed past its grace" row);
//! * a SIGKILLed container (`podman kill`): B reclaims by proof;
//! * a restarted container (`podman restart`): it seals on the way down and takes its own
//!   seal over on the way up;
//! * a wedged writer (`podman pause`), as docs/src/howto/stuck-session.md's "When the new Pod
//!   only waits" describes it: its commands run verbatim with `podman exec` in a toolbox
//!   container (deploy/kubernetes/writer-toolbox.yaml: `writerctl status --watch`, read-only
//!   root) and in the waiting container; `recover --writers-fenced --yes` moves nothing while
//!   the old tree lives; once it is killed, the waiting one gets in by proof;
//! * podman's profile amended to allow `unshare` only with `CAP_SYS_ADMIN`, as Docker's and
//!   containerd's defaults do: `shared`, and a `podman kill`ed container is still reclaimed
//!   by proof (`run` is the container's PID 1).
//!
//! One writer at every moment is asserted twice: the transcript (each writer appends
//! `writer=… pid=… epoch=… seq=n`, one durable line every 20 ms) is a run of blocks, one per
//! writer, that never interleave or come back, with epochs rising; and `writerctl status
//! --json`, polled throughout, never shows an older epoch after a newer one, nor two owners
//! for one epoch. The pid-namespace guarantee each container got is read from `run`'s
//! `event=pid_namespace` line and from the writer's `WRITERCTL_PID_NAMESPACE`, and compared
//! with the row the filesystems page (concepts/filesystems.md) gives this setup.
//!
//! Where podman cannot run (not installed, not root, a runtime that fails), every case skips
//! loudly — and fails under `WRITERCTL_REQUIRE_SERVICES=1` (CI).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::services::skip;
use crate::support::BIN;

/// The image's user (deploy/container/Containerfile).
const UID: u32 = 65532;
/// The product image, as `scripts/image.sh --binary` builds it from this test's writerctl.
const PRODUCT_TAG: &str = "localhost/writerctl-it:product";
/// The product image plus `pod_writer` (the product image stays writerctl-only).
const WRITER_TAG: &str = "localhost/writerctl-it:writer";
/// What `run --pid-namespace auto` gets in this setup, as the docs' setup × guarantee table
/// (concepts/filesystems.md, "container, non-root, default seccomp") says: podman's default
/// seccomp profile allows `unshare(CLONE_NEWUSER|CLONE_NEWPID)` without capabilities, so a
/// non-root writerctl gets a pid namespace inside a user namespace of its own. A change here
/// is a change of the documented guarantee: update that row with it.
const DOCUMENTED_PID_NAMESPACE: &str = "own";
/// The same under a seccomp profile that allows `unshare` only with `CAP_SYS_ADMIN`, as
/// Docker's and containerd's default profiles do (Kubernetes `RuntimeDefault` on
/// containerd): no namespace can be made, so `shared` — and the table's row for it says what
/// still holds when `run` is the container's PID 1.
const DOCUMENTED_PID_NAMESPACE_UNSHARE_DENIED: &str = "shared";
const LIMIT: Duration = Duration::from_secs(60);

struct Images {
    writer_tag: &'static str,
}

static IMAGES: OnceLock<Result<Images, String>> = OnceLock::new();

/// The test images, built once per test run; None after a loud skip (no podman, not root, a
/// runtime that cannot start a container here). A build that fails is a failure, not a skip.
fn images(test: &str) -> Option<&'static Images> {
    match IMAGES.get_or_init(build_images) {
        Ok(i) => Some(i),
        Err(why) => {
            skip(test, why);
            None
        }
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Err: why the cases cannot run on this machine (a skip).
fn build_images() -> Result<Images, String> {
    let started = Instant::now();
    match Command::new("podman").arg("info").output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => return Err(format!("podman info fails here: {}", text(&o).trim())),
        Err(_) => return Err("podman is not installed (scripts/ci-deps.sh installs podman and runc)".into()),
    }
    if !rustix::process::geteuid().is_root() {
        return Err("the container tests need root (rootful podman; the shared volume is chowned to uid 65532)".into());
    }
    let writer = pod_writer();
    let built_writer = started.elapsed();
    // The previous run's images, unless a container still uses them: a rebuilt binary would
    // otherwise leave them behind untagged, ~80 MB a run.
    let _ = Command::new("podman").args(["rmi", WRITER_TAG, PRODUCT_TAG]).output();

    // The product image exactly as users get it, from this test's writerctl (no second
    // cargo build of writerctl).
    let ctx = tempfile::tempdir().unwrap();
    let o = Command::new("bash")
        .arg(repo().join("scripts/image.sh"))
        .args(["--binary", BIN, "--tag", PRODUCT_TAG, "--context"])
        .arg(ctx.path().join("product"))
        .output()
        .unwrap();
    assert!(o.status.success(), "scripts/image.sh --binary {BIN} failed: {}", text(&o));
    let built_product = started.elapsed();

    // The writer layer: pod_writer and the libraries ldd names for it.
    let wctx = ctx.path().join("writer");
    let rootfs = wctx.join("rootfs");
    std::fs::create_dir_all(rootfs.join("usr/local/bin")).unwrap();
    std::fs::copy(&writer, rootfs.join("usr/local/bin/pod_writer")).unwrap();
    for lib in ldd(&writer) {
        let dest = rootfs.join(lib.strip_prefix("/").unwrap());
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&lib, &dest).unwrap_or_else(|e| panic!("copy {}: {e}", lib.display()));
    }
    std::fs::write(wctx.join("Containerfile"), format!("FROM {PRODUCT_TAG}\nCOPY rootfs/ /\n")).unwrap();
    let o = Command::new("podman")
        .args(["build", "--quiet", "--pull=never", "-t", WRITER_TAG])
        .arg(&wctx)
        .output()
        .unwrap();
    assert!(o.status.success(), "podman build of the writer image failed: {}", text(&o));
    // The runtime must actually start a container here (a sandbox without the settings
    // scripts/ci-deps.sh writes fails at this point, not in the middle of a case).
    let o =
        Command::new("podman").args(["run", "--rm", "--network", "none", WRITER_TAG, "--version"]).output().unwrap();
    if !o.status.success() {
        return Err(format!(
            "podman cannot run a container here ({}); scripts/ci-deps.sh writes the containers.conf a sandbox needs",
            text(&o).trim()
        ));
    }
    eprintln!(
        "container: images built in {:.1} s (pod_writer by {:.1} s, the product image by {:.1} s)",
        started.elapsed().as_secs_f64(),
        built_writer.as_secs_f64(),
        built_product.as_secs_f64()
    );
    Ok(Images { writer_tag: WRITER_TAG })
}

/// `examples/pod_writer.rs`, built beside this test's writerctl (`cargo test` builds
/// examples; `cargo test --test it` does not, so build it here, which is a no-op when fresh).
fn pod_writer() -> PathBuf {
    let profile_dir = Path::new(BIN).parent().unwrap();
    let target_dir = profile_dir.parent().unwrap();
    let mut c = Command::new(option_env!("CARGO").unwrap_or("cargo"));
    c.args(["build", "--quiet", "--example", "pod_writer"]).env("CARGO_TARGET_DIR", target_dir).current_dir(repo());
    // Not the variables Cargo sets for this test process: build scripts watch some of them
    // (ring's reruns on CARGO_MANIFEST_DIR), so passing them on would rebuild half the
    // dependency graph here, and again in the next `cargo test`.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        let set_by_cargo = k.starts_with("CARGO_PKG_")
            || matches!(
                &*k,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "CARGO_RUSTC_CURRENT_DIR"
                    | "OUT_DIR"
            );
        if set_by_cargo {
            c.env_remove(&*k);
        }
    }
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        c.arg("--release");
    }
    let o = c.output().unwrap_or_else(|e| panic!("cargo build --example pod_writer: {e}"));
    assert!(o.status.success(), "cargo build --example pod_writer failed: {}", text(&o));
    let path = profile_dir.join("examples/pod_writer");
    assert!(path.is_file(), "{} is missing after cargo build --example pod_writer", path.display());
    path
}

/// The files the dynamic loader maps for `bin` (as scripts/image.sh stages them).
fn ldd(bin: &Path) -> Vec<PathBuf> {
    let o = Command::new("ldd").arg(bin).output().unwrap_or_else(|e| panic!("ldd: {e}"));
    let out = String::from_utf8_lossy(&o.stdout);
    let mut libs = Vec::new();
    for line in out.lines() {
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.trim().split(' ').next().unwrap_or(""),
            None => line.trim().split(' ').next().unwrap_or(""),
        };
        assert!(!line.contains("not found"), "ldd {}: {line}", bin.display());
        if path.starts_with('/') {
            libs.push(PathBuf::from(path));
        }
    }
    libs
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// One writer line: `writer=NAME pid=P epoch=E pidns=M recovered=R seq=N [drained]`.
#[derive(Debug, Clone, PartialEq)]
struct Line {
    writer: String,
    pid: u32,
    epoch: u64,
    pidns: String,
    recovered: bool,
    seq: u64,
    drained: bool,
}

fn parse_line(l: &str) -> Line {
    let field = |k: &str| {
        l.split(' ')
            .find_map(|w| w.strip_prefix(k).and_then(|r| r.strip_prefix('=')))
            .unwrap_or_else(|| panic!("transcript line without {k}: {l:?}"))
    };
    Line {
        writer: field("writer").into(),
        pid: field("pid").parse().unwrap(),
        epoch: field("epoch").parse().unwrap_or_else(|_| panic!("epoch in {l:?}")),
        pidns: field("pidns").into(),
        recovered: field("recovered") == "1",
        seq: field("seq").parse().unwrap(),
        drained: l.ends_with(" drained"),
    }
}

/// One writer's stretch of the transcript.
#[derive(Debug)]
struct Block {
    writer: String,
    epoch: u64,
    pidns: String,
    recovered: bool,
    lines: u64,
    drained: bool,
}

/// The transcript as blocks, checking one writer at a time: each writer's lines are one
/// contiguous run (never interleaved with another's, never coming back after another
/// started), numbered 0, 1, 2, … without a gap, a drained line only last; epochs rise from
/// block to block (each new writer came in through a takeover or a reclaim). Complete lines
/// only: a poll may land in the middle of an append.
fn one_writer_at_a_time(transcript: &str) -> Result<Vec<Block>, String> {
    let complete = &transcript[..transcript.rfind('\n').map_or(0, |i| i + 1)];
    let mut blocks: Vec<(Line, Block)> = Vec::new();
    for l in complete.lines().map(parse_line) {
        let key = |x: &Line| (x.writer.clone(), x.pid, x.epoch);
        match blocks.last_mut() {
            Some((first, b)) if key(first) == key(&l) => {
                if b.drained {
                    return Err(format!("{} wrote after its drained line", l.writer));
                }
                if l.seq != b.lines {
                    return Err(format!("a gap in {}'s lines before seq={}", l.writer, l.seq));
                }
                b.lines += 1;
                b.drained = l.drained;
            }
            _ => {
                if blocks.iter().any(|(f, _)| key(f) == key(&l)) {
                    return Err(format!(
                        "two writers interleaved: {} (epoch {}) wrote again after another",
                        l.writer, l.epoch
                    ));
                }
                if let Some((prev, _)) = blocks.last()
                    && l.epoch <= prev.epoch
                {
                    return Err(format!("{} wrote with epoch {} after epoch {}", l.writer, l.epoch, prev.epoch));
                }
                if l.seq != 0 {
                    return Err(format!("{} begins in the middle (seq={})", l.writer, l.seq));
                }
                let b = Block {
                    writer: l.writer.clone(),
                    epoch: l.epoch,
                    pidns: l.pidns.clone(),
                    recovered: l.recovered,
                    lines: 1,
                    drained: l.drained,
                };
                blocks.push((l, b));
            }
        }
    }
    Ok(blocks.into_iter().map(|(_, b)| b).collect())
}

/// What one `status --json` poll saw.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    state: String,
    epoch: u64,
    host: String,
}

/// `writerctl status --json` on the shared volume, polled from the host (as the image's
/// user) every 100 ms while a case runs.
struct Watch {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Seen>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    fn start(data: &Path, session: &str) -> Watch {
        let (stop, seen) = (Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(Vec::new())));
        let (data, session, stop2, seen2) = (data.to_owned(), session.to_owned(), stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                if let Some(s) = status(&data, &session) {
                    let mut v = seen2.lock().unwrap();
                    if v.last() != Some(&s) {
                        v.push(s);
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Watch { stop, seen, thread: Some(thread) }
    }

    /// Stops polling; asserts that no poll saw an older epoch after a newer one, nor two
    /// owners (hosts) for one epoch: one writer at every moment, as status shows it — and
    /// that the polls saw `owners` owners one after the other (so they did read the lock).
    fn finish(mut self, owners: usize) -> Vec<Seen> {
        let epochs = |seen: &[Seen]| {
            let mut e: Vec<u64> = seen.iter().filter(|s| s.state != "missing").map(|s| s.epoch).collect();
            e.dedup();
            e
        };
        // A slow machine may not have polled the last owner yet: give it a few seconds.
        let t0 = Instant::now();
        while epochs(&self.seen.lock().unwrap()).len() < owners && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap();
        let seen = self.seen.lock().unwrap().clone();
        for w in seen.windows(2) {
            if w[0].state == "missing" || w[1].state == "missing" {
                continue;
            }
            assert!(w[1].epoch >= w[0].epoch, "status went back from {:?} to {:?}: {seen:#?}", w[0], w[1]);
            if w[1].epoch == w[0].epoch {
                assert_eq!(w[1].host, w[0].host, "two owners of epoch {}: {seen:#?}", w[0].epoch);
            }
        }
        assert_eq!(epochs(&seen).len(), owners, "status polls saw these owners: {seen:#?}");
        seen
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// One `status --json` of the session, run on the host as the image's user.
fn status(data: &Path, session: &str) -> Option<Seen> {
    use std::os::unix::process::CommandExt;
    let o = Command::new(BIN)
        .args(["status", "--json", "--session", session, "--runtime-dir"])
        .arg(data)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .uid(UID)
        .gid(UID)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let v: Value = serde_json::from_slice(&o.stdout).ok()?;
    let state = v["state"].as_str()?.to_owned();
    Some(Seen {
        state,
        epoch: v["owner"]["epoch"].as_u64().unwrap_or(0),
        host: v["owner"]["hostname"].as_str().unwrap_or("").to_owned(),
    })
}

/// One case: a shared volume (the runtime directory; the transcript under it), one session,
/// the containers it started (removed on drop).
struct Case {
    images: &'static Images,
    tmp: tempfile::TempDir,
    data: PathBuf,
    session: String,
    prefix: String,
    started: Mutex<Vec<String>>,
    /// `--security-opt seccomp=…` instead of the runtime's default.
    seccomp: Option<PathBuf>,
}

impl Case {
    fn new(test: &str, images: &'static Images) -> Case {
        let tmp = tempfile::tempdir().unwrap();
        // Traversable, so the status poller (as uid 65532) reaches the volume inside.
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let data = tmp.path().join("data");
        // The volume as a pod sees an RWX volume: owned by the pod's user, private.
        for d in [data.clone(), data.join("chats")] {
            std::fs::create_dir(&d).unwrap();
            std::os::unix::fs::chown(&d, Some(UID), Some(UID)).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        let prefix = format!("writerctl-it-{}-{}", test, std::process::id());
        Case {
            images,
            tmp,
            data,
            session: format!("{test}-session"),
            prefix,
            started: Mutex::new(Vec::new()),
            seccomp: None,
        }
    }

    fn name(&self, who: &str) -> String {
        format!("{}-{who}", self.prefix)
    }

    /// Starts container `who` running `writerctl run ARGS -- pod_writer WRITER_ARGS`, as a
    /// restricted pod would: non-root, no capabilities, no privilege escalation, the
    /// runtime's default seccomp, read-only root, a tmpfs for the control socket.
    fn start(&self, who: &str, run_args: &[&str], writer_args: &[&str]) -> String {
        let name = self.name(who);
        self.started.lock().unwrap().push(name.clone());
        let mut c = Command::new("podman");
        c.args(["run", "--detach", "--name", &name, "--hostname", &name, "--network", "none"]);
        c.args(["--user", &format!("{UID}:{UID}"), "--cap-drop=ALL", "--security-opt", "no-new-privileges"]);
        c.args(["--read-only", "--read-only-tmpfs=false", "--tmpfs", "/run/writerctl:rw,mode=0700,U"]);
        c.arg("--volume").arg(format!("{}:/data", self.data.display()));
        c.args(["--env", "WRITERCTL_RUNTIME_DIR=/data", "--env", "XDG_RUNTIME_DIR=/run/writerctl"]);
        c.args(["--env", "WRITERCTL_SESSION_WRITER_LEASE=1"]);
        if let Some(profile) = &self.seccomp {
            c.arg("--security-opt").arg(format!("seccomp={}", profile.display()));
        }
        c.args([self.images.writer_tag, "run", "--session", &self.session, "--check-interval", "0.5"]);
        c.args(run_args).args(["--", "/usr/local/bin/pod_writer"]).args(writer_args);
        let o = c.output().unwrap();
        assert!(o.status.success(), "podman run {name}: {}", text(&o));
        self.assert_restricted(&name);
        name
    }

    /// Starts the toolbox of deploy/kubernetes/writer-toolbox.yaml: the writer's image, user
    /// and volume, `writerctl status --watch` as its command, a read-only root and no tmpfs
    /// (the manifest mounts none: nothing it runs writes outside the volume).
    fn start_toolbox(&self) -> String {
        let name = self.name("toolbox");
        self.started.lock().unwrap().push(name.clone());
        let mut c = Command::new("podman");
        c.args(["run", "--detach", "--name", &name, "--hostname", &name, "--network", "none"]);
        c.args(["--user", &format!("{UID}:{UID}"), "--cap-drop=ALL", "--security-opt", "no-new-privileges"]);
        c.args(["--read-only", "--read-only-tmpfs=false"]);
        c.arg("--volume").arg(format!("{}:/data", self.data.display()));
        c.args(["--env", "WRITERCTL_RUNTIME_DIR=/data"]);
        c.args([self.images.writer_tag, "status", "--watch"]);
        let o = c.output().unwrap();
        assert!(o.status.success(), "podman run {name}: {}", text(&o));
        self.assert_restricted(&name);
        self.until(&format!("{name} watches"), || self.logs(&name).contains("watching"));
        name
    }

    /// `podman exec NAME ARGS` (`kubectl exec POD -- ARGS`), whatever its exit status.
    fn exec(&self, name: &str, args: &[&str]) -> Output {
        Command::new("podman").args(["exec", name]).args(args).output().unwrap()
    }

    /// The container's PID 1 (`writerctl run`) really runs as the restricted pod does:
    /// uid 65532, no effective capability, no_new_privs, a seccomp filter (mode 2).
    fn assert_restricted(&self, name: &str) {
        let pid = self.podman(&["inspect", "--format", "{{.State.Pid}}", name]).trim().to_owned();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_else(|e| panic!("/proc/{pid}/status of {name}: {e}\n{}", self.report()));
        let field =
            |k: &str| status.lines().find_map(|l| l.strip_prefix(k)).map(|v| v.trim().to_owned()).unwrap_or_default();
        assert!(field("Uid:").split_whitespace().all(|u| u == UID.to_string()), "{name}: {status}");
        assert_eq!(field("CapEff:"), "0000000000000000", "{name}: {status}");
        assert_eq!(field("CapBnd:"), "0000000000000000", "{name}: {status}");
        assert_eq!(field("NoNewPrivs:"), "1", "{name}: {status}");
        assert_eq!(field("Seccomp:"), "2", "{name}: no seccomp filter\n{status}");
    }

    /// `podman ARGS`, which must succeed; its stdout.
    fn podman(&self, args: &[&str]) -> String {
        let o = Command::new("podman").args(args).output().unwrap();
        assert!(o.status.success(), "podman {args:?}: {}\n{}", text(&o), self.report());
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn logs(&self, name: &str) -> String {
        Command::new("podman").args(["logs", name]).output().map(|o| text(&o)).unwrap_or_default()
    }

    fn exit_code(&self, name: &str) -> i32 {
        self.podman(&["inspect", "--format", "{{.State.ExitCode}}", name]).trim().parse().unwrap()
    }

    fn running(&self, name: &str) -> bool {
        self.podman(&["inspect", "--format", "{{.State.Running}}", name]).trim() == "true"
    }

    fn transcript(&self) -> String {
        std::fs::read_to_string(self.data.join(format!("chats/{}.jsonl", self.session))).unwrap_or_default()
    }

    /// The transcript's blocks; fails the case (with the report) the moment two writers show.
    fn blocks(&self) -> Vec<Block> {
        let t = self.transcript();
        one_writer_at_a_time(&t).unwrap_or_else(|e| panic!("{e}:\n{t}\n{}", self.report()))
    }

    /// Everything a failure needs: each container's log, the transcript's tail, the status.
    fn report(&self) -> String {
        let mut r = String::new();
        for name in self.started.lock().unwrap().iter() {
            r.push_str(&format!("--- podman logs {name}\n{}\n", self.logs(name)));
        }
        let t = self.transcript();
        let tail: Vec<&str> = t.lines().rev().take(8).collect();
        r.push_str(&format!("--- transcript ({} lines), last ones:\n", t.lines().count()));
        for l in tail.iter().rev() {
            r.push_str(l);
            r.push('\n');
        }
        r.push_str(&format!("--- status: {:?}\n", status(&self.data, &self.session)));
        r
    }

    /// Polls `f` every 50 ms until it holds; fails with the report after `LIMIT`.
    fn until(&self, what: &str, mut f: impl FnMut() -> bool) {
        let t0 = Instant::now();
        while !f() {
            assert!(t0.elapsed() < LIMIT, "{what}: not within {LIMIT:?}\n{}", self.report());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Until writer `who`'s block has at least `n` lines.
    fn until_lines(&self, who: &str, n: u64) {
        let name = self.name(who);
        self.until(&format!("{name} writes {n} lines"), || {
            self.blocks().iter().any(|b| b.writer == name && b.lines >= n)
        });
    }

    /// The pid-namespace guarantee `run` in `name` reported (`event=pid_namespace mode=…`).
    fn pid_namespace(&self, name: &str) -> String {
        let logs = self.logs(name);
        let line = logs
            .lines()
            .find(|l| l.contains("event=pid_namespace"))
            .unwrap_or_else(|| panic!("no event=pid_namespace from {name}\n{}", self.report()));
        line.split(" mode=\"").nth(1).and_then(|r| r.split('"').next()).unwrap().to_owned()
    }

    /// Both sources agree, and match the documented guarantee; printed for the record.
    fn assert_pid_namespace(&self, name: &str, blocks: &[Block]) {
        let documented =
            if self.seccomp.is_some() { DOCUMENTED_PID_NAMESPACE_UNSHARE_DENIED } else { DOCUMENTED_PID_NAMESPACE };
        let mode = self.pid_namespace(name);
        for b in blocks.iter().filter(|b| b.writer == name) {
            assert_eq!(b.pidns, mode, "{name}: run said {mode}, its writer saw {}\n{}", b.pidns, self.report());
        }
        let line = self.logs(name).lines().find(|l| l.contains("event=pid_namespace")).unwrap().to_owned();
        eprintln!("container {name}: {line}");
        assert_eq!(
            mode,
            documented,
            "{name} got WRITERCTL_PID_NAMESPACE={mode}; docs/src/concepts/filesystems.md's container row says {documented}: update it (and the constant here)\n{}",
            self.report()
        );
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        let names = self.started.lock().map(|v| v.clone()).unwrap_or_default();
        if !names.is_empty() {
            let _ = Command::new("podman")
                .args(["rm", "--force", "--time", "0"])
                .args(&names)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The rollout a Deployment does: B starts and waits; A's preStop hook seals through the
/// supervisor (`podman exec A writerctl seal --session S`, no shell); `podman stop -t` ends
/// A (exit 0); B validates the seal and takes over with epoch + 1. Then B is stopped in turn
/// and seals on SIGTERM.
#[test]
fn rollout_prestop_seal_then_stop_hands_over_to_the_waiting_container() {
    let test = "rollout";
    let Some(images) = images("rollout_prestop_seal_then_stop_hands_over_to_the_waiting_container") else {
        return;
    };
    let case = Case::new(test, images);
    let watch = Watch::start(&case.data, &case.session);
    let a = case.start("a", &["--grace", "10"], &[]);
    case.until_lines("a", 10);
    let b = case.start("b", &["--wait", "60", "--grace", "10"], &[]);
    case.until(&format!("{b} waits for the session"), || case.logs(&b).contains("event=waiting"));
    assert!(case.blocks().iter().all(|x| x.writer == a), "B wrote while A held the session\n{}", case.report());

    // preStop: exec form, no shell, no token: asks A's supervisor over the control socket in
    // A's tmpfs; returns once the seal is on disk.
    let sealed = case.podman(&[
        "exec",
        &a,
        "/usr/local/bin/writerctl",
        "seal",
        "--session",
        &case.session,
        "--json",
        "--timeout",
        "30",
    ]);
    let sealed: Value = serde_json::from_str(&sealed).unwrap();
    assert_eq!(sealed["state"], "sealed", "{sealed}");
    // The seal's exclusivity proof holds here: the read lease is granted to the transcript's
    // owner without CAP_LEASE, under the default seccomp profile.
    assert_eq!(sealed["exclusive"], "read_lease", "{sealed}");
    // A's writer drained before the seal; B may already be writing (it takes the seal over
    // the moment it is on disk, while A's supervisor still waits for its SIGTERM).
    let blocks = case.blocks();
    assert!(blocks[0].writer == a && blocks[0].drained, "A drained before the seal: {blocks:?}");
    assert!(case.running(&a), "A's supervisor waits for the SIGTERM that ends the pod\n{}", case.report());

    let t0 = Instant::now();
    case.podman(&["stop", "--time", "10", &a]);
    assert!(t0.elapsed() < Duration::from_secs(8), "A did not stop on SIGTERM: {:?}", t0.elapsed());
    assert_eq!(case.exit_code(&a), 0, "A's run exits 0 after the handoff\n{}", case.report());

    case.until_lines("b", 10);
    let blocks = case.blocks();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    assert_eq!((blocks[1].writer.as_str(), blocks[1].epoch), (b.as_str(), blocks[0].epoch + 1), "{blocks:?}");
    assert!(!blocks[1].recovered, "a certified takeover, not a reclaim: {blocks:?}");
    assert!(case.logs(&b).contains("event=takeover"), "{}", case.report());

    // B's own stop: SIGTERM alone drains and seals.
    case.podman(&["stop", "--time", "10", &b]);
    assert_eq!(case.exit_code(&b), 0, "{}", case.report());
    let blocks = case.blocks();
    assert!(blocks.iter().all(|x| x.drained), "{blocks:?}");
    assert!(case.transcript().ends_with('\n'), "every line whole once both writers stopped\n{}", case.report());
    watch.finish(2);
    // Read now: the poller may have stopped before its next poll after B's seal.
    let last = status(&case.data, &case.session).map(|s| (s.state, s.epoch));
    assert_eq!(last, Some(("sealed".to_owned(), blocks[1].epoch)), "{}", case.report());
    case.assert_pid_namespace(&a, &blocks);
    case.assert_pid_namespace(&b, &blocks);
}

/// A writer that ignores SIGTERM: `podman stop -t 5` sends SIGTERM (run forwards it; the
/// writer writes on), then SIGKILLs the container after 5 s — before run's own --grace.
/// Until then the lock stays A's and B stays out; afterwards B gets in only by the kernel's
/// proof (A's holder lock released, no descriptor of the transcript open for writing),
/// epoch + 1, `WRITERCTL_RECOVERED=1`.
#[test]
fn writer_ignoring_sigterm_is_killed_by_podman_stop_and_only_then_does_the_next_get_in() {
    let test = "ignoreterm";
    let Some(images) = images("writer_ignoring_sigterm_is_killed_by_podman_stop_and_only_then_does_the_next_get_in")
    else {
        return;
    };
    let case = Case::new(test, images);
    let watch = Watch::start(&case.data, &case.session);
    let a = case.start("a", &["--grace", "30"], &["--ignore-sigterm"]);
    case.until_lines("a", 10);
    let b = case.start("b", &["--wait", "60", "--grace", "10"], &[]);
    case.until(&format!("{b} waits for the session"), || case.logs(&b).contains("event=waiting"));

    let stopper = {
        let a = a.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            let o = Command::new("podman").args(["stop", "--time", "5", &a]).output().unwrap();
            (o, t0.elapsed())
        })
    };
    // Mid-timeout: A's writer still writes, under A's lock; B has not started a writer.
    case.until(&format!("{a} got SIGTERM"), || case.logs(&a).contains("event=stopping"));
    let before = case.blocks().iter().find(|x| x.writer == a).map(|x| x.lines).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let blocks = case.blocks();
    assert!(blocks.len() == 1 && blocks[0].lines > before, "A writes on after SIGTERM, alone: {blocks:?}");
    assert!(!case.logs(&b).contains("event=writer_started"), "B started while A's writer lived\n{}", case.report());
    let s = status(&case.data, &case.session).unwrap();
    assert_eq!((s.state.as_str(), s.host.as_str()), ("active", a.as_str()), "{s:?}");

    let (o, took) = stopper.join().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(took >= Duration::from_secs(5), "podman stop returned after {took:?}, before its timeout");
    assert_eq!(case.exit_code(&a), 137, "A was SIGKILLed by podman stop\n{}", case.report());

    case.until_lines("b", 10);
    let blocks = case.blocks();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    assert!(!blocks[0].drained, "A never drained: {blocks:?}");
    assert_eq!((blocks[1].writer.as_str(), blocks[1].epoch), (b.as_str(), blocks[0].epoch + 1), "{blocks:?}");
    assert!(blocks[1].recovered, "B got in by the kernel's proof (a reclaim): {blocks:?}");
    assert!(case.logs(&b).contains("event=recovered"), "{}", case.report());
    watch.finish(2);
    case.assert_pid_namespace(&a, &blocks);
    case.assert_pid_namespace(&b, &blocks);
}

/// `podman kill` (SIGKILL to the container's PID 1, writerctl run): the kernel kills the
/// whole container, the holder lock goes with it, and the waiting B reclaims by proof.
#[test]
fn sigkilled_container_is_reclaimed_by_proof_by_the_waiting_one() {
    let test = "sigkill";
    let Some(images) = images("sigkilled_container_is_reclaimed_by_proof_by_the_waiting_one") else {
        return;
    };
    let case = Case::new(test, images);
    let watch = Watch::start(&case.data, &case.session);
    let a = case.start("a", &[], &[]);
    case.until_lines("a", 10);
    let b = case.start("b", &["--wait", "60"], &[]);
    case.until(&format!("{b} waits for the session"), || case.logs(&b).contains("event=waiting"));
    case.podman(&["kill", "--signal", "KILL", &a]);
    case.until(&format!("{a} is gone"), || !case.running(&a));
    assert_eq!(case.exit_code(&a), 137, "{}", case.report());

    case.until_lines("b", 10);
    let blocks = case.blocks();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    assert_eq!((blocks[1].writer.as_str(), blocks[1].epoch), (b.as_str(), blocks[0].epoch + 1), "{blocks:?}");
    assert!(blocks[1].recovered && !blocks[0].drained, "{blocks:?}");
    assert!(case.logs(&b).contains("event=recovered"), "{}", case.report());
    watch.finish(2);
    case.assert_pid_namespace(&a, &blocks);
    case.assert_pid_namespace(&b, &blocks);
}

/// `podman restart`: SIGTERM, the writer drains, run seals and exits 0; the same container
/// starts again and its run takes its own seal over (epoch + 1, a takeover, not a reclaim).
#[test]
fn restarted_container_seals_on_the_way_down_and_takes_its_seal_over() {
    let test = "restart";
    let Some(images) = images("restarted_container_seals_on_the_way_down_and_takes_its_seal_over") else {
        return;
    };
    let case = Case::new(test, images);
    let watch = Watch::start(&case.data, &case.session);
    let a = case.start("a", &["--wait", "30", "--grace", "10"], &[]);
    case.until_lines("a", 10);
    case.podman(&["restart", "--time", "10", &a]);
    case.until(&format!("{a} writes again after its restart"), || {
        case.blocks().len() == 2 && case.blocks()[1].lines >= 10
    });
    let blocks = case.blocks();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    assert!(blocks[0].drained, "the first run drained before the seal: {blocks:?}");
    assert_eq!((blocks[1].writer.as_str(), blocks[1].epoch), (a.as_str(), blocks[0].epoch + 1), "{blocks:?}");
    assert!(!blocks[1].recovered, "a takeover of its own seal, not a reclaim: {blocks:?}");
    assert!(case.logs(&a).contains("event=takeover"), "{}", case.report());
    watch.finish(2);
    case.assert_pid_namespace(&a, &blocks);
}

/// Podman's default seccomp profile with `unshare` allowed only with `CAP_SYS_ADMIN`, as in
/// Docker's and containerd's default profiles (containerd's is Kubernetes' `RuntimeDefault`
/// there). Only that one rule differs, so the case isolates what it changes.
fn unshare_denied_profile(dir: &Path) -> PathBuf {
    let path = Command::new("podman")
        .args(["info", "--format", "{{.Host.Security.SECCOMPProfilePath}}"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("podman's seccomp profile {path:?}: {e}"));
    let mut profile: Value = serde_json::from_str(&text).unwrap();
    let rules = profile["syscalls"].as_array_mut().unwrap();
    let unconditional = |r: &Value| {
        r["action"] == "SCMP_ACT_ALLOW"
            && r.get("includes").is_none_or(|i| i.as_object().is_none_or(|o| o.is_empty()))
            && r.get("args").is_none_or(|a| a.is_null() || a.as_array().is_some_and(|a| a.is_empty()))
    };
    let mut removed = false;
    for r in rules.iter_mut().filter(|r| unconditional(r)) {
        let names = r["names"].as_array_mut().unwrap();
        let before = names.len();
        names.retain(|n| n != "unshare");
        removed |= names.len() != before;
    }
    assert!(removed, "podman's profile {path} no longer allows unshare unconditionally: revisit this case");
    rules.push(
        serde_json::json!({"names": ["unshare"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}}),
    );
    rules.push(serde_json::json!({"names": ["unshare"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "excludes": {"caps": ["CAP_SYS_ADMIN"]}}));
    let out = dir.join("seccomp-unshare-denied.json");
    std::fs::write(&out, serde_json::to_vec(&profile).unwrap()).unwrap();
    out
}

/// Under a profile that denies `unshare` (Docker's and containerd's defaults), `run` gets no
/// namespace of its own (`shared`, with the kernel's reason in the log). `run` is the
/// container's PID 1, so the container's own pid namespace still takes the whole tree with
/// it when `run` dies: the waiting container reclaims by proof after `podman kill`, exactly
/// as with `own`.
#[test]
fn unshare_denied_by_seccomp_gives_shared_and_a_killed_container_is_still_reclaimed() {
    let test = "noshare";
    let Some(images) = images("unshare_denied_by_seccomp_gives_shared_and_a_killed_container_is_still_reclaimed")
    else {
        return;
    };
    let mut case = Case::new(test, images);
    case.seccomp = Some(unshare_denied_profile(case.tmp.path()));
    let watch = Watch::start(&case.data, &case.session);
    let a = case.start("a", &[], &[]);
    case.until_lines("a", 10);
    assert!(
        case.logs(&a).contains("unshare(CLONE_NEWUSER|CLONE_NEWPID): Operation not permitted"),
        "{}",
        case.report()
    );
    let b = case.start("b", &["--wait", "60"], &[]);
    case.until(&format!("{b} waits for the session"), || case.logs(&b).contains("event=waiting"));
    case.podman(&["kill", "--signal", "KILL", &a]);
    case.until_lines("b", 10);
    let blocks = case.blocks();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    assert_eq!((blocks[1].writer.as_str(), blocks[1].epoch), (b.as_str(), blocks[0].epoch + 1), "{blocks:?}");
    assert!(blocks[1].recovered, "{blocks:?}");
    watch.finish(2);
    case.assert_pid_namespace(&a, &blocks);
    case.assert_pid_namespace(&b, &blocks);
}

/// docs/src/howto/stuck-session.md, "When the new Pod only waits", through the toolbox of
/// deploy/kubernetes/writer-toolbox.yaml: a wedged old writer (`podman pause A`: frozen, its
/// tree alive, its holder lock held) on the same node as the new one. B's `run --wait` keeps
/// waiting and never starts a writer; the how-to's commands, run verbatim with `podman exec`
/// in the toolbox (the writer's image, user and volume, running `writerctl status --watch`,
/// a read-only root and nothing else) and in the waiting B itself, say why (the kernel still
/// holds A's holder lock); `recover`, even with `--writers-fenced --yes`, moves nothing while
/// the kernel sees the old tree (the how-to's warning, which only another node's record may
/// need); once the old processes are gone (`podman kill A`), B gets in by itself, by the
/// kernel's proof — one writer at every moment.
#[test]
fn stuck_session_howto_wedged_writer_the_toolbox_shows_why_and_the_next_gets_in_once_it_is_gone() {
    let test = "wedged";
    let Some(images) =
        images("stuck_session_howto_wedged_writer_the_toolbox_shows_why_and_the_next_gets_in_once_it_is_gone")
    else {
        return;
    };
    let case = Case::new(test, images);
    let s = case.session.clone();
    let watch = Watch::start(&case.data, &s);
    let a = case.start("a", &[], &[]);
    case.until_lines("a", 10);
    let toolbox = case.start_toolbox();
    let b = case.start("b", &["--wait", "60"], &[]);
    case.until(&format!("{b} waits for the session"), || case.logs(&b).contains("event=waiting"));

    // Wedged: every process of A frozen, nothing exits, no descriptor closes.
    case.podman(&["pause", &a]);
    let frozen = case.transcript().len();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(case.transcript().len(), frozen, "A's writer wrote while paused\n{}", case.report());
    assert!(case.running(&b), "B's run --wait waits on, it does not fail\n{}", case.report());
    assert!(!case.logs(&b).contains("event=writer_started"), "B started while A's tree lived\n{}", case.report());

    // A new Pod whose `--wait` runs out meanwhile exits 3 (the kubelet restarts it): the
    // conflict names the held holder lock, and its hint says to wait — never `recover`.
    let c = case.start("c", &["--wait", "2"], &[]);
    case.until(&format!("{c} gives up"), || !case.running(&c));
    let c_log = case.logs(&c);
    eprintln!("--- podman logs {c} (run --wait 2)\n{c_log}");
    assert_eq!(case.exit_code(&c), 3, "{}", case.report());
    assert!(c_log.contains("session_writer_conflict") && c_log.contains("never recover"), "{c_log}");
    assert!(!c_log.contains("--writers-fenced"), "{c_log}");

    // The how-to's status, from the toolbox (step 1) and from the waiting Pod itself.
    for (into, what) in [(&toolbox, "the toolbox"), (&b, "the waiting writer")] {
        let o = case.exec(into, &["writerctl", "status", "--session", &s]);
        let out = text(&o);
        eprintln!("--- podman exec {what} writerctl status --session {s}\n{out}");
        assert!(o.status.success(), "status in {what}: {out}\n{}", case.report());
        assert!(out.contains("holder_lock_held") && out.contains(&a), "status in {what} names A and why: {out}");
    }
    let o = case.exec(&toolbox, &["writerctl", "status", "--session", &s, "--json"]);
    let st: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!((st["state"].as_str(), st["owner"]["hostname"].as_str()), (Some("active"), Some(a.as_str())), "{st}");
    assert_eq!(st["liveness"]["code"], "holder_lock_held", "{st}");
    let toolbox_log = case.logs(&toolbox);
    assert!(toolbox_log.contains(&a), "the toolbox's status --watch shows A: {toolbox_log}");

    // Step 3 by mistake: the plan, then `--writers-fenced --yes`. The kernel sees A's tree,
    // so nothing is moved, whatever the flag states.
    let lock_dir = case.data.join("tmp/session-writer-locks");
    let names = || {
        let mut v: Vec<String> =
            std::fs::read_dir(&lock_dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        v.sort();
        v
    };
    let before = names();
    let plan = case.exec(&toolbox, &["writerctl", "recover", "--session", &s]);
    eprintln!("--- podman exec toolbox writerctl recover --session {s}\n{}", text(&plan));
    assert!(plan.status.success() && text(&plan).contains("blocked: the holder lock"), "{}", text(&plan));
    let forced = case.exec(&toolbox, &["writerctl", "recover", "--session", &s, "--writers-fenced", "--yes"]);
    eprintln!("--- podman exec toolbox writerctl recover --session {s} --writers-fenced --yes\n{}", text(&forced));
    assert_eq!(forced.status.code(), Some(3), "recover moved or claimed to move a live tree's lock: {}", text(&forced));
    assert!(text(&forced).contains("still held"), "{}", text(&forced));
    // Nothing moved aside (the recovered-files directory would appear beside the locks).
    assert_eq!(names(), before, "recover changed the lock directory while A's tree lives");
    let st: Value =
        serde_json::from_slice(&case.exec(&toolbox, &["writerctl", "status", "--session", &s, "--json"]).stdout)
            .unwrap();
    assert_eq!((st["state"].as_str(), st["owner"]["hostname"].as_str()), (Some("active"), Some(a.as_str())), "{st}");
    assert!(!case.logs(&b).contains("event=writer_started"), "B started after recover\n{}", case.report());

    // "It gets in by itself once the old processes are gone."
    case.podman(&["kill", "--signal", "KILL", &a]);
    case.until(&format!("{a} is gone"), || !case.running(&a));
    case.until_lines("b", 10);
    let blocks = case.blocks();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    assert_eq!((blocks[1].writer.as_str(), blocks[1].epoch), (b.as_str(), blocks[0].epoch + 1), "{blocks:?}");
    assert!(blocks[1].recovered && !blocks[0].drained, "B got in by the kernel's proof: {blocks:?}");
    assert!(case.logs(&b).contains("event=recovered"), "{}", case.report());
    let o = case.exec(&toolbox, &["writerctl", "status", "--session", &s, "--json"]);
    let st: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!((st["state"].as_str(), st["owner"]["hostname"].as_str()), (Some("active"), Some(b.as_str())), "{st}");
    case.until("the toolbox's status --watch shows B", || case.logs(&toolbox).contains(&b));
    let o = case.exec(&toolbox, &["writerctl", "history", "--session", &s, "--limit", "3"]);
    eprintln!("--- podman exec toolbox writerctl history --session {s} --limit 3\n{}", text(&o));
    assert!(o.status.success(), "{}", text(&o));
    watch.finish(2);
    case.assert_pid_namespace(&a, &blocks);
    case.assert_pid_namespace(&b, &blocks);
}

#[test]
fn the_transcript_check_catches_two_writers() {
    // The check the cases rely on must fail on an interleaving, an epoch that does not rise,
    // a line after a drain and a gap; it passes on a clean handoff (and ignores a line still
    // being appended).
    let l = |w: &str, pid: u32, epoch: u64, seq: u64, tail: &str| {
        format!("writer={w} pid={pid} epoch={epoch} pidns=own recovered=0 seq={seq}{tail}\n")
    };
    let ok = [l("a", 3, 1, 0, ""), l("a", 3, 1, 1, " drained"), l("b", 3, 2, 0, ""), "writer=b pid".into()].concat();
    assert_eq!(one_writer_at_a_time(&ok).map(|b| b.len()), Ok(2));
    let bad = [
        ([l("a", 3, 1, 0, ""), l("b", 3, 2, 0, ""), l("a", 3, 1, 1, "")].concat(), "two writers interleaved"),
        ([l("a", 3, 1, 0, ""), l("b", 4, 1, 0, "")].concat(), "after epoch 1"),
        ([l("a", 3, 1, 0, " drained"), l("a", 3, 1, 1, "")].concat(), "after its drained line"),
        ([l("a", 3, 1, 0, ""), l("a", 3, 1, 2, "")].concat(), "a gap"),
        (l("b", 3, 2, 5, ""), "begins in the middle"),
    ];
    for (transcript, why) in bad {
        let e = one_writer_at_a_time(&transcript).map(|b| b.len()).unwrap_err();
        assert!(e.contains(why), "{transcript}: {e}");
    }
}
