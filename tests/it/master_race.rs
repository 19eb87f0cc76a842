//! `master handoff` and `master claim` racing from one epoch (seed 000 #9): exactly one
//! winner, every other racer `stale_master`, over 20 trials of two racers and 100 of sixteen.

use serde_json::{Value, json};

use crate::master::{
    Co, Ctl, MixedRace, PASSWORD, PROJECT, Racer, assert_one_winner, err_doc, mref, ok_doc, race, s, strings,
    trial_targets,
};
use crate::support::Run;

/// Seed #9: a handoff and a claim decided from the same epoch start together: exactly one
/// wins, the other gets `stale_master`. 20 trials on one store.
pub(crate) fn check_seed_09(co: &Co) {
    let ids: Vec<Ctl> = ["alice", "bob", "carol"].iter().map(|i| co.reg(i)).collect();
    co.add_operator("ops", PASSWORD);
    let pw = co.pw_file(PASSWORD);
    let (mut handoff_wins, mut claim_wins) = (0, 0);
    for trial in 0..20u64 {
        let st = co.status();
        let epoch = st["master"]["epoch"].as_u64().unwrap();
        let master = ids.iter().find(|c| st["master"]["session_id"] == json!(c.sid)).unwrap();
        let others: Vec<&Ctl> = ids.iter().filter(|c| c.sid != master.sid).collect();
        let (h_to, c_to) = if trial % 2 == 0 { (others[0], others[1]) } else { (others[1], others[0]) };
        let e = epoch.to_string();
        let racers = [
            Racer {
                url: None,
                label: "handoff".into(),
                args: strings(&[
                    "master",
                    "handoff",
                    "--project",
                    PROJECT,
                    "--session",
                    &master.sid,
                    "--token-file",
                    s(&master.token_file),
                    "--to",
                    &h_to.identity,
                    "--expect-epoch",
                    &e,
                    "--freshness-seconds",
                    "86400",
                    "--json",
                ]),
                // The claim spends ~30 ms in argon2 before its transaction; stagger the
                // handoff on some trials so both verbs get to win.
                delay_ms: (trial % 4) * 30,
            },
            Racer {
                url: None,
                label: "claim".into(),
                args: strings(&[
                    "master",
                    "claim",
                    "--project",
                    PROJECT,
                    "--to",
                    &c_to.identity,
                    "--operator",
                    "ops",
                    "--password-file",
                    s(&pw),
                    "--expect-epoch",
                    &e,
                    "--freshness-seconds",
                    "86400",
                    "--json",
                ]),
                delay_ms: 0,
            },
        ];
        let results = race(co, &racers);
        let winners: Vec<&(String, Run)> = results.iter().filter(|(_, r)| r.code == 0).collect();
        assert_eq!(winners.len(), 1, "trial {trial}: {results:#?}");
        let (label, win) = winners[0];
        let winner_target = if label == "handoff" { h_to } else { c_to };
        let v = ok_doc(win);
        assert_eq!((&v["new_master"], &v["epoch"]), (&mref(winner_target), &json!(epoch + 1)), "trial {trial}");
        for (_, r) in results.iter().filter(|(l, _)| l != label) {
            let e = err_doc(r, 3, "stale_master");
            assert_eq!((&e["expected_epoch"], &e["epoch"]), (&json!(epoch), &json!(epoch + 1)), "trial {trial}");
        }
        co.assert_master(Some(winner_target), epoch + 1);
        if label == "handoff" { handoff_wins += 1 } else { claim_wins += 1 }
    }
    eprintln!("seed_09: handoff won {handoff_wins}, claim won {claim_wins} of 20 trials");
    // One MasterPreempted per change of master, none for the losers.
    let total: usize = ids.iter().map(|c| co.events(&c.identity).len()).sum();
    assert_eq!(total, 20);
}

#[test]
fn seed_09_concurrent_claim_and_handoff_exactly_one_wins() {
    check_seed_09(&Co::new());
}

/// 16 processes (10 handoffs by the master, 6 operator claims; all to different targets)
/// start together from the same epoch: exactly one wins, 15 get `stale_master`, and status
/// names the winner's target at epoch + 1. 100 trials on one store.
#[test]
fn concurrent_verbs_elect_exactly_one_winner() {
    const TRIALS: u64 = 100;
    const N: usize = 16;
    let co = Co::new();
    // 17 identities: whoever is master, 16 others remain as targets.
    let ids: Vec<Ctl> = (0..=N).map(|i| co.reg(&format!("id{i:02}"))).collect();
    // One operator per racer: the throttle counts every attempt (even a right password)
    // before verifying, so one operator's parallel claims would wait 0.25, 0.5, 1, 2 s...
    // behind each other; this test is about the epoch CAS, not the throttle.
    let operators: Vec<String> = (0..N).map(|i| format!("ops{i}")).collect();
    for op in &operators {
        co.add_operator(op, PASSWORD);
    }
    let pw = co.pw_file(PASSWORD);
    // Each trial decides from the status read that checked the previous one.
    let mut st = co.status();
    let start_epoch = st["master"]["epoch"].as_u64().unwrap();
    let mut wins = std::collections::BTreeMap::<&str, u64>::new();
    for trial in 0..TRIALS {
        let epoch = st["master"]["epoch"].as_u64().unwrap();
        assert_eq!(epoch, start_epoch + trial);
        let (master, targets) = trial_targets(&ids, &st, trial);
        let e = epoch.to_string();
        // On odd trials the handoffs wait 100 ms, letting the claims (which spend ~30 ms
        // each in argon2 first) reach the store first: both verbs get to win.
        let handoff_delay = if trial % 2 == 1 { 100 } else { 0 };
        let racers: Vec<Racer> = targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                // 10 handoffs and 6 claims (argon2 makes a claim ~5x a handoff), interleaved and
                // shifted each trial.
                let handoff = (i + trial as usize) % 8 >= 3;
                let race =
                    MixedRace { master, pw: &pw, epoch: &e, handoff_delay, extra: &["--freshness-seconds", "86400"] };
                race.racer(t, &operators[i], handoff, None)
            })
            .collect();
        assert_eq!(racers.len(), N);
        assert_eq!(racers.iter().filter(|r| r.label.starts_with("claim:")).count(), 6);
        let results = race(&co, &racers);
        let w = assert_one_winner(&results, &targets, epoch, trial);
        let target = targets[w];
        st = co.status();
        assert_eq!(st["master"], json!({"identity": target.identity, "session_id": target.sid, "epoch": epoch + 1}));
        *wins.entry(if results[w].0.starts_with("handoff") { "handoff" } else { "claim" }).or_default() += 1;
    }
    eprintln!("concurrent_verbs_elect_exactly_one_winner: wins by verb {wins:?}");
    co.assert_master(ids.iter().find(|c| st["master"]["session_id"] == json!(c.sid)), start_epoch + TRIALS);
    // One MasterPreempted per trial across all inboxes; the audit has one ok master verb
    // per trial and 15 stale_master refusals.
    let events: usize = ids.iter().map(|c| co.events(&c.identity).len()).sum();
    assert_eq!(events as u64, TRIALS);
    let audit = co.audit(Some(PROJECT));
    let master_verbs: Vec<&Value> =
        audit.iter().filter(|a| a["verb"] == "master.handoff" || a["verb"] == "master.claim").collect();
    let ok = master_verbs.iter().filter(|a| a["result"] == "ok").count() as u64;
    let stale = master_verbs.iter().filter(|a| a["result"] == "stale_master").count() as u64;
    assert_eq!((ok, stale, master_verbs.len() as u64), (TRIALS, 15 * TRIALS, 16 * TRIALS));
}
