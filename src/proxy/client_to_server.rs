//! The client→server worker: reads client lines, applies the fail-closed rules of SPEC §3 item 6,
//! evaluates every `tools/call` against the policy with exactly one decision event each, and
//! forwards what may pass byte-exact.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ChildStdin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::value::RawValue;

use super::canonical;
use super::line::LineReader;
use super::message::{ClientLine, Message, as_str, classify, for_each_message};
use super::respond;
use super::shared::{Shared, line_after_server_eof};
use super::workers::WorkerError;
use crate::evidence::event::HexDigest;
use crate::policy::{Decision, ReasonCode, Verdict};
use crate::strict_json::ScanErrorKind;

/// One evaluated `tools/call`.
struct Evaluated<'a> {
    /// The raw `id` text.
    id: Option<&'a str>,
    /// Borrowed from the line unless it holds escapes.
    tool: Option<Cow<'a, str>>,
    tool_call_id: Option<Cow<'a, str>>,
    arguments_sha256: Option<HexDigest>,
    verdict: Verdict,
}

impl Evaluated<'_> {
    fn allowed(&self) -> bool {
        self.verdict.decision == Decision::Allow
    }
}

pub(crate) struct ClientWorker {
    pub reader: LineReader<File>,
    pub to_child: BufWriter<ChildStdin>,
    pub shared: Arc<Shared>,
}

fn malformed(reason: &str) -> Verdict {
    Verdict {
        decision: Decision::Error,
        reason_code: ReasonCode::P_MALFORMED,
        reason: reason.to_string(),
        matched_rule: None,
    }
}

fn tool_call_id(id: Option<&str>) -> Option<Cow<'_, str>> {
    match id? {
        "null" => None,
        s if s.starts_with('"') => as_str(s),
        s => Some(Cow::Borrowed(s)),
    }
}

/// The raw `id` text as a `RawValue` for a response (it passed the strict scan).
fn raw_id(id: &str) -> Option<&RawValue> {
    serde_json::from_str::<&RawValue>(id).ok()
}

impl ClientWorker {
    pub(crate) fn run(mut self) -> Result<(), WorkerError> {
        let shared = self.shared.clone();
        loop {
            let to_child = &mut self.to_child;
            let mut idle = || {
                to_child.flush()?;
                shared.output.flush()?;
                // The forwarded calls are on their way: now hash their decision lines.
                shared
                    .recorder
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .settle();
                Ok(())
            };
            let line = match self.reader.next_line(&mut idle) {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(e) => {
                    // Lines accepted before the failure still go out (best effort).
                    let _ = self.to_child.flush();
                    let _ = shared.output.flush();
                    return Err(WorkerError::from_line(e, "client input"));
                }
            };
            if shared.output.is_closed() {
                return Err(line_after_server_eof(&shared));
            }
            match handle_line(&shared, line) {
                Action::Forward => self
                    .to_child
                    .write_all(line)
                    .map_err(|e| WorkerError::Io(format!("writing to the server: {e}")))?,
                Action::Respond(mut bytes) => {
                    bytes.push(b'\n');
                    shared
                        .output
                        .write_line(&bytes)
                        .map_err(|e| WorkerError::Io(format!("writing to the client: {e}")))?;
                }
                Action::Drop => {}
                Action::Failed(e) => {
                    return Err(WorkerError::Io(format!("writing to the client: {e}")));
                }
            }
        }
        // Client EOF: flush and close the child's stdin (dropping it closes the pipe).
        self.to_child
            .flush()
            .map_err(|e| WorkerError::Io(format!("writing to the server: {e}")))?;
        drop(self.to_child);
        shared
            .output
            .flush()
            .map_err(|e| WorkerError::Io(format!("writing to the client: {e}")))?;
        Ok(())
    }
}

enum Action {
    Forward,
    Respond(Vec<u8>),
    Drop,
    /// Writing a streamed response to the client failed.
    Failed(std::io::Error),
}

