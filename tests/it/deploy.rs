//! The deployment files checked by the tools that consume them: `promtool check rules` and
//! `promtool test rules` on `deploy/prometheus/`, `systemd-analyze verify` on
//! `deploy/systemd/`, and the Kubernetes manifest's promises read back from its YAML.
//! A missing tool is a loud skip, and a failure under `WRITERCTL_REQUIRE_SERVICES=1` (CI
//! installs them: `.ci/run`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// `name` on PATH, or None after a loud skip (a panic under WRITERCTL_REQUIRE_SERVICES=1).
pub(crate) fn tool(test: &str, name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file());
    if found.is_none() {
        crate::services::skip(test, &format!("{name} is not installed (Debian: apt-get install prometheus / systemd)"));
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
