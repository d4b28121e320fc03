//! Wrapper diagnostics: one line each, prefixed `assay:`, to the diagnostics sink — for a capture
//! the retained `proxy-stderr.log` shared with the child's stderr, otherwise the host's stderr
//! when it was checked to be one ([`crate::sys::fd::checked_stderr`], SPEC §3.1b), otherwise
//! nowhere. Never to the client output, which carries protocol only, and never to whatever
//! happens to be numbered 2 in a host that closed its standard descriptors.
//! Every line is rendered by [`crate::text::render`], so it is one line whatever text it carries.
//!
//! A line is written whole, with one write, when it is said ([`Diag::say`]). The lines the
//! server worker says about the entries it removed from a listing are held instead
//! ([`Diag::say_held`]) and written together when that worker next waits for the server's
//! output, or sooner ([`Diag::release`]; docs/decisions.md, "Listing diagnostics written
//! together"): a client that lists in a loop no longer costs one write per removed entry.
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::Write;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::sys::fork_close::Tracked;

/// Held lines are written as soon as they reach this many bytes.
const HELD_BYTES: usize = 16 * 1024;

pub(crate) struct Diag {
    sink: Mutex<Sink>,
    pub verbose: bool,
}

struct Sink {
    /// Not kept by a fork of the host (SPEC §3.1b). `None`: diagnostics are dropped.
    file: Option<Tracked<File>>,
    /// Whole lines said with [`Diag::say_held`], not written yet.
    held: Vec<u8>,
}

impl Sink {
    /// Writes the held lines, then `line` (either may be empty), in one write; best effort.
    fn write(&mut self, line: &[u8]) {
        let Some(f) = self.file.as_mut() else {
            self.held.clear();
            return;
        };
        let _ = if self.held.is_empty() {
            f.write_all(line)
        } else {
            self.held.extend_from_slice(line);
            f.write_all(&self.held)
        };
        self.held.clear();
    }
}

/// `assay: <msg>\n`, `msg` rendered for a person.
fn line_of(msg: &str) -> String {
    let mut line = String::with_capacity(msg.len() + 16);
    line.push_str("assay: ");
    crate::text::render_into(&mut line, msg);
    line.push('\n');
    line
}

impl Diag {
    /// Diagnostics to `file`; `None` drops them.
    pub(crate) fn new(file: Option<File>, verbose: bool) -> Self {
        Self {
            sink: Mutex::new(Sink {
                file: file.map(Tracked::new),
                held: Vec::new(),
            }),
            verbose,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Sink> {
        self.sink.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `assay: <msg>\n` in one write (after any held lines, which were said before it);
    /// diagnostics are best effort. `msg` goes through the one renderer of text for people
    /// ([`crate::text::render`], SPEC §10): a tool name or other peer text in it cannot break
    /// the line or reach the terminal raw.
    pub(crate) fn say(&self, msg: &str) {
        let line = line_of(msg);
        self.lock().write(line.as_bytes());
    }

    /// [`Diag::say`], the line held until [`Diag::release`], the next [`Diag::say`], or
    /// [`HELD_BYTES`] of held lines.
    pub(crate) fn say_held(&self, msg: &str) {
        let mut sink = self.lock();
        if sink.file.is_none() {
            return;
        }
        let line = line_of(msg);
        sink.held.extend_from_slice(line.as_bytes());
        if sink.held.len() >= HELD_BYTES {
            sink.write(b"");
        }
    }

    /// Writes the held lines, if any.
    pub(crate) fn release(&self) {
        let mut sink = self.lock();
        if !sink.held.is_empty() {
            sink.write(b"");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn diag() -> (Diag, File) {
        let path = tempfile::NamedTempFile::new().unwrap();
        let (file, reader) = (path.reopen().unwrap(), path.reopen().unwrap());
        (Diag::new(Some(file), false), reader)
    }

    fn written(f: &mut File) -> String {
        let mut s = String::new();
        f.read_to_string(&mut s).unwrap();
        s
    }

    /// Held lines wait for the release; a line said meanwhile comes after them, in said order.
    #[test]
    fn held_lines_are_written_at_the_release_or_before_the_next_line_said() {
        let (d, mut r) = diag();
        d.say_held("removed tool `a`");
        d.say_held("removed tool `b`\u{1b}[2J");
        assert_eq!(written(&mut r), "");
        d.release();
        assert_eq!(
            written(&mut r),
            "assay: removed tool `a`\nassay: removed tool `b`\\u{1b}[2J\n"
        );
        d.release();
        assert_eq!(written(&mut r), "");
        d.say_held("c");
        d.say("d");
        assert_eq!(written(&mut r), "assay: c\nassay: d\n");
    }

    /// Held lines never grow past the bound: they are written once they reach it.
    #[test]
    fn held_lines_are_written_at_the_bound() {
        let (d, mut r) = diag();
        let msg = "x".repeat(1000);
        let mut said = 0;
        while written(&mut r).is_empty() {
            d.say_held(&msg);
            said += 1;
            assert!(said * 1008 <= HELD_BYTES + 1008, "held past the bound");
        }
        assert_eq!(said, HELD_BYTES.div_ceil(1008));
    }
}
