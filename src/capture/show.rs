//! What a capture says, for people (`assay capture show`, SPEC §10): the reader's verdict, who
//! ran (label, command digest, producer), when, how the session ended, and one row per decision
//! and per listing (what a client was shown and what was removed, SPEC §4.1a).
//!
//! Everything here comes from bytes the reader judged, never from a file it refused: after
//! [`read_capture`](super::read_capture), each file is read again through the same bounded,
//! no-follow opener, and used only when its SHA-256 equals the digest the verdict recorded for it
//! (a file changed in between is not shown) and it passed the same checks (a companion its
//! schema checks, a decision line the line checks, against the session the companions name). A
//! file the verdict did not read completely (missing, over its bound, not a regular file) is
//! never read here either. So an `unknown` capture shows its verdict and what could be read
//! safely; a decision line the reader refused is listed as refused, with why, not as a decision.

use std::path::Path;

use serde_json::Value;

use super::bounds::MAX_COMPANION_BYTES;
use super::companions::check_protocol;
use super::decision_line::{Expect, LineReasons};
use super::facts::{SessionFacts, judged_log, read_facts};
use super::fields::{Reasons, digest_of, parse_object, read_file};
use super::judgement::{Closure, ClosureKind, ClosureReasonCode};
use super::log::check_line;
use super::reader::judge;
use super::result_line::Decisions;
use super::row_refs::{RowRef, row, with_row_ref};
use super::rows::LogLine;
use crate::capture_files::{DECISIONS, PROTOCOL};
use crate::outcome::StopData;
use crate::strict_json;

/// A capture as `assay capture show` presents it: the verdict and what was read safely.
#[derive(Debug, Clone)]
pub struct CaptureReport {
    /// The verdict of [`read_capture`](super::read_capture).
    pub closure: Closure,
    /// Who ran and when, from the companions that passed their checks.
    pub session: SessionFacts,
    /// How the session ended: the stop record's `data`, when it passed its checks.
    pub stop: Option<StopData>,
    /// The decision log, line by line.
    pub decisions: DecisionLines,
}

/// The decision log as read for showing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecisionLines {
    /// One entry per complete line, in file order.
    pub lines: Vec<LogLine>,
    /// Bytes after the last newline (a partial write), not shown.
    pub partial_tail_bytes: u64,
    /// Why no line is shown at all (the log was refused by the reader, holds more lines than
    /// the reader's bound, or changed after it was judged).
    pub unavailable: Option<String>,
}

/// How many decisions of each kind the shown lines hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecisionCounts {
    /// `allow` decisions on `tools/call`.
    pub allow: u64,
    /// `deny` decisions on `tools/call`.
    pub deny: u64,
    /// `error` decisions on `tools/call`.
    pub error: u64,
    /// Decisions on the other governed methods (SPEC §4.1a `assay.mcp.decision`), counted
    /// apart: a `tools/call` count means calls, as it did before the other methods were judged.
    pub mcp_decisions: McpDecisionCounts,
    /// Lines the reader's checks refused.
    pub refused_lines: u64,
    /// Listing events (SPEC §4.1a), not counted as decisions.
    pub listings: u64,
    /// Tools removed from listings, over the listing events of `tools/list` answers (and of
    /// listings that name no method: written before listings named it).
    pub removed_tools: u64,
    /// Entries removed from the other listings (resources, resource templates, prompts, the
    /// server's instructions).
    pub removed_other: u64,
    /// Answers to governed requests recorded (SPEC §5.3), not counted as decisions.
    pub answers: u64,
}

/// How many decisions on governed methods other than `tools/call` (SPEC §4.1a, §5.2) the shown
/// lines hold, by decision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct McpDecisionCounts {
    /// `allow` decisions.
    pub allow: u64,
    /// `deny` decisions.
    pub deny: u64,
    /// `error` decisions.
    pub error: u64,
}

impl McpDecisionCounts {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.allow + self.deny + self.error
    }
}

