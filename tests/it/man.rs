//! `writerctl man [COMMAND]` (issue 40 point 7): the man pages from the binary itself, for a
//! `cargo install` that installs none. The pages it prints are byte for byte the checked-in
//! ones in man/ (which a unit test keeps current), so both come from one renderer.

use std::path::Path;

use serde::Deserialize;

use crate::support::TestEnv;

fn checked_in(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("man").join(format!("{name}.1"))).unwrap()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageJson {
    page: String,
    roff: String,
}

#[test]
fn man_prints_the_page_of_the_command_named_as_typed() {
    let env = TestEnv::new();
    // Not a terminal (a pipe here): the roff source, for `man -l -`.
    for (args, page) in [
        (&["man"][..], "writerctl"),
        (&["man", "run"][..], "writerctl-run"),
        (&["man", "master", "claim"][..], "writerctl-master-claim"),
        (&["man", "coordinator", "admin-token", "new"][..], "writerctl-coordinator-admin-token-new"),
        (&["man", "man"][..], "writerctl-man"),
    ] {
        let r = env.run_raw(args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert_eq!(r.stdout.as_bytes(), checked_in(page), "{args:?}");
    }
    let doc = args_json(&env, &["man", "seal", "--json"]);
    assert_eq!(doc.page, "writerctl-seal");
    assert_eq!(doc.roff.into_bytes(), checked_in("writerctl-seal"));
    // --help points at it.
    let help = env.run_raw(&["--help"]);
    assert!(help.stdout.contains("writerctl man <subcommand>"), "{}", help.stdout);
}

fn args_json(env: &TestEnv, args: &[&str]) -> PageJson {
    let r = env.run_raw(args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

#[test]
fn man_without_such_a_command_is_a_usage_error_and_out_dir_installs_every_page() {
    let env = TestEnv::new();
    let r = env.run_raw(&["man", "sael", "--json"]);
    r.assert_error(2, "usage");
    let dir = env.tmp.path().join("share/man/man1");
    let r = env.run_raw(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let mut want: Vec<String> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    let mut got: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    for name in &got {
        assert_eq!(std::fs::read(dir.join(name)).unwrap(), std::fs::read(root.join(name)).unwrap(), "{name}");
    }
    // A page and --out-dir at once is refused by clap.
    let r = env.run_raw(&["man", "run", "--out-dir", dir.to_str().unwrap()]);
    assert!(r.code == 2 && r.stderr.contains("cannot be used with"), "{}: {}", r.code, r.stderr);
}
