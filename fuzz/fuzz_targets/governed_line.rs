//! Fuzzes the governed-list filter together with the `tools/list` filter (SPEC §5, §5.2; issue
//! 46 item 6): whatever one server line holds — a single answer, a batch mixing `prompts/list`
//! and `tools/list` answers, anything unreadable — no reading of what the client receives shows
//! a refused prompt in an answer to one of its `prompts/list` requests, or a refused tool in an
//! answer to one of its `tools/list` requests. The first input byte picks the requests the
//! client sent (ids and methods); the rest (up to its first `\n`) is the server line.
//!
//! The reading is the union of the clients' readings of `server_line` (see that target):
//! `serde_json` over lossily decoded bytes, every key equal to a member name after lenient
//! normalization counts as that member, a top-level array is a batch, ids equal or equal as
//! numbers. A prompt is refused when its name, as written, starts with `debug` or
//! `secret` (the policy's `debug*` and `secret*`, matched as §3 reads names).
#![no_main]

mod client_reading;

use assay::fuzzing::filter_governed_line;
use client_reading::{members, same_id};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The requests a client may have sent: id, method.
const REQUESTS: [(&str, &str); 6] = [
    ("1", "tools/list"),
    ("2", "prompts/list"),
    ("\"p\"", "prompts/list"),
    ("3", "tools/call"),
    ("\"t\"", "tools/list"),
    ("4", "prompts/list"),
];

/// Refused names shown by `line` in answers to `requests` of `method` (`member`: the result's
/// list member; `refused`: whether a name is refused).
fn shown(
    line: &[u8],
    requests: &[Value],
    member: &str,
    refused: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let text = String::from_utf8_lossy(line);
    let mut out = Vec::new();
    // Several JSON texts on one output (the wrapper writes whole lines) are several messages.
    for text in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(text.trim()) else {
            continue;
        };
        let messages: Vec<&Value> = match &v {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for m in messages {
            let Some(o) = m.as_object() else { continue };
            if !members(o, "id").any(|id| requests.iter().any(|r| same_id(id, r))) {
                continue;
            }
            for result in members(o, "result").filter_map(Value::as_object) {
                for list in members(result, member).filter_map(Value::as_array) {
                    for entry in list.iter().filter_map(Value::as_object) {
                        for name in members(entry, "name").filter_map(Value::as_str) {
                            if refused(name) {
                                out.push(name.to_string());
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let line = match rest.iter().position(|b| *b == b'\n') {
        Some(i) => &rest[..=i],
        None => rest,
    };
    let requests: Vec<(&str, &str)> = REQUESTS
        .iter()
        .enumerate()
        .filter(|(i, _)| pick & (1 << i) != 0)
        .map(|(_, r)| *r)
        .collect();
    if requests.is_empty() {
        return;
    }
    let ids_of = |method: &str| -> Vec<Value> {
        requests
            .iter()
            .filter(|(_, m)| *m == method)
            .map(|(id, _)| serde_json::from_str(id).unwrap())
            .collect()
    };
    let out = filter_governed_line(&requests, line);
    let seen = out.as_deref().unwrap_or(line);
    // Names are matched as written (globs are case-sensitive, as for tools): only keys are
    // read leniently.
    let prompt_refused = |n: &str| n.starts_with("debug") || n.starts_with("secret");
    let tool_refused = |n: &str| n == "exec" || n == "shell";
    let prompts = shown(seen, &ids_of("prompts/list"), "prompts", &prompt_refused);
    let tools = shown(seen, &ids_of("tools/list"), "tools", &tool_refused);
    assert!(
        prompts.is_empty() && tools.is_empty(),
        "refused prompts {prompts:?} / tools {tools:?} shown for {requests:?}\nline: {:?}\noutput: {:?}",
        String::from_utf8_lossy(line),
        String::from_utf8_lossy(seen)
    );
});
