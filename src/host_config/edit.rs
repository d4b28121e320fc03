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

/// The edits that unwrap a wrapped entry, or `None` when its server command cannot be found
/// (no `"--"` followed by a command: an entry written by hand without `--`).
pub(super) fn unwrap(text: &str, entry: &Entry) -> Option<Vec<Edit>> {
    let command = entry.command?;
    let args = entry.args?;
    let separator = entry
        .elements
        .iter()
        .position(|e| string_value(e.span.of(text)).as_deref() == Some("--"))?;
    let server = *entry.elements.get(separator + 1)?;
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
