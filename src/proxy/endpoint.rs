//! The session's ends of its four byte streams, read and written so that no worker can block
//! where the session cannot wake it (SPEC §3.1a, "no worker outlives its use in a library host").
//!
//! A blocked `read` or `write` cannot be interrupted without a signal handler, and a library
//! never installs one unasked. So every wait is a `poll` together with the session's
//! [`Cancel`] pipe, and the operation that follows must not block:
//!
//! - **Pipes the session created** (the server's stdin and stdout): their open file descriptions
//!   are the session's alone, so they are made non-blocking (`O_NONBLOCK`).
//! - **Descriptors a host lends** (the client's input and output: the CLI's stdin and stdout, a C
//!   or Python host's `stdin`/`stdout`): the session holds duplicates, and a duplicate shares the
//!   host's *open file description* — setting `O_NONBLOCK` on it would change the host's own
//!   descriptor (a host reading its end of a socket pair would see `EAGAIN`). Instead:
//!   - a socket is read and written with `MSG_DONTWAIT` per call, which changes no flag;
//!   - a pipe or FIFO is reopened through `/proc/self/fd/N`, which gives a new open file
//!     description of the same pipe, private to the session, made non-blocking at open; the
//!     duplicate is closed at once;
//!   - a description that is already non-blocking is used as it is;
//!   - a regular file never blocks for long and is used as it is;
//!   - anything else (a terminal, or a pipe that cannot be reopened: no `/proc`, no reader left)
//!     is written only after `poll` reports room, at most `PIPE_BUF` bytes at a time — which a
//!     pipe accepts without blocking unless another writer fills it in between.
//!
//! Writes to the client count the bytes the client accepted ([`Endpoint::with_progress`]), so the
//! session can tell a slow reader (still accepting) from a stalled one.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::cancel::{Cancel, cancelled};
use crate::sys::fd;
use crate::sys::fork_close::Tracked;

/// How an endpoint's reads and writes avoid blocking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The description is non-blocking (the session's own, or already so).
    NonBlocking,
    /// A socket: `recv`/`send` with `MSG_DONTWAIT`.
    Socket,
    /// A regular file: plain reads and writes.
    File,
    /// A blocking description that cannot be replaced: poll first, then at most `PIPE_BUF` bytes.
    PollFirst,
}

/// Which way an endpoint is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

/// One end of a byte stream, read or written without blocking uncancellably.
pub(crate) struct Endpoint {
    /// Not kept by a fork of the host (SPEC §3.1b).
    fd: Tracked<OwnedFd>,
    mode: Mode,
    cancel: Cancel,
    /// Bytes written so far (client output only).
    progress: Option<Arc<AtomicU64>>,
}

impl Endpoint {
    /// An end of a pipe this session created: its description is made non-blocking.
    pub(crate) fn own_pipe(fd: OwnedFd, cancel: Cancel) -> io::Result<Self> {
        fd::set_nonblocking(fd.as_fd())?;
        Ok(Self {
            fd: Tracked::new(fd),
            mode: Mode::NonBlocking,
            cancel,
            progress: None,
        })
    }

    /// A descriptor the host lent (`fd` is the session's duplicate of it). Never changes the
    /// flags of the host's open file description.
    pub(crate) fn borrowed(fd: OwnedFd, direction: Direction, cancel: Cancel) -> Self {
        let (fd, mode) = private_or_shared(fd, direction);
        Self {
            fd: Tracked::new(fd),
            mode,
            cancel,
            progress: None,
        }
    }

    /// Counts every byte written into `counter`.
    pub(crate) fn with_progress(mut self, counter: Arc<AtomicU64>) -> Self {
        self.progress = Some(counter);
        self
    }

    /// How reads and writes avoid blocking.
    #[cfg(test)]
    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    /// One attempt to write `buf`: `WouldBlock` when there is no room.
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        let fd = self.fd.as_fd();
        match self.mode {
            Mode::Socket => fd::send_nonblocking(fd, buf),
            Mode::NonBlocking | Mode::File => fd::write(fd, buf),
            Mode::PollFirst => {
                if !self.cancel.wait_writable(fd)? {
                    return Err(cancelled());
                }
                fd::write(fd, &buf[..buf.len().min(libc::PIPE_BUF)])
            }
        }
    }

    /// One attempt to read into `buf`: `WouldBlock` when nothing is there.
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = self.fd.as_fd();
        match self.mode {
            Mode::Socket => fd::recv_nonblocking(fd, buf),
            // A PollFirst description is read only after its reader's poll reported data.
            _ => fd::read(fd, buf),
        }
    }
}

