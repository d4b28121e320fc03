//! The text edits that wrap or unwrap one server entry (SPEC §10 `assay mcp wrap-config`).
//!
//! Only the values of `command` and `args` change (or an `args` member is inserted right after
//! `command` when the entry had none); every other byte of the file stays as it was.
//!
//! A wrapped entry runs `ASSAY mcp wrap --policy P [--capture-root R --event-source E
//! --label=NAME] -- COMMAND ARGS…`, where COMMAND and ARGS are the original values' own text, so
//! unwrapping gives them back byte for byte:
//!
//! - the original `command` value is the element after the first `"--"`;
//! - the original `args` text follows it: `,` and the original elements with their original
//!   spacing, or nothing but the original whitespace of an empty array;
//! - an `args` member that the wrap inserted is written compactly (`["mcp","wrap",…]`), while an
//!   existing one keeps a space after each comma of the prefix (`["mcp", "wrap", …]`), so an
//!   unwrap can tell "had no `args`" from "had `args: []`".

use super::locate::{Entry, Span};

/// One replacement of the text: `span` becomes `with`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Edit {
    pub(super) span: Span,
    pub(super) with: String,
}

/// What the wrapped command line holds before `--`.
pub(super) struct Prefix {
    /// The elements after the assay command, before `"--"`: `mcp`, `wrap`, the options.
    pub(super) elements: Vec<String>,
    /// The absolute path of the `assay` program.
    pub(super) assay: String,
}

