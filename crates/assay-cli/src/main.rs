//! The `assay` binary: the command line of this crate's library
//! ([`assay_cli::run_native`]), run with this process's arguments.
//!
//! It starts without Rust's runtime start-up (`#![no_main]`; docs/decisions.md, "The command line
//! starts without the runtime's stack probe"): [`assay::prepare_program`] does what that start-up
//! does that the command line needs (standard descriptors, `SIGPIPE`), and `main` below does
//! what the runtime does around `main` (the arguments, a panic as exit status 101, standard
//! output flushed before the process ends). What it goes without is the stack-overflow handler,
//! whose set-up (reading `/proc/self/maps`, an alternate signal stack for every thread) cost
//! ~0.08 ms of every wrapper's start-up.
#![cfg_attr(not(test), no_main)]
// The C entry point below is this crate's one use of `unsafe`: the program's boundary with the C
// runtime that calls it.
#![allow(unsafe_code)]

/// The entry point. Left out of the test build (`cargo test --all-targets` builds this file as a
/// test harness, whose `main` is libtest's; the binary has no unit tests, tests/ runs it).
#[cfg(not(test))]
mod entry {
    use std::ffi::{CStr, OsStr, OsString, c_char, c_int};
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;

    /// The exit status of a `main` that panicked, as Rust's runtime gives it.
    const PANICKED: u8 = 101;

    /// The program's entry point, called by the C runtime with the arguments `execve` was given.
    #[unsafe(no_mangle)]
    extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
        assay::prepare_program();
        let args = arguments(argc, argv);
        let status = std::panic::catch_unwind(move || {
            // This is the process's main thread on the stack `execve` gave it (never switched): a
            // policy is compiled on it when RLIMIT_STACK lets it grow to 8 MiB, without a thread of
            // its own.
            assay::declare_main_thread_stack();
            assay_cli::run_native(args)
        })
        .unwrap_or(PANICKED);
        // The runtime flushes standard output when `main` returns; a failure here has nowhere to go.
        let _ = std::io::stdout().flush();
        c_int::from(status)
    }

    /// The program's arguments, from the `argc` and `argv` the C runtime passed to [`main`] (the
    /// bytes as given: a Unix argument need not be UTF-8).
    fn arguments(argc: c_int, argv: *const *const c_char) -> Vec<OsString> {
        let count = usize::try_from(argc).unwrap_or(0);
        if argv.is_null() {
            return Vec::new();
        }
        (0..count)
            .map(|i| {
                // SAFETY: the C runtime passes `argc` entries in `argv` (non-null, checked above),
                // each null or a NUL-terminated string that lives as long as the process; `i` is
                // below `argc`.
                let arg = unsafe { *argv.add(i) };
                if arg.is_null() {
                    return OsString::new();
                }
                // SAFETY: `arg` is a non-null, NUL-terminated string of the process's arguments.
                let bytes = unsafe { CStr::from_ptr(arg) }.to_bytes();
                OsStr::from_bytes(bytes).to_os_string()
            })
            .collect()
    }
}
