//! `assay capture export` (SPEC §10): the real binary exporting captures written by real
//! wrapped sessions — flat rows (`ndjson`) and OTLP/JSON spans (`otlp-json`) — and the live
//! exporter of `assay mcp wrap --otlp-endpoint` against an OTLP/HTTP receiver run by the test
//! that answers, refuses (500, 429), never answers, or is not there; in every case the client's
//! bytes, the exit status and the capture are those of a session without the exporter.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use serde_json::{Value, json};

use crate::util::*;

/// The ndjson columns, in order (docs/export.md).
const COLUMNS: &[&str] = &[
    "capture",
    "verdict",
    "session_id",
    "server_id",
    "seq",
    "time",
    "event_type",
    "method",
    "direction",
    "name",
    "request_id",
    "decision",
    "reason_code",
    "matched_rule",
    "enforced",
    "policy_sha256",
    "arguments_sha256",
    "params_sha256",
    "definition_sha256",
];

fn session() -> Vec<u8> {
    script(&[
        INIT,
        &call(2, "echo", r#"{"text":"a"}"#),
        &call(3, "exec", "{}"),
        &call(4, "echo", r#"{"text":"b"}"#),
    ])
}

/// One session wrapped into a new capture under `root`, labelled `label`; `extra` options.
fn launch(root: &Path, label: &str, extra: &[&str], input: &[u8]) -> Run {
    let mut opts = evidence_opts(&[
        "--capture-root".into(),
        root.display().to_string(),
        "--label".into(),
        label.into(),
    ]);
    opts.extend(extra.iter().map(|s| s.to_string()));
    run(
        &wrap_args(&strs(&opts), &["python3", &fault_server(), "normal"]),
        input,
    )
}

fn runs(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn export(format: &str, extra: &[&str], paths: &[&Path]) -> Run {
    let mut args = vec![
        "capture".to_string(),
        "export".into(),
        "--format".into(),
        format.into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(paths.iter().map(|p| p.display().to_string()));
    run(&args, b"")
}

/// A root of two closed captures (labels `alpha`, `beta`), a discovery-only run and a capture
/// whose log was edited after the fact (`unknown`: its digest no longer matches).
fn mixed_root(root: &Path) -> Vec<PathBuf> {
    launch(root, "alpha", &[], &session()).expect_status(0);
    launch(root, "beta", &[], &session()).expect_status(0);
    launch(root, "gamma", &[], b"").expect_status(0);
    launch(root, "delta", &[], &session()).expect_status(0);
    let dirs = runs(root);
    assert_eq!(dirs.len(), 4);
    let log = dirs[3].join("decisions.ndjson");
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text.replacen("\"echo\"", "\"echx\"", 1)).unwrap();
    dirs
}

fn column_order(line: &str) -> Vec<&'static str> {
    let mut found: Vec<(usize, &'static str)> = COLUMNS
        .iter()
        .map(|k| (line.find(&format!("\"{k}\":")).expect(k), *k))
        .collect();
    found.sort_unstable();
    found.into_iter().map(|(_, k)| k).collect()
}

#[test]
fn ndjson_has_one_flat_row_per_decision_of_each_closed_capture_in_name_order() {
    let d = tempdir();
    let root = d.path().join("captures");
    let dirs = mixed_root(&root);
    let r = export("ndjson", &[], &[&root]);
    // capture summary's rule: an unknown capture makes the status 3.
    r.expect_status(3);
    let rows = r.lines();
    assert_eq!(rows.len(), 6, "{}", r.report());
    let text = String::from_utf8(r.stdout.clone()).unwrap();
    for line in text.lines() {
        assert_eq!(column_order(line), COLUMNS, "{line}");
        let row: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
        assert_eq!(row.len(), COLUMNS.len(), "flat, nothing else: {line}");
        assert!(row.values().all(|v| !v.is_object() && !v.is_array()));
    }
    let got: Vec<(String, String, u64, String, String, String)> = rows
        .iter()
        .map(|v| {
            (
                v["capture"].as_str().unwrap().to_string(),
                v["server_id"].as_str().unwrap().to_string(),
                v["seq"].as_u64().unwrap(),
                v["name"].as_str().unwrap().to_string(),
                v["decision"].as_str().unwrap().to_string(),
                v["reason_code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = |dir: &Path, label: &str| {
        let c = name_of(dir);
        vec![
            (
                c.clone(),
                label.into(),
                0,
                "echo".into(),
                "allow".into(),
                "P_POLICY_ALLOW".into(),
            ),
            (
                c.clone(),
                label.into(),
                1,
                "exec".into(),
                "deny".into(),
                "P_TOOL_DENIED".into(),
            ),
            (
                c,
                label.into(),
                2,
                "echo".into(),
                "allow".into(),
                "P_POLICY_ALLOW".into(),
            ),
        ]
    };
    let mut expected = want(&dirs[0], "alpha");
    expected.extend(want(&dirs[1], "beta"));
    assert_eq!(got, expected);
    let first = &rows[0];
    let stop = read_json(&dirs[0].join("session-stop.json"));
    assert_eq!(first["session_id"], stop["data"]["session_id"]);
    assert_eq!(first["verdict"], "closed");
    assert_eq!(first["method"], "tools/call");
    assert_eq!(first["event_type"], "assay.tool.decision");
    assert_eq!(first["request_id"], "2");
    assert_eq!(first["enforced"], true);
    assert_eq!(first["direction"], Value::Null);
    let log = decision_lines(&dirs[0].join("decisions.ndjson"));
    assert_eq!(first["time"], log[0]["time"]);
    assert_eq!(
        first["arguments_sha256"],
        log[0]["data"]["arguments_sha256"]
    );
    assert_eq!(first["policy_sha256"], log[0]["data"]["policy_sha256"]);
    // What was left out is said on stderr, with why.
    assert!(
        r.stderr.contains(&format!(
            "assay: not exported: {} (no_session) is a discovery-only run",
            name_of(&dirs[2])
        )),
        "{}",
        r.report()
    );
    assert!(
        r.stderr.contains(&format!(
            "assay: not exported: {} (unknown) is not closed (--include-unclosed",
            name_of(&dirs[3])
        )),
        "{}",
        r.report()
    );
    assert!(
        r.stderr
            .contains("assay: exported 6 rows from 2 of 4 captures")
    );

    // --include-unclosed: the edited capture too, each row marked with its verdict.
    let r = export("ndjson", &["--include-unclosed"], &[&root]);
    r.expect_status(3);
    let rows = r.lines();
    assert_eq!(rows.len(), 9);
    let marked: Vec<(&str, &str)> = rows[6..]
        .iter()
        .map(|v| (v["verdict"].as_str().unwrap(), v["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        marked,
        [
            ("unknown", "echx"),
            ("unknown", "exec"),
            ("unknown", "echo")
        ]
    );
}

#[test]
fn exit_statuses_mirror_capture_summary() {
    let d = tempdir();
    let root = d.path().join("captures");
    launch(&root, "alpha", &[], &session()).expect_status(0);
    let dirs = runs(&root);
    // All closed: 0, for a root and for one capture given as such.
    export("ndjson", &[], &[&root]).expect_status(0);
    let one = export("otlp-json", &[], &[&dirs[0]]);
    one.expect_status(0);
    assert_eq!(one.lines().len(), 1);
    // An incomplete capture (a real write failure) beside it: 1, and not exported.
    let cap = root.join("z-incomplete");
    run_with_file_size_limit(&cap);
    let r = export("ndjson", &[], &[&root]);
    r.expect_status(1);
    assert_eq!(r.lines().len(), 3, "{}", r.report());
    let r = export("ndjson", &["--include-unclosed"], &[&root]);
    r.expect_status(1);
    let rows = r.lines();
    let incomplete: Vec<&Value> = rows
        .iter()
        .filter(|v| v["capture"] == "z-incomplete")
        .collect();
    assert!(!incomplete.is_empty(), "{}", r.report());
    assert!(incomplete.iter().all(|v| v["verdict"] == "incomplete"));
    // None found: 3; a path that does not exist: 2 (usage).
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    export("ndjson", &[], &[&empty]).expect_status(3);
    let r = export("ndjson", &[], &[&d.path().join("missing")]);
    r.expect_status(2);
    assert!(r.stderr.contains("does not exist"), "{}", r.report());
    // Several paths: in the order given.
    let r = export("ndjson", &[], &[&dirs[0], &root]);
    let names: Vec<String> = r
        .lines()
        .iter()
        .map(|v| v["capture"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 6);
    assert!(names.iter().all(|n| *n == name_of(&dirs[0])));
}

fn attr<'v>(span: &'v Value, key: &str) -> Option<&'v Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn is_hex(v: &Value, len: usize) -> bool {
    v.as_str().is_some_and(|s| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    })
}

#[test]
fn otlp_json_is_one_request_per_capture_with_fixed_ids() {
    let d = tempdir();
    let root = d.path().join("captures");
    let dirs = mixed_root(&root);
    let r = export("otlp-json", &[], &[&root]);
    r.expect_status(3);
    // Idempotent: the same bytes again.
    let again = export("otlp-json", &[], &[&root]);
    assert_eq!(r.stdout, again.stdout);
    let lines = r.lines();
    assert_eq!(lines.len(), 2);
    for (line, (dir, label)) in lines.iter().zip([(&dirs[0], "alpha"), (&dirs[1], "beta")]) {
        let rs = &line["resourceSpans"][0];
        let res = &rs["resource"];
        assert_eq!(attr(res, "service.name").unwrap()["stringValue"], "assay");
        assert_eq!(attr(res, "assay.server_id").unwrap()["stringValue"], label);
        assert_eq!(
            attr(res, "assay.capture.id").unwrap()["stringValue"],
            name_of(dir).as_str()
        );
        assert_eq!(
            attr(res, "assay.capture.verdict").unwrap()["stringValue"],
            "closed"
        );
        let spans = rs["scopeSpans"][0]["spans"].as_array().unwrap();
        assert_eq!(spans.len(), 4, "the session and three calls");
        let root_span = &spans[0];
        let sid = read_json(&dir.join("session-stop.json"))["data"]["session_id"].clone();
        assert_eq!(root_span["name"], "assay.session");
        assert_eq!(root_span["kind"], 1);
        assert_eq!(
            attr(root_span, "mcp.session.id").unwrap()["stringValue"],
            sid
        );
        assert_eq!(root_span.get("parentSpanId"), None);
        for s in spans {
            assert!(is_hex(&s["traceId"], 32), "{s}");
            assert!(is_hex(&s["spanId"], 16), "{s}");
            assert_eq!(s["traceId"], root_span["traceId"]);
            for k in ["startTimeUnixNano", "endTimeUnixNano"] {
                let t = s[k].as_str().unwrap();
                assert!(
                    t.len() == 19 && t.bytes().all(|b| b.is_ascii_digit()),
                    "{s}"
                );
            }
        }
        let names: Vec<&str> = spans[1..]
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["tools/call echo", "tools/call exec", "tools/call echo"]
        );
        let exec = &spans[2];
        assert_eq!(exec["parentSpanId"], root_span["spanId"]);
        assert_eq!(exec["kind"], 2);
        assert_eq!(
            exec["status"],
            json!({"code": 2, "message": "P_TOOL_DENIED"})
        );
        let s =
            |k: &str| attr(exec, k).unwrap_or_else(|| panic!("{k}: {exec}"))["stringValue"].clone();
        assert_eq!(s("mcp.method.name"), "tools/call");
        assert_eq!(s("gen_ai.tool.name"), "exec");
        assert_eq!(s("gen_ai.operation.name"), "execute_tool");
        assert_eq!(s("jsonrpc.request.id"), "3");
        assert_eq!(s("mcp.session.id"), sid);
        assert_eq!(s("error.type"), "P_TOOL_DENIED");
        assert_eq!(s("assay.decision"), "deny");
        assert_eq!(attr(exec, "assay.seq").unwrap()["intValue"], "1");
        assert_eq!(attr(&spans[1], "error.type"), None);
        assert_eq!(spans[1].get("status"), None);
    }
}

/// What the test's OTLP/HTTP receiver does with each request.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Receiver {
    /// Answers 200 and keeps the body.
    Answers,
    /// Answers with this status.
    Refuses(u16),
    /// Reads the request and never answers (until the test ends).
    NeverAnswers,
}

/// Starts a receiver on a free local port; returns its URL and the bodies it received.
fn receiver(mode: Receiver) -> (String, mpsc::Receiver<(String, Vec<u8>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut head = String::new();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                head.push_str(&line);
            }
            let mut body = vec![0u8; len];
            reader.read_exact(&mut body).unwrap();
            let answer = match mode {
                Receiver::Answers => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}".to_string(),
                Receiver::Refuses(code) => {
                    format!("HTTP/1.1 {code} No\r\nContent-Length: 0\r\n\r\n")
                }
                Receiver::NeverAnswers => {
                    held.push(conn);
                    if tx.send((head, body)).is_err() {
                        return;
                    }
                    continue;
                }
            };
            // Kept before the answer: once the wrapper has its answer, the body is here.
            if tx.send((head, body)).is_err() {
                return;
            }
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    (url, rx)
}

/// A session with the exporter: its run, its capture, its stop record's `otlp_export`.
fn live(url: &str) -> (Run, PathBuf, Value, tempfile::TempDir) {
    let d = tempdir();
    let root = d.path().join("captures");
    let r = launch(&root, "alpha", &["--otlp-endpoint", url], &session());
    let dir = runs(&root).remove(0);
    let stop = read_json(&dir.join("session-stop.json"));
    (r, dir, stop["data"]["otlp_export"].clone(), d)
}

/// The client's bytes with the run's session id (in the refusal's decision id) taken out.
fn client_bytes(r: &Run, dir: &Path) -> String {
    let stop = read_json(&dir.join("session-stop.json"));
    let sid = stop["data"]["session_id"].as_str().unwrap().to_string();
    String::from_utf8(r.stdout.clone())
        .unwrap()
        .replace(&sid, "SESSION")
}

/// The session without the exporter: what every live run must equal.
struct Baseline {
    run: Run,
    client_bytes: String,
}

fn baseline() -> Baseline {
    let d = tempdir();
    let root = d.path().join("captures");
    let run = launch(&root, "alpha", &[], &session());
    let client_bytes = client_bytes(&run, &runs(&root)[0]);
    Baseline { run, client_bytes }
}

fn same_session(r: &Run, dir: &Path, base: &Baseline) {
    r.expect_status(0);
    assert_eq!(
        client_bytes(r, dir),
        base.client_bytes,
        "the client's bytes\n{}",
        r.report()
    );
    let (_, verdict) = read_verdict(dir);
    assert_eq!(verdict["closure"], "closed", "{verdict}");
    let log = decision_lines(&dir.join("decisions.ndjson"));
    assert_eq!(log.len(), 3);
}

#[test]
fn live_spans_arrive_with_the_ids_and_names_of_the_export() {
    let base = baseline();
    let (url, bodies) = receiver(Receiver::Answers);
    let (r, dir, counts, _d) = live(&url);
    same_session(&r, &dir, &base);
    assert_eq!(counts, json!({"spans": 4, "exported": 4, "dropped": 0}));
    let mut live_spans = Vec::new();
    for (head, body) in bodies.try_iter() {
        assert!(head.starts_with("POST /v1/traces HTTP/1.1\r\n"), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: application/json\r\n"),
            "{head}"
        );
        let req: Value = serde_json::from_slice(&body).unwrap();
        for s in req["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array()
            .unwrap()
        {
            live_spans.push(s.clone());
        }
    }
    assert_eq!(live_spans.len(), 4);
    // The export of the capture names the same spans with the same ids.
    let exported = export("otlp-json", &[], &[&dir]).lines();
    let spans = exported[0]["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap()
        .clone();
    let key = |s: &Value| {
        (
            s["traceId"].as_str().unwrap().to_string(),
            s["spanId"].as_str().unwrap().to_string(),
            s["name"].as_str().unwrap().to_string(),
        )
    };
    let mut a: Vec<_> = live_spans.iter().map(key).collect();
    let mut b: Vec<_> = spans.iter().map(key).collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    let call = live_spans
        .iter()
        .find(|s| s["name"] == "tools/call exec")
        .unwrap();
    let from_export = spans
        .iter()
        .find(|s| s["name"] == "tools/call exec")
        .unwrap();
    assert_eq!(call["attributes"], from_export["attributes"]);
}

#[test]
fn a_refusing_receiver_loses_spans_counted_never_the_session() {
    let base = baseline();
    for code in [500, 429] {
        let (url, _bodies) = receiver(Receiver::Refuses(code));
        let (r, dir, counts, _d) = live(&url);
        same_session(&r, &dir, &base);
        assert_eq!(
            counts,
            json!({"spans": 4, "exported": 0, "dropped": 4}),
            "{code}"
        );
        let log = std::fs::read_to_string(dir.join("proxy-stderr.log")).unwrap();
        assert!(
            log.contains(&format!(
                "assay: OTLP export to {url}/v1/traces: 4 of 4 spans not delivered"
            )),
            "{log}"
        );
    }
}

#[test]
fn a_receiver_that_is_down_loses_spans_counted_never_the_session() {
    let base = baseline();
    // A port that was just free: nothing listens there.
    let url = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let (r, dir, counts, _d) = live(&url);
    same_session(&r, &dir, &base);
    assert_eq!(counts, json!({"spans": 4, "exported": 0, "dropped": 4}));
}

#[test]
fn a_receiver_that_never_answers_delays_the_exit_by_a_bounded_time_only() {
    let base = baseline();
    let (url, bodies) = receiver(Receiver::NeverAnswers);
    let (r, dir, counts, _d) = live(&url);
    same_session(&r, &dir, &base);
    assert_eq!(counts["spans"], 4);
    assert_eq!(counts["exported"], 0);
    assert_eq!(counts["dropped"], 4);
    // The request was made (the receiver read it) …
    assert!(bodies.try_iter().count() >= 1);
    // … and the wrapper waited at most its bound (1 s) for it, on top of a request's own
    // timeout (0.8 s) the first batch may have been in: well under the 3 s asserted.
    let extra = r.elapsed.saturating_sub(base.run.elapsed);
    assert!(
        extra < std::time::Duration::from_secs(3),
        "{extra:?}\n{}",
        r.report()
    );
}

#[test]
fn an_endpoint_that_is_not_http_is_a_configuration_error() {
    let d = tempdir();
    for (url, why) in [
        ("https://127.0.0.1:4318", "only http:// is supported"),
        ("127.0.0.1:4318", "is not a URL"),
    ] {
        let r = launch(
            &d.path().join("c"),
            "alpha",
            &["--otlp-endpoint", url],
            &session(),
        );
        r.expect_status(2);
        assert!(
            r.stderr.contains("assay: --otlp-endpoint:") && r.stderr.contains(why),
            "{}",
            r.report()
        );
        assert!(!d.path().join("c").exists(), "nothing created");
    }
}
