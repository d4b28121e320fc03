//! The proxy session of SPEC §3: validate, load the policy, open the evidence writers, spawn the
//! child, run the two I/O workers, end the session on client EOF or a returned error, run the
//! bounded cleanup, and write the stop record.

mod cancel;
mod canonical;
mod client_to_server;
mod line;
pub(crate) mod message;
mod output;
mod recorder;
mod respond;
mod server_to_client;
mod session_end;
mod tools_list;

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use crate::child::{self, ChildGuard};
use crate::config::{LogMode, Plan, StderrSink, WrapConfig};
use crate::diag::Diag;
use crate::error::{Error, ErrorKind, Result};
use crate::evidence::decision_log::{DecisionLog, LogAccounting};
use crate::evidence::event::{new_session_id, now_rfc3339};
use crate::evidence::{context, coverage, file, protocol, stop};
use crate::outcome::{
    DecisionLogState, NON_CLAIMS, OutputPaths, SessionEnd, StopData, Termination, WrapOutcome,
};
use crate::policy::Policy;
use crate::signals::{Forwarding, ThreadMask, block_write_signals_in_this_thread};

pub(crate) use cancel::Cancel;
use line::{LineError, LineReader};
use output::ClientOutput;
use recorder::Recorder;
use session_end::run_workers;

/// The client's side of a session: the descriptor the proxy reads client messages from and the
/// one it writes responses to. The session owns (and closes) these descriptors; surfaces that are
/// handed borrowed descriptors duplicate them first, so the caller's own descriptors are never
/// closed.
#[derive(Debug)]
pub struct ClientIo {
    /// Client → wrapper.
    pub input: OwnedFd,
    /// Wrapper → client.
    pub output: OwnedFd,
}

impl ClientIo {
    /// Duplicates of this process's stdin and stdout (close-on-exec).
    ///
    /// # Errors
    /// When the descriptors cannot be duplicated.
    pub fn stdio() -> io::Result<Self> {
        Ok(Self {
            input: io::stdin().as_fd().try_clone_to_owned()?,
            output: io::stdout().as_fd().try_clone_to_owned()?,
        })
    }

    /// This process's stdin and stdout, taken for a session: a duplicate of each (close-on-exec)
    /// is returned, and descriptor 1 is pointed at `/dev/null`, so the session's output is the
    /// only reference this process keeps to the client's pipe. When the server's output ends and
    /// the session closes its output, the client sees end of file at once (SPEC §3 item 7).
    /// Meant for a process whose stdout carries nothing but the session (the `assay` CLI).
    ///
    /// # Errors
    /// When the descriptors cannot be duplicated or `/dev/null` cannot be opened.
    pub fn take_stdio() -> io::Result<Self> {
        let io = Self::stdio()?;
        io::stdout().flush()?;
        let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
        nix::unistd::dup2_stdout(&null)?;
        Ok(io)
    }
}

/// Why an I/O worker stopped early.
#[derive(Debug)]
pub(crate) enum WorkerError {
    TooLong(&'static str),
    Cancelled,
    Io(String),
    Panicked,
}

impl WorkerError {
    fn from_line(e: LineError, what: &'static str) -> Self {
        match e {
            LineError::TooLong => WorkerError::TooLong(what),
            LineError::Cancelled => WorkerError::Cancelled,
            LineError::Io(e) => WorkerError::Io(format!("reading {what}: {e}")),
        }
    }

