//! The decision log writer and its accounting (SPEC §4.1).
//!
//! One `assay.tool.decision` event per evaluated `tools/call`, one NDJSON line each, written whole
//! (consecutive lines may share one `write(2)`: [`super::whole_lines`]). The writer counts what it
//! observed: lines written whole (`written`), and, from the first failure on, the line it cut and
//! every emission it refused (`dropped`). The prefix
//! digest covers exactly the successfully written lines, so a reader can match it against the
//! complete-line prefix of the file. `seq` (assigned by the caller) advances on every emission, written or not.
//!
//! The log also holds the `assay.tool.listing` events of SPEC §4.1a (what a client was shown of a
//! `tools/list` result): [`DecisionFormat::push_listing_line`] formats them with the same
//! envelope and the same `seq`, and they go through the same writer and accounting. So do the
//! `assay.mcp.decision` events (a decision on a governed method other than `tools/call`,
//! SPEC §4.1a, §5.2), formatted by [`DecisionFormat::push_mcp_decision_line`].

use std::io::{self, Write};

use super::event::{
    Clock, HexDigest, TYPE_DECISION, TYPE_LISTING, TYPE_MCP_DECISION, push_json_str,
};
use super::prefix_digest::PrefixDigest;
use super::whole_lines;
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

/// What else sees each line once it is written: the live OTLP exporter (`otlp::live`). It must
/// return at once (it queues, or drops and counts): it runs between a decision line's write and
/// the forwarding of its call.
pub(crate) trait LineTap: Send {
    /// A line that was written whole, newline included.
    fn offer(&self, line: &[u8]);
}

/// Where decision lines go. A file in production; tests inject sinks that fail on demand.
pub(crate) trait DecisionSink: Send {
    /// Writes one whole line (one `write_all`).
    fn write_line(&mut self, line: &[u8]) -> io::Result<()>;

    /// Writes consecutive whole lines in order; on failure, how many were written whole before
    /// it, and the error. A file writes them together ([`whole_lines::write_lines`]); by
    /// default, one [`DecisionSink::write_line`] each.
    fn write_lines(&mut self, lines: &[&[u8]]) -> Result<(), (usize, io::Error)> {
        for (done, line) in lines.iter().enumerate() {
            self.write_line(line).map_err(|e| (done, e))?;
        }
        Ok(())
    }
}

/// A file (in production the log file a fork of the host does not keep, SPEC §3.1b: a
/// `Tracked<File>`), or anything written as one.
impl<W: Write + Send> DecisionSink for W {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.write_all(line)
    }

    fn write_lines(&mut self, lines: &[&[u8]]) -> Result<(), (usize, io::Error)> {
        whole_lines::write_lines(self, lines)
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
    /// `arguments`' text is already escaped as the JSON string holds it (without its quotes:
    /// `crate::policy::Policy::recorded_canonical_arguments_escaped`), so it is copied as it is.
    pub arguments_escaped: bool,
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

/// The decision log writer and its accounting: whole lines, counted and hashed.
pub(crate) struct DecisionLog {
    sink: Box<dyn DecisionSink>,
    written: u64,
    dropped: u64,
    poisoned: bool,
    /// The SHA-256 of the completed writes, computed off the path between a decision line's
    /// write and the forwarding of its call (SPEC §4.1 orders only those two): when the writer
    /// idles, or on a hashing thread while calls are pipelined.
    prefix: PrefixDigest,
    /// See every line written (the live exporter; the signing session's log follower).
    taps: Vec<Box<dyn LineTap>>,
}

/// Appends the decimal text of `n` (no `fmt` machinery, no allocation).
pub(crate) fn push_decimal(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    out.extend_from_slice(decimal(&mut digits, n));
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
            if e.arguments_escaped {
                out.push(b'"');
                out.extend_from_slice(text.as_bytes());
                out.push(b'"');
            } else {
                push_json_str(out, text);
            }
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
            taps: Vec::new(),
        }
    }

    /// Every line written from now on is also offered to `tap` (after the taps added before).
    pub(crate) fn add_tap(&mut self, tap: Box<dyn LineTap>) {
        self.taps.push(tap);
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
        let poisoned = self.poisoned;
        match self.write_lines(&[line]) {
            Some(e) => (Emitted::Failed, Some(e)),
            None if poisoned => (Emitted::Refused, None),
            None => (Emitted::Written, None),
        }
    }

    /// Writes consecutive lines (each one emission, in order) together, with the accounting
    /// of one [`DecisionLog::write`] per line: the lines written whole are counted and enter
    /// the digest; after a failure, the line it cut failed and the rest are refused (the writer
    /// is poisoned). Returns the failure's error.
    pub(crate) fn write_lines(&mut self, lines: &[&[u8]]) -> Option<io::Error> {
        if self.poisoned {
            self.dropped += lines.len() as u64;
            return None;
        }
        // SPEC §4.1: each line whole in one write (several lines may share one); only a
        // completed line enters the digest.
        let (complete, failure) = match self.sink.write_lines(lines) {
            Ok(()) => (lines.len(), None),
            Err((done, e)) => (done.min(lines.len()), Some(e)),
        };
        let done = lines.get(..complete).unwrap_or(lines);
        self.written += done.len() as u64;
        self.prefix.push_together(done);
        for line in done {
            for tap in &self.taps {
                tap.offer(line);
            }
        }
        if failure.is_some() {
            // A partial tail never enters the digest.
            self.poisoned = true;
            self.dropped += (lines.len() - complete) as u64;
        }
        failure
    }

    /// Whether the lines of the next writes, written together, are hashed by their writer at
    /// once: see [`PrefixDigest::hash_together_here`].
    pub(crate) fn hash_together_here(&mut self, here: bool) {
        self.prefix.hash_together_here(here);
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
mod batch_tests;
#[cfg(test)]
mod tests;
