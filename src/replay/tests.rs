//! The replay judge on hand-made rows: what it cannot know it says, with the rule.

use std::path::Path;

use super::judge::replay_lines;
use super::{ChangeKind, ReplayedCapture};
use crate::capture::{DecisionRow, ListingRow, LogLine, McpDecisionRow, RemovedTool};
use crate::policy::Policy;

fn policy(yaml: &str) -> Policy {
    Policy::from_bytes(yaml.as_bytes(), Path::new("p.yaml")).unwrap()
}

fn call(tool: &str, arguments: Option<&str>, truncated: bool, code: &str) -> LogLine {
    let decision = if code == "P_POLICY_ALLOW" {
        "allow"
    } else {
        "deny"
    };
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
        arguments: arguments.map(str::to_owned),
        arguments_truncated: truncated,
        arguments_sha256: Some("a".repeat(64)),
        tool_definition_sha256: None,
    })
}

fn run(p: &Policy, lines: &[LogLine]) -> ReplayedCapture {
    replay_lines(p, lines)
}

const CONSTRAINED: &str =
    "version: '1'\nconstraints: [{tool: read_file, params: {path: {within: /w}}}]\n";

#[test]
fn arguments_that_are_not_whole_make_a_call_unjudgeable_by_its_rule() {
    let p = policy(CONSTRAINED);
    for (args, truncated, why) in [
        (None, false, "were not recorded"),
        (Some(r#"{"path":"/etc"}"#), true, "were cut"),
        (Some(r#"{"path":"[redacted]"}"#), false, "redacted values"),
        (Some(r#"{"path":"#), false, "not JSON"),
    ] {
        let r = run(&p, &[call("read_file", args, truncated, "P_POLICY_ALLOW")]);
        assert_eq!(r.judged, 0);
        assert_eq!(r.unjudgeable.len(), 1, "{args:?}");
        let u = &r.unjudgeable[0];
        assert_eq!(u.rule.as_deref(), Some("constraints:read_file.path"));
        assert!(u.why.contains(why), "{}", u.why);
    }
    // Whole arguments are judged; a tool no argument rule reads needs none.
    let r = run(
        &p,
        &[
            call(
                "read_file",
                Some(r#"{"path":"/etc"}"#),
                false,
                "P_POLICY_ALLOW",
            ),
            call("echo", None, false, "P_POLICY_ALLOW"),
        ],
    );
    assert_eq!(r.judged, 2);
    assert_eq!(r.changes.len(), 1);
    assert_eq!(r.changes[0].change, ChangeKind::NewlyDenied);
    assert_eq!(
        r.changes[0].new.reason_code.as_deref(),
        Some("P_ARG_CONSTRAINT")
    );
}

#[test]
fn a_call_refused_with_its_batch_is_judged_only_when_it_is_refused_on_its_own() {
    let p = policy("version: '1'\ndeny: [exec]\n");
    let r = run(
        &p,
        &[
            call("exec", None, false, "P_BATCH_REFUSED"),
            call("echo", None, false, "P_BATCH_REFUSED"),
        ],
    );
    assert_eq!(r.judged, 1);
    assert_eq!(
        r.changes[0].new.reason_code.as_deref(),
        Some("P_TOOL_DENIED")
    );
    assert_eq!(r.unjudgeable.len(), 1);
    assert!(r.unjudgeable[0].why.contains("batch"));
}

#[test]
fn messages_whose_events_record_too_little_are_unjudgeable() {
    let p = policy("version: '1'\nresources: {allow: ['file:///w/**']}\nprompts: {allow: ['*']}\n");
    let mcp = |method: &str, target: &str| {
        LogLine::McpDecision(McpDecisionRow {
            seq: 0,
            time: "t".into(),
            method: method.into(),
            direction: "client_to_server".into(),
            target: Some(target.into()),
            request_id: Some("1".into()),
            decision: "allow".into(),
            reason_code: "P_POLICY_ALLOW".into(),
            reason: String::new(),
            matched_rule: None,
            enforced: true,
        })
    };
    let r = run(
        &p,
        &[
            mcp("subscriptions/listen", "file:///w/a"),
            mcp("completion/complete", "greet"),
            mcp("resources/subscribe", "file:///etc/passwd"),
        ],
    );
    assert_eq!(r.unjudgeable.len(), 2);
    assert_eq!(r.judged, 1);
    assert_eq!(
        r.changes[0].new.reason_code.as_deref(),
        Some("P_RESOURCE_NOT_ALLOWED")
    );
}

#[test]
fn drifted_instructions_without_pins_are_shown_again() {
    let p = policy("version: '1'\n");
    let l = LogLine::Listing(ListingRow {
        seq: 0,
        time: "t".into(),
        method: Some("initialize".into()),
        request_id: "0".into(),
        shown: Vec::new(),
        removed: vec![RemovedTool {
            name: "(instructions)".into(),
            sha256: None,
            reason_code: "P_INSTRUCTIONS_DRIFT".into(),
        }],
        replaced_by_error: false,
    });
    let r = run(&p, &[l]);
    assert_eq!(r.changes.len(), 1);
    assert_eq!(r.changes[0].change, ChangeKind::NewlyAllowed);
}
