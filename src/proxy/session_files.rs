//! The session's evidence files (SPEC §3 items 3, 9–10; §4): opened before the server is
//! spawned (the capture directory and `protocol.json`, the server's stderr sink, the decision
//! log) and written after it ended (the context, coverage, the stop record or the no-session
//! marker). What is created before spawn is recorded in [`StartupFiles`], removed again when the
//! session cannot start.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;

use super::recorder::Recorder;
use super::session_end;
use super::shared::Shared;
use super::signing::{Signer, sign_at_stop};
use super::stderr_tee::Tee;
use super::undo::StartupFiles;
use crate::config::{LogMode, SessionPlan, StderrSink};
use crate::diag::Diag;
use crate::error::{Error, ErrorKind, Result};
use crate::evidence::decision_log::{DecisionLog, LogAccounting};
use crate::evidence::event::now_rfc3339;
use crate::evidence::lazy_format::LazyFormat;
use crate::evidence::{context, coverage, file, protocol, stop};
use crate::outcome::{
    DecisionLogState, NON_CLAIMS, OutputPaths, SessionEnd, StopData, WrapOutcome,
};
use crate::policy::Policy;

/// Opened before spawn: the decision log writer.
pub(super) struct OpenedLog {
    pub(super) file: File,
    pub(super) path: PathBuf,
    pub(super) temporary: bool,
    /// Where this invocation's lines begin (the length of an append-mode log when opened).
    pub(super) start: u64,
}

pub(super) fn open_log(
    plan: &SessionPlan,
    session_id: &str,
    created: &mut StartupFiles,
) -> Result<Option<OpenedLog>> {
    let (path, temporary) = match (plan.log_mode, &plan.decision_log) {
        (LogMode::Absent, _) => return Ok(None),
        (LogMode::Temporary, _) => (
            std::env::temp_dir().join(format!("assay-decisions-{session_id}.ndjson")),
            true,
        ),
        (_, Some(p)) => (p.clone(), false),
        (_, None) => return Ok(None),
    };
    let opened = if plan.log_mode == LogMode::Append {
        file::open_append(&path)
    } else {
        file::create_new(&path)
    };
    let file = opened.map_err(|e| Error::io(&path, "cannot open decision log", &e))?;
    if plan.log_mode != LogMode::Append {
        created.file(&path);
    }
    let start = file
        .metadata()
        .map_err(|e| Error::io(&path, "cannot inspect decision log", &e))?
        .len();
    Ok(Some(OpenedLog {
        file,
        path,
        temporary,
        start,
    }))
}

pub(super) fn open_stderr(plan: &SessionPlan, created: &mut StartupFiles) -> Result<Option<File>> {
    match &plan.stderr {
        None => Ok(None),
        Some(StderrSink::New(p)) => {
            let f =
                file::create_new(p).map_err(|e| Error::io(p, "cannot create stderr log", &e))?;
            created.file(p);
            Ok(Some(f))
        }
        Some(StderrSink::Append(p)) => file::open_append_sink(p)
            .map(Some)
            .map_err(|e| Error::io(p, "cannot open stderr log", &e)),
    }
}

/// SPEC §3 item 2: the capture directory (0700, when it does not exist yet) and its
/// `protocol.json`, the first files a session creates.
pub(super) fn start_capture(
    plan: &SessionPlan,
    session_id: &str,
    source: &str,
    created: &mut StartupFiles,
) -> Result<()> {
    if let Some(dir) = &plan.capture_dir {
        if !dir.is_dir() {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .map_err(|e| Error::io(dir, "cannot create capture directory", &e))?;
            created.dir(dir);
        }
    }
    if let Some(p) = &plan.protocol_out {
        protocol::write(p, session_id, source, &plan.server_id, &now_rfc3339())?;
        created.file(p);
    }
    Ok(())
}

/// The child's stderr sink, the wrapper's diagnostics writing to the same file, and with
/// `tee_stderr` the thread that copies the child's stderr into the sink and to our stderr.
///
/// Without a sink of its own, the diagnostics and the server's stderr go to the host's stderr
/// when it was checked to be one (`host_stderr`), else nowhere (`/dev/null` for the server):
/// never to whatever a host that closed its standard descriptors has numbered 2 (SPEC §3.1b).
pub(super) fn open_diagnostics(
    plan: &SessionPlan,
    created: &mut StartupFiles,
    host_stderr: Option<&File>,
) -> Result<(Option<File>, Arc<Diag>, Option<Tee>)> {
    let stderr_file = open_stderr(plan, created)?;
    let duplicate = |f: &File, what: &str| {
        f.try_clone()
            .map_err(|e| Error::new(ErrorKind::Io, format!("cannot duplicate {what}: {e}")))
    };
    let diag_file = match (&stderr_file, host_stderr) {
        (Some(f), _) => Some(duplicate(f, "stderr log")?),
        (None, Some(h)) => Some(duplicate(h, "stderr")?),
        (None, None) => None,
    };
    let (stderr_file, tee) = match stderr_file {
        Some(log) if plan.tee_stderr => {
            let host = host_stderr.map(|h| duplicate(h, "stderr")).transpose()?;
            let (pipe, tee) = super::stderr_tee::start(log, host).map_err(|e| {
                Error::new(ErrorKind::Io, format!("cannot start the stderr copy: {e}"))
            })?;
            (Some(pipe), Some(tee))
        }
        Some(log) => (Some(log), None),
        None => (Some(server_stderr_without_sink(host_stderr)?), None),
    };
    Ok((
        stderr_file,
        Arc::new(Diag::new(diag_file, plan.verbose)),
        tee,
    ))
}

