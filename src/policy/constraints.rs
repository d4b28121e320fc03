//! Argument constraints (SPEC §5): a regex that named string arguments must match, and/or
//! roots a path argument must lie within.
//!
//! ```yaml
//! constraints:
//!   - tool: read_file            # a glob, like allow/deny patterns
//!     params:
//!       path: { within: "/workspace" }          # or a list of roots
//!   - tool: fetch
//!     params:
//!       url: { matches: "^https://docs\\.example\\.com/" }
//! ```
//!
//! `within` is a lexical path check (see [`super::within`]); a rule with both keys needs both
//! to pass. Lenient parsers (SPEC §3 item 6): an argument key that differs from a constrained
//! parameter's name but equals it after lenient normalization (`PATH`, `paT\u0000`) fails the
//! constraint, since a server decoding case-insensitively would read it as that parameter.
//!
//! A constraint applies to every tool its `tool` glob matches. For each constrained parameter the
//! argument must be present and a string, and the Rust regex must find a match somewhere in it
//! (`Regex::is_match`: unanchored unless the pattern anchors itself with `^`/`$`). Arguments that
//! are absent or not a JSON object fail every constrained parameter. Constraints are checked in
//! policy order and, within one constraint, parameters in name order; the first failure decides.
//! Regexes are compiled once at load.

use regex::Regex;
use serde_json::Value;

use super::decision::Failure;
use super::error::{Ctx, PolicyError};
use super::glob::Glob;

struct ParamRule {
    name: String,
    regex: Option<Regex>,
    /// Normalized absolute roots (`within`).
    within: Option<Vec<String>>,
    /// `constraints:<tool>.<param>`.
    rule: String,
}

struct Constraint {
    tool: Glob,
    params: Vec<ParamRule>,
}

/// One constrained parameter, as the policy wrote it.
pub(crate) struct ParamView<'a> {
    pub(crate) name: &'a str,
    pub(crate) matches: Option<&'a str>,
    pub(crate) within: Option<&'a [String]>,
}

impl ParamRule {
    /// Why the string value `s` fails this rule, if it does.
    fn problem(&self, s: &str) -> Option<&'static str> {
        if let Some(re) = &self.regex {
            if !re.is_match(s) {
                return Some("does not match the required pattern");
            }
        }
        if let Some(roots) = &self.within {
            let inside = match super::within::resolve(s) {
                Ok(path) => roots.iter().any(|r| super::within::inside(&path, r)),
                Err(why) => return Some(why),
            };
            if !inside {
                return Some("is not within the allowed roots");
            }
        }
        None
    }
}

/// `within`: one root or a non-empty list of roots, each absolute and normalized.
fn parse_roots(ctx: &Ctx<'_>, v: &Value, key: &str) -> Result<Vec<String>, PolicyError> {
    let one = |v: &Value, key: &str| -> Result<String, PolicyError> {
        let root = ctx.string(v, key)?;
        match super::within::root_problem(root) {
            None => Ok(root.to_string()),
            Some(why) => Err(ctx.invalid(key, why)),
        }
    };
    match v {
        Value::Array(items) => {
            if items.is_empty() {
                return Err(ctx.invalid(key, "must name at least one root"));
            }
            items
                .iter()
                .enumerate()
                .map(|(i, r)| one(r, &format!("{key}[{i}]")))
                .collect()
        }
        other => Ok(vec![one(other, key)?]),
    }
}

/// The compiled `constraints` list.
#[derive(Default)]
pub(crate) struct Constraints {
    list: Vec<Constraint>,
}

