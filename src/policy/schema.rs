//! Per-tool JSON Schemas for `params.arguments` (SPEC §5).
//!
//! ```yaml
//! schemas:
//!   write_file: { type: object, required: [path], properties: { path: { type: string } } }
//! ```
//!
//! - Keys are literal tool names: `*` and `?` are refused at load, so nobody writes `write_*`
//!   expecting a glob and gets a schema that never applies.
//! - Schemas are compiled once at load as JSON Schema draft 2020-12, whatever `$schema` says.
//!   The validator is built without remote or file `$ref` resolution (jsonschema's default
//!   features are off), so a schema that refers outside itself does not compile: a load error.
//! - `format` is *asserted*, not just annotated, and an unknown format name is a load error: a
//!   security policy that writes `format: uri` means it (fail closed).
//! - Absent `arguments` are validated as the empty object `{}`; arguments that are present but
//!   not an object are validated as they are (so `type: object` rejects them).
//! - `pattern`/`patternProperties` use the Rust `regex` engine (linear time, like constraints),
//!   not jsonschema's default backtracking engine: evaluation is on the proxy's hot path and the
//!   arguments are hostile. Look-around and backreferences therefore do not compile (load error).
//! - The reason names the failing schema location (from the policy), never the instance values.

use std::collections::HashMap;

use jsonschema::Validator;
use serde_json::{Map, Value};

use super::decision::Failure;
use super::error::{Ctx, PolicyError};

struct ToolSchema {
    validator: Validator,
    /// The schema as the policy wrote it (for `Policy::summary`).
    source: Value,
    /// Every property name the schema names (`properties` keys and `required` entries, at any
    /// depth): an argument key that is a lenient variant of one of them is refused.
    names: Vec<String>,
    /// `schemas:<tool>`.
    rule: String,
}

/// The compiled `schemas` map.
pub(crate) struct Schemas {
    map: HashMap<String, ToolSchema>,
    /// What absent arguments are validated as.
    empty: Value,
}

impl Default for Schemas {
    fn default() -> Self {
        Schemas {
            map: HashMap::new(),
            empty: Value::Object(Map::new()),
        }
    }
}

/// The property names a schema names anywhere: keys of `properties` objects and strings of
/// `required` arrays.
fn property_names(schema: &Value) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut stack = vec![schema];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                if let Some(Value::Object(props)) = m.get("properties") {
                    names.extend(props.keys().cloned());
                }
                if let Some(Value::Array(req)) = m.get("required") {
                    names.extend(req.iter().filter_map(Value::as_str).map(str::to_owned));
                }
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
    names.sort();
    names.dedup();
    names
}

/// The schema property name that some key of an object anywhere in `instance` is a lenient
/// variant of (SPEC §3 item 6), if any. A key equal to a name is not a variant.
fn variant_key<'n>(instance: &Value, names: &'n [String]) -> Option<&'n str> {
    if names.is_empty() {
        return None;
    }
    let mut stack = vec![instance];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    if names.binary_search(k).is_err() {
                        if let Some(n) = names.iter().find(|n| crate::lenient::same(k, n)) {
                            return Some(n);
                        }
                    }
                    stack.push(child);
                }
            }
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
    None
}

/// Compiles one schema with the policy's fixed options.
fn compile(schema: &Value) -> Result<Validator, String> {
    jsonschema::draft202012::options()
        // The `regex` engine runs in linear time; the default (fancy-regex) backtracks, and
        // `pattern` runs on hostile arguments on the hot path.
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        .build(schema)
        .map_err(|e| e.to_string())
}

impl Schemas {
    /// Parses and compiles the `schemas` value.
    pub(super) fn parse(ctx: &Ctx<'_>, value: &Value) -> Result<Schemas, PolicyError> {
        let obj = ctx.object(value, "schemas", "a mapping of tool name to JSON Schema")?;
        let mut out = Schemas::default();
        // Every schema is checked (keywords, references, size) before any is compiled.
        let mut budget = super::vocabulary::Budget::default();
        for (tool, schema) in obj {
            let key = format!("schemas.{tool}");
            if tool.is_empty() {
                return Err(ctx.invalid(&key, "is an empty tool name; name the tool"));
            }
            if tool.contains(['*', '?']) {
                return Err(ctx.invalid(
                    &key,
                    "is not a literal tool name; schemas are keyed by exact tool name (no * or ?)",
                ));
            }
            super::vocabulary::check(ctx, tool, schema, &mut budget)?;
        }
        for (tool, schema) in obj {
            let key = format!("schemas.{tool}");
            let validator = compile(schema).map_err(|e| ctx.bad_schema(&key, &e))?;
            out.map.insert(
                tool.clone(),
                ToolSchema {
                    validator,
                    source: schema.clone(),
                    names: property_names(schema),
                    rule: format!("schemas:{tool}"),
                },
            );
        }
        Ok(out)
    }

