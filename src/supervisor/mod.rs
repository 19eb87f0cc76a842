//! `writerctl run`: supervise a writer process so that every stop hands its session over.
//!
//! # Life of a supervisor
//!
//! ```text
//! start ─► acquire (managed: certified takeover of a seal, never a stale reclaim;
//!          --wait retries while a live owner or a transition holds the session)
//!       ─► spawn the writer in its own process group, with the lock coordinates in its env,
//!          under an init of its own pid namespace where the kernel allows it ([`pidns`])
//!       ─► wait for: the writer exiting │ SIGTERM/SIGINT/SIGHUP │ a preStop seal request │
//!          a lock check's answer (every --check-interval, running or draining: is the lock
//!          still ours? asked on a thread of its own (`checker`); this loop only reads its
//!          clock [`watch::Clock`]). No "held" for --max-unverified — checks failing, or one
//!          stuck on a hung lock directory — is a lost lock: SIGTERM, the rest of --grace,
//!          SIGKILL, descendants drained, the lock KEPT untouched ─► exit 3
//!       ─► stop admission: forward the signal (SIGTERM for preStop) to the writer's group
//!       ─► wait up to --grace for the writer to exit on its own
//!       ─► stop every descendant still alive (the group, and any that left it), prove none is left
//!          (survivors of SIGKILL are waited out, the lock kept: never exit mid-write)
//!       ─► the lock still ours? a check started after the drain must say "held" before
//!          the clock runs out (else: lost, kept untouched ─► exit 3)
//!       ─► before a seal: no open file description may still write the transcript
//!          ([`crate::lockfile::exclusive`]; refused → kept, exit 75)
//!       ─► by the exit rule (see [`after_exit`]):
//!            asked to stop + exit 0   → seal (gate on) or release (gate off)   ─► exit 0
//!            exit 0 on its own        → release (a normal close)               ─► exit 0
//!            non-zero, or any signal  → the active lock is KEPT (fail closed)  ─► writer_crashed
//!          killed at the deadline, a descendant that cannot be proven gone, or a failed seal:
//!          the active lock is KEPT (fail closed)
//! ```
//!
//! The handoff runs on the main thread; signals that arrive meanwhile wait in the queue, so
//! a second SIGTERM never interrupts a seal. Signals are caught from the very start, so one
//! that arrives during acquisition stops the run before the writer is started, with the
//! session handed off again.
//!
//! Nothing on the wait, stop and exit paths touches the lock directory: signal forwarding,
//! the grace kill, the descendant drain (`/proc` and `waitid`), the control socket (on local
//! disk) and the exit never wait on it, so a hung network or FUSE mount cannot hold them up.
//! The only exception is the handoff itself, reached only right after a check said "held";
//! a check stuck in the kernel is left behind, never joined.
//!
//! Nothing here prints: progress is reported through [`Event`]s.

mod checker;
pub mod control;
pub mod descendants;
pub mod error;
pub mod pidns;
pub mod seal_route;
pub mod watch;

use std::ffi::OsString;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::error::ErrorCode;
use crate::lockfile::acquire::{Certified, TranscriptRef};
use crate::lockfile::identity::{SystemProbe, holder};
use crate::lockfile::seal::{SealOutcome, seal_proven};
use crate::lockfile::sys::own_pid;
use crate::lockfile::transcript::ProofOptions;
use crate::lockfile::wait;
use crate::lockfile::{AcquireOptions, Lease, LockError, LockSite, ReclaimPolicy, release};

use crate::lockfile::give_back::GaveBack;
use control::{Reply, WireError};
use descendants::{DrainError, Drained};
pub use error::{RunError, WriterEnd};

/// How long a killed writer gets to be reaped before the supervisor gives up on it.
const REAP_AFTER_KILL: Duration = Duration::from_secs(5);

/// Everything a supervised run needs.
pub struct RunConfig {
    /// The session's lock site (directory held open).
    pub site: LockSite,
    /// The transcript the writer appends to.
    pub transcript: TranscriptRef,
    /// `experimental.session_writer_lease`: seal on stop and take over seals.
    pub gate: bool,
    /// How long the writer may take to stop after the stop signal.
    pub grace: Duration,
    /// How long to wait at start for a live owner or a transition to finish.
    pub wait: Duration,
    /// How often the lock is re-checked while the writer runs and drains (see [`watch`]).
    pub check_interval: Duration,
    /// How long the lock may stay unverifiable (I/O errors) before it counts as lost.
    pub max_unverified: Duration,
    /// The control socket to serve preStop seal requests on.
    pub control_socket: PathBuf,
    /// The writer command and its arguments.
    pub command: Vec<OsString>,
    /// `process_kind` for the lock record.
    pub process_kind: String,
    /// Progress of transcript hashing (the command draws it).
    pub progress: Option<Arc<dyn Fn(u64, u64) + Send + Sync>>,
    /// A launcher that execs the writer after arranging for it to be killed if the
    /// supervisor dies (`writerctl __exec-writer`); `None` starts the writer directly.
    pub launcher: Option<PathBuf>,
    /// `--pid-namespace`: whether the launcher puts the writer in a pid namespace of its
    /// own (see [`pidns`]).
    pub pid_namespace: pidns::Mode,
}

