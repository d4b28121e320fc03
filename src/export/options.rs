//! What an export is asked to do and what it reports, per capture and in all.

use crate::capture::{CaptureCounts, CaptureStatus};

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// One flat JSON object per decision (docs/export.md, "ndjson").
    Ndjson,
    /// One OTLP/JSON `ExportTraceServiceRequest` per capture (docs/export.md, "otlp-json").
    OtlpJson,
}

/// What to export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportOptions {
    /// The format.
    pub format: ExportFormat,
    /// Export `incomplete` and `unknown` captures too, marked with their verdict.
    pub include_unclosed: bool,
}

/// What happened to one capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportedCapture {
    /// The capture directory's name (a name that is not UTF-8 is shown lossily).
    pub name: String,
    /// Its verdict, as `capture summary` lists it.
    pub status: CaptureStatus,
    /// Whether its events were written.
    pub exported: bool,
    /// Rows (`ndjson`) or event spans (`otlp-json`) written.
    pub rows: u64,
    /// Complete lines of its log the reader's checks refused (not exported).
    pub refused_lines: u64,
    /// Why its log could not be read at all, when it could not.
    pub unavailable: Option<String>,
}

/// What an export did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportCounts {
    /// The captures found, by verdict.
    pub captures: CaptureCounts,
    /// Captures whose events were written.
    pub exported: u64,
    /// Rows or event spans written.
    pub rows: u64,
}

impl ExportCounts {
    /// The exit status, `capture summary`'s rule over every capture found (SPEC §10): `3` when
    /// any capture is unknown or none was found, `1` when some are incomplete, `0` otherwise.
    pub fn exit_status(&self) -> i32 {
        self.captures.exit_status()
    }
}
