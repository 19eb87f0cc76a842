//! Process identity and the liveness decision for active records (QWEN_FORMAT §3).
//!
//! The decision, [`decide`], is a function of a record, the local identity domain and a
//! [`ProcessProbe`]; the system probe reads `/proc`, calls `kill(pid, 0)` and asks the kernel
//! about the record's holder lock ([`super::holder_lock`]). Tests drive every row with a fake
//! probe.
//!
//! The table is deliberately conservative. A record that names a holder lock is stale only
//! when the kernel of our boot says that lock is free (every process of the holder's tree is
//! gone, in whatever pid namespace). A record without one is stale only when it is provably
//! from this host, this boot and this pid namespace, and its process is gone (ESRCH) or its
//! pid now belongs to a different process (start identity differs). Pod labels never prove
//! anything alone. Everything else is *live* — fenced — because a wrong "stale" lets two
//! writers append to one transcript.

use std::path::Path;

use super::holder_lock::{HolderLockState, holder_lock_state};
pub use super::liveness::{LiveReason, Liveness, StaleReason};
use super::liveness::{ProofRule, Unverifiable};
use super::pod::{self, PodContext};
use super::record::{Holder, OwnerFields};
use super::sys::{self, Dir, Signal0};

/// The local identity domain a reader compares records against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalDomain {
    /// `os.hostname()`.
    pub hostname: String,
    /// `/proc/sys/kernel/random/boot_id`, if readable and well-formed.
    pub boot_id: Option<String>,
    /// Inode of `/proc/self/ns/pid`, if readable.
    pub pid_namespace_id: Option<u64>,
    /// Our pod, when the pod variables are set (see [`super::pod`]).
    pub pod: Option<PodContext>,
}

impl LocalDomain {
    /// Reads this process's domain.
    pub fn current() -> LocalDomain {
        LocalDomain {
            hostname: sys::hostname(),
            boot_id: read_boot_id(),
            pid_namespace_id: pid_namespace_id(None),
            // Partial pod variables are refused by the commands before any engine call.
            pod: PodContext::current().ok().flatten(),
        }
    }
}

