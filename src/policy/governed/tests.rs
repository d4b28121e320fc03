use std::path::Path;

use serde_json::json;

use crate::policy::{
    CallBudget, ClientFeature, Decision, MAX_RECORDED_BYTES, Policy, PolicyError, ReasonCode,
};
use crate::sha256::HexDigest;

fn load(yaml: &str) -> Result<Policy, PolicyError> {
    Policy::from_bytes(yaml.as_bytes(), Path::new("team.yaml"))
}

fn ok(yaml: &str) -> Policy {
    match load(yaml) {
        Ok(p) => p,
        Err(e) => panic!("{yaml}: {e}"),
    }
}

const FULL: &str = r#"
version: "1"
allow: ["*"]
resources:
  allow: ["file:///workspace/**", "test://static/resource/*"]
  deny: ["file:///workspace/.env"]
prompts:
  allow: ["*"]
  deny: ["debug_*"]
client_features:
  sampling: deny
  elicitation: allow
limits:
  tool_calls: 3
  per_tool: { write_file: 2 }
  repeated_call: 1
record_arguments: true
redact: ["*token*", "*SECRET*", "authorization", "pass?"]
"#;

#[test]
fn old_policies_govern_nothing_new() {
    let p = ok("version: \"1\"\nallow: [\"*\"]\ndeny: [exec]\nhide_refused_tools: true\n");
    assert!(p.governed().is_empty());
    assert!(!p.record_arguments());
    assert_eq!(p.evaluate_resource(Some("file:///etc/passwd")), None);
    assert_eq!(p.evaluate_resource(None), None);
    assert_eq!(p.evaluate_prompt(Some("x")), None);
    assert_eq!(p.evaluate_prompt(None), None);
    for f in ClientFeature::ALL {
        assert_eq!(p.evaluate_client_feature(f), None);
    }
    assert_eq!(p.refuses_resource("file:///etc/passwd"), None);
    assert_eq!(p.refuses_resource("no scheme"), None);
    assert_eq!(p.refuses_resource_template("/x/{y}"), None);
    assert_eq!(p.refuses_prompt("debug"), None);
    assert!(p.limits().is_none());
}

#[test]
fn governed_lists_sections_in_order() {
    let p = ok(FULL);
    assert_eq!(
        p.governed(),
        ["resources", "prompts", "client_features", "limits"]
    );
    assert!(p.record_arguments());
    let p = ok("version: \"1\"\nlimits: {tool_calls: 1}\nprompts: {}\n");
    assert_eq!(p.governed(), ["prompts", "limits"]);
}

#[test]
fn resources_through_the_policy() {
    let p = ok(FULL);
    let v = p.evaluate_resource(Some("file:///workspace/.env"));
    assert_eq!(
        v.as_ref().map(|v| (v.decision, v.reason_code)),
        Some((Decision::Deny, ReasonCode::P_RESOURCE_DENIED))
    );
    assert_eq!(
        v.and_then(|v| v.matched_rule).as_deref(),
        Some("resources.deny:file:///workspace/.env")
    );
    let code = |uri: &str| p.evaluate_resource(Some(uri)).map(|v| v.reason_code);
    assert_eq!(
        code("file:///workspace/a/b"),
        Some(ReasonCode::P_POLICY_ALLOW)
    );
    assert_eq!(
        code("file:///workspace/../etc/passwd"),
        Some(ReasonCode::P_RESOURCE_NOT_ALLOWED)
    );
    assert_eq!(
        code("file:///workspace/%2e%2e/etc/passwd"),
        Some(ReasonCode::P_RESOURCE_NOT_ALLOWED)
    );
    assert_eq!(
        code("file:///workspace/a%0a"),
        Some(ReasonCode::P_RESOURCE_NOT_ALLOWED)
    );
    assert_eq!(
        code("file:///workspace/.\t./etc/passwd"),
        Some(ReasonCode::P_RESOURCE_NOT_ALLOWED)
    );
    assert_eq!(
        p.evaluate_resource(None)
            .map(|v| (v.decision, v.reason_code)),
        Some((Decision::Error, ReasonCode::P_MALFORMED))
    );
    assert_eq!(p.refuses_resource("file:///workspace/x"), None);
    assert_eq!(
        p.refuses_resource("file:///workspace/.env"),
        Some(ReasonCode::P_RESOURCE_DENIED)
    );
    assert_eq!(
        p.refuses_resource("file:///etc/hosts"),
        Some(ReasonCode::P_RESOURCE_NOT_ALLOWED)
    );
    assert_eq!(
        p.refuses_resource_template("test://static/resource/{id}"),
        None
    );
    assert_eq!(
        p.refuses_resource_template("test://dynamic/{id}"),
        Some(ReasonCode::P_RESOURCE_NOT_ALLOWED)
    );
}

