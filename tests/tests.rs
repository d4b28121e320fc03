//! Integration tests driving the real `assay` binary, the library and (later) the C ABI against
//! real child processes. One test binary; each file is a module.

mod util;

mod c_abi;
mod capture;
mod capture_root;
mod cli;
mod coverage;
mod differential;
mod evidence;
mod faults;
mod ffi_status;
mod fidelity;
mod header;
mod hostile;
mod hosts;
mod interop;
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
mod properties;
mod proxy;
mod regression;
mod show;
