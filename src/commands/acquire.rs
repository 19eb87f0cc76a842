//! `writerctl acquire`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use writerctl::lockfile::identity::{SystemProbe, default_holder_pid, holder};
use writerctl::lockfile::sys::{Signal0, signal0};
use writerctl::lockfile::wait::acquire_waiting;
use writerctl::lockfile::{AcquireOptions, DirMode, Lease, LockError, ReclaimPolicy, open_site};

use super::args::SessionArgs;
use super::history::note;
use super::output::{Output, clean, hash_progress, log_event};
use super::session::{TokenFile, resolve, transcript_key};
use writerctl::config::Settings;
use writerctl::lockfile::acquire::{Certified, Plan, Predecessor, TranscriptRef};
use writerctl::lockfile::error::Unavailable;
use writerctl::lockfile::give_back::give_back;
use writerctl::lockfile::history::HistoryEvent;
use writerctl::lockfile::status::OwnerView;
use writerctl::lockfile::transcript::ProofOptions;

/// Take the session's writer lock (prints the owner token, or writes it to --token-file).
///
/// The record names a holder process (--pid, default: the process that ran writerctl, e.g.
/// your shell or script). The lock counts as live while that process runs. A lock whose
/// holder is provably gone on this host is reclaimed, unless --managed. A lock taken by
/// `writerctl run` is judged by its holder lock instead (a kernel lock its writer's process
/// tree keeps): reclaimed only once the kernel has released it.
#[derive(Debug, Args)]
#[command(mut_arg("session", super::args::session_from_env))]
pub struct AcquireArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    /// Managed mode (qwen's reclaimPolicy `never` + takeoverPolicy `certified`): a stale
    /// lock is reclaimed only under a pod rule proven by evidence — the lock of this
    /// container of this pod (or, with --statefulset-identity, of this StatefulSet pod's
    /// predecessor) whose holder lock the kernel has released; never on the WRITERCTL_POD_*
    /// variables alone, never by pid. With the gate on, take over a sealed one.
    #[arg(long)]
    pub managed: bool,

    #[command(flatten)]
    pub holder: HolderArgs,

    /// Set by `takeover`: only a sealed lock may be continued (never an empty path).
    #[arg(skip)]
    pub takeover: bool,

    /// Set by `takeover --dry-run`: check and print the plan, change nothing.
    #[arg(skip)]
    pub dry_run: bool,
}

/// The new lock's holder and where its token goes (shared by `acquire` and `takeover`).
#[derive(Debug, Args)]
pub struct HolderArgs {
    /// The process the lock names as holder [default: the process that ran writerctl,
    /// skipping forked subshells such as `$(...)`].
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,

    #[command(flatten)]
    pub kind: super::args::ProcessKindArgs,

    /// Write the owner token to this new file (created 0600; never overwritten) instead of
    /// printing it.
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,

    /// Wait up to SECONDS (fractions allowed) while a live holder or a transition in
    /// progress refuses the session, retrying with a jittered back-off, as `flock -w` does.
    /// On timeout the last refusal is returned with its own code. Refusals that waiting
    /// cannot clear (a stale holder under --managed, a malformed record, a changed
    /// transcript) are returned at once.
    #[arg(long, value_name = "SECONDS", default_value = "0", value_parser = super::parse_seconds)]
    pub wait: std::time::Duration,

    #[command(flatten)]
    pub reason: super::args::ReasonArgs,
}

#[derive(Serialize)]
struct AcquireJson<'a> {
    session_id: &'a str,
    state: &'static str,
    owner_token: Option<&'a str>,
    lock_path: String,
    pid: u32,
    reclaimed: bool,
    token_file: Option<String>,
    previous: Option<PreviousJson<'a>>,
    /// The new record's epoch (`writerctl_epoch`): replacements since the lock was last
    /// created; not a fencing token across a release or a recovery.
    epoch: u64,
    /// Set after a reclaim under a pod proof rule: what it replaced and the rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    recovered_from: Option<&'a writerctl::lockfile::pod::RecoveredFrom>,
    /// `clean` or `torn`, after such a reclaim.
    #[serde(skip_serializing_if = "Option::is_none")]
    transcript_tail: Option<&'static str>,
    /// After a certified takeover: complete SHA-256 passes over the transcript (1, or 2 when
    /// the racily-clean rule made revalidation compare content).
    #[serde(skip_serializing_if = "Option::is_none")]
    transcript_hash_passes: Option<u64>,
}

