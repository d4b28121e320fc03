//! The handle of a spawned server (SPEC §3.1a): its pidfd, taken with the spawn, for every wait
//! (`waitid(P_PIDFD)`) and kill (`pidfd_send_signal`); its PID only where the kernel has no
//! pidfds (before 5.3). The standard library's `Child` cannot adopt a process it did not spawn,
//! so the session uses this one.
//!
//! Without a pidfd (or before Linux 5.4, where `waitid` does not take one) a wait first looks
//! at the status without collecting it (`WNOWAIT`); once the server has exited, the signal
//! forwarding's target is cleared, and only then is the server reaped: its PID is never free for
//! reuse while a handler could still send to it.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use super::watchdog::Watchdog;
use crate::sys::signals::ForwardTarget;

/// A server process this process spawned. Dropping it never waits and never kills (the
/// session's cleanup does that): it clears the forwarding target, collects a status that is
/// already there, and closes the pidfd.
pub(crate) struct ServerProcess {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
    /// `waitid(P_PIDFD)` is known not to work (a kernel between 5.2 and 5.4).
    pidfd_wait_unsupported: bool,
    status: Option<ExitStatus>,
    /// The status was collected (the PID is no longer ours).
    reaped: bool,
    forward: Option<ForwardTarget>,
    /// The server's process group (its ID is the leader's PID) and the watchdog that ends it if
    /// the wrapper dies (SPEC §3 item 9); `None` only for a child that never exec'd.
    group: Option<Watchdog>,
}

impl std::fmt::Debug for ServerProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerProcess")
            .field("pid", &self.pid)
            .field("pidfd", &self.pidfd)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

/// What `waitid` said.
enum Waited {
    Running,
    Exited(ExitStatus),
}

impl ServerProcess {
    /// Adopts `pid`, a child of this process that has not been waited for, with its pidfd when
    /// there is one.
    pub(super) fn adopt(pid: libc::pid_t, pidfd: Option<OwnedFd>) -> Self {
        Self {
            pid,
            pidfd,
            pidfd_wait_unsupported: false,
            status: None,
            reaped: false,
            forward: None,
            group: None,
        }
    }

    /// Starts the watchdog of the server's process group (the leader, this process, has
    /// exec'd and is the group's leader).
    pub(super) fn watch_group(&mut self) -> io::Result<()> {
        self.group = Some(Watchdog::start(self.pid)?);
        Ok(())
    }

    /// The server's process group ID, while the session keeps it in use (its watchdog has not
    /// been retired).
    pub(crate) fn live_group(&self) -> Option<libc::pid_t> {
        self.group
            .as_ref()
            .filter(|w| !w.is_retired())
            .map(|_| self.pid)
    }

    /// The process group ID (the leader's PID), whether or not it is still in use.
    pub(crate) fn group_id(&self) -> Option<libc::pid_t> {
        self.group.as_ref().map(|_| self.pid)
    }

    /// The watchdog's PID, while it runs.
    pub(crate) fn watchdog_pid(&self) -> Option<libc::pid_t> {
        self.group
            .as_ref()
            .filter(|w| !w.is_retired())
            .map(Watchdog::pid)
    }

    /// Ends the group's watchdog (SIGKILL to it alone) after pointing the signal forwarding back
    /// at the leader's handle: from here on the group's number is no longer kept in use by the
    /// session.
    pub(crate) fn retire_watchdog(&mut self) {
        if let Some(t) = &self.forward {
            t.clear_group();
        }
        if let Some(w) = self.group.as_mut() {
            w.retire();
        }
    }

    /// The server's PID.
    pub(crate) fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Whether the process is addressed through a pidfd.
    #[cfg(test)]
    pub(crate) fn has_pidfd(&self) -> bool {
        self.pidfd.is_some()
    }

    /// Aims the signal forwarding of this session at the server (SPEC §3 item 9); the target is
    /// cleared before the server is reaped and before its pidfd is closed.
    pub(crate) fn forward_signals_to(&mut self, target: ForwardTarget) {
        target.aim(
            self.pidfd.as_ref().map(AsRawFd::as_raw_fd),
            self.pid,
            self.live_group(),
        );
        self.forward = Some(target);
    }

