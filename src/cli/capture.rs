//! `assay capture read`, `assay capture summary` and `assay capture package`.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use assay::{package_capture, read_capture, read_captures};

use crate::messages::{eprint_assay, exit};

pub(crate) fn read(dir: &Path) -> ExitCode {
    let closure = read_capture(dir);
    let mut out = std::io::stdout().lock();
    let text = serde_json::to_string_pretty(&closure).unwrap_or_else(|_| closure.to_json());
    if writeln!(out, "{text}").and_then(|()| out.flush()).is_err() {
        return exit(3);
    }
    exit(closure.closure.exit_status())
}

/// One line per capture as it is judged (stdout is line-buffered, so lines stream out in
/// order), then the summary line; the exit status is the library's rule (SPEC §10).
pub(crate) fn summary(root: &Path) -> ExitCode {
    let mut out = std::io::stdout().lock();
    let mut write_failed = false;
    let counts = read_captures(root, |v| {
        if writeln!(out, "{}", v.summary_line()).is_err() {
            write_failed = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    match counts {
        Ok(counts) => {
            if write_failed
                || writeln!(out, "{}", counts.summary_line())
                    .and_then(|()| out.flush())
                    .is_err()
            {
                return exit(3);
            }
            exit(counts.exit_status())
        }
        Err(e) => {
            eprint_assay(&e.to_string());
            exit(e.exit_status())
        }
    }
}

pub(crate) fn package(dir: &Path, out: &Path, extra: &[PathBuf]) -> ExitCode {
    match package_capture(dir, out, extra) {
        Ok(manifest) => {
            let text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{text}");
            exit(0)
        }
        Err(e) => {
            eprint_assay(&e.to_string());
            exit(e.exit_status())
        }
    }
}
