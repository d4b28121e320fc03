//! `capture show`'s rows of answers (SPEC §5.3 `assay.mcp.result`): what the client received for
//! a governed request, printed beside the call it answers.

use serde::Deserialize;

/// One answer to a governed request, as recorded (a line the reader's checks accepted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultRow {
    /// `seq` of the event.
    pub seq: u64,
    /// The event's `time`.
    pub time: String,
    /// The method of the request answered.
    pub method: String,
    /// The request id as compact JSON (`"0"` for the string, `0` for the number).
    pub request_id: String,
    /// The decision event of the request, when it had one.
    pub decision_id: Option<String>,
    /// SHA-256 of the answer as the client received it.
    pub sha256: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Whether the answer is an error.
    pub is_error: bool,
    /// `forwarded`, `redacted` or `refused`.
    pub action: String,
    /// The refusal's code, or `P_POLICY_ALLOW`.
    pub reason_code: String,
    /// The rules of the findings recorded (`secret:aws-access-key-id at /result/content/0/text`).
    pub findings: Vec<String>,
    /// How many findings there were.
    pub findings_total: u64,
}

#[derive(Deserialize)]
struct Finding {
    kind: String,
    rule: String,
    path: String,
}

#[derive(Deserialize)]
struct Data {
    seq: u64,
    method: String,
    request_id: serde_json::Value,
    decision_id: Option<String>,
    sha256: String,
    bytes: u64,
    is_error: bool,
    findings: Vec<Finding>,
    findings_total: u64,
    action: String,
    reason_code: String,
}

#[derive(Deserialize)]
struct Event {
    time: String,
    data: Data,
}

/// The row of a result line the reader's checks accepted.
pub(super) fn row(line: &str) -> Option<ResultRow> {
    let ev = serde_json::from_str::<Event>(line).ok()?;
    let d = ev.data;
    Some(ResultRow {
        seq: d.seq,
        time: ev.time,
        method: d.method,
        request_id: d.request_id.to_string(),
        decision_id: d.decision_id,
        sha256: d.sha256,
        bytes: d.bytes,
        is_error: d.is_error,
        action: d.action,
        reason_code: d.reason_code,
        findings: d
            .findings
            .into_iter()
            .map(|f| format!("{}:{} at {}", f.kind, f.rule, f.path))
            .collect(),
        findings_total: d.findings_total,
    })
}
