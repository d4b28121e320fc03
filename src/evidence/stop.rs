//! The session stop event (`assay.mcp.session.stop.v1`, SPEC §4.3), written once after cleanup.
//!
//! The file is created (`O_EXCL`) only at the moment of writing, so a directory removed
//! mid-session makes the write fail visibly instead of landing in an unlinked file, and a failed
//! write can never truncate earlier evidence.

use std::path::Path;

use super::event::{Envelope, TYPE_STOP, now_rfc3339};
use crate::error::{Error, Result};
use crate::outcome::StopData;

/// `evt_stop_<session_id>`.
pub(crate) fn stop_id(session_id: &str) -> String {
    format!("evt_stop_{session_id}")
}

/// Writes the stop event to the new file `path`.
pub(crate) fn write(path: &Path, source: &str, data: &StopData) -> Result<()> {
    let id = stop_id(&data.session_id);
    let time = now_rfc3339();
    let line = Envelope::new(&id, TYPE_STOP, source, &time, data).to_line()?;
    super::file::write_new(path, &line)
        .map_err(|e| Error::io(path, "cannot write session stop", &e))
}
