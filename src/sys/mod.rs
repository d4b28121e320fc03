//! The operating-system layer, and the only module of this crate allowed `unsafe` code (each
//! block with a `// SAFETY:` comment): the server process (spawn, the code between clone and
//! exec, its handle and cleanup: [`child`]), the signals the session deals with ([`signals`]),
//! the descriptor calls of the client and server byte streams ([`fd`]), the calling thread's
//! stack limit ([`stack`]), and the command line's process start ([`program_start`]).
//! Everything above this module is safe Rust (`#![forbid(unsafe_code)]` in each of them).
#![allow(unsafe_code)]

pub(crate) mod child;
pub(crate) mod fd;
pub(crate) mod fork_close;
pub(crate) mod program_start;
pub(crate) mod signals;
pub(crate) mod stack;

/// Gives `SIGCHLD` its default disposition in this process (a disposition, not a handler).
///
/// SPEC §3.1: a host that ignores `SIGCHLD` passes that on to its children, and the kernel would
/// then reap the server before the wrapper could observe its status. The `assay` command line
/// calls this before anything else; a library host keeps its own dispositions. Call it before any
/// thread that could change the disposition is started.
pub fn restore_default_sigchld() {
    set_disposition(nix::sys::signal::Signal::SIGCHLD, Disposition::Default);
}

/// A disposition that runs no code of ours: the default, or ignored.
#[derive(Clone, Copy)]
pub(crate) enum Disposition {
    Default,
    Ignored,
}

/// Gives `sig` a disposition that installs no handler ([`restore_default_sigchld`], the command
/// line's `SIGPIPE`). For a program's start, before any thread of its own could change it.
pub(crate) fn set_disposition(sig: nix::sys::signal::Signal, disposition: Disposition) {
    use nix::sys::signal::SigHandler;
    let handler = match disposition {
        Disposition::Default => SigHandler::SigDfl,
        Disposition::Ignored => SigHandler::SigIgn,
    };
    // SAFETY: SIG_DFL and SIG_IGN install no handler, so no code of ours runs in signal context;
    // the callers run this before any thread of their own is started.
    let _ = unsafe { nix::sys::signal::signal(sig, handler) };
}
