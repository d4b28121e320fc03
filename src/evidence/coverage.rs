//! The coverage report (`assay.coverage.v1`, SPEC §4.4): built at session end from the decision
//! log as written (read back from disk, so it reports what the evidence says, not what the
//! process remembers) and the tool names seen in `tools/list` results.
//!
//! Only this invocation's lines count: the log is read from where this invocation began writing
//! (the length of an append-mode log when it was opened), and a line whose `data.session_id` is
//! not this session's is skipped (another process appending to the same log). Only
//! `tools/call` decisions (`assay.tool.decision`) count: the listing and MCP-decision events
//! that share the log (SPEC §4.1a) are not calls.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::event::TYPE_DECISION;
use crate::error::{Error, Result};
use crate::strict_json;

#[derive(Default, Serialize, Clone, Copy, PartialEq, Eq, Debug)]
struct Counts {
    allow: u64,
    deny: u64,
    error: u64,
}

#[derive(Serialize)]
struct Report<'a> {
    schema: &'static str,
    session_id: &'a str,
    declared_tools: &'a [String],
    observed_tools: Vec<&'a str>,
    calls: BTreeMap<String, Counts>,
    /// `tools/call` decisions without a tool name (`P_MALFORMED`).
    unnamed_calls: Counts,
    declared_not_called: Vec<&'a str>,
    called_not_declared: Vec<String>,
    /// Complete `tools/call` decision lines of this session read back from the log.
    decision_lines: u64,
}

#[derive(Deserialize)]
struct Line {
    #[serde(rename = "type")]
    ty: Option<String>,
    data: LineData,
}

#[derive(Deserialize)]
struct LineData {
    session_id: Option<String>,
    tool: Option<String>,
    decision: String,
}

/// Counts this session's `tools/call` decisions per tool in the complete lines of `log` (a
/// partial tail is ignored; lines of the other event types are skipped).
fn count(log: &[u8], session_id: &str) -> (BTreeMap<String, Counts>, Counts, u64) {
    let mut calls: BTreeMap<String, Counts> = BTreeMap::new();
    let mut unnamed = Counts::default();
    let mut lines = 0;
    let complete = match memchr::memrchr(b'\n', log) {
        Some(i) => &log[..=i],
        None => &[][..],
    };
    for line in complete.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        if strict_json::scan(line, 32).is_err() {
            continue;
        }
        let Ok(parsed) = serde_json::from_slice::<Line>(line) else {
            continue;
        };
        if parsed.data.session_id.as_deref() != Some(session_id)
            || parsed.ty.as_deref() != Some(TYPE_DECISION)
        {
            continue;
        }
        lines += 1;
        let slot = match parsed.data.tool {
            Some(t) => calls.entry(t).or_default(),
            None => &mut unnamed,
        };
        match parsed.data.decision.as_str() {
            "allow" => slot.allow += 1,
            "deny" => slot.deny += 1,
            _ => slot.error += 1,
        }
    }
    (calls, unnamed, lines)
}

/// Reads `path` from byte `start` on, without following a symlink.
fn read_from(path: &Path, start: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .and_then(crate::sys::fd::file_above_stdio)?;
    f.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Writes the report to the new file `out`. `log` is the decision log and the offset where this
/// invocation's lines begin.
pub(crate) fn write(
    out: &Path,
    session_id: &str,
    log: Option<(&Path, u64)>,
    declared: &[String],
    observed: &BTreeSet<String>,
) -> Result<()> {
    let bytes = match log {
        Some((p, start)) => {
            read_from(p, start).map_err(|e| Error::io(p, "cannot read back decision log", &e))?
        }
        None => Vec::new(),
    };
    let (calls, unnamed_calls, decision_lines) = count(&bytes, session_id);
    let declared_set: BTreeSet<&str> = declared.iter().map(String::as_str).collect();
    let report = Report {
        schema: "assay.coverage.v1",
        session_id,
        declared_tools: declared,
        observed_tools: observed.iter().map(String::as_str).collect(),
        declared_not_called: declared_set
            .iter()
            .copied()
            .filter(|t| !calls.contains_key(*t))
            .collect(),
        called_not_declared: calls
            .keys()
            .filter(|t| !declared_set.contains(t.as_str()))
            .cloned()
            .collect(),
        calls,
        unnamed_calls,
        decision_lines,
    };
    let mut json = serde_json::to_vec_pretty(&report)
        .map_err(|e| Error::io(out, "cannot serialize coverage", &std::io::Error::other(e)))?;
    json.push(b'\n');
    super::file::write_new(out, &json)
        .map_err(|e| Error::io(out, "cannot write coverage report", &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_complete_lines_only() {
        let lines = [
            r#"{"type":"assay.tool.decision","data":{"session_id":"s","tool":"a","decision":"allow"}}"#,
            r#"{"type":"assay.tool.decision","data":{"session_id":"s","tool":"a","decision":"deny"}}"#,
            r#"{"type":"assay.tool.decision","data":{"session_id":"other","tool":"a","decision":"deny"}}"#,
            r#"{"type":"assay.tool.decision","data":{"session_id":"s","tool":null,"decision":"error"}}"#,
            // The other event types of the log are not calls (SPEC §4.1a, §4.4).
            r#"{"type":"assay.mcp.decision","data":{"session_id":"s","method":"resources/read","decision":"deny"}}"#,
            r#"{"type":"assay.mcp.decision","data":{"session_id":"s","method":"prompts/get","tool":"a","decision":"allow"}}"#,
            r#"{"type":"assay.tool.listing","data":{"session_id":"s","request_id":"1","shown":[],"removed":[]}}"#,
            r#"{"data":{"session_id":"s","tool":"a","decision":"allow"}}"#,
        ];
        let mut log = lines.join("\n").into_bytes();
        log.extend_from_slice(
            b"\n{\"type\":\"assay.tool.decision\",\"data\":{\"tool\":\"b\",\"dec",
        );
        let log = log.as_slice();
        let (calls, unnamed, n) = count(log, "s");
        assert_eq!(n, 3);
        assert_eq!(
            calls["a"],
            Counts {
                allow: 1,
                deny: 1,
                error: 0
            }
        );
        assert!(!calls.contains_key("b"));
        assert_eq!(unnamed.error, 1);
    }
}
