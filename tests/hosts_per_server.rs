//! Hosts, per server (SPEC §10): `wrap-config --server NAME` touches only those entries (an
//! unknown name is exit 2, nothing written); `--host` finds each host's file under a fake HOME
//! and prints it first; a new policy or capture root updates a wrapped entry in place with one
//! backup; warnings for a command a desktop host cannot start and for one pinned policy over
//! several servers; `assay mcp hosts` lists what it finds.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::util::*;

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `assay ARGS` with HOME set to `home`, no XDG_CONFIG_HOME, and PATH set to `path` if given.
fn in_home(home: &Path, args: &[&str], path: Option<&str>) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME");
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let mut r = run_command(cmd, b"");
    r.cmd = format!("HOME={} assay {}", home.display(), args.join(" "));
    r
}

fn write_json(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

fn backups(file: &Path) -> Vec<PathBuf> {
    let name = format!(
        "{}.assay-backup",
        file.file_name().unwrap().to_string_lossy()
    );
    let mut v: Vec<PathBuf> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&name))
        .collect();
    v.sort();
    v
}

/// Two stdio servers, as the user had them.
fn two_servers() -> Value {
    json!({"mcpServers": {
        "demo": {"command": "python3", "args": [demo_server()]},
        "files": {"command": "/bin/cat", "args": ["-u"]},
    }})
}

fn policy(dir: &Path, name: &str) -> String {
    let p = dir.join(name);
    std::fs::copy(demo_policy(), &p).unwrap();
    s(&p)
}

#[test]
fn server_selects_entries_and_an_unknown_name_is_exit_2_with_nothing_written() {
    let dir = tempdir();
    let file = dir.path().join("claude_desktop_config.json");
    write_json(&file, &two_servers());
    let original = std::fs::read(&file).unwrap();
    let p = policy(dir.path(), "p.yaml");
    let wc = |extra: &[&str]| {
        let mut a = vec!["mcp", "wrap-config", file.to_str().unwrap(), "--policy", &p];
        a.extend_from_slice(extra);
        run(&a.iter().map(|x| x.to_string()).collect::<Vec<_>>(), b"")
    };
    for bad in [
        &["--server", "ghost"][..],
        &["--server", "demo", "--server", "nope"],
    ] {
        let r = wc(bad);
        r.expect_status(2);
        assert!(
            r.stderr.contains("no server named") && r.stderr.contains("mcpServers.files"),
            "{}",
            r.report()
        );
        assert!(r.stderr.contains("nothing was written"), "{}", r.report());
        assert_eq!(std::fs::read(&file).unwrap(), original);
        assert!(backups(&file).is_empty());
    }
    let r = wc(&["--server", "demo"]);
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(out.contains("mcpServers.demo: wrapped"), "{out}");
    assert!(
        out.contains("mcpServers.files: left alone (not named by --server)"),
        "{out}"
    );
    let v = read_json(&file);
    assert_eq!(v["mcpServers"]["demo"]["command"], s(&bin()));
    assert_eq!(
        v["mcpServers"]["files"],
        two_servers()["mcpServers"]["files"]
    );
    // The other one later, with its own policy: the first keeps its policy.
    let q = policy(dir.path(), "q.yaml");
    let r = run(
        &[
            "mcp",
            "wrap-config",
            file.to_str().unwrap(),
            "--policy",
            &q,
            "--server",
            "files",
        ]
        .map(String::from),
        b"",
    );
    r.expect_status(0);
    let v = read_json(&file);
    assert_eq!(v["mcpServers"]["demo"]["args"][3], p);
    assert_eq!(v["mcpServers"]["files"]["args"][3], q);
    // Unwrapping one server only, then the rest: the original bytes.
    let un = |extra: &[&str]| {
        let mut a = vec!["mcp", "wrap-config", file.to_str().unwrap(), "--unwrap"];
        a.extend_from_slice(extra);
        run(&a.iter().map(|x| x.to_string()).collect::<Vec<_>>(), b"")
    };
    un(&["--server", "files"]).expect_status(0);
    assert_eq!(
        read_json(&file)["mcpServers"]["files"],
        two_servers()["mcpServers"]["files"]
    );
    un(&[]).expect_status(0);
    assert_eq!(std::fs::read(&file).unwrap(), original);
    assert_eq!(backups(&file).len(), 1);
    assert_eq!(std::fs::read(&backups(&file)[0]).unwrap(), original);
}

