//! The decision recorder (SPEC §4.1), on the client worker's thread: numbers every decision
//! (`seq`, contiguous over written and failed emissions) and names its event. Formatting and
//! writing the line is the stage's job (`emitter::Stage`), after which the call is forwarded.

/// Numbers decisions.
pub(crate) struct Recorder {
    session_id: String,
    seq: u64,
}

impl Recorder {
    /// A recorder numbering from `seq` 0.
    pub(crate) fn new(session_id: &str) -> Self {
        Self {
            session_id: session_id.to_string(),
            seq: 0,
        }
    }

    /// The `seq` of the next decision.
    pub(crate) fn next(&mut self) -> u64 {
        let seq = self.seq;
        self.seq += 1;
        seq
    }

    /// The event id of decision `seq` (built only when a response or a message needs it).
    pub(crate) fn decision_id(&self, seq: u64) -> String {
        format!("evt_decision_{}_{seq}", self.session_id)
    }
}
