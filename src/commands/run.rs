//! `writerctl run`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use writerctl::config::Settings;
use writerctl::lockfile::acquire::TranscriptRef;
use writerctl::lockfile::acquire::open_lock_dir;
use writerctl::lockfile::history::{HistoryEvent, Reason};
use writerctl::lockfile::record::LockRecord;
use writerctl::lockfile::sys::Dir;
use writerctl::lockfile::{DirMode, open_site};
use writerctl::supervisor::control::{check_bindable, default_socket};
use writerctl::supervisor::pidns;
use writerctl::supervisor::{Event, Handoff, RunConfig, StopCause, check_command, run};

use super::ExitStatus;
use super::args::SessionArgs;
use super::output::{Output, hash_progress, log_event};
use super::session::{resolve, transcript_key};

/// Supervise a writer so that every stop (SIGTERM, preStop) hands its session over.
///
/// The Kubernetes entrypoint: takes the session (certified takeover of a seal, or managed
/// acquisition; never reclaims a stale owner), starts CMD with WRITERCTL_RUNTIME_DIR,
/// WRITERCTL_SESSION, WRITERCTL_LOCK, WRITERCTL_TRANSCRIPT, WRITERCTL_OWNER_TOKEN and
/// WRITERCTL_EPOCH in its environment, and on SIGTERM, SIGINT or SIGHUP — or a preStop `writerctl
/// seal` — forwards the stop to CMD's process group and waits up to --grace for it to exit. Before
/// anything is handed off, every process CMD left behind (in its group or escaped from it: the
/// supervisor is their subreaper) gets SIGTERM and the rest of --grace, then SIGKILL; the lock is
/// kept unless none is provably left. Then the exit rule below decides. Where the kernel allows it,
/// CMD runs in a pid namespace of its own (--pid-namespace), so that if run itself dies every
/// process CMD started dies too. Before a seal, run proves that no open file description outside
/// can still write the transcript (a momentary read lease; recorded in the seal as
/// writerctl_exclusive). writerctl exits 0 only when the handoff happened (CMD exited 0); any other
/// exit is writerctl's own documented code, and CMD's status is in the message (and in --json's
/// child_exit_code on success).
#[derive(Debug, Args)]
#[command(mut_arg("session", super::args::session_from_env))]
#[command(
    after_help = "Exit rule (what CMD's exit allows):\n  stop requested + CMD exits 0      seal (gate on) or release (gate off); exit 0\n  CMD exits 0 on its own            release (a normal close, never a seal); exit 0\n  CMD exits non-zero / dies of any signal (incl. an unhandled SIGTERM)\n                                    keep the active lock; exit 1, writer_crashed\n  CMD still running after --grace   killed; keep the active lock; exit 1, drain_timeout\n  a process CMD left survives SIGKILL, or cannot be proven gone\n                                    keep the active lock, stay (killing again) until\n                                    none is left; exit 1, drain_timeout\n  the lock lost, moved, or unverifiable past --max-unverified\n                                    stop CMD; nothing handed off; exit 3, session_not_owner\n  a descriptor of the transcript open for writing outside CMD's tree\n                                    no seal; keep the active lock; exit 75"
)]
pub struct RunArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    /// Seconds the writer gets to exit after the stop signal before it is killed.
    #[arg(long, value_name = "SECONDS", default_value_t = 20)]
    pub grace: u64,

    /// Seconds to wait at start for a live owner to seal or release (or a transition to
    /// finish) before giving up with session_writer_conflict.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub wait: u64,

    /// Seconds between checks of the lock while the writer runs and while it drains. If the
    /// lock no longer holds this supervisor's exact record (a `writerctl recover` elsewhere,
    /// an operator moved or replaced it), or the lock directory's path names another
    /// directory than the one held (moved or replaced), the writer gets SIGTERM, is killed
    /// after --grace, nothing is sealed or released, and run exits 3 (session_not_owner).
    /// Each check is one stat and one small read.
    #[arg(long, value_name = "SECONDS", default_value = "2", value_parser = super::parse_seconds_positive)]
    pub check_interval: Duration,

    /// Seconds the lock may stay unverifiable (every check failing, or one that does not
    /// answer at all: a network or FUSE volume gone away) before the writer is stopped as if
    /// the lock were lost, measured by a clock that never waits on the disk (event=lock_lost
    /// with the reason; the lock is kept as it is; exit 3, session_not_owner).
    #[arg(long, value_name = "SECONDS", env = "WRITERCTL_MAX_UNVERIFIED", default_value = "30",
          value_parser = super::parse_seconds_positive)]
    pub max_unverified: Duration,

    /// The local control socket preStop `writerctl seal` talks to [default: derived from the
    /// runtime directory and session, under $XDG_RUNTIME_DIR/writerctl or /tmp/writerctl-UID].
    #[arg(long, value_name = "PATH")]
    pub control_socket: Option<PathBuf>,

    /// Put the writer in a pid namespace of its own, so that if run dies (even by SIGKILL)
    /// every process the writer started dies with it — setuid and file-capability binaries,
    /// double forks and setsid included. auto: where the kernel allows it (root: a new pid
    /// namespace; otherwise inside a user namespace mapping your own uid/gid), else the
    /// shared namespace, said in the log; require: refuse to start the writer without one
    /// (exit 2, invalid_argument); off: never. The writer sees WRITERCTL_PID_NAMESPACE=own
    /// or shared.
    #[arg(long, value_name = "MODE", env = "WRITERCTL_PID_NAMESPACE", default_value = "auto",
          value_parser = ["auto", "require", "off"])]
    pub pid_namespace: String,

    #[command(flatten)]
    pub kind: super::args::ProcessKindArgs,

    /// Recorded in the lock-file history with every step this run takes (acquire or
    /// takeover, seal or release, give back); a preStop `writerctl seal --reason` gives
    /// its seal its own.
    #[command(flatten)]
    pub reason: super::args::ReasonArgs,

    /// The writer command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

