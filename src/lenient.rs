//! Lenient key normalization (SPEC §3 item 6): what "the same key" means to the most lenient
//! parser an MCP server may use.
//!
//! Two object keys are the same when they are equal after *lenient normalization*: trailing
//! U+0000 removed (segmentio/encoding, GHSA-q382-vc8q-7jhj), then every character replaced by
//! the representative of its simple case-folding class (Go's `encoding/json` matches keys with
//! `unicode.SimpleFold` orbits, so `ſ` = `s` and `K` (Kelvin) = `k`; .NET's ordinal-ignore-case
//! compares simple uppercase mappings). The classes are the connected components of Go's
//! `SimpleFold`, `ToUpper` and `ToLower` edges and of Rust's single-character case mappings, so
//! two keys any of these parsers matches are equal here (a few more pairs are equal here than in
//! any one of them, e.g. `ı` and `i`: the rule fails closed). The table is generated and checked
//! against the real Go toolchain by `tests/lenient_fold.rs`; see docs/decisions.md.
//!
//! Keys are compared straight from their JSON text (escapes decoded on the fly), so comparing
//! or hashing a key never allocates.
#![forbid(unsafe_code)]

use std::hash::{Hash, Hasher};

use crate::lenient_table::FOLD;

/// The representative of `c`'s case-folding class: the ASCII lowercase letter when the class
/// holds one, else its lowest code point.
pub fn fold(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let cp = c as u32;
    match FOLD.binary_search_by_key(&cp, |&(from, _)| from) {
        Ok(i) => FOLD
            .get(i)
            .and_then(|&(_, to)| char::from_u32(to))
            .unwrap_or(c),
        Err(_) => c,
    }
}

/// The checked-in folding table (code point → representative, only where they differ).
pub fn fold_table() -> &'static [(u32, u32)] {
    &FOLD
}

/// The characters of a JSON string's contents (the text between the quotes, escapes included),
/// decoded. The text must have passed the strict scan: escapes are well-formed and surrogates
/// paired.
#[derive(Clone)]
pub(crate) struct Decoded<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Decoded<'a> {
    pub(crate) fn new(raw: &'a str) -> Self {
        Decoded { s: raw, i: 0 }
    }

    fn hex4(&self, at: usize) -> u32 {
        self.s
            .get(at..at + 4)
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .unwrap_or(0xFFFD)
    }
}

impl Iterator for Decoded<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        let rest = self.s.get(self.i..)?;
        let c = rest.chars().next()?;
        if c != '\\' {
            self.i += c.len_utf8();
            return Some(c);
        }
        let e = rest.as_bytes().get(1).copied().unwrap_or(b'\\');
        self.i += 2;
        Some(match e {
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = self.hex4(self.i);
                self.i += 4;
                let cp = if (0xD800..0xDC00).contains(&hi) {
                    let lo = self.hex4(self.i + 2);
                    self.i += 6;
                    0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF)
                } else {
                    hi
                };
                char::from_u32(cp).unwrap_or('\u{FFFD}')
            }
            other => char::from(other),
        })
    }
}

/// Whether the raw JSON string contents `raw` decode to exactly `name`.
pub(crate) fn decodes_to(raw: &str, name: &str) -> bool {
    if !raw.contains('\\') {
        return raw == name;
    }
    Decoded::new(raw).eq(name.chars())
}

/// Whether two character sequences are equal after lenient normalization.
fn lenient_eq_chars(mut a: impl Iterator<Item = char>, mut b: impl Iterator<Item = char>) -> bool {
    loop {
        match (a.next(), b.next()) {
            (Some(x), Some(y)) => {
                if fold(x) != fold(y) {
                    return false;
                }
            }
            (None, None) => return true,
            // One ended: the other may only have trailing NULs left.
            (Some(x), None) => return x == '\0' && a.all(|c| c == '\0'),
            (None, Some(y)) => return y == '\0' && b.all(|c| c == '\0'),
        }
    }
}

/// Whether the raw JSON string contents `a` and `b` are the same key after lenient
/// normalization.
pub(crate) fn same_key(a: &str, b: &str) -> bool {
    let plain = |s: &str| s.is_ascii() && !s.contains('\\');
    if plain(a) && plain(b) {
        // ASCII without escapes: no NUL (JSON forbids it raw), and folding is ASCII case.
        return a.eq_ignore_ascii_case(b);
    }
    lenient_eq_chars(Decoded::new(a), Decoded::new(b))
}

