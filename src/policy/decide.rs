//! The decision itself: the evaluation order of SPEC §5 (the verdict types are in
//! [`super::decision`]).
//!
//! Order, first match wins: a `deny` pattern matches → [`ReasonCode::P_TOOL_DENIED`]; an
//! `allow` list exists and nothing in it matches → [`ReasonCode::P_TOOL_NOT_ALLOWED`]; with
//! `pins` (SPEC §5.1), the tool is not pinned → [`ReasonCode::P_TOOL_UNPINNED`], no listing of
//! this session holds it → [`ReasonCode::P_TOOL_UNLISTED`], its listed definition differs from
//! its pin → [`ReasonCode::P_TOOL_DRIFT`]; a constraint fails → [`ReasonCode::P_ARG_CONSTRAINT`]; the tool's schema rejects the arguments →
//! [`ReasonCode::P_ARG_SCHEMA`]; otherwise [`ReasonCode::P_POLICY_ALLOW`].
//!
//! Every `reason` text is built from the policy's own words (patterns, parameter names, schema
//! locations), never from the client's argument values, because reasons are logged and raw
//! arguments must never be (SPEC §4.1).

use std::borrow::Cow;

use serde_json::Value;

use super::constraints::Constraints;
use super::decision::{Decision, ReasonCode, Verdict, VerdictRef};
use super::glob::GlobList;
use super::schema::Schemas;
use crate::pins_file::Pins;
use crate::sha256::HexDigest;

/// An ordered pattern list plus, for each pattern, its precomputed rule label and reason, so a
/// verdict borrows them.
pub(crate) struct RuleList {
    globs: GlobList,
    labels: Vec<String>,
    reasons: Vec<String>,
}

impl RuleList {
    /// Builds the `allow` or `deny` list (`kind` is `"allow"` or `"deny"`).
    pub(crate) fn new(kind: &str, patterns: &[String]) -> RuleList {
        let prefix = match kind {
            "deny" => "tool matches deny rule `",
            _ => "tool allowed by rule `",
        };
        // Plain concatenation: a policy may hold many patterns (SPEC §5: loading costs
        // milliseconds), and most need no escaping.
        let concat = |a: &str, b: &str, c: &str| {
            let mut s = String::with_capacity(a.len() + b.len() + c.len());
            s.push_str(a);
            s.push_str(b);
            s.push_str(c);
            s
        };
        let reason = |p: &String| {
            let plain = p
                .bytes()
                .all(|b| b.is_ascii_graphic() && !matches!(b, b'\\' | b'\'' | b'"'));
            if plain {
                concat(prefix, p, "`")
            } else {
                concat(prefix, &p.escape_debug().to_string(), "`")
            }
        };
        RuleList {
            globs: GlobList::new(patterns),
            labels: patterns.iter().map(|p| concat(kind, ":", p)).collect(),
            reasons: patterns.iter().map(reason).collect(),
        }
    }

    /// The compiled globs, for `declared_tools`.
    pub(crate) fn globs(&self) -> &GlobList {
        &self.globs
    }

    /// `(label, reason)` of the first pattern matching `tool`.
    pub(crate) fn first_match(&self, tool: &str) -> Option<(&str, &str)> {
        let i = self.globs.first_match(tool)?;
        Some((self.labels.get(i)?.as_str(), self.reasons.get(i)?.as_str()))
    }
}

/// Everything `evaluate` needs, compiled at load.
pub(crate) struct Rules {
    pub(crate) deny: RuleList,
    pub(crate) allow: Option<RuleList>,
    pub(crate) constraints: Constraints,
    pub(crate) schemas: Schemas,
    pub(crate) pins: Option<Pins>,
}

fn deny<'p>(code: ReasonCode, reason: Cow<'p, str>, rule: Option<&'p str>) -> VerdictRef<'p> {
    VerdictRef {
        decision: Decision::Deny,
        reason_code: code,
        reason,
        matched_rule: rule.map(Cow::Borrowed),
    }
}

impl Rules {
    /// Whether `evaluate` looks at the arguments of a call of `tool` (a constraint or a schema
    /// applies). When not, the verdict is the same whatever the arguments are.
    pub(crate) fn reads_arguments(&self, tool: &str) -> bool {
        self.constraints.applies_to(tool) || self.schemas.applies_to(tool)
    }

