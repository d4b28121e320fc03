//! `--format ndjson`: one flat JSON object per decision, every key always present (null when it
//! does not apply), so DuckDB (`read_json_auto`) and Spark (`spark.read.json`) read the rows as
//! one table with stable column names. The columns are documented in docs/export.md.

use crate::decision_record::{DecisionRecord, EventKind};
use crate::evidence::event::push_json_str;

/// What every row of one capture shares.
pub(super) struct CaptureColumns<'a> {
    /// The capture directory's name.
    pub(super) capture: &'a str,
    /// Its verdict (`closed`, `incomplete`, `unknown`).
    pub(super) verdict: &'a str,
    /// Its label (`server_id`).
    pub(super) server_id: Option<&'a str>,
}

/// The columns, in their order (docs/export.md repeats them; a test holds the two together).
pub const COLUMNS: &[&str] = &[
    "capture",
    "verdict",
    "session_id",
    "server_id",
    "seq",
    "time",
    "event_type",
    "method",
    "direction",
    "name",
    "request_id",
    "decision",
    "reason_code",
    "matched_rule",
    "enforced",
    "policy_sha256",
    "arguments_sha256",
    "params_sha256",
    "definition_sha256",
];

/// The values of one row, in [`COLUMNS`] order after the capture's own.
struct Row<'r> {
    name: Option<&'r str>,
    decision: Option<&'r str>,
    reason_code: Option<&'r str>,
    definition_sha256: Option<&'r str>,
}

/// Appends the rows of one event: one for a decision, one per removed entry for a listing (a
/// listing that removed nothing decided nothing and has no row). Returns how many.
pub(super) fn push_rows(out: &mut Vec<u8>, c: &CaptureColumns<'_>, r: &DecisionRecord<'_>) -> u64 {
    match r.kind {
        EventKind::ToolDecision | EventKind::McpDecision => {
            let row = Row {
                name: r.name.as_deref(),
                decision: r.decision.as_deref(),
                reason_code: r.reason_code.as_deref(),
                definition_sha256: r.tool_definition_sha256.as_deref(),
            };
            push_row(out, c, r, &row);
            1
        }
        EventKind::Listing => {
            for e in &r.removed {
                let row = Row {
                    name: Some(&e.name),
                    decision: Some("deny"),
                    reason_code: Some(&e.reason_code),
                    definition_sha256: e.sha256.as_deref(),
                };
                push_row(out, c, r, &row);
            }
            r.removed.len() as u64
        }
    }
}

fn push_row(out: &mut Vec<u8>, c: &CaptureColumns<'_>, r: &DecisionRecord<'_>, row: &Row<'_>) {
    let mut w = Object { out, first: true };
    w.str("capture", Some(c.capture));
    w.str("verdict", Some(c.verdict));
    w.str("session_id", Some(&r.session_id));
    w.str("server_id", c.server_id);
    w.key("seq");
    w.out.extend_from_slice(r.seq.to_string().as_bytes());
    w.str("time", Some(&r.time));
    w.str("event_type", Some(r.kind.type_name()));
    w.str("method", Some(&r.method));
    w.str("direction", r.direction.as_deref());
    w.str("name", row.name);
    w.str("request_id", r.request_id.as_deref());
    w.str("decision", row.decision);
    w.str("reason_code", row.reason_code);
    w.str("matched_rule", r.matched_rule.as_deref());
    w.key("enforced");
    w.out.extend_from_slice(match r.enforced {
        Some(true) => b"true",
        Some(false) => b"false",
        None => b"null",
    });
    w.str("policy_sha256", Some(&r.policy_sha256));
    w.str("arguments_sha256", r.arguments_sha256.as_deref());
    w.str("params_sha256", r.params_sha256.as_deref());
    w.str("definition_sha256", row.definition_sha256);
    out.extend_from_slice(b"}\n");
}

/// A flat JSON object being written.
struct Object<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl Object<'_> {
    fn key(&mut self, key: &str) {
        self.out
            .extend_from_slice(if self.first { b"{\"" } else { b",\"" });
        self.first = false;
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn str(&mut self, key: &str, value: Option<&str>) {
        self.key(key);
        match value {
            Some(v) => push_json_str(self.out, v),
            None => self.out.extend_from_slice(b"null"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision_record::parse_line;

    const SID: &str = "22748cdfe39ef10cae313b386db8f3ee";
    const P: &str = "8494ada1dd2e95910dd1d1b36cfe53a20fc44d614bddba34bba238cfd20b9ddb";

    #[test]
    fn every_row_has_every_column_in_order() {
        let c = CaptureColumns {
            capture: "run-1",
            verdict: "closed",
            server_id: Some("files"),
        };
        let tool = format!(
            r#"{{"type":"assay.tool.decision","time":"t0","data":{{"session_id":"{SID}","seq":0,"tool":"read_file","tool_call_id":"1","decision":"allow","reason_code":"P_POLICY_ALLOW","reason":"r","matched_rule":"allow:*","enforced":true,"policy_sha256":"{P}","arguments_sha256":"{P}"}}}}"#
        );
        let listing = format!(
            r#"{{"type":"assay.tool.listing","time":"t1","data":{{"session_id":"{SID}","seq":1,"method":"prompts/list","request_id":"2","shown":[],"removed":[{{"name":"a","sha256":null,"reason_code":"P_PROMPT_DENIED"}},{{"name":"b","sha256":"{P}","reason_code":"P_PROMPT_NOT_ALLOWED"}}],"replaced_by_error":false,"policy_sha256":"{P}"}}}}"#
        );
        let mut out = Vec::new();
        assert_eq!(push_rows(&mut out, &c, &parse_line(&tool).unwrap()), 1);
        assert_eq!(push_rows(&mut out, &c, &parse_line(&listing).unwrap()), 2);
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<serde_json::Map<String, serde_json::Value>> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 3);
        for row in &rows {
            let keys: Vec<&str> = row.keys().map(String::as_str).collect();
            let mut want = COLUMNS.to_vec();
            want.sort_unstable();
            assert_eq!(keys, want, "serde_json's map is sorted");
        }
        let first = text.lines().next().unwrap();
        let order: Vec<usize> = COLUMNS
            .iter()
            .map(|k| first.find(&format!("\"{k}\":")).unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{first}");
        assert_eq!(rows[0]["name"], "read_file");
        assert_eq!(rows[0]["method"], "tools/call");
        assert_eq!(rows[0]["seq"], 0);
        assert_eq!(rows[0]["enforced"], true);
        assert_eq!(rows[1]["method"], "prompts/list");
        assert_eq!(rows[1]["decision"], "deny");
        assert_eq!(rows[1]["reason_code"], "P_PROMPT_DENIED");
        assert_eq!(rows[1]["enforced"], serde_json::Value::Null);
        assert_eq!(rows[2]["definition_sha256"], P);
    }
}
