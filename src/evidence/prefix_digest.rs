//! The decision log's prefix digest (SPEC §4.1): the SHA-256 of exactly the lines whose
//! `write_all` succeeded, in the order they were written.
//!
//! Written lines are fed here as they are written; when they are hashed does not change the
//! digest. While one request is in flight the lines wait until the writer idles (so SHA-256 is
//! never between a decision's write and the forwarding of its call); while the client pipelines,
//! full chunks go to a digest thread of their own, so hashing runs beside the writer instead of
//! after it. At most [`CHUNKS_IN_FLIGHT`] chunks of [`CHUNK`] bytes wait for that thread: a
//! writer ahead of it waits, memory stays bounded.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

/// Lines are handed to the digest thread in chunks of at least this many bytes.
const CHUNK: usize = 64 * 1024;

/// Chunks queued for the digest thread at most.
const CHUNKS_IN_FLIGHT: usize = 2;

/// A written line is hashed here at once when it is at least this long (no copy).
const LONG_LINE: usize = 32 * 1024;

enum Mode {
    /// Hashed on the writer's thread.
    Here(Sha256),
    /// Hashed on a digest thread; emptied chunks come back on `spare` for reuse.
    Thread {
        chunks: SyncSender<Vec<u8>>,
        spare: Receiver<Vec<u8>>,
        handle: JoinHandle<Sha256>,
    },
    /// The digest thread was lost (it panicked): the digest is unknown.
    Lost,
}

/// The running digest of the written lines.
pub(crate) struct PrefixDigest {
    /// Written lines not yet hashed (nor handed to the digest thread).
    pending: Vec<u8>,
    mode: Mode,
}

impl PrefixDigest {
    pub(crate) fn new() -> Self {
        Self {
            pending: Vec::new(),
            mode: Mode::Here(Sha256::new()),
        }
    }

    /// Adds one successfully written line. `defer` keeps it pending until [`Self::settle`]
    /// (hashing it now would delay the forwarding of its call); else it is hashed at once on
    /// this thread, or queued for the digest thread.
    pub(crate) fn feed(&mut self, line: &[u8], defer: bool) {
        match &mut self.mode {
            Mode::Here(h) if !defer || line.len() >= LONG_LINE => {
                if !self.pending.is_empty() {
                    h.update(&self.pending);
                    self.pending.clear();
                }
                h.update(line);
            }
            Mode::Lost => {}
            _ => {
                self.pending.extend_from_slice(line);
                if self.pending.len() >= CHUNK {
                    self.settle();
                }
            }
        }
    }

    /// Hashes (or hands to the digest thread) what is pending.
    pub(crate) fn settle(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        match &mut self.mode {
            Mode::Here(h) => {
                h.update(&self.pending);
                self.pending.clear();
            }
            Mode::Thread { chunks, spare, .. } => {
                let next = spare
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(CHUNK + LONG_LINE));
                let chunk = std::mem::replace(&mut self.pending, next);
                if chunks.send(chunk).is_err() {
                    // The thread is gone; `finish` finds out why.
                    self.pending.clear();
                }
            }
            Mode::Lost => self.pending.clear(),
        }
        if self.pending.capacity() > 4 * CHUNK {
            self.pending = Vec::new();
        }
    }

    /// From now on, full chunks are hashed on a digest thread (the client pipelines). Stays on
    /// this thread when no thread can be started.
    pub(crate) fn in_background(&mut self) {
        if !matches!(self.mode, Mode::Here(_)) {
            return;
        }
        let (chunks, rx) = sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
        let (spare_tx, spare) = sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT + 1);
        // The state so far reaches the thread once it runs (and comes back from `join`); if no
        // thread starts, it never leaves this one.
        let (state_tx, state_rx) = sync_channel::<Sha256>(1);
        let started = std::thread::Builder::new()
            .name("assay-log-digest".to_string())
            .spawn(move || {
                let mut hasher = state_rx.recv().unwrap_or_default();
                for mut chunk in rx {
                    hasher.update(&chunk);
                    chunk.clear();
                    let _ = spare_tx.try_send(chunk);
                }
                hasher
            });
        let Ok(handle) = started else {
            return;
        };
        let Mode::Here(h) = std::mem::replace(
            &mut self.mode,
            Mode::Thread {
                chunks,
                spare,
                handle,
            },
        ) else {
            return;
        };
        if state_tx.send(h).is_err() {
            self.mode = Mode::Lost;
        }
    }

    /// The SHA-256 of every line fed so far, or `None` when the digest thread was lost. Hashing
    /// continues on this thread afterwards.
    pub(crate) fn finish(&mut self) -> Option<[u8; 32]> {
        self.settle();
        let mode = std::mem::replace(&mut self.mode, Mode::Lost);
        let hasher = match mode {
            Mode::Here(h) => h,
            Mode::Thread { chunks, handle, .. } => {
                drop(chunks);
                handle.join().ok()?
            }
            Mode::Lost => return None,
        };
        let digest = hasher.clone().finalize();
        self.mode = Mode::Here(hasher);
        Some(digest.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

        /// Whatever is deferred, settled, or hashed on the digest thread, and whenever the
        /// digest is read, it is the SHA-256 of exactly the lines fed, in order.
        #[test]
        fn the_digest_is_the_same_however_lines_are_hashed(
            steps in prop::collection::vec((0usize..20_000, any::<bool>(), 0u8..8), 1..40),
        ) {
            let mut d = PrefixDigest::new();
            let mut all = Vec::new();
            for (i, (len, defer, action)) in steps.iter().enumerate() {
                let line: Vec<u8> = (0..*len).map(|j| (i + j) as u8).collect();
                d.feed(&line, *defer);
                all.extend_from_slice(&line);
                match action {
                    0 => d.settle(),
                    1 => d.in_background(),
                    2 => prop_assert_eq!(d.finish(), Some(Sha256::digest(&all).into())),
                    _ => {}
                }
            }
            prop_assert_eq!(d.finish(), Some(Sha256::digest(&all).into()));
        }
    }
}
