//! Rewriting a host configuration file in place: read it (the one input-file opener,
//! `crate::input_file`: non-blocking, a regular file only, bounded), rewrite the text, write a
//! backup of the original bytes beside it on the first change (created exclusively; an existing
//! backup is kept, never overwritten or multiplied: SPEC §10), then replace the file atomically
//! (a new file in the same directory, renamed over it) with the original's mode. A path that is a
//! symlink is followed: the file it points to is rewritten and the link stays a link.

use std::fs::{File, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::rewrite::{EntryReport, Rewrite, RewriteAction, inspect, rewrite_selected};
use crate::error::{Error, Result};

/// A host configuration larger than this is refused (they hold a few servers).
const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

/// The backup of `file`: `<file>.assay-backup`.
pub fn backup_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".assay-backup");
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
    /// Whether that backup was written by this run (false: it was kept from an earlier change).
    pub backup_is_new: bool,
    /// Whether the file was replaced (false for a dry run and when nothing changed).
    pub written: bool,
}

pub(super) fn read_config(path: &Path) -> Result<(Vec<u8>, std::fs::Metadata)> {
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

/// The backup `<file>.assay-backup`, written when it does not exist yet: `Ok(true)` when written,
/// `Ok(false)` when one exists (it holds the file as it was before the first change and is kept).
fn write_backup(backup: &Path, mode: u32, bytes: &[u8]) -> Result<bool> {
    match write_new(backup, mode, bytes) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => {
            let _ = std::fs::remove_file(backup);
            Err(Error::io(backup, "cannot write the backup", &e))
        }
    }
}

/// The entries of the host configuration `path` as they are (see [`inspect`]); nothing is
/// written. Returns the file read (a symlink's target) and its entries.
///
/// # Errors
/// As [`rewrite_file`] before anything is written.
pub fn inspect_file(path: &Path) -> Result<(PathBuf, Vec<EntryReport>)> {
    let real = resolve(path)?;
    let (bytes, _) = read_config(&real)?;
    let entries =
        inspect(&bytes).map_err(|e| Error::invalid_argument(format!("{}: {e}", path.display())))?;
    Ok((real, entries))
}

pub(super) fn resolve(path: &Path) -> Result<PathBuf> {
    path.canonicalize().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::invalid_argument(format!("{} does not exist", path.display()))
        } else {
            Error::io(path, "cannot resolve host configuration", &e)
        }
    })
}

/// Reads the host configuration `path`, rewrites the entries `servers` names (every entry when
/// empty; [`rewrite_selected`]), calls `before_write` with the result (for warnings) and, unless
/// `dry_run` or nothing changed, writes the backup (on the first change only) and replaces the
/// file.
///
/// # Errors
/// [`crate::ErrorKind::InvalidArgument`] (CLI status 2) when the file is missing, not a regular
/// file, too large, not strict JSON or not a host configuration this can rewrite: then nothing is
/// written. [`crate::ErrorKind::Io`] (status 3) when the backup or the new file cannot be written
/// (the original is then untouched).
pub fn rewrite_file(
    path: &Path,
    action: &RewriteAction,
    servers: &[String],
    dry_run: bool,
    before_write: &mut dyn FnMut(&FileRewrite),
) -> Result<FileRewrite> {
    let real = resolve(path)?;
    let (bytes, meta) = read_config(&real)?;
    let rewritten = rewrite_selected(&bytes, action, servers).map_err(|e| {
        Error::invalid_argument(format!("{}: {e}; nothing was written", path.display()))
    })?;
    let mut done = FileRewrite {
        path: real.clone(),
        rewrite: rewritten,
        backup: None,
        backup_is_new: false,
        written: false,
    };
    before_write(&done);
    if dry_run || !done.rewrite.changed() {
        return Ok(done);
    }
    let mode = meta.mode() & 0o7777;
    let backup = backup_path(&real);
    let backup_is_new = write_backup(&backup, mode, &bytes)?;
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
        if backup_is_new {
            let _ = std::fs::remove_file(&backup);
        }
        return Err(Error::io(
            &real,
            "cannot replace host configuration (left as it was)",
            &e,
        ));
    }
    // The rename is done; syncing the directory makes it durable (best effort).
    let _ = File::open(dir).and_then(|d| d.sync_all());
    done.backup = Some(backup);
    done.backup_is_new = backup_is_new;
    done.written = true;
    Ok(done)
}
