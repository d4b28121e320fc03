//! The decision log as both paths write it (SPEC §4.1, §4.1a: one `seq` over every event type,
//! lines in `seq` order, each whole; the lines at hand at one time share one write).
//!
//! The client path numbers its decisions in order and writes each one before forwarding its
//! call. The server path's events (listings, answers, the server's own requests) take their `seq`
//! from the same counter ([`EventLines::number`]), are formatted without holding the log, and are
//! handed over ([`Numbered::hand_over`]) to whoever holds the log next, which writes them in
//! `seq` order: the server worker itself when the log is free, else the holder before it lets go
//! ([`OrderedLog::drain`], `Shared::with_log`). So the server worker never waits for the client
//! path's writes, which hold the log for their `write(2)`; a client decision line waits only for
//! event lines numbered before it, and only while one of them is still being formatted.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering, fence};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, TryLockError};

use super::pending::MAX_TRACKED;
use crate::evidence::decision_log::{DecisionLog, Emitted, LogAccounting};

/// Event lines numbered and not yet written, at most this many; past it, a line is refused
/// (counted as dropped, the log `incomplete`).
///
/// An event line waits only while the client path has numbered decisions not yet written (a
/// few batches of client lines), or for a moment while the line is formatted. The lines that can
/// arrive in that window are the events of answers to requests already forwarded and awaiting
/// theirs — a listing event or an `assay.mcp.result` event each, at most one per tracked request
/// ([`MAX_TRACKED`]: an answer to an untracked request has no event) — and a margin for the
/// server's own requests the policy refuses. A client that pipelines thousands of calls
/// therefore never loses an event; only a server that floods refused requests of its own can
/// reach the bound, and that loss is counted. Each waiting line is a few hundred bytes: the
/// bound holds a few MiB at most.
pub(crate) const MAX_WAITING_LINES: usize = MAX_TRACKED + 4096;

/// The decision log as the session's threads share it: the writer, and the event lines on their
/// way to it.
pub(crate) struct SharedLog {
    writer: Mutex<LogWriterState>,
    events: EventLines,
}

impl SharedLog {
    pub(crate) fn new(writer: LogWriterState) -> Self {
        SharedLog {
            writer: Mutex::new(writer),
            events: EventLines::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LogWriterState> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the locked writer (with the event lines, and the errors of failed writes to
    /// add to), then lets go of it ([`SharedLog::release`]). Returns `f`'s result and the
    /// errors.
    pub(crate) fn with<R>(
        &self,
        f: impl FnOnce(&mut LogWriterState, &EventLines, &mut Vec<String>) -> R,
    ) -> (R, Vec<String>) {
        let mut failures = Vec::new();
        let mut slot = self.lock();
        let r = f(&mut slot, &self.events, &mut failures);
        self.release(slot, &mut failures);
        (r, failures)
    }

    /// Takes the next `seq` from `counter` for an event line ([`EventLines::number`]).
    pub(crate) fn number<'a>(&'a self, counter: &AtomicU64) -> Option<Numbered<'a>> {
        self.events.number(counter)
    }

    /// After a hand-over: writes the lines whose turn has come when the log is free; else its
    /// holder does before letting go. Returns the errors of failed writes.
    pub(crate) fn write_handed(&self) -> Vec<String> {
        let mut failures = Vec::new();
        match self.writer.try_lock() {
            Ok(slot) => self.release(slot, &mut failures),
            Err(TryLockError::Poisoned(p)) => self.release(p.into_inner(), &mut failures),
            Err(TryLockError::WouldBlock) => {}
        }
        failures
    }

    /// Writes the event lines whose turn has come and lets go of the writer; if a line was
    /// handed over while it was held (its worker found the writer taken and left the line to
    /// this holder), takes the writer again and writes it.
    ///
    /// Why no line is left behind: the worker that hands a line over counts the hand-over, then
    /// tries the lock; this holder lets go, then reads the count. With a sequentially consistent
    /// fence between each pair, at least one of them sees the other's step: either the worker
    /// takes the lock and writes its line, or this holder sees the count move and looks again.
    fn release<'a>(&'a self, slot: MutexGuard<'a, LogWriterState>, failures: &mut Vec<String>) {
        self.release_after(slot, failures, || {});
    }

