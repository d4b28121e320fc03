//! Spawning the server with `clone(CLONE_VM | CLONE_VFORK)`: the new process borrows the
//! parent's memory until it execs, so no page table is copied and no page is faulted in — the
//! cost of `fork` in a large process. Everything is allocated before the clone; the child runs
//! [`in_child::child_main`](super::in_child) and reports a failure through shared memory.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

use super::in_child::{ChildArgs, FALLBACK_FD_CAP, child_main};
use super::process::ServerProcess;
use super::program::ExecPlan;
use crate::error::{Error, ErrorKind, Result};

/// A spawned child with the parent's ends of its pipes.
pub(crate) struct Spawned {
    pub child: ServerProcess,
    /// Writes to the child's stdin.
    pub stdin: File,
    /// Reads the child's stdout.
    pub stdout: File,
    pub pid: u32,
}

/// Spawns `argv` with piped stdin/stdout; its stderr is `stderr`, or the wrapper's own
/// descriptor 2 when `None`. The child starts with the signal mask `mask` (the host thread's
/// own, before the session blocked anything).
pub(crate) fn spawn(
    argv: &[String],
    stderr: Option<File>,
    mask: &nix::sys::signal::SigSet,
) -> Result<Spawned> {
    spawn_with(argv, stderr, mask, memory_mode())
}

/// Whether the child borrows the parent's memory (`CLONE_VM`) or gets a copy of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Memory {
    Shared,
    /// glibc before 2.25 caches the thread's PID and TID, and its `clone` overwrote the cache
    /// of the calling thread when the child shares its memory. There the child gets a copy of
    /// the parent's memory (still suspending the parent until exec), as `fork` would.
    Copied,
}

/// The mode this process can use, found once.
fn memory_mode() -> Memory {
    static MODE: OnceLock<Memory> = OnceLock::new();
    *MODE.get_or_init(|| {
        if glibc_caches_pid() {
            Memory::Copied
        } else {
            Memory::Shared
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

pub(super) fn spawn_with(
    argv: &[String],
    stderr: Option<File>,
    mask: &nix::sys::signal::SigSet,
    memory: Memory,
) -> Result<Spawned> {
    let program = argv
        .first()
        .ok_or_else(|| Error::config("command", "no server command given"))?;
    start(argv, stderr, mask, memory).map_err(|e| spawn_error(program, &e))
}

fn start(
    argv: &[String],
    stderr: Option<File>,
    mask: &nix::sys::signal::SigSet,
    memory: Memory,
) -> io::Result<Spawned> {
    let plan = ExecPlan::new(argv)?;
    let (stdin_child, stdin_parent) = pipe()?;
    let (stdout_parent, stdout_child) = pipe()?;
    // An explicit descriptor among 0..=2 could be overwritten by the child's own dup2 onto
    // 0 or 1 before it is installed as 2 (a host that closed its standard descriptors): move it
    // up first, as the standard library does.
    let stderr = stderr.map(|f| above_stdio(OwnedFd::from(f))).transpose()?;
    let stack = ChildStack::new()?;
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let args = ChildArgs {
        stdio: [
            stdin_child.as_raw_fd(),
            stdout_child.as_raw_fd(),
            stderr.as_ref().map_or(-1, AsRawFd::as_raw_fd),
        ],
        parent,
        fd_limit: fd_limit(),
        mask: *mask.as_ref(),
        candidates: plan.candidates.as_ptr(),
        candidate_count: plan.candidates.len(),
        argv: plan.argv.as_ptr(),
        envp: plan.envp.as_ptr(),
        error: stack.error(),
    };
    let pid = clone_vfork(&args, &stack, memory)?;
    let child = ServerProcess::adopt(pid);
    // SAFETY: the child has exec'd or exited (CLONE_VFORK), so nothing writes the cell now.
    let failed = unsafe { (*stack.error()).load(Ordering::SeqCst) };
    if failed != 0 {
        child.reap_exited();
        return Err(io::Error::from_raw_os_error(failed));
    }
    // The child's ends (and the stderr sink) are closed here; the parent keeps its own.
    drop((stdin_child, stdout_child, stderr));
    Ok(Spawned {
        pid: child.id(),
        child,
        stdin: File::from(stdin_parent),
        stdout: File::from(stdout_parent),
    })
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `fd` itself if it is 3 or more, else a close-on-exec duplicate numbered 3 or more.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor (owned below) or fails.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` was just created and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// The close-on-exec fallback's bound: `RLIMIT_NOFILE`, capped.
fn fd_limit() -> libc::c_int {
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
    libc::c_int::try_from(cap).unwrap_or(libc::c_int::MAX)
}

/// Bytes of stack the child gets (it needs a few hundred).
const STACK_BYTES: usize = 64 * 1024;

/// The child's stack: one shared anonymous mapping, a guard page at the bottom and the error
/// cell at the top. Shared, so the cell is the parent's memory even in [`Memory::Copied`] mode.
struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

impl ChildStack {
    fn new() -> io::Result<Self> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|&p| p > 0)
            .unwrap_or(4096);
        let len = STACK_BYTES.next_multiple_of(page) + page;
        // SAFETY: a new anonymous mapping; no existing memory is affected.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Self { base, len };
        // SAFETY: the lowest page of our own mapping becomes inaccessible: an overflow faults.
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the cell lies inside the mapping, 64-byte aligned, zero-filled (a valid 0).
        unsafe { stack.error().cast_mut().write(AtomicI32::new(0)) };
        Ok(stack)
    }

    /// The error cell: the last 64 bytes of the mapping.
    fn error(&self) -> *const AtomicI32 {
        // SAFETY: `len` ≥ 64, so the pointer stays inside the mapping.
        unsafe {
            self.base
                .cast::<u8>()
                .add(self.len - 64)
                .cast::<AtomicI32>()
        }
    }

    /// The initial stack pointer: just below the error cell, 16-byte aligned.
    fn top(&self) -> *mut libc::c_void {
        // SAFETY: inside the mapping (see `error`).
        unsafe { self.base.cast::<u8>().add(self.len - 64).cast() }
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `new` created; no pointer into it outlives `self`.
        unsafe {
            libc::munmap(self.base, self.len);
        }
    }
}

/// Clones the child with every signal blocked in the calling thread, so that no handler can run
/// on the child's borrowed memory before it has reset the handlers (glibc's `posix_spawn` does
/// the same); the thread's mask is restored after the child exec'd or exited.
fn clone_vfork(args: &ChildArgs, stack: &ChildStack, memory: Memory) -> io::Result<libc::pid_t> {
    let mut flags = libc::CLONE_VFORK | libc::SIGCHLD;
    if memory == Memory::Shared {
        flags |= libc::CLONE_VM;
    }
    // SAFETY: sigfillset and pthread_sigmask write only the sets they are given and this
    // thread's mask. clone runs `child_main` on the separate stack, passing `args`, which
    // outlives the child's use of it: with CLONE_VFORK this thread resumes only after the
    // child exec'd or exited. The child allocates nothing and takes no lock (in_child.rs).
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(
            child_main,
            stack.top(),
            flags,
            std::ptr::from_ref(args).cast_mut().cast(),
        );
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 { Err(clone_error) } else { Ok(pid) }
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
