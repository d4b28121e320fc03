//! Answers to the client's `resources/list`, `resources/templates/list` and `prompts/list`
//! requests, filtered like `tools/list` answers when `hide_refused_tools` is on and the policy
//! governs the section (SPEC §5.2): an entry the policy refuses whatever else it carries (a
//! resource by its `uri`, a template by its `uriTemplate`, a prompt by its `name`) is removed,
//! and every judged result gets an `assay.tool.listing` event naming what was shown and removed.
//!
//! The reading fails closed as for `tools/list` (SPEC §5): the line is read with the strict
//! client-line rules; a result whose list is not an array of objects each holding its key as a
//! string, or that spells a member as a lenient variant (`URI`, `Resources`), is replaced by the
//! `-32603` error for the client's id; a batch holding such an answer is replaced by errors for
//! the requests it answered. So is a result listing more than [`MAX_LISTED_ENTRIES`] entries
//! (a listing event names every entry with its digest), or one that would take the line's
//! listings past [`MAX_LISTED_PER_LINE`].
//!
//! Memory stays bounded by the line (SPEC §3 item 6): after the strict scan, the line is read in
//! borrowed pieces ([`read`]: the envelope's members, the list and each entry are `RawValue`s
//! pointing into it), each entry is judged from its own text (its key, its RFC 8785 digest) and
//! forgotten, and only the byte spans of the kept entries are remembered. A result that loses
//! nothing is forwarded byte-exact; one that loses entries is the server's line copied with its
//! list array written anew — the kept entries byte-exact, joined by `,` — and every byte outside
//! that array as the server wrote it. A batch is judged element by element the same way.

mod read;

use serde_json::Value;

use super::answers::LineAnswers;
use super::message::{self, ClientLine};
use super::pending::RequestKind;
use super::tools_list::{Listing, withheld_error};
use crate::methods::{EntryKey, Governor, List, Method};
use crate::policy::{Policy, ReasonCode};
use crate::sha256::HexDigest;

/// Which list a request asks for: the row of its method in the table, which says where the
/// answer holds the list and how an entry is named.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ListKind {
    row: &'static Method,
    list: List,
}

impl PartialEq for ListKind {
    fn eq(&self, other: &Self) -> bool {
        self.row.is(other.row)
    }
}

impl ListKind {
    /// The kind of an answer, if it answers one of these lists.
    pub(crate) fn of(kind: RequestKind) -> Option<ListKind> {
        let row = kind.other_list()?;
        Some(ListKind {
            row,
            list: row.list?,
        })
    }

    /// The method of the request.
    pub(crate) fn method(self) -> &'static str {
        self.row.name
    }

    /// What an entry is called in messages.
    pub(crate) fn noun(self) -> &'static str {
        self.list.noun
    }

    /// The result member holding the list.
    fn member(self) -> &'static str {
        self.list.member
    }

    /// The entry member the policy judges.
    fn key(self) -> &'static str {
        self.list.key.as_str()
    }

    /// Whether the policy refuses an entry with this key whatever else it carries.
    fn refuses(self, policy: &Policy, key: &str) -> Option<ReasonCode> {
        match self.list.key {
            EntryKey::Uri => policy.refuses_resource(key),
            EntryKey::UriTemplate => policy.refuses_resource_template(key),
            EntryKey::Name => policy.refuses_prompt(key),
        }
    }

    /// Whether the policy governs this list (its section is present).
    fn governed(self, policy: &Policy) -> bool {
        let section = match self.row.governor {
            Governor::ResourcesListing => "resources",
            Governor::PromptsListing => "prompts",
            _ => return false,
        };
        policy.governed().contains(&section)
    }
}

/// Entries one listing may name (SPEC §4.1a: each listing event records every entry shown and
/// removed, with its digest): an answer with more is replaced by the `-32603` error. The bound of
/// `tools/list` listings.
pub(crate) const MAX_LISTED_ENTRIES: usize = super::tools_list::MAX_LISTED_TOOLS;

/// Entries the listings of one line may name together (a batch answering many list requests):
/// an answer that would pass it is replaced by the `-32603` error, so what a line records stays
/// a few megabytes whatever it holds (SPEC §3 item 6).
pub(crate) const MAX_LISTED_PER_LINE: usize = 8 * MAX_LISTED_ENTRIES;

