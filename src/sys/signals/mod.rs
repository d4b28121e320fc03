//! Signals the session deals with, and nothing more: the thread mask that keeps `SIGPIPE` and
//! `SIGXFSZ` from killing the process (SPEC §4.1), and the opt-in forwarding of SIGTERM, SIGINT
//! and SIGHUP to the server (SPEC §3 item 9, `forward_signals`).
//!
//! Without `forward_signals` no handler is ever installed and no disposition is changed.

mod forward;
mod mask;

pub(crate) use forward::{ForwardTarget, Forwarding, InstallError, SignalProbe};
pub(crate) use mask::{ThreadMask, block_write_signals_in_this_thread};
#[cfg(test)]
mod forward_tests;
