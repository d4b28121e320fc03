//! Forks during a session (SPEC §3.1b): a process the host forks while a session runs (C
//! `fork()`, Python `os.fork()`, `multiprocessing` with the fork start method) must not keep the
//! session's descriptors. A copy of the session's end of the server's stdin would keep a server
//! that ends at the end of its input running; a copy of the client's output would keep the client
//! from seeing end of file; a copy of the cancel pipe's write end would keep the session's
//! workers from ever being woken.
//!
//! Every such descriptor is held in a [`Tracked`], which records its number in a process-wide
//! table for as long as it is open; a `pthread_atfork` child handler, registered once when the
//! first descriptor is tracked, closes every number in the table in the new process. Numbers
//! enter the table after they are opened and leave it before they are closed, so in a fork every
//! number in the table is still the session's descriptor. Our own spawn (`clone` system calls)
//! runs no atfork handler: the server's descriptors are set up in `child/in_child.rs`.
//!
//! The handler only loads and stores atomics and calls `close`: async-signal-safe, as a handler
//! that may run in the child of a multi-threaded process must be. A [`Tracked`] dropped in a
//! forked process (where the handler already closed its number) closes nothing.

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::Once;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering::SeqCst};

/// Descriptors tracked at the same time (a session tracks about ten); past this a descriptor is
/// simply not tracked.
const CAPACITY: usize = 8192;

static TABLE: [AtomicI32; CAPACITY] = [const { AtomicI32::new(-1) }; CAPACITY];
/// One past the highest slot ever used: the handler scans no further.
static USED: AtomicUsize = AtomicUsize::new(0);
static REGISTER: Once = Once::new();

/// Runs in the child of every `fork()` of the process: closes every tracked descriptor.
extern "C" fn close_in_child() {
    let used = USED.load(SeqCst).min(CAPACITY);
    for slot in TABLE.iter().take(used) {
        let fd = slot.swap(-1, SeqCst);
        if fd >= 0 {
            // SAFETY: `fd` is in the table, so it was open in the parent at the fork and is this
            // child's copy of a session descriptor, which nothing in the child uses.
            unsafe { libc::close(fd) };
        }
    }
}

fn register_handler() {
    REGISTER.call_once(|| {
        // SAFETY: registers a handler that only touches atomics and calls close (see the module
        // documentation); the library is never unloaded while the process forks.
        unsafe { libc::pthread_atfork(None, None, Some(close_in_child)) };
    });
}

fn track(fd: RawFd) -> Option<usize> {
    if fd < 0 {
        return None;
    }
    register_handler();
    let slot = TABLE
        .iter()
        .position(|s| s.compare_exchange(-1, fd, SeqCst, SeqCst).is_ok())?;
    USED.fetch_max(slot.saturating_add(1), SeqCst);
    Some(slot)
}

fn untrack(slot: usize) {
    if let Some(s) = TABLE.get(slot) {
        s.store(-1, SeqCst);
    }
}

fn getpid() -> libc::pid_t {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

/// A descriptor (an `OwnedFd`, a `File`, a pipe end) that a fork of the host does not keep.
pub(crate) struct Tracked<T: AsRawFd> {
    inner: ManuallyDrop<T>,
    slot: Option<usize>,
    /// The process that opened it.
    owner: libc::pid_t,
}

impl<T: AsRawFd> Tracked<T> {
    pub(crate) fn new(inner: T) -> Self {
        let slot = track(inner.as_raw_fd());
        Self {
            inner: ManuallyDrop::new(inner),
            slot,
            owner: getpid(),
        }
    }

    /// The descriptor, no longer tracked.
    pub(crate) fn into_inner(mut self) -> T {
        if let Some(slot) = self.slot.take() {
            untrack(slot);
        }
        // SAFETY: `inner` is taken exactly once: `self` is forgotten right after, so its Drop
        // (the only other place that takes it) never runs.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        std::mem::forget(self);
        inner
    }
}

impl<T: AsRawFd> Drop for Tracked<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            untrack(slot);
        }
        if getpid() == self.owner {
            // SAFETY: dropped exactly once, here; `into_inner` forgets `self` instead.
            unsafe { ManuallyDrop::drop(&mut self.inner) };
        }
        // In a forked process the handler closed the number already; closing it again could
        // close a descriptor the child opened since, so the value is leaked instead.
    }
}

impl<T: AsRawFd> Deref for Tracked<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: AsRawFd> DerefMut for Tracked<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: AsRawFd + AsFd> AsFd for Tracked<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.as_fd()
    }
}

impl<T: AsRawFd> AsRawFd for Tracked<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}

impl<T: AsRawFd + std::io::Write> std::io::Write for Tracked<T> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }
    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        self.inner.write_vectored(bufs)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<T: AsRawFd + std::io::Read> std::io::Read for Tracked<T> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// A fork of a process holding a tracked pipe end does not keep it: the reader sees end of
    /// file as soon as the parent closes its end, while the child is still alive.
    #[test]
    fn a_forked_child_does_not_keep_tracked_descriptors() {
        let (r, w) = crate::sys::fd::pipe().unwrap();
        let w = Tracked::new(w);
        let (hold_r, hold_w) = crate::sys::fd::pipe().unwrap();
        // SAFETY: the child only calls async-signal-safe functions (read, _exit).
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let mut b = [0u8; 1];
            // SAFETY: closes the child's copy of the write end, reads into a local; _exit ends
            // the child.
            unsafe {
                libc::close(hold_w.as_raw_fd());
                libc::read(hold_r.as_raw_fd(), b.as_mut_ptr().cast(), 1);
                libc::_exit(0);
            }
        }
        assert!(pid > 0);
        drop(hold_r);
        drop(w);
        let mut r = std::fs::File::from(r);
        let mut buf = Vec::new();
        // Returns only when no process holds the write end: the child (still waiting on
        // `hold`) must have closed its copy.
        r.read_to_end(&mut buf).unwrap();
        drop(hold_w);
        let mut status = 0;
        // SAFETY: waits for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    }
}
