//! Descriptor system calls the session's byte streams need and std does not offer: reads and
//! writes that never raise `SIGPIPE` and never block on a borrowed description, its status flags,
//! its file type and identity, a private reopening of a pipe, and the duplication of a descriptor
//! a host lends by number (SPEC §3.1a, §8). Each is a safe function over one `libc` call;
//! `proxy::endpoint` and `proxy::client_io` decide when to use which.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The result of a `read`/`write`-style call: the byte count, or the OS error.
fn byte_count(r: isize) -> io::Result<usize> {
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

/// `send(MSG_DONTWAIT | MSG_NOSIGNAL)`: a socket written without blocking and without `SIGPIPE`
/// (a vanished peer is `EPIPE`).
pub(crate) fn send_nonblocking(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: send reads `buf.len()` bytes from a live slice; MSG_NOSIGNAL turns a vanished peer
    // into EPIPE instead of SIGPIPE.
    byte_count(unsafe {
        libc::send(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    })
}

/// `recv(MSG_DONTWAIT)`: a socket read without blocking.
pub(crate) fn recv_nonblocking(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: recv writes at most `buf.len()` bytes into a live slice.
    byte_count(unsafe {
        libc::recv(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    })
}

/// One `write` of `buf`.
pub(crate) fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: write reads `buf.len()` bytes from a live slice.
    byte_count(unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) })
}

/// One `read` into `buf`.
pub(crate) fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: read writes at most `buf.len()` bytes into a live slice.
    byte_count(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

/// The status flags of the open file description (`F_GETFL`), `None` when the call fails.
pub(crate) fn status_flags(fd: BorrowedFd<'_>) -> Option<libc::c_int> {
    // SAFETY: F_GETFL only reads the description's flags.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    (flags >= 0).then_some(flags)
}

/// Makes the open file description non-blocking (`O_NONBLOCK`). Only for a description the
/// session owns alone.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let flags = status_flags(fd).ok_or_else(io::Error::last_os_error)?;
    // SAFETY: F_SETFL only changes the flags of a description this session owns alone.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `fstat` of the descriptor, `None` when the call fails.
pub(crate) fn stat(fd: BorrowedFd<'_>) -> Option<libc::stat> {
    // SAFETY: a zeroed stat is a valid buffer; fstat writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    (unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0).then_some(st)
}

/// The device and inode the descriptor refers to.
pub(crate) fn object_of(fd: BorrowedFd<'_>) -> Option<(libc::dev_t, libc::ino_t)> {
    stat(fd).map(|st| (st.st_dev, st.st_ino))
}

/// `open(path, flags)`: a new descriptor, or `None` when the open fails.
pub(crate) fn open(path: &CStr, flags: libc::c_int) -> Option<OwnedFd> {
    // SAFETY: opens a NUL-terminated path with flags; the result is a new descriptor owned
    // below. A FIFO opened with O_NONBLOCK never waits for the other side.
    let new = unsafe { libc::open(path.as_ptr(), flags) };
    if new < 0 {
        return None;
    }
    // SAFETY: `new` was just opened and nothing else owns it.
    above_stdio(unsafe { OwnedFd::from_raw_fd(new) }).ok()
}

/// A close-on-exec duplicate, numbered 3 or above, of the descriptor numbered `fd` (which a host
/// lends by number and which may not be open: `EBADF`).
pub(crate) fn duplicate_lent(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC only reads `fd`; on a descriptor that is not open it fails with
    // EBADF and touches nothing. No Rust object is asserted to own or borrow `fd`.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` was just returned by fcntl(F_DUPFD_CLOEXEC): an open descriptor that nothing
    // else refers to, so this OwnedFd is its only owner.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// `fd` itself if it is numbered 3 or above, else a close-on-exec duplicate numbered 3 or above
/// (`F_DUPFD_CLOEXEC`), the original closed (SPEC §3.1b). Every descriptor the library creates
/// passes through here: in a host that closed its standard descriptors (a daemon) a new file or
/// pipe would otherwise take 0, 1 or 2, where diagnostics, the server's standard streams or the
/// host's own `printf` would land in it.
pub(crate) fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC only reads `fd` (open: it is owned) and returns a new descriptor
    // (owned below) or fails.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` was just created and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// [`above_stdio`] for a [`std::fs::File`].
pub(crate) fn file_above_stdio(file: std::fs::File) -> io::Result<std::fs::File> {
    above_stdio(OwnedFd::from(file)).map(std::fs::File::from)
}

/// A close-on-exec pipe, both ends numbered 3 or above: (read end, write end).
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and nothing else owns them.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((above_stdio(r)?, above_stdio(w)?))
}

/// Where the session's diagnostics may go when no file of its own takes them: a duplicate
/// (numbered 3 or above) of descriptor 2, when descriptor 2 is open at the session's start and
/// is checked to be the host's stderr — not the same object as one of the client's streams
/// (`client`), unless it is a terminal (SPEC §3.1b). `None`: diagnostics are dropped.
pub(crate) fn checked_stderr(client: &[BorrowedFd<'_>]) -> Option<OwnedFd> {
    let stderr = duplicate_lent(2).ok()?;
    // SAFETY: isatty only reads the descriptor's file type.
    let tty = unsafe { libc::isatty(stderr.as_raw_fd()) } == 1;
    if !tty {
        let me = object_of(stderr.as_fd())?;
        if client.iter().any(|c| object_of(*c) == Some(me)) {
            return None;
        }
    }
    Some(stderr)
}
