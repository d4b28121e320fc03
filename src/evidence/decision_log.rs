//! The decision log writer and its accounting (SPEC §4.1).
//!
//! One `assay.tool.decision` event per evaluated `tools/call`, one NDJSON line each, written with a
//! single `write_all`. The writer counts what it observed: lines whose `write_all` returned `Ok`
//! (`written`), and, after the first failure, every emission it refused (`dropped`). The prefix
//! digest covers exactly the successfully written lines, so a reader can match it against the
//! complete-line prefix of the file. `seq` (assigned by the caller) advances on every emission, written or not.
//!
//! The log also holds the `assay.tool.listing` events of SPEC §4.1a (what a client was shown of a
//! `tools/list` result): [`DecisionFormat::push_listing_line`] formats them with the same
//! envelope and the same `seq`, and they go through the same writer and accounting. So do the
//! `assay.mcp.decision` events (a decision on a governed method other than `tools/call`,
//! SPEC §4.1a, §5.2), formatted by [`DecisionFormat::push_mcp_decision_line`].

use std::fs::File;
use std::io::{self, Write};

use super::event::{
    Clock, HexDigest, TYPE_DECISION, TYPE_LISTING, TYPE_MCP_DECISION, push_json_str,
};
use super::prefix_digest::PrefixDigest;
/// The `direction` of an [`McpDecisionEntry`] (its home is `src/direction.rs`).
pub(crate) use crate::direction::Direction;
use crate::policy::{Decision, ReasonCode};

/// The prefix of every decision event's id (`assay.tool.decision` and `assay.mcp.decision`).
pub(crate) const DECISION_ID_PREFIX: &str = "evt_decision_";

/// The event id of decision `seq` of session `session_id`: `evt_decision_<session_id>_<seq>`
/// (SPEC §4.1, §4.1a). The one constructor of that id: the log's lines are formatted with the
/// same prefix, and the `decision_id` a refusal carries (`_meta`/`data["assay/decision"]`, SPEC §3,
/// §5.2) is built here on the client path and on the server path alike, whether or not a
/// decision log is kept.
pub(crate) fn decision_id(session_id: &str, seq: u64) -> String {
    format!("{DECISION_ID_PREFIX}{session_id}_{seq}")
}

/// Where decision lines go. A file in production; tests inject sinks that fail on demand.
pub(crate) trait DecisionSink: Send {
    /// Writes one whole line (one `write_all`).
    fn write_line(&mut self, line: &[u8]) -> io::Result<()>;
}

impl DecisionSink for File {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.write_all(line)
    }
}

/// A log file a fork of the host does not keep (SPEC §3.1b).
impl DecisionSink for crate::sys::fork_close::Tracked<File> {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.write_all(line)
    }
}

/// The accounting of one writer, as recorded in the stop event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogAccounting {
    pub written: u64,
    pub dropped: u64,
    pub prefix_sha256: String,
    pub poisoned: bool,
}

/// One `tools/call` decision to record. Raw arguments reach the log only as their digest, and,
/// when the policy sets `record_arguments`, as their redacted and bounded canonical text.
#[derive(Clone)]
pub(crate) struct DecisionEntry<'a> {
    pub tool: Option<&'a str>,
    pub tool_call_id: Option<&'a str>,
    pub decision: Decision,
    pub reason_code: ReasonCode,
    pub reason: &'a str,
    pub matched_rule: Option<&'a str>,
    pub arguments_sha256: Option<&'a HexDigest>,
    /// The definition digest the session remembers for the tool (SPEC §5.1), if any.
    pub tool_definition_sha256: Option<&'a HexDigest>,
    /// With `record_arguments` (SPEC §4.1a, §5.2): the recorded text of `params.arguments` (the
    /// canonical JSON with redacted values, cut to at most 4 KiB) and whether it was cut. The
    /// line then carries `"arguments"` as a JSON *string* holding that text (a cut text is no
    /// longer JSON, so it can never be an object) and `"arguments_truncated"`. `None`: neither
    /// member is written, and the line is byte for byte what it was before the option existed.
    pub arguments: Option<(&'a str, bool)>,
}

/// One listing event (SPEC §4.1a `assay.tool.listing`): what a client was shown of one answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListingEntry<'a> {
    /// The method of the request the listing answers (`tools/list`, `resources/list`,
    /// `resources/templates/list`, `prompts/list`; `initialize` or `server/discover` for the
    /// server's instructions).
    pub method: &'a str,
    /// The client's request id, as a string.
    pub request_id: &'a str,
    /// Each entry shown, with its definition digest.
    pub shown: &'a [(&'a str, &'a HexDigest)],
    /// Each entry removed, with its digest (`None`: it could not be digested) and reason.
    pub removed: &'a [(&'a str, Option<&'a HexDigest>, ReasonCode)],
    /// The whole result was unreadable and the client got the `-32603` error instead.
    pub replaced_by_error: bool,
}

/// One decision on a governed method other than `tools/call` (SPEC §4.1a `assay.mcp.decision`,
/// §5.2): a `resources/read`, a `prompts/get`, a server's request to the client.
#[derive(Clone)]
pub(crate) struct McpDecisionEntry<'a> {
    /// The JSON-RPC method, e.g. `resources/read`.
    pub method: &'a str,
    /// Which way the message travelled.
    pub direction: Direction,
    /// The resource URI, prompt name or client feature (peer text, escaped as a JSON string);
    /// `None` is `null` (absent, or not a string).
    pub target: Option<&'a str>,
    /// The JSON-RPC id as a string (as `tools/call`'s `tool_call_id`), or `None` (`null`).
    pub request_id: Option<&'a str>,
    pub decision: Decision,
    pub reason_code: ReasonCode,
    pub reason: &'a str,
    pub matched_rule: Option<&'a str>,
    /// SHA-256 of the RFC 8785 canonical JSON of `params`; `None` (`null`) without `params`.
    pub params_sha256: Option<&'a HexDigest>,
}

/// The outcome of one emission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Emitted {
    Written,
    /// This emission failed (the writer is now poisoned).
    Failed,
    /// Refused because an earlier write failed.
    Refused,
}

