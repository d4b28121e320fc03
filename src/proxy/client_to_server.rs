//! The client→server worker: reads client lines, applies the fail-closed rules of SPEC §3 item 6,
//! evaluates every `tools/call` against the policy with exactly one decision event each, and has
//! what may pass forwarded byte-exact — after its decision is written ([`super::emitter`]).

use std::borrow::Cow;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::emitter::{
    ActionRunner, Batch, Delivery, Emitter, LineAction, QUEUED_LINE_MAX, Source, Span,
};
use super::endpoint::Endpoint;
use super::governed::{self, Judged as GovernedMessage};
use super::line::LineReader;
use super::message::{
    ClientLine, Judged, Message, as_str, classify, for_each_message, raw_id, tool_call_id,
};
use super::pending::RequestKind;
use super::recorder::Recorder;
use super::respond;
use super::shared::{Shared, line_after_server_eof};
use super::workers::WorkerError;
use crate::evidence::decision_log::DecisionEntry;
use crate::policy::{CallBudget, Decision, ReasonCode, Verdict, VerdictRef};
use crate::results::Asked;
use crate::sha256::HexDigest;
use crate::strict_json::ScanErrorKind;

/// One evaluated `tools/call`: `'a` borrows the line, `'p` the policy.
struct Evaluated<'a, 'p> {
    /// The raw `id` text.
    id: Option<&'a str>,
    /// Borrowed from the line unless it holds escapes.
    tool: Option<Cow<'a, str>>,
    tool_call_id: Option<Cow<'a, str>>,
    arguments_sha256: Option<HexDigest>,
    /// The definition digest this session remembers for the tool (SPEC §5.1).
    tool_definition_sha256: Option<HexDigest>,
    /// With `record_arguments` (SPEC §5.2): the redacted, bounded arguments, and whether they
    /// were cut.
    recorded: Option<(String, bool)>,
    verdict: VerdictRef<'p>,
}

impl Evaluated<'_, '_> {
    fn allowed(&self) -> bool {
        self.verdict.decision == Decision::Allow
    }
}

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

fn malformed(reason: &'static str) -> VerdictRef<'static> {
    VerdictRef {
        decision: Decision::Error,
        reason_code: ReasonCode::P_MALFORMED,
        reason: Cow::Borrowed(reason),
        matched_rule: None,
    }
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
    if head.id.is_some() && head.method_is("server/discover") {
        return;
    }
    shared.session_message.store(true, Ordering::Relaxed);
    if head.method_is("tools/list") && head.id.is_some() {
        shared.tools_list.note_request();
    }
}

const PARAMS_MALFORMED: &str = "tools/call params is missing or not an object";

/// Judges one `tools/call` in the order of SPEC §5, then (allowed so far) against the session's
/// `limits` (§5.2): `budget` counts the call when it is admitted.
fn evaluate<'a, 'p>(
    shared: &'p Shared,
    head: &Message<'a>,
    budget: Option<&mut CallBudget>,
) -> Evaluated<'a, 'p> {
    let mut ev = Evaluated {
        id: head.id,
        tool: None,
        tool_call_id: tool_call_id(head.id),
        arguments_sha256: None,
        tool_definition_sha256: None,
        recorded: None,
        // Every path below sets the verdict; this placeholder allocates nothing.
        verdict: malformed(PARAMS_MALFORMED),
    };
    if !head.params_object {
        return ev;
    }
    // RFC 8785 canonical form, so the digest does not depend on the client's key order or
    // whitespace; written straight from the text, no value built. A value is parsed only when
    // the policy inspects the arguments.
    let mut arguments: Option<serde_json::Value> = None;
    if let Some(raw) = head.arguments {
        let Some(digest) = crate::canonical::digest_of(raw) else {
            // Not canonicalizable within its bound (a text of exponent numbers far longer once
            // written out): malformed params, never a call without its digest.
            return ev;
        };
        ev.arguments_sha256 = Some(digest);
    }
    let Some(name) = head.name.and_then(as_str) else {
        ev.verdict = malformed("tools/call params.name is missing or not a string");
        return ev;
    };
    let record_arguments = shared.policy.record_arguments();
    if arguments.is_none() && (record_arguments || shared.policy.reads_arguments(&name)) {
        if let Some(raw) = head.arguments {
            let Ok(v) = crate::strict_json::parse_value(raw) else {
                // As if the parse had failed up front (it cannot after the fast path accepted
                // the text, but the outcome must not depend on which path ran).
                ev.arguments_sha256 = None;
                ev.verdict = malformed(PARAMS_MALFORMED);
                return ev;
            };
            arguments = Some(v);
        }
    }
    ev.tool_definition_sha256 = shared.tools_list.definition_of(&name);
    ev.verdict = shared.policy.decide(
        &name,
        arguments.as_ref(),
        ev.tool_definition_sha256.as_ref(),
    );
    if record_arguments {
        ev.recorded = arguments
            .as_ref()
            .map(|a| shared.policy.recorded_arguments(a));
    }
    if ev.allowed() {
        if let Some(refused) = budget.and_then(|b| b.admit(&name, ev.arguments_sha256.as_ref())) {
            ev.verdict = owned(refused);
        }
    }
    ev.tool = Some(name);
    ev
}

/// A verdict the policy built for this call alone, as a [`VerdictRef`].
fn owned(v: Verdict) -> VerdictRef<'static> {
    VerdictRef {
        decision: v.decision,
        reason_code: v.reason_code,
        reason: Cow::Owned(v.reason),
        matched_rule: v.matched_rule.map(Cow::Owned),
    }
}

