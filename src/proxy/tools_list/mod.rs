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
//! by a JSON-RPC error for the client's id; a line the strict rules cannot read is replaced by one
//! error for each request it answered, as the answer gate's tolerant reading found them
//! ([`unreadable`]). Nothing a candidate could be is forwarded unfiltered. Every
//! other line, and a candidate that loses nothing, is forwarded byte-exact.
//!
//! Filter or not, every tool of a well-formed candidate is remembered with its definition digest
//! (SPEC §5.1: the most recent listing of a name wins, a listing without it does not forget it):
//! decisions record it as `tool_definition_sha256`, pins judge calls by it, coverage lists the
//! names.
//!
//! A line is read in up to three passes over its text, none of which builds a value: find the
//! candidates, judge their tools ([`rewrite`]), write the result straight to the client output.
//! The second pass keeps where the tools arrays and the first 256 tools are, so a line whose
//! answers are all well-formed is written without the third walk. Memory beyond the line is a
//! few words per candidate, one bit per judged tool and at most 256 tool places.

pub(crate) mod candidates;
mod rewrite;
pub(crate) mod unreadable;
pub(crate) mod walk;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Mutex;

use super::pending::{LineAnswers, RequestKind};
use crate::evidence::tool_definitions::Keeper;
use crate::policy::{Policy, ReasonCode};
use crate::sha256::HexDigest;
use crate::strict_json::ScanError;
pub(crate) use candidates::withheld_error;
use candidates::{Candidate, Candidates};
pub(crate) use rewrite::Rewrite;
use walk::{Hooks, Malformed, MessageInfo};

/// Tools one listing may name (SPEC §4.1a: each listing event records every tool shown and
/// removed, and a capture's log holds at most 8 MiB): an answer with more is replaced by the
/// `-32603` error while the filter is in effect.
pub(crate) const MAX_LISTED_TOOLS: usize = 2_000;

/// Distinct tool names a session remembers from `tools/list` results.
pub(crate) const MAX_REMEMBERED_TOOLS: usize = 10_000;

/// What the session watches `tools/list` answers for.
pub(crate) struct ToolsListWatch {
    /// Remove the tools the policy refuses by name (`hide_refused_tools` in effect).
    hide: bool,
    /// Remove unpinned and drifted tools (`pins` in effect).
    pins: bool,
    /// The client sent a `tools/list` request in this session.
    asked: std::sync::atomic::AtomicBool,
    /// Every tool name well-formed candidates offered, with the definition digest of its most
    /// recent listing (`None`: that listing's definition could not be canonicalized).
    definitions: Mutex<BTreeMap<String, Option<HexDigest>>>,
    /// Where the definitions themselves are kept (`record_definitions` in a capture).
    kept: Option<Keeper>,
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
            definitions: Mutex::new(BTreeMap::new()),
            asked: std::sync::atomic::AtomicBool::new(false),
            kept: None,
        }
    }

    /// This watch, keeping every distinct definition a well-formed listing offered with `kept`.
    pub(crate) fn keeping(mut self, kept: Option<Keeper>) -> Self {
        self.kept = kept;
        self
    }

    /// The client sent a `tools/list` request (noted before it is forwarded).
    pub(crate) fn note_request(&self) {
        self.asked.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether refused entries are removed (`hide_refused_tools` in effect, not dry run).
    pub(crate) fn hides(&self) -> bool {
        self.hide
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
    answers: &'s LineAnswers,
    out: Candidates,
    /// Index among the line's answers → index in `out.spellings`.
    spelled: BTreeMap<usize, usize>,
    /// The message whose tool names `names` holds.
    names_of: Option<usize>,
    /// Hashes of the lenient-normalized names of that message's tools (a collision can only
    /// make a listing look duplicated, never hide a duplicate).
    names: HashSet<u64>,
    /// The message named some tool twice.
    duplicate: bool,
    /// How many tools that message has.
    count: usize,
}

impl<'s> Finder<'s> {
    fn new(answers: &'s LineAnswers) -> Self {
        Finder {
            answers,
            out: Candidates::default(),
            spelled: BTreeMap::new(),
            names_of: None,
            names: HashSet::new(),
            duplicate: false,
            count: 0,
        }
    }
}

impl<'a> Hooks<'a> for Finder<'_> {
    fn tool(&mut self, message: usize, _text: &'a str, name: &'a str) {
        if self.names_of != Some(message) {
            self.names_of = Some(message);
            self.names.clear();
            self.duplicate = false;
            self.count = 0;
        }
        self.count += 1;
        if self.count > MAX_LISTED_TOOLS {
            // Judged as too many already: the names are not kept.
            return;
        }
        let raw = name.get(1..name.len().saturating_sub(1)).unwrap_or("");
        let mut h = std::collections::hash_map::DefaultHasher::new();
        crate::lenient::hash_key(raw, &mut h);
        self.duplicate |= !self.names.insert(std::hash::Hasher::finish(&h));
    }

    fn message(&mut self, m: &MessageInfo<'a>) {
        let mine = self.names_of == Some(m.start);
        let duplicate = mine && self.duplicate;
        let too_many = mine && self.count > MAX_LISTED_TOOLS;
        if !m.has_result {
            return;
        }
        let Some((at, spelling)) = m.id.and_then(|id| self.answers.tools_list(id)) else {
            return;
        };
        let client = {
            let next = self.out.spellings.len();
            let i = *self.spelled.entry(at).or_insert(next);
            if i == next {
                self.out.spellings.push(spelling.into());
            }
            Some(i)
        };
        self.out.list.push(Candidate {
            start: m.start,
            client,
            problem: m
                .problem
                .or(too_many.then_some(Malformed::TooManyTools))
                .or(duplicate.then_some(Malformed::DuplicateName)),
            loses: false,
        });
    }
}

