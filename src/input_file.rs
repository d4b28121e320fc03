//! Every file the product reads (SPEC §10 "Every file the product reads", §7): the policy, the
//! pins file, a host configuration, the capture files, `--hash-file` files. One opener:
//!
//! - `O_RDONLY|O_CLOEXEC|O_NONBLOCK`, and `O_NOFOLLOW` where the SPEC says a final symlink is
//!   refused ([`FinalLink::Refuse`]: capture files, packaged files). `O_NONBLOCK` keeps a FIFO
//!   (no writer to wait for) or a device from blocking the open: it is refused in milliseconds.
//! - `fstat` before any byte is read: anything but a regular file is refused ("is not a regular
//!   file"), and so is a file whose reported size is over its bound.
//! - reads through `take(bound + 1)`: a file larger than its bound costs at most `bound + 1` bytes
//!   of I/O and memory, whatever it claims, and is refused.
//!
//! Each caller keeps its own error type and words; [`BoundedError`] says what went wrong.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

/// Why a bounded open or read failed.
#[derive(Debug)]
pub(crate) enum BoundedError {
    /// The path does not exist.
    Missing,
    /// A symlink (never followed), a directory, a FIFO, a device or a socket.
    NotRegular(&'static str),
    /// The file holds more than the bound; `seen` is what `fstat` or the read reported.
    TooLarge {
        /// Bytes reported by `fstat` or actually read (at most `bound + 1`).
        seen: u64,
    },
    /// Any other I/O failure (permissions, read errors).
    Io(io::Error),
}

impl BoundedError {
    /// A short lowercase description for reason details and error messages.
    pub(crate) fn describe(&self, bound: u64) -> String {
        match self {
            BoundedError::Missing => "does not exist".to_string(),
            BoundedError::NotRegular(what) => format!("is not a regular file ({what})"),
            BoundedError::TooLarge { seen } => {
                format!("holds at least {seen} bytes, over the {bound}-byte bound")
            }
            BoundedError::Io(e) => format!("cannot be read: {e}"),
        }
    }
}

/// Whether a symlink as the last component of a path is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FinalLink {
    /// Refused (`O_NOFOLLOW`): capture files and what is packaged (SPEC §7).
    Refuse,
    /// Followed: a policy, a pins file, a host configuration (a link to the real file is usual).
    Follow,
}

impl BoundedError {
    /// The error as an `io::Error`, for callers whose error type holds one (the size bound is
    /// theirs to word): a missing file is `ENOENT` ("No such file or directory").
    pub(crate) fn into_io(self, bound: u64) -> io::Error {
        match self {
            BoundedError::Missing => io::Error::from_raw_os_error(libc::ENOENT),
            BoundedError::Io(e) => e,
            other => io::Error::new(io::ErrorKind::InvalidInput, other.describe(bound)),
        }
    }
}

/// The one opener: opens `path` for reading without blocking (and without following a final
/// symlink for [`FinalLink::Refuse`]) and checks by `fstat` that it is a regular file of at most
/// `bound` bytes. Returns the file and its reported size; read it with [`read_opened`].
pub(crate) fn open_regular(
    path: &Path,
    link: FinalLink,
    bound: u64,
) -> Result<(File, u64), BoundedError> {
    let nofollow = match link {
        FinalLink::Refuse => libc::O_NOFOLLOW,
        FinalLink::Follow => 0,
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nofollow | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| classify(e.raw_os_error(), e))?;
    // Never numbered 0, 1 or 2, even briefly, in a host that closed them (SPEC §3.1b).
    let file = crate::sys::fd::file_above_stdio(file).map_err(BoundedError::Io)?;
    checked(file, bound)
}

/// [`open_regular`] for the entry `name` of the open directory `dir` (`openat`): the directory
/// is never looked up by path again.
pub(crate) fn open_regular_at(
    dir: &OwnedFd,
    name: &str,
    bound: u64,
) -> Result<(File, u64), BoundedError> {
    let fd = nix::fcntl::openat(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK,
        Mode::empty(),
    )
    .map_err(|e| classify(Some(e as i32), io::Error::from(e)))?;
    let fd = crate::sys::fd::above_stdio(fd).map_err(BoundedError::Io)?;
    checked(File::from(fd), bound)
}

