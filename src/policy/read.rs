//! Turning a policy file's bytes into one JSON value, strictly.
//!
//! The format is chosen by extension: `.json` (any case) is JSON, anything else is YAML (YAML is
//! a superset, so a JSON body in a `.yaml` file works too).
//!
//! - JSON goes through the crate's strict pre-scan ([`crate::strict_json::scan`]) first, which
//!   refuses duplicate keys (after unescaping), non-finite numbers and deep nesting; only then
//!   does `serde_json` build the value.
//! - YAML is read with `serde_yaml_ng` into our own visitor rather than `serde_json::Value`:
//!   deserializing YAML straight into `serde_json::Value` keeps the *last* of two duplicate keys
//!   silently (see the test `serde_json_value_from_yaml_keeps_duplicates_silently`). The visitor
//!   refuses duplicate keys, non-string keys, tagged values (`!foo`), non-finite floats (`.nan`,
//!   `.inf`) and nesting deeper than [`MAX_DEPTH`], and records *where* (the key path) so the
//!   error can name it.

use std::cell::RefCell;
use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::error::{Ctx, PolicyError};
use crate::strict_json::{self, ScanErrorKind};

/// Deepest nesting accepted in a policy file (the outermost mapping is level 1).
pub(crate) const MAX_DEPTH: usize = 64;

/// The syntax a policy file is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Json,
    Yaml,
}

impl Format {
    /// `.json` (ASCII case-insensitive) → JSON; everything else → YAML.
    pub(super) fn for_path(path: &Path) -> Format {
        match path.extension() {
            Some(ext) if ext.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Yaml,
        }
    }
}

/// Parses `bytes` in `format` into a value; every problem is a [`PolicyError`] naming the file.
pub(super) fn parse(ctx: &Ctx<'_>, bytes: &[u8], format: Format) -> Result<Value, PolicyError> {
    match format {
        Format::Json => parse_json(ctx, bytes),
        Format::Yaml => parse_yaml(ctx, bytes),
    }
}

fn line_of(bytes: &[u8], offset: usize) -> usize {
    bytes
        .get(..offset)
        .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
        + 1
}

fn parse_json(ctx: &Ctx<'_>, bytes: &[u8]) -> Result<Value, PolicyError> {
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
    // Literal keys: `Value`'s own `Deserialize` would rewrite a `$serde_json::private::RawValue`
    // key (see `strict_json::parse_value`). The scan above validated UTF-8.
    let text = std::str::from_utf8(bytes).map_err(|e| ctx.syntax("JSON", &e.to_string()))?;
    crate::strict_json::parse_value(text).map_err(|e| ctx.syntax("JSON", &e.to_string()))
}

/// What the YAML visitor refused, with the key path where it happened.
#[derive(Debug)]
enum Problem {
    Duplicate(String),
    Refused { at: String, what: &'static str },
}

fn child_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

fn parse_yaml(ctx: &Ctx<'_>, bytes: &[u8]) -> Result<Value, PolicyError> {
    let problem = RefCell::new(None);
    let seed = Node {
        path: String::new(),
        depth: 0,
        problem: &problem,
    };
    let result = seed.deserialize(serde_yaml_ng::Deserializer::from_slice(bytes));
    match result {
        Ok(v) => Ok(v),
        Err(e) => {
            Err(match problem.into_inner() {
                // serde_yaml_ng places errors raised from inside a visitor at the start of the
                // enclosing node, not at the key, so a line would mislead; the key path is exact.
                Some(Problem::Duplicate(key)) => ctx.duplicate(&key, None),
                Some(Problem::Refused { at, what }) => {
                    ctx.invalid(if at.is_empty() { "(top level)" } else { &at }, what)
                }
                None => ctx.syntax("YAML", &e.to_string()),
            })
        }
    }
}

/// Deserializes any YAML node into a JSON value, refusing what JSON cannot say unambiguously.
struct Node<'p> {
    /// Dotted key path of this node, for messages.
    path: String,
    /// Containers enclosing this node.
    depth: usize,
    problem: &'p RefCell<Option<Problem>>,
}

