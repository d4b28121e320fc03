//! Parser differential (SPEC §11): for every client line the wrapper forwards, Python's `json`
//! (with and without duplicate-key detection) and the official MCP Python SDK's message parser
//! must agree that it is not a `tools/call` unless the wrapper logged an `allow` decision for it.
//! A hostile corpus goes through the real wrapper in front of the recording server; then
//! tests/fixtures/differential.py reads the recorded bytes the way the SDK's stdio transport does.
//!
//! Go (SPEC §3 item 6, lenient parsers): tests/fixtures/go-server is built with the real Go
//! toolchain (`go build`, standard library only; scripts/test.sh installs golang-go, and a
//! without `go` it is skipped, in CI it fails) and decodes every line with `encoding/json` into tagged structs,
//! as mcp-go does; it records what it would execute, which is compared with what the policy
//! judged, line by line.
//!
//! TypeScript: tests/interop/client_line_differential.mjs reads the same bytes with the official
//! TypeScript SDKs' message and request schemas (1.x and 2.x), judged by
//! tests/fixtures/governed_differential.py (which also runs the differential for the other
//! governed methods, tests/governed_differential.rs).
//!
//! Python: `$ASSAY_TEST_PYTHON` (scripts/test.sh points it at the repo .venv, which has `mcp`),
//! else `python3` (then only the `json` checks run if `mcp` is not importable).

use std::path::Path;
use std::process::Command;

use crate::util::*;

/// Runs the checker over (received, decisions) pairs; returns its status and output.
fn checker(pairs: &[(&Path, &Path)]) -> (Option<i32>, String) {
    let mut cmd = Command::new(python());
    cmd.arg(root().join("tests/fixtures/differential.py"));
    for (received, decisions) in pairs {
        cmd.arg(received).arg(decisions);
    }
    let out = cmd.output().expect("run the differential checker");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

fn exec_call(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"exec","arguments":{{"cmd":"id"}}}}}}"#
    )
}