    /// The status, if the server has exited; `None` while it runs. Never blocks. Once collected
    /// the status is remembered. An error (`ECHILD`: someone else reaped the child, e.g. a host
    /// that ignores `SIGCHLD`) means no status can ever be observed.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        match self.wait(libc::WNOHANG)? {
            Waited::Running => Ok(None),
            Waited::Exited(status) => {
                self.status = Some(status);
                Ok(Some(status))
            }
        }
    }

    /// The pidfd to wait on for the server's exit ([`super::EndWaits`]), while there is an
    /// exit to wait for and `waitid` can take it; `None` otherwise (the wait naps).
    pub(crate) fn exit_fd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd
            .as_ref()
            .filter(|_| !self.pidfd_wait_unsupported && !self.reaped)
            .map(AsFd::as_fd)
    }

    /// Sends SIGKILL, unless the status was already collected. Through the pidfd, which cannot
    /// reach another process; without one, by PID, which is still the server's: it has not been
    /// reaped (the cleanup never kills after `ECHILD`).
    pub(crate) fn kill(&mut self) -> io::Result<()> {
        if self.reaped {
            return Ok(());
        }
        let r = match &self.pidfd {
            // SAFETY: pidfd_send_signal only reads its arguments; the descriptor is ours.
            Some(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0u32,
                )
            },
            // SAFETY: kill(2) only reads its arguments; the PID is our unreaped child.
            None => libc::c_long::from(unsafe { libc::kill(self.pid, libc::SIGKILL) }),
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Waits for a child that has already exited or is about to (it failed before exec), so it
    /// leaves no zombie. `ECHILD` (the kernel reaped it: `SIGCHLD` ignored) ends the wait too.
    pub(super) fn reap_exited(mut self) {
        let _ = self.wait(0);
    }

    /// Waits for the server to exit (`flags` 0) or looks whether it has (`WNOHANG`), and collects
    /// its status; retried when a signal interrupts it.
    fn wait(&mut self, flags: libc::c_int) -> io::Result<Waited> {
        if let (Some(fd), false) = (&self.pidfd, self.pidfd_wait_unsupported) {
            match waitid(libc::P_PIDFD, id_of(fd.as_raw_fd()), flags) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    self.pidfd_wait_unsupported = true;
                }
                Ok(Waited::Exited(status)) => {
                    self.reaped = true;
                    if let Some(t) = &self.forward {
                        t.clear();
                    }
                    return Ok(Waited::Exited(status));
                }
                other => return other,
            }
        }
        // By PID: look first, clear the forwarding target, then collect.
        let pid = id_of(self.pid);
        match waitid(libc::P_PID, pid, flags | libc::WNOWAIT)? {
            Waited::Running => Ok(Waited::Running),
            Waited::Exited(status) => {
                if let Some(t) = &self.forward {
                    t.clear();
                }
                waitid(libc::P_PID, pid, libc::WNOHANG)?;
                self.reaped = true;
                Ok(Waited::Exited(status))
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // A status already there is collected (no zombie is left for the host); the
        // forwarding target is cleared first, and in any case before the pidfd is closed.
        if !self.reaped {
            let _ = self.try_wait();
        }
        if let Some(t) = self.forward.take() {
            t.clear();
        }
        if let Some(w) = self.group.as_mut() {
            w.retire();
        }
    }
}

/// A descriptor number or a PID as `waitid`'s `id_t`.
fn id_of(n: libc::c_int) -> libc::id_t {
    libc::id_t::try_from(n).unwrap_or(libc::id_t::MAX)
}

/// `waitid(idtype, id, WEXITED | flags)`, retried on `EINTR`: the status from the `siginfo`.
fn waitid(idtype: libc::idtype_t, id: libc::id_t, flags: libc::c_int) -> io::Result<Waited> {
    loop {
        // SAFETY: a zeroed siginfo_t is valid; waitid writes into it and reads its arguments.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let r = unsafe { libc::waitid(idtype, id, &mut info, libc::WEXITED | flags) };
        if r != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        // SAFETY: after a successful waitid the pid and status fields are initialized (si_pid is
        // 0 when WNOHANG found no exited child).
        let (pid, code, status) = unsafe { (info.si_pid(), info.si_code, info.si_status()) };
        if pid == 0 {
            return Ok(Waited::Running);
        }
        return Ok(Waited::Exited(ExitStatus::from_raw(wait_status(
            code, status,
        ))));
    }
}

/// The `wait(2)` status word for a `siginfo` from `waitid`.
fn wait_status(code: libc::c_int, status: libc::c_int) -> libc::c_int {
    match code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_KILLED => status & 0x7f,
        libc::CLD_DUMPED => (status & 0x7f) | 0x80,
        // WEXITED reports only those three; anything else is read as an exit with `status`.
        _ => (status & 0xff) << 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_status_words() {
        let exited = ExitStatus::from_raw(wait_status(libc::CLD_EXITED, 7));
        assert_eq!(exited.code(), Some(7));
        let killed = ExitStatus::from_raw(wait_status(libc::CLD_KILLED, libc::SIGKILL));
        assert_eq!((killed.signal(), killed.core_dumped()), (Some(9), false));
        let dumped = ExitStatus::from_raw(wait_status(libc::CLD_DUMPED, libc::SIGSEGV));
        assert_eq!((dumped.signal(), dumped.core_dumped()), (Some(11), true));
    }
}
