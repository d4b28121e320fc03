//! The running SHA-256 of the decision lines written so far (SPEC §4.1
//! `decision_prefix_sha256`), kept off the path between a decision's write and its call's
//! forwarding.
//!
//! Only lines whose `write_all` completed are pushed here, in the order they were written.
//!
//! - **Lines written together** (a pipelining client's batch) on a CPU with SHA instructions
//!   are hashed at once by the writer, from the bytes it just wrote
//!   ([`PrefixDigest::push_together`]; docs/decisions.md, "The decision log hashed where it is
//!   written").
//! - **Otherwise** they collect in a buffer and are hashed in chunks of [`CHUNK`] bytes: at
//!   first on the writer's own thread, when the writer idles ([`PrefixDigest::settle`]) or a
//!   chunk is full — an interactive session never starts a thread; once a chunk fills without
//!   the writer idling in between, on a hashing thread of its own: the writer only hands the
//!   full buffer over and goes on writing. On a CPU without SHA extensions hashing a ~700-byte
//!   decision line costs about as much as writing it, so doing both on one thread made it the
//!   session's bottleneck (docs/decisions.md, "The decision-log digest on its own thread").
//!
//! Memory stays bounded: the writer's buffer, at most [`QUEUED`] chunks waiting and the one being
//! hashed. A line of a chunk or more (a rare, very long tool name) is hashed on the writer's thread
//! after every earlier chunk (the thread is joined first: order is what the digest is about).
//! The hashing thread ends when the digest is read ([`PrefixDigest::digest`]) or the
//! `PrefixDigest` is dropped, never later: no thread outlives the session.
#![forbid(unsafe_code)]

use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::sha256::Sha256;

/// Written lines are hashed in chunks of at least this many bytes (or sooner, when the writer
/// idles and no hashing thread runs).
pub(crate) const CHUNK: usize = 128 * 1024;

/// Full chunks that may wait for the hashing thread; the writer waits when it is this far behind.
/// Deep enough that a hashing thread the scheduler sets aside for a few milliseconds (two CPUs,
/// a busy host) does not stop the writer at once; small enough that the memory it can take
/// (half a MiB) stays within the flat-RSS bar (docs/decisions.md, "Larger hand-offs").
const QUEUED: usize = 4;

/// The digest of the lines pushed so far; see the module docs.
pub(crate) struct PrefixDigest {
    /// Lines pushed and not yet handed to the hash.
    pending: Vec<u8>,
    /// The hash state while no thread holds it (no thread, or [`PrefixDigest::state_here`]).
    here: Sha256,
    /// The hashing thread, once one was started. It holds the state while it has chunks to
    /// hash, and parks it ([`Parked`]) when it has none.
    thread: Option<HashThread>,
    /// A hashing thread runs and the state is `here`: taken back from where the thread parked
    /// it, to hash lines written together ([`PrefixDigest::push_together`]).
    state_here: bool,
    /// Chunks sent to the hashing thread.
    sent: u64,
    /// A hashing thread could not be started: everything is hashed here.
    no_thread: bool,
    /// Lines written together are hashed here ([`PrefixDigest::hash_together_here`]).
    together_here: bool,
    /// A hashing thread ended without giving its state back (it cannot panic; were it to, the
    /// digest becomes one no log can match, so the reader reports the log as not verified).
    lost: bool,
}

/// A hashing thread and the two queues between it and the writer.
struct HashThread {
    /// Full chunks to hash, in order. `None` once closed (the thread then ends).
    chunks: Option<SyncSender<Vec<u8>>>,
    /// Emptied chunk buffers coming back for reuse.
    spare: Receiver<Vec<u8>>,
    /// Where the state waits while the thread has nothing to hash.
    parked: Arc<Mutex<Parked>>,
    /// Ends with the state the thread held, if it held it.
    handle: Option<JoinHandle<Option<Sha256>>>,
}

