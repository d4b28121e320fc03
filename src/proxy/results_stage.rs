//! The answers to governed requests on the server→client path (SPEC §5.3): each message of a
//! line that answers a request `results` judges (`pending::Answer::asked`) goes through the judge
//! (`crate::results`), is replaced by the refusal, rewritten or left as it is, and gets its
//! `assay.mcp.result` event (`evidence::result_event`) before the line reaches the client.
//! Everything else of the line stays byte for byte; a batch is judged element by element.
//!
//! The `outputSchema` a `tools/call` answer is checked against is `output_schemas`'s.

use serde_json::Value;
use serde_json::value::RawValue;

use super::output_schemas::AnswerStage;
use super::pending::LineAnswers;
use super::respond;
use super::shared::Shared;
use crate::evidence::result_event::{self, Action, ResultEntry};
use crate::methods::ResultKind as Answer;
use crate::policy::ReasonCode;
use crate::results::{self, Asked, Judged};
use crate::sha256::HexDigest;

/// The compact JSON of an id's raw text (a string or a number), the key ids are compared by.
fn id_key(raw: &str) -> Option<String> {
    serde_json::from_str::<Value>(raw)
        .ok()
        .filter(|v| v.is_string() || v.is_number())
        .map(|v| v.to_string())
}

/// Judges the answers of `line` that `results` judges: `None` when the line goes on as it is.
pub(crate) fn on_line(shared: &Shared, line: &[u8], answered: &LineAnswers) -> Option<Vec<u8>> {
    let stage = shared.answers.as_ref()?;
    let results = shared.policy.results()?;
    if results.output_schema().is_some() && !stage.pinned && answered.lists_tools() {
        stage.listed(line);
    }
    let judged: Vec<(&str, &Asked)> = answered.judged().collect();
    if judged.is_empty() {
        return None;
    }
    let body = results::without_terminator(line);
    let terminator = line.get(body.len()..).unwrap_or_default();
    let batch = body.trim_ascii_start().starts_with(b"[");
    let Some(elements) = results::batch_elements(body) else {
        if batch {
            // A batch the strict rules refuse: each answer it holds is refused (unreadable),
            // and the client gets their refusals as one batch.
            let mut out = vec![b'['];
            for (i, (spelling, asked)) in judged.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&one(shared, stage, body, spelling, asked).0);
            }
            if shared.dry_run {
                // Recorded as it would be refused; the line goes on as it is.
                return None;
            }
            out.push(b']');
            out.extend_from_slice(terminator);
            return Some(out);
        }
        // One message: the line without its terminator.
        let (spelling, asked) = judged.first()?;
        let (out, changed) = one(shared, stage, body, spelling, asked);
        return changed.then(|| [out.as_slice(), terminator].concat());
    };
    let mut out = Vec::with_capacity(line.len());
    let mut at = 0;
    let mut changed = false;
    let keys: Vec<(Option<String>, &str, &Asked)> =
        judged.iter().map(|(s, a)| (id_key(s), *s, *a)).collect();
    let mut used = vec![false; keys.len()];
    for e in elements {
        let key =
            e.id.and_then(|(s, end)| body.get(s..end))
                .and_then(|id| std::str::from_utf8(id).ok())
                .and_then(id_key);
        let Some(k) = key.and_then(|key| {
            (0..keys.len()).find(|&k| !used[k] && keys[k].0.as_deref() == Some(key.as_str()))
        }) else {
            continue;
        };
        used[k] = true;
        let msg = body.get(e.start..e.end).unwrap_or_default();
        let (bytes, c) = one(shared, stage, msg, keys[k].1, keys[k].2);
        if c {
            out.extend_from_slice(body.get(at..e.start).unwrap_or_default());
            out.extend_from_slice(&bytes);
            at = e.end;
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    out.extend_from_slice(body.get(at..).unwrap_or_default());
    out.extend_from_slice(terminator);
    Some(out)
}

/// Judges one message answering the request the client spelled `spelling`; records its event.
/// Returns the bytes the client gets and whether they differ from `msg`.
fn one(
    shared: &Shared,
    stage: &AnswerStage,
    msg: &[u8],
    spelling: &str,
    asked: &Asked,
) -> (Vec<u8>, bool) {
    let results = match shared.policy.results() {
        Some(r) => r,
        None => return (msg.to_vec(), false),
    };
    let schema = stage.schema(asked.tool.as_deref());
    let judged = results::judge(msg, asked, results, schema.as_deref());
    let enforced = !shared.dry_run;
    let (action, code) = match (judged.refused, &judged.rewritten) {
        (Some(code), _) if enforced => (Action::Refused, code),
        (Some(code), _) => (Action::Forwarded, code),
        (None, Some(_)) if enforced => (Action::Redacted, ReasonCode::P_POLICY_ALLOW),
        (None, _) => (Action::Forwarded, ReasonCode::P_POLICY_ALLOW),
    };
    // What the client gets; a refusal names this answer's event.
    let client_bytes = |seq: u64| -> Vec<u8> {
        match action {
            Action::Refused => refusal(shared, spelling, asked, code, seq),
            Action::Redacted => judged.rewritten.clone().unwrap_or_else(|| msg.to_vec()),
            Action::Forwarded => msg.to_vec(),
        }
    };
    let bytes = record(
        shared,
        spelling,
        asked,
        &judged,
        (action, code, enforced),
        client_bytes,
    );
    say(shared, spelling, asked, &judged, action, code);
    let changed = action != Action::Forwarded;
    (bytes, changed)
}

/// Records the result event of the answer to the request the client spelled `spelling`:
/// `client_bytes` builds what the client gets from the event's `seq` (a refusal names its
/// event), and the event carries their digest and size. Returns those bytes.
fn record(
    shared: &Shared,
    spelling: &str,
    asked: &Asked,
    judged: &Judged,
    (action, code, enforced): (Action, ReasonCode, bool),
    client_bytes: impl Fn(u64) -> Vec<u8>,
) -> Vec<u8> {
    let request_id = id_key(spelling).unwrap_or_else(|| "null".to_owned());
    let decision_id = asked.decision.map(|seq| shared.decision_id(seq));
    let mut sent: Option<Vec<u8>> = None;
    let seq = shared.record_numbered(|f, out, seq| {
        let bytes = client_bytes(seq);
        let sha256 = HexDigest::of(&bytes);
        result_event::push_result_line(
            f,
            out,
            seq,
            &ResultEntry {
                method: asked.method,
                request_id: &request_id,
                decision_id: decision_id.as_deref(),
                sha256: &sha256,
                bytes: bytes.len() as u64,
                judged,
                action,
                reason_code: code,
                enforced,
            },
        );
        sent = Some(bytes);
    });
    sent.unwrap_or_else(|| client_bytes(seq))
}

/// An answer longer than `results.max_bytes` that was streamed past, never kept (`observed`:
/// its length, terminator excluded): its result event, and the refusal the client gets
/// instead (the message, without terminator).
pub(crate) fn too_large(shared: &Shared, spelling: &str, asked: &Asked, observed: u64) -> Vec<u8> {
    let code = ReasonCode::P_RESULT_TOO_LARGE;
    let judged = results::too_large();
    let bytes = record(
        shared,
        spelling,
        asked,
        &judged,
        // Streamed past only when enforcing (`proxy::streamed_answers`).
        (Action::Refused, code, true),
        |seq| refusal(shared, spelling, asked, code, seq),
    );
    shared.diag.say(&format!(
        "refused the answer ({}) to {} request {spelling}: its line of {observed} bytes is longer than results.max_bytes (or the line bound) and was read past, never kept",
        code.as_str(),
        asked.method,
    ));
    bytes
}

/// The answers of a line the client gets `bytes` instead of (whole lines: the errors of the
/// tolerant path, `answers::Gate::Replace`, or what the client-features stage wrote instead,
/// `client_features::Features::Instead`), which the stage never saw (SPEC §5.3: every answer to
/// a judged request has its event): each judged request `answered` holds whose message is among
/// `bytes` as the wrapper's `-32603` error gets its result event, refused as unreadable, with
/// that message's digest. A request with no such message there gets none: the client got
/// nothing for it, or the client-features stage's refusal of an `input_required` answer, whose
/// evidence is the decision event of the refused input request it names.
pub(crate) fn instead_of(shared: &Shared, bytes: &[u8], answered: &LineAnswers) {
    if shared.answers.is_none() || shared.policy.results().is_none() {
        return;
    }
    let mut left: Vec<(Option<String>, &str, &Asked)> =
        answered.judged().map(|(s, a)| (id_key(s), s, a)).collect();
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        if left.is_empty() {
            return;
        }
        let body = results::without_terminator(line);
        let messages: Vec<&[u8]> = if body.first() == Some(&b'[') {
            match serde_json::from_slice::<Vec<&RawValue>>(body) {
                Ok(v) => v.into_iter().map(|m| m.get().as_bytes()).collect(),
                Err(_) => continue,
            }
        } else {
            vec![body]
        };
        for msg in messages {
            // Only the wrapper's `-32603` withheld errors: a refusal the client-features stage
            // wrote instead of an `input_required` answer names its own decision.
            let key = serde_json::from_slice::<IdOf<'_>>(msg)
                .ok()
                .filter(|m| m.error.as_ref().map(|e| e.code) == Some(respond::INTERNAL_ERROR))
                .and_then(|m| m.id)
                .and_then(|id| id_key(id.get()));
            let Some(k) = key.and_then(|key| {
                left.iter()
                    .position(|(k, ..)| k.as_deref() == Some(key.as_str()))
            }) else {
                continue;
            };
            let (_, spelling, asked) = left.remove(k);
            let code = ReasonCode::P_RESULT_UNREADABLE;
            let judged = results::unreadable();
            record(
                shared,
                spelling,
                asked,
                &judged,
                (Action::Refused, code, true),
                |_| msg.to_vec(),
            );
        }
    }
}

