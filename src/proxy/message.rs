//! Classification of one client line (SPEC §3 item 6): what it is and whether it is a
//! `tools/call`, in one bounded, iterative pass over the bytes.
//!
//! The pass ([`strict_json::scan_with`] with [`ClientVisitor`]) validates the line (UTF-8 is
//! checked once before it) — syntax, duplicate keys after lenient normalization, non-finite
//! numbers, depth — and extracts, without building any value, each message's `method`, `id`,
//! `params`, `params.name`, `params.uri` and the text of `params.arguments`. A key of the
//! JSON-RPC envelope, or of the `params` of a method the policy judges (`tools/call` always;
//! `prompts/get`, `resources/read` and `resources/subscribe` when the policy governs them,
//! [`Judged`]), that is a lenient variant of a member name (`Method`, `paramſ`, `name\u0000`,
//! `URI`) refuses the line: no parser downstream (ours, the server's, or an auditor's) can see a
//! different message than the policy saw.

use std::borrow::Cow;

use crate::lenient::{self, Decoded};
use crate::methods::{self, Governor, Method, Target};
use crate::strict_json::{self, ScanError, ScanErrorKind, Visitor};

/// Nesting accepted on a client line. Deeper lines are refused as parse errors (-32700); the
/// bound keeps us below `serde_json`'s own recursion limit (128), so the scan and any later
/// parse of a part of the line always agree.
pub(crate) const CLIENT_MAX_DEPTH: usize = 100;

/// The members of one JSON-RPC message the proxy needs: raw JSON text borrowed from the line.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Message<'a> {
    /// `method`, when present (raw JSON text).
    pub method: Option<&'a str>,
    /// The row of the method table of `method`, when it is a string naming a method the product
    /// knows: read once, when the message's scan ends.
    pub row: Option<&'static Method>,
    /// `id`, when present (`null` included: an `"id": null` request is not a notification).
    pub id: Option<&'a str>,
    /// `params`, when present.
    pub params: Option<&'a str>,
    /// `params` is an object.
    pub params_object: bool,
    /// `params.name`, when `params` is an object holding it.
    pub name: Option<&'a str>,
    /// `params.arguments`, when `params` is an object holding it.
    pub arguments: Option<&'a str>,
    /// `params.uri`, when `params` is an object holding it (`resources/read`, SPEC §5.2).
    pub uri: Option<&'a str>,
    /// Offset of a key of `params` that is a lenient variant of `name`, `arguments` or `_meta`.
    params_variant: Option<usize>,
    /// Offset of a key of `params` that is a lenient variant of `uri` or `_meta`.
    uri_variant: Option<usize>,
}

/// The decoded value of raw JSON text, if it is a string.
pub(crate) fn as_str(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        Some(Cow::Owned(Decoded::new(inner).collect()))
    } else {
        Some(Cow::Borrowed(inner))
    }
}

/// A message's raw `id` text as a `RawValue`, to echo it byte-exact in a response (`None`: not
/// one JSON value).
pub(crate) fn raw_id(id: &str) -> Option<&serde_json::value::RawValue> {
    serde_json::from_str::<&serde_json::value::RawValue>(id).ok()
}

/// A message's id as a string for the log (`tool_call_id`, `request_id`): a string id's value, a
/// number's text; `null` or no id is none.
pub(crate) fn tool_call_id(id: Option<&str>) -> Option<Cow<'_, str>> {
    match id? {
        "null" => None,
        s if s.starts_with('"') => as_str(s),
        s => Some(Cow::Borrowed(s)),
    }
}

impl Message<'_> {
    /// Whether the message's method is `row`'s.
    pub(crate) fn is(&self, row: &Method) -> bool {
        self.row.is_some_and(|r| r.is(row))
    }

    /// The row of the method table of raw `method` text.
    fn row_of(method: Option<&str>) -> Option<&'static Method> {
        let raw = method?;
        match as_str(raw)? {
            Cow::Borrowed(name) => methods::method(name),
            Cow::Owned(name) => methods::method(&name),
        }
    }

    /// Whether a lenient variant of a member of its `params` refuses the message: its method is
    /// judged by what `params` names (`tools/call` always; the others when `judged` says the
    /// policy has their section), so no reading of the message may differ from the policy's.
    fn refused_variant(&self, judged: Judged) -> Option<usize> {
        let row = self.row?;
        match row.target {
            Target::Name if row.governor == Governor::Tools => self.params_variant,
            Target::Name if judged.prompts && row.governor == Governor::Prompts => {
                self.params_variant
            }
            Target::Uri if judged.resources => self.uri_variant,
            _ => None,
        }
    }
}

