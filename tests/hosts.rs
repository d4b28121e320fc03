//! `assay mcp wrap-config` on real-world shaped host configurations (SPEC §10): Claude Desktop,
//! Cursor, VS Code and the MCP Inspector. Every stdio entry is wrapped and every other member
//! kept; a second run changes nothing; `--unwrap` gives back the original bytes; a backup of the
//! original is written on the first change and kept; `--dry-run` writes nothing; a file that
//! cannot be read strictly is exit 2 with nothing written. A wrapped entry, run as a host runs
//! it, is a real session whose capture is closed. Per server, per host: `--server`, `--host`
//! with a fake HOME for each host, updates in place, warnings, and `assay mcp hosts`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::util::*;

const FIXTURES: [&str; 4] = [
    "claude_desktop_config.json",
    "cursor_mcp.json",
    "vscode_mcp.json",
    "inspector_config.json",
];

/// A copy of the fixture `name` in `dir` (with `@ROOT@` set to this checkout), mode 0600.
fn fixture(dir: &Path, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(root().join("tests/fixtures/hosts").join(name))
        .unwrap()
        .replace("@ROOT@", &root().display().to_string());
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn wrap_config(file: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["mcp".to_string(), "wrap-config".into(), s(file)];
    args.extend(extra.iter().map(|a| a.to_string()));
    run(&args, b"")
}

/// The files beside `file` whose names start with its name and `.assay-backup`.
fn backups(file: &Path) -> Vec<PathBuf> {
    let prefix = format!(
        "{}.assay-backup",
        file.file_name().unwrap().to_string_lossy()
    );
    let mut v: Vec<PathBuf> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&prefix)
        })
        .collect();
    v.sort();
    v
}

fn entries(v: &Value) -> Vec<(String, Value)> {
    let section = v.get("mcpServers").or(v.get("servers")).unwrap();
    section
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, e)| (k.clone(), e.clone()))
        .collect()
}

