//! What a host may fail at after `wrap-config` (SPEC §10 "Hosts, per server"): a server command
//! a desktop host cannot find, and one policy with `pins` given to several servers. Said on
//! stderr before anything is written; never a refusal (the user may know better).

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::rewrite::{EntryChange, Rewrite, RewriteAction, entry_label};

/// The `PATH` a desktop host started from the desktop (not from a shell) may give its servers.
pub const HOST_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// One warning about a rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// The server command is a bare name found only on this shell's `PATH`.
    NotOnHostPath {
        /// The entry's label.
        entry: String,
        /// The command as written.
        command: String,
        /// Where this shell's `PATH` finds it.
        found: PathBuf,
    },
    /// The server command is not found at all (or not executable).
    NotFound {
        /// The entry's label.
        entry: String,
        /// The command as written.
        command: String,
    },
    /// The server command is a relative path (hosts start servers in a directory of their own).
    Relative {
        /// The entry's label.
        entry: String,
        /// The command as written.
        command: String,
    },
    /// A policy with `pins` runs several servers.
    SharedPins {
        /// The policy file.
        policy: String,
        /// The labels of the entries that run under it.
        entries: Vec<String>,
    },
}

/// Entry names and commands come from the file as they are: a surface prints them through its
/// text renderer ([`crate::text::render`]; the CLI renders each `assay:` line as a whole).
impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = |s: &str| s.to_string();
        match self {
            Warning::NotOnHostPath {
                entry,
                command,
                found,
            } => write!(
                f,
                "{}: `{}` is found at {} on this shell's PATH but not on {HOST_PATH}, the PATH a \
                 desktop host may start servers with; if the host cannot start it, write {} as \
                 the command",
                e(entry),
                e(command),
                e(&found.display().to_string()),
                e(&found.display().to_string())
            ),
            Warning::NotFound { entry, command } => write!(
                f,
                "{}: `{}` is not found (nor on PATH, nor on {HOST_PATH}) or not executable: the \
                 host will not be able to start this server",
                e(entry),
                e(command)
            ),
            Warning::Relative { entry, command } => write!(
                f,
                "{}: `{}` is a relative path; hosts start servers in a directory of their own: \
                 write an absolute path",
                e(entry),
                e(command)
            ),
            Warning::SharedPins { policy, entries } => write!(
                f,
                "the policy {} pins tools and runs {} servers ({}): a server whose tools are not \
                 in its pins file lists no tools; give each server its own policy with --server NAME",
                e(policy),
                entries.len(),
                entries.iter().map(|x| e(x)).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

/// An executable regular file at `p`.
fn executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where `name` is found on the `:`-separated `path`.
fn find_on(name: &str, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| executable(p))
}

/// What may keep a host from starting `command` (`user_path`: this process's `PATH`).
fn command_warning(entry: &str, command: &str, user_path: Option<&OsStr>) -> Option<Warning> {
    let (entry, cmd) = (entry.to_string(), command.to_string());
    if command.contains('/') {
        if !Path::new(command).is_absolute() {
            return Some(Warning::Relative {
                entry,
                command: cmd,
            });
        }
        return (!executable(Path::new(command))).then_some(Warning::NotFound {
            entry,
            command: cmd,
        });
    }
    if find_on(command, OsStr::new(HOST_PATH)).is_some() {
        return None;
    }
    match user_path.and_then(|p| find_on(command, p)) {
        Some(found) => Some(Warning::NotOnHostPath {
            entry,
            command: cmd,
            found,
        }),
        None => Some(Warning::NotFound {
            entry,
            command: cmd,
        }),
    }
}

/// The warnings for `rewrite` done with `action` (SPEC §10): for each entry that runs through
/// `assay mcp wrap` after a wrap, a server command a host may not find; and a policy with `pins`
/// that several entries run under (those wrapped now and those already wrapped with it).
/// `user_path` is the `PATH` to look a bare command up on besides [`HOST_PATH`].
pub fn warnings(
    rewrite: &Rewrite,
    action: &RewriteAction,
    user_path: Option<&OsStr>,
) -> Vec<Warning> {
    let RewriteAction::Wrap(with) = action else {
        return Vec::new();
    };
    let policy = with.policy.to_string_lossy().into_owned();
    let mut out = Vec::new();
    let mut under_policy = Vec::new();
    for e in &rewrite.entries {
        let label = entry_label(e);
        let wrapped_now = matches!(
            e.change,
            EntryChange::Wrapped | EntryChange::Updated | EntryChange::AlreadyWrapped
        );
        let already_under = e.change == EntryChange::NotSelected
            && e.wrapping
                .as_ref()
                .is_some_and(|w| w.policy.as_deref() == Some(policy.as_str()));
        if wrapped_now || already_under {
            under_policy.push(label.clone());
        }
        if wrapped_now {
            if let Some(command) = e.server.as_ref().and_then(|s| s.first()) {
                out.extend(command_warning(&label, command, user_path));
            }
        }
    }
    let pinned = crate::Policy::load(&with.policy).is_ok_and(|p| p.pins().is_some());
    if pinned && under_policy.len() > 1 {
        out.push(Warning::SharedPins {
            policy,
            entries: under_policy,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_looked_up_as_a_desktop_host_would() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("only-here");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().as_os_str();
        assert_eq!(command_warning("e", "sh", Some(path)), None);
        assert_eq!(command_warning("e", "/bin/sh", None), None);
        assert!(matches!(
            command_warning("e", "only-here", Some(path)),
            Some(Warning::NotOnHostPath { found, .. }) if found == tool
        ));
        assert!(matches!(
            command_warning("e", "mcp-server-ghost", Some(path)),
            Some(Warning::NotFound { .. })
        ));
        assert!(matches!(
            command_warning("e", "/nowhere/server", None),
            Some(Warning::NotFound { .. })
        ));
        assert!(matches!(
            command_warning("e", "./server", None),
            Some(Warning::Relative { .. })
        ));
    }
}
