//! A client that pipelines (SPEC §3 item 6, §4.1): thousands of lines written at once — allowed
//! and refused calls, notifications, pings, JSON-RPC batches, parse errors and lines longer than
//! the proxy queues — through the real binary to a real server that notes, for every line it
//! receives, how long the decision log was at that moment. Whichever thread carries a line out,
//! lines keep their order, every call has exactly one decision, and no call reaches the server
//! before its decision line is in the log.

use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::util::*;

/// One client line and what the wrapper must do with it.
struct Line {
    text: String,
    /// Reaches the server.
    forwarded: bool,
    /// Decisions it produces (the tools/call messages in it).
    decisions: usize,
}

fn fixture() -> String {
    root()
        .join("tests/fixtures/order_server.py")
        .display()
        .to_string()
}

fn client_lines(n: u64) -> Vec<Line> {
    let mut v = vec![
        Line {
            text: INIT.to_string(),
            forwarded: true,
            decisions: 0,
        },
        Line {
            text: r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
            forwarded: true,
            decisions: 0,
        },
    ];
    for i in 0..n {
        let id = 100 + i;
        let line = match i % 10 {
            0..=5 => Line {
                text: call(
                    id,
                    "echo",
                    &format!(r#"{{"text":"{}","n":{i}}}"#, "x".repeat((i % 50) as usize)),
                ),
                forwarded: true,
                decisions: 1,
            },
            6 => Line {
                text: call(id, "exec", r#"{"cmd":"id"}"#),
                forwarded: false,
                decisions: 1,
            },
            7 => Line {
                text: format!(
                    r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"echo","arguments":{{"n":{i}}}}}}}"#
                ),
                forwarded: true,
                decisions: 1,
            },
            8 if i % 1000 == 8 => Line {
                text: format!(
                    "[{},{}]",
                    call(id, "echo", r#"{"text":"a"}"#),
                    call(id + 1_000_000, "echo", r#"{"text":"b"}"#)
                ),
                forwarded: true,
                decisions: 2,
            },
            8 => Line {
                text: r#"{"jsonrpc":"2.0","id":"#.to_string(),
                forwarded: false,
                decisions: 0,
            },
            _ if i % 2000 == 9 => Line {
                // Longer than the proxy copies into a batch: carried out in place.
                text: call(
                    id,
                    "echo",
                    &format!(r#"{{"text":"{}"}}"#, "y".repeat(100 * 1024)),
                ),
                forwarded: true,
                decisions: 1,
            },
            _ => Line {
                text: format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
                forwarded: true,
                decisions: 0,
            },
        };
        v.push(line);
    }
    v
}

#[test]
fn pipelined_lines_keep_their_order_and_every_decision_precedes_its_call() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let rec = dir.path().join("received.txt");
    let log = cap.join("decisions.ndjson");
    let lines = client_lines(6_000);
    let input: Vec<u8> = lines
        .iter()
        .flat_map(|l| l.text.bytes().chain(std::iter::once(b'\n')))
        .collect();
    let opts = capture_opts(&cap);
    let server = [
        "python3".to_string(),
        fixture(),
        log.display().to_string(),
        rec.display().to_string(),
    ];
    let r = run(&wrap_args(&strs(&opts), &strs(&server)), &input);
    r.expect_status(0);

    // Exactly one decision per call, in the order of the input, with contiguous seq.
    let decisions = decision_lines(&log);
    let total: usize = lines.iter().map(|l| l.decisions).sum();
    assert_eq!(decisions.len(), total, "{}", r.report());
    for (i, d) in decisions.iter().enumerate() {
        assert_eq!(d["data"]["seq"], i as u64);
    }
    let denied = decisions
        .iter()
        .filter(|d| d["data"]["reason_code"] == "P_TOOL_DENIED")
        .count();
    assert_eq!(
        denied,
        lines.iter().filter(|l| l.text.contains("exec")).count()
    );

    // Each decision's arguments_sha256 is the SHA-256 of the RFC 8785 form of its call's
    // arguments (whichever thread took it), computed here independently.
    let mut expected: Vec<serde_json::Value> = Vec::new();
    for l in &lines {
        if l.decisions == 0 {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&l.text).unwrap();
        let calls = match v {
            serde_json::Value::Array(items) => items,
            one => vec![one],
        };
        for c in calls {
            let args = &c["params"]["arguments"];
            let canonical = serde_json_canonicalizer::to_vec(args).unwrap();
            let digest = <sha2::Sha256 as sha2::Digest>::digest(&canonical);
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            expected.push(serde_json::Value::String(hex));
        }
    }
    let got: Vec<serde_json::Value> = decisions
        .iter()
        .map(|d| d["data"]["arguments_sha256"].clone())
        .collect();
    assert_eq!(got, expected);

    // Where each decision line ends in the log.
    let log_bytes = std::fs::read(&log).unwrap();
    let mut ends = vec![0usize];
    ends.extend(
        log_bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1),
    );

    // The server received exactly the forwarded lines, in order, each only once the decisions
    // of every line before it and of itself were written.
    let received = std::fs::read_to_string(&rec).unwrap();
    let mut got = received.lines();
    let mut decided = 0usize;
    for (n, l) in lines.iter().enumerate() {
        decided += l.decisions;
        if !l.forwarded {
            continue;
        }
        let entry = got
            .next()
            .unwrap_or_else(|| panic!("line {n} never reached the server"));
        let (size, text) = entry.split_once(' ').unwrap();
        assert_eq!(text, l.text, "line {n} out of order");
        let size: usize = size.parse().unwrap();
        assert!(
            size >= ends[decided],
            "line {n} reached the server when the log held {size} bytes; its decision ends at {}",
            ends[decided]
        );
    }
    assert_eq!(
        got.next(),
        None,
        "the server received more than was forwarded"
    );

    // The client got an answer for every request: the server's, a refusal or a parse error.
    let out = r.lines();
    let refusals = out
        .iter()
        .filter(|m| m["result"]["_meta"]["assay/decision"]["reason_code"] == "P_TOOL_DENIED")
        .count();
    assert_eq!(refusals, denied);
    let parse_errors = out.iter().filter(|m| m["error"]["code"] == -32700).count();
    assert_eq!(
        parse_errors,
        lines.iter().filter(|l| l.text.ends_with("\"id\":")).count()
    );
    let answered = out.len();
    let requests = lines
        .iter()
        .map(|l| {
            if l.text.starts_with('[') {
                2
            } else {
                usize::from(l.text.contains("\"id\":"))
            }
        })
        .sum::<usize>();
    assert_eq!(answered, requests, "{}", r.report());

    // And the capture is closed.
    let (read, verdict) = read_verdict(&cap);
    assert_eq!(verdict["closure"], "closed", "{}", read.report());
}

