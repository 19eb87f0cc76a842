//! The liveness verdict's vocabulary: every reason an active record counts as live (fenced)
//! or stale (reclaimable), with its stable code and its one-line description.
//!
//! The decision itself is [`super::identity::decide`]; the holder-lock probe
//! ([`super::holder_lock`]) and the pod rules ([`super::pod`]) feed it. The types live here,
//! apart from the code that computes them, because errors and `status` report them too:
//! [`super::error`] must be able to name a verdict without depending on the probes (issue
//! 29: `error` → `identity` → `holder_lock` → `sys` → `error` was an import circle).

/// A proof rule's stable name (status `liveness.code`, `rule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProofRule {
    /// See [`super::pod::same_container`].
    ContainerRestarted,
    /// See [`super::pod::statefulset_pod_replaced`].
    StatefulSetPodReplaced,
}

impl ProofRule {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            ProofRule::ContainerRestarted => "container_restarted",
            ProofRule::StatefulSetPodReplaced => "statefulset_pod_replaced",
        }
    }
}

/// Why a holder lock gives no verdict. Every case counts as live (fenced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unverifiable {
    /// The record's holder-lock value is not a plain `<L>.holder.<uuid>` file name.
    BadName,
    /// The record was written in another boot or on another host, or a boot id is
    /// unreadable: another kernel arbitrated its lock.
    OtherKernel,
    /// The file is missing (removed, moved aside by `recover`, or never created).
    Missing,
    /// The name is not a regular file with one link (a symlink, a FIFO, a hard link).
    NotPlainFile,
    /// The lock directory's filesystem does not arbitrate locks for every mount (FUSE, NFS
    /// with `local_lock`, an unknown type).
    LocksNotArbitrated,
    /// The file could not be opened (permissions, I/O).
    OpenFailed,
    /// The lock call itself failed (no lock manager: `ENOLCK`, I/O).
    LockFailed,
    /// The file at the name is not the one the record names (removed and recreated): its
    /// lock says nothing about the recorded holder (issue 38, reproduction 4).
    Replaced,
    /// The record does not say which file its holder lock is (`writerctl_holder_lock_id`
    /// missing or unreadable: written by an older writerctl), so a free lock at that name
    /// could be anyone's.
    NoIdentity,
}

impl Unverifiable {
    /// The missing evidence, for `status`.
    pub fn describe(self) -> &'static str {
        match self {
            Unverifiable::BadName => "the record's holder-lock name is not a holder-lock file name",
            Unverifiable::OtherKernel => {
                "written in another boot or on another host: only the kernel that arbitrated its holder lock could prove it released"
            }
            Unverifiable::Missing => "its holder-lock file is missing (moved or removed)",
            Unverifiable::NotPlainFile => "its holder-lock file is not a regular file with one link",
            Unverifiable::LocksNotArbitrated => {
                "the lock directory's filesystem (FUSE, NFS with local_lock, or a type not known here) does not prove its locks shared between mounts"
            }
            Unverifiable::OpenFailed => "its holder-lock file cannot be opened here (permissions or I/O)",
            Unverifiable::LockFailed => "the filesystem refused the lock probe (no lock manager, or I/O)",
            Unverifiable::Replaced => {
                "its holder-lock file was replaced (removed and recreated): not the file the record names"
            }
            Unverifiable::NoIdentity => {
                "the record does not name its holder-lock file's identity (written by an older writerctl)"
            }
        }
    }
}

/// Why a record counts as live (fenced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveReason {
    /// Rule 1: written on another host.
    ForeignHost,
    /// Rule 2: our boot id is unreadable.
    LocalBootUnknown,
    /// Rule 2: our pid namespace is unreadable.
    LocalNamespaceUnknown,
    /// Rule 2: the record's start identity is missing or not `linux:<boot>:<ticks>`.
    IdentityNotLinux,
    /// Rule 2: written in another boot.
    OtherBoot,
    /// Rule 2: no `pid_namespace_id`.
    NamespaceMissing,
    /// Rule 2: written in another pid namespace.
    OtherNamespace,
    /// Rule 3′ → 4: `kill` did not say ESRCH and there is no start identity to compare.
    NoStartIdentity,
    /// Rule 6: the process runs with the recorded start identity.
    Running,
    /// Rule 6: the process answers but its start identity cannot be read now.
    IdentityUnreadable,
    /// A pod proof rule would apply, but `WRITERCTL_POD_UID` disagrees with the cgroup.
    PodIdentityUntrusted,
    /// The record's holder lock is held: some process of the holder's tree is alive, even
    /// if the recorded process is gone (issue 27).
    HolderLockHeld,
    /// The record names a holder lock, but the kernel's answer cannot be had or trusted here.
    HolderLockUnverifiable(Unverifiable),
    /// The pod labels match a proof rule, but the record names no holder lock: labels are
    /// no proof (issue 27).
    PodRuleNeedsEvidence(ProofRule),
    /// The kernel refused a read lease on the transcript: some open file description
    /// anywhere on this kernel can still write it — a descriptor handed outside the holder's
    /// tree, a sidecar, a daemon (issue 38, reproduction 1). Whatever the holder evidence
    /// says, nothing may give the transcript a new writer until it is closed.
    TranscriptOpenForWriting,
}