/// Formats decision lines (SPEC §4.1). The constant parts of the event are escaped once, in
/// [`DecisionFormat::new`]; each line is appended to a caller's buffer with no allocation.
pub(crate) struct DecisionFormat {
    clock: Clock,
    /// `{"specversion":"1.0","id":"evt_decision_<session>_`
    head: String,
    /// `","type":…,"source":…,"time":"`
    mid: String,
    /// `","datacontenttype":…,"data":{"session_id":…,"seq":`
    data_head: String,
    /// `,"enforced":…,"policy_sha256":…,"arguments_sha256":`
    tail: String,
    /// `,"tool":…,"tool_call_id":` of the last tool formatted.
    tool: Segment<OptText>,
    /// `,"decision":…,"matched_rule":…` and [`Self::tail`] of the last verdict formatted.
    verdict: Segment<VerdictKey>,
    /// `{"specversion":"1.0","id":"evt_listing_<session>_`
    listing_head: String,
    /// `","type":"assay.tool.listing","source":…,"time":"`
    listing_mid: String,
    /// `],"policy_sha256":…}}` and the newline, after `"replaced_by_error":…`.
    listing_tail: String,
    /// `","type":"assay.mcp.decision","source":…,"time":"`
    mcp_mid: String,
    /// `,"enforced":…,"policy_sha256":…,"params_sha256":`
    mcp_tail: String,
    /// `{"specversion":"1.0","id":"evt_result_<session>_`
    result_head: String,
    /// `","type":"assay.mcp.result","source":…,"time":"`
    result_mid: String,
}

/// The escaped text of the part of a line that depends only on `key`, kept while consecutive
/// lines share it (a session's calls mostly repeat their tool and verdict), so a line is a few
/// copies rather than a dozen escapes. The key is updated in place: a change costs no
/// allocation once the buffers have grown. An empty text means nothing was formatted yet (a
/// formatted segment always starts with its member name).
#[derive(Default)]
struct Segment<K> {
    key: K,
    text: Vec<u8>,
}

/// An optional text a segment depends on (the tool name, the matched rule); `None` is `null`.
#[derive(Default)]
struct OptText {
    present: bool,
    name: String,
}

impl OptText {
    fn is(&self, tool: Option<&str>) -> bool {
        match tool {
            Some(t) => self.present && self.name == t,
            None => !self.present,
        }
    }

    fn set(&mut self, tool: Option<&str>) {
        self.present = tool.is_some();
        self.name.clear();
        self.name.push_str(tool.unwrap_or_default());
    }
}

/// What the verdict segment depends on.
#[derive(Default)]
struct VerdictKey {
    decision: Option<(Decision, ReasonCode)>,
    reason: String,
    matched_rule: OptText,
}

impl VerdictKey {
    fn is(&self, e: &DecisionEntry<'_>) -> bool {
        self.decision == Some((e.decision, e.reason_code))
            && self.reason == e.reason
            && self.matched_rule.is(e.matched_rule)
    }

    fn set(&mut self, e: &DecisionEntry<'_>) {
        self.decision = Some((e.decision, e.reason_code));
        self.reason.clear();
        self.reason.push_str(e.reason);
        self.matched_rule.set(e.matched_rule);
    }
}

/// The decision log writer and its accounting: one `write_all` per line, counted and hashed.
pub(crate) struct DecisionLog {
    sink: Box<dyn DecisionSink>,
    written: u64,
    dropped: u64,
    poisoned: bool,
    /// The SHA-256 of the completed writes, computed off the path between a decision line's
    /// write and the forwarding of its call (SPEC §4.1 orders only those two): when the writer
    /// idles, or on a hashing thread while calls are pipelined.
    prefix: PrefixDigest,
}

/// The decimal text of `n`, written at the end of `buf` (no `fmt` machinery on the per-line path).
fn decimal(buf: &mut [u8; 20], mut n: u64) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

fn json_str(s: &str) -> String {
    let mut v = Vec::new();
    push_json_str(&mut v, s);
    String::from_utf8(v).unwrap_or_default()
}

impl DecisionFormat {
    pub(crate) fn new(session_id: &str, source: &str, policy_sha256: &str, enforced: bool) -> Self {
        let sid = json_str(session_id);
        // The id is a JSON string built from the escaped session id; session ids are hex, so
        // only the quotes need care.
        let sid_inner = &sid[1..sid.len() - 1];
        Self {
            clock: Clock::new(),
            head: format!("{{\"specversion\":\"1.0\",\"id\":\"{DECISION_ID_PREFIX}{sid_inner}_"),
            mid: format!(
                "\",\"type\":{},\"source\":{},\"time\":\"",
                json_str(TYPE_DECISION),
                json_str(source)
            ),
            data_head: format!(
                "\",\"datacontenttype\":\"application/json\",\"data\":{{\"session_id\":{sid},\"seq\":"
            ),
            tail: format!(
                ",\"enforced\":{enforced},\"policy_sha256\":{},\"arguments_sha256\":",
                json_str(policy_sha256)
            ),
            tool: Segment::default(),
            verdict: Segment::default(),
            listing_head: format!("{{\"specversion\":\"1.0\",\"id\":\"evt_listing_{sid_inner}_"),
            listing_mid: format!(
                "\",\"type\":{},\"source\":{},\"time\":\"",
                json_str(TYPE_LISTING),
                json_str(source)
            ),
            listing_tail: format!(",\"policy_sha256\":{}}}}}\n", json_str(policy_sha256)),
            mcp_mid: format!(
                "\",\"type\":{},\"source\":{},\"time\":\"",
                json_str(TYPE_MCP_DECISION),
                json_str(source)
            ),
            mcp_tail: format!(
                ",\"enforced\":{enforced},\"policy_sha256\":{},\"params_sha256\":",
                json_str(policy_sha256)
            ),
            result_head: format!(
                "{{\"specversion\":\"1.0\",\"id\":\"{}{sid_inner}_",
                super::event::RESULT_ID_PREFIX
            ),
            result_mid: format!(
                "\",\"type\":{},\"source\":{},\"time\":\"",
                json_str(super::event::TYPE_RESULT),
                json_str(source)
            ),
        }
    }

