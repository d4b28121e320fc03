//! The fast path of the canonical form: texts in a simple subset (the common `arguments` of a
//! `tools/call`) are transcribed without decoding anything but numbers that are not short
//! integers. Anything outside the subset is declined and goes to the general canonicalizer
//! ([`super::full`]).

/// Writes the RFC 8785 (JCS) canonical form of `raw` into `out`, straight from the text, when
/// `raw` is in a simple subset where that form is a plain transcription: object keys that are
/// ASCII without escapes (so UTF-16 order is byte order), strings whose escapes are all written
/// as JCS writes them ([`canonical_escape`]: JCS writes such a string as it is), and numbers
/// (an integer of at most 15 digits other than `-0` as it is written, any other as ECMAScript
/// writes the double it reads as, as the general canonicalizer does; the form at most `limit`
/// bytes long, the general canonicalizer's bound). Returns `false` for anything else, leaving
/// `out` in an unspecified state; the caller then canonicalizes a parsed `Value` instead. `raw`
/// must have passed the strict pre-scan (valid, no duplicate keys), which is what makes sorting
/// by raw key bytes a total order.
pub(crate) fn canonicalize_simple(raw: &str, out: &mut String, limit: usize) -> bool {
    out.clear();
    let mut c = Canon {
        s: raw.as_bytes(),
        t: raw,
        limit,
        i: 0,
        members: MEMBERS.with(std::cell::RefCell::take),
    };
    c.ws();
    let took = c.value(out, 0) && {
        c.ws();
        c.i == raw.len()
    };
    c.members.clear();
    if c.members.capacity() <= MEMBERS_KEPT {
        MEMBERS.with(|m| m.replace(c.members));
    }
    took
}

/// A member of an object being transcribed: its key's range in the input and the range of
/// `"key":value` in the output.
type Member = ((usize, usize), (usize, usize));

/// Member slots kept for the next call (an object with more members allocates its own).
const MEMBERS_KEPT: usize = 4096;

thread_local! {
    /// The members of the objects being transcribed, as a stack (each object uses the part above
    /// where it started), reused from call to call: simple arguments cost no allocation.
    static MEMBERS: std::cell::RefCell<Vec<Member>> = const { std::cell::RefCell::new(Vec::new()) };
}

struct Canon<'a> {
    /// The text's bytes, read one at a time.
    s: &'a [u8],
    /// The same text, whose pieces are copied: the form is text without being validated again.
    t: &'a str,
    /// The longest form written (the general canonicalizer's bound): only numbers grow.
    limit: usize,
    i: usize,
    members: Vec<Member>,
}

/// Deeper input falls back to the general path (client lines are bounded far below this anyway).
const CANON_MAX_DEPTH: usize = 128;

