//! The canonical form against an independent RFC 8785 implementation
//! (`serde_json_canonicalizer` over a parsed value), on fixed and generated texts.

use super::full::canonicalize;
use super::*;

fn reference(text: &str) -> Vec<u8> {
    let v: serde_json::Value = crate::strict_json::parse_value(text).unwrap();
    serde_json_canonicalizer::to_vec(&v).unwrap()
}

fn ours(text: &str) -> Vec<u8> {
    let mut out = String::new();
    assert!(canonicalize(text, &mut out, usize::MAX), "refused {text}");
    out.into_bytes()
}

fn same(text: &str) {
    assert_eq!(
        String::from_utf8_lossy(&ours(text)),
        String::from_utf8_lossy(&reference(text)),
        "input {text}"
    );
    assert_eq!(
        digest(text, &mut String::new()).map(|d| *d.as_bytes()),
        Some(*HexDigest::of(&reference(text)).as_bytes())
    );
}

#[test]
fn matches_the_reference_on_hard_cases() {
    for text in [
        r#"{"b":1,"a":2}"#,
        r#"{"\u0062":1,"a":"\u00e9\n\t\u0002\u001f\"\\\/x"}"#,
        r#"[1.0, 1e3, -0, 0.1, 1e21, 1e-7, 123456789012345678901234567890, -1.5E-10, 5e-324]"#,
        r#"{"€":1,"😀":2,"\uffff":3,"\ud83d\ude00a":4,"a":5,"":6}"#,
        r#"{"z":{"y":[{"b":1,"a":[3,2,{"d":null,"c":true}]}],"x":false}}"#,
        r#""\u2028\u2029 \u007f \u0080""#,
        "  [ ]  ",
        "{ }",
        "-0.0",
        "1E+2",
    ] {
        same(text);
    }
}

#[test]
fn refuses_what_is_not_strict_json_or_too_long() {
    let mut out = String::new();
    for bad in [r#"{"a":1,"a":2}"#, "[1e400]", "NaN", "{", "\"\\ud800\""] {
        assert!(!canonicalize(bad, &mut out, usize::MAX), "{bad}");
    }
    // Exponent numbers grow; the bound holds.
    let text = format!("[{}]", vec!["1e20"; 100].join(","));
    assert!(canonicalize(&text, &mut out, 3000));
    assert!(!canonicalize(&text, &mut out, 1000));
    assert!(digest(&format!("[{}]", vec!["1e20"; 20_000].join(",")), &mut out).is_none());
}

/// The fast path either declines or writes exactly what serde_json_canonicalizer writes.
fn check_canon(text: &str) -> bool {
    let mut out = String::new();
    let took = simple::canonicalize_simple(text, &mut out, text.len() + super::SLACK);
    if took {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let want = serde_json_canonicalizer::to_vec(&v).unwrap();
        assert_eq!(out, String::from_utf8_lossy(&want), "input {text}");
    }
    took
}

#[test]
fn canonical_fast_path_matches_the_canonicalizer() {
    for text in [
        r#"{}"#,
        r#"[]"#,
        r#" { "b" : 1 , "a" : [ true, false, null, "x" ], "c": {"z": {}, "y": []} } "#,
        r#"{"n":123456789012345,"m":-42,"z":0,"text":"héllo wörld 日本 😀 /"}"#,
        r#"{"b":{"d":1,"c":2},"a":"","ab":1,"a0":2,"A":3}"#,
        r#"[1,[2,[3,{"k":"v"}]]]"#,
        "\"just a string\"",
        "7",
        // Escapes as JCS writes them.
        r#"{"a":"esc\"aped \\ \b\f\n\r\t \u0000\u001f\u000b"}"#,
        // Numbers other than short integers, written as ECMAScript writes their doubles.
        r#"{"a":1.0,"b":1e3,"c":-0,"d":1234567890123456,"e":-2.50,"f":1E-7,"g":0.1,"h":5e-324}"#,
        r#"[99999999999999999999,1.7976931348623157e308,-0.0,123456789012345678901234567890]"#,
    ] {
        assert!(check_canon(text), "fast path declined {text}");
    }
    // Declined: the general path handles these.
    for text in [
        r#"{"a":1e400}"#,
        // Escapes JCS writes otherwise.
        r#"{"a":"\/"}"#,
        r#"{"a":"\u0041"}"#,
        r#"{"a":"\u000a"}"#,
        r#"{"a":"\u001F"}"#,
        r#"{"a":"\ud83d\ude00"}"#,
        r#"{"a\n":1}"#,
        r#"{"a\u0062":1}"#,
        r#"{"é":1}"#,
    ] {
        assert!(!check_canon(text), "fast path took {text}");
    }
}

/// Every `\u` escape of U+0000–U+00FF, in both cases of hex, and every two-character escape:
/// the fast path takes exactly those JCS writes as they are, and writes what the reference
/// writes.
#[test]
fn the_fast_path_takes_exactly_the_escapes_jcs_writes() {
    let short = |c: u32| matches!(c, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
    for c in 0..0x100u32 {
        for upper in [false, true] {
            let hex = if upper {
                format!("{c:04X}")
            } else {
                format!("{c:04x}")
            };
            let text = format!(r#"{{"a":"x\u{hex}y"}}"#);
            let canonical = c < 0x20 && !short(c) && (hex == format!("{c:04x}"));
            assert_eq!(check_canon(&text), canonical, "{text}");
        }
    }
    for e in ['"', '\\', '/', 'b', 'f', 'n', 'r', 't'] {
        let text = format!(r#"{{"a":"x\{e}y"}}"#);
        assert_eq!(check_canon(&text), e != '/', "{text}");
    }
}

proptest::proptest! {
    #[test]
    fn matches_the_reference_on_generated_json(v in json_value()) {
        let compact = serde_json::to_string(&v).unwrap();
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        same(&compact);
        same(&pretty);
        same(&escaped(&v));
        // The fast path declines or agrees.
        check_canon(&compact);
        check_canon(&pretty);
    }
}

/// JSON text with every object's members reversed and every string character escaped.
fn escaped(v: &serde_json::Value) -> String {
    let esc = |s: &str| {
        let mut out = String::from("\"");
        for u in s.encode_utf16() {
            out.push_str(&format!("\\u{u:04x}"));
        }
        out.push('"');
        out
    };
    match v {
        serde_json::Value::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .rev()
                .map(|(k, v)| format!("{}:{}", esc(k), escaped(v)))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        serde_json::Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(escaped).collect();
            format!("[{}]", parts.join(", "))
        }
        serde_json::Value::String(s) => esc(s),
        other => serde_json::to_string(other).unwrap(),
    }
}

fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        // U+0001 among the characters, built here (the sources hold none).
        proptest::string::string_regex(&format!(
            "[a-zA-Z0-9 /é€😀\u{ffff}\u{7f}{}\"\\\\\n\u{2028}]{{0,12}}",
            char::from(1)
        ))
        .expect("a valid character class")
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            proptest::collection::btree_map("[a-zA-Z0-9_é€😀\u{ffff}\u{e000}]{0,6}", inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}
