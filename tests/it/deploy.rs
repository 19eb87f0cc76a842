//! The deployment files checked by the tools that consume them: `promtool check rules` and
//! `promtool test rules` on `deploy/prometheus/`, `systemd-analyze verify` on
//! `deploy/systemd/`, `kubernetes-validate` (the OpenAPI schemas of a Kubernetes release,
//! offline) and our Pod Security "restricted" checker (`pod_security.rs`) on
//! `deploy/kubernetes/`, and the Kubernetes manifests' promises read back from their YAML.
//! A missing tool is a loud skip, and a failure under `WRITERCTL_REQUIRE_SERVICES=1` (CI
//! installs them: `scripts/ci-deps.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// `name` on PATH, or None after a loud skip (a panic under WRITERCTL_REQUIRE_SERVICES=1).
pub(crate) fn tool(test: &str, name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file());
    if found.is_none() {
        crate::services::skip(test, &format!("{name} is not installed (scripts/ci-deps.sh installs it)"));
    }
    found
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Runs `cmd` and requires exit 0, showing everything it printed otherwise.
#[track_caller]
fn assert_succeeds(mut cmd: Command) -> String {
    let o = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{cmd:?}: {}\n{text}", o.status);
    text
}

/// The names of the alerts in the rules file.
fn alert_names(rules: &str) -> Vec<String> {
    rules.lines().filter_map(|l| l.trim().strip_prefix("- alert: ")).map(|n| n.trim().to_string()).collect()
}

#[test]
fn alert_rules_pass_promtool_check_and_their_unit_tests() {
    let Some(promtool) = tool("alert_rules_pass_promtool_check_and_their_unit_tests", "promtool") else {
        return;
    };
    let dir = repo("deploy/prometheus");
    let mut check = Command::new(&promtool);
    check.current_dir(&dir).args(["check", "rules", "writerctl-rules.yml"]);
    let said = assert_succeeds(check);
    let n = alert_names(&std::fs::read_to_string(dir.join("writerctl-rules.yml")).unwrap()).len();
    assert!(said.contains(&format!("SUCCESS: {n} rules found")), "{said}");
    let mut test = Command::new(&promtool);
    test.current_dir(&dir).args(["test", "rules", "writerctl-rules.test.yml"]);
    assert_succeeds(test);
}

#[test]
fn every_alert_is_tested_firing_and_quiet() {
    let dir = repo("deploy/prometheus");
    let rules = std::fs::read_to_string(dir.join("writerctl-rules.yml")).unwrap();
    let tests = std::fs::read_to_string(dir.join("writerctl-rules.test.yml")).unwrap();
    let names = alert_names(&rules);
    assert!(names.len() >= 7, "{names:?}");
    for name in &names {
        // Each `alertname:` line is followed by its expectation: `exp_alerts: []` (quiet)
        // or `exp_alerts:` and a list (firing).
        let lines: Vec<&str> = tests.lines().map(str::trim).collect();
        let expectations: Vec<&str> =
            lines.windows(2).filter(|w| w[0] == format!("alertname: {name}")).map(|w| w[1]).collect();
        assert!(expectations.contains(&"exp_alerts: []"), "{name} is never tested quiet");
        assert!(expectations.contains(&"exp_alerts:"), "{name} is never tested firing");
    }
}

#[test]
fn alert_rules_use_only_metrics_writerctl_exports() {
    let rules = std::fs::read_to_string(repo("deploy/prometheus/writerctl-rules.yml")).unwrap();
    let exporters = [repo("src/lockfile/metrics.rs"), repo("src/coordinator/server/metrics.rs")]
        .map(|p| std::fs::read_to_string(p).unwrap())
        .join("\n");
    let mut used: Vec<&str> = rules
        .match_indices("writerctl_")
        .map(|(i, _)| {
            let rest = &rules[i..];
            &rest[..rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len())]
        })
        .collect();
    used.sort();
    used.dedup();
    assert!(used.len() >= 7, "{used:?}");
    for name in used {
        assert!(
            exporters.contains(&format!("\"{name}")) || exporters.contains(&format!(" {name} ")),
            "{name} is not exported"
        );
    }
}