/// Why a stop began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    /// A signal (its number).
    Signal(i32),
    /// A preStop `writerctl seal` over the control socket.
    PreStop,
}

/// Progress of a run, for logging.
#[derive(Debug)]
pub enum Event<'a> {
    /// Acquisition must wait (live owner or transition in progress).
    Waiting(&'a LockError),
    /// The lock is ours.
    Acquired(&'a Lease),
    /// The control socket is listening.
    Listening(&'a std::path::Path),
    /// The writer started.
    ChildStarted(u32),
    /// Which pid namespace the writer got (and, when shared, why).
    PidNamespace(&'a pidns::Report),
    /// The preStop seal request that stops the writer gave this `--reason` (for the
    /// lock-file history; reported just before [`Event::Stopping`]).
    PreStopReason(&'a str),
    /// A stop began; the signal was forwarded to the writer's process group.
    Stopping(StopCause),
    /// The writer ignored the stop past the grace period and was killed.
    Killed,
    /// The writer exited.
    ChildExited(ExitStatus),
    /// The handoff is starting (`true`: seal, `false`: release).
    HandingOff(bool),
    /// The lock no longer names this supervisor (`--check-interval`): the writer is being
    /// stopped.
    LockLost(&'a LockError),
    /// Processes the writer left behind (in its group or escaped from it) were stopped
    /// before the handoff: how many got the stop signal, and whether any had to be killed.
    DescendantsStopped {
        /// Descendants signalled.
        count: usize,
        /// True when some ignored the stop past the grace period and were killed.
        killed: bool,
    },
    /// Processes of the writer's tree survived SIGKILL (uninterruptible sleep) or could not
    /// be enumerated: the supervisor stays, keeps the lock and kills again until none is
    /// left (how many it still sees).
    Survivors(usize),
    /// Sealed.
    Sealed(&'a SealOutcome),
    /// Released.
    Released,
    /// The writer never started, and the lease was given back
    /// ([`crate::lockfile::give_back`]).
    GaveBack(&'a Lease, GaveBack),
}

/// What happened to the lock in the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handoff {
    /// Sealed for the next writer.
    Sealed {
        /// `sealed_at`.
        sealed_at: String,
        /// The proof.
        transcript: crate::lockfile::record::TranscriptProof,
        /// `writerctl_exclusive` as recorded (see [`crate::lockfile::exclusive`]).
        exclusive: Option<String>,
    },
    /// Released (gate off, or nothing was written).
    Released,
    /// Kept active: the handoff was not safe (fail closed).
    Kept,
    /// Never acquired.
    None,
    /// Lost while the writer ran (see `--check-interval`): nothing was handed off.
    Lost,
}

/// How a run ended.
#[derive(Debug)]
pub struct RunOutcome {
    /// The process exit status to use.
    pub exit_code: u8,
    /// What happened to the lock.
    pub handoff: Handoff,
    /// The writer's exit, if it ran.
    pub child: Option<ExitStatus>,
    /// The failure, if any.
    pub error: Option<RunError>,
    /// Which pid namespace the writer got, if it was started.
    pub pid_namespace: Option<pidns::Report>,
}

enum Msg {
    Signal(i32),
    Child(ExitStatus),
    /// A preStop seal request, with its `--reason`.
    Control(UnixStream, Option<String>),
    /// A lock check answered (from [`checker`]): the moment it started, and what it found.
    Checked {
        started: Instant,
        check: watch::Check,
    },
}

/// What the writer's exit allows the supervisor to do with the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterExit {
    /// A requested stop answered by a clean exit: seal (gate on) or release (gate off).
    HandOff,
    /// A clean exit nobody asked for: a normal close, which releases (never seals).
    Release,
    /// Anything else: keep the active lock.
    Keep,
}

/// The exit rule (seed 001: "a managed flush or proof failure retains the active lock";
/// "normal per-session close still releases its lock instead of leaving a sealed record";
/// issue 21 item 2):
///
/// | stop requested (signal or preStop) | writer's exit                  | lock                        |
/// |------------------------------------|--------------------------------|-----------------------------|
/// | yes                                | status 0                       | sealed (gate on) / released |
/// | no                                 | status 0                       | released                    |
/// | either                             | non-zero, or died of a signal  | kept active                 |
///
/// Only a clean exit proves the writer drained what it accepted. Dying of the very stop
/// signal it was sent means it had no handler, so nothing drained: kept. A non-zero status —
/// a crash, a shell reporting an OOM kill as 137, a flush that failed — is kept too.
pub fn after_exit(status: ExitStatus, stop_requested: bool) -> AfterExit {
    match (status.code(), stop_requested) {
        (Some(0), true) => AfterExit::HandOff,
        (Some(0), false) => AfterExit::Release,
        _ => AfterExit::Keep,
    }
}

/// Runs the supervisor to completion.
pub fn run(cfg: RunConfig, log: &mut dyn FnMut(Event)) -> RunOutcome {
    let (tx, rx) = mpsc::channel::<Msg>();
    // Orphaned descendants of the writer become ours to reap (see `spawn_reaper`), and being
    // their subreaper is what proves none is left before a handoff (see `descendants`):
    // without it, refuse to run rather than seal a transcript a stray process may write.
    if let Err(e) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
        return failed(
            RunError::Spawn { command: "the supervisor (PR_SET_CHILD_SUBREAPER)".into(), source: e.into() },
            Handoff::None,
        );
    }
    // Catch stop signals before anything else, so none is lost or kills us mid-protocol.
    let mut signals = match Signals::new([SIGTERM, SIGINT, SIGHUP]) {
        Ok(s) => s,
        Err(e) => return failed(RunError::Spawn { command: "signal handlers".into(), source: e }, Handoff::None),
    };
    let handle = signals.handle();
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for sig in signals.forever() {
                if tx.send(Msg::Signal(sig)).is_err() {
                    break;
                }
            }
        });
    }
    let outcome = supervise(&cfg, &tx, &rx, log);
    handle.close();
    outcome
}

fn failed(error: RunError, handoff: Handoff) -> RunOutcome {
    RunOutcome { exit_code: error.code().exit_code(), handoff, child: None, error: Some(error), pid_namespace: None }
}

fn supervise(cfg: &RunConfig, tx: &Sender<Msg>, rx: &Receiver<Msg>, log: &mut dyn FnMut(Event)) -> RunOutcome {
    let lease = match acquire_waiting(cfg, rx, log) {
        Ok(l) => l,
        Err(e) => return failed(e, Handoff::None),
    };
    log(Event::Acquired(&lease));

    // A stop requested during acquisition: hand the session straight back.
    while let Ok(msg) = rx.try_recv() {
        if let Msg::Signal(sig) = msg {
            log(Event::Stopping(StopCause::Signal(sig)));
            return match hand_off(cfg, &lease, cfg.gate, log) {
                Ok(h) => RunOutcome { exit_code: 0, handoff: h, child: None, error: None, pid_namespace: None },
                Err(e) => failed(e, Handoff::Kept),
            };
        }
    }

    let bound = match control::bind(&cfg.control_socket) {
        Ok(b) => Arc::new(b),
        Err(e) => return give_back(cfg, &lease, e.into(), log),
    };
    log(Event::Listening(&cfg.control_socket));
    spawn_control_thread(bound.clone(), cfg.site.session_id.clone(), tx.clone());

    let Started { mut child, report, exits } = match spawn_writer(cfg, &lease) {
        Ok(c) => c,
        Err(e) => {
            bound.unbind();
            return give_back(cfg, &lease, e, log);
        }
    };
    if let Some(report) = &report {
        log(Event::PidNamespace(report));
    }
    if let Some(pidns::Report::Refused(why)) = &report {
        // The launcher exits at once without starting the writer.
        let _ = child.wait();
        bound.unbind();
        return give_back(cfg, &lease, RunError::PidNamespaceRefused(why.clone()), log);
    }
    let pgid = child.id();
    // The writer runs under the lease: a reclaimed predecessor's holder file is residue now.
    crate::lockfile::acquire::settle(&cfg.site, &lease);
    log(Event::ChildStarted(pgid));
    // Never `Child::wait`: the reaper thread owns every wait, including orphans.
    drop(child);
    let delivered = Arc::new(AtomicBool::new(false));
    let exempt = descendants::Exempt(exits.is_some().then_some(pgid));
    if let Some(exits) = exits {
        spawn_exit_reader(exits, tx.clone(), delivered.clone());
    }
    spawn_reaper(pgid, tx.clone(), delivered);
    let mut outcome = wait_and_hand_off(cfg, &lease, Writer { pgid, exempt }, tx, rx, &bound, log);
    bound.unbind();
    outcome.pid_namespace = report;
    outcome
}

/// The writer never started: undo the acquisition exactly as a command whose owner token
/// could not be delivered does ([`crate::lockfile::give_back`]): a seal taken over is put
/// back byte for byte (never left open to anyone), a lock that replaced nothing is
/// released; then report the original failure.
fn give_back(cfg: &RunConfig, lease: &Lease, error: RunError, log: &mut dyn FnMut(Event)) -> RunOutcome {
    let done = crate::lockfile::give_back::give_back(&cfg.site, lease, Some(&cfg.transcript));
    if let Ok(done) = &done {
        log(Event::GaveBack(lease, *done));
    }
    let handoff = match done {
        Ok(GaveBack::Released) => Handoff::Released,
        // The crashed writer's record is back (issue 27): active, as the run found it.
        Ok(GaveBack::PredecessorRestored) => Handoff::Kept,
        Ok(GaveBack::SealRestored) => match lease.took_over.as_ref().and_then(|p| p.sealed.seal()) {
            Some(seal) => Handoff::Sealed {
                sealed_at: seal.sealed_at.clone(),
                transcript: seal.transcript.clone(),
                exclusive: seal.exclusive.clone(),
            },
            None => Handoff::Kept,
        },
        Err(_) => Handoff::Kept,
    };
    failed(error, handoff)
}

/// Managed acquisition (never reclaim; certified takeover with the gate), retrying for up
/// to `--wait` while the session is held live or mid-transition. A stop signal while
/// waiting ends the wait with nothing changed.
fn acquire_waiting(cfg: &RunConfig, rx: &Receiver<Msg>, log: &mut dyn FnMut(Event)) -> Result<Lease, RunError> {
    let opts = AcquireOptions {
        holder: holder(own_pid()),
        process_kind: cfg.process_kind.clone(),
        reclaim: ReclaimPolicy::Never,
        transcript: Some(cfg.transcript.clone()),
        certified: cfg.gate.then(|| Certified {
            proof: ProofOptions::default(),
            progress: cfg.progress.clone(),
            sealed_only: false,
        }),
        // Issue 27: the lease keeps a holder lock, and the writer inherits it (`spawn_writer`).
        holder_lock: true,
    };
    let mut last_reason = String::new();
    wait::acquire_waiting(&cfg.site, &opts, &SystemProbe, cfg.wait, &mut |pause, e| {
        if e.to_string() != last_reason {
            last_reason = e.to_string();
            log(Event::Waiting(e));
        }
        match rx.recv_timeout(pause) {
            Ok(Msg::Signal(sig)) => Err(RunError::Interrupted(sig)),
            _ => Ok(()),
        }
    })
}

/// Reaps every child of the supervisor: the writer (reported) and any orphaned descendants
/// reparented to us (we are a child subreaper, and often PID 1 in a container), so that none
/// lingers as a zombie and "the writer's process group is empty" can be observed.
fn spawn_reaper(writer: u32, tx: Sender<Msg>, delivered: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        loop {
            match rustix::process::wait(rustix::process::WaitOptions::empty()) {
                Ok(Some((pid, status))) => {
                    if pid.as_raw_nonzero().get() as u32 == writer && !delivered.swap(true, Ordering::SeqCst) {
                        let _ = tx.send(Msg::Child(ExitStatus::from_raw(status.as_raw())));
                    }
                }
                Ok(None) | Err(rustix::io::Errno::INTR) => {}
                // No children right now; orphans may still be reparented to us later.
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    });
}

/// Resolves the writer command the way `execvp` will, so a typo fails before the lock is
/// taken rather than after.
pub fn check_command(command: &[OsString]) -> Result<(), RunError> {
    let Some(program) = command.first().map(std::path::Path::new) else {
        return Err(RunError::Spawn { command: String::new(), source: std::io::Error::other("no command") });
    };
    let found = if program.components().count() > 1 {
        program.is_file()
    } else {
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file())).unwrap_or(false)
    };
    if found {
        Ok(())
    } else {
        Err(RunError::Spawn {
            command: program.to_string_lossy().into_owned(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        })
    }
}

