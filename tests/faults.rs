//! The fault matrix of SPEC §11, each row ending in the documented stop record and exit status,
//! with real child processes and real signals.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::*;

pub(crate) fn stop_of(cap: &Path) -> Value {
    read_json(&cap.join("session-stop.json"))["data"].clone()
}

/// Runs the fault server in `mode` into a capture; returns the run and the stop data.
fn fault(mode: &str, extra: &[&str], input: &[u8]) -> (Run, Option<Value>, tempfile::TempDir) {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut opts = capture_opts(&cap);
    opts.extend(extra.iter().map(|s| s.to_string()));
    let r = run(
        &wrap_args(&strs(&opts), &["python3", &fault_server(), mode]),
        input,
    );
    let stop = cap
        .join("session-stop.json")
        .exists()
        .then(|| stop_of(&cap));
    (r, stop, dir)
}

pub(crate) fn session() -> Vec<u8> {
    script(&[
        INIT,
        &call(2, "echo", r#"{"text":"a"}"#),
        &call(3, "exec", "{}"),
    ])
}

fn assert_status(stop: &Value, termination: &str, exit_code: Value, signal: Value) {
    assert_eq!(stop["termination"], termination, "{stop}");
    assert_eq!(stop["exit_code"], exit_code, "{stop}");
    assert_eq!(stop["signal"], signal, "{stop}");
}

/// The whole stop record one fault-matrix row must end in (SPEC §4.3), plus the reader's
/// verdict on the capture (SPEC §7, `assay capture read` exit status).
pub(crate) struct Expected {
    pub session_end: &'static str,
    pub termination: &'static str,
    pub exit_code: Value,
    pub signal: Value,
    /// `None`: a boolean either way (whether a core was dumped depends on the machine).
    pub core_dumped: Option<Value>,
    pub kill_requested: bool,
    /// SPEC §4.3 `group_killed`: other processes of the server's group ran at the kill attempt.
    pub group_killed: bool,
    pub decision_log: &'static str,
    /// `None`: checked by the row itself (written + dropped there).
    pub written: Option<u64>,
    pub dropped: Option<u64>,
    /// `assay capture read` exit status: 0 closed, 1 incomplete, 3 unknown.
    pub verdict: i32,
}

/// A session of `calls` allowed calls (ids 10, 11, …) whose decision log failed part-way (SPEC
/// §4.1): status 3, every call still answered by the server, and a complete stop record with an
/// `incomplete` log that the reader judges incomplete. Returns (written, dropped).
pub(crate) fn assert_log_write_failure(r: &Run, cap: &Path, calls: u64) -> (u64, u64) {
    r.expect_status(3);
    // The proxy kept forwarding: every allowed call was answered by the server.
    for i in 0..calls {
        let resp = r.response(json!(10 + i));
        assert_eq!(resp["result"]["isError"], false, "{}", r.report());
    }
    assert_stop_record(
        cap,
        &Expected {
            session_end: "client_closed",
            termination: "exited",
            exit_code: json!(0),
            signal: Value::Null,
            core_dumped: Some(Value::Null),
            kill_requested: false,
            group_killed: false,
            decision_log: "incomplete",
            written: None,
            dropped: None,
            verdict: 1,
        },
    );
    let s = stop_of(cap);
    let written = s["decision_events_written"].as_u64().unwrap();
    let dropped = s["decision_events_dropped"].as_u64().unwrap();
    assert_eq!(written + dropped, calls, "{s}");
    (written, dropped)
}

/// Checks every field of the stop record in `cap` against `e` and the context, the log
/// accounting against the log on disk, and the reader's verdict.
pub(crate) fn assert_stop_record(cap: &Path, e: &Expected) {
    let event = read_json(&cap.join("session-stop.json"));
    let ctx = read_json(&cap.join("session-context.json"));
    let s = &event["data"];
    let mut keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "assay_kill_requested",
            "assertion_basis",
            "core_dumped",
            "decision_events_dropped",
            "decision_events_written",
            "decision_log",
            "decision_prefix_sha256",
            "exit_code",
            "group_killed",
            "non_claims",
            "server_id",
            "server_pid",
            "session_context_id",
            "session_end",
            "session_id",
            "signal",
            "termination",
        ],
        "{s}"
    );
    let sid = ctx["data"]["session_id"].as_str().unwrap();
    assert_eq!(s["session_id"], sid, "{s}");
    assert_eq!(event["id"], format!("evt_stop_{sid}"));
    assert_eq!(event["type"], "assay.mcp.session.stop.v1");
    assert_eq!(s["server_id"], "default-mcp-server");
    assert!(s["server_pid"].as_u64().is_some_and(|p| p > 0), "{s}");
    assert_eq!(s["server_pid"], ctx["data"]["server_pid"]);
    assert_eq!(s["session_context_id"], ctx["id"]);
    assert_eq!(s["session_end"], e.session_end, "{s}");
    assert_status(s, e.termination, e.exit_code.clone(), e.signal.clone());
    match &e.core_dumped {
        Some(v) => assert_eq!(&s["core_dumped"], v, "{s}"),
        None => assert!(s["core_dumped"].is_boolean(), "{s}"),
    }
    assert_eq!(s["assay_kill_requested"], e.kill_requested, "{s}");
    assert_eq!(s["group_killed"], e.group_killed, "{s}");
    assert_eq!(s["decision_log"], e.decision_log, "{s}");
    if let Some(w) = e.written {
        assert_eq!(s["decision_events_written"], w, "{s}");
    }
    if let Some(d) = e.dropped {
        assert_eq!(s["decision_events_dropped"], d, "{s}");
    }
    // The prefix digest covers exactly the complete lines on disk.
    let log = std::fs::read(cap.join("decisions.ndjson")).unwrap();
    let end = log.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    assert_eq!(
        s["decision_events_written"].as_u64(),
        Some(log[..end].iter().filter(|b| **b == b'\n').count() as u64),
        "{s}"
    );
    use sha2::Digest;
    let digest: String = sha2::Sha256::digest(&log[..end])
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(s["decision_prefix_sha256"], digest.as_str(), "{s}");
    assert_eq!(s["assertion_basis"], "producer_observation");
    assert_eq!(
        s["non_claims"],
        json!([
            "not_execution_proof",
            "not_authentication",
            "not_global_coverage",
            "not_durable_storage_proof"
        ])
    );
    let verdict = run(
        &["capture".into(), "read".into(), cap.display().to_string()],
        b"",
    );
    verdict.expect_status(e.verdict);
}

