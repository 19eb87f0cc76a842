//! `writerctl status --format prometheus [--output F]` on a runtime directory staged in every
//! state: the exact values, no id as a label (or anywhere), the atomic `--output`, and
//! `promtool check metrics` on the result.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::*;

/// One session per state, with ids distinctive enough to spot anywhere in the output.
struct Sessions {
    live: &'static str,
    stale: &'static str,
    sealed: &'static str,
    claimed: &'static str,
    bad: &'static str,
    residue: &'static str,
}

const ID: Sessions = Sessions {
    live: "m-live-a1b2",
    stale: "m-stale-c3d4",
    sealed: "m-sealed-e5f6",
    claimed: "m-claim-g7h8",
    bad: "m-bad-i9j0",
    residue: "m-residue-k1l2",
};
const OWNERS: [&str; 4] = [
    "11111111-1111-4111-8111-111111111111",
    "22222222-2222-4222-8222-222222222222",
    "33333333-3333-4333-8333-333333333333",
    "44444444-4444-4444-8444-444444444444",
];
/// `sealed_at` of the records `qwen_sealed` writes.
const SEALED_AT: u64 = 1_785_196_801; // 2026-07-28T00:00:01Z
/// The mtime given to the staged transition claim.
const CLAIM_WRITTEN: u64 = 1_700_000_000;

/// What the staging left to look for in the output (it must find none of it).
struct Staged {
    _holder: LiveHolder,
    secrets: Vec<String>,
}

/// One session in every state, and one of every side-file kind beside a missing primary.
fn stage_every_state(env: &TestEnv) -> Staged {
    let holder = LiveHolder::start();
    let token_file = env.acquire_for(ID.live, holder.pid());
    let token = std::fs::read_to_string(token_file).unwrap().trim().to_string();
    stage(&env.lock(ID.stale), qwen_active_dead(ID.stale, OWNERS[0]).as_bytes());
    stage(&env.lock(ID.sealed), qwen_sealed(ID.sealed, OWNERS[1]).as_bytes());
    // A sealed primary under a claim is in transition, not sealed.
    stage(&env.lock(ID.claimed), qwen_sealed(ID.claimed, OWNERS[2]).as_bytes());
    let claim = env.lock_dir().join(format!("{}.lock.claim", ID.claimed));
    stage(&claim, qwen_active_dead(ID.claimed, OWNERS[3]).as_bytes());
    let f = std::fs::File::options().write(true).open(&claim).unwrap();
    f.set_modified(UNIX_EPOCH + Duration::from_secs(CLAIM_WRITTEN)).unwrap();
    stage(&env.lock(ID.bad), b"{ not a record");
    let l = format!("{}.lock", ID.residue);
    for name in [
        format!("{l}.released.x"),
        format!("{l}.stale.1.u"),
        format!("{l}.reclaim.o"),
        format!("{l}.handoff.o"),
        format!("{l}.sealed.o.n"),
        format!("{l}.sealed-candidate.o"),
        format!("{l}.o.tmp"),
        format!("{l}.backup"),
    ] {
        stage(&env.lock_dir().join(name), b"side file");
    }
    let mut secrets: Vec<String> =
        [ID.live, ID.stale, ID.sealed, ID.claimed, ID.bad, ID.residue].map(String::from).to_vec();
    secrets.extend(OWNERS.map(String::from));
    secrets.push(token);
    Staged { _holder: holder, secrets }
}

/// Every series as `name{labels}` (without the `runtime_dir` label, checked to be R) → value.
fn series(env: &TestEnv, text: &str) -> BTreeMap<String, f64> {
    let dir_label = format!("runtime_dir=\"{}\"", env.runtime().display());
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (key, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line}"));
        assert!(key.contains(&dir_label), "{line} lacks {dir_label}");
        let key = key.replace(&format!("{dir_label},"), "").replace(&dir_label, "").replace("{}", "");
        assert!(out.insert(key, value.parse::<f64>().unwrap()).is_none(), "duplicate series: {line}");
    }
    out
}

