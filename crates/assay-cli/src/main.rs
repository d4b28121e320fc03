//! The `assay` binary: the command line of this crate's library ([`assay_cli::run`]), run with
//! this process's arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    let exe = std::env::current_exe().unwrap_or_else(|_| std::path::PathBuf::from("assay"));
    ExitCode::from(assay_cli::run(std::env::args_os().collect(), &exe))
}
