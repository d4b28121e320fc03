//! The checks of SPEC §6 a configuration passes before anything is spawned or created, each
//! failing with a typed configuration error ([`crate::ConfigError`]) on the first problem: the
//! options themselves, the capture directory or root, the policy file, and the evidence outputs
//! (distinct, new, regular files). Paths are resolved here only to compare them; what a session
//! will use is resolved in `resolve.rs`. Touches nothing on disk but `stat`s.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::plan::StderrSink;
use super::resolve::EvidencePaths;
use super::wrap_config::{DEFAULT_MAX_LINE_BYTES, WrapConfig};
use crate::capture_files::{ATTESTATION, COVERAGE, DEFINITIONS};
use crate::error::{ConfigError, ConfigOption, ConfigProblem, Error, Result};
use crate::event_source::is_event_source;
use crate::policy::Policy;

/// What [`check_options`] found that resolution uses.
pub(super) struct CheckedOptions {
    /// The policy file's metadata (its device and inode: no output may be the policy).
    pub policy: std::fs::Metadata,
    /// `max_line_bytes` as a size.
    pub max_line_bytes: usize,
}

/// The options a configuration states about itself (SPEC §6): a server command, a policy file that
/// is a regular file, bounds within their ranges, a label without control characters.
pub(super) fn check_options(config: &WrapConfig) -> Result<CheckedOptions> {
    if config.command.is_empty() || config.command[0].is_empty() {
        return Err(Error::config(
            ConfigOption::Command,
            "no server command given (put it after `--`)",
        ));
    }
    // SPEC §3.1b: an argument with a NUL byte cannot be passed to exec; found here, before
    // anything is created, not at the spawn.
    if let Some(i) = config
        .command
        .iter()
        .position(|a| std::os::unix::ffi::OsStrExt::as_bytes(a.as_os_str()).contains(&0))
    {
        return Err(Error::config(
            ConfigOption::Command,
            format!(
                "argument {i} of the server command contains a NUL byte, which no program can receive; remove it"
            ),
        ));
    }
    let policy = policy_metadata(&config.policy)?;
    if let Some(t) = config.drain_timeout {
        if !(t.is_finite() && (0.0..=1e9).contains(&t)) {
            return Err(Error::config(
                ConfigOption::DrainTimeout,
                "must be a non-negative number of seconds",
            ));
        }
    }
    if let Some(t) = config.idle_drain {
        if !(t.is_finite() && (0.0..=1e9).contains(&t)) {
            return Err(Error::config(
                ConfigOption::IdleDrain,
                "must be a non-negative number of seconds (0: wait forever)",
            ));
        }
    }
    let max_line = config.max_line_bytes.unwrap_or(DEFAULT_MAX_LINE_BYTES);
    if max_line == 0 || max_line > (1 << 40) {
        return Err(Error::config(
            ConfigOption::MaxLineBytes,
            "must be between 1 and 2^40 bytes",
        ));
    }
    let max_line_bytes = usize::try_from(max_line)
        .map_err(|_| Error::config(ConfigOption::MaxLineBytes, "too large for this platform"))?;
    if let Some(l) = &config.label {
        if l.is_empty() || l.chars().any(char::is_control) {
            return Err(Error::config(
                ConfigOption::Label,
                "must be non-empty without control characters",
            ));
        }
    }
    Ok(CheckedOptions {
        policy,
        max_line_bytes,
    })
}

/// A signing key (SPEC §4.5) signs a capture: it needs a capture directory or a capture root.
/// The key file itself is read when the session is prepared (`proxy::signing::load_sign_key`),
/// before anything is spawned.
pub(super) fn check_sign_key(config: &WrapConfig) -> Result<()> {
    if config.sign_key.is_some() && config.capture_dir.is_none() && config.capture_root.is_none() {
        return Err(Error::config(
            ConfigOption::SignKey,
            "signs a capture: give a capture directory or a capture root with it",
        ));
    }
    Ok(())
}