#[test]
fn prompts_deny_allow_and_not_allowed() {
    let p = ok(FULL);
    let v = p.evaluate_prompt(Some("debug_dump"));
    assert_eq!(
        v.as_ref().map(|v| (v.decision, v.reason_code)),
        Some((Decision::Deny, ReasonCode::P_PROMPT_DENIED))
    );
    assert_eq!(
        v.and_then(|v| v.matched_rule).as_deref(),
        Some("prompts.deny:debug_*")
    );
    let v = p.evaluate_prompt(Some("simple_prompt"));
    assert_eq!(
        v.as_ref().map(|v| (v.decision, v.reason_code)),
        Some((Decision::Allow, ReasonCode::P_POLICY_ALLOW))
    );
    assert_eq!(
        v.and_then(|v| v.matched_rule).as_deref(),
        Some("prompts.allow:*")
    );
    assert_eq!(
        p.evaluate_prompt(None).map(|v| (v.decision, v.reason_code)),
        Some((Decision::Error, ReasonCode::P_MALFORMED))
    );
    let q = ok("version: \"1\"\nprompts: {allow: [\"simple_?\", code_review]}\n");
    let code = |n: &str| q.evaluate_prompt(Some(n)).map(|v| v.reason_code);
    assert_eq!(code("simple_1"), Some(ReasonCode::P_POLICY_ALLOW));
    assert_eq!(code("code_review"), Some(ReasonCode::P_POLICY_ALLOW));
    assert_eq!(code("simple_12"), Some(ReasonCode::P_PROMPT_NOT_ALLOWED));
    assert_eq!(
        q.refuses_prompt("other"),
        Some(ReasonCode::P_PROMPT_NOT_ALLOWED)
    );
    assert_eq!(q.refuses_prompt("simple_x"), None);
    assert_eq!(
        p.refuses_prompt("debug_x"),
        Some(ReasonCode::P_PROMPT_DENIED)
    );
    let open = ok("version: \"1\"\nprompts: {deny: [secret]}\n");
    let v = open.evaluate_prompt(Some("anything"));
    assert_eq!(
        v.map(|v| (v.decision, v.matched_rule)),
        Some((Decision::Allow, None))
    );
}

#[test]
fn client_features_named_or_not_governed() {
    let p = ok(FULL);
    let v = p.evaluate_client_feature(ClientFeature::Sampling);
    assert_eq!(
        v.as_ref().map(|v| (v.decision, v.reason_code)),
        Some((Decision::Deny, ReasonCode::P_CLIENT_FEATURE_DENIED))
    );
    assert_eq!(
        v.and_then(|v| v.matched_rule).as_deref(),
        Some("client_features.sampling")
    );
    let v = p.evaluate_client_feature(ClientFeature::Elicitation);
    assert_eq!(
        v.map(|v| (v.decision, v.reason_code, v.matched_rule)),
        Some((
            Decision::Allow,
            ReasonCode::P_POLICY_ALLOW,
            Some("client_features.elicitation".to_owned())
        ))
    );
    assert_eq!(p.evaluate_client_feature(ClientFeature::Roots), None);
    assert_eq!(
        ClientFeature::ALL.map(|f| f.as_str()),
        ["sampling", "elicitation", "roots"]
    );
}

fn digest(s: &str) -> HexDigest {
    HexDigest::of(s.as_bytes())
}

fn admit(b: &mut CallBudget, tool: &str, args: Option<&str>) -> Option<ReasonCode> {
    let d = args.map(digest);
    b.admit(tool, d.as_ref()).map(|v| {
        assert_eq!(v.decision, Decision::Deny);
        v.reason_code
    })
}

