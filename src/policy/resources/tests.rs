use super::*;
use proptest::prelude::*;
use std::path::Path;

fn section(yaml: &str) -> Result<Resources, PolicyError> {
    let path = Path::new("p.yaml");
    let ctx = Ctx::new(path);
    let v: Value = crate::policy::read_document(yaml.as_bytes(), false)?;
    Resources::parse(&ctx, &v)
}

fn ok(yaml: &str) -> Resources {
    match section(yaml) {
        Ok(r) => r,
        Err(e) => panic!("{yaml}: {e}"),
    }
}

fn code(r: &Resources, uri: &str) -> ReasonCode {
    r.evaluate(Some(uri)).reason_code
}

fn workspace() -> Resources {
    ok(
        r#"{allow: ["file:///workspace/**", "test://static/resource/*"], deny: ["file:///workspace/.env", "file:///workspace/secrets/**"]}"#,
    )
}

#[test]
fn allow_deny_and_not_allowed() {
    let r = workspace();
    let v = r.evaluate(Some("file:///workspace/src/main.rs"));
    assert_eq!(v.decision, Decision::Allow);
    assert_eq!(v.reason_code, ReasonCode::P_POLICY_ALLOW);
    assert_eq!(
        v.matched_rule.as_deref(),
        Some("resources.allow:file:///workspace/**")
    );
    let v = r.evaluate(Some("file:///workspace/.env"));
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(v.reason_code, ReasonCode::P_RESOURCE_DENIED);
    assert_eq!(
        v.matched_rule.as_deref(),
        Some("resources.deny:file:///workspace/.env")
    );
    assert_eq!(
        code(&r, "file:///workspace/secrets/a/b"),
        ReasonCode::P_RESOURCE_DENIED
    );
    let v = r.evaluate(Some("file:///etc/passwd"));
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(v.reason_code, ReasonCode::P_RESOURCE_NOT_ALLOWED);
    assert_eq!(v.matched_rule, None);
    assert_eq!(
        code(&r, "test://static/resource/1"),
        ReasonCode::P_POLICY_ALLOW
    );
    assert_eq!(
        code(&r, "test://static/resource/1/2"),
        ReasonCode::P_RESOURCE_NOT_ALLOWED,
        "one star stays in one segment"
    );
}

#[test]
fn no_uri_is_an_error_decision() {
    let v = workspace().evaluate(None);
    assert_eq!(v.decision, Decision::Error);
    assert_eq!(v.reason_code, ReasonCode::P_MALFORMED);
}

