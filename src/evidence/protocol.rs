//! A capture directory's `protocol.json` (SPEC §7), written before spawn.

use std::path::Path;

use serde::Serialize;

use super::event::{PRODUCER, Producer};
use crate::capture_files;
use crate::error::{Error, Result};

#[derive(Serialize)]
struct Protocol<'a> {
    schema: &'static str,
    session_id: &'a str,
    event_source: &'a str,
    server_id: &'a str,
    created_at: &'a str,
    decision_log: &'static str,
    session_context: &'static str,
    session_stop: &'static str,
    producer: Producer,
}

/// Writes protocol.json to the new file `path`.
pub(crate) fn write(
    path: &Path,
    session_id: &str,
    event_source: &str,
    server_id: &str,
    created_at: &str,
) -> Result<()> {
    let doc = Protocol {
        schema: "assay.capture.protocol.v1",
        session_id,
        event_source,
        server_id,
        created_at,
        decision_log: capture_files::DECISIONS,
        session_context: capture_files::CONTEXT,
        session_stop: capture_files::STOP,
        producer: PRODUCER,
    };
    let mut bytes = serde_json::to_vec_pretty(&doc)
        .map_err(|e| Error::io(path, "cannot serialize", &std::io::Error::other(e)))?;
    bytes.push(b'\n');
    super::file::write_new(path, &bytes).map_err(|e| Error::io(path, "cannot write", &e))
}
