//! `assay policy replay` and `assay policy suggest` (SPEC §10) on captures of real sessions: the
//! wrapper runs the demo server and the governed fixture server under one policy, a client
//! written here speaks to it line by line (each request waits for its answer, so the order of
//! the decision log is the order of the script), and the captures are replayed under variants
//! whose answers are known — a deny added, an allow narrowed, a constraint changed with and
//! without recorded arguments, pins changed, limits lowered — and with forged and incomplete
//! captures, which are skipped and named. Every fixture's suggested policy passes `policy check`
//! and replays its captures with no decision newly denied.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::util::*;

const RECORDING: &str = r#"version: "1"
allow: ["*"]
deny: ["exec", "shell*"]
hide_refused_tools: true
constraints:
  - tool: read_file
    params:
      path: { within: "/workspace" }
resources:
  allow: ["file:///workspace/**", "test://static/resource/*"]
  deny: ["file:///workspace/.env"]
prompts:
  allow: ["*"]
  deny: ["debug_*"]
client_features: { sampling: deny, roots: allow }
"#;

/// The demo session: a listing, then echo twice, read_file, exec (denied), write_file.
const DEMO: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/workspace/a.txt"}}}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"exec","arguments":{"cmd":"ls"}}}"#,
    r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}"#,
    r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/workspace/b","content":"x"}}}"#,
];

/// The governed session: resources read (one denied), prompts got (one denied), a sampling
/// request (denied) and a roots request (allowed, answered by the client here).
const GOVERNED: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":2,"method":"resources/list"}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///workspace/a.txt"}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///workspace/.env"}}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"test://static/resource/1"}}"#,
    r#"{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"greet"}}"#,
    r#"{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"debug_dump"}}"#,
    r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"ask","arguments":{"feature":"sampling"}}}"#,
    r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ask","arguments":{"feature":"roots"}}}"#,
];

/// The captures every test reads (made once): `args` two demo sessions recording arguments,
/// `plain` one without, `answers` one recording arguments and every answer (`results: {}`), `governed` one governed session, `mixed` a closed capture beside a
/// forged and an incomplete one.
struct Fixture {
    dir: PathBuf,
}

