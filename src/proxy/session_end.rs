//! How a running session ends (SPEC §3 item 7, §3.1): wait for the client's end of input, a
//! worker's error or the server's end of output; give a silent client a bounded grace after the
//! server's output ended; drain; run the bounded cleanup; settle or abandon the workers.

use std::collections::HashSet;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::cancel::Cancel;
use super::workers::{Report, Worker, WorkerError};
use crate::child::{self, KILL_POLL_BOUND};
use crate::config::Plan;

pub(crate) struct RunResult {
    pub proxy_error: bool,
    pub message: Option<String>,
    pub cleanup: child::Cleanup,
    /// The client sent a line longer than `max_line_bytes`.
    pub client_too_long: bool,
}

/// After the server's stdout reached end of file (and the client output was closed), how long
/// the wrapper waits for the client to close its input before it ends the session itself
/// (SPEC §3 item 7: never wait forever for a peer that is gone). An MCP client that sees end of
/// file closes its side at once; one that never looks at its input (the TypeScript SDK waits for
/// the process to exit) gets the session ended for it.
pub(crate) const SERVER_EOF_GRACE: Duration = Duration::from_secs(2);

/// Waits for the session to end, drains, runs the bounded cleanup and settles the workers.
pub(crate) fn run_workers(
    rx: &mpsc::Receiver<Report>,
    child: &mut child::ServerProcess,
    cancel: &Cancel,
    plan: &Plan,
) -> RunResult {
    let mut state = Settled {
        pending: [Worker::ClientToServer, Worker::ServerToClient].into(),
        proxy_error: false,
        message: None,
        max_line_bytes: plan.max_line_bytes,
        ended_by_session: false,
        client_too_long: false,
    };

    // Phase 1: until the client closes its input, a worker fails, or the server's output ends.
    while state.pending.contains(&Worker::ClientToServer)
        && state.pending.contains(&Worker::ServerToClient)
        && !state.proxy_error
    {
        match rx.recv() {
            Ok((w, r)) => state.settle(w, r),
            Err(_) => {
                state.proxy_error = true;
                break;
            }
        }
    }

    // Phase 1b: the server's output ended first and the client output is closed. The client
    // closes its side (client_closed), or sends a line that cannot be forwarded (proxy_error),
    // or stays silent: after SERVER_EOF_GRACE the session ends without it.
    if !state.proxy_error && state.pending.contains(&Worker::ClientToServer) {
        let deadline = Instant::now() + SERVER_EOF_GRACE;
        while state.pending.contains(&Worker::ClientToServer) && !state.proxy_error {
            let now = Instant::now();
            if now >= deadline {
                // Not an error: nothing the client sent went unhandled.
                state.ended_by_session = true;
                cancel.cancel();
                break;
            }
            match rx.recv_timeout(deadline - now) {
                Ok((w, r)) => state.settle(w, r),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    state.proxy_error = true;
                }
            }
        }
    }

    // Phase 2: drain the child's stdout after client EOF (no deadline unless drain_timeout). A
    // grandchild can keep the pipe open after the child exits: once the child has a status, the
    // worker gets the same 2 s window as after a kill.
    let mut drain_window_spent = false;
    if !state.proxy_error && state.pending.contains(&Worker::ServerToClient) {
        let drain_deadline = plan.drain_timeout.map(|d| Instant::now() + d);
        let mut exited_at: Option<Instant> = None;
        loop {
            match rx.recv_timeout(Duration::from_millis(10)) {
                Ok((w, r)) => {
                    state.settle(w, r);
                    break;
                }
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            let now = Instant::now();
            if drain_deadline.is_some_and(|d| now >= d) {
                break;
            }
            // An error (ECHILD: the kernel reaped a child whose SIGCHLD the host ignores) also
            // means the child is gone.
            if exited_at.is_none() && !matches!(child.try_wait(), Ok(None)) {
                exited_at = Some(now);
            }
            if exited_at.is_some_and(|t| now >= t + KILL_POLL_BOUND) {
                drain_window_spent = true;
                break;
            }
        }
    }

    if state.proxy_error {
        // SPEC §3 item 7: on proxy_error, stop both workers and run the cleanup at once.
        cancel.cancel();
    }
    let cleanup = child::cleanup(child);

    // The server→client worker must finish within the same 2 s window, or it is abandoned. When
    // the drain already gave it that window after the child's exit, it is not given another.
    let window_end = if drain_window_spent {
        Instant::now()
    } else if cleanup.kill_requested {
        cleanup.window_start + KILL_POLL_BOUND
    } else {
        Instant::now() + KILL_POLL_BOUND
    };
    while !state.pending.is_empty() {
        let now = Instant::now();
        if now >= window_end {
            break;
        }
        match rx.recv_timeout(window_end - now) {
            Ok((w, r)) => state.settle(w, r),
            Err(_) => break,
        }
    }
    if !state.pending.is_empty() {
        if state.pending.contains(&Worker::ServerToClient) && !state.proxy_error {
            state.proxy_error = true;
            state.message = Some(
                "server output stayed open after the child ended (a grandchild holds the pipe?); worker abandoned"
                    .to_string(),
            );
        }
        cancel.cancel();
        // Cancelled readers return at once; a worker blocked in a write is left behind.
        let give_up = Instant::now() + Duration::from_millis(200);
        while !state.pending.is_empty() {
            let now = Instant::now();
            if now >= give_up {
                break;
            }
            match rx.recv_timeout(give_up - now) {
                Ok((w, _)) => {
                    state.pending.remove(&w);
                }
                Err(_) => break,
            }
        }
    }
    RunResult {
        proxy_error: state.proxy_error,
        message: state.message,
        cleanup,
        client_too_long: state.client_too_long,
    }
}

/// What the session knows about its workers while it waits for them.
struct Settled {
    pending: HashSet<Worker>,
    proxy_error: bool,
    /// The first failure, for diagnostics.
    message: Option<String>,
    max_line_bytes: usize,
    /// The session cancelled the client worker itself after the server's output ended and the
    /// client stayed silent: that cancellation is not an error.
    ended_by_session: bool,
    client_too_long: bool,
}

impl Settled {
    /// Records a worker's end. Any error makes the session a `proxy_error`, except a
    /// cancellation the session itself caused (after an earlier error, or at the end of
    /// [`SERVER_EOF_GRACE`]).
    fn settle(&mut self, w: Worker, r: std::result::Result<(), WorkerError>) {
        self.pending.remove(&w);
        if let Err(e) = r {
            if w == Worker::ClientToServer && matches!(e, WorkerError::TooLong(_)) {
                self.client_too_long = true;
            }
            let benign =
                matches!(e, WorkerError::Cancelled) && (self.proxy_error || self.ended_by_session);
            if !benign {
                self.proxy_error = true;
                if self.message.is_none() {
                    self.message = Some(e.describe(self.max_line_bytes));
                }
            }
        }
    }
}
