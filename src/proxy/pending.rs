//! Client requests still awaiting their response (SPEC §3 item 7): the drain after client EOF has
//! no idle deadline while one is pending — never a deadline for a live tool call.
//!
//! The client→server worker notes the id of every request it forwards, before the line reaches
//! the server, and forgets the id a forwarded `notifications/cancelled` names (a server need not
//! answer a cancelled request). The server→client worker takes away the id of every response
//! line (or batch element) it sees. Ids are matched as MCP clients match them
//! ([`IdKeys::matches`], `rpc_id.rs`); byte-equal id texts always match (they have the same
//! readings), which is the common case and costs no parse. Servers answer mostly in order, so
//! the oldest pending id is tried first.
//!
//! Reading a server line here never changes what is forwarded; it only decides whether the
//! drain may end early. A response this reader does not recognise (unusual spelling, a
//! duplicate key) leaves its request pending: the drain then waits as it would without an idle
//! deadline. At most [`MAX_TRACKED`] requests are remembered; past that, requests count as
//! pending for the rest of the session (the same safe direction).

use std::cell::OnceCell;
use std::collections::VecDeque;
use std::sync::{LazyLock, Mutex};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::envelope::Envelope;
use super::rpc_id::{IdKeys, number_token_len};

/// Pending requests remembered at most.
pub(crate) const MAX_TRACKED: usize = 16_384;

/// Id texts up to this length are kept inline (numbers, UUIDs): no allocation per request.
const INLINE: usize = 46;

/// The raw JSON text of one request id.
enum RawId {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl RawId {
    fn new(text: &[u8]) -> Self {
        match u8::try_from(text.len()) {
            Ok(len) if text.len() <= INLINE => {
                let mut bytes = [0u8; INLINE];
                bytes[..text.len()].copy_from_slice(text);
                RawId::Inline { len, bytes }
            }
            _ => RawId::Heap(text.into()),
        }
    }

    fn as_bytes(&self) -> &[u8] {
        match self {
            RawId::Inline { len, bytes } => &bytes[..usize::from(*len)],
            RawId::Heap(b) => b,
        }
    }
}

struct Entry {
    raw: RawId,
    /// The id's readings, computed the first time an id text differs from it.
    keys: OnceCell<Option<IdKeys>>,
}

impl Entry {
    fn answered_by(&self, text: &[u8], keys: &Option<IdKeys>) -> bool {
        if self.raw.as_bytes() == text {
            return true;
        }
        let Some(theirs) = keys else {
            return false;
        };
        self.keys
            .get_or_init(|| {
                std::str::from_utf8(self.raw.as_bytes())
                    .ok()
                    .and_then(IdKeys::of_json)
            })
            .as_ref()
            .is_some_and(|ours| ours.matches(theirs))
    }
}

#[derive(Default)]
struct Inner {
    /// Oldest first.
    ids: VecDeque<Entry>,
    /// More requests were pending than could be remembered.
    overflow: bool,
}

impl Inner {
    /// Forgets the first request `text` answers.
    fn take(&mut self, text: &[u8]) {
        if self.ids.front().is_some_and(|e| e.raw.as_bytes() == text) {
            self.ids.pop_front();
            return;
        }
        let keys = std::str::from_utf8(text).ok().and_then(IdKeys::of_json);
        if let Some(i) = self.ids.iter().position(|e| e.answered_by(text, &keys)) {
            self.ids.remove(i);
        }
    }
}

/// The client requests forwarded and not yet answered.
pub(crate) struct PendingRequests {
    /// Tracking is off when the drain has no idle deadline.
    enabled: bool,
    inner: Mutex<Inner>,
}

impl PendingRequests {
    pub(crate) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A request with id text `id` is about to be forwarded.
    pub(crate) fn note(&self, id: &str) {
        if !self.enabled {
            return;
        }
        let mut inner = self.lock();
        if inner.ids.len() >= MAX_TRACKED {
            inner.overflow = true;
            return;
        }
        inner.ids.push_back(Entry {
            raw: RawId::new(id.as_bytes()),
            keys: OnceCell::new(),
        });
    }

    /// A forwarded `notifications/cancelled` with these `params`: the request it names will
    /// not be answered.
    pub(crate) fn cancelled(&self, params: Option<&str>) {
        #[derive(Deserialize)]
        struct Cancelled<'a> {
            #[serde(rename = "requestId", borrow)]
            request_id: &'a RawValue,
        }
        if !self.enabled {
            return;
        }
        if let Some(c) = params.and_then(|p| serde_json::from_str::<Cancelled<'_>>(p).ok()) {
            self.lock().take(c.request_id.get().as_bytes());
        }
    }

