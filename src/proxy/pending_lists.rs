//! The pending listing requests (`tools/list`, `resources/list`, `resources/templates/list`,
//! `prompts/list`), oldest first, indexed by every reading of their ids: which listing a server
//! answer answers is a few map lookups, however many listings a pipelining client has pending
//! (walking them all for every server answer made a long session's cost grow with its square).
//!
//! An answer answers a listing when the id texts are the same bytes, or when both ids have
//! readings and some reading is shared (`IdKeys::matches`: the decoded string, JavaScript's
//! `Number(…)`, Python's integer). Each listing is indexed under its bytes and under each of its
//! readings; the answer's bytes and readings are looked up, and the oldest listing found is the
//! one it answers — the same listing a walk from the oldest would find first.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::Hash;

use super::rpc_id::IdKeys;

/// One pending listing request, and what it asks (`K`: the caller's kind of request).
pub(super) struct Listed<K> {
    /// Its id text as the client wrote it (surrounding whitespace trimmed).
    pub(super) raw: Box<[u8]>,
    pub(super) kind: K,
    /// Its id's readings (`None`: an id that matches nothing but its own bytes).
    keys: Option<IdKeys>,
}

/// Pending listings by age (a number that only grows), and the four indexes.
pub(super) struct PendingLists<K> {
    entries: BTreeMap<u64, Listed<K>>,
    next: u64,
    by_raw: HashMap<Box<[u8]>, BTreeSet<u64>>,
    by_text: HashMap<Box<str>, BTreeSet<u64>>,
    by_js: HashMap<u64, BTreeSet<u64>>,
    by_py: HashMap<Box<str>, BTreeSet<u64>>,
}

fn insert<K: Hash + Eq>(index: &mut HashMap<K, BTreeSet<u64>>, key: K, age: u64) {
    index.entry(key).or_default().insert(age);
}

fn remove<K: Hash + Eq + ?Sized, Q>(index: &mut HashMap<Q, BTreeSet<u64>>, key: &K, age: u64)
where
    Q: std::borrow::Borrow<K> + Hash + Eq,
{
    if let Some(ages) = index.get_mut(key) {
        ages.remove(&age);
        if ages.is_empty() {
            index.remove(key);
        }
    }
}

/// The oldest age filed under `key`.
fn oldest<K: Hash + Eq + ?Sized, Q>(index: &HashMap<Q, BTreeSet<u64>>, key: &K) -> Option<u64>
where
    Q: std::borrow::Borrow<K> + Hash + Eq,
{
    index.get(key).and_then(|ages| ages.first().copied())
}

impl<K> Default for PendingLists<K> {
    fn default() -> Self {
        PendingLists {
            entries: BTreeMap::new(),
            next: 0,
            by_raw: HashMap::new(),
            by_text: HashMap::new(),
            by_js: HashMap::new(),
            by_py: HashMap::new(),
        }
    }
}

impl<K> PendingLists<K> {
    /// How many listings are pending.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is pending.
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A listing request with id text `raw` is about to be forwarded.
    pub(super) fn push(&mut self, raw: &[u8], kind: K) {
        let age = self.next;
        self.next += 1;
        let keys = std::str::from_utf8(raw).ok().and_then(IdKeys::of_json);
        insert(&mut self.by_raw, Box::from(raw), age);
        if let Some(k) = &keys {
            let (text, js, py) = k.readings();
            if let Some(t) = text {
                insert(&mut self.by_text, Box::from(t), age);
            }
            if let Some(j) = js {
                insert(&mut self.by_js, j, age);
            }
            if let Some(p) = py {
                insert(&mut self.by_py, Box::from(p), age);
            }
        }
        self.entries.insert(
            age,
            Listed {
                raw: Box::from(raw),
                kind,
                keys,
            },
        );
    }

    /// The age of the oldest listing an answer with id text `text` (and readings `keys`)
    /// answers.
    pub(super) fn find(&self, text: &[u8], keys: Option<&IdKeys>) -> Option<u64> {
        let mut found = oldest(&self.by_raw, text);
        if let Some(k) = keys {
            let (t, j, p) = k.readings();
            for age in [
                t.and_then(|t| oldest(&self.by_text, t)),
                j.and_then(|j| oldest(&self.by_js, &j)),
                p.and_then(|p| oldest(&self.by_py, p)),
            ]
            .into_iter()
            .flatten()
            {
                found = Some(found.map_or(age, |f| f.min(age)));
            }
        }
        found
    }

    /// Forgets the listing of this age.
    pub(super) fn remove(&mut self, age: u64) -> Option<Listed<K>> {
        let listed = self.entries.remove(&age)?;
        remove(&mut self.by_raw, &*listed.raw, age);
        if let Some(k) = &listed.keys {
            let (text, js, py) = k.readings();
            if let Some(t) = text {
                remove(&mut self.by_text, t, age);
            }
            if let Some(j) = js {
                remove(&mut self.by_js, &j, age);
            }
            if let Some(p) = py {
                remove(&mut self.by_py, p, age);
            }
        }
        Some(listed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The walk the index replaces: the oldest listing whose bytes are the answer's, or whose
    /// readings match.
    fn walk(ids: &[(u64, String)], text: &str) -> Option<u64> {
        let theirs = IdKeys::of_json(text);
        ids.iter()
            .find(|(_, raw)| {
                raw.as_bytes() == text.as_bytes()
                    || match (IdKeys::of_json(raw), &theirs) {
                        (Some(ours), Some(theirs)) => ours.matches(theirs),
                        _ => false,
                    }
            })
            .map(|(age, _)| *age)
    }

    fn id() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9]{1,3}",
            "[0-9]{1,2}\\.0",
            "\"[0-9a-c]{1,3}\"",
            "\" ?[0-9]{1,2}\"",
            "\"0_[0-9]\"",
            Just("true".to_string()),
            Just("false".to_string()),
            Just("null".to_string()),
            Just("1e0".to_string()),
            Just("\"\\u0031\"".to_string()),
            Just("-0".to_string()),
            Just("{}".to_string()),
        ]
    }

    proptest! {
        /// The index finds exactly the listing the walk finds, as listings come and go.
        #[test]
        fn the_index_finds_what_the_walk_finds(
            pending in prop::collection::vec(id(), 0..12),
            answers in prop::collection::vec(id(), 1..12),
        ) {
            let mut lists = PendingLists::<()>::default();
            let mut model: Vec<(u64, String)> = Vec::new();
            for (age, raw) in pending.iter().enumerate() {
                lists.push(raw.as_bytes(), ());
                model.push((age as u64, raw.clone()));
            }
            for text in &answers {
                let want = walk(&model, text);
                let keys = IdKeys::of_json(text);
                let got = lists.find(text.as_bytes(), keys.as_ref());
                prop_assert_eq!(got, want, "answer {}", text);
                if let Some(age) = got {
                    let gone = lists.remove(age).map(|l| l.raw.to_vec());
                    let at = model.iter().position(|(a, _)| *a == age).unwrap();
                    let (_, raw) = model.remove(at);
                    prop_assert_eq!(gone, Some(raw.into_bytes()));
                }
                prop_assert_eq!(lists.len(), model.len());
            }
        }
    }
}