/// What a client line is.
pub(crate) enum ClientLine<'a> {
    /// Empty or whitespace-only: forwarded unchanged.
    Blank,
    /// Not UTF-8 JSON, a duplicate key (after lenient normalization), a non-finite number or too
    /// deep: -32700.
    ParseError(ScanError),
    /// A key of the envelope or of a judged method's `params` that is a lenient variant of a
    /// member name (SPEC §3 item 6): -32700. The offset of the key.
    KeyVariant(usize),
    /// A carriage return between the first and the last non-whitespace byte: -32700. JSON
    /// calls `\r` whitespace, but a universal-newline reader (the official MCP Python SDK's
    /// stdio transport reads through `TextIOWrapper`) ends a line there, so the server would see
    /// different messages than the policy saw — e.g. `[[\r{…tools/call…}\r]]` is a batch with
    /// no call to us and a bare `tools/call` line to the SDK. The offset of the `\r`.
    CarriageReturn(usize),
    /// Valid JSON that is neither an object nor an array: -32600.
    NotObject,
    /// One message.
    Single(Message<'a>),
    /// A batch (its validated text): walk its messages with [`for_each_message`], which keeps
    /// memory independent of the number of elements.
    Batch(&'a str),
}

// Roles of containers and slots of values (see `strict_json::Visitor`).
const ROLE_ENVELOPE: u8 = 1;
const ROLE_PARAMS: u8 = 2;
const ROLE_BATCH: u8 = 3;
const SLOT_ROOT: u8 = 1;
const SLOT_ELEMENT: u8 = 2;
const SLOT_METHOD: u8 = 3;
const SLOT_ID: u8 = 4;
const SLOT_PARAMS: u8 = 5;
const SLOT_NAME: u8 = 6;
const SLOT_ARGUMENTS: u8 = 7;
const SLOT_URI: u8 = 8;

/// The members of a JSON-RPC message object (SPEC §3 item 6).
const ENVELOPE: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];
/// The members of a `tools/call`'s (and a `prompts/get`'s) `params`.
const CALL_PARAMS: [&str; 3] = ["name", "arguments", "_meta"];
/// The members of the `params` of a method judged by `params.uri` (SPEC §5.2): a lenient
/// variant of one of them refuses the line.
const URI_PARAMS: [&str; 2] = ["uri", "_meta"];

/// Which methods besides `tools/call` the policy judges by their `params` (SPEC §5.2): their
/// lenient key variants refuse the line too. Without a section nothing changes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Judged {
    /// `prompts/get` (the policy has `prompts`).
    pub prompts: bool,
    /// `resources/read` and `resources/subscribe` (the policy has `resources`).
    pub resources: bool,
}

/// Extracts messages during the scan and applies the lenient member-name rule; hands each
/// complete message (a top-level object or an object element of a top-level array) to `each`.
struct ClientVisitor<'a, F> {
    current: Message<'a>,
    /// Offset of the envelope key variant that refused the line.
    variant: Option<usize>,
    judged: Judged,
    each: F,
}

fn variant_of_any(raw: &str, names: &[&str]) -> bool {
    names.iter().any(|n| lenient::is_variant_of(raw, n))
}

impl<'a, F: FnMut(&Message<'a>)> Visitor<'a> for ClientVisitor<'a, F> {
    const LENIENT: bool = true;

    fn root(&mut self) -> u8 {
        SLOT_ROOT
    }

    fn open(&mut self, slot: u8, object: bool, _at: usize) -> u8 {
        match (slot, object) {
            (SLOT_ROOT | SLOT_ELEMENT, true) => {
                self.current = Message::default();
                ROLE_ENVELOPE
            }
            (SLOT_ROOT, false) => ROLE_BATCH,
            (SLOT_PARAMS, true) => ROLE_PARAMS,
            _ => 0,
        }
    }

