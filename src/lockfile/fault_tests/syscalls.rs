//! Seal and takeover with an error at each failpoint, and with `link`/`rename`/`unlink`
//! failing after or before their effect.

#![allow(clippy::disallowed_methods)] // tests stage files by hand

use super::*;

// ───────────────────────── 1. an Err returned at each failpoint ─────────────────────────

#[test]
fn seal_error_before_the_primary_moves_keeps_the_exact_active_lock_and_drops_the_claim() {
    for fp in ["seal.after_claim", "transition.before_rename"] {
        let fx = Fx::active();
        failing_hook(fp);
        let e = fx.seal().unwrap_err();
        assert_failpoint_error(&e, fp);
        assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()), "{fp}: exact active L, no claim, no candidate");
        fx.retry_seal_succeeds();
    }
}

#[test]
fn seal_error_after_the_rename_restores_the_exact_active_lock() {
    // The primary path is in its gap (L missing): the failure goes through the same restore
    // as a failed link (§5.7 step 3), so the exact predecessor is back and the claim gone.
    let fx = Fx::active();
    failing_hook("transition.after_rename");
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, "transition.after_rename");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()));
    fx.retry_seal_succeeds();
}

#[test]
fn seal_error_before_the_link_restores_the_predecessor_when_the_restore_link_works() {
    let fx = Fx::active();
    failing_once("transition.before_link");
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, "transition.before_link");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()));
    fx.retry_seal_succeeds();
}

#[test]
fn seal_error_before_every_link_retains_the_claim_when_the_restore_fails_too() {
    let fx = Fx::active();
    failing_hook("transition.before_link");
    let e = fx.seal().unwrap_err();
    assert_unavailable(&e, Unavailable::ClaimRetained);
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.claim(), &a), (&fx.handoff(), &a)]));
}

#[test]
fn seal_error_after_commit_rolls_back_to_the_exact_active_lock() {
    for fp in ["transition.after_link", "seal.after_transition"] {
        let fx = Fx::active();
        failing_hook(fp);
        let e = fx.seal().unwrap_err();
        assert_failpoint_error(&e, fp);
        assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()), "{fp}: rolled back, claim/candidate/handoff gone");
        fx.retry_seal_succeeds();
    }
}

#[test]
fn takeover_error_before_the_primary_moves_keeps_the_exact_seal_and_drops_the_claim() {
    for fp in ["takeover.after_claim", "transition.before_rename"] {
        let (fx, sealed) = Fx::sealed();
        failing_hook(fp);
        let e = fx.takeover().unwrap_err();
        assert_failpoint_error(&e, fp);
        assert_eq!(fx.snap(), fx.only_l(&sealed), "{fp}: exact sealed L, no claim");
        fx.retry_takeover_succeeds();
    }
}

#[test]
fn takeover_error_after_the_rename_restores_the_seal() {
    let (fx, sealed) = Fx::sealed();
    failing_hook("transition.after_rename");
    let e = fx.takeover().unwrap_err();
    assert_failpoint_error(&e, "transition.after_rename");
    assert_eq!(fx.snap(), fx.only_l(&sealed));
}

#[test]
fn takeover_error_before_the_link_restores_the_seal_when_the_restore_link_works() {
    let (fx, sealed) = Fx::sealed();
    failing_once("transition.before_link");
    let e = fx.takeover().unwrap_err();
    assert_failpoint_error(&e, "transition.before_link");
    assert_eq!(fx.snap(), fx.only_l(&sealed));
    fx.retry_takeover_succeeds();
}

#[test]
fn takeover_error_before_every_link_retains_the_claim_when_the_restore_fails_too() {
    let (fx, sealed) = Fx::sealed();
    let seen = record_claim(&fx, |_, _| Ok(()));
    failing_hook("transition.before_link");
    let e = fx.takeover().unwrap_err();
    assert_unavailable(&e, Unavailable::ClaimRetained);
    let claim = seen.borrow().clone().unwrap();
    let retired = fx.retired_for(&new_owner_of(&claim));
    assert_eq!(fx.snap(), snap_of(&[(&fx.claim(), &claim), (&retired, &sealed)]));
}

#[test]
fn takeover_error_after_commit_rolls_back_to_the_exact_seal() {
    for fp in ["transition.after_link", "takeover.after_transition"] {
        let (fx, sealed) = Fx::sealed();
        failing_hook(fp);
        let e = fx.takeover().unwrap_err();
        assert_failpoint_error(&e, fp);
        assert_eq!(fx.snap(), fx.only_l(&sealed), "{fp}: rolled back, claim and retired gone");
        fx.retry_takeover_succeeds();
    }
}

// ───────────────────── 2. link / rename / unlink failing AFTER effect ─────────────────────

