//! The subjects of a signed capture: every file of the capture directory but the attestation,
//! listed by name and hashed (SHA-256) through the one file opener, relative to the directory
//! opened once without following a link. The signer and the verifier share this module, so both
//! read a capture the same way and under the same bounds.

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;

use nix::fcntl::{OFlag, open};
use nix::sys::stat::Mode;

use crate::capture_files::ATTESTATION;
use crate::input_file;
use crate::sha256::Sha256;

/// Most files a signed capture holds besides its attestation (a capture has at most seven of
/// its own, SPEC §7; a package adds its manifest).
pub const MAX_SUBJECTS: usize = 64;

/// Largest file hashed as a subject (the child's stderr log has no bound of its own).
pub const MAX_SUBJECT_BYTES: u64 = 1 << 30;

/// A file of the capture and its digest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Subject {
    /// The file's name inside the capture directory.
    pub name: String,
    /// Its lowercase hex SHA-256.
    pub sha256: String,
}

/// Why the capture's files could not be listed or hashed: the file (or the directory) and what
/// went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {why}")]
pub struct SubjectError {
    /// The file or directory at fault.
    pub what: String,
    /// What went wrong with it.
    pub why: String,
}

/// The capture directory, opened once (no final symlink).
pub(crate) fn open_dir(dir: &Path) -> Result<OwnedFd, SubjectError> {
    open(
        dir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| SubjectError {
        what: dir.display().to_string(),
        why: format!("cannot open the capture directory: {e}"),
    })
}

/// The names of every entry of `dir` but the attestation, sorted; a name that is not UTF-8, or
/// more than [`MAX_SUBJECTS`] entries, is an error.
pub(crate) fn entry_names(dir: &Path) -> Result<Vec<String>, SubjectError> {
    let listing_error = |why: String| SubjectError {
        what: dir.display().to_string(),
        why,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| listing_error(format!("cannot list: {e}")))? {
        let entry = entry.map_err(|e| listing_error(format!("cannot list: {e}")))?;
        let name = entry
            .file_name()
            .into_string()
            .map_err(|raw| SubjectError {
                what: crate::text::render(&raw.to_string_lossy()),
                why: "the name is not UTF-8 (it cannot be named in an attestation)".to_string(),
            })?;
        if name == ATTESTATION {
            continue;
        }
        names.push(name);
        if names.len() > MAX_SUBJECTS {
            return Err(listing_error(format!(
                "holds more than {MAX_SUBJECTS} files (a capture holds at most 8)"
            )));
        }
    }
    names.sort();
    Ok(names)
}

/// The lowercase hex SHA-256 of the regular file `name` of the open directory `dir`, streamed
/// (at most [`MAX_SUBJECT_BYTES`]); a symlink, a directory or a special file is an error.
pub(crate) fn digest_at(dir: &OwnedFd, name: &str) -> Result<String, SubjectError> {
    let file_error = |why: String| SubjectError {
        what: crate::text::render(name),
        why,
    };
    let (file, _) = input_file::open_regular_at(dir, name, MAX_SUBJECT_BYTES)
        .map_err(|e| file_error(e.describe(MAX_SUBJECT_BYTES)))?;
    stream_digest(file).map_err(file_error)
}

/// SHA-256 of a whole file, read in 64 KiB pieces, at most the bound plus one byte.
fn stream_digest(file: File) -> Result<String, String> {
    let mut reader = file.take(MAX_SUBJECT_BYTES + 1);
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot be read: {e}")),
        };
        total += n as u64;
        if total > MAX_SUBJECT_BYTES {
            return Err(format!(
                "holds more than {MAX_SUBJECT_BYTES} bytes, over the bound of a signed file"
            ));
        }
        hash.update(&buf[..n]);
    }
    Ok(hash.finalize_hex())
}

/// Whether `name` can name a file of the capture directory: one plain path component.
pub(crate) fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 255
        && !name.contains(['/', '\0'])
}

/// Every file of the capture but the attestation, each with its digest, and the directory as
/// opened. `known` gives the digest of a file just read whole by someone else (the reader's
/// `files`), so no file is read twice; every other file is hashed here.
pub(crate) fn collect(
    dir: &Path,
    known: impl Fn(&str) -> Option<String>,
) -> Result<(OwnedFd, Vec<Subject>), SubjectError> {
    let fd = open_dir(dir)?;
    let subjects = entry_names(dir)?
        .into_iter()
        .map(|name| {
            let sha256 = match known(&name) {
                Some(sha256) => sha256,
                None => digest_at(&fd, &name)?,
            };
            Ok(Subject { name, sha256 })
        })
        .collect::<Result<_, SubjectError>>()?;
    Ok((fd, subjects))
}
