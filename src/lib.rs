//! # assay
//!
//! A local MCP (Model Context Protocol) stdio wrapper with a tool policy and checkable evidence.
//!
//! [`wrap_session`] runs one MCP server as a child process, forwards JSON-RPC lines between the
//! client and the child byte-exact, enforces a [`policy::Policy`] on every `tools/call`, writes a
//! decision log, and on request a session-context event and — after bounded child cleanup — a
//! session-stop event. [`read_capture`] later judges a capture directory `closed`, `incomplete`
//! or `unknown` without trusting anything it reads; [`read_captures`] judges every capture under a
//! capture root at once. [`package_capture`] copies a capture with a manifest of digests. With a
//! signing key, a session signs its capture ([`attestation`]); [`attestation::verify_capture`]
//! checks such a signature without trusting the capture.
//!
//! This crate is the core: the same operations are exposed to C by `crates/assay-capi`
//! (`include/assay.h`), to Python by `bindings/python` (`import assay_stop`) and on the command
//! line by `crates/assay-cli` (`assay`); docs/architecture.md maps the crates and modules.
#![deny(missing_docs)]
// `unsafe` only in `sys` (the process, signal and descriptor layer); every other module forbids it.
#![deny(unsafe_code)]

pub mod attestation;
pub mod capture;
pub mod capture_files;
pub mod error;
pub mod exit_status;
pub mod host_config;
pub mod outcome;
pub mod pins;
pub mod policy;
pub mod replay;
pub mod strict_json;
pub mod suggest;
pub mod text;

pub use capture::{
    CaptureCounts, CaptureReport, CaptureStatus, CaptureVerdict, Closure, ClosureKind,
    PackageManifest, package_capture, read_capture, read_captures, show_capture,
};
pub use error::{
    ConfigError, ConfigOption, ConfigProblem, Error, ErrorKind, OptionSpelling, Result,
};
pub use outcome::{
    ChildStatus, DecisionLogState, OutputPaths, SessionEnd, SignatureOutcome, StopData,
    Termination, WrapOutcome,
};

mod canonical;
mod capture_root;
pub mod config;
mod decision_record;
mod deep_stack;
mod diag;
mod direction;
mod event_source;
mod evidence;
pub mod export;
#[doc(hidden)]
pub mod fuzzing;
mod input_file;
mod lenient;
mod lenient_table;
pub mod methods;
mod otlp;
mod pins_file;
mod proxy;
mod reason_code;
pub mod results;
mod sha256;
mod sys;

pub use config::WrapConfig;

/// This library's version (the producer version recorded in evidence, and the `assay` command
/// line's `--version`), e.g. `0.1.0`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub use deep_stack::declare_main_thread_stack;
pub use policy::{Decision, Policy, PolicyError, ReasonCode, Verdict};
pub use proxy::{ClientIo, wrap_session};
pub use reason_code::Carrier;
pub use sys::child::orphans::become_subreaper;
pub use sys::program_start::prepare_program;
pub use sys::restore_default_sigchld;
