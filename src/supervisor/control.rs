//! The supervisor's local control socket: how a Kubernetes preStop hook (`writerctl seal`
//! without a token) asks a running `writerctl run` to drain its writer and seal.
//!
//! The socket lives on local disk, never beside the locks (the lock directory may be a
//! network filesystem, where Unix sockets do not work across hosts): `$XDG_RUNTIME_DIR/
//! writerctl/` or `/tmp/writerctl-<uid>/`, a directory that must be ours and mode 0700. Both
//! sides derive the file name from the runtime directory and the session id, so the hook
//! needs no extra configuration. Every connection's peer uid must be ours (`SO_PEERCRED`).
//!
//! Protocol: one JSON line each way. Request `{"op":"seal","session":"<id>"}`; reply
//! `{"ok":true,"sealed_at":…,"transcript":{…}}` or `{"ok":false,"error":{"code","message","hint"}}`.

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::lockfile::record::TranscriptProof;

/// A request from a client.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Request {
    /// `seal`.
    pub op: String,
    /// The session the client means; must match the supervisor's.
    pub session: String,
}

/// An error carried over the socket.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WireError {
    /// Stable error code.
    pub code: String,
    /// Message.
    pub message: String,
    /// Hint.
    pub hint: Option<String>,
}

/// The supervisor's answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Reply {
    /// True when the session is sealed (or, gate off, released) and the writer has stopped.
    pub ok: bool,
    /// `sealed` or `released` on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// `sealed_at` of the seal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sealed_at: Option<String>,
    /// The sealed proof.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript: Option<TranscriptProof>,
    /// The failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<WireError>,
}

/// Why the control socket could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// No supervisor listens at that path.
    #[error("no `writerctl run` supervises this session here (no control socket at {})", .0.display())]
    NoSupervisor(PathBuf),
    /// The socket directory is not ours or not private.
    #[error("control socket directory {} is not a private directory owned by this user", .0.display())]
    UnsafeDirectory(PathBuf),
    /// I/O or protocol failure.
    #[error("control socket {}: {source}", .path.display())]
    Io {
        /// Socket path.
        path: PathBuf,
        /// Cause.
        #[source]
        source: io::Error,
    },
}

fn our_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The directories a control socket may live in, preferred first: `$XDG_RUNTIME_DIR/writerctl`
/// (when set), then `/tmp/writerctl-<uid>`. A supervisor binds in the first; a client tries
/// each, so a supervisor started without `XDG_RUNTIME_DIR` (systemd, a container) is still
/// found from a login shell that has it.
pub fn socket_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        dirs.push(Path::new(&x).join("writerctl"));
    }
    dirs.push(PathBuf::from(format!("/tmp/writerctl-{}", our_uid())));
    dirs
}

fn socket_name(lock_path: &Path) -> String {
    let d = Sha256::digest(lock_path.as_os_str().as_encoded_bytes());
    let name: String = d[..10].iter().map(|b| format!("{b:02x}")).collect();
    format!("{name}.sock")
}

/// The default socket path `run` binds, derived from the absolute lock path (which encodes
/// the runtime directory, a `--lock` override and the session).
pub fn default_socket(lock_path: &Path) -> PathBuf {
    socket_dirs().remove(0).join(socket_name(lock_path))
}

/// Every path a client should try for the supervisor of `lock_path`.
pub fn candidate_sockets(lock_path: &Path) -> Vec<PathBuf> {
    socket_dirs().into_iter().map(|d| d.join(socket_name(lock_path))).collect()
}

/// Creates (0700) or checks the socket's directory: it must be a real directory owned by us
/// with no group/other access, or a hostile user could pre-create it in /tmp and intercept.
pub fn prepare_dir(socket: &Path) -> Result<(), ControlError> {
    let dir = socket.parent().unwrap_or(Path::new("."));
    let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
    check_dir(dir)
}

fn check_dir(dir: &Path) -> Result<(), ControlError> {
    let m = std::fs::symlink_metadata(dir).map_err(|e| ControlError::Io { path: dir.to_path_buf(), source: e })?;
    if !m.is_dir() || m.uid() != our_uid() || m.permissions().mode() & 0o077 != 0 {
        return Err(ControlError::UnsafeDirectory(dir.to_path_buf()));
    }
    Ok(())
}

