//! The client-line differential for the governed methods besides `tools/call` (SPEC §5.2,
//! §3 item 6, §11): a hostile corpus of `resources/read`, `resources/subscribe` and
//! `prompts/get` lines goes through the real wrapper, under a policy with `resources` and
//! `prompts`, in front of the Go server (tests/fixtures/go-server: `encoding/json` into tagged
//! structs, as mcp-go reads them), which records what it would run and every byte it received.
//! Then the received bytes are read by Python's `json` (with and without duplicate detection)
//! and the MCP Python SDK (tests/fixtures/governed_differential.py), and by the official
//! TypeScript SDKs' message and request schemas (tests/interop/client_line_differential.mjs).
//! No reader may run a read or prompt the reference policy denies, or any governed message
//! without the wrapper's `allow` decision for it; fed the corpus directly, every reader runs
//! denied ones, so the check can fail.
//!
//! Needs Go, node with tests/interop/node_modules, and the Python test venv; without them it is
//! skipped with one line (in CI it fails).

use std::path::Path;
use std::process::Command;

use crate::util::*;

/// The policy the wrapper runs under; tests/fixtures/governed_differential.py holds the same
/// rules as its reference.
const POLICY: &str = r#"version: "1"
name: governed-differential
allow: ["*"]
deny: ["exec"]
resources:
  allow: ["file:///workspace/**"]
  deny: ["file:///workspace/secret/**"]
prompts:
  allow: ["*"]
  deny: ["debug_*"]
"#;

/// What the wrapper must do with a corpus line.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    /// Forwarded byte-exact.
    Forward,
    /// Refused by the policy: never reaches the server; each request is answered with the
    /// policy-refusal error (-32010, or a refused tool result) under its own id.
    Refuse,
    /// Refused as malformed (a duplicate key, a lenient variant of a member name, a carriage
    /// return): never reaches the server; the line is answered with one -32700 error.
    Malformed,
}
use Expect::{Forward, Malformed, Refuse};

/// A request line of `method` with `id` (raw JSON) and `params` (raw JSON).
fn req(method: &str, id: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
}

