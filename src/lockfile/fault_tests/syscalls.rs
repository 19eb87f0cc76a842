//! Seal and takeover with an error at each failpoint, and with `link`/`rename`/`unlink`
//! failing after or before their effect.

#![allow(clippy::disallowed_methods)] // tests stage files by hand

use super::*;

/// The transition under test: a seal of a fresh active lock, or a certified takeover of a
/// fresh seal. Most faults must end the same way in both.
#[derive(Clone, Copy)]
enum Op {
    Seal,
    Takeover,
}

impl Op {
    /// A fresh fixture and the exact `L` a failed run must leave.
    fn fixture(self) -> (Fx, Vec<u8>) {
        match self {
            Op::Seal => {
                let fx = Fx::active();
                let active = fx.active_raw();
                (fx, active)
            }
            Op::Takeover => Fx::sealed(),
        }
    }

    /// The failpoint right after the transition claim is installed.
    fn after_transition_claim(self) -> &'static str {
        match self {
            Op::Seal => "seal.after_claim",
            Op::Takeover => "takeover.after_claim",
        }
    }

    /// The failpoint right after the transition committed.
    fn after_transition(self) -> &'static str {
        match self {
            Op::Seal => "seal.after_transition",
            Op::Takeover => "takeover.after_transition",
        }
    }

    /// Arms one of the operation's syscalls, by the step `what` it serves, to fail `when`
    /// relative to its effect. The transition claim's own link and unlink are the same in both;
    /// the rest is armed inside the transition claim, so nothing earlier can consume it (for a
    /// takeover, the retired name is only known once the transition claim names the new owner).
    fn arm(self, fx: &Fx, what: &str, when: When) {
        match (self, what) {
            (_, "claim install") => inject_syscall("link", ".claim", when, eio(), 1),
            (_, "claim unlink") => inject_syscall("unlink", ".claim", when, eio(), 1),
            (Op::Seal, "transition rename") => inject_syscall("rename", &fx.handoff(), when, eio(), 1),
            (Op::Seal, "link into L") => set_hook("seal.after_claim", move || {
                inject_syscall("link", ".lock", when, eio(), 1);
                Ok(())
            }),
            (Op::Takeover, "transition rename") => {
                let paths = fx.site.paths.clone();
                let sealed_owner = fx.lease.owner.expose().to_owned();
                record_transition_claim(fx, move |_, new_owner| {
                    inject_syscall("rename", &paths.sealed_retired(&sealed_owner, new_owner), when, eio(), 1);
                    Ok(())
                });
            }
            (Op::Takeover, "link into L") => {
                record_transition_claim(fx, move |_, _| {
                    inject_syscall("link", ".lock", when, eio(), 1);
                    Ok(())
                });
            }
            _ => unreachable!("unknown step {what}"),
        }
    }

    /// Runs the operation and returns its error.
    fn fails(self, fx: &Fx) -> LockError {
        match self {
            Op::Seal => fx.seal().unwrap_err(),
            Op::Takeover => fx.takeover().unwrap_err(),
        }
    }

    /// Runs the operation, which must succeed (`context` names the fault it survived).
    fn succeeds(self, fx: &Fx, context: &str) {
        match self {
            Op::Seal => fx.assert_sealed_ok(&fx.seal().unwrap_or_else(|e| panic!("{context}: {e:?}"))),
            Op::Takeover => fx.assert_took_over(&fx.takeover().unwrap_or_else(|e| panic!("{context}: {e:?}"))),
        }
    }

    fn retry_succeeds(self, fx: &Fx) {
        match self {
            Op::Seal => fx.retry_seal_succeeds(),
            Op::Takeover => fx.retry_takeover_succeeds(),
        }
    }

    /// The operation fails with the error of failpoint `fp` and leaves exactly `start` at L
    /// (no transition claim, candidate, handoff or retired record).
    fn fails_back(self, fx: &Fx, start: &[u8], fp: &str) {
        assert_failpoint_error(&self.fails(fx), fp);
        assert_eq!(fx.snap(), fx.only_l(start), "{fp}: exactly the L it started from");
    }

    /// Arms failpoint `fp` with `arm` on a fresh fixture; the operation fails back to it and
    /// a retry then succeeds.
    fn fails_back_then_retries(self, arm: fn(&'static str), fp: &'static str) {
        let (fx, start) = self.fixture();
        arm(fp);
        self.fails_back(&fx, &start, fp);
        self.retry_succeeds(&fx);
    }
}

/// Fails failpoint `fp` (a rollback point) after arming the rollback's unlink of L to fail.
fn failing_rollback_unlink(fp: &'static str, when: When) {
    set_hook(fp, move || {
        inject_syscall("unlink", ".lock", when, eio(), 1);
        Err(injected())
    });
}

// ───────────────────────── 1. an Err returned at each failpoint ─────────────────────────

