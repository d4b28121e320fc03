//! The OTLP/JSON encoding of one session's spans (an `ExportTraceServiceRequest`, the format of
//! the OTLP/HTTP JSON protocol and of the Collector's `otlpjsonfile` receiver): the one encoder
//! of `assay capture export --format otlp-json` and of the live exporter (`--otlp-endpoint`).
//!
//! The OTLP JSON mapping is followed exactly: field names in lowerCamelCase, trace and span ids
//! as hex strings, 64-bit integers (times in nanoseconds, `intValue`) as decimal strings, enums
//! (`kind`, `status.code`) as integers. Span names and attributes follow the OpenTelemetry MCP
//! semantic conventions (`mcp.method.name`, `mcp.session.id`, `jsonrpc.request.id`,
//! `gen_ai.tool.name`, `gen_ai.prompt.name`, `mcp.resource.uri`, `error.type`); what the
//! conventions have no name for is under `assay.*`. docs/export.md has the whole mapping.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::ids::{event_span_id, session_span_id, trace_id};
use crate::decision_record::{DecisionRecord, EventKind};
use crate::evidence::event::push_json_str;

/// `service.name` of every exported resource.
pub const SERVICE_NAME: &str = "assay";
/// The instrumentation scope's name.
const SCOPE_NAME: &str = "assay";
/// `network.transport` of a stdio session (the semantic conventions' value for pipes).
const TRANSPORT: &str = "pipe";
/// OTLP `SpanKind`: `SPAN_KIND_INTERNAL`, `SPAN_KIND_SERVER`.
const KIND_INTERNAL: u8 = 1;
const KIND_SERVER: u8 = 2;
/// OTLP `StatusCode`: `STATUS_CODE_ERROR`.
const STATUS_ERROR: u8 = 2;

/// Who produced the spans: the resource every span of the request belongs to.
#[derive(Debug, Clone, Default)]
pub struct Resource<'a> {
    /// The session's label (`server_id`), as `assay.server_id`.
    pub server_id: Option<&'a str>,
    /// The producer's version, as `service.version`.
    pub producer_version: Option<&'a str>,
    /// The capture directory's name, as `assay.capture.id` (export only).
    pub capture: Option<&'a str>,
    /// The capture's verdict, as `assay.capture.verdict` (export only: a live session has none
    /// yet).
    pub verdict: Option<&'a str>,
}

/// The session span: the root of the session's trace.
#[derive(Debug, Clone, Default)]
pub struct SessionSpan<'a> {
    /// The session id (`mcp.session.id`).
    pub session_id: &'a str,
    /// When the session started (RFC 3339).
    pub start: Option<&'a str>,
    /// When it ended (RFC 3339); the start when unknown.
    pub end: Option<&'a str>,
    /// SHA-256 of the policy file.
    pub policy_sha256: Option<&'a str>,
    /// The policy's name.
    pub policy_name: Option<&'a str>,
    /// `client_closed` or `proxy_error`, when the session's stop is known.
    pub session_end: Option<&'a str>,
    /// The capture's verdict (export only).
    pub verdict: Option<&'a str>,
}

/// Nanoseconds since the Unix epoch of an RFC 3339 time, as OTLP's decimal string; `"0"` when
/// the time cannot be read (the writer always writes a readable one).
pub(crate) fn unix_nanos(rfc3339: &str) -> String {
    OffsetDateTime::parse(rfc3339, &Rfc3339)
        .ok()
        .and_then(|t| u64::try_from(t.unix_timestamp_nanos()).ok())
        .unwrap_or(0)
        .to_string()
}