impl LiveReason {
    /// True for the reasons that only say the pid cannot be judged from here (another host,
    /// boot or pid namespace, an identity or domain that cannot be read) — not that a
    /// process answers.
    /// True when the reason is something alive that will end by itself — a running process,
    /// a held holder lock, an open write description — so waiting can free the session.
    /// False when only a person can (evidence that is missing, another host or boot).
    pub fn ends_by_itself(self) -> bool {
        matches!(
            self,
            LiveReason::Running
                | LiveReason::NoStartIdentity
                | LiveReason::IdentityUnreadable
                | LiveReason::HolderLockHeld
                | LiveReason::TranscriptOpenForWriting
        )
    }

    pub(super) fn pid_unjudgeable(self) -> bool {
        matches!(
            self,
            LiveReason::ForeignHost
                | LiveReason::LocalBootUnknown
                | LiveReason::LocalNamespaceUnknown
                | LiveReason::IdentityNotLinux
                | LiveReason::OtherBoot
                | LiveReason::NamespaceMissing
                | LiveReason::OtherNamespace
        )
    }
}

/// Why a record counts as stale (reclaimable by plain acquisition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaleReason {
    /// Rule 3: `kill(pid, 0)` gave ESRCH.
    ProcessGone,
    /// Rule 5: the pid now belongs to a different process.
    PidReused,
    /// The record's holder lock is free: every process of the holder's tree closed it, in
    /// whatever pid namespace it ran (issue 27). With no open write description on the
    /// transcript, plain and managed acquisition both reclaim it (issue 38).
    HolderLockReleased,
    /// As [`StaleReason::HolderLockReleased`], and the pod labels say whose lock it was: this
    /// container's or this StatefulSet pod's predecessor's (see [`super::pod`]). The labels
    /// are a diagnostic; the released lock is the proof.
    Proven(ProofRule),
}

/// The liveness decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// Fenced: never reclaimed.
    Live(LiveReason),
    /// Provably dead in our domain.
    Stale(StaleReason),
}

impl Liveness {
    /// True when live.
    pub fn is_live(self) -> bool {
        matches!(self, Liveness::Live(_))
    }

    /// True when the kernel proved the holder's whole tree gone: its holder lock — the very
    /// file the record names — is free (issue 38 item 1 (a)). Together with a granted read
    /// lease on the transcript (item 1 (b)) this is the proof every reclaim, managed or
    /// plain, may rest on; the pod labels only name whose lock it was.
    pub fn holder_proven_gone(self) -> bool {
        matches!(self, Liveness::Stale(StaleReason::HolderLockReleased | StaleReason::Proven(_)))
    }

    /// The pod rule the labels give a proven-gone holder (a diagnostic since issue 38).
    pub fn proof_rule(self) -> Option<ProofRule> {
        match self {
            Liveness::Stale(StaleReason::Proven(r)) => Some(r),
            _ => None,
        }
    }

