//! Issue 18: a crashed writer's session comes back without a person, provably — and only
//! where the orchestrator proves the old holder gone.
//!
//! * one end-to-end case with real pid namespaces (root: `unshare --pid --fork
//!   --mount-proc`): a writer under `run` SIGKILLed mid-append, restarted in a new pid
//!   namespace as the same container of the same pod, reclaims with epoch + 1,
//!   `WRITERCTL_RECOVERED=1` and the torn tail reported;
//! * the rules on staged records (any user): a rule reclaims only with a released holder
//!   lock (issue 27: labels alone, or a held lock, stay fenced), another container stays
//!   fenced, a StatefulSet pod's replacement reclaims only with `--statefulset-identity`,
//!   partial pod variables are refused, no pod variables behave exactly as before.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::services::skip;
use crate::support::*;

pub(crate) const UID: &str = "6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f";
const NEW_UID: &str = "0d9e8f7a-6b5c-4d3e-8f1a-2b3c4d5e6f70";
pub(crate) const S: &str = "pod-session";
pub(crate) const LIMIT: Duration = Duration::from_secs(30);

pub(crate) fn pod_env(uid: &str, name: &str, container: &str) -> Vec<(&'static str, String)> {
    vec![
        ("WRITERCTL_POD_UID", uid.into()),
        ("WRITERCTL_POD_NAME", name.into()),
        ("WRITERCTL_POD_NAMESPACE", "writers".into()),
        ("WRITERCTL_CONTAINER_NAME", container.into()),
        ("WRITERCTL_SESSION_WRITER_LEASE", "1".into()),
    ]
}

pub(crate) fn cli(env: &TestEnv, args: &[&str], vars: &[(&'static str, String)]) -> Run {
    let mut c = env.cmd();
    c.args(args).arg("--runtime-dir").arg(env.runtime());
    for (k, v) in vars {
        c.env(k, v);
    }
    run_bounded(c, LIMIT).unwrap_or_else(|| panic!("`{}` hung", args.join(" ")))
}

/// The holder-lock evidence a staged record carries (issue 27).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Evidence {
    /// No `writerctl_holder_lock` (written by `acquire`, qwen-code or an older writerctl).
    None,
    /// A holder-lock file nobody holds: the old tree is gone.
    Released,
    /// A holder-lock file this test process holds locked: the old tree lives.
    Held,
}

/// A writerctl active record held in another pid namespace (a number that is not ours) of
/// this boot by `pod`'s container, with epoch 4 and `evidence`. With `Evidence::Held`, the
/// returned file holds the lock until dropped.
pub(crate) fn stage_pod_record_with(
    env: &TestEnv,
    uid: &str,
    name: &str,
    container: &str,
    evidence: Evidence,
) -> Option<std::fs::File> {
    let l = local();
    let holder_name = format!("{S}.lock.holder.{}", uuid::Uuid::new_v4());
    // The holder file exists before the record names it, with its identity recorded (issue
    // 38), as `run` makes it.
    let path = env.lock_dir().join(&holder_name);
    let file = (evidence != Evidence::None).then(|| {
        std::fs::create_dir_all(env.lock_dir()).unwrap();
        std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path).unwrap()
    });
    let holder_key = match evidence {
        Evidence::None => String::new(),
        _ => format!(
            r#","writerctl_holder_lock":"{holder_name}","writerctl_holder_lock_id":"{}""#,
            holder_file_id(&path)
        ),
    };
    let rec = qwen_active(S, "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f", 7, Some(&format!("linux:{}:100", l.boot_id)), Some(l.pid_ns + 1), &l.hostname)
        .replacen(
            '}',
            &format!(
                r#","writer":"writerctl test","writerctl_epoch":4,"writerctl_pod":{{"uid":"{uid}","name":"{name}","namespace":"writers","container":"{container}"}}{holder_key}}}"#
            ),
            1,
        );
    stage(&env.lock(S), rec.as_bytes());
    let Some(f) = file else { return None };
    if evidence == Evidence::Held {
        rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
        return Some(f);
    }
    None
}

/// [`stage_pod_record_with`] without a holder lock: labels only.
fn stage_pod_record(env: &TestEnv, uid: &str, name: &str, container: &str) {
    stage_pod_record_with(env, uid, name, container, Evidence::None);
}

