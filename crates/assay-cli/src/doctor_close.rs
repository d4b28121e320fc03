//! `assay mcp doctor`: ending an entry as the MCP SDK clients end a stdio server (TypeScript
//! `StdioClientTransport.close`, Python `stdio_client`): close its input, wait up to 2 s for it to
//! exit, then SIGTERM, wait up to 2 s, then SIGKILL. The time from the input's close to the exit
//! is what a host waits at every shutdown. The process is observed with `try_wait` every 2 ms
//! (so the time is exact to about 2 ms) and is never signalled once it has been reaped.

use std::io::Read;
use std::process::{Child, ChildStderr, ExitStatus};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Each wait of the SDKs' close: after the input closes, and after SIGTERM.
pub(crate) const GRACE: Duration = Duration::from_secs(2);

/// How often the process's status is asked for while waiting.
const POLL: Duration = Duration::from_millis(2);

/// The bytes of the server's stderr kept (the end).
const STDERR_KEPT: usize = 16 * 1024;

/// What ended the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndedBy {
    /// It had exited before its input was closed.
    BeforeClose,
    /// It exited within 2 s of its input's close (a clean close).
    InputClosed,
    /// It exited after the SIGTERM.
    Sigterm,
    /// It exited after the SIGKILL.
    Sigkill,
    /// It had not exited 2 s after the SIGKILL.
    NotEnded,
}

impl EndedBy {
    /// The JSON spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EndedBy::BeforeClose => "before_close",
            EndedBy::InputClosed => "input_closed",
            EndedBy::Sigterm => "sigterm",
            EndedBy::Sigkill => "sigkill",
            EndedBy::NotEnded => "not_ended",
        }
    }
}

/// How the close went.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Closed {
    pub ended_by: EndedBy,
    /// From the input's close to the exit (zero when it had exited before).
    pub close_to_exit: Option<Duration>,
    pub status: Option<ExitStatus>,
}

/// Closes the process's input (`close_input`) and ends it as the SDKs do.
pub(crate) fn close(child: &mut Child, close_input: impl FnOnce()) -> Closed {
    if let Ok(Some(status)) = child.try_wait() {
        close_input();
        return Closed {
            ended_by: EndedBy::BeforeClose,
            close_to_exit: Some(Duration::ZERO),
            status: Some(status),
        };
    }
    close_input();
    let start = Instant::now();
    let steps = [
        (EndedBy::InputClosed, None),
        (EndedBy::Sigterm, Some(nix::sys::signal::Signal::SIGTERM)),
        (EndedBy::Sigkill, Some(nix::sys::signal::Signal::SIGKILL)),
    ];
    for (n, (ended_by, signal)) in (1u32..).zip(steps) {
        if let Some(signal) = signal {
            // Not reaped yet (the last `try_wait` saw it running), so the pid is still its own.
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
            }
        }
        if let Some(status) = wait_until(child, start + GRACE * n) {
            return Closed {
                ended_by,
                close_to_exit: Some(start.elapsed()),
                status: Some(status),
            };
        }
    }
    Closed {
        ended_by: EndedBy::NotEnded,
        close_to_exit: None,
        status: None,
    }
}

/// The process's status once it has exited, or `None` at `deadline`.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            Err(_) => return None,
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        std::thread::sleep(left.min(POLL));
    }
}

/// The end of a server's stderr, collected by a thread of its own (which ends when every
/// holder of the pipe has closed it).
pub(crate) struct StderrTail {
    bytes: Arc<Mutex<Vec<u8>>>,
    /// Disconnected when the thread has read the end of the pipe.
    ended: std::sync::mpsc::Receiver<()>,
}

impl StderrTail {
    pub(crate) fn collect(mut stderr: ChildStderr) -> Self {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&bytes);
        let (tx, ended) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            let _tx = tx;
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut buf) {
                let Ok(mut v) = kept.lock() else { return };
                v.extend_from_slice(buf.get(..n).unwrap_or_default());
                let excess = v.len().saturating_sub(STDERR_KEPT);
                v.drain(..excess);
            }
        });
        Self { bytes, ended }
    }

    /// The last line that is not empty, as the server wrote it (lossy UTF-8), unrendered,
    /// once every holder of the pipe has closed it or `wait` has passed.
    pub(crate) fn last_line(&self, wait: Duration) -> Option<String> {
        let _ = self.ended.recv_timeout(wait);
        let v = self.bytes.lock().ok()?;
        String::from_utf8_lossy(&v)
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
    }
}
