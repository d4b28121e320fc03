//! Rewrites of real-world shaped host configurations: wrapped, idempotent, reversible byte for
//! byte, every other member kept, and refusals for what cannot be rewritten faithfully.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::*;

fn wrap_with(root: Option<&str>) -> RewriteAction {
    RewriteAction::Wrap(WrapWith {
        assay: PathBuf::from("/opt/assay/bin/assay"),
        policy: PathBuf::from("/home/me/assay.yaml"),
        capture: root.map_or(Capture::Keep, |r| Capture::Root(PathBuf::from(r))),
    })
}

fn wrap(text: &str) -> Rewrite {
    rewrite(text.as_bytes(), &wrap_with(Some("/home/me/captures"))).unwrap()
}

fn unwrap(text: &str) -> Rewrite {
    rewrite(text.as_bytes(), &RewriteAction::Unwrap).unwrap()
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

const CLAUDE: &str = r#"{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/Users/me/Desktop"
      ]
    },
    "sqlite": {"command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "/tmp/t.db"], "env": {"TOKEN": "s3cret"}},
    "bare": { "command": "/usr/local/bin/my-server" },
    "empty-args": { "command": "srv", "args": [] }
  },
  "globalShortcut": "Ctrl+Space"
}
"#;

const CURSOR: &str = r#"{"mcpServers":{"remote":{"url":"https://mcp.example.com/sse","headers":{"Authorization":"Bearer x"}},"local":{"command":"python3","args":["-m","server"],"env":{"A":"1"}}}}"#;

const VSCODE: &str = r#"{
	"inputs": [{ "type": "promptString", "id": "key", "description": "API key", "password": true }],
	"servers": {
		"github": { "type": "http", "url": "https://api.githubcopilot.com/mcp/" },
		"fetch": {
			"type": "stdio",
			"command": "uvx",
			"args": ["mcp-server-fetch"],
			"env": { "KEY": "${input:key}" },
			"envFile": "${workspaceFolder}/.env"
		}
	}
}
"#;

const INSPECTOR: &str = r#"{
  "mcpServers": {
    "everything": {
      "command": "npx",
      "args": ["@modelcontextprotocol/server-everything"],
      "env": {"hello": "Hello MCP!"}
    }
  }
}"#;

#[test]
fn claude_desktop_entries_are_wrapped_and_everything_else_kept() {
    let r = wrap(CLAUDE);
    let v = parse(&r.text);
    let fs = &v["mcpServers"]["filesystem"];
    assert_eq!(fs["command"], "/opt/assay/bin/assay");
    assert_eq!(
        fs["args"],
        json!([
            "mcp",
            "wrap",
            "--policy",
            "/home/me/assay.yaml",
            "--capture-root",
            "/home/me/captures",
            "--event-source",
            "assay://host-config/filesystem",
            "--label=filesystem",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/Users/me/Desktop"
        ])
    );
    assert_eq!(v["mcpServers"]["sqlite"]["env"], json!({"TOKEN": "s3cret"}));
    assert_eq!(v["mcpServers"]["bare"]["args"][9], "--");
    assert_eq!(
        v["mcpServers"]["bare"]["args"][10],
        "/usr/local/bin/my-server"
    );
    assert_eq!(
        v["mcpServers"]["empty-args"]["args"]
            .as_array()
            .unwrap()
            .len(),
        11
    );
    assert_eq!(v["globalShortcut"], "Ctrl+Space");
    assert!(r.entries.iter().all(|e| e.change == EntryChange::Wrapped));
    // Only the command and args values changed: the text outside them is the same.
    assert!(
        r.text
            .ends_with("  \"globalShortcut\": \"Ctrl+Space\"\n}\n")
    );
    assert!(r.text.contains("\"env\": {\"TOKEN\": \"s3cret\"}}"));
}

#[test]
fn wrapping_twice_changes_nothing_and_unwrap_restores_every_byte() {
    for original in [CLAUDE, CURSOR, VSCODE, INSPECTOR] {
        let once = wrap(original);
        let twice = wrap(&once.text);
        assert_eq!(twice.text, once.text);
        assert!(!twice.changed());
        let back = unwrap(&once.text);
        assert_eq!(back.text, original, "unwrap of:\n{}", once.text);
        // Unwrapping an unwrapped file changes nothing.
        assert!(!unwrap(original).changed());
        assert_eq!(unwrap(original).text, original);
    }
}

