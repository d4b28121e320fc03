//! `record_arguments` and `redact` (SPEC §4.1a, §5.2): what a `tools/call` decision records of
//! the call's arguments.
//!
//! ```yaml
//! record_arguments: true
//! redact: ["*token*", "*secret*", "*password*", "authorization"]
//! ```
//!
//! With `record_arguments: true`, a decision carries the RFC 8785 canonical JSON of
//! `params.arguments` with the value under every object key (at any depth, in arrays too) that
//! matches a `redact` glob replaced by the string `"[redacted]"`, cut to at most
//! [`MAX_RECORDED_BYTES`] on a UTF-8 character boundary. `redact` globs are the tool-name globs
//! (`*`, `?`, whole-key match), compared case-insensitively in the sense of SPEC §3: both the
//! pattern and the key are put through the lenient normalization (`crate::lenient::normalize`:
//! trailing U+0000 removed, Unicode simple case folding), so a key a lenient server reads as
//! `secret` (`ſecret`, `SECRET`, `secret\u0000`) is redacted under `redact: [secret]`. Folding is
//! one character to one character, so `?` still matches one character of the key. `redact`
//! without `record_arguments: true` is accepted and has no effect (a policy may keep its
//! patterns ready for when recording is turned on).

use serde_json::Value;

use self::memo::MemoId;
use super::error::{Ctx, PolicyError};
use super::glob::Glob;

mod memo;

/// At most this many bytes of recorded arguments (4 KiB).
pub const MAX_RECORDED_BYTES: usize = 4096;

/// What replaces a redacted value.
pub(crate) const REDACTED: &str = "[redacted]";

/// The compiled `record_arguments` and `redact`.
#[derive(Default)]
pub(crate) struct ArgumentRecord {
    record: bool,
    written: Vec<String>,
    globs: Vec<Glob>,
    /// No ASCII key shorter than this many bytes is redacted (the shortest any glob matches).
    shortest: usize,
    /// This compiled `redact`'s verdicts on short keys, remembered per thread ([`memo`]).
    memo: MemoId,
}

impl ArgumentRecord {
    /// Compiles the two keys from their values in the policy (either may be absent).
    pub(crate) fn parse(
        ctx: &Ctx<'_>,
        record: Option<&Value>,
        redact: Option<&Value>,
    ) -> Result<ArgumentRecord, PolicyError> {
        let record = ctx.flag(record, "record_arguments")?;
        let written = match redact {
            Some(v) => ctx.pattern_list(v, "redact")?,
            None => Vec::new(),
        };
        let globs = written
            .iter()
            .map(|p| Glob::new(&crate::lenient::normalize(p)))
            .collect::<Vec<_>>();
        let shortest = globs.iter().map(Glob::min_len).min().unwrap_or(0);
        Ok(ArgumentRecord {
            record,
            written,
            globs,
            shortest,
            memo: MemoId::new(),
        })
    }

    /// `record_arguments`.
    pub(crate) fn record(&self) -> bool {
        self.record
    }

    /// The `redact` patterns as written.
    pub(crate) fn patterns(&self) -> &[String] {
        &self.written
    }

    fn redacts(&self, key: &str) -> bool {
        if self.globs.is_empty() {
            return false;
        }
        let key = crate::lenient::normalize(key);
        self.globs.iter().any(|g| g.matches(&key))
    }

    /// [`ArgumentRecord::redacts`] for an ASCII key: remembered for short keys ([`memo`]),
    /// else folded in a stack buffer (the lenient normalization of ASCII is its lowercase: no
    /// ASCII character folds to anything else, and a NUL cannot be written unescaped), no
    /// allocation; longer keys as any other.
    fn redacts_ascii(&self, key: &str) -> bool {
        // Folding an ASCII key keeps its length: one shorter than every glob's shortest match
        // matches none.
        if self.globs.is_empty() || key.len() < self.shortest {
            return false;
        }
        memo::redacts(self.memo, key, |key| self.match_ascii(key))
    }

    /// The globs' verdict on an ASCII key, folded in a stack buffer.
    fn match_ascii(&self, key: &str) -> bool {
        const KEY_BUFFER: usize = 64;
        let mut buf = [0u8; KEY_BUFFER];
        let Some(folded) = buf.get_mut(..key.len()) else {
            return self.redacts(key);
        };
        folded.copy_from_slice(key.as_bytes());
        folded.make_ascii_lowercase();
        match std::str::from_utf8(folded) {
            Ok(folded) => self.globs.iter().any(|g| g.matches(folded)),
            Err(_) => self.redacts(key),
        }
    }

