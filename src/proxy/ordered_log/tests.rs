use std::sync::{Arc, Mutex};

use super::*;
use crate::evidence::decision_log::DecisionSink;

/// Keeps the lines written, in order.
struct Lines(Arc<Mutex<Vec<Vec<u8>>>>);

impl DecisionSink for Lines {
    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.0.lock().unwrap().push(line.to_vec());
        Ok(())
    }
}

/// The lines of each write, write by write.
type WriteGroups = Arc<Mutex<Vec<Vec<Vec<u8>>>>>;

/// Keeps each write's lines together: what one `write(2)` of a file would hold.
struct Writes(WriteGroups);

impl DecisionSink for Writes {
    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.0.lock().unwrap().push(vec![line.to_vec()]);
        Ok(())
    }

    fn write_lines(&mut self, lines: &[&[u8]]) -> Result<(), (usize, std::io::Error)> {
        let group = lines.iter().map(|l| l.to_vec()).collect();
        self.0.lock().unwrap().push(group);
        Ok(())
    }
}

/// A log whose writes are kept apart ([`Writes`]).
fn writes_log() -> (OrderedLog, WriteGroups) {
    let out = Arc::new(Mutex::new(Vec::new()));
    let log = OrderedLog::new(DecisionLog::new(Box::new(Writes(out.clone()))));
    (log, out)
}

/// The decisions of a batch and the event lines numbered between them go out in one write,
/// in `seq` order; an event line numbered after the batch is left for the next drain.
#[test]
fn a_batch_and_the_event_lines_between_its_decisions_are_written_together() {
    let (mut log, out) = writes_log();
    let events = EventLines::default();
    let counter = AtomicU64::new(1);
    events.number(&counter).unwrap().hand_over(line(1));
    let after = AtomicU64::new(4);
    events.number(&after).unwrap().hand_over(line(4));
    let mut failures = Vec::new();
    let batch = [(0, &line(0)[..]), (2, &line(2)[..]), (3, &line(3)[..])];
    log.write_clients(&events, &batch, &mut failures);
    assert_eq!(
        *out.lock().unwrap(),
        vec![vec![line(0), line(1), line(2), line(3)]]
    );
    log.drain(&events, &mut failures);
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(out.lock().unwrap().last(), Some(&vec![line(4)]));
}

/// A refusal found in the middle of a batch (an event line between two decisions that was
/// never handed over) comes after the lines before it were written, as it would with one
/// write per line: those are written, the rest of the batch is refused.
#[test]
fn a_refusal_inside_a_batch_comes_after_the_lines_before_it() {
    let (mut log, out) = writes_log();
    let events = EventLines::default();
    let counter = AtomicU64::new(1);
    // Its formatting "panicked": dropped without a hand-over.
    drop(events.number(&counter).unwrap());
    let mut failures = Vec::new();
    let batch = [(0, &line(0)[..]), (2, &line(2)[..])];
    log.write_clients(&events, &batch, &mut failures);
    assert_eq!(*out.lock().unwrap(), vec![vec![line(0)]]);
    let mut state = LogWriterState::Open(Box::new(log));
    let accounting = state.seal(&events).unwrap();
    assert_eq!((accounting.written, accounting.dropped), (1, 2));
    assert!(accounting.poisoned);
}

fn log() -> (OrderedLog, Arc<Mutex<Vec<Vec<u8>>>>) {
    let out = Arc::new(Mutex::new(Vec::new()));
    (
        OrderedLog::new(DecisionLog::new(Box::new(Lines(out.clone())))),
        out,
    )
}

fn line(seq: u64) -> Vec<u8> {
    format!("{seq}\n").into_bytes()
}

/// A client that pipelines: it numbered three decisions not written yet, while the answers
/// to every tracked request arrived and took the next `seq`s. None is lost; the client's
/// lines come first and the answers' follow in `seq` order.
#[test]
fn the_events_of_every_tracked_answer_may_wait_for_the_client_decisions() {
    let (mut log, out) = log();
    let events = EventLines::default();
    let counter = AtomicU64::new(3);
    for _ in 0..MAX_TRACKED {
        let n = events.number(&counter).unwrap();
        let seq = n.seq();
        n.hand_over(line(seq));
    }
    let mut failures = Vec::new();
    log.drain(&events, &mut failures);
    assert!(out.lock().unwrap().is_empty(), "no event line before seq 0");
    for seq in 0..3 {
        log.write_clients(&events, &[(seq, &line(seq))], &mut failures);
        log.drain(&events, &mut failures);
    }
    assert!(failures.is_empty(), "{failures:?}");
    let lines = out.lock().unwrap();
    assert_eq!(lines.len(), MAX_TRACKED + 3);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l, &line(i as u64));
    }
    drop(lines);
    let mut state = LogWriterState::Open(Box::new(log));
    let accounting = state.seal(&events);
    assert_eq!(accounting.map(|a| a.dropped), Some(0));
}

/// Past the bound an event line is refused and counted: the log is incomplete, never
/// unbounded.
#[test]
fn a_line_past_the_waiting_bound_is_refused_and_counted() {
    let (log, _out) = log();
    let events = EventLines::default();
    let counter = AtomicU64::new(1);
    for _ in 0..MAX_WAITING_LINES {
        let n = events.number(&counter).unwrap();
        n.hand_over(b"x\n".to_vec());
    }
    let past = events.number(&counter).unwrap();
    assert_eq!(past.seq(), MAX_WAITING_LINES as u64 + 1);
    past.hand_over(b"x\n".to_vec());
    let mut state = LogWriterState::Open(Box::new(log));
    // The refused line and every line still waiting for the `seq` 0 never written.
    let dropped = state.seal(&events).map(|a| a.dropped);
    assert_eq!(dropped, Some(MAX_WAITING_LINES as u64 + 1));
    assert!(events.number(&counter).is_none(), "sealed: no more numbers");
}

