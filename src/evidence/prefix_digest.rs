//! The running SHA-256 of the decision lines written so far (SPEC §4.1
//! `decision_prefix_sha256`), kept off the writing thread.
//!
//! Only lines whose `write_all` completed are pushed here, in the order they were written. They
//! collect in a buffer and are hashed in chunks of [`CHUNK`] bytes:
//!
//! - at first on the writer's own thread, when the writer idles ([`PrefixDigest::settle`]) or a
//!   chunk is full — an interactive session never starts a thread;
//! - once a chunk fills without the writer idling in between (a client pipelining calls), on a
//!   hashing thread of its own: the writer only hands the full buffer over and goes on writing.
//!   On a CPU without SHA extensions hashing a ~700-byte decision line costs about as much as
//!   writing it, so doing both on one thread made it the session's bottleneck
//!   (docs/decisions.md, "The decision-log digest on its own thread").
//!
//! Memory stays bounded: the writer's buffer, at most [`QUEUED`] chunks waiting and the one being
//! hashed. A line of a chunk or more (a rare, very long tool name) is hashed on the writer's thread
//! after every earlier chunk (the thread is joined first: order is what the digest is about).
//! The hashing thread ends when the digest is read ([`PrefixDigest::digest`]) or the
//! `PrefixDigest` is dropped, never later: no thread outlives the session.
#![forbid(unsafe_code)]

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
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
    /// The hash state while no thread holds it.
    here: Sha256,
    /// The hashing thread, holding the state, once one was started.
    thread: Option<HashThread>,
    /// A hashing thread could not be started: everything is hashed here.
    no_thread: bool,
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
    handle: Option<JoinHandle<Sha256>>,
}

impl HashThread {
    /// Closes the queue and waits for the thread to hash what it holds; its state, or `None` if
    /// it ended without one.
    fn finish(mut self) -> Option<Sha256> {
        self.chunks = None;
        self.handle.take().and_then(|h| h.join().ok())
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

/// The hashing thread: hashes chunks in the order sent until the queue closes.
fn hash_chunks(
    mut state: Sha256,
    chunks: &Receiver<Vec<u8>>,
    spare: &SyncSender<Vec<u8>>,
) -> Sha256 {
    while let Ok(mut chunk) = chunks.recv() {
        state.update(&chunk);
        chunk.clear();
        // A full spare queue just drops the buffer.
        let _ = spare.try_send(chunk);
    }
    state
}

impl PrefixDigest {
    /// The digest of nothing yet.
    pub(crate) fn new() -> Self {
        Self {
            pending: Vec::new(),
            here: Sha256::new(),
            thread: None,
            no_thread: false,
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

    /// The writer idles: without a hashing thread, the pending lines are hashed now (off the
    /// path between a decision's write and its call's forwarding); with one, they wait for a
    /// full chunk or the digest.
    pub(crate) fn settle(&mut self) {
        if self.thread.is_none() && !self.pending.is_empty() {
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
        let next = t
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK + 1024));
        let chunk = std::mem::replace(&mut self.pending, next);
        let sent = match &t.chunks {
            Some(tx) => tx.send(chunk),
            None => Err(std::sync::mpsc::SendError(chunk)),
        };
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
        let started = std::thread::Builder::new()
            .name("assay-log-hash".to_string())
            .spawn(move || hash_chunks(state, &chunks_rx, &spare_tx));
        match started {
            Ok(handle) => {
                self.thread = Some(HashThread {
                    chunks: Some(chunks_tx),
                    spare: spare_rx,
                    handle: Some(handle),
                });
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
            match t.finish() {
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