impl Constraints {
    /// Parses and compiles the `constraints` value.
    pub(super) fn parse(ctx: &Ctx<'_>, value: &Value) -> Result<Constraints, PolicyError> {
        let items = ctx.array(value, "constraints", "a list of {tool, params} entries")?;
        let mut list = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let at = format!("constraints[{i}]");
            let obj = ctx.object(item, &at, "a mapping with keys tool and params")?;
            ctx.check_keys(obj, &at, &["tool", "params"])?;
            let tool = match obj.get("tool") {
                Some(t) => ctx.pattern(t, &format!("{at}.tool"))?,
                None => return Err(ctx.missing(&format!("{at}.tool"), "add the tool name or glob")),
            };
            let params_key = format!("{at}.params");
            let params_obj = match obj.get("params") {
                Some(p) => ctx.object(p, &params_key, "a mapping of argument name to {matches}")?,
                None => {
                    return Err(ctx.missing(&params_key, "add the argument rules to check"));
                }
            };
            let mut params = Vec::with_capacity(params_obj.len());
            for (name, rule) in params_obj {
                let key = format!("{params_key}.{name}");
                let rule_obj =
                    ctx.object(rule, &key, "a mapping with keys matches and/or within")?;
                ctx.check_keys(rule_obj, &key, &["matches", "within"])?;
                let m_key = format!("{key}.matches");
                let regex = match rule_obj.get("matches") {
                    Some(m) => {
                        let pattern = ctx.string(m, &m_key)?;
                        Some(Regex::new(pattern).map_err(|e| ctx.bad_regex(&m_key, &e))?)
                    }
                    None => None,
                };
                let within = match rule_obj.get("within") {
                    Some(w) => Some(parse_roots(ctx, w, &format!("{key}.within"))?),
                    None => None,
                };
                if regex.is_none() && within.is_none() {
                    return Err(ctx.missing(
                        &m_key,
                        "add a regex the argument must match (matches) or roots it must lie within (within)",
                    ));
                }
                params.push(ParamRule {
                    name: name.clone(),
                    regex,
                    within,
                    rule: format!("constraints:{tool}.{name}"),
                });
            }
            // Name order, whatever the map's iteration order: the first failure is deterministic.
            params.sort_by(|a, b| a.name.cmp(&b.name));
            list.push(Constraint {
                tool: Glob::new(tool),
                params,
            });
        }
        Ok(Constraints { list })
    }

    /// Each constraint as written: its `tool` pattern and, in name order, each parameter's
    /// name, `matches` pattern and `within` roots (for `Policy::summary`).
    pub(crate) fn rules(&self) -> impl Iterator<Item = (&str, Vec<ParamView<'_>>)> {
        self.list.iter().map(|c| {
            let params = c
                .params
                .iter()
                .map(|p| ParamView {
                    name: &p.name,
                    matches: p.regex.as_ref().map(Regex::as_str),
                    within: p.within.as_deref(),
                })
                .collect();
            (c.tool.as_str(), params)
        })
    }

    /// The `tool` globs, in policy order.
    pub(crate) fn tool_globs(&self) -> impl Iterator<Item = &Glob> {
        self.list.iter().map(|c| &c.tool)
    }

    /// The rule labels (`constraints:TOOL.PARAM`) of every constraint that applies to `tool`,
    /// in the order `check` checks them.
    pub(crate) fn rules_for(&self, tool: &str) -> Vec<&str> {
        self.list
            .iter()
            .filter(|c| c.tool.matches(tool))
            .flat_map(|c| c.params.iter().map(|p| p.rule.as_str()))
            .collect()
    }

    /// Whether any constraint applies to `tool` (only then does `check` look at arguments).
    pub(crate) fn applies_to(&self, tool: &str) -> bool {
        self.list.iter().any(|c| c.tool.matches(tool))
    }

    /// Checks every constraint that applies to `tool`; the first failure wins.
    pub(crate) fn check(&self, tool: &str, arguments: Option<&Value>) -> Result<(), Failure<'_>> {
        let args = arguments.and_then(Value::as_object);
        for c in &self.list {
            if !c.tool.matches(tool) {
                continue;
            }
            for p in &c.params {
                let Some(args) = args else {
                    let reason = if arguments.is_none() {
                        format!("arguments are absent; argument `{}` is required", p.name)
                    } else {
                        format!(
                            "arguments are not an object; argument `{}` is required",
                            p.name
                        )
                    };
                    return Err(Failure {
                        rule: &p.rule,
                        reason,
                    });
                };
                if args.keys().any(|k| crate::lenient::is_variant(k, &p.name)) {
                    return Err(Failure {
                        rule: &p.rule,
                        reason: format!(
                            "an argument key is a case, fold or NUL variant of constrained argument `{}`",
                            p.name.escape_debug()
                        ),
                    });
                }
                let problem = match args.get(&p.name) {
                    None => "is missing",
                    Some(Value::String(s)) => match p.problem(s) {
                        None => continue,
                        Some(problem) => problem,
                    },
                    Some(_) => "is not a string",
                };
                return Err(Failure {
                    rule: &p.rule,
                    reason: format!("argument `{}` {problem}", p.name.escape_debug()),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn parse(v: Value) -> Result<Constraints, PolicyError> {
        Constraints::parse(&Ctx::new(Path::new("p.yaml")), &v)
    }

    fn ok(v: Value) -> Constraints {
        match parse(v) {
            Ok(c) => c,
            Err(e) => panic!("should parse: {e}"),
        }
    }

    fn fail(c: &Constraints, tool: &str, args: Option<&Value>) -> Option<(String, String)> {
        c.check(tool, args)
            .err()
            .map(|f| (f.rule.to_owned(), f.reason))
    }

    #[test]
    fn regex_is_an_unanchored_search() {
        let c = ok(json!([{"tool": "t", "params": {"p": {"matches": "work"}}}]));
        assert!(fail(&c, "t", Some(&json!({"p": "/workspace/x"}))).is_none());
        assert!(fail(&c, "t", Some(&json!({"p": "home"}))).is_some());
        let c = ok(json!([{"tool": "t", "params": {"p": {"matches": "^/workspace/"}}}]));
        assert!(fail(&c, "t", Some(&json!({"p": "/workspace/x"}))).is_none());
        assert!(fail(&c, "t", Some(&json!({"p": "/etc/../workspace/"}))).is_some());
        let c = ok(json!([{"tool": "t", "params": {"p": {"matches": "^[a-z]+$"}}}]));
        assert!(fail(&c, "t", Some(&json!({"p": "abc"}))).is_none());
        assert!(fail(&c, "t", Some(&json!({"p": "abc\n"}))).is_some());
        assert!(fail(&c, "t", Some(&json!({"p": ""}))).is_some());
    }

    #[test]
    fn missing_and_non_string_values_fail() {
        let c = ok(json!([{"tool": "read_file", "params": {"path": {"matches": ".*"}}}]));
        let (rule, reason) = fail(&c, "read_file", Some(&json!({}))).unwrap_or_default();
        assert_eq!(rule, "constraints:read_file.path");
        assert!(reason.contains("missing"), "{reason}");
        for v in [
            json!(1),
            json!(null),
            json!(true),
            json!(["a"]),
            json!({"a": "b"}),
        ] {
            let (_, reason) = fail(&c, "read_file", Some(&json!({"path": v}))).unwrap_or_default();
            assert!(reason.contains("not a string"), "{reason}");
        }
        let (_, reason) = fail(&c, "read_file", None).unwrap_or_default();
        assert!(reason.contains("absent"), "{reason}");
        for a in [json!(null), json!([]), json!("path"), json!(3)] {
            let (rule, reason) = fail(&c, "read_file", Some(&a)).unwrap_or_default();
            assert_eq!(rule, "constraints:read_file.path");
            assert!(reason.contains("not an object"), "{reason}");
        }
        // `.*` matches the empty string: present and a string is enough.
        assert!(fail(&c, "read_file", Some(&json!({"path": ""}))).is_none());
    }

    #[test]
    fn applies_only_to_matching_tools() {
        let c = ok(json!([{"tool": "read_*", "params": {"path": {"matches": "^/w/"}}}]));
        assert!(fail(&c, "write_file", None).is_none());
        assert!(fail(&c, "read_dir", None).is_some());
        let (rule, _) = fail(&c, "read_file", Some(&json!({"path": "/x"}))).unwrap_or_default();
        assert_eq!(rule, "constraints:read_*.path");
        let globs: Vec<&str> = c.tool_globs().map(Glob::as_str).collect();
        assert_eq!(globs, ["read_*"]);
    }

    #[test]
    fn all_constraints_and_params_must_pass_first_failure_reported() {
        let c = ok(json!([
            {"tool": "t", "params": {"b": {"matches": "^b$"}, "a": {"matches": "^a$"}}},
            {"tool": "*", "params": {"c": {"matches": "^c$"}}}
        ]));
        assert!(fail(&c, "t", Some(&json!({"a": "a", "b": "b", "c": "c"}))).is_none());
        let (rule, _) = fail(&c, "t", Some(&json!({"a": "x", "b": "x"}))).unwrap_or_default();
        assert_eq!(rule, "constraints:t.a", "params checked in name order");
        let (rule, _) = fail(&c, "t", Some(&json!({"a": "a", "b": "x"}))).unwrap_or_default();
        assert_eq!(rule, "constraints:t.b");
        let (rule, _) = fail(&c, "t", Some(&json!({"a": "a", "b": "b"}))).unwrap_or_default();
        assert_eq!(rule, "constraints:*.c");
        let (rule, _) = fail(&c, "other", Some(&json!({}))).unwrap_or_default();
        assert_eq!(rule, "constraints:*.c");
    }

    #[test]
    fn reason_never_echoes_values() {
        let c = ok(json!([{"tool": "t", "params": {"p": {"matches": "^ok$"}}}]));
        let (_, reason) = fail(&c, "t", Some(&json!({"p": "SECRET-VALUE"}))).unwrap_or_default();
        assert!(!reason.contains("SECRET"), "{reason}");
        assert!(reason.contains("`p`"));
    }

    #[test]
    fn empty_params_always_pass() {
        let c = ok(json!([{"tool": "t", "params": {}}]));
        assert!(fail(&c, "t", None).is_none());
    }

    #[test]
    fn within_confines_paths() {
        let c = ok(json!([{"tool": "read_file", "params": {"path": {"within": "/workspace"}}}]));
        assert!(fail(&c, "read_file", Some(&json!({"path": "/workspace/a"}))).is_none());
        assert!(
            fail(
                &c,
                "read_file",
                Some(&json!({"path": "file:///workspace/a"}))
            )
            .is_none()
        );
        for bad in [
            json!("/workspace/../etc/passwd"),
            json!("/workspacex"),
            json!("relative"),
            json!("~"),
            json!(""),
            json!("/workspace/\u{0}"),
            json!(7),
            json!(null),
        ] {
            let (rule, _) =
                fail(&c, "read_file", Some(&json!({ "path": bad }))).unwrap_or_default();
            assert_eq!(rule, "constraints:read_file.path", "{bad}");
        }
        let c = ok(
            json!([{"tool": "t", "params": {"p": {"within": ["/a", "/b/c"], "matches": "x$"}}}]),
        );
        assert!(fail(&c, "t", Some(&json!({"p": "/b/c/d/x"}))).is_none());
        assert!(
            fail(&c, "t", Some(&json!({"p": "/b/c/d/y"}))).is_some(),
            "matches too"
        );
        assert!(fail(&c, "t", Some(&json!({"p": "/b/x"}))).is_some());
    }

    #[test]
    fn variant_keys_of_constrained_arguments_fail() {
        let c = ok(json!([{"tool": "t", "params": {"path": {"within": "/w"}}}]));
        for key in ["PATH", "Path", "path\u{0}", "pat\u{0}"] {
            let mut m = serde_json::Map::new();
            m.insert("path".into(), json!("/w/a"));
            m.insert(key.into(), json!("/etc/passwd"));
            let args = Value::Object(m);
            let r = fail(&c, "t", Some(&args));
            if key == "pat\0" {
                assert!(r.is_none(), "{key:?} is not a variant of path");
            } else {
                let (rule, reason) = r.unwrap_or_default();
                assert_eq!(rule, "constraints:t.path", "{key:?}");
                assert!(reason.contains("variant"), "{reason}");
            }
        }
        // Alone, a variant key is refused too (the server would read it as `path`).
        assert!(fail(&c, "t", Some(&json!({"PATH": "/w/a"}))).is_some());
        assert!(fail(&c, "t", Some(&json!({"PAT": "/w/a", "path": "/w/b"}))).is_none());
        assert!(fail(&c, "t", Some(&json!({"path": "/w/a", "other": 1}))).is_none());
        let c = ok(json!([{"tool": "t", "params": {"sk": {"matches": "^ok$"}}}]));
        assert!(
            fail(
                &c,
                "t",
                Some(&json!({"sk": "ok", "\u{17f}\u{212a}": "bad"}))
            )
            .is_some()
        );
    }

    #[test]
    fn load_errors_name_the_key() {
        let cases = [
            (json!({}), "constraints"),
            (json!(["x"]), "constraints[0]"),
            (json!([{"params": {}}]), "constraints[0].tool"),
            (json!([{"tool": "t"}]), "constraints[0].params"),
            (json!([{"tool": 3, "params": {}}]), "constraints[0].tool"),
            (json!([{"tool": "", "params": {}}]), "constraints[0].tool"),
            (
                json!([{"tool": "t", "params": {}, "extra": 1}]),
                "constraints[0].extra",
            ),
            (
                json!([{"tool": "t", "params": []}]),
                "constraints[0].params",
            ),
            (
                json!([{"tool": "t", "params": {"p": "^x"}}]),
                "constraints[0].params.p",
            ),
            (
                json!([{"tool": "t", "params": {"p": {}}}]),
                "constraints[0].params.p.matches",
            ),
            (
                json!([{"tool": "t", "params": {"p": {"within": "rel"}}}]),
                "constraints[0].params.p.within",
            ),
            (
                json!([{"tool": "t", "params": {"p": {"within": ["/a", "/b/../c"]}}}]),
                "constraints[0].params.p.within[1]",
            ),
            (
                json!([{"tool": "t", "params": {"p": {"within": []}}}]),
                "constraints[0].params.p.within",
            ),
            (
                json!([{"tool": "t", "params": {"p": {"within": 3}}}]),
                "constraints[0].params.p.within",
            ),
            (
                json!([{"tool": "t", "params": {"p": {"matches": "x", "regex": "y"}}}]),
                "constraints[0].params.p.regex",
            ),
            (
                json!([{"tool": "t", "params": {"p": {"matches": 5}}}]),
                "constraints[0].params.p.matches",
            ),
            (
                json!([{"tool": "t", "params": {"p": {"matches": "(unclosed"}}}]),
                "constraints[0].params.p.matches",
            ),
        ];
        for (v, key) in cases {
            match parse(v.clone()) {
                Ok(_) => panic!("{v} should fail"),
                Err(e) => {
                    assert_eq!(e.key(), Some(key), "{v}: {e}");
                    let msg = e.to_string();
                    assert!(msg.contains("p.yaml"), "{msg}");
                    assert!(!msg.contains('\n'), "{msg}");
                }
            }
        }
        let e = parse(json!([{"tool": "t", "params": {"p": {"matches": "(unclosed"}}}]));
        assert!(matches!(e, Err(PolicyError::BadRegex { .. })));
    }
}
