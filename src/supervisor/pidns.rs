//! A pid namespace of its own for the writer, so that the death of `run` kills the whole
//! writer tree (issue 27 item 2).
//!
//! # Why
//!
//! `PR_SET_PDEATHSIG` alone does not hold a tree together: the kernel clears it when a
//! process execs a setuid or file-capability binary (its credentials change), it is not
//! inherited across `fork`, and a process that double-forks or calls `setsid` escapes the
//! writer's process group. A SIGKILLed supervisor then leaves writers running under a lock
//! whose holder is gone. What no process can escape is its pid namespace: when a namespace's
//! PID 1 exits, the kernel SIGKILLs every process in it — setuid, file-capability, detached
//! or not — and its exit completes only once all of them are reaped.
//!
//! # Process tree
//!
//! ```text
//! run (supervisor, subreaper)
//!  └─ launcher  `__exec-writer`           pid ns of run; PDEATHSIG=SIGKILL (run dies → it dies)
//!      └─ init  `__exec-writer --init`    PID 1 of the new pid ns; PDEATHSIG=SIGKILL
//!          └─ writer (own process group)  everything it starts stays in the namespace
//! ```
//!
//! The supervisor SIGKILLed → the launcher gets SIGKILL (PDEATHSIG; it never execs, so the
//! kernel never clears it) → init gets SIGKILL (same) → the kernel kills the namespace.
//! Each PDEATHSIG has a race (the parent may die before the `prctl`), closed by checking the
//! parent *after* the `prctl`: the launcher compares `getppid()` with the supervisor's pid;
//! init cannot (`getppid()` is 0 for a namespace's PID 1), so it checks that its end of a
//! socket pair with the launcher is not at end-of-file ([`parent_alive`]).
//!
//! # Why a two-level launcher and not a `pre_exec` hook
//!
//! `unshare(CLONE_NEWUSER)` fails with `EINVAL` in a multithreaded process, and the
//! supervisor has threads (signals, control socket, reaper). The launcher is a freshly
//! exec'd, single-threaded process: it can unshare with safe calls, and `unshare(CLONE_NEWPID)`
//! only moves its *next child* into the namespace, so that child — init — is a second level.
//! A `pre_exec` hook would need `unsafe` and async-signal-safe raw syscalls for the same
//! effect, and would still need the second level for PID 1.
//!
//! # Which namespace
//!
//! [`enter`] tries `unshare(CLONE_NEWPID)` (root, or `CAP_SYS_ADMIN`), then
//! `unshare(CLONE_NEWUSER|CLONE_NEWPID)` with our own uid and gid mapped to themselves
//! (`setgroups` denied, as an unprivileged user must). Inside a user namespace the writer
//! keeps its uid, but a setuid binary whose owner is not mapped runs without its privilege,
//! and root loses capabilities over files owned by unmapped users. `--pid-namespace auto`
//! falls back to the shared namespace when the kernel refuses (`EPERM` without privilege or
//! under seccomp, `EINVAL`, `ENOSPC` at the namespace limit) and says so; `require` refuses
//! to start the writer; `off` never tries.
//!
//! # Guarantees by setup
//!
//! | setup                                  | `run` SIGKILLed: what dies                                         |
//! |----------------------------------------|--------------------------------------------------------------------|
//! | own pid namespace (root: CLONE_NEWPID) | every process the writer started, setuid/fcaps/setsid/double fork  |
//! | own pid + user namespace (not root)    | the same; setuid bits of unmapped owners are not honoured          |
//! | shared namespace (fallback, `off`)     | the writer itself only (PDEATHSIG), unless it exec'd setuid/fcaps; |
//! |                                        | what survives still holds the inherited holder-lock descriptor, so |
//! |                                        | `status`/`acquire` see the session as alive                        |
//! | shared namespace, descriptor closed    | nothing proves the survivors gone: a writer that closes inherited  |
//! |                                        | descriptors and escapes the tree is not covered                    |
//!
//! Draining works as in the shared namespace: init sends the writer's wait status up (to
//! the launcher, which writes it to the supervisor on the report pipe) the moment the writer
//! exits, and stays until every other process of the namespace has exited, so processes the
//! writer left behind get SIGTERM and the rest of `--grace` from the supervisor's drain (see
//! [`super::descendants`]), then SIGKILL — and SIGKILL to init kills them all at once.
//!
//! What voids it: a process started through a daemon outside the tree (systemd-run, a
//! container runtime, a debugger attaching from outside) was never in the namespace.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};

use rustix::process::{Pid, Signal, WaitOptions};
use rustix::thread::UnshareFlags;

/// The environment variable that carries the mode into `run` and the outcome into the
/// writer (`own` or `shared`).
pub const ENV: &str = "WRITERCTL_PID_NAMESPACE";

