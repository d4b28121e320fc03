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

/// Counts by 32-byte key, kept compact: a table of 4-byte places, each naming where its key's
/// entry is, and the keys and counts side by side in the order first counted. A lookup reads
/// one place (one cache line: the places it probes sit side by side) and one entry, where a
/// table of the keys themselves (40 bytes a key, 650 KiB for 10,000 keys) left the cache
/// between two calls of a session that streams its lines through it, and a table with its
/// control bytes apart from its places read two lines (docs/decisions.md, "Compact repeat
/// counts", "Repeat counts in one table of places").
#[derive(Debug, Clone, Default)]
struct Counts {
    /// Open addressing, linear probing, a power of two long (or empty), at most three quarters
    /// full: 0 is a free place; otherwise [`TAG_SHIFT`] bits of the key's place hash above
    /// where its entry is in `entries`, plus one.
    places: Vec<u32>,
    /// Every key counted and its count, in the order first counted.
    entries: Vec<([u8; 32], u64)>,
    /// std's keyed SipHash: the keys are the client's.
    hasher: RandomState,
}

/// A place holds its entry's position plus one in its low bits, below the key's tag.
const TAG_SHIFT: u32 = 17;

/// A place's low bits: the entry's position plus one.
const POSITION: u32 = (1 << TAG_SHIFT) - 1;

/// Entries a table of places can name: positions plus one up to [`POSITION`].
const MAX_ENTRIES: usize = POSITION as usize;

/// Where a key is, or would go.
enum Found {
    /// Its entry's position in `entries`.
    At(usize),
    /// Not counted: the free place it would take.
    Free(usize),
}

impl Counts {
    /// Applies `judge` to the count of `key` (0 when not counted yet); a key not counted yet is
    /// kept only when `judge` admits it.
    fn bump(
        &mut self,
        key: &[u8; 32],
        judge: impl FnOnce(&mut u64) -> Result<(), Refused>,
    ) -> Result<(), Refused> {
        // Room for one more key keeps the table at most three quarters full.
        if (self.entries.len() + 1) * 4 > self.places.len() * 3 {
            self.grow();
        }
        let hash = place_hash(&self.hasher, key);
        match find(&self.places, &self.entries, hash, key) {
            // A place always names its entry (entries are pushed with their place); were one
            // not to, or were the table not to have a free place, the call is refused, never
            // counted elsewhere.
            Some(Found::At(at)) => match self.entries.get_mut(at) {
                Some((_, n)) => judge(n),
                None => Err(Refused::Full),
            },
            Some(Found::Free(place)) => {
                let at = self.entries.len();
                if at >= MAX_ENTRIES {
                    return Err(Refused::Full);
                }
                let mut n = 0;
                judge(&mut n)?;
                let Some(free) = self.places.get_mut(place) else {
                    return Err(Refused::Full);
                };
                *free = place_value(hash, at);
                self.entries.push((*key, n));
                Ok(())
            }
            None => Err(Refused::Full),
        }
    }

    /// A table of places twice as large, filled by walking the entries in the order they were
    /// counted: reading the old table in its order would read an entry anywhere for every key,
    /// once per doubling (docs/decisions.md, "Repeat counts grow in the order first counted").
    fn grow(&mut self) {
        let mut places = vec![0u32; self.places.len().saturating_mul(2).max(16)];
        for (at, (key, _)) in self.entries.iter().enumerate() {
            let hash = place_hash(&self.hasher, key);
            // A new table has a free place for every entry: they fill at most three eighths.
            if let Some(Found::Free(place)) = find(&places, &[], hash, key) {
                if let Some(free) = places.get_mut(place) {
                    *free = place_value(hash, at);
                }
            }
        }
        self.places = places;
    }
}

/// The tag of a key's place hash: its top bits, above an entry's position.
fn tag(hash: u64) -> u32 {
    (hash >> (64 - (32 - TAG_SHIFT))) as u32
}

/// What a place holds for the entry at `at` whose key has `hash`.
fn place_value(hash: u64, at: usize) -> u32 {
    (tag(hash) << TAG_SHIFT) | ((at as u32 + 1) & POSITION)
}

