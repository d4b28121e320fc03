//! Typed configuration errors (SPEC §6): the option at fault ([`ConfigOption`]) and what is wrong
//! with it ([`ConfigProblem`]), which may name other options. Nothing here is text until a surface
//! renders it: the command line spells options as flags (`--event-source`), Python and the C
//! `config_json` as keys (`event_source`), see [`ConfigError::render`].
#![forbid(unsafe_code)]

use std::path::PathBuf;

/// How a surface spells a configuration option in an error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionSpelling {
    /// The CLI flag: `--event-source` (what `Display` shows).
    Flag,
    /// The Python keyword and C `config_json` key: `event_source`.
    Key,
}

/// A configuration option of a session ([`crate::WrapConfig`]) or of `mcp wrap-config`, as named in
/// errors about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigOption {
    /// The server command.
    Command,
    /// The policy file.
    Policy,
    /// The CloudEvents source.
    EventSource,
    /// The `server_id` label.
    Label,
    /// The decision log path.
    DecisionLog,
    /// The decision log must be new.
    DecisionLogNew,
    /// The session-context event path.
    SessionContextOut,
    /// The session-stop event path.
    SessionStopOut,
    /// The coverage report path.
    CoverageOut,
    /// The capture directory.
    CaptureDir,
    /// The capture root.
    CaptureRoot,
    /// The drain bound after client EOF.
    DrainTimeout,
    /// The idle-drain bound after client EOF.
    IdleDrain,
    /// The longest accepted line.
    MaxLineBytes,
    /// The client input descriptor.
    Stdin,
    /// The client output descriptor.
    Stdout,
    /// The server's stderr sink.
    Stderr,
    /// Forwarding of SIGTERM, SIGINT and SIGHUP to the server.
    ForwardSignals,
    /// The private key that signs the capture (SPEC §4.5).
    SignKey,

    /// The live OTLP/HTTP endpoint.
    OtlpEndpoint,
}

impl ConfigOption {
    /// The option's identifier, the CLI flag without its dashes: `event-source`.
    pub fn identifier(self) -> &'static str {
        match self {
            ConfigOption::Command => "command",
            ConfigOption::Policy => "policy",
            ConfigOption::EventSource => "event-source",
            ConfigOption::Label => "label",
            ConfigOption::DecisionLog => "decision-log",
            ConfigOption::DecisionLogNew => "decision-log-new",
            ConfigOption::SessionContextOut => "session-context-out",
            ConfigOption::SessionStopOut => "session-stop-out",
            ConfigOption::CoverageOut => "coverage-out",
            ConfigOption::CaptureDir => "capture-dir",
            ConfigOption::CaptureRoot => "capture-root",
            ConfigOption::DrainTimeout => "drain-timeout",
            ConfigOption::IdleDrain => "idle-drain",
            ConfigOption::MaxLineBytes => "max-line-bytes",
            ConfigOption::Stdin => "stdin",
            ConfigOption::Stdout => "stdout",
            ConfigOption::Stderr => "stderr",
            ConfigOption::ForwardSignals => "forward-signals",
            ConfigOption::SignKey => "sign-key",

            ConfigOption::OtlpEndpoint => "otlp-endpoint",
        }
    }

    /// The option as `spelling` writes it: `--event-source` or `event_source`.
    pub fn spell(self, spelling: OptionSpelling) -> String {
        let id = self.identifier();
        match spelling {
            OptionSpelling::Flag => format!("--{id}"),
            OptionSpelling::Key => id.replace('-', "_"),
        }
    }
}

/// What is wrong with an option. The variants that name another option hold it typed, so each
/// surface spells it its own way.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigProblem {
    /// A problem stated without naming another option (`must be between 1 and 2^40 bytes`).
    Invalid(String),
    /// Given together with `other`, which excludes it: `cannot be combined with --other (why)`.
    ExcludedBy {
        /// The option that excludes this one.
        other: ConfigOption,
        /// Why, in parentheses after it.
        why: &'static str,
    },
    /// Required because both `first` and `second` are given: `required with --a and --b (why)`.
    RequiredWith {
        /// The first option that requires this one.
        first: ConfigOption,
        /// The second option that requires this one.
        second: ConfigOption,
        /// Why, in parentheses after them.
        why: &'static str,
    },
    /// Given without `other`, which it needs: `given without --other`.
    GivenWithout(ConfigOption),
    /// The path names the same file as `other`'s: `PATH is the same file as --other`.
    SameFileAs {
        /// The path given for this option.
        path: PathBuf,
        /// The option already naming that file.
        other: ConfigOption,
    },
    /// With a capture directory the coverage report has a fixed place:
    /// `with --capture-dir the coverage report is PATH`.
    FixedInCaptureDir {
        /// Where the report goes.
        expected: PathBuf,
    },
    /// A capture directory that already recorded a run: `PATH already exists: …; give a new
    /// directory, or --capture-root ROOT for a new one per run`.
    CaptureDirUsed {
        /// The file of the capture directory that is in the way.
        path: PathBuf,
        /// It is a symbolic link (rather than a file left by an earlier run).
        symlink: bool,
    },
}

