//! `writerctl doctor`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use writerctl::doctor::{Report, Verdict};
use writerctl::error::ErrorCode;
use writerctl::lockfile::SystemProbe;

use super::coord::{Target, coordinator_ca, parse_target};
use super::output::{Output, clean};
use super::session::named_runtime_dir;
use super::{Coded, ExitStatus};

/// Diagnose a runtime directory and a coordinator in one read-only pass: every check ok,
/// warn or fail, with a hint.
///
/// Over the runtime directory R: the lock directory's filesystem type and mount options
/// and whether the protocol runs on it (WRITERCTL_ALLOW_FILESYSTEM is honoured), who owns R,
/// R/tmp and the lock directory and whether their modes are trusted
/// (WRITERCTL_TRUSTED_GROUPS is honoured), and every lock that is stale (warn), fenced, in
/// transition or malformed (fail), each with the next safe step `writerctl status` gives.
///
/// With a coordinator (--coordinator or WRITERCTL_COORDINATOR): whether it can be reached
/// (each kind of failure named), /readyz and its degraded state, the store (/healthz), the
/// clock offset to the server (its Date header; warn above 5 s), for https the server
/// certificate's expiry (warn within 14 days, fail once expired), and whether open
/// registration is on (warn). For the embedded store (sqlite:PATH) the file's presence,
/// type and mode are checked instead.
///
/// Changes nothing (--storage excepted: one probe file, removed at once): no file is
/// created, no lock taken, no credential sent. Exits 0 when no
/// check failed (warnings alone exit 0) and 1 (code doctor_found_failures) when one did, so
/// it can run as a probe or a cron alert. With --json: {"verdict","checks":[{"name",
/// "verdict","detail","hint"}]}.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]; without
    /// one, only the coordinator is checked.
    #[arg(long, value_name = "DIR")]
    pub runtime_dir: Option<PathBuf>,

    /// Check only the storage a writer needs, for a Kubernetes initContainer: the runtime
    /// directory, its filesystem, who may change R/tmp and the lock directory, and — the one
    /// write doctor makes — a probe file created, hard-linked and removed beside the lock
    /// directory (in R/tmp), as this user (a volume whose driver ignored fsGroup, a read-only
    /// mount, an SMB share without hard links fail here, not later in a crash loop). Lock
    /// states are left out: a lock still held by the pod being replaced is a rollout, not a
    /// fault.
    #[arg(long)]
    pub storage: bool,

    /// http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH of an
    /// embedded store; without one, only the runtime directory is checked. For https with a
    /// private CA set WRITERCTL_COORDINATOR_CA=PEM-file.
    #[arg(long, value_name = "URL", env = "WRITERCTL_COORDINATOR")]
    pub coordinator: Option<String>,
}

/// Runs `doctor`.
pub fn run(args: DoctorArgs, out: Output) -> Result<()> {
    let runtime_dir = named_runtime_dir(args.runtime_dir.as_deref())?;
    if runtime_dir.is_none() && args.coordinator.is_none() {
        return Err(super::usage(
            "nothing to diagnose: no runtime directory and no coordinator named",
            "pass --runtime-dir DIR (or set WRITERCTL_RUNTIME_DIR) and/or --coordinator URL (or WRITERCTL_COORDINATOR)",
        ));
    }
    if args.storage && runtime_dir.is_none() {
        return Err(super::usage(
            "--storage checks a runtime directory, and none was named",
            "pass --runtime-dir DIR or set WRITERCTL_RUNTIME_DIR (as the writer's container does)",
        ));
    }
    let mut checks = Vec::new();
    match &runtime_dir {
        Some(r) if args.storage => checks.extend(writerctl::lockfile::diagnose::diagnose_storage(r)),
        Some(r) => checks.extend(writerctl::lockfile::diagnose::diagnose(r, &SystemProbe)),
        None => {}
    }
    match args.coordinator.as_deref().map(|u| parse_target(Some(u))).transpose()? {
        Some(Target::Http(url)) => {
            let ca = coordinator_ca()?;
            checks.extend(writerctl::coordinator::diagnose::diagnose_server(&url, ca.as_deref()));
        }
        Some(Target::Sqlite(path)) => checks.extend(writerctl::coordinator::diagnose::diagnose_sqlite(&path)),
        None => {}
    }
    let report = Report::of(checks);
    if out.json {
        out.json(&report)?;
    } else {
        print_text(&report, out)?;
    }
    let failed = report.failed();
    if failed.is_empty() {
        return Ok(());
    }
    let code = ErrorCode::DoctorFoundFailures;
    if out.json {
        // The report is the one JSON document on stdout; the exit status says the rest.
        super::codes::check_declared("doctor", code);
        return Err(ExitStatus(code.exit_code()).into());
    }
    Err(Coded {
        code,
        message: format!("{} check(s) failed: {}", failed.len(), failed.join(", ")),
        hint: Some("each failed check above says what to do; re-run `writerctl doctor` after fixing it".into()),
    }
    .into())
}

fn print_text(report: &Report, out: Output) -> Result<()> {
    for c in &report.checks {
        let mark = match c.verdict {
            Verdict::Ok => "ok  ",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
        };
        out.line(&format!("{mark}  {}: {}", clean(&c.name), clean(&c.detail)))?;
        if let (Some(h), false) = (&c.hint, c.verdict == Verdict::Ok) {
            out.line(&format!("      hint: {}", clean(h)))?;
        }
    }
    let verdict = match report.verdict {
        Verdict::Ok => "ok",
        Verdict::Warn => "warn",
        Verdict::Fail => "fail",
    };
    out.line(&format!("verdict: {verdict} ({} checks)", report.checks.len()))?;
    Ok(())
}
