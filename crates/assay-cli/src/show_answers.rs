//! `capture show`: the answers to governed requests (SPEC §5.3 `assay.mcp.result`), each beside
//! the call it answers (the decision's `seq` and, for a `tools/call`, its tool), with the digest
//! of what the client received — the value `capture verify-answer` compares a transcript with.

use assay::capture::{DecisionLines, LogLine, ResultRow};
use assay::text;

use super::text::{Table, or_dash};

/// The decision `seq` a `decision_id` names (`evt_decision_<session>_<seq>`).
fn decision_seq(id: &str) -> Option<&str> {
    id.rsplit_once('_').map(|(_, seq)| seq)
}

/// The answers section, when the log holds any.
pub(crate) fn answers(lines: &mut Vec<String>, d: &DecisionLines) {
    let rows: Vec<&ResultRow> = d
        .lines
        .iter()
        .filter_map(|l| match l {
            LogLine::Result(row) => Some(row),
            _ => None,
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    // The tool of each tools/call decision, by its seq: the call an answer belongs to.
    let tool_of = |seq: &str| {
        d.lines.iter().find_map(|l| match l {
            LogLine::Decision(row) if row.seq.to_string() == seq => row.tool.clone(),
            _ => None,
        })
    };
    lines.push("answers (what the client received for each governed request)".to_string());
    let mut t = Table::new(&[
        "SEQ",
        "CALL",
        "METHOD",
        "REQUEST ID",
        "ACTION",
        "REASON CODE",
        "BYTES",
        "SHA-256",
    ]);
    for row in &rows {
        let call = match row.decision_id.as_deref().and_then(decision_seq) {
            Some(seq) => match tool_of(seq) {
                Some(tool) => format!("seq {seq} ({})", text::render(&tool)),
                None => format!("seq {seq}"),
            },
            None => "-".to_string(),
        };
        let error = if row.is_error { ", error" } else { "" };
        t.row(vec![
            row.seq.to_string(),
            call,
            text::render(&row.method),
            text::render(&row.request_id),
            format!("{}{error}", text::render(&row.action)),
            text::render(&row.reason_code),
            row.bytes.to_string(),
            text::render(&row.sha256),
        ]);
    }
    lines.extend(t.lines("  "));
    for row in rows.iter().filter(|r| r.findings_total > 0) {
        let shown: Vec<String> = row.findings.iter().map(|f| text::render(f)).collect();
        let more = row.findings_total.saturating_sub(row.findings.len() as u64);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        lines.push(format!(
            "  - seq {}: {}{more}",
            row.seq,
            or_dash(Some(&shown.join(", ")))
        ));
    }
}
