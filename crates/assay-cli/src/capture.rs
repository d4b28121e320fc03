//! `assay capture read`, `assay capture summary` and `assay capture package`.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use assay::{package_capture, read_capture, read_captures};

use super::exit;
use super::messages::Failure;

/// The verdict JSON on stdout; a verdict that cannot be delivered is status 3 (SPEC §10). A DIR
/// that does not exist or is not a directory is a usage error (status 2) that says so, as
/// `capture summary` does for ROOT: there is no capture to judge.
pub(crate) fn read(dir: &Path) -> Result<ExitCode, Failure> {
    let missing = |why: String| Failure::Io {
        what: "capture read",
        error: std::io::Error::new(std::io::ErrorKind::NotFound, why),
        status: exit::USAGE,
    };
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(missing(format!(
                "missing capture directory: {} does not exist",
                dir.display()
            )));
        }
        Ok(m) if !m.is_dir() => {
            return Err(missing(format!(
                "not a capture directory: {} is not a directory",
                dir.display()
            )));
        }
        // Anything else (a directory, or one that cannot be inspected) is the reader's to judge.
        _ => {}
    }
    let closure = read_capture(dir);
    let mut out = std::io::stdout().lock();
    let text = serde_json::to_string_pretty(&closure).unwrap_or_else(|_| closure.to_json());
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(Failure::output(exit::FAILURE))?;
    Ok(exit::code(closure.closure.exit_status()))
}

/// One line per capture as it is judged (stdout is line-buffered, so lines stream out in
/// order), then the summary line; the exit status is the library's rule (SPEC §10). When stdout
/// goes away the remaining captures are not judged and the status is 3: a summary that was not
/// delivered is never "all closed".
pub(crate) fn summary(root: &Path) -> Result<ExitCode, Failure> {
    let mut out = std::io::stdout().lock();
    let mut write_error = None;
    let counts = read_captures(root, |v| match writeln!(out, "{}", v.summary_line()) {
        Ok(()) => ControlFlow::Continue(()),
        Err(e) => {
            write_error = Some(e);
            ControlFlow::Break(())
        }
    })
    .map_err(Failure::library)?;
    if let Some(e) = write_error {
        return Err(Failure::output(exit::FAILURE)(e));
    }
    writeln!(out, "{}", counts.summary_line())
        .and_then(|()| out.flush())
        .map_err(Failure::output(exit::FAILURE))?;
    Ok(exit::code(counts.exit_status()))
}

/// Writes the package, then prints its manifest. The package is complete before anything is
/// printed, so a failed print still ends with status 0.
pub(crate) fn package(dir: &Path, out: &Path, extra: &[PathBuf]) -> Result<ExitCode, Failure> {
    let manifest = package_capture(dir, out, extra).map_err(Failure::library)?;
    let text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}")
        .and_then(|()| stdout.flush())
        .map_err(Failure::output(exit::OK))?;
    Ok(exit::code(exit::OK))
}
