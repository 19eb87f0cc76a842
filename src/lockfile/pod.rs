//! Kubernetes pod identity in lock records, and the two orchestrator guarantees that prove a
//! crashed writer's holder gone (issue 18).
//!
//! # Why
//!
//! A writer killed with SIGKILL (an OOM kill, a failed liveness probe) leaves an active lock
//! from another pid namespace, which the liveness table fences forever. In Kubernetes every
//! such crash would page a person. But in the two commonest cases the orchestrator itself
//! already proves the old holder gone, and the record can carry what is needed to use that
//! proof:
//!
//! * [`same_container`] (rule `container_restarted`) — the kubelet runs at most one instance
//!   of a named container in a pod at a time: a restarted container starts only after its
//!   predecessor exited;
//! * [`statefulset_pod_replaced`] — the API server holds one pod object per name in a
//!   namespace, and a StatefulSet creates a replacement only after the old pod object is
//!   gone (opt-in: `--statefulset-identity`).
//!
//! Issue 27: the labels give a rule its *meaning* (whose lock this is); what proves the old
//! holder gone is evidence — the record's holder lock, released by the kernel when the old
//! tree's last process exited ([`super::holder_lock`]). A record without one stays fenced,
//! and `status` names the missing evidence (`pod_rule_needs_evidence`).
//!
//! Everything else stays fenced, exactly as before.
//!
//! # Where the identity comes from
//!
//! `WRITERCTL_POD_UID`, `WRITERCTL_POD_NAME`, `WRITERCTL_POD_NAMESPACE` (the downward API)
//! and `WRITERCTL_CONTAINER_NAME` (the manifest), all four or none. Where `/proc/self/cgroup`
//! names a pod UID (the kubelet's cgroup layout), it must equal `WRITERCTL_POD_UID`; if not,
//! the variables are not trusted and neither rule applies (the record is still written with
//! them, and `status` says why nothing is reclaimed).

use std::sync::atomic::{AtomicBool, Ordering};

use super::record::OwnerFields;
/// The record's pod keys belong to the record format ([`super::record`]); named here too
/// because the pod rules are what they are for.
pub use super::record::{POD_KEY, PodIdentity, RECOVERED_KEY, RecoveredFrom};

/// This process's pod, as far as it can be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodContext {
    /// From the environment.
    pub identity: PodIdentity,
    /// `--statefulset-identity` / `WRITERCTL_STATEFULSET_IDENTITY=1`.
    pub statefulset: bool,
    /// Why the proof rules must not be used (the cgroup names another pod), if so.
    pub untrusted: Option<String>,
}

static STATEFULSET_FLAG: AtomicBool = AtomicBool::new(false);

/// `--statefulset-identity` on the command line: read by every later [`PodContext::current`]
/// in this process (like the feature gate, fixed at start).
pub fn enable_statefulset_identity() {
    STATEFULSET_FLAG.store(true, Ordering::SeqCst);
}

/// The pod variables' names, in the order they are checked.
const VARS: [&str; 4] =
    ["WRITERCTL_POD_UID", "WRITERCTL_POD_NAME", "WRITERCTL_POD_NAMESPACE", "WRITERCTL_CONTAINER_NAME"];

impl PodContext {
    /// This process's pod context: `Ok(None)` when no pod variable is set (records exactly
    /// as without Kubernetes); an error naming the missing ones when only some are.
    pub fn current() -> Result<Option<PodContext>, String> {
        let vals: Vec<Option<String>> =
            VARS.iter().map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty())).collect();
        if vals.iter().all(Option::is_none) {
            return Ok(None);
        }
        if vals.iter().any(Option::is_none) {
            let missing: Vec<&str> = VARS.iter().zip(&vals).filter(|(_, v)| v.is_none()).map(|(n, _)| *n).collect();
            return Err(format!("set all four pod variables or none; missing: {}", missing.join(", ")));
        }
        let [uid, name, namespace, container]: [String; 4] =
            vals.into_iter().map(Option::unwrap).collect::<Vec<_>>().try_into().expect("four values");
        let identity = PodIdentity { uid, name, namespace, container };
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let untrusted = check_cgroup(&identity, &cgroup);
        let statefulset = STATEFULSET_FLAG.load(Ordering::SeqCst)
            || std::env::var("WRITERCTL_STATEFULSET_IDENTITY").is_ok_and(|v| v == "1" || v == "true");
        Ok(Some(PodContext { identity, statefulset, untrusted }))
    }
}