fn handle_line(shared: &Shared, line: &[u8]) -> Action {
    match classify(line) {
        ClientLine::Blank => Action::Forward,
        ClientLine::ParseError(e) => {
            shared.session_message.store(true, Ordering::Relaxed);
            let msg = match e.kind {
                ScanErrorKind::Invalid => "Parse error: line is not valid UTF-8 JSON",
                ScanErrorKind::DuplicateKey => "Parse error: duplicate object key",
                ScanErrorKind::NonFinite => "Parse error: non-finite number",
                ScanErrorKind::TooDeep => "Parse error: nesting too deep",
            };
            if shared.diag.verbose {
                shared.diag.say(&format!("refused client line: {e}"));
            }
            Action::Respond(respond::error(None, respond::PARSE_ERROR, msg))
        }
        ClientLine::KeyVariant(offset) => {
            shared.session_message.store(true, Ordering::Relaxed);
            if shared.diag.verbose {
                shared.diag.say(&format!(
                    "refused client line: a key at byte {offset} is a case, fold or NUL variant of a JSON-RPC member name"
                ));
            }
            Action::Respond(respond::error(
                None,
                respond::PARSE_ERROR,
                "Parse error: object key is a variant of a JSON-RPC member name",
            ))
        }
        ClientLine::CarriageReturn(offset) => {
            shared.session_message.store(true, Ordering::Relaxed);
            if shared.diag.verbose {
                shared.diag.say(&format!(
                    "refused client line: carriage return inside the line at byte {offset}"
                ));
            }
            Action::Respond(respond::error(
                None,
                respond::PARSE_ERROR,
                "Parse error: carriage return inside a line",
            ))
        }
        ClientLine::NotObject => {
            shared.session_message.store(true, Ordering::Relaxed);
            Action::Respond(respond::error(
                None,
                respond::INVALID_REQUEST,
                "Invalid Request: expected a JSON-RPC object or batch",
            ))
        }
        ClientLine::Single(msg) => handle_single(shared, &msg),
        ClientLine::Batch(text) => handle_batch(shared, text),
    }
}

fn note_message(shared: &Shared, head: &Message<'_>) {
    if head.id.is_some() && head.method_is("server/discover") {
        return;
    }
    shared.session_message.store(true, Ordering::Relaxed);
    if shared.tools_list.active() && head.method_is("tools/list") {
        if let Some(id) = head.id {
            shared.tools_list.note_request(id);
        }
    }
}

const PARAMS_MALFORMED: &str = "tools/call params is missing or not an object";

