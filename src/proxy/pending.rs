//! Client requests still awaiting their response: which pending request does a server message
//! answer? (SPEC §5, "Answers nobody asked for"; SPEC §3 item 7, the idle drain).
//!
//! The client→server worker notes the id of every request it forwards, with what it asks
//! ([`RequestKind`]), before the line reaches the server, and forgets the id a forwarded
//! `notifications/cancelled` names (a server need not answer a cancelled request). The
//! server→client worker asks, for every response it reads, which pending request it answers
//! ([`PendingRequests::answer`], through `answers.rs`), and that request is answered from then
//! on: a second answer, an answer ahead of its request and an answer for nobody find none, and
//! are not forwarded. Ids are matched as MCP clients match them ([`IdKeys::matches`],
//! `rpc_id.rs`); byte-equal id texts always match (they have the same readings), which is the
//! common case and costs no parse. Servers answer mostly in order, so the oldest pending id is
//! tried first.
//!
//! At most [`MAX_TRACKED`] requests are remembered; past that, requests count as pending for the
//! rest of the session (the drain waits), and their answers find no request and are not
//! forwarded (fail closed: only a server that leaves that many requests unanswered gets there).

use std::cell::OnceCell;

use crate::methods::{self, Answer as MethodAnswer, Method};
use std::collections::VecDeque;
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::value::RawValue;
use smallvec::SmallVec;

use super::pending_lists::PendingLists;
use super::rpc_id::{IdKeys, trim_json_space};
use crate::results::Asked;

/// Pending requests remembered at most.
pub(crate) const MAX_TRACKED: usize = 16_384;

/// Id texts up to this length are kept inline (numbers, UUIDs): no allocation per request.
const INLINE: usize = 46;

/// The raw JSON text of one request id: UTF-8, as every id is noted from text
/// ([`Notes`] keeps them in a `String`).
#[derive(Clone, Debug, PartialEq, Eq)]
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

    /// The id's text (see the type's docs: it always is UTF-8).
    fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

/// What a pending request asks, as far as the answer's reading depends on it: the row of the
/// method table of a request whose answer the proxy reads (a listing, or an answer that may carry
/// the server's `instructions`), or any other request.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RequestKind {
    /// A request whose answer is read: the row of its method.
    Read(&'static Method),
    /// Any other request.
    Other,
}

impl PartialEq for RequestKind {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (RequestKind::Read(a), RequestKind::Read(b)) => a.is(b),
            (RequestKind::Other, RequestKind::Other) => true,
            _ => false,
        }
    }
}

impl Eq for RequestKind {}

impl RequestKind {
    /// A `tools/list` request.
    pub(crate) const TOOLS_LIST: RequestKind = RequestKind::Read(&methods::TOOLS_LIST);

    /// The kind of a request whose method has this row of the table (`None`: a method the
    /// product does not know).
    pub(crate) fn of(row: Option<&'static Method>) -> Self {
        match row {
            Some(m) if matches!(m.answer, MethodAnswer::Listing | MethodAnswer::Instructions) => {
                RequestKind::Read(m)
            }
            _ => RequestKind::Other,
        }
    }

    /// The row of a listing request other than `tools/list` (`resources/list`,
    /// `resources/templates/list`, `prompts/list`).
    pub(crate) fn other_list(self) -> Option<&'static Method> {
        match self {
            RequestKind::Read(m) if m.list.is_some() && !m.is(&methods::TOOLS_LIST) => Some(m),
            _ => None,
        }
    }

    /// Whether the answer is a listing some filter judges (SPEC §5, §5.2).
    fn is_listing(self) -> bool {
        matches!(self, RequestKind::Read(m) if m.answer == MethodAnswer::Listing)
    }
}

/// The pending request a server response answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    /// What the request asked.
    pub kind: RequestKind,
    /// Its id as the client spelled it (raw JSON text).
    spelling: RawId,
    /// What a request whose answer `results` judges asked (SPEC §5.3); `None` otherwise, and
    /// always without a `results` section.
    pub asked: Option<Box<Asked>>,
}