/// The pod UID the kubelet's cgroup layout names, if any: a path component `pod<uid>` (cgroupfs
/// driver, dashes) or `…-pod<uid_with_underscores>.slice` (systemd driver).
pub fn cgroup_pod_uid(cgroup: &str) -> Option<String> {
    for line in cgroup.lines() {
        let path = line.splitn(3, ':').nth(2).unwrap_or("");
        for comp in path.split('/') {
            let comp = comp.strip_suffix(".slice").unwrap_or(comp);
            let Some(at) = comp.rfind("pod") else { continue };
            let cand = comp[at + 3..].replace('_', "-");
            if uuid::Uuid::parse_str(&cand).is_ok() && cand.len() == 36 {
                return Some(cand.to_ascii_lowercase());
            }
        }
    }
    None
}

/// `None` when the environment's pod UID may be trusted; otherwise why not.
fn check_cgroup(id: &PodIdentity, cgroup: &str) -> Option<String> {
    match cgroup_pod_uid(cgroup) {
        Some(uid) if !uid.eq_ignore_ascii_case(&id.uid) => Some(format!(
            "WRITERCTL_POD_UID does not match the pod UID in /proc/self/cgroup ({uid}); the pod proof rules are off"
        )),
        _ => None,
    }
}

/// Rule "container restarted" — the labels half. Meaning: the kubelet runs at most one
/// instance of a named container in a pod at a time, so a record written by the same
/// container of the same pod (same pod UID and container name) whose holder's process tree
/// is gone was its predecessor's. The labels only say *whose* lock it is; that the tree is
/// gone is proved by the record's released holder lock ([`super::identity::decide`]), never
/// by the labels or by a pid namespace that differs (issue 27: a sidecar or a debug
/// container copies the variables, and under a cgroup namespace nothing contradicts them).
///
/// Voided by: running two writers of one container at once (nested pid namespaces of their
/// own), and a forged `WRITERCTL_POD_UID` — which can only make a *released* lock managed-
/// reclaimable, never a held one.
pub fn same_container(rec: &OwnerFields, ours: &PodIdentity) -> bool {
    rec.pod.as_ref().is_some_and(|theirs| theirs.uid == ours.uid && theirs.container == ours.container)
}