fn evaluate<'a>(shared: &Shared, head: &Message<'a>) -> Evaluated<'a> {
    let mut ev = Evaluated {
        id: head.id,
        tool: None,
        tool_call_id: tool_call_id(head.id),
        arguments_sha256: None,
        // Every path below sets the verdict; this placeholder allocates nothing.
        verdict: Verdict {
            decision: Decision::Error,
            reason_code: ReasonCode::P_MALFORMED,
            reason: String::new(),
            matched_rule: None,
        },
    };
    if !head.params_object {
        ev.verdict = malformed(PARAMS_MALFORMED);
        return ev;
    }
    // RFC 8785 canonical form, so the digest does not depend on the client's key order or
    // whitespace. Simple arguments are canonicalized straight from the text; a `Value` is built
    // only when the text needs the general canonicalizer or the policy inspects the arguments.
    let mut arguments: Option<serde_json::Value> = None;
    if let Some(raw) = head.arguments {
        // One canonicalization buffer per worker thread, reused for every call.
        thread_local! {
            static CANON: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let Ok((digest, value)) =
            CANON.with(|c| canonical::arguments_digest(raw, &mut c.borrow_mut()))
        else {
            ev.verdict = malformed(PARAMS_MALFORMED);
            return ev;
        };
        ev.arguments_sha256 = digest;
        arguments = value;
    }
    let Some(name) = head.name.and_then(as_str) else {
        ev.verdict = malformed("tools/call params.name is missing or not a string");
        return ev;
    };
    if arguments.is_none() && shared.policy.reads_arguments(&name) {
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
    ev.verdict = shared.policy.evaluate(&name, arguments.as_ref());
    ev.tool = Some(name);
    ev
}

/// Records one decision; returns its event id when `want_id` (a refusal carries it), else an
/// empty string, so the common allowed path formats no id.
fn record(shared: &Shared, ev: &Evaluated<'_>, verdict: &Verdict, want_id: bool) -> String {
    let mut rec = shared
        .recorder
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let seq = rec.record(
        &shared.diag,
        ev.tool.as_deref(),
        ev.tool_call_id.as_deref(),
        verdict,
        ev.arguments_sha256.as_ref().map(HexDigest::as_str),
    );
    let id = if want_id || shared.diag.verbose {
        rec.decision_id(seq)
    } else {
        String::new()
    };
    if shared.diag.verbose {
        shared.diag.say(&format!(
            "decision {} {} tool={} ({})",
            id,
            match verdict.decision {
                Decision::Allow => "allow",
                Decision::Deny => "deny",
                Decision::Error => "error",
            },
            ev.tool.as_deref().unwrap_or("-"),
            verdict.reason_code.as_str()
        ));
    }
    id
}

fn refusal(ev: &Evaluated<'_>, verdict: &Verdict, decision_id: &str) -> Option<Vec<u8>> {
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

fn handle_single(shared: &Shared, head: &Message<'_>) -> Action {
    note_message(shared, head);
    if !head.method_is("tools/call") {
        return Action::Forward;
    }
    let ev = evaluate(shared, head);
    let forward = ev.allowed() || shared.dry_run;
    let decision_id = record(shared, &ev, &ev.verdict, !forward);
    if forward {
        return Action::Forward;
    }
    match refusal(&ev, &ev.verdict, &decision_id) {
        Some(bytes) => Action::Respond(bytes),
        // A refused notification is dropped without a response.
        None => Action::Drop,
    }
}

/// A batch (SPEC §3 item 6). Its messages are walked three times from the text (note and
/// decide, then record, then answer) instead of being collected, so memory does not grow with
/// the number of elements; a refused batch's response is streamed to the client output under
/// its lock (one whole line) rather than built in memory.
fn handle_batch(shared: &Shared, text: &str) -> Action {
    shared.session_message.store(true, Ordering::Relaxed);
    let mut any_refused = false;
    let mut any_id = false;
    for_each_message(text, |m| {
        note_message(shared, m);
        any_id |= m.id.is_some();
        if m.method_is("tools/call") && !evaluate(shared, m).allowed() {
            any_refused = true;
        }
    });
    if shared.dry_run || !any_refused {
        for_each_message(text, |m| {
            if m.method_is("tools/call") {
                let ev = evaluate(shared, m);
                record(shared, &ev, &ev.verdict, false);
            }
        });
        return Action::Forward;
    }
    // Refuse the whole batch: one decision per call, allowed calls logged as refused with it.
    let batch_refused = Verdict {
        decision: Decision::Deny,
        reason_code: ReasonCode::P_BATCH_REFUSED,
        reason: "refused with its batch: another call in the batch was not allowed".to_string(),
        matched_rule: None,
    };
    if !any_id {
        for_each_message(text, |m| {
            if m.method_is("tools/call") {
                let ev = evaluate(shared, m);
                let verdict = if ev.allowed() {
                    &batch_refused
                } else {
                    &ev.verdict
                };
                record(shared, &ev, verdict, false);
            }
        });
        return Action::Drop;
    }
    let written = shared.output.write_with(|out| {
        let mut first = true;
        let mut result = out.write_all(b"[");
        for_each_message(text, |m| {
            let part = if m.method_is("tools/call") {
                let ev = evaluate(shared, m);
                let verdict = if ev.allowed() {
                    &batch_refused
                } else {
                    &ev.verdict
                };
                let decision_id = record(shared, &ev, verdict, true);
                refusal(&ev, verdict, &decision_id)
            } else {
                m.id.and_then(raw_id).map(|id| {
                    respond::error(
                        Some(id),
                        respond::BATCH_REFUSED,
                        "batch refused: a tools/call in the batch was not allowed",
                    )
                })
            };
            if let (Some(part), Ok(())) = (part, &result) {
                let sep: &[u8] = if first { b"" } else { b"," };
                first = false;
                result = out.write_all(sep).and_then(|()| out.write_all(&part));
            }
        });
        result?;
        out.write_all(b"]\n")
    });
    match written {
        Ok(()) => Action::Drop,
        Err(e) => Action::Failed(e),
    }
}