#[test]
fn seal_reconciles_every_error_after_effect_by_exact_bytes() {
    // (op, which target) — each one must still end in a clean, successful seal.
    let cases: [(&str, &str); 4] = [
        ("link", "claim install"),
        ("rename", "transition rename"),
        ("link", "link into L"),
        ("unlink", "claim unlink"),
    ];
    for (op, what) in cases {
        let fx = Fx::active();
        match what {
            "claim install" => inject_syscall("link", ".claim", When::After, eio(), 1),
            "transition rename" => inject_syscall("rename", &fx.handoff(), When::After, eio(), 1),
            // Armed inside the claim so nothing earlier can consume it.
            "link into L" => set_hook("seal.after_claim", || {
                inject_syscall("link", ".lock", When::After, eio(), 1);
                Ok(())
            }),
            _ => inject_syscall("unlink", ".claim", When::After, eio(), 1),
        }
        let out = fx.seal().unwrap_or_else(|e| panic!("{op} of the {what} failing after effect: {e:?}"));
        fx.assert_sealed_ok(&out);
        clear_hooks();
    }
}

#[test]
fn seal_failure_cleanup_reconciles_claim_and_rollback_unlinks_failing_after_effect() {
    // The claim unlink of a failure cleanup.
    let fx = Fx::active();
    failing_hook("seal.after_claim");
    inject_syscall("unlink", ".claim", When::After, eio(), 1);
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, "seal.after_claim");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()));
    clear_hooks();

    // The rollback's unlink of the committed sealed L.
    let fx = Fx::active();
    set_hook("seal.after_transition", || {
        inject_syscall("unlink", ".lock", When::After, eio(), 1);
        Err(injected())
    });
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, "seal.after_transition");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()));
    fx.retry_seal_succeeds();
}

#[test]
fn takeover_reconciles_every_error_after_effect_by_exact_bytes() {
    for what in ["claim install", "transition rename", "link into L", "claim unlink"] {
        let (fx, _) = Fx::sealed();
        match what {
            "claim install" => inject_syscall("link", ".claim", When::After, eio(), 1),
            "transition rename" => {
                let paths = fx.site.paths.clone();
                let sealed_owner = fx.lease.owner.expose().to_owned();
                record_claim(&fx, move |_, new_owner| {
                    inject_syscall("rename", &paths.sealed_retired(&sealed_owner, new_owner), When::After, eio(), 1);
                    Ok(())
                });
            }
            "link into L" => {
                record_claim(&fx, |_, _| {
                    inject_syscall("link", ".lock", When::After, eio(), 1);
                    Ok(())
                });
            }
            _ => inject_syscall("unlink", ".claim", When::After, eio(), 1),
        }
        let lease = fx.takeover().unwrap_or_else(|e| panic!("{what} failing after effect: {e:?}"));
        fx.assert_took_over(&lease);
        clear_hooks();
    }
}

#[test]
fn takeover_failure_cleanup_reconciles_claim_and_rollback_unlinks_failing_after_effect() {
    let (fx, sealed) = Fx::sealed();
    failing_hook("takeover.after_claim");
    inject_syscall("unlink", ".claim", When::After, eio(), 1);
    let e = fx.takeover().unwrap_err();
    assert_failpoint_error(&e, "takeover.after_claim");
    assert_eq!(fx.snap(), fx.only_l(&sealed));
    clear_hooks();

    let (fx, sealed) = Fx::sealed();
    set_hook("takeover.after_transition", || {
        inject_syscall("unlink", ".lock", When::After, eio(), 1);
        Err(injected())
    });
    let e = fx.takeover().unwrap_err();
    assert_failpoint_error(&e, "takeover.after_transition");
    assert_eq!(fx.snap(), fx.only_l(&sealed));
    fx.retry_takeover_succeeds();
}

// ───────────────────── 3. link / rename / unlink failing BEFORE effect ─────────────────────

#[test]
fn seal_syscalls_failing_before_effect_leave_the_exact_active_lock() {
    for what in ["claim install", "transition rename", "link into L"] {
        let fx = Fx::active();
        match what {
            "claim install" => inject_syscall("link", ".claim", When::Before, eio(), 1),
            "transition rename" => inject_syscall("rename", &fx.handoff(), When::Before, eio(), 1),
            // The restore link (the next ".lock" link) works.
            _ => set_hook("seal.after_claim", || {
                inject_syscall("link", ".lock", When::Before, eio(), 1);
                Ok(())
            }),
        }
        let e = fx.seal().unwrap_err();
        assert_unavailable(&e, Unavailable::Io);
        assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()), "{what} failing before effect");
        fx.retry_seal_succeeds();
    }
}