fn holder_files(env: &TestEnv) -> Vec<String> {
    env.lock_dir_names().into_iter().filter(|n| n.contains(".holder.")).collect()
}

pub(crate) fn lock_obj(env: &TestEnv) -> serde_json::Map<String, Value> {
    serde_json::from_slice(&std::fs::read(env.lock(S)).unwrap()).unwrap()
}

#[test]
fn the_same_container_of_the_same_pod_reclaims_even_in_managed_mode() {
    let env = TestEnv::new();
    stage_pod_record_with(&env, UID, "w-abc", "writer", Evidence::Released);
    let tf = env.tmp.path().join("t.token");
    let r = cli(
        &env,
        &["acquire", "--managed", "--json", "--session", S, "--token-file", tf.to_str().unwrap()],
        &pod_env(UID, "w-abc", "writer"),
    );
    r.assert_ok();
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["epoch"], 5, "{}", r.stdout);
    // Issue 38: the kernel's proof is the rule; the labels name whose lock it was.
    assert_eq!(j["recovered_from"]["rule"], "kernel_proof");
    assert_eq!(j["recovered_from"]["pod_rule"], "container_restarted");
    assert_eq!(j["recovered_from"]["evidence"], serde_json::json!(["holder_lock_released", "no_transcript"]));
    assert_eq!(j["recovered_from"]["pid"], 7);
    assert_eq!(j["transcript_tail"], "clean");
    assert!(
        r.stderr.contains("event=recovered") && r.stderr.contains(r#"pod_rule="container_restarted""#),
        "{}",
        r.stderr
    );
    let rec = lock_obj(&env);
    assert_eq!(rec["writerctl_pod"]["uid"], UID);
    assert_eq!(rec["writerctl_recovered_from"]["rule"], "kernel_proof");
    let st: Value = serde_json::from_str(&cli(&env, &["status", "--json", "--session", S], &[]).stdout).unwrap();
    assert_eq!(st["owner"]["rule"], "kernel_proof");
    assert_eq!(st["owner"]["recovered_from"]["pod_name"], "w-abc");
    assert!(
        holder_files(&env).is_empty(),
        "the released predecessor's holder file is residue: {:?}",
        holder_files(&env)
    );
}

/// Issue 27 reproduction 1, staged: the same four pod variables in another pid namespace
/// prove nothing. Without a holder lock the record stays fenced and `status` names the
/// missing evidence; with one that a live tree holds, it is alive — for plain and managed
/// acquisition alike.
#[test]
fn pod_variables_alone_never_reclaim_and_a_held_holder_lock_is_alive() {
    let vars = pod_env(UID, "w-abc", "writer");
    for (evidence, code) in [(Evidence::None, "pod_rule_needs_evidence"), (Evidence::Held, "holder_lock_held")] {
        let env = TestEnv::new();
        let _held = stage_pod_record_with(&env, UID, "w-abc", "writer", evidence);
        let before = std::fs::read(env.lock(S)).unwrap();
        for args in [&["acquire", "--managed", "--json", "--session", S][..], &["acquire", "--json", "--session", S]] {
            cli(&env, args, &vars).assert_error(3, "session_writer_conflict");
            assert_eq!(std::fs::read(env.lock(S)).unwrap(), before, "{evidence:?} {args:?}: the record changed");
        }
        let st: Value = serde_json::from_str(&cli(&env, &["status", "--json", "--session", S], &vars).stdout).unwrap();
        assert_eq!(st["liveness"]["code"], code, "{evidence:?}: {st}");
        assert_eq!(st["live"], true);
        let next = st["next_step"].as_str().unwrap();
        assert!(!next.contains("acquire` reclaims") && !next.contains("(also --managed)"), "{next}");
        if evidence == Evidence::None {
            let why = st["liveness"]["description"].as_str().unwrap();
            assert!(why.contains("no holder lock"), "say which evidence is missing: {why}");
        }
    }
}