/// Rule "StatefulSet pod replaced" — the labels half; as with [`same_container`], only a
/// released holder lock proves the old pod's tree gone. Meaning: the API server holds one pod object per name
/// in a namespace, and the StatefulSet controller creates a replacement only after the old
/// pod object was deleted — which, without `--force`, happens only after its containers
/// stopped. So a record from a pod of our name and namespace with another UID was written by
/// a pod that is gone. Only with `--statefulset-identity`, which only a StatefulSet's
/// manifest should set (a Deployment's pods have unique names anyway).
///
/// Voided by a force delete (`kubectl delete pod --force --grace-period=0`, a node declared
/// lost): the replacement may start while the old containers still run — exactly as it voids
/// the StatefulSet's own at-most-one guarantee.
pub fn statefulset_pod_replaced(rec: &OwnerFields, ours: &PodContext) -> bool {
    let Some(theirs) = &rec.pod else { return false };
    ours.statefulset
        && theirs.namespace == ours.identity.namespace
        && theirs.name == ours.identity.name
        && theirs.uid != ours.identity.uid
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f";

    #[test]
    fn the_pod_uid_is_read_from_both_cgroup_drivers() {
        let cgroupfs = format!("0::/kubepods/burstable/pod{UID}/0123456789abcdef\n");
        assert_eq!(cgroup_pod_uid(&cgroupfs).as_deref(), Some(UID));
        let systemd = format!(
            "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice/cri-containerd-abc.scope\n",
            UID.replace('-', "_")
        );
        assert_eq!(cgroup_pod_uid(&systemd).as_deref(), Some(UID));
        let v1 = format!("12:memory:/kubepods/pod{UID}/abc\n1:name=systemd:/kubepods/pod{UID}/abc\n");
        assert_eq!(cgroup_pod_uid(&v1).as_deref(), Some(UID));
        assert_eq!(cgroup_pod_uid("0::/user.slice/user-0.slice/session-1.scope\n"), None);
        assert_eq!(cgroup_pod_uid("0::/podcast/pod123\n"), None);
    }

    fn pod(uid: &str, name: &str, container: &str) -> PodIdentity {
        PodIdentity { uid: uid.into(), name: name.into(), namespace: "ns".into(), container: container.into() }
    }

    #[test]
    fn a_cgroup_naming_another_pod_distrusts_the_environment() {
        let id = pod(UID, "w-0", "writer");
        assert_eq!(check_cgroup(&id, "0::/\n"), None, "no pod in the cgroup: nothing contradicts the variables");
        assert_eq!(check_cgroup(&id, &format!("0::/kubepods/pod{UID}/x\n")), None);
        let other = "0::/kubepods/pod11111111-2222-3333-4444-555555555555/x\n";
        assert!(check_cgroup(&id, other).unwrap().contains("does not match"));
    }

    fn record(p: Option<PodIdentity>, ns: u64) -> OwnerFields {
        OwnerFields {
            pid: 7,
            process_start_identity: Some("linux:b:100".into()),
            pid_namespace_id: Some(ns),
            hostname: "w-0".into(),
            process_kind: "unknown".into(),
            acquired_at: "2026-07-28T00:00:00.000Z".into(),
            qwen_version: None,
            writer: None,
            epoch: 3,
            pod: p,
            recovered_from: None,
            holder_lock: None,
            holder_lock_id: None,
            transcript_ino: None,
        }
    }

    #[test]
    fn same_container_needs_the_same_pod_uid_and_container_name() {
        let ours = pod(UID, "w-abc", "writer");
        assert!(same_container(&record(Some(ours.clone()), 1), &ours));
        assert!(
            same_container(&record(Some(pod(UID, "renamed", "writer")), 1), &ours),
            "the UID decides, not the name"
        );
        assert!(!same_container(&record(Some(pod(UID, "w-abc", "sidecar")), 1), &ours));
        let other_uid = pod("11111111-2222-3333-4444-555555555555", "w-abc", "writer");
        assert!(!same_container(&record(Some(other_uid), 1), &ours));
        assert!(!same_container(&record(None, 1), &ours));
    }

    #[test]
    fn statefulset_pod_replaced_needs_the_opt_in_the_same_name_and_another_uid() {
        let ours = PodContext { identity: pod(UID, "w-0", "writer"), statefulset: true, untrusted: None };
        let old = pod("11111111-2222-3333-4444-555555555555", "w-0", "writer");
        assert!(statefulset_pod_replaced(&record(Some(old.clone()), 1), &ours));
        let off = PodContext { statefulset: false, ..ours.clone() };
        assert!(!statefulset_pod_replaced(&record(Some(old.clone()), 1), &off), "opt-in only");
        assert!(!statefulset_pod_replaced(&record(Some(pod(UID, "w-0", "writer")), 1), &ours), "same UID");
        let other_name = pod("11111111-2222-3333-4444-555555555555", "w-1", "writer");
        assert!(!statefulset_pod_replaced(&record(Some(other_name), 1), &ours));
        let mut other_ns = old;
        other_ns.namespace = "elsewhere".into();
        assert!(!statefulset_pod_replaced(&record(Some(other_ns), 1), &ours));
    }
}
