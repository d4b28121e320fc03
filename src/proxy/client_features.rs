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
//!   unjudged. A batch is judged element by element, each element as it would be on its own
//!   line: a refused request is answered to the server and left out for the client, a refused
//!   `input_required` answer becomes the refusal for its client id, one that cannot be judged
//!   the `-32603` error for its id; every other element reaches the client unchanged.

use serde_json::Value;

use super::answers::LineAnswers;
use super::governed::{self, Judged};
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
    /// The line with its refused elements judged (a batch: one line, `\n` terminated): what is
    /// left goes on through the other judgements like any line.
    Edited(Vec<u8>),
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

/// Whether some reader could find a request in `line` (see `line_marks::LineMarks`): `held`
/// when the line's one pass knows, else that pass over this line. A line that cannot hold one
/// passes unread (most server lines are plain responses).
fn may_hold_request(line: &[u8], held: Option<bool>) -> bool {
    held.or_else(|| super::line_marks::read(line, true).may_hold_request)
        .unwrap_or(true)
}

/// Judges a line the gate let through. `answered`: the client requests its responses answer;
/// `held`: what the line's one pass knows of a request in it (`None`: the pass did not read
/// these bytes).
pub(crate) fn judge(
    shared: &Shared,
    line: &[u8],
    answered: &LineAnswers,
    held: Option<bool>,
) -> Features {
    if !may_hold_request(line, held) {
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
    shared.answer_server(&refusal);
}

/// A batch this large is not rewritten element by element (that reads it into values, several
/// times its size): when something in it is refused it is withheld whole instead, as before
/// element-by-element judgement existed — the memory bound of SPEC §3 item 6 holds for every
/// line. Real batches of requests for the client are a few hundred bytes.
const EDIT_BOUND: usize = 1024 * 1024;

/// A batch, element by element (each as on its own line; issue 46 item 6). First, streaming
/// (memory independent of the number of elements): every governed request is judged and
/// recorded once. Nothing refused and no `input_required` answer possible: forwarded as it is.
/// Otherwise a batch of at most [`EDIT_BOUND`] bytes is rewritten — a refused request is
/// answered to the server and left out, an `input_required` answer judged for the client request
/// it answers — and a larger one is withheld whole.
fn batch(shared: &Shared, text: &str, answered: &LineAnswers) -> Features {
    // Pass one: every governed request judged and recorded, and a refused one answered to the
    // server (it never reaches the client, whatever happens to the rest). Nothing is kept per
    // element: pass two judges the same request the same way again, without recording it.
    let mut refused = false;
    for_each_message(text, message::Judged::default(), |m| {
        if let Some(g) = governed::server_request(&shared.policy, m) {
            let decision_id = record(shared, &g.entry());
            if !g.allowed() && !shared.dry_run {
                refused = true;
                say_refused(
                    shared,
                    g.method,
                    g.target.as_deref().unwrap_or("-"),
                    g.verdict.reason_code,
                );
                answer_server(shared, g.id, &g.verdict, &decision_id);
            }
        }
    });
    let input_required = memchr::memmem::find(text.as_bytes(), b"input_required").is_some()
        || memchr::memmem::find(text.as_bytes(), b"\\u").is_some();
    if !refused && !input_required {
        return Features::Pass;
    }
    if text.len() > EDIT_BOUND {
        // A dry run changes nothing the client sees.
        if shared.dry_run {
            return Features::Pass;
        }
        return withheld_whole(shared, text, answered);
    }
    let Ok(Value::Array(elements)) = crate::strict_json::parse_value(text.trim_end()) else {
        return unreadable(shared, answered);
    };
    let by_id = answered.by_id_value();
    let mut kept = Vec::with_capacity(elements.len());
    let mut changed = false;
    for element in elements {
        let one = element.to_string();
        let ClientLine::Single(m) = message::classify(one.as_bytes(), message::Judged::default())
        else {
            kept.push(element);
            continue;
        };
        if let Some(g) = governed::server_request(&shared.policy, &m) {
            // Refused and answered to the server in pass one: left out.
            if g.allowed() || shared.dry_run {
                kept.push(element);
            } else {
                changed = true;
            }
            continue;
        }
        if m.method.is_some() {
            kept.push(element);
            continue;
        }
        // A response: the client request it answers.
        let client_id = element
            .get("id")
            .and_then(|id| by_id.get(id))
            .map(|(_, spelling)| spelling);
        match input_required_for(shared, one.as_bytes(), client_id) {
            Judgement::Pass => kept.push(element),
            Judgement::Refused(out) => {
                changed = true;
                if let Ok(v) = serde_json::from_slice::<Value>(&out) {
                    kept.push(v);
                }
            }
            Judgement::Unreadable => {
                changed = true;
                let error = withheld_error(
                    client_id,
                    "server answer withheld: it cannot be read strictly",
                );
                if let Ok(v) = serde_json::from_slice::<Value>(&error) {
                    kept.push(v);
                }
            }
        }
    }
    if !changed {
        return Features::Pass;
    }
    shared.diag.say(
        "judged a server batch element by element: refused elements were left out or replaced",
    );
    if kept.is_empty() {
        return Features::Instead(Vec::new());
    }
    match serde_json::to_vec(&Value::Array(kept)) {
        Ok(mut out) => {
            out.push(b'\n');
            Features::Edited(out)
        }
        Err(_) => unreadable(shared, answered),
    }
}

/// A batch over [`EDIT_BOUND`] with something refused (or an `input_required` answer that is not
/// read): withheld whole, streaming. Its refused requests were answered in pass one; every other
/// request it holds is answered to the server with the plain batch error (none reaches the
/// client); the client requests it answered get the `-32603` error.
fn withheld_whole(shared: &Shared, text: &str, answered: &LineAnswers) -> Features {
    shared.diag.say(
        "withheld a large server batch whole: it holds something the policy refuses or cannot be judged element by element",
    );
    for_each_message(text, message::Judged::default(), |m| {
        let (Some(_), Some(id)) = (m.method, m.id) else {
            return;
        };
        if governed::server_request(&shared.policy, m).is_some_and(|g| !g.allowed()) {
            return;
        }
        if let Some(raw) = raw_id(id) {
            shared.answer_server(&respond::error(
                Some(raw),
                respond::BATCH_REFUSED,
                "batch refused: a message in the batch was not allowed",
            ));
        }
    });
    Features::Instead(withheld(
        answered,
        "server answer withheld: its batch held a request the policy refuses",
    ))
}

/// What [`input_required_for`] made of one response.
enum Judgement {
    /// Forward it.
    Pass,
    /// Replace it by this refusal (no `\n`; empty when the client's id is unknown).
    Refused(Vec<u8>),
    /// It cannot be judged: withheld.
    Unreadable,
}

/// A response: under 2026-07-28 a result with `resultType: "input_required"` carries input
/// requests (`inputRequests`: name → `{method, params}`) the client is to fulfil — judged like
/// the server requests of the same methods.
fn input_required(shared: &Shared, line: &[u8], answered: &LineAnswers) -> Features {
    match input_required_for(shared, line, answered.spellings().next()) {
        Judgement::Pass => Features::Pass,
        Judgement::Refused(mut out) if !out.is_empty() => {
            out.push(b'\n');
            Features::Instead(out)
        }
        Judgement::Refused(_) => Features::Instead(Vec::new()),
        Judgement::Unreadable => unreadable(shared, answered),
    }
}

/// [`input_required`] of one response, answering the client request spelled `client_id`.
fn input_required_for(shared: &Shared, line: &[u8], client_id: Option<&str>) -> Judgement {
    // Most responses are not input requests: a line without the word is not parsed. The word
    // (and `resultType`) can be spelled otherwise only with `\u` escapes (none of its characters
    // has a short escape), so `\n` in a tool's text does not make every answer parsed.
    if memchr::memmem::find(line, b"input_required").is_none()
        && memchr::memmem::find(line, b"\\u").is_none()
    {
        return Judgement::Pass;
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Judgement::Pass;
    };
    // The line passed the strict client-line scan (`judge`): a value of it is the value every
    // strict reader sees.
    let Ok(value) = crate::strict_json::parse_value(text.trim_end()) else {
        return Judgement::Pass;
    };
    let Some(result) = value.get("result").and_then(Value::as_object) else {
        return Judgement::Pass;
    };
    // A lenient reader (Go's encoding/json folds case) would read a variant as the member: such
    // a result cannot be judged, and is withheld.
    let variant = crate::lenient::has_variant;
    if variant(result, &["resultType", "inputRequests"]) {
        return Judgement::Unreadable;
    }
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return Judgement::Pass;
    }
    let Some(requests) = result.get("inputRequests").and_then(Value::as_object) else {
        return Judgement::Unreadable;
    };
    if requests
        .values()
        .any(|r| r.as_object().is_none_or(|o| variant(o, &["method"])))
    {
        return Judgement::Unreadable;
    }
    let request_id = tool_call_id(client_id);
    let mut refusal: Option<(Verdict, String)> = None;
    for input in requests.values() {
        let Some(method) = input.get("method").and_then(Value::as_str) else {
            continue;
        };
        let Some(row) = crate::methods::method(method) else {
            continue;
        };
        let (method, Some(feature)) = (row.name, row.target.feature()) else {
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
        return Judgement::Pass;
    };
    let raw = client_id.and_then(raw_id);
    match raw {
        Some(raw) => Judgement::Refused(respond::refused_request(
            raw,
            verdict.decision.as_str(),
            verdict.reason_code,
            &decision_id,
        )),
        None => Judgement::Refused(Vec::new()),
    }
}

/// Whether the policy judges what the server asks of the client.
pub(crate) fn governed(shared: &Shared) -> bool {
    shared.policy.governed().contains(&"client_features")
}

#[cfg(test)]
mod tests {
    use super::may_hold_request;
    use proptest::prelude::*;

    /// The definition the one pass replaces: an escape or non-ASCII byte anywhere, or the word
    /// in any ASCII case.
    fn two_passes(line: &[u8]) -> bool {
        const WORD: &[u8] = b"method";
        line.iter().any(|b| *b == b'\\' || !b.is_ascii())
            || memchr::memchr2_iter(b'm', b'M', line).any(|at| {
                line.get(at..at + WORD.len())
                    .is_some_and(|w| w.eq_ignore_ascii_case(WORD))
            })
    }

    proptest! {
        #[test]
        fn one_pass_is_the_definition(line in prop::collection::vec(prop_oneof![
            Just(b'm'), Just(b'M'), Just(b'e'), Just(b't'), Just(b'H'), Just(b'o'), Just(b'd'),
            Just(b'\\'), any::<u8>()], 0..64)) {
            prop_assert_eq!(may_hold_request(&line, None), two_passes(&line));
        }
    }

    #[test]
    fn only_a_line_without_any_spelling_of_method_passes_unread() {
        for plain in [
            &br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"result":{"text":"meth od"}}"#,
            b"",
        ] {
            assert!(
                !may_hold_request(plain, None),
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
            assert!(may_hold_request(held, None), "{}", String::from_utf8_lossy(held));
        }
    }
}
