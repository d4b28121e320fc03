//! One closed capture judged again under another policy: every recorded decision, in capture
//! order, through the policy's own judge (the steps the proxy runs), with the session's
//! `limits` counted again from zero.

use std::borrow::Cow;

use serde_json::Value;

use super::types::{Outcome, Replayed, ReplayedCapture, Unjudgeable};
use std::collections::BTreeSet;

use crate::capture::{ClosedRows, DecisionRef, ListingRow, LogLine, McpDecisionRef, RowRef};
use crate::methods::{self, Governor};
use crate::policy::{
    CallBudget, ClientFeature, Decision, Policy, ReasonCode, RecordedArguments, Rejudged,
    RejudgedRef, Verdict, VerdictRef,
};
use crate::sha256::HexDigest;

/// What redaction writes in place of a value (SPEC §4.1a).
const REDACTED: &str = "[redacted]";

/// Where a recorded decision is and what it was, borrowed from its row: made owned
/// ([`Replayed`]) only for a decision that changes or cannot be judged.
struct At<'r> {
    seq: u64,
    time: &'r str,
    method: &'r str,
    name: Option<&'r str>,
    listing: bool,
    /// The recorded decision and code.
    decision: &'r str,
    code: &'r str,
}

impl At<'_> {
    fn owned(&self) -> Replayed {
        Replayed {
            capture: String::new(),
            seq: self.seq,
            time: self.time.to_owned(),
            method: self.method.to_owned(),
            name: self.name.map(str::to_owned),
            listing: self.listing,
            old: Outcome {
                decision: self.decision.to_owned(),
                reason_code: Some(self.code.to_owned()),
                matched_rule: None,
            },
        }
    }
}

/// A new outcome: a decision, its code (`None`: not governed, or a listing entry shown), the
/// rule that decided (borrowed from the policy where the verdict lends it).
struct New<'p> {
    decision: Decision,
    code: Option<ReasonCode>,
    rule: Option<Cow<'p, str>>,
}

impl<'p> New<'p> {
    fn of(v: VerdictRef<'p>) -> New<'p> {
        New {
            decision: v.decision,
            code: Some(v.reason_code),
            rule: v.matched_rule,
        }
    }

    fn owned(v: Verdict) -> New<'p> {
        New::of(v.into_ref())
    }

    /// A message whose method the policy does not govern (forwarded, no event), or a listing
    /// entry that is shown.
    fn through() -> New<'p> {
        New {
            decision: Decision::Allow,
            code: None,
            rule: None,
        }
    }

    fn outcome(self) -> Outcome {
        Outcome {
            decision: self.decision.as_str().to_owned(),
            reason_code: self.code.map(|c| c.as_str().to_owned()),
            matched_rule: self.rule.map(Cow::into_owned),
        }
    }
}

/// Judges every decision line of a closed capture under `policy`.
pub(crate) fn replay_lines(policy: &Policy, lines: &[LogLine]) -> ReplayedCapture {
    let mut r = Judging::new(policy);
    for line in lines {
        r.line(RowRef::of(line));
    }
    r.out
}

/// Judges every row of a closed capture under `policy`, each where it lies in the log.
pub(crate) fn replay_rows(policy: &Policy, rows: &ClosedRows<'_>) -> ReplayedCapture {
    let mut r = Judging::new(policy);
    rows.for_each(|row| r.line(row));
    r.out
}

struct Judging<'p> {
    policy: &'p Policy,
    budget: Option<CallBudget>,
    /// The `limits.per_tool` entries already noted as used (their labels are in `out`).
    per_tool_used: BTreeSet<&'p str>,
    out: ReplayedCapture,
}

/// What the capture holds of a call's arguments, and why it is not whole when it is not.
fn arguments_of(d: &DecisionRef<'_>) -> (Option<Value>, Result<(), &'static str>) {
    if d.arguments_sha256.is_none() {
        // The call had no `params.arguments`: nothing for a rule to read but their absence.
        return (None, Ok(()));
    }
    let Some(text) = d.arguments else {
        return (
            None,
            Err("its arguments were not recorded (record_arguments)"),
        );
    };
    if d.arguments_truncated {
        return (
            None,
            Err("its recorded arguments were cut to the 4 KiB bound"),
        );
    }
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return (None, Err("its recorded arguments are not JSON"));
    };
    if holds_redacted(&v) {
        return (None, Err("its recorded arguments have redacted values"));
    }
    (Some(v), Ok(()))
}

