//! Conversions between Python and Rust values: result classes (`WrapOutcome`, `Closure`,
//! `Reason`, `PackageManifest`) as immutable objects with getters and `to_dict()`, and JSON values
//! into plain Python objects. Arguments arrive already normalised by `assay_stop/__init__.py`
//! (paths are `str`, descriptors are `int`), so PyO3's own extraction covers them.

use std::path::Path;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString};
use serde::Serialize;
use serde_json::Value;

/// Converts a JSON value into `None`/`bool`/`int`/`float`/`str`/`list`/`dict`.
pub(crate) fn json_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                // serde_json numbers are finite; `as_f64` is `Some` for every other number.
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map {
                dict.set_item(k, json_to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// Serializes a result type and converts it into Python objects.
fn to_py<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(value).map_err(|e| {
        pyo3::exceptions::PyRuntimeError::new_err(format!("cannot convert result: {e}"))
    })?;
    json_to_py(py, &json)
}

/// A path as Python's `os.fsdecode` gives it: a `str`, its non-UTF-8 bytes as surrogate escapes,
/// so it names the file that exists (SPEC §3.1b "Bytes paths"); never a lossy rendering.
fn path_str(p: Option<&Path>) -> Option<&std::ffi::OsStr> {
    p.map(Path::as_os_str)
}

/// [`assay::OutputPaths`] as a dict of `os.fsdecode`-style `str` (or `None`), key for key as in
/// the library's JSON form.
fn paths_dict<'py>(py: Python<'py>, p: &assay::OutputPaths) -> PyResult<Bound<'py, PyAny>> {
    let dict = pyo3::types::PyDict::new(py);
    for (key, value) in [
        ("decision_log", &p.decision_log),
        ("session_context", &p.session_context),
        ("session_stop", &p.session_stop),
        ("coverage", &p.coverage),
        ("protocol", &p.protocol),
        ("capture_dir", &p.capture_dir),
        ("no_session", &p.no_session),
    ] {
        dict.set_item(key, path_str(value.as_deref()))?;
    }
    // Only when the capture was signed, as in the library's JSON: the keys of an unsigned
    // session's paths are what they were before signing existed.
    if let Some(attestation) = &p.attestation {
        dict.set_item("attestation", path_str(Some(attestation.as_path())))?;
    }
    Ok(dict.into_any())
}

/// What `wrap_session` observed. Immutable.
#[pyclass(frozen, module = "assay_stop", name = "WrapOutcome")]
pub(crate) struct WrapOutcome {
    inner: assay::WrapOutcome,
}

impl From<assay::WrapOutcome> for WrapOutcome {
    fn from(inner: assay::WrapOutcome) -> Self {
        Self { inner }
    }
}

impl WrapOutcome {
    /// The stop record's `data` object, exactly as SPEC §4.3 names its keys.
    fn stop_value(&self) -> PyResult<Value> {
        serde_json::to_value(&self.inner.stop).map_err(|e| {
            pyo3::exceptions::PyRuntimeError::new_err(format!("cannot convert result: {e}"))
        })
    }
}

