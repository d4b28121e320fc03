//! The handle of a spawned server: its PID and, once collected, its exit status. The standard
//! library's `Child` cannot adopt a PID it did not spawn, so the session uses this one.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// A server process this process spawned and has not yet reaped (or has reaped, and remembers
/// the status of). Dropping it neither waits nor kills: the session's cleanup does that.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    pid: libc::pid_t,
    status: Option<ExitStatus>,
}

impl ServerProcess {
    /// Adopts `pid`, a child of this process that has not been waited for.
    pub(super) fn adopt(pid: libc::pid_t) -> Self {
        Self { pid, status: None }
    }

    /// The server's PID.
    pub(crate) fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// The status, if the server has exited; `None` while it runs. Never blocks. Once collected
    /// the status is remembered. An error (`ECHILD`: someone else reaped the child, e.g. a host
    /// that ignores `SIGCHLD`) means no status can ever be observed.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let status = self.waitpid(libc::WNOHANG)?;
        self.status = status;
        Ok(status)
    }

    /// Sends SIGKILL, unless the status was already collected (the PID may then belong to
    /// another process, so nothing is sent).
    pub(crate) fn kill(&mut self) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        // SAFETY: kill(2) only reads its arguments; the PID is our unreaped child.
        if unsafe { libc::kill(self.pid, libc::SIGKILL) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Waits for a child that has already exited or is about to (it failed before exec), so it
    /// leaves no zombie. `ECHILD` (the kernel reaped it: `SIGCHLD` ignored) ends the wait too.
    pub(super) fn reap_exited(self) {
        let _ = self.waitpid(0);
    }

    /// `waitpid` on the server with `flags`, retried when a signal interrupts it: the status,
    /// or `None` when `WNOHANG` found the server still running.
    fn waitpid(&self, flags: libc::c_int) -> io::Result<Option<ExitStatus>> {
        loop {
            let mut raw: libc::c_int = 0;
            // SAFETY: waitpid writes the status into `raw`; `pid` is our child (or was, and then
            // the call fails with ECHILD).
            let r = unsafe { libc::waitpid(self.pid, &mut raw, flags) };
            if r == 0 {
                return Ok(None);
            }
            if r == self.pid {
                return Ok(Some(ExitStatus::from_raw(raw)));
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}
