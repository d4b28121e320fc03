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
        &wrap_args(
            &strs(&opts),
            &[
                "python3",
                &fault_server(),
                "record",
                &rec.display().to_string(),
            ],
        ),
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
        assert_eq!(
            o["result"]["structuredContent"]["assay"]["decision"],
            "error"
        );
        assert_eq!(
            o["result"]["structuredContent"]["assay"]["reason_code"],
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
        by_id(json!(10))["result"]["structuredContent"]["assay"]["reason_code"],
        "P_BATCH_REFUSED"
    );
    assert_eq!(
        by_id(json!(11))["result"]["structuredContent"]["assay"]["reason_code"],
        "P_TOOL_DENIED"
    );
    assert_eq!(error_code(&by_id(json!("p"))), -32001);
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
    assert_eq!(stop["data"]["session_end"], "proxy_error");
    assert_eq!(stop["data"]["decision_log"], "incomplete");
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