/// Writes one `ExportTraceServiceRequest` (no newline): the resource, then the spans `spans`
/// appends (each with [`push_session_span`] or [`push_record_span`]).
pub fn push_request(
    out: &mut Vec<u8>,
    resource: &Resource<'_>,
    spans: impl FnOnce(&mut Spans<'_>),
) {
    out.extend_from_slice(b"{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
    let mut a = Attrs::new(out);
    a.str("service.name", SERVICE_NAME);
    if let Some(v) = resource.producer_version {
        a.str("service.version", v);
    }
    if let Some(v) = resource.server_id {
        a.str("assay.server_id", v);
    }
    if let Some(v) = resource.capture {
        a.str("assay.capture.id", v);
    }
    if let Some(v) = resource.verdict {
        a.str("assay.capture.verdict", v);
    }
    out.extend_from_slice(b"]},\"scopeSpans\":[{\"scope\":{\"name\":\"");
    out.extend_from_slice(SCOPE_NAME.as_bytes());
    out.extend_from_slice(b"\",\"version\":\"");
    out.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
    out.extend_from_slice(b"\"},\"spans\":[");
    let mut s = Spans {
        out,
        first: true,
        session: None,
    };
    spans(&mut s);
    out.extend_from_slice(b"]}]}]}");
}

/// The span list of a request being written.
pub struct Spans<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
    /// The ids of the last session seen, computed once per session, not once per span.
    session: Option<SessionIds>,
}

/// A session's trace id and session span id.
struct SessionIds {
    session_id: String,
    trace: String,
    span: String,
}

impl SessionIds {
    fn of(session_id: &str) -> Self {
        Self {
            session_id: session_id.to_string(),
            trace: trace_id(session_id),
            span: session_span_id(session_id),
        }
    }
}

impl Spans<'_> {
    /// Starts a span: the separator, and the ids of `session_id`.
    fn open(&mut self, session_id: &str) -> (&mut Vec<u8>, &SessionIds) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        let ids = match self.session.take() {
            Some(ids) if ids.session_id == session_id => ids,
            _ => SessionIds::of(session_id),
        };
        (self.out, self.session.insert(ids))
    }

    /// Appends the session span.
    pub fn push_session_span(&mut self, s: &SessionSpan<'_>) {
        let (out, ids) = self.open(s.session_id);
        let start = s.start.map_or_else(|| "0".to_string(), unix_nanos);
        let end = s.end.map_or_else(|| start.clone(), unix_nanos);
        head(out, &ids.trace, &ids.span, None);
        field_str(out, "name", "assay.session");
        fields_time_kind(out, &start, &end, KIND_INTERNAL);
        out.extend_from_slice(b",\"attributes\":[");
        let mut a = Attrs::new(out);
        a.str("mcp.session.id", s.session_id);
        a.str("network.transport", TRANSPORT);
        a.opt_str("assay.policy.sha256", s.policy_sha256);
        a.opt_str("assay.policy.name", s.policy_name);
        a.opt_str("assay.session_end", s.session_end);
        a.opt_str("assay.capture.verdict", s.verdict);
        out.extend_from_slice(b"]}");
    }

    /// Appends the span of one event of the log, a child of the session span.
    pub fn push_record_span(&mut self, r: &DecisionRecord<'_>) {
        let sid = r.session_id.as_ref();
        let (out, ids) = self.open(sid);
        head(out, &ids.trace, &event_span_id(sid, r.seq), Some(&ids.span));
        push_name(out, r);
        let t = unix_nanos(&r.time);
        fields_time_kind(out, &t, &t, KIND_SERVER);
        out.extend_from_slice(b",\"attributes\":[");
        record_attributes(out, r);
        out.extend_from_slice(b"]");
        if let Some(code) = refusal(r) {
            out.extend_from_slice(b",\"status\":{\"code\":");
            out.extend_from_slice(STATUS_ERROR.to_string().as_bytes());
            out.extend_from_slice(b",\"message\":");
            push_json_str(out, code);
            out.push(b'}');
        }
        out.push(b'}');
    }
}

/// The reason code of an enforced refusal (`deny`, or `error` for an unreadable message): the
/// span's `error.type` and error status. A dry-run refusal was forwarded, so it is no error.
fn refusal<'r>(r: &'r DecisionRecord<'_>) -> Option<&'r str> {
    let refused = matches!(r.decision.as_deref(), Some("deny" | "error"));
    (refused && r.enforced != Some(false))
        .then_some(r.reason_code.as_deref())
        .flatten()
}

/// `{"traceId":…,"spanId":…[,"parentSpanId":…]`
fn head(out: &mut Vec<u8>, trace_id: &str, span_id: &str, parent: Option<&str>) {
    out.extend_from_slice(b"{\"traceId\":\"");
    out.extend_from_slice(trace_id.as_bytes());
    out.extend_from_slice(b"\",\"spanId\":\"");
    out.extend_from_slice(span_id.as_bytes());
    out.push(b'"');
    if let Some(p) = parent {
        out.extend_from_slice(b",\"parentSpanId\":\"");
        out.extend_from_slice(p.as_bytes());
        out.push(b'"');
    }
}

fn field_str(out: &mut Vec<u8>, key: &str, value: &str) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
    push_json_str(out, value);
}

fn fields_time_kind(out: &mut Vec<u8>, start: &str, end: &str, kind: u8) {
    out.extend_from_slice(b",\"kind\":");
    out.extend_from_slice(kind.to_string().as_bytes());
    out.extend_from_slice(b",\"startTimeUnixNano\":\"");
    out.extend_from_slice(start.as_bytes());
    out.extend_from_slice(b"\",\"endTimeUnixNano\":\"");
    out.extend_from_slice(end.as_bytes());
    out.push(b'"');
}

