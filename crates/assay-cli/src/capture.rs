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
    refuse_root(dir, "read")?;
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
    refuse_capture(root)?;
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

/// A capture root given where one capture is meant (`capture read`, `capture show`): a usage
/// error (status 2) in one line that says what to run instead, never a verdict on missing files.
pub(crate) fn refuse_root(dir: &Path, command: &str) -> Result<(), Failure> {
    if !assay::capture::is_capture_root(dir) {
        return Ok(());
    }
    Err(Failure::Invalid(format!(
        "{} is a capture root, not a capture directory: use `assay capture summary {}` \
         (or `assay capture {command}` on one of its directories)",
        dir.display(),
        dir.display()
    )))
}

/// One capture given where a capture root is meant (`capture summary`): a usage error (status
/// 2) in one line that says what to run instead, never an empty summary.
pub(crate) fn refuse_capture(root: &Path) -> Result<(), Failure> {
    if !assay::capture::is_capture_dir(root) {
        return Ok(());
    }
    Err(Failure::Invalid(format!(
        "{} is a capture directory, not a capture root: use `assay capture read {}` \
         (or `assay capture show {}`)",
        root.display(),
        root.display(),
        root.display()
    )))
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
