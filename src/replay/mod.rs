//! `assay policy replay` (SPEC §10): what a policy would have decided on recorded sessions.
//!
//! Every `closed` capture under the paths named is read (captures that are not closed are
//! skipped and named: replaying evidence that is not closed would claim what was not observed),
//! and every recorded decision — `tools/call` decisions, decisions on the other governed methods,
//! each entry a listing showed or removed — is judged again by the policy's own judge, the steps
//! the proxy runs (`Policy::judge_recorded_call`, `evaluate_resource`, `tool_listing_refusal`…),
//! with the session's `limits` counted again from zero in capture order. A decision whose new
//! verdict depends on arguments the capture does not hold is *not judgeable*, with the rule that
//! would need them; it is never guessed.
//!
//! Captures are read in parallel, each judged on its worker (`judge.rs`); only the changed and
//! unjudgeable decisions of a capture travel to the caller, so memory is bounded by the largest
//! capture, not by their number. [`Replay`] adds them up.
#![forbid(unsafe_code)]

mod judge;
mod report;
mod types;

use std::path::PathBuf;

pub use report::{NotJudgeable, Replay, ReplayCounts, rule_in_words};
pub use types::{
    CaptureReplay, Change, ChangeKind, Outcome, Replayed, ReplayedCapture, SkippedCapture,
    Unjudgeable,
};

use crate::capture::{ClosedRows, DecisionLines, Visited, for_each_capture_rows};
use crate::error::Result;
use crate::policy::Policy;

/// Judges the decision lines of one closed capture under `policy`.
pub fn replay_capture(policy: &Policy, lines: &DecisionLines) -> ReplayedCapture {
    judge::replay_lines(policy, &lines.lines)
}

/// Replays every capture under `paths` (capture directories or capture roots) under `policy`,
/// handing each to `each` as soon as it is ready (path by path, in name order under a root).
///
/// # Errors
/// As [`crate::capture::for_each_capture`]: a path that does not exist or is not a directory is
/// [`crate::ErrorKind::InvalidArgument`].
pub fn replay(
    policy: &Policy,
    paths: &[PathBuf],
    mut each: impl FnMut(CaptureReplay),
) -> Result<()> {
    let work = |rows: &ClosedRows<'_>| judge::replay_rows(policy, rows);
    for_each_capture_rows(paths, &work, |v: Visited<ReplayedCapture>| {
        each(match v.work {
            Some(mut replay) => {
                replay.set_capture(&v.path);
                CaptureReplay::Replayed {
                    path: v.path,
                    server_id: v.verdict.server_id,
                    replay,
                }
            }
            None => CaptureReplay::Skipped(SkippedCapture::of(v.path, &v.verdict)),
        });
    })
}

#[cfg(test)]
mod tests;
