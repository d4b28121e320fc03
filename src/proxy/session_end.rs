//! How a running session ends (SPEC §3 item 7, §3.1, §3.1a): wait for the client's end of input,
//! a worker's error or the server's end of output; give a silent client a bounded grace after the
//! server's output ended; drain, with an idle deadline once no client request is pending; run the
//! bounded cleanup; settle or abandon the workers; and make sure every thread the session started
//! has ended before it returns.
//!
//! The output worker (server→client) and a slow client: once no process holds the server's
//! stdout any more (`POLLHUP` on the pipe), what is left to deliver is bounded, so the worker is
//! abandoned only after the client accepted no byte for a whole [`KILL_POLL_BOUND`] window, never
//! while it keeps reading. While something still holds the pipe (a grandchild), the worker gets
//! the same window after the child's exit (or the kill), as before.

use std::collections::HashSet;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use super::cancel::Cancel;
use super::shared::Shared;
use super::workers::{Report, Worker, WorkerError};
use crate::config::SessionPlan;
use crate::sys::child::{self, KILL_POLL_BOUND};
use crate::sys::signals::SignalProbe;

pub(crate) struct RunResult {
    pub proxy_error: bool,
    pub message: Option<String>,
    pub cleanup: child::Cleanup,
    /// The client sent a line longer than `max_line_bytes`.
    pub client_too_long: bool,
    /// The drain ended because the server stayed silent for `idle_drain` with no request
    /// pending.
    pub idle_ended: bool,
}

/// After the server's stdout reached end of file (and the client output was closed), how long
/// the wrapper waits for the client to close its input before it ends the session itself
/// (SPEC §3 item 7: never wait forever for a peer that is gone). An MCP client that sees end of
/// file closes its side at once; one that never looks at its input (the TypeScript SDK waits for
/// the process to exit) gets the session ended for it.
pub(crate) const SERVER_EOF_GRACE: Duration = Duration::from_secs(2);

/// How long the session waits, after it cancelled them, for its threads to end before it
/// returns (they end within milliseconds: every wait of theirs is cancellable).
const THREADS_BOUND: Duration = Duration::from_secs(2);

/// How often the session looks at the server and the client while it waits for its workers.
const TICK: Duration = Duration::from_millis(10);

/// What the session watches besides its workers' reports.
pub(crate) struct Watch {
    pub shared: Arc<Shared>,
    /// Bytes read from the server's stdout so far.
    pub server_bytes: Arc<AtomicU64>,
    /// Bytes the client accepted so far.
    pub client_bytes: Arc<AtomicU64>,
    /// A duplicate of the read end of the server's stdout: `POLLHUP` once no process holds the
    /// write end.
    pub server_stdout: crate::sys::fork_close::Tracked<OwnedFd>,
    /// The worker threads, joined once they reported.
    pub threads: Vec<(Worker, JoinHandle<()>)>,
    /// Whether a signal was forwarded to the server (with `forward_signals`).
    pub signals: Option<SignalProbe>,
}

impl Watch {
    /// The server's stdout pipe as poll sees it.
    fn server_stdout_events(&self) -> PollFlags {
        let mut fds = [PollFd::new(self.server_stdout.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(_) => fds[0].revents().unwrap_or(PollFlags::empty()),
            Err(_) => PollFlags::empty(),
        }
    }

    /// No process holds the server's stdout any more (what is left in the pipe is bounded).
    fn server_output_closed(&self) -> bool {
        self.server_stdout_events()
            .intersects(PollFlags::POLLHUP | PollFlags::POLLERR)
    }

    /// The server wrote something the output worker has not read yet (it is busy delivering
    /// earlier output to the client): the server is not idle, whatever the client's pace.
    fn server_output_waiting(&self) -> bool {
        self.server_stdout_events().contains(PollFlags::POLLIN)
    }

    /// SPEC §3 item 9: the host sent the wrapper a signal, it was forwarded to the server's
    /// group, and the server's leader has ended; what still holds the server's output (a
    /// launcher's child that trapped the signal, a daemon that left the group) is not waited
    /// for: the session ends, and the cleanup ends the rest of the tree.
    fn ended_by_signal(&self, child: &mut child::ServerProcess) -> bool {
        self.signals
            .as_ref()
            .is_some_and(|s| s.received().is_some())
            && !matches!(child.try_wait(), Ok(None))
            && !self.server_output_closed()
    }
}

/// When the client last accepted output.
struct ClientProgress {
    seen: u64,
    at: Instant,
}

impl ClientProgress {
    fn new(watch: &Watch) -> Self {
        Self {
            seen: watch.client_bytes.load(Ordering::Relaxed),
            at: Instant::now(),
        }
    }

