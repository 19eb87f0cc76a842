//! Issue 29: `WRITERCTL_TRUSTED_GROUPS` (CLI.md "Additions"). A group-writable lock
//! directory, `R/tmp` or transcript directory — what a Kubernetes `fsGroup` volume looks like
//! — is refused as before without the setting, accepted when its group is named (by number
//! or by name), and still refused when another group is named or when it is world-writable.
//! An unknown group name is a usage error for every command. Changing a directory's group
//! needs root: elsewhere the tests skip loudly (a failure under
//! `WRITERCTL_REQUIRE_SERVICES=1`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::*;

const S: &str = "fsgroup-session";
const GATE: (&str, &str) = ("WRITERCTL_SESSION_WRITER_LEASE", "1");
const VAR: &str = "WRITERCTL_TRUSTED_GROUPS";
const LIMIT: Duration = Duration::from_secs(20);
/// A gid no group database needs to know: Kubernetes gives a volume the pod's numeric
/// `fsGroup`, which need not name a group in the image.
const FS_GROUP: u32 = 42_429;
const KEY: &str = "chats/fsgroup-session.jsonl";

/// A live holder, a scratch runtime, and a token file for a plain `acquire`.
struct Scene {
    holder: LiveHolder,
    env: TestEnv,
    token: PathBuf,
}

impl Scene {
    /// `None`, after a loud skip, when this process cannot give a directory another group.
    fn new(test: &str) -> Option<Scene> {
        if rustix::process::geteuid().as_raw() != 0 {
            crate::services::skip(test, "giving a directory another group needs root");
            return None;
        }
        let env = TestEnv::new();
        let token = env.tmp.path().join("owner.token");
        Some(Scene { holder: LiveHolder::start(), env, token })
    }

    fn pid(&self) -> String {
        self.holder.pid().to_string()
    }

    /// `acquire` of the session for the live holder.
    fn acquire(&self) -> Vec<String> {
        let (pid, token) = (self.pid(), self.token.to_str().unwrap().to_owned());
        ["acquire", "--json", "--session", S, "--pid", &pid, "--token-file", &token].map(String::from).to_vec()
    }
}

