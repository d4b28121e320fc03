//! The `prompts` section (SPEC §5.2): which prompts `prompts/get` may fetch, by
//! `params.name`, and which entries `prompts/list` keeps under `hide_refused_tools`.
//!
//! ```yaml
//! prompts:
//!   allow: ["*"]
//!   deny: ["debug_*"]
//! ```
//!
//! Patterns are the tool-name globs ([`super::glob`]: `*`, `?`, whole-name match). Order: a
//! `deny` pattern matches → [`ReasonCode::P_PROMPT_DENIED`]; an `allow` list exists and no
//! pattern matches → [`ReasonCode::P_PROMPT_NOT_ALLOWED`]; otherwise
//! [`ReasonCode::P_POLICY_ALLOW`]. A `prompts/get` without a string `params.name` is an `error`
//! decision ([`ReasonCode::P_MALFORMED`]).

use serde_json::Value;

use super::decision::{Decision, ReasonCode, Verdict};
use super::error::{Ctx, PolicyError};
use super::glob::GlobList;

const KEYS: &[&str] = &["allow", "deny"];

/// One pattern list with its rule labels (`prompts.allow:…`).
struct List {
    globs: GlobList,
    labels: Vec<String>,
}

impl List {
    fn new(key: &str, patterns: &[String]) -> List {
        List {
            globs: GlobList::new(patterns),
            labels: patterns.iter().map(|p| format!("{key}:{p}")).collect(),
        }
    }

    /// The pattern and label of the first pattern matching `name`.
    fn first_match(&self, name: &str) -> Option<(&str, &str)> {
        let i = self.globs.first_match(name)?;
        Some((self.globs.globs().get(i)?.as_str(), self.labels.get(i)?))
    }

    fn written(&self) -> Vec<String> {
        self.globs
            .globs()
            .iter()
            .map(|g| g.as_str().to_owned())
            .collect()
    }
}

/// The compiled `prompts` section.
pub(crate) struct Prompts {
    allow: Option<List>,
    deny: List,
}

impl Prompts {
    /// Compiles the section (`v` is the value of `prompts`).
    pub(crate) fn parse(ctx: &Ctx<'_>, v: &Value) -> Result<Prompts, PolicyError> {
        let obj = ctx.object(v, "prompts", "a mapping with keys allow and deny")?;
        ctx.check_keys(obj, "prompts", KEYS)?;
        let allow = match obj.get("allow") {
            Some(v) => Some(List::new(
                "prompts.allow",
                &ctx.pattern_list(v, "prompts.allow")?,
            )),
            None => None,
        };
        let deny = match obj.get("deny") {
            Some(v) => List::new("prompts.deny", &ctx.pattern_list(v, "prompts.deny")?),
            None => List::new("prompts.deny", &[]),
        };
        Ok(Prompts { allow, deny })
    }

    /// The patterns as written: `(allow, deny)`, `allow` `None` when absent.
    pub(crate) fn patterns(&self) -> (Option<Vec<String>>, Vec<String>) {
        (self.allow.as_ref().map(List::written), self.deny.written())
    }

    /// Judges a `prompts/get` of `name` (SPEC §5.2).
    pub(crate) fn evaluate(&self, name: Option<&str>) -> Verdict {
        let verdict = |decision, reason_code, reason: String, rule: Option<&str>| Verdict {
            decision,
            reason_code,
            reason,
            matched_rule: rule.map(str::to_owned),
        };
        let Some(name) = name else {
            return verdict(
                Decision::Error,
                ReasonCode::P_MALFORMED,
                "the request has no string params.name".to_owned(),
                None,
            );
        };
        if let Some((pattern, label)) = self.deny.first_match(name) {
            return verdict(
                Decision::Deny,
                ReasonCode::P_PROMPT_DENIED,
                format!("prompt matches deny rule `{}`", pattern.escape_debug()),
                Some(label),
            );
        }
        match &self.allow {
            None => verdict(
                Decision::Allow,
                ReasonCode::P_POLICY_ALLOW,
                "no prompts.deny rule matched and prompts has no allow list".to_owned(),
                None,
            ),
            Some(allow) => match allow.first_match(name) {
                Some((pattern, label)) => verdict(
                    Decision::Allow,
                    ReasonCode::P_POLICY_ALLOW,
                    format!("prompt allowed by rule `{}`", pattern.escape_debug()),
                    Some(label),
                ),
                None => verdict(
                    Decision::Deny,
                    ReasonCode::P_PROMPT_NOT_ALLOWED,
                    "prompt matches no prompts.allow rule".to_owned(),
                    None,
                ),
            },
        }
    }

    /// The reason code when every `prompts/get` of `name` is refused, else `None`.
    pub(crate) fn refuses(&self, name: &str) -> Option<ReasonCode> {
        if self.deny.first_match(name).is_some() {
            return Some(ReasonCode::P_PROMPT_DENIED);
        }
        match &self.allow {
            Some(allow) if allow.first_match(name).is_none() => {
                Some(ReasonCode::P_PROMPT_NOT_ALLOWED)
            }
            _ => None,
        }
    }
}
