//! Diagnostics for the command line: stderr only, prefixed `assay:`; stdout carries protocol (or,
//! for `capture`, the verdict JSON) and nothing else. A command that cannot finish returns a
//! [`Failure`]; `main` reports it once, here.

use std::io::{self, Write};
use std::process::ExitCode;

use super::exit;

/// Writes `assay: <msg>` on stderr as one line: `msg` goes through the one renderer of text for
/// people ([`assay::text::render`], SPEC §10), so a name or path in it cannot break the line or
/// reach the terminal raw.
pub(crate) fn eprint_assay(msg: &str) {
    let _ = writeln!(io::stderr().lock(), "assay: {}", assay::text::render(msg));
}

/// Why a command ended early. `main` turns it into one diagnostic and the exit status.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A usage error: clap renders it, status 2 (SPEC §10).
    Usage(clap::Error),
    /// The library refused or failed: its one-line message (after `context`, if any) and the
    /// status its kind maps to (SPEC §10).
    Library {
        context: &'static str,
        error: assay::Error,
    },
    /// A usage error found after parsing (a directory that does not exist, a file that cannot
    /// be used): its one-line message, status 2 (SPEC §10).
    Invalid(String),
    /// Writing the command's own output to stdout failed; `status` is what the command reports
    /// then. A broken pipe (the reader went away, as in `assay capture summary ROOT | head -1`)
    /// is a normal end and prints nothing.
    Output { error: io::Error, status: i32 },
    /// A diagnostic of the command line's own, then `status`.
    Message { text: String, status: i32 },
    /// Any other I/O failure of the command line itself: `what: error`, then `status`.
    Io {
        what: &'static str,
        error: io::Error,
        status: i32,
    },
}

impl Failure {
    /// One diagnostic, then `status`.
    pub(crate) fn message(text: impl Into<String>, status: i32) -> Self {
        Self::Message {
            text: text.into(),
            status,
        }
    }

    /// The library's error, with no context.
    pub(crate) fn library(error: assay::Error) -> Self {
        Self::Library { context: "", error }
    }

    /// A `map_err` for writes to stdout that end the command with `status`.
    pub(crate) fn output(status: i32) -> impl FnOnce(io::Error) -> Self {
        move |error| Self::Output { error, status }
    }

    /// Prints the diagnostic (once) and returns the exit status.
    pub(crate) fn report(self) -> ExitCode {
        match self {
            Self::Usage(e) => {
                let _ = e.print();
                exit::code(exit::USAGE)
            }
            Self::Invalid(message) => {
                eprint_assay(&message);
                exit::code(exit::USAGE)
            }
            Self::Library { context, error } => {
                eprint_assay(&format!("{context}{error}"));
                exit::code(error.exit_status())
            }
            // Rust ignores SIGPIPE, so a vanished reader shows up as this error rather than as
            // the signal a C program would die of; it is no reason for a diagnostic.
            Self::Output { error, status } if error.kind() == io::ErrorKind::BrokenPipe => {
                exit::code(status)
            }
            Self::Output { error, status } => {
                eprint_assay(&format!("cannot write to stdout: {error}"));
                exit::code(status)
            }
            Self::Message { text, status } => {
                eprint_assay(&text);
                exit::code(status)
            }
            Self::Io {
                what,
                error,
                status,
            } => {
                eprint_assay(&format!("{what}: {error}"));
                exit::code(status)
            }
        }
    }
}