/// Logs a reclaim the kernel proved (issues 18 and 38): one line, never a token.
pub fn log_recovered(session_id: &str, r: &writerctl::lockfile::acquire::Recovery) {
    log_event(
        "recovered",
        &[
            ("session", session_id.to_owned()),
            ("rule", r.previous.rule.clone()),
            ("evidence", r.previous.evidence.join(",")),
            ("pod_rule", r.previous.pod_rule.clone().unwrap_or_default()),
            ("previous_pod", r.previous.pod_name.clone().unwrap_or_default()),
            ("previous_pod_uid", r.previous.pod_uid.clone().unwrap_or_default()),
            ("previous_container", r.previous.container.clone().unwrap_or_default()),
            ("previous_pid", r.previous.pid.to_string()),
            ("previous_acquired_at", r.previous.acquired_at.clone()),
            ("transcript_tail", r.tail.as_str().to_owned()),
        ],
    );
}

/// The sealing writer a certified takeover replaced.
#[derive(Serialize)]
pub struct PreviousJson<'a> {
    /// Its hostname.
    pub hostname: &'a str,
    /// Its pid.
    pub pid: u64,
    /// When it sealed.
    pub sealed_at: &'a str,
}

/// Logs a successful certified takeover.
pub fn log_takeover(session_id: &str, prev: &Predecessor) {
    log_event(
        "takeover",
        &[
            ("session", session_id.to_owned()),
            ("previous_host", prev.hostname.clone()),
            ("previous_pid", prev.pid.to_string()),
            ("sealed_at", prev.sealed_at.clone()),
        ],
    );
}

/// Runs `acquire`.
pub fn run(args: AcquireArgs, out: Output, settings: Settings) -> Result<()> {
    take(args, out, settings)
}

/// Shared by `acquire` and `takeover` (which is `acquire --managed` with the gate required).
pub fn take(args: AcquireArgs, out: Output, settings: Settings) -> Result<()> {
    let r = resolve(&args.session)?;
    let pid = match args.holder.pid {
        Some(p) => p,
        None => default_holder_pid()
            .ok_or_else(|| LockError::InvalidArgument("writerctl has no parent process; pass --pid".into()))?,
    };
    // A pid above i32::MAX is "alive forever" to every reader (QWEN_FORMAT §3.3): refuse it.
    if pid == 0 || pid > i32::MAX as u32 || signal0(pid as u64) == Signal0::NoSuchProcess {
        return Err(LockError::InvalidArgument(format!("--pid {pid}: no such process")).into());
    }
    let transcript =
        TranscriptRef { runtime_dir: r.runtime_dir.clone(), key: transcript_key(&args.session, &r.session_id)? };
    let reason = args.holder.reason.parse()?;
    if args.dry_run {
        return dry_run(&args, &r, pid, transcript, out, settings);
    }
    // Reserve the token destination before anything changes: a path that cannot be created
    // fails here, with the session exactly as it was (issue 21 item 0).
    let mut token_file = match &args.holder.token_file {
        Some(f) => Some(TokenFile::create(f).map_err(LockError::InvalidArgument)?),
        None => None,
    };
    let taken = open_site(&r.runtime_dir, r.paths.clone(), &r.session_id, DirMode::Create).and_then(|site| {
        let opts = options(&args, pid, &transcript, out, &settings);
        let pause = &mut |d: std::time::Duration, _: &LockError| {
            std::thread::sleep(d);
            Ok::<(), LockError>(())
        };
        acquire_waiting(&site, &opts, &SystemProbe, args.holder.wait, pause).map(|lease| (site, lease))
    });
    let (site, lease) = match taken {
        Ok(t) => t,
        Err(e) => {
            if let Some(f) = token_file {
                f.discard();
            }
            return Err(e.into());
        }
    };
    // The acquisition stands from here (a give-back below is a step of its own).
    note(&site.dir, &HistoryEvent::of_lease(&r.session_id, &lease, reason.as_ref()));
    if !lease.durable {
        out.note("warning: the lock directory could not be fsynced; the takeover may not survive a crash");
    }
    // Without the token nobody could release or seal the lock: if it cannot be delivered
    // (token file or stdout), give the lock back without losing what it replaced — a taken
    // over seal is restored byte for byte, never released — and say exactly what happened.
    // The error is built from text, so `main` never mistakes a closed stdout here for a
    // harmless broken pipe.
    let undeliverable = |what: String, token_file: Option<TokenFile>| {
        if let Some(f) = token_file {
            f.discard();
        }
        let outcome = match give_back(&site, &lease, Some(&transcript)) {
            Ok(done) => {
                note(&site.dir, &HistoryEvent::of_give_back(&r.session_id, &lease, done, reason.as_ref()));
                done.describe().to_owned()
            }
            Err(e) => format!(
                "giving the lock back failed too ({e}); it stays active with no owner token: see `writerctl status`"
            ),
        };
        LockError::Unavailable {
            reason: Unavailable::TokenUndelivered,
            detail: Some(format!("{what}; {outcome}")),
            source: None,
        }
    };
    if let Some(f) = &mut token_file
        && let Err(e) = f.write(lease.owner.expose())
    {
        let what = format!("cannot write token file {}: {e}", f.path().display());
        return Err(undeliverable(what, token_file).into());
    }
    match deliver(&args, &r.session_id, &site.lock_path().display().to_string(), &lease, pid, out) {
        Ok(()) => {
            // The lease is in use: a reclaimed predecessor's holder file is residue now.
            writerctl::lockfile::acquire::settle(&site, &lease);
            // Logged once the takeover stands: an undelivered one was undone above.
            if let Some(prev) = &lease.took_over {
                log_takeover(&r.session_id, prev);
            }
            if let Some(rec) = &lease.recovered {
                log_recovered(&r.session_id, rec);
            }
            Ok(())
        }
        Err(e) => Err(undeliverable(format!("cannot print the owner token: {e}"), token_file).into()),
    }
}

