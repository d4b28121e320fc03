//! Wrapper diagnostics: one line each, prefixed `assay:`, to the diagnostics sink — for a capture
//! the retained `proxy-stderr.log` shared with the child's stderr, otherwise the host's stderr
//! when it was checked to be one ([`crate::sys::fd::checked_stderr`], SPEC §3.1b), otherwise
//! nowhere. Never to the client output, which carries protocol only, and never to whatever
//! happens to be numbered 2 in a host that closed its standard descriptors.
//! Every line is rendered by [`crate::text::render`] (a line put together from pieces renders
//! the peer's pieces and copies the wrapper's own words, which are printable ASCII the renderer
//! leaves as they are), so it is one line whatever text it carries.
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
    held: String,
}

impl Sink {
    /// Writes the held lines, then `line` (either may be empty), in one write; best effort.
    fn write(&mut self, line: &str) {
        let Some(f) = self.file.as_mut() else {
            self.held.clear();
            return;
        };
        let _ = if self.held.is_empty() {
            f.write_all(line.as_bytes())
        } else {
            self.held.push_str(line);
            f.write_all(self.held.as_bytes())
        };
        self.held.clear();
    }
}

/// A part of a diagnostic said with [`Diag::say_held`].
#[derive(Clone, Copy)]
pub(crate) enum Piece<'a> {
    /// The wrapper's own words (text compiled into it).
    Ours(&'static str),
    /// Text a peer wrote (a tool name, a request id).
    Peer(&'a str),
}

/// Appends `assay: <message>\n`, the message made of `pieces`, rendered for a person (see
/// [`Diag::say_held`]): a peer's pieces go through the renderer; ours are printable ASCII
/// without a backslash, which it copies as they are, and are copied.
pub(crate) fn push_line(out: &mut String, pieces: &[Piece<'_>]) {
    out.push_str("assay: ");
    let mut after_peer = false;
    for piece in pieces {
        match *piece {
            Piece::Ours(t) => {
                debug_assert!(
                    t.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'\\')
                        && !(after_peer && t.starts_with('u')),
                    "our words are printable ASCII, and do not change how a peer's backslashes \
                     before them render: {t:?}"
                );
                out.push_str(t);
                after_peer = false;
            }
            Piece::Peer(t) => {
                debug_assert!(!after_peer, "a peer's piece after a peer's: {t:?}");
                crate::text::render_into(out, t);
                after_peer = true;
            }
        }
    }
    out.push('\n');
}

/// `assay: <msg>\n`, `msg` rendered for a person.
fn line_of(msg: &str) -> String {
    let mut line = String::with_capacity(msg.len() + 16);
    push_line(&mut line, &[Piece::Peer(msg)]);
    line
}

impl Diag {
    /// Diagnostics to `file`; `None` drops them.
    pub(crate) fn new(file: Option<File>, verbose: bool) -> Self {
        Self {
            sink: Mutex::new(Sink {
                file: file.map(Tracked::new),
                held: String::new(),
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
        self.lock().write(&line);
    }

    /// [`Diag::say`] of the message the `pieces` make, the line held until [`Diag::release`],
    /// the next [`Diag::say`], or [`HELD_BYTES`] of held lines. The line is put together in
    /// the held lines themselves (no message formatted first): the line the whole message
    /// rendered would make. A peer's piece ending in backslashes renders alone as it would
    /// inside the message when what follows it is shown as it is and does not start with `u`;
    /// our words are printable ASCII and never start with `u` after a peer's piece (a debug
    /// assertion; the tests hold the two renderings together).
    pub(crate) fn say_held(&self, pieces: &[Piece<'_>]) {
        let mut sink = self.lock();
        if sink.file.is_none() {
            return;
        }
        push_line(&mut sink.held, pieces);
        if sink.held.len() >= HELD_BYTES {
            sink.write("");
        }
    }

    /// Writes the held lines, if any.
    pub(crate) fn release(&self) {
        let mut sink = self.lock();
        if !sink.held.is_empty() {
            sink.write("");
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
        d.say_held(&[
            Piece::Ours("removed tool `"),
            Piece::Peer("a"),
            Piece::Ours("`"),
        ]);
        d.say_held(&[Piece::Ours("removed tool `b`"), Piece::Peer("\u{1b}[2J")]);
        assert_eq!(written(&mut r), "");
        d.release();
        assert_eq!(
            written(&mut r),
            "assay: removed tool `a`\nassay: removed tool `b`\\u{1b}[2J\n"
        );
        d.release();
        assert_eq!(written(&mut r), "");
        d.say_held(&[Piece::Peer("c")]);
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
            d.say_held(&[Piece::Peer(&msg)]);
            said += 1;
            assert!(said * 1008 <= HELD_BYTES + 1008, "held past the bound");
        }
        assert_eq!(said, HELD_BYTES.div_ceil(1008));
    }
}
