//! The reader's bounds (SPEC §7). The file names it reads are in `crate::capture_files`.

/// Bound for each JSON companion (protocol, context, stop), inclusive.
pub const MAX_COMPANION_BYTES: u64 = 64 * 1024;
/// Bound for the decision log, inclusive.
pub const MAX_LOG_BYTES: u64 = 8 * 1024 * 1024;
/// Bound for the number of complete decision lines, inclusive.
pub const MAX_DECISIONS: usize = 10_000;
/// Bound for JSON nesting (the outermost object or array is level 1), inclusive.
pub const MAX_DEPTH: usize = 32;
