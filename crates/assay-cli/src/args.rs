//! The command line as clap sees it (the low level, close to argv). `TryFrom` turns it into the
//! library's [`assay::WrapConfig`]; all validation lives in the library so every surface prints
//! the same message.

use std::path::PathBuf;

use clap::builder::TypedValueParser as _;
use clap::{Args, FromArgMatches, Parser, Subcommand};

/// `assay --help`'s description.
const ABOUT: &str = "MCP stdio wrapper with a tool policy, a decision log, session-stop evidence and a bounded capture reader";
/// The subcommands' one-line descriptions, shared by the derived definitions and the deferred
/// command line ([`command`]); without a final period, as clap's derive prints a one-line doc
/// comment.
const MCP_ABOUT: &str = "Wrap MCP servers";
const CAPTURE_ABOUT: &str = "Read and package capture directories";
const POLICY_ABOUT: &str =
    "Check policy files, replay one against recorded captures, suggest one from them";
const DEMO_ABOUT: &str = "Run the bundled demo: an example server wrapped with an example policy, a scripted client session, then the reader's verdict";
const KEYGEN_ABOUT: &str = "Write a new Ed25519 key pair for signing captures: the private key to FILE (PKCS#8, mode 0600) and the public key to FILE.pub (PEM); neither may exist";
const COMPLETIONS_ABOUT: &str =
    "Print the shell completion script for SHELL (bash, zsh or fish) on stdout";
const WRAP_ABOUT: &str = "Run COMMAND as an MCP stdio server behind the policy";
const WRAP_CONFIG_ABOUT: &str = "Rewrite the stdio servers of a host configuration (FILE or --host; every server, or those named by --server) to run through `assay mcp wrap`, after writing a backup beside the file on the first change; `--unwrap` restores them";
const HOSTS_ABOUT: &str = "List the host configurations found on this machine (Claude Desktop, Claude Code, Cursor, VS Code), each server entry, and whether it runs through assay (with which policy)";
const DOCTOR_ABOUT: &str = "Start every server entry of a host configuration (FILE or --host; every server, or those named by --server) as the host would, list its tools, close it as MCP clients do, and report per entry: wrapped (policy), started, tools listed and hidden, pins, close-to-exit time, the capture's verdict, processes left behind; exit 0 every wrapped entry healthy, 1 one is not, 2 usage, 3 nothing to check";
const PIN_ABOUT: &str = "List COMMAND's tools as an MCP client would, then write pins for them (--out) or check them against pins (--check): exit 0 match, 1 drift, 2 usage, 3 the server could not be listed";

/// Parses `argv` as [`Cli`], building only the part of the command line that `argv` reaches.
///
/// The derived definition ([`Cli`], `CommandFactory::command`) builds every argument of every
/// subcommand up front, about a third of a millisecond of every `assay mcp wrap` start-up (SPEC
/// §11 allows 1 ms over a bare relay). [`command`] is the same command line with each
/// subcommand's arguments deferred (`clap::Command::defer`) until the parser enters it; a test
/// checks that, fully built, it equals the derived one.
pub(crate) fn parse(argv: Vec<std::ffi::OsString>, parsed: Parsed) -> Result<Cli, clap::Error> {
    let mut cmd = command();
    let mut matches = cmd.try_get_matches_from_mut(argv)?;
    // The values are taken out of the matches, not read from a copy of them (what
    // `from_arg_matches` makes first).
    let cli = Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut cmd));
    if parsed == Parsed::Kept {
        std::mem::forget((cmd, matches));
    }
    cli
}

/// What becomes of clap's command line and matches once [`parse`] has taken the values out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// Freed (a host process that runs the command line and goes on).
    Freed,
    /// Left allocated: the process ends with the command, and its exit frees them.
    Kept,
}