/// A `resources/read` of `uri` (raw JSON string content, escapes allowed).
fn read(id: u32, uri: &str) -> String {
    req(
        "resources/read",
        &id.to_string(),
        &format!(r#"{{"uri":"{uri}"}}"#),
    )
}

/// A `prompts/get` of `name` (raw JSON string content).
fn prompt(id: u32, name: &str) -> String {
    req(
        "prompts/get",
        &id.to_string(),
        &format!(r#"{{"name":"{name}"}}"#),
    )
}

const SECRET: &str = "file:///workspace/secret/x";

/// The hostile corpus: lines that try to get a denied read or prompt past the policy, and
/// legitimate ones the readers must match to their decisions. Every id is unique.
fn corpus() -> Vec<(String, Expect)> {
    let o = |s: &str| s.to_string();
    let mut v: Vec<(String, Expect)> = vec![
        (o(INIT), Forward),
        (
            o(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Forward,
        ),
        // Legitimate reads and prompts.
        (read(201, "file:///workspace/a.txt"), Forward),
        (
            req(
                "resources/subscribe",
                "202",
                r#"{"uri":"file:///workspace/b"}"#,
            ),
            Forward,
        ),
        (prompt(203, "greeting"), Forward),
        (
            req(
                "prompts/get",
                "204",
                r#"{"name":"greeting","arguments":{"who":"x"}}"#,
            ),
            Forward,
        ),
        (read(205, "file:///workspace/./a/../b"), Forward),
        (
            req(
                "resources/read",
                r#""s206""#,
                r#"{"uri":"file:///workspace/c"}"#,
            ),
            Forward,
        ),
        (read(207, "file:///workspace/%61.txt"), Forward),
        (read(208, "file:///workspace/secretary/x"), Forward),
        (prompt(209, "DEBUG_x"), Forward),
        // Denied as written.
        (read(210, SECRET), Refuse),
        (
            req(
                "resources/subscribe",
                "211",
                &format!(r#"{{"uri":"{SECRET}"}}"#),
            ),
            Refuse,
        ),
        (prompt(212, "debug_dump"), Refuse),
        (read(213, "file:///etc/passwd"), Refuse),
        (
            req(
                "prompts/get",
                "214",
                r#"{"name":"debug_x","arguments":{"a":"b"}}"#,
            ),
            Refuse,
        ),
        // Escaped method names and keys.
        (
            req(
                r"resources\/read",
                "215",
                &format!(r#"{{"uri":"{SECRET}"}}"#),
            ),
            Refuse,
        ),
        (
            req(
                r"\u0072esources/read",
                "216",
                &format!(r#"{{"uri":"{SECRET}"}}"#),
            ),
            Refuse,
        ),
        (req(r"prompts\/get", "217", r#"{"name":"debug_x"}"#), Refuse),
        (
            req(r"prompts\u002fget", "218", r#"{"name":"debug\u005fx"}"#),
            Refuse,
        ),
        (
            req(
                "resources/read",
                "219",
                r#"{"\u0075ri":"file:///workspace/d"}"#,
            ),
            Forward,
        ),
        (
            req(
                "resources/read",
                "220",
                &format!(r#"{{"\u0075ri":"{SECRET}"}}"#),
            ),
            Refuse,
        ),
        (
            req("prompts/get", "221", r#"{"\u006eame":"debug_x"}"#),
            Refuse,
        ),
        (read(222, r"file:///workspace/secre\u0074/x"), Refuse),
        // Method names nobody reads as a governed method: not judged, forwarded.
        (
            req(
                "resources/read\\u0000",
                "223",
                &format!(r#"{{"uri":"{SECRET}"}}"#),
            ),
            Forward,
        ),
        (
            req("Resources/Read", "224", &format!(r#"{{"uri":"{SECRET}"}}"#)),
            Forward,
        ),
        (
            req(
                "ping",
                "225",
                &format!(r#"{{"uri":"{SECRET}","name":"debug_x"}}"#),
            ),
            Forward,
        ),
        // Lenient variants of the params members (Go matches keys case-insensitively with
        // Unicode folding, segmentio/encoding ignored trailing NULs).
        (
            req("resources/read", "230", &format!(r#"{{"URI":"{SECRET}"}}"#)),
            Malformed,
        ),
        (
            req("resources/read", "231", &format!(r#"{{"Uri":"{SECRET}"}}"#)),
            Malformed,
        ),
        (
            req(
                "resources/read",
                "232",
                &format!(r#"{{"uri\u0000":"{SECRET}"}}"#),
            ),
            Malformed,
        ),
        (
            req(
                "resources/read",
                "233",
                &format!(r#"{{"ur\u0130":"{SECRET}"}}"#),
            ),
            Malformed,
        ),
        (
            req(
                "resources/read",
                "234",
                &format!(r#"{{"uri":"file:///workspace/a","URI":"{SECRET}"}}"#),
            ),
            Malformed,
        ),
        (
            req(
                "resources/read",
                "235",
                &format!(r#"{{"uri":"file:///workspace/a","uri\u0000":"{SECRET}"}}"#),
            ),
            Malformed,
        ),
        (
            req(
                "resources/read",
                "236",
                r#"{"uri":"file:///workspace/a","_Meta":{}}"#,
            ),
            Malformed,
        ),
        (
            req("prompts/get", "237", r#"{"Name":"debug_x"}"#),
            Malformed,
        ),
        (
            req(
                "prompts/get",
                "238",
                r#"{"name":"greeting","NAME":"debug_x"}"#,
            ),
            Malformed,
        ),
        (
            req(
                "prompts/get",
                "239",
                r#"{"name":"greeting","name\u0000":"debug_x"}"#,
            ),
            Malformed,
        ),
        (
            req(
                "prompts/get",
                "240",
                r#"{"name":"greeting","argumentſ":{"a":"b"}}"#,
            ),
            Malformed,
        ),
        (
            req("prompts/get", "241", r#"{"name":"greeting","_META":{}}"#),
            Malformed,
        ),
        (
            req(
                "resources/read",
                "307",
                &format!(r#"{{"\u0055ri":"{SECRET}"}}"#),
            ),
            Malformed,
        ),
        // Keys a JavaScript reader might take for the prototype.
        (
            req(
                "resources/read",
                "308",
                &format!(r#"{{"__proto__":{{"uri":"{SECRET}"}}}}"#),
            ),
            Refuse,
        ),
        (
            req(
                "resources/read",
                "309",
                &format!(
                    r#"{{"uri":"file:///workspace/h","__proto__":{{"uri":"{SECRET}"}},"constructor":{{"uri":"{SECRET}"}}}}"#
                ),
            ),
            Forward,
        ),
        // Envelope variants.
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":242,"method":"resources/read","params":{{"uri":"file:///workspace/a"}},"paramſ":{{"uri":"{SECRET}"}}}}"#
            ),
            Malformed,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":243,"Method":"resources/read","params":{{"uri":"{SECRET}"}}}}"#
            ),
            Malformed,
        ),
        (
            o(
                r#"{"jsonrpc":"2.0","id":244,"method":"ping","METHOD":"prompts/get","params":{"name":"debug_x"}}"#,
            ),
            Malformed,
        ),
        // Duplicate keys.
        (
            req(
                "resources/read",
                "245",
                &format!(r#"{{"uri":"file:///workspace/a","uri":"{SECRET}"}}"#),
            ),
            Malformed,
        ),
        (
            req(
                "resources/read",
                "246",
                &format!(r#"{{"uri":"file:///workspace/a","\u0075ri":"{SECRET}"}}"#),
            ),
            Malformed,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":247,"method":"ping","method":"resources/read","params":{{"uri":"{SECRET}"}}}}"#
            ),
            Malformed,
        ),
        (
            req(
                "prompts/get",
                "248",
                r#"{"name":"greeting","name":"debug_x"}"#,
            ),
            Malformed,
        ),
        // Batches: all allowed (forwarded), one denied (refused whole).
        (
            format!(
                "[{},{}]",
                read(250, "file:///workspace/e"),
                prompt(251, "greeting")
            ),
            Forward,
        ),
        (
            format!(
                "[{},{}]",
                read(252, "file:///workspace/e"),
                read(253, SECRET)
            ),
            Refuse,
        ),
        (
            format!("[{},{}]", prompt(254, "greeting"), prompt(255, "debug_x")),
            Refuse,
        ),
        (
            format!(
                r#"[{},{{"jsonrpc":"2.0","id":257,"METHOD":"resources/read","method":"ping","params":{{"uri":"{SECRET}"}}}}]"#,
                prompt(256, "greeting")
            ),
            Malformed,
        ),
        // A nested batch is no message to anyone.
        (format!("[[{}]]", read(258, SECRET)), Forward),
        // Percent-encoding, dot segments, scheme case, authorities.
        (read(260, "file:///workspace/%73ecret/x"), Refuse),
        (read(261, "file:///workspace/a/../secret/x"), Refuse),
        (read(262, "file:///workspace/./secret/x"), Refuse),
        (read(263, "FILE:///workspace/secret/x"), Refuse),
        (read(264, "fIlE:///workspace/secret/x"), Refuse),
        (read(265, "file://localhost/workspace/secret/x"), Refuse),
        (read(266, "file:/workspace/secret/x"), Refuse),
        (read(267, "file:///workspace//secret/x"), Refuse),
        (read(268, "file:///workspace/secret%2Fx"), Refuse),
        (read(269, "file:///workspace%2Fsecret/x"), Refuse),
        (read(270, "file:///workspace/a/%2e%2e/secret/x"), Refuse),
        (read(271, "file:///workspace/%2E/secret/x"), Refuse),
        (read(272, "file:///workspace/../etc/passwd"), Refuse),
        (read(273, "file:///workspace/a/../../etc/passwd"), Refuse),
        (read(274, "file:///workspace/secret/x?y"), Refuse),
        (read(275, "file:///workspace/a#/../../secret/x"), Refuse),
        (read(276, r"file:///workspace\\secret\\x"), Refuse),
        (read(277, "file://evil/workspace/a"), Refuse),
        (read(278, "https://example.com/workspace/a"), Refuse),
        (read(279, "/workspace/a"), Refuse),
        // Control characters, escaped and percent-encoded.
        (read(280, r"file:///workspace/.\t./secret/x"), Refuse),
        (read(281, r"file:///workspace/sec\nret/x"), Refuse),
        (read(282, r"file:///workspace/secret/x\u0000"), Refuse),
        (read(283, "file:///workspace/%00/../secret/x"), Refuse),
        (read(284, "file:///workspace/a%09/../secret/x"), Refuse),
        (read(285, r"file:///workspace/a\u007f/../secret/x"), Refuse),
        (prompt(286, r"debug_x\u0000"), Refuse),
        (
            read(303, "file:///workspace/a/%c0%ae%c0%ae/secret/x"),
            Refuse,
        ),
        (read(304, r"file:\/\/\/workspace\/secret\/x"), Refuse),
        (prompt(305, "debug_"), Refuse),
        (
            req(
                "resources/subscribe",
                "306",
                &format!(r#"{{"URI":"{SECRET}"}}"#),
            ),
            Malformed,
        ),
        // Params of the wrong shape.
        (
            req("resources/read", "287", &format!(r#"["{SECRET}"]"#)),
            Refuse,
        ),
        (
            req("resources/read", "288", &format!(r#""{SECRET}""#)),
            Refuse,
        ),
        (
            req(
                "resources/read",
                "289",
                &format!(r#"{{"uri":["{SECRET}"]}}"#),
            ),
            Refuse,
        ),
        (req("resources/read", "290", r#"{"uri":null}"#), Refuse),
        (
            o(r#"{"jsonrpc":"2.0","id":291,"method":"resources/read"}"#),
            Refuse,
        ),
        (req("prompts/get", "292", r#"{"name":["debug_x"]}"#), Refuse),
        // Ids of another type: a denied read under a string id equal to an allowed one's
        // number, and ids no SDK accepts.
        (read(293, "file:///workspace/f"), Forward),
        (
            req(
                "resources/read",
                r#""293""#,
                &format!(r#"{{"uri":"{SECRET}"}}"#),
            ),
            Refuse,
        ),
        (
            req("resources/read", "2.5", &format!(r#"{{"uri":"{SECRET}"}}"#)),
            Refuse,
        ),
        (
            req(
                "resources/read",
                "null",
                &format!(r#"{{"uri":"{SECRET}"}}"#),
            ),
            Refuse,
        ),
        (
            req(
                "resources/read",
                "true",
                &format!(r#"{{"uri":"{SECRET}"}}"#),
            ),
            Refuse,
        ),
        (
            req(
                "resources/read",
                "[294]",
                &format!(r#"{{"uri":"{SECRET}"}}"#),
            ),
            Refuse,
        ),
        (
            req("prompts/get", r#"{"a":295}"#, r#"{"name":"debug_x"}"#),
            Refuse,
        ),
        // Notifications: judged too (a denied one is dropped without an answer).
        (
            format!(
                r#"{{"jsonrpc":"2.0","method":"resources/read","params":{{"uri":"{SECRET}"}}}}"#
            ),
            Refuse,
        ),
        (
            o(
                r#"{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"file:///workspace/g"}}"#,
            ),
            Forward,
        ),
        // A denied tools/call beside them (the first differential covers tools/call in depth).
        (
            req("tools/call", "296", r#"{"name":"exec","arguments":{}}"#),
            Refuse,
        ),
        (
            req("tools/call", "297", r#"{"name":"echo","arguments":{}}"#),
            Forward,
        ),
    ];
    // A read hidden between carriage returns: a universal-newline reader splits the line there.
    v.push((
        format!(
            r#"{{"jsonrpc":"2.0","id":298,"method":"ping","params":{{"x":{}}}}}"#,
            format_args!("\r{}\r", read(299, SECRET))
        ),
        Malformed,
    ));
    v
}

/// Byte-level lines (not UTF-8, a byte order mark): [`Malformed`].
fn corpus_bytes() -> Vec<Vec<u8>> {
    vec![
        b"{\"jsonrpc\":\"2.0\",\"id\":300,\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///workspace/secret/x\xff\"}}".to_vec(),
        b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":301,\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///workspace/secret/x\"}}".to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":302,\"method\":\"prompts/get\",\"params\":{\"name\":\"debug_\xc0\xafx\"}}".to_vec(),
    ]
}

fn input() -> Vec<u8> {
    let mut input = Vec::new();
    for (line, _) in corpus() {
        input.extend_from_slice(line.as_bytes());
        input.push(b'\n');
    }
    for line in corpus_bytes() {
        input.extend_from_slice(&line);
        input.push(b'\n');
    }
    input
}

/// The TypeScript readers' records of `received` (tests/interop/client_line_differential.mjs),
/// written to `out`. Callers check `can_run(…, &[Needs::Node])` first.
pub(crate) fn typescript_reader(received: &Path, out: &Path) {
    let run = Command::new("node")
        .arg(root().join("tests/interop/client_line_differential.mjs"))
        .arg(received)
        .current_dir(root().join("tests/interop"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run node: {e}"));
    assert!(
        run.status.success(),
        "client_line_differential.mjs failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::write(out, &run.stdout).unwrap();
}

/// Runs tests/fixtures/governed_differential.py over `received` and `decisions` with the
/// TypeScript records and, when given, the Go server's record; returns its status and output.
pub(crate) fn checker(
    received: &Path,
    decisions: &Path,
    typescript: &Path,
    go: Option<&Path>,
) -> (Option<i32>, String) {
    let mut cmd = Command::new(python());
    cmd.arg(root().join("tests/fixtures/governed_differential.py"))
        .arg(received)
        .arg(decisions)
        .arg(format!("typescript={}", typescript.display()));
    if let Some(go) = go {
        cmd.arg(format!("go={}", go.display()));
    }
    let out = cmd.output().expect("run the governed differential checker");
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn ids_of(line: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let items = match v {
        serde_json::Value::Array(a) => a,
        other => vec![other],
    };
    items.iter().filter_map(|m| m.get("id").cloned()).collect()
}

const NEEDS: [Needs; 3] = [Needs::Go, Needs::Node, Needs::PythonVenv];

/// SPEC §5.2, §3 item 6, §11: through the wrapper, no reader — Python `json` (strict and
/// plain), the MCP Python SDK, the TypeScript SDKs 1.x and 2.x, Go `encoding/json` as mcp-go —
/// runs a `resources/read`, `resources/subscribe` or `prompts/get` the policy refused, and each
/// one it runs has its `allow` decision.
#[test]
fn every_reader_sees_reads_and_prompts_as_the_policy_judged() {
    if !can_run(
        "governed_differential::every_reader_sees_reads_and_prompts_as_the_policy_judged",
        &NEEDS,
    ) {
        return;
    }
    let dir = tempdir();
    let server = dir.path().join("go-server");
    go_build("go-server", &server);
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let cap = dir.path().join("cap");
    let record = dir.path().join("record.ndjson");
    let received = dir.path().join("received.bin");
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
        &input(),
    );
    r.expect_status(0);
    let report = r.report();

    let ts = dir.path().join("typescript.ndjson");
    typescript_reader(&received, &ts);
    let (status, out) = checker(&received, &cap.join("decisions.ndjson"), &ts, Some(&record));
    assert_eq!(status, Some(0), "{out}\n{report}");
    // Every reader ran the allowed messages, each with its decision: 14 requests of the governed
    // methods (two of them in a batch), one allowed notification (the TypeScript SDKs run
    // request handlers only) and one tools/call.
    for (reader, n) in [
        ("strict", 16),
        ("json", 16),
        ("sdk", 16),
        ("typescript-v1", 15),
        ("typescript-v2", 15),
        ("go", 16),
    ] {
        assert!(
            out.contains(&format!(" {reader} {n},")) || out.contains(&format!(" {reader} {n} (")),
            "{reader} should match {n}: {out}\n{report}"
        );
    }

    // The wrapper did what each line asks: the forwarded ones reached the server byte-exact
    // and in order, the refused ones did not.
    let got = std::fs::read(&received).unwrap();
    let expected: Vec<u8> = corpus()
        .into_iter()
        .filter(|(_, e)| *e == Forward)
        .flat_map(|(l, _)| l.into_bytes().into_iter().chain(*b"\n"))
        .collect();
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&expected),
        "{report}"
    );
    // Every refused request was answered under its id, and every malformed line with one
    // -32700 error of the wrapper's (the Go server answers the nested batch with its own).
    let responses: Vec<serde_json::Value> = r
        .lines()
        .into_iter()
        .flat_map(|v| match v {
            serde_json::Value::Array(a) => a,
            other => vec![other],
        })
        .collect();
    let parse_errors = responses
        .iter()
        .filter(|v| {
            v["id"].is_null()
                && v["error"]["code"] == -32700
                && v["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Parse error"))
        })
        .count();
    let malformed = corpus().iter().filter(|(_, e)| *e == Malformed).count() + corpus_bytes().len();
    assert_eq!(parse_errors, malformed, "{report}");
    for (line, expect) in corpus() {
        if expect != Refuse {
            continue;
        }
        for id in ids_of(&line) {
            let answered = responses.iter().any(|v| {
                v["id"] == id && (v["error"]["code"] == -32010 || v["result"]["isError"] == true)
            });
            assert!(answered, "no refusal for id {id} of {line}\n{report}");
        }
    }
}

/// Fed the corpus directly (no wrapper, an empty decision log), every reader runs reads and
/// prompts the policy denies: the differential above can fail.
#[test]
fn without_the_wrapper_every_reader_runs_denied_reads_and_prompts() {
    if !can_run(
        "governed_differential::without_the_wrapper_every_reader_runs_denied_reads_and_prompts",
        &NEEDS,
    ) {
        return;
    }
    let dir = tempdir();
    let server = dir.path().join("go-server");
    go_build("go-server", &server);
    let record = dir.path().join("record.ndjson");
    let received = dir.path().join("received.bin");
    let r = run_program(
        &server.display().to_string(),
        &[record.display().to_string(), received.display().to_string()],
        &input(),
    );
    assert_eq!(r.status, Some(0), "{}", r.report());
    let decisions = dir.path().join("decisions.ndjson");
    std::fs::write(&decisions, b"").unwrap();
    let ts = dir.path().join("typescript.ndjson");
    typescript_reader(&received, &ts);
    let (status, out) = checker(&received, &decisions, &ts, Some(&record));
    assert_eq!(status, Some(1), "{out}");
    for reader in [
        "strict",
        "json",
        "sdk",
        "typescript-v1",
        "typescript-v2",
        "go",
    ] {
        assert!(
            out.contains(&format!("[{reader}] FAIL: "))
                && out.contains(&format!(": {reader} runs a denied")),
            "{reader} ran no denied message directly: {out}"
        );
    }
    // Go reads the lenient variants the wrapper refuses as the member itself.
    for (method, target, id) in [
        ("resources/read", SECRET, 230),
        ("resources/read", SECRET, 231),
        ("prompts/get", "debug_x", 237),
        ("prompts/get", "debug_x", 238),
    ] {
        let seen = format!("go runs a denied {method} of '{target}' (id '{id}')");
        assert!(out.contains(&seen), "{seen}: {out}");
    }
}

/// A `deny` pattern `file:///workspace/secret/**` refuses the directory it names as well as what
/// is inside: `file:///workspace/secret/`, `…/secret`, `…/secret/.` and `…/secret/x/..` all
/// normalize to `file:///workspace/secret`, and a server reading that URI would list the denied
/// directory. (A pattern ending in `/**` matches what it names, as `within` counts its root as
/// inside; `src/policy/uri_glob.rs`.)
#[test]
fn a_denied_directory_is_not_read_by_its_own_uri() {
    if !can_run(
        "governed_differential::a_denied_directory_is_not_read_by_its_own_uri",
        &[Needs::Go],
    ) {
        return;
    }
    let dir = tempdir();
    let server = dir.path().join("go-server");
    go_build("go-server", &server);
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let record = dir.path().join("record.ndjson");
    let received = dir.path().join("received.bin");
    let uris = [
        "file:///workspace/secret/",
        "file:///workspace/secret",
        "file:///workspace/secret/.",
        "file:///workspace/secret/x/..",
    ];
    let lines: Vec<String> = uris
        .iter()
        .zip(400..)
        .map(|(uri, id)| read(id, uri))
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let r = run(
        &wrap_args(
            &["--policy", &policy.display().to_string()],
            &[
                &server.display().to_string(),
                &record.display().to_string(),
                &received.display().to_string(),
            ],
        ),
        &script(&refs),
    );
    r.expect_status(0);
    let ran = std::fs::read_to_string(&record).unwrap_or_default();
    assert!(ran.is_empty(), "the server read:\n{ran}\n{}", r.report());
}
