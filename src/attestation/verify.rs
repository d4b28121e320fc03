//! Verifying a signed capture (`assay capture verify`, SPEC §4.5): the envelope read strictly,
//! a signature by one of the given keys over the DSSE PAE, the statement read strictly, every
//! subject's digest, no file missing or added, the session the attestation names, and then the
//! reader's verdict (SPEC §7).
//!
//! A package directory (`capture package`) holds one file the attestation cannot name, its
//! `manifest.json` (written after signing): it is accepted only when it is a package manifest
//! whose file list is exactly the capture's files, digests included.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::envelope::{Envelope, PAYLOAD_TYPE, pae};
use super::key::PublicKey;
use super::statement::{Predicate, Statement};
use super::subjects::{Subject, digest_at, entry_names, open_dir};
use crate::capture::{Closure, MAX_COMPANION_BYTES, PACKAGE_SCHEMA, read_capture};
use crate::capture_files::{ATTESTATION, MANIFEST};
use crate::input_file;

/// One reason a capture does not verify, naming the file at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// The attestation is missing, unreadable, or not a strict DSSE envelope of an in-toto
    /// Statement of this predicate type.
    #[error("{ATTESTATION}: {0}")]
    Attestation(String),
    /// No signature is by one of the given keys.
    #[error(
        "{ATTESTATION}: signed by key {signed}, which is none of the given public keys ({given})"
    )]
    UnknownKey {
        /// The key ids the envelope's signatures name.
        signed: String,
        /// The key ids of the given keys.
        given: String,
    },
    /// A signature by a given key does not verify.
    #[error(
        "{ATTESTATION}: the signature by key {keyid} does not verify: the attestation was altered after signing"
    )]
    BadSignature {
        /// The key id.
        keyid: String,
    },
    /// A file's digest is not the signed one.
    #[error(
        "{name}: its SHA-256 is {actual}, the attestation signed {signed}: changed after signing"
    )]
    Digest {
        /// The file.
        name: String,
        /// The digest signed.
        signed: String,
        /// The digest of the file now.
        actual: String,
    },
    /// A signed file is missing.
    #[error("{name}: signed, but missing from the capture: removed after signing")]
    Missing {
        /// The file.
        name: String,
    },
    /// A file the attestation does not name.
    #[error("{name}: in the capture but not signed: added after signing")]
    Added {
        /// The file.
        name: String,
    },
    /// A file that cannot be read (not a regular file, too large, an I/O error).
    #[error("{name}: {why}")]
    Unreadable {
        /// The file.
        name: String,
        /// What went wrong.
        why: String,
    },
    /// The attestation names another session than the capture's.
    #[error(
        "{ATTESTATION}: signed for session {signed}, but the capture is session {capture}: an attestation of another capture"
    )]
    OtherSession {
        /// The session the predicate names.
        signed: String,
        /// The session of the capture's files.
        capture: String,
    },
}

/// Why a capture did not verify: every mismatch found (at least one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the capture does not verify: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct Unverified(pub Vec<Mismatch>);

/// A capture whose attestation verified.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Verified {
    /// The key id of the key whose signature verified.
    pub keyid: String,
    /// Every signed file, in the statement's order.
    pub subjects: Vec<Subject>,
    /// What the producer vouched for.
    pub predicate: Predicate,
    /// The reader's verdict on the capture now (SPEC §7).
    pub closure: Closure,
}

