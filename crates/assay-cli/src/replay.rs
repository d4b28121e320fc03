//! `assay policy replay POLICY CAPTURE_OR_ROOT…` (SPEC §10): every recorded decision of every
//! closed capture judged again under POLICY by the library ([`assay::replay`]); this module
//! prints what changed, for people (a table) or programs (JSON lines), and the totals.

use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use assay::config::load_policy;
use assay::replay::{CaptureReplay, Change, Outcome, Replay, replay, rule_in_words};
use assay::text::render;

use super::args::ReplayFormat;
use super::exit;
use super::messages::Failure;

/// Replays `captures` under the policy `file`; the status is the library's rule: 0 nothing
/// changes, 1 something does, 3 no capture could be replayed, 2 usage.
pub(crate) fn run(
    file: &Path,
    captures: &[PathBuf],
    format: ReplayFormat,
) -> Result<ExitCode, Failure> {
    let policy = load_policy(file).map_err(Failure::library)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut totals = Replay::default();
    let mut write_error = None;
    let mut header = false;
    replay(&policy, captures, |c| {
        totals.add(&c);
        let CaptureReplay::Replayed { replay, .. } = &c else {
            return;
        };
        for change in &replay.changes {
            let line = match format {
                ReplayFormat::Json => {
                    // Straight into the buffered stdout: no string per line.
                    let written = serde_json::to_writer(&mut out, change)
                        .map_err(std::io::Error::from)
                        .and_then(|()| out.write_all(b"\n"));
                    if let Err(e) = written {
                        write_error.get_or_insert(e);
                    }
                    continue;
                }
                ReplayFormat::Text => {
                    let mut row = String::new();
                    if !header {
                        header = true;
                        row.push_str(
                            "changed decisions (capture, time, method, name: old → new):\n",
                        );
                    }
                    row.push_str(&text_row(change));
                    row
                }
            };
            if let Err(e) = writeln!(out, "{line}") {
                write_error.get_or_insert(e);
            }
        }
    })
    .map_err(Failure::library)?;
    totals.finish(&policy);
    let tail = match format {
        ReplayFormat::Json => totals.summary_line(),
        ReplayFormat::Text => text_totals(&totals),
    };
    let status = totals.exit_status();
    if let Some(e) = write_error {
        return Err(Failure::output(exit::FAILURE)(e));
    }
    writeln!(out, "{tail}")
        .and_then(|()| out.flush())
        .map_err(Failure::output(exit::FAILURE))?;
    Ok(exit::code(status))
}

/// `decision CODE`, or `decision (not governed)` / `decision` for an outcome without a code.
fn outcome(o: &Outcome, listing: bool) -> String {
    match (&o.reason_code, listing) {
        (Some(code), _) => format!("{} {code}", o.decision),
        (None, true) => "shown".to_owned(),
        (None, false) => format!("{} (not governed)", o.decision),
    }
}

/// One changed decision for people: every text a peer or file wrote is rendered.
fn text_row(c: &Change) -> String {
    let at = &c.at;
    let old = if at.listing && at.old.reason_code.is_some() {
        format!(
            "removed {}",
            at.old.reason_code.as_deref().unwrap_or_default()
        )
    } else {
        outcome(&at.old, at.listing)
    };
    let new = if at.listing && c.new.reason_code.is_some() {
        format!(
            "removed {}",
            c.new.reason_code.as_deref().unwrap_or_default()
        )
    } else {
        outcome(&c.new, at.listing)
    };
    let rule = c
        .new
        .matched_rule
        .as_deref()
        .map(|r| format!(" ({})", render(r)))
        .unwrap_or_default();
    format!(
        "  {}  {}  {}  {}: {old} → {new}{rule}  [{}]",
        render(&at.capture),
        render(&at.time),
        render(&at.method),
        at.name.as_deref().map_or_else(|| "-".to_owned(), render),
        c.change.in_words(),
    )
}

/// The totals for people: counts, what could not be judged and why, the captures skipped, the
/// rules never used.
fn text_totals(t: &Replay) -> String {
    let c = &t.counts;
    let mut s = String::new();
    let _ = write!(
        s,
        "judged {}, unchanged {}, newly denied {}, newly allowed {}, reason changed {}, not judgeable {}; captures replayed {}, skipped {}",
        c.judged,
        c.unchanged,
        c.newly_denied,
        c.newly_allowed,
        c.reason_changed,
        c.not_judgeable,
        c.captures_replayed,
        c.captures_skipped
    );
    for n in &t.not_judgeable_by_rule {
        let rule = n
            .rule
            .as_deref()
            .map_or_else(String::new, |r| format!(" by {}", render(r)));
        let _ = write!(
            s,
            "\nnot judgeable: {} decision(s){rule}: {}",
            n.decisions, n.why
        );
    }
    for k in &t.skipped {
        let _ = write!(
            s,
            "\nskipped: {} ({}{}{})",
            render(&k.capture),
            k.closure,
            if k.reasons.is_empty() { "" } else { ": " },
            k.reasons.join(", ")
        );
    }
    for r in &t.never_used {
        let _ = write!(s, "\nnever used: {}", render(&rule_in_words(r)));
    }
    if c.captures_replayed == 0 {
        let _ = write!(s, "\nno closed capture was found to replay");
    }
    s
}