#[test]
fn coordinator_unit_passes_systemd_analyze_verify() {
    let Some(analyze) = tool("coordinator_unit_passes_systemd_analyze_verify", "systemd-analyze") else {
        return;
    };
    let unit = std::fs::read_to_string(repo("deploy/systemd/writerctl-coordinator.service")).unwrap();
    for line in
        ["DynamicUser=yes", "ProtectSystem=strict", "StateDirectory=writerctl-coordinator", "Restart=on-failure"]
    {
        assert!(unit.lines().any(|l| l == line), "the unit lost {line}");
    }
    // verify checks that ExecStart's binary exists and that every Documentation=man: page
    // resolves. The unit names the installed path; here it runs the binary just built (the
    // only change), and man finds the pages in man/ (the checked-in, tested ones).
    let installed = "ExecStart=/usr/local/bin/writerctl ";
    assert_eq!(unit.matches(installed).count(), 1, "{unit}");
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("writerctl-coordinator.service");
    std::fs::write(&copy, unit.replace(installed, &format!("ExecStart={} ", crate::support::BIN))).unwrap();
    std::fs::create_dir(tmp.path().join("man")).unwrap();
    std::os::unix::fs::symlink(repo("man"), tmp.path().join("man/man1")).unwrap();
    let mut verify = Command::new(analyze);
    verify.arg("verify").arg(&copy).env("MANPATH", tmp.path().join("man"));
    let said = assert_succeeds(verify);
    assert_eq!(said, "", "systemd-analyze verify has remarks");
}

#[test]
fn coordinator_manifest_keeps_its_promises() {
    // No Kubernetes API server here to validate against; these are the promises the
    // manifest's header makes, read back from its text.
    let text = std::fs::read_to_string(repo("deploy/kubernetes/coordinator.yaml")).unwrap();
    let kinds: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("kind: ")).collect();
    assert_eq!(kinds, vec!["Deployment", "PodDisruptionBudget", "Service"]);
    let replicas: u32 = text.lines().find_map(|l| l.trim().strip_prefix("replicas: ")).unwrap().parse().unwrap();
    assert!(replicas >= 2);
    assert!(text.contains("  minAvailable: 1\n"));
    // Issue 20: readiness must not fail with Postgres alone, liveness must ask no store.
    for (probe, path) in [("readinessProbe:", "/readyz"), ("livenessProbe:", "/livez")] {
        let at = text.find(probe).unwrap_or_else(|| panic!("no {probe}"));
        let want = format!("path: {path}");
        assert!(text[at..].lines().take(4).any(|l| l.trim() == want), "{probe} is not on {path}");
    }
    for secret in ["writerctl-coordinator-store", "writerctl-coordinator-admin", "writerctl-coordinator-tls"] {
        assert!(
            text.contains(&format!("name: {secret}")) || text.contains(&format!("secretName: {secret}")),
            "{secret}"
        );
    }
    assert!(text.contains("--admin-token-file=/etc/writerctl/admin/token"));
    // No credential in the manifest itself (the header's example commands are comments).
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        assert!(!line.contains("redis://") && !line.contains("rediss://") && !line.contains("postgres://"), "{line}");
    }
}

#[test]
fn writer_manifests_trust_exactly_their_fs_group() {
    // Issue 29: the kubelet makes an fsGroup volume group-writable, which writerctl refuses
    // unless WRITERCTL_TRUSTED_GROUPS names that group; the two numbers must agree.
    for file in ["deploy/kubernetes/writer-deployment.yaml", "deploy/kubernetes/writer-statefulset.yaml"] {
        let text = std::fs::read_to_string(repo(file)).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with('#')).collect();
        let fs_group = lines
            .iter()
            .find_map(|l| l.trim().strip_prefix("fsGroup: "))
            .unwrap_or_else(|| panic!("{file}: no fsGroup"));
        let at = lines.iter().position(|l| {
            l.trim() == "- name: WRITERCTL_TRUSTED_GROUPS" || l.trim().starts_with("- name: WRITERCTL_TRUSTED_GROUPS ")
        });
        let at = at.unwrap_or_else(|| panic!("{file}: WRITERCTL_TRUSTED_GROUPS is not set"));
        let value = lines[at + 1].trim().strip_prefix("value: ").unwrap_or_else(|| panic!("{file}: {}", lines[at + 1]));
        assert_eq!(value.trim_matches('"'), fs_group.trim(), "{file}: WRITERCTL_TRUSTED_GROUPS is not the fsGroup");
    }
}

/// Every Kubernetes manifest under deploy/kubernetes/.
const MANIFESTS: &[&str] = &[
    "deploy/kubernetes/coordinator.yaml",
    "deploy/kubernetes/writer-deployment.yaml",
    "deploy/kubernetes/writer-statefulset.yaml",
    "deploy/kubernetes/writer-toolbox.yaml",
];