#[test]
fn traversal_is_normalized_before_matching() {
    let r = workspace();
    for (uri, want) in [
        (
            "file:///workspace/../etc/passwd",
            ReasonCode::P_RESOURCE_NOT_ALLOWED,
        ),
        (
            "file:///workspace/%2e%2e/etc/passwd",
            ReasonCode::P_RESOURCE_NOT_ALLOWED,
        ),
        (
            "file:///workspace/%2E%2E%2Fetc%2Fpasswd",
            ReasonCode::P_RESOURCE_NOT_ALLOWED,
        ),
        ("file:///workspace/a/../.env", ReasonCode::P_RESOURCE_DENIED),
        ("file:///workspace/./.env", ReasonCode::P_RESOURCE_DENIED),
        ("file:///workspace//.env", ReasonCode::P_RESOURCE_DENIED),
        ("file:///workspace/%2eenv", ReasonCode::P_RESOURCE_DENIED),
        (
            "file:///workspace/x/%2e%2e/secrets/k",
            ReasonCode::P_RESOURCE_DENIED,
        ),
        ("FILE:///workspace/.env", ReasonCode::P_RESOURCE_DENIED),
        ("File:///workspace/ok", ReasonCode::P_POLICY_ALLOW),
        ("file:///workspace/a/../b", ReasonCode::P_POLICY_ALLOW),
        ("file:///../workspace/a", ReasonCode::P_RESOURCE_NOT_ALLOWED),
    ] {
        assert_eq!(code(&r, uri), want, "{uri}");
    }
    // Above the root is refused and never allowed, even with no allow list.
    let open = ok("{deny: [\"file:///etc/**\"]}");
    for uri in [
        "file:///workspace/../../etc/passwd",
        "file:///..",
        "file://host/etc/passwd",
        "file:/etc/passwd",
        "file:///etc/passwd?x",
        "file:///a#b",
        "file:///a%zz",
        "/etc/passwd",
        "etc/passwd",
        "",
        ":x",
    ] {
        let v = open.evaluate(Some(uri));
        assert_eq!(v.decision, Decision::Deny, "{uri:?}");
        assert!(
            matches!(
                v.reason_code,
                ReasonCode::P_RESOURCE_NOT_ALLOWED | ReasonCode::P_RESOURCE_DENIED
            ),
            "{uri:?}"
        );
    }
    assert_eq!(
        open.evaluate(Some("file:///..")).reason,
        "the resource URI climbs above the file system root"
    );
    assert_eq!(code(&open, "file:///tmp/x"), ReasonCode::P_POLICY_ALLOW);
    assert_eq!(
        code(&open, "file:///etc/../tmp/x"),
        ReasonCode::P_POLICY_ALLOW
    );
    assert_eq!(
        code(&open, "file:///tmp/../etc/shadow"),
        ReasonCode::P_RESOURCE_DENIED
    );
}

/// SPEC §5: a control character anywhere, raw or percent-encoded, makes the URI unreadable
/// (WHATWG parsers and `urlsplit` drop tab and newline), for every scheme.
#[test]
fn control_characters_are_refused_raw_or_encoded() {
    let r = workspace();
    let open = ok("{deny: [\"file:///etc/**\"]}");
    for c in (0u8..0x20).chain([0x7f]) {
        let ch = char::from(c);
        for uri in [
            format!("file:///workspace/.{ch}./etc/passwd"),
            format!("file:///workspace/a{ch}"),
            format!("file:///workspace/.%{c:02x}./etc/passwd"),
            format!("file:///workspace/a%{c:02X}"),
            format!("test://static/resource/{ch}"),
            format!("test://static/resource/%{c:02x}"),
            format!("https://example.com/{ch}x"),
        ] {
            for pol in [&r, &open] {
                let v = pol.evaluate(Some(&uri));
                assert_eq!(v.decision, Decision::Deny, "{uri:?}");
                assert_eq!(v.reason_code, ReasonCode::P_RESOURCE_NOT_ALLOWED, "{uri:?}");
                assert!(v.reason.contains("control character"), "{}", v.reason);
            }
        }
    }
    assert_eq!(
        code(&r, "file:///workspace/.\t./etc/passwd"),
        ReasonCode::P_RESOURCE_NOT_ALLOWED
    );
    assert_eq!(
        code(&open, "https://example.com/%85"),
        ReasonCode::P_POLICY_ALLOW
    );
}

#[test]
fn other_schemes_are_compared_as_written() {
    let r = ok(
        r#"{allow: ["https://docs.example.com/**"], deny: ["https://docs.example.com/private/*"]}"#,
    );
    assert_eq!(
        code(&r, "https://docs.example.com/a/b"),
        ReasonCode::P_POLICY_ALLOW
    );
    assert_eq!(
        code(&r, "https://docs.example.com/private/x"),
        ReasonCode::P_RESOURCE_DENIED
    );
    // Not normalized: `..` and escapes are as written (the server reads them, not us).
    assert_eq!(
        code(&r, "https://docs.example.com/private/a/../x"),
        ReasonCode::P_POLICY_ALLOW
    );
    assert_eq!(
        code(&r, "HTTPS://docs.example.com/a"),
        ReasonCode::P_RESOURCE_NOT_ALLOWED
    );
    assert_eq!(
        code(&r, "https://evil.example/"),
        ReasonCode::P_RESOURCE_NOT_ALLOWED
    );
}

