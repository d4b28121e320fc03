//! `assay policy suggest CAPTURE_OR_ROOT… [--out FILE [--update]] [--from POLICY]` (SPEC §10):
//! the least-privilege policy the library derives from closed captures
//! ([`assay::suggest::suggest`]), on stdout or in FILE; the captures skipped on stderr.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use assay::config::load_policy;
use assay::suggest::{pins_path, suggest, write_suggestion};

use super::exit;
use super::messages::{Failure, eprint_assay};

/// Suggests a policy; exit 0 written, 3 no closed capture was found (nothing is written), 2
/// usage (a path that is not a directory, an invalid `--from`, an existing FILE without
/// `--update`).
pub(crate) fn run(
    captures: &[PathBuf],
    out: Option<&Path>,
    update: bool,
    from: Option<&Path>,
) -> Result<ExitCode, Failure> {
    let from = match from {
        Some(f) => Some(load_policy(f).map_err(Failure::library)?),
        None => None,
    };
    // A policy names its pins file relative to itself; a name that is not UTF-8 cannot be
    // written into the policy, so it gets no pins.
    let pins_file = out.and_then(|o| {
        let p = pins_path(o);
        p.file_name().and_then(|n| n.to_str()).map(str::to_owned)
    });
    let s = suggest(captures, from.as_ref(), pins_file.as_deref()).map_err(Failure::library)?;
    for k in &s.skipped {
        eprint_assay(&format!(
            "skipped {} ({}{}{}): not closed",
            k.capture,
            k.closure,
            if k.reasons.is_empty() { "" } else { ": " },
            k.reasons.join(", ")
        ));
    }
    if s.evidence.captures == 0 {
        return Err(Failure::message(
            "no closed capture was found; nothing to suggest from",
            exit::FAILURE,
        ));
    }
    match out {
        None => {
            let mut o = std::io::stdout().lock();
            o.write_all(s.yaml.as_bytes())
                .and_then(|()| o.flush())
                .map_err(Failure::output(exit::FAILURE))?;
        }
        Some(path) => write_suggestion(path, &s, update).map_err(|error| {
            let status = if error.kind() == std::io::ErrorKind::AlreadyExists {
                exit::USAGE
            } else {
                exit::FAILURE
            };
            Failure::Io {
                what: if status == exit::USAGE {
                    "the output exists (use --update to replace it)"
                } else {
                    "cannot write the policy"
                },
                error,
                status,
            }
        })?,
    }
    Ok(exit::code(exit::OK))
}