/// Counts one decision in its `[allow, deny, error]` counter (the reader's checks accepted the
/// row, so its decision is one of the three).
fn tally(decision: &str, [allow, deny, error]: [&mut u64; 3]) {
    match decision {
        "allow" => *allow += 1,
        "deny" => *deny += 1,
        _ => *error += 1,
    }
}

impl DecisionLines {
    /// The counts of the lines shown.
    pub fn counts(&self) -> DecisionCounts {
        let mut c = DecisionCounts::default();
        for line in &self.lines {
            match line {
                LogLine::Decision(d) => {
                    tally(&d.decision, [&mut c.allow, &mut c.deny, &mut c.error])
                }
                LogLine::McpDecision(d) => {
                    let m = &mut c.mcp_decisions;
                    tally(&d.decision, [&mut m.allow, &mut m.deny, &mut m.error]);
                }
                LogLine::Listing(l) => {
                    c.listings += 1;
                    if l.lists_tools() {
                        c.removed_tools += l.removed.len() as u64;
                    } else {
                        c.removed_other += l.removed.len() as u64;
                    }
                }
                LogLine::Refused { .. } => c.refused_lines += 1,
                LogLine::Result(_) => c.answers += 1,
            }
        }
        c
    }
}

/// Reads and judges the capture directory `dir` like [`read_capture`](super::read_capture), and
/// collects what a person needs to read it (see the module docs for what is trusted). Never
/// panics and never returns an error; reads each file at most its bound plus one byte.
pub fn show_capture(dir: &Path) -> CaptureReport {
    let closure = judge(dir);
    let facts = read_facts(dir, &closure);
    let decisions = decision_lines(dir, &closure, Some(&facts.expect.view()));
    CaptureReport {
        closure,
        session: facts.session,
        stop: facts.stop,
        decisions,
    }
}

/// The capture's label (`server_id`) for a summary line or row (SPEC §10): the stop record's
/// when it passed the reader's checks, else that of the `protocol.json` the verdict judged (the
/// same bytes, by digest) when it passes its checks; `None` otherwise.
pub(super) fn label(dir: &Path, closure: &Closure) -> Option<String> {
    if let Some(id) = closure
        .stop
        .as_ref()
        .and_then(|m| m.get("server_id"))
        .and_then(Value::as_str)
    {
        return Some(id.to_string());
    }
    let judged = closure.files.get(PROTOCOL)?;
    // The verdict has the reasons already; this read's are not reported.
    let mut scratch = Reasons::default();
    let bytes = read_file(dir, PROTOCOL, MAX_COMPANION_BYTES, &mut scratch)?;
    if digest_of(&bytes) != *judged {
        return None;
    }
    let m = parse_object(PROTOCOL, &bytes, &mut scratch)?;
    check_protocol(&m, &mut scratch).map(|p| p.server_id.to_string())
}

/// The log's lines, each checked as the reader checks it against `exp` (`None`: the verdict is
/// closed, nothing to check again), from the bytes the verdict judged.
fn decision_lines(dir: &Path, closure: &Closure, exp: Option<&Expect<'_>>) -> DecisionLines {
    match judged_log(dir, closure) {
        Ok(bytes) => lines_of(&bytes, closure.closure == ClosureKind::Closed, exp),
        Err(why) => DecisionLines {
            unavailable: Some(why),
            ..DecisionLines::default()
        },
    }
}

/// The rows of a log's `bytes`, which the verdict judged: with `closed` (a closed verdict checked
/// every line of these very bytes and refused none) each line is read as its row directly;
/// otherwise each is checked as the reader checks it against `exp` first (`None`: not checked,
/// so a line that is not a row is refused).
pub(super) fn lines_of(bytes: &[u8], closed: bool, exp: Option<&Expect<'_>>) -> DecisionLines {
    let complete = memchr::memrchr(b'\n', bytes).map_or(0, |p| p + 1);
    let (body, tail) = bytes.split_at(complete);
    let count = memchr::memchr_iter(b'\n', body).count();
    let mut lines = Vec::with_capacity(count);
    let mut decisions = Decisions::default();
    for (i, line) in body.split(|&b| b == b'\n').take(count).enumerate() {
        let judged = closed
            .then(|| std::str::from_utf8(line).ok().and_then(row))
            .flatten();
        lines.push(match (judged, exp) {
            (Some(row), _) => row,
            (None, Some(exp)) => log_line(i, line, exp, &mut decisions),
            (None, None) => not_a_decision(i),
        });
    }
    DecisionLines {
        lines,
        partial_tail_bytes: tail.len() as u64,
        unavailable: None,
    }
}

