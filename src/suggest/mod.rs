//! `assay policy suggest` (SPEC §10): the least-privilege policy that allows exactly what closed
//! captures show was used — the tools called (allowed), the resources read, the prompts got, the
//! client features the server was allowed to use, limits from the largest per-session counts with
//! [`HEADROOM`] — each rule with its evidence as a YAML comment; what was listed but never
//! called, refused when recorded, or refused by the `--from` policy is left out and named.
//!
//! Captures are read as `assay policy replay` reads them ([`crate::capture::for_each_capture`]:
//! in parallel, closed ones only); each worker reduces its capture to counts per name
//! ([`Observed`]), so memory grows with the distinct names, not with the captures.
#![forbid(unsafe_code)]

mod generalize;
mod observe;
mod write;

use std::path::{Path, PathBuf};

pub use observe::{Evidence, Observed, Seen, Uses};
pub use write::HEADROOM;

use crate::capture::{DecisionLines, for_each_capture};
use crate::error::Result;
use crate::policy::Policy;
use crate::replay::SkippedCapture;

/// A suggested policy and what it was made from.
#[derive(Debug, Clone)]
pub struct Suggestion {
    /// The policy, YAML.
    pub yaml: String,
    /// What the closed captures showed.
    pub evidence: Evidence,
    /// The captures left out (not closed).
    pub skipped: Vec<SkippedCapture>,
    /// The pins file the policy names (`pins:`), when it pins its tools: its bytes
    /// (`assay.pins.v1`), to be written at [`pins_path`] of the policy's path.
    pub pins: Option<Vec<u8>>,
}

/// Reads every capture under `paths` and writes the policy their closed captures show was
/// needed; `from` (an existing policy) only narrows it. `pins_file` is the name the policy
/// gives its pins file (relative to the policy, see [`pins_path`]) when the policy will be
/// written to a file: the policy then pins every allowed tool when the captures kept one agreed
/// definition of each (`record_definitions`), and [`Suggestion::pins`] holds the file.
///
/// # Errors
/// As [`for_each_capture`]: a path that does not exist or is not a directory is
/// [`crate::ErrorKind::InvalidArgument`].
pub fn suggest(
    paths: &[PathBuf],
    from: Option<&Policy>,
    pins_file: Option<&str>,
) -> Result<Suggestion> {
    let mut evidence = Evidence::default();
    let mut skipped = Vec::new();
    let work = |dir: &std::path::Path, d: &DecisionLines| Observed::of(dir, &d.lines);
    for_each_capture(paths, &work, |v| match v.work {
        Some(o) => evidence.add(o),
        None => skipped.push(SkippedCapture::of(v.path, &v.verdict)),
    })?;
    let skipped_n = skipped.len() as u64;
    let (mut yaml, pin_set) = write::policy_yaml(&evidence, from, skipped_n, pins_file);
    let now = crate::evidence::event::now_rfc3339();
    // Instructions are left unjudged: a capture does not keep the server's text.
    let pins = pin_set.and_then(|set| crate::pins_file::file::render(&set, None, None, &now).ok());
    if pins.is_none() && pins_file.is_some() {
        // No pins file (none to write, or one that cannot be written): a policy naming none.
        yaml = write::policy_yaml(&evidence, from, skipped_n, None).0;
    }
    Ok(Suggestion {
        yaml,
        evidence,
        skipped,
        pins,
    })
}

/// Where the pins file of a policy written to `policy` goes: beside it, named after it
/// (`least.yaml` → `least.pins.json`).
pub fn pins_path(policy: &Path) -> PathBuf {
    let stem = policy
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "policy".to_owned());
    policy.with_file_name(format!("{stem}.pins.json"))
}

/// Writes a suggestion to `policy` and, when it pins its tools, its pins file at
/// [`pins_path`]: each created exclusively (mode 0600; an existing file is an `AlreadyExists`
/// error and nothing is written), or with `replace` put in place of an existing one atomically.
/// The pins file is written first, so the policy never names a file that is not there.
///
/// # Errors
/// The I/O error of creating, writing or renaming a file.
pub fn write_suggestion(policy: &Path, s: &Suggestion, replace: bool) -> std::io::Result<()> {
    let pins = s.pins.as_ref().map(|bytes| (pins_path(policy), bytes));
    if !replace {
        for path in std::iter::once(policy).chain(pins.iter().map(|(p, _)| p.as_path())) {
            if std::fs::symlink_metadata(path).is_ok() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!("{} exists", path.display()),
                ));
            }
        }
    }
    if let Some((path, bytes)) = &pins {
        write_file(path, bytes, replace)?;
    }
    write_file(policy, s.yaml.as_bytes(), replace)
}

fn write_file(path: &Path, bytes: &[u8], replace: bool) -> std::io::Result<()> {
    if replace {
        crate::evidence::file::replace(path, bytes)
    } else {
        crate::evidence::file::write_new(path, bytes)
    }
}

#[cfg(test)]
mod tests;
