//! The server→client worker: copies the child's stdout to the client output line by line,
//! byte-exact, never re-serialized — except responses that answer no pending client request,
//! which are dropped (`answers`), and answers to the client's `tools/list` requests while the
//! filter is in effect, which `tools_list` rewrites or replaces (SPEC §5).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::answers::{self, Gate, LineAnswers};
use super::client_features::{self, Features};
use super::endpoint::Endpoint;
use super::governed_lists;
use super::instructions;
use super::line::{Item, LineReader, Long};
use super::line_marks;
use super::message::tool_call_id;
use super::oversized::Oversized;
use super::results_stage;
use super::shared::Shared;
use super::tools_list::{self, Listing, ServerLine};
use super::workers::WorkerError;
use crate::diag::Diag;
use crate::diag::Piece::{self, Ours, Peer};
use crate::evidence::decision_log::ListingEntry;
use crate::methods::TOOLS_LIST;
use crate::policy::ReasonCode;
use crate::sha256::HexDigest;

pub(crate) struct ServerWorker {
    pub reader: LineReader<Endpoint>,
    pub shared: Arc<Shared>,
}

impl ServerWorker {
    pub(crate) fn run(mut self) -> Result<(), WorkerError> {
        let shared = self.shared.clone();
        let features = client_features::governed(&shared);
        // However this worker ends, the diagnostics it held are written.
        let _release = ReleaseHeld(&shared.diag);
        loop {
            let output = &shared.output;
            let diag = &shared.diag;
            // Before waiting for the server: the held diagnostics, then the client output.
            let mut idle = || {
                diag.release();
                output.flush()
            };
            let mut oversized = Oversized::new(&shared);
            let item = self.reader.next_item(&mut idle, &mut oversized);
            let line = match item {
                Ok(Some(Item::Line(line))) => line,
                Ok(Some(Item::Long(long))) => {
                    long_line(&shared, oversized, long)?;
                    if long.last {
                        return Ok(());
                    }
                    continue;
                }
                Ok(None) => break,
                Err(e) => return Err(WorkerError::from_line(e, "server output")),
            };
            let last = !line.ends_with(b"\n");
            // The line's one pass: the gate's glance and, when `client_features` is governed,
            // whether it may hold a request (the stages below do not scan it again for that).
            let marks = line_marks::read(line, features);
            let judged = answers::judge_marked(line, &marks, &shared.pending);
            if judged.unsolicited > 0 {
                shared
                    .unsolicited
                    .fetch_add(judged.unsolicited as u64, Ordering::Relaxed);
            }
            match judged.gate {
                Gate::Forward(answered) => {
                    let held = marks.may_hold_request;
                    judge_answered(&shared, features, (line, held), answered, last)?
                }
                Gate::Trimmed(trimmed, answered) => {
                    judge_answered(&shared, features, (&trimmed, None), answered, last)?
                }
                Gate::Replace(errors, answered) => {
                    results_stage::instead_of(&shared, &errors, &answered);
                    instead(&shared, &errors, last)?
                }
                Gate::Drop if last => finish(&shared, b"")?,
                Gate::Drop => {}
            }
            if last {
                return Ok(());
            }
        }
        finish(&shared, b"")
    }
}

/// Writes the diagnostics this worker held ([`Diag::say_held`]) when dropped.
struct ReleaseHeld<'a>(&'a Diag);

impl Drop for ReleaseHeld<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// A line (or what the gate left of it) whose responses answered `answered`, through the
/// judgements in order: its ids respelled as the client spelled them, then the client features
/// (when governed), then the instructions and the listing filters, then the write. `held`:
/// what the one pass over these bytes knows of a request in them (`None`: other bytes).
fn judge_answered(
    shared: &Shared,
    features: bool,
    (line, held): (&[u8], Option<bool>),
    answered: LineAnswers,
    last: bool,
) -> Result<(), WorkerError> {
    // An id spelled otherwise than the client's is written as the client's.
    let respelled = answers::respell(line, &answered);
    let (line, answered, held): (&[u8], &LineAnswers, _) = match &respelled {
        Some((respelled, client)) => (respelled, client, None),
        None => (line, &answered, held),
    };
    let judged = if features {
        client_features::judge(shared, line, answered, held)
    } else {
        Features::Pass
    };
    // What is left of a line after the client features are judged: answers to governed
    // requests judged under `results` (SPEC §5.3), then the instructions and the listing
    // filters.
    let rest = |l: &[u8]| {
        let judged = results_stage::on_line(shared, l, answered);
        let l = judged.as_deref().unwrap_or(l);
        match instructions_of(shared, l, answered) {
            Some(replaced) => pass(shared, &replaced, answered, last),
            None => pass(shared, l, answered, last),
        }
    };
    match judged {
        Features::Instead(errors) => {
            results_stage::instead_of(shared, &errors, answered);
            instead(shared, &errors, last)
        }
        Features::Edited(edited) => rest(&edited),
        Features::Pass => rest(line),
    }
}

