//! The decision-log reader (SPEC §7): the log is read in 64 KiB chunks through the bounded
//! opener; the complete lines of each chunk are checked, each line by `fast_line_parser` when it
//! has the wrapper's shape, else by the strict pre-scan and a `serde` parse; then the chunk is
//! hashed once (`log_digest`: on a thread of its own for a large log, while the next chunk's
//! lines are checked).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use super::bounds::{MAX_DECISIONS, MAX_DEPTH, MAX_LOG_BYTES};
use super::decision_line::{
    Decision, Expect, LineKind, LineReasons, LineView, ListingData, Parsed, event_id_matches,
};
use super::fast_line_parser;
use super::fields::{Reasons, is_hex, is_session_id, is_utc_time, scan_reason};
use super::judgement::{ClosureReasonCode, FileDigest};
use super::log_digest::{Hashing, HashingLost};
use super::result_line::{Decisions, check_result};
use crate::capture_files::DECISIONS;
use crate::event_source::is_event_source;
use crate::input_file::{self as bounded, BoundedError, FinalLink};
use crate::outcome::{DecisionLogState, StopData};
use crate::reason_code::{Carrier, ReasonCode};
use crate::strict_json;

/// Checks line `i`; `decisions`: the decision lines read before it, which a result line may
/// name (SPEC §5.3), and which this line joins when it is one.
pub(super) fn check_line(
    i: usize,
    line: &[u8],
    exp: &Expect<'_>,
    lr: &mut LineReasons,
    decisions: &mut Decisions,
) {
    let line = match std::str::from_utf8(line) {
        Ok(t) => t,
        Err(e) => {
            lr.push(
                ClosureReasonCode::InvalidJson,
                i,
                format_args!("invalid JSON at byte {}", e.valid_up_to()),
            );
            return;
        }
    };
    // The common shape in one pass; anything else through the strict scan and serde, which
    // also name the problem.
    if let Some((v, kind)) = fast_line_parser::parse(line) {
        check_kind_fields(i, &v, kind, exp, lr);
        decisions.note(v.seq);
        return;
    }
    if let Err(e) = strict_json::scan_str(line, MAX_DEPTH) {
        lr.push(scan_reason(e.kind), i, e);
        return;
    }
    let parsed = match Parsed::from_line(line) {
        Ok(parsed) => parsed,
        Err(e) => {
            lr.push(ClosureReasonCode::SchemaMismatch, i, e);
            return;
        }
    };
    let (view, kind) = parsed.view();
    check_kind_fields(i, &view, kind, exp, lr);
    match &parsed {
        Parsed::Listing(ev) => check_listing(i, &ev.data.0, lr),
        Parsed::Result(ev) => check_result(i, &ev.data.0, decisions, lr),
        Parsed::Tool(_) | Parsed::Mcp(_) => decisions.note(view.seq),
    }
}

/// The checks of a listing's own fields (SPEC §4.1a): digests are 64 lowercase hex digits (a
/// removed entry's may be null), and a removal names a reason other than `P_POLICY_ALLOW`.
fn check_listing(i: usize, d: &ListingData<'_>, lr: &mut LineReasons) {
    if let Some(k) = d.shown.iter().position(|t| !is_hex(&t.0.sha256, 64)) {
        lr.push(
            ClosureReasonCode::SchemaMismatch,
            i,
            format_args!("data.shown[{k}].sha256 is not 64 lowercase hex characters"),
        );
    }
    if let Some(k) = d
        .removed
        .iter()
        .position(|t| t.0.sha256.as_deref().is_some_and(|s| !is_hex(s, 64)))
    {
        lr.push(
            ClosureReasonCode::SchemaMismatch,
            i,
            format_args!("data.removed[{k}].sha256 is not 64 lowercase hex characters or null"),
        );
    }
    if let Some(k) = d
        .removed
        .iter()
        .position(|t| t.0.reason_code == ReasonCode::P_POLICY_ALLOW)
    {
        lr.push(
            ClosureReasonCode::SchemaMismatch,
            i,
            format_args!("data.removed[{k}].reason_code is P_POLICY_ALLOW, which removes nothing"),
        );
    }
    // Which list it is, and what a removal from that list can be (the one table).
    match crate::methods::listing_carrier(d.method.as_deref()) {
        None => lr.push(
            ClosureReasonCode::SchemaMismatch,
            i,
            "data.method is not a method a listing answers",
        ),
        Some(carrier) => {
            if let Some((k, code)) = d
                .removed
                .iter()
                .map(|t| t.0.reason_code)
                .enumerate()
                .find(|(_, c)| *c != ReasonCode::P_POLICY_ALLOW && !c.carried_by(carrier))
            {
                lr.push(
                    ClosureReasonCode::SchemaMismatch,
                    i,
                    format_args!(
                        "data.removed[{k}].reason_code {code} is not one a listing of {} carries",
                        d.method.as_deref().unwrap_or("an unnamed list")
                    ),
                );
            }
        }
    }
    let _ = (&d.request_id, d.replaced_by_error);
    for t in &d.shown {
        let _ = &t.0.name;
    }
    for t in &d.removed {
        let _ = &t.0.name;
    }
}

