//! Reading evidence as a person (`assay capture show`, `capture summary --format table`), shell
//! completions, the messages a new user meets first, and `--server-stderr tee` (SPEC §10).

use std::path::{Path, PathBuf};

use crate::util::*;

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn assay(args: &[&str]) -> Run {
    run(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>(), b"")
}

fn stdout(r: &Run) -> String {
    String::from_utf8_lossy(&r.stdout).into_owned()
}

/// The demo's capture: 5 decisions (echo and read_file allowed; read_file outside /workspace,
/// exec and write_file without content refused), labelled `demo-server`.
fn demo_capture(dir: &Path) -> PathBuf {
    let cap = dir.join("demo");
    demo_in(dir, &["--capture-dir", &s(&cap)]).expect_status(0);
    cap
}

#[test]
fn show_tells_who_when_how_it_ended_and_every_decision() {
    let dir = tempdir();
    let cap = demo_capture(dir.path());
    let r = assay(&["capture", "show", &s(&cap)]);
    r.expect_status(0);
    let out = stdout(&r);
    let (_, verdict) = read_verdict(&cap);
    for expected in [
        "verdict  CLOSED",
        "server_id       demo-server",
        &format!(
            "session id      {}",
            verdict["session_id"].as_str().unwrap()
        ),
        "event source    assay://demo/session",
        "producer        assay ",
        "command sha256  ",
        "policy          demo (sha256 ",
        "started         20",
        "stopped         20",
        "session end     client_closed",
        "server          exited with code 0",
        "kill requested  no",
        "decision log    complete: 5 written, 0 dropped",
        "SEQ  TIME",
        "counts: 2 allow, 3 deny, 0 error",
    ] {
        assert!(out.contains(expected), "missing {expected:?}\n{out}");
    }
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.starts_with("  ") && l.trim_start().starts_with(char::is_numeric))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let summary: Vec<(&str, &str, &str, &str)> =
        rows.iter().map(|r| (r[0], r[2], r[3], r[4])).collect();
    assert_eq!(
        summary,
        vec![
            ("0", "echo", "allow", "P_POLICY_ALLOW"),
            ("1", "read_file", "allow", "P_POLICY_ALLOW"),
            ("2", "read_file", "deny", "P_ARG_CONSTRAINT"),
            ("3", "exec", "deny", "P_TOOL_DENIED"),
            ("4", "write_file", "deny", "P_ARG_SCHEMA"),
        ],
        "{out}"
    );
    assert_eq!(rows[3][5], "deny:exec", "{out}");
}

#[test]
fn show_of_an_unknown_capture_says_why_and_vouches_for_nothing() {
    let dir = tempdir();
    let cap = demo_capture(dir.path());
    std::fs::remove_file(cap.join("session-stop.json")).unwrap();
    let r = assay(&["capture", "show", &s(&cap)]);
    r.expect_status(3);
    let out = stdout(&r);
    assert!(out.contains("verdict  UNKNOWN"), "{out}");
    assert!(
        out.contains("- missing_file: a required file is missing"),
        "{out}"
    );
    assert!(
        out.contains("stop record     none that passed the reader's checks"),
        "{out}"
    );
    assert!(out.contains("decisions (as read; not vouched for"), "{out}");

    // A log over the reader's bound is never read: no rows.
    let cap = demo_capture(&dir.path().join("x").tap_mkdir());
    let log = cap.join("decisions.ndjson");
    let f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.set_len(8 * 1024 * 1024 + 1).unwrap();
    let r = assay(&["capture", "show", &s(&cap)]);
    r.expect_status(3);
    let out = stdout(&r);
    assert!(out.contains("too_large"), "{out}");
    assert!(out.contains("not shown"), "{out}");
    assert!(!out.contains("P_POLICY_ALLOW"), "{out}");

    // Exit statuses as `capture read`: a missing directory is a usage error.
    let r = assay(&["capture", "show", &s(&dir.path().join("nope"))]);
    r.expect_status(2);
    assert!(r.stderr.contains("does not exist"), "{}", r.report());
}

trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}

impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

#[test]
fn show_escapes_what_it_did_not_write() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    // A tool name with an escape sequence and a right-to-left override, as a client may send.
    let hostile = call(2, r"ev\u001b[2Jil\u202egnp.exe", "{}");
    run(
        &wrap_args(&strs(&capture_opts(&cap)), &["python3", &demo_server()]),
        &script(&[INIT, &hostile]),
    )
    .expect_status(0);
    let r = assay(&["capture", "show", &s(&cap)]);
    r.expect_status(0);
    let out = stdout(&r);
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{202e}'),
        "{out:?}"
    );
    assert!(out.contains(r"ev\u{1b}[2Jil\u{202e}gnp.exe"), "{out}");
}

