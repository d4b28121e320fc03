//! The library's error type and the table of error kinds every surface maps from: the CLI exit
//! status lives here ([`Error::exit_status`]), the C `AssayStatus` in the FFI layer
//! (`ErrorKind::c_status`, written there so that this module stays a leaf that knows nothing of
//! the C ABI), the Python exception class in the bindings.
//!
//! Data is not an error: policy decisions and capture verdicts are values. An [`Error`] means the
//! requested operation could not be carried out (bad configuration, an I/O failure, a failed stop
//! write).

use std::fmt;
use std::path::PathBuf;

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

/// How a surface spells a configuration option in an error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionSpelling {
    /// The CLI flag: `--event-source` (what `Display` shows).
    Flag,
    /// The Python keyword and C `config_json` key: `event_source`.
    Key,
}

impl OptionSpelling {
    /// `option` (an option identifier such as `event-source`) in this spelling.
    pub fn spell(self, option: &str) -> String {
        match self {
            OptionSpelling::Flag => format!("--{option}"),
            OptionSpelling::Key => option.replace('-', "_"),
        }
    }
}

/// Brackets an option named inside a configuration message, so each surface can spell it.
const OPTION_MARK: char = '\u{1}';

/// Names `option` inside a configuration error's message; rendered per surface by
/// [`Error::render`].
pub(crate) fn option_name(option: &str) -> String {
    format!("{OPTION_MARK}{option}{OPTION_MARK}")
}

/// An error from `wrap_session` or `package_capture`.
///
/// `Display` is a single lowercase line naming the option or path involved, options spelled as
/// CLI flags; [`Error::render`] spells them for another surface.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    path: Option<PathBuf>,
    option: Option<&'static str>,
    errno: Option<i32>,
    outcome: Option<Box<WrapOutcome>>,
}

impl Error {
    /// A configuration error about `option` (the option identifier, e.g. `event-source`); other
    /// options named in `message` are written with [`option_name`].
    pub(crate) fn config(option: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Config,
            message: format!("{}: {}", option_name(option), message.into()),
            path: None,
            option: Some(option),
            errno: None,
            outcome: None,
        }
    }

    /// An argument that could not be understood (used by the C ABI and Python layers).
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    /// An argument about `option` that cannot be used (a bad borrowed descriptor), with the OS
    /// error number when the OS reported one.
    pub(crate) fn invalid_option(
        option: &'static str,
        message: impl Into<String>,
        errno: Option<i32>,
    ) -> Self {
        Self {
            kind: ErrorKind::InvalidArgument,
            message: message.into(),
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
            message: format!("{what} {}: {err}", path.display()),
            path: Some(path),
            option: None,
            errno: None,
            outcome: None,
        }
    }

    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            path: None,
            option: None,
            errno: None,
            outcome: None,
        }
    }

    pub(crate) fn stop_write(message: impl Into<String>, outcome: WrapOutcome) -> Self {
        Self {
            kind: ErrorKind::StopWrite,
            message: message.into(),
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
        if !self.message.contains(OPTION_MARK) {
            return self.message.clone();
        }
        // Marks come in pairs around an option name (`option_name`); text between pairs is verbatim.
        // A mark inside a path shown in the message only changes how that path is spelled.
        let mut out = String::with_capacity(self.message.len() + 8);
        for (i, part) in self.message.split(OPTION_MARK).enumerate() {
            if i % 2 == 1 {
                out.push_str(&spelling.spell(part));
            } else {
                out.push_str(part);
            }
        }
        out
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
    pub fn option(&self) -> Option<&'static str> {
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
            ErrorKind::Config | ErrorKind::InvalidArgument => 2,
            ErrorKind::CommandNotFound => 127,
            ErrorKind::CommandNotExecutable => 126,
            ErrorKind::Io | ErrorKind::StopWrite | ErrorKind::Internal => 3,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(OptionSpelling::Flag))
    }
}

impl std::error::Error for Error {}

/// Convenience alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_surface_spells_the_options_its_own_way() {
        let e = Error::config(
            "decision-log-new",
            format!(
                "required with {} and {}",
                option_name("session-stop-out"),
                option_name("decision-log")
            ),
        );
        assert_eq!(
            e.to_string(),
            "--decision-log-new: required with --session-stop-out and --decision-log"
        );
        assert_eq!(e.render(OptionSpelling::Flag), e.to_string());
        assert_eq!(
            e.render(OptionSpelling::Key),
            "decision_log_new: required with session_stop_out and decision_log"
        );
        assert_eq!(e.option(), Some("decision-log-new"));
        let plain = Error::invalid_argument("config_json: not JSON");
        assert_eq!(plain.render(OptionSpelling::Key), "config_json: not JSON");
    }
}
