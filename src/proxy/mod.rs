//! The proxy session of SPEC §3: validate, load the policy, open the evidence writers, spawn the
//! child, run the two I/O workers, end the session on client EOF or a returned error, run the
//! bounded cleanup, and write the stop record.
#![forbid(unsafe_code)]

pub(crate) mod answers;
mod cancel;
mod client_features;
mod client_io;
mod client_judge;
mod client_to_server;
mod emitter;
mod endpoint;
pub(crate) mod envelope;
mod governed;
pub(crate) mod governed_lists;
mod instructions;
mod line;
pub(crate) mod line_marks;
mod live_export;
pub(crate) mod message;
mod ordered_log;
mod output;
mod output_schemas;
mod oversized;
pub(crate) mod pending;
mod pending_lists;
mod recorder;
mod respond;
mod results_stage;
pub(crate) mod rpc_id;
mod server_input;
mod server_to_client;
mod session_end;
mod session_files;
mod shared;
mod signing;
mod stderr_tee;
pub(crate) mod stream_scan;
pub(crate) mod tools_list;
mod undo;
mod workers;

use std::fs::File;

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::attestation::SigningKey;
use crate::config::{SessionPlan, WrapConfig};
use crate::diag::Diag;
use crate::error::ConfigOption;
use crate::error::{Error, ErrorKind, Result};
use crate::evidence::context;
use crate::evidence::event::{new_session_id, now_rfc3339};
use crate::evidence::lazy_format::LazyFormat;
use crate::outcome::WrapOutcome;
use crate::policy::Policy;
use crate::sys::child::{self, ChildGuard};
use crate::sys::signals::{Forwarding, InstallError, ThreadMask};

use cancel::Cancel;
pub use client_io::ClientIo;
use endpoint::{Direction, Endpoint};
use line::LineReader;
use ordered_log::LogWriterState;
use output::ClientOutput;
use pending::PendingRequests;
use recorder::Recorder;
use server_input::ServerInput;
use session_end::run_workers;
use session_files::{
    Evidence, open_evidence, outcome_of, remove_temporary_log, settle_stop_data, write_context,
    write_coverage, write_stop,
};
use shared::Shared;
use signing::Signer;
use stderr_tee::Tee;
use undo::StartupFiles;

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
        signer,
        session_id,
        source,
        cancel,
    } = prepare(config)?;
    // The live exporter first: a thread that cannot start fails the session before anything is
    // created.
    let mut live = live_export::start(&plan)?;
    // Open the evidence. From here on files are created; until the server runs, a failure
    // removes them again (SPEC §10).
    let (evidence, forwarding, spawned) = start_or_undo(
        plan,
        &session_id,
        &source,
        &policy,
        &mask,
        host_stderr.as_ref(),
    )?;
    let Evidence {
        plan,
        tee,
        diag,
        mut log_writer,
        recorder,
        log,
        ..
    } = evidence;
    let pid = spawned.pid;
    let mut guard = ChildGuard(Some(spawned.child));
    let started_at = now_rfc3339();
    let (context_id, evidence_errors) = context_written(
        &plan,
        &source,
        &session_id,
        pid,
        &started_at,
        &policy,
        &diag,
    );
    // The follower reads the context just written for what the log's lines must say.
    let follow = attach_taps(&plan, live.as_mut(), signer.is_some(), log_writer.as_mut());

    // Run the workers to the end of the session and the server's cleanup.
    let client_bytes = Arc::new(AtomicU64::new(0));
    let output = Endpoint::borrowed(io.output, Direction::Write, cancel.clone());
    let shared = shared_state(
        &plan,
        policy,
        ClientOutput::new(output.with_progress(client_bytes.clone())),
        log_writer,
        &diag,
        &recorder,
        &session_id,
        &source,
    );
    let streams = Streams::new(
        io.input,
        spawned.stdin,
        spawned.stdout,
        &cancel,
        client_bytes,
    )?;
    let signals = forwarding.as_ref().map(Forwarding::probe);
    let run = run_session(
        streams, recorder, &shared, &mut guard, &cancel, &plan, signals,
    )?;
    after_run(tee, &diag, &run, forwarding.as_ref(), &plan, &shared);

    finish(
        &plan,
        &source,
        &diag,
        Ended {
            session_id: &session_id,
            pid,
            context_id,
            shared: &shared,
            log: &log,
            run: &run,
            signer: signer.map(|key| Signer::new(key, shared.policy.sha256(), follow)),
            live,
            started_at: &started_at,
        },
        evidence_errors,
    )
}

/// The decision log's taps: the live exporter's, and with a signing key the follower that reads
/// the capture's log as it is written (SPEC §4.5), returned for the signer.
fn attach_taps(
    plan: &SessionPlan,
    live: Option<&mut live_export::Live>,
    signing: bool,
    mut log: Option<&mut crate::evidence::decision_log::DecisionLog>,
) -> Option<signing::Follow> {
    if let Some(live) = live {
        live.attach(log.as_deref_mut());
    }
    signing.then(|| signing::follow(plan, log)).flatten()
}