#[test]
fn seal_error_before_the_primary_moves_keeps_the_exact_active_lock_and_drops_the_transition_claim() {
    for fp in ["seal.after_claim", "transition.before_rename"] {
        Op::Seal.fails_back_then_retries(failing_hook, fp);
    }
}

#[test]
fn seal_error_after_the_rename_restores_the_exact_active_lock() {
    // The primary path is in its gap (L missing): the failure goes through the same restore as
    // a failed link (§5.7 step 3), so the exact predecessor is back and the transition claim
    // gone.
    Op::Seal.fails_back_then_retries(failing_hook, "transition.after_rename");
}

#[test]
fn seal_error_before_the_link_restores_the_predecessor_when_the_restore_link_works() {
    Op::Seal.fails_back_then_retries(failing_once, "transition.before_link");
}

#[test]
fn seal_error_before_every_link_retains_the_transition_claim_when_the_restore_fails_too() {
    let fx = Fx::active();
    failing_hook("transition.before_link");
    let e = fx.seal().unwrap_err();
    assert_unavailable(&e, Unavailable::TransitionClaimRetained);
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.transition_claim(), &a), (&fx.handoff(), &a)]));
}

#[test]
fn seal_error_after_commit_rolls_back_to_the_exact_active_lock() {
    for fp in ["transition.after_link", "seal.after_transition"] {
        Op::Seal.fails_back_then_retries(failing_hook, fp);
    }
}

#[test]
fn takeover_error_before_the_primary_moves_keeps_the_exact_seal_and_drops_the_transition_claim() {
    for fp in ["takeover.after_claim", "transition.before_rename"] {
        Op::Takeover.fails_back_then_retries(failing_hook, fp);
    }
}

#[test]
fn takeover_error_after_the_rename_restores_the_seal() {
    let (fx, sealed) = Fx::sealed();
    failing_hook("transition.after_rename");
    Op::Takeover.fails_back(&fx, &sealed, "transition.after_rename");
}

#[test]
fn takeover_error_before_the_link_restores_the_seal_when_the_restore_link_works() {
    Op::Takeover.fails_back_then_retries(failing_once, "transition.before_link");
}

#[test]
fn takeover_error_before_every_link_retains_the_transition_claim_when_the_restore_fails_too() {
    let (fx, sealed) = Fx::sealed();
    let seen = record_transition_claim(&fx, |_, _| Ok(()));
    failing_hook("transition.before_link");
    let e = fx.takeover().unwrap_err();
    assert_unavailable(&e, Unavailable::TransitionClaimRetained);
    let claim = seen.borrow().clone().unwrap();
    let retired = fx.retired_for(&new_owner_of(&claim));
    assert_eq!(fx.snap(), snap_of(&[(&fx.transition_claim(), &claim), (&retired, &sealed)]));
}

#[test]
fn takeover_error_after_commit_rolls_back_to_the_exact_seal() {
    for fp in ["transition.after_link", "takeover.after_transition"] {
        Op::Takeover.fails_back_then_retries(failing_hook, fp);
    }
}

// ───────────────────── 2. link / rename / unlink failing AFTER effect ─────────────────────

/// Each of the operation's syscalls failing after its effect must still end in a clean,
/// successful run.
fn reconciles_every_error_after_effect_by_exact_bytes(op: Op) {
    for what in ["claim install", "transition rename", "link into L", "claim unlink"] {
        let (fx, _) = op.fixture();
        op.arm(&fx, what, When::After);
        op.succeeds(&fx, &format!("{what} failing after effect"));
        clear_hooks();
    }
}

/// The transition claim unlink of a failure cleanup, then the rollback's unlink of the
/// committed L, each failing after its effect: the operation still fails back to exactly where
/// it began.
fn failure_cleanup_reconciles_transition_claim_and_rollback_unlinks_failing_after_effect(op: Op) {
    let (fx, start) = op.fixture();
    failing_hook(op.after_transition_claim());
    op.arm(&fx, "claim unlink", When::After);
    op.fails_back(&fx, &start, op.after_transition_claim());
    clear_hooks();

    let (fx, start) = op.fixture();
    failing_rollback_unlink(op.after_transition(), When::After);
    op.fails_back(&fx, &start, op.after_transition());
    op.retry_succeeds(&fx);
}

#[test]
fn seal_reconciles_every_error_after_effect_by_exact_bytes() {
    reconciles_every_error_after_effect_by_exact_bytes(Op::Seal);
}

#[test]
fn seal_failure_cleanup_reconciles_transition_claim_and_rollback_unlinks_failing_after_effect() {
    failure_cleanup_reconciles_transition_claim_and_rollback_unlinks_failing_after_effect(Op::Seal);
}

#[test]
fn takeover_reconciles_every_error_after_effect_by_exact_bytes() {
    reconciles_every_error_after_effect_by_exact_bytes(Op::Takeover);
}

