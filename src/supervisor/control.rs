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

use std::ffi::OsStr;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
use rustix::io::Errno;
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
    /// `seal --reason`: recorded with the seal in the lock-file history (absent from older
    /// clients; an older supervisor ignores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
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
    /// The seal's exclusivity proof (`writerctl_exclusive`, see
    /// [`crate::lockfile::exclusive`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusive: Option<String>,
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
    /// The socket cannot be created there (a read-only filesystem, a name too long, a
    /// file of another kind in the way).
    #[error("cannot make a control socket at {}: {source}", .path.display())]
    CannotBind {
        /// Socket path.
        path: PathBuf,
        /// Cause.
        #[source]
        source: io::Error,
    },
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

impl ControlError {
    /// What to do next: for `run`, where its socket can go; for `seal`, how to find the
    /// supervisor.
    pub fn hint(&self) -> String {
        match self {
            ControlError::NoSupervisor(_) => {
                "start the writer under `writerctl run`, or seal with its owner token (--token-file F or WRITERCTL_OWNER_TOKEN); a supervisor started with another XDG_RUNTIME_DIR or --control-socket is found only with the same one".into()
            }
            ControlError::CannotBind { .. } => {
                "the control socket needs a writable local directory: set XDG_RUNTIME_DIR to one (Kubernetes with readOnlyRootFilesystem: an emptyDir, e.g. mounted at /run/writerctl, and XDG_RUNTIME_DIR=/run/writerctl for the container, so preStop `writerctl seal` finds it too), or pass --control-socket PATH; nothing was taken".into()
            }
            ControlError::Io { .. } => {
                "the supervisor's control socket did not answer as expected; `writerctl status` shows the session's state".into()
            }
            ControlError::UnsafeDirectory(_) => {
                "the socket directory must be a real directory owned by you with mode 0700: remove it (it is recreated), or pass --control-socket PATH in a private directory".into()
            }
        }
    }
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
    open_private_dir(socket.parent().unwrap_or(Path::new("."))).map(drop)
}

/// Proves that [`bind`] can make the control socket at `socket`, without taking its name:
/// `run` calls this before it takes the lock (issue 40).
///
/// Why a probe and not only [`prepare_dir`]: a directory that already exists passes the
/// directory checks (`mkdir` answers `EEXIST` before `EROFS` on a read-only root
/// filesystem, e.g. an image that ships `/tmp/writerctl-<uid>`), and only `bind(2)` itself
/// says whether a socket can be created in it. Finding that out after the lock was taken
/// meant taking a session, handing it straight back and exiting — in a crash loop, once per
/// restart. So: open the directory as [`bind`] will (same checks, same descriptor path),
/// refuse a file of another kind at the socket's name (it will not go away by itself), and
/// bind a socket of our own under a random name beside it, then remove it.
///
/// Why not bind the real name now and keep it: a second `run` of the same session on the
/// same host (a handoff on one machine) waits for the first, which still listens on that
/// name until it hands off; the real bind has to wait for the lock.
pub fn check_bindable(socket: &Path) -> Result<(), ControlError> {
    let dir = open_private_dir(socket.parent().unwrap_or(Path::new(".")))?;
    let name = socket_file_name(socket)?;
    inside(&dir, socket, &name)?;
    if let Ok(st) = rfs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW)
        && rfs::FileType::from_raw_mode(st.st_mode) != rfs::FileType::Socket
    {
        return Err(ControlError::CannotBind {
            path: socket.to_path_buf(),
            source: io::Error::other("a file that is not a socket is in the way"),
        });
    }
    let probe = format!(".probe-{}.sock", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let listener = UnixListener::bind(via_fd(&dir, OsStr::new(&probe)))
        .map_err(|source| ControlError::CannotBind { path: socket.to_path_buf(), source })?;
    drop(listener);
    let _ = rfs::unlinkat(&dir, probe.as_str(), AtFlags::empty());
    Ok(())
}

/// The socket's file name.
fn socket_file_name(socket: &Path) -> Result<std::ffi::OsString, ControlError> {
    socket.file_name().map(OsStr::to_os_string).ok_or_else(|| ControlError::CannotBind {
        path: socket.to_path_buf(),
        source: io::Error::other("no socket file name"),
    })
}

/// The path through `dir`'s descriptor at which `name` is bound, if it fits `sun_path`.
fn inside(dir: &OwnedFd, socket: &Path, name: &OsStr) -> Result<PathBuf, ControlError> {
    let via = via_fd(dir, name);
    if via.as_os_str().len() >= 108 || !Path::new("/proc/self/fd").is_dir() {
        return Err(ControlError::CannotBind {
            path: socket.to_path_buf(),
            source: io::Error::other(
                "binding inside the socket directory needs /proc/self/fd and a file name of at most 80 bytes",
            ),
        });
    }
    Ok(via)
}