/// The `id` and error code of a message the wrapper wrote.
#[derive(serde::Deserialize)]
struct IdOf<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    error: Option<ErrorCode>,
}

#[derive(serde::Deserialize)]
struct ErrorCode {
    code: i32,
}

/// The refusal the client gets instead of an answer (SPEC §3, §5.2 shapes).
fn refusal(shared: &Shared, spelling: &str, asked: &Asked, code: ReasonCode, seq: u64) -> Vec<u8> {
    let id = result_event::result_id(&shared.session_id, seq);
    let Ok(raw) = serde_json::from_str::<&RawValue>(spelling) else {
        return respond::error(None, respond::REFUSED, "assay: answer refused by policy");
    };
    if asked.answer == Answer::ToolResult {
        let text = format!(
            "assay: the tool's answer was refused ({}): see the result event {id}",
            code.as_str()
        );
        respond::refused_call(raw, "deny", code, &text, &id)
    } else {
        respond::refused_request(raw, "deny", code, &id)
    }
}

/// One `assay:` line for an answer refused or rewritten (or that would be, in dry run).
fn say(
    shared: &Shared,
    spelling: &str,
    asked: &Asked,
    j: &Judged,
    action: Action,
    code: ReasonCode,
) {
    let what = match action {
        Action::Refused => format!("refused the answer ({})", code.as_str()),
        Action::Redacted => "rewrote the answer (stripped or redacted)".to_owned(),
        Action::Forwarded if code != ReasonCode::P_POLICY_ALLOW => {
            format!("would refuse the answer ({}, dry run)", code.as_str())
        }
        Action::Forwarded if j.findings_total > 0 => "flagged the answer".to_owned(),
        Action::Forwarded => return,
    };
    let rules: Vec<&str> = j.findings.iter().map(|f| f.rule.as_str()).collect();
    shared.diag.say(&format!(
        "{what} to {} request {spelling}: {} finding(s) [{}]",
        asked.method,
        j.findings_total,
        rules.join(", ")
    ));
}
