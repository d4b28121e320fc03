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

use std::path::PathBuf;

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
}

/// Reads every capture under `paths` and writes the policy their closed captures show was
/// needed; `from` (an existing policy) only narrows it.
///
/// # Errors
/// As [`for_each_capture`]: a path that does not exist or is not a directory is
/// [`crate::ErrorKind::InvalidArgument`].
pub fn suggest(paths: &[PathBuf], from: Option<&Policy>) -> Result<Suggestion> {
    let mut evidence = Evidence::default();
    let mut skipped = Vec::new();
    let work = |d: &DecisionLines| Observed::of(&d.lines);
    for_each_capture(paths, &work, |v| match v.work {
        Some(o) => evidence.add(o),
        None => skipped.push(SkippedCapture::of(v.path, &v.verdict)),
    })?;
    let yaml = write::policy_yaml(&evidence, from, skipped.len() as u64);
    Ok(Suggestion {
        yaml,
        evidence,
        skipped,
    })
}

/// Writes a suggested policy to `path`: created exclusively (mode 0600; an existing file is an
/// `AlreadyExists` error), or with `replace` put in place of an existing one atomically.
///
/// # Errors
/// The I/O error of creating, writing or renaming the file.
pub fn write_policy(path: &std::path::Path, yaml: &str, replace: bool) -> std::io::Result<()> {
    if replace {
        crate::evidence::file::replace(path, yaml.as_bytes())
    } else {
        crate::evidence::file::write_new(path, yaml.as_bytes())
    }
}

#[cfg(test)]
mod tests;
