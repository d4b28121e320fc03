//! The verdict's JSON shape, what it never carries over from the files, and its bounds on reasons.

use serde_json::{Value, json};

use super::*;

#[test]
fn verdict_json_shape() {
    let dir = Builder::new(3).build();
    let v = read_capture(dir.path());
    assert!(v.is_closed(), "{:?}", v.reasons);
    let j: Value = serde_json::from_str(&v.to_json()).unwrap();
    assert_eq!(j["schema"], "assay.capture.closure.v1");
    assert_eq!(j["closure"], "closed");
    assert_eq!(j["reasons"], json!([]));
    assert_eq!(j["session_id"], SID);
    assert_eq!(j["termination"], "exited");
    assert_eq!(j["exit_code"], 0);
    assert_eq!(j["decision_log"], "complete");
    assert_eq!(j["decision_events_written"], 3);
    assert_eq!(j["session_context_id"], format!("evt_context_{SID}"));
    assert!(
        j["non_claims"]
            .as_array()
            .unwrap()
            .contains(&json!("not_execution_proof"))
    );
    let files = j["files"].as_object().unwrap();
    assert_eq!(files.len(), 4);
    for name in [PROTOCOL, CONTEXT, STOP, DECISIONS] {
        let bytes = std::fs::read(dir.path().join(name)).unwrap();
        assert_eq!(files[name]["bytes"], bytes.len());
        assert_eq!(files[name]["sha256"], crate::sha256::digest_hex(&bytes));
    }
}

#[test]
fn unknown_without_stop_has_no_stop_fields() {
    let dir = Builder::new(2).build();
    std::fs::write(dir.path().join(STOP), b"{\"specversion\":\"1.0\"").unwrap();
    let v = read_capture(dir.path());
    assert_eq!(v.closure, Unknown);
    assert!(v.stop.is_none());
    // The session id still comes from the context.
    assert_eq!(v.session_id.as_deref(), Some(SID));
    let j: Value = serde_json::from_str(&v.to_json()).unwrap();
    assert!(j.get("termination").is_none());
}

#[test]
fn hostile_stop_data_keys_do_not_leak_into_the_verdict() {
    let mut b = Builder::new(1);
    b.edit_stop
        .push(Box::new(|v| set(v, "data/closure", json!("closed"))));
    b.decision_log = "temporary";
    let dir = b.build();
    let v = read_capture(dir.path());
    let j: Value = serde_json::from_str(&v.to_json()).unwrap();
    assert_eq!(j["closure"], "unknown");
}

#[test]
fn empty_directory_and_missing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let v = read_capture(dir.path());
    assert_eq!(v.closure, Unknown);
    assert_eq!(
        v.reasons
            .iter()
            .filter(|r| r.code == R::MissingFile)
            .count(),
        4
    );
    let v = read_capture(&dir.path().join("nope"));
    assert_eq!(v.closure, Unknown);
}

#[test]
fn exactly_max_decisions_is_closed() {
    let dir = Builder::new(MAX_DECISIONS).build();
    let v = read_capture(dir.path());
    assert!(v.is_closed(), "{:?}", v.reasons);
}

#[test]
fn line_reasons_are_capped() {
    let mut b = Builder::new(100);
    b.edit_line.push(Box::new(|_, v| {
        set(v, "data/session_id", json!("d".repeat(32)))
    }));
    let dir = b.build();
    let v = read_capture(dir.path());
    assert_eq!(v.closure, Unknown);
    assert!(v.reasons.len() < 30, "{}", v.reasons.len());
    assert!(
        v.reasons
            .iter()
            .any(|r| r.detail.contains("more line problems"))
    );
}
