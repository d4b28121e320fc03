//! A judged capture's decision-log events as records, for `assay capture export` (SPEC §10):
//! the verdict, the facts of its companions, and each line the reader's checks accept, read as
//! a [`DecisionRecord`] — from the very bytes the reader read, hashed and checked (it keeps them
//! for this: no second read, no second hash, and nothing can change in between).
//!
//! A `closed` verdict means every complete line of those very bytes passed the reader's checks
//! (a refused line makes the verdict `unknown`), so their lines are read directly; the lines of
//! any other capture are checked again one by one, and a refused line is counted, never read.

use std::borrow::Cow;
use std::path::Path;

use super::decision_line::{LineKind, LineReasons};
use super::facts::{Facts, SessionFacts, read_facts};
use super::fast_line_parser::{Text, parse_texts};
use super::judgement::{Closure, ClosureKind};
use super::log::check_line;
use super::reader::judge_keeping;
use super::show::{DecisionLines, lines_of};
use crate::capture_files::DECISIONS;
use crate::decision_record::{DecisionRecord, EventKind, parse_line};
use crate::outcome::StopData;

/// A judged capture, ready to hand out its events.
pub(crate) struct CaptureRecords {
    /// The verdict of [`read_capture`](super::read_capture).
    pub(crate) closure: Closure,
    /// Who ran and when.
    pub(crate) session: SessionFacts,
    /// The stop record's `data`, when it passed its checks.
    pub(crate) stop: Option<StopData>,
    facts: Facts,
    /// The judged log, or why it is not available.
    log: Result<Vec<u8>, String>,
}

/// Judges the capture `dir` and reads its judged log (never panics, never fails: what cannot
/// be read is in the verdict, or in [`CaptureRecords::unavailable`]).
pub(crate) fn capture_records(dir: &Path) -> CaptureRecords {
    let (closure, kept) = judge_keeping(dir, true);
    let (facts, log) = match kept {
        Some(k) => (k.facts, k.log),
        None => (read_facts(dir, &closure), None),
    };
    let log = match log {
        Some(bytes) if closure.files.contains_key(DECISIONS) => Ok(bytes),
        _ => Err(format!(
            "{DECISIONS} was not read whole (see the verdict's reasons)"
        )),
    };
    CaptureRecords {
        session: facts.session.clone(),
        stop: facts.stop.clone(),
        closure,
        facts,
        log,
    }
}

impl CaptureRecords {
    /// The length of the log's bytes (0 when they are not available).
    pub(crate) fn log_len(&self) -> usize {
        self.log.as_ref().map_or(0, Vec::len)
    }

    /// Why the log's events cannot be handed out, if they cannot.
    pub(crate) fn unavailable(&self) -> Option<&str> {
        self.log.as_ref().err().map(String::as_str)
    }

    /// A `closed` capture's log as `capture show` reads it, line by line, from the bytes its
    /// verdict judged (every complete line passed the reader's checks, so each is read as its row
    /// directly); `None` when the capture is not closed.
    pub(crate) fn closed_lines(&self) -> Option<DecisionLines> {
        if self.closure.closure != ClosureKind::Closed {
            return None;
        }
        Some(match &self.log {
            Ok(bytes) => lines_of(bytes, true, None),
            Err(why) => DecisionLines {
                unavailable: Some(why.clone()),
                ..DecisionLines::default()
            },
        })
    }

    /// A `closed` capture's log: the bytes its verdict judged (empty when they are not
    /// available); `None` when the capture is not closed.
    pub(crate) fn closed_log(&self) -> Option<&[u8]> {
        if self.closure.closure != ClosureKind::Closed {
            return None;
        }
        Some(self.log.as_deref().unwrap_or_default())
    }

