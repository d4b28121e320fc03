//! The single strict, bounded pre-scan for untrusted JSON.
//!
//! Every byte that reaches a decision (a client line in the proxy, a file in a capture directory)
//! passes through [`scan`] before any JSON value is materialized. The scan is iterative (no
//! recursion, so hostile nesting cannot overflow the stack), allocates only for object keys, and
//! refuses what `serde_json` would silently accept or mis-handle for our purposes:
//!
//! - invalid UTF-8 anywhere, control characters in strings, lone surrogate escapes;
//! - a duplicate object key at any level, compared after unescaping (`"a"` and `"\u0061"` are the
//!   same key) — a `"method"` key given twice must never let one parser see `tools/call` while
//!   another sees `ping`;
//! - non-finite numbers: the tokens `NaN`, `Infinity`, `-Infinity`, and number literals that
//!   overflow an IEEE 754 double;
//! - nesting deeper than the caller's limit (the outermost object or array is level 1).
//!
//! Only after a successful scan does the caller hand the same bytes to `serde_json`.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

/// Why a scan refused its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanErrorKind {
    /// Not UTF-8, or not JSON text (RFC 8259).
    Invalid,
    /// An object holds the same key twice.
    DuplicateKey,
    /// `NaN`, `Infinity`, `-Infinity`, or a number that overflows a double.
    NonFinite,
    /// Nesting deeper than the limit.
    TooDeep,
}

/// A refused input: the kind and the byte offset where it was detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanError {
    /// Why the input was refused.
    pub kind: ScanErrorKind,
    /// Byte offset into the input where the problem was detected.
    pub offset: usize,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ScanErrorKind::Invalid => "invalid JSON",
            ScanErrorKind::DuplicateKey => "duplicate object key",
            ScanErrorKind::NonFinite => "non-finite number",
            ScanErrorKind::TooDeep => "nesting too deep",
        };
        write!(f, "{what} at byte {}", self.offset)
    }
}

impl std::error::Error for ScanError {}

