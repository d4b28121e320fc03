//! `assay capture export` (SPEC §10): the decisions of judged captures in a format other tools
//! read — flat rows (`ndjson`, for DuckDB and Spark) or OpenTelemetry spans (`otlp-json`, an
//! OTLP/JSON `ExportTraceServiceRequest` per capture, for the Collector's `otlpjsonfile`
//! receiver). docs/export.md has the columns and the span mapping.
//!
//! Each path is a capture (it holds `protocol.json`) or a capture root whose immediate
//! subdirectories are captures, read as `capture summary` reads them: in parallel on every
//! core, handed out in name order, at most [`PER_WORKER`] captures' output held per worker.
//! Only `closed` captures are exported unless [`ExportOptions::include_unclosed`]; a capture's
//! verdict is on each of its rows and on its spans. A capture's lines are read from the bytes
//! the verdict judged, and only those the reader's checks accept (`capture show`'s rule).
#![forbid(unsafe_code)]

mod ndjson;
mod options;
mod render;

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use crate::capture::{Visit, walk_captures};
use crate::error::{Error, Result};

pub use ndjson::COLUMNS as NDJSON_COLUMNS;
pub use options::{ExportCounts, ExportFormat, ExportOptions, ExportedCapture};

/// Captures' output held per worker thread at most while earlier ones are being written (one
/// capture's output is at most what its bounded log gives).
pub const PER_WORKER: usize = 2;

/// Exports every capture of `paths` to `out` in `options.format`, calling `each` for every
/// capture found (exported or not), in order: the paths in the order given, each root's
/// captures in name order.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) when a path is neither a
/// capture nor a directory; [`ErrorKind::Io`](crate::ErrorKind::Io) when a root cannot be
/// listed or `out` cannot be written (nothing more is read after a failed write).
pub fn export_captures(
    paths: &[PathBuf],
    options: &ExportOptions,
    out: &mut dyn Write,
    mut each: impl FnMut(&ExportedCapture),
) -> Result<ExportCounts> {
    let mut counts = ExportCounts::default();
    for path in paths {
        let mut write_error = None;
        let mut hand_out = |r: render::Rendered| {
            counts.captures.add(r.info.status);
            if let Err(e) = out.write_all(&r.bytes) {
                write_error = Some(e);
                return ControlFlow::Break(());
            }
            if r.info.exported {
                counts.exported += 1;
                counts.rows += r.info.rows;
            }
            each(&r.info);
            ControlFlow::Continue(())
        };
        walk_captures(
            path,
            PER_WORKER,
            |dir: &Path, name: &str| render::render(dir, name.to_string(), options),
            |_, name, visit| match visit {
                Visit::Refused(closure) => hand_out(render::refused(name, &closure)),
                Visit::Read(rendered) => hand_out(rendered),
            },
        )?;
        if let Some(e) = write_error {
            return Err(Error::io(Path::new("-"), "cannot write the export", &e));
        }
    }
    Ok(counts)
}