#[test]
fn a_new_policy_or_capture_root_updates_in_place_with_one_backup() {
    let dir = tempdir();
    let file = dir.path().join("mcp.json");
    write_json(&file, &two_servers());
    let original = std::fs::read(&file).unwrap();
    let p = policy(dir.path(), "p.yaml");
    let q = policy(dir.path(), "q.yaml");
    let caps = dir.path().join("caps");
    let wc = |args: &[&str]| {
        let mut a = vec!["mcp", "wrap-config", file.to_str().unwrap()];
        a.extend_from_slice(args);
        let r = run(&a.iter().map(|x| x.to_string()).collect::<Vec<_>>(), b"");
        r.expect_status(0);
        String::from_utf8_lossy(&r.stdout).into_owned()
    };
    wc(&["--policy", &p]);
    let out = wc(&["--policy", &q, "--capture-root", caps.to_str().unwrap()]);
    assert!(out.contains("mcpServers.demo: updated in place"), "{out}");
    assert!(out.contains("kept from the first change"), "{out}");
    let args = read_json(&file)["mcpServers"]["demo"]["args"].clone();
    assert_eq!(args[3], q);
    assert_eq!(args[5], s(&caps));
    assert_eq!(args[8], "--label=demo");
    // The same options again: nothing to change.
    let again = std::fs::read(&file).unwrap();
    let out = wc(&["--policy", &q, "--capture-root", caps.to_str().unwrap()]);
    assert!(out.contains("already wrapped"), "{out}");
    assert_eq!(std::fs::read(&file).unwrap(), again);
    // Issue 41: a new policy alone keeps the capture root, event source and label.
    let out = wc(&["--policy", &p]);
    assert!(out.contains("mcpServers.demo: updated in place"), "{out}");
    assert!(!out.contains("evidence output removed"), "{out}");
    let args = read_json(&file)["mcpServers"]["demo"]["args"].clone();
    assert_eq!(args[3], p);
    assert_eq!(args[5], s(&caps));
    assert_eq!(args[7], "assay://host-config/demo");
    assert_eq!(args[8], "--label=demo");
    // Back to no capture root: only with --no-capture, and it says so.
    let out = wc(&["--policy", &p, "--no-capture"]);
    assert!(
        out.contains("mcpServers.demo: updated in place")
            && out.contains("evidence output removed (--no-capture)"),
        "{out}"
    );
    let args = read_json(&file)["mcpServers"]["demo"]["args"].clone();
    for gone in ["--capture-root", "--event-source", "--label=demo"] {
        assert!(!args.as_array().unwrap().contains(&json!(gone)), "{args}");
    }
    assert_eq!(backups(&file).len(), 1, "one backup per original");
    assert_eq!(std::fs::read(&backups(&file)[0]).unwrap(), original);
    wc(&["--unwrap"]);
    assert_eq!(std::fs::read(&file).unwrap(), original);
    assert_eq!(backups(&file).len(), 1);
}

/// Where each host keeps its file under HOME on Linux (XDG_CONFIG_HOME unset).
fn host_file(home: &Path, host: &str) -> PathBuf {
    home.join(match host {
        "claude-desktop" => ".config/Claude/claude_desktop_config.json",
        "claude-code" => ".claude.json",
        "cursor" => ".cursor/mcp.json",
        _ => ".config/Code/User/mcp.json",
    })
}

