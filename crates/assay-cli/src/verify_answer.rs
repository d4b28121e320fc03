//! `assay capture verify-answer DIR --request-id ID FILE` (SPEC §5.3): whether FILE's bytes are
//! the answer the capture recorded for request ID. Exit 0 yes, 1 no, 2 usage (DIR or FILE
//! missing or unreadable, an ID that is no request id).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use assay::capture::{ClosureKind, request_id_value, verify_answer};
use assay::text;

use super::exit;
use super::messages::Failure;

pub(crate) fn run(dir: &Path, request_id: &str, file: &Path) -> Result<ExitCode, Failure> {
    if !dir.is_dir() {
        return Err(Failure::Invalid(format!(
            "not a capture directory: {} (check the path)",
            text::render(&dir.display().to_string())
        )));
    }
    let Some(id) = request_id_value(request_id) else {
        return Err(Failure::Invalid(format!(
            "--request-id {}: a request id is a JSON string or number (`0`, `'\"0\"'`)",
            text::render(request_id)
        )));
    };
    let check = verify_answer(dir, &id, file).map_err(|e| {
        Failure::Invalid(format!(
            "cannot read the answer file {}: {e}",
            text::render(&file.display().to_string())
        ))
    })?;
    let vouched = if check.closure == ClosureKind::Unknown {
        " (the capture's verdict is unknown: as read, not vouched for)"
    } else {
        ""
    };
    let id = text::render(&id.to_string());
    let line = match &check.matched {
        Some(row) => format!(
            "yes: the file is the answer to request {id} recorded at seq {} ({}, sha256 {}){vouched}",
            row.seq,
            text::render(&row.action),
            check.sha256
        ),
        None if check.recorded.is_empty() => {
            format!("no: the capture records no answer to request {id}{vouched}")
        }
        None => format!(
            "no: the file (sha256 {}) is not the answer recorded for request {id} (sha256 {}){vouched}",
            check.sha256,
            check
                .recorded
                .iter()
                .map(|r| text::render(&r.sha256))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(Failure::output(exit::FAILURE))?;
    Ok(exit::code(if check.matched.is_some() {
        exit::OK
    } else {
        exit::NOT_THE_ANSWER
    }))
}
