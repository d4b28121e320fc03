//! `assay capture export`: the library's export to stdout, and one `assay:` line on stderr per
//! capture left out (or with lines left out) and a closing count, so a pipe into DuckDB or a
//! file receives only the rows.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use assay::capture::CaptureStatus;
use assay::export::{ExportFormat, ExportOptions, ExportedCapture, export_captures};

use super::args::ExportFormatArg;
use super::exit;
use super::messages::{Failure, eprint_assay};

/// Stdout, remembering the first write error (the export stops at it).
struct Stdout<'a> {
    out: io::StdoutLock<'a>,
    error: Option<io::Error>,
}

impl Write for Stdout<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf).inspect_err(|e| self.note(e))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf).inspect_err(|e| self.note(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush().inspect_err(|e| self.note(e))
    }
}

impl Stdout<'_> {
    fn note(&mut self, e: &io::Error) {
        if self.error.is_none() {
            self.error = Some(io::Error::new(e.kind(), e.to_string()));
        }
    }
}

/// What is said on stderr about one capture, if anything.
fn report(c: &ExportedCapture, include_unclosed: bool) {
    if !c.exported {
        let why = match c.status {
            CaptureStatus::NoSession => "is a discovery-only run (no session, no decision)",
            CaptureStatus::Closed => "has no session id",
            _ if include_unclosed => "has no readable session id",
            _ => "is not closed (--include-unclosed exports it, marked with its verdict)",
        };
        eprint_assay(&format!(
            "not exported: {} ({}) {why}",
            c.name,
            c.status.as_str()
        ));
        return;
    }
    if let Some(why) = &c.unavailable {
        eprint_assay(&format!("{}: no decision exported: {why}", c.name));
    }
    if c.refused_lines > 0 {
        eprint_assay(&format!(
            "{}: {} line(s) of its decision log were refused by the reader's checks and are not exported",
            c.name, c.refused_lines
        ));
    }
}

pub(crate) fn export(
    paths: &[PathBuf],
    format: ExportFormatArg,
    include_unclosed: bool,
) -> Result<ExitCode, Failure> {
    let options = ExportOptions {
        format: match format {
            ExportFormatArg::Ndjson => ExportFormat::Ndjson,
            ExportFormatArg::OtlpJson => ExportFormat::OtlpJson,
        },
        include_unclosed,
    };
    let mut out = Stdout {
        out: io::stdout().lock(),
        error: None,
    };
    let result = export_captures(paths, &options, &mut out, |c| report(c, include_unclosed));
    if let Some(e) = out.error.take() {
        return Err(Failure::output(exit::FAILURE)(e));
    }
    let counts = result.map_err(Failure::library)?;
    out.flush().map_err(Failure::output(exit::FAILURE))?;
    let found = {
        let c = counts.captures;
        c.closed + c.incomplete + c.unknown + c.no_session
    };
    let unit = match options.format {
        ExportFormat::Ndjson => "rows",
        ExportFormat::OtlpJson => "event spans",
    };
    eprint_assay(&format!(
        "exported {} {unit} from {} of {found} captures",
        counts.rows, counts.exported
    ));
    Ok(exit::code(counts.exit_status()))
}
