//! The values of a replay: a decision's outcome, where it is, how it changed, one capture
//! judged again or skipped. A leaf of `replay/`.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::capture::CaptureVerdict;

/// A decision: what it was, or what it is under the replayed policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// `allow`, `deny` or `error` (a listing entry shown is `allow`, removed `deny`).
    pub decision: String,
    /// The reason code; `None` for a message the policy does not govern (forwarded without an
    /// event) and for a listing entry that is shown.
    pub reason_code: Option<String>,
    /// The rule that decided under the replayed policy, if any (never set on a recorded outcome).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_rule: Option<String>,
}

impl Outcome {
    /// Whether the message goes through (`allow`).
    pub fn allows(&self) -> bool {
        self.decision == "allow"
    }
}

/// Where a recorded decision is and what it was.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Replayed {
    /// The capture's path.
    pub capture: String,
    /// The event's `seq` in its decision log.
    pub seq: u64,
    /// The event's time (RFC 3339, UTC).
    pub time: String,
    /// `tools/call`, the governed method, or the list a listing answers.
    pub method: String,
    /// The tool, resource URI, prompt or client feature, as the peer wrote it (render it for
    /// people: [`crate::text::render`]).
    pub name: Option<String>,
    /// Whether the decision is an entry of a listing (shown or removed).
    pub listing: bool,
    /// The recorded outcome.
    pub old: Outcome,
}

/// A decision whose outcome changes under the replayed policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Where it is and what it was.
    #[serde(flatten)]
    pub at: Replayed,
    /// What it is now.
    pub new: Outcome,
    /// `newly_denied`, `newly_allowed` or `reason_changed`.
    pub change: ChangeKind,
}

/// How a decision changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// It went through, and now would not.
    NewlyDenied,
    /// It was refused, and now would go through.
    NewlyAllowed,
    /// Refused before and now, or through before and now, for another reason (another code,
    /// `deny` ↔ `error`).
    ReasonChanged,
}

impl ChangeKind {
    /// How the kind is written: `newly denied`, `newly allowed`, `reason changed`.
    pub fn in_words(self) -> &'static str {
        match self {
            ChangeKind::NewlyDenied => "newly denied",
            ChangeKind::NewlyAllowed => "newly allowed",
            ChangeKind::ReasonChanged => "reason changed",
        }
    }
}

/// A recorded decision that cannot be judged from the capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unjudgeable {
    /// Where it is and what it was.
    #[serde(flatten)]
    pub at: Replayed,
    /// The rule that would need what the capture does not hold, if one rule does.
    pub rule: Option<String>,
    /// Why, in words.
    pub why: String,
}

/// One capture judged again: its changes, its unjudgeable decisions, its counts, and the rules of
/// the policy its decisions used.
#[derive(Debug, Clone, Default)]
pub struct ReplayedCapture {
    /// Decisions whose outcome changes, in capture order.
    pub changes: Vec<Change>,
    /// Decisions that cannot be judged, in capture order.
    pub unjudgeable: Vec<Unjudgeable>,
    /// Decisions judged (changed or not).
    pub judged: u64,
    /// Rule labels of the replayed policy that decided, counted or were checked.
    pub used_rules: BTreeSet<String>,
}

impl ReplayedCapture {
    /// Adds a judged decision whose outcome differs from the recorded one (through before and
    /// now, by a rule or ungoverned, is no change: the judge does not push it).
    pub(super) fn push(&mut self, at: Replayed, new: Outcome) {
        self.judged += 1;
        let change = match (at.old.allows(), new.allows()) {
            (true, false) => ChangeKind::NewlyDenied,
            (false, true) => ChangeKind::NewlyAllowed,
            _ => ChangeKind::ReasonChanged,
        };
        self.changes.push(Change { at, new, change });
    }

    pub(super) fn set_capture(&mut self, path: &str) {
        for c in &mut self.changes {
            c.at.capture = path.to_owned();
        }
        for u in &mut self.unjudgeable {
            u.at.capture = path.to_owned();
        }
    }
}

/// One capture as a replay hands it over: judged again, or skipped.
#[derive(Debug)]
pub enum CaptureReplay {
    /// A closed capture, judged again.
    Replayed {
        /// The capture's path.
        path: String,
        /// Its label (`server_id`).
        server_id: Option<String>,
        /// What changed.
        replay: ReplayedCapture,
    },
    /// A capture that is not closed.
    Skipped(SkippedCapture),
}

/// A capture that was not replayed because it is not closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedCapture {
    /// The capture's path.
    pub capture: String,
    /// `incomplete`, `unknown` or `no_session`.
    pub closure: &'static str,
    /// The reader's reason codes.
    pub reasons: Vec<String>,
}

impl SkippedCapture {
    /// The capture at `path` whose `verdict` is not closed, named with its status and reasons.
    pub fn of(path: String, verdict: &CaptureVerdict) -> Self {
        SkippedCapture {
            capture: path,
            closure: verdict.status.as_str(),
            reasons: verdict
                .closure
                .reasons
                .iter()
                .map(|r| r.code.as_str().to_owned())
                .collect(),
        }
    }
}