/// What to write instead of a server line, and the listings it showed.
pub(crate) struct Filtered {
    /// `None`: forward the line unchanged.
    pub line: Option<Vec<u8>>,
    pub listings: Vec<(ListKind, Listing)>,
    /// `line` is the server's line with its list answers judged (one line, `\n` terminated):
    /// its other answers — a `tools/list` answer among them — still go through their own
    /// judgement. `false`: `line` holds only the errors that replace the answers.
    pub edited: bool,
}

/// The lists a line answers that this policy filters.
fn filtered_answers(policy: &Policy, answered: &LineAnswers) -> Vec<(ListKind, Box<str>)> {
    answered
        .kept(|kind| ListKind::of(kind).filter(|k| k.governed(policy)))
        .map(|(k, spelling)| (k, spelling.into()))
        .collect()
}

/// Judges a line the answer gate let through (hiding in effect). `None`: nothing to judge.
pub(crate) fn judge(policy: &Policy, line: &[u8], answered: &LineAnswers) -> Option<Filtered> {
    let wanted = filtered_answers(policy, answered);
    if wanted.is_empty() {
        return None;
    }
    // The strict client-line scan (duplicate keys after lenient normalization, lone
    // surrogates, depth) runs first: the borrowed reading below relies on it.
    let (kind, spelling) = match (
        &wanted[..],
        message::classify(line, message::Judged::default()),
    ) {
        ([one], ClientLine::Single(_)) => (one.0, one.1.clone()),
        (_, ClientLine::Batch(text)) => {
            return judge_batch(policy, text, answered)
                .or_else(|| replaced(&wanted, "it cannot be read as a batch of responses"));
        }
        _ => return replaced(&wanted, "it cannot be read as a list result"),
    };
    let Ok(text) = std::str::from_utf8(line) else {
        return replaced(&wanted, "it cannot be read as a list result");
    };
    let mut budget = MAX_LISTED_PER_LINE;
    match judge_result(policy, kind, text, &mut budget) {
        Ok(judged) => {
            let listing = Listing {
                request_id: spelling,
                shown: judged.shown,
                removed: judged.removed,
                replaced_by_error: false,
            };
            edited(
                text,
                judged.edit.into_iter().collect(),
                vec![(kind, listing)],
            )
        }
        Err(why) => replaced(&wanted, &why.text(kind)),
    }
}

/// The errors that replace every answer in `wanted`, for a line that cannot be judged.
fn replaced(wanted: &[(ListKind, Box<str>)], why: &str) -> Option<Filtered> {
    let mut out = Vec::new();
    let mut listings = Vec::new();
    for (kind, spelling) in wanted {
        out.extend_from_slice(&withheld_error(
            Some(spelling),
            &format!("server answer withheld: {why}"),
        ));
        out.push(b'\n');
        listings.push((*kind, withheld_listing(spelling)));
    }
    Some(Filtered {
        line: Some(out),
        listings,
        edited: false,
    })
}

/// The listing of an answer replaced by the `-32603` error.
fn withheld_listing(spelling: &str) -> Listing {
    Listing {
        request_id: spelling.into(),
        shown: Vec::new(),
        removed: Vec::new(),
        replaced_by_error: true,
    }
}

/// A batch answering list requests (SPEC §5.2, issue 46 item 6): element by element. Each
/// response that answers a governed list request is judged as it would be on its own line —
/// filtered, or replaced by the `-32603` error for its id when it cannot be read as that list's
/// result — and every other element is left as it is. `None` when the line cannot be read as a
/// batch at all (then every answer it holds is replaced, as for any unreadable line).
fn judge_batch(policy: &Policy, text: &str, answered: &LineAnswers) -> Option<Filtered> {
    let by_id = answered.by_id_value();
    let mut listings = Vec::new();
    let mut edits = Vec::new();
    let mut budget = MAX_LISTED_PER_LINE;
    let walked = read::elements(text, |element| {
        let element = element.get();
        // Not an object, a request or notification, or no `result`: not a list answer.
        let Some(envelope) = read::members(element, ["method", "result", "id"], &[]) else {
            return true;
        };
        let [None, Some(_), Some(id)] = envelope.values else {
            return true;
        };
        let Some((kind, spelling)) = serde_json::from_str::<Value>(id.get())
            .ok()
            .and_then(|id| by_id.get(&id))
            .and_then(|(kind, spelling)| Some((ListKind::of(kind)?, spelling)))
            .filter(|(kind, _)| kind.governed(policy))
        else {
            return true;
        };
        match judge_result(policy, kind, element, &mut budget) {
            Ok(judged) => {
                edits.extend(judged.edit.map(|e| e.shifted(read::offset(text, element))));
                listings.push((
                    kind,
                    Listing {
                        request_id: spelling.into(),
                        shown: judged.shown,
                        removed: judged.removed,
                        replaced_by_error: false,
                    },
                ));
            }
            Err(why) => {
                let start = read::offset(text, element);
                edits.push(Edit::Replace {
                    start,
                    end: start + element.len(),
                    bytes: withheld_error(
                        Some(spelling),
                        &format!("server answer withheld: {}", why.text(kind)),
                    ),
                });
                listings.push((kind, withheld_listing(spelling)));
            }
        }
        true
    });
    if walked != read::Walked::Done {
        return None;
    }
    edited(text, edits, listings)
}