/// A line streamed past (SPEC §5.3: longer than `results.max_bytes` while only judged requests
/// were pending, or than the line bound): the refusals and errors for the requests it answered
/// instead; its server requests answered to the server, its notifications dropped, its other
/// messages counted as unsolicited.
fn long_line(shared: &Shared, read: Oversized, long: Long) -> Result<(), WorkerError> {
    let (out, unsolicited) = read.finish(long.bytes);
    shared
        .unsolicited
        .fetch_add(unsolicited as u64, Ordering::Relaxed);
    instead(shared, &out, long.last)
}

/// Writes `bytes` (whole lines, or nothing) instead of a server line; `last`: the server's final
/// bytes, after which the output is finished.
fn instead(shared: &Shared, bytes: &[u8], last: bool) -> Result<(), WorkerError> {
    if !bytes.is_empty() {
        shared
            .output
            .write_line(bytes)
            .map_err(super::emitter::to_client)?;
    }
    if last {
        finish(shared, b"")?;
    }
    Ok(())
}

/// Writes a line whose responses answered `answered` (the listing filter judges it first).
/// `last`: the server's final bytes, without a `\n`, after which the output is finished.
fn pass(
    shared: &Shared,
    line: &[u8],
    answered: &LineAnswers,
    last: bool,
) -> Result<(), WorkerError> {
    if shared.tools_list.hides() {
        if let Some(f) = governed_lists::judge(&shared.policy, line, answered) {
            for (kind, listing) in &f.listings {
                record_listing(shared, listing, kind.method(), kind.noun());
            }
            match f.line {
                // The line with its list answers judged: a `tools/list` answer of the same
                // batch is still judged by the listing filter.
                Some(bytes) if f.edited => return pass_tools(shared, &bytes, answered, last),
                Some(bytes) => return instead(shared, &bytes, last),
                None => {}
            }
        }
    }
    pass_tools(shared, line, answered, last)
}

/// The `tools/list` listing filter, then the write (the rest of [`pass`]).
fn pass_tools(
    shared: &Shared,
    line: &[u8],
    answered: &LineAnswers,
    last: bool,
) -> Result<(), WorkerError> {
    let judged = tools_list::on_server_line(&shared.tools_list, &shared.policy, line, answered);
    for listing in &judged.listings {
        record_listing(shared, listing, TOOLS_LIST.name, tool_noun());
    }
    let written = match judged.line {
        // Only the server's last bytes lack a `\n`: they go out with the close.
        ServerLine::Forward if last => return finish(shared, line),
        ServerLine::Forward => shared.output.write_line(line),
        ServerLine::Rewrite(r) => {
            if let Some(notice) = r.notice() {
                shared.diag.say(&notice);
            }
            shared.output.write_with(|w| r.write_to(w))
        }
    };
    written.map_err(super::emitter::to_client)?;
    if last {
        finish(shared, b"")?;
    }
    Ok(())
}

/// What a `tools/list` entry is called in messages.
fn tool_noun() -> &'static str {
    TOOLS_LIST.list.map_or("tool", |l| l.noun)
}

/// The name of the `removed` entry that stands for the server's instructions (SPEC §4.1a).
const INSTRUCTIONS_ENTRY: &str = "(instructions)";

/// An answer to `initialize` or `server/discover` whose `instructions` differ from the pin
/// (SPEC §5.1): the line without them, or an error when it cannot be read. `None`: unchanged.
fn instructions_of(shared: &Shared, line: &[u8], answered: &LineAnswers) -> Option<Vec<u8>> {
    let (spelling, method) = answered.initialize()?;
    let pins = shared.policy.pins()?;
    match instructions::judge(line, pins.instructions()) {
        instructions::Judged::Same => None,
        instructions::Judged::Stripped(out) => {
            let code = ReasonCode::P_INSTRUCTIONS_DRIFT;
            shared.diag.say(&format!(
                "removed the server's instructions from the answer to request {spelling}: they differ from the pin ({})",
                code.as_str()
            ));
            let request_id = tool_call_id(Some(spelling)).unwrap_or_default();
            shared.record_event(|f, out, seq| {
                f.push_listing_line(
                    out,
                    seq,
                    &ListingEntry {
                        method,
                        request_id: &request_id,
                        shown: &[],
                        removed: &[(INSTRUCTIONS_ENTRY, None, code)],
                        replaced_by_error: false,
                    },
                );
            });
            Some(out)
        }
        instructions::Judged::Unreadable => {
            shared.diag.say(&format!(
                "withheld the answer to request {spelling}: it cannot be read strictly, so its instructions cannot be judged"
            ));
            let mut e = tools_list::withheld_error(
                Some(spelling),
                "server answer withheld: it cannot be read strictly, so its instructions cannot be judged",
            );
            e.push(b'\n');
            Some(e)
        }
    }
}

