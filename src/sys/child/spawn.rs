//! Spawning the server (SPEC §3 item 3, §3.1a): everything is prepared before the spawn
//! (program.rs), the child is created by the preferred method or the fork fallback (clone.rs),
//! runs [`in_child`](super::in_child) and reports an exec failure through a close-on-exec error
//! pipe: end of file there means the exec succeeded, 4 bytes are the `errno` of the failure.
//! Reading the pipe works wherever the spawning thread is not really suspended until the exec
//! (valgrind and qemu-user turn a `CLONE_VFORK` into a plain fork; the fork fallback never
//! suspends it), so a command that cannot run is always a spawn failure (126/127), never a
//! server that ran.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::OnceLock;

use super::clone::{self, Created, Method, cloexec_pipe};
use super::in_child::ChildArgs;
use super::process::ServerProcess;
use super::program::ExecPlan;
use crate::error::{Error, ErrorKind, Result};
use crate::sys::fork_close::Tracked;

/// A spawned child with the parent's ends of its pipes.
pub(crate) struct Spawned {
    pub child: ServerProcess,
    /// Writes to the child's stdin.
    pub stdin: File,
    /// Reads the child's stdout.
    pub stdout: File,
    pub pid: u32,
    /// How the child was created (the preferred method, or the fork fallback when it was
    /// refused).
    pub method: Method,
}

/// Spawns `argv` with piped stdin/stdout; its stderr is `stderr`, or the wrapper's own
/// descriptor 2 when `None`. The child starts with the signal mask `mask` (the host thread's
/// own, before the session blocked anything).
pub(crate) fn spawn<A: AsRef<std::ffi::OsStr>>(
    argv: &[A],
    stderr: Option<File>,
    mask: &nix::sys::signal::SigSet,
) -> Result<Spawned> {
    spawn_with(argv, stderr, mask, preferred())
}

/// The method tried first in this process, found once: the shared-memory clone, except under
/// glibc before 2.25, which caches the thread's PID and TID and whose `clone` overwrote the
/// cache of the calling thread when the child shares its memory; there a fork is the first
/// choice.
fn preferred() -> Method {
    static METHOD: OnceLock<Method> = OnceLock::new();
    *METHOD.get_or_init(|| {
        if glibc_caches_pid() {
            Method::Fork
        } else {
            Method::Vfork
        }
    })
}

#[cfg(target_env = "gnu")]
fn glibc_caches_pid() -> bool {
    // SAFETY: gnu_get_libc_version returns a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    let mut parts = version.to_bytes().split(|&b| b == b'.').map(|p| {
        std::str::from_utf8(p)
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
    });
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) < (2, 25),
        // A version this cannot read is not trusted with shared memory.
        _ => true,
    }
}

#[cfg(not(target_env = "gnu"))]
fn glibc_caches_pid() -> bool {
    false
}

/// Spawns with `first` as the preferred method (the fork fallback follows a refusal).
pub(super) fn spawn_with<A: AsRef<std::ffi::OsStr>>(
    argv: &[A],
    stderr: Option<File>,
    mask: &nix::sys::signal::SigSet,
    first: Method,
) -> Result<Spawned> {
    let program = argv.first().ok_or_else(|| {
        Error::config(
            crate::error::ConfigOption::Command,
            "no server command given",
        )
    })?;
    let program = program.as_ref().to_string_lossy();
    start(argv, stderr, mask, first).map_err(|e| spawn_error(&program, &e))
}

