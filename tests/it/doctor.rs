//! `writerctl doctor` (issue 30 point 4): one read-only diagnosis of a runtime directory and
//! a coordinator. Staged lock directories (fenced, stale, in transition), a coordinator
//! that is down, served ones (plain, with open registration, over TLS with a certificate
//! about to expire) and embedded store files; every run is checked for its exit code, its
//! `--json` document, and — for the runtime directory — that nothing in it changed (names,
//! bytes, inodes, modes and mtimes).

use std::path::Path;

use serde::Deserialize;

use crate::serve::Server;
use crate::support::*;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Report {
    verdict: String,
    checks: Vec<CheckJson>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckJson {
    name: String,
    verdict: String,
    detail: String,
    hint: Option<String>,
}

impl Report {
    #[track_caller]
    fn check(&self, name: &str) -> &CheckJson {
        self.checks.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no check {name}: {self:#?}"))
    }

    fn names(&self) -> Vec<&str> {
        self.checks.iter().map(|c| c.name.as_str()).collect()
    }
}

const OWNER: &str = "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f";

/// `doctor --json` with `--runtime-dir R`, plus `extra` and `env`; asserts the runtime
/// directory is exactly as it was (names, bytes, inodes, modes, mtimes).
fn doctor(env: &TestEnv, extra: &[&str], vars: &[(&str, &str)]) -> (Run, Report) {
    let before = meta_tree(&env.runtime());
    let mut c = env.cmd();
    c.args(["doctor", "--json"]).args(extra).arg("--runtime-dir").arg(env.runtime());
    c.envs(vars.iter().copied());
    let r = run_bounded(c, std::time::Duration::from_secs(60)).expect("doctor hangs");
    assert_eq!(meta_tree(&env.runtime()), before, "doctor changed the runtime directory");
    let report: Report = r.json();
    (r, report)
}

fn foreign_host_record(session: &str) -> String {
    let l = local();
    qwen_active(
        session,
        OWNER,
        i32::MAX as u64,
        Some(&format!("linux:{}:12345", l.boot_id)),
        Some(l.pid_ns),
        "some-other-host",
    )
}

#[test]
fn a_clean_directory_is_ok_and_exits_0() {
    let env = TestEnv::new();
    // Before the first acquire: nothing under R, and doctor creates nothing.
    let (r, rep) = doctor(&env, &[], &[]);
    assert_eq!((r.code, rep.verdict.as_str()), (0, "ok"), "{rep:#?}");
    assert!(!env.runtime().join("tmp").exists(), "doctor created R/tmp");
    // With a live lock.
    let holder = LiveHolder::start();
    env.acquire_for("live", holder.pid());
    let (r, rep) = doctor(&env, &[], &[]);
    assert_eq!((r.code, rep.verdict.as_str()), (0, "ok"), "{rep:#?}");
    assert_eq!(rep.names(), ["runtime_dir", "filesystem", "ownership.runtime_tmp", "ownership.lock_dir", "locks"]);
    assert!(rep.checks.iter().all(|c| c.verdict == "ok" && c.hint.is_none()), "{rep:#?}");
    assert!(rep.check("filesystem").detail.contains("type "), "{rep:#?}");
    assert!(rep.check("locks").detail.contains("1 active"), "{rep:#?}");
    // Text mode: one line per check and the verdict.
    let t = env.run(&["doctor"]);
    assert_eq!(t.code, 0, "{}{}", t.stdout, t.stderr);
    assert!(t.stdout.contains("ok    filesystem:") && t.stdout.ends_with("verdict: ok (5 checks)\n"), "{}", t.stdout);
    holder.stop();
}

#[test]
fn a_fenced_lock_fails_exits_1_and_is_named_with_its_next_step() {
    let env = TestEnv::new();
    stage(&env.lock("fenced-one"), foreign_host_record("fenced-one").as_bytes());
    let (r, rep) = doctor(&env, &[], &[]);
    assert_eq!((r.code, rep.verdict.as_str()), (1, "fail"), "{rep:#?}");
    let c = rep.check("lock.fenced-one");
    assert_eq!(c.verdict, "fail");
    assert!(c.detail.starts_with("fenced: ") && c.detail.contains("some-other-host"), "{c:?}");
    assert!(c.hint.as_deref().unwrap().contains("writerctl recover"), "{c:?}");
    assert!(rep.check("locks").detail.contains("1 fenced"), "{rep:#?}");
    // Text mode names it on stdout, and the failure with its stable code on stderr.
    let t = env.run(&["doctor"]);
    assert_eq!(t.code, 1);
    assert!(t.stdout.contains("FAIL  lock.fenced-one: fenced"), "{}", t.stdout);
    assert!(
        t.stderr.contains("lock.fenced-one") && t.stderr.contains("(code: doctor_found_failures, exit 1)"),
        "{}",
        t.stderr
    );
}

#[test]
fn a_stale_lock_run_reclaims_warns_one_it_never_can_and_a_transition_fail() {
    let env = TestEnv::new();
    // Gone, with a free holder lock that is the file the record names: the next `run`
    // reclaims it by the kernel's proof — a warning.
    std::fs::create_dir_all(env.lock_dir()).unwrap();
    let holder = env.lock_dir().join("stale-proven.lock.holder.0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f");
    std::fs::write(&holder, b"").unwrap();
    let rec = qwen_active_dead("stale-proven", OWNER).replacen(
        '}',
        &format!(
            r#","writerctl_holder_lock":"{}","writerctl_holder_lock_id":"{}"}}"#,
            holder.file_name().unwrap().to_str().unwrap(),
            holder_file_id(&holder)
        ),
        1,
    );
    stage(&env.lock("stale-proven"), rec.as_bytes());
    let (r, rep) = doctor(&env, &[], &[]);
    assert_eq!((r.code, rep.verdict.as_str()), (0, "warn"), "{rep:#?}");
    let c = rep.check("lock.stale-proven");
    assert!(c.verdict == "warn" && c.detail.starts_with("stale (the next `writerctl run` reclaims"), "{c:?}");

    // Gone by the pid table only (no holder lock): plain acquire could reclaim it, `run`
    // never will — a crash loop unless a person acts (issue 38): a failure, with the fix.
    stage(&env.lock("stale-one"), qwen_active_dead("stale-one", OWNER).as_bytes());
    let (r, rep) = doctor(&env, &[], &[]);
    assert_eq!((r.code, rep.verdict.as_str()), (1, "fail"), "{rep:#?}");
    let c = rep.check("lock.stale-one");
    assert!(c.verdict == "fail" && c.detail.starts_with("stale, but no `writerctl run`"), "{c:?}");
    assert!(
        c.hint.as_deref().unwrap().contains("writerctl recover --session stale-one --writers-fenced --yes"),
        "{c:?}"
    );

    // A crashed takeover's claim: every acquire answers unavailable until an operator acts.
    let claim = env.lock_dir().join("stuck.lock.claim");
    stage(&claim, qwen_active_dead("stuck", OWNER).as_bytes());
    let (r, rep) = doctor(&env, &[], &[]);
    assert_eq!((r.code, rep.verdict.as_str()), (1, "fail"), "{rep:#?}");
    let c = rep.check("lock.stuck");
    assert!(c.verdict == "fail" && c.detail.starts_with("in transition"), "{c:?}");
    assert!(c.hint.as_deref().unwrap().contains("recover"), "{c:?}");
    assert_eq!(rep.check("lock.stale-proven").verdict, "warn");
}

#[test]
fn a_lock_directory_others_can_write_fails_unless_its_group_is_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let dir = env.lock_dir();
    std::fs::set_permissions(env.runtime().join("tmp"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o770)).unwrap();
    let (r, rep) = doctor(&env, &[], &[]);
    assert_eq!(r.code, 1, "{rep:#?}");
    let c = rep.check("ownership.lock_dir");
    assert!(c.verdict == "fail" && c.detail.contains("0770"), "{c:?}");
    assert!(c.hint.as_deref().unwrap().contains("WRITERCTL_TRUSTED_GROUPS"), "{c:?}");
    let gid = std::os::unix::fs::MetadataExt::gid(&std::fs::metadata(&dir).unwrap()).to_string();
    let (r, rep) = doctor(&env, &[], &[("WRITERCTL_TRUSTED_GROUPS", &gid)]);
    assert_eq!((r.code, rep.verdict.as_str()), (0, "ok"), "{rep:#?}");
    assert!(rep.check("ownership.lock_dir").detail.contains("is trusted by WRITERCTL_TRUSTED_GROUPS"), "{rep:#?}");
}

#[test]
fn a_missing_runtime_directory_fails_and_nothing_named_is_a_usage_error() {
    let env = TestEnv::new();
    let gone = env.tmp.path().join("nowhere");
    let r = env.run_raw(&["doctor", "--json", "--runtime-dir", gone.to_str().unwrap()]);
    let rep: Report = r.json();
    assert_eq!((r.code, rep.names()), (1, vec!["runtime_dir"]), "{rep:#?}");
    assert!(rep.check("runtime_dir").detail.contains("runtime_dir_missing"), "{rep:#?}");
    assert!(!gone.exists());
    env.run_raw(&["doctor", "--json"]).assert_error(2, "usage");
}

#[test]
fn a_coordinator_that_is_down_fails_with_the_transports_own_message() {
    let env = TestEnv::new();
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let (r, rep) = doctor(&env, &["--coordinator", &url], &[]);
    assert_eq!((r.code, rep.verdict.as_str()), (1, "fail"), "{rep:#?}");
    let c = rep.check("coordinator.reachable");
    assert!(c.detail.contains("connection refused: nothing listens at 127.0.0.1"), "{c:?}");
    assert!(c.hint.as_deref().unwrap().contains("coordinator serve"), "{c:?}");
    // The same address from the environment.
    let (r, rep) = doctor(&env, &[], &[("WRITERCTL_COORDINATOR", &url)]);
    assert_eq!(r.code, 1);
    assert_eq!(rep.check("coordinator.reachable").verdict, "fail");
}

fn serve(home: &Path, extra: &[&str]) -> Server {
    let mut args = vec!["--store".to_string(), format!("sqlite:{}", home.join("store.sqlite").display())];
    args.extend(extra.iter().map(|s| s.to_string()));
    Server::start(home, &args, &[])
}

#[test]
fn a_served_coordinator_is_ready_with_its_clock_and_store_checked() {
    let env = TestEnv::new();
    let home = tempfile::tempdir().unwrap();
    let server = serve(home.path(), &[]);
    let (r, rep) = doctor(&env, &["--coordinator", &server.url], &[]);
    assert_eq!((r.code, rep.verdict.as_str()), (0, "ok"), "{rep:#?}");
    for name in [
        "coordinator.transport",
        "coordinator.reachable",
        "coordinator.ready",
        "coordinator.open_registration",
        "coordinator.clock",
        "coordinator.store",
    ] {
        assert_eq!(rep.check(name).verdict, "ok", "{name}: {rep:#?}");
    }
    assert!(rep.check("coordinator.ready").detail.starts_with("ready, not degraded"), "{rep:#?}");
    assert!(
        rep.check("coordinator.clock").detail.contains("s ahead of")
            || rep.check("coordinator.clock").detail.contains("s behind")
    );
    // No TLS check for http://.
    assert!(!rep.names().contains(&"coordinator.tls_certificate"));

    // A lab server with open registration: a warning, exit 0.
    let home2 = tempfile::tempdir().unwrap();
    let lab = serve(home2.path(), &["--open-registration"]);
    let (r, rep) = doctor(&env, &["--coordinator", &lab.url], &[]);
    assert_eq!((r.code, rep.verdict.as_str()), (0, "warn"), "{rep:#?}");
    let c = rep.check("coordinator.open_registration");
    assert!(c.verdict == "warn" && c.detail.starts_with("on:"), "{c:?}");
}

#[test]
fn a_tls_certificate_about_to_expire_warns_with_its_date() {
    use rcgen::{CertificateParams, KeyPair};
    let env = TestEnv::new();
    let home = tempfile::tempdir().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::days(1);
    params.not_after = now + time::Duration::days(3);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let (cert_file, key_file) = (home.path().join("cert.pem"), home.path().join("key.pem"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let server =
        serve(home.path(), &["--tls-cert", cert_file.to_str().unwrap(), "--tls-key", key_file.to_str().unwrap()]);
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let ca = cert_file.to_str().unwrap();
    let (r, rep) = doctor(&env, &["--coordinator", &server.url], &[("WRITERCTL_COORDINATOR_CA", ca)]);
    assert_eq!((r.code, rep.verdict.as_str()), (0, "warn"), "{rep:#?}");
    assert_eq!(rep.check("coordinator.ready").verdict, "ok", "{rep:#?}");
    let c = rep.check("coordinator.tls_certificate");
    assert_eq!(c.verdict, "warn", "{c:?}");
    assert!(c.detail.contains("in 2 days") || c.detail.contains("in 3 days"), "{c:?}");
    // Without the CA the client refuses the handshake, and says so; the expiry is still read.
    let (r, rep) = doctor(&env, &["--coordinator", &server.url], &[]);
    assert_eq!(r.code, 1, "{rep:#?}");
    assert!(rep.check("coordinator.reachable").detail.contains("certificate"), "{rep:#?}");
    assert_eq!(rep.check("coordinator.tls_certificate").verdict, "warn", "{rep:#?}");
}

#[test]
fn the_embedded_store_file_is_checked_for_presence_and_mode() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let store = env.tmp.path().join("coordinator.sqlite");
    let target = format!("sqlite:{}", store.display());
    let (r, rep) = doctor(&env, &["--coordinator", &target], &[]);
    assert_eq!((r.code, rep.check("coordinator.store_file").verdict.as_str()), (0, "warn"), "{rep:#?}");
    assert!(!store.exists(), "doctor created the store");
    std::fs::write(&store, b"").unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (r, rep) = doctor(&env, &["--coordinator", &target], &[]);
    assert_eq!(r.code, 1, "{rep:#?}");
    assert!(rep.check("coordinator.store_file").detail.contains("mode 0644"), "{rep:#?}");
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (r, rep) = doctor(&env, &["--coordinator", &target], &[]);
    assert_eq!((r.code, rep.verdict.as_str()), (0, "ok"), "{rep:#?}");
}

/// `doctor --json --storage --runtime-dir R` plus `vars`: the Kubernetes initContainer's
/// command. It writes one probe file and removes it: the names under R stay as they were.
fn doctor_storage(env: &TestEnv, runtime: &Path, vars: &[(&str, &str)]) -> (Run, Report) {
    let before: Vec<String> = tree(runtime).into_keys().collect();
    let mut c = env.cmd();
    c.args(["doctor", "--json", "--storage", "--runtime-dir"]).arg(runtime).envs(vars.iter().copied());
    let r = run_bounded(c, std::time::Duration::from_secs(60)).expect("doctor --storage hangs");
    assert_eq!(tree(runtime).into_keys().collect::<Vec<_>>(), before, "doctor --storage left something behind");
    let report: Report = r.json();
    (r, report)
}

/// Issue 40: `doctor --storage` checks what the volume decides — and proves a file can be
/// created and hard-linked beside the lock directory — but not lock states: a lock that
/// another Pod holds (the one a rollout replaces) must not fail the new Pod's initContainer.
#[test]
fn doctor_storage_checks_the_volume_only_and_proves_it_can_link() {
    let env = TestEnv::new();
    // Before the first acquire the probe runs in R itself.
    let (r, rep) = doctor_storage(&env, &env.runtime(), &[]);
    assert_eq!((r.code, rep.verdict.as_str()), (0, "ok"), "{rep:#?}");
    assert_eq!(rep.names(), ["runtime_dir", "filesystem", "ownership.runtime_tmp", "ownership.lock_dir", "storage.link"]);
    let link = rep.check("storage.link");
    assert!(link.detail.contains("hard-linked") && link.detail.contains(env.runtime().to_str().unwrap()), "{link:?}");
    // A lock held on another host: the full doctor fails it, the storage check does not look.
    stage(&env.lock("held-elsewhere"), foreign_host_record("held-elsewhere").as_bytes());
    let (full, _) = doctor(&env, &[], &[]);
    assert_eq!(full.code, 1);
    let (r, rep) = doctor_storage(&env, &env.runtime(), &[]);
    assert_eq!((r.code, rep.verdict.as_str()), (0, "ok"), "{rep:#?}");
    // Beside the lock directory, never inside it (scans there read every name).
    let link = &rep.check("storage.link").detail;
    assert!(link.contains(&format!("in {}/tmp as", env.runtime().display())), "{link}");
    // --storage needs a runtime directory.
    let mut c = env.cmd();
    c.args(["doctor", "--json", "--storage"]);
    run_bounded(c, std::time::Duration::from_secs(30)).unwrap().assert_error(2, "usage");
}

/// Issue 40: a volume without hard links (an SMB share without unix extensions such as
/// Azure Files over SMB; here exFAT, with its FUSE type allowed so that only the probe can
/// tell) fails `doctor --storage` with the reason, exit 1, before any `run` could crash-loop.
#[test]
fn doctor_storage_fails_a_volume_without_hard_links() {
    let test = "doctor_storage_fails_a_volume_without_hard_links";
    let Some(fs) = crate::fsmount::NoHardLinks::mount(test, "") else { return };
    let env = TestEnv::new();
    let r_dir = fs.dir().join("runtime");
    std::fs::create_dir(&r_dir).unwrap();
    let fs_type = fs.fs_type();
    let (r, rep) = doctor_storage(&env, &r_dir, &[("WRITERCTL_ALLOW_FILESYSTEM", fs_type.as_str())]);
    assert_eq!((r.code, rep.verdict.as_str()), (1, "fail"), "{rep:#?}");
    let link = rep.check("storage.link");
    assert_eq!(link.verdict, "fail", "{link:?}");
    assert!(link.detail.contains("hard links") && link.detail.contains("filesystem_unsupported"), "{link:?}");
}
