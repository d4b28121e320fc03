//! What a session created before its server started, removed again when the server cannot be
//! started (SPEC §10: a spawn failure — 126/127 — inside a capture directory the run created
//! leaves nothing behind, as a configuration error creates nothing; the reason goes to stderr).

use std::path::{Path, PathBuf};

/// Files and the directory a session created while it prepared its evidence.
#[derive(Default)]
pub(crate) struct StartupFiles {
    /// Created by this run (never a file that existed before, such as an append-mode log).
    files: Vec<PathBuf>,
    /// A capture directory this run created.
    dir: Option<PathBuf>,
    /// The capture root this run created for that directory.
    root: Option<PathBuf>,
}

impl StartupFiles {
    pub(crate) fn file(&mut self, path: &Path) {
        self.files.push(path.to_path_buf());
    }

    pub(crate) fn dir(&mut self, path: &Path) {
        self.dir = Some(path.to_path_buf());
    }

    /// The capture root this run created (SPEC §10: removed again when the run leaves nothing
    /// in it).
    pub(crate) fn root(&mut self, path: &Path) {
        self.root = Some(path.to_path_buf());
    }

    /// Removes what this run created: its files, then its directory when that is empty (it
    /// holds nothing else: the run made it), then the capture root it made when that is empty
    /// too (another run may have placed its directory there meanwhile: then it stays). Best
    /// effort: the startup error is what is reported.
    pub(crate) fn remove(self) {
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir(d);
        }
        if let Some(r) = &self.root {
            let _ = std::fs::remove_dir(r);
        }
    }
}
