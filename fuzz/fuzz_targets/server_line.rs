//! Fuzzes the fail-closed reading of server lines (SPEC §5, "Reading the server fails closed
//! too"): whatever one server line holds, after the wrapper has filtered it no reading of the
//! output shows the client a refused tool in an answer to one of its `tools/list` requests. The
//! first input byte picks the request ids the client sent; the rest (up to its first `\n`) is
//! the server line.
//!
//! The reading is a union of the clients' readings, independent of the wrapper's code:
//! `serde_json` over the lossily decoded bytes (invalid UTF-8 becomes U+FFFD, as Node and Go
//! read it), every key that equals `id`, `result`, `tools` or `name` after lenient normalization
//! counts as that member (Go `encoding/json`, segmentio, case-insensitive .NET), a top-level
//! array is a batch, and ids match when equal or when they read as the same number (TypeScript
//! `Number(id)`, Python `int(id)`, Go `float64`).
#![no_main]

mod client_reading;

use assay::fuzzing::filter_server_line;
use client_reading::{members, same_id};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const IDS: [&str; 8] = ["0", "1", "\"0\"", "\"a\"", "-1", "2.5", "\"1\"", "1e2"];
const REFUSED: [&str; 2] = ["exec", "shell"];

/// Refused tool names shown to the client by `line` (one output line).
fn shown_refused(line: &[u8], requests: &[Value]) -> Vec<String> {
    let text = String::from_utf8_lossy(line);
    let Ok(v) = serde_json::from_str::<Value>(text.trim()) else {
        return Vec::new();
    };
    let messages: Vec<&Value> = match &v {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut shown = Vec::new();
    for m in messages {
        let Some(o) = m.as_object() else { continue };
        if !members(o, "id").any(|id| requests.iter().any(|r| same_id(id, r))) {
            continue;
        }
        for result in members(o, "result").filter_map(Value::as_object) {
            for tools in members(result, "tools").filter_map(Value::as_array) {
                for tool in tools.iter().filter_map(Value::as_object) {
                    for name in members(tool, "name").filter_map(Value::as_str) {
                        if REFUSED.contains(&name) {
                            shown.push(name.to_string());
                        }
                    }
                }
            }
        }
    }
    shown
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let line = match rest.iter().position(|b| *b == b'\n') {
        Some(i) => &rest[..=i],
        None => rest,
    };
    let requests: Vec<&str> = IDS
        .iter()
        .enumerate()
        .filter(|(i, _)| pick & (1 << i) != 0)
        .map(|(_, id)| *id)
        .collect();
    if requests.is_empty() {
        return;
    }
    let values: Vec<Value> = requests
        .iter()
        .map(|r| serde_json::from_str(r).unwrap())
        .collect();
    let out = filter_server_line(&requests, &REFUSED, line);
    let seen = out.as_deref().unwrap_or(line);
    let leaked = shown_refused(seen, &values);
    assert!(
        leaked.is_empty(),
        "refused tools {leaked:?} shown for requests {requests:?}\nline: {:?}\noutput: {:?}",
        String::from_utf8_lossy(line),
        String::from_utf8_lossy(seen)
    );
    if let Some(out) = &out {
        // What the wrapper writes itself is one strict JSON line, or nothing at all (a line
        // that answers nobody is dropped: SPEC §5, `Some(empty)` in `filter_server_line`).
        assert!(out.is_empty() || out.ends_with(b"\n") || !line.ends_with(b"\n"));
    }
});
