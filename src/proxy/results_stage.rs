//! The answers to governed requests on the server→client path (SPEC §5.3): each message of a
//! line that answers a request `results` judges (`pending::Answer::asked`) goes through the judge
//! (`crate::results`), is replaced by the refusal, rewritten or left as it is, and gets its
//! `assay.mcp.result` event (`evidence::result_event`) before the line reaches the client.
//! Everything else of the line stays byte for byte; a batch is judged element by element.
//!
//! The `outputSchema` a `tools/call` answer is checked against is the pinned definition's
//! (SPEC §5.1), else the one the session's last `tools/list` answer gave for that tool.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use serde_json::value::RawValue;

use super::pending::LineAnswers;
use super::respond;
use super::shared::Shared;
use crate::evidence::result_event::{self, Action, ResultEntry};
use crate::methods::Answer;
use crate::policy::{Policy, ReasonCode};
use crate::results::{self, Asked, Judged};
use crate::sha256::HexDigest;

/// The session's judge of answers: the policy's `results` and the tools' output schemas.
pub(crate) struct AnswerStage {
    /// Output schemas by tool name: pinned ones (fixed), listed ones (as the session lists).
    schemas: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
    /// Whether schemas come from pins only (a listing does not replace them).
    pinned: bool,
}

fn output_schema(tool: &Value) -> Option<Arc<jsonschema::Validator>> {
    let schema = tool.get("outputSchema")?;
    jsonschema::draft202012::options()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(schema)
        .ok()
        .map(Arc::new)
}

impl AnswerStage {
    /// The stage of a session under `policy`; `None` without a `results` section.
    pub(crate) fn new(policy: &Policy) -> Option<AnswerStage> {
        let results = policy.results()?;
        let mut schemas = HashMap::new();
        let pins = policy.pins().filter(|_| results.output_schema().is_some());
        if let Some(pins) = pins {
            for (name, pin) in pins.iter() {
                let tool = serde_json::from_str::<Value>(pin.definition()).ok();
                if let Some(v) = tool.as_ref().and_then(output_schema) {
                    schemas.insert(name.to_owned(), v);
                }
            }
        }
        Some(AnswerStage {
            schemas: Mutex::new(schemas),
            pinned: pins.is_some(),
        })
    }

    fn schema(&self, tool: Option<&str>) -> Option<Arc<jsonschema::Validator>> {
        let map = self
            .schemas
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(tool?).cloned()
    }

    /// A `tools/list` answer without pins: remembers each listed tool's `outputSchema`.
    fn listed(&self, line: &[u8]) {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let messages = match &v {
            Value::Array(a) => a.iter().collect(),
            one => vec![one],
        };
        let mut map = self
            .schemas
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for m in messages {
            let tools = m.pointer("/result/tools").and_then(Value::as_array);
            for tool in tools.into_iter().flatten() {
                if let Some(name) = tool.get("name").and_then(Value::as_str) {
                    match output_schema(tool) {
                        Some(s) => map.insert(name.to_owned(), s),
                        None => map.remove(name),
                    };
                }
            }
        }
    }
}

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
    let Some(elements) = results::batch_elements(body) else {
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
    let request_id = id_key(spelling).unwrap_or_else(|| "null".to_owned());
    let decision_id = asked.decision.map(|seq| shared.decision_id(seq));
    // What the client gets; a refusal names this answer's event.
    let client_bytes = |seq: u64| -> Vec<u8> {
        match action {
            Action::Refused => refusal(shared, spelling, asked, code, seq),
            Action::Redacted => judged.rewritten.clone().unwrap_or_else(|| msg.to_vec()),
            Action::Forwarded => msg.to_vec(),
        }
    };
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
                judged: &judged,
                action,
                reason_code: code,
                enforced,
            },
        );
        sent = Some(bytes);
    });
    let bytes = sent.unwrap_or_else(|| client_bytes(seq));
    say(shared, spelling, asked, &judged, action, code);
    let changed = action != Action::Forwarded;
    (bytes, changed)
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
