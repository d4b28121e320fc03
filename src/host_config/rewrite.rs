//! The rewrite of a host configuration's text (SPEC §10): which entries are stdio servers, what
//! a wrapped entry runs, and the report of what happened to each entry.

use std::path::PathBuf;

use super::edit::{self, Edit, Prefix};
use super::error::HostConfigError;
use super::locate::{self, Entry, SECTIONS, Span};

/// What to do with the stdio entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewriteAction {
    /// Wrap every stdio entry that is not wrapped yet.
    Wrap(WrapWith),
    /// Give every wrapped entry back its original command and arguments.
    Unwrap,
}

/// What a wrapped entry runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrapWith {
    /// The absolute path of the `assay` program the entry runs.
    pub assay: PathBuf,
    /// The policy file (written as given: make it absolute, hosts start servers in any directory).
    pub policy: PathBuf,
    /// What happens to the entry's evidence options.
    pub capture: Capture,
}

/// What a wrap does with an entry's evidence options (issue 41: re-wrapping never turns
/// evidence off unless asked to).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capture {
    /// Keep what an already wrapped entry has (`--capture-root`, `--event-source`, `--label` and
    /// any other evidence option); a newly wrapped entry gets none.
    Keep,
    /// This capture root: each entry gets `--capture-root ROOT` and, unless it already has its
    /// own, `--event-source assay://host-config/<name>` and `--label=<name>` (its entry name), so
    /// its captures say which server they are.
    Root(PathBuf),
    /// No evidence output (`--no-capture`): every evidence option of a wrapped entry is removed
    /// (its report says so, [`EntryReport::evidence_removed`]).
    Off,
}

impl WrapWith {
    /// Checks what a wrapped entry will need at every launch, before any file is touched: the
    /// paths are absolute (hosts start servers in any directory), the policy loads, and the
    /// capture root is usable as `assay mcp wrap --capture-root` requires (SPEC §10).
    ///
    /// # Errors
    /// [`crate::ErrorKind::Config`] naming the option.
    pub fn check(&self) -> crate::Result<()> {
        let root = match &self.capture {
            Capture::Root(root) => Some(root),
            Capture::Keep | Capture::Off => None,
        };
        for (option, path) in [
            (crate::ConfigOption::Policy, Some(&self.policy)),
            (crate::ConfigOption::CaptureRoot, root),
        ] {
            if let Some(p) = path {
                if !p.is_absolute() {
                    return Err(crate::Error::config(
                        option,
                        format!("{} is not an absolute path", p.display()),
                    ));
                }
            }
        }
        crate::Policy::load(&self.policy)
            .map_err(|e| crate::Error::config(crate::ConfigOption::Policy, e.to_string()))?;
        if let Some(root) = root {
            crate::config::check_root(root)?;
        }
        Ok(())
    }
}

/// What happened to one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryChange {
    /// Rewritten to run through `assay mcp wrap`.
    Wrapped,
    /// Already ran through `assay mcp wrap` with this policy and capture root: left as it is.
    AlreadyWrapped,
    /// Ran through `assay mcp wrap` with another policy, capture root or `assay`: its wrapping
    /// options were replaced in place (options assay does not write are kept).
    Updated,
    /// Given back its original command and arguments.
    Unwrapped,
    /// Not wrapped, nothing to unwrap: left as it is.
    NotWrapped,
    /// Runs `assay mcp wrap` without a `--` before the server command: left as it is (the
    /// server command cannot be told from the options).
    NoSeparator,
    /// A remote server (`url`, or a `type` other than `stdio`, without a `command`): left as it is.
    Remote,
    /// No `command` and no `url`: left as it is.
    NoCommand,
    /// Not named by `--server`: left as it is.
    NotSelected,
}

