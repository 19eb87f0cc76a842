//! Seal and takeover while someone else acts between their steps.

#![allow(clippy::disallowed_methods)] // tests stage files by hand

use super::*;

// ───────────────────── 4. an unknown successor appears in the gap ─────────────────────

fn unknown_successors() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("another session's active record", foreign_active("other")),
        ("garbage", b"garbage\n".to_vec()),
        ("a same-session schema-3 active record", schema3_active("s")),
    ]
}

#[test]
fn seal_never_removes_or_overwrites_an_unknown_successor() {
    for (what, bytes) in unknown_successors() {
        let fx = Fx::active();
        let (ctx, b) = (fx.ctx.clone(), bytes.clone());
        set_hook("transition.after_rename", move || std::fs::write(ctx.l(), &b));
        let e = fx.seal().unwrap_err();
        assert_unavailable(&e, Unavailable::TransitionClaimRetained);
        let a = fx.active_raw();
        assert_eq!(
            fx.snap(),
            snap_of(&[(&fx.l(), &bytes), (&fx.transition_claim(), &a), (&fx.handoff(), &a)]),
            "{what}: untouched, claim retained, predecessor at its handoff name, candidate removed"
        );
    }
}

#[test]
fn seal_never_removes_a_directory_that_appears_at_the_primary_path() {
    let fx = Fx::active();
    let ctx = fx.ctx.clone();
    set_hook("transition.after_rename", move || std::fs::create_dir(ctx.l()));
    let e = fx.seal().unwrap_err();
    assert_unavailable(&e, Unavailable::TransitionClaimRetained);
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), b"<dir>"), (&fx.transition_claim(), &a), (&fx.handoff(), &a)]));
}

#[test]
fn takeover_never_removes_or_overwrites_an_unknown_successor() {
    for (what, bytes) in unknown_successors() {
        let (fx, sealed) = Fx::sealed();
        let seen = record_transition_claim(&fx, |_, _| Ok(()));
        let (ctx, b) = (fx.ctx.clone(), bytes.clone());
        set_hook("transition.after_rename", move || std::fs::write(ctx.l(), &b));
        let e = fx.takeover().unwrap_err();
        assert_unavailable(&e, Unavailable::TransitionClaimRetained);
        let claim = seen.borrow().clone().unwrap();
        let retired = fx.retired_for(&new_owner_of(&claim));
        assert_eq!(
            fx.snap(),
            snap_of(&[(&fx.l(), &bytes), (&fx.transition_claim(), &claim), (&retired, &sealed)]),
            "{what}: untouched, claim retained, seal at its retired name"
        );
    }
}

// ───────────────────── 5. a claim-aware candidate in the gap ─────────────────────

/// The background thread that plays the candidate's second transition claim check.
type Leaver = Rc<RefCell<Option<std::thread::JoinHandle<()>>>>;

/// Installs a same-session schema-2 active candidate at `L` in the gap; when `leave_after`
/// is set, a background thread removes exactly that candidate after the delay (its second
/// transition claim check). Returns the candidate bytes and the thread handle slot.
fn candidate_in_gap(fx: &Fx, leave_after: Option<Duration>) -> (Vec<u8>, Leaver) {
    let cand = foreign_active("s");
    assert_eq!(parse_record(&cand).unwrap().schema, crate::lockfile::record::Schema::V2);
    let handle = Rc::new(RefCell::new(None));
    let (ctx, c, h) = (fx.ctx.clone(), cand.clone(), handle.clone());
    set_hook("transition.after_rename", move || {
        std::fs::write(ctx.l(), &c)?;
        if let Some(d) = leave_after {
            let (l, c) = (ctx.l(), c.clone());
            *h.borrow_mut() = Some(std::thread::spawn(move || {
                std::thread::sleep(d);
                if std::fs::read(&l).map(|b| b == c).unwrap_or(false) {
                    std::fs::remove_file(&l).unwrap();
                }
            }));
        }
        Ok(())
    });
    (cand, handle)
}

fn join(h: &Leaver) {
    if let Some(h) = h.borrow_mut().take() {
        h.join().unwrap();
    }
}

#[test]
fn seal_waits_for_a_claim_aware_candidate_to_leave() {
    let fx = Fx::active();
    let (_, h) = candidate_in_gap(&fx, Some(Duration::from_millis(200)));
    let started = Instant::now();
    let out = fx.seal();
    join(&h);
    let out = out.expect("the transition waits for the candidate");
    assert!(started.elapsed() >= Duration::from_millis(200));
    fx.assert_sealed_ok(&out);
}