#[test]
fn summary_table_lists_every_capture_and_the_counts() {
    let dir = tempdir();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    demo_capture(&root);
    let bad = root.join("zz-broken");
    std::fs::create_dir(&bad).unwrap();
    std::fs::copy(root.join("demo/protocol.json"), bad.join("protocol.json")).unwrap();
    let r = assay(&["capture", "summary", &s(&root), "--format", "table"]);
    r.expect_status(3);
    let out = stdout(&r);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("CAPTURE"), "{out}");
    let demo: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        demo,
        ["demo", "closed", "demo-server", "exited", "0", "5", "-"],
        "{out}"
    );
    assert!(
        lines[2].starts_with("zz-broken") && lines[2].contains("unknown"),
        "{out}"
    );
    assert!(lines[2].contains("missing_file"), "{out}");
    assert_eq!(
        lines[3], "1 closed, 0 incomplete, 1 unknown, 0 no_session",
        "{out}"
    );
    // JSON lines stay the default.
    let r = assay(&["capture", "summary", &s(&root)]);
    r.expect_status(3);
    assert_eq!(r.lines().len(), 3);
    assay(&["capture", "summary", &s(&root), "--format", "yaml"]).expect_status(2);
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let r = assay(&["completions", shell]);
        r.expect_status(0);
        let out = stdout(&r);
        let root_option = if shell == "fish" {
            "-l capture-root"
        } else {
            "--capture-root"
        };
        for word in ["wrap-config", "summary", root_option] {
            assert!(out.contains(word), "{shell}: {word}");
        }
    }
    // bash loads the script and registers the completion for `assay`.
    let r = run_program(
        "bash",
        &[
            "-c".into(),
            format!(
                "source <('{}' completions bash) && complete -p assay",
                bin().display()
            ),
        ],
        b"",
    );
    r.expect_status(0);
    assert!(stdout(&r).contains("assay"), "{}", r.report());
    assay(&["completions", "tcsh"]).expect_status(2);
}

#[test]
fn first_messages_name_the_real_problem() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let server = demo_server();
    let wrap = |opts: Vec<String>| {
        run(
            &wrap_args(&strs(&opts), &["python3", &server]),
            &script(&[INIT]),
        )
    };
    wrap(capture_opts(&cap)).expect_status(0);
    // Reusing a capture directory names --capture-dir, never --decision-log.
    let r = wrap(capture_opts(&cap));
    r.expect_status(2);
    assert!(r.stderr.contains("--capture-dir:"), "{}", r.report());
    assert!(r.stderr.contains("--capture-root"), "{}", r.report());
    assert!(!r.stderr.contains("decision-log"), "{}", r.report());

    // A relative policy that is not there: the absolute path and the working directory.
    let mut cmd = std::process::Command::new(bin());
    cmd.args(wrap_args(
        &["--policy", "assay.yaml"],
        &["python3", &server],
    ))
    .current_dir(dir.path());
    let r = run_command(cmd, b"");
    r.expect_status(2);
    let cwd = dir.path().canonicalize().unwrap();
    assert!(
        r.stderr.contains(&s(&cwd.join("assay.yaml"))),
        "{}",
        r.report()
    );
    assert!(
        r.stderr
            .contains(&format!("working directory {}", cwd.display())),
        "{}",
        r.report()
    );

    // An empty policy says so.
    let empty = dir.path().join("empty.yaml");
    std::fs::write(&empty, "# nothing yet\n").unwrap();
    let r = wrap(vec!["--policy".into(), s(&empty)]);
    r.expect_status(2);
    assert!(r.stderr.contains("is empty"), "{}", r.report());
    assert!(!r.stderr.contains("(top level)"), "{}", r.report());

    // A schema refusal names the missing property.
    let cap = demo_capture(dir.path());
    let lines = decision_lines(&cap.join("decisions.ndjson"));
    let refusal = lines
        .iter()
        .find(|d| d["data"]["reason_code"] == "P_ARG_SCHEMA")
        .unwrap();
    let reason = refusal["data"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("missing required property `content`"),
        "{reason}"
    );
}