/// The judged line: `text` written again with `edits` made (one line, `\n` terminated), or
/// forwarded unchanged when there are none; its other answers go on through their own
/// judgement.
fn edited(text: &str, edits: Vec<Edit>, listings: Vec<(ListKind, Listing)>) -> Option<Filtered> {
    let line = (!edits.is_empty()).then(|| write(text, &edits));
    Some(Filtered {
        line,
        listings,
        edited: true,
    })
}

/// One change to a line, at byte offsets of the message it was judged in (then of the line).
#[derive(Debug, PartialEq, Eq)]
enum Edit {
    /// The list array from `open` (its `[`) to `close` (its `]`) is written with only the
    /// entries at these spans, joined by `,`.
    Entries {
        open: usize,
        close: usize,
        kept: Vec<(usize, usize)>,
    },
    /// The bytes from `start` to `end` (a whole message) are replaced by `bytes`.
    Replace {
        start: usize,
        end: usize,
        bytes: Vec<u8>,
    },
}

impl Edit {
    /// The same edit with every offset moved by `by` (from a message's to the line's).
    fn shifted(self, by: usize) -> Edit {
        match self {
            Edit::Entries { open, close, kept } => Edit::Entries {
                open: open + by,
                close: close + by,
                kept: kept.into_iter().map(|(s, e)| (s + by, e + by)).collect(),
            },
            Edit::Replace { start, end, bytes } => Edit::Replace {
                start: start + by,
                end: end + by,
                bytes,
            },
        }
    }

    /// The span of the line it replaces (`end` exclusive).
    fn span(&self) -> (usize, usize) {
        match self {
            Edit::Entries { open, close, .. } => (*open, close + 1),
            Edit::Replace { start, end, .. } => (*start, *end),
        }
    }

    /// How many bytes it writes instead of its span.
    fn len(&self) -> usize {
        match self {
            Edit::Entries { kept, .. } => {
                2 + kept
                    .iter()
                    .map(|(s, e)| e.saturating_sub(*s))
                    .sum::<usize>()
                    + kept.len().saturating_sub(1)
            }
            Edit::Replace { bytes, .. } => bytes.len(),
        }
    }
}

/// `text` with `edits` (in order, not overlapping) made: every other byte copied as the server
/// wrote it; `\n` terminated.
fn write(text: &str, edits: &[Edit]) -> Vec<u8> {
    let bytes = text.as_bytes();
    let part = |from: usize, to: usize| bytes.get(from..to).unwrap_or_default();
    let size = edits.iter().fold(bytes.len() + 1, |n, e| {
        let (start, end) = e.span();
        n.saturating_sub(end.saturating_sub(start)) + e.len()
    });
    let mut out = Vec::with_capacity(size);
    let mut copied = 0;
    for edit in edits {
        let (start, end) = edit.span();
        out.extend_from_slice(part(copied, start));
        match edit {
            Edit::Entries { kept, .. } => {
                out.push(b'[');
                for (i, (s, e)) in kept.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(part(*s, *e));
                }
                out.push(b']');
            }
            Edit::Replace { bytes, .. } => out.extend_from_slice(bytes),
        }
        copied = end;
    }
    out.extend_from_slice(part(copied, bytes.len()));
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out
}

