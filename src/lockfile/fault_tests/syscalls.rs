//! Seal and takeover with an error at each failpoint, and with `link`/`rename`/`unlink`
//! failing after or before their effect.

#![allow(clippy::disallowed_methods)] // tests stage files by hand

use super::*;

/// The seal fails with the error of failpoint `fp` and leaves exactly the active L.
fn seal_fails_back_to_active(fx: &Fx, fp: &str) {
    let e = fx.seal().unwrap_err();
    assert_failpoint_error(&e, fp);
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()), "{fp}: exact active L, no claim/candidate/handoff");
}

/// The takeover fails with the error of failpoint `fp` and leaves exactly the seal.
fn takeover_fails_back_to_seal(fx: &Fx, sealed: &[u8], fp: &str) {
    let e = fx.takeover().unwrap_err();
    assert_failpoint_error(&e, fp);
    assert_eq!(fx.snap(), fx.only_l(sealed), "{fp}: exact sealed L, no claim/retired");
}

/// Arms failpoint `fp` with `arm` on a fresh active lock; the seal fails back to it and a
/// retry then seals.
fn seal_fails_back_then_retries(arm: fn(&'static str), fp: &'static str) {
    let fx = Fx::active();
    arm(fp);
    seal_fails_back_to_active(&fx, fp);
    fx.retry_seal_succeeds();
}

/// The takeover variant of [`seal_fails_back_then_retries`], on a fresh seal.
fn takeover_fails_back_then_retries(arm: fn(&'static str), fp: &'static str) {
    let (fx, sealed) = Fx::sealed();
    arm(fp);
    takeover_fails_back_to_seal(&fx, &sealed, fp);
    fx.retry_takeover_succeeds();
}

/// Fails failpoint `fp` (a rollback point) after arming the rollback's unlink of L to fail.
fn failing_rollback_unlink(fp: &'static str, when: When) {
    set_hook(fp, move || {
        inject_syscall("unlink", ".lock", when, eio(), 1);
        Err(injected())
    });
}

/// Arms the claim's own install link or unlink, the same in a seal and a takeover.
fn arm_claim_syscall(what: &str, when: When) {
    match what {
        "claim install" => inject_syscall("link", ".claim", when, eio(), 1),
        "claim unlink" => inject_syscall("unlink", ".claim", when, eio(), 1),
        _ => unreachable!("unknown step {what}"),
    }
}

/// Arms one syscall of a seal, by the step `what` it serves, to fail `when` relative to
/// its effect.
fn arm_seal_syscall(fx: &Fx, what: &str, when: When) {
    match what {
        "transition rename" => inject_syscall("rename", &fx.handoff(), when, eio(), 1),
        // Armed inside the claim so nothing earlier can consume it.
        "link into L" => set_hook("seal.after_claim", move || {
            inject_syscall("link", ".lock", when, eio(), 1);
            Ok(())
        }),
        _ => arm_claim_syscall(what, when),
    }
}

/// The takeover variant of [`arm_seal_syscall`]; the retired name is only known once the
/// claim names the new owner, so the rename and the link are armed from the claim.
fn arm_takeover_syscall(fx: &Fx, what: &str, when: When) {
    match what {
        "transition rename" => {
            let paths = fx.site.paths.clone();
            let sealed_owner = fx.lease.owner.expose().to_owned();
            record_claim(fx, move |_, new_owner| {
                inject_syscall("rename", &paths.sealed_retired(&sealed_owner, new_owner), when, eio(), 1);
                Ok(())
            });
        }
        "link into L" => {
            record_claim(fx, move |_, _| {
                inject_syscall("link", ".lock", when, eio(), 1);
                Ok(())
            });
        }
        _ => arm_claim_syscall(what, when),
    }
}

// ───────────────────────── 1. an Err returned at each failpoint ─────────────────────────

#[test]
fn seal_error_before_the_primary_moves_keeps_the_exact_active_lock_and_drops_the_claim() {
    for fp in ["seal.after_claim", "transition.before_rename"] {
        seal_fails_back_then_retries(failing_hook, fp);
    }
}

#[test]
fn seal_error_after_the_rename_restores_the_exact_active_lock() {
    // The primary path is in its gap (L missing): the failure goes through the same restore
    // as a failed link (§5.7 step 3), so the exact predecessor is back and the claim gone.
    seal_fails_back_then_retries(failing_hook, "transition.after_rename");
}

#[test]
fn seal_error_before_the_link_restores_the_predecessor_when_the_restore_link_works() {
    seal_fails_back_then_retries(failing_once, "transition.before_link");
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
        seal_fails_back_then_retries(failing_hook, fp);
    }
}

#[test]
fn takeover_error_before_the_primary_moves_keeps_the_exact_seal_and_drops_the_claim() {
    for fp in ["takeover.after_claim", "transition.before_rename"] {
        takeover_fails_back_then_retries(failing_hook, fp);
    }
}

#[test]
fn takeover_error_after_the_rename_restores_the_seal() {
    let (fx, sealed) = Fx::sealed();
    failing_hook("transition.after_rename");
    takeover_fails_back_to_seal(&fx, &sealed, "transition.after_rename");
}

#[test]
fn takeover_error_before_the_link_restores_the_seal_when_the_restore_link_works() {
    takeover_fails_back_then_retries(failing_once, "transition.before_link");
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
        takeover_fails_back_then_retries(failing_hook, fp);
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
        arm_seal_syscall(&fx, what, When::After);
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
    arm_seal_syscall(&fx, "claim unlink", When::After);
    seal_fails_back_to_active(&fx, "seal.after_claim");
    clear_hooks();

    // The rollback's unlink of the committed sealed L.
    let fx = Fx::active();
    failing_rollback_unlink("seal.after_transition", When::After);
    seal_fails_back_to_active(&fx, "seal.after_transition");
    fx.retry_seal_succeeds();
}

#[test]
fn takeover_reconciles_every_error_after_effect_by_exact_bytes() {
    for what in ["claim install", "transition rename", "link into L", "claim unlink"] {
        let (fx, _) = Fx::sealed();
        arm_takeover_syscall(&fx, what, When::After);
        let lease = fx.takeover().unwrap_or_else(|e| panic!("{what} failing after effect: {e:?}"));
        fx.assert_took_over(&lease);
        clear_hooks();
    }
}

#[test]
fn takeover_failure_cleanup_reconciles_claim_and_rollback_unlinks_failing_after_effect() {
    let (fx, sealed) = Fx::sealed();
    failing_hook("takeover.after_claim");
    arm_takeover_syscall(&fx, "claim unlink", When::After);
    takeover_fails_back_to_seal(&fx, &sealed, "takeover.after_claim");
    clear_hooks();

    let (fx, sealed) = Fx::sealed();
    failing_rollback_unlink("takeover.after_transition", When::After);
    takeover_fails_back_to_seal(&fx, &sealed, "takeover.after_transition");
    fx.retry_takeover_succeeds();
}

// ───────────────────── 3. link / rename / unlink failing BEFORE effect ─────────────────────

#[test]
fn seal_syscalls_failing_before_effect_leave_the_exact_active_lock() {
    for what in ["claim install", "transition rename", "link into L"] {
        let fx = Fx::active();
        // For "link into L", the restore link (the next ".lock" link) works.
        arm_seal_syscall(&fx, what, When::Before);
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
    arm_seal_syscall(&fx, "claim unlink", When::Before);
    let e = fx.seal().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &a), (&fx.claim(), &a)]), "fail closed: the claim fences");
}

#[test]
fn seal_rollback_whose_unlink_fails_once_retries_and_restores() {
    let fx = Fx::active();
    failing_rollback_unlink("seal.after_transition", When::Before);
    seal_fails_back_to_active(&fx, "seal.after_transition");
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
        arm_takeover_syscall(&fx, what, When::Before);
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
    failing_rollback_unlink("takeover.after_transition", When::Before);
    takeover_fails_back_to_seal(&fx, &sealed, "takeover.after_transition");
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