/// The hostile corpus: every line tries to get a denied `tools/call` (tool `exec`) past the
/// policy, or is a legitimate call the checker must match to its decision.
fn corpus() -> Vec<Vec<u8>> {
    let s = |t: &str| t.as_bytes().to_vec();
    let exec = exec_call("100");
    let mut lines: Vec<Vec<u8>> = vec![
        s(INIT),
        s(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
        // Legitimate calls: allowed ones reach the server with a decision, denied ones do not.
        s(&call(1, "echo", r#"{"text":"a"}"#)),
        s(&exec_call("2")),
        s(
            r#"{"jsonrpc":"2.0","id":"s3","method":"tools/call","params":{"name":"echo","arguments":{}}}"#,
        ),
        // Escaped method names.
        s(r#"{"jsonrpc":"2.0","id":4,"method":"tools\/call","params":{"name":"exec"}}"#),
        s(r#"{"jsonrpc":"2.0","id":5,"method":"\u0074ools/call","params":{"name":"exec"}}"#),
        s(r#"{"jsonrpc":"2.0","id":6,"method":"tools\u002fcall","params":{"name":"ech\u006f"}}"#),
        s(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call\u0000","params":{"name":"exec"}}"#),
        s(r#"{"jsonrpc":"2.0","id":8,"method":"Tools/Call","params":{"name":"exec"}}"#),
        s(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call ","params":{"name":"exec"}}"#),
        // Duplicate keys at several depths, plain and escaped.
        s(
            r#"{"jsonrpc":"2.0","id":10,"method":"ping","method":"tools/call","params":{"name":"exec"}}"#,
        ),
        s(
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","method":"ping","params":{"name":"exec"}}"#,
        ),
        s(
            r#"{"jsonrpc":"2.0","id":12,"method":"ping","\u006dethod":"tools/call","params":{"name":"exec"}}"#,
        ),
        s(
            r#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","name":"exec"}}"#,
        ),
        s(
            r#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"echo","arguments":{"a":{"b":{"c":1,"c":2}}}}}"#,
        ),
        s(r#"{"jsonrpc":"2.0","id":15,"id":16,"method":"tools/call","params":{"name":"echo"}}"#),
        s(
            r#"[{"jsonrpc":"2.0","id":17,"method":"ping","method":"tools/call","params":{"name":"exec"}}]"#,
        ),
        // Method of the wrong type.
        s(r#"{"jsonrpc":"2.0","id":18,"method":["tools/call"],"params":{"name":"exec"}}"#),
        s(r#"{"jsonrpc":"2.0","id":19,"method":{"tools/call":true},"params":{"name":"exec"}}"#),
        s(r#"{"jsonrpc":"2.0","id":20,"method":null,"params":{"name":"exec"}}"#),
        // A call hidden in params, or in a nested batch (not a JSON-RPC message for anyone).
        s(&format!(
            r#"{{"jsonrpc":"2.0","id":21,"method":"ping","params":{exec}}}"#
        )),
        s(&format!("[[{exec}]]")),
        s(&format!(
            r#"[[{exec}],{{"jsonrpc":"2.0","id":22,"method":"ping"}}]"#
        )),
        // Batches: all allowed (forwarded), one denied (refused whole).
        s(&format!(
            "[{},{}]",
            call(23, "echo", "{}"),
            call(24, "read_file", r#"{"path":"/workspace/x"}"#)
        )),
        s(&format!("[{},{}]", call(25, "echo", "{}"), exec_call("26"))),
        // Numbers that are not finite doubles.
        s(r#"{"jsonrpc":"2.0","id":1e400,"method":"tools/call","params":{"name":"exec"}}"#),
        s(
            r#"{"jsonrpc":"2.0","id":27,"method":"tools/call","params":{"name":"echo","arguments":{"n":-1e400}}}"#,
        ),
        s(
            r#"{"jsonrpc":"2.0","id":28,"method":"tools/call","params":{"name":"exec","arguments":{"n":NaN}}}"#,
        ),
        s(r#"{"jsonrpc":"2.0","id":Infinity,"method":"tools/call","params":{"name":"exec"}}"#),
        // Lone surrogate escapes.
        s(r#"{"jsonrpc":"2.0","id":29,"method":"tools/call","params":{"name":"exec\ud800"}}"#),
        s(r#"{"jsonrpc":"2.0","id":30,"method":"tools/call\udc00","params":{"name":"exec"}}"#),
        // Trailing content after the value.
        s(&format!(
            r#"{{"jsonrpc":"2.0","id":31,"method":"ping"}} {exec}"#
        )),
        // Non-object JSON.
        s(r#""tools/call""#),
        s("[]"),
        // Whitespace-only lines.
        s("   "),
        s("\t\r"),
    ];
    // Byte-level hostility.
    let bytes: [&[u8]; 8] = [
        // UTF-8 byte order mark before the object.
        b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":40,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\"}}",
        // Raw NUL inside a string and between tokens.
        b"{\"jsonrpc\":\"2.0\",\"id\":41,\"method\":\"tools/call\0\",\"params\":{\"name\":\"exec\"}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":42,\0\"method\":\"tools/call\",\"params\":{\"name\":\"exec\"}}",
        // Overlong UTF-8 for '/' and for 't'.
        b"{\"jsonrpc\":\"2.0\",\"id\":43,\"method\":\"tools\xc0\xafcall\",\"params\":{\"name\":\"exec\"}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":44,\"method\":\"\xc1\xb4ools/call\",\"params\":{\"name\":\"exec\"}}",
        // A UTF-8-encoded surrogate (invalid UTF-8).
        b"{\"jsonrpc\":\"2.0\",\"id\":45,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\xed\xa0\x80\"}}",
        // Invalid UTF-8 that a lenient decoder would replace.
        b"{\"jsonrpc\":\"2.0\",\"id\":46,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\xff\"}}",
        // Latin-1 / Windows-1252 bytes.
        b"{\"jsonrpc\":\"2.0\",\"id\":47,\"method\":\"ping\",\"params\":{\"x\":\"\xe9\"}}",
    ];
    lines.extend(bytes.iter().map(|b| b.to_vec()));
    // Carriage returns: JSON whitespace to the wrapper, a line break to the SDK's universal
    // newline reader, which would see the call between them as a line of its own.
    lines.push(format!("[[\r{exec}\r]]").into_bytes());
    lines.push(
        format!(
            r#"{{"jsonrpc":"2.0","id":48,"method":"ping","params":{{"x":{}}}}}"#,
            format_args!("\r{exec}\r")
        )
        .into_bytes(),
    );
    lines.push(b"{\"jsonrpc\":\"2.0\",\r\"id\":49,\"method\":\"ping\"}".to_vec());
    // A CRLF line ending is an ordinary line ending for everyone.
    lines.push(format!("{}\r", call(50, "echo", "{}")).into_bytes());
    lines
}

#[test]
fn python_and_the_mcp_sdk_see_no_undecided_tools_call_in_forwarded_bytes() {
    if !can_run(
        "differential::python_and_the_mcp_sdk_see_no_undecided_tools_call_in_forwarded_bytes",
        &[Needs::PythonVenv],
    ) {
        return;
    }
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let rec = dir.path().join("received.bin");
    let input: Vec<u8> = corpus()
        .into_iter()
        .flat_map(|mut l| {
            l.push(b'\n');
            l
        })
        .collect();
    let r = run_recorded(&cap, &rec, &input);
    r.expect_status(0);
    let log = cap.join("decisions.ndjson");
    let (status, report) = checker(&[(&rec, &log)]);
    assert_eq!(status, Some(0), "{report}\n{}", r.report());
    // The legitimate allowed calls were matched (1, s3, 6, 23, 24, 50), so the checker did look.
    assert!(
        report.contains("6 tools/call matched"),
        "{report}\n{}",
        r.report()
    );
}

/// The official TypeScript SDKs (1.x and 2.x: `JSONRPCMessageSchema`, then `CallToolRequestSchema`)
/// read the bytes the wrapper forwarded from the hostile corpus: every `tools/call` they would run
/// has an `allow` decision naming the same tool. Fed the corpus directly, they run the denied
/// `exec` (so the check can fail).
#[test]
fn the_typescript_sdks_see_no_undecided_tools_call_in_forwarded_bytes() {
    if !can_run(
        "differential::the_typescript_sdks_see_no_undecided_tools_call_in_forwarded_bytes",
        &[Needs::Node, Needs::PythonVenv],
    ) {
        return;
    }
    use crate::governed_differential::{checker, typescript_reader};
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let rec = dir.path().join("received.bin");
    let input: Vec<u8> = corpus()
        .into_iter()
        .flat_map(|mut l| {
            l.push(b'\n');
            l
        })
        .collect();
    let r = run_recorded(&cap, &rec, &input);
    r.expect_status(0);
    let ts = dir.path().join("typescript.ndjson");
    typescript_reader(&rec, &ts);
    let (status, out) = checker(&rec, &cap.join("decisions.ndjson"), &ts, None);
    assert_eq!(status, Some(0), "{out}\n{}", r.report());
    // The allowed calls 1, s3, 6, 23, 24 and 50 (the reader takes a batch's elements as messages).
    for reader in ["typescript-v1 6,", "typescript-v2 6 "] {
        assert!(out.contains(reader), "{reader}: {out}\n{}", r.report());
    }

    let direct = dir.path().join("direct.bin");
    std::fs::write(&direct, &input).unwrap();
    let none = dir.path().join("no-decisions.ndjson");
    std::fs::write(&none, b"").unwrap();
    typescript_reader(&direct, &ts);
    let (status, out) = checker(&direct, &none, &ts, None);
    assert_eq!(status, Some(1), "{out}");
    for reader in ["typescript-v1", "typescript-v2"] {
        let ran = format!("{reader} runs tools/call of 'exec'");
        assert!(out.contains(&ran), "{ran}: {out}");
    }
}

/// The checker itself catches a bypass: a `tools/call` in the received bytes with no decision,
/// one hidden behind a carriage return, and a forwarded duplicate-key line.
#[test]
fn differential_checker_flags_undecided_calls() {
    let dir = tempdir();
    let decisions = dir.path().join("decisions.ndjson");
    std::fs::write(&decisions, b"").unwrap();
    let bad = [
        format!("{}\n", exec_call("1")),
        format!("[[\r{}\r]]\n", exec_call("2")),
        "{\"method\":\"ping\",\"method\":\"x\"}\n".to_string(),
    ];
    let files: Vec<std::path::PathBuf> = bad
        .iter()
        .enumerate()
        .map(|(k, b)| {
            let f = dir.path().join(format!("received-{k}.bin"));
            std::fs::write(&f, b).unwrap();
            f
        })
        .collect();
    let pairs: Vec<(&Path, &Path)> = files
        .iter()
        .map(|f| (f.as_path(), decisions.as_path()))
        .collect();
    let (status, report) = checker(&pairs);
    assert_eq!(status, Some(1), "{report}");
    for k in 0..bad.len() {
        assert!(report.contains(&format!("[{k}] FAIL")), "{k}: {report}");
    }
}

/// The policy the Go differential runs under: a `within` constraint on `read_file.path`, a
/// schema on `echo.text`, `exec` denied.
const GO_POLICY: &str = r#"version: "1"
name: differential
allow: ["*"]
deny: ["exec"]
constraints:
  - tool: read_file
    params:
      path: { within: "/workspace" }
schemas:
  echo: { type: object, properties: { text: { type: string, maxLength: 8 } } }
"#;

/// Lenient-parser attacks (SPEC §3 item 6) and `within` traversal, each with whether the line
/// may reach the server. Ids are unique per message.
fn lenient_corpus() -> Vec<(String, bool)> {
    let t = |id: u32, params: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
    };
    let mut v: Vec<(String, bool)> = vec![
        (INIT.to_string(), true),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
            true,
        ),
        // Legitimate calls.
        (t(101, r#"{"name":"echo","arguments":{"text":"hi"}}"#), true),
        (t(102, r#"{"name":"read_file","arguments":{"path":"/workspace/a"}}"#), true),
        (t(103, r#"{"name":"read_file","arguments":{"path":"/workspace/./b/../c"}}"#), true),
        (t(104, r#"{"name":"ech\u006f","arguments":{"text":"x"}}"#), true),
        (t(105, r#"{"name":"echo","arguments":{"Method":1,"Name":2,"nested":{"PATH":3}}}"#), true),
        (
            r#"{"jsonrpc":"2.0","id":106,"method":"ping","params":{"Name":"exec"}}"#.to_string(),
            true,
        ),
        (t(107, r#"{"name":"read_file","arguments":{"path":"file:///workspace/d"}}"#), true),
        // within: traversal and look-alikes.
        (t(110, r#"{"name":"read_file","arguments":{"path":"/workspace/../etc/passwd"}}"#), false),
        (
            t(111, r#"{"name":"read_file","arguments":{"path":"file:///workspace/%2e%2e/etc/passwd"}}"#),
            false,
        ),
        (t(112, r#"{"name":"read_file","arguments":{"path":"/workspacex/a"}}"#), false),
        (t(113, r#"{"name":"read_file","arguments":{"path":"workspace/a"}}"#), false),
        (t(114, r#"{"name":"read_file","arguments":{"path":"~/a"}}"#), false),
        (t(115, r#"{"name":"read_file","arguments":{"path":""}}"#), false),
        (t(116, r#"{"name":"read_file","arguments":{"path":"/workspace/a\u0000"}}"#), false),
        // Envelope members: case, fold and NUL variants.
        (
            r#"{"jsonrpc":"2.0","id":120,"Method":"tools/call","params":{"name":"exec"}}"#.to_string(),
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":121,"method":"ping","METHOD":"tools/call","params":{"name":"exec"}}"#.to_string(),
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":122,"method":"ping","method\u0000":"tools/call","params":{"name":"exec"}}"#.to_string(),
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":123,"method":"tools/call","params":{"name":"echo"},"paramſ":{"name":"exec"}}"#.to_string(),
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":124,"method":"tools/call","params":{"name":"echo"},"params\u0000\u0000":{"name":"exec"}}"#.to_string(),
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":125,"method":"tools/call","Params":{"name":"exec"}}"#.to_string(),
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","ID":126,"id":127,"method":"tools/call","params":{"name":"echo"}}"#.to_string(),
            false,
        ),
        // tools/call params members.
        (t(130, r#"{"name":"echo","Name":"exec"}"#), false),
        (t(131, r#"{"Name":"exec"}"#), false),
        (t(132, r#"{"name":"echo","name\u0000":"exec"}"#), false),
        (t(133, r#"{"name\u0000":"exec"}"#), false),
        (
            t(134, r#"{"name":"read_file","arguments":{"path":"/workspace/a"},"Arguments":{"path":"/etc/passwd"}}"#),
            false,
        ),
        (t(135, r#"{"name":"read_file","Arguments":{"path":"/etc/passwd"}}"#), false),
        (t(136, r#"{"name":"echo","_META":{"x":1}}"#), false),
        // Constrained and schema arguments.
        (
            t(140, r#"{"name":"read_file","arguments":{"path":"/workspace/a","PATH":"/etc/passwd"}}"#),
            false,
        ),
        (t(141, r#"{"name":"read_file","arguments":{"PATH":"/etc/passwd"}}"#), false),
        (t(142, r#"{"name":"read_file","arguments":{"Path":"/etc/passwd"}}"#), false),
        (t(143, r#"{"name":"read_file","arguments":{"path\u0000":"/etc/passwd"}}"#), false),
        (t(144, r#"{"name":"echo","arguments":{"TEXT":"far longer than eight"}}"#), false),
        (t(145, r#"{"name":"echo","arguments":{"text":"a","Text":"far longer than eight"}}"#), false),
        (t(146, r#"{"name":"echo","arguments":{"k":1,"K":2}}"#), false),
        (t(147, r#"{"name":"echo","arguments":{"ſ":1,"s":2}}"#), false),
        (t(148, r#"{"name":"exec"}"#), false),
        // Batches: allowed (forwarded), and refused whole.
        (
            format!(
                "[{},{}]",
                t(150, r#"{"name":"echo","arguments":{"text":"b"}}"#),
                t(151, r#"{"name":"read_file","arguments":{"path":"/workspace/e"}}"#)
            ),
            true,
        ),
        (
            format!(
                "[{},{}]",
                t(152, r#"{"name":"echo","arguments":{"text":"b"}}"#),
                t(153, r#"{"name":"read_file","arguments":{"path":"/workspace/../etc"}}"#)
            ),
            false,
        ),
        (
            format!(
                r#"[{},{{"jsonrpc":"2.0","id":155,"METHOD":"tools/call","method":"ping","params":{{"name":"exec"}}}}]"#,
                t(154, r#"{"name":"echo"}"#)
            ),
            false,
        ),
    ];
    // Every ASCII case variant of `method` alone, and with the real member.
    for (k, key) in ["mEthod", "metHod", "METHOD", "Method\u{0}"]
        .iter()
        .enumerate()
    {
        let key = key.replace('\0', "\\u0000");
        v.push((
            format!(
                r#"{{"jsonrpc":"2.0","id":{},"{key}":"tools/call","params":{{"name":"exec"}}}}"#,
                160 + k
            ),
            false,
        ));
    }
    v
}

fn message_ids(line: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let items = match v {
        serde_json::Value::Array(a) => a,
        other => vec![other],
    };
    items
        .iter()
        .filter_map(|m| m.get("id").cloned().or_else(|| m.get("ID").cloned()))
        .collect()
}

/// SPEC §3 item 6 and §11: a real Go `encoding/json` server (decoding into tagged structs like
/// mcp-go), Python's `json` and the MCP Python SDK see, for every line the wrapper forwards, the
/// same method, tool name and constrained arguments the policy judged; no refused line reaches
/// the server.
#[test]
fn go_python_and_the_sdk_see_what_the_policy_judged() {
    if !can_run(
        "differential::go_python_and_the_sdk_see_what_the_policy_judged",
        &[Needs::Go, Needs::PythonVenv],
    ) {
        return;
    }
    let dir = tempdir();
    let server = dir.path().join("go-server");
    go_build("go-server", &server);
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, GO_POLICY).unwrap();
    let cap = dir.path().join("cap");
    let record = dir.path().join("record.ndjson");
    let received = dir.path().join("received.bin");
    let corpus = lenient_corpus();
    let mut input = Vec::new();
    for (line, _) in &corpus {
        input.extend_from_slice(line.as_bytes());
        input.push(b'\n');
    }
    let opts = [
        "--policy".to_string(),
        policy.display().to_string(),
        "--event-source".into(),
        "assay://test/session".into(),
        "--capture-dir".into(),
        cap.display().to_string(),
    ];
    let r = run(
        &wrap_args(
            &strs(&opts),
            &[
                &server.display().to_string(),
                &record.display().to_string(),
                &received.display().to_string(),
            ],
        ),
        &input,
    );
    r.expect_status(0);
    let report = r.report();

    // What Go executed, by id.
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut go_by_id = std::collections::HashMap::new();
    for rec in &records {
        assert!(
            rec.get("error").is_none(),
            "Go failed to decode: {rec}\n{report}"
        );
        if !rec["id"].is_null() {
            assert!(
                go_by_id
                    .insert(rec["id"].to_string(), rec.clone())
                    .is_none(),
                "Go ran id {} twice\n{report}",
                rec["id"]
            );
        }
    }
    let decisions = decision_lines(&cap.join("decisions.ndjson"));
    let allowed: std::collections::HashMap<String, &serde_json::Value> = decisions
        .iter()
        .filter(|d| d["data"]["decision"] == "allow")
        .map(|d| {
            (
                d["data"]["tool_call_id"].as_str().unwrap_or("").to_string(),
                d,
            )
        })
        .collect();
    let responses: std::collections::HashMap<String, serde_json::Value> = r
        .lines()
        .into_iter()
        .flat_map(|v| match v {
            serde_json::Value::Array(a) => a,
            other => vec![other],
        })
        .map(|v| (v["id"].to_string(), v))
        .collect();

    let mut forwarded_calls = 0;
    for (line, forward) in &corpus {
        let ids = message_ids(line);
        for id in &ids {
            let key = id.to_string();
            let go = go_by_id.get(&key);
            if !forward {
                assert!(
                    go.is_none(),
                    "refused line reached Go: {line}\n{go:?}\n{report}"
                );
                continue;
            }
            let go =
                go.unwrap_or_else(|| panic!("forwarded line did not reach Go: {line}\n{report}"));
            // The policy's view: exact keys (the line has no variants, or it was refused).
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let msg = match &v {
                serde_json::Value::Array(a) => a.iter().find(|m| m["id"] == *id).unwrap().clone(),
                other => other.clone(),
            };
            assert_eq!(go["method"], msg["method"], "method of {line}");
            if msg["method"] == "tools/call" {
                forwarded_calls += 1;
                let name = &msg["params"]["name"];
                assert_eq!(&go["tool"], name, "tool of {line}");
                let d = allowed
                    .get(&key)
                    .unwrap_or_else(|| panic!("no allow decision for {line}"));
                assert_eq!(&d["data"]["tool"], name, "decision tool of {line}");
                let args = &msg["params"]["arguments"];
                for (field, map, strct) in [
                    ("path", "path_map", "path_struct"),
                    ("text", "text_map", "text_struct"),
                ] {
                    let policy_saw = args.get(field).cloned().unwrap_or(serde_json::Value::Null);
                    let go_map = go.get(map).cloned().unwrap_or(serde_json::Value::Null);
                    let go_struct = go.get(strct).cloned().unwrap_or(serde_json::Value::Null);
                    assert_eq!(go_map, policy_saw, "{field} (map) of {line}");
                    if policy_saw.is_string() || policy_saw.is_null() {
                        assert_eq!(go_struct, policy_saw, "{field} (struct) of {line}");
                    }
                }
            }
        }
        if !forward {
            // The client got an answer for every refused request.
            for id in &ids {
                if line.contains(r#""ID":"#) {
                    continue;
                }
                let resp = responses.get(&id.to_string());
                let refused = resp
                    .is_some_and(|r| r.get("error").is_some() || r["result"]["isError"] == true);
                let line_error = responses
                    .get("null")
                    .is_some_and(|r| r["error"]["code"] == -32700);
                assert!(
                    refused || line_error,
                    "no refusal for id {id} of {line}\n{report}"
                );
            }
        }
    }
    assert_eq!(forwarded_calls, 8, "{report}");

    // Python json, strict json and the MCP SDK read the bytes Go received the same way.
    let (status, py) = checker(&[(&received, &cap.join("decisions.ndjson"))]);
    assert_eq!(status, Some(0), "{py}\n{report}");
    assert!(py.contains("8 tools/call matched"), "{py}\n{report}");
}

/// The Go server is a real lenient parser: fed directly (no wrapper), the attack lines run the
/// tool and arguments the wrapper must refuse. This is what makes the differential above able to
/// fail.
#[test]
fn the_go_server_reads_keys_like_mcp_go() {
    if !can_run(
        "differential::the_go_server_reads_keys_like_mcp_go",
        &[Needs::Go],
    ) {
        return;
    }
    let dir = tempdir();
    let server = dir.path().join("go-server");
    go_build("go-server", &server);
    let record = dir.path().join("record.ndjson");
    let received = dir.path().join("received.bin");
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"exec"}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"ping","METHOD":"tools/call","params":{"name":"exec"}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","Name":"exec"}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo"},"paramſ":{"name":"exec"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/workspace/a","PATH":"/etc/passwd"}}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/workspace/a"},"Arguments":{"path":"/etc/passwd"}}}"#,
    ];
    let r = run_program(
        &server.display().to_string(),
        &[record.display().to_string(), received.display().to_string()],
        &script(&lines),
    );
    assert_eq!(r.status, Some(0), "{}", r.report());
    let got: Vec<serde_json::Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tool = |i: usize| got[i]["tool"].as_str().unwrap_or("-").to_string();
    for i in 0..4 {
        assert_eq!(got[i]["method"], "tools/call", "{}", lines[i]);
        assert_eq!(tool(i), "exec", "{}", lines[i]);
    }
    assert_eq!(got[4]["path_struct"], "/etc/passwd");
    assert_eq!(got[4]["path_map"], "/workspace/a");
    assert_eq!(got[5]["path_struct"], "/etc/passwd");
    assert_eq!(got[5]["path_map"], "/etc/passwd");
}

/// Every spelling of `word` whose characters are drawn from their lenient folding classes (SPEC
/// §3 item 6; the product's table, as `lenient_fold` checks it against Go).
fn fold_spellings(word: &str) -> Vec<String> {
    let table = assay::fuzzing::fold_table();
    let mut spellings = vec![String::new()];
    for c in word.chars() {
        let rep = assay::fuzzing::fold(c) as u32;
        let mut members: Vec<char> = table
            .iter()
            .filter(|&&(_, to)| to == rep)
            .filter_map(|&(from, _)| char::from_u32(from))
            .collect();
        members.push(assay::fuzzing::fold(c));
        spellings = spellings
            .iter()
            .flat_map(|s| members.iter().map(move |m| format!("{s}{m}")))
            .collect();
    }
    spellings
}

/// Issue 46 item 3: redaction folds like §3. Every spelling of `secret` and `token` from their
/// folding classes (long s, Kelvin sign, case), with trailing NULs, and look-alikes that are
/// other keys, is sent as a `tools/call` argument through the wrapper (`record_arguments`,
/// `redact: [secret, "*token*"]`) to the real Go `encoding/json` server, which binds them into
/// a struct with fields tagged `secret` and `token` (what a typed mcp-go handler sees). No value
/// Go bound to a redacted name may appear in the decision's recorded `arguments`; a key the
/// lenient normalization does not make `secret`/`token` stays in clear.
#[test]
fn go_binds_no_argument_the_log_shows_in_clear() {
    if !can_run(
        "differential::go_binds_no_argument_the_log_shows_in_clear",
        &[Needs::Go],
    ) {
        return;
    }
    let dir = tempdir();
    let server = dir.path().join("go-server");
    go_build("go-server", &server);
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "version: \"1\"\nallow: [\"*\"]\nrecord_arguments: true\nredact: [\"secret\", \"*token*\"]\n",
    )
    .unwrap();
    let cap = dir.path().join("cap");
    let record = dir.path().join("record.ndjson");
    let received = dir.path().join("received.bin");

    // (key, whether the lenient normalization makes it a redacted name).
    let mut keys: Vec<(String, bool)> = Vec::new();
    for word in ["secret", "token"] {
        for s in fold_spellings(word) {
            keys.push((format!("{s}\u{0}"), true));
            keys.push((s, true));
        }
    }
    for kept in [
        "secrets",
        "se\u{0}cret",
        "\u{0}secret",
        "secret ",
        "\u{455}ecret",
        "secre\u{442}",
        "ｓｅｃｒｅｔ",
        "tokn",
        "t\u{43e}ken",
    ] {
        keys.push((kept.to_string(), false));
    }
    let mut input = Vec::new();
    input.extend_from_slice(INIT.as_bytes());
    input.push(b'\n');
    for (i, (key, _)) in keys.iter().enumerate() {
        let mut args = serde_json::Map::new();
        args.insert(key.clone(), serde_json::json!(format!("V4LUE-{i}")));
        args.insert("path".into(), serde_json::json!("kept"));
        input.extend_from_slice(
            call(
                1000 + i as u64,
                "echo",
                &serde_json::Value::Object(args).to_string(),
            )
            .as_bytes(),
        );
        input.push(b'\n');
    }
    let opts = [
        "--policy".to_string(),
        policy.display().to_string(),
        "--event-source".into(),
        "assay://test/session".into(),
        "--capture-dir".into(),
        cap.display().to_string(),
    ];
    let r = run(
        &wrap_args(
            &strs(&opts),
            &[
                &server.display().to_string(),
                &record.display().to_string(),
                &received.display().to_string(),
            ],
        ),
        &input,
    );
    r.expect_status(0);
    let report = r.report();
    let mut go_by_id = std::collections::HashMap::new();
    for line in std::fs::read_to_string(&record).unwrap().lines() {
        let rec: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(rec.get("error").is_none(), "Go failed: {rec}\n{report}");
        go_by_id.insert(rec["id"].to_string(), rec);
    }
    let recorded: std::collections::HashMap<String, String> =
        decision_lines(&cap.join("decisions.ndjson"))
            .iter()
            .filter(|d| d["type"] == "assay.tool.decision")
            .map(|d| {
                (
                    d["data"]["tool_call_id"].as_str().unwrap_or("").to_string(),
                    d["data"]["arguments"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
    let mut go_bound = 0;
    let mut go_bound_non_ascii = 0;
    for (i, (key, redacted)) in keys.iter().enumerate() {
        let id = (1000 + i).to_string();
        let value = format!("V4LUE-{i}");
        let go = go_by_id
            .get(&id)
            .unwrap_or_else(|| panic!("call {id} ({key:?}) did not reach Go\n{report}"));
        let text = recorded
            .get(&id)
            .unwrap_or_else(|| panic!("no decision for {id} ({key:?})\n{report}"));
        let args: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(args["path"], "kept", "{key:?}: {text}");
        let bound = [&go["secret_struct"], &go["token_struct"]]
            .iter()
            .any(|v| v.as_str() == Some(value.as_str()));
        if bound {
            go_bound += 1;
            go_bound_non_ascii += usize::from(!key.is_ascii());
            assert!(
                !text.contains(&value),
                "Go bound {key:?} to a redacted name, the log shows it: {text}"
            );
        }
        let want = if *redacted {
            serde_json::json!("[redacted]")
        } else {
            serde_json::json!(value)
        };
        assert_eq!(args[key.as_str()], want, "{key:?}: {text}");
    }
    // Go really folds: every NUL-free spelling binds (96 of secret, 48 of token), the long s
    // and Kelvin sign ones among them; the NUL-suffixed ones (segmentio/encoding's reading, not
    // encoding/json's) and the look-alikes do not.
    let folded = keys.iter().filter(|(k, r)| *r && !k.ends_with('\0'));
    assert_eq!(go_bound, folded.clone().count(), "{report}");
    assert_eq!(go_bound, 96 + 48);
    assert_eq!(
        go_bound_non_ascii,
        folded.filter(|(k, _)| !k.is_ascii()).count()
    );
    assert!(go_bound_non_ascii >= 32 + 16, "{go_bound_non_ascii}");
}