/// `chgrp gid path && chmod mode path`.
fn group_dir(path: &Path, gid: u32, mode: u32) {
    std::fs::create_dir_all(path).unwrap();
    std::os::unix::fs::chown(path, None, Some(gid)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `args` with the gate on and `vars`, bounded.
#[track_caller]
fn cli(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut all = vec![GATE];
    all.extend_from_slice(vars);
    cli_bounded(env, args, &all, LIMIT).unwrap_or_else(|| panic!("`{}` hung", args.join(" ")))
}

#[track_caller]
fn refused(r: &Run, what: &str) {
    assert_eq!(
        (r.code, try_error_code(r).as_deref()),
        (2, Some("invalid_argument")),
        "{what}\nstdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn a_group_writable_lock_directory_is_trusted_only_for_a_named_group() {
    let Some(sc) = Scene::new("a_group_writable_lock_directory_is_trusted_only_for_a_named_group") else { return };
    let (env, token) = (&sc.env, &sc.token);
    let acquire = sc.acquire();
    let acquire = strs(&acquire);
    let gid = FS_GROUP.to_string();
    // What the kubelet makes of a volume for fsGroup: setgid, group-writable.
    group_dir(&env.lock_dir(), FS_GROUP, 0o2770);

    let r = cli(env, &acquire, &[]);
    refused(&r, "a group-writable lock directory without the setting");
    assert!(r.stdout.contains("WRITERCTL_TRUSTED_GROUPS=42429"), "the hint names the setting: {}", r.stdout);
    refused(&cli(env, &acquire, &[(VAR, "42430")]), "another group named");
    assert!(env.lock_dir_names().is_empty(), "a refused acquire wrote {:?}", env.lock_dir_names());

    cli(env, &acquire, &[(VAR, &format!("42430, {gid}"))]).assert_ok();
    cli(env, &["status", "--json", "--session", S], &[(VAR, &gid)]).assert_ok();
    refused(&cli(env, &["status", "--json", "--session", S], &[]), "status without the setting");
    let release = ["release", "--json", "--session", S, "--token-file", token.to_str().unwrap()];
    cli(env, &release, &[(VAR, &gid)]).assert_ok();

    // World-writable stays refused whatever group is named, and so does a trusted group
    // without group write but with world write.
    for mode in [0o2777, 0o0777, 0o0772] {
        std::fs::set_permissions(env.lock_dir(), std::fs::Permissions::from_mode(mode)).unwrap();
        let r = cli(env, &acquire, &[(VAR, &gid)]);
        refused(&r, &format!("a {mode:o} lock directory with its group trusted"));
        assert!(!r.stdout.contains("WRITERCTL_TRUSTED_GROUPS="), "no setting can help 0{mode:o}: {}", r.stdout);
    }
}

#[test]
fn a_group_writable_runtime_tmp_is_trusted_only_for_a_named_group() {
    let Some(sc) = Scene::new("a_group_writable_runtime_tmp_is_trusted_only_for_a_named_group") else { return };
    let env = &sc.env;
    let acquire = sc.acquire();
    let acquire = strs(&acquire);
    let gid = FS_GROUP.to_string();
    group_dir(&env.runtime().join("tmp"), FS_GROUP, 0o2775);

    let r = cli(env, &acquire, &[]);
    refused(&r, "a group-writable R/tmp without the setting");
    assert!(r.stdout.contains("runtime tmp directory"), "{}", r.stdout);
    assert!(!env.runtime().join("tmp/session-writer-locks").exists(), "created beneath a refused R/tmp");
    refused(&cli(env, &acquire, &[(VAR, "42430")]), "another group named");
    cli(env, &acquire, &[(VAR, &gid)]).assert_ok();
}

#[test]
fn a_group_writable_transcript_directory_is_trusted_only_for_a_named_group() {
    let Some(sc) = Scene::new("a_group_writable_transcript_directory_is_trusted_only_for_a_named_group") else {
        return;
    };
    let (env, pid) = (&sc.env, sc.pid());
    let gid = FS_GROUP.to_string();
    let trusted = [(VAR, gid.as_str())];
    let transcript = env.runtime().join(KEY);
    group_dir(transcript.parent().unwrap(), FS_GROUP, 0o2770);
    std::fs::write(&transcript, b"{\"type\":\"user\"}\n").unwrap();
    std::fs::set_permissions(&transcript, std::fs::Permissions::from_mode(0o600)).unwrap();
    let tf = sc.token.to_str().unwrap();
    let managed = ["acquire", "--managed", "--json", "--session", S, "--pid", &pid, "--token-file", tf];
    let managed: Vec<&str> = managed.into_iter().chain(["--transcript-key", KEY]).collect();
    cli(env, &managed, &trusted).assert_ok();

    let seal = ["seal", "--json", "--session", S, "--token-file", tf, "--transcript-key", KEY];
    let r = cli(env, &seal, &[]);
    refused(&r, "seal under a group-writable transcript directory without the setting");
    assert!(r.stdout.contains("transcript directory"), "{}", r.stdout);
    assert!(r.stdout.contains("WRITERCTL_TRUSTED_GROUPS=42429"), "{}", r.stdout);
    refused(&cli(env, &seal, &[(VAR, "42430")]), "seal with another group named");
    cli(env, &seal, &trusted).assert_ok();
}

#[test]
fn groups_are_named_by_number_or_by_a_name_that_exists() {
    let Some(sc) = Scene::new("groups_are_named_by_number_or_by_a_name_that_exists") else { return };
    let env = &sc.env;
    let acquire = sc.acquire();
    let acquire = strs(&acquire);
    // Group root (gid 0) exists on every Linux system.
    group_dir(&env.lock_dir(), 0, 0o0770);
    refused(&cli(env, &acquire, &[]), "a root-group-writable lock directory without the setting");
    let r = cli(env, &acquire, &[(VAR, "no-such-group-writerctl")]);
    refused(&r, "an unknown group name");
    assert!(r.stdout.contains("no-such-group-writerctl"), "the error names the group: {}", r.stdout);
    assert!(env.lock_dir_names().is_empty(), "an unknown group still wrote {:?}", env.lock_dir_names());
    // Every command reads the setting at start, even one that touches no directory.
    refused(&cli(env, &["status", "--json"], &[(VAR, "no-such-group-writerctl")]), "status, unknown group");
    cli(env, &acquire, &[(VAR, "root")]).assert_ok();

    // The config file's key, for a deployment that prefers it to the variable.
    let cfg = env.tmp.path().join("config.toml");
    std::fs::write(&cfg, "trusted_groups = [\"root\"]\n").unwrap();
    let config = [("WRITERCTL_CONFIG", cfg.to_str().unwrap())];
    cli(env, &["status", "--json", "--session", S], &config).assert_ok();
    refused(&cli(env, &["status", "--json", "--session", S], &[]), "status without file or variable");
}
