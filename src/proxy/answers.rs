//! Which pending request does a server line answer? (SPEC §5, "Answers nobody asked for".)
//!
//! A server message that is a response (a `result` or `error` member, by lenient class) reaches
//! the client only when it answers a request the client sent, the wrapper forwarded, and that is
//! still waiting for its answer ([`PendingRequests`]). Everything else — an answer written ahead
//! of its request, a second answer, an answer to a cancelled or refused request, an answer with
//! no id or a `null` one — is dropped and counted. MCP SDK clients register a request's handler
//! before they write it and number requests 0, 1, 2, …, so an answer written early would be taken
//! for the answer to the next request: for a `tools/list`, shown to the model unfiltered.
//!
//! One rule covers decoys, races and the listing filters: the listing filter
//! (`tools_list`) judges exactly the messages this module says answer a pending `tools/list`.
//!
//! A line is read in one of three ways:
//! - **at a glance** (most lines): a line without backslashes is a sequence of strings between
//!   consecutive quotes; its object keys are the strings followed by `:`. A line none of whose
//!   keys is a `result` or an `error` (by lenient class, at any depth) holds no response.
//!   A line spelled `{"jsonrpc":"2.0","id":ID,"result":…` (or `"error"`) with exactly one id key
//!   and one answer key is a single response with that id.
//! - **walked** with the client-line rules (`tools_list::walk`) otherwise: each message of the
//!   line (the object, or each object of a batch) is judged; a batch loses its unsolicited
//!   elements and keeps the others byte-exact (but for a respelled id, see [`respell`]).
//! - **tolerantly**, when the strict rules refuse the line: the ids lenient parsers would read
//!   (`tools_list::unreadable`). It is forwarded only when every response in it answers a pending
//!   request, each a different one (a second answer to the same request is unsolicited);
//!   otherwise the requests it answers get one `-32603` error each and nothing of it passes.

use super::line_marks::{Glance, LineMarks};
pub(crate) use super::pending::LineAnswers;
use super::pending::PendingRequests;
use super::rpc_id::number_token_len;
use super::tools_list::unreadable;
use super::tools_list::walk::{self, Hooks, MessageInfo};

/// [`judge_marked`] after the line's one pass (tests).
#[cfg(test)]
pub(crate) fn judge(line: &[u8], pending: &PendingRequests) -> Judged {
    judge_marked(line, &super::line_marks::read(line, false), pending)
}

/// The glance of `line` (tests: the one pass without the requests' marks).
#[cfg(test)]
fn glance(line: &[u8]) -> Glance {
    super::line_marks::read(line, false).glance
}

/// What reaches the client of one server line.
#[derive(Debug)]
pub(crate) enum Gate {
    /// The line as it is; its responses (if any) answered these requests.
    Forward(LineAnswers),
    /// This line instead (`\n` terminated when the server's was): a batch without its
    /// unsolicited responses, its respelled ids written as the client wrote them (the answers
    /// name them so, see [`respell`]).
    Trimmed(Vec<u8>, LineAnswers),
    /// These error responses instead (one line, `\n` terminated): the requests an unreadable
    /// line answered (the answers), which carried something unsolicited too.
    Replace(Vec<u8>, LineAnswers),
    /// Nothing.
    Drop,
}

/// A judged server line.
#[derive(Debug)]
pub(crate) struct Judged {
    pub gate: Gate,
    /// How many responses of the line answered nothing pending.
    pub unsolicited: usize,
}