/// The Kubernetes release whose schemas the manifests are checked against (the newest
/// `kubernetes-validate` 1.37.0 ships; scripts/ci-deps.sh pins that version).
const KUBERNETES_VERSION: &str = "1.37.0";

fn manifest(file: &str) -> Vec<serde_json::Value> {
    crate::pod_security::parse_yaml_stream(&std::fs::read_to_string(repo(file)).unwrap())
}

#[test]
fn every_manifest_is_checked() {
    let mut found: Vec<String> = std::fs::read_dir(repo("deploy/kubernetes"))
        .unwrap()
        .map(|e| format!("deploy/kubernetes/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    found.sort();
    assert_eq!(found, MANIFESTS, "add the new manifest to MANIFESTS (schemas and Pod Security)");
}

#[test]
fn manifests_pass_the_restricted_pod_security_profile() {
    for file in MANIFESTS {
        let docs = manifest(file);
        let pods: usize = docs.iter().map(|d| crate::pod_security::pod_specs(d).len()).sum();
        assert!(pods >= 1, "{file}: no pod template found");
        let violations: Vec<String> = docs.iter().flat_map(crate::pod_security::restricted_violations).collect();
        assert!(violations.is_empty(), "{file} breaks Pod Security \"restricted\":\n{}", violations.join("\n"));
    }
}

#[test]
fn manifests_validate_against_the_schemas_of_kubernetes() {
    let test = "manifests_validate_against_the_schemas_of_kubernetes";
    let Some(validate) = tool(test, "kubernetes-validate") else {
        return;
    };
    let mut check = Command::new(&validate);
    check.args(["--strict", "--kubernetes-version", KUBERNETES_VERSION]).args(MANIFESTS.iter().map(|f| repo(f)));
    let said = assert_succeeds(check);
    for file in MANIFESTS {
        let kinds = manifest(file).len();
        assert_eq!(said.matches(&format!("{} passed", repo(file).display())).count(), kinds, "{file}: {said}");
    }
    // The validator is strict: a misspelt field in a copy fails (so a pass above means it
    // looked).
    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("broken.yaml");
    let text = std::fs::read_to_string(repo("deploy/kubernetes/writer-deployment.yaml")).unwrap();
    assert!(text.contains("readOnlyRootFilesystem: true"));
    std::fs::write(&broken, text.replacen("readOnlyRootFilesystem: true", "readOnlyRootFileSystem: true", 1)).unwrap();
    let o = Command::new(&validate)
        .args(["--strict", "--kubernetes-version", KUBERNETES_VERSION])
        .arg(&broken)
        .output()
        .unwrap();
    assert!(!o.status.success(), "a misspelt field passed: {}", String::from_utf8_lossy(&o.stdout));
}

/// The writer container (`writer`) and the storage check (`check-storage`) of a writer
/// manifest's pod template.
fn writer_pod(file: &str) -> serde_json::Value {
    let docs = manifest(file);
    let doc = docs.iter().find(|d| d["kind"] == "Deployment" || d["kind"] == "StatefulSet").unwrap();
    doc["spec"]["template"]["spec"].clone()
}

fn env_of<'a>(container: &'a serde_json::Value, name: &str) -> Option<&'a str> {
    container["env"].as_array()?.iter().find(|e| e["name"] == name)?["value"].as_str()
}

