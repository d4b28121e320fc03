//! JSON-RPC ids compared the way MCP clients compare them (SPEC §5, "Reading the server fails
//! closed too").
//!
//! A server's response is matched to a client request by id, and the SDKs do not compare ids
//! literally:
//!
//! - the TypeScript SDK looks the response up by `Number(response.id)`: `"0"`, `" 0"`, `"0x0"`,
//!   `"0.0"`, `""` and `0` are all request `0`;
//! - the Python SDK (`coerce_request_id`) turns a string id into `int(id)` when Python's `int`
//!   accepts it: `"+0"`, `"00"`, `"0_0"`, `" 0\n"` and `"٠"` (an Arabic-Indic zero) are all
//!   request `0`; a JSON number with an integral value is that integer;
//! - Go decoders (mcp-go and most hand-written clients) hold numbers as `float64`: `1`, `1.0`
//!   and `1e0` are one id;
//! - the official Python SDK before python-sdk #1178 (July 2025) read ids with pydantic's lax
//!   `int`: `true` and `false` are `1` and `0`, and a string is an integer after its
//!   underscores are removed and a `.000` tail dropped (`"0__1"`, `"1_0"`, `"1.0"`), which
//!   Python's own `int` refuses.
//!
//! Two ids *match* when any of those readings makes them equal: the same string, the same
//! `Number(…)` value, or the same Python integer. The relation is deliberately the union of the
//! SDKs' relations: whatever any client could take for the answer to its request is treated as
//! that answer.

use std::borrow::Cow;

use crate::lenient::Decoded;

/// What an id is under each reading that matters for matching.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IdKeys {
    /// The decoded string, for a string id.
    text: Option<Box<str>>,
    /// The value JavaScript's `Number(id)` gives (bits of the double, `-0` read as `0`), when it
    /// is not `NaN`.
    js: Option<u64>,
    /// The integer Python reads (`int(id)` for a string, the integral value of a number), as
    /// canonical decimal text.
    py: Option<Box<str>>,
}

/// An id's raw JSON text without the JSON whitespace around it (space, tab, line feed,
/// carriage return: what a JSON reader skips, and nothing else).
pub(crate) fn trim_json_space(raw: &str) -> &str {
    raw.trim_matches([' ', '\t', '\n', '\r'])
}

impl IdKeys {
    /// The keys of an id given as raw JSON text (a string, a number or a boolean, surrounding
    /// whitespace allowed). `None` for `null` and every other kind of value: such ids match
    /// nothing.
    pub(crate) fn of_json(raw: &str) -> Option<IdKeys> {
        let raw = trim_json_space(raw);
        // JavaScript's `Number(true)` and pydantic's lax `int(True)` are both 1.
        let boolean = match raw {
            "true" => Some(1u8),
            "false" => Some(0u8),
            _ => None,
        };
        if let Some(b) = boolean {
            return Some(IdKeys {
                text: None,
                js: Some(double_key(f64::from(b))),
                py: Some(b.to_string().into()),
            });
        }
        if let Some(inner) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
            let text: Cow<'_, str> = if inner.contains('\\') {
                Cow::Owned(Decoded::new(inner).collect())
            } else {
                Cow::Borrowed(inner)
            };
            return Some(IdKeys {
                js: js_number(&text).map(double_key),
                py: python_int(&text)
                    .or_else(|| pydantic_lax_int(&text))
                    .map(Into::into),
                text: Some(text.into()),
            });
        }
        let first = raw.bytes().next()?;
        if !(first == b'-' || first.is_ascii_digit()) {
            return None;
        }
        let value: f64 = raw.parse().ok().filter(|v: &f64| v.is_finite())?;
        let integer_literal = raw.bytes().all(|b| b == b'-' || b.is_ascii_digit());
        let py = if integer_literal {
            Some(canonical_integer(raw))
        } else if value.fract() == 0.0 {
            // `{:.0}` prints a double's exact integral value.
            Some(canonical_integer(&format!("{value:.0}")))
        } else {
            None
        };
        Some(IdKeys {
            text: None,
            js: Some(double_key(value)),
            py: py.map(Into::into),
        })
    }

    /// Whether some MCP client would take `self` and `other` for the same id.
    /// Its readings: the decoded string, JavaScript's `Number(…)` (the double's bits), Python's
    /// integer as decimal text. Two ids match when some reading is present in both and equal.
    pub(crate) fn readings(&self) -> (Option<&str>, Option<u64>, Option<&str>) {
        (self.text.as_deref(), self.js, self.py.as_deref())
    }

    pub(crate) fn matches(&self, other: &IdKeys) -> bool {
        same(&self.text, &other.text) || same(&self.js, &other.js) || same(&self.py, &other.py)
    }
}