    /// The recorded text of the arguments whose canonical form is `canonical`, when that form
    /// is one the simple transcription writes (`crate::canonical::simple`: no whitespace, keys
    /// ASCII without escapes, strings with only the escapes JCS writes); `None` for any other
    /// text, which is then recorded by [`ArgumentRecord::recorded`] from its parsed value. The
    /// same text as that: redaction replaces values, never keys, so the canonical form of the
    /// redacted value is this form with the value after each redacted key replaced.
    pub(crate) fn recorded_canonical(&self, canonical: &str) -> Option<(String, bool)> {
        let (text, _) = self.transcribe::<false>(canonical)?;
        Some(cut(text))
    }

    /// [`ArgumentRecord::recorded_canonical`] as the decision line writes it: the contents of
    /// the JSON string that carries the recorded text (every `"` written `\"` and every `\`
    /// written `\\`, without the enclosing quotes), made in the same walk, which finds every
    /// quote and backslash anyway. `None` when that text holds a control character (which
    /// needs another escape; a simple transcription holds none: JCS writes them escaped) or
    /// is longer than [`MAX_RECORDED_BYTES`] (it would be cut); the caller then escapes what
    /// [`ArgumentRecord::recorded_canonical`] gives.
    pub(crate) fn recorded_canonical_escaped(&self, canonical: &str) -> Option<String> {
        // A fold without early exit, so the check is vectorized.
        if canonical
            .as_bytes()
            .iter()
            .fold(false, |acc, &b| acc | (b < 0x20))
        {
            return None;
        }
        let (escaped, added) = self.transcribe::<true>(canonical)?;
        (escaped.len() - added <= MAX_RECORDED_BYTES).then_some(escaped)
    }

    /// The walk of [`ArgumentRecord::recorded_canonical`]: the redacted text, uncut, with a
    /// backslash before every quote and backslash when `ESCAPED` (and how many were added).
    /// `ESCAPED` only for a text the caller found without a control character.
    fn transcribe<const ESCAPED: bool>(&self, text: &str) -> Option<(String, usize)> {
        let bytes = text.as_bytes();
        // Escaped, every piece goes to `out` (a few quotes more than the text; the buffer of
        // the last recorded text given back); else only around a redacted value.
        let mut out = if ESCAPED {
            spare(text.len() + 32)
        } else {
            String::new()
        };
        let mut copied = 0;
        let mut added = 0;
        let mut at = 0;
        let mut depth = 0usize;
        while let Some(&b) = bytes.get(at) {
            match b {
                b'{' | b'[' | b'}' | b']' => {
                    depth = nest(depth, b, PARSED_DEPTH)?;
                    at += 1;
                }
                b'"' => {
                    let (close, escapes) = if ESCAPED {
                        // A backslash before each quote and backslash; the closing quote goes
                        // out with the piece after it.
                        out.push_str(text.get(copied..at)?);
                        let (close, escapes, n) = push_string_escaped(&mut out, text, at)?;
                        out.push('\\');
                        copied = close;
                        added += n + 1;
                        (close, escapes)
                    } else {
                        string_end(bytes, at)?
                    };
                    let string = text.get(at + 1..close)?;
                    at = close + 1;
                    if bytes.get(at) != Some(&b':') {
                        continue; // a string value
                    }
                    at += 1;
                    // A key is matched as it is written: one with an escape is never simple.
                    if escapes || !string.is_ascii() {
                        return None;
                    }
                    if self.redacts_ascii(string) {
                        out.push_str(text.get(copied..at)?);
                        if ESCAPED {
                            out.push_str("\\\"");
                            out.push_str(REDACTED);
                            out.push_str("\\\"");
                            added += 2;
                        } else {
                            out.push('"');
                            out.push_str(REDACTED);
                            out.push('"');
                        }
                        at = skip_value(bytes, at, PARSED_DEPTH - depth)?;
                        copied = at;
                    }
                }
                _ => at += 1,
            }
        }
        let text = if copied == 0 && !ESCAPED {
            text.to_owned()
        } else {
            out.push_str(text.get(copied..)?);
            out
        };
        Some((text, added))
    }

    /// `arguments` with every value under a redacted key replaced.
    fn redacted(&self, v: &Value) -> Value {
        match v {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let v = if self.redacts(k) {
                            Value::String(REDACTED.to_owned())
                        } else {
                            self.redacted(v)
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|i| self.redacted(i)).collect()),
            other => other.clone(),
        }
    }

    /// The recorded text of `arguments` and whether it was cut (see the module docs). When the
    /// canonical form cannot be built (nesting deeper than the canonicalizer's bound, or
    /// numbers whose canonical digits outgrow the text by more than its slack), the compact
    /// JSON of the redacted value is recorded instead, cut the same way.
    pub(crate) fn recorded(&self, arguments: &Value) -> (String, bool) {
        let redacted = self.redacted(arguments);
        let compact = serde_json::to_string(&redacted).unwrap_or_default();
        let text = crate::canonical::canonical_text(&compact).unwrap_or(compact);
        cut(text)
    }
}

