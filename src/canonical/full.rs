//! The RFC 8785 (JCS) canonical form of any JSON text, written straight from the text by a
//! visitor of the strict scanner ([`strict_json::scan_with`]): no `serde_json::Value` is built,
//! and the output is bounded by the caller, so a hostile text costs no more than its bound.
//!
//! JCS: no whitespace; strings as ECMAScript's `JSON.stringify` writes them (only `"`, `\` and
//! control characters escaped, `\b \f \n \r \t` short, the rest `\u00xx`); numbers as
//! ECMAScript's `Number.prototype.toString` (`ryu-js`); object members sorted by the UTF-16 code
//! units of their decoded keys.

use std::cmp::Ordering;

use crate::lenient::Decoded;
use crate::strict_json::{self, ScanError, ScanErrorKind, Visitor};

/// Nesting accepted (the client-line bound).
const MAX_DEPTH: usize = 100;

/// Writes the canonical form of `text` into `out` (cleared first), growing it to at most
/// `limit` bytes. `false` when `text` is not strict JSON (see [`strict_json`]) or its canonical
/// form is longer than `limit`.
pub(crate) fn canonicalize(text: &str, out: &mut String, limit: usize) -> bool {
    out.clear();
    let mut v = Jcs {
        text,
        out,
        limit,
        frames: Vec::new(),
        members: Vec::new(),
    };
    strict_json::scan_with(text, MAX_DEPTH, &mut v).is_ok() && v.out.len() <= limit
}

/// An open container.
struct Frame {
    object: bool,
    /// No element or member written yet.
    first: bool,
    /// Where its `{` or `[` is in the output.
    start: usize,
    /// Its members are `members[base..]`.
    base: usize,
    /// The member being written: its key's raw text in the input, and where it starts in the
    /// output.
    key: (usize, usize),
    key_out: usize,
}

/// A member of an open object: its key's raw text in the input, its `"key":value` in the output.
#[derive(Clone, Copy)]
struct Member {
    key: (usize, usize),
    out: (usize, usize),
}

struct Jcs<'a, 'o> {
    text: &'a str,
    out: &'o mut String,
    limit: usize,
    frames: Vec<Frame>,
    members: Vec<Member>,
}

const ROLE_OBJECT: u8 = 1;
const ROLE_ARRAY: u8 = 2;

fn too_long(at: usize) -> ScanError {
    ScanError {
        kind: ScanErrorKind::Invalid,
        offset: at,
    }
}

impl Jcs<'_, '_> {
    fn check(&self, at: usize) -> Result<(), ScanError> {
        if self.out.len() > self.limit {
            Err(too_long(at))
        } else {
            Ok(())
        }
    }

    /// A `,` before every element of an array but the first.
    fn separate(&mut self) {
        if let Some(f) = self.frames.last_mut() {
            if !f.object {
                if !f.first {
                    self.out.push(',');
                }
                f.first = false;
            }
        }
    }

    fn string(&mut self, raw: &str) {
        self.out.push('"');
        for c in Decoded::new(raw) {
            match c {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\u{8}' => self.out.push_str("\\b"),
                '\u{c}' => self.out.push_str("\\f"),
                '\n' => self.out.push_str("\\n"),
                '\r' => self.out.push_str("\\r"),
                '\t' => self.out.push_str("\\t"),
                c if c < ' ' => {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    let b = c as u8;
                    self.out.push_str("\\u00");
                    self.out.push(char::from(HEX[usize::from(b >> 4)]));
                    self.out.push(char::from(HEX[usize::from(b & 0xf)]));
                }
                c => self.out.push(c),
            }
        }
        self.out.push('"');
    }

    fn offset(&self, part: &str) -> usize {
        (part.as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize)
    }

    /// A value is complete: in an object, that ends the member being written.
    fn end_member(&mut self) {
        if let Some(f) = self.frames.last().filter(|f| f.object) {
            self.members.push(Member {
                key: f.key,
                out: (f.key_out, self.out.len()),
            });
        }
    }

    /// The object on top closes: its members sorted by key, then `}`.
    fn close_object(&mut self) {
        let Some(f) = self.frames.pop() else {
            return;
        };
        let text = self.text;
        let raw = |m: &Member| text.get(m.key.0..m.key.1).unwrap_or_default();
        let members = self.members.get_mut(f.base..).unwrap_or_default();
        let sorted = members
            .windows(2)
            .all(|w| utf16_order(raw(&w[0]), raw(&w[1])) == Ordering::Less);
        if !sorted {
            let body_at = f.start + 1;
            let body = self.out.split_off(body_at);
            members.sort_by(|a, b| utf16_order(raw(a), raw(b)));
            for (n, m) in members.iter().enumerate() {
                if n > 0 {
                    self.out.push(',');
                }
                if let Some(part) = body.get(m.out.0 - body_at..m.out.1 - body_at) {
                    self.out.push_str(part);
                }
            }
        }
        self.members.truncate(f.base);
        self.out.push('}');
    }

    fn number(&mut self, text: &str) {
        // The strict scan accepted the literal, so it is a finite double.
        let v: f64 = text.parse().unwrap_or(0.0);
        let mut buf = ryu_js::Buffer::new();
        self.out.push_str(buf.format_finite(v));
    }
}

impl<'a> Visitor<'a> for Jcs<'a, '_> {
    fn open(&mut self, _slot: u8, object: bool, _at: usize) -> u8 {
        self.separate();
        let start = self.out.len();
        self.out.push(if object { '{' } else { '[' });
        self.frames.push(Frame {
            object,
            first: true,
            start,
            base: self.members.len(),
            key: (0, 0),
            key_out: 0,
        });
        if object { ROLE_OBJECT } else { ROLE_ARRAY }
    }

    fn key(&mut self, _role: u8, raw: &'a str, _plain: bool, at: usize) -> Result<u8, ScanError> {
        let k = self.offset(raw);
        if let Some(f) = self.frames.last_mut() {
            if !f.first {
                self.out.push(',');
            }
            f.first = false;
            f.key = (k, k + raw.len());
            f.key_out = self.out.len();
        }
        self.string(raw);
        self.out.push(':');
        self.check(at)?;
        Ok(0)
    }

    fn value(&mut self, _slot: u8, role: u8, text: &'a str) -> Result<(), ScanError> {
        match role {
            ROLE_OBJECT => self.close_object(),
            ROLE_ARRAY => {
                self.frames.pop();
                self.out.push(']');
            }
            _ => {
                self.separate();
                match text.as_bytes().first() {
                    Some(b'"') => {
                        let inner = text
                            .get(1..text.len().saturating_sub(1))
                            .unwrap_or_default();
                        self.string(inner);
                    }
                    Some(b'-' | b'0'..=b'9') => self.number(text),
                    _ => self.out.push_str(text),
                }
            }
        }
        self.end_member();
        let at = self.offset(text);
        self.check(at)
    }
}

/// The UTF-16 code units of raw (escaped) JSON string contents, decoded.
fn utf16_units(s: &str) -> impl Iterator<Item = u16> + '_ {
    Decoded::new(s).flat_map(|c| {
        let mut buf = [0u16; 2];
        let n = c.encode_utf16(&mut buf).len();
        buf.into_iter().take(n)
    })
}

/// UTF-16 order of two raw (escaped) JSON string contents, decoded.
fn utf16_order(a: &str, b: &str) -> Ordering {
    utf16_units(a).cmp(utf16_units(b))
}