/// The writer as started: the process the supervisor waits for (the launcher, or the writer
/// itself), the launcher's pid-namespace report, and — in an own namespace — the pipe on
/// which the launcher sends the writer's exit status.
struct Started {
    child: std::process::Child,
    report: Option<pidns::Report>,
    exits: Option<std::io::BufReader<std::io::PipeReader>>,
}

/// Starts the writer (through the launcher when there is one) and reads the launcher's
/// one-line pid-namespace report; `None` when there is no launcher, or it died before
/// reporting (its exit is then reported like the writer's).
fn spawn_writer(cfg: &RunConfig, lease: &Lease) -> Result<Started, RunError> {
    let (program, args) = cfg.command.split_first().expect("clap requires a command");
    let transcript = cfg.transcript.runtime_dir.join(cfg.transcript.key.as_str());
    // The writer may expect its transcript's directory to exist (qwen creates it, 0700, on
    // first append). Anything odd on the way (a symlink) is caught by the proof read later.
    if let Some(dir) = transcript.parent() {
        use std::os::unix::fs::DirBuilderExt;
        let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
    }
    let spawn_err = |source| RunError::Spawn { command: program.to_string_lossy().into_owned(), source };
    // The launcher's report channel: the write end is inherited by the launcher alone (no
    // other thread of the supervisor starts processes) and closed here right after the spawn.
    let report_pipe = match &cfg.launcher {
        Some(_) => {
            let (r, w) = std::io::pipe().map_err(spawn_err)?;
            rustix::io::fcntl_setfd(&w, rustix::io::FdFlags::empty()).map_err(|e| spawn_err(e.into()))?;
            Some((r, w))
        }
        None => None,
    };
    let mut cmd = match &cfg.launcher {
        // The launcher sets PR_SET_PDEATHSIG=SIGKILL and execs the writer in place: if the
        // supervisor is SIGKILLed, its writer dies with it instead of writing on under a lock
        // whose holder (the supervisor) is gone and which plain acquisition may reclaim.
        Some(l) => {
            let mut c = Command::new(l);
            c.arg("__exec-writer")
                .arg("--parent")
                .arg(own_pid().to_string())
                .arg("--pid-namespace")
                .arg(cfg.pid_namespace.as_str());
            if let Some((_, w)) = &report_pipe {
                c.arg("--report-fd").arg(std::os::fd::AsRawFd::as_raw_fd(w).to_string());
            }
            c.arg("--").arg(program).args(args);
            c
        }
        None => {
            let mut c = Command::new(program);
            c.args(args);
            c
        }
    };
    // Issue 27: the writer inherits a duplicate of the lease's holder-lock descriptor, so the
    // kernel keeps the lock while any process of its tree lives — one that escaped the
    // process group, or outlived a SIGKILLed supervisor — and `status` and `acquire` call the
    // lock alive instead of reclaiming it. Our copy is closed once the child has started.
    let inherited = match lease.holder_lock.as_ref().map(|h| h.inheritable_dup()).transpose() {
        Ok(fd) => fd,
        Err(source) => return Err(RunError::Spawn { command: "the holder lock (dup)".into(), source }),
    };
    if let Some(fd) = &inherited {
        use std::os::fd::AsRawFd;
        // Named for writers that close inherited descriptors: this one must stay open.
        cmd.env("WRITERCTL_HOLDER_LOCK_FD", fd.as_raw_fd().to_string());
    }
    // Issue 38 item 4: the transcript's own lock goes to the writer's tree too, so no other
    // session can take the transcript while any process of that tree lives.
    let transcript_lock = match lease.transcript_lock.as_ref().map(|t| t.inheritable_dup()).transpose() {
        Ok(fd) => fd.flatten(),
        Err(source) => return Err(RunError::Spawn { command: "the transcript lock (dup)".into(), source }),
    };
    if let Some(fd) = &transcript_lock {
        use std::os::fd::AsRawFd;
        cmd.env("WRITERCTL_TRANSCRIPT_LOCK_FD", fd.as_raw_fd().to_string());
    }
    cmd.env("WRITERCTL_RUNTIME_DIR", &cfg.transcript.runtime_dir)
        .env("WRITERCTL_SESSION", &cfg.site.session_id)
        .env("WRITERCTL_LOCK", cfg.site.lock_path())
        .env("WRITERCTL_TRANSCRIPT", transcript)
        .env("WRITERCTL_OWNER_TOKEN", lease.owner.expose())
        // Our record's epoch (replacements since the lock was last created; not a fencing
        // token across a release or recovery): a writer that stamps its output with it makes a
        // stale writer's lines recognizable downstream.
        .env("WRITERCTL_EPOCH", lease.record.owner.epoch.to_string())
        // After a reclaim under a pod proof rule the transcript is the crashed writer's, as
        // it left it: the writer is told, and how it ends, so it can repair a torn line.
        .env("WRITERCTL_RECOVERED", if lease.recovered.is_some() { "1" } else { "0" })
        .env("WRITERCTL_TRANSCRIPT_TAIL", lease.recovered.as_ref().map_or("clean", |r| r.tail.as_str()))
        .stdin(Stdio::inherit())
        // Its own process group: the supervisor forwards stop signals to the whole group,
        // and a terminal's Ctrl-C reaches the supervisor first.
        .process_group(0);
    if cfg.launcher.is_none() {
        cmd.env(pidns::ENV, "shared");
    }
    let child = cmd.spawn().map_err(spawn_err);
    drop(inherited);
    drop(transcript_lock);
    let child = child?;
    let (report, exits) = match report_pipe {
        Some((r, w)) => {
            drop(w);
            let mut r = std::io::BufReader::new(r);
            let mut line = String::new();
            let _ = std::io::BufRead::read_line(&mut r, &mut line);
            let report = pidns::Report::decode(&line);
            let own = matches!(report, Some(pidns::Report::Own { .. }));
            (report, own.then_some(r))
        }
        None => (Some(pidns::Report::Shared("started without the launcher".into())), None),
    };
    Ok(Started { child, report, exits })
}

