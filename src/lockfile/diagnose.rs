//! `writerctl doctor` over a runtime directory: the lock directory's filesystem, who may
//! change R, R/tmp and the lock directory, and every lock that needs an operator.
//!
//! # Calling sequence
//!
//! ```text
//! let checks = diagnose::diagnose(R, &SystemProbe);   // Vec<Check>, never an error
//! let checks = diagnose::diagnose_storage(R);         // the volume only, with one probe file
//! ```
//!
//! # Guarantees
//!
//! Read-only, like `status`: nothing is created (not even a missing lock directory), no
//! probe file is written (the hard-link probe [`super::filesystem::link_probe`] runs only
//! in [`diagnose_storage`], `doctor --storage`, which asks for it), no lock is taken, no transcript is hashed (only the last bytes of
//! each transcript under `R/chats` are read, to find a torn tail). Every verdict comes from
//! the rule the engine itself applies — [`super::filesystem::judge`] for the filesystem,
//! [`super::trust::require_trusted_on`] for the directories, [`super::status::status_all`]
//! and its `next_step` for the locks — so doctor cannot pass what a command would refuse.
//! A check that cannot be made (a directory that cannot be read) fails with the engine's
//! own error message and hint.

use std::path::Path;

use super::error::LockError;
use super::filesystem::{
    Family, Filesystem, LinkProbe, allowed_types, judge, link_probe, no_hard_links, of_nearest_existing, unsupported,
};
use super::identity::ProcessProbe;
use super::liveness::{LiveReason, Liveness};
use super::paths::{LOCK_SUBDIR, decode_uri_component};
use super::site::check_runtime_dir;
use super::status::{LivenessView, LockState, SessionStatus, repair_would_be_planned, status_all};
use super::sys::{Kind, is_enoent, lstat_path, stat_path};
use super::transcript::{Tail, TranscriptKey, tail_of};
use super::trust::{TRUSTED_GROUPS_ENV, require_trusted_on, trusted_groups};
use crate::doctor::{Check, Verdict};

/// Every lock-directory check for runtime directory `runtime_dir`, in a fixed order:
/// `runtime_dir`, `filesystem`, `ownership.*`, `locks`, then one `lock.<session id>` per
/// lock that needs an operator.
pub fn diagnose(runtime_dir: &Path, probe: &dyn ProcessProbe) -> Vec<Check> {
    let mut checks = match storage_checks(runtime_dir) {
        Ok(checks) => checks,
        Err(failed) => return vec![failed],
    };
    match status_all(runtime_dir, probe) {
        Ok(sessions) => {
            checks.push(summary(&sessions));
            checks.extend(sessions.iter().filter_map(lock_check));
            checks.extend(torn_tail_checks(runtime_dir, &sessions));
        }
        Err(e) => checks.push(from_error("locks", &e)),
    }
    checks
}

/// `doctor --storage` (issue 40: a Kubernetes initContainer): only what the volume decides
/// — `runtime_dir`, `filesystem`, `ownership.*` — and `storage.link`: one probe file
/// created, hard-linked and removed beside the lock directory (in R/tmp, or in R before the
/// first acquire), as the user the writer runs as. The one write doctor
/// makes, and only here: it finds what no read can (a volume this user cannot write
/// because its driver ignored `fsGroup`, a read-only mount, an SMB share such as Azure
/// Files without hard links) before `run` does, in a crash loop.
///
/// Lock states are left out on purpose: during a rollout the pod being replaced still holds
/// its session, which is the handoff working, not a fault to stop the new pod for.
pub fn diagnose_storage(runtime_dir: &Path) -> Vec<Check> {
    let mut checks = match storage_checks(runtime_dir) {
        Ok(checks) => checks,
        Err(failed) => return vec![failed],
    };
    checks.push(link_check(runtime_dir));
    checks
}

