//! The decision recorder (SPEC §4.1), on the client worker's thread: numbers every decision
//! (`seq`, contiguous over written and failed emissions) and formats its line for the decision
//! log when there is one. Writing the line is the emitter's job (`emitter::ActionRunner`), after which
//! the call is forwarded.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::evidence::decision_log::{DecisionEntry, McpDecisionEntry};
use crate::evidence::lazy_format::LazyFormat;

/// Numbers decisions and formats their log lines.
pub(crate) struct Recorder {
    format: Option<LazyFormat>,
    session_id: String,
    /// The session's one `seq` counter, shared with the server worker's listing events
    /// (SPEC §4.1a), which number theirs in `ordered_log::EventLines`.
    seq: Arc<AtomicU64>,
    /// The `seq` of the last decision numbered (the answer to its request names it, SPEC §5.3).
    last: Option<u64>,
}

impl Recorder {
    /// A recorder numbering from `seq` 0; `format` is present when a decision log is kept.
    pub(crate) fn new(format: Option<LazyFormat>, session_id: &str) -> Self {
        Self {
            format,
            session_id: session_id.to_string(),
            seq: Arc::new(AtomicU64::new(0)),
            last: None,
        }
    }

    /// The session's `seq` counter.
    pub(crate) fn counter(&self) -> Arc<AtomicU64> {
        self.seq.clone()
    }

    /// Numbers one decision and, when a log is kept, appends its line to `out`. Returns the
    /// `seq` and whether a line was appended.
    pub(crate) fn record(&mut self, out: &mut Vec<u8>, entry: &DecisionEntry<'_>) -> (u64, bool) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        self.last = Some(seq);
        match self.format.as_mut() {
            Some(f) => {
                f.get().push_line(out, seq, entry);
                (seq, true)
            }
            None => (seq, false),
        }
    }

    /// [`Recorder::record`] for a message of another governed method (SPEC §4.1a
    /// `assay.mcp.decision`): the same `seq`, the same log.
    pub(crate) fn record_mcp(
        &mut self,
        out: &mut Vec<u8>,
        entry: &McpDecisionEntry<'_>,
    ) -> (u64, bool) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        self.last = Some(seq);
        match self.format.as_mut() {
            Some(f) => {
                f.get().push_mcp_decision_line(out, seq, entry);
                (seq, true)
            }
            None => (seq, false),
        }
    }

    /// The `seq` of the last decision numbered.
    pub(crate) fn last(&self) -> Option<u64> {
        self.last
    }

    /// The event id of decision `seq` (built only when a response or a message needs it).
    pub(crate) fn decision_id(&self, seq: u64) -> String {
        crate::evidence::decision_log::decision_id(&self.session_id, seq)
    }
}
