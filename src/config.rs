//! [`WrapConfig`] — the one configuration shared by every surface (its keys are the Python keyword
//! names and the C `config_json` keys) — and every check of SPEC §6, all run before anything is
//! spawned or created.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, option_name};
use crate::event_source::is_event_source;
use crate::policy::Policy;

/// Default `max_line_bytes`: 16 MiB.
pub const DEFAULT_MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;

/// Default `idle_drain`: after the client closed its input and no request of it is pending, a
/// server that writes nothing and keeps its stdout open for this long is treated as done
/// (SPEC §3 item 7).
pub const DEFAULT_IDLE_DRAIN: Duration = Duration::from_secs(1);

/// Default `server_id` label.
pub const DEFAULT_LABEL: &str = "default-mcp-server";

/// Fixed names inside a capture directory (SPEC §7).
pub mod capture_names {
    pub use crate::capture_files::{
        ALL, CONTEXT, COVERAGE, DECISIONS, NO_SESSION, PROTOCOL, STDERR, STOP,
    };
}

/// Configuration of one wrapped session.
///
/// Deserializes from the C ABI's `config_json` (unknown keys are refused). Paths are plain paths;
/// `stdin`/`stdout` are descriptor numbers that the C and Python surfaces turn into a
/// [`crate::ClientIo`]; the Rust API takes the `ClientIo` directly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrapConfig {
    /// The server command and its arguments.
    pub command: Vec<String>,
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
}

fn default_stdin() -> i32 {
    0
}

fn default_stdout() -> i32 {
    1
}

impl WrapConfig {
    /// A configuration with defaults for everything but the command and the policy.
    pub fn new(command: Vec<String>, policy: impl Into<PathBuf>) -> Self {
        Self {
            command,
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

/// How the decision log is kept (the context event's `decision_log` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogMode {
    New,
    Append,
    Temporary,
    Absent,
}

impl LogMode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LogMode::New => "new",
            LogMode::Append => "append",
            LogMode::Temporary => "temporary",
            LogMode::Absent => "absent",
        }
    }
}

/// A validated configuration: every path resolved, every check of SPEC §6 passed.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub command: Vec<String>,
    pub policy_path: PathBuf,
    pub event_source: Option<String>,
    pub server_id: String,
    pub decision_log: Option<PathBuf>,
    pub log_mode: LogMode,
    pub context_out: Option<PathBuf>,
    pub stop_out: Option<PathBuf>,
    pub coverage_out: Option<PathBuf>,
    pub capture_dir: Option<PathBuf>,
    /// Set for a capture-root run until `capture_root::place_run` fills in the capture paths.
    pub capture_root: Option<PathBuf>,
    pub protocol_out: Option<PathBuf>,
    pub stderr: Option<StderrSink>,
    /// Copy the child's stderr to this process's stderr too (only with a stderr sink).
    pub tee_stderr: bool,
    pub dry_run: bool,
    pub drain_timeout: Option<Duration>,
    /// `None`: wait forever.
    pub idle_drain: Option<Duration>,
    pub max_line_bytes: usize,
    pub verbose: bool,
    pub forward_signals: bool,
}

/// Where the child's stderr (and, for a capture, the wrapper's diagnostics) go.
#[derive(Debug, Clone)]
pub(crate) enum StderrSink {
    /// A capture's `proxy-stderr.log`: created new.
    New(PathBuf),
    /// A user-given path: appended to.
    Append(PathBuf),
}

/// `path` for a message about a file that cannot be read: a relative path also shows the
/// absolute path it resolved to and the working directory, which a host sets (often `/`).
fn with_working_dir(path: &Path) -> String {
    if path.is_absolute() {
        return path.display().to_string();
    }
    match std::env::current_dir() {
        Ok(cwd) => format!(
            "{} ({}: a relative path is resolved against the working directory {})",
            path.display(),
            cwd.join(path).display(),
            cwd.display()
        ),
        Err(_) => format!(
            "{} (relative to an unknown working directory)",
            path.display()
        ),
    }
}

