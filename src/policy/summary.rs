//! What a loaded policy allows, denies and constrains, as data ([`PolicySummary`]): what
//! `assay policy check` prints (SPEC §10), and what the C and Python surfaces can return as JSON.
//! The command line renders it; the library builds it from the compiled rules, so the summary is
//! exactly what `evaluate` enforces.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::decide::RuleList;
use super::{ClientFeature, Policy};

/// The `schema` of a serialized [`PolicySummary`].
pub const POLICY_SUMMARY_SCHEMA: &str = "assay.policy.summary.v1";

/// A loaded policy's rules, as the policy wrote them and in the order they are applied
/// (SPEC §5): `deny`, then `allow`, then `pins`, then `constraints`, then `schemas`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PolicySummary {
    /// Always [`POLICY_SUMMARY_SCHEMA`].
    pub schema: &'static str,
    /// The policy's name (its `name`, else the file stem).
    pub name: String,
    /// SHA-256 of the file's bytes, lowercase hex (`policy_sha256`).
    pub sha256: String,
    /// Tool-name patterns that refuse a call (`P_TOOL_DENIED`), in policy order.
    pub deny: Vec<String>,
    /// Tool-name patterns a call must match (`P_TOOL_NOT_ALLOWED` otherwise), in policy order;
    /// `None` when the policy has no allow list (every tool not denied passes this step), an
    /// empty list when it allows nothing.
    pub allow: Option<Vec<String>>,
    /// Argument rules (`P_ARG_CONSTRAINT`), in policy order.
    pub constraints: Vec<ConstraintSummary>,
    /// Tools whose arguments must match a JSON Schema (`P_ARG_SCHEMA`), by name, with the schema
    /// as written.
    pub schemas: BTreeMap<String, Value>,
    /// Whether `tools/list` results omit the tools refused by name.
    pub hide_refused_tools: bool,
    /// The pins the policy names (SPEC §5.1), or `None` without `pins`.
    pub pins: Option<PinsSummary>,
    /// Literal tool names the policy names anywhere (coverage's `declared_tools`).
    pub declared_tools: Vec<String>,
    /// The SPEC §5.2 sections present, in order (`resources`, `prompts`, `client_features`,
    /// `limits`): the session context's `governed`.
    pub governed: Vec<&'static str>,
    /// `resources` (URI patterns for `resources/read` and `resources/subscribe`), or `None`:
    /// not governed.
    pub resources: Option<PatternsSummary>,
    /// `prompts` (name patterns for `prompts/get`), or `None`: not governed.
    pub prompts: Option<PatternsSummary>,
    /// `client_features`: each feature the section names, with `allow` or `deny`; `None`
    /// without the section. A feature it does not name is not governed.
    pub client_features: Option<BTreeMap<String, String>>,
    /// `limits`, or `None`.
    pub limits: Option<LimitsSummary>,
    /// Whether `tools/call` decisions carry the redacted, bounded arguments.
    pub record_arguments: bool,
    /// The `redact` key globs, in policy order (no effect without `record_arguments`).
    pub redact: Vec<String>,
}

/// The `allow` and `deny` patterns of `resources` or `prompts`, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PatternsSummary {
    /// The patterns a target must match, or `None` without an allow list.
    pub allow: Option<Vec<String>>,
    /// The patterns that refuse a target.
    pub deny: Vec<String>,
}

/// The per-session limits of `limits`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LimitsSummary {
    /// Allowed tool calls per session, if limited.
    pub tool_calls: Option<u64>,
    /// Allowed calls per session of each named tool.
    pub per_tool: BTreeMap<String, u64>,
    /// How many times a session may make the same call, if limited.
    pub repeated_call: Option<u64>,
}

/// The pins a policy names: the step after `allow` (`P_TOOL_UNPINNED`, `P_TOOL_DRIFT`,
/// `P_TOOL_UNLISTED`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PinsSummary {
    /// The pins file, as resolved (relative to the policy file).
    pub path: String,
    /// SHA-256 of the pins file's bytes (`pins_sha256` in the session context).
    pub sha256: String,
    /// The pinned tools and their definition digests, by name.
    pub tools: BTreeMap<String, String>,
}

/// One entry of `constraints`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ConstraintSummary {
    /// The tool-name pattern it applies to.
    pub tool: String,
    /// Its parameters, in name order (the order they are checked).
    pub params: Vec<ParamSummary>,
}

/// One constrained argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ParamSummary {
    /// The argument name.
    pub name: String,
    /// The regex the string value must match (a search), if any.
    pub matches: Option<String>,
    /// The roots the path must lie within, if any.
    pub within: Option<Vec<String>>,
}

