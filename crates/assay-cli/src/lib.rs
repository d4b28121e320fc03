//! The `assay` command line: a thin consumer of the `assay` library. Argument parsing and exit
//! statuses live here; every decision is the library's.
//!
//! This library is the command line: the `assay` binary (`src/main.rs`) and the `assay` console
//! script of the Python extension (`bindings/python`) both call the very same entry point,
//! [`run`]. It uses only the public `assay::` API.
//!
//! One exit point: [`run`] parses the arguments and runs the command, and a
//! `messages::Failure` becomes one diagnostic and the exit status in `Failure::report`.

mod args;
mod capture;
mod completions;
mod demo;
mod doctor;
mod doctor_close;
mod doctor_plan;
mod doctor_procs;
mod doctor_report;
mod doctor_run;
pub mod exit;
mod export;
mod hosts;
mod messages;
mod pin;
mod policy;
mod program_path;
mod replay;
mod show;
mod signing;

mod show_answers;
mod suggest;
mod text;
mod verify_answer;
mod wrap;
mod wrap_argv;
mod wrap_config_cmd;

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use args::{CaptureCommand, Command, McpCommand, PolicyCommand, SummaryFormat};
use messages::Failure;

/// Runs the command line `argv` (`argv[0]` is the program name) and returns its exit status
/// (SPEC §10). `exe` is the path of the `assay` program being run; a relative path is made
/// absolute against the working directory. Stdout is flushed before this returns (a host
/// process such as Python does not run Rust's exit-time flush).
///
/// The caller sets the process up as the native binary has it: `SIGPIPE` ignored, every other
/// signal at its default disposition. `SIGCHLD` is reset here (SPEC §3.1).
pub fn run(argv: Vec<OsString>, exe: &Path) -> u8 {
    program_path::set(exe);
    run_in(argv, args::Parsed::Freed)
}

/// [`run`] as the native `assay` binary runs it, the process ending when it returns: the
/// program's own path is read only by the commands that write it (`mcp wrap-config`, `demo`),
/// and clap's command line is left allocated once its values are taken, as the process's exit
/// frees it (freeing it took a third of the instructions of parsing `mcp wrap …`).
pub fn run_native(argv: Vec<OsString>) -> u8 {
    run_in(argv, args::Parsed::Kept)
}

fn run_in(argv: Vec<OsString>, parsed: args::Parsed) -> u8 {
    // SPEC §3.1: a SIGCHLD ignored by the host would let the kernel reap the server unobserved.
    assay::restore_default_sigchld();
    let status = match dispatch(argv, parsed) {
        Ok(status) => status,
        Err(failure) => failure.report(),
    };
    let _ = std::io::stdout().flush();
    status_number(status)
}

/// The number behind an `ExitCode` (the commands return `ExitCode`; the Python entry needs the
/// number). Every status this command line produces is one of `ExitCode::from(0..=255)`.
fn status_number(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|&n| ExitCode::from(n) == code)
        .unwrap_or(1)
}

/// Parses the command line and runs the command; the `Ok` status is the command's (SPEC §10).
fn dispatch(argv: Vec<OsString>, parsed: args::Parsed) -> Result<ExitCode, Failure> {
    // `mcp wrap` in its common form is read without clap (start-up, SPEC §11); anything else,
    // and any doubt, goes to clap.
    if let Some(config) = wrap_argv::read(&argv) {
        return wrap::run(config);
    }
    let cli = match args::parse(argv, parsed) {
        Ok(cli) => cli,
        // Help and version go to stdout with status 0 (a reader that left early is no error).
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return Ok(exit::code(exit::OK));
        }
        Err(e) => return Err(Failure::Usage(e)),
    };
    match cli.command {
        Command::Mcp(McpCommand::Wrap(args)) => wrap::run(args.into()),
        Command::Mcp(McpCommand::WrapConfig(args)) => wrap_config_cmd::run(args),
        Command::Mcp(McpCommand::Pin(args)) => pin::run(args),
        Command::Mcp(McpCommand::Hosts(_)) => hosts::run(),
        Command::Mcp(McpCommand::Doctor(args)) => doctor::run(args),
        Command::Policy(PolicyCommand::Check { file, format }) => policy::check(&file, format),
        Command::Policy(PolicyCommand::Replay {
            policy,
            captures,
            format,
        }) => replay::run(&policy, &captures, format),
        Command::Policy(PolicyCommand::Suggest {
            captures,
            out,
            update,
            from,
        }) => suggest::run(&captures, out.as_deref(), update, from.as_deref()),
        Command::Capture(CaptureCommand::Read { dir }) => capture::read(&dir),
        Command::Capture(CaptureCommand::Summary { root, format }) => match format {
            SummaryFormat::Json => capture::summary(&root),
            SummaryFormat::Table => show::summary_table(&root),
        },
        Command::Capture(CaptureCommand::Show { dir }) => show::show(&dir),
        Command::Capture(CaptureCommand::Export {
            paths,
            format,
            include_unclosed,
        }) => export::export(&paths, format, include_unclosed),

        Command::Capture(CaptureCommand::VerifyAnswer {
            dir,
            request_id,
            file,
        }) => verify_answer::run(&dir, &request_id, &file),
        Command::Capture(CaptureCommand::Package {
            dir,
            out,
            hash_file,
        }) => capture::package(&dir, &out, &hash_file),
        Command::Capture(CaptureCommand::Verify { dir, public_keys }) => {
            signing::verify(&dir, &public_keys)
        }
        Command::Keygen(args) => signing::keygen(&args.out),
        Command::Demo(args) => demo::run(args),
        Command::Completions(args) => completions::print(args.shell),
    }
}