/// Opens the socket directory `dir` as a descriptor, creating it (0700) when missing, and
/// checks *that descriptor*: a real directory (`O_NOFOLLOW`), owned by us, no group or other
/// access.
///
/// Why a descriptor (issue 22): with `XDG_RUNTIME_DIR` inside another user's directory (a
/// plain `su`), that user can rename our directory away and put a symlink in its place
/// between any check by path and any later use by path; root's `run` then bound and
/// chmod'ed a file of the user's choosing. Everything after this call goes through the
/// descriptor ([`bind`]), so a swap of the path changes nothing we do.
///
/// The parent (`$XDG_RUNTIME_DIR`, `/tmp`) is the environment's choice and is followed as
/// given; missing parents are created (0700), as before.
fn open_private_dir(dir: &Path) -> Result<OwnedFd, ControlError> {
    let unsafe_dir = || ControlError::UnsafeDirectory(dir.to_path_buf());
    // Every failure here is one of making the socket's place: reported with the hint that
    // says where a socket can go.
    let io_err = |e: Errno| ControlError::CannotBind { path: dir.to_path_buf(), source: io::Error::from(e) };
    let (parent, name) = match (dir.parent(), dir.file_name()) {
        (Some(p), Some(n)) => (if p.as_os_str().is_empty() { Path::new(".") } else { p }, n),
        _ => return Err(unsafe_dir()),
    };
    let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent);
    let pfd = rfs::open(parent, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).map_err(io_err)?;
    match rfs::mkdirat(&pfd, name, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(io_err(e)),
    }
    let fd = match rfs::openat(
        &pfd,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::LOOP) | Err(Errno::NOTDIR) => return Err(unsafe_dir()),
        Err(e) => return Err(io_err(e)),
    };
    let st = rfs::fstat(&fd).map_err(io_err)?;
    if !is_private_dir(st.st_mode, st.st_uid) {
        return Err(unsafe_dir());
    }
    Ok(fd)
}

/// A directory only we can enter: a directory, our uid, no group/other bits.
fn is_private_dir(mode: u32, uid: u32) -> bool {
    rfs::FileType::from_raw_mode(mode) == rfs::FileType::Directory && uid == our_uid() && mode & 0o077 == 0
}

fn check_dir(dir: &Path) -> Result<(), ControlError> {
    let m = std::fs::symlink_metadata(dir).map_err(|e| ControlError::Io { path: dir.to_path_buf(), source: e })?;
    if !m.is_dir() || !is_private_dir(m.mode(), m.uid()) {
        return Err(ControlError::UnsafeDirectory(dir.to_path_buf()));
    }
    Ok(())
}

/// The path through which a name inside the directory `fd` is reached without resolving
/// the directory's path again: `/proc/self/fd/N/name`. Unix sockets have no `bindat`, and
/// this magic link resolves to the directory the descriptor holds, whatever its path names
/// now. Short enough for `sun_path` (108 bytes): the socket names are 24 bytes.
fn via_fd(fd: &OwnedFd, name: &OsStr) -> PathBuf {
    Path::new("/proc/self/fd").join(fd.as_raw_fd().to_string()).join(name)
}

/// Binds the control socket (replacing a stale socket file left by a dead supervisor, never
/// any other kind of file), mode 0600, inside the directory held open by
/// `open_private_dir`: the checks, the bind, the chmod and the later unlink all act on
/// that one directory (issue 22).
pub fn bind(socket: &Path) -> Result<Bound, ControlError> {
    let dir = open_private_dir(socket.parent().unwrap_or(Path::new(".")))?;
    let io_err = |e: io::Error| ControlError::Io { path: socket.to_path_buf(), source: e };
    let errno = |e: Errno| io_err(io::Error::from(e));
    let name = socket_file_name(socket)?;
    let via = inside(&dir, socket, &name)?;
    match rfs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => {
            if rfs::FileType::from_raw_mode(st.st_mode) != rfs::FileType::Socket {
                return Err(io_err(io::Error::other("a non-socket file is in the way")));
            }
            // A live supervisor answers; a stale socket file refuses the connection.
            if UnixStream::connect(&via).is_ok() {
                return Err(io_err(io::Error::other("another supervisor is already listening")));
            }
            rfs::unlinkat(&dir, &name, AtFlags::empty()).map_err(errno)?;
        }
        Err(Errno::NOENT) => {}
        Err(e) => return Err(errno(e)),
    }
    let listener =
        UnixListener::bind(&via).map_err(|source| ControlError::CannotBind { path: socket.to_path_buf(), source })?;
    // `fchmodat` relative to our private directory: only we (and root) can put a name in
    // it, so the name is the socket just bound, never a symlink someone planted.
    rfs::chmodat(&dir, &name, Mode::from_raw_mode(0o600), AtFlags::empty()).map_err(errno)?;
    let st = rfs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW).map_err(errno)?;
    Ok(Bound { listener, dir, name, file: (st.st_dev, st.st_ino) })
}