impl Answer {
    /// The client's spelling of the request's id (raw JSON text).
    pub(crate) fn spelling(&self) -> &str {
        self.spelling.as_str()
    }
}

/// One response of a line and the request it answered.
#[derive(Debug, Clone)]
struct Answered {
    /// The server's id text, when it is not the client's spelling (`None`: the same text).
    server: Option<Box<str>>,
    answer: Answer,
}

impl Answered {
    /// The server's id text.
    fn server(&self) -> &str {
        self.server
            .as_deref()
            .unwrap_or_else(|| self.answer.spelling())
    }

    /// The server's id text and the client's spelling, when they differ.
    fn respelled(&self) -> Option<(&str, &str)> {
        self.server
            .as_deref()
            .map(|server| (server, self.answer.spelling()))
    }
}

/// [`LineAnswers::by_id_value`]: what each answered request asked and the client's spelling,
/// by the compact JSON text of its id's value.
pub(crate) struct AnswersById<'a>(std::collections::HashMap<String, (RequestKind, &'a str)>);

impl<'a> AnswersById<'a> {
    /// The request a message whose `id` is the value `id` answered.
    pub(crate) fn get(&self, id: &serde_json::Value) -> Option<(RequestKind, &'a str)> {
        self.0.get(&id.to_string()).copied()
    }
}

/// The responses of one line and the requests they answered.
#[derive(Debug, Default)]
pub(crate) struct LineAnswers {
    /// Each answered request, with the id text the server wrote; a line answers one request
    /// but for a batch, and holds it without an allocation of its own.
    list: SmallVec<[Answered; 1]>,
    /// Whether the line was read with the strict rules: `Some(true)` it was, `Some(false)` they
    /// refused it, `None` it was not walked.
    pub strict: Option<bool>,
}

impl LineAnswers {
    /// No answers yet, of a line read as `strict` says.
    pub(crate) fn read(strict: Option<bool>) -> Self {
        LineAnswers {
            list: SmallVec::new(),
            strict,
        }
    }

    /// Whether some response of the line answers a `tools/list` request.
    pub(crate) fn lists_tools(&self) -> bool {
        self.list
            .iter()
            .any(|a| a.answer.kind == RequestKind::TOOLS_LIST)
    }

    /// The client's spelling of the `initialize` or `server/discover` request the line
    /// answered, if it answered one, and that request's method.
    pub(crate) fn initialize(&self) -> Option<(&str, &'static str)> {
        self.list.iter().find_map(|a| match a.answer.kind {
            RequestKind::Read(m) if m.answer == MethodAnswer::Instructions => {
                Some((a.answer.spelling(), m.name))
            }
            _ => None,
        })
    }

    /// The `tools/list` request a message with the server id text `id` answered: its index
    /// among the line's answers and the client's spelling of its id.
    pub(crate) fn tools_list(&self, id: &str) -> Option<(usize, &str)> {
        let id = trim_json_space(id);
        self.list
            .iter()
            .enumerate()
            .find(|(_, a)| a.server() == id && a.answer.kind == RequestKind::TOOLS_LIST)
            .map(|(i, a)| (i, a.answer.spelling()))
    }