#[test]
fn tool_calls_admits_n_and_refuses_the_next() {
    let p = ok("version: \"1\"\nlimits: {tool_calls: 3}\n");
    let mut b = p.limits().map(|l| l.budget()).unwrap();
    for i in 0..3 {
        assert_eq!(admit(&mut b, "t", Some(&i.to_string())), None, "call {i}");
    }
    let v = b.admit("t", None).unwrap();
    assert_eq!(v.reason_code, ReasonCode::P_LIMIT_TOOL_CALLS);
    assert_eq!(v.matched_rule.as_deref(), Some("limits.tool_calls"));
    assert!(v.reason.contains('3'), "{}", v.reason);
    assert_eq!(
        admit(&mut b, "other", None),
        Some(ReasonCode::P_LIMIT_TOOL_CALLS)
    );
    // A fresh session starts at zero.
    let mut fresh = p.limits().map(|l| l.budget()).unwrap();
    assert_eq!(admit(&mut fresh, "t", None), None);
}

#[test]
fn per_tool_counts_only_its_tool_and_literal_names() {
    let p = ok("version: \"1\"\nlimits: {per_tool: {write_file: 2, \"read_*\": 1}}\n");
    let mut b = p.limits().map(|l| l.budget()).unwrap();
    assert_eq!(admit(&mut b, "write_file", Some("a")), None);
    assert_eq!(admit(&mut b, "write_file", Some("b")), None);
    let v = b.admit("write_file", None).unwrap();
    assert_eq!(v.reason_code, ReasonCode::P_LIMIT_PER_TOOL);
    assert_eq!(
        v.matched_rule.as_deref(),
        Some("limits.per_tool.write_file")
    );
    for _ in 0..5 {
        assert_eq!(
            admit(&mut b, "read_file", None),
            None,
            "a key is a literal name"
        );
    }
    assert_eq!(admit(&mut b, "read_*", None), None);
    assert_eq!(
        admit(&mut b, "read_*", None),
        Some(ReasonCode::P_LIMIT_PER_TOOL)
    );
}

#[test]
fn repeated_call_counts_tool_and_arguments() {
    let p = ok("version: \"1\"\nlimits: {repeated_call: 2}\n");
    let mut b = p.limits().map(|l| l.budget()).unwrap();
    assert_eq!(admit(&mut b, "t", Some("x")), None);
    assert_eq!(admit(&mut b, "t", Some("x")), None);
    let v = b.admit("t", Some(&digest("x"))).unwrap();
    assert_eq!(v.reason_code, ReasonCode::P_REPEATED_CALL);
    assert_eq!(v.matched_rule.as_deref(), Some("limits.repeated_call"));
    assert_eq!(admit(&mut b, "t", Some("y")), None, "other arguments");
    assert_eq!(admit(&mut b, "u", Some("x")), None, "another tool");
    // No arguments digest is a key of its own.
    assert_eq!(admit(&mut b, "t", None), None);
    assert_eq!(admit(&mut b, "t", None), None);
    assert_eq!(admit(&mut b, "t", None), Some(ReasonCode::P_REPEATED_CALL));
}

#[test]
fn repeat_counting_is_bounded_and_fails_closed_past_the_bound() {
    let p = ok("version: \"1\"\nlimits: {repeated_call: 1}\n");
    let mut b = p.limits().map(|l| l.budget()).unwrap();
    for i in 0..crate::policy::MAX_REPEAT_KEYS {
        assert_eq!(admit(&mut b, "t", Some(&i.to_string())), None, "call {i}");
    }
    // A pair counted already is judged as before; a new one can no longer be counted.
    assert_eq!(
        admit(&mut b, "t", Some("0")),
        Some(ReasonCode::P_REPEATED_CALL)
    );
    let v = b.admit("t", Some(&digest("new"))).unwrap();
    assert_eq!(v.reason_code, ReasonCode::P_REPEATED_CALL);
    assert!(v.reason.contains("65536 distinct calls"), "{}", v.reason);
    // The key is the pair: a tool name holding the digest text is another key.
    let mut b = p.limits().map(|l| l.budget()).unwrap();
    assert_eq!(admit(&mut b, "t", None), None);
    assert_eq!(admit(&mut b, "t\u{1}", None), None);
}