/// The storage checks every doctor run makes; the one failed check when R itself is not a
/// directory.
fn storage_checks(runtime_dir: &Path) -> Result<Vec<Check>, Check> {
    check_runtime_dir(runtime_dir).map_err(|e| from_error("runtime_dir", &e))?;
    let mut checks = vec![Check::ok("runtime_dir", format!("{} is a directory", runtime_dir.display()))];
    let lock_dir = runtime_dir.join(LOCK_SUBDIR);
    let fs = of_nearest_existing(&lock_dir);
    checks.push(match &fs {
        Ok(Some((judged, fs))) => filesystem_check(&lock_dir, judged, fs, &allowed_types()),
        Ok(None) => {
            Check::with("filesystem", Verdict::Fail, "no ancestor of the lock directory opens", "check the path")
        }
        Err(e) => from_error("filesystem", e),
    });
    // A filesystem that sets owners and modes at mount time: the trust hint names mount
    // options instead of chmod (the rule `open_lock_dir` applies).
    let keeps_modes = !matches!(&fs, Ok(Some((_, f))) if !f.authoritative_lookups());
    checks.push(directory_check(
        "ownership.runtime_tmp",
        "runtime tmp directory",
        &runtime_dir.join("tmp"),
        true,
        keeps_modes,
    ));
    checks.push(directory_check("ownership.lock_dir", "lock directory", &lock_dir, false, keeps_modes));
    Ok(checks)
}

/// `storage.link`: [`link_probe`] beside the lock directory — in `R/tmp`, or in R before
/// the first acquire made it — never inside it: every scan of the lock directory (`status`,
/// `recover`, a supervisor's checks) reads each name there, and during a rollout another
/// Pod's writer is using it. Same filesystem, same owner rules, unless an operator mounted
/// something at the lock directory itself (the `filesystem` check judges that one).
fn link_check(runtime_dir: &Path) -> Check {
    const NAME: &str = "storage.link";
    let lock_dir = runtime_dir.join(LOCK_SUBDIR);
    let at = [runtime_dir.join("tmp"), runtime_dir.to_path_buf()]
        .into_iter()
        .find(|d| stat_path(d).is_ok_and(|m| m.kind == Kind::Directory))
        .unwrap_or_else(|| runtime_dir.to_path_buf());
    let who = format!(
        "uid {}, gid {}",
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw()
    );
    match link_probe(&at) {
        LinkProbe::Works => Check::ok(NAME, format!("created, hard-linked and removed a probe file in {} as {who}", at.display())),
        LinkProbe::CannotCreate(e) => Check::with(
            NAME,
            Verdict::Fail,
            format!("cannot create a file in {} as {who}: {e}", at.display()),
            "the writer's user must be able to create files in the runtime directory. Kubernetes: give the pod securityContext.fsGroup (and WRITERCTL_TRUSTED_GROUPS the same number); an RWX volume whose driver ignores fsGroup (many NFS CSI drivers, static NFS volumes) needs its export directory owned by the pod's runAsUser; a read-only mount cannot carry locks",
        ),
        LinkProbe::NoHardLinks(e) => {
            let why = format!("link(2) answered {e} in {}", at.display());
            let err = match of_nearest_existing(&at) {
                Ok(Some((_, fs))) => unsupported(&fs, &lock_dir, no_hard_links(&why)),
                _ => LockError::InvalidArgument(format!("no hard links: {why}")),
            };
            from_error(NAME, &err)
        }
        LinkProbe::LinkFailed(e) => Check::with(
            NAME,
            Verdict::Fail,
            format!("created a probe file in {} as {who}, but link(2) failed: {e}", at.display()),
            "every lock is installed by link(2); fix what the error names (a quota, the volume's permissions) and run `writerctl doctor --storage` again",
        ),
    }
}

/// A check that failed with the engine's error: its message, and its hint.
pub fn from_error(name: &str, e: &LockError) -> Check {
    Check {
        name: name.into(),
        verdict: Verdict::Fail,
        detail: format!("{e} ({})", e.code()),
        hint: e.hint().or_else(|| Some("fix what the message names, then run `writerctl doctor` again".into())),
    }
}

