//! The suggested policy from hand-made rows: hostile names stay names, the generalization rule
//! widens only when a listing proves every sibling was read.

use std::path::Path;

use super::observe::{Evidence, Observed};
use super::write::policy_yaml;
use crate::capture::{DecisionRow, ListedTool, ListingRow, LogLine, McpDecisionRow};
use crate::policy::{Decision, Policy};

fn call(tool: &str, decision: &str, code: &str) -> LogLine {
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
        tool_definition_sha256: None,
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
    e.add(Observed::of(lines));
    let yaml = policy_yaml(&e, None, 0);
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
