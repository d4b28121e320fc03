//! The watchdog of the server's process group (SPEC §3 item 9): whatever ends the wrapper — a
//! signal, SIGKILL included, or a crash — every process of the server's group ends within
//! milliseconds, even one that ignores end of input and SIGTERM. `PR_SET_PDEATHSIG` reaches only
//! the direct child; a launcher's children (`npx` → `node`) are out of its reach.
//!
//! The mechanism (docs/decisions.md, "The server is a process tree"): a small process in the
//! server's group, as `tini` and `dumb-init` are in a container's, blocked reading a pipe whose
//! only write end the session holds. The kernel closes that end when the wrapper process ends,
//! however it ends; the read returns and the watchdog sends SIGKILL to its group
//! (`watchdog_code.rs`). While the watchdog lives it is also what keeps the group's number ours:
//! a process group's ID cannot be reused while a member exists, and the watchdog is the
//! session's own child, reaped only when the session is done with the group.
//!
//! It is created with `clone(CLONE_VM)` on a stack of its own: it shares the wrapper's memory,
//! so no page table is copied and a host with a large heap pays no copy-on-write afterwards
//! (with a fork, every page the host writes during the session would be copied once). Where
//! that clone is refused (a sandbox, valgrind), a plain fork runs the same code. The write end
//! is tracked (`fork_close.rs`): a process the host forks during the session does not keep it.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::clone::{AllBlocked, ChildStack, owned, refused};
use super::watchdog_code::{SHARED_MEMORY_OK, pack, watchdog_entry, watchdog_main};
use crate::sys::fork_close::Tracked;

/// How long retiring the watchdog waits for it to end (it ends within microseconds of its
/// SIGKILL; the bound keeps a kernel that delays it from holding the session).
const RETIRE_BOUND: Duration = Duration::from_secs(2);

/// The running watchdog of one server group.
pub(crate) struct Watchdog {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
    /// The session's end of the alarm pipe: while it is open the watchdog waits.
    alarm: Option<Tracked<OwnedFd>>,
    /// The stack of a shared-memory watchdog, unmapped only once the watchdog is known to have
    /// ended (it runs on it).
    stack: Option<ChildStack>,
    /// The watchdog has ended and was reaped (or the kernel reaped it).
    ended: bool,
}

impl std::fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchdog")
            .field("pid", &self.pid)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Watchdog {
    /// Starts the watchdog of process group `pgid` (the server's, whose leader has exec'd).
    pub(crate) fn start(pgid: libc::pid_t) -> io::Result<Self> {
        let (read, write) = crate::sys::fd::pipe()?;
        let (read, write) = (Tracked::new(read), Tracked::new(write));
        let arg = pack(pgid, read.as_raw_fd());
        let (created, stack) = if SHARED_MEMORY_OK && !under_valgrind() {
            match clone_shared(arg) {
                Ok((c, s)) => (c, Some(s)),
                Err(e) if refused(&e) => (fork(arg)?, None),
                Err(e) => return Err(e),
            }
        } else {
            (fork(arg)?, None)
        };
        let mut dog = Self {
            pid: created.0,
            pidfd: created.1,
            alarm: Some(write),
            stack,
            ended: false,
        };
        // The parent sets the group too (as shells do): whichever runs first, the watchdog is in
        // the group when this returns.
        // SAFETY: setpgid only changes the process group of our child, which never execs.
        if unsafe { libc::setpgid(dog.pid, pgid) } != 0 {
            let e = io::Error::last_os_error();
            dog.retire();
            return Err(io::Error::other(format!(
                "cannot place the watchdog in the server's process group: {e}"
            )));
        }
        drop(read);
        Ok(dog)
    }

    /// The watchdog's PID.
    pub(crate) fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Whether [`retire`](Self::retire) has run.
    pub(crate) fn is_retired(&self) -> bool {
        self.alarm.is_none()
    }

    /// Ends the watchdog alone (SIGKILL to it, not to its group), waits for it (bounded) and
    /// then closes the alarm pipe. From here on nothing of the session keeps the group's number
    /// in use.
    pub(crate) fn retire(&mut self) {
        if self.ended || self.alarm.is_none() {
            return;
        }
        self.kill();
        let deadline = Instant::now() + RETIRE_BOUND;
        // It ends within microseconds of its SIGKILL: a brief look first, then the pidfd.
        if super::spin_until(deadline, || self.reaped()) {
            self.ended = true;
        }
        // Then its end is waited for as an event (the pidfd turns readable when it exits), not
        // with a fixed nap: a 200 µs nap after the first look was most of what the watchdog
        // added to a session's start and stop (bench/README.md, "Start-up"). Without a pidfd
        // the naps start short and grow.
        let mut waits = super::EndWaits::new(Duration::from_micros(20), Duration::from_millis(2));
        while !self.ended {
            if self.reaped() {
                self.ended = true;
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            waits.wait(self.pidfd.as_ref().map(AsFd::as_fd), deadline - now);
        }
        // Closing the alarm pipe while the watchdog lives would make it end the group: only
        // now, when it is gone (or, past the bound, when the session is over anyway).
        self.alarm = None;
        if self.ended {
            self.stack = None;
        } else if let Some(stack) = self.stack.take() {
            // It may still run on this memory: the mapping is left in place.
            std::mem::forget(stack);
        }
    }

    fn kill(&self) {
        match &self.pidfd {
            // SAFETY: pidfd_send_signal only reads its arguments; the descriptor is ours.
            Some(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0u32,
                );
            },
            // SAFETY: kill only reads its arguments; the PID is our unreaped child's.
            None => unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            },
        }
    }

    /// Collects the watchdog's status if it has ended; true once it is gone (an `ECHILD`: the
    /// kernel reaped it for a host that ignores `SIGCHLD`).
    fn reaped(&self) -> bool {
        let (idtype, id) = match &self.pidfd {
            Some(fd) => (libc::P_PIDFD, id_of(fd.as_raw_fd())),
            None => (libc::P_PID, id_of(self.pid)),
        };
        loop {
            // SAFETY: a zeroed siginfo_t is valid; waitid writes into it.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: as above; waitid reads its other arguments.
            let r = unsafe { libc::waitid(idtype, id, &mut info, libc::WEXITED | libc::WNOHANG) };
            if r != 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return e.raw_os_error() == Some(libc::ECHILD);
            }
            // SAFETY: initialized by the successful waitid (0 when nothing has exited).
            return unsafe { info.si_pid() } != 0;
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.retire();
    }
}

