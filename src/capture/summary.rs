//! Judging a whole capture root at once (`assay capture summary ROOT`, Python
//! `read_captures`; SPEC §10).
//!
//! [`read_captures`] lists the immediate entries of the root, sorts them by name, and judges
//! every subdirectory that holds a `protocol.json` with [`read_capture`](super::read_capture) —
//! the same bounds per capture — on one worker thread per core. Verdicts are handed to the
//! caller in name order as soon as they are ready, through a bounded window: at most
//! [`WINDOW_PER_WORKER`] verdicts per worker are held at any time, whatever the number of
//! entries, so a root of 10,000 captures costs its list of names plus a few dozen verdicts.
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
use serde::Serialize;

use super::judgement::{
    CLOSURE_NON_CLAIMS, CLOSURE_SCHEMA, Closure, ClosureKind, ClosureReasonCode, Reason,
};
use super::reader;
use crate::capture_files::PROTOCOL;
use crate::error::{Error, ErrorKind, Result};
use crate::exit_status;

/// Whether `dir` is a capture root rather than a capture directory (SPEC §10, so `capture show
/// ROOT` can point at `capture summary`): it holds no `protocol.json` of its own, and an
/// immediate subdirectory (not a symlink) does — what [`read_captures`] would judge.
pub fn is_capture_root(dir: &Path) -> bool {
    if std::fs::symlink_metadata(dir.join(PROTOCOL)).is_ok() {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_type().is_ok_and(|t| t.is_dir())
            && std::fs::symlink_metadata(e.path().join(PROTOCOL)).is_ok()
    })
}

/// Whether `dir` is itself a capture directory (so `capture summary DIR` can point at `capture
/// read`): it holds one of the files a capture holds (SPEC §7), not followed when a symlink.
pub fn is_capture_dir(dir: &Path) -> bool {
    crate::capture_files::ALL
        .iter()
        .any(|name| std::fs::symlink_metadata(dir.join(name)).is_ok())
}

/// Verdicts held per worker thread at most while earlier ones are still being judged.
pub const WINDOW_PER_WORKER: usize = 8;

/// How `capture summary` lists one capture: the verdict, with a clean discovery-only run
/// (reason `no_session` and nothing else) counted apart as `no_session`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureStatus {
    /// The verdict is `closed`.
    Closed,
    /// The verdict is `incomplete`.
    Incomplete,
    /// The verdict is `unknown` for any reason but a clean discovery-only run.
    Unknown,
    /// A discovery-only run: the verdict is `unknown` and its only reason is `no_session`.
    NoSession,
}

impl CaptureStatus {
    /// The status of a verdict.
    pub fn of(closure: &Closure) -> Self {
        match closure.closure {
            ClosureKind::Closed => CaptureStatus::Closed,
            ClosureKind::Incomplete => CaptureStatus::Incomplete,
            ClosureKind::Unknown => match closure.reasons.as_slice() {
                [only] if only.code == ClosureReasonCode::NoSession => CaptureStatus::NoSession,
                _ => CaptureStatus::Unknown,
            },
        }
    }

    /// `closed`, `incomplete`, `unknown` or `no_session`.
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureStatus::Closed => "closed",
            CaptureStatus::Incomplete => "incomplete",
            CaptureStatus::Unknown => "unknown",
            CaptureStatus::NoSession => "no_session",
        }
    }
}

/// One capture under a root: its entry name, how it is listed, and the full verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureVerdict {
    /// The entry's name under the root (a name that is not UTF-8 is shown lossily).
    pub name: String,
    /// How the capture is listed and counted.
    pub status: CaptureStatus,
    /// The capture's label (`server_id`, SPEC §10): the stop record's, or when there is none
    /// that passed the reader's checks, the judged `protocol.json`'s; `None` when neither is
    /// readable. A configured label, not the server's identity.
    pub server_id: Option<String>,
    /// The verdict of [`read_capture`](super::read_capture) on the entry (for a symlinked
    /// entry, an `unknown` verdict with reason `not_regular_file`).
    pub closure: Closure,
}

impl CaptureVerdict {
    /// The summary line, compact JSON without a newline:
    /// `{"capture":NAME,"closure":…,"session_id":…,"server_id":…,"reasons":[codes…]}`.
    pub fn summary_line(&self) -> String {
        // A struct, so the keys keep the SPEC's order.
        #[derive(Serialize)]
        struct Line<'a> {
            capture: &'a str,
            closure: CaptureStatus,
            session_id: Option<&'a str>,
            server_id: Option<&'a str>,
            reasons: Vec<ClosureReasonCode>,
        }
        to_line(&Line {
            capture: &self.name,
            closure: self.status,
            session_id: self.closure.session_id.as_deref(),
            server_id: self.server_id.as_deref(),
            reasons: self.closure.reasons.iter().map(|r| r.code).collect(),
        })
    }
}

