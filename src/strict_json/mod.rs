//! The single strict, bounded pre-scan for untrusted JSON.
//!
//! Every byte that reaches a decision (a client line in the proxy, a file in a capture directory)
//! passes through [`scan`] before any JSON value is materialized. The scan is iterative (no
//! recursion, so hostile nesting cannot overflow the stack), keeps one key set per nesting level
//! (keys are held as offsets into the input and compared from it, escapes decoded on the fly) in
//! buffers a thread reuses from one scan to the next, so scanning an ordinary text allocates
//! nothing, and refuses what `serde_json` would silently accept or mis-handle for our purposes:
//!
//! - invalid UTF-8 anywhere, control characters in strings, lone surrogate escapes;
//! - a duplicate object key at any level, compared after unescaping (`"a"` and `"\u0061"` are the
//!   same key) — a `"method"` key given twice must never let one parser see `tools/call` while
//!   another sees `ping`;
//! - non-finite numbers: the tokens `NaN`, `Infinity`, `-Infinity`, and number literals that
//!   overflow an IEEE 754 double;
//! - nesting deeper than the caller's limit (the outermost object or array is level 1).
//!
//! `scan_with` (crate-internal) runs the same scan with a `Visitor` that sees the structure as it
//! goes (the client-line classifier extracts what it needs this way, in the same pass) and may ask
//! for lenient key comparison (SPEC §3 item 6).
//!
//! Only after a successful scan does the caller hand the same bytes (or a part) to `serde_json`.
#![forbid(unsafe_code)]

use std::cell::RefCell;
use std::fmt;

use keys::{Key, KeySet};

mod keys;

/// Why a scan refused its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ScanErrorKind {
    /// Not UTF-8, or not JSON text (RFC 8259).
    #[error("invalid JSON")]
    Invalid,
    /// An object holds the same key twice.
    #[error("duplicate object key")]
    DuplicateKey,
    /// `NaN`, `Infinity`, `-Infinity`, or a number that overflows a double.
    #[error("non-finite number")]
    NonFinite,
    /// Nesting deeper than the limit.
    #[error("nesting too deep")]
    TooDeep,
}

/// A refused input: the kind and the byte offset where it was detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at byte {offset}")]
pub struct ScanError {
    /// Why the input was refused.
    pub kind: ScanErrorKind,
    /// Byte offset into the input where the problem was detected.
    pub offset: usize,
}

/// An open container: whether it is an object, the role its visitor gave it, the slot it fills
/// in its parent, and where it started.
struct Frame {
    object: bool,
    role: u8,
    slot: u8,
    start: usize,
}

/// Sees the structure of a scanned text as the scan goes, without building values (the
/// client-line classifier extracts a message's `method`, `id`, `params.name` and
/// `params.arguments` this way). Roles and slots are the visitor's own small numbers; `0` means
/// "nothing of interest". The default methods see nothing.
pub(crate) trait Visitor<'a> {
    /// Compare keys after lenient normalization (SPEC §3 item 6) instead of exactly.
    const LENIENT: bool = false;
    /// The slot of the top-level value.
    fn root(&mut self) -> u8 {
        0
    }
    /// A container opens to fill `slot`; returns its role.
    fn open(&mut self, _slot: u8, _object: bool, _at: usize) -> u8 {
        0
    }
    /// The slot of the next element of an array with `role`.
    fn element(&mut self, _role: u8) -> u8 {
        0
    }
    /// A key (raw JSON text between the quotes, starting at byte `at`; `plain` when it is ASCII
    /// without escapes) of an object with `role`; returns the slot of its value. An error
    /// refuses the text.
    fn key(&mut self, _role: u8, _raw: &'a str, _plain: bool, _at: usize) -> Result<u8, ScanError> {
        Ok(0)
    }
    /// A value that filled `slot` is complete: its text, and its role if it is a container.
    fn value(&mut self, _slot: u8, _role: u8, _text: &'a str) -> Result<(), ScanError> {
        Ok(())
    }
}

/// The visitor of a plain scan: exact keys, nothing extracted.
struct Plain;

impl Visitor<'_> for Plain {}

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
    scan_with(input, max_depth, &mut Plain)
}

/// [`scan_str`] that shows the structure to `visitor` as it goes (one pass, iterative, no value
/// built). With `V::LENIENT`, two keys of one object that are equal after lenient
/// normalization are a duplicate key.
pub(crate) fn scan_with<'a, V: Visitor<'a>>(
    input: &'a str,
    max_depth: usize,
    visitor: &mut V,
) -> Result<(), ScanError> {
    let scanner = Scanner {
        text: input,
        bytes: input.as_bytes(),
        pos: 0,
        max_depth,
    };
    // The thread's buffers, unless a scan is already using them (a visitor that scans).
    let reused = BUFFERS.try_with(|cell| {
        let mut bufs = cell.try_borrow_mut().ok()?;
        let result = scanner.run(&mut bufs, visitor);
        bufs.release();
        Some(result)
    });
    match reused {
        Ok(Some(result)) => result,
        _ => scanner.run(&mut Buffers::default(), visitor),
    }
}