/// A capture directory (SPEC §7, §10): the options it sets itself are not given too, and it is a
/// directory or can be created in an existing one; a coverage report given with it is the
/// capture's own `coverage.json`.
pub(super) fn check_capture_dir(config: &WrapConfig, dir: &Path) -> Result<()> {
    for (set, opt) in [
        (config.decision_log.is_some(), ConfigOption::DecisionLog),
        (
            config.session_context_out.is_some(),
            ConfigOption::SessionContextOut,
        ),
        (
            config.session_stop_out.is_some(),
            ConfigOption::SessionStopOut,
        ),
    ] {
        if set {
            return Err(ConfigError::new(
                opt,
                ConfigProblem::ExcludedBy {
                    other: ConfigOption::CaptureDir,
                    why: "the capture sets it",
                },
            )
            .into());
        }
    }
    let meta = std::fs::symlink_metadata(dir);
    match meta {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(Error::config(
                ConfigOption::CaptureDir,
                format!("{} exists and is not a directory", dir.display()),
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !containing_dir(dir).is_dir() {
                return Err(Error::config(
                    ConfigOption::CaptureDir,
                    format!("parent directory of {} does not exist", dir.display()),
                ));
            }
        }
        Err(e) => {
            return Err(Error::config(
                ConfigOption::CaptureDir,
                format!("cannot inspect {}: {e}", dir.display()),
            ));
        }
    }
    // An attestation is a capture's last file, and kept definitions are written only by a
    // session: either there means the directory was used.
    for name in [ATTESTATION, DEFINITIONS] {
        let used = dir.join(name);
        if let Ok(m) = std::fs::symlink_metadata(&used) {
            return Err(ConfigError::new(
                ConfigOption::CaptureDir,
                ConfigProblem::CaptureDirUsed {
                    path: used,
                    symlink: m.file_type().is_symlink(),
                },
            )
            .into());
        }
    }
    if let Some(c) = &config.coverage_out {
        let expected = dir.join(COVERAGE);
        let same = c == &expected
            || (c.file_name() == expected.file_name()
                && c.parent().and_then(|p| p.canonicalize().ok()) == dir.canonicalize().ok());
        if !same {
            return Err(ConfigError::new(
                ConfigOption::CoverageOut,
                ConfigProblem::FixedInCaptureDir { expected },
            )
            .into());
        }
    }
    Ok(())
}

/// The evidence outputs (SPEC §6): an event source whenever evidence is written, a new decision
/// log where stop accounting needs one, and every output a distinct file that does not exist yet
/// (or, for an appended log or stderr, a regular file), never a symbolic link, a FIFO or a device.
pub(super) fn check_outputs(
    config: &WrapConfig,
    paths: &EvidencePaths,
    policy_meta: &std::fs::Metadata,
) -> Result<()> {
    check_event_source(config, paths)?;
    check_log_flags(config, paths)?;
    // Distinctness and non-existence of every output (SPEC §6).
    let capture_root = match &config.capture_dir {
        Some(dir) => Some(resolve_dir(dir)?),
        None => None,
    };
    let mut seen = Seen {
        paths: HashMap::new(),
        inodes: HashMap::new(),
    };
    seen.paths.insert(
        resolve(ConfigOption::Policy, &config.policy)?,
        ConfigOption::Policy,
    );
    seen.inodes
        .insert((policy_meta.dev(), policy_meta.ino()), ConfigOption::Policy);
    for (option, path, may_exist) in outputs_of(paths) {
        // Files inside a capture directory resolve through the directory, which may not
        // exist yet (it is created just before spawn).
        let resolved = match (&capture_root, config.capture_dir.as_deref()) {
            (Some(root), Some(dir)) if path.parent() == Some(dir) => {
                root.join(path.file_name().unwrap_or_default())
            }
            _ => resolve(option, path)?,
        };
        if let Some(other) = seen.paths.insert(resolved, option) {
            return Err(ConfigError::new(
                option,
                ConfigProblem::SameFileAs {
                    path: path.clone(),
                    other,
                },
            )
            .into());
        }
        check_output_file(config, &mut seen, option, path, may_exist)?;
    }
    Ok(())
}

/// `--event-source`: a valid absolute URI, and required whenever evidence is written.
fn check_event_source(config: &WrapConfig, paths: &EvidencePaths) -> Result<()> {
    let any_evidence = paths.decision_log.is_some()
        || paths.context_out.is_some()
        || paths.stop_out.is_some()
        || paths.coverage_out.is_some();
    match &config.event_source {
        Some(s) if !is_event_source(s) => Err(Error::config(
            ConfigOption::EventSource,
            format!("{s:?} is not an absolute URI like assay://host/path"),
        )),
        None if any_evidence => Err(Error::config(
            ConfigOption::EventSource,
            "required when any evidence output is requested",
        )),
        _ => Ok(()),
    }
}

/// `--decision-log-new`: required with a stop record and a log (stop accounting needs a new
/// log), and meaningless without a log.
fn check_log_flags(config: &WrapConfig, paths: &EvidencePaths) -> Result<()> {
    if paths.stop_out.is_some() && paths.decision_log.is_some() && !paths.decision_log_new {
        return Err(ConfigError::new(
            ConfigOption::DecisionLogNew,
            ConfigProblem::RequiredWith {
                first: ConfigOption::SessionStopOut,
                second: ConfigOption::DecisionLog,
                why: "stop accounting needs a new log",
            },
        )
        .into());
    }
    if config.decision_log_new && paths.decision_log.is_none() {
        return Err(ConfigError::new(
            ConfigOption::DecisionLogNew,
            ConfigProblem::GivenWithout(ConfigOption::DecisionLog),
        )
        .into());
    }
    Ok(())
}

/// Every output file, with the option that names it and whether it may exist already (an
/// appended decision log or stderr).
fn outputs_of(paths: &EvidencePaths) -> Vec<(ConfigOption, &PathBuf, bool)> {
    let mut outputs: Vec<(ConfigOption, &PathBuf, bool)> = Vec::new();
    if let Some(p) = &paths.decision_log {
        outputs.push((ConfigOption::DecisionLog, p, !paths.decision_log_new));
    }
    for (option, path) in [
        (ConfigOption::SessionContextOut, &paths.context_out),
        (ConfigOption::SessionStopOut, &paths.stop_out),
        (ConfigOption::CoverageOut, &paths.coverage_out),
        (ConfigOption::CaptureDir, &paths.protocol_out),
        (ConfigOption::CaptureDir, &paths.no_session_out),
    ] {
        if let Some(p) = path {
            outputs.push((option, p, false));
        }
    }
    match &paths.stderr {
        Some(StderrSink::New(p)) => outputs.push((ConfigOption::Stderr, p, false)),
        Some(StderrSink::Append(p)) => outputs.push((ConfigOption::Stderr, p, true)),
        None => {}
    }
    outputs
}

/// The files already named, by resolved path and by inode.
struct Seen {
    paths: HashMap<PathBuf, ConfigOption>,
    inodes: HashMap<(u64, u64), ConfigOption>,
}

/// One output file as it is now: absent, or (where it may exist) a regular file that is no
/// other output, never a symbolic link, FIFO or device; a file of a used capture directory is
/// refused as such.
fn check_output_file(
    config: &WrapConfig,
    seen: &mut Seen,
    option: ConfigOption,
    path: &PathBuf,
    may_exist: bool,
) -> Result<()> {
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Error::config(
                option,
                format!("cannot inspect {}: {e}", path.display()),
            ));
        }
    };
    // A file of the capture directory: the directory was used before (a capture records one
    // run), whatever option names that file.
    let in_capture = config
        .capture_dir
        .as_deref()
        .filter(|d| path.parent() == Some(*d));
    if let (false, Some(_)) = (may_exist, in_capture) {
        return Err(ConfigError::new(
            ConfigOption::CaptureDir,
            ConfigProblem::CaptureDirUsed {
                path: path.clone(),
                symlink: m.file_type().is_symlink(),
            },
        )
        .into());
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
    // SPEC §4.1: a FIFO, a device or a directory at an evidence path is refused here, without
    // opening it (opening a FIFO would wait for a reader).
    if option != ConfigOption::Stderr && !m.file_type().is_file() {
        return Err(Error::config(
            option,
            format!(
                "{} exists and is not a regular file (a FIFO, device or directory)",
                path.display()
            ),
        ));
    }
    if let Some(other) = seen.inodes.insert((m.dev(), m.ino()), option) {
        return Err(ConfigError::new(
            option,
            ConfigProblem::SameFileAs {
                path: path.clone(),
                other,
            },
        )
        .into());
    }
    Ok(())
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

/// The directory an entry at `path` lives in: its parent, or `.` for a bare name.
fn containing_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Resolves a capture directory that may not exist yet: its parent canonicalized, its name kept.
fn resolve_dir(dir: &Path) -> Result<PathBuf> {
    if let Ok(c) = dir.canonicalize() {
        return Ok(c);
    }
    resolve(ConfigOption::CaptureDir, dir)
}

/// Resolves a path for the distinctness check: parent directory canonicalized (it must exist),
/// file name kept.
fn resolve(option: ConfigOption, path: &Path) -> Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::config(option, format!("{} has no file name", path.display())))?;
    let parent = containing_dir(path);
    let parent = parent.canonicalize().map_err(|e| {
        Error::config(
            option,
            format!("directory {} is not usable: {e}", parent.display()),
        )
    })?;
    Ok(parent.join(name))
}

