//! Property tests through the real binary (SPEC §3 items 5–6, §4.1): for generated sequences of
//! client lines, the server receives exactly the lines the SPEC says are forwarded, byte-exact
//! and in order; every `tools/call` gets exactly one decision; and the stop's prefix digest is
//! the SHA-256 of the log on disk.
//!
//! The expectation is computed here, independently of the wrapper's classifier: `serde_json`
//! parses, a visitor rejects duplicate keys the way Python's `object_pairs_hook` sees them (after
//! unescaping), and the demo policy is re-stated in a few lines. Each case spawns the wrapper and
//! a Python server, so the case count is small.

use proptest::prelude::*;
use serde_json::Value;

/// The fuzz targets' independent reference parser (duplicate keys after unescaping, depth,
/// literal keys), shared so both judge lines the same way.
#[path = "../fuzz/fuzz_targets/common.rs"]
#[allow(dead_code)]
mod reference;

use crate::util::*;

// ---- the independent reference ----

/// Depth limit the wrapper documents for client lines (deeper lines are parse errors).
const CLIENT_MAX_DEPTH: usize = 100;

/// The parsed line when it is JSON the SPEC accepts (UTF-8, no duplicate key, finite numbers —
/// `serde_json` refuses overflowing ones — and within the depth bound).
fn strict_parse(line: &[u8]) -> Option<Value> {
    let info = reference::reference(line)?;
    if info.duplicate_key || info.depth > CLIENT_MAX_DEPTH {
        return None;
    }
    reference::literal_value(line)
}

/// Lenient normalization for the generator's alphabet, written independently of the wrapper's
/// table: trailing NULs removed, `ſ` → `s`, Kelvin sign → `k`, then lowercase.
fn norm(k: &str) -> String {
    k.trim_end_matches('\0')
        .chars()
        .map(|c| match c {
            '\u{17F}' => 's',
            '\u{212A}' => 'k',
            c => c,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

fn variant(k: &str, name: &str) -> bool {
    k != name && norm(k) == norm(name)
}

/// Two keys of one object equal after lenient normalization, anywhere in `v`.
fn lenient_duplicate(v: &Value) -> bool {
    match v {
        Value::Object(m) => {
            let mut seen = std::collections::HashSet::new();
            m.keys().any(|k| !seen.insert(norm(k))) || m.values().any(lenient_duplicate)
        }
        Value::Array(a) => a.iter().any(lenient_duplicate),
        _ => false,
    }
}

const ENVELOPE: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];
const CALL_PARAMS: [&str; 3] = ["name", "arguments", "_meta"];

/// A message whose envelope keys, or whose `tools/call` params keys, hold a variant of a member
/// name (SPEC §3 item 6: the line is refused with -32700).
fn member_variant(msg: &Value) -> bool {
    let Some(m) = msg.as_object() else {
        return false;
    };
    if m.keys().any(|k| ENVELOPE.iter().any(|n| variant(k, n))) {
        return true;
    }
    is_call(msg)
        && msg
            .get("params")
            .and_then(Value::as_object)
            .is_some_and(|p| p.keys().any(|k| CALL_PARAMS.iter().any(|n| variant(k, n))))
}

/// The demo policy (examples/demo/policy.yaml) for the tools the generator uses.
fn policy_allows(msg: &Value) -> Decision {
    let Some(params) = msg.get("params").and_then(Value::as_object) else {
        return Decision::Error;
    };
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Decision::Error;
    };
    if name == "exec" || name.starts_with("shell") {
        return Decision::Deny;
    }
    if name == "read_file" {
        let args = params.get("arguments");
        // An argument key that is a variant of the constrained `path` is refused.
        if args
            .and_then(Value::as_object)
            .is_some_and(|a| a.keys().any(|k| variant(k, "path")))
        {
            return Decision::Deny;
        }
        let path = args.and_then(|a| a.get("path")).and_then(Value::as_str);
        // `within: "/workspace"`, resolved lexically.
        let inside = |p: &str| {
            let mut segs: Vec<&str> = Vec::new();
            for seg in p.split('/') {
                match seg {
                    "" | "." => {}
                    ".." => {
                        if segs.pop().is_none() {
                            return false;
                        }
                    }
                    s => segs.push(s),
                }
            }
            p.starts_with('/') && segs.first() == Some(&"workspace")
        };
        if !path.is_some_and(inside) {
            return Decision::Deny;
        }
    }
    Decision::Allow
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Allow,
    Deny,
    Error,
}

impl Decision {
    fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
            Decision::Error => "error",
        }
    }
}

fn is_call(v: &Value) -> bool {
    v.get("method").and_then(Value::as_str) == Some("tools/call")
}

/// The JSON-RPC id as the decision log records it.
fn call_id(v: &Value) -> Value {
    match v.get("id") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(other) => Value::String(other.to_string()),
    }
}

