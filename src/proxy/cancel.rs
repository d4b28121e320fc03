//! Cancellation of blocked readers and writers (SPEC §3.1a): each wait polls the descriptor
//! together with the read end of a private pipe; cancelling closes the write end, which wakes
//! every waiter, now and later.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::sys::fork_close::Tracked;

/// A cancellation token shared by the session and its workers.
/// Both ends are [`Tracked`]: a fork of the host keeping the write end would keep every waiter
/// from ever being woken (SPEC §3.1b).
#[derive(Clone)]
pub(crate) struct Cancel {
    reader: Arc<Tracked<OwnedFd>>,
    writer: Arc<Mutex<Option<Tracked<OwnedFd>>>>,
}

impl Cancel {
    pub(crate) fn new() -> io::Result<Self> {
        // Both ends numbered 3 or above (SPEC §3.1b).
        let (r, w) = crate::sys::fd::pipe()?;
        Ok(Self {
            reader: Arc::new(Tracked::new(r)),
            writer: Arc::new(Mutex::new(Some(Tracked::new(w)))),
        })
    }

    /// Wakes every waiter; idempotent.
    pub(crate) fn cancel(&self) {
        if let Ok(mut w) = self.writer.lock() {
            w.take();
        }
    }

    /// Blocks until `fd` is readable (true) or the token is cancelled (false).
    pub(crate) fn wait_readable(&self, fd: BorrowedFd<'_>) -> io::Result<bool> {
        self.wait(fd, PollFlags::POLLIN)
    }

    /// Blocks until `fd` is writable (true) or the token is cancelled (false).
    pub(crate) fn wait_writable(&self, fd: BorrowedFd<'_>) -> io::Result<bool> {
        self.wait(fd, PollFlags::POLLOUT)
    }

    /// Without blocking: `Some(true)` when `fd` is readable now, `Some(false)` when the token
    /// is cancelled, `None` when neither.
    pub(crate) fn readable_now(&self, fd: BorrowedFd<'_>) -> io::Result<Option<bool>> {
        self.poll(fd, PollFlags::POLLIN, PollTimeout::ZERO)
    }

    fn wait(&self, fd: BorrowedFd<'_>, events: PollFlags) -> io::Result<bool> {
        loop {
            if let Some(ready) = self.poll(fd, events, PollTimeout::NONE)? {
                return Ok(ready);
            }
        }
    }

    /// One poll of `fd` beside the token: `Some(false)` when cancelled, `Some(true)` when `fd`
    /// is ready, hung up or in error (the read or write that follows reports which), `None`
    /// when neither (the timeout passed).
    fn poll(
        &self,
        fd: BorrowedFd<'_>,
        events: PollFlags,
        timeout: PollTimeout,
    ) -> io::Result<Option<bool>> {
        let mut fds = [
            PollFd::new(fd, events),
            PollFd::new(self.reader.as_fd(), PollFlags::POLLIN),
        ];
        loop {
            match poll(&mut fds, timeout) {
                Ok(_) => break,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(io::Error::from(e)),
            }
        }
        if fds[1].revents().is_some_and(|r| !r.is_empty()) {
            return Ok(Some(false));
        }
        Ok(fds[0]
            .revents()
            .is_some_and(|r| !r.is_empty())
            .then_some(true))
    }
}

/// The error a write (or a read) returns when the session cancelled it.
#[derive(Debug, thiserror::Error)]
#[error("cancelled by the session")]
pub(crate) struct Cancelled;

/// An I/O error saying the session cancelled the operation.
pub(crate) fn cancelled() -> io::Error {
    io::Error::other(Cancelled)
}

/// Whether `e` is [`cancelled`]'s error.
pub(crate) fn is_cancelled(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Cancelled>())
}