/// A capture root's own checks (SPEC §10): an event source (every run writes evidence), and the
/// root itself.
pub(super) fn check_capture_root(config: &WrapConfig, root: &Path) -> Result<()> {
    if config.event_source.is_none() {
        return Err(Error::config(
            ConfigOption::EventSource,
            "required when any evidence output is requested",
        ));
    }
    check_root(root)
}

/// The root must be a directory (not a symlink to one) or not exist yet with an existing parent.
pub(crate) fn check_root(root: &Path) -> Result<()> {
    if root.as_os_str().is_empty() {
        return Err(Error::config(
            ConfigOption::CaptureRoot,
            "the root path is empty",
        ));
    }
    match std::fs::symlink_metadata(root) {
        // A symlinked root is refused like a symlinked capture directory: evidence is never
        // written through a link the wrapper did not make.
        Ok(m) if m.file_type().is_symlink() => Err(Error::config(
            ConfigOption::CaptureRoot,
            format!(
                "{} is a symbolic link (give the directory it points to)",
                root.display()
            ),
        )),
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::config(
            ConfigOption::CaptureRoot,
            format!("{} exists and is not a directory", root.display()),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if containing_dir(root).is_dir() {
                Ok(())
            } else {
                Err(Error::config(
                    ConfigOption::CaptureRoot,
                    format!(
                        "parent directory of {} does not exist (the root is created, its parent is not)",
                        root.display()
                    ),
                ))
            }
        }
        Err(e) => Err(Error::config(
            ConfigOption::CaptureRoot,
            format!("cannot inspect {}: {e}", root.display()),
        )),
    }
}

/// SPEC §6 "policy readable and valid", first half: the path names an existing regular file.
fn policy_metadata(path: &Path) -> Result<std::fs::Metadata> {
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::config(
            ConfigOption::Policy,
            format!("cannot read policy {}: {e}", with_working_dir(path)),
        )
    })?;
    if !meta.is_file() {
        return Err(Error::config(
            ConfigOption::Policy,
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
    // Compiling a policy recurses as deep as the policy nests: on a stack of known size,
    // whatever the caller's (SPEC §3.1b).
    crate::deep_stack::run(|| Policy::load(path))
        .ok_or_else(|| {
            Error::new(
                crate::error::ErrorKind::Internal,
                "the policy was not compiled",
            )
        })?
        .map_err(|e| Error::config(ConfigOption::Policy, e.to_string()))
}
