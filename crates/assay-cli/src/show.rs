//! `assay capture show DIR` and `assay capture summary ROOT --format table`: the reader's
//! verdicts for people. The library collects the data ([`assay::show_capture`],
//! [`assay::read_captures`]); this module only lays it out. Exit statuses are those of
//! `capture read` and `capture summary` (SPEC §10).

use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;
use std::process::ExitCode;

use assay::capture::{
    CaptureReport, DecisionLines, ListingRow, LogLine, McpDecisionRow, SessionFacts,
};
use assay::{
    CaptureStatus, Closure, ClosureKind, DecisionLogState, SessionEnd, StopData, Termination,
    read_captures, show_capture, text,
};

use super::exit;
use super::messages::Failure;
use super::text::{Table, or_dash};

/// SIGKILL's number (the evidence records signal numbers).
const SIGKILL: i32 = nix::sys::signal::Signal::SIGKILL as i32;

/// A missing DIR is a usage error (status 2), as for `capture summary` and a missing ROOT.
fn usable_dir(dir: &Path) -> Result<(), Failure> {
    let problem = match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => "is not a directory",
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist",
        Err(_) => "cannot be inspected",
    };
    // The diagnostic line is rendered for people where it is printed (`messages`).
    Err(Failure::Invalid(format!(
        "capture directory {} {problem}",
        dir.display()
    )))
}

/// Prints the report; the status is the verdict's (0 closed, 1 incomplete, 3 unknown). A capture
/// root is a usage error (status 2) that points at `capture summary` (SPEC §10).
pub(crate) fn show(dir: &Path) -> Result<ExitCode, Failure> {
    usable_dir(dir)?;
    super::capture::refuse_root(dir, "show")?;
    let report = show_capture(dir);
    let text = render(dir, &report).join("\n");
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(Failure::output(exit::FAILURE))?;
    Ok(exit::code(report.closure.closure.exit_status()))
}

/// The verdict in one line of words.
fn verdict_line(c: &Closure) -> String {
    match c.closure {
        ClosureKind::Closed => {
            "CLOSED: the session has a recorded ending and the retained decision \
             log matches its accounting (this says nothing about whether the server succeeded)"
                .to_string()
        }
        ClosureKind::Incomplete => {
            "INCOMPLETE: the files agree, with known loss of decision events (counted below)"
                .to_string()
        }
        ClosureKind::Unknown => {
            "UNKNOWN: the files do not vouch for this session; nothing below is confirmed by them"
                .to_string()
        }
    }
}

/// How a server the wrapper killed after the session reads (SPEC §10): not a bare signal. Said
/// where the kill is not the normal ending (the session ended with `proxy_error`, or the capture
/// is not `closed`).
const KILLED_BY_ASSAY: &str = "killed by assay (SIGKILL, after the session)";

/// The same kill where it is the normal ending of a `closed` session whose server does not exit
/// when its input ends (issue 41): the client left, the wrapper ended the server.
const ENDED_BY_ASSAY: &str =
    "ended by assay after the client left (SIGKILL: the server did not exit on end of input)";

/// The words for a SIGKILL the wrapper requested: [`ENDED_BY_ASSAY`] in a `closed` capture of a
/// `client_closed` session, else [`KILLED_BY_ASSAY`].
fn kill_words(closed: bool, end: Option<SessionEnd>) -> &'static str {
    if closed && end == Some(SessionEnd::ClientClosed) {
        ENDED_BY_ASSAY
    } else {
        KILLED_BY_ASSAY
    }
}

/// How the server ended, in words: `exited with code 0`, `killed by signal 15 (SIGTERM)`,
/// [`ENDED_BY_ASSAY`], [`KILLED_BY_ASSAY`]; `closed` is the capture's verdict.
fn ending(s: &StopData, closed: bool) -> String {
    match s.termination {
        Termination::Exited => format!("exited with code {}", s.exit_code.unwrap_or(-1)),
        Termination::Signaled if s.assay_kill_requested && s.signal == Some(SIGKILL) => {
            kill_words(closed, Some(s.session_end)).to_string()
        }
        Termination::Signaled => {
            let n = s.signal.unwrap_or(0);
            let name = nix::sys::signal::Signal::try_from(n)
                .map(|sig| format!(" ({})", sig.as_str()))
                .unwrap_or_default();
            let core = if s.core_dumped == Some(true) {
                ", core dumped"
            } else {
                ""
            };
            format!("killed by signal {n}{name}{core}")
        }
        Termination::Unknown => "status unknown (never observed)".to_string(),
    }
}