fn flag_seconds(args: &[serde_json::Value], flag: &str) -> u64 {
    let prefix = format!("{flag}=");
    args.iter()
        .filter_map(|a| a.as_str())
        .find_map(|a| a.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {flag}= in {args:?}"))
        .parse()
        .unwrap()
}

#[test]
fn writer_manifests_run_with_a_read_only_root_an_exec_prestop_and_a_storage_check() {
    for file in ["deploy/kubernetes/writer-deployment.yaml", "deploy/kubernetes/writer-statefulset.yaml"] {
        let pod = writer_pod(file);
        let writer = pod["containers"].as_array().unwrap().iter().find(|c| c["name"] == "writer").unwrap();
        assert_eq!(writer["securityContext"]["readOnlyRootFilesystem"], true, "{file}");
        // The control socket's directory is an emptyDir named by XDG_RUNTIME_DIR.
        let xdg = env_of(writer, "XDG_RUNTIME_DIR").unwrap_or_else(|| panic!("{file}: no XDG_RUNTIME_DIR"));
        let mount = writer["volumeMounts"].as_array().unwrap().iter().find(|m| m["mountPath"] == xdg);
        let mount = mount.unwrap_or_else(|| panic!("{file}: nothing mounted at XDG_RUNTIME_DIR {xdg}"));
        let volume = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == mount["name"]).unwrap();
        assert!(volume["emptyDir"].is_object(), "{file}: {volume}");
        // The preStop hook is the exec form with no shell; the session comes from the env.
        let hook = writer["lifecycle"]["preStop"]["exec"]["command"].as_array().unwrap();
        assert_eq!(hook[..2], [serde_json::json!("writerctl"), serde_json::json!("seal")], "{file}");
        assert!(!hook.iter().any(|a| a == "sh" || a.as_str().is_some_and(|a| a.contains('$'))), "{file}: {hook:?}");
        assert!(env_of(writer, "WRITERCTL_SESSION").is_some_and(|s| !s.is_empty()), "{file}");
        let command = writer["command"].as_array().unwrap();
        assert!(!command.iter().any(|a| a.as_str().is_some_and(|a| a.contains("$("))), "{file}: {command:?}");
        // No readiness probe follows the writer (it would deadlock a surge rollout).
        assert!(writer["readinessProbe"].is_null(), "{file}: a readiness probe on the writer");
        // The timing nests: --grace + 5 s reaping < the hook's --timeout <
        // terminationGracePeriodSeconds <= --wait.
        let grace = flag_seconds(command, "--grace");
        let wait = flag_seconds(command, "--wait");
        let at = hook.iter().position(|a| a == "--timeout").unwrap();
        let timeout: u64 = hook[at + 1].as_str().unwrap().parse().unwrap();
        let termination = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
        assert!(grace + 5 < timeout && timeout < termination && termination <= wait, "{file}: {grace} {timeout} {termination} {wait}");
        // The initContainer checks the storage (and only the storage) of the same volume
        // with the same trusted group.
        let init = &pod["initContainers"][0];
        assert_eq!(init["command"], serde_json::json!(["writerctl", "doctor", "--storage"]), "{file}");
        assert_eq!(init["volumeMounts"][0], writer["volumeMounts"][0], "{file}: another volume");
        for var in ["WRITERCTL_RUNTIME_DIR", "WRITERCTL_TRUSTED_GROUPS"] {
            assert_eq!(env_of(init, var), env_of(writer, var), "{file}: {var}");
        }
    }
    // The Deployment starts the new Pod first and never takes the old one down before it.
    let docs = manifest("deploy/kubernetes/writer-deployment.yaml");
    let strategy = &docs[0]["spec"]["strategy"];
    assert_eq!(strategy["rollingUpdate"], serde_json::json!({"maxSurge": 1, "maxUnavailable": 0}));
}

/// Issue 40 point 7: the unit's install comment, run as written (with /etc moved into a
/// temporary directory): the directory is made before the token is written into it, and
/// the token file comes out 0600 in a 0700 directory.
#[test]
fn the_coordinator_units_install_steps_work_as_written() {
    use std::os::unix::fs::PermissionsExt;
    let unit = std::fs::read_to_string(repo("deploy/systemd/writerctl-coordinator.service")).unwrap();
    let steps: Vec<&str> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("#   "))
        .map(|l| l.split("   #").next().unwrap().trim())
        .filter(|l| l.contains("/etc/writerctl"))
        .collect();
    assert_eq!(steps.len(), 2, "{steps:?}");
    let tmp = tempfile::tempdir().unwrap();
    let etc = tmp.path().join("etc");
    std::fs::create_dir(&etc).unwrap();
    for step in &steps {
        let words: Vec<String> =
            step.split_whitespace().map(|w| w.replace("/etc/", &format!("{}/", etc.display()))).collect();
        let program = if words[0] == "writerctl" { crate::support::BIN.to_owned() } else { words[0].clone() };
        let mut c = Command::new(program);
        c.args(&words[1..]).env_remove("WRITERCTL_ADMIN_TOKEN");
        assert_succeeds(c);
    }
    let dir = etc.join("writerctl");
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    let token = std::fs::metadata(dir.join("admin-token")).unwrap();
    assert_eq!(token.permissions().mode() & 0o777, 0o600);
    // LoadCredential= names the file the steps wrote.
    assert!(unit.lines().any(|l| l == "LoadCredential=admin-token:/etc/writerctl/admin-token"));
}
