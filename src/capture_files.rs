//! The fixed file names inside a capture directory (SPEC §7), in one place: the configuration
//! plans them, the writers create them, the reader, `package_capture` and `capture summary` read
//! them. This module is their one home.
#![forbid(unsafe_code)]

/// The protocol companion.
pub const PROTOCOL: &str = "protocol.json";
/// The session context event.
pub const CONTEXT: &str = "session-context.json";
/// The session stop event.
pub const STOP: &str = "session-stop.json";
/// The decision log.
pub const DECISIONS: &str = "decisions.ndjson";
/// Child stderr and wrapper diagnostics.
pub const STDERR: &str = "proxy-stderr.log";
/// The coverage report.
pub const COVERAGE: &str = "coverage.json";
/// Written instead of a stop record by a discovery-only run (SPEC §3 item 8, §10).
pub const NO_SESSION: &str = "no-session.json";

/// The tool definitions the session's listings showed, kept when the policy says
/// `record_definitions: true` (not part of the log's accounting: content-addressed by the digests
/// the log records).
pub const DEFINITIONS: &str = "tool-definitions.ndjson";

/// The DSSE envelope of a signed capture, written after the stop record (SPEC §4.5).
pub const ATTESTATION: &str = "attestation.dsse.json";
/// A package's manifest (`capture package`, SPEC §7): in the package directory, not a capture
/// file.
pub const MANIFEST: &str = "manifest.json";

/// Every file a capture directory may hold, in the order a package manifest lists them.
pub const ALL: [&str; 9] = [
    PROTOCOL,
    CONTEXT,
    STOP,
    DECISIONS,
    STDERR,
    COVERAGE,
    NO_SESSION,
    DEFINITIONS,
    ATTESTATION,
];