/// Binds the control socket (replacing a stale socket file left by a dead supervisor, never
/// any other kind of file), mode 0600.
pub fn bind(socket: &Path) -> Result<Bound, ControlError> {
    prepare_dir(socket)?;
    let io_err = |e| ControlError::Io { path: socket.to_path_buf(), source: e };
    if let Ok(m) = std::fs::symlink_metadata(socket) {
        use std::os::unix::fs::FileTypeExt;
        if !m.file_type().is_socket() {
            return Err(io_err(io::Error::other("a non-socket file is in the way")));
        }
        // A live supervisor answers; a stale socket file refuses the connection.
        if UnixStream::connect(socket).is_ok() {
            return Err(io_err(io::Error::other("another supervisor is already listening")));
        }
        #[allow(clippy::disallowed_methods)] // a dead socket file in our private directory
        std::fs::remove_file(socket).map_err(io_err)?;
    }
    let listener = UnixListener::bind(socket).map_err(io_err)?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600)).map_err(io_err)?;
    let m = std::fs::symlink_metadata(socket).map_err(io_err)?;
    Ok(Bound { listener, path: socket.to_path_buf(), file: (m.dev(), m.ino()) })
}

/// A bound control socket: the listener and the identity of the socket file we created.
#[derive(Debug)]
pub struct Bound {
    /// The listener.
    pub listener: UnixListener,
    path: PathBuf,
    file: (u64, u64),
}

impl Bound {
    /// Removes the socket file if it is still the one we created (never a successor's):
    /// called before the handoff, so no new client connects to a stopping supervisor and the
    /// next supervisor for this session can bind the path as soon as it owns the lock.
    pub fn unbind(&self) {
        let there = std::fs::symlink_metadata(&self.path).ok().map(|m| (m.dev(), m.ino()));
        if there == Some(self.file) {
            #[allow(clippy::disallowed_methods)] // our own socket file in our private directory
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// True when the connected peer runs as our user.
pub fn peer_is_us(stream: &UnixStream) -> bool {
    rustix::net::sockopt::socket_peercred(stream).map(|c| c.uid.as_raw() == our_uid()).unwrap_or(false)
}

/// Reads one request line (bounded).
pub fn read_request(stream: &UnixStream) -> io::Result<Request> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut line = String::new();
    BufReader::new(stream.take_bounded()).read_line(&mut line)?;
    serde_json::from_str(&line).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Writes one reply line.
pub fn write_reply(mut stream: &UnixStream, reply: &Reply) -> io::Result<()> {
    let mut line = serde_json::to_vec(reply).map_err(io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line)
}

trait TakeBounded {
    fn take_bounded(&self) -> io::Take<&UnixStream>;
}

impl TakeBounded for UnixStream {
    fn take_bounded(&self) -> io::Take<&UnixStream> {
        io::Read::take(self, 4096)
    }
}

/// Client side: asks the supervisor at `socket` to drain and seal `session`, waiting up to
/// `timeout` for the answer.
pub fn request_seal(socket: &Path, session: &str, timeout: Duration) -> Result<Reply, ControlError> {
    let io_err = |e| ControlError::Io { path: socket.to_path_buf(), source: e };
    if let Some(dir) = socket.parent()
        && dir.exists()
    {
        check_dir(dir)?;
    }
    let mut stream = match UnixStream::connect(socket) {
        Ok(s) => s,
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused) => {
            return Err(ControlError::NoSupervisor(socket.to_path_buf()));
        }
        Err(e) => return Err(io_err(e)),
    };
    if !peer_is_us(&stream) {
        return Err(io_err(io::Error::other("the listening process runs as another user")));
    }
    let mut line = serde_json::to_vec(&Request { op: "seal".into(), session: session.into() })
        .map_err(io::Error::other)
        .map_err(io_err)?;
    line.push(b'\n');
    stream.write_all(&line).map_err(io_err)?;
    stream.set_read_timeout(Some(timeout)).map_err(io_err)?;
    let mut answer = String::new();
    BufReader::new(io::Read::take(&stream, 1 << 16)).read_line(&mut answer).map_err(io_err)?;
    serde_json::from_str(&answer).map_err(|e| io_err(io::Error::new(io::ErrorKind::InvalidData, e)))
}
