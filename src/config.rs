//! The config file and the feature gate, read once at process start.
//!
//! ```toml
//! # ~/.config/writerctl/config.toml (or $WRITERCTL_CONFIG)
//! trusted_groups = ["2000"]          # or "2000,writers"; names or numeric gids
//!
//! [experimental]
//! session_writer_lease = true
//! ```
//!
//! `WRITERCTL_SESSION_WRITER_LEASE` (`1`/`true` or `0`/`false`) overrides the file. The gate
//! is off by default: seal and certified takeover change what a lock means to every other
//! writer, so they are opt-in for a whole deployment (seed 001 "Compatibility and rollout").
//!
//! `WRITERCTL_TRUSTED_GROUPS=G[,G]` overrides `trusted_groups`: the groups whose
//! group-writable lock, `R/tmp` and transcript directories are trusted (issue 29, a
//! Kubernetes `fsGroup`; see [`crate::lockfile::trust`]). Names are resolved here, once, and
//! an unknown one is an error rather than a group silently not trusted.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::lockfile::trust::{GroupError, TRUSTED_GROUPS_ENV, TrustedGroups};

/// Why the configuration could not be read. Fail closed: a broken config is an error, never
/// silently "gate off".
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read config file {}: {source}", .path.display())]
    Read {
        /// Path.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML of the expected shape.
    #[error("config file {} is invalid: {message}", .path.display())]
    Parse {
        /// Path.
        path: PathBuf,
        /// Parser message.
        message: String,
    },
    /// The environment override is not a boolean.
    #[error("WRITERCTL_SESSION_WRITER_LEASE must be 1, 0, true or false (got {0:?})")]
    BadEnv(String),
    /// `trusted_groups` / `WRITERCTL_TRUSTED_GROUPS` names a group that does not exist.
    #[error(transparent)]
    Group(#[from] GroupError),
}

impl ConfigError {
    /// What to do next, for the `hint:` line.
    pub fn hint(&self) -> &'static str {
        match self {
            ConfigError::Group(_) => {
                "name groups that exist here, or their numeric ids, in WRITERCTL_TRUSTED_GROUPS (or trusted_groups in the config file)"
            }
            _ => "fix or remove the config file (WRITERCTL_CONFIG)",
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    experimental: Experimental,
    #[serde(default)]
    trusted_groups: Option<Groups>,
}

/// `trusted_groups`: a list of names and ids, or one string as the variable takes it.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Groups {
    List(Vec<GroupName>),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum GroupName {
    Id(u32),
    Name(String),
}

impl Groups {
    fn specs(&self) -> Vec<String> {
        match self {
            Groups::Text(t) => t.split(',').map(str::to_owned).collect(),
            Groups::List(l) => l
                .iter()
                .map(|g| match g {
                    GroupName::Id(id) => id.to_string(),
                    GroupName::Name(n) => n.clone(),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Experimental {
    #[serde(default)]
    session_writer_lease: bool,
}

/// The settings a process runs with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// `experimental.session_writer_lease`: seal and certified takeover allowed.
    pub session_writer_lease: bool,
    /// `trusted_groups`, resolved; `main` hands them to
    /// [`crate::lockfile::trust::set_trusted_groups`].
    pub trusted_groups: TrustedGroups,
}

/// The config file path: `$WRITERCTL_CONFIG`, else `$XDG_CONFIG_HOME/writerctl/config.toml`,
/// else `~/.config/writerctl/config.toml`.
pub fn config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(p) = env("WRITERCTL_CONFIG").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    if let Some(x) = env("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Some(Path::new(&x).join("writerctl/config.toml"));
    }
    env("HOME").filter(|v| !v.is_empty()).map(|h| Path::new(&h).join(".config/writerctl/config.toml"))
}

/// Largest config file read. The file holds one boolean today; a few KiB leaves room for
/// comments and future keys.
pub const MAX_CONFIG_BYTES: usize = 16 * 1024;

/// Reads the config file: `None` when it does not exist.
///
/// Why not `read_to_string` (issue 22): `WRITERCTL_CONFIG` can name a FIFO (every command,
/// even `status`, hung in `open`) or `/dev/zero` (18 GB of memory in a minute), and the
/// file is read by every command at start. [`read_small_regular`] opens it
/// `O_NOFOLLOW|O_NONBLOCK`, requires a regular file and stops at [`MAX_CONFIG_BYTES`]; so a
/// symlinked config is refused too (point `WRITERCTL_CONFIG` at the real file).
///
/// [`read_small_regular`]: crate::lockfile::sys::read_small_regular
fn read_config_file(path: &Path) -> Result<Option<String>, std::io::Error> {
    use crate::lockfile::sys::{SmallFileError, read_small_regular};
    match read_small_regular(path, MAX_CONFIG_BYTES) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "the config file is not UTF-8")),
        Err(SmallFileError::Missing) => Ok(None),
        Err(SmallFileError::Io(e)) => Err(e),
        Err(other) => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, other.to_string())),
    }
}