/// The state of a hashing thread with nothing to hash, and how many chunks it hashed. The
/// writer may take the state only when every chunk it sent is hashed (`done` equals the chunks
/// sent) and the state is here; it puts it back before sending the next chunk. So the thread
/// finds the state here whenever it receives a chunk without holding it, and every line is
/// hashed after every line written before it.
#[derive(Default)]
struct Parked {
    state: Option<Sha256>,
    done: u64,
}

fn lock(parked: &Mutex<Parked>) -> MutexGuard<'_, Parked> {
    parked.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HashThread {
    /// Closes the queue and waits for the thread to hash what it holds; the state it held or
    /// parked, or `None` if it has none (the writer holds it, or it was lost).
    fn finish(mut self) -> Option<Sha256> {
        self.chunks = None;
        let held = self.handle.take().and_then(|h| h.join().ok()).flatten();
        held.or_else(|| lock(&self.parked).state.take())
    }
}

impl Drop for HashThread {
    fn drop(&mut self) {
        self.chunks = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The hashing thread: hashes chunks in the order sent until the queue closes, parking the
/// state whenever it has nothing to hash (see [`Parked`]). Returns the state if it holds it.
fn hash_chunks(
    mut held: Option<Sha256>,
    chunks: &Receiver<Vec<u8>>,
    spare: &SyncSender<Vec<u8>>,
    parked: &Mutex<Parked>,
) -> Option<Sha256> {
    loop {
        let mut chunk = match chunks.try_recv() {
            Ok(chunk) => chunk,
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => {
                if let Some(state) = held.take() {
                    lock(parked).state = Some(state);
                }
                match chunks.recv() {
                    Ok(chunk) => chunk,
                    Err(_) => break,
                }
            }
        };
        // Not held: parked, and put back by the writer if it took it.
        let mut state = held.take().or_else(|| lock(parked).state.take())?;
        state.update(&chunk);
        held = Some(state);
        lock(parked).done += 1;
        chunk.clear();
        // A full spare queue just drops the buffer.
        let _ = spare.try_send(chunk);
    }
    held
}

impl PrefixDigest {
    /// The digest of nothing yet.
    pub(crate) fn new() -> Self {
        Self {
            pending: Vec::new(),
            here: Sha256::new(),
            thread: None,
            state_here: false,
            sent: 0,
            no_thread: false,
            together_here: false,
            lost: false,
        }
    }

    /// Adds one completely written line.
    pub(crate) fn push(&mut self, line: &[u8]) {
        if line.len() >= CHUNK {
            // Order first: everything before this line, then the line, on this thread.
            self.bring_home();
            self.here.update(&self.pending);
            self.pending.clear();
            self.here.update(line);
            return;
        }
        if self.pending.capacity() == 0 {
            self.pending.reserve(CHUNK + 1024);
        }
        self.pending.extend_from_slice(line);
        if self.pending.len() >= CHUNK {
            self.hand_over_chunk();
        }
    }

    /// Whether lines written together are hashed at once by their writer (see
    /// [`PrefixDigest::push_together`]): set by a writer with time to spare, for its write.
    pub(crate) fn hash_together_here(&mut self, here: bool) {
        self.together_here = here;
    }

    /// Adds lines written together (one `write(2)`, in order). Several lines written together
    /// come from a client pipelining calls, never from one request in flight. When the writer
    /// said it has time to spare ([`PrefixDigest::hash_together_here`]) and the CPU has SHA
    /// instructions ([`crate::sha256::accelerated`]), they are hashed here at once, while the
    /// writer still has them in its cache: cheaper than copying them for later. Otherwise (one
    /// line; a writer that is behind; no SHA instructions, where hashing costs as much as
    /// writing; a hashing thread holding the state) each is [`PrefixDigest::push`]ed.
    pub(crate) fn push_together(&mut self, lines: &[&[u8]]) {
        if self.together_here
            && lines.len() > 1
            && crate::sha256::accelerated()
            && self.take_state()
        {
            // Order: the lines pushed before these first.
            self.here.update(&self.pending);
            self.pending.clear();
            for line in lines {
                self.here.update(line);
            }
            return;
        }
        for line in lines {
            self.push(line);
        }
    }

    /// The writer idles: without a hashing thread, the pending lines are hashed now (off the
    /// path between a decision's write and its call's forwarding); with one, they wait for a
    /// full chunk or the digest.
    pub(crate) fn settle(&mut self) {
        if (self.thread.is_none() || self.state_here) && !self.pending.is_empty() {
            self.here.update(&self.pending);
            self.pending.clear();
        }
    }

    /// The SHA-256 of every line pushed so far, in lowercase hex. Ends the hashing thread (a later
    /// push starts hashing here again).
    pub(crate) fn digest_hex(&mut self) -> String {
        self.bring_home();
        self.here.update(&self.pending);
        self.pending.clear();
        self.here.clone().finalize_hex()
    }

    /// Whether the state is here: no thread runs, or the thread has hashed every chunk sent and
    /// parked the state, which is then taken (see [`Parked`]).
    fn take_state(&mut self) -> bool {
        let Some(t) = self.thread.as_ref() else {
            return true;
        };
        if !self.state_here {
            let mut p = lock(&t.parked);
            if p.done == self.sent {
                if let Some(state) = p.state.take() {
                    self.here = state;
                    self.state_here = true;
                }
            }
        }
        self.state_here
    }

    /// A full chunk: to the hashing thread (started on first need), else hashed here.
    fn hand_over_chunk(&mut self) {
        if self.thread.is_none() && !self.no_thread {
            self.start_thread();
        }
        let Some(t) = self.thread.as_mut() else {
            self.here.update(&self.pending);
            self.pending.clear();
            return;
        };
        if self.state_here {
            // Put back before the thread is sent a chunk to hash with it.
            lock(&t.parked).state = Some(std::mem::replace(&mut self.here, Sha256::new()));
            self.state_here = false;
        }
        let next = t
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK + 1024));
        let chunk = std::mem::replace(&mut self.pending, next);
        let sent = match &t.chunks {
            Some(tx) => tx.send(chunk),
            None => Err(std::sync::mpsc::SendError(chunk)),
        };
        if sent.is_ok() {
            self.sent += 1;
        }
        if let Err(std::sync::mpsc::SendError(chunk)) = sent {
            // The thread is gone (it cannot end on its own while the queue is open): take the
            // state back if it left one, and hash the chunk here.
            self.bring_home();
            self.here.update(&chunk);
        }
    }

