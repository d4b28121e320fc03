//! Thin public entry points for the fuzz targets in `fuzz/` (SPEC §11: "the reader and the
//! client-line parser are fuzzed"). Not API: hidden from the docs, no stability promise. Each
//! function only calls the crate-private code it names and summarizes the result, so a fuzz
//! target can check invariants without reaching into private types.

use crate::proxy::message::{ClientLine, Head, classify};
use crate::strict_json::ScanErrorKind;

/// What the client-line classifier (SPEC §3 item 6) made of one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientLineSummary {
    /// Empty or whitespace-only: forwarded unchanged.
    Blank,
    /// Refused with -32700 for this reason.
    ParseError(ScanErrorKind),
    /// A carriage return inside the line (at this offset): refused with -32700.
    CarriageReturn(usize),
    /// Valid JSON that is neither an object nor an array: refused with -32600.
    NotObject,
    /// One message (an object).
    Single(MessageSummary),
    /// A batch: one entry per element; `None` for an element that is not an object.
    Batch(Vec<Option<MessageSummary>>),
}

/// The members of one message the proxy looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageSummary {
    /// `method` is the string `tools/call` (after unescaping): the proxy evaluates it.
    pub is_tools_call: bool,
    /// The raw text of `method`, if present.
    pub method: Option<String>,
    /// The raw text of `id`, if present (`null` included).
    pub id: Option<String>,
}

fn summarize(head: &Head<'_>) -> MessageSummary {
    MessageSummary {
        is_tools_call: head.method_is("tools/call"),
        method: head.method.map(|m| m.get().to_string()),
        id: head.id.map(|i| i.get().to_string()),
    }
}

/// Classifies one client line (newline included) exactly as the proxy does.
pub fn classify_client_line(line: &[u8]) -> ClientLineSummary {
    match classify(line) {
        ClientLine::Blank => ClientLineSummary::Blank,
        ClientLine::ParseError(e) => ClientLineSummary::ParseError(e.kind),
        ClientLine::CarriageReturn(at) => ClientLineSummary::CarriageReturn(at),
        ClientLine::NotObject => ClientLineSummary::NotObject,
        ClientLine::Single(h) => ClientLineSummary::Single(summarize(&h)),
        ClientLine::Batch(items) => {
            ClientLineSummary::Batch(items.iter().map(|h| h.as_ref().map(summarize)).collect())
        }
    }
}

/// The nesting bound the proxy applies to client lines.
pub const CLIENT_MAX_DEPTH: usize = crate::proxy::message::CLIENT_MAX_DEPTH;
