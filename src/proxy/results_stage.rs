//! The answers to governed requests on the server→client path (SPEC §5.3): each message of a
//! line that answers a request `results` judges (`pending::Answer::asked`) goes through the judge
//! (`crate::results`), is replaced by the refusal, rewritten or left as it is, and gets its
//! `assay.mcp.result` event (`evidence::result_event`) before the line reaches the client.
//! Everything else of the line stays byte for byte; a batch is judged element by element.
//!
//! The `outputSchema` a `tools/call` answer is checked against is `output_schemas`'s.

use std::borrow::Cow;

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
/// The common spellings — a small non-negative integer, a string without escapes or control
/// characters — are their own compact JSON and are borrowed; others are parsed and written.
fn id_key(raw: &str) -> Option<Cow<'_, str>> {
    if is_compact(raw.as_bytes()) {
        return Some(Cow::Borrowed(raw));
    }
    serde_json::from_str::<Value>(raw)
        .ok()
        .filter(|v| v.is_string() || v.is_number())
        .map(|v| Cow::Owned(v.to_string()))
}

/// Whether `raw` is written by `serde_json` exactly as it is: `0`, or up to 18 digits without a
/// leading zero (an integer `serde_json` reads as one); or `"…"` holding no `"`, `\` or
/// control character (what `serde_json` escapes in a string).
fn is_compact(raw: &[u8]) -> bool {
    match raw {
        [b'0'] => true,
        [b'1'..=b'9', rest @ ..] => rest.len() < 18 && rest.iter().all(u8::is_ascii_digit),
        [b'"', inner @ .., b'"'] => !inner.iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20),
        _ => false,
    }
}

