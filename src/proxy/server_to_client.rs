//! The server→client worker: copies the child's stdout to the client output line by line,
//! byte-exact, never re-serialized — except answers to the client's `tools/list` requests while
//! the filter is in effect, which `tools_list` rewrites or replaces (SPEC §5).

use std::sync::Arc;

use super::endpoint::Endpoint;
use super::line::LineReader;
use super::shared::Shared;
use super::tools_list::{self, ServerLine};
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
            let last = !line.ends_with(b"\n");
            let written = match tools_list::on_server_line(&shared.tools_list, &shared.policy, line)
            {
                ServerLine::Forward if last => {
                    // Only the server's last bytes lack a `\n`: they go out with the close.
                    return finish(&shared, line);
                }
                ServerLine::Forward => shared.output.write_line(line),
                ServerLine::Rewrite(r) => {
                    if let Some(notice) = r.notice() {
                        shared.diag.say(&notice);
                    }
                    let written = shared.output.write_with(|w| r.write_to(w));
                    if last {
                        return written
                            .map_err(super::emitter::to_client)
                            .and_then(|()| finish(&shared, b""));
                    }
                    written
                }
            };
            written.map_err(super::emitter::to_client)?;
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
