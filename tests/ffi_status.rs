//! `assay_wrap_session` through the C ABI entry point (called from Rust): the status for a stop
//! write that fails mid-session is `ASSAY_ERR_STOP_WRITE`, and the outcome JSON still comes back
//! with the observed child status (SPEC §8).

use std::ffi::{CStr, CString};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::Duration;

use assay::ffi::{AssayStatus, assay_last_error, assay_string_free, assay_wrap_session};

use crate::util::*;

#[test]
fn stop_write_failure_returns_status_4_with_the_outcome() {
    let dir = tempdir();
    let stop_dir = dir.path().join("stopdir");
    std::fs::create_dir(&stop_dir).unwrap();
    let log = dir.path().join("decisions.ndjson");
    let (client_in_r, mut client_in_w) = std::io::pipe().unwrap();
    let (client_out_r, client_out_w) = std::io::pipe().unwrap();
    let config = serde_json::json!({
        "command": ["python3", fault_server(), "exit7"],
        "policy": demo_policy(),
        "event_source": "assay://t/ffi",
        "decision_log": log,
        "decision_log_new": true,
        "session_stop_out": stop_dir.join("stop.json"),
        "stdin": client_in_r.as_raw_fd(),
        "stdout": client_out_w.as_raw_fd(),
        "stderr": dir.path().join("stderr.log"),
    });
    let config = CString::new(config.to_string()).unwrap();
    // Drain the client output so the wrapper never blocks on it.
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut r = client_out_r;
        std::io::Read::read_to_end(&mut r, &mut out).unwrap();
        out
    });
    let session = std::thread::spawn(move || {
        let mut out: *mut std::os::raw::c_char = std::ptr::null_mut();
        // SAFETY (test): a valid NUL-terminated config and a valid out pointer.
        let status = unsafe { assay_wrap_session(config.as_ptr(), &mut out) };
        let last_ptr = assay_last_error();
        let last = if last_ptr.is_null() {
            String::from("(no last error)")
        } else {
            // SAFETY (test): a NUL-terminated string owned by the library, read before any
            // other `assay_*` call on this thread (`assay_string_free` included).
            unsafe { CStr::from_ptr(last_ptr) }
                .to_string_lossy()
                .into_owned()
        };
        let outcome = (!out.is_null()).then(|| {
            // SAFETY (test): the library returned a NUL-terminated string it allocated.
            let s = unsafe { CStr::from_ptr(out) }.to_str().unwrap().to_owned();
            unsafe { assay_string_free(out) };
            s
        });
        // The descriptors were lent: the library worked on duplicates; ours close here.
        drop(client_in_r);
        drop(client_out_w);
        (status, outcome, last)
    });
    client_in_w
        .write_all(&script(&[INIT, &call(2, "echo", r#"{"text":"a"}"#)]))
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    std::fs::remove_dir(&stop_dir).unwrap();
    drop(client_in_w);
    let (status, outcome, last) = session.join().unwrap();
    let _ = reader.join().unwrap();
    assert_eq!(
        status,
        AssayStatus::ASSAY_ERR_STOP_WRITE,
        "{last} {outcome:?}"
    );
    assert!(last.contains("child exited with status 7"), "{last}");
    let outcome = outcome.expect("outcome JSON is returned with ASSAY_ERR_STOP_WRITE");
    assay::strict_json::scan(outcome.as_bytes(), 16).expect("no duplicate keys");
    let v: serde_json::Value = serde_json::from_str(&outcome).unwrap();
    assert_eq!(v["exit_code"], 3);
    assert_eq!(v["child_exit_code"], 7);
    assert_eq!(v["termination"], "exited");
    assert_eq!(v["stop_written"], false);
    assert_eq!(v["decision_log"], "complete");
    // Earlier evidence is intact.
    assert_eq!(decision_lines(&log).len(), 1);
}