    /// Appends the envelope of result event `seq` (SPEC §5.3 `assay.mcp.result`) up to and
    /// including `"data":{"session_id":…,"seq":N`; `evidence/result_event.rs` writes the rest,
    /// ending with [`Self::policy_tail`].
    pub(crate) fn push_result_head(&mut self, out: &mut Vec<u8>, seq: u64) {
        let mut digits = [0u8; 20];
        let seq = decimal(&mut digits, seq);
        out.extend_from_slice(self.result_head.as_bytes());
        out.extend_from_slice(seq);
        out.extend_from_slice(self.result_mid.as_bytes());
        self.clock.push_now(out);
        out.extend_from_slice(self.data_head.as_bytes());
        out.extend_from_slice(seq);
    }

    /// `,"policy_sha256":…}}` and the newline: the end of a listing or result line.
    pub(crate) fn policy_tail(&self) -> &[u8] {
        self.listing_tail.as_bytes()
    }

    /// Appends MCP decision `seq` (SPEC §4.1a `assay.mcp.decision`) as one line to `out`: the
    /// same envelope and `id` form (`evt_decision_<session_id>_<seq>`) as a `tools/call`
    /// decision, and `data` `session_id`, `seq`, `method`, `direction`, `target`, `request_id`,
    /// `decision`, `reason_code`, `reason`, `matched_rule`, `enforced`, `policy_sha256`,
    /// `params_sha256`, in that order. Every string is escaped as `serde_json` escapes it (the
    /// method and target are peer text); the line is compact JSON plus `\n`, the same bytes
    /// `serde_json` writes for it (the tests hold the two together). It shares `seq` with the
    /// other lines of the log and is written by the same [`DecisionLog`].
    pub(crate) fn push_mcp_decision_line(
        &mut self,
        out: &mut Vec<u8>,
        seq: u64,
        e: &McpDecisionEntry<'_>,
    ) {
        let mut digits = [0u8; 20];
        let seq = decimal(&mut digits, seq);
        out.extend_from_slice(self.head.as_bytes());
        out.extend_from_slice(seq);
        out.extend_from_slice(self.mcp_mid.as_bytes());
        self.clock.push_now(out);
        out.extend_from_slice(self.data_head.as_bytes());
        out.extend_from_slice(seq);
        out.extend_from_slice(b",\"method\":");
        push_json_str(out, e.method);
        out.extend_from_slice(b",\"direction\":\"");
        out.extend_from_slice(e.direction.as_str().as_bytes());
        out.extend_from_slice(b"\",\"target\":");
        push_opt(out, e.target);
        out.extend_from_slice(b",\"request_id\":");
        push_opt(out, e.request_id);
        out.extend_from_slice(b",\"decision\":\"");
        out.extend_from_slice(e.decision.as_str().as_bytes());
        out.extend_from_slice(b"\",\"reason_code\":\"");
        out.extend_from_slice(e.reason_code.as_str().as_bytes());
        out.extend_from_slice(b"\",\"reason\":");
        push_json_str(out, e.reason);
        out.extend_from_slice(b",\"matched_rule\":");
        push_opt(out, e.matched_rule);
        out.extend_from_slice(self.mcp_tail.as_bytes());
        push_digest(out, e.params_sha256);
        out.extend_from_slice(b"}}\n");
    }

    /// Appends listing event `seq` (SPEC §4.1a `assay.tool.listing`) as one line to `out`: the
    /// `method` of the request it answers (`tools/list`, `resources/list`,
    /// `resources/templates/list`, `prompts/list`; `initialize` or `server/discover` for the
    /// instructions), the client's request id (as a string), each entry it was shown with its
    /// definition digest, each tool removed with its digest (`None`: the definition could not
    /// be digested) and reason, and whether the whole result was replaced by the `-32603`
    /// error. The session id, source and policy digest are this format's. Names are
    /// server-written text and are escaped like every other string; the line is compact JSON
    /// plus `\n`, the same bytes `serde_json` writes for it (the tests hold the two together).
    /// It shares `seq` with decision lines and is written by the same [`DecisionLog`].
    pub(crate) fn push_listing_line(&mut self, out: &mut Vec<u8>, seq: u64, l: &ListingEntry<'_>) {
        let mut digits = [0u8; 20];
        let seq = decimal(&mut digits, seq);
        out.extend_from_slice(self.listing_head.as_bytes());
        out.extend_from_slice(seq);
        out.extend_from_slice(self.listing_mid.as_bytes());
        self.clock.push_now(out);
        out.extend_from_slice(self.data_head.as_bytes());
        out.extend_from_slice(seq);
        out.extend_from_slice(b",\"method\":");
        push_json_str(out, l.method);
        out.extend_from_slice(b",\"request_id\":");
        push_json_str(out, l.request_id);
        out.extend_from_slice(b",\"shown\":[");
        for (i, (name, sha256)) in l.shown.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"name\":");
            push_json_str(out, name);
            out.extend_from_slice(b",\"sha256\":");
            push_digest(out, Some(sha256));
            out.push(b'}');
        }
        out.extend_from_slice(b"],\"removed\":[");
        for (i, (name, sha256, code)) in l.removed.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"name\":");
            push_json_str(out, name);
            out.extend_from_slice(b",\"sha256\":");
            push_digest(out, *sha256);
            out.extend_from_slice(b",\"reason_code\":\"");
            out.extend_from_slice(code.as_str().as_bytes());
            out.extend_from_slice(b"\"}");
        }
        out.extend_from_slice(b"],\"replaced_by_error\":");
        out.extend_from_slice(if l.replaced_by_error {
            b"true"
        } else {
            b"false"
        });
        out.extend_from_slice(self.listing_tail.as_bytes());
    }

    /// Appends decision `seq` as one event line to `out`: the same bytes `serde_json` writes for
    /// `Envelope<DecisionData>` plus `\n` (the tests below hold the two together).
    pub(crate) fn push_line(&mut self, out: &mut Vec<u8>, seq: u64, e: &DecisionEntry<'_>) {
        let mut digits = [0u8; 20];
        let seq = decimal(&mut digits, seq);
        out.extend_from_slice(self.head.as_bytes());
        out.extend_from_slice(seq);
        out.extend_from_slice(self.mid.as_bytes());
        self.clock.push_now(out);
        out.extend_from_slice(self.data_head.as_bytes());
        out.extend_from_slice(seq);
        out.extend_from_slice(self.tool_segment(e.tool));
        push_opt(out, e.tool_call_id);
        out.extend_from_slice(self.verdict_segment(e));
        push_digest(out, e.arguments_sha256);
        out.extend_from_slice(b",\"tool_definition_sha256\":");
        push_digest(out, e.tool_definition_sha256);
        if let Some((text, truncated)) = e.arguments {
            out.extend_from_slice(b",\"arguments\":");
            push_json_str(out, text);
            out.extend_from_slice(if truncated {
                b",\"arguments_truncated\":true"
            } else {
                b",\"arguments_truncated\":false"
            });
        }
        out.extend_from_slice(b"}}\n");
    }

    /// `,"tool":…,"tool_call_id":` for `tool`.
    fn tool_segment(&mut self, tool: Option<&str>) -> &[u8] {
        let seg = &mut self.tool;
        if seg.text.is_empty() || !seg.key.is(tool) {
            seg.text.clear();
            seg.text.extend_from_slice(b",\"tool\":");
            push_opt(&mut seg.text, tool);
            seg.text.extend_from_slice(b",\"tool_call_id\":");
            seg.key.set(tool);
        }
        &seg.text
    }

    /// `,"decision":…,"matched_rule":…` and the constant tail up to `"arguments_sha256":`.
    fn verdict_segment(&mut self, e: &DecisionEntry<'_>) -> &[u8] {
        let seg = &mut self.verdict;
        if seg.text.is_empty() || !seg.key.is(e) {
            let out = &mut seg.text;
            out.clear();
            out.extend_from_slice(b",\"decision\":\"");
            out.extend_from_slice(e.decision.as_str().as_bytes());
            out.extend_from_slice(b"\",\"reason_code\":\"");
            out.extend_from_slice(e.reason_code.as_str().as_bytes());
            out.extend_from_slice(b"\",\"reason\":");
            push_json_str(out, e.reason);
            out.extend_from_slice(b",\"matched_rule\":");
            push_opt(out, e.matched_rule);
            out.extend_from_slice(self.tail.as_bytes());
            seg.key.set(e);
        }
        &seg.text
    }
}

