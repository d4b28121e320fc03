//! The exit statuses of the command line (SPEC §10), named once: the rules that produce them
//! ([`crate::Error::exit_status`], [`crate::ClosureKind::exit_status`],
//! [`crate::CaptureCounts::exit_status`], a wrapped session's `exit_code`) and the command line
//! (`crates/assay-cli/src/exit.rs`) all use these names.

/// `0`: the command did what it was asked (a capture read as `closed`, pins written or
/// matching, a configuration written or checked).
pub const OK: i32 = 0;

/// `1`: a capture read as `incomplete` (or, for `capture summary`, some capture is not
/// `closed`), or `mcp pin --check` found tools added, removed or changed.
pub const INCOMPLETE: i32 = 1;

/// `capture verify-answer`: the file is not the recorded answer (SPEC §5.3).
pub const NOT_THE_ANSWER: i32 = 1;

/// `2`: a usage or configuration error: nothing was run (a directory that does not exist, an
/// invalid pins or host file, an option clap refuses).
pub const USAGE: i32 = 2;

/// `3`: a failure of the wrapper or of the command itself (a capture read as `unknown`, a
/// server that could not be listed, a write that failed); it takes precedence over the child's
/// status.
pub const FAILURE: i32 = 3;

/// `4`: `capture verify` found a signature or a file that does not match: the attestation is
/// missing, altered, by none of the given keys, or a file was changed, added or removed after
/// signing (SPEC §4.5, §10).
pub const UNVERIFIED: i32 = 4;

/// `126`: the child command exists but cannot be executed (`mcp wrap`).
pub const NOT_EXECUTABLE: i32 = 126;

/// `127`: the child command does not exist (`mcp wrap`).
pub const NOT_FOUND: i32 = 127;

/// `128 + n`: the wrapped child was killed by signal `n` (`mcp wrap`).
pub const fn signaled(signal: i32) -> i32 {
    128 + signal
}
