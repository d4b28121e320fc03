//! Answers to the client's `tools/list` requests (SPEC §5, "Reading the server fails closed
//! too"; §4.4 coverage).
//!
//! The client→server worker records the id of every `tools/list` request the client sends
//! ([`ToolsListWatch::note_request`]). From then on every server line is read with the
//! client-line rules ([`walk`]), and every message in it that *any* MCP client could take for
//! the answer to one of those requests — a `result` member beside an id that matches one of
//! them the way the SDKs compare ids ([`crate::proxy::rpc_id`]), keys by lenient class — is a
//! **candidate**, for the rest of the session. (Without the filter every line is forwarded
//! unchanged whatever it holds, and the walk is skipped where a quick look at its id members
//! shows that none matches: [`quick`].)
//!
//! With the filter in effect (`hide_refused_tools`, or `pins` — SPEC §5.1), every candidate is
//! either rewritten (a well-formed result: `tools` an array of objects with a string `name`,
//! every key spelled exactly) with the refused, unpinned and drifted tools removed, or replaced
//! by a JSON-RPC error for the client's id; a line the strict rules cannot read is replaced by errors for the ids a tolerant reading
//! finds in it ([`unreadable`]). Nothing a candidate could be is forwarded unfiltered. Every
//! other line, and a candidate that loses nothing, is forwarded byte-exact.
//!
//! Filter or not, every tool of a well-formed candidate is remembered with its definition digest
//! (SPEC §5.1: the most recent listing of a name wins, a listing without it does not forget it):
//! decisions record it as `tool_definition_sha256`, pins judge calls by it, coverage lists the
//! names.
//!
//! A line is read in up to three passes over its text, none of which builds a value: find the
//! candidates, judge their tools ([`rewrite`]), write the result straight to the client output.
//! Memory beyond the line is a few words per candidate and one bit per judged tool.

mod candidates;
mod quick;
mod rewrite;
mod unreadable;
pub(crate) mod walk;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use super::rpc_id::{Found, IdSet};
use crate::evidence::event::HexDigest;
use crate::policy::Policy;
use crate::strict_json::ScanError;
use candidates::{Candidate, Candidates, withheld_error};
pub(crate) use rewrite::Rewrite;
use walk::{Hooks, MessageInfo};

/// Distinct `tools/list` request ids a session remembers; past this many, every id counts as
/// one of them (the set saturates, fail closed).
pub(crate) const MAX_REQUEST_IDS: usize = 4096;

/// Distinct tool names a session remembers from `tools/list` results.
pub(crate) const MAX_REMEMBERED_TOOLS: usize = 10_000;

/// What the session watches `tools/list` answers for.
pub(crate) struct ToolsListWatch {
    /// Remove the tools the policy refuses by name (`hide_refused_tools` in effect).
    hide: bool,
    /// Remove unpinned and drifted tools (`pins` in effect).
    pins: bool,
    /// The client's `tools/list` request ids.
    ids: Mutex<IdSet>,
    /// Every tool name well-formed candidates offered, with the definition digest of its most
    /// recent listing (`None`: that listing's definition could not be canonicalized).
    definitions: Mutex<BTreeMap<String, Option<HexDigest>>>,
}

/// What to do with one server line.
pub(crate) enum ServerLine<'l> {
    /// Forward it unchanged.
    Forward,
    /// Write this instead.
    Rewrite(Rewrite<'l>),
}

