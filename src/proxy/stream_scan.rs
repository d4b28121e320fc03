//! The streaming scanner of a server line too long to be kept (SPEC §5.3 `results.max_bytes`):
//! fed the line in chunks as it is read and discarded, it keeps only what is needed to answer
//! it — for each message (the line's object, or each object of a batch) whether it is a
//! response (a `result` or `error` member) and the exact text of its `id` — and hands each
//! message to a sink as soon as its object closes. Its memory is a few hundred bytes, whatever
//! the line's length.
//!
//! Keys are read as the rest of the server path reads them (`tools_list::walk::member`: escaped
//! spellings such as `"\u0069d"` and the lenient variants are the key they stand for). It
//! notes whether a message has a `method` member (a server request or notification, answered or
//! counted by the caller). It decides conservatively, so that a refusal never goes to a request
//! the line did not answer:
//! a message with two `id` members (by lenient class), an `id` that is no string or number, an
//! id or key longer than the bounds below, a key or id that is not UTF-8 or holds a raw control
//! character, or a message whose brackets do not match, has no readable id. Such a message
//! answers nothing (the caller drops and counts it).

use super::tools_list::walk::member;

/// The longest id text kept (bytes, quotes included); a longer id is unreadable.
pub(crate) const MAX_ID_BYTES: usize = 4096;

/// The longest raw key examined; a longer key at a message's top level makes its id unreadable
/// (trailing escaped NULs can make a long key one of `id`, `result`, `error` to a lenient
/// reader).
const MAX_KEY_BYTES: usize = 256;

/// The deepest nesting followed; past it the line is no longer read (nothing more is reported).
const MAX_DEPTH: usize = 4096;

/// One message of the line, as the scanner read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen<'a> {
    /// It has a `result` or an `error` member.
    pub response: bool,
    /// It has a `method` member (a request or a notification, when it is no response).
    pub request: bool,
    /// The raw JSON text of its one `id` member, when it can be read (see the module docs).
    pub id: Option<&'a str>,
}

/// Where a byte outside strings stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A key (or the close) of the message object.
    Key,
    /// The `:` after a key of the message object.
    Colon,
    /// The value of a member of the message object.
    Value,
    /// Anything else (deeper values, commas, the root).
    Other,
}

/// What the member being read is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Id,
    Answer,
    Other,
}

/// How a member's value starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    String,
    Scalar,
    Container,
}

/// The message object being read.
#[derive(Debug, Default)]
struct Message {
    ids: u32,
    id: Vec<u8>,
    /// The id cannot be read (too long, not a scalar, a raw control character).
    id_bad: bool,
    response: bool,
    request: bool,
    /// A key could not be classified.
    key_bad: bool,
}

/// The scanner's state between chunks.
#[derive(Debug)]
pub(crate) struct StreamScan {
    /// Open containers, `true` for an object.
    stack: Vec<bool>,
    in_string: bool,
    escape: bool,
    /// The raw text of the key being read, when it is a message key.
    key: Option<Vec<u8>>,
    key_long: bool,
    expect: Expect,
    member: Member,
    /// The id value being read (a scalar that is not a string ends at a delimiter).
    in_id: bool,
    message: Option<Message>,
    /// The root is an array (a batch).
    batch: Option<bool>,
    /// The brackets did not match or nested too deep: nothing more is read.
    broken: bool,
}

impl Default for StreamScan {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamScan {
    /// A scanner at the start of a line.
    pub(crate) fn new() -> Self {
        StreamScan {
            stack: Vec::new(),
            in_string: false,
            escape: false,
            key: None,
            key_long: false,
            expect: Expect::Other,
            member: Member::Other,
            in_id: false,
            message: None,
            batch: None,
            broken: false,
        }
    }

    /// Whether the line's root is an array (`None`: no root seen yet).
    pub(crate) fn batch(&self) -> Option<bool> {
        self.batch
    }

    /// The depth at which a message object's members sit: 1 for a root object, 2 for an
    /// element of a batch.
    fn message_depth(&self) -> usize {
        if self.batch == Some(true) { 2 } else { 1 }
    }

    /// Reads the next bytes of the line, handing each message to `sink` as its object closes.
    pub(crate) fn feed(&mut self, bytes: &[u8], sink: &mut dyn FnMut(Seen<'_>)) {
        let mut at = 0;
        while at < bytes.len() && !self.broken {
            if self.in_string {
                at = self.string_bytes(bytes, at);
                continue;
            }
            let b = bytes[at];
            at += 1;
            if self.in_id {
                if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    self.in_id = false;
                } else {
                    self.id_byte(b);
                    continue;
                }
            }
            self.structural(b, sink);
        }
    }