/// What one listing showed and removed (SPEC §4.1a): its `assay.tool.listing` event, and one
/// `assay:` line per removed entry (`noun`: tool, resource, resource template, prompt) of the
/// answer to `method`.
fn record_listing(shared: &Shared, listing: &Listing, method: &'static str, noun: &'static str) {
    // Held until this worker waits for the server (`ServerWorker::run`): a client listing in a
    // loop costs one write per burst of answers, not one per removed entry. Diagnostics render
    // peer text (SPEC §10): the name cannot break the line.
    for (name, _, code) in &listing.removed {
        let said = removed_entry(noun, name, method, &listing.request_id, *code);
        shared.diag.say_held(&said);
    }
    if listing.replaced_by_error {
        shared
            .diag
            .say_held(&replaced_by_error(method, &listing.request_id));
    }
    let request_id = tool_call_id(Some(&listing.request_id)).unwrap_or_default();
    // Strictly read definitions always canonicalize; one that did not is not in `shown`.
    let shown: Vec<(&str, &HexDigest)> = listing
        .shown
        .iter()
        .filter_map(|(name, d)| d.as_ref().map(|d| (name.as_str(), d)))
        .collect();
    let removed: Vec<(&str, Option<&HexDigest>, ReasonCode)> = listing
        .removed
        .iter()
        .map(|(name, d, code)| (name.as_str(), d.as_ref(), *code))
        .collect();
    shared.record_event(|f, out, seq| {
        f.push_listing_line(
            out,
            seq,
            &ListingEntry {
                method,
                request_id: &request_id,
                shown: &shown,
                removed: &removed,
                replaced_by_error: listing.replaced_by_error,
            },
        );
    });
}

/// "removed {noun} `{name}` from the answer to {method} request {id} ({code})"
fn removed_entry<'a>(
    noun: &'static str,
    name: &'a str,
    method: &'static str,
    id: &'a str,
    code: ReasonCode,
) -> [Piece<'a>; 11] {
    [
        Ours("removed "),
        Ours(noun),
        Ours(" `"),
        Peer(name),
        Ours("` from the answer to "),
        Ours(method),
        Ours(" request "),
        Peer(id),
        Ours(" ("),
        Ours(code.as_str()),
        Ours(")"),
    ]
}

/// "the answer to {method} request {id} was replaced by an error: it cannot be read as a
/// {method} result"
fn replaced_by_error<'a>(method: &'static str, id: &'a str) -> [Piece<'a>; 7] {
    [
        Ours("the answer to "),
        Ours(method),
        Ours(" request "),
        Peer(id),
        Ours(" was replaced by an error: it cannot be read as a "),
        Ours(method),
        Ours(" result"),
    ]
}

/// Server stdout EOF: flush and close the client output (SPEC §3 item 7).
fn finish(shared: &Shared, last: &[u8]) -> Result<(), WorkerError> {
    shared
        .output
        .finish(last)
        .map_err(super::emitter::to_client)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What the pieces' line was before it was put together piece by piece: the message
    /// formatted whole, then rendered.
    fn formatted(msg: &str) -> String {
        format!("assay: {}\n", crate::text::render(msg))
    }

    fn said(pieces: &[Piece<'_>]) -> String {
        let mut line = String::new();
        crate::diag::push_line(&mut line, pieces);
        line
    }

    /// Peer text with what the renderer treats specially: backslash runs, `u{`, controls,
    /// invisible and bidi characters, non-ASCII.
    fn peer() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just("\\".to_owned()),
                Just("u{".to_owned()),
                Just("`".to_owned()),
                Just("\u{1b}[2J".to_owned()),
                Just("\u{202e}".to_owned()),
                Just("\u{200b}".to_owned()),
                Just("\n".to_owned()),
                "[ -~]{0,4}",
                "[é日\u{1F600}]{0,2}",
            ],
            0..8,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// The listing diagnostics said piece by piece are the lines the whole messages
        /// rendered made, byte for byte, whatever the name and the id hold.
        #[test]
        fn listing_diagnostics_are_the_messages_rendered_whole(name in peer(), id in peer()) {
            let prompts = &crate::methods::PROMPTS_LIST;
            let prompt_noun = prompts.list.map_or("prompt", |l| l.noun);
            for (method, noun) in [(TOOLS_LIST.name, tool_noun()), (prompts.name, prompt_noun)] {
                for code in [ReasonCode::P_TOOL_DRIFT, ReasonCode::P_TOOL_UNPINNED] {
                    prop_assert_eq!(
                        said(&removed_entry(noun, &name, method, &id, code)),
                        formatted(&format!(
                            "removed {noun} `{name}` from the answer to {method} request {id} ({})",
                            code.as_str()
                        ))
                    );
                }
                prop_assert_eq!(
                    said(&replaced_by_error(method, &id)),
                    formatted(&format!(
                        "the answer to {method} request {id} was replaced by an error: it cannot be read as a {method} result"
                    ))
                );
            }
        }
    }
}
