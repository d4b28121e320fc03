//! The values a session produces: the stop-record fields (SPEC §4.3) and the [`WrapOutcome`]
//! returned by [`crate::wrap_session`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How the session ended (SPEC §4.3 `session_end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionEnd {
    /// The client closed its input, both I/O workers finished and the child wait finished.
    ClientClosed,
    /// A returned I/O or join error ended the session.
    ProxyError,
}

/// What was observed about the child's end (SPEC §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    /// The child exited normally.
    Exited,
    /// The child was terminated by a signal.
    Signaled,
    /// No status was observed within the cleanup bound.
    Unknown,
}

/// The state of the decision log as recorded in the stop event (SPEC §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionLogState {
    /// Every emission of this writer was written.
    Complete,
    /// The writer was poisoned, or the session ended with `proxy_error`.
    Incomplete,
    /// A coverage-only log that is not retained.
    Temporary,
    /// No log was requested.
    Absent,
    /// A log was requested but its writer was never initialized.
    Unknown,
}

/// The observed child status (SPEC §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildStatus {
    /// `exited`, `signaled` or `unknown`.
    pub termination: Termination,
    /// Exit code when the child exited normally.
    pub exit_code: Option<i32>,
    /// Unix signal number when the child was signaled.
    pub signal: Option<i32>,
    /// Whether a core was dumped, when the child was signaled.
    pub core_dumped: Option<bool>,
}

impl ChildStatus {
    /// No status was observed.
    pub const UNKNOWN: ChildStatus = ChildStatus {
        termination: Termination::Unknown,
        exit_code: None,
        signal: None,
        core_dumped: None,
    };

    /// A one-line human description, used in diagnostics.
    pub fn describe(&self) -> String {
        match (self.termination, self.exit_code, self.signal) {
            (Termination::Exited, Some(code), _) => format!("child exited with status {code}"),
            (Termination::Signaled, _, Some(sig)) => format!(
                "child was terminated by signal {sig}{}",
                if self.core_dumped == Some(true) {
                    " (core dumped)"
                } else {
                    ""
                }
            ),
            _ => "child status unknown".to_string(),
        }
    }
}

/// The `non_claims` list carried by context and stop events.
pub const NON_CLAIMS: [&str; 4] = [
    "not_execution_proof",
    "not_authentication",
    "not_global_coverage",
    "not_durable_storage_proof",
];

/// The `data` object of an `assay.mcp.session.stop.v1` event; every key is always present.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopData {
    /// 32 lowercase hex characters.
    pub session_id: String,
    /// The configured label.
    pub server_id: String,
    /// The spawned child's PID.
    pub server_pid: u32,
    /// `evt_context_<session_id>` when context output was requested.
    pub session_context_id: Option<String>,
    /// How the session ended.
    pub session_end: SessionEnd,
    /// `exited`, `signaled` or `unknown`.
    pub termination: Termination,
    /// Exit code, when exited.
    pub exit_code: Option<i32>,
    /// Signal number, when signaled.
    pub signal: Option<i32>,
    /// Core dump flag, when signaled.
    pub core_dumped: Option<bool>,
    /// A kill was attempted after `try_wait` returned no status.
    pub assay_kill_requested: bool,
    /// Decision log state.
    pub decision_log: DecisionLogState,
    /// Successful decision-line writes of this invocation.
    pub decision_events_written: Option<u64>,
    /// The failed emission and every refused emission after it.
    pub decision_events_dropped: Option<u64>,
    /// SHA-256 of exactly the successfully written lines.
    pub decision_prefix_sha256: Option<String>,
    /// Always `producer_observation`.
    pub assertion_basis: String,
    /// What the record does not claim.
    pub non_claims: Vec<String>,
}

/// The files a session wrote (or was asked to write).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputPaths {
    /// The decision log, when retained.
    pub decision_log: Option<PathBuf>,
    /// The session context event.
    pub session_context: Option<PathBuf>,
    /// The session stop event (set when requested, even if it was not written).
    pub session_stop: Option<PathBuf>,
    /// The coverage report.
    pub coverage: Option<PathBuf>,
    /// The capture directory's protocol.json.
    pub protocol: Option<PathBuf>,
    /// The capture directory.
    pub capture_dir: Option<PathBuf>,
}

/// Everything `wrap_session` observed, returned to every surface (Rust, C as JSON, Python).
///
/// Serialized (the C ABI's outcome JSON) as one flat object: `session_id`, `exit_code` (the
/// `assay mcp wrap` exit status, SPEC §8/§10), the stop fields, `paths`, `stop_written`, ... .
/// Two stop fields would collide with the outcome's own keys, and a JSON object must not hold a
/// key twice: the stop's `session_id` is the same value and is not repeated, and the child's own
/// exit code (the stop's `exit_code`) is emitted as `child_exit_code`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WrapOutcome {
    /// The session id.
    pub session_id: String,
    /// The `assay mcp wrap` exit status for this session (SPEC §10).
    pub exit_code: i32,
    /// The stop fields (also when no stop record was requested).
    #[serde(flatten, serialize_with = "stop_fields")]
    pub stop: StopData,
    /// The paths involved.
    pub paths: OutputPaths,
    /// Whether the stop event was written.
    pub stop_written: bool,
    /// True for a discovery-only run (SPEC §3 item 8): no session existed, no stop was written.
    pub discovery_only: bool,
    /// Evidence writes that failed (one line each); non-empty means exit status 3.
    pub evidence_errors: Vec<String>,
    /// Why the session ended with `proxy_error`, when it did.
    pub proxy_error: Option<String>,
}

/// Serializes the stop fields for [`WrapOutcome`] without the keys it has itself.
fn stop_fields<S: serde::Serializer>(stop: &StopData, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::Error as _;
    let mut fields = match serde_json::to_value(stop).map_err(S::Error::custom)? {
        serde_json::Value::Object(fields) => fields,
        _ => return Err(S::Error::custom("stop data is not an object")),
    };
    fields.remove("session_id");
    if let Some(code) = fields.remove("exit_code") {
        fields.insert("child_exit_code".to_owned(), code);
    }
    fields.serialize(serializer)
}

impl StopData {
    /// A one-line description of the observed child status, for diagnostics.
    pub fn describe_status(&self) -> String {
        ChildStatus {
            termination: self.termination,
            exit_code: self.exit_code,
            signal: self.signal,
            core_dumped: self.core_dumped,
        }
        .describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_json_has_no_duplicate_keys() {
        let outcome = WrapOutcome {
            session_id: "0".repeat(32),
            exit_code: 3,
            stop: StopData {
                session_id: "0".repeat(32),
                server_id: "s".into(),
                server_pid: 1,
                session_context_id: None,
                session_end: SessionEnd::ProxyError,
                termination: Termination::Exited,
                exit_code: Some(0),
                signal: None,
                core_dumped: None,
                assay_kill_requested: false,
                decision_log: DecisionLogState::Incomplete,
                decision_events_written: Some(1),
                decision_events_dropped: Some(0),
                decision_prefix_sha256: None,
                assertion_basis: "producer_observation".into(),
                non_claims: vec![],
            },
            paths: OutputPaths::default(),
            stop_written: false,
            discovery_only: false,
            evidence_errors: vec![],
            proxy_error: Some("x".into()),
        };
        let json = serde_json::to_string(&outcome).unwrap();
        crate::strict_json::scan_str(&json, 32).unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["exit_code"], 3, "{json}");
        assert_eq!(value["child_exit_code"], 0, "{json}");
        assert_eq!(value["session_end"], "proxy_error", "{json}");
        assert_eq!(value["session_id"], "0".repeat(32), "{json}");
    }
}
