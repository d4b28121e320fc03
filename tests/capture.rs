//! Round trips: captures written by the real `assay mcp wrap --capture-dir` are read back by the
//! real `assay capture read` (SPEC §7, §10).

use std::path::Path;

use crate::util::*;

fn capture(mode: &str, input: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    capture_with(mode, input, &[])
}

fn capture_with(
    mode: &str,
    input: &[u8],
    extra: &[&str],
) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut opts = capture_opts(&cap);
    opts.extend(extra.iter().map(|s| s.to_string()));
    run(
        &wrap_args(&strs(&opts), &["python3", &fault_server(), mode]),
        input,
    );
    (dir, cap)
}

fn session() -> Vec<u8> {
    script(&[
        INIT,
        &call(2, "echo", r#"{"text":"a"}"#),
        &call(3, "exec", "{}"),
        &call(4, "read_file", r#"{"path":"/workspace/x"}"#),
    ])
}

#[test]
fn real_captures_read_back_closed_for_every_termination_kind() {
    for (mode, termination, exit) in [
        ("normal", "exited", Some(0)),
        ("exit7", "exited", Some(7)),
        ("sigkill", "signaled", None),
        ("close-stdout", "signaled", None),
    ] {
        let (_d, cap) = capture(mode, &session());
        let (r, v) = read_verdict(&cap);
        r.expect_status(0);
        assert_eq!(v["closure"], "closed", "{mode}: {v}");
        assert_eq!(v["reasons"], serde_json::json!([]));
        assert_eq!(v["termination"], termination, "{mode}");
        assert_eq!(v["exit_code"].as_i64(), exit.map(i64::from), "{mode}");
        assert_eq!(v["decision_events_written"], 3);
        assert_eq!(
            v["files"]["decisions.ndjson"]["sha256"],
            sha256_file(&cap.join("decisions.ndjson")).as_str()
        );
    }
}

#[test]
fn one_changed_byte_in_log_stop_or_context_reads_unknown() {
    let (_d, cap) = capture("normal", &session());
    for name in [
        "decisions.ndjson",
        "session-stop.json",
        "session-context.json",
        "protocol.json",
    ] {
        let path = cap.join(name);
        let original = std::fs::read(&path).unwrap();
        // Change a byte inside the session id (present in every file): 0-9a-f → another hex digit.
        let text = String::from_utf8(original.clone()).unwrap();
        let at = text
            .find("\"session_id\":\"")
            .map(|i| i + 14)
            .or_else(|| text.find("\"session_id\": \"").map(|i| i + 15))
            .unwrap();
        let mut changed = original.clone();
        changed[at] = if changed[at] == b'0' { b'1' } else { b'0' };
        std::fs::write(&path, &changed).unwrap();
        let (r, v) = read_verdict(&cap);
        r.expect_status(3);
        assert_eq!(v["closure"], "unknown", "{name}: {v}");
        std::fs::write(&path, &original).unwrap();
    }
    // Restored: closed again.
    read_verdict(&cap).0.expect_status(0);

    // A changed byte in the decision log's reason text breaks the digest.
    let log = cap.join("decisions.ndjson");
    let original = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, original.replacen("allowed", "allowEd", 1)).unwrap();
    let (r, v) = read_verdict(&cap);
    r.expect_status(3);
    assert!(codes(&v).contains(&"digest_mismatch".to_string()), "{v}");
}

#[test]
fn proxy_error_sessions_read_incomplete() {
    // A client line over `max_line_bytes` ends the session as proxy_error (SPEC §3 item 6).
    let long = call(4, "echo", &format!(r#"{{"text":"{}"}}"#, "x".repeat(300)));
    let mut input = session();
    input.extend_from_slice(&script(&[&long]));
    let (_d, cap) = capture_with("normal", &input, &["--max-line-bytes", "200"]);
    let (r, v) = read_verdict(&cap);
    r.expect_status(1);
    assert_eq!(v["closure"], "incomplete");
    assert_eq!(v["session_end"], "proxy_error");
    // Nothing was dropped: the reason names the ending, not a loss (issue 41).
    assert_eq!(codes(&v), vec!["proxy_error".to_string()], "{v}");
}

#[test]
fn poisoned_log_with_partial_tail_reads_incomplete() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    run_with_file_size_limit(&cap).expect_status(3);
    let (r, v) = read_verdict(&cap);
    r.expect_status(1);
    assert_eq!(v["closure"], "incomplete", "{v}");
    assert_eq!(v["decision_log"], "incomplete");
    assert!(v["decision_events_dropped"].as_u64().unwrap() > 0);
}

#[test]
fn discovery_only_and_missing_captures_read_unknown() {
    let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#;
    let (_d, cap) = capture("normal", &script(&[discover]));
    let (r, v) = read_verdict(&cap);
    r.expect_status(3);
    // SPEC §10: no stop record, but no-session.json says why.
    assert_eq!(codes(&v), ["no_session"], "{v}");
    assert!(!cap.join("session-stop.json").exists());

    // SPEC §10: a DIR that does not exist is a usage error that says so (no verdict to print);
    // the library reader (read_capture) still judges it `unknown`.
    let r = run(
        &[
            "capture".into(),
            "read".into(),
            "/nonexistent/capture".into(),
        ],
        b"",
    );
    r.expect_status(2);
    assert!(r.stdout.is_empty(), "{}", r.report());
    assert!(r.stderr.contains("does not exist"), "{}", r.report());
    let v = assay::read_capture(Path::new("/nonexistent/capture"));
    assert_eq!(v.closure, assay::ClosureKind::Unknown);
}

#[test]
fn symlinked_capture_file_is_refused() {
    let (d, cap) = capture("normal", &session());
    let moved = d.path().join("elsewhere.json");
    std::fs::rename(cap.join("session-stop.json"), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, cap.join("session-stop.json")).unwrap();
    let (r, v) = read_verdict(&cap);
    r.expect_status(3);
    assert!(codes(&v).contains(&"not_regular_file".to_string()), "{v}");
}

#[test]
fn package_copies_raw_bytes_with_a_manifest() {
    let (d, cap) = capture("exit7", &session());
    let out = d.path().join("pkg");
    let helper = root().join("examples/demo/server.py");
    let r = package(&cap, &out, &[&helper]);
    r.expect_status(0);
    let manifest = read_json(&out.join("manifest.json"));
    assert_eq!(manifest["schema"], "assay.capture.package.v1");
    assert_eq!(manifest["closure"]["closure"], "closed");
    assert!(
        manifest["non_claims"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "not_producer_authentication")
    );
    for name in SESSION_CAPTURE_FILES {
        assert_eq!(
            std::fs::read(cap.join(name)).unwrap(),
            std::fs::read(out.join(name)).unwrap(),
            "{name}"
        );
    }
    let extra = manifest["extra_files"].as_array().unwrap();
    assert_eq!(extra[0]["sha256"], sha256_file(&helper).as_str());
    // The package itself reads back closed.
    read_verdict(&out).0.expect_status(0);
    // A second package to the same destination is refused.
    let again = package(&cap, &out, &[]);
    assert_ne!(again.status, Some(0));
}

#[test]
fn demo_runs_and_prints_a_closed_verdict() {
    let d = tempdir();
    let cap = d.path().join("demo-capture");
    let r = demo_in(d.path(), &["--capture-dir", &cap.display().to_string()]);
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    // Its server and policy files are in a new directory under the temporary directory.
    let scratch: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("assay-demo-"))
        .collect();
    assert_eq!(scratch.len(), 1, "{scratch:?}\n{}", r.report());
    assert!(
        out.contains(&format!(
            "server:  python3 {}",
            d.path().join(&scratch[0]).join("server.py").display()
        )),
        "{}",
        r.report()
    );
    assert!(
        out.contains("REFUSED by assay: deny P_TOOL_DENIED"),
        "{}",
        r.report()
    );
    assert!(out.contains("closure: CLOSED"), "{}", r.report());
    read_verdict(&cap).0.expect_status(0);
}