/// What the network-filesystem rules decide for the lock directory's filesystem: refused
/// (`fail`: every lock-file command would answer filesystem_unsupported), refused but
/// allowed by `WRITERCTL_ALLOW_FILESYSTEM` (`warn`), or accepted with a caveat the
/// protocol pays for (`warn`: a filesystem whose locks are not arbitrated for every mount
/// cannot prove a holder gone by its holder lock, so stale locks stay fenced).
fn filesystem_check(lock_dir: &Path, judged: &Path, fs: &Filesystem, allowed: &[String]) -> Check {
    let mut detail = lock_dir.display().to_string();
    if judged != lock_dir {
        // Not created yet: its nearest existing ancestor is where it would be.
        detail.push_str(&format!(" (not created yet; judged at {})", judged.display()));
    }
    detail.push_str(&format!(": type {}", fs.fs_type));
    if let Some(m) = &fs.mount_point {
        detail.push_str(&format!(", mounted at {}", m.display()));
    }
    if !fs.options.is_empty() {
        detail.push_str(&format!(", options {}", fs.options.join(",")));
    }
    if let Err(e) = judge(fs, lock_dir, &[]) {
        if judge(fs, lock_dir, allowed).is_ok() {
            return Check::with(
                "filesystem",
                Verdict::Warn,
                format!("{detail}; refused by default ({e}), but allowed by {}", super::filesystem::ALLOW_ENV),
                "every defence stays on (uncached reads, proven absence); move the runtime directory to a local disk or a supported network filesystem when you can",
            );
        }
        return from_error("filesystem", &e).with_detail_prefix(&detail);
    }
    if fs.family == Family::Local {
        return Check::ok("filesystem", format!("{detail}: local, lookups authoritative"));
    }
    if !fs.locks_arbitrated() {
        return Check::with(
            "filesystem",
            Verdict::Warn,
            format!("{detail}: a network or FUSE filesystem whose locks are not proven shared between mounts"),
            "holder locks cannot prove a writer gone here, so a crashed writer's lock stays fenced until `writerctl recover`; prefer NFS with local_lock=none, CephFS or a local disk",
        );
    }
    Check::ok(
        "filesystem",
        format!(
            "{detail}: a network filesystem the protocol supports (every defence on: uncached reads, proven absence)"
        ),
    )
}

/// Who may change `path` ([`super::trust`]'s rule, the one every lock-file command applies
/// before it writes). `follow`: R/tmp may be a symlink the operator made; the lock
/// directory must not be one. A missing directory is fine: it is created 0700 on the first
/// acquisition (writerctl never creates R itself).
fn directory_check(name: &str, what: &'static str, path: &Path, follow: bool, keeps_modes: bool) -> Check {
    let meta = if follow { stat_path(path) } else { lstat_path(path) };
    let meta = match meta {
        Ok(m) => m,
        Err(e) if is_enoent(&e) => {
            return Check::ok(
                name,
                format!("{} does not exist yet (the first acquire creates it, mode 0700)", path.display()),
            );
        }
        Err(e) => return from_error(name, &LockError::io(format!("stat {}", path.display()), e)),
    };
    if meta.kind != Kind::Directory {
        return Check::with(
            name,
            Verdict::Fail,
            format!("{} is a {}, not a directory", path.display(), meta.kind.describe()),
            "make it a real directory (not a symlink) owned by the writer's user",
        );
    }
    match require_trusted_on(what, path, &meta, keeps_modes) {
        Ok(()) => {
            let mut detail = format!(
                "{} owned by uid {}, group {}, mode {:04o}",
                path.display(),
                meta.uid,
                meta.gid,
                meta.mode & 0o7777
            );
            if trusted_groups().contains(meta.gid) && meta.mode & 0o020 != 0 {
                detail.push_str(&format!(" (group-writable: group {} is trusted by {TRUSTED_GROUPS_ENV})", meta.gid));
            }
            Check::ok(name, detail)
        }
        Err(e) => from_error(name, &e),
    }
}

