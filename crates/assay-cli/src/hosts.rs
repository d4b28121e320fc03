//! `assay mcp hosts` (SPEC §10): the host configurations found on this machine (the table of
//! [`assay::host_config::Host`], from `$HOME` and `$XDG_CONFIG_HOME`), each server entry, and
//! whether it runs through `assay mcp wrap` (with which policy and capture root). Everything
//! read from a file is printed through the one renderer ([`assay::text::render`]). Exit status 0; a file that
//! cannot be read is shown with the reason and makes the status 2 (as `wrap-config` would refuse
//! it).

use std::io::Write;
use std::process::ExitCode;

use assay::host_config::{EntryChange, EntryReport, Host, entry_label, inspect_file};
use assay::text;

use super::exit;
use super::messages::Failure;
use super::text::Table;

/// The status column and the detail of one entry.
fn describe(e: &EntryReport) -> (String, String) {
    let line = |server: &Option<Vec<String>>| {
        server
            .as_ref()
            .map(|s| {
                s.iter()
                    .map(|a| text::render(a))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    };
    match (&e.wrapping, e.change) {
        (_, EntryChange::Remote) => ("remote".into(), "not a stdio server: not wrapped".into()),
        (_, EntryChange::NoCommand) => ("no command".into(), String::new()),
        (Some(w), _) => {
            let mut detail = format!(
                "policy {}",
                w.policy
                    .as_deref()
                    .map_or_else(|| "assay.yaml (default)".to_string(), text::render)
            );
            if let Some(root) = &w.capture_root {
                detail.push_str(&format!(", capture root {}", text::render(root)));
            }
            detail.push_str(&format!(": {}", line(&e.server)));
            ("wrapped".into(), detail)
        }
        (None, _) => ("not wrapped".into(), line(&e.server)),
    }
}

pub(crate) fn run() -> Result<ExitCode, Failure> {
    let mut out = Vec::new();
    let mut missing = Vec::new();
    let mut status = exit::OK;
    for host in Host::ALL {
        let path = host.config_path().map_err(Failure::library)?;
        let shown = text::render(&path.display().to_string());
        if !path.exists() {
            missing.push(format!("{host} ({shown})"));
            continue;
        }
        out.push(format!("{host}: {shown}"));
        match inspect_file(&path) {
            Ok((_, entries)) if entries.is_empty() => out.push("  (no servers)".into()),
            Ok((_, entries)) => {
                let mut table = Table::new(&["SERVER", "STATUS", "DETAIL"]);
                for e in &entries {
                    let (state, detail) = describe(e);
                    table.row(vec![text::render(&entry_label(e)), state, detail]);
                }
                out.extend(table.lines("  "));
            }
            Err(e) => {
                status = exit::USAGE;
                out.push(format!(
                    "  cannot be read: {}",
                    text::render(&e.to_string())
                ));
            }
        }
    }
    if out.is_empty() {
        out.push("no host configuration found".into());
    }
    if !missing.is_empty() {
        out.push(format!("not found: {}", missing.join(", ")));
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", out.join("\n"))
        .and_then(|()| stdout.flush())
        .map_err(Failure::output(status))?;
    Ok(exit::code(status))
}