    /// Hands each event of the log that the reader's checks accept to `each`, in file order;
    /// returns how many complete lines were refused (always 0 for a `closed` capture).
    pub(crate) fn for_each(&self, mut each: impl FnMut(&DecisionRecord<'_>)) -> u64 {
        let Ok(bytes) = &self.log else { return 0 };
        let complete = memchr::memrchr(b'\n', bytes).map_or(0, |p| p + 1);
        let body = &bytes[..complete];
        let closed = self.closure.closure == ClosureKind::Closed;
        let exp = self.facts.expect.view();
        let mut refused = 0;
        // Decision lines seen so far, for the result lines that name them (SPEC §5.3).
        let mut decisions = super::result_line::Decisions::default();
        let mut start = 0;
        for (i, end) in memchr::memchr_iter(b'\n', body).enumerate() {
            let line = body.get(start..end).unwrap_or_default();
            start = end + 1;
            if !closed {
                let mut lr = LineReasons {
                    list: Vec::new(),
                    suppressed: 0,
                    first_suppressed: None,
                };
                check_line(i, line, &exp, &mut lr, &mut decisions);
                if !lr.list.is_empty() {
                    refused += 1;
                    continue;
                }
            }
            let Ok(line) = std::str::from_utf8(line) else {
                refused += 1;
                continue;
            };
            if let Some(record) = fast_record(line) {
                each(&record);
                continue;
            }
            match parse_line(line) {
                Ok(record) => each(&record),
                // An answer's event (SPEC §5.3) is no decision: not a row of the export.
                _ if is_result_event(line.as_bytes()) => {}
                _ => refused += 1,
            }
        }
        refused
    }
}

/// The record of a tool or MCP decision read by the reader's one-pass parser; `None` when the
/// line is not in its shape or a text it reads holds an escape (`parse_line` then reads it and
/// undoes them). A test holds the two readings equal.
fn fast_record(line: &str) -> Option<DecisionRecord<'_>> {
    let (v, kind, t) = parse_texts(line)?;
    let (kind, method, direction, name, request_id) = match kind {
        LineKind::Tool => (
            EventKind::ToolDecision,
            Cow::Borrowed(crate::methods::TOOLS_CALL.name),
            None,
            text(t.tool)?,
            text(t.tool_call_id)?,
        ),
        LineKind::Mcp => (
            EventKind::McpDecision,
            text(t.method)??,
            t.direction.map(Cow::Borrowed),
            text(t.target)?,
            text(t.request_id)?,
        ),
        _ => return None,
    };
    let digest = v.arguments_sha256.map(Cow::Borrowed);
    let mcp = kind == EventKind::McpDecision;
    Some(DecisionRecord {
        kind,
        session_id: Cow::Borrowed(v.session_id),
        seq: v.seq,
        time: Cow::Borrowed(v.time),
        method,
        direction,
        name,
        request_id,
        decision: Some(Cow::Borrowed(t.decision)),
        reason_code: Some(Cow::Borrowed(t.reason_code)),
        matched_rule: text(t.matched_rule)?,
        enforced: Some(v.enforced),
        policy_sha256: Cow::Borrowed(v.policy_sha256),
        arguments_sha256: if mcp { None } else { digest.clone() },
        params_sha256: if mcp { digest } else { None },
        tool_definition_sha256: v.tool_definition_sha256.map(Cow::Borrowed),
        shown: None,
        removed: Vec::new(),
        replaced_by_error: None,
    })
}

