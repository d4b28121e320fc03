//! The client output shared by both workers: whole lines only, under one lock, so lines from the
//! two workers never interleave. Buffered; each worker flushes before it blocks for more input.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::Mutex;

pub(crate) struct ClientOutput {
    inner: Mutex<BufWriter<File>>,
}

const BUFFER: usize = 64 * 1024;

impl ClientOutput {
    pub(crate) fn new(file: File) -> Self {
        Self {
            inner: Mutex::new(BufWriter::with_capacity(BUFFER, file)),
        }
    }

    fn lock(&self) -> io::Result<std::sync::MutexGuard<'_, BufWriter<File>>> {
        self.inner
            .lock()
            .map_err(|_| io::Error::other("client output lock poisoned by a panicked worker"))
    }

    /// Appends one whole line (or several whole lines) atomically with respect to the other
    /// worker.
    pub(crate) fn write_line(&self, line: &[u8]) -> io::Result<()> {
        self.lock()?.write_all(line)
    }

    /// Writes one whole line (or several) with `write`, holding the lock throughout, so a long
    /// response can be streamed without being built in memory first.
    pub(crate) fn write_with(
        &self,
        write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
    ) -> io::Result<()> {
        write(&mut *self.lock()?)
    }

    pub(crate) fn flush(&self) -> io::Result<()> {
        self.lock()?.flush()
    }
}