/// In an own namespace the writer's exit comes from the launcher, on the report pipe, the
/// moment it happens — while init and the launcher stay until the namespace is empty, so
/// the drain can give what the writer left the same SIGTERM and grace as in the shared
/// namespace. Whichever comes first — this line, or the launcher's own exit seen by the
/// reaper (it was killed, or died before sending) — is *the* writer's exit; `delivered`
/// makes sure exactly one is.
fn spawn_exit_reader(mut exits: std::io::BufReader<std::io::PipeReader>, tx: Sender<Msg>, delivered: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut line = String::new();
        while std::io::BufRead::read_line(&mut exits, &mut line).is_ok_and(|n| n > 0) {
            if let Some(raw) = pidns::Report::decode_exit(&line)
                && !delivered.swap(true, Ordering::SeqCst)
            {
                let _ = tx.send(Msg::Child(ExitStatus::from_raw(raw)));
            }
            line.clear();
        }
    });
}

fn spawn_control_thread(bound: Arc<control::Bound>, session: String, tx: Sender<Msg>) {
    std::thread::spawn(move || {
        for stream in bound.listener.incoming() {
            let Ok(stream) = stream else { continue };
            if !control::peer_is_us(&stream) {
                continue;
            }
            match control::read_request(&stream) {
                Ok(req) if req.op == "seal" && req.session == session => {
                    if tx.send(Msg::Control(stream, req.reason)).is_err() {
                        break;
                    }
                }
                Ok(_) => {
                    let _ = control::write_reply(
                        &stream,
                        &error_reply(&WireError {
                            code: ErrorCode::InvalidArgument.as_str().into(),
                            message: "this supervisor serves another session or operation".into(),
                            hint: None,
                        }),
                    );
                }
                Err(_) => {}
            }
        }
    });
}