/// Reads one line from `out` within `limit`, or fails the test (a wrapper that keeps a line
/// buffered while the client waits for its answer would hang the session).
fn answer_within(
    out: &std::sync::mpsc::Receiver<String>,
    limit: std::time::Duration,
    what: &str,
) -> serde_json::Value {
    let line = out
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("no answer to {what} within {limit:?}"));
    serde_json::from_str(&line).unwrap()
}

/// A client that sends one line and waits for its answer before the next: lines the proxy runs
/// in place (a JSON-RPC batch, a refused batch, a line over the queued size) still reach the
/// server, and the wrapper's own answers the client, before the wrapper waits for more input.
#[test]
fn lines_run_in_place_are_flushed_while_the_client_waits() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    use std::time::Duration;

    let dir = tempdir();
    let cap = dir.path().join("cap");
    let opts = capture_opts(&cap);
    let mut child = wrap_command(&strs(&opts), &["python3", &demo_server()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let limit = Duration::from_secs(20);
    let mut send = |line: &str| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    send(INIT);
    answer_within(&rx, limit, "initialize");
    send(&format!("[{}]", call(2, "echo", r#"{"text":"batch"}"#)));
    let batch = answer_within(&rx, limit, "an allowed batch");
    assert_eq!(batch[0]["id"], 2, "{batch}");
    send(&format!(
        "[{},{}]",
        call(3, "echo", r#"{"text":"a"}"#),
        call(4, "exec", r#"{"cmd":"id"}"#)
    ));
    let refused = answer_within(&rx, limit, "a refused batch");
    assert_eq!(
        refused[1]["result"]["_meta"]["assay/decision"]["reason_code"], "P_TOOL_DENIED",
        "{refused}"
    );
    let long = format!(r#"{{"text":"{}"}}"#, "z".repeat(100 * 1024));
    send(&call(5, "echo", &long));
    assert_eq!(answer_within(&rx, limit, "a long line")["id"], 5);
    send(&call(6, "exec", r#"{"cmd":"id"}"#));
    assert_eq!(answer_within(&rx, limit, "a refused call")["id"], 6);
    drop(stdin);
    assert!(child.wait().unwrap().success());
    reader.join().unwrap();
    let (read, verdict) = read_verdict(&cap);
    assert_eq!(verdict["closure"], "closed", "{}", read.report());
}

/// A client that pipelines calls under `results` (SPEC §5.3) while the server answers in bursts
/// (tests/fixtures/burst_server.py): while a burst of thousands of answers is read, the
/// wrapper's forwarding is stalled and the decisions it numbered ahead are not yet written, so
/// every answer's event waits for them. None is lost: the log is complete, every call has its
/// decision and its answer's event, one `seq` over both.
#[test]
fn answers_in_bursts_keep_every_event_while_decisions_are_numbered_ahead() {
    const CALLS: u64 = 6_000;
    let dir = tempdir();
    let mut input = initialized();
    for i in 0..CALLS {
        input.push_str(&call(100 + i, "echo", &format!(r#"{{"n":{i}}}"#)));
        input.push('\n');
    }
    let server = root().join("tests/fixtures/burst_server.py");
    let server = ["python3", &server.display().to_string(), "3000"].map(String::from);
    let (events, _) = pipelined_session(
        dir.path(),
        "version: \"1\"\nallow: [\"*\"]\nresults: {}\n",
        &server,
        &input,
        CALLS as usize + 1,
    );
    assert_eq!(events.len(), 2 * CALLS as usize);
    let results = events
        .iter()
        .filter(|e| e["type"] == "assay.mcp.result")
        .count();
    assert_eq!(results, CALLS as usize);
}

/// A pipelining client whose every fifth line is a `tools/list`, with hiding: the server
/// worker's listing events take their `seq` while the client's decisions are numbered ahead and
/// written by the emitter (SPEC §4.1a). Every event is written once, in `seq` order, none
/// dropped, each listing hides the denied tool, and the reader judges the capture `closed`.
#[test]
fn listings_between_pipelined_calls_are_written_in_seq_order_and_the_capture_is_closed() {
    const LINES: u64 = 5_000;
    let dir = tempdir();
    let template = dir.path().join("template.json");
    std::fs::write(
        &template,
        concat!(
            r#"{"jsonrpc":"2.0","id":__ID__,"result":{"tools":["#,
            r#"{"name":"echo","inputSchema":{"type":"object"}},"#,
            r#"{"name":"exec","inputSchema":{"type":"object"}}]}}"#,
            "\n"
        ),
    )
    .unwrap();
    let mut input = initialized();
    let mut lists = 0usize;
    for i in 0..LINES {
        let id = 100 + i;
        if i % 5 == 0 {
            lists += 1;
            input.push_str(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#
            ));
        } else {
            input.push_str(&call(id, "echo", &format!(r#"{{"n":{i}}}"#)));
        }
        input.push('\n');
    }
    let server = root().join("tests/fixtures/list_server.py");
    let server = [
        "python3",
        &server.display().to_string(),
        &template.display().to_string(),
    ]
    .map(String::from);
    let (events, cap) = pipelined_session(
        dir.path(),
        "version: \"1\"\nallow: [\"*\"]\ndeny: [\"exec\"]\nhide_refused_tools: true\n",
        &server,
        &input,
        LINES as usize + 1,
    );
    assert_eq!(events.len(), LINES as usize);
    let listings: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "assay.tool.listing")
        .collect();
    assert_eq!(listings.len(), lists);
    for l in listings {
        assert_eq!(l["data"]["removed"][0]["name"], "exec", "{l}");
        assert_eq!(l["data"]["shown"][0]["name"], "echo", "{l}");
    }
    let (read, verdict) = read_verdict(&cap);
    assert_eq!(verdict["closure"], "closed", "{}", read.report());
}

/// The lines a client starts with: `initialize`, then `notifications/initialized`.
fn initialized() -> String {
    format!("{INIT}\n{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}\n")
}

/// Runs `input` through the wrapper under `policy` (YAML text) with a capture directory in
/// `dir`, to `server`; checks that the client got `answers` lines and that the log is complete,
/// nothing dropped, every line in `seq` order. Returns the log's events and the capture.
fn pipelined_session(
    dir: &std::path::Path,
    policy: &str,
    server: &[String],
    input: &str,
    answers: usize,
) -> (Vec<serde_json::Value>, std::path::PathBuf) {
    let cap = dir.join("cap");
    let policy_file = dir.join("policy.yaml");
    std::fs::write(&policy_file, policy).unwrap();
    let opts = [
        "--policy",
        &policy_file.display().to_string(),
        "--event-source",
        "assay://test/session",
        "--capture-dir",
        &cap.display().to_string(),
    ]
    .map(String::from);
    let r = run(&wrap_args(&strs(&opts), &strs(server)), input.as_bytes());
    r.expect_status(0);
    assert_eq!(r.lines().len(), answers, "{}", r.report());
    let stop = read_json(&cap.join("session-stop.json"));
    assert_eq!(stop["data"]["decision_log"], "complete", "{stop}");
    assert_eq!(stop["data"]["decision_events_dropped"], 0, "{stop}");
    let events = decision_lines(&cap.join("decisions.ndjson"));
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["data"]["seq"], i as u64, "{}", r.report());
    }
    (events, cap)
}

/// A policy that refuses the server's sampling requests and allows the calls.
const SAMPLING_DENIED: &str = r#"version: "1"
allow: ["echo"]
client_features: {sampling: deny}
"#;

/// What a session behind `assay mcp wrap --policy` (with [`SAMPLING_DENIED`]) in front of
/// `asking_server.py RECEIVED ARGS…` made of `input`, written at once: its output, what it said
/// and its exit status. The input closes once written, or with `hold` once the output ended.
/// Fails when the output has not ended within 60 s (a bound, not a synchronization: these
/// sessions take well under a second).
fn asked_session(
    dir: &Path,
    args: &[&str],
    input: String,
    hold: bool,
) -> (String, String, Option<i32>) {
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, SAMPLING_DENIED).unwrap();
    let fixture = root().join("tests/fixtures/asking_server.py");
    let rec = dir.join("received.ndjson");
    let mut server = vec![
        "python3".to_string(),
        fixture.display().to_string(),
        rec.display().to_string(),
    ];
    server.extend(args.iter().map(|a| a.to_string()));
    let mut cmd = wrap_command(&["--policy", &policy.display().to_string()], &strs(&server));
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (output_ended, held) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
        if hold {
            let _ = held.recv();
        }
    });
    let said = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let (done, out) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        let _ = done.send(bytes);
    });
    let Ok(bytes) = out.recv_timeout(Duration::from_secs(60)) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the session stopped: no end of output within 60 s");
    };
    let _ = output_ended.send(());
    let status = child.wait().unwrap().code();
    (
        String::from_utf8(bytes).unwrap(),
        said.join().unwrap(),
        status,
    )
}

#[test]
fn a_server_request_refused_while_the_client_pipelines_does_not_stop_the_session() {
    // The server asks for sampling mid-stream while its stdin is full of pipelined calls and its
    // answers fill its stdout: the refusal, answered to the server, must not wait for the
    // server's stdin while the server waits for the wrapper to read its output.
    let dir = tempdir();
    let calls = 3_000u64;
    let mut input = format!("{INIT}\n");
    for id in 2..2 + calls {
        input.push_str(&call(
            id,
            "echo",
            &format!(r#"{{"text":"{}"}}"#, "y".repeat(150)),
        ));
        input.push('\n');
    }
    let (text, said, status) = asked_session(dir.path(), &[], input, false);
    let answers = text.lines().count() as u64;
    assert_eq!(answers, calls + 1, "every request answered; {said}");
    assert!(!text.contains("sampling/createMessage"));
    assert_eq!(status, Some(0));
    let rec = dir.path().join("received.ndjson");
    let received = std::fs::read_to_string(&rec).unwrap();
    let refusal: serde_json::Value = received
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|m| m["id"] == "srv-ask")
        .unwrap_or_else(|| panic!("the server never got its answer: {received}"));
    assert_eq!(
        refusal["error"]["data"]["assay/decision"]["reason_code"], "P_CLIENT_FEATURE_DENIED",
        "{refusal}"
    );
}

#[test]
fn a_server_that_asks_and_never_reads_is_not_answered_past_the_bound() {
    // 8,000 refused sampling requests and not one answer read, while the client's input stays
    // open (once it ends, the server's stdin is closed and answers are dropped): the wrapper
    // keeps reading the server, stops answering once a MiB of answers waits, says so once, and
    // the session ends with the server.
    let dir = tempdir();
    let init = format!("{INIT}\n");
    let (text, said, status) = asked_session(dir.path(), &["flood", "8000"], init, true);
    assert_eq!(text, "", "no server request reaches the client");
    assert_eq!(status, Some(0), "{said}");
    let refused = said
        .lines()
        .filter(|l| l.contains("refused the server's sampling/createMessage request"))
        .count();
    assert_eq!(refused, 8000);
    let stopped: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("stopped answering the server's refused requests"))
        .collect();
    assert_eq!(
        stopped,
        [
            "assay: stopped answering the server's refused requests: 1024 KiB of answers wait for it to read its input"
        ]
    );
}