impl Write for Endpoint {
    /// Writes what there is room for, waiting (cancellably) while there is none.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.try_write(buf) {
                Ok(n) => {
                    if let Some(p) = &self.progress {
                        p.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !self.cancel.wait_writable(self.fd.as_fd())? {
                        return Err(cancelled());
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for Endpoint {
    /// One non-blocking read; `WouldBlock` when nothing is there (the caller polls, with the
    /// session's cancellation, before reading again).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.try_read(buf)
    }
}

impl AsFd for Endpoint {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The descriptor to use for a lent one, and how: see the module documentation.
fn private_or_shared(fd: OwnedFd, direction: Direction) -> (OwnedFd, Mode) {
    if fd::status_flags(fd.as_fd()).is_some_and(|flags| flags & libc::O_NONBLOCK != 0) {
        return (fd, Mode::NonBlocking);
    }
    let Some(st) = fd::stat(fd.as_fd()) else {
        return (fd, Mode::PollFirst);
    };
    match st.st_mode & libc::S_IFMT {
        libc::S_IFSOCK => (fd, Mode::Socket),
        libc::S_IFREG => (fd, Mode::File),
        libc::S_IFIFO => match reopen(fd.as_fd(), direction) {
            Some(private) => (private, Mode::NonBlocking),
            None => (fd, Mode::PollFirst),
        },
        _ => (fd, Mode::PollFirst),
    }
}

/// A new, non-blocking open file description of the pipe `fd` refers to (`/proc/self/fd/N`),
/// or `None` (no `/proc`, no permission, or — for writing — no reader left: `ENXIO`).
fn reopen(fd: BorrowedFd<'_>, direction: Direction) -> Option<OwnedFd> {
    let path = std::ffi::CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()?;
    let access = match direction {
        Direction::Read => libc::O_RDONLY,
        Direction::Write => libc::O_WRONLY,
    };
    let new = fd::open(
        &path,
        access | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY,
    )?;
    // It must be the same pipe (the link resolved to the descriptor's own object).
    let original = fd::object_of(fd)?;
    (fd::object_of(new.as_fd()) == Some(original)).then_some(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(fd: &impl AsFd) -> libc::c_int {
        fd::status_flags(fd.as_fd()).unwrap()
    }

    /// A pipe the host lends gets a private description: the host's stays blocking, and a
    /// write that finds no room waits cancellably.
    #[test]
    fn a_lent_pipe_is_reopened_privately_and_its_writes_are_cancellable() {
        let (host_read, host_write) = std::io::pipe().unwrap();
        let cancel = Cancel::new().unwrap();
        let dup = host_write.as_fd().try_clone_to_owned().unwrap();
        let mut out = Endpoint::borrowed(dup, Direction::Write, cancel.clone());
        assert_eq!(out.mode(), Mode::NonBlocking);
        assert_eq!(
            flags(&host_write) & libc::O_NONBLOCK,
            0,
            "the host's is untouched"
        );
        // Fill the pipe, then cancel the write that waits for room.
        let stop = cancel.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            stop.cancel();
        });
        let big = vec![b'x'; 1 << 20];
        let e = out.write_all(&big).unwrap_err();
        assert!(super::super::cancel::is_cancelled(&e), "{e}");
        t.join().unwrap();
        drop(host_read);
    }

    #[test]
    fn a_lent_socket_keeps_its_flags() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let cancel = Cancel::new().unwrap();
        let dup = OwnedFd::from(a.try_clone().unwrap());
        let mut out = Endpoint::borrowed(dup, Direction::Write, cancel);
        assert_eq!(out.mode(), Mode::Socket);
        out.write_all(b"hello\n").unwrap();
        assert_eq!(flags(&a) & libc::O_NONBLOCK, 0);
        let mut got = [0u8; 6];
        (&b).read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hello\n");
    }
}