/// What one answer to a client's `tools/list` showed the client (SPEC §4.1a, the listing
/// event), while the filter is in effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Listing {
    /// The request's id as the client sent it (raw JSON text).
    pub request_id: Box<str>,
    /// Each tool the client was shown, with its definition digest.
    pub shown: Vec<(String, Option<HexDigest>)>,
    /// Each tool removed, with its digest and why.
    pub removed: Vec<(String, Option<HexDigest>, ReasonCode)>,
    /// The whole result could not be read and the client got the `-32603` error instead.
    pub replaced_by_error: bool,
}

/// A judged server line: what to write, and the listings it showed.
pub(crate) struct Judgement<'l> {
    pub line: ServerLine<'l>,
    pub listings: Vec<Listing>,
}

impl<'l> Judgement<'l> {
    fn forward() -> Self {
        Judgement {
            line: ServerLine::Forward,
            listings: Vec::new(),
        }
    }
}

/// Judges one server line (`\n` included) whose responses answered `answers` (`answers.rs`).
/// `policy` says which tools are refused by name.
pub(crate) fn on_server_line<'l>(
    watch: &ToolsListWatch,
    policy: &Policy,
    line: &'l [u8],
    answers: &LineAnswers,
) -> Judgement<'l> {
    if !answers.lists_tools() && passes_unwalked(watch, answers) {
        return Judgement::forward();
    }
    let ids = answers;
    let Some(first) = line
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    else {
        return Judgement::forward();
    };
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => return unreadable_line(watch, ids, line, Unreadable::NotUtf8(e.valid_up_to())),
    };
    let last = line
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .unwrap_or(first);
    if let Some(cr) = memchr::memchr(b'\r', &line[first..last]) {
        return unreadable_line(watch, ids, line, Unreadable::CarriageReturn(first + cr));
    }
    let mut finder = Finder::new(ids);
    if let Err(e) = walk::walk(text, &mut finder) {
        return unreadable_line(watch, ids, line, Unreadable::Scan(e));
    }
    let candidates = finder.out;
    if candidates.list.is_empty() {
        return Judgement::forward();
    }
    let mut listings = empty_listings(&candidates);
    let judged = rewrite::judge(text, candidates, watch.filter(), |c, name, tool| {
        judge_tool(watch, policy, listings.get_mut(c), name, tool)
    });
    if !watch.filter() {
        // Without the filter nothing is removed; an answer with a tool that has no digest is
        // still withheld (what the model is shown is always what the evidence can name).
        let withheld = judged.withholds_undigestible();
        return Judgement {
            line: if withheld {
                ServerLine::Rewrite(Rewrite::edit(text, judged))
            } else {
                ServerLine::Forward
            },
            listings: Vec::new(),
        };
    }
    let line = if judged.changes_anything() {
        ServerLine::Rewrite(Rewrite::edit(text, judged))
    } else {
        ServerLine::Forward
    };
    Judgement { line, listings }
}