impl Canon<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn lit(&mut self, word: &str, out: &mut String) -> bool {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            out.push_str(word);
            self.i += word.len();
            true
        } else {
            false
        }
    }

    /// A string whose escapes are all written as JCS writes them, or, for a key (`key`), an
    /// ASCII string without escapes; returns its contents' range.
    #[inline]
    fn string(&mut self, key: bool) -> Option<(usize, usize)> {
        let start = self.i + 1;
        let mut end = start;
        loop {
            end += memchr::memchr2(b'"', b'\\', self.s.get(end..)?)?;
            let rest = self.s.get(end..)?;
            if rest.first() == Some(&b'"') {
                break;
            }
            if key {
                return None;
            }
            end += canonical_escape(rest)?;
        }
        if key && !self.s.get(start..end)?.is_ascii() {
            return None;
        }
        self.i = end + 1;
        Some((start, end))
    }

    /// Copies the text from `a` to `z` (byte offsets on ASCII characters the walk found).
    fn copy(&self, a: usize, z: usize, out: &mut String) -> bool {
        match self.t.get(a..z) {
            Some(piece) => {
                out.push_str(piece);
                true
            }
            None => false,
        }
    }

    fn value(&mut self, out: &mut String, depth: usize) -> bool {
        let Some(&b) = self.s.get(self.i) else {
            return false;
        };
        match b {
            b'{' => self.object(out, depth + 1),
            b'[' => self.array(out, depth + 1),
            b'"' => match self.string(false) {
                Some((a, z)) => self.copy(a - 1, z + 1, out),
                None => false,
            },
            b't' => self.lit("true", out),
            b'f' => self.lit("false", out),
            b'n' => self.lit("null", out),
            b'-' | b'0'..=b'9' => self.number(out),
            _ => false,
        }
    }

    /// A number: an integer of at most 15 digits other than `-0` as it is written (its ES6
    /// text is the literal); any other as ECMAScript writes the double it reads as (`ryu-js`,
    /// as the general canonicalizer writes it), within the bound on the form's growth.
    fn number(&mut self, out: &mut String) -> bool {
        let start = self.i;
        let neg = self.s.get(start) == Some(&b'-');
        let int_at = start + usize::from(neg);
        let int_end = digits_end(self.s, int_at);
        let digits = int_end - int_at;
        let zero = self.s.get(int_at) == Some(&b'0');
        if digits == 0 || (digits > 1 && zero) {
            return false;
        }
        let mut end = int_end;
        if self.s.get(end) == Some(&b'.') {
            let fraction_end = digits_end(self.s, end + 1);
            if fraction_end == end + 1 {
                return false;
            }
            end = fraction_end;
        }
        if let Some(b'e' | b'E') = self.s.get(end) {
            let mut exponent_at = end + 1;
            if let Some(b'+' | b'-') = self.s.get(exponent_at) {
                exponent_at += 1;
            }
            let exponent_end = digits_end(self.s, exponent_at);
            if exponent_end == exponent_at {
                return false;
            }
            end = exponent_end;
        }
        self.i = end;
        if end == int_end && digits <= 15 && !(neg && zero) {
            return self.copy(start, end, out);
        }
        let Some(Ok(v)) = self.t.get(start..end).map(str::parse::<f64>) else {
            return false;
        };
        if !v.is_finite() {
            return false;
        }
        out.push_str(ryu_js::Buffer::new().format_finite(v));
        out.len() <= self.limit
    }

    fn array(&mut self, out: &mut String, depth: usize) -> bool {
        if depth > CANON_MAX_DEPTH {
            return false;
        }
        self.i += 1;
        out.push('[');
        self.ws();
        if self.s.get(self.i) == Some(&b']') {
            self.i += 1;
            out.push(']');
            return true;
        }
        loop {
            if !self.value(out, depth) {
                return false;
            }
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    out.push(',');
                    self.ws();
                }
                Some(b']') => {
                    self.i += 1;
                    out.push(']');
                    return true;
                }
                _ => return false,
            }
        }
    }

    fn object(&mut self, out: &mut String, depth: usize) -> bool {
        if depth > CANON_MAX_DEPTH {
            return false;
        }
        self.i += 1;
        self.ws();
        let obj_start = out.len();
        out.push('{');
        if self.s.get(self.i) == Some(&b'}') {
            self.i += 1;
            out.push('}');
            return true;
        }
        // This object's members are `self.members[base..]`.
        let base = self.members.len();
        let mut sorted = true;
        loop {
            if self.s.get(self.i) != Some(&b'"') {
                return false;
            }
            let Some(key) = self.string(true) else {
                return false;
            };
            self.ws();
            if self.s.get(self.i) != Some(&b':') {
                return false;
            }
            self.i += 1;
            self.ws();
            let m_start = out.len();
            if !self.copy(key.0 - 1, key.1 + 1, out) {
                return false;
            }
            out.push(':');
            if !self.value(out, depth) {
                return false;
            }
            if let Some(&(prev, _)) = self.members.get(base..).and_then(<[Member]>::last) {
                if self.s[prev.0..prev.1] >= self.s[key.0..key.1] {
                    sorted = false;
                }
            }
            self.members.push((key, (m_start, out.len())));
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    out.push(',');
                    self.ws();
                }
                Some(b'}') => {
                    self.i += 1;
                    break;
                }
                _ => return false,
            }
        }
        if !sorted {
            let body_base = obj_start + 1;
            let Some(body) = out.get(body_base..).map(str::to_owned) else {
                return false;
            };
            let s = self.s;
            let members = self.members.get_mut(base..).unwrap_or_default();
            members.sort_by(|a, b| s[a.0.0..a.0.1].cmp(&s[b.0.0..b.0.1]));
            out.truncate(body_base);
            for (n, (_, (a, z))) in members.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                let Some(part) = body.get(a - body_base..z - body_base) else {
                    return false;
                };
                out.push_str(part);
            }
        }
        self.members.truncate(base);
        out.push('}');
        true
    }
}

/// Where the run of ASCII digits starting at `at` ends.
fn digits_end(s: &[u8], mut at: usize) -> usize {
    while let Some(b'0'..=b'9') = s.get(at) {
        at += 1;
    }
    at
}

/// The length of the escape `e` starts with, when it is written as JCS writes its character
/// (ECMAScript's `JSON.stringify`): `\"`, `\\`, the short `\b \f \n \r \t`, and `\u00xx` in
/// lowercase hex for every other character below U+0020. `None` for any other escape (`\/`,
/// `\u0041`, `\u000a`, `\u001F`, a surrogate pair), whose character JCS writes otherwise.
fn canonical_escape(e: &[u8]) -> Option<usize> {
    match *e {
        [b'\\', b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't', ..] => Some(2),
        [b'\\', b'u', b'0', b'0', hi @ (b'0' | b'1'), lo, ..] => {
            let lo = match lo {
                b'0'..=b'9' => lo - b'0',
                b'a'..=b'f' => lo - b'a' + 10,
                _ => return None,
            };
            // The five with a short form are written short.
            let c = (hi - b'0') * 16 + lo;
            (!matches!(c, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)).then_some(6)
        }
        _ => None,
    }
}
