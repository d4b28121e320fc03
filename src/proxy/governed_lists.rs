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

use serde_json::Value;

use super::answers::LineAnswers;
use super::message::{self, ClientLine};
use super::pending::RequestKind;
use super::tools_list::{Listing, withheld_error};
use crate::lenient;
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
            edited: false,
        })
    };
    let (kind, spelling) = match (
        &wanted[..],
        message::classify(line, message::Judged::default()),
    ) {
        ([one], ClientLine::Single(_)) => (one.0, one.1.clone()),
        (_, ClientLine::Batch(_)) => {
            return judge_batch(policy, line, answered)
                .or_else(|| replaced("it cannot be read as a batch of responses"));
        }
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
    edited(&value, judged.changed, vec![(kind, listing)])
}

/// A batch answering list requests (SPEC §5.2, issue 46 item 6): element by element. Each
/// response that answers one of `wanted` is judged as it would be on its own line — filtered,
/// or replaced by the `-32603` error for its id when it cannot be read as that list's result —
/// and every other element is left as it is. `None` when the line cannot be read as a batch at
/// all (then every answer it holds is replaced, as for any unreadable line).
fn judge_batch(policy: &Policy, line: &[u8], answered: &LineAnswers) -> Option<Filtered> {
    let text = std::str::from_utf8(line).ok()?;
    let mut value = crate::strict_json::parse_value(text.trim_end()).ok()?;
    let elements = value.as_array_mut()?;
    let by_id = answered.by_id_value();
    let mut listings = Vec::new();
    let mut changed = false;
    for element in elements.iter_mut() {
        let Some(obj) = element.as_object() else {
            continue;
        };
        if obj.contains_key("method") || !obj.contains_key("result") {
            continue;
        }
        let Some((kind, spelling)) = obj
            .get("id")
            .and_then(|id| by_id.get(id))
            .and_then(|(kind, spelling)| Some((ListKind::of(kind)?, spelling)))
            .filter(|(kind, _)| kind.governed(policy))
        else {
            continue;
        };
        match judge_result(policy, kind, element) {
            Some(judged) => {
                changed |= judged.changed;
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
            None => {
                let error = withheld_error(
                    Some(spelling),
                    &format!(
                        "server answer withheld: it cannot be read as a {} result",
                        kind.method()
                    ),
                );
                *element = serde_json::from_slice(&error).ok()?;
                changed = true;
                listings.push((
                    kind,
                    Listing {
                        request_id: spelling.into(),
                        shown: Vec::new(),
                        removed: Vec::new(),
                        replaced_by_error: true,
                    },
                ));
            }
        }
    }
    edited(&value, changed, listings)
}

/// The judged line: `value` written again when `changed` (one line, `\n` terminated), else the
/// server's line unchanged; its other answers go on through their own judgement.
fn edited(value: &Value, changed: bool, listings: Vec<(ListKind, Listing)>) -> Option<Filtered> {
    let line = if changed {
        let mut out = serde_json::to_vec(value).ok()?;
        out.push(b'\n');
        Some(out)
    } else {
        None
    };
    Some(Filtered {
        line,
        listings,
        edited: true,
    })
}

struct Judged {
    shown: Vec<(String, Option<HexDigest>)>,
    removed: Vec<(String, Option<HexDigest>, ReasonCode)>,
    changed: bool,
}

/// Judges the result of a response value in place: `None` when it cannot be read as this list.
fn judge_result(policy: &Policy, kind: ListKind, value: &mut Value) -> Option<Judged> {
    let envelope = value.as_object_mut()?;
    if lenient::has_variant(envelope, &["result"]) {
        return None;
    }
    let result = envelope.get_mut("result")?.as_object_mut()?;
    if lenient::has_variant(result, &[kind.member()]) {
        return None;
    }
    let entries = result.get_mut(kind.member())?.as_array_mut()?;
    let mut shown = Vec::new();
    let mut removed = Vec::new();
    let mut keep = Vec::with_capacity(entries.len());
    for entry in entries.iter() {
        let obj = entry.as_object()?;
        if lenient::has_variant(obj, &[kind.key()]) {
            return None;
        }
        let key = obj.get(kind.key())?.as_str()?;
        // An entry without a digest cannot be named in the listing event: the answer is not
        // shown (SPEC §5.1, as for tools).
        let digest = Some(crate::canonical::digest_of(&entry.to_string())?);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods;
    use crate::proxy::answers::{Gate, judge as gate};
    use crate::proxy::pending::{PendingRequests, RequestKind};

    fn policy() -> Policy {
        Policy::from_bytes(
            b"version: \"1\"\nallow: [\"*\"]\nhide_refused_tools: true\nprompts:\n  deny: [\"debug_*\"]\n\
              resources:\n  deny: [\"file:///workspace/.env\"]\n",
            std::path::Path::new("p.yaml"),
        )
        .unwrap()
    }

    /// What the listing filter makes of `line` after the client sent `requests`.
    fn through(requests: &[(&str, RequestKind)], line: &str) -> (String, Vec<(ListKind, Listing)>) {
        let pending = PendingRequests::new();
        for (id, kind) in requests {
            pending.note(id, *kind);
        }
        let answered = match gate(line.as_bytes(), &pending).gate {
            Gate::Forward(a) => a,
            Gate::Trimmed(_, a) => a,
            _ => panic!("the gate keeps {line}"),
        };
        match judge(&policy(), line.as_bytes(), &answered) {
            None => (line.to_string(), Vec::new()),
            Some(f) => (
                f.line
                    .map(|l| String::from_utf8(l).unwrap())
                    .unwrap_or_else(|| line.to_string()),
                f.listings,
            ),
        }
    }

    /// SPEC §5.2 (issue 46 item 6): a server batch is judged element by element — a list answer
    /// is filtered as on its own line, an unreadable one becomes the error for its id alone, and
    /// the other answers of the batch reach the client unchanged.
    #[test]
    fn a_batch_is_judged_element_by_element() {
        let line = r#"[{"jsonrpc":"2.0","id":1,"result":{"prompts":[{"name":"greet"},{"name":"debug_dump"}]}},{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"call answer"}]}},{"jsonrpc":"2.0","id":3,"result":{"Resources":[]}}]"#;
        let (out, listings) = through(
            &[
                ("1", RequestKind::Read(&methods::PROMPTS_LIST)),
                ("2", RequestKind::Other),
                ("3", RequestKind::Read(&methods::RESOURCES_LIST)),
            ],
            &format!("{line}\n"),
        );
        let v: Value = serde_json::from_str(&out).unwrap();
        let a = v.as_array().unwrap();
        assert_eq!(a.len(), 3, "{out}");
        assert_eq!(
            a[0]["result"]["prompts"],
            serde_json::json!([{"name": "greet"}])
        );
        assert_eq!(a[1]["result"]["content"][0]["text"], "call answer", "{out}");
        assert_eq!(a[2]["id"], 3);
        assert_eq!(a[2]["error"]["code"], -32603, "{out}");
        assert_eq!(listings.len(), 2);
        assert_eq!(listings[0].0.method(), methods::PROMPTS_LIST.name);
        assert!(!listings[0].1.replaced_by_error);
        assert_eq!(listings[0].1.removed.len(), 1);
        assert_eq!(listings[1].0.method(), methods::RESOURCES_LIST.name);
        assert!(listings[1].1.replaced_by_error);
        // A batch whose list answers lose nothing is forwarded byte for byte.
        let kept = r#"[{"jsonrpc":"2.0","id":1,"result":{"prompts":[{"name":"greet"}]}},{"jsonrpc":"2.0","id":2,"result":{}}]"#;
        let (out, listings) = through(
            &[
                ("1", RequestKind::Read(&methods::PROMPTS_LIST)),
                ("2", RequestKind::Other),
            ],
            &format!("{kept}\n"),
        );
        assert_eq!(out, format!("{kept}\n"));
        assert_eq!(listings.len(), 1);
    }
}
