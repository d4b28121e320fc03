//! The [`SessionPlan`]: a configuration that passed every check of SPEC §6, resolved into what
//! the session uses (paths, how the decision log is kept, the stderr sink, durations).

use std::path::PathBuf;
use std::time::Duration;

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
pub(crate) struct SessionPlan {
    pub command: Vec<std::ffi::OsString>,
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
    /// The key that signs the capture after the stop record (SPEC §4.5).
    pub sign_key: Option<PathBuf>,

    /// The live OTLP/HTTP endpoint (checked: `otlp::Endpoint::parse` accepts it).
    pub otlp_endpoint: Option<String>,
}

/// Where the child's stderr (and, for a capture, the wrapper's diagnostics) go.
#[derive(Debug, Clone)]
pub(crate) enum StderrSink {
    /// A capture's `proxy-stderr.log`: created new.
    New(PathBuf),
    /// A user-given path: appended to.
    Append(PathBuf),
}

impl SessionPlan {
    /// SPEC §3.1b: every relative path of the plan joined, once, to the working directory of the
    /// session's start, so a host thread that changes directory mid-session does not move where
    /// the evidence lands (or which policy was read). A path that cannot be made absolute (the
    /// working directory was removed) is kept as it is.
    pub(crate) fn anchored(mut self) -> Self {
        fn anchor(p: &mut PathBuf) {
            if p.is_relative() {
                if let Ok(abs) = std::path::absolute(&*p) {
                    *p = abs;
                }
            }
        }
        anchor(&mut self.policy_path);
        for p in [
            &mut self.decision_log,
            &mut self.context_out,
            &mut self.stop_out,
            &mut self.coverage_out,
            &mut self.capture_dir,
            &mut self.capture_root,
            &mut self.protocol_out,
            &mut self.sign_key,
        ]
        .into_iter()
        .flatten()
        {
            anchor(p);
        }
        if let Some(StderrSink::New(p) | StderrSink::Append(p)) = &mut self.stderr {
            anchor(p);
        }
        self
    }
}