/// Whether a redacted value stands anywhere in `v` (iteratively: recorded arguments are bounded
/// but may nest).
fn holds_redacted(v: &Value) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if s == REDACTED => return true,
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(m) => stack.extend(m.values()),
            _ => {}
        }
    }
    false
}

impl<'p> Judging<'p> {
    fn new(policy: &'p Policy) -> Self {
        Judging {
            policy,
            budget: policy.limits().map(|l| l.budget()),
            per_tool_used: BTreeSet::new(),
            out: ReplayedCapture::default(),
        }
    }

    /// Judges one row of the log.
    fn line(&mut self, row: RowRef<'_>) {
        match row {
            RowRef::Decision(d) => self.call(&d),
            RowRef::McpDecision(d) => self.mcp(&d),
            RowRef::Line(LogLine::Listing(l)) => self.listing(l),
            // An answer's event (SPEC §5.3) records what a request got, not a decision on it:
            // nothing for a policy to judge again. A closed capture has no refused line; nothing
            // to judge in one anyway. (The decisions come borrowed, never as `Line`.)
            RowRef::Line(_) => {}
        }
    }

    /// Notes a rule the replayed policy used.
    fn used(&mut self, rule: &str) {
        if !self.out.used_rules.contains(rule) {
            self.out.used_rules.insert(rule.to_owned());
        }
    }

    /// Records the new outcome of one recorded decision.
    fn judged(&mut self, at: &At<'_>, new: New<'_>) {
        if let Some(rule) = &new.rule {
            self.used(rule);
        }
        let same =
            at.decision == new.decision.as_str() && new.code.map(|c| c.as_str()) == Some(at.code);
        let through = at.decision == Decision::Allow.as_str() && new.decision == Decision::Allow;
        if same || through {
            self.out.judged += 1;
            return;
        }
        self.out.push(at.owned(), new.outcome());
    }

    fn unjudgeable(&mut self, at: &At<'_>, rule: Option<String>, why: String) {
        self.out.unjudgeable.push(Unjudgeable {
            at: at.owned(),
            rule,
            why,
        });
    }

    /// A `tools/call` decision (SPEC §4.1).
    fn call(&mut self, d: &DecisionRef<'_>) {
        let at = At {
            seq: d.seq,
            time: d.time,
            method: methods::TOOLS_CALL.name,
            name: d.tool,
            listing: false,
            decision: d.decision,
            code: d.reason_code,
        };
        let Some(tool) = d.tool else {
            // No tool name: refused by the proxy whatever the policy (P_MALFORMED).
            self.out.judged += 1;
            return;
        };
        if d.reason_code == ReasonCode::P_MALFORMED.as_str() {
            self.out.judged += 1;
            return;
        }
        let listed = d.tool_definition_sha256.and_then(HexDigest::from_hex);
        let args_sha = d.arguments_sha256.and_then(HexDigest::from_hex);
        let (value, whole) = arguments_of(d);
        let arguments = match whole {
            Ok(()) => RecordedArguments::Whole(value.as_ref()),
            Err(_) => RecordedArguments::Unknown,
        };
        let policy = self.policy;
        let rejudged = policy.judge_recorded(tool, arguments, listed.as_ref());
        let past_names = match &rejudged {
            RejudgedRef::NeedsArguments { .. } => true,
            RejudgedRef::Verdict(v) => !matches!(
                v.reason_code,
                ReasonCode::P_TOOL_DENIED
                    | ReasonCode::P_TOOL_NOT_ALLOWED
                    | ReasonCode::P_TOOL_UNPINNED
                    | ReasonCode::P_TOOL_UNLISTED
                    | ReasonCode::P_TOOL_DRIFT
            ),
        };
        if past_names {
            if let Some(rule) = self.policy.allow_rule(tool) {
                self.used(rule);
            }
            if self.policy.pins().is_some() {
                self.used("pins");
            }
        }
        let verdict = match rejudged {
            RejudgedRef::Verdict(v) => v,
            RejudgedRef::NeedsArguments { rule } => {
                self.used(rule);
                // What the recording says went through still counts against the limits.
                if d.decision == Decision::Allow.as_str() {
                    if let Some(b) = &mut self.budget {
                        b.admit(tool, args_sha.as_ref());
                    }
                }
                let why = whole.err().unwrap_or_default();
                return self.unjudgeable(
                    &at,
                    Some(rule.to_owned()),
                    format!("the rule reads arguments and {why}"),
                );
            }
        };
        if past_names {
            for rule in self.policy.argument_rules(tool) {
                self.used(rule);
            }
        }
        let verdict = match (&mut self.budget, verdict.decision) {
            (Some(b), Decision::Allow) => b
                .admit(tool, args_sha.as_ref())
                .map_or(verdict, |v| v.into_ref()),
            _ => verdict,
        };
        if verdict.decision == Decision::Allow {
            self.note_limits_used(tool);
        }
        if d.reason_code == ReasonCode::P_BATCH_REFUSED.as_str()
            && verdict.decision == Decision::Allow
        {
            return self.unjudgeable(
                &at,
                None,
                "it was refused with its batch, and the capture does not record which calls shared the batch".to_owned(),
            );
        }
        self.judged(&at, New::of(verdict));
    }

