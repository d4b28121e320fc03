//! The judgement of one client message of a governed method (SPEC §5, §5.2), and the one path
//! that records it and refuses it: a `tools/call` and a message of another governed method are
//! each a [`Judgement`], whether the message came alone or in a batch. The method's row of the
//! table (`src/methods.rs`) says which it is.

use std::borrow::Cow;

use super::governed::{self, Judged as GovernedMessage};
use super::message::{Judged, Message, as_str, raw_id, tool_call_id};
use super::recorder::Recorder;
use super::respond;
use super::shared::Shared;
use crate::evidence::decision_log::DecisionEntry;
use crate::methods::TOOLS_CALL;
use crate::policy::{CallBudget, Decision, ReasonCode, Verdict, VerdictRef};
use crate::sha256::HexDigest;

/// One evaluated `tools/call`: `'a` borrows the line, `'p` the policy.
pub(super) struct Evaluated<'a, 'p> {
    /// The raw `id` text.
    id: Option<&'a str>,
    /// Borrowed from the line unless it holds escapes.
    tool: Option<Cow<'a, str>>,
    tool_call_id: Option<Cow<'a, str>>,
    arguments_sha256: Option<HexDigest>,
    /// The definition digest this session remembers for the tool (SPEC §5.1).
    tool_definition_sha256: Option<HexDigest>,
    /// With `record_arguments` (SPEC §5.2): the redacted, bounded arguments, and whether they
    /// were cut.
    recorded: Option<(String, bool)>,
    /// `recorded` is already escaped as the decision line's JSON string holds it.
    recorded_escaped: bool,
    verdict: VerdictRef<'p>,
}

impl Drop for Evaluated<'_, '_> {
    /// The recorded text's buffer makes the next call's (its decision is written by now).
    fn drop(&mut self) {
        if let Some((text, _)) = self.recorded.take() {
            crate::policy::give_back_recorded_arguments(text);
        }
    }
}

/// The verdict of an allowed message refused because another message of its batch was not.
const BATCH_REFUSED: VerdictRef<'static> = VerdictRef {
    decision: Decision::Deny,
    reason_code: ReasonCode::P_BATCH_REFUSED,
    reason: Cow::Borrowed("refused with its batch: another message in the batch was not allowed"),
    matched_rule: None,
};

const PARAMS_MALFORMED: &str = "tools/call params is missing or not an object";

fn malformed(reason: &'static str) -> VerdictRef<'static> {
    VerdictRef {
        decision: Decision::Error,
        reason_code: ReasonCode::P_MALFORMED,
        reason: Cow::Borrowed(reason),
        matched_rule: None,
    }
}

/// A verdict the policy built for this call alone, as a [`VerdictRef`].
fn owned(v: Verdict) -> VerdictRef<'static> {
    VerdictRef {
        decision: v.decision,
        reason_code: v.reason_code,
        reason: Cow::Owned(v.reason),
        matched_rule: v.matched_rule.map(Cow::Owned),
    }
}

/// Judges one `tools/call` in the order of SPEC §5, then (allowed so far) against the session's
/// `limits` (§5.2): `budget` counts the call when it is admitted.
fn evaluate<'a, 'p>(
    shared: &'p Shared,
    head: &Message<'a>,
    budget: Option<&mut CallBudget>,
) -> Evaluated<'a, 'p> {
    let mut ev = Evaluated {
        id: head.id,
        tool: None,
        tool_call_id: tool_call_id(head.id),
        arguments_sha256: None,
        tool_definition_sha256: None,
        recorded: None,
        recorded_escaped: false,
        // Every path below sets the verdict; this placeholder allocates nothing.
        verdict: malformed(PARAMS_MALFORMED),
    };
    if !head.params_object {
        return ev;
    }
    // RFC 8785 canonical form, so the digest does not depend on the client's key order or
    // whitespace; written straight from the text, no value built. A value is parsed only when
    // the policy inspects the arguments.
    // With `record_arguments`, the recorded text is made from the same transcription when it
    // is a simple one (no value built), escaped for the decision line in the same walk when it
    // needs no escape but its quotes' and backslashes' and is not cut; otherwise from the
    // parsed value below.
    let record_arguments = shared.policy.record_arguments();
    let mut recorded = None;
    let mut recorded_escaped = false;
    if let Some(raw) = head.arguments {
        let Some((digest, fast)) = crate::canonical::digest_of_and(raw, |simple| {
            let form = simple.filter(|_| record_arguments)?;
            match shared.policy.recorded_canonical_arguments_escaped(form) {
                Some(escaped) => Some(((escaped, false), true)),
                None => shared
                    .policy
                    .recorded_canonical_arguments(form)
                    .map(|r| (r, false)),
            }
        }) else {
            // Not canonicalizable within its bound (a text of exponent numbers far longer once
            // written out): malformed params, never a call without its digest.
            return ev;
        };
        ev.arguments_sha256 = Some(digest);
        if let Some((text, escaped)) = fast {
            recorded = Some(text);
            recorded_escaped = escaped;
        }
    }
    let Some(name) = head.name.and_then(as_str) else {
        ev.verdict = malformed("tools/call params.name is missing or not a string");
        return ev;
    };
    let mut arguments: Option<serde_json::Value> = None;
    if (record_arguments && recorded.is_none()) || shared.policy.reads_arguments(&name) {
        if let Some(raw) = head.arguments {
            let Ok(v) = crate::strict_json::parse_value(raw) else {
                // As if the parse had failed up front (it cannot after the fast path accepted
                // the text, but the outcome must not depend on which path ran).
                ev.arguments_sha256 = None;
                ev.verdict = malformed(PARAMS_MALFORMED);
                return ev;
            };
            arguments = Some(v);
        }
    }
    ev.tool_definition_sha256 = shared.tools_list.definition_of(&name);
    ev.verdict = shared.policy.decide(
        &name,
        arguments.as_ref(),
        ev.tool_definition_sha256.as_ref(),
    );
    if record_arguments {
        ev.recorded_escaped = recorded.is_some() && recorded_escaped;
        ev.recorded = recorded.or_else(|| {
            arguments
                .as_ref()
                .map(|a| shared.policy.recorded_arguments(a))
        });
    }
    if ev.verdict.decision == Decision::Allow {
        if let Some(refused) = budget.and_then(|b| b.admit(&name, ev.arguments_sha256.as_ref())) {
            ev.verdict = owned(refused);
        }
    }
    ev.tool = Some(name);
    ev
}

