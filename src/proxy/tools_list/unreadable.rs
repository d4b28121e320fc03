//! The ids of a server line the strict rules refuse.
//!
//! While the `tools/list` filter is in effect, a server line that cannot be read strictly (not
//! UTF-8, a duplicate key, `1e400`, nesting too deep, …) is never forwarded: any client could
//! take it for an answer, and it cannot be judged. It is replaced by JSON-RPC errors, one for
//! each request it answered, so no request waits forever. The answer gate finds those requests
//! with this module's tolerant reading — the way lenient parsers read the line
//! (invalid UTF-8 replaced, the last of duplicate keys wins, keys matched by lenient class) —
//! without building any value. An id is reported only when its own text is strict JSON (a
//! string or a finite number); anything else yields `null`.

use crate::lenient;
use crate::strict_json;

/// One message of a line as a tolerant reader reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tolerated<'a> {
    /// The raw id text; `None` when the id member's value could not be read.
    pub id: Option<&'a str>,
    /// It has a `result` or `error` member (by lenient class): a response.
    pub answer: bool,
}

/// Every message of `line` that has an id member: the top-level object, or each object element
/// of a top-level array — and of every further JSON text the line holds after the first (a
/// stream decoder such as Go's `json.Decoder` reads `{…}{…}` as two messages). Bounded by the
/// line: at most one entry per top-level element.
#[cfg(test)]
pub(crate) fn messages(line: &[u8]) -> Vec<Tolerated<'_>> {
    let mut out = Vec::new();
    each_message(line, |m| out.push(m));
    out
}

/// The messages [`messages`] finds, handed to `each` as they are read, in order: nothing is
/// collected (a batch holds up to one message per few bytes of the line, SPEC §3 item 6).
pub(crate) fn each_message<'a>(line: &'a [u8], mut each: impl FnMut(Tolerated<'a>)) {
    let mut t = Tolerant { b: line, i: 0 };
    loop {
        t.ws();
        let before = t.i;
        match t.peek() {
            Some(b'{') => {
                if let Some(m) = t.object_id() {
                    each(m);
                }
            }
            Some(b'[') => {
                t.i += 1;
                loop {
                    t.ws();
                    let element = t.i;
                    match t.peek() {
                        Some(b'{') => {
                            if let Some(m) = t.object_id() {
                                each(m);
                            }
                        }
                        Some(b']') => {
                            t.i += 1;
                            break;
                        }
                        None => break,
                        Some(_) => {
                            if !t.skip_value() {
                                break;
                            }
                        }
                    }
                    t.ws();
                    if t.peek() == Some(b',') {
                        t.i += 1;
                    } else if t.i == element {
                        // Nothing could be read here: the batch ends.
                        break;
                    }
                }
            }
            None => break,
            Some(_) => {
                if !t.skip_value() {
                    break;
                }
            }
        }
        if t.i == before {
            // Nothing could be read here: skip a byte and read on.
            t.i += 1;
        }
    }
}

/// The raw id text of every message of `line` with an id member (see [`messages`]).
#[cfg(test)]
pub(crate) fn message_ids(line: &[u8]) -> Vec<Option<&str>> {
    messages(line).into_iter().map(|m| m.id).collect()
}

struct Tolerant<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Tolerant<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// A string token at `self.i` (which is `"`): its bytes between the quotes.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.i + 1;
        let mut j = start;
        while let Some(&c) = self.b.get(j) {
            match c {
                b'"' => {
                    self.i = j + 1;
                    return self.b.get(start..j);
                }
                b'\\' => j += 2,
                _ => j += 1,
            }
        }
        self.i = self.b.len();
        None
    }

    /// Skips one value of any kind (strings and brackets tracked; nothing validated). False when
    /// the input ends inside it.
    fn skip_value(&mut self) -> bool {
        match self.peek() {
            None => false,
            Some(b'"') => self.string().is_some(),
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                while let Some(c) = self.peek() {
                    match c {
                        b'"' => {
                            if self.string().is_none() {
                                return false;
                            }
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                self.i += 1;
                                return true;
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
                false
            }
            Some(_) => {
                while let Some(c) = self.peek() {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        return true;
                    }
                    self.i += 1;
                }
                false
            }
        }
    }

    /// Reads the object at `self.i`; `Some` when it has an id member (the last one wins), whose
    /// id is `None` if that member's value is not a strict string, number or boolean.
    fn object_id(&mut self) -> Option<Tolerated<'a>> {
        self.i += 1;
        let mut found: Option<Option<&'a str>> = None;
        let mut answer = false;
        let done =
            |found: Option<Option<&'a str>>, answer: bool| found.map(|id| Tolerated { id, answer });
        loop {
            self.ws();
            match self.peek() {
                Some(b'"') => {}
                Some(b'}') => {
                    self.i += 1;
                    return done(found, answer);
                }
                _ => return done(found, answer),
            }
            let Some(key) = self.string() else {
                return done(found, answer);
            };
            self.ws();
            if self.peek() != Some(b':') {
                return done(found, answer);
            }
            self.i += 1;
            self.ws();
            let start = self.i;
            let complete = self.skip_value();
            let key = String::from_utf8_lossy(key);
            answer |= lenient::same_key(&key, "result") || lenient::same_key(&key, "error");
            let is_id = lenient::same_key(&key, "id");
            if is_id {
                let text = self
                    .b
                    .get(start..self.i)
                    .and_then(|v| std::str::from_utf8(v).ok())
                    .map(|v| v.trim_end_matches([' ', '\t', '\n', '\r']))
                    .filter(|v| {
                        (matches!(v.bytes().next(), Some(b'"' | b'-' | b'0'..=b'9'))
                            && strict_json::scan_str(v, 1).is_ok())
                            || *v == "true"
                            || *v == "false"
                    });
                found = Some(text);
            }
            if !complete {
                return done(found, answer);
            }
            self.ws();
            if self.peek() == Some(b',') {
                self.i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_ids_where_lenient_readers_do() {
        fn ids(l: &[u8]) -> Vec<Option<&str>> {
            message_ids(l)
        }
        assert_eq!(ids(br#"{"id":1,"result":{"a":1,"a":2}}"#), [Some("1")]);
        assert_eq!(ids(br#"{"id":1,"ID":"x","result":{}}"#), [Some(r#""x""#)]);
        assert_eq!(ids(b"{\"result\":{\"t\":\"\xff\"},\"id\":7}"), [Some("7")]);
        assert_eq!(ids(br#"{"\u0069d":2,"result":1e400}"#), [Some("2")]);
        assert_eq!(ids(b"{\"id\":\"\xff\",\"result\":0}"), [None]);
        assert_eq!(ids(br#"{"id":NaN,"result":0}"#), [None]);
        assert_eq!(ids(br#"{"id":[1],"result":0}"#), [None]);
        assert_eq!(
            ids(br#"[{"id":1,"result":0},{"method":"x"},{"id":"b","a":1,"a":2},7,[{"id":9}]]"#),
            [Some("1"), Some(r#""b""#)]
        );
        assert!(ids(br#"{"method":"notify","params":{"id":3}}"#).is_empty());
        assert!(ids(b"not json").is_empty());
        assert_eq!(ids(br#"{"id":5,"result":{"#), [Some("5")]);
        assert_eq!(ids(br#"{"id":5"#), [Some("5")]);
        assert_eq!(ids(br#"{"id":"#), [None]);
    }
}
