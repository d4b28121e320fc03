//! The client→server worker: reads client lines, applies the fail-closed rules of SPEC §3 item 6,
//! judges every message of a governed method against the policy with exactly one decision event
//! each ([`super::client_judge`]), and has what may pass forwarded byte-exact — after its
//! decision is written ([`super::emitter`]).

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::client_judge::Judgement;
use super::emitter::{
    ActionRunner, Batch, DecisionLine, Delivery, Emitter, LineAction, QUEUED_LINE_MAX, Source,
};
use super::endpoint::Endpoint;
use super::line::LineReader;
use super::message::{ClientLine, Judged, Message, as_str, classify, for_each_message, raw_id};
use super::pending::{Notes, RequestKind};
use super::recorder::Recorder;
use super::respond;
use super::shared::{Shared, line_after_server_eof};
use super::workers::WorkerError;
use crate::methods::{NOTIFICATIONS_CANCELLED, SERVER_DISCOVER, TOOLS_LIST};
use crate::policy::CallBudget;
use crate::results::Asked;
use crate::strict_json::ScanErrorKind;

pub(crate) struct ClientWorker {
    pub reader: LineReader<Endpoint>,
    pub emitter: Emitter,
    pub recorder: Recorder,
    pub shared: Arc<Shared>,
}

/// What handling one line needs besides the line and where its actions go.
struct Ctx<'s> {
    shared: &'s Shared,
    recorder: &'s mut Recorder,
    /// The session's `limits` counters (SPEC §5.2), when the policy has limits.
    budget: &'s mut Option<CallBudget>,
    /// The methods besides `tools/call` the policy judges by their params.
    judged: Judged,
}

impl ClientWorker {
    pub(crate) fn run(self) -> Result<(), WorkerError> {
        let ClientWorker {
            mut reader,
            mut emitter,
            mut recorder,
            shared,
        } = self;
        // Ops of a line that is not queued, and a JSON-RPC batch's decision lines.
        let mut scratch = Batch::default();
        let mut decision_line: Vec<u8> = Vec::new();
        let mut budget = shared.policy.limits().map(|l| l.budget());
        let governed = shared.policy.governed();
        let judged = Judged {
            prompts: governed.contains(&"prompts"),
            resources: governed.contains(&"resources"),
        };
        loop {
            let mut failed: Option<WorkerError> = None;
            let next = {
                let (emitter, failed) = (&mut emitter, &mut failed);
                // Before the reader waits for more input, everything collected runs.
                let mut idle = || {
                    emitter.input_dry().map_err(|e| {
                        *failed = Some(e);
                        io::Error::other("the client→server path failed")
                    })
                };
                reader.next_line(&mut idle)
            };
            let line = match next {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(e) => {
                    // Lines accepted before the failure still go out (best effort).
                    emitter.abandon();
                    return Err(failed.unwrap_or_else(|| WorkerError::from_line(e, "client input")));
                }
            };
            if shared.output.is_closed() {
                emitter.abandon();
                return Err(line_after_server_eof(&shared));
            }
            let mut ctx = Ctx {
                shared: &shared,
                recorder: &mut recorder,
                budget: &mut budget,
                judged,
            };
            if let Err(e) = handle_line(
                &mut ctx,
                &mut emitter,
                &mut scratch,
                &mut decision_line,
                line,
            ) {
                emitter.abandon();
                return Err(e);
            }
        }
        // Client EOF: every action done, the child's stdin flushed and closed.
        emitter.finish()
    }
}

/// Appends a response line (the bytes and a newline) to the arena.
fn response(batch: &mut Batch, bytes: &[u8]) -> Delivery {
    let mark = batch.mark();
    batch.arena().extend_from_slice(bytes);
    batch.arena().push(b'\n');
    Delivery::Respond(batch.span_from(mark))
}

/// Forwarding `line`: from a copy in the arena when queued, else in place.
fn forward(batch: &mut Batch, line: &[u8], queued: bool) -> Delivery {
    if queued {
        Delivery::Forward(Source::Arena(batch.put(line)))
    } else {
        Delivery::Forward(Source::Current)
    }
}

/// Handles one client line: a JSON-RPC batch at once with the runner; anything else as an action,
/// queued when it is short, else run at once reading the line in place.
fn handle_line(
    ctx: &mut Ctx<'_>,
    emitter: &mut Emitter,
    scratch: &mut Batch,
    decision_line: &mut Vec<u8>,
    line: &[u8],
) -> Result<(), WorkerError> {
    let class = classify(line, ctx.judged);
    if let ClientLine::Batch(text) = class {
        return emitter
            .with_runner(|runner| handle_batch(ctx, runner, decision_line, text, line))?;
    }
    let queued = line.len() <= QUEUED_LINE_MAX;
    let batch = if queued {
        emitter.local()
    } else {
        scratch.clear();
        &mut *scratch
    };
    let op = match class {
        ClientLine::Single(msg) => handle_single(ctx, batch, &msg, line, queued),
        ClientLine::Blank => LineAction {
            decision: None,
            delivery: forward(batch, line, queued),
        },
        refused => LineAction {
            decision: None,
            delivery: refuse_line(ctx.shared, batch, refused),
        },
    };
    batch.push(op);
    if queued {
        emitter.line_done()
    } else {
        emitter.with_runner(|runner| runner.run(scratch, line))?
    }
}