/// A JSON string literal.
pub(super) fn quoted(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The JSON array elements of the prefix (up to and including `"--"`), joined by `sep`.
fn prefix_text(prefix: &Prefix, sep: &str) -> String {
    let mut parts: Vec<String> = prefix.elements.iter().map(|e| quoted(e)).collect();
    parts.push(quoted("--"));
    parts.join(sep)
}

/// The edits that wrap a stdio entry (its `command` is a string, its `args` absent or an array
/// of strings: checked by the caller).
pub(super) fn wrap(text: &str, entry: &Entry, prefix: &Prefix) -> Vec<Edit> {
    let Some(command) = entry.command else {
        return Vec::new();
    };
    let original_command = command.span.of(text);
    let mut edits = vec![Edit {
        span: command.span,
        with: quoted(&prefix.assay),
    }];
    match entry.args {
        Some(args) => {
            let array = args.span.of(text);
            // The original elements with their spacing: everything between the brackets.
            let inner = array
                .get(1..array.len().saturating_sub(1))
                .unwrap_or_default();
            let rest = if entry.elements.is_empty() {
                inner.to_string()
            } else {
                format!(",{inner}")
            };
            edits.push(Edit {
                span: args.span,
                with: format!("[{}, {original_command}{rest}]", prefix_text(prefix, ", ")),
            });
        }
        None => edits.push(Edit {
            span: Span {
                start: command.span.end,
                end: command.span.end,
            },
            with: format!(
                ", \"args\": [{},{original_command}]",
                prefix_text(prefix, ",")
            ),
        }),
    }
    edits
}

/// The decoded string of a JSON string literal (`None` for anything else).
fn string_value(literal: &str) -> Option<String> {
    if !literal.starts_with('"') {
        return None;
    }
    serde_json::from_str::<String>(literal).ok()
}

/// Whether `entry` runs `assay mcp wrap`: its command's file name is `assay` and its `args`
/// begin with `mcp`, `wrap`. Such an entry is left as it is by a wrap.
pub(super) fn is_wrapped(text: &str, entry: &Entry) -> bool {
    let Some(command) = entry.command.and_then(|c| string_value(c.span.of(text))) else {
        return false;
    };
    let is_assay = std::path::Path::new(&command)
        .file_name()
        .is_some_and(|n| n == "assay");
    let element = |i: usize| {
        entry
            .elements
            .get(i)
            .and_then(|e| string_value(e.span.of(text)))
    };
    is_assay
        && entry.args.is_some()
        && element(0).as_deref() == Some("mcp")
        && element(1).as_deref() == Some("wrap")
}

/// The index of the first `"--"` element of a wrapped entry's `args`.
fn separator(text: &str, entry: &Entry) -> Option<usize> {
    entry
        .elements
        .iter()
        .position(|e| string_value(e.span.of(text)).as_deref() == Some("--"))
}

/// The decoded strings of `elements`.
fn strings(text: &str, elements: &[super::locate::Value]) -> Vec<String> {
    elements
        .iter()
        .map(|e| string_value(e.span.of(text)).unwrap_or_default())
        .collect()
}

/// A stdio entry's command and arguments, decoded.
pub(super) fn command_line(text: &str, entry: &Entry) -> Option<Vec<String>> {
    let mut line = vec![string_value(entry.command?.span.of(text))?];
    line.extend(strings(text, &entry.elements));
    Some(line)
}

/// A wrapped entry's options (the `args` elements after `mcp wrap`, before `--`) and its server
/// command line (after `--`); `None` without a `--` followed by a command.
pub(super) fn wrapped_parts(text: &str, entry: &Entry) -> Option<(Vec<String>, Vec<String>)> {
    let sep = separator(text, entry)?;
    entry.elements.get(sep + 1)?;
    let all = strings(text, &entry.elements);
    let options = all.get(2..sep).unwrap_or_default().to_vec();
    let server = all.get(sep + 1..).unwrap_or_default().to_vec();
    Some((options, server))
}

/// The options assay writes into a wrapped entry, with a value (`--opt V`) or as `--opt=V`;
/// a rewrap replaces them and keeps every other option.
const OWN_OPTIONS: [&str; 4] = ["--policy", "--capture-root", "--event-source", "--label"];

/// The other `assay mcp wrap` options that write evidence, each with a value: a rewrap with
/// `--no-capture` removes them with [`OWN_OPTIONS`]' evidence ones.
const EVIDENCE_OPTIONS: [&str; 6] = [
    "--decision-log",
    "--session-context-out",
    "--session-stop-out",
    "--coverage-out",
    "--capture-dir",
    "--capture-root",
];

/// The evidence flag without a value.
const EVIDENCE_FLAGS: [&str; 1] = ["--decision-log-new"];

/// Whether `option` is `name` given as `--opt=V`.
fn is_joined(option: &str, name: &str) -> bool {
    option
        .strip_prefix(name)
        .is_some_and(|r| r.starts_with('='))
}

/// Whether a wrapped entry's options write any evidence (a capture root or directory, an
/// evidence file, an event source).
pub(super) fn has_evidence(options: &[String]) -> bool {
    options.iter().any(|o| {
        EVIDENCE_OPTIONS
            .iter()
            .chain(&["--event-source"])
            .any(|e| o == e || is_joined(o, e))
            || EVIDENCE_FLAGS.contains(&o.as_str())
    })
}

/// The edits that make a wrapped entry run `prefix` (SPEC §10: a different `--policy` or
/// `--capture-root` updates the entry in place): an empty list when it already does, `None`
/// when its server command cannot be found (no `"--"` followed by a command). Options of the old
/// entry that assay does not write (`--verbose`, `--idle-drain 5`) are kept after the new ones;
/// with `drop_evidence` (`--no-capture`) the evidence options among them are not.
pub(super) fn rewrap(
    text: &str,
    entry: &Entry,
    prefix: &Prefix,
    drop_evidence: bool,
) -> Option<Vec<Edit>> {
    let command = entry.command?;
    let args = entry.args?;
    let (old, _) = wrapped_parts(text, entry)?;
    let sep = separator(text, entry)?;
    let valued =
        |o: &str| OWN_OPTIONS.contains(&o) || (drop_evidence && EVIDENCE_OPTIONS.contains(&o));
    let joined = |o: &str| {
        OWN_OPTIONS.iter().any(|own| is_joined(o, own))
            || (drop_evidence && EVIDENCE_OPTIONS.iter().any(|e| is_joined(o, e)))
    };
    let mut kept = Vec::new();
    let mut it = old.iter();
    while let Some(o) = it.next() {
        if valued(o) {
            it.next();
        } else if !(joined(o) || drop_evidence && EVIDENCE_FLAGS.contains(&o.as_str())) {
            kept.push(o.clone());
        }
    }
    let mut new: Vec<String> = prefix.elements.clone();
    new.extend(kept);
    let current: Vec<String> = strings(text, entry.elements.get(..sep).unwrap_or_default());
    let mut edits = Vec::new();
    if string_value(command.span.of(text)).as_deref() != Some(prefix.assay.as_str()) {
        edits.push(Edit {
            span: command.span,
            with: quoted(&prefix.assay),
        });
    }
    if new != current {
        // The spacing the array was written with: compact when the wrap inserted it.
        let sep_text = if args.span.of(text).starts_with("[\"mcp\",\"wrap\",") {
            ","
        } else {
            ", "
        };
        let first = entry.elements.first()?;
        let dashes = entry.elements.get(sep)?;
        edits.push(Edit {
            span: Span {
                start: first.span.start,
                end: dashes.span.start,
            },
            with: new.iter().map(|e| quoted(e) + sep_text).collect(),
        });
    }
    Some(edits)
}

/// The edits that unwrap a wrapped entry, or `None` when its server command cannot be found
/// (no `"--"` followed by a command: an entry written by hand without `--`).
pub(super) fn unwrap(text: &str, entry: &Entry) -> Option<Vec<Edit>> {
    let command = entry.command?;
    let args = entry.args?;
    let server = *entry.elements.get(separator(text, entry)? + 1)?;
    let array = args.span.of(text);
    // Everything after the server command up to the closing bracket: the original args' text.
    let after = text
        .get(server.span.end..args.span.end.saturating_sub(1))
        .unwrap_or_default();
    let mut edits = vec![Edit {
        span: command.span,
        with: server.span.of(text).to_string(),
    }];
    let inserted = after.is_empty()
        && array.starts_with("[\"mcp\",\"wrap\",")
        && text.get(command.span.end..args.span.start) == Some(", \"args\": ");
    if inserted {
        edits.push(Edit {
            span: Span {
                start: command.span.end,
                end: args.span.end,
            },
            with: String::new(),
        });
    } else {
        let inner = after.strip_prefix(',').unwrap_or(after);
        edits.push(Edit {
            span: args.span,
            with: format!("[{inner}]"),
        });
    }
    Some(edits)
}

/// `text` with `edits` applied (they do not overlap), and for each edit where its replacement
/// lies in the new text.
pub(super) fn apply(text: &str, edits: &[Edit]) -> (String, Vec<Span>) {
    let mut order: Vec<usize> = (0..edits.len()).collect();
    order.sort_by_key(|&i| (edits[i].span.start, edits[i].span.end));
    let mut out = String::with_capacity(text.len() + 256);
    let mut placed = vec![Span::default(); edits.len()];
    let mut at = 0;
    for i in order {
        let e = &edits[i];
        out.push_str(text.get(at..e.span.start).unwrap_or_default());
        let start = out.len();
        out.push_str(&e.with);
        placed[i] = Span {
            start,
            end: out.len(),
        };
        at = e.span.end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    (out, placed)
}