    /// The requests the line answered that `keep` keeps by what they asked (what `keep` made
    /// of it), with the client's spelling of each id: a spelling is read only for a request
    /// kept (the common answer, to a call, is not).
    pub(crate) fn kept<'s, T>(
        &'s self,
        keep: impl Fn(RequestKind) -> Option<T> + 's,
    ) -> impl Iterator<Item = (T, &'s str)> + 's {
        self.list
            .iter()
            .filter_map(move |a| Some((keep(a.answer.kind)?, a.answer.spelling())))
    }

    /// Whether some response of the line spells its id otherwise than the client spelled the
    /// request's (`true` for `1`, `"0__1"`, `1.0`): the server's id text and the client's, for
    /// each answer.
    pub(crate) fn respelled(&self) -> impl Iterator<Item = (&str, &str)> {
        self.respelled_from(0)
    }

    /// How many requests the line answered so far.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// [`Self::respelled`] of the answers from the `from`-th on.
    pub(crate) fn respelled_from(&self, from: usize) -> impl Iterator<Item = (&str, &str)> {
        self.list
            .get(from..)
            .unwrap_or(&[])
            .iter()
            .filter_map(Answered::respelled)
    }

    /// The same answers with each server id text mapped by `id` (`None` from it: none).
    pub(crate) fn with_server_ids(
        &self,
        mut id: impl FnMut(&str) -> Option<String>,
    ) -> Option<LineAnswers> {
        let mut mapped = LineAnswers::read(self.strict);
        for a in &self.list {
            mapped.push(&id(a.server())?, a.answer.clone());
        }
        Some(mapped)
    }

    /// The line's answers indexed by the value of the client's id, for the messages of a batch
    /// re-read as JSON values (they have lost their raw id text): an escape spells the same id,
    /// and a respelled answer already carries the client's spelling. Built once per line.
    pub(crate) fn by_id_value(&self) -> AnswersById<'_> {
        AnswersById(
            self.list
                .iter()
                .filter_map(|a| {
                    let spelling = a.answer.spelling();
                    let v = serde_json::from_str::<serde_json::Value>(spelling).ok()?;
                    Some((v.to_string(), (a.answer.kind, spelling)))
                })
                .collect(),
        )
    }

    /// The answers whose request `results` judges (SPEC §5.3), with the client's spelling of
    /// each request's id.
    pub(crate) fn judged(&self) -> impl Iterator<Item = (&str, &Asked)> {
        self.list
            .iter()
            .filter_map(|a| Some((a.answer.spelling(), a.answer.asked.as_deref()?)))
    }

    /// Each request the line answered, in order: the client's spelling of its id and, for a
    /// request whose answer `results` judges, what it asked.
    pub(crate) fn each(&self) -> impl Iterator<Item = (&str, Option<&Asked>)> {
        self.list
            .iter()
            .map(|a| (a.answer.spelling(), a.answer.asked.as_deref()))
    }

    /// The client's spellings of every request the line answered.
    pub(crate) fn spellings(&self) -> impl Iterator<Item = &str> {
        self.list.iter().map(|a| a.answer.spelling())
    }

    pub(crate) fn push(&mut self, server_id: &str, answer: Answer) {
        let server_id = trim_json_space(server_id);
        let server = (server_id.as_bytes() != answer.spelling.as_bytes()).then(|| server_id.into());
        self.list.push(Answered { server, answer });
    }
}

struct Entry {
    raw: RawId,
    kind: RequestKind,
    /// What it asked, when `results` judges its answer.
    asked: Option<Box<Asked>>,
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
    /// Listing requests (`tools/list`, `resources/list`, `resources/templates/list`,
    /// `prompts/list`), oldest first, indexed by the readings of their ids: an answer some
    /// client could take for a listing is read as one, before any other request it could answer.
    lists: PendingLists<RequestKind>,
    /// Every other request, oldest first.
    others: VecDeque<Entry>,
    /// More requests were pending than could be remembered.
    overflow: bool,
}

/// Where a pending request is kept.
#[derive(Clone, Copy)]
enum Slot {
    /// The age of a pending listing.
    List(u64),
    Other(usize),
}