/// How many captures of each status a root held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CaptureCounts {
    /// Captures judged `closed`.
    pub closed: u64,
    /// Captures judged `incomplete`.
    pub incomplete: u64,
    /// Captures judged `unknown` (symlinked entries included).
    pub unknown: u64,
    /// Discovery-only runs.
    pub no_session: u64,
}

impl CaptureCounts {
    fn add(&mut self, status: CaptureStatus) {
        let n = match status {
            CaptureStatus::Closed => &mut self.closed,
            CaptureStatus::Incomplete => &mut self.incomplete,
            CaptureStatus::Unknown => &mut self.unknown,
            CaptureStatus::NoSession => &mut self.no_session,
        };
        *n += 1;
    }

    /// The `capture summary` exit status (SPEC §10): `3` when any capture is unknown or none
    /// was found (discovery-only runs are left out: a root holding only those has no session
    /// to vouch for), `1` when some are incomplete, `0` when every one is closed.
    pub fn exit_status(&self) -> i32 {
        if self.unknown > 0 || self.closed + self.incomplete == 0 {
            exit_status::FAILURE
        } else if self.incomplete > 0 {
            exit_status::INCOMPLETE
        } else {
            exit_status::OK
        }
    }

    /// The final line, compact JSON without a newline:
    /// `{"summary":{"closed":N,"incomplete":N,"unknown":N,"no_session":N}}`.
    pub fn summary_line(&self) -> String {
        #[derive(Serialize)]
        struct Line<'a> {
            summary: &'a CaptureCounts,
        }
        to_line(&Line { summary: self })
    }
}

/// Compact JSON of a line type (serializing these plain structs cannot fail).
fn to_line(line: &impl Serialize) -> String {
    serde_json::to_string(line).unwrap_or_default()
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

/// What a worker does with each capture after judging it: given the capture's directory (`None`
/// when it could not be opened as one) and its verdict.
type Work<'w, T> = &'w (dyn Fn(Option<&Path>, &CaptureVerdict) -> T + Sync);

/// Judges one entry and runs `work` on it; `None` when it is not a capture (not a directory, or
/// no `protocol.json`).
fn judge<T>(root: &Root, entry: &Entry, work: Work<'_, T>) -> Option<(CaptureVerdict, T)> {
    let name = entry.name.to_string_lossy().into_owned();
    let closure = if entry.symlink {
        symlinked(&name)
    } else {
        let opened = openat(
            &root.fd,
            entry.name.as_os_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        );
        match opened {
            // Swapped for a symlink since the listing.
            Err(Errno::ELOOP) => symlinked(&name),
            // Gone, or no longer a directory: not a capture.
            Err(Errno::ENOENT | Errno::ENOTDIR) => return None,
            Err(e) => refused(
                ClosureReasonCode::MissingFile,
                format!("{name} cannot be opened: {}", std::io::Error::from(e)),
            ),
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
                let closure = reader::judge(&path);
                let server_id = super::show::label(&path, &closure);
                let verdict = CaptureVerdict {
                    name,
                    status: CaptureStatus::of(&closure),
                    server_id,
                    closure,
                };
                let t = work(Some(&path), &verdict);
                return Some((verdict, t));
            }
        }
    };
    let verdict = CaptureVerdict {
        name,
        status: CaptureStatus::of(&closure),
        server_id: None,
        closure,
    };
    let t = work(None, &verdict);
    Some((verdict, t))
}

/// The bounded window between the workers and the caller.
struct Window<T> {
    /// The next entry index a worker will take.
    next: usize,
    /// The next index handed to the caller.
    emitted: usize,
    /// Results judged but not yet handed over (`None`: the entry is not a capture).
    done: BTreeMap<usize, Option<(CaptureVerdict, T)>>,
    /// The caller stopped early.
    stop: bool,
}

fn worker<T>(
    root: &Root,
    entries: &[Entry],
    work: Work<'_, T>,
    state: &Mutex<Window<T>>,
    cv: &Condvar,
    window: usize,
) {
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
        let verdict =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| judge(root, entry, work)))
                .unwrap_or_else(|_| {
                    let name = entry.name.to_string_lossy().into_owned();
                    let closure = refused(
                        ClosureReasonCode::SchemaMismatch,
                        format!("{name}: the reader failed on this capture"),
                    );
                    let verdict = CaptureVerdict {
                        name,
                        status: CaptureStatus::Unknown,
                        server_id: None,
                        closure,
                    };
                    let t = work(None, &verdict);
                    Some((verdict, t))
                });
        let mut w = state.lock().unwrap_or_else(PoisonError::into_inner);
        w.done.insert(i, verdict);
        cv.notify_all();
    }
}