#[test]
fn server_stderr_tee_copies_it_to_assay_stderr_and_keeps_the_log() {
    let dir = tempdir();
    let server = dir.path().join("noisy.py");
    std::fs::write(
        &server,
        "import sys\nprint('noisy server starting', file=sys.stderr, flush=True)\n\
         for line in sys.stdin:\n    pass\nprint('noisy server done', file=sys.stderr, flush=True)\n",
    )
    .unwrap();
    for (mode, on_stderr) in [(None, false), (Some("log"), false), (Some("tee"), true)] {
        let cap = dir.path().join(format!("cap-{mode:?}"));
        let mut opts = capture_opts(&cap);
        if let Some(m) = mode {
            opts.extend(["--server-stderr".to_string(), m.to_string()]);
        }
        let r = run(
            &wrap_args(&strs(&opts), &["python3", &s(&server)]),
            &script(&[INIT]),
        );
        r.expect_status(0);
        let log = std::fs::read_to_string(cap.join("proxy-stderr.log")).unwrap();
        assert!(
            log.contains("noisy server starting\nnoisy server done\n"),
            "{mode:?}: {log}"
        );
        assert_eq!(
            r.stderr.contains("noisy server starting"),
            on_stderr,
            "{}",
            r.report()
        );
        assert_eq!(
            r.stderr.contains("noisy server done"),
            on_stderr,
            "{}",
            r.report()
        );
        let (_, verdict) = read_verdict(&cap);
        assert_eq!(verdict["closure"], "closed", "{mode:?}");
    }
}

/// SPEC §10: summary lines and rows carry the capture's label; a kill by the wrapper reads as
/// one, not as a bare signal; `capture show` on a capture root points at `capture summary`.
#[test]
fn views_name_the_label_a_kill_by_assay_and_a_capture_root() {
    let dir = tempdir();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let cap = root.join("killed");
    let mut opts = capture_opts(&cap);
    opts.extend(["--label".to_string(), "my-server".to_string()]);
    // The server ignores SIGTERM and outlives the session: assay kills it (SIGKILL).
    run(
        &wrap_args(&strs(&opts), &["python3", &fault_server(), "ignore"]),
        &script(&[INIT]),
    )
    .expect_status(128 + 9);
    // Issue 41: in a closed capture the kill is the normal end of a server that does not exit
    // on end of input, and reads so (SPEC §10's words stay for a kill that is not).
    const KILLED: &str =
        "ended by assay after the client left (SIGKILL: the server did not exit on end of input)";
    let r = assay(&["capture", "show", &s(&cap)]);
    r.expect_status(0);
    let out = stdout(&r);
    assert!(out.contains(&format!("server          {KILLED}")), "{out}");
    assert!(!out.contains("signal 9"), "{out}");
    assert!(!out.contains("killed by assay"), "{out}");

    let r = assay(&["capture", "summary", &s(&root), "--format", "table"]);
    r.expect_status(0);
    let out = stdout(&r);
    let row = out.lines().nth(1).unwrap();
    assert!(
        row.starts_with("killed") && row.contains("my-server") && row.contains(KILLED),
        "{out}"
    );
    let r = assay(&["capture", "summary", &s(&root)]);
    r.expect_status(0);
    assert_eq!(r.lines()[0]["server_id"], "my-server", "{}", r.report());

    // A capture root is not a capture: say what to run instead of reporting missing files.
    let r = assay(&["capture", "show", &s(&root)]);
    r.expect_status(2);
    assert!(r.stdout.is_empty(), "{}", r.report());
    assert!(
        r.stderr.contains("is a capture root") && r.stderr.contains("assay capture summary"),
        "{}",
        r.report()
    );
}

/// Appends `lines` to a capture's decision log and updates the stop record's accounting to
/// match, as a wrapper that wrote them would have.
fn append_events(cap: &Path, lines: &[serde_json::Value]) {
    let log = cap.join("decisions.ndjson");
    let mut bytes = std::fs::read(&log).unwrap();
    for l in lines {
        bytes.extend_from_slice(serde_json::to_string(l).unwrap().as_bytes());
        bytes.push(b'\n');
    }
    std::fs::write(&log, &bytes).unwrap();
    let stop_path = cap.join("session-stop.json");
    let mut stop = read_json(&stop_path);
    let count = bytes.iter().filter(|b| **b == b'\n').count();
    stop["data"]["decision_events_written"] = serde_json::json!(count);
    stop["data"]["decision_prefix_sha256"] = serde_json::json!(sha256_file(&log));
    std::fs::write(&stop_path, serde_json::to_vec(&stop).unwrap()).unwrap();
}

