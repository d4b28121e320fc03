//! Test helper: builds capture directories programmatically, with knobs to corrupt them.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{CONTEXT, DECISIONS, PROTOCOL, STOP};

pub(super) const SID: &str = "0123456789abcdef0123456789abcdef";
pub(super) const POLICY_SHA: &str =
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
pub(super) const COMMAND_SHA: &str =
    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

type Edit = Box<dyn Fn(&mut Value)>;
type LineEdit = Box<dyn Fn(usize, &mut Value)>;

/// A valid capture by default: `decisions` decision lines, `client_closed`, exited 0,
/// `decision_log: complete`, with correct ids and digests.
pub(super) struct Builder {
    pub session_id: String,
    pub source: String,
    pub server_id: String,
    pub pid: u32,
    pub decisions: usize,
    /// Extra characters in each decision's `reason` (to build large logs).
    pub reason_len: usize,
    pub dry_run: bool,
    /// Lines 1, 5, 9, … are `assay.tool.listing` events and lines 2, 6, 10, … are
    /// `assay.mcp.decision` events (SPEC §4.1a) instead of tool decisions.
    pub other_events: bool,
    pub pretty: bool,
    pub session_end: &'static str,
    pub termination: &'static str,
    pub exit_code: Value,
    pub signal: Value,
    pub core_dumped: Value,
    pub decision_log: &'static str,
    pub dropped: u64,
    /// Bytes appended after the last complete line (a partial failed write).
    pub tail: Vec<u8>,
    /// Pads the last complete line with spaces before its newline so the log prefix is exactly
    /// this many bytes.
    pub pad_log_to: Option<usize>,
    /// Applied to the values before serialization; the stop digest/count are computed from the
    /// log as written, then `edit_stop` runs.
    pub edit_protocol: Vec<Edit>,
    pub edit_context: Vec<Edit>,
    pub edit_stop: Vec<Edit>,
    pub edit_line: Vec<LineEdit>,
}

impl Builder {
    pub(super) fn new(decisions: usize) -> Self {
        Self {
            session_id: SID.to_string(),
            source: "urn+assay://host/test".to_string(),
            server_id: "default-mcp-server".to_string(),
            pid: 4242,
            decisions,
            reason_len: 0,
            dry_run: false,
            other_events: false,
            pretty: false,
            session_end: "client_closed",
            termination: "exited",
            exit_code: json!(0),
            signal: Value::Null,
            core_dumped: Value::Null,
            decision_log: "complete",
            dropped: 0,
            tail: Vec::new(),
            pad_log_to: None,
            edit_protocol: Vec::new(),
            edit_context: Vec::new(),
            edit_stop: Vec::new(),
            edit_line: Vec::new(),
        }
    }

    pub(super) fn protocol(&self) -> Value {
        let mut v = json!({
            "schema": "assay.capture.protocol.v1",
            "session_id": self.session_id,
            "event_source": self.source,
            "server_id": self.server_id,
            "created_at": "2025-06-01T12:00:00.000000Z",
            "decision_log": "decisions.ndjson",
            "session_context": "session-context.json",
            "session_stop": "session-stop.json",
            "producer": {"name": "assay", "version": "0.1.0"},
        });
        for e in &self.edit_protocol {
            e(&mut v);
        }
        v
    }

    fn event(&self, id: String, ty: &str, data: Value) -> Value {
        json!({
            "specversion": "1.0",
            "id": id,
            "type": ty,
            "source": self.source,
            "time": "2025-06-01T12:00:01.5Z",
            "datacontenttype": "application/json",
            "data": data,
        })
    }

    pub(super) fn context(&self) -> Value {
        let mut v = self.event(
            format!("evt_context_{}", self.session_id),
            "assay.mcp.session.context.v1",
            json!({
                "session_id": self.session_id,
                "server_id": self.server_id,
                "server_pid": self.pid,
                "started_at": "2025-06-01T12:00:00Z",
                "policy_sha256": POLICY_SHA,
                "policy_name": "example",
                "decision_log": "new",
                "session_stop_requested": true,
                "dry_run": self.dry_run,
                "command_sha256": COMMAND_SHA,
                "producer": {"name": "assay", "version": "0.1.0"},
                "assertion_basis": "producer_observation",
                "non_claims": crate::outcome::NON_CLAIMS,
            }),
        );
        for e in &self.edit_context {
            e(&mut v);
        }
        v
    }

