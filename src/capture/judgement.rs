//! The verdict on a capture directory (`assay.capture.closure.v1`, SPEC §7): the [`Closure`],
//! its kind and its reasons.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::exit_status;

/// The `schema` of a [`Closure`].
pub const CLOSURE_SCHEMA: &str = "assay.capture.closure.v1";

/// What the verdict's `non_claims` list holds.
pub const CLOSURE_NON_CLAIMS: [&str; 5] = [
    "not_execution_proof",
    "not_authentication",
    "not_global_coverage",
    "not_durable_storage_proof",
    "not_producer_authentication",
];

/// The verdict on a capture directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClosureKind {
    /// A recorded ending (`session_end` `client_closed`) with matching retained accounting
    /// (`decision_log` `complete`). Says nothing about whether the child succeeded.
    Closed,
    /// Consistent files with known loss (`decision_log` `incomplete`).
    Incomplete,
    /// Anything absent, malformed, over a bound, inconsistent or not retained.
    Unknown,
}

impl ClosureKind {
    /// The SPEC string: `closed`, `incomplete` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClosureKind::Closed => "closed",
            ClosureKind::Incomplete => "incomplete",
            ClosureKind::Unknown => "unknown",
        }
    }

    /// The exit status for this verdict (SPEC §10 `capture read`): `0` closed, `1` incomplete,
    /// `3` unknown. The one map used by the CLI, `python -m assay_stop` (through
    /// `Closure.exit_status`) and the demo.
    pub fn exit_status(self) -> i32 {
        match self {
            ClosureKind::Closed => exit_status::OK,
            ClosureKind::Incomplete => exit_status::INCOMPLETE,
            ClosureKind::Unknown => exit_status::FAILURE,
        }
    }
}

/// Why a capture is not `closed` (SPEC §7 reason codes: `missing_file`, …). Not to be confused
/// with the policy's reason codes (`P_…`, [`crate::ReasonCode`]), which a decision line records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClosureReasonCode {
    /// A required file does not exist (or could not be opened at all).
    MissingFile,
    /// A symlink (never followed), directory, FIFO, device or socket.
    NotRegularFile,
    /// A file over its byte bound.
    TooLarge,
    /// More than 10,000 complete decision lines.
    TooManyDecisions,
    /// JSON nested deeper than 32 levels.
    TooDeep,
    /// A JSON object with the same key twice.
    DuplicateKey,
    /// `NaN`, `Infinity`, `-Infinity` or a number overflowing a double.
    NonfiniteNumber,
    /// Not UTF-8 JSON text.
    InvalidJson,
    /// A required field is missing, has the wrong type or a value outside its domain.
    SchemaMismatch,
    /// protocol.json disagrees with the events.
    ProtocolMismatch,
    /// The stop and context events (or a decision and the context) disagree.
    ContextMismatch,
    /// An event `id` (or a decision's `session_id`) is not the one its session implies.
    IdMismatch,
    /// Decision line count or `seq` disagrees with the accounting.
    CountMismatch,
    /// The log's SHA-256 disagrees with `decision_prefix_sha256`.
    DigestMismatch,
    /// Log bytes after the last newline where no partial tail is allowed.
    PartialLine,
    /// Stop fields contradict each other.
    InconsistentAccounting,
    /// The decision log was not retained (`absent`, `temporary`, `unknown`).
    DecisionLogNotRetained,
    /// Known loss: decision events were not written (the stop record counts them in
    /// `decision_events_dropped`).
    DecisionLoss,
    /// The session ended with `session_end` `proxy_error` (an I/O or join error ended it): the
    /// log is `incomplete` by SPEC §4.3's rule even when every event was written. Named apart
    /// from [`ClosureReasonCode::DecisionLoss`], which means an event was not written.
    ProxyError,
    /// `no-session.json`: a discovery-only run, no session existed (SPEC §10). A missing stop
    /// record is never evidence, so the verdict stays `unknown`.
    NoSession,
}

