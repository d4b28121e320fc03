//! The reader's side of `no-session.json` (SPEC §7, §10): a discovery-only run inside a capture
//! directory writes it instead of a stop record. A well-formed one that agrees with
//! `protocol.json` makes the verdict `unknown` with reason `no_session` (a missing stop is never
//! evidence); one beside a stop record or a non-empty decision log contradicts the capture
//! (`inconsistent_accounting`).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::bounds::MAX_COMPANION_BYTES;
use super::fields::{Reasons, digest_of, is_session_id, parse_object, read_file};
use super::judgement::{ClosureReasonCode, FileDigest};
use crate::capture_files::{DECISIONS, NO_SESSION, PROTOCOL, STOP};

/// The `schema` of `no-session.json`.
const SCHEMA: &str = "assay.capture.no_session.v1";

/// A `no-session.json` entry found in the capture directory.
pub(super) struct Marker {
    /// Its `session_id` when the file passed its checks (bounded read, strict JSON, schema).
    session_id: Option<String>,
    /// Whether anything is named `session-stop.json` (a stop record or what is left of one).
    pub(super) stop_entry: bool,
}

/// True when `dir/name` names anything at all (a file, a directory, a dangling symlink).
fn entry_exists(dir: &Path, name: &str) -> bool {
    std::fs::symlink_metadata(dir.join(name)).is_ok()
}

/// Reads `no-session.json` when there is an entry of that name (`None` otherwise), through the
/// same bounded, no-follow opener and strict JSON scan as every companion.
pub(super) fn read(
    dir: &Path,
    r: &mut Reasons,
    files: &mut BTreeMap<String, FileDigest>,
) -> Option<Marker> {
    if !entry_exists(dir, NO_SESSION) {
        return None;
    }
    let stop_entry = entry_exists(dir, STOP);
    let Some(bytes) = read_file(dir, NO_SESSION, MAX_COMPANION_BYTES, r) else {
        return Some(Marker {
            session_id: None,
            stop_entry,
        });
    };
    files.insert(NO_SESSION.to_string(), digest_of(&bytes));
    let session_id = parse_object(NO_SESSION, &bytes, r).and_then(|m| {
        let schema_ok = m.get("schema").and_then(Value::as_str) == Some(SCHEMA);
        if !schema_ok {
            r.push(
                ClosureReasonCode::SchemaMismatch,
                format!("{NO_SESSION}: `schema` is not \"{SCHEMA}\""),
            );
        }
        let sid = match m.get("session_id").and_then(Value::as_str) {
            Some(s) if is_session_id(s) => Some(s.to_string()),
            _ => {
                r.push(
                    ClosureReasonCode::SchemaMismatch,
                    format!("{NO_SESSION}: `session_id` is not 32 lowercase hex characters"),
                );
                None
            }
        };
        sid.filter(|_| schema_ok)
    });
    Some(Marker {
        session_id,
        stop_entry,
    })
}

/// The agreement rules for a marker: `no_session` when it is well-formed, `protocol_mismatch`
/// when its session differs from protocol.json's, `inconsistent_accounting` beside a stop
/// record or a non-empty decision log.
pub(super) fn check(
    m: &Marker,
    dir: &Path,
    protocol_session_id: Option<&str>,
    files: &BTreeMap<String, FileDigest>,
    r: &mut Reasons,
) {
    if let Some(sid) = &m.session_id {
        r.push(
            ClosureReasonCode::NoSession,
            format!("{NO_SESSION}: a discovery-only run; no session existed, so no stop record"),
        );
        if let Some(p) = protocol_session_id {
            if p != sid {
                r.push(
                    ClosureReasonCode::ProtocolMismatch,
                    format!("session_id: {PROTOCOL} has {p:?}, {NO_SESSION} has {sid:?}"),
                );
            }
        }
    }
    if m.stop_entry {
        r.push(
            ClosureReasonCode::InconsistentAccounting,
            format!("{NO_SESSION} says no session existed, but {STOP} exists"),
        );
    }
    // The log's size as read, or (when it was not read within its bound) as the directory says.
    let log_bytes = match files.get(DECISIONS) {
        Some(d) => d.bytes,
        None => std::fs::symlink_metadata(dir.join(DECISIONS)).map_or(0, |md| md.len()),
    };
    if log_bytes > 0 {
        r.push(
            ClosureReasonCode::InconsistentAccounting,
            format!(
                "{NO_SESSION} says no session existed, but {DECISIONS} holds {log_bytes} bytes"
            ),
        );
    }
}