/// Judges every capture directly under `root` (SPEC §10) and hands each verdict to `each`, in
/// name order, as soon as it and every earlier one are ready; `each` returns
/// [`ControlFlow::Break`] to stop early. Returns the counts of the verdicts handed over.
///
/// A capture is an immediate subdirectory holding an entry named `protocol.json`; an entry
/// that is a symlink is reported `unknown` (reason `not_regular_file`) without being followed;
/// other entries are skipped. Each capture is read with the bounds of
/// [`read_capture`](super::read_capture). Work runs on one thread per available core with at
/// most [`WINDOW_PER_WORKER`] verdicts per thread held at once.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] when `root` does not exist or is not a directory (a usage
/// error, exit status 2); [`ErrorKind::Io`] when it cannot be opened or listed.
pub fn read_captures(
    root: &Path,
    mut each: impl FnMut(CaptureVerdict) -> ControlFlow<()>,
) -> Result<CaptureCounts> {
    read_captures_with(root, &|_, _| (), |v, ()| each(v))
}

/// [`read_captures`] with more work per capture: `work` runs on the worker thread right after
/// the capture is judged, with the capture's directory (opened without following a symlink;
/// `None` when it is not one) and its verdict, and its result is handed to `each` with the
/// verdict, in name order. At most [`WINDOW_PER_WORKER`] results per worker are held at once,
/// so memory is bounded by what `work` returns for the largest capture, not by their number.
///
/// # Errors
/// As [`read_captures`].
pub fn read_captures_with<T: Send>(
    root: &Path,
    work: &(dyn Fn(Option<&Path>, &CaptureVerdict) -> T + Sync),
    mut each: impl FnMut(CaptureVerdict, T) -> ControlFlow<()>,
) -> Result<CaptureCounts> {
    let (root, entries) = list(root)?;
    let mut counts = CaptureCounts::default();
    if entries.is_empty() {
        return Ok(counts);
    }
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, entries.len());
    let window = workers * WINDOW_PER_WORKER;
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
                .name(format!("assay-summary-{n}"))
                .spawn_scoped(s, || worker(&root, &entries, work, &state, &cv, window));
            if let Err(e) = spawned {
                let mut w = state.lock().unwrap_or_else(PoisonError::into_inner);
                w.stop = true;
                cv.notify_all();
                return Err(Error::new(
                    ErrorKind::Io,
                    format!("cannot start a capture summary worker: {e}"),
                ));
            }
        }
        for i in 0..entries.len() {
            let item = {
                let mut w = state.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    if let Some(item) = w.done.remove(&i) {
                        break item;
                    }
                    w = cv.wait(w).unwrap_or_else(PoisonError::into_inner);
                }
            };
            {
                let mut w = state.lock().unwrap_or_else(PoisonError::into_inner);
                w.emitted = i + 1;
                cv.notify_all();
            }
            if let Some((v, t)) = item {
                counts.add(v.status);
                if each(v, t).is_break() {
                    let mut w = state.lock().unwrap_or_else(PoisonError::into_inner);
                    w.stop = true;
                    cv.notify_all();
                    break;
                }
            }
        }
        Ok(())
    })?;
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_rule() {
        let c = |closed, incomplete, unknown, no_session| CaptureCounts {
            closed,
            incomplete,
            unknown,
            no_session,
        };
        assert_eq!(c(2, 0, 0, 5).exit_status(), 0);
        assert_eq!(c(2, 1, 0, 0).exit_status(), 1);
        assert_eq!(c(0, 1, 0, 0).exit_status(), 1);
        assert_eq!(c(2, 1, 1, 0).exit_status(), 3);
        assert_eq!(c(0, 0, 0, 0).exit_status(), 3, "none found");
        assert_eq!(c(0, 0, 0, 3).exit_status(), 3, "only discovery-only runs");
        assert_eq!(
            c(1, 2, 3, 4).summary_line(),
            r#"{"summary":{"closed":1,"incomplete":2,"unknown":3,"no_session":4}}"#
        );
    }

    #[test]
    fn order_and_early_stop_with_many_entries() {
        let d = tempfile::tempdir().unwrap();
        // Directories without protocol.json and plain files are not captures.
        for i in 0..200 {
            let dir = d.path().join(format!("c{i:04}"));
            std::fs::create_dir(&dir).unwrap();
            if i % 3 != 0 {
                std::fs::write(dir.join(PROTOCOL), b"{}").unwrap();
            }
        }
        std::fs::write(d.path().join("a-file"), b"x").unwrap();
        let mut names = Vec::new();
        let counts = read_captures(d.path(), |v| {
            names.push(v.name);
            ControlFlow::Continue(())
        })
        .unwrap();
        let want: Vec<String> = (0..200)
            .filter(|i| i % 3 != 0)
            .map(|i| format!("c{i:04}"))
            .collect();
        assert_eq!(names, want);
        assert_eq!(counts.unknown, want.len() as u64);

        let mut seen = 0;
        let counts = read_captures(d.path(), |_| {
            seen += 1;
            if seen == 5 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        assert_eq!(seen, 5);
        assert_eq!(counts.unknown, 5);
    }

    #[test]
    fn root_must_be_a_directory() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        for p in [f, d.path().join("missing")] {
            let e = read_captures(&p, |_| ControlFlow::Continue(())).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        }
    }
}
