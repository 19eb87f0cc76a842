//! Who may change the directories the engine trusts (issue 22).
//!
//! Every guarantee writerctl gives rests on the entries of a few directories: the lock
//! directory (whoever can rename in it can move a record aside and install their own),
//! `R/tmp` above it (whoever can write there can create the lock directory first, or rename
//! it away), and the directories holding the transcript (whoever can write there can swap
//! the transcript). `rename(2)` and `unlink(2)` need write permission on the *directory*,
//! not on the file, so a record's own mode protects nothing in a directory others can
//! write.
//!
//! # The rule
//!
//! A trusted directory is owned by the caller's effective uid or by root, and it is not
//! group- or world-writable unless its sticky bit is set. With the sticky bit the kernel
//! lets only a file's owner (or the directory's owner, or root) rename or unlink it — the
//! same rule `/tmp` relies on. This is the rule OpenSSH's `StrictModes` applies to the
//! directories above `authorized_keys`. Root is accepted as an owner because root can change
//! any directory anyway; refusing it would only break system-managed layouts.
//!
//! One exception, named by the operator (issue 29): a directory that is group-writable (not
//! world-writable) is trusted when its group is one of the *trusted groups*
//! (`WRITERCTL_TRUSTED_GROUPS`, config key `trusted_groups`). Kubernetes makes every volume
//! of a pod with `fsGroup` group-writable and setgid for that group; the operator who names
//! the pod's `fsGroup` says its members are the pod's own processes. See
//! [`writable_by_strangers`] for what that trusts and what it does not.
//!
//! # What is checked, and when
//!
//! * `R/tmp` (standard layout only) and the lock directory, when a lock site is opened —
//!   before anything is created or written in them ([`super::acquire::open_site`]);
//! * every directory from `R` (exclusive) down to the transcript, on every proof read and
//!   acquisition shape check ([`super::transcript`]).
//!
//! `R` itself is the operator's choice, as in qwen-code, and is not judged.
//!
//! The check is made on an open descriptor's `fstat` where one exists, so a directory
//! swapped after the check is not the one that was judged; the lock directory's identity is
//! re-checked on every sync ([`super::sys::Dir::sync`]).

use std::path::Path;
use std::sync::OnceLock;

use super::error::LockError;
use super::sys::FileMeta;

/// The environment variable naming the trusted groups (`G[,G]`, names or numeric ids).
pub const TRUSTED_GROUPS_ENV: &str = "WRITERCTL_TRUSTED_GROUPS";

/// Groups whose members the operator trusts like the caller itself with the directories
/// the engine relies on (resolved to gids). Empty by default: nothing changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedGroups(Vec<u32>);

/// A trusted group that names no group on this system.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// The name is not in the group database.
    #[error("{TRUSTED_GROUPS_ENV}: no group named {0:?} on this system (give the numeric gid, e.g. the pod's fsGroup)")]
    Unknown(String),
    /// The group database could not be read.
    #[error("{TRUSTED_GROUPS_ENV}: cannot look up group {name:?}: {message}")]
    Lookup {
        /// The name.
        name: String,
        /// What failed.
        message: String,
    },
}

impl TrustedGroups {
    /// Exactly these gids.
    pub fn from_gids(gids: impl IntoIterator<Item = u32>) -> TrustedGroups {
        TrustedGroups(gids.into_iter().collect())
    }

    /// Resolves names and numeric ids (`"2000"`, `"writers"`; surrounding blanks and empty
    /// entries ignored). A name must exist: a typo that silently trusted nothing would leave
    /// the operator debugging a refusal, and one that trusted another group would be worse.
    pub fn resolve<'a>(specs: impl IntoIterator<Item = &'a str>) -> Result<TrustedGroups, GroupError> {
        let mut gids = Vec::new();
        for spec in specs.into_iter().map(str::trim).filter(|s| !s.is_empty()) {
            let gid = match spec.parse::<u32>() {
                Ok(gid) => gid,
                Err(_) => match super::sys::group_id_by_name(spec) {
                    Ok(Some(gid)) => gid,
                    Ok(None) => return Err(GroupError::Unknown(spec.to_owned())),
                    Err(e) => return Err(GroupError::Lookup { name: spec.to_owned(), message: e.to_string() }),
                },
            };
            if !gids.contains(&gid) {
                gids.push(gid);
            }
        }
        Ok(TrustedGroups(gids))
    }

    /// Whether `gid` is one of them.
    pub fn contains(&self, gid: u32) -> bool {
        self.0.contains(&gid)
    }

    /// The gids, in the order named.
    pub fn gids(&self) -> &[u32] {
        &self.0
    }
}