/// A line that is neither blank nor a message: answered with an error, never forwarded.
fn refuse_line(shared: &Shared, batch: &mut Batch, class: ClientLine<'_>) -> Delivery {
    let (code, msg) = match class {
        ClientLine::ParseError(e) => {
            if shared.diag.verbose {
                shared.diag.say(&format!("refused client line: {e}"));
            }
            let msg = match e.kind {
                ScanErrorKind::Invalid => "Parse error: line is not valid UTF-8 JSON",
                ScanErrorKind::DuplicateKey => "Parse error: duplicate object key",
                ScanErrorKind::NonFinite => "Parse error: non-finite number",
                ScanErrorKind::TooDeep => "Parse error: nesting too deep",
            };
            (respond::PARSE_ERROR, msg)
        }
        ClientLine::KeyVariant(offset) => {
            if shared.diag.verbose {
                shared.diag.say(&format!(
                    "refused client line: a key at byte {offset} is a case, fold or NUL variant of a JSON-RPC member name"
                ));
            }
            (
                respond::PARSE_ERROR,
                "Parse error: object key is a variant of a JSON-RPC member name",
            )
        }
        ClientLine::CarriageReturn(offset) => {
            if shared.diag.verbose {
                shared.diag.say(&format!(
                    "refused client line: carriage return inside the line at byte {offset}"
                ));
            }
            (
                respond::PARSE_ERROR,
                "Parse error: carriage return inside a line",
            )
        }
        // Messages and blank lines are the caller's; were one to arrive here, it is refused
        // like any line that is not a JSON-RPC object (fail closed).
        ClientLine::NotObject
        | ClientLine::Blank
        | ClientLine::Single(_)
        | ClientLine::Batch(_) => (
            respond::INVALID_REQUEST,
            "Invalid Request: expected a JSON-RPC object or batch",
        ),
    };
    shared.session_message.store(true, Ordering::Relaxed);
    response(batch, &respond::error(None, code, msg))
}

fn note_message(shared: &Shared, head: &Message<'_>) {
    if head.id.is_some() && head.is(&SERVER_DISCOVER) {
        return;
    }
    shared.session_message.store(true, Ordering::Relaxed);
    if head.is(&TOOLS_LIST) && head.id.is_some() {
        shared.tools_list.note_request();
    }
}

/// A message about to be forwarded: a request awaits its response from now on (only an answer to
/// a pending request reaches the client, SPEC §5); a cancellation says the request it names will
/// not be answered (SPEC §3 item 7, the idle drain). `decision`: the `seq` of the message's
/// decision event, if it had one (its answer names it under `results`, SPEC §5.3).
/// Noted in `notes`, which whoever forwards the line carries out first.
fn note_forwarded(shared: &Shared, notes: &mut Notes, m: &Message<'_>, decision: Option<u64>) {
    if m.method.is_none() {
        return;
    }
    match m.id {
        Some(id) => {
            let asked = shared.policy.results().and_then(|_| {
                let tool = m.name.and_then(as_str);
                let method = m.row.map(|r| r.name)?;
                Asked::of(method, tool.as_deref(), decision).map(Box::new)
            });
            notes.asked(id, RequestKind::of(m.row), asked)
        }
        None if m.is(&NOTIFICATIONS_CANCELLED) => notes.cancelled(m.params),
        None => {}
    }
}

/// One message: its decision (a governed method's), then forwarded or answered.
fn handle_single(
    ctx: &mut Ctx<'_>,
    batch: &mut Batch,
    head: &Message<'_>,
    line: &[u8],
    queued: bool,
) -> LineAction {
    note_message(ctx.shared, head);
    let Some(j) = Judgement::of(ctx.shared, ctx.judged, head, ctx.budget.as_mut()) else {
        note_forwarded(ctx.shared, batch.notes(), head, None);
        return LineAction {
            decision: None,
            delivery: forward(batch, line, queued),
        };
    };
    let pass = j.allowed() || ctx.shared.dry_run;
    let verdict = j.verdict(false);
    let mark = batch.mark();
    let (wrote, decision_id) = j.record(ctx.shared, ctx.recorder, batch.arena(), &verdict, !pass);
    let seq = ctx.recorder.last();
    let decision = seq.filter(|_| wrote).map(|seq| DecisionLine {
        seq,
        line: batch.span_from(mark),
    });
    let delivery = if pass {
        note_forwarded(ctx.shared, batch.notes(), head, seq);
        forward(batch, line, queued)
    } else {
        match j.refusal(&verdict, &decision_id) {
            Some(bytes) => response(batch, &bytes),
            // A refused notification is dropped without a response.
            None => Delivery::Drop,
        }
    };
    LineAction { decision, delivery }
}

