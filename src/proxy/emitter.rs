//! The second half of the client→server path: for each client line, in order, write its decision
//! line (whole, SPEC §4.1) and only then forward the line to the server, answer it, or drop it.
//! A batch's decision lines are written together, before any of its lines is carried out.
//!
//! The client worker classifies and judges a line and describes what must happen to it as an
//! [`LineAction`] in a [`Batch`] (the decision line and the bytes to send, in one reused byte arena).
//! Whoever holds the [`ActionRunner`] (the server's stdin and the decision-log writer) carries the actions
//! out:
//!
//! - when the client waits for answers (its input ran dry), the client worker itself runs its
//!   actions at once and flushes — one request in flight costs no thread hand-off;
//! - when the client pipelines (more input is already buffered), full batches go to an emitter
//!   thread, started on first need, so judging the next lines overlaps with writing the
//!   decisions of the previous ones (their SHA-256, for the log's prefix digest, runs on a
//!   third thread then: `evidence::prefix_digest`). The pipeline
//!   holds at most two batches ([`BATCH_BYTES`] each, plus one action) besides the one being filled.
//!
//! Order is kept: actions run in the order they were added, whichever thread runs them, because the
//! client worker runs actions itself only when no batch is pending and the runner is free. Once the
//! session has sealed the decision log ([`LogWriterState::seal`]), no decision is written and no call
//! is forwarded any more.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use super::cancel::is_cancelled;
use super::ordered_log::LogWriterState;
use super::pending::Notes;
use super::shared::Shared;
use super::workers::WorkerError;
use crate::sys::signals::block_write_signals_in_this_thread;

/// A batch is handed to the emitter thread once its arena holds this many bytes (about 140
/// calls with their decision lines: few thread hand-offs while a client pipelines).
pub(crate) const BATCH_BYTES: usize = 128 * 1024;

/// Lines longer than this are not copied into a batch: the client worker waits until every
/// earlier action is done, then runs the line's own actions itself, reading the line in place (memory
/// stays bounded by the line buffer, SPEC §3 item 6).
pub(crate) const QUEUED_LINE_MAX: usize = 64 * 1024;

/// A byte range of a batch's arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    start: usize,
    end: usize,
}

/// Which bytes to forward.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source {
    /// Copied into the arena.
    Arena(Span),
    /// The line being handled, passed to [`ActionRunner::run`] (actions run at once only).
    Current,
}

/// What happens to a line once its decision (if any) is written.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Delivery {
    /// Forward the bytes to the server.
    Forward(Source),
    /// Write the bytes (a whole line, newline included) to the client.
    Respond(Span),
    /// Nothing (a refused notification).
    Drop,
}

/// A decision line in a batch's arena, with its `seq` (its place in the log).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DecisionLine {
    pub seq: u64,
    pub line: Span,
}

/// One line's work.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LineAction {
    /// The decision line to write first, when the line is a governed message and a log is kept.
    pub decision: Option<DecisionLine>,
    pub delivery: Delivery,
}

/// Ops and the bytes they refer to. Reused: no allocation once warm.
#[derive(Default)]
pub(crate) struct Batch {
    bytes: Vec<u8>,
    ops: Vec<LineAction>,
    /// The requests and cancellations its lines carry, noted as pending before they are
    /// forwarded.
    notes: Notes,
}

