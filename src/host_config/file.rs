//! Rewriting a host configuration file in place: read it (bounded), rewrite the text, write a
//! backup of the original bytes beside it (created exclusively, never overwriting an older
//! backup), then replace the file atomically (a new file in the same directory, renamed over
//! it) with the original's mode. A path that is a symlink is followed: the file it points to is
//! rewritten and the link stays a link.

use std::fs::{File, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::rewrite::{Rewrite, RewriteAction, rewrite};
use crate::error::{Error, Result};

/// A host configuration larger than this is refused (they hold a few servers).
const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;
/// Backup names tried: `.assay-backup`, `.assay-backup.1`, … `.assay-backup.999`.
const MAX_BACKUPS: u32 = 1000;

/// The `n`-th backup name of `file`: `<file>.assay-backup`, then `<file>.assay-backup.1`, `.2`, …
/// (the first that does not exist yet is used; an older backup is never overwritten).
fn backup_name(file: &Path, n: u32) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".assay-backup");
    if n > 0 {
        name.push(format!(".{n}"));
    }
    PathBuf::from(name)
}

/// What [`rewrite_file`] did.
#[derive(Debug, Clone)]
pub struct FileRewrite {
    /// The file rewritten (the target of a symlink that was given).
    pub path: PathBuf,
    /// The rewrite: the new text and what happened to each entry.
    pub rewrite: Rewrite,
    /// The backup of the original bytes, when the file was written.
    pub backup: Option<PathBuf>,
    /// Whether the file was replaced (false for a dry run and when nothing changed).
    pub written: bool,
}

fn read_config(path: &Path) -> Result<(Vec<u8>, std::fs::Metadata)> {
    use crate::input_file::{self, BoundedError, FinalLink};
    // The one opener (SPEC §10): a FIFO or device is refused at once, never waited on.
    let refused = |what: &str, e: BoundedError| match e {
        BoundedError::NotRegular(_) => {
            Error::invalid_argument(format!("{} is not a regular file", path.display()))
        }
        BoundedError::TooLarge { .. } => Error::invalid_argument(format!(
            "{} is larger than {MAX_CONFIG_BYTES} bytes",
            path.display()
        )),
        other => Error::io(path, what, &other.into_io(MAX_CONFIG_BYTES)),
    };
    let (file, size) = input_file::open_regular(path, FinalLink::Follow, MAX_CONFIG_BYTES)
        .map_err(|e| refused("cannot open host configuration", e))?;
    let meta = file
        .metadata()
        .map_err(|e| Error::io(path, "cannot inspect host configuration", &e))?;
    let bytes = input_file::read_opened(file, size, MAX_CONFIG_BYTES)
        .map_err(|e| refused("cannot read host configuration", e))?;
    Ok((bytes, meta))
}

/// Creates `path` exclusively (never following a link) with `mode`, writes `bytes`, syncs it.
fn write_new(path: &Path, mode: u32, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    // The exact mode of the original, whatever the umask.
    f.set_permissions(Permissions::from_mode(mode))?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// The backup: the first free name of `<file>.assay-backup[.N]`.
fn write_backup(real: &Path, mode: u32, bytes: &[u8]) -> Result<PathBuf> {
    for n in 0..MAX_BACKUPS {
        let candidate = backup_name(real, n);
        match write_new(&candidate, mode, bytes) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                let _ = std::fs::remove_file(&candidate);
                return Err(Error::io(&candidate, "cannot write the backup", &e));
            }
        }
    }
    Err(Error::invalid_argument(format!(
        "{} already has {MAX_BACKUPS} backups; remove old ones",
        real.display()
    )))
}

/// Reads the host configuration `path`, rewrites it ([`rewrite`](super::rewrite)) and, unless
/// `dry_run` or nothing changed, writes the backup and replaces the file.
///
/// # Errors
/// [`crate::ErrorKind::InvalidArgument`] (CLI status 2) when the file is missing, not a regular
/// file, too large, not strict JSON or not a host configuration this can rewrite: then nothing is
/// written. [`crate::ErrorKind::Io`] (status 3) when the backup or the new file cannot be written
/// (the original is then untouched).
pub fn rewrite_file(path: &Path, action: &RewriteAction, dry_run: bool) -> Result<FileRewrite> {
    let real = path.canonicalize().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::invalid_argument(format!("{} does not exist", path.display()))
        } else {
            Error::io(path, "cannot resolve host configuration", &e)
        }
    })?;
    let (bytes, meta) = read_config(&real)?;
    let rewritten = rewrite(&bytes, action).map_err(|e| {
        Error::invalid_argument(format!("{}: {e}; nothing was written", path.display()))
    })?;
    let mut done = FileRewrite {
        path: real.clone(),
        rewrite: rewritten,
        backup: None,
        written: false,
    };
    if dry_run || !done.rewrite.changed() {
        return Ok(done);
    }
    let mode = meta.mode() & 0o7777;
    let backup = write_backup(&real, mode, &bytes)?;
    let dir = real.parent().unwrap_or(Path::new("/"));
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.assay-tmp.{}", std::process::id()));
    let replaced = write_new(&temp, mode, done.rewrite.text.as_bytes()).and_then(|()| {
        // Keep the owner when this runs with the right to (as root on a user's file).
        let _ = std::os::unix::fs::chown(&temp, Some(meta.uid()), Some(meta.gid()));
        // The file must still hold what was read: a host that rewrote it meanwhile keeps
        // its version.
        let (now, _) = read_config(&real).map_err(|e| std::io::Error::other(e.to_string()))?;
        if now != bytes {
            return Err(std::io::Error::other(
                "the file changed while it was being rewritten",
            ));
        }
        std::fs::rename(&temp, &real)
    });
    if let Err(e) = replaced {
        let _ = std::fs::remove_file(&temp);
        let _ = std::fs::remove_file(&backup);
        return Err(Error::io(
            &real,
            "cannot replace host configuration (left as it was)",
            &e,
        ));
    }
    // The rename is done; syncing the directory makes it durable (best effort).
    let _ = File::open(dir).and_then(|d| d.sync_all());
    done.backup = Some(backup);
    done.written = true;
    Ok(done)
}