/// SPEC §3 item 6 for one line: is it forwarded, and which decisions (tool_call_id, decision)
/// does it produce, in order.
fn expect(line: &[u8]) -> (bool, Vec<(Value, &'static str)>) {
    let body = &line[..line.len() - 1];
    if body.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        return (true, Vec::new());
    }
    let Some(v) = strict_parse(line) else {
        return (false, Vec::new());
    };
    // A carriage return inside the line would split it for a universal-newline reader (the MCP
    // Python SDK): refused (docs/decisions.md).
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let first = body.iter().position(|b| !ws(b)).unwrap_or(0);
    let last = body.iter().rposition(|b| !ws(b)).unwrap_or(0);
    if body[first..last].contains(&b'\r') {
        return (false, Vec::new());
    }
    if lenient_duplicate(&v) {
        return (false, Vec::new());
    }
    let messages: Vec<&Value> = match &v {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    if messages.iter().any(|m| member_variant(m)) {
        return (false, Vec::new());
    }
    match &v {
        Value::Object(_) if is_call(&v) => {
            let d = policy_allows(&v);
            (d == Decision::Allow, vec![(call_id(&v), d.as_str())])
        }
        Value::Object(_) => (true, Vec::new()),
        Value::Array(items) => {
            let calls: Vec<(Value, Decision)> = items
                .iter()
                .filter(|i| i.is_object() && is_call(i))
                .map(|i| (call_id(i), policy_allows(i)))
                .collect();
            let all_allowed = calls.iter().all(|(_, d)| *d == Decision::Allow);
            let decisions = calls
                .into_iter()
                .map(|(id, d)| {
                    // Refused with its batch: an allowed call is logged as deny.
                    let d = if !all_allowed && d == Decision::Allow {
                        Decision::Deny
                    } else {
                        d
                    };
                    (id, d.as_str())
                })
                .collect();
            (all_allowed, decisions)
        }
        _ => (false, Vec::new()),
    }
}

// ---- the generator ----

fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..1000).prop_map(|n| n.to_string()),
        "[a-z0-9]{1,6}".prop_map(|s| format!("\"{s}\"")),
    ]
}

fn tool() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        r#""name":"echo","arguments":{"text":"hi"}"#,
        r#""name":"exec","arguments":{"cmd":"id"}"#,
        r#""name":"shell_run""#,
        r#""name":"read_file","arguments":{"path":"/workspace/a.txt"}"#,
        r#""name":"read_file","arguments":{"path":"/etc/passwd"}"#,
        r#""name":"read_file","arguments":{"path":"/workspace/../etc/passwd"}"#,
        r#""name":"read_file","arguments":{"path":"/workspace/a","PATH":"/etc/passwd"}"#,
        r#""name":"echo","arguments":{"k":1,"\u212a":2}"#,
        r#""name":"ech\u006f","arguments":{}"#,
        r#""arguments":{}"#,
        r#""name":7"#,
    ])
    .prop_map(str::to_string)
}

fn method() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "tools/call",
        r"tools\/call",
        r"\u0074ools/call",
        "ping",
        "tools/list",
        "resources/list",
        "Tools/Call",
    ])
}

/// A member name as written on the wire: mostly exact (sometimes with an escape, which is
/// still the same key), sometimes a lenient variant (case, `ſ`/Kelvin fold, trailing NUL).
fn key(name: &'static str) -> impl Strategy<Value = String> {
    let upper_first = {
        let mut c = name.chars();
        c.next()
            .map(|f| f.to_uppercase().chain(c).collect::<String>())
            .unwrap_or_default()
    };
    let folded = name.replace('s', "\u{17F}").replace('k', "\u{212A}");
    let escaped = {
        let mut c = name.chars();
        c.next()
            .map(|f| format!("\\u{:04x}{}", f as u32, c.as_str()))
            .unwrap_or_default()
    };
    prop_oneof![
        16 => Just(name.to_string()),
        2 => Just(escaped),
        1 => Just(upper_first),
        1 => Just(name.to_uppercase()),
        1 => Just(format!("{name}\\u0000")),
        1 => Just(folded),
    ]
}

