//! The values a session produces: the stop-record fields (SPEC §4.3) and the [`WrapOutcome`]
//! returned by [`crate::wrap_session`].
#![forbid(unsafe_code)]

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::exit_status;

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

impl DecisionLogState {
    /// The stop record's `decision_log` (SPEC §4.3), first match wins: no log requested (and
    /// none temporary) → `absent`; requested but never initialized → `unknown`; poisoned or
    /// `proxy_error` → `incomplete`; not retained → `temporary`; otherwise `complete`.
    pub(crate) fn of(
        requested: bool,
        initialized: bool,
        poisoned: bool,
        session_end: SessionEnd,
        temporary: bool,
    ) -> Self {
        if !requested {
            DecisionLogState::Absent
        } else if !initialized {
            DecisionLogState::Unknown
        } else if poisoned || session_end == SessionEnd::ProxyError {
            DecisionLogState::Incomplete
        } else if temporary {
            DecisionLogState::Temporary
        } else {
            DecisionLogState::Complete
        }
    }
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
    /// The wrapper sent the kill attempt to the server's process group (after `try_wait`
    /// returned no status, or to end what was left of the group after its leader exited).
    pub assay_kill_requested: bool,
    /// Processes of the server's group other than its leader were still alive when the kill
    /// attempt was made (SPEC §3 item 9, §4.3). Absent from records written before it existed
    /// (read as `false`).
    #[serde(default)]
    pub group_killed: bool,
    /// Decision log state.
    pub decision_log: DecisionLogState,
    /// Successful decision-line writes of this invocation.
    pub decision_events_written: Option<u64>,
    /// The failed emission and every refused emission after it.
    pub decision_events_dropped: Option<u64>,
    /// SHA-256 of exactly the successfully written lines.
    pub decision_prefix_sha256: Option<String>,
    /// What the live OTLP exporter delivered (`--otlp-endpoint`, SPEC §10); absent when none ran.
    /// Not part of the decision log's accounting: the log stays the record of truth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp_export: Option<OtlpExportCounts>,
    /// Always `producer_observation`.
    pub assertion_basis: String,
    /// What the record does not claim.
    pub non_claims: Vec<String>,
}

/// The stop record's `otlp_export` (SPEC §4.3): spans the live exporter was given, delivered
/// (answered 2xx by the endpoint) and dropped (`spans - exported`: the queue was full, the
/// request failed or was refused, or it was still unsent when the session's bounded wait ended).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtlpExportCounts {
    /// Spans offered: one per decision-log line written, and the session span.
    pub spans: u64,
    /// Spans the endpoint accepted.
    pub exported: u64,
    /// Spans not delivered.
    pub dropped: u64,
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
    /// The capture directory (with `capture_root`: the new directory chosen for this run).
    pub capture_dir: Option<PathBuf>,
    /// `no-session.json`, written instead of a stop record by a discovery-only run inside a
    /// capture directory (SPEC §3 item 8).
    pub no_session: Option<PathBuf>,
    /// `attestation.dsse.json`, when the capture was signed (SPEC §4.5); absent from the JSON
    /// form otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attestation: Option<PathBuf>,
}

/// Whether a session with a signing key signed its capture (SPEC §4.5). A failure never
/// changes the capture's verdict: the signature is an extra claim, not a condition of the stop
/// record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignatureOutcome {
    /// `attestation.dsse.json` was written.
    pub signed: bool,
    /// The key id of the signing key (lowercase hex SHA-256 of its raw public key).
    pub keyid: String,
    /// Why the capture was not signed, when it was not.
    pub error: Option<String>,
}

/// Everything `wrap_session` observed, returned to every surface (Rust, C as JSON, Python).
///
/// Its JSON form (see [`WrapOutcome::to_json_value`]) has `exit_code` for the CLI status rule, so
/// the stop record's own `exit_code` appears there as `child_exit_code`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrapOutcome {
    /// The session id.
    pub session_id: String,
    /// The `assay mcp wrap` exit status for this session (SPEC §10).
    pub exit_code: i32,
    /// The stop fields (also when no stop record was requested or written).
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
    /// With a signing key: whether the capture was signed, and why not (SPEC §4.5). `None`
    /// without a key.
    pub signature: Option<SignatureOutcome>,
}