    pub(super) fn line(&self, seq: usize) -> Value {
        let mut v = match seq % 4 {
            1 if self.other_events => self.listing_line(seq),
            2 if self.other_events => self.mcp_line(seq),
            _ => self.tool_line(seq),
        };
        for e in &self.edit_line {
            e(seq, &mut v);
        }
        v
    }

    /// An `assay.tool.listing` event (SPEC §4.1a).
    pub(super) fn listing_line(&self, seq: usize) -> Value {
        use crate::reason_code::ReasonCode as P;
        let digest = |s: &str| crate::sha256::digest_hex(s.as_bytes());
        self.event(
            format!("evt_listing_{}_{seq}", self.session_id),
            "assay.tool.listing",
            json!({
                "session_id": self.session_id,
                "seq": seq,
                "request_id": seq.to_string(),
                "shown": [
                    {"name": "read_file", "sha256": digest("read_file")},
                    {"name": "t\"\u{1}\u{202e}", "sha256": digest("t")},
                ],
                "removed": [
                    {"name": "exec", "sha256": digest("exec"), "reason_code": P::P_TOOL_UNPINNED.as_str()},
                    {"name": "(instructions)", "sha256": Value::Null, "reason_code": P::P_INSTRUCTIONS_DRIFT.as_str()},
                ],
                "replaced_by_error": false,
                "policy_sha256": POLICY_SHA,
            }),
        )
    }

    /// An `assay.mcp.decision` event (SPEC §4.1a).
    pub(super) fn mcp_line(&self, seq: usize) -> Value {
        use crate::reason_code::ReasonCode as P;
        self.event(
            format!("evt_decision_{}_{seq}", self.session_id),
            "assay.mcp.decision",
            json!({
                "session_id": self.session_id,
                "seq": seq,
                "method": "resources/read",
                "direction": "client_to_server",
                "target": "file:///workspace/.env",
                "request_id": seq.to_string(),
                "decision": "deny",
                "reason_code": P::P_RESOURCE_DENIED.as_str(),
                "reason": "resource denied",
                "matched_rule": "resources.deny:file:///workspace/.env",
                "enforced": !self.dry_run,
                "policy_sha256": POLICY_SHA,
                "params_sha256": crate::sha256::digest_hex(b"{}"),
            }),
        )
    }

    /// An `assay.tool.decision` event (SPEC §4.1).
    pub(super) fn tool_line(&self, seq: usize) -> Value {
        let allow = seq % 3 != 1;
        self.event(
            format!("evt_decision_{}_{seq}", self.session_id),
            "assay.tool.decision",
            json!({
                "session_id": self.session_id,
                "seq": seq,
                "tool": if seq % 5 == 4 { Value::Null } else { json!(format!("tool_{}", seq % 7)) },
                "tool_call_id": if seq % 4 == 3 { Value::Null } else { json!(seq.to_string()) },
                "decision": if allow { "allow" } else { "deny" },
                "reason_code": if allow { "P_POLICY_ALLOW" } else { "P_TOOL_DENIED" },
                "reason": format!("policy says so \"quoted\" {}", "r".repeat(self.reason_len)),
                "matched_rule": if allow { json!("*") } else { json!("exec") },
                "enforced": !self.dry_run,
                "policy_sha256": POLICY_SHA,
                "arguments_sha256": if seq.is_multiple_of(2) { json!(crate::sha256::digest_hex(seq.to_string().as_bytes())) } else { Value::Null },
            }),
        )
    }

    pub(super) fn log_bytes(&self) -> (Vec<u8>, usize) {
        let mut log = Vec::new();
        for i in 0..self.decisions {
            serde_json::to_writer(&mut log, &self.line(i)).unwrap();
            log.push(b'\n');
        }
        if let Some(target) = self.pad_log_to {
            assert!(log.len() <= target && !log.is_empty());
            log.pop();
            log.resize(target - 1, b' ');
            log.push(b'\n');
        }
        let prefix_len = log.len();
        log.extend_from_slice(&self.tail);
        (log, prefix_len)
    }

