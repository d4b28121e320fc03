//! Descriptor system calls the session's byte streams need and std does not offer: reads and
//! writes that never raise `SIGPIPE` and never block on a borrowed description, its status flags,
//! its file type and identity, a private reopening of a pipe, and the duplication of a descriptor
//! a host lends by number (SPEC §3.1a, §8). Each is a safe function over one `libc` call;
//! `proxy::endpoint` and `proxy::client_io` decide when to use which.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

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
    Some(unsafe { OwnedFd::from_raw_fd(new) })
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
