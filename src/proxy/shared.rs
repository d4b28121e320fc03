//! The state the session shares with its two I/O workers, and the one error a client line read
//! after the server's output ended turns into.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::ordered_log::{EventLines, LogWriterState, SharedLog};
use super::output::ClientOutput;
use super::pending::PendingRequests;
use super::server_input::{ANSWERS_BOUND, ServerInput, Unanswered};
use super::tools_list::ToolsListWatch;
use super::workers::WorkerError;
use crate::diag::Diag;
use crate::evidence::decision_log::DecisionFormat;
use crate::evidence::lazy_format::LazyFormat;
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
    /// The decision-log writer (SPEC §4.1), written by both paths, sealed by the session.
    pub decision_log: SharedLog,
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
    pub event_format: Option<Mutex<LazyFormat>>,
    /// The server's stdin: client lines, and answers to server requests the policy refused.
    pub server_input: Arc<ServerInput>,
    /// The session id (event ids of decisions the server worker records).
    pub session_id: String,
    /// The judge of answers to governed requests, with a `results` section (SPEC §5.3).
    pub answers: Option<super::output_schemas::AnswerStage>,
}

impl Shared {
    /// Answers a server request to the server (SPEC §5.2: a refused request is answered to the
    /// server), without waiting for the server to read ([`ServerInput::answer`]). Best effort:
    /// past [`ANSWERS_BOUND`] bytes waiting (a server that stopped reading its input), answers
    /// are dropped, and that is said once.
    pub(crate) fn answer_server(&self, line: &[u8]) {
        if let Err(Unanswered::Backlog { first: true }) = self.server_input.answer(line) {
            self.diag.say(&format!(
                "stopped answering the server's refused requests: {} KiB of answers wait for it to read its input",
                ANSWERS_BOUND / 1024
            ));
        }
    }

    /// The event id of decision `seq` (the one constructor,
    /// `evidence::decision_log::decision_id`, as `recorder::Recorder::decision_id`).
    pub(crate) fn decision_id(&self, seq: u64) -> String {
        crate::evidence::decision_log::decision_id(&self.session_id, seq)
    }

    /// Writes one event line the server worker formats (`push` appends it for the `seq` given),
    /// numbered from the session's one counter (`ordered_log::EventLines`). Nothing without a
    /// log.
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

    /// [`Shared::record_event`]; returns the `seq` of the line when one was numbered. The line
    /// is formatted without holding the log and handed to whoever writes it next
    /// (`ordered_log`): this worker never waits for the client path's writes.
    fn write_event(
        &self,
        push: impl FnOnce(&mut DecisionFormat, &mut Vec<u8>, u64),
    ) -> Option<u64> {
        let format = self.event_format.as_ref()?;
        let numbered = self.decision_log.number(&self.decision_seq)?;
        // An event line is a few hundred bytes: one allocation, not one per doubling.
        let mut line = Vec::with_capacity(EVENT_LINE_CAPACITY);
        {
            let mut f = format
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            push(f.get(), &mut line, numbered.seq());
        }
        let seq = numbered.hand_over(line);
        self.report(self.decision_log.write_handed());
        Some(seq)
    }

    /// Runs `f` on the locked decision log's writer ([`SharedLog::with`]); reports the first
    /// failed write.
    pub(crate) fn with_log<R>(
        &self,
        f: impl FnOnce(&mut LogWriterState, &EventLines, &mut Vec<String>) -> R,
    ) -> R {
        let (r, failures) = self.decision_log.with(f);
        self.report(failures);
        r
    }

    /// Says once that the log could not be written (the writer is poisoned after the first
    /// failure: later lines are refused, not failed).
    fn report(&self, failures: Vec<String>) {
        if let Some(e) = failures.first() {
            self.diag.say(&format!(
                "decision log write failed ({e}); later decisions are still enforced but not logged"
            ));
        }
    }
}

/// The bytes an event line of the server path is given room for up front (a result event with
/// a few findings, a listing of a few entries).
const EVENT_LINE_CAPACITY: usize = 1024;