/// `--pid-namespace`: what `run` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// An own namespace where the kernel allows it; the shared one otherwise, said in the log.
    Auto,
    /// An own namespace, or the writer is not started.
    Require,
    /// Never try (the writer shares `run`'s namespace).
    Off,
}

impl Mode {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Require => "require",
            Mode::Off => "off",
        }
    }

    /// Parses a flag value.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "auto" => Some(Mode::Auto),
            "require" => Some(Mode::Require),
            "off" => Some(Mode::Off),
            _ => None,
        }
    }
}

/// What the launcher did, as it reports it to the supervisor (one line on a pipe).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// The writer runs under its own init in its own pid namespace (`user`: inside a user
    /// namespace too).
    Own {
        /// A user namespace was needed.
        user: bool,
    },
    /// The writer shares `run`'s pid namespace, and why.
    Shared(String),
    /// `require` could not be met: the writer was not started, and why.
    Refused(String),
}

impl Report {
    /// The wire form: one line.
    pub fn encode(&self) -> String {
        let one_line = |s: &str| s.replace('\n', " ");
        match self {
            Report::Own { user: false } => "own\n".into(),
            Report::Own { user: true } => "own user\n".into(),
            Report::Shared(why) => format!("shared {}\n", one_line(why)),
            Report::Refused(why) => format!("refused {}\n", one_line(why)),
        }
    }

    /// Parses [`Report::encode`]'s output; `None` for anything else (a launcher that died
    /// before reporting sends nothing).
    pub fn decode(s: &str) -> Option<Report> {
        let line = s.strip_suffix('\n')?;
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match (word, rest) {
            ("own", "") => Some(Report::Own { user: false }),
            ("own", "user") => Some(Report::Own { user: true }),
            ("shared", why) => Some(Report::Shared(why.into())),
            ("refused", why) => Some(Report::Refused(why.into())),
            _ => None,
        }
    }

    /// The writer's exit, the launcher's second line in an own namespace: `exit <raw wait status>`.
    pub fn encode_exit(raw: i32) -> String {
        format!("exit {raw}\n")
    }

    /// Parses [`Report::encode_exit`]'s line.
    pub fn decode_exit(line: &str) -> Option<i32> {
        line.strip_suffix('\n')?.strip_prefix("exit ")?.parse().ok()
    }

    /// `own` or `shared`, for the writer's environment and the run's log/JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Report::Own { .. } => "own",
            Report::Shared(_) | Report::Refused(_) => "shared",
        }
    }
}

/// What holds instead of the namespace kill, for the log line of a fallback.
pub const SHARED_GUARANTEE: &str = "shared pid namespace: if run dies, only the writer it started is killed (PR_SET_PDEATHSIG, which a setuid or file-capability exec clears); processes that outlive run keep the inherited holder lock held, so status and acquire treat the session as alive";

/// The decision: `tried` is what [`enter`] got (`Ok(user namespace used)` or why not).
/// Only `require` turns a refusal into "do not start the writer".
pub fn decide(mode: Mode, tried: impl FnOnce() -> Result<bool, String>) -> Report {
    match mode {
        Mode::Off => Report::Shared("--pid-namespace off".into()),
        Mode::Auto | Mode::Require => match tried() {
            Ok(user) => Report::Own { user },
            Err(why) if mode == Mode::Auto => Report::Shared(why),
            Err(why) => Report::Refused(why),
        },
    }
}

/// `unshare(2)` through rustix's safe (deprecated) entry point: rustix deprecated it because
/// `CLONE_FILES` can invalidate descriptors other threads hold; we pass only `NEWPID` and
/// `NEWUSER`, and the launcher is single-threaded.
#[allow(deprecated)]
fn unshare(flags: UnshareFlags) -> io::Result<()> {
    rustix::thread::unshare(flags).map_err(io::Error::from)
}

/// Makes this (single-threaded) process's next child the PID 1 of a new pid namespace:
/// `CLONE_NEWPID` if we may, else a user namespace mapping our own ids to themselves plus
/// `CLONE_NEWPID`. `Ok(true)` when the user namespace was needed; `Err` says what each
/// attempt got. Once a user namespace exists, a failure to write its maps cannot be undone
/// and is reported as a refusal by the caller whatever the mode.
pub fn enter() -> Result<bool, EnterError> {
    let plain = match unshare(UnshareFlags::NEWPID) {
        Ok(()) => return Ok(false),
        Err(e) => e,
    };
    let (uid, gid) = (rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw());
    match unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWPID) {
        Ok(()) => {
            write_id_maps(uid, gid).map_err(|e| EnterError::Broken(format!("user namespace id maps: {e}")))?;
            Ok(true)
        }
        Err(user) => Err(EnterError::Refused(format!(
            "unshare(CLONE_NEWPID): {plain}; unshare(CLONE_NEWUSER|CLONE_NEWPID): {user}"
        ))),
    }
}