impl ConfigProblem {
    /// The problem in words, options spelled for a surface.
    pub fn render(&self, spelling: OptionSpelling) -> String {
        match self {
            ConfigProblem::Invalid(text) => text.clone(),
            ConfigProblem::ExcludedBy { other, why } => {
                format!("cannot be combined with {} ({why})", other.spell(spelling))
            }
            ConfigProblem::RequiredWith { first, second, why } => format!(
                "required with {} and {} ({why})",
                first.spell(spelling),
                second.spell(spelling)
            ),
            ConfigProblem::GivenWithout(other) => {
                format!("given without {}", other.spell(spelling))
            }
            ConfigProblem::SameFileAs { path, other } => format!(
                "{} is the same file as {}",
                path.display(),
                other.spell(spelling)
            ),
            ConfigProblem::FixedInCaptureDir { expected } => format!(
                "with {} the coverage report is {}",
                ConfigOption::CaptureDir.spell(spelling),
                expected.display()
            ),
            ConfigProblem::CaptureDirUsed { path, symlink } => {
                let what = if *symlink {
                    "is a symbolic link (a capture's files are created new, never through a link)"
                } else {
                    "already exists: a capture directory records one run"
                };
                format!(
                    "{} {what}; give a new directory, or {} ROOT for a new one per run",
                    path.display(),
                    ConfigOption::CaptureRoot.spell(spelling)
                )
            }
        }
    }
}

/// A configuration rejected before anything was spawned or created (SPEC §6): the option and the
/// problem. `Display` is the command line's wording (`--option: problem`); other surfaces call
/// [`ConfigError::render`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render(OptionSpelling::Flag))]
pub struct ConfigError {
    /// The option at fault.
    pub option: ConfigOption,
    /// What is wrong with it.
    pub problem: ConfigProblem,
}

impl ConfigError {
    /// `option` has `problem`.
    pub fn new(option: ConfigOption, problem: ConfigProblem) -> Self {
        Self { option, problem }
    }

    /// `option` has a problem stated in `text`, which names no other option.
    pub fn invalid(option: ConfigOption, text: impl Into<String>) -> Self {
        Self::new(option, ConfigProblem::Invalid(text.into()))
    }

    /// One line, `option: problem`, every option spelled for a surface.
    pub fn render(&self, spelling: OptionSpelling) -> String {
        format!(
            "{}: {}",
            self.option.spell(spelling),
            self.problem.render(spelling)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_surface_spells_the_options_its_own_way() {
        let e = ConfigError::new(
            ConfigOption::DecisionLogNew,
            ConfigProblem::RequiredWith {
                first: ConfigOption::SessionStopOut,
                second: ConfigOption::DecisionLog,
                why: "stop accounting needs a new log",
            },
        );
        assert_eq!(
            e.to_string(),
            "--decision-log-new: required with --session-stop-out and --decision-log \
             (stop accounting needs a new log)"
        );
        assert_eq!(e.render(OptionSpelling::Flag), e.to_string());
        assert_eq!(
            e.render(OptionSpelling::Key),
            "decision_log_new: required with session_stop_out and decision_log \
             (stop accounting needs a new log)"
        );
    }

    #[test]
    fn a_path_is_never_respelled() {
        // A path that looks like an option stays as it was given, on every surface.
        let e = ConfigError::new(
            ConfigOption::CoverageOut,
            ConfigProblem::SameFileAs {
                path: PathBuf::from("/tmp/--decision-log"),
                other: ConfigOption::DecisionLog,
            },
        );
        assert_eq!(
            e.render(OptionSpelling::Key),
            "coverage_out: /tmp/--decision-log is the same file as decision_log"
        );
    }
}
