//! Resolving `--runtime-dir`, `--session`, `--lock` and the owner token into engine inputs.

use std::path::{Path, PathBuf};

use anyhow::Result;
use writerctl::lockfile::{LockError, LockPaths, OwnerToken};

use super::args::SessionArgs;

/// A resolved session address.
pub struct Resolved {
    /// Absolute runtime directory.
    pub runtime_dir: PathBuf,
    /// Session id.
    pub session_id: String,
    /// Lock paths.
    pub paths: LockPaths,
}

/// Makes `p` absolute lexically (no symlink resolution), as Node's `path.resolve` does for
/// qwen: `.` dropped, `..` applied, repeated and trailing separators removed. A
/// `--project-root` spelled `/home/u/repo/` must give the same transcript key as
/// `/home/u/repo`, or a seal would certify another (usually missing) file.
fn absolute(p: &Path) -> Result<PathBuf> {
    use std::path::Component;
    let abs = std::path::absolute(p)?;
    let mut out = PathBuf::from("/");
    for c in abs.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    Ok(out)
}

/// `~` expansion for QWEN_RUNTIME_DIR, as qwen-code does.
fn expand_tilde(s: &str) -> PathBuf {
    if (s == "~" || s.starts_with("~/"))
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(s.trim_start_matches('~').trim_start_matches('/'));
    }
    PathBuf::from(s)
}

/// The runtime directory: flag, then WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR.
pub fn runtime_dir(args: &SessionArgs) -> Result<PathBuf> {
    pod_context(args)?;
    named_runtime_dir(args.runtime_dir.as_deref())?.ok_or_else(|| {
        LockError::InvalidArgument(
            "no runtime directory: pass --runtime-dir DIR or set WRITERCTL_RUNTIME_DIR (or QWEN_RUNTIME_DIR)".into(),
        )
        .into()
    })
}

/// The runtime directory `flag`, WRITERCTL_RUNTIME_DIR or QWEN_RUNTIME_DIR names (absolute),
/// if any does.
pub fn named_runtime_dir(flag: Option<&Path>) -> Result<Option<PathBuf>> {
    let raw = if let Some(p) = flag {
        p.to_path_buf()
    } else if let Some(p) = std::env::var_os("WRITERCTL_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        PathBuf::from(p)
    } else if let Some(p) = std::env::var("QWEN_RUNTIME_DIR").ok().filter(|v| !v.is_empty()) {
        expand_tilde(&p)
    } else {
        return Ok(None);
    };
    absolute(&raw).map(Some)
}

/// Resolves a command that needs one session.
pub fn resolve(args: &SessionArgs) -> Result<Resolved> {
    let runtime_dir = runtime_dir(args)?;
    let session_id = match &args.session {
        Some(s) if !s.is_empty() => s.clone(),
        Some(_) => return Err(LockError::InvalidArgument("--session must not be empty".into()).into()),
        None => {
            return Err(
                LockError::InvalidArgument("missing --session ID (the session whose lock to use; acquire, release, seal, takeover, verify and run also read WRITERCTL_SESSION)".into()).into()
            );
        }
    };
    let paths = match &args.lock {
        Some(lock) => LockPaths::for_lock_path(&absolute(lock)?).ok_or_else(|| {
            LockError::InvalidArgument(format!("--lock {} has no usable UTF-8 file name", lock.display()))
        })?,
        None => LockPaths::for_session(&runtime_dir, &session_id),
    };
    writerctl::lockfile::paths::check_lock_name_room(&paths.lock_name).map_err(LockError::InvalidArgument)?;
    Ok(Resolved { runtime_dir, session_id, paths })
}

/// The pod identity every lock command judges liveness with (issue 18): the four pod
/// variables all or none, and `--statefulset-identity` switched on for the whole process
/// before any engine call (like the gate, fixed at start).
fn pod_context(args: &SessionArgs) -> Result<()> {
    if args.statefulset_identity {
        writerctl::lockfile::pod::enable_statefulset_identity();
    }
    writerctl::lockfile::pod::PodContext::current().map_err(LockError::InvalidArgument)?;
    Ok(())
}

/// Largest owner-token file read (qwen and writerctl owner ids are 36-byte UUIDs).
const MAX_TOKEN_BYTES: usize = 4096;

/// Reads the owner token from `--token-file` or WRITERCTL_OWNER_TOKEN (never argv).
pub fn read_token(token_file: Option<&Path>) -> Result<OwnerToken> {
    let text = match token_file {
        // Issue 22: a FIFO, a device or a symlink named as the token file must neither hang
        // nor exhaust memory; a token is a UUID, so a few KiB is generous.
        Some(f) => writerctl::lockfile::sys::read_small_regular(f, MAX_TOKEN_BYTES)
            .map_err(|e| LockError::InvalidArgument(format!("cannot read token file {}: {e}", f.display())))
            .and_then(|b| String::from_utf8(b).map_err(|_| not_an_owner_token(f, "bytes that are not UTF-8".into())))
            .and_then(|text| check_owner_token(f, text))?,
        None => std::env::var("WRITERCTL_OWNER_TOKEN").map_err(|_| {
            LockError::InvalidArgument("no owner token: pass --token-file F or set WRITERCTL_OWNER_TOKEN".into())
        })?,
    };
    Ok(OwnerToken::parse(&text).ok_or_else(|| LockError::InvalidArgument("the owner token is empty".into()))?)
}