static TRUSTED_GROUPS: OnceLock<TrustedGroups> = OnceLock::new();

/// Fixes this process's trusted groups, read by every later check. Like the feature gate
/// (seed 001) it is configuration read once at start (`main`, from [`crate::config`]): a
/// second call, or a call after the first check, changes nothing and returns false.
pub fn set_trusted_groups(groups: TrustedGroups) -> bool {
    TRUSTED_GROUPS.set(groups).is_ok()
}

/// This process's trusted groups (none unless [`set_trusted_groups`] named some).
pub fn trusted_groups() -> &'static TrustedGroups {
    TRUSTED_GROUPS.get_or_init(TrustedGroups::default)
}

/// Why a directory is not trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distrust {
    /// Owned by another uid that is not root.
    ForeignOwner {
        /// The owner.
        owner: u32,
        /// The caller.
        caller: u32,
    },
    /// Group- or world-writable without the sticky bit (group-writable: for a group that
    /// is not trusted).
    WritableByOthers {
        /// The permission bits.
        mode: u32,
        /// The directory's group.
        gid: u32,
    },
}

/// The caller's effective uid: the identity the kernel checks rename/unlink against.
pub fn caller_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether someone the caller does not trust can rename or unlink entries of a directory
/// with this `mode` (full `st_mode` or permission bits) and group — the trust decision of
/// issue 29, apart from the owner check.
///
/// * Sticky bit: no. The kernel lets only an entry's owner (or the directory's owner, or
///   root) rename or unlink it, whoever may write the directory.
/// * World-writable: yes, always. Every local user could; no setting changes that.
/// * Group-writable: yes, unless the operator named the group in `trusted`.
///
/// What a trusted group's member can do that a stranger cannot: rename and unlink entries —
/// move a lock record aside and link in its own, swap a transcript, plant the lock
/// directory in `R/tmp` (it would then be owned by that member and refused as a foreign
/// owner). That is exactly what the caller itself can do, so naming a group says "its
/// members are as trusted as I am". Kubernetes makes that true of a pod's `fsGroup`: the
/// kubelet adds it to the supplementary groups of the pod's own containers, and only of pods
/// that ask for the same `fsGroup` — on a shared (ReadWriteMany) volume those are the other
/// writers of the same deployment, which the lock protocol already coordinates. Writing a
/// file gives a member nothing more (the kubelet makes files group-writable too): it could
/// already replace the file by a rename. The files themselves are judged as before
/// ([`transcript_exposure`]). The caller need not be a member: root writes any directory
/// without it, and membership changes nothing about who else can write.
pub fn writable_by_strangers(mode: u32, gid: u32, trusted: &TrustedGroups) -> bool {
    if mode & 0o1000 != 0 {
        return false;
    }
    mode & 0o002 != 0 || (mode & 0o020 != 0 && !trusted.contains(gid))
}

/// Judges a directory's owner and mode for `caller`, trusting the members of `trusted`
/// (pure: no syscall).
pub fn judge(meta: &FileMeta, caller: u32, trusted: &TrustedGroups) -> Result<(), Distrust> {
    if meta.uid != caller && meta.uid != 0 {
        return Err(Distrust::ForeignOwner { owner: meta.uid, caller });
    }
    if writable_by_strangers(meta.mode, meta.gid, trusted) {
        return Err(Distrust::WritableByOthers { mode: meta.mode & 0o7777, gid: meta.gid });
    }
    Ok(())
}

/// [`judge`] for the caller, as the engine's error: exit 2 with the command that fixes it.
pub fn require_trusted(what: &'static str, path: &Path, meta: &FileMeta) -> Result<(), LockError> {
    require_trusted_on(what, path, meta, true)
}

/// [`require_trusted`] for a directory on a filesystem that may not keep owners and modes
/// (`keeps_modes` false: FAT, exFAT, NTFS and many FUSE filesystems set them once, from
/// mount options). There `chmod`/`chown` cannot help (issue 27: the exFAT hint could not
/// work), so the hint names the mount options instead.
pub fn require_trusted_on(
    what: &'static str,
    path: &Path,
    meta: &FileMeta,
    keeps_modes: bool,
) -> Result<(), LockError> {
    let result = require_trusted_modes(what, path, meta);
    match result {
        Err(LockError::UntrustedDirectory { what, path, reason, fix }) if !keeps_modes => {
            Err(LockError::UntrustedDirectory {
                what,
                path,
                reason,
                fix: format!(
                    "{fix}. If `chmod`/`chown` do not change it, this filesystem sets owners and modes at mount time: remount it with this user's uid and a mode without group/other write (e.g. `uid={}`, `dmask=022`, `umask=022`), or use another directory",
                    caller_uid()
                ),
            })
        }
        other => other,
    }
}

