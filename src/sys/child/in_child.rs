//! The code that runs in the new process between the spawn and `exec` (SPEC §3.1a).
//!
//! The child either shares the parent's memory while the parent thread is suspended
//! (`clone(CLONE_VM | CLONE_VFORK)`, on a stack of its own) or has a copy of it (the fork
//! fallback). Either way it runs with every signal blocked (the parent blocked them before the
//! spawn) and may only make async-signal-safe calls: another thread of the parent may have held
//! the allocator's lock at the moment of the spawn, and in the shared-memory case anything the
//! child changes is the parent's. So this module:
//!
//! - allocates nothing: every buffer (argument vector, environment, candidate paths) is
//!   prepared by the parent, and the one buffer of its own (the `getdents64` listing of
//!   `/proc/self/fd`) is on its stack;
//! - cannot panic: no indexing, no arithmetic that can overflow, no `unwrap`/`expect`, enforced
//!   by the lints below and by `source_uses_no_allocating_or_panicking_construct` (a test that
//!   reads this file);
//! - calls only these libc functions, all async-signal-safe system-call wrappers: `read`,
//!   `write`, `open`, `close`, `dup2`, `fcntl`, `sigaction`, `sigprocmask`, `prctl`, `getppid`,
//!   `setpgid`, `syscall` (`close_range`, `getdents64`), `execve`, `_exit`, and
//!   `__errno_location`.
//!
//! It never returns: it execs, or it writes `errno` to the error pipe (close-on-exec, so end of
//! file there tells the parent the exec succeeded) and calls `_exit(127)`.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented,
    clippy::string_slice,
    clippy::missing_asserts_for_indexing,
    clippy::panic_in_result_fn,
    clippy::std_instead_of_core
)]

use core::ffi::{c_char, c_int, c_void};

/// What the child needs, prepared by the parent. Every pointer stays valid until the child
/// exec'd or exited: in the shared-memory spawn the parent is suspended until then, in the
/// fork fallback the child has its own copy.
pub(super) struct ChildArgs {
    /// The descriptors to install as 0, 1 and 2; `-1` leaves that number as it is.
    pub stdio: [c_int; 3],
    /// The write end of the error pipe: a failure's `errno` goes here (4 bytes, native order).
    pub report: c_int,
    /// When not `-1`: the read end of a pipe the child waits on (until end of file) before it
    /// does anything, so the parent can take the child's pidfd before it could exit and be
    /// reaped (the fork fallback without `CLONE_PIDFD`). `go[1]` is the write end, which the
    /// child closes first (the parent's copy is then the only one).
    pub go: [c_int; 2],
    /// The spawning process: if the child's parent is no longer it, the child does not start.
    pub parent: libc::pid_t,
    /// `SIGRTMAX` of this process (read by the parent: a libc function, not a system call).
    pub sigrtmax: c_int,
    /// The signal mask the program starts with (the host thread's own).
    pub mask: libc::sigset_t,
    /// The paths to try, a NULL-terminated array with `candidate_count` entries.
    pub candidates: *const *const c_char,
    pub candidate_count: usize,
    pub argv: *const *const c_char,
    pub envp: *const *const c_char,
}

fn errno() -> c_int {
    // SAFETY: __errno_location returns the calling thread's errno slot, always valid.
    let e = unsafe { *libc::__errno_location() };
    if e == 0 { libc::EIO } else { e }
}

fn set_errno(e: c_int) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = e };
}

/// The child's entry point for `clone` with a stack of its own.
pub(super) extern "C" fn child_entry(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `ChildArgs` the parent passed to clone; the parent keeps it alive
    // and unchanged until the child exec'd or exited.
    let args = unsafe { &*arg.cast::<ChildArgs>() };
    child_main(args)
}

/// Prepares the process and execs; on failure reports `errno` and exits with 127.
pub(super) fn child_main(args: &ChildArgs) -> ! {
    let e = prepare_and_exec(args);
    report(args.report, e);
    // SAFETY: _exit ends this process at once, running none of the parent's exit handlers.
    unsafe { libc::_exit(127) }
}

/// Writes `e` to the error pipe (a write of 4 bytes to a pipe is atomic); retried on `EINTR`.
fn report(fd: c_int, e: c_int) {
    let bytes = e.to_ne_bytes();
    loop {
        // SAFETY: writes 4 bytes from a live local buffer.
        let r = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if r >= 0 || errno() != libc::EINTR {
            return;
        }
    }
}

/// Blocks until the parent closes its end of the go pipe (or the read fails).
fn wait_for_go(fd: c_int) {
    let mut byte = 0u8;
    loop {
        // SAFETY: reads at most one byte into a live local.
        let r = unsafe { libc::read(fd, core::ptr::from_mut(&mut byte).cast(), 1) };
        if r >= 0 || errno() != libc::EINTR {
            break;
        }
    }
    // SAFETY: closes this process's copy of the read end.
    unsafe { libc::close(fd) };
}

