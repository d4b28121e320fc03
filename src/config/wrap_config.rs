//! [`WrapConfig`]: the one configuration every surface fills in — its keys are the Python keyword
//! names and the C `config_json` keys (SPEC §8, §9).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Default `max_line_bytes`: 16 MiB.
pub const DEFAULT_MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;

/// Default `idle_drain`: after the client closed its input and no request of it is pending, a
/// server that writes nothing and keeps its stdout open for this long is treated as done
/// (SPEC §3 item 7).
pub const DEFAULT_IDLE_DRAIN: Duration = Duration::from_secs(1);

/// Default `server_id` label.
pub const DEFAULT_LABEL: &str = "default-mcp-server";

/// Configuration of one wrapped session.
///
/// Deserializes from the C ABI's `config_json` (unknown keys are refused). Paths are plain paths;
/// `stdin`/`stdout` are descriptor numbers that the C and Python surfaces turn into a
/// [`crate::ClientIo`]; the Rust API takes the `ClientIo` directly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrapConfig {
    /// The server command and its arguments: any bytes but NUL (SPEC §3.1b), so a Python host's
    /// non-UTF-8 argument reaches the server byte for byte. JSON (`config_json`) gives strings.
    #[serde(with = "command_strings")]
    pub command: Vec<OsString>,
    /// The policy file (YAML or JSON).
    pub policy: PathBuf,
    /// Absolute URI used as the CloudEvents `source`.
    #[serde(default)]
    pub event_source: Option<String>,
    /// The `server_id` label (default `default-mcp-server`).
    #[serde(default)]
    pub label: Option<String>,
    /// Decision log path.
    #[serde(default)]
    pub decision_log: Option<PathBuf>,
    /// The decision log must be a new file.
    #[serde(default)]
    pub decision_log_new: bool,
    /// Session context event path.
    #[serde(default)]
    pub session_context_out: Option<PathBuf>,
    /// Session stop event path.
    #[serde(default)]
    pub session_stop_out: Option<PathBuf>,
    /// Coverage report path.
    #[serde(default)]
    pub coverage_out: Option<PathBuf>,
    /// Capture directory: puts every evidence output at its fixed name inside it.
    #[serde(default)]
    pub capture_dir: Option<PathBuf>,
    /// Capture root: each run gets a new capture directory
    /// `ROOT/<UTC YYYYMMDDTHHMMSS.ffffffZ>-<session_id>` inside it (SPEC §10). Excludes
    /// `capture_dir` and the explicit evidence paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_root: Option<PathBuf>,
    /// Evaluate and log, but forward denied calls.
    #[serde(default)]
    pub dry_run: bool,
    /// Bound, in seconds, on draining the child's stdout after client EOF (default: none).
    #[serde(default)]
    pub drain_timeout: Option<f64>,
    /// After client EOF, once no client request is awaiting its response: seconds of silence
    /// (the server writes nothing and keeps its stdout open) after which the server is treated
    /// as done and the bounded cleanup runs (SPEC §3 item 7). `None`: 1 s; `0`: wait forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_drain: Option<f64>,
    /// Longest accepted line, newline included (default 16 MiB).
    #[serde(default)]
    pub max_line_bytes: Option<u64>,
    /// Client input descriptor (C and Python surfaces).
    #[serde(default = "default_stdin")]
    pub stdin: i32,
    /// Client output descriptor (C and Python surfaces).
    #[serde(default = "default_stdout")]
    pub stdout: i32,
    /// Child stderr sink: a file path (appended to), or inherit when absent.
    #[serde(default)]
    pub stderr: Option<PathBuf>,
    /// With a capture (whose `proxy-stderr.log` receives the child's stderr), copy the child's
    /// stderr also to this process's stderr (`assay mcp wrap --server-stderr tee`). A command-line
    /// option: not a `config_json` key.
    #[serde(skip)]
    pub tee_server_stderr: bool,
    /// Log each decision to the diagnostics sink.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verbose: bool,
    /// Forward SIGTERM, SIGINT and SIGHUP received by this process to the server while the
    /// session runs (SPEC §3 item 9). Off by default: then no signal handler is installed.
    #[serde(default)]
    pub forward_signals: bool,
    /// An Ed25519 private key file (PKCS#8 or a raw 32-byte seed, mode 0600): after the stop
    /// record, the session signs its capture with it (`attestation.dsse.json`, SPEC §4.5). Needs
    /// `capture_dir` or `capture_root`; the key is read before anything is spawned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign_key: Option<PathBuf>,

    /// Send the session's spans, as they happen, to this OTLP/HTTP endpoint (JSON encoding):
    /// `http://HOST[:PORT][/PATH]`, `/v1/traces` when it has no path (SPEC §10, docs/export.md).
    /// Never blocks the session: spans that cannot be delivered are dropped and counted in the
    /// stop record's `otlp_export`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
}

fn default_stdin() -> i32 {
    0
}

fn default_stdout() -> i32 {
    1
}

impl WrapConfig {
    /// A configuration with defaults for everything but the command and the policy.
    pub fn new<A: Into<OsString>>(
        command: impl IntoIterator<Item = A>,
        policy: impl Into<PathBuf>,
    ) -> Self {
        Self {
            command: command.into_iter().map(Into::into).collect(),
            policy: policy.into(),
            event_source: None,
            label: None,
            decision_log: None,
            decision_log_new: false,
            session_context_out: None,
            session_stop_out: None,
            coverage_out: None,
            capture_dir: None,
            capture_root: None,
            dry_run: false,
            drain_timeout: None,
            idle_drain: None,
            max_line_bytes: None,
            stdin: 0,
            stdout: 1,
            stderr: None,
            tee_server_stderr: false,
            verbose: false,
            forward_signals: false,
            sign_key: None,

            otlp_endpoint: None,
        }
    }

    /// Parses a `config_json` document (the C ABI's input).
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidArgument`] when it is not JSON or has unknown or mistyped keys.
    pub fn from_json(json: &str) -> Result<Self> {
        crate::strict_json::scan(json.as_bytes(), 32)
            .map_err(|e| Error::invalid_argument(format!("config_json: {e}")))?;
        serde_json::from_str(json).map_err(|e| Error::invalid_argument(format!("config_json: {e}")))
    }
}

/// `command` in JSON: an array of strings (a non-UTF-8 argument cannot be written as JSON).
mod command_strings {
    use std::ffi::OsString;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &[OsString], s: S) -> Result<S::Ok, S::Error> {
        let strings = v
            .iter()
            .map(|a| {
                a.to_str().ok_or_else(|| {
                    serde::ser::Error::custom("a command argument is not UTF-8: not JSON text")
                })
            })
            .collect::<Result<Vec<&str>, S::Error>>()?;
        strings.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<OsString>, D::Error> {
        Ok(Vec::<String>::deserialize(d)?
            .into_iter()
            .map(OsString::from)
            .collect())
    }
}
