//! A walk over one JSON text, in the strict scanner's own pass (`strict_json::scan_with`):
//! every value is handed to a visitor with its path and its byte span, so a caller can judge a
//! string by where it sits and rewrite exactly its bytes. The text is read once: what the
//! visitor saw counts only when the scan accepts the text ([`scan_walk`] says so). Iterative
//! (no recursion, whatever the depth), allocation only for the path; never panics (every index
//! is checked).

use std::borrow::Cow;

use crate::strict_json::{self, ScanError};

/// Nesting read in an answer at most (as a client line, SPEC §3 item 6).
pub(crate) const MAX_DEPTH: usize = 100;

/// One step of a path: an object member's key (unescaped) or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg<'a> {
    Key(Cow<'a, str>),
    Index(usize),
}

impl Seg<'_> {
    /// Whether this step is the key `k`.
    pub(crate) fn is(&self, k: &str) -> bool {
        matches!(self, Seg::Key(key) if key == k)
    }
}

/// The path as a JSON Pointer (RFC 6901): `/result/content/0/text`.
pub(crate) fn pointer(path: &[Seg<'_>]) -> String {
    let mut out = String::new();
    for s in path {
        out.push('/');
        match s {
            Seg::Key(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Seg::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}

/// What the walk reports. Spans are byte ranges of the text (a string's includes its quotes).
pub(crate) trait Visit<'a> {
    /// A string value (not a key) at `path`.
    fn string(&mut self, path: &[Seg<'a>], start: usize, end: usize);
    /// A number, `true`, `false` or `null` at `path`.
    fn scalar(&mut self, path: &[Seg<'a>], raw: &'a str);
    /// An object or array at `path` closed; it spans `start..end`.
    fn close(&mut self, path: &[Seg<'a>], start: usize, end: usize);
}

#[cfg(test)]
enum Frame {
    Obj { start: usize, key_next: bool },
    Arr { start: usize, n: usize },
}

/// The end (exclusive) of the string starting with the quote at `start`.
#[cfg(test)]
pub(crate) fn string_end(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(at) = memchr::memchr2(b'"', b'\\', b.get(i..).unwrap_or_default()) {
        i += at;
        if b.get(i) == Some(&b'\\') {
            i += 2;
        } else {
            return i + 1;
        }
    }
    b.len()
}

/// The text of the JSON string token `raw` (with its quotes).
pub(crate) fn decode(raw: &str) -> Cow<'_, str> {
    let inner = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(raw);
    if !inner.contains('\\') {
        return Cow::Borrowed(inner);
    }
    Cow::Owned(serde_json::from_str::<String>(raw).unwrap_or_default())
}

/// The scanner's visitor that shows a [`Visit`] each value with its path and span.
struct Walker<'a, 'v, V> {
    text: &'a str,
    visit: &'v mut V,
    path: Vec<Seg<'a>>,
    /// The open containers: where each starts, and an array's next index.
    open: Vec<(usize, usize)>,
}

/// The role of every container (the scanner hands it back when the container closes).
const CONTAINER: u8 = 1;

impl<'a, V: Visit<'a>> strict_json::Visitor<'a> for Walker<'a, '_, V> {
    fn open(&mut self, _slot: u8, _object: bool, at: usize) -> u8 {
        self.open.push((at, 0));
        CONTAINER
    }

    fn element(&mut self, _role: u8) -> u8 {
        if let Some((_, n)) = self.open.last_mut() {
            self.path.push(Seg::Index(*n));
            *n += 1;
        }
        0
    }

    fn key(&mut self, _role: u8, raw: &'a str, _plain: bool, at: usize) -> Result<u8, ScanError> {
        // `at` is the key's opening quote: the token is the raw text in its quotes.
        let token = self.text.get(at..at + raw.len() + 2).unwrap_or_default();
        self.path.push(Seg::Key(decode(token)));
        Ok(0)
    }

    fn value(&mut self, _slot: u8, role: u8, raw: &'a str) -> Result<(), ScanError> {
        let start = (raw.as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize);
        let end = start + raw.len();
        if role == CONTAINER {
            self.open.pop();
            self.visit.close(&self.path, start, end);
        } else if raw.starts_with('"') {
            self.visit.string(&self.path, start, end);
        } else {
            self.visit.scalar(&self.path, raw);
        }
        // A member's or an element's step ends with its value; the top level has none.
        if !self.open.is_empty() {
            self.path.pop();
        }
        Ok(())
    }
}

/// Scans `text` as one JSON text with the strict rules (exact keys, nesting at most
/// `max_depth`: what `strict_json::scan` accepts) and walks it in the same pass. When the scan
/// refuses the text, `v` may have seen some of it: the caller drops what it gathered.
///
/// # Errors
/// The scanner's, for a text it refuses.
pub(crate) fn scan_walk<'a>(
    text: &'a str,
    max_depth: usize,
    v: &mut impl Visit<'a>,
) -> Result<(), ScanError> {
    let mut w = Walker {
        text,
        visit: v,
        // An answer's paths are a few steps deep: room up front, not a growth per step.
        path: Vec::with_capacity(8),
        open: Vec::with_capacity(8),
    };
    strict_json::scan_with(text, max_depth, &mut w)
}

/// Walks `text` (one JSON value the strict scanner accepted) in a pass of its own: the reading
/// [`scan_walk`] replaced, kept as its oracle.
#[cfg(test)]
pub(crate) fn walk<'a>(text: &'a str, v: &mut impl Visit<'a>) {
    let b = text.as_bytes();
    let mut frames: Vec<Frame> = Vec::new();
    let mut path: Vec<Seg<'a>> = Vec::new();
    let mut i = 0;
    let after_value = |frames: &mut Vec<Frame>, path: &mut Vec<Seg<'a>>| match frames.last_mut() {
        Some(Frame::Obj { key_next, .. }) => {
            path.pop();
            *key_next = true;
        }
        Some(Frame::Arr { n, .. }) => {
            path.pop();
            *n += 1;
        }
        None => {}
    };
    while let Some(&c) = b.get(i) {
        match c {
            b' ' | b'\t' | b'\r' | b'\n' | b',' | b':' => i += 1,
            b'}' | b']' => {
                let start = match frames.pop() {
                    Some(Frame::Obj { start, .. } | Frame::Arr { start, .. }) => start,
                    None => return,
                };
                i += 1;
                v.close(&path, start, i);
                after_value(&mut frames, &mut path);
            }
            _ => {
                let key = matches!(frames.last(), Some(Frame::Obj { key_next: true, .. }));
                if let Some(Frame::Arr { n, .. }) = frames.last() {
                    path.push(Seg::Index(*n));
                }
                match c {
                    b'"' => {
                        let end = string_end(b, i);
                        if key {
                            let raw = text.get(i..end).unwrap_or_default();
                            path.push(Seg::Key(decode(raw)));
                            if let Some(Frame::Obj { key_next, .. }) = frames.last_mut() {
                                *key_next = false;
                            }
                        } else {
                            v.string(&path, i, end);
                            after_value(&mut frames, &mut path);
                        }
                        i = end;
                    }
                    b'{' => {
                        frames.push(Frame::Obj {
                            start: i,
                            key_next: true,
                        });
                        i += 1;
                    }
                    b'[' => {
                        frames.push(Frame::Arr { start: i, n: 0 });
                        i += 1;
                    }
                    _ => {
                        let len = b
                            .get(i..)
                            .unwrap_or_default()
                            .iter()
                            .position(|c| {
                                matches!(c, b',' | b']' | b'}' | b' ' | b'\t' | b'\r' | b'\n')
                            })
                            .unwrap_or(b.len() - i);
                        v.scalar(&path, text.get(i..i + len).unwrap_or_default());
                        after_value(&mut frames, &mut path);
                        i += len;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Log(Vec<String>);

    impl<'a> Visit<'a> for Log {
        fn string(&mut self, path: &[Seg<'a>], start: usize, end: usize) {
            self.0.push(format!("s {} {start}..{end}", pointer(path)));
        }
        fn scalar(&mut self, path: &[Seg<'a>], raw: &'a str) {
            self.0.push(format!("v {} {raw}", pointer(path)));
        }
        fn close(&mut self, path: &[Seg<'a>], start: usize, end: usize) {
            self.0.push(format!("c {} {start}..{end}", pointer(path)));
        }
    }

    #[test]
    fn paths_and_spans() {
        let text = r#"{"a":[1,"x",{"b~/":true}], "\u0063" : "y" ,"e":[]}"#;
        let mut log = Log::default();
        walk(text, &mut log);
        assert_eq!(
            log.0,
            [
                "v /a/0 1",
                "s /a/1 8..11",
                "v /a/2/b~0~1 true",
                "c /a/2 12..24",
                "c /a 5..25",
                "s /c 38..41",
                "c /e 47..49",
                "c  0..50",
            ]
        );
        assert_eq!(&text[8..11], "\"x\"");
        assert_eq!(&text[38..41], "\"y\"");
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(serde_json::Value::from),
            proptest::string::string_regex("[a-z0-9 é😀\"\\\\\n\u{2028}\u{1}]{0,8}")
                .expect("a valid character class")
                .prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                proptest::collection::btree_map("[a-z~/\"\\\\é]{0,4}", inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// What [`scan_walk`] says of `text`: the scan's acceptance and the walk's events.
    fn one_pass(text: &str) -> (bool, Vec<String>) {
        let mut log = Log::default();
        let ok = scan_walk(text, MAX_DEPTH, &mut log).is_ok();
        (ok, if ok { log.0 } else { Vec::new() })
    }

    /// What the two passes it replaced say: `strict_json::scan`, then [`walk`] when it accepts.
    fn two_passes(text: &str) -> (bool, Vec<String>) {
        let ok = strict_json::scan(text.as_bytes(), MAX_DEPTH).is_ok();
        let mut log = Log::default();
        if ok {
            walk(text, &mut log);
        }
        (ok, log.0)
    }

    #[test]
    fn one_pass_equals_the_scan_then_the_walk_on_hostile_texts() {
        for text in [
            r#"{"a":[1,"x",{"b~/":true}], "\u0063" : "y" ,"e":[]}"#,
            r#"{"\u0069d":1,"id":2}"#,
            r#"{"a":1,"a":2}"#,
            r#"[{"id":1,"result":{}},{"id":"\"x","error":{"code":-1}}]"#,
            " [ ] ",
            "\"s\"",
            "1e5",
            "[1,]",
            "{\"a\":\"\u{1}\"}",
            &"[".repeat(MAX_DEPTH + 1),
            &format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH)),
        ] {
            assert_eq!(one_pass(text), two_passes(text), "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn one_pass_equals_the_scan_then_the_walk(
            value in json_value(),
            cut in 0usize..400,
            byte in proptest::prelude::any::<u8>(),
            spaced in proptest::prelude::any::<bool>(),
        ) {
            let text = if spaced {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            proptest::prop_assert_eq!(one_pass(&text), two_passes(&text));
            // One byte changed (still a string): refusals must agree too.
            let mut bytes = text.clone().into_bytes();
            if !bytes.is_empty() {
                let at = cut % bytes.len();
                bytes[at] = byte;
            }
            if let Ok(edited) = String::from_utf8(bytes) {
                proptest::prop_assert_eq!(one_pass(&edited), two_passes(&edited));
            }
        }
    }

    #[test]
    fn decode_borrows_plain_strings_and_unescapes_others() {
        assert!(matches!(decode("\"abc\""), Cow::Borrowed("abc")));
        assert_eq!(decode(r#""a\"b\u0041\\""#), "a\"bA\\");
        assert_eq!(string_end(br#""a\"b" x"#, 0), 6);
    }
}
