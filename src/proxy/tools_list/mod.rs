//! Answers to the client's `tools/list` requests (SPEC §5, "Reading the server fails closed
//! too"; §4.4 coverage).
//!
//! The client→server worker records the id of every `tools/list` request the client sends
//! ([`ToolsListWatch::note_request`]). From then on every server line is read with the
//! client-line rules ([`walk`]), and every message in it that *any* MCP client could take for
//! the answer to one of those requests — a `result` member beside an id that matches one of
//! them the way the SDKs compare ids ([`crate::proxy::rpc_id`]), keys by lenient class — is a
//! **candidate**, for the rest of the session.
//!
//! With the filter in effect (`hide_refused_tools`), every candidate is either rewritten (a
//! well-formed result: `tools` an array of objects with a string `name`, every key spelled
//! exactly) with the refused tools removed, or replaced by a JSON-RPC error for the client's
//! id; a line the strict rules cannot read is replaced by errors for the ids a tolerant reading
//! finds in it ([`unreadable`]). Nothing a candidate could be is forwarded unfiltered. Every
//! other line, and a candidate that loses nothing, is forwarded byte-exact.
//!
//! Without the filter nothing is changed; well-formed candidates are still read for the tool
//! names they offer (coverage).
//!
//! A line is read in up to three passes over its text, none of which builds a value: find the
//! candidates, judge their tools ([`rewrite`]), write the result straight to the client output.
//! Memory beyond the line is a few words per candidate and one bit per judged tool.

mod candidates;
mod rewrite;
mod unreadable;
mod walk;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use super::rpc_id::{Found, IdSet};
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
    /// Rewrite or replace candidates (`hide_refused_tools` in effect).
    filter: bool,
    /// The client's `tools/list` request ids.
    ids: Mutex<IdSet>,
    /// Tool names offered by well-formed candidates (coverage, SPEC §4.4).
    observed: Mutex<BTreeSet<String>>,
}

/// What to do with one server line.
pub(crate) enum ServerLine<'l> {
    /// Forward it unchanged.
    Forward,
    /// Write this instead.
    Rewrite(Rewrite<'l>),
}

impl ToolsListWatch {
    pub(crate) fn new(filter: bool) -> Self {
        Self {
            filter,
            ids: Mutex::new(IdSet::new(MAX_REQUEST_IDS)),
            observed: Mutex::new(BTreeSet::new()),
        }
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
        self.observed.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// Remembers a tool a well-formed result offered (at most [`MAX_REMEMBERED_TOOLS`] names).
    fn remember(&self, name: &str) {
        if let Ok(mut observed) = self.observed.lock() {
            if observed.len() < MAX_REMEMBERED_TOOLS || observed.contains(name) {
                observed.insert(name.to_string());
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
    if ids.is_empty() {
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
    let judged = rewrite::judge(text, candidates, |name, _tool| {
        watch.remember(name);
        !(watch.filter && policy.refuses_by_name(name))
    });
    if !watch.filter || !judged.changes_anything() {
        return ServerLine::Forward;
    }
    ServerLine::Rewrite(Rewrite::edit(text, judged))
}

/// Why a line cannot be read strictly.
#[derive(Clone, Copy, Debug)]
enum Unreadable {
    NotUtf8(usize),
    CarriageReturn(usize),
    Scan(ScanError),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::NotUtf8(at) => write!(f, "invalid UTF-8 at byte {at}"),
            Unreadable::CarriageReturn(at) => {
                write!(f, "carriage return inside the line at byte {at}")
            }
            Unreadable::Scan(e) => write!(f, "{e}"),
        }
    }
}

/// A line the strict rules refuse, while `tools/list` requests were sent: forwarded unchanged
/// without the filter (nothing is learnt from it), else replaced by errors.
fn unreadable_line<'l>(
    watch: &ToolsListWatch,
    ids: &IdSet,
    line: &'l [u8],
    why: Unreadable,
) -> ServerLine<'l> {
    if !watch.filter {
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