/// A normal ending with both session() decisions written.
pub(crate) fn ended(termination: &'static str, exit_code: Value, signal: Value) -> Expected {
    Expected {
        session_end: "client_closed",
        termination,
        exit_code,
        signal,
        core_dumped: Some(Value::Null),
        kill_requested: false,
        group_killed: false,
        decision_log: "complete",
        written: Some(2),
        dropped: Some(0),
        verdict: 0,
    }
}

#[test]
fn child_exits_0() {
    let (r, _stop, d) = fault("normal", &[], &session());
    r.expect_status(0);
    assert_stop_record(
        &d.path().join("cap"),
        &ended("exited", json!(0), Value::Null),
    );
}

#[test]
fn child_exits_7_with_a_complete_log() {
    let (r, stop, d) = fault("exit7", &[], &session());
    r.expect_status(7);
    let s = stop.unwrap();
    let log = d.path().join("cap/decisions.ndjson");
    assert_eq!(s["decision_prefix_sha256"], sha256_file(&log).as_str());
    // A nonzero exit still has a complete log and a closed capture.
    assert_stop_record(
        &d.path().join("cap"),
        &ended("exited", json!(7), Value::Null),
    );
}

#[test]
fn child_killed_by_sigkill() {
    let (r, _stop, d) = fault("sigkill", &[], &session());
    r.expect_status(128 + 9);
    let mut e = ended("signaled", Value::Null, json!(9));
    e.core_dumped = Some(json!(false));
    assert_stop_record(&d.path().join("cap"), &e);
}

#[test]
fn child_killed_by_sigsegv() {
    let (r, _stop, d) = fault("sigsegv", &[], &session());
    r.expect_status(128 + 11);
    let mut e = ended("signaled", Value::Null, json!(11));
    e.core_dumped = None;
    assert_stop_record(&d.path().join("cap"), &e);
}

#[test]
fn child_ignoring_stdin_eof_and_sigterm_is_killed_within_the_bound() {
    let (r, stop, d) = fault("ignore", &["--drain-timeout", "0.5"], &session());
    stop.expect("stop written");
    r.expect_status(128 + 9);
    let mut e = ended("signaled", Value::Null, json!(9));
    e.core_dumped = Some(json!(false));
    e.kill_requested = true;
    assert_stop_record(&d.path().join("cap"), &e);
    // drain 0.5 s + kill + bounded poll; far below the 2 s cleanup bound plus drain.
    assert!(
        r.elapsed < Duration::from_millis(500 + 2500),
        "{:?}",
        r.elapsed
    );
}

