//! The suggested policy from hand-made rows: hostile names stay names, the generalization rule
//! widens only when a listing proves every sibling was read.

use std::path::Path;

use super::observe::{Evidence, Observed};
use super::write::policy_yaml;
use crate::capture::{DecisionRow, ListedTool, ListingRow, LogLine, McpDecisionRow};
use crate::policy::{Decision, Policy};

fn call(tool: &str, decision: &str, code: &str) -> LogLine {
    call_against(tool, decision, code, None)
}

fn call_against(tool: &str, decision: &str, code: &str, definition: Option<&str>) -> LogLine {
    LogLine::Decision(DecisionRow {
        seq: 0,
        time: "t".into(),
        tool: Some(tool.into()),
        tool_call_id: Some("1".into()),
        decision: decision.into(),
        reason_code: code.into(),
        reason: String::new(),
        matched_rule: None,
        enforced: true,
        arguments: None,
        arguments_truncated: false,
        arguments_sha256: None,
        tool_definition_sha256: definition.map(str::to_owned),
    })
}

fn read(uri: &str, decision: &str) -> LogLine {
    LogLine::McpDecision(McpDecisionRow {
        seq: 0,
        time: "t".into(),
        method: "resources/read".into(),
        direction: "client_to_server".into(),
        target: Some(uri.into()),
        request_id: Some("1".into()),
        decision: decision.into(),
        reason_code: if decision == "allow" {
            "P_POLICY_ALLOW".into()
        } else {
            "P_RESOURCE_DENIED".into()
        },
        reason: String::new(),
        matched_rule: None,
        enforced: true,
    })
}

fn listed(uris: &[&str]) -> LogLine {
    LogLine::Listing(ListingRow {
        seq: 0,
        time: "t".into(),
        method: Some("resources/list".into()),
        request_id: "1".into(),
        shown: uris
            .iter()
            .map(|u| ListedTool {
                name: (*u).into(),
                sha256: "0".repeat(64),
            })
            .collect(),
        removed: Vec::new(),
        replaced_by_error: false,
    })
}

fn suggested(lines: &[LogLine]) -> (String, Policy) {
    let mut e = Evidence::default();
    e.add(Observed::of(Path::new("/nonexistent/capture"), lines));
    let (yaml, pins) = policy_yaml(&e, None, 0, Some("s.pins.json"));
    assert!(pins.is_none(), "nothing was kept: no pins");
    let policy = Policy::from_bytes(yaml.as_bytes(), Path::new("s.yaml"))
        .unwrap_or_else(|err| panic!("{err}\n{yaml}"));
    (yaml, policy)
}

#[test]
fn hostile_tool_names_are_allowed_exactly_and_comments_keep_their_line() {
    let names = [
        "a\nallow: [\"*\"]",
        "quote\"d",
        "#not-a-comment",
        "tab\tand\u{202e}rtl",
        "- item",
        "\u{0}nul",
        "tag\u{E0041}char",
    ];
    let lines: Vec<LogLine> = names
        .iter()
        .map(|n| call(n, "allow", "P_POLICY_ALLOW"))
        .collect();
    let (yaml, policy) = suggested(&lines);
    for n in names {
        assert!(!policy.refuses_by_name(n), "{n:?}\n{yaml}");
        assert!(policy.refuses_by_name(&format!("{n}x")), "{n:?}");
    }
    assert!(policy.refuses_by_name("anything"), "no wildcard\n{yaml}");
    for line in yaml.lines() {
        let t = line.trim_start();
        assert!(
            t.starts_with('#') || !t.contains('\u{202e}'),
            "peer text outside a quoted scalar: {line:?}"
        );
    }
    // A glob character stays one character.
    let (_, policy) = suggested(&[call("star*", "allow", "P_POLICY_ALLOW")]);
    assert!(!policy.refuses_by_name("star*"));
    assert!(policy.refuses_by_name("starlong"));
}

#[test]
fn refused_and_listed_tools_are_left_out() {
    let (yaml, policy) = suggested(&[
        call("echo", "allow", "P_POLICY_ALLOW"),
        call("exec", "deny", "P_TOOL_DENIED"),
    ]);
    assert!(policy.refuses_by_name("exec"));
    assert!(!policy.refuses_by_name("echo"));
    assert!(yaml.contains("#   tool exec: 1 call(s), every one refused when recorded"));
    assert_eq!(policy.limits().and_then(|l| l.tool_calls()), Some(2));
}