impl EntryChange {
    /// A short description, e.g. `wrapped`, `left alone (remote)`.
    pub fn describe(self) -> &'static str {
        match self {
            EntryChange::Wrapped => "wrapped",
            EntryChange::AlreadyWrapped => "left alone (already wrapped)",
            EntryChange::Updated => "updated in place (new policy, capture root or assay path)",
            EntryChange::Unwrapped => "unwrapped",
            EntryChange::NotWrapped => "left alone (not wrapped)",
            EntryChange::NoSeparator => {
                "left alone (runs assay mcp wrap without `--` before the server command)"
            }
            EntryChange::Remote => "left alone (remote server)",
            EntryChange::NoCommand => "left alone (no command)",
            EntryChange::NotSelected => "left alone (not named by --server)",
        }
    }
}

/// How an entry ran through `assay mcp wrap` before the rewrite.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Wrapping {
    /// The value of its `--policy` option (`assay.yaml` in the server's directory when absent).
    pub policy: Option<String>,
    /// The value of its `--capture-root` option.
    pub capture_root: Option<String>,
}

/// One entry of the file and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryReport {
    /// `mcpServers` or `servers`.
    pub section: &'static str,
    /// For an entry of a Claude Code project (`projects.<project>.mcpServers`): the project.
    pub project: Option<String>,
    /// The entry's name.
    pub name: String,
    /// For a stdio entry: the server command as it ran before the rewrite (for a wrapped
    /// entry, the command after `--`), then its arguments.
    pub server: Option<Vec<String>>,
    /// For an entry that ran through `assay mcp wrap` before the rewrite: its options.
    pub wrapping: Option<Wrapping>,
    /// What happened.
    pub change: EntryChange,
    /// The rewrite removed the entry's evidence output ([`Capture::Off`] on an entry that had
    /// some): its sessions leave no capture from now on.
    pub evidence_removed: bool,
    /// For a changed entry: the lines of the original text its edits touched.
    pub before: String,
    /// For a changed entry: the same lines in the new text.
    pub after: String,
}

/// The result of a rewrite: the new text and a report per entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// The file's new text (equal to the old one when nothing changed).
    pub text: String,
    /// Every entry of every section, in file order.
    pub entries: Vec<EntryReport>,
}

impl Rewrite {
    /// Whether any entry changed.
    pub fn changed(&self) -> bool {
        self.entries.iter().any(|e| {
            matches!(
                e.change,
                EntryChange::Wrapped | EntryChange::Updated | EntryChange::Unwrapped
            )
        })
    }
}