    pub(super) fn stop(&self, prefix: &[u8]) -> Value {
        let retained = matches!(self.decision_log, "complete" | "incomplete" | "temporary");
        let acct = |v: Value| if retained { v } else { Value::Null };
        let mut v = self.event(
            format!("evt_stop_{}", self.session_id),
            "assay.mcp.session.stop.v1",
            json!({
                "session_id": self.session_id,
                "server_id": self.server_id,
                "server_pid": self.pid,
                "session_context_id": format!("evt_context_{}", self.session_id),
                "session_end": self.session_end,
                "termination": self.termination,
                "exit_code": self.exit_code,
                "signal": self.signal,
                "core_dumped": self.core_dumped,
                "assay_kill_requested": false,
                "decision_log": self.decision_log,
                "decision_events_written": acct(json!(self.decisions)),
                "decision_events_dropped": acct(json!(self.dropped)),
                "decision_prefix_sha256": acct(json!(crate::sha256::digest_hex(prefix))),
                "assertion_basis": "producer_observation",
                "non_claims": crate::outcome::NON_CLAIMS,
            }),
        );
        for e in &self.edit_stop {
            e(&mut v);
        }
        v
    }

    fn ser(&self, v: &Value) -> Vec<u8> {
        let mut out = if self.pretty {
            serde_json::to_vec_pretty(v).unwrap()
        } else {
            serde_json::to_vec(v).unwrap()
        };
        out.push(b'\n');
        out
    }

    /// Writes the four files into `dir` (which must exist).
    pub(super) fn write_to(&self, dir: &Path) {
        let (log, prefix_len) = self.log_bytes();
        std::fs::write(dir.join(PROTOCOL), self.ser(&self.protocol())).unwrap();
        std::fs::write(dir.join(CONTEXT), self.ser(&self.context())).unwrap();
        std::fs::write(dir.join(STOP), self.ser(&self.stop(&log[..prefix_len]))).unwrap();
        std::fs::write(dir.join(DECISIONS), &log).unwrap();
    }

    /// Writes the three companions and `log` as the decision log (every line complete);
    /// `decisions` must be its line count.
    pub(super) fn build_with_log(&self, log: &[u8]) -> tempfile::TempDir {
        assert_eq!(log.iter().filter(|b| **b == b'\n').count(), self.decisions);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(PROTOCOL), self.ser(&self.protocol())).unwrap();
        std::fs::write(dir.path().join(CONTEXT), self.ser(&self.context())).unwrap();
        std::fs::write(dir.path().join(STOP), self.ser(&self.stop(log))).unwrap();
        std::fs::write(dir.path().join(DECISIONS), log).unwrap();
        dir
    }

    pub(super) fn build(&self) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        self.write_to(dir.path());
        dir
    }
}

/// Sets `path` (`/`-separated keys) inside `v` to `new`.
pub(super) fn set(v: &mut Value, path: &str, new: Value) {
    let mut cur = v;
    let keys: Vec<&str> = path.split('/').collect();
    for k in &keys[..keys.len() - 1] {
        cur = cur.get_mut(*k).unwrap();
    }
    cur.as_object_mut()
        .unwrap()
        .insert(keys[keys.len() - 1].to_string(), new);
}

/// Removes the key at `path`.
pub(super) fn remove(v: &mut Value, path: &str) {
    let mut cur = v;
    let keys: Vec<&str> = path.split('/').collect();
    for k in &keys[..keys.len() - 1] {
        cur = cur.get_mut(*k).unwrap();
    }
    cur.as_object_mut().unwrap().remove(keys[keys.len() - 1]);
}

/// Replaces the first occurrence of `from` in file `dir/name` with `to` (raw byte edit).
pub(super) fn replace_in(dir: &Path, name: &str, from: &str, to: &str) {
    let p: PathBuf = dir.join(name);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{name} lacks {from:?}");
    std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
}

/// Nested arrays: a value that makes the enclosing document `depth` levels deep when placed
/// as a member of a top-level object's member object (the `data` object is level 2).
pub(super) fn nested(levels: usize) -> Value {
    serde_json::from_str(&format!("{}{}", "[".repeat(levels), "]".repeat(levels))).unwrap()
}

/// Calls `check` on every UTF-8 line of `log`, then of every copy of `log` with one byte
/// changed to a backslash, a quote, `x` or `n` (the edits that turn a fast reading's texts
/// into escapes, ends or other words).
pub(super) fn each_line_and_edit(log: &[u8], mut check: impl FnMut(&str)) {
    let mut lines = |bytes: &[u8]| {
        for line in bytes.split(|&c| c == b'\n') {
            if let Ok(line) = std::str::from_utf8(line) {
                check(line);
            }
        }
    };
    lines(log);
    let mut edited = log.to_vec();
    for i in 0..log.len() {
        for byte in [b'\\', b'"', b'x', b'n'] {
            edited[i] = byte;
            lines(&edited);
        }
        edited[i] = log[i];
    }
}