/// The checks every line of the log shares (the envelope, the session, `seq`, `id`, the policy
/// digest), and those of its kind that [`LineView`] carries (line `i`, 0-based). For a tool
/// decision the reasons and their order are those of the reader before the new types existed.
fn check_kind_fields(
    i: usize,
    d: &LineView<'_>,
    kind: LineKind,
    exp: &Expect<'_>,
    lr: &mut LineReasons,
) {
    let mut schema = |what: &str| lr.push(ClosureReasonCode::SchemaMismatch, i, what);
    if d.specversion != "1.0" {
        schema("specversion is not \"1.0\"");
    }
    if d.ty != kind.type_name() {
        match kind {
            LineKind::Tool => schema("type is not \"assay.tool.decision\""),
            LineKind::Listing => schema("type is not \"assay.tool.listing\""),
            LineKind::Mcp => schema("type is not \"assay.mcp.decision\""),
            LineKind::Result => schema("type is not \"assay.mcp.result\""),
        }
    }
    if d.datacontenttype != "application/json" {
        schema("datacontenttype is not \"application/json\"");
    }
    if !is_utc_time(d.time) {
        schema("time is not an RFC 3339 UTC time ending in Z");
    }
    if !is_session_id(d.session_id) {
        schema("data.session_id is not 32 lowercase hex characters");
    }
    if !is_hex(d.policy_sha256, 64) {
        schema("data.policy_sha256 is not 64 lowercase hex characters");
    }
    if d.arguments_sha256.is_some_and(|s| !is_hex(s, 64)) {
        // For an `assay.mcp.decision` the view carries `params_sha256` here.
        if kind == LineKind::Mcp {
            schema("data.params_sha256 is not 64 lowercase hex characters or null");
        } else {
            schema("data.arguments_sha256 is not 64 lowercase hex characters or null");
        }
    }
    if d.tool_definition_sha256.is_some_and(|s| !is_hex(s, 64)) {
        schema("data.tool_definition_sha256 is not 64 lowercase hex characters or null");
    }
    // SPEC §4.1a `record_arguments`: the recorded text and whether it was cut go together.
    if d.arguments != d.arguments_truncated.is_some() {
        schema("data.arguments and data.arguments_truncated are not both present or both absent");
    }
    if kind != LineKind::Listing
        && (d.decision == Decision::Allow) != (d.reason_code == ReasonCode::P_POLICY_ALLOW)
    {
        schema("decision allow goes with reason_code P_POLICY_ALLOW and only with it");
    }
    // The one table of which codes each event type carries.
    let carrier = match kind {
        LineKind::Tool => Some(Carrier::ToolDecision),
        LineKind::Mcp => Some(Carrier::McpDecision),
        LineKind::Result => Some(Carrier::Result),
        LineKind::Listing => None,
    };
    if carrier.is_some_and(|c| !d.reason_code.carried_by(c)) {
        lr.push(
            ClosureReasonCode::SchemaMismatch,
            i,
            format_args!(
                "reason_code {} is not one an {} event carries",
                d.reason_code,
                kind.type_name()
            ),
        );
    }
    check_against_session(i, d, kind, exp, lr);
}

/// The checks of a line against its session and its position: `seq`, the session id, the event
/// id, the source, the policy digest and `enforced` against the context (the second half of
/// [`check_kind_fields`], in its order).
fn check_against_session(
    i: usize,
    d: &LineView<'_>,
    kind: LineKind,
    exp: &Expect<'_>,
    lr: &mut LineReasons,
) {
    if d.seq != i as u64 {
        lr.push(
            ClosureReasonCode::CountMismatch,
            i,
            format_args!("seq {} where {i} was expected", d.seq),
        );
    }
    let sid = exp.session_id.unwrap_or(d.session_id);
    if d.session_id != sid {
        lr.push(
            ClosureReasonCode::IdMismatch,
            i,
            "data.session_id is not this session's",
        );
    }
    if !event_id_matches(d.id, kind.id_prefix(), sid, d.seq) {
        lr.push(
            ClosureReasonCode::IdMismatch,
            i,
            format_args!("id is not {}<session_id>_<seq>", kind.id_prefix()),
        );
    }
    match exp.source {
        Some(src) if d.source != src => lr.push(
            ClosureReasonCode::ContextMismatch,
            i,
            "source differs from the session's",
        ),
        None if !is_event_source(d.source) => lr.push(
            ClosureReasonCode::SchemaMismatch,
            i,
            "source is not an absolute URI",
        ),
        _ => {}
    }
    if exp.policy_sha256.is_some_and(|p| d.policy_sha256 != p) {
        lr.push(
            ClosureReasonCode::ContextMismatch,
            i,
            "data.policy_sha256 differs from the context's",
        );
    }
    if kind != LineKind::Listing && exp.dry_run.is_some_and(|dry| d.enforced == dry) {
        lr.push(
            ClosureReasonCode::ContextMismatch,
            i,
            format_args!(
                "data.enforced {} contradicts the context's dry_run",
                d.enforced
            ),
        );
    }
}

