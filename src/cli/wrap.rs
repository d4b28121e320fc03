//! `assay mcp wrap`: runs the session on this process's stdin/stdout.

use std::process::ExitCode;

use assay::{ClientIo, ErrorKind, WrapConfig, wrap_session};

use crate::messages::{eprint_assay, exit};

pub(crate) fn run(config: WrapConfig) -> ExitCode {
    let io = match ClientIo::take_stdio() {
        Ok(io) => io,
        Err(e) => {
            eprint_assay(&format!("cannot use stdin/stdout: {e}"));
            return exit(3);
        }
    };
    match wrap_session(&config, io) {
        Ok(outcome) => {
            for e in &outcome.evidence_errors {
                eprint_assay(&format!("evidence write failed: {e}"));
            }
            if let Some(why) = &outcome.proxy_error {
                eprint_assay(&format!("proxy error: {why}"));
            }
            if outcome.exit_code == 3 {
                eprint_assay(&format!(
                    "session ended with a wrapper failure ({:?}); {}",
                    outcome.stop.session_end,
                    outcome.stop.describe_status()
                ));
            }
            exit(outcome.exit_code)
        }
        Err(e) => {
            match e.kind() {
                ErrorKind::StopWrite => eprint_assay(&format!("session stop write failed: {e}")),
                _ => eprint_assay(&e.to_string()),
            }
            exit(e.exit_status())
        }
    }
}
