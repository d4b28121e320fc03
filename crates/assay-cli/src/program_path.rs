//! The absolute path of the running `assay` (SPEC §10: `mcp wrap-config` writes it into host
//! configurations; the demo runs `mcp wrap` through it): the native binary's own path, or the
//! console script's when the Python package runs the command line. Set once by `run`; the native
//! binary (`run_native`) reads its own path only when a command asks for it: the first read of
//! `/proc/self/exe` in a new process costs 13–29 µs here, and `mcp wrap` never needs it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static EXE: OnceLock<PathBuf> = OnceLock::new();

/// Records `exe` (made absolute against the working directory) as this process's `assay`; only
/// the first call has an effect.
pub(crate) fn set(exe: &Path) {
    let _ = EXE.set(absolute(exe.to_path_buf()));
}

/// The path this `assay` runs from: the one [`set`] recorded, else this program's own, read now
/// (`assay` in the working directory when it cannot be read, as the native binary always had it).
pub(crate) fn get() -> PathBuf {
    EXE.get_or_init(|| absolute(std::env::current_exe().unwrap_or_else(|_| PathBuf::from("assay"))))
        .clone()
}

/// `exe` made absolute against the working directory, or as it is when that fails.
fn absolute(exe: PathBuf) -> PathBuf {
    std::path::absolute(&exe).unwrap_or(exe)
}
