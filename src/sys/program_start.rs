//! What a program needs from the process before its first line of work, for a binary that starts
//! without Rust's runtime start-up (`#![no_main]`: the `assay` command line, docs/decisions.md,
//! "The command line starts without the runtime's stack probe").
//!
//! Rust's runtime does three things before `main` on Linux: it opens `/dev/null` on a closed
//! standard descriptor, it ignores `SIGPIPE`, and it installs a handler that reports a stack
//! overflow (which reads `/proc/self/maps` to find the main thread's guard page and gives every
//! thread an alternate signal stack). [`prepare_program`] does the first two, exactly as the
//! runtime does them; the third is the part the command line goes without: a stack overflow
//! then ends the process with `SIGSEGV` instead of a message and `SIGABRT`, as it does in every
//! C or Python host of this library, whose runtime never ran.

use std::io;

/// Prepares the process as Rust's runtime would before `main`, without its stack-overflow
/// handler (see the module docs): a closed standard descriptor (0, 1 or 2) is opened on
/// `/dev/null`, so no file the program opens later can become its standard output; `SIGPIPE` is
/// ignored, so a write to a pipe without a reader fails with `EPIPE` instead of ending the
/// process.
///
/// For a program's first line, before any thread or file of its own; not for a library host,
/// whose process is its own. Aborts the process when a closed standard descriptor cannot be
/// opened on `/dev/null` (as Rust's runtime does): going on would let the next file opened take
/// the descriptor's place.
pub fn prepare_program() {
    for fd in closed_standard_descriptors() {
        if open_dev_null() != Some(fd) {
            std::process::abort();
        }
    }
    super::set_disposition(
        nix::sys::signal::Signal::SIGPIPE,
        super::Disposition::Ignored,
    );
}

/// The standard descriptors that are not open, lowest first: one `poll` of all three with no
/// events (a closed one reports `POLLNVAL`); where `poll` itself cannot run (`EINVAL` when
/// `RLIMIT_NOFILE` is below 3, `EAGAIN`, `ENOMEM`), one `fcntl(F_GETFD)` each.
fn closed_standard_descriptors() -> Vec<libc::c_int> {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    loop {
        // SAFETY: `fds` is an array of three initialized `pollfd`, valid for the call; a zero
        // timeout never blocks.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) };
        if r != -1 {
            return fds
                .iter()
                .filter(|p| p.revents & libc::POLLNVAL != 0)
                .map(|p| p.fd)
                .collect();
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => continue,
            _ => break,
        }
    }
    (0..3)
        .filter(|&fd| {
            // SAFETY: F_GETFD reads a descriptor's flags and changes nothing.
            let r = unsafe { libc::fcntl(fd, libc::F_GETFD) };
            r == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
        })
        .collect()
}

/// Opens `/dev/null` for reading and writing on the lowest free descriptor, without
/// `O_CLOEXEC`: a standard descriptor is inherited by the programs this one starts. `None` when
/// it cannot be opened.
fn open_dev_null() -> Option<libc::c_int> {
    use nix::fcntl::{OFlag, open};
    use std::os::fd::IntoRawFd;
    // Kept open for the life of the process: it is the standard descriptor from now on.
    open("/dev/null", OFlag::O_RDWR, nix::sys::stat::Mode::empty())
        .ok()
        .map(IntoRawFd::into_raw_fd)
}