/// Recorded texts' buffers kept for reuse at most this large.
const SPARE_KEPT: usize = 16 * 1024;

thread_local! {
    /// The buffer of the last recorded text given back ([`give_back`]), for the next: a call's
    /// recorded text costs no allocation of its own.
    static SPARE: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// An empty buffer with room for `len` bytes: the one given back last, if any.
fn spare(len: usize) -> String {
    let mut s = SPARE.take();
    s.clear();
    s.reserve(len);
    s
}

/// Gives back a recorded text once its decision is written: its buffer makes the next one.
pub(crate) fn give_back(text: String) {
    if text.capacity() <= SPARE_KEPT {
        SPARE.set(text);
    }
}

/// `text` cut to at most [`MAX_RECORDED_BYTES`] on a character boundary, and whether it was.
fn cut(mut text: String) -> (String, bool) {
    if text.len() <= MAX_RECORDED_BYTES {
        return (text, false);
    }
    let mut end = MAX_RECORDED_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

/// The deepest nesting the strict parser (`crate::strict_json::parse_value`: serde_json's
/// recursion limit) reads. `client_judge::evaluate` does not parse arguments it records from
/// their transcription unless the policy reads them, so the transcription is used only for
/// arguments the parser would have read (a client line is bounded far below this anyway).
const PARSED_DEPTH: usize = 127;

/// Where the closing quote of the string whose opening quote is at `open` is, and whether the
/// string holds an escape, in a text the simple transcription wrote (every escape a backslash
/// and the character after it, or `\u` and four hex digits, which hold neither a quote nor a
/// backslash).
fn string_end(bytes: &[u8], open: usize) -> Option<(usize, bool)> {
    let mut at = open + 1;
    let mut escapes = false;
    loop {
        at += memchr::memchr2(b'"', b'\\', bytes.get(at..)?)?;
        if bytes.get(at) == Some(&b'"') {
            return Some((at, escapes));
        }
        escapes = true;
        at += 2;
    }
}

/// Appends the string of a text the simple transcription wrote whose opening quote is at
/// `open` (that quote and its contents, not its closing quote) with a backslash before every
/// quote and backslash, finding its end on the way (as [`string_end`]); returns where its
/// closing quote is, whether it holds an escape, and how many backslashes were added.
fn push_string_escaped(out: &mut String, text: &str, open: usize) -> Option<(usize, bool, usize)> {
    let bytes = text.as_bytes();
    out.push_str("\\\"");
    let mut added = 1;
    let mut escapes = false;
    let mut from = open + 1;
    loop {
        let at = from + memchr::memchr2(b'"', b'\\', bytes.get(from..)?)?;
        out.push_str(text.get(from..at)?);
        if bytes.get(at) == Some(&b'"') {
            return Some((at, escapes, added));
        }
        // An escape: its backslash, then the character after it (ASCII in a simple
        // transcription), each with a backslash before it when it needs one.
        let c = *bytes.get(at + 1).filter(|c| c.is_ascii())?;
        out.push_str("\\\\");
        added += 1;
        if c == b'"' || c == b'\\' {
            out.push('\\');
            added += 1;
        }
        out.push(char::from(c));
        escapes = true;
        from = at + 2;
    }
}

/// The nesting after the byte `b` at `depth`: one deeper after `{` or `[` (`None` past
/// `room`), one shallower after `}` or `]` (`None` below zero), the same after any other byte.
fn nest(depth: usize, b: u8, room: usize) -> Option<usize> {
    match b {
        b'{' | b'[' => Some(depth + 1).filter(|d| *d <= room),
        b'}' | b']' => depth.checked_sub(1),
        _ => Some(depth),
    }
}

/// Where the value starting at `at` of a text the simple transcription wrote ends (no
/// whitespace); `None` if it does not, or if it nests deeper than `room`.
fn skip_value(bytes: &[u8], mut at: usize, room: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match *bytes.get(at)? {
            b'"' => at = string_end(bytes, at)?.0 + 1,
            b => {
                depth = nest(depth, b, room)?;
                at += 1;
            }
        }
        if depth == 0 && matches!(bytes.get(at), None | Some(b',' | b'}' | b']')) {
            return Some(at);
        }
    }
}

#[cfg(test)]
mod tests;