/// Judges one server line (`\n` included) against the pending requests, taking away those it
/// answers when (part of) it is forwarded. `marks`: the line's one pass (`line_marks::read`),
/// which the later stages consume too.
pub(crate) fn judge_marked(line: &[u8], marks: &LineMarks, pending: &PendingRequests) -> Judged {
    match marks.glance {
        Glance::NoResponse => {
            return Judged {
                gate: Gate::Forward(LineAnswers::default()),
                unsolicited: 0,
            };
        }
        Glance::Single => {
            // An id with a raw control character is no JSON a strict reader takes: the walk
            // and the tolerant reading decide.
            if let Some(id) = common_response_id(line)
                .filter(|id| !id.iter().any(|b| *b < 0x20))
                .and_then(|id| std::str::from_utf8(id).ok())
            {
                let mut answers = LineAnswers::default();
                return match pending.answer(id) {
                    Some(answer) => {
                        answers.push(id, answer);
                        Judged {
                            gate: Gate::Forward(answers),
                            unsolicited: 0,
                        }
                    }
                    None => Judged {
                        gate: Gate::Drop,
                        unsolicited: 1,
                    },
                };
            }
        }
        Glance::Unsure => {}
    }
    match std::str::from_utf8(line) {
        Ok(text) if strict_line(line) => {
            walked(text, line, pending).unwrap_or_else(|| tolerant(line, pending))
        }
        _ => tolerant(line, pending),
    }
}

/// Whether the line has no carriage return inside its JSON text (a universal-newline reader
/// splits lines there, SPEC §3 item 6): the walk reads the rest.
fn strict_line(line: &[u8]) -> bool {
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let first = line.iter().position(|b| !ws(b)).unwrap_or(0);
    let last = line.iter().rposition(|b| !ws(b)).unwrap_or(first);
    memchr::memchr(b'\r', line.get(first..last).unwrap_or(&[])).is_none()
}

/// One message of a walked line.
#[derive(Clone, Copy)]
struct Message {
    start: usize,
    end: usize,
    /// A response: the id text, if any (`None`: no id member).
    response: Option<Option<(usize, usize)>>,
}

/// Walks `text` with the strict rules, handing each of its messages to `each` as it is read
/// (nothing is collected: a batch holds up to one message per few bytes of the line, SPEC §3
/// item 6). `None` when the strict rules refuse the line — `each` may have seen some of its
/// messages by then.
fn each_message(text: &str, each: impl FnMut(&Message)) -> Option<()> {
    struct Each<F> {
        base: usize,
        each: F,
    }
    impl<'a, F: FnMut(&Message)> Hooks<'a> for Each<F> {
        fn message(&mut self, m: &MessageInfo<'a>) {
            let id = m.id.map(|id| {
                let start = (id.as_ptr() as usize).saturating_sub(self.base);
                (start, start + id.len())
            });
            (self.each)(&Message {
                start: m.start,
                end: m.end,
                response: (m.has_result || m.has_error).then_some(id),
            });
        }
    }
    let mut e = Each {
        base: text.as_ptr() as usize,
        each,
    };
    walk::walk(text, &mut e).ok()
}