fn session_end(e: SessionEnd) -> &'static str {
    match e {
        SessionEnd::ClientClosed => {
            "client_closed (the client closed its input; a recorded ending)"
        }
        SessionEnd::ProxyError => "proxy_error (the wrapper failed: an I/O or protocol error)",
    }
}

fn decision_log(s: &StopData) -> String {
    let counts = match (s.decision_events_written, s.decision_events_dropped) {
        (Some(w), Some(d)) => format!(": {w} written, {d} dropped"),
        _ => String::new(),
    };
    let state = match s.decision_log {
        DecisionLogState::Complete => "complete",
        DecisionLogState::Incomplete => "incomplete",
        DecisionLogState::Temporary => "temporary (not retained)",
        DecisionLogState::Absent => "absent (none was kept)",
        DecisionLogState::Unknown => "unknown (the writer never started)",
    };
    format!("{state}{counts}")
}

fn field(lines: &mut Vec<String>, name: &str, value: String) {
    lines.push(format!("  {name:<16}{value}"));
}

fn who_and_when(lines: &mut Vec<String>, f: &SessionFacts, session_id: Option<&str>) {
    lines.push("who".to_string());
    field(
        lines,
        "server_id",
        format!(
            "{} (the configured label, not the executable's identity)",
            or_dash(f.server_id.as_deref())
        ),
    );
    field(lines, "session id", or_dash(session_id));
    field(lines, "event source", or_dash(f.event_source.as_deref()));
    field(
        lines,
        "server pid",
        f.server_pid.map_or("-".to_string(), |p| p.to_string()),
    );
    field(
        lines,
        "command sha256",
        format!(
            "{} (of the server's argv; the argv is not recorded)",
            or_dash(f.command_sha256.as_deref())
        ),
    );
    field(lines, "producer", or_dash(f.producer.as_deref()));
    field(
        lines,
        "policy",
        format!(
            "{} (sha256 {})",
            or_dash(f.policy_name.as_deref()),
            or_dash(f.policy_sha256.as_deref())
        ),
    );
    if f.dry_run == Some(true) {
        field(
            lines,
            "dry run",
            "yes: refusals were logged, not enforced".to_string(),
        );
    }
    lines.push("when".to_string());
    field(lines, "created", or_dash(f.created_at.as_deref()));
    field(lines, "started", or_dash(f.started_at.as_deref()));
    field(lines, "stopped", or_dash(f.stopped_at.as_deref()));
}

/// The report as lines.
fn render(dir: &Path, r: &CaptureReport) -> Vec<String> {
    let c = &r.closure;
    let mut lines = vec![
        format!("capture  {}", text::render(&dir.display().to_string())),
        format!("verdict  {}", verdict_line(c)),
    ];
    for reason in &c.reasons {
        lines.push(format!(
            "  - {}: {} ({})",
            reason.code.as_str(),
            reason.code.in_words(),
            text::render(&reason.detail)
        ));
    }
    who_and_when(&mut lines, &r.session, c.session_id.as_deref());
    lines.push("how it ended".to_string());
    match &r.stop {
        Some(s) => {
            field(
                &mut lines,
                "session end",
                session_end(s.session_end).to_string(),
            );
            field(&mut lines, "server", ending(s, c.is_closed()));
            field(
                &mut lines,
                "kill requested",
                if s.assay_kill_requested {
                    "yes (the server had not exited after the session; claims no cause)"
                } else {
                    "no"
                }
                .to_string(),
            );
            field(&mut lines, "decision log", decision_log(s));
        }
        None => field(
            &mut lines,
            "stop record",
            "none that passed the reader's checks: how the session ended is not known".to_string(),
        ),
    }
    decisions(&mut lines, r);
    lines
}