/// The command line of [`Cli`], with every subcommand built only when it is used.
pub(crate) fn command() -> clap::Command {
    /// A subcommand holding subcommands, as `#[command(subcommand)]` derives it.
    fn group(
        name: &'static str,
        about: &'static str,
        build: fn(clap::Command) -> clap::Command,
    ) -> clap::Command {
        clap::Command::new(name)
            .subcommand_required(true)
            .arg_required_else_help(true)
            .about(about)
            .defer(build)
    }
    /// A subcommand with arguments only.
    fn leaf(
        name: &'static str,
        about: &'static str,
        build: fn(clap::Command) -> clap::Command,
    ) -> clap::Command {
        clap::Command::new(name).about(about).defer(build)
    }
    let mcp = |c: clap::Command| {
        c.subcommand(leaf("wrap", WRAP_ABOUT, WrapArgs::augment_args))
            .subcommand(leaf(
                "wrap-config",
                WRAP_CONFIG_ABOUT,
                WrapConfigArgs::augment_args,
            ))
            .subcommand(leaf("pin", PIN_ABOUT, PinArgs::augment_args))
            .subcommand(leaf("hosts", HOSTS_ABOUT, HostsArgs::augment_args))
            .subcommand(leaf("doctor", DOCTOR_ABOUT, DoctorArgs::augment_args))
    };
    clap::Command::new("assay")
        .version(assay::VERSION)
        .about(ABOUT)
        .subcommand_required(true)
        .arg_required_else_help(true)
        // The group clap's derive names after a struct (here `Cli`, which has no arguments).
        .group(clap::ArgGroup::new("Cli").multiple(true))
        .subcommand(group("mcp", MCP_ABOUT, mcp))
        .subcommand(group(
            "capture",
            CAPTURE_ABOUT,
            CaptureCommand::augment_subcommands,
        ))
        .subcommand(group(
            "policy",
            POLICY_ABOUT,
            PolicyCommand::augment_subcommands,
        ))
        .subcommand(leaf("demo", DEMO_ABOUT, DemoArgs::augment_args))
        .subcommand(leaf("keygen", KEYGEN_ABOUT, KeygenArgs::augment_args))
        .subcommand(leaf(
            "completions",
            COMPLETIONS_ABOUT,
            CompletionsArgs::augment_args,
        ))
}

/// MCP stdio wrapper with a tool policy, a decision log and session-stop evidence.
// Name, version and description are spelled here, not taken from the compiling crate: the same
// definitions are compiled into the Python extension for its `assay` console script.
#[derive(Parser, Debug)]
#[command(name = "assay", version = assay::VERSION, about = ABOUT)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    #[command(subcommand, about = MCP_ABOUT)]
    Mcp(McpCommand),
    #[command(subcommand, about = CAPTURE_ABOUT)]
    Capture(CaptureCommand),
    #[command(subcommand, about = POLICY_ABOUT)]
    Policy(PolicyCommand),
    #[command(about = DEMO_ABOUT)]
    Demo(DemoArgs),
    #[command(about = KEYGEN_ABOUT)]
    Keygen(KeygenArgs),
    #[command(about = COMPLETIONS_ABOUT)]
    Completions(CompletionsArgs),
}

#[derive(Args, Debug)]
pub(crate) struct KeygenArgs {
    /// The private key file to create (the public key goes to FILE.pub).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The shells `assay completions` writes scripts for.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub(crate) enum Shell {
    /// bash: `source <(assay completions bash)`.
    Bash,
    /// zsh: write `_assay` into a directory on `$fpath`.
    Zsh,
    /// fish: write `assay.fish` into `~/.config/fish/completions/`.
    Fish,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub(crate) enum McpCommand {
    #[command(about = WRAP_ABOUT)]
    Wrap(WrapArgs),
    #[command(about = WRAP_CONFIG_ABOUT)]
    WrapConfig(WrapConfigArgs),
    #[command(about = PIN_ABOUT)]
    Pin(PinArgs),
    #[command(about = HOSTS_ABOUT)]
    Hosts(HostsArgs),
    #[command(about = DOCTOR_ABOUT)]
    Doctor(DoctorArgs),
}

#[derive(Args, Debug)]
pub(crate) struct DoctorArgs {
    /// The host's configuration file (read only, never written).
    #[arg(required_unless_present = "host", conflicts_with = "host")]
    pub file: Option<PathBuf>,
    /// Instead of FILE: the host whose usual configuration file to check (printed first).
    #[arg(long, value_name = "HOST", value_parser = host_parser())]
    pub host: Option<assay::host_config::Host>,
    /// Only the entry named NAME (repeatable); an unknown name is a usage error.
    #[arg(long, value_name = "NAME")]
    pub server: Vec<String>,
    /// Give up on an entry's answers after SECS seconds (its close is bounded apart: 2 s, SIGTERM,
    /// 2 s, SIGKILL).
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub timeout: f64,
    /// `text`: a table for people; `json`: one JSON object per entry, one per line.
    #[arg(long, value_enum, default_value_t = DoctorFormat::Text)]
    pub format: DoctorFormat,
    /// Keep the doctor's own captures in DIR (a new directory; its parent must exist) instead
    /// of removing them.
    #[arg(long, value_name = "DIR")]
    pub keep_captures: Option<PathBuf>,
}

/// How `assay mcp doctor` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DoctorFormat {
    /// A table: one row per entry, then each failing reason in words.
    Text,
    /// One JSON object per entry, one per line.
    Json,
}