/// The log is read in chunks of this size: no file-sized buffer (whose fresh pages would cost
/// more to fault in than the bytes cost to copy), and each chunk is still in cache when its lines
/// are checked (and, for a small log, when it is hashed on the same thread).
const LOG_CHUNK: usize = 64 * 1024;

/// Counts complete lines and checks the first [`MAX_DECISIONS`] of them (the state of the line
/// checks, kept between reads when the log is followed as it grows: `follow`).
pub(super) struct Lines {
    pub(super) count: usize,
    pub(super) lr: LineReasons,
    pub(super) decisions: Decisions,
}

impl Lines {
    pub(super) fn new() -> Self {
        Self {
            count: 0,
            lr: LineReasons {
                list: Vec::new(),
                suppressed: 0,
                first_suppressed: None,
            },
            decisions: Decisions::default(),
        }
    }

    pub(super) fn line(&mut self, exp: &Expect<'_>, bytes: &[u8]) {
        if self.count < MAX_DECISIONS {
            check_line(self.count, bytes, exp, &mut self.lr, &mut self.decisions);
        }
        self.count += 1;
    }
}

/// Where a pass over the log is: the lines checked, the partial line after the last newline
/// read, and the bytes read so far.
pub(super) struct LogPass {
    pub(super) lines: Lines,
    /// A line split across chunks is assembled here; at the end it holds the partial tail.
    pub(super) carry: Vec<u8>,
    /// Bytes of the log read so far (from its start).
    pub(super) total: u64,
    /// The chunk buffer ([`LOG_CHUNK`] bytes).
    pub(super) buf: Vec<u8>,
}

impl LogPass {
    pub(super) fn new() -> Self {
        Self {
            lines: Lines::new(),
            carry: Vec::new(),
            total: 0,
            buf: vec![0u8; LOG_CHUNK],
        }
    }
}

/// Reads the log from where `pass` is to its end (at most the bound plus one byte from the
/// log's start) in [`LOG_CHUNK`]s: the complete lines of each chunk go to `pass.lines` (a line
/// split across chunks is assembled in `pass.carry`, which ends holding the partial tail), then
/// the chunk to `hashing`.
pub(super) fn read_lines(
    reader: &mut impl Read,
    exp: &Expect<'_>,
    pass: &mut LogPass,
    hashing: &mut Hashing<'_>,
    kept: &mut Option<Vec<u8>>,
) -> Result<(), BoundedError> {
    let LogPass {
        lines,
        carry,
        total,
        buf,
    } = pass;
    loop {
        let n = match reader.read(buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(BoundedError::Io(e)),
        };
        *total += n as u64;
        if *total > MAX_LOG_BYTES {
            return Err(BoundedError::TooLarge { seen: *total });
        }
        let mut rest = buf.get(..n).unwrap_or_default();
        if !carry.is_empty() {
            // The line the previous chunk ended in: completed here, or continued in the next.
            match memchr::memchr(b'\n', rest) {
                Some(p) => {
                    carry.extend_from_slice(&rest[..p]);
                    lines.line(exp, carry);
                    carry.clear();
                    rest = &rest[p + 1..];
                }
                None => {
                    carry.extend_from_slice(rest);
                    rest = &[];
                }
            }
        }
        let mut start = 0;
        for p in memchr::memchr_iter(b'\n', rest) {
            lines.line(exp, &rest[start..p]);
            start = p + 1;
        }
        carry.extend_from_slice(&rest[start..]);
        if let Some(k) = kept {
            k.extend_from_slice(buf.get(..n).unwrap_or_default());
        }
        hashing.chunk(buf, n).map_err(lost)?;
    }
}

/// The hashing thread ended without its digests: the log counts as unreadable.
pub(super) fn lost(_: HashingLost) -> BoundedError {
    BoundedError::Io(std::io::Error::other(
        "the log's hashing thread ended before its digest was taken",
    ))
}

