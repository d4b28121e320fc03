//! The three exceptions of `assay_stop` and the one mapping from [`assay::ErrorKind`] to them
//! (SPEC §9; the table itself lives in `src/error/mod.rs` of the library). The class is chosen from
//! the kind only, never from the message text.

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use assay::{Error, ErrorKind, OptionSpelling};

use crate::convert::WrapOutcome;

create_exception!(
    assay_stop,
    ConfigError,
    PyValueError,
    "The configuration was rejected before anything was spawned or created (SPEC §6)."
);
create_exception!(
    assay_stop,
    WrapError,
    PyOSError,
    "The session could not start or run: command not found or not executable, an I/O failure."
);
create_exception!(
    assay_stop,
    StopWriteError,
    WrapError,
    "The session ran but the session-stop record could not be written; `.outcome` holds the \
     observed result."
);

/// The stable name of an error kind, set as the exception's `kind` attribute.
fn kind_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidArgument => "invalid_argument",
        ErrorKind::Config => "config",
        ErrorKind::CommandNotFound => "command_not_found",
        ErrorKind::CommandNotExecutable => "command_not_executable",
        ErrorKind::Io => "io",
        ErrorKind::StopWrite => "stop_write",
        ErrorKind::Internal => "internal",
        // `ErrorKind` is non-exhaustive: a kind added later is reported as a wrapper failure.
        _ => "internal",
    }
}

/// Converts a library error into the matching Python exception, with `kind`, `exit_status`
/// (the `assay mcp wrap` exit status for it) and, per class, `option` or `outcome` set.
pub(crate) fn to_pyerr(py: Python<'_>, err: Error) -> PyErr {
    let kind = err.kind();
    // Options are spelled as Python keywords (`event_source`), not as CLI flags.
    let message = err.render(OptionSpelling::Key);
    let exit_status = err.exit_status();
    let option = err.option().map(|o| o.spell(OptionSpelling::Key));
    let pyerr = match (kind, err.os_errno()) {
        // A borrowed descriptor that is not open is an invalid argument everywhere; Python
        // reports an OS error number as an `OSError` (as `os.fstat` does), so it is a
        // `WrapError` with `errno` EBADF (docs/decisions.md).
        (ErrorKind::InvalidArgument, Some(errno)) => WrapError::new_err((errno, message)),
        (ErrorKind::Config | ErrorKind::InvalidArgument, _) => ConfigError::new_err(message),
        (ErrorKind::CommandNotFound, _) => WrapError::new_err((libc::ENOENT, message)),
        (ErrorKind::CommandNotExecutable, _) => WrapError::new_err((libc::EACCES, message)),
        (ErrorKind::StopWrite, _) => {
            let outcome = err.into_outcome();
            let pyerr = StopWriteError::new_err(message);
            let value = match outcome {
                Some(o) => match Py::new(py, WrapOutcome::from(o)) {
                    Ok(obj) => obj.into_any(),
                    Err(e) => return e,
                },
                None => py.None(),
            };
            if let Err(e) = pyerr.value(py).setattr("outcome", value) {
                return e;
            }
            pyerr
        }
        (_, Some(errno)) => WrapError::new_err((errno, message)),
        (_, None) => WrapError::new_err(message),
    };
    let value = pyerr.value(py);
    let set = value
        .setattr("kind", kind_name(kind))
        .and_then(|()| value.setattr("exit_status", exit_status))
        .and_then(|()| match kind {
            ErrorKind::Config | ErrorKind::InvalidArgument => value.setattr("option", option),
            _ => Ok(()),
        });
    match set {
        Ok(()) => pyerr,
        Err(e) => e,
    }
}
