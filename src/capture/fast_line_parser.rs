//! One-pass parser for the common shape of a decision line.
//!
//! A decision line as the wrapper writes it is compact JSON with a fixed set of keys. For such a
//! line this parser does, in a single pass, what the strict pre-scan followed by the `serde`
//! parse does in two: it checks the JSON and extracts the fields. It accepts only a narrow
//! subset, and returns `None` for anything outside it (whitespace, unknown or escaped keys, a
//! duplicate or missing key, a value of another type, `\u` escapes, escapes in a field that is
//! compared, a number other than a plain non-negative integer, nesting, a `type` other than
//! `assay.tool.decision` and `assay.mcp.decision` — so the listing lines of SPEC §4.1a always
//! take the general path — or a `data` key that is not one of that type's). The caller then takes
//! the general path (`strict_json::scan_str` + `serde_json`), which produces the reasons.
//!
//! So the fast path never decides a refusal; it only accepts, and it accepts exactly when the
//! general path would accept the line with the same field values: every accepted line is strict
//! JSON (UTF-8 checked by the caller, no control characters, only valid escapes, no duplicate
//! keys, depth 2, no non-finite numbers) with every required key present once and of its type.

use super::decision_line::{Decision, LineKind, LineView, TYPE_MCP_DECISION, TYPE_TOOL_DECISION};
use crate::direction::Direction;
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

/// A JSON string's contents between its quotes, as written (escapes not undone).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Text<'a> {
    /// The bytes between the quotes.
    pub(super) raw: &'a str,
    /// `raw` holds an escape: it is not the string's value.
    pub(super) escaped: bool,
}

impl<'a> Text<'a> {
    /// The string's value when it is written without escapes.
    pub(super) fn plain(self) -> Option<&'a str> {
        (!self.escaped).then_some(self.raw)
    }
}

