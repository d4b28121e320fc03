//! The code that runs in the new process between `clone` and `exec`.
//!
//! The child shares the parent's memory (`CLONE_VM`) while the parent thread is suspended
//! (`CLONE_VFORK`), on a stack of its own. It runs with every signal blocked (the parent blocked
//! them before the clone) and makes async-signal-safe system calls only: no allocation, no lock,
//! nothing of the standard library's runtime. It never returns: it execs, or it stores `errno`
//! where the parent reads it and calls `_exit(127)`.

use std::sync::atomic::{AtomicI32, Ordering};

use libc::{c_char, c_int, c_void};

/// What the child needs, prepared by the parent. Every pointer stays valid until the parent
/// resumes, which is after the child exec'd or exited.
pub(super) struct ChildArgs {
    /// The descriptors to install as 0, 1 and 2; `-1` leaves that number as it is.
    pub stdio: [c_int; 3],
    /// The spawning process: if the child's parent is no longer it, the child does not start.
    pub parent: libc::pid_t,
    /// The highest descriptor number (exclusive) the close-on-exec fallback visits.
    pub fd_limit: c_int,
    /// The signal mask the program starts with (the host thread's own).
    pub mask: libc::sigset_t,
    /// The paths to try, a NULL-terminated array with `candidate_count` entries.
    pub candidates: *const *const c_char,
    pub candidate_count: usize,
    pub argv: *const *const c_char,
    pub envp: *const *const c_char,
    /// Where a failure's `errno` is stored (0: none).
    pub error: *const AtomicI32,
}

fn errno() -> c_int {
    // SAFETY: __errno_location returns the calling thread's errno slot, always valid.
    let e = unsafe { *libc::__errno_location() };
    if e == 0 { libc::EIO } else { e }
}

/// The child's entry point (given to `clone`).
pub(super) extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `ChildArgs` the parent passed to clone; the parent keeps it alive
    // and unchanged until the child exec'd or exited.
    let args = unsafe { &*arg.cast::<ChildArgs>() };
    let e = prepare_and_exec(args);
    // SAFETY: `error` points at an AtomicI32 the parent keeps alive and reads after resuming;
    // _exit ends this process without running any of the parent's exit handlers.
    unsafe {
        (*args.error).store(e, Ordering::SeqCst);
        libc::_exit(127)
    }
}

/// Prepares the process and execs; returns the `errno` of the step that failed.
fn prepare_and_exec(args: &ChildArgs) -> c_int {
    for (target, &source) in (0..).zip(args.stdio.iter()) {
        if source >= 0 && install(source, target).is_err() {
            return errno();
        }
    }
    reset_signal_handlers();
    // SAFETY: prctl(PR_SET_PDEATHSIG) and getppid only affect/read the calling process.
    unsafe {
        // SPEC §3 item 9: SIGKILL when the spawning thread dies.
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return errno();
        }
        // The wrapper died before the request took effect: no one will ever reap or stop this
        // server, so it does not start.
        if libc::getppid() != args.parent {
            return libc::ESRCH;
        }
    }
    mark_cloexec_from_3(args.fd_limit);
    // SAFETY: `mask` is a valid sigset_t copied from the host thread's mask.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &args.mask, std::ptr::null_mut()) };
    if r != 0 {
        return r;
    }
    exec_first(args)
}

/// Makes `source` descriptor number `target`, inheritable. When they are already the same
/// number `dup2` would do nothing and leave close-on-exec set, so the flag is cleared instead
/// (as the standard library does).
fn install(source: c_int, target: c_int) -> Result<(), ()> {
    // SAFETY: fcntl and dup2 only change this process's descriptor table.
    unsafe {
        if source == target {
            let flags = libc::fcntl(source, libc::F_GETFD);
            if flags < 0 || libc::fcntl(source, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(());
            }
            return Ok(());
        }
        loop {
            if libc::dup2(source, target) >= 0 {
                return Ok(());
            }
            if *libc::__errno_location() != libc::EINTR {
                return Err(());
            }
        }
    }
}

/// Every signal with a handler gets its default disposition back: a handler of the parent must
/// never run in the child (it shares the parent's memory), and the program could not use it
/// anyway. Ignored signals stay ignored, except `SIGPIPE`, which gets its default as the standard
/// library does (Rust and Python hosts ignore it; a server expects to die on a broken pipe).
/// glibc's internal signals (32 and 33) cannot be changed through `sigaction`; they are only
/// ever sent to the parent's own threads.
fn reset_signal_handlers() {
    for sig in 1..=libc::SIGRTMAX() {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: a zeroed sigaction is a valid value (SIG_DFL, empty mask, no flags); sigaction
        // reads and writes only the structs it is given and this process's disposition table
        // (the child's own: no CLONE_SIGHAND).
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if sig != libc::SIGPIPE {
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                    continue;
                }
                if old.sa_sigaction == libc::SIG_DFL || old.sa_sigaction == libc::SIG_IGN {
                    continue;
                }
            }
            let default: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, &default, std::ptr::null_mut());
        }
    }
}

/// The highest descriptor number the fallback of [`mark_cloexec_from_3`] visits.
pub(super) const FALLBACK_FD_CAP: libc::rlim_t = 1 << 20;

/// Marks every descriptor from 3 up close-on-exec (SPEC §3 item 3). Marking rather than
/// closing leaves the parent's ends of the pipes (already close-on-exec) as they are.
fn mark_cloexec_from_3(fd_limit: c_int) {
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

/// `execve` each candidate in turn, as glibc's `execvp` searches `PATH`: a missing file (or
/// directory) moves on to the next; `EACCES` moves on too but is what is reported if nothing
/// else runs; any other error (`ENOEXEC` included) ends the search. Returns the `errno`.
fn exec_first(args: &ChildArgs) -> c_int {
    let mut denied = false;
    let mut last = libc::ENOENT;
    for i in 0..args.candidate_count {
        // SAFETY: `candidates` holds `candidate_count` valid C strings; argv and envp are
        // NULL-terminated arrays of valid C strings, all alive until the parent resumes.
        unsafe {
            libc::execve(*args.candidates.add(i), args.argv, args.envp);
        }
        last = errno();
        match last {
            libc::EACCES => denied = true,
            libc::ENOENT | libc::ESTALE | libc::ENOTDIR | libc::ENODEV | libc::ETIMEDOUT => {}
            _ => return last,
        }
    }
    if denied { libc::EACCES } else { last }
}