#[derive(Args, Debug)]
pub(crate) struct HostsArgs {}

/// `--host`'s parser: the library's table of hosts knows every name (SPEC §10).
fn host_parser() -> impl clap::builder::TypedValueParser<Value = assay::host_config::Host> {
    use assay::host_config::Host;
    clap::builder::PossibleValuesParser::new(Host::ALL.map(Host::as_str))
        .try_map(|s| s.parse::<Host>())
}

/// The client capabilities `assay mcp pin` declares.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClientCapabilities {
    /// What a desktop host declares: roots (answered with no roots), sampling and elicitation
    /// (each request declined), so tools offered only to such clients are listed.
    Host,
    /// None: the tools a server offers to any client.
    None,
}

#[derive(Args, Debug)]
pub(crate) struct PinArgs {
    /// Write the pins of every listed tool to PINS (a new file, mode 0600) and print a table.
    #[arg(
        long,
        value_name = "PINS",
        conflicts_with = "check",
        required_unless_present = "check"
    )]
    pub out: Option<PathBuf>,
    /// With --out: replace an existing PINS (atomically).
    #[arg(long, requires = "out")]
    pub update: bool,
    /// With --out: print a starter policy (YAML) that allows exactly the listed tools and pins
    /// them on stdout (the table goes to stderr).
    #[arg(long, requires = "out")]
    pub policy_template: bool,
    /// Check the server's tools against PINS: exit 0 when every tool matches its pin, 1 when
    /// a tool was added, removed or changed (printed with a diff).
    #[arg(long, value_name = "PINS")]
    pub check: Option<PathBuf>,
    /// Give up on the server after SECS seconds.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub timeout: f64,
    /// The client capabilities to declare in `initialize`.
    #[arg(long, value_enum, value_name = "WHICH", default_value_t = ClientCapabilities::Host)]
    pub client_capabilities: ClientCapabilities,
    /// The server command and its arguments (after `--`, or from the first argument that is
    /// not an option on).
    #[arg(trailing_var_arg = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub(crate) struct WrapConfigArgs {
    /// The host's configuration file (Claude Desktop, Claude Code, Cursor, VS Code `mcp.json`,
    /// the MCP Inspector's config).
    #[arg(required_unless_present = "host", conflicts_with = "host")]
    pub file: Option<PathBuf>,
    /// Instead of FILE: the host whose usual configuration file to rewrite (printed first).
    #[arg(long, value_name = "HOST", value_parser = host_parser())]
    pub host: Option<assay::host_config::Host>,
    /// Only the entry named NAME (repeatable); an unknown name is an error, nothing written.
    #[arg(long, value_name = "NAME")]
    pub server: Vec<String>,
    /// The policy every wrapped server runs under (made absolute).
    #[arg(long, required_unless_present = "unwrap", conflicts_with = "unwrap")]
    pub policy: Option<PathBuf>,
    /// Give every launch of every wrapped server a new capture directory under ROOT (made
    /// absolute); each entry also gets its name as label and event source.
    #[arg(long, value_name = "ROOT", conflicts_with_all = ["unwrap", "no_capture"])]
    pub capture_root: Option<PathBuf>,
    /// Remove the evidence options (capture root, event source, label, evidence files) of
    /// entries already wrapped; without it a re-wrap keeps them.
    #[arg(long, conflicts_with = "unwrap")]
    pub no_capture: bool,
    /// Print the change and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Restore the original command and arguments of every wrapped entry.
    #[arg(long)]
    pub unwrap: bool,
}

/// The policy file `mcp wrap` reads when `--policy` is not given.
pub(crate) const DEFAULT_POLICY: &str = "assay.yaml";