#[derive(Serialize)]
struct RunJson<'a> {
    session_id: &'a str,
    handoff: &'static str,
    sealed_at: Option<&'a str>,
    child_exit_code: Option<i32>,
    child_signal: Option<i32>,
    /// `own` or `shared`: the writer's pid namespace (absent when no writer was started).
    pid_namespace: Option<&'static str>,
    exit_code: u8,
}

fn log(session: &str, e: Event) {
    let s = ("session", session.to_owned());
    match e {
        Event::Waiting(err) => log_event("waiting", &[s, ("reason", err.to_string())]),
        Event::Acquired(lease) => match (&lease.took_over, &lease.recovered) {
            (Some(p), _) => super::acquire::log_takeover(session, p),
            (None, Some(r)) => super::acquire::log_recovered(session, r),
            (None, None) => log_event("acquired", &[s, ("pid", std::process::id().to_string())]),
        },
        Event::Listening(p) => log_event("listening", &[s, ("control_socket", p.display().to_string())]),
        Event::PidNamespace(r @ pidns::Report::Own { user }) => log_event(
            "pid_namespace",
            &[s, ("mode", r.name().into()), ("user_namespace", user.to_string())],
        ),
        Event::PidNamespace(r @ pidns::Report::Shared(why)) => log_event(
            "pid_namespace",
            &[s, ("mode", r.name().into()), ("reason", why.clone()), ("guarantee", pidns::SHARED_GUARANTEE.into())],
        ),
        Event::PidNamespace(pidns::Report::Refused(why)) => {
            log_event("pid_namespace", &[s, ("mode", "refused".into()), ("reason", why.clone())])
        }
        Event::ChildStarted(pid) => log_event("writer_started", &[s, ("writer_pid", pid.to_string())]),
        Event::Stopping(StopCause::Signal(sig)) => log_event("stopping", &[s, ("signal", sig.to_string())]),
        Event::Stopping(StopCause::PreStop) => log_event("stopping", &[s, ("cause", "prestop".into())]),
        Event::PreStopReason(r) => log_event("prestop_reason", &[s, ("reason", r.to_owned())]),
        Event::Killed => log_event("writer_killed", &[s]),
        Event::LockLost(e) => log_event("lock_lost", &[s, ("reason", e.to_string())]),
        Event::DescendantsStopped { count, killed } => {
            log_event("descendants_stopped", &[s, ("count", count.to_string()), ("killed", killed.to_string())])
        }
        Event::ChildExited(st) => log_event("writer_exited", &[s, ("status", format!("{st}"))]),
        Event::HandingOff(true) => log_event("sealing", &[s]),
        Event::HandingOff(false) => log_event("releasing", &[s]),
        Event::Sealed(out) => log_event(
            "seal",
            &[
                s,
                ("host", out.holder.hostname.clone()),
                ("pid", out.holder.pid.to_string()),
                ("sealed_at", out.sealed_at.clone()),
                ("exclusive", out.record.seal().and_then(|s| s.exclusive.clone()).unwrap_or_default()),
            ],
        ),
        Event::Released => log_event("released", &[s]),
        Event::GaveBack(_, done) => log_event("gave_back", &[s, ("outcome", done.describe().into())]),
        Event::Survivors(n) => log_event(
            "survivors",
            &[
                s,
                ("count", n.to_string()),
                ("reason", "killed processes of the writer's tree are still there (uninterruptible sleep?); the lock is kept and run stays until they are gone".into()),
            ],
        ),
    }
}