/// Percent-encodes `s` for a URI path segment (unreserved characters kept).
fn segment(s: &str) -> String {
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

/// The options before `--` of an entry wrapped with `w`; `old` are the options it ran with
/// before (empty for an entry not wrapped yet). Every evidence option the action does not change
/// is kept from `old` ([`Capture`]).
fn prefix_for(w: &WrapWith, name: &str, old: &[String]) -> Prefix {
    let mut elements = vec![
        "mcp".to_string(),
        "wrap".to_string(),
        "--policy".to_string(),
        w.policy.to_string_lossy().into_owned(),
    ];
    let root = match &w.capture {
        Capture::Root(root) => Some(root.to_string_lossy().into_owned()),
        Capture::Keep => option_value(old, "--capture-root"),
        Capture::Off => None,
    };
    if w.capture != Capture::Off {
        if let Some(root) = &root {
            elements.push("--capture-root".to_string());
            elements.push(root.clone());
        }
        let event_source = option_value(old, "--event-source").or_else(|| {
            root.as_ref()
                .map(|_| format!("assay://host-config/{}", segment(name)))
        });
        if let Some(source) = event_source {
            elements.push("--event-source".to_string());
            elements.push(source);
        }
        // `=`: an entry name may begin with `-`. A name `--label` cannot take (empty, or with a
        // control character) gets none: the server then runs with the default label instead of
        // failing at every launch.
        let label = option_value(old, "--label").or_else(|| {
            (root.is_some() && !name.is_empty() && !name.chars().any(char::is_control))
                .then(|| name.to_string())
        });
        if let Some(label) = label {
            elements.push(format!("--label={label}"));
        }
    }
    Prefix {
        elements,
        assay: w.assay.to_string_lossy().into_owned(),
    }
}

/// What kind of entry this is; an entry this rewrite cannot handle faithfully is an error.
fn classify(text: &str, section: &str, e: &Entry) -> Result<Kind, HostConfigError> {
    let what = format!("`{section}.{}`", e.name.escape_debug());
    let shape = |msg: String| Err(HostConfigError::Shape(msg));
    if e.value.is_none_or(|v| v.first != b'{') {
        return shape(format!("{what} is not an object"));
    }
    if let Some((key, name)) = &e.variant {
        return shape(format!(
            "{what} has a key `{}` that some hosts read as `{name}`; spell it `{name}`",
            key.escape_debug()
        ));
    }
    let Some(command) = e.command else {
        let remote = e.url.is_some()
            || e.r#type
                .is_some_and(|t| t.span.of(text).trim_matches('"') != "stdio");
        return Ok(if remote {
            Kind::Remote
        } else {
            Kind::NoCommand
        });
    };
    if command.first != b'"' {
        return shape(format!("{what}: `command` is not a string"));
    }
    if let Some(t) = e.r#type {
        if t.span.of(text) != "\"stdio\"" {
            return shape(format!(
                "{what} has a `command` and `type` {}: only a stdio entry can be wrapped",
                t.span.of(text).escape_debug()
            ));
        }
    }
    if e.url.is_some() {
        return shape(format!(
            "{what} has both a `command` and a `url`: hosts disagree on which one runs"
        ));
    }
    if let Some(args) = e.args {
        if args.first != b'[' || e.elements.iter().any(|x| x.first != b'"') {
            return shape(format!("{what}: `args` is not an array of strings"));
        }
    }
    Ok(Kind::Stdio)
}

#[derive(Clone, Copy)]
enum Kind {
    Stdio,
    Remote,
    NoCommand,
}

/// The whole lines of `text` that `span` touches.
fn lines_around(text: &str, span: Span) -> String {
    let start = text
        .get(..span.start)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1);
    let end = text
        .get(span.end..)
        .and_then(|t| t.find('\n'))
        .map_or(text.len(), |i| span.end + i);
    text.get(start..end).unwrap_or_default().to_string()
}

/// Rewrites the host configuration `bytes` (SPEC §10): every stdio entry of `mcpServers` and
/// `servers` (and of Claude Code's `projects.*.mcpServers`) wrapped or unwrapped; nothing else
/// changes. Same as [`rewrite_selected`] with every entry selected.
///
/// # Errors
/// As [`rewrite_selected`].
pub fn rewrite(bytes: &[u8], action: &RewriteAction) -> Result<Rewrite, HostConfigError> {
    rewrite_selected(bytes, action, &[])
}

