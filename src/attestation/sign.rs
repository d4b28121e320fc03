//! Signing a capture at stop (SPEC §4.5): after the stop record is written, the reader judges the
//! capture (hashing the files it reads whole), every other file of the capture is hashed, and
//! `attestation.dsse.json` is created exclusively (mode 0600) relative to the capture directory
//! opened once.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::envelope::Envelope;
use super::key::SigningKey;
use super::statement::{Predicate, SignedProducer, SignedReason, SignedVerdict, Statement};
use super::subjects::{SubjectError, collect};
use crate::capture::LogFollower;
use crate::capture_files::ATTESTATION;

/// Why a capture was not signed. The capture itself is unchanged by a failure (its verdict
/// never depends on the attestation).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    /// A file of the capture could not be listed or hashed.
    #[error("cannot sign the capture: {0}")]
    Subjects(#[from] SubjectError),
    /// The attestation could not be created or written (it exists already, or the disk is full).
    #[error("cannot write {path}: {source}")]
    Write {
        /// The attestation's path.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The statement could not be serialized.
    #[error("cannot sign the capture: {0}")]
    Encode(String),
}

/// What the session knows that the attestation's predicate carries besides the verdict.
pub(crate) struct SessionClaims<'a> {
    /// The session id.
    pub session_id: &'a str,
    /// SHA-256 of the policy file.
    pub policy_sha256: &'a str,
}

/// Signs the capture directory `dir` with `key`; returns the attestation's path. `follower`:
/// the capture's decision log as followed while the session wrote it (then the reader's verdict
/// is taken with its pass over the log, and reads only the log's tail).
pub(crate) fn sign_capture(
    dir: &Path,
    key: &SigningKey,
    claims: &SessionClaims<'_>,
    follower: Option<LogFollower>,
) -> Result<PathBuf, SignError> {
    let path = dir.join(ATTESTATION);
    // The reader reads (and hashes) the capture's own files whole: their digests are reused,
    // so signing reads each file once.
    let closure = match follower {
        Some(f) if f.dir() == dir => f.finish().0,
        _ => crate::capture::read_capture(dir),
    };
    let (fd, subjects) = collect(dir, |name| {
        closure.files.get(name).map(|f| f.sha256.clone())
    })?;
    let predicate = Predicate {
        session_id: claims.session_id.to_string(),
        verdict: SignedVerdict {
            closure: closure.closure.as_str().to_string(),
            reasons: closure
                .reasons
                .iter()
                .map(|r| SignedReason {
                    code: r.code.as_str().to_string(),
                    detail: r.detail.clone(),
                })
                .collect(),
        },
        policy_sha256: claims.policy_sha256.to_string(),
        producer: SignedProducer {
            name: crate::evidence::event::PRODUCER.name.to_string(),
            version: crate::evidence::event::PRODUCER.version.to_string(),
        },
    };
    let payload = serde_json::to_vec(&Statement::new(&subjects, predicate))
        .map_err(|e| SignError::Encode(e.to_string()))?;
    let envelope = Envelope::seal(&payload, key.keyid(), |pae| key.sign(pae));
    let mut text = serde_json::to_vec(&envelope).map_err(|e| SignError::Encode(e.to_string()))?;
    text.push(b'\n');
    let write_error = |source| SignError::Write {
        path: path.clone(),
        source,
    };
    let mut file = crate::evidence::file::create_new_at(&fd, ATTESTATION).map_err(write_error)?;
    file.write_all(&text).map_err(write_error)?;
    Ok(path)
}
