//! Classification of one client line (SPEC §3 item 6): what it is and whether it is a
//! `tools/call`. Every line passes the strict pre-scan first, so no parser downstream (ours, the
//! server's, or an auditor's) can see a different message than the policy saw.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::strict_json::{self, ScanError, ScanErrorKind};

/// Nesting accepted on a client line. Deeper lines are refused as parse errors (-32700); the
/// bound keeps us below `serde_json`'s own recursion limit (128), so the scan and the parse
/// always agree.
pub(crate) const CLIENT_MAX_DEPTH: usize = 100;

/// A JSON-RPC message head: only the members the proxy needs, borrowed from the line.
#[derive(Deserialize)]
pub(crate) struct Head<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    pub method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub params: Option<&'a RawValue>,
}

/// `Some` whenever the member is present, `null` included (an `"id": null` request is not a
/// notification).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The `params` of a `tools/call`.
#[derive(Deserialize)]
pub(crate) struct CallParams<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    pub name: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub arguments: Option<&'a RawValue>,
}

/// What a client line is.
pub(crate) enum ClientLine<'a> {
    /// Empty or whitespace-only: forwarded unchanged.
    Blank,
    /// Not UTF-8 JSON, a duplicate key, a non-finite number or too deep: -32700.
    ParseError(ScanError),
    /// A carriage return between the first and the last non-whitespace byte: -32700. JSON
    /// calls `\r` whitespace, but a universal-newline reader (the official MCP Python SDK's
    /// stdio transport reads through `TextIOWrapper`) ends a line there, so the server would see
    /// different messages than the policy saw — e.g. `[[\r{…tools/call…}\r]]` is a batch with
    /// no call to us and a bare `tools/call` line to the SDK. The offset of the `\r`.
    CarriageReturn(usize),
    /// Valid JSON that is neither an object nor an array: -32600.
    NotObject,
    /// One message.
    Single(Head<'a>),
    /// A batch: each element's raw text (elements that are not objects have no head).
    Batch(Vec<Option<Head<'a>>>),
}

/// The string value of a raw JSON member, if it is a string.
pub(crate) fn as_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    if raw.get().starts_with('"') {
        serde_json::from_str::<Cow<'_, str>>(raw.get()).ok()
    } else {
        None
    }
}

impl Head<'_> {
    pub(crate) fn method_is(&self, name: &str) -> bool {
        self.method.and_then(as_str).is_some_and(|m| m == name)
    }
}

fn invalid(offset: usize) -> ScanError {
    ScanError {
        kind: ScanErrorKind::Invalid,
        offset,
    }
}

/// Classifies one line (newline included).
pub(crate) fn classify(line: &[u8]) -> ClientLine<'_> {
    let Some(first) = line
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    else {
        return ClientLine::Blank;
    };
    if let Err(e) = strict_json::scan(line, CLIENT_MAX_DEPTH) {
        return ClientLine::ParseError(e);
    }
    // `first` exists, so a last non-whitespace byte does too. Leading and trailing `\r` (a CRLF
    // line ending) only make empty lines for a universal-newline reader.
    let last = line
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .unwrap_or(first);
    if let Some(cr) = memchr::memchr(b'\r', &line[first..last]) {
        return ClientLine::CarriageReturn(first + cr);
    }
    // The scan validated UTF-8 and syntax; these parses fail only on limits we stay under.
    let Ok(text) = std::str::from_utf8(line) else {
        return ClientLine::ParseError(invalid(0));
    };
    match line[first] {
        b'{' => match serde_json::from_str::<Head<'_>>(text) {
            Ok(h) => ClientLine::Single(h),
            Err(_) => ClientLine::ParseError(invalid(first)),
        },
        b'[' => match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(items) => ClientLine::Batch(
                items
                    .into_iter()
                    .map(|raw| {
                        if raw.get().starts_with('{') {
                            serde_json::from_str::<Head<'_>>(raw.get()).ok()
                        } else {
                            None
                        }
                    })
                    .collect(),
            ),
            Err(_) => ClientLine::ParseError(invalid(first)),
        },
        _ => ClientLine::NotObject,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies() {
        assert!(matches!(classify(b"  \r\n"), ClientLine::Blank));
        assert!(matches!(classify(b""), ClientLine::Blank));
        assert!(matches!(classify(b"42\n"), ClientLine::NotObject));
        assert!(matches!(classify(b"\"x\"\n"), ClientLine::NotObject));
        assert!(matches!(classify(b"{\n"), ClientLine::ParseError(_)));
        assert!(matches!(
            classify(b"{\"a\":\xff}\n"),
            ClientLine::ParseError(_)
        ));
        let dup = br#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"exec"}}"#;
        assert!(
            matches!(classify(dup), ClientLine::ParseError(e) if e.kind == ScanErrorKind::DuplicateKey)
        );
        let ClientLine::Single(h) =
            classify(br#"{"jsonrpc":"2.0","id":null,"method":"tools\/call","params":{}}"#)
        else {
            panic!("single")
        };
        assert!(h.method_is("tools/call"));
        assert_eq!(h.id.map(|r| r.get()), Some("null"));
        let ClientLine::Single(h) = classify(br#"{"method":"\u0074ools/call"}"#) else {
            panic!("single")
        };
        assert!(h.method_is("tools/call"));
        assert!(h.id.is_none());
        let ClientLine::Batch(items) =
            classify(br#"[{"method":"a","id":1}, 3, {"method":"tools/call"}]"#)
        else {
            panic!("batch")
        };
        assert_eq!(items.len(), 3);
        assert!(items[1].is_none());
        assert!(items[2].as_ref().unwrap().method_is("tools/call"));
        assert!(matches!(
            classify(b"[[\r{\"method\":\"tools/call\"}\r]]\n"),
            ClientLine::CarriageReturn(2)
        ));
        assert!(matches!(
            classify(b"{\"id\":1,\r\"method\":\"ping\"}\n"),
            ClientLine::CarriageReturn(8)
        ));
        assert!(matches!(
            classify(b"\r{\"method\":\"ping\"}\r\r\n"),
            ClientLine::Single(_)
        ));
        let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
        assert!(
            matches!(classify(deep.as_bytes()), ClientLine::ParseError(e) if e.kind == ScanErrorKind::TooDeep)
        );
    }
}
