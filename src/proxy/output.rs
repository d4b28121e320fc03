//! The client output shared by both workers: whole lines only, under one lock, so lines from the
//! two workers never interleave. Buffered; each worker flushes before it blocks for more input.
//!
//! When the server's stdout reaches end of file the server→client worker writes the server's last
//! bytes (a final line without `\n` included), flushes and closes the output in one step under the
//! lock (SPEC §3 item 7): the client sees end of file as it would from the server itself, and no
//! byte of the wrapper's own can follow, so none ever shares a line with a server line. Every
//! later write fails ("client output closed").
//!
//! Writes go to an [`Endpoint`]: they wait for room cancellably, so a client that stopped
//! reading holds this lock only until the session cancels (SPEC §3.1a).

use std::io::{self, BufWriter, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::endpoint::Endpoint;

pub(crate) struct ClientOutput {
    /// `None` once closed.
    inner: Mutex<Option<BufWriter<Endpoint>>>,
    closed: AtomicBool,
}

const BUFFER: usize = 64 * 1024;

fn closed_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        "client output closed after the server closed its output",
    )
}

impl ClientOutput {
    pub(crate) fn new(out: Endpoint) -> Self {
        Self {
            inner: Mutex::new(Some(BufWriter::with_capacity(BUFFER, out))),
            closed: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> io::Result<std::sync::MutexGuard<'_, Option<BufWriter<Endpoint>>>> {
        self.inner
            .lock()
            .map_err(|_| io::Error::other("client output lock poisoned by a panicked worker"))
    }

    /// Appends one whole line (or several whole lines) atomically with respect to the other
    /// worker. Fails once the output is closed.
    pub(crate) fn write_line(&self, line: &[u8]) -> io::Result<()> {
        match self.lock()?.as_mut() {
            Some(w) => w.write_all(line),
            None => Err(closed_error()),
        }
    }

    /// Writes one whole line (or several) with `write`, holding the lock throughout, so a long
    /// response can be streamed without being built in memory first. Fails once the output is
    /// closed.
    pub(crate) fn write_with(
        &self,
        write: impl FnOnce(&mut BufWriter<Endpoint>) -> io::Result<()>,
    ) -> io::Result<()> {
        match self.lock()?.as_mut() {
            Some(w) => write(w),
            None => Err(closed_error()),
        }
    }

    /// Flushes what is buffered; nothing to do once closed.
    pub(crate) fn flush(&self) -> io::Result<()> {
        match self.lock()?.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }

    /// Writes `last` (the server's final bytes, possibly without `\n`), flushes and closes the
    /// output, all under the lock. Idempotent.
    pub(crate) fn finish(&self, last: &[u8]) -> io::Result<()> {
        let mut guard = self.lock()?;
        self.closed.store(true, Ordering::Release);
        let Some(mut w) = guard.take() else {
            return Ok(());
        };
        w.write_all(last)?;
        w.flush()
        // Dropping the writer closes the descriptor.
    }

    /// True once the server's output ended and the client output was closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn nothing_follows_the_final_fragment() {
        let (mut r, w) = io::pipe().unwrap();
        let cancel = super::super::cancel::Cancel::new().unwrap();
        let out =
            ClientOutput::new(Endpoint::own_pipe(std::os::fd::OwnedFd::from(w), cancel).unwrap());
        out.write_line(b"{\"a\":1}\n").unwrap();
        out.finish(b"{\"partial").unwrap();
        assert!(out.is_closed());
        assert!(out.write_line(b"{\"wrapper\":1}\n").is_err());
        out.flush().unwrap();
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"{\"a\":1}\n{\"partial");
    }
}