#[test]
fn patterns_are_normalized_at_load() {
    let r = ok(r#"{deny: ["file:///workspace/./a/../.env", "FILE:///x%20y/*"]}"#);
    assert_eq!(
        code(&r, "file:///workspace/.env"),
        ReasonCode::P_RESOURCE_DENIED
    );
    assert_eq!(code(&r, "file:///x y/z"), ReasonCode::P_RESOURCE_DENIED);
    assert_eq!(code(&r, "file:///x%20y/z"), ReasonCode::P_RESOURCE_DENIED);
    let v = r.evaluate(Some("file:///workspace/.env"));
    assert_eq!(
        v.matched_rule.as_deref(),
        Some("resources.deny:file:///workspace/./a/../.env"),
        "the label is the pattern as written"
    );
    // `?` in a file pattern is a wildcard, not a query.
    let q = ok(r#"{deny: ["file:///w/a?c"]}"#);
    assert_eq!(code(&q, "file:///w/abc"), ReasonCode::P_RESOURCE_DENIED);
    assert_eq!(code(&q, "file:///w/abbc"), ReasonCode::P_POLICY_ALLOW);
    for (doc, key) in [
        (r#"{allow: ["file:///../x"]}"#, "resources.allow[0]"),
        (r#"{allow: ["file://host/x"]}"#, "resources.allow[0]"),
        (r#"{deny: ["ok://x", "file:///a%0a"]}"#, "resources.deny[1]"),
        ("{deny: [\"test://a\\tb\"]}", "resources.deny[0]"),
        (r#"{deny: ["**%09"]}"#, "resources.deny[0]"),
        (r#"{deny: ["file:///a#b"]}"#, "resources.deny[0]"),
        (r#"{deny: [""]}"#, "resources.deny[0]"),
        (r#"{deny: [1]}"#, "resources.deny[0]"),
        (r#"{deny: "x"}"#, "resources.deny"),
        (r#"{allow: ["a"], extra: []}"#, "resources.extra"),
    ] {
        match section(doc) {
            Ok(_) => panic!("{doc} loaded"),
            Err(e) => assert_eq!(e.key(), Some(key), "{doc}: {e}"),
        }
    }
}

#[test]
fn empty_section_and_empty_allow() {
    let all = ok("{}");
    assert_eq!(code(&all, "anything:at-all"), ReasonCode::P_POLICY_ALLOW);
    assert_eq!(code(&all, "no scheme"), ReasonCode::P_RESOURCE_NOT_ALLOWED);
    let none = ok("{allow: []}");
    assert_eq!(code(&none, "file:///a"), ReasonCode::P_RESOURCE_NOT_ALLOWED);
}

#[test]
fn templates_are_removed_only_when_every_expansion_is_refused() {
    let r = workspace();
    // No variable: judged as a URI.
    assert_eq!(
        r.refuses_template("file:///workspace/.env"),
        Some(ReasonCode::P_RESOURCE_DENIED)
    );
    assert_eq!(r.refuses_template("file:///workspace/a"), None);
    // Some expansion is allowed.
    assert_eq!(r.refuses_template("test://static/resource/{id}"), None);
    assert_eq!(r.refuses_template("test://st{x}"), None);
    // No allow pattern can match anything with this prefix.
    assert_eq!(
        r.refuses_template("test://dynamic/resource/{id}"),
        Some(ReasonCode::P_RESOURCE_NOT_ALLOWED)
    );
    // A file template can reach any path once `..` is expanded: judged as `file:///`.
    assert_eq!(r.refuses_template("file:///etc/{path}"), None);
    assert_eq!(r.refuses_template("file:///workspace/secrets/{path}"), None);
    let no_files = ok(r#"{allow: ["test://**"]}"#);
    assert_eq!(
        no_files.refuses_template("file:///workspace/{p}"),
        Some(ReasonCode::P_RESOURCE_NOT_ALLOWED)
    );
    let deny_files = ok(r#"{deny: ["file:///**"]}"#);
    assert_eq!(
        deny_files.refuses_template("file:///tmp/{p}"),
        Some(ReasonCode::P_RESOURCE_DENIED)
    );
    let deny_dir = ok(r#"{deny: ["db://prod/**", "db://test/*"]}"#);
    assert_eq!(
        deny_dir.refuses_template("db://prod/{table}"),
        Some(ReasonCode::P_RESOURCE_DENIED)
    );
    assert_eq!(
        deny_dir.refuses_template("db://test/{table}"),
        None,
        "a `*` does not match an expansion holding `/`"
    );
    // Control characters and prefixes that cannot start a scheme.
    assert_eq!(
        deny_dir.refuses_template("db://a\t/{x}"),
        Some(ReasonCode::P_RESOURCE_NOT_ALLOWED)
    );
    assert_eq!(
        deny_dir.refuses_template("db://a/{x}/%0a"),
        Some(ReasonCode::P_RESOURCE_NOT_ALLOWED)
    );
    assert_eq!(
        deny_dir.refuses_template("/etc/{x}"),
        Some(ReasonCode::P_RESOURCE_NOT_ALLOWED)
    );
    assert_eq!(deny_dir.refuses_template("{scheme}://x"), None);
    assert_eq!(deny_dir.refuses_template("db{x}://prod/a"), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Hostile URIs: normalization never panics, and whatever it accepts as a file URI
    /// under `file:///workspace/**` names /workspace or a path under it.
    #[test]
    fn a_uri_accepted_under_workspace_is_under_workspace(
        tail in proptest::collection::vec(
            prop_oneof![
                Just("/".to_owned()), Just("..".to_owned()), Just(".".to_owned()),
                Just("%2e".to_owned()), Just("%2E%2e".to_owned()), Just("%2f".to_owned()),
                Just("%2F".to_owned()), Just("%".to_owned()), Just("%0a".to_owned()),
                Just("\t".to_owned()), Just("\\".to_owned()), Just("?".to_owned()),
                Just("#".to_owned()), Just("workspace".to_owned()), Just("a".to_owned()),
                Just("é".to_owned()), Just("%00".to_owned()), Just("%c3%a9".to_owned()),
                Just("//".to_owned()), Just("~".to_owned()),
                "[\\x00-\\x7f]{0,3}".prop_map(|s| s),
            ],
            0..12,
        ),
        scheme in prop_oneof![Just("file://"), Just("FILE://"), Just("file:"), Just("")],
        root in prop_oneof![Just("/workspace/"), Just("/workspace"), Just("/"), Just("")],
    ) {
        let uri = format!("{scheme}{root}{}", tail.concat());
        let r = workspace();
        let verdict = r.evaluate(Some(&uri));
        if let Ok(n) = normalize_uri(&uri) {
            prop_assert!(within::control_problem(&n).is_none());
            if verdict.decision == Decision::Allow && n.starts_with("file:") {
                let path = n.strip_prefix("file://").unwrap_or("");
                // The directory itself, or under it (a `/**` pattern covers what it names).
                prop_assert!(
                    path == "/workspace" || path.starts_with("/workspace/"),
                    "{uri:?} -> {n:?}"
                );
                prop_assert!(!path.split('/').any(|s| s == ".." || s == "."), "{n:?}");
            }
        } else {
            prop_assert_eq!(verdict.decision, Decision::Deny);
        }
    }

    /// Arbitrary strings: no panic, and a verdict is always given.
    #[test]
    fn arbitrary_uris_never_panic(uri in "\\PC{0,40}", t in "\\PC{0,40}") {
        let r = workspace();
        let v = r.evaluate(Some(&uri));
        prop_assert!(v.decision != Decision::Error);
        let _ = r.refuses_template(&t);
        let _ = normalize_uri(&uri);
    }
}
