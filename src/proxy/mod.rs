//! The proxy session of SPEC §3: validate, load the policy, open the evidence writers, spawn the
//! child, run the two I/O workers, end the session on client EOF or a returned error, run the
//! bounded cleanup, and write the stop record.
#![forbid(unsafe_code)]

pub(crate) mod answers;
mod cancel;
mod client_features;
mod client_io;
mod client_to_server;
mod emitter;
mod endpoint;
pub(crate) mod envelope;
mod governed;
pub(crate) mod governed_lists;
mod instructions;
mod line;
pub(crate) mod message;
mod output;
mod output_schemas;
pub(crate) mod pending;
mod recorder;
mod respond;
mod results_stage;
pub(crate) mod rpc_id;
mod server_input;
mod server_to_client;
mod session_end;
mod shared;
mod stderr_tee;
pub(crate) mod tools_list;
mod undo;
mod workers;

use std::fs::File;

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::{LogMode, SessionPlan, StderrSink, WrapConfig};
use crate::diag::Diag;
use crate::error::ConfigOption;
use crate::error::{Error, ErrorKind, Result};
use crate::evidence::decision_log::{DecisionFormat, DecisionLog, LogAccounting};
use crate::evidence::event::{new_session_id, now_rfc3339};
use crate::evidence::{context, coverage, file, protocol, stop};
use crate::outcome::{
    DecisionLogState, NON_CLAIMS, OutputPaths, SessionEnd, StopData, WrapOutcome,
};
use crate::policy::Policy;
use crate::sys::child::{self, ChildGuard};
use crate::sys::signals::{Forwarding, InstallError, ThreadMask};

use cancel::Cancel;
pub use client_io::ClientIo;
use endpoint::{Direction, Endpoint};
use line::LineReader;
use output::ClientOutput;
use pending::PendingRequests;
use recorder::Recorder;
use server_input::ServerInput;
use session_end::run_workers;
use shared::{LogWriterState, Shared};
use stderr_tee::Tee;
use undo::StartupFiles;

/// Opened before spawn: the decision log writer.
struct OpenedLog {
    file: File,
    path: PathBuf,
    temporary: bool,
    /// Where this invocation's lines begin (the length of an append-mode log when opened).
    start: u64,
}

