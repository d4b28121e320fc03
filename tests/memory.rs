//! SPEC §3 item 6: memory stays bounded by at most 4× `max_line_bytes` for any line, batches and
//! refusal responses included. The wrapper's peak RSS is the kernel's high-water mark for its
//! address space (`VmHWM` in /proc/<pid>/status, monotonic), read every millisecond until it
//! exits. (`wait4`'s `ru_maxrss` is not usable: it also counts the forking test process's
//! memory, which the child shares until it execs.) A memory bound from the SPEC, not a timing
//! assertion. The bound is on what a line costs: the peak of a session with one short line, the
//! same binary measured in the same run (`baseline`: its image and runtime, ~21 MiB for a debug
//! build and ~10 MiB for a release one), plus 4× `max_line_bytes`.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::util::*;

const MAX_LINE: usize = 16 * 1024 * 1024;

/// The peak RSS of a session with one short line (measured once per run).
fn baseline() -> usize {
    static BASELINE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BASELINE
        .get_or_init(|| peak_rss_for(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").0)
}

/// SPEC §3 item 6: at most 4× `max_line_bytes` over what the wrapper holds without the line.
fn bound() -> usize {
    baseline() + 4 * MAX_LINE
}

/// Runs `line` (one line, newline included) through `assay mcp wrap` in front of `cat`; returns
/// (peak RSS in bytes, bytes the client received, the first and last bytes of that output).
fn peak_rss_for(line: &[u8]) -> (usize, usize, Vec<u8>, Vec<u8>) {
    let dir = tempdir();
    let log = dir.path().join("decisions.ndjson");
    peak_rss_of(
        wrap_args(
            &strs(&evidence_opts(&[
                "--decision-log".into(),
                log.display().to_string(),
                "--decision-log-new".into(),
            ])),
            &["cat"],
        ),
        line,
    )
}

/// Runs `assay` with `args`, writes `line` to it and reads its whole output; returns (peak RSS
/// in bytes, bytes the client received, the first and last bytes of that output).
fn peak_rss_of(args: Vec<String>, line: &[u8]) -> (usize, usize, Vec<u8>, Vec<u8>) {
    peak_rss_after(args, line, 1)
}

/// [`peak_rss_of`], the client's input held open until `lines` output lines are complete.
fn peak_rss_after(
    args: Vec<String>,
    line: &[u8],
    lines: usize,
) -> (usize, usize, Vec<u8>, Vec<u8>) {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn assay");
    let pid = child.id();
    let peak = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, stop) = (peak.clone(), stop.clone());
        std::thread::spawn(move || {
            let status = format!("/proc/{pid}/status");
            while !stop.load(Ordering::Relaxed) {
                if let Ok(text) = std::fs::read_to_string(&status) {
                    let hwm = text
                        .lines()
                        .find_map(|l| l.strip_prefix("VmHWM:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok());
                    if let Some(kib) = hwm {
                        peak.fetch_max(kib * 1024, Ordering::Relaxed);
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    };
    let mut stdin = child.stdin.take().unwrap();
    let input = line.to_vec();
    // The client's input stays open until the first output line is complete, so the server (and
    // the session) outlive the work on that line however slow the build under test is.
    let (answered, wait_answer) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
        let _ = wait_answer.recv();
    });
    // Read the output as it streams; keep only its ends.
    let mut stdout = child.stdout.take().unwrap();
    let mut total = 0usize;
    let mut head = Vec::new();
    let mut tail: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut seen = 0usize;
    loop {
        let n = stdout.read(&mut buf).expect("read wrapper output");
        if n == 0 {
            break;
        }
        seen += buf[..n].iter().filter(|b| **b == b'\n').count();
        if seen >= lines {
            let _ = answered.send(());
        }
        if head.len() < 64 {
            head.extend_from_slice(&buf[..n.min(64 - head.len())]);
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 64 {
            tail.drain(..tail.len() - 64);
        }
        total += n;
    }
    drop(answered);
    writer.join().unwrap();
    // The zombie keeps /proc/<pid>/status until it is reaped; one last read there.
    std::thread::sleep(std::time::Duration::from_millis(20));
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let status = child.wait().expect("wait");
    assert!(status.success(), "wrapper status {status}");
    let peak = peak.load(Ordering::Relaxed);
    assert!(peak > 0, "no VmHWM sample");
    (peak, total, head, tail)
}

/// A batch as long as the bound allows, of tiny requests and one denied call: the refusal
/// answers every element with an id, ~14× the line's size, so it must be streamed, not built.
#[test]
fn a_max_size_refused_batch_stays_within_four_times_max_line_bytes() {
    let exec = r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"exec"}}"#;
    let mut line = Vec::with_capacity(MAX_LINE);
    line.extend_from_slice(b"[");
    line.extend_from_slice(exec.as_bytes());
    while line.len() + 9 + 2 <= MAX_LINE {
        line.extend_from_slice(b",{\"id\":0}");
    }
    line.extend_from_slice(b"]\n");
    assert!(line.len() <= MAX_LINE);
    let (rss, out, head, tail) = peak_rss_for(&line);
    eprintln!(
        "refused batch: peak RSS {} KiB, response {} bytes",
        rss >> 10,
        out
    );
    let elements = (line.len() - exec.len() - 3) / 9;
    assert!(
        out > elements * 100,
        "a response per element: {out} bytes for {elements}"
    );
    assert!(
        head.starts_with(br#"[{"jsonrpc":"2.0","id":"x","result":"#),
        "{:?}",
        String::from_utf8_lossy(&head)
    );
    assert!(
        tail.ends_with(b"}]\n"),
        "{:?}",
        String::from_utf8_lossy(&tail)
    );
    assert!(
        rss <= bound(),
        "peak RSS {} MiB for a {} MiB line (bound {} MiB)",
        rss >> 20,
        line.len() >> 20,
        bound() >> 20
    );
}

/// One object with as many distinct keys as the bound allows (the duplicate-key set is the
/// largest structure the classifier builds).
#[test]
fn a_max_size_object_with_many_keys_stays_within_four_times_max_line_bytes() {
    let mut line = Vec::with_capacity(MAX_LINE);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"#);
    let mut n = 0u64;
    loop {
        let member = format!("\"{n:x}\":0,");
        if line.len() + member.len() + 8 > MAX_LINE {
            break;
        }
        line.extend_from_slice(member.as_bytes());
        n += 1;
    }
    line.extend_from_slice(b"\"z\":0}}\n");
    let (rss, _, _, _) = peak_rss_for(&line);
    eprintln!("object with {n} keys: peak RSS {} KiB", rss >> 10);
    assert!(
        rss <= bound(),
        "peak RSS {} MiB for a {} MiB object with {n} keys (bound {} MiB)",
        rss >> 20,
        line.len() >> 20,
        bound() >> 20
    );
}

/// SPEC §3 item 6 and §5: replacing a maximal answer to `tools/list` (hiding on) stays within
/// 4× `max_line_bytes` — a list of non-tools, more tools than a listing event records (removed or
/// kept), a batch of answers of which only the first was asked for, a batch of notifications
/// that loses its one answer to nobody, a batch the strict rules refuse, a batch whose answer
/// spells the id otherwise (respelled, whole or trimmed), a refused batch answering one request over and over, a
/// refused batch of server requests.
#[test]
fn a_max_size_tools_list_answer_stays_within_four_times_max_line_bytes() {
    let dir = tempdir();
    let policy = dir.path().join("hide.yaml");
    std::fs::write(
        &policy,
        "version: \"1\"\nallow: [\"*\"]\ndeny: [\"exec*\"]\nhide_refused_tools: true\n",
    )
    .unwrap();
    let server = root().join("tests/fixtures/big_list_server.py");
    let request = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n";
    for (mode, check) in [
        ("zeros", "error"),
        // More tools than a listing event records: refused whole (MAX_LISTED_TOOLS).
        ("refused", "error"),
        ("kept", "error"),
        ("batch", "errors"),
        ("batch-kept", "trimmed"),
        ("batch-unreadable", "error"),
        // Answers `1` as `1.0`: the client's id is written in place, nothing is parsed.
        ("batch-respell", "respelled"),
        ("kept-respell", "error"),
        // The same, losing its answer to nobody: respelled as it is copied.
        ("batch-respell-trimmed", "trimmed"),
        // Refused strictly and answers the one request 800 k times: one error (SPEC §5).
        ("batch-repeats", "error"),
        // Refused strictly, 800 k server requests with ids: the request gets one error, and
        // nothing is held per element.
        ("batch-requests", "errors"),
    ] {
        let args = wrap_args(
            &["--policy", &policy.display().to_string()],
            &[
                "python3",
                &server.display().to_string(),
                mode,
                &MAX_LINE.to_string(),
            ],
        );
        let (rss, out, head, tail) = peak_rss_of(args, request);
        eprintln!(
            "tools/list answer ({mode}): peak RSS {} KiB, output {out} bytes",
            rss >> 10
        );
        let head = String::from_utf8_lossy(&head).into_owned();
        let tail = String::from_utf8_lossy(&tail).into_owned();
        match check {
            "error" => {
                assert!(
                    head.starts_with(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603"#),
                    "{head}"
                );
                assert!(out < 300, "{out}");
            }
            "respelled" => {
                assert!(
                    head.starts_with(r#"[{"id":1,"result":{"tools":[]}},{"method":"x"},"#),
                    "{head}"
                );
                assert!(tail.ends_with(",{\"method\":\"x\"}]\n"), "{tail}");
                // The server's line, two bytes shorter (`1.0` is now `1`).
                assert!(out > MAX_LINE - 100 && out < MAX_LINE, "{out}");
            }
            "trimmed" => {
                assert!(
                    head.starts_with(r#"[{"id":1,"result":{"tools":[]}},{"method":"x"},"#),
                    "{head}"
                );
                assert!(tail.ends_with(",{\"method\":\"x\"}]\n"), "{tail}");
                // Everything but the answer to nobody.
                assert!(out > MAX_LINE - 100 && out < MAX_LINE, "{out}");
            }
            _ => {
                assert!(
                    head.starts_with(r#"[{"jsonrpc":"2.0","id":1,"error":{"code":-32603"#),
                    "{head}"
                );
                assert!(tail.ends_with("}}]\n"), "{tail}");
                // The first element answered the request; the others answered nobody and
                // were dropped (SPEC §5, "Answers nobody asked for").
                assert!(out < 300, "one element answered: {out} bytes");
            }
        }
        assert!(
            rss <= bound(),
            "{mode}: peak RSS {} MiB (bound {} MiB)",
            rss >> 20,
            bound() >> 20
        );
    }
}

/// SPEC §3 item 6 with `client_features` governed: a server batch as long as the bound allows,
/// holding a refused sampling request, the answer to the client's request and ~300,000 pings.
/// Judged element by element only up to 1 MiB (issue 46 item 6); this one is withheld whole,
/// read as a stream: memory stays within 4× `max_line_bytes`, and the client gets the error for
/// its request, not the pings.
#[test]
fn a_max_size_server_batch_with_a_refused_request_stays_within_four_times_max_line_bytes() {
    let dir = tempdir();
    let policy = dir.path().join("features.yaml");
    std::fs::write(
        &policy,
        "version: \"1\"\nallow: [\"*\"]\nclient_features:\n  sampling: deny\n",
    )
    .unwrap();
    let server = format!(
        r#"
import sys
sys.stdin.readline()
head = '[{{"jsonrpc":"2.0","id":1,"result":{{}}}},{{"jsonrpc":"2.0","id":"s","method":"sampling/createMessage","params":{{}}}}'
ping = ',{{"jsonrpc":"2.0","id":0,"method":"ping"}}'
n = ({MAX_LINE} - len(head) - 2) // len(ping)
sys.stdout.write(head + ping * n + ']\n')
sys.stdout.flush()
sys.stdin.read()
"#
    );
    let args = wrap_args(
        &["--policy", &policy.display().to_string()],
        &["python3", "-c", &server],
    );
    let request = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}\n";
    let (rss, out, head, _) = peak_rss_of(args, request);
    eprintln!(
        "server batch with a refused request: peak RSS {} KiB, output {out} bytes",
        rss >> 10
    );
    let head = String::from_utf8_lossy(&head).into_owned();
    assert!(
        head.starts_with(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603"#),
        "{head}"
    );
    assert!(out < 300, "{out}");
    assert!(
        rss <= bound(),
        "peak RSS {} MiB (bound {} MiB)",
        rss >> 20,
        bound() >> 20
    );
}

/// SPEC §3 item 6 and §5.2: a maximal answer to `prompts/list`, `resources/list` or
/// `resources/templates/list` (hiding on, the section governed) stays within 4×
/// `max_line_bytes` — all entries kept (forwarded as it is), every other one refused (written
/// again without them), more entries than a listing records, a list that is not one of
/// entries (both replaced by the error), a batch whose answer loses entries — and the listing
/// event says what was shown and removed.
#[test]
fn a_max_size_governed_list_answer_stays_within_four_times_max_line_bytes() {
    let dir = tempdir();
    let policy = dir.path().join("hide.yaml");
    std::fs::write(
        &policy,
        "version: \"1\"\nallow: [\"*\"]\nhide_refused_tools: true\nprompts:\n  deny: [\"debug_*\"]\n\
         resources:\n  deny: [\"file:///secrets/**\", \"https://secrets.example/**\"]\n",
    )
    .unwrap();
    let server = root().join("tests/fixtures/big_list_server.py");
    let modes = [
        "entries-kept",
        "entries-refused",
        "entries-many",
        "entries-zeros",
        "entries-batch",
    ];
    for (method, member, first_kept, modes) in [
        ("prompts/list", "prompts", r#"{"name":"p"#, &modes[..]),
        (
            "resources/list",
            "resources",
            r#"{"uri":"file:///w/"#,
            &modes[..],
        ),
        // Read by the same code: one mode.
        (
            "resources/templates/list",
            "resourceTemplates",
            r#"{"uriTemplate":"https://w.example/"#,
            &modes[1..2],
        ),
    ] {
        for &mode in modes {
            let log = dir.path().join(format!("{mode}-{member}.ndjson"));
            let args = wrap_args(
                &[
                    "--policy",
                    &policy.display().to_string(),
                    "--decision-log",
                    &log.display().to_string(),
                    "--decision-log-new",
                    "--event-source",
                    "assay://test/session",
                ],
                &[
                    "python3",
                    &server.display().to_string(),
                    mode,
                    &MAX_LINE.to_string(),
                ],
            );
            let request = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"{method}\"}}\n");
            let (rss, out, head, tail) = peak_rss_of(args, request.as_bytes());
            eprintln!(
                "{method} answer ({mode}): peak RSS {} KiB, output {out} bytes",
                rss >> 10
            );
            let head = String::from_utf8_lossy(&head).into_owned();
            let tail = String::from_utf8_lossy(&tail).into_owned();
            let answer = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"{member}":["#);
            // The output's first bytes (64 of them are kept) are these.
            let starts = |expected: String| {
                let n = expected.len().min(head.len());
                assert!(n >= 50 && head[..n] == expected[..n], "{mode}: {head}");
            };
            let (shown, removed, replaced) = match mode {
                "entries-kept" => {
                    starts(format!("{answer}{first_kept}0\""));
                    assert!(tail.ends_with("\"}]}}\n"), "{tail}");
                    assert!(out > MAX_LINE - 200_000 && out <= MAX_LINE, "{out}");
                    (2000, 0, false)
                }
                "entries-refused" => {
                    starts(format!("{answer}{first_kept}1\""));
                    assert!(tail.ends_with("\"}]}}\n"), "{tail}");
                    // Half the entries are left out.
                    assert!(out > MAX_LINE / 2 - 200_000 && out < MAX_LINE / 2, "{out}");
                    (1000, 1000, false)
                }
                "entries-batch" => {
                    starts(format!("[{answer}{first_kept}1\""));
                    assert!(tail.ends_with(",{\"method\":\"x\"}]\n"), "{tail}");
                    // A quarter of the line (half the answer's entries) is left out.
                    let three_quarters = MAX_LINE / 4 * 3;
                    assert!(
                        out > three_quarters - 200_000 && out < three_quarters + 200_000,
                        "{out}"
                    );
                    (500, 500, false)
                }
                _ => {
                    assert!(
                        head.starts_with(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603"#),
                        "{head}"
                    );
                    assert!(out < 300, "{out}");
                    (0, 0, true)
                }
            };
            let listings: Vec<serde_json::Value> = decision_lines(&log)
                .into_iter()
                .filter(|e| e["type"] == "assay.tool.listing")
                .collect();
            assert_eq!(listings.len(), 1, "{mode} {method}");
            let data = &listings[0]["data"];
            assert_eq!(data["method"], method);
            assert_eq!(data["shown"].as_array().unwrap().len(), shown, "{mode}");
            assert_eq!(data["removed"].as_array().unwrap().len(), removed, "{mode}");
            assert_eq!(data["replaced_by_error"], replaced, "{mode}");
            assert!(
                rss <= bound(),
                "{method} {mode}: peak RSS {} MiB (bound {} MiB)",
                rss >> 20,
                bound() >> 20
            );
        }
    }
}

/// SPEC §5.3 `results.max_bytes`: a 200 MiB answer under `max_bytes: 1048576` is read past,
/// never buffered whole (longer than the line bound too), and refused; the wrapper's peak RSS
/// stays within a small multiple of `max_bytes`, far below `max_line_bytes`.
#[test]
fn a_200_mib_answer_over_max_bytes_is_refused_in_memory_bounded_by_max_bytes() {
    const MAX_BYTES: usize = 1 << 20;
    let dir = tempdir();
    let policy = dir.path().join("results.yaml");
    std::fs::write(
        &policy,
        format!("version: \"1\"\nallow: [\"*\"]\nresults:\n  max_bytes: {MAX_BYTES}\n"),
    )
    .unwrap();
    let log = dir.path().join("decisions.ndjson");
    let server = root().join("tests/fixtures/results_server.py");
    let args = wrap_args(
        &[
            "--policy",
            &policy.display().to_string(),
            "--event-source",
            "assay://test/session",
            "--decision-log",
            &log.display().to_string(),
            "--decision-log-new",
        ],
        &["python3", &server.display().to_string()],
    );
    let input = |bytes: usize| {
        format!(
            "{}\n{}\n",
            format_args!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"flood","arguments":{{"bytes":{bytes}}}}}}}"#
            ),
            // A judged request (a `ping` pending beside the call would keep the line up to
            // the line bound: it is streamed only while every pending request is judged).
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"say","arguments":{"text":"after"}}}"#
        )
    };
    // The same session with a small answer: what the wrapper costs whatever it reads.
    std::fs::remove_file(&log).ok();
    let (base, _, _, _) = peak_rss_after(args.clone(), input(1000).as_bytes(), 2);
    std::fs::remove_file(&log).unwrap();
    let (rss, out, head, tail) = peak_rss_after(args, input(200 << 20).as_bytes(), 2);
    eprintln!(
        "200 MiB answer refused: peak RSS {} KiB (a 1000-byte answer: {} KiB), output {out} bytes",
        rss >> 10,
        base >> 10
    );
    assert!(
        head.starts_with(br#"{"jsonrpc":"2.0","id":1,"result":"#),
        "{:?}",
        String::from_utf8_lossy(&head)
    );
    assert!(out < 4096, "the refusal, not the answer: {out} bytes");
    assert!(
        tail.ends_with(concat!(r#""text":"after"}],"isError":false}}"#, "\n").as_bytes()),
        "the session went on: {:?}",
        String::from_utf8_lossy(&tail)
    );
    let events = decision_lines(&log);
    let result = events
        .iter()
        .find(|e| e["type"] == "assay.mcp.result" && e["data"]["request_id"] == 1)
        .expect("a result event");
    assert_eq!(result["data"]["action"], "refused");
    assert_eq!(result["data"]["reason_code"], "P_RESULT_TOO_LARGE");
    assert!(
        rss <= base + 4 * MAX_BYTES,
        "peak RSS {} KiB for a 200 MiB answer under max_bytes {} KiB (bound: {} KiB for a small answer, plus 4 × max_bytes)",
        rss >> 10,
        MAX_BYTES >> 10,
        base >> 10
    );
}
