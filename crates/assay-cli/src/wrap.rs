//! `assay mcp wrap`: runs the session on this process's stdin/stdout.

use std::process::ExitCode;

use assay::{ClientIo, ErrorKind, WrapConfig, wrap_session};

use super::exit;
use super::messages::{Failure, eprint_assay};

/// Runs the session; the status is the outcome's (SPEC §10). The outcome's diagnostics are
/// printed here; a session that could not run is a [`Failure`].
pub(crate) fn run(config: WrapConfig) -> Result<ExitCode, Failure> {
    // SPEC §3 item 9: descendants of the server that leave its process group (a daemonizing
    // server) are reparented to this process and ended with the session. Best effort: a kernel
    // without the option (before 3.4) leaves them to init, as before.
    if let Err(e) = assay::become_subreaper() {
        eprint_assay(&format!(
            "cannot become a child subreaper ({e}): a server process that leaves its process group may outlive this session"
        ));
    }
    let io = ClientIo::take_stdio().map_err(|error| Failure::Io {
        what: "cannot use stdin/stdout",
        error,
        status: exit::FAILURE,
    })?;
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
            Ok(exit::code(outcome.exit_code))
        }
        Err(error) => Err(Failure::Library {
            context: match error.kind() {
                ErrorKind::StopWrite => "session stop write failed: ",
                _ => "",
            },
            error,
        }),
    }
}
