//! The `assay.mcp.result` event (SPEC §5.3): one per answer to a governed request, in the
//! decision log with the session's one `seq` and its accounting. It names the request's
//! decision (`decision_id`, `null` when the request had none: an ungoverned `resources/read`, a
//! `completion/complete`), carries the SHA-256 and size of the answer exactly as the client
//! received it (the message's bytes, terminator excluded; after any rewrite or refusal), and says
//! what was found and done — never the text itself.
//!
//! `data`: `session_id`, `seq`, `method`, `request_id` (the id as the client sent it, a JSON
//! string or number: `"0"` and `0` differ), `decision_id`, `sha256`, `bytes`, `is_error`, `parts`
//! ({kind: count}), `findings` ([{`kind`, `rule`, `path`}], at most 64), `findings_total`,
//! `action` (`forwarded` | `redacted` | `refused`), `reason_code`, `enforced`, `policy_sha256` —
//! in that order, compact, the bytes `serde_json` writes for it (the tests hold the two
//! together).

use super::decision_log::{DecisionFormat, push_decimal};
use super::event::{HexDigest, RESULT_ID_PREFIX, push_json_str};
use crate::policy::ReasonCode;
use crate::results::Judged;

/// The event id of result event `seq` (the one constructor): the refusal that replaces an answer
/// names it in its `decision_id`.
pub(crate) fn result_id(session_id: &str, seq: u64) -> String {
    format!("{RESULT_ID_PREFIX}{session_id}_{seq}")
}

/// What the client got of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// The answer as the server wrote it.
    Forwarded,
    /// The answer with texts stripped or secrets redacted.
    Redacted,
    /// The refusal instead.
    Refused,
}

impl Action {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Action::Forwarded => "forwarded",
            Action::Redacted => "redacted",
            Action::Refused => "refused",
        }
    }
}

/// One result event to write.
pub(crate) struct ResultEntry<'a> {
    pub method: &'a str,
    /// The client's id as compact JSON (a string or a number).
    pub request_id: &'a str,
    pub decision_id: Option<&'a str>,
    /// SHA-256 of what the client received.
    pub sha256: &'a HexDigest,
    pub bytes: u64,
    pub judged: &'a Judged,
    pub action: Action,
    /// `P_POLICY_ALLOW` unless refused.
    pub reason_code: ReasonCode,
    pub enforced: bool,
}

/// Appends result event `seq` as one line to `out`.
pub(crate) fn push_result_line(
    f: &mut DecisionFormat,
    out: &mut Vec<u8>,
    seq: u64,
    e: &ResultEntry<'_>,
) {
    f.push_result_head(out, seq);
    out.extend_from_slice(b",\"method\":");
    push_json_str(out, e.method);
    out.extend_from_slice(b",\"request_id\":");
    out.extend_from_slice(e.request_id.as_bytes());
    out.extend_from_slice(b",\"decision_id\":");
    match e.decision_id {
        Some(id) => push_json_str(out, id),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"sha256\":\"");
    out.extend_from_slice(e.sha256.as_bytes());
    out.extend_from_slice(b"\",\"bytes\":");
    push_decimal(out, e.bytes);
    out.extend_from_slice(b",\"is_error\":");
    out.extend_from_slice(if e.judged.is_error { b"true" } else { b"false" });
    out.extend_from_slice(b",\"parts\":{");
    for (i, (kind, n)) in e.judged.parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_json_str(out, kind);
        out.push(b':');
        push_decimal(out, *n);
    }
    out.extend_from_slice(b"},\"findings\":[");
    for (i, finding) in e.judged.findings.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"kind\":");
        push_json_str(out, finding.kind);
        out.extend_from_slice(b",\"rule\":");
        push_json_str(out, &finding.rule);
        out.extend_from_slice(b",\"path\":");
        push_json_str(out, &finding.path);
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"findings_total\":");
    push_decimal(out, e.judged.findings_total);
    out.extend_from_slice(b",\"action\":\"");
    out.extend_from_slice(e.action.as_str().as_bytes());
    out.extend_from_slice(b"\",\"reason_code\":\"");
    out.extend_from_slice(e.reason_code.as_str().as_bytes());
    out.extend_from_slice(b"\",\"enforced\":");
    out.extend_from_slice(if e.enforced { b"true" } else { b"false" });
    out.extend_from_slice(f.policy_tail());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Finding;

    #[test]
    fn the_line_is_the_serde_serialization() {
        let mut f = DecisionFormat::new("ab".repeat(16).as_str(), "urn:x", &"c".repeat(64), true);
        let mut judged = Judged {
            is_error: true,
            findings_total: 2,
            ..Judged::default()
        };
        judged.parts.insert("te\"xt".into(), 2);
        judged.parts.insert("image".into(), 1);
        judged.findings.push(Finding {
            kind: "secret",
            rule: "aws-access-key-id".into(),
            path: "/result/content/0/te\u{1}xt".into(),
        });
        let sha = HexDigest::of(b"x");
        let mut out = Vec::new();
        push_result_line(
            &mut f,
            &mut out,
            7,
            &ResultEntry {
                method: "tools/call",
                request_id: "\"0\"",
                decision_id: Some("evt_decision_x_6"),
                sha256: &sha,
                bytes: 123,
                judged: &judged,
                action: Action::Redacted,
                reason_code: ReasonCode::P_POLICY_ALLOW,
                enforced: true,
            },
        );
        assert_eq!(out.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let text = std::str::from_utf8(&out).unwrap();
        // Compact: serde_json writes no byte less for the same value.
        assert_eq!(text.len() - 1, serde_json::to_string(&v).unwrap().len());
        assert_eq!(v["id"], format!("evt_result_{}_7", "ab".repeat(16)));
        assert_eq!(v["type"], "assay.mcp.result");
        let d = &v["data"];
        assert_eq!(d["seq"], 7);
        assert_eq!(d["request_id"], "0");
        assert_eq!(d["sha256"], sha.as_str());
        assert_eq!(d["parts"]["image"], 1);
        assert_eq!(d["findings"][0]["path"], "/result/content/0/te\u{1}xt");
        assert_eq!(d["action"], "redacted");
        assert_eq!(d["policy_sha256"], "c".repeat(64));
        let data = &text[text.find("\"data\":").unwrap()..];
        let at = |k: &str| data.find(&format!("\"{k}\":")).unwrap();
        let order = [
            "session_id",
            "seq",
            "method",
            "request_id",
            "decision_id",
            "sha256",
            "bytes",
            "is_error",
            "parts",
            "findings",
            "findings_total",
            "action",
            "reason_code",
            "enforced",
            "policy_sha256",
        ];
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])));
        assert_eq!(d.as_object().unwrap().len(), order.len());
    }
}