impl ClosureReasonCode {
    /// The SPEC string, e.g. `missing_file`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClosureReasonCode::MissingFile => "missing_file",
            ClosureReasonCode::NotRegularFile => "not_regular_file",
            ClosureReasonCode::TooLarge => "too_large",
            ClosureReasonCode::TooManyDecisions => "too_many_decisions",
            ClosureReasonCode::TooDeep => "too_deep",
            ClosureReasonCode::DuplicateKey => "duplicate_key",
            ClosureReasonCode::NonfiniteNumber => "nonfinite_number",
            ClosureReasonCode::InvalidJson => "invalid_json",
            ClosureReasonCode::SchemaMismatch => "schema_mismatch",
            ClosureReasonCode::ProtocolMismatch => "protocol_mismatch",
            ClosureReasonCode::ContextMismatch => "context_mismatch",
            ClosureReasonCode::IdMismatch => "id_mismatch",
            ClosureReasonCode::CountMismatch => "count_mismatch",
            ClosureReasonCode::DigestMismatch => "digest_mismatch",
            ClosureReasonCode::PartialLine => "partial_line",
            ClosureReasonCode::InconsistentAccounting => "inconsistent_accounting",
            ClosureReasonCode::DecisionLogNotRetained => "decision_log_not_retained",
            ClosureReasonCode::DecisionLoss => "decision_loss",
            ClosureReasonCode::ProxyError => "proxy_error",
            ClosureReasonCode::NoSession => "no_session",
        }
    }
}

/// One reason behind a verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    /// The machine-readable code.
    pub code: ClosureReasonCode,
    /// A one-line human description naming the file and field.
    pub detail: String,
}

/// Size and digest of a file the reader read completely (within its bound).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDigest {
    /// Length in bytes.
    pub bytes: u64,
    /// Lowercase hex SHA-256 of the bytes.
    pub sha256: String,
}

/// The verdict object (`assay.capture.closure.v1`, SPEC §7).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Closure {
    /// Always [`CLOSURE_SCHEMA`].
    pub schema: &'static str,
    /// `closed`, `incomplete` or `unknown`.
    pub closure: ClosureKind,
    /// Why the verdict is not `closed`; empty exactly when it is `closed`. An `incomplete`
    /// verdict always carries a `decision_loss` reason (events were dropped), a `proxy_error`
    /// reason (the session ended on an error), or both, and no other.
    pub reasons: Vec<Reason>,
    /// The session id: the stop's when it parsed, else the context's, else protocol.json's;
    /// only a well-formed id (32 lowercase hex) is reported.
    pub session_id: Option<String>,
    /// The stop event's `data` fields as top-level keys, present only when the stop event
    /// passed its schema checks (so every value has its documented type). `session_id` and
    /// `non_claims` are not repeated here: the verdict has its own.
    #[serde(flatten)]
    pub stop: Option<serde_json::Map<String, Value>>,
    /// `{name → {bytes, sha256}}` for every file read completely within its bound.
    pub files: BTreeMap<String, FileDigest>,
    /// What the verdict does not claim ([`CLOSURE_NON_CLAIMS`]).
    pub non_claims: Vec<String>,
}

impl Closure {
    /// The verdict as compact JSON (one line, no trailing newline). `Closure` is also
    /// `Serialize`, so callers wanting pretty output can use `serde_json::to_string_pretty`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            // Serializing these types cannot fail (string keys, no non-finite floats); keep a
            // well-formed unknown verdict anyway rather than panic.
            format!(
                "{{\"schema\":\"{CLOSURE_SCHEMA}\",\"closure\":\"unknown\",\"reasons\":[{{\"code\":\"schema_mismatch\",\"detail\":{}}}],\"session_id\":null,\"files\":{{}},\"non_claims\":[]}}",
                Value::String(format!("verdict could not be serialized: {e}"))
            )
        })
    }

    /// True when the verdict is `closed`.
    pub fn is_closed(&self) -> bool {
        self.closure == ClosureKind::Closed
    }
}