#[test]
fn another_container_or_another_pod_stays_fenced() {
    for (uid, name, container, why) in [
        (UID, "w-abc", "sidecar", "another container of the pod"),
        (NEW_UID, "w-abc", "writer", "same name, new UID, no --statefulset-identity"),
        (NEW_UID, "w-xyz", "writer", "another pod"),
    ] {
        let env = TestEnv::new();
        stage_pod_record(&env, UID, "w-abc", "writer");
        let before = std::fs::read(env.lock(S)).unwrap();
        let r = cli(&env, &["acquire", "--managed", "--json", "--session", S], &pod_env(uid, name, container));
        r.assert_error(3, "session_writer_conflict");
        assert_eq!(std::fs::read(env.lock(S)).unwrap(), before, "{why}: the record changed");
        let st: Value = serde_json::from_str(
            &cli(&env, &["status", "--json", "--session", S], &pod_env(uid, name, container)).stdout,
        )
        .unwrap();
        assert_eq!(st["liveness"]["code"], "other_pid_namespace", "{why}");
    }
}

/// Issue 38: a replaced StatefulSet pod reclaims by the kernel's proof, with or without
/// the opt-in; the opt-in only lets the labels name the rule (a diagnostic).
#[test]
fn a_replaced_statefulset_pod_reclaims_by_proof_and_the_opt_in_names_the_rule() {
    for how in ["flag", "env", "no opt-in"] {
        let env = TestEnv::new();
        stage_pod_record_with(&env, UID, "w-0", "writer", Evidence::Released);
        let mut vars = pod_env(NEW_UID, "w-0", "writer");
        let mut args = vec!["acquire", "--managed", "--json", "--session", S];
        match how {
            "flag" => args.push("--statefulset-identity"),
            "env" => vars.push(("WRITERCTL_STATEFULSET_IDENTITY", "1".into())),
            _ => {}
        }
        let r = cli(&env, &args, &vars);
        r.assert_ok();
        let j: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(j["recovered_from"]["rule"], "kernel_proof", "{how}");
        let named = (how != "no opt-in").then_some("statefulset_pod_replaced");
        assert_eq!(j["recovered_from"]["pod_rule"].as_str(), named, "{how}");
        assert_eq!(j["recovered_from"]["pod_uid"], UID);
        assert_eq!(lock_obj(&env)["writerctl_pod"]["uid"], NEW_UID);
    }
}

#[test]
fn partial_pod_variables_are_refused_and_none_records_exactly_as_before() {
    let env = TestEnv::new();
    let r = cli(&env, &["acquire", "--json", "--session", S], &[("WRITERCTL_POD_UID", UID.into())]);
    r.assert_error(2, "invalid_argument");
    assert!(r.stdout.contains("WRITERCTL_POD_NAME"), "{}", r.stdout);
    assert!(!env.lock(S).exists());
    // No variables: no pod key, and a record from another pid namespace stays fenced.
    let tf = env.tmp.path().join("t.token");
    cli(
        &env,
        &[
            "acquire",
            "--json",
            "--session",
            S,
            "--pid",
            &std::process::id().to_string(),
            "--token-file",
            tf.to_str().unwrap(),
        ],
        &[],
    )
    .assert_ok();
    assert!(!lock_obj(&env).contains_key("writerctl_pod"));
    let env = TestEnv::new();
    stage_pod_record(&env, UID, "w-abc", "writer");
    cli(&env, &["acquire", "--json", "--session", S], &[]).assert_error(3, "session_writer_conflict");
}

/// A qwen-code reader ignores the extra keys: a writerctl record with pod identity,
/// recovery and epoch still passes qwen's validation rules as writerctl implements them
/// (QWEN_FORMAT §2), and a seal of it keeps every extra key.
#[test]
fn records_with_pod_keys_round_trip_through_the_qwen_format() {
    let env = TestEnv::new();
    stage_pod_record_with(&env, UID, "w-abc", "writer", Evidence::Released);
    let raw = std::fs::read(env.lock(S)).unwrap();
    let rec = writerctl::lockfile::record::parse_record(&raw).expect("a valid qwen record");
    assert_eq!(rec.owner.pod.as_ref().unwrap().container, "writer");
    assert!(rec.owner.holder_lock.as_deref().is_some_and(|h| h.starts_with(&format!("{S}.lock.holder."))));
    // Reclaimed, sealed: the sealed record carries the new pod, epoch and recovery.
    let tf = env.tmp.path().join("t.token");
    let vars = pod_env(UID, "w-abc", "writer");
    cli(&env, &["acquire", "--managed", "--json", "--session", S, "--token-file", tf.to_str().unwrap()], &vars)
        .assert_ok();
    cli(&env, &["seal", "--json", "--session", S, "--token-file", tf.to_str().unwrap()], &vars).assert_ok();
    let sealed = lock_obj(&env);
    assert_eq!(sealed["state"], "sealed");
    assert_eq!((sealed["writerctl_epoch"].as_u64(), sealed["writerctl_pod"]["uid"].as_str()), (Some(5), Some(UID)));
    assert!(writerctl::lockfile::record::parse_record(&std::fs::read(env.lock(S)).unwrap()).is_ok());
}