/// The text fields of a decision line's `data` that the checks do not compare, as written
/// (`None`: absent or null), for a reading of the line's fields after its checks
/// ([`parse_texts`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Texts<'a> {
    pub(super) tool: Option<Text<'a>>,
    pub(super) tool_call_id: Option<Text<'a>>,
    pub(super) decision: &'a str,
    pub(super) reason_code: &'a str,
    pub(super) reason: Option<Text<'a>>,
    pub(super) matched_rule: Option<Text<'a>>,
    pub(super) arguments: Option<Text<'a>>,
    pub(super) method: Option<Text<'a>>,
    pub(super) direction: Option<&'a str>,
    pub(super) target: Option<Text<'a>>,
    pub(super) request_id: Option<Text<'a>>,
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

    /// A string the checks do not compare: simple escapes (`\" \\ \/ \b \f \n \r \t`)
    /// allowed, `\u` and anything else refused. Its contents between the quotes, as written.
    fn any_str(&mut self) -> Option<Text<'a>> {
        self.eat(b'"')?;
        let start = self.pos;
        let mut escaped = false;
        loop {
            self.skip_plain();
            match *self.b.get(self.pos)? {
                b'"' => {
                    let raw = self.s.get(start..self.pos)?;
                    self.pos += 1;
                    return Some(Text { raw, escaped });
                }
                b'\\' => match *self.b.get(self.pos + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                        escaped = true;
                        self.pos += 2;
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    fn nullable_any_str(&mut self) -> Option<Option<Text<'a>>> {
        if self.eat_word(b"null") {
            Some(None)
        } else {
            self.any_str().map(Some)
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

/// The keys of a line's `data`, one bit each: those of a tool decision and those of an MCP
/// decision (a key of neither sends the line to the general path).
mod key {
    pub(super) const SESSION_ID: u32 = 1 << 0;
    pub(super) const SEQ: u32 = 1 << 1;
    pub(super) const TOOL: u32 = 1 << 2;
    pub(super) const TOOL_CALL_ID: u32 = 1 << 3;
    pub(super) const DECISION: u32 = 1 << 4;
    pub(super) const REASON_CODE: u32 = 1 << 5;
    pub(super) const REASON: u32 = 1 << 6;
    pub(super) const MATCHED_RULE: u32 = 1 << 7;
    pub(super) const ENFORCED: u32 = 1 << 8;
    pub(super) const POLICY_SHA256: u32 = 1 << 9;
    pub(super) const ARGUMENTS_SHA256: u32 = 1 << 10;
    pub(super) const TOOL_DEFINITION_SHA256: u32 = 1 << 11;
    pub(super) const ARGUMENTS: u32 = 1 << 12;
    pub(super) const ARGUMENTS_TRUNCATED: u32 = 1 << 13;
    pub(super) const METHOD: u32 = 1 << 14;
    pub(super) const DIRECTION: u32 = 1 << 15;
    pub(super) const TARGET: u32 = 1 << 16;
    pub(super) const REQUEST_ID: u32 = 1 << 17;
    pub(super) const PARAMS_SHA256: u32 = 1 << 18;

    /// Every decision's keys.
    const COMMON: u32 = SESSION_ID
        | SEQ
        | DECISION
        | REASON_CODE
        | REASON
        | MATCHED_RULE
        | ENFORCED
        | POLICY_SHA256;
    /// The keys an `assay.tool.decision` must hold (SPEC §4.1).
    pub(super) const TOOL_REQUIRED: u32 = COMMON | TOOL | TOOL_CALL_ID | ARGUMENTS_SHA256;
    /// And those it may hold (SPEC §5.1, §4.1a).
    pub(super) const TOOL_ALLOWED: u32 =
        TOOL_REQUIRED | TOOL_DEFINITION_SHA256 | ARGUMENTS | ARGUMENTS_TRUNCATED;
    /// The keys of an `assay.mcp.decision`, every one required (SPEC §4.1a).
    pub(super) const MCP: u32 = COMMON | METHOD | DIRECTION | TARGET | REQUEST_ID | PARAMS_SHA256;
}

/// What the one pass read of a line's `data` beyond [`LineView`]: which keys, and the digest
/// of either kind (`arguments_sha256` or `params_sha256`).
#[derive(Default)]
struct DataKeys<'a> {
    seen: u32,
    arguments_sha256: Option<&'a str>,
    params_sha256: Option<&'a str>,
    texts: Texts<'a>,
}

/// Parses `line` (one decision line without its newline) when it has the common shape of a
/// tool decision or an MCP decision; `None` sends the caller to the general path. The kind is
/// the line's `type` (only those two are read here: a listing always takes the general path).
pub(super) fn parse(line: &str) -> Option<(LineView<'_>, LineKind)> {
    parse_as::<false>(line).map(|(v, kind, _)| (v, kind))
}

/// [`parse`], with the text fields of `data` the checks do not compare, as written.
pub(super) fn parse_texts(line: &str) -> Option<(LineView<'_>, LineKind, Texts<'_>)> {
    parse_as::<true>(line)
}

/// The one pass; with `TEXTS` the texts are kept (without, the reader's checks do not pay for
/// them: the stores go to a scratch value the compiler drops).
fn parse_as<const TEXTS: bool>(line: &str) -> Option<(LineView<'_>, LineKind, Texts<'_>)> {
    let mut p = P {
        s: line,
        b: line.as_bytes(),
        pos: 0,
    };
    let mut v = LineView::default();
    let mut keys = DataKeys::default();
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
                data::<TEXTS>(&mut p, &mut v, &mut keys)?;
            }
            _ => return None,
        }
        if !p.next()? {
            break;
        }
    }
    if seen != 0x7f || p.pos != p.b.len() {
        return None;
    }
    // The `data` keys must be exactly those of the line's type; anything else (another type,
    // a key of the other kind, a missing key) is the general path's to read and name.
    let kind = if v.ty == TYPE_TOOL_DECISION {
        let ok = keys.seen & key::TOOL_REQUIRED == key::TOOL_REQUIRED
            && keys.seen & !key::TOOL_ALLOWED == 0;
        v.arguments_sha256 = keys.arguments_sha256;
        ok.then_some(LineKind::Tool)?
    } else if v.ty == TYPE_MCP_DECISION {
        v.arguments_sha256 = keys.params_sha256;
        (keys.seen == key::MCP).then_some(LineKind::Mcp)?
    } else {
        return None;
    };
    Some((v, kind, keys.texts))
}

