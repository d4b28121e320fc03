//! `record_arguments` and `redact`: what the proxy records, against the parsed value's record.

use std::path::Path;

use serde_json::{Value, json};

use crate::policy::Policy;

fn policy(redact: &str) -> Policy {
    let yaml = format!("version: \"1\"\nrecord_arguments: true\nredact: {redact}\n");
    match Policy::from_bytes(yaml.as_bytes(), Path::new("team.yaml")) {
        Ok(p) => p,
        Err(e) => panic!("{yaml}: {e}"),
    }
}

/// Whether `key` is redacted under `p` (a one-member argument object).
fn redacted(p: &Policy, key: &str) -> bool {
    let mut args = serde_json::Map::new();
    args.insert(key.to_owned(), json!("v4lue"));
    let (text, _) = p.recorded_arguments(&Value::Object(args));
    let v: Value = serde_json::from_str(&text).unwrap();
    match v.get(key) {
        Some(Value::String(s)) if s == super::REDACTED => true,
        Some(Value::String(s)) if s == "v4lue" => false,
        other => panic!("{key:?}: {other:?} in {text}"),
    }
}

#[test]
fn a_key_equal_to_a_pattern_under_lenient_normalization_is_redacted() {
    let p = policy(r#"["secret", "*token*", "api?key", "authorization", "ΣIGMA"]"#);
    for key in [
        "secret",
        "SECRET",
        "Secret",
        "ſecret", // U+017F: Go's encoding/json binds it to `Secret`
        "ſECRET",
        "secret\u{0}",
        "Secret\u{0}\u{0}",
        "ſecret\u{0}",
        "x_TO\u{212A}EN", // Kelvin sign: folds to k
        "to\u{212A}en",
        "API-\u{212A}EY",
        "api_key",
        "AUTHORIZATION",
        "authorization\u{0}",
        "σigma", // Σ, σ and ς are one class
        "ςIGMA",
    ] {
        assert!(redacted(&p, key), "{key:?} must be redacted");
    }
}

#[test]
fn a_key_that_normalizes_to_something_else_is_kept() {
    let p = policy(r#"["secret", "*token*", "api?key", "authorization"]"#);
    for key in [
        "secrets",
        "secret_id",
        "my_secret",
        "se\u{0}cret",  // a NUL inside is not trailing
        "\u{0}secret",  // nor is a leading one
        "secret ",      // trailing space is a different key
        "\u{455}ecret", // Cyrillic dze: looks like s, folds to itself
        "secre\u{442}", // Cyrillic te
        "ｓｅｃｒｅｔ", // fullwidth: no simple fold to ASCII
        "ſecrets",
        "tolken",
        "apikey",
        "api__key",
        "authorisation",
        "",
    ] {
        assert!(!redacted(&p, key), "{key:?} must not be redacted");
    }
}

#[test]
fn the_pattern_is_folded_too() {
    // A pattern written with a fold-class member, or with a trailing NUL, matches the keys
    // its class matches.
    let p = policy(r#"["ſecret", "\u212Aey", "pass\0"]"#);
    for key in [
        "secret",
        "SECRET",
        "ſecret",
        "key",
        "KEY",
        "\u{212A}ey",
        "pass",
        "PASS\u{0}",
    ] {
        assert!(redacted(&p, key), "{key:?} must be redacted");
    }
    for key in ["secrets", "keys", "passs"] {
        assert!(!redacted(&p, key), "{key:?} must not be redacted");
    }
}

/// Every spelling of `secret` from the members of each character's folding class, with and
/// without trailing NULs, is redacted by `redact: [secret]`: exactly the keys
/// `lenient::same` calls `secret`.
#[test]
fn every_fold_class_spelling_is_redacted() {
    let p = policy(r#"["secret"]"#);
    let class = |c: char| -> Vec<char> {
        let mut v: Vec<char> = crate::lenient::fold_table()
            .iter()
            .filter(|&&(_, to)| to == crate::lenient::fold(c) as u32)
            .filter_map(|&(from, _)| char::from_u32(from))
            .collect();
        v.push(crate::lenient::fold(c));
        v
    };
    let mut spellings = vec![String::new()];
    for c in "secret".chars() {
        let members = class(c);
        assert!(members.len() >= 2, "{c}: {members:?}");
        spellings = spellings
            .iter()
            .flat_map(|s| members.iter().map(move |m| format!("{s}{m}")))
            .collect();
    }
    assert!(spellings.len() >= 96, "{}", spellings.len());
    for s in &spellings {
        for key in [s.clone(), format!("{s}\u{0}")] {
            assert!(crate::lenient::same(&key, "secret"));
            assert!(redacted(&p, &key), "{key:?} must be redacted");
        }
    }
}

/// The fold redacts at least what lowercasing did: any key whose lowercase equals a
/// lowercase pattern is redacted.
#[test]
fn folding_redacts_whatever_lowercasing_did() {
    let p = policy(r#"["straße", "ǅemal", "ὈΔΥΣΣΕΎΣ", "İd"]"#);
    for key in [
        "STRASSE",
        "straße",
        "STRAßE",
        "ǄEMAL",
        "ǆemal",
        "ὀδυσσεύς",
        "ὈΔΥΣΣΕΎς",
    ] {
        let lower_matches = ["straße", "ǅemal", "ὈΔΥΣΣΕΎΣ", "İd"]
            .iter()
            .any(|pat| pat.to_lowercase() == key.to_lowercase());
        if lower_matches {
            assert!(redacted(&p, key), "{key:?} must be redacted");
        }
    }
    assert!(redacted(&p, "id"), "İ folds to i (fails closed)");
}

/// A JSON text of the shape `arguments` take, with whitespace or without, keys in any
/// order (distinct within an object), in and out of the simple transcription's subset.
#[derive(Debug, Clone)]
enum J {
    Lit(&'static str),
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    fn write(&self, ws: &str, out: &mut String) {
        match self {
            J::Lit(l) => out.push_str(l),
            J::Num(n) => out.push_str(n),
            J::Str(s) => out.push_str(&serde_json::to_string(s).unwrap()),
            J::Arr(items) => {
                out.push('[');
                for (n, i) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    out.push_str(ws);
                    i.write(ws, out);
                }
                out.push(']');
            }
            J::Obj(members) => {
                out.push('{');
                out.push_str(ws);
                let mut seen = std::collections::HashSet::new();
                let mut first = true;
                for (k, v) in members {
                    if !seen.insert(k.clone()) {
                        continue;
                    }
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push_str(ws);
                    out.push(':');
                    out.push_str(ws);
                    v.write(ws, out);
                }
                out.push_str(ws);
                out.push('}');
            }
        }
    }
}

fn key() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        4 => prop::sample::select(vec![
            "secret", "SECRET", "Secret", "secrets", "my_token", "TOKEN_x", "tolken",
            "api_key", "API-KEY", "apikey", "authorization", "Authorization", "a", "b",
            "B", "z", "", "ſecret", "to\u{212A}en", "secret\u{0}", "se\"cret", "k\\ey",
            "ключ", "é",
        ])
        .prop_map(str::to_owned),
        1 => "[a-zA-Z_]{0,70}",
        1 => "[a-z]{0,3}(SECRET|Token|password)[A-Z]{0,3}",
    ]
}

fn leaf() -> impl proptest::strategy::Strategy<Value = J> {
    use proptest::prelude::*;
    prop_oneof![
        prop::sample::select(vec!["true", "false", "null"]).prop_map(J::Lit),
        prop::sample::select(vec![
            "0",
            "-1",
            "7",
            "123456789012345",
            "1234567890123456",
            "-0",
            "1.5",
            "1e3",
            "1E400",
            "-2.50",
            "99999999999999999999",
        ])
        .prop_map(|n| J::Num(n.to_owned())),
        any::<i32>().prop_map(|n| J::Num(n.to_string())),
        "[ -~]{0,12}".prop_map(J::Str),
        "[a-zé日\u{1F600}\u{7f}\u{2028}\n\"\\\\]{0,12}".prop_map(J::Str),
        // Long strings of multi-byte characters, for the cut at 4 KiB.
        (1360..1370usize, 0..3usize).prop_map(|(n, pad)| J::Str(format!(
            "{}{}",
            "x".repeat(pad),
            "日".repeat(n)
        ))),
    ]
}

fn value() -> impl proptest::strategy::Strategy<Value = J> {
    use proptest::prelude::*;
    leaf().prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(J::Arr),
            prop::collection::vec((key(), inner), 0..6).prop_map(J::Obj),
        ]
    })
}

