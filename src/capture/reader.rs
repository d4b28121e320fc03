//! The capture reader's driver (SPEC §7): reads every file, runs the checks of the sibling
//! modules and turns their reasons into a [`Closure`].
//!
//! Order of work: read each required file through the bounded opener; run the strict pre-scan;
//! only then materialize JSON. Companions (≤ 64 KiB) become `serde_json::Value`s and are checked
//! field by field so every problem is reported. The log (≤ 8 MiB, ≤ 10,000 lines) is read in
//! 64 KiB chunks through the same bounded opener: each chunk is hashed once while it is in cache
//! and its complete lines are checked, each line in one pass by
//! `fast_line_parser` when it has the wrapper's shape, else by the strict pre-scan and a `serde` parse
//! into a small borrowed struct. Line reasons are kept only when the whole log was read within
//! its bound and holds at most 10,000 lines, so the reasons are those of reading the whole file
//! first. The decisions taken where SPEC is silent are in `docs/capture-reader.md`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::agreement::{check_agreement, loss_reason};
use super::bounds::MAX_COMPANION_BYTES;
use super::companions::{
    check_accounting, check_context, check_protocol, check_stop, expectations,
};
use super::decision_line::{Expect, OwnedExpect};
use super::facts::{Companions, Facts, facts_of};
use super::fields::{Reasons, digest_of, is_session_id, parse_object, read_file};
use super::judgement::{
    CLOSURE_NON_CLAIMS, CLOSURE_SCHEMA, Closure, ClosureKind, ClosureReasonCode, FileDigest,
};
use super::log::check_log_file;
use super::no_session;
use crate::capture_files::{CONTEXT, PROTOCOL, STOP};
use crate::outcome::{DecisionLogState, StopData};

/// The whole reader: files, checks, verdict.
pub(super) fn judge(dir: &Path) -> Closure {
    judge_keeping(dir, false).0
}

/// What the reader keeps of a capture besides its verdict, for `capture export`: the facts of
/// the companions it judged and the log's bytes it hashed and checked (whole only when the
/// verdict's `files` names the log).
pub(super) struct Kept {
    pub(super) facts: Facts,
    pub(super) log: Option<Vec<u8>>,
}

/// [`judge`], keeping (with `keep`) what it read for a reading of the same bytes afterwards.
/// The verdict of SPEC §7 from the stop record's `decision_log` and the reasons found so far
/// (an incomplete log's loss is added to them; a log not retained is a reason itself).
fn closure_of(stop: Option<&crate::outcome::StopData>, r: &mut Reasons) -> ClosureKind {
    match stop.map(|s| s.decision_log) {
        None => ClosureKind::Unknown,
        Some(DecisionLogState::Complete) => {
            if r.any_hard() {
                ClosureKind::Unknown
            } else {
                ClosureKind::Closed
            }
        }
        Some(DecisionLogState::Incomplete) => {
            if let Some(s) = stop {
                loss_reason(s, r);
            }
            if r.any_hard() {
                ClosureKind::Unknown
            } else {
                ClosureKind::Incomplete
            }
        }
        Some(state) => {
            let name = match state {
                DecisionLogState::Temporary => "temporary",
                DecisionLogState::Absent => "absent",
                _ => "unknown",
            };
            r.push(
                ClosureReasonCode::DecisionLogNotRetained,
                format!("{STOP}: decision_log is {name}"),
            );
            ClosureKind::Unknown
        }
    }
}

pub(super) fn judge_keeping(dir: &Path, keep: bool) -> (Closure, Option<Kept>) {
    judge_with(dir, keep, |exp, stop, r, files, log| {
        check_log_file(dir, exp, stop, r, files, log);
    })
}

