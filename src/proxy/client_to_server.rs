//! The client→server worker: reads client lines, applies the fail-closed rules of SPEC §3 item 6,
//! evaluates every `tools/call` against the policy with exactly one decision event each, and
//! forwards what may pass byte-exact.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ChildStdin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::value::RawValue;

use super::line::LineReader;
use super::message::{self, CallParams, ClientLine, Head, as_str, classify};
use super::respond;
use super::{Shared, WorkerError};
use crate::evidence::event::sha256_hex;
use crate::policy::{Decision, ReasonCode, Verdict};
use crate::strict_json::ScanErrorKind;

/// One evaluated `tools/call`.
struct Evaluated<'a> {
    id: Option<&'a RawValue>,
    tool: Option<String>,
    tool_call_id: Option<String>,
    arguments_sha256: Option<String>,
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

fn tool_call_id(id: Option<&RawValue>) -> Option<String> {
    let raw = id?;
    match raw.get() {
        "null" => None,
        s if s.starts_with('"') => as_str(raw).map(|c| c.into_owned()),
        s => Some(s.to_string()),
    }
}

impl ClientWorker {
    pub(crate) fn run(mut self) -> Result<(), WorkerError> {
        let shared = self.shared.clone();
        loop {
            let to_child = &mut self.to_child;
            let mut idle = || {
                to_child.flush()?;
                shared.output.flush()
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
                return Err(super::line_after_server_eof(&shared));
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
        ClientLine::Single(head) => handle_single(shared, &head),
        ClientLine::Batch(items) => handle_batch(shared, &items),
    }
}

fn note_message(shared: &Shared, head: &Head<'_>) {
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

fn evaluate<'a>(shared: &Shared, head: &Head<'a>) -> Evaluated<'a> {
    let mut ev = Evaluated {
        id: head.id,
        tool: None,
        tool_call_id: tool_call_id(head.id),
        arguments_sha256: None,
        verdict: malformed("tools/call params is missing or not an object"),
    };
    let Some(params) = head.params.filter(|p| p.get().starts_with('{')) else {
        return ev;
    };
    let Ok(params) = serde_json::from_str::<CallParams<'_>>(params.get()) else {
        return ev;
    };
    // RFC 8785 canonical form, so the digest does not depend on the client's key order or
    // whitespace. Simple arguments are canonicalized straight from the text; a `Value` is built
    // only when the text needs the general canonicalizer or the policy inspects the arguments.
    let mut arguments: Option<serde_json::Value> = None;
    if let Some(raw) = params.arguments {
        let mut canon = Vec::with_capacity(raw.get().len());
        if message::canonicalize_simple(raw.get().as_bytes(), &mut canon) {
            ev.arguments_sha256 = Some(sha256_hex(&canon));
        } else {
            let Ok(v) = crate::strict_json::parse_value(raw.get()) else {
                return ev;
            };
            if let Ok(canon) = serde_json_canonicalizer::to_vec(&v) {
                ev.arguments_sha256 = Some(sha256_hex(&canon));
            }
            arguments = Some(v);
        }
    }
    let Some(name) = params.name.and_then(as_str) else {
        ev.verdict = malformed("tools/call params.name is missing or not a string");
        return ev;
    };
    if arguments.is_none() && shared.policy.reads_arguments(&name) {
        if let Some(raw) = params.arguments {
            let Ok(v) = crate::strict_json::parse_value(raw.get()) else {
                // As if the parse had failed up front (it cannot after the fast path accepted
                // the text, but the outcome must not depend on which path ran).
                ev.arguments_sha256 = None;
                ev.verdict = malformed("tools/call params is missing or not an object");
                return ev;
            };
            arguments = Some(v);
        }
    }
    ev.verdict = shared.policy.evaluate(&name, arguments.as_ref());
    ev.tool = Some(name.into_owned());
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
        ev.arguments_sha256.as_deref(),
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
    let id = ev.id?;
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

fn handle_single(shared: &Shared, head: &Head<'_>) -> Action {
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

fn handle_batch(shared: &Shared, items: &[Option<Head<'_>>]) -> Action {
    shared.session_message.store(true, Ordering::Relaxed);
    let mut calls: Vec<(usize, Evaluated<'_>)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if let Some(head) = item {
            note_message(shared, head);
            if head.method_is("tools/call") {
                calls.push((i, evaluate(shared, head)));
            }
        }
    }
    let refuse = !shared.dry_run && calls.iter().any(|(_, ev)| !ev.allowed());
    if !refuse {
        for (_, ev) in &calls {
            record(shared, ev, &ev.verdict, false);
        }
        return Action::Forward;
    }
    // Refuse the whole batch: one decision per call, allowed calls logged as refused with it.
    let batch_refused = Verdict {
        decision: Decision::Deny,
        reason_code: ReasonCode::P_BATCH_REFUSED,
        reason: "refused with its batch: another call in the batch was not allowed".to_string(),
        matched_rule: None,
    };
    let mut responses: Vec<Option<Vec<u8>>> = vec![None; items.len()];
    for (i, ev) in &calls {
        let verdict = if ev.allowed() {
            &batch_refused
        } else {
            &ev.verdict
        };
        let decision_id = record(shared, ev, verdict, true);
        responses[*i] = refusal(ev, verdict, &decision_id);
    }
    for (i, item) in items.iter().enumerate() {
        if responses[i].is_some() {
            continue;
        }
        if let Some(id) = item.as_ref().and_then(|h| h.id) {
            responses[i] = Some(respond::error(
                Some(id),
                respond::BATCH_REFUSED,
                "batch refused: a tools/call in the batch was not allowed",
            ));
        }
    }
    let parts: Vec<Vec<u8>> = responses.into_iter().flatten().collect();
    if parts.is_empty() {
        return Action::Drop;
    }
    let mut out = Vec::with_capacity(parts.iter().map(Vec::len).sum::<usize>() + parts.len() + 1);
    out.push(b'[');
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(p);
    }
    out.push(b']');
    Action::Respond(out)
}