#[test]
fn limits_are_checked_in_order_and_refusals_are_not_counted() {
    let p = ok("version: \"1\"\nlimits: {tool_calls: 4, per_tool: {w: 2}, repeated_call: 1}\n");
    let mut b = p.limits().map(|l| l.budget()).unwrap();
    assert_eq!(admit(&mut b, "w", Some("1")), None);
    // Repeated: refused, not counted against tool_calls or per_tool.
    assert_eq!(
        admit(&mut b, "w", Some("1")),
        Some(ReasonCode::P_REPEATED_CALL)
    );
    assert_eq!(
        admit(&mut b, "w", Some("1")),
        Some(ReasonCode::P_REPEATED_CALL)
    );
    assert_eq!(admit(&mut b, "w", Some("2")), None);
    // per_tool is used up: it comes before repeated_call.
    assert_eq!(
        admit(&mut b, "w", Some("1")),
        Some(ReasonCode::P_LIMIT_PER_TOOL)
    );
    assert_eq!(
        admit(&mut b, "w", Some("3")),
        Some(ReasonCode::P_LIMIT_PER_TOOL)
    );
    assert_eq!(admit(&mut b, "x", Some("1")), None);
    assert_eq!(admit(&mut b, "y", Some("1")), None);
    // tool_calls (4 counted: w, w, x, y) comes first of all.
    assert_eq!(
        admit(&mut b, "w", Some("1")),
        Some(ReasonCode::P_LIMIT_TOOL_CALLS)
    );
    assert_eq!(
        admit(&mut b, "z", Some("9")),
        Some(ReasonCode::P_LIMIT_TOOL_CALLS)
    );
    let l = p.limits().unwrap();
    assert_eq!(l.tool_calls(), Some(4));
    assert_eq!(l.repeated_call(), Some(1));
    assert_eq!(l.per_tool().get("w"), Some(&2));
}

#[test]
fn redaction_at_any_depth_any_case_inside_arrays() {
    let p = ok(FULL);
    let args = json!({
        "path": "/w/a",
        "API_TOKEN": "t1",
        "nested": {"Authorization": "Bearer x", "client_secret": {"deep": 1}, "keep": [1, 2]},
        "list": [{"password": "p"}, {"pass1": "p"}, {"passwd": "kept"}, "token"],
        "tokens_used": 5
    });
    let (text, cut) = p.recorded_arguments(&args);
    assert!(!cut);
    assert_eq!(
        text,
        r#"{"API_TOKEN":"[redacted]","list":[{"password":"p"},{"pass1":"[redacted]"},{"passwd":"kept"},"token"],"nested":{"Authorization":"[redacted]","client_secret":"[redacted]","keep":[1,2]},"path":"/w/a","tokens_used":"[redacted]"}"#
    );
    // No redact patterns: the canonical form as is (RFC 8785 numbers and key order).
    let plain = ok("version: \"1\"\nrecord_arguments: true\n");
    let (text, cut) = plain.recorded_arguments(&json!({"b": 1.0, "a": [1e21, "é"], "\u{e9}": 0}));
    assert!(!cut);
    assert_eq!(text, "{\"a\":[1e+21,\"é\"],\"b\":1,\"é\":0}");
    let (text, _) = plain.recorded_arguments(&json!(null));
    assert_eq!(text, "null");
}

#[test]
fn recorded_arguments_are_cut_at_4096_on_a_char_boundary() {
    let p = ok("version: \"1\"\nrecord_arguments: true\n");
    // {"a":"ééé…"}: 6 bytes before the string; é is 2 bytes, so 4096 falls mid-character
    // when the prefix is odd.
    for prefix in ["", "x"] {
        let value = format!("{prefix}{}", "é".repeat(3000));
        let (text, cut) = p.recorded_arguments(&json!({ "a": value }));
        assert!(cut);
        assert!(text.len() <= MAX_RECORDED_BYTES);
        assert!(text.len() >= MAX_RECORDED_BYTES - 1);
        assert!(text.starts_with("{\"a\":\""));
    }
    let exact = format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_RECORDED_BYTES - 8));
    assert_eq!(exact.len(), MAX_RECORDED_BYTES);
    let (text, cut) = p.recorded_arguments(&json!({ "a": "x".repeat(MAX_RECORDED_BYTES - 8) }));
    assert_eq!((text.as_str(), cut), (exact.as_str(), false));
    let (text, cut) = p.recorded_arguments(&json!({ "a": "x".repeat(MAX_RECORDED_BYTES - 7) }));
    assert_eq!((text.len(), cut), (MAX_RECORDED_BYTES, true));
}

