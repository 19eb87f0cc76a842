//! The Pod Security Standards' "restricted" profile, as the Kubernetes documentation writes
//! it (https://kubernetes.io/docs/concepts/security/pod-security-standards/, the
//! `restricted` policy of the current release: every "baseline" control plus the
//! "restricted" ones), checked over the pod templates of parsed manifests.
//!
//! Why our own checker: the admission controller that enforces the profile lives in the
//! API server (`pod-security.admission.config.k8s.io`), and no packaged offline tool on
//! Debian or PyPI applies exactly these rules without a cluster; the rules are a short
//! list of field checks, written out below one function per control so each can be read
//! against the documentation's table. `deploy.rs` runs it on deploy/kubernetes/; the tests
//! here prove it rejects a pod that breaks each control, one at a time.
//!
//! Scope: pods of kind Pod, and the pod templates of Deployment, StatefulSet, DaemonSet,
//! ReplicaSet, Job and CronJob. Linux pods only (the Windows exemptions of "restricted"
//! are not modelled: a pod with `spec.os.name: windows` is checked like any other).

use serde_json::Value;

/// The capabilities "baseline" lets a container add.
const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The sysctls "baseline" allows (the "safe" set).
const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

/// The volume sources "restricted" allows.
const RESTRICTED_VOLUMES: &[&str] =
    &["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"];

/// SELinux types "baseline" allows (besides none and "").
const SELINUX_TYPES: &[&str] = &["container_t", "container_init_t", "container_kvm_t", "container_engine_t"];

/// The pod specs in one parsed manifest document: (where, spec).
pub(crate) fn pod_specs(doc: &Value) -> Vec<(String, &Value)> {
    let kind = doc["kind"].as_str().unwrap_or("");
    let name = doc["metadata"]["name"].as_str().unwrap_or("?");
    let spec = match kind {
        "Pod" => Some(&doc["spec"]),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => Some(&doc["spec"]["template"]["spec"]),
        "CronJob" => Some(&doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]),
        _ => None,
    };
    spec.filter(|s| s.is_object()).map(|s| (format!("{kind}/{name}"), s)).into_iter().collect()
}

/// The pod template's annotations (AppArmor's old form lives there).
fn pod_annotations(doc: &Value) -> &Value {
    match doc["kind"].as_str().unwrap_or("") {
        "Pod" => &doc["metadata"]["annotations"],
        "CronJob" => &doc["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"],
        _ => &doc["spec"]["template"]["metadata"]["annotations"],
    }
}

/// Every container of a pod spec — containers, initContainers, ephemeralContainers — with
/// its name.
fn containers(spec: &Value) -> Vec<(String, &Value)> {
    ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| spec[*k].as_array().into_iter().flatten())
        .map(|c| (c["name"].as_str().unwrap_or("?").to_owned(), c))
        .collect()
}

/// Every violation of the "restricted" profile in one manifest document (none for a kind
/// that has no pod).
pub(crate) fn restricted_violations(doc: &Value) -> Vec<String> {
    let mut v = Vec::new();
    for (at, spec) in pod_specs(doc) {
        let mut here = Vec::new();
        baseline(spec, pod_annotations(doc), &mut here);
        restricted(spec, &mut here);
        v.extend(here.into_iter().map(|m| format!("{at}: {m}")));
    }
    v
}