#[test]
fn every_host_config_is_wrapped_kept_idempotent_and_reversible() {
    let dir = tempdir();
    let policy = s(&demo_policy());
    let captures = dir.path().join("captures");
    for name in FIXTURES {
        let file = fixture(dir.path(), name);
        let original = std::fs::read(&file).unwrap();
        let r = wrap_config(
            &file,
            &["--policy", &policy, "--capture-root", &s(&captures)],
        );
        r.expect_status(0);
        let out = String::from_utf8_lossy(&r.stdout).to_string();
        assert!(out.contains(": wrapped"), "{}", r.report());

        // The backup holds the original bytes, with the original's mode.
        let b = backups(&file);
        assert_eq!(b.len(), 1, "{name}: {b:?}");
        assert_eq!(std::fs::read(&b[0]).unwrap(), original);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&b[0]), 0o600);
        assert_eq!(mode(&file), 0o600);

        let before: Value = serde_json::from_slice(&original).unwrap();
        let after = read_json(&file);
        let mut wrapped = 0;
        for ((k0, e0), (k1, e1)) in entries(&before).into_iter().zip(entries(&after)) {
            assert_eq!(k0, k1);
            let obj0 = e0.as_object().unwrap();
            let obj1 = e1.as_object().unwrap();
            // The same members in the same order; only command and args differ.
            assert_eq!(
                obj0.keys().filter(|k| *k != "args").collect::<Vec<_>>(),
                obj1.keys().filter(|k| *k != "args").collect::<Vec<_>>(),
                "{name}.{k0}"
            );
            for (key, value) in obj0 {
                if key != "command" && key != "args" {
                    assert_eq!(obj1[key], *value, "{name}.{k0}.{key}");
                }
            }
            let Some(command) = e0.get("command") else {
                assert_eq!(e0, e1, "{name}.{k0}: a remote entry is left alone");
                continue;
            };
            wrapped += 1;
            assert_eq!(e1["command"], s(&bin()), "{name}.{k0}");
            let args: Vec<&str> = e1["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect();
            let sep = args.iter().position(|a| *a == "--").unwrap();
            assert_eq!(&args[..4], ["mcp", "wrap", "--policy", policy.as_str()]);
            assert!(args[..sep].contains(&"--capture-root"), "{args:?}");
            assert!(
                args[..sep].contains(&captures.to_str().unwrap()),
                "{args:?}"
            );
            assert!(
                args[..sep].contains(&format!("--label={k0}").as_str()),
                "{args:?}"
            );
            assert_eq!(args[sep + 1], command.as_str().unwrap());
            let original_args: Vec<&str> = e0
                .get("args")
                .map(|a| {
                    a.as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_str().unwrap())
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(&args[sep + 2..], original_args.as_slice(), "{name}.{k0}");
        }
        assert!(wrapped >= 1, "{name}");
        // Members outside the sections are kept.
        for (key, value) in before.as_object().unwrap() {
            if key != "mcpServers" && key != "servers" {
                assert_eq!(after[key], *value, "{name}: {key}");
            }
        }

        // A second run changes nothing and writes no backup.
        let wrapped_bytes = std::fs::read(&file).unwrap();
        let r = wrap_config(
            &file,
            &["--policy", &policy, "--capture-root", &s(&captures)],
        );
        r.expect_status(0);
        assert!(String::from_utf8_lossy(&r.stdout).contains("already wrapped"));
        assert_eq!(std::fs::read(&file).unwrap(), wrapped_bytes, "{name}");
        assert_eq!(backups(&file).len(), 1, "{name}");

        // Unwrapping gives back the original bytes exactly.
        let r = wrap_config(&file, &["--unwrap"]);
        r.expect_status(0);
        assert_eq!(
            String::from_utf8_lossy(&std::fs::read(&file).unwrap()),
            String::from_utf8_lossy(&original),
            "{name}"
        );
        // One backup per original: the unwrap keeps the first change's backup.
        assert_eq!(backups(&file).len(), 1, "{name}");
        assert_eq!(std::fs::read(&backups(&file)[0]).unwrap(), original);
    }
}

