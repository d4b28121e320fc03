//! Fuzzes the capture reader: the input is split on `\n====\n` into up to five parts written as
//! `protocol.json`, `session-context.json`, `session-stop.json`, `decisions.ndjson` and
//! `no-session.json` (a missing part leaves its file absent). `read_capture` must never panic,
//! and its verdict must be self-consistent: `closed` exactly when there are no reasons,
//! `incomplete` only with `decision_loss` reasons, never `closed` beside a `no-session.json`,
//! and the verdict JSON itself strict JSON.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use assay::capture::ClosureReasonCode;
use assay::{ClosureKind, read_capture};
use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 5] = [
    "protocol.json",
    "session-context.json",
    "session-stop.json",
    "decisions.ndjson",
    "no-session.json",
];
/// The first four are required; the marker of a discovery-only run is optional.
const REQUIRED: usize = 4;
const SEP: &[u8] = b"\n====\n";

/// One directory per process, rewritten for every input (creating a directory per input would
/// dominate the run time).
fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d =
            std::env::temp_dir().join(format!("assay-fuzz-read-capture-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("fuzz temp dir");
        d
    })
}

fn split(data: &[u8]) -> Vec<&[u8]> {
    let mut parts = Vec::new();
    let mut rest = data;
    while parts.len() < NAMES.len() - 1 {
        match rest.windows(SEP.len()).position(|w| w == SEP) {
            Some(i) => {
                parts.push(&rest[..i]);
                rest = &rest[i + SEP.len()..];
            }
            None => break,
        }
    }
    parts.push(rest);
    parts
}

fuzz_target!(|data: &[u8]| {
    let d = dir();
    let parts = split(data);
    for (i, name) in NAMES.iter().enumerate() {
        let path = d.join(name);
        match parts.get(i) {
            Some(bytes) => std::fs::write(&path, bytes).expect("write capture file"),
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    let v = read_capture(d);
    assert_eq!(v.closure == ClosureKind::Closed, v.reasons.is_empty());
    if v.closure == ClosureKind::Incomplete {
        assert!(
            v.reasons
                .iter()
                .any(|r| r.code == ClosureReasonCode::DecisionLoss)
        );
    }
    if parts.len() < REQUIRED {
        assert_eq!(
            v.closure,
            ClosureKind::Unknown,
            "a missing file can never be closed"
        );
    }
    if parts.len() > REQUIRED {
        assert_eq!(
            v.closure,
            ClosureKind::Unknown,
            "no-session.json and a stop: never closed"
        );
    }
    assert_eq!(assay::strict_json::scan(v.to_json().as_bytes(), 64), Ok(()));
});