fn decisions(lines: &mut Vec<String>, r: &CaptureReport) {
    let d = &r.decisions;
    let vouched = r.closure.closure != ClosureKind::Unknown;
    let note = if vouched {
        ""
    } else {
        " (as read; not vouched for: the verdict is unknown)"
    };
    lines.push(format!("decisions{note}"));
    if let Some(why) = &d.unavailable {
        lines.push(format!("  not shown: {}", text::render(why)));
        return;
    }
    let tool_rows = d
        .lines
        .iter()
        .filter(|l| matches!(l, LogLine::Decision(_) | LogLine::Refused { .. }))
        .count();
    if tool_rows == 0 {
        lines.push("  none".to_string());
    } else {
        let mut t = Table::new(&["SEQ", "TIME", "TOOL", "DECISION", "REASON CODE", "RULE"]);
        for line in &d.lines {
            match line {
                LogLine::Decision(row) => {
                    t.row(vec![
                        row.seq.to_string(),
                        text::render(&row.time),
                        or_dash(row.tool.as_deref()),
                        decision_cell(&row.decision, row.enforced),
                        text::render(&row.reason_code),
                        or_dash(row.matched_rule.as_deref()),
                    ]);
                }
                LogLine::Refused { line, code, detail } => t.row(vec![
                    "?".to_string(),
                    "-".to_string(),
                    format!("line {line} refused by the reader"),
                    code.as_str().to_string(),
                    text::render(detail),
                ]),
                LogLine::Listing(_) | LogLine::McpDecision(_) | LogLine::Result(_) => {}
            }
        }
        lines.extend(t.lines("  "));
    }
    recorded_arguments(lines, d);
    other_methods(lines, d);
    super::show_answers::answers(lines, d);
    listings(lines, d);
    if d.partial_tail_bytes > 0 {
        lines.push(format!(
            "  + {} bytes of a partial last line (not shown)",
            d.partial_tail_bytes
        ));
    }
    let n = d.counts();
    // tools/call decisions first (the line an older capture shows), then the other methods.
    let mut counts = format!(
        "counts: {} allow, {} deny, {} error",
        n.allow, n.deny, n.error
    );
    if n.refused_lines > 0 {
        counts.push_str(&format!(", {} lines refused", n.refused_lines));
    }
    if n.listings > 0 {
        counts.push_str(&format!(
            ", {} listings ({} tools removed",
            n.listings, n.removed_tools
        ));
        if n.removed_other > 0 {
            counts.push_str(&format!(", {} other entries removed", n.removed_other));
        }
        counts.push(')');
    }
    // Decisions on the other governed methods, counted apart (they are not calls).
    let m = n.mcp_decisions;
    if m.total() > 0 {
        counts.push_str(&format!(
            "; other governed methods: {} allow, {} deny, {} error",
            m.allow, m.deny, m.error
        ));
    }
    lines.push(counts);
}

/// A decision cell: `deny (not enforced)` for a refusal logged in dry run.
fn decision_cell(decision: &str, enforced: bool) -> String {
    if enforced || decision == "allow" {
        text::render(decision)
    } else {
        format!("{} (not enforced)", text::render(decision))
    }
}