/// The "baseline" controls.
fn baseline(spec: &Value, annotations: &Value, v: &mut Vec<String>) {
    let psc = &spec["securityContext"];
    let all = containers(spec);
    // HostProcess.
    if psc["windowsOptions"]["hostProcess"] == true {
        v.push("securityContext.windowsOptions.hostProcess must not be true".into());
    }
    for (n, c) in &all {
        if c["securityContext"]["windowsOptions"]["hostProcess"] == true {
            v.push(format!("container {n}: windowsOptions.hostProcess must not be true"));
        }
    }
    // Host namespaces.
    for f in ["hostNetwork", "hostPID", "hostIPC"] {
        if spec[f] == true {
            v.push(format!("{f} must not be true"));
        }
    }
    for (n, c) in &all {
        let sc = &c["securityContext"];
        // Privileged containers.
        if sc["privileged"] == true {
            v.push(format!("container {n}: privileged must not be true"));
        }
        // Capabilities (baseline: only the default set may be added).
        for cap in sc["capabilities"]["add"].as_array().into_iter().flatten() {
            let cap = cap.as_str().unwrap_or("");
            if !BASELINE_CAPABILITIES.contains(&cap) {
                v.push(format!("container {n}: capability {cap} may not be added"));
            }
        }
        // Host ports.
        for p in c["ports"].as_array().into_iter().flatten() {
            if p["hostPort"].as_i64().is_some_and(|h| h != 0) {
                v.push(format!("container {n}: hostPort must be unset or 0"));
            }
        }
        // /proc mount type.
        if !sc["procMount"].is_null() && sc["procMount"] != "Default" {
            v.push(format!("container {n}: procMount must be Default"));
        }
    }
    // HostPath volumes.
    for vol in spec["volumes"].as_array().into_iter().flatten() {
        if !vol["hostPath"].is_null() {
            v.push(format!("volume {}: hostPath is not allowed", vol["name"].as_str().unwrap_or("?")));
        }
    }
    // AppArmor: the field, and the annotations of old.
    let apparmor_ok = |p: &Value| p.is_null() || p == "RuntimeDefault" || p == "Localhost";
    if !apparmor_ok(&psc["appArmorProfile"]["type"]) {
        v.push("securityContext.appArmorProfile.type must be RuntimeDefault or Localhost".into());
    }
    for (n, c) in &all {
        if !apparmor_ok(&c["securityContext"]["appArmorProfile"]["type"]) {
            v.push(format!("container {n}: appArmorProfile.type must be RuntimeDefault or Localhost"));
        }
    }
    for (k, val) in annotations.as_object().into_iter().flatten() {
        if k.starts_with("container.apparmor.security.beta.kubernetes.io/") {
            let val = val.as_str().unwrap_or("");
            if val != "runtime/default" && !val.starts_with("localhost/") {
                v.push(format!("annotation {k} must be runtime/default or localhost/*"));
            }
        }
    }
    // SELinux.
    let selinux = |o: &Value, at: &str, v: &mut Vec<String>| {
        let t = o["type"].as_str();
        if t.is_some_and(|t| !t.is_empty() && !SELINUX_TYPES.contains(&t)) {
            v.push(format!("{at}seLinuxOptions.type {} is not allowed", t.unwrap_or("")));
        }
        for f in ["user", "role"] {
            if o[f].as_str().is_some_and(|s| !s.is_empty()) {
                v.push(format!("{at}seLinuxOptions.{f} must be unset"));
            }
        }
    };
    selinux(&psc["seLinuxOptions"], "securityContext.", v);
    for (n, c) in &all {
        selinux(&c["securityContext"]["seLinuxOptions"], &format!("container {n}: "), v);
    }
    // Seccomp (baseline: never Unconfined).
    if psc["seccompProfile"]["type"] == "Unconfined" {
        v.push("securityContext.seccompProfile.type must not be Unconfined".into());
    }
    for (n, c) in &all {
        if c["securityContext"]["seccompProfile"]["type"] == "Unconfined" {
            v.push(format!("container {n}: seccompProfile.type must not be Unconfined"));
        }
    }
    // Sysctls.
    for s in psc["sysctls"].as_array().into_iter().flatten() {
        let name = s["name"].as_str().unwrap_or("");
        if !SAFE_SYSCTLS.contains(&name) {
            v.push(format!("sysctl {name} is not in the safe set"));
        }
    }
}

