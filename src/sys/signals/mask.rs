//! Per-thread blocking of the signals a failed write raises.
//!
//! A write to a pipe whose reader is gone raises `SIGPIPE`, and a write past `RLIMIT_FSIZE`
//! raises `SIGXFSZ`; by default either kills the whole process — fatal for a C or Python host,
//! and a lost stop record for the CLI. Blocked in the writing thread, each becomes a plain error
//! (`EPIPE`, `EFBIG`), which the writer handles (a `proxy_error`, a poisoned decision log, a
//! failed evidence write). Both signals are thread-directed when a write raises them, so blocking
//! them on the writing threads is enough; no handler is installed and no disposition changes.

use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};

fn write_signals() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGPIPE);
    set.add(Signal::SIGXFSZ);
    set
}

/// Blocks `SIGPIPE` and `SIGXFSZ` in the calling thread for good: for the session's own worker
/// threads, whose pending signals are discarded when they end.
pub(crate) fn block_write_signals_in_this_thread() {
    let _ = write_signals().thread_block();
}

/// Blocks `SIGPIPE` and `SIGXFSZ` in the thread that runs a session (the host's thread) and
/// restores that thread's mask when dropped, after discarding any of the two signals the
/// session's own writes left pending (so restoring the mask cannot deliver one).
pub(crate) struct ThreadMask {
    /// The thread's mask before the session: also the mask the server child starts with.
    original: SigSet,
}

impl ThreadMask {
    pub(crate) fn block_write_signals() -> Self {
        let mut original = SigSet::empty();
        // pthread_sigmask cannot fail with valid arguments; on failure the mask is unchanged and
        // `original` stays empty, which is also what the child would get from a default host.
        let _ = pthread_sigmask(
            SigmaskHow::SIG_BLOCK,
            Some(&write_signals()),
            Some(&mut original),
        );
        Self { original }
    }

    /// The mask the thread had before the session.
    pub(crate) fn original(&self) -> SigSet {
        self.original
    }
}

impl Drop for ThreadMask {
    fn drop(&mut self) {
        // Only the signals this guard blocked (the host had not blocked them itself).
        let mut ours = SigSet::empty();
        for sig in [Signal::SIGPIPE, Signal::SIGXFSZ] {
            if !self.original.contains(sig) {
                ours.add(sig);
            }
        }
        // Discard what a failed write of this session left pending, so unblocking does not
        // deliver it. Bounded: each round takes one pending signal.
        for _ in 0..4 {
            if !pending_any(&ours) || !take_one(&ours) {
                break;
            }
        }
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&self.original), None);
    }
}

/// True when a signal of `set` is pending for this thread or the process.
fn pending_any(set: &SigSet) -> bool {
    let mut pending = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigpending writes a complete sigset_t into the pointer it is given.
    if unsafe { libc::sigpending(pending.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: initialized by the successful sigpending above.
    let pending = unsafe { pending.assume_init() };
    set.iter().any(|sig| {
        // SAFETY: `pending` is an initialized sigset_t; sigismember only reads it.
        unsafe { libc::sigismember(&pending, sig as libc::c_int) == 1 }
    })
}

/// Takes one pending signal of `set` without waiting; true when one was taken.
fn take_one(set: &SigSet) -> bool {
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `set` is a valid sigset_t, the info pointer may be NULL, and the zero timeout makes
    // sigtimedwait return at once.
    unsafe { libc::sigtimedwait(set.as_ref(), std::ptr::null_mut(), &zero) > 0 }
}