/// A batch (SPEC §3 item 6), run at once with the runner. Its messages are walked from the text
/// each time (surveyed, then recorded and answered) instead of being collected, so memory does
/// not grow with the number of elements; a refused batch's response is streamed to the client
/// output under its lock (one whole line) rather than built in memory.
fn handle_batch(
    ctx: &mut Ctx<'_>,
    runner: &mut ActionRunner,
    decision_line: &mut Vec<u8>,
    text: &str,
    line: &[u8],
) -> Result<(), WorkerError> {
    let shared = ctx.shared;
    shared.session_message.store(true, Ordering::Relaxed);
    let (any_refused, any_id) = survey(ctx, text);
    if shared.dry_run || !any_refused {
        // Each message is noted as pending once its decision is written (its answer names it).
        walk_batch(ctx, runner, decision_line, text, false, drop)?;
        return runner.forward(line);
    }
    if !any_id {
        // Refused, and nobody to answer: the decisions only.
        return walk_batch(ctx, runner, decision_line, text, true, drop);
    }
    let mut recorded = Ok(());
    runner.wrote_to_client();
    let written = shared.output.write_with(|out| {
        let mut first = true;
        let mut result = std::io::Write::write_all(out, b"[");
        recorded = walk_batch(ctx, runner, decision_line, text, true, |part| {
            if result.is_ok() {
                let sep: &[u8] = if first { b"" } else { b"," };
                first = false;
                result = std::io::Write::write_all(out, sep)
                    .and_then(|()| std::io::Write::write_all(out, &part));
            }
        });
        result?;
        std::io::Write::write_all(out, b"]\n")
    });
    recorded?;
    written.map_err(super::emitter::to_client)
}

/// The first walk over a batch: each message noted, and whether one of them is refused (judged
/// on a copy of the limits' counters: a call of a refused batch is not counted) and whether one
/// has an id (a refused batch is answered only then).
fn survey(ctx: &mut Ctx<'_>, text: &str) -> (bool, bool) {
    let shared = ctx.shared;
    let (mut any_refused, mut any_id) = (false, false);
    let mut trial = ctx.budget.clone();
    for_each_message(text, ctx.judged, |m| {
        note_message(shared, m);
        any_id |= m.id.is_some();
        if Judgement::of(shared, ctx.judged, m, trial.as_mut()).is_some_and(|j| !j.allowed()) {
            any_refused = true;
        }
    });
    (any_refused, any_id)
}

/// Records the decision of every governed message of a batch, writing each line at once (a
/// batch's decisions are never collected). `refused`: the batch is refused — each message is
/// judged on a copy of the limits' counters and recorded with its own refusal or the batch's,
/// and `answer` gets the part of the response each request with an id gets. Otherwise the
/// session's counters count each call, nothing is answered, and each message is noted as
/// pending once its decision is written (its answer names that decision under `results`).
/// Stops at the first failure to write a decision.
fn walk_batch(
    ctx: &mut Ctx<'_>,
    runner: &mut ActionRunner,
    decision_line: &mut Vec<u8>,
    text: &str,
    refused: bool,
    mut answer: impl FnMut(Vec<u8>),
) -> Result<(), WorkerError> {
    let shared = ctx.shared;
    let mut trial = if refused { ctx.budget.clone() } else { None };
    let budget: &mut Option<CallBudget> = if refused { &mut trial } else { ctx.budget };
    let recorder = &mut *ctx.recorder;
    let mut notes = Notes::default();
    let mut outcome: Result<(), WorkerError> = Ok(());
    for_each_message(text, ctx.judged, |m| {
        if outcome.is_err() {
            return;
        }
        let mut decision = None;
        let part = match Judgement::of(shared, ctx.judged, m, budget.as_mut()) {
            Some(j) => {
                let verdict = j.verdict(refused);
                decision_line.clear();
                let (wrote, decision_id) =
                    j.record(shared, recorder, decision_line, &verdict, refused);
                decision = recorder.last();
                if let Some(seq) = decision.filter(|_| wrote) {
                    if let Err(e) = runner.write_decision(seq, decision_line) {
                        outcome = Err(e);
                        return;
                    }
                }
                if refused {
                    j.refusal(&verdict, &decision_id)
                } else {
                    None
                }
            }
            None if refused => m.id.and_then(raw_id).map(|id| {
                respond::error(
                    Some(id),
                    respond::BATCH_REFUSED,
                    "batch refused: a message in the batch was not allowed",
                )
            }),
            None => None,
        };
        if refused {
            if let Some(part) = part {
                answer(part);
            }
        } else {
            // Noted at once: the batch is forwarded as soon as its walk ends.
            note_forwarded(shared, &mut notes, m, decision);
            shared.pending.note_all(&mut notes);
        }
    });
    outcome
}