impl Batch {
    /// The arena, to append a decision line to; [`Batch::span_from`] names what was appended.
    pub(crate) fn arena(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// The arena's length (where the next appended bytes start).
    pub(crate) fn mark(&self) -> usize {
        self.bytes.len()
    }

    /// The bytes appended since `mark`.
    pub(crate) fn span_from(&self, mark: usize) -> Span {
        Span {
            start: mark,
            end: self.bytes.len(),
        }
    }

    /// Copies `b` into the arena.
    pub(crate) fn put(&mut self, b: &[u8]) -> Span {
        let mark = self.mark();
        self.bytes.extend_from_slice(b);
        self.span_from(mark)
    }

    pub(crate) fn push(&mut self, op: LineAction) {
        self.ops.push(op);
    }

    /// What the lines of this batch ask of the pending set.
    pub(crate) fn notes(&mut self) -> &mut Notes {
        &mut self.notes
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub(crate) fn clear(&mut self) {
        self.ops.clear();
        self.notes.clear();
        self.bytes.clear();
        if self.bytes.capacity() > 4 * BATCH_BYTES + 2 * QUEUED_LINE_MAX {
            self.bytes = Vec::new();
        }
    }

    fn get(&self, s: Span) -> &[u8] {
        self.bytes.get(s.start..s.end).unwrap_or_default()
    }
}

/// The way to the server's stdin (`shared.server_input`) and to the decision log: what carrying
/// out an action needs.
pub(crate) struct ActionRunner {
    shared: Arc<Shared>,
    /// The thread running the actions waited for them: it has time to spare, and the decision
    /// lines it writes together are hashed for the log's digest at once, while they are in its
    /// cache ([`super::ordered_log::OrderedLog::write_clients_hashing_here`]). Set by the
    /// emitter thread for one batch.
    spare_time: bool,
    /// Whoever holds the runner wrote to the client output since it last flushed it (an answer
    /// of the wrapper's own: [`Delivery::Respond`], a refused batch). Only then does
    /// [`ActionRunner::idle`] take the client output's lock: the server worker writes every
    /// answer of the server under that lock and flushes what it wrote before it waits.
    client_unflushed: bool,
}

fn to_server(e: std::io::Error) -> WorkerError {
    if is_cancelled(&e) {
        return WorkerError::Cancelled;
    }
    WorkerError::Io(format!("writing to the server: {e}"))
}

pub(crate) fn to_client(e: std::io::Error) -> WorkerError {
    if is_cancelled(&e) {
        return WorkerError::Cancelled;
    }
    WorkerError::Io(format!("writing to the client: {e}"))
}

impl ActionRunner {
    /// A runner writing to `shared.server_input`, which the session connected to the server's
    /// stdin.
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            spare_time: false,
            client_unflushed: false,
        }
    }

    /// Notes that the caller wrote to the client output (`Shared::output`) on this path: the
    /// next [`ActionRunner::idle`] flushes it.
    pub(crate) fn wrote_to_client(&mut self) {
        self.client_unflushed = true;
    }

    /// Writes decision `seq`'s line (SPEC §4.1: whole, in one write), after the event lines
    /// numbered before it. A failed write poisons the writer and is reported once; the decision
    /// is still enforced. Fails only once the session sealed the log.
    pub(crate) fn write_decision(&mut self, seq: u64, line: &[u8]) -> Result<(), WorkerError> {
        self.write_decisions(&[(seq, line)])
    }

    /// Writes decision lines, `(seq, line)` in `seq` order, together
    /// ([`super::ordered_log::OrderedLog::write_clients`]), as [`ActionRunner::write_decision`]
    /// writes one.
    fn write_decisions(&mut self, lines: &[(u64, &[u8])]) -> Result<(), WorkerError> {
        if lines.is_empty() {
            return Ok(());
        }
        let spare_time = self.spare_time;
        self.shared.with_log(|slot, events, failures| match slot {
            LogWriterState::Open(log) if spare_time => {
                log.write_clients_hashing_here(events, lines, failures);
                Ok(())
            }
            LogWriterState::Open(log) => {
                log.write_clients(events, lines, failures);
                Ok(())
            }
            LogWriterState::Absent => Ok(()),
            LogWriterState::Sealed => Err(WorkerError::Io(
                "the session ended before this call's decision could be written".to_string(),
            )),
        })
    }