    /// The tool names that have a schema (unordered).
    pub(crate) fn tools(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// Each tool's schema as written (unordered).
    pub(crate) fn sources(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.map.iter().map(|(t, s)| (t.as_str(), &s.source))
    }

    /// The rule label (`schemas:TOOL`) of `tool`'s schema, if it has one.
    pub(crate) fn rule_for(&self, tool: &str) -> Option<&str> {
        self.map.get(tool).map(|s| s.rule.as_str())
    }

    /// Whether `tool` has a schema.
    pub(crate) fn applies_to(&self, tool: &str) -> bool {
        self.map.contains_key(tool)
    }

    /// Validates `arguments` (absent → `{}`) against `tool`'s schema, if it has one.
    pub(crate) fn check(&self, tool: &str, arguments: Option<&Value>) -> Result<(), Failure<'_>> {
        let Some(s) = self.map.get(tool) else {
            return Ok(());
        };
        let instance = arguments.unwrap_or(&self.empty);
        if let Some(name) = variant_key(instance, &s.names) {
            return Err(Failure {
                rule: &s.rule,
                reason: format!(
                    "an argument key is a case, fold or NUL variant of schema property `{}`",
                    name.escape_debug()
                ),
            });
        }
        match s.validator.validate(instance) {
            Ok(()) => Ok(()),
            Err(e) => {
                let at = e.schema_path().as_str();
                let at = if at.is_empty() { "/" } else { at };
                // A missing required property is named: the name comes from the policy's
                // `required` list, never from the arguments.
                let missing = match e.kind() {
                    jsonschema::error::ValidationErrorKind::Required { property } => property
                        .as_str()
                        .map(|p| format!(": missing required property `{}`", p.escape_debug()))
                        .unwrap_or_default(),
                    _ => String::new(),
                };
                Err(Failure {
                    rule: &s.rule,
                    reason: format!(
                        "arguments do not match the tool's schema (schema location {}{missing})",
                        at.escape_debug()
                    ),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn parse(v: Value) -> Result<Schemas, PolicyError> {
        Schemas::parse(&Ctx::new(Path::new("p.json")), &v)
    }

    fn ok(v: Value) -> Schemas {
        match parse(v) {
            Ok(s) => s,
            Err(e) => panic!("should compile: {e}"),
        }
    }

    fn reason(s: &Schemas, tool: &str, args: Option<&Value>) -> Option<String> {
        s.check(tool, args).err().map(|f| {
            assert_eq!(f.rule, format!("schemas:{tool}"));
            f.reason
        })
    }

    /// SPEC §3 item 6: a key that is a lenient variant of a property the schema names is
    /// refused, at any depth of the arguments; the exact name is not.
    #[test]
    fn variant_keys_of_schema_properties_fail() {
        let s = ok(json!({"t": {
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 4},
                           "opts": {"type": "object", "properties": {"mode": {"type": "string"}, "kind": {}}}},
            "required": ["text"]
        }}));
        assert_eq!(reason(&s, "t", Some(&json!({"text": "ok"}))), None);
        for args in [
            json!({"text": "ok", "TEXT": "far too long"}),
            json!({"text": "ok", "Text": 1}),
            json!({"text": "ok", "text\u{0}": "x"}),
            json!({"text": "ok", "opts": {"MODE": "x"}}),
            json!({"text": "ok", "opts": {"mode": "a", "\u{212a}ind": 1}}),
            json!({"TEXT": "ok"}),
        ] {
            let r = reason(&s, "t", Some(&args)).unwrap_or_default();
            assert!(r.contains("variant"), "{args}: {r}");
            assert!(!r.contains("far too long"), "{r}");
        }
        // Keys unrelated to the schema's names pass (additionalProperties is not false here).
        assert_eq!(
            reason(&s, "t", Some(&json!({"text": "ok", "other": 1}))),
            None
        );
        assert_eq!(
            reason(&s, "t", Some(&json!({"text": "ok", "mod": 1}))),
            None
        );
    }

    #[test]
    fn validates_arguments() {
        let s = ok(json!({"write_file": {
            "type": "object", "required": ["path"],
            "properties": {"path": {"type": "string"}},
            "additionalProperties": false
        }}));
        assert!(reason(&s, "write_file", Some(&json!({"path": "a"}))).is_none());
        let r = reason(&s, "write_file", Some(&json!({"path": 1}))).unwrap_or_default();
        assert!(r.contains("/properties/path/type"), "{r}");
        let r = reason(&s, "write_file", Some(&json!({"path": "a", "SECRET": "v"})));
        let r = r.unwrap_or_default();
        assert!(
            !r.contains("SECRET"),
            "instance keys and values are not echoed: {r}"
        );
        assert!(reason(&s, "write_file", Some(&json!([]))).is_some());
        assert!(reason(&s, "write_file", Some(&json!(null))).is_some());
        // Other tools are unaffected.
        assert!(reason(&s, "read_file", Some(&json!(5))).is_none());
        assert!(reason(&s, "write_filex", None).is_none());
    }

    #[test]
    fn absent_arguments_are_the_empty_object() {
        let s = ok(json!({"t": {"type": "object", "required": ["x"]}, "u": {"type": "object"}}));
        let r = reason(&s, "t", None).unwrap_or_default();
        assert!(r.contains("/required"), "{r}");
        assert!(r.contains("missing required property `x`"), "{r}");
        assert!(reason(&s, "u", None).is_none());
    }

    #[test]
    fn boolean_schemas() {
        let s = ok(json!({"never": false, "always": true}));
        assert!(reason(&s, "never", None).is_some());
        assert!(reason(&s, "always", Some(&json!(1))).is_none());
    }

    #[test]
    fn draft_2020_12_keywords_and_formats_apply() {
        let s = ok(json!({
            "t": {"type": "array", "prefixItems": [{"type": "string"}], "items": false},
            "f": {"type": "object", "properties": {"e": {"type": "string", "format": "email"}}},
            "d": {"$schema": "http://json-schema.org/draft-07/schema#",
                  "type": "array", "prefixItems": [{"type": "string"}]}
        }));
        assert!(reason(&s, "t", Some(&json!(["a"]))).is_none());
        assert!(reason(&s, "t", Some(&json!(["a", "b"]))).is_some());
        assert!(reason(&s, "t", Some(&json!([1]))).is_some());
        assert!(reason(&s, "f", Some(&json!({"e": "a@b.example"}))).is_none());
        assert!(reason(&s, "f", Some(&json!({"e": "not an email"}))).is_some());
        // Draft 2020-12 is forced: prefixItems applies even under a draft-07 `$schema`.
        assert!(reason(&s, "d", Some(&json!([1]))).is_some());
    }

    #[test]
    fn local_refs_work_remote_refs_do_not_compile() {
        let s = ok(json!({"t": {
            "$defs": {"p": {"type": "string"}},
            "type": "object", "properties": {"path": {"$ref": "#/$defs/p"}}
        }}));
        assert!(reason(&s, "t", Some(&json!({"path": 1}))).is_some());
        assert!(reason(&s, "t", Some(&json!({"path": "x"}))).is_none());
        for r in [
            "https://example.com/schema.json",
            "file:///etc/passwd",
            "other.json",
        ] {
            let e = parse(json!({"t": {"$ref": r}}));
            assert!(
                matches!(
                    e,
                    Err(PolicyError::BadSchema { .. } | PolicyError::BadSchemaReference { .. })
                ),
                "{r}: {:?}",
                e.err()
            );
        }
    }

    #[test]
    fn load_errors() {
        let cases = [
            (json!([]), "schemas"),
            (json!({"t": {"type": 5}}), "schemas.t"),
            (json!({"t": {"type": "strnig"}}), "schemas.t"),
            (json!({"t": {"pattern": "(unclosed"}}), "schemas.t"),
            (json!({"t": {"format": "no-such-format"}}), "schemas.t"),
            (json!({"t": 3}), "schemas.t"),
            (json!({"write_*": {}}), "schemas.write_*"),
            (json!({"t?": {}}), "schemas.t?"),
            (json!({"": {}}), "schemas."),
        ];
        for (v, key) in cases {
            match parse(v.clone()) {
                Ok(_) => panic!("{v} should fail"),
                Err(e) => {
                    assert_eq!(e.key(), Some(key), "{v}: {e}");
                    let msg = e.to_string();
                    assert!(msg.contains("p.json") && !msg.contains('\n'), "{msg}");
                }
            }
        }
        assert!(matches!(
            parse(json!({"t": {"type": 5}})),
            Err(PolicyError::BadSchema { .. })
        ));
    }

    #[test]
    fn patterns_use_the_linear_time_engine() {
        let s = ok(json!({"t": {"type": "object", "properties": {"p": {"pattern": "^(a+)+$"}}}}));
        let hostile = format!("{}!", "a".repeat(50_000));
        let start = std::time::Instant::now();
        assert!(reason(&s, "t", Some(&json!({"p": hostile}))).is_some());
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        assert!(reason(&s, "t", Some(&json!({"p": "aaa"}))).is_none());
        for p in ["(?=x)", "(?<!x)y", "(a)\\1"] {
            let e = parse(json!({"t": {"pattern": p}}));
            assert!(matches!(e, Err(PolicyError::BadSchema { .. })), "{p}");
        }
    }

    #[test]
    fn tools_lists_keys() {
        let s = ok(json!({"a": {}, "b": {}}));
        let mut t: Vec<&str> = s.tools().collect();
        t.sort_unstable();
        assert_eq!(t, ["a", "b"]);
    }
}