#[derive(Args, Debug)]
pub(crate) struct WrapArgs {
    /// Policy file (YAML or JSON).
    #[arg(long, default_value = DEFAULT_POLICY)]
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
    /// Where the server's stderr goes in a capture: `log` (default) into its proxy-stderr.log
    /// only, `tee` also to assay's own stderr (the host's log). Without a capture the server's
    /// stderr is assay's stderr either way.
    #[arg(long, value_enum, value_name = "WHERE", default_value_t = ServerStderr::Log)]
    pub server_stderr: ServerStderr,
    /// Bound on draining the server's output after the client closes, in seconds.
    #[arg(long, value_name = "SECS")]
    pub drain_timeout: Option<f64>,
    /// Longest accepted line in bytes, newline included (default 16 MiB).
    #[arg(long, value_name = "N")]
    pub max_line_bytes: Option<u64>,
    /// After the client closes its input and no request is pending, end a server that writes
    /// nothing for SECS seconds (default 1; 0 waits forever).
    #[arg(long, value_name = "SECS")]
    pub idle_drain: Option<f64>,
    /// Forward SIGTERM, SIGINT and SIGHUP to the server, so the session ends normally and writes
    /// its stop record (the default).
    #[arg(long, overrides_with = "no_forward_signals")]
    pub forward_signals: bool,
    /// Install no signal handler: SIGTERM, SIGINT and SIGHUP end the wrapper and its server, and
    /// no stop record is written.
    #[arg(long, overrides_with = "forward_signals")]
    pub no_forward_signals: bool,
    /// Sign the capture with this Ed25519 private key after the stop record
    /// (attestation.dsse.json; the key file must be mode 0600; needs --capture-dir or
    /// --capture-root).
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,

    /// Also send the session's spans, as they happen, to this OTLP/HTTP endpoint (JSON):
    /// http://HOST[:PORT][/PATH], /v1/traces when it has no path. Never slows the session:
    /// spans that cannot be delivered are dropped and counted in the stop record.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// The server command and its arguments: after `--`, or from the first argument that is not
    /// an option on. Everything from there belongs to the server, options included.
    // SPEC §10: hosts such as the MCP Inspector strip a `--`.
    #[arg(trailing_var_arg = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// The session `mcp wrap` runs for `command` with `policy` before any other option is applied:
/// the library's defaults, and the command line's own.
pub(crate) fn wrap_config(command: Vec<String>, policy: PathBuf) -> assay::WrapConfig {
    let mut c = assay::WrapConfig::new(command, policy);
    // SPEC §3 item 9: the CLI forwards by default; the libraries do not.
    c.forward_signals = true;
    c
}

impl From<WrapArgs> for assay::WrapConfig {
    fn from(a: WrapArgs) -> Self {
        let mut c = wrap_config(a.command, a.policy);
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
        c.tee_server_stderr = a.server_stderr == ServerStderr::Tee;
        c.drain_timeout = a.drain_timeout;
        c.max_line_bytes = a.max_line_bytes;
        c.idle_drain = a.idle_drain;
        if a.no_forward_signals {
            c.forward_signals = false;
        }
        c.sign_key = a.sign_key;

        c.otlp_endpoint = a.otlp_endpoint;
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
        /// `json`: one JSON line per capture, then the summary line; `table`: a table for people.
        #[arg(long, value_enum, default_value_t = SummaryFormat::Json)]
        format: SummaryFormat,
    },
    /// Show a capture for people: who ran, when, how it ended, the verdict in words, then one
    /// row per decision and the counts; exit 0 closed, 1 incomplete, 3 unknown.
    Show {
        /// The capture directory.
        dir: PathBuf,
    },
    /// Export the decisions of captures and capture roots to stdout: flat rows (`ndjson`, for
    /// DuckDB and Spark) or OpenTelemetry spans (`otlp-json`); only closed captures unless
    /// --include-unclosed; exit 0 all closed, 1 some incomplete, 3 any unknown or none found.
    Export {
        /// Capture directories (holding protocol.json) or capture roots (their immediate
        /// subdirectories are the captures).
        #[arg(required = true, value_name = "CAPTURE_OR_ROOT")]
        paths: Vec<PathBuf>,
        /// `ndjson`: one flat JSON object per decision; `otlp-json`: one OTLP/JSON
        /// ExportTraceServiceRequest per capture (one span per session and per event).
        #[arg(long, value_enum)]
        format: ExportFormatArg,
        /// Export incomplete and unknown captures too, each marked with its verdict.
        #[arg(long)]
        include_unclosed: bool,
    },
    /// Say whether FILE's bytes are the answer the capture recorded for a request (one trailing
    /// newline excluded): exit 0 yes, 1 no.
    VerifyAnswer {
        /// The capture directory.
        dir: PathBuf,
        /// The request id as JSON: `0` (a number) and `'"0"'` (a string) are different requests;
        /// text that is not JSON is a string.
        #[arg(long = "request-id", value_name = "ID", allow_hyphen_values = true)]
        request_id: String,
        /// The answer as the client received it (a transcript line).
        file: PathBuf,
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
    /// Verify a signed capture: its attestation's signature by one of the public keys, every
    /// file's digest, no file missing or added; then the verdict. Exit 0 verified and closed, 1
    /// verified but not closed, 4 signature or file mismatch, 2 usage.
    Verify {
        /// The capture directory (or a package of one).
        dir: PathBuf,
        /// A public key the capture may be signed with (PEM, as `assay keygen` writes FILE.pub,
        /// the raw 32 bytes, or 64 hex digits); repeatable.
        #[arg(long = "pub", value_name = "FILE", required = true, num_args = 1..)]
        public_keys: Vec<PathBuf>,
    },
}

/// Where `mcp wrap --server-stderr` sends the server's stderr in a capture.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ServerStderr {
    /// Into the capture's proxy-stderr.log only.
    Log,
    /// Into proxy-stderr.log and to assay's own stderr.
    Tee,
}

/// What `assay capture export` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExportFormatArg {
    /// One flat JSON object per decision (docs/export.md).
    Ndjson,
    /// One OTLP/JSON ExportTraceServiceRequest per capture (docs/export.md).
    OtlpJson,
}