/// Hands each complete line of a closed capture's log `bytes` (the bytes its verdict judged:
/// every line passed the reader's checks) to `each` as its row, borrowed: what
/// [`lines_of`] reads of a closed log, without keeping it.
pub(super) fn for_each_closed_row(bytes: &[u8], mut each: impl FnMut(RowRef<'_>)) {
    // The lines end where `memchr` finds each newline (a byte-by-byte split was ~7% of a
    // replay's samples); bytes after the last newline are no line.
    let mut start = 0;
    for (i, end) in memchr::memchr_iter(b'\n', bytes).enumerate() {
        let line = bytes.get(start..end).unwrap_or_default();
        start = end + 1;
        let mut read = |r: Option<RowRef<'_>>| match r {
            Some(r) => each(r),
            None => each(RowRef::Line(&not_a_decision(i))),
        };
        match std::str::from_utf8(line) {
            Ok(line) => with_row_ref(line, read),
            Err(_) => read(None),
        }
    }
}

/// Line `i` (0-based) refused: it is not a decision event the rows read.
fn not_a_decision(i: usize) -> LogLine {
    LogLine::Refused {
        line: i + 1,
        code: ClosureReasonCode::SchemaMismatch,
        detail: format!("{DECISIONS} line {}: not a decision event", i + 1),
    }
}

/// Line `i` (0-based): the reader's line checks first; only a line they accept becomes a row.
fn log_line(i: usize, line: &[u8], exp: &Expect<'_>, decisions: &mut Decisions) -> LogLine {
    let mut lr = LineReasons {
        list: Vec::new(),
        suppressed: 0,
        first_suppressed: None,
    };
    check_line(i, line, exp, &mut lr, decisions);
    let refused = |code: ClosureReasonCode, detail: String| LogLine::Refused {
        line: i + 1,
        code,
        detail,
    };
    if let Some(first) = lr.list.into_iter().next() {
        return refused(first.code, first.detail);
    }
    // The checks accepted the line (UTF-8, strict JSON, every field's type); the strict scan
    // runs again before serde so that no line reaches serde unscanned, whichever path checked it.
    let parsed = std::str::from_utf8(line)
        .ok()
        .filter(|t| strict_json::scan_str(t, super::bounds::MAX_DEPTH).is_ok())
        .and_then(row);
    match parsed {
        Some(row) => row,
        None => not_a_decision(i),
    }
}