/// One message object (no newline), with generated spellings of its member names and,
/// sometimes, a second member whose name is a variant of `method`.
fn message() -> impl Strategy<Value = String> {
    (
        method(),
        prop::option::of(id()),
        tool(),
        (
            key("method"),
            key("params"),
            key("name"),
            key("path"),
            key("id"),
        ),
        prop::option::of(key("method")),
    )
        .prop_map(|(m, id, t, (mk, pk, nk, pathk, idk), extra)| {
            let t = t
                .replace(r#""name":"#, &format!(r#""{nk}":"#))
                .replace(r#""path":"#, &format!(r#""{pathk}":"#));
            let extra = extra
                .map(|k| format!(r#","{k}":"ping""#))
                .unwrap_or_default();
            match id {
                Some(id) => format!(
                    r#"{{"jsonrpc":"2.0","{idk}":{id},"{mk}":"{m}","{pk}":{{{t}}}{extra}}}"#
                ),
                None => format!(r#"{{"jsonrpc":"2.0","{mk}":"{m}","{pk}":{{{t}}}{extra}}}"#),
            }
        })
}

fn batch() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![4 => message(), 1 => Just("5".to_string())],
        1..4,
    )
    .prop_map(|items| format!("[{}]", items.join(",")))
}

const GARBAGE: &[&str] = &[
    "{",
    "not json",
    "{'id':1}",
    "[1,]",
    "NaN",
    r#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#,
    "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
    "42",
    "\"tools/call\"",
    "null",
    r#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"exec"}}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","name":"exec"}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"a":1,"\u0061":2}}}"#,
    r#"[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"ping","method":"tools/call"}]"#,
    "",
    "   ",
    "\t\r",
    "[[\r{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\"}}\r]]",
    "{\"jsonrpc\":\"2.0\",\r\"id\":7,\"method\":\"ping\"}",
    "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\r",
];

/// A line body: a message, a batch, garbage, or a valid message cut short or with one byte
/// changed (never to a newline, which would split the line).
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => message().prop_map(String::into_bytes),
        2 => batch().prop_map(String::into_bytes),
        3 => prop::sample::select(GARBAGE).prop_map(|s| s.as_bytes().to_vec()),
        1 => Just(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\xff\"}}".to_vec()),
        2 => (message(), any::<prop::sample::Index>()).prop_map(|(m, at)| {
            let mut b = m.into_bytes();
            b.truncate(at.index(b.len()));
            b
        }),
        2 => (message(), any::<prop::sample::Index>(), any::<u8>()).prop_map(|(m, at, byte)| {
            let mut b = m.into_bytes();
            let i = at.index(b.len());
            b[i] = if byte == b'\n' { b'x' } else { byte };
            b
        }),
    ]
}

// ---- the property ----

fn run_case(bodies: &[Vec<u8>]) -> Result<(), TestCaseError> {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let rec = dir.path().join("received.bin");
    // A first ordinary message makes this a session, so a stop is always written.
    let mut lines: Vec<Vec<u8>> = vec![format!("{INIT}\n").into_bytes()];
    lines.extend(bodies.iter().map(|b| {
        let mut l = b.clone();
        l.push(b'\n');
        l
    }));
    let input: Vec<u8> = lines.concat();
    let r = run_recorded(&cap, &rec, &input);
    prop_assert_eq!(r.status, Some(0), "{}", r.report());

    let mut forwarded = Vec::new();
    let mut decisions = Vec::new();
    for l in &lines {
        let (fwd, ds) = expect(l);
        if fwd {
            forwarded.extend_from_slice(l);
        }
        decisions.extend(ds);
    }
    let received = std::fs::read(&rec).unwrap_or_default();
    prop_assert!(
        received == forwarded,
        "forwarded bytes differ\nexpected: {:?}\nreceived: {:?}",
        String::from_utf8_lossy(&forwarded),
        String::from_utf8_lossy(&received)
    );

    let log = cap.join("decisions.ndjson");
    let logged: Vec<(Value, String)> = decision_lines(&log)
        .iter()
        .map(|d| {
            (
                d["data"]["tool_call_id"].clone(),
                d["data"]["decision"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let wanted: Vec<(Value, String)> = decisions
        .into_iter()
        .map(|(id, d)| (id, d.to_string()))
        .collect();
    prop_assert_eq!(&logged, &wanted, "one decision per tools/call, in order");

    let stop = read_json(&cap.join("session-stop.json"))["data"].clone();
    prop_assert_eq!(&stop["decision_log"], "complete");
    prop_assert_eq!(&stop["session_end"], "client_closed");
    prop_assert_eq!(&stop["decision_events_written"], &Value::from(wanted.len()));
    prop_assert_eq!(&stop["decision_events_dropped"], &Value::from(0));
    let digest = sha256_file(&log);
    prop_assert_eq!(
        stop["decision_prefix_sha256"].as_str(),
        Some(digest.as_str())
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 20,
        max_shrink_iters: 64,
        failure_persistence: None,
        .. ProptestConfig::default()
    })]

    #[test]
    fn forwarded_bytes_are_exactly_the_lines_the_spec_forwards(
        bodies in prop::collection::vec(body(), 1..12),
    ) {
        run_case(&bodies)?;
    }
}

/// The reference itself, on lines whose fate is known from the SPEC text.
#[test]
fn reference_classifies_known_lines() {
    let l = |s: &str| format!("{s}\n").into_bytes();
    assert!(expect(&l("  \t")).0);
    assert!(!expect(&l("{")).0);
    assert!(!expect(&l("42")).0);
    let dup = r#"{"id":1,"method":"ping","method":"tools/call"}"#;
    assert_eq!(expect(&l(dup)), (false, vec![]));
    let escaped = r#"{"id":1,"method":"tools\/call","params":{"name":"exec"}}"#;
    assert_eq!(
        expect(&l(escaped)),
        (false, vec![(Value::from("1"), "deny")])
    );
    let batch = format!(
        "[{},{}]",
        call(2, "echo", "{}"),
        r#"{"id":"x","method":"tools/call","params":{"name":"exec"}}"#
    );
    assert_eq!(
        expect(&l(&batch)),
        (
            false,
            vec![(Value::from("2"), "deny"), (Value::from("x"), "deny")]
        )
    );
}
