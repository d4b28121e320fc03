//! Messages of the governed methods other than `tools/call` (SPEC §5.2), on both paths: which
//! message is governed, what its target is, and the policy's verdict on it — the client's
//! `resources/read`, `resources/subscribe`, `prompts/get` and `completion/complete`, and the server's
//! `sampling/createMessage`, `elicitation/create` and `roots/list`. A method whose section the
//! policy lacks is not governed: forwarded as before, no event.
//!
//! The decision line is [`McpDecisionEntry`] (`assay.mcp.decision`, SPEC §4.1a); the refusal
//! is [`super::respond::refused_request`].

use std::borrow::Cow;

use super::message::{Message, as_str, tool_call_id};
use crate::evidence::decision_log::{Direction, McpDecisionEntry};
use serde_json::Value;

use crate::lenient;
use crate::methods::{
    COMPLETION_COMPLETE as COMPLETION, Governor, SUBSCRIPTIONS_LISTEN as LISTEN, Target,
};
use crate::policy::{Decision, Policy, ReasonCode, Verdict, VerdictRef};
use crate::sha256::HexDigest;

/// A decision `error`, `P_MALFORMED`: a governed request that cannot be judged.
fn malformed(method: &str, why: &str) -> Option<(Option<String>, Verdict)> {
    Some((
        None,
        Verdict {
            decision: Decision::Error,
            reason_code: ReasonCode::P_MALFORMED,
            reason: format!("the {method} request cannot be judged: {why}"),
            matched_rule: None,
        },
    ))
}

/// What a `subscriptions/listen` (2026-07-28, replacing `resources/subscribe`) asks of the
/// resources: its `params.notifications.resourceSubscriptions` lists resource URIs whose updates
/// the client asks for, each judged by the `resources` section as a `resources/subscribe` of it
/// would be, and the verdict: `None` without a
/// `resources` section, or when it asks for no resource. Every URI must be allowed; the first
/// refused one is the target and its verdict the request's. Fails closed like
/// [`completion`]: `params` or `notifications` not an object, a lenient variant of
/// `notifications` or `resourceSubscriptions`, a list that is not an array of strings →
/// `P_MALFORMED`.
fn listen(policy: &Policy, params: Option<&str>) -> Option<(Option<String>, Verdict)> {
    if !policy.governed().contains(&"resources") {
        return None;
    }
    let Some(Value::Object(params)) = params.and_then(|p| serde_json::from_str(p).ok()) else {
        return malformed(LISTEN.name, "params is not an object");
    };
    if lenient::has_variant(&params, &["notifications"]) {
        return malformed(
            LISTEN.name,
            "params has a case or fold variant of `notifications`",
        );
    }
    let Some(Value::Object(filter)) = params.get("notifications") else {
        return malformed(LISTEN.name, "params.notifications is not an object");
    };
    if lenient::has_variant(filter, &["resourceSubscriptions"]) {
        return malformed(
            LISTEN.name,
            "params.notifications has a case or fold variant of `resourceSubscriptions`",
        );
    }
    let uris = match filter.get("resourceSubscriptions") {
        None => return None,
        Some(Value::Array(uris)) => uris,
        Some(_) => return malformed(LISTEN.name, "resourceSubscriptions is not an array"),
    };
    let mut allowed = None;
    for uri in uris {
        let Some(uri) = uri.as_str() else {
            return malformed(LISTEN.name, "a resourceSubscriptions entry is not a string");
        };
        let v = policy.evaluate_resource(Some(uri))?;
        if v.decision != Decision::Allow {
            return Some((Some(uri.to_string()), v));
        }
        allowed.get_or_insert((Some(uri.to_string()), v));
    }
    allowed
}

