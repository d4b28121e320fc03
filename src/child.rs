//! The child process: spawn with piped stdin/stdout, observation of its status (SPEC §3.2) and the
//! bounded cleanup (SPEC §3.1, preserving upstream #3419).
//!
//! Between fork and exec the child (SPEC §3 items 3 and 9):
//! - asks the kernel for SIGKILL when the thread that spawned it dies (`PR_SET_PDEATHSIG`), and
//!   exits at once if the wrapper is already gone — the session's thread spawns it and lives
//!   until the session ends, so the server never outlives the wrapper, whatever ends it;
//! - marks every descriptor from 3 up close-on-exec (`close_range(3, ~0, CLOSE_RANGE_CLOEXEC)`,
//!   or one `fcntl` per descriptor on kernels before 5.11), so it inherits exactly its stdin,
//!   stdout and stderr — even descriptors a C host made without `FD_CLOEXEC`. Marking, not
//!   closing, leaves the standard library's exec-error pipe (already close-on-exec) working;
//! - starts with the signal mask the host thread had before the session blocked `SIGPIPE` and
//!   `SIGXFSZ` for its own writes.
//!
//! Cleanup never blocks without bound: `try_wait`, then at most one kill attempt (SIGKILL), then
//! at most [`KILL_POLL_BOUND`] of polling. The bound applies to cleanup only, never to a live
//! tool call.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind, Result};
use crate::outcome::{ChildStatus, Termination};

/// How long cleanup polls for a status after the kill attempt (SPEC §3.1).
pub(crate) const KILL_POLL_BOUND: Duration = Duration::from_secs(2);
/// Polling interval after the kill attempt.
const KILL_POLL_INTERVAL: Duration = Duration::from_millis(10);
/// After both I/O workers finish, how long `try_wait` is retried (from 20 µs, doubling up to 2 ms)
/// before cleanup concludes there is no status. A child closes its stdout while exiting a few microseconds before the kernel makes
/// its exit status available; without this short grace a normally exiting child would routinely
/// be recorded with `assay_kill_requested: true`. It is a sequence of non-blocking `try_wait`
/// calls, so the cleanup stays bounded.
pub(crate) const EXIT_GRACE: Duration = Duration::from_millis(50);

/// A spawned child with its pipes taken out.
pub(crate) struct Spawned {
    pub child: Child,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub pid: u32,
}

/// The highest descriptor number the fallback of [`mark_cloexec_from_3`] visits.
const FALLBACK_FD_CAP: libc::rlim_t = 1 << 20;

/// Marks every descriptor from 3 up close-on-exec. Runs between fork and exec: raw syscalls only,
/// no allocation.
fn mark_cloexec_from_3(fd_limit: libc::c_int) {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only changes descriptor flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if r == 0 {
        return;
    }
    // ENOSYS (before 5.9) or EINVAL (5.9/5.10: no CLOSE_RANGE_CLOEXEC): one fcntl per number.
    for fd in 3..fd_limit {
        // SAFETY: F_GETFD/F_SETFD on any number: an unused one fails with EBADF, harmlessly.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

/// What the fork/exec hook needs, computed before the fork.
#[derive(Clone, Copy)]
struct ExecPrep {
    parent: libc::pid_t,
    mask: libc::sigset_t,
    fd_limit: libc::c_int,
}

impl ExecPrep {
    fn new(mask: &nix::sys::signal::SigSet) -> Self {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given.
        let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
        let cap = if ok {
            lim.rlim_cur.min(FALLBACK_FD_CAP)
        } else {
            FALLBACK_FD_CAP
        };
        Self {
            // SAFETY: getpid has no preconditions.
            parent: unsafe { libc::getpid() },
            mask: *mask.as_ref(),
            fd_limit: libc::c_int::try_from(cap).unwrap_or(libc::c_int::MAX),
        }
    }

    /// Runs in the child between fork and exec: async-signal-safe syscalls only.
    fn apply(&self) -> io::Result<()> {
        // SAFETY: prctl(PR_SET_PDEATHSIG) and getppid only affect/read the calling process.
        unsafe {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The wrapper died before the request took effect: no one will ever reap or stop
            // this server, so it does not start.
            if libc::getppid() != self.parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
        mark_cloexec_from_3(self.fd_limit);
        // SAFETY: `mask` is a valid sigset_t copied from the host thread's mask.
        let r =
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.mask, std::ptr::null_mut()) };
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        Ok(())
    }
}

/// Spawns `argv` with piped stdin/stdout and the given stderr. The child starts with the signal
/// mask `mask` (the host thread's own, before the session blocked anything).
pub(crate) fn spawn(
    argv: &[String],
    stderr: Stdio,
    mask: &nix::sys::signal::SigSet,
) -> Result<Spawned> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| Error::config("command", "no server command given"))?;
    let prep = ExecPrep::new(mask);
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr);
    // SAFETY: the hook makes only async-signal-safe syscalls and allocates nothing.
    unsafe {
        cmd.pre_exec(move || prep.apply());
    }
    let mut child = cmd.spawn().map_err(|e| spawn_error(program, &e))?;
    let pid = child.id();
    match (child.stdin.take(), child.stdout.take()) {
        (Some(stdin), Some(stdout)) => Ok(Spawned {
            child,
            stdin,
            stdout,
            pid,
        }),
        _ => {
            // Cannot happen with Stdio::piped(); clean up rather than leave a process behind.
            let _ = cleanup(&mut child);
            Err(Error::new(
                ErrorKind::Internal,
                "child pipes were not created",
            ))
        }
    }
}