    /// Forwards bytes to the server (buffered).
    pub(crate) fn forward(&mut self, line: &[u8]) -> Result<(), WorkerError> {
        self.shared.server_input.write_all(line).map_err(to_server)
    }

    /// Carries out `batch`'s actions in order, its requests noted as pending first; `current`
    /// is the line [`Source::Current`] names. The batch's decision lines are written first,
    /// together (each whole, in `seq` order: SPEC §4.1), so every decision is written before
    /// its call is forwarded, answered or dropped — and before any later call of the batch is.
    pub(crate) fn run(&mut self, batch: &mut Batch, current: &[u8]) -> Result<(), WorkerError> {
        self.shared.pending.note_all(&mut batch.notes);
        let decision_of = |op: &LineAction| op.decision.map(|d| (d.seq, batch.get(d.line)));
        match batch.ops.as_slice() {
            // One line (one request in flight) needs no list.
            [op] => self.write_decisions(decision_of(op).as_slice())?,
            ops => self.write_decisions(&ops.iter().filter_map(decision_of).collect::<Vec<_>>())?,
        }
        for op in &batch.ops {
            match op.delivery {
                Delivery::Forward(Source::Arena(s)) => self.forward(batch.get(s))?,
                Delivery::Forward(Source::Current) => self.forward(current)?,
                Delivery::Respond(s) => {
                    self.client_unflushed = true;
                    self.shared
                        .output
                        .write_line(batch.get(s))
                        .map_err(to_client)?;
                }
                Delivery::Drop => {}
            }
        }
        Ok(())
    }

    /// Nothing more to do for now: flush both ways (the client output only when this path wrote
    /// to it), then let the decision log settle its digest (off the path between a decision and
    /// its call).
    pub(crate) fn idle(&mut self) -> Result<(), WorkerError> {
        self.shared.server_input.flush().map_err(to_server)?;
        if std::mem::take(&mut self.client_unflushed) {
            self.shared.output.flush().map_err(to_client)?;
        }
        self.shared.with_log(|slot, _, _| {
            if let LogWriterState::Open(log) = slot {
                log.settle();
            }
        });
        Ok(())
    }

    /// The client's input ended: flush and close the server's stdin, flush the client output.
    fn close(self) -> Result<(), WorkerError> {
        self.shared.server_input.close().map_err(to_server)?;
        self.shared.output.flush().map_err(to_client)
    }
}

impl Drop for ActionRunner {
    /// However the client→server path ends, the server reads end of input (as when the runner
    /// owned the server's stdin); after [`ActionRunner::close`] this does nothing.
    fn drop(&mut self) {
        let _ = self.shared.server_input.close();
    }
}

struct HandoffState {
    /// Free for whoever runs actions; `None` while someone does.
    runner: Option<ActionRunner>,
    /// The batch handed to the emitter thread and not yet taken.
    pending: Batch,
    /// The emitter thread failed; nothing runs after that.
    dead: bool,
    /// Its error, until the client worker reports it.
    failed: Option<WorkerError>,
    /// The emitter thread ends once nothing is pending.
    closing: bool,
    emitter_waiting: bool,
    client_waiting: bool,
}

impl HandoffState {
    /// The emitter thread's error (reported once; later callers get a short reminder).
    fn failure(&mut self) -> WorkerError {
        self.failed
            .take()
            .unwrap_or_else(|| WorkerError::Io("the client→server path failed earlier".to_string()))
    }
}

struct BatchHandoff {
    state: Mutex<HandoffState>,
    /// The emitter thread waits here for a pending batch.
    work: Condvar,
    /// The client worker waits here for room (no pending batch) or the free runner.
    room: Condvar,
}