fn error_reply(e: &WireError) -> Reply {
    Reply { ok: false, state: None, sealed_at: None, transcript: None, exclusive: None, error: Some(e.clone()) }
}

fn wire(e: &RunError) -> WireError {
    WireError { code: e.code().as_str().into(), message: e.to_string(), hint: e.hint() }
}

fn signal_group(pgid: u32, sig: i32) {
    let (Some(pid), Some(sig)) =
        (rustix::process::Pid::from_raw(pgid as i32), rustix::process::Signal::from_named_raw(sig))
    else {
        return;
    };
    let _ = rustix::process::kill_process_group(pid, sig);
}

/// Forwards a stop signal, then SIGCONT: a writer stopped by job control (SIGTSTP/SIGTTIN)
/// would otherwise never run its handler and could not drain within the grace period.
fn forward_stop(pgid: u32, sig: i32) {
    signal_group(pgid, sig);
    signal_group(pgid, rustix::process::Signal::CONT.as_raw());
}

enum State {
    Running,
    Stopping {
        deadline: Instant,
    },
    /// PreStop finished the handoff; waiting for the signal that ends the pod.
    HandedOff {
        reply: Box<Reply>,
        handoff: Handoff,
        child: ExitStatus,
    },
}

/// The process group the supervisor signals, and what its drain must spare.
#[derive(Clone, Copy)]
struct Writer {
    pgid: u32,
    exempt: descendants::Exempt,
}

