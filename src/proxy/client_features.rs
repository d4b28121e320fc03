//! What the server asks of the client, judged (SPEC §5.2 `client_features`): a server request
//! `sampling/createMessage`, `elicitation/create` or `roots/list`, and under 2026-07-28 the same
//! input requests inside an `input_required` result. Runs in the server→client worker, on the
//! lines the answer gate lets through, only when the policy has `client_features`.
//!
//! - A judged request gets one `assay.mcp.decision` event (`server_to_client`). Refused (and not
//!   dry run), it is answered to the server with the refusal error and never reaches the client.
//! - An `input_required` result holding a refused input request is replaced, for the client, by
//!   the refusal error for the client's request id.
//! - A line the strict client-line rules cannot read could hide a request from a lenient client
//!   parser: it is withheld (the requests it answered get the `-32603` error), never forwarded
//!   unjudged. A batch holding a refused request is withheld whole: its requests are answered to
//!   the server with the refusal error, the requests it answered get the `-32603` error.

use serde_json::Value;

use super::answers::LineAnswers;
use super::governed::{self, FEATURE_METHODS, Judged};
use super::message::{self, ClientLine, for_each_message, raw_id, tool_call_id};
use super::respond;
use super::shared::Shared;
use super::tools_list::withheld_error;
use crate::evidence::decision_log::{Direction, McpDecisionEntry};
use crate::policy::{Decision, ReasonCode, Verdict};

/// What happens to a line the answer gate let through.
pub(crate) enum Features {
    /// Forward it (nothing judged refused it).
    Pass,
    /// Write this to the client instead (one line, `\n` terminated; empty: nothing).
    Instead(Vec<u8>),
}

/// Records one judged message; returns the event id of its decision (for a refusal), numbered
/// even without a decision log, as on the client path.
fn record(shared: &Shared, entry: &McpDecisionEntry<'_>) -> String {
    shared.record_decision(|f, out, seq| f.push_mcp_decision_line(out, seq, entry))
}

/// Says on stderr what was refused.
fn say_refused(shared: &Shared, method: &str, target: &str, code: ReasonCode) {
    shared.diag.say(&format!(
        "refused the server's {method} request ({target}): {}",
        code.as_str()
    ));
}

/// `-32603` errors for every request the line answered (one line; empty when none).
fn withheld(answered: &LineAnswers, why: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for spelling in answered.spellings() {
        out.extend_from_slice(&withheld_error(Some(spelling), why));
        out.push(b'\n');
    }
    out
}

/// Whether some reader could find a request in `line`: it holds the word `method` in any ASCII
/// case, an escape or a non-ASCII byte (a lenient reader folds some characters into ASCII
/// letters). A line with none of them holds no request and no `input_required` input request, to
/// any reader: it passes unread (most server lines are plain responses).
fn may_hold_request(line: &[u8]) -> bool {
    const WORD: &[u8] = b"method";
    line.iter().any(|b| *b == b'\\' || !b.is_ascii())
        || memchr::memchr2_iter(b'm', b'M', line).any(|at| {
            line.get(at..at + WORD.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(WORD))
        })
}

/// Judges a line the gate let through. `answered`: the client requests its responses answer.
pub(crate) fn judge(shared: &Shared, line: &[u8], answered: &LineAnswers) -> Features {
    if !may_hold_request(line) {
        return Features::Pass;
    }
    match message::classify(line, message::Judged::default()) {
        ClientLine::Blank => Features::Pass,
        ClientLine::Single(m) => {
            if let Some(g) = governed::server_request(&shared.policy, &m) {
                return request(shared, &g);
            }
            if m.method.is_none() {
                return input_required(shared, line, answered);
            }
            Features::Pass
        }
        ClientLine::Batch(text) => batch(shared, text, answered),
        ClientLine::ParseError(_)
        | ClientLine::KeyVariant(_)
        | ClientLine::CarriageReturn(_)
        | ClientLine::NotObject => unreadable(shared, answered),
    }
}

/// A line that cannot be read strictly could hold a request for the client that a lenient
/// parser reads: withheld; the requests it answered get the `-32603` error.
fn unreadable(shared: &Shared, answered: &LineAnswers) -> Features {
    shared.diag.say(
        "withheld a server line that cannot be read strictly: it could hold a request for the client (client_features is governed)",
    );
    Features::Instead(withheld(
        answered,
        "server answer withheld: it cannot be read strictly",
    ))
}

/// One server request of a governed feature.
fn request(shared: &Shared, g: &Judged<'_>) -> Features {
    let decision_id = record(shared, &g.entry());
    if g.allowed() || shared.dry_run {
        return Features::Pass;
    }
    say_refused(
        shared,
        g.method,
        g.target.as_deref().unwrap_or("-"),
        g.verdict.reason_code,
    );
    answer_server(shared, g.id, &g.verdict, &decision_id);
    Features::Instead(Vec::new())
}

/// Answers a refused server request to the server (best effort: a server that stopped reading
/// ends the session by itself).
fn answer_server(shared: &Shared, id: Option<&str>, verdict: &Verdict, decision_id: &str) {
    let Some(raw) = id.and_then(raw_id) else {
        return;
    };
    let refusal = respond::refused_request(
        raw,
        verdict.decision.as_str(),
        verdict.reason_code,
        decision_id,
    );
    let _ = shared.server_input.answer(&refusal);
}