/// The keys seen so far in one open object. Small objects use a vector (a linear search is
/// faster than hashing for the handful of keys a JSON-RPC message has); large ones switch to a
/// hash set so a hostile object with many keys stays linear overall.
enum KeySet<'a> {
    Small(Vec<Cow<'a, str>>),
    Large(HashSet<Cow<'a, str>>),
}

const SMALL_KEYS: usize = 16;

impl<'a> KeySet<'a> {
    fn new() -> Self {
        // One allocation per object: growing 4 -> 8 -> 16 would cost three.
        KeySet::Small(Vec::with_capacity(SMALL_KEYS))
    }

    /// Inserts `key`; returns false when it was already present.
    fn insert(&mut self, key: Cow<'a, str>) -> bool {
        match self {
            KeySet::Small(v) => {
                if v.contains(&key) {
                    return false;
                }
                if v.len() < SMALL_KEYS {
                    v.push(key);
                } else {
                    let mut set: HashSet<Cow<'a, str>> = v.drain(..).collect();
                    set.insert(key);
                    *self = KeySet::Large(set);
                }
                true
            }
            KeySet::Large(s) => s.insert(key),
        }
    }
}

enum Frame<'a> {
    Object(KeySet<'a>),
    Array,
}

/// Scans `input` as one JSON text (surrounding whitespace allowed) with nesting at most
/// `max_depth` levels.
///
/// # Errors
/// Returns the first problem found, see [`ScanErrorKind`].
pub fn scan(input: &[u8], max_depth: usize) -> Result<(), ScanError> {
    let text = std::str::from_utf8(input).map_err(|e| ScanError {
        kind: ScanErrorKind::Invalid,
        offset: e.valid_up_to(),
    })?;
    scan_str(text, max_depth)
}

/// [`scan`] for input already known to be UTF-8 (skips the UTF-8 check; the capture reader
/// validates a whole log once and scans its lines as `&str`).
///
/// # Errors
/// Returns the first problem found, see [`ScanErrorKind`].
pub fn scan_str(input: &str, max_depth: usize) -> Result<(), ScanError> {
    Scanner {
        text: input,
        bytes: input.as_bytes(),
        pos: 0,
        max_depth,
    }
    .run()
}

/// Parses JSON text (already accepted by [`scan`]) into a [`serde_json::Value`], taking every
/// object key literally.
///
/// `serde_json::Value`'s own `Deserialize` gives one key a meaning when the `raw_value` feature
/// is on (this crate enables it): an object whose first key is `$serde_json::private::RawValue`
/// is replaced by the JSON *inside its string value*. So `{"path":{"$serde_json::private::RawValue":"\"/workspace/a\""}}`
/// would reach the policy as `{"path":"/workspace/a"}` while the server and every other parser
/// see an object. Everything that judges untrusted JSON as a value goes through this function.
///
/// # Errors
/// The `serde_json` error for input that is not JSON (or nests beyond its recursion limit).
pub fn parse_value(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_str(text);
    let v = LiteralValue.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// Builds a `serde_json::Value` from any deserializer, with no special keys.
struct LiteralValue;

impl<'de> serde::de::DeserializeSeed<'de> for LiteralValue {
    type Value = serde_json::Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for LiteralValue {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        // Non-finite numbers never get here (JSON text cannot spell them, serde_json refuses
        // overflow); `from` maps them to null like serde_json's own `Value`.
        Ok(v.into())
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(LiteralValue)? {
            out.push(v);
        }
        Ok(serde_json::Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(LiteralValue)?;
            out.insert(k, v);
        }
        Ok(serde_json::Value::Object(out))
    }
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    max_depth: usize,
}

impl<'a> Scanner<'a> {
    fn err(&self, kind: ScanErrorKind) -> ScanError {
        ScanError {
            kind,
            offset: self.pos,
        }
    }

    fn invalid(&self) -> ScanError {
        self.err(ScanErrorKind::Invalid)
    }

    fn skip_ws(&mut self) {
        while let Some(b) = self.bytes.get(self.pos) {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => self.pos += 1,
                _ => break,
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn run(mut self) -> Result<(), ScanError> {
        let mut stack: Vec<Frame<'a>> = Vec::with_capacity(self.max_depth.min(8));
        // `true` when the next token must be a value (start, after ':' or ',' in an array).
        self.skip_ws();
        'value: loop {
            // Parse one value at self.pos.
            self.skip_ws();
            match self.peek() {
                Some(b'{') => {
                    self.open(&mut stack, Frame::Object(KeySet::new()))?;
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        stack.pop();
                    } else {
                        self.object_key(&mut stack)?;
                        continue 'value;
                    }
                }
                Some(b'[') => {
                    self.open(&mut stack, Frame::Array)?;
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                        stack.pop();
                    } else {
                        continue 'value;
                    }
                }
                Some(b'"') => {
                    self.string(false)?;
                }
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(b't') => self.literal("true")?,
                Some(b'f') => self.literal("false")?,
                Some(b'n') => self.literal("null")?,
                Some(b'N' | b'I') => {
                    if self.text[self.pos..].starts_with("NaN")
                        || self.text[self.pos..].starts_with("Infinity")
                    {
                        return Err(self.err(ScanErrorKind::NonFinite));
                    }
                    return Err(self.invalid());
                }
                _ => return Err(self.invalid()),
            }
            // After a complete value: close containers or move to the next element.
            loop {
                self.skip_ws();
                let Some(top) = stack.last() else {
                    // Top-level value done: only whitespace may follow.
                    return if self.pos == self.bytes.len() {
                        Ok(())
                    } else {
                        Err(self.invalid())
                    };
                };
                let is_object = matches!(top, Frame::Object(_));
                match (self.peek(), is_object) {
                    (Some(b','), true) => {
                        self.pos += 1;
                        self.skip_ws();
                        self.object_key(&mut stack)?;
                        continue 'value;
                    }
                    (Some(b','), false) => {
                        self.pos += 1;
                        continue 'value;
                    }
                    (Some(b'}'), true) | (Some(b']'), false) => {
                        self.pos += 1;
                        stack.pop();
                    }
                    _ => return Err(self.invalid()),
                }
            }
        }
    }

    fn open(&mut self, stack: &mut Vec<Frame<'a>>, frame: Frame<'a>) -> Result<(), ScanError> {
        if stack.len() >= self.max_depth {
            return Err(self.err(ScanErrorKind::TooDeep));
        }
        self.pos += 1;
        stack.push(frame);
        Ok(())
    }

    /// Reads `"key" :` inside the object on top of the stack and records the key.
    fn object_key(&mut self, stack: &mut [Frame<'a>]) -> Result<(), ScanError> {
        if self.peek() != Some(b'"') {
            return Err(self.invalid());
        }
        let start = self.pos;
        let key = self.string(true)?;
        if let Some(Frame::Object(keys)) = stack.last_mut() {
            if !keys.insert(key) {
                return Err(ScanError {
                    kind: ScanErrorKind::DuplicateKey,
                    offset: start,
                });
            }
        }
        self.skip_ws();
        if self.peek() != Some(b':') {
            return Err(self.invalid());
        }
        self.pos += 1;
        Ok(())
    }

    fn literal(&mut self, word: &str) -> Result<(), ScanError> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.invalid())
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<(), ScanError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
            if self.text[self.pos..].starts_with("Infinity") {
                return Err(self.err(ScanErrorKind::NonFinite));
            }
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.invalid()),
        }
        let mut needs_check = self.pos - start > 15;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.invalid());
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.invalid());
            }
            needs_check = true;
        }
        if needs_check {
            // A literal that overflows a double is as non-finite as `Infinity` once parsed.
            let finite = self.text[start..self.pos]
                .parse::<f64>()
                .map(f64::is_finite)
                .unwrap_or(false);
            if !finite {
                return Err(ScanError {
                    kind: ScanErrorKind::NonFinite,
                    offset: start,
                });
            }
        }
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, ScanError> {
        let Some(chunk) = self.text.get(self.pos..self.pos + 4) else {
            return Err(self.invalid());
        };
        if !chunk.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.invalid());
        }
        let v = u32::from_str_radix(chunk, 16).map_err(|_| self.invalid())?;
        self.pos += 4;
        Ok(v)
    }

    /// Skips string bytes that need no attention (no `"`, `\\` or control character) eight at a
    /// time. Long strings dominate capture logs; the byte-wise loop in [`Self::string`] then
    /// handles the word holding the special byte. The input is valid UTF-8 and we stop only
    /// before ASCII bytes, so positions stay on character boundaries.
    fn skip_plain_string_bytes(&mut self) {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        // Nonzero iff some byte of `x` is below `n` (n <= 128); exact as a boolean.
        let has_less = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
        let has_zero = |x: u64| has_less(x, 1);
        while let Some(chunk) = self.bytes.get(self.pos..self.pos + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let x = u64::from_le_bytes(word);
            if has_zero(x ^ (ONES * u64::from(b'"')))
                | has_zero(x ^ (ONES * u64::from(b'\\')))
                | has_less(x, 0x20)
                != 0
            {
                return;
            }
            self.pos += 8;
        }
    }

    /// Reads a string starting at the opening quote. With `unescape` (object keys, compared
    /// for duplicates) returns its unescaped value, borrowed when it has no escapes; without it
    /// (values) only validates the escapes and returns an empty borrow, so a value full of
    /// escapes costs no allocation.
    fn string(&mut self, unescape: bool) -> Result<Cow<'a, str>, ScanError> {
        self.pos += 1; // opening quote
        let start = self.pos;
        let mut owned: Option<String> = None;
        let mut run_start = start;
        loop {
            self.skip_plain_string_bytes();
            let Some(b) = self.peek() else {
                return Err(self.invalid());
            };
            match b {
                b'"' => {
                    let end = self.pos;
                    self.pos += 1;
                    if !unescape {
                        return Ok(Cow::Borrowed(""));
                    }
                    return Ok(match owned {
                        None => Cow::Borrowed(&self.text[start..end]),
                        Some(mut s) => {
                            s.push_str(&self.text[run_start..end]);
                            Cow::Owned(s)
                        }
                    });
                }
                b'\\' => {
                    let escape_start = self.pos;
                    self.pos += 1;
                    let Some(e) = self.peek() else {
                        return Err(self.invalid());
                    };
                    self.pos += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let c = if (0xD800..0xDC00).contains(&hi) {
                                if !self.text[self.pos..].starts_with("\\u") {
                                    return Err(self.invalid());
                                }
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.invalid());
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&hi) {
                                return Err(self.invalid());
                            } else {
                                hi
                            };
                            let Some(ch) = char::from_u32(c) else {
                                return Err(self.invalid());
                            };
                            ch
                        }
                        _ => return Err(self.invalid()),
                    };
                    if unescape {
                        let s = owned.get_or_insert_with(String::new);
                        s.push_str(&self.text[run_start..escape_start]);
                        s.push(ch);
                    }
                    run_start = self.pos;
                }
                0x00..=0x1F => return Err(self.invalid()),
                _ => self.pos += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> Option<ScanErrorKind> {
        scan(s.as_bytes(), 32).err().map(|e| e.kind)
    }

    #[test]
    fn accepts_valid_json() {
        for ok in [
            "{}",
            "[]",
            " {\"a\":1,\"b\":[1,2,{\"c\":null}],\"d\":\"x\\u00e9\\ud83d\\ude00\"} \n",
            "0",
            "-0.5e-3",
            "\"\"",
            "true",
            "[false,null]",
            "1e308",
            "123456789012345678901234567890",
        ] {
            assert_eq!(kind(ok), None, "{ok}");
        }
    }

    #[test]
    fn refuses_invalid_json() {
        for bad in [
            "",
            "{",
            "{\"a\"}",
            "{\"a\":}",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            "1e",
            "\"\\x\"",
            "\"\u{1}\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "{} {}",
            "tru",
            "[1 2]",
            "{1:2}",
        ] {
            assert_eq!(kind(bad), Some(ScanErrorKind::Invalid), "{bad:?}");
        }
        assert_eq!(
            scan(b"{\"a\":\"\xff\"}", 32).err().map(|e| e.kind),
            Some(ScanErrorKind::Invalid)
        );
    }

    #[test]
    fn refuses_duplicate_keys_after_unescaping() {
        assert_eq!(
            kind("{\"method\":\"ping\",\"method\":\"tools/call\"}"),
            Some(ScanErrorKind::DuplicateKey)
        );
        assert_eq!(
            kind("{\"a\":1,\"\\u0061\":2}"),
            Some(ScanErrorKind::DuplicateKey)
        );
        assert_eq!(
            kind("[{\"x\":{\"y\":1,\"y\":2}}]"),
            Some(ScanErrorKind::DuplicateKey)
        );
        // Same key in sibling objects is fine.
        assert_eq!(kind("[{\"a\":1},{\"a\":2}]"), None);
        // Many keys switch to the hash set and still catch the duplicate.
        let mut s = String::from("{");
        for i in 0..100 {
            s.push_str(&format!("\"k{i}\":{i},"));
        }
        s.push_str("\"k7\":0}");
        assert_eq!(kind(&s), Some(ScanErrorKind::DuplicateKey));
    }

    #[test]
    fn refuses_non_finite() {
        for bad in ["NaN", "[Infinity]", "{\"a\":-Infinity}", "1e400", "-1e309"] {
            assert_eq!(kind(bad), Some(ScanErrorKind::NonFinite), "{bad}");
        }
        let huge = format!("1{}", "0".repeat(400));
        assert_eq!(kind(&huge), Some(ScanErrorKind::NonFinite));
    }

    #[test]
    fn long_strings_are_checked_at_every_offset() {
        // The word-at-a-time skip must stop at a quote, backslash or control byte wherever it
        // falls in an 8-byte word, in keys and in values.
        for at in 0..24 {
            let pad = "x".repeat(at);
            let long = "y".repeat(20);
            assert_eq!(
                kind(&format!("{{\"{pad}\\\"{long}\":\"{pad}\\\\{long}\"}}")),
                None
            );
            assert_eq!(
                kind(&format!("[\"{pad}\u{1}{long}\"]")),
                Some(ScanErrorKind::Invalid),
                "control byte at {at}"
            );
            assert_eq!(
                kind(&format!("[\"{pad}\\q{long}\"]")),
                Some(ScanErrorKind::Invalid),
                "bad escape at {at}"
            );
            assert_eq!(
                kind(&format!("[\"{pad}é{long}\"]")),
                None,
                "non-ASCII at {at}"
            );
            assert_eq!(
                kind(&format!("[\"{pad}{long}")),
                Some(ScanErrorKind::Invalid)
            );
            assert_eq!(
                kind(&format!("{{\"{pad}\\u0061{long}\":1,\"{pad}a{long}\":2}}")),
                Some(ScanErrorKind::DuplicateKey),
                "escaped key at {at}"
            );
        }
        assert_eq!(scan_str("{\"a\":[1,2]}", 32), Ok(()));
    }

    #[test]
    fn parse_value_takes_every_key_literally() {
        let text = r#"{"path":{"$serde_json::private::RawValue":"\"/workspace/a\""}}"#;
        // serde_json's own Value substitutes the string's content (the raw_value feature)...
        let sj: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(sj["path"], "/workspace/a");
        // ...parse_value keeps what every other parser sees.
        let v = parse_value(text).unwrap();
        assert_eq!(
            v["path"]["$serde_json::private::RawValue"],
            "\"/workspace/a\""
        );
        let round = parse_value(r#"[1,-2,2.5,"\u00e9",null,true,{"a":{}}]"#).unwrap();
        assert_eq!(
            round,
            serde_json::json!([1, -2, 2.5, "é", null, true, {"a": {}}])
        );
        assert!(parse_value("[1,]").is_err());
        assert!(parse_value("{} x").is_err());
    }

    #[test]
    fn depth_bound_is_inclusive() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert_eq!(kind(&deep(32)), None);
        assert_eq!(kind(&deep(33)), Some(ScanErrorKind::TooDeep));
        let obj = format!("{}1{}", "{\"a\":".repeat(33), "}".repeat(33));
        assert_eq!(kind(&obj), Some(ScanErrorKind::TooDeep));
        // A hostile depth far beyond the limit is refused without recursion.
        assert_eq!(kind(&"[".repeat(1_000_000)), Some(ScanErrorKind::TooDeep));
    }
}