/// Today's path: the parsed value, redacted, serialized, canonicalized, cut.
fn through_the_value(p: &Policy, text: &str) -> (String, bool) {
    p.recorded_arguments(&crate::strict_json::parse_value(text).unwrap())
}

/// The fast path as `client_judge::evaluate` takes it: `None` when it falls back.
fn through_the_transcription(p: &Policy, text: &str) -> Option<(String, bool)> {
    crate::canonical::digest_of_and(text, |form| {
        form.and_then(|f| p.recorded_canonical_arguments(f))
    })
    .and_then(|(_, recorded)| recorded)
}

/// The escaped fast path against the text it escapes: when it is taken, it is what the
/// decision line's escaper (serde_json's escaping) writes of the recorded text (an uncut
/// one) between the quotes;
/// and it is taken whenever the recorded text is uncut and holds no control character.
fn check_escaped(p: &Policy, text: &str) -> Result<(), String> {
    let Some((_, forms)) = crate::canonical::digest_of_and(text, |form| {
        form.map(|f| {
            (
                p.recorded_canonical_arguments(f),
                p.recorded_canonical_arguments_escaped(f),
            )
        })
    }) else {
        return Ok(());
    };
    let Some((recorded, escaped)) = forms else {
        return Ok(());
    };
    let plain = |t: &str| !t.bytes().any(|b| b < 0x20);
    match (recorded, escaped) {
        (Some((t, false)), Some(e)) => {
            // serde_json's escaping is the decision line's (`evidence::event`'s tests).
            let want = serde_json::to_string(&t).unwrap_or_default();
            if want != format!("\"{e}\"") {
                return Err(format!("{text}: {e} is not the escape of {t}"));
            }
        }
        (Some((t, false)), None) if plain(&t) => return Err(format!("{text}: not taken")),
        (Some((_, true)) | None, Some(e)) => return Err(format!("{text}: {e} taken")),
        _ => {}
    }
    Ok(())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
    /// The recorded text made from the canonical transcription is the one made from the
    /// parsed value, byte for byte (cut included), whenever the fast path is taken; and it
    /// is taken whenever the transcription is simple and every key is ASCII.
    #[test]
    fn the_transcription_records_what_the_value_records(
        v in value(),
        spaced in proptest::prelude::any::<bool>(),
        redact in proptest::prelude::prop_oneof![
            proptest::prelude::Just("[]"),
            proptest::prelude::Just(r#"["secret", "*token*", "api?key", "authorization"]"#),
            proptest::prelude::Just(r#"["*"]"#),
            proptest::prelude::Just(r#"["?"]"#),
        ],
    ) {
        let p = policy(redact);
        let mut text = String::new();
        v.write(if spaced { " \n" } else { "" }, &mut text);
        // Only texts a client line can carry: strict JSON.
        if crate::strict_json::scan_str(&text, 64).is_err() {
            return Ok(());
        }
        let want = through_the_value(&p, &text);
        if let Some(got) = through_the_transcription(&p, &text) {
            proptest::prop_assert_eq!(got, want, "{}", text);
        }
        proptest::prop_assert_eq!(check_escaped(&p, &text), Ok(()));
    }
}

/// Texts at the edges: nesting at the transcription's bound, the cut on both sides of
/// 4 KiB with multi-byte characters, redacted values of every kind, arrays at the top.
#[test]
fn edge_texts_record_what_the_value_records() {
    let p = policy(r#"["secret", "*token*"]"#);
    let deep = |n: usize| format!("{}1{}", "{\"Secret\":[{\"a\":".repeat(n), "}]}".repeat(n));
    let mut texts = vec![
        deep(1),
        deep(40),
        r#"[{"secret":{"a":[1,{"b":"c"}],"d":null},"z":1},{"TOKEN":[]}]"#.to_owned(),
        r#"{"secret":"x","secret2":true,"a_token":-5,"Secret":{}}"#.to_owned(),
        r#"{"b":{"secret":[[[]]],"c":"é"},"a":1}"#.to_owned(),
        r#"{"b" : { "secret" : [ 1 , 2 ] , "c" : "é" } , "a" : 1 }"#.to_owned(),
        r#""secret""#.to_owned(),
        "[]".to_owned(),
        "{}".to_owned(),
    ];
    for pad in 4080..4100 {
        texts.push(format!(
            r#"{{"a":"{}{}","secret":1}}"#,
            "x".repeat(pad % 3),
            "é".repeat(pad / 2)
        ));
        texts.push(format!(
            r#"{{"z":"{}","secret":"{}"}}"#,
            "x".repeat(pad - 10),
            "y".repeat(50)
        ));
    }
    for text in &texts {
        assert!(crate::strict_json::scan_str(text, 128).is_ok(), "{text}");
        let got = through_the_transcription(&p, text);
        assert_eq!(got, Some(through_the_value(&p, text)), "{text}");
        assert_eq!(check_escaped(&p, text), Ok(()));
    }
    // Escapes as JCS writes them are transcribed; non-ASCII keys and other escapes fall
    // back.
    for text in [
        r#"{"a":"\n","secret":"\"x\\"}"#,
        r#"{"t":"\u0000\u001f\t","my_token":["\u0007"]}"#,
    ] {
        assert!(crate::strict_json::scan_str(text, 128).is_ok(), "{text}");
        let got = through_the_transcription(&p, text);
        assert_eq!(got, Some(through_the_value(&p, text)), "{text}");
        assert_eq!(check_escaped(&p, text), Ok(()));
    }
    for text in [
        r#"{"ſecret":1}"#,
        r#"{"s\u0065cret":1}"#,
        r#"{"a":"\/"}"#,
        r#"{"a":"\u0041"}"#,
        r#"{"a":"\u000a"}"#,
    ] {
        assert_eq!(through_the_transcription(&p, text), None, "{text}");
    }
}

/// The ASCII fold `redacts_ascii` uses is the lenient normalization of ASCII keys.
#[test]
fn the_ascii_fold_is_the_lenient_normalization() {
    for b in 1u8..0x80 {
        let c = char::from(b);
        assert_eq!(crate::lenient::fold(c), c.to_ascii_lowercase(), "{c:?}");
    }
}

/// What the fast path records, the strict parser parses (`evaluate` then skips the parse,
/// which would have refused the call had it failed): nesting at both bounds, under a
/// redacted key and not.
#[test]
fn a_recorded_text_parses() {
    let p = policy(r#"["secret"]"#);
    for n in 1usize..=130 {
        for text in [
            format!("{}{}", "[".repeat(n), "]".repeat(n)),
            format!(
                r#"{{"secret":{}1{}}}"#,
                "[".repeat(n - 1),
                "]".repeat(n - 1)
            ),
        ] {
            let fast = through_the_transcription(&p, &text);
            let parsed = crate::strict_json::parse_value(&text);
            assert_eq!(fast.is_some(), n <= super::PARSED_DEPTH, "{n}");
            assert_eq!(parsed.is_ok(), n <= super::PARSED_DEPTH, "{n}");
            if let Some(fast) = fast {
                assert_eq!(fast, through_the_value(&p, &text));
            }
        }
    }
}
