//! The repeat counts of `limits.repeated_call` (SPEC §5.2): how many times a session made each
//! call, a call being a tool name with its `arguments_sha256` (or with none: a call without
//! readable arguments is a key of its own).
//!
//! The common case costs one keyed hash of the tool name and one of the digest's first 8 bytes
//! (`place_hash`; the whole digest is compared): the first [`NAMED_TOOLS`] tools whose names are
//! at most [`NAMED_TOOL_BYTES`] long get a map of their own, keyed by the raw digest. Any other
//! tool (a longer name, or one first counted once that many tools are named) is counted under
//! the SHA-256 of its name and digest, 32 bytes whatever the name, so a client inventing long
//! tool names cannot make the counts hold more than their bound of keys
//! ([`super::MAX_REPEAT_KEYS`]) times a fixed size. A tool's place is fixed by its first counted
//! call (names never leave the named map), so every pair is counted in exactly one place. The
//! maps keep std's keyed SipHash: their keys are the client's.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use hashbrown::hash_table::{Entry, HashTable};

use crate::sha256::HexDigest;

/// Tools counted by name, at most.
pub(super) const NAMED_TOOLS: usize = 64;

/// The longest tool name counted by name.
pub(super) const NAMED_TOOL_BYTES: usize = 64;

/// The counts of one named tool.
#[derive(Debug, Clone, Default)]
struct ToolCounts {
    /// By the raw arguments digest.
    by_arguments: Counts,
    /// Calls without readable arguments (0: none counted yet).
    unread: u64,
}

/// A session's repeat counts. Every count held is at least 1.
#[derive(Debug, Clone, Default)]
pub(super) struct RepeatCounts {
    /// Where each named tool's counts are in `counts` (a place never changes).
    named: HashMap<String, usize>,
    counts: Vec<ToolCounts>,
    /// Tools not named: by the SHA-256 of the tool name and its hex digest.
    hashed: Counts,
    /// Distinct calls counted, in both maps.
    keys: usize,
}

/// Why a call is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// The call was made `max` times already.
    Repeated,
    /// A call not counted yet, with `max_keys` calls counted.
    Full,
}

/// The SHA-256 key of a call of a tool not named: of the tool, then NUL and the 64 hex digits
/// of its digest, or `\x01` without one.
pub(super) fn hashed_key(tool: &str, arguments_sha256: Option<&HexDigest>) -> [u8; 32] {
    let mut h = crate::sha256::Sha256::new();
    h.update(tool.as_bytes());
    match arguments_sha256 {
        Some(d) => {
            h.update(b"\0");
            h.update(d.as_bytes());
        }
        None => h.update(b"\x01"),
    }
    h.finalize()
}

/// Counts by 32-byte key, kept compact: the hash table holds only where each key's count is
/// (4 bytes a key), the keys and counts sit side by side in the order first counted. A lookup
/// reads a small table and one entry, where a table of the keys themselves (40 bytes a key,
/// 650 KiB for 10,000 keys) left the cache between two calls of a session that streams its
/// lines through it (docs/decisions.md, "Compact repeat counts").
#[derive(Debug, Clone, Default)]
struct Counts {
    /// Where each key's entry is in `entries`.
    index: HashTable<u32>,
    /// Every key counted and its count, in the order first counted.
    entries: Vec<([u8; 32], u64)>,
    /// std's keyed SipHash: the keys are the client's.
    hasher: RandomState,
}

impl Counts {
    /// Applies `judge` to the count of `key` (0 when not counted yet); a key not counted yet is
    /// kept only when `judge` admits it.
    fn bump(
        &mut self,
        key: &[u8; 32],
        judge: impl FnOnce(&mut u64) -> Result<(), Refused>,
    ) -> Result<(), Refused> {
        if self.index.len() == self.index.capacity() {
            self.grow();
        }
        let entries = &mut self.entries;
        let hasher = &self.hasher;
        let found = self.index.entry(
            place_hash(hasher, key),
            |&i| entries.get(i as usize).is_some_and(|(k, _)| k == key),
            place_of(entries, hasher),
        );
        match found {
            // An index always names its entry (entries are pushed with their index); were
            // one not to, the call is refused, never counted elsewhere.
            Entry::Occupied(o) => match entries.get_mut(*o.get() as usize) {
                Some((_, n)) => judge(n),
                None => Err(Refused::Full),
            },
            Entry::Vacant(v) => {
                let Ok(at) = u32::try_from(entries.len()) else {
                    return Err(Refused::Full);
                };
                let mut n = 0;
                judge(&mut n)?;
                v.insert(at);
                entries.push((*key, n));
                Ok(())
            }
        }
    }