#[test]
fn remote_entries_and_other_members_are_left_alone() {
    let r = wrap(CURSOR);
    let v = parse(&r.text);
    assert_eq!(
        v["mcpServers"]["remote"],
        parse(CURSOR)["mcpServers"]["remote"]
    );
    assert_eq!(v["mcpServers"]["local"]["env"], json!({"A": "1"}));
    let changes: Vec<EntryChange> = r.entries.iter().map(|e| e.change).collect();
    assert_eq!(changes, vec![EntryChange::Remote, EntryChange::Wrapped]);

    let r = wrap(VSCODE);
    let v = parse(&r.text);
    assert_eq!(v["servers"]["github"], parse(VSCODE)["servers"]["github"]);
    assert_eq!(v["servers"]["fetch"]["type"], "stdio");
    assert_eq!(v["servers"]["fetch"]["envFile"], "${workspaceFolder}/.env");
    assert_eq!(v["inputs"], parse(VSCODE)["inputs"]);
    assert_eq!(v["servers"]["fetch"]["args"][10], "uvx");
    assert_eq!(v["servers"]["fetch"]["args"][11], "mcp-server-fetch");
}

#[test]
fn without_a_capture_root_only_the_policy_is_added() {
    let r = rewrite(INSPECTOR.as_bytes(), &wrap_with(None)).unwrap();
    let v = parse(&r.text);
    assert_eq!(
        v["mcpServers"]["everything"]["args"],
        json!([
            "mcp",
            "wrap",
            "--policy",
            "/home/me/assay.yaml",
            "--",
            "npx",
            "@modelcontextprotocol/server-everything"
        ])
    );
}

#[test]
fn names_are_encoded_in_the_event_source_and_kept_in_the_label() {
    let text = r#"{"mcpServers":{"-my server/é":{"command":"x"}}}"#;
    let v = parse(&wrap(text).text);
    let args = &v["mcpServers"]["-my server/é"]["args"];
    assert_eq!(args[7], "assay://host-config/-my%20server%2F%C3%A9");
    assert_eq!(args[8], "--label=-my server/é");
}

#[test]
fn escaped_keys_are_read_as_every_json_parser_reads_them() {
    let text = r#"{"mcp\u0053ervers":{"a":{"comm\u0061nd":"srv","\u0061rgs":["x"]}}}"#;
    let r = wrap(text);
    let v = parse(&r.text);
    assert_eq!(v["mcpServers"]["a"]["command"], "/opt/assay/bin/assay");
    assert_eq!(v["mcpServers"]["a"]["args"][11], "x");
    assert_eq!(unwrap(&r.text).text, text);
}

#[test]
fn the_report_shows_the_lines_before_and_after() {
    let r = wrap(INSPECTOR);
    let e = &r.entries[0];
    assert!(e.before.contains("\"command\": \"npx\""), "{}", e.before);
    assert!(e.before.contains("server-everything"), "{}", e.before);
    assert!(e.after.contains("/opt/assay/bin/assay"), "{}", e.after);
    assert!(!e.after.contains("hello"), "{}", e.after);
}

#[test]
fn a_hand_wrapped_entry_is_updated_keeping_its_other_options_and_unwrapped_from_its_separator() {
    let text = r#"{"mcpServers":{"a":{"command":"/usr/bin/assay","args":["mcp","wrap","--verbose","--policy","p","--","node","s.js"]}}}"#;
    let r = rewrite(text.as_bytes(), &wrap_with(None)).unwrap();
    assert_eq!(r.entries[0].change, EntryChange::Updated);
    assert_eq!(
        parse(&r.text)["mcpServers"]["a"],
        json!({"command": "/opt/assay/bin/assay", "args": ["mcp", "wrap", "--policy", "/home/me/assay.yaml", "--verbose", "--", "node", "s.js"]})
    );
    let again = rewrite(r.text.as_bytes(), &wrap_with(None)).unwrap();
    assert_eq!(again.entries[0].change, EntryChange::AlreadyWrapped);
    assert_eq!(again.text, r.text);
    let back = unwrap(text);
    assert_eq!(
        parse(&back.text)["mcpServers"]["a"],
        json!({"command": "node", "args": ["s.js"]})
    );
    let no_separator =
        r#"{"mcpServers":{"a":{"command":"assay","args":["mcp","wrap","--policy","p","node"]}}}"#;
    let back = unwrap(no_separator);
    assert_eq!(back.entries[0].change, EntryChange::NoSeparator);
    assert_eq!(back.text, no_separator);
    assert_eq!(
        wrap(no_separator).entries[0].change,
        EntryChange::NoSeparator
    );
}