// ---------------------------------------------------------------------------------------
// real pid namespaces
// ---------------------------------------------------------------------------------------

pub(crate) fn can_unshare() -> Result<(), String> {
    if !rustix::process::geteuid().is_root() {
        return Err("pid namespaces need root".into());
    }
    let ok = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok { Ok(()) } else { Err("unshare --pid --fork --mount-proc failed".into()) }
}

/// `unshare --pid --fork --mount-proc --kill-child writerctl run ...`: a container.
pub(crate) fn container(env: &TestEnv, sock: &Path, extra: &[&str], script: &str) -> Command {
    let mut c = Command::new("unshare");
    c.args(["--pid", "--fork", "--mount-proc", "--kill-child"]).arg(BIN);
    c.args(["run", "--json", "--session", S]).arg("--runtime-dir").arg(env.runtime());
    c.arg("--control-socket").arg(sock).args(extra).args(["--", "sh", "-c", script]);
    c.env_clear().env("HOME", env.tmp.path()).env("PATH", "/usr/bin:/bin").stdin(Stdio::null());
    for (k, v) in pod_env(UID, "w-abc", "writer") {
        c.env(k, v);
    }
    c
}

#[test]
fn a_writer_killed_mid_append_comes_back_in_a_new_pid_namespace() {
    const TEST: &str = "a_writer_killed_mid_append_comes_back_in_a_new_pid_namespace";
    if let Err(why) = can_unshare() {
        return skip(TEST, &why);
    }
    let env = TestEnv::new();
    let private = env.tmp.path().join("sock");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let ready = env.tmp.path().join("ready");
    let out = env.tmp.path().join("env.txt");
    std::fs::create_dir_all(env.runtime().join("chats")).unwrap();
    // Generation 1: appends a line, then half a line, then is SIGKILLed (with its whole pid
    // namespace, as an OOM kill of the container does).
    let script1 =
        format!(r#"printf '{{"a":1}}\n{{"torn":' >>"$WRITERCTL_TRANSCRIPT"; : >{}; exec sleep 1000"#, ready.display());
    let mut gen1 = container(&env, &private.join("1.sock"), &[], &script1)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + LIMIT;
    while !ready.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ready.exists(), "generation 1 never started");
    let before = lock_obj(&env);
    assert_eq!(before["writerctl_pod"]["container"], "writer");
    gen1.kill().unwrap(); // SIGKILL to unshare; --kill-child takes the namespace down
    gen1.wait().unwrap();
    // Generation 2: the kubelet restarts the container in a new pid namespace.
    let script2 = format!(r#"env | grep '^WRITERCTL_' >{}; exit 0"#, out.display());
    let r = wait_child_bounded(
        container(&env, &private.join("2.sock"), &["--wait", "10"], &script2)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        LIMIT,
    )
    .expect("generation 2 hung");
    r.assert_ok();
    assert!(r.stderr.contains("event=recovered") && r.stderr.contains(r#"transcript_tail="torn""#), "{}", r.stderr);
    let seen = std::fs::read_to_string(&out).unwrap();
    for want in ["WRITERCTL_RECOVERED=1", "WRITERCTL_TRANSCRIPT_TAIL=torn"] {
        assert!(seen.lines().any(|l| l == want), "{want} not in\n{seen}");
    }
    let epoch = before["writerctl_epoch"].as_u64().unwrap();
    assert!(seen.lines().any(|l| l == format!("WRITERCTL_EPOCH={}", epoch + 1)), "epoch + 1 expected in\n{seen}");
    // The crashed writer's transcript was handed on untouched.
    assert_eq!(std::fs::read(env.runtime().join(format!("chats/{S}.jsonl"))).unwrap(), b"{\"a\":1}\n{\"torn\":");
}

/// Where `/proc/self/cgroup` names a pod (the kubelet's layout), `WRITERCTL_POD_UID` must be
/// that pod: otherwise the variables are not trusted, the rules stay off and `status` says
/// why (`pod_identity_untrusted`).
#[test]
fn a_cgroup_naming_another_pod_keeps_the_record_fenced() {
    const TEST: &str = "a_cgroup_naming_another_pod_keeps_the_record_fenced";
    if !rustix::process::geteuid().is_root() {
        return skip(TEST, "moving a process into a cgroup needs root");
    }
    let hierarchy = ["/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .into_iter()
        .map(Path::new)
        .find(|h| h.join("cgroup.procs").exists());
    let Some(hierarchy) = hierarchy else { return skip(TEST, "no writable cgroup hierarchy") };
    let group = hierarchy.join(format!("writerctl-test-{}/kubepods/pod{NEW_UID}", std::process::id()));
    if std::fs::create_dir_all(&group).is_err() {
        return skip(TEST, &format!("cannot create {}", group.display()));
    }
    let env = TestEnv::new();
    stage_pod_record(&env, UID, "w-abc", "writer");
    let before = std::fs::read(env.lock(S)).unwrap();
    let in_cgroup = |args: &str| {
        let mut c = Command::new("sh");
        c.env_clear().env("HOME", env.tmp.path()).env("PATH", "/usr/bin:/bin").stdin(Stdio::null());
        c.args(["-c", &format!("echo $$ >{}/cgroup.procs && exec \"$0\" {args}", group.display()), BIN]);
        for (k, v) in pod_env(UID, "w-abc", "writer") {
            c.env(k, v);
        }
        run_bounded(c, LIMIT).expect("hung")
    };
    let rt = env.runtime();
    let r = in_cgroup(&format!("acquire --managed --json --session {S} --runtime-dir {}", rt.display()));
    let st = in_cgroup(&format!("status --json --session {S} --runtime-dir {}", rt.display()));
    let _ = std::fs::remove_dir(&group);
    let _ = std::fs::remove_dir(group.parent().unwrap());
    let _ = std::fs::remove_dir(group.parent().unwrap().parent().unwrap());
    r.assert_error(3, "session_writer_conflict");
    assert_eq!(std::fs::read(env.lock(S)).unwrap(), before);
    let st: Value = serde_json::from_str(&st.stdout).unwrap();
    assert_eq!(st["liveness"]["code"], "pod_identity_untrusted", "{st}");
}

/// Both writer manifests give `run` the pod identity it records (the container name equal
/// to the container's own), and only the StatefulSet trusts "same name, new UID".
#[test]
fn the_writer_manifests_set_the_pod_identity() {
    for (file, statefulset) in [("writer-deployment.yaml", false), ("writer-statefulset.yaml", true)] {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes").join(file))
            .unwrap();
        for (var, field) in [
            ("WRITERCTL_POD_UID", "metadata.uid"),
            ("WRITERCTL_POD_NAME", "metadata.name"),
            ("WRITERCTL_POD_NAMESPACE", "metadata.namespace"),
        ] {
            let at = text.find(&format!("- name: {var}\n")).unwrap_or_else(|| panic!("{file}: {var} missing"));
            let next = &text[at..text[at..].find("\n            - name:").map_or(text.len(), |n| at + n + 1)];
            assert!(next.contains(&format!("fieldPath: {field}")), "{file}: {var} must come from {field}");
        }
        // The writer container: the first under `containers:` (an initContainer comes first).
        let containers = text.split("\n      containers:\n").nth(1).unwrap_or_else(|| panic!("{file}: no containers"));
        let container = containers.split("        - name: ").nth(1).and_then(|t| t.lines().next()).unwrap().trim();
        assert!(
            text.contains(&format!("- name: WRITERCTL_CONTAINER_NAME\n              value: {container}")),
            "{file}: WRITERCTL_CONTAINER_NAME must be the container's name `{container}`"
        );
        assert_eq!(text.contains("- name: WRITERCTL_STATEFULSET_IDENTITY"), statefulset, "{file}");
        assert!(text.contains("writerctl") && text.contains("- run"), "{file}: runs writerctl run");
    }
}

/// The crash matrix for the restart rule: a writer of this Pod's container is SIGKILLed at
/// every failpoint of a managed acquire, a seal and a takeover; then the container restarts
/// (a new pid namespace, the same Pod identity) and takes the session with `acquire
/// --managed`. Never two active owners; the restart either owns the session or fails with
/// a documented code (a residual transition claim still needs `recover`, by design).
#[test]
fn crash_matrix_kill_at_every_step_then_restart_as_the_same_container() {
    const TEST: &str = "crash_matrix_kill_at_every_step_then_restart_as_the_same_container";
    if let Err(why) = can_unshare() {
        return skip(TEST, &why);
    }
    let vars = pod_env(UID, "w-abc", "writer");
    let mut violations = Vec::new();
    let mut outcomes = std::collections::BTreeMap::new();
    for op in ["acquire", "seal", "takeover"] {
        for fp in crate::crash::failpoints() {
            let label = format!("[{op} {fp}=kill]");
            let env = TestEnv::new();
            let transcript = env.runtime().join(format!("chats/{S}.jsonl"));
            std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
            std::fs::write(&transcript, b"{\"a\":1}\n").unwrap();
            let holder = LiveHolder::start();
            let pid = holder.pid().to_string();
            let t0 = env.tmp.path().join("t0.token");
            let acquire0 =
                ["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", t0.to_str().unwrap()];
            let mut kill = vars.clone();
            kill.push(("WRITERCTL_FAILPOINTS", format!("{fp}=kill")));
            match op {
                "acquire" => {
                    cli(&env, &acquire0, &kill);
                }
                "seal" => {
                    cli(&env, &acquire0, &vars).assert_ok();
                    cli(&env, &["seal", "--json", "--session", S, "--token-file", t0.to_str().unwrap()], &kill);
                }
                _ => {
                    cli(&env, &acquire0, &vars).assert_ok();
                    cli(&env, &["seal", "--json", "--session", S, "--token-file", t0.to_str().unwrap()], &vars)
                        .assert_ok();
                    let t1 = env.tmp.path().join("t1.token");
                    cli(
                        &env,
                        &["takeover", "--json", "--session", S, "--pid", &pid, "--token-file", t1.to_str().unwrap()],
                        &kill,
                    );
                }
            }
            // The container restarts: a new pid namespace, the same Pod identity.
            let mut c = Command::new("unshare");
            c.args(["--pid", "--fork", "--mount-proc", "--kill-child"]).arg(BIN);
            c.args(["acquire", "--managed", "--json", "--session", S, "--runtime-dir"]).arg(env.runtime());
            c.args(["--pid", "1", "--token-file"]).arg(env.tmp.path().join("restart.token"));
            c.env_clear().env("HOME", env.tmp.path()).env("PATH", "/usr/bin:/bin").stdin(Stdio::null());
            for (k, v) in &vars {
                c.env(k, v);
            }
            let Some(r) = run_bounded(c, LIMIT) else {
                violations.push(format!("{label} the restart hung"));
                continue;
            };
            let code = try_error_code(&r);
            *outcomes.entry(format!("{op} exit={} {code:?}", r.code)).or_insert(0) += 1;
            let documented = matches!(
                (r.code, code.as_deref()),
                (0, _) | (3, Some("session_writer_conflict")) | (4, Some(_)) | (75, Some("session_writer_unavailable"))
            );
            if !documented {
                violations.push(format!("{label} restart exited {} {code:?}:\n{}\n{}", r.code, r.stdout, r.stderr));
            }
            // Never two owners: one primary at most, and no other file holds an active
            // record that could be mistaken for one.
            let dir = env.lock_dir();
            let actives: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|e| {
                    let e = e.unwrap();
                    let name = e.file_name().into_string().unwrap();
                    let v: Value = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
                    (name == format!("{S}.lock") && v["state"] == "active").then_some(name)
                })
                .collect();
            if actives.len() > 1 {
                violations.push(format!("{label} {} active primaries", actives.len()));
            }
            if r.code == 0 {
                let now: Value = serde_json::from_slice(&std::fs::read(env.lock(S)).unwrap()).unwrap();
                if now["pid"] != 1 || now["state"] != "active" {
                    violations.push(format!("{label} the restart succeeded but L is {now}"));
                }
            }
            holder.stop();
        }
    }
    eprintln!("restart matrix outcomes: {outcomes:?}");
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}