/// The walked reading of a line; `None` when the strict rules refuse it.
///
/// A line that is not a batch holds at most one message, read in one walk. A batch is walked
/// twice, holding nothing per element: once to know the strict rules take all of it (a client
/// reads a batch all or nothing, and no answer may be taken from the pending requests before
/// that is known: a refused line is read tolerantly, against the same pending requests), once
/// to take the answers of its responses in order and copy the elements that stay.
fn walked(text: &str, line: &[u8], pending: &PendingRequests) -> Option<Judged> {
    let batch = text
        .trim_start_matches([' ', '\t', '\r', '\n'])
        .starts_with('[');
    let mut answers = LineAnswers::read(Some(true));
    // Whether message `m` stays: it is no response, or it answers a pending request.
    let answer = |m: &Message, answers: &mut LineAnswers| match m.response {
        None => true,
        Some(id) => {
            let answered = id.and_then(|(s, e)| {
                let id = text.get(s..e)?;
                pending.answer(id).map(|a| (id, a))
            });
            answered.map(|(id, a)| answers.push(id, a)).is_some()
        }
    };
    if !batch {
        let mut only = None;
        each_message(text, |m| only = Some(*m))?;
        let unsolicited = match only {
            Some(m) if !answer(&m, &mut answers) => 1,
            _ => 0,
        };
        let gate = if unsolicited == 0 {
            Gate::Forward(answers)
        } else {
            Gate::Drop
        };
        return Some(Judged { gate, unsolicited });
    }
    let mut responses = false;
    each_message(text, |m| responses |= m.response.is_some())?;
    if !responses {
        return Some(Judged {
            gate: Gate::Forward(answers),
            unsolicited: 0,
        });
    }
    // The batch without its unsolicited elements, the others byte-exact but for a respelled id
    // (written as the client wrote it, as [`respell`] does: the copy is not copied again). The
    // copy is made as the elements are read (whether it is needed is known at the end); its
    // pages are touched only as far as it is written.
    let mut out = Vec::with_capacity(line.len());
    out.push(b'[');
    let (mut kept, mut unsolicited) = (0usize, 0usize);
    // The same walk again: it reads the line as the first one did.
    each_message(text, |m| {
        let before = answers.len();
        if answer(m, &mut answers) {
            if kept > 0 {
                out.push(b',');
            }
            kept += 1;
            let element = text.get(m.start..m.end).unwrap_or("").as_bytes();
            let client = answers
                .respelled_from(before)
                .find(|(server, client)| respells(server, client))
                .map(|(_, client)| client);
            match (client, m.response) {
                (Some(client), Some(Some((s, e)))) => {
                    out.extend_from_slice(line.get(m.start..s).unwrap_or(&[]));
                    out.extend_from_slice(client.as_bytes());
                    out.extend_from_slice(line.get(e..m.end).unwrap_or(&[]));
                }
                _ => out.extend_from_slice(element),
            }
        } else {
            unsolicited += 1;
        }
    })?;
    let gate = if unsolicited == 0 {
        Gate::Forward(answers)
    } else if kept == 0 {
        Gate::Drop
    } else {
        out.push(b']');
        if line.ends_with(b"\n") {
            out.push(b'\n');
        }
        // The copy holds the client's spellings of the respelled ids: its answers name them so.
        match renamed(&answers) {
            Some(written) => Gate::Trimmed(out, written),
            None => Gate::Trimmed(out, answers),
        }
    };
    Some(Judged { gate, unsolicited })
}

/// The tolerant reading of a line the strict rules refuse, in one pass holding nothing per
/// message (SPEC §3 item 6): each response takes the pending request it answers. A response
/// that finds none — an answer to nothing pending, or a second answer to a request an earlier
/// response of the line answered (SPEC §5) — is unsolicited. The line is forwarded only when
/// none is; otherwise nothing of it passes and each request it answered gets one `-32603` error
/// (at most one per pending request: never two answers for one request).
fn tolerant(line: &[u8], pending: &PendingRequests) -> Judged {
    let mut answers = LineAnswers::read(Some(false));
    let mut unsolicited = 0usize;
    each_response(line, |id| {
        match id.and_then(|id| pending.answer(id).map(|a| (id, a))) {
            Some((id, a)) => answers.push(id, a),
            None => unsolicited += 1,
        }
    });
    if unsolicited == 0 {
        return Judged {
            gate: Gate::Forward(answers),
            unsolicited,
        };
    }
    const WITHHELD: &str = "server line withheld: it cannot be read strictly and holds a response to no pending request";
    let errors: Vec<Vec<u8>> = answers
        .spellings()
        .map(|spelling| super::tools_list::candidates::withheld_error(Some(spelling), WITHHELD))
        .collect();
    let count = errors.len();
    let mut errors = errors.into_iter();
    let gate = match (errors.next(), count) {
        (None, _) => Gate::Drop,
        (Some(mut one), 1) => {
            one.push(b'\n');
            Gate::Replace(one, answers)
        }
        (Some(first), _) => {
            let mut out = vec![b'['];
            out.extend_from_slice(&first);
            for e in errors {
                out.push(b',');
                out.extend_from_slice(&e);
            }
            out.extend_from_slice(b"]\n");
            Gate::Replace(out, answers)
        }
    };
    Judged { gate, unsolicited }
}

