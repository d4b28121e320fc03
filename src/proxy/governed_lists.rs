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
//! the requests it answered. A result that loses nothing is forwarded byte-exact; one that loses
//! entries is written again from its parsed value (members and entries kept, key order may
//! change).

use serde_json::{Map, Value};

use super::answers::LineAnswers;
use super::message::{self, ClientLine};
use super::pending::RequestKind;
use super::tools_list::{Listing, withheld_error};
use crate::lenient;
use crate::policy::{Policy, ReasonCode};
use crate::sha256::HexDigest;

/// Which list a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    Resources,
    ResourceTemplates,
    Prompts,
}

impl ListKind {
    /// The kind of an answer, if it answers one of these lists.
    pub(crate) fn of(kind: RequestKind) -> Option<ListKind> {
        match kind {
            RequestKind::ResourcesList => Some(ListKind::Resources),
            RequestKind::ResourceTemplatesList => Some(ListKind::ResourceTemplates),
            RequestKind::PromptsList => Some(ListKind::Prompts),
            _ => None,
        }
    }

    /// The method of the request.
    pub(crate) fn method(self) -> &'static str {
        match self {
            ListKind::Resources => "resources/list",
            ListKind::ResourceTemplates => "resources/templates/list",
            ListKind::Prompts => "prompts/list",
        }
    }

    /// What an entry is called in messages.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            ListKind::Resources => "resource",
            ListKind::ResourceTemplates => "resource template",
            ListKind::Prompts => "prompt",
        }
    }

    /// The result member holding the list.
    fn member(self) -> &'static str {
        match self {
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
            ListKind::Prompts => "prompts",
        }
    }

    /// The entry member the policy judges.
    fn key(self) -> &'static str {
        match self {
            ListKind::Resources => "uri",
            ListKind::ResourceTemplates => "uriTemplate",
            ListKind::Prompts => "name",
        }
    }

    /// Whether the policy refuses an entry with this key whatever else it carries.
    fn refuses(self, policy: &Policy, key: &str) -> Option<ReasonCode> {
        match self {
            ListKind::Resources => policy.refuses_resource(key),
            ListKind::ResourceTemplates => policy.refuses_resource_template(key),
            ListKind::Prompts => policy.refuses_prompt(key),
        }
    }

    /// Whether the policy governs this list (its section is present).
    fn governed(self, policy: &Policy) -> bool {
        let section = match self {
            ListKind::Resources | ListKind::ResourceTemplates => "resources",
            ListKind::Prompts => "prompts",
        };
        policy.governed().contains(&section)
    }
}

/// What to write instead of a server line, and the listings it showed.
pub(crate) struct Filtered {
    /// `None`: forward the line unchanged.
    pub line: Option<Vec<u8>>,
    pub listings: Vec<(ListKind, Listing)>,
}

/// The lists a line answers that this policy filters.
fn filtered_answers(policy: &Policy, answered: &LineAnswers) -> Vec<(ListKind, Box<str>)> {
    answered
        .kinds()
        .filter_map(|(kind, spelling)| {
            let k = ListKind::of(kind)?;
            k.governed(policy).then(|| (k, spelling.into()))
        })
        .collect()
}

/// Judges a line the answer gate let through (hiding in effect). `None`: nothing to judge.
pub(crate) fn judge(policy: &Policy, line: &[u8], answered: &LineAnswers) -> Option<Filtered> {
    let wanted = filtered_answers(policy, answered);
    if wanted.is_empty() {
        return None;
    }
    let replaced = |why: &str| {
        let mut out = Vec::new();
        let mut listings = Vec::new();
        for (kind, spelling) in &wanted {
            out.extend_from_slice(&withheld_error(
                Some(spelling),
                &format!("server answer withheld: {why}"),
            ));
            out.push(b'\n');
            listings.push((
                *kind,
                Listing {
                    request_id: spelling.clone(),
                    shown: Vec::new(),
                    removed: Vec::new(),
                    replaced_by_error: true,
                },
            ));
        }
        Some(Filtered {
            line: Some(out),
            listings,
        })
    };
    let (kind, spelling) = match (
        &wanted[..],
        message::classify(line, message::Judged::default()),
    ) {
        ([one], ClientLine::Single(_)) => (one.0, one.1.clone()),
        _ => return replaced("it cannot be read as a list result"),
    };
    let Some(mut value) = std::str::from_utf8(line)
        .ok()
        .and_then(|t| crate::strict_json::parse_value(t.trim_end()).ok())
    else {
        return replaced("it cannot be read as a list result");
    };
    let why = format!("it cannot be read as a {} result", kind.method());
    let Some(judged) = judge_result(policy, kind, &mut value) else {
        return replaced(&why);
    };
    let listing = Listing {
        request_id: spelling,
        shown: judged.shown,
        removed: judged.removed,
        replaced_by_error: false,
    };
    let line = if judged.changed {
        let mut out = serde_json::to_vec(&value).ok()?;
        out.push(b'\n');
        Some(out)
    } else {
        None
    };
    Some(Filtered {
        line,
        listings: vec![(kind, listing)],
    })
}

struct Judged {
    shown: Vec<(String, Option<HexDigest>)>,
    removed: Vec<(String, Option<HexDigest>, ReasonCode)>,
    changed: bool,
}

/// Whether an object has a key that is a lenient variant (not the exact spelling) of `name`.
fn has_variant(obj: &Map<String, Value>, name: &str) -> bool {
    obj.keys().any(|k| lenient::is_variant(k, name))
}

/// Judges the result of a response value in place: `None` when it cannot be read as this list.
fn judge_result(policy: &Policy, kind: ListKind, value: &mut Value) -> Option<Judged> {
    let envelope = value.as_object_mut()?;
    if has_variant(envelope, "result") {
        return None;
    }
    let result = envelope.get_mut("result")?.as_object_mut()?;
    if has_variant(result, kind.member()) {
        return None;
    }
    let entries = result.get_mut(kind.member())?.as_array_mut()?;
    let mut shown = Vec::new();
    let mut removed = Vec::new();
    let mut keep = Vec::with_capacity(entries.len());
    for entry in entries.iter() {
        let obj = entry.as_object()?;
        if has_variant(obj, kind.key()) {
            return None;
        }
        let key = obj.get(kind.key())?.as_str()?;
        let digest = crate::canonical::digest_of(&entry.to_string());
        match kind.refuses(policy, key) {
            Some(code) => {
                removed.push((key.to_owned(), digest, code));
                keep.push(false);
            }
            None => {
                shown.push((key.to_owned(), digest));
                keep.push(true);
            }
        }
    }
    let changed = !removed.is_empty();
    if changed {
        let mut flags = keep.into_iter();
        entries.retain(|_| flags.next().unwrap_or(false));
    }
    Some(Judged {
        shown,
        removed,
        changed,
    })
}
