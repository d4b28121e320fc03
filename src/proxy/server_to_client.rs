//! The server→client worker: copies the child's stdout to the client output line by line,
//! byte-exact, never re-serialized. When coverage is requested it also reads the tool names out of
//! `tools/list` results (it never changes them).

use std::collections::BTreeSet;
use std::process::ChildStdout;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::line::LineReader;
use super::{Shared, WorkerError};

pub(crate) struct ServerWorker {
    pub reader: LineReader<ChildStdout>,
    pub shared: Arc<Shared>,
}

impl ServerWorker {
    pub(crate) fn run(mut self) -> Result<(), WorkerError> {
        let shared = self.shared.clone();
        loop {
            let output = &shared.output;
            let mut idle = || output.flush();
            let line = match self.reader.next_line(&mut idle) {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(e) => return Err(WorkerError::from_line(e, "server output")),
            };
            if shared.track_tools_list {
                observe_tools_list(&shared, line);
            }
            // Only the server's last bytes lack a `\n`: they go out together with the close.
            if !line.ends_with(b"\n") {
                return finish(&shared, line);
            }
            shared
                .output
                .write_line(line)
                .map_err(|e| WorkerError::Io(format!("writing to the client: {e}")))?;
        }
        finish(&shared, b"")
    }
}

/// Server stdout EOF: flush and close the client output (SPEC §3 item 7).
fn finish(shared: &Shared, last: &[u8]) -> Result<(), WorkerError> {
    shared
        .output
        .finish(last)
        .map_err(|e| WorkerError::Io(format!("writing to the client: {e}")))
}

#[derive(Deserialize)]
struct ListResponse<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    result: Option<ListResult>,
}

#[derive(Deserialize)]
struct ListResult {
    tools: Option<Vec<ToolEntry>>,
}

#[derive(Deserialize)]
struct ToolEntry {
    name: Option<String>,
}

/// Records the tool names of a `tools/list` result answering a request the client sent.
fn observe_tools_list(shared: &Shared, line: &[u8]) {
    let pending_empty = shared
        .pending_tools_list
        .lock()
        .map(|p| p.is_empty())
        .unwrap_or(true);
    if pending_empty || memchr::memmem::find(line, b"\"tools\"").is_none() {
        return;
    }
    if crate::strict_json::scan(line, super::message::CLIENT_MAX_DEPTH).is_err() {
        return;
    }
    let Ok(resp) = serde_json::from_slice::<ListResponse<'_>>(line) else {
        return;
    };
    let (Some(id), Some(ListResult { tools: Some(tools) })) = (resp.id, resp.result) else {
        return;
    };
    let matched = shared
        .pending_tools_list
        .lock()
        .map(|mut p| p.remove(id.get()))
        .unwrap_or(false);
    if !matched {
        return;
    }
    let names: BTreeSet<String> = tools.into_iter().filter_map(|t| t.name).collect();
    if let Ok(mut observed) = shared.observed_tools.lock() {
        observed.extend(names);
    }
}