/// A bound control socket: the listener and the identity of the socket file we created.
#[derive(Debug)]
pub struct Bound {
    /// The listener.
    pub listener: UnixListener,
    dir: OwnedFd,
    name: std::ffi::OsString,
    file: (u64, u64),
}

impl Bound {
    /// Removes the socket file if it is still the one we created (never a successor's):
    /// called before the handoff, so no new client connects to a stopping supervisor and the
    /// next supervisor for this session can bind the path as soon as it owns the lock.
    /// Relative to the directory descriptor, so a swapped path cannot redirect the unlink.
    pub fn unbind(&self) {
        let there = rfs::statat(&self.dir, &self.name, AtFlags::SYMLINK_NOFOLLOW).ok().map(|st| (st.st_dev, st.st_ino));
        if there == Some(self.file) {
            let _ = rfs::unlinkat(&self.dir, &self.name, AtFlags::empty());
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
pub fn request_seal(
    socket: &Path,
    session: &str,
    reason: Option<&str>,
    timeout: Duration,
) -> Result<Reply, ControlError> {
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
    let mut line =
        serde_json::to_vec(&Request { op: "seal".into(), session: session.into(), reason: reason.map(str::to_owned) })
            .map_err(io::Error::other)
            .map_err(io_err)?;
    line.push(b'\n');
    stream.write_all(&line).map_err(io_err)?;
    stream.set_read_timeout(Some(timeout)).map_err(io_err)?;
    let mut answer = String::new();
    BufReader::new(io::Read::take(&stream, 1 << 16)).read_line(&mut answer).map_err(io_err)?;
    serde_json::from_str(&answer).map_err(|e| io_err(io::Error::new(io::ErrorKind::InvalidData, e)))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage directories by hand
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn bind_and_unbind_act_on_the_directory_opened_not_on_what_the_path_names_later() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("writerctl");
        let socket = dir.join("x.sock");
        let bound = bind(&socket).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(std::fs::symlink_metadata(&socket).unwrap().permissions().mode() & 0o777, 0o600);
        // Someone renames our directory away and puts a symlink to a look-alike in its place.
        let moved = t.path().join("moved");
        std::fs::rename(&dir, &moved).unwrap();
        let decoy = t.path().join("decoy");
        std::fs::create_dir(&decoy).unwrap();
        std::os::unix::net::UnixListener::bind(decoy.join("x.sock")).unwrap();
        std::os::unix::fs::symlink(&decoy, &dir).unwrap();
        bound.unbind();
        assert!(std::fs::symlink_metadata(moved.join("x.sock")).is_err(), "our socket stays after unbind");
        assert!(std::fs::symlink_metadata(decoy.join("x.sock")).is_ok(), "unbind followed the swapped path");
        // And a symlink at the directory's own name is never used.
        assert!(matches!(bind(&socket), Err(ControlError::UnsafeDirectory(_))));
        assert!(matches!(prepare_dir(&socket), Err(ControlError::UnsafeDirectory(_))));
    }

    #[test]
    fn check_bindable_proves_a_bind_without_taking_the_name_and_leaves_nothing_behind() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("writerctl");
        let socket = dir.join("x.sock");
        check_bindable(&socket).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the probe socket was left behind");
        // A supervisor of this session already listening is no reason to refuse: a second
        // `run` on this host waits for the lock, and binds once the first has handed off.
        let first = bind(&socket).unwrap();
        check_bindable(&socket).unwrap();
        first.unbind();
        // A file of another kind at the socket's name never goes away by itself: refused.
        std::fs::write(&socket, b"").unwrap();
        assert!(matches!(check_bindable(&socket), Err(ControlError::CannotBind { .. })));
        std::fs::remove_file(&socket).unwrap();
        // A name too long for sun_path (reached through /proc/self/fd/N/).
        assert!(matches!(check_bindable(&dir.join("x".repeat(100))), Err(ControlError::CannotBind { .. })));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }

    #[test]
    fn a_directory_others_can_enter_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("writerctl");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(matches!(bind(&dir.join("x.sock")), Err(ControlError::UnsafeDirectory(_))));
    }
}
