//! The two I/O workers of a session (SPEC §3): how each is started on its own thread with the
//! write signals blocked and its panics caught, and how it reports why it stopped. Waiting for
//! them and ending the session is `session_end`.

use std::io;
use std::sync::mpsc;
use std::thread;

use super::line::LineError;
use crate::sys::signals::block_write_signals_in_this_thread;

/// Why an I/O worker stopped early.
#[derive(Debug)]
pub(crate) enum WorkerError {
    TooLong(&'static str),
    Cancelled,
    Io(String),
    Panicked,
}

impl WorkerError {
    pub(super) fn from_line(e: LineError, what: &'static str) -> Self {
        match e {
            LineError::TooLong => WorkerError::TooLong(what),
            LineError::Cancelled => WorkerError::Cancelled,
            LineError::Io(e) => WorkerError::Io(format!("reading {what}: {e}")),
        }
    }

    pub(super) fn describe(&self, max: usize) -> String {
        match self {
            WorkerError::TooLong(what) => {
                format!("a line of {what} is longer than max_line_bytes ({max}); session ended")
            }
            WorkerError::Cancelled => "cancelled".to_string(),
            WorkerError::Io(m) => m.clone(),
            WorkerError::Panicked => "an I/O worker panicked".to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Worker {
    ClientToServer,
    ServerToClient,
}

pub(crate) type Report = (Worker, std::result::Result<(), WorkerError>);

fn start_worker<F>(
    name: &str,
    which: Worker,
    tx: mpsc::Sender<Report>,
    f: F,
) -> io::Result<thread::JoinHandle<()>>
where
    F: FnOnce() -> std::result::Result<(), WorkerError> + Send + 'static,
{
    thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            // SIGPIPE (a vanished peer) and SIGXFSZ (a decision-log write past RLIMIT_FSIZE)
            // become EPIPE / EFBIG errors in this thread instead of the death of the process
            // (SPEC §4.1); pending ones are discarded when the thread ends. No handler.
            block_write_signals_in_this_thread();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
                .unwrap_or(Err(WorkerError::Panicked));
            let _ = tx.send((which, r));
        })
}

/// The channel both workers report on, and their threads (each reports just before it ends).
pub(crate) type Started = (
    mpsc::Receiver<Report>,
    Vec<(Worker, thread::JoinHandle<()>)>,
);

/// Starts the client→server and server→client workers.
pub(crate) fn start_both<C, S>(c2s: C, s2c: S) -> io::Result<Started>
where
    C: FnOnce() -> std::result::Result<(), WorkerError> + Send + 'static,
    S: FnOnce() -> std::result::Result<(), WorkerError> + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Report>();
    let first = start_worker(
        "assay-client-to-server",
        Worker::ClientToServer,
        tx.clone(),
        c2s,
    )?;
    let second = start_worker("assay-server-to-client", Worker::ServerToClient, tx, s2c)?;
    Ok((
        rx,
        vec![
            (Worker::ClientToServer, first),
            (Worker::ServerToClient, second),
        ],
    ))
}