/// One line for every lock: how many in each state.
fn summary(sessions: &[SessionStatus]) -> Check {
    let count = |f: &dyn Fn(&SessionStatus) -> bool| sessions.iter().filter(|s| f(s)).count();
    let active = count(&|s| s.state == LockState::Active);
    let stale = count(&|s| s.state == LockState::Active && s.live == Some(false));
    let fenced = count(&fenced);
    let sealed = count(&|s| s.state == LockState::Sealed);
    let transition = count(&|s| s.state == LockState::InTransition);
    let malformed = count(&|s| s.state == LockState::Malformed);
    Check::ok(
        "locks",
        format!(
            "{} lock(s): {active} active ({stale} stale, {fenced} fenced), {sealed} sealed, {transition} in transition, {malformed} malformed",
            sessions.len()
        ),
    )
}

/// Whether an active lock is fenced: live for a reason other than a process that answers
/// or a holder lock that is held (another host, boot or pid namespace, an identity that
/// cannot be judged, a holder lock that cannot be probed). Such a record is never
/// reclaimed and only an operator can end it — the case `status`'s next step sends to
/// `writerctl recover`. A qwen-code managed (schema 3) record is its managed writer's.
fn fenced(s: &SessionStatus) -> bool {
    let answers = |l: &LivenessView| {
        [LiveReason::Running, LiveReason::HolderLockHeld, LiveReason::TranscriptOpenForWriting]
            .iter()
            .any(|r| l.code == Liveness::Live(*r).code())
    };
    s.state == LockState::Active
        && s.live == Some(true)
        && !s.managed_schema
        && s.liveness.as_ref().is_some_and(|l| !answers(l))
}

/// Whether the kernel proved a stale record's holder gone (its holder lock is free), which
/// lets the next `run` reclaim it — given no open write description on the transcript,
/// which `run` checks itself.
fn holder_proven_gone(s: &SessionStatus) -> bool {
    use super::liveness::{ProofRule, StaleReason};
    let proven = [
        Liveness::Stale(StaleReason::HolderLockReleased),
        Liveness::Stale(StaleReason::Proven(ProofRule::ContainerRestarted)),
        Liveness::Stale(StaleReason::Proven(ProofRule::StatefulSetPodReplaced)),
    ];
    s.liveness.as_ref().is_some_and(|l| proven.iter().any(|p| p.code() == l.code))
}

/// The check for one lock that needs an operator (`None` for a healthy one: held by a
/// running writer, sealed, or missing without residue). The hint is `status`'s next step.
fn lock_check(s: &SessionStatus) -> Option<Check> {
    let name = format!("lock.{}", s.session_id);
    let (verdict, what) = match s.state {
        // Issue 38 item 7: a stale lock the kernel cannot prove gone (no holder lock: the pid
        // table's word) is one no `writerctl run` will ever take: a crash-looping pod, unless
        // a person acts — a failure, with the fix as its hint.
        LockState::Active if s.live == Some(false) && !holder_proven_gone(s) => {
            (Verdict::Fail, "stale, but no `writerctl run` can take it without a person".to_string())
        }
        LockState::Active if s.live == Some(false) => {
            (Verdict::Warn, "stale (the next `writerctl run` reclaims it by the kernel's proof)".to_string())
        }
        LockState::Active if fenced(s) => (Verdict::Fail, "fenced".to_string()),
        LockState::InTransition => (Verdict::Fail, "in transition".to_string()),
        LockState::Malformed => (Verdict::Fail, "malformed".to_string()),
        LockState::Missing if !s.side_files.is_empty() => (Verdict::Warn, "residue".to_string()),
        _ => return None,
    };
    let mut detail = format!("{what}: {}", s.lock_path.display());
    if let Some(o) = &s.owner {
        detail.push_str(&format!(", pid {} on host {}, epoch {}", o.holder.pid, o.holder.hostname, o.holder.epoch));
    }
    if let Some(l) = &s.liveness {
        detail.push_str(&format!(" ({})", l.description));
    }
    if let Some(p) = &s.problem {
        detail.push_str(&format!("; {p}"));
    }
    Some(Check { name, verdict, detail, hint: Some(s.next_step.clone()) })
}

