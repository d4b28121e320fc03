//! `assay keygen` and `assay capture verify`: the key pair a session signs its capture with,
//! and the check of a signed capture (SPEC §4.5). Every decision is the library's
//! (`assay::attestation`); this module prints, for people, through the one text renderer.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use assay::attestation::{PublicKey, generate_key_pair, verify_capture};
use assay::text::render;

use super::exit;
use super::messages::{Failure, eprint_assay};

/// Writes the key pair and prints the two paths and the key id.
pub(crate) fn keygen(out: &Path) -> Result<ExitCode, Failure> {
    let files = generate_key_pair(out).map_err(|e| Failure::message(e.to_string(), exit::USAGE))?;
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "private key: {}\npublic key: {}\nkey id: {}",
        render(&files.private.display().to_string()),
        render(&files.public.display().to_string()),
        files.keyid
    )
    .and_then(|()| stdout.flush())
    .map_err(Failure::output(exit::OK))?;
    Ok(exit::code(exit::OK))
}

/// Verifies `dir` against the keys: what verified (or every mismatch, on stderr), then the
/// verdict; exit 0 verified and closed, 1 verified and not closed, 4 a mismatch, 2 usage.
pub(crate) fn verify(dir: &Path, keys: &[PathBuf]) -> Result<ExitCode, Failure> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(Failure::Invalid(format!(
                "not a capture directory: {} is not a directory",
                dir.display()
            )));
        }
        Err(e) => {
            return Err(Failure::Invalid(format!(
                "missing capture directory: {}: {e}",
                dir.display()
            )));
        }
    }
    let keys = keys
        .iter()
        .map(|k| PublicKey::load(k).map_err(|e| Failure::Invalid(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    let verified = match verify_capture(dir, &keys) {
        Ok(v) => v,
        Err(unverified) => {
            for m in &unverified.0 {
                eprint_assay(&format!("capture verify: {m}"));
            }
            eprint_assay(&format!(
                "capture verify: {} does not verify",
                dir.display()
            ));
            return Ok(exit::code(exit::UNVERIFIED));
        }
    };
    let closure = &verified.closure;
    let mut lines = vec![
        format!(
            "verified: {}: signed by key {}",
            render(&dir.display().to_string()),
            verified.keyid
        ),
        format!(
            "files: {} signed, each with its signed SHA-256, none missing or added",
            verified.subjects.len()
        ),
        format!("session: {}", render(&verified.predicate.session_id)),
        format!("closure: {}", closure.closure.as_str()),
    ];
    for r in &closure.reasons {
        lines.push(format!("  {}: {}", r.code.as_str(), render(&r.detail)));
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", lines.join("\n"))
        .and_then(|()| stdout.flush())
        .map_err(Failure::output(exit::FAILURE))?;
    let status = match closure.closure {
        assay::ClosureKind::Closed => exit::OK,
        _ => exit::INCOMPLETE,
    };
    Ok(exit::code(status))
}