#[test]
fn seal_whose_link_and_restore_link_both_fail_retains_the_claim() {
    let fx = Fx::active();
    set_hook("seal.after_claim", || {
        inject_syscall("link", ".lock", When::Before, eio(), 2);
        Ok(())
    });
    let e = fx.seal().unwrap_err();
    assert_unavailable(&e, Unavailable::ClaimRetained);
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.claim(), &a), (&fx.handoff(), &a)]));
}

#[test]
fn seal_failure_cleanup_whose_claim_unlink_fails_keeps_the_claim_and_the_active_lock() {
    let fx = Fx::active();
    failing_hook("seal.after_claim");
    inject_syscall("unlink", ".claim", When::Before, eio(), 1);
    let e = fx.seal().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &a), (&fx.claim(), &a)]), "fail closed: the claim fences");
}

#[test]
fn seal_rollback_whose_unlink_fails_once_retries_and_restores() {
    let fx = Fx::active();
    set_hook("seal.after_transition", || {
        inject_syscall("unlink", ".lock", When::Before, eio(), 1);
        Err(injected())
    });
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, "seal.after_transition");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()));
}

/// QWEN_FORMAT §5.6 step 13 (used by §5.10 step 14): a claim that cannot be unlinked is
/// **unavailable**; only the retired/candidate removals ignore errors. A seal or takeover
/// that reports success must therefore leave no claim behind.
#[test]
fn seal_whose_success_path_claim_unlink_fails_must_not_report_success_with_a_residual_claim() {
    let fx = Fx::active();
    inject_syscall("unlink", ".claim", When::Before, eio(), 1);
    let result = fx.seal();
    clear_hooks();
    match result {
        Ok(out) => fx.assert_sealed_ok(&out),
        Err(e) => {
            assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
            let snap = fx.snap();
            let l = &snap.get(&fx.l()).expect("L is present").0;
            let claim_ok = snap.get(&fx.claim()).is_none_or(|c| c.0 == fx.active_raw());
            assert!(snap.len() <= 2 && claim_ok, "{snap:?}");
            assert!(*l == fx.active_raw() || !parse_record(l).unwrap().is_active(), "one owner at most");
        }
    }
}

#[test]
fn takeover_syscalls_failing_before_effect_leave_the_exact_seal() {
    for what in ["claim install", "transition rename", "link into L"] {
        let (fx, sealed) = Fx::sealed();
        match what {
            "claim install" => inject_syscall("link", ".claim", When::Before, eio(), 1),
            "transition rename" => {
                let paths = fx.site.paths.clone();
                let sealed_owner = fx.lease.owner.expose().to_owned();
                record_claim(&fx, move |_, new_owner| {
                    inject_syscall("rename", &paths.sealed_retired(&sealed_owner, new_owner), When::Before, eio(), 1);
                    Ok(())
                });
            }
            _ => {
                record_claim(&fx, |_, _| {
                    inject_syscall("link", ".lock", When::Before, eio(), 1);
                    Ok(())
                });
            }
        }
        let e = fx.takeover().unwrap_err();
        assert_unavailable(&e, Unavailable::Io);
        assert_eq!(fx.snap(), fx.only_l(&sealed), "{what} failing before effect");
        fx.retry_takeover_succeeds();
    }
}

#[test]
fn takeover_failure_cleanup_whose_claim_unlink_fails_keeps_the_claim_and_the_seal() {
    let (fx, sealed) = Fx::sealed();
    let seen = record_claim(&fx, |_, _| Err(injected()));
    inject_syscall("unlink", ".claim", When::Before, eio(), 1);
    let e = fx.takeover().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let claim = seen.borrow().clone().unwrap();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &sealed), (&fx.claim(), &claim)]));
}

#[test]
fn takeover_rollback_whose_unlink_fails_once_retries_and_restores() {
    let (fx, sealed) = Fx::sealed();
    set_hook("takeover.after_transition", || {
        inject_syscall("unlink", ".lock", When::Before, eio(), 1);
        Err(injected())
    });
    let e = fx.takeover().unwrap_err();
    assert_failpoint_error(&e, "takeover.after_transition");
    assert_eq!(fx.snap(), fx.only_l(&sealed));
}

/// See the seal variant: a takeover that reports success must leave no claim behind.
#[test]
fn takeover_whose_success_path_claim_unlink_fails_must_not_report_success_with_a_residual_claim() {
    let (fx, sealed) = Fx::sealed();
    inject_syscall("unlink", ".claim", When::Before, eio(), 1);
    let result = fx.takeover();
    clear_hooks();
    match result {
        Ok(lease) => fx.assert_took_over(&lease),
        Err(e) => {
            assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
            let snap = fx.snap();
            assert!(snap.get(&fx.l()).map(|b| &b.0) == Some(&sealed) || snap.contains_key(&fx.claim()), "{snap:?}");
        }
    }
}