fn spawn_error(program: &str, e: &io::Error) -> Error {
    let kind = match e.kind() {
        io::ErrorKind::NotFound => ErrorKind::CommandNotFound,
        io::ErrorKind::PermissionDenied => ErrorKind::CommandNotExecutable,
        _ if e.raw_os_error() == Some(libc::ENOEXEC) => ErrorKind::CommandNotExecutable,
        _ => ErrorKind::Io,
    };
    let what = match kind {
        ErrorKind::CommandNotFound => "command not found",
        ErrorKind::CommandNotExecutable => "command not executable",
        _ => "cannot start command",
    };
    Error::new(kind, format!("{what}: {program}: {e}"))
}

/// Maps an OS exit status to the observed fields of SPEC §3.2.
pub(crate) fn observe(status: ExitStatus) -> ChildStatus {
    if let Some(code) = status.code() {
        ChildStatus {
            termination: Termination::Exited,
            exit_code: Some(code),
            signal: None,
            core_dumped: None,
        }
    } else if let Some(sig) = status.signal() {
        ChildStatus {
            termination: Termination::Signaled,
            exit_code: None,
            signal: Some(sig),
            core_dumped: Some(status.core_dumped()),
        }
    } else {
        ChildStatus::UNKNOWN
    }
}

/// What cleanup observed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cleanup {
    pub status: ChildStatus,
    pub kill_requested: bool,
    /// When the kill attempt was made (the start of the 2 s window), if it was.
    pub window_start: Instant,
}

/// What polling the child's status found.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Polled {
    /// The child's status.
    Status(ExitStatus),
    /// No status yet: the child is still running.
    Running,
    /// No status can ever be collected: someone else reaped the child (`ECHILD`, e.g. a host
    /// that ignores `SIGCHLD`). Its PID may already belong to another process.
    Unobservable,
}

/// Polls `try_wait` until a status arrives or `bound` passes, sleeping `first` after the first
/// miss and doubling up to `every`: a child that is already exiting is seen within microseconds,
/// and a long wait still costs few wake-ups.
pub(crate) fn poll_status(
    child: &mut Child,
    bound: Duration,
    first: Duration,
    every: Duration,
) -> Polled {
    let deadline = Instant::now() + bound;
    let mut interval = first;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Polled::Status(s),
            Ok(None) => {}
            // ECHILD and the like: no status can ever be observed.
            Err(_) => return Polled::Unobservable,
        }
        let now = Instant::now();
        if now >= deadline {
            return Polled::Running;
        }
        thread::sleep(interval.min(deadline - now));
        interval = (interval * 2).min(every);
    }
}

/// The bounded cleanup of SPEC §3.1.
pub(crate) fn cleanup(child: &mut Child) -> Cleanup {
    match poll_status(
        child,
        EXIT_GRACE,
        Duration::from_micros(20),
        Duration::from_millis(2),
    ) {
        Polled::Status(s) => {
            return Cleanup {
                status: observe(s),
                kill_requested: false,
                window_start: Instant::now(),
            };
        }
        // SPEC §3.1: ECHILD → unknown, and never a kill: the PID may belong to another process.
        Polled::Unobservable => {
            return Cleanup {
                status: ChildStatus::UNKNOWN,
                kill_requested: false,
                window_start: Instant::now(),
            };
        }
        Polled::Running => {}
    }
    // One kill attempt. The child may exit concurrently; nothing claims the kill caused the exit,
    // and an error from kill (already reaped, ESRCH) is not treated as anything but an attempt.
    let _ = child.kill();
    let window_start = Instant::now();
    let status = match poll_status(
        child,
        KILL_POLL_BOUND,
        KILL_POLL_INTERVAL,
        KILL_POLL_INTERVAL,
    ) {
        Polled::Status(s) => observe(s),
        Polled::Running | Polled::Unobservable => ChildStatus::UNKNOWN,
    };
    Cleanup {
        status,
        kill_requested: true,
        window_start,
    }
}

/// Last-resort cleanup if a session is abandoned by an early return: the same bounded kill, never
/// an unbounded `wait()`.
pub(crate) struct ChildGuard(pub Option<Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = cleanup(child);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Spawned {
        spawn(
            &["/bin/sh".into(), "-c".into(), script.into()],
            Stdio::null(),
            &nix::sys::signal::SigSet::empty(),
        )
        .unwrap()
    }

    #[test]
    fn observes_exit_codes_and_signals() {
        let mut s = sh("exit 7");
        drop(s.stdin);
        let c = cleanup(&mut s.child);
        assert!(!c.kill_requested);
        assert_eq!(c.status.termination, Termination::Exited);
        assert_eq!(c.status.exit_code, Some(7));

        let mut s = sh("kill -SEGV $$");
        let c = cleanup(&mut s.child);
        assert_eq!(c.status.termination, Termination::Signaled);
        assert_eq!(c.status.signal, Some(libc::SIGSEGV));
        assert!(c.status.core_dumped.is_some());
        assert_eq!(c.status.exit_code, None);
    }

    #[test]
    fn kill_path_is_bounded() {
        let mut s = sh("trap '' TERM; sleep 30");
        let started = Instant::now();
        let c = cleanup(&mut s.child);
        assert!(c.kill_requested);
        assert_eq!(c.status.termination, Termination::Signaled);
        assert_eq!(c.status.signal, Some(libc::SIGKILL));
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn missing_and_non_executable_commands() {
        let none = nix::sys::signal::SigSet::empty();
        let e = spawn(&["/nonexistent/assay-x".into()], Stdio::null(), &none)
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::CommandNotFound);
        assert_eq!(e.exit_status(), 127);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("noexec");
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        let e = spawn(&[p.display().to_string()], Stdio::null(), &none)
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::CommandNotExecutable);
        assert_eq!(e.exit_status(), 126);
    }
}
