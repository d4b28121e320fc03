//! Fuzzes the client-line classifier (SPEC §3 item 6): it never panics, and what it lets through
//! agrees with an independent parse. A line classified as a message or a batch is valid JSON
//! with no duplicate key, and every object that a parser sees with `"method": "tools/call"` is
//! one the classifier flagged for the policy.
#![no_main]

#[path = "common.rs"]
mod common;

use assay::fuzzing::{CLIENT_MAX_DEPTH, ClientLineSummary, MessageSummary, classify_client_line};
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
}

fuzz_target!(|line: &[u8]| {
    let summary = classify_client_line(line);
    let reference = common::reference(line);
    let value: Option<Value> = common::literal_value(line);
    match &summary {
        ClientLineSummary::Blank => {
            assert!(line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n')));
        }
        ClientLineSummary::ParseError(_) => {
            // Refused: the reference must see a reason (or refuse the bytes itself).
            if let Some(info) = reference {
                assert!(
                    info.duplicate_key || info.depth > CLIENT_MAX_DEPTH,
                    "refused a line serde_json accepts: {info:?}"
                );
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
            let v = value.expect("NotObject must be valid JSON");
            assert!(!v.is_object() && !v.is_array());
        }
        ClientLineSummary::Single(m) => {
            let info = reference.expect("Single must be valid JSON");
            assert!(!info.duplicate_key, "Single with a duplicate key");
            assert!(info.depth <= CLIENT_MAX_DEPTH);
            let v = value.expect("Single must be valid JSON");
            check_message(m, &v);
        }
        ClientLineSummary::Batch(items) => {
            let info = reference.expect("Batch must be valid JSON");
            assert!(!info.duplicate_key, "Batch with a duplicate key");
            assert!(info.depth <= CLIENT_MAX_DEPTH);
            let v = value.expect("Batch must be valid JSON");
            let arr = v.as_array().expect("Batch is an array");
            assert_eq!(arr.len(), items.len());
            for (item, elem) in items.iter().zip(arr) {
                match item {
                    Some(m) => check_message(m, elem),
                    None => assert!(!elem.is_object()),
                }
            }
        }
    }
    // Conversely: anything serde_json accepts without a duplicate key and within the depth is
    // classified as JSON (never a parse error), so the two parsers agree on every line.
    if let Some(info) = reference {
        if !info.duplicate_key && info.depth <= CLIENT_MAX_DEPTH {
            assert!(
                !matches!(summary, ClientLineSummary::ParseError(_)),
                "{summary:?}"
            );
        }
    }
    // A forwarded line (blank, a message, a batch) holds no `\r` that a universal-newline
    // reader would take for a line break inside it.
    if matches!(summary, ClientLineSummary::Single(_) | ClientLineSummary::Batch(_)) {
        let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
        if let (Some(first), Some(last)) = (line.iter().position(|b| !ws(b)), line.iter().rposition(|b| !ws(b))) {
            assert!(!line[first..last].contains(&b'\r'));
        }
    }
});
