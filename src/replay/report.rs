//! The totals of a replay over many captures: counts, the captures skipped, the decisions that
//! could not be judged (by rule and why), and the policy's rules no decision used.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::types::{CaptureReplay, ChangeKind, SkippedCapture};
use crate::exit_status;
use crate::policy::Policy;

/// Decisions that could not be judged for the same rule and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotJudgeable {
    /// The rule that needs what the capture does not hold, if one rule does.
    pub rule: Option<String>,
    /// Why, in words.
    pub why: String,
    /// How many decisions.
    pub decisions: u64,
}

/// The counts of a replay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReplayCounts {
    /// Decisions judged again (changed or not).
    pub judged: u64,
    /// Judged and unchanged.
    pub unchanged: u64,
    /// Went through, would now be refused.
    pub newly_denied: u64,
    /// Were refused, would now go through.
    pub newly_allowed: u64,
    /// Refused (or through) before and now, for another reason code.
    pub reason_changed: u64,
    /// Decisions that could not be judged from the capture.
    pub not_judgeable: u64,
    /// Closed captures judged again.
    pub captures_replayed: u64,
    /// Captures that are not closed, left out.
    pub captures_skipped: u64,
}

/// The totals of a replay, added up capture by capture ([`Replay::add`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Replay {
    /// The counts.
    #[serde(flatten)]
    pub counts: ReplayCounts,
    /// The captures left out, in the order met.
    pub skipped: Vec<SkippedCapture>,
    /// The decisions that could not be judged, by rule and reason.
    pub not_judgeable_by_rule: Vec<NotJudgeable>,
    /// The policy's rules no recorded decision used (labels as `matched_rule` writes them:
    /// `deny:shell*`, `resources.allow:…`, `limits.per_tool.write_file`, `pins`).
    pub never_used: Vec<String>,
    #[serde(skip)]
    used: BTreeSet<String>,
    #[serde(skip)]
    unjudged: BTreeMap<(Option<String>, String), u64>,
}

impl Replay {
    /// Adds one capture's replay.
    pub fn add(&mut self, capture: &CaptureReplay) {
        let c = &mut self.counts;
        match capture {
            CaptureReplay::Skipped(s) => {
                c.captures_skipped += 1;
                self.skipped.push(s.clone());
            }
            CaptureReplay::Replayed { replay, .. } => {
                c.captures_replayed += 1;
                c.judged += replay.judged;
                c.unchanged += replay.judged - replay.changes.len() as u64;
                for ch in &replay.changes {
                    match ch.change {
                        ChangeKind::NewlyDenied => c.newly_denied += 1,
                        ChangeKind::NewlyAllowed => c.newly_allowed += 1,
                        ChangeKind::ReasonChanged => c.reason_changed += 1,
                    }
                }
                c.not_judgeable += replay.unjudgeable.len() as u64;
                for u in &replay.unjudgeable {
                    *self
                        .unjudged
                        .entry((u.rule.clone(), u.why.clone()))
                        .or_insert(0) += 1;
                }
                self.used.extend(replay.used_rules.iter().cloned());
            }
        }
    }

    /// Finishes the totals: the unjudgeable groups and the rules of `policy` never used.
    pub fn finish(&mut self, policy: &Policy) {
        self.not_judgeable_by_rule = std::mem::take(&mut self.unjudged)
            .into_iter()
            .map(|((rule, why), decisions)| NotJudgeable {
                rule,
                why,
                decisions,
            })
            .collect();
        self.never_used = policy
            .rule_labels()
            .into_iter()
            .filter(|r| !self.used.contains(r))
            .collect();
    }

    /// Whether any decision changes.
    pub fn changed(&self) -> bool {
        let c = &self.counts;
        c.newly_denied + c.newly_allowed + c.reason_changed > 0
    }

    /// The exit status of `assay policy replay` (SPEC §10): `3` when no capture could be
    /// replayed, `1` when a decision changes, `0` otherwise.
    pub fn exit_status(&self) -> i32 {
        if self.counts.captures_replayed == 0 {
            exit_status::FAILURE
        } else if self.changed() {
            exit_status::INCOMPLETE
        } else {
            exit_status::OK
        }
    }

    /// The summary line of `--format json`, compact, without a newline:
    /// `{"summary":{…counts…,"skipped":[…],"not_judgeable_by_rule":[…],"never_used":[…]}}`.
    pub fn summary_line(&self) -> String {
        #[derive(Serialize)]
        struct Line<'a> {
            summary: &'a Replay,
        }
        serde_json::to_string(&Line { summary: self }).unwrap_or_default()
    }
}

/// A rule label as people read it: `deny:shell*` → `deny shell*`.
pub fn rule_in_words(label: &str) -> String {
    label.replacen(':', " ", 1)
}
