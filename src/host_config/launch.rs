//! How a host starts each stdio entry of its configuration (`assay mcp doctor`, SPEC §10): the
//! entry's `command`, `args`, `env` and `cwd` exactly as the file gives them. The file is read
//! once, by the one opener, and as strictly as [`inspect_file`](super::inspect_file) reads it;
//! nothing is written.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::file::{read_config, resolve};
use super::rewrite::{EntryReport, inspect};
use crate::error::{Error, Result};

/// A stdio entry as its host starts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The `command` member.
    pub command: String,
    /// The `args` member (empty when absent).
    pub args: Vec<String>,
    /// The `env` member's string values, in name order.
    pub env: Vec<(String, String)>,
    /// The `cwd` member, when it is a string.
    pub cwd: Option<String>,
    /// What of the entry a host cannot use as written: an `env` value that is not a string, a
    /// `cwd` that is not a string.
    pub problems: Vec<String>,
}

/// The entries of a host configuration, each with how its host starts it (`None`: not a stdio
/// entry).
pub type LaunchEntries = Vec<(EntryReport, Option<Launch>)>;

/// Every entry of the host configuration `path` (see [`inspect`]) with, for each stdio entry,
/// how its host starts it. Returns the file read (a symlink's target) too.
///
/// # Errors
/// As [`inspect_file`](super::inspect_file).
pub fn launch_entries(path: &Path) -> Result<(PathBuf, LaunchEntries)> {
    let real = resolve(path)?;
    let (bytes, _) = read_config(&real)?;
    let invalid = |e: String| Error::invalid_argument(format!("{}: {e}", path.display()));
    let entries = inspect(&bytes).map_err(|e| invalid(e.to_string()))?;
    let text = std::str::from_utf8(&bytes).map_err(|e| invalid(e.to_string()))?;
    let root = crate::strict_json::parse_value(text).map_err(|e| invalid(e.to_string()))?;
    let out = entries
        .into_iter()
        .map(|report| {
            let launch = entry_value(&root, &report).and_then(launch_of);
            (report, launch)
        })
        .collect();
    Ok((real, out))
}

/// The entry object `report` describes.
fn entry_value<'a>(root: &'a Value, report: &EntryReport) -> Option<&'a Value> {
    let holder = match &report.project {
        Some(p) => root.get("projects")?.get(p)?,
        None => root,
    };
    holder.get(report.section)?.get(&report.name)
}

fn launch_of(entry: &Value) -> Option<Launch> {
    let command = entry.get("command")?.as_str()?.to_string();
    let args = match entry.get("args") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()?,
        _ => Vec::new(),
    };
    let mut problems = Vec::new();
    let mut env = Vec::new();
    match entry.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                match v.as_str() {
                    Some(s) => env.push((k.clone(), s.to_string())),
                    None => problems.push(format!("`env.{k}` is not a string")),
                }
            }
        }
        Some(_) => problems.push("`env` is not an object".to_string()),
    }
    env.sort();
    let cwd = match entry.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            problems.push("`cwd` is not a string".to_string());
            None
        }
    };
    Some(Launch {
        command,
        args,
        env,
        cwd,
        problems,
    })
}
