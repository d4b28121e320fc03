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

use std::ops::ControlFlow;
use std::path::Path;

use serde::Serialize;

use super::judgement::{Closure, ClosureKind, ClosureReasonCode};
use super::reader;
use super::root_walk::{Visit, walk_root};
use crate::capture_files::PROTOCOL;
use crate::error::Result;
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
    /// Counts one capture of `status`.
    pub fn add(&mut self, status: CaptureStatus) {
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
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) when `root` does not exist
/// or is not a directory (a usage error, exit status 2); [`ErrorKind::Io`](crate::ErrorKind::Io)
/// when it cannot be opened or listed.
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
    let mut counts = CaptureCounts::default();
    let read = |dir: &Path, name: &str| {
        let closure = reader::judge(dir);
        let server_id = super::show::label(dir, &closure);
        let verdict = CaptureVerdict {
            name: name.to_string(),
            status: CaptureStatus::of(&closure),
            server_id,
            closure,
        };
        let t = work(Some(dir), &verdict);
        (verdict, t)
    };
    walk_root(root, WINDOW_PER_WORKER, read, |name, visit| {
        let (verdict, t) = match visit {
            Visit::Read(read) => read,
            Visit::Refused(closure) => {
                let verdict = CaptureVerdict {
                    name,
                    status: CaptureStatus::of(&closure),
                    server_id: None,
                    closure,
                };
                let t = work(None, &verdict);
                (verdict, t)
            }
        };
        counts.add(verdict.status);
        each(verdict, t)
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
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument, "{e}");
        }
    }
}