fn require_trusted_modes(what: &'static str, path: &Path, meta: &FileMeta) -> Result<(), LockError> {
    let caller = caller_uid();
    let shown = path.display();
    match judge(meta, caller, trusted_groups()) {
        Ok(()) => Ok(()),
        Err(Distrust::ForeignOwner { owner, caller }) => Err(LockError::UntrustedDirectory {
            what,
            path: path.to_path_buf(),
            reason: format!(
                "it is owned by uid {owner}, not by this user (uid {caller}) or root, so uid {owner} can move lock records and transcripts aside"
            ),
            fix: format!(
                "nothing was written. Make sure no writer uses it, then remove it or `chown {caller} {shown} && chmod go-w {shown}`; or point --runtime-dir at a directory this user owns"
            ),
        }),
        Err(Distrust::WritableByOthers { mode, gid }) => Err(LockError::UntrustedDirectory {
            what,
            path: path.to_path_buf(),
            reason: format!(
                "its mode {mode:04o} lets other users rename and delete files in it (group- or world-writable without the sticky bit)"
            ),
            fix: writable_fix(&shown.to_string(), mode, gid),
        }),
    }
}

/// The hint for a directory others can write. A group-writable one can also be trusted by
/// naming its group, which is how a Kubernetes `fsGroup` volume is meant to be used; a
/// world-writable one cannot.
fn writable_fix(shown: &str, mode: u32, gid: u32) -> String {
    let chmod = format!("nothing was written. Run `chmod go-w {shown}` (or `chmod +t {shown}` for a shared directory)");
    if mode & 0o002 != 0 {
        return chmod;
    }
    format!(
        "{chmod}; or, if only this pod's processes are in its group {gid} (a Kubernetes fsGroup volume), trust that group with {TRUSTED_GROUPS_ENV}={gid}"
    )
}

/// [`require_trusted`] for a directory named by path, following a symlink at it (`R/tmp`
/// may be a symlink the operator made; what matters is the directory it reaches). A
/// missing directory is fine: nothing can be in it yet.
pub fn require_trusted_path(what: &'static str, path: &Path) -> Result<(), LockError> {
    match super::sys::stat_path(path) {
        Ok(meta) => require_trusted(what, path, &meta),
        Err(e) if super::sys::is_enoent(&e) => Ok(()),
        Err(e) => Err(LockError::io(format!("stat {}", path.display()), e)),
    }
}