impl Inner {
    /// The request `text` answers: the oldest listing request it answers, else the oldest other
    /// one. Servers answer mostly in order: an answer spelled as the oldest request's id costs
    /// one comparison (plus one per pending listing); the id's readings are computed only when
    /// the bytes differ.
    fn find(&self, text: &[u8]) -> Option<Slot> {
        let keys: OnceCell<Option<IdKeys>> = OnceCell::new();
        let keys = || keys.get_or_init(|| std::str::from_utf8(text).ok().and_then(IdKeys::of_json));
        let answered = |e: &Entry| e.raw.as_bytes() == text || e.answered_by(text, keys());
        if !self.lists.is_empty() {
            if let Some(age) = self.lists.find(text, keys().as_ref()) {
                return Some(Slot::List(age));
            }
        }
        if self
            .others
            .front()
            .is_some_and(|e| e.raw.as_bytes() == text)
        {
            return Some(Slot::Other(0));
        }
        self.others.iter().position(answered).map(Slot::Other)
    }

    /// Forgets the request `text` answers, and says what it was.
    fn take(&mut self, text: &[u8]) -> Option<Answer> {
        // The spelling is moved from where the request was kept (inline when short).
        Some(match self.find(text)? {
            Slot::List(age) => {
                let listed = self.lists.remove(age)?;
                Answer {
                    kind: listed.kind,
                    spelling: RawId::new(&listed.raw),
                    asked: None,
                }
            }
            Slot::Other(i) => {
                let entry = self.others.remove(i)?;
                Answer {
                    kind: entry.kind,
                    spelling: entry.raw,
                    asked: entry.asked,
                }
            }
        })
    }

    fn len(&self) -> usize {
        self.lists.len() + self.others.len()
    }

    /// A request with id text `raw` (without the whitespace around it) asking `kind` is about to
    /// be forwarded.
    fn note(&mut self, raw: &str, kind: RequestKind, asked: Option<Box<Asked>>) {
        if self.len() >= MAX_TRACKED {
            self.overflow = true;
            return;
        }
        if kind.is_listing() {
            self.lists.push(raw.as_bytes(), kind);
        } else {
            self.others.push_back(Entry {
                raw: RawId::new(raw.as_bytes()),
                kind,
                asked,
                keys: OnceCell::new(),
            });
        }
    }
}

/// The id text of the request a `notifications/cancelled` with these `params` names.
fn cancelled_id(params: Option<&str>) -> Option<&str> {
    #[derive(Deserialize)]
    struct Cancelled<'a> {
        #[serde(rename = "requestId", borrow)]
        request_id: &'a RawValue,
    }
    let c = serde_json::from_str::<Cancelled<'_>>(params?).ok()?;
    Some(c.request_id.get())
}

/// What the client worker noted of the lines of one batch of actions (requests to remember,
/// cancellations), carried out by whoever runs the batch just before its lines are forwarded
/// ([`PendingRequests::note_all`]): every request is noted before its line reaches the server,
/// and the pending set is locked once per batch instead of once per line.
#[derive(Default)]
pub(crate) struct Notes {
    /// The id texts the notes name.
    ids: String,
    list: Vec<Note>,
}

/// One note: its id text is `ids[id.0..id.1]`.
enum Note {
    Asked {
        id: (usize, usize),
        kind: RequestKind,
        asked: Option<Box<Asked>>,
    },
    Cancelled {
        id: (usize, usize),
    },
}

impl Notes {
    fn put(&mut self, id: &str) -> (usize, usize) {
        let start = self.ids.len();
        self.ids.push_str(id);
        (start, self.ids.len())
    }

    /// A request with id text `id` asking `kind` (with what it asked, when `results` judges its
    /// answer, SPEC §5.3; a listing never is) will be forwarded.
    pub(crate) fn asked(&mut self, id: &str, kind: RequestKind, asked: Option<Box<Asked>>) {
        let id = self.put(trim_json_space(id));
        self.list.push(Note::Asked { id, kind, asked });
    }

    /// A `notifications/cancelled` with these `params` will be forwarded: the request it names
    /// will not be answered.
    pub(crate) fn cancelled(&mut self, params: Option<&str>) {
        if let Some(id) = cancelled_id(params) {
            let id = self.put(id);
            self.list.push(Note::Cancelled { id });
        }
    }