    /// [`SharedLog::release`], running `drained` after each drain, before letting go (a test
    /// hands a line over there).
    fn release_after<'a>(
        &'a self,
        mut slot: MutexGuard<'a, LogWriterState>,
        failures: &mut Vec<String>,
        mut drained: impl FnMut(),
    ) {
        loop {
            let seen = self.events.handed();
            if let LogWriterState::Open(log) = &mut *slot {
                log.drain(&self.events, failures);
            }
            drained();
            drop(slot);
            fence(Ordering::SeqCst);
            if self.events.handed() == seen {
                return;
            }
            slot = self.lock();
        }
    }

    /// Seals the writer and returns its final accounting (SPEC §4.3), if a log was kept
    /// ([`LogWriterState::seal`]).
    pub(crate) fn seal(&self) -> Option<LogAccounting> {
        self.lock().seal(&self.events)
    }
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
    /// Seals the writer and returns its final accounting (SPEC §4.3), if a log was kept. Event
    /// lines whose turn has come are written first; one still being formatted, or waiting for a
    /// predecessor that was never written, is an emission that failed. A worker still running
    /// afterwards can neither write a line nor forward its call, nor number an event line, so
    /// the stop record describes every line the log will ever hold.
    pub(crate) fn seal(&mut self, events: &EventLines) -> Option<LogAccounting> {
        match std::mem::replace(self, LogWriterState::Sealed) {
            LogWriterState::Open(mut ordered) => {
                let (left, refused) = events.close();
                ordered.log.refuse(refused);
                let mut failures = Vec::new();
                let mut unwritten = 0u64;
                for (seq, line) in left {
                    match line {
                        Some(line) if seq == ordered.next => ordered.put(seq, &line, &mut failures),
                        _ => unwritten += 1,
                    }
                }
                ordered.log.refuse(unwritten);
                ordered.log.settle();
                Some(ordered.log.accounting())
            }
            LogWriterState::Absent | LogWriterState::Sealed => None,
        }
    }
}

/// The decision log with its lines kept in `seq` order.
///
/// The lines of one call of [`OrderedLog::write_clients`] or [`OrderedLog::drain`] are staged
/// in `seq` order and written together ([`DecisionLog::write_lines`]: each line whole, several
/// per `write(2)`), with the accounting one write per line would give: a refusal found while
/// staging first writes what was staged before it, as it came after those writes.
pub(crate) struct OrderedLog {
    log: DecisionLog,
    /// The `seq` the next line written takes.
    next: u64,
    /// Event lines taken from the queue for the lines being staged (reused).
    taken: Vec<Vec<u8>>,
    /// The lines staged, in `seq` order (reused).
    staged: Vec<Staged>,
}

/// A line staged for the next write.
#[derive(Clone, Copy)]
enum Staged {
    /// `OrderedLog::taken[i]`.
    Event(usize),
    /// The client decision line `i` of the call staging it.
    Client(usize),
}

impl OrderedLog {
    pub(crate) fn new(log: DecisionLog) -> Self {
        OrderedLog {
            log,
            next: 0,
            taken: Vec::new(),
            staged: Vec::new(),
        }
    }

    /// Writes one line numbered `seq` at once; the error of a failed write.
    fn put(&mut self, seq: u64, line: &[u8], failures: &mut Vec<String>) {
        self.next = self.next.max(seq.saturating_add(1));
        if let (Emitted::Failed, Some(e)) = self.log.write(line) {
            failures.push(e.to_string());
        }
    }

    /// Client decision lines, `(seq, line)` in `seq` order: each written after the event lines
    /// numbered before it, all of them together.
    ///
    /// Every `seq` before a client line's not yet written is an event line handed over or being
    /// formatted (the server path numbers a line and queues it under the queue's lock, so a
    /// `seq` it took before the client's is in the queue by the time this writer looks), or a
    /// decision whose line was never written (its emission ended the session's client path).
    pub(crate) fn write_clients(
        &mut self,
        events: &EventLines,
        lines: &[(u64, &[u8])],
        failures: &mut Vec<String>,
    ) {
        for (i, &(seq, _)) in lines.iter().enumerate() {
            while self.next < seq {
                let from = self.taken.len();
                let (turn, refused) = events.turn(self.next, seq, &mut self.taken);
                self.refuse(refused, lines, failures);
                match turn {
                    Turn::Taken => self.stage_taken(from),
                    Turn::Skip(to) => self.next = to,
                }
            }
            self.next = self.next.max(seq.saturating_add(1));
            self.staged.push(Staged::Client(i));
        }
        self.write_staged(lines, failures);
        self.taken.clear();
    }

    /// Writes the event lines whose turn has come (numbered right after the last line written,
    /// in order).
    pub(crate) fn drain(&mut self, events: &EventLines, failures: &mut Vec<String>) {
        while events.lowest() == self.next {
            let from = self.taken.len();
            let refused = events.take_ready(self.next, &mut self.taken);
            self.refuse(refused, &[], failures);
            if self.taken.len() == from {
                break;
            }
            self.stage_taken(from);
        }
        self.write_staged(&[], failures);
        self.taken.clear();
    }

