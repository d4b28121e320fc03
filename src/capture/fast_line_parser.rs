//! One-pass parser for the common shape of a decision line.
//!
//! A decision line as the wrapper writes it is compact JSON with a fixed set of keys. For such a
//! line this parser does, in a single pass, what the strict pre-scan followed by the `serde`
//! parse does in two: it checks the JSON and extracts the fields. It accepts only a narrow
//! subset, and returns `None` for anything outside it (whitespace, unknown or escaped keys, a
//! duplicate or missing key, a value of another type, `\u` escapes, escapes in a field that is
//! compared, a number other than a plain non-negative integer, nesting, a `type` other than
//! `assay.tool.decision` — so the listing and MCP-decision lines of SPEC §4.1a always take the
//! general path). The caller then takes
//! the general path (`strict_json::scan_str` + `serde_json`), which produces the reasons.
//!
//! So the fast path never decides a refusal; it only accepts, and it accepts exactly when the
//! general path would accept the line with the same field values: every accepted line is strict
//! JSON (UTF-8 checked by the caller, no control characters, only valid escapes, no duplicate
//! keys, depth 2, no non-finite numbers) with every required key present once and of its type.

use super::decision_line::{Decision, LineView, TYPE_TOOL_DECISION};
use crate::reason_code::ReasonCode;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Nonzero iff some byte of `x` is `"`, `\` or below 0x20 (exact as a boolean).
#[inline]
fn special(x: u64) -> u64 {
    let has_less = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
    has_less(x ^ (ONES * u64::from(b'"')), 1)
        | has_less(x ^ (ONES * u64::from(b'\\')), 1)
        | has_less(x, 0x20)
}

struct P<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
}

impl<'a> P<'a> {
    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        if self.b.get(self.pos) == Some(&c) {
            self.pos += 1;
            Some(())
        } else {
            None
        }
    }

    #[inline]
    fn eat_word(&mut self, w: &[u8]) -> bool {
        if self.b.get(self.pos..self.pos + w.len()) == Some(w) {
            self.pos += w.len();
            true
        } else {
            false
        }
    }

    /// Advances over string bytes that are not `"`, `\` or control characters, 16 then 8 at a
    /// time, then byte by byte; stops at the first special byte (or the end).
    #[inline]
    fn skip_plain(&mut self) {
        while let Some(chunk) = self.b.get(self.pos..self.pos + 16) {
            let mut w = [0u8; 8];
            w.copy_from_slice(&chunk[..8]);
            let a = u64::from_le_bytes(w);
            w.copy_from_slice(&chunk[8..]);
            let b = u64::from_le_bytes(w);
            if special(a) | special(b) != 0 {
                break;
            }
            self.pos += 16;
        }
        while let Some(chunk) = self.b.get(self.pos..self.pos + 8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(chunk);
            if special(u64::from_le_bytes(w)) != 0 {
                break;
            }
            self.pos += 8;
        }
        while let Some(&c) = self.b.get(self.pos) {
            if c == b'"' || c == b'\\' || c < 0x20 {
                break;
            }
            self.pos += 1;
        }
    }

    /// A string without escapes (the opening quote at `pos`); its contents, borrowed.
    #[inline]
    fn plain_str(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.pos;
        self.skip_plain();
        let end = self.pos;
        self.eat(b'"')?;
        // Stopped only before ASCII bytes of a valid UTF-8 text: on character boundaries.
        self.s.get(start..end)
    }

    /// A string whose value is not needed: simple escapes (`\" \\ \/ \b \f \n \r \t`) allowed,
    /// `\u` and anything else refused.
    fn any_str(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            self.skip_plain();
            match *self.b.get(self.pos)? {
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                b'\\' => match *self.b.get(self.pos + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.pos += 2,
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    fn nullable_any_str(&mut self) -> Option<()> {
        if self.eat_word(b"null") {
            Some(())
        } else {
            self.any_str()
        }
    }

    fn nullable_plain_str(&mut self) -> Option<Option<&'a str>> {
        if self.eat_word(b"null") {
            Some(None)
        } else {
            self.plain_str().map(Some)
        }
    }

    fn bool(&mut self) -> Option<bool> {
        if self.eat_word(b"true") {
            Some(true)
        } else if self.eat_word(b"false") {
            Some(false)
        } else {
            None
        }
    }

    /// `0` or `[1-9][0-9]*` fitting a u64, followed by `,` or `}` (checked by the caller).
    fn uint(&mut self) -> Option<u64> {
        let first = *self.b.get(self.pos)?;
        if first == b'0' {
            self.pos += 1;
            return match self.b.get(self.pos) {
                Some(b'0'..=b'9' | b'.' | b'e' | b'E') => None,
                _ => Some(0),
            };
        }
        let mut n: u64 = 0;
        let start = self.pos;
        while let Some(&c @ b'0'..=b'9') = self.b.get(self.pos) {
            n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            self.pos += 1;
        }
        if self.pos == start || matches!(self.b.get(self.pos), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(n)
    }

    /// `"key":` with a plain key.
    #[inline]
    fn key(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.pos;
        self.skip_plain();
        let end = self.pos;
        self.eat(b'"')?;
        self.eat(b':')?;
        self.b.get(start..end)
    }

    /// After a member: `,` (more members, true) or `}` (end, false).
    #[inline]
    fn next(&mut self) -> Option<bool> {
        match *self.b.get(self.pos)? {
            b',' => {
                self.pos += 1;
                Some(true)
            }
            b'}' => {
                self.pos += 1;
                Some(false)
            }
            _ => None,
        }
    }
}

/// Marks key `bit` as seen; `None` on a duplicate.
#[inline]
fn see(seen: &mut u32, bit: u32) -> Option<()> {
    if *seen & (1 << bit) != 0 {
        return None;
    }
    *seen |= 1 << bit;
    Some(())
}

fn decision(s: &str) -> Option<Decision> {
    Some(match s {
        "allow" => Decision::Allow,
        "deny" => Decision::Deny,
        "error" => Decision::Error,
        _ => return None,
    })
}

/// Parses `line` (one decision line without its newline) when it has the common shape;
/// `None` sends the caller to the general path.
pub(super) fn parse(line: &str) -> Option<LineView<'_>> {
    let mut p = P {
        s: line,
        b: line.as_bytes(),
        pos: 0,
    };
    let mut v = LineView::default();
    p.eat(b'{')?;
    let mut seen = 0u32;
    loop {
        match p.key()? {
            b"specversion" => {
                see(&mut seen, 0)?;
                v.specversion = p.plain_str()?;
            }
            b"id" => {
                see(&mut seen, 1)?;
                v.id = p.plain_str()?;
            }
            b"type" => {
                see(&mut seen, 2)?;
                v.ty = p.plain_str()?;
            }
            b"source" => {
                see(&mut seen, 3)?;
                v.source = p.plain_str()?;
            }
            b"time" => {
                see(&mut seen, 4)?;
                v.time = p.plain_str()?;
            }
            b"datacontenttype" => {
                see(&mut seen, 5)?;
                v.datacontenttype = p.plain_str()?;
            }
            b"data" => {
                see(&mut seen, 6)?;
                data(&mut p, &mut v)?;
            }
            _ => return None,
        }
        if !p.next()? {
            break;
        }
    }
    // Only a tool decision: the general path reads the other event types (SPEC §4.1a) with
    // their own shapes, so a line of another `type` always goes there.
    (seen == 0x7f && p.pos == p.b.len() && v.ty == TYPE_TOOL_DECISION).then_some(v)
}

fn data<'a>(p: &mut P<'a>, v: &mut LineView<'a>) -> Option<()> {
    p.eat(b'{')?;
    let mut seen = 0u32;
    loop {
        match p.key()? {
            b"session_id" => {
                see(&mut seen, 0)?;
                v.session_id = p.plain_str()?;
            }
            b"seq" => {
                see(&mut seen, 1)?;
                v.seq = p.uint()?;
            }
            b"tool" => {
                see(&mut seen, 2)?;
                p.nullable_any_str()?;
            }
            b"tool_call_id" => {
                see(&mut seen, 3)?;
                p.nullable_any_str()?;
            }
            b"decision" => {
                see(&mut seen, 4)?;
                v.decision = decision(p.plain_str()?)?;
            }
            b"reason_code" => {
                see(&mut seen, 5)?;
                v.reason_code = ReasonCode::parse(p.plain_str()?)?;
            }
            b"reason" => {
                see(&mut seen, 6)?;
                p.any_str()?;
            }
            b"matched_rule" => {
                see(&mut seen, 7)?;
                p.nullable_any_str()?;
            }
            b"enforced" => {
                see(&mut seen, 8)?;
                v.enforced = p.bool()?;
            }
            b"policy_sha256" => {
                see(&mut seen, 9)?;
                v.policy_sha256 = p.plain_str()?;
            }
            b"arguments_sha256" => {
                see(&mut seen, 10)?;
                v.arguments_sha256 = p.nullable_plain_str()?;
            }
            // SPEC §5.1: optional (older lines lack it).
            b"tool_definition_sha256" => {
                see(&mut seen, 11)?;
                v.tool_definition_sha256 = p.nullable_plain_str()?;
            }
            _ => return None,
        }
        if !p.next()? {
            break;
        }
    }
    (seen & 0x7ff == 0x7ff).then_some(())
}

