//! The keys seen so far in one open object, for duplicate-key detection.
//!
//! A key is held as the offset and length of its raw JSON text (between the quotes, escapes
//! included) in the scanned text, so a key set borrows nothing and the scanner reuses its sets
//! from one text to the next. Keys are compared after decoding: exactly, or after lenient
//! normalization (SPEC §3 item 6).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};

/// One key of the text being scanned: where its raw text lies, and whether it is plain (ASCII
/// without escapes: compared bytewise, no decoding).
#[derive(Clone, Copy)]
pub(super) struct Key {
    start: usize,
    len: usize,
    plain: bool,
    /// For a plain key, its first four bytes (ASCII-lowercased when `lenient`), zero-padded:
    /// most keys of one object differ there, so they are told apart without reading the text.
    head: u32,
}

impl Key {
    /// The key whose raw text is `raw`, at byte `start` of the text.
    pub(super) fn new(start: usize, raw: &[u8], plain: bool, lenient: bool) -> Self {
        let head = if plain { head_of(raw, lenient) } else { 0 };
        Key {
            start,
            len: raw.len(),
            plain,
            head,
        }
    }

    fn raw(self, text: &str) -> &str {
        text.get(self.start..self.start + self.len).unwrap_or("")
    }

    /// Whether `self` and `other` (keys of `text`) are the same key.
    fn same(self, other: Key, text: &str, lenient: bool) -> bool {
        if self.plain && other.plain {
            // No escapes and no NUL (JSON forbids it raw); folding ASCII is ASCII case.
            let bytes = text.as_bytes();
            let (Some(a), Some(b)) = (
                bytes.get(self.start..self.start + self.len),
                bytes.get(other.start..other.start + other.len),
            ) else {
                return false;
            };
            return a.len() == b.len()
                && if lenient {
                    a.eq_ignore_ascii_case(b)
                } else {
                    a == b
                };
        }
        let (a, b) = (self.raw(text), other.raw(text));
        if lenient {
            crate::lenient::same_key(a, b)
        } else {
            crate::lenient::Decoded::new(a).eq(crate::lenient::Decoded::new(b))
        }
    }

    fn hash(self, text: &str, lenient: bool, state: &RandomState) -> u64 {
        let raw = self.raw(text);
        let mut h = state.build_hasher();
        if lenient {
            crate::lenient::hash_key(raw, &mut h);
        } else {
            for c in crate::lenient::Decoded::new(raw) {
                c.hash(&mut h);
            }
        }
        h.finish()
    }
}

/// The first four bytes of a plain (ASCII) key as a little-endian word, zero-padded, with
/// `A`–`Z` lowered when `lenient`.
#[inline]
fn head_of(raw: &[u8], lenient: bool) -> u32 {
    let head = match *raw {
        [] => 0,
        [a] => u32::from(a),
        [a, b] => u32::from_le_bytes([a, b, 0, 0]),
        [a, b, c] => u32::from_le_bytes([a, b, c, 0]),
        [a, b, c, d, ..] => u32::from_le_bytes([a, b, c, d]),
    };
    if !lenient {
        return head;
    }
    // Per byte (all below 0x80, so no carry crosses a byte): the high bit of `b + 0x3f` is set
    // from `A` up, that of `b + 0x25` from `[` up; where only the first is, add 0x20.
    let upper = (head.wrapping_add(0x3f3f_3f3f) & !head.wrapping_add(0x2525_2525)) & 0x8080_8080;
    head | (upper >> 2)
}

/// A key of the inline array: 32-bit offset and length (the text fits 4 GiB), 16 bytes.
#[derive(Clone, Copy)]
pub(super) struct SmallKey {
    start: u32,
    len: u32,
    head: u32,
    plain: bool,
}

impl SmallKey {
    fn key(self) -> Key {
        Key {
            start: self.start as usize,
            len: self.len as usize,
            plain: self.plain,
            head: self.head,
        }
    }

    /// [`Key::same`], telling most plain keys apart by length and head alone.
    fn same(self, key: Key, text: &str, lenient: bool) -> bool {
        if self.plain && key.plain {
            if self.len as usize != key.len || self.head != key.head {
                return false;
            }
            if key.len <= 4 {
                return true;
            }
        }
        self.key().same(key, text, lenient)
    }
}

/// Filler for unused inline slots (never compared: only `keys[..len]` is).
const NO_KEY: SmallKey = SmallKey {
    start: 0,
    len: 0,
    head: 0,
    plain: true,
};

const SMALL_KEYS: usize = 16;

/// The keys seen so far in one open object. Small objects use an inline array (a linear search
/// is faster than hashing for the handful of keys a JSON-RPC message has); large ones switch to
/// a hash table so a hostile object with many keys stays linear overall. Recording or comparing
/// a key never allocates, and the large table holds only each key's offset and length in the
/// input (8 bytes), so a maximal line of tiny keys stays within the memory bound (SPEC §3 item
/// 6: at most 4× `max_line_bytes`).
// The inline variant is the point: one set per nesting level lives in the scanner's reused
// buffers, and the objects of a message never allocate.
#[allow(clippy::large_enum_variant)]
pub(super) enum KeySet {
    /// Up to `SMALL_KEYS` keys held inline: no allocation for the objects of a JSON-RPC message.
    /// Only for texts whose offsets fit 32 bits.
    Small {
        keys: [SmallKey; SMALL_KEYS],
        len: usize,
    },
    Large(Box<LargeKeys<u32>>),
    /// Texts beyond 4 GiB, whose offsets do not fit 32 bits.
    Huge(Box<LargeKeys<usize>>),
}