    fn describe(&self, max: usize) -> String {
        match self {
            WorkerError::TooLong(what) => {
                format!("a line of {what} is longer than max_line_bytes ({max}); session ended")
            }
            WorkerError::Cancelled => "cancelled".to_string(),
            WorkerError::Io(m) => m.clone(),
            WorkerError::Panicked => "an I/O worker panicked".to_string(),
        }
    }
}

/// A client line read after the server closed its output (SPEC §3 item 7): it can no longer be
/// forwarded, and the session ends as `proxy_error`. Client bytes mean a session existed
/// (SPEC §3 item 8), so the stop record is written.
pub(crate) fn line_after_server_eof(shared: &Shared) -> WorkerError {
    shared.session_message.store(true, Ordering::Relaxed);
    WorkerError::Io(
        "a client line arrived after the server closed its output; it cannot be forwarded"
            .to_string(),
    )
}

/// State shared by the session and its two workers.
pub(crate) struct Shared {
    pub output: ClientOutput,
    pub policy: Policy,
    pub recorder: Mutex<Recorder>,
    pub diag: Arc<Diag>,
    pub dry_run: bool,
    /// Set by any client message that is not a `server/discover` request (SPEC §3 item 8).
    pub session_message: AtomicBool,
    /// `tools/list` requests awaiting their result (coverage, `hide_refused_tools`).
    pub tools_list: tools_list::ToolsListWatch,
    pub observed_tools: Mutex<BTreeSet<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Worker {
    ClientToServer,
    ServerToClient,
}

type Report = (Worker, std::result::Result<(), WorkerError>);

fn start_worker<F>(name: &str, which: Worker, tx: mpsc::Sender<Report>, f: F) -> io::Result<()>
where
    F: FnOnce() -> std::result::Result<(), WorkerError> + Send + 'static,
{
    thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            // SIGPIPE (a vanished peer) and SIGXFSZ (a decision-log write past RLIMIT_FSIZE)
            // become EPIPE / EFBIG errors in this thread instead of the death of the process
            // (SPEC §4.1); pending ones are discarded when the thread ends. No handler.
            block_write_signals_in_this_thread();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
                .unwrap_or(Err(WorkerError::Panicked));
            let _ = tx.send((which, r));
        })
        .map(|_| ())
}

/// Opened before spawn: the decision log writer.
struct OpenedLog {
    file: File,
    path: PathBuf,
    temporary: bool,
    /// Where this invocation's lines begin (the length of an append-mode log when opened).
    start: u64,
}

