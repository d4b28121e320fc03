//! `assay mcp wrap-config (FILE | --host H) [--server NAME]…`: wraps (or unwraps) the stdio
//! servers of a host configuration. The library finds the host's file, rewrites it and says what
//! a host may fail at ([`assay::host_config`]); this prints the file first (for `--host`), the
//! warnings on stderr before anything is written, then what happened to each entry, and for
//! `--dry-run` the lines that would change. Exit status: 0 done (or nothing to do), 2 a usage
//! error, an unknown `--server`, or a file that cannot be read strictly (nothing written), 3 the
//! backup or the new file could not be written (the file is left as it was).

use std::io::Write;
use std::process::ExitCode;

use assay::host_config::{Capture, RewriteAction, WrapWith, entry_label, rewrite_file, warnings};
use assay::text;

use super::args::WrapConfigArgs;
use super::exit;
use super::messages::{Failure, eprint_assay};

fn absolute(p: &std::path::Path) -> Result<std::path::PathBuf, Failure> {
    std::path::absolute(p).map_err(|error| Failure::Io {
        what: "cannot make a path absolute",
        error,
        status: exit::USAGE,
    })
}

pub(crate) fn run(args: WrapConfigArgs) -> Result<ExitCode, Failure> {
    let action = match &args.policy {
        Some(policy) if !args.unwrap => {
            let with = WrapWith {
                assay: super::program_path::get(),
                policy: absolute(policy)?,
                capture: match (&args.capture_root, args.no_capture) {
                    (Some(root), _) => Capture::Root(absolute(root)?),
                    (None, true) => Capture::Off,
                    // Issue 41: a re-wrap keeps the evidence options it does not change.
                    (None, false) => Capture::Keep,
                },
            };
            with.check().map_err(Failure::library)?;
            RewriteAction::Wrap(with)
        }
        _ => RewriteAction::Unwrap,
    };
    let mut out = std::io::stdout().lock();
    let file = match (&args.file, args.host) {
        (Some(file), _) => file.clone(),
        (None, Some(host)) => {
            let path = host.config_path().map_err(Failure::library)?;
            // SPEC §10: the file --host stands for is printed before anything is written.
            writeln!(out, "{host}: {}", text::render(&path.display().to_string()))
                .and_then(|()| out.flush())
                .map_err(Failure::output(exit::OK))?;
            if !path.exists() {
                return Err(Failure::Invalid(format!(
                    "{} does not exist (no {host} configuration here); give the file's path instead \
                     of --host, or run `assay mcp hosts`",
                    path.display()
                )));
            }
            path
        }
        (None, None) => return Err(Failure::Invalid("give FILE or --host HOST".into())),
    };
    let user_path = std::env::var_os("PATH");
    let done = rewrite_file(&file, &action, &args.server, args.dry_run, &mut |planned| {
        for w in warnings(&planned.rewrite, &action, user_path.as_deref()) {
            // The whole line is rendered where it is printed (`eprint_assay`).
            eprint_assay(&format!("warning: {w}"));
        }
    })
    .map_err(Failure::library)?;
    let mut lines = Vec::new();
    for e in &done.rewrite.entries {
        lines.push(format!(
            "{}: {}{}",
            text::render(&entry_label(e)),
            e.change.describe(),
            if e.evidence_removed {
                "; evidence output removed (--no-capture): its sessions leave no capture"
            } else {
                ""
            }
        ));
        if args.dry_run && !e.before.is_empty() {
            lines.extend(e.before.lines().map(|l| format!("  - {}", text::render(l))));
            lines.extend(e.after.lines().map(|l| format!("  + {}", text::render(l))));
        }
    }
    let file = text::render(&done.path.display().to_string());
    lines.push(match (&done.backup, args.dry_run) {
        (_, true) => format!("dry run: {file} was not written"),
        (Some(backup), _) => format!(
            "wrote {file} (the original is in {}{})",
            text::render(&backup.display().to_string()),
            if done.backup_is_new {
                ""
            } else {
                ", kept from the first change"
            }
        ),
        (None, _) => format!("nothing to change in {file}; it was not written"),
    });
    writeln!(out, "{}", lines.join("\n"))
        .and_then(|()| out.flush())
        .map_err(Failure::output(exit::OK))?;
    Ok(exit::code(exit::OK))
}
