//! The row of a decision-log line the reader's checks accepted (`assay capture show`, `assay
//! policy replay`): its fields read by `serde`, by the line's `type`, as the reader chose its
//! shape.

use serde::Deserialize;

use super::decision_line::{TYPE_LISTING, TYPE_MCP_DECISION, TYPE_RESULT, TYPE_TOOL_DECISION};
use super::judgement::ClosureReasonCode;
use super::show_result::{self, ResultRow};

/// One complete line of the decision log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogLine {
    /// A `tools/call` decision event that passed the reader's line checks.
    Decision(DecisionRow),
    /// A listing event (SPEC §4.1a `assay.tool.listing`) that passed the reader's line checks:
    /// what a client was shown of a `tools/list` result, and what was removed.
    Listing(ListingRow),
    /// A decision on a governed method other than `tools/call` (SPEC §4.1a
    /// `assay.mcp.decision`) that passed the reader's line checks.
    McpDecision(McpDecisionRow),
    /// An answer to a governed request (SPEC §5.3 `assay.mcp.result`) that passed the reader's
    /// line checks.
    Result(ResultRow),
    /// A line the reader's checks refused: its 1-based line number and the first problem.
    Refused {
        /// 1-based line number in the log.
        line: usize,
        /// The reader's reason code.
        code: ClosureReasonCode,
        /// What was wrong, as the reader says it.
        detail: String,
    },
}

/// One decision (SPEC §4.1), as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRow {
    /// `seq`, 0-based.
    pub seq: u64,
    /// The event time (RFC 3339, UTC).
    pub time: String,
    /// The tool name (`None` for a call without one: `P_MALFORMED`).
    pub tool: Option<String>,
    /// The JSON-RPC id of the call, as a string.
    pub tool_call_id: Option<String>,
    /// `allow`, `deny` or `error`.
    pub decision: String,
    /// `P_POLICY_ALLOW`, `P_TOOL_DENIED`, …
    pub reason_code: String,
    /// The reason text.
    pub reason: String,
    /// The policy rule that decided, if any.
    pub matched_rule: Option<String>,
    /// `false` in dry run (the refusal was logged, not enforced).
    pub enforced: bool,
    /// The recorded arguments (SPEC §4.1a `record_arguments`): the canonical JSON text of
    /// `params.arguments` with redacted values, as the client's text unrendered (a view renders
    /// it, [`crate::text::render`]); `None` when the policy did not record arguments.
    pub arguments: Option<String>,
    /// The recorded arguments were cut to the 4 KiB bound.
    pub arguments_truncated: bool,
    /// SHA-256 of the RFC 8785 canonical JSON of `params.arguments`; `None` when absent.
    pub arguments_sha256: Option<String>,
    /// The definition digest the session remembered for the tool (SPEC §5.1); `None` when no
    /// listing of the session held it, or in a capture written before the field existed.
    pub tool_definition_sha256: Option<String>,
}

/// One listing (SPEC §4.1a), as recorded. Names are the server's text, unrendered: a view
/// renders them for people ([`crate::text::render`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingRow {
    /// `seq`, 0-based (shared with the decisions).
    pub seq: u64,
    /// The event time (RFC 3339, UTC).
    pub time: String,
    /// The method of the request the listing answers (`tools/list`, `resources/list`,
    /// `resources/templates/list`, `prompts/list`, or `initialize` / `server/discover` for the
    /// server's instructions); `None` in listings written before listings named it (then a
    /// `tools/list` answer, or the instructions).
    pub method: Option<String>,
    /// The client's request id, as a string.
    pub request_id: String,
    /// Each entry the client was shown (a tool, resource, template or prompt): its name (a URI
    /// or URI template for resources) and definition digest.
    pub shown: Vec<ListedTool>,
    /// Each tool removed from what the client was shown (`(instructions)` for drifted server
    /// instructions), with its digest (if any) and why.
    pub removed: Vec<RemovedTool>,
    /// The whole result was unreadable and the client got the `-32603` error instead.
    pub replaced_by_error: bool,
}