/// How `assay capture summary` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SummaryFormat {
    /// One JSON line per capture, then `{"summary":{…}}` (SPEC §10).
    Json,
    /// A table: one row per capture, then the counts.
    Table,
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
        #[arg(long, value_enum, default_value_t = PolicyFormat::Text)]
        format: PolicyFormat,
    },
    /// Judge every recorded decision of every closed capture again under POLICY (the judge the
    /// wrapper runs, limits counted again per session) and print each decision that changes,
    /// then the counts, the captures skipped (not closed), what could not be judged (arguments
    /// not recorded) and the rules never used; exit 0 nothing changes, 1 something does,
    /// 2 usage, 3 no capture could be replayed.
    Replay {
        /// The policy file to replay (YAML or JSON).
        policy: PathBuf,
        /// Capture directories (holding protocol.json) or capture roots (their immediate
        /// subdirectories are captures).
        #[arg(required = true, value_name = "CAPTURE_OR_ROOT")]
        captures: Vec<PathBuf>,
        /// Output: `text` for people, `json` for programs (one object per changed decision,
        /// then a summary object).
        #[arg(long, value_enum, default_value_t = ReplayFormat::Text)]
        format: ReplayFormat,
    },
    /// Write the least-privilege policy that allows exactly what the closed captures show was
    /// used (tools called, resources read, prompts got, client features, limits with headroom),
    /// each rule with its evidence as a comment; exit 0 written, 2 usage, 3 no closed capture.
    Suggest {
        /// Capture directories (holding protocol.json) or capture roots.
        #[arg(required = true, value_name = "CAPTURE_OR_ROOT")]
        captures: Vec<PathBuf>,
        /// Write the policy to FILE (created exclusively, mode 0600) instead of stdout; when the
        /// captures kept the definitions every capture agrees on (`record_definitions: true`),
        /// their pins go beside it (FILE's stem + `.pins.json`) and the policy names them.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// With --out: replace an existing FILE and pins file (atomically) instead of refusing them.
        #[arg(long, requires = "out")]
        update: bool,
        /// Start from POLICY and only narrow it: nothing it refuses is allowed.
        #[arg(long, value_name = "POLICY")]
        from: Option<PathBuf>,
    },
}

/// How `policy replay` prints what changed.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReplayFormat {
    Text,
    Json,
}

