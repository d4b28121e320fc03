//! The session context event (`assay.mcp.session.context.v1`, SPEC §4.2), written once right
//! after spawn.

use std::path::Path;

use serde::Serialize;

use super::event::{Envelope, Producer, TYPE_CONTEXT, now_rfc3339};
use crate::error::{Error, Result};

/// The context event's `data`: the stable context fields the reader requires.
#[derive(Serialize)]
pub(crate) struct ContextData<'a> {
    pub session_id: &'a str,
    pub server_id: &'a str,
    pub server_pid: u32,
    pub started_at: &'a str,
    pub policy_sha256: &'a str,
    pub policy_name: &'a str,
    pub decision_log: &'static str,
    pub session_stop_requested: bool,
    pub dry_run: bool,
    /// The policy's `hide_refused_tools` (SPEC §4.2, §5).
    pub hide_refused_tools: bool,
    /// SHA-256 of the pins file's bytes, when the policy has pins (SPEC §4.2, §5.1).
    pub pins_sha256: Option<&'a str>,
    /// The policy sections that govern methods beyond `tools/call` (SPEC §4.2, §5.2), e.g.
    /// `["resources","prompts"]`; empty when the policy has none.
    pub governed: Vec<&'static str>,
    /// The policy's `record_arguments` (SPEC §4.2, §5.2): whether `tools/call` decisions carry
    /// their redacted, bounded arguments.
    pub record_arguments: bool,
    pub command_sha256: &'a str,
    pub producer: Producer,
    pub assertion_basis: &'static str,
    pub non_claims: [&'static str; 4],
}

/// `evt_context_<session_id>`.
pub(crate) fn context_id(session_id: &str) -> String {
    format!("evt_context_{session_id}")
}

/// Writes the context event to the new file `path`.
pub(crate) fn write(path: &Path, source: &str, data: ContextData<'_>) -> Result<()> {
    let id = context_id(data.session_id);
    let time = now_rfc3339();
    let line = Envelope::new(&id, TYPE_CONTEXT, source, &time, data).to_line()?;
    super::file::write_new(path, &line)
        .map_err(|e| Error::io(path, "cannot write session context", &e))
}
