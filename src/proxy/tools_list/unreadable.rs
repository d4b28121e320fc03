//! The ids of a server line the strict rules refuse.
//!
//! While the `tools/list` filter is in effect, a server line that cannot be read strictly (not
//! UTF-8, a duplicate key, `1e400`, nesting too deep, …) is never forwarded: any client could
//! take it for an answer, and it cannot be judged. It is replaced by JSON-RPC errors, one for
//! each message in it that carries an id, so the request it answered does not wait forever.
//! This module finds those ids with a tolerant reading — the way lenient parsers read the line
//! (invalid UTF-8 replaced, the last of duplicate keys wins, keys matched by lenient class) —
//! without building any value. An id is reported only when its own text is strict JSON (a
//! string or a finite number); anything else yields `null`.

use crate::lenient;
use crate::strict_json;

/// The raw id text of every message of `line`: the top-level object, or each object element of
/// a top-level array. `None` for a message whose id could not be read; a message without an id
/// member is left out. Bounded by the line: at most one entry per top-level element.
pub(crate) fn message_ids(line: &[u8]) -> Vec<Option<&str>> {
    let mut t = Tolerant { b: line, i: 0 };
    let mut out = Vec::new();
    t.ws();
    match t.peek() {
        Some(b'{') => {
            if let Some(id) = t.object_id() {
                out.push(id);
            }
        }
        Some(b'[') => {
            t.i += 1;
            loop {
                t.ws();
                match t.peek() {
                    Some(b'{') => {
                        if let Some(id) = t.object_id() {
                            out.push(id);
                        }
                    }
                    Some(b']') | None => break,
                    Some(_) => {
                        if !t.skip_value() {
                            break;
                        }
                    }
                }
                t.ws();
                if t.peek() == Some(b',') {
                    t.i += 1;
                } else {
                    break;
                }
            }
        }
        _ => {}
    }
    out
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

    /// Reads the object at `self.i`; `Some(id)` when it has an id member (the last one wins),
    /// where `id` is `None` if that member's value is not a strict string or number.
    fn object_id(&mut self) -> Option<Option<&'a str>> {
        self.i += 1;
        let mut found: Option<Option<&'a str>> = None;
        loop {
            self.ws();
            match self.peek() {
                Some(b'"') => {}
                Some(b'}') => {
                    self.i += 1;
                    return found;
                }
                _ => return found,
            }
            let key = self.string()?;
            self.ws();
            if self.peek() != Some(b':') {
                return found;
            }
            self.i += 1;
            self.ws();
            let start = self.i;
            let complete = self.skip_value();
            let is_id = lenient::same_key(&String::from_utf8_lossy(key), "id");
            if is_id {
                let text = self
                    .b
                    .get(start..self.i)
                    .and_then(|v| std::str::from_utf8(v).ok())
                    .map(|v| v.trim_end_matches([' ', '\t', '\n', '\r']))
                    .filter(|v| {
                        matches!(v.bytes().next(), Some(b'"' | b'-' | b'0'..=b'9'))
                            && strict_json::scan_str(v, 1).is_ok()
                    });
                found = Some(text);
            }
            if !complete {
                return found;
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