/// Judges the answers of `line` that `results` judges: `None` when the line goes on as it is.
pub(crate) fn on_line(shared: &Shared, line: &[u8], answered: &LineAnswers) -> Option<Vec<u8>> {
    let stage = shared.answers.as_ref()?;
    let results = shared.policy.results()?;
    if results.output_schema().is_some() && !stage.pinned && answered.lists_tools() {
        stage.listed(line);
    }
    let mut each = answered.judged();
    let first = each.next()?;
    let body = results::without_terminator(line);
    let terminator = line.get(body.len()..).unwrap_or_default();
    if !body.trim_ascii_start().starts_with(b"[") {
        // One message: the line without its terminator.
        let (spelling, asked) = first;
        let (out, changed) = one(shared, stage, body, spelling, asked);
        return changed.then(|| [&*out, terminator].concat());
    }
    let judged: Vec<(&str, &Asked)> = std::iter::once(first).chain(each).collect();
    let Some(elements) = results::batch_elements(body) else {
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
    };
    let mut out = Vec::with_capacity(line.len());
    let mut at = 0;
    let mut changed = false;
    let keys: Vec<(Option<Cow<'_, str>>, &str, &Asked)> =
        judged.iter().map(|(s, a)| (id_key(s), *s, *a)).collect();
    let mut used = vec![false; keys.len()];
    for e in elements {
        let key =
            e.id.and_then(|(s, end)| body.get(s..end))
                .and_then(|id| std::str::from_utf8(id).ok())
                .and_then(id_key);
        let Some(k) = key.and_then(|key| {
            (0..keys.len()).find(|&k| !used[k] && keys[k].0.as_deref() == Some(&*key))
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
fn one<'m>(
    shared: &Shared,
    stage: &AnswerStage,
    msg: &'m [u8],
    spelling: &str,
    asked: &Asked,
) -> (Cow<'m, [u8]>, bool) {
    let Some(results) = shared.policy.results() else {
        return (Cow::Borrowed(msg), false);
    };
    let schema = stage.schema(asked.tool.as_deref());
    let mut judged = results::judge(msg, asked, results, schema.as_deref());
    let enforced = !shared.dry_run;
    let (action, code) = match (judged.refused, &judged.rewritten) {
        (Some(code), _) if enforced => (Action::Refused, code),
        (Some(code), _) => (Action::Forwarded, code),
        (None, Some(_)) if enforced => (Action::Redacted, ReasonCode::P_POLICY_ALLOW),
        (None, _) => (Action::Forwarded, ReasonCode::P_POLICY_ALLOW),
    };
    // What the client gets, unless refused (a refusal names the event, so it is written once
    // the event is numbered).
    let kept: Option<&[u8]> = match action {
        Action::Refused => None,
        Action::Redacted => Some(judged.rewritten.as_deref().unwrap_or(msg)),
        Action::Forwarded => Some(msg),
    };
    let refused = record(
        shared,
        spelling,
        asked,
        &judged,
        (action, code, enforced),
        kept,
    );
    say(shared, spelling, asked, &judged, action, code);
    let bytes = match (action, refused) {
        (Action::Forwarded, _) => Cow::Borrowed(msg),
        (Action::Redacted, _) => {
            Cow::Owned(judged.rewritten.take().unwrap_or_else(|| msg.to_vec()))
        }
        (Action::Refused, refused) => Cow::Owned(refused),
    };
    (bytes, action != Action::Forwarded)
}

/// Records the result event of the answer to the request the client spelled `spelling`. The
/// client gets `kept`, whose digest is taken before the log is locked; or, when `None`, the
/// refusal, which names the event and so is built once the event is numbered — returned (empty
/// when `kept` was given).
fn record(
    shared: &Shared,
    spelling: &str,
    asked: &Asked,
    judged: &Judged,
    (action, code, enforced): (Action, ReasonCode, bool),
    kept: Option<&[u8]>,
) -> Vec<u8> {
    let request_id = id_key(spelling).unwrap_or(Cow::Borrowed("null"));
    let decision_id = asked.decision.map(|seq| shared.decision_id(seq));
    let kept_digest = kept.map(HexDigest::of);
    let mut refused: Option<Vec<u8>> = None;
    let seq = shared.record_numbered(|f, out, seq| {
        let bytes = match kept {
            Some(bytes) => bytes,
            None => refused.insert(refusal(shared, spelling, asked, code, seq)),
        };
        let own;
        let sha256 = match &kept_digest {
            Some(d) => d,
            None => {
                own = HexDigest::of(bytes);
                &own
            }
        };
        result_event::push_result_line(
            f,
            out,
            seq,
            &ResultEntry {
                method: asked.method,
                request_id: &request_id,
                decision_id: decision_id.as_deref(),
                sha256,
                bytes: bytes.len() as u64,
                judged,
                action,
                reason_code: code,
                enforced,
            },
        );
    });
    match kept {
        Some(_) => Vec::new(),
        None => refused.unwrap_or_else(|| refusal(shared, spelling, asked, code, seq)),
    }
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
        None,
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
    let mut left: Vec<(Option<Cow<'_, str>>, &str, &Asked)> =
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
            let Some(k) =
                key.and_then(|key| left.iter().position(|(k, ..)| k.as_deref() == Some(&*key)))
            else {
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
                Some(msg),
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

#[cfg(test)]
mod tests {
    use super::id_key;
    use proptest::prelude::*;

    /// The key as it was computed for every id: parsed and written by `serde_json`.
    fn parsed(raw: &str) -> Option<String> {
        serde_json::from_str::<serde_json::Value>(raw)
            .ok()
            .filter(|v| v.is_string() || v.is_number())
            .map(|v| v.to_string())
    }

    #[test]
    fn borrowed_keys_are_what_serde_json_writes() {
        for raw in [
            "0",
            "7",
            "-0",
            "-1",
            "007",
            "1.0",
            "1e2",
            "123456789012345678",
            "1234567890123456789",
            "99999999999999999999",
            r#""a""#,
            r#""""#,
            r#""a\"b""#,
            r#""\u0061""#,
            "\"\u{1}\"",
            "\"\u{7f}é\u{2028}\"",
            " 1",
            "true",
            "null",
            "\"",
        ] {
            assert_eq!(id_key(raw).map(|k| k.into_owned()), parsed(raw), "{raw:?}");
        }
    }

    proptest! {
        #[test]
        fn every_key_is_what_serde_json_writes(
            raw in prop_oneof![
                "-?[0-9]{1,22}(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?",
                "\"[a-z0-9 \"\\\\\u{1}\u{7f}é\u{2028}]{0,8}\"",
                any::<String>(),
            ]
        ) {
            prop_assert_eq!(id_key(&raw).map(|k| k.into_owned()), parsed(&raw));
        }
    }
}