#[cfg(test)]
mod tests {
    use super::super::MAX_DEPTH;
    use super::super::decision_line::{LineView, Parsed};
    use super::super::testutil::Builder;
    use super::parse;
    use crate::strict_json;

    /// What the general path makes of `line`: the view when the strict scan and the serde parse
    /// both accept it.
    fn general(line: &str) -> Option<Parsed<'_>> {
        strict_json::scan_str(line, MAX_DEPTH).ok()?;
        Parsed::from_line(line).ok()
    }

    /// The fast path accepts only what the general path accepts, with the same fields.
    fn agrees(line: &str) {
        if let Some(fast) = parse(line) {
            let Some(Parsed::Tool(ev)) = general(line) else {
                panic!(
                    "fast path accepted a line the general path refuses or reads as another type: {line:?}"
                );
            };
            assert_eq!(fast, LineView::of(&ev), "{line:?}");
        }
    }

    #[test]
    fn accepts_the_wrapper_shape() {
        let b = Builder::new(12);
        for i in 0..12 {
            let line = serde_json::to_string(&b.line(i)).unwrap();
            let v = parse(&line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(v.seq, i as u64);
            agrees(&line);
        }
    }

    #[test]
    fn every_single_byte_edit_agrees_with_the_general_path() {
        let mut b = Builder::new(4);
        b.reason_len = 3;
        // U+0001, a control character, is built here: the sources hold none.
        let control = char::from(1).to_string();
        let subs: &[&str] = &[
            "\"",
            "\\",
            "\\u0041",
            "\\n",
            "\\x",
            "0",
            "01",
            "-1",
            "1.0",
            "1e2",
            ",",
            "}",
            "{",
            "[",
            "]",
            ":",
            " ",
            &control,
            "n",
            "null",
            "true",
            "é",
            "9999999999999999999999",
        ];
        // Tool decisions, and the listing and MCP-decision lines of SPEC §4.1a (which the fast
        // path declines, edited or not: it must never accept one the general path refuses or
        // reads as another type).
        let lines = (0..4)
            .map(|seq| b.line(seq))
            .chain([b.listing_line(1), b.mcp_line(2)]);
        for value in lines {
            let line = serde_json::to_string(&value).unwrap();
            for (at, _) in line.char_indices() {
                let next = line[at..].chars().next().map_or(at, |c| at + c.len_utf8());
                agrees(&format!("{}{}", &line[..at], &line[next..]));
                for s in subs {
                    agrees(&format!("{}{s}{}", &line[..at], &line[next..]));
                    agrees(&format!("{}{s}{}", &line[..at], &line[at..]));
                }
            }
        }
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        let line = serde_json::to_string(&Builder::new(1).line(0)).unwrap();
        assert!(parse(&line).is_some());
        // Duplicate key, unknown key, whitespace, trailing bytes, escaped key, \u escape.
        for bad in [
            line.replacen("\"seq\":0,", "\"seq\":0,\"seq\":0,", 1),
            line.replacen("\"seq\":0,", "\"seq\":0,\"x\":1,", 1),
            line.replacen("\"seq\":0,", "\"seq\": 0,", 1),
            format!("{line} "),
            line.replacen("\"seq\"", "\"s\\u0065q\"", 1),
            line.replacen("policy says", "policy \\u0073ays", 1),
            line.replacen("\"seq\":0,", "", 1),
        ] {
            assert!(parse(&bad).is_none(), "{bad}");
        }
    }
}
