//! MCP fidelity through the real binary: the server command with and without `--` (SPEC §10) and
//! `hide_refused_tools` (SPEC §5) — which `tools/list` results are edited, what they keep, and
//! that everything else stays byte-exact.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::util::*;

fn list_server() -> String {
    root()
        .join("tests/fixtures/list_server.py")
        .display()
        .to_string()
}

/// A server that prints its own argv (after the script) as a notification, then serves the demo.
const ARGV_SERVER: &str = "import json, sys; print(json.dumps({'jsonrpc':'2.0','method':'argv','params':sys.argv[1:]}), flush=True); sys.stdin.read()";

fn argv_seen(r: &Run) -> Value {
    r.lines()
        .into_iter()
        .find(|v| v["method"] == "argv")
        .unwrap_or_else(|| panic!("no argv line\n{}", r.report()))["params"]
        .clone()
}

#[test]
fn server_command_starts_at_the_first_non_option_or_after_double_dash() {
    let policy = demo_policy().display().to_string();
    // Without `--`: options after the command belong to the server, even ones the wrapper also
    // has (`--policy`).
    let args: Vec<String> = [
        "mcp",
        "wrap",
        "--policy",
        &policy,
        "python3",
        "-c",
        ARGV_SERVER,
        "--port",
        "1",
        "--policy",
        "/nonexistent/other.yaml",
        "--",
        "-x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let r = run(&args, b"");
    r.expect_status(0);
    assert_eq!(
        argv_seen(&r),
        json!([
            "--port",
            "1",
            "--policy",
            "/nonexistent/other.yaml",
            "--",
            "-x"
        ])
    );

    // With `--` (the documented form), including a command that itself looks like an option.
    let r = run(
        &wrap_args(
            &["--policy", &policy],
            &["python3", "-c", ARGV_SERVER, "--port", "1"],
        ),
        b"",
    );
    r.expect_status(0);
    assert_eq!(argv_seen(&r), json!(["--port", "1"]));

    // A mistyped wrapper option before the command is still a usage error, not a command.
    let r = run(
        &["mcp", "wrap", "--polcy", &policy, "python3", "-c", "pass"]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>(),
        b"",
    );
    r.expect_status(2);
    assert!(r.stderr.contains("--polcy"), "{}", r.report());

    // No command at all is a usage error.
    let r = run(
        &["mcp", "wrap", "--policy", &policy]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>(),
        b"",
    );
    r.expect_status(2);
}

/// The `tools/list` result every `*/list` request gets from the list server: members outside
/// `tools` and inside each tool that an edit must keep exactly (order, escapes, unknown keys).
const TEMPLATE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":__ID__,"result":{"tools":[ "#,
    r#"{"name":"echo","annotations":{"readOnlyHint":true},"x-unknown":[1, 2]} , "#,
    r#"{"name":"exec","inputSchema":{"type":"object"}},"#,
    r#"{"description":"caf\u00e9","name":"read_file","_meta":{"k":"v"}},"#,
    r#"{"name":"fetch"},"#,
    r#"{"name":"write_file","outputSchema":{"type":"object"}},"#,
    r#"{"name":"shell_x"}"#,
    r#" ],"nextCursor":"c1","_meta":{"m":1},"zzz":null}}"#
);

/// TEMPLATE after hiding exec (denied), fetch (not in the allow list) and shell_x (denied).
/// read_file (a constraint) and write_file (a schema) may still be allowed, so they stay.
const HIDDEN: &str = concat!(
    r#"{"jsonrpc":"2.0","id":__ID__,"result":{"tools":["#,
    r#"{"name":"echo","annotations":{"readOnlyHint":true},"x-unknown":[1, 2]},"#,
    r#"{"description":"caf\u00e9","name":"read_file","_meta":{"k":"v"}},"#,
    r#"{"name":"write_file","outputSchema":{"type":"object"}}"#,
    r#"],"nextCursor":"c1","_meta":{"m":1},"zzz":null}}"#
);

const HIDING_POLICY: &str = r#"version: "1"
allow: ["echo", "read_file", "write_file", "exec", "shell_*"]
deny: ["exec", "shell*"]
constraints:
  - tool: read_file
    params:
      path: { matches: "^/workspace/" }