/// Rewrites the entries of the host configuration `bytes` named in `servers` (every entry when
/// `servers` is empty; a name selects every entry of that name, a label such as
/// `mcpServers.files` only that one). An entry wrapped with other options is updated in place.
///
/// # Errors
/// [`HostConfigError::Syntax`] for anything but strict UTF-8 JSON (a duplicate key, a comment, a
/// trailing comma included), [`HostConfigError::Shape`] for a file without a `mcpServers` or
/// `servers` object, or an entry that cannot be rewritten faithfully (a `command` that is not a
/// string, `args` that are not strings, a case variant of a member name, a `command` beside a
/// `url`), [`HostConfigError::UnknownServer`] for a name in `servers` no entry has.
pub fn rewrite_selected(
    bytes: &[u8],
    action: &RewriteAction,
    servers: &[String],
) -> Result<Rewrite, HostConfigError> {
    let (text, found) = locate::locate(bytes)?;
    check_shape(&found)?;
    check_selection(&found, servers)?;
    let mut edits: Vec<Edit> = Vec::new();
    // Per entry: its report and the indexes of its edits.
    let mut reports: Vec<(EntryReport, Vec<usize>)> = Vec::new();
    for section in &found.sections {
        if section.value.is_none_or(|v| v.first != b'{') {
            return Err(HostConfigError::Shape(format!(
                "`{}` is not an object",
                label(section.name, section.project.as_deref(), "").trim_end_matches('.')
            )));
        }
        for entry in &section.entries {
            let kind = classify(text, section.name, entry)?;
            let wrapped = matches!(kind, Kind::Stdio) && edit::is_wrapped(text, entry);
            let selected = is_selected(section, &entry.name, servers);
            let (change, new_edits, evidence_removed) =
                change_entry(text, entry, kind, wrapped, selected, action);
            let (server, wrapping) = server_and_wrapping(text, entry, kind, wrapped);
            let first = edits.len();
            edits.extend(new_edits);
            reports.push((
                EntryReport {
                    section: section.name,
                    project: section.project.clone(),
                    name: entry.name.clone(),
                    server,
                    wrapping,
                    change,
                    evidence_removed: evidence_removed && matches!(change, EntryChange::Updated),
                    before: String::new(),
                    after: String::new(),
                },
                (first..edits.len()).collect(),
            ));
        }
    }
    let (new_text, placed) = edit::apply(text, &edits);
    let entries = reports
        .into_iter()
        .map(|(mut report, idx)| {
            let covering = |spans: &mut dyn Iterator<Item = Span>| {
                spans.reduce(|a, b| Span {
                    start: a.start.min(b.start),
                    end: a.end.max(b.end),
                })
            };
            if let Some(old) = covering(&mut idx.iter().map(|&i| edits[i].span)) {
                report.before = lines_around(text, old);
            }
            if let Some(new) = covering(&mut idx.iter().map(|&i| placed[i])) {
                report.after = lines_around(&new_text, new);
            }
            report
        })
        .collect();
    Ok(Rewrite {
        text: new_text,
        entries,
    })
}

/// The file is a JSON object with a `mcpServers` or `servers` section spelled exactly.
fn check_shape(found: &locate::Located) -> Result<(), HostConfigError> {
    if !found.top_is_object {
        return Err(HostConfigError::Shape(
            "the file is not a JSON object".to_string(),
        ));
    }
    if let Some((key, name)) = &found.variant {
        return Err(HostConfigError::Shape(format!(
            "top-level key `{}` is read as `{name}` by some hosts; spell it `{name}`",
            key.escape_debug()
        )));
    }
    if found.sections.is_empty() {
        return Err(HostConfigError::Shape(format!(
            "no top-level `{}` or `{}` object (only those are rewritten)",
            SECTIONS[0], SECTIONS[1]
        )));
    }
    Ok(())
}

/// Every name or label in `servers` selects some entry.
fn check_selection(found: &locate::Located, servers: &[String]) -> Result<(), HostConfigError> {
    let unknown: Vec<String> = servers
        .iter()
        .filter(|s| {
            !found.sections.iter().any(|section| {
                section.entries.iter().any(|e| {
                    **s == e.name || **s == label(section.name, section.project.as_deref(), &e.name)
                })
            })
        })
        .cloned()
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let known: Vec<String> = found
        .sections
        .iter()
        .flat_map(|section| {
            section
                .entries
                .iter()
                .map(|e| label(section.name, section.project.as_deref(), &e.name))
        })
        .collect();
    Err(HostConfigError::UnknownServer { unknown, known })
}

/// Whether `servers` selects the entry `name` of `section` (every entry when it is empty).
fn is_selected(section: &locate::Section, name: &str, servers: &[String]) -> bool {
    servers.is_empty()
        || servers
            .iter()
            .any(|s| s == name || *s == label(section.name, section.project.as_deref(), name))
}

