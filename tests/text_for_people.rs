//! Text for people (SPEC §10): text a client, a server or a file wrote reaches a terminal only
//! through the one renderer — escape sequences (ESC, BEL, an OSC 52 clipboard write), C1
//! controls, format and bidirectional characters, tag characters and line breaks are written
//! `\u{…}`, never raw, in `mcp pin`, `policy check`, `--verbose` diagnostics, `capture show`,
//! `capture summary --format table`, `wrap-config` (its warnings too) and `mcp hosts`.

use std::path::Path;

use crate::util::*;

/// Every hostile character the renderer must never print raw, in one string: ESC (with an
/// OSC 52 clipboard write ended by BEL), CSI (U+009B), right-to-left override, soft hyphen,
/// Arabic letter mark, Mongolian vowel separator, word joiner, a tag character, a line break.
const HOSTILE: &str =
    "x\u{1b}]52;c;aGk=\u{7}\u{9b}2J\u{202e}\u{ad}\u{61c}\u{180e}\u{2060}\u{e0041}\n";

/// The characters of [`HOSTILE`] that must not appear raw (a `\n` is checked per line).
const RAW: [char; 10] = [
    '\u{1b}',
    '\u{7}',
    '\u{9b}',
    '\u{202e}',
    '\u{ad}',
    '\u{61c}',
    '\u{180e}',
    '\u{2060}',
    '\u{e0041}',
    '\r',
];

/// [`HOSTILE`] as the renderer writes it.
const RENDERED: &str =
    r"x\u{1b}]52;c;aGk=\u{7}\u{9b}2J\u{202e}\u{ad}\u{61c}\u{180e}\u{2060}\u{e0041}\u{a}";

fn assert_no_raw(what: &str, text: &str) {
    for c in RAW {
        assert!(
            !text.contains(c),
            "{what}: U+{:04X} printed raw:\n{text:?}",
            u32::from(c)
        );
    }
}

fn peer_server(tools: &serde_json::Value) -> Vec<String> {
    vec![
        "python3".into(),
        root()
            .join("tests/fixtures/peer_text_server.py")
            .display()
            .to_string(),
        tools.to_string(),
    ]
}

fn tool(name: &str, description: &str) -> serde_json::Value {
    serde_json::json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}

fn pin_run(args: &[&str], server: &[String]) -> Run {
    let mut v: Vec<String> = vec!["mcp".into(), "pin".into()];
    v.extend(args.iter().map(|s| s.to_string()));
    v.push("--".into());
    v.extend(server.iter().cloned());
    run(&v, b"")
}

#[test]
fn mcp_pin_table_and_check_diff_render_the_servers_text() {
    let d = tempdir();
    let pins = d.path().join("p.json");
    let name = format!("evil{HOSTILE}+ forged: listed but not pinned");
    let one_line = HOSTILE.trim_end_matches('\n');
    let shown = RENDERED.trim_end_matches(r"\u{a}");
    let pinned = serde_json::json!([
        tool(&name, &format!("first {one_line}")),
        tool("ok", "fine")
    ]);
    let r = pin_run(&["--out", pins.to_str().unwrap()], &peer_server(&pinned));
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    assert_no_raw("mcp pin --out", &out);
    // One line per tool, then the closing line: the name's `\n` forged none.
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(out.contains(&format!("evil{RENDERED}+ forged")), "{out}");
    assert!(out.contains(&format!("first {shown}\n")), "{out}");

    // The description changes: the diff's lines are rendered too, and no line is forged.
    let listed = serde_json::json!([
        tool(&name, &format!("second {one_line}")),
        tool("ok", "fine")
    ]);
    let r = pin_run(&["--check", pins.to_str().unwrap()], &peer_server(&listed));
    r.expect_status(1);
    let out = String::from_utf8_lossy(&r.stdout);
    assert_no_raw("mcp pin --check", &out);
    assert!(out.contains(&format!("~ evil{RENDERED}+ forged")), "{out}");
    assert!(out.contains(&format!("+second {shown}\n")), "{out}");
    assert!(
        !out.lines().any(|l| l.starts_with("+ forged")),
        "a line was forged:\n{out}"
    );
    assert_no_raw("mcp pin --check stderr", &r.stderr);
}

#[test]
fn verbose_diagnostics_render_tool_names_on_one_line() {
    let d = tempdir();
    let rec = d.path().join("rec");
    let line = serde_json::json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": format!("t{HOSTILE}assay: forged line"), "arguments": {}},
    })
    .to_string();
    let r = run(
        &wrap_args(
            &[
                "--verbose",
                "--policy",
                &demo_policy().display().to_string(),
            ],
            &strs(&recording_server(&rec)),
        ),
        &script(&[INIT, &line]),
    );
    r.expect_status(0);
    assert_no_raw("--verbose stderr", &r.stderr);
    let decision: Vec<&str> = r.stderr.lines().filter(|l| l.contains("tool=t")).collect();
    assert_eq!(decision.len(), 1, "{}", r.report());
    assert!(
        decision[0].contains(&format!("tool=t{RENDERED}assay: forged line")),
        "{}",
        r.report()
    );
    assert!(
        !r.stderr.lines().any(|l| l.starts_with("assay: forged")),
        "{}",
        r.report()
    );
}

