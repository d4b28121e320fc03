//! The coverage report and the temporary decision log (SPEC §4.4, §4.3).

use std::time::Duration;

use serde_json::{Value, json};

use crate::util::*;

fn coverage_session() -> Vec<u8> {
    script(&[
        INIT,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        &call(3, "echo", r#"{"text":"a"}"#),
        &call(4, "echo", r#"{"text":"b"}"#),
        &call(5, "exec", "{}"),
        &call(6, "read_file", r#"{"path":"/etc/passwd"}"#),
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}"#,
    ])
}

fn assert_report(cov: &Value) {
    assert_eq!(cov["schema"], "assay.coverage.v1");
    assert_eq!(
        cov["declared_tools"],
        json!(["exec", "read_file", "write_file"])
    );
    assert_eq!(
        cov["observed_tools"],
        json!(["echo", "exec", "read_file", "write_file"])
    );
    assert_eq!(
        cov["calls"]["echo"],
        json!({"allow": 2, "deny": 0, "error": 0})
    );
    assert_eq!(
        cov["calls"]["exec"],
        json!({"allow": 0, "deny": 1, "error": 0})
    );
    assert_eq!(
        cov["calls"]["read_file"],
        json!({"allow": 0, "deny": 1, "error": 0})
    );
    assert_eq!(
        cov["unnamed_calls"],
        json!({"allow": 0, "deny": 0, "error": 1})
    );
    assert_eq!(cov["declared_not_called"], json!(["write_file"]));
    assert_eq!(cov["called_not_declared"], json!(["echo"]));
}

#[test]
fn coverage_without_a_log_uses_a_temporary_log_that_is_removed() {
    let dir = tempdir();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let cov = dir.path().join("coverage.json");
    let stop = dir.path().join("stop.json");
    let mut args = vec![
        format!("TMPDIR={}", tmp.display()),
        bin().display().to_string(),
    ];
    args.extend(wrap_args(
        &[
            "--policy",
            &demo_policy().display().to_string(),
            "--event-source",
            "assay://t/cov",
            "--coverage-out",
            &cov.display().to_string(),
            "--session-stop-out",
            &stop.display().to_string(),
        ],
        &["python3", &demo_server()],
    ));
    let r = run_program("/usr/bin/env", &args, &coverage_session());
    r.expect_status(0);
    let report = read_json(&cov);
    assert_report(&report);
    assert_eq!(report["decision_lines"], 5);
    // The temporary log is gone.
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    let s = read_json(&stop)["data"].clone();
    assert_eq!(s["decision_log"], "temporary");
    assert_eq!(s["decision_events_written"], 5);
    assert_eq!(s["decision_events_dropped"], 0);
    assert!(s["decision_prefix_sha256"].is_string());
}

#[test]
fn coverage_in_a_capture_keeps_the_log() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut opts = capture_opts(&cap);
    opts.extend([
        "--coverage-out".into(),
        cap.join("coverage.json").display().to_string(),
    ]);
    run(
        &wrap_args(&strs(&opts), &["python3", &demo_server()]),
        &coverage_session(),
    )
    .expect_status(0);
    assert_report(&read_json(&cap.join("coverage.json")));
    let s = read_json(&cap.join("session-stop.json"))["data"].clone();
    assert_eq!(s["decision_log"], "complete");
    assert_eq!(decision_lines(&cap.join("decisions.ndjson")).len(), 5);
}

#[test]
fn coverage_elsewhere_than_the_capture_is_a_config_error() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut opts = capture_opts(&cap);
    opts.extend([
        "--coverage-out".into(),
        dir.path().join("c.json").display().to_string(),
    ]);
    let r = run(&wrap_args(&strs(&opts), &["python3", &demo_server()]), b"");
    r.expect_status(2);
    assert!(r.stderr.contains("coverage-out"), "{}", r.report());
}

#[test]
fn coverage_write_failure_exits_3_and_keeps_the_stop_record() {
    let dir = tempdir();
    let covdir = dir.path().join("covdir");
    std::fs::create_dir(&covdir).unwrap();
    let log = dir.path().join("d.ndjson");
    let stop = dir.path().join("stop.json");
    let args = wrap_args(
        &[
            "--policy",
            &demo_policy().display().to_string(),
            "--event-source",
            "assay://t/cov",
            "--decision-log",
            &log.display().to_string(),
            "--decision-log-new",
            "--coverage-out",
            &covdir.join("coverage.json").display().to_string(),
            "--session-stop-out",
            &stop.display().to_string(),
        ],
        &["python3", &fault_server(), "exit7"],
    );
    let covdir2 = covdir.clone();
    let r = run_during(
        &args,
        &coverage_session(),
        Duration::from_millis(700),
        move || {
            std::fs::remove_dir(&covdir2).unwrap();
        },
    );
    r.expect_status(3);
    assert!(r.stderr.contains("coverage"), "{}", r.report());
    // The stop record still describes the session; the child's own status is in it.
    let s = read_json(&stop)["data"].clone();
    assert_eq!(s["exit_code"], 7);
    assert_eq!(s["decision_log"], "complete");
}
