//! The command line's exit statuses (SPEC §10), named once. A command returns one of these, or
//! the status the library's rule gives (`assay::Error::exit_status`, the capture verdict's
//! `exit_status`, the wrapped session's `exit_code`), which follows the same table. The
//! statuses only the library produces (126, 127, `128 + n`) are named here too, so the whole
//! table reads in one place.

use std::process::ExitCode;

/// `0`: the command did what it was asked (a capture read as `closed`, pins written or
/// matching, a configuration written or checked).
pub const OK: i32 = 0;

/// `1`: a capture read as `incomplete` (or, for `capture summary`, some capture is not
/// `closed`), or `mcp pin --check` found tools added, removed or changed.
pub const INCOMPLETE: i32 = 1;

/// `2`: a usage or configuration error: nothing was run (a directory that does not exist, an
/// invalid pins or host file, an option clap refuses).
pub const USAGE: i32 = 2;

/// `3`: a failure of the wrapper or of the command itself (a capture read as `unknown`, a
/// server that could not be listed, a write that failed); it takes precedence over the child's
/// status.
pub const FAILURE: i32 = 3;

/// `126`: the child command exists but cannot be executed (`mcp wrap`).
pub const NOT_EXECUTABLE: i32 = 126;

/// `127`: the child command does not exist (`mcp wrap`).
pub const NOT_FOUND: i32 = 127;

/// `128 + n`: the wrapped child was killed by signal `n` (`mcp wrap`).
pub const fn signaled(signal: i32) -> i32 {
    128 + signal
}

/// An exit status as an `ExitCode`. Statuses outside 0..=255 cannot occur (the library's rule
/// produces 0..=255); one would read as [`FAILURE`].
pub(crate) fn code(status: i32) -> ExitCode {
    let failure = u8::try_from(FAILURE).unwrap_or(u8::MAX);
    ExitCode::from(u8::try_from(status).unwrap_or(failure))
}