/// The "restricted" controls.
fn restricted(spec: &Value, v: &mut Vec<String>) {
    let psc = &spec["securityContext"];
    // Volume types.
    for vol in spec["volumes"].as_array().into_iter().flatten() {
        let name = vol["name"].as_str().unwrap_or("?");
        for k in vol.as_object().into_iter().flat_map(|o| o.keys()) {
            if k != "name" && !RESTRICTED_VOLUMES.contains(&k.as_str()) {
                v.push(format!("volume {name}: type {k} is not allowed"));
            }
        }
    }
    // Running as non-root: the pod says so, or every container does (none says otherwise).
    if psc["runAsNonRoot"] == false {
        v.push("securityContext.runAsNonRoot must not be false".into());
    }
    // Running as a non-root user: no runAsUser 0 anywhere.
    if psc["runAsUser"] == 0 {
        v.push("securityContext.runAsUser must not be 0".into());
    }
    // Seccomp: RuntimeDefault or Localhost, on the pod or on every container.
    let seccomp_set = |p: &Value| p == "RuntimeDefault" || p == "Localhost";
    for (n, c) in containers(spec) {
        let sc = &c["securityContext"];
        // Privilege escalation: explicitly false on every container.
        if sc["allowPrivilegeEscalation"] != false {
            v.push(format!("container {n}: allowPrivilegeEscalation must be false"));
        }
        match &sc["runAsNonRoot"] {
            Value::Bool(true) => {}
            Value::Null if psc["runAsNonRoot"] == true => {}
            _ => v.push(format!("container {n}: runAsNonRoot must be true (here or on the pod)")),
        }
        if sc["runAsUser"] == 0 {
            v.push(format!("container {n}: runAsUser must not be 0"));
        }
        let t = &sc["seccompProfile"]["type"];
        if !(seccomp_set(t) || (t.is_null() && seccomp_set(&psc["seccompProfile"]["type"]))) {
            v.push(format!("container {n}: seccompProfile.type must be RuntimeDefault or Localhost (here or on the pod)"));
        }
        // Capabilities: drop ALL, add nothing but NET_BIND_SERVICE.
        let drop = sc["capabilities"]["drop"].as_array();
        if !drop.is_some_and(|d| d.iter().any(|c| c == "ALL")) {
            v.push(format!("container {n}: capabilities.drop must include ALL"));
        }
        for cap in sc["capabilities"]["add"].as_array().into_iter().flatten() {
            if cap != "NET_BIND_SERVICE" {
                v.push(format!("container {n}: only NET_BIND_SERVICE may be added, not {cap}"));
            }
        }
    }
}

