//! The two ways the server process is created (SPEC §3.1a), and the process handle each yields.
//!
//! - [`Method::Vfork`], preferred: `clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD)`. The child runs
//!   on a stack of its own, borrowing the parent's memory until it execs, so no page table is
//!   copied — the cost of `fork` in a host with a large heap (bench/README.md, "Spawn"). The
//!   calling thread is suspended until the exec.
//! - [`Method::Fork`], the fallback when a sandbox or an emulator refuses that clone (`EPERM`,
//!   `ENOSYS`, `EINVAL`): a plain fork (`clone(SIGCHLD | CLONE_PIDFD)`), the child running the
//!   same code on its own copy of the memory. When `CLONE_PIDFD` itself is refused the child is
//!   forked without it and waits on a "go" pipe until the parent has opened its pidfd
//!   (`pidfd_open`), so nothing can reap it before the handle exists.
//!
//! Either way the process handle is a pidfd taken atomically with the spawn, or before the child
//! could exit; only a kernel without pidfds (before 5.3) leaves the PID alone.
//!
//! Both spawn with every signal blocked in the calling thread, so no handler runs in the child
//! before it has reset them (glibc's `posix_spawn` does the same); the thread's mask is restored
//! afterwards.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use super::in_child::{ChildArgs, child_entry, child_main};

/// How the child is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    /// `clone(CLONE_VM | CLONE_VFORK)` on a separate stack.
    Vfork,
    /// A fork (a copy of the parent's memory).
    Fork,
}

/// A child that was created: its PID and, where the kernel has them, its pidfd.
pub(super) struct Created {
    pub pid: libc::pid_t,
    pub pidfd: Option<OwnedFd>,
}

/// Whether an error from the preferred spawn means "refused here, try a plain fork" (SPEC
/// §3.1a): a seccomp filter or an emulator that does not support the flags.
pub(super) fn refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EPERM | libc::ENOSYS | libc::EINVAL)
    )
}

/// Blocks every signal in the calling thread until dropped.
pub(super) struct AllBlocked {
    old: libc::sigset_t,
}

impl AllBlocked {
    pub(super) fn new() -> Self {
        // SAFETY: sigfillset and pthread_sigmask write only the sets they are given and this
        // thread's mask; a zeroed sigset_t is a valid (empty) set to start from.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            Self { old }
        }
    }
}

impl Drop for AllBlocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by `new`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// Takes ownership of a pidfd the kernel wrote (`-1`: none).
pub(super) fn owned(fd: libc::c_int) -> Option<OwnedFd> {
    // SAFETY: a non-negative `fd` was just created by the kernel for this spawn and nothing else
    // owns it.
    let fd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })?;
    // Numbered 3 or above (SPEC §3.1b). Should that fail (EMFILE), the handle is the PID, which
    // nothing can reap before the session does.
    crate::sys::fd::above_stdio(fd).ok()
}

/// Bytes of stack the shared-memory child gets (it needs a few KiB: the `getdents64` buffer of
/// the close-on-exec fallback is 2 KiB).
const STACK_BYTES: usize = 64 * 1024;

/// The shared-memory child's stack: one private anonymous mapping with a guard page at the
/// bottom.
pub(super) struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

impl ChildStack {
    pub(super) fn new() -> io::Result<Self> {
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
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
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
        Ok(stack)
    }