#[test]
fn a_new_policy_or_root_updates_in_place_and_unwrap_still_restores_every_byte() {
    for original in [CLAUDE, CURSOR, VSCODE, INSPECTOR] {
        let first = wrap(original);
        let other = RewriteAction::Wrap(WrapWith {
            assay: PathBuf::from("/opt/assay/bin/assay"),
            policy: PathBuf::from("/home/me/other.yaml"),
            capture: Capture::Off,
        });
        let second = rewrite(first.text.as_bytes(), &other).unwrap();
        assert!(second.changed());
        for (e, w) in second.entries.iter().zip(&first.entries) {
            if w.change == EntryChange::Wrapped {
                assert_eq!(e.change, EntryChange::Updated, "{}", e.name);
                let wrapping = e.wrapping.as_ref().unwrap();
                assert_eq!(wrapping.policy.as_deref(), Some("/home/me/assay.yaml"));
                assert_eq!(wrapping.capture_root.as_deref(), Some("/home/me/captures"));
            }
        }
        let v = parse(&second.text);
        let section = v.get("mcpServers").or(v.get("servers")).unwrap();
        for (_, entry) in section.as_object().unwrap() {
            if let Some(args) = entry.get("args").filter(|_| entry.get("url").is_none()) {
                assert_eq!(args[3], "/home/me/other.yaml");
                assert!(!args.as_array().unwrap().contains(&json!("--capture-root")));
            }
        }
        assert_eq!(unwrap(&second.text).text, original);
        // And back to the first options: the very text of the first wrap.
        assert_eq!(wrap(&second.text).text, first.text);
    }
}

#[test]
fn servers_select_entries_and_an_unknown_name_is_refused() {
    let only = |names: &[&str]| {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        rewrite_selected(CLAUDE.as_bytes(), &wrap_with(None), &names)
    };
    let r = only(&["sqlite", "mcpServers.bare"]).unwrap();
    let changes: Vec<(&str, EntryChange)> = r
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e.change))
        .collect();
    assert_eq!(
        changes,
        [
            ("filesystem", EntryChange::NotSelected),
            ("sqlite", EntryChange::Wrapped),
            ("bare", EntryChange::Wrapped),
            ("empty-args", EntryChange::NotSelected),
        ]
    );
    assert_eq!(
        parse(&r.text)["mcpServers"]["filesystem"],
        parse(CLAUDE)["mcpServers"]["filesystem"]
    );
    let e = only(&["sqlite", "ghost"]).unwrap_err();
    assert!(matches!(&e, HostConfigError::UnknownServer { unknown, .. } if unknown == &["ghost"]));
    let msg = e.to_string();
    assert!(
        msg.contains("\"ghost\"") && msg.contains("mcpServers.filesystem"),
        "{msg}"
    );
}

const CLAUDE_CODE: &str = r#"{
  "numStartups": 3,
  "mcpServers": {"top": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "env": {}}},
  "projects": {
    "/home/me/app": {
      "allowedTools": [],
      "mcpServers": {"db": {"type": "stdio", "command": "npx", "args": ["-y", "db-mcp"], "env": {}}},
      "history": [{"display": "mcpServers"}]
    },
    "/home/me/empty": {"mcpServers": {}}
  }
}
"#;