/// Numbers one decision and appends its log line (when a log is kept) to `out`. Returns whether
/// a line was appended, and the event id when `want_id` (a refusal carries it; the common
/// allowed path formats none).
fn record(
    ctx: &mut Ctx<'_>,
    out: &mut Vec<u8>,
    ev: &Evaluated<'_, '_>,
    verdict: &VerdictRef<'_>,
    want_id: bool,
) -> (bool, String) {
    let (seq, wrote) = ctx.recorder.record(
        out,
        &DecisionEntry {
            tool: ev.tool.as_deref(),
            tool_call_id: ev.tool_call_id.as_deref(),
            decision: verdict.decision,
            reason_code: verdict.reason_code,
            reason: &verdict.reason,
            matched_rule: verdict.matched_rule.as_deref(),
            arguments_sha256: ev.arguments_sha256.as_ref(),
            tool_definition_sha256: ev.tool_definition_sha256.as_ref(),
            arguments: ev
                .recorded
                .as_ref()
                .map(|(text, cut)| (text.as_str(), *cut)),
        },
    );
    let what = || format!("tool={}", ev.tool.as_deref().unwrap_or("-"));
    (
        wrote,
        announce(
            ctx,
            seq,
            verdict.decision,
            verdict.reason_code,
            want_id,
            what,
        ),
    )
}

/// The event id of decision `seq` when a refusal needs it (`want_id`) or `--verbose` says it
/// (one `assay:` line naming `what` was judged); empty otherwise (the common allowed path formats
/// none).
fn announce(
    ctx: &Ctx<'_>,
    seq: u64,
    decision: Decision,
    code: ReasonCode,
    want_id: bool,
    what: impl FnOnce() -> String,
) -> String {
    let verbose = ctx.shared.diag.verbose;
    if !(want_id || verbose) {
        return String::new();
    }
    let id = ctx.recorder.decision_id(seq);
    if verbose {
        ctx.shared.diag.say(&format!(
            "decision {id} {} {} ({})",
            decision.as_str(),
            what(),
            code.as_str()
        ));
    }
    id
}

/// [`record`] for a message of another governed method (SPEC §4.1a `assay.mcp.decision`),
/// judged `verdict` (its own, or the batch refusal).
fn record_governed(
    ctx: &mut Ctx<'_>,
    out: &mut Vec<u8>,
    g: &GovernedMessage<'_>,
    verdict: &Verdict,
    want_id: bool,
) -> (bool, String) {
    let (seq, wrote) = ctx.recorder.record_mcp(out, &g.entry_as(verdict));
    let what = || format!("{} {}", g.method, g.target.as_deref().unwrap_or("-"));
    (
        wrote,
        announce(
            ctx,
            seq,
            verdict.decision,
            verdict.reason_code,
            want_id,
            what,
        ),
    )
}

/// [`record_now`] for a message of another governed method.
fn record_governed_now(
    ctx: &mut Ctx<'_>,
    runner: &mut ActionRunner,
    line: &mut Vec<u8>,
    g: &GovernedMessage<'_>,
    verdict: &Verdict,
    want_id: bool,
) -> Result<String, WorkerError> {
    write_now(runner, line, |out| {
        record_governed(ctx, out, g, verdict, want_id)
    })
}

/// Formats one decision line into `line` (with `format`, which says whether it wrote one and
/// the event id) and writes it at once.
fn write_now(
    runner: &mut ActionRunner,
    line: &mut Vec<u8>,
    format: impl FnOnce(&mut Vec<u8>) -> (bool, String),
) -> Result<String, WorkerError> {
    line.clear();
    let (wrote, id) = format(line);
    if wrote {
        runner.write_decision(line)?;
    }
    Ok(id)
}