    /// A table of places twice as large, filled by walking the entries in the order they were
    /// counted. Growing the table in place would visit its places in table order and read each
    /// place's entry for its hash: a read anywhere in the entries for every key, once per
    /// doubling (docs/decisions.md, "Repeat counts grow in the order first counted").
    fn grow(&mut self) {
        let hasher = &self.hasher;
        let entries = &self.entries;
        let mut index = HashTable::with_capacity(self.index.capacity().saturating_mul(2).max(4));
        for (at, (key, _)) in entries.iter().enumerate() {
            // Every entry's place fits (a key is counted only then); were one not to, the table
            // is left as it is, and grows in place.
            let Ok(at) = u32::try_from(at) else { return };
            // Room for every entry was made: the new table does not grow while it is filled.
            index.insert_unique(place_hash(hasher, key), at, place_of(entries, hasher));
        }
        self.index = index;
    }
}

/// Where the entry an index names goes in a table (what a table asks of its places when it
/// moves them).
fn place_of<'e>(
    entries: &'e [([u8; 32], u64)],
    hasher: &'e RandomState,
) -> impl Fn(&u32) -> u64 + 'e {
    move |&i| {
        entries
            .get(i as usize)
            .map_or(0, |(k, _)| place_hash(hasher, k))
    }
}

/// Where `key` goes in a table: std's keyed SipHash of its first 8 bytes. Every key is a
/// SHA-256 digest (of the client's arguments, or of a tool name and such a digest): only keys
/// that share those 8 bytes share a place whatever the secret key, and a client that grinds
/// arguments for them needs some 2^58 digests for ten such keys; a lookup still compares the
/// whole key. Hashing 8 bytes instead of 32 (and the slice's length) costs under half as much,
/// on every call and for every key each time the table grows.
fn place_hash(hasher: &RandomState, key: &[u8; 32]) -> u64 {
    let [b0, b1, b2, b3, b4, b5, b6, b7, ..] = *key;
    hasher.hash_one(u64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]))
}

/// Judges one more call against its count `n` (0: not counted yet) and counts it when
/// admitted.
fn bump(n: &mut u64, keys: &mut usize, max: u64, max_keys: usize) -> Result<(), Refused> {
    if *n == 0 {
        if *keys >= max_keys {
            return Err(Refused::Full);
        }
        *keys += 1;
    } else if *n >= max {
        return Err(Refused::Repeated);
    }
    *n = n.saturating_add(1);
    Ok(())
}

impl RepeatCounts {
    /// Judges one more call of `tool` with `arguments_sha256` against `max` repeats and
    /// `max_keys` distinct calls, and counts it when admitted. A refused call is not counted
    /// (nor is a key made for it). `slot`: where `tool`'s counts are, when the caller knows
    /// (what an earlier call of the same tool returned), so its name is not looked up again.
    /// Returns where `tool`'s counts are when it is counted by name.
    pub(super) fn admit(
        &mut self,
        tool: &str,
        slot: Option<usize>,
        arguments_sha256: Option<&HexDigest>,
        max: u64,
        max_keys: usize,
    ) -> Result<Option<usize>, Refused> {
        let keys = &mut self.keys;
        let slot = slot.or_else(|| self.named.get(tool).copied());
        if let Some(counts) = slot.and_then(|i| self.counts.get_mut(i)) {
            match arguments_sha256 {
                Some(d) => counts
                    .by_arguments
                    .bump(d.raw(), |n| bump(n, keys, max, max_keys))?,
                None => bump(&mut counts.unread, keys, max, max_keys)?,
            }
            return Ok(slot);
        }
        if tool.len() <= NAMED_TOOL_BYTES && self.named.len() < NAMED_TOOLS {
            let mut counts = ToolCounts::default();
            match arguments_sha256 {
                Some(d) => counts
                    .by_arguments
                    .bump(d.raw(), |n| bump(n, keys, max, max_keys))?,
                None => bump(&mut counts.unread, keys, max, max_keys)?,
            }
            self.counts.push(counts);
            let at = self.counts.len() - 1;
            self.named.insert(tool.to_owned(), at);
            return Ok(Some(at));
        }
        let key = hashed_key(tool, arguments_sha256);
        self.hashed.bump(&key, |n| bump(n, keys, max, max_keys))?;
        Ok(None)
    }
}

