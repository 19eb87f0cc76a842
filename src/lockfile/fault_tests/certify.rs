//! What a seal certifies and its undo (issue 21), and network filesystems (issue 27).

#![allow(clippy::disallowed_methods)] // tests stage files by hand

use super::*;

// ───────────────────── issue 21: what a seal certifies, and its undo ─────────────────────

/// Item 5: under the transition claim the owner is rechecked by inode, not only by bytes. A
/// byte-identical copy moved over `L` (`cp L L.copy && mv L.copy L`) means someone rewrote
/// the primary: the lease is lost, and the copy is left alone.
#[test]
fn seal_with_the_active_lock_copied_over_in_the_transition_claim_window_reports_the_lease_lost() {
    let fx = Fx::active();
    let ctx = fx.ctx.clone();
    let (l, raw) = (fx.l(), fx.active_raw());
    set_hook("seal.after_claim", move || ctx.replace(&l, &raw));
    let before = std::fs::metadata(fx.ctx.l()).unwrap();
    let e = fx.seal().unwrap_err();
    assert!(matches!(&e, LockError::NotOwner { reason, .. } if reason.contains("another inode")), "{e:?}");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()), "the copy stays, nothing else");
    use std::os::unix::fs::MetadataExt;
    assert_ne!(std::fs::metadata(fx.ctx.l()).unwrap().ino(), before.ino(), "the copy is what is at L");
}

/// Item 4: the transcript is fsynced through the kept-open descriptor before the sealed
/// candidate exists; a failed fsync fails the seal with the exact active lock kept.
#[test]
fn seal_whose_transcript_fsync_fails_keeps_the_exact_active_lock() {
    let fx = Fx::active();
    let candidates = Rc::new(Cell::new(0u32));
    failing_hook("transcript.fsync");
    {
        let c = candidates.clone();
        set_hook("seal.after_candidate", move || {
            c.set(c.get() + 1);
            Ok(())
        });
    }
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, "transcript.fsync");
    assert_eq!(candidates.get(), 0, "the fsync comes before the sealed candidate is installed");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()));
    fx.retry_seal_succeeds();
}

/// Item 0, engine half: a takeover whose token could not be delivered puts back the exact
/// sealed record it replaced — never a release — and only while the transcript still
/// matches that seal's proof.
#[test]
fn a_taken_over_seal_is_restored_byte_for_byte_and_only_over_the_same_transcript() {
    use crate::lockfile::give_back::{GaveBack, give_back};
    let (fx, sealed_raw) = Fx::sealed();
    let lease = fx.takeover().unwrap();
    fx.assert_took_over(&lease);
    let t = TranscriptRef { runtime_dir: fx.r.clone(), key: key() };
    assert_eq!(give_back(&fx.site, &lease, Some(&t)).unwrap(), GaveBack::SealRestored);
    assert_eq!(fx.snap(), fx.only_l(&sealed_raw), "exactly the sealed record, nothing else");
    fx.retry_takeover_succeeds();

    // The transcript changed after the takeover: the seal cannot be restored honestly, so
    // the active lock stays and the error says the transcript changed.
    let (fx, _) = Fx::sealed();
    let lease = fx.takeover().unwrap();
    fx.ctx.append_transcript().unwrap();
    let t = TranscriptRef { runtime_dir: fx.r.clone(), key: key() };
    let e = give_back(&fx.site, &lease, Some(&t)).unwrap_err();
    assert!(matches!(e, LockError::TranscriptChanged { .. }), "{e:?}");
    assert_eq!(fx.snap(), fx.only_l(&lease.record.raw), "our active lock stays, untouched");

    // A plain acquisition replaced nothing worth keeping: it is released.
    let fx = Fx::active();
    assert_eq!(give_back(&fx.site, &fx.lease, None).unwrap(), GaveBack::Released);
    assert_eq!(fx.snap(), Snap::new());
}

