//! One capture's export: judged, then its events written in the chosen format into a buffer of
//! its own (what one capture needs, at most the reader's bounds), on a worker thread of the
//! root walk.

use std::path::Path;

use super::ndjson::{CaptureColumns, push_rows};
use super::options::{ExportFormat, ExportOptions, ExportedCapture};
use crate::capture::{CaptureRecords, CaptureStatus, Closure, capture_records};
use crate::otlp::{Resource, SessionSpan, push_request};
use crate::outcome::SessionEnd;

/// A capture's export: what happened to it, and its output.
pub(super) struct Rendered {
    pub(super) info: ExportedCapture,
    pub(super) bytes: Vec<u8>,
}

/// What is said about a capture that is not exported (an entry of the root that could not be
/// read as a capture).
pub(super) fn refused(name: String, closure: &Closure) -> Rendered {
    Rendered {
        info: ExportedCapture {
            name,
            status: CaptureStatus::of(closure),
            exported: false,
            rows: 0,
            refused_lines: 0,
            unavailable: None,
        },
        bytes: Vec::new(),
    }
}

/// Judges the capture `dir` (named `name`) and writes its export, when it is exported: a
/// `closed` capture always; another one with `include_unclosed` when it has a session (a
/// discovery-only run has none, and no decision).
pub(super) fn render(dir: &Path, name: String, options: &ExportOptions) -> Rendered {
    let c = capture_records(dir);
    let status = CaptureStatus::of(&c.closure);
    let wanted = match status {
        CaptureStatus::Closed => true,
        CaptureStatus::NoSession => false,
        CaptureStatus::Incomplete | CaptureStatus::Unknown => options.include_unclosed,
    };
    let mut info = ExportedCapture {
        name,
        status,
        exported: false,
        rows: 0,
        refused_lines: 0,
        unavailable: None,
    };
    let mut bytes = Vec::new();
    if wanted && c.closure.session_id.is_some() {
        // One allocation for the output in the common case: a row is about the size of its
        // line, a span about twice and a half (reallocating and freeing growing buffers cost
        // more than the formatting).
        let log = c.log_len();
        bytes.reserve(match options.format {
            ExportFormat::Ndjson => log + log / 4,
            ExportFormat::OtlpJson => log * 5 / 2 + 4096,
        });
        info.exported = true;
        info.unavailable = c.unavailable().map(str::to_string);
        match options.format {
            ExportFormat::Ndjson => ndjson(&c, &mut info, &mut bytes),
            ExportFormat::OtlpJson => otlp_json(&c, &mut info, &mut bytes),
        }
    }
    Rendered { info, bytes }
}

fn ndjson(c: &CaptureRecords, info: &mut ExportedCapture, out: &mut Vec<u8>) {
    let columns = CaptureColumns {
        capture: &info.name,
        verdict: info.status.as_str(),
        server_id: c.session.server_id.as_deref(),
    };
    let mut rows = 0;
    let refused = c.for_each(|r| rows += push_rows(out, &columns, r));
    info.rows = rows;
    info.refused_lines = refused;
}

/// One `ExportTraceServiceRequest` line: the session span and one span per event.
fn otlp_json(c: &CaptureRecords, info: &mut ExportedCapture, out: &mut Vec<u8>) {
    let Some(session_id) = c.closure.session_id.as_deref() else {
        return;
    };
    let s = &c.session;
    let version = s
        .producer
        .as_deref()
        .and_then(|p| p.rsplit_once(' '))
        .map(|(_, v)| v);
    let resource = Resource {
        server_id: s.server_id.as_deref(),
        producer_version: version,
        capture: Some(&info.name),
        verdict: Some(info.status.as_str()),
    };
    let session = SessionSpan {
        session_id,
        start: s.started_at.as_deref().or(s.created_at.as_deref()),
        end: s.stopped_at.as_deref(),
        policy_sha256: s.policy_sha256.as_deref(),
        policy_name: s.policy_name.as_deref(),
        session_end: c.stop.as_ref().map(|d| match d.session_end {
            SessionEnd::ClientClosed => "client_closed",
            SessionEnd::ProxyError => "proxy_error",
        }),
        verdict: Some(info.status.as_str()),
    };
    let mut rows = 0;
    let mut refused = 0;
    push_request(out, &resource, |spans| {
        spans.push_session_span(&session);
        refused = c.for_each(|r| {
            rows += 1;
            spans.push_record_span(r);
        });
    });
    out.push(b'\n');
    info.rows = rows;
    info.refused_lines = refused;
}
