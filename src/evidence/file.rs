//! The only opener for evidence files (SPEC §4): `O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`, mode
//! exactly `0600` whatever the umask, plus the append opener for a historical decision log.

use std::fs::{File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates `path` as a new file: fails if anything (a file, a directory, a symlink — dangling or
/// not) already exists there, never follows a link, and is not inherited by children.
pub(crate) fn create_new(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    // The umask can only remove bits from 0600, but "exactly 0600" is the contract, and a
    // restrictive umask (e.g. 0277) would otherwise leave the owner unable to read the evidence.
    file.set_permissions(Permissions::from_mode(0o600))?;
    Ok(file)
}

/// Opens a decision log for append (the historical, non-`decision_log_new` mode). Creates it with
/// mode 0600 when missing; never follows a symlink in the final component.
pub(crate) fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Writes `bytes` to a new evidence file at `path` in one `write_all`.
pub(crate) fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut f = create_new(path)?;
    f.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn new_files_are_0600_exclusive_and_refuse_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_new(&p, b"x").unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        assert_eq!(
            create_new(&p).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("missing"), &link).unwrap();
        assert!(create_new(&link).is_err());
        assert!(!dir.path().join("missing").exists());
        let link2 = dir.path().join("link2");
        std::os::unix::fs::symlink(&p, &link2).unwrap();
        assert!(open_append(&link2).is_err());
    }
}
