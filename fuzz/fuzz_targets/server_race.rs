//! Fuzzes server lines ahead of requests (SPEC §5, "Answers nobody asked for"): an arbitrary
//! interleaving of client requests and server lines through the server→client path
//! (`assay::fuzzing::ServerPath`). Whatever the order, no response reaches the client unless it
//! answers a request the client sent before it and that no earlier forwarded response answered.
//!
//! Input: a sequence of steps. A byte `b` with `b & 0x80 == 0` is a client request: its id is
//! `b & 0x0f` (a number), `b & 0x10` makes it a `tools/list`. A byte with the high bit set
//! starts a server line: the following bytes up to `\n` are the line (anything: JSON or not).
//!
//! The client's reading is independent of the wrapper's code: `serde_json` over the lossily
//! decoded output; a message is a response when any key equals `result` or `error` after ASCII
//! case folding; its id is the value of any key equal to `id` the same way (the last one, as
//! `JSON.parse` and Go keep); ids are read as numbers the way SDKs do (numbers, numeric strings
//! with spaces, `+`, `_`, `.0`, and `true`/`false`).
#![no_main]

use assay::fuzzing::ServerPath;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn id_number(v: &Value) -> Option<i64> {
    match v {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Number(n) => n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64),
        Value::String(s) => {
            let t = s.trim().trim_start_matches('+').replace('_', "");
            let t = t.strip_suffix(".0").unwrap_or(&t);
            if t.is_empty() {
                return Some(0);
            }
            t.parse::<f64>()
                .ok()
                .filter(|f| f.fract() == 0.0)
                .map(|f| f as i64)
        }
        _ => None,
    }
}

/// The ids of the responses a lenient client reads in `out` (`None`: a response with no id it
/// can read as a number).
fn responses(out: &[u8]) -> Vec<Option<i64>> {
    let text = String::from_utf8_lossy(out);
    let mut found = Vec::new();
    for line in text.split('\n').filter(|l| !l.trim().is_empty()) {
        let mut stream = serde_json::Deserializer::from_str(line).into_iter::<Value>();
        while let Some(Ok(v)) = stream.next() {
            let messages = match v {
                Value::Array(items) => items,
                other => vec![other],
            };
            for m in messages {
                let Value::Object(members) = m else { continue };
                let answer = members
                    .keys()
                    .any(|k| k.eq_ignore_ascii_case("result") || k.eq_ignore_ascii_case("error"));
                if !answer {
                    continue;
                }
                let id = members
                    .iter()
                    .filter(|(k, _)| k.eq_ignore_ascii_case("id"))
                    .last()
                    .and_then(|(_, v)| id_number(v));
                found.push(id);
            }
        }
    }
    found
}

fuzz_target!(|data: &[u8]| {
    let path = ServerPath::hiding(&["exec"]);
    let mut pending: Vec<i64> = Vec::new();
    let mut i = 0;
    while i < data.len() {
        let b = data[i];
        i += 1;
        if b & 0x80 == 0 {
            let id = i64::from(b & 0x0f);
            let method = if b & 0x10 != 0 {
                "tools/list"
            } else {
                "tools/call"
            };
            path.request(&id.to_string(), method);
            pending.push(id);
            continue;
        }
        let end = data[i..]
            .iter()
            .position(|c| *c == b'\n')
            .map_or(data.len(), |p| i + p);
        let mut line = data[i..end].to_vec();
        line.push(b'\n');
        i = end + 1;
        let out = path.server_line(&line).unwrap_or(line);
        for id in responses(&out) {
            // An error the wrapper wrote for a request it withheld also answers that request; a
            // response whose id no client reads as a number (the wrapper's own `null`-id error)
            // answers nobody's request.
            let Some(id) = id else { continue };
            let at = pending
                .iter()
                .position(|p| *p == id)
                .unwrap_or_else(|| panic!("a response to {id} reached the client, which had not asked (pending {pending:?}): {}", String::from_utf8_lossy(&out)));
            pending.remove(at);
        }
    }
});
