//! The reader's pass over the decision log, done while the session writes the log
//! (docs/decisions.md, "Signing reads the log as it is written"): a session that signs its
//! capture follows its log from the start, with the reader's own code — the bounded opener, the
//! line checks ([`read_lines`]), the hashing — and at stop reads only the tail and runs the rest
//! of the reader ([`judge_with`]). The verdict is the one [`super::read_capture`] gives of the
//! directory then.
//!
//! Anything unusual gives the log back to the full read ([`check_log_file`]): expectations that
//! differ at stop from those the lines were checked against, a log that is no longer the file
//! that was followed (another inode) or is shorter than what was read, or a read that failed or
//! went past the bound.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::bounds::MAX_LOG_BYTES;
use super::decision_line::OwnedExpect;
use super::judgement::Closure;
use super::log::{LogPass, check_log_file, conclude, lost, open_log, read_lines};
use super::log_digest::Hashing;
use super::reader::{expectations_before_stop, judge_with};
use crate::sys::fork_close::Tracked;

/// A capture's decision log, read as it grows.
pub(crate) struct LogFollower {
    dir: PathBuf,
    /// Held for the session; not kept by a fork of the host (SPEC §3.1b).
    file: Tracked<File>,
    /// The followed file's device and inode.
    id: (u64, u64),
    exp: OwnedExpect,
    pass: LogPass,
    hashing: Hashing<'static>,
    /// A read failed or passed the bound: the pass is not used.
    broken: bool,
}

/// How [`LogFollower::finish`] judged the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogPassUsed {
    /// The followed pass, with the tail read at stop.
    Followed,
    /// The full read.
    Full,
}

/// A reader of a file that reads nothing once `halt` is set.
struct Until<'a> {
    file: &'a File,
    halt: &'a AtomicBool,
}

impl Read for Until<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.halt.load(Ordering::Acquire) {
            return Ok(0);
        }
        (&*self.file).read(buf)
    }
}

fn file_id(file: &File) -> std::io::Result<(u64, u64)> {
    let m = file.metadata()?;
    Ok((m.dev(), m.ino()))
}

/// Checks and hashes what `reader` gives after the bytes `pass` read so far, up to one byte past
/// the log's bound (the pass then says the log is too large). `false`: a read failed.
fn read_more(
    reader: impl Read,
    exp: &OwnedExpect,
    pass: &mut LogPass,
    hashing: &mut Hashing<'static>,
) -> bool {
    let mut reader = reader.take(MAX_LOG_BYTES + 1 - pass.total.min(MAX_LOG_BYTES));
    read_lines(&mut reader, &exp.view(), pass, hashing, &mut None).is_ok()
}

impl LogFollower {
    /// Starts following the log of capture `dir`, once its protocol record and context are
    /// written; `None` when the log cannot be opened (the full read judges it at stop).
    pub(crate) fn start(dir: &Path) -> Option<Self> {
        let exp = expectations_before_stop(dir);
        let (file, _) = open_log(dir).ok()?;
        // Held for the session: never one of the numbers 0, 1 and 2 (SPEC §3.1b).
        let file = crate::sys::fd::file_above_stdio(file).ok()?;
        let id = file_id(&file).ok()?;
        let file = Tracked::new(file);
        Some(Self {
            dir: dir.to_path_buf(),
            file,
            id,
            exp,
            pass: LogPass::new(),
            hashing: Hashing::here(),
            broken: false,
        })
    }

    /// The capture directory followed.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Reads and checks what was appended since the last read, up to the end of the file or
    /// until `halt` is set.
    pub(crate) fn step(&mut self, halt: &AtomicBool) {
        if self.broken {
            return;
        }
        let reader = Until {
            file: &self.file,
            halt,
        };
        if !read_more(reader, &self.exp, &mut self.pass, &mut self.hashing) {
            self.broken = true;
        }
    }

    /// Reads the rest of the log: through the bounded opener again, which must name the file
    /// followed, no shorter than what was read. `false`: the pass cannot be used.
    fn catch_up(&mut self) -> bool {
        if self.broken {
            return false;
        }
        let Ok((mut file, size)) = open_log(&self.dir) else {
            return false;
        };
        if file_id(&file).ok() != Some(self.id) || size < self.pass.total {
            return false;
        }
        if file.seek(SeekFrom::Start(self.pass.total)).is_err() {
            return false;
        }
        read_more(file, &self.exp, &mut self.pass, &mut self.hashing)
    }

    /// The reader's verdict on the capture now (after the stop record is written): the rest of
    /// the reader runs as [`super::read_capture`] runs it, with the followed pass of the log
    /// when it can be used, else the full read.
    pub(crate) fn finish(mut self) -> (Closure, LogPassUsed) {
        let dir = self.dir.clone();
        let mut used = LogPassUsed::Full;
        let (closure, _) = judge_with(&dir, false, |exp, stop, r, files, kept| {
            if self.exp.is(exp) && self.catch_up() {
                if let Ok(digests) = self.hashing.finish().map_err(lost) {
                    used = LogPassUsed::Followed;
                    return conclude(self.pass, digests, stop, r, files);
                }
            }
            check_log_file(&dir, exp, stop, r, files, kept);
        });
        (closure, used)
    }
}
