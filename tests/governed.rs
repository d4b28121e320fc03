//! Beyond `tools/call` (SPEC §5.2, §4.1a), through the real binary and a real server process
//! (tests/fixtures/governed_server.py, which records every line it receives): resources judged by
//! URI (allowed, denied, not allowed, traversal and control-character variants), prompts, what
//! the server asks of the client (a request answered to the server, never shown to the client;
//! an `input_required` result replaced), limits, recorded arguments with redaction and
//! truncation — each with its `assay.mcp.decision` or `assay.tool.decision` event — and the
//! captures read `closed`. A policy without the sections changes nothing. Resource URIs are also
//! judged against real SDK servers (`server-everything` on the TypeScript SDK,
//! tests/fixtures/resource_server.py on the Python SDK 2.x): every spelling a server serves as a
//! denied resource is refused (issue 46 item 1).

use std::path::Path;

use serde_json::{Value, json};

use crate::util::*;

/// The refusal code of SPEC §5.2 (docs/decisions.md, "One refusal code").
const REFUSED: i64 = -32010;

fn governed_server(rec: &Path) -> Vec<String> {
    vec![
        "python3".into(),
        root()
            .join("tests/fixtures/governed_server.py")
            .display()
            .to_string(),
        rec.display().to_string(),
    ]
}

/// `mcp wrap` with `policy` (YAML text) and a capture directory, against the governed server.
fn governed_wrap(
    dir: &Path,
    policy: &str,
) -> (Vec<String>, std::path::PathBuf, std::path::PathBuf) {
    let policy_path = dir.join("policy.yaml");
    std::fs::write(&policy_path, policy).unwrap();
    let cap = dir.join("cap");
    let rec = dir.join("received.ndjson");
    let opts = vec![
        "--policy".to_string(),
        policy_path.display().to_string(),
        "--event-source".into(),
        "assay://test/governed".into(),
        "--capture-dir".into(),
        cap.display().to_string(),
    ];
    let server = governed_server(&rec);
    (wrap_args(&strs(&opts), &strs(&server)), cap, rec)
}

fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// Every line the server received.
fn received(rec: &Path) -> Vec<Value> {
    match std::fs::read_to_string(rec) {
        Ok(s) => s
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn events(cap: &Path, kind: &str) -> Vec<Value> {
    decision_lines(&cap.join("decisions.ndjson"))
        .into_iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

fn assert_closed(cap: &Path) {
    let (r, v) = read_verdict(cap);
    assert_eq!(v["closure"], "closed", "{v}\n{}", r.report());
}

/// The refusal error of SPEC §5.2 for `id`, with its reason code.
fn assert_refused(r: &Run, id: u64, code: &str) {
    let resp = r.response(json!(id));
    assert_eq!(resp["error"]["code"], REFUSED, "{resp}");
    assert_eq!(
        resp["error"]["message"],
        format!("assay: refused by policy ({code})"),
        "{resp}"
    );
    let d = &resp["error"]["data"]["assay/decision"];
    assert_eq!(d["reason_code"], code, "{resp}");
    assert!(
        d["decision_id"]
            .as_str()
            .unwrap()
            .starts_with("evt_decision_"),
        "{resp}"
    );
}

const RESOURCES: &str = r#"version: "1"
allow: ["*"]
resources:
  allow: ["file:///workspace/**", "test://static/resource/*"]
  deny: ["file:///workspace/.env"]
"#;

#[test]
fn resources_are_judged_by_uri_and_only_allowed_reads_reach_the_server() {
    let dir = tempdir();
    let (args, cap, rec) = governed_wrap(dir.path(), RESOURCES);
    let cases: &[(&str, Option<&str>)] = &[
        ("file:///workspace/a.txt", None),
        ("file:///workspace/sub/dir/b.txt", None),
        ("test://static/resource/1", None),
        ("file:///workspace/.env", Some("P_RESOURCE_DENIED")),
        ("file:///etc/passwd", Some("P_RESOURCE_NOT_ALLOWED")),
        (
            "file:///workspace/../etc/passwd",
            Some("P_RESOURCE_NOT_ALLOWED"),
        ),
        (
            "file:///workspace/%2e%2e/etc/passwd",
            Some("P_RESOURCE_NOT_ALLOWED"),
        ),
        (
            "file:///workspace/.\t./etc/passwd",
            Some("P_RESOURCE_NOT_ALLOWED"),
        ),
        ("file:///workspace/a%0a.txt", Some("P_RESOURCE_NOT_ALLOWED")),
        ("file:///workspace/x/../.env", Some("P_RESOURCE_DENIED")),
        (
            "test://static/resource/1/deeper",
            Some("P_RESOURCE_NOT_ALLOWED"),
        ),
    ];
    let mut lines = vec![INIT.to_string()];
    for (i, (uri, _)) in cases.iter().enumerate() {
        lines.push(request(
            10 + i as u64,
            "resources/read",
            json!({"uri": uri}),
        ));
    }
    lines.push(request(
        40,
        "resources/subscribe",
        json!({"uri": "file:///workspace/.env"}),
    ));
    lines.push(request(41, "resources/read", json!({})));
    let input = script(&strs(&lines));
    let r = run_after_reply(&args, &input, "\"id\":41", b"");
    r.expect_status(0);
    for (i, (uri, refused)) in cases.iter().enumerate() {
        let id = 10 + i as u64;
        match refused {
            None => assert_eq!(
                r.response(json!(id))["result"]["contents"][0]["text"],
                format!("read {uri}"),
                "{uri}\n{}",
                r.report()
            ),
            Some(code) => assert_refused(&r, id, code),
        }
    }
    assert_refused(&r, 40, "P_RESOURCE_DENIED");
    assert_refused(&r, 41, "P_MALFORMED");
    // Only the allowed reads reached the server.
    let reached: Vec<String> = received(&rec)
        .iter()
        .filter(|m| m["method"] == "resources/read" || m["method"] == "resources/subscribe")
        .map(|m| m["params"]["uri"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        reached,
        [
            "file:///workspace/a.txt",
            "file:///workspace/sub/dir/b.txt",
            "test://static/resource/1"
        ]
    );
    // One event per governed message, in order, with its fields.
    let ev = events(&cap, "assay.mcp.decision");
    assert_eq!(ev.len(), cases.len() + 2, "{ev:?}");
    for (e, (uri, refused)) in ev.iter().zip(cases.iter()) {
        let d = &e["data"];
        assert_eq!(d["method"], "resources/read");
        assert_eq!(d["direction"], "client_to_server");
        assert_eq!(d["target"], *uri);
        assert_eq!(
            d["reason_code"],
            refused.unwrap_or("P_POLICY_ALLOW"),
            "{uri}: {d}"
        );
        assert_eq!(
            d["decision"],
            if refused.is_some() { "deny" } else { "allow" }
        );
        assert_eq!(d["enforced"], true);
        assert_eq!(d["params_sha256"].as_str().unwrap().len(), 64);
        assert_eq!(
            e["id"],
            format!(
                "evt_decision_{}_{}",
                d["session_id"].as_str().unwrap(),
                d["seq"]
            )
        );
    }
    assert_eq!(ev[cases.len() + 1]["data"]["decision"], "error");
    assert_eq!(ev[cases.len() + 1]["data"]["target"], Value::Null);
    let ctx = read_json(&cap.join("session-context.json"));
    assert_eq!(ctx["data"]["governed"], json!(["resources"]), "{ctx}");
    assert_eq!(ctx["data"]["record_arguments"], false, "{ctx}");
    assert_closed(&cap);
}

#[test]
fn prompts_are_judged_by_name() {
    let dir = tempdir();
    let policy = "version: \"1\"\nprompts:\n  allow: [\"*\"]\n  deny: [\"debug_*\"]\n";
    let (args, cap, rec) = governed_wrap(dir.path(), policy);
    let input = script(&[
        INIT,
        &request(2, "prompts/get", json!({"name": "greet"})),
        &request(3, "prompts/get", json!({"name": "debug_dump"})),
        &request(4, "prompts/list", json!({})),
    ]);
    let r = run_after_reply(&args, &input, "\"id\":4", b"");
    r.expect_status(0);
    assert_eq!(
        r.response(json!(2))["result"]["messages"][0]["content"]["text"],
        "prompt greet"
    );
    assert_refused(&r, 3, "P_PROMPT_DENIED");
    let got: Vec<Value> = received(&rec)
        .into_iter()
        .filter(|m| m["method"] == "prompts/get")
        .collect();
    assert_eq!(got.len(), 1, "{got:?}");
    let ev = events(&cap, "assay.mcp.decision");
    let summary: Vec<(String, String)> = ev
        .iter()
        .map(|e| {
            (
                e["data"]["target"].as_str().unwrap().to_string(),
                e["data"]["reason_code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("greet".to_string(), "P_POLICY_ALLOW".to_string()),
            ("debug_dump".to_string(), "P_PROMPT_DENIED".to_string())
        ]
    );
    assert_closed(&cap);
}

#[test]
fn a_policy_without_the_sections_changes_nothing() {
    let dir = tempdir();
    let (args, cap, rec) = governed_wrap(dir.path(), "version: \"1\"\nallow: [\"*\"]\n");
    let input = script(&[
        INIT,
        &request(2, "resources/read", json!({"uri": "file:///etc/passwd"})),
        &request(3, "prompts/get", json!({"NAME": "debug_dump"})),
        &request(
            4,
            "tools/call",
            json!({"name": "ask", "arguments": {"feature": "sampling"}}),
        ),
    ]);
    let r = run_after_reply(
        &args,
        &input,
        "sampling/createMessage",
        br#"{"jsonrpc":"2.0","id":"srv-1","result":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}}
"#,
    );
    // The client would wait for the call's answer; run_after_reply closes its input after the
    // answer to the server's request, and the server answers the call before reading EOF.
    r.expect_status(0);
    assert_eq!(
        r.response(json!(2))["result"]["contents"][0]["text"],
        "read file:///etc/passwd"
    );
    assert!(r.response(json!(3))["result"].is_object(), "{}", r.report());
    assert!(events(&cap, "assay.mcp.decision").is_empty());
    assert_eq!(received(&rec).len(), 5, "{:?}", received(&rec));
    let ctx = read_json(&cap.join("session-context.json"));
    assert_eq!(ctx["data"]["governed"], json!([]), "{ctx}");
    assert_closed(&cap);
}

const FEATURES: &str = r#"version: "1"
allow: ["*"]
client_features:
  sampling: deny
  elicitation: allow
"#;

#[test]
fn a_refused_server_request_is_answered_to_the_server_and_never_reaches_the_client() {
    let dir = tempdir();
    let (args, cap, rec) = governed_wrap(dir.path(), FEATURES);
    let input = script(&[
        INIT,
        &request(
            2,
            "tools/call",
            json!({"name": "ask", "arguments": {"feature": "sampling"}}),
        ),
    ]);
    let r = run_after_reply(&args, &input, "\"id\":2", b"");
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(!out.contains("sampling/createMessage"), "{}", r.report());
    // The server got the refusal as the answer to its request.
    let text = r.response(json!(2))["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let answer: Value = serde_json::from_str(text.strip_prefix("answer: ").unwrap()).unwrap();
    assert_eq!(answer["id"], "srv-1");
    assert_eq!(answer["error"]["code"], REFUSED, "{answer}");
    assert_eq!(
        answer["error"]["data"]["assay/decision"]["reason_code"],
        "P_CLIENT_FEATURE_DENIED"
    );
    let ev = events(&cap, "assay.mcp.decision");
    assert_eq!(ev.len(), 1, "{ev:?}");
    let d = &ev[0]["data"];
    assert_eq!(d["method"], "sampling/createMessage");
    assert_eq!(d["direction"], "server_to_client");
    assert_eq!(d["target"], "sampling");
    assert_eq!(d["request_id"], "srv-1");
    assert_eq!(d["decision"], "deny");
    // Diagnostics go to the capture's proxy-stderr.log.
    let said = std::fs::read_to_string(cap.join("proxy-stderr.log")).unwrap();
    assert!(
        said.contains("refused the server's sampling/createMessage request (sampling): P_CLIENT_FEATURE_DENIED"),
        "{said}"
    );
    assert!(received(&rec).iter().any(|m| m["id"] == "srv-1"));
    assert_closed(&cap);
}

#[test]
fn an_allowed_server_request_reaches_the_client_and_its_answer_the_server() {
    let dir = tempdir();
    let (args, cap, _rec) = governed_wrap(dir.path(), FEATURES);
    let input = script(&[
        INIT,
        &request(
            2,
            "tools/call",
            json!({"name": "ask", "arguments": {"feature": "elicitation"}}),
        ),
    ]);
    let r = run_after_reply(
        &args,
        &input,
        "elicitation/create",
        b"{\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"result\":{\"action\":\"accept\",\"content\":{}}}\n",
    );
    r.expect_status(0);
    let text = r.response(json!(2))["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("\"action\": \"accept\""), "{text}");
    let ev = events(&cap, "assay.mcp.decision");
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["data"]["decision"], "allow");
    assert_eq!(ev[0]["data"]["target"], "elicitation");
    // roots is not named: not governed, no event (checked by the absence of a second event).
    assert_closed(&cap);
}

#[test]
fn an_input_required_result_with_a_refused_input_request_is_replaced_for_the_client() {
    let dir = tempdir();
    let policy = "version: \"1\"\nclient_features:\n  elicitation: deny\n";
    let (args, cap, _rec) = governed_wrap(dir.path(), policy);
    let input = script(&[
        INIT,
        &request(
            2,
            "tools/call",
            json!({"name": "ask_modern", "arguments": {}}),
        ),
    ]);
    let r = run_after_reply(&args, &input, "\"id\":2", b"");
    r.expect_status(0);
    assert_refused(&r, 2, "P_CLIENT_FEATURE_DENIED");
    let ev = events(&cap, "assay.mcp.decision");
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["data"]["method"], "elicitation/create");
    assert_eq!(ev[0]["data"]["request_id"], "2");
    assert_closed(&cap);
}

#[test]
fn limits_refuse_calls_past_the_budget_in_order() {
    let dir = tempdir();
    let policy = "version: \"1\"\nallow: [\"*\"]\nlimits:\n  tool_calls: 5\n  per_tool: { ask: 1 }\n  repeated_call: 2\n";
    let (args, cap, _rec) = governed_wrap(dir.path(), policy);
    let same = r#"{"text":"same"}"#;
    let lines = [
        INIT.to_string(),
        call(2, "echo", same),
        call(3, "echo", same),
        call(4, "echo", same), // third identical: P_REPEATED_CALL
        call(5, "echo", r#"{"text":"a"}"#),
        call(6, "echo", r#"{"text":"b"}"#),
        call(7, "echo", r#"{"text":"c"}"#), // the fifth allowed call
        call(8, "echo", r#"{"text":"d"}"#), // a sixth would exceed 5: P_LIMIT_TOOL_CALLS
    ];
    let r = run_after_reply(&args, &script(&strs(&lines)), "\"id\":8", b"");
    r.expect_status(0);
    let codes: Vec<String> = events(&cap, "assay.tool.decision")
        .iter()
        .map(|e| e["data"]["reason_code"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        codes,
        [
            "P_POLICY_ALLOW",
            "P_POLICY_ALLOW",
            "P_REPEATED_CALL",
            "P_POLICY_ALLOW",
            "P_POLICY_ALLOW",
            "P_POLICY_ALLOW",
            "P_LIMIT_TOOL_CALLS"
        ]
    );
    assert_eq!(r.response(json!(4))["result"]["isError"], true);
    assert_eq!(r.response(json!(8))["result"]["isError"], true);
    assert_closed(&cap);

    let dir2 = tempdir();
    let (args2, cap2, _) = governed_wrap(
        dir2.path(),
        "version: \"1\"\nlimits:\n  per_tool: { echo: 1 }\n",
    );
    let r = run_after_reply(
        &args2,
        &script(&[INIT, &call(2, "echo", "{}"), &call(3, "echo", r#"{"x":1}"#)]),
        "\"id\":3",
        b"",
    );
    r.expect_status(0);
    let ev = events(&cap2, "assay.tool.decision");
    assert_eq!(ev[1]["data"]["reason_code"], "P_LIMIT_PER_TOOL");
    assert_eq!(ev[1]["data"]["matched_rule"], "limits.per_tool.echo");
    assert_closed(&cap2);
}

#[test]
fn recorded_arguments_are_redacted_and_bounded() {
    let dir = tempdir();
    let policy = "version: \"1\"\nallow: [\"*\"]\ndeny: [exec]\nrecord_arguments: true\nredact: [\"*token*\", \"password\"]\n";
    let (args, cap, _rec) = governed_wrap(dir.path(), policy);
    let big = "x".repeat(6000);
    let lines = [
        INIT.to_string(),
        call(
            2,
            "exec",
            r#"{"path":"/etc/passwd","api_token":"s3cret","nested":[{"Password":"hunter2","keep":1}]}"#,
        ),
        call(3, "echo", &json!({ "text": big }).to_string()),
    ];
    let r = run_after_reply(&args, &script(&strs(&lines)), "\"id\":3", b"");
    r.expect_status(0);
    let ev = events(&cap, "assay.tool.decision");
    let first = &ev[0]["data"];
    assert_eq!(first["decision"], "deny");
    assert_eq!(
        first["arguments"],
        r#"{"api_token":"[redacted]","nested":[{"Password":"[redacted]","keep":1}],"path":"/etc/passwd"}"#
    );
    assert_eq!(first["arguments_truncated"], false);
    let second = &ev[1]["data"];
    assert_eq!(second["arguments_truncated"], true);
    let text = second["arguments"].as_str().unwrap();
    assert!(text.len() <= 4096 && text.len() > 4000, "{}", text.len());
    assert!(text.starts_with("{\"text\":\"xxx"));
    let ctx = read_json(&cap.join("session-context.json"));
    assert_eq!(ctx["data"]["record_arguments"], true, "{ctx}");
    assert_closed(&cap);
}

#[test]
fn a_batch_holding_a_refused_read_is_refused_whole_with_the_refusal_code() {
    let dir = tempdir();
    let (args, cap, rec) = governed_wrap(dir.path(), RESOURCES);
    let batch = format!(
        "[{},{}]",
        request(
            2,
            "resources/read",
            json!({"uri": "file:///workspace/a.txt"})
        ),
        request(
            3,
            "resources/read",
            json!({"uri": "file:///workspace/.env"})
        )
    );
    let input = script(&[INIT, &batch]);
    let r = run_after_reply(&args, &input, "\"id\":3", b"");
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    let batch_line: Vec<Value> = out
        .lines()
        .filter(|l| l.starts_with('['))
        .map(|l| serde_json::from_str(l).unwrap())
        .next()
        .unwrap();
    for e in &batch_line {
        assert_eq!(e["error"]["code"], REFUSED, "{e}");
    }
    assert!(
        !received(&rec)
            .iter()
            .any(|m| m.to_string().contains("resources/read")),
        "nothing of the batch reached the server"
    );
    let codes: Vec<String> = events(&cap, "assay.mcp.decision")
        .iter()
        .map(|e| e["data"]["reason_code"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(codes, ["P_BATCH_REFUSED", "P_RESOURCE_DENIED"]);
    assert_closed(&cap);
}

const REFUSALS: &str = r#"version: "1"
allow: ["*"]
deny: [exec]
resources:
  allow: ["file:///workspace/**"]
  deny: ["file:///workspace/.env"]
client_features:
  sampling: deny
  elicitation: deny
"#;

/// A refusal on each path: a denied `tools/call` and a denied `resources/read` (client path),
/// a refused server request (answered to the server, which echoes the answer back) and a
/// refused `input_required` result (server path). Returns the four `assay/decision` objects.
fn refusals_on_both_paths(r: &Run) -> [Value; 4] {
    let call = r.response(json!(2));
    let read = r.response(json!(3));
    let text = r.response(json!(4))["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", r.report()))
        .to_string();
    let answer: Value = serde_json::from_str(text.strip_prefix("answer: ").unwrap()).unwrap();
    let modern = r.response(json!(5));
    [
        call["result"]["_meta"]["assay/decision"].clone(),
        read["error"]["data"]["assay/decision"].clone(),
        answer["error"]["data"]["assay/decision"].clone(),
        modern["error"]["data"]["assay/decision"].clone(),
    ]
}

fn refusals_script() -> Vec<u8> {
    script(&[
        INIT,
        &call(2, "exec", "{}"),
        &request(
            3,
            "resources/read",
            json!({"uri": "file:///workspace/.env"}),
        ),
        &request(
            4,
            "tools/call",
            json!({"name": "ask", "arguments": {"feature": "sampling"}}),
        ),
        &request(
            5,
            "tools/call",
            json!({"name": "ask_modern", "arguments": {}}),
        ),
    ])
}

/// `evt_decision_<32 hex>_<seq>`: the session id and the seq.
fn decision_id_parts(id: &str) -> Option<(&str, u64)> {
    let rest = id.strip_prefix("evt_decision_")?;
    let (sid, seq) = rest.rsplit_once('_')?;
    let hex = sid.len() == 32 && sid.bytes().all(|b| b.is_ascii_hexdigit());
    let digits = !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit());
    (hex && digits).then_some((sid, seq.parse().ok()?))
}

/// Issue 46 item 8: without a decision log, a refusal on the server path (a refused server
/// request, a refused `input_required` result) names a decision id of the same form as one on
/// the client path — `evt_decision_<session_id>_<seq>`, one session id, distinct seqs — never
/// an empty one.
#[test]
fn refusals_on_both_paths_carry_the_same_kind_of_decision_id_without_a_log() {
    let dir = tempdir();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, REFUSALS).unwrap();
    let rec = dir.path().join("received.ndjson");
    let opts = ["--policy".to_string(), policy.display().to_string()];
    let args = wrap_args(&strs(&opts), &strs(&governed_server(&rec)));
    let r = run_after_reply(&args, &refusals_script(), "\"id\":5", b"");
    r.expect_status(0);
    let decisions = refusals_on_both_paths(&r);
    let codes: Vec<&str> = decisions
        .iter()
        .map(|d| d["reason_code"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        codes,
        [
            "P_TOOL_DENIED",
            "P_RESOURCE_DENIED",
            "P_CLIENT_FEATURE_DENIED",
            "P_CLIENT_FEATURE_DENIED"
        ],
        "{}",
        r.report()
    );
    let parts: Vec<(&str, u64)> = decisions
        .iter()
        .map(|d| {
            let id = d["decision_id"].as_str().unwrap_or("");
            decision_id_parts(id)
                .unwrap_or_else(|| panic!("decision id {id:?} in {d}\n{}", r.report()))
        })
        .collect();
    assert!(
        parts.iter().all(|(sid, _)| *sid == parts[0].0),
        "one session: {parts:?}"
    );
    let mut seqs: Vec<u64> = parts.iter().map(|(_, seq)| *seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), 4, "distinct seqs: {parts:?}");
}

/// With a decision log, every refusal on either path names the id of its decision's event.
#[test]
fn refusals_on_both_paths_name_their_logged_decision() {
    let dir = tempdir();
    let (args, cap, _rec) = governed_wrap(dir.path(), REFUSALS);
    let r = run_after_reply(&args, &refusals_script(), "\"id\":5", b"");
    r.expect_status(0);
    let logged: Vec<String> = decision_lines(&cap.join("decisions.ndjson"))
        .iter()
        .filter(|e| e["data"]["decision"] == "deny")
        .map(|e| e["id"].as_str().unwrap_or("").to_string())
        .collect();
    for d in refusals_on_both_paths(&r) {
        let id = d["decision_id"].as_str().unwrap_or("");
        assert!(decision_id_parts(id).is_some(), "{d}");
        assert!(logged.iter().any(|l| l == id), "{id} not in {logged:?}");
    }
    assert_closed(&cap);
}

/// A server batch is judged element by element (issue 46 item 6): the refused request is
/// answered to the server with a refusal naming its decision (never an empty decision id) and
/// never reaches the client; the request nothing judged (a `ping`) reaches the client, alone in
/// the batch, and the client's answer reaches the server.
#[test]
fn a_refused_server_batch_names_no_empty_decision_id() {
    let dir = tempdir();
    let (args, cap, _rec) = governed_wrap(dir.path(), FEATURES);
    let input = script(&[
        INIT,
        &request(
            2,
            "tools/call",
            json!({"name": "ask_batch", "arguments": {}}),
        ),
    ]);
    let r = run_after_reply(
        &args,
        &input,
        "srv-b2",
        b"{\"jsonrpc\":\"2.0\",\"id\":\"srv-b2\",\"result\":{}}\n",
    );
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(!out.contains("sampling/createMessage"), "{}", r.report());
    let batch: Value = serde_json::from_str(
        out.lines()
            .find(|l| l.contains("srv-b2"))
            .unwrap_or_else(|| panic!("{}", r.report())),
    )
    .unwrap();
    assert_eq!(
        batch,
        json!([{"jsonrpc": "2.0", "id": "srv-b2", "method": "ping"}]),
        "{}",
        r.report()
    );
    let text = r.response(json!(2))["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", r.report()))
        .to_string();
    let answers: Value = serde_json::from_str(text.strip_prefix("answers: ").unwrap()).unwrap();
    let sampling = &answers[0];
    assert_eq!(sampling["id"], "srv-b1", "{answers}");
    assert_eq!(sampling["error"]["code"], REFUSED, "{answers}");
    let d = &sampling["error"]["data"]["assay/decision"];
    assert_eq!(d["reason_code"], "P_CLIENT_FEATURE_DENIED", "{answers}");
    let id = d["decision_id"].as_str().unwrap_or("");
    assert!(decision_id_parts(id).is_some(), "{answers}");
    let ev = events(&cap, "assay.mcp.decision");
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["id"], id);
    // The client's own answer to the ping.
    assert_eq!(
        answers[1],
        json!({"jsonrpc": "2.0", "id": "srv-b2", "result": {}}),
        "{answers}"
    );
    assert_closed(&cap);
}

/// SPEC §4.1a (issue 46 item 5): every listing event names the list it judged, its removals
/// carry that list's codes, and `capture show` heads each listing with its list, names what was
/// shown and counts removed tools apart from other removed entries.
#[test]
fn listing_events_name_their_list() {
    let dir = tempdir();
    let policy = "version: \"1\"\nallow: [\"*\"]\ndeny: [\"ask_modern\"]\nhide_refused_tools: true\n\
                  resources:\n  deny: [\"file:///workspace/.env\", \"file:///secrets/**\"]\n\
                  prompts:\n  deny: [\"debug_*\"]\n";
    let (args, cap, _) = governed_wrap(dir.path(), policy);
    let input = script(&[
        INIT,
        &request(2, "tools/list", json!({})),
        &request(3, "resources/list", json!({})),
        &request(4, "resources/templates/list", json!({})),
        &request(5, "prompts/list", json!({})),
    ]);
    let r = run_after_reply(&args, &input, "\"id\":5", b"");
    r.expect_status(0);
    let names = |id: u64, member: &str, key: &str| -> Vec<String> {
        r.response(json!(id))["result"][member]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e[key].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(5, "prompts", "name"), ["greet"]);
    let listings = events(&cap, "assay.tool.listing");
    /// A listing's method, request id, names shown and (name, code) removed.
    type Summary = (String, String, Vec<String>, Vec<(String, String)>);
    let summary: Vec<Summary> = listings
        .iter()
        .map(|e| {
            let d = &e["data"];
            let shown = d["shown"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect();
            let removed = d["removed"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    (
                        t["name"].as_str().unwrap().to_string(),
                        t["reason_code"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            (
                d["method"].as_str().unwrap().to_string(),
                d["request_id"].as_str().unwrap().to_string(),
                shown,
                removed,
            )
        })
        .collect();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let p = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        summary,
        [
            (
                "tools/list".to_string(),
                "2".to_string(),
                s(&["echo", "ask", "ask_batch"]),
                vec![p("ask_modern", "P_TOOL_DENIED")]
            ),
            (
                "resources/list".to_string(),
                "3".to_string(),
                s(&["file:///workspace/a.txt", "test://static/resource/1"]),
                vec![p("file:///workspace/.env", "P_RESOURCE_DENIED")]
            ),
            // A `file:` template is refused only when every expansion is (an expansion may
            // hold `..`): both are shown, and the listing says so.
            (
                "resources/templates/list".to_string(),
                "4".to_string(),
                s(&["file:///workspace/{path}", "file:///secrets/{name}"]),
                vec![]
            ),
            (
                "prompts/list".to_string(),
                "5".to_string(),
                s(&["greet"]),
                vec![p("debug_dump", "P_PROMPT_DENIED")]
            ),
        ],
        "{listings:#?}"
    );
    assert_closed(&cap);
    let shown = run(
        &[
            "capture".to_string(),
            "show".into(),
            cap.display().to_string(),
        ],
        b"",
    );
    shown.expect_status(0);
    let out = String::from_utf8_lossy(&shown.stdout).into_owned();
    for (list, request) in [
        ("tools/list", "2"),
        ("resources/list", "3"),
        ("resources/templates/list", "4"),
        ("prompts/list", "5"),
    ] {
        assert!(
            out.lines().any(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                cells.len() == 6 && cells[2] == list && cells[3] == request
            }),
            "no {list} row: {out}"
        );
    }
    assert!(out.contains(": shown greet (sha256 "), "{out}");
    assert!(
        out.contains(": removed debug_dump (P_PROMPT_DENIED)"),
        "{out}"
    );
    assert!(
        out.contains("4 listings (1 tools removed, 2 other entries removed)"),
        "{out}"
    );
}

/// SPEC §5.2 (issue 46 item 2): every method that reaches a governed thing is governed.
/// `completion/complete` runs the completer of the prompt or resource template its `ref` names,
/// and `subscriptions/listen` (2026-07-28) subscribes to resources: each is judged by the
/// section of what it names, logged as an `assay.mcp.decision` and refused like `prompts/get`
/// and `resources/subscribe`; a `ref` that cannot be read the way every SDK reads it is
/// refused (`P_MALFORMED`). Without the sections nothing changes.
#[test]
fn completions_and_subscriptions_are_judged_by_what_they_name() {
    let dir = tempdir();
    let policy = "version: \"1\"\nprompts:\n  deny: [\"debug_*\"]\n\
                  resources:\n  deny: [\"file:///workspace/.env\", \"file:///secrets/**\"]\n";
    let (args, cap, rec) = governed_wrap(dir.path(), policy);
    let complete = |r: Value| json!({"ref": r, "argument": {"name": "a", "value": ""}});
    let input = script(&[
        INIT,
        &request(
            2,
            "completion/complete",
            complete(json!({"type": "ref/prompt", "name": "greet"})),
        ),
        &request(
            3,
            "completion/complete",
            complete(json!({"type": "ref/prompt", "name": "debug_dump"})),
        ),
        &request(
            4,
            "completion/complete",
            complete(json!({"type": "ref/resource", "uri": "file:///workspace/{path}"})),
        ),
        &request(
            5,
            "completion/complete",
            complete(json!({"type": "ref/resource", "uri": "file:///workspace/.env"})),
        ),
        &request(
            6,
            "completion/complete",
            complete(json!({"type": "ref/prompt", "Name": "debug_dump"})),
        ),
        &request(
            7,
            "completion/complete",
            json!({"Ref": {"type": "ref/prompt", "name": "debug_dump"}, "argument": {"name": "a", "value": ""}}),
        ),
        &request(
            8,
            "completion/complete",
            complete(json!({"type": "REF/PROMPT", "name": "debug_dump"})),
        ),
        &request(
            9,
            "completion/complete",
            complete(json!({"type": "ref/prompt", "name": "debug_\u{17f}"})),
        ),
        &request(
            10,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": ["file:///workspace/a.txt"]}}),
        ),
        &request(
            11,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": ["file:///workspace/a.txt", "file:///secrets/key"]}}),
        ),
        &request(
            12,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        ),
        &request(
            13,
            "subscriptions/listen",
            json!({"notifications": {"ResourceSubscriptions": ["file:///secrets/key"]}}),
        ),
    ]);
    let r = run_after_reply(&args, &input, "\"id\":13", b"");
    r.expect_status(0);
    assert_eq!(
        r.response(json!(2))["result"]["completion"]["values"][0],
        "completed greet"
    );
    assert_refused(&r, 3, "P_PROMPT_DENIED");
    assert_eq!(
        r.response(json!(4))["result"]["completion"]["values"][0],
        "completed file:///workspace/{path}"
    );
    assert_refused(&r, 5, "P_RESOURCE_DENIED");
    for id in [6, 7, 8] {
        assert_refused(&r, id, "P_MALFORMED");
    }
    // Prompt names are matched as §3 reads names (lenient folding): `debug_ſ` is `debug_*`'s.
    assert_refused(&r, 9, "P_PROMPT_DENIED");
    assert!(
        r.response(json!(10))["result"].is_object(),
        "{}",
        r.report()
    );
    assert_refused(&r, 11, "P_RESOURCE_DENIED");
    // Nothing of a resource asked for: not governed, forwarded.
    assert!(
        r.response(json!(12))["result"].is_object(),
        "{}",
        r.report()
    );
    assert_refused(&r, 13, "P_MALFORMED");
    // Only the allowed ones reached the server.
    let reached: Vec<u64> = received(&rec)
        .iter()
        .filter(|m| m["method"] == "completion/complete" || m["method"] == "subscriptions/listen")
        .map(|m| m["id"].as_u64().unwrap())
        .collect();
    assert_eq!(reached, [2, 4, 10, 12]);
    let ev = events(&cap, "assay.mcp.decision");
    let summary: Vec<(String, Value, String)> = ev
        .iter()
        .map(|e| {
            (
                e["data"]["method"].as_str().unwrap().to_string(),
                e["data"]["target"].clone(),
                e["data"]["reason_code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let row = |m: &str, t: Value, c: &str| (m.to_string(), t, c.to_string());
    assert_eq!(
        summary,
        [
            row("completion/complete", json!("greet"), "P_POLICY_ALLOW"),
            row(
                "completion/complete",
                json!("debug_dump"),
                "P_PROMPT_DENIED"
            ),
            row(
                "completion/complete",
                json!("file:///workspace/{path}"),
                "P_POLICY_ALLOW"
            ),
            row(
                "completion/complete",
                json!("file:///workspace/.env"),
                "P_RESOURCE_DENIED"
            ),
            row("completion/complete", Value::Null, "P_MALFORMED"),
            row("completion/complete", Value::Null, "P_MALFORMED"),
            row("completion/complete", Value::Null, "P_MALFORMED"),
            row(
                "completion/complete",
                json!("debug_\u{17f}"),
                "P_PROMPT_DENIED"
            ),
            row(
                "subscriptions/listen",
                json!("file:///workspace/a.txt"),
                "P_POLICY_ALLOW"
            ),
            row(
                "subscriptions/listen",
                json!("file:///secrets/key"),
                "P_RESOURCE_DENIED"
            ),
            row("subscriptions/listen", Value::Null, "P_MALFORMED"),
        ],
        "{ev:#?}"
    );
    assert_closed(&cap);

    // Without the sections: forwarded as before, no event.
    let dir = tempdir();
    let (args, cap, rec) = governed_wrap(dir.path(), "version: \"1\"\nallow: [\"*\"]\n");
    let input = script(&[
        INIT,
        &request(
            2,
            "completion/complete",
            complete(json!({"type": "ref/prompt", "name": "debug_dump"})),
        ),
    ]);
    let r = run_after_reply(&args, &input, "\"id\":2", b"");
    r.expect_status(0);
    assert_eq!(
        r.response(json!(2))["result"]["completion"]["values"][0],
        "completed debug_dump"
    );
    assert!(events(&cap, "assay.mcp.decision").is_empty());
    assert_eq!(received(&rec).len(), 2);
    assert_closed(&cap);
}

/// SPEC §5.2 (issue 46 item 6): a server batch answering a `prompts/list` (which loses a prompt)
/// and a `tools/list` (which must lose a hidden tool) and a `tools/call` is judged element by
/// element: the prompt is removed, the hidden tool is removed, the call's answer arrives.
#[test]
fn a_server_batch_of_list_answers_is_judged_element_by_element() {
    let dir = tempdir();
    let policy_path = dir.path().join("policy.yaml");
    std::fs::write(
        &policy_path,
        "version: \"1\"\nallow: [\"*\"]\ndeny: [\"exec\"]\nhide_refused_tools: true\nprompts:\n  deny: [\"debug_*\"]\n",
    )
    .unwrap();
    // Answers nothing until it has the three requests, then answers them in one batch.
    let server = r#"
import json, sys
seen = {}
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "b", "version": "1"}}}), flush=True)
    elif "id" in m:
        seen[m["method"]] = m["id"]
    if len(seen) == 3:
        print(json.dumps([
            {"jsonrpc": "2.0", "id": seen["prompts/list"], "result": {"prompts": [{"name": "greet"}, {"name": "debug_dump"}]}},
            {"jsonrpc": "2.0", "id": seen["tools/list"], "result": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}, {"name": "exec", "inputSchema": {"type": "object"}}]}},
            {"jsonrpc": "2.0", "id": seen["tools/call"], "result": {"content": [{"type": "text", "text": "called"}]}},
        ]), flush=True)
        seen = {}
"#;
    let cap = dir.path().join("cap");
    let args = wrap_args(
        &[
            "--policy",
            &policy_path.display().to_string(),
            "--event-source",
            "assay://test/governed",
            "--capture-dir",
            &cap.display().to_string(),
        ],
        &["python3", "-c", server],
    );
    let input = script(&[
        INIT,
        &request(2, "prompts/list", json!({})),
        &request(3, "tools/list", json!({})),
        &call(4, "echo", "{}"),
    ]);
    let r = run_after_reply(&args, &input, "called", b"");
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(
        !out.contains("exec") && !out.contains("debug_dump"),
        "{out}"
    );
    let batch: Value = serde_json::from_str(
        out.lines()
            .find(|l| l.starts_with('['))
            .unwrap_or_else(|| panic!("no batch: {out}")),
    )
    .unwrap();
    let names = |i: usize, member: &str| -> Vec<String> {
        batch[i]["result"][member]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(0, "prompts"), ["greet"]);
    assert_eq!(names(1, "tools"), ["echo"]);
    assert_eq!(batch[2]["result"]["content"][0]["text"], "called");
    let methods: Vec<String> = events(&cap, "assay.tool.listing")
        .iter()
        .map(|e| e["data"]["method"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(methods, ["prompts/list", "tools/list"]);
    assert_closed(&cap);
}

/// `server-everything` (the TypeScript SDK's `McpServer`): its template
/// `demo://resource/dynamic/text/{resourceId}` serves resource 1 at every spelling
/// `new URL(uri).toString()` maps to `demo://resource/dynamic/text/1`.
fn everything() -> Vec<String> {
    vec![
        "node".into(),
        root()
            .join(
                "tests/interop/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
            )
            .display()
            .to_string(),
        "stdio".into(),
    ]
}

/// tests/fixtures/resource_server.py (the Python SDK 2.x `MCPServer`): its template
/// `test://static/resource/{id}` percent-decodes the id.
fn python_resources() -> Vec<String> {
    vec![
        python(),
        root()
            .join("tests/fixtures/resource_server.py")
            .display()
            .to_string(),
    ]
}

/// `resources/read` of each URI (ids from 10), after `initialize`.
fn reads(uris: &[&str]) -> (Vec<u8>, Vec<Value>) {
    let mut lines = vec![
        INIT.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
    ];
    let mut ids = vec![json!(1)];
    for (i, uri) in uris.iter().enumerate() {
        let id = 10 + i as u64;
        lines.push(request(id, "resources/read", json!({ "uri": uri })));
        ids.push(json!(id));
    }
    (script(&strs(&lines)), ids)
}

/// The text of the first content of a `resources/read` answer, if it has one.
fn served_text(r: &Run, id: u64) -> Option<String> {
    r.response(json!(id))["result"]["contents"][0]["text"]
        .as_str()
        .map(str::to_owned)
}

/// Runs `uris` straight against `server`, then through the wrapper under `policy` (a capture
/// directory in `dir`): the direct answers, the wrapped answers, and the capture.
fn direct_and_wrapped(
    dir: &Path,
    server: &[String],
    policy: &str,
    uris: &[&str],
) -> (Run, Run, std::path::PathBuf) {
    let (input, ids) = reads(uris);
    let mut direct = std::process::Command::new(&server[0]);
    direct.args(&server[1..]);
    let direct = run_until_answered(direct, &input, &ids);
    let policy_path = dir.join("policy.yaml");
    std::fs::write(&policy_path, policy).unwrap();
    let cap = dir.join("cap");
    let opts = [
        "--policy".to_string(),
        policy_path.display().to_string(),
        "--event-source".into(),
        "assay://test/governed-uris".into(),
        "--capture-dir".into(),
        cap.display().to_string(),
    ];
    let wrapped = run_until_answered(wrap_command(&strs(&opts), &strs(server)), &input, &ids);
    (direct, wrapped, cap)
}

/// Issue 46 item 1, against the TypeScript SDK: a `deny` written in the canonical form refuses
/// every spelling the server's URL parser (`new URL(uri).toString()`) reads as that resource —
/// each of which the server, asked directly, serves as resource 1 — and the percent-decoded
/// spelling the Python SDK reads as it; a neighbour is still served.
#[test]
fn a_denied_uri_is_refused_in_every_spelling_a_typescript_sdk_server_serves() {
    if !can_run(
        "governed::a_denied_uri_is_refused_in_every_spelling_a_typescript_sdk_server_serves",
        &[Needs::Node],
    ) {
        return;
    }
    let dir = tempdir();
    let policy = "version: \"1\"\nallow: [\"*\"]\nresources:\n  deny: [\"demo://resource/dynamic/text/1\"]\n";
    let served_by_the_server = [
        "demo://resource/dynamic/text/1",
        "DEMO://resource/dynamic/text/1",
        "Demo://resource/dynamic/text/1",
        "demo://resource/dynamic/./text/1",
        "demo://resource/dynamic/text/./1",
        "demo://resource/dynamic/x/../text/1",
        "demo://resource/dynamic/x/%2e%2e/text/1",
        "demo://resource/dynamic/%2E/text/1",
        "demo://resource/dynamic/text/1 ",
        " demo://resource/dynamic/text/1",
    ];
    // Not served by this server (its template matcher does not decode), refused all the same.
    let decoded_only = ["demo://resource/dynamic/text/%31"];
    let neighbour = "demo://resource/dynamic/text/2";
    let mut uris: Vec<&str> = served_by_the_server.to_vec();
    uris.extend(decoded_only);
    uris.push(neighbour);
    let (direct, wrapped, cap) = direct_and_wrapped(dir.path(), &everything(), policy, &uris);
    for (i, uri) in uris.iter().enumerate() {
        let id = 10 + i as u64;
        if served_by_the_server.contains(uri) {
            let text = served_text(&direct, id);
            assert!(
                text.as_deref()
                    .is_some_and(|t| t.starts_with("Resource 1:")),
                "the server itself serves {uri:?} as resource 1: {text:?}\n{}",
                direct.report()
            );
        }
        if *uri == neighbour {
            for r in [&direct, &wrapped] {
                let text = served_text(r, id);
                assert!(
                    text.as_deref()
                        .is_some_and(|t| t.starts_with("Resource 2:")),
                    "{text:?}\n{}",
                    r.report()
                );
            }
        } else if uri.starts_with(' ') {
            // No scheme as written: unreadable, refused whatever the patterns say.
            assert_refused(&wrapped, id, "P_RESOURCE_NOT_ALLOWED");
        } else {
            assert_refused(&wrapped, id, "P_RESOURCE_DENIED");
        }
    }
    let decisions = events(&cap, "assay.mcp.decision");
    assert_eq!(decisions.len(), uris.len(), "{decisions:?}");
    for (d, uri) in decisions.iter().zip(&uris) {
        assert_eq!(d["data"]["target"], *uri, "{d}");
        let want = if *uri == neighbour { "allow" } else { "deny" };
        assert_eq!(d["data"]["decision"], want, "{d}");
    }
    assert!(
        decisions[1]["data"]["reason"].as_str().unwrap().contains(
            "as the server's URL parser reads it (WHATWG): `demo://resource/dynamic/text/1`"
        ),
        "{}",
        decisions[1]
    );
    assert_closed(&cap);
}

/// Issue 46 item 1, against the Python SDK 2.x: its template matcher percent-decodes a
/// variable, so `%31` is resource `1` and `%61dmin` is `admin` when the server is asked
/// directly; through the wrapper both are refused by a `deny` of the canonical URIs, and a
/// neighbour is still served.
#[test]
fn a_denied_uri_is_refused_in_every_spelling_a_python_sdk_server_serves() {
    if !can_run(
        "governed::a_denied_uri_is_refused_in_every_spelling_a_python_sdk_server_serves",
        &[Needs::PythonVenv],
    ) {
        return;
    }
    let dir = tempdir();
    let policy = "version: \"1\"\nallow: [\"*\"]\nresources:\n  allow: [\"test://static/resource/*\"]\n  deny: [\"test://static/resource/1\", \"test://static/resource/admin\"]\n";
    let cases = [
        ("test://static/resource/%31", Some("resource 1")),
        ("test://static/resource/%61dmin", Some("resource admin")),
        (
            "test://static/resource/%61%64%6d%69%6e",
            Some("resource admin"),
        ),
        ("TEST://static/resource/%31", None),
        ("test://static/./resource/%31", None),
        ("test://static/resource/1", Some("resource 1")),
    ];
    let neighbour = "test://static/resource/2";
    let mut uris: Vec<&str> = cases.iter().map(|(u, _)| *u).collect();
    uris.push(neighbour);
    let (direct, wrapped, cap) = direct_and_wrapped(dir.path(), &python_resources(), policy, &uris);
    for (i, (uri, served)) in cases.iter().enumerate() {
        let id = 10 + i as u64;
        if let Some(want) = served {
            assert_eq!(
                served_text(&direct, id).as_deref(),
                Some(*want),
                "the server itself serves {uri:?}\n{}",
                direct.report()
            );
        }
        assert_refused(&wrapped, id, "P_RESOURCE_DENIED");
    }
    let id = 10 + cases.len() as u64;
    for r in [&direct, &wrapped] {
        assert_eq!(
            served_text(r, id).as_deref(),
            Some("resource 2"),
            "{}",
            r.report()
        );
    }
    assert_closed(&cap);
}

/// An `input_required` answer (2026-07-28) inside a one-element server batch is judged as on
/// its own line (issue 46, low): its refused elicitation makes it the refusal for the client's
/// request; the other answer of the batch is unchanged.
#[test]
fn an_input_required_answer_in_a_batch_is_judged() {
    let dir = tempdir();
    let policy_path = dir.path().join("policy.yaml");
    std::fs::write(
        &policy_path,
        "version: \"1\"\nallow: [\"*\"]\nclient_features:\n  elicitation: deny\n",
    )
    .unwrap();
    let server = r#"
import json, sys
ids = []
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2026-07-28", "capabilities": {}, "serverInfo": {"name": "b", "version": "1"}}}), flush=True)
    elif "id" in m:
        ids.append(m["id"])
    if len(ids) == 2:
        print(json.dumps([
            {"jsonrpc": "2.0", "id": ids[0], "result": {"resultType": "input_required", "inputRequests": {"who": {"method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {"type": "object"}}}}}},
            {"jsonrpc": "2.0", "id": ids[1], "result": {"content": [{"type": "text", "text": "plain"}]}},
        ]), flush=True)
        ids = []
"#;
    let cap = dir.path().join("cap");
    let args = wrap_args(
        &[
            "--policy",
            &policy_path.display().to_string(),
            "--event-source",
            "assay://test/governed",
            "--capture-dir",
            &cap.display().to_string(),
        ],
        &["python3", "-c", server],
    );
    let input = script(&[INIT, &call(2, "ask", "{}"), &call(3, "echo", "{}")]);
    let r = run_after_reply(&args, &input, "plain", b"");
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(!out.contains("elicitation/create"), "{out}");
    let batch: Value =
        serde_json::from_str(out.lines().find(|l| l.starts_with('[')).unwrap()).unwrap();
    assert_eq!(batch[0]["id"], 2, "{out}");
    assert_eq!(batch[0]["error"]["code"], REFUSED, "{out}");
    assert_eq!(
        batch[0]["error"]["data"]["assay/decision"]["reason_code"],
        "P_CLIENT_FEATURE_DENIED"
    );
    assert_eq!(batch[1]["result"]["content"][0]["text"], "plain", "{out}");
    let ev = events(&cap, "assay.mcp.decision");
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["data"]["method"], "elicitation/create");
    assert_closed(&cap);
}
