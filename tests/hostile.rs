//! Hostile and malformed client input (SPEC §3 item 6): every rule fails closed, and nothing that
//! was not evaluated reaches the server.

use std::path::PathBuf;

use serde_json::json;

use crate::util::*;

struct Case {
    run: Run,
    received: Vec<u8>,
    decisions: Vec<serde_json::Value>,
    _dir: tempfile::TempDir,
    stop: Option<serde_json::Value>,
}

/// Runs `input` through the wrapper in front of the recording server, with a capture.
fn hostile(input: &[u8], extra: &[&str]) -> Case {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let rec: PathBuf = dir.path().join("received.bin");
    let mut opts = capture_opts(&cap);
    opts.extend(extra.iter().map(|s| s.to_string()));
    let run = run(
        &wrap_args(&strs(&opts), &strs(&recording_server(&rec))),
        input,
    );
    let received = std::fs::read(&rec).unwrap_or_default();
    let decisions = decision_lines(&cap.join("decisions.ndjson"));
    let stop_path = cap.join("session-stop.json");
    let stop = stop_path.exists().then(|| read_json(&stop_path));
    Case {
        run,
        received,
        decisions,
        _dir: dir,
        stop,
    }
}

fn error_code(v: &serde_json::Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or(0)
}

#[test]
fn invalid_utf8_and_invalid_json_get_parse_errors_and_are_not_forwarded() {
    for bad in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\xff\"}}\n"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"\n",
        b"{\"id\":1,\"x\":NaN}\n",
        b"{'id':1}\n",
    ] {
        let c = hostile(bad, &[]);
        c.run.expect_status(0);
        let out = c.run.lines();
        assert_eq!(out.len(), 1, "{}", c.run.report());
        assert_eq!(error_code(&out[0]), -32700);
        assert!(out[0]["id"].is_null());
        assert!(c.received.is_empty(), "forwarded: {:?}", c.received);
        assert!(c.decisions.is_empty());
    }
}

#[test]
fn duplicate_method_key_never_smuggles_a_tool_call() {
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"exec"}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","method":"ping","params":{"name":"exec"}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","name":"exec"}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"ping","\u006dethod":"tools/call","params":{"name":"exec"}}"#,
        r#"[{"jsonrpc":"2.0","id":5,"method":"ping","method":"tools/call","params":{"name":"exec"}}]"#,
    ];
    let c = hostile(&script(&lines), &[]);
    c.run.expect_status(0);
    let out = c.run.lines();
    assert_eq!(out.len(), lines.len(), "{}", c.run.report());
    assert!(out.iter().all(|o| error_code(o) == -32700));
    assert!(c.received.is_empty());
    assert!(c.decisions.is_empty());
}

#[test]
fn non_object_json_gets_invalid_request() {
    let c = hostile(&script(&["42", "\"tools/call\"", "null", "true"]), &[]);
    let out = c.run.lines();
    assert_eq!(out.len(), 4);
    assert!(
        out.iter()
            .all(|o| error_code(o) == -32600 && o["id"].is_null())
    );
    assert!(c.received.is_empty());
}

#[test]
fn malformed_tool_calls_get_an_error_decision_and_are_not_forwarded() {
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":7}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"echo"}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{}}"#,
    ];
    let c = hostile(&script(&lines), &[]);
    c.run.expect_status(0);
    let out = c.run.lines();
    assert_eq!(
        out.len(),
        4,
        "notification gets no response\n{}",
        c.run.report()
    );
    for o in &out {
        assert_eq!(o["result"]["isError"], true);
        assert_eq!(o["result"]["_meta"]["assay/decision"]["decision"], "error");
        assert_eq!(
            o["result"]["_meta"]["assay/decision"]["reason_code"],
            "P_MALFORMED"
        );
    }
    assert_eq!(c.decisions.len(), 5);
    for d in &c.decisions {
        assert_eq!(d["data"]["decision"], "error");
        assert_eq!(d["data"]["reason_code"], "P_MALFORMED");
        assert!(d["data"]["tool"].is_null());
    }
    assert!(c.received.is_empty());
}