schemas:
  write_file: { type: object, required: [path] }
hide_refused_tools: true
"#;

struct Setup {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    template: PathBuf,
}

fn setup() -> Setup {
    let d = tempdir();
    let dir = d.path().to_path_buf();
    let template = dir.join("template.json");
    std::fs::write(&template, format!("{TEMPLATE}\n")).unwrap();
    Setup {
        _dir: d,
        dir,
        template,
    }
}

fn write_policy(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The list server's raw output lines for `input`, run directly.
fn direct_lines(template: &Path, input: &[u8]) -> Vec<String> {
    let mut child = Command::new("python3")
        .arg(list_server())
        .arg(template)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn raw_line_with_id<'a>(lines: &'a [String], id: &str) -> &'a str {
    let needle = format!("\"id\":{id},");
    lines
        .iter()
        .find(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no line with id {id} in {lines:#?}"))
}

#[test]
fn hide_refused_tools_edits_only_answers_to_tools_list_and_keeps_the_rest_exactly() {
    let s = setup();
    let policy = write_policy(&s.dir, "policy.yaml", HIDING_POLICY);
    let ctx = s.dir.join("context.json");
    let log = s.dir.join("decisions.ndjson");
    let input = script(&[
        INIT,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        // A string id; number 4 is not a tools/list (and no SDK reads it as "3").
        r#"{"jsonrpc":"2.0","id":"3","method":"tools/list","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"resources/list"}"#,
        // Spelled differently by the client than the server echoes it (`"\u0061"` → `"a"`).
        r#"{"jsonrpc":"2.0","id":"\u0061","method":"tools/list"}"#,
        &call(10, "exec", r#"{"cmd":"id"}"#),
        &call(11, "fetch", r#"{}"#),
        &call(12, "echo", r#"{"text":"hi"}"#),
    ]);
    let ctx_s = ctx.display().to_string();
    let log_s = log.display().to_string();
    let template = s.template.display().to_string();
    let r = run(
        &wrap_args(
            &[
                "--policy",
                &policy,
                "--event-source",
                "assay://test/hide",
                "--session-context-out",
                &ctx_s,
                "--decision-log",
                &log_s,
                "--decision-log-new",
            ],
            &["python3", &list_server(), &template],
        ),
        &input,
    );
    r.expect_status(0);
    let out: Vec<String> = String::from_utf8(r.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let direct = direct_lines(&s.template, &input);

    assert_eq!(raw_line_with_id(&out, "2"), HIDDEN.replace("__ID__", "2"));
    assert_eq!(
        raw_line_with_id(&out, "\"3\""),
        HIDDEN.replace("__ID__", "\"3\"")
    );
    assert_eq!(
        raw_line_with_id(&out, "\"a\""),
        HIDDEN.replace("__ID__", "\"a\"")
    );
    // Not an answer to a tools/list request: byte-exact, tools and all.
    assert_eq!(raw_line_with_id(&out, "4"), raw_line_with_id(&direct, "4"));
    assert_eq!(raw_line_with_id(&out, "1"), raw_line_with_id(&direct, "1"));
    assert_eq!(
        raw_line_with_id(&out, "12"),
        raw_line_with_id(&direct, "12")
    );

    // Hidden tools are still refused and logged.
    for (id, code) in [(10, "P_TOOL_DENIED"), (11, "P_TOOL_NOT_ALLOWED")] {
        let resp = r.response(json!(id));
        assert_eq!(resp["result"]["isError"], true);
        assert_eq!(
            resp["result"]["_meta"]["assay/decision"]["reason_code"],
            code
        );
    }
    let decisions = tools_and_reasons(&log);
    assert_eq!(
        decisions,
        [
            ("exec".to_string(), "P_TOOL_DENIED".to_string()),
            ("fetch".to_string(), "P_TOOL_NOT_ALLOWED".to_string()),
            ("echo".to_string(), "P_POLICY_ALLOW".to_string()),
        ]
    );
    assert_eq!(read_json(&ctx)["data"]["hide_refused_tools"], true);
}

#[test]
fn without_hiding_or_when_nothing_is_hidden_every_server_line_is_byte_exact() {
    let s = setup();
    let input = script(&[
        INIT,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        &call(3, "echo", r#"{"text":"hi"}"#),
    ]);
    let direct = direct_lines(&s.template, &input);
    let template = s.template.display().to_string();
    let off = HIDING_POLICY.replace("hide_refused_tools: true", "hide_refused_tools: false");
    let absent = HIDING_POLICY.replace("hide_refused_tools: true\n", "");
    let hides_nothing = "version: \"1\"\ndeny: [\"nothing_here\"]\nhide_refused_tools: true\n";
    for (name, text, dry_run, recorded) in [
        ("off.yaml", off.as_str(), false, false),
        ("absent.yaml", absent.as_str(), false, false),
        ("nothing.yaml", hides_nothing, false, true),
        // Dry run changes nothing the client sees: the setting is not in effect.
        ("dry.yaml", HIDING_POLICY, true, false),
    ] {
        let policy = write_policy(&s.dir, name, text);
        let ctx = s.dir.join(format!("{name}.context.json"));
        let ctx_s = ctx.display().to_string();
        let mut opts = vec![
            "--policy",
            &policy,
            "--event-source",
            "assay://test/hide",
            "--session-context-out",
            &ctx_s,
        ];
        if dry_run {
            opts.push("--dry-run");
        }
        let r = run(
            &wrap_args(&opts, &["python3", &list_server(), &template]),
            &input,
        );
        r.expect_status(0);
        let mut expected = direct.join("\n");
        expected.push('\n');
        assert_eq!(
            String::from_utf8(r.stdout.clone()).unwrap(),
            expected,
            "{name}"
        );
        assert_eq!(
            read_json(&ctx)["data"]["hide_refused_tools"],
            recorded,
            "{name}"
        );
    }
}

#[test]
fn hide_refused_tools_with_a_non_boolean_is_a_configuration_error() {
    let s = setup();
    let policy = write_policy(
        &s.dir,
        "bad.yaml",
        "version: \"1\"\nhide_refused_tools: \"yes\"\n",
    );
    let r = run(
        &wrap_args(&["--policy", &policy], &["python3", "-c", "pass"]),
        b"",
    );
    r.expect_status(2);
    assert!(r.stderr.contains("hide_refused_tools"), "{}", r.report());
}

/// SPEC §4.1a: each entry hiding removes is said on stderr, one whole `assay:` line each, by the
/// time the client reads the answer it was removed from — the lines of a burst of answers are
/// written together, before the wrapper waits for the server again (docs/decisions.md,
/// "Listing diagnostics written together").
#[test]
fn each_removed_tool_is_said_on_stderr_before_its_answer_reaches_the_client() {
    use std::io::{BufRead, BufReader, Write};

    let s = setup();
    let policy = write_policy(&s.dir, "policy.yaml", HIDING_POLICY);
    let stderr_path = s.dir.join("stderr.log");
    let template = s.template.display().to_string();
    let mut child = wrap_command(
        &["--policy", &policy],
        &["python3", &list_server(), &template],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(std::fs::File::create(&stderr_path).unwrap())
    .spawn()
    .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answer = |line: &str| {
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
        let mut got = String::new();
        stdout.read_line(&mut got).unwrap();
        got
    };
    let said = || std::fs::read_to_string(&stderr_path).unwrap();
    let removed = |id: &str| {
        [
            ("exec", "P_TOOL_DENIED"),
            ("fetch", "P_TOOL_NOT_ALLOWED"),
            ("shell_x", "P_TOOL_DENIED"),
        ]
        .map(|(tool, code)| {
            format!(
                "assay: removed tool `{tool}` from the answer to tools/list request {id} ({code})\n"
            )
        })
        .concat()
    };
    assert!(answer(INIT).contains("\"id\":1"));
    let mut expected = String::new();
    for id in ["2", "\"3\""] {
        let got = answer(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#
        ));
        assert_eq!(got.trim_end(), HIDDEN.replace("__ID__", id));
        expected.push_str(&removed(id));
        assert_eq!(said(), expected, "after the answer to request {id}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(said(), expected, "at exit");
}