/// SPEC §4.1a: `capture show` lists each listing (request, how many shown, each removed tool
/// and why, its name rendered for people) and each decision on another governed method.
#[test]
fn show_lists_the_listings_and_other_governed_methods() {
    let dir = tempdir();
    let cap = demo_capture(dir.path());
    let first = decision_lines(&cap.join("decisions.ndjson"))[0].clone();
    let sid = first["data"]["session_id"].as_str().unwrap().to_string();
    let n = decision_lines(&cap.join("decisions.ndjson")).len();
    let event = |ty: &str, id: String, data: serde_json::Value| {
        serde_json::json!({
            "specversion": "1.0", "id": id, "type": ty, "source": first["source"],
            "time": first["time"], "datacontenttype": "application/json", "data": data,
        })
    };
    let digest = "ab".repeat(32);
    let listing = event(
        "assay.tool.listing",
        format!("evt_listing_{sid}_{n}"),
        serde_json::json!({
            "session_id": sid, "seq": n, "request_id": "7",
            "shown": [{"name": "echo", "sha256": digest}, {"name": "read_file", "sha256": digest}],
            "removed": [
                {"name": "ev\u{1b}[2Jil\u{202e}", "sha256": digest, "reason_code": "P_TOOL_DRIFT"},
                {"name": "(instructions)", "sha256": null, "reason_code": "P_INSTRUCTIONS_DRIFT"},
            ],
            "replaced_by_error": false, "policy_sha256": first["data"]["policy_sha256"],
        }),
    );
    let mcp = event(
        "assay.mcp.decision",
        format!("evt_decision_{sid}_{}", n + 1),
        serde_json::json!({
            "session_id": sid, "seq": n + 1, "method": "resources/read",
            "direction": "client_to_server", "target": "file:///workspace/.e\u{1b}nv\u{202e}",
            "request_id": "8", "decision": "deny", "reason_code": "P_RESOURCE_DENIED",
            "reason": "denied", "matched_rule": "resources.deny:file:///workspace/.env",
            "enforced": true, "policy_sha256": first["data"]["policy_sha256"],
            "params_sha256": digest,
        }),
    );
    append_events(&cap, &[listing, mcp]);
    let r = assay(&["capture", "show", &s(&cap)]);
    r.expect_status(0);
    let out = stdout(&r);
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{202e}'),
        "{out:?}"
    );
    assert!(out.contains("listings (what the client was shown"), "{out}");
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{n} ")) && l.contains(" 7 "))
        .unwrap_or_else(|| panic!("no listing row: {out}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    // A listing written before listings named their list reads as a tools/list result.
    assert_eq!(cells[2..], ["tools/list", "7", "2", "2"], "{out}");
    // Each entry shown is named, with the start of its digest.
    assert!(
        out.contains(&format!("  - seq {n}: shown echo (sha256 ")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "  - seq {n}: removed ev\\u{{1b}}[2Jil\\u{{202e}} (P_TOOL_DRIFT)"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "  - seq {n}: removed (instructions) (P_INSTRUCTIONS_DRIFT)"
        )),
        "{out}"
    );
    assert!(out.contains("other governed methods"), "{out}");
    let mcp_row = out
        .lines()
        .find(|l| l.contains("resources/read"))
        .unwrap_or_else(|| panic!("no method row: {out}"));
    // The target is peer text: rendered, never raw.
    for cell in [
        "file:///workspace/.e\\u{1b}nv\\u{202e}",
        "deny",
        "P_RESOURCE_DENIED",
    ] {
        assert!(mcp_row.contains(cell), "{mcp_row}");
    }
    assert!(
        out.contains(
            "counts: 2 allow, 3 deny, 0 error, 1 listings (2 tools removed); \
             other governed methods: 0 allow, 1 deny, 0 error"
        ),
        "{out}"
    );
}

/// SPEC §4.1a `record_arguments`: `capture show` prints each decision's recorded arguments, the
/// client's text rendered for people (never raw), and says when they were cut.
#[test]
fn show_prints_recorded_arguments_rendered() {
    let dir = tempdir();
    let cap = demo_capture(dir.path());
    let lines = decision_lines(&cap.join("decisions.ndjson"));
    let sid = lines[0]["data"]["session_id"].as_str().unwrap().to_string();
    let n = lines.len();
    let recorded = |seq: usize, text: &str, cut: bool| {
        let mut l = lines[0].clone();
        l["id"] = serde_json::json!(format!("evt_decision_{sid}_{seq}"));
        l["data"]["seq"] = serde_json::json!(seq);
        l["data"]["arguments"] = serde_json::json!(text);
        l["data"]["arguments_truncated"] = serde_json::json!(cut);
        l
    };
    append_events(
        &cap,
        &[
            recorded(n, "{\"path\":\"/workspace/a\u{1b}[2J\u{202e}\"}", false),
            recorded(n + 1, "{\"token\":\"[redacted]\",\"x\":\"aaa", true),
        ],
    );
    let r = assay(&["capture", "show", &s(&cap)]);
    r.expect_status(0);
    let out = stdout(&r);
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{202e}'),
        "{out:?}"
    );
    assert!(out.contains("recorded arguments"), "{out}");
    assert!(
        out.contains(&format!(
            "  - seq {n}: {{\"path\":\"/workspace/a\\u{{1b}}[2J\\u{{202e}}\"}}\n"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "  - seq {}: {{\"token\":\"[redacted]\",\"x\":\"aaa (cut at the 4 KiB bound)",
            n + 1
        )),
        "{out}"
    );
}