/// Resolves a capture directory that may not exist yet: its parent canonicalized, its name kept.
fn resolve_dir(dir: &Path) -> Result<PathBuf> {
    if let Ok(c) = dir.canonicalize() {
        return Ok(c);
    }
    resolve("capture-dir", dir)
}

/// Resolves a path for the distinctness check: parent directory canonicalized (it must exist),
/// file name kept.
fn resolve(option: &'static str, path: &Path) -> Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::config(option, format!("{} has no file name", path.display())))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let parent = parent.canonicalize().map_err(|e| {
        Error::config(
            option,
            format!("directory {} is not usable: {e}", parent.display()),
        )
    })?;
    Ok(parent.join(name))
}

/// The option name of the capture root, for its errors.
const CAPTURE_ROOT: &str = "capture-root";

/// Validates a configuration with `capture_root` (SPEC §10): the options it excludes, every other check of
/// SPEC §6 (run on the configuration without evidence paths), an event source, and the root
/// itself. Touches nothing on disk but `stat`s.
fn plan_capture_root(config: &WrapConfig, root: &Path) -> Result<Plan> {
    for (set, option) in [
        (config.capture_dir.is_some(), "capture-dir"),
        (config.decision_log.is_some(), "decision-log"),
        (config.session_context_out.is_some(), "session-context-out"),
        (config.session_stop_out.is_some(), "session-stop-out"),
        (config.coverage_out.is_some(), "coverage-out"),
    ] {
        if set {
            return Err(Error::config(
                option,
                format!(
                    "cannot be combined with {} (each run gets its own capture directory)",
                    option_name(CAPTURE_ROOT)
                ),
            ));
        }
    }
    let mut base = config.clone();
    base.capture_root = None;
    base.decision_log_new = false;
    let mut plan = base.plan()?;
    if config.event_source.is_none() {
        return Err(Error::config(
            "event-source",
            "required when any evidence output is requested",
        ));
    }
    check_root(root)?;
    plan.capture_root = Some(root.to_path_buf());
    Ok(plan)
}

/// The root must be a directory (not a symlink to one) or not exist yet with an existing parent.
pub(crate) fn check_root(root: &Path) -> Result<()> {
    if root.as_os_str().is_empty() {
        return Err(Error::config(CAPTURE_ROOT, "the root path is empty"));
    }
    match std::fs::symlink_metadata(root) {
        // A symlinked root is refused like a symlinked capture directory: evidence is never
        // written through a link the wrapper did not make.
        Ok(m) if m.file_type().is_symlink() => Err(Error::config(
            CAPTURE_ROOT,
            format!(
                "{} is a symbolic link (give the directory it points to)",
                root.display()
            ),
        )),
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::config(
            CAPTURE_ROOT,
            format!("{} exists and is not a directory", root.display()),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = match root.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            if parent.is_dir() {
                Ok(())
            } else {
                Err(Error::config(
                    CAPTURE_ROOT,
                    format!(
                        "parent directory of {} does not exist (the root is created, its parent is not)",
                        root.display()
                    ),
                ))
            }
        }
        Err(e) => Err(Error::config(
            CAPTURE_ROOT,
            format!("cannot inspect {}: {e}", root.display()),
        )),
    }
}

