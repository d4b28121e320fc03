//! The decision log's two digests (SPEC §7: the file's SHA-256 for the `files` map, and that of
//! its complete-line prefix for `decision_prefix_sha256`), taken from the chunks the reader reads
//! — on the reading thread for a small log, on a hashing thread of their own for a large one.
//!
//! Without SHA extensions hashing a maximal log (8 MiB) takes longer than checking its lines;
//! with them, about as long. A large log's chunks therefore go, once their lines are checked, to
//! a scoped thread that hashes them in order while the reader reads and checks the next ones
//! (docs/decisions.md, "The reader hashes while it checks"). The same bytes are hashed in the
//! same order either way; memory stays bounded (at most [`QUEUED`] chunks wait); the thread
//! ends before the reading function returns; and where no thread can be started, everything is
//! hashed on the reading thread.
#![forbid(unsafe_code)]

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::{Scope, ScopedJoinHandle};

use crate::sha256::Sha256;

/// Logs of at least this many bytes are hashed on a thread of their own: below it, starting the
/// thread (tens of microseconds) would cost about what it saves.
pub(super) const THREAD_FROM_BYTES: u64 = 1024 * 1024;

/// Read chunks that may wait for the hashing thread; the reader waits when it is this far
/// ahead.
const QUEUED: usize = 4;

/// SHA-256 of the log and of its complete-line prefix, in one pass: the running hash is
/// snapshotted after the last `\n` of every chunk.
pub(super) struct LogHash {
    all: Sha256,
    prefix: Sha256,
}

impl LogHash {
    fn new() -> Self {
        Self {
            all: Sha256::new(),
            prefix: Sha256::new(),
        }
    }

    fn update(&mut self, chunk: &[u8]) {
        match memchr::memrchr(b'\n', chunk) {
            Some(p) => {
                let (head, rest) = chunk.split_at(p + 1);
                self.all.update(head);
                self.prefix = self.all.clone();
                self.all.update(rest);
            }
            None => self.all.update(chunk),
        }
    }

    /// (SHA-256 of the whole file, SHA-256 of the bytes up to and including the last `\n`).
    fn finish(self) -> (String, String) {
        (self.all.finalize_hex(), self.prefix.finalize_hex())
    }
}

/// The hashing thread ended without its digests (it has no way to fail; were it to, the log is
/// reported unreadable rather than given a digest nobody computed).
#[derive(Debug)]
pub(super) struct HashingLost;

/// Where the chunks of one log are hashed.
pub(super) enum Hashing<'scope> {
    /// On the reading thread (boxed: the two hash states are a few hundred bytes).
    Here(Box<LogHash>),
    /// On a scoped hashing thread.
    Thread(HashThread<'scope>),
}

/// A hashing thread and the two queues between it and the reader.
pub(super) struct HashThread<'scope> {
    /// Chunks to hash, in order, with the number of their bytes read.
    chunks: SyncSender<(Vec<u8>, usize)>,
    /// Hashed chunk buffers coming back for reuse.
    spare: Receiver<Vec<u8>>,
    handle: ScopedJoinHandle<'scope, LogHash>,
}

impl<'scope> Hashing<'scope> {
    /// Hashing for a log of `size` bytes: on a thread of `scope` when the log is large and a
    /// thread can be started, else here.
    pub(super) fn start<'env>(scope: &'scope Scope<'scope, 'env>, size: u64) -> Self {
        if size < THREAD_FROM_BYTES {
            return Hashing::Here(Box::new(LogHash::new()));
        }
        let (chunks, todo) = sync_channel::<(Vec<u8>, usize)>(QUEUED);
        let (give_back, spare) = sync_channel::<Vec<u8>>(QUEUED + 2);
        let started = std::thread::Builder::new()
            .name("assay-read-hash".to_string())
            .spawn_scoped(scope, move || {
                let mut hash = LogHash::new();
                for (chunk, n) in todo {
                    hash.update(chunk.get(..n).unwrap_or_default());
                    // A full return queue only means the buffer is freed instead of reused.
                    let _ = give_back.try_send(chunk);
                }
                hash
            });
        match started {
            Ok(handle) => Hashing::Thread(HashThread {
                chunks,
                spare,
                handle,
            }),
            // No thread (a process at its thread limit): everything is hashed here.
            Err(_) => Hashing::Here(Box::new(LogHash::new())),
        }
    }

    /// Hashing on the calling thread, whatever the log's size (a log followed as it grows is
    /// hashed a few lines at a time, on the thread that reads them).
    pub(super) fn here() -> Self {
        Hashing::Here(Box::new(LogHash::new()))
    }

    /// The first `n` bytes of `buf` were read and their lines checked: hash them. On a thread,
    /// `buf` is handed over and replaced by a spare buffer of the same length.
    pub(super) fn chunk(&mut self, buf: &mut Vec<u8>, n: usize) -> Result<(), HashingLost> {
        match self {
            Hashing::Here(hash) => {
                hash.update(buf.get(..n).unwrap_or_default());
                Ok(())
            }
            Hashing::Thread(t) => {
                let len = buf.len();
                let next = t.spare.try_recv().unwrap_or_else(|_| vec![0u8; len]);
                let full = std::mem::replace(buf, next);
                t.chunks.send((full, n)).map_err(|_| HashingLost)
            }
        }
    }

    /// (SHA-256 of the whole file, SHA-256 of its complete-line prefix); ends the thread.
    pub(super) fn finish(self) -> Result<(String, String), HashingLost> {
        match self {
            Hashing::Here(hash) => Ok(hash.finish()),
            Hashing::Thread(t) => {
                drop(t.chunks);
                t.handle
                    .join()
                    .map(LogHash::finish)
                    .map_err(|_| HashingLost)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sha256::digest_hex;

    /// Both ways hash the same bytes: the digests of a log fed in uneven chunks, on a thread and
    /// here, match a one-shot SHA-256 of the file and of its complete lines.
    #[test]
    fn a_thread_and_the_reading_thread_give_the_same_digests() {
        let mut log = Vec::new();
        for i in 0..12_000 {
            log.extend_from_slice(
                format!("{{\"seq\":{i},\"pad\":\"{}\"}}\n", "x".repeat(i % 300)).as_bytes(),
            );
        }
        log.extend_from_slice(b"{\"partial\":");
        let prefix_len = log.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        let want = (digest_hex(&log), digest_hex(&log[..prefix_len]));
        assert!(log.len() as u64 >= THREAD_FROM_BYTES);
        for size in [0, log.len() as u64] {
            let got = std::thread::scope(|s| {
                let mut hashing = Hashing::start(s, size);
                assert_eq!(
                    matches!(hashing, Hashing::Thread(_)),
                    size >= THREAD_FROM_BYTES
                );
                let mut buf = vec![0u8; 4096];
                let mut at = 0;
                for (k, len) in [1usize, 4096, 17, 4095, 2048].iter().cycle().enumerate() {
                    if at >= log.len() {
                        break;
                    }
                    let n = (*len).min(log.len() - at).min(buf.len());
                    buf[..n].copy_from_slice(&log[at..at + n]);
                    at += n;
                    hashing.chunk(&mut buf, n).expect("hashed");
                    assert_eq!(buf.len(), 4096, "chunk {k}: the buffer keeps its length");
                }
                hashing.finish().expect("digests")
            });
            assert_eq!(got, want, "size hint {size}");
        }
    }
}