/// Refuses a token file that holds no owner token (issue 29: a garbage token file was
/// compared with the lock's owner and answered "held by a different owner"). Every owner
/// token writerctl and qwen write is a 36-character UUID; an empty file keeps its own error.
fn check_owner_token(f: &Path, text: String) -> Result<String, LockError> {
    let t = text.trim();
    if t.is_empty() || OwnerToken::is_uuid_shaped(t) {
        return Ok(text);
    }
    let looks = if writerctl::claim::secret::is_machine_secret(t) {
        " (it looks like a coordinator session token, which `writerctl session register` writes)"
    } else {
        ""
    };
    Err(not_an_owner_token(f, format!("{} bytes that are not one{looks}", t.len())))
}

/// `invalid_argument` (2) for a token file without an owner token. Its contents are never
/// printed: the wrong file may hold another secret.
fn not_an_owner_token(f: &Path, holds: String) -> LockError {
    LockError::InvalidArgument(format!(
        "token file {} does not hold an owner token: an owner token is the UUID `writerctl acquire` or `takeover` \
         wrote there (--token-file F); this file holds {holds}",
        f.display()
    ))
}

/// A token file reserved — created empty, exclusively, mode 0600 — before the lock or the
/// session whose token it will hold is taken, and filled after.
///
/// Why reserve first (issue 21 item 0): a destination that cannot be created (a missing
/// directory, a path another user pre-created in a shared directory, a symlink planted
/// there) must fail while nothing has changed. Creating it only after the lock was taken
/// turned those cases into a lock whose token nobody received — and giving that lock back
/// is a second protocol step that can fail too.
pub struct TokenFile {
    path: PathBuf,
    file: std::fs::File,
}

impl TokenFile {
    /// Creates `path` (`O_CREAT|O_EXCL`, so never over an existing file and never through a
    /// symlink at its last component). The error names the path and says nothing changed.
    pub fn create(path: &Path) -> Result<TokenFile, String> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(path)
            .map(|file| TokenFile { path: path.to_path_buf(), file })
            .map_err(|e| token_file_refused(path, &e))
    }

    /// What [`TokenFile::create`] would refuse, checked without creating anything (for
    /// `--dry-run`): something already at the path, or no directory to create it in.
    pub fn check_new(path: &Path) -> Result<(), String> {
        let problem = match std::fs::symlink_metadata(path) {
            Ok(_) => Some(std::io::Error::from(std::io::ErrorKind::AlreadyExists)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
                match std::fs::metadata(parent) {
                    Ok(m) if m.is_dir() => None,
                    Ok(_) => Some(std::io::Error::from(std::io::ErrorKind::NotADirectory)),
                    Err(e) => Some(e),
                }
            }
            Err(e) => Some(e),
        };
        match problem {
            Some(e) => Err(token_file_refused(path, &e)),
            None => Ok(()),
        }
    }

    /// The path, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the token and a newline, then fsyncs: a token that is not durable is not
    /// delivered (a crash would leave a lock whose token file is empty).
    pub fn write(&mut self, token: &str) -> std::io::Result<()> {
        use std::io::Write;
        self.file.write_all(format!("{token}\n").as_bytes())?;
        token_file_seam().map_err(std::io::Error::other)?;
        self.file.sync_all()
    }

    /// Removes the file after a failed acquisition or delivery — only while the path still
    /// names the file we created (never someone else's file put there since).
    pub fn discard(self) {
        use std::os::unix::fs::MetadataExt;
        let (Ok(ours), Ok(there)) = (self.file.metadata(), std::fs::symlink_metadata(&self.path)) else { return };
        if (ours.dev(), ours.ino()) == (there.dev(), there.ino()) {
            #[allow(clippy::disallowed_methods)] // our own file, identity checked just above
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn token_file_refused(path: &Path, e: &std::io::Error) -> String {
    format!(
        "cannot create token file {} ({e}); it must be a new file in an existing directory, and nothing was changed",
        path.display()
    )
}

/// The seam the crash matrix and the integration tests use to fail, or crash at, a token
/// file's fsync (`WRITERCTL_FAILPOINTS=token_file.fsync=error|kill`, debug builds only).
fn token_file_seam() -> Result<(), LockError> {
    writerctl::failpoint!("token_file.fsync");
    Ok(())
}

/// The transcript key: `--transcript-key`, `--project-root`, or `chats/<ID>.jsonl`.
pub fn transcript_key(args: &SessionArgs, session_id: &str) -> Result<writerctl::lockfile::transcript::TranscriptKey> {
    use writerctl::lockfile::transcript::TranscriptKey;
    Ok(match (&args.transcript_key, &args.project_root) {
        (Some(k), _) => TranscriptKey::parse(k)?,
        (None, Some(root)) => TranscriptKey::for_project(&absolute(root)?, session_id)?,
        (None, None) => TranscriptKey::default_for(session_id)?,
    })
}
