//! Integration tests driving the real `assay` binary, the library and the C ABI (C and C++ hosts,
//! and `libassay.so` loaded from Rust) against real child processes. One test binary; each file is
//! a module. They belong to `crates/assay-cli`, the crate that builds the binary.

mod util;

mod answers;
mod c_abi;
mod c_library;
mod capture;
mod capture_root;
mod cli;
mod coverage;
mod differential;
mod doctor;
mod evidence;
mod export;
mod faults;
mod fidelity;
mod governed;
mod governed_differential;
mod hostile;
mod hosts;
mod hosts_per_server;
mod input_files;
mod interop;
mod launchers;
mod layering;
mod lenient_fold;
mod lifecycle;
mod list_differential;
mod memory;
mod pins;
mod pipelined;
mod policy;
mod policy_differential;
mod process;
mod program_start;
mod properties;
mod proxy;
mod regression;
mod replay;
mod results;
mod results_stream;
mod show;
mod signing;
mod text_for_people;