    fn start_thread(&mut self) {
        let (chunks_tx, chunks_rx) = sync_channel::<Vec<u8>>(QUEUED);
        let (spare_tx, spare_rx) = sync_channel::<Vec<u8>>(QUEUED + 1);
        let state = std::mem::replace(&mut self.here, Sha256::new());
        let kept = state.clone();
        let parked = Arc::new(Mutex::new(Parked::default()));
        let its = Arc::clone(&parked);
        let started = std::thread::Builder::new()
            .name("assay-log-hash".to_string())
            .spawn(move || hash_chunks(Some(state), &chunks_rx, &spare_tx, &its));
        match started {
            Ok(handle) => {
                self.thread = Some(HashThread {
                    chunks: Some(chunks_tx),
                    spare: spare_rx,
                    parked,
                    handle: Some(handle),
                });
                self.state_here = false;
                self.sent = 0;
            }
            Err(_) => {
                // No thread (a process at its thread limit): everything is hashed here.
                self.here = kept;
                self.no_thread = true;
            }
        }
    }

    /// Ends the hashing thread, if one runs, and takes its state back.
    fn bring_home(&mut self) {
        if let Some(t) = self.thread.take() {
            let theirs = t.finish();
            if std::mem::take(&mut self.state_here) {
                // The thread had hashed every chunk and held nothing.
                return;
            }
            match theirs {
                Some(state) => self.here = state,
                None => self.lose(),
            }
        }
    }

