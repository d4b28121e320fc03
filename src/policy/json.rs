//! Reading a `.json` policy into one JSON value, strictly.
//!
//! The crate's strict pre-scan ([`crate::strict_json::scan`]) refuses duplicate keys (after
//! unescaping), non-finite numbers and deep nesting before `serde_json` builds the value. A JSON
//! text is also YAML, and SPEC §5 wants one reading of a policy, so the text must also mean the
//! same to YAML readers (PyYAML `safe_load`): the characters of [`super::prescan`] (tabs
//! included: PyYAML cannot read a tab-indented JSON text), numbers YAML reads alike (`1e3` is a string to YAML 1.1, `-0` an
//! integer to YAML but `-0.0` to JSON), no `\u` escapes of UTF-16 surrogates (YAML readers do not
//! pair them), and keys on one line with their `:`, at most 1000 characters long.

use serde_json::Value;

use super::error::{Ctx, PolicyError, Refusal, line_of};
use super::prescan::{MAX_DEPTH, Mode, PrescanErrorKind, prescan};
use super::scalar::{Disagreement, resolve};
use crate::strict_json::{self, ScanErrorKind};

/// The longest key accepted, in characters from its opening quote to its `:`.
const MAX_KEY_CHARS: usize = 1000;

/// Reads `bytes` as a JSON policy document.
pub(super) fn parse(ctx: &Ctx<'_>, bytes: &[u8]) -> Result<Value, PolicyError> {
    if let Err(e) = strict_json::scan(bytes, MAX_DEPTH) {
        let line = line_of(bytes, e.offset);
        return Err(match e.kind {
            ScanErrorKind::DuplicateKey => {
                // The scan reports the offset of the repeated key's opening quote: read that one
                // JSON string back to name the key.
                let key = bytes
                    .get(e.offset..)
                    .and_then(|rest| {
                        serde_json::Deserializer::from_slice(rest)
                            .into_iter::<String>()
                            .next()
                            .and_then(Result::ok)
                    })
                    .unwrap_or_else(|| "?".to_owned());
                ctx.duplicate(&key, Some(line))
            }
            ScanErrorKind::TooDeep => ctx.syntax(
                "JSON",
                &format!("nested deeper than {MAX_DEPTH} levels at line {line}"),
            ),
            ScanErrorKind::NonFinite => {
                ctx.syntax("JSON", &format!("non-finite number at line {line}"))
            }
            // serde_json says what is wrong (with line and column); the scan only where.
            ScanErrorKind::Invalid => match serde_json::from_slice::<Value>(bytes) {
                Err(e) => ctx.syntax("JSON", &e.to_string()),
                Ok(_) => ctx.syntax("JSON", &format!("invalid JSON at line {line}")),
            },
        });
    }
    let text = prescan(bytes, Mode::Json).map_err(|e| {
        let what = match e.kind {
            PrescanErrorKind::Character(c) => Refusal::Character(c),
            PrescanErrorKind::ByteOrderMark => Refusal::ByteOrderMark,
            PrescanErrorKind::LoneCarriageReturn => Refusal::LoneCarriageReturn,
            PrescanErrorKind::Tab => Refusal::Tab,
            PrescanErrorKind::NotUtf8 | PrescanErrorKind::TooDeep => Refusal::NotUtf8,
        };
        let prefix = std::str::from_utf8(bytes.get(..e.offset).unwrap_or_default());
        ctx.refused_at(prefix.unwrap_or_default(), e.offset, what)
    })?;
    as_yaml_reads_it(ctx, text)?;
    // Literal keys: `Value`'s own `Deserialize` would rewrite a `$serde_json::private::RawValue`
    // key (see `strict_json::parse_value`).
    strict_json::parse_value(text).map_err(|e| ctx.syntax("JSON", &e.to_string()))
}