    /// Bytes inside a string from `at`: returns where to go on.
    fn string_bytes(&mut self, bytes: &[u8], at: usize) -> usize {
        let rest = &bytes[at..];
        let keep = self.key.is_some() || self.in_id;
        if self.escape {
            self.escape = false;
            self.kept(rest[0]);
            return at + 1;
        }
        let Some(i) = memchr::memchr2(b'"', b'\\', rest) else {
            if keep {
                rest.iter().for_each(|b| self.kept(*b));
            }
            return bytes.len();
        };
        if keep {
            rest[..i].iter().for_each(|b| self.kept(*b));
        }
        if rest[i] == b'\\' {
            self.kept(b'\\');
            self.escape = true;
            return at + i + 1;
        }
        self.in_string = false;
        if self.in_id {
            self.id_byte(b'"');
            self.in_id = false;
        } else if let Some(key) = self.key.take() {
            self.end_key(&key);
        }
        at + i + 1
    }

    /// A byte of the key or id being read.
    fn kept(&mut self, b: u8) {
        if self.in_id {
            self.id_byte(b);
        } else if let Some(key) = &mut self.key {
            if key.len() >= MAX_KEY_BYTES {
                self.key_long = true;
            } else {
                key.push(b);
            }
        }
    }

    fn id_byte(&mut self, b: u8) {
        if let Some(m) = &mut self.message {
            if b < 0x20 || m.id.len() >= MAX_ID_BYTES {
                m.id_bad = true;
            } else {
                m.id.push(b);
            }
        }
    }

    /// A key of the message object is complete.
    fn end_key(&mut self, raw: &[u8]) {
        let long = std::mem::take(&mut self.key_long);
        self.expect = Expect::Colon;
        let Some(m) = &mut self.message else { return };
        let key = std::str::from_utf8(raw)
            .ok()
            .filter(|k| !long && !k.bytes().any(|b| b < 0x20));
        let Some(key) = key else {
            m.key_bad = true;
            self.member = Member::Other;
            return;
        };
        let plain = key.is_ascii() && !key.contains('\\');
        self.member = if member(key, plain, "id").is_some() {
            m.ids += 1;
            Member::Id
        } else if member(key, plain, "result").is_some() || member(key, plain, "error").is_some() {
            m.response = true;
            Member::Answer
        } else if member(key, plain, "method").is_some() {
            m.request = true;
            Member::Other
        } else {
            Member::Other
        };
    }

    /// A byte outside strings.
    fn structural(&mut self, b: u8, sink: &mut dyn FnMut(Seen<'_>)) {
        let depth = self.stack.len();
        let at_message = self.message.is_some() && depth == self.message_depth();
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'"' => {
                self.in_string = true;
                if at_message && self.expect == Expect::Key {
                    self.key = Some(Vec::new());
                } else if at_message && self.expect == Expect::Value {
                    self.value_starts(Value::String);
                }
            }
            b'{' | b'[' => {
                let object = b == b'{';
                if at_message && self.expect == Expect::Value {
                    self.value_starts(Value::Container);
                }
                if depth == 0 {
                    if self.batch.is_some() {
                        // A second JSON text after the first: not read.
                        self.broken = true;
                        return;
                    }
                    self.batch = Some(!object);
                }
                if self.stack.len() >= MAX_DEPTH {
                    self.broken = true;
                    return;
                }
                self.stack.push(object);
                if object && self.stack.len() == self.message_depth() && self.message.is_none() {
                    self.message = Some(Message::default());
                    self.expect = Expect::Key;
                }
            }
            b'}' | b']' => {
                let object = b == b'}';
                if self.stack.pop() != Some(object) {
                    self.broken = true;
                    return;
                }
                if object && self.message.is_some() && depth == self.message_depth() {
                    self.close_message(sink);
                }
            }
            b':' if at_message && self.expect == Expect::Colon => self.expect = Expect::Value,
            b',' if at_message => self.expect = Expect::Key,
            _ => {
                if at_message && self.expect == Expect::Value {
                    self.value_starts(Value::Scalar);
                    if self.in_id {
                        self.id_byte(b);
                    }
                }
            }
        }
    }

    /// A value of the message object starts (a string's quote is kept as the id's first byte
    /// when it is the id; an object or array is no id a client wrote).
    fn value_starts(&mut self, value: Value) {
        self.expect = Expect::Other;
        if self.member != Member::Id {
            return;
        }
        let Some(m) = &mut self.message else { return };
        if m.ids > 1 || value == Value::Container {
            m.id_bad = true;
            return;
        }
        self.in_id = true;
        if value == Value::String {
            self.id_byte(b'"');
        }
    }

    fn close_message(&mut self, sink: &mut dyn FnMut(Seen<'_>)) {
        let Some(m) = self.message.take() else { return };
        self.expect = Expect::Other;
        let first = m.id.first().copied();
        let scalar = matches!(first, Some(b'"' | b'-' | b'0'..=b'9'));
        let readable = m.ids == 1 && !m.id_bad && !m.key_bad && scalar;
        let id = if readable {
            std::str::from_utf8(&m.id).ok()
        } else {
            None
        };
        sink(Seen {
            response: m.response,
            request: m.request,
            id,
        });
    }
}

#[cfg(test)]
#[path = "stream_scan/tests.rs"]
mod tests;
