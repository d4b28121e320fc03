//! `no-session.json` (SPEC §3 item 8, §10): what a discovery-only run leaves in its capture
//! directory instead of a stop record, so a reader can tell "no session existed" from "the
//! session's stop record was lost".

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::capture_files;
use crate::config::SessionPlan;
use crate::diag::Diag;
use crate::error::{Error, Result};
use crate::outcome::WrapOutcome;

/// The `schema` of `no-session.json`.
pub(crate) const SCHEMA: &str = "assay.capture.no_session.v1";

#[derive(Serialize)]
struct NoSession<'a> {
    schema: &'static str,
    session_id: &'a str,
}

/// Writes `no-session.json` to the new file `path` (exclusive, 0600, one `write_all`).
pub(crate) fn write(path: &Path, session_id: &str) -> Result<()> {
    let doc = NoSession {
        schema: SCHEMA,
        session_id,
    };
    let mut bytes = serde_json::to_vec(&doc)
        .map_err(|e| Error::io(path, "cannot serialize", &std::io::Error::other(e)))?;
    bytes.push(b'\n');
    super::file::write_new(path, &bytes).map_err(|e| Error::io(path, "cannot write", &e))
}

/// For a discovery-only run inside a capture directory: writes `no-session.json` and records its
/// path in the outcome; a failed write is an evidence error (exit status 3), like any other.
pub(crate) fn record(plan: &SessionPlan, session_id: &str, diag: &Diag, outcome: &mut WrapOutcome) {
    let Some(dir) = &plan.capture_dir else {
        return;
    };
    let path: PathBuf = dir.join(capture_files::NO_SESSION);
    match write(&path, session_id) {
        Ok(()) => outcome.paths.no_session = Some(path),
        Err(e) => {
            diag.say(&e.to_string());
            outcome.evidence_errors.push(e.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn written_once_compact_and_0600() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(capture_files::NO_SESSION);
        let sid = "0123456789abcdef0123456789abcdef";
        write(&p, sid).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            format!("{{\"schema\":\"assay.capture.no_session.v1\",\"session_id\":\"{sid}\"}}\n")
        );
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        assert!(write(&p, sid).is_err(), "never overwritten");
    }
}
