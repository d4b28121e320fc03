//! Diagnostics for the command line: stderr only, prefixed `assay:`; stdout carries protocol (or,
//! for `capture`, the verdict JSON) and nothing else.

use std::io::Write;
use std::process::ExitCode;

pub(crate) fn eprint_assay(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "assay: {msg}");
}

/// An exit status as an `ExitCode` (statuses outside 0..=255 cannot occur: the library's rule
/// produces 0..=255).
pub(crate) fn exit(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(3))
}