/// Why [`enter`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnterError {
    /// The kernel refused; nothing changed (a fallback is possible).
    Refused(String),
    /// A user namespace was created but could not be set up: this process cannot go on.
    Broken(String),
}

/// The maps an unprivileged user may write for its own new user namespace: its effective
/// uid and gid to themselves (so files, sockets and `/proc` keep showing the same owner),
/// after denying `setgroups` (required before an unprivileged `gid_map`).
fn write_id_maps(uid: u32, gid: u32) -> io::Result<()> {
    std::fs::write("/proc/self/setgroups", "deny")?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))
}

/// True while the other end of `sock` is open: a non-blocking read gets `WouldBlock` from a
/// live peer that has sent nothing, and end-of-file once every copy of its end is closed —
/// which is how init learns, after its `prctl`, that the launcher had already died.
pub fn parent_alive(sock: &UnixStream) -> io::Result<bool> {
    sock.set_nonblocking(true)?;
    let mut b = [0u8; 1];
    let alive = match (&*sock).read(&mut b) {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => true,
        Err(e) => return Err(e),
    };
    sock.set_nonblocking(false)?;
    Ok(alive)
}

/// The launcher's side once the namespace is entered: start init (this binary, `--init`)
/// as PID 1 of the new namespace with one end of a socket pair, wait for the writer's wait
/// status on it and pass it on to the supervisor (`report`, as [`Report::encode_exit`]),
/// then wait for init — which stays until the namespace is empty — and return the writer's
/// status (or init's own if init died without sending one).
///
/// The launcher ignores the stop signals the supervisor sends to its process group: init
/// forwards them to the writer, and the launcher must outlive the writer (its death would
/// kill the namespace mid-drain).
pub fn launch(init_args: &[std::ffi::OsString], mut report: Option<std::fs::File>) -> io::Result<ExitStatus> {
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT, signal_hook::consts::SIGHUP] {
        // A handler, not SIG_IGN: an ignored disposition would be inherited across exec by
        // init and the writer, which must see SIGTERM.
        signal_hook::flag::register(sig, std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)))?;
    }
    let (mut ours, theirs) = UnixStream::pair()?;
    // Init inherits its end (only it: we are single-threaded, nothing else is spawned).
    rustix::io::fcntl_setfd(&theirs, rustix::io::FdFlags::empty())?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&theirs);
    let mut init = Command::new("/proc/self/exe")
        .arg("__exec-writer")
        .arg("--init")
        .arg("--status-fd")
        .arg(fd.to_string())
        .arg("--")
        .args(init_args)
        .spawn()?;
    drop(theirs);
    let mut raw = [0u8; 4];
    let got = ours.read_exact(&mut raw).is_ok();
    if got && let Some(r) = report.as_mut() {
        // A supervisor that is gone cannot be told; we are about to be killed anyway.
        let _ = r.write_all(Report::encode_exit(i32::from_le_bytes(raw)).as_bytes());
    }
    drop(report);
    let own = init.wait()?;
    Ok(if got { ExitStatus::from_raw(i32::from_le_bytes(raw)) } else { own })
}

/// Ends this process the way `status` ended the writer: the same exit code, or death by the
/// same signal (the supervisor's exit rule and log tell a crash from a clean exit).
pub fn exit_like(status: ExitStatus) -> ! {
    if let Some(sig) = status.signal() {
        let _ = signal_hook::low_level::emulate_default_handler(sig);
        std::process::exit(128 + sig);
    }
    std::process::exit(status.code().unwrap_or(1))
}

/// PID 1 of the writer's namespace: start the writer in its own process group, forward
/// SIGTERM/SIGINT/SIGHUP (then SIGCONT) to that group, reap every orphan; when the writer
/// exits, send its wait status to the launcher at once, and exit once no process is left in
/// the namespace (the supervisor's drain stops the rest; if init is killed instead, the
/// kernel kills whatever is left).
pub fn run_init(mut launcher: UnixStream, command: &[std::ffi::OsString]) -> io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
    if !parent_alive(&launcher)? {
        return Err(io::Error::other("the launcher died before init started"));
    }
    // The writer must not inherit our end (it would keep the launcher's read open).
    rustix::io::fcntl_setfd(&launcher, rustix::io::FdFlags::CLOEXEC)?;
    use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};
    // Registered before the writer exists, so neither its exit nor an early stop is lost.
    let mut signals = signal_hook::iterator::Signals::new([SIGCHLD, SIGTERM, SIGINT, SIGHUP])?;
    let (program, rest) = command.split_first().ok_or_else(|| io::Error::other("no command"))?;
    let writer = match Command::new(program).args(rest).env(ENV, "own").process_group(0).spawn() {
        Ok(c) => c.id() as i32,
        Err(e) => {
            eprintln!("writerctl: cannot start the writer {}: {e}", program.to_string_lossy());
            launcher.write_all(&(127i32 << 8).to_le_bytes())?;
            return Ok(());
        }
    };
    let mut reported = false;
    loop {
        let (status, none_left) = reap(writer)?;
        if let Some(status) = status {
            launcher.write_all(&status.to_le_bytes())?;
            reported = true;
        }
        if reported && none_left {
            return Ok(());
        }
        for sig in signals.wait() {
            if sig != SIGCHLD {
                forward(writer, sig);
            }
        }
    }
}

