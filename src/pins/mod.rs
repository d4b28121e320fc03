//! Tool pinning (SPEC §5.1): the definition the model saw is the definition that was reviewed.
//!
//! A pins file (`crate::pins_file`, below the policy that names one) holds, per tool, the SHA-256 of the RFC 8785 canonical form of the tool
//! object a server listed, and the object itself. A policy names one (`pins:`); in a session the
//! `tools/list` filter removes unpinned and drifted tools and the policy refuses their calls
//! (`P_TOOL_UNPINNED`, `P_TOOL_DRIFT`, `P_TOOL_UNLISTED`). [`list_server_tools`] lists a live
//! server as a client would, [`check`] compares a listing with pins (`assay mcp pin`), and
//! [`write_pins`] writes a pins file.
#![forbid(unsafe_code)]

mod listing;

use std::io::Write;
use std::path::Path;

pub use crate::pins_file::{
    ChangedTool, InstructionsPin, ListedTool, MAX_PINS_BYTES, PINS_SCHEMA, Pin, PinCheck, Pins,
    PinsError, ToolListing, check,
};
pub use listing::{
    ClientCapabilities, ListError, PROTOCOL_REVISIONS, list_server_tools, list_server_tools_as,
};

/// How [`write_pins`] treats an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// The file must not exist (created exclusively, mode 0600).
    New,
    /// Replace the file atomically (a new file beside it, renamed over it).
    Replace,
}

/// Writes a pins file for `listing` at `path`.
///
/// # Errors
/// An I/O error (`AlreadyExists` when `mode` is [`WriteMode::New`] and the file exists); an
/// `InvalidData` error when a definition cannot be re-read (it was read strictly, so this does
/// not happen for a listing from [`list_server_tools`]).
pub fn write_pins(listing: &ToolListing, path: &Path, mode: WriteMode) -> std::io::Result<()> {
    let server = listing
        .server_info
        .as_deref()
        .and_then(|s| crate::strict_json::parse_value(s).ok());
    let tools: Vec<_> = listing
        .tools
        .iter()
        .map(|t| (t.name.clone(), t.sha256, t.definition.clone()))
        .collect();
    let now = crate::evidence::event::now_rfc3339();
    let bytes = crate::pins_file::file::render(
        &tools,
        server.as_ref(),
        listing.instructions.as_deref(),
        &now,
    )
    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    match mode {
        WriteMode::New => {
            let mut f = crate::evidence::file::create_new(path)?;
            f.write_all(&bytes)
        }
        WriteMode::Replace => {
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => std::path::PathBuf::from("."),
            };
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "pins".into());
            let nonce = crate::evidence::event::new_session_id()
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            let tmp = dir.join(format!(".{name}.{nonce}.tmp"));
            let mut f = crate::evidence::file::create_new(&tmp)?;
            let written = f.write_all(&bytes).and_then(|()| f.sync_all());
            drop(f);
            match written.and_then(|()| std::fs::rename(&tmp, path)) {
                Ok(()) => Ok(()),
                Err(e) => {
                    let _ = std::fs::remove_file(&tmp);
                    Err(e)
                }
            }
        }
    }
}

/// A starter policy (YAML) that allows exactly the listed tools and pins them with the pins
/// file at `pins_path` (written as given: a path relative to the policy file).
pub fn policy_template(listing: &ToolListing, pins_path: &str) -> String {
    let mut out = String::from(
        "# A starter policy from `assay mcp pin --policy-template`: it allows exactly the tools the\n\
         # server listed and pins their definitions. Review it, then narrow it (deny, constraints,\n\
         # schemas). Save it next to the pins file: `pins` is relative to this file.\n",
    );
    out.push_str("version: \"1\"\n");
    let name = listing
        .server_info
        .as_deref()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
        .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_string))
        .filter(|n| !n.is_empty());
    if let Some(n) = name {
        out.push_str(&format!("name: {}\n", json_quoted(&n)));
    }
    if listing.tools.is_empty() {
        out.push_str("allow: []\n");
    } else {
        out.push_str("allow:\n");
    }
    for t in &listing.tools {
        // Globs have no escape: a `*` or `?` in a name is written as `?` (one character); the
        // pins still admit exactly the pinned names.
        let pattern: String = t
            .name
            .chars()
            .map(|c| if c == '*' || c == '?' { '?' } else { c })
            .collect();
        out.push_str(&format!("  - {}\n", json_quoted(&pattern)));
    }
    out.push_str(&format!("pins: {}\n", json_quoted(pins_path)));
    out
}

/// A YAML double-quoted scalar (JSON string syntax is valid YAML).
fn json_quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}