/// Issue 38, reproduction 7: one `transcript.<session id>` check (fail) per transcript
/// under `R/chats` (writerctl's default layout) that ends in an incomplete line where
/// `recover` would repair it — no lock, a stale one, or a fenced one. A session whose lock
/// a live writer holds (it may be mid-append), that is sealed (its proof decides) or in
/// transition is left to its lock check. The hint is the repair command; every later
/// `acquire` and `run` is refused until it runs, so this is not a warning.
///
/// Cost: one listing of `R/chats` and, per transcript, an open, an `fstat` and a one-byte
/// read — the backwards search for the last newline runs only for a torn one.
fn torn_tail_checks(runtime_dir: &Path, sessions: &[SessionStatus]) -> Vec<Check> {
    let Ok(listing) = std::fs::read_dir(runtime_dir.join("chats")) else { return Vec::new() };
    let mut names: Vec<String> =
        listing.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| n.ends_with(".jsonl")).collect();
    names.sort();
    let mut checks = Vec::new();
    for name in names {
        let Some(session_id) = decode_uri_component(name.trim_end_matches(".jsonl")) else { continue };
        let Ok(key) = TranscriptKey::parse(&format!("chats/{name}")) else { continue };
        let Ok(Tail::Torn { complete, length }) = tail_of(runtime_dir, &key) else { continue };
        let status = sessions.iter().find(|s| s.session_id == session_id);
        if status.is_some_and(|s| !repair_would_be_planned(s)) {
            continue;
        }
        checks.push(Check::with(
            format!("transcript.{session_id}"),
            Verdict::Fail,
            format!(
                "torn: {} ends in an incomplete line at byte {length} (last complete line ends at byte {complete}); `acquire` and `run` refuse it",
                key.as_str()
            ),
            format!(
                "once no writer can reach it, `writerctl recover --session {session_id} --writers-fenced --yes` keeps the incomplete line in a side file beside the transcript and truncates it at byte {complete}"
            ),
        ));
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs(fs_type: &str, family: Family, options: &[&str]) -> Filesystem {
        Filesystem {
            fs_type: fs_type.into(),
            magic: 0,
            options: options.iter().map(|o| o.to_string()).collect(),
            mount_point: Some("/mnt".into()),
            family,
        }
    }

    #[test]
    fn the_filesystem_verdict_is_the_engines_judgement() {
        let dir = Path::new("/mnt/r/tmp/session-writer-locks");
        let check = |f: &Filesystem, allow: &[&str]| {
            let allow: Vec<String> = allow.iter().map(|a| a.to_string()).collect();
            filesystem_check(dir, dir, f, &allow)
        };
        assert_eq!(check(&fs("ext4", Family::Local, &[]), &[]).verdict, Verdict::Ok);
        // NFS mounted soft: refused (what every lock-file command answers), unless allowed.
        let soft = fs("nfs4", Family::Nfs, &["rw", "soft", "local_lock=none"]);
        let c = check(&soft, &[]);
        assert_eq!(c.verdict, Verdict::Fail, "{c:?}");
        assert!(c.detail.contains("filesystem_unsupported") && c.detail.contains("options rw,soft"), "{c:?}");
        assert!(c.hint.unwrap().contains("WRITERCTL_ALLOW_FILESYSTEM=nfs4"));
        assert_eq!(check(&soft, &["nfs4"]).verdict, Verdict::Warn);
        // No hard links: no setting helps.
        assert_eq!(check(&fs("vfat", Family::NoHardLinks, &[]), &["vfat"]).verdict, Verdict::Fail);
        // Supported NFS: ok; with client-local locks (allowed), a warning about fenced crashes.
        assert_eq!(check(&fs("nfs4", Family::Nfs, &["hard", "local_lock=none"]), &[]).verdict, Verdict::Ok);
        let c = check(&fs("nfs4", Family::Nfs, &["hard", "local_lock=all"]), &["nfs4"]);
        assert_eq!(c.verdict, Verdict::Warn, "{c:?}");
    }
}