    fn element(&mut self, role: u8) -> u8 {
        if role == ROLE_BATCH { SLOT_ELEMENT } else { 0 }
    }

    fn key(&mut self, role: u8, raw: &'a str, plain: bool, at: usize) -> Result<u8, ScanError> {
        if !matches!(role, ROLE_ENVELOPE | ROLE_PARAMS) {
            return Ok(0);
        }
        // Most keys are ASCII without escapes (`plain`): compared bytewise; a variant is then an
        // ASCII case variant of the same length.
        let exact = |name: &str| {
            if plain {
                raw == name
            } else {
                lenient::decodes_to(raw, name)
            }
        };
        let variant = |names: &[&str]| {
            if plain {
                names
                    .iter()
                    .any(|n| n.len() == raw.len() && raw != *n && raw.eq_ignore_ascii_case(n))
            } else {
                variant_of_any(raw, names)
            }
        };
        if role == ROLE_ENVELOPE {
            let slot = if exact("method") {
                SLOT_METHOD
            } else if exact("id") {
                SLOT_ID
            } else if exact("params") {
                SLOT_PARAMS
            } else if (plain && raw == "jsonrpc") || !variant(&ENVELOPE) {
                0
            } else {
                self.variant = Some(at);
                return Err(ScanError {
                    kind: ScanErrorKind::DuplicateKey,
                    offset: at,
                });
            };
            return Ok(slot);
        }
        Ok(if exact("name") {
            SLOT_NAME
        } else if exact("arguments") {
            SLOT_ARGUMENTS
        } else if exact("uri") {
            SLOT_URI
        } else {
            if self.current.params_variant.is_none() && variant(&CALL_PARAMS) {
                self.current.params_variant = Some(at);
            }
            if self.current.uri_variant.is_none() && variant(&URI_PARAMS) {
                self.current.uri_variant = Some(at);
            }
            0
        })
    }

    fn value(&mut self, slot: u8, role: u8, text: &'a str) -> Result<(), ScanError> {
        let cur = &mut self.current;
        match slot {
            SLOT_METHOD => cur.method = Some(text),
            SLOT_ID => cur.id = Some(text),
            SLOT_PARAMS => {
                cur.params = Some(text);
                cur.params_object = role == ROLE_PARAMS;
            }
            SLOT_NAME => cur.name = Some(text),
            SLOT_ARGUMENTS => cur.arguments = Some(text),
            SLOT_URI => cur.uri = Some(text),
            SLOT_ROOT | SLOT_ELEMENT if role == ROLE_ENVELOPE => {
                cur.row = Message::row_of(cur.method);
                let msg = *cur;
                if let Some(at) = msg.refused_variant(self.judged) {
                    self.variant = Some(at);
                    return Err(ScanError {
                        kind: ScanErrorKind::DuplicateKey,
                        offset: at,
                    });
                }
                (self.each)(&msg);
            }
            _ => {}
        }
        Ok(())
    }
}
fn invalid(offset: usize) -> ScanError {
    ScanError {
        kind: ScanErrorKind::Invalid,
        offset,
    }
}

/// Scans `text` (UTF-8, one JSON text) with the client rules, handing every message to `each`.
fn scan_messages<'a>(
    text: &'a str,
    judged: Judged,
    each: impl FnMut(&Message<'a>),
) -> Result<(), Result<ScanError, usize>> {
    let mut v = ClientVisitor {
        current: Message::default(),
        variant: None,
        judged,
        each,
    };
    strict_json::scan_with(text, CLIENT_MAX_DEPTH, &mut v).map_err(|e| match v.variant {
        Some(at) => Err(at),
        None => Ok(e),
    })
}

/// Walks the messages of a batch that [`classify`] accepted with `judged`, in order. Re-scans
/// the text: a batch's memory stays independent of its number of elements.
pub(crate) fn for_each_message<'a>(batch: &'a str, judged: Judged, each: impl FnMut(&Message<'a>)) {
    // The text passed the same scan in `classify`; it cannot fail now.
    let _ = scan_messages(batch, judged, each);
}

