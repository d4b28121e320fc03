//! The two enums that cross the C ABI. Their variant names are the C names (SPEC §8), spelled the
//! same in Rust so that the header and the Rust source can be compared word for word.
//!
//! Both are only ever *returned* to C (or written through an out-pointer), never read from C, so
//! C cannot hand Rust an out-of-range discriminant.

#![allow(non_camel_case_types)]

use core_api::ClosureKind;
use core_api::{Error, ErrorKind};

/// The status returned by every fallible `assay_*` function.
///
/// The C type is a `uint32_t`; compare it with the named constants.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssayStatus {
    /// Success.
    ASSAY_OK = 0,
    /// An argument could not be understood: a NULL pointer, a string that is not UTF-8, JSON that
    /// does not parse, an unknown or duplicate `config_json` key, a negative or closed descriptor.
    ASSAY_ERR_INVALID_ARGUMENT = 1,
    /// The configuration was rejected before anything was spawned or created (a missing policy
    /// file, an invalid `event_source`, an output path that already exists, ...).
    ASSAY_ERR_CONFIG = 2,
    /// An I/O failure, including a server command that was not found or is not executable, and
    /// any other failure of the wrapper itself.
    ASSAY_ERR_IO = 3,
    /// The session ran, but the requested session-stop record could not be written. The outcome
    /// JSON (with the observed child status) is still returned.
    ASSAY_ERR_STOP_WRITE = 4,
    /// A Rust panic was caught at the boundary. Outputs are NULL.
    ASSAY_ERR_PANIC = 5,
}

/// The capture verdict of `assay_read_capture` (SPEC §7 `closure`).
///
/// The C type is a `uint32_t`; compare it with the named constants.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssayClosure {
    /// A recorded ending with matching, retained decision-log accounting. Says nothing about
    /// whether the server's work succeeded.
    ASSAY_CLOSURE_CLOSED = 0,
    /// Consistent files with known loss (the decision log is `incomplete`).
    ASSAY_CLOSURE_INCOMPLETE = 1,
    /// Anything absent, malformed, over a bound, inconsistent or not retained.
    ASSAY_CLOSURE_UNKNOWN = 2,
}

// The kind -> status map is written here, beside the C enum: the core library never knows the
// C ABI (the C layer maps from the library's kinds).
impl From<ErrorKind> for AssayStatus {
    /// The C ABI status for this kind (SPEC §8). A command that cannot be started and an internal
    /// failure have no status of their own in C: they are `ASSAY_ERR_IO`. (`ASSAY_ERR_PANIC`
    /// comes from the panic boundary, never from an error.)
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::InvalidArgument => AssayStatus::ASSAY_ERR_INVALID_ARGUMENT,
            ErrorKind::Config => AssayStatus::ASSAY_ERR_CONFIG,
            ErrorKind::CommandNotFound
            | ErrorKind::CommandNotExecutable
            | ErrorKind::Io
            | ErrorKind::Internal => AssayStatus::ASSAY_ERR_IO,
            ErrorKind::StopWrite => AssayStatus::ASSAY_ERR_STOP_WRITE,
            // `ErrorKind` is non-exhaustive: a kind without a C status of its own is an
            // operation that could not be carried out, as the internal failures above.
            _ => AssayStatus::ASSAY_ERR_IO,
        }
    }
}

impl From<&Error> for AssayStatus {
    /// The C ABI status for this error (SPEC §8): its kind's.
    fn from(error: &Error) -> Self {
        error.kind().into()
    }
}

impl From<ClosureKind> for AssayClosure {
    fn from(kind: ClosureKind) -> Self {
        match kind {
            ClosureKind::Closed => AssayClosure::ASSAY_CLOSURE_CLOSED,
            ClosureKind::Incomplete => AssayClosure::ASSAY_CLOSURE_INCOMPLETE,
            ClosureKind::Unknown => AssayClosure::ASSAY_CLOSURE_UNKNOWN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discriminants_are_the_spec_values() {
        // SPEC §8.
        assert_eq!(AssayStatus::ASSAY_OK as u32, 0);
        assert_eq!(AssayStatus::ASSAY_ERR_INVALID_ARGUMENT as u32, 1);
        assert_eq!(AssayStatus::ASSAY_ERR_CONFIG as u32, 2);
        assert_eq!(AssayStatus::ASSAY_ERR_IO as u32, 3);
        assert_eq!(AssayStatus::ASSAY_ERR_STOP_WRITE as u32, 4);
        assert_eq!(AssayStatus::ASSAY_ERR_PANIC as u32, 5);
        assert_eq!(AssayClosure::ASSAY_CLOSURE_CLOSED as u32, 0);
        assert_eq!(AssayClosure::ASSAY_CLOSURE_INCOMPLETE as u32, 1);
        assert_eq!(AssayClosure::ASSAY_CLOSURE_UNKNOWN as u32, 2);
    }

    #[test]
    fn kind_to_status_table() {
        use AssayStatus::*;
        let table = [
            (ErrorKind::InvalidArgument, ASSAY_ERR_INVALID_ARGUMENT),
            (ErrorKind::Config, ASSAY_ERR_CONFIG),
            (ErrorKind::CommandNotFound, ASSAY_ERR_IO),
            (ErrorKind::CommandNotExecutable, ASSAY_ERR_IO),
            (ErrorKind::Io, ASSAY_ERR_IO),
            (ErrorKind::StopWrite, ASSAY_ERR_STOP_WRITE),
            (ErrorKind::Internal, ASSAY_ERR_IO),
        ];
        for (kind, status) in table {
            assert_eq!(AssayStatus::from(kind), status, "{kind:?}");
        }
    }

    #[test]
    fn closure_mapping() {
        assert_eq!(
            AssayClosure::from(ClosureKind::Closed),
            AssayClosure::ASSAY_CLOSURE_CLOSED
        );
        assert_eq!(
            AssayClosure::from(ClosureKind::Incomplete),
            AssayClosure::ASSAY_CLOSURE_INCOMPLETE
        );
        assert_eq!(
            AssayClosure::from(ClosureKind::Unknown),
            AssayClosure::ASSAY_CLOSURE_UNKNOWN
        );
    }
}