/// The documents of a YAML stream, as JSON values (empty documents left out).
pub(crate) fn parse_yaml_stream(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("valid YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A pod that passes "restricted", the way the documentation's examples write it.
    fn compliant() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
                "initContainers": [{"name": "init", "image": "x", "securityContext": {
                    "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}],
                "containers": [{"name": "c", "image": "x", "securityContext": {
                    "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}],
                "volumes": [{"name": "v", "emptyDir": {}}, {"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]
            }
        })
    }

    #[test]
    fn the_compliant_pod_passes() {
        assert_eq!(restricted_violations(&compliant()), Vec::<String>::new());
    }

    /// Each control, broken alone, is found — and named.
    #[test]
    fn each_broken_control_is_rejected_with_its_name() {
        type Break = fn(&mut Value);
        let cases: &[(&str, Break, &str)] = &[
            ("no allowPrivilegeEscalation", |p| {
                p["spec"]["containers"][0]["securityContext"].as_object_mut().unwrap().remove("allowPrivilegeEscalation");
            }, "container c: allowPrivilegeEscalation must be false"),
            ("an init container may escalate", |p| {
                p["spec"]["initContainers"][0]["securityContext"]["allowPrivilegeEscalation"] = json!(true);
            }, "container init: allowPrivilegeEscalation must be false"),
            ("runAsNonRoot missing", |p| {
                p["spec"]["securityContext"].as_object_mut().unwrap().remove("runAsNonRoot");
            }, "runAsNonRoot must be true"),
            ("a container runs as root", |p| {
                p["spec"]["containers"][0]["securityContext"]["runAsNonRoot"] = json!(false);
            }, "container c: runAsNonRoot must be true"),
            ("runAsUser 0", |p| p["spec"]["securityContext"]["runAsUser"] = json!(0), "runAsUser must not be 0"),
            ("container runAsUser 0", |p| {
                p["spec"]["containers"][0]["securityContext"]["runAsUser"] = json!(0);
            }, "container c: runAsUser must not be 0"),
            ("no seccomp profile", |p| {
                p["spec"]["securityContext"].as_object_mut().unwrap().remove("seccompProfile");
            }, "seccompProfile.type must be RuntimeDefault or Localhost"),
            ("seccomp Unconfined on a container", |p| {
                p["spec"]["containers"][0]["securityContext"]["seccompProfile"] = json!({"type": "Unconfined"});
            }, "container c: seccompProfile.type must not be Unconfined"),
            ("capabilities not dropped", |p| {
                p["spec"]["containers"][0]["securityContext"]["capabilities"]["drop"] = json!(["NET_RAW"]);
            }, "container c: capabilities.drop must include ALL"),
            ("a capability added", |p| {
                p["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] = json!(["CHOWN"]);
            }, "only NET_BIND_SERVICE may be added"),
            ("SYS_ADMIN added", |p| {
                p["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] = json!(["SYS_ADMIN"]);
            }, "capability SYS_ADMIN may not be added"),
            ("privileged", |p| {
                p["spec"]["containers"][0]["securityContext"]["privileged"] = json!(true);
            }, "privileged must not be true"),
            ("hostPID", |p| p["spec"]["hostPID"] = json!(true), "hostPID must not be true"),
            ("hostNetwork", |p| p["spec"]["hostNetwork"] = json!(true), "hostNetwork must not be true"),
            ("a hostPath volume", |p| {
                p["spec"]["volumes"][0] = json!({"name": "h", "hostPath": {"path": "/"}});
            }, "hostPath is not allowed"),
            ("an nfs volume", |p| {
                p["spec"]["volumes"][0] = json!({"name": "n", "nfs": {"server": "s", "path": "/"}});
            }, "volume n: type nfs is not allowed"),
            ("a hostPort", |p| {
                p["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 80}]);
            }, "hostPort must be unset or 0"),
            ("procMount Unmasked", |p| {
                p["spec"]["containers"][0]["securityContext"]["procMount"] = json!("Unmasked");
            }, "procMount must be Default"),
            ("an unsafe sysctl", |p| {
                p["spec"]["securityContext"]["sysctls"] = json!([{"name": "kernel.msgmax", "value": "1"}]);
            }, "sysctl kernel.msgmax is not in the safe set"),
            ("SELinux user", |p| {
                p["spec"]["securityContext"]["seLinuxOptions"] = json!({"user": "system_u"});
            }, "seLinuxOptions.user must be unset"),
            ("AppArmor unconfined", |p| {
                p["spec"]["securityContext"]["appArmorProfile"] = json!({"type": "Unconfined"});
            }, "appArmorProfile.type must be RuntimeDefault or Localhost"),
            ("AppArmor annotation", |p| {
                p["metadata"]["annotations"] = json!({"container.apparmor.security.beta.kubernetes.io/c": "unconfined"});
            }, "must be runtime/default or localhost/*"),
            ("an ephemeral container", |p| {
                p["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "x"}]);
            }, "container debug: allowPrivilegeEscalation must be false"),
        ];
        for (what, breaks, expect) in cases {
            let mut pod = compliant();
            breaks(&mut pod);
            let v = restricted_violations(&pod);
            assert!(v.iter().any(|m| m.contains(expect)), "{what}: expected {expect:?} among {v:?}");
        }
    }

    #[test]
    fn templates_of_workloads_are_found_and_other_kinds_have_no_pod() {
        let pod = compliant();
        let mut deployment = json!({"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": pod["spec"]}}});
        assert_eq!(restricted_violations(&deployment), Vec::<String>::new());
        deployment["spec"]["template"]["spec"]["hostIPC"] = json!(true);
        assert_eq!(restricted_violations(&deployment), vec!["Deployment/d: hostIPC must not be true".to_owned()]);
        let cron = json!({"kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "x"}]}}}}}});
        assert!(!restricted_violations(&cron).is_empty());
        assert!(pod_specs(&json!({"kind": "Service", "metadata": {"name": "s"}, "spec": {}})).is_empty());
    }

    #[test]
    fn a_yaml_stream_parses_into_its_documents() {
        let docs = parse_yaml_stream("# c\napiVersion: v1\nkind: Pod\n---\nkind: Service\nmetadata: {name: s}\n");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1]["metadata"]["name"], "s");
    }
}