/// SPEC §6 "policy readable and valid", first half: the path names an existing regular file.
fn policy_metadata(path: &Path) -> Result<std::fs::Metadata> {
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::config(
            "policy",
            format!("cannot read policy {}: {e}", with_working_dir(path)),
        )
    })?;
    if !meta.is_file() {
        return Err(Error::config(
            "policy",
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(meta)
}

/// Loads and checks the policy file at `path` as `wrap_session` does before it spawns anything
/// (SPEC §6), with the same errors: [`crate::ErrorKind::Config`] on the `policy` option,
/// `--policy: …` on the command line. Spawns nothing, creates nothing; `assay policy check`
/// (SPEC §10) is this plus [`Policy::summary`].
///
/// # Errors
/// A configuration error when the file is missing, not a regular file, or not a valid policy
/// (the message is the [`crate::PolicyError`]'s).
pub fn load_policy(path: &Path) -> Result<Policy> {
    policy_metadata(path)?;
    Policy::load(path).map_err(|e| Error::config("policy", e.to_string()))
}

impl WrapConfig {
    /// Runs every check of SPEC §6 and resolves the plan. Touches nothing on disk but `stat`s.
    pub(crate) fn plan(&self) -> Result<Plan> {
        if let Some(root) = &self.capture_root {
            return plan_capture_root(self, root);
        }
        if self.command.is_empty() || self.command[0].is_empty() {
            return Err(Error::config(
                "command",
                "no server command given (put it after `--`)",
            ));
        }
        let policy_meta = policy_metadata(&self.policy)?;
        if let Some(t) = self.drain_timeout {
            if !(t.is_finite() && (0.0..=1e9).contains(&t)) {
                return Err(Error::config(
                    "drain-timeout",
                    "must be a non-negative number of seconds",
                ));
            }
        }
        if let Some(t) = self.idle_drain {
            if !(t.is_finite() && (0.0..=1e9).contains(&t)) {
                return Err(Error::config(
                    "idle-drain",
                    "must be a non-negative number of seconds (0: wait forever)",
                ));
            }
        }
        let max_line = self.max_line_bytes.unwrap_or(DEFAULT_MAX_LINE_BYTES);
        if max_line == 0 || max_line > (1 << 40) {
            return Err(Error::config(
                "max-line-bytes",
                "must be between 1 and 2^40 bytes",
            ));
        }
        let max_line_bytes = usize::try_from(max_line)
            .map_err(|_| Error::config("max-line-bytes", "too large for this platform"))?;
        if let Some(l) = &self.label {
            if l.is_empty() || l.chars().any(char::is_control) {
                return Err(Error::config(
                    "label",
                    "must be non-empty without control characters",
                ));
            }
        }

        let mut decision_log = self.decision_log.clone();
        let mut context_out = self.session_context_out.clone();
        let mut stop_out = self.session_stop_out.clone();
        let mut coverage_out = self.coverage_out.clone();
        let mut protocol_out = None;
        // A discovery-only run's marker (SPEC §10) is one of the capture's files too.
        let mut no_session_out = None;
        let mut stderr = self.stderr.clone().map(StderrSink::Append);
        let mut decision_log_new = self.decision_log_new;

        if let Some(dir) = &self.capture_dir {
            for (set, opt) in [
                (self.decision_log.is_some(), "decision-log"),
                (self.session_context_out.is_some(), "session-context-out"),
                (self.session_stop_out.is_some(), "session-stop-out"),
            ] {
                if set {
                    return Err(Error::config(
                        opt,
                        format!(
                            "cannot be combined with {} (the capture sets it)",
                            option_name("capture-dir")
                        ),
                    ));
                }
            }
            let meta = std::fs::symlink_metadata(dir);
            match meta {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(Error::config(
                        "capture-dir",
                        format!("{} exists and is not a directory", dir.display()),
                    ));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let parent = match dir.parent() {
                        Some(p) if !p.as_os_str().is_empty() => p,
                        _ => Path::new("."),
                    };
                    if !parent.is_dir() {
                        return Err(Error::config(
                            "capture-dir",
                            format!("parent directory of {} does not exist", dir.display()),
                        ));
                    }
                }
                Err(e) => {
                    return Err(Error::config(
                        "capture-dir",
                        format!("cannot inspect {}: {e}", dir.display()),
                    ));
                }
            }
            use capture_names::*;
            decision_log = Some(dir.join(DECISIONS));
            decision_log_new = true;
            context_out = Some(dir.join(CONTEXT));
            stop_out = Some(dir.join(STOP));
            protocol_out = Some(dir.join(PROTOCOL));
            no_session_out = Some(dir.join(NO_SESSION));
            if stderr.is_none() {
                stderr = Some(StderrSink::New(dir.join(STDERR)));
            }
            if let Some(c) = &coverage_out {
                let expected = dir.join(COVERAGE);
                let same = c == &expected
                    || (c.file_name() == expected.file_name()
                        && c.parent().and_then(|p| p.canonicalize().ok())
                            == dir.canonicalize().ok());
                if !same {
                    return Err(Error::config(
                        "coverage-out",
                        format!(
                            "with {} the coverage report is {}",
                            option_name("capture-dir"),
                            expected.display()
                        ),
                    ));
                }
                coverage_out = Some(expected);
            }
        }

        let any_evidence = decision_log.is_some()
            || context_out.is_some()
            || stop_out.is_some()
            || coverage_out.is_some();
        match &self.event_source {
            Some(s) if !is_event_source(s) => {
                return Err(Error::config(
                    "event-source",
                    format!("{s:?} is not an absolute URI like assay://host/path"),
                ));
            }
            None if any_evidence => {
                return Err(Error::config(
                    "event-source",
                    "required when any evidence output is requested",
                ));
            }
            _ => {}
        }
        if stop_out.is_some() && decision_log.is_some() && !decision_log_new {
            return Err(Error::config(
                "decision-log-new",
                format!(
                    "required with {} and {} (stop accounting needs a new log)",
                    option_name("session-stop-out"),
                    option_name("decision-log")
                ),
            ));
        }
        if self.decision_log_new && decision_log.is_none() {
            return Err(Error::config(
                "decision-log-new",
                format!("given without {}", option_name("decision-log")),
            ));
        }

        // Distinctness and non-existence of every output (SPEC §6).
        let mut outputs: Vec<(&'static str, &PathBuf, bool)> = Vec::new();
        if let Some(p) = &decision_log {
            outputs.push(("decision-log", p, !decision_log_new));
        }
        if let Some(p) = &context_out {
            outputs.push(("session-context-out", p, false));
        }
        if let Some(p) = &stop_out {
            outputs.push(("session-stop-out", p, false));
        }
        if let Some(p) = &coverage_out {
            outputs.push(("coverage-out", p, false));
        }
        if let Some(p) = &protocol_out {
            outputs.push(("capture-dir", p, false));
        }
        if let Some(p) = &no_session_out {
            outputs.push(("capture-dir", p, false));
        }
        let stderr_path = match &stderr {
            Some(StderrSink::New(p)) => Some((p, false)),
            Some(StderrSink::Append(p)) => Some((p, true)),
            None => None,
        };
        if let Some((p, may_exist)) = stderr_path {
            outputs.push(("stderr", p, may_exist));
        }
        let capture_root = match &self.capture_dir {
            Some(dir) => Some(resolve_dir(dir)?),
            None => None,
        };
        let mut seen: HashMap<PathBuf, &'static str> = HashMap::new();
        let mut seen_inodes: HashMap<(u64, u64), &'static str> = HashMap::new();
        seen.insert(resolve("policy", &self.policy)?, "policy");
        seen_inodes.insert((policy_meta.dev(), policy_meta.ino()), "policy");
        for (option, path, may_exist) in outputs {
            // Files inside a capture directory resolve through the directory, which may not
            // exist yet (it is created just before spawn).
            let resolved = match (&capture_root, self.capture_dir.as_deref()) {
                (Some(root), Some(dir)) if path.parent() == Some(dir) => {
                    root.join(path.file_name().unwrap_or_default())
                }
                _ => resolve(option, path)?,
            };
            if let Some(other) = seen.insert(resolved.clone(), option) {
                return Err(Error::config(
                    option,
                    format!(
                        "{} is the same file as {}",
                        path.display(),
                        option_name(other)
                    ),
                ));
            }
            match std::fs::symlink_metadata(path) {
                Ok(m) => {
                    // A file of the capture directory: the directory was used before (a
                    // capture records one run), whatever option names that file.
                    let in_capture = self
                        .capture_dir
                        .as_deref()
                        .filter(|d| path.parent() == Some(*d));
                    if let (false, Some(_)) = (may_exist, in_capture) {
                        let what = if m.file_type().is_symlink() {
                            "is a symbolic link (a capture's files are created new, never through a link)"
                        } else {
                            "already exists: a capture directory records one run"
                        };
                        return Err(Error::config(
                            "capture-dir",
                            format!(
                                "{} {what}; give a new directory, or {} ROOT for a new one per run",
                                path.display(),
                                option_name(CAPTURE_ROOT)
                            ),
                        ));
                    }
                    if !may_exist {
                        return Err(Error::config(
                            option,
                            format!(
                                "{} already exists (evidence files must be new)",
                                path.display()
                            ),
                        ));
                    }
                    if m.file_type().is_symlink() {
                        return Err(Error::config(
                            option,
                            format!("{} is a symbolic link", path.display()),
                        ));
                    }
                    // SPEC §4.1: a FIFO, a device or a directory at an evidence path is refused
                    // here, without opening it (opening a FIFO would wait for a reader).
                    if option != "stderr" && !m.file_type().is_file() {
                        return Err(Error::config(
                            option,
                            format!(
                                "{} exists and is not a regular file (a FIFO, device or directory)",
                                path.display()
                            ),
                        ));
                    }
                    if let Some(other) = seen_inodes.insert((m.dev(), m.ino()), option) {
                        return Err(Error::config(
                            option,
                            format!(
                                "{} is the same file as {}",
                                path.display(),
                                option_name(other)
                            ),
                        ));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(Error::config(
                        option,
                        format!("cannot inspect {}: {e}", path.display()),
                    ));
                }
            }
        }

        let log_mode = match (&decision_log, decision_log_new, &coverage_out) {
            (Some(_), true, _) => LogMode::New,
            (Some(_), false, _) => LogMode::Append,
            (None, _, Some(_)) => LogMode::Temporary,
            (None, _, None) => LogMode::Absent,
        };

        Ok(Plan {
            command: self.command.clone(),
            policy_path: self.policy.clone(),
            event_source: self.event_source.clone(),
            server_id: self
                .label
                .clone()
                .unwrap_or_else(|| DEFAULT_LABEL.to_string()),
            decision_log,
            log_mode,
            context_out,
            stop_out,
            coverage_out,
            capture_dir: self.capture_dir.clone(),
            capture_root: None,
            protocol_out,
            stderr,
            tee_stderr: self.tee_server_stderr,
            dry_run: self.dry_run,
            drain_timeout: self.drain_timeout.map(Duration::from_secs_f64),
            idle_drain: match self.idle_drain {
                None => Some(DEFAULT_IDLE_DRAIN),
                Some(0.0) => None,
                Some(t) => Some(Duration::from_secs_f64(t)),
            },
            max_line_bytes,
            verbose: self.verbose,
            forward_signals: self.forward_signals,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_policy_errors_are_configuration_errors_on_the_policy_option() {
        let dir = tempfile::tempdir().unwrap();
        let e = load_policy(&dir.path().join("none.yaml")).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Config);
        assert!(
            e.to_string().starts_with("--policy: cannot read policy "),
            "{e}"
        );
        let e = load_policy(dir.path()).unwrap_err();
        assert!(e.to_string().ends_with("is not a regular file"), "{e}");
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "version: '1'\ndeny: [!!binary ZXhlYw==]\n").unwrap();
        let e = load_policy(&bad).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Config);
        let msg = e.to_string();
        assert!(
            msg.starts_with("--policy: policy file ") && msg.contains("line 2 column 8"),
            "{msg}"
        );
        let fifo = dir.path().join("p.yaml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(load_policy(&fifo).is_err());
    }

    #[test]
    fn config_json_refuses_unknown_and_duplicate_keys() {
        let e = WrapConfig::from_json(r#"{"command":["x"],"policy":"p","bogus":1}"#).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        let e =
            WrapConfig::from_json(r#"{"command":["x"],"policy":"p","policy":"q"}"#).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        let c = WrapConfig::from_json(r#"{"command":["x"],"policy":"p","dry_run":true}"#).unwrap();
        assert!(c.dry_run);
        assert_eq!(c.stdin, 0);
        assert_eq!(c.stdout, 1);
    }
}