    /// A line from the server: every response in it (a single object or a batch) answers its
    /// request.
    pub(crate) fn on_server_line(&self, line: &[u8]) {
        if !self.enabled {
            return;
        }
        if let Some(id) = common_response_id(line) {
            self.lock().take(id);
            return;
        }
        static ID_KEY: LazyLock<memchr::memmem::Finder<'static>> =
            LazyLock::new(|| memchr::memmem::Finder::new(b"\"id\""));
        if ID_KEY.find(line).is_none() {
            return;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            return;
        };
        let text = text.trim_matches([' ', '\t', '\n', '\r']);
        if text.starts_with('[') {
            // All or nothing, as a client reads a batch: a first pass checks that the whole line
            // reads, a second takes each element's id as it is read — never a `Vec` of the
            // elements, whose size would grow with the line (SPEC §3 item 6).
            let read = |ids: Option<&mut Inner>| {
                let mut de = serde_json::Deserializer::from_str(text);
                serde::Deserializer::deserialize_seq(&mut de, BatchIds(ids))
                    .and_then(|()| de.end())
                    .is_ok()
            };
            if read(None) {
                read(Some(&mut self.lock()));
            }
        } else if let Some(id) = serde_json::from_str::<Envelope<'_>>(text)
            .ok()
            .as_ref()
            .and_then(Envelope::response_id)
        {
            self.lock().take(id.as_bytes());
        }
    }

    /// Whether no client request is awaiting its response.
    pub(crate) fn none(&self) -> bool {
        let inner = self.lock();
        inner.ids.is_empty() && !inner.overflow
    }
}

/// Reads a batch one element at a time; with `Some`, takes away the id of every response.
struct BatchIds<'i>(Option<&'i mut Inner>);

impl<'de> serde::de::Visitor<'de> for BatchIds<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a batch of JSON-RPC messages")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        while let Some(r) = seq.next_element::<Envelope<'de>>()? {
            if let (Some(inner), Some(id)) = (self.0.as_deref_mut(), r.response_id()) {
                inner.take(id.as_bytes());
            }
        }
        Ok(())
    }
}

/// The id text of a line spelled the way the SDKs (and most servers) write responses:
/// `{"jsonrpc":"2.0","id":ID,"result":` or `…,"error":`, where ID is a number or a string
/// without escapes. `None` for anything else (the general reader handles it).
fn common_response_id(line: &[u8]) -> Option<&[u8]> {
    const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
    let rest = line.strip_prefix(HEAD)?;
    let len = match rest.first()? {
        b'"' => {
            let close = memchr::memchr2(b'"', b'\\', rest.get(1..)?)? + 1;
            (rest.get(close) == Some(&b'"')).then_some(close + 1)?
        }
        // A number must be followed by more of the line (checked below).
        b'-' | b'0'..=b'9' => number_token_len(rest),
        _ => return None,
    };
    let (id, after) = rest.split_at(len);
    (after.starts_with(b",\"result\":") || after.starts_with(b",\"error\":")).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_spelling_is_read_without_a_parse() {
        let id = |l: &str| common_response_id(l.as_bytes()).map(|b| b.to_vec());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":12,"result":{}}"#),
            Some(b"12".to_vec())
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":"a-1","error":{}}"#),
            Some(b"\"a-1\"".to_vec())
        );
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":"a\"b","result":{}}"#), None);
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":3,"method":"x"}"#), None);
        assert_eq!(id(r#"{"id":3,"result":{}}"#), None);
    }

    #[test]
    fn responses_answer_requests_the_way_clients_match_ids() {
        let p = PendingRequests::new(true);
        p.note("1");
        p.note("\"two\"");
        p.note("3");
        assert!(!p.none());
        // Out of order, re-spelled: 3.0 answers 3; a server request with id 1 answers nothing.
        p.on_server_line(b"{\"id\":3.0,\"jsonrpc\":\"2.0\",\"result\":{}}\n");
        p.on_server_line(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"roots/list\"}\n");
        p.on_server_line(b"[{\"jsonrpc\":\"2.0\",\"id\":\"\\u0074wo\",\"error\":{}}]\n");
        assert!(!p.none(), "1 is still pending");
        p.on_server_line(b"{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}\n");
        assert!(p.none());
    }

    #[test]
    fn a_cancelled_request_is_not_awaited() {
        let p = PendingRequests::new(true);
        p.note("7");
        p.cancelled(Some(r#"{"requestId":7,"reason":"user"}"#));
        assert!(p.none());
    }

    #[test]
    fn unrecognised_responses_and_overflow_keep_requests_pending() {
        let p = PendingRequests::new(true);
        p.note("1");
        // A duplicate key: not read, so 1 stays pending (the safe direction).
        p.on_server_line(b"{\"id\":1,\"id\":1,\"result\":{}}\n");
        assert!(!p.none());
        let p = PendingRequests::new(true);
        for i in 0..=MAX_TRACKED {
            p.note(&i.to_string());
        }
        for i in 0..=MAX_TRACKED {
            p.on_server_line(format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"result\":1}}").as_bytes());
        }
        assert!(!p.none(), "an untracked request may still be pending");
    }

    #[test]
    fn disabled_tracking_remembers_nothing() {
        let p = PendingRequests::new(false);
        p.note("1");
        assert!(p.none());
    }
}
