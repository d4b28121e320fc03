//! Fuzzes the client-line classifier (SPEC §3 item 6): it never panics, and what it lets through
//! agrees with an independent parse. A line classified as a message or a batch is valid JSON
//! with no duplicate key, and every object that a parser sees with `"method": "tools/call"` is
//! one the classifier flagged for the policy. Lenient keys (SPEC §3 item 6): a forwarded line has
//! no two keys of one object equal after lenient normalization, and no message with a key that is
//! a variant of an envelope member (or, in a `tools/call`, of a `params` member); a line refused
//! for a variant has one; and the extracted `params.name`/`params.arguments` are exactly the
//! members every parser sees.
#![no_main]

#[path = "common.rs"]
mod common;

use assay::fuzzing::{
    CLIENT_MAX_DEPTH, ClientLineSummary, MessageSummary, classify_client_line, normalize_key,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn is_tools_call(v: &Value) -> bool {
    v.get("method").and_then(Value::as_str) == Some("tools/call")
}

fn check_message(m: &MessageSummary, v: &Value) {
    assert!(v.is_object());
    assert_eq!(m.is_tools_call, is_tools_call(v), "{m:?} vs {v}");
    assert_eq!(m.method.is_some(), v.get("method").is_some());
    assert_eq!(m.id.is_some(), v.get("id").is_some());
    let params = v.get("params").and_then(Value::as_object);
    for (raw, member) in [(&m.name, "name"), (&m.arguments, "arguments")] {
        let want = params.and_then(|p| p.get(member));
        let got = raw
            .as_deref()
            .and_then(|t| common::literal_value(t.as_bytes()));
        assert_eq!(got.as_ref(), want, "params.{member} of {v}");
    }
    assert!(!member_variant(v), "forwarded a member-name variant: {v}");
}

fn variant(key: &str, name: &str) -> bool {
    key != name && normalize_key(key) == name
}

const ENVELOPE: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];
const CALL_PARAMS: [&str; 3] = ["name", "arguments", "_meta"];

/// An envelope key, or a `tools/call`'s params key, that is a variant of a member name.
fn member_variant(msg: &Value) -> bool {
    let Some(m) = msg.as_object() else {
        return false;
    };
    m.keys().any(|k| ENVELOPE.iter().any(|n| variant(k, n)))
        || (is_tools_call(msg)
            && msg
                .get("params")
                .and_then(Value::as_object)
                .is_some_and(|p| p.keys().any(|k| CALL_PARAMS.iter().any(|n| variant(k, n)))))
}

/// Two keys of one object equal after lenient normalization, anywhere.
fn lenient_duplicate(v: &Value) -> bool {
    match v {
        Value::Object(m) => {
            let mut seen = std::collections::HashSet::new();
            m.keys().any(|k| !seen.insert(normalize_key(k))) || m.values().any(lenient_duplicate)
        }
        Value::Array(a) => a.iter().any(lenient_duplicate),
        _ => false,
    }
}

fn messages(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    }
}

fuzz_target!(|line: &[u8]| {
    let summary = classify_client_line(line);
    let reference = common::reference(line);
    let value: Option<Value> = common::literal_value(line);
    match &summary {
        ClientLineSummary::Blank => {
            assert!(
                line.iter()
                    .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            );
        }
        ClientLineSummary::ParseError(_) => {
            // Refused: the reference must see a reason (or refuse the bytes itself).
            if let Some(info) = reference {
                let lenient = value.as_ref().is_some_and(lenient_duplicate);
                assert!(
                    info.duplicate_key || info.depth > CLIENT_MAX_DEPTH || lenient,
                    "refused a line serde_json accepts: {info:?}"
                );
            }
        }
        ClientLineSummary::KeyVariant(_) => {
            // Refused at the variant key (the scan stops there): a valid line must hold one.
            if let (Some(info), Some(v)) = (reference, &value) {
                if !info.duplicate_key && info.depth <= CLIENT_MAX_DEPTH {
                    assert!(
                        messages(v).iter().any(|m| member_variant(m)),
                        "no variant in {v}"
                    );
                }
            }
        }
        ClientLineSummary::CarriageReturn(at) => {
            // Refused: a `\r` strictly inside the line's non-whitespace span.
            assert_eq!(line.get(*at), Some(&b'\r'));
            let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
            assert!(line[..*at].iter().any(|b| !ws(b)) && line[*at..].iter().any(|b| !ws(b)));
        }
        ClientLineSummary::NotObject => {
            let info = reference.expect("NotObject must be valid JSON");
            assert_eq!(info.depth, 0);
            let v = value.as_ref().expect("NotObject must be valid JSON");
            assert!(!v.is_object() && !v.is_array());
        }
        ClientLineSummary::Single(m) => {
            let info = reference.expect("Single must be valid JSON");
            assert!(!info.duplicate_key, "Single with a duplicate key");
            assert!(info.depth <= CLIENT_MAX_DEPTH);
            let v = value.as_ref().expect("Single must be valid JSON");
            assert!(!lenient_duplicate(&v), "forwarded a lenient duplicate: {v}");
            check_message(m, &v);
        }
        ClientLineSummary::Batch(items) => {
            let info = reference.expect("Batch must be valid JSON");
            assert!(!info.duplicate_key, "Batch with a duplicate key");
            assert!(info.depth <= CLIENT_MAX_DEPTH);
            let v = value.as_ref().expect("Batch must be valid JSON");
            assert!(!lenient_duplicate(&v), "forwarded a lenient duplicate: {v}");
            let objects: Vec<&Value> = v
                .as_array()
                .expect("Batch is an array")
                .iter()
                .filter(|e| e.is_object())
                .collect();
            assert_eq!(objects.len(), items.len());
            for (m, elem) in items.iter().zip(objects) {
                check_message(m, elem);
            }
        }
    }
    // Conversely: anything serde_json accepts without a duplicate key and within the depth is
    // classified as JSON (never a parse error), so the two parsers agree on every line.
    if let (Some(info), Some(v)) = (reference, &value) {
        if !info.duplicate_key && info.depth <= CLIENT_MAX_DEPTH && !lenient_duplicate(v) {
            assert!(
                !matches!(summary, ClientLineSummary::ParseError(_)),
                "{summary:?}"
            );
            if !messages(v).iter().any(|m| member_variant(m)) {
                assert!(
                    !matches!(summary, ClientLineSummary::KeyVariant(_)),
                    "{summary:?}"
                );
            }
        }
    }
    // A forwarded line (blank, a message, a batch) holds no `\r` that a universal-newline
    // reader would take for a line break inside it.
    if matches!(
        summary,
        ClientLineSummary::Single(_) | ClientLineSummary::Batch(_)
    ) {
        let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
        if let (Some(first), Some(last)) = (
            line.iter().position(|b| !ws(b)),
            line.iter().rposition(|b| !ws(b)),
        ) {
            assert!(!line[first..last].contains(&b'\r'));
        }
    }
});
