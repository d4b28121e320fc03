//! The `assay` binary: the command line of this crate's library ([`assay_cli::run`]), run with
//! this process's arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    // This is the process's main thread on the stack `execve` gave it (never switched): a policy
    // is compiled on it when RLIMIT_STACK lets it grow to 8 MiB, without a thread of its own.
    assay::declare_main_thread_stack();
    let exe = std::env::current_exe().unwrap_or_else(|_| std::path::PathBuf::from("assay"));
    ExitCode::from(assay_cli::run(std::env::args_os().collect(), &exe))
}