impl Policy {
    /// What this policy allows, denies and constrains (SPEC §10 `assay policy check`).
    pub fn summary(&self) -> PolicySummary {
        let globs = |list: &RuleList| {
            list.globs()
                .globs()
                .iter()
                .map(|g| g.as_str().to_owned())
                .collect::<Vec<_>>()
        };
        PolicySummary {
            schema: POLICY_SUMMARY_SCHEMA,
            name: self.name.clone(),
            sha256: self.sha256().to_owned(),
            deny: globs(&self.rules.deny),
            allow: self.rules.allow.as_ref().map(globs),
            constraints: self
                .rules
                .constraints
                .rules()
                .map(|(tool, params)| ConstraintSummary {
                    tool: tool.to_owned(),
                    params: params
                        .into_iter()
                        .map(|p| ParamSummary {
                            name: p.name.to_owned(),
                            matches: p.matches.map(str::to_owned),
                            within: p.within.map(<[String]>::to_vec),
                        })
                        .collect(),
                })
                .collect(),
            schemas: self
                .rules
                .schemas
                .sources()
                .map(|(t, s)| (t.to_owned(), s.clone()))
                .collect(),
            hide_refused_tools: self.hide_refused_tools,
            pins: self.pins().map(|p| PinsSummary {
                path: p.path().display().to_string(),
                sha256: p.sha256().to_owned(),
                tools: p
                    .iter()
                    .map(|(name, pin)| (name.to_owned(), pin.sha256().to_owned()))
                    .collect(),
            }),
            declared_tools: self.declared_tools(),
            governed: self.governed(),
            resources: self.sections.resources.as_ref().map(|r| {
                let (allow, deny) = r.patterns();
                PatternsSummary { allow, deny }
            }),
            prompts: self.sections.prompts.as_ref().map(|p| {
                let (allow, deny) = p.patterns();
                PatternsSummary { allow, deny }
            }),
            client_features: self.sections.client_features.as_ref().map(|_| {
                ClientFeature::ALL
                    .iter()
                    .filter_map(|&f| {
                        let rule = self.client_feature_rule(f)?;
                        Some((
                            f.as_str().to_owned(),
                            if rule { "allow" } else { "deny" }.to_owned(),
                        ))
                    })
                    .collect()
            }),
            limits: self.limits().map(|l| LimitsSummary {
                tool_calls: l.tool_calls(),
                per_tool: l.per_tool().clone(),
                repeated_call: l.repeated_call(),
            }),
            record_arguments: self.record_arguments(),
            redact: self.redact_patterns().to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn the_summary_is_the_rules_as_written() {
        let p = Policy::from_bytes(
            br#"
version: "1"
name: team
tools: {allow: [read_file, "list_*"], deny: [exec]}
constraints:
  - tool: read_file
    params:
      path: {within: ["/w", "/v"]}
      flag: {matches: "^on$", within: /x}
schemas:
  write_file: {type: object, required: [path]}
hide_refused_tools: true
"#,
            Path::new("t.yaml"),
        );
        let s = match p {
            Ok(p) => p.summary(),
            Err(e) => panic!("{e}"),
        };
        let v = serde_json::to_value(&s).unwrap_or_default();
        assert_eq!(
            v,
            json!({
                "schema": "assay.policy.summary.v1",
                "name": "team",
                "sha256": s.sha256,
                "deny": ["exec"],
                "allow": ["read_file", "list_*"],
                "constraints": [{"tool": "read_file", "params": [
                    {"name": "flag", "matches": "^on$", "within": ["/x"]},
                    {"name": "path", "matches": null, "within": ["/w", "/v"]}
                ]}],
                "schemas": {"write_file": {"type": "object", "required": ["path"]}},
                "pins": null,
                "hide_refused_tools": true,
                "declared_tools": ["exec", "read_file", "write_file"],
                "governed": [],
                "resources": null,
                "prompts": null,
                "client_features": null,
                "limits": null,
                "record_arguments": false,
                "redact": []
            })
        );
        let empty = Policy::from_bytes(b"version: '1'\n", Path::new("e.yaml"))
            .map(|p| p.summary())
            .ok();
        assert_eq!(empty.as_ref().map(|s| s.allow.clone()), Some(None));
        let none = Policy::from_bytes(b"version: '1'\nallow: []\n", Path::new("e.yaml"))
            .map(|p| p.summary())
            .ok();
        assert_eq!(none.map(|s| s.allow), Some(Some(vec![])));
    }
}
