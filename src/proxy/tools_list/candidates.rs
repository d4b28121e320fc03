//! What the passes over one server line share: its candidates (the messages that answer a
//! client's `tools/list`), the error that replaces a candidate, and a write that remembers its
//! first failure.

use std::io::{self, Write};

use super::walk::Malformed;
use crate::proxy::message::as_str;
use crate::proxy::respond;

/// A candidate message of a line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Candidate {
    /// Byte offset of the message (its identity within the line).
    pub start: usize,
    /// The client id it answers: an index into the line's spellings; `None` when the id set is
    /// saturated (the server's own id is echoed).
    pub client: Option<usize>,
    /// Why it is not a well-formed `tools/list` result.
    pub problem: Option<Malformed>,
    /// Some of its tools are removed.
    pub loses: bool,
}

/// The candidates of one line, in order, and the client ids they answer.
#[derive(Default)]
pub(crate) struct Candidates {
    pub list: Vec<Candidate>,
    /// The client's spelling of each id a candidate answers.
    pub spellings: Vec<Box<str>>,
}

impl Candidates {
    /// The candidate starting at `start`, given that lookups come in increasing order of
    /// `start` (the order of the walk); `cursor` remembers where the last one was.
    pub(crate) fn at(&self, cursor: &mut usize, start: usize) -> Option<usize> {
        while self.list.get(*cursor).is_some_and(|c| c.start < start) {
            *cursor += 1;
        }
        self.list
            .get(*cursor)
            .filter(|c| c.start == start)
            .map(|_| *cursor)
    }
}

/// The JSON-RPC error that replaces a message (SPEC §5): code -32603, the given id (raw JSON
/// text; `None` is `null`).
pub(crate) fn withheld_error(id: Option<&str>, why: &str) -> Vec<u8> {
    let raw = id.and_then(crate::proxy::message::raw_id);
    respond::error(raw, respond::INTERNAL_ERROR, &format!("assay: {why}"))
}

/// Writes `bytes` and reports whether the write failed, so the passes can stop early.
pub(crate) fn put(w: &mut dyn Write, bytes: &[u8], failed: &mut Option<io::Error>) {
    if failed.is_none() {
        if let Err(e) = w.write_all(bytes) {
            *failed = Some(e);
        }
    }
}

/// The decoded name of a tool (raw JSON string text, quotes included).
pub(crate) fn tool_name(raw: &str) -> Option<String> {
    as_str(raw).map(std::borrow::Cow::into_owned)
}
