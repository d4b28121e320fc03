//! The child process: spawn with piped stdin/stdout, observation of its status (SPEC §3.2) and the
//! bounded cleanup (SPEC §3.1, preserving upstream #3419).
//!
//! Cleanup never blocks without bound: `try_wait`, then at most one kill attempt (SIGKILL), then
//! at most [`KILL_POLL_BOUND`] of polling. The bound applies to cleanup only, never to a live
//! tool call.

use std::io;
use std::os::unix::process::ExitStatusExt;
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

/// Spawns `argv` with piped stdin/stdout and the given stderr.
pub(crate) fn spawn(argv: &[String], stderr: Stdio) -> Result<Spawned> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| Error::config("command", "no server command given"))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| spawn_error(program, &e))?;
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

/// Polls `try_wait` until a status arrives or `bound` passes, sleeping `first` after the first
/// miss and doubling up to `every`: a child that is already exiting is seen within microseconds,
/// and a long wait still costs few wake-ups.
pub(crate) fn poll_status(
    child: &mut Child,
    bound: Duration,
    first: Duration,
    every: Duration,
) -> Option<ExitStatus> {
    let deadline = Instant::now() + bound;
    let mut interval = first;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) => {}
            // ECHILD and the like: no status can ever be observed.
            Err(_) => return None,
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        thread::sleep(interval.min(deadline - now));
        interval = (interval * 2).min(every);
    }
}

/// The bounded cleanup of SPEC §3.1.
pub(crate) fn cleanup(child: &mut Child) -> Cleanup {
    if let Some(s) = poll_status(
        child,
        EXIT_GRACE,
        Duration::from_micros(20),
        Duration::from_millis(2),
    ) {
        return Cleanup {
            status: observe(s),
            kill_requested: false,
            window_start: Instant::now(),
        };
    }
    // One kill attempt. The child may exit concurrently; nothing claims the kill caused the exit,
    // and an error from kill (already reaped, ESRCH) is not treated as anything but an attempt.
    let _ = child.kill();
    let window_start = Instant::now();
    let status = poll_status(
        child,
        KILL_POLL_BOUND,
        KILL_POLL_INTERVAL,
        KILL_POLL_INTERVAL,
    )
    .map(observe)
    .unwrap_or(ChildStatus::UNKNOWN);
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
        let e = spawn(&["/nonexistent/assay-x".into()], Stdio::null())
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::CommandNotFound);
        assert_eq!(e.exit_status(), 127);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("noexec");
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        let e = spawn(&[p.display().to_string()], Stdio::null())
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::CommandNotExecutable);
        assert_eq!(e.exit_status(), 126);
    }
}