/// Whether the raw key `raw` is a lenient variant of `name`: the same after normalization but
/// not the same string.
pub(crate) fn is_variant_of(raw: &str, name: &str) -> bool {
    if raw.is_ascii() && !raw.contains('\\') && name.is_ascii() {
        // No escapes, no NUL: a variant is an ASCII case variant of the same length.
        return raw.len() == name.len() && raw != name && raw.eq_ignore_ascii_case(name);
    }
    !decodes_to(raw, name) && lenient_eq_chars(Decoded::new(raw), name.chars())
}

/// Whether the decoded string `key` is a lenient variant of `name`.
pub fn is_variant(key: &str, name: &str) -> bool {
    key != name && lenient_eq_chars(key.chars(), name.chars())
}

/// Whether an object read as a `serde_json` map has a key that is a lenient variant of one of
/// `names` (not the name itself): a lenient reader would take that key for the member.
pub(crate) fn has_variant(
    map: &serde_json::Map<String, serde_json::Value>,
    names: &[&str],
) -> bool {
    map.keys().any(|k| names.iter().any(|n| is_variant(k, n)))
}

/// Whether two decoded strings are equal after lenient normalization.
pub fn same(a: &str, b: &str) -> bool {
    lenient_eq_chars(a.chars(), b.chars())
}

/// Hashes the lenient normalization of the raw JSON string contents `raw` (consistent with
/// [`same_key`]).
pub(crate) fn hash_key<H: Hasher>(raw: &str, h: &mut H) {
    let mut nuls = 0usize;
    let mut n = 0usize;
    for c in Decoded::new(raw) {
        if c == '\0' {
            nuls += 1;
            continue;
        }
        for _ in 0..nuls {
            '\0'.hash(h);
        }
        nuls = 0;
        fold(c).hash(h);
        n += 1;
    }
    n.hash(h);
}

/// The lenient normalization of a decoded string: trailing U+0000 removed, then every character
/// folded ([`fold`]). Two strings are [`same`] exactly when their normalizations are equal; a
/// glob matched against normalized keys (the pattern normalized too) matches every key a lenient
/// parser reads as a matching name (`redact`, SPEC §5.2).
pub(crate) fn normalize(s: &str) -> String {
    s.trim_end_matches('\0').chars().map(fold).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_the_known_pairs() {
        assert_eq!(fold('A'), 'a');
        assert_eq!(fold('\u{17F}'), 's', "long s");
        assert_eq!(fold('\u{212A}'), 'k', "Kelvin sign");
        assert_eq!(fold('\u{212B}'), fold('å'), "Angstrom sign");
        assert_eq!(fold('Σ'), fold('ς'));
        assert_eq!(fold('σ'), fold('ς'));
        assert_eq!(fold('7'), '7');
        assert_eq!(fold('日'), '日');
    }

    #[test]
    fn compares_raw_keys() {
        assert!(same_key("method", "METHOD"));
        assert!(same_key("method", "Method"));
        assert!(same_key("params", "param\u{17F}"));
        assert!(same_key("params", "param\\u017f"));
        assert!(same_key("name", "name\\u0000"));
        assert!(same_key("params", "params\\u0000\\u0000"));
        assert!(same_key("k", "\u{212A}"));
        assert!(same_key("a\\u0000", "A"));
        assert!(!same_key("a\\u0000b", "ab"));
        assert!(!same_key("ab", "a"));
        assert!(!same_key("\\u0000", "a"));
        assert!(same_key("\\u0000", ""));
        assert!(!same_key("method", "methods"));
        assert!(is_variant_of("Method", "method"));
        assert!(is_variant_of("method\\u0000", "method"));
        assert!(!is_variant_of("method", "method"));
        assert!(
            !is_variant_of("\\u006dethod", "method"),
            "an escape is the same key"
        );
        assert!(!is_variant_of("methods", "method"));
        assert!(decodes_to("tools\\/call", "tools/call"));
        assert!(decodes_to("\\ud83d\\ude00", "😀"));
        assert_eq!(normalize("PATH\0"), "path");
    }

    #[test]
    fn hash_agrees_with_equality() {
        use std::collections::hash_map::DefaultHasher;
        let h = |s: &str| {
            let mut st = DefaultHasher::new();
            hash_key(s, &mut st);
            st.finish()
        };
        for (a, b) in [
            ("method", "METHOD"),
            ("name", "name\\u0000"),
            ("s", "\u{17F}"),
            ("\\u0000", ""),
        ] {
            assert!(same_key(a, b));
            assert_eq!(h(a), h(b), "{a} {b}");
        }
        assert_ne!(h("a\\u0000b"), h("ab"));
    }
}