/// Runs `transition` (a seal or a takeover) with a candidate in the gap that never leaves: it
/// must wait out its bounded link loop, then fail with `TransitionClaimRetained`. Returns the
/// candidate's bytes, for the caller's check of what was kept.
fn gives_up_on_a_candidate_that_never_leaves<T: std::fmt::Debug>(
    fx: &Fx,
    transition: impl FnOnce(&Fx) -> Result<T, LockError>,
) -> Vec<u8> {
    let (cand, _) = candidate_in_gap(fx, None);
    let started = Instant::now();
    let e = transition(fx).unwrap_err();
    let took = started.elapsed();
    // The wait is bounded (19 sleeps of 50 ms per link loop); the upper bound only guards
    // against a hang, since this machine may be loaded.
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(60), "{took:?}");
    assert_unavailable(&e, Unavailable::TransitionClaimRetained);
    assert!(e.to_string().contains("did not release the claimed primary path"), "{e}");
    cand
}

#[test]
fn seal_gives_up_on_a_candidate_that_never_leaves_and_keeps_everything() {
    let fx = Fx::active();
    let cand = gives_up_on_a_candidate_that_never_leaves(&fx, Fx::seal);
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &cand), (&fx.transition_claim(), &a), (&fx.handoff(), &a)]));
}

#[test]
fn takeover_waits_for_a_claim_aware_candidate_to_leave() {
    let (fx, _) = Fx::sealed();
    let (_, h) = candidate_in_gap(&fx, Some(Duration::from_millis(200)));
    let out = fx.takeover();
    join(&h);
    let lease = out.expect("the transition waits for the candidate");
    fx.assert_took_over(&lease);
}

#[test]
fn takeover_gives_up_on_a_candidate_that_never_leaves_and_keeps_everything() {
    let (fx, sealed) = Fx::sealed();
    let seen = record_transition_claim(&fx, |_, _| Ok(()));
    let cand = gives_up_on_a_candidate_that_never_leaves(&fx, Fx::takeover);
    let claim = seen.borrow().clone().unwrap();
    let retired = fx.retired_for(&new_owner_of(&claim));
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &cand), (&fx.transition_claim(), &claim), (&retired, &sealed)]));
}

// ───────────────────────────────── 6. rollback ─────────────────────────────────

#[test]
fn seal_whose_transcript_changes_after_commit_rolls_back_exactly() {
    let fx = Fx::active();
    let ctx = fx.ctx.clone();
    set_hook("seal.after_transition", move || ctx.append_transcript());
    let e = fx.seal().unwrap_err();
    assert!(matches!(e, LockError::TranscriptChanged { .. }), "{e:?}");
    assert_eq!(fx.snap(), fx.only_l(&fx.active_raw()), "exact predecessor, no claim/candidate/handoff");
}

#[test]
fn seal_rollback_that_cannot_restore_retains_the_transition_claim() {
    let fx = Fx::active();
    let (ctx, handoff) = (fx.ctx.clone(), fx.handoff());
    set_hook("seal.after_transition", move || {
        ctx.append_transcript()?;
        std::fs::remove_file(ctx.at(&handoff))
    });
    let e = fx.seal().unwrap_err();
    assert_unavailable(&e, Unavailable::TransitionClaimRetained);
    let snap = fx.snap();
    assert_eq!(snap.get(&fx.transition_claim()), Some(&Bytes(fx.active_raw())), "claim retained: {snap:?}");
    assert!(!snap.keys().any(|k| k.contains(".sealed-candidate.")), "our candidate is ours to remove");
    assert_eq!(
        snap,
        snap_of(&[(&fx.transition_claim(), &fx.active_raw())]),
        "(§5.8 removes the claimed primary first)"
    );
}

#[test]
fn takeover_whose_transcript_changes_after_commit_rolls_back_exactly() {
    let (fx, sealed) = Fx::sealed();
    let ctx = fx.ctx.clone();
    set_hook("takeover.after_transition", move || ctx.append_transcript());
    let e = fx.takeover().unwrap_err();
    assert!(matches!(e, LockError::TranscriptChanged { .. }), "{e:?}");
    assert_eq!(fx.snap(), fx.only_l(&sealed), "exact sealed predecessor, no claim, no retired");
}

#[test]
fn takeover_rollback_that_cannot_restore_retains_the_transition_claim() {
    let (fx, _) = Fx::sealed();
    let seen = record_transition_claim(&fx, |_, _| Ok(()));
    let (ctx, paths, sealed_owner) = (fx.ctx.clone(), fx.site.paths.clone(), fx.lease.owner.expose().to_owned());
    set_hook("takeover.after_transition", move || {
        ctx.append_transcript()?;
        std::fs::remove_file(ctx.at(&paths.sealed_retired(&sealed_owner, &ctx.transition_claim_owner()?)))
    });
    let e = fx.takeover().unwrap_err();
    assert_unavailable(&e, Unavailable::TransitionClaimRetained);
    let claim = seen.borrow().clone().unwrap();
    assert_eq!(fx.snap(), snap_of(&[(&fx.transition_claim(), &claim)]));
}

// ────────────────── 7. a transition claim replaced by someone else ──────────────────

