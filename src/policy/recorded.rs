//! Judging what a capture recorded (`assay policy replay`, SPEC §10): the same steps the proxy
//! runs on a live `tools/call` and on a `tools/list` answer, asked about a recorded call whose
//! arguments may not have been recorded.
//!
//! A recorded call goes through [`Rules::name_steps`](super::decide::Rules::name_steps) and
//! [`Rules::argument_steps`](super::decide::Rules::argument_steps), the two halves of the
//! proxy's [`Policy::decide`]; when the name steps let it through, a constraint or schema
//! applies and the arguments were not recorded whole, the call cannot be judged and the answer
//! names the rule that would need them — never a guess.

use super::Policy;
use super::decision::{ReasonCode, RecordedArguments, Rejudged, RejudgedRef};
use crate::sha256::HexDigest;

impl Policy {
    /// Judges a recorded `tools/call` of `tool` in the order of SPEC §5 (without `limits`, which
    /// count a session's calls: [`crate::policy::CallBudget`]); `listed` is the definition
    /// digest the session remembered for the tool (the decision's `tool_definition_sha256`).
    pub fn judge_recorded_call(
        &self,
        tool: &str,
        arguments: RecordedArguments<'_>,
        listed: Option<&HexDigest>,
    ) -> Rejudged {
        self.judge_recorded(tool, arguments, listed).into_owned()
    }