/// The id of each response the tolerant reading finds in `line`, in order (`None`: its id
/// cannot be read), handed to `each` as it is read.
fn each_response<'a>(line: &'a [u8], mut each: impl FnMut(Option<&'a str>)) {
    unreadable::each_message(line, |m| {
        if m.answer {
            each(m.id);
        }
    });
}

/// The id text of a line spelled the way the SDKs (and most servers) write responses:
/// `{"jsonrpc":"2.0","id":ID,"result":` or `…,"error":`, where ID is a number or a string
/// without escapes. `None` for anything else (the walk reads it).
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
mod tests;

/// A forwarded line whose responses spell an id otherwise than the client spelled its request
/// (`"id": true` for the request `1`, `"0__1"`, `1.0`): the line with each such id written as
/// the client wrote it, and its answers with the id texts the rewritten line holds, or `None`
/// when every id is the client's value (the common case: nothing is walked; `"\u0061"` and `"a"`
/// are one value). A client whose reading of ids is strict would otherwise never see its answer
/// — the lenient reading found it, so the strict one must too (SPEC §5, "Answers nobody asked
/// for": one reading for every client).
///
/// Only the id tokens change: the line is walked with the strict rules (the walk that found the
/// answers), each respelled id token is replaced by the client's spelling, and every other byte
/// is the server's. Nothing is parsed into a value, so a maximal line costs one copy (SPEC §3
/// item 6). A line the strict rules refuse is left as it is.
pub(crate) fn respell(line: &[u8], answered: &LineAnswers) -> Option<(Vec<u8>, LineAnswers)> {
    // The server id texts to respell: another value than the client's spelling.
    let respelled: Vec<(&str, &str)> = answered
        .respelled()
        .filter(|(server, client)| respells(server, client))
        .collect();
    if respelled.is_empty() {
        return None;
    }
    let text = std::str::from_utf8(line).ok()?;
    let mut out = Vec::with_capacity(line.len() + 64);
    let mut copied = 0usize;
    each_message(text, |m| {
        let Some(Some((s, e))) = m.response else {
            return;
        };
        let Some(client) = text
            .get(s..e)
            .and_then(|id| respelled.iter().find(|(server, _)| *server == id))
            .map(|(_, client)| *client)
        else {
            return;
        };
        out.extend_from_slice(line.get(copied..s).unwrap_or(&[]));
        out.extend_from_slice(client.as_bytes());
        copied = e;
    })?;
    out.extend_from_slice(line.get(copied..).unwrap_or(&[]));
    Some((out, renamed(answered)?))
}

/// Whether a response whose id the server wrote as `server` answered a request the client
/// spelled `client` under another value (`true`, `"0__1"`, `1.0` for `1`): its id is respelled.
/// The same value spelled otherwise (`"\u0061"` for `"a"`) is not.
fn respells(server: &str, client: &str) -> bool {
    let parse = |t: &str| crate::strict_json::parse_value(t).ok();
    server != client
        && match (parse(server), parse(client)) {
            (Some(server), Some(client)) => server != client,
            _ => false,
        }
}

/// The answers of a line whose respelled ids are written as the client's spellings, named by
/// those spellings (the listing filter finds an answer in a line by its id text); `None` when
/// no id is respelled.
fn renamed(answered: &LineAnswers) -> Option<LineAnswers> {
    let respelled: Vec<(&str, &str)> = answered
        .respelled()
        .filter(|(server, client)| respells(server, client))
        .collect();
    if respelled.is_empty() {
        return None;
    }
    answered.with_server_ids(|server| {
        Some(
            respelled
                .iter()
                .find(|(s, _)| *s == server)
                .map_or(server, |(_, client)| *client)
                .to_string(),
        )
    })
}
