//! Resolution of a checked configuration into the [`SessionPlan`] a session runs: the evidence
//! paths (given, or the fixed names inside the capture directory, SPEC §7), how the decision log
//! is kept, where the server's stderr goes, and the durations and bounds in their working types.
//! Nothing here refuses anything: `validate.rs` has run first.

use std::path::PathBuf;
use std::time::Duration;

use super::plan::{LogMode, SessionPlan, StderrSink};
use super::wrap_config::{DEFAULT_IDLE_DRAIN, DEFAULT_LABEL, WrapConfig};
use crate::capture_files::{CONTEXT, COVERAGE, DECISIONS, NO_SESSION, PROTOCOL, STDERR, STOP};

/// Every evidence output of a session, as the configuration gives it or the capture directory
/// fixes it.
#[derive(Debug, Clone)]
pub(super) struct EvidencePaths {
    pub decision_log: Option<PathBuf>,
    /// The decision log must be a new file (always, inside a capture directory).
    pub decision_log_new: bool,
    pub context_out: Option<PathBuf>,
    pub stop_out: Option<PathBuf>,
    pub coverage_out: Option<PathBuf>,
    pub protocol_out: Option<PathBuf>,
    /// A discovery-only run's marker (SPEC §10), one of the capture's files too.
    pub no_session_out: Option<PathBuf>,
    pub stderr: Option<StderrSink>,
}

/// The evidence outputs of `config`: with a capture directory, its fixed file names (a coverage
/// report, when asked for, at its place in the capture; stderr to `proxy-stderr.log` unless
/// given); otherwise the paths given.
pub(super) fn evidence_paths(config: &WrapConfig) -> EvidencePaths {
    let given_stderr = config.stderr.clone().map(StderrSink::Append);
    match &config.capture_dir {
        Some(dir) => EvidencePaths {
            decision_log: Some(dir.join(DECISIONS)),
            decision_log_new: true,
            context_out: Some(dir.join(CONTEXT)),
            stop_out: Some(dir.join(STOP)),
            coverage_out: config.coverage_out.as_ref().map(|_| dir.join(COVERAGE)),
            protocol_out: Some(dir.join(PROTOCOL)),
            no_session_out: Some(dir.join(NO_SESSION)),
            stderr: given_stderr.or_else(|| Some(StderrSink::New(dir.join(STDERR)))),
        },
        None => EvidencePaths {
            decision_log: config.decision_log.clone(),
            decision_log_new: config.decision_log_new,
            context_out: config.session_context_out.clone(),
            stop_out: config.session_stop_out.clone(),
            coverage_out: config.coverage_out.clone(),
            protocol_out: None,
            no_session_out: None,
            stderr: given_stderr,
        },
    }
}

/// The session plan of a checked configuration with its evidence `paths`.
pub(super) fn session_plan(
    config: &WrapConfig,
    paths: EvidencePaths,
    max_line_bytes: usize,
) -> SessionPlan {
    let EvidencePaths {
        decision_log,
        decision_log_new,
        context_out,
        stop_out,
        coverage_out,
        protocol_out,
        no_session_out: _,
        stderr,
    } = paths;
    let log_mode = match (&decision_log, decision_log_new, &coverage_out) {
        (Some(_), true, _) => LogMode::New,
        (Some(_), false, _) => LogMode::Append,
        (None, _, Some(_)) => LogMode::Temporary,
        (None, _, None) => LogMode::Absent,
    };

    SessionPlan {
        command: config.command.clone(),
        policy_path: config.policy.clone(),
        event_source: config.event_source.clone(),
        server_id: config
            .label
            .clone()
            .unwrap_or_else(|| DEFAULT_LABEL.to_string()),
        decision_log,
        log_mode,
        context_out,
        stop_out,
        coverage_out,
        capture_dir: config.capture_dir.clone(),
        capture_root: None,
        protocol_out,
        stderr,
        tee_stderr: config.tee_server_stderr,
        dry_run: config.dry_run,
        drain_timeout: config.drain_timeout.map(Duration::from_secs_f64),
        idle_drain: match config.idle_drain {
            None => Some(DEFAULT_IDLE_DRAIN),
            Some(0.0) => None,
            Some(t) => Some(Duration::from_secs_f64(t)),
        },
        max_line_bytes,
        verbose: config.verbose,
        forward_signals: config.forward_signals,
        sign_key: config.sign_key.clone(),

        otlp_endpoint: config.otlp_endpoint.clone(),
    }
}
