//! One event of the decision log (SPEC §4.1, §4.1a) as the exports see it: the fields a row of
//! `assay capture export` and a span of the OpenTelemetry mapping are made from, read from one
//! line the writer wrote (the live exporter) or the capture reader accepted (the export).
//!
//! This is not a reader of untrusted bytes: every line it is given was either formatted by this
//! process's decision-log writer or passed the capture reader's line checks (strict JSON, every
//! field's type, the event's reason codes), so a plain `serde` reading of the fields it needs
//! is enough. A line it cannot read (never, for those) yields an error, not a record.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;

/// Which event of the log a record comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// `assay.tool.decision`: a `tools/call` judged (SPEC §4.1).
    ToolDecision,
    /// `assay.mcp.decision`: another governed method judged (SPEC §4.1a, §5.2).
    McpDecision,
    /// `assay.tool.listing`: a list result judged, with the entries it removed (SPEC §4.1a).
    Listing,
}

impl EventKind {
    /// The CloudEvents `type` of the event.
    pub fn type_name(self) -> &'static str {
        match self {
            EventKind::ToolDecision => "assay.tool.decision",
            EventKind::McpDecision => "assay.mcp.decision",
            EventKind::Listing => "assay.tool.listing",
        }
    }
}

/// An entry a listing removed from what the client was shown.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RemovedEntry<'a> {
    /// The tool or prompt name, resource URI or template (the server's text), or
    /// `(instructions)`.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// The definition digest, when one could be taken.
    #[serde(borrow)]
    pub sha256: Option<Cow<'a, str>>,
    /// Why it was removed (`P_TOOL_DENIED`, `P_TOOL_DRIFT`, …).
    #[serde(borrow)]
    pub reason_code: Cow<'a, str>,
}

/// One event of the decision log, borrowed from its line where no escape had to be undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRecord<'a> {
    /// Which event.
    pub kind: EventKind,
    /// The session id.
    pub session_id: Cow<'a, str>,
    /// `seq`, shared by every event of the session.
    pub seq: u64,
    /// The event time (RFC 3339, UTC).
    pub time: Cow<'a, str>,
    /// The MCP method: `tools/call` for a tool decision, the governed method, or the list a
    /// listing answers (`tools/list` for a listing written before listings named it).
    pub method: Cow<'a, str>,
    /// `client_to_server` or `server_to_client` (MCP decisions only).
    pub direction: Option<Cow<'a, str>>,
    /// What was asked for: the tool name, the resource URI, prompt name or client feature.
    pub name: Option<Cow<'a, str>>,
    /// The JSON-RPC id of the message, as a string.
    pub request_id: Option<Cow<'a, str>>,
    /// `allow`, `deny` or `error` (decisions only).
    pub decision: Option<Cow<'a, str>>,
    /// The policy reason code (decisions only).
    pub reason_code: Option<Cow<'a, str>>,
    /// The policy rule that decided.
    pub matched_rule: Option<Cow<'a, str>>,
    /// `false` in dry run (decisions only).
    pub enforced: Option<bool>,
    /// SHA-256 of the policy file.
    pub policy_sha256: Cow<'a, str>,
    /// SHA-256 of the call's canonical arguments (tool decisions).
    pub arguments_sha256: Option<Cow<'a, str>>,
    /// SHA-256 of the message's canonical `params` (MCP decisions).
    pub params_sha256: Option<Cow<'a, str>>,
    /// The definition digest of the tool as last listed (tool decisions).
    pub tool_definition_sha256: Option<Cow<'a, str>>,
    /// How many entries the client was shown (listings).
    pub shown: Option<u64>,
    /// The entries removed (listings; empty otherwise).
    pub removed: Vec<RemovedEntry<'a>>,
    /// The whole list result was replaced by an error (listings).
    pub replaced_by_error: Option<bool>,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(borrow)]
    time: Cow<'a, str>,
    #[serde(borrow)]
    data: Data<'a>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(borrow)]
    session_id: Cow<'a, str>,
    seq: u64,
    #[serde(default, borrow)]
    tool: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    direction: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    target: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    request_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    decision: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reason_code: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    matched_rule: Option<Cow<'a, str>>,
    #[serde(default)]
    enforced: Option<bool>,
    #[serde(borrow)]
    policy_sha256: Cow<'a, str>,
    #[serde(default, borrow)]
    arguments_sha256: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params_sha256: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_definition_sha256: Option<Cow<'a, str>>,
    #[serde(default)]
    shown: Option<Vec<IgnoredAny>>,
    #[serde(default, borrow)]
    removed: Option<Vec<RemovedEntry<'a>>>,
    #[serde(default)]
    replaced_by_error: Option<bool>,
}

/// The method a tool decision judges.
const TOOLS_CALL: &str = crate::methods::TOOLS_CALL.name;
/// The list a listing written before listings named their method answers (SPEC §4.1a).
const TOOLS_LIST: &str = crate::methods::TOOLS_LIST.name;

