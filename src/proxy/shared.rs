//! The state the session shares with its two I/O workers, and the one error a client line read
//! after the server's output ended turns into.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::output::ClientOutput;
use super::pending::PendingRequests;
use super::server_input::ServerInput;
use super::tools_list::ToolsListWatch;
use super::workers::WorkerError;
use crate::diag::Diag;
use crate::evidence::decision_log::{DecisionFormat, DecisionLog, Emitted, LogAccounting};
use crate::policy::Policy;

/// A client line read after the server closed its output (SPEC §3 item 7): it can no longer be
/// forwarded, and the session ends as `proxy_error`. Client bytes mean a session existed
/// (SPEC §3 item 8), so the stop record is written.
pub(crate) fn line_after_server_eof(shared: &Shared) -> WorkerError {
    shared.session_message.store(true, Ordering::Relaxed);
    WorkerError::Io(
        "a client line arrived after the server closed its output; it cannot be forwarded"
            .to_string(),
    )
}

/// State shared by the session and its two workers.
pub(crate) struct Shared {
    pub output: ClientOutput,
    pub policy: Policy,
    /// The decision-log writer (SPEC §4.1), written by the client path, sealed by the session.
    pub decision_log: Mutex<LogWriterState>,
    pub diag: Arc<Diag>,
    pub dry_run: bool,
    /// Set by any client message that is not a `server/discover` request (SPEC §3 item 8).
    pub session_message: AtomicBool,
    /// The client's `tools/list` requests and what their answers offered (SPEC §5, §4.4).
    pub tools_list: ToolsListWatch,
    /// Client requests forwarded and not yet answered: which one a server response answers
    /// (SPEC §5, "Answers nobody asked for"; the idle drain, SPEC §3 item 7).
    pub pending: PendingRequests,
    /// Server responses that answered no pending request, dropped (reported once at the end).
    pub unsolicited: AtomicU64,
    /// The session's `seq` counter (`recorder::Recorder::counter`).
    pub decision_seq: Arc<AtomicU64>,
    /// Formats the server worker's event lines (listings, SPEC §4.1a) when a log is kept.
    pub event_format: Option<Mutex<DecisionFormat>>,
    /// The server's stdin: client lines, and answers to server requests the policy refused.
    pub server_input: ServerInput,
    /// The session id (event ids of decisions the server worker records).
    pub session_id: String,
    /// The judge of answers to governed requests, with a `results` section (SPEC §5.3).
    pub answers: Option<super::output_schemas::AnswerStage>,
}

/// The decision-log writer as the session holds it.
pub(crate) enum LogWriterState {
    /// No decision log is kept.
    Absent,
    /// Lines are written here (boxed: the writer with its SHA-256 state is a few hundred bytes).
    Open(Box<OrderedLog>),
    /// The session read the accounting: no line may be written (or call forwarded) any more.
    Sealed,
}

impl LogWriterState {
    /// Seals the writer and returns its final accounting (SPEC §4.3), if a log was kept. A
    /// worker still running afterwards can neither write a decision nor forward its call, so
    /// the stop record describes every decision line the log will ever hold.
    pub(crate) fn seal(&mut self) -> Option<LogAccounting> {
        match std::mem::replace(self, LogWriterState::Sealed) {
            LogWriterState::Open(mut ordered) => {
                // Lines still waiting for a predecessor that was never written are emissions
                // that failed.
                let waiting = ordered.waiting.len() as u64;
                ordered.log.refuse(waiting);
                ordered.log.settle();
                Some(ordered.log.accounting())
            }
            LogWriterState::Absent | LogWriterState::Sealed => None,
        }
    }
}

/// Server-side lines numbered ahead of client decision lines not yet written, at most this many
/// (a listing event each); past it, a line is refused (counted as dropped).
pub(crate) const MAX_WAITING_LINES: usize = 1024;

impl Shared {
    /// The event id of decision `seq` (the one constructor,
    /// `evidence::decision_log::decision_id`, as `recorder::Recorder::decision_id`).
    pub(crate) fn decision_id(&self, seq: u64) -> String {
        crate::evidence::decision_log::decision_id(&self.session_id, seq)
    }

    /// Writes one event line the server worker formats (`push` appends it for the `seq` given),
    /// numbered from the session's one counter while the log is locked (`OrderedLog`). Nothing
    /// without a log.
    pub(crate) fn record_event(&self, push: impl FnOnce(&mut DecisionFormat, &mut Vec<u8>, u64)) {
        self.write_event(push);
    }

