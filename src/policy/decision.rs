//! The verdict types of a policy decision (SPEC §4.1, §5): what happens to a call, why, and which
//! rule said so. A leaf: the evaluation order (`decide`), the constraint and schema checks all
//! build these values, and none of them is imported from here.

use serde::{Deserialize, Serialize};

/// What happens to a `tools/call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Forward the call.
    Allow,
    /// Refuse the call (forward it anyway in dry-run).
    Deny,
    /// The call could not be evaluated (a malformed `tools/call`; produced by the proxy only).
    Error,
}

impl Decision {
    /// The SPEC string: `allow`, `deny` or `error`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
            Decision::Error => "error",
        }
    }
}

/// Why a decision was made (SPEC §4.1 `reason_code`). Variants are spelled exactly as the SPEC
/// strings, and serialize as those strings.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReasonCode {
    /// Every check passed.
    P_POLICY_ALLOW,
    /// A `deny` pattern matched the tool name.
    P_TOOL_DENIED,
    /// An `allow` list exists and no pattern in it matched the tool name.
    P_TOOL_NOT_ALLOWED,
    /// A constraint on an argument failed (missing, not a string, or no regex match).
    P_ARG_CONSTRAINT,
    /// The arguments do not validate against the tool's JSON Schema.
    P_ARG_SCHEMA,
    /// The `tools/call` was malformed (`params.name` missing or not a string). Proxy only.
    P_MALFORMED,
    /// An allowed call refused because its batch held a denied call. Proxy only.
    P_BATCH_REFUSED,
    /// The policy has pins and the tool is not pinned (SPEC §5.1).
    P_TOOL_UNPINNED,
    /// The tool's definition as this session last listed it differs from its pin (SPEC §5.1).
    P_TOOL_DRIFT,
    /// No `tools/list` result of this session has listed the pinned tool (SPEC §5.1).
    P_TOOL_UNLISTED,
}

impl ReasonCode {
    /// The SPEC string, e.g. `"P_TOOL_DENIED"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ReasonCode::P_POLICY_ALLOW => "P_POLICY_ALLOW",
            ReasonCode::P_TOOL_DENIED => "P_TOOL_DENIED",
            ReasonCode::P_TOOL_NOT_ALLOWED => "P_TOOL_NOT_ALLOWED",
            ReasonCode::P_ARG_CONSTRAINT => "P_ARG_CONSTRAINT",
            ReasonCode::P_ARG_SCHEMA => "P_ARG_SCHEMA",
            ReasonCode::P_MALFORMED => "P_MALFORMED",
            ReasonCode::P_BATCH_REFUSED => "P_BATCH_REFUSED",
            ReasonCode::P_TOOL_UNPINNED => "P_TOOL_UNPINNED",
            ReasonCode::P_TOOL_DRIFT => "P_TOOL_DRIFT",
            ReasonCode::P_TOOL_UNLISTED => "P_TOOL_UNLISTED",
        }
    }
}

/// The result of evaluating one `tools/call` against a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Allow or deny (`evaluate` never returns [`Decision::Error`]).
    pub decision: Decision,
    /// Why.
    pub reason_code: ReasonCode,
    /// A short human sentence. Never contains argument values.
    pub reason: String,
    /// The rule that decided, e.g. `deny:shell*`, `allow:*`, `constraints:read_file.path`,
    /// `schemas:write_file`; `None` when no single rule decided (no allow-list match, or an allow
    /// with no allow list).
    pub matched_rule: Option<String>,
}

/// A [`Verdict`] whose texts borrow the policy where they can: the proxy judges an allowed call
/// without allocating (the `reason` and `matched_rule` of a name rule are the policy's own
/// precomputed strings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VerdictRef<'p> {
    pub(crate) decision: Decision,
    pub(crate) reason_code: ReasonCode,
    pub(crate) reason: std::borrow::Cow<'p, str>,
    pub(crate) matched_rule: Option<std::borrow::Cow<'p, str>>,
}

impl VerdictRef<'_> {
    /// The owned [`Verdict`] with the same content.
    pub(crate) fn into_owned(self) -> Verdict {
        Verdict {
            decision: self.decision,
            reason_code: self.reason_code,
            reason: self.reason.into_owned(),
            matched_rule: self.matched_rule.map(std::borrow::Cow::into_owned),
        }
    }
}

/// A failed argument check: the rule label (`constraints:…`/`schemas:…`) and the reason.
#[derive(Debug)]
pub(crate) struct Failure<'a> {
    pub(crate) rule: &'a str,
    pub(crate) reason: String,
}