#[pymethods]
impl WrapOutcome {
    #[getter]
    fn session_id(&self) -> &str {
        &self.inner.session_id
    }
    /// The `assay mcp wrap` exit status for this session (SPEC §10), not the child's exit code.
    #[getter]
    fn exit_code(&self) -> i32 {
        self.inner.exit_code
    }
    /// The child's own exit code (the stop record's `exit_code`).
    #[getter]
    fn child_exit_code(&self) -> Option<i32> {
        self.inner.stop.exit_code
    }
    #[getter]
    fn server_id(&self) -> &str {
        &self.inner.stop.server_id
    }
    #[getter]
    fn server_pid(&self) -> u32 {
        self.inner.stop.server_pid
    }
    #[getter]
    fn session_context_id(&self) -> Option<&str> {
        self.inner.stop.session_context_id.as_deref()
    }
    #[getter]
    fn session_end<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.stop.session_end)
    }
    #[getter]
    fn termination<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.stop.termination)
    }
    #[getter]
    fn signal(&self) -> Option<i32> {
        self.inner.stop.signal
    }
    #[getter]
    fn core_dumped(&self) -> Option<bool> {
        self.inner.stop.core_dumped
    }
    #[getter]
    fn assay_kill_requested(&self) -> bool {
        self.inner.stop.assay_kill_requested
    }
    #[getter]
    fn group_killed(&self) -> bool {
        self.inner.stop.group_killed
    }
    #[getter]
    fn decision_log<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.stop.decision_log)
    }
    #[getter]
    fn decision_events_written(&self) -> Option<u64> {
        self.inner.stop.decision_events_written
    }
    #[getter]
    fn decision_events_dropped(&self) -> Option<u64> {
        self.inner.stop.decision_events_dropped
    }
    #[getter]
    fn decision_prefix_sha256(&self) -> Option<&str> {
        self.inner.stop.decision_prefix_sha256.as_deref()
    }
    #[getter]
    fn assertion_basis(&self) -> &str {
        &self.inner.stop.assertion_basis
    }
    #[getter]
    fn non_claims(&self) -> Vec<String> {
        self.inner.stop.non_claims.clone()
    }
    /// The stop record's `data` object (every key of SPEC §4.3).
    #[getter]
    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &self.stop_value()?)
    }
    #[getter]
    fn paths<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        paths_dict(py, &self.inner.paths)
    }
    #[getter]
    fn capture_dir(&self) -> Option<&std::ffi::OsStr> {
        path_str(self.inner.paths.capture_dir.as_deref())
    }
    #[getter]
    fn stop_written(&self) -> bool {
        self.inner.stop_written
    }
    #[getter]
    fn discovery_only(&self) -> bool {
        self.inner.discovery_only
    }
    #[getter]
    fn evidence_errors(&self) -> Vec<String> {
        self.inner.evidence_errors.clone()
    }
    #[getter]
    fn proxy_error(&self) -> Option<&str> {
        self.inner.proxy_error.as_deref()
    }
    /// With `sign_key`: whether the capture was signed (SPEC §4.5); `None` without a key.
    #[getter]
    fn signed(&self) -> Option<bool> {
        self.inner.signature.as_ref().map(|s| s.signed)
    }
    /// With `sign_key`: `{"signed", "keyid", "error"}`; `None` without a key.
    #[getter]
    fn signature<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.signature)
    }

    /// A plain dict: `session_id`, `exit_code` (the CLI status), `child_exit_code`, every other
    /// stop field at the top level, `stop` (the exact stop `data`), `paths`, `stop_written`,
    /// `discovery_only`, `evidence_errors`, `proxy_error`, `signed`, `signature`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // The library's one JSON form of the outcome, so C and Python agree key for key; its
        // paths as `os.fsdecode` gives them (JSON text cannot hold a non-UTF-8 path).
        let dict = json_to_py(py, &self.inner.to_json_value())?;
        dict.set_item("paths", paths_dict(py, &self.inner.paths)?)?;
        Ok(dict)
    }

    fn __repr__(&self) -> String {
        format!(
            "WrapOutcome(session_id={:?}, exit_code={}, termination={:?}, decision_log={:?}, stop_written={})",
            self.inner.session_id,
            self.inner.exit_code,
            serde_json::to_value(self.inner.stop.termination).unwrap_or_default(),
            serde_json::to_value(self.inner.stop.decision_log).unwrap_or_default(),
            if self.inner.stop_written {
                "True"
            } else {
                "False"
            },
        )
    }
}

/// One reason behind a verdict that is not `closed`. Immutable.
#[pyclass(frozen, module = "assay_stop", name = "Reason")]
pub(crate) struct Reason {
    code: &'static str,
    detail: String,
}

#[pymethods]
impl Reason {
    #[getter]
    fn code(&self) -> &'static str {
        self.code
    }
    #[getter]
    fn detail(&self) -> &str {
        &self.detail
    }
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("code", self.code)?;
        dict.set_item("detail", &self.detail)?;
        Ok(dict)
    }
    fn __repr__(&self) -> String {
        format!("Reason(code={:?}, detail={:?})", self.code, self.detail)
    }
}

/// The verdict on a capture directory (`assay.capture.closure.v1`). Immutable.
#[pyclass(frozen, module = "assay_stop", name = "Closure")]
pub(crate) struct Closure {
    inner: assay::Closure,
    /// The entry name under a capture root (`read_captures`); `None` from `read_capture`.
    capture: Option<String>,
}

impl From<assay::Closure> for Closure {
    fn from(inner: assay::Closure) -> Self {
        Self {
            inner,
            capture: None,
        }
    }
}