/// Verifies the signed capture `dir` against `keys` (SPEC §4.5).
///
/// # Errors
/// [`Unverified`] with every [`Mismatch`] found: an envelope problem stops at once; the files'
/// problems are all reported.
pub fn verify_capture(dir: &Path, keys: &[PublicKey]) -> Result<Verified, Unverified> {
    let single = |m: Mismatch| Unverified(vec![m]);
    let fd = open_dir(dir).map_err(|e| single(Mismatch::Attestation(e.to_string())))?;
    let bytes = input_file::open_regular_at(&fd, ATTESTATION, MAX_COMPANION_BYTES)
        .and_then(|(f, size)| input_file::read_opened(f, size, MAX_COMPANION_BYTES))
        .map_err(|e| {
            let why = match e {
                input_file::BoundedError::Missing => {
                    "missing: the capture is not signed".to_string()
                }
                other => other.describe(MAX_COMPANION_BYTES),
            };
            single(Mismatch::Attestation(why))
        })?;
    let opened = Envelope::open(&bytes).map_err(|e| single(Mismatch::Attestation(e)))?;
    let keyid = check_signature(&opened.payload, &opened.signatures, keys).map_err(single)?;
    let (subjects, predicate) =
        Statement::read(&opened.payload).map_err(|e| single(Mismatch::Attestation(e)))?;

    let mut mismatches = Vec::new();
    let names = match entry_names(dir) {
        Ok(names) => names,
        Err(e) => return Err(single(Mismatch::Attestation(e.to_string()))),
    };
    let signed: BTreeMap<&str, &str> = subjects
        .iter()
        .map(|s| (s.name.as_str(), s.sha256.as_str()))
        .collect();
    for name in &names {
        if signed.contains_key(name.as_str()) {
            continue;
        }
        if name == MANIFEST {
            continue;
        }
        mismatches.push(Mismatch::Added {
            name: crate::text::render(name),
        });
    }
    for s in &subjects {
        if !names.contains(&s.name) {
            mismatches.push(Mismatch::Missing {
                name: crate::text::render(&s.name),
            });
            continue;
        }
        match digest_at(&fd, &s.name) {
            Ok(actual) if actual == s.sha256 => {}
            Ok(actual) => mismatches.push(Mismatch::Digest {
                name: crate::text::render(&s.name),
                signed: s.sha256.clone(),
                actual,
            }),
            Err(e) => mismatches.push(Mismatch::Unreadable {
                name: e.what,
                why: e.why,
            }),
        }
    }
    if names.iter().any(|n| n == MANIFEST) && !signed.contains_key(MANIFEST) {
        if let Err(m) = check_manifest(&fd, &subjects, &bytes) {
            mismatches.push(m);
        }
    }
    let closure = read_capture(dir);
    if let Some(capture) = &closure.session_id {
        if *capture != predicate.session_id {
            mismatches.push(Mismatch::OtherSession {
                signed: crate::text::render(&predicate.session_id),
                capture: capture.clone(),
            });
        }
    }
    if !mismatches.is_empty() {
        return Err(Unverified(mismatches));
    }
    Ok(Verified {
        keyid,
        subjects,
        predicate,
        closure,
    })
}

/// The key id of a signature over the payload's PAE by one of `keys`.
fn check_signature(
    payload: &[u8],
    signatures: &[(String, Vec<u8>)],
    keys: &[PublicKey],
) -> Result<String, Mismatch> {
    let message = pae(PAYLOAD_TYPE, payload);
    let mut bad = None;
    for (keyid, sig) in signatures {
        for key in keys.iter().filter(|k| k.keyid() == keyid) {
            if key.verifies(&message, sig) {
                return Ok(key.keyid().to_string());
            }
            bad = Some(key.keyid().to_string());
        }
    }
    if let Some(keyid) = bad {
        return Err(Mismatch::BadSignature { keyid });
    }
    let list = |ids: Vec<&str>| match ids.is_empty() {
        true => "none".to_string(),
        false => ids.join(", "),
    };
    Err(Mismatch::UnknownKey {
        // Key ids the envelope names are a file's bytes: through the one text renderer.
        signed: crate::text::render(&list(signatures.iter().map(|(k, _)| k.as_str()).collect())),
        given: list(keys.iter().map(PublicKey::keyid).collect()),
    })
}

/// A package's manifest, as far as verification reads it.
#[derive(Deserialize)]
struct Manifest {
    schema: String,
    files: Vec<ManifestFile>,
}

#[derive(Deserialize)]
struct ManifestFile {
    name: String,
    sha256: String,
}

/// A `manifest.json` beside a signed capture: a package manifest naming exactly the signed files
/// and the attestation, each with the digest it has.
fn check_manifest(
    fd: &std::os::fd::OwnedFd,
    subjects: &[Subject],
    attestation: &[u8],
) -> Result<(), Mismatch> {
    let not_package = |why: &str| Mismatch::Added {
        name: format!("{MANIFEST} ({why})"),
    };
    let bytes = input_file::open_regular_at(fd, MANIFEST, 8 * MAX_COMPANION_BYTES)
        .and_then(|(f, size)| input_file::read_opened(f, size, 8 * MAX_COMPANION_BYTES))
        .map_err(|e| not_package(&e.describe(8 * MAX_COMPANION_BYTES)))?;
    crate::strict_json::scan(&bytes, 32).map_err(|_| not_package("not strict JSON"))?;
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|_| not_package("not a package manifest"))?;
    if manifest.schema != PACKAGE_SCHEMA {
        return Err(not_package("not a package manifest"));
    }
    let mut expected: BTreeMap<String, String> = subjects
        .iter()
        .map(|s| (s.name.clone(), s.sha256.clone()))
        .collect();
    expected.insert(
        ATTESTATION.to_string(),
        crate::sha256::digest_hex(attestation),
    );
    let listed: BTreeMap<String, String> = manifest
        .files
        .into_iter()
        .map(|f| (f.name, f.sha256))
        .collect();
    if listed != expected {
        return Err(not_package(
            "its file list is not the signed files and the attestation",
        ));
    }
    Ok(())
}