impl BatchHandoff {
    fn lock(&self) -> MutexGuard<'_, HandoffState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The client worker waits for the emitter thread to take the pending batch or give back
    /// the runner (or fail).
    fn wait_room<'g>(
        &'g self,
        mut st: MutexGuard<'g, HandoffState>,
    ) -> MutexGuard<'g, HandoffState> {
        st.client_waiting = true;
        st = self.room.wait(st).unwrap_or_else(PoisonError::into_inner);
        st.client_waiting = false;
        st
    }

    /// The emitter thread ends once nothing is pending.
    fn close(&self) {
        self.lock().closing = true;
        self.work.notify_one();
    }
}

/// The client worker's side of the pipeline.
pub(crate) struct Emitter {
    gate: Arc<BatchHandoff>,
    thread: Option<JoinHandle<()>>,
    /// No emitter thread could be started: the client worker runs every action itself.
    no_thread: bool,
    /// [`Emitter::with_runner`] ran since the last flush: its bytes may still be buffered.
    unflushed: bool,
    /// The actions being collected.
    local: Batch,
}

impl Emitter {
    pub(crate) fn new(runner: ActionRunner) -> Self {
        Self {
            gate: Arc::new(BatchHandoff {
                state: Mutex::new(HandoffState {
                    runner: Some(runner),
                    pending: Batch::default(),
                    dead: false,
                    failed: None,
                    closing: false,
                    emitter_waiting: false,
                    client_waiting: false,
                }),
                work: Condvar::new(),
                room: Condvar::new(),
            }),
            thread: None,
            no_thread: false,
            unflushed: false,
            local: Batch::default(),
        }
    }

    /// The batch the next actions go to.
    pub(crate) fn local(&mut self) -> &mut Batch {
        &mut self.local
    }

    /// After each line: a full batch goes to the emitter thread.
    pub(crate) fn line_done(&mut self) -> Result<(), WorkerError> {
        if self.local.mark() >= BATCH_BYTES {
            self.hand_off(false)?;
        }
        Ok(())
    }

    /// The client's input ran dry (the reader is about to wait for more): every collected action
    /// runs now — on this thread when the runner is free, else queued behind the emitter's work,
    /// which flushes when it runs out.
    pub(crate) fn input_dry(&mut self) -> Result<(), WorkerError> {
        if !self.local.is_empty() {
            return self.hand_off(true);
        }
        if self.unflushed {
            // What ran in place (a JSON-RPC batch, a long line) goes out before the client waits
            // for its answer.
            self.with_runner(ActionRunner::idle)??;
            self.unflushed = false;
        }
        Ok(())
    }

    fn hand_off(&mut self, dry: bool) -> Result<(), WorkerError> {
        let gate = self.gate.clone();
        let mut st = gate.lock();
        if st.dead {
            return Err(st.failure());
        }
        if (dry || self.no_thread) && st.pending.is_empty() {
            if let Some(mut runner) = st.runner.take() {
                drop(st);
                let r = runner
                    .run(&mut self.local, &[])
                    .and_then(|()| if dry { runner.idle() } else { Ok(()) });
                self.unflushed = !dry;
                self.local.clear();
                gate.lock().runner = Some(runner);
                return r;
            }
        }
        // Wait for room: the emitter thread takes the pending batch, or fails.
        while !st.pending.is_empty() {
            if st.dead {
                return Err(st.failure());
            }
            st = gate.wait_room(st);
        }
        if st.dead {
            return Err(st.failure());
        }
        std::mem::swap(&mut self.local, &mut st.pending);
        let wake = st.emitter_waiting;
        drop(st);
        if self.thread.is_none() {
            self.start_thread()?;
        } else if wake {
            gate.work.notify_one();
        }
        Ok(())
    }

    fn start_thread(&mut self) -> Result<(), WorkerError> {
        let gate = self.gate.clone();
        let started = std::thread::Builder::new()
            .name("assay-client-emit".to_string())
            .spawn(move || emitter_thread(&gate));
        match started {
            Ok(handle) => {
                self.thread = Some(handle);
                Ok(())
            }
            Err(_) => {
                // Run the pending batch here, and every later one too.
                self.no_thread = true;
                let mut batch = std::mem::take(&mut self.gate.lock().pending);
                let r = self.with_runner(|runner| runner.run(&mut batch, &[]));
                batch.clear();
                r?
            }
        }
    }

