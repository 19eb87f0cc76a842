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

use super::error::LockError;
use super::sys::FileMeta;

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
    /// Group- or world-writable without the sticky bit.
    WritableByOthers {
        /// The permission bits.
        mode: u32,
    },
}

/// The caller's effective uid: the identity the kernel checks rename/unlink against.
pub fn caller_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Judges a directory's owner and mode for `caller` (pure: no syscall).
pub fn judge(meta: &FileMeta, caller: u32) -> Result<(), Distrust> {
    if meta.uid != caller && meta.uid != 0 {
        return Err(Distrust::ForeignOwner { owner: meta.uid, caller });
    }
    let sticky = meta.mode & 0o1000 != 0;
    if meta.mode & 0o022 != 0 && !sticky {
        return Err(Distrust::WritableByOthers { mode: meta.mode & 0o7777 });
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
    match judge(meta, caller) {
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
        Err(Distrust::WritableByOthers { mode }) => Err(LockError::UntrustedDirectory {
            what,
            path: path.to_path_buf(),
            reason: format!(
                "its mode {mode:04o} lets other users rename and delete files in it (group- or world-writable without the sticky bit)"
            ),
            fix: format!(
                "nothing was written. Run `chmod go-w {shown}` (or `chmod +t {shown}` for a shared directory)"
            ),
        }),
    }
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

    fn dir(uid: u32, perm: u32) -> FileMeta {
        FileMeta { dev: 1, ino: 2, kind: Kind::Directory, size: 0, mode: 0o040000 | perm, nlink: 2, uid }
    }

    #[test]
    fn owner_must_be_the_caller_or_root() {
        assert_eq!(judge(&dir(1000, 0o700), 1000), Ok(()));
        assert_eq!(judge(&dir(0, 0o755), 1000), Ok(()));
        assert_eq!(judge(&dir(1001, 0o700), 1000), Err(Distrust::ForeignOwner { owner: 1001, caller: 1000 }));
        // Root's own check: a directory of an ordinary user is foreign to root.
        assert_eq!(judge(&dir(1000, 0o700), 0), Err(Distrust::ForeignOwner { owner: 1000, caller: 0 }));
    }

    #[test]
    fn group_or_world_writable_needs_the_sticky_bit() {
        assert_eq!(judge(&dir(0, 0o777), 1000), Err(Distrust::WritableByOthers { mode: 0o777 }));
        assert_eq!(judge(&dir(1000, 0o770), 1000), Err(Distrust::WritableByOthers { mode: 0o770 }));
        assert_eq!(judge(&dir(1000, 0o702), 1000), Err(Distrust::WritableByOthers { mode: 0o702 }));
        assert_eq!(judge(&dir(0, 0o1777), 1000), Ok(()));
        assert_eq!(judge(&dir(1000, 0o755), 1000), Ok(()));
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
}
