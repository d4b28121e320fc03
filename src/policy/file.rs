//! Reading a policy file's bytes: bounded by [`MAX_POLICY_BYTES`], never blocking on a FIFO,
//! never reading anything but a regular file. (`crate::config::load_policy` adds the messages
//! a configuration gives, SPEC §6.)

use std::path::Path;

use super::error::PolicyError;
use crate::input_file::{self, BoundedError, FinalLink};

/// Largest policy file accepted (SPEC §5: 1 MiB). A policy is a small hand-written file; the
/// bound keeps a mistaken path (a log, a dump) from being read, and bounds what loading costs.
pub const MAX_POLICY_BYTES: u64 = 1024 * 1024;

/// Reads the policy at `path` through the one opener ([`input_file::read_bounded`]: never
/// blocking, a regular file only, at most [`MAX_POLICY_BYTES`] + 1 bytes read).
pub(super) fn read_bounded(path: &Path) -> std::result::Result<Vec<u8>, PolicyError> {
    input_file::read_bounded(path, FinalLink::Follow, MAX_POLICY_BYTES).map_err(|e| match e {
        BoundedError::TooLarge { .. } => too_large(path),
        other => PolicyError::Read {
            path: path.to_path_buf(),
            source: other.into_io(MAX_POLICY_BYTES),
        },
    })
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
