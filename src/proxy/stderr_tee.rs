//! `--server-stderr tee`: in a capture, the server's stderr goes to the capture's stderr log and
//! also to the wrapper's own stderr (the host's log), instead of to the log only.
//!
//! The server writes into a pipe; a thread copies every chunk to the log, then to a duplicate of
//! the wrapper's stderr, until end of file (the server and everything it started have closed
//! their stderr). Like an inherited stderr, a host that never reads the wrapper's stderr stalls
//! the server once that pipe is full; the log then waits too. The thread inherits the session
//! thread's signal mask (SIGPIPE and SIGXFSZ blocked, SPEC §4.1): a write that fails is skipped,
//! never the death of the wrapper.

use std::fs::File;
use std::io::{self, Read, Write};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The copying thread.
pub(crate) struct Tee {
    thread: JoinHandle<()>,
}

/// Starts the copy into `log` and the host's stderr (when it was checked to be one, SPEC §3.1b);
/// returns the file the server's stderr
/// is to be (the pipe's write end) and the thread's handle.
pub(crate) fn start(log: File, stderr: Option<File>) -> io::Result<(File, Tee)> {
    // Both ends numbered 3 or above (SPEC §3.1b).
    let (reader, writer) = crate::sys::fd::pipe()?;
    let reader = io::PipeReader::from(reader);
    let thread = std::thread::Builder::new()
        .name("assay-stderr-tee".to_string())
        .spawn(move || copy(reader, log, stderr))?;
    Ok((File::from(writer), Tee { thread }))
}

fn copy(mut from: io::PipeReader, mut log: File, mut stderr: Option<File>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let chunk = buf.get(..n).unwrap_or_default();
                // The log first: it is the retained record.
                let _ = log.write_all(chunk);
                if let Some(stderr) = stderr.as_mut() {
                    let _ = stderr.write_all(chunk);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

impl Tee {
    /// Waits at most `within` for the copy to reach end of file (the server has been reaped by
    /// now, so only a process it left behind can hold the pipe open); a copy still running then
    /// is left to finish on its own.
    pub(crate) fn finish(self, within: Duration) {
        let deadline = Instant::now() + within;
        while !self.thread.is_finished() && Instant::now() < deadline {
            crate::sys::child::nap(Duration::from_millis(5));
        }
        if self.thread.is_finished() {
            let _ = self.thread.join();
        }
    }
}
