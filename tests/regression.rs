//! Regression tests, each named after the issue that found the bug.

use serde_json::Value;

use crate::util::*;

/// The serde_json "raw value" key: with the `raw_value` feature, `serde_json::Value` replaces an
/// object whose first key is this by the JSON inside its string.
const RAW_KEY: &str = "$serde_json::private::RawValue";

/// Issue 7 (fuzzing, `client_line` target): `params.arguments` was parsed with
/// `serde_json::Value`, so `{"path":{"$serde_json::private::RawValue":"\"/workspace/a\""}}`
/// reached the policy as `{"path":"/workspace/a"}` and passed the `read_file` constraint, while the
/// server received an object for `path`. The arguments digest described the substituted value
/// too. The policy must judge the arguments every other parser sees.
#[test]
fn issue_7_raw_value_key_in_arguments_is_taken_literally() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let rec = dir.path().join("received.bin");
    let smuggled = format!(r#"{{"path":{{"{RAW_KEY}":"\"/workspace/a\""}}}}"#);
    let line = call(2, "read_file", &smuggled);
    let r = run_recorded(&cap, &rec, &script(&[INIT, &line]));
    r.expect_status(0);
    let resp = r.response(Value::from(2));
    assert_eq!(
        resp["result"]["_meta"]["assay/decision"]["reason_code"],
        "P_ARG_CONSTRAINT",
        "{}",
        r.report()
    );
    let received = std::fs::read(&rec).unwrap_or_default();
    assert_eq!(received, script(&[INIT]), "the call was not forwarded");
    let d = decision_lines(&cap.join("decisions.ndjson"));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["data"]["decision"], "deny");
    // The digest is of the arguments as sent (RFC 8785 canonical form of the literal object).
    use sha2::Digest;
    let canonical = format!(r#"{{"path":{{"{RAW_KEY}":"\"/workspace/a\""}}}}"#);
    let digest: String = sha2::Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(d[0]["data"]["arguments_sha256"], digest.as_str());
}

/// Issue 7 (same cause, capture reader): a stop field written as
/// `{"$serde_json::private::RawValue":"\"<digest>\""}` was read as the string inside, so a capture
/// whose stop record is not what SPEC §4.3 says (an object where a digest string belongs) was
/// judged `closed`.
#[test]
fn issue_7_raw_value_key_in_a_capture_file_is_not_closed() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    run(
        &wrap_args(&strs(&capture_opts(&cap)), &["python3", &demo_server()]),
        &script(&[INIT, &call(2, "echo", r#"{"text":"a"}"#)]),
    )
    .expect_status(0);
    let read = || {
        run(
            &[
                "capture".to_string(),
                "read".to_string(),
                cap.display().to_string(),
            ],
            b"",
        )
    };
    read().expect_status(0);
    let stop_path = cap.join("session-stop.json");
    let stop = std::fs::read_to_string(&stop_path).unwrap();
    let digest = read_json(&stop_path)["data"]["decision_prefix_sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let quoted = format!("\"{digest}\"");
    assert!(stop.contains(&quoted));
    let altered = stop.replacen(&quoted, &format!(r#"{{"{RAW_KEY}":"\"{digest}\""}}"#), 1);
    std::fs::write(&stop_path, altered).unwrap();
    let r = read();
    r.expect_status(3);
    let v: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["closure"], "unknown");
    assert!(
        v["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["code"] == "schema_mismatch"),
        "{v}"
    );
}

/// Issue 7 (parser differential, tests/differential.rs): a carriage return is JSON whitespace, so
/// `[[\r{…tools/call exec…}\r]]` was a batch without a call to the wrapper and was forwarded; the
/// official MCP Python SDK reads stdin with universal newlines and saw the `tools/call` as a
/// line of its own — a denied call past the policy. A `\r` inside a line is now refused with
/// -32700; a CRLF line ending still passes.
#[test]
fn issue_7_carriage_return_inside_a_line_is_refused() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let rec = dir.path().join("received.bin");
    let exec =
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"exec","arguments":{}}}"#;
    let hidden = [
        format!("[[\r{exec}\r]]"),
        format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"ping","params":{{"x":{}}}}}"#,
            format_args!("\r{exec}\r")
        ),
        "{\"jsonrpc\":\"2.0\",\r\"id\":4,\"method\":\"ping\"}".to_string(),
    ];
    let crlf = format!("{}\r", call(5, "echo", "{}"));
    let mut lines: Vec<&str> = vec![INIT];
    lines.extend(hidden.iter().map(String::as_str));
    lines.push(&crlf);
    let r = run_recorded(&cap, &rec, &script(&lines));
    r.expect_status(0);
    let refusals: Vec<Value> = r
        .lines()
        .into_iter()
        .filter(|v| v["error"]["code"] == -32700)
        .collect();
    assert_eq!(refusals.len(), 3, "{}", r.report());
    assert!(refusals.iter().all(|v| v["id"].is_null()
        && v["error"]["message"] == "Parse error: carriage return inside a line"));
    // Only the initialize line and the CRLF-terminated call reached the server.
    let received = std::fs::read(&rec).unwrap_or_default();
    assert_eq!(received, script(&[INIT, &crlf]));
    let d = decision_lines(&cap.join("decisions.ndjson"));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["data"]["tool_call_id"], "5");
}

/// Issue 7, end to end with the official MCP Python SDK server (tests/fixtures/sdk_server.py): a
/// denied `exec` call hidden between carriage returns must not run. Before the fix the wrapper
/// forwarded `[[\r{…exec…}\r]]` and the SDK server executed the tool. Needs the test Python
/// (`.venv` or `$ASSAY_TEST_PYTHON`); skipped without it outside CI.
#[test]
fn issue_7_sdk_server_never_runs_a_call_hidden_behind_carriage_returns() {
    if !can_run(
        "regression::issue_7_sdk_server_never_runs_a_call_hidden_behind_carriage_returns",
        &[Needs::PythonVenv],
    ) {
        return;
    }
    let python = python();
    let dir = tempdir();
    let marker = dir.path().join("exec-ran");
    let exec = r#"{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"exec","arguments":{"cmd":"id"}}}"#;
    let hidden = format!("[[\r{exec}\r]]");
    let echo = call(101, "echo", r#"{"text":"still served"}"#);
    let input = script(&[
        INIT,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &hidden,
        exec,
        &echo,
    ]);
    let server = root().join("tests/fixtures/sdk_server.py");
    // Keep stdin open until the SDK answered the last call (it drops requests still in flight
    // at EOF): synchronized on that answer, not on a fixed wait (the SDK alone takes seconds to
    // start on a loaded machine).
    let r = run_after_reply(
        &wrap_args(
            &["--policy", &demo_policy().display().to_string()],
            &[
                &python,
                &server.display().to_string(),
                &marker.display().to_string(),
            ],
        ),
        &input,
        "still served",
        b"",
    );
    assert!(!marker.exists(), "exec ran on the server\n{}", r.report());
    assert_eq!(
        r.response(Value::from(100))["result"]["_meta"]["assay/decision"]["reason_code"],
        "P_TOOL_DENIED"
    );
    assert_eq!(
        r.response(Value::from(101))["result"]["content"][0]["text"],
        "echo: still served",
        "{}",
        r.report()
    );
}