/// One client message the policy judged: a `tools/call` (`assay.tool.decision`, SPEC §4.1) or a
/// message of another governed method (`assay.mcp.decision`, §4.1a).
pub(super) enum Judgement<'a, 'p> {
    Call(Evaluated<'a, 'p>),
    Governed(GovernedMessage<'a>),
}

impl<'a, 'p> Judgement<'a, 'p> {
    /// The judgement of `m`, or `None` when the policy does not govern its method. `judged`: the
    /// sections besides the top-level rules this policy has (without them only a `tools/call` is
    /// judged); `budget`: the `limits` counters a `tools/call` is counted in when admitted.
    pub(super) fn of(
        shared: &'p Shared,
        judged: Judged,
        m: &Message<'a>,
        budget: Option<&mut CallBudget>,
    ) -> Option<Self> {
        if m.is(&TOOLS_CALL) {
            return Some(Judgement::Call(evaluate(shared, m, budget)));
        }
        if !(judged.resources || judged.prompts) {
            return None;
        }
        governed::client_message(&shared.policy, m).map(Judgement::Governed)
    }

    /// Whether the policy let it through.
    pub(super) fn allowed(&self) -> bool {
        self.own().decision == Decision::Allow
    }

    /// Its own verdict.
    fn own(&self) -> VerdictRef<'_> {
        match self {
            Judgement::Call(ev) => ev.verdict.borrowed(),
            Judgement::Governed(g) => g.verdict.as_ref(),
        }
    }

    /// The verdict it is recorded and answered with: its own, or, allowed but `with_batch`
    /// refused, the batch refusal.
    pub(super) fn verdict(&self, with_batch: bool) -> VerdictRef<'_> {
        if with_batch && self.allowed() {
            BATCH_REFUSED
        } else {
            self.own()
        }
    }

    /// Numbers the decision and appends its log line (when a log is kept) to `out`. Returns
    /// whether a line was appended, and the event id when `want_id` (a refusal carries it; the
    /// common allowed path formats none) or `--verbose` says it.
    pub(super) fn record(
        &self,
        shared: &Shared,
        recorder: &mut Recorder,
        out: &mut Vec<u8>,
        verdict: &VerdictRef<'_>,
        want_id: bool,
    ) -> (bool, String) {
        let (seq, wrote) = match self {
            Judgement::Call(ev) => recorder.record(
                out,
                &DecisionEntry {
                    tool: ev.tool.as_deref(),
                    tool_call_id: ev.tool_call_id.as_deref(),
                    decision: verdict.decision,
                    reason_code: verdict.reason_code,
                    reason: &verdict.reason,
                    matched_rule: verdict.matched_rule.as_deref(),
                    arguments_sha256: ev.arguments_sha256.as_ref(),
                    tool_definition_sha256: ev.tool_definition_sha256.as_ref(),
                    arguments: ev
                        .recorded
                        .as_ref()
                        .map(|(text, cut)| (text.as_str(), *cut)),
                    arguments_escaped: ev.recorded_escaped,
                },
            ),
            Judgement::Governed(g) => recorder.record_mcp(out, &g.entry_as(verdict)),
        };
        let verbose = shared.diag.verbose;
        if !(want_id || verbose) {
            return (wrote, String::new());
        }
        let id = recorder.decision_id(seq);
        if verbose {
            let what = match self {
                Judgement::Call(ev) => format!("tool={}", ev.tool.as_deref().unwrap_or("-")),
                Judgement::Governed(g) => {
                    format!("{} {}", g.method, g.target.as_deref().unwrap_or("-"))
                }
            };
            shared.diag.say(&format!(
                "decision {id} {} {what} ({})",
                verdict.decision.as_str(),
                verdict.reason_code.as_str()
            ));
        }
        (wrote, id)
    }

    /// The answer to the client for a refused request (`None`: a notification, dropped without
    /// one): a `tools/call` gets a tool result with `isError` (SPEC §3), another governed request
    /// the JSON-RPC refusal (§5.2).
    pub(super) fn refusal(&self, verdict: &VerdictRef<'_>, decision_id: &str) -> Option<Vec<u8>> {
        match self {
            Judgement::Call(ev) => {
                let id = raw_id(ev.id?)?;
                let text = format!(
                    "assay: tool call refused ({}): {}",
                    verdict.reason_code.as_str(),
                    verdict.reason
                );
                Some(respond::refused_call(
                    id,
                    verdict.decision.as_str(),
                    verdict.reason_code,
                    &text,
                    decision_id,
                ))
            }
            Judgement::Governed(g) => Some(respond::refused_request(
                raw_id(g.id?)?,
                verdict.decision.as_str(),
                verdict.reason_code,
                decision_id,
            )),
        }
    }
}
