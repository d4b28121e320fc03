//! The `assay.mcp.result` lines of the decision log (SPEC §5.3), as the general path reads them
//! (the fast parser never accepts one; their `data` type is `decision_line`'s): the checks of its own fields — an
//! action and a reason code that go together, a method whose answers are judged, a digest, an id
//! that is a string or a number, findings of the known kinds, and a `decision_id` naming a
//! decision line earlier in this log ([`Decisions`]).

use super::decision_line::{Action, IsStr, LineReasons, RequestId, ResultData};
use super::fields::is_hex;
use super::judgement::ClosureReasonCode;
use crate::reason_code::ReasonCode;

/// Findings recorded per event at most (the writer's bound).
const MAX_FINDINGS: usize = 64;

/// The kinds of finding a result event records.
const FINDING_KINDS: &[&str] = &[
    "secret",
    "pattern",
    "strip",
    "schema",
    "parts",
    "size",
    "unreadable",
];

/// The `seq`s of the decision lines (`assay.tool.decision`, `assay.mcp.decision`) read so far.
#[derive(Default)]
pub(super) struct Decisions(std::collections::BTreeSet<u64>);

impl Decisions {
    /// Line `seq` is a decision.
    pub(super) fn note(&mut self, seq: u64) {
        self.0.insert(seq);
    }

    /// Whether `id` names a decision line of session `session_id` read before line `i`.
    fn names(&self, id: &str, session_id: &str, i: usize) -> bool {
        id.strip_prefix("evt_decision_")
            .and_then(|s| s.strip_prefix(session_id))
            .and_then(|s| s.strip_prefix('_'))
            .filter(|n| !n.is_empty() && (*n == "0" || !n.starts_with('0')))
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|seq| (seq as usize) < i && self.0.contains(&seq))
    }
}

/// The checks of a result line's own fields (line `i`), with the decision lines read before it.
pub(super) fn check_result(
    i: usize,
    d: &ResultData<'_>,
    decisions: &Decisions,
    lr: &mut LineReasons,
) {
    let mut schema = |what: &str| lr.push(ClosureReasonCode::SchemaMismatch, i, what);
    if crate::methods::judged_answer(&d.method).is_none() {
        schema("data.method is not a method whose answers are judged");
    }
    if !is_hex(&d.sha256, 64) {
        schema("data.sha256 is not 64 lowercase hex characters");
    }
    // A string or a number (serde refused anything else); a number is an integer or not.
    let _ = match &d.request_id {
        RequestId::Num(n) => n.is_f64(),
        RequestId::Str(IsStr) => false,
    };
    match (d.action, d.reason_code == ReasonCode::P_POLICY_ALLOW) {
        (Action::Refused, true) => schema("action refused goes with a refusing reason_code"),
        (Action::Redacted, false) => schema("action redacted goes with reason_code P_POLICY_ALLOW"),
        (Action::Forwarded, false) if d.enforced => {
            schema("an enforced answer with a refusing reason_code is not forwarded")
        }
        _ => {}
    }
    if d.findings.len() > MAX_FINDINGS || d.findings.len() as u64 > d.findings_total {
        schema("data.findings holds more entries than data.findings_total or its bound");
    }
    if d.findings_total > 0 && d.findings.is_empty() {
        schema("data.findings is empty but data.findings_total is not");
    }
    if let Some(k) = d
        .findings
        .iter()
        .position(|f| !FINDING_KINDS.contains(&&*f.0.kind))
    {
        schema(&format!("data.findings[{k}].kind is not a kind of finding"));
    }
    for f in &d.findings {
        let _ = (&f.0.rule, &f.0.path);
    }
    let _ = (d.bytes, d.is_error, &d.parts);
    if let Some(id) = d.decision_id.as_deref() {
        if !decisions.names(id, &d.session_id, i) {
            lr.push(
                ClosureReasonCode::IdMismatch,
                i,
                "data.decision_id names no decision line before it in this log",
            );
        }
    }
}