/// The scanner's working memory: the open containers and one key set per object nesting level,
/// reused from one scan to the next on a thread so a scan of an ordinary text allocates nothing.
#[derive(Default)]
struct Buffers {
    stack: Vec<Frame>,
    keysets: Vec<KeySet>,
}

/// Levels whose buffers a thread keeps between scans; deeper texts get theirs back when done.
const KEPT_LEVELS: usize = 128;

impl Buffers {
    /// Keeps what an ordinary text needs and gives back the rest: the large key tables of a
    /// hostile object, and the levels of a hostile nesting.
    fn release(&mut self) {
        if self.stack.capacity() > KEPT_LEVELS {
            self.stack = Vec::new();
        }
        if self.keysets.len() > KEPT_LEVELS {
            self.keysets = Vec::new();
        }
        for k in &mut self.keysets {
            k.release();
        }
    }
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = const {
        RefCell::new(Buffers {
            stack: Vec::new(),
            keysets: Vec::new(),
        })
    };
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

/// The bytes a string scan stops at: `"`, `\\` and control characters.
static STRING_SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Eight string bytes read as one little-endian word: the high bit of each byte that needs
/// attention (`"`, `\\`, or below 0x20) is set, possibly along with bits of later bytes, so
/// the lowest set bit always marks the first such byte. (The classic "has zero byte" test: a
/// borrow can only carry upward from a byte that matched, so no byte below the first match is
/// ever flagged.)
#[inline]
fn special_bytes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let zero = |w: u64| w.wrapping_sub(ONES) & !w;
    (zero(quote) | zero(backslash) | (word.wrapping_sub(ONES * 0x20) & !word)) & HIGH
}

/// The key set of the object just opened at `depth` (one set per nesting level, reused by every
/// object at that level), emptied for a line of `len` bytes.
#[inline(always)]
fn fresh_keyset(keysets: &mut Vec<KeySet>, depth: usize, len: usize) {
    while keysets.len() < depth {
        keysets.push(KeySet::new());
    }
    if let Some(k) = keysets.get_mut(depth - 1) {
        k.clear(len);
    }
}