#[test]
fn record_arguments_and_redact_keys() {
    let p = ok("version: \"1\"\nredact: [\"*token*\"]\n");
    assert!(
        !p.record_arguments(),
        "redact alone is accepted and records nothing"
    );
    assert_eq!(p.redact_patterns(), ["*token*"]);
    assert!(p.governed().is_empty());
}

#[test]
fn load_errors_name_the_key() {
    for (doc, key) in [
        ("resources: [x]", "resources"),
        (
            "resources: {allow: [\"file:///../x\"]}",
            "resources.allow[0]",
        ),
        ("resources: {permit: []}", "resources.permit"),
        ("prompts: {deny: [\"\"]}", "prompts.deny[0]"),
        ("prompts: {deny: [1]}", "prompts.deny[0]"),
        ("prompts: {allow: x}", "prompts.allow"),
        ("prompts: {hidden: []}", "prompts.hidden"),
        ("prompts: null", "prompts"),
        (
            "client_features: {sampling: nope}",
            "client_features.sampling",
        ),
        (
            "client_features: {sampling: false}",
            "client_features.sampling",
        ),
        (
            "client_features: {sampling: Allow}",
            "client_features.sampling",
        ),
        ("client_features: {tools: deny}", "client_features.tools"),
        ("client_features: {}", "client_features"),
        ("client_features: deny", "client_features"),
        ("limits: {}", "limits"),
        ("limits: {tool_calls: 0}", "limits.tool_calls"),
        ("limits: {tool_calls: -1}", "limits.tool_calls"),
        ("limits: {tool_calls: 1.5}", "limits.tool_calls"),
        ("limits: {tool_calls: 5.0}", "limits.tool_calls"),
        ("limits: {tool_calls: \"5\"}", "limits.tool_calls"),
        ("limits: {tool_calls: null}", "limits.tool_calls"),
        ("limits: {repeated_call: 0}", "limits.repeated_call"),
        ("limits: {per_tool: {w: 0}}", "limits.per_tool.w"),
        ("limits: {per_tool: {w: true}}", "limits.per_tool.w"),
        ("limits: {per_tool: {}}", "limits.per_tool"),
        ("limits: {per_tool: [w]}", "limits.per_tool"),
        ("limits: {per_tool: {\"\": 1}}", "limits.per_tool."),
        ("limits: {max_calls: 1}", "limits.max_calls"),
        ("record_arguments: yes_please", "record_arguments"),
        ("record_arguments: \"true\"", "record_arguments"),
        ("redact: \"*token*\"", "redact"),
        ("redact: [\"\"]", "redact[0]"),
        (
            "limits: {tool_calls: 1, tool_calls: 2}",
            "limits.tool_calls",
        ),
        ("prompts: {deny: [a]}\nprompts: {deny: [b]}", "prompts"),
    ] {
        let doc = format!("version: \"1\"\n{doc}\n");
        match load(&doc) {
            Ok(_) => panic!("{doc:?} loaded"),
            Err(e) => {
                assert_eq!(e.key(), Some(key), "{doc:?}: {e}");
                let msg = e.to_string();
                assert!(msg.contains("team.yaml") && !msg.contains('\n'), "{msg}");
            }
        }
    }
    // JSON too.
    let e = Policy::from_bytes(
        br#"{"version":"1","limits":{"tool_calls":0}}"#,
        Path::new("p.json"),
    )
    .err()
    .map(|e| e.key().map(str::to_owned));
    assert_eq!(e, Some(Some("limits.tool_calls".to_owned())));
}
