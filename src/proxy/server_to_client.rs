//! The server→client worker: copies the child's stdout to the client output line by line,
//! byte-exact, never re-serialized — except a `tools/list` result answering the client from which
//! `hide_refused_tools` removes tools (`tools_list`, SPEC §5). When coverage is requested it also
//! reads the tool names out of `tools/list` results.

use std::sync::Arc;

use super::endpoint::Endpoint;
use super::line::LineReader;
use super::shared::Shared;
use super::tools_list;
use super::workers::WorkerError;

pub(crate) struct ServerWorker {
    pub reader: LineReader<Endpoint>,
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
            shared.pending.on_server_line(line);
            let edited = tools_list::on_server_line(
                &shared.tools_list,
                &shared.observed_tools,
                &shared.policy,
                line,
            );
            let out = edited.as_deref().unwrap_or(line);
            // Only the server's last bytes lack a `\n`: they go out together with the close.
            if !line.ends_with(b"\n") {
                return finish(&shared, out);
            }
            shared
                .output
                .write_line(out)
                .map_err(super::emitter::to_client)?;
        }
        finish(&shared, b"")
    }
}

/// Server stdout EOF: flush and close the client output (SPEC §3 item 7).
fn finish(shared: &Shared, last: &[u8]) -> Result<(), WorkerError> {
    shared
        .output
        .finish(last)
        .map_err(super::emitter::to_client)
}