    /// True when the client accepted no byte for a whole window (measured from now on if it
    /// is the first look).
    fn stalled(&mut self, watch: &Watch, now: Instant) -> bool {
        let bytes = watch.client_bytes.load(Ordering::Relaxed);
        if bytes != self.seen {
            self.seen = bytes;
            self.at = now;
        }
        now >= self.at + KILL_POLL_BOUND
    }
}

const STALLED_CLIENT: &str = "the client accepted no output for 2 s after the server's output ended; the rest was not delivered";
const GRANDCHILD: &str = "server output stayed open after the server's process group was ended (a process that left the group holds the pipe); worker abandoned";

/// Waits for the session to end, drains, runs the bounded cleanup and settles the workers.
pub(crate) fn run_workers(
    rx: &mpsc::Receiver<Report>,
    child: &mut child::ServerProcess,
    cancel: &Cancel,
    plan: &SessionPlan,
    watch: Watch,
) -> RunResult {
    let mut state = WorkerOutcomes {
        pending: [Worker::ClientToServer, Worker::ServerToClient].into(),
        proxy_error: false,
        message: None,
        max_line_bytes: plan.max_line_bytes,
        ended_by_session: false,
        client_too_long: false,
    };
    wait_for_end(rx, child, cancel, &watch, &mut state);
    grace_after_server_eof(rx, cancel, &mut state);

    let drained = if state.proxy_error {
        Drained::default()
    } else {
        drain(rx, child, plan, &watch, &mut state)
    };

    if state.proxy_error {
        // SPEC §3 item 7: on proxy_error, stop both workers and run the cleanup at once.
        cancel.cancel();
    }
    // A server whose output ended is on its way out: its status is given longer to appear.
    let grace = if watch.server_output_closed() {
        child::OUTPUT_CLOSED_EXIT_GRACE
    } else {
        child::EXIT_GRACE
    };
    let cleanup = child::cleanup_within(child, grace);
    settle_output_worker(
        rx,
        &watch,
        &mut state,
        output_window_end(&cleanup, &drained),
    );
    finish_threads(rx, cancel, &mut state, watch.threads);
    RunResult {
        proxy_error: state.proxy_error,
        message: state.message,
        cleanup,
        client_too_long: state.client_too_long,
        idle_ended: drained.idle_ended,
    }
}

/// Phase 1: until the client closes its input, a worker fails, or the server's output ends.
/// A client that stopped reading while it keeps its input open is given up on once the
/// server's output has closed and the client accepted nothing for the whole window.
fn wait_for_end(
    rx: &mpsc::Receiver<Report>,
    child: &mut child::ServerProcess,
    cancel: &Cancel,
    watch: &Watch,
    state: &mut WorkerOutcomes,
) {
    let mut progress: Option<ClientProgress> = None;
    while state.pending.contains(&Worker::ClientToServer)
        && state.pending.contains(&Worker::ServerToClient)
        && !state.proxy_error
    {
        match rx.recv_timeout(TICK * 5) {
            Ok((w, r)) => state.settle(w, r),
            Err(RecvTimeoutError::Timeout) => {
                if watch.server_output_closed() {
                    let p = progress.get_or_insert_with(|| ClientProgress::new(watch));
                    if p.stalled(watch, Instant::now()) {
                        state.abandon_output(STALLED_CLIENT);
                    }
                } else if watch.ended_by_signal(child) {
                    // Not an error: the host asked for the end. Both workers stop here.
                    state.ended_by_session = true;
                    cancel.cancel();
                    break;
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                state.proxy_error = true;
            }
        }
    }
}

/// Phase 1b: the server's output ended first and the client output is closed. The client
/// closes its side (client_closed), or sends a line that cannot be forwarded (proxy_error),
/// or stays silent: after [`SERVER_EOF_GRACE`] the session ends without it.
fn grace_after_server_eof(
    rx: &mpsc::Receiver<Report>,
    cancel: &Cancel,
    state: &mut WorkerOutcomes,
) {
    if state.proxy_error
        || state.ended_by_session
        || !state.pending.contains(&Worker::ClientToServer)
    {
        return;
    }
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

/// When the server→client worker's window after the cleanup ends: it must finish within the
/// same 2 s window, or it is abandoned; when the drain already gave it that window after the
/// child's exit, it gets no other. After a group kill the pipe's last writers are gone (or
/// going): the worker gets the window from the kill, whatever the drain spent before it.
fn output_window_end(cleanup: &child::Cleanup, drained: &Drained) -> Instant {
    if cleanup.kill_requested {
        cleanup.window_start + KILL_POLL_BOUND
    } else if drained.window_spent {
        Instant::now()
    } else {
        Instant::now() + KILL_POLL_BOUND
    }
}

/// Waits for the workers after the cleanup until `window_end`; the output worker still pending
/// then is abandoned. A worker still delivering the bounded rest of a closed output to a client
/// that keeps reading is never abandoned.
fn settle_output_worker(
    rx: &mpsc::Receiver<Report>,
    watch: &Watch,
    state: &mut WorkerOutcomes,
    window_end: Instant,
) {
    let mut progress: Option<ClientProgress> = None;
    while !state.pending.is_empty() {
        match rx.recv_timeout(TICK) {
            Ok((w, r)) => {
                state.settle(w, r);
                continue;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        let now = Instant::now();
        if state.pending.contains(&Worker::ServerToClient) && watch.server_output_closed() {
            let p = progress.get_or_insert_with(|| ClientProgress::new(watch));
            if p.stalled(watch, now) {
                state.abandon_output(STALLED_CLIENT);
                break;
            }
        } else if now >= window_end {
            if state.pending.contains(&Worker::ServerToClient) {
                state.abandon_output(&holders_named(watch));
            }
            break;
        }
    }
}

/// The abandonment message, naming the processes that still hold the server's stdout (their
/// command names through the one text renderer: a server chooses them).
fn holders_named(watch: &Watch) -> String {
    let holders = child::group::pipe_holders(watch.server_stdout.as_fd());
    if holders.is_empty() {
        return GRANDCHILD.to_string();
    }
    let named: Vec<String> = holders
        .iter()
        .map(|(pid, comm)| format!("pid {pid} ({})", crate::text::render(comm)))
        .collect();
    format!("{GRANDCHILD}: held by {}", named.join(", "))
}

/// How the drain ended.
#[derive(Default)]
struct Drained {
    /// The output worker already had its 2 s window after the child's exit.
    window_spent: bool,
    /// The server stayed silent for `idle_drain` with no request pending.
    idle_ended: bool,
}

/// Phase 2: drain the child's stdout after client EOF. No deadline while a client request is
/// pending (unless `drain_timeout`, which bounds the whole drain); once none is, a server that
/// writes nothing for `idle_drain` and keeps its stdout open is treated as done. Output the
/// server wrote and the worker has not read yet (a slow client) counts as writing, and CPU time
/// its process tree used (a server still starting) counts as being busy. A grandchild can
/// keep the pipe open after the child exits: once the child has a status, the worker gets the
/// same 2 s window as after a kill. Once nothing holds the pipe, the worker delivering its rest
/// is waited for as long as the client keeps accepting output.
fn drain(
    rx: &mpsc::Receiver<Report>,
    child: &mut child::ServerProcess,
    plan: &SessionPlan,
    watch: &Watch,
    state: &mut WorkerOutcomes,
) -> Drained {
    let mut drained = Drained::default();
    if !state.pending.contains(&Worker::ServerToClient) {
        return drained;
    }
    let started = Instant::now();
    let drain_deadline = plan.drain_timeout.map(|d| started + d);
    let mut exited_at: Option<Instant> = None;
    let mut server_seen = watch.server_bytes.load(Ordering::Relaxed);
    let mut quiet_since = started;
    // The server's CPU time when the quiet time began (`Some(None)`: not readable).
    let mut cpu_mark: Option<Option<u64>> = None;
    let mut progress: Option<ClientProgress> = None;
    loop {
        match rx.recv_timeout(TICK) {
            Ok((w, r)) => {
                state.settle(w, r);
                if !state.pending.contains(&Worker::ServerToClient) || state.proxy_error {
                    return drained;
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return drained,
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        if drain_deadline.is_some_and(|d| now >= d) {
            return drained;
        }
        if watch.server_output_closed() {
            let p = progress.get_or_insert_with(|| ClientProgress::new(watch));
            if p.stalled(watch, now) {
                state.abandon_output(STALLED_CLIENT);
                return drained;
            }
            continue;
        }
        // An error (ECHILD: the kernel reaped a child whose SIGCHLD the host ignores) also
        // means the child is gone.
        if exited_at.is_none() && !matches!(child.try_wait(), Ok(None)) {
            exited_at = Some(now);
        }
        // A forwarded signal ended the leader: the cleanup ends the rest now, and the worker
        // gets the window after that kill.
        if exited_at.is_some() && watch.ended_by_signal(child) {
            return drained;
        }
        // The leader exited while other processes of its group hold the pipe (a launcher's
        // child): they get the same window, then the cleanup ends the group and the worker
        // gets the window after that kill.
        if exited_at.is_some_and(|t| now >= t + KILL_POLL_BOUND) {
            drained.window_spent = true;
            return drained;
        }
        let server_bytes = watch.server_bytes.load(Ordering::Relaxed);
        if server_bytes != server_seen
            || watch.server_output_waiting()
            || !watch.shared.pending.none()
        {
            server_seen = server_bytes;
            quiet_since = now;
            cpu_mark = None;
        } else if cpu_mark.is_none() {
            cpu_mark = Some(server_cpu(child, exited_at));
        }
        if plan.idle_drain.is_some_and(|d| now >= quiet_since + d) {
            // A server whose processes used CPU during the quiet time is busy (still starting,
            // or working), not idle.
            let cpu = server_cpu(child, exited_at);
            if cpu.is_some() && Some(cpu) != cpu_mark {
                quiet_since = now;
                cpu_mark = Some(cpu);
                continue;
            }
            drained.idle_ended = true;
            return drained;
        }
    }
}

/// The CPU time of the server's process tree while it runs (`None` once it exited: its PID may
/// no longer be its own).
fn server_cpu(child: &child::ServerProcess, exited_at: Option<Instant>) -> Option<u64> {
    if exited_at.is_some() {
        return None;
    }
    child::tree_cpu_ticks(child.id())
}

/// Cancels whatever still runs, waits (bounded) for every worker to report, and joins the
/// threads that did: when the session returns, none of its threads is left touching a
/// descriptor.
fn finish_threads(
    rx: &mpsc::Receiver<Report>,
    cancel: &Cancel,
    state: &mut WorkerOutcomes,
    threads: Vec<(Worker, JoinHandle<()>)>,
) {
    cancel.cancel();
    let deadline = Instant::now() + THREADS_BOUND;
    while !state.pending.is_empty() {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        match rx.recv_timeout(deadline - now) {
            Ok((w, r)) => {
                // After abandonment or an error, a worker's late result changes nothing but
                // what is pending (its cancellation is expected).
                if state.proxy_error || state.ended_by_session {
                    state.pending.remove(&w);
                } else {
                    state.settle(w, r);
                }
            }
            Err(_) => break,
        }
    }
    for (worker, handle) in threads {
        if !state.pending.contains(&worker) {
            let _ = handle.join();
        }
    }
}

/// What the session knows about its workers while it waits for them.
struct WorkerOutcomes {
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

impl WorkerOutcomes {
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

    /// The output worker is given up on (SPEC §3.1): the session is a `proxy_error`.
    fn abandon_output(&mut self, why: &str) {
        if !self.proxy_error {
            self.proxy_error = true;
            self.message = Some(why.to_string());
        }
    }
}