impl KeySet {
    pub(super) fn new() -> Self {
        KeySet::Small {
            keys: [NO_KEY; SMALL_KEYS],
            len: 0,
        }
    }

    /// Empties the set for a new object of a text of `text_len` bytes.
    pub(super) fn clear(&mut self, text_len: usize) {
        if u32::try_from(text_len).is_err() {
            *self = KeySet::Huge(Box::new(LargeKeys::new(0)));
            return;
        }
        match self {
            KeySet::Small { len, .. } => *len = 0,
            _ => *self = KeySet::new(),
        }
    }

    /// Gives back the memory of a large set (the scan is over).
    pub(super) fn release(&mut self) {
        if !matches!(self, KeySet::Small { .. }) {
            *self = KeySet::new();
        }
    }

    /// Inserts `key` (of `text`); returns false when it was already present.
    #[inline(always)]
    pub(super) fn insert(&mut self, key: Key, text: &str, lenient: bool) -> bool {
        match self {
            KeySet::Small { keys, len } => {
                let held = keys.get(..*len).unwrap_or(&[]);
                if held.iter().any(|k| k.same(key, text, lenient)) {
                    return false;
                }
                let (Ok(start), Ok(key_len)) = (u32::try_from(key.start), u32::try_from(key.len))
                else {
                    // `clear` made this set `Huge` for such a text.
                    return false;
                };
                if let Some(slot) = keys.get_mut(*len) {
                    *slot = SmallKey {
                        start,
                        len: key_len,
                        head: key.head,
                        plain: key.plain,
                    };
                    *len += 1;
                    return true;
                }
                let mut large = Box::new(LargeKeys::new(SMALL_KEYS * 2));
                for k in keys.iter() {
                    large.insert(k.key(), text, lenient);
                }
                let fresh = large.insert(key, text, lenient);
                *self = KeySet::Large(large);
                fresh
            }
            KeySet::Large(l) => l.insert(key, text, lenient),
            KeySet::Huge(l) => l.insert(key, text, lenient),
        }
    }
}

/// An offset type of the large table.
pub(super) trait Offset: Copy {
    fn from_usize(n: usize) -> Option<Self>;
    fn to_usize(self) -> usize;
}

impl Offset for u32 {
    fn from_usize(n: usize) -> Option<Self> {
        u32::try_from(n).ok()
    }
    fn to_usize(self) -> usize {
        self as usize
    }
}

impl Offset for usize {
    fn from_usize(n: usize) -> Option<Self> {
        Some(n)
    }
    fn to_usize(self) -> usize {
        self
    }
}

/// The keys of a large object: offset and length of each in the text.
pub(super) struct LargeKeys<O> {
    table: hashbrown::HashTable<(O, O)>,
    state: RandomState,
}

impl<O: Offset> LargeKeys<O> {
    fn new(capacity: usize) -> Self {
        LargeKeys {
            table: hashbrown::HashTable::with_capacity(capacity),
            state: RandomState::new(),
        }
    }

    fn insert(&mut self, key: Key, text: &str, lenient: bool) -> bool {
        let at = |&(start, len): &(O, O)| {
            let (start, len) = (start.to_usize(), len.to_usize());
            let raw = text.get(start..start + len).unwrap_or("");
            // `same` reads no head.
            Key {
                start,
                len,
                plain: raw.is_ascii() && !raw.contains('\\'),
                head: 0,
            }
        };
        let hash = key.hash(text, lenient, &self.state);
        if self
            .table
            .find(hash, |e| at(e).same(key, text, lenient))
            .is_some()
        {
            return false;
        }
        let (Some(start), Some(len)) = (O::from_usize(key.start), O::from_usize(key.len)) else {
            return false;
        };
        let state = &self.state;
        self.table
            .insert_unique(hash, (start, len), |e| at(e).hash(text, lenient, state));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::head_of;

    /// The byte-by-byte definition `head_of` computes a word at a time.
    fn reference(raw: &[u8], lenient: bool) -> u32 {
        let mut head = 0u32;
        for (i, &b) in raw.iter().take(4).enumerate() {
            let b = if lenient { b.to_ascii_lowercase() } else { b };
            head |= u32::from(b) << (8 * i);
        }
        head
    }

    #[test]
    fn head_is_the_first_four_bytes_lowered_when_lenient() {
        for b in 0u8..0x80 {
            for len in 0..6 {
                for at in 0..len {
                    let mut raw = b"aZ@["
                        .iter()
                        .cycle()
                        .take(len)
                        .copied()
                        .collect::<Vec<_>>();
                    raw[at] = b;
                    for lenient in [false, true] {
                        assert_eq!(head_of(&raw, lenient), reference(&raw, lenient), "{raw:?}");
                    }
                }
            }
        }
    }
}