fn open_log(
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

fn open_stderr(plan: &SessionPlan, created: &mut StartupFiles) -> Result<Option<File>> {
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
fn start_capture(
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
fn open_diagnostics(
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
            let (pipe, tee) = stderr_tee::start(log, host).map_err(|e| {
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
fn server_stderr_without_sink(host_stderr: Option<&File>) -> Result<File> {
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
fn write_context(
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
fn write_coverage(
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
fn remove_temporary_log(log_path: Option<&std::path::Path>, diag: &Diag) {
    if let Some(p) = log_path {
        if let Err(e) = std::fs::remove_file(p) {
            diag.say(&format!(
                "cannot remove temporary decision log {}: {e}",
                p.display()
            ));
        }
    }
}

/// Runs one wrapped MCP session to its end (SPEC §3).
///
/// Validates the whole configuration before anything is spawned or created, then proxies between
/// `io` and the child until the client closes its input (or an I/O error ends the session), runs
/// the bounded cleanup, and writes the requested evidence. When the server's output ends first,
/// `io.output` is flushed and closed; the session then ends when the client closes its input, at
/// its next line (`proxy_error`), or 2 s later. After the client closed its input and no request
/// of it is pending, a server that stays silent for [`WrapConfig::idle_drain`] (1 s by default)
/// is treated as done.
///
/// Every read and write of the session is cancellable: when this returns, every thread it
/// started has ended and none touches `io`'s descriptors any more (SPEC §3.1a).
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
///   the session could not start; the files it had created (and a capture directory it created)
///   are removed again.
/// - [`ErrorKind::StopWrite`]: the session ran but the stop record could not be written; the
///   error carries the [`WrapOutcome`] with the observed child status.
///
/// Other evidence failures (context, decision log, coverage) do not make this return `Err`: they
/// are listed in [`WrapOutcome::evidence_errors`] and make [`WrapOutcome::exit_code`] 3.
pub fn wrap_session(config: &WrapConfig, io: ClientIo) -> Result<WrapOutcome> {
    // This thread writes evidence files and diagnostics: a write past RLIMIT_FSIZE or to a
    // closed stderr pipe must fail, not kill the host (SPEC §4.1). Restored on return.
    let mask = ThreadMask::block_write_signals();
    // Descriptor 2 is the host's stderr only if it is open now and is not the client's stream
    // (SPEC §3.1b): diagnostics go to a duplicate of it, never to the number.
    let host_stderr =
        crate::sys::fd::checked_stderr(&[io.input.as_fd(), io.output.as_fd()]).map(File::from);
    // Prepare: configuration, policy, session id.
    let Prepared {
        plan,
        policy,
        session_id,
        source,
        cancel,
    } = prepare(config)?;
    // Open the evidence. From here on files are created; until the server runs, a failure
    // removes them again (SPEC §10).
    let mut created = StartupFiles::default();
    let (evidence, forwarding, spawned) = match start_server(
        plan,
        &session_id,
        &source,
        &policy,
        &mask,
        host_stderr.as_ref(),
        &mut created,
    ) {
        Ok(started) => started,
        Err(e) => {
            created.remove();
            return Err(e);
        }
    };
    let Evidence {
        plan,
        tee,
        diag,
        log_writer,
        recorder,
        log,
        ..
    } = evidence;
    let pid = spawned.pid;
    let mut guard = ChildGuard(Some(spawned.child));
    let started_at = now_rfc3339();

    // Write the context.
    let mut evidence_errors: Vec<String> = Vec::new();
    // Dry run changes nothing the client sees: no refusal, no hidden tool (docs/decisions.md).
    let hide_refused_tools = policy.hide_refused_tools() && !plan.dry_run;
    let pins_in_effect = policy.pins().is_some() && !plan.dry_run;
    let context_id = plan
        .context_out
        .as_ref()
        .map(|_| context::context_id(&session_id));
    if let Some(e) = write_context(
        &plan,
        &source,
        &session_id,
        pid,
        &started_at,
        &policy,
        hide_refused_tools,
    ) {
        diag.say(&e);
        evidence_errors.push(e);
    }

    // Run the workers to the end of the session and the server's cleanup.
    let client_bytes = Arc::new(AtomicU64::new(0));
    // The server worker's listing events share the log and its `seq` (SPEC §4.1a).
    let event_format = log_writer.is_some().then(|| {
        Mutex::new(DecisionFormat::new(
            &session_id,
            &source,
            policy.sha256(),
            !plan.dry_run,
        ))
    });
    let answers = output_schemas::AnswerStage::new(&policy);
    let shared = Arc::new(Shared {
        output: ClientOutput::new(
            Endpoint::borrowed(io.output, Direction::Write, cancel.clone())
                .with_progress(client_bytes.clone()),
        ),
        policy,
        decision_log: Mutex::new(match log_writer {
            Some(w) => LogWriterState::Open(Box::new(shared::OrderedLog::new(w))),
            None => LogWriterState::Absent,
        }),
        diag: diag.clone(),
        dry_run: plan.dry_run,
        session_message: AtomicBool::new(false),
        tools_list: tools_list::ToolsListWatch::new(hide_refused_tools, pins_in_effect),
        pending: PendingRequests::new(),
        unsolicited: AtomicU64::new(0),
        decision_seq: recorder.counter(),
        event_format,
        server_input: ServerInput::new(),
        answers,
        session_id: session_id.clone(),
    });
    let streams = Streams::new(
        io.input,
        spawned.stdin,
        spawned.stdout,
        &cancel,
        client_bytes,
    )?;
    let signals = forwarding.as_ref().map(|f| f.probe());
    let run = run_session(
        streams, recorder, &shared, &mut guard, &cancel, &plan, signals,
    )?;
    if let Some(tee) = tee {
        // The server is reaped: its stderr reaches end of file now, unless a process it left
        // behind holds it.
        tee.finish(Duration::from_secs(1));
    }
    if run.cleanup.orphans_ended > 0 {
        let n = run.cleanup.orphans_ended;
        diag.say(&format!(
            "ended {n} process{} that had left the server's process group (reparented to this process, its subreaper)",
            if n == 1 { "" } else { "es" }
        ));
    }
    if run.idle_ended {
        diag.say(&format!(
            "the client closed its input and the server wrote nothing for {:.1} s with no request pending: treated as done",
            plan.idle_drain.unwrap_or_default().as_secs_f64()
        ));
    }
    if let Some(f) = &forwarding {
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

    // Settle the stop data; then coverage and the temporary log.
    let stop = settle_stop_data(&plan, &session_id, pid, context_id, &shared, &log, &run);
    if stop.poisoned {
        evidence_errors.push("decision log write failed; the log is incomplete".to_string());
    }
    if let Some(e) = write_coverage(&plan, &session_id, &shared, log.path.as_deref(), log.start) {
        diag.say(&e);
        evidence_errors.push(e);
    }
    if log.temporary {
        remove_temporary_log(log.path.as_deref(), &diag);
    }

    // Write the stop record.
    let discovery_only = !shared.session_message.load(Ordering::Relaxed);
    let outcome = outcome_of(
        &plan,
        &session_id,
        &log,
        stop.data,
        discovery_only,
        evidence_errors,
        &run,
    );
    if run.proxy_error {
        if let Some(msg) = &run.message {
            diag.say(msg);
        }
    }
    write_stop(&plan, &source, &diag, outcome)
}

/// SPEC §3 items 1–2, before anything is created: the checked configuration, the policy, the
/// session id, the event source and the workers' cancel pipe.
struct Prepared {
    plan: SessionPlan,
    policy: Policy,
    session_id: String,
    source: String,
    cancel: Cancel,
}

fn prepare(config: &WrapConfig) -> Result<Prepared> {
    // Relative paths are resolved now, once (SPEC §3.1b).
    let plan = config.plan()?.anchored();
    let policy = crate::config::load_policy(&plan.policy_path)?;
    let session_id = new_session_id()?;
    let source = plan.event_source.clone().unwrap_or_default();
    let cancel = Cancel::new()
        .map_err(|e| Error::new(ErrorKind::Io, format!("cannot create a pipe: {e}")))?;
    Ok(Prepared {
        plan,
        policy,
        session_id,
        source,
        cancel,
    })
}

/// SPEC §3 item 3: the evidence opened before the server is spawned (capture directory,
/// `protocol.json`, stderr sink, decision log).
struct Evidence {
    /// The plan, with this run's capture directory placed under a capture root.
    plan: SessionPlan,
    /// The child's stderr sink.
    stderr_file: Option<File>,
    /// `--server-stderr tee`: the copy of the child's stderr.
    tee: Option<Tee>,
    diag: Arc<Diag>,
    /// The decision-log writer, when a log is kept.
    log_writer: Option<DecisionLog>,
    /// Numbers decisions, and formats their lines when a log is kept.
    recorder: Recorder,
    log: SessionLog,
}

/// Where the decision log of this session is, as opened before spawn.
struct SessionLog {
    path: Option<PathBuf>,
    temporary: bool,
    start: u64,
    initialized: bool,
}

fn open_evidence(
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
            .map(|_| DecisionFormat::new(session_id, source, policy.sha256(), !plan.dry_run)),
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

/// SPEC §3 items 3–4 up to the running server: the evidence opened, the signal forwarding
/// installed — before spawn, so a signal that arrives while the server starts is forwarded too,
/// and kept until `wrap_session` returns, so a signal during cleanup or the stop write cannot
/// kill the wrapper before the record is written — and the server spawned. What it creates is
/// recorded in `created`, for the caller to remove when this fails.
fn start_server(
    plan: SessionPlan,
    session_id: &str,
    source: &str,
    policy: &Policy,
    mask: &ThreadMask,
    host_stderr: Option<&File>,
    created: &mut StartupFiles,
) -> Result<(Evidence, Option<Forwarding>, child::Spawned)> {
    // Forwarding first: a session over the limit is a configuration error that creates nothing.
    let forwarding = install_forwarding(&plan)?;
    let mut evidence = open_evidence(plan, session_id, source, policy, host_stderr, created)?;
    let spawned = spawn_server(
        &evidence.plan,
        evidence.stderr_file.take(),
        mask,
        forwarding.as_ref(),
        &evidence.diag,
    )?;
    Ok((evidence, forwarding, spawned))
}

/// SIGTERM, SIGINT and SIGHUP forwarding, when requested.
fn install_forwarding(plan: &SessionPlan) -> Result<Option<Forwarding>> {
    if plan.forward_signals {
        Forwarding::install().map(Some).map_err(|e| match e {
            InstallError::Full => Error::config(ConfigOption::ForwardSignals, e.to_string()),
            InstallError::Os(_) => Error::new(ErrorKind::Io, format!("forward_signals: {e}")),
        })
    } else {
        Ok(None)
    }
}

/// SPEC §3 item 3: spawns the server, its stderr to the sink (or inherited), and points the
/// signal forwarding at it.
fn spawn_server(
    plan: &SessionPlan,
    stderr_file: Option<File>,
    mask: &ThreadMask,
    forwarding: Option<&Forwarding>,
    diag: &Diag,
) -> Result<child::Spawned> {
    // This thread spawns the server and lives until the session ends: PR_SET_PDEATHSIG (set in
    // the child) fires on the death of the spawning thread (SPEC §3 item 9).
    let mut spawned = child::spawn(&plan.command, stderr_file, &mask.original())?;
    if plan.verbose && spawned.method == child::Method::Fork {
        diag.say("the preferred spawn (clone with CLONE_VM|CLONE_VFORK) was refused; the server was forked");
    }
    if let Some(f) = forwarding {
        spawned.child.forward_signals_to(f.target());
    }
    Ok(spawned)
}

/// The byte streams the two I/O workers move, every one read or written cancellably (SPEC
/// §3.1a), and what the session watches of them.
struct Streams {
    client_input: Endpoint,
    server_stdin: Endpoint,
    server_stdout: Endpoint,
    /// A duplicate of the server's stdout read end (the session polls it for `POLLHUP`).
    server_stdout_probe: crate::sys::fork_close::Tracked<OwnedFd>,
    client_bytes: Arc<AtomicU64>,
}

impl Streams {
    fn new(
        client_input: OwnedFd,
        server_stdin: File,
        server_stdout: File,
        cancel: &Cancel,
        client_bytes: Arc<AtomicU64>,
    ) -> Result<Self> {
        let io_error = |e: std::io::Error| {
            Error::new(
                ErrorKind::Io,
                format!("cannot set up the server's pipes: {e}"),
            )
        };
        let server_stdout_probe = crate::sys::fork_close::Tracked::new(
            server_stdout.try_clone().map_err(io_error)?.into(),
        );
        Ok(Self {
            client_input: Endpoint::borrowed(client_input, Direction::Read, cancel.clone()),
            server_stdin: Endpoint::own_pipe(server_stdin.into(), cancel.clone())
                .map_err(io_error)?,
            server_stdout: Endpoint::own_pipe(server_stdout.into(), cancel.clone())
                .map_err(io_error)?,
            server_stdout_probe,
            client_bytes,
        })
    }
}

/// SPEC §3 items 5 and 7: runs the two I/O workers until the session ends, then the bounded
/// cleanup of the server (§3.1) (which is reaped when this returns).
fn run_session(
    streams: Streams,
    recorder: Recorder,
    shared: &Arc<Shared>,
    guard: &mut ChildGuard,
    cancel: &Cancel,
    plan: &SessionPlan,
    signals: Option<crate::sys::signals::SignalProbe>,
) -> Result<session_end::RunResult> {
    let c2s = client_to_server::ClientWorker {
        reader: LineReader::new(streams.client_input, plan.max_line_bytes, cancel.clone()),
        emitter: {
            shared.server_input.connect(streams.server_stdin);
            emitter::Emitter::new(emitter::ActionRunner::new(shared.clone()))
        },
        recorder,
        shared: shared.clone(),
    };
    let server_bytes = Arc::new(AtomicU64::new(0));
    let s2c = server_to_client::ServerWorker {
        reader: LineReader::new(streams.server_stdout, plan.max_line_bytes, cancel.clone())
            .with_activity(server_bytes.clone()),
        shared: shared.clone(),
    };
    let started = workers::start_both(move || c2s.run(), move || s2c.run());
    let (rx, threads) = match started {
        Ok(started) => started,
        Err(e) => {
            cancel.cancel();
            return Err(Error::new(
                ErrorKind::Io,
                format!("cannot start I/O worker: {e}"),
            ));
        }
    };
    let Some(child) = guard.0.as_mut() else {
        return Err(Error::new(ErrorKind::Internal, "child handle missing"));
    };
    let watch = session_end::Watch {
        shared: shared.clone(),
        server_bytes,
        client_bytes: streams.client_bytes,
        server_stdout: streams.server_stdout_probe,
        threads,
        signals,
    };
    let run = run_workers(&rx, child, cancel, plan, watch);
    // Cleaned up by run_workers: the guard has nothing left to do.
    guard.0 = None;
    let unsolicited = shared.unsolicited.load(Ordering::Relaxed);
    if unsolicited > 0 {
        shared.diag.say(&format!(
            "dropped {unsolicited} unsolicited server responses (answers to no pending client request)"
        ));
    }
    Ok(run)
}

/// The stop record's data (SPEC §4.3), and whether the decision-log writer was poisoned.
struct SettledStop {
    data: StopData,
    poisoned: bool,
}

fn settle_stop_data(
    plan: &SessionPlan,
    session_id: &str,
    pid: u32,
    context_id: Option<String>,
    shared: &Shared,
    log: &SessionLog,
    run: &session_end::RunResult,
) -> SettledStop {
    // The accounting this writer observed; sealed, so nothing can be added to the log after it.
    let accounting: Option<LogAccounting> = shared
        .decision_log
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .seal();
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
        assertion_basis: "producer_observation".to_string(),
        non_claims: NON_CLAIMS.iter().map(|s| (*s).to_string()).collect(),
    };
    SettledStop { data, poisoned }
}

/// The session's outcome before the stop record is written.
fn outcome_of(
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
    }
}

/// The stop record (SPEC §4.3) or, for a discovery-only run, the no-session marker (SPEC §3
/// item 8), and the exit status.
fn write_stop(
    plan: &SessionPlan,
    source: &str,
    diag: &Diag,
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
    outcome.exit_code = outcome.exit_status_rule(stop_error.is_some());
    if let Some(e) = stop_error {
        let msg = format!("{e}; {}", outcome.stop.describe_status());
        outcome.evidence_errors.push(msg.clone());
        return Err(Error::stop_write(msg, outcome));
    }
    Ok(outcome)
}
