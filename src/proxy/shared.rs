//! The state the session shares with its two I/O workers, and the one error a client line read
//! after the server's output ended turns into.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::output::ClientOutput;
use super::pending::PendingRequests;
use super::tools_list::ToolsListWatch;
use super::workers::WorkerError;
use crate::diag::Diag;
use crate::evidence::decision_log::{DecisionLog, LogAccounting};
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
    /// Client requests forwarded and not yet answered (the idle drain, SPEC §3 item 7).
    pub pending: PendingRequests,
}

/// The decision-log writer as the session holds it.
pub(crate) enum LogWriterState {
    /// No decision log is kept.
    Absent,
    /// Lines are written here (boxed: the writer with its SHA-256 state is a few hundred bytes).
    Open(Box<DecisionLog>),
    /// The session read the accounting: no line may be written (or call forwarded) any more.
    Sealed,
}

impl LogWriterState {
    /// Seals the writer and returns its final accounting (SPEC §4.3), if a log was kept. A
    /// worker still running afterwards can neither write a decision nor forward its call, so
    /// the stop record describes every decision line the log will ever hold.
    pub(crate) fn seal(&mut self) -> Option<LogAccounting> {
        match std::mem::replace(self, LogWriterState::Sealed) {
            LogWriterState::Open(mut log) => {
                log.settle();
                Some(log.accounting())
            }
            LogWriterState::Absent | LogWriterState::Sealed => None,
        }
    }
}