/// Classifies one line (newline included), refusing the key variants of the methods `judged`
/// names.
pub(crate) fn classify(line: &[u8], judged: Judged) -> ClientLine<'_> {
    let Some(first) = line
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    else {
        return ClientLine::Blank;
    };
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => return ClientLine::ParseError(invalid(e.valid_up_to())),
    };
    let mut single: Option<Message<'_>> = None;
    let batch = line[first] == b'[';
    let scanned = if batch {
        scan_messages(text, judged, |_| {})
    } else {
        scan_messages(text, judged, |m| single = Some(*m))
    };
    match scanned {
        Ok(()) => {}
        Err(Ok(e)) => return ClientLine::ParseError(e),
        Err(Err(at)) => return ClientLine::KeyVariant(at),
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
    match (line[first], single) {
        (b'{', Some(m)) => ClientLine::Single(m),
        (b'[', _) => ClientLine::Batch(text),
        _ => ClientLine::NotObject,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The classification without any §5.2 section (as every policy before them).
    fn classify(line: &[u8]) -> ClientLine<'_> {
        super::classify(line, Judged::default())
    }

    fn for_each_message<'a>(text: &'a str, each: impl FnMut(&Message<'a>)) {
        super::for_each_message(text, Judged::default(), each)
    }

    #[test]
    fn uri_and_prompt_name_variants_refuse_the_line_only_when_governed() {
        let all = Judged {
            prompts: true,
            resources: true,
        };
        for line in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"URI":"file:///etc/passwd"}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"ur\u0130":"x"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"NAME":"debug"}}"#,
            br#"{"params":{"name":"a","Arguments":{}},"method":"prompts/get","id":2}"#,
        ] {
            assert!(
                matches!(super::classify(line, all), ClientLine::KeyVariant(_)),
                "{}",
                String::from_utf8_lossy(line)
            );
            assert!(
                matches!(classify(line), ClientLine::Single(_)),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        // A member and its variant side by side are duplicate keys, refused whatever is governed.
        let dup = br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///w/a","Uri":"file:///etc/passwd"}}"#;
        assert!(matches!(classify(dup), ClientLine::ParseError(_)));
        assert!(matches!(
            super::classify(dup, all),
            ClientLine::ParseError(_)
        ));
        // Escaped exact keys are the members themselves.
        let ClientLine::Single(m) = super::classify(
            br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"\u0075ri":"file:///w/a"}}"#,
            all,
        ) else {
            panic!("single")
        };
        assert_eq!(m.uri, Some("\"file:///w/a\""));
        // Another method's params are not judged by these names.
        assert!(matches!(
            super::classify(
                br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"URI":"x","NAME":1}}"#,
                all
            ),
            ClientLine::Single(_)
        ));
    }

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
        assert!(h.is(&methods::TOOLS_CALL));
        assert_eq!(h.id, Some("null"));
        let ClientLine::Single(h) = classify(br#"{"method":"\u0074ools/call"}"#) else {
            panic!("single")
        };
        assert!(h.is(&methods::TOOLS_CALL));
        assert!(h.id.is_none());
        let ClientLine::Batch(text) =
            classify(br#"[{"method":"a","id":1}, 3, {"method":"tools/call"}]"#)
        else {
            panic!("batch")
        };
        let mut seen = Vec::new();
        for_each_message(text, |m| seen.push((m.is(&methods::TOOLS_CALL), m.id)));
        assert_eq!(seen, [(false, Some("1")), (true, None)]);
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

    /// SPEC §3 item 6: keys equal after lenient normalization are duplicates anywhere; a variant
    /// of an envelope member, or of a `tools/call` params member, refuses the line.
    #[test]
    fn lenient_keys_are_refused() {
        let dup = |l: &str| matches!(classify(l.as_bytes()), ClientLine::ParseError(e) if e.kind == ScanErrorKind::DuplicateKey);
        let variant = |l: &str| matches!(classify(l.as_bytes()), ClientLine::KeyVariant(_));
        for l in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","METHOD":"tools/call","params":{"name":"exec"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","Name":"exec"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"paramſ":{"name":"exec"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},"Arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/w/a","PATH":"/etc/passwd"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","method\u0000":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name\u0000":"exec"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"params\u0000\u0000":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"k":1,"K":2}}}"#,
            r#"[{"a":{"x":1,"X":2}}]"#,
        ] {
            assert!(dup(l), "{l}");
        }
        for l in [
            r#"{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"exec"}}"#,
            r#"{"jsonrpc":"2.0","ID":1,"method":"ping"}"#,
            r#"{"jsonrpc\u0000":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","paramſ":{"name":"exec"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"exec"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","Arguments":{"path":"/etc/passwd"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_META":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name\u0000":"exec"}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"Method":"tools/call"}]"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"Error":{}}"#,
        ] {
            assert!(variant(l), "{l}");
        }
        // Not variants: escapes of the exact name, other params of other methods, nested keys.
        for l in [
            r#"{"jsonrpc":"2.0","id":1,"\u006dethod":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"Name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"Method":1,"Name":2}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","progressToken":1}}"#,
        ] {
            assert!(
                matches!(classify(l.as_bytes()), ClientLine::Single(_)),
                "{l}"
            );
        }
        // Past the small-set size, in the large table: still folded.
        let mut many = String::from(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"#);
        for i in 0..100 {
            many.push_str(&format!(r#""k{i}":0,"#));
        }
        many.push_str(r#""\u212a7":1}}"#);
        assert!(dup(&many), "{many}");
        let ClientLine::Single(m) = classify(
            br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"e\u0063ho","arguments":{"x":[1,{"y":2}]}}}"#,
        ) else {
            panic!("single")
        };
        assert_eq!(m.name, Some(r#""e\u0063ho""#));
        assert_eq!(as_str(m.name.unwrap()).as_deref(), Some("echo"));
        assert_eq!(m.arguments, Some(r#"{"x":[1,{"y":2}]}"#));
        assert_eq!(m.id, Some(r#""a""#));
    }

    /// A classification inside a walk over a batch (the scanner's buffers are in use) gets
    /// fresh buffers and the same answers.
    #[test]
    fn classify_is_reentrant() {
        let ClientLine::Batch(text) =
            classify(br#"[{"method":"a","id":1,"params":{"x":1}},{"method":"tools/call"}]"#)
        else {
            panic!("batch")
        };
        let mut seen = Vec::new();
        for_each_message(text, |m| {
            let inner = classify(br#"{"id":1,"id":2}"#);
            seen.push((
                m.is(&methods::TOOLS_CALL),
                matches!(inner, ClientLine::ParseError(e) if e.kind == ScanErrorKind::DuplicateKey),
                matches!(classify(br#"{"METHOD":1}"#), ClientLine::KeyVariant(1)),
            ));
        });
        assert_eq!(seen, [(false, true, true), (true, true, true)]);
    }

    /// Throughput of [`classify`] on the benchmark's common line (a pipelined ~200-byte
    /// `tools/call`). Not a test: prints ns/line, asserts nothing about time. Run with
    /// `cargo test --release --lib classify_throughput -- --ignored --nocapture`
    /// (`CLASSIFY_LINES` and `CLASSIFY_ROUNDS` change the size).
    #[test]
    #[ignore = "micro-benchmark: run explicitly"]
    fn classify_throughput() {
        let env = |k: &str, d: usize| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(d)
        };
        let (n, rounds) = (env("CLASSIFY_LINES", 100_000), env("CLASSIFY_ROUNDS", 7));
        let text: String = "abcdefghijklmnopqrstuvwxyz0123456789"
            .repeat(5)
            .chars()
            .take(150)
            .collect();
        let lines: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                format!(
                    r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"n":{i},"text":"{text}"}}}}}}"#
                )
                .into_bytes()
                .into_iter()
                .chain(*b"\n")
                .collect()
            })
            .collect();
        let mut times = Vec::new();
        for _ in 0..rounds {
            let started = std::time::Instant::now();
            let mut singles = 0usize;
            for line in &lines {
                if let ClientLine::Single(m) = classify(std::hint::black_box(line)) {
                    singles += usize::from(m.arguments.is_some());
                }
            }
            let elapsed = started.elapsed();
            assert_eq!(singles, n);
            times.push(elapsed.as_nanos() as f64 / n as f64);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "classify: {n} lines of {} bytes, {rounds} rounds: best {:.1} ns/line, median {:.1} ns/line",
            lines.first().map_or(0, Vec::len),
            times[0],
            times[times.len() / 2]
        );
    }
}