/// Why an answer cannot be judged: it is replaced by the `-32603` error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unjudged {
    /// It cannot be read as the list's result (or an entry has no digest).
    Unreadable,
    /// It names more entries than a listing records ([`MAX_LISTED_ENTRIES`]).
    TooMany,
    /// The line's listings would name more entries than [`MAX_LISTED_PER_LINE`].
    LineFull,
}

impl Unjudged {
    /// What the error that replaces an answer to `kind` says after "server answer withheld: ".
    fn text(self, kind: ListKind) -> String {
        match self {
            Unjudged::Unreadable => format!("it cannot be read as a {} result", kind.method()),
            Unjudged::TooMany => format!(
                "it lists more than {MAX_LISTED_ENTRIES} entries, more than the wrapper records of one listing"
            ),
            Unjudged::LineFull => format!(
                "its line lists more than {MAX_LISTED_PER_LINE} entries, more than the wrapper records of one line"
            ),
        }
    }
}

/// A list answer judged: what its listing records, and the change to its message.
struct Judged {
    shown: Vec<(String, Option<HexDigest>)>,
    removed: Vec<(String, Option<HexDigest>, ReasonCode)>,
    /// `None`: nothing removed, the message stays as it is.
    edit: Option<Edit>,
}

/// Judges the response `message` (its text, borrowed from the line) as an answer to `kind`:
/// the entries the policy refuses are removed. `budget`: the entries the line may still record
/// (lowered by this answer's count when it is judged).
fn judge_result(
    policy: &Policy,
    kind: ListKind,
    message: &str,
    budget: &mut usize,
) -> Result<Judged, Unjudged> {
    let envelope = read::members(message, ["result"], &["result"]).ok_or(Unjudged::Unreadable)?;
    let result = match envelope.values {
        [Some(result)] if !envelope.variant => result.get(),
        _ => return Err(Unjudged::Unreadable),
    };
    let member = kind.member();
    let result = read::members(result, [member], &[member]).ok_or(Unjudged::Unreadable)?;
    let list = match result.values {
        [Some(list)] if !result.variant => list.get(),
        _ => return Err(Unjudged::Unreadable),
    };
    let mut judged = Judged {
        shown: Vec::new(),
        removed: Vec::new(),
        edit: None,
    };
    let mut kept = Vec::new();
    let mut count = 0usize;
    let mut problem = None;
    let walked = read::elements(list, |entry| {
        count += 1;
        let over = match () {
            () if count > MAX_LISTED_ENTRIES => Some(Unjudged::TooMany),
            () if count > *budget => Some(Unjudged::LineFull),
            () => None,
        };
        if over.is_some() {
            problem = over;
            return false;
        }
        let entry = entry.get();
        let Some((key, digest)) = judge_entry(kind, entry) else {
            problem = Some(Unjudged::Unreadable);
            return false;
        };
        match kind.refuses(policy, &key) {
            Some(code) => judged.removed.push((key, digest, code)),
            None => {
                judged.shown.push((key, digest));
                let start = read::offset(message, entry);
                kept.push((start, start + entry.len()));
            }
        }
        true
    });
    match walked {
        read::Walked::Done => {}
        read::Walked::Stopped => return Err(problem.unwrap_or(Unjudged::Unreadable)),
        read::Walked::NotArray => return Err(Unjudged::Unreadable),
    }
    *budget = budget.saturating_sub(count);
    if !judged.removed.is_empty() {
        let open = read::offset(message, list);
        judged.edit = Some(Edit::Entries {
            open,
            close: open + list.len().saturating_sub(1),
            kept,
        });
    }
    Ok(judged)
}

/// An entry's key (decoded) and digest: `None` when it is not an object holding its key as a
/// string, spelled exactly, or has no RFC 8785 digest.
fn judge_entry(kind: ListKind, entry: &str) -> Option<(String, Option<HexDigest>)> {
    let name = kind.key();
    let members = read::members(entry, [name], &[name])?;
    let key = match members.values {
        [Some(key)] if !members.variant => message::as_str(key.get())?.into_owned(),
        _ => return None,
    };
    // An entry without a digest cannot be named in the listing event: the answer is not shown
    // (SPEC §5.1, as for tools).
    let digest = crate::canonical::digest_of(entry)?;
    Some((key, Some(digest)))
}

#[cfg(test)]
mod tests;