    /// Forgets every note (their lines will not be forwarded).
    pub(crate) fn clear(&mut self) {
        self.ids.clear();
        self.list.clear();
    }
}

/// The client requests forwarded and not yet answered.
pub(crate) struct PendingRequests {
    inner: Mutex<Inner>,
}

impl PendingRequests {
    pub(crate) fn new() -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A request with id text `id` asking `kind` is about to be forwarded (the tests' shorthand
    /// for one note carried out at once).
    #[cfg(test)]
    pub(crate) fn note(&self, id: &str, kind: RequestKind) {
        self.note_asked(id, kind, None);
    }

    /// [`Self::note`] of a request whose answer `results` judges (`asked`, SPEC §5.3; a listing
    /// never is).
    #[cfg(test)]
    pub(crate) fn note_asked(&self, id: &str, kind: RequestKind, asked: Option<Box<Asked>>) {
        let mut notes = Notes::default();
        notes.asked(id, kind, asked);
        self.note_all(&mut notes);
    }

    /// Carries out `notes` in order under one lock, and empties it: its lines are about to be
    /// forwarded.
    pub(crate) fn note_all(&self, notes: &mut Notes) {
        if notes.list.is_empty() {
            return;
        }
        let mut inner = self.lock();
        for note in notes.list.drain(..) {
            match note {
                Note::Asked { id, kind, asked } => {
                    inner.note(notes.ids.get(id.0..id.1).unwrap_or_default(), kind, asked)
                }
                Note::Cancelled { id } => {
                    inner.take(notes.ids.get(id.0..id.1).unwrap_or_default().as_bytes());
                }
            }
        }
        drop(inner);
        notes.ids.clear();
    }

    /// The pending request a response with id text `id` answers, which is answered from now on;
    /// `None`: it answers nothing that is pending.
    pub(crate) fn answer(&self, id: &str) -> Option<Answer> {
        self.lock().take(id.as_bytes())
    }

    /// Whether a response with id text `id` would answer a pending request (nothing changes).
    #[cfg(test)]
    pub(crate) fn would_answer(&self, id: &str) -> bool {
        self.lock().find(id.as_bytes()).is_some()
    }

    /// Whether client requests await their response and every one is a request whose answer
    /// `results` judges (SPEC §5.3): a server line cannot then answer anything else, so one
    /// longer than `results.max_bytes` may be streamed past (`oversized`). No request pending
    /// (the line can answer nothing: it is a notification or a server request), a listing, any
    /// other request, or more requests than are remembered, say no.
    pub(crate) fn only_judged(&self) -> bool {
        let inner = self.lock();
        !inner.overflow
            && inner.lists.is_empty()
            && !inner.others.is_empty()
            && inner.others.iter().all(|e| e.asked.is_some())
    }

    /// Whether no client request is awaiting its response.
    pub(crate) fn none(&self) -> bool {
        let inner = self.lock();
        inner.len() == 0 && !inner.overflow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_answer_requests_the_way_clients_match_ids() {
        let p = PendingRequests::new();
        p.note("1", RequestKind::Other);
        p.note("\"two\"", RequestKind::Other);
        p.note("3", RequestKind::TOOLS_LIST);
        assert!(!p.none());
        // Out of order, re-spelled: 3.0 answers 3, and says it was a listing.
        assert_eq!(
            p.answer("3.0"),
            Some(Answer {
                kind: RequestKind::TOOLS_LIST,
                spelling: RawId::new(b"3"),
                asked: None,
            })
        );
        assert_eq!(p.answer("3"), None, "answered once");
        assert!(p.answer("\"\\u0074wo\"").is_some());
        assert!(!p.none(), "1 is still pending");
        assert!(p.would_answer("true"), "pydantic's lax int reads true as 1");
        assert!(p.answer("\"1\"").is_some());
        assert!(p.none());
        assert_eq!(p.answer("1"), None);
    }

    #[test]
    fn a_listing_is_answered_before_another_request_with_a_matching_id() {
        let p = PendingRequests::new();
        p.note("\"1\"", RequestKind::Other);
        p.note("1", RequestKind::TOOLS_LIST);
        assert_eq!(p.answer("1").map(|a| a.kind), Some(RequestKind::TOOLS_LIST));
        assert_eq!(p.answer("1").map(|a| a.kind), Some(RequestKind::Other));
    }

    #[test]
    fn only_judged_requests_are_pending_until_another_one_is() {
        let p = PendingRequests::new();
        assert!(!p.only_judged(), "none pending: the line answers nothing");
        let asked = || {
            let a = crate::results::Asked::of(methods::TOOLS_CALL.name, Some("t"), Some(1));
            assert!(a.is_some());
            a.map(Box::new)
        };
        p.note_asked("1", RequestKind::Other, asked());
        assert!(p.only_judged());
        p.note("2", RequestKind::Other);
        assert!(!p.only_judged(), "a ping is pending");
        assert!(p.answer("2").is_some());
        assert!(p.only_judged());
        p.note("3", RequestKind::TOOLS_LIST);
        assert!(!p.only_judged(), "a listing is pending");
        assert!(p.answer("3").is_some());
        assert!(p.answer("1").is_some());
        assert!(!p.only_judged(), "none pending again");
        for i in 0..=MAX_TRACKED {
            p.note_asked(&i.to_string(), RequestKind::Other, asked());
        }
        for i in 1..MAX_TRACKED {
            assert!(p.answer(&i.to_string()).is_some());
        }
        assert!(!p.only_judged(), "an untracked request may be anything");
    }

    #[test]
    fn a_cancelled_request_is_not_awaited() {
        let p = PendingRequests::new();
        p.note("7", RequestKind::Other);
        let mut notes = Notes::default();
        notes.cancelled(Some(r#"{"requestId":7,"reason":"user"}"#));
        p.note_all(&mut notes);
        assert!(p.none());
        assert_eq!(p.answer("7"), None, "a late answer answers nothing");
    }

    /// A batch's notes are carried out in the order its lines were: a request, its
    /// cancellation and the same id asked again leave one request pending; ids keep their
    /// spelling without the JSON whitespace around them; the notes are used up.
    #[test]
    fn notes_are_carried_out_in_order_and_used_up() {
        let p = PendingRequests::new();
        let mut notes = Notes::default();
        notes.asked(" 7\t", RequestKind::Other, None);
        notes.cancelled(Some(r#"{"requestId": 7}"#));
        notes.asked("\"x\"", RequestKind::TOOLS_LIST, None);
        notes.asked("7", RequestKind::Other, None);
        assert!(
            p.none(),
            "nothing is pending before the notes are carried out"
        );
        p.note_all(&mut notes);
        p.note_all(&mut notes);
        let listing = p.answer("\"x\"");
        let listing = listing.as_ref().map(|a| (a.kind, a.spelling()));
        assert_eq!(listing, Some((RequestKind::TOOLS_LIST, "\"x\"")));
        let other = p.answer("7");
        assert_eq!(other.as_ref().map(Answer::spelling), Some("7"));
        assert!(p.none(), "each note was carried out once");
        let mut notes = Notes::default();
        notes.asked("\u{c}1", RequestKind::Other, None);
        p.note_all(&mut notes);
        assert!(
            p.answer("1").is_none(),
            "a form feed is not JSON whitespace"
        );
        assert!(p.answer("\u{c}1").is_some());
    }

    #[test]
    fn overflow_keeps_requests_pending_and_their_answers_unmatched() {
        let p = PendingRequests::new();
        for i in 0..=MAX_TRACKED {
            p.note(&i.to_string(), RequestKind::Other);
        }
        assert_eq!(p.answer(&MAX_TRACKED.to_string()), None);
        for i in 0..MAX_TRACKED {
            assert!(p.answer(&i.to_string()).is_some());
        }
        assert!(!p.none(), "an untracked request may still be pending");
    }
}
