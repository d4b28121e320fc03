//! Messages of the governed methods other than `tools/call` (SPEC §5.2), on both paths: which
//! message is governed, what its target is, and the policy's verdict on it — the client's
//! `resources/read`, `resources/subscribe` and `prompts/get`, and the server's
//! `sampling/createMessage`, `elicitation/create` and `roots/list`. A method whose section the
//! policy lacks is not governed: forwarded as before, no event.
//!
//! The decision line is [`McpDecisionEntry`] (`assay.mcp.decision`, SPEC §4.1a); the refusal
//! is [`super::respond::refused_request`].

use std::borrow::Cow;

use super::message::{Message, as_str, tool_call_id};
use crate::evidence::decision_log::{Direction, McpDecisionEntry};
use crate::policy::{ClientFeature, Decision, Policy, Verdict};
use crate::sha256::HexDigest;

/// The client methods judged by `params.uri` (the `resources` section).
const RESOURCE_METHODS: [&str; 2] = ["resources/read", "resources/subscribe"];

/// The server requests judged by `client_features`, with the feature each asks for. (Under
/// 2026-07-28 the same input requests arrive inside an `input_required` result instead.)
pub(crate) const FEATURE_METHODS: [(&str, ClientFeature); 3] = [
    ("sampling/createMessage", ClientFeature::Sampling),
    ("elicitation/create", ClientFeature::Elicitation),
    ("roots/list", ClientFeature::Roots),
];

/// One judged message of a governed method: `'a` borrows the line.
pub(crate) struct Judged<'a> {
    pub method: &'static str,
    pub direction: Direction,
    /// The raw `id` text, if any (`None`: a notification).
    pub id: Option<&'a str>,
    /// The id as a string for the log (as `tool_call_id`).
    pub request_id: Option<Cow<'a, str>>,
    /// The resource URI, prompt name or client feature.
    pub target: Option<Cow<'a, str>>,
    pub params_sha256: Option<HexDigest>,
    pub verdict: Verdict,
}

impl Judged<'_> {
    /// Whether the policy let it through.
    pub(crate) fn allowed(&self) -> bool {
        self.verdict.decision == Decision::Allow
    }

    /// The decision line's content.
    pub(crate) fn entry(&self) -> McpDecisionEntry<'_> {
        self.entry_as(&self.verdict)
    }

    /// The decision line's content with another verdict (a message refused with its batch).
    pub(crate) fn entry_as<'s>(&'s self, verdict: &'s Verdict) -> McpDecisionEntry<'s> {
        McpDecisionEntry {
            method: self.method,
            direction: self.direction,
            target: self.target.as_deref(),
            request_id: self.request_id.as_deref(),
            decision: verdict.decision,
            reason_code: verdict.reason_code,
            reason: &verdict.reason,
            matched_rule: verdict.matched_rule.as_deref(),
            params_sha256: self.params_sha256.as_ref(),
        }
    }
}

/// The RFC 8785 digest of `params` (`None`: absent, or not canonicalizable within its bound).
fn params_digest(m: &Message<'_>) -> Option<HexDigest> {
    m.params.and_then(crate::canonical::digest_of)
}

/// A client message of a governed method, judged; `None` when the method is not governed by
/// this policy (or is not one of them).
pub(crate) fn client_message<'a>(policy: &Policy, m: &Message<'a>) -> Option<Judged<'a>> {
    m.method?;
    let (method, target, verdict) =
        if let Some(method) = RESOURCE_METHODS.iter().copied().find(|x| m.method_is(x)) {
            let uri = if m.params_object {
                m.uri.and_then(as_str)
            } else {
                None
            };
            let verdict = policy.evaluate_resource(uri.as_deref())?;
            (method, uri, verdict)
        } else if m.method_is("prompts/get") {
            let name = if m.params_object {
                m.name.and_then(as_str)
            } else {
                None
            };
            let verdict = policy.evaluate_prompt(name.as_deref())?;
            ("prompts/get", name, verdict)
        } else {
            return None;
        };
    Some(Judged {
        method,
        direction: Direction::ClientToServer,
        id: m.id,
        request_id: tool_call_id(m.id),
        target,
        params_sha256: params_digest(m),
        verdict,
    })
}

/// A server request the policy judges by `client_features` (only requests: a notification of
/// the same method asks nothing of the client), judged; `None` when not governed.
pub(crate) fn server_request<'a>(policy: &Policy, m: &Message<'a>) -> Option<Judged<'a>> {
    m.id?;
    let (method, feature) = FEATURE_METHODS
        .iter()
        .copied()
        .find(|(x, _)| m.method_is(x))?;
    let verdict = policy.evaluate_client_feature(feature)?;
    Some(Judged {
        method,
        direction: Direction::ServerToClient,
        id: m.id,
        request_id: tool_call_id(m.id),
        target: Some(Cow::Borrowed(feature.as_str())),
        params_sha256: params_digest(m),
        verdict,
    })
}