/// A digest as a JSON string (hex digits need no escaping), or `null`.
fn push_digest(out: &mut Vec<u8>, d: Option<&HexDigest>) {
    match d {
        Some(d) => {
            out.push(b'"');
            out.extend_from_slice(d.as_bytes());
            out.push(b'"');
        }
        None => out.extend_from_slice(b"null"),
    }
}

/// A JSON string, or `null`.
fn push_opt(out: &mut Vec<u8>, v: Option<&str>) {
    match v {
        Some(s) => push_json_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

impl DecisionLog {
    pub(crate) fn new(sink: Box<dyn DecisionSink>) -> Self {
        Self {
            sink,
            written: 0,
            dropped: 0,
            poisoned: false,
            prefix: PrefixDigest::new(),
        }
    }

    /// Counts `n` emissions that were numbered but could not be written in `seq` order (their
    /// predecessor was never written): refused, and the writer is poisoned, so the log reads
    /// `incomplete`, never `complete` with a gap.
    pub(crate) fn refuse(&mut self, n: u64) {
        if n > 0 {
            self.poisoned = true;
            self.dropped += n;
        }
    }

    /// Writes one formatted decision line with one `write_all` and updates the accounting; once
    /// poisoned, refuses (and counts) the emission without writing. The line enters the prefix
    /// digest later ([`PrefixDigest`]).
    pub(crate) fn write(&mut self, line: &[u8]) -> (Emitted, Option<io::Error>) {
        if self.poisoned {
            self.dropped += 1;
            return (Emitted::Refused, None);
        }
        // SPEC §4.1: one write_all of the whole line; only a completed write enters the digest.
        match self.sink.write_line(line) {
            Ok(()) => {
                self.written += 1;
                self.prefix.push(line);
                (Emitted::Written, None)
            }
            Err(e) => {
                // A partial tail never enters the digest.
                self.poisoned = true;
                self.dropped += 1;
                (Emitted::Failed, Some(e))
            }
        }
    }

    /// The writer idles (after the forwarded calls were flushed): see [`PrefixDigest::settle`].
    /// The digest is the same whenever it runs.
    pub(crate) fn settle(&mut self) {
        self.prefix.settle();
    }

    /// The accounting of this invocation's lines so far (ends the hashing thread, if one runs).
    pub(crate) fn accounting(&mut self) -> LogAccounting {
        LogAccounting {
            written: self.written,
            dropped: self.dropped,
            prefix_sha256: self.prefix.digest_hex(),
            poisoned: self.poisoned,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::prefix_digest::CHUNK;
    use std::sync::{Arc, Mutex};

    /// The formatter and the writer together, the way the proxy uses them.
    struct Writer {
        format: DecisionFormat,
        log: DecisionLog,
        line: Vec<u8>,
    }

    fn writer(
        sink: Box<dyn DecisionSink>,
        session_id: &str,
        source: &str,
        policy_sha256: &str,
        enforced: bool,
    ) -> Writer {
        Writer {
            format: DecisionFormat::new(session_id, source, policy_sha256, enforced),
            log: DecisionLog::new(sink),
            line: Vec::new(),
        }
    }

    impl Writer {
        fn emit(&mut self, seq: u64, e: &DecisionEntry<'_>) -> (Emitted, Option<io::Error>) {
            self.line.clear();
            self.format.push_line(&mut self.line, seq, e);
            self.log.write(&self.line)
        }
        fn settle(&mut self) {
            self.log.settle();
        }
        fn accounting(&mut self) -> LogAccounting {
            self.log.accounting()
        }
    }

    /// A sink that keeps what it was given and fails its Nth write after writing half the line,
    /// the way a full disk leaves a partial tail.
    struct FailingSink {
        out: Arc<Mutex<Vec<u8>>>,
        calls: usize,
        fail_on: usize,
    }

    impl DecisionSink for FailingSink {
        fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
            self.calls += 1;
            let mut out = self.out.lock().unwrap();
            if self.calls == self.fail_on {
                out.extend_from_slice(&line[..line.len() / 2]);
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            out.extend_from_slice(line);
            Ok(())
        }
    }

    /// A digest for the entries that carry one.
    static DIGEST: std::sync::LazyLock<HexDigest> =
        std::sync::LazyLock::new(|| HexDigest::of(b"{}"));

    fn entry() -> DecisionEntry<'static> {
        DecisionEntry {
            tool: Some("read_file"),
            tool_call_id: Some("1"),
            decision: Decision::Allow,
            reason_code: ReasonCode::P_POLICY_ALLOW,
            reason: "allowed",
            matched_rule: Some("allow:*"),
            arguments_sha256: None,
            tool_definition_sha256: Some(&DIGEST),
            arguments: None,
        }
    }

    /// The serde shape the hand-written serializer must reproduce byte for byte.
    #[derive(serde::Serialize)]
    struct DecisionData<'a> {
        session_id: &'a str,
        seq: u64,
        tool: Option<&'a str>,
        tool_call_id: Option<&'a str>,
        decision: Decision,
        reason_code: ReasonCode,
        reason: &'a str,
        matched_rule: Option<&'a str>,
        enforced: bool,
        policy_sha256: &'a str,
        arguments_sha256: Option<&'a str>,
        tool_definition_sha256: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        arguments: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        arguments_truncated: Option<bool>,
    }

    struct VecSink(Arc<Mutex<Vec<u8>>>);

    impl DecisionSink for VecSink {
        fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
            self.0.lock().unwrap().extend_from_slice(line);
            Ok(())
        }
    }

    #[test]
    fn lines_are_the_serde_serialization() {
        let out = Arc::new(Mutex::new(Vec::new()));
        let sid = "0123456789abcdef0123456789abcdef";
        let source = "assay://te\"st/\u{e9}\\x";
        let policy = "ab\ncd";
        // A reason with a tab and U+0001 (built here: the sources hold no U+0001).
        let reason = format!("bad \"name\"\t{}", char::from(1));
        let recorded = format!(
            "{{\"path\":\"/tmp/\\u00e9\u{e9}\",\"token\":\"[redacted]\",\"x\":\"{}\\n\"}}",
            char::from(1)
        );
        let mut log = writer(Box::new(VecSink(out.clone())), sid, source, policy, false);
        let base = [
            entry(),
            DecisionEntry {
                tool: None,
                tool_call_id: None,
                decision: Decision::Error,
                reason_code: ReasonCode::P_MALFORMED,
                reason: &reason,
                matched_rule: None,
                arguments_sha256: Some(&DIGEST),
                tool_definition_sha256: None,
                arguments: None,
            },
            DecisionEntry {
                tool: Some("t\u{7f}\u{1F600}"),
                tool_call_id: Some("\"quoted\\id\""),
                decision: Decision::Deny,
                reason_code: ReasonCode::P_BATCH_REFUSED,
                reason: "",
                matched_rule: Some("deny:x*"),
                arguments_sha256: None,
                tool_definition_sha256: Some(&DIGEST),
                arguments: None,
            },
            // Recorded arguments (SPEC §4.1a): canonical JSON text with quotes, a control
            // character and non-ASCII, whole or cut mid-string; and the empty text.
            DecisionEntry {
                arguments: Some((&recorded, false)),
                ..entry()
            },
            DecisionEntry {
                arguments: Some((&recorded[..recorded.len() - 3], true)),
                arguments_sha256: Some(&DIGEST),
                ..entry()
            },
            DecisionEntry {
                arguments: Some(("", true)),
                tool: None,
                ..entry()
            },
        ];
        // Each entry after each other one (and itself), so every change of tool or verdict
        // between consecutive lines is formatted once; plus the cases that differ only in a
        // null against an empty string.
        let mut entries: Vec<DecisionEntry<'_>> = Vec::new();
        for a in &base {
            for b in &base {
                entries.push(a.clone());
                entries.push(b.clone());
            }
        }
        for (tool, rule) in [
            (None, None),
            (Some(""), None),
            (Some(""), Some("")),
            (None, Some("")),
        ] {
            let mut e = base[0].clone();
            e.tool = tool;
            e.matched_rule = rule;
            entries.push(e);
        }
        let mut e = base[0].clone();
        e.reason = "allowed ";
        entries.push(e.clone());
        e.reason_code = ReasonCode::P_ARG_SCHEMA;
        entries.push(e.clone());
        e.decision = Decision::Deny;
        entries.push(e);
        for (i, e) in entries.iter().enumerate() {
            log.emit([0u64, 9, 10, u64::MAX][i % 4], e);
        }
        let bytes = out.lock().unwrap().clone();
        let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
        assert_eq!(lines.len(), entries.len());
        for (i, (line, e)) in lines.iter().zip(&entries).enumerate() {
            let seq = [0u64, 9, 10, u64::MAX][i % 4];
            let parsed: serde_json::Value = serde_json::from_slice(line).unwrap();
            let time = parsed["time"].as_str().unwrap().to_string();
            let id = format!("evt_decision_{sid}_{seq}");
            let want = crate::evidence::event::Envelope::new(
                &id,
                TYPE_DECISION,
                source,
                &time,
                DecisionData {
                    session_id: sid,
                    seq,
                    tool: e.tool,
                    tool_call_id: e.tool_call_id,
                    decision: e.decision,
                    reason_code: e.reason_code,
                    reason: e.reason,
                    matched_rule: e.matched_rule,
                    enforced: false,
                    policy_sha256: policy,
                    arguments_sha256: e.arguments_sha256.map(HexDigest::as_str),
                    tool_definition_sha256: e.tool_definition_sha256.map(HexDigest::as_str),
                    arguments: e.arguments.map(|(text, _)| text),
                    arguments_truncated: e.arguments.map(|(_, cut)| cut),
                },
            )
            .to_line()
            .unwrap();
            assert_eq!(
                String::from_utf8_lossy(line),
                String::from_utf8_lossy(&want)
            );
        }
        assert_eq!(
            log.accounting().prefix_sha256,
            super::super::event::sha256_hex(&bytes)
        );
    }

    /// The serde shape of a listing line (SPEC §4.1a) the hand-written one must reproduce.
    #[derive(serde::Serialize)]
    struct ListingData<'a> {
        session_id: &'a str,
        seq: u64,
        method: &'a str,
        request_id: &'a str,
        shown: Vec<Shown<'a>>,
        removed: Vec<Removed<'a>>,
        replaced_by_error: bool,
        policy_sha256: &'a str,
    }

    #[derive(serde::Serialize)]
    struct Shown<'a> {
        name: &'a str,
        sha256: &'a str,
    }

    #[derive(serde::Serialize)]
    struct Removed<'a> {
        name: &'a str,
        sha256: Option<&'a str>,
        reason_code: ReasonCode,
    }

    #[test]
    fn listing_lines_are_the_serde_serialization() {
        let sid = "0123456789abcdef0123456789abcdef";
        let source = "assay://te\"st/\u{e9}\\x";
        let policy = "ab\ncd";
        let mut format = DecisionFormat::new(sid, source, policy, true);
        let other = HexDigest::of(b"other");
        // Server-written names: quotes, backslashes, control characters, bidi overrides, emoji.
        let odd = format!("a\"b\\c\n{}\u{202e}\u{1F600}", char::from(1));
        let shown_sets: [Vec<(&str, &HexDigest)>; 3] = [
            vec![],
            vec![("read_file", &DIGEST)],
            vec![
                ("read_file", &DIGEST),
                (odd.as_str(), &other),
                ("", &DIGEST),
            ],
        ];
        let removed_sets: [Vec<(&str, Option<&HexDigest>, ReasonCode)>; 3] = [
            vec![],
            vec![("exec", Some(&other), ReasonCode::P_TOOL_DRIFT)],
            vec![
                ("(instructions)", None, ReasonCode::P_INSTRUCTIONS_DRIFT),
                (odd.as_str(), None, ReasonCode::P_TOOL_UNPINNED),
                ("x", Some(&DIGEST), ReasonCode::P_TOOL_DENIED),
            ],
        ];
        let mut n = 0u64;
        for shown in &shown_sets {
            for removed in &removed_sets {
                for (replaced, request_id) in [(false, "1"), (true, "\"x\"\u{7f}")] {
                    let seq = [0u64, 7, u64::MAX][(n % 3) as usize];
                    let method = ["tools/list", "prompts/list", "resources/templates/list"]
                        [(n % 3) as usize];
                    n += 1;
                    let mut line = Vec::new();
                    format.push_listing_line(
                        &mut line,
                        seq,
                        &ListingEntry {
                            method,
                            request_id,
                            shown,
                            removed,
                            replaced_by_error: replaced,
                        },
                    );
                    let parsed: serde_json::Value = serde_json::from_slice(&line).unwrap();
                    let time = parsed["time"].as_str().unwrap().to_string();
                    let id = format!("evt_listing_{sid}_{seq}");
                    let want = crate::evidence::event::Envelope::new(
                        &id,
                        TYPE_LISTING,
                        source,
                        &time,
                        ListingData {
                            session_id: sid,
                            seq,
                            method,
                            request_id,
                            shown: shown
                                .iter()
                                .map(|(name, d)| Shown {
                                    name,
                                    sha256: d.as_str(),
                                })
                                .collect(),
                            removed: removed
                                .iter()
                                .map(|(name, d, code)| Removed {
                                    name,
                                    sha256: d.map(HexDigest::as_str),
                                    reason_code: *code,
                                })
                                .collect(),
                            replaced_by_error: replaced,
                            policy_sha256: policy,
                        },
                    )
                    .to_line()
                    .unwrap();
                    assert_eq!(
                        String::from_utf8_lossy(&line),
                        String::from_utf8_lossy(&want)
                    );
                }
            }
        }
        // Decision and listing lines from one format interleave without disturbing each other.
        let mut a = Vec::new();
        format.push_line(&mut a, 3, &entry());
        let mut b = Vec::new();
        format.push_listing_line(
            &mut b,
            4,
            &ListingEntry {
                method: "tools/list",
                request_id: "2",
                shown: &[],
                removed: &[],
                replaced_by_error: false,
            },
        );
        let mut c = Vec::new();
        format.push_line(&mut c, 5, &entry());
        let strip_time = |l: &[u8]| {
            let mut v: serde_json::Value = serde_json::from_slice(l).unwrap();
            v["time"] = serde_json::Value::Null;
            v["id"] = serde_json::Value::Null;
            v["data"]["seq"] = serde_json::Value::Null;
            v
        };
        assert_eq!(strip_time(&a), strip_time(&c));
        assert_eq!(strip_time(&b)["type"], TYPE_LISTING);
    }

    /// The serde shape of an MCP decision line (SPEC §4.1a) the hand-written one must reproduce.
    #[derive(serde::Serialize)]
    struct McpData<'a> {
        session_id: &'a str,
        seq: u64,
        method: &'a str,
        direction: &'a str,
        target: Option<&'a str>,
        request_id: Option<&'a str>,
        decision: Decision,
        reason_code: ReasonCode,
        reason: &'a str,
        matched_rule: Option<&'a str>,
        enforced: bool,
        policy_sha256: &'a str,
        params_sha256: Option<&'a str>,
    }

    #[test]
    fn mcp_decision_lines_are_the_serde_serialization() {
        let sid = "0123456789abcdef0123456789abcdef";
        let source = "assay://te\"st/\u{e9}\\x";
        let policy = "ab\ncd";
        // Peer-written text: a URI with a control character, quotes, a bidi override, emoji.
        let odd = format!("file:///a\"b\\c\n{}\u{202e}\u{1F600}", char::from(1));
        let entries = [
            McpDecisionEntry {
                method: "resources/read",
                direction: Direction::ClientToServer,
                target: Some("file:///workspace/.env"),
                request_id: Some("7"),
                decision: Decision::Deny,
                reason_code: ReasonCode::P_RESOURCE_DENIED,
                reason: "resource matches deny rule",
                matched_rule: Some("resources.deny:file:///workspace/.env"),
                params_sha256: Some(&DIGEST),
            },
            McpDecisionEntry {
                method: "sampling/createMessage",
                direction: Direction::ServerToClient,
                target: Some("sampling"),
                request_id: Some("\"s-1\""),
                decision: Decision::Allow,
                reason_code: ReasonCode::P_POLICY_ALLOW,
                reason: "",
                matched_rule: None,
                params_sha256: None,
            },
            McpDecisionEntry {
                method: odd.as_str(),
                direction: Direction::ClientToServer,
                target: Some(odd.as_str()),
                request_id: None,
                decision: Decision::Error,
                reason_code: ReasonCode::P_MALFORMED,
                reason: "bad \"uri\"\t",
                matched_rule: Some(""),
                params_sha256: Some(&DIGEST),
            },
            McpDecisionEntry {
                method: "prompts/get",
                direction: Direction::ClientToServer,
                target: None,
                request_id: Some(""),
                decision: Decision::Deny,
                reason_code: ReasonCode::P_PROMPT_NOT_ALLOWED,
                reason: "no allow pattern matched",
                matched_rule: None,
                params_sha256: None,
            },
        ];
        for enforced in [true, false] {
            let mut format = DecisionFormat::new(sid, source, policy, enforced);
            for (i, e) in entries.iter().enumerate() {
                let seq = [0u64, 9, 10, u64::MAX][i % 4];
                let mut line = Vec::new();
                format.push_mcp_decision_line(&mut line, seq, e);
                let parsed: serde_json::Value = serde_json::from_slice(&line).unwrap();
                let time = parsed["time"].as_str().unwrap().to_string();
                let id = format!("evt_decision_{sid}_{seq}");
                let want = crate::evidence::event::Envelope::new(
                    &id,
                    TYPE_MCP_DECISION,
                    source,
                    &time,
                    McpData {
                        session_id: sid,
                        seq,
                        method: e.method,
                        direction: e.direction.as_str(),
                        target: e.target,
                        request_id: e.request_id,
                        decision: e.decision,
                        reason_code: e.reason_code,
                        reason: e.reason,
                        matched_rule: e.matched_rule,
                        enforced,
                        policy_sha256: policy,
                        params_sha256: e.params_sha256.map(HexDigest::as_str),
                    },
                )
                .to_line()
                .unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&line),
                    String::from_utf8_lossy(&want)
                );
            }
            // Interleaved with the other line kinds, the cached segments of tool lines are not
            // disturbed: the tool line after an MCP line is the tool line before it.
            let mut a = Vec::new();
            format.push_line(&mut a, 3, &entry());
            let mut b = Vec::new();
            format.push_mcp_decision_line(&mut b, 4, &entries[0]);
            let mut c = Vec::new();
            format.push_line(&mut c, 5, &entry());
            let strip = |l: &[u8]| {
                let mut v: serde_json::Value = serde_json::from_slice(l).unwrap();
                v["time"] = serde_json::Value::Null;
                v["id"] = serde_json::Value::Null;
                v["data"]["seq"] = serde_json::Value::Null;
                v
            };
            assert_eq!(strip(&a), strip(&c));
            assert_eq!(strip(&b)["type"], TYPE_MCP_DECISION);
        }
    }

    /// The prefix digest covers exactly the lines written so far, whenever (and whether) the
    /// pending lines were hashed: at idle, at a full batch, or only at the accounting.
    #[test]
    fn digest_is_the_same_whenever_pending_lines_are_hashed() {
        let out = Arc::new(Mutex::new(Vec::new()));
        let mut log = writer(
            Box::new(VecSink(out.clone())),
            "0123456789abcdef0123456789abcdef",
            "assay://test",
            "00",
            true,
        );
        // Enough lines for several full batches; settle at irregular points.
        for seq in 0..1000u64 {
            assert_eq!(log.emit(seq, &entry()).0, Emitted::Written);
            if seq % 7 == 3 || seq % 53 == 0 {
                log.settle();
            }
            if seq % 41 == 0 {
                let bytes = out.lock().unwrap().clone();
                assert_eq!(
                    log.accounting().prefix_sha256,
                    super::super::event::sha256_hex(&bytes),
                    "after line {seq}"
                );
            }
        }
        let bytes = out.lock().unwrap().clone();
        assert!(bytes.len() > 2 * CHUNK);
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1000);
        let acc = log.accounting();
        assert_eq!(acc.written, 1000);
        assert_eq!(acc.prefix_sha256, super::super::event::sha256_hex(&bytes));
        log.settle();
        assert_eq!(log.accounting(), acc);
    }

    #[test]
    fn poisoned_writer_counts_and_digest_cover_only_complete_lines() {
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = FailingSink {
            out: out.clone(),
            calls: 0,
            fail_on: 3,
        };
        let mut log = writer(
            Box::new(sink),
            "0123456789abcdef0123456789abcdef",
            "assay://test",
            "00",
            true,
        );
        let results: Vec<Emitted> = (0..5).map(|seq| log.emit(seq, &entry()).0).collect();
        assert_eq!(
            results,
            [
                Emitted::Written,
                Emitted::Written,
                Emitted::Failed,
                Emitted::Refused,
                Emitted::Refused
            ]
        );
        let acc = log.accounting();
        assert_eq!(acc.written, 2);
        assert_eq!(acc.dropped, 3);
        assert!(acc.poisoned);
        let bytes = out.lock().unwrap().clone();
        // The file holds two complete lines plus a partial tail; the digest covers the two lines.
        let complete_end = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1)
            .nth(1)
            .unwrap();
        assert!(bytes.len() > complete_end, "partial tail present");
        assert_eq!(
            acc.prefix_sha256,
            super::super::event::sha256_hex(&bytes[..complete_end])
        );
        // seq is contiguous over written and failed emissions.
        let first: serde_json::Value =
            serde_json::from_slice(bytes.split(|b| *b == b'\n').nth(1).unwrap()).unwrap();
        assert_eq!(first["data"]["seq"], 1);
        assert_eq!(
            first["id"],
            "evt_decision_0123456789abcdef0123456789abcdef_1"
        );
        assert!(first["data"].get("arguments").is_none());
    }

    /// A sink that fails its `fail_at`-th write (0-based) after writing `partial` bytes of it,
    /// the way `write_all` leaves a short write behind when the disk fills.
    struct PartialSink {
        out: Arc<Mutex<Vec<u8>>>,
        calls: usize,
        fail_at: usize,
        partial: prop::sample::Index,
    }

    impl DecisionSink for PartialSink {
        fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
            let call = self.calls;
            self.calls += 1;
            let mut out = self.out.lock().unwrap();
            if call == self.fail_at {
                // A failed `write_all` wrote strictly less than the whole line.
                out.extend_from_slice(&line[..self.partial.index(line.len())]);
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            out.extend_from_slice(line);
            Ok(())
        }
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

        /// SPEC §4.1: whatever write fails and however much of it reached the disk, the
        /// accounting describes exactly the complete lines on disk: `written` is their count,
        /// `decision_prefix_sha256` their SHA-256, and every other emission is `dropped`.
        #[test]
        fn prefix_digest_matches_the_complete_lines_on_disk(
            emissions in 0usize..12,
            fail_at in 0usize..14,
            partial in any::<prop::sample::Index>(),
            tools in prop::collection::vec(prop::option::of("[a-z_\"\\\\é\u{1F600}]{0,12}"), 12),
        ) {
            let out = Arc::new(Mutex::new(Vec::new()));
            let sink = PartialSink { out: out.clone(), calls: 0, fail_at, partial };
            let mut log = writer(
                Box::new(sink),
                "0123456789abcdef0123456789abcdef",
                "assay://test",
                "00",
                true,
            );
            for (seq, tool) in tools.iter().take(emissions).enumerate() {
                let mut e = entry();
                e.tool = tool.as_deref();
                log.emit(seq as u64, &e);
            }
            let acc = log.accounting();
            let bytes = out.lock().unwrap().clone();
            let complete_end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let complete_lines = bytes[..complete_end].iter().filter(|b| **b == b'\n').count();
            prop_assert_eq!(acc.written as usize, complete_lines);
            prop_assert_eq!(acc.written + acc.dropped, emissions as u64);
            prop_assert_eq!(acc.poisoned, fail_at < emissions);
            prop_assert_eq!(
                &acc.prefix_sha256,
                &super::super::event::sha256_hex(&bytes[..complete_end])
            );
            // Each complete line is one decision event, in seq order.
            for (i, line) in bytes[..complete_end].split(|b| *b == b'\n').take(complete_lines).enumerate() {
                let v: serde_json::Value = serde_json::from_slice(line).unwrap();
                prop_assert_eq!(&v["data"]["seq"], &serde_json::json!(i));
            }
        }

        /// SPEC §4.1a: whatever text the peers and the policy put in an MCP decision or in
        /// recorded arguments (control characters, quotes, backslashes, any Unicode), the line
        /// is the `serde_json` serialization of its fields.
        #[test]
        fn peer_text_lines_are_the_serde_serialization(
            method in any::<String>(),
            target in prop::option::of(any::<String>()),
            request_id in prop::option::of(any::<String>()),
            reason in any::<String>(),
            rule in prop::option::of(any::<String>()),
            arguments in any::<String>(),
            cut in any::<bool>(),
            server_to_client in any::<bool>(),
            seq in any::<u64>(),
        ) {
            let sid = "0123456789abcdef0123456789abcdef";
            let mut format = DecisionFormat::new(sid, "assay://t", "00", true);
            let e = McpDecisionEntry {
                method: &method,
                direction: if server_to_client { Direction::ServerToClient } else { Direction::ClientToServer },
                target: target.as_deref(),
                request_id: request_id.as_deref(),
                decision: Decision::Deny,
                reason_code: ReasonCode::P_PROMPT_DENIED,
                reason: &reason,
                matched_rule: rule.as_deref(),
                params_sha256: None,
            };
            let mut line = Vec::new();
            format.push_mcp_decision_line(&mut line, seq, &e);
            let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
            let want = crate::evidence::event::Envelope::new(
                &format!("evt_decision_{sid}_{seq}"),
                TYPE_MCP_DECISION,
                "assay://t",
                v["time"].as_str().unwrap(),
                McpData {
                    session_id: sid,
                    seq,
                    method: &method,
                    direction: e.direction.as_str(),
                    target: e.target,
                    request_id: e.request_id,
                    decision: e.decision,
                    reason_code: e.reason_code,
                    reason: &reason,
                    matched_rule: e.matched_rule,
                    enforced: true,
                    policy_sha256: "00",
                    params_sha256: None,
                },
            )
            .to_line()
            .unwrap();
            prop_assert_eq!(&line, &want);

            let t = DecisionEntry { arguments: Some((&arguments, cut)), ..entry() };
            let mut line = Vec::new();
            format.push_line(&mut line, seq, &t);
            let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
            prop_assert_eq!(v["data"]["arguments"].as_str(), Some(arguments.as_str()));
            prop_assert_eq!(&v["data"]["arguments_truncated"], &serde_json::json!(cut));
            let mut plain = Vec::new();
            format.push_line(&mut plain, seq, &entry());
            let tail = serde_json::to_vec(&serde_json::json!({"arguments": arguments})).unwrap();
            // The recorded line is the plain line with the two members inserted before the
            // closing braces, the text escaped as serde escapes it.
            let mut expected = plain[..plain.len() - 3].to_vec();
            expected.push(b',');
            expected.extend_from_slice(&tail[1..tail.len() - 1]);
            expected.extend_from_slice(format!(",\"arguments_truncated\":{cut}}}}}\n").as_bytes());
            // The times of the two lines may differ: compare after the time.
            let after_time = |l: &[u8]| -> Vec<u8> {
                let mark = b"\",\"datacontenttype\"";
                let at = l.windows(mark.len()).position(|w| w == mark).unwrap();
                l[at..].to_vec()
            };
            prop_assert_eq!(after_time(&line), after_time(&expected));
        }
    }
}