/// A batch: every governed request judged; one refused (not dry run) withholds the batch.
fn batch(shared: &Shared, text: &str, answered: &LineAnswers) -> Features {
    let mut refused = false;
    let mut judged = Vec::new();
    for_each_message(text, message::Judged::default(), |m| {
        if let Some(g) = governed::server_request(&shared.policy, m) {
            let decision_id = record(shared, &g.entry());
            refused |= !g.allowed();
            judged.push((m.id.map(str::to_owned), Some((g.verdict, decision_id))));
        } else if m.method.is_some() && m.id.is_some() {
            // Not judged, so no decision: refused with its batch by the plain batch error, as
            // on the client path (never a refusal naming an empty decision id).
            judged.push((m.id.map(str::to_owned), None));
        }
    });
    if !refused || shared.dry_run {
        return Features::Pass;
    }
    shared
        .diag
        .say("refused a server batch: it holds a request for the client the policy refuses");
    for (id, decided) in &judged {
        match decided {
            Some((verdict, decision_id)) => {
                answer_server(shared, id.as_deref(), verdict, decision_id);
            }
            None => {
                if let Some(raw) = id.as_deref().and_then(raw_id) {
                    let _ = shared.server_input.answer(&respond::error(
                        Some(raw),
                        respond::BATCH_REFUSED,
                        "batch refused: a message in the batch was not allowed",
                    ));
                }
            }
        }
    }
    Features::Instead(withheld(
        answered,
        "server answer withheld: its batch held a request the policy refuses",
    ))
}

/// A response: under 2026-07-28 a result with `resultType: "input_required"` carries input
/// requests (`inputRequests`: name → `{method, params}`) the client is to fulfil — judged like
/// the server requests of the same methods.
fn input_required(shared: &Shared, line: &[u8], answered: &LineAnswers) -> Features {
    // Most responses are not input requests: a line without the word is not parsed. The word
    // (and `resultType`) can be spelled otherwise only with `\u` escapes (none of its characters
    // has a short escape), so `\n` in a tool's text does not make every answer parsed.
    if memchr::memmem::find(line, b"input_required").is_none()
        && memchr::memmem::find(line, b"\\u").is_none()
    {
        return Features::Pass;
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Features::Pass;
    };
    // The line passed the strict client-line scan (`judge`): a value of it is the value every
    // strict reader sees.
    let Ok(value) = crate::strict_json::parse_value(text.trim_end()) else {
        return Features::Pass;
    };
    let Some(result) = value.get("result").and_then(Value::as_object) else {
        return Features::Pass;
    };
    // A lenient reader (Go's encoding/json folds case) would read a variant as the member: such
    // a result cannot be judged, and is withheld.
    let variant = |obj: &serde_json::Map<String, Value>, names: &[&str]| {
        obj.keys()
            .any(|k| names.iter().any(|n| crate::lenient::is_variant(k, n)))
    };
    if variant(result, &["resultType", "inputRequests"]) {
        return unreadable(shared, answered);
    }
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return Features::Pass;
    }
    let Some(requests) = result.get("inputRequests").and_then(Value::as_object) else {
        return unreadable(shared, answered);
    };
    if requests
        .values()
        .any(|r| r.as_object().is_none_or(|o| variant(o, &["method"])))
    {
        return unreadable(shared, answered);
    }
    let client_id = answered.spellings().next();
    let request_id = tool_call_id(client_id);
    let mut refusal: Option<(Verdict, String)> = None;
    for input in requests.values() {
        let Some(method) = input.get("method").and_then(Value::as_str) else {
            continue;
        };
        let Some((method, feature)) = FEATURE_METHODS.iter().copied().find(|(m, _)| *m == method)
        else {
            continue;
        };
        let Some(verdict) = shared.policy.evaluate_client_feature(feature) else {
            continue;
        };
        let params_sha256 = input
            .get("params")
            .and_then(|p| crate::canonical::digest_of(&p.to_string()));
        let decision_id = record(
            shared,
            &McpDecisionEntry {
                method,
                direction: Direction::ServerToClient,
                target: Some(feature.as_str()),
                request_id: request_id.as_deref(),
                decision: verdict.decision,
                reason_code: verdict.reason_code,
                reason: &verdict.reason,
                matched_rule: verdict.matched_rule.as_deref(),
                params_sha256: params_sha256.as_ref(),
            },
        );
        if verdict.decision != Decision::Allow && refusal.is_none() {
            say_refused(shared, method, feature.as_str(), verdict.reason_code);
            refusal = Some((verdict, decision_id));
        }
    }
    let Some((verdict, decision_id)) = refusal.filter(|_| !shared.dry_run) else {
        return Features::Pass;
    };
    let raw = client_id.and_then(raw_id);
    match raw {
        Some(raw) => {
            let mut out = respond::refused_request(
                raw,
                verdict.decision.as_str(),
                verdict.reason_code,
                &decision_id,
            );
            out.push(b'\n');
            Features::Instead(out)
        }
        None => Features::Instead(Vec::new()),
    }
}

/// Whether the policy judges what the server asks of the client.
pub(crate) fn governed(shared: &Shared) -> bool {
    shared.policy.governed().contains(&"client_features")
}

#[cfg(test)]
mod tests {
    use super::may_hold_request;

    #[test]
    fn only_a_line_without_any_spelling_of_method_passes_unread() {
        for plain in [
            &br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"result":{"text":"meth od"}}"#,
            b"",
        ] {
            assert!(
                !may_hold_request(plain),
                "{}",
                String::from_utf8_lossy(plain)
            );
        }
        for held in [
            &br#"{"jsonrpc":"2.0","id":"s","method":"sampling/createMessage"}"#[..],
            br#"{"jsonrpc":"2.0","id":"s","METHOD":"roots/list"}"#,
            br#"{"jsonrpc":"2.0","id":"s","m\u0065thod":"roots/list"}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"méthod\":1}".as_bytes(),
            br#"{"id":1,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}}}}"#,
            br#"{"x":"trailing Metho"}method"#,
        ] {
            assert!(may_hold_request(held), "{}", String::from_utf8_lossy(held));
        }
    }
}
