//! The borrowed siblings of a decision-log row ([`DecisionRef`], [`McpDecisionRef`]): the
//! fields of a line the reader's one-pass parser read, pointing into the log's bytes. The owned
//! rows ([`DecisionRow`], [`McpDecisionRow`]: `capture show`, suggest) are made from them, so the
//! reading has one home; a replay judges them where they lie, allocating nothing for a decision
//! that does not change. The choice between the two readings of a line lives here too ([`row`],
//! [`with_row_ref`]): the one-pass parser's when it reads the line, else `rows`' `serde` reading.

use super::decision_line::LineKind;
use super::fast_line_parser::{Text, parse_texts};
use super::rows::{DecisionRow, LogLine, McpDecisionRow, serde_row};

/// One `tools/call` decision (SPEC §4.1) as recorded, borrowed: the fields of [`DecisionRow`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DecisionRef<'a> {
    pub(crate) seq: u64,
    pub(crate) time: &'a str,
    pub(crate) tool: Option<&'a str>,
    pub(crate) tool_call_id: Option<&'a str>,
    pub(crate) decision: &'a str,
    pub(crate) reason_code: &'a str,
    pub(crate) reason: &'a str,
    pub(crate) matched_rule: Option<&'a str>,
    pub(crate) enforced: bool,
    pub(crate) arguments: Option<&'a str>,
    pub(crate) arguments_truncated: bool,
    pub(crate) arguments_sha256: Option<&'a str>,
    pub(crate) tool_definition_sha256: Option<&'a str>,
}

/// One decision on another governed method (SPEC §4.1a) as recorded, borrowed: the fields of
/// [`McpDecisionRow`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct McpDecisionRef<'a> {
    pub(crate) seq: u64,
    pub(crate) time: &'a str,
    pub(crate) method: &'a str,
    pub(crate) direction: &'a str,
    pub(crate) target: Option<&'a str>,
    pub(crate) request_id: Option<&'a str>,
    pub(crate) decision: &'a str,
    pub(crate) reason_code: &'a str,
    pub(crate) reason: &'a str,
    pub(crate) matched_rule: Option<&'a str>,
    pub(crate) enforced: bool,
}

/// One line of a log, borrowed: a decision where it lies in the log's bytes, or any row.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RowRef<'a> {
    /// A `tools/call` decision.
    Decision(DecisionRef<'a>),
    /// A decision on another governed method.
    McpDecision(McpDecisionRef<'a>),
    /// A listing, an answer's event or a refused line (never a decision).
    Line(&'a LogLine),
}

impl<'a> RowRef<'a> {
    /// The row `line` as a borrowed one.
    pub(crate) fn of(line: &'a LogLine) -> Self {
        match line {
            LogLine::Decision(d) => RowRef::Decision(d.view()),
            LogLine::McpDecision(d) => RowRef::McpDecision(d.view()),
            other => RowRef::Line(other),
        }
    }

    /// The owned row.
    pub(crate) fn into_owned(self) -> LogLine {
        match self {
            RowRef::Decision(d) => LogLine::Decision(d.into_owned()),
            RowRef::McpDecision(d) => LogLine::McpDecision(d.into_owned()),
            RowRef::Line(l) => l.clone(),
        }
    }
}

impl DecisionRef<'_> {
    /// The owned row.
    pub(crate) fn into_owned(self) -> DecisionRow {
        DecisionRow {
            seq: self.seq,
            time: self.time.to_owned(),
            tool: self.tool.map(str::to_owned),
            tool_call_id: self.tool_call_id.map(str::to_owned),
            decision: self.decision.to_owned(),
            reason_code: self.reason_code.to_owned(),
            reason: self.reason.to_owned(),
            matched_rule: self.matched_rule.map(str::to_owned),
            enforced: self.enforced,
            arguments: self.arguments.map(str::to_owned),
            arguments_truncated: self.arguments_truncated,
            arguments_sha256: self.arguments_sha256.map(str::to_owned),
            tool_definition_sha256: self.tool_definition_sha256.map(str::to_owned),
        }
    }
}

impl McpDecisionRef<'_> {
    /// The owned row.
    pub(crate) fn into_owned(self) -> McpDecisionRow {
        McpDecisionRow {
            seq: self.seq,
            time: self.time.to_owned(),
            method: self.method.to_owned(),
            direction: self.direction.to_owned(),
            target: self.target.map(str::to_owned),
            request_id: self.request_id.map(str::to_owned),
            decision: self.decision.to_owned(),
            reason_code: self.reason_code.to_owned(),
            reason: self.reason.to_owned(),
            matched_rule: self.matched_rule.map(str::to_owned),
            enforced: self.enforced,
        }
    }
}

impl DecisionRow {
    /// The row, borrowed.
    pub(crate) fn view(&self) -> DecisionRef<'_> {
        DecisionRef {
            seq: self.seq,
            time: &self.time,
            tool: self.tool.as_deref(),
            tool_call_id: self.tool_call_id.as_deref(),
            decision: &self.decision,
            reason_code: &self.reason_code,
            reason: &self.reason,
            matched_rule: self.matched_rule.as_deref(),
            enforced: self.enforced,
            arguments: self.arguments.as_deref(),
            arguments_truncated: self.arguments_truncated,
            arguments_sha256: self.arguments_sha256.as_deref(),
            tool_definition_sha256: self.tool_definition_sha256.as_deref(),
        }
    }
}