/// Loads the settings from the environment and the config file (a missing file is fine).
pub fn load(env: &dyn Fn(&str) -> Option<String>) -> Result<Settings, ConfigError> {
    let mut settings = Settings::default();
    let mut group_specs = Vec::new();
    if let Some(path) = config_path(env) {
        match read_config_file(&path) {
            Ok(Some(text)) => {
                let file: File = toml::from_str(&text)
                    .map_err(|e| ConfigError::Parse { path: path.clone(), message: e.to_string() })?;
                settings.session_writer_lease = file.experimental.session_writer_lease;
                group_specs = file.trusted_groups.map(|g| g.specs()).unwrap_or_default();
            }
            Ok(None) => {}
            Err(source) => return Err(ConfigError::Read { path, source }),
        }
    }
    if let Some(v) = env("WRITERCTL_SESSION_WRITER_LEASE") {
        settings.session_writer_lease = match v.trim() {
            "1" | "true" => true,
            "0" | "false" | "" => false,
            _ => return Err(ConfigError::BadEnv(v)),
        };
    }
    if let Some(v) = env(TRUSTED_GROUPS_ENV) {
        group_specs = v.split(',').map(str::to_owned).collect();
    }
    settings.trusted_groups = TrustedGroups::resolve(group_specs.iter().map(String::as_str))?;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn off_by_default_on_by_env_or_file() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().to_str().unwrap();
        assert!(!load(&env_of(&[("HOME", home)])).unwrap().session_writer_lease);
        assert!(
            load(&env_of(&[("HOME", home), ("WRITERCTL_SESSION_WRITER_LEASE", "1")])).unwrap().session_writer_lease
        );
        let cfg = t.path().join("c.toml");
        std::fs::write(&cfg, "[experimental]\nsession_writer_lease = true\n").unwrap();
        let c = cfg.to_str().unwrap();
        assert!(load(&env_of(&[("WRITERCTL_CONFIG", c)])).unwrap().session_writer_lease);
        assert!(
            !load(&env_of(&[("WRITERCTL_CONFIG", c), ("WRITERCTL_SESSION_WRITER_LEASE", "0")]))
                .unwrap()
                .session_writer_lease
        );
    }

    #[test]
    fn a_fifo_device_symlink_or_huge_config_is_refused_without_hanging() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("fifo.toml");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let real = t.path().join("real.toml");
        std::fs::write(&real, "[experimental]\nsession_writer_lease = true\n").unwrap();
        let link = t.path().join("link.toml");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let huge = t.path().join("huge.toml");
        std::fs::write(&huge, vec![b'#'; MAX_CONFIG_BYTES + 1]).unwrap();
        for p in [fifo.as_path(), Path::new("/dev/zero"), link.as_path(), huge.as_path()] {
            let e = load(&env_of(&[("WRITERCTL_CONFIG", p.to_str().unwrap())])).unwrap_err();
            assert!(matches!(e, ConfigError::Read { .. }), "{}: {e}", p.display());
        }
        assert!(load(&env_of(&[("WRITERCTL_CONFIG", real.to_str().unwrap())])).unwrap().session_writer_lease);
    }

    #[test]
    fn broken_config_fails_closed() {
        let t = tempfile::tempdir().unwrap();
        let cfg = t.path().join("c.toml");
        std::fs::write(&cfg, "[experimental]\nsession_writer_leas = true\n").unwrap();
        assert!(load(&env_of(&[("WRITERCTL_CONFIG", cfg.to_str().unwrap())])).is_err());
        assert!(load(&env_of(&[("WRITERCTL_SESSION_WRITER_LEASE", "yes")])).is_err());
    }

    #[test]
    fn trusted_groups_come_from_the_file_or_the_environment() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().to_str().unwrap();
        assert!(load(&env_of(&[("HOME", home)])).unwrap().trusted_groups.gids().is_empty());
        let cfg = t.path().join("c.toml");
        std::fs::write(&cfg, "trusted_groups = [2000, \"root\"]\n").unwrap();
        let c = cfg.to_str().unwrap();
        assert_eq!(load(&env_of(&[("WRITERCTL_CONFIG", c)])).unwrap().trusted_groups.gids(), &[2000, 0]);
        std::fs::write(&cfg, "trusted_groups = \"2001, 2002\"\n").unwrap();
        assert_eq!(load(&env_of(&[("WRITERCTL_CONFIG", c)])).unwrap().trusted_groups.gids(), &[2001, 2002]);
        // The variable replaces the file's list; empty trusts nothing.
        let settings = load(&env_of(&[("WRITERCTL_CONFIG", c), ("WRITERCTL_TRUSTED_GROUPS", "3000")])).unwrap();
        assert_eq!(settings.trusted_groups.gids(), &[3000]);
        let settings = load(&env_of(&[("WRITERCTL_CONFIG", c), ("WRITERCTL_TRUSTED_GROUPS", "")])).unwrap();
        assert!(settings.trusted_groups.gids().is_empty());
    }

    #[test]
    fn an_unknown_group_is_an_error() {
        let e = load(&env_of(&[("WRITERCTL_TRUSTED_GROUPS", "2000,no-such-group-writerctl")])).unwrap_err();
        assert!(matches!(e, ConfigError::Group(_)), "{e}");
        assert!(e.to_string().contains("no-such-group-writerctl"), "{e}");
        let t = tempfile::tempdir().unwrap();
        let cfg = t.path().join("c.toml");
        std::fs::write(&cfg, "trusted_groups = [\"no-such-group-writerctl\"]\n").unwrap();
        assert!(matches!(load(&env_of(&[("WRITERCTL_CONFIG", cfg.to_str().unwrap())])), Err(ConfigError::Group(_))));
    }
}
