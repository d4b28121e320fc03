//! Wrapping an MCP host's configuration file (`assay mcp wrap-config`, SPEC §10).
//!
//! Hosts list their servers in a JSON file: `mcpServers` (Claude Desktop, Cursor, the MCP
//! Inspector's config) or `servers` (VS Code, whose stdio entries carry `"type": "stdio"`).
//! [`rewrite`] turns every stdio entry (one with a `command`) into one that runs
//! `ASSAY mcp wrap --policy P [--capture-root R …] -- COMMAND ARGS…`, and [`RewriteAction::Unwrap`]
//! turns it back. The file is read as strictly as a protocol line (duplicate keys, invalid JSON,
//! non-UTF-8, comments and trailing commas are refused: nothing is written) and edited in place:
//! only the `command` and `args` values of the entries change, every other byte (key order,
//! spacing, escapes, other members, remote entries with a `url`) stays as it was.
//! [`rewrite_file`] writes a backup of the original bytes on the first change and replaces the
//! file atomically. `--server` selects entries ([`rewrite_selected`]); an entry wrapped with
//! other options is updated in place. [`Host`] knows where each desktop host keeps its file, and
//! [`warnings`] says what a host may fail to start.
//! The rules where SPEC is silent are in `docs/decisions.md` ("Host configurations").
#![forbid(unsafe_code)]

mod edit;
mod error;
mod file;
mod hosts;
mod launch;
mod locate;
mod rewrite;
mod warnings;

pub use error::HostConfigError;
pub use file::{FileRewrite, backup_path, inspect_file, rewrite_file};
pub use hosts::Host;
pub use launch::{Launch, LaunchEntries, launch_entries};
pub use rewrite::{
    Capture, EntryChange, EntryReport, Rewrite, RewriteAction, WrapWith, Wrapping, entry_label,
    inspect, rewrite, rewrite_selected,
};
pub use warnings::{HOST_PATH, Warning, warnings};

#[cfg(test)]
mod tests;