/// The engine's options for these arguments (the real command and its dry run use the same).
fn options(
    args: &AcquireArgs,
    pid: u32,
    transcript: &TranscriptRef,
    out: Output,
    settings: &Settings,
) -> AcquireOptions {
    // Managed mode is qwen's reclaimPolicy `never` + takeoverPolicy `certified`; the
    // certified half exists only while the gate is on.
    let certified = (args.managed && settings.session_writer_lease).then(|| Certified {
        proof: ProofOptions::default(),
        progress: Some(hash_progress(out)),
        sealed_only: args.takeover,
    });
    AcquireOptions {
        transcript: Some(transcript.clone()),
        holder: holder(pid),
        process_kind: args.holder.kind.process_kind.clone(),
        reclaim: if args.managed { ReclaimPolicy::Never } else { ReclaimPolicy::Local },
        certified,
        // writerctl exits at once: nothing would keep a holder lock (issue 27). The
        // record names none, so the pid rule judges it and no pod rule reclaims it.
        holder_lock: false,
    }
}

/// `--dry-run`'s account of the record a plan would replace: who loses the session.
#[derive(Serialize)]
struct ReplacedJson<'a> {
    lock_path: &'a str,
    #[serde(flatten)]
    owner: OwnerView,
    state: &'static str,
    sealed_at: Option<&'a str>,
}

/// `takeover --dry-run --json`.
#[derive(Serialize)]
struct DryRunJson<'a> {
    dry_run: bool,
    session_id: &'a str,
    /// `takeover`, or `reclaim` when a pod proof rule lets the takeover reclaim a crashed
    /// writer's active lock instead.
    action: &'static str,
    lock_path: &'a str,
    previous: Option<PreviousJson<'a>>,
    new_epoch: u64,
    would_remove: Option<ReplacedJson<'a>>,
    would_write: WouldWriteJson<'a>,
}

#[derive(Serialize)]
struct WouldWriteJson<'a> {
    lock_path: &'a str,
    state: &'static str,
    pid: u32,
    hostname: String,
    process_kind: &'a str,
    epoch: u64,
    pod: Option<writerctl::lockfile::record::PodIdentity>,
}