/// Prepares the process and execs; returns the `errno` of the step that failed.
fn prepare_and_exec(args: &ChildArgs) -> c_int {
    let [go_read, go_write] = args.go;
    if go_read >= 0 {
        // SAFETY: closes this process's copy of the write end.
        unsafe { libc::close(go_write) };
        wait_for_go(go_read);
    }
    // SPEC §3 item 9: the server is a process tree, in a process group of its own whose leader
    // is this process; every signal the wrapper sends goes to the whole group. Done before
    // anything else, so the parent finds the group in place when the spawn returns.
    // SAFETY: setpgid(0, 0) only changes this process's process group.
    if unsafe { libc::setpgid(0, 0) } != 0 {
        return errno();
    }
    let mut target: c_int = 0;
    for &source in &args.stdio {
        if source >= 0 && install(source, target).is_err() {
            return errno();
        }
        target = target.saturating_add(1);
    }
    reset_signal_handlers(args.sigrtmax);
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
    if let Err(e) = mark_cloexec_from_3(args.report) {
        return e;
    }
    // SAFETY: `mask` is a valid sigset_t copied from the host thread's mask; the child has one
    // thread, so the process mask is the thread's.
    let r = unsafe { libc::sigprocmask(libc::SIG_SETMASK, &args.mask, core::ptr::null_mut()) };
    if r != 0 {
        return errno();
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
            if errno() != libc::EINTR {
                return Err(());
            }
        }
    }
}

/// Every signal with a handler gets its default disposition back: a handler of the parent must
/// never run in the child (in the shared-memory spawn it would run on the parent's memory), and
/// the program could not use it anyway. Ignored signals stay ignored (a host run under `nohup`
/// passes its ignored `SIGHUP` on, as a shell would), except `SIGPIPE` and `SIGXFSZ`, which get
/// their defaults as Python's `subprocess` does (SPEC §3.1b: Rust and Python hosts ignore them for
/// themselves; a server expects to die on a broken pipe or past its file-size limit). glibc's internal signals (32 and 33) cannot be changed through
/// `sigaction`; they are only ever sent to the parent's own threads.
fn reset_signal_handlers(sigrtmax: c_int) {
    for sig in 1..=sigrtmax {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: a zeroed sigaction is a valid value (SIG_DFL, empty mask, no flags); sigaction
        // reads and writes only the structs it is given and this process's disposition table
        // (the child's own: no CLONE_SIGHAND).
        unsafe {
            let mut old: libc::sigaction = core::mem::zeroed();
            if sig != libc::SIGPIPE && sig != libc::SIGXFSZ {
                if libc::sigaction(sig, core::ptr::null(), &mut old) != 0 {
                    continue;
                }
                if old.sa_sigaction == libc::SIG_DFL || old.sa_sigaction == libc::SIG_IGN {
                    continue;
                }
            }
            let default: libc::sigaction = core::mem::zeroed();
            libc::sigaction(sig, &default, core::ptr::null_mut());
        }
    }
}

/// Marks every descriptor from 3 up close-on-exec (SPEC §3 item 3, §3.1a), visiting only
/// descriptors that exist, never every number up to `RLIMIT_NOFILE`:
///
/// 1. `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)` (Linux 5.11): one call, marks without closing;
/// 2. otherwise `close_range` closing the two ranges around the error pipe (Linux 5.9): the
///    child's descriptor table is its own, so closing is as good as marking;
/// 3. otherwise the entries of `/proc/self/fd`, read with `getdents64` into a buffer on the
///    stack, each marked with `fcntl`;
/// 4. otherwise the spawn fails (`errno` of the last attempt): a server that could inherit an
///    unknown set of the host's descriptors is not started.
///
/// `keep` (the error pipe's write end, itself close-on-exec) stays open until the exec.
fn mark_cloexec_from_3(keep: c_int) -> Result<(), c_int> {
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
        return Ok(());
    }
    if close_around(keep) {
        return Ok(());
    }
    mark_listed_descriptors(keep)
}

/// `close_range` without flags on every descriptor from 3 up but `keep`.
fn close_around(keep: c_int) -> bool {
    let Ok(keep) = u32::try_from(keep) else {
        return false;
    };
    let ranges = [
        (3u32, keep.checked_sub(1)),
        (keep.saturating_add(1), Some(u32::MAX)),
    ];
    for (first, last) in ranges {
        let Some(last) = last else { continue };
        if first > last {
            continue;
        }
        // SAFETY: closes descriptors of this process's own table (the child's copy).
        if unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) } != 0 {
            return false;
        }
    }
    true
}

/// The directory of this process's open descriptors.
const PROC_SELF_FD: &core::ffi::CStr = c"/proc/self/fd";

/// Size of the `getdents64` buffer on the child's stack (its stack holds 64 KiB).
const DIRENT_BUFFER: usize = 2048;

/// Offsets in a `linux_dirent64` record: `d_ino` (8 bytes), `d_off` (8), `d_reclen` (2),
/// `d_type` (1), then the NUL-terminated name.
const RECLEN_AT: usize = 16;
const NAME_AT: usize = 19;