/// [`start_server`] with the files it creates recorded, and removed again when it fails.
fn start_or_undo(
    plan: SessionPlan,
    session_id: &str,
    source: &str,
    policy: &Policy,
    mask: &ThreadMask,
    host_stderr: Option<&File>,
) -> Result<(Evidence, Option<Forwarding>, child::Spawned)> {
    let mut created = StartupFiles::default();
    start_server(
        plan,
        session_id,
        source,
        policy,
        mask,
        host_stderr,
        &mut created,
    )
    .inspect_err(|_| created.remove())
}

/// The session context written (SPEC §4.2) as the server starts: its id (when one is written),
/// and the evidence errors so far (its write failure, said on stderr too).
fn context_written(
    plan: &SessionPlan,
    source: &str,
    session_id: &str,
    pid: u32,
    started_at: &str,
    policy: &Policy,
    diag: &Diag,
) -> (Option<String>, Vec<String>) {
    let mut evidence_errors: Vec<String> = Vec::new();
    // Dry run changes nothing the client sees: no refusal, no hidden tool (docs/decisions.md).
    let hide_refused_tools = policy.hide_refused_tools() && !plan.dry_run;
    let context_id = plan
        .context_out
        .as_ref()
        .map(|_| context::context_id(session_id));
    if let Some(e) = write_context(
        plan,
        source,
        session_id,
        pid,
        started_at,
        policy,
        hide_refused_tools,
    ) {
        diag.say(&e);
        evidence_errors.push(e);
    }
    (context_id, evidence_errors)
}

/// The state both workers share: the client output, the policy, the decision log and the
/// listing events' format (they share its `seq`, SPEC §4.1a), the listing filter, the pending
/// requests.
#[allow(clippy::too_many_arguments)]
fn shared_state(
    plan: &SessionPlan,
    policy: Policy,
    output: ClientOutput,
    log_writer: Option<crate::evidence::decision_log::DecisionLog>,
    diag: &Arc<Diag>,
    recorder: &Recorder,
    session_id: &str,
    source: &str,
) -> Arc<Shared> {
    // Dry run changes nothing the client sees: no refusal, no hidden tool (docs/decisions.md).
    let hide_refused_tools = policy.hide_refused_tools() && !plan.dry_run;
    let pins_in_effect = policy.pins().is_some() && !plan.dry_run;
    let answers = output_schemas::AnswerStage::new(&policy);
    let kept = definitions_kept(plan, &policy, diag);
    let event_format = log_writer.is_some().then(|| {
        Mutex::new(LazyFormat::new(
            session_id,
            source,
            policy.digest(),
            !plan.dry_run,
        ))
    });
    Arc::new(Shared {
        output,
        policy,
        decision_log: ordered_log::SharedLog::new(match log_writer {
            Some(w) => LogWriterState::Open(Box::new(ordered_log::OrderedLog::new(w))),
            None => LogWriterState::Absent,
        }),
        diag: diag.clone(),
        dry_run: plan.dry_run,
        session_message: AtomicBool::new(false),
        tools_list: tools_list::ToolsListWatch::new(hide_refused_tools, pins_in_effect)
            .keeping(kept),
        pending: PendingRequests::new(),
        unsolicited: AtomicU64::new(0),
        decision_seq: recorder.counter(),
        event_format,
        server_input: Arc::new(ServerInput::new()),
        answers,
        session_id: session_id.to_string(),
    })
}

/// The keeper of the tool definitions a capture keeps (`record_definitions: true` with a
/// capture directory), if any.
fn definitions_kept(
    plan: &SessionPlan,
    policy: &Policy,
    diag: &Arc<Diag>,
) -> Option<crate::evidence::tool_definitions::Keeper> {
    let dir = plan
        .capture_dir
        .as_ref()
        .filter(|_| policy.record_definitions())?;
    Some(crate::evidence::tool_definitions::Keeper::new(
        dir.join(crate::capture_files::DEFINITIONS),
        diag.clone(),
    ))
}

/// After the workers and the cleanup: the server's stderr copy finished, how the session ran
/// said, and an over-long client line counted as a session (SPEC §3 item 8: client bytes).
fn after_run(
    tee: Option<Tee>,
    diag: &Diag,
    run: &session_end::RunResult,
    forwarding: Option<&Forwarding>,
    plan: &SessionPlan,
    shared: &Shared,
) {
    if let Some(tee) = tee {
        // The server is reaped: its stderr reaches end of file now, unless a process it left
        // behind holds it.
        tee.finish(Duration::from_secs(1));
    }
    say_how_it_ran(diag, run, forwarding, plan);
    if run.client_too_long {
        shared.session_message.store(true, Ordering::Relaxed);
    }
}

