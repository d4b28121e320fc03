//! Reading every capture under a capture root in parallel (`capture summary`, `capture
//! export`; SPEC §10): the root's immediate entries listed and sorted by name, each capture read
//! on one of a worker thread per core, and the results handed to the caller in name order as
//! soon as they are ready, through a bounded window (a few results per worker at any time,
//! whatever the number of entries), so a root of 10,000 captures costs its list of names plus
//! what a few captures need.
//!
//! Nothing under the root is followed through a symlink: an entry that is a symlink is reported
//! `unknown` (`not_regular_file`) without looking at its target, and each subdirectory is opened
//! with `O_NOFOLLOW|O_DIRECTORY` and read through that descriptor (`/proc/self/fd/N`), so an
//! entry swapped for a symlink after the listing is not followed either.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::ops::ControlFlow;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, PoisonError};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, open, openat};
use nix::sys::stat::{Mode, fstatat};

use super::judgement::{
    CLOSURE_NON_CLAIMS, CLOSURE_SCHEMA, Closure, ClosureKind, ClosureReasonCode, Reason,
};
use crate::capture_files::PROTOCOL;
use crate::error::{Error, ErrorKind, Result};

/// What a worker made of one capture under the root.
pub(crate) enum Visit<T> {
    /// The entry could not be read as a capture (a symlink, or a directory that cannot be
    /// opened): its `unknown` verdict.
    Refused(Closure),
    /// What the caller's reader made of it.
    Read(T),
}

/// An entry of the root worth looking at.
struct Entry {
    name: OsString,
    symlink: bool,
}

/// Where a worker finds the root's entries.
struct Root {
    fd: OwnedFd,
    path: PathBuf,
    /// `/proc/self/fd` is available: read each capture through its opened descriptor.
    proc_fd: bool,
}

/// Opens the root (a symlinked root is followed: the caller named it) and lists its
/// subdirectories and symlinks, sorted by name.
fn list(root: &Path) -> Result<(Root, Vec<Entry>)> {
    let fd = open(
        root,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::ENOENT => {
            Error::invalid_argument(format!("capture root {} does not exist", root.display()))
        }
        Errno::ENOTDIR => Error::invalid_argument(format!(
            "capture root {} is not a directory",
            root.display()
        )),
        e => Error::io(root, "cannot open capture root", &std::io::Error::from(e)),
    })?;
    let proc_fd = Path::new("/proc/self/fd").is_dir();
    let listing = if proc_fd {
        PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
    } else {
        root.to_path_buf()
    };
    let read_err = |e: std::io::Error| Error::io(root, "cannot list capture root", &e);
    let mut entries = Vec::new();
    for item in std::fs::read_dir(&listing).map_err(read_err)? {
        let item = item.map_err(read_err)?;
        // The entry's own type (d_type, or lstat): a symlink is never followed.
        let ft = item.file_type().map_err(read_err)?;
        if ft.is_dir() || ft.is_symlink() {
            entries.push(Entry {
                name: item.file_name(),
                symlink: ft.is_symlink(),
            });
        }
    }
    entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok((
        Root {
            fd,
            path: root.to_path_buf(),
            proc_fd,
        },
        entries,
    ))
}

/// An `unknown` verdict for an entry that could not be judged as a capture.
fn refused(code: ClosureReasonCode, detail: String) -> Closure {
    Closure {
        schema: CLOSURE_SCHEMA,
        closure: ClosureKind::Unknown,
        reasons: vec![Reason { code, detail }],
        session_id: None,
        stop: None,
        files: BTreeMap::new(),
        non_claims: CLOSURE_NON_CLAIMS.iter().map(|s| s.to_string()).collect(),
    }
}

fn symlinked(name: &str) -> Closure {
    refused(
        ClosureReasonCode::NotRegularFile,
        format!("{name} is a symbolic link; capture summary does not follow it"),
    )
}

/// Reads one entry with `read`; `None` when it is not a capture (not a directory, or no
/// `protocol.json`).
fn visit<T>(
    root: &Root,
    entry: &Entry,
    read: &(impl Fn(&Path, &str) -> T + Sync),
) -> Option<Visit<T>> {
    let name = entry.name.to_string_lossy();
    if entry.symlink {
        return Some(Visit::Refused(symlinked(&name)));
    }
    let opened = openat(
        &root.fd,
        entry.name.as_os_str(),
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    );
    match opened {
        // Swapped for a symlink since the listing.
        Err(Errno::ELOOP) => Some(Visit::Refused(symlinked(&name))),
        // Gone, or no longer a directory: not a capture.
        Err(Errno::ENOENT | Errno::ENOTDIR) => None,
        Err(e) => Some(Visit::Refused(refused(
            ClosureReasonCode::MissingFile,
            format!("{name} cannot be opened: {}", std::io::Error::from(e)),
        ))),
        Ok(dir) => {
            // Anything named protocol.json (even a symlink) makes it a capture; the reader
            // then reports what is wrong with it.
            if let Err(Errno::ENOENT) = fstatat(&dir, PROTOCOL, AtFlags::AT_SYMLINK_NOFOLLOW) {
                return None;
            }
            let path = if root.proc_fd {
                PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()))
            } else {
                root.path.join(&entry.name)
            };
            Some(Visit::Read(read(&path, &name)))
        }
    }
}