/// Issue 22: a transcript others may write is sealed as it is (the proof records its mode
/// and owner, and a later change of either fails a takeover), but whoever may write it can
/// change its bytes after the seal and so force every takeover to fail closed. `status`
/// says so. `None` for a transcript only the caller (or root) can write.
pub fn transcript_exposure(mode: u32, owner: u32, caller: u32) -> Option<String> {
    if mode & 0o002 != 0 {
        return Some(format!(
            "the sealed transcript is world-writable (mode {:04o}): anyone can change it after the seal, and a takeover would then fail closed; `chmod o-w` it",
            mode & 0o7777
        ));
    }
    if owner != caller && owner != 0 {
        return Some(format!(
            "the sealed transcript is owned by uid {owner}, not by this user (uid {caller}) or root: that user can change it after the seal, and a takeover would then fail closed"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lockfile::sys::Kind;

    const FS_GROUP: u32 = 2000;

    fn dir(uid: u32, perm: u32) -> FileMeta {
        FileMeta { dev: 1, ino: 2, kind: Kind::Directory, size: 0, mode: 0o040000 | perm, nlink: 2, uid, gid: FS_GROUP }
    }

    fn none() -> TrustedGroups {
        TrustedGroups::default()
    }

    #[test]
    fn owner_must_be_the_caller_or_root() {
        assert_eq!(judge(&dir(1000, 0o700), 1000, &none()), Ok(()));
        assert_eq!(judge(&dir(0, 0o755), 1000, &none()), Ok(()));
        assert_eq!(judge(&dir(1001, 0o700), 1000, &none()), Err(Distrust::ForeignOwner { owner: 1001, caller: 1000 }));
        // Root's own check: a directory of an ordinary user is foreign to root.
        assert_eq!(judge(&dir(1000, 0o700), 0, &none()), Err(Distrust::ForeignOwner { owner: 1000, caller: 0 }));
    }

    #[test]
    fn group_or_world_writable_needs_the_sticky_bit() {
        assert_eq!(
            judge(&dir(0, 0o777), 1000, &none()),
            Err(Distrust::WritableByOthers { mode: 0o777, gid: FS_GROUP })
        );
        assert_eq!(
            judge(&dir(1000, 0o770), 1000, &none()),
            Err(Distrust::WritableByOthers { mode: 0o770, gid: FS_GROUP })
        );
        assert_eq!(
            judge(&dir(1000, 0o702), 1000, &none()),
            Err(Distrust::WritableByOthers { mode: 0o702, gid: FS_GROUP })
        );
        assert_eq!(judge(&dir(0, 0o1777), 1000, &none()), Ok(()));
        assert_eq!(judge(&dir(1000, 0o755), 1000, &none()), Ok(()));
    }

    #[test]
    fn a_transcript_others_can_write_is_reported() {
        assert_eq!(transcript_exposure(0o100600, 1000, 1000), None);
        assert_eq!(transcript_exposure(0o100644, 0, 1000), None);
        assert!(transcript_exposure(0o100666, 1000, 1000).unwrap().contains("world-writable (mode 0666)"));
        assert!(transcript_exposure(0o100600, 1001, 1000).unwrap().contains("owned by uid 1001"));
    }

    #[test]
    fn the_error_says_what_to_fix_and_exits_2() {
        let e = require_trusted("lock directory", Path::new("/r/tmp/l"), &dir(0, 0o777)).unwrap_err();
        assert_eq!(e.code().exit_code(), 2);
        assert!(e.to_string().contains("0777"), "{e}");
        assert!(e.hint().unwrap().contains("chmod go-w /r/tmp/l"), "{:?}", e.hint());
    }

    #[test]
    fn a_trusted_group_may_write_but_nobody_else_may() {
        let fs_group = TrustedGroups::from_gids([FS_GROUP]);
        let other = TrustedGroups::from_gids([FS_GROUP + 1]);
        // Kubernetes fsGroup: setgid and group-writable, owned by root or by the caller.
        for perm in [0o2770, 0o2775, 0o0770] {
            assert!(!writable_by_strangers(0o040000 | perm, FS_GROUP, &fs_group), "{perm:o}");
            assert!(writable_by_strangers(0o040000 | perm, FS_GROUP, &other), "{perm:o}");
            assert!(writable_by_strangers(0o040000 | perm, FS_GROUP, &none()), "{perm:o}");
            assert_eq!(judge(&dir(0, perm), 1000, &fs_group), Ok(()));
        }
        // World-writable stays refused whatever group is trusted.
        assert!(writable_by_strangers(0o040777, FS_GROUP, &fs_group));
        assert!(writable_by_strangers(0o040702, FS_GROUP, &fs_group));
        // The sticky bit protects entries whoever may write, as before.
        assert!(!writable_by_strangers(0o041777, FS_GROUP, &none()));
        assert!(!writable_by_strangers(0o040755, FS_GROUP, &none()));
        // A trusted group does not make a foreign owner trusted.
        assert_eq!(
            judge(&dir(1001, 0o2770), 1000, &fs_group),
            Err(Distrust::ForeignOwner { owner: 1001, caller: 1000 })
        );
    }

    #[test]
    fn groups_are_numbers_or_names_that_exist() {
        assert_eq!(TrustedGroups::resolve([" 2000", "", "2000", "3000 "]).unwrap().gids(), &[2000, 3000]);
        // root is gid 0 on every Linux system.
        assert_eq!(TrustedGroups::resolve(["root"]).unwrap().gids(), &[0]);
        let e = TrustedGroups::resolve(["2000", "no-such-group-writerctl"]).unwrap_err();
        assert_eq!(e, GroupError::Unknown("no-such-group-writerctl".into()));
        assert!(e.to_string().contains("WRITERCTL_TRUSTED_GROUPS"), "{e}");
        assert!(TrustedGroups::resolve(["nul\0byte"]).is_err());
    }

    #[test]
    fn only_a_group_writable_hint_offers_the_trusted_groups() {
        assert!(writable_fix("/r/l", 0o2770, 2000).contains("WRITERCTL_TRUSTED_GROUPS=2000"));
        assert!(writable_fix("/r/l", 0o0775, 2000).contains("chmod go-w /r/l"));
        assert!(!writable_fix("/r/l", 0o0777, 2000).contains("WRITERCTL_TRUSTED_GROUPS"));
    }
}