/// `takeover --dry-run`: every check the takeover makes before it writes — gate, --pid,
/// the token file's destination, the site's filesystem and trust, the claim, the lock's
/// state and liveness, the sealed proof against the transcript — then the plan; nothing is
/// created (not even the lock directory or the token file), moved or removed.
fn dry_run(
    args: &AcquireArgs,
    r: &super::session::Resolved,
    pid: u32,
    transcript: TranscriptRef,
    out: Output,
    settings: Settings,
) -> Result<()> {
    if !args.holder.wait.is_zero() {
        return Err(super::usage(
            "--dry-run reports what would happen now; it does not wait",
            "drop --wait (or drop --dry-run to wait for the holder)",
        ));
    }
    if let Some(f) = &args.holder.token_file {
        TokenFile::check_new(f).map_err(LockError::InvalidArgument)?;
    }
    let site = match open_site(&r.runtime_dir, r.paths.clone(), &r.session_id, DirMode::Existing) {
        // No lock directory: the real takeover would create it, then find nothing sealed.
        Err(LockError::NotOwner { .. }) if args.takeover => {
            return Err(LockError::NotSealed {
                session_id: r.session_id.clone(),
                found: writerctl::lockfile::error::NO_LOCK_TO_TAKE_OVER.into(),
            }
            .into());
        }
        other => other?,
    };
    let plan =
        writerctl::lockfile::acquire::plan(&site, &options(args, pid, &transcript, out, &settings), &SystemProbe)?;
    let lock_path = site.lock_path().display().to_string();
    let (action, replaced) = match &plan {
        Plan::TakeOver { sealed } => ("takeover", Some(sealed)),
        Plan::Reclaim { replaced, .. } => ("reclaim", Some(replaced)),
        Plan::Install => ("acquire", None),
    };
    let sealed_at = replaced.and_then(|r| r.seal()).map(|s| s.sealed_at.as_str());
    let doc = DryRunJson {
        dry_run: true,
        session_id: &r.session_id,
        action,
        lock_path: &lock_path,
        previous: replaced
            .and_then(|p| Some(PreviousJson { hostname: &p.owner.hostname, pid: p.owner.pid, sealed_at: sealed_at? })),
        new_epoch: plan.new_epoch(),
        would_remove: replaced.map(|p| ReplacedJson {
            lock_path: &lock_path,
            owner: OwnerView::of(p),
            state: if p.is_active() { "active" } else { "sealed" },
            sealed_at,
        }),
        would_write: WouldWriteJson {
            lock_path: &lock_path,
            state: "active",
            pid,
            hostname: site.local.hostname.clone(),
            process_kind: &args.holder.kind.process_kind,
            epoch: plan.new_epoch(),
            pod: site.local.pod.as_ref().map(|p| p.identity.clone()),
        },
    };
    if out.json {
        return Ok(out.json(&doc)?);
    }
    let verb = if action == "takeover" { "take over" } else { action };
    out.line(&format!(
        "dry run: nothing was changed; `writerctl takeover` would now {verb} session {}",
        clean(&r.session_id)
    ))?;
    if let Some(p) = replaced {
        let pod = p.owner.pod.as_ref().map(|p| format!(", pod {}/{}", p.namespace, p.name)).unwrap_or_default();
        out.line(&format!(
            "  loses it:  pid {} on host {}{pod}, epoch {}{}",
            p.owner.pid,
            clean(&p.owner.hostname),
            p.owner.epoch,
            sealed_at.map(|s| format!(", sealed {}", clean(s))).unwrap_or_default()
        ))?;
        if sealed_at.is_some() {
            out.line("  proof:     the sealed transcript matches (key, length, SHA-256)")?;
        }
    }
    out.line(&format!("  new lock:  pid {pid} on host {}, epoch {}", clean(&doc.would_write.hostname), doc.new_epoch))?;
    out.line(&format!("  lock file: {}", clean(&lock_path)))?;
    Ok(())
}

fn deliver(
    args: &AcquireArgs,
    session_id: &str,
    lock_path: &str,
    lease: &Lease,
    pid: u32,
    out: Output,
) -> std::io::Result<()> {
    if out.json {
        return out.json(&AcquireJson {
            session_id,
            state: "active",
            owner_token: args.holder.token_file.is_none().then(|| lease.owner.expose()),
            lock_path: lock_path.to_owned(),
            pid,
            reclaimed: lease.reclaimed,
            token_file: args.holder.token_file.as_ref().map(|f| f.display().to_string()),
            previous: lease.took_over.as_ref().map(|p| PreviousJson {
                hostname: &p.hostname,
                pid: p.pid,
                sealed_at: &p.sealed_at,
            }),
            epoch: lease.record.owner.epoch,
            recovered_from: lease.recovered.as_ref().map(|r| &r.previous),
            transcript_tail: lease.recovered.as_ref().map(|r| r.tail.as_str()),
            transcript_hash_passes: lease.took_over.is_some().then(writerctl::lockfile::transcript::hash_passes),
        });
    }
    let how = if let Some(rec) = &lease.recovered {
        format!(" (reclaimed by {}; transcript tail {})", rec.previous.describe(), rec.tail.as_str())
    } else if lease.reclaimed {
        " (reclaimed from a dead holder)".to_owned()
    } else if let Some(p) = &lease.took_over {
        format!(" (certified takeover from pid {} on host {}, sealed {})", p.pid, p.hostname, p.sealed_at)
    } else {
        String::new()
    };
    match &args.holder.token_file {
        Some(f) => out
            .line(&format!("acquired session {session_id} for pid {pid}{how}; owner token written to {}", f.display())),
        None => {
            out.note(&format!("acquired session {session_id} for pid {pid}{how}; lock {lock_path}"));
            out.line(lease.owner.expose())
        }
    }
}
