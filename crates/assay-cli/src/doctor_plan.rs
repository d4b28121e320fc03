//! `assay mcp doctor`: how one entry is started — as its host starts it (the entry's command,
//! arguments, `env` and `cwd`, on the environment the MCP SDKs give a server), with two changes
//! of the doctor's own: a marker in the environment (to find every process the entry left
//! behind) and, for a wrapped entry, the doctor's own capture root in place of the entry's
//! evidence options (so the user's evidence never receives a doctor session; docs/decisions.md).

use std::path::{Path, PathBuf};

use assay::host_config::{EntryReport, Launch, entry_label};

use super::args::WrapArgs;

/// The variable that marks every process of one entry's run.
pub(crate) const MARK: &str = "ASSAY_DOCTOR_MARK";

/// What the MCP SDK clients (TypeScript `getDefaultEnvironment`, Python
/// `get_default_environment`) pass on to a server from the host's own environment on POSIX.
const SDK_INHERITED: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The evidence options of `assay mcp wrap` the doctor replaces with its own capture root.
const EVIDENCE_OPTIONS: [&str; 7] = [
    "capture-root",
    "capture-dir",
    "decision-log",
    "decision-log-new",
    "session-context-out",
    "session-stop-out",
    "coverage-out",
];

/// One entry, ready to start.
pub(crate) struct Plan {
    /// `mcpServers.NAME` (the file's text, unrendered).
    pub label: String,
    /// The entry's name.
    pub name: String,
    /// The program and its arguments as started.
    pub argv: Vec<String>,
    /// The whole environment of the started process, the marker included.
    pub env: Vec<(String, String)>,
    /// The working directory.
    pub cwd: PathBuf,
    /// The marker's value.
    pub mark: String,
    /// For an entry that runs through `assay mcp wrap`.
    pub wrap: Option<WrapPlan>,
    /// What makes the entry fail as written (reasons).
    pub problems: Vec<String>,
    /// What the person should know that does not make the entry fail.
    pub notes: Vec<String>,
}

/// A wrapped entry: its policy and where the doctor's session lands.
pub(crate) struct WrapPlan {
    /// The `--policy` value as written (`assay.yaml` when absent).
    pub policy_written: String,
    /// The policy, loaded from the entry's working directory as the wrapper loads it.
    pub policy: Result<assay::Policy, String>,
    /// The doctor's capture root for this entry.
    pub capture_root: PathBuf,
    /// The entry's own evidence options, left out of the doctor's run.
    pub replaced: Vec<String>,
}

/// How a host runs `report` (a stdio entry, `launch`), under the doctor's capture root
/// `capture_root` (for a wrapped entry) and with the marker value `mark`.
pub(crate) fn plan(report: &EntryReport, launch: &Launch, capture_root: &Path, mark: &str) -> Plan {
    let cwd = match (&launch.cwd, &report.project) {
        (Some(cwd), _) => Path::new("/").join(cwd),
        // Claude Code starts a project's servers in the project's directory.
        (None, Some(project)) => Path::new("/").join(project),
        (None, None) => PathBuf::from("/"),
    };
    let mut env: Vec<(String, String)> = SDK_INHERITED
        .iter()
        .filter_map(|k| {
            let v = std::env::var(k).ok()?;
            // As the TypeScript SDK: a shell function exported as a variable is not passed on.
            (!v.starts_with("()")).then(|| ((*k).to_string(), v))
        })
        .collect();
    for (k, v) in &launch.env {
        env.retain(|(have, _)| have != k);
        env.push((k.clone(), v.clone()));
    }
    env.retain(|(k, _)| k != MARK);
    env.push((MARK.to_string(), mark.to_string()));
    let mut notes = Vec::new();
    let all = std::iter::once(&launch.command).chain(&launch.args);
    if all.clone().any(|a| a.contains("${")) {
        notes.push(
            "a `${…}` variable in the command or arguments is passed as written (VS Code expands \
             it, the doctor does not)"
                .to_string(),
        );
    }
    let mut argv = vec![launch.command.clone()];
    let wrap = report.wrapping.as_ref().map(|_| {
        let (args, wrap) = rewrap(&launch.args, &report.name, &cwd, capture_root, &mut notes);
        argv.extend(args);
        wrap
    });
    if wrap.is_none() {
        argv.extend(launch.args.iter().cloned());
    }
    Plan {
        label: entry_label(report),
        name: report.name.clone(),
        argv,
        env,
        cwd,
        mark: mark.to_string(),
        wrap,
        problems: launch.problems.clone(),
        notes,
    }
}

