//! Every capture a command names (`assay policy replay`, `assay policy suggest`, `assay capture
//! export`): each path is a capture directory (it holds `protocol.json`) or a capture root whose
//! immediate subdirectories are captures, found and judged as `capture summary` does — in
//! parallel, in name order, with a bounded window ([`walk_root`]).
//!
//! Each capture is judged once, keeping the log's bytes the verdict read, hashed and checked
//! ([`capture_records`]): what a command does next reads those bytes, never the file again. Only
//! a `closed` capture's decision lines are handed to the caller's `work`, on the worker thread;
//! what `work` returns travels to the caller with the verdict. A capture that is not closed is
//! handed over with its verdict alone: replaying evidence that is not closed would claim what
//! was not observed.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use super::records::{CaptureRecords, capture_records};
use super::root_walk::{Visit, walk_root};
use super::row_refs::RowRef;
use super::show::{DecisionLines, for_each_closed_row, label};
use super::summary::{CaptureStatus, CaptureVerdict, WINDOW_PER_WORKER};
use crate::capture_files::PROTOCOL;
use crate::error::{Error, Result};

/// One capture: where it is, its verdict, and what `work` made of it when it is closed.
#[derive(Debug)]
pub struct Visited<T> {
    /// The capture's path as the caller named it, or the root joined with the entry's name.
    pub path: String,
    /// The verdict of the §7 reader (with the capture's label).
    pub verdict: CaptureVerdict,
    /// What `work` returned; `None` when the capture is not closed (it was not read further).
    pub work: Option<T>,
}

/// Reads every capture `path` names with `read` (given the capture's directory and its name):
/// `path` itself when it holds `protocol.json` (its name: its last component), else every
/// capture under it as a root ([`walk_root`], `per_worker` results held per worker). `each` gets
/// the capture's path as the caller names it (`path`, or the root joined with the entry's name)
/// and what was read, in name order; [`ControlFlow::Break`] stops the walk.
///
/// # Errors
/// As [`walk_root`].
pub(crate) fn walk_captures<T: Send>(
    path: &Path,
    per_worker: usize,
    read: impl Fn(&Path, &str) -> T + Sync,
    mut each: impl FnMut(PathBuf, String, Visit<T>) -> ControlFlow<()>,
) -> Result<()> {
    if std::fs::symlink_metadata(path.join(PROTOCOL)).is_ok() {
        let name = name_of(path);
        let read = read(path, &name);
        let _ = each(path.to_path_buf(), name, Visit::Read(read));
        return Ok(());
    }
    walk_root(path, per_worker, read, |name, visit| {
        each(path.join(&name), name, visit)
    })
}

/// A capture directory's name: its last component (of its canonical path, so `.` has one).
fn name_of(path: &Path) -> String {
    path.canonicalize()
        .ok()
        .as_deref()
        .unwrap_or(path)
        .file_name()
        .map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
}

/// Judges every capture under `paths` (each a capture directory or a capture root) and hands
/// each one to `each`, path by path and, under a root, in name order. `work` runs on the
/// worker thread for each closed capture, with its directory and its decision lines. At most a few results per
/// core are held at once.
///
/// # Errors
/// [`crate::ErrorKind::InvalidArgument`] when a path does not exist or is not a directory (a
/// usage error); [`crate::ErrorKind::Io`] when a root cannot be listed.
pub fn for_each_capture<T: Send>(
    paths: &[PathBuf],
    work: &(dyn Fn(&Path, &DecisionLines) -> T + Sync),
    each: impl FnMut(Visited<T>),
) -> Result<()> {
    let read = |dir: &Path, r: &CaptureRecords| r.closed_lines().map(|lines| work(dir, &lines));
    for_each_judged(paths, &read, each)
}

/// A closed capture's rows, read one by one from the bytes its verdict judged.
pub(crate) struct ClosedRows<'a> {
    bytes: &'a [u8],
}

impl ClosedRows<'_> {
    /// Hands each row to `each` in file order, borrowed ([`RowRef`]: a decision is read where it
    /// lies in the log, nothing is kept).
    pub(crate) fn for_each(&self, each: impl FnMut(RowRef<'_>)) {
        for_each_closed_row(self.bytes, each);
    }
}

/// [`for_each_capture`] with `work` given each closed capture's rows to read one by one
/// ([`ClosedRows`]) rather than all of them owned.
///
/// # Errors
/// As [`for_each_capture`].
pub(crate) fn for_each_capture_rows<T: Send>(
    paths: &[PathBuf],
    work: &(dyn Fn(&ClosedRows<'_>) -> T + Sync),
    each: impl FnMut(Visited<T>),
) -> Result<()> {
    let read =
        |_: &Path, r: &CaptureRecords| r.closed_log().map(|bytes| work(&ClosedRows { bytes }));
    for_each_judged(paths, &read, each)
}

/// Judges every capture under `paths` and hands each to `each` with what `read` made of its
/// records (on the worker thread).
fn for_each_judged<T: Send>(
    paths: &[PathBuf],
    read: &(dyn Fn(&Path, &CaptureRecords) -> Option<T> + Sync),
    mut each: impl FnMut(Visited<T>),
) -> Result<()> {
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|_| {
            Error::invalid_argument(format!(
                "{} does not exist; name a capture directory or a capture root",
                path.display()
            ))
        })?;
        if !meta.is_dir() {
            return Err(Error::invalid_argument(format!(
                "{} is not a directory; name a capture directory or a capture root",
                path.display()
            )));
        }
        let judge = |dir: &Path, name: &str| judged(dir, name, read);
        walk_captures(path, WINDOW_PER_WORKER, judge, |path, name, visit| {
            let (verdict, work) = match visit {
                Visit::Read(read) => read,
                Visit::Refused(closure) => (
                    CaptureVerdict {
                        name,
                        status: CaptureStatus::of(&closure),
                        server_id: None,
                        closure,
                    },
                    None,
                ),
            };
            each(Visited {
                path: path.display().to_string(),
                verdict,
                work,
            });
            ControlFlow::Continue(())
        })?;
    }
    Ok(())
}

/// One capture judged (its verdict with its label), and what `read` made of its records.
fn judged<T>(
    dir: &Path,
    name: &str,
    read: &(dyn Fn(&Path, &CaptureRecords) -> Option<T> + Sync),
) -> (CaptureVerdict, Option<T>) {
    let records = capture_records(dir);
    let work = read(dir, &records);
    let closure = records.closure;
    let verdict = CaptureVerdict {
        name: name.to_string(),
        status: CaptureStatus::of(&closure),
        server_id: label(dir, &closure),
        closure,
    };
    (verdict, work)
}
