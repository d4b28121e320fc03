//! The server's stdin, shared by the two directions: the client→server path forwards client
//! lines to it ([`super::emitter::ActionRunner`]), and the server→client path answers a server
//! request the policy refused (SPEC §5.2: "answered to the server … never reaches the client").
//! One lock, whole lines: the two never interleave inside a line.

use std::io::{self, BufWriter, Write};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::endpoint::Endpoint;

/// Buffer of the server's stdin.
const BUFFER: usize = 64 * 1024;

/// The server's stdin, until the client's input ends and it is closed.
pub(crate) struct ServerInput {
    inner: Mutex<Option<BufWriter<Endpoint>>>,
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the server's input is closed")
}

impl ServerInput {
    /// Not connected yet: writes fail until [`ServerInput::connect`].
    pub(crate) fn new() -> Self {
        Self {
            inner: Mutex::new(None),
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

    /// Writes one whole line (the bytes and a newline) and flushes: an answer to a server
    /// request, which the server waits for. After [`ServerInput::close`] it fails.
    pub(crate) fn answer(&self, line: &[u8]) -> io::Result<()> {
        match &mut *self.lock() {
            Some(w) => w
                .write_all(line)
                .and_then(|()| w.write_all(b"\n"))
                .and_then(|()| w.flush()),
            None => Err(closed()),
        }
    }

    /// Flushes and closes the server's stdin (the server reads end of input).
    pub(crate) fn close(&self) -> io::Result<()> {
        let taken = self.lock().take();
        match taken {
            Some(mut w) => w.flush(),
            None => Ok(()),
        }
    }
}