/// The length of the number token `text` starts with (the bytes a JSON number can hold), for
/// the readers that take an id from a line's raw bytes without a parse.
pub(crate) fn number_token_len(text: &[u8]) -> usize {
    text.iter()
        .take_while(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        .count()
}

/// Both present and equal.
fn same<T: PartialEq>(a: &Option<T>, b: &Option<T>) -> bool {
    a.is_some() && a == b
}

/// The readings of a string id, for the differential tests: JavaScript's `Number(s)` (`None`
/// for `NaN`) and Python's `int(s)` as decimal text (`None` where it raises).
pub(crate) fn string_readings(s: &str) -> (Option<f64>, Option<String>) {
    (js_number(s), python_int(s))
}

/// pydantic's lax integer reading of a string id (the official Python SDK before python-sdk
/// #1178), for the differential tests.
pub(crate) fn lax_int_reading(s: &str) -> Option<String> {
    pydantic_lax_int(s)
}

/// The bits of a double as a lookup key: `-0` and `0` are one number.
fn double_key(v: f64) -> u64 {
    if v == 0.0 { 0 } else { v.to_bits() }
}

/// JavaScript's `StringWhiteSpaceChar`: `WhiteSpace` and `LineTerminator` (ECMA-262 §7.2, §7.3).
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{D}'
            | ' '
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
            | '\u{FEFF}'
    )
}

/// JavaScript's `Number(string)` (ECMA-262 `StringToNumber`); `None` where it gives `NaN`.
fn js_number(s: &str) -> Option<f64> {
    let t = s.trim_matches(js_space);
    if t.is_empty() {
        return Some(0.0);
    }
    match t {
        "Infinity" | "+Infinity" => return Some(f64::INFINITY),
        "-Infinity" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    let radix = match t.get(..2) {
        Some("0x" | "0X") => 16,
        Some("0o" | "0O") => 8,
        Some("0b" | "0B") => 2,
        _ => 10,
    };
    if radix != 10 {
        let digits = &t[2..];
        if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
            return None;
        }
        // Exact for every value below 2^53; above, rounding per digit is close enough for ids
        // (a client's own ids are small integers).
        return Some(
            digits
                .chars()
                .filter_map(|c| c.to_digit(radix))
                .fold(0.0, |acc, d| acc * f64::from(radix) + f64::from(d)),
        );
    }
    // StrDecimalLiteral: [+-] (digits [. digits] | . digits) [e [+-] digits]. Rust's parser
    // accepts that grammar and also `inf`/`nan` spellings, which the check below excludes.
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let mantissa_end = body.find(['e', 'E']).unwrap_or(body.len());
    let (mantissa, exponent) = body.split_at(mantissa_end);
    let mantissa_ok = {
        let mut parts = mantissa.splitn(2, '.');
        let int = parts.next().unwrap_or("");
        let frac = parts.next();
        let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        digits(int) && frac.is_none_or(digits) && (int.len() + frac.map_or(0, str::len)) > 0
    };
    let exponent_ok = exponent.is_empty() || {
        let e = &exponent[1..];
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    };
    if !mantissa_ok || !exponent_ok {
        return None;
    }
    t.parse::<f64>().ok()
}

/// Python's `str.isspace` as `int()` applies it around a number.
fn python_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{D}'
            | ' '
            | '\u{85}'
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
    )
}

/// The first code point of every run of ten Unicode decimal digits (category Nd, Unicode 14.0,
/// as Python 3.11's `unicodedata.decimal` reads them): `int()` accepts any of them.
const DECIMAL_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66,
    0xDE6, 0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
    0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650,
    0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50,
    0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
];

/// The value of a Unicode decimal digit.
fn decimal_digit(c: char) -> Option<u8> {
    let cp = u32::from(c);
    let i = DECIMAL_ZEROS.partition_point(|z| *z <= cp).checked_sub(1)?;
    let d = cp - DECIMAL_ZEROS[i];
    u8::try_from(d).ok().filter(|d| *d < 10)
}

/// Python's `int(string)` in base 10, as canonical decimal text; `None` where it raises.
fn python_int(s: &str) -> Option<String> {
    let t = s.trim_matches(python_space);
    let (negative, body) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let mut digits = String::with_capacity(body.len() + 1);
    if negative {
        digits.push('-');
    }
    let mut previous_underscore = true; // no leading `_`
    for c in body.chars() {
        if c == '_' {
            if previous_underscore {
                return None;
            }
            previous_underscore = true;
            continue;
        }
        digits.push(char::from(b'0' + decimal_digit(c)?));
        previous_underscore = false;
    }
    if previous_underscore {
        return None; // empty, or a trailing `_`
    }
    Some(canonical_integer(&digits))
}