impl WrapOutcome {
    /// The `assay mcp wrap` exit status rule of SPEC §10 for this outcome: 3 when the stop
    /// record could not be written (`stop_failed`), the session ended with `proxy_error`, the
    /// status is unknown or any evidence write failed; else the child's exit code, or 128 + the
    /// signal.
    pub(crate) fn exit_status_rule(&self, stop_failed: bool) -> i32 {
        let s = &self.stop;
        if stop_failed
            || s.session_end == SessionEnd::ProxyError
            || s.termination == Termination::Unknown
            || !self.evidence_errors.is_empty()
        {
            return exit_status::FAILURE;
        }
        match (s.termination, s.exit_code, s.signal) {
            (Termination::Exited, Some(code), _) => code,
            (Termination::Signaled, _, Some(sig)) => exit_status::signaled(sig),
            _ => exit_status::FAILURE,
        }
    }

    /// The outcome as one JSON object: `session_id`, `exit_code` (the CLI status rule),
    /// `child_exit_code` (the stop record's `exit_code`), every other stop field at the top level,
    /// `stop` (the stop `data` exactly as written, or as it would have been), `paths`,
    /// `stop_written`, `discovery_only`, `evidence_errors`, `proxy_error`, `signed` (`true`,
    /// `false`, or `null` without a signing key) and `signature` (`null` without a key, else
    /// `{signed, keyid, error}`). No key appears twice.
    pub fn to_json_value(&self) -> serde_json::Value {
        use serde_json::{Map, Value};
        let stop = serde_json::to_value(&self.stop).unwrap_or(Value::Null);
        let mut out = Map::new();
        out.insert("session_id".into(), Value::from(self.session_id.clone()));
        out.insert("exit_code".into(), Value::from(self.exit_code));
        out.insert("child_exit_code".into(), Value::from(self.stop.exit_code));
        if let Value::Object(fields) = &stop {
            for (k, v) in fields {
                if k != "session_id" && k != "exit_code" {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        out.insert("stop".into(), stop);
        out.insert(
            "paths".into(),
            serde_json::to_value(&self.paths).unwrap_or(Value::Null),
        );
        out.insert("stop_written".into(), Value::from(self.stop_written));
        out.insert("discovery_only".into(), Value::from(self.discovery_only));
        out.insert(
            "evidence_errors".into(),
            Value::from(self.evidence_errors.clone()),
        );
        out.insert("proxy_error".into(), Value::from(self.proxy_error.clone()));
        out.insert(
            "signed".into(),
            Value::from(self.signature.as_ref().map(|s| s.signed)),
        );
        out.insert(
            "signature".into(),
            serde_json::to_value(&self.signature).unwrap_or(Value::Null),
        );
        Value::Object(out)
    }
}

impl Serialize for WrapOutcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json_value().serialize(serializer)
    }
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
    fn decision_log_state_precedence() {
        use DecisionLogState as S;
        use SessionEnd::{ClientClosed as Ok_, ProxyError as Err_};
        let f = DecisionLogState::of;
        assert_eq!(f(false, false, false, Err_, false), S::Absent);
        assert_eq!(f(true, false, true, Err_, true), S::Unknown);
        assert_eq!(f(true, true, true, Ok_, true), S::Incomplete);
        assert_eq!(f(true, true, false, Err_, true), S::Incomplete);
        assert_eq!(f(true, true, false, Ok_, true), S::Temporary);
        assert_eq!(f(true, true, false, Ok_, false), S::Complete);
    }

    #[test]
    fn outcome_json_has_no_duplicate_keys_and_separates_the_two_exit_codes() {
        let outcome = WrapOutcome {
            session_id: "s".into(),
            exit_code: 3,
            stop: StopData {
                session_id: "s".into(),
                server_id: "srv".into(),
                server_pid: 1,
                session_context_id: None,
                session_end: SessionEnd::ClientClosed,
                termination: Termination::Exited,
                exit_code: Some(7),
                signal: None,
                core_dumped: None,
                assay_kill_requested: false,
                group_killed: false,
                decision_log: DecisionLogState::Incomplete,
                decision_events_written: Some(1),
                decision_events_dropped: Some(1),
                decision_prefix_sha256: Some("00".into()),
                otlp_export: None,
                assertion_basis: "producer_observation".into(),
                non_claims: NON_CLAIMS.iter().map(|s| s.to_string()).collect(),
            },
            paths: OutputPaths::default(),
            stop_written: true,
            discovery_only: false,
            evidence_errors: vec![],
            proxy_error: None,
            signature: None,
        };
        let text = serde_json::to_string(&outcome).unwrap();
        crate::strict_json::scan(text.as_bytes(), 8).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["exit_code"], 3);
        assert_eq!(v["child_exit_code"], 7);
        assert_eq!(v["stop"]["exit_code"], 7);
        assert_eq!(v["decision_log"], "incomplete");
        assert_eq!(v["signed"], serde_json::Value::Null);
        assert_eq!(v["signature"], serde_json::Value::Null);
    }
}
