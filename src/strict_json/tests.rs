//! Unit tests of the strict scanner.
use super::*;

fn kind(s: &str) -> Option<ScanErrorKind> {
    scan(s.as_bytes(), 32).err().map(|e| e.kind)
}

#[test]
fn accepts_valid_json() {
    for ok in [
        "{}",
        "[]",
        " {\"a\":1,\"b\":[1,2,{\"c\":null}],\"d\":\"x\\u00e9\\ud83d\\ude00\"} \n",
        "0",
        "-0.5e-3",
        "\"\"",
        "true",
        "[false,null]",
        "1e308",
        "123456789012345678901234567890",
    ] {
        assert_eq!(kind(ok), None, "{ok}");
    }
}

#[test]
fn refuses_invalid_json() {
    // U+0001, a control character, is built here: the sources hold none.
    let control = format!("\"{}\"", char::from(1));
    for bad in [
        "",
        "{",
        "{\"a\"}",
        "{\"a\":}",
        "[1,]",
        "{\"a\":1,}",
        "01",
        "1.",
        "1e",
        "\"\\x\"",
        control.as_str(),
        "\"\\ud800\"",
        "\"\\udc00\"",
        "{} {}",
        "tru",
        "[1 2]",
        "{1:2}",
    ] {
        assert_eq!(kind(bad), Some(ScanErrorKind::Invalid), "{bad:?}");
    }
    assert_eq!(
        scan(b"{\"a\":\"\xff\"}", 32).err().map(|e| e.kind),
        Some(ScanErrorKind::Invalid)
    );
}

#[test]
fn refuses_duplicate_keys_after_unescaping() {
    assert_eq!(
        kind("{\"method\":\"ping\",\"method\":\"tools/call\"}"),
        Some(ScanErrorKind::DuplicateKey)
    );
    assert_eq!(
        kind("{\"a\":1,\"\\u0061\":2}"),
        Some(ScanErrorKind::DuplicateKey)
    );
    assert_eq!(
        kind("[{\"x\":{\"y\":1,\"y\":2}}]"),
        Some(ScanErrorKind::DuplicateKey)
    );
    // Same key in sibling objects is fine.
    assert_eq!(kind("[{\"a\":1},{\"a\":2}]"), None);
    // Many keys switch to the hash set and still catch the duplicate.
    let mut s = String::from("{");
    for i in 0..100 {
        s.push_str(&format!("\"k{i}\":{i},"));
    }
    s.push_str("\"k7\":0}");
    assert_eq!(kind(&s), Some(ScanErrorKind::DuplicateKey));
}

#[test]
fn refuses_non_finite() {
    for bad in ["NaN", "[Infinity]", "{\"a\":-Infinity}", "1e400", "-1e309"] {
        assert_eq!(kind(bad), Some(ScanErrorKind::NonFinite), "{bad}");
    }
    let huge = format!("1{}", "0".repeat(400));
    assert_eq!(kind(&huge), Some(ScanErrorKind::NonFinite));
}

#[test]
fn long_strings_are_checked_at_every_offset() {
    // The word-at-a-time skip must stop at a quote, backslash or control byte wherever it
    // falls in an 8-byte word, in keys and in values.
    for at in 0..24 {
        let pad = "x".repeat(at);
        let long = "y".repeat(20);
        assert_eq!(
            kind(&format!("{{\"{pad}\\\"{long}\":\"{pad}\\\\{long}\"}}")),
            None
        );
        assert_eq!(
            kind(&format!("[\"{pad}{}{long}\"]", char::from(1))),
            Some(ScanErrorKind::Invalid),
            "control byte at {at}"
        );
        assert_eq!(
            kind(&format!("[\"{pad}\\q{long}\"]")),
            Some(ScanErrorKind::Invalid),
            "bad escape at {at}"
        );
        assert_eq!(
            kind(&format!("[\"{pad}é{long}\"]")),
            None,
            "non-ASCII at {at}"
        );
        assert_eq!(
            kind(&format!("[\"{pad}{long}")),
            Some(ScanErrorKind::Invalid)
        );
        assert_eq!(
            kind(&format!("{{\"{pad}\\u0061{long}\":1,\"{pad}a{long}\":2}}")),
            Some(ScanErrorKind::DuplicateKey),
            "escaped key at {at}"
        );
    }
    assert_eq!(scan_str("{\"a\":[1,2]}", 32), Ok(()));
}