/// Says on stderr how the session's end came about, where that is not the usual course.
fn say_how_it_ran(
    diag: &Diag,
    run: &session_end::RunResult,
    forwarding: Option<&Forwarding>,
    plan: &SessionPlan,
) {
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
    if let Some(sig) = forwarding.and_then(Forwarding::received) {
        diag.say(&format!(
            "signal {sig} received and forwarded to the server"
        ));
    }
}

/// What the ended session leaves for its evidence.
struct Ended<'s> {
    session_id: &'s str,
    pid: u32,
    context_id: Option<String>,
    shared: &'s Shared,
    log: &'s session_files::SessionLog,
    run: &'s session_end::RunResult,
    /// Signs the capture after the stop record (SPEC §4.5).
    signer: Option<Signer>,
    /// The live OTLP exporter (`--otlp-endpoint`), ended before the stop record is written.
    live: Option<live_export::Live>,
    started_at: &'s str,
}

/// SPEC §3 items 9–10 after the cleanup: the stop data settled, coverage written, a temporary
/// log removed, then the stop record (or the no-session marker) and the exit status.
fn finish(
    plan: &SessionPlan,
    source: &str,
    diag: &Diag,
    ended: Ended<'_>,
    mut evidence_errors: Vec<String>,
) -> Result<WrapOutcome> {
    let Ended {
        session_id,
        pid,
        context_id,
        shared,
        log,
        run,
        signer,
        live,
        started_at,
    } = ended;
    // Settle the stop data; then coverage and the temporary log.
    let mut stop = settle_stop_data(plan, session_id, pid, context_id, shared, log, run);
    if let Some(live) = live {
        live.finish(started_at, &shared.policy, &mut stop.data, diag);
    }
    if stop.poisoned {
        evidence_errors.push("decision log write failed; the log is incomplete".to_string());
    }
    if let Some(e) = write_coverage(plan, session_id, shared, log.path.as_deref(), log.start) {
        diag.say(&e);
        evidence_errors.push(e);
    }
    if log.temporary {
        remove_temporary_log(log.path.as_deref(), diag);
    }

    // Write the stop record.
    let discovery_only = !shared.session_message.load(Ordering::Relaxed);
    let outcome = outcome_of(
        plan,
        session_id,
        log,
        stop.data,
        discovery_only,
        evidence_errors,
        run,
    );
    if run.proxy_error {
        if let Some(msg) = &run.message {
            diag.say(msg);
        }
    }
    write_stop(plan, source, diag, signer, outcome)
}

/// SPEC §3 items 1–2, before anything is created: the checked configuration, the policy, the
/// session id, the event source and the workers' cancel pipe.
struct Prepared {
    plan: SessionPlan,
    policy: Policy,
    /// The key that signs the capture after the stop record (SPEC §4.5).
    signer: Option<SigningKey>,
    session_id: String,
    source: String,
    cancel: Cancel,
}

fn prepare(config: &WrapConfig) -> Result<Prepared> {
    // Relative paths are resolved now, once (SPEC §3.1b).
    let plan = config.plan()?.anchored();
    live_export::check_otlp_endpoint(plan.otlp_endpoint.as_deref())?;
    let policy = crate::config::load_policy(&plan.policy_path)?;
    let signer = plan
        .sign_key
        .as_deref()
        .map(signing::load_sign_key)
        .transpose()?;
    let session_id = new_session_id()?;
    let source = plan.event_source.clone().unwrap_or_default();
    let cancel = Cancel::new()
        .map_err(|e| Error::new(ErrorKind::Io, format!("cannot create a pipe: {e}")))?;
    Ok(Prepared {
        plan,
        policy,
        signer,
        session_id,
        source,
        cancel,
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
        reader: LineReader::new(streams.client_input, plan.max_line_bytes, cancel.clone())
            .idle_only_before_blocking(),
        emitter: {
            shared.server_input.connect(streams.server_stdin);
            emitter::Emitter::new(emitter::ActionRunner::new(shared.clone()))
        },
        recorder,
        shared: shared.clone(),
    };
    let server_bytes = Arc::new(AtomicU64::new(0));
    let s2c = server_to_client::ServerWorker {
        reader: streamed_answers(
            shared,
            LineReader::new(streams.server_stdout, plan.max_line_bytes, cancel.clone())
                .with_activity(server_bytes.clone()),
        ),
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
    // Every wait is cancelled and the server reaped: the answers' writer ends at once.
    shared.server_input.end_answers();
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

/// The server's line reader, streaming past a line longer than `results.max_bytes` when the
/// policy sets it and enforces, and every pending request is judged (`oversized`; SPEC §5.3:
/// such an answer is refused, read in bounded memory and never buffered whole). A dry run forwards what it would refuse, so it keeps the
/// line; without `results.max_bytes` the reader is as it was.
fn streamed_answers(shared: &Shared, reader: LineReader<Endpoint>) -> LineReader<Endpoint> {
    let limit = shared.policy.results().and_then(|r| r.max_bytes());
    match limit {
        Some(max) if !shared.dry_run => {
            reader.streaming_past(usize::try_from(max).unwrap_or(usize::MAX))
        }
        _ => reader,
    }
}
