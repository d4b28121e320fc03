//! The absolute path of the running `assay` (SPEC §10: `mcp wrap-config` writes it into host
//! configurations; the demo runs `mcp wrap` through it): the native binary's own path, or the
//! console script's when the Python package runs the command line. Set once by `run`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static EXE: OnceLock<PathBuf> = OnceLock::new();

/// Records `exe` (made absolute against the working directory) as this process's `assay`; only
/// the first call has an effect.
pub(crate) fn set(exe: &Path) {
    let exe = std::path::absolute(exe).unwrap_or_else(|_| exe.to_path_buf());
    let _ = EXE.set(exe);
}

/// The path this `assay` runs from.
pub(crate) fn get() -> std::io::Result<PathBuf> {
    match EXE.get() {
        Some(p) => Ok(p.clone()),
        None => std::env::current_exe(),
    }
}