    /// Runs `f` with the runner once every action handed off before is done (a line that is not
    /// queued: a JSON-RPC batch, a very long line).
    pub(crate) fn with_runner<R>(
        &mut self,
        f: impl FnOnce(&mut ActionRunner) -> R,
    ) -> Result<R, WorkerError> {
        if !self.local.is_empty() {
            self.hand_off(false)?;
        }
        let mut runner = self.take_runner()?;
        let r = f(&mut runner);
        self.gate.lock().runner = Some(runner);
        self.unflushed = true;
        Ok(r)
    }

    /// The client's input ended: every action done, the server's stdin flushed and closed, the
    /// client output flushed, the emitter thread ended.
    pub(crate) fn finish(mut self) -> Result<(), WorkerError> {
        let r = self.input_dry().and_then(|()| self.take_runner());
        self.stop_thread();
        r?.close()
    }

    /// On an error of the client worker: every action collected so far is still carried out (best
    /// effort: those lines were accepted), then the thread ends.
    pub(crate) fn abandon(mut self) {
        let _ = self
            .input_dry()
            .and_then(|()| self.take_runner())
            .map(ActionRunner::close);
        self.stop_thread();
    }

    /// The runner, once every action handed off before is done (waits for the emitter thread).
    fn take_runner(&mut self) -> Result<ActionRunner, WorkerError> {
        let gate = self.gate.clone();
        let mut st = gate.lock();
        loop {
            if st.dead {
                return Err(st.failure());
            }
            if st.pending.is_empty() {
                if let Some(runner) = st.runner.take() {
                    return Ok(runner);
                }
            }
            st = gate.wait_room(st);
        }
    }

    fn stop_thread(&mut self) {
        self.gate.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Emitter {
    /// Never leaves the emitter thread waiting for work that cannot come (it ends once nothing is
    /// pending, dropping the runner and so closing the server's stdin).
    fn drop(&mut self) {
        self.gate.close();
    }
}

/// The emitter thread: takes pending batches and runs them with the runner; flushes when nothing
/// more is pending.
fn emitter_thread(gate: &BatchHandoff) {
    // SIGPIPE and SIGXFSZ become EPIPE / EFBIG here too (SPEC §4.1), as on the workers.
    block_write_signals_in_this_thread();
    let mut batch = Batch::default();
    loop {
        let (mut runner, wake, waited) = {
            let mut st = gate.lock();
            let mut waited = false;
            loop {
                if st.dead {
                    return;
                }
                if !st.pending.is_empty() {
                    if let Some(runner) = st.runner.take() {
                        std::mem::swap(&mut batch, &mut st.pending);
                        break (runner, st.client_waiting, waited);
                    }
                } else if st.closing {
                    return;
                }
                st.emitter_waiting = true;
                st = gate.work.wait(st).unwrap_or_else(PoisonError::into_inner);
                st.emitter_waiting = false;
                waited = true;
            }
        };
        // A batch that was not waiting when the last one was done: this thread is the slower
        // one, and leaves the hashing of its lines to a thread of its own.
        runner.spare_time = waited;
        if wake {
            gate.room.notify_one();
        }
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runner.run(&mut batch, &[])?;
            if gate.lock().pending.is_empty() {
                runner.idle()?;
            }
            Ok(())
        }))
        .unwrap_or(Err(WorkerError::Panicked));
        runner.spare_time = false;
        batch.clear();
        let mut st = gate.lock();
        st.runner = Some(runner);
        if let Err(e) = ran {
            st.dead = true;
            st.failed = Some(e);
        }
        let wake = st.client_waiting;
        drop(st);
        if wake {
            gate.room.notify_one();
        }
    }
}