/// Reaps every exited child (orphans are reparented to init): the writer's raw wait status
/// if it was among them, and whether no child at all is left (`ECHILD`: the namespace holds
/// nobody but init).
fn reap(writer: i32) -> io::Result<(Option<i32>, bool)> {
    let mut writer_status = None;
    loop {
        // `wait`, not `waitpid(None)`: rustix sends the latter as wait4(0), which waits only
        // for children in our own process group, and the writer has a group of its own.
        match rustix::process::wait(WaitOptions::NOHANG) {
            Ok(Some((pid, status))) if pid.as_raw_nonzero().get() == writer => writer_status = Some(status.as_raw()),
            Ok(Some(_)) => continue,
            Ok(None) => return Ok((writer_status, false)),
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::CHILD) => return Ok((writer_status, true)),
            Err(e) => return Err(e.into()),
        }
    }
}

/// A stop signal, then SIGCONT (a job-control-stopped writer would never run its handler),
/// to the writer's process group.
fn forward(writer: i32, sig: i32) {
    let Some(pgid) = Pid::from_raw(writer) else { return };
    if let Some(s) = Signal::from_named_raw(sig) {
        let _ = rustix::process::kill_process_group(pgid, s);
    }
    let _ = rustix::process::kill_process_group(pgid, Signal::CONT);
}

/// Replaces this process with the writer in the shared namespace (`WRITERCTL_PID_NAMESPACE=shared`).
pub fn exec_shared(command: &[std::ffi::OsString]) -> io::Error {
    let Some((program, rest)) = command.split_first() else { return io::Error::other("no command") };
    Command::new(program).args(rest).env(ENV, "shared").exec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip_on_one_line() {
        for r in [
            Report::Own { user: false },
            Report::Own { user: true },
            Report::Shared("unshare(CLONE_NEWPID): EPERM".into()),
            Report::Refused("no\nnamespaces".into()),
        ] {
            let line = r.encode();
            assert_eq!(line.matches('\n').count(), 1);
            let back = Report::decode(&line).unwrap();
            assert_eq!(back.encode(), line);
        }
        assert_eq!(Report::decode(""), None);
        assert_eq!(Report::decode("own"), None, "a cut-off report is no report");
        assert_eq!(Report::decode("ours\n"), None);
        assert_eq!(Report::decode_exit(&Report::encode_exit(-7)), Some(-7));
        assert_eq!(Report::decode_exit("exit 3"), None, "a cut-off line is no status");
    }

    #[test]
    fn only_require_refuses_and_off_never_tries() {
        let refused = || Err("unshare(CLONE_NEWPID): EPERM".to_string());
        assert!(matches!(decide(Mode::Require, refused), Report::Refused(w) if w.contains("EPERM")));
        assert!(matches!(decide(Mode::Auto, refused), Report::Shared(w) if w.contains("EPERM")));
        assert_eq!(decide(Mode::Auto, || Ok(true)), Report::Own { user: true });
        assert_eq!(decide(Mode::Require, || Ok(false)), Report::Own { user: false });
        let never = || -> Result<bool, String> { panic!("off must not try") };
        assert!(matches!(decide(Mode::Off, never), Report::Shared(_)));
        assert_eq!(decide(Mode::Off, never).name(), "shared");
    }

    #[test]
    fn modes_parse_from_their_flag_values() {
        for m in [Mode::Auto, Mode::Require, Mode::Off] {
            assert_eq!(Mode::parse(m.as_str()), Some(m));
        }
        assert_eq!(Mode::parse("own"), None);
    }

    #[test]
    fn a_closed_peer_reads_as_dead_and_an_open_one_as_alive() {
        let (a, b) = UnixStream::pair().unwrap();
        assert!(parent_alive(&a).unwrap());
        drop(b);
        assert!(!parent_alive(&a).unwrap());
    }
}