#[cfg(test)]
impl RepeatCounts {
    /// Distinct calls counted.
    pub(super) fn keys(&self) -> usize {
        self.keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u32) -> [u8; 32] {
        *crate::sha256::HexDigest::of(&n.to_le_bytes()).raw()
    }

    /// Thousands of keys, across every growth of the table: each counted exactly, each refused
    /// once at its maximum, none counted twice or in another's place.
    #[test]
    fn many_keys_are_each_counted_exactly() {
        let mut counts = Counts::default();
        let mut keys = 0;
        for round in 1..=3u64 {
            for n in 0..5_000 {
                let judged = counts.bump(&key(n), |c| bump(c, &mut keys, 3, 10_000));
                assert_eq!(judged, Ok(()), "key {n}, round {round}");
            }
        }
        assert_eq!(keys, 5_000);
        for n in 0..5_000 {
            let judged = counts.bump(&key(n), |c| bump(c, &mut keys, 3, 10_000));
            assert_eq!(judged, Err(Refused::Repeated), "key {n}");
        }
        assert!(counts.entries.iter().all(|&(_, c)| c == 3));
        assert_eq!(counts.entries.len(), 5_000);
    }

    /// Keys that share the 8 bytes their place is hashed from share a place and are still
    /// counted apart: the whole key decides.
    #[test]
    fn keys_sharing_their_first_bytes_are_counted_apart() {
        let mut counts = Counts::default();
        let mut keys = 0;
        let mut a = key(1);
        let mut b = a;
        b[31] ^= 1;
        a[8] ^= 0x80;
        for _ in 0..2 {
            assert_eq!(counts.bump(&a, |c| bump(c, &mut keys, 2, 10)), Ok(()));
        }
        assert_eq!(
            counts.bump(&a, |c| bump(c, &mut keys, 2, 10)),
            Err(Refused::Repeated)
        );
        assert_eq!(counts.bump(&b, |c| bump(c, &mut keys, 2, 10)), Ok(()));
        assert_eq!(
            place_hash(&counts.hasher, &a),
            place_hash(&counts.hasher, &b)
        );
        assert_eq!(counts.entries, vec![(a, 2), (b, 1)]);
        assert_eq!(keys, 2);
    }

    /// A key refused before it is counted (the bound of distinct calls) leaves nothing behind:
    /// no entry, no index, and a later admitted key takes the next place.
    #[test]
    fn a_refused_new_key_is_not_kept() {
        let mut counts = Counts::default();
        let mut keys = 0;
        assert_eq!(counts.bump(&key(1), |c| bump(c, &mut keys, 5, 1)), Ok(()));
        assert_eq!(
            counts.bump(&key(2), |c| bump(c, &mut keys, 5, 1)),
            Err(Refused::Full)
        );
        assert_eq!(counts.entries.len(), 1);
        assert_eq!(counts.index.len(), 1);
        assert_eq!(counts.bump(&key(2), |c| bump(c, &mut keys, 5, 2)), Ok(()));
        assert_eq!(counts.bump(&key(1), |c| bump(c, &mut keys, 5, 2)), Ok(()));
        assert_eq!(counts.entries, vec![(key(1), 2), (key(2), 1)]);
    }
}