    /// [`Policy::judge_recorded_call`] with the verdict's texts borrowed from the policy where
    /// they can be.
    pub(crate) fn judge_recorded(
        &self,
        tool: &str,
        arguments: RecordedArguments<'_>,
        listed: Option<&HexDigest>,
    ) -> RejudgedRef<'_> {
        let allowed_by = match self.rules.name_steps(tool, listed) {
            Err(refused) => return RejudgedRef::Verdict(refused),
            Ok(allowed_by) => allowed_by,
        };
        let arguments = match arguments {
            RecordedArguments::Whole(a) => a,
            RecordedArguments::Unknown => {
                if let Some(rule) = self.rules.argument_rules(tool).first() {
                    return RejudgedRef::NeedsArguments { rule };
                }
                None
            }
        };
        RejudgedRef::Verdict(self.rules.argument_steps(tool, arguments, allowed_by))
    }

    /// The label (`allow:PATTERN`) of the first `allow` pattern that matches `tool`, if any: the
    /// rule the name step used for a call that got past it.
    pub fn allow_rule(&self, tool: &str) -> Option<&str> {
        let (label, _) = self.rules.allow.as_ref()?.first_match(tool)?;
        Some(label)
    }

    /// The labels of the argument rules (`constraints:TOOL.PARAM`, `schemas:TOOL`) that apply
    /// to calls of `tool`, in the order they are checked.
    pub fn argument_rules(&self, tool: &str) -> Vec<&str> {
        self.rules.argument_rules(tool)
    }

    /// Every rule of the policy by the label a verdict's `matched_rule` gives it, in the order
    /// of SPEC §5 and §5.2: `deny:P`, `allow:P`, `pins`, `constraints:TOOL.PARAM`,
    /// `schemas:TOOL`, `resources.deny:P`, `resources.allow:P`, `prompts.deny:P`,
    /// `prompts.allow:P`, `client_features.FEATURE`, `limits.tool_calls`,
    /// `limits.per_tool.TOOL`, `limits.repeated_call`.
    pub fn rule_labels(&self) -> Vec<String> {
        let s = self.summary();
        let mut out: Vec<String> = Vec::new();
        let mut list = |kind: &str, patterns: &[String]| {
            out.extend(patterns.iter().map(|p| format!("{kind}:{p}")));
        };
        list("deny", &s.deny);
        list("allow", s.allow.as_deref().unwrap_or_default());
        if s.pins.is_some() {
            out.push("pins".to_owned());
        }
        for c in &s.constraints {
            out.extend(
                c.params
                    .iter()
                    .map(|p| format!("constraints:{}.{}", c.tool, p.name)),
            );
        }
        out.extend(s.schemas.keys().map(|t| format!("schemas:{t}")));
        for (section, patterns) in [("resources", &s.resources), ("prompts", &s.prompts)] {
            if let Some(p) = patterns {
                out.extend(p.deny.iter().map(|x| format!("{section}.deny:{x}")));
                let allow = p.allow.as_deref().unwrap_or_default();
                out.extend(allow.iter().map(|x| format!("{section}.allow:{x}")));
            }
        }
        if let Some(f) = &s.client_features {
            out.extend(f.keys().map(|k| format!("client_features.{k}")));
        }
        if let Some(l) = &s.limits {
            if l.tool_calls.is_some() {
                out.push("limits.tool_calls".to_owned());
            }
            out.extend(l.per_tool.keys().map(|t| format!("limits.per_tool.{t}")));
            if l.repeated_call.is_some() {
                out.push("limits.repeated_call".to_owned());
            }
        }
        out
    }

    /// The narrowest `resources` patterns that allow `uri`: one literal pattern per distinct
    /// reading the judge gives it (as written and normalized, its WHATWG serialization, its
    /// percent-decoded forms), since a URI is allowed only when every reading is. Globs have no
    /// escape, so a `*` or `?` in the URI is written `?` (one character). Empty when the URI is
    /// refused whatever the patterns (a control character, `..` above the root).
    pub fn resource_literals(uri: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, reading) in super::resources::readings(uri) {
            let Ok(text) = reading else {
                return Vec::new();
            };
            let literal: String = text
                .chars()
                .map(|c| if c == '*' || c == '?' { '?' } else { c })
                .collect();
            if !out.contains(&literal) {
                out.push(literal);
            }
        }
        out
    }

    /// Why a `tools/list` answer loses the tool `name`, listed with the definition digest
    /// `digest` (SPEC §5, §5.1): `hide` (`hide_refused_tools` in effect) removes a tool refused by
    /// name (`P_TOOL_DENIED`, `P_TOOL_NOT_ALLOWED`); `pins` (pins in effect) one that is not
    /// pinned (`P_TOOL_UNPINNED`) or whose digest differs from its pin (`P_TOOL_DRIFT`). `None`:
    /// the client is shown it. The proxy passes both flags off in dry run.
    pub fn tool_listing_refusal(
        &self,
        name: &str,
        digest: &HexDigest,
        hide: bool,
        pins: bool,
    ) -> Option<ReasonCode> {
        let hidden = if hide {
            self.refusal_by_name(name)
        } else {
            None
        };
        let unpinned = match self.pins() {
            Some(p) if pins => match p.get(name) {
                None => Some(ReasonCode::P_TOOL_UNPINNED),
                Some(_) if p.matches(name, digest) => None,
                Some(_) => Some(ReasonCode::P_TOOL_DRIFT),
            },
            _ => None,
        };
        hidden.or(unpinned)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::policy::Decision;

    fn load(yaml: &str) -> Policy {
        Policy::from_bytes(yaml.as_bytes(), Path::new("p.yaml")).unwrap()
    }

    #[test]
    fn recorded_calls_are_judged_as_the_proxy_judges_them() {
        let p = load(
            "version: '1'\nallow: [read_file, echo]\ndeny: [exec]\nconstraints: [{tool: read_file, params: {path: {within: /w}}}]\nschemas: {echo: {type: object, required: [m]}}\n",
        );
        let args = [json!({"path": "/w/a"}), json!({"path": "/etc"}), json!({})];
        for tool in ["read_file", "echo", "exec", "other"] {
            for a in &args {
                let live = p.decide(tool, Some(a), None).into_owned();
                let replayed = p.judge_recorded_call(tool, RecordedArguments::Whole(Some(a)), None);
                assert_eq!(replayed, Rejudged::Verdict(live), "{tool} {a}");
            }
        }
    }

    #[test]
    fn unknown_arguments_name_the_rule_only_when_an_argument_rule_is_reached() {
        let p = load(
            "version: '1'\nallow: [read_file, echo, plain]\nconstraints: [{tool: read_file, params: {path: {within: /w}, mode: {matches: r}}}]\nschemas: {echo: {type: object}}\n",
        );
        let need = |tool: &str| p.judge_recorded_call(tool, RecordedArguments::Unknown, None);
        assert_eq!(
            need("read_file"),
            Rejudged::NeedsArguments {
                rule: "constraints:read_file.mode".into()
            }
        );
        assert_eq!(
            need("echo"),
            Rejudged::NeedsArguments {
                rule: "schemas:echo".into()
            }
        );
        let Rejudged::Verdict(v) = need("plain") else {
            panic!("no argument rule applies")
        };
        assert_eq!(v.decision, Decision::Allow);
        let Rejudged::Verdict(v) = need("shell") else {
            panic!("refused by name before any argument rule")
        };
        assert_eq!(v.reason_code, ReasonCode::P_TOOL_NOT_ALLOWED);
        assert_eq!(
            p.argument_rules("read_file"),
            ["constraints:read_file.mode", "constraints:read_file.path"]
        );
    }

    #[test]
    fn listing_refusals_follow_hide_then_pins() {
        let p = load("version: '1'\ndeny: [exec]\n");
        let d = HexDigest::of(b"x");
        assert_eq!(
            p.tool_listing_refusal("exec", &d, true, true),
            Some(ReasonCode::P_TOOL_DENIED)
        );
        assert_eq!(p.tool_listing_refusal("exec", &d, false, true), None);
        assert_eq!(p.tool_listing_refusal("echo", &d, true, true), None);
    }
}