    /// Stages the event lines taken from index `from` on (numbered from `next` on, in order).
    fn stage_taken(&mut self, from: usize) {
        let to = self.taken.len();
        self.staged.extend((from..to).map(Staged::Event));
        self.next += (to - from) as u64;
    }

    /// Counts `n` refusals, after writing what was staged before them.
    fn refuse(&mut self, n: u64, lines: &[(u64, &[u8])], failures: &mut Vec<String>) {
        if n > 0 {
            self.write_staged(lines, failures);
            self.log.refuse(n);
        }
    }

    /// Writes the staged lines together (`lines`: the client lines they name).
    fn write_staged(&mut self, lines: &[(u64, &[u8])], failures: &mut Vec<String>) {
        if self.staged.is_empty() {
            return;
        }
        let taken = &self.taken;
        let bytes_of = |s: &Staged| match *s {
            Staged::Event(i) => taken.get(i).map_or(&[][..], Vec::as_slice),
            Staged::Client(i) => lines.get(i).map_or(&[][..], |l| l.1),
        };
        // One line (one request in flight) needs no list.
        let failure = match self.staged.as_slice() {
            [one] => self.log.write_lines(&[bytes_of(one)]),
            staged => self
                .log
                .write_lines(&staged.iter().map(bytes_of).collect::<Vec<_>>()),
        };
        if let Some(e) = failure {
            failures.push(e.to_string());
        }
        self.staged.clear();
    }

    /// Client decision lines as [`OrderedLog::write_clients`] writes them, by a writer with
    /// time to spare: written together, they are hashed for the log's digest at once
    /// ([`DecisionLog::hash_together_here`]).
    pub(crate) fn write_clients_hashing_here(
        &mut self,
        events: &EventLines,
        lines: &[(u64, &[u8])],
        failures: &mut Vec<String>,
    ) {
        self.log.hash_together_here(true);
        self.write_clients(events, lines, failures);
        self.log.hash_together_here(false);
    }

    /// Lets the log settle its digest (idle time).
    pub(crate) fn settle(&mut self) {
        self.log.settle();
    }
}

/// What a client line's writer does about the `seq` before its own.
enum Turn {
    /// Event lines were taken (from that `seq` on, in order): write them.
    Taken,
    /// No line is queued before this `seq`: the ones skipped were decisions never written.
    Skip(u64),
}

/// The server path's event lines between their number and their write.
pub(crate) struct EventLines {
    queue: Mutex<Queue>,
    /// A writer waits here for a line numbered before its own and still being formatted.
    formatted: Condvar,
    /// Hand-overs so far: a holder of the log that sees this change while it held the log looks
    /// at the queue again after letting go (the one that handed over found the log taken).
    handed: OwnLine<AtomicU64>,
    /// The lowest `seq` in the queue (`u64::MAX`: none), changed under the queue's lock: a
    /// writer whose next `seq` is not there skips the queue's lock.
    lowest: OwnLine<AtomicU64>,
}

/// A value on a cache line of its own: the client path reads these counters once per decision
/// line, the server path writes them once per event line, and neither should slow the other's
/// other fields down.
#[repr(align(128))]
struct OwnLine<T>(T);

impl Default for EventLines {
    fn default() -> Self {
        EventLines {
            queue: Mutex::default(),
            formatted: Condvar::new(),
            handed: OwnLine(AtomicU64::new(0)),
            lowest: OwnLine(AtomicU64::new(u64::MAX)),
        }
    }
}

#[derive(Default)]
struct Queue {
    /// By `seq`; `None` while the line is formatted.
    lines: BTreeMap<u64, Option<Vec<u8>>>,
    /// Lines numbered and refused (past the bound, or never handed over), not yet counted.
    refused: u64,
    /// The log was sealed: no more numbers.
    closed: bool,
    writer_waiting: bool,
}

/// A `seq` the server path took for an event line, until its line is handed over.
pub(crate) struct Numbered<'a> {
    events: &'a EventLines,
    seq: u64,
    /// In the queue (not refused), not yet handed over.
    queued: bool,
}

