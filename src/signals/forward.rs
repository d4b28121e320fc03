//! `forward_signals` (SPEC §3 item 9): SIGTERM, SIGINT and SIGHUP received by the process while a
//! session runs are sent on to that session's server, which then ends (or not) on its own; the
//! session ends through its normal path and records what it observed.
//!
//! The handler is installed only by a session that asked for it, when the first such session of
//! the process starts, and the previous dispositions are restored when the last one ends. While
//! installed it replaces the host's handlers for those three signals: they go to the server(s)
//! only. The handler is async-signal-safe: it reads atomics and makes one syscall per session.
//! Each session's server is addressed through a pidfd (Linux 5.3+), which can never reach a
//! process that reused the server's PID; on older kernels through its PID, cleared as soon as
//! the server has been reaped.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

/// How many sessions of one process can forward signals at the same time.
const SLOTS: usize = 64;

/// The forwarded signals.
const FORWARDED: [Signal; 3] = [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP];

static CLAIMED: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
static TARGET_PIDFD: [AtomicI32; SLOTS] = [const { AtomicI32::new(-1) }; SLOTS];
static TARGET_PID: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
static RECEIVED: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

/// Sessions using the handler, and the dispositions it replaced.
struct Installed {
    sessions: usize,
    previous: Vec<(Signal, SigAction)>,
}

static INSTALLED: Mutex<Installed> = Mutex::new(Installed {
    sessions: 0,
    previous: Vec::new(),
});

fn send(slot: usize, sig: libc::c_int) {
    let fd = TARGET_PIDFD[slot].load(Ordering::Acquire);
    if fd >= 0 {
        // SAFETY: pidfd_send_signal only reads its arguments; a NULL siginfo sends the signal as
        // kill(2) would. A stale descriptor number fails with EBADF/EINVAL, which is harmless.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                sig,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            );
        }
        return;
    }
    let pid = TARGET_PID[slot].load(Ordering::Acquire);
    if pid > 0 {
        // SAFETY: kill(2) is async-signal-safe and only reads its arguments.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: __errno_location returns this thread's errno slot; it is saved and restored so
    // the interrupted code never sees the handler's syscalls.
    let saved = unsafe { *libc::__errno_location() };
    for slot in 0..SLOTS {
        if CLAIMED[slot].load(Ordering::Acquire) {
            RECEIVED[slot].store(sig, Ordering::Release);
            send(slot, sig);
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
}

/// One session's forwarding; dropping it stops the forwarding (and uninstalls the handler when
/// it was the last session using it).
pub(crate) struct Forwarding {
    slot: usize,
    pidfd: Option<OwnedFd>,
}

impl Forwarding {
    /// Claims a slot and installs the handler if no other session has. Called before spawn, so a
    /// signal that arrives while the server starts is still forwarded (by [`Self::target`]).
    pub(crate) fn install() -> io::Result<Self> {
        let slot = (0..SLOTS)
            .find(|&i| {
                CLAIMED[i]
                    .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            })
            .ok_or_else(|| {
                io::Error::other(format!(
                    "forward_signals: at most {SLOTS} sessions of one process can forward signals"
                ))
            })?;
        RECEIVED[slot].store(0, Ordering::Release);
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        if installed.sessions == 0 {
            let mut mask = SigSet::empty();
            for sig in FORWARDED {
                mask.add(sig);
            }
            let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, mask);
            let mut previous = Vec::with_capacity(FORWARDED.len());
            for sig in FORWARDED {
                // SAFETY: the handler is async-signal-safe (atomics and one syscall per
                // session, errno preserved); the previous action is kept and restored.
                match unsafe { sigaction(sig, &action) } {
                    Ok(old) => previous.push((sig, old)),
                    Err(e) => {
                        restore(&previous);
                        CLAIMED[slot].store(false, Ordering::Release);
                        return Err(io::Error::other(format!(
                            "forward_signals: cannot handle {sig}: {e}"
                        )));
                    }
                }
            }
            installed.previous = previous;
        }
        installed.sessions += 1;
        Ok(Self { slot, pidfd: None })
    }

    /// Points the forwarding at the spawned server `pid`, and forwards a signal that arrived
    /// before it had a target.
    pub(crate) fn target(&mut self, pid: u32) {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return;
        };
        // SAFETY: pidfd_open only reads its arguments; the server is our unreaped child, so `pid`
        // is still its PID. The result is a new close-on-exec descriptor, owned below.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
        if let Ok(fd) = i32::try_from(fd) {
            if fd >= 0 {
                // SAFETY: `fd` was just returned by pidfd_open and nothing else owns it.
                self.pidfd = Some(unsafe { OwnedFd::from_raw_fd(fd) });
                TARGET_PIDFD[self.slot].store(fd, Ordering::Release);
            }
        }
        if self.pidfd.is_none() {
            TARGET_PID[self.slot].store(pid, Ordering::Release);
        }
        let early = RECEIVED[self.slot].load(Ordering::Acquire);
        if early != 0 {
            send(self.slot, early);
        }
    }

    /// The server has been reaped: forwarding by PID stops, so a process that reuses the PID is
    /// never signalled. (A pidfd stays valid; signalling it after the exit is a no-op.)
    pub(crate) fn server_reaped(&self) {
        TARGET_PID[self.slot].store(0, Ordering::Release);
    }

    /// The last forwarded signal, if any arrived.
    pub(crate) fn received(&self) -> Option<i32> {
        match RECEIVED[self.slot].load(Ordering::Acquire) {
            0 => None,
            s => Some(s),
        }
    }
}

fn restore(previous: &[(Signal, SigAction)]) {
    for (sig, old) in previous {
        // SAFETY: restores exactly the action sigaction returned for this signal.
        let _ = unsafe { sigaction(*sig, old) };
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        TARGET_PID[self.slot].store(0, Ordering::Release);
        TARGET_PIDFD[self.slot].store(-1, Ordering::Release);
        // Closed only after the slot no longer names it.
        drop(self.pidfd.take());
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        installed.sessions = installed.sessions.saturating_sub(1);
        if installed.sessions == 0 {
            let previous = std::mem::take(&mut installed.previous);
            restore(&previous);
        }
        RECEIVED[self.slot].store(0, Ordering::Release);
        CLAIMED[self.slot].store(false, Ordering::Release);
    }
}
