//! `assay_stop.list_tools`: a live server's tools as an MCP client lists them (SPEC §5.1,
//! `assay mcp pin`), for probes that check what a server shows before a session.

use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::WrapError;

/// One listed tool: its name, definition digest and the tool object. Immutable.
#[pyclass(module = "assay_stop", frozen, get_all)]
pub(crate) struct ListedTool {
    /// The tool's name.
    name: String,
    /// SHA-256 of the RFC 8785 canonical form of the tool object (SPEC §5.1).
    sha256: String,
    /// The tool object as the server listed it (a `dict`).
    definition: Py<PyAny>,
}

#[pymethods]
impl ListedTool {
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("name", &self.name)?;
        d.set_item("sha256", &self.sha256)?;
        d.set_item("definition", self.definition.bind(py))?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!("ListedTool(name={:?}, sha256={:?})", self.name, self.sha256)
    }
}

/// What a server listed. Immutable.
#[pyclass(module = "assay_stop", frozen, get_all)]
pub(crate) struct ToolListing {
    /// The protocol revision the server answered `initialize` with.
    protocol_version: String,
    /// The server's `serverInfo` (a `dict`), or `None`.
    server_info: Py<PyAny>,
    /// Every listed tool, in the server's order.
    tools: Vec<Py<ListedTool>>,
}

#[pymethods]
impl ToolListing {
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("protocol_version", &self.protocol_version)?;
        d.set_item("server_info", self.server_info.bind(py))?;
        let tools = self
            .tools
            .iter()
            .map(|t| t.borrow(py).to_dict(py))
            .collect::<PyResult<Vec<_>>>()?;
        d.set_item("tools", tools)?;
        Ok(d)
    }
}

/// Lists the tools of the server `command`. See `_native.pyi`.
#[pyfunction]
#[pyo3(signature = (command, *, timeout = 30.0))]
pub(crate) fn list_tools(
    py: Python<'_>,
    command: Vec<String>,
    timeout: f64,
) -> PyResult<Bound<'_, ToolListing>> {
    if command.is_empty() {
        return Err(PyValueError::new_err("command must not be empty"));
    }
    if !(timeout.is_finite() && timeout > 0.0) {
        return Err(PyValueError::new_err(
            "timeout must be a positive number of seconds",
        ));
    }
    crate::finalizing::detach(
        py,
        move || assay::pins::list_server_tools(&command, Duration::from_secs_f64(timeout), None),
        |py, listed| {
            let listing = listed
                .map_err(|e| WrapError::new_err(format!("cannot list the server's tools: {e}")))?;
            let loads = py.import("json")?.getattr("loads")?;
            let server_info = match &listing.server_info {
                Some(s) => loads.call1((s.as_str(),))?.unbind(),
                None => py.None(),
            };
            let tools = listing
                .tools
                .iter()
                .map(|t| {
                    Py::new(
                        py,
                        ListedTool {
                            name: t.name.clone(),
                            sha256: t.sha256().to_string(),
                            definition: loads.call1((t.definition.as_str(),))?.unbind(),
                        },
                    )
                })
                .collect::<PyResult<Vec<_>>>()?;
            Bound::new(
                py,
                ToolListing {
                    protocol_version: listing.protocol_version,
                    server_info,
                    tools,
                },
            )
        },
    )
}