impl EventLines {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the next `seq` from `counter` for an event line, its place kept in the queue; past
    /// [`MAX_WAITING_LINES`] the line is refused (counted as dropped when the log is next
    /// written) but still numbered. `None` once the log is sealed: no line can be written.
    pub(crate) fn number<'a>(&'a self, counter: &AtomicU64) -> Option<Numbered<'a>> {
        let mut q = self.lock();
        if q.closed {
            return None;
        }
        // Numbered and queued under the queue's lock: a writer that looks at the queue after a
        // client decision took a later `seq` finds this one there.
        let seq = counter.fetch_add(1, Ordering::Relaxed);
        let queued = q.lines.len() < MAX_WAITING_LINES;
        if queued {
            q.lines.insert(seq, None);
            self.set_lowest(&q);
        } else {
            q.refused += 1;
        }
        Some(Numbered {
            events: self,
            seq,
            queued,
        })
    }

    /// Hand-overs so far.
    fn handed(&self) -> u64 {
        self.handed.0.load(Ordering::SeqCst)
    }

    /// The lowest `seq` queued (`u64::MAX`: none).
    fn lowest(&self) -> u64 {
        self.lowest.0.load(Ordering::SeqCst)
    }

    /// Publishes the queue's lowest `seq` (under its lock, after each change).
    fn set_lowest(&self, q: &Queue) {
        let lowest = q.lines.first_key_value().map_or(u64::MAX, |(&seq, _)| seq);
        self.lowest.0.store(lowest, Ordering::SeqCst);
    }

    /// Takes the handed-over lines numbered `next`, `next + 1`, … into `out`; returns the
    /// refusals not yet counted.
    fn take_ready(&self, next: u64, out: &mut Vec<Vec<u8>>) -> u64 {
        self.take_from(&mut self.lock(), next, out)
    }

    /// [`EventLines::take_ready`] with the queue locked.
    fn take_from(&self, q: &mut Queue, mut next: u64, out: &mut Vec<Vec<u8>>) -> u64 {
        while let Some(entry) = q.lines.first_entry() {
            if *entry.key() != next || entry.get().is_none() {
                break;
            }
            if let Some(line) = entry.remove() {
                out.push(line);
            }
            next += 1;
        }
        self.set_lowest(q);
        std::mem::take(&mut q.refused)
    }

    /// For the writer of a client line numbered `until`, whose predecessor `next` is not
    /// written: takes the handed-over lines from `next` on, waiting while the line at `next`
    /// is formatted, or says how far no line is queued. Returns the refusals not yet counted.
    fn turn(&self, next: u64, until: u64, out: &mut Vec<Vec<u8>>) -> (Turn, u64) {
        let mut q = self.lock();
        loop {
            match q.lines.first_key_value() {
                Some((&seq, None)) if seq == next => {
                    q.writer_waiting = true;
                    q = self
                        .formatted
                        .wait(q)
                        .unwrap_or_else(PoisonError::into_inner);
                    q.writer_waiting = false;
                }
                Some((&seq, Some(_))) if seq == next => {
                    return (Turn::Taken, self.take_from(&mut q, next, out));
                }
                first => {
                    let to = first.map_or(until, |(&seq, _)| seq.clamp(next, until));
                    let refused = std::mem::take(&mut q.refused);
                    return (Turn::Skip(to.max(next + 1)), refused);
                }
            }
        }
    }

    /// Seals the queue: no more numbers. Returns the lines left, by `seq` (`None`: never
    /// handed over), and the refusals not yet counted.
    fn close(&self) -> (BTreeMap<u64, Option<Vec<u8>>>, u64) {
        let mut q = self.lock();
        q.closed = true;
        let left = std::mem::take(&mut q.lines);
        self.set_lowest(&q);
        (left, std::mem::take(&mut q.refused))
    }

    /// Puts `line` in `seq`'s place (nothing once the log was sealed, which counted it).
    fn put_line(&self, seq: u64, line: Option<Vec<u8>>) {
        let mut q = self.lock();
        match line {
            Some(line) => {
                if let Some(slot) = q.lines.get_mut(&seq) {
                    *slot = Some(line);
                }
            }
            None => {
                if q.lines.remove(&seq).is_some() {
                    self.set_lowest(&q);
                    q.refused += 1;
                }
            }
        }
        if q.writer_waiting {
            self.formatted.notify_all();
        }
        drop(q);
        self.handed.0.fetch_add(1, Ordering::SeqCst);
        // Paired with the fence in `SharedLog::release`: the next `try_lock` sees the writer
        // free, or its holder sees this hand-over.
        fence(Ordering::SeqCst);
    }
}

impl Numbered<'_> {
    /// The `seq` taken.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// Hands the formatted line over to the next writer of the log; returns its `seq`.
    pub(crate) fn hand_over(mut self, line: Vec<u8>) -> u64 {
        if std::mem::take(&mut self.queued) {
            self.events.put_line(self.seq, Some(line));
        }
        self.seq
    }
}

impl Drop for Numbered<'_> {
    /// A line never handed over (its formatting panicked) is refused, so no writer waits for it.
    fn drop(&mut self) {
        if self.queued {
            self.events.put_line(self.seq, None);
        }
    }
}

#[cfg(test)]
mod tests;
