//! Opening a policy file: [`Policy::load`] (the file's bytes, bounded, never blocking on a FIFO)
//! and [`load_policy`], the load a configuration makes (SPEC §6: "policy readable and valid"),
//! whose one-line `--policy: …` message every surface prints — `assay mcp wrap` before spawning
//! and `assay policy check` (SPEC §10) alike.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::{MAX_POLICY_BYTES, Policy, PolicyError};
use crate::error::{Error, Result};

/// The option a policy error is reported against.
const OPTION: &str = "policy";

/// The policy path of a configuration must name an existing regular file; the two messages
/// `wrap_session` gives before reading it.
pub(crate) fn policy_metadata(path: &Path) -> Result<Metadata> {
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::config(
            OPTION,
            format!("cannot read policy {}: {e}", path.display()),
        )
    })?;
    if !meta.is_file() {
        return Err(Error::config(
            OPTION,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(meta)
}

/// Loads and checks the policy file at `path` the way `wrap_session` does before it spawns
/// anything (SPEC §6), with the same errors: [`crate::ErrorKind::Config`] on the `policy`
/// option, rendered `--policy: …` on the command line. Spawns nothing, creates nothing.
///
/// # Errors
/// A configuration error when the file is missing, not a regular file, or not a valid policy
/// (the message is the [`PolicyError`]'s).
pub fn load_policy(path: &Path) -> Result<Policy> {
    policy_metadata(path)?;
    Policy::load(path).map_err(|e| Error::config(OPTION, e.to_string()))
}

/// Opens `path` for reading without blocking (a FIFO has no writer to wait for) and checks by
/// `fstat` that it is a regular file; then reads at most [`MAX_POLICY_BYTES`] + 1 bytes.
pub(super) fn read_bounded(path: &Path) -> std::result::Result<Vec<u8>, PolicyError> {
    let read_err = |source| PolicyError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(read_err)?;
    let meta = file.metadata().map_err(read_err)?;
    if !meta.is_file() {
        return Err(read_err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    if meta.len() > MAX_POLICY_BYTES {
        return Err(too_large(path));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    read_at_most(file, &mut bytes).map_err(read_err)?;
    if bytes.len() as u64 > MAX_POLICY_BYTES {
        return Err(too_large(path));
    }
    Ok(bytes)
}

fn read_at_most(file: File, bytes: &mut Vec<u8>) -> std::io::Result<usize> {
    file.take(MAX_POLICY_BYTES + 1).read_to_end(bytes)
}

pub(super) fn too_large(path: &Path) -> PolicyError {
    PolicyError::TooLarge {
        path: path.to_path_buf(),
        limit: MAX_POLICY_BYTES,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn configuration_errors_name_the_option() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.yaml");
        let e = load_policy(&missing).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(
            e.to_string().starts_with("--policy: cannot read policy "),
            "{e}"
        );
        let e = load_policy(dir.path()).err().unwrap();
        assert!(e.to_string().ends_with("is not a regular file"), "{e}");
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "version: '1'\ndeny: [!!binary ZXhlYw==]\n").unwrap();
        let e = load_policy(&bad).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(
            e.to_string().starts_with("--policy: policy file ")
                && e.to_string().contains("line 2 column 8"),
            "{e}"
        );
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("p.yaml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(Policy::load(&fifo), Err(PolicyError::Read { .. })));
        assert!(load_policy(&fifo).is_err());
    }
}