fn wait_and_hand_off(
    cfg: &RunConfig,
    lease: &Lease,
    writer: Writer,
    tx: &Sender<Msg>,
    rx: &Receiver<Msg>,
    bound: &control::Bound,
    log: &mut dyn FnMut(Event),
) -> RunOutcome {
    let pgid = writer.pgid;
    let lock_path = cfg.site.lock_path();
    let mut watchdog = checker::Watchdog::start(cfg, lease, tx);
    let mut state = State::Running;
    let mut forwarded: Option<i32> = None;
    let mut signalled = false;
    let mut waiting_clients: Vec<UnixStream> = Vec::new();
    loop {
        let now = Instant::now();
        // The watchdog runs while the writer runs and while it drains (lost mid-drain: nothing
        // may be sealed or released), from the clock alone: a check stuck in the kernel on a
        // hung lock directory counts against the lock without ever holding up this loop.
        let wake = match &state {
            State::HandedOff { .. } => None,
            State::Running | State::Stopping { .. } => {
                let stopping = match &state {
                    State::Stopping { deadline } => Some(*deadline),
                    _ => None,
                };
                if let Some(deadline) = stopping
                    && now >= deadline
                {
                    return drain_timeout(cfg, writer, rx, &mut waiting_clients, log);
                }
                if let Some(e) = watchdog.tick(now, &lock_path) {
                    bound.unbind();
                    let deadline = stopping.unwrap_or(now + cfg.grace);
                    return stop_after_loss(cfg, writer, rx, e, deadline, &mut waiting_clients, log);
                }
                let wake = watchdog.clock.next_wake();
                Some(stopping.map_or(wake, |d| d.min(wake)))
            }
        };
        let msg = match wake {
            Some(wake) => match rx.recv_timeout(wake.saturating_duration_since(now)) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return failed(RunError::DrainTimeout(cfg.grace), Handoff::Kept),
            },
            None => match rx.recv() {
                Ok(m) => m,
                Err(_) => return failed(RunError::DrainTimeout(cfg.grace), Handoff::Kept),
            },
        };
        match (msg, &mut state) {
            // Handed off: what the lock does now is the next owner's business.
            (Msg::Checked { .. }, State::HandedOff { .. }) => {}
            (Msg::Checked { started, check }, st) => {
                if let Some(e) = watchdog.clock.answered(started, check, Instant::now(), &lock_path) {
                    bound.unbind();
                    let deadline = match st {
                        State::Stopping { deadline } => *deadline,
                        _ => Instant::now() + cfg.grace,
                    };
                    return stop_after_loss(cfg, writer, rx, e, deadline, &mut waiting_clients, log);
                }
            }
            (Msg::Signal(sig), State::HandedOff { handoff, child, .. }) => {
                log(Event::Stopping(StopCause::Signal(sig)));
                return RunOutcome {
                    exit_code: 0,
                    handoff: handoff.clone(),
                    child: Some(*child),
                    error: None,
                    pid_namespace: None,
                };
            }
            (Msg::Control(stream, _), State::HandedOff { reply, .. }) => {
                let _ = control::write_reply(&stream, reply);
            }
            (Msg::Signal(sig), st) => {
                signalled = true;
                forward_stop(pgid, sig);
                if matches!(st, State::Running) {
                    forwarded = Some(sig);
                    log(Event::Stopping(StopCause::Signal(sig)));
                    *st = State::Stopping { deadline: Instant::now() + cfg.grace };
                }
            }
            (Msg::Control(stream, reason), st) => {
                waiting_clients.push(stream);
                if matches!(st, State::Running) {
                    forward_stop(pgid, SIGTERM);
                    forwarded = Some(SIGTERM);
                    if let Some(r) = &reason {
                        log(Event::PreStopReason(r));
                    }
                    log(Event::Stopping(StopCause::PreStop));
                    *st = State::Stopping { deadline: Instant::now() + cfg.grace };
                }
            }
            (Msg::Child(status), st) => {
                log(Event::ChildExited(status));
                bound.unbind();
                let rule = after_exit(status, forwarded.is_some());
                let deadline = match st {
                    State::Stopping { deadline } => *deadline,
                    _ => Instant::now() + cfg.grace,
                };
                // Nothing is handed off — nor left behind a lock whose holder is about to
                // exit — while a process of the writer's tree can still write.
                let drained = stop_descendants(deadline, writer.exempt, log);
                let end = WriterEnd { status, stop_requested: forwarded.is_some() };
                let refused = match (rule, drained) {
                    (AfterExit::Keep, _) => Some(RunError::WriterCrashed(end)),
                    (_, Err(e)) => Some(RunError::DescendantsLeft(e)),
                    _ => None,
                };
                if let Some(e) = refused {
                    if matches!(e, RunError::DescendantsLeft(_)) {
                        wait_out_survivors(writer, log);
                    }
                    reply_all(&mut waiting_clients, &error_reply(&wire(&e)));
                    return RunOutcome { child: Some(status), ..failed(e, Handoff::Kept) };
                }
                // The drain took time: the lock must still be ours before it is handed off — by a
                // check that started after the drain, waited for no longer than the clock allows
                // (a hung lock directory is a lock lost, never a seal or release that blocks).
                let verified = watchdog.verify_since(Instant::now(), rx, &lock_path, &mut |m| match m {
                    Msg::Signal(_) => signalled = true,
                    Msg::Control(stream, _) => waiting_clients.push(stream),
                    Msg::Child(_) | Msg::Checked { .. } => {}
                });
                if let Err(e) = verified {
                    log(Event::LockLost(&e));
                    let e = RunError::LockLost(e);
                    reply_all(&mut waiting_clients, &error_reply(&wire(&e)));
                    return RunOutcome { child: Some(status), ..failed(e, Handoff::Lost) };
                }
                let result = hand_off(cfg, lease, cfg.gate && rule == AfterExit::HandOff, log);
                let reply = match &result {
                    Ok(h) => success_reply(h),
                    // The engine's own error goes on the wire (as before); a refusal of ours as is.
                    Err(RunError::HandoffFailed(e)) => error_reply(&WireError {
                        code: e.code().as_str().into(),
                        message: e.to_string(),
                        hint: e.hint(),
                    }),
                    Err(e) => error_reply(&wire(e)),
                };
                reply_all(&mut waiting_clients, &reply);
                let handoff = match result {
                    Ok(h) => h,
                    Err(e) => {
                        return RunOutcome { child: Some(status), ..failed(e, Handoff::Kept) };
                    }
                };
                // After a preStop handoff, stay until the signal that ends the pod, so the
                // container is not restarted in between.
                if forwarded.is_some() && !signalled {
                    state = State::HandedOff { reply: Box::new(reply), handoff, child: status };
                    continue;
                }
                return RunOutcome { exit_code: 0, handoff, child: Some(status), error: None, pid_namespace: None };
            }
        }
    }
}

