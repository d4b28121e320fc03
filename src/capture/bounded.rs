//! Bounded, no-follow reads of capture files (SPEC §7).
//!
//! Every capture file is opened with `O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK`, checked with `fstat` to be
//! a regular file, and read through `take(bound + 1)`: a file larger than its bound costs at most
//! `bound + 1` bytes of I/O and memory, whatever it claims. `O_NONBLOCK` keeps a FIFO planted in
//! the directory from blocking the open; `fstat` then refuses it as not a regular file.

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

/// Opens `path` for reading without following a final symlink and checks that it is a regular
/// file of at most `bound` bytes (by `fstat`). Returns the file and its reported size.
pub(crate) fn open_regular(path: &Path, bound: u64) -> Result<(File, u64), BoundedError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| classify(e.raw_os_error(), e))?;
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

/// Reads all of `path` if it is a regular, non-symlink file of at most `bound` bytes. Never
/// reads more than `bound + 1` bytes, even if the file grows after `fstat`.
pub(crate) fn read_bounded(path: &Path, bound: u64) -> Result<Vec<u8>, BoundedError> {
    let (file, size) = open_regular(path, bound)?;
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
        assert_eq!(read_bounded(&p, 10).unwrap().len(), 10);
        assert!(matches!(
            read_bounded(&p, 9),
            Err(BoundedError::TooLarge { seen: 10 })
        ));
        let l = dir.path().join("l");
        std::os::unix::fs::symlink(&p, &l).unwrap();
        assert!(matches!(
            read_bounded(&l, 100),
            Err(BoundedError::NotRegular(_))
        ));
        assert!(matches!(
            read_bounded(dir.path(), 100),
            Err(BoundedError::NotRegular("directory"))
        ));
        assert!(matches!(
            read_bounded(&dir.path().join("nope"), 100),
            Err(BoundedError::Missing)
        ));
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(
            read_bounded(&fifo, 100),
            Err(BoundedError::NotRegular(_))
        ));
    }
}