/// Reads the decision log in chunks through the bounded opener, hashing each chunk once and
/// checking lines as they complete; records its digest in `files` when the whole file was read within the
/// bound. Same reasons, in the same order, as reading the whole file first: an over-bound or
/// unreadable log yields only its `too_large` / `missing_file` reason, and more than
/// [`MAX_DECISIONS`] lines yield only `too_many_decisions` (the line reasons gathered are dropped).
/// `kept`: when `Some`, the log's bytes are appended to it as they are read (`capture export`
/// reads them again from there: no second read, no second hash); they are whole only when the
/// verdict's `files` names the log.
pub(super) fn check_log_file(
    dir: &Path,
    exp: &Expect<'_>,
    stop: Option<&StopData>,
    r: &mut Reasons,
    files: &mut BTreeMap<String, FileDigest>,
    kept: &mut Option<Vec<u8>>,
) {
    let (file, size) = match open_log(dir) {
        Ok(opened) => opened,
        Err(e) => return refused(e, r),
    };
    if let Some(k) = kept.as_mut() {
        // One allocation for the whole log (its size is bounded: the open checked it).
        k.reserve(usize::try_from(size).unwrap_or(0));
    }
    let mut reader = file.take(MAX_LOG_BYTES + 1);
    let mut pass = LogPass::new();
    // The lines are checked here while a large log's chunks are hashed on a scoped thread
    // (`log_digest`), which ends before the scope does.
    let read = std::thread::scope(|s| {
        let mut hashing = Hashing::start(s, size);
        read_lines(&mut reader, exp, &mut pass, &mut hashing, kept)?;
        hashing.finish().map_err(lost)
    });
    match read {
        Ok(digests) => conclude(pass, digests, stop, r, files),
        Err(e) => refused(e, r),
    }
}

/// Opens the log through the bounded opener: the file and its size.
pub(super) fn open_log(dir: &Path) -> Result<(std::fs::File, u64), BoundedError> {
    bounded::open_regular(&dir.join(DECISIONS), FinalLink::Refuse, MAX_LOG_BYTES)
}

/// The reason of a log that could not be read whole within its bound.
fn refused(e: BoundedError, r: &mut Reasons) {
    let code = match e {
        BoundedError::Missing | BoundedError::Io(_) => ClosureReasonCode::MissingFile,
        BoundedError::NotRegular(_) => ClosureReasonCode::NotRegularFile,
        BoundedError::TooLarge { .. } => ClosureReasonCode::TooLarge,
    };
    r.push(code, format!("{DECISIONS} {}", e.describe(MAX_LOG_BYTES)));
}

/// The end of a pass that read the whole log within its bound: its digest in `files`, then its
/// line reasons (or only `too_many_decisions`), then the checks against the stop record.
/// `(file_sha, prefix_sha)`: the SHA-256 of the bytes read and of their complete-line prefix.
pub(super) fn conclude(
    pass: LogPass,
    (file_sha, prefix_sha): (String, String),
    stop: Option<&StopData>,
    r: &mut Reasons,
    files: &mut BTreeMap<String, FileDigest>,
) {
    files.insert(
        DECISIONS.to_string(),
        FileDigest {
            bytes: pass.total,
            sha256: file_sha.clone(),
        },
    );
    let count = pass.lines.count;
    if count > MAX_DECISIONS {
        r.push(
            ClosureReasonCode::TooManyDecisions,
            format!(
                "{DECISIONS} holds {count} decision lines, over the {MAX_DECISIONS}-line bound"
            ),
        );
    } else {
        pass.lines.lr.finish(r);
    }

    if let Some(stop) = stop {
        check_against_stop(stop, count, &pass.carry, &file_sha, &prefix_sha, r);
    }
}

/// The log against the stop record's accounting (SPEC §4.3): a complete log ends with a newline,
/// holds `decision_events_written` lines, and its bytes (or its complete-line prefix) have the
/// recorded SHA-256.
fn check_against_stop(
    stop: &StopData,
    count: usize,
    tail: &[u8],
    file_sha: &str,
    prefix_sha: &str,
    r: &mut Reasons,
) {
    let full = match stop.decision_log {
        DecisionLogState::Complete => true,
        DecisionLogState::Incomplete => false,
        _ => return,
    };
    if full && !tail.is_empty() {
        r.push(
            ClosureReasonCode::PartialLine,
            format!(
                "{DECISIONS} ends with {} bytes without a newline but decision_log is complete",
                tail.len()
            ),
        );
    }
    if let Some(written) = stop.decision_events_written {
        if written != count as u64 {
            r.push(
                ClosureReasonCode::CountMismatch,
                format!(
                    "{DECISIONS} holds {count} complete lines, decision_events_written is {written}"
                ),
            );
        }
    }
    if let Some(want) = &stop.decision_prefix_sha256 {
        let (got, what) = if full {
            (file_sha, "the file")
        } else {
            (prefix_sha, "the complete-line prefix")
        };
        if got != want {
            r.push(
                ClosureReasonCode::DigestMismatch,
                format!(
                    "{DECISIONS}: SHA-256 of {what} is {got}, decision_prefix_sha256 is {want}"
                ),
            );
        }
    }
}
