//! `record_arguments` and `redact` (SPEC §4.1a, §5.2): what a `tools/call` decision records of
//! the call's arguments.
//!
//! ```yaml
//! record_arguments: true
//! redact: ["*token*", "*secret*", "*password*", "authorization"]
//! ```
//!
//! With `record_arguments: true`, a decision carries the RFC 8785 canonical JSON of
//! `params.arguments` with the value under every object key (at any depth, in arrays too) that
//! matches a `redact` glob replaced by the string `"[redacted]"`, cut to at most
//! [`MAX_RECORDED_BYTES`] on a UTF-8 character boundary. `redact` globs are the tool-name globs
//! (`*`, `?`, whole-key match), compared case-insensitively in the sense of SPEC §3: both the
//! pattern and the key are put through the lenient normalization (`crate::lenient::normalize`:
//! trailing U+0000 removed, Unicode simple case folding), so a key a lenient server reads as
//! `secret` (`ſecret`, `SECRET`, `secret\u0000`) is redacted under `redact: [secret]`. Folding is
//! one character to one character, so `?` still matches one character of the key. `redact`
//! without `record_arguments: true` is accepted and has no effect (a policy may keep its
//! patterns ready for when recording is turned on).

use serde_json::Value;

use super::error::{Ctx, PolicyError};
use super::glob::Glob;

/// At most this many bytes of recorded arguments (4 KiB).
pub const MAX_RECORDED_BYTES: usize = 4096;

/// What replaces a redacted value.
pub(crate) const REDACTED: &str = "[redacted]";

/// The compiled `record_arguments` and `redact`.
#[derive(Default)]
pub(crate) struct ArgumentRecord {
    record: bool,
    written: Vec<String>,
    globs: Vec<Glob>,
}

impl ArgumentRecord {
    /// Compiles the two keys from their values in the policy (either may be absent).
    pub(crate) fn parse(
        ctx: &Ctx<'_>,
        record: Option<&Value>,
        redact: Option<&Value>,
    ) -> Result<ArgumentRecord, PolicyError> {
        let record = match record {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(ctx.invalid(
                    "record_arguments",
                    "must be a boolean: `record_arguments: true` or `false`",
                ));
            }
        };
        let written = match redact {
            Some(v) => ctx.pattern_list(v, "redact")?,
            None => Vec::new(),
        };
        let globs = written
            .iter()
            .map(|p| Glob::new(&crate::lenient::normalize(p)))
            .collect();
        Ok(ArgumentRecord {
            record,
            written,
            globs,
        })
    }

    /// `record_arguments`.
    pub(crate) fn record(&self) -> bool {
        self.record
    }

    /// The `redact` patterns as written.
    pub(crate) fn patterns(&self) -> &[String] {
        &self.written
    }

    fn redacts(&self, key: &str) -> bool {
        if self.globs.is_empty() {
            return false;
        }
        let key = crate::lenient::normalize(key);
        self.globs.iter().any(|g| g.matches(&key))
    }

    /// `arguments` with every value under a redacted key replaced.
    fn redacted(&self, v: &Value) -> Value {
        match v {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let v = if self.redacts(k) {
                            Value::String(REDACTED.to_owned())
                        } else {
                            self.redacted(v)
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|i| self.redacted(i)).collect()),
            other => other.clone(),
        }
    }

    /// The recorded text of `arguments` and whether it was cut (see the module docs). When the
    /// canonical form cannot be built (nesting deeper than the canonicalizer's bound, or
    /// numbers whose canonical digits outgrow the text by more than its slack), the compact
    /// JSON of the redacted value is recorded instead, cut the same way.
    pub(crate) fn recorded(&self, arguments: &Value) -> (String, bool) {
        let redacted = self.redacted(arguments);
        let compact = serde_json::to_string(&redacted).unwrap_or_default();
        let mut text = crate::canonical::canonical_text(&compact).unwrap_or(compact);
        if text.len() <= MAX_RECORDED_BYTES {
            return (text, false);
        }
        let mut end = MAX_RECORDED_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        (text, true)
    }
}

#[cfg(test)]
mod tests {
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
}