/// Marks close-on-exec every descriptor listed in `/proc/self/fd` from 3 up, except `keep`.
fn mark_listed_descriptors(keep: c_int) -> Result<(), c_int> {
    // SAFETY: opens a directory read-only; the path is a static NUL-terminated string.
    let dir = unsafe {
        libc::open(
            PROC_SELF_FD.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return Err(errno());
    }
    let mut buf = [0u8; DIRENT_BUFFER];
    let result = loop {
        // SAFETY: getdents64 writes at most `buf.len()` bytes of records into `buf`.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir,
                buf.as_mut_ptr().cast::<c_void>(),
                buf.len(),
            )
        };
        if n < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            break Err(e);
        }
        let Ok(n) = usize::try_from(n) else {
            break Err(libc::EIO);
        };
        if n == 0 {
            break Ok(());
        }
        let Some(listed) = buf.get(..n) else {
            break Err(libc::EIO);
        };
        mark_records(listed, dir, keep);
    };
    // SAFETY: closes the directory descriptor opened above.
    unsafe { libc::close(dir) };
    result
}

/// Marks the descriptors named by the `linux_dirent64` records in `listed`.
fn mark_records(listed: &[u8], dir: c_int, keep: c_int) {
    let mut at = 0usize;
    while let Some(record) = listed.get(at..) {
        let Some(&[lo, hi]) = record.get(RECLEN_AT..RECLEN_AT.saturating_add(2)) else {
            return;
        };
        let len = usize::from(u16::from_ne_bytes([lo, hi]));
        if len == 0 {
            return;
        }
        if let Some(fd) = record
            .get(NAME_AT..len.min(record.len()))
            .and_then(descriptor_number)
        {
            if fd >= 3 && fd != dir && fd != keep {
                set_cloexec(fd);
            }
        }
        at = at.saturating_add(len);
    }
}

/// The descriptor number a `/proc/self/fd` entry names (decimal digits up to the NUL); `None`
/// for `.`, `..` and anything else.
pub(super) fn descriptor_number(name: &[u8]) -> Option<c_int> {
    let mut n: c_int = 0;
    let mut digits = 0u32;
    for &b in name {
        if b == 0 {
            break;
        }
        if !b.is_ascii_digit() {
            return None;
        }
        n = n
            .checked_mul(10)?
            .checked_add(c_int::from(b.wrapping_sub(b'0')))?;
        digits = digits.saturating_add(1);
    }
    (digits > 0).then_some(n)
}

fn set_cloexec(fd: c_int) {
    // SAFETY: F_GETFD/F_SETFD only read and change the flags of this process's descriptor.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}

/// `execve` each candidate in turn, as glibc's `execvp` searches `PATH`: a missing file (or
/// directory) moves on to the next; `EACCES` moves on too but is what is reported if nothing
/// else runs; any other error (`ENOEXEC` included) ends the search. Returns the `errno`.
fn exec_first(args: &ChildArgs) -> c_int {
    let mut denied = false;
    let mut last = libc::ENOENT;
    let mut candidate = args.candidates;
    for _ in 0..args.candidate_count {
        // SAFETY: `candidates` holds `candidate_count` valid C strings followed by NULL, so
        // `candidate` stays inside the array; argv and envp are NULL-terminated arrays of valid
        // C strings, all alive until the exec.
        unsafe {
            set_errno(0);
            libc::execve(*candidate, args.argv, args.envp);
            candidate = candidate.add(1);
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

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::std_instead_of_core
)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_numbers_are_decimal_names_only() {
        assert_eq!(descriptor_number(b"17\0"), Some(17));
        assert_eq!(descriptor_number(b"0\0\0\0"), Some(0));
        assert_eq!(descriptor_number(b".\0"), None);
        assert_eq!(descriptor_number(b"..\0"), None);
        assert_eq!(descriptor_number(b"\0"), None);
        assert_eq!(
            descriptor_number(b"99999999999\0"),
            None,
            "overflow is no number"
        );
    }

    /// The module's promise that it neither allocates nor panics, beyond what the lints see:
    /// no allocating type, macro or conversion appears in its code (tests excluded).
    #[test]
    fn source_uses_no_allocating_or_panicking_construct() {
        let source = include_str!("in_child.rs");
        let code = source
            .split("#[cfg(test)]")
            .next()
            .unwrap()
            .lines()
            .filter(|l| {
                let t = l.trim_start();
                !(t.starts_with("//") || t.starts_with("#!") || t.starts_with("clippy::"))
            })
            .collect::<Vec<_>>()
            .join("\n");
        for forbidden in [
            "Vec",
            "String",
            "Box",
            "Rc<",
            "Arc",
            "vec!",
            "format!",
            "print",
            "to_string",
            "to_owned",
            "to_vec",
            "collect",
            "CString",
            "std::",
            "alloc",
            "panic",
            "unwrap",
            "expect(",
            "assert",
            "unreachable",
            "Mutex",
            "thread",
            "malloc",
            "getenv",
            "setenv",
        ] {
            assert!(
                !code.contains(forbidden),
                "in_child.rs uses `{forbidden}` outside its tests"
            );
        }
    }
}