/// Refuses what YAML readers would read differently in a text the strict scan accepted (so its
/// strings are well formed and its tokens are JSON tokens).
fn as_yaml_reads_it(ctx: &Ctx<'_>, text: &str) -> Result<(), PolicyError> {
    let b = text.as_bytes();
    let refuse = |at: usize, what| Err(ctx.refused_at(text, at, what));
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'"' => {
                let start = i;
                i += 1;
                while let Some(&c) = b.get(i) {
                    match c {
                        b'"' => break,
                        b'\\' if b.get(i + 1) == Some(&b'u') => {
                            let hex = text.get(i + 2..i + 6).unwrap_or_default();
                            if u16::from_str_radix(hex, 16)
                                .is_ok_and(|u| (0xD800..=0xDFFF).contains(&u))
                            {
                                return refuse(i, Refusal::SurrogateEscape);
                            }
                            i += 6;
                        }
                        b'\\' => i += 2,
                        _ => i += 1,
                    }
                }
                i += 1;
                let gap = b
                    .get(i..)
                    .unwrap_or_default()
                    .iter()
                    .take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
                    .count();
                if b.get(i + gap) == Some(&b':') {
                    let between = b.get(i..i + gap).unwrap_or_default();
                    let chars = text.get(start..i + gap).map_or(0, |k| k.chars().count());
                    if between.iter().any(|&c| c == b'\n' || c == b'\r') || chars > MAX_KEY_CHARS {
                        return refuse(start, Refusal::KeyLayout);
                    }
                }
                i += gap;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while b
                    .get(i)
                    .is_some_and(|c| matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    i += 1;
                }
                let token = text.get(start..i).unwrap_or_default();
                match resolve(token) {
                    Ok(yaml) => {
                        let json: Option<Value> = serde_json::from_str(token).ok();
                        if json.as_ref() != Some(&yaml) {
                            return refuse(start, Refusal::JsonNumber(token.to_owned()));
                        }
                    }
                    Err(Disagreement::Ambiguous { yaml11, yaml12 }) => {
                        return refuse(
                            start,
                            Refusal::Ambiguous {
                                text: token.to_owned(),
                                yaml11,
                                yaml12,
                            },
                        );
                    }
                    Err(Disagreement::NotJsonNumber) => {
                        return refuse(start, Refusal::NotJsonNumber(token.to_owned()));
                    }
                }
            }
            _ => i += 1,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn json(s: &str) -> Result<Value, PolicyError> {
        parse(&Ctx::new(Path::new("p.json")), s.as_bytes())
    }

    /// `Value`'s own `Deserialize` would turn this object into the string `"x"`.
    #[test]
    fn keys_are_taken_literally() {
        let v = json(r#"{"name":{"$serde_json::private::RawValue":"\"x\""}}"#).unwrap();
        assert!(v["name"].is_object(), "{v}");
        assert_eq!(v["name"]["$serde_json::private::RawValue"], "\"x\"");
    }

    #[test]
    fn duplicates_refused_with_key_and_line() {
        for (doc, key) in [
            ("{\"a\":1,\"a\":2}", "a"),
            (
                "{\"version\":\"1\",\n\"tools\":{\"allow\":[],\n\"allow\":[]}}",
                "allow",
            ),
            ("{\"a\":1,\"\\u0061\":2}", "a"),
        ] {
            match json(doc) {
                Err(PolicyError::DuplicateKey { key: k, line, .. }) => {
                    assert_eq!(k, key, "{doc}");
                    assert_eq!(line, Some(doc.matches('\n').count() + 1), "{doc}");
                }
                other => panic!("{doc:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn refusals() {
        for doc in ["", "{", "{\"a\":NaN}", "{\"a\":1e999}", "{'a':1}", "a: 1"] {
            assert!(
                matches!(json(doc), Err(PolicyError::Syntax { .. })),
                "{doc:?}"
            );
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(matches!(json(&deep), Err(PolicyError::Syntax { .. })));
        assert_eq!(json("{\"a\":[1,{}]}").ok(), Some(json!({"a": [1, {}]})));
    }

    #[test]
    fn text_means_the_same_to_yaml_readers() {
        for (doc, what) in [
            ("{\"a\": 1e3}", "Ambiguous"),
            ("{\"a\": 1.5E3}", "Ambiguous"),
            ("{\"a\": -0}", "JsonNumber"),
            ("{\"a\": 123456789012345678901}", "NotJsonNumber"),
            ("{\"a\": \"\\ud83d\\ude00\"}", "SurrogateEscape"),
            ("{\"a\"\n: 1}", "KeyLayout"),
            ("{\"a\": \"\u{2028}\"}", "Character"),
            ("{\"a\": \"\u{85}\"}", "Character"),
        ] {
            match json(doc) {
                Err(PolicyError::Refused { what: w, .. }) => {
                    assert!(format!("{w:?}").starts_with(what), "{doc:?}: {w:?}")
                }
                other => panic!("{doc:?}: {other:?}"),
            }
        }
        let long = format!("{{\"{}\": 1}}", "k".repeat(MAX_KEY_CHARS));
        assert!(json(&long).is_err());
        let ok = format!("{{\"{}\": 1}}", "k".repeat(MAX_KEY_CHARS - 2));
        assert!(json(&ok).is_ok());
        assert!(matches!(
            json("{\n\t\"a\": 1\n}"),
            Err(PolicyError::Refused {
                line: 2,
                column: 1,
                what: Refusal::Tab,
                ..
            })
        ));
        // What both read alike passes.
        assert_eq!(
            json("{\n  \"a\": [0, -5, 1.5, 1.5e+3, -0.0, \"\\u00e9\\/\"]\n}").ok(),
            Some(json!({"a": [0, -5, 1.5, 1500.0, -0.0, "é/"]}))
        );
    }
}
