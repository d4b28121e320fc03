//! The cross-file agreement rules of the capture reader (SPEC §7): protocol.json, the context,
//! the stop record and the log must name the same session, source, server and policy.

use std::fmt;

use super::companions::{ContextView, ProtocolView, StopView};
use super::fields::Reasons;
use super::judgement::ClosureReasonCode;
use crate::capture_files::{CONTEXT, PROTOCOL, STOP};
use crate::outcome::{DecisionLogState, SessionEnd, StopData};

/// Cross-file agreement (SPEC §7).
pub(super) fn check_agreement(
    p: Option<&ProtocolView<'_>>,
    c: Option<&ContextView<'_>>,
    s: Option<&StopView<'_>>,
    r: &mut Reasons,
) {
    if let Some(c) = c {
        if c.id.strip_prefix("evt_context_") != Some(c.session_id) {
            r.push(
                ClosureReasonCode::IdMismatch,
                format!("{CONTEXT}: id {:?} is not evt_context_<session_id>", c.id),
            );
        }
    }
    if let Some(s) = s {
        if s.id.strip_prefix("evt_stop_") != Some(s.data.session_id.as_str()) {
            r.push(
                ClosureReasonCode::IdMismatch,
                format!("{STOP}: id {:?} is not evt_stop_<session_id>", s.id),
            );
        }
    }
    if let (Some(c), Some(s)) = (c, s) {
        let d = &s.data;
        let mut mismatch = |field: &str, stop: &dyn fmt::Display, ctx: &dyn fmt::Display| {
            r.push(
                ClosureReasonCode::ContextMismatch,
                format!("{field}: stop has {stop}, context has {ctx}"),
            );
        };
        if d.session_id != c.session_id {
            mismatch("session_id", &d.session_id, &c.session_id);
        }
        if s.source != c.source {
            mismatch("source", &s.source, &c.source);
        }
        if d.server_id != c.server_id {
            mismatch("server_id", &d.server_id, &c.server_id);
        }
        if u64::from(d.server_pid) != c.server_pid {
            mismatch("server_pid", &d.server_pid, &c.server_pid);
        }
        if d.session_context_id.as_deref() != Some(c.id) {
            let got = d.session_context_id.as_deref().unwrap_or("null");
            mismatch("session_context_id / context id", &got, &c.id);
        }
        if !c.session_stop_requested {
            r.push(
                ClosureReasonCode::ContextMismatch,
                format!("{CONTEXT}: session_stop_requested is false but a stop record exists"),
            );
        }
        let retained = matches!(
            d.decision_log,
            DecisionLogState::Complete | DecisionLogState::Incomplete
        );
        if retained && matches!(c.decision_log, "absent" | "temporary") {
            r.push(
                ClosureReasonCode::ContextMismatch,
                format!(
                    "context decision_log {} contradicts a retained stop decision_log",
                    c.decision_log
                ),
            );
        }
    }
    if let Some(p) = p {
        let mut against = |file: &str, sid: &str, source: &str, server_id: &str| {
            for (field, theirs, ours) in [
                ("session_id", sid, p.session_id),
                ("event_source/source", source, p.event_source),
                ("server_id", server_id, p.server_id),
            ] {
                if theirs != ours {
                    r.push(
                        ClosureReasonCode::ProtocolMismatch,
                        format!("{field}: {PROTOCOL} has {ours:?}, {file} has {theirs:?}"),
                    );
                }
            }
        };
        if let Some(c) = c {
            against(CONTEXT, c.session_id, c.source, c.server_id);
        }
        if let Some(s) = s {
            against(STOP, &s.data.session_id, s.source, &s.data.server_id);
        }
    }
}

/// What made a log `incomplete`, each in its own words: `decision_loss` only when decision
/// events were not written (`decision_events_dropped` > 0), `proxy_error` when the session ended
/// with it (SPEC §4.3 makes that log `incomplete` even when every event was written). A stop with
/// neither already has its `inconsistent_accounting` reason, so nothing is added for it.
pub(super) fn loss_reason(s: &StopData, r: &mut Reasons) {
    let dropped = s.decision_events_dropped.unwrap_or(0);
    if dropped > 0 {
        r.push(
            ClosureReasonCode::DecisionLoss,
            format!(
                "{STOP}: the writer was poisoned and {dropped} decision events were not written"
            ),
        );
    }
    if s.session_end == SessionEnd::ProxyError {
        let written = match s.decision_events_written {
            Some(n) if dropped == 0 => format!("; all {n} decision events were written"),
            _ => String::new(),
        };
        r.push(
            ClosureReasonCode::ProxyError,
            format!("{STOP}: session_end is proxy_error (an I/O or join error ended the session){written}"),
        );
    }
}
