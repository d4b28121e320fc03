//! The server's stdin, shared by the two directions: the client→server path forwards client
//! lines to it ([`super::emitter::ActionRunner`]), and the server→client path answers a server
//! request the policy refused (SPEC §5.2: "answered to the server … never reaches the client").
//! One lock, whole lines: the two never interleave inside a line.
//!
//! The server→client worker never waits for the server's stdin: it hands an answer to a
//! writer thread of its own ([`ServerInput::answer`]) and goes on reading the server. Were it to
//! write the answer itself, a pipelining client could stop the session for good: the
//! client→server path holds the stdin's lock while it waits for the server to read, the server
//! waits for room to write its output, and the worker that would make that room waits for the
//! lock (docs/decisions.md, "Answers to the server are written by a thread of their own").

use std::collections::VecDeque;
use std::io::{self, BufWriter, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::endpoint::Endpoint;
use crate::sys::signals::block_write_signals_in_this_thread;

/// Buffer of the server's stdin.
const BUFFER: usize = 64 * 1024;

/// Bytes of answers that may wait for the writer thread. A server has this many bytes of
/// refused requests unanswered only when it stopped reading its input; answers past the bound
/// are not written (the request is still never forwarded to the client).
pub(crate) const ANSWERS_BOUND: usize = 1024 * 1024;

/// How long the session's end waits for the writer thread (every wait of which is cancellable,
/// and the session cancelled before it asks).
const END_BOUND: Duration = Duration::from_secs(2);

/// The server's stdin, until the client's input ends and it is closed.
pub(crate) struct ServerInput {
    inner: Mutex<Option<BufWriter<Endpoint>>>,
    queue: Arc<AnswerQueue>,
}

/// The answers waiting for the writer thread. The thread holds this and only a weak reference
/// to the [`ServerInput`]: however a session ends, dropping the input ends the queue, and the
/// thread with it (it never keeps the server's stdin open).
#[derive(Default)]
struct AnswerQueue {
    answers: Mutex<Answers>,
    /// Signalled when an answer is queued, the queue is ended, or the writer is done.
    changed: Condvar,
}

impl AnswerQueue {
    fn lock(&self) -> MutexGuard<'_, Answers> {
        self.answers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// No more answers: the writer ends once the queue is empty.
    fn end(&self) {
        self.lock().ended = true;
        self.changed.notify_all();
    }

    /// Waits until an answer is queued (true) or the queue is ended and empty (false).
    fn wait(&self) -> bool {
        let mut a = self.lock();
        loop {
            if !a.lines.is_empty() {
                return true;
            }
            if a.ended {
                return false;
            }
            a = self.changed.wait(a).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The oldest queued answer, if any.
    fn pop(&self) -> Option<Vec<u8>> {
        let mut a = self.lock();
        let line = a.lines.pop_front()?;
        a.bytes -= line.len();
        Some(line)
    }

    /// Every queued answer, oldest first.
    fn take_all(&self) -> Vec<Vec<u8>> {
        let mut a = self.lock();
        a.bytes = 0;
        a.lines.drain(..).collect()
    }
}

/// Answers waiting for the writer thread, and the thread.
#[derive(Default)]
struct Answers {
    lines: VecDeque<Vec<u8>>,
    bytes: usize,
    writer: Option<JoinHandle<()>>,
    /// No more answers are queued; the writer ends once the queue is empty.
    ended: bool,
    /// The writer thread returned.
    done: bool,
    /// An answer was dropped past [`ANSWERS_BOUND`].
    dropped: bool,
}

/// Why an answer to the server was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unanswered {
    /// [`ANSWERS_BOUND`] bytes of answers already wait: the server does not read its input.
    /// `first`: the first answer of the session dropped so.
    Backlog { first: bool },
    /// The session is ending, or the writer thread could not be started.
    Ended,
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the server's input is closed")
}

impl ServerInput {
    /// Not connected yet: writes fail until [`ServerInput::connect`].
    pub(crate) fn new() -> Self {
        Self {
            inner: Mutex::new(None),
            queue: Arc::new(AnswerQueue::default()),
        }
    }

    /// The server's stdin, from now on.
    pub(crate) fn connect(&self, stdin: Endpoint) {
        *self.lock() = Some(BufWriter::with_capacity(BUFFER, stdin));
    }

    fn lock(&self) -> MutexGuard<'_, Option<BufWriter<Endpoint>>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes bytes (buffered).
    pub(crate) fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        match &mut *self.lock() {
            Some(w) => w.write_all(bytes),
            None => Err(closed()),
        }
    }

    /// Flushes what is buffered.
    pub(crate) fn flush(&self) -> io::Result<()> {
        match &mut *self.lock() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }

    /// Queues one whole line (the bytes; the newline is added) as an answer to a server
    /// request, which the server waits for: the writer thread (started on first need) writes
    /// it and flushes. Never waits for the server. Answers are written in the order queued,
    /// until [`ServerInput::close`]; after it they are dropped.
    pub(crate) fn answer(self: &Arc<Self>, line: &[u8]) -> Result<(), Unanswered> {
        let mut a = self.queue.lock();
        if a.ended {
            return Err(Unanswered::Ended);
        }
        if a.bytes + line.len() + 1 > ANSWERS_BOUND {
            let first = !std::mem::replace(&mut a.dropped, true);
            return Err(Unanswered::Backlog { first });
        }
        if a.writer.is_none() {
            let (queue, input) = (self.queue.clone(), Arc::downgrade(self));
            let started = std::thread::Builder::new()
                .name("assay-server-answers".to_string())
                .spawn(move || write_answers(&queue, &input));
            match started {
                Ok(handle) => a.writer = Some(handle),
                Err(_) => {
                    a.ended = true;
                    return Err(Unanswered::Ended);
                }
            }
        }
        let mut whole = Vec::with_capacity(line.len() + 1);
        whole.extend_from_slice(line);
        whole.push(b'\n');
        a.bytes += whole.len();
        a.lines.push_back(whole);
        drop(a);
        self.queue.changed.notify_all();
        Ok(())
    }

    /// The session's end (after it cancelled every wait): no more answers are queued; waits
    /// (bounded) for the writer thread to write or drop what remains, and joins it. A writer
    /// still running after the bound is left (it can only be waiting on a cancelled wait).
    pub(crate) fn end_answers(&self) {
        self.queue.end();
        let mut a = self.queue.lock();
        let deadline = Instant::now() + END_BOUND;
        while a.writer.is_some() && !a.done {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            a = self
                .queue
                .changed
                .wait_timeout(a, deadline - now)
                .map_or_else(|e| e.into_inner().0, |(g, _)| g);
        }
        let writer = a.writer.take();
        drop(a);
        if let Some(handle) = writer {
            let _ = handle.join();
        }
    }

    /// Flushes and closes the server's stdin (the server reads end of input); an error is the
    /// flush's. Answers still queued are written after the flush, best effort as every answer
    /// to the server (a server gone is no error of the session); later ones are dropped.
    pub(crate) fn close(&self) -> io::Result<()> {
        let mut guard = self.lock();
        let queued = self.queue.take_all();
        let taken = guard.take();
        drop(guard);
        let Some(mut w) = taken else {
            return Ok(());
        };
        w.flush()?;
        for line in &queued {
            if write_answer(&mut w, line).is_err() {
                break;
            }
        }
        Ok(())
    }
}

impl Drop for ServerInput {
    /// However the session ended, its answers' writer ends too.
    fn drop(&mut self) {
        self.queue.end();
    }
}

/// Writes one answer line to the server's stdin: what the client→server path buffered first
/// (a failure there is that path's to report, at its next flush), then the line itself straight
/// to the descriptor, so that no byte of an answer stays in the buffer, whatever happens.
fn write_answer(w: &mut BufWriter<Endpoint>, line: &[u8]) -> io::Result<()> {
    w.flush()?;
    w.get_mut().write_all(line)
}

/// The writer thread: writes queued answers in order, each at once, until the queue is ended
/// and empty. Answers are taken from the queue under the stdin's lock, so
/// [`ServerInput::close`] (which writes what is queued) never loses one or reorders them.
/// Once a write fails (the server's stdin closed or broken, the session cancelled, the input
/// gone) the rest are dropped.
fn write_answers(queue: &AnswerQueue, input: &Weak<ServerInput>) {
    // SIGPIPE (a server gone) becomes EPIPE here, as on the workers.
    block_write_signals_in_this_thread();
    let mut failed = false;
    while queue.wait() {
        let Some(input) = input.upgrade() else {
            failed = true;
            queue.take_all();
            continue;
        };
        let mut guard = input.lock();
        while let Some(line) = queue.pop() {
            if failed {
                continue;
            }
            failed = match &mut *guard {
                Some(w) => write_answer(w, &line).is_err(),
                None => true,
            };
        }
    }
    queue.lock().done = true;
    queue.changed.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// A server input on a fresh pipe, and the pipe's read end (the server's side).
    fn connected() -> (Arc<ServerInput>, io::PipeReader) {
        let (r, w) = io::pipe().unwrap();
        let cancel = super::super::cancel::Cancel::new().unwrap();
        let input = Arc::new(ServerInput::new());
        input.connect(Endpoint::own_pipe(std::os::fd::OwnedFd::from(w), cancel).unwrap());
        (input, r)
    }

    fn read_all(mut r: io::PipeReader) -> String {
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        s
    }

    #[test]
    fn answers_reach_the_server_in_order() {
        let (input, r) = connected();
        input.answer(b"{\"id\":1}").unwrap();
        input.answer(b"{\"id\":2}").unwrap();
        input.end_answers();
        assert_eq!(input.answer(b"late"), Err(Unanswered::Ended));
        input.close().unwrap();
        assert_eq!(read_all(r), "{\"id\":1}\n{\"id\":2}\n");
    }

    #[test]
    fn an_answer_never_waits_for_a_server_that_does_not_read() {
        let (input, r) = connected();
        // Another thread forwards more than the pipe holds: it waits, holding the lock, until
        // the server reads.
        let line = format!("{}\n", "y".repeat(999));
        let forwarder = {
            let (input, line) = (input.clone(), line.clone());
            std::thread::spawn(move || {
                for _ in 0..300 {
                    input.write_all(line.as_bytes()).unwrap();
                }
                input.flush().unwrap();
            })
        };
        // Queued at once, whether or not the forwarder holds the lock by now.
        input.answer(b"{\"answer\":1}").unwrap();
        let reader = std::thread::spawn(move || read_all(r));
        forwarder.join().unwrap();
        input.end_answers();
        input.close().unwrap();
        let got = reader.join().unwrap();
        assert_eq!(got.lines().filter(|l| **l == line[..999]).count(), 300);
        assert_eq!(got.lines().filter(|l| *l == "{\"answer\":1}").count(), 1);
        assert_eq!(got.len(), 300 * 1000 + "{\"answer\":1}\n".len());
    }

    #[test]
    fn closing_writes_what_is_queued_and_drops_what_comes_after() {
        let (input, r) = connected();
        // The writer cannot take the lock: the answer stays queued until the close.
        let guard = input.lock();
        input.answer(b"{\"queued\":1}").unwrap();
        drop(guard);
        input.close().unwrap();
        input.answer(b"{\"after\":1}").unwrap();
        input.end_answers();
        assert_eq!(read_all(r), "{\"queued\":1}\n");
    }

    #[test]
    fn answers_past_the_bound_are_refused() {
        let (input, r) = connected();
        let guard = input.lock();
        let line = vec![b'a'; 1000];
        let mut queued = 0;
        let refused = loop {
            match input.answer(&line) {
                Ok(()) => queued += 1,
                Err(e) => break e,
            }
        };
        assert_eq!(refused, Unanswered::Backlog { first: true });
        assert_eq!(
            input.answer(&line),
            Err(Unanswered::Backlog { first: false })
        );
        // The writer takes answers only under the lock: every one is still queued.
        assert_eq!(queued, ANSWERS_BOUND / (line.len() + 1));
        let reader = std::thread::spawn(move || read_all(r));
        drop(guard);
        input.end_answers();
        input.close().unwrap();
        assert_eq!(reader.join().unwrap().len(), queued * 1001);
    }
}
