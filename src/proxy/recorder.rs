//! The decision recorder (SPEC §4.1): numbers every decision (`seq`, contiguous over written
//! and failed emissions) and hands it to the decision log writer when there is one.

use crate::diag::Diag;
use crate::evidence::decision_log::{DecisionEntry, DecisionLog, Emitted, LogAccounting};
use crate::policy::Verdict;

/// Records decisions: assigns `seq` and writes to the decision log when there is one.
pub(crate) struct Recorder {
    log: Option<DecisionLog>,
    session_id: String,
    seq: u64,
}

impl Recorder {
    /// A recorder numbering from `seq` 0, writing to `log` when there is one.
    pub(crate) fn new(log: Option<DecisionLog>, session_id: &str) -> Self {
        Self {
            log,
            session_id: session_id.to_string(),
            seq: 0,
        }
    }

    /// Hashes the decision lines written since the last call (see [`DecisionLog::settle`]).
    pub(crate) fn settle(&mut self) {
        if let Some(log) = self.log.as_mut() {
            log.settle();
        }
    }

    /// The accounting of the decision log writer, if there is one (SPEC §4.1).
    pub(crate) fn accounting(&self) -> Option<LogAccounting> {
        self.log.as_ref().map(DecisionLog::accounting)
    }

    /// Records one decision and returns its `seq`.
    pub(crate) fn record(
        &mut self,
        diag: &Diag,
        tool: Option<&str>,
        tool_call_id: Option<&str>,
        verdict: &Verdict,
        arguments_sha256: Option<&str>,
    ) -> u64 {
        let seq = self.seq;
        self.seq += 1;
        if let Some(log) = self.log.as_mut() {
            let (emitted, err) = log.emit(
                seq,
                &DecisionEntry {
                    tool,
                    tool_call_id,
                    decision: verdict.decision,
                    reason_code: verdict.reason_code,
                    reason: &verdict.reason,
                    matched_rule: verdict.matched_rule.as_deref(),
                    arguments_sha256,
                },
            );
            if emitted == Emitted::Failed {
                diag.say(&format!(
                    "decision log write failed ({}); later decisions are still enforced but not logged",
                    err.map(|e| e.to_string()).unwrap_or_default()
                ));
            }
        }
        seq
    }

    /// The event id of decision `seq` (built only when a response or a message needs it).
    pub(crate) fn decision_id(&self, seq: u64) -> String {
        format!("evt_decision_{}_{seq}", self.session_id)
    }
}