fn is_boot_id(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// The trimmed boot id, validated with `^[0-9a-f-]+$` (case-insensitive).
pub fn read_boot_id() -> Option<String> {
    let s = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let s = s.trim();
    is_boot_id(s).then(|| s.to_owned())
}

/// Inode of `/proc/<pid>/ns/pid` (`None` = this process), following the symlink as `stat` does.
pub fn pid_namespace_id(pid: Option<u32>) -> Option<u64> {
    let path = match pid {
        None => "/proc/self/ns/pid".to_owned(),
        Some(p) => format!("/proc/{p}/ns/pid"),
    };
    sys::stat_path(Path::new(&path)).ok().map(|m| m.ino).filter(|i| *i > 0)
}

/// The fields of a `/proc/<pid>/stat` line from field 3 (`state`) on: the command name
/// (field 2) may contain spaces and `)`, so they are counted after the last `)`. Index 0 is
/// `state`, 1 `ppid`, 19 `starttime`.
pub fn stat_fields(line: &str) -> Option<Vec<&str>> {
    Some(line[line.rfind(')')? + 1..].split_whitespace().collect())
}

/// Field 22 (`starttime`) of a `/proc/<pid>/stat` line.
pub fn start_ticks_from_stat(line: &str) -> Option<&str> {
    let tok = *stat_fields(line)?.get(19)?;
    (!tok.is_empty() && tok.bytes().all(|b| b.is_ascii_digit())).then_some(tok)
}

/// `linux:<boot_id>:<starttime>` of `pid`, or `None` when any part cannot be read.
pub fn process_start_identity(pid: u64) -> Option<String> {
    let boot = read_boot_id()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks = start_ticks_from_stat(&stat)?;
    Some(format!("linux:{boot}:{ticks}"))
}

/// Describes `pid` as a record holder: its start identity, our hostname and **our** pid
/// namespace.
///
/// Why ours and not the holder's: the recorded pid is numbered in the namespace writerctl
/// runs in, and readers judge liveness by probing that number in the recorded namespace
/// (QWEN_FORMAT §3.3 rule 2). Recording the holder's own (possibly nested) namespace would
/// let a reader inside it probe an unrelated pid and reclaim a live lock.
pub fn holder(pid: u32) -> Holder {
    Holder {
        pid,
        process_start_identity: process_start_identity(pid as u64),
        pid_namespace_id: pid_namespace_id(None),
        hostname: sys::hostname(),
    }
}

/// The default holder for a CLI acquisition: the nearest ancestor that is not a forked copy
/// of its own parent.
///
/// Why: `writerctl` itself exits at once, so the lock must name a process that lives as long
/// as the writer. The parent is that process, except inside `$(...)`, a pipeline or `( )`,
/// where a shell forks a short-lived copy of itself to run us; naming that copy would make
/// the lock stale the moment the substitution ends. A forked copy has the same executable
/// and the same command line as its parent, which a freshly exec'd program does not.
pub fn default_holder_pid() -> Option<u32> {
    let mut pid = sys::parent_pid()?;
    for _ in 0..16 {
        let Some(parent) = parent_of(pid) else { break };
        if parent <= 1 || !same_image(pid, parent) {
            break;
        }
        pid = parent;
    }
    Some(pid)
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat_fields(&stat)?.get(1)?.parse().ok()
}

fn same_image(a: u32, b: u32) -> bool {
    let exe = |p: u32| std::fs::read_link(format!("/proc/{p}/exe")).ok();
    let cmdline = |p: u32| std::fs::read(format!("/proc/{p}/cmdline")).ok();
    match (exe(a), exe(b), cmdline(a), cmdline(b)) {
        (Some(ea), Some(eb), Some(ca), Some(cb)) => ea == eb && ca == cb,
        _ => false,
    }
}

/// What the liveness check needs from the operating system.
pub trait ProcessProbe {
    /// `kill(pid, 0)`.
    fn signal0(&self, pid: u64) -> Signal0;
    /// The current start identity of `pid`, if readable.
    fn start_identity(&self, pid: u64) -> Option<String>;
    /// The kernel's answer for the holder-lock file `name` in the lock directory `dir`,
    /// which must be the file `id` (see [`super::holder_lock`]). The default asks the
    /// kernel; tests answer for it.
    fn holder_lock(&self, dir: &Dir, name: &str, id: Option<&str>) -> HolderLockState {
        holder_lock_state(dir, name, id)
    }
}

/// The real probe: `kill(2)`, `/proc` and the holder lock's `flock(2)`.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemProbe;

impl ProcessProbe for SystemProbe {
    fn signal0(&self, pid: u64) -> Signal0 {
        sys::signal0(pid)
    }
    fn start_identity(&self, pid: u64) -> Option<String> {
        process_start_identity(pid)
    }
}

/// Splits `linux:<boot>:<ticks>` (case-insensitive prefix and hex), returning the boot id.
fn linux_identity_boot(identity: &str) -> Option<&str> {
    let prefix = identity.get(..6)?;
    if !prefix.eq_ignore_ascii_case("linux:") {
        return None;
    }
    let (boot, ticks) = identity[6..].split_once(':')?;
    let ok = is_boot_id(boot) && !ticks.is_empty() && ticks.bytes().all(|b| b.is_ascii_digit());
    ok.then_some(boot)
}

/// The pod rule whose *meaning* the labels give `owner` against our pod, if any (see
/// [`super::pod`]). Labels never prove anything by themselves: [`decide`] applies a rule
/// only with a released holder lock.
fn labelled_rule(owner: &OwnerFields, ctx: &PodContext) -> Option<ProofRule> {
    if pod::same_container(owner, &ctx.identity) {
        Some(ProofRule::ContainerRestarted)
    } else if pod::statefulset_pod_replaced(owner, ctx) {
        Some(ProofRule::StatefulSetPodReplaced)
    } else {
        None
    }
}

/// The liveness decision (QWEN_FORMAT §3.3 and issue 27). `dir` is the lock directory the
/// record was read from (where its holder-lock file lives).
///
/// 1. A record naming a holder lock is judged by the kernel's lock, never by pid or label
///    alone (`decide_by_holder_lock`).
/// 2. A record without one (`writerctl acquire`, qwen-code, older writerctl) is judged by
///    qwen's table exactly ([`qwen_table`]); where the pod labels would have reclaimed a
///    record the table fences, it stays fenced with the missing evidence named.
pub fn decide(owner: &OwnerFields, local: &LocalDomain, probe: &dyn ProcessProbe, dir: &Dir) -> Liveness {
    if let Some(name) = &owner.holder_lock {
        return decide_by_holder_lock(owner, local, probe, dir, name);
    }
    let table = qwen_table(owner, local, probe);
    match (table, &local.pod) {
        (Liveness::Live(reason), Some(ctx)) if reason.pid_unjudgeable() => match labelled_rule(owner, ctx) {
            Some(_) if ctx.untrusted.is_some() => Liveness::Live(LiveReason::PodIdentityUntrusted),
            Some(rule) => Liveness::Live(LiveReason::PodRuleNeedsEvidence(rule)),
            None => table,
        },
        _ => table,
    }
}

/// A record that names a holder lock.
///
/// Guarantee: the kernel drops a `flock` lock only when the last descriptor of its open
/// file description closes, so "free" means every process of the holder's tree (the
/// recorded process and each one it handed the descriptor to, in any pid namespace) is
/// gone, and "held" means one still lives. Valid only when the same kernel answers for
/// both sides: the record must come from our boot. Voided by: a filesystem whose lock table
/// is not shared by every mount the holders use (FUSE: refused by the probe), and a holder
/// that closed its descriptor while still writing (not writerctl's library or `run`).
///
/// * held → live, even when the recorded pid is gone (a SIGKILLed supervisor whose escaped
///   descendants still write);
/// * free → stale; a pod rule that the labels give its meaning makes it reclaimable by
///   managed runs too (unless the cgroup contradicts `WRITERCTL_POD_UID`). In our own pid
///   namespace the pid rule must agree: a recorded process that still runs stays live;
/// * no answer → live, saying which evidence is missing (never the pid rule's "gone").
fn decide_by_holder_lock(
    owner: &OwnerFields,
    local: &LocalDomain,
    probe: &dyn ProcessProbe,
    dir: &Dir,
    name: &str,
) -> Liveness {
    let same_boot = match (owner.process_start_identity.as_deref().and_then(linux_identity_boot), &local.boot_id) {
        (Some(theirs), Some(ours)) => theirs.eq_ignore_ascii_case(ours),
        _ => false,
    };
    if !same_boot {
        return Liveness::Live(LiveReason::HolderLockUnverifiable(Unverifiable::OtherKernel));
    }
    match probe.holder_lock(dir, name, owner.holder_lock_id.as_deref()) {
        // A recorded process that runs in our namespace is the more precise answer (and the
        // one `recover` refuses to touch); otherwise the tree's lock is.
        HolderLockState::Held => match qwen_table(owner, local, probe) {
            running @ Liveness::Live(LiveReason::Running) => running,
            _ => Liveness::Live(LiveReason::HolderLockHeld),
        },
        // No verdict from the lock: a recorded process that runs in our namespace is still
        // said to run (issue 38, reproduction 2: `recover` must never move it aside).
        HolderLockState::Unverifiable(why) => match qwen_table(owner, local, probe) {
            running @ Liveness::Live(LiveReason::Running) => running,
            _ => Liveness::Live(LiveReason::HolderLockUnverifiable(why)),
        },
        HolderLockState::Released => {
            if let Liveness::Live(reason) = qwen_table(owner, local, probe)
                && !reason.pid_unjudgeable()
            {
                return Liveness::Live(reason);
            }
            match local.pod.as_ref().filter(|c| c.untrusted.is_none()).and_then(|c| labelled_rule(owner, c)) {
                Some(rule) => Liveness::Stale(StaleReason::Proven(rule)),
                None => Liveness::Stale(StaleReason::HolderLockReleased),
            }
        }
    }
}

/// QWEN_FORMAT §3.3, rule by rule; the first matching rule decides. Linux readers only.
pub fn qwen_table(owner: &OwnerFields, local: &LocalDomain, probe: &dyn ProcessProbe) -> Liveness {
    // Rule 1: another host's process table is not ours to read.
    if owner.hostname != local.hostname {
        return Liveness::Live(LiveReason::ForeignHost);
    }
    // Rule 2: only a record from our boot and our pid namespace can be judged by pid.
    let Some(local_boot) = &local.boot_id else { return Liveness::Live(LiveReason::LocalBootUnknown) };
    let Some(local_ns) = local.pid_namespace_id else {
        return Liveness::Live(LiveReason::LocalNamespaceUnknown);
    };
    match owner.process_start_identity.as_deref().map(linux_identity_boot) {
        // An absent identity fails the regex too (qwen tests `String(undefined)`).
        None | Some(None) => return Liveness::Live(LiveReason::IdentityNotLinux),
        Some(Some(boot)) if !boot.eq_ignore_ascii_case(local_boot) => {
            return Liveness::Live(LiveReason::OtherBoot);
        }
        Some(Some(_)) => {}
    }
    match owner.pid_namespace_id {
        None => return Liveness::Live(LiveReason::NamespaceMissing),
        Some(ns) if ns != local_ns => return Liveness::Live(LiveReason::OtherNamespace),
        Some(_) => {}
    }
    // Rule 3 / 3′.
    if probe.signal0(owner.pid) == Signal0::NoSuchProcess {
        return Liveness::Stale(StaleReason::ProcessGone);
    }
    // Rule 4.
    let Some(recorded) = owner.process_start_identity.as_deref() else {
        return Liveness::Live(LiveReason::NoStartIdentity);
    };
    // Rules 5 and 6.
    match probe.start_identity(owner.pid) {
        Some(now) if now != recorded => Liveness::Stale(StaleReason::PidReused),
        Some(_) => Liveness::Live(LiveReason::Running),
        None => Liveness::Live(LiveReason::IdentityUnreadable),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;

    struct Fake {
        signal: Signal0,
        identity: Option<&'static str>,
        /// What the kernel would say about any holder lock.
        lock: HolderLockState,
    }
    impl ProcessProbe for Fake {
        fn signal0(&self, _: u64) -> Signal0 {
            self.signal
        }
        fn start_identity(&self, _: u64) -> Option<String> {
            self.identity.map(str::to_owned)
        }
        fn holder_lock(&self, _: &Dir, _: &str, _: Option<&str>) -> HolderLockState {
            self.lock
        }
    }

    const NO_LOCK: HolderLockState = HolderLockState::Unverifiable(Unverifiable::Missing);

    const BOOT: &str = "6a1d4c3e-9b2f-4f11-8a77-2c5d9e0f1a2b";

    fn local() -> LocalDomain {
        LocalDomain { hostname: "h".into(), boot_id: Some(BOOT.into()), pid_namespace_id: Some(100), pod: None }
    }

    fn owner() -> OwnerFields {
        OwnerFields {
            pid: 42,
            process_start_identity: Some(format!("linux:{BOOT}:555")),
            pid_namespace_id: Some(100),
            hostname: "h".into(),
            process_kind: "unknown".into(),
            acquired_at: "2026-07-28T00:00:00.000Z".into(),
            qwen_version: None,
            writer: None,
            epoch: 0,
            pod: None,
            recovered_from: None,
            holder_lock: None,
            holder_lock_id: None,
            transcript_ino: None,
        }
    }

    const GONE: Fake = Fake { signal: Signal0::NoSuchProcess, identity: None, lock: NO_LOCK };
    const SAME: Fake = Fake {
        signal: Signal0::Delivered,
        identity: Some("linux:6a1d4c3e-9b2f-4f11-8a77-2c5d9e0f1a2b:555"),
        lock: NO_LOCK,
    };

    fn run(o: OwnerFields, l: LocalDomain, p: &dyn ProcessProbe) -> Liveness {
        let (_t, dir) = sys::scratch_dir();
        decide(&o, &l, p, &dir)
    }

    #[test]
    fn rule1_foreign_host_is_live_even_if_dead() {
        let o = OwnerFields { hostname: "H".into(), ..owner() };
        assert_eq!(run(o, local(), &GONE), Liveness::Live(LiveReason::ForeignHost));
    }

    #[test]
    fn rule2_unreadable_local_domain_fences() {
        let l = LocalDomain { boot_id: None, ..local() };
        assert_eq!(run(owner(), l, &GONE), Liveness::Live(LiveReason::LocalBootUnknown));
        let l = LocalDomain { pid_namespace_id: None, ..local() };
        assert_eq!(run(owner(), l, &GONE), Liveness::Live(LiveReason::LocalNamespaceUnknown));
    }

    #[test]
    fn rule2_identity_shapes_fence() {
        for id in [
            None,
            Some("linux:zz".to_string()),
            Some(format!("linux:{BOOT}")),
            Some(format!("linux:{BOOT}:")),
            Some(format!("linux:{BOOT}:12a")),
            Some("darwin:Tue Sep  1 00:00:00 2026".to_string()),
            Some("win32:638000000000000000".to_string()),
        ] {
            let o = OwnerFields { process_start_identity: id.clone(), ..owner() };
            assert_eq!(run(o, local(), &GONE), Liveness::Live(LiveReason::IdentityNotLinux), "{id:?}");
        }
        // Case-insensitive prefix and boot id.
        let o = OwnerFields { process_start_identity: Some(format!("LINUX:{}:555", BOOT.to_uppercase())), ..owner() };
        assert_eq!(run(o, local(), &GONE), Liveness::Stale(StaleReason::ProcessGone));
    }

    #[test]
    fn rule2_other_boot_or_namespace_fences() {
        let o = OwnerFields {
            process_start_identity: Some("linux:00000000-0000-0000-0000-000000000000:5".into()),
            ..owner()
        };
        assert_eq!(run(o, local(), &GONE), Liveness::Live(LiveReason::OtherBoot));
        let o = OwnerFields { pid_namespace_id: None, ..owner() };
        assert_eq!(run(o, local(), &GONE), Liveness::Live(LiveReason::NamespaceMissing));
        let o = OwnerFields { pid_namespace_id: Some(101), ..owner() };
        assert_eq!(run(o, local(), &GONE), Liveness::Live(LiveReason::OtherNamespace));
    }

    #[test]
    fn rule3_esrch_is_stale() {
        assert_eq!(run(owner(), local(), &GONE), Liveness::Stale(StaleReason::ProcessGone));
    }

    #[test]
    fn rule3_prime_other_errors_continue_as_alive() {
        let eperm = Fake { signal: Signal0::Indeterminate, identity: SAME.identity, lock: NO_LOCK };
        assert_eq!(run(owner(), local(), &eperm), Liveness::Live(LiveReason::Running));
        let eio_unreadable = Fake { signal: Signal0::Indeterminate, identity: None, lock: NO_LOCK };
        assert_eq!(run(owner(), local(), &eio_unreadable), Liveness::Live(LiveReason::IdentityUnreadable));
    }

    #[test]
    fn pid_above_i32_max_is_alive_through_the_real_probe() {
        let o = OwnerFields { pid: i32::MAX as u64 + 1, ..owner() };
        let mut l = local();
        l.boot_id = read_boot_id();
        let o = OwnerFields { process_start_identity: Some(format!("linux:{}:5", l.boot_id.clone().unwrap())), ..o };
        assert!(run(o.clone(), l.clone(), &SystemProbe).is_live());
        let o = OwnerFields { pid: u64::MAX, ..o };
        assert!(run(o, l, &SystemProbe).is_live());
    }

    #[test]
    fn rule4_without_identity_cannot_happen_after_rule2_on_linux() {
        // Rule 2 already fences records without a Linux identity, so rule 4 is reachable
        // only through the table's order; keep it covered through `decide` with a probe that
        // says "alive" and an identity the gate accepts but the probe cannot read.
        let alive = Fake { signal: Signal0::Delivered, identity: None, lock: NO_LOCK };
        assert_eq!(run(owner(), local(), &alive), Liveness::Live(LiveReason::IdentityUnreadable));
    }

    #[test]
    fn rule5_reused_pid_is_stale() {
        let other = Fake {
            signal: Signal0::Delivered,
            identity: Some("linux:6a1d4c3e-9b2f-4f11-8a77-2c5d9e0f1a2b:999"),
            lock: NO_LOCK,
        };
        assert_eq!(run(owner(), local(), &other), Liveness::Stale(StaleReason::PidReused));
    }

    #[test]
    fn rule6_same_identity_is_live() {
        assert_eq!(run(owner(), local(), &SAME), Liveness::Live(LiveReason::Running));
    }

    // ----- issue 27: evidence, not labels -----

    const POD_UID: &str = "6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f";
    const HELD: HolderLockState = HolderLockState::Held;
    const FREE: HolderLockState = HolderLockState::Released;

    fn pod(uid: &str, name: &str, container: &str) -> pod::PodIdentity {
        pod::PodIdentity { uid: uid.into(), name: name.into(), namespace: "ns".into(), container: container.into() }
    }

    /// Our pod: `writer` of `POD_UID`, in pid namespace 100 (the record's is 101).
    fn in_pod(statefulset: bool, untrusted: bool) -> LocalDomain {
        LocalDomain {
            pod: Some(PodContext {
                identity: pod(POD_UID, "w-0", "writer"),
                statefulset,
                untrusted: untrusted.then(|| "cgroup names another pod".to_owned()),
            }),
            ..local()
        }
    }

    /// A record from another pid namespace of this boot, by `p`, optionally naming a holder lock.
    fn pod_record(p: Option<pod::PodIdentity>, holder_lock: bool) -> OwnerFields {
        OwnerFields {
            pid_namespace_id: Some(101),
            hostname: "w-0-old".into(),
            pod: p,
            holder_lock: holder_lock.then(|| "s.lock.holder.0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f".to_owned()),
            ..owner()
        }
    }

    fn probe(signal: Signal0, lock: HolderLockState) -> Fake {
        Fake { signal, identity: SAME.identity, lock }
    }

    #[test]
    fn a_held_holder_lock_is_live_even_when_the_pid_is_gone() {
        // A SIGKILLed supervisor whose escaped descendants still hold the lock (reproduction 2).
        let own_ns = OwnerFields { holder_lock: pod_record(None, true).holder_lock, ..owner() };
        assert_eq!(
            run(own_ns, local(), &probe(Signal0::NoSuchProcess, HELD)),
            Liveness::Live(LiveReason::HolderLockHeld)
        );
        // The same container's record from another pid namespace (reproduction 1).
        let r = pod_record(Some(pod(POD_UID, "w-0", "writer")), true);
        assert_eq!(
            run(r, in_pod(false, false), &probe(Signal0::Delivered, HELD)),
            Liveness::Live(LiveReason::HolderLockHeld)
        );
    }

    #[test]
    fn a_released_holder_lock_proves_the_pod_rule_or_is_plain_stale() {
        let same = pod_record(Some(pod(POD_UID, "w-0", "writer")), true);
        let free = probe(Signal0::Delivered, FREE);
        assert_eq!(
            run(same.clone(), in_pod(false, false), &free),
            Liveness::Stale(StaleReason::Proven(ProofRule::ContainerRestarted))
        );
        // Another container of the pod: the tree is gone, but the lock is not this
        // container's to take in managed mode.
        let sidecar = pod_record(Some(pod(POD_UID, "w-0", "sidecar")), true);
        assert_eq!(run(sidecar, in_pod(false, false), &free), Liveness::Stale(StaleReason::HolderLockReleased));
        // No pod at all, or a cgroup that contradicts the variables: plain stale only.
        assert_eq!(run(same.clone(), local(), &free), Liveness::Stale(StaleReason::HolderLockReleased));
        assert_eq!(run(same, in_pod(false, true), &free), Liveness::Stale(StaleReason::HolderLockReleased));
        // The StatefulSet rule, opt-in only.
        let old_pod = pod_record(Some(pod("11111111-2222-3333-4444-555555555555", "w-0", "writer")), true);
        assert_eq!(
            run(old_pod.clone(), in_pod(true, false), &free),
            Liveness::Stale(StaleReason::Proven(ProofRule::StatefulSetPodReplaced))
        );
        assert_eq!(run(old_pod, in_pod(false, false), &free), Liveness::Stale(StaleReason::HolderLockReleased));
    }

    #[test]
    fn in_our_own_namespace_a_running_holder_stays_live_whatever_its_lock_says() {
        let mine = OwnerFields { holder_lock: pod_record(None, true).holder_lock, ..owner() };
        assert_eq!(run(mine.clone(), local(), &probe(Signal0::Delivered, FREE)), Liveness::Live(LiveReason::Running));
        assert_eq!(run(mine.clone(), local(), &probe(Signal0::Delivered, HELD)), Liveness::Live(LiveReason::Running));
        assert_eq!(
            run(mine, local(), &probe(Signal0::NoSuchProcess, FREE)),
            Liveness::Stale(StaleReason::HolderLockReleased)
        );
    }

    #[test]
    fn a_holder_lock_without_a_verdict_is_live_never_the_pid_rule() {
        let mine = OwnerFields { holder_lock: pod_record(None, true).holder_lock, ..owner() };
        for why in [
            Unverifiable::Missing,
            Unverifiable::LocksNotArbitrated,
            Unverifiable::NotPlainFile,
            Unverifiable::LockFailed,
        ] {
            let p = probe(Signal0::NoSuchProcess, HolderLockState::Unverifiable(why));
            assert_eq!(run(mine.clone(), local(), &p), Liveness::Live(LiveReason::HolderLockUnverifiable(why)));
        }
        // Another boot (or host): the lock's arbiter is not our kernel, whatever the probe says.
        let other_boot = OwnerFields {
            process_start_identity: Some("linux:00000000-0000-0000-0000-000000000000:5".into()),
            ..mine.clone()
        };
        let expect = Liveness::Live(LiveReason::HolderLockUnverifiable(Unverifiable::OtherKernel));
        assert_eq!(run(other_boot, local(), &probe(Signal0::NoSuchProcess, FREE)), expect);
        let no_boot = LocalDomain { boot_id: None, ..local() };
        assert_eq!(run(mine, no_boot, &probe(Signal0::NoSuchProcess, FREE)), expect);
    }

    #[test]
    fn pod_labels_alone_never_reclaim() {
        // Reproduction 1 without a holder lock: the same four variables in another pid
        // namespace (a sidecar, a debug container, a copy of the environment).
        let same = pod_record(Some(pod(POD_UID, "w-0", "writer")), false);
        let gone = probe(Signal0::NoSuchProcess, FREE);
        assert_eq!(
            run(same.clone(), in_pod(false, false), &gone),
            Liveness::Live(LiveReason::PodRuleNeedsEvidence(ProofRule::ContainerRestarted))
        );
        assert_eq!(run(same, in_pod(false, true), &gone), Liveness::Live(LiveReason::PodIdentityUntrusted));
        let old_pod = pod_record(Some(pod("11111111-2222-3333-4444-555555555555", "w-0", "writer")), false);
        assert_eq!(
            run(old_pod, in_pod(true, false), &gone),
            Liveness::Live(LiveReason::PodRuleNeedsEvidence(ProofRule::StatefulSetPodReplaced))
        );
        // Unrelated labels: qwen's table, unchanged.
        let other = pod_record(Some(pod(POD_UID, "w-0", "sidecar")), false);
        assert_eq!(run(other, in_pod(false, false), &gone), Liveness::Live(LiveReason::ForeignHost));
        // In our own namespace the pid rule still decides (plain acquire reclaims, as before).
        let here = OwnerFields { pod: Some(pod(POD_UID, "w-0", "writer")), ..owner() };
        assert_eq!(run(here, in_pod(false, false), &GONE), Liveness::Stale(StaleReason::ProcessGone));
    }

    #[test]
    fn new_reasons_have_stable_codes_and_say_what_is_missing() {
        let l = Liveness::Live(LiveReason::PodRuleNeedsEvidence(ProofRule::ContainerRestarted));
        assert_eq!(l.code(), "pod_rule_needs_evidence");
        assert!(l.describe().contains("no holder lock"), "{}", l.describe());
        assert_eq!(Liveness::Live(LiveReason::HolderLockHeld).code(), "holder_lock_held");
        let u = Liveness::Live(LiveReason::HolderLockUnverifiable(Unverifiable::LocksNotArbitrated));
        assert_eq!(u.code(), "holder_lock_unverifiable");
        assert!(u.describe().contains("FUSE"));
        assert_eq!(Liveness::Stale(StaleReason::HolderLockReleased).code(), "holder_lock_released");
    }

    #[test]
    fn parent_of_reads_the_ppid_field() {
        assert_eq!(parent_of(sys::own_pid()), sys::parent_pid());
        assert!(same_image(sys::own_pid(), sys::own_pid()));
    }

    #[test]
    fn parses_stat_field_22_after_the_last_paren() {
        let line = "1234 (a) b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(start_ticks_from_stat(line), Some("987654"));
        assert_eq!(start_ticks_from_stat("1 (x) S 1"), None);
    }

    #[test]
    fn reads_this_process_identity() {
        let me = sys::own_pid() as u64;
        let id = process_start_identity(me).expect("linux identity");
        assert_eq!(linux_identity_boot(&id).unwrap(), read_boot_id().unwrap());
        assert!(pid_namespace_id(None).is_some());
        assert_eq!(pid_namespace_id(Some(me as u32)), pid_namespace_id(None));
        let own = OwnerFields {
            pid: me,
            process_start_identity: Some(id),
            pid_namespace_id: pid_namespace_id(None),
            hostname: sys::hostname(),
            ..owner()
        };
        assert_eq!(run(own, LocalDomain::current(), &SystemProbe), Liveness::Live(LiveReason::Running));
    }
}