    /// The initial stack pointer: the top of the mapping, 16-byte aligned (page aligned).
    pub(super) fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of the mapping, which is where a stack starts.
        unsafe { self.base.cast::<u8>().add(self.len).cast() }
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

/// `clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD)`: returns once the child exec'd or
/// exited. A kernel before 5.2 ignores `CLONE_PIDFD` (no pidfd is written): the handle is then
/// the PID, which cannot be reaped by anyone before this returns, and `pidfd_open` (5.3) is not
/// there either.
pub(super) fn clone_vfork(args: &ChildArgs) -> io::Result<Created> {
    let stack = ChildStack::new()?;
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD;
    let mut pidfd: libc::c_int = -1;
    let blocked = AllBlocked::new();
    // SAFETY: clone runs `child_entry` on the separate stack, passing `args`, which outlives the
    // child's use of it: with CLONE_VFORK this thread resumes only after the child exec'd or
    // exited. The child allocates nothing and takes no lock (in_child.rs). With CLONE_PIDFD the
    // kernel writes the pidfd into `pidfd` (the parent_tid argument).
    let pid = unsafe {
        libc::clone(
            child_entry,
            stack.top(),
            flags,
            std::ptr::from_ref(args).cast_mut().cast(),
            &mut pidfd as *mut libc::c_int,
        )
    };
    let error = io::Error::last_os_error();
    drop(blocked);
    if pid < 0 {
        return Err(error);
    }
    Ok(Created {
        pid,
        pidfd: owned(pidfd),
    })
}

/// A plain fork running the same child code: `clone(SIGCHLD | CLONE_PIDFD)`; when that flag is
/// refused, a fork without it whose child waits on a go pipe until `pidfd_open` has run.
pub(super) fn fork(args: &ChildArgs) -> io::Result<Created> {
    match raw_fork(args, libc::CLONE_PIDFD) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => fork_then_open(args),
        other => other,
    }
}

/// The fork fallback without `CLONE_PIDFD`: the child blocks reading the go pipe before it does
/// anything; the parent opens the pidfd (or, before Linux 5.3, keeps the PID), then closes its
/// end of the pipe.
fn fork_then_open(args: &ChildArgs) -> io::Result<Created> {
    // Tracked: a fork of the host keeping the write end would hold the server forever.
    let (go_read, go_write) = cloexec_pipe()?;
    let (go_read, go_write) = (
        crate::sys::fork_close::Tracked::new(go_read),
        crate::sys::fork_close::Tracked::new(go_write),
    );
    let with_go = ChildArgs {
        go: [
            std::os::fd::AsRawFd::as_raw_fd(&go_read),
            std::os::fd::AsRawFd::as_raw_fd(&go_write),
        ],
        ..*args
    };
    let created = raw_fork(&with_go, 0)?;
    // SAFETY: pidfd_open only reads its arguments; the child cannot have exited (it waits for
    // the go pipe), so `pid` is still its PID. The result is a new close-on-exec descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, created.pid, 0u32) };
    let pidfd = RawFd::try_from(fd).ok().and_then(owned);
    drop(go_write);
    drop(go_read);
    Ok(Created {
        pid: created.pid,
        pidfd,
    })
}

/// `clone(SIGCHLD | extra)` with no new stack: fork semantics. The child runs [`child_main`]
/// and never returns here.
fn raw_fork(args: &ChildArgs, extra: libc::c_int) -> io::Result<Created> {
    let flags = libc::c_ulong::try_from(libc::SIGCHLD | extra).unwrap_or(0);
    let mut pidfd: libc::c_int = -1;
    let blocked = AllBlocked::new();
    // SAFETY: the clone system call without CLONE_VM or a new stack behaves as fork: the child
    // continues here on its own copy of this thread's stack, and calls only `child_main`, which
    // makes async-signal-safe system calls and never returns (the standard library's spawn does
    // the same with clone3). The kernel writes the pidfd into `pidfd` with CLONE_PIDFD. The
    // child-TID and TLS arguments are 0, so their order (which differs between architectures)
    // does not matter.
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
        child_main(args);
    }
    let error = io::Error::last_os_error();
    drop(blocked);
    if pid < 0 {
        return Err(error);
    }
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    Ok(Created {
        pid,
        pidfd: owned(pidfd),
    })
}

/// A close-on-exec pipe, both ends numbered 3 or above: (read end, write end).
pub(super) fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    crate::sys::fd::pipe()
}
