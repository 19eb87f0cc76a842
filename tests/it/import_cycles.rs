//! `scripts/import_cycles.py`, the check `.ci/run` runs over `src/`, on two fixture trees
//! (`scripts/tests/import_cycles/`): it must see a circle that closes only through a
//! re-export (issue 41: it followed `pub use` to the defining file and missed a five-file
//! circle in `src/claim/`), and pass the same tree once the import names the defining file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(fixture: &str) -> Option<Output> {
    let Some(python) = ["/usr/bin/python3", "/bin/python3"].into_iter().find(|p| Path::new(p).exists()) else {
        crate::services::skip(&format!("import_cycles {fixture}"), "python3 is not installed");
        return None;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(python)
        .arg(root.join("scripts/import_cycles.py"))
        .arg(root.join("scripts/tests/import_cycles").join(fixture))
        .output()
        .unwrap();
    Some(out)
}

#[test]
fn a_circle_through_a_re_export_is_found() {
    let Some(out) = run("circle") else { return };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("cycle of 2 files:"), "{stdout}");
    assert!(stdout.contains("error.rs -> work/mod.rs"), "{stdout}");
    assert!(stdout.contains("work/mod.rs -> error.rs"), "{stdout}");
}

#[test]
fn importing_from_the_defining_file_breaks_the_circle() {
    let Some(out) = run("fixed") else { return };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout, "no import cycle among 4 files\n");
}