/// Records a step the supervisor reports in the lock-file history, once it has happened.
/// `held` keeps the acquired record for the release line (the supervisor reports a release
/// without it).
fn record_step(dir: &Dir, session: &str, e: &Event, reason: Option<&Reason>, held: &mut Option<LockRecord>) {
    let event = match e {
        Event::Acquired(lease) => {
            *held = Some(lease.record.clone());
            HistoryEvent::of_lease(session, lease, reason)
        }
        Event::Sealed(out) => HistoryEvent::of_seal(session, out, reason),
        Event::Released => match held.as_ref() {
            Some(record) => HistoryEvent::of_release(session, record, reason),
            None => return,
        },
        Event::GaveBack(lease, done) => HistoryEvent::of_give_back(session, lease, *done, reason),
        _ => return,
    };
    super::history::note(dir, &event);
}

/// Arguments of the hidden launcher `run` starts writers through.
#[derive(Debug, Args)]
pub struct ExecWriterArgs {
    /// The supervisor's pid: if it is already gone, do not start the writer at all.
    #[arg(long)]
    pub parent: Option<u32>,
    /// Whether to put the writer in a pid namespace of its own (see `run --pid-namespace`).
    #[arg(long, value_name = "MODE", default_value = "off", value_parser = ["auto", "require", "off"])]
    pub pid_namespace: String,
    /// A descriptor (inherited from the supervisor) to report the namespace outcome on.
    #[arg(long, value_name = "FD")]
    pub report_fd: Option<i32>,
    /// Run as the namespace's init (PID 1), started by the launcher.
    #[arg(long, requires = "status_fd")]
    pub init: bool,
    /// With --init: the socket (inherited from the launcher) to send the writer's status on.
    #[arg(long, value_name = "FD")]
    pub status_fd: Option<i32>,
    /// The writer command.
    #[arg(last = true, required = true)]
    pub command: Vec<OsString>,
}

/// Takes ownership of a descriptor number passed on our command line by our parent.
///
/// `unsafe` because nothing but our parent's word says the number is an open descriptor
/// nobody else in this process owns; it is, by construction: the supervisor (or launcher)
/// cleared `FD_CLOEXEC` on exactly this descriptor for this child, and this freshly exec'd
/// process opened nothing before parsing its arguments. A wrong number fails `fstat`, which
/// is checked before the descriptor is used.
fn take_fd(fd: i32) -> Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    anyhow::ensure!(fd > 2, "descriptor {fd} is not one a parent passed");
    // SAFETY: see above; the number is not stdin/stdout/stderr and is owned by nobody else here.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    rustix::fs::fstat(&owned)?;
    Ok(owned)
}

/// `writerctl __exec-writer`: the launcher `run` starts the writer through.
///
/// 1. With `--pid-namespace auto|require`, unshare a pid namespace (a user namespace too
///    when not privileged; see [`pidns`]).
/// 2. Ask the kernel to SIGKILL this process when its parent (the supervisor) dies, then
///    check the parent is still the supervisor (closing the race where it died first).
/// 3. Report the outcome to the supervisor on `--report-fd`.
/// 4. Own namespace: start init (`--init`, PID 1) and end exactly as the writer ended.
///    Shared: exec the writer in place (it keeps this pid, process group and the death
///    signal — until it execs a setuid or file-capability binary).
///
/// Why a launcher and not a `pre_exec` hook: the death signal must be set in the child
/// between fork and exec and `unshare(CLONE_NEWUSER)` needs a single-threaded process;
/// from the (multithreaded) supervisor both would need `unsafe` async-signal-safe code.
pub fn exec_writer(args: ExecWriterArgs) -> Result<()> {
    use std::io::Write;
    if args.init {
        let fd = args.status_fd.expect("clap: --init requires --status-fd");
        pidns::run_init(std::os::unix::net::UnixStream::from(take_fd(fd)?), &args.command)?;
        return Ok(());
    }
    let report_fd = args.report_fd.map(take_fd).transpose()?;
    // Ours alone: neither init nor the writer may inherit it (it would hold the pipe open).
    if let Some(fd) = &report_fd {
        rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC)?;
    }
    let mode = pidns::Mode::parse(&args.pid_namespace).expect("clap checks the value");
    let mut broken = None;
    let report = pidns::decide(mode, || match pidns::enter() {
        Ok(user) => Ok(user),
        Err(pidns::EnterError::Refused(why)) => Err(why),
        Err(pidns::EnterError::Broken(why)) => {
            broken = Some(why.clone());
            Err(why)
        }
    });
    // A half-made user namespace cannot be left: never run the writer in it.
    let report = match broken {
        Some(why) => pidns::Report::Refused(why),
        None => report,
    };
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
    if let Some(parent) = args.parent
        && rustix::process::getppid().map(|p| p.as_raw_nonzero().get() as u32) != Some(parent)
    {
        return Err(ExitStatus(1).into());
    }
    let mut report_file = report_fd.map(std::fs::File::from);
    if let Some(f) = report_file.as_mut() {
        f.write_all(report.encode().as_bytes())?;
    }
    match report {
        pidns::Report::Refused(why) => {
            eprintln!("writerctl: no pid namespace for the writer: {why}");
            Err(ExitStatus(1).into())
        }
        pidns::Report::Shared(_) => {
            drop(report_file);
            let err = pidns::exec_shared(&args.command);
            eprintln!("writerctl: cannot start the writer {}: {err}", args.command[0].to_string_lossy());
            Err(ExitStatus(127).into())
        }
        // The report pipe stays open: the writer's exit status goes up on it (see `launch`).
        pidns::Report::Own { .. } => pidns::exit_like(pidns::launch(&args.command, report_file)?),
    }
}

