//! The `assay` command line: a thin consumer of the `assay` library. Argument parsing and exit
//! statuses live here; every decision is the library's.

mod args;
mod capture;
mod demo;
mod messages;
mod wrap;

use std::process::ExitCode;

use clap::Parser;

use args::{CaptureCommand, Cli, Command, McpCommand};

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
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with status 0; usage errors exit 2 (SPEC §10).
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
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
        Command::Demo(args) => demo::run(args),
    }
}