/// The error of a failed open.
fn classify(errno: Option<i32>, e: io::Error) -> BoundedError {
    match errno {
        Some(libc::ENOENT) => BoundedError::Missing,
        // O_NOFOLLOW on a symlink fails with ELOOP (Linux, BSDs) or EMLINK (FreeBSD).
        Some(libc::ELOOP) | Some(libc::EMLINK) => BoundedError::NotRegular("symbolic link"),
        Some(libc::ENXIO) => BoundedError::NotRegular("socket or fifo"),
        _ => BoundedError::Io(e),
    }
}

/// `fstat` checks of an opened file: regular, within `bound`.
fn checked(file: File, bound: u64) -> Result<(File, u64), BoundedError> {
    let meta = file.metadata().map_err(BoundedError::Io)?;
    let ft = meta.file_type();
    if !ft.is_file() {
        let what = if ft.is_dir() {
            "directory"
        } else if ft.is_symlink() {
            "symbolic link"
        } else {
            "special file"
        };
        return Err(BoundedError::NotRegular(what));
    }
    if meta.len() > bound {
        return Err(BoundedError::TooLarge { seen: meta.len() });
    }
    Ok((file, meta.len()))
}

/// Reads all of `path` if it is a regular file of at most `bound` bytes ([`open_regular`]). Never
/// reads more than `bound + 1` bytes, even if the file grows after `fstat`.
pub(crate) fn read_bounded(
    path: &Path,
    link: FinalLink,
    bound: u64,
) -> Result<Vec<u8>, BoundedError> {
    let (file, size) = open_regular(path, link, bound)?;
    read_opened(file, size, bound)
}

/// Reads a file [`open_regular`] opened (`size` is what it reported), at most `bound + 1` bytes;
/// more than `bound` is [`BoundedError::TooLarge`].
pub(crate) fn read_opened(file: File, size: u64, bound: u64) -> Result<Vec<u8>, BoundedError> {
    // Capacity from fstat (already <= bound) plus the one probe byte; the read itself is bounded
    // by `take`, not by this hint.
    let cap = usize::try_from(size.saturating_add(1)).unwrap_or(usize::MAX);
    let mut buf = Vec::with_capacity(cap);
    file.take(bound.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(BoundedError::Io)?;
    let got = buf.len() as u64;
    if got > bound {
        return Err(BoundedError::TooLarge { seen: got });
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive_and_links_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![b'x'; 10]).unwrap();
        assert_eq!(read_bounded(&p, FinalLink::Refuse, 10).unwrap().len(), 10);
        assert!(matches!(
            read_bounded(&p, FinalLink::Refuse, 9),
            Err(BoundedError::TooLarge { seen: 10 })
        ));
        let l = dir.path().join("l");
        std::os::unix::fs::symlink(&p, &l).unwrap();
        assert!(matches!(
            read_bounded(&l, FinalLink::Refuse, 100),
            Err(BoundedError::NotRegular(_))
        ));
        assert!(matches!(
            read_bounded(dir.path(), FinalLink::Refuse, 100),
            Err(BoundedError::NotRegular("directory"))
        ));
        assert!(matches!(
            read_bounded(&dir.path().join("nope"), FinalLink::Refuse, 100),
            Err(BoundedError::Missing)
        ));
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(
            read_bounded(&fifo, FinalLink::Follow, 100),
            Err(BoundedError::NotRegular(_))
        ));
        // A link to a regular file is followed only when asked.
        assert_eq!(read_bounded(&l, FinalLink::Follow, 100).unwrap().len(), 10);
        let via = dir.path().join("to-fifo");
        std::os::unix::fs::symlink(&fifo, &via).unwrap();
        assert!(matches!(
            read_bounded(&via, FinalLink::Follow, 100),
            Err(BoundedError::NotRegular(_))
        ));
        assert!(
            read_bounded(&fifo, FinalLink::Follow, 100)
                .unwrap_err()
                .into_io(100)
                .to_string()
                .starts_with("is not a regular file")
        );
    }
}