#[test]
fn a_wrapped_entry_runs_a_real_session_into_its_capture_root() {
    let dir = tempdir();
    let file = fixture(dir.path(), "claude_desktop_config.json");
    let captures = dir.path().join("captures");
    wrap_config(
        &file,
        &[
            "--policy",
            &s(&demo_policy()),
            "--capture-root",
            &s(&captures),
        ],
    )
    .expect_status(0);
    let entry = &read_json(&file)["mcpServers"]["demo"];
    let args: Vec<String> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    // As the host runs it: the command with its args, from another working directory.
    let mut cmd = std::process::Command::new(entry["command"].as_str().unwrap());
    cmd.args(&args).current_dir("/");
    let r = run_command(
        cmd,
        &script(&[
            INIT,
            &call(2, "echo", r#"{"text":"hi"}"#),
            &call(3, "exec", "{}"),
        ]),
    );
    r.expect_status(0);
    assert_eq!(r.response(json!(2))["result"]["content"][0]["text"], "hi");
    assert_eq!(r.response(json!(3))["result"]["isError"], true);
    let runs: Vec<PathBuf> = std::fs::read_dir(&captures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let (read, verdict) = read_verdict(&runs[0]);
    read.expect_status(0);
    assert_eq!(verdict["closure"], "closed");
    assert_eq!(verdict["server_id"], "demo", "the entry name is the label");
    let shown = run(&["capture".into(), "show".into(), s(&runs[0])], b"");
    shown.expect_status(0);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("assay://host-config/demo"), "{text}");
}

#[test]
fn dry_run_prints_the_change_and_writes_nothing() {
    let dir = tempdir();
    let file = fixture(dir.path(), "inspector_config.json");
    let original = std::fs::read(&file).unwrap();
    let r = wrap_config(&file, &["--policy", &s(&demo_policy()), "--dry-run"]);
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(out.contains("mcpServers.everything: wrapped"), "{out}");
    assert!(out.contains("-       \"command\": \"npx\","), "{out}");
    assert!(
        out.contains(&format!("+       \"command\": \"{}\",", bin().display())),
        "{out}"
    );
    assert!(
        out.contains("mcpServers.my-server: left alone (remote server)"),
        "{out}"
    );
    assert!(out.contains("dry run"), "{out}");
    assert_eq!(std::fs::read(&file).unwrap(), original);
    assert!(backups(&file).is_empty());
}

#[test]
fn what_cannot_be_read_strictly_is_exit_2_and_untouched() {
    let dir = tempdir();
    let policy = s(&demo_policy());
    for (i, (text, expect)) in [
        (
            r#"{"mcpServers":{"a":{"command":"x"},"a":{"command":"y"}}}"#,
            "twice",
        ),
        ("{\n  // my servers\n  \"servers\": {}\n}\n", "comment"),
        (
            "{\"servers\": {\"a\": {\"command\": \"x\",}}}",
            "trailing comma",
        ),
        (
            "{\"servers\": {\"a\": {\"command\": \"\u{0}\"}}}",
            "not valid JSON",
        ),
        (
            r#"{"mcpServers":{"a":{"command":"x","Command":"evil"}}}"#,
            "Command",
        ),
        (r#"{"settings":{}}"#, "no top-level"),
    ]
    .into_iter()
    .enumerate()
    {
        let file = dir.path().join(format!("bad{i}.json"));
        std::fs::write(&file, text).unwrap();
        let r = wrap_config(&file, &["--policy", &policy]);
        r.expect_status(2);
        assert!(r.stderr.contains(expect), "{text}: {}", r.report());
        assert!(r.stderr.contains("nothing was written"), "{}", r.report());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
        assert!(backups(&file).is_empty());
    }
    let file = dir.path().join("latin1.json");
    std::fs::write(&file, b"{\"servers\":{\"a\":{\"command\":\"caf\xe9\"}}}").unwrap();
    let r = wrap_config(&file, &["--policy", &policy]);
    r.expect_status(2);
    assert!(r.stderr.contains("UTF-8"), "{}", r.report());
    // A missing file, a policy that does not load: exit 2, nothing created.
    wrap_config(&dir.path().join("none.json"), &["--policy", &policy]).expect_status(2);
    let file = fixture(dir.path(), "cursor_mcp.json");
    let r = wrap_config(&file, &["--policy", &s(&dir.path().join("missing.yaml"))]);
    r.expect_status(2);
    assert!(r.stderr.contains("--policy"), "{}", r.report());
    assert!(backups(&file).is_empty());
    // --unwrap takes no policy.
    wrap_config(&file, &["--unwrap", "--policy", &policy]).expect_status(2);
}

#[test]
fn a_symlinked_config_is_rewritten_through_the_link() {
    let dir = tempdir();
    let real = fixture(dir.path(), "vscode_mcp.json");
    let link = dir.path().join("mcp.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    wrap_config(&link, &["--policy", &s(&demo_policy())]).expect_status(0);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(read_json(&real)["servers"]["fetch"]["command"], s(&bin()));
    assert_eq!(backups(&real).len(), 1);
}

#[test]
fn a_relative_policy_and_root_are_written_absolute() {
    let dir = tempdir();
    let file = fixture(dir.path(), "inspector_config.json");
    std::fs::copy(demo_policy(), dir.path().join("p.yaml")).unwrap();
    let mut cmd = std::process::Command::new(bin());
    cmd.args([
        "mcp",
        "wrap-config",
        "inspector_config.json",
        "--policy",
        "p.yaml",
    ])
    .args(["--capture-root", "caps"])
    .current_dir(dir.path());
    run_command(cmd, b"").expect_status(0);
    let args = &read_json(&file)["mcpServers"]["everything"]["args"];
    let dir = dir.path().canonicalize().unwrap();
    assert_eq!(args[3], s(&dir.join("p.yaml")));
    assert_eq!(args[5], s(&dir.join("caps")));
}

/// The MCP Inspector's CLI (pinned in tests/interop), started as a user starts it.
fn inspector(args: &[String]) -> Run {
    let bin = root().join("tests/interop/node_modules/.bin/mcp-inspector");
    assert!(
        bin.exists(),
        "the MCP Inspector is installed by `npm ci` in tests/interop (scripts/test.sh)"
    );
    let mut cmd = std::process::Command::new(bin);
    cmd.args(args)
        .env("MCP_INSPECTOR_SECRET_STORE", "memory")
        .current_dir("/");
    run_command(cmd, b"")
}

/// The one capture under `root`, which must be closed with label `label`.
fn only_capture_closed(root: &Path, label: &str) {
    let runs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let (_, verdict) = read_verdict(&runs[0]);
    assert_eq!(verdict["closure"], "closed", "{verdict}");
    assert_eq!(verdict["server_id"], label);
}

#[test]
fn the_mcp_inspector_runs_wrapped_servers_from_its_config_and_its_command_line() {
    if !can_run(
        "hosts::the_mcp_inspector_runs_wrapped_servers_from_its_config_and_its_command_line",
        &[Needs::Node],
    ) {
        return;
    }
    let dir = tempdir();
    let file = dir.path().join("inspector.json");
    let config = json!({"mcpServers": {"demo": {"command": "python3", "args": [demo_server()]}}});
    std::fs::write(&file, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    let captures = dir.path().join("captures");
    wrap_config(
        &file,
        &[
            "--policy",
            &s(&demo_policy()),
            "--capture-root",
            &s(&captures),
        ],
    )
    .expect_status(0);
    let r = inspector(
        &[
            "--cli",
            "--config",
            &s(&file),
            "--server",
            "demo",
            "--method",
            "tools/call",
            "--tool-name",
            "echo",
            "--tool-arg",
            "text=through the inspector",
        ]
        .map(String::from),
    );
    r.expect_status(0);
    assert!(
        String::from_utf8_lossy(&r.stdout).contains("through the inspector"),
        "{}",
        r.report()
    );
    only_capture_closed(&captures, "demo");

    // The command line form: the Inspector strips the `--`; assay needs none.
    let captures = dir.path().join("captures-cli");
    let mut args: Vec<String> = vec!["--cli".into(), s(&bin())];
    args.extend(
        [
            "mcp",
            "wrap",
            "--policy",
            &s(&demo_policy()),
            "--event-source",
            "assay://inspector/cli",
            "--label",
            "cli",
            "--capture-root",
            &s(&captures),
            "--",
            "python3",
            &demo_server(),
            "--method",
            "tools/list",
        ]
        .map(String::from),
    );
    let r = inspector(&args);
    r.expect_status(0);
    assert!(
        String::from_utf8_lossy(&r.stdout).contains("\"echo\""),
        "{}",
        r.report()
    );
    only_capture_closed(&captures, "cli");
}

/// Issue 41: `--dry-run` prints the file's lines as written: a Windows path (`\\` in the JSON
/// text) is not shown with its backslashes doubled again.
#[test]
fn dry_run_prints_windows_paths_as_written() {
    let dir = tempdir();
    let file = dir.path().join("claude.json");
    let line = r#"{"mcpServers":{"win":{"command":"node","args":["C:\\Users\\me\\server.js"]}}}"#;
    std::fs::write(&file, line).unwrap();
    let r = wrap_config(&file, &["--policy", &s(&demo_policy()), "--dry-run"]);
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(out.contains(&format!("  - {line}")), "{out}");
    assert!(
        out.contains(r#""node","C:\\Users\\me\\server.js"]"#),
        "{out}"
    );
    assert!(!out.contains(r"\\\\"), "{out}");
}
