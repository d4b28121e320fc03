//! `tools/list` results answering the client's own `tools/list` requests: the tool names they
//! hold (for coverage, SPEC §4.4) and, with the policy's `hide_refused_tools`, the same line with
//! the tools refused by name removed (SPEC §5).
//!
//! The client→server worker records the id of every `tools/list` request it forwards
//! ([`ToolsListWatch::note_request`]); the server→client worker matches response ids against
//! them ([`on_server_line`]). Ids are compared by value, not by spelling: `"a"` and `"\u0061"`
//! are one id, `1` and `1.0` are one id (a server may re-serialize the id it echoes), and a
//! string id never equals a number id. The set is bounded: past [`MAX_PENDING`] unanswered
//! requests the oldest id is forgotten, and a late answer to it is forwarded unchanged.
//!
//! The rewrite edits the line's text: the bytes before and after the `tools` array are kept
//! exactly, and so is every remaining tool's own text (its `_meta`, annotations, unknown keys,
//! member order and escapes); only the separators inside the array are rebuilt. A result that
//! loses no tool is forwarded byte-exact, and so is every line the rewrite cannot read (not
//! strict JSON, not a single response object, no `tools` array, a tool without a string name):
//! hiding is a view for the model, the policy still refuses every call to a hidden tool.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::message::CLIENT_MAX_DEPTH;
use super::rpc_id::IdKeys;
use crate::policy::Policy;

/// Unanswered `tools/list` request ids remembered at most.
pub(crate) const MAX_PENDING: usize = 1024;

/// What the session watches `tools/list` results for.
pub(crate) struct ToolsListWatch {
    /// Record the tool names offered (a coverage report was requested).
    pub coverage: bool,
    /// Remove the tools the policy refuses by name (`hide_refused_tools`).
    pub hide: bool,
    pending: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    /// Oldest first.
    ids: VecDeque<IdKeys>,
}

impl Pending {
    fn position(&self, key: &IdKeys) -> Option<usize> {
        self.ids.iter().position(|k| k.matches(key))
    }
}

fn id_key(text: &str) -> Option<IdKeys> {
    IdKeys::of_json(text)
}

impl ToolsListWatch {
    pub(crate) fn new(coverage: bool, hide: bool) -> Self {
        Self {
            coverage,
            hide,
            pending: Mutex::new(Pending::default()),
        }
    }

    /// Whether `tools/list` traffic is watched at all.
    pub(crate) fn active(&self) -> bool {
        self.coverage || self.hide
    }

    /// Remembers the id of a `tools/list` request the client sent (ids that are neither a
    /// string nor a number are not answered by id and are ignored).
    pub(crate) fn note_request(&self, id: &str) {
        if !self.active() {
            return;
        }
        let Some(key) = id_key(id) else {
            return;
        };
        let Ok(mut p) = self.pending.lock() else {
            return;
        };
        if p.position(&key).is_some() {
            return;
        }
        if p.ids.len() >= MAX_PENDING {
            p.ids.pop_front();
        }
        p.ids.push_back(key);
    }

    /// Forgets `id` if it is pending; whether it was.
    fn take(&self, id: &RawValue) -> bool {
        let Some(key) = id_key(id.get()) else {
            return false;
        };
        let Ok(mut p) = self.pending.lock() else {
            return false;
        };
        match p.position(&key) {
            Some(i) => p.ids.remove(i).is_some(),
            None => false,
        }
    }

    fn none_pending(&self) -> bool {
        self.pending.lock().map_or(true, |p| p.ids.is_empty())
    }

    fn is_pending(&self, id: &RawValue) -> bool {
        let Some(key) = id_key(id.get()) else {
            return false;
        };
        self.pending
            .lock()
            .is_ok_and(|p| p.position(&key).is_some())
    }
}

#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ListResult<'a> {
    #[serde(borrow)]
    tools: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ToolName {
    name: Option<String>,
}

