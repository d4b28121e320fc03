//! The `assay` binary: the command line of `src/cli/` (see its module docs), run with this
//! process's arguments.

#[path = "mod.rs"]
mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    let exe = std::env::current_exe().unwrap_or_else(|_| std::path::PathBuf::from("assay"));
    ExitCode::from(cli::run(std::env::args_os().collect(), &exe))
}