#[test]
fn takeover_failure_cleanup_reconciles_transition_claim_and_rollback_unlinks_failing_after_effect() {
    failure_cleanup_reconciles_transition_claim_and_rollback_unlinks_failing_after_effect(Op::Takeover);
}

// ───────────────────── 3. link / rename / unlink failing BEFORE effect ─────────────────────

/// Each of the operation's syscalls failing before its effect leaves exactly the `L` it
/// began with, and a retry succeeds.
fn syscalls_failing_before_effect_leave_the_exact_lock(op: Op) {
    for what in ["claim install", "transition rename", "link into L"] {
        let (fx, start) = op.fixture();
        // For "link into L", the restore link (the next ".lock" link) works.
        op.arm(&fx, what, When::Before);
        assert_unavailable(&op.fails(&fx), Unavailable::Io);
        assert_eq!(fx.snap(), fx.only_l(&start), "{what} failing before effect");
        op.retry_succeeds(&fx);
    }
}

/// The rollback's unlink of the committed `L` fails once: retried, and `L` restored.
fn rollback_whose_unlink_fails_once_retries_and_restores(op: Op) {
    let (fx, start) = op.fixture();
    failing_rollback_unlink(op.after_transition(), When::Before);
    op.fails_back(&fx, &start, op.after_transition());
}

#[test]
fn seal_syscalls_failing_before_effect_leave_the_exact_active_lock() {
    syscalls_failing_before_effect_leave_the_exact_lock(Op::Seal);
}

#[test]
fn seal_whose_link_and_restore_link_both_fail_retains_the_transition_claim() {
    let fx = Fx::active();
    set_hook("seal.after_claim", || {
        inject_syscall("link", ".lock", When::Before, eio(), 2);
        Ok(())
    });
    let e = fx.seal().unwrap_err();
    assert_unavailable(&e, Unavailable::TransitionClaimRetained);
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.transition_claim(), &a), (&fx.handoff(), &a)]));
}

#[test]
fn seal_failure_cleanup_whose_transition_claim_unlink_fails_keeps_it_and_the_active_lock() {
    let fx = Fx::active();
    failing_hook("seal.after_claim");
    Op::Seal.arm(&fx, "claim unlink", When::Before);
    let e = fx.seal().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &a), (&fx.transition_claim(), &a)]), "fail closed: the claim fences");
}

#[test]
fn seal_rollback_whose_unlink_fails_once_retries_and_restores() {
    rollback_whose_unlink_fails_once_retries_and_restores(Op::Seal);
}

/// QWEN_FORMAT §5.6 step 13 (used by §5.10 step 14): a transition claim that cannot be unlinked
/// is **unavailable**; only the retired/candidate removals ignore errors. A seal or takeover
/// that reports success must therefore leave no transition claim behind.
#[test]
fn seal_whose_success_path_transition_claim_unlink_fails_must_not_report_success() {
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
            let transition_claim_ok = snap.get(&fx.transition_claim()).is_none_or(|c| c.0 == fx.active_raw());
            assert!(snap.len() <= 2 && transition_claim_ok, "{snap:?}");
            assert!(*l == fx.active_raw() || !parse_record(l).unwrap().is_active(), "one owner at most");
        }
    }
}

#[test]
fn takeover_syscalls_failing_before_effect_leave_the_exact_seal() {
    syscalls_failing_before_effect_leave_the_exact_lock(Op::Takeover);
}

#[test]
fn takeover_failure_cleanup_whose_transition_claim_unlink_fails_keeps_it_and_the_seal() {
    let (fx, sealed) = Fx::sealed();
    let seen = record_transition_claim(&fx, |_, _| Err(injected()));
    inject_syscall("unlink", ".claim", When::Before, eio(), 1);
    let e = fx.takeover().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let claim = seen.borrow().clone().unwrap();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &sealed), (&fx.transition_claim(), &claim)]));
}

#[test]
fn takeover_rollback_whose_unlink_fails_once_retries_and_restores() {
    rollback_whose_unlink_fails_once_retries_and_restores(Op::Takeover);
}

/// See the seal variant: a takeover that reports success must leave no transition claim behind.
#[test]
fn takeover_whose_success_path_transition_claim_unlink_fails_must_not_report_success() {
    let (fx, sealed) = Fx::sealed();
    inject_syscall("unlink", ".claim", When::Before, eio(), 1);
    let result = fx.takeover();
    clear_hooks();
    match result {
        Ok(lease) => fx.assert_took_over(&lease),
        Err(e) => {
            assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
            let snap = fx.snap();
            assert!(
                snap.get(&fx.l()).map(|b| &b.0) == Some(&sealed) || snap.contains_key(&fx.transition_claim()),
                "{snap:?}"
            );
        }
    }
}