impl ClosureReasonCode {
    /// What the reason code means, in plain words (the verdict's `detail` says where).
    pub fn in_words(self) -> &'static str {
        match self {
            ClosureReasonCode::MissingFile => "a required file is missing or cannot be read",
            ClosureReasonCode::NotRegularFile => {
                "a file is a symbolic link, directory, FIFO or device, not a regular file"
            }
            ClosureReasonCode::TooLarge => "a file is larger than the reader's bound",
            ClosureReasonCode::TooManyDecisions => "the decision log holds more than 10,000 lines",
            ClosureReasonCode::TooDeep => "JSON nested deeper than 32 levels",
            ClosureReasonCode::DuplicateKey => "a JSON object holds the same key twice",
            ClosureReasonCode::NonfiniteNumber => "a number is NaN, Infinity or overflows a double",
            ClosureReasonCode::InvalidJson => "a file is not valid UTF-8 JSON",
            ClosureReasonCode::SchemaMismatch => {
                "a required field is missing, mistyped or out of range"
            }
            ClosureReasonCode::ProtocolMismatch => {
                "protocol.json disagrees with the session's events"
            }
            ClosureReasonCode::ContextMismatch => {
                "the session context disagrees with the stop record or a decision"
            }
            ClosureReasonCode::IdMismatch => "an event id or session id is not this session's",
            ClosureReasonCode::CountMismatch => {
                "the decision log's lines do not match the stop record's count"
            }
            ClosureReasonCode::DigestMismatch => {
                "the decision log's SHA-256 does not match the stop record's"
            }
            ClosureReasonCode::PartialLine => "the decision log ends in a partial line",
            ClosureReasonCode::InconsistentAccounting => {
                "the stop record's fields contradict each other"
            }
            ClosureReasonCode::DecisionLogNotRetained => {
                "no decision log was retained, so nothing vouches for the decisions"
            }
            ClosureReasonCode::DecisionLoss => {
                "decision events were not written (known loss, counted)"
            }
            ClosureReasonCode::ProxyError => {
                "the session ended on an error (proxy_error); the log is incomplete by rule"
            }
            ClosureReasonCode::NoSession => {
                "the client only probed the server: no session existed, no stop record"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::{Builder, replace_in, set};
    use super::*;
    use crate::capture::ClosureKind;
    use crate::capture::MAX_LOG_BYTES;
    use crate::capture_files::CONTEXT;

    #[test]
    fn a_closed_capture_shows_every_decision_and_the_facts() {
        let dir = Builder::new(3).build();
        let r = show_capture(dir.path());
        assert_eq!(r.closure.closure, ClosureKind::Closed);
        assert_eq!(r.session.server_id.as_deref(), Some("default-mcp-server"));
        assert!(r.session.command_sha256.is_some());
        assert!(r.session.started_at.is_some() && r.session.stopped_at.is_some());
        assert!(
            r.session
                .producer
                .as_deref()
                .is_some_and(|p| p.starts_with("assay "))
        );
        assert!(r.stop.is_some());
        assert_eq!(r.decisions.unavailable, None);
        assert_eq!(r.decisions.lines.len(), 3);
        for (i, l) in r.decisions.lines.iter().enumerate() {
            let LogLine::Decision(d) = l else {
                panic!("line {i} refused: {l:?}")
            };
            assert_eq!(d.seq, i as u64);
        }
        assert_eq!(r.decisions.counts().refused_lines, 0);
    }

    #[test]
    fn a_refused_line_is_listed_as_refused_not_as_a_decision() {
        let mut b = Builder::new(3);
        b.edit_line.push(Box::new(|i, v| {
            if i == 1 {
                set(
                    v,
                    "data/session_id",
                    json!("ffffffffffffffffffffffffffffffff"),
                );
            }
        }));
        let dir = b.build();
        let r = show_capture(dir.path());
        assert_eq!(r.closure.closure, ClosureKind::Unknown);
        assert!(matches!(r.decisions.lines[0], LogLine::Decision(_)));
        assert!(
            matches!(
                &r.decisions.lines[1],
                LogLine::Refused {
                    line: 2,
                    code: ClosureReasonCode::IdMismatch,
                    ..
                }
            ),
            "{:?}",
            r.decisions.lines[1]
        );
        assert_eq!(r.decisions.counts().refused_lines, 1);
    }

    #[test]
    fn an_over_bound_log_is_never_read() {
        let dir = Builder::new(1).build();
        let log = dir.path().join(DECISIONS);
        let big = vec![b'x'; MAX_LOG_BYTES as usize + 1];
        std::fs::write(&log, big).unwrap();
        let r = show_capture(dir.path());
        assert_eq!(r.closure.closure, ClosureKind::Unknown);
        assert!(r.decisions.lines.is_empty());
        assert!(r.decisions.unavailable.is_some());
    }

    #[test]
    fn a_companion_that_fails_its_checks_gives_no_facts() {
        let dir = Builder::new(1).build();
        // The context's server_pid is no longer a number: every fact from the context goes.
        replace_in(
            dir.path(),
            CONTEXT,
            "\"server_pid\":4242",
            "\"server_pid\":\"4242\"",
        );
        let r = show_capture(dir.path());
        assert_eq!(r.closure.closure, ClosureKind::Unknown);
        assert_eq!(r.session.command_sha256, None);
        assert_eq!(r.session.started_at, None);
        // The stop record still passed its checks: its facts stay.
        assert!(r.session.stopped_at.is_some());
    }

    /// SPEC §4.1a: listing and MCP-decision lines become rows of their own; names stay the
    /// server's text (the views render them).
    #[test]
    fn listings_and_mcp_decisions_are_rows() {
        let mut b = Builder::new(4);
        b.other_events = true;
        let r = show_capture(b.build().path());
        assert_eq!(r.closure.closure, ClosureKind::Closed, "{:#?}", r.closure);
        let LogLine::Listing(l) = &r.decisions.lines[1] else {
            panic!("{:?}", r.decisions.lines[1])
        };
        assert_eq!((l.seq, l.request_id.as_str()), (1, "1"));
        assert_eq!(l.shown.len(), 2);
        assert_eq!(l.shown[1].name, "t\"\u{1}\u{202e}");
        let removed: Vec<(&str, &str)> = l
            .removed
            .iter()
            .map(|t| (t.name.as_str(), t.reason_code.as_str()))
            .collect();
        assert_eq!(
            removed,
            [
                ("exec", crate::ReasonCode::P_TOOL_UNPINNED.as_str()),
                (
                    "(instructions)",
                    crate::ReasonCode::P_INSTRUCTIONS_DRIFT.as_str()
                )
            ]
        );
        assert_eq!(l.removed[1].sha256, None);
        let LogLine::McpDecision(m) = &r.decisions.lines[2] else {
            panic!("{:?}", r.decisions.lines[2])
        };
        assert_eq!(m.method, "resources/read");
        assert_eq!(m.target.as_deref(), Some("file:///workspace/.env"));
        assert_eq!(m.decision, "deny");
        assert!(matches!(r.decisions.lines[0], LogLine::Decision(_)));
        assert!(matches!(r.decisions.lines[3], LogLine::Decision(_)));
        let c = r.decisions.counts();
        assert_eq!((c.listings, c.removed_tools, c.refused_lines), (1, 2, 0));
        // Tool decisions and the other governed methods are counted apart.
        assert_eq!(c.allow + c.deny + c.error, 2);
        assert_eq!(
            c.mcp_decisions,
            McpDecisionCounts {
                allow: 0,
                deny: 1,
                error: 0
            }
        );
        assert_eq!(c.mcp_decisions.total(), 1);
    }

    /// SPEC §4.1a `record_arguments`: a decision's recorded arguments are part of its row, as
    /// the client's text (the views render it).
    #[test]
    fn recorded_arguments_are_part_of_the_row() {
        let mut b = Builder::new(3);
        let text = format!("{{\"path\":\"/etc/{}\u{202e}\"}}", char::from(1));
        let recorded = text.clone();
        b.edit_line.push(Box::new(move |i, v| {
            if i > 0 {
                set(v, "data/arguments", json!(recorded));
                set(v, "data/arguments_truncated", json!(i == 2));
            }
        }));
        let r = show_capture(b.build().path());
        assert_eq!(r.closure.closure, ClosureKind::Closed, "{:#?}", r.closure);
        let rows: Vec<(Option<&str>, bool)> = r
            .decisions
            .lines
            .iter()
            .map(|l| match l {
                LogLine::Decision(d) => (d.arguments.as_deref(), d.arguments_truncated),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            rows,
            [
                (None, false),
                (Some(text.as_str()), false),
                (Some(text.as_str()), true)
            ]
        );
    }

    #[test]
    fn every_reason_code_has_words() {
        for code in [
            ClosureReasonCode::MissingFile,
            ClosureReasonCode::NoSession,
            ClosureReasonCode::DecisionLoss,
            ClosureReasonCode::ProxyError,
        ] {
            assert!(!code.in_words().is_empty());
        }
    }
}
