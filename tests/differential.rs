//! Parser differential (SPEC §11): for every client line the wrapper forwards, Python's `json`
//! (with and without duplicate-key detection) and the official MCP Python SDK's message parser
//! must agree that it is not a `tools/call` unless the wrapper logged an `allow` decision for it.
//! A hostile corpus goes through the real wrapper in front of the recording server; then
//! tests/fixtures/differential.py reads the recorded bytes the way the SDK's stdio transport does.
//!
//! Python: `$ASSAY_TEST_PYTHON` (scripts/test.sh points it at the repo .venv, which has `mcp`),
//! else `python3` (then only the `json` checks run if `mcp` is not importable).

use std::path::Path;
use std::process::Command;

use crate::util::*;

fn python() -> String {
    std::env::var("ASSAY_TEST_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

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
