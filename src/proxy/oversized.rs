//! A server line longer than `results.max_bytes` (SPEC §5.3): the line reader streams past it
//! (`line::LineReader::streaming_past`) and hands it here in pieces, which are scanned
//! (`stream_scan`) and discarded. Each message of the line that is a response with a readable
//! id takes its pending request as any answer does (`pending`); at the line's end each request
//! it answered gets, instead of the server's bytes, the refusal with `P_RESULT_TOO_LARGE` and
//! its `assay.mcp.result` event when `results` judges its answer (`results_stage::too_large`),
//! or the `-32603` error a withheld answer gets when it does not. Every other message of the
//! line (an answer to nothing pending, a notification, a server request, an unreadable id) is
//! dropped and counted as an unsolicited answer; nothing of the line reaches the client.

use super::pending::{LineAnswers, PendingRequests};
use super::results_stage;
use super::shared::Shared;
use super::stream_scan::{Seen, StreamScan};
use super::tools_list::candidates::withheld_error;

/// Why a non-judged answer in an oversized line is withheld.
const WITHHELD: &str =
    "server answer withheld: its line is longer than results.max_bytes and was not kept";

/// The reading of one oversized line, piece by piece.
#[derive(Debug, Default)]
pub(crate) struct Oversized {
    scan: StreamScan,
    answered: LineAnswers,
    /// Messages read that answered nothing pending.
    unsolicited: usize,
}

impl Oversized {
    /// The next piece of the line: each message it completes takes the request it answers.
    pub(crate) fn feed(&mut self, piece: &[u8], pending: &PendingRequests) {
        let Oversized {
            scan,
            answered,
            unsolicited,
        } = self;
        scan.feed(piece, &mut |seen: Seen<'_>| match seen
            .response
            .then_some(seen.id)
            .flatten()
            .and_then(|id| pending.answer(id).map(|a| (id, a)))
        {
            Some((id, a)) => answered.push(id, a),
            None => *unsolicited += 1,
        });
    }

    /// The line ended (`observed`: its length, terminator excluded): what the client gets
    /// instead (whole lines, or nothing) and how many of its messages were unsolicited (at least
    /// one when it answered nothing).
    pub(crate) fn finish(self, shared: &Shared, observed: u64) -> (Vec<u8>, usize) {
        let mut messages: Vec<Vec<u8>> = Vec::new();
        for (spelling, asked) in self.answered.each() {
            messages.push(match asked {
                Some(asked) => results_stage::too_large(shared, spelling, asked, observed),
                None => withheld_error(Some(spelling), WITHHELD),
            });
        }
        let unsolicited = if messages.is_empty() {
            self.unsolicited.max(1)
        } else {
            self.unsolicited
        };
        if messages.is_empty() {
            return (Vec::new(), unsolicited);
        }
        let mut out = Vec::new();
        let batch = self.scan.batch() == Some(true);
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