/// What the log's lines are checked against, as the capture's protocol record and context say
/// before the session stops (`follow`): [`judge_with`] takes them from the same files, through
/// the same checks, and from the stop record when there is one.
pub(super) fn expectations_before_stop(dir: &Path) -> OwnedExpect {
    let mut r = Reasons::default();
    let companion = |name: &str, r: &mut Reasons| {
        let bytes = read_file(dir, name, MAX_COMPANION_BYTES, r)?;
        parse_object(name, &bytes, r)
    };
    let protocol = companion(PROTOCOL, &mut r);
    let context = companion(CONTEXT, &mut r);
    let p = protocol.as_ref().and_then(|m| check_protocol(m, &mut r));
    let c = context.as_ref().and_then(|m| check_context(m, &mut r));
    OwnedExpect::of(&expectations(p.as_ref(), c.as_ref(), None))
}

/// [`judge_keeping`] with the log's pass done by `log_check`: given the expectations and the
/// stop record's data, it adds the log's reasons, its digest to the `files` map and, when kept,
/// its bytes.
pub(super) fn judge_with(
    dir: &Path,
    keep: bool,
    log_check: impl FnOnce(
        &Expect<'_>,
        Option<&StopData>,
        &mut Reasons,
        &mut BTreeMap<String, FileDigest>,
        &mut Option<Vec<u8>>,
    ),
) -> (Closure, Option<Kept>) {
    let mut r = Reasons::default();
    let mut files = BTreeMap::new();
    // SPEC §10: a discovery-only run leaves no-session.json instead of a stop record.
    let marker = no_session::read(dir, &mut r, &mut files);

    let mut companion = |name: &str, r: &mut Reasons| {
        let bytes = read_file(dir, name, MAX_COMPANION_BYTES, r)?;
        files.insert(name.to_string(), digest_of(&bytes));
        parse_object(name, &bytes, r)
    };
    let protocol = companion(PROTOCOL, &mut r);
    let context = companion(CONTEXT, &mut r);
    let stop = match &marker {
        Some(m) if !m.stop_entry => None,
        _ => companion(STOP, &mut r),
    };

    let p = protocol.as_ref().and_then(|m| check_protocol(m, &mut r));
    let c = context.as_ref().and_then(|m| check_context(m, &mut r));
    let s = stop.as_ref().and_then(|m| check_stop(m, &mut r));
    if let Some(s) = &s {
        check_accounting(&s.data, &mut r);
    }
    check_agreement(p.as_ref(), c.as_ref(), s.as_ref(), &mut r);

    let exp = expectations(p.as_ref(), c.as_ref(), s.as_ref());
    let facts = keep.then(|| {
        let companions = Companions {
            protocol: protocol.as_ref(),
            context: context.as_ref(),
            stop: stop.as_ref(),
        };
        facts_of(companions, p.as_ref(), c.as_ref(), s.as_ref())
    });
    let mut log = keep.then(Vec::new);
    let stop_data = s.as_ref().map(|s| &s.data);
    log_check(&exp, stop_data, &mut r, &mut files, &mut log);
    if let Some(m) = &marker {
        no_session::check(m, dir, p.as_ref().map(|p| p.session_id), &files, &mut r);
    }

    let closure = closure_of(s.as_ref().map(|s| &s.data), &mut r);

    // Defensive: a verdict other than closed must say why (SPEC §7: empty only for closed).
    if closure == ClosureKind::Unknown && r.0.is_empty() {
        r.push(
            ClosureReasonCode::SchemaMismatch,
            format!("{STOP}: no usable stop record"),
        );
    }

    let session_id = exp
        .session_id
        .filter(|sid| is_session_id(sid))
        .map(str::to_string);
    let stop_fields = s
        .as_ref()
        .and_then(|s| match serde_json::to_value(&s.data) {
            Ok(Value::Object(mut m)) => {
                m.remove("session_id");
                m.remove("non_claims");
                Some(m)
            }
            _ => None,
        });

    let verdict = Closure {
        schema: CLOSURE_SCHEMA,
        closure,
        reasons: r.0,
        session_id,
        stop: stop_fields,
        files,
        non_claims: CLOSURE_NON_CLAIMS.iter().map(|s| s.to_string()).collect(),
    };
    (verdict, facts.map(|facts| Kept { facts, log }))
}