impl Node<'_> {
    fn refuse<E: de::Error>(&self, what: &'static str) -> E {
        self.problem.replace(Some(Problem::Refused {
            at: self.path.clone(),
            what,
        }));
        E::custom(what)
    }

    fn enter<E: de::Error>(&self) -> Result<usize, E> {
        if self.depth >= MAX_DEPTH {
            return Err(self.refuse("is nested too deeply; flatten the policy"));
        }
        Ok(self.depth + 1)
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        match Number::from_f64(v) {
            Some(n) => Ok(Value::Number(n)),
            None => Err(self.refuse("is a non-finite number (.nan/.inf); use a finite number")),
        }
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, _data: A) -> Result<Value, A::Error> {
        Err(self.refuse("is a tagged value (!tag); remove the tag"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let depth = self.enter()?;
        let mut out = Vec::new();
        loop {
            let child = Node {
                path: format!("{}[{}]", self.path, out.len()),
                depth,
                problem: self.problem,
            };
            match seq.next_element_seed(child)? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let depth = self.enter()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(Key(&self))? {
            let path = child_path(&self.path, &key);
            if out.contains_key(&key) {
                self.problem.replace(Some(Problem::Duplicate(path)));
                return Err(de::Error::custom("duplicate key"));
            }
            let child = Node {
                path,
                depth,
                problem: self.problem,
            };
            let value = map.next_value_seed(child)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// A mapping key: only strings are accepted (JSON keys are strings; `1:` and `"1":` would
/// otherwise collapse into one key after conversion).
struct Key<'a, 'p>(&'a Node<'p>);

impl<'de> DeserializeSeed<'de> for Key<'_, '_> {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_, '_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }

    fn visit_string<E>(self, v: String) -> Result<String, E> {
        Ok(v)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<String, E> {
        Err(self.non_string())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<String, E> {
        Err(self.non_string())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<String, E> {
        Err(self.non_string())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<String, E> {
        Err(self.non_string())
    }

    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Err(self.non_string())
    }

    fn visit_none<E: de::Error>(self) -> Result<String, E> {
        Err(self.non_string())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(self.non_string())
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(self.non_string())
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(self.non_string())
    }
}

impl Key<'_, '_> {
    fn non_string<E: de::Error>(&self) -> E {
        self.0
            .refuse("has a mapping key that is not a string; quote the key")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> Ctx<'static> {
        Ctx::new(Path::new("p.yaml"))
    }

    fn yaml(s: &str) -> Result<Value, PolicyError> {
        parse(&ctx(), s.as_bytes(), Format::Yaml)
    }

    fn json(s: &str) -> Result<Value, PolicyError> {
        parse(&ctx(), s.as_bytes(), Format::Json)
    }

    /// `Value`'s own `Deserialize` would turn this object into the string `"x"`.
    #[test]
    fn json_keys_are_taken_literally() {
        let v = json(r#"{"name":{"$serde_json::private::RawValue":"\"x\""}}"#).unwrap();
        assert!(v["name"].is_object(), "{v}");
        assert_eq!(v["name"]["$serde_json::private::RawValue"], "\"x\"");
    }

    #[test]
    fn format_by_extension() {
        assert_eq!(Format::for_path(Path::new("a.json")), Format::Json);
        assert_eq!(Format::for_path(Path::new("a.JSON")), Format::Json);
        assert_eq!(Format::for_path(Path::new("a.yaml")), Format::Yaml);
        assert_eq!(Format::for_path(Path::new("a.yml")), Format::Yaml);
        assert_eq!(Format::for_path(Path::new("a")), Format::Yaml);
        assert_eq!(Format::for_path(Path::new("json")), Format::Yaml);
        assert_eq!(Format::for_path(Path::new("a.json.bak")), Format::Yaml);
    }

    /// Why the strict visitor exists: this is the behaviour we must not inherit.
    #[test]
    fn serde_json_value_from_yaml_keeps_duplicates_silently() {
        let v: Result<Value, _> = serde_yaml_ng::from_str("a: 1\na: 2\n");
        assert_eq!(v.ok(), Some(json!({"a": 2})));
        // serde_yaml_ng's own Value does refuse them, but its error names the key only in text.
        let v: Result<serde_yaml_ng::Value, _> = serde_yaml_ng::from_str("a: 1\na: 2\n");
        assert!(v.is_err());
    }

    #[test]
    fn yaml_values_convert() {
        let v = yaml("a: [1, -2, 1.5, true, null, ~, 'x', \"y\"]\nb: {c: {}}\nd:\n").ok();
        assert_eq!(
            v,
            Some(json!({"a": [1, -2, 1.5, true, null, null, "x", "y"], "b": {"c": {}}, "d": null}))
        );
        // A JSON body in a YAML file.
        let v = yaml("{\"version\": \"1\", \"allow\": [\"*\"]}").ok();
        assert_eq!(v, Some(json!({"version": "1", "allow": ["*"]})));
        // Anchors and aliases are expanded.
        let v = yaml("a: &x [1]\nb: *x\n").ok();
        assert_eq!(v, Some(json!({"a": [1], "b": [1]})));
    }

    #[test]
    fn yaml_duplicates_refused_with_path() {
        for (doc, key) in [
            ("a: 1\na: 2\n", "a"),
            ("tools:\n  allow: [x]\n  allow: [y]\n", "tools.allow"),
            ("c:\n  - p: {m: 1, m: 2}\n", "c[0].p.m"),
            ("a: 1\n'a': 2\n", "a"),
            ("a: 1\n\"\\x61\": 2\n", "a"),
        ] {
            match yaml(doc) {
                Err(PolicyError::DuplicateKey { key: k, .. }) => assert_eq!(k, key, "{doc}"),
                other => panic!("{doc:?}: {other:?}"),
            }
        }
        let msg = yaml("x: 1\ny: 2\nx: 3\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(msg.contains("p.yaml") && msg.contains("`x`"), "{msg}");
        // Same key in sibling mappings is fine.
        assert!(yaml("- a: 1\n- a: 2\n").is_ok());
    }

    #[test]
    fn yaml_refusals() {
        for (doc, key) in [
            ("1: a\n", "(top level)"),
            ("a: {true: x}\n", "a"),
            ("a: {[1]: x}\n", "a"),
            ("a: !custom x\n", "a"),
            ("a: [.nan]\n", "a[0]"),
            ("a: .inf\n", "a"),
        ] {
            match yaml(doc) {
                Err(e @ PolicyError::Invalid { .. }) => assert_eq!(e.key(), Some(key), "{doc}"),
                other => panic!("{doc:?}: {other:?}"),
            }
        }
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        assert!(matches!(yaml(&deep), Err(PolicyError::Invalid { .. })));
        let ok = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(yaml(&ok).is_ok());
    }

    #[test]
    fn yaml_alias_bomb_is_refused() {
        let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let p = i - 1;
            doc.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        assert!(matches!(yaml(&doc), Err(PolicyError::Syntax { .. })));
    }

    #[test]
    fn yaml_syntax_errors() {
        for doc in [
            "a: [1, 2\n",
            "a: 1\n---\nb: 2\n",
            "\tfoo: : :\n",
            "a: *nope\n",
        ] {
            match yaml(doc) {
                Err(e @ PolicyError::Syntax { .. }) => {
                    let msg = e.to_string();
                    assert!(msg.contains("p.yaml") && !msg.contains('\n'), "{msg}");
                }
                other => panic!("{doc:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn json_duplicates_refused_with_key_and_line() {
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
    fn json_refusals() {
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
}