fn open_log(plan: &Plan, session_id: &str) -> Result<Option<OpenedLog>> {
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

fn open_stderr(plan: &Plan) -> Result<Option<File>> {
    match &plan.stderr {
        None => Ok(None),
        Some(StderrSink::New(p)) => file::create_new(p)
            .map(Some)
            .map_err(|e| Error::io(p, "cannot create stderr log", &e)),
        Some(StderrSink::Append(p)) => file::open_append_sink(p)
            .map(Some)
            .map_err(|e| Error::io(p, "cannot open stderr log", &e)),
    }
}

/// Runs one wrapped MCP session to its end (SPEC §3).
///
/// Validates the whole configuration before anything is spawned or created, then proxies between
/// `io` and the child until the client closes its input (or an I/O error ends the session), runs
/// the bounded cleanup, and writes the requested evidence. When the server's output ends first,
/// `io.output` is flushed and closed; the session then ends when the client closes its input, at
/// its next line (`proxy_error`), or 2 s later.
///
/// The calling thread spawns the server and must live until this returns: the server gets
/// SIGKILL when that thread dies (`PR_SET_PDEATHSIG`). The server inherits only descriptors 0, 1
/// and 2. While this runs, `SIGPIPE` and `SIGXFSZ` are blocked on the calling thread (restored on
/// return); with [`WrapConfig::forward_signals`] SIGTERM, SIGINT and SIGHUP are forwarded to the
/// server.
///
/// # Errors
/// - [`ErrorKind::Config`]: a SPEC §6 check failed; nothing was spawned or created.
/// - [`ErrorKind::CommandNotFound`] / [`ErrorKind::CommandNotExecutable`] / [`ErrorKind::Io`]:
///   the session could not start.
/// - [`ErrorKind::StopWrite`]: the session ran but the stop record could not be written; the
///   error carries the [`WrapOutcome`] with the observed child status.
///
/// Other evidence failures (context, decision log, coverage) do not make this return `Err`: they
/// are listed in [`WrapOutcome::evidence_errors`] and make [`WrapOutcome::exit_code`] 3.
pub fn wrap_session(config: &WrapConfig, io: ClientIo) -> Result<WrapOutcome> {
    // This thread writes evidence files and diagnostics: a write past RLIMIT_FSIZE or to a
    // closed stderr pipe must fail, not kill the host (SPEC §4.1). Restored on return.
    let mask = ThreadMask::block_write_signals();
    let plan = config.plan()?;
    let policy =
        Policy::load(&plan.policy_path).map_err(|e| Error::config("policy", e.to_string()))?;
    let session_id = new_session_id()?;
    let source = plan.event_source.clone().unwrap_or_default();
    let cancel = Cancel::new()
        .map_err(|e| Error::new(ErrorKind::Io, format!("cannot create a pipe: {e}")))?;

    // From here on files are created.
    let plan = crate::capture_root::place_run(plan, &session_id)?;
    if let Some(dir) = &plan.capture_dir {
        if !dir.is_dir() {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .map_err(|e| Error::io(dir, "cannot create capture directory", &e))?;
        }
    }
    if let Some(p) = &plan.protocol_out {
        protocol::write(p, &session_id, &source, &plan.server_id, &now_rfc3339())?;
    }
    let stderr_file = open_stderr(&plan)?;
    let diag_file =
        match &stderr_file {
            Some(f) => Some(f.try_clone().map_err(|e| {
                Error::new(ErrorKind::Io, format!("cannot duplicate stderr log: {e}"))
            })?),
            None => None,
        };
    let diag = Arc::new(Diag::new(diag_file, plan.verbose));
    let log = open_log(&plan, &session_id)?;
    let log_path = log.as_ref().map(|l| l.path.clone());
    let log_temporary = log.as_ref().is_some_and(|l| l.temporary);
    let log_start = log.as_ref().map_or(0, |l| l.start);
    let log_writer = log.map(|l| {
        DecisionLog::new(
            Box::new(l.file),
            &session_id,
            &source,
            policy.sha256(),
            !plan.dry_run,
        )
    });
    let log_initialized = log_writer.is_some();

    let child_stderr = match stderr_file {
        Some(f) => Stdio::from(f),
        None => Stdio::inherit(),
    };
    // Installed before spawn so that a signal arriving while the server starts is forwarded too;
    // kept until this function returns, so a signal during cleanup or the stop write cannot
    // kill the wrapper before the record is written.
    let mut forwarding = if plan.forward_signals {
        Some(Forwarding::install().map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?)
    } else {
        None
    };
    // This thread spawns the server and lives until the session ends: PR_SET_PDEATHSIG (set in
    // the child) fires on the death of the spawning thread (SPEC §3 item 9).
    let spawned = child::spawn(&plan.command, child_stderr, &mask.original())?;
    let pid = spawned.pid;
    if let Some(f) = forwarding.as_mut() {
        f.target(pid);
    }
    let mut guard = ChildGuard(Some(spawned.child));
    let started_at = now_rfc3339();

    let mut evidence_errors: Vec<String> = Vec::new();
    // Dry run changes nothing the client sees: no refusal, no hidden tool (docs/decisions.md).
    let hide_refused_tools = policy.hide_refused_tools() && !plan.dry_run;
    let context_id = plan
        .context_out
        .as_ref()
        .map(|_| context::context_id(&session_id));
    if let Some(p) = &plan.context_out {
        let data = context::ContextData {
            session_id: &session_id,
            server_id: &plan.server_id,
            server_pid: pid,
            started_at: &started_at,
            policy_sha256: policy.sha256(),
            policy_name: policy.name(),
            decision_log: plan.log_mode.as_str(),
            session_stop_requested: plan.stop_out.is_some(),
            dry_run: plan.dry_run,
            hide_refused_tools,
            command_sha256: &crate::evidence::event::command_sha256(&plan.command),
            producer: crate::evidence::event::PRODUCER,
            assertion_basis: "producer_observation",
            non_claims: NON_CLAIMS,
        };
        if let Err(e) = context::write(p, &source, data) {
            diag.say(&e.to_string());
            evidence_errors.push(e.to_string());
        }
    }

    let shared = Arc::new(Shared {
        output: ClientOutput::new(File::from(io.output)),
        policy,
        recorder: Mutex::new(Recorder::new(log_writer, &session_id)),
        diag: diag.clone(),
        dry_run: plan.dry_run,
        session_message: AtomicBool::new(false),
        tools_list: tools_list::ToolsListWatch::new(
            plan.coverage_out.is_some(),
            hide_refused_tools,
        ),
        observed_tools: Mutex::new(BTreeSet::new()),
    });

    let (tx, rx) = mpsc::channel::<Report>();
    let c2s = client_to_server::ClientWorker {
        reader: LineReader::new(File::from(io.input), plan.max_line_bytes, cancel.clone()),
        to_child: BufWriter::with_capacity(64 * 1024, spawned.stdin),
        shared: shared.clone(),
    };
    let s2c = server_to_client::ServerWorker {
        reader: LineReader::new(spawned.stdout, plan.max_line_bytes, cancel.clone()),
        shared: shared.clone(),
    };
    let started = start_worker(
        "assay-client-to-server",
        Worker::ClientToServer,
        tx.clone(),
        move || c2s.run(),
    )
    .and_then(|()| {
        start_worker(
            "assay-server-to-client",
            Worker::ServerToClient,
            tx,
            move || s2c.run(),
        )
    });
    if let Err(e) = started {
        cancel.cancel();
        return Err(Error::new(
            ErrorKind::Io,
            format!("cannot start I/O worker: {e}"),
        ));
    }

    let Some(child) = guard.0.as_mut() else {
        return Err(Error::new(ErrorKind::Internal, "child handle missing"));
    };
    let run = run_workers(&rx, child, &cancel, &plan);
    drop(guard.0.take());
    if let Some(f) = &forwarding {
        f.server_reaped();
        if let Some(sig) = f.received() {
            diag.say(&format!(
                "signal {sig} received and forwarded to the server"
            ));
        }
    }
    if run.client_too_long {
        // An over-long client line is client bytes: a session existed (SPEC §3 item 8).
        shared.session_message.store(true, Ordering::Relaxed);
    }

    // The accounting this writer observed.
    let accounting: Option<LogAccounting> =
        shared.recorder.lock().ok().and_then(|r| r.accounting());
    let session_end = if run.proxy_error {
        SessionEnd::ProxyError
    } else {
        SessionEnd::ClientClosed
    };
    let poisoned = accounting.as_ref().is_some_and(|a| a.poisoned);
    let decision_log = decision_log_state(
        plan.log_mode,
        log_initialized,
        poisoned,
        session_end,
        log_temporary,
    );
    if poisoned {
        evidence_errors.push("decision log write failed; the log is incomplete".to_string());
    }
    let stop_data = StopData {
        session_id: session_id.clone(),
        server_id: plan.server_id.clone(),
        server_pid: pid,
        session_context_id: context_id,
        session_end,
        termination: run.cleanup.status.termination,
        exit_code: run.cleanup.status.exit_code,
        signal: run.cleanup.status.signal,
        core_dumped: run.cleanup.status.core_dumped,
        assay_kill_requested: run.cleanup.kill_requested,
        decision_log,
        decision_events_written: accounting.as_ref().map(|a| a.written),
        decision_events_dropped: accounting.as_ref().map(|a| a.dropped),
        decision_prefix_sha256: accounting.as_ref().map(|a| a.prefix_sha256.clone()),
        assertion_basis: "producer_observation".to_string(),
        non_claims: NON_CLAIMS.iter().map(|s| (*s).to_string()).collect(),
    };

    if let Some(out) = &plan.coverage_out {
        let observed = shared
            .observed_tools
            .lock()
            .map(|o| o.clone())
            .unwrap_or_default();
        if let Err(e) = coverage::write(
            out,
            &session_id,
            log_path.as_deref().map(|p| (p, log_start)),
            &shared.policy.declared_tools(),
            &observed,
        ) {
            diag.say(&e.to_string());
            evidence_errors.push(e.to_string());
        }
    }
    if log_temporary {
        if let Some(p) = &log_path {
            if let Err(e) = std::fs::remove_file(p) {
                diag.say(&format!(
                    "cannot remove temporary decision log {}: {e}",
                    p.display()
                ));
            }
        }
    }

    let discovery_only = !shared.session_message.load(Ordering::Relaxed);
    let mut outcome = WrapOutcome {
        session_id: session_id.clone(),
        exit_code: 0,
        paths: OutputPaths {
            decision_log: if log_temporary { None } else { log_path },
            session_context: plan.context_out.clone(),
            session_stop: plan.stop_out.clone(),
            coverage: plan.coverage_out.clone(),
            protocol: plan.protocol_out.clone(),
            capture_dir: plan.capture_dir.clone(),
            no_session: None,
        },
        stop: stop_data,
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
    };
    if run.proxy_error {
        if let Some(msg) = &run.message {
            diag.say(msg);
        }
    }

    let mut stop_error = None;
    if let Some(p) = &plan.stop_out {
        if discovery_only {
            diag.say("discovery-only run: no session existed, no stop record written");
            crate::evidence::no_session::record(&plan, &session_id, &diag, &mut outcome);
        } else {
            match stop::write(p, &source, &outcome.stop) {
                Ok(()) => outcome.stop_written = true,
                Err(e) => stop_error = Some(e),
            }
        }
    }
    outcome.exit_code = exit_status(&outcome, stop_error.is_some());
    if let Some(e) = stop_error {
        let msg = format!("{e}; {}", outcome.stop.describe_status());
        outcome.evidence_errors.push(msg.clone());
        return Err(Error::stop_write(msg, outcome));
    }
    Ok(outcome)
}

/// The stop record's `decision_log` (SPEC §4.3), first match wins: no log and none temporary →
/// `absent`; requested but never initialized → `unknown`; poisoned or `proxy_error` →
/// `incomplete`; not retained → `temporary`; otherwise `complete`.
fn decision_log_state(
    mode: LogMode,
    initialized: bool,
    poisoned: bool,
    session_end: SessionEnd,
    temporary: bool,
) -> DecisionLogState {
    if mode == LogMode::Absent {
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

/// The `assay mcp wrap` exit status rule of SPEC §10.
fn exit_status(outcome: &WrapOutcome, stop_failed: bool) -> i32 {
    let s = &outcome.stop;
    if stop_failed
        || s.session_end == SessionEnd::ProxyError
        || s.termination == Termination::Unknown
        || !outcome.evidence_errors.is_empty()
    {
        return 3;
    }
    match (s.termination, s.exit_code, s.signal) {
        (Termination::Exited, Some(code), _) => code,
        (Termination::Signaled, _, Some(sig)) => 128 + sig,
        _ => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_log_state_precedence() {
        use DecisionLogState as S;
        use SessionEnd::{ClientClosed as Ok_, ProxyError as Err_};
        let f = decision_log_state;
        assert_eq!(f(LogMode::Absent, false, false, Err_, false), S::Absent);
        assert_eq!(f(LogMode::New, false, true, Err_, true), S::Unknown);
        assert_eq!(f(LogMode::Temporary, true, true, Ok_, true), S::Incomplete);
        assert_eq!(
            f(LogMode::Temporary, true, false, Err_, true),
            S::Incomplete
        );
        assert_eq!(f(LogMode::Temporary, true, false, Ok_, true), S::Temporary);
        assert_eq!(f(LogMode::New, true, false, Ok_, false), S::Complete);
        assert_eq!(f(LogMode::Append, true, false, Ok_, false), S::Complete);
    }
}