/// A text as written when it holds no escape (`Some(None)`: absent or null; `None`: escaped).
fn text(t: Option<Text<'_>>) -> Option<Option<Cow<'_, str>>> {
    match t {
        None => Some(None),
        Some(t) => t.plain().map(|s| Some(Cow::Borrowed(s))),
    }
}

/// Whether a line the reader accepted is an `assay.mcp.result` event.
fn is_result_event(line: &[u8]) -> bool {
    let ty = format!("\"type\":\"{}\"", super::decision_line::TYPE_RESULT);
    memchr::memmem::find(line, ty.as_bytes()).is_some()
}

#[cfg(test)]
mod tests {
    use super::super::rows::LogLine;
    use super::super::show::show_capture;
    use super::super::testutil::{Builder, each_line_and_edit, set};
    use super::*;
    use crate::decision_record::EventKind;
    use serde_json::json;

    /// The lines an export reads are exactly those `capture show` shows as events, closed or
    /// not; a refused line is counted, never read.
    #[test]
    fn records_are_the_lines_capture_show_accepts() {
        let mut b = Builder::new(5);
        b.other_events = true;
        let dir = b.build();
        let c = capture_records(dir.path());
        assert_eq!(c.closure.closure, ClosureKind::Closed, "{:#?}", c.closure);
        let mut kinds = Vec::new();
        assert_eq!(c.for_each(|r| kinds.push((r.seq, r.kind))), 0);
        let shown: Vec<u64> = show_capture(dir.path())
            .decisions
            .lines
            .iter()
            .filter_map(|l| match l {
                LogLine::Decision(d) => Some(d.seq),
                LogLine::Listing(l) => Some(l.seq),
                LogLine::McpDecision(m) => Some(m.seq),
                LogLine::Refused { .. } | LogLine::Result(_) => None,
            })
            .collect();
        assert_eq!(kinds.iter().map(|k| k.0).collect::<Vec<_>>(), shown);
        assert!(kinds.contains(&(1, EventKind::Listing)));
        assert!(kinds.contains(&(2, EventKind::McpDecision)));

        // A line of another session: the verdict is unknown, the line refused and not read.
        let mut b = Builder::new(4);
        b.edit_line.push(Box::new(|i, v| {
            if i == 2 {
                set(
                    v,
                    "data/session_id",
                    json!("ffffffffffffffffffffffffffffffff"),
                );
            }
        }));
        let dir = b.build();
        let c = capture_records(dir.path());
        assert_eq!(c.closure.closure, ClosureKind::Unknown);
        let mut seqs = Vec::new();
        assert_eq!(c.for_each(|r| seqs.push(r.seq)), 1);
        assert_eq!(seqs, [0, 1, 3]);
    }

    /// The one-pass reading of a record is `parse_line`'s, on every line of a varied capture
    /// and on every single-byte edit of it; a text with an escape is left to `parse_line`.
    #[test]
    fn fast_records_are_parse_line_records() {
        let mut b = Builder::new(4);
        b.other_events = true;
        let dir = b.build();
        let log = std::fs::read(dir.path().join(DECISIONS)).unwrap();
        let mut fast = 0;
        each_line_and_edit(&log, |line| {
            if let Some(r) = fast_record(line) {
                fast += 1;
                assert_eq!(Some(r), parse_line(line).ok(), "{line}");
            }
        });
        assert!(fast > 4, "the fast path read the decisions");
        let text = String::from_utf8(log).unwrap();
        let line = text.lines().find(|l| l.contains("\"tool\":\"")).unwrap();
        let escaped = line.replacen("\"tool\":\"", "\"tool\":\"\\/", 1);
        assert_eq!(fast_record(&escaped), None, "{escaped}");
        let r = parse_line(&escaped).unwrap();
        assert!(r.name.as_deref().unwrap().starts_with('/'), "{r:?}");
    }

    /// Any single byte changed in the log: never a panic, never more records than lines, and a
    /// record only from a line the reader's checks accept.
    #[test]
    fn edited_logs_never_yield_unchecked_records() {
        let mut b = Builder::new(3);
        b.other_events = true;
        let dir = b.build();
        let path = dir.path().join(DECISIONS);
        let original = std::fs::read(&path).unwrap();
        let lines = original.iter().filter(|&&b| b == b'\n').count() as u64;
        for i in (0..original.len()).step_by(7) {
            for byte in [b'"', b'\n', b'x', 0x01, 0xff] {
                let mut edited = original.clone();
                edited[i] = byte;
                std::fs::write(&path, &edited).unwrap();
                let c = capture_records(dir.path());
                let mut n = 0u64;
                let refused = c.for_each(|_| n += 1);
                let complete = edited.iter().filter(|&&b| b == b'\n').count() as u64;
                assert!(n + refused <= complete.max(lines), "offset {i}");
                if c.closure.closure == ClosureKind::Closed {
                    assert_eq!(refused, 0, "offset {i}");
                }
            }
        }
    }
}