#[test]
fn seal_never_rolls_back_under_a_replaced_transition_claim() {
    let foreign = foreign_active("s");
    // After commit: L stays sealed, the foreign transition claim and the handoff are untouched.
    let fx = Fx::active();
    let (ctx, f, claim) = (fx.ctx.clone(), foreign.clone(), fx.transition_claim());
    let sealed = Rc::new(RefCell::new(Vec::new()));
    let s = sealed.clone();
    set_hook("seal.after_transition", move || {
        *s.borrow_mut() = std::fs::read(ctx.l())?;
        ctx.replace(&claim, &f)?;
        Err(injected())
    });
    let e = fx.seal().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let sealed = sealed.borrow().clone();
    assert!(!parse_record(&sealed).unwrap().is_active());
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &sealed), (&fx.transition_claim(), &foreign), (&fx.handoff(), &a)]));

    // In the gap: L is not restored by a transition that lost its transition claim.
    let fx = Fx::active();
    let (ctx, f, claim) = (fx.ctx.clone(), foreign.clone(), fx.transition_claim());
    set_hook("transition.after_rename", move || ctx.replace(&claim, &f));
    let e = fx.seal().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let a = fx.active_raw();
    assert_eq!(fx.snap(), snap_of(&[(&fx.transition_claim(), &foreign), (&fx.handoff(), &a)]));
}

#[test]
fn takeover_never_rolls_back_under_a_replaced_transition_claim() {
    let foreign = foreign_active("s");
    let (fx, sealed) = Fx::sealed();
    let seen = record_transition_claim(&fx, |_, _| Ok(()));
    let (ctx, f, claim) = (fx.ctx.clone(), foreign.clone(), fx.transition_claim());
    set_hook("takeover.after_transition", move || {
        ctx.replace(&claim, &f)?;
        Err(injected())
    });
    let e = fx.takeover().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let ours = seen.borrow().clone().unwrap();
    let retired = fx.retired_for(&new_owner_of(&ours));
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &ours), (&fx.transition_claim(), &foreign), (&retired, &sealed)]));

    let (fx, sealed) = Fx::sealed();
    let seen = record_transition_claim(&fx, |_, _| Ok(()));
    let (ctx, f, claim) = (fx.ctx.clone(), foreign.clone(), fx.transition_claim());
    set_hook("transition.after_rename", move || ctx.replace(&claim, &f));
    let e = fx.takeover().unwrap_err();
    assert!(matches!(e, LockError::Unavailable { .. }), "{e:?}");
    let ours = seen.borrow().clone().unwrap();
    let retired = fx.retired_for(&new_owner_of(&ours));
    assert_eq!(fx.snap(), snap_of(&[(&fx.transition_claim(), &foreign), (&retired, &sealed)]));
}

// ───────────────────────────────── 8. losers ─────────────────────────────────

#[test]
fn takeover_loses_to_an_existing_transition_claim_and_leaves_it_untouched() {
    // A transition claim that already exists before the takeover starts.
    let (fx, sealed) = Fx::sealed();
    let theirs = foreign_active("s");
    std::fs::write(fx.ctx.transition_claim(), &theirs).unwrap();
    let e = fx.takeover().unwrap_err();
    assert_unavailable(&e, Unavailable::TransitionClaimPresent);
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &sealed), (&fx.transition_claim(), &theirs)]));

    // A transition claim that appears after our check, so our own install meets it.
    let (fx, sealed) = Fx::sealed();
    let theirs = foreign_active("s");
    let (ctx, t) = (fx.ctx.clone(), theirs.clone());
    let fired = Rc::new(Cell::new(false));
    let f = fired.clone();
    set_hook("acquire.before_install", move || {
        f.set(true);
        std::fs::write(ctx.transition_claim(), &t)
    });
    let reached_transition_claim = Rc::new(Cell::new(false));
    let r = reached_transition_claim.clone();
    set_hook("takeover.after_claim", move || {
        r.set(true);
        Ok(())
    });
    let e = fx.takeover().unwrap_err();
    assert!(fired.get() && !reached_transition_claim.get());
    assert_unavailable(&e, Unavailable::TransitionClaimPresent);
    assert_eq!(fx.snap(), snap_of(&[(&fx.l(), &sealed), (&fx.transition_claim(), &theirs)]));
}

#[test]
fn takeover_that_finds_a_live_active_winner_inside_its_transition_claim_conflicts_and_leaves_it() {
    let (fx, _) = Fx::sealed();
    let winner = foreign_active("s");
    let (ctx, w, l) = (fx.ctx.clone(), winner.clone(), fx.l());
    set_hook("takeover.after_claim", move || ctx.replace(&l, &w));
    let e = fx.takeover().unwrap_err();
    assert!(matches!(e, LockError::Conflict { sealed: false, .. }), "{e:?}");
    assert_eq!(fx.snap(), fx.only_l(&winner), "their L untouched, our claim removed");
}