/// Looks at one server line. Returns the rewritten line when tools were hidden from it; `None`
/// means: forward `line` unchanged.
/// Tool names it reads go to `observed_tools` when coverage is on; `policy` says which to hide.
pub(crate) fn on_server_line(
    watch: &ToolsListWatch,
    observed_tools: &Mutex<BTreeSet<String>>,
    policy: &Policy,
    line: &[u8],
) -> Option<Vec<u8>> {
    if !watch.active() || watch.none_pending() || memchr::memmem::find(line, b"\"id\"").is_none() {
        return None;
    }
    let text = std::str::from_utf8(line).ok()?;
    let body = text.trim_end_matches(['\n', '\r']);
    if !body.trim_start().starts_with('{')
        || crate::strict_json::scan_str(body, CLIENT_MAX_DEPTH).is_err()
    {
        return None;
    }
    let resp = serde_json::from_str::<Response<'_>>(body).ok()?;
    let id = resp.id?;
    if resp.result.is_none() && resp.error.is_none() {
        return None; // a request from the server, not a response
    }
    if !watch.is_pending(id) {
        return None;
    }
    // The request is answered, whatever the answer holds.
    watch.take(id);
    let tools_raw = resp
        .result
        .filter(|r| r.get().starts_with('{'))
        .and_then(|r| serde_json::from_str::<ListResult<'_>>(r.get()).ok())
        .and_then(|r| r.tools)?;
    let tools = serde_json::from_str::<Vec<&RawValue>>(tools_raw.get()).ok()?;
    let mut names = Vec::with_capacity(tools.len());
    for t in &tools {
        let name = serde_json::from_str::<ToolName>(t.get())
            .ok()
            .and_then(|n| n.name);
        names.push(name);
    }
    if watch.coverage {
        if let Ok(mut observed) = observed_tools.lock() {
            observed.extend(names.iter().flatten().cloned());
        }
    }
    if !watch.hide || names.iter().any(Option::is_none) {
        return None;
    }
    let keep: Vec<bool> = names
        .iter()
        .flatten()
        .map(|n| !policy.refuses_by_name(n))
        .collect();
    if keep.iter().all(|k| *k) {
        return None;
    }
    let start = offset_in(text, tools_raw.get())?;
    let end = start + tools_raw.get().len();
    let mut out = Vec::with_capacity(line.len());
    out.extend_from_slice(&line[..start]);
    out.push(b'[');
    let mut first = true;
    for (t, k) in tools.iter().zip(&keep) {
        if !k {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(t.get().as_bytes());
    }
    out.push(b']');
    out.extend_from_slice(&line[end..]);
    Some(out)
}

/// Byte offset of `part` inside `whole`, when `part` borrows from it.
fn offset_in(whole: &str, part: &str) -> Option<usize> {
    let base = whole.as_ptr() as usize;
    let at = part.as_ptr() as usize;
    let off = at.checked_sub(base)?;
    (off + part.len() <= whole.len()).then_some(off)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Option<IdKeys> {
        id_key(s)
    }

    #[test]
    fn ids_compare_by_value() {
        let same = |a: &str, b: &str| key(a).unwrap().matches(&key(b).unwrap());
        assert!(same("\"a\"", "\"\\u0061\""));
        assert!(same("1", "1.0"));
        assert!(same("100", "1e2"));
        assert!(same("1", "\"1\""));
        assert!(!same("1", "2"));
        assert_eq!(key("null"), None);
        assert!(!same("1.5", "1"));
    }

    #[test]
    fn pending_ids_are_bounded_and_forgotten_oldest_first() {
        let w = ToolsListWatch::new(false, true);
        let raw = |i: usize| RawValue::from_string(i.to_string()).unwrap();
        for i in 0..MAX_PENDING + 5 {
            w.note_request(raw(i).get());
        }
        let p = w.pending.lock().unwrap();
        assert_eq!(p.ids.len(), MAX_PENDING);
        drop(p);
        assert!(!w.is_pending(&raw(4)), "the oldest were forgotten");
        assert!(w.is_pending(&raw(5)));
        assert!(w.take(&raw(MAX_PENDING + 4)));
        assert!(!w.take(&raw(MAX_PENDING + 4)), "answered once");
    }

    #[test]
    fn an_inactive_watch_remembers_nothing() {
        let w = ToolsListWatch::new(false, false);
        w.note_request("1");
        assert!(!w.is_pending(&RawValue::from_string("1".into()).unwrap()));
    }

    #[test]
    fn offsets() {
        let s = "abc";
        assert_eq!(offset_in(s, &s[1..]), Some(1));
        assert_eq!(offset_in(s, &s[3..]), Some(3));
    }
}
