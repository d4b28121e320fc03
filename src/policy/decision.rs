//! The verdict types of a policy decision (SPEC §4.1, §5): what happens to a call, why, and which
//! rule said so. A leaf: the evaluation order (`decide`), the constraint and schema checks all
//! build these values, and none of them is imported from here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What happens to a `tools/call`, or to another message of a governed method (SPEC §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Forward the call.
    Allow,
    /// Refuse the call (forward it anyway in dry-run).
    Deny,
    /// The message could not be evaluated: a malformed `tools/call` (produced by the proxy), or
    /// a `resources/read`/`resources/subscribe`/`prompts/get` without its string target
    /// ([`crate::Policy::evaluate_resource`], [`crate::Policy::evaluate_prompt`]).
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

/// Why a decision was made: the one list of policy reason codes lives in `src/reason_code.rs`.
pub use crate::reason_code::ReasonCode;

/// The result of evaluating one `tools/call` (or one message of a governed method) against a
/// policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Allow or deny ([`crate::Policy::evaluate`] never returns [`Decision::Error`]).
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

impl Verdict {
    /// The same content, borrowed.
    pub(crate) fn as_ref(&self) -> VerdictRef<'_> {
        VerdictRef {
            decision: self.decision,
            reason_code: self.reason_code,
            reason: std::borrow::Cow::Borrowed(&self.reason),
            matched_rule: self.matched_rule.as_deref().map(std::borrow::Cow::Borrowed),
        }
    }
}

impl Verdict {
    /// The same content as a [`VerdictRef`] that owns its texts.
    pub(crate) fn into_ref(self) -> VerdictRef<'static> {
        VerdictRef {
            decision: self.decision,
            reason_code: self.reason_code,
            reason: std::borrow::Cow::Owned(self.reason),
            matched_rule: self.matched_rule.map(std::borrow::Cow::Owned),
        }
    }
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
    /// The same content, borrowed from this one.
    pub(crate) fn borrowed(&self) -> VerdictRef<'_> {
        VerdictRef {
            decision: self.decision,
            reason_code: self.reason_code,
            reason: std::borrow::Cow::Borrowed(&self.reason),
            matched_rule: self.matched_rule.as_deref().map(std::borrow::Cow::Borrowed),
        }
    }

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

/// What a capture holds of a call's `params.arguments`.
#[derive(Debug, Clone, Copy)]
pub enum RecordedArguments<'a> {
    /// Recorded whole (`record_arguments`, not cut, nothing redacted): `None` when the call had
    /// no `params.arguments`.
    Whole(Option<&'a Value>),
    /// Not recorded, cut to the bound, or recorded with redacted values: what the argument steps
    /// would read is unknown.
    Unknown,
}

/// The outcome of judging a recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejudged {
    /// The policy's verdict, as the proxy would have given it.
    Verdict(Verdict),
    /// The verdict depends on arguments the capture does not hold: `rule` is the first argument
    /// rule that applies (`constraints:TOOL.PARAM` or `schemas:TOOL`).
    NeedsArguments {
        /// The rule label.
        rule: String,
    },
}

/// [`Rejudged`] with the texts borrowed from the policy where they can be (replay judges every
/// recorded call without allocating its verdict).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RejudgedRef<'p> {
    /// The policy's verdict.
    Verdict(VerdictRef<'p>),
    /// The first argument rule that needs arguments the capture does not hold.
    NeedsArguments {
        /// The rule label.
        rule: &'p str,
    },
}

impl RejudgedRef<'_> {
    /// The owned [`Rejudged`] with the same content.
    pub(crate) fn into_owned(self) -> Rejudged {
        match self {
            RejudgedRef::Verdict(v) => Rejudged::Verdict(v.into_owned()),
            RejudgedRef::NeedsArguments { rule } => Rejudged::NeedsArguments {
                rule: rule.to_owned(),
            },
        }
    }
}

/// A failed argument check: the rule label (`constraints:…`/`schemas:…`) and the reason.
#[derive(Debug)]
pub(crate) struct Failure<'a> {
    pub(crate) rule: &'a str,
    pub(crate) reason: String,
}
