//! Table-driven tests of the capture reader and packager: the verdict table (its cases, by topic,
//! in `cases_*.rs`), the verdict's JSON shape, packaging, single-byte alterations and the bounds.

mod byte_flips;
mod cases_closed;
mod cases_disagreement;
mod cases_malformed;
mod events;
mod follow;
mod package;
mod reader_bounds;
mod verdict_shape;

use std::path::Path;

use serde_json::{Value, json};

use super::testutil::{Builder, SID, nested, remove, replace_in, set};
use super::*;

type Setup = fn(&mut Builder);
type After = fn(&Path);

struct Case {
    name: &'static str,
    setup: Setup,
    after: After,
    expect: ClosureKind,
    /// Codes that must all appear in `reasons`.
    codes: &'static [ClosureReasonCode],
}

fn none(_: &mut Builder) {}
fn nothing(_: &Path) {}

use ClosureKind::{Closed, Incomplete, Unknown};
use ClosureReasonCode as R;

fn cases() -> Vec<Case> {
    [
        cases_closed::closed_and_incomplete(),
        cases_closed::unreadable_files(),
        cases_malformed::json_bounds(),
        cases_malformed::malformed(),
        cases_disagreement::disagreement(),
        cases_disagreement::accounting_and_retention(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn rm(d: &Path, name: &str) {
    std::fs::remove_file(d.join(name)).unwrap();
}

fn pad_to(d: &Path, name: &str, len: u64) {
    let p = d.join(name);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.resize(len as usize, b' ');
    std::fs::write(p, bytes).unwrap();
}

fn truncate(d: &Path, name: &str, len: usize) {
    let p = d.join(name);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.truncate(len);
    std::fs::write(p, bytes).unwrap();
}

fn append(d: &Path, name: &str, extra: &[u8]) {
    let p = d.join(name);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.extend_from_slice(extra);
    std::fs::write(p, bytes).unwrap();
}

/// Moves `name` aside and puts a symlink to the (valid) moved file in its place.
fn symlink_in_place(d: &Path, name: &str) {
    let aside = d.join(format!("{name}.real"));
    std::fs::rename(d.join(name), &aside).unwrap();
    std::os::unix::fs::symlink(&aside, d.join(name)).unwrap();
}

/// Decisions in a case's log unless its setup says otherwise.
const CASE_DECISIONS: usize = 5;

/// A log this long (about 1.5 MiB) is hashed on the reader's hashing thread
/// (`log_digest::THREAD_FROM_BYTES`), a short one on the reading thread.
const LARGE_CASE_DECISIONS: usize = 2500;

#[test]
fn verdict_table() {
    assert_eq!(verdict_failures(CASE_DECISIONS), Vec::<String>::new());
}

/// The same table with every log hashed on the reader's hashing thread: the same verdicts.
#[test]
fn verdict_table_with_large_logs() {
    assert!(
        Builder::new(LARGE_CASE_DECISIONS).log_bytes().0.len() as u64
            >= super::log_digest::THREAD_FROM_BYTES
    );
    assert_eq!(verdict_failures(LARGE_CASE_DECISIONS), Vec::<String>::new());
}

/// The cases whose verdict differs from the table's, each as a line saying how.
fn verdict_failures(decisions: usize) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases() {
        let mut b = Builder::new(decisions);
        (case.setup)(&mut b);
        let dir = b.build();
        (case.after)(dir.path());
        let v = read_capture(dir.path());
        let codes: Vec<ClosureReasonCode> = v.reasons.iter().map(|r| r.code).collect();
        let missing: Vec<_> = case.codes.iter().filter(|c| !codes.contains(c)).collect();
        let ok = v.closure == case.expect
            && missing.is_empty()
            && (v.closure == Closed) == v.reasons.is_empty()
            && (case.expect != Incomplete || codes.iter().all(|c| case.codes.contains(c)));
        if !ok {
            failures.push(format!(
                "{}: expected {:?} with {:?}, got {:?} with {:#?}",
                case.name, case.expect, case.codes, v.closure, v.reasons
            ));
        }
        // The verdict JSON is itself strict JSON (no duplicate keys from the flattened stop).
        assert_eq!(crate::strict_json::scan(v.to_json().as_bytes(), 32), Ok(()));
    }
    failures
}

#[test]
fn every_reason_code_is_exercised() {
    let all = [
        R::MissingFile,
        R::NotRegularFile,
        R::TooLarge,
        R::TooManyDecisions,
        R::TooDeep,
        R::DuplicateKey,
        R::NonfiniteNumber,
        R::InvalidJson,
        R::SchemaMismatch,
        R::ProtocolMismatch,
        R::ContextMismatch,
        R::IdMismatch,
        R::CountMismatch,
        R::DigestMismatch,
        R::PartialLine,
        R::InconsistentAccounting,
        R::DecisionLogNotRetained,
        R::DecisionLoss,
        R::ProxyError,
    ];
    let table = cases();
    for code in all {
        assert!(
            table
                .iter()
                .any(|c| c.expect == Unknown && c.codes.contains(&code)),
            "no unknown case for {code:?}"
        );
        // The serde name is the SPEC string.
        assert_eq!(serde_json::to_value(code).unwrap(), json!(code.as_str()));
    }
}