    /// The limits that counted an admitted call of `tool`.
    fn note_limits_used(&mut self, tool: &str) {
        let Some(l) = self.policy.limits() else {
            return;
        };
        if l.tool_calls().is_some() {
            self.used("limits.tool_calls");
        }
        if l.repeated_call().is_some() {
            self.used("limits.repeated_call");
        }
        if let Some((name, _)) = l.per_tool().get_key_value(tool) {
            if self.per_tool_used.insert(name) {
                self.out
                    .used_rules
                    .insert(format!("limits.per_tool.{tool}"));
            }
        }
    }

    /// An `assay.mcp.decision` (SPEC §4.1a): judged again by the section that governs its method.
    fn mcp(&mut self, d: &McpDecisionRef<'_>) {
        let at = At {
            seq: d.seq,
            time: d.time,
            method: d.method,
            name: d.target,
            listing: false,
            decision: d.decision,
            code: d.reason_code,
        };
        let governor = methods::method(d.method).map(|m| m.governor);
        let target = d.target;
        let verdict = match governor {
            _ if d.reason_code == ReasonCode::P_BATCH_REFUSED.as_str() => {
                return self.unjudgeable(&at, None, "it was refused with its batch, and the capture does not record which messages shared the batch".to_owned());
            }
            Some(Governor::Resources) if methods::records_one_of_many_targets(d.method) => {
                return self.unjudgeable(
                    &at,
                    None,
                    "its event records one of the resource URIs it names".to_owned(),
                );
            }
            Some(Governor::Resources) => self.policy.evaluate_resource(target),
            Some(Governor::Prompts) => self.policy.evaluate_prompt(target),
            Some(Governor::ClientFeatures) => {
                let feature = ClientFeature::ALL
                    .into_iter()
                    .find(|f| Some(f.as_str()) == target);
                match feature {
                    Some(f) => self.policy.evaluate_client_feature(f),
                    None => {
                        return self.unjudgeable(
                            &at,
                            None,
                            "its event names no client feature".to_owned(),
                        );
                    }
                }
            }
            Some(Governor::PromptsOrResources) => {
                return self.unjudgeable(
                    &at,
                    None,
                    "its event does not record whether its ref named a prompt or a resource"
                        .to_owned(),
                );
            }
            _ => {
                return self.unjudgeable(
                    &at,
                    None,
                    "the method is not one a policy judges by its target".to_owned(),
                );
            }
        };
        let new = verdict.map_or_else(New::through, New::owned);
        self.judged(&at, new);
    }