/// Runs `run`.
pub fn run_cmd(args: RunArgs, out: Output, settings: Settings) -> Result<()> {
    use std::os::unix::process::ExitStatusExt;
    let r = resolve(&args.session)?;
    let key = transcript_key(&args.session, &r.session_id)?;
    // Everything that can fail without touching the lock fails before it is taken.
    check_command(&args.command)?;
    let socket = args.control_socket.clone().unwrap_or_else(|| default_socket(&r.paths.lock_path()));
    // Issue 40: prove the socket can be bound (a read-only root filesystem, a name too
    // long), not only that its directory is there, before the lock is taken.
    check_bindable(&socket)?;
    let reason = args.reason.parse()?;
    let site = open_site(&r.runtime_dir, r.paths.clone(), &r.session_id, DirMode::Create)?;
    // Issue 38 item 7: say at start, not at the end, that a stop will only release.
    if !settings.session_writer_lease {
        log_event(
            "gate_off",
            &[
                ("session", r.session_id.clone()),
                ("warning", "experimental.session_writer_lease is off: a stop releases the lock instead of sealing it (no certified handoff), and a preStop `writerctl seal` fails with feature_disabled".into()),
                ("fix", "set WRITERCTL_SESSION_WRITER_LEASE=1 for this container, or `session_writer_lease = true` under [experimental] in the config file".into()),
            ],
        );
    }
    // The history is written through a descriptor of its own: the site moves into the
    // supervisor, which never records anything itself.
    let history_dir = open_lock_dir(&r.paths.dir)?;
    let session = r.session_id.clone();
    let cfg = RunConfig {
        site,
        transcript: TranscriptRef { runtime_dir: r.runtime_dir.clone(), key },
        gate: settings.session_writer_lease,
        grace: Duration::from_secs(args.grace),
        wait: Duration::from_secs(args.wait),
        check_interval: args.check_interval,
        max_unverified: args.max_unverified,
        control_socket: socket,
        command: args.command.clone(),
        process_kind: args.kind.process_kind.clone(),
        progress: Some(hash_progress(out)),
        launcher: std::env::current_exe().ok(),
        pid_namespace: pidns::Mode::parse(&args.pid_namespace).expect("clap checks the value"),
    };
    let mut held: Option<LockRecord> = None;
    let mut prestop: Option<Reason> = None;
    let outcome = run(cfg, &mut |e| {
        if let Event::PreStopReason(r) = e {
            // The client validated it; one that does not pass here is not recorded.
            prestop = Reason::parse(r).ok();
        }
        // A seal asked for by `writerctl seal --reason` is recorded with that reason.
        let reason = match e {
            Event::Sealed(_) => prestop.as_ref().or(reason.as_ref()),
            _ => reason.as_ref(),
        };
        record_step(&history_dir, &session, &e, reason, &mut held);
        log(&session, e)
    });
    if let Some(err) = outcome.error {
        return Err(err.into());
    }
    if out.json {
        let (handoff, sealed_at) = match &outcome.handoff {
            Handoff::Sealed { sealed_at, .. } => ("sealed", Some(sealed_at.as_str())),
            Handoff::Released => ("released", None),
            Handoff::Kept => ("kept", None),
            Handoff::None => ("none", None),
            Handoff::Lost => ("lost", None),
        };
        out.json(&RunJson {
            session_id: &session,
            handoff,
            sealed_at,
            child_exit_code: outcome.child.and_then(|c| c.code()),
            child_signal: outcome.child.and_then(|c| c.signal()),
            pid_namespace: outcome.pid_namespace.as_ref().map(|r| r.name()),
            exit_code: outcome.exit_code,
        })?;
    }
    if outcome.exit_code != 0 {
        return Err(ExitStatus(outcome.exit_code).into());
    }
    Ok(())
}
