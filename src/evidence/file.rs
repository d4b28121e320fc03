//! The only opener for evidence files (SPEC §4): `O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`, mode
//! exactly `0600` whatever the umask, plus the append opener for a historical decision log. Every
//! descriptor is numbered 3 or above (SPEC §3.1b).

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
        .open(path)
        .and_then(crate::sys::fd::file_above_stdio)?;
    // The umask can only remove bits from 0600, but "exactly 0600" is the contract, and a
    // restrictive umask (e.g. 0277) would otherwise leave the owner unable to read the evidence.
    file.set_permissions(Permissions::from_mode(0o600))?;
    Ok(file)
}

/// [`create_new`] for the entry `name` of the open directory `dir` (`openat`): a file created
/// inside a directory this process created, never re-resolved by path (SPEC §7 `package_capture`).
pub(crate) fn create_new_at(dir: &std::os::fd::OwnedFd, name: &str) -> io::Result<File> {
    use nix::fcntl::OFlag;
    let fd = nix::fcntl::openat(
        dir,
        name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )?;
    let file = crate::sys::fd::file_above_stdio(File::from(fd))?;
    file.set_permissions(Permissions::from_mode(0o600))?;
    Ok(file)
}

/// Opens a decision log for append (the historical, non-`decision_log_new` mode). Creates it with
/// mode 0600 when missing; never follows a symlink in the final component. Never waits: the open
/// is non-blocking (a FIFO without a reader fails at once with `ENXIO`), and anything but a
/// regular file is refused (SPEC §4.1).
pub(crate) fn open_append(path: &Path) -> io::Result<File> {
    let file = open_append_nonblocking(path)?;
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, device or directory)",
        ));
    }
    Ok(file)
}

/// Opens a sink (the child's stderr) for append: like [`open_append`], but a FIFO with a reader
/// or a device such as `/dev/null` is accepted. Never waits.
pub(crate) fn open_append_sink(path: &Path) -> io::Result<File> {
    open_append_nonblocking(path)
}

fn open_append_nonblocking(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .and_then(crate::sys::fd::file_above_stdio)?;
    // Back to blocking writes: O_NONBLOCK was only for the open.
    let fd = std::os::fd::AsFd::as_fd(&file);
    let flags = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL)?;
    let flags = nix::fcntl::OFlag::from_bits_retain(flags) & !nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFL(flags))?;
    Ok(file)
}

/// Writes `bytes` to a new evidence file at `path` in one `write_all`.
pub(crate) fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut f = create_new(path)?;
    f.write_all(bytes)
}

/// Replaces the file at `path` with `bytes` atomically: a new 0600 file beside it (created
/// exclusively), synced, then renamed over it; removed again when any step fails.
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let nonce =
        crate::evidence::event::new_session_id().map_err(|e| io::Error::other(e.to_string()))?;
    let tmp = dir.join(format!(".{name}.{nonce}.tmp"));
    let mut f = create_new(&tmp)?;
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    drop(f);
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
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

    #[test]
    fn append_never_waits_on_a_fifo_and_wants_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // No reader: fails at once instead of blocking.
        assert_eq!(
            open_append(&fifo).unwrap_err().raw_os_error(),
            Some(libc::ENXIO)
        );
        // With a reader the open succeeds, and the FIFO is still refused as a decision log.
        let _reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        assert_eq!(
            open_append(&fifo).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert!(open_append_sink(&fifo).is_ok());
        assert!(open_append(Path::new("/dev/null")).is_err());
        let f = open_append(&dir.path().join("log")).unwrap();
        let flags = nix::fcntl::fcntl(&f, nix::fcntl::FcntlArg::F_GETFL).unwrap();
        assert_eq!(flags & libc::O_NONBLOCK, 0);
    }
}
