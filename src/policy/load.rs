//! Reading a policy file's bytes: bounded by [`MAX_POLICY_BYTES`], never blocking on a FIFO,
//! never reading anything but a regular file. (`crate::config::load_policy` adds the messages
//! a configuration gives, SPEC §6.)

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::error::PolicyError;

/// Largest policy file accepted (SPEC §5: 1 MiB). A policy is a small hand-written file; the
/// bound keeps a mistaken path (a log, a dump) from being read, and bounds what loading costs.
pub const MAX_POLICY_BYTES: u64 = 1024 * 1024;

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

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("p.yaml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(read_bounded(&fifo), Err(PolicyError::Read { .. })));
        assert!(matches!(
            read_bounded(dir.path()),
            Err(PolicyError::Read { .. })
        ));
    }
}
