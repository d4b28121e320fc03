//! `assay mcp wrap-config FILE`: wraps (or unwraps) every stdio server of a host configuration.
//! The library rewrites the file ([`assay::host_config`]); this prints what happened to each
//! entry, and for `--dry-run` the lines that would change. Exit status: 0 done (or nothing to
//! do), 2 a usage error or a file that cannot be read strictly (nothing written), 3 the backup
//! or the new file could not be written (the file is left as it was).

use std::io::Write;
use std::process::ExitCode;

use assay::host_config::{RewriteAction, WrapWith, entry_label, rewrite_file};

use super::args::WrapConfigArgs;
use super::messages::{Failure, exit};
use super::text::clean;

fn absolute(p: &std::path::Path) -> Result<std::path::PathBuf, Failure> {
    std::path::absolute(p).map_err(|error| Failure::Io {
        what: "cannot make a path absolute",
        error,
        status: 2,
    })
}

pub(crate) fn run(args: WrapConfigArgs) -> Result<ExitCode, Failure> {
    let action = match &args.policy {
        Some(policy) if !args.unwrap => {
            let with = WrapWith {
                assay: super::program_path::get().map_err(|error| Failure::Io {
                    what: "cannot find the path of this assay program",
                    error,
                    status: 3,
                })?,
                policy: absolute(policy)?,
                capture_root: args.capture_root.as_deref().map(absolute).transpose()?,
            };
            with.check().map_err(Failure::library)?;
            RewriteAction::Wrap(with)
        }
        _ => RewriteAction::Unwrap,
    };
    let done = rewrite_file(&args.file, &action, args.dry_run).map_err(Failure::library)?;
    let mut lines = Vec::new();
    for e in &done.rewrite.entries {
        lines.push(format!(
            "{}: {}",
            clean(&entry_label(e)),
            e.change.describe()
        ));
        if args.dry_run && !e.before.is_empty() {
            lines.extend(e.before.lines().map(|l| format!("  - {}", clean(l))));
            lines.extend(e.after.lines().map(|l| format!("  + {}", clean(l))));
        }
    }
    let file = clean(&done.path.display().to_string());
    lines.push(match (&done.backup, args.dry_run, done.rewrite.changed()) {
        (_, true, _) => format!("dry run: {file} was not written"),
        (Some(backup), _, _) => format!(
            "wrote {file} (the original is in {})",
            clean(&backup.display().to_string())
        ),
        (None, _, _) => format!("nothing to change in {file}; it was not written"),
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", lines.join("\n"))
        .and_then(|()| out.flush())
        .map_err(Failure::output(0))?;
    Ok(exit(0))
}
