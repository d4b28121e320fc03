//! A walk over one JSON text that the strict scanner has accepted (`strict_json`): every value
//! is handed to a visitor with its path and its byte span, so a caller can judge a string by
//! where it sits and rewrite exactly its bytes. Iterative (no recursion, whatever the depth),
//! allocation only for the path; it trusts the syntax the scanner checked and never panics on
//! anything else (every index is checked).

use std::borrow::Cow;

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

enum Frame {
    Obj { start: usize, key_next: bool },
    Arr { start: usize, n: usize },
}

/// The end (exclusive) of the string starting with the quote at `start`.
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

/// Walks `text` (one JSON value the strict scanner accepted).
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

    #[test]
    fn decode_borrows_plain_strings_and_unescapes_others() {
        assert!(matches!(decode("\"abc\""), Cow::Borrowed("abc")));
        assert_eq!(decode(r#""a\"b\u0041\\""#), "a\"bA\\");
        assert_eq!(string_end(br#""a\"b" x"#, 0), 6);
    }
}