/// What a `completion/complete` names (SPEC §5.2: its `params.ref` names a prompt, `ref/prompt`,
/// judged by the `prompts` section, or a resource or resource template, `ref/resource`, judged by
/// the `resources` section, whose code the server runs to complete an argument), and the policy's verdict: `None` when the section of
/// what it names is absent (not governed). Read from `params` (strict JSON: the line passed the
/// duplicate-key check after lenient normalization), failing closed: when either section is
/// present, `params` that are not an object, a `ref` that is not an object, a key of `params`
/// or of `ref` that is a lenient variant of `ref`, `type`, `name` or `uri` (`Ref`, `NAME`,
/// `uri\u0000`: a lenient server's reading could differ from ours), a `type` other than the
/// two, or a name or URI that is not a string → decision `error`, `P_MALFORMED`.
fn completion(policy: &Policy, params: Option<&str>) -> Option<(Option<String>, Verdict)> {
    let governed = policy.governed();
    let prompts = governed.contains(&"prompts");
    let resources = governed.contains(&"resources");
    if !prompts && !resources {
        return None;
    }
    let Some(Value::Object(params)) = params.and_then(|p| serde_json::from_str(p).ok()) else {
        return malformed(COMPLETION.name, "params is not an object");
    };
    if lenient::has_variant(&params, &["ref"]) {
        return malformed(
            COMPLETION.name,
            "params has a case or fold variant of `ref`",
        );
    }
    let Some(Value::Object(r)) = params.get("ref") else {
        return malformed(COMPLETION.name, "params.ref is not an object");
    };
    if lenient::has_variant(r, &["type", "name", "uri"]) {
        return malformed(
            COMPLETION.name,
            "params.ref has a case or fold variant of `type`, `name` or `uri`",
        );
    }
    match r.get("type").and_then(Value::as_str) {
        Some("ref/prompt") if prompts => match r.get("name").and_then(Value::as_str) {
            Some(name) => {
                let v = policy.evaluate_prompt(Some(name))?;
                Some((Some(name.to_string()), v))
            }
            None => malformed(COMPLETION.name, "params.ref.name is not a string"),
        },
        Some("ref/resource") if resources => match r.get("uri").and_then(Value::as_str) {
            Some(uri) => Some((Some(uri.to_string()), resource_ref(policy, uri)?)),
            None => malformed(COMPLETION.name, "params.ref.uri is not a string"),
        },
        // What it names is governed by a section this policy lacks: forwarded as before.
        Some("ref/prompt" | "ref/resource") => None,
        _ => malformed(
            COMPLETION.name,
            "params.ref.type is neither ref/prompt nor ref/resource",
        ),
    }
}

/// A `ref/resource` names a resource URI or a URI template: a URI is judged as a
/// `resources/read` of it; a template is refused exactly when the listing filter would hide it
/// (every URI it can expand to is refused), and allowed otherwise.
fn resource_ref(policy: &Policy, uri: &str) -> Option<Verdict> {
    if !uri.contains('{') {
        return policy.evaluate_resource(Some(uri));
    }
    Some(match policy.refuses_resource_template(uri) {
        Some(code) => Verdict {
            decision: Decision::Deny,
            reason_code: code,
            reason: "every URI the resource template can expand to is refused".to_string(),
            matched_rule: None,
        },
        None => Verdict {
            decision: Decision::Allow,
            reason_code: ReasonCode::P_POLICY_ALLOW,
            reason: "the resource template can expand to an allowed URI".to_string(),
            matched_rule: None,
        },
    })
}

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
        let v = &self.verdict;
        self.entry_parts(
            v.decision,
            v.reason_code,
            &v.reason,
            v.matched_rule.as_deref(),
        )
    }

    /// The decision line's content with another verdict (a message refused with its batch).
    pub(crate) fn entry_as<'s>(&'s self, v: &'s VerdictRef<'_>) -> McpDecisionEntry<'s> {
        self.entry_parts(
            v.decision,
            v.reason_code,
            &v.reason,
            v.matched_rule.as_deref(),
        )
    }

    fn entry_parts<'s>(
        &'s self,
        decision: Decision,
        reason_code: ReasonCode,
        reason: &'s str,
        matched_rule: Option<&'s str>,
    ) -> McpDecisionEntry<'s> {
        McpDecisionEntry {
            method: self.method,
            direction: self.direction,
            target: self.target.as_deref(),
            request_id: self.request_id.as_deref(),
            decision,
            reason_code,
            reason,
            matched_rule,
            params_sha256: self.params_sha256.as_ref(),
        }
    }
}