/// Whether a line that answered no `tools/list` request passes without a walk. While
/// filtering, once the client asked for a listing, a line the strict rules refuse is withheld
/// whatever it answers (it cannot be judged); a line the gate walked was read strictly and
/// passes. So does a line the gate judged at a glance to be one response to a pending request
/// that is not a listing: exactly one id key and one answer key anywhere in it, and no reading
/// of that one id makes it the answer to a pending listing (those are preferred on any
/// ambiguous match, `pending.rs`) — no client can take it for one. (The common case: the
/// answers to calls are not walked a second time.) Every other line is walked.
fn passes_unwalked(watch: &ToolsListWatch, answers: &LineAnswers) -> bool {
    let asked = watch.asked.load(std::sync::atomic::Ordering::Relaxed);
    let one_other_answer = answers.strict.is_none() && answers.spellings().count() == 1;
    !watch.filter() || !asked || answers.strict == Some(true) || one_other_answer
}

/// One listing per candidate, nothing shown or removed yet; a malformed candidate's is
/// replaced by the error.
fn empty_listings(candidates: &Candidates) -> Vec<Listing> {
    candidates
        .list
        .iter()
        .map(|c| Listing {
            request_id: c
                .client
                .and_then(|i| candidates.spellings.get(i))
                .cloned()
                .unwrap_or_default(),
            shown: Vec::new(),
            removed: Vec::new(),
            replaced_by_error: c.problem.is_some(),
        })
        .collect()
}

/// Pass two's judgement of one tool (`name` decoded, `tool` its object's text) of a
/// well-formed candidate whose listing is `listing`: remembered with its digest, then kept,
/// dropped (refused by name while hiding, unpinned or drifted while pinning) or withholding
/// its whole answer (no digest).
fn judge_tool(
    watch: &ToolsListWatch,
    policy: &Policy,
    listing: Option<&mut Listing>,
    name: &str,
    tool: &str,
) -> rewrite::Verdict {
    let digest = crate::canonical::digest_of(tool);
    let Some(d) = digest else {
        // SPEC §5.1: every tool a client is shown has its digest recorded; one that has
        // none takes its whole answer with it (the client gets the `-32603` error), and it
        // is not remembered as listed (`tool_definition_sha256` stays null: no answer that
        // reached the client contained it).
        if let Some(listing) = listing {
            listing.shown.clear();
            listing.removed.clear();
            listing.replaced_by_error = true;
        }
        return rewrite::Verdict::Withhold(Malformed::Undigestible);
    };
    let digest = Some(d);
    watch.remember(name, digest);
    if let Some(kept) = &watch.kept {
        kept.keep(name, &d, tool);
    }
    let refusal = policy.tool_listing_refusal(name, &d, watch.hide, watch.pins);
    if let Some(listing) = listing {
        match refusal {
            Some(code) => listing.removed.push((name.to_string(), digest, code)),
            None => listing.shown.push((name.to_string(), digest)),
        }
    }
    if refusal.is_none() {
        rewrite::Verdict::Keep
    } else {
        rewrite::Verdict::Drop
    }
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
/// without the filter (nothing is learnt from it), else replaced by one error for each request
/// it answered (`ids`: the answer gate read the line the same tolerant way, and took each
/// request once), so no request waits forever and none hears twice. Nothing is held per
/// message of the line: the errors are written as they go (SPEC §3 item 6).
fn unreadable_line<'l>(
    watch: &ToolsListWatch,
    ids: &LineAnswers,
    line: &'l [u8],
    why: Unreadable,
) -> Judgement<'l> {
    if !watch.filter() {
        return Judgement::forward();
    }
    let batch = line
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        == Some(&b'[');
    let listings = ids
        .kept(|kind| (kind == RequestKind::TOOLS_LIST).then_some(()))
        .map(|((), spelling)| Listing {
            request_id: spelling.into(),
            shown: Vec::new(),
            removed: Vec::new(),
            replaced_by_error: true,
        })
        .collect();
    let spellings = ids.spellings().map(Box::from).collect();
    Judgement {
        line: ServerLine::Rewrite(Rewrite::replace(spellings, batch, why.to_string())),
        listings,
    }
}

#[cfg(test)]
mod tests;