/// What an MCP decision's target names, by its method's row of the table.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    /// A prompt, by `params.name` (`prompts/get`).
    PromptName,
    /// A resource, by `params.uri` (`resources/read`, `resources/subscribe`).
    ResourceUri,
}

fn judged_by(r: &DecisionRecord<'_>) -> Option<By> {
    use crate::methods::{Governor, Target};
    let row = crate::methods::method(&r.method)?;
    match (row.governor, row.target) {
        (Governor::Prompts, Target::Name) => Some(By::PromptName),
        (Governor::Resources, Target::Uri) => Some(By::ResourceUri),
        _ => None,
    }
}

/// The span name the conventions give: `{mcp.method.name} {target}`, the target being the tool
/// or prompt name (a low-cardinality name); the method alone otherwise (a resource URI is left
/// out of the name, as the conventions recommend).
fn push_name(out: &mut Vec<u8>, r: &DecisionRecord<'_>) {
    let target = match (r.kind, judged_by(r)) {
        (EventKind::ToolDecision, _) | (EventKind::McpDecision, Some(By::PromptName)) => {
            r.name.as_deref()
        }
        _ => None,
    };
    match target {
        Some(t) => field_str(out, "name", &format!("{} {t}", r.method)),
        None => field_str(out, "name", &r.method),
    }
}

fn record_attributes(out: &mut Vec<u8>, r: &DecisionRecord<'_>) {
    let mut a = Attrs::new(out);
    a.str("mcp.method.name", &r.method);
    a.str("mcp.session.id", &r.session_id);
    a.opt_str("jsonrpc.request.id", r.request_id.as_deref());
    a.str("network.transport", TRANSPORT);
    match (r.kind, judged_by(r)) {
        (EventKind::ToolDecision, _) => {
            a.str("gen_ai.operation.name", "execute_tool");
            a.opt_str("gen_ai.tool.name", r.name.as_deref());
        }
        (EventKind::McpDecision, Some(By::PromptName)) => {
            a.opt_str("gen_ai.prompt.name", r.name.as_deref())
        }
        (EventKind::McpDecision, Some(By::ResourceUri)) => {
            a.opt_str("mcp.resource.uri", r.name.as_deref());
        }
        (EventKind::McpDecision, _) => a.opt_str("assay.target", r.name.as_deref()),
        (EventKind::Listing, _) => {}
    }
    a.opt_str("error.type", refusal(r));
    a.str("assay.event.type", r.kind.type_name());
    a.int("assay.seq", r.seq);
    a.opt_str("assay.decision", r.decision.as_deref());
    a.opt_str("assay.reason_code", r.reason_code.as_deref());
    a.opt_str("assay.matched_rule", r.matched_rule.as_deref());
    if let Some(e) = r.enforced {
        a.bool("assay.enforced", e);
    }
    a.opt_str("assay.direction", r.direction.as_deref());
    a.str("assay.policy.sha256", &r.policy_sha256);
    a.opt_str("assay.arguments.sha256", r.arguments_sha256.as_deref());
    a.opt_str("assay.params.sha256", r.params_sha256.as_deref());
    a.opt_str(
        "assay.tool_definition.sha256",
        r.tool_definition_sha256.as_deref(),
    );
    if r.kind == EventKind::Listing {
        a.int("assay.listing.shown", r.shown.unwrap_or(0));
        a.str_array(
            "assay.listing.removed",
            r.removed.iter().map(|e| e.name.as_ref()),
        );
        a.str_array(
            "assay.listing.removed_reason_codes",
            r.removed.iter().map(|e| e.reason_code.as_ref()),
        );
        a.bool(
            "assay.listing.replaced_by_error",
            r.replaced_by_error.unwrap_or(false),
        );
    }
}

