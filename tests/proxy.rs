//! The proxy end to end through the real binary and a real Python MCP server (SPEC §3, §4.1).

use std::io::Write;
use std::process::{Command, Stdio};

use crate::util::*;

/// Runs the demo server directly (no wrapper) on `input`, returning its stdout bytes.
fn direct(mode: &str, input: &[u8]) -> Vec<u8> {
    let mut child = Command::new("python3")
        .args([fault_server().as_str(), mode])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap().stdout
}

#[test]
fn end_to_end_forwarding_is_byte_exact_and_denied_calls_never_reach_the_server() {
    let dir = tempdir();
    let log = dir.path().join("decisions.ndjson");
    let rec = dir.path().join("received.bin");
    let allowed_call = call(3, "echo", r#"{"text":"h\u00e9llo",  "n": 1.50}"#);
    let denied_call = call(4, "exec", r#"{"cmd":"id"}"#);
    let denied_notification =
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"shell_run"}}"#;
    let allowed_notification = r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"n"}}}"#;
    let constraint = call(5, "read_file", r#"{"path":"/etc/passwd"}"#);
    let ok_read = call(6, "read_file", r#"{"path":"/workspace/a"}"#);
    let lines = [
        INIT,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        "   ",
        allowed_call.as_str(),
        denied_call.as_str(),
        denied_notification,
        allowed_notification,
        constraint.as_str(),
        ok_read.as_str(),
        r#"{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[]}}"#,
    ];
    let input = script(&lines);
    let opts = [
        "--policy",
        &demo_policy().display().to_string(),
        "--event-source",
        "assay://test/e2e",
        "--decision-log",
        &log.display().to_string(),
        "--decision-log-new",
    ]
    .map(|s| s.to_string());
    let r = run(
        &wrap_args(&strs(&opts), &strs(&recording_server(&rec))),
        &input,
    );
    r.expect_status(0);

    // What reached the server: exactly the input minus the refused calls, byte for byte.
    let expected_forwarded = script(&[
        INIT,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        "   ",
        allowed_call.as_str(),
        allowed_notification,
        ok_read.as_str(),
        r#"{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[]}}"#,
    ]);
    assert_eq!(
        String::from_utf8_lossy(&std::fs::read(&rec).unwrap()),
        String::from_utf8_lossy(&expected_forwarded)
    );

    // What the client saw from the server: exactly what the server writes for that input.
    let server_bytes = direct("normal", &expected_forwarded);
    let wrapper_out = String::from_utf8(r.stdout.clone()).unwrap();
    let (assay_lines, server_lines): (Vec<&str>, Vec<&str>) = wrapper_out
        .lines()
        .partition(|l| l.contains("\"_meta\":{\"assay/decision\""));
    let mut from_server = server_lines.join("\n");
    from_server.push('\n');
    assert_eq!(from_server, String::from_utf8(server_bytes).unwrap());
    assert_eq!(assay_lines.len(), 2, "{}", r.report());

    // Refusals carry the same id and the decision.
    let denied = r.response(serde_json::json!(4));
    assert_eq!(denied["result"]["isError"], true);
    // SPEC §3 item 5: valid under every MCP revision, and no structuredContent for a tool's
    // outputSchema to reject.
    assert_eq!(denied["result"]["resultType"], "complete");
    assert!(denied["result"].get("structuredContent").is_none());
    assert_eq!(
        denied["result"]["_meta"]["assay/decision"]["reason_code"],
        "P_TOOL_DENIED"
    );
    let c = r.response(serde_json::json!(5));
    assert_eq!(
        c["result"]["_meta"]["assay/decision"]["reason_code"],
        "P_ARG_CONSTRAINT"
    );

    // Exactly one decision per tools/call, in order, with contiguous seq.
    let decisions = decision_lines(&log);
    let summary = tools_and_reasons(&log);
    assert_eq!(
        summary,
        [
            ("echo", "P_POLICY_ALLOW"),
            ("exec", "P_TOOL_DENIED"),
            ("shell_run", "P_TOOL_DENIED"),
            ("echo", "P_POLICY_ALLOW"),
            ("read_file", "P_ARG_CONSTRAINT"),
            ("read_file", "P_POLICY_ALLOW"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    for (i, d) in decisions.iter().enumerate() {
        assert_eq!(d["data"]["seq"], i as u64);
        assert_eq!(d["type"], "assay.tool.decision");
        assert_eq!(d["data"]["enforced"], true);
    }
    assert_eq!(decisions[0]["data"]["tool_call_id"], "3");
    assert!(decisions[2]["data"]["tool_call_id"].is_null());
    // Raw arguments are never logged.
    assert!(
        !std::fs::read_to_string(&log)
            .unwrap()
            .contains("/etc/passwd")
    );
}

#[test]
fn arguments_digest_is_canonical_json() {
    let dir = tempdir();
    let log = dir.path().join("d.ndjson");
    let a = call(1, "echo", r#"{"text":"x","n":1.0}"#);
    let b = call(2, "echo", r#"{ "n" : 1 , "text" : "x" }"#);
    let opts = evidence_opts(&["--decision-log".into(), log.display().to_string()]);
    run(
        &wrap_args(&strs(&opts), &["python3", &demo_server()]),
        &script(&[&a, &b]),
    )
    .expect_status(0);
    let d = decision_lines(&log);
    assert_eq!(
        d[0]["data"]["arguments_sha256"],
        d[1]["data"]["arguments_sha256"]
    );
    // RFC 8785 form of {"n":1,"text":"x"}.
    use sha2::Digest;
    let expect: String = sha2::Sha256::digest(br#"{"n":1,"text":"x"}"#)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(d[0]["data"]["arguments_sha256"], expect.as_str());
}

#[test]
fn server_initiated_messages_pass_through() {
    let r = run(
        &wrap_args(
            &["--policy", &demo_policy().display().to_string()],
            &["python3", &fault_server(), "notify"],
        ),
        &script(&[INIT, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#]),
    );
    r.expect_status(0);
    let lines = r.lines();
    assert!(lines.iter().any(|l| l["method"] == "notifications/message"));
    assert!(
        lines
            .iter()
            .any(|l| l["method"] == "roots/list" && l["id"] == "srv-1")
    );
}

#[test]
fn dry_run_forwards_denied_calls_and_logs_unenforced_decisions() {
    let dir = tempdir();
    let log = dir.path().join("d.ndjson");
    let opts = evidence_opts(&[
        "--decision-log".into(),
        log.display().to_string(),
        "--dry-run".into(),
    ]);
    let r = run(
        &wrap_args(&strs(&opts), &["python3", &demo_server()]),
        &script(&[&call(1, "exec", r#"{"cmd":"id"}"#)]),
    );
    r.expect_status(0);
    let resp = r.response(serde_json::json!(1));
    assert_eq!(resp["result"]["content"][0]["text"], "executed 'id'");
    let d = decision_lines(&log);
    assert_eq!(d[0]["data"]["decision"], "deny");
    assert_eq!(d[0]["data"]["enforced"], false);
}

#[test]
fn protocol_bytes_and_status_do_not_depend_on_evidence_flags() {
    let input = script(&[
        INIT,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        &call(3, "echo", r#"{"text":"a"}"#),
        &call(4, "exec", "{}"),
        "[1,2]",
    ]);
    let plain = run(
        &wrap_args(
            &["--policy", &demo_policy().display().to_string()],
            &["python3", &fault_server(), "exit7"],
        ),
        &input,
    );
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let opts = capture_opts(&cap);
    let full = run(
        &wrap_args(&strs(&opts), &["python3", &fault_server(), "exit7"]),
        &input,
    );
    plain.expect_status(7);
    full.expect_status(7);
    // Refusals carry a per-session decision id; everything else is byte-identical.
    let strip = |b: &[u8]| {
        let s = String::from_utf8(b.to_vec()).unwrap();
        let re = regex::Regex::new("evt_decision_[0-9a-f]{32}_").unwrap();
        re.replace_all(&s, "evt_decision_X_").into_owned()
    };
    assert_eq!(strip(&plain.stdout), strip(&full.stdout));
}