fn prometheus(env: &TestEnv, extra: &[&str]) -> Run {
    let mut args = vec!["status", "--format", "prometheus"];
    args.extend_from_slice(extra);
    env.run(&args)
}

fn unix(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// `value` lies in [lo, hi], allowing the output's millisecond rounding.
#[track_caller]
fn assert_between(name: &str, value: f64, lo: f64, hi: f64) {
    assert!(value >= lo - 0.001 && value <= hi + 0.001, "{name} = {value}, expected within [{lo}, {hi}]");
}

#[test]
fn every_state_is_counted_exactly_and_no_id_appears() {
    let env = TestEnv::new();
    let staged = stage_every_state(&env);
    let before_tree = tree(&env.runtime());
    let before = SystemTime::now();
    let r = prometheus(&env, &[]);
    let after = SystemTime::now();
    r.assert_ok();
    for secret in &staged.secrets {
        assert!(!r.stdout.contains(secret.as_str()), "{secret} appears in the metrics:\n{}", r.stdout);
    }
    let mut got = series(&env, &r.stdout);
    let scan_at = got.remove("writerctl_status_scan_timestamp_seconds").unwrap();
    assert_between("scan timestamp", scan_at, unix(before), unix(after));
    let took = got.remove("writerctl_status_scan_duration_seconds").unwrap();
    assert_between("scan duration", took, 0.0, unix(after) - unix(before));
    let sealed_age = got.remove("writerctl_oldest_sealed_age_seconds").unwrap();
    assert_between("sealed age", sealed_age, unix(before) - SEALED_AT as f64, unix(after) - SEALED_AT as f64);
    let claim_age = got.remove("writerctl_oldest_claim_age_seconds").unwrap();
    assert_between("claim age", claim_age, unix(before) - CLAIM_WRITTEN as f64, unix(after) - CLAIM_WRITTEN as f64);
    let want: BTreeMap<String, f64> = [
        ("writerctl_locks{state=\"active_live\"}", 1.0),
        ("writerctl_locks{state=\"active_stale\"}", 1.0),
        ("writerctl_locks{state=\"sealed\"}", 1.0),
        ("writerctl_locks{state=\"in_transition\"}", 1.0),
        ("writerctl_locks{state=\"malformed\"}", 1.0),
        ("writerctl_side_files{kind=\"released\"}", 1.0),
        ("writerctl_side_files{kind=\"sealed_candidate\"}", 1.0),
        ("writerctl_side_files{kind=\"handoff\"}", 1.0),
        ("writerctl_side_files{kind=\"sealed_retired\"}", 1.0),
        ("writerctl_side_files{kind=\"stale\"}", 1.0),
        ("writerctl_side_files{kind=\"reclaim_guard\"}", 1.0),
        ("writerctl_side_files{kind=\"install_temp\"}", 1.0),
        ("writerctl_side_files{kind=\"unknown\"}", 1.0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(got, want);
    assert_eq!(tree(&env.runtime()), before_tree, "status --format prometheus changed the runtime directory");
}

#[test]
fn an_empty_runtime_directory_reports_every_series_as_zero() {
    let env = TestEnv::new();
    let r = prometheus(&env, &[]);
    r.assert_ok();
    let got = series(&env, &r.stdout);
    assert_eq!(got.len(), 5 + 8 + 4, "{}", r.stdout);
    for (k, v) in &got {
        if !k.starts_with("writerctl_status_scan_") {
            assert_eq!(*v, 0.0, "{k}");
        }
    }
    assert!(!env.runtime().join("tmp").exists(), "status created the lock directory");
}

#[test]
fn one_session_counts_only_that_session() {
    let env = TestEnv::new();
    let _staged = stage_every_state(&env);
    let r = prometheus(&env, &["--session", ID.claimed]);
    r.assert_ok();
    assert!(!r.stdout.contains(ID.claimed));
    let got = series(&env, &r.stdout);
    let counted: f64 = got
        .iter()
        .filter(|(k, _)| k.starts_with("writerctl_locks") || k.starts_with("writerctl_side"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(counted, 1.0, "{}", r.stdout);
    assert_eq!(got["writerctl_locks{state=\"in_transition\"}"], 1.0);
    assert_eq!(got["writerctl_oldest_sealed_age_seconds"], 0.0, "a sealed primary under a claim is not waiting");
    assert!(got["writerctl_oldest_claim_age_seconds"] > 0.0);
}

/// Every file name in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    v.sort();
    v
}

/// The series without those that change from run to run (times and ages).
fn stable(env: &TestEnv, text: &str) -> BTreeMap<String, f64> {
    let mut s = series(env, text);
    s.retain(|k, _| !k.ends_with("_seconds"));
    s
}

#[test]
fn output_replaces_the_file_atomically_and_leaves_nothing_else() {
    let env = TestEnv::new();
    let _staged = stage_every_state(&env);
    let textfiles = env.tmp.path().join("textfile");
    std::fs::create_dir(&textfiles).unwrap();
    let out = textfiles.join("writerctl.prom");
    std::fs::write(&out, "stale content\n").unwrap();
    let r = prometheus(&env, &["--output", out.to_str().unwrap()]);
    r.assert_ok();
    assert_eq!(r.stdout, "", "--output prints nothing");
    let j: serde_json::Value = prometheus(&env, &["--json", "--output", out.to_str().unwrap()]).assert_ok().json();
    assert_eq!(j, serde_json::json!({"output": out.display().to_string()}));
    let written = std::fs::read_to_string(&out).unwrap();
    let printed = prometheus(&env, &[]).assert_ok().stdout.clone();
    assert_eq!(stable(&env, &written), stable(&env, &printed));
    assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o644, "node_exporter must read it");
    assert_eq!(names(&textfiles), vec!["writerctl.prom"], "a temp file was left behind");
}

#[test]
fn bad_output_paths_and_flag_mixes_are_usage_errors_that_write_nothing() {
    let env = TestEnv::new();
    let _staged = stage_every_state(&env);
    let before = tree(env.tmp.path());
    let missing = env.tmp.path().join("no-such-dir/writerctl.prom");
    let r = prometheus(&env, &["--json", "--output", missing.to_str().unwrap()]);
    r.assert_error(2, "invalid_argument");
    let e: ErrorDoc = r.json();
    assert!(e.error.message.contains("does not exist"), "{}", r.stdout);
    let elsewhere = env.tmp.path().join("m.prom");
    env.run(&["status", "--json", "--output", elsewhere.to_str().unwrap()]).assert_error(2, "invalid_argument");
    prometheus(&env, &["--json"]).assert_error(2, "invalid_argument");
    // A scan that cannot run leaves the previous file alone (its timestamp then goes stale).
    let gone = env.tmp.path().join("no-such-runtime-dir");
    let (out, gone) = (elsewhere.to_str().unwrap(), gone.to_str().unwrap());
    let r = env.run_raw(&["status", "--json", "--format", "prometheus", "--output", out, "--runtime-dir", gone]);
    r.assert_error(2, "runtime_dir_missing");
    assert_eq!(tree(env.tmp.path()), before, "a refused run wrote something");
}

#[test]
fn promtool_accepts_the_output_for_every_state() {
    let Some(promtool) = crate::deploy::tool("promtool_accepts_the_output_for_every_state", "promtool") else {
        return;
    };
    let env = TestEnv::new();
    let _staged = stage_every_state(&env);
    let out = env.tmp.path().join("writerctl.prom");
    prometheus(&env, &["--output", out.to_str().unwrap()]).assert_ok();
    let check = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&out).unwrap())
        .output()
        .unwrap();
    assert!(
        check.status.success() && check.stdout.is_empty() && check.stderr.is_empty(),
        "promtool check metrics: {}\n{}{}",
        check.status,
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn the_reference_documents_every_metric() {
    let env = TestEnv::new();
    let r = prometheus(&env, &[]);
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/reference/metrics.md")).unwrap();
    for family in r.assert_ok().stdout.lines().filter_map(|l| l.strip_prefix("# TYPE ")) {
        let (name, kind) = family.split_once(' ').unwrap();
        assert!(page.contains(&format!("| `{name}` | {kind} |")), "metrics.md does not document {name} ({kind})");
    }
}
