//! Every capture a command names (`assay policy replay`, `assay policy suggest`): each path is a
//! capture directory (it holds `protocol.json`) or a capture root whose immediate
//! subdirectories are captures, found and judged as `capture summary` does — in parallel, in
//! name order, with a bounded window ([`read_captures_with`](super::read_captures_with)).
//!
//! Only a `closed` capture's decision lines are read (from the bytes its verdict judged, as
//! [`show_capture`](super::show_capture) reads them) and handed to the caller's `work`, on the worker
//! thread; what `work` returns travels to the caller with the verdict. A capture that is not
//! closed is handed over with its verdict alone: replaying evidence that is not closed would
//! claim what was not observed.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use super::judgement::ClosureKind;
use super::show::{DecisionLines, closed_lines, label};
use super::summary::{CaptureStatus, CaptureVerdict, read_captures_with};
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

/// Judges every capture under `paths` (each a capture directory or a capture root) and hands
/// each one to `each`, path by path and, under a root, in name order. `work` runs on the
/// worker thread for each closed capture, with its decision lines. At most a few results per
/// core are held at once.
///
/// # Errors
/// [`crate::ErrorKind::InvalidArgument`] when a path does not exist or is not a directory (a
/// usage error); [`crate::ErrorKind::Io`] when a root cannot be listed.
pub fn for_each_capture<T: Send>(
    paths: &[PathBuf],
    work: &(dyn Fn(&DecisionLines) -> T + Sync),
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
        if std::fs::symlink_metadata(path.join(PROTOCOL)).is_ok() {
            each(one(path, work));
            continue;
        }
        let judge = |dir: Option<&Path>, v: &CaptureVerdict| {
            let dir = dir.filter(|_| v.closure.closure == ClosureKind::Closed)?;
            Some(work(&closed_lines(dir, &v.closure)))
        };
        read_captures_with(path, &judge, |verdict, work| {
            let path = path.join(&verdict.name).display().to_string();
            each(Visited {
                path,
                verdict,
                work,
            });
            ControlFlow::Continue(())
        })?;
    }
    Ok(())
}

/// A capture directory named by the caller.
fn one<T>(dir: &Path, work: &(dyn Fn(&DecisionLines) -> T + Sync)) -> Visited<T> {
    let closure = super::reader::judge(dir);
    let server_id = label(dir, &closure);
    let name = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let verdict = CaptureVerdict {
        name,
        status: CaptureStatus::of(&closure),
        server_id,
        closure,
    };
    let work = (verdict.closure.closure == ClosureKind::Closed)
        .then(|| work(&closed_lines(dir, &verdict.closure)));
    Visited {
        path: dir.display().to_string(),
        verdict,
        work,
    }
}
