//! The command line's exit statuses (SPEC §10): the names of [`assay::exit_status`], the one
//! table the library's rules and the commands share, and their `ExitCode`.

use std::process::ExitCode;

pub use assay::exit_status::{
    FAILURE, INCOMPLETE, NOT_EXECUTABLE, NOT_FOUND, NOT_THE_ANSWER, OK, UNVERIFIED, USAGE, signaled,
};

/// An exit status as an `ExitCode`. Statuses outside 0..=255 cannot occur (the library's rule
/// produces 0..=255); one would read as [`FAILURE`].
pub(crate) fn code(status: i32) -> ExitCode {
    let failure = u8::try_from(FAILURE).unwrap_or(u8::MAX);
    ExitCode::from(u8::try_from(status).unwrap_or(failure))
}