/// The server's stderr when no sink is configured: the host's stderr (checked), else
/// `/dev/null`.
pub(super) fn server_stderr_without_sink(host_stderr: Option<&File>) -> Result<File> {
    let io = |e: std::io::Error| {
        Error::new(
            ErrorKind::Io,
            format!("cannot set up the server's stderr: {e}"),
        )
    };
    match host_stderr {
        Some(h) => h.try_clone().map_err(io),
        None => std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open("/dev/null")
            .and_then(crate::sys::fd::file_above_stdio)
            .map_err(io),
    }
}

/// The session-context event (SPEC §4.2), once the server is spawned; the error line when the
/// write failed (an evidence error, not the end of the session).
pub(super) fn write_context(
    plan: &SessionPlan,
    source: &str,
    session_id: &str,
    pid: u32,
    started_at: &str,
    policy: &Policy,
    hide_refused_tools: bool,
) -> Option<String> {
    let p = plan.context_out.as_ref()?;
    let data = context::ContextData {
        session_id,
        server_id: &plan.server_id,
        server_pid: pid,
        started_at,
        policy_sha256: policy.sha256(),
        policy_name: policy.name(),
        decision_log: plan.log_mode.as_str(),
        session_stop_requested: plan.stop_out.is_some(),
        dry_run: plan.dry_run,
        hide_refused_tools,
        pins_sha256: policy.pins().map(crate::pins_file::Pins::sha256),
        governed: policy.governed(),
        record_arguments: policy.record_arguments(),
        command_sha256: &crate::evidence::event::command_sha256(&plan.command),
        producer: crate::evidence::event::PRODUCER,
        assertion_basis: "producer_observation",
        non_claims: NON_CLAIMS,
    };
    context::write(p, source, data).err().map(|e| e.to_string())
}

/// The coverage report (SPEC §4.4), after the session; the error line when the write failed.
pub(super) fn write_coverage(
    plan: &SessionPlan,
    session_id: &str,
    shared: &Shared,
    log_path: Option<&std::path::Path>,
    log_start: u64,
) -> Option<String> {
    let out = plan.coverage_out.as_ref()?;
    let observed = shared.tools_list.observed_names();
    coverage::write(
        out,
        session_id,
        log_path.map(|p| (p, log_start)),
        &shared.policy.declared_tools(),
        &observed,
    )
    .err()
    .map(|e| e.to_string())
}

/// A coverage-only decision log is not retained (SPEC §4.3 `temporary`).
pub(super) fn remove_temporary_log(log_path: Option<&std::path::Path>, diag: &Diag) {
    if let Some(p) = log_path {
        if let Err(e) = std::fs::remove_file(p) {
            diag.say(&format!(
                "cannot remove temporary decision log {}: {e}",
                p.display()
            ));
        }
    }
}

/// SPEC §3 item 3: the evidence opened before the server is spawned (capture directory,
/// `protocol.json`, stderr sink, decision log).
pub(super) struct Evidence {
    /// The plan, with this run's capture directory placed under a capture root.
    pub(super) plan: SessionPlan,
    /// The child's stderr sink.
    pub(super) stderr_file: Option<File>,
    /// `--server-stderr tee`: the copy of the child's stderr.
    pub(super) tee: Option<Tee>,
    pub(super) diag: Arc<Diag>,
    /// The decision-log writer, when a log is kept.
    pub(super) log_writer: Option<DecisionLog>,
    /// Numbers decisions, and formats their lines when a log is kept.
    pub(super) recorder: Recorder,
    pub(super) log: SessionLog,
}

/// Where the decision log of this session is, as opened before spawn.
pub(super) struct SessionLog {
    pub(super) path: Option<PathBuf>,
    pub(super) temporary: bool,
    pub(super) start: u64,
    pub(super) initialized: bool,
}

pub(super) fn open_evidence(
    plan: SessionPlan,
    session_id: &str,
    source: &str,
    policy: &Policy,
    host_stderr: Option<&File>,
    created: &mut StartupFiles,
) -> Result<Evidence> {
    let new_run_dir = plan.capture_root.is_some();
    let (plan, created_root) = crate::capture_root::place_run(plan, session_id, host_stderr)?;
    if let (true, Some(dir)) = (new_run_dir, &plan.capture_dir) {
        created.dir(dir);
    }
    if let Some(root) = &created_root {
        created.root(root);
    }
    start_capture(&plan, session_id, source, created)?;
    let (stderr_file, diag, tee) = open_diagnostics(&plan, created, host_stderr)?;
    let log = open_log(&plan, session_id, created)?;
    let path = log.as_ref().map(|l| l.path.clone());
    let temporary = log.as_ref().is_some_and(|l| l.temporary);
    let start = log.as_ref().map_or(0, |l| l.start);
    let recorder = Recorder::new(
        log.as_ref()
            .map(|_| LazyFormat::new(session_id, source, policy.digest(), !plan.dry_run)),
        session_id,
    );
    // Not kept by a fork of the host (SPEC §3.1b).
    let log_writer =
        log.map(|l| DecisionLog::new(Box::new(crate::sys::fork_close::Tracked::new(l.file))));
    let initialized = log_writer.is_some();
    Ok(Evidence {
        plan,
        stderr_file,
        tee,
        diag,
        log_writer,
        recorder,
        log: SessionLog {
            path,
            temporary,
            start,
            initialized,
        },
    })
}

