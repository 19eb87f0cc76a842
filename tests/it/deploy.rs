//! The deployment files checked by the tools that consume them: `promtool check rules` and
//! `promtool test rules` on `deploy/prometheus/`, `systemd-analyze verify` on
//! `deploy/systemd/`, and the Kubernetes manifest's promises read back from its YAML.
//! A missing tool is a loud skip, and a failure under `WRITERCTL_REQUIRE_SERVICES=1` (CI
//! installs them: `.ci/run`).

use std::path::PathBuf;

/// `name` on PATH, or None after a loud skip (a panic under WRITERCTL_REQUIRE_SERVICES=1).
pub(crate) fn tool(test: &str, name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file());
    if found.is_none() {
        crate::services::skip(test, &format!("{name} is not installed (Debian: apt-get install prometheus / systemd)"));
    }
    found
}
