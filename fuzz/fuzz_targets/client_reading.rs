//! How MCP clients read a server's answers, as a union, independent of the wrapper's code: the
//! oracle of the `server_line` and `governed_line` targets. Ids match when equal or when they
//! read as the same number (TypeScript `Number(id)`, Python `int(id)`, Go `float64`, `true` and
//! `false` as 1 and 0); a member is every key equal to its name after lenient normalization (Go
//! `encoding/json`, segmentio, case-insensitive .NET).

use assay::fuzzing::normalize_key;
use serde_json::Value;

/// A number an SDK could read the id as.
pub fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::String(s) => {
            let t = s.trim();
            let t = t.strip_prefix('+').unwrap_or(t);
            if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                return u64::from_str_radix(hex, 16).ok().map(|u| u as f64);
            }
            if t.bytes()
                .any(|b| b.is_ascii_alphabetic() && b != b'e' && b != b'E')
            {
                return None;
            }
            t.replace('_', "")
                .parse::<f64>()
                .ok()
                .or(if t.is_empty() { Some(0.0) } else { None })
        }
        _ => None,
    }
}

/// Whether some client takes the two ids for the same.
pub fn same_id(a: &Value, b: &Value) -> bool {
    a == b || matches!((as_number(a), as_number(b)), (Some(x), Some(y)) if x == y)
}

/// The values of every member of `o` whose key is `name` after lenient normalization.
pub fn members<'v>(
    o: &'v serde_json::Map<String, Value>,
    name: &str,
) -> impl Iterator<Item = &'v Value> {
    let want = normalize_key(name);
    o.iter()
        .filter(move |(k, _)| normalize_key(k) == want)
        .map(|(_, v)| v)
}