/// The error answering a refused request of another governed method (SPEC §5.2), or `None`
/// for a notification.
fn refused_request(id: Option<&str>, verdict: &Verdict, decision_id: &str) -> Option<Vec<u8>> {
    let id = raw_id(id?)?;
    Some(respond::refused_request(
        id,
        verdict.decision.as_str(),
        verdict.reason_code,
        decision_id,
    ))
}

/// Records one decision of a JSON-RPC batch and writes its line at once (a batch's decisions
/// are never collected: memory stays independent of its number of elements).
fn record_now(
    ctx: &mut Ctx<'_>,
    runner: &mut ActionRunner,
    line: &mut Vec<u8>,
    ev: &Evaluated<'_, '_>,
    verdict: &VerdictRef<'_>,
    want_id: bool,
) -> Result<String, WorkerError> {
    write_now(runner, line, |out| record(ctx, out, ev, verdict, want_id))
}

fn refusal(ev: &Evaluated<'_, '_>, verdict: &VerdictRef<'_>, decision_id: &str) -> Option<Vec<u8>> {
    let id = raw_id(ev.id?)?;
    let decision = if verdict.decision == Decision::Error {
        "error"
    } else {
        "deny"
    };
    let text = format!(
        "assay: tool call refused ({}): {}",
        verdict.reason_code.as_str(),
        verdict.reason
    );
    Some(respond::refused_call(
        id,
        decision,
        verdict.reason_code,
        &text,
        decision_id,
    ))
}

/// A message about to be forwarded: a request awaits its response from now on (only an answer to
/// a pending request reaches the client, SPEC §5); a cancellation says the request it names will
/// not be answered (SPEC §3 item 7, the idle drain).
/// `decision`: the `seq` of the message's decision event, if it had one (its answer names it
/// under `results`, SPEC §5.3).
fn note_forwarded(shared: &Shared, m: &Message<'_>, decision: Option<u64>) {
    if m.method.is_none() {
        return;
    }
    match m.id {
        Some(id) => {
            let method = m.method.and_then(as_str).unwrap_or_default();
            let asked = shared.policy.results().and_then(|_| {
                let tool = m.name.and_then(as_str);
                Asked::of(&method, tool.as_deref(), decision).map(Box::new)
            });
            shared
                .pending
                .note_asked(id, RequestKind::of(&method), asked)
        }
        None if m.method_is("notifications/cancelled") => shared.pending.cancelled(m.params),
        None => {}
    }
}

/// One message: its decision (a `tools/call`), then forwarded or answered.
fn handle_single(
    ctx: &mut Ctx<'_>,
    batch: &mut Batch,
    head: &Message<'_>,
    line: &[u8],
    queued: bool,
) -> LineAction {
    note_message(ctx.shared, head);
    let governed = if ctx.judged.resources || ctx.judged.prompts {
        governed::client_message(&ctx.shared.policy, head)
    } else {
        None
    };
    if let Some(g) = governed {
        let pass = g.allowed() || ctx.shared.dry_run;
        let mark = batch.mark();
        let (wrote, decision_id) = record_governed(ctx, batch.arena(), &g, &g.verdict, !pass);
        let decision: Option<Span> = wrote.then(|| batch.span_from(mark));
        let delivery = if pass {
            note_forwarded(ctx.shared, head, ctx.recorder.last());
            forward(batch, line, queued)
        } else {
            match refused_request(g.id, &g.verdict, &decision_id) {
                Some(bytes) => response(batch, &bytes),
                None => Delivery::Drop,
            }
        };
        return LineAction { decision, delivery };
    }
    if !head.method_is("tools/call") {
        note_forwarded(ctx.shared, head, None);
        return LineAction {
            decision: None,
            delivery: forward(batch, line, queued),
        };
    }
    let ev = evaluate(ctx.shared, head, ctx.budget.as_mut());
    let pass = ev.allowed() || ctx.shared.dry_run;
    let mark = batch.mark();
    let (wrote, decision_id) = record(ctx, batch.arena(), &ev, &ev.verdict, !pass);
    let decision: Option<Span> = wrote.then(|| batch.span_from(mark));
    let delivery = if pass {
        note_forwarded(ctx.shared, head, ctx.recorder.last());
        forward(batch, line, queued)
    } else {
        match refusal(&ev, &ev.verdict, &decision_id) {
            Some(bytes) => response(batch, &bytes),
            // A refused notification is dropped without a response.
            None => Delivery::Drop,
        }
    };
    LineAction { decision, delivery }
}

