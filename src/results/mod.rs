//! What the server answers (SPEC §5.3): each answer to a governed request (`tools/call`,
//! `resources/read`, `prompts/get`, `completion/complete`) judged against the policy's `results`
//! section before the client reads it. Above `policy/` (it applies the compiled section), below
//! `proxy/` (which hooks it into the server→client path and writes its evidence).
//!
//! - `walk`: the values of one strictly read JSON text with their paths and byte spans.
//! - `judge`: one message in; refusal, rewrite, findings, content parts, `isError` out.
//! - this file: the messages of a line (one, or each element of a batch) and their ids.
#![forbid(unsafe_code)]

mod judge;
mod walk;

pub use self::judge::{Asked, Finding, Judged, MAX_FINDINGS, judge, too_large, unreadable};
use self::walk::{Seg, Visit};

pub(crate) use self::walk::MAX_DEPTH;

/// The line without its terminator (`\n`, or `\r\n`): the bytes an answer's digest covers.
pub fn without_terminator(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// One message of a batch: its byte span in the line and that of its top-level `id` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageSpan {
    /// Start of the message in the line.
    pub start: usize,
    /// End (exclusive).
    pub end: usize,
    /// The span of the raw JSON text of its `id` member (`None`: none).
    pub id: Option<(usize, usize)>,
}

struct Elements {
    out: Vec<MessageSpan>,
    /// Where the text starts (a scalar's span is found from its address).
    base: usize,
    /// The span of the id of the element being walked.
    id: Option<(usize, usize)>,
}

impl<'a> Visit<'a> for Elements {
    fn string(&mut self, path: &[Seg<'a>], start: usize, end: usize) {
        self.value(path, start, end, false);
    }
    fn scalar(&mut self, path: &[Seg<'a>], raw: &'a str) {
        let start = (raw.as_ptr() as usize).saturating_sub(self.base);
        self.value(path, start, start + raw.len(), false);
    }
    fn close(&mut self, path: &[Seg<'a>], start: usize, end: usize) {
        self.value(path, start, end, true);
    }
}

impl Elements {
    fn value(&mut self, path: &[Seg<'_>], start: usize, end: usize, container: bool) {
        match path {
            [Seg::Index(_)] => {
                let id = if container { self.id.take() } else { None };
                self.out.push(MessageSpan { start, end, id });
            }
            [Seg::Index(_), id] if id.is("id") && !container => self.id = Some((start, end)),
            _ => {}
        }
    }
}

/// The messages of a batch line (a JSON array the strict rules accept), each with the span of
/// its id; `None` when the line is not such a batch.
pub fn batch_elements(line: &[u8]) -> Option<Vec<MessageSpan>> {
    let text = std::str::from_utf8(line).ok()?;
    if !text.trim_start().starts_with('[') {
        return None;
    }
    let mut e = Elements {
        out: Vec::new(),
        base: text.as_ptr() as usize,
        id: None,
    };
    // One pass: scanned and walked together.
    walk::scan_walk(text, MAX_DEPTH, &mut e).ok()?;
    Some(e.out)
}

#[cfg(test)]
mod tests;