/// Reads one decision-log line (without its newline).
///
/// # Errors
/// The `serde_json` error when the line is not an event of the log with the fields above (a
/// line of another `type` is read as a tool decision, as the capture reader reads it).
pub fn parse_line(line: &str) -> Result<DecisionRecord<'_>, serde_json::Error> {
    let l: Line<'_> = serde_json::from_str(line)?;
    let d = l.data;
    let kind = match l.ty.as_ref() {
        "assay.mcp.decision" => EventKind::McpDecision,
        "assay.tool.listing" => EventKind::Listing,
        _ => EventKind::ToolDecision,
    };
    let (method, name, request_id) = match kind {
        EventKind::ToolDecision => (Cow::Borrowed(TOOLS_CALL), d.tool, d.tool_call_id),
        EventKind::McpDecision => (d.method.unwrap_or_default(), d.target, d.request_id),
        EventKind::Listing => (
            d.method.unwrap_or(Cow::Borrowed(TOOLS_LIST)),
            None,
            d.request_id,
        ),
    };
    Ok(DecisionRecord {
        kind,
        session_id: d.session_id,
        seq: d.seq,
        time: l.time,
        method,
        direction: d.direction,
        name,
        request_id,
        decision: d.decision,
        reason_code: d.reason_code,
        matched_rule: d.matched_rule,
        enforced: d.enforced,
        policy_sha256: d.policy_sha256,
        arguments_sha256: d.arguments_sha256,
        params_sha256: d.params_sha256,
        tool_definition_sha256: d.tool_definition_sha256,
        shown: d.shown.map(|s| s.len() as u64),
        removed: d.removed.unwrap_or_default(),
        replaced_by_error: d.replaced_by_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SID: &str = "22748cdfe39ef10cae313b386db8f3ee";
    const P: &str = "8494ada1dd2e95910dd1d1b36cfe53a20fc44d614bddba34bba238cfd20b9ddb";

    #[test]
    fn the_three_event_types_read_as_records() {
        let tool = format!(
            r#"{{"specversion":"1.0","id":"evt_decision_{SID}_1","type":"assay.tool.decision","source":"assay://x","time":"2026-11-30T00:29:13.440814522Z","datacontenttype":"application/json","data":{{"session_id":"{SID}","seq":1,"tool":"ex\u0065c","tool_call_id":"3","decision":"deny","reason_code":"P_TOOL_DENIED","reason":"r","matched_rule":"deny:exec","enforced":true,"policy_sha256":"{P}","arguments_sha256":"{P}","tool_definition_sha256":null}}}}"#
        );
        let r = parse_line(&tool).unwrap();
        assert_eq!(r.kind, EventKind::ToolDecision);
        assert_eq!(
            (
                r.method.as_ref(),
                r.name.as_deref(),
                r.request_id.as_deref()
            ),
            ("tools/call", Some("exec"), Some("3"))
        );
        assert_eq!(r.decision.as_deref(), Some("deny"));
        assert_eq!(r.tool_definition_sha256, None);
        assert_eq!(r.arguments_sha256.as_deref(), Some(P));

        let mcp = format!(
            r#"{{"type":"assay.mcp.decision","time":"t","data":{{"session_id":"{SID}","seq":3,"method":"resources/read","direction":"client_to_server","target":"file:///a","request_id":null,"decision":"allow","reason_code":"P_POLICY_ALLOW","reason":"r","matched_rule":null,"enforced":false,"policy_sha256":"{P}","params_sha256":"{P}"}}}}"#
        );
        let r = parse_line(&mcp).unwrap();
        assert_eq!(r.kind, EventKind::McpDecision);
        assert_eq!(
            (
                r.method.as_ref(),
                r.name.as_deref(),
                r.request_id.as_deref()
            ),
            ("resources/read", Some("file:///a"), None)
        );
        assert_eq!(r.enforced, Some(false));

        let listing = format!(
            r#"{{"type":"assay.tool.listing","time":"t","data":{{"session_id":"{SID}","seq":2,"request_id":"1","shown":[{{"name":"a","sha256":"{P}"}},{{"name":"b","sha256":"{P}"}}],"removed":[{{"name":"exec","sha256":null,"reason_code":"P_TOOL_DENIED"}}],"replaced_by_error":false,"policy_sha256":"{P}"}}}}"#
        );
        let r = parse_line(&listing).unwrap();
        assert_eq!(r.kind, EventKind::Listing);
        assert_eq!(r.method, "tools/list", "a listing without method");
        assert_eq!(r.shown, Some(2));
        assert_eq!(r.removed.len(), 1);
        assert_eq!(r.removed[0].reason_code, "P_TOOL_DENIED");
        assert!(parse_line("{}").is_err());
    }
}