#[test]
fn batches_follow_the_all_or_nothing_rule() {
    // No tools/call: forwarded unchanged.
    let plain = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
    // Every call allowed: forwarded unchanged, one decision each.
    let allowed = format!(
        "[{},{}]",
        call(2, "echo", r#"{"text":"a"}"#),
        call(3, "read_file", r#"{"path":"/workspace/x"}"#)
    );
    let c = hostile(&script(&[plain, &allowed]), &[]);
    c.run.expect_status(0);
    assert_eq!(c.received, script(&[plain, &allowed]));
    assert_eq!(c.decisions.len(), 2);

    // One call denied: the whole batch is refused and nothing is forwarded.
    let mixed = format!(
        r#"[{},{},{{"jsonrpc":"2.0","id":"p","method":"ping"}},{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"echo"}}}},5]"#,
        call(10, "echo", r#"{"text":"a"}"#),
        call(11, "exec", r#"{"cmd":"id"}"#),
    );
    let c = hostile(&script(&[&mixed]), &[]);
    c.run.expect_status(0);
    assert!(c.received.is_empty());
    let out = c.run.lines();
    assert_eq!(out.len(), 1);
    let arr = out[0].as_array().expect("batch response is an array");
    assert_eq!(arr.len(), 3, "one response per element with an id");
    let by_id = |id: serde_json::Value| arr.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(
        by_id(json!(10))["result"]["_meta"]["assay/decision"]["reason_code"],
        "P_BATCH_REFUSED"
    );
    assert_eq!(
        by_id(json!(11))["result"]["_meta"]["assay/decision"]["reason_code"],
        "P_TOOL_DENIED"
    );
    assert_eq!(error_code(&by_id(json!("p"))), -32010);
    for id in [json!(10), json!(11)] {
        // The same refusal shape as a single call (SPEC §3 item 5).
        let r = by_id(id)["result"].clone();
        assert_eq!(
            (r["isError"].clone(), r["resultType"].clone()),
            (json!(true), json!("complete"))
        );
        assert!(r.get("structuredContent").is_none());
    }
    let codes: Vec<&str> = c
        .decisions
        .iter()
        .map(|d| d["data"]["reason_code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        ["P_BATCH_REFUSED", "P_TOOL_DENIED", "P_BATCH_REFUSED"]
    );
    assert!(c.decisions.iter().all(|d| d["data"]["decision"] == "deny"));
}

#[test]
fn blank_and_whitespace_lines_are_forwarded_unchanged() {
    let input = b"\n   \n\t\r\n".to_vec();
    let c = hostile(&input, &[]);
    c.run.expect_status(0);
    assert_eq!(c.received, input);
    assert!(c.run.stdout.is_empty());
}

#[test]
fn deep_nesting_is_a_parse_error() {
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"a":{}1{}}}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let c = hostile(&script(&[&deep]), &[]);
    assert_eq!(error_code(&c.run.lines()[0]), -32700);
    assert!(c.received.is_empty());
}

#[test]
fn oversized_line_ends_the_session_as_proxy_error() {
    let big = call(2, "echo", &format!(r#"{{"text":"{}"}}"#, "x".repeat(5000)));
    let c = hostile(
        &script(&[INIT, &big, &call(3, "echo", "{}")]),
        &["--max-line-bytes", "4096"],
    );
    c.run.expect_status(3);
    // The oversized line and everything after it were never forwarded. (The first line was
    // written to the server's pipe, but the server may be killed by cleanup before it reads it.)
    assert!(script(&[INIT]).starts_with(&c.received), "{:?}", c.received);
    let stop = c.stop.expect("stop record written");
    let s = &stop["data"];
    assert_eq!(s["session_end"], "proxy_error", "{s}");
    assert_eq!(s["decision_log"], "incomplete", "{s}");
    // No tools/call was evaluated: nothing written, nothing dropped, the digest of nothing.
    assert_eq!(s["decision_events_written"], 0, "{s}");
    assert_eq!(s["decision_events_dropped"], 0, "{s}");
    assert_eq!(
        s["decision_prefix_sha256"],
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    // Cleanup ran at once: the server either saw EOF and exited, or was killed after the
    // exit grace; which one depends on how far its start-up got (both are observations).
    match s["termination"].as_str() {
        Some("exited") => assert_eq!(s["exit_code"], 0, "{s}"),
        Some("signaled") => {
            assert_eq!(s["signal"], 9, "{s}");
            assert_eq!(s["assay_kill_requested"], true, "{s}");
        }
        other => panic!("unexpected termination {other:?}: {s}"),
    }
    assert!(
        c.run.stderr.contains("max_line_bytes"),
        "{}",
        c.run.report()
    );
}

#[test]
fn line_at_the_bound_is_accepted() {
    let line = call(2, "echo", r#"{"text":"x"}"#);
    let n = (line.len() + 1).to_string();
    let c = hostile(&script(&[&line]), &["--max-line-bytes", &n]);
    c.run.expect_status(0);
    assert_eq!(c.received, script(&[&line]));
}

// ---- output paths (SPEC §6, §11 "symlinked or pre-existing output paths") ----

/// One hostile output-path setup: what to plant in the temp dir, the options, and the option
/// the one-line error must name.
struct PathCase {
    name: &'static str,
    plant: fn(&std::path::Path),
    opts: fn(&std::path::Path) -> Vec<String>,
    names: &'static str,
}

fn p(d: &std::path::Path, name: &str) -> String {
    d.join(name).display().to_string()
}

fn plant_old(d: &std::path::Path, name: &str) {
    if let Some(parent) = d.join(name).parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(d.join(name), b"old evidence\n").unwrap();
}

fn plant_link(d: &std::path::Path, name: &str) {
    if let Some(parent) = d.join(name).parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::os::unix::fs::symlink(d.join("target-of-link"), d.join(name)).unwrap();
}

fn path_cases() -> Vec<PathCase> {
    vec![
        PathCase {
            name: "pre-existing decisions.ndjson in the capture dir",
            plant: |d| plant_old(d, "cap/decisions.ndjson"),
            opts: |d| evidence_opts(&["--capture-dir".into(), p(d, "cap")]),
            // The user gave --capture-dir, never --decision-log.
            names: "--capture-dir",
        },
        PathCase {
            name: "pre-existing protocol.json in the capture dir",
            plant: |d| plant_old(d, "cap/protocol.json"),
            opts: |d| evidence_opts(&["--capture-dir".into(), p(d, "cap")]),
            names: "protocol.json",
        },
        PathCase {
            name: "pre-existing proxy-stderr.log in the capture dir",
            plant: |d| plant_old(d, "cap/proxy-stderr.log"),
            opts: |d| evidence_opts(&["--capture-dir".into(), p(d, "cap")]),
            names: "proxy-stderr.log",
        },
        PathCase {
            name: "dangling symlink as session-context.json in the capture dir",
            plant: |d| plant_link(d, "cap/session-context.json"),
            opts: |d| evidence_opts(&["--capture-dir".into(), p(d, "cap")]),
            names: "session-context.json is a symbolic link",
        },
        PathCase {
            name: "symlink as session-stop.json in the capture dir",
            plant: |d| {
                plant_old(d, "target-of-link");
                plant_link(d, "cap/session-stop.json");
            },
            opts: |d| evidence_opts(&["--capture-dir".into(), p(d, "cap")]),
            names: "session-stop",
        },
        PathCase {
            name: "policy file shared with a capture file",
            plant: |d| {
                std::fs::create_dir_all(d.join("cap")).unwrap();
                std::fs::copy(demo_policy(), d.join("cap/protocol.json")).unwrap();
            },
            opts: |d| {
                vec![
                    "--policy".into(),
                    p(d, "cap/protocol.json"),
                    "--event-source".into(),
                    "assay://t/paths".into(),
                    "--capture-dir".into(),
                    p(d, "cap"),
                ]
            },
            names: "--policy",
        },
        PathCase {
            name: "coverage output on a capture file",
            plant: |_| {},
            opts: |d| {
                evidence_opts(&[
                    "--capture-dir".into(),
                    p(d, "cap"),
                    "--coverage-out".into(),
                    p(d, "cap/session-stop.json"),
                ])
            },
            names: "--coverage-out",
        },
        PathCase {
            name: "capture dir with an explicit stop path",
            plant: |_| {},
            opts: |d| {
                evidence_opts(&[
                    "--capture-dir".into(),
                    p(d, "cap"),
                    "--session-stop-out".into(),
                    p(d, "stop.json"),
                ])
            },
            names: "--session-stop-out",
        },
        PathCase {
            name: "pre-existing context output",
            plant: |d| plant_old(d, "ctx.json"),
            opts: |d| evidence_opts(&["--session-context-out".into(), p(d, "ctx.json")]),
            names: "--session-context-out",
        },
        PathCase {
            name: "symlinked coverage output",
            plant: |d| plant_link(d, "cov.json"),
            opts: |d| evidence_opts(&["--coverage-out".into(), p(d, "cov.json")]),
            names: "--coverage-out",
        },
        PathCase {
            name: "context and stop on one path",
            plant: |_| {},
            opts: |d| {
                evidence_opts(&[
                    "--session-context-out".into(),
                    p(d, "same.json"),
                    "--session-stop-out".into(),
                    p(d, "same.json"),
                ])
            },
            names: "same file",
        },
    ]
}

/// Every file under `d` with its bytes (symlinks as their target), to prove nothing changed.
fn snapshot(d: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![d.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("-> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_string()
            } else {
                String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned()
            };
            out.push((path.display().to_string(), what));
        }
    }
    out.sort();
    out
}

#[test]
fn hostile_output_paths_are_config_errors_that_touch_nothing() {
    let mut failures = Vec::new();
    for case in path_cases() {
        let dir = tempdir();
        let d = dir.path();
        (case.plant)(d);
        let before = snapshot(d);
        let marker = d.join("spawned");
        let r = run(
            &wrap_args(
                &strs(&(case.opts)(d)),
                &["/bin/sh", "-c", &format!("touch {}", marker.display())],
            ),
            &script(&[INIT]),
        );
        let lines: Vec<&str> = r.stderr.lines().collect();
        let ok = r.status == Some(2)
            && r.stdout.is_empty()
            && lines.len() == 1
            && lines[0].starts_with("assay: ")
            && lines[0].contains(case.names)
            && !marker.exists()
            && snapshot(d) == before;
        if !ok {
            failures.push(format!("{}:\n{}", case.name, r.report()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---- capture files for the reader (SPEC §7, §11 "symlinked or oversized capture files") ----

/// A real closed capture made by the wrapper.
fn real_capture(dir: &std::path::Path) -> std::path::PathBuf {
    let cap = dir.join("cap");
    run(
        &wrap_args(&strs(&capture_opts(&cap)), &["python3", &demo_server()]),
        &script(&[INIT, &call(2, "echo", r#"{"text":"a"}"#)]),
    )
    .expect_status(0);
    cap
}

#[test]
fn symlinked_and_oversized_capture_files_are_unknown_through_the_cli() {
    let dir = tempdir();
    let cap = real_capture(dir.path());
    let (r, v) = read_verdict(&cap);
    r.expect_status(0);
    assert_eq!(v["closure"], "closed");

    type Alter = fn(&std::path::Path);
    let cases: [(&str, &str, Alter, &str); 6] = [
        (
            "symlinked stop",
            "session-stop.json",
            |_| {},
            "not_regular_file",
        ),
        (
            "symlinked log",
            "decisions.ndjson",
            |_| {},
            "not_regular_file",
        ),
        (
            "symlinked context",
            "session-context.json",
            |_| {},
            "not_regular_file",
        ),
        (
            "stop over 64 KiB",
            "session-stop.json",
            |f| pad(f, 64 * 1024 + 1),
            "too_large",
        ),
        (
            "protocol over 64 KiB",
            "protocol.json",
            |f| pad(f, 64 * 1024 + 1),
            "too_large",
        ),
        (
            "log over 8 MiB",
            "decisions.ndjson",
            |f| pad(f, 8 * 1024 * 1024 + 1),
            "too_large",
        ),
    ];
    for (name, file, alter, code) in cases {
        let work = tempdir();
        let copy = work.path().join("cap");
        std::fs::create_dir(&copy).unwrap();
        for f in [
            "protocol.json",
            "session-context.json",
            "session-stop.json",
            "decisions.ndjson",
        ] {
            std::fs::copy(cap.join(f), copy.join(f)).unwrap();
        }
        let target = copy.join(file);
        if code == "not_regular_file" {
            // The link points at the (valid) original: following it would say `closed`.
            std::fs::remove_file(&target).unwrap();
            std::os::unix::fs::symlink(cap.join(file), &target).unwrap();
        } else {
            alter(&target);
        }
        let before = snapshot(work.path());
        let (r, v) = read_verdict(&copy);
        assert_eq!(r.status, Some(3), "{name}\n{}", r.report());
        assert_eq!(v["closure"], "unknown", "{name}: {v}");
        let reasons = v["reasons"].as_array().unwrap();
        assert!(
            reasons
                .iter()
                .any(|x| x["code"] == code && x["detail"].as_str().unwrap().contains(file)),
            "{name}: {v}"
        );
        // The reader changes nothing.
        assert_eq!(snapshot(work.path()), before, "{name}");
        if file == "session-stop.json" {
            assert!(
                v.get("session_end").is_none(),
                "{name}: no stop fields: {v}"
            );
        }
    }
}

/// Pads a file with spaces (valid JSON whitespace) to exactly `len` bytes.
fn pad(path: &std::path::Path, len: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes.resize(len, b' ');
    std::fs::write(path, bytes).unwrap();
}
