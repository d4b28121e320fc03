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