/// Stops whatever the writer left behind — processes still in its group, and any that left
/// it (`setsid`, double fork) — with SIGTERM and what is left of the grace period, then
/// SIGKILL, and proves none is left (see [`descendants`]).
fn stop_descendants(
    deadline: Instant,
    exempt: descendants::Exempt,
    log: &mut dyn FnMut(Event),
) -> Result<Drained, DrainError> {
    let drained = descendants::drain(rustix::process::Signal::TERM, deadline, REAP_AFTER_KILL, exempt)?;
    match drained {
        // Only a process already exiting was found (nothing had to be signalled).
        Drained::Nothing | Drained::Stopped(0) => {}
        Drained::Stopped(count) => log(Event::DescendantsStopped { count, killed: false }),
        Drained::Killed(count) => log(Event::DescendantsStopped { count, killed: true }),
    }
    Ok(drained)
}

/// The lock was lost under a running (or draining) writer (issue 18 item 5, as `consul lock`
/// and proper-lockfile's `onCompromised` do; see [`watch`] for what counts as lost): SIGTERM
/// to its group, up to `deadline` for it to exit, then SIGKILL to it and everything it left;
/// never a seal or a release (the lock is not ours to hand off any more).
fn stop_after_loss(
    _cfg: &RunConfig,
    writer: Writer,
    rx: &Receiver<Msg>,
    lost: LockError,
    deadline: Instant,
    waiting: &mut Vec<UnixStream>,
    log: &mut dyn FnMut(Event),
) -> RunOutcome {
    let pgid = writer.pgid;
    log(Event::LockLost(&lost));
    forward_stop(pgid, SIGTERM);
    let mut child = None;
    while child.is_none() {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Msg::Child(status)) => {
                log(Event::ChildExited(status));
                child = Some(status);
            }
            Ok(Msg::Control(stream, _)) => waiting.push(stream),
            // The writer already has its SIGTERM; a late lock check changes nothing.
            Ok(Msg::Signal(_)) | Ok(Msg::Checked { .. }) => {}
            Err(_) => {
                signal_group(pgid, rustix::process::Signal::KILL.as_raw());
                log(Event::Killed);
                break;
            }
        }
    }
    // Whatever is left of the writer's tree is stopped too, and waited out if it resists.
    if descendants::drain(rustix::process::Signal::TERM, deadline, REAP_AFTER_KILL, writer.exempt).is_err() {
        wait_out_survivors(writer, log);
    }
    let error = RunError::LockLost(lost);
    reply_all(waiting, &error_reply(&wire(&error)));
    RunOutcome { child, ..failed(error, Handoff::Lost) }
}