#[test]
#[cfg(target_os = "linux")]
fn host_finds_each_hosts_file_under_home_and_prints_it_first() {
    let dir = tempdir();
    let home = dir.path().join("home");
    let p = policy(dir.path(), "p.yaml");
    let server = json!({"command": "python3", "args": [demo_server()]});
    let configs = [
        ("claude-desktop", json!({"mcpServers": {"demo": server}})),
        (
            "claude-code",
            json!({"numStartups": 1, "mcpServers": {}, "projects": {
                "/home/me/app": {"allowedTools": [], "mcpServers": {"demo": {
                    "type": "stdio", "command": "python3", "args": [demo_server()], "env": {}}}}}}),
        ),
        ("cursor", json!({"mcpServers": {"demo": server}})),
        (
            "vscode",
            json!({"servers": {"demo": {"type": "stdio", "command": "python3", "args": [demo_server()]}}}),
        ),
    ];
    for (host, config) in &configs {
        let file = host_file(&home, host);
        // Missing: exit 2, the path it looked at printed.
        let r = in_home(
            &home,
            &["mcp", "wrap-config", "--host", host, "--policy", &p],
            None,
        );
        r.expect_status(2);
        let out = String::from_utf8_lossy(&r.stdout);
        assert_eq!(
            out.lines().next(),
            Some(format!("{host}: {}", s(&file)).as_str())
        );
        assert!(r.stderr.contains("does not exist"), "{}", r.report());
        assert!(!file.exists());

        write_json(&file, config);
        let original = std::fs::read(&file).unwrap();
        let r = in_home(
            &home,
            &["mcp", "wrap-config", "--host", host, "--policy", &p],
            None,
        );
        r.expect_status(0);
        let out = String::from_utf8_lossy(&r.stdout);
        assert_eq!(
            out.lines().next(),
            Some(format!("{host}: {}", s(&file)).as_str()),
            "{}",
            r.report()
        );
        assert!(out.contains(".demo: wrapped"), "{}", r.report());
        let v = read_json(&file);
        let entry = match *host {
            "claude-code" => &v["projects"]["/home/me/app"]["mcpServers"]["demo"],
            "vscode" => &v["servers"]["demo"],
            _ => &v["mcpServers"]["demo"],
        };
        assert_eq!(entry["command"], s(&bin()), "{host}");
        assert_eq!(backups(&file).len(), 1);
        in_home(
            &home,
            &["mcp", "wrap-config", "--host", host, "--unwrap"],
            None,
        )
        .expect_status(0);
        assert_eq!(std::fs::read(&file).unwrap(), original, "{host}");
    }
    // XDG_CONFIG_HOME moves the desktop hosts' files.
    let xdg = dir.path().join("xdg");
    let file = xdg.join("Claude/claude_desktop_config.json");
    write_json(&file, &configs[0].1);
    let mut cmd = Command::new(bin());
    cmd.args([
        "mcp",
        "wrap-config",
        "--host",
        "claude-desktop",
        "--policy",
        &p,
    ])
    .env("HOME", &home)
    .env("XDG_CONFIG_HOME", &xdg);
    let r = run_command(cmd, b"");
    r.expect_status(0);
    assert!(
        String::from_utf8_lossy(&r.stdout).starts_with(&format!("claude-desktop: {}", s(&file))),
        "{}",
        r.report()
    );
    // FILE and --host together: usage error.
    in_home(
        &home,
        &[
            "mcp",
            "wrap-config",
            "x.json",
            "--host",
            "cursor",
            "--policy",
            &p,
        ],
        None,
    )
    .expect_status(2);
}

#[test]
fn warnings_name_commands_a_host_cannot_start_and_a_pinned_policy_on_several_servers() {
    let dir = tempdir();
    let bin_dir = dir.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let tool = bin_dir.join("only-in-my-shell");
    std::fs::write(&tool, "#!/bin/sh\nexec cat\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = dir.path().join("claude_desktop_config.json");
    write_json(
        &file,
        &json!({"mcpServers": {
            "ghost": {"command": "mcp-server-ghost"},
            "mine": {"command": "only-in-my-shell"},
            "gone": {"command": "/nowhere/bin/server"},
            "fine": {"command": "cat"},
            "red\u{1b}[31m": {"command": "ghost\u{202e}txt"},
        }}),
    );
    let p = policy(dir.path(), "p.yaml");
    let path = format!("{}:/usr/bin:/bin", bin_dir.display());
    let r = in_home(
        dir.path(),
        &[
            "mcp",
            "wrap-config",
            file.to_str().unwrap(),
            "--policy",
            &p,
            "--dry-run",
        ],
        Some(&path),
    );
    r.expect_status(0);
    let warnings: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("assay: warning: "))
        .collect();
    assert_eq!(warnings.len(), 4, "{}", r.report());
    let about = |label: &str| {
        warnings
            .iter()
            .find(|w| w.contains(label))
            .unwrap_or_else(|| panic!("no warning about {label}\n{}", r.report()))
            .to_string()
    };
    assert!(
        about("mcpServers.ghost:").contains("`mcp-server-ghost` is not found"),
        "{}",
        r.report()
    );
    let mine = about("mcpServers.mine:");
    assert!(
        mine.contains("`only-in-my-shell` is found at")
            && mine.contains(&s(&tool))
            && mine.contains("/usr/local/bin:/usr/bin:/bin"),
        "{mine}"
    );
    assert!(
        about("mcpServers.gone:").contains("is not found"),
        "{}",
        r.report()
    );
    assert!(!r.stderr.contains("mcpServers.fine"), "{}", r.report());
    // Names and commands from the file are printed escaped, never raw.
    assert!(
        about("mcpServers.red\\u{1b}[31m:").contains("`ghost\\u{202e}txt` is not found"),
        "{}",
        r.report()
    );
    assert!(!r.stderr.contains('\u{1b}') && !r.stderr.contains('\u{202e}'));

    // A policy with pins over two servers.
    let pins = dir.path().join("demo.pins.json");
    run(
        &[
            "mcp".to_string(),
            "pin".into(),
            "--out".into(),
            s(&pins),
            "--".into(),
            "python3".into(),
            demo_server(),
        ],
        b"",
    )
    .expect_status(0);
    let pinned = dir.path().join("pinned.yaml");
    std::fs::write(
        &pinned,
        "version: \"1\"\nname: pinned\nallow: [\"*\"]\npins: demo.pins.json\n",
    )
    .unwrap();
    let file = dir.path().join("two.json");
    write_json(&file, &two_servers());
    let wc = |extra: &[&str]| {
        let mut a = vec!["mcp", "wrap-config", file.to_str().unwrap(), "--policy"];
        a.push(pinned.to_str().unwrap());
        a.extend_from_slice(extra);
        let r = run(&a.iter().map(|x| x.to_string()).collect::<Vec<_>>(), b"");
        r.expect_status(0);
        r
    };
    let r = wc(&["--server", "demo"]);
    assert!(!r.stderr.contains("pins tools"), "{}", r.report());
    let r = wc(&["--server", "files"]);
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("pins tools"))
        .unwrap_or_else(|| panic!("no pins warning\n{}", r.report()));
    assert!(
        line.starts_with("assay: warning: ")
            && line.contains("mcpServers.demo, mcpServers.files")
            && line.contains("--server NAME"),
        "{line}"
    );
}

