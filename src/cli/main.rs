//! The `assay` command line: a thin consumer of the `assay` library. Argument parsing and exit
//! statuses live here; every decision is the library's.
//!
//! One exit point: `main` calls [`run`], and a [`messages::Failure`] becomes one diagnostic and
//! the exit status in `Failure::report`.

mod args;
mod capture;
mod demo;
mod messages;
mod policy;
mod wrap;

use std::process::ExitCode;

use clap::Parser;

use args::{CaptureCommand, Cli, Command, McpCommand, PolicyCommand};
use messages::Failure;

fn main() -> ExitCode {
    // SPEC §3.1: a host that ignores SIGCHLD passes that on to us, and the kernel would then reap
    // the server before the wrapper could observe its status. Back to the default disposition
    // (a disposition, not a handler).
    // SAFETY: SIG_DFL installs no handler; nothing else runs yet.
    let _ = unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGCHLD,
            nix::sys::signal::SigHandler::SigDfl,
        )
    };
    match run() {
        Ok(status) => status,
        Err(failure) => failure.report(),
    }
}

/// Parses the command line and runs the command; the `Ok` status is the command's (SPEC §10).
fn run() -> Result<ExitCode, Failure> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go to stdout with status 0 (a reader that left early is no error).
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(Failure::Usage(e)),
    };
    match cli.command {
        Command::Mcp(McpCommand::Wrap(args)) => wrap::run(args.into()),
        Command::Capture(CaptureCommand::Read { dir }) => capture::read(&dir),
        Command::Capture(CaptureCommand::Summary { root }) => capture::summary(&root),
        Command::Capture(CaptureCommand::Package {
            dir,
            out,
            hash_file,
        }) => capture::package(&dir, &out, &hash_file),
        Command::Policy(PolicyCommand::Check { file, format }) => policy::check(&file, format),
        Command::Demo(args) => demo::run(args),
    }
}