impl Fixture {
    fn root(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    fn policy(&self, name: &str, yaml: &str) -> PathBuf {
        let p = self.dir.join(format!("{name}.yaml"));
        std::fs::write(&p, yaml).unwrap();
        p
    }
}

/// Runs one session through `assay mcp wrap` into a new capture under `root`, sending each line
/// only after the answer to the previous request arrived (server requests are answered with an
/// empty result).
fn session(policy: &Path, root: &Path, server: &[&str], lines: &[&str]) {
    let mut cmd = Command::new(bin());
    cmd.args(["mcp", "wrap", "--policy"])
        .arg(policy)
        .args(["--event-source", "assay://test/replay", "--capture-root"])
        .arg(root)
        .arg("--")
        .args(server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let init = [
        INIT,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    ];
    for line in init.iter().chain(lines) {
        writeln!(stdin, "{line}").unwrap();
        let sent: Value = serde_json::from_str(line).unwrap();
        let Some(id) = sent.get("id") else { continue };
        loop {
            let mut got = String::new();
            assert!(out.read_line(&mut got).unwrap() > 0, "no answer to {line}");
            let v: Value = serde_json::from_str(&got).unwrap();
            if v.get("method").is_some() && v.get("id").is_some() {
                let answer = json!({"jsonrpc":"2.0","id":v["id"],"result":{"roots":[]}});
                writeln!(stdin, "{answer}").unwrap();
                continue;
            }
            if v.get("id") == Some(id) {
                break;
            }
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempdir().keep();
        let f = Fixture { dir };
        let with_args = f.policy(
            "recording-args",
            &format!("{RECORDING}record_arguments: true\n"),
        );
        let plain = f.policy("recording", RECORDING);
        let demo = ["python3".to_string(), demo_server()];
        let demo: Vec<&str> = demo.iter().map(String::as_str).collect();
        for _ in 0..2 {
            session(&with_args, &f.root("args"), &demo, DEMO);
        }
        session(&plain, &f.root("plain"), &demo, DEMO);
        let keeping = f.policy(
            "recording-definitions",
            &format!("{RECORDING}record_definitions: true\n"),
        );
        for _ in 0..2 {
            session(&keeping, &f.root("kept"), &demo, DEMO);
        }
        let answers = f.policy(
            "recording-answers",
            &format!("{RECORDING}record_arguments: true\nresults: {{}}\n"),
        );
        session(&answers, &f.root("answers"), &demo, DEMO);
        let governed = root().join("tests/fixtures/governed_server.py");
        let governed = ["python3", governed.to_str().unwrap()];
        session(&with_args, &f.root("governed"), &governed, GOVERNED);

        let mixed = f.root("mixed");
        session(&plain, &mixed, &demo, DEMO);
        let good = only_capture(&mixed);
        let forged = mixed.join("forged");
        std::fs::create_dir(&forged).unwrap();
        for file in ["protocol.json", "session-context.json", "session-stop.json"] {
            std::fs::copy(good.join(file), forged.join(file)).unwrap();
        }
        let log = std::fs::read_to_string(good.join("decisions.ndjson")).unwrap();
        let log = log.replacen("\"decision\":\"deny\"", "\"decision\":\"allow\"", 1);
        std::fs::write(forged.join("decisions.ndjson"), log).unwrap();
        run_with_file_size_limit(&mixed.join("incomplete"));
        f
    })
}

fn only_capture(root: &Path) -> PathBuf {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    entries.remove(0)
}

/// `policy replay --format json`: the change objects and the summary.
fn replay(policy: &Path, roots: &[PathBuf]) -> (Run, Vec<Value>, Value) {
    let mut args = vec![
        "policy".to_string(),
        "replay".into(),
        policy.display().to_string(),
    ];
    args.extend(roots.iter().map(|r| r.display().to_string()));
    args.extend(["--format".into(), "json".into()]);
    let r = run(&args, b"");
    let mut lines = r.lines();
    let summary = lines.pop().unwrap_or_default()["summary"].clone();
    (r, lines, summary)
}

/// `policy check --format json` of `policy`: exit 0, and its summary.
fn checked(policy: &Path) -> Value {
    let args = [
        "policy",
        "check",
        &policy.display().to_string(),
        "--format",
        "json",
    ];
    let check = run(&args.map(String::from), b"");
    check.expect_status(0);
    serde_json::from_slice(&check.stdout).unwrap()
}

/// `(method, name, old code, new decision, new code)` of each change.
fn changes(lines: &[Value]) -> Vec<(String, String, String, String, String)> {
    lines
        .iter()
        .map(|c| {
            let s = |v: &Value| v.as_str().unwrap_or("-").to_string();
            (
                s(&c["method"]),
                s(&c["name"]),
                s(&c["old"]["reason_code"]),
                s(&c["new"]["decision"]),
                s(&c["new"]["reason_code"]),
            )
        })
        .collect()
}

/// A change as `"method name old-code new-decision new-code"`.
fn t(words: &str) -> (String, String, String, String, String) {
    let w: Vec<String> = words.split(' ').map(str::to_string).collect();
    (
        w[0].clone(),
        w[1].clone(),
        w[2].clone(),
        w[3].clone(),
        w[4].clone(),
    )
}

#[test]
fn the_recording_policy_changes_nothing() {
    let f = fixture();
    let p = f.policy("same", &format!("{RECORDING}record_arguments: true\n"));
    let (r, lines, s) = replay(&p, &[f.root("args"), f.root("plain"), f.root("governed")]);
    r.expect_status(0);
    assert!(lines.is_empty(), "{}", r.report());
    // Demo: 5 calls and 1 removal (exec hidden) per session, 3 sessions; governed: 3 reads,
    // 2 prompts, 2 calls, 2 client-feature requests, 1 removal (.env hidden from the list).
    // The plain session's read_file cannot be judged: its constraint reads arguments that
    // were not recorded.
    assert_eq!(s["judged"], 3 * 6 + 10 - 1, "{}", r.report());
    assert_eq!(s["unchanged"], s["judged"]);
    assert_eq!(s["captures_replayed"], 4);
    assert_eq!(s["not_judgeable"], 1);
    assert_eq!(s["never_used"], json!(["deny:shell*"]), "{}", r.report());
}

/// Answers' events (`assay.mcp.result`, SPEC §5.3) record what a request got, not a decision on
/// it: replay judges the decisions beside them and nothing else, suggest counts only those.
#[test]
fn answers_events_are_not_decisions() {
    let f = fixture();
    let root = f.root("answers");
    let log = std::fs::read_to_string(only_capture(&root).join("decisions.ndjson")).unwrap();
    let answers = log
        .lines()
        .filter(|l| l.contains(r#""type":"assay.mcp.result""#))
        .count();
    assert_eq!(answers, 4, "the four allowed calls' answers\n{log}");

    let p = f.policy(
        "same-answers",
        &format!("{RECORDING}record_arguments: true\nresults: {{}}\n"),
    );
    let (r, lines, s) = replay(&p, std::slice::from_ref(&root));
    r.expect_status(0);
    assert!(lines.is_empty(), "{}", r.report());
    assert_eq!(s["captures_replayed"], 1, "{}", r.report());
    assert_eq!(s["judged"], 6, "5 calls and 1 removal, no answer");
    assert_eq!(s["unchanged"], 6);
    assert_eq!(s["not_judgeable"], 0);

    let p = f.policy("deny-echo-answers", "version: \"1\"\ndeny: [exec, echo]\n");
    let (r, lines, _) = replay(&p, std::slice::from_ref(&root));
    r.expect_status(1);
    assert_eq!(
        changes(&lines),
        [
            t("tools/list exec P_TOOL_DENIED allow -"),
            t("tools/call echo P_POLICY_ALLOW deny P_TOOL_DENIED"),
            t("tools/call echo P_POLICY_ALLOW deny P_TOOL_DENIED"),
        ],
        "{}",
        r.report()
    );

    let out = f.dir.join("suggested-answers.yaml");
    let args = [
        "policy".to_string(),
        "suggest".into(),
        root.display().to_string(),
        "--out".into(),
        out.display().to_string(),
    ];
    run(&args, b"").expect_status(0);
    let (r, _, s) = replay(&out, std::slice::from_ref(&root));
    assert_eq!(s["newly_denied"], 0, "{}", r.report());
    assert_eq!(s["judged"], 6, "{}", r.report());
}

#[test]
fn a_deny_added_and_an_allow_narrowed() {
    let f = fixture();
    let p = f.policy("deny-echo", "version: \"1\"\ndeny: [exec, echo]\n");
    let (r, lines, s) = replay(&p, &[f.root("args")]);
    r.expect_status(1);
    let one = [
        t("tools/list exec P_TOOL_DENIED allow -"),
        t("tools/call echo P_POLICY_ALLOW deny P_TOOL_DENIED"),
        t("tools/call echo P_POLICY_ALLOW deny P_TOOL_DENIED"),
    ];
    assert_eq!(
        changes(&lines),
        [one.clone(), one].concat(),
        "{}",
        r.report()
    );
    assert_eq!(s["newly_denied"], 4);
    assert_eq!(s["newly_allowed"], 2, "exec is no longer hidden");
    assert_eq!(lines[1]["new"]["matched_rule"], "deny:echo");

    let p = f.policy("narrow", "version: \"1\"\nallow: [read_file, write_file]\n");
    let (r, lines, _) = replay(&p, &[f.root("plain")]);
    r.expect_status(1);
    assert_eq!(
        changes(&lines),
        [
            t("tools/list exec P_TOOL_DENIED allow -"),
            t("tools/call echo P_POLICY_ALLOW deny P_TOOL_NOT_ALLOWED"),
            t("tools/call exec P_TOOL_DENIED deny P_TOOL_NOT_ALLOWED"),
            t("tools/call echo P_POLICY_ALLOW deny P_TOOL_NOT_ALLOWED"),
        ]
    );
    assert_eq!(lines[2]["change"], "reason_changed");
}

#[test]
fn a_constraint_changed_with_and_without_recorded_arguments() {
    let f = fixture();
    let p = f.policy(
        "other-root",
        "version: \"1\"\ndeny: [exec]\nhide_refused_tools: true\nconstraints:\n  - tool: read_file\n    params:\n      path: { within: \"/other\" }\n",
    );
    let (r, lines, s) = replay(&p, &[f.root("args")]);
    r.expect_status(1);
    let one = t("tools/call read_file P_POLICY_ALLOW deny P_ARG_CONSTRAINT");
    assert_eq!(changes(&lines), [one.clone(), one]);
    assert_eq!(s["not_judgeable"], 0);

    let (r, lines, s) = replay(&p, &[f.root("plain")]);
    r.expect_status(0);
    assert!(lines.is_empty());
    assert_eq!(s["not_judgeable"], 1);
    assert_eq!(
        s["not_judgeable_by_rule"],
        json!([{"rule":"constraints:read_file.path","why":"the rule reads arguments and its arguments were not recorded (record_arguments)","decisions":1}])
    );
    // The text table names the rule.
    let text = run(
        &[
            "policy".into(),
            "replay".into(),
            p.display().to_string(),
            f.root("plain").display().to_string(),
        ],
        b"",
    );
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(
        out.contains("not judgeable: 1 decision(s) by constraints:read_file.path: the rule reads arguments and its arguments were not recorded"),
        "{out}"
    );
}

#[test]
fn limits_lowered_count_in_capture_order() {
    let f = fixture();
    let p = f.policy(
        "limits",
        "version: \"1\"\ndeny: [exec]\nhide_refused_tools: true\nlimits: { per_tool: { echo: 1 }, tool_calls: 3 }\n",
    );
    let (r, lines, s) = replay(&p, &[f.root("args")]);
    r.expect_status(1);
    // echo (1), read_file (2), exec denied (not counted), echo again: over per_tool; write_file
    // is the third allowed call: within tool_calls.
    let one = t("tools/call echo P_POLICY_ALLOW deny P_LIMIT_PER_TOOL");
    assert_eq!(changes(&lines), [one.clone(), one], "{}", r.report());
    assert_eq!(lines[0]["seq"], 4, "the second echo of the session");
    assert_eq!(s["newly_denied"], 2);
    let p = f.policy(
        "limits2",
        "version: \"1\"\ndeny: [exec]\nhide_refused_tools: true\nlimits: { tool_calls: 2 }\n",
    );
    let (_, lines, _) = replay(&p, &[f.root("plain")]);
    assert_eq!(
        changes(&lines),
        [
            t("tools/call echo P_POLICY_ALLOW deny P_LIMIT_TOOL_CALLS"),
            t("tools/call write_file P_POLICY_ALLOW deny P_LIMIT_TOOL_CALLS")
        ]
    );
}

#[test]
fn pins_changed() {
    let f = fixture();
    // The governed server's echo is another definition than the demo server's; it has no
    // read_file or write_file.
    let pins = f.dir.join("governed.pins.json");
    let governed = root().join("tests/fixtures/governed_server.py");
    let r = run(
        &[
            "mcp".into(),
            "pin".into(),
            "--out".into(),
            pins.display().to_string(),
            "--".into(),
            "python3".into(),
            governed.display().to_string(),
        ],
        b"",
    );
    r.expect_status(0);
    let p = f.policy(
        "pinned",
        &format!("version: \"1\"\ndeny: [exec]\npins: {}\n", pins.display()),
    );
    let (r, lines, s) = replay(&p, &[f.root("plain")]);
    r.expect_status(1);
    assert_eq!(
        changes(&lines),
        [
            // exec was hidden by name; this policy does not hide, but pins remove it.
            t("tools/list exec P_TOOL_DENIED deny P_TOOL_UNPINNED"),
            t("tools/call echo P_POLICY_ALLOW deny P_TOOL_DRIFT"),
            t("tools/call read_file P_POLICY_ALLOW deny P_TOOL_UNPINNED"),
            t("tools/call echo P_POLICY_ALLOW deny P_TOOL_DRIFT"),
            t("tools/call write_file P_POLICY_ALLOW deny P_TOOL_UNPINNED"),
        ],
        "{}",
        r.report()
    );
    assert_eq!(s["newly_denied"], 4);
}

#[test]
fn governed_methods_are_judged_by_their_sections() {
    let f = fixture();
    let p = f.policy(
        "governed-variant",
        "version: \"1\"\nresources:\n  deny: [\"file:///workspace/a.txt\"]\nclient_features: { roots: deny }\n",
    );
    let (r, lines, s) = replay(&p, &[f.root("governed")]);
    r.expect_status(1);
    assert_eq!(
        changes(&lines),
        [
            // resources/list: hiding is off, so .env is listed again.
            t("resources/list file:///workspace/.env P_RESOURCE_DENIED allow -"),
            t("resources/read file:///workspace/a.txt P_POLICY_ALLOW deny P_RESOURCE_DENIED"),
            t("resources/read file:///workspace/.env P_RESOURCE_DENIED allow P_POLICY_ALLOW"),
            // prompts are not governed here: forwarded without an event.
            t("prompts/get debug_dump P_PROMPT_DENIED allow -"),
            t("sampling/createMessage sampling P_CLIENT_FEATURE_DENIED allow -"),
            t("roots/list roots P_POLICY_ALLOW deny P_CLIENT_FEATURE_DENIED"),
        ],
        "{}",
        r.report()
    );
    assert_eq!(s["newly_denied"], 2);
    assert_eq!(s["never_used"], json!([]));
}

#[test]
fn captures_not_closed_are_skipped_and_named() {
    let f = fixture();
    let p = f.policy("mixed-deny", "version: \"1\"\ndeny: [exec, echo]\n");
    let (r, _, s) = replay(&p, &[f.root("mixed")]);
    r.expect_status(1);
    assert_eq!(s["captures_replayed"], 1);
    assert_eq!(s["captures_skipped"], 2);
    let skipped: Vec<(String, String)> = s["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let name = k["capture"].as_str().unwrap();
            let name = name.rsplit('/').next().unwrap().to_string();
            (name, k["closure"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(
        skipped,
        [
            ("forged".to_string(), "unknown".to_string()),
            ("incomplete".to_string(), "incomplete".to_string())
        ]
    );
    // Named on the table too; a root of only such captures replays nothing: exit 3.
    let text = run(
        &[
            "policy".into(),
            "replay".into(),
            p.display().to_string(),
            f.root("mixed").join("forged").display().to_string(),
            f.root("mixed").join("incomplete").display().to_string(),
        ],
        b"",
    );
    text.expect_status(3);
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(
        out.contains("/forged (unknown: ") && out.contains("digest_mismatch)"),
        "{out}"
    );
    assert!(out.contains("incomplete (incomplete"), "{out}");
    // Usage: a missing path is exit 2.
    let (r, _, _) = replay(&p, &[f.dir.join("missing")]);
    r.expect_status(2);
}

#[test]
fn never_used_rules_are_named() {
    let f = fixture();
    let p = f.policy(
        "unused",
        "version: \"1\"\nallow: [\"*\"]\ndeny: [exec, \"shell*\"]\n",
    );
    let text = run(
        &[
            "policy".into(),
            "replay".into(),
            p.display().to_string(),
            f.root("plain").display().to_string(),
        ],
        b"",
    );
    text.expect_status(1);
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.lines().any(|l| l == "never used: deny shell*"), "{out}");
    assert!(!out.contains("never used: deny exec"), "{out}");
}

/// The suggested policy of every fixture loads, passes `policy check`, allows no tool, resource
/// or prompt beyond what was allowed in the captures, and replays them with nothing newly
/// denied.
#[test]
fn suggested_policies_are_least_privilege_and_replay_clean() {
    let f = fixture();
    for (name, roots) in [
        ("args", vec![f.root("args")]),
        ("plain", vec![f.root("plain")]),
        ("governed", vec![f.root("governed")]),
        (
            "all",
            vec![
                f.root("args"),
                f.root("plain"),
                f.root("governed"),
                f.root("mixed"),
            ],
        ),
    ] {
        let out = f.dir.join(format!("suggested-{name}.yaml"));
        let mut args = vec!["policy".to_string(), "suggest".into()];
        args.extend(roots.iter().map(|r| r.display().to_string()));
        args.extend(["--out".into(), out.display().to_string()]);
        run(&args, b"").expect_status(0);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
            0o600
        );
        run(&args, b"").expect_status(2);
        let summary = checked(&out);
        let (r, _, s) = replay(&out, &roots);
        assert_eq!(s["newly_denied"], 0, "{name}: {}", r.report());
        assert_eq!(s["not_judgeable"], 0, "{name}");
        let allow: Vec<String> = serde_json::from_value(summary["allow"].clone()).unwrap();
        let resources: Vec<String> =
            serde_json::from_value(summary["resources"]["allow"].clone()).unwrap();
        let prompts: Vec<String> =
            serde_json::from_value(summary["prompts"]["allow"].clone()).unwrap();
        let demo = ["echo", "read_file", "write_file"];
        let (want_tools, want_resources, want_prompts): (Vec<&str>, Vec<&str>, Vec<&str>) =
            match name {
                "args" | "plain" => (demo.to_vec(), vec![], vec![]),
                "governed" => (
                    vec!["ask"],
                    vec!["file:///workspace/a.txt", "test://static/resource/1"],
                    vec!["greet"],
                ),
                _ => (
                    vec!["ask", "echo", "read_file", "write_file"],
                    vec!["file:///workspace/a.txt", "test://static/resource/1"],
                    vec!["greet"],
                ),
            };
        assert_eq!(
            allow, want_tools,
            "{name}: exactly the tools called and allowed"
        );
        assert_eq!(resources, want_resources, "{name}");
        assert_eq!(prompts, want_prompts, "{name}");
        let features = &summary["client_features"];
        let roots_rule = if name == "governed" || name == "all" {
            "allow"
        } else {
            "deny"
        };
        assert_eq!(
            features,
            &json!({"sampling":"deny","elicitation":"deny","roots":roots_rule}),
            "{name}"
        );
        assert!(summary["limits"]["tool_calls"].as_u64().is_some(), "{name}");
        let yaml = std::fs::read_to_string(&out).unwrap();
        assert!(!yaml.contains("**"), "{name}: no `**`");
        if name != "governed" {
            assert!(
                yaml.contains("#   tool exec: "),
                "{name}: exec is left out and named\n{yaml}"
            );
            assert!(
                yaml.contains("# echo: "),
                "{name}: evidence comment\n{yaml}"
            );
        }
    }
}

#[test]
fn suggest_from_a_policy_only_narrows() {
    let f = fixture();
    let from = f.policy(
        "from",
        "version: \"1\"\nallow: [echo, read_file]\nconstraints:\n  - tool: read_file\n    params:\n      path: { within: \"/workspace\" }\nlimits: { per_tool: { echo: 5 }, tool_calls: 3 }\n",
    );
    let r = run(
        &[
            "policy".into(),
            "suggest".into(),
            f.root("args").display().to_string(),
            "--from".into(),
            from.display().to_string(),
        ],
        b"",
    );
    r.expect_status(0);
    let out = f.dir.join("narrowed.yaml");
    std::fs::write(&out, &r.stdout).unwrap();
    let s = checked(&out);
    assert_eq!(
        s["allow"],
        json!(["echo", "read_file"]),
        "write_file is refused by --from"
    );
    assert_eq!(s["constraints"][0]["tool"], "read_file");
    assert_eq!(s["limits"]["tool_calls"], 3, "never above --from's");
    assert_eq!(
        s["limits"]["per_tool"]["echo"], 4,
        "2x the most in one session, under 5"
    );
    // No closed capture: exit 3, nothing written.
    let none = f.dir.join("none.yaml");
    run(
        &[
            "policy".into(),
            "suggest".into(),
            f.root("mixed").join("forged").display().to_string(),
            "--out".into(),
            none.display().to_string(),
        ],
        b"",
    )
    .expect_status(3);
    assert!(!none.exists());
}

/// Captures made with `record_definitions: true` keep the definitions their listings showed;
/// `suggest --out` pins every allowed tool to the one every capture agrees on, in a pins file
/// beside the policy that holds what `assay mcp pin` writes for the same server, and the pinned
/// policy replays the captures with nothing newly denied and runs a live session.
#[test]
fn suggest_writes_the_pins_the_kept_definitions_agree_on() {
    let f = fixture();
    let kept = f.root("kept");
    for capture in std::fs::read_dir(&kept).unwrap() {
        let capture = capture.unwrap().path();
        let file = capture.join("tool-definitions.ndjson");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let read = run(
            &[
                "capture".into(),
                "read".into(),
                capture.display().to_string(),
            ],
            b"",
        );
        read.expect_status(0);
    }
    let out = f.dir.join("suggested-pinned.yaml");
    let pins = f.dir.join("suggested-pinned.pins.json");
    let args = [
        "policy".to_string(),
        "suggest".into(),
        kept.display().to_string(),
        f.root("plain").display().to_string(),
        "--out".into(),
        out.display().to_string(),
    ];
    run(&args, b"").expect_status(0);
    let yaml = std::fs::read_to_string(&out).unwrap();
    assert!(
        yaml.contains("pins: \"suggested-pinned.pins.json\""),
        "{yaml}"
    );
    let written: Value = serde_json::from_slice(&std::fs::read(&pins).unwrap()).unwrap();
    let tools = written["tools"].as_object().unwrap();
    let names: Vec<&str> = tools.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["echo", "read_file", "write_file"],
        "the allowed tools"
    );
    assert!(
        written.get("instructions").is_none(),
        "instructions are not judged"
    );

    // The same digests as the pins `assay mcp pin` writes for the server.
    let reference = f.dir.join("reference.pins.json");
    let pin = run(
        &[
            "mcp".into(),
            "pin".into(),
            "--out".into(),
            reference.display().to_string(),
            "--".into(),
            "python3".into(),
            demo_server(),
        ],
        b"",
    );
    pin.expect_status(0);
    let reference: Value = serde_json::from_slice(&std::fs::read(&reference).unwrap()).unwrap();
    for name in names {
        assert_eq!(
            tools[name]["sha256"], reference["tools"][name]["sha256"],
            "{name}"
        );
    }

    checked(&out);
    let (r, _, s) = replay(&out, std::slice::from_ref(&kept));
    assert_eq!(s["newly_denied"], 0, "{}", r.report());
    assert_eq!(s["not_judgeable"], 0, "{}", r.report());
    assert_eq!(s["newly_allowed"], 0, "{}", r.report());

    // A live session under the pinned policy: the pinned tools are called.
    let live = f.dir.join("suggested-pinned-live");
    let demo = ["python3".to_string(), demo_server()];
    let demo: Vec<&str> = demo.iter().map(String::as_str).collect();
    session(&out, &live, &demo, DEMO);
    let log = std::fs::read_to_string(only_capture(&live).join("decisions.ndjson")).unwrap();
    let echo_allowed = log.lines().filter(|l| {
        l.contains("\"tool\":\"echo\"") && l.contains("\"reason_code\":\"P_POLICY_ALLOW\"")
    });
    assert_eq!(echo_allowed.count(), 2, "{log}");

    // Again without --update: both files exist, exit 2, nothing changes; with it, both are
    // replaced.
    let before = std::fs::read(&pins).unwrap();
    run(&args, b"").expect_status(2);
    std::fs::remove_file(&out).unwrap();
    run(&args, b"").expect_status(2);
    assert!(
        !out.exists(),
        "a pins file in the way: the policy is not written either"
    );
    let mut update = args.to_vec();
    update.push("--update".into());
    run(&update, b"").expect_status(0);
    assert!(out.exists());
    assert_eq!(
        serde_json::from_slice::<Value>(&std::fs::read(&pins).unwrap()).unwrap()["tools"],
        serde_json::from_slice::<Value>(&before).unwrap()["tools"]
    );

    // Captures that kept nothing: no pins file, and the policy says why.
    let unpinned = f.dir.join("unpinned.yaml");
    run(
        &[
            "policy".into(),
            "suggest".into(),
            f.root("plain").display().to_string(),
            "--out".into(),
            unpinned.display().to_string(),
        ],
        b"",
    )
    .expect_status(0);
    assert!(!f.dir.join("unpinned.pins.json").exists());
    let yaml = std::fs::read_to_string(&unpinned).unwrap();
    assert!(
        yaml.contains("# not pinned: echo: its definition was not kept"),
        "{yaml}"
    );
}