    /// A stable short code for JSON output.
    pub fn code(self) -> &'static str {
        match self {
            Liveness::Live(r) => match r {
                LiveReason::ForeignHost => "foreign_host",
                LiveReason::LocalBootUnknown => "local_boot_id_unreadable",
                LiveReason::LocalNamespaceUnknown => "local_pid_namespace_unreadable",
                LiveReason::IdentityNotLinux => "start_identity_not_linux",
                LiveReason::OtherBoot => "other_boot",
                LiveReason::NamespaceMissing => "pid_namespace_missing",
                LiveReason::OtherNamespace => "other_pid_namespace",
                LiveReason::NoStartIdentity => "no_start_identity",
                LiveReason::Running => "running",
                LiveReason::IdentityUnreadable => "start_identity_unreadable",
                LiveReason::PodIdentityUntrusted => "pod_identity_untrusted",
                LiveReason::HolderLockHeld => "holder_lock_held",
                LiveReason::HolderLockUnverifiable(_) => "holder_lock_unverifiable",
                LiveReason::PodRuleNeedsEvidence(_) => "pod_rule_needs_evidence",
                LiveReason::TranscriptOpenForWriting => "transcript_open_for_writing",
            },
            Liveness::Stale(StaleReason::ProcessGone) => "process_gone",
            Liveness::Stale(StaleReason::PidReused) => "pid_reused",
            Liveness::Stale(StaleReason::HolderLockReleased) => "holder_lock_released",
            Liveness::Stale(StaleReason::Proven(r)) => r.as_str(),
        }
    }

    /// One line for operators, in git's style.
    pub fn describe(self) -> &'static str {
        match self {
            Liveness::Live(r) => match r {
                LiveReason::ForeignHost => "written on another host; fenced, never reclaimed from here",
                LiveReason::LocalBootUnknown => "this host's boot id is unreadable; fenced",
                LiveReason::LocalNamespaceUnknown => "this process's pid namespace is unreadable; fenced",
                LiveReason::IdentityNotLinux => "no Linux start identity in the record; fenced",
                LiveReason::OtherBoot => {
                    "written before a reboot (other boot id); fenced until an operator recovers it"
                }
                LiveReason::NamespaceMissing => "no pid namespace in the record; fenced",
                LiveReason::OtherNamespace => "written in another pid namespace (container); fenced",
                LiveReason::NoStartIdentity => {
                    "process answers and the record has no start identity; treated as running"
                }
                LiveReason::Running => "running (same pid and start time)",
                LiveReason::IdentityUnreadable => {
                    "process answers but its start time is unreadable; treated as running"
                }
                LiveReason::PodIdentityUntrusted => {
                    "a pod proof rule would apply, but WRITERCTL_POD_UID does not match /proc/self/cgroup; fenced"
                }
                LiveReason::HolderLockHeld => {
                    "alive: the recorded process may be gone, but its process tree still holds the kernel lock on its holder-lock file; a write may be in flight"
                }
                LiveReason::HolderLockUnverifiable(why) => match why {
                    Unverifiable::BadName => {
                        "the record names a holder lock that is not a holder-lock file name; fenced"
                    }
                    Unverifiable::OtherKernel => {
                        "the record names a holder lock, but it was written in another boot or on another host: only the kernel that arbitrated that lock could prove it released; fenced"
                    }
                    Unverifiable::Missing => {
                        "the record names a holder lock whose file is missing (moved or removed), so nothing proves its tree gone; fenced"
                    }
                    Unverifiable::NotPlainFile => {
                        "the record names a holder lock that is not a regular file with one link; fenced"
                    }
                    Unverifiable::LocksNotArbitrated => {
                        "the record names a holder lock, but the lock directory's filesystem (FUSE, NFS with local_lock, or a type not known here) does not prove its locks shared between mounts; fenced"
                    }
                    Unverifiable::OpenFailed => {
                        "the record names a holder lock that cannot be opened from here (permissions or I/O); fenced"
                    }
                    Unverifiable::LockFailed => {
                        "the record names a holder lock, but the filesystem refused the lock probe (no lock manager, or I/O); fenced"
                    }
                    Unverifiable::Replaced => {
                        "the record names a holder lock, but the file at that name was replaced (removed and recreated), so its free lock proves nothing; fenced"
                    }
                    Unverifiable::NoIdentity => {
                        "the record names a holder lock but not which file it is (an older writerctl wrote it), so a free lock at that name proves nothing; fenced"
                    }
                },
                LiveReason::TranscriptOpenForWriting => {
                    "alive: the kernel refused a read lease on the transcript, so some open file description can still write it (maybe a process outside the holder's tree); fenced until it is closed"
                }
                LiveReason::PodRuleNeedsEvidence(ProofRule::ContainerRestarted) => {
                    "the pod labels say this container restarted, but the record names no holder lock (written by `writerctl acquire`, qwen-code or an older writerctl): labels are no proof that the old holder is gone; fenced"
                }
                LiveReason::PodRuleNeedsEvidence(ProofRule::StatefulSetPodReplaced) => {
                    "the pod labels say this StatefulSet pod was replaced, but the record names no holder lock (written by `writerctl acquire`, qwen-code or an older writerctl): labels are no proof that the old pod is gone; fenced"
                }
            },
            Liveness::Stale(StaleReason::ProcessGone) => "gone (no such process)",
            Liveness::Stale(StaleReason::PidReused) => "gone (pid reused by another process; a PID can be reused)",
            Liveness::Stale(StaleReason::HolderLockReleased) => {
                "gone: every process of the holder's tree closed its holder lock (the kernel released it); reclaimable, also by managed runs, once no open file description can write the transcript"
            }
            Liveness::Stale(StaleReason::Proven(ProofRule::ContainerRestarted)) => {
                "gone: the same container of this pod restarted, and the old tree's holder lock is released; reclaimable, also by managed runs, once no open file description can write the transcript"
            }
            Liveness::Stale(StaleReason::Proven(ProofRule::StatefulSetPodReplaced)) => {
                "gone: this StatefulSet pod was replaced, and the old pod's holder lock is released; reclaimable, also by managed runs, once no open file description can write the transcript"
            }
        }
    }
}