#[test]
fn child_closing_stdout_but_running_is_killed_at_cleanup() {
    let (r, stop, d) = fault("close-stdout", &[], &session());
    stop.expect("stop written");
    r.expect_status(137);
    let mut e = ended("signaled", Value::Null, json!(9));
    e.core_dumped = Some(json!(false));
    e.kill_requested = true;
    assert_stop_record(&d.path().join("cap"), &e);
    assert!(r.elapsed < Duration::from_secs(5));
}

/// A server whose output ended is on its way out (docs/decisions.md, "A longer wait for the
/// status of a server whose output ended"): one that closes its output and exits a tenth of a
/// second later is recorded with its own status, never killed.
#[test]
fn a_server_exiting_a_moment_after_its_output_closed_is_not_killed() {
    let (r, stop, d) = fault("close-stdout-exit", &[], &session());
    stop.expect("stop written");
    r.expect_status(5);
    assert_stop_record(
        &d.path().join("cap"),
        &ended("exited", json!(5), Value::Null),
    );
}

/// SPEC §3 item 9, §3.1: the server is a process tree. A grandchild that holds the server's
/// stdout after the server exited is a process of the server's group: the cleanup ends the
/// group (one SIGKILL to it), the pipe closes, and the session is a healthy `client_closed`
/// with the leader's own status, `assay_kill_requested` and `group_killed`.
#[test]
fn grandchild_holding_the_pipe_is_ended_with_the_group() {
    let (r, stop, d) = fault("grandchild", &[], &session());
    stop.expect("stop written");
    r.expect_status(0);
    let mut e = ended("exited", json!(0), Value::Null);
    e.kill_requested = true;
    e.group_killed = true;
    assert_stop_record(&d.path().join("cap"), &e);
    // Before the client's SIGTERM (2 s after its end of input), as MCP hosts close.
    assert!(r.elapsed < Duration::from_secs(2), "{:?}", r.elapsed);
}

/// A descendant that left the group (`setsid`) holding the pipe: the command line is the
/// subreaper of its sessions, so it is reparented to the wrapper and ended in the same window.
/// The group itself had nothing left to kill: the record says so.
#[test]
fn a_descendant_that_left_the_group_is_ended_by_the_subreaper() {
    let (r, stop, d) = fault("setsid-grandchild", &[], &session());
    stop.expect("stop written");
    r.expect_status(0);
    assert_stop_record(
        &d.path().join("cap"),
        &ended("exited", json!(0), Value::Null),
    );
    let log = std::fs::read_to_string(d.path().join("cap/proxy-stderr.log")).unwrap();
    assert!(
        log.contains("ended 1 process that had left the server's process group"),
        "{log}\n{}",
        r.report()
    );
    assert!(r.elapsed < Duration::from_secs(4), "{:?}", r.elapsed);
}

#[test]
fn command_not_found_and_not_executable() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let opts = capture_opts(&cap);
    let r = run(&wrap_args(&strs(&opts), &["/nonexistent/mcp-server"]), b"");
    r.expect_status(127);
    assert!(!cap.join("session-stop.json").exists());
    assert!(r.stderr.starts_with("assay: "), "{}", r.report());

    let script_path = dir.path().join("server.sh");
    std::fs::write(&script_path, "#!/bin/sh\n").unwrap();
    let r = run(
        &wrap_args(
            &["--policy", &demo_policy().display().to_string()],
            &[&script_path.display().to_string()],
        ),
        b"",
    );
    r.expect_status(126);
}

#[test]
fn decision_log_write_failure_poisons_the_writer() {
    // A real write failure (RLIMIT_FSIZE) part-way through the log.
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let r = run_with_file_size_limit(&cap);
    let (written, dropped) = assert_log_write_failure(&r, &cap, 8);
    let s = stop_of(&cap);
    assert!(
        written >= 1 && dropped >= 1,
        "{written} written, {dropped} dropped"
    );
    let bytes = std::fs::read(cap.join("decisions.ndjson")).unwrap();
    assert_eq!(bytes.len() % 512, 0, "the file stops at the size limit");
    let complete: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
    let prefix: Vec<u8> = complete
        .iter()
        .filter(|l| l.ends_with(b"\n"))
        .flat_map(|l| l.iter().copied())
        .collect();
    assert_eq!(
        complete.iter().filter(|l| l.ends_with(b"\n")).count() as u64,
        written
    );
    use sha2::Digest;
    let digest: String = sha2::Sha256::digest(&prefix)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(s["decision_prefix_sha256"], digest.as_str());
    assert!(
        bytes.len() > prefix.len(),
        "a partial tail follows the prefix"
    );
}