/// How `policy check` prints the summary.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PolicyFormat {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub(crate) struct DemoArgs {
    /// Where to write the demo capture (default: a new directory under the system temp dir).
    #[arg(long, value_name = "DIR")]
    pub capture_dir: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// Every subcommand path of `cmd`, the root included.
    fn paths(cmd: &clap::Command, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(prefix.clone());
        for sub in cmd.get_subcommands() {
            let mut p = prefix.clone();
            p.push(sub.get_name().to_string());
            paths(sub, p, out);
        }
    }

    fn find<'a>(cmd: &'a mut clap::Command, path: &[String]) -> &'a mut clap::Command {
        match path.split_first() {
            None => cmd,
            Some((first, rest)) => {
                let sub = cmd
                    .find_subcommand_mut(first)
                    .unwrap_or_else(|| panic!("no subcommand {first}"));
                find(sub, rest)
            }
        }
    }

    #[test]
    fn the_deferred_command_line_is_the_derived_one() {
        let mut derived = Cli::command();
        let mut deferred = command();
        // Every field of every (sub)command and argument, as clap keeps them, except the mirror
        // of the tree that clap generates for `assay help …` while building (it mirrors only
        // what is built by then); `help` itself is compared by its output, below and in
        // `parsing_builds_only_what_the_command_line_reaches`.
        let tree = |c: &clap::Command| {
            let mut c = c.clone().disable_help_subcommand(true);
            c.build();
            format!("{c:#?}")
        };
        assert_eq!(tree(&deferred), tree(&derived));
        let mut all = Vec::new();
        paths(&derived, Vec::new(), &mut all);
        assert!(all.len() >= 13, "{all:?}");
        for path in &all {
            let a = find(&mut derived, path).render_long_help().to_string();
            let b = find(&mut deferred, path).render_long_help().to_string();
            assert_eq!(b, a, "help of {path:?}");
        }
    }

    #[test]
    fn descriptions_print_as_the_doc_comments_did() {
        // clap's derive drops a one-line doc comment's final period; the shared constants
        // were written without it, so help reads as it did before they existed.
        let help = command().render_help().to_string();
        for line in [
            "  mcp          Wrap MCP servers\n",
            "  capture      Read and package capture directories\n",
            "  completions  Print the shell completion script for SHELL (bash, zsh or fish) on stdout\n",
        ] {
            assert!(help.contains(line), "{help}");
        }
    }

    #[test]
    fn parsing_builds_only_what_the_command_line_reaches() {
        // Whether clap's tree is freed or left for the process's exit, the values are the same.
        for parsed in [Parsed::Freed, Parsed::Kept] {
            let cli = parse(
                [
                    "assay", "mcp", "wrap", "--policy", "p.yaml", "--", "server", "--flag",
                ]
                .map(Into::into)
                .to_vec(),
                parsed,
            )
            .unwrap();
            let Command::Mcp(McpCommand::Wrap(w)) = cli.command else {
                panic!("not mcp wrap");
            };
            assert_eq!(w.policy, PathBuf::from("p.yaml"));
            assert_eq!(w.command, ["server", "--flag"]);
        }
        // Usage errors and help are the derived parser's, word for word.
        for argv in [
            vec!["assay"],
            vec!["assay", "mcp"],
            vec!["assay", "mcp", "wrap"],
            vec!["assay", "mcp", "wrap", "--bogus", "x"],
            vec!["assay", "mcp", "pin", "--update", "x"],
            vec!["assay", "capture", "summary", "--format", "xml", "r"],
            vec!["assay", "completions", "tcsh"],
            vec!["assay", "nope"],
            vec!["assay", "--help"],
            vec!["assay", "mcp", "wrap", "--help"],
            vec!["assay", "--version"],
            vec!["assay", "help", "mcp", "wrap"],
            vec!["assay", "help", "capture", "summary"],
            vec!["assay", "mcp", "help", "pin"],
        ] {
            let os: Vec<std::ffi::OsString> = argv.iter().map(Into::into).collect();
            let derived = Cli::try_parse_from(os.clone()).unwrap_err();
            for parsed in [Parsed::Freed, Parsed::Kept] {
                let ours = parse(os.clone(), parsed).unwrap_err();
                assert_eq!(ours.kind(), derived.kind(), "{argv:?}");
                assert_eq!(ours.to_string(), derived.to_string(), "{argv:?}");
            }
        }
    }
}