/// The bounded window between the workers and the caller.
struct Window<T> {
    /// The next entry index a worker will take.
    next: usize,
    /// The next index handed to the caller.
    emitted: usize,
    /// Results judged but not yet handed over (`None`: the entry is not a capture).
    done: BTreeMap<usize, Option<Visit<T>>>,
    /// The caller stopped early.
    stop: bool,
}

fn worker<T>(
    root: &Root,
    entries: &[Entry],
    shared: (&Mutex<Window<T>>, &Condvar),
    window: usize,
    read: &(impl Fn(&Path, &str) -> T + Sync),
) {
    let (state, cv) = shared;
    loop {
        let i = {
            let mut w = state.lock().unwrap_or_else(PoisonError::into_inner);
            while !w.stop && w.next < entries.len() && w.next >= w.emitted + window {
                w = cv.wait(w).unwrap_or_else(PoisonError::into_inner);
            }
            if w.stop || w.next >= entries.len() {
                return;
            }
            w.next += 1;
            w.next - 1
        };
        let Some(entry) = entries.get(i) else { return };
        // The reader never panics; should it ever, the entry is reported, not lost, and the
        // caller is not left waiting for it.
        let visited =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| visit(root, entry, read)))
                .unwrap_or_else(|_| {
                    let name = entry.name.to_string_lossy();
                    Some(Visit::Refused(refused(
                        ClosureReasonCode::SchemaMismatch,
                        format!("{name}: the reader failed on this capture"),
                    )))
                });
        let mut w = state.lock().unwrap_or_else(PoisonError::into_inner);
        w.done.insert(i, visited);
        cv.notify_all();
    }
}

/// Reads every capture directly under `root` with `read` (given its path and its entry's name),
/// on one worker thread per available
/// core, and hands each result to `each` with the entry's name, in name order, as soon as it
/// and every earlier one are ready; `each` returns [`ControlFlow::Break`] to stop early. At most
/// `per_worker` results per worker are held at once, whatever the number of entries.
///
/// A capture is an immediate subdirectory holding an entry named `protocol.json`; an entry
/// that is a symlink is [`Visit::Refused`] (an `unknown` verdict, reason `not_regular_file`)
/// without being followed, as is one that cannot be opened; other entries are skipped. `read`
/// gets a path that reaches the directory through its opened descriptor (`/proc/self/fd/N`)
/// where there is one, so an entry swapped for a symlink after the listing is not followed.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] when `root` does not exist or is not a directory (a usage
/// error, exit status 2); [`ErrorKind::Io`] when it cannot be opened or listed, or no worker
/// thread can be started.
pub(crate) fn walk_root<T: Send>(
    root: &Path,
    per_worker: usize,
    read: impl Fn(&Path, &str) -> T + Sync,
    mut each: impl FnMut(String, Visit<T>) -> ControlFlow<()>,
) -> Result<()> {
    let (root, entries) = list(root)?;
    if entries.is_empty() {
        return Ok(());
    }
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, entries.len());
    let window = workers * per_worker.max(1);
    let state = Mutex::new(Window {
        next: 0,
        emitted: 0,
        done: BTreeMap::new(),
        stop: false,
    });
    let cv = Condvar::new();
    std::thread::scope(|s| -> Result<()> {
        for n in 0..workers {
            let spawned = std::thread::Builder::new()
                .name(format!("assay-captures-{n}"))
                .spawn_scoped(s, || worker(&root, &entries, (&state, &cv), window, &read));
            if let Err(e) = spawned {
                let mut w = state.lock().unwrap_or_else(PoisonError::into_inner);
                w.stop = true;
                cv.notify_all();
                return Err(Error::new(
                    ErrorKind::Io,
                    format!("cannot start a capture reader thread: {e}"),
                ));
            }
        }
        for (i, entry) in entries.iter().enumerate() {
            let item = {
                let mut w = state.lock().unwrap_or_else(PoisonError::into_inner);
                let item = loop {
                    if let Some(item) = w.done.remove(&i) {
                        break item;
                    }
                    w = cv.wait(w).unwrap_or_else(PoisonError::into_inner);
                };
                w.emitted = i + 1;
                cv.notify_all();
                item
            };
            if let Some(v) = item {
                let name = entry.name.to_string_lossy().into_owned();
                if each(name, v).is_break() {
                    let mut w = state.lock().unwrap_or_else(PoisonError::into_inner);
                    w.stop = true;
                    cv.notify_all();
                    break;
                }
            }
        }
        Ok(())
    })
}
