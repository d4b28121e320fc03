//! `assay mcp pin` (SPEC §10, §5.1): list a live server's tools as an MCP client would, then
//! write pins for them (`--out`) or check them against pins (`--check`).
//!
//! Exit statuses: `0` written, or every listed tool matches its pin and the names are the same
//! set; `1` (`--check`) something was added, removed or changed; `2` usage error (an existing
//! PINS without `--update`, an invalid pins file for `--check`); `3` the server could not be
//! listed (it failed to start, answered an error, timed out, or sent what the strict rules refuse).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use assay::pins::{self, Pins, ToolListing, WriteMode};
use assay::text;

use super::args::PinArgs;
use super::exit;
use super::messages::{Failure, eprint_assay};

pub(crate) fn run(args: PinArgs) -> Result<ExitCode, Failure> {
    // As `mcp wrap` (SPEC §3 item 9): a server's daemonized descendants end with it.
    let _ = assay::become_subreaper();
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(Failure::message(
            "--timeout must be a positive number of seconds",
            exit::USAGE,
        ));
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    // Everything that can be refused is refused before the server starts.
    let pins = match &args.check {
        Some(path) => {
            Some(Pins::load(path).map_err(|e| Failure::message(e.to_string(), exit::USAGE))?)
        }
        None => None,
    };
    if let Some(out) = &args.out {
        if !args.update && std::fs::symlink_metadata(out).is_ok() {
            return Err(Failure::message(
                format!("{} exists; give --update to replace it", out.display()),
                exit::USAGE,
            ));
        }
    }
    let capabilities = match args.client_capabilities {
        super::args::ClientCapabilities::Host => pins::ClientCapabilities::Host,
        super::args::ClientCapabilities::None => pins::ClientCapabilities::None,
    };
    // A starter policy also holds the server's resources and prompts (SPEC §5.2).
    let list = if args.policy_template {
        pins::list_server_catalog_as
    } else {
        pins::list_server_tools_as
    };
    let listing = list(&args.command, timeout, None, capabilities).map_err(|e| {
        Failure::message(
            format!("cannot list the server's tools: {e}"),
            exit::FAILURE,
        )
    })?;
    match (&args.out, pins) {
        (Some(out), _) => write(&args, out, &listing),
        (None, Some(pins)) => check(&listing, &pins),
        (None, None) => Err(Failure::message(
            "give --out PINS or --check PINS",
            exit::USAGE,
        )),
    }
}

fn write(args: &PinArgs, out: &Path, listing: &ToolListing) -> Result<ExitCode, Failure> {
    let mode = if args.update {
        WriteMode::Replace
    } else {
        WriteMode::New
    };
    pins::write_pins(listing, out, mode).map_err(|e| {
        let status = if e.kind() == std::io::ErrorKind::AlreadyExists {
            exit::USAGE
        } else {
            exit::FAILURE
        };
        Failure::message(format!("cannot write {}: {e}", out.display()), status)
    })?;
    let mut table = String::new();
    for t in &listing.tools {
        table.push_str(&format!(
            "{:<32} {}  {}\n",
            text::render(&t.name),
            &t.sha256()[..12],
            text::render(&t.summary())
        ));
    }
    table.push_str(&format!(
        "pinned {} tool(s) of {} (protocol {}) in {}\n",
        listing.tools.len(),
        text::render(&server_name(listing)),
        text::render(&listing.protocol_version),
        text::render(&out.display().to_string())
    ));
    if args.policy_template {
        // stdout is the policy; the table is for the person running the command.
        let _ = std::io::stderr().write_all(table.as_bytes());
        let policy = pins::policy_template(listing, &out.display().to_string());
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(policy.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(Failure::output(exit::FAILURE))?;
    } else {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(table.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(Failure::output(exit::FAILURE))?;
    }
    Ok(exit::code(exit::OK))
}

fn check(listing: &ToolListing, pins: &Pins) -> Result<ExitCode, Failure> {
    let c = pins::check(listing, pins);
    let mut text = String::new();
    for name in &c.added {
        text.push_str(&format!(
            "+ {}: listed but not pinned\n",
            text::render(name)
        ));
    }
    for name in &c.removed {
        text.push_str(&format!(
            "- {}: pinned but not listed\n",
            text::render(name)
        ));
    }
    for t in &c.changed {
        text.push_str(&format!(
            "~ {}: definition changed (pinned {}…, listed {}…)\n",
            text::render(&t.name),
            &t.pinned_sha256[..12],
            &t.listed_sha256[..12],
        ));
        // The diff's lines are the server's text: each is rendered on its own line.
        for line in t.diff.split('\n').filter(|l| !l.is_empty()) {
            text.push_str(&text::render(line));
            text.push('\n');
        }
    }
    if let Some(diff) = &c.instructions {
        text.push_str("~ (instructions): the server's instructions changed\n");
        for line in diff.split('\n').filter(|l| !l.is_empty()) {
            text.push_str(&text::render(line));
            text.push('\n');
        }
    }
    text.push_str(&format!(
        "{} of {} listed tool(s) match their pins; {} added, {} removed, {} changed ({})\n",
        c.matching.len(),
        listing.tools.len(),
        c.added.len(),
        c.removed.len(),
        c.changed.len(),
        text::render(&pins.path().display().to_string())
    ));
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(Failure::output(exit::FAILURE))?;
    if c.clean() {
        Ok(exit::code(exit::OK))
    } else {
        eprint_assay("the server's tools differ from the pins");
        Ok(exit::code(exit::INCOMPLETE))
    }
}

fn server_name(listing: &ToolListing) -> String {
    listing
        .server_info
        .as_deref()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
        .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_string))
        .unwrap_or_else(|| "the server".into())
}
