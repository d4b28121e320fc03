//! The coverage report (`assay.coverage.v1`, SPEC §4.4): built at session end from the decision
//! log as written (read back from disk, so it reports what the evidence says, not what the
//! process remembers) and the tool names seen in `tools/list` results.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

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
    /// Complete decision lines read back from the log.
    decision_lines: u64,
}

#[derive(Deserialize)]
struct Line {
    data: LineData,
}

#[derive(Deserialize)]
struct LineData {
    tool: Option<String>,
    decision: String,
}

/// Counts decisions per tool in the complete lines of `log` (a partial tail is ignored).
fn count(log: &[u8]) -> (BTreeMap<String, Counts>, Counts, u64) {
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

/// Writes the report to the new file `out`.
pub(crate) fn write(
    out: &Path,
    session_id: &str,
    log: Option<&Path>,
    declared: &[String],
    observed: &BTreeSet<String>,
) -> Result<()> {
    let bytes = match log {
        Some(p) => {
            std::fs::read(p).map_err(|e| Error::io(p, "cannot read back decision log", &e))?
        }
        None => Vec::new(),
    };
    let (calls, unnamed_calls, decision_lines) = count(&bytes);
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
        let log = b"{\"data\":{\"tool\":\"a\",\"decision\":\"allow\"}}\n{\"data\":{\"tool\":\"a\",\"decision\":\"deny\"}}\n{\"data\":{\"tool\":null,\"decision\":\"error\"}}\n{\"data\":{\"tool\":\"b\",\"dec";
        let (calls, unnamed, n) = count(log);
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