/// The length of the leading run of `bytes` that holds no byte needing attention in a JSON
/// string (`"`, `\\`, or below 0x20): eight bytes at a time with [`special_bytes`], then byte
/// by byte: the evidence writers' escaper (`crate::evidence::event::push_json_str`) finds the
/// next byte to escape with it.
#[inline]
pub(crate) fn plain_run(bytes: &[u8]) -> usize {
    let mut n = 0;
    while let Some(chunk) = bytes.get(n..).and_then(<[u8]>::first_chunk::<8>) {
        let flags = special_bytes(u64::from_le_bytes(*chunk));
        if flags != 0 {
            return n + (flags.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    let rest = bytes.get(n..).unwrap_or(&[]);
    n + rest
        .iter()
        .position(|&b| STRING_SPECIAL[usize::from(b)])
        .unwrap_or(rest.len())
}

#[derive(Clone, Copy)]
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

    #[inline(always)]
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

    fn run<V: Visitor<'a>>(mut self, bufs: &mut Buffers, v: &mut V) -> Result<(), ScanError> {
        let stack = &mut bufs.stack;
        stack.clear();
        // One key set per nesting level, reused by every object at that level.
        let keysets = &mut bufs.keysets;
        let mut slot = v.root();
        self.skip_ws();
        'value: loop {
            // Parse one value at self.pos.
            self.skip_ws();
            let start = self.pos;
            match self.peek() {
                Some(b'{') => {
                    self.open(stack, true, slot, v)?;
                    fresh_keyset(keysets, stack.len(), self.bytes.len());
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        self.close(stack, v)?;
                    } else {
                        slot = self.object_key(stack, keysets, v)?;
                        continue 'value;
                    }
                }
                Some(b'[') => {
                    self.open(stack, false, slot, v)?;
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                        self.close(stack, v)?;
                    } else {
                        slot = stack.last().map_or(0, |f| v.element(f.role));
                        continue 'value;
                    }
                }
                Some(b'"') => {
                    self.string()?;
                    v.value(slot, 0, &self.text[start..self.pos])?;
                }
                Some(b'-' | b'0'..=b'9') => {
                    self.number()?;
                    v.value(slot, 0, &self.text[start..self.pos])?;
                }
                Some(b't') => {
                    self.literal("true")?;
                    v.value(slot, 0, &self.text[start..self.pos])?;
                }
                Some(b'f') => {
                    self.literal("false")?;
                    v.value(slot, 0, &self.text[start..self.pos])?;
                }
                Some(b'n') => {
                    self.literal("null")?;
                    v.value(slot, 0, &self.text[start..self.pos])?;
                }
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
                match (self.peek(), top.object) {
                    (Some(b','), true) => {
                        self.pos += 1;
                        self.skip_ws();
                        slot = self.object_key(stack, keysets, v)?;
                        continue 'value;
                    }
                    (Some(b','), false) => {
                        self.pos += 1;
                        slot = v.element(top.role);
                        continue 'value;
                    }
                    (Some(b'}'), true) | (Some(b']'), false) => {
                        self.pos += 1;
                        self.close(stack, v)?;
                    }
                    _ => return Err(self.invalid()),
                }
            }
        }
    }

    fn open<V: Visitor<'a>>(
        &mut self,
        stack: &mut Vec<Frame>,
        object: bool,
        slot: u8,
        v: &mut V,
    ) -> Result<(), ScanError> {
        if stack.len() >= self.max_depth {
            return Err(self.err(ScanErrorKind::TooDeep));
        }
        let role = v.open(slot, object, self.pos);
        stack.push(Frame {
            object,
            role,
            slot,
            start: self.pos,
        });
        self.pos += 1;
        Ok(())
    }

    /// Pops the container that just ended (at `self.pos`) and reports it as a value.
    #[inline(always)]
    fn close<V: Visitor<'a>>(
        &mut self,
        stack: &mut Vec<Frame>,
        v: &mut V,
    ) -> Result<(), ScanError> {
        if let Some(f) = stack.pop() {
            v.value(f.slot, f.role, &self.text[f.start..self.pos])?;
        }
        Ok(())
    }

    /// Reads `"key" :` inside the object on top of the stack, records the key, and returns the
    /// slot of its value.
    fn object_key<V: Visitor<'a>>(
        &mut self,
        stack: &[Frame],
        keysets: &mut [KeySet],
        v: &mut V,
    ) -> Result<u8, ScanError> {
        if self.peek() != Some(b'"') {
            return Err(self.invalid());
        }
        let start = self.pos;
        let escaped = self.string()?;
        let raw = &self.text[start + 1..self.pos - 1];
        let plain = !escaped && raw.is_ascii();
        if let Some(keys) = keysets.get_mut(stack.len().wrapping_sub(1)) {
            let key = Key::new(start + 1, raw.as_bytes(), plain, V::LENIENT);
            if !keys.insert(key, self.text, V::LENIENT) {
                return Err(ScanError {
                    kind: ScanErrorKind::DuplicateKey,
                    offset: start,
                });
            }
        }
        let slot = v.key(stack.last().map_or(0, |f| f.role), raw, plain, start)?;
        self.skip_ws();
        if self.peek() != Some(b':') {
            return Err(self.invalid());
        }
        self.pos += 1;
        Ok(slot)
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

    /// Skips string bytes that need no attention (no `"`, `\\` or control character): eight at
    /// a time with [`special_bytes`], then byte by byte up to the byte that needs attention,
    /// which the caller handles (as [`plain_run`] does; written out here, where the scanner's
    /// position is the loop variable, so the hot loop keeps its shape). The input is valid
    /// UTF-8 and we stop only before ASCII bytes, so positions stay on character boundaries.
    fn skip_plain_string_bytes(&mut self) {
        while let Some(chunk) = self.bytes.get(self.pos..self.pos + 8) {
            let Ok(chunk) = <[u8; 8]>::try_from(chunk) else {
                break;
            };
            let flags = special_bytes(u64::from_le_bytes(chunk));
            if flags != 0 {
                self.pos += (flags.trailing_zeros() / 8) as usize;
                return;
            }
            self.pos += 8;
        }
        let rest = self.bytes.get(self.pos..).unwrap_or(&[]);
        self.pos += rest
            .iter()
            .position(|&b| STRING_SPECIAL[usize::from(b)])
            .unwrap_or(rest.len());
    }

    /// Validates a string starting at the opening quote and moves past the closing one.
    /// Escapes are checked (including surrogate pairing) but not decoded: keys are compared
    /// from their raw text (see [`Key`]), so a string full of escapes costs no allocation.
    /// Returns whether the string holds an escape.
    #[inline(always)]
    fn string(&mut self) -> Result<bool, ScanError> {
        self.pos += 1; // opening quote
        let mut escaped = false;
        loop {
            self.skip_plain_string_bytes();
            let Some(b) = self.peek() else {
                return Err(self.invalid());
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(escaped);
                }
                b'\\' => {
                    escaped = true;
                    self.pos += 1;
                    let Some(e) = self.peek() else {
                        return Err(self.invalid());
                    };
                    self.pos += 1;
                    match e {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        b'u' => {
                            let hi = self.hex4()?;
                            if (0xD800..0xDC00).contains(&hi) {
                                if !self.text[self.pos..].starts_with("\\u") {
                                    return Err(self.invalid());
                                }
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.invalid());
                                }
                            } else if (0xDC00..0xE000).contains(&hi) {
                                return Err(self.invalid());
                            }
                        }
                        _ => return Err(self.invalid()),
                    }
                }
                0x00..=0x1F => return Err(self.invalid()),
                _ => self.pos += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests;