impl ListingRow {
    /// Whether the listing answers `tools/list` (or names no method: written before listings
    /// named it, when only `tools/list` answers and the instructions had listing events).
    pub fn lists_tools(&self) -> bool {
        self.method
            .as_deref()
            .is_none_or(|m| m == crate::methods::TOOLS_LIST.name)
    }

    /// Whether the listing stands for the server's `instructions` (an answer to `initialize` or
    /// `server/discover`).
    pub fn lists_instructions(&self) -> bool {
        self.method
            .as_deref()
            .and_then(crate::methods::method)
            .is_some_and(|m| m.answer == crate::methods::Answer::Instructions)
    }

    /// The list it shows, for people: its method, or `tools/list` for a listing that names none.
    pub fn list_name(&self) -> &str {
        self.method
            .as_deref()
            .unwrap_or(crate::methods::TOOLS_LIST.name)
    }
}

/// A tool a client was shown.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ListedTool {
    /// The tool's name as the server wrote it.
    pub name: String,
    /// SHA-256 of the tool's canonical definition (SPEC §5.1).
    pub sha256: String,
}

/// A tool removed from a listing.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RemovedTool {
    /// The tool's name as the server wrote it, or `(instructions)`.
    pub name: String,
    /// SHA-256 of its canonical definition, when it could be taken.
    pub sha256: Option<String>,
    /// Why it was removed: `P_TOOL_UNPINNED`, `P_TOOL_DRIFT`, `P_TOOL_DENIED`, …
    pub reason_code: String,
}

/// One decision on a governed method other than `tools/call` (SPEC §4.1a, §5.2), as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpDecisionRow {
    /// `seq`, 0-based (shared with the other events of the log).
    pub seq: u64,
    /// The event time (RFC 3339, UTC).
    pub time: String,
    /// The JSON-RPC method, e.g. `resources/read`, `sampling/createMessage`.
    pub method: String,
    /// `client_to_server` or `server_to_client`.
    pub direction: String,
    /// The resource URI, prompt name or client feature, if any.
    pub target: Option<String>,
    /// The JSON-RPC id of the message, as a string, if any.
    pub request_id: Option<String>,
    /// `allow`, `deny` or `error`.
    pub decision: String,
    /// `P_POLICY_ALLOW`, `P_RESOURCE_DENIED`, …
    pub reason_code: String,
    /// The reason text.
    pub reason: String,
    /// The policy rule that decided, if any.
    pub matched_rule: Option<String>,
    /// `false` in dry run (the refusal was logged, not enforced).
    pub enforced: bool,
}

/// The fields a row shows, read from a line that passed the reader's checks.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    ty: std::borrow::Cow<'a, str>,
    time: String,
    #[serde(borrow)]
    data: &'a serde_json::value::RawValue,
}

/// A line's time and its `data`, read as its type says.
struct RowEvent<D> {
    time: String,
    data: D,
}

#[derive(Deserialize)]
struct ListingData {
    seq: u64,
    #[serde(default)]
    method: Option<String>,
    request_id: String,
    shown: Vec<ListedTool>,
    removed: Vec<RemovedTool>,
    replaced_by_error: bool,
}

#[derive(Deserialize)]
struct McpData {
    seq: u64,
    method: String,
    direction: String,
    target: Option<String>,
    request_id: Option<String>,
    decision: String,
    reason_code: String,
    reason: String,
    matched_rule: Option<String>,
    enforced: bool,
}