#[test]
fn parse_value_takes_every_key_literally() {
    let text = r#"{"path":{"$serde_json::private::RawValue":"\"/workspace/a\""}}"#;
    // serde_json's own Value substitutes the string's content (the raw_value feature)...
    let sj: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(sj["path"], "/workspace/a");
    // ...parse_value keeps what every other parser sees.
    let v = parse_value(text).unwrap();
    assert_eq!(
        v["path"]["$serde_json::private::RawValue"],
        "\"/workspace/a\""
    );
    let round = parse_value(r#"[1,-2,2.5,"\u00e9",null,true,{"a":{}}]"#).unwrap();
    assert_eq!(
        round,
        serde_json::json!([1, -2, 2.5, "é", null, true, {"a": {}}])
    );
    assert!(parse_value("[1,]").is_err());
    assert!(parse_value("{} x").is_err());
}

#[test]
fn depth_bound_is_inclusive() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert_eq!(kind(&deep(32)), None);
    assert_eq!(kind(&deep(33)), Some(ScanErrorKind::TooDeep));
    let obj = format!("{}1{}", "{\"a\":".repeat(33), "}".repeat(33));
    assert_eq!(kind(&obj), Some(ScanErrorKind::TooDeep));
    // A hostile depth far beyond the limit is refused without recursion.
    assert_eq!(kind(&"[".repeat(1_000_000)), Some(ScanErrorKind::TooDeep));
}

#[test]
fn keys_are_told_apart_past_their_first_bytes() {
    // Short plain keys are compared by length and their first four bytes; longer ones by all.
    assert_eq!(kind("{\"abcdX\":1,\"abcdY\":2}"), None);
    assert_eq!(kind("{\"abc\":1,\"abcd\":2,\"ab\":3,\"a\":4,\"\":5}"), None);
    assert_eq!(
        kind("{\"abcd\":1,\"abcd\":2}"),
        Some(ScanErrorKind::DuplicateKey)
    );
    assert_eq!(
        kind("{\"abcdefgh\":1,\"abcdefgh\":2}"),
        Some(ScanErrorKind::DuplicateKey)
    );
    assert_eq!(kind("{\"\":1,\"\":2}"), Some(ScanErrorKind::DuplicateKey));
    // Exact comparison: case matters; a plain key equals its escaped spelling.
    assert_eq!(kind("{\"Abc\":1,\"abc\":2}"), None);
    assert_eq!(
        kind("{\"ab\":1,\"\\u0061b\":2}"),
        Some(ScanErrorKind::DuplicateKey)
    );
    assert_eq!(
        kind("{\"\\u0061b\":1,\"ab\":2}"),
        Some(ScanErrorKind::DuplicateKey)
    );
    assert_eq!(
        scan(b"{\"a\":1,\"b\":2,\"a\":3}", 32),
        Err(ScanError {
            kind: ScanErrorKind::DuplicateKey,
            offset: 13
        })
    );
}

