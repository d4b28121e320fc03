//! The command line as clap sees it (the low level, close to argv). `TryFrom` turns it into the
//! library's [`assay::WrapConfig`]; all validation lives in the library so every surface prints
//! the same message.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// MCP stdio wrapper with a tool policy, a decision log and session-stop evidence.
#[derive(Parser, Debug)]
#[command(name = "assay", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Wrap MCP servers.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Read and package capture directories.
    #[command(subcommand)]
    Capture(CaptureCommand),
    /// Check policy files.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Run the bundled demo: an example server wrapped with an example policy, a scripted client
    /// session, then the reader's verdict.
    Demo(DemoArgs),
}

#[derive(Subcommand, Debug)]
pub(crate) enum McpCommand {
    /// Run COMMAND as an MCP stdio server behind the policy.
    Wrap(WrapArgs),
}

#[derive(Args, Debug)]
pub(crate) struct WrapArgs {
    /// Policy file (YAML or JSON).
    #[arg(long, default_value = "assay.yaml")]
    pub policy: PathBuf,
    /// Absolute URI used as the CloudEvents source (required with any evidence output).
    #[arg(long, value_name = "URI")]
    pub event_source: Option<String>,
    /// Label recorded as server_id.
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Decision log (NDJSON).
    #[arg(long, value_name = "PATH")]
    pub decision_log: Option<PathBuf>,
    /// The decision log must be a new file.
    #[arg(long)]
    pub decision_log_new: bool,
    /// Write the session context event here (new file).
    #[arg(long, value_name = "PATH")]
    pub session_context_out: Option<PathBuf>,
    /// Write the session stop event here after cleanup (new file).
    #[arg(long, value_name = "PATH")]
    pub session_stop_out: Option<PathBuf>,
    /// Write a coverage report here (new file).
    #[arg(long, value_name = "PATH")]
    pub coverage_out: Option<PathBuf>,
    /// Write every evidence output at its fixed name inside DIR.
    #[arg(long, value_name = "DIR")]
    pub capture_dir: Option<PathBuf>,
    /// Give each run a new capture directory ROOT/<UTC time>-<session id> (created as needed).
    #[arg(long, value_name = "ROOT")]
    pub capture_root: Option<PathBuf>,
    /// Evaluate and log, but forward denied calls.
    #[arg(long)]
    pub dry_run: bool,
    /// Log each decision to stderr.
    #[arg(long)]
    pub verbose: bool,
    /// Bound on draining the server's output after the client closes, in seconds.
    #[arg(long, value_name = "SECS")]
    pub drain_timeout: Option<f64>,
    /// Longest accepted line in bytes, newline included (default 16 MiB).
    #[arg(long, value_name = "N")]
    pub max_line_bytes: Option<u64>,
    /// Forward SIGTERM, SIGINT and SIGHUP to the server; the session then ends normally and
    /// writes its stop record (without it, those signals end the wrapper and its server).
    #[arg(long)]
    pub forward_signals: bool,
    /// The server command and its arguments: after `--`, or from the first argument that is not
    /// an option on. Everything from there belongs to the server, options included.
    // SPEC §10: hosts such as the MCP Inspector strip a `--`.
    #[arg(trailing_var_arg = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl From<WrapArgs> for assay::WrapConfig {
    fn from(a: WrapArgs) -> Self {
        let mut c = assay::WrapConfig::new(a.command, a.policy);
        c.event_source = a.event_source;
        c.label = a.label;
        c.decision_log = a.decision_log;
        c.decision_log_new = a.decision_log_new;
        c.session_context_out = a.session_context_out;
        c.session_stop_out = a.session_stop_out;
        c.coverage_out = a.coverage_out;
        c.capture_dir = a.capture_dir;
        c.capture_root = a.capture_root;
        c.dry_run = a.dry_run;
        c.verbose = a.verbose;
        c.drain_timeout = a.drain_timeout;
        c.max_line_bytes = a.max_line_bytes;
        c.forward_signals = a.forward_signals;
        c
    }
}

#[derive(Subcommand, Debug)]
pub(crate) enum CaptureCommand {
    /// Judge a capture directory: verdict JSON on stdout; exit 0 closed, 1 incomplete, 3 unknown.
    Read {
        /// The capture directory.
        dir: PathBuf,
    },
    /// Judge every capture directly under ROOT: one JSON line per capture in name order, then a
    /// summary line; exit 0 all closed, 1 some incomplete, 3 any unknown or none found.
    Summary {
        /// The capture root.
        root: PathBuf,
    },
    /// Copy a capture's raw bytes into a new directory with a manifest of digests.
    Package {
        /// The capture directory.
        dir: PathBuf,
        /// The new package directory.
        out: PathBuf,
        /// Also record the SHA-256 of this helper or source file (repeatable).
        #[arg(long = "hash-file", value_name = "PATH")]
        hash_file: Vec<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum PolicyCommand {
    /// Load and validate a policy file without running anything, and print what it allows,
    /// denies and constrains; exit 0 when it is valid, 2 (with the error `mcp wrap` would print)
    /// when it is not.
    Check {
        /// The policy file (YAML or JSON).
        file: PathBuf,
        /// Output: `text` for people, `json` for programs (`assay.policy.summary.v1`).
        #[arg(long, value_enum, default_value_t = SummaryFormat::Text)]
        format: SummaryFormat,
    },
}

/// How `policy check` prints the summary.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SummaryFormat {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub(crate) struct DemoArgs {
    /// Where to write the demo capture (default: a new directory under the system temp dir).
    #[arg(long, value_name = "DIR")]
    pub capture_dir: Option<PathBuf>,
}