impl From<assay::CaptureVerdict> for Closure {
    fn from(v: assay::CaptureVerdict) -> Self {
        Self {
            inner: v.closure,
            capture: Some(v.name),
        }
    }
}

#[pymethods]
impl Closure {
    #[getter]
    fn schema(&self) -> &'static str {
        self.inner.schema
    }
    #[getter]
    fn closure(&self) -> &'static str {
        self.inner.closure.as_str()
    }
    /// The `capture read` exit status for this verdict: 0 closed, 1 incomplete, 3 unknown
    /// (SPEC §10; the library's one map).
    #[getter]
    fn exit_status(&self) -> i32 {
        self.inner.closure.exit_status()
    }
    #[getter]
    fn reasons(&self) -> Vec<Reason> {
        self.inner
            .reasons
            .iter()
            .map(|r| Reason {
                code: r.code.as_str(),
                detail: r.detail.clone(),
            })
            .collect()
    }
    #[getter]
    fn session_id(&self) -> Option<&str> {
        self.inner.session_id.as_deref()
    }
    /// The capture's name under the root (from `read_captures`), else `None`.
    #[getter]
    fn capture(&self) -> Option<&str> {
        self.capture.as_deref()
    }
    /// A discovery-only run: `unknown` with `no_session` as its only reason (SPEC §10).
    #[getter]
    fn no_session(&self) -> bool {
        assay::CaptureStatus::of(&self.inner) == assay::CaptureStatus::NoSession
    }
    /// The stop event's `data` fields (without `session_id` and `non_claims`), or `None` when
    /// the stop event did not pass its checks.
    #[getter]
    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match &self.inner.stop {
            Some(map) => Ok(Some(json_to_py(py, &Value::Object(map.clone()))?)),
            None => Ok(None),
        }
    }
    #[getter]
    fn files<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.files)
    }
    #[getter]
    fn non_claims(&self) -> Vec<String> {
        self.inner.non_claims.clone()
    }
    /// The verdict object as a dict (stop fields at the top level, as in the JSON).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner)
    }
    /// The verdict as JSON text: compact, or pretty with `indent=True` (as `assay capture read`).
    #[pyo3(signature = (*, indent = false))]
    fn to_json(&self, indent: bool) -> String {
        if indent {
            serde_json::to_string_pretty(&self.inner).unwrap_or_else(|_| self.inner.to_json())
        } else {
            self.inner.to_json()
        }
    }
    fn __repr__(&self) -> String {
        let capture = match &self.capture {
            Some(name) => format!("capture={name:?}, "),
            None => String::new(),
        };
        // `None` or the quoted id, as Python shows them (never Rust's `Some("…")`).
        let session_id = match &self.inner.session_id {
            Some(id) => format!("{id:?}"),
            None => "None".to_string(),
        };
        format!(
            "Closure({capture}closure={:?}, session_id={session_id}, reasons={})",
            self.inner.closure.as_str(),
            self.inner.reasons.len()
        )
    }
}

/// The manifest written by `package_capture` (`assay.capture.package.v1`). Immutable.
#[pyclass(frozen, module = "assay_stop", name = "PackageManifest")]
pub(crate) struct PackageManifest {
    inner: Value,
}

impl From<assay::PackageManifest> for PackageManifest {
    /// Held as the JSON of `manifest.json`, so the getters and `to_dict()` return exactly what
    /// the file holds.
    fn from(manifest: assay::PackageManifest) -> Self {
        // A manifest is strings, numbers and the verdict: serializing it cannot fail.
        let inner = serde_json::to_value(&manifest).unwrap_or(Value::Null);
        Self { inner }
    }
}

impl PackageManifest {
    fn field<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, self.inner.get(key).unwrap_or(&Value::Null))
    }
}

#[pymethods]
impl PackageManifest {
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "schema")
    }
    #[getter]
    fn files<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "files")
    }
    #[getter]
    fn producer<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "producer")
    }
    #[getter]
    fn extra_files<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "extra_files")
    }
    /// The closure verdict of the packaged files, as a dict.
    #[getter]
    fn closure<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "closure")
    }
    #[getter]
    fn non_claims<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "non_claims")
    }
    /// The manifest as a dict (the content of `manifest.json`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &self.inner)
    }
    fn __repr__(&self) -> String {
        let verdict = self
            .inner
            .pointer("/closure/closure")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        format!("PackageManifest(closure={verdict:?})")
    }
}
