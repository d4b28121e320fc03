//! The bounded capture reader (`read_capture`) and its verdict (SPEC §7).
//!
//! [`read_capture`] reads the four required files of a capture directory — `protocol.json`,
//! `session-context.json`, `session-stop.json`, `decisions.ndjson` — through the bounded,
//! no-follow opener, runs the strict JSON pre-scan before any value is materialized, checks that
//! the files agree with each other, and returns a [`Closure`]: `closed`, `incomplete` or
//! `unknown` with the [`Reason`]s behind it. It never panics and never returns an error: a bad
//! capture is data (`unknown`), not a failure. The rules are written down in
//! `docs/capture-reader.md`.
//!
//! [`package_capture`] copies a capture's raw bytes into a new directory with a manifest.
//! [`read_captures`] judges every capture under a capture root, in parallel and in name order.
//! [`verify_answer`] says whether a file holds the answer a capture recorded for a request.
//! [`show_capture`] collects what a person needs to read one capture (`assay capture show`).
#![forbid(unsafe_code)]

mod agreement;
mod bounds;
mod companions;
mod decision_line;
mod each;
mod facts;
mod fast_line_parser;
mod fields;
mod follow;
mod judgement;
mod log;
mod log_digest;
mod no_session;
mod package;
mod reader;
mod records;
mod result_line;
mod root_walk;
mod row_refs;
mod rows;
mod show;
mod show_result;
mod summary;
mod verify_answer;

use std::path::Path;

pub(crate) use each::walk_captures;
pub(crate) use each::{ClosedRows, for_each_capture_rows};
pub use each::{Visited, for_each_capture};
pub use facts::SessionFacts;
pub(crate) use follow::LogFollower;
#[cfg(test)]
use follow::LogPassUsed;
pub use package::{
    ExtraFile, PACKAGE_SCHEMA, PackageManifest, PackagedFile, Producer, package_capture,
};
pub(crate) use records::{CaptureRecords, capture_records};
pub(crate) use root_walk::Visit;
pub(crate) use row_refs::{DecisionRef, McpDecisionRef, RowRef};
pub use rows::{DecisionRow, ListedTool, ListingRow, LogLine, McpDecisionRow, RemovedTool};
pub use show::{CaptureReport, DecisionCounts, DecisionLines, McpDecisionCounts, show_capture};
pub use show_result::ResultRow;
pub use summary::{
    CaptureCounts, CaptureStatus, CaptureVerdict, WINDOW_PER_WORKER, is_capture_dir,
    is_capture_root, read_captures, read_captures_with,
};
pub use verify_answer::{AnswerCheck, MAX_ANSWER_FILE_BYTES, request_id_value, verify_answer};

pub use bounds::{MAX_COMPANION_BYTES, MAX_DECISIONS, MAX_DEPTH, MAX_LOG_BYTES};
pub use judgement::{
    CLOSURE_NON_CLAIMS, CLOSURE_SCHEMA, Closure, ClosureKind, ClosureReasonCode, FileDigest, Reason,
};

/// Reads and judges the capture directory `dir` (SPEC §7).
///
/// Never panics and never returns an error: a missing, malformed, oversized or inconsistent
/// capture yields `closure: unknown` with reasons. Reads only the four required files, each at
/// most its bound plus one byte.
pub fn read_capture(dir: &Path) -> Closure {
    reader::judge(dir)
}

#[cfg(test)]
use crate::capture_files::{CONTEXT, DECISIONS, PROTOCOL, STDERR, STOP};
#[cfg(test)]
mod tests;
#[cfg(test)]
mod testutil;