/// Stays until no process of the writer's tree is left (see
/// [`descendants::wait_out_survivors`]): never exit while a write may be in flight.
fn wait_out_survivors(writer: Writer, log: &mut dyn FnMut(Event)) {
    descendants::wait_out_survivors(writer.exempt, Duration::from_secs(1), &mut |n| log(Event::Survivors(n)));
}

fn reply_all(clients: &mut Vec<UnixStream>, reply: &Reply) {
    for c in clients.drain(..) {
        let _ = control::write_reply(&c, reply);
    }
}

fn success_reply(h: &Handoff) -> Reply {
    match h {
        Handoff::Sealed { sealed_at, transcript, exclusive } => Reply {
            ok: true,
            state: Some("sealed".into()),
            sealed_at: Some(sealed_at.clone()),
            transcript: Some(transcript.clone()),
            exclusive: exclusive.clone(),
            error: None,
        },
        _ => Reply {
            ok: true,
            state: Some("released".into()),
            sealed_at: None,
            transcript: None,
            exclusive: None,
            error: None,
        },
    }
}

/// The writer outlived the grace period: kill its group, keep the lock active (it may have
/// stopped mid-append, so nothing may certify the transcript), and report.
fn drain_timeout(
    cfg: &RunConfig,
    writer: Writer,
    rx: &Receiver<Msg>,
    waiting: &mut Vec<UnixStream>,
    log: &mut dyn FnMut(Event),
) -> RunOutcome {
    signal_group(writer.pgid, rustix::process::Signal::KILL.as_raw());
    log(Event::Killed);
    // Whatever left the group dies too: the lock stays active with a holder that is about to
    // exit, and no escaped process may write on under it. The lock is kept either way.
    if descendants::drain(rustix::process::Signal::KILL, Instant::now(), REAP_AFTER_KILL, writer.exempt).is_err() {
        wait_out_survivors(writer, log);
    }
    let deadline = Instant::now() + REAP_AFTER_KILL;
    let mut child = None;
    while let Ok(msg) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        match msg {
            Msg::Child(status) => {
                log(Event::ChildExited(status));
                child = Some(status);
                break;
            }
            Msg::Control(stream, _) => waiting.push(stream),
            Msg::Signal(_) | Msg::Checked { .. } => {}
        }
    }
    let error = RunError::DrainTimeout(cfg.grace);
    for c in waiting.drain(..) {
        let _ = control::write_reply(&c, &error_reply(&wire(&error)));
    }
    RunOutcome {
        exit_code: error.code().exit_code(),
        handoff: Handoff::Kept,
        child,
        error: Some(error),
        pid_namespace: None,
    }
}

/// Seal (`seal`: a requested stop with the gate on) or release the lease.
///
/// A seal first proves that no open file description can still write the transcript
/// ([`crate::lockfile::exclusive::prove`]): the drain proved no *process* of the tree is
/// left, not that no descriptor is. Refused → no seal, the lock is kept. Unprovable here
/// (no leases on this filesystem, not the owner) → the seal says so in its record.
fn hand_off(cfg: &RunConfig, lease: &Lease, seal_it: bool, log: &mut dyn FnMut(Event)) -> Result<Handoff, RunError> {
    log(Event::HandingOff(seal_it));
    if seal_it {
        let path = cfg.transcript.runtime_dir.join(cfg.transcript.key.as_str());
        let exclusive = crate::lockfile::exclusive::prove(&path).map_err(RunError::TranscriptOpenElsewhere)?;
        let progress = cfg.progress.clone();
        let mut cb = |d, t| {
            if let Some(p) = &progress {
                p(d, t)
            }
        };
        let out = seal_proven(
            &cfg.site,
            &cfg.transcript.runtime_dir,
            &cfg.transcript.key,
            &lease.owner,
            &exclusive,
            ProofOptions::default(),
            &mut cb,
        )
        .map_err(RunError::HandoffFailed)?;
        log(Event::Sealed(&out));
        release_transcript_lock(lease);
        Ok(Handoff::Sealed {
            sealed_at: out.sealed_at,
            transcript: out.proof,
            exclusive: Some(exclusive.record_value()),
        })
    } else {
        release(&cfg.site, &lease.owner).map_err(RunError::HandoffFailed)?;
        release_transcript_lock(lease);
        log(Event::Released);
        Ok(Handoff::Released)
    }
}

/// The session is handed off: the next writer must be able to take the transcript's lock,
/// even while this supervisor stays (after a preStop, until the pod's SIGTERM). The writer's
/// tree, which held the other copies, is gone (the drain proved it).
fn release_transcript_lock(lease: &Lease) {
    if let Some(t) = &lease.transcript_lock {
        t.release();
    }
}