/// The arguments recorded with `tools/call` decisions (SPEC §4.1a `record_arguments`), when the
/// log holds any: one line per decision, the client's text rendered for people.
fn recorded_arguments(lines: &mut Vec<String>, d: &DecisionLines) {
    let rows: Vec<(u64, &str, bool)> = d
        .lines
        .iter()
        .filter_map(|l| match l {
            LogLine::Decision(row) => row
                .arguments
                .as_deref()
                .map(|a| (row.seq, a, row.arguments_truncated)),
            _ => None,
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    lines.push("recorded arguments (canonical JSON, redacted by the policy)".to_string());
    for (seq, arguments, truncated) in rows {
        let cut = if truncated {
            " (cut at the 4 KiB bound)"
        } else {
            ""
        };
        lines.push(format!("  - seq {seq}: {}{cut}", text::render(arguments)));
    }
}

/// The decisions on governed methods other than `tools/call` (SPEC §4.1a `assay.mcp.decision`),
/// when the log holds any.
fn other_methods(lines: &mut Vec<String>, d: &DecisionLines) {
    let rows: Vec<&McpDecisionRow> = d
        .lines
        .iter()
        .filter_map(|l| match l {
            LogLine::McpDecision(row) => Some(row),
            _ => None,
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    lines.push("other governed methods (resources, prompts, requests to the client)".to_string());
    let mut t = Table::new(&[
        "SEQ",
        "TIME",
        "METHOD",
        "TARGET",
        "DECISION",
        "REASON CODE",
        "RULE",
    ]);
    for row in rows {
        let arrow = if row.direction == "server_to_client" {
            " (from the server)"
        } else {
            ""
        };
        t.row(vec![
            row.seq.to_string(),
            text::render(&row.time),
            format!("{}{arrow}", text::render(&row.method)),
            or_dash(row.target.as_deref()),
            decision_cell(&row.decision, row.enforced),
            text::render(&row.reason_code),
            or_dash(row.matched_rule.as_deref()),
        ]);
    }
    lines.extend(t.lines("  "));
}

/// What the client was shown of each judged list result (SPEC §4.1a `assay.tool.listing`:
/// `tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`, and the
/// instructions of `initialize`), when the log holds any: a row per listing headed by its list,
/// then one line per entry shown (with the first 12 digits of its digest) and per entry removed
/// (with its reason). Names are the server's text, rendered for people.
fn listings(lines: &mut Vec<String>, d: &DecisionLines) {
    let rows: Vec<&ListingRow> = d
        .lines
        .iter()
        .filter_map(|l| match l {
            LogLine::Listing(row) => Some(row),
            _ => None,
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    lines.push("listings (what the client was shown of each list result)".to_string());
    let mut t = Table::new(&["SEQ", "TIME", "LIST", "REQUEST", "SHOWN", "REMOVED"]);
    for row in &rows {
        let removed = if row.replaced_by_error {
            format!(
                "{} (the result was unreadable: the client got an error instead)",
                row.removed.len()
            )
        } else {
            row.removed.len().to_string()
        };
        t.row(vec![
            row.seq.to_string(),
            text::render(&row.time),
            text::render(row.list_name()),
            text::render(&row.request_id),
            row.shown.len().to_string(),
            removed,
        ]);
    }
    lines.extend(t.lines("  "));
    for row in rows {
        for r in &row.shown {
            lines.push(format!(
                "  - seq {}: shown {} (sha256 {}…)",
                row.seq,
                text::render(&r.name),
                text::render(r.sha256.get(..12).unwrap_or(&r.sha256))
            ));
        }
        for r in &row.removed {
            lines.push(format!(
                "  - seq {}: removed {} ({})",
                row.seq,
                text::render(&r.name),
                text::render(&r.reason_code)
            ));
        }
    }
}

/// The stop field `key` of a verdict, when the stop record passed its checks.
fn stop_field<'a>(c: &'a Closure, key: &str) -> Option<&'a serde_json::Value> {
    c.stop.as_ref().and_then(|m| m.get(key))
}

/// How a capture's server ended, in a table cell.
fn ended_cell(c: &Closure) -> String {
    let int = |k: &str| stop_field(c, k).and_then(serde_json::Value::as_i64);
    let killed_by_assay = stop_field(c, "assay_kill_requested")
        == Some(&serde_json::Value::Bool(true))
        && int("signal") == Some(i64::from(SIGKILL));
    match stop_field(c, "termination").and_then(serde_json::Value::as_str) {
        Some("exited") => format!("exited {}", int("exit_code").unwrap_or(-1)),
        Some("signaled") if killed_by_assay => {
            let end = match stop_field(c, "session_end").and_then(serde_json::Value::as_str) {
                Some("client_closed") => Some(SessionEnd::ClientClosed),
                Some("proxy_error") => Some(SessionEnd::ProxyError),
                _ => None,
            };
            kill_words(c.is_closed(), end).to_string()
        }
        Some("signaled") => format!("signal {}", int("signal").unwrap_or(0)),
        Some(other) => text::render(other),
        None => "-".to_string(),
    }
}

/// `capture summary ROOT --format table`: every capture's row once all are judged (the columns
/// are as wide as their widest cell), then the counts; the status is `capture summary`'s.
pub(crate) fn summary_table(root: &Path) -> Result<ExitCode, Failure> {
    super::capture::refuse_capture(root)?;
    let mut t = Table::new(&[
        "CAPTURE",
        "STATUS",
        "SERVER",
        "ENDED",
        "DECISIONS",
        "REASONS",
    ]);
    let counts = read_captures(root, |v| {
        let c = &v.closure;
        let reasons: Vec<&str> = c.reasons.iter().map(|r| r.code.as_str()).collect();
        let status = match v.status {
            CaptureStatus::NoSession => "no_session",
            other => other.as_str(),
        };
        t.row(vec![
            text::render(&v.name),
            status.to_string(),
            or_dash(v.server_id.as_deref()),
            ended_cell(c),
            stop_field(c, "decision_events_written")
                .and_then(serde_json::Value::as_u64)
                .map_or("-".to_string(), |n| n.to_string()),
            if reasons.is_empty() {
                "-".to_string()
            } else {
                reasons.join(",")
            },
        ]);
        ControlFlow::Continue(())
    })
    .map_err(Failure::library)?;
    let mut text = t.lines("").join("\n");
    text.push_str(&format!(
        "\n{} closed, {} incomplete, {} unknown, {} no_session\n",
        counts.closed, counts.incomplete, counts.unknown, counts.no_session
    ));
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Failure::output(exit::FAILURE))?;
    Ok(exit::code(counts.exit_status()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 41: SPEC §10's words stay for a kill that is not the normal ending.
    #[test]
    fn a_kill_reads_as_the_normal_ending_only_in_a_closed_client_closed_session() {
        assert_eq!(
            kill_words(true, Some(SessionEnd::ClientClosed)),
            ENDED_BY_ASSAY
        );
        for (closed, end) in [
            (false, Some(SessionEnd::ClientClosed)),
            (false, Some(SessionEnd::ProxyError)),
            (true, Some(SessionEnd::ProxyError)),
            (true, None),
        ] {
            assert_eq!(kill_words(closed, end), KILLED_BY_ASSAY, "{closed} {end:?}");
        }
    }
}