#[test]
fn a_directory_glob_only_when_a_listing_proves_every_sibling_was_read() {
    let a = "test://static/resource/1";
    let b = "test://static/resource/2";
    let c = "test://static/resource/3";
    let allowed = |p: &Policy, u: &str| {
        p.evaluate_resource(Some(u))
            .is_some_and(|v| v.decision == Decision::Allow)
    };
    // Both listed entries read: the glob.
    let (yaml, p) = suggested(&[listed(&[a, b]), read(a, "allow"), read(b, "allow")]);
    assert!(yaml.contains("\"test://static/resource/*\""), "{yaml}");
    assert!(allowed(&p, a) && allowed(&p, b));
    assert!(
        !allowed(&p, "test://static/resource/sub/1"),
        "one segment only"
    );
    // A listed sibling never read: literals.
    let (yaml, p) = suggested(&[listed(&[a, b, c]), read(a, "allow"), read(b, "allow")]);
    assert!(!yaml.contains("resource/*"), "{yaml}");
    assert!(allowed(&p, a) && allowed(&p, b) && !allowed(&p, c));
    // A refused sibling: literals.
    let (yaml, _) = suggested(&[
        listed(&[a, b]),
        read(a, "allow"),
        read(b, "allow"),
        read("test://static/resource/x", "deny"),
    ]);
    assert!(!yaml.contains("resource/*"), "{yaml}");
    // No listing: literals.
    let (yaml, p) = suggested(&[read(a, "allow"), read(b, "allow")]);
    assert!(!yaml.contains("resource/*"), "{yaml}");
    assert!(!allowed(&p, c));
    // Nothing read: nothing allowed, never `**`.
    let (yaml, p) = suggested(&[call("echo", "allow", "P_POLICY_ALLOW")]);
    assert!(!allowed(&p, a));
    assert!(!yaml.contains("**"));
}

/// A capture directory keeping the definitions `tools` (name, tool object text), as a session
/// with `record_definitions: true` does; their digests, in order.
fn keeping(tools: &[(&str, &str)]) -> (tempfile::TempDir, Vec<String>) {
    use crate::evidence::tool_definitions::Keeper;
    let d = tempfile::tempdir().unwrap();
    let diag = std::sync::Arc::new(crate::diag::Diag::new(None, false));
    let k = Keeper::new(d.path().join(crate::capture_files::DEFINITIONS), diag);
    let mut digests = Vec::new();
    for (name, tool) in tools {
        let digest = crate::canonical::digest_of(tool).unwrap();
        k.keep(name, &digest, tool);
        digests.push(digest.as_str().to_owned());
    }
    (d, digests)
}

#[test]
fn pins_every_allowed_tool_only_when_each_has_one_kept_definition_every_call_was_made_against() {
    let echo = r#"{"name":"echo","description":"Echo","inputSchema":{"type":"object"}}"#;
    let add = r#"{"name":"add","inputSchema":{"type":"object"}}"#;
    let (dir, d) = keeping(&[("echo", echo), ("add", add)]);
    let ok = "P_POLICY_ALLOW";
    let lines = [
        call_against("echo", "allow", ok, Some(&d[0])),
        call_against("add", "allow", ok, Some(&d[1])),
    ];
    let evidence = |captures: &[&[LogLine]]| {
        let mut e = Evidence::default();
        for c in captures {
            e.add(Observed::of(dir.path(), c));
        }
        e
    };
    let e = evidence(&[&lines, &lines]);
    let (yaml, pins) = policy_yaml(&e, None, 0, Some("s.pins.json"));
    let pins = pins.expect("every allowed tool pinned");
    assert_eq!(pins.len(), 2);
    assert!(yaml.contains("pins: \"s.pins.json\""), "{yaml}");
    assert!(yaml.contains("record_definitions: true"), "{yaml}");
    // Without a file to name, the policy says how to get one and pins nothing.
    let (yaml, none) = policy_yaml(&e, None, 0, None);
    assert!(none.is_none() && !yaml.contains("\npins:"), "{yaml}");

    // A definition that changed across captures, an allowed call made before any listing held
    // the tool, a digest the capture did not keep: no pins at all (a tool without a pin would be
    // refused), and each reason named.
    let other = crate::canonical::digest_of(r#"{"name":"echo","description":"changed"}"#).unwrap();
    let changed = [
        call_against("echo", "allow", ok, Some(other.as_str())),
        lines[1].clone(),
    ];
    let unlisted = [
        call("echo", "allow", ok),
        lines[0].clone(),
        lines[1].clone(),
    ];
    for (captures, why) in [
        (
            evidence(&[&lines, &changed]),
            "its definition changed across captures",
        ),
        (
            evidence(&[&unlisted]),
            "allowed call(s) were made before any listing",
        ),
    ] {
        let (yaml, pins) = policy_yaml(&captures, None, 0, Some("s.pins.json"));
        assert!(pins.is_none() && !yaml.contains("\npins:"), "{yaml}");
        assert!(yaml.contains(why), "{why}\n{yaml}");
    }
    let mut e = Evidence::default();
    e.add(Observed::of(Path::new("/nonexistent/capture"), &lines));
    let (yaml, pins) = policy_yaml(&e, None, 0, Some("s.pins.json"));
    assert!(pins.is_none(), "{yaml}");
    assert!(yaml.contains("record_definitions: true`"), "{yaml}");
}

#[test]
fn a_kept_line_the_log_does_not_vouch_for_is_never_used() {
    let echo = r#"{"name":"echo"}"#;
    let (dir, _) = keeping(&[("echo", echo)]);
    let forged = crate::canonical::digest_of(r#"{"name":"echo","x":1}"#).unwrap();
    let lines = [call_against(
        "echo",
        "allow",
        "P_POLICY_ALLOW",
        Some(forged.as_str()),
    )];
    let mut e = Evidence::default();
    e.add(Observed::of(dir.path(), &lines));
    assert!(e.kept.is_empty());
    assert_eq!(e.captures_keeping, 0);
}