/// What `action` does to one entry: its change, its edits, and whether a wrap with
/// [`Capture::Off`] found evidence options to remove.
fn change_entry(
    text: &str,
    entry: &Entry,
    kind: Kind,
    wrapped: bool,
    selected: bool,
    action: &RewriteAction,
) -> (EntryChange, Vec<Edit>, bool) {
    let mut evidence_removed = false;
    let (change, edits) = match (kind, action) {
        (Kind::Remote, _) => (EntryChange::Remote, Vec::new()),
        (Kind::NoCommand, _) => (EntryChange::NoCommand, Vec::new()),
        (Kind::Stdio, _) if !selected => (EntryChange::NotSelected, Vec::new()),
        (Kind::Stdio, RewriteAction::Wrap(w)) => {
            let old = if wrapped {
                edit::wrapped_parts(text, entry).map_or_else(Vec::new, |(o, _)| o)
            } else {
                Vec::new()
            };
            let prefix = prefix_for(w, &entry.name, &old);
            let drop_evidence = w.capture == Capture::Off;
            evidence_removed = drop_evidence && edit::has_evidence(&old);
            if !wrapped {
                (EntryChange::Wrapped, edit::wrap(text, entry, &prefix))
            } else {
                match edit::rewrap(text, entry, &prefix, drop_evidence) {
                    None => (EntryChange::NoSeparator, Vec::new()),
                    Some(e) if e.is_empty() => (EntryChange::AlreadyWrapped, e),
                    Some(e) => (EntryChange::Updated, e),
                }
            }
        }
        (Kind::Stdio, RewriteAction::Unwrap) => {
            if !wrapped {
                (EntryChange::NotWrapped, Vec::new())
            } else {
                match edit::unwrap(text, entry) {
                    Some(e) => (EntryChange::Unwrapped, e),
                    None => (EntryChange::NoSeparator, Vec::new()),
                }
            }
        }
    };
    (change, edits, evidence_removed)
}

/// What the entry runs as its server, and how it is wrapped (a stdio entry only).
fn server_and_wrapping(
    text: &str,
    entry: &Entry,
    kind: Kind,
    wrapped: bool,
) -> (Option<Vec<String>>, Option<Wrapping>) {
    match kind {
        Kind::Stdio if wrapped => match edit::wrapped_parts(text, entry) {
            Some((options, server)) => (Some(server), Some(wrapping_of(&options))),
            None => (None, Some(Wrapping::default())),
        },
        Kind::Stdio => (edit::command_line(text, entry), None),
        _ => (None, None),
    }
}

/// The `--policy` and `--capture-root` values among a wrapped entry's options (`--opt V` or
/// `--opt=V`).
fn wrapping_of(options: &[String]) -> Wrapping {
    Wrapping {
        policy: option_value(options, "--policy"),
        capture_root: option_value(options, "--capture-root"),
    }
}

/// The value of option `name` among a wrapped entry's options (`--opt V` or `--opt=V`; the last
/// one, as the command line reads them).
fn option_value(options: &[String], name: &str) -> Option<String> {
    let eq = format!("{name}=");
    let mut found = None;
    let mut it = options.iter();
    while let Some(o) = it.next() {
        if o == name {
            found = it.next().cloned();
        } else if let Some(v) = o.strip_prefix(&eq) {
            found = Some(v.to_string());
        }
    }
    found
}

/// Every entry of the host configuration `bytes` as it is: for each, whether it runs through
/// `assay mcp wrap` (and with which options) and the server command. Nothing is changed.
///
/// # Errors
/// As [`rewrite`].
pub fn inspect(bytes: &[u8]) -> Result<Vec<EntryReport>, HostConfigError> {
    Ok(rewrite(bytes, &RewriteAction::Unwrap)?.entries)
}

/// An entry's label: `mcpServers.NAME`, or `projects.PROJECT.mcpServers.NAME`.
fn label(section: &str, project: Option<&str>, name: &str) -> String {
    match project {
        Some(p) => format!("projects.{p}.{section}.{name}"),
        None => format!("{section}.{name}"),
    }
}

/// The section and entry name of a report, as `mcpServers.files`.
pub fn entry_label(report: &EntryReport) -> String {
    label(report.section, report.project.as_deref(), &report.name)
}
