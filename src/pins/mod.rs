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

use std::path::Path;

pub use crate::pins_file::{
    ChangedTool, InstructionsPin, ListedTool, MAX_PINS_BYTES, PINS_SCHEMA, Pin, PinCheck, Pins,
    PinsError, ServerCatalog, ToolListing, check,
};
pub use listing::{
    ClientCapabilities, ListError, PROTOCOL_REVISIONS, PipeClient, list_server_catalog_as,
    list_server_tools, list_server_tools_as,
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
        Some(listing.instructions.as_deref()),
        &now,
    )
    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    match mode {
        WriteMode::New => crate::evidence::file::write_new(path, &bytes),
        WriteMode::Replace => crate::evidence::file::replace(path, &bytes),
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
    out.push_str(&sections_template(listing.catalog.as_ref()));
    out
}

/// The SPEC §5.2 sections of the starter policy: the server's resources and prompts allowed
/// exactly (a section for a capability the server did not declare allows nothing), sampling
/// denied, elicitation and roots allowed, limits as a comment, arguments not recorded.
fn sections_template(catalog: Option<&crate::pins_file::ServerCatalog>) -> String {
    let mut out = String::from(
        "# Beyond tools (docs/policy.md): an absent section is not governed (forwarded, no event).\n",
    );
    let resources = catalog.and_then(|c| {
        let uris = c.resources.as_ref()?;
        let templates = c.resource_templates.as_deref().unwrap_or_default();
        let patterns = uris
            .iter()
            .map(|u| Some(literal_pattern(u)))
            .chain(templates.iter().map(|t| template_pattern(t)));
        Some(patterns.collect::<Vec<_>>())
    });
    match (catalog, resources) {
        (None, _) => out.push_str("# resources: { allow: [] }   # the server's resources were not listed\n"),
        (Some(_), None) => out.push_str(
            "resources:                   # the server declared no resources: every read is refused\n  allow: []\n",
        ),
        (Some(_), Some(patterns)) => {
            out.push_str("resources:                   # resources/read and resources/subscribe, by URI\n");
            push_patterns(&mut out, patterns, |p| {
                crate::policy::resource_pattern_problem(p).is_none()
            });
        }
    }
    let prompts = catalog.map(|c| c.prompts.as_ref());
    match prompts {
        None => out.push_str("# prompts: { allow: [] }     # the server's prompts were not listed\n"),
        Some(None) => out.push_str(
            "prompts:                     # the server declared no prompts: every prompts/get is refused\n  allow: []\n",
        ),
        Some(Some(names)) => {
            out.push_str("prompts:                     # prompts/get, by name\n");
            push_patterns(
                &mut out,
                names.iter().map(|n| Some(literal_pattern(n))).collect(),
                |p| !p.is_empty(),
            );
        }
    }
    out.push_str(
        "client_features:             # what the server may ask of the client\n\
         \x20 sampling: deny             # sampling/createMessage: the host's model writes text for the server\n\
         \x20 elicitation: allow         # elicitation/create: the user sees the question\n\
         \x20 roots: allow               # roots/list: the host's roots\n\
         # limits: { tool_calls: 500, repeated_call: 5 }   # per session; see docs/policy.md\n\
         record_arguments: false      # true: decisions carry the arguments, redacted and cut to 4 KiB\n\
         redact: [\"*token*\", \"*secret*\", \"*password*\", \"*key*\", \"authorization\", \"cookie\"]\n",
    );
    out
}

/// Globs have no escape: a `*` or `?` in a listed name or URI is written as `?` (one
/// character).
fn literal_pattern(s: &str) -> String {
    s.chars()
        .map(|c| if c == '*' || c == '?' { '?' } else { c })
        .collect()
}

/// A resource pattern for an RFC 6570 template: each `{…}` expression becomes `**` when its
/// expansion may hold `/` (operators `+`, `#`, `/`), else `*`. `None` when a `{` is not closed.
fn template_pattern(template: &str) -> Option<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&literal_pattern(rest.get(..open)?));
        let after = rest.get(open + 1..)?;
        let close = after.find('}')?;
        let expr = after.get(..close)?;
        out.push_str(if expr.starts_with(['+', '#', '/']) {
            "**"
        } else {
            "*"
        });
        rest = after.get(close + 1..)?;
    }
    out.push_str(&literal_pattern(rest));
    Some(out)
}

/// `  allow:` and one line per distinct usable pattern (in order), or `allow: []`; a comment
/// counts the entries left out (`None`, or refused by `usable`).
fn push_patterns(out: &mut String, patterns: Vec<Option<String>>, usable: impl Fn(&str) -> bool) {
    let mut kept: Vec<String> = Vec::new();
    let mut left_out = 0usize;
    for p in patterns {
        match p {
            Some(p) if usable(&p) => {
                if !kept.contains(&p) {
                    kept.push(p);
                }
            }
            _ => left_out += 1,
        }
    }
    if kept.is_empty() {
        out.push_str("  allow: []\n");
    } else {
        out.push_str("  allow:\n");
        for p in &kept {
            out.push_str(&format!("    - {}\n", json_quoted(p)));
        }
    }
    if left_out > 0 {
        out.push_str(&format!(
            "  # {left_out} listed entr{} left out: not usable as a pattern (a control character, an unreadable file URI, an unclosed template)\n",
            if left_out == 1 { "y" } else { "ies" }
        ));
    }
    out.push_str("  deny: []\n");
}

/// A YAML double-quoted scalar (JSON string syntax is valid YAML).
fn json_quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}