/// Valgrind ends the process on a `clone` it does not emulate (it supports threads, fork and
/// vfork) instead of failing the call, so the shared-memory clone cannot be tried there: its
/// preload library in `LD_PRELOAD` tells. Read once.
fn under_valgrind() -> bool {
    static UNDER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *UNDER.get_or_init(|| {
        std::env::var_os("LD_PRELOAD").is_some_and(|v| {
            v.as_encoded_bytes()
                .windows(b"vgpreload".len())
                .any(|w| w == b"vgpreload")
        })
    })
}

fn id_of(n: libc::c_int) -> libc::id_t {
    libc::id_t::try_from(n).unwrap_or(libc::id_t::MAX)
}

type Created = (libc::pid_t, Option<OwnedFd>);

/// `clone(CLONE_VM | CLONE_PIDFD | SIGCHLD)` on a stack of its own, every signal blocked.
fn clone_shared(arg: usize) -> io::Result<(Created, ChildStack)> {
    let stack = ChildStack::new()?;
    let flags = libc::CLONE_VM | libc::CLONE_PIDFD | libc::SIGCHLD;
    let mut pidfd: libc::c_int = -1;
    let blocked = AllBlocked::new();
    // SAFETY: clone runs `watchdog_entry` on the separate stack, which `Watchdog` keeps mapped
    // until the watchdog has ended. Its argument is a number, not a pointer: the watchdog reads
    // no memory of ours after the clone, and it makes raw system calls only (no errno, no lock,
    // no allocation: watchdog_code.rs). With CLONE_PIDFD the kernel writes the pidfd into
    // `pidfd` (the parent_tid argument).
    let pid = unsafe {
        libc::clone(
            watchdog_entry,
            stack.top(),
            flags,
            arg as *mut libc::c_void,
            &mut pidfd as *mut libc::c_int,
        )
    };
    let error = io::Error::last_os_error();
    drop(blocked);
    if pid < 0 {
        return Err(error);
    }
    Ok(((pid, owned(pidfd)), stack))
}

/// A plain fork running the same code (`clone(SIGCHLD | CLONE_PIDFD)`, or without the flag and
/// `pidfd_open` after: the watchdog cannot end and be reaped before that, it waits on a pipe
/// whose write end is ours).
fn fork(arg: usize) -> io::Result<Created> {
    match raw_fork(arg, libc::CLONE_PIDFD) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let (pid, _) = raw_fork(arg, 0)?;
            // SAFETY: pidfd_open only reads its arguments; `pid` is our unreaped child.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
            Ok((pid, RawFd::try_from(fd).ok().and_then(owned)))
        }
        other => other,
    }
}

fn raw_fork(arg: usize, extra: libc::c_int) -> io::Result<Created> {
    let flags = libc::c_ulong::try_from(libc::SIGCHLD | extra).unwrap_or(0);
    let mut pidfd: libc::c_int = -1;
    let blocked = AllBlocked::new();
    // SAFETY: the clone system call without CLONE_VM or a new stack behaves as fork; the child
    // runs only `watchdog_main`, which makes raw system calls and never returns.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags,
            0usize,
            &mut pidfd as *mut libc::c_int,
            0usize,
            0usize,
        )
    };
    if pid == 0 {
        watchdog_main(arg);
    }
    let error = io::Error::last_os_error();
    drop(blocked);
    if pid < 0 {
        return Err(error);
    }
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    Ok((pid, owned(pidfd)))
}
