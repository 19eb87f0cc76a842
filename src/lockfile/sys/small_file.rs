//! Reading a small file a user names (the config file, a token file): never a FIFO that
//! hangs the open, never a device that streams forever, never more than a cap. Split from
//! [`super`] (the lock directory's calls): nothing here works relative to a [`super::Dir`].

use std::io;
use std::path::Path;

use rustix::fs::{self as rfs, Mode, OFlags};
use rustix::io::Errno;

use super::{Kind, errno_io, lstat_path, meta_of};

/// Why a small file could not be read.
#[derive(Debug)]
pub enum SmallFileError {
    /// Nothing at that path.
    Missing,
    /// A symlink, FIFO, device, socket or directory: refused, never opened for reading.
    NotRegular(Kind),
    /// More than the cap.
    TooLarge(usize),
    /// Any other error.
    Io(io::Error),
}

impl std::fmt::Display for SmallFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SmallFileError::Missing => write!(f, "no such file"),
            SmallFileError::NotRegular(k) => write!(f, "it is a {}, not a regular file", k.describe()),
            SmallFileError::TooLarge(max) => write!(f, "it is larger than {max} bytes"),
            SmallFileError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Reads a small regular file (a config file, an owner token) of at most `max` bytes.
///
/// Why these flags and checks (issue 22): such paths come from the environment and the
/// command line, so they may name a FIFO (whose open and read block forever), a device
/// (`/dev/zero` reads without end) or a symlink to either. `O_NOFOLLOW` refuses a symlink at
/// the last component, `O_NONBLOCK` keeps the open of a FIFO from blocking, the type is
/// checked on the descriptor (no window between a `stat` and the open), and the read stops
/// at `max + 1` bytes whatever the file claims its size is.
pub fn read_small_regular(path: &Path, max: usize) -> Result<Vec<u8>, SmallFileError> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rfs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Err(SmallFileError::Missing),
        Err(Errno::LOOP) => return Err(SmallFileError::NotRegular(Kind::Symlink)),
        // A socket cannot be opened (ENXIO); say what it is when we can see it.
        Err(e) => {
            return Err(match lstat_path(path) {
                Ok(m) if m.kind != Kind::Regular => SmallFileError::NotRegular(m.kind),
                _ => SmallFileError::Io(errno_io(e)),
            });
        }
    };
    let meta = meta_of(&fd).map_err(SmallFileError::Io)?;
    if meta.kind != Kind::Regular {
        return Err(SmallFileError::NotRegular(meta.kind));
    }
    let mut buf = vec![0u8; max + 1];
    let mut len = 0;
    while len < buf.len() {
        match rustix::io::read(&fd, &mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(SmallFileError::Io(errno_io(e))),
        }
    }
    if len > max {
        return Err(SmallFileError::TooLarge(max));
    }
    buf.truncate(len);
    Ok(buf)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use rustix::fs::{CWD, FileType};

    #[test]
    fn read_small_regular_refuses_fifo_device_symlink_and_oversize() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("tok"), b"abc\n").unwrap();
        assert_eq!(read_small_regular(&t.path().join("tok"), 16).unwrap(), b"abc\n");
        assert!(matches!(read_small_regular(&t.path().join("tok"), 3), Err(SmallFileError::TooLarge(3))));
        rustix::fs::mknodat(CWD, t.path().join("fifo"), FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert!(matches!(read_small_regular(&t.path().join("fifo"), 16), Err(SmallFileError::NotRegular(Kind::Fifo))));
        assert!(matches!(read_small_regular(Path::new("/dev/zero"), 16), Err(SmallFileError::NotRegular(Kind::Other))));
        std::os::unix::fs::symlink(t.path().join("tok"), t.path().join("link")).unwrap();
        assert!(matches!(
            read_small_regular(&t.path().join("link"), 16),
            Err(SmallFileError::NotRegular(Kind::Symlink))
        ));
        assert!(matches!(read_small_regular(&t.path().join("none"), 16), Err(SmallFileError::Missing)));
        // A procfs file reports size 0; the cap holds on what it yields, not on its size.
        assert!(matches!(read_small_regular(Path::new("/proc/version"), 4), Err(SmallFileError::TooLarge(4))));
    }
}