/// Issue 27: network filesystems (NFS, FUSE) without `RENAME_NOREPLACE`, and with clients
/// that cache lookups.
mod network {
    use super::*;
    use rustix::io::Errno;

    #[test]
    fn a_lock_that_reads_back_under_another_inode_is_filesystem_unsupported_on_a_network_filesystem() {
        // sshfs numbers each path: the linked lock has our bytes but not our inode. The
        // hook plays that by swapping in a byte-identical copy right after the install.
        for network in [false, true] {
            let mut fx = Fx::active();
            crate::lockfile::release::release(&fx.site, &fx.lease.owner).unwrap();
            if network {
                fx.site.dir.assume_network();
            }
            let l = fx.ctx.l();
            set_hook("acquire.after_install", move || {
                let bytes = std::fs::read(&l)?;
                let copy = l.with_extension("copy");
                std::fs::write(&copy, bytes)?;
                std::fs::rename(&copy, &l)
            });
            let e = acquire::acquire(&fx.site, &plain_opts(), &SystemProbe).unwrap_err();
            clear_hooks();
            if network {
                assert_eq!(e.code().as_str(), "filesystem_unsupported", "{e:?}");
                assert!(e.to_string().contains("stable inode numbers"), "{e}");
            } else {
                assert_eq!(e.code().as_str(), "session_not_owner", "a local disk: someone replaced it: {e:?}");
            }
        }
    }

    #[test]
    fn seal_and_takeover_complete_where_rename_noreplace_answers_einval() {
        let fx = Fx::active();
        inject_syscall("rename", "", When::Before, Errno::INVAL.raw_os_error(), 1);
        let out = fx.seal().unwrap();
        fx.assert_sealed_ok(&out);
        inject_syscall("rename", "", When::Before, Errno::INVAL.raw_os_error(), 1);
        let lease = fx.takeover().unwrap();
        clear_hooks();
        fx.assert_took_over(&lease);
    }

    #[test]
    fn an_acquire_whose_client_cached_the_transition_claims_absence_does_not_enter_a_transition() {
        // Reproduction 4: a transition is under way (transition claim installed, L moved
        // aside). This client cached "no such file" for the transition claim. On a network
        // filesystem the listing fences the acquire; L stays empty for the transition to fill.
        let (mut fx, _) = Fx::sealed();
        std::fs::remove_file(fx.ctx.l()).unwrap();
        std::fs::write(fx.ctx.transition_claim(), b"another host's claim").unwrap();
        fx.site.dir.assume_network();
        inject_syscall("lstat", ".claim", When::Before, Errno::NOENT.raw_os_error(), 100);
        let e = acquire::acquire(&fx.site, &plain_opts(), &SystemProbe).unwrap_err();
        clear_hooks();
        assert_unavailable(&e, Unavailable::TransitionClaimPresent);
        assert!(fx.ctx.l().symlink_metadata().is_err(), "nothing was installed into the gap");
    }

    #[test]
    fn the_second_transition_claim_check_on_a_network_filesystem_removes_a_candidate() {
        // The transition claim appears between the first check and the install, and this
        // client's cache says it is absent: the second check, by listing, still sees it.
        let mut fx = Fx::active();
        crate::lockfile::release::release(&fx.site, &fx.lease.owner).unwrap();
        fx.site.dir.assume_network();
        let claim = fx.ctx.transition_claim();
        set_hook("acquire.after_install", move || std::fs::write(&claim, b"claim"));
        inject_syscall("lstat", ".claim", When::Before, Errno::NOENT.raw_os_error(), 100);
        let e = acquire::acquire(&fx.site, &plain_opts(), &SystemProbe).unwrap_err();
        clear_hooks();
        assert_unavailable(&e, Unavailable::TransitionClaimPresent);
        assert!(fx.ctx.l().symlink_metadata().is_err(), "the candidate left the gap");
    }
}