/// The stop record's data (SPEC §4.3), and whether the decision-log writer was poisoned.
pub(super) struct SettledStop {
    pub(super) data: StopData,
    pub(super) poisoned: bool,
}

pub(super) fn settle_stop_data(
    plan: &SessionPlan,
    session_id: &str,
    pid: u32,
    context_id: Option<String>,
    shared: &Shared,
    log: &SessionLog,
    run: &session_end::RunResult,
) -> SettledStop {
    // The accounting this writer observed; sealed, so nothing can be added to the log after it.
    let accounting: Option<LogAccounting> = shared.decision_log.seal();
    let session_end = if run.proxy_error {
        SessionEnd::ProxyError
    } else {
        SessionEnd::ClientClosed
    };
    let poisoned = accounting.as_ref().is_some_and(|a| a.poisoned);
    let decision_log = DecisionLogState::of(
        plan.log_mode != LogMode::Absent,
        log.initialized,
        poisoned,
        session_end,
        log.temporary,
    );
    let data = StopData {
        session_id: session_id.to_string(),
        server_id: plan.server_id.clone(),
        server_pid: pid,
        session_context_id: context_id,
        session_end,
        termination: run.cleanup.status.termination,
        exit_code: run.cleanup.status.exit_code,
        signal: run.cleanup.status.signal,
        core_dumped: run.cleanup.status.core_dumped,
        assay_kill_requested: run.cleanup.kill_requested,
        group_killed: run.cleanup.group_killed,
        decision_log,
        decision_events_written: accounting.as_ref().map(|a| a.written),
        decision_events_dropped: accounting.as_ref().map(|a| a.dropped),
        decision_prefix_sha256: accounting.as_ref().map(|a| a.prefix_sha256.clone()),
        otlp_export: None,
        assertion_basis: "producer_observation".to_string(),
        non_claims: NON_CLAIMS.iter().map(|s| (*s).to_string()).collect(),
    };
    SettledStop { data, poisoned }
}

/// The session's outcome before the stop record is written.
pub(super) fn outcome_of(
    plan: &SessionPlan,
    session_id: &str,
    log: &SessionLog,
    stop: StopData,
    discovery_only: bool,
    evidence_errors: Vec<String>,
    run: &session_end::RunResult,
) -> WrapOutcome {
    WrapOutcome {
        session_id: session_id.to_string(),
        exit_code: 0,
        paths: OutputPaths {
            decision_log: if log.temporary {
                None
            } else {
                log.path.clone()
            },
            session_context: plan.context_out.clone(),
            session_stop: plan.stop_out.clone(),
            coverage: plan.coverage_out.clone(),
            protocol: plan.protocol_out.clone(),
            capture_dir: plan.capture_dir.clone(),
            no_session: None,
            attestation: None,
        },
        stop,
        stop_written: false,
        discovery_only,
        evidence_errors,
        proxy_error: if run.proxy_error {
            Some(
                run.message
                    .clone()
                    .unwrap_or_else(|| "I/O worker failed".to_string()),
            )
        } else {
            None
        },
        signature: None,
    }
}

/// The stop record (SPEC §4.3) or, for a discovery-only run, the no-session marker (SPEC §3
/// item 8), and the exit status.
pub(super) fn write_stop(
    plan: &SessionPlan,
    source: &str,
    diag: &Diag,
    signer: Option<Signer>,
    mut outcome: WrapOutcome,
) -> Result<WrapOutcome> {
    let mut stop_error = None;
    if let Some(p) = &plan.stop_out {
        if outcome.discovery_only {
            diag.say("discovery-only run: no session existed, no stop record written");
            let session_id = outcome.session_id.clone();
            crate::evidence::no_session::record(plan, &session_id, diag, &mut outcome);
        } else {
            match stop::write(p, source, &outcome.stop) {
                Ok(()) => outcome.stop_written = true,
                Err(e) => stop_error = Some(e),
            }
        }
    }
    if let Some(signer) = signer {
        sign_at_stop(plan, signer, diag, &mut outcome);
    }
    outcome.exit_code = outcome.exit_status_rule(stop_error.is_some());
    if let Some(e) = stop_error {
        let msg = format!("{e}; {}", outcome.stop.describe_status());
        outcome.evidence_errors.push(msg.clone());
        return Err(Error::stop_write(msg, outcome));
    }
    Ok(outcome)
}