/// `assay mcp wrap`'s long options and whether each takes a value (from the definitions the
/// wrapper parses with).
fn wrap_options() -> Vec<(String, bool)> {
    use clap::Args as _;
    WrapArgs::augment_args(clap::Command::new("wrap"))
        .get_arguments()
        .filter_map(|a| {
            let takes = a.get_action().takes_values();
            a.get_long().map(|l| (l.to_string(), takes))
        })
        .collect()
}

/// A wrapped entry's arguments (`mcp wrap OPTIONS… [--] SERVER…`) with its evidence options
/// replaced by `--capture-root ROOT` (and an `--event-source` when it has none).
fn rewrap(
    args: &[String],
    name: &str,
    cwd: &Path,
    capture_root: &Path,
    notes: &mut Vec<String>,
) -> (Vec<String>, WrapPlan) {
    let table = wrap_options();
    let mut out: Vec<String> = args.iter().take(2).cloned().collect();
    let mut replaced = Vec::new();
    let mut policy = None;
    let mut event_source = false;
    let mut i = 2;
    while let Some(token) = args.get(i) {
        let Some(option) = token.strip_prefix("--").filter(|o| !o.is_empty()) else {
            break; // `--`, or the server command's first word
        };
        let (long, inline) = match option.split_once('=') {
            Some((l, v)) => (l, Some(v)),
            None => (option, None),
        };
        let takes = table
            .iter()
            .find(|(l, _)| l == long)
            .is_some_and(|(_, t)| *t);
        let used = if takes && inline.is_none() { 2 } else { 1 };
        let tokens: Vec<String> = args.iter().skip(i).take(used).cloned().collect();
        let value = inline
            .map(str::to_string)
            .or_else(|| tokens.get(1).cloned());
        match long {
            "policy" => policy = value,
            "event-source" => event_source = true,
            "dry-run" => notes.push(
                "the entry runs in dry run: refused calls are logged, not refused".to_string(),
            ),
            _ => {}
        }
        if EVIDENCE_OPTIONS.contains(&long) {
            replaced.push(tokens.join(" "));
        } else {
            out.extend(tokens);
        }
        i += used;
    }
    if replaced.is_empty() {
        notes.push(
            "the entry writes no evidence (no --capture-root or --capture-dir): its sessions \
             leave nothing to check"
                .to_string(),
        );
    }
    out.push("--capture-root".into());
    out.push(capture_root.display().to_string());
    if !event_source {
        out.push("--event-source".into());
        out.push(format!("assay://doctor/{}", segment(name)));
    }
    out.extend(args.iter().skip(i).cloned());
    let policy_written = policy.unwrap_or_else(|| "assay.yaml".to_string());
    let path = cwd.join(&policy_written);
    let loaded = assay::Policy::load(&path).map_err(|e| e.to_string());
    (
        out,
        WrapPlan {
            policy_written,
            policy: loaded,
            capture_root: capture_root.to_path_buf(),
            replaced,
        },
    )
}

/// `s` with every byte but `[A-Za-z0-9._~-]` percent-encoded (a URI path segment).
pub(crate) fn segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn evidence_options_are_replaced_and_everything_else_kept() {
        let mut notes = Vec::new();
        let (args, wrap) = rewrap(
            &strings(&[
                "mcp",
                "wrap",
                "--policy",
                "/p.yaml",
                "--capture-root",
                "/home/me/captures",
                "--label=files",
                "--decision-log=/log",
                "--verbose",
                "--",
                "node",
                "--capture-root",
                "x",
            ]),
            "files",
            Path::new("/"),
            Path::new("/tmp/d/1"),
            &mut notes,
        );
        assert_eq!(
            args,
            strings(&[
                "mcp",
                "wrap",
                "--policy",
                "/p.yaml",
                "--label=files",
                "--verbose",
                "--capture-root",
                "/tmp/d/1",
                "--event-source",
                "assay://doctor/files",
                "--",
                "node",
                "--capture-root",
                "x",
            ])
        );
        assert_eq!(wrap.policy_written, "/p.yaml");
        assert_eq!(
            wrap.replaced,
            strings(&["--capture-root /home/me/captures", "--decision-log=/log"])
        );
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn a_server_without_separator_starts_at_the_first_word() {
        let mut notes = Vec::new();
        let (args, wrap) = rewrap(
            &strings(&[
                "mcp",
                "wrap",
                "--event-source",
                "assay://x",
                "python3",
                "s.py",
            ]),
            "n m",
            Path::new("/"),
            Path::new("/r"),
            &mut notes,
        );
        assert_eq!(
            args,
            strings(&[
                "mcp",
                "wrap",
                "--event-source",
                "assay://x",
                "--capture-root",
                "/r",
                "python3",
                "s.py"
            ])
        );
        assert_eq!(wrap.policy_written, "assay.yaml");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(segment("n m/é"), "n%20m%2F%C3%A9");
    }
}