/// The row of a line read by `serde`, by its `type`.
pub(super) fn serde_row(line: &str) -> Option<LogLine> {
    // One pass over the line: the envelope with `data` left as its text, then `data` read as
    // the type says.
    let outer = serde_json::from_str::<Envelope<'_>>(line).ok()?;
    let ty: &str = &outer.ty;
    let time = outer.time;
    let data = outer.data.get();
    match ty {
        // An answer's event is read whole (its own rows module knows its shape).
        TYPE_RESULT => show_result::row(line).map(LogLine::Result),
        TYPE_LISTING => {
            let ev = RowEvent {
                time,
                data: serde_json::from_str::<ListingData>(data).ok()?,
            };
            let d = ev.data;
            Some(LogLine::Listing(ListingRow {
                seq: d.seq,
                time: ev.time,
                method: d.method,
                request_id: d.request_id,
                shown: d.shown,
                removed: d.removed,
                replaced_by_error: d.replaced_by_error,
            }))
        }
        TYPE_MCP_DECISION => {
            let ev = RowEvent {
                time,
                data: serde_json::from_str::<McpData>(data).ok()?,
            };
            let d = ev.data;
            Some(LogLine::McpDecision(McpDecisionRow {
                seq: d.seq,
                time: ev.time,
                method: d.method,
                direction: d.direction,
                target: d.target,
                request_id: d.request_id,
                decision: d.decision,
                reason_code: d.reason_code,
                reason: d.reason,
                matched_rule: d.matched_rule,
                enforced: d.enforced,
            }))
        }
        TYPE_TOOL_DECISION => {
            let ev = RowEvent {
                time,
                data: serde_json::from_str::<RowData>(data).ok()?,
            };
            Some(LogLine::Decision(DecisionRow {
                seq: ev.data.seq,
                time: ev.time,
                tool: ev.data.tool,
                tool_call_id: ev.data.tool_call_id,
                decision: ev.data.decision,
                reason_code: ev.data.reason_code,
                reason: ev.data.reason,
                matched_rule: ev.data.matched_rule,
                enforced: ev.data.enforced,
                arguments: ev.data.arguments,
                arguments_truncated: ev.data.arguments_truncated == Some(true),
                arguments_sha256: ev.data.arguments_sha256,
                tool_definition_sha256: ev.data.tool_definition_sha256,
            }))
        }
        _ => None,
    }
}

#[derive(Deserialize)]
struct RowData {
    seq: u64,
    tool: Option<String>,
    tool_call_id: Option<String>,
    decision: String,
    reason_code: String,
    reason: String,
    matched_rule: Option<String>,
    enforced: bool,
    /// SPEC §4.1a: absent unless arguments were recorded.
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    arguments_truncated: Option<bool>,
    arguments_sha256: Option<String>,
    /// SPEC §5.1: absent in captures written before pins.
    #[serde(default)]
    tool_definition_sha256: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::super::row_refs::{fast_row, row};
    use super::super::testutil::{Builder, each_line_and_edit};
    use super::*;
    use crate::capture_files::DECISIONS;

    /// The one-pass reading of a row is `serde`'s, on every line of a varied capture and on
    /// every single-byte edit of it (escapes in texts included); an escaped text is left to
    /// `serde`.
    #[test]
    fn fast_rows_are_serde_rows() {
        let mut b = Builder::new(4);
        b.other_events = true;
        let dir = b.build();
        let log = std::fs::read(dir.path().join(DECISIONS)).unwrap();
        let mut fast = 0;
        each_line_and_edit(&log, |line| {
            if let Some(r) = fast_row(line) {
                fast += 1;
                assert_eq!(Some(r), serde_row(line), "{line}");
            }
        });
        assert!(fast > 4, "the fast path read the decisions");
        let escaped = std::str::from_utf8(&log)
            .unwrap()
            .lines()
            .find(|l| l.contains("\"matched_rule\":\""))
            .unwrap()
            .replacen("\"matched_rule\":\"", "\"matched_rule\":\"\\t", 1);
        assert_eq!(fast_row(&escaped), None, "{escaped}");
        assert!(row(&escaped).is_some(), "{escaped}");
    }
}
