//! The library's error type and the table of error kinds every surface maps from: the CLI exit
//! status lives here ([`Error::exit_status`]), the C `AssayStatus` in the C ABI crate
//! (`crates/assay-capi`, so that this module knows nothing of the C ABI), the Python exception
//! class in the bindings.
//!
//! Data is not an error: policy decisions and capture verdicts are values. An [`Error`] means the
//! requested operation could not be carried out (bad configuration, an I/O failure, a failed stop
//! write).
#![forbid(unsafe_code)]

mod config;

use std::path::PathBuf;

pub use config::{ConfigError, ConfigOption, ConfigProblem, OptionSpelling};

use crate::exit_status;
use crate::outcome::WrapOutcome;

/// What went wrong, without the message text. Surfaces choose their status from this, never from
/// the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An argument could not be understood at all (NULL, bad UTF-8, bad JSON at the C ABI).
    InvalidArgument,
    /// The configuration was rejected before anything was spawned or created (SPEC §6).
    Config,
    /// The child command does not exist (CLI exit 127).
    CommandNotFound,
    /// The child command exists but cannot be executed (CLI exit 126).
    CommandNotExecutable,
    /// An I/O operation failed.
    Io,
    /// The session ran but the requested session-stop record could not be written.
    StopWrite,
    /// A bug: a worker panicked or an invariant broke.
    Internal,
}

/// An error from `wrap_session` or `package_capture`.
///
/// `Display` is a single lowercase line naming the option or path involved, options spelled as
/// CLI flags; [`Error::render`] spells them for another surface.
#[derive(Debug, thiserror::Error)]
#[error("{}", self.render(OptionSpelling::Flag))]
pub struct Error {
    kind: ErrorKind,
    detail: Detail,
    path: Option<PathBuf>,
    option: Option<ConfigOption>,
    errno: Option<i32>,
    outcome: Option<Box<WrapOutcome>>,
}

/// What an [`Error`] says: a typed configuration error, or a message that names no option.
#[derive(Debug)]
enum Detail {
    Config(ConfigError),
    Message(String),
}

impl From<ConfigError> for Error {
    fn from(error: ConfigError) -> Self {
        Self {
            kind: ErrorKind::Config,
            option: Some(error.option),
            detail: Detail::Config(error),
            path: None,
            errno: None,
            outcome: None,
        }
    }
}

impl Error {
    /// A configuration error about `option`, stated in `text` (which names no other option;
    /// [`ConfigProblem`] has the problems that do).
    pub(crate) fn config(option: ConfigOption, text: impl Into<String>) -> Self {
        ConfigError::invalid(option, text).into()
    }

    /// An argument that could not be understood (used by the C ABI and Python layers).
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    /// An argument about `option` that cannot be used (a bad borrowed descriptor), with the OS
    /// error number when the OS reported one.
    pub(crate) fn invalid_option(
        option: ConfigOption,
        message: impl Into<String>,
        errno: Option<i32>,
    ) -> Self {
        Self {
            kind: ErrorKind::InvalidArgument,
            detail: Detail::Message(message.into()),
            path: None,
            option: Some(option),
            errno,
            outcome: None,
        }
    }

    /// The same error with the OS error number that caused it.
    pub(crate) fn with_errno(mut self, errno: Option<i32>) -> Self {
        self.errno = errno;
        self
    }

    /// An I/O failure on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, what: &str, err: &std::io::Error) -> Self {
        let path = path.into();
        Self {
            kind: ErrorKind::Io,
            detail: Detail::Message(format!("{what} {}: {err}", path.display())),
            path: Some(path),
            option: None,
            errno: None,
            outcome: None,
        }
    }

    /// An error of `kind` with `message` (one lowercase line).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            detail: Detail::Message(message.into()),
            path: None,
            option: None,
            errno: None,
            outcome: None,
        }
    }

    pub(crate) fn stop_write(message: impl Into<String>, outcome: WrapOutcome) -> Self {
        Self {
            kind: ErrorKind::StopWrite,
            detail: Detail::Message(message.into()),
            path: outcome.paths.session_stop.clone(),
            option: None,
            errno: None,
            outcome: Some(Box::new(outcome)),
        }
    }

    /// The message with every option spelled for a surface: `--event-source` for the CLI
    /// ([`OptionSpelling::Flag`], as `Display`), `event_source` for Python and C
    /// ([`OptionSpelling::Key`]).
    pub fn render(&self, spelling: OptionSpelling) -> String {
        match &self.detail {
            Detail::Config(error) => error.render(spelling),
            Detail::Message(message) => message.clone(),
        }
    }

    /// The typed configuration error, for [`ErrorKind::Config`].
    pub fn config_error(&self) -> Option<&ConfigError> {
        match &self.detail {
            Detail::Config(error) => Some(error),
            Detail::Message(_) => None,
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The path involved, when there is one.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    /// The OS error number behind the error, when there is one (e.g. `EBADF` for a borrowed
    /// descriptor that is not open).
    pub fn os_errno(&self) -> Option<i32> {
        self.errno
    }

    /// The configuration option involved, for [`ErrorKind::Config`] (and for an
    /// [`ErrorKind::InvalidArgument`] about one option, such as `stdin`).
    pub fn option(&self) -> Option<ConfigOption> {
        self.option
    }

    /// The session outcome, for [`ErrorKind::StopWrite`]: the child status was observed even
    /// though the stop record could not be written.
    pub fn outcome(&self) -> Option<&WrapOutcome> {
        self.outcome.as_deref()
    }

    /// Takes the session outcome out of a [`ErrorKind::StopWrite`] error.
    pub fn into_outcome(self) -> Option<WrapOutcome> {
        self.outcome.map(|b| *b)
    }

    /// The `assay mcp wrap` exit status for this error (SPEC §10).
    pub fn exit_status(&self) -> i32 {
        match self.kind {
            ErrorKind::Config | ErrorKind::InvalidArgument => exit_status::USAGE,
            ErrorKind::CommandNotFound => exit_status::NOT_FOUND,
            ErrorKind::CommandNotExecutable => exit_status::NOT_EXECUTABLE,
            ErrorKind::Io | ErrorKind::StopWrite | ErrorKind::Internal => exit_status::FAILURE,
        }
    }
}

/// Convenience alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_surface_spells_the_options_its_own_way() {
        let e = Error::from(ConfigError::new(
            ConfigOption::DecisionLogNew,
            ConfigProblem::GivenWithout(ConfigOption::DecisionLog),
        ));
        assert_eq!(
            e.to_string(),
            "--decision-log-new: given without --decision-log"
        );
        assert_eq!(e.render(OptionSpelling::Flag), e.to_string());
        assert_eq!(
            e.render(OptionSpelling::Key),
            "decision_log_new: given without decision_log"
        );
        assert_eq!(e.kind(), ErrorKind::Config);
        assert_eq!(e.option(), Some(ConfigOption::DecisionLogNew));
        let plain = Error::invalid_argument("config_json: not JSON");
        assert_eq!(plain.render(OptionSpelling::Key), "config_json: not JSON");
        assert!(plain.config_error().is_none());
    }
}