/// SPEC §4.1 with a client that pipelines: the decisions of a batch are written together (each
/// line whole, several per write), and a real write failure (RLIMIT_FSIZE) in the middle of such
/// a write is counted as one write per line would count it — the lines written whole before the
/// limit are `written` and make the prefix digest, the line the limit cut and every later one
/// are `dropped` — and the file holds exactly the bytes one write per line would have left.
#[test]
fn pipelined_decisions_cut_by_the_file_size_limit_are_counted_line_by_line() {
    const CALLS: u64 = 800;
    // 200 blocks of 512 bytes: about 150 decision lines, far fewer than the calls.
    const LIMIT: usize = 200 * 512;
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut lines = vec![INIT.to_string()];
    for i in 0..CALLS {
        lines.push(call(
            10 + i,
            "echo",
            &format!(r#"{{"text":"{}","n":{i}}}"#, "p".repeat((i % 40) as usize)),
        ));
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    // Every line at once: the wrapper reads ahead and judges whole batches.
    let r = run_under_file_size_limit(&cap, 200, &script(&refs));
    let (written, dropped) = assert_log_write_failure(&r, &cap, CALLS);
    let bytes = std::fs::read(cap.join("decisions.ndjson")).unwrap();
    assert_eq!(bytes.len(), LIMIT, "the file stops at the size limit");
    let complete: Vec<&[u8]> = bytes
        .split_inclusive(|b| *b == b'\n')
        .filter(|l| l.ends_with(b"\n"))
        .collect();
    assert!(
        (100..CALLS as usize).contains(&complete.len()),
        "{} whole lines",
        complete.len()
    );
    assert_eq!(complete.len() as u64, written, "{}", r.report());
    assert_eq!(dropped, CALLS - written);
    for (seq, line) in complete.iter().enumerate() {
        let v: Value = serde_json::from_slice(line).unwrap();
        assert_eq!(v["data"]["seq"], seq as u64);
        assert_eq!(v["data"]["tool_call_id"], (10 + seq as u64).to_string());
    }
    let prefix: Vec<u8> = complete.concat();
    assert!(
        bytes.len() > prefix.len(),
        "a partial tail follows the prefix"
    );
    use sha2::Digest;
    let digest: String = sha2::Sha256::digest(&prefix)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(stop_of(&cap)["decision_prefix_sha256"], digest.as_str());
}

#[test]
fn stop_write_failure_exits_3_naming_the_child_status_and_loses_nothing() {
    let dir = tempdir();
    let evidence = dir.path().join("evidence");
    let stop_dir = dir.path().join("stopdir");
    std::fs::create_dir(&evidence).unwrap();
    std::fs::create_dir(&stop_dir).unwrap();
    let log = evidence.join("decisions.ndjson");
    let ctx = evidence.join("context.json");
    let opts = evidence_opts(&[
        "--decision-log".into(),
        log.display().to_string(),
        "--decision-log-new".into(),
        "--session-context-out".into(),
        ctx.display().to_string(),
        "--session-stop-out".into(),
        stop_dir.join("stop.json").display().to_string(),
    ]);
    let args = wrap_args(&strs(&opts), &["python3", &fault_server(), "exit7"]);
    let stop_dir2 = stop_dir.clone();
    let r = crate::util::run_during(&args, &session(), Duration::from_millis(700), move || {
        std::fs::remove_dir(&stop_dir2).unwrap();
    });
    r.expect_status(3);
    assert!(
        r.stderr.contains("child exited with status 7"),
        "{}",
        r.report()
    );
    assert!(!stop_dir.exists());
    // Earlier evidence is intact.
    assert_eq!(decision_lines(&log).len(), 2);
    assert_eq!(read_json(&ctx)["type"], "assay.mcp.session.context.v1");
}

#[test]
fn discovery_only_run_writes_no_stop() {
    let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#;
    let (r, stop, d) = fault("normal", &[], &script(&[discover, discover]));
    r.expect_status(0);
    assert!(stop.is_none());
    assert!(!d.path().join("cap/session-stop.json").exists());
    // Other outputs behave as usual.
    assert!(d.path().join("cap/session-context.json").exists());
    assert!(d.path().join("cap/decisions.ndjson").exists());

    let (r, stop, _d) = fault("normal", &[], b"");
    r.expect_status(0);
    assert!(stop.is_none(), "no client message at all: no session");

    let (_r, stop, _d) = fault("normal", &[], &script(&[discover, INIT]));
    assert!(stop.is_some(), "a non-discovery message makes a session");
}
