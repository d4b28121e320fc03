//! Cancellation of blocked readers: each wait polls the reader's descriptor together with the
//! read end of a private pipe; cancelling closes the write end, which wakes every waiter.

use std::io::{self, PipeReader, PipeWriter};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::{Arc, Mutex};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// A cancellation token shared by the session and its workers.
#[derive(Clone)]
pub(crate) struct Cancel {
    reader: Arc<PipeReader>,
    writer: Arc<Mutex<Option<PipeWriter>>>,
}

impl Cancel {
    pub(crate) fn new() -> io::Result<Self> {
        let (r, w) = io::pipe()?;
        Ok(Self {
            reader: Arc::new(r),
            writer: Arc::new(Mutex::new(Some(w))),
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
        loop {
            let mut fds = [
                PollFd::new(fd, PollFlags::POLLIN),
                PollFd::new(self.reader.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(io::Error::from(e)),
            }
            let cancelled = fds[1].revents().is_some_and(|r| !r.is_empty());
            if cancelled {
                return Ok(false);
            }
            // Readable, hung up or in error: the read that follows reports which.
            if fds[0].revents().is_some_and(|r| !r.is_empty()) {
                return Ok(true);
            }
        }
    }
}