    /// Records one decision the server worker made (`push` formats its line for the `seq`
    /// given) and returns its event id. Like a decision of the client path
    /// (`recorder::Recorder::record`), it takes a `seq` from the session's one counter whether
    /// or not a line is written (no decision log, or the log already sealed), so the refusal it
    /// may answer with always names a decision id of the same form on both paths.
    pub(crate) fn record_decision(
        &self,
        push: impl FnOnce(&mut DecisionFormat, &mut Vec<u8>, u64),
    ) -> String {
        self.decision_id(self.record_numbered(push))
    }

    /// [`Shared::record_decision`], returning the `seq` (an answer's event, SPEC §5.3).
    pub(crate) fn record_numbered(
        &self,
        push: impl FnOnce(&mut DecisionFormat, &mut Vec<u8>, u64),
    ) -> u64 {
        self.write_event(push)
            .unwrap_or_else(|| self.decision_seq.fetch_add(1, Ordering::Relaxed))
    }

    /// [`Shared::record_event`]; returns the `seq` of the line when one was numbered.
    fn write_event(
        &self,
        push: impl FnOnce(&mut DecisionFormat, &mut Vec<u8>, u64),
    ) -> Option<u64> {
        let format = self.event_format.as_ref()?;
        let mut slot = self
            .decision_log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let LogWriterState::Open(log) = &mut *slot else {
            return None;
        };
        let seq = self.decision_seq.fetch_add(1, Ordering::Relaxed);
        // An event line is a few hundred bytes: one allocation, not one per doubling.
        let mut line = Vec::with_capacity(EVENT_LINE_CAPACITY);
        {
            let mut f = format
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            push(&mut f, &mut line, seq);
        }
        let failures = log.write_numbered(seq, line);
        drop(slot);
        if let Some(e) = failures.first() {
            self.diag.say(&format!(
                "decision log write failed ({e}); later decisions are still enforced but not logged"
            ));
        }
        Some(seq)
    }
}

/// The bytes an event line of the server path is given room for up front (a result event with
/// a few findings, a listing of a few entries).
const EVENT_LINE_CAPACITY: usize = 1024;

/// The decision log with its lines kept in `seq` order (SPEC §4.1, §4.1a: one `seq` over every
/// event type). The client worker numbers decisions in order and writes them in that order; the
/// server worker numbers a listing event under this writer's lock and hands it over here, where
/// it waits until every earlier `seq` was written. So a client decision line is always the next
/// `seq` not held by a waiting server line.
pub(crate) struct OrderedLog {
    pub(crate) log: DecisionLog,
    /// The `seq` the next line written takes.
    next: u64,
    /// Server lines by `seq`, waiting for their predecessors.
    waiting: std::collections::BTreeMap<u64, Vec<u8>>,
}

impl OrderedLog {
    pub(crate) fn new(log: DecisionLog) -> Self {
        OrderedLog {
            log,
            next: 0,
            waiting: std::collections::BTreeMap::new(),
        }
    }

    /// Writes one line at `self.next`; the error of a failed write.
    fn put(&mut self, line: &[u8], failures: &mut Vec<String>) {
        self.next += 1;
        if let (Emitted::Failed, err) = self.log.write(line) {
            failures.push(err.map(|e| e.to_string()).unwrap_or_default());
        }
    }

    /// Writes the waiting lines whose turn it is.
    fn drain(&mut self, failures: &mut Vec<String>) {
        while let Some(line) = self.waiting.remove(&self.next) {
            self.put(&line, failures);
        }
    }

    /// A client decision line: written after the waiting lines numbered before it. Returns the
    /// errors of failed writes.
    pub(crate) fn write_client(&mut self, line: &[u8]) -> Vec<String> {
        let mut failures = Vec::new();
        self.drain(&mut failures);
        self.put(line, &mut failures);
        self.drain(&mut failures);
        failures
    }

    /// A server line numbered `seq` (taken while this writer was locked): written now if its
    /// turn has come, else when it does.
    pub(crate) fn write_numbered(&mut self, seq: u64, line: Vec<u8>) -> Vec<String> {
        let mut failures = Vec::new();
        if seq == self.next {
            self.put(&line, &mut failures);
            self.drain(&mut failures);
        } else if seq > self.next && self.waiting.len() < MAX_WAITING_LINES {
            self.waiting.insert(seq, line);
        } else {
            self.log.refuse(1);
            failures.push("too many event lines waiting for earlier decisions".to_string());
        }
        failures
    }

    /// Lets the log settle its digest (idle time).
    pub(crate) fn settle(&mut self) {
        self.log.settle();
    }
}