/// A client line waits for an event line numbered before it while that line is formatted
/// on another thread, then both are written in `seq` order.
#[test]
fn a_client_line_waits_for_an_earlier_event_line_being_formatted() {
    let (mut log, out) = log();
    let events = EventLines::default();
    let counter = AtomicU64::new(0);
    let numbered = events.number(&counter).unwrap();
    assert_eq!(numbered.seq(), 0);
    let client = counter.fetch_add(1, Ordering::Relaxed);
    let mut failures = Vec::new();
    let queue = &events;
    let written = std::sync::atomic::AtomicBool::new(false);
    let done = &written;
    std::thread::scope(|s| {
        s.spawn(move || {
            // Handed over once the writer waits for it (the event, not a sleep), or once it
            // wrote without waiting (then the order below is wrong and the test fails).
            while !queue.lock().writer_waiting && !done.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            numbered.hand_over(line(0));
        });
        log.write_clients(&events, &[(client, &line(client))], &mut failures);
        written.store(true, Ordering::SeqCst);
    });
    log.drain(&events, &mut failures);
    assert!(failures.is_empty());
    assert_eq!(*out.lock().unwrap(), vec![line(0), line(1)]);
}

/// An event line whose formatting panicked is refused, and a client line numbered after it
/// does not wait for it.
#[test]
fn a_line_never_handed_over_is_refused_and_waits_for_nobody() {
    let (mut log, out) = log();
    let events = EventLines::default();
    let counter = AtomicU64::new(0);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _n = events.number(&counter).unwrap();
        panic!("formatting failed");
    }));
    assert!(r.is_err());
    let mut failures = Vec::new();
    log.write_clients(&events, &[(1, &line(1))], &mut failures);
    assert!(out.lock().unwrap().is_empty(), "poisoned: refused");
    let mut state = LogWriterState::Open(Box::new(log));
    let accounting = state.seal(&events).unwrap();
    assert_eq!((accounting.written, accounting.dropped), (0, 2));
}

/// Decisions numbered and never written (their emission ended the client path) are skipped:
/// a later client line does not wait for them, and an event line numbered after them is
/// still written in its turn.
#[test]
fn decisions_never_written_are_skipped() {
    let (mut log, out) = log();
    let events = EventLines::default();
    let counter = AtomicU64::new(2);
    let n = events.number(&counter).unwrap();
    assert_eq!(n.seq(), 2);
    n.hand_over(line(2));
    let mut failures = Vec::new();
    log.write_clients(&events, &[(4, &line(4))], &mut failures);
    assert_eq!(*out.lock().unwrap(), vec![line(2), line(4)]);
    assert!(failures.is_empty());
}

/// Both paths at once, numbered from one counter: a client thread writing decisions and a
/// server thread handing event lines over (and writing them when the log is free). Every
/// line is written before the seal — none is left behind by a hand-over that found the log
/// taken — once, in `seq` order.
#[test]
fn both_paths_at_once_write_every_line_in_seq_order_before_the_seal() {
    const EACH: u64 = 3000;
    for _ in 0..20 {
        let out = Arc::new(Mutex::new(Vec::new()));
        let log = SharedLog::new(LogWriterState::Open(Box::new(OrderedLog::new(
            DecisionLog::new(Box::new(Lines(out.clone()))),
        ))));
        let counter = AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..EACH {
                    let n = log.number(&counter).unwrap();
                    let seq = n.seq();
                    n.hand_over(line(seq));
                    assert!(log.write_handed().is_empty());
                }
            });
            s.spawn(|| {
                for _ in 0..EACH {
                    let seq = counter.fetch_add(1, Ordering::Relaxed);
                    let ((), failures) = log.with(|state, events, failures| {
                        if let LogWriterState::Open(l) = state {
                            l.write_clients(events, &[(seq, &line(seq))], failures);
                        }
                    });
                    assert!(failures.is_empty());
                }
            });
        });
        let written = out.lock().unwrap().clone();
        assert_eq!(written.len() as u64, 2 * EACH, "every line before the seal");
        for (i, l) in written.iter().enumerate() {
            assert_eq!(l, &line(i as u64));
        }
        let accounting = log.seal().unwrap();
        assert_eq!((accounting.written, accounting.dropped), (2 * EACH, 0));
    }
}

/// A line handed over while the log is held, after its holder's last look at the queue: the
/// worker finds the log taken and leaves the line; the holder sees the hand-over after
/// letting go and writes it before it returns.
#[test]
fn a_line_handed_over_while_the_log_is_held_is_written_by_its_holder() {
    let out = Arc::new(Mutex::new(Vec::new()));
    let log = SharedLog::new(LogWriterState::Open(Box::new(OrderedLog::new(
        DecisionLog::new(Box::new(Lines(out.clone()))),
    ))));
    let counter = AtomicU64::new(0);
    let mut failures = Vec::new();
    let mut once = true;
    let slot = log.lock();
    log.release_after(slot, &mut failures, || {
        if std::mem::take(&mut once) {
            std::thread::scope(|s| {
                s.spawn(|| {
                    let n = log.number(&counter).unwrap();
                    n.hand_over(line(0));
                    assert!(log.write_handed().is_empty());
                });
            });
            assert!(
                out.lock().unwrap().is_empty(),
                "the worker found the log taken"
            );
        }
    });
    assert_eq!(*out.lock().unwrap(), vec![line(0)]);
}