    /// Evaluates a call in the order of SPEC §5; `listed` is the definition digest this
    /// session remembers for the tool (SPEC §5.1), if any.
    pub(crate) fn evaluate(
        &self,
        tool: &str,
        arguments: Option<&Value>,
        listed: Option<&HexDigest>,
    ) -> Verdict {
        self.decide(tool, arguments, listed).into_owned()
    }

    /// [`Rules::evaluate`] with the texts borrowed from the policy where they can be.
    pub(crate) fn decide(
        &self,
        tool: &str,
        arguments: Option<&Value>,
        listed: Option<&HexDigest>,
    ) -> VerdictRef<'_> {
        match self.name_steps(tool, listed) {
            Err(refused) => refused,
            Ok(allowed_by) => self.argument_steps(tool, arguments, allowed_by),
        }
    }

    /// The steps of SPEC §5 that read no argument: `deny`, `allow` and, with `pins`, the pin
    /// step. `Err` is the refusal; `Ok` carries the `allow` rule that matched (label, reason),
    /// if any, for [`Rules::argument_steps`].
    pub(crate) fn name_steps(
        &self,
        tool: &str,
        listed: Option<&HexDigest>,
    ) -> Result<AllowedBy<'_>, VerdictRef<'_>> {
        if let Some((label, reason)) = self.deny.first_match(tool) {
            return Err(deny(
                ReasonCode::P_TOOL_DENIED,
                Cow::Borrowed(reason),
                Some(label),
            ));
        }
        let allowed_by = match &self.allow {
            None => None,
            Some(list) => match list.first_match(tool) {
                Some(hit) => Some(hit),
                None => {
                    return Err(deny(
                        ReasonCode::P_TOOL_NOT_ALLOWED,
                        Cow::Borrowed("tool matches no allow rule"),
                        None,
                    ));
                }
            },
        };
        if let Some(pins) = &self.pins {
            if let Some(refused) = pin_step(pins, tool, listed) {
                return Err(refused);
            }
        }
        Ok(AllowedBy(allowed_by))
    }

    /// The steps of SPEC §5 that read the arguments (`constraints`, then `schemas`), after
    /// [`Rules::name_steps`] let the call through; the allow verdict when both pass.
    pub(crate) fn argument_steps<'p>(
        &'p self,
        tool: &str,
        arguments: Option<&Value>,
        allowed_by: AllowedBy<'p>,
    ) -> VerdictRef<'p> {
        if let Err(f) = self.constraints.check(tool, arguments) {
            return deny(
                ReasonCode::P_ARG_CONSTRAINT,
                Cow::Owned(f.reason),
                Some(f.rule),
            );
        }
        if let Err(f) = self.schemas.check(tool, arguments) {
            return deny(ReasonCode::P_ARG_SCHEMA, Cow::Owned(f.reason), Some(f.rule));
        }
        let (rule, reason) = match allowed_by.0 {
            Some((label, reason)) => (Some(Cow::Borrowed(label)), reason),
            None => (
                None,
                "no deny rule matched and the policy has no allow list",
            ),
        };
        VerdictRef {
            decision: Decision::Allow,
            reason_code: ReasonCode::P_POLICY_ALLOW,
            reason: Cow::Borrowed(reason),
            matched_rule: rule,
        }
    }

    /// The rule labels of the argument steps that apply to `tool`, in the order they are
    /// checked: each constrained parameter (`constraints:TOOL.PARAM`), then the schema
    /// (`schemas:TOOL`).
    pub(crate) fn argument_rules(&self, tool: &str) -> Vec<&str> {
        let mut rules = self.constraints.rules_for(tool);
        rules.extend(self.schemas.rule_for(tool));
        rules
    }
}

/// The `allow` rule that let a call through the name steps (its label and reason), if any: a
/// policy without an `allow` list lets every tool that is not denied through.
pub(crate) struct AllowedBy<'p>(Option<(&'p str, &'p str)>);