/// Where `key` (whose place hash is `hash`) is in `places`, or the free place it would take,
/// probing from its home place one place at a time; `None` when the table has no free place
/// (an empty table). `entries` are the keys the places name (none while a table is filled).
fn find(places: &[u32], entries: &[([u8; 32], u64)], hash: u64, key: &[u8; 32]) -> Option<Found> {
    let mask = places.len().checked_sub(1)?;
    let tag = tag(hash);
    let mut place = hash as usize & mask;
    for _ in 0..places.len() {
        let held = *places.get(place)?;
        if held == 0 {
            return Some(Found::Free(place));
        }
        if held >> TAG_SHIFT == tag {
            let at = ((held & POSITION) as usize).wrapping_sub(1);
            if entries.get(at).is_some_and(|(k, _)| k == key) {
                return Some(Found::At(at));
            }
        }
        place = (place + 1) & mask;
    }
    None
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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Counted against a map of whole keys, call by call, across every growth of the
        /// table up to thousands of keys: the same verdicts, the same counts, no key lost.
        #[test]
        fn counts_as_a_map_of_whole_keys_does(
            calls in proptest::collection::vec(0..2_500u32, 1..6_000),
            max in 1..4u64,
            max_keys in proptest::prop_oneof![1..3_000usize, proptest::strategy::Just(usize::MAX)],
        ) {
            let mut counts = Counts::default();
            let mut keys = 0;
            let mut oracle = std::collections::HashMap::new();
            for n in calls {
                let k = key(n);
                let got = counts.bump(&k, |c| bump(c, &mut keys, max, max_keys));
                let seen = oracle.get(&k).copied().unwrap_or(0u64);
                let want = if seen == 0 && oracle.len() >= max_keys {
                    Err(Refused::Full)
                } else if seen >= max {
                    Err(Refused::Repeated)
                } else {
                    oracle.insert(k, seen + 1);
                    Ok(())
                };
                proptest::prop_assert_eq!(got, want, "key {}", n);
            }
            proptest::prop_assert_eq!(counts.entries.len(), oracle.len());
            for (k, n) in &counts.entries {
                proptest::prop_assert_eq!(oracle.get(k), Some(n));
            }
        }
    }

    /// A probe goes on past places of other tags and past a place of its own tag whose entry
    /// holds another key, wrapping from the table's last place to its first; it stops at the
    /// first free place, and finds the key at its place wherever the probe reached it.
    #[test]
    fn probes_wrap_and_compare_whole_keys() {
        let (a, b) = (key(1), key(2));
        // Home place 15 of 16, tag 3.
        let hash = (3u64 << (64 - (32 - TAG_SHIFT))) | 15;
        let mut places = vec![0u32; 16];
        places[15] = place_value(hash ^ (1 << 63), 0); // another tag
        places[0] = place_value(hash, 1); // this tag, entry 1 holds `b`
        let entries = vec![(b, 1), (b, 1)];
        assert!(matches!(
            find(&places, &entries, hash, &a),
            Some(Found::Free(1))
        ));
        places[1] = place_value(hash, 2);
        let entries = vec![(b, 1), (b, 1), (a, 1)];
        assert!(matches!(
            find(&places, &entries, hash, &a),
            Some(Found::At(2))
        ));
        assert!(matches!(
            find(&places, &entries, hash, &b),
            Some(Found::At(1))
        ));
        // A table without a free place, and an empty one, answer nothing.
        assert!(find(&[place_value(hash, 0)], &entries, hash, &a).is_none());
        assert!(find(&[], &entries, hash, &a).is_none());
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
        assert_eq!(counts.places.iter().filter(|&&p| p != 0).count(), 1);
        assert_eq!(counts.bump(&key(2), |c| bump(c, &mut keys, 5, 2)), Ok(()));
        assert_eq!(counts.bump(&key(1), |c| bump(c, &mut keys, 5, 2)), Ok(()));
        assert_eq!(counts.entries, vec![(key(1), 2), (key(2), 1)]);
    }
}