#[test]
fn claude_code_project_entries_are_entries_too() {
    let r = wrap(CLAUDE_CODE);
    let labels: Vec<String> = r.entries.iter().map(entry_label).collect();
    assert_eq!(
        labels,
        ["mcpServers.top", "projects./home/me/app.mcpServers.db"]
    );
    assert!(r.entries.iter().all(|e| e.change == EntryChange::Wrapped));
    let v = parse(&r.text);
    let db = &v["projects"]["/home/me/app"]["mcpServers"]["db"];
    assert_eq!(db["command"], "/opt/assay/bin/assay");
    assert_eq!(db["args"][9], "--");
    assert_eq!(db["args"][10], "npx");
    assert_eq!(
        v["projects"]["/home/me/app"]["history"],
        parse(CLAUDE_CODE)["projects"]["/home/me/app"]["history"]
    );
    assert_eq!(unwrap(&r.text).text, CLAUDE_CODE);
    let only = rewrite_selected(
        CLAUDE_CODE.as_bytes(),
        &wrap_with(None),
        &["projects./home/me/app.mcpServers.db".to_string()],
    )
    .unwrap();
    assert_eq!(only.entries[0].change, EntryChange::NotSelected);
    assert_eq!(only.entries[1].change, EntryChange::Wrapped);
    let seen = inspect(r.text.as_bytes()).unwrap();
    assert_eq!(
        seen[1].server.as_deref(),
        Some(&["npx".to_string(), "-y".into(), "db-mcp".into()][..])
    );
    assert_eq!(
        seen[1].wrapping.as_ref().and_then(|w| w.policy.as_deref()),
        Some("/home/me/assay.yaml")
    );
}