/// A batch (SPEC §3 item 6), run at once with the runner. Its messages are walked three times
/// from the text (note and decide, then record, then answer) instead of being collected, so
/// memory does not grow with the number of elements; a refused batch's response is streamed to
/// the client output under its lock (one whole line) rather than built in memory.
fn handle_batch(
    ctx: &mut Ctx<'_>,
    runner: &mut ActionRunner,
    decision_line: &mut Vec<u8>,
    text: &str,
    line: &[u8],
) -> Result<(), WorkerError> {
    let shared = ctx.shared;
    let judged = ctx.judged;
    let policy = &shared.policy;
    shared.session_message.store(true, Ordering::Relaxed);
    let mut any_refused = false;
    let mut any_id = false;
    // Judged on a copy of the limits' counters: a call of a refused batch is not counted.
    let mut trial = ctx.budget.clone();
    for_each_message(text, judged, |m| {
        note_message(shared, m);
        any_id |= m.id.is_some();
        if m.method_is("tools/call") && !evaluate(shared, m, trial.as_mut()).allowed() {
            any_refused = true;
        }
        if governed::client_message(policy, m).is_some_and(|g| !g.allowed()) {
            any_refused = true;
        }
    });
    let mut recorded: Result<(), WorkerError> = Ok(());
    if shared.dry_run || !any_refused {
        // Each message is noted as pending once its decision is written (its answer names it).
        for_each_message(text, judged, |m| {
            if recorded.is_err() {
                return;
            }
            let mut decision = None;
            if m.method_is("tools/call") {
                let ev = evaluate(shared, m, ctx.budget.as_mut());
                recorded =
                    record_now(ctx, runner, decision_line, &ev, &ev.verdict, false).map(drop);
                decision = ctx.recorder.last();
            } else if let Some(g) = governed::client_message(policy, m) {
                recorded = record_governed_now(ctx, runner, decision_line, &g, &g.verdict, false)
                    .map(drop);
                decision = ctx.recorder.last();
            }
            if recorded.is_ok() {
                note_forwarded(shared, m, decision);
            }
        });
        recorded?;
        return runner.forward(line);
    }
    let batch_refused_owned = Verdict {
        decision: Decision::Deny,
        reason_code: ReasonCode::P_BATCH_REFUSED,
        reason: "refused with its batch: another message in the batch was not allowed".to_owned(),
        matched_rule: None,
    };
    // Refuse the whole batch: one decision per call, allowed calls logged as refused with it.
    let batch_refused = VerdictRef {
        decision: Decision::Deny,
        reason_code: ReasonCode::P_BATCH_REFUSED,
        reason: Cow::Borrowed(
            "refused with its batch: another message in the batch was not allowed",
        ),
        matched_rule: None,
    };
    if !any_id {
        let mut trial = ctx.budget.clone();
        for_each_message(text, judged, |m| {
            if recorded.is_err() {
                return;
            }
            if m.method_is("tools/call") {
                let ev = evaluate(shared, m, trial.as_mut());
                let verdict = if ev.allowed() {
                    &batch_refused
                } else {
                    &ev.verdict
                };
                recorded = record_now(ctx, runner, decision_line, &ev, verdict, false).map(drop);
            } else if let Some(g) = governed::client_message(policy, m) {
                let verdict = if g.allowed() {
                    &batch_refused_owned
                } else {
                    &g.verdict
                };
                recorded =
                    record_governed_now(ctx, runner, decision_line, &g, verdict, false).map(drop);
            }
        });
        return recorded;
    }
    let mut trial = ctx.budget.clone();
    let written = shared.output.write_with(|out| {
        let mut first = true;
        let mut result = std::io::Write::write_all(out, b"[");
        for_each_message(text, judged, |m| {
            if recorded.is_err() {
                return;
            }
            let part = if m.method_is("tools/call") {
                let ev = evaluate(shared, m, trial.as_mut());
                let verdict = if ev.allowed() {
                    &batch_refused
                } else {
                    &ev.verdict
                };
                match record_now(ctx, runner, decision_line, &ev, verdict, true) {
                    Ok(decision_id) => refusal(&ev, verdict, &decision_id),
                    Err(e) => {
                        recorded = Err(e);
                        None
                    }
                }
            } else if let Some(g) = governed::client_message(policy, m) {
                let verdict = if g.allowed() {
                    &batch_refused_owned
                } else {
                    &g.verdict
                };
                match record_governed_now(ctx, runner, decision_line, &g, verdict, true) {
                    Ok(decision_id) => refused_request(g.id, verdict, &decision_id),
                    Err(e) => {
                        recorded = Err(e);
                        None
                    }
                }
            } else {
                m.id.and_then(raw_id).map(|id| {
                    respond::error(
                        Some(id),
                        respond::BATCH_REFUSED,
                        "batch refused: a message in the batch was not allowed",
                    )
                })
            };
            if let (Some(part), Ok(())) = (part, &result) {
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
