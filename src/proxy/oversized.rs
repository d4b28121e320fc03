//! A server line longer than `results.max_bytes` (SPEC §5.3) that can answer nothing but
//! requests `results` judges — requests are pending and every one is such a request
//! ([`Past::may_stream`]) — or that is longer than the line bound: the line reader streams past it
//! (`line::LineReader::streaming_past`) and hands it here in pieces, which are scanned
//! (`stream_scan`) and discarded. Each message of the line that is a response with a readable
//! id takes its pending request as any answer does (`pending`); at the line's end each request
//! it answered gets, instead of the server's bytes, the refusal with `P_RESULT_TOO_LARGE` and
//! its `assay.mcp.result` event when `results` judges its answer (`results_stage::too_large`),
//! or the `-32603` error a withheld answer gets when it does not. A server request (a `method`
//! and a readable id) is answered to the server with a `-32603` error as soon as its object
//! closes, so the server does not wait on it; a notification is dropped; both are named in one
//! diagnostics line. Every other message (an answer to nothing pending, an unreadable id) is
//! dropped and counted as an unsolicited answer; nothing of the line reaches the client.

use super::line::Past;
use super::message::raw_id;
use super::pending::LineAnswers;
use super::respond;
use super::results_stage;
use super::shared::Shared;
use super::stream_scan::{Seen, StreamScan};
use super::tools_list::candidates::withheld_error;

/// Why a non-judged answer in an oversized line is withheld.
const WITHHELD: &str =
    "server answer withheld: its line is longer than results.max_bytes and was not kept";

/// What the server is answered for a request of its own in an oversized line.
const REQUEST_WITHHELD: &str =
    "server request withheld: its line is longer than results.max_bytes and was not kept";

/// The reading of one oversized line, piece by piece.
pub(crate) struct Oversized<'s> {
    scan: StreamScan,
    read: Read<'s>,
}

/// What the messages of an oversized line did so far.
struct Read<'s> {
    shared: &'s Shared,
    answered: LineAnswers,
    /// Messages read that answered nothing pending.
    unsolicited: usize,
    /// Server requests read (each answered to the server with `-32603`).
    requests: usize,
    /// Notifications read, and messages with a `method` whose id cannot be read.
    notifications: usize,
}

impl<'s> Oversized<'s> {
    /// Nothing read yet, of the next line of the session `shared`.
    pub(crate) fn new(shared: &'s Shared) -> Self {
        Oversized {
            scan: StreamScan::new(),
            read: Read {
                shared,
                answered: LineAnswers::default(),
                unsolicited: 0,
                requests: 0,
                notifications: 0,
            },
        }
    }

    /// The line ended (`observed`: its length, terminator excluded): what the client gets
    /// instead (whole lines, or nothing) and how many of its messages were unsolicited (at least
    /// one when it answered nothing and held no server request or notification).
    pub(crate) fn finish(self, observed: u64) -> (Vec<u8>, usize) {
        let batch = self.scan.batch() == Some(true);
        self.read.finish(observed, batch)
    }
}

impl Read<'_> {
    /// One message of the line, as its object closes: a response takes the request it answers;
    /// a server request with a readable id is answered to the server with the `-32603` error
    /// at once (the server may be waiting on it; nothing of it is kept); a notification is
    /// counted.
    fn seen(&mut self, seen: Seen<'_>) {
        let shared = self.shared;
        if !seen.response && seen.request {
            match seen.id.and_then(raw_id) {
                Some(raw) => {
                    self.requests += 1;
                    let error =
                        respond::error(Some(raw), respond::INTERNAL_ERROR, REQUEST_WITHHELD);
                    // Best effort, as every answer to a server request.
                    shared.answer_server(&error);
                }
                None => self.notifications += 1,
            }
            return;
        }
        match seen
            .response
            .then_some(seen.id)
            .flatten()
            .and_then(|id| shared.pending.answer(id).map(|a| (id, a)))
        {
            Some((id, a)) => self.answered.push(id, a),
            None => self.unsolicited += 1,
        }
    }

    /// [`Oversized::finish`] of a line whose root is an array (`batch`) or not.
    fn finish(self, observed: u64, batch: bool) -> (Vec<u8>, usize) {
        let shared = self.shared;
        let mut messages: Vec<Vec<u8>> = Vec::new();
        for (spelling, asked) in self.answered.each() {
            messages.push(match asked {
                Some(asked) => results_stage::too_large(shared, spelling, asked, observed),
                None => withheld_error(Some(spelling), WITHHELD),
            });
        }
        let withheld = self.requests + self.notifications;
        if withheld > 0 {
            shared.diag.say(&format!(
                "withheld a server line of {observed} bytes, longer than results.max_bytes and read past, never kept: {} server requests in it answered to the server with -32603, {} notifications in it dropped",
                self.requests, self.notifications
            ));
        }
        let unsolicited = if messages.is_empty() && withheld == 0 {
            self.unsolicited.max(1)
        } else {
            self.unsolicited
        };
        if messages.is_empty() {
            return (Vec::new(), unsolicited);
        }
        let mut out = Vec::new();
        if batch {
            out.push(b'[');
        }
        for (i, m) in messages.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(m);
        }
        if batch {
            out.push(b']');
        }
        out.push(b'\n');
        (out, unsolicited)
    }
}

impl Past for Oversized<'_> {
    /// A line longer than `results.max_bytes` is streamed only while requests are pending and
    /// every one is a request `results` judges: a line the server started writing can then answer
    /// nothing else (a request noted later was not yet forwarded when the server began the line;
    /// only a hostile server answers ahead, and then gets the fail-closed refusal or `-32603`
    /// error). Otherwise — a listing or another request pending, or none — it is kept up to the
    /// line bound and judged whole, as without `max_bytes`.
    fn may_stream(&mut self) -> bool {
        self.read.shared.pending.only_judged()
    }

    fn piece(&mut self, bytes: &[u8]) {
        let Oversized { scan, read } = self;
        scan.feed(bytes, &mut |seen: Seen<'_>| read.seen(seen));
    }
}
