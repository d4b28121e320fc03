//! `assay_stop._native`: the PyO3 extension behind `import assay_stop` (SPEC §9).
//!
//! This crate only translates: Python arguments into an [`assay::WrapConfig`] and a
//! [`assay::ClientIo`], library results into immutable Python objects, library errors into the
//! three exceptions of `errors`. Every decision is made by the `assay` library. The public,
//! documented API is the Python package `assay_stop` (`python/assay_stop/`), which normalises
//! `os.PathLike` paths and `fileno()` objects before calling in here; the docstrings users see
//! live in `python/assay_stop/_native.pyi`.

use std::os::fd::RawFd;
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyList;

mod convert;
mod errors;
mod finalizing;
mod listing;

use convert::{Closure, PackageManifest, Reason, WrapOutcome};
use errors::{ConfigError, StopWriteError, WrapError, to_pyerr};

/// Runs one wrapped session. See `_native.pyi` for the documentation.
#[pyfunction]
#[pyo3(signature = (
    command, *, policy, event_source = None, label = None, decision_log = None,
    decision_log_new = false, session_context_out = None, session_stop_out = None,
    coverage_out = None, capture_dir = None, capture_root = None, dry_run = false,
    drain_timeout = None, max_line_bytes = None, stdin = 0, stdout = 1, stderr = None,
    verbose = false, forward_signals = false, idle_drain = None, sign_key = None,
    otlp_endpoint = None
))]
// One parameter per SPEC §9 keyword: this mirrors the Python signature.
#[allow(clippy::too_many_arguments)]
fn wrap_session(
    py: Python<'_>,
    command: Vec<std::ffi::OsString>,
    policy: PathBuf,
    event_source: Option<String>,
    label: Option<String>,
    decision_log: Option<PathBuf>,
    decision_log_new: bool,
    session_context_out: Option<PathBuf>,
    session_stop_out: Option<PathBuf>,
    coverage_out: Option<PathBuf>,
    capture_dir: Option<PathBuf>,
    capture_root: Option<PathBuf>,
    dry_run: bool,
    drain_timeout: Option<f64>,
    max_line_bytes: Option<u64>,
    stdin: RawFd,
    stdout: RawFd,
    stderr: Option<PathBuf>,
    verbose: bool,
    forward_signals: bool,
    idle_drain: Option<f64>,
    sign_key: Option<PathBuf>,
    otlp_endpoint: Option<String>,
) -> PyResult<Bound<'_, WrapOutcome>> {
    // Every argument is an owned Rust value before the GIL is released.
    let mut config = assay::WrapConfig::new(command, policy);
    config.event_source = event_source;
    config.label = label;
    config.decision_log = decision_log;
    config.decision_log_new = decision_log_new;
    config.session_context_out = session_context_out;
    config.session_stop_out = session_stop_out;
    config.coverage_out = coverage_out;
    config.capture_dir = capture_dir;
    config.capture_root = capture_root;
    config.dry_run = dry_run;
    config.drain_timeout = drain_timeout;
    config.max_line_bytes = max_line_bytes;
    config.stdin = stdin;
    config.stdout = stdout;
    config.stderr = stderr;
    config.verbose = verbose;
    config.forward_signals = forward_signals;
    config.idle_drain = idle_drain;
    config.sign_key = sign_key;
    config.otlp_endpoint = otlp_endpoint;
    let io = assay::ClientIo::from_borrowed(stdin, stdout).map_err(|e| to_pyerr(py, e))?;
    // The session blocks until the client closes its input: release the GIL for all of it so
    // other Python threads run. Ctrl-C is only seen once this returns (documented in the .pyi).
    crate::finalizing::detach(
        py,
        move || assay::wrap_session(&config, io),
        |py, result| match result {
            Ok(outcome) => Bound::new(py, WrapOutcome::from(outcome)),
            Err(e) => Err(to_pyerr(py, e)),
        },
    )
}

/// Judges a capture directory. Never raises for a bad capture.
#[pyfunction]
fn read_capture(py: Python<'_>, path: PathBuf) -> PyResult<Bound<'_, Closure>> {
    crate::finalizing::detach(
        py,
        move || assay::read_capture(&path),
        |py, closure| Bound::new(py, Closure::from(closure)),
    )
}

/// Judges every capture under a capture root, in name order. Raises only for a bad root.
#[pyfunction]
fn read_captures(py: Python<'_>, root: PathBuf) -> PyResult<Bound<'_, PyList>> {
    crate::finalizing::detach(
        py,
        move || {
            let mut verdicts = Vec::new();
            assay::read_captures(&root, |v| {
                verdicts.push(v);
                std::ops::ControlFlow::Continue(())
            })
            .map(|_| verdicts)
        },
        |py, result| match result {
            Ok(verdicts) => {
                let closures = verdicts
                    .into_iter()
                    .map(|v| Bound::new(py, Closure::from(v)))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, closures)
            }
            Err(e) => Err(to_pyerr(py, e)),
        },
    )
}

/// Copies a capture into a new directory with a manifest.
#[pyfunction]
#[pyo3(signature = (src, dst, extra_files = Vec::new()))]
fn package_capture(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    extra_files: Vec<PathBuf>,
) -> PyResult<Bound<'_, PackageManifest>> {
    crate::finalizing::detach(
        py,
        move || assay::package_capture(&src, &dst, &extra_files),
        |py, result| match result {
            Ok(manifest) => Bound::new(py, PackageManifest::from(manifest)),
            Err(e) => Err(to_pyerr(py, e)),
        },
    )
}

/// Runs the `assay` command line with `argv` (`argv[0]` the program name) and returns its exit
/// status; `exe` is the path of the `assay` console script (SPEC §10 `mcp wrap-config` writes it
/// into host configurations). The GIL is released for the whole run.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<std::ffi::OsString>, exe: PathBuf) -> PyResult<u8> {
    crate::finalizing::detach(
        py,
        move || assay_cli::run(argv, &exe),
        |_, status| Ok(status),
    )
}

#[pymodule(gil_used = false)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(wrap_session, m)?)?;
    m.add_function(wrap_pyfunction!(read_capture, m)?)?;
    m.add_function(wrap_pyfunction!(read_captures, m)?)?;
    m.add_function(wrap_pyfunction!(package_capture, m)?)?;
    m.add_function(wrap_pyfunction!(listing::list_tools, m)?)?;
    m.add_class::<listing::ToolListing>()?;
    m.add_class::<listing::ListedTool>()?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_class::<WrapOutcome>()?;
    m.add_class::<Closure>()?;
    m.add_class::<Reason>()?;
    m.add_class::<PackageManifest>()?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("WrapError", py.get_type::<WrapError>())?;
    m.add("StopWriteError", py.get_type::<StopWriteError>())?;
    finalizing::install(m)?;
    Ok(())
}
