//! The SPEC §5.2 questions on [`Policy`]: what the policy governs beyond `tools/call`
//! (`resources`, `prompts`, `client_features`, `limits`, `record_arguments`, `redact`).
//!
//! Each section is optional; without it every question about its method answers `None` ("not
//! governed": forwarded as before, no event), so a policy written before these sections existed
//! means exactly what it meant.

use serde_json::Value;

use super::Policy;
use super::client_features::ClientFeature;
use super::decision::{ReasonCode, Verdict};
use super::limits::Limits;

impl Policy {
    /// The SPEC §5.2 sections present, in this order: `"resources"`, `"prompts"`,
    /// `"client_features"`, `"limits"`, `"results"` (the session context's `governed`). Empty for a policy
    /// without them.
    pub fn governed(&self) -> Vec<&'static str> {
        let s = &self.sections;
        [
            (s.resources.is_some(), "resources"),
            (s.prompts.is_some(), "prompts"),
            (s.client_features.is_some(), "client_features"),
            (s.limits.is_some(), "limits"),
            (s.results.is_some(), "results"),
        ]
        .into_iter()
        .filter_map(|(present, name)| present.then_some(name))
        .collect()
    }

    /// The `results` section (SPEC §5.3), if any: how answers to governed requests are judged.
    pub fn results(&self) -> Option<&super::results::Results> {
        self.sections.results.as_ref()
    }

    /// `record_arguments` (`false` when absent): whether `tools/call` decisions carry the
    /// redacted, bounded arguments of [`Policy::recorded_arguments`].
    pub fn record_arguments(&self) -> bool {
        self.sections.arguments.record()
    }

    /// `record_definitions` (`false` when absent): whether a capture keeps the canonical tool
    /// definitions its session's listings showed (`tool-definitions.ndjson`), so `policy
    /// suggest` can write the pins the captures agree on.
    pub fn record_definitions(&self) -> bool {
        self.sections.record_definitions
    }

    /// The `redact` key globs as written (empty when absent).
    pub fn redact_patterns(&self) -> &[String] {
        self.sections.arguments.patterns()
    }

    /// Judges a `resources/read` or `resources/subscribe` by its `params.uri` (`None` when the
    /// request has no string `params.uri`). `None` when the policy has no `resources` section
    /// (not governed).
    ///
    /// The URI is judged in every reading a server may give it: as written, as the WHATWG URL
    /// parser serializes it (what the TypeScript SDK looks resources up by), percent-decoded
    /// once, and the two combined (`docs/decisions.md`, "Every reading of a resource URI").
    ///
    /// No URI → decision `error`, [`ReasonCode::P_MALFORMED`]. A URI that cannot be read as
    /// written (no scheme; a control character raw or percent-encoded; for `file:`, anything
    /// `within` refuses, `..` above the root included) → `deny`,
    /// [`ReasonCode::P_RESOURCE_NOT_ALLOWED`], with a reason naming the problem. Then a `deny`
    /// pattern matches some reading → [`ReasonCode::P_RESOURCE_DENIED`] (`matched_rule`
    /// `resources.deny:PATTERN`); some reading is unreadable (decoded: not UTF-8 or a control
    /// character), or an `allow` list exists and no pattern matches some reading →
    /// [`ReasonCode::P_RESOURCE_NOT_ALLOWED`]; otherwise allow, [`ReasonCode::P_POLICY_ALLOW`]
    /// (`matched_rule` `resources.allow:PATTERN`, or `None` without an allow list).
    pub fn evaluate_resource(&self, uri: Option<&str>) -> Option<Verdict> {
        Some(self.sections.resources.as_ref()?.evaluate(uri))
    }

    /// Judges a `prompts/get` by its `params.name` (`None` when the request has no string
    /// `params.name`): the shape of [`Policy::evaluate_resource`], with the tool-name globs and
    /// [`ReasonCode::P_PROMPT_DENIED`] / [`ReasonCode::P_PROMPT_NOT_ALLOWED`]. `None` when the
    /// policy has no `prompts` section.
    pub fn evaluate_prompt(&self, name: Option<&str>) -> Option<Verdict> {
        Some(self.sections.prompts.as_ref()?.evaluate(name))
    }

    /// Judges what the server asks of the client. `None` when the policy has no
    /// `client_features` section or the section does not name `feature` (not governed:
    /// forwarded as before). `deny` → [`ReasonCode::P_CLIENT_FEATURE_DENIED`], `allow` →
    /// [`ReasonCode::P_POLICY_ALLOW`]; `matched_rule` `client_features.FEATURE`.
    pub fn evaluate_client_feature(&self, feature: ClientFeature) -> Option<Verdict> {
        self.sections.client_features.as_ref()?.evaluate(feature)
    }

    /// The `client_features` rule for `feature`: `Some(true)` allow, `Some(false)` deny,
    /// `None` not governed.
    pub fn client_feature_rule(&self, feature: ClientFeature) -> Option<bool> {
        self.sections.client_features.as_ref()?.rule(feature)
    }

    /// Under `hide_refused_tools`: whether a `resources/list` entry with this `uri` is refused
    /// whatever else it carries (`Some(code)`: remove it, with that reason code) or kept
    /// (`None`): judged in every reading, as [`Policy::evaluate_resource`]. Always `None`
    /// without a `resources` section.
    pub fn refuses_resource(&self, uri: &str) -> Option<ReasonCode> {
        self.sections.resources.as_ref()?.refuses(uri)
    }

    /// Under `hide_refused_tools`: whether a `resources/templates/list` entry with this
    /// `uriTemplate` is refused. Removed only when every URI it can expand to is refused, judged
    /// on the literal text before its first `{` (see `docs/decisions.md`, "Beyond tools/call:
    /// the policy sections"). Always `None` without a `resources` section.
    pub fn refuses_resource_template(&self, uri_template: &str) -> Option<ReasonCode> {
        self.sections
            .resources
            .as_ref()?
            .refuses_template(uri_template)
    }

    /// Under `hide_refused_tools`: whether a `prompts/list` entry with this `name` is refused.
    /// Always `None` without a `prompts` section.
    pub fn refuses_prompt(&self, name: &str) -> Option<ReasonCode> {
        self.sections.prompts.as_ref()?.refuses(name)
    }

    /// The policy's `limits`, or `None`. [`Limits::budget`] gives one session's counters.
    pub fn limits(&self) -> Option<&Limits> {
        self.sections.limits.as_ref()
    }

    /// What a `tools/call` decision records of `arguments` under `record_arguments`: the
    /// RFC 8785 canonical JSON with every value under an object key matching a `redact` glob
    /// (case-insensitive as SPEC §3 means it: the lenient normalization of both the key and the
    /// pattern; at any depth, inside arrays too) replaced by `"[redacted]"`, cut to at
    /// most [`super::MAX_RECORDED_BYTES`] bytes on a UTF-8 character boundary. Returns the text
    /// and whether it was cut. The caller decides whether to record at all
    /// ([`Policy::record_arguments`]).
    pub fn recorded_arguments(&self, arguments: &Value) -> (String, bool) {
        self.sections.arguments.recorded(arguments)
    }

    /// [`Policy::recorded_arguments`] of the arguments whose canonical form is `canonical`, made
    /// from that text, when the simple transcription (`crate::canonical`) wrote it; `None`
    /// otherwise (the caller then records the parsed value).
    pub(crate) fn recorded_canonical_arguments(&self, canonical: &str) -> Option<(String, bool)> {
        self.sections.arguments.recorded_canonical(canonical)
    }

    /// [`Policy::recorded_canonical_arguments`] escaped as the decision line's JSON string
    /// holds it (without its quotes), when it needs no escape but its quotes' and backslashes'
    /// and is not cut; `None` otherwise (the caller then escapes the text itself).
    pub(crate) fn recorded_canonical_arguments_escaped(&self, canonical: &str) -> Option<String> {
        self.sections
            .arguments
            .recorded_canonical_escaped(canonical)
    }
}

#[cfg(test)]
mod tests;