fn data<'a, const TEXTS: bool>(
    p: &mut P<'a>,
    v: &mut LineView<'a>,
    keys: &mut DataKeys<'a>,
) -> Option<()> {
    let mut scratch = Texts::default();
    p.eat(b'{')?;
    loop {
        let k = p.key()?;
        let bit = match k {
            b"session_id" => key::SESSION_ID,
            b"seq" => key::SEQ,
            b"tool" => key::TOOL,
            b"tool_call_id" => key::TOOL_CALL_ID,
            b"decision" => key::DECISION,
            b"reason_code" => key::REASON_CODE,
            b"reason" => key::REASON,
            b"matched_rule" => key::MATCHED_RULE,
            b"enforced" => key::ENFORCED,
            b"policy_sha256" => key::POLICY_SHA256,
            b"arguments_sha256" => key::ARGUMENTS_SHA256,
            // SPEC §5.1: optional (older lines lack it).
            b"tool_definition_sha256" => key::TOOL_DEFINITION_SHA256,
            // SPEC §4.1a `record_arguments`: optional, together.
            b"arguments" => key::ARGUMENTS,
            b"arguments_truncated" => key::ARGUMENTS_TRUNCATED,
            // SPEC §4.1a `assay.mcp.decision`.
            b"method" => key::METHOD,
            b"direction" => key::DIRECTION,
            b"target" => key::TARGET,
            b"request_id" => key::REQUEST_ID,
            b"params_sha256" => key::PARAMS_SHA256,
            _ => return None,
        };
        if keys.seen & bit != 0 {
            return None;
        }
        keys.seen |= bit;
        let t = if TEXTS { &mut keys.texts } else { &mut scratch };
        match bit {
            key::SESSION_ID => v.session_id = p.plain_str()?,
            key::SEQ => v.seq = p.uint()?,
            key::DECISION => {
                t.decision = p.plain_str()?;
                v.decision = decision(t.decision)?;
            }
            key::REASON_CODE => {
                t.reason_code = p.plain_str()?;
                v.reason_code = ReasonCode::parse(t.reason_code)?;
            }
            key::ENFORCED => v.enforced = p.bool()?,
            key::POLICY_SHA256 => v.policy_sha256 = p.plain_str()?,
            key::ARGUMENTS_SHA256 => keys.arguments_sha256 = p.nullable_plain_str()?,
            key::PARAMS_SHA256 => keys.params_sha256 = p.nullable_plain_str()?,
            key::TOOL_DEFINITION_SHA256 => v.tool_definition_sha256 = p.nullable_plain_str()?,
            key::ARGUMENTS => {
                t.arguments = Some(p.any_str()?);
                v.arguments = true;
            }
            key::ARGUMENTS_TRUNCATED => v.arguments_truncated = Some(p.bool()?),
            key::DIRECTION => {
                let d = p.plain_str()?;
                Direction::parse(d)?;
                t.direction = Some(d);
            }
            key::REASON => t.reason = Some(p.any_str()?),
            key::METHOD => t.method = Some(p.any_str()?),
            // A string or null.
            key::TOOL => t.tool = p.nullable_any_str()?,
            key::TOOL_CALL_ID => t.tool_call_id = p.nullable_any_str()?,
            key::MATCHED_RULE => t.matched_rule = p.nullable_any_str()?,
            key::TARGET => t.target = p.nullable_any_str()?,
            key::REQUEST_ID => t.request_id = p.nullable_any_str()?,
            _ => return None,
        }
        if !p.next()? {
            break;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::super::MAX_DEPTH;
    use serde_json::{Value, json};

    use super::super::decision_line::{LineKind, Parsed};
    use super::super::testutil::{Builder, set};
    use super::parse;
    use crate::strict_json;

    /// What the general path makes of `line`: the view when the strict scan and the serde parse
    /// both accept it.
    fn general(line: &str) -> Option<Parsed<'_>> {
        strict_json::scan_str(line, MAX_DEPTH).ok()?;
        Parsed::from_line(line).ok()
    }

    /// The fast path accepts only what the general path accepts, as the same type and with the
    /// same fields.
    fn agrees(line: &str) {
        if let Some(fast) = parse(line) {
            let Some(parsed) = general(line) else {
                panic!("fast path accepted a line the general path refuses: {line:?}");
            };
            assert_eq!(fast, parsed.view(), "{line:?}");
        }
    }

    /// A tool decision carrying recorded arguments (SPEC §4.1a `record_arguments`): a JSON
    /// string holding canonical JSON, escapes included.
    fn with_arguments(b: &Builder, seq: usize, truncated: bool) -> Value {
        let mut v = b.line(seq);
        set(
            &mut v,
            "data/arguments",
            json!("{\"path\":\"/etc/\\\"x\",\"token\":\"[redacted]\"}"),
        );
        set(&mut v, "data/arguments_truncated", json!(truncated));
        v
    }

    #[test]
    fn accepts_the_wrapper_shape() {
        let mut b = Builder::new(12);
        b.other_events = true;
        for i in 0..12 {
            let line = serde_json::to_string(&b.line(i)).unwrap();
            let kind = match i % 4 {
                1 => {
                    // A listing always takes the general path.
                    assert!(parse(&line).is_none(), "{line}");
                    continue;
                }
                2 => LineKind::Mcp,
                _ => LineKind::Tool,
            };
            let (v, k) = parse(&line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!((v.seq, k), (i as u64, kind));
            agrees(&line);
        }
        for truncated in [false, true] {
            let line = serde_json::to_string(&with_arguments(&b, 0, truncated)).unwrap();
            let (v, k) = parse(&line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(
                (k, v.arguments, v.arguments_truncated),
                (LineKind::Tool, true, Some(truncated))
            );
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
        let lines = (0..4).map(|seq| b.line(seq)).chain([
            b.listing_line(1),
            b.mcp_line(2),
            with_arguments(&b, 0, true),
        ]);
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

    /// MCP decisions (SPEC §4.1a): what the fast path declines — the general path then reads
    /// the line and names the problem (or accepts it: an escaped key, a key of no kind).
    #[test]
    fn refuses_what_it_does_not_know_in_mcp_decisions() {
        let b = Builder::new(3);
        let line = serde_json::to_string(&b.mcp_line(2)).unwrap();
        assert!(parse(&line).is_some_and(|(_, k)| k == LineKind::Mcp));
        let cases = [
            // Duplicate key, escaped key, unknown direction, wrong types, a missing key.
            line.replacen(
                "\"direction\":",
                "\"direction\":\"server_to_client\",\"direction\":",
                1,
            ),
            line.replacen("\"direction\"", "\"\\u0064irection\"", 1),
            line.replacen("client_to_server", "sideways", 1),
            line.replacen("client_to_server", "client\\u005fto_server", 1),
            line.replacen("\"method\":\"resources/read\"", "\"method\":null", 1),
            line.replacen("\"target\":\"file:///workspace/.env\"", "\"target\":3", 1),
            line.replacen("\"request_id\":\"2\"", "\"request_id\":2", 1),
            line.replacen("\"method\":\"resources/read\",", "", 1),
            line.replacen(",\"target\":\"file:///workspace/.env\"", "", 1),
            // A tool decision's key on an MCP decision, and the other way round.
            line.replacen("\"seq\":2,", "\"seq\":2,\"tool\":null,", 1),
            line.replacen(
                "\"seq\":2,",
                "\"seq\":2,\"arguments\":\"{}\",\"arguments_truncated\":false,",
                1,
            ),
            line.replacen("assay.mcp.decision", "assay.tool.decision", 1),
        ];
        for bad in &cases {
            assert_ne!(bad, &line);
            assert!(parse(bad).is_none(), "{bad}");
            agrees(bad);
        }
        let tool = serde_json::to_string(&b.line(0)).unwrap();
        for bad in [
            tool.replacen("\"seq\":0,", "\"seq\":0,\"method\":\"x\",", 1),
            tool.replacen("assay.tool.decision", "assay.mcp.decision", 1),
            tool.replacen("\"seq\":0,", "\"seq\":0,\"arguments\":{},\"arguments_truncated\":false,", 1),
            tool.replacen("\"seq\":0,", "\"seq\":0,\"arguments\":\"{}\",\"arguments\":\"{}\",\"arguments_truncated\":false,", 1),
        ] {
            assert_ne!(bad, tool);
            assert!(parse(&bad).is_none(), "{bad}");
            agrees(&bad);
        }
    }
}