#[test]
#[cfg(target_os = "linux")]
fn mcp_hosts_lists_configs_entries_and_how_each_is_wrapped() {
    let dir = tempdir();
    let home = dir.path().join("home");
    let p = policy(dir.path(), "p.yaml");
    write_json(&host_file(&home, "claude-desktop"), &two_servers());
    write_json(
        &host_file(&home, "cursor"),
        &json!({"mcpServers": {
            "remote": {"url": "https://example.com/mcp"},
            "evil\u{1b}[2Jname": {"command": "node", "args": ["x\u{202e}y.js"]},
        }}),
    );
    let claude_code = host_file(&home, "claude-code");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        &claude_code,
        "{\"mcpServers\": {\"a\": {\"command\": \"x\",}}}",
    )
    .unwrap();
    let caps = dir.path().join("caps");
    in_home(
        &home,
        &[
            "mcp",
            "wrap-config",
            "--host",
            "claude-desktop",
            "--server",
            "demo",
            "--policy",
            &p,
            "--capture-root",
            caps.to_str().unwrap(),
        ],
        None,
    )
    .expect_status(0);
    let r = in_home(&home, &["mcp", "hosts"], None);
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    // The Claude Code file cannot be read strictly: shown, status 2.
    r.expect_status(2);
    let desktop = s(&host_file(&home, "claude-desktop"));
    assert!(out.contains(&format!("claude-desktop: {desktop}")), "{out}");
    let row = |label: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no row {label}\n{out}"))
            .to_string()
    };
    let demo = row("mcpServers.demo ");
    assert!(
        demo.contains("wrapped")
            && demo.contains(&format!("policy {p}"))
            && demo.contains(&format!("capture root {}", s(&caps)))
            && demo.contains("python3"),
        "{demo}"
    );
    assert!(
        row("mcpServers.files ").contains("not wrapped  /bin/cat -u"),
        "{out}"
    );
    assert!(row("mcpServers.remote ").contains("remote"), "{out}");
    // Text from the file is escaped, never printed raw.
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{202e}'),
        "{out:?}"
    );
    assert!(out.contains("mcpServers.evil\\u{1b}[2Jname"), "{out}");
    assert!(out.contains("x\\u{202e}y.js"), "{out}");
    assert!(out.contains("claude-code: "), "{out}");
    assert!(
        out.contains("cannot be read") && out.contains("trailing comma"),
        "{out}"
    );
    assert!(
        out.lines()
            .last()
            .is_some_and(|l| l.starts_with("not found: vscode (")),
        "{out}"
    );
    // Nothing at all.
    let empty = dir.path().join("empty");
    let r = in_home(&empty, &["mcp", "hosts"], None);
    r.expect_status(0);
    assert!(
        String::from_utf8_lossy(&r.stdout).starts_with("no host configuration found"),
        "{}",
        r.report()
    );
}