/// The pins step of SPEC §5.1: `None` when the tool passes it.
fn pin_step<'p>(pins: &'p Pins, tool: &str, listed: Option<&HexDigest>) -> Option<VerdictRef<'p>> {
    let Some(pin) = pins.get(tool) else {
        return Some(deny(
            ReasonCode::P_TOOL_UNPINNED,
            Cow::Borrowed("tool is not pinned: the reviewed tool definitions do not include it"),
            None,
        ));
    };
    match listed {
        None => Some(deny(
            ReasonCode::P_TOOL_UNLISTED,
            Cow::Borrowed(
                "no tools/list result of this session listed the tool: what the model was shown is unknown",
            ),
            Some("pins"),
        )),
        Some(d) if d.as_bytes() != pin.sha256.as_bytes() => Some(deny(
            ReasonCode::P_TOOL_DRIFT,
            Cow::Owned(format!(
                "the tool's definition as listed (sha256 {}…) differs from its pin (sha256 {}…)",
                &d.as_str()[..12],
                &pin.sha256()[..12]
            )),
            Some("pins"),
        )),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;
    use serde_json::json;
    use std::path::Path;

    fn policy(yaml: &str) -> Policy {
        match Policy::from_bytes(yaml.as_bytes(), Path::new("test.yaml")) {
            Ok(p) => p,
            Err(e) => panic!("policy should load: {e}"),
        }
    }

    const FULL: &str = r#"
version: "1"
allow: ["read_*", "write_file", "shell_safe", "*_ok"]
deny: ["exec", "shell*"]
constraints:
  - tool: read_file
    params:
      path: { matches: "^/workspace/" }
schemas:
  write_file: { type: object, required: [path], properties: { path: { type: string } } }
"#;

    #[test]
    fn serde_strings_match_spec() {
        assert_eq!(
            serde_json::to_string(&Decision::Allow).ok().as_deref(),
            Some("\"allow\"")
        );
        assert_eq!(
            serde_json::to_string(&Decision::Deny).ok().as_deref(),
            Some("\"deny\"")
        );
        assert_eq!(
            serde_json::to_string(&Decision::Error).ok().as_deref(),
            Some("\"error\"")
        );
        for code in [
            ReasonCode::P_POLICY_ALLOW,
            ReasonCode::P_TOOL_DENIED,
            ReasonCode::P_TOOL_NOT_ALLOWED,
            ReasonCode::P_ARG_CONSTRAINT,
            ReasonCode::P_ARG_SCHEMA,
            ReasonCode::P_MALFORMED,
            ReasonCode::P_BATCH_REFUSED,
        ] {
            let s = serde_json::to_string(&code).unwrap_or_default();
            assert_eq!(s, format!("\"{}\"", code.as_str()));
            let back: ReasonCode = serde_json::from_str(&s).unwrap_or(ReasonCode::P_MALFORMED);
            assert_eq!(back, code);
        }
        for d in [Decision::Allow, Decision::Deny, Decision::Error] {
            assert_eq!(
                serde_json::to_string(&d).unwrap_or_default(),
                format!("\"{}\"", d.as_str())
            );
        }
    }

    #[test]
    fn deny_beats_allow() {
        let p = policy(FULL);
        // `shell_safe` is allowed by name, but deny is checked first.
        let v = p.evaluate("shell_safe", None);
        assert_eq!(v.decision, Decision::Deny);
        assert_eq!(v.reason_code, ReasonCode::P_TOOL_DENIED);
        assert_eq!(v.matched_rule.as_deref(), Some("deny:shell*"));
        let v = p.evaluate("exec", Some(&json!({})));
        assert_eq!(v.matched_rule.as_deref(), Some("deny:exec"));
    }

    #[test]
    fn deny_beats_failing_arguments() {
        let p = policy(
            "version: '1'\ndeny: [read_file]\nconstraints: [{tool: read_file, params: {path: {matches: x}}}]\n",
        );
        let v = p.evaluate("read_file", None);
        assert_eq!(v.reason_code, ReasonCode::P_TOOL_DENIED);
    }

    #[test]
    fn not_allowed_has_no_rule() {
        let p = policy(FULL);
        let v = p.evaluate("delete_everything", Some(&json!({})));
        assert_eq!(v.decision, Decision::Deny);
        assert_eq!(v.reason_code, ReasonCode::P_TOOL_NOT_ALLOWED);
        assert_eq!(v.matched_rule, None);
    }

    #[test]
    fn not_allowed_beats_constraint_and_schema() {
        let p = policy(
            "version: '1'\nallow: [other]\nconstraints: [{tool: '*', params: {p: {matches: x}}}]\nschemas: {t: false}\n",
        );
        assert_eq!(
            p.evaluate("t", None).reason_code,
            ReasonCode::P_TOOL_NOT_ALLOWED
        );
    }

    #[test]
    fn constraint_beats_schema() {
        let p = policy(
            "version: '1'\nconstraints: [{tool: t, params: {p: {matches: x}}}]\nschemas: {t: false}\n",
        );
        let v = p.evaluate("t", Some(&json!({"p": "y"})));
        assert_eq!(v.reason_code, ReasonCode::P_ARG_CONSTRAINT);
        assert_eq!(v.matched_rule.as_deref(), Some("constraints:t.p"));
        let v = p.evaluate("t", Some(&json!({"p": "x"})));
        assert_eq!(v.reason_code, ReasonCode::P_ARG_SCHEMA);
        assert_eq!(v.matched_rule.as_deref(), Some("schemas:t"));
    }

    #[test]
    fn full_policy_paths() {
        let p = policy(FULL);
        let v = p.evaluate("read_file", Some(&json!({"path": "/etc/passwd"})));
        assert_eq!(v.reason_code, ReasonCode::P_ARG_CONSTRAINT);
        assert_eq!(
            v.matched_rule.as_deref(),
            Some("constraints:read_file.path")
        );
        assert!(
            !v.reason.contains("/etc/passwd"),
            "reason must not echo values"
        );

        let v = p.evaluate("read_file", Some(&json!({"path": "/workspace/a"})));
        assert_eq!(v.decision, Decision::Allow);
        assert_eq!(v.reason_code, ReasonCode::P_POLICY_ALLOW);
        assert_eq!(v.matched_rule.as_deref(), Some("allow:read_*"));

        let v = p.evaluate("write_file", Some(&json!({"path": 7})));
        assert_eq!(v.reason_code, ReasonCode::P_ARG_SCHEMA);
        assert_eq!(v.matched_rule.as_deref(), Some("schemas:write_file"));

        let v = p.evaluate("write_file", None);
        assert_eq!(
            v.reason_code,
            ReasonCode::P_ARG_SCHEMA,
            "absent arguments are {{}}"
        );

        let v = p.evaluate("write_file", Some(&json!({"path": "x"})));
        assert_eq!(v.reason_code, ReasonCode::P_POLICY_ALLOW);
        assert_eq!(v.matched_rule.as_deref(), Some("allow:write_file"));

        let v = p.evaluate("thing_ok", None);
        assert_eq!(v.matched_rule.as_deref(), Some("allow:*_ok"));
    }

    #[test]
    fn no_allow_list_allows_everything_not_denied() {
        let p = policy("version: '1'\ndeny: [exec]\n");
        let v = p.evaluate("anything", None);
        assert_eq!(v.decision, Decision::Allow);
        assert_eq!(v.reason_code, ReasonCode::P_POLICY_ALLOW);
        assert_eq!(v.matched_rule, None);
        assert!(!v.reason.is_empty());
        assert_eq!(
            p.evaluate("exec", None).reason_code,
            ReasonCode::P_TOOL_DENIED
        );
    }

    #[test]
    fn empty_allow_list_allows_nothing() {
        let p = policy("version: '1'\nallow: []\n");
        assert_eq!(
            p.evaluate("x", None).reason_code,
            ReasonCode::P_TOOL_NOT_ALLOWED
        );
    }

    #[test]
    fn allow_rule_is_first_in_policy_order() {
        let p = policy("version: '1'\nallow: ['*', read_file]\n");
        let v = p.evaluate("read_file", None);
        assert_eq!(v.matched_rule.as_deref(), Some("allow:*"));
    }

    #[test]
    fn tools_form_behaves_like_top_level_form() {
        let a = policy("version: '1'\nallow: ['*']\ndeny: [exec]\n");
        let b = policy("version: '1'\ntools: {allow: ['*'], deny: [exec]}\n");
        for tool in ["exec", "read"] {
            assert_eq!(a.evaluate(tool, None), b.evaluate(tool, None));
        }
        assert_eq!(
            b.evaluate("exec", None).matched_rule.as_deref(),
            Some("deny:exec")
        );
        assert_eq!(
            b.evaluate("read", None).matched_rule.as_deref(),
            Some("allow:*")
        );
    }

    #[test]
    fn evaluate_never_produces_proxy_only_codes() {
        let p = policy(FULL);
        let args = [
            None,
            Some(json!(null)),
            Some(json!([])),
            Some(json!({"path": "/workspace/x"})),
        ];
        for tool in [
            "",
            "exec",
            "read_file",
            "write_file",
            "zzz",
            "shell",
            "a_ok",
        ] {
            for a in &args {
                let v = p.evaluate(tool, a.as_ref());
                assert_ne!(v.decision, Decision::Error);
                assert!(!matches!(
                    v.reason_code,
                    ReasonCode::P_MALFORMED | ReasonCode::P_BATCH_REFUSED
                ));
                assert_eq!(
                    v.decision == Decision::Allow,
                    v.reason_code == ReasonCode::P_POLICY_ALLOW
                );
            }
        }
    }
}
