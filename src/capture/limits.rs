//! The capture's file names and the reader's bounds (SPEC §7).

/// Capture file names (SPEC §7).
pub(crate) use crate::capture_files::{
    CONTEXT, COVERAGE, DECISIONS as LOG, NO_SESSION, PROTOCOL, STDERR as STDERR_LOG, STOP,
};

/// Bound for each JSON companion (protocol, context, stop), inclusive.
pub const MAX_COMPANION_BYTES: u64 = 64 * 1024;
/// Bound for the decision log, inclusive.
pub const MAX_LOG_BYTES: u64 = 8 * 1024 * 1024;
/// Bound for the number of complete decision lines, inclusive.
pub const MAX_DECISIONS: usize = 10_000;
/// Bound for JSON nesting (the outermost object or array is level 1), inclusive.
pub const MAX_DEPTH: usize = 32;