/// The RFC 8785 digest of `params` (`None`: absent, or not canonicalizable within its bound).
fn params_digest(m: &Message<'_>) -> Option<HexDigest> {
    m.params.and_then(crate::canonical::digest_of)
}

/// A client message of a governed method, judged; `None` when the method is not governed by
/// this policy (or is not one of them). What is judged is read from `params` as the method's row
/// of the table says.
pub(crate) fn client_message<'a>(policy: &Policy, m: &Message<'a>) -> Option<Judged<'a>> {
    let row = m.row?;
    let object = |raw: Option<&'a str>| raw.filter(|_| m.params_object);
    let (target, verdict) = match (row.governor, row.target) {
        (Governor::Resources, Target::Uri) => {
            let uri = object(m.uri).and_then(as_str);
            let verdict = policy.evaluate_resource(uri.as_deref())?;
            (uri, verdict)
        }
        (Governor::Resources, Target::ResourceSubscriptions) => {
            let (target, verdict) = listen(policy, object(m.params))?;
            (target.map(Cow::Owned), verdict)
        }
        (Governor::PromptsOrResources, Target::Ref) => {
            let (target, verdict) = completion(policy, object(m.params))?;
            (target.map(Cow::Owned), verdict)
        }
        (Governor::Prompts, Target::Name) => {
            let name = object(m.name).and_then(as_str);
            let verdict = policy.evaluate_prompt(name.as_deref())?;
            (name, verdict)
        }
        _ => return None,
    };
    Some(Judged {
        method: row.name,
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
    let row = m.row?;
    let feature = row.target.feature()?;
    let verdict = policy.evaluate_client_feature(feature)?;
    Some(Judged {
        method: row.name,
        direction: Direction::ServerToClient,
        id: m.id,
        request_id: tool_call_id(m.id),
        target: Some(Cow::Borrowed(feature.as_str())),
        params_sha256: params_digest(m),
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::{From, Governor, METHODS};
    use crate::proxy::message::{Judged as Keys, for_each_message};

    /// The proxy judges each method as its row of the one table (`src/methods.rs`,
    /// `docs/methods.md`) says: a message naming every governed thing at once, under a policy
    /// with every section, is judged on the client path exactly when its row says `resources`,
    /// `prompts` or either, and on the server path exactly when it says `client_features`.
    #[test]
    fn every_method_is_judged_as_the_method_table_says() {
        let policy = Policy::from_bytes(
            b"version: \"1\"\nallow: [\"*\"]\nresources:\n  deny: [\"file:///**\"]\n\
              prompts:\n  deny: [\"*\"]\nclient_features:\n  sampling: deny\n  elicitation: deny\n  roots: deny\n",
            std::path::Path::new("p.yaml"),
        )
        .unwrap();
        let params = r#"{"uri":"file:///x","name":"p","ref":{"type":"ref/prompt","name":"p"},"notifications":{"resourceSubscriptions":["file:///x"]}}"#;
        for m in METHODS {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"{}","params":{params}}}"#,
                m.name
            );
            let mut client = None;
            let mut server = None;
            for_each_message(&line, Keys::default(), |msg| {
                client = Some(client_message(&policy, msg).map(|g| g.allowed()));
                server = Some(server_request(&policy, msg).map(|g| g.allowed()));
            });
            let (client, server) = (client.flatten(), server.flatten());
            let on_client = matches!(
                m.governor,
                Governor::Resources | Governor::Prompts | Governor::PromptsOrResources
            );
            assert_eq!(client.is_some(), on_client, "{}: client path", m.name);
            assert_eq!(
                server.is_some(),
                m.governor == Governor::ClientFeatures,
                "{}: server path",
                m.name
            );
            // Judged, it is refused (the policy denies everything it names).
            assert_ne!(client.or(server), Some(true), "{}", m.name);
            if m.governor == Governor::ClientFeatures {
                assert_eq!(m.from, From::Server, "{}", m.name);
            }
        }
    }
}