impl McpDecisionRow {
    /// The row, borrowed.
    pub(crate) fn view(&self) -> McpDecisionRef<'_> {
        McpDecisionRef {
            seq: self.seq,
            time: &self.time,
            method: &self.method,
            direction: &self.direction,
            target: self.target.as_deref(),
            request_id: self.request_id.as_deref(),
            decision: &self.decision,
            reason_code: &self.reason_code,
            reason: &self.reason,
            matched_rule: self.matched_rule.as_deref(),
            enforced: self.enforced,
        }
    }
}

/// An optional text's value: `Some(None)` when absent or null, `None` when written with an
/// escape.
fn opt(t: Option<Text<'_>>) -> Option<Option<&str>> {
    match t {
        None => Some(None),
        Some(t) => t.plain().map(Some),
    }
}

/// A required text's value: `None` when absent, null or written with an escape.
fn text(t: Option<Text<'_>>) -> Option<&str> {
    t.and_then(Text::plain)
}

/// A tool or MCP decision read by the reader's one-pass parser, borrowed from `line`; `None`
/// when the line is not in its shape or a text holds an escape (`serde` then reads it and undoes
/// them).
pub(super) fn fast_ref(line: &str) -> Option<RowRef<'_>> {
    let (v, kind, t) = parse_texts(line)?;
    Some(match kind {
        LineKind::Tool => RowRef::Decision(DecisionRef {
            seq: v.seq,
            time: v.time,
            tool: opt(t.tool)?,
            tool_call_id: opt(t.tool_call_id)?,
            decision: t.decision,
            reason_code: t.reason_code,
            reason: text(t.reason)?,
            matched_rule: opt(t.matched_rule)?,
            enforced: v.enforced,
            arguments: opt(t.arguments)?,
            arguments_truncated: v.arguments_truncated == Some(true),
            arguments_sha256: v.arguments_sha256,
            tool_definition_sha256: v.tool_definition_sha256,
        }),
        LineKind::Mcp => RowRef::McpDecision(McpDecisionRef {
            seq: v.seq,
            time: v.time,
            method: text(t.method)?,
            direction: t.direction?,
            target: opt(t.target)?,
            request_id: opt(t.request_id)?,
            decision: t.decision,
            reason_code: t.reason_code,
            reason: text(t.reason)?,
            matched_rule: opt(t.matched_rule)?,
            enforced: v.enforced,
        }),
        _ => return None,
    })
}

/// The row of a line the checks accepted, by its `type` (as the reader chose its shape).
pub(super) fn row(line: &str) -> Option<LogLine> {
    // A decision in the wrapper's shape, without escapes in its texts: its fields as the
    // reader's one-pass parser reads them (the same values `serde` reads, a test holds them).
    fast_row(line).or_else(|| serde_row(line))
}

/// The row of a line the checks accepted, handed to `each` borrowed: a decision the one-pass
/// parser reads where it lies in `line` (allocating nothing), any other row read by `serde` and
/// lent.
pub(super) fn with_row_ref<R>(line: &str, each: impl FnOnce(Option<RowRef<'_>>) -> R) -> R {
    match fast_ref(line) {
        Some(r) => each(Some(r)),
        None => {
            let owned = serde_row(line);
            each(owned.as_ref().map(RowRef::of))
        }
    }
}

/// The owned row of a tool or MCP decision read by the reader's one-pass parser
/// ([`fast_ref`]).
pub(super) fn fast_row(line: &str) -> Option<LogLine> {
    fast_ref(line).map(RowRef::into_owned)
}

#[cfg(test)]
mod tests {
    use super::super::show::{for_each_closed_row, lines_of};
    use super::super::testutil::Builder;
    use crate::capture_files::DECISIONS;

    /// The rows handed out borrowed are the rows `capture show` reads of a closed log, line for
    /// line, on a varied capture and on every single-byte edit of it (escapes, broken lines,
    /// lines that are no row, bytes that are not UTF-8 and a partial tail included).
    #[test]
    fn borrowed_rows_are_the_owned_rows() {
        let mut b = Builder::new(4);
        b.other_events = true;
        let dir = b.build();
        let log = std::fs::read(dir.path().join(DECISIONS)).unwrap();
        let check = |bytes: &[u8]| {
            let mut borrowed = Vec::new();
            for_each_closed_row(bytes, |r| borrowed.push(r.into_owned()));
            assert_eq!(borrowed, lines_of(bytes, true, None).lines);
        };
        check(&log);
        check(b"");
        check(b"{\"partial\":");
        for i in 0..log.len() {
            for byte in [b'\\', b'"', b'x', b'\n', 0xff] {
                let mut edited = log.clone();
                edited[i] = byte;
                check(&edited);
            }
        }
    }
}