#[test]
fn buffers_reused_across_scans_start_clean() {
    // A large object (hash table), then a deep nesting, then small texts on the same thread:
    // each scan sees only its own keys and depth.
    let mut large = String::from("{");
    for i in 0..200 {
        large.push_str(&format!("\"k{i}\":{i},"));
    }
    large.push_str("\"end\":0}");
    assert_eq!(kind(&large), None);
    assert_eq!(kind("{\"k1\":1,\"end\":2}"), None);
    let nested = format!("{}1{}", "{\"a\":".repeat(200), "}".repeat(200));
    assert_eq!(scan(nested.as_bytes(), 300), Ok(()));
    assert_eq!(kind("{\"a\":{\"a\":{\"a\":1}}}"), None);
    assert_eq!(
        kind("{\"a\":{\"a\":1,\"a\":2}}"),
        Some(ScanErrorKind::DuplicateKey)
    );
    // A refused text leaves nothing behind either.
    assert_eq!(kind("{\"x\":1,\"x\":2}"), Some(ScanErrorKind::DuplicateKey));
    assert_eq!(kind("{\"x\":1}"), None);
}

#[test]
fn strings_are_checked_across_chunks() {
    // The sixteen-byte skip must stop at a quote, backslash or control byte wherever it falls,
    // and non-ASCII text may straddle a chunk boundary.
    for at in 0..48 {
        let pad = "x".repeat(at);
        let long = "y".repeat(40);
        let control = format!("[\"{pad}\u{1f}{long}\"]");
        assert_eq!(
            scan(control.as_bytes(), 32),
            Err(ScanError {
                kind: ScanErrorKind::Invalid,
                offset: 2 + at
            }),
            "control byte at {at}"
        );
        assert_eq!(kind(&format!("[\"{pad}é€😀{long}\",\"{pad}\\\"\"]")), None);
        let open = format!("[\"{pad}{long}");
        assert_eq!(
            scan(open.as_bytes(), 32),
            Err(ScanError {
                kind: ScanErrorKind::Invalid,
                offset: open.len()
            }),
            "unterminated at {at}"
        );
    }
}

/// The first byte of a word that needs attention in a string (`"`, `\\`, below 0x20).
fn first_special(bytes: &[u8; 8]) -> Option<usize> {
    bytes
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
}

proptest::proptest! {
    /// The word-at-a-time test flags exactly the first byte that needs attention, whatever
    /// follows it (later bytes may be flagged spuriously; only the lowest flag is used).
    #[test]
    fn special_bytes_flags_the_first_special_byte(
        bytes in proptest::array::uniform8(proptest::prop_oneof![
            proptest::prelude::any::<u8>(),
            proptest::prelude::Just(b'"'),
            proptest::prelude::Just(b'\\'),
            0u8..0x21,
            0x7eu8..0x82,
        ]),
    ) {
        let flags = special_bytes(u64::from_le_bytes(bytes));
        let found = (flags != 0).then(|| (flags.trailing_zeros() / 8) as usize);
        proptest::prop_assert_eq!(found, first_special(&bytes));
    }
}

/// A string byte that needs attention is found at every offset of a long string, on both sides
/// of an eight-byte boundary, and the bytes around it (0x1f/0x20, 0x7f, non-ASCII) are judged
/// as they should be.
#[test]
fn string_bytes_are_checked_at_every_offset() {
    let control = char::from(1).to_string();
    for len in 0..40 {
        for at in 0..len {
            for (bad, ok) in [
                (control.as_str(), false),
                ("\u{1f}", false),
                (" ", true),
                ("\u{7f}", true),
                ("é", true),
                ("\\\"", true),
                ("\\x", false),
            ] {
                let mut s = String::from("[\"");
                for i in 0..len {
                    if i == at {
                        s.push_str(bad);
                    } else {
                        s.push(char::from(b'a' + (i % 26) as u8));
                    }
                }
                s.push_str("\"]");
                assert_eq!(kind(&s).is_none(), ok, "{s:?}");
            }
            // A quote at `at` ends the string early: what follows is not JSON.
            let mut s = String::from("[\"");
            s.push_str(&"a".repeat(at));
            s.push('"');
            s.push_str(&"a".repeat(len - at));
            s.push_str("\"]");
            assert_eq!(kind(&s), Some(ScanErrorKind::Invalid), "{s:?}");
        }
    }
}