fn start<A: AsRef<std::ffi::OsStr>>(
    argv: &[A],
    stderr: Option<File>,
    mask: &nix::sys::signal::SigSet,
    first: Method,
) -> io::Result<Spawned> {
    let plan = ExecPlan::new(argv)?;
    // Every pipe end is tracked until it is closed or handed on: a fork of the host during the
    // spawn does not keep it (SPEC §3.1b) — a kept copy of the error pipe's write end would hold
    // this spawn forever, one of the server's stdout would hide its end of output.
    let (stdin_child, stdin_parent) = tracked(cloexec_pipe()?);
    let (stdout_parent, stdout_child) = tracked(cloexec_pipe()?);
    // An explicit descriptor among 0..=2 could be overwritten by the child's own dup2 onto
    // 0 or 1 before it is installed as 2 (a host that closed its standard descriptors): move it
    // up first, as the standard library does.
    let stderr = stderr
        .map(|f| crate::sys::fd::above_stdio(OwnedFd::from(f)))
        .transpose()?
        .map(Tracked::new);
    let (report_read, report_write) = tracked(cloexec_pipe()?);
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let args = ChildArgs {
        stdio: [
            stdin_child.as_raw_fd(),
            stdout_child.as_raw_fd(),
            stderr.as_ref().map_or(-1, AsRawFd::as_raw_fd),
        ],
        report: report_write.as_raw_fd(),
        go: [-1, -1],
        parent,
        sigrtmax: libc::SIGRTMAX(),
        mask: *mask.as_ref(),
        candidates: plan.candidates.as_ptr(),
        candidate_count: plan.candidates.len(),
        argv: plan.argv.as_ptr(),
        envp: plan.envp.as_ptr(),
    };
    // A refused or failed process creation is no fault of the command: never 126/127.
    let (created, method) = create(&args, first)
        .map_err(|e| io::Error::other(format!("cannot create a process: {e}")))?;
    // The child's ends (the error pipe's write end included) are closed here: from now on end
    // of file on the error pipe means the child exec'd.
    drop((stdin_child, stdout_child, stderr, report_write));
    let mut child = ServerProcess::adopt(created.pid, created.pidfd);
    if let Some(errno) = exec_error(report_read)? {
        child.reap_exited();
        return Err(io::Error::from_raw_os_error(errno));
    }
    // SPEC §3 item 9: the server's process group gets its watchdog before anything else can
    // happen to the session. Without one the server does not run: it could outlive the wrapper.
    if let Err(e) = child.watch_group() {
        let _ = child.kill();
        child.reap_exited();
        return Err(io::Error::other(format!(
            "cannot start the watchdog of the server's process group: {e}"
        )));
    }
    drop(plan);
    Ok(Spawned {
        pid: child.id(),
        child,
        stdin: File::from(stdin_parent.into_inner()),
        stdout: File::from(stdout_parent.into_inner()),
        method,
    })
}

/// Creates the child with `first`, and with a plain fork when `first` is refused (SPEC §3.1a).
fn create(args: &ChildArgs, first: Method) -> io::Result<(Created, Method)> {
    if first == Method::Vfork {
        match clone::clone_vfork(args) {
            Ok(c) => return Ok((c, Method::Vfork)),
            Err(e) if clone::refused(&e) => {}
            Err(e) => return Err(e),
        }
    }
    clone::fork(args).map(|c| (c, Method::Fork))
}

/// Reads the error pipe to its end: `None` when the child exec'd (end of file with nothing
/// written), else the `errno` it reported. A child that died before it could report (killed by
/// a signal) also gives end of file; its status then tells what happened.
fn exec_error(pipe: Tracked<OwnedFd>) -> io::Result<Option<i32>> {
    let mut buf = [0u8; 4];
    let mut got = 0;
    while got < buf.len() {
        match crate::sys::fd::read(pipe.as_fd(), &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(match got {
        0 => None,
        4 => Some(i32::from_ne_bytes(buf))
            .filter(|&e| e != 0)
            .or(Some(libc::EIO)),
        // A partial report cannot come from the child (a 4-byte pipe write is atomic).
        _ => Some(libc::EIO),
    })
}

/// Both ends of a pipe, tracked.
fn tracked((a, b): (OwnedFd, OwnedFd)) -> (Tracked<OwnedFd>, Tracked<OwnedFd>) {
    (Tracked::new(a), Tracked::new(b))
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
