//! Race soak: many real processes released together on one session, trial after trial.
//!
//! CI runs a small variant; `scripts/soak.sh` runs the full one (WRITERCTL_SOAK_TRIALS=1000)
//! and prints the figures.

use std::time::Instant;

use crate::support::*;

const GATE: &str = "WRITERCTL_SESSION_WRITER_LEASE";

fn trials(default: usize) -> usize {
    std::env::var("WRITERCTL_SOAK_TRIALS").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn seal_a_session(env: &TestEnv, session: &str) -> std::path::PathBuf {
    let chats = env.runtime().join("chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::write(chats.join(format!("{session}.jsonl")), b"{\"turn\":1}\n").unwrap();
    let tok = env.tmp.path().join(format!("{session}.a.token"));
    let me = std::process::id().to_string();
    env.run_env(
        &["acquire", "--json", "--managed", "--session", session, "--pid", &me, "--token-file", tok.to_str().unwrap()],
        GATE,
        "1",
    )
    .assert_ok();
    tok
}

fn lock_files(env: &TestEnv, session: &str) -> Vec<String> {
    env.lock_dir_names().into_iter().filter(|n| n.starts_with(&format!("{session}.lock"))).collect()
}

/// 64 certified takeovers of one sealed record per trial: exactly one owner, every loser
/// `session_writer_conflict` or `session_writer_unavailable`, no residue.
#[test]
fn sixty_four_takeovers_of_one_seal_elect_exactly_one_owner_every_trial() {
    let n = trials(6);
    let env = TestEnv::new();
    let me = std::process::id().to_string();
    let started = Instant::now();
    let (mut conflicts, mut unavailable) = (0, 0);
    for trial in 0..n {
        let s = format!("soak-{trial}");
        let tok = seal_a_session(&env, &s);
        env.run_env(&["seal", "--json", "--session", &s, "--token-file", tok.to_str().unwrap()], GATE, "1").assert_ok();
        let cmds: Vec<(&str, Vec<String>)> =
            (0..64).map(|_| ("takeover", args(&["takeover", "--json", "--session", &s, "--pid", &me]))).collect();
        let out = race_commands(&env, &cmds, &[(GATE, "1")]);
        let winners = out.iter().filter(|(_, c, _)| *c == 0).count();
        assert_eq!(winners, 1, "trial {trial}: {:?}", out.iter().map(|o| o.1).collect::<Vec<_>>());
        for (_, code, _) in &out {
            match code {
                0 => {}
                3 => conflicts += 1,
                75 => unavailable += 1,
                other => panic!("trial {trial}: a loser exited {other}"),
            }
        }
        assert_eq!(lock_files(&env, &s), vec![format!("{s}.lock")], "trial {trial}: residue");
    }
    eprintln!(
        "soak: 64 takeovers x {n} trials: {n} winners, {conflicts} conflicts, {unavailable} unavailable, {:?}",
        started.elapsed()
    );
}

/// Takeovers, ordinary acquires, the owner's release and the owner's seal, all at once on
/// one active session, per trial: never two owners, seal and release never both succeed, and
/// the lock ends as exactly the winner's record (or the seal, or nothing).
#[test]
fn mixed_racers_never_produce_two_owners() {
    let n = trials(10);
    let env = TestEnv::new();
    let me = std::process::id().to_string();
    let started = Instant::now();
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for trial in 0..n {
        let s = format!("mixed-{trial}");
        let tok = seal_a_session(&env, &s);
        let t = tok.to_str().unwrap().to_owned();
        let mut cmds: Vec<(&str, Vec<String>)> = vec![
            ("seal", args(&["seal", "--json", "--session", &s, "--token-file", &t])),
            ("release", args(&["release", "--json", "--session", &s, "--token-file", &t])),
        ];
        for _ in 0..6 {
            cmds.push(("takeover", args(&["takeover", "--json", "--session", &s, "--pid", &me])));
            cmds.push(("acquire", args(&["acquire", "--json", "--session", &s, "--pid", &me])));
        }
        let out = race_commands(&env, &cmds, &[(GATE, "1")]);
        let ok = |label: &str| out.iter().filter(|(l, c, _)| l == label && *c == 0).count();
        let (sealed, released) = (ok("seal"), ok("release"));
        assert!(sealed + released <= 1, "trial {trial}: seal and release both succeeded");
        let new_owners: Vec<&(String, i32, String)> =
            out.iter().filter(|(l, c, _)| (l == "takeover" || l == "acquire") && *c == 0).collect();
        assert!(new_owners.len() <= 1, "trial {trial}: {} new owners", new_owners.len());
        let lock = std::fs::read_to_string(env.lock(&s)).ok();
        match (new_owners.first(), &lock) {
            (Some((_, _, stdout)), Some(raw)) => {
                let j: serde_json::Value = serde_json::from_str(stdout).unwrap();
                let token = j["owner_token"].as_str().unwrap();
                assert!(raw.contains(token), "trial {trial}: the lock is not the winner's");
            }
            (Some(_), None) => panic!("trial {trial}: a winner without a lock"),
            (None, Some(raw)) => {
                let v: serde_json::Value = serde_json::from_str(raw).unwrap();
                let state = v["state"].as_str().unwrap_or("");
                assert!(
                    (sealed == 1 && state == "sealed") || (sealed == 0 && released == 0 && state == "active"),
                    "trial {trial}: unexpected lock {state} (sealed {sealed}, released {released})"
                );
            }
            (None, None) => assert_eq!(released, 1, "trial {trial}: the lock vanished without a release"),
        }
        assert!(lock_files(&env, &s).len() <= 1, "trial {trial}: residue {:?}", lock_files(&env, &s));
        let key = format!("seal={sealed} release={released} takeover={} acquire={}", ok("takeover"), ok("acquire"));
        *outcomes.entry(key).or_default() += 1;
    }
    eprintln!("soak: mixed racers x {n} trials in {:?}: {outcomes:?}", started.elapsed());
}
