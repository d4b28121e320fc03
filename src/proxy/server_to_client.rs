//! The server→client worker: copies the child's stdout to the client output line by line,
//! byte-exact, never re-serialized — except a `tools/list` result answering the client from which
//! `hide_refused_tools` removes tools (`tools_list`, SPEC §5). When coverage is requested it also
//! reads the tool names out of `tools/list` results.

use std::process::ChildStdout;
use std::sync::Arc;

use super::line::LineReader;
use super::{Shared, WorkerError, tools_list};

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
            let edited = tools_list::on_server_line(&shared, line);
            shared
                .output
                .write_line(edited.as_deref().unwrap_or(line))
                .map_err(|e| WorkerError::Io(format!("writing to the client: {e}")))?;
        }
        shared
            .output
            .flush()
            .map_err(|e| WorkerError::Io(format!("writing to the client: {e}")))
    }
}