impl ToolsListWatch {
    /// A watch that removes what `hide` and `pins` say (both off in dry run).
    pub(crate) fn new(hide: bool, pins: bool) -> Self {
        Self {
            hide,
            pins,
            ids: Mutex::new(IdSet::new(MAX_REQUEST_IDS)),
            definitions: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether answers are rewritten or replaced (the filter is in effect).
    fn filter(&self) -> bool {
        self.hide || self.pins
    }

    /// The definition digest this session remembers for `tool` (SPEC §5.1), if a readable
    /// listing held it.
    pub(crate) fn definition_of(&self, tool: &str) -> Option<HexDigest> {
        self.definitions
            .lock()
            .ok()
            .and_then(|d| d.get(tool).copied().flatten())
    }

    /// Records the id (raw JSON text) of a `tools/list` request the client sent. Called before
    /// the request is forwarded, so no answer can arrive first.
    pub(crate) fn note_request(&self, id: &str) {
        if let Ok(mut ids) = self.ids.lock() {
            ids.insert(id);
        }
    }

    /// The tool names offered by the well-formed `tools/list` results of this session.
    pub(crate) fn observed_names(&self) -> BTreeSet<String> {
        self.definitions
            .lock()
            .map(|d| d.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Remembers a tool a well-formed result offered, with its digest (at most
    /// [`MAX_REMEMBERED_TOOLS`] names; past that, new names are not remembered and their calls
    /// are judged as unlisted).
    fn remember(&self, name: &str, digest: Option<HexDigest>) {
        if let Ok(mut d) = self.definitions.lock() {
            if let Some(slot) = d.get_mut(name) {
                *slot = digest;
            } else if d.len() < MAX_REMEMBERED_TOOLS {
                d.insert(name.to_string(), digest);
            }
        }
    }
}

/// Pass one: which messages are candidates.
struct Finder<'s> {
    ids: &'s IdSet,
    out: Candidates,
    /// Index in the id set → index in `out.spellings`.
    spelled: BTreeMap<usize, usize>,
}

impl<'a> Hooks<'a> for Finder<'_> {
    fn message(&mut self, m: &MessageInfo<'a>) {
        if !m.has_result {
            return;
        }
        let Some(found) = m.id.and_then(|id| self.ids.find(id)) else {
            return;
        };
        let client = match found {
            Found::Client(at, spelling) => {
                let next = self.out.spellings.len();
                let i = *self.spelled.entry(at).or_insert(next);
                if i == next {
                    self.out.spellings.push(spelling.into());
                }
                Some(i)
            }
            Found::Saturated => None,
        };
        self.out.list.push(Candidate {
            start: m.start,
            client,
            problem: m.problem,
            loses: false,
        });
    }
}

/// Judges one server line (`\n` included). `policy` says which tools are refused by name.
pub(crate) fn on_server_line<'l>(
    watch: &ToolsListWatch,
    policy: &Policy,
    line: &'l [u8],
) -> ServerLine<'l> {
    let Ok(ids) = watch.ids.lock() else {
        return ServerLine::Forward;
    };
    if ids.is_empty() || (!watch.filter() && quick::answers_none(line, &ids)) {
        return ServerLine::Forward;
    }
    let Some(first) = line
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    else {
        return ServerLine::Forward;
    };
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => return unreadable_line(watch, &ids, line, Unreadable::NotUtf8(e.valid_up_to())),
    };
    let last = line
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .unwrap_or(first);
    if let Some(cr) = memchr::memchr(b'\r', &line[first..last]) {
        return unreadable_line(watch, &ids, line, Unreadable::CarriageReturn(first + cr));
    }
    let mut finder = Finder {
        ids: &ids,
        out: Candidates::default(),
        spelled: BTreeMap::new(),
    };
    if let Err(e) = walk::walk(text, &mut finder) {
        return unreadable_line(watch, &ids, line, Unreadable::Scan(e));
    }
    let candidates = finder.out;
    drop(ids);
    if candidates.list.is_empty() {
        return ServerLine::Forward;
    }
    let judged = rewrite::judge(text, candidates, |name, tool| {
        let digest = crate::canonical::digest_of(tool);
        watch.remember(name, digest);
        let hidden = watch.hide && policy.refuses_by_name(name);
        let unpinned = watch.pins
            && match (policy.pins(), &digest) {
                (Some(pins), Some(d)) => !pins.matches(name, d),
                _ => true,
            };
        !(hidden || unpinned)
    });
    if !watch.filter() || !judged.changes_anything() {
        return ServerLine::Forward;
    }
    ServerLine::Rewrite(Rewrite::edit(text, judged))
}

/// Why a line cannot be read strictly.
#[derive(Clone, Copy, Debug, thiserror::Error)]
enum Unreadable {
    #[error("invalid UTF-8 at byte {0}")]
    NotUtf8(usize),
    #[error("carriage return inside the line at byte {0}")]
    CarriageReturn(usize),
    #[error("{0}")]
    Scan(ScanError),
}

/// A line the strict rules refuse, while `tools/list` requests were sent: forwarded unchanged
/// without the filter (nothing is learnt from it), else replaced by errors.
fn unreadable_line<'l>(
    watch: &ToolsListWatch,
    ids: &IdSet,
    line: &'l [u8],
    why: Unreadable,
) -> ServerLine<'l> {
    if !watch.filter() {
        return ServerLine::Forward;
    }
    let batch = line
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        == Some(&b'[');
    let errors: Vec<Vec<u8>> = unreadable::message_ids(line)
        .into_iter()
        .map(|id| {
            // An id that answers a `tools/list` request is echoed as the client spelled it.
            let echoed: Option<Box<str>> = id.map(|id| match ids.find(id) {
                Some(Found::Client(_, spelling)) => spelling.into(),
                _ => id.into(),
            });
            withheld_error(echoed.as_deref(), &format!("server line withheld: {why}"))
        })
        .collect();
    ServerLine::Rewrite(Rewrite::replace(errors, batch, why.to_string()))
}

#[cfg(test)]
mod tests;