/// A list of OTLP `KeyValue`s being written.
struct Attrs<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> Attrs<'o> {
    fn new(out: &'o mut Vec<u8>) -> Self {
        Self { out, first: true }
    }

    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.extend_from_slice(b"{\"key\":\"");
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\",\"value\":");
    }

    fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        self.out.extend_from_slice(b"{\"stringValue\":");
        push_json_str(self.out, value);
        self.out.extend_from_slice(b"}}");
    }

    fn opt_str(&mut self, key: &str, value: Option<&str>) {
        if let Some(v) = value {
            self.str(key, v);
        }
    }

    /// An `int64` attribute: a decimal string in OTLP JSON.
    fn int(&mut self, key: &str, value: u64) {
        self.key(key);
        self.out.extend_from_slice(b"{\"intValue\":\"");
        self.out.extend_from_slice(value.to_string().as_bytes());
        self.out.extend_from_slice(b"\"}}");
    }

    fn bool(&mut self, key: &str, value: bool) {
        self.key(key);
        self.out.extend_from_slice(if value {
            b"{\"boolValue\":true}}"
        } else {
            b"{\"boolValue\":false}}"
        });
    }

    fn str_array<'v>(&mut self, key: &str, values: impl Iterator<Item = &'v str>) {
        self.key(key);
        self.out.extend_from_slice(b"{\"arrayValue\":{\"values\":[");
        for (i, v) in values.enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.out.extend_from_slice(b"{\"stringValue\":");
            push_json_str(self.out, v);
            self.out.push(b'}');
        }
        self.out.extend_from_slice(b"]}}}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision_record::parse_line;
    use serde_json::Value;

    const SID: &str = "22748cdfe39ef10cae313b386db8f3ee";
    const P: &str = "8494ada1dd2e95910dd1d1b36cfe53a20fc44d614bddba34bba238cfd20b9ddb";

    fn attr<'v>(span: &'v Value, key: &str) -> Option<&'v Value> {
        span["attributes"]
            .as_array()?
            .iter()
            .find(|a| a["key"] == key)
            .map(|a| &a["value"])
    }

    #[test]
    fn a_refused_call_is_an_error_span_named_by_the_conventions() {
        let line = format!(
            r#"{{"type":"assay.tool.decision","time":"2026-11-30T00:29:13.440814522Z","data":{{"session_id":"{SID}","seq":4,"tool":"ex\"ec","tool_call_id":"3","decision":"deny","reason_code":"P_TOOL_DENIED","reason":"r","matched_rule":"deny:exec","enforced":true,"policy_sha256":"{P}","arguments_sha256":null}}}}"#
        );
        let r = parse_line(&line).unwrap();
        let mut out = Vec::new();
        let res = Resource {
            server_id: Some("files"),
            producer_version: Some("0.1.0"),
            capture: None,
            verdict: None,
        };
        push_request(&mut out, &res, |s| {
            s.push_session_span(&SessionSpan {
                session_id: SID,
                start: Some("2026-11-30T00:29:13Z"),
                ..SessionSpan::default()
            });
            s.push_record_span(&r);
        });
        let v: Value = serde_json::from_slice(&out).unwrap();
        let rs = &v["resourceSpans"][0];
        assert_eq!(
            attr(&rs["resource"], "service.name").unwrap()["stringValue"],
            "assay"
        );
        let spans = rs["scopeSpans"][0]["spans"].as_array().unwrap();
        assert_eq!(spans.len(), 2);
        let (root, call) = (&spans[0], &spans[1]);
        assert_eq!(root["traceId"], call["traceId"]);
        assert_eq!(call["parentSpanId"], root["spanId"]);
        assert_eq!(root["startTimeUnixNano"], "1795998553000000000");
        assert_eq!(root["endTimeUnixNano"], root["startTimeUnixNano"]);
        assert_eq!(call["name"], "tools/call ex\"ec");
        assert_eq!(call["kind"], 2);
        assert_eq!(call["startTimeUnixNano"], "1795998553440814522");
        assert_eq!(call["status"]["code"], 2);
        assert_eq!(
            attr(call, "error.type").unwrap()["stringValue"],
            "P_TOOL_DENIED"
        );
        assert_eq!(
            attr(call, "gen_ai.tool.name").unwrap()["stringValue"],
            "ex\"ec"
        );
        assert_eq!(
            attr(call, "jsonrpc.request.id").unwrap()["stringValue"],
            "3"
        );
        assert_eq!(attr(call, "assay.seq").unwrap()["intValue"], "4");
        assert_eq!(attr(call, "assay.enforced").unwrap()["boolValue"], true);
        assert_eq!(attr(call, "assay.arguments.sha256"), None);
    }

    #[test]
    fn a_dry_run_refusal_and_a_resource_read_are_no_errors() {
        let line = format!(
            r#"{{"type":"assay.mcp.decision","time":"2026-11-30T00:29:13Z","data":{{"session_id":"{SID}","seq":1,"method":"resources/read","direction":"client_to_server","target":"file:///a","request_id":"2","decision":"deny","reason_code":"P_RESOURCE_DENIED","reason":"r","matched_rule":null,"enforced":false,"policy_sha256":"{P}","params_sha256":"{P}"}}}}"#
        );
        let r = parse_line(&line).unwrap();
        let mut out = Vec::new();
        push_request(&mut out, &Resource::default(), |s| s.push_record_span(&r));
        let v: Value = serde_json::from_slice(&out).unwrap();
        let span = &v["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert_eq!(span["name"], "resources/read", "no URI in the name");
        assert_eq!(span.get("status"), None);
        assert_eq!(attr(span, "error.type"), None);
        assert_eq!(
            attr(span, "mcp.resource.uri").unwrap()["stringValue"],
            "file:///a"
        );
    }
}