/// pydantic's lax `int` from a string (pydantic-core `str_as_int`, the reading of the official
/// Python SDK before python-sdk #1178), as canonical decimal text; `None` where it raises.
/// Whitespace is trimmed, a sign is allowed, the digits are ASCII; underscores anywhere but at
/// either end are removed (`"0__1"` is 1); a `.` followed only by zeros is dropped (`"1.00"`).
fn pydantic_lax_int(s: &str) -> Option<String> {
    let t = s.trim();
    let t = match t.find('.') {
        Some(dot) if t[dot + 1..].bytes().all(|b| b == b'0') => &t[..dot],
        Some(_) => return None,
        None => t,
    };
    if t.starts_with('_') || t.ends_with('_') {
        return None;
    }
    let plain: String = t.chars().filter(|c| *c != '_').collect();
    let (negative, digits) = match plain.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, plain.strip_prefix('+').unwrap_or(&plain)),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(canonical_integer(&if negative {
        format!("-{digits}")
    } else {
        digits.to_string()
    }))
}

/// `[-]digits` without leading zeros; `-0` is `0`.
fn canonical_integer(text: &str) -> String {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let digits = digits.trim_start_matches('0');
    match (digits.is_empty(), negative) {
        (true, _) => "0".to_string(),
        (false, true) => format!("-{digits}"),
        (false, false) => digits.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(a: &str, b: &str) -> bool {
        match (IdKeys::of_json(a), IdKeys::of_json(b)) {
            (Some(a), Some(b)) => a.matches(&b),
            _ => false,
        }
    }

    #[test]
    fn sdk_equal_ids_match() {
        for (a, b) in [
            ("0", "\"0\""),
            ("0", "\" 0\""),
            ("0", "\"+0\""),
            ("0", "\"00\""),
            ("0", "0.0"),
            ("1", "1e0"),
            ("1", "\"1e0\""),
            ("1", "\"1.\""),
            ("16", "\"0x10\""),
            ("3", "\"0b11\""),
            ("0", "\"\""),
            ("0", "\"-0\""),
            ("0", "-0.0"),
            ("10", "\"1_0\""),
            ("1", "\"\\u0661\""),
            ("10", "\"\u{ff11}\u{ff10}\""),
            ("1", "\"\u{feff}1\""),
            ("1", "\"\\u00851\""),
            ("\"a\"", "\"\\u0061\""),
            ("100", "1e2"),
            // pydantic's lax int (python-sdk before #1178) and booleans.
            ("1", "true"),
            ("0", "false"),
            ("\"1\"", "true"),
            ("1", "\"0__1\""),
            ("10", "\"1__0\""),
            ("1", "\"1.00\""),
            ("1", "\"+0_1\""),
            ("9007199254740993", "9007199254740992"),
            (
                "123456789012345678901234567890",
                "\"123456789012345678901234567890\"",
            ),
        ] {
            assert!(m(a, b), "{a} ~ {b}");
            assert!(m(b, a), "{b} ~ {a}");
        }
    }

    #[test]
    fn different_ids_do_not_match() {
        for (a, b) in [
            ("1", "2"),
            ("1", "\"a\""),
            ("\"a\"", "\"A\""),
            ("1", "1.5"),
            ("1", "\"_1\""),
            ("1", "\"1_\""),
            ("1", "\"1.01\""),
            ("true", "false"),
            ("true", "2"),
            ("1", "\"+0x1\""),
            ("1", "\"inf\""),
            ("0", "\"nan\""),
            ("1", "\"\\u001c1\""),
            ("null", "null"),
            ("{}", "{}"),
        ] {
            assert!(!m(a, b), "{a} !~ {b}");
        }
    }

    #[test]
    fn number_readings() {
        assert_eq!(js_number("Infinity"), Some(f64::INFINITY));
        assert_eq!(js_number(".5"), Some(0.5));
        assert_eq!(js_number("1e"), None);
        assert_eq!(js_number("e1"), None);
        assert_eq!(js_number("."), None);
        assert_eq!(js_number("infinity"), None);
        assert_eq!(js_number("0x"), None);
        assert_eq!(python_int(" -0_0 ").as_deref(), Some("0"));
        assert_eq!(python_int("1_").as_deref(), None);
        assert_eq!(python_int("").as_deref(), None);
        assert_eq!(python_int("-").as_deref(), None);
        assert_eq!(python_int("\u{1D7CE}7").as_deref(), Some("7"));
        assert_eq!(decimal_digit('9'), Some(9));
        assert_eq!(decimal_digit(':'), None);
        assert_eq!(decimal_digit('/'), None);
    }
}