#[test]
fn policy_check_renders_names_from_the_file() {
    let d = tempdir();
    let p = d.path().join("p.json");
    // The characters a policy may hold (the reader refuses C0 and C1 controls but ESC's
    // neighbours are fine): format, bidirectional and tag characters, a line break.
    let name = "a\u{202e}\u{ad}\u{61c}\u{180e}\u{2060}\u{e0041}\nb";
    let policy = serde_json::json!({"version": "1", "deny": [name]});
    std::fs::write(&p, policy.to_string()).unwrap();
    let check = |p: &Path| {
        run(
            &["policy".into(), "check".into(), p.display().to_string()],
            b"",
        )
    };
    let r = check(&p);
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    assert_no_raw("policy check", &out);
    assert!(
        out.contains(r"deny: a\u{202e}\u{ad}\u{61c}\u{180e}\u{2060}\u{e0041}\u{a}b"),
        "{out}"
    );
    // A name the reader refuses: the diagnostic is one line, nothing raw in it.
    let policy = serde_json::json!({"version": "1", "deny": [format!("a{HOSTILE}b")]});
    std::fs::write(&p, policy.to_string()).unwrap();
    let r = check(&p);
    r.expect_status(2);
    assert_no_raw("policy check stderr", &r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.report());
}

#[test]
fn capture_show_and_summary_table_render_tool_names() {
    let d = tempdir();
    let root = d.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let cap = root.join("cap");
    let line = serde_json::json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": format!("t{HOSTILE}"), "arguments": {}},
    })
    .to_string();
    run(
        &wrap_args(&strs(&capture_opts(&cap)), &["python3", &demo_server()]),
        &script(&[INIT, &line]),
    )
    .expect_status(0);
    let r = run(
        &["capture".into(), "show".into(), cap.display().to_string()],
        b"",
    );
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    assert_no_raw("capture show", &out);
    assert!(out.contains(&format!("t{RENDERED}")), "{out}");
    // A directory name under a root is someone else's text too.
    std::fs::rename(&cap, root.join(format!("c{}", HOSTILE.replace('\n', "")))).unwrap();
    let r = run(
        &[
            "capture".into(),
            "summary".into(),
            root.display().to_string(),
            "--format".into(),
            "table".into(),
        ],
        b"",
    );
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    assert_no_raw("capture summary --format table", &out);
    assert_eq!(out.lines().count(), 3, "{out}");
}

#[test]
fn wrap_config_renders_entry_names() {
    let d = tempdir();
    let file = d.path().join("claude_desktop_config.json");
    let name = format!("s{HOSTILE}");
    let config = serde_json::json!({"mcpServers": {name: {"command": "/bin/true"}}});
    std::fs::write(&file, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    let policy: &Path = &demo_policy();
    let r = run(
        &[
            "mcp".into(),
            "wrap-config".into(),
            file.display().to_string(),
            "--policy".into(),
            policy.display().to_string(),
            "--dry-run".into(),
        ],
        b"",
    );
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    assert_no_raw("wrap-config", &out);
    assert_no_raw("wrap-config stderr", &r.stderr);
    assert!(out.contains(&format!("mcpServers.s{RENDERED}: ")), "{out}");
}

/// `wrap-config`'s warnings are `assay:` lines: an entry name and a command from the file are
/// rendered once (by the line's writer), as the renderer writes them — not escaped twice.
#[test]
fn wrap_config_warnings_render_names_and_commands_once() {
    let d = tempdir();
    let file = d.path().join("claude_desktop_config.json");
    let config = serde_json::json!({"mcpServers": {
        format!("s{HOSTILE}"): {"command": format!("ghost{HOSTILE}")},
    }});
    std::fs::write(&file, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    let policy: &Path = &demo_policy();
    let r = run(
        &[
            "mcp".into(),
            "wrap-config".into(),
            file.display().to_string(),
            "--policy".into(),
            policy.display().to_string(),
            "--dry-run".into(),
        ],
        b"",
    );
    r.expect_status(0);
    assert_no_raw("wrap-config stderr", &r.stderr);
    let warning = r
        .stderr
        .lines()
        .find(|l| l.starts_with("assay: warning: "))
        .unwrap_or_else(|| panic!("no warning\n{}", r.report()));
    assert!(
        warning.contains(&format!("mcpServers.s{RENDERED}"))
            && warning.contains(&format!("ghost{RENDERED}")),
        "{warning}"
    );
    assert!(!warning.contains(r"\\u{"), "rendered twice: {warning}");
}

/// `mcp hosts` prints entry names and commands from a host's file through the same renderer.
#[test]
#[cfg(target_os = "linux")]
fn mcp_hosts_renders_entry_names_and_commands() {
    let d = tempdir();
    let home = d.path().join("home");
    let file = home.join(".cursor/mcp.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let config = serde_json::json!({"mcpServers": {
        format!("s{HOSTILE}"): {"command": "node", "args": [format!("a{HOSTILE}")]},
    }});
    std::fs::write(&file, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    let mut cmd = std::process::Command::new(bin());
    cmd.args(["mcp", "hosts"])
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME");
    let r = run_command(cmd, b"");
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    assert_no_raw("mcp hosts", &out);
    assert!(out.contains(&format!("mcpServers.s{RENDERED}")), "{out}");
    assert!(out.contains(&format!("node a{RENDERED}")), "{out}");
}