#[test]
fn what_cannot_be_read_strictly_is_refused() {
    for (text, expect) in [
        (
            r#"{"mcpServers":{"a":{"command":"x","command":"y"}}}"#,
            "twice",
        ),
        (r#"{"mcpServers":{},"mcpServers":{}}"#, "twice"),
        ("{\n  // comment\n  \"servers\": {}\n}", "comment"),
        (r#"{"servers":{"a":{"command":"x",}}}"#, "trailing comma"),
        ("\u{feff}{\"servers\":{}}", "byte order mark"),
        (
            r#"{"servers":{"a":{"command":"x","args":[1e999]}}}"#,
            "not finite",
        ),
        ("{\"servers\":", "not valid JSON"),
        (
            r#"{"mcpServers":{"a":{"command":"x","Command":"evil"}}}"#,
            "`Command`",
        ),
        (r#"{"MCPServers":{"a":{"command":"evil"}}}"#, "`MCPServers`"),
        (
            r#"{"mcpServers":{"a":{"command":"x","ARGS":["-e"]}}}"#,
            "`ARGS`",
        ),
        (r#"{"mcpServers":{"a":{"command":["x"]}}}"#, "not a string"),
        (r#"{"mcpServers":{"a":{"command":true}}}"#, "not a string"),
        (
            r#"{"mcpServers":{"a":{"command":"x","args":["a",2]}}}"#,
            "array of strings",
        ),
        (
            r#"{"mcpServers":{"a":{"command":"x","args":["a",false]}}}"#,
            "array of strings",
        ),
        (
            r#"{"mcpServers":{"a":{"command":"x","args":"a b"}}}"#,
            "array of strings",
        ),
        (
            r#"{"servers":{"a":{"type":"sse","command":"x"}}}"#,
            "only a stdio entry",
        ),
        (
            r#"{"mcpServers":{"a":{"command":"x","url":"http://h"}}}"#,
            "both",
        ),
        (r#"{"mcpServers":{"a":"x"}}"#, "not an object"),
        (r#"{"mcpServers":[]}"#, "not an object"),
        (r#"{"other":{}}"#, "no top-level"),
        ("[]", "not a JSON object"),
    ] {
        let e = rewrite(text.as_bytes(), &wrap_with(None))
            .unwrap_err()
            .to_string();
        assert!(e.contains(expect), "{text}: {e}");
    }
    let e = rewrite(
        b"{\"servers\":{\"a\":{\"command\":\"\xff\"}}}",
        &wrap_with(None),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("UTF-8"), "{e}");
}

#[test]
fn refusals_name_the_line_and_column() {
    let e = rewrite(
        b"{\n  \"servers\": {},\n  \"servers\": {}\n}",
        &wrap_with(None),
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("line 3, column 3:"), "{e}");
}

#[test]
fn entries_without_command_or_url_are_left_alone() {
    let text = r#"{"mcpServers":{"a":{"disabled":true},"b":{"type":"stdio"}}}"#;
    let r = wrap(text);
    assert_eq!(r.text, text);
    assert!(r.entries.iter().all(|e| e.change == EntryChange::NoCommand));
}

#[test]
fn a_name_no_label_can_hold_gets_no_label() {
    // A control character, written as a JSON escape (built, so no source holds U+0001's escape).
    let control = format!("a\\u{:04x}b", 1);
    for name in ["", control.as_str()] {
        let text = format!(r#"{{"mcpServers":{{"{name}":{{"command":"x"}}}}}}"#);
        let v = parse(&wrap(&text).text);
        let entry = v["mcpServers"]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .clone();
        let args: Vec<String> = serde_json::from_value(entry["args"].clone()).unwrap();
        assert!(!args.iter().any(|a| a.starts_with("--label")), "{args:?}");
        assert_eq!(args[args.len() - 1], "x");
    }
}

/// Issue 41: a re-wrap that names only a policy keeps the entry's capture root, event source and
/// label (evidence stays on); `Capture::Off` removes every evidence option and says so.
#[test]
fn a_rewrap_keeps_the_evidence_options_it_does_not_change() {
    let text = r#"{"mcpServers":{"fs":{"command":"/opt/assay/bin/assay","args":["mcp","wrap","--policy","/home/me/assay.yaml","--capture-root","/home/me/caps","--event-source","urn:me:fs","--label","mine","--decision-log-new","--decision-log","/home/me/d.ndjson","--verbose","--","npx","server"]}}}"#;
    let action = |capture| {
        RewriteAction::Wrap(WrapWith {
            assay: PathBuf::from("/opt/assay/bin/assay"),
            policy: PathBuf::from("/home/me/other.yaml"),
            capture,
        })
    };
    let args = |r: &Rewrite| parse(&r.text)["mcpServers"]["fs"]["args"].clone();

    let kept = rewrite(text.as_bytes(), &action(Capture::Keep)).unwrap();
    assert_eq!(kept.entries[0].change, EntryChange::Updated);
    assert!(!kept.entries[0].evidence_removed);
    assert_eq!(
        args(&kept),
        json!([
            "mcp",
            "wrap",
            "--policy",
            "/home/me/other.yaml",
            "--capture-root",
            "/home/me/caps",
            "--event-source",
            "urn:me:fs",
            "--label=mine",
            "--decision-log-new",
            "--decision-log",
            "/home/me/d.ndjson",
            "--verbose",
            "--",
            "npx",
            "server"
        ])
    );
    // A new root keeps the entry's own event source and label.
    let moved = rewrite(
        text.as_bytes(),
        &action(Capture::Root(PathBuf::from("/srv/caps"))),
    )
    .unwrap();
    let a = args(&moved);
    assert_eq!(
        (&a[5], &a[7], &a[8]),
        (
            &json!("/srv/caps"),
            &json!("urn:me:fs"),
            &json!("--label=mine")
        )
    );

    let off = rewrite(text.as_bytes(), &action(Capture::Off)).unwrap();
    assert_eq!(off.entries[0].change, EntryChange::Updated);
    assert!(off.entries[0].evidence_removed);
    assert_eq!(
        args(&off),
        json!([
            "mcp",
            "wrap",
            "--policy",
            "/home/me/other.yaml",
            "--verbose",
            "--",
            "npx",
            "server"
        ])
    );
    // Off on an entry without evidence removes nothing and says nothing.
    let again = rewrite(off.text.as_bytes(), &action(Capture::Off)).unwrap();
    assert_eq!(again.entries[0].change, EntryChange::AlreadyWrapped);
    assert!(!again.entries[0].evidence_removed);
    // Keep on an entry wrapped by assay with a root gives back the very same text.
    let first = wrap(CLAUDE);
    let same = rewrite(first.text.as_bytes(), &wrap_with(None)).unwrap();
    assert_eq!(same.text, first.text);
}