    /// A listing (SPEC §4.1a): each entry it removed is judged again as the list filter would
    /// judge it (an entry shown is not a decision of its own: a call of it is).
    fn listing(&mut self, l: &ListingRow) {
        if l.replaced_by_error {
            return;
        }
        let method = l.list_name();
        for r in &l.removed {
            let (name, sha) = (&r.name, r.sha256.as_ref());
            let at = At {
                seq: l.seq,
                time: &l.time,
                method,
                name: Some(name),
                listing: true,
                decision: Decision::Deny.as_str(),
                code: &r.reason_code,
            };
            let instructions = r.reason_code == ReasonCode::P_INSTRUCTIONS_DRIFT.as_str()
                || methods::method(method).is_some_and(|m| m.governor == Governor::Instructions);
            let digest = sha.and_then(|s| HexDigest::from_hex(s));
            let refusal = if instructions {
                match self.instructions_refusal(digest.as_ref()) {
                    Ok(r) => r,
                    Err(why) => {
                        self.unjudgeable(&at, Some("pins".to_owned()), why.to_owned());
                        continue;
                    }
                }
            } else {
                match self.entry_refusal(method, name, digest.as_ref()) {
                    Ok(r) => r,
                    Err(why) => {
                        self.unjudgeable(&at, Some("pins".to_owned()), why.to_owned());
                        continue;
                    }
                }
            };
            let new = match refusal {
                Some((code, rule)) => New {
                    decision: Decision::Deny,
                    code: Some(code),
                    rule: rule.map(Cow::Owned),
                },
                None => New::through(),
            };
            self.judged(&at, new);
        }
    }

    /// Whether the list filter removes the entry `name` of a `method` list, and by which rule.
    fn entry_refusal(
        &self,
        method: &str,
        name: &str,
        digest: Option<&HexDigest>,
    ) -> Result<Option<(ReasonCode, Option<String>)>, &'static str> {
        let p = self.policy;
        let hide = p.hide_refused_tools();
        let governor = methods::method(method).map_or(Governor::ToolsListing, |m| m.governor);
        let section = |name: &str| hide && p.governed().contains(&name);
        let code = match governor {
            Governor::ResourcesListing if section("resources") => {
                if methods::lists_templates(method) {
                    p.refuses_resource_template(name)
                } else {
                    p.refuses_resource(name)
                }
            }
            Governor::PromptsListing if section("prompts") => p.refuses_prompt(name),
            Governor::ResourcesListing | Governor::PromptsListing => None,
            _ => match digest {
                Some(d) => p.tool_listing_refusal(name, d, hide, p.pins().is_some()),
                None if p.pins().is_some() => {
                    return Err("its definition digest was not recorded, and pins compare it");
                }
                None => p.tool_listing_refusal(name, &HexDigest::of(b""), hide, false),
            },
        };
        let Some(code) = code else { return Ok(None) };
        // The rule behind a removal, for the rules a replay used.
        let rule = match code {
            ReasonCode::P_TOOL_UNPINNED | ReasonCode::P_TOOL_DRIFT => Some("pins".to_owned()),
            ReasonCode::P_TOOL_DENIED | ReasonCode::P_TOOL_NOT_ALLOWED => {
                match p.judge_recorded_call(name, RecordedArguments::Unknown, digest) {
                    Rejudged::Verdict(v) => v.matched_rule,
                    Rejudged::NeedsArguments { .. } => None,
                }
            }
            _ => {
                let v = match governor {
                    Governor::PromptsListing => p.evaluate_prompt(Some(name)),
                    _ => p.evaluate_resource(Some(name)),
                };
                v.and_then(|v| v.matched_rule)
            }
        };
        Ok(Some((code, rule)))
    }

    /// Whether drifted server instructions (recorded with the digest of their text, if any)
    /// are removed again under the policy's pins.
    fn instructions_refusal(
        &self,
        digest: Option<&HexDigest>,
    ) -> Result<Option<(ReasonCode, Option<String>)>, &'static str> {
        use crate::pins_file::InstructionsPin;
        let drift = Some((ReasonCode::P_INSTRUCTIONS_DRIFT, Some("pins".to_owned())));
        match self.policy.pins().map(|p| p.instructions()) {
            None | Some(InstructionsPin::NotJudged) => Ok(None),
            Some(InstructionsPin::None) => Ok(drift),
            Some(InstructionsPin::Text { sha256, .. }) => match digest {
                Some(d) if d.as_str() == sha256 => Ok(None),
                Some(_) => Ok(drift),
                None => Err("the digest of the drifted instructions was not recorded"),
            },
        }
    }
}