    /// The hashing thread ended without its state: the digest can no longer be that of the
    /// lines written. It becomes the digest of a text that is not a decision log, which no log
    /// can match.
    fn lose(&mut self) {
        self.lost = true;
        self.no_thread = true;
        self.here = Sha256::new();
        self.here
            .update(b"assay: the decision log's prefix digest was lost\n");
    }

    /// Whether the digest was lost (see [`PrefixDigest::lose`]).
    #[cfg(test)]
    pub(crate) fn is_lost(&self) -> bool {
        self.lost
    }

    /// Whether a hashing thread is running (for the tests).
    #[cfg(test)]
    pub(crate) fn has_thread(&self) -> bool {
        self.thread.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sha256::digest_hex;

    fn line(i: usize, len: usize) -> Vec<u8> {
        let mut v: Vec<u8> = (0..len).map(|k| b'a' + ((i * 7 + k) % 26) as u8).collect();
        v.push(b'\n');
        v
    }

    /// Whatever the mix of short and long lines, idles and digests taken mid-way, the digest is
    /// the SHA-256 of exactly the lines pushed, and the hashing thread is used for sustained
    /// volume only.
    #[test]
    fn digest_is_that_of_the_lines_pushed() {
        let mut d = PrefixDigest::new();
        let mut all = Vec::new();
        assert_eq!(d.digest_hex(), digest_hex(b""));
        for i in 0..2_000 {
            let len = match i % 97 {
                0 => CHUNK + 5,
                1 => CHUNK - 1,
                _ => 300 + (i * 13) % 700,
            };
            let l = line(i, len);
            d.push(&l);
            all.extend_from_slice(&l);
            if i % 331 == 5 {
                d.settle();
            }
            if i % 457 == 17 {
                assert_eq!(d.digest_hex(), digest_hex(&all), "after line {i}");
                assert!(!d.has_thread());
            }
        }
        assert_eq!(d.digest_hex(), digest_hex(&all));
        assert!(!d.is_lost());
    }

    /// Lines written together (by a writer with time to spare or not) and alone, mixed with
    /// idles, a hashing thread started by single lines, digests taken mid-way: always the
    /// SHA-256 of exactly the lines pushed, in order. With SHA instructions, lines written
    /// together by a writer with time to spare start no thread.
    #[test]
    fn lines_written_together_enter_the_digest_in_order() {
        let mut d = PrefixDigest::new();
        let mut all = Vec::new();
        let mut i = 0;
        for round in 0..60 {
            let here = round % 5 != 2;
            d.hash_together_here(here);
            let together: Vec<Vec<u8>> = (0..(round % 7) * 40)
                .map(|k| line(i + k, 200 + (k * 31) % 900))
                .collect();
            i += together.len();
            let refs: Vec<&[u8]> = together.iter().map(Vec::as_slice).collect();
            d.push_together(&refs);
            together.iter().for_each(|l| all.extend_from_slice(l));
            // A digest read the round before ended any thread; only single lines start one.
            if round % 13 == 0 && here && crate::sha256::accelerated() {
                assert!(!d.has_thread(), "lines written together start no thread");
            }
            // Single lines after: a chunk's worth without idling starts the thread every
            // eleventh round, and the lines written together then go through it.
            let singles = if round % 11 == 3 {
                CHUNK / 300 + 2
            } else {
                round % 4
            };
            for _ in 0..singles {
                let l = line(i, 300);
                i += 1;
                d.push_together(&[&l]);
                all.extend_from_slice(&l);
            }
            if round % 3 == 1 {
                d.settle();
            }
            if round % 13 == 12 {
                assert_eq!(d.digest_hex(), digest_hex(&all), "after round {round}");
            }
        }
        assert_eq!(d.digest_hex(), digest_hex(&all));
        assert!(!d.is_lost());
    }

    /// A writer with time to spare takes the state back from an idle hashing thread, hashes
    /// lines written together itself, and gives the state back with the next chunk it sends.
    #[test]
    fn the_state_goes_back_and_forth_between_writer_and_thread() {
        if !crate::sha256::accelerated() {
            return; // Without SHA instructions the writer never takes the state.
        }
        let mut d = PrefixDigest::new();
        let mut all = Vec::new();
        let mut i = 0;
        let mut next = |all: &mut Vec<u8>, len: usize| {
            let l = line(i, len);
            i += 1;
            all.extend_from_slice(&l);
            l
        };
        d.hash_together_here(true);
        for turn in 0..4 {
            // Two chunks' worth of single lines: to the thread.
            for _ in 0..2 * CHUNK / 500 {
                let l = next(&mut all, 500);
                d.push_together(&[&l]);
            }
            assert!(d.has_thread(), "turn {turn}");
            // Once the thread has hashed both chunks it parks the state, and the writer takes it.
            let start = std::time::Instant::now();
            while !d.take_state() {
                assert!(
                    start.elapsed().as_secs() < 30,
                    "the thread never parked the state"
                );
                std::thread::yield_now();
            }
            let together: Vec<Vec<u8>> = (0..50).map(|k| next(&mut all, 100 + k)).collect();
            let refs: Vec<&[u8]> = together.iter().map(Vec::as_slice).collect();
            d.push_together(&refs);
            assert!(
                d.state_here && d.pending.is_empty(),
                "turn {turn}: hashed here"
            );
        }
        assert_eq!(d.digest_hex(), digest_hex(&all));
        assert!(!d.is_lost());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Any sequence of single lines, lines written together by writers with or without time
        /// to spare, idles and digests read, whatever the hashing thread's timing: the digest is
        /// that of exactly the lines pushed, in order.
        #[test]
        fn any_mix_of_writes_gives_the_digest_of_the_lines(
            ops in proptest::collection::vec((0u8..5, 1usize..400, proptest::bool::ANY), 1..120)
        ) {
            let mut d = PrefixDigest::new();
            let mut all = Vec::new();
            for (n, (op, count, here)) in ops.into_iter().enumerate() {
                d.hash_together_here(here);
                match op {
                    0 | 1 => {
                        let lines: Vec<Vec<u8>> =
                            (0..count).map(|k| line(n * 1000 + k, 200 + k % 700)).collect();
                        let refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
                        if op == 0 {
                            d.push_together(&refs);
                        } else {
                            refs.iter().for_each(|l| d.push_together(&[l]));
                        }
                        lines.iter().for_each(|l| all.extend_from_slice(l));
                    }
                    2 => d.settle(),
                    3 => std::thread::yield_now(),
                    _ => proptest::prop_assert_eq!(d.digest_hex(), digest_hex(&all)),
                }
            }
            proptest::prop_assert_eq!(d.digest_hex(), digest_hex(&all));
            proptest::prop_assert!(!d.is_lost());
        }
    }

    #[test]
    fn pipelined_volume_uses_a_thread_and_idle_writers_do_not() {
        let mut d = PrefixDigest::new();
        let mut all = Vec::new();
        for i in 0..200 {
            let l = line(i, 700);
            d.push(&l);
            all.extend_from_slice(&l);
            d.settle();
        }
        assert!(
            !d.has_thread(),
            "a writer that idles after each line hashes inline"
        );
        // Two chunks' worth without an idle.
        for i in 0..2 * CHUNK / 700 {
            let l = line(i, 700);
            d.push(&l);
            all.extend_from_slice(&l);
        }
        assert!(d.has_thread());
        assert_eq!(d.digest_hex(), digest_hex(&all));
        assert!(!d.has_thread(), "reading the digest ends the thread");
    }
}
