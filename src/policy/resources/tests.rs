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
    // U+0085 (C1) is not a control character to this rule; a lone `%85` is not UTF-8 once
    // decoded (Python reads it as U+FFFD), so that reading is unreadable.
    assert_eq!(
        code(&open, "https://example.com/%C2%85"),
        ReasonCode::P_POLICY_ALLOW
    );
    let v = open.evaluate(Some("https://example.com/%85"));
    assert_eq!(v.reason_code, ReasonCode::P_RESOURCE_NOT_ALLOWED);
    assert_eq!(
        v.reason,
        "the resource URI percent-decoded: it is not UTF-8 once percent-decoded"
    );
}

#[test]
fn other_schemes_are_compared_in_every_reading() {
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
    // `..` is resolved by the server's URL parser: that reading is denied.
    assert_eq!(
        code(&r, "https://docs.example.com/private/a/../x"),
        ReasonCode::P_RESOURCE_DENIED
    );
    // A spelling the allow list does not name as written is not allowed, whatever the parser
    // makes of it.
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

/// The policy of the spellings below: the canonical forms denied, their neighbours allowed.
fn canonical_denies() -> Resources {
    ok(
        r#"{deny: ["file:///workspace/.env", "test://static/resource/1", "https://internal.example/secret", "test://static/resource/admin"]}"#,
    )
}

/// SPEC §5.2, issue 46: a URI is judged as the server's SDK reads it — the WHATWG URL
/// serialization the TypeScript SDK's `McpServer` looks resources up by, and the percent-decoded
/// form the Python SDK 2.x template matcher gives a variable — as well as as written. Each
/// spelling here passed a `deny` written in the canonical form before.
#[test]
fn every_spelling_of_a_denied_uri_is_denied() {
    let r = canonical_denies();
    for (uri, reading) in [
        // Leading or trailing C0-or-space is stripped by the URL parser.
        ("file:///workspace/.env ", Reading::Whatwg),
        ("file:///workspace/.env\u{20}\u{20}", Reading::Whatwg),
        // The scheme is lowercased; `.` segments resolved (also in non-special schemes).
        ("TEST://static/resource/1", Reading::Whatwg),
        ("Test://static/resource/1", Reading::Whatwg),
        ("test://static/./resource/1", Reading::Whatwg),
        ("test://static/x/../resource/1", Reading::Whatwg),
        ("test://static/resource/./1", Reading::Whatwg),
        // Special hosts: lowercased, default port dropped, percent-decoded, `\` read as `/`.
        ("https://INTERNAL.example/secret", Reading::Whatwg),
        ("https://internal.example:443/secret", Reading::Whatwg),
        ("HTTPS://Internal.Example:443/./secret", Reading::Whatwg),
        ("https://%69nternal.example/secret", Reading::Whatwg),
        ("https:\\\\internal.example\\secret", Reading::Whatwg),
        // Full-width letters are IDNA-mapped to ASCII.
        ("https://\u{ff49}nternal.example/secret", Reading::Whatwg),
        ("https://internal.example/%73ecret", Reading::Decoded),
        // The Python SDK 2.x template matcher percent-decodes variables.
        ("test://static/resource/%31", Reading::Decoded),
        ("test://static/resource/%61dmin", Reading::Decoded),
        ("test://static/resource/%61%64%6D%69%6E", Reading::Decoded),
        // Both: the parser's form, then decoded.
        ("TEST://static/resource/%31", Reading::WhatwgDecoded),
        ("https://INTERNAL.example/%73ecret", Reading::WhatwgDecoded),
        ("test://static/./resource/%31", Reading::WhatwgDecoded),
        // Decoded, then parsed: `%2e` is a `.` segment once decoded.
        ("test://static/%2e/resource/1", Reading::Whatwg),
        ("test://static/x/%2e%2e/resource/1", Reading::Whatwg),
        (
            "test://static/x/%252e%252e/resource/1",
            Reading::DecodedWhatwg,
        ),
    ] {
        let v = r.evaluate(Some(uri));
        assert_eq!(v.decision, Decision::Deny, "{uri:?}: {}", v.reason);
        assert_eq!(
            v.reason_code,
            ReasonCode::P_RESOURCE_DENIED,
            "{uri:?}: {}",
            v.reason
        );
        assert!(
            v.reason.contains(reading.describe()),
            "{uri:?}: {} (want {reading:?})",
            v.reason
        );
        assert!(v.matched_rule.is_some(), "{uri:?}");
        // The listing filter judges the same way.
        assert_eq!(
            r.refuses(uri),
            Some(ReasonCode::P_RESOURCE_DENIED),
            "{uri:?}"
        );
    }
    let v = r.evaluate(Some("TEST://static/resource/1"));
    assert_eq!(
        v.reason,
        "resource matches deny rule `test://static/resource/1` as the server's URL parser \
         reads it (WHATWG): `test://static/resource/1`"
    );
    assert_eq!(
        v.matched_rule.as_deref(),
        Some("resources.deny:test://static/resource/1")
    );
    // The canonical forms themselves, as written.
    for uri in [
        "file:///workspace/.env",
        "test://static/resource/1",
        "https://internal.example/secret",
    ] {
        let v = r.evaluate(Some(uri));
        assert_eq!(v.reason_code, ReasonCode::P_RESOURCE_DENIED, "{uri}");
        assert!(
            v.reason.starts_with("resource matches deny rule `"),
            "{}",
            v.reason
        );
        assert!(!v.reason.contains("WHATWG"), "{}", v.reason);
    }
    // Neighbours stay allowed.
    for uri in [
        "test://static/resource/2",
        "test://static/resource/10",
        "test://static/resource/%32",
        "https://internal.example/public",
        "https://internal.example:8443/secret",
        "https://other.example/secret",
        "file:///workspace/.env.example",
        "file:///workspace/a.txt",
    ] {
        assert_eq!(code(&r, uri), ReasonCode::P_POLICY_ALLOW, "{uri}");
    }
}

/// Under an allow list every reading must be allowed: a spelling whose other reading falls
/// outside it is not allowed, and the plain canonical URIs stay allowed.
#[test]
fn every_reading_must_be_allowed() {
    let r = ok(r#"{allow: ["test://static/resource/*", "file:///workspace/**"]}"#);
    for uri in [
        "test://static/resource/1",
        "test://static/resource/%31",
        "file:///workspace/a.txt",
        "file:///workspace/sub/b%20c.txt",
        "file:///workspace/./a.txt",
    ] {
        let v = r.evaluate(Some(uri));
        assert_eq!(
            v.reason_code,
            ReasonCode::P_POLICY_ALLOW,
            "{uri}: {}",
            v.reason
        );
        assert!(v.matched_rule.is_some());
    }
    for (uri, reading) in [
        // As written it is under the glob; the parser resolves `..` out of it.
        ("test://static/resource/..", Reading::Whatwg),
        ("test://static/resource/%2e%2e", Reading::Whatwg),
        // Decoded, the id holds a `/`: one star stays in one segment.
        ("test://static/resource/a%2fb", Reading::Decoded),
        // The file URI as written is refused (a host); the parser's form would be allowed.
        ("file://localhost/workspace/a.txt", Reading::Written),
    ] {
        let v = r.evaluate(Some(uri));
        assert_eq!(
            v.reason_code,
            ReasonCode::P_RESOURCE_NOT_ALLOWED,
            "{uri}: {}",
            v.reason
        );
        if reading != Reading::Written {
            assert!(v.reason.contains(reading.describe()), "{uri}: {}", v.reason);
        }
    }
    // A trailing space is stripped by the parser but not allowed as written.
    assert_eq!(
        code(&r, "file:///workspace/a.txt "),
        ReasonCode::P_POLICY_ALLOW,
        "both readings name /workspace/a.txt (as written: `a.txt `)"
    );
    assert_eq!(
        code(&r, "test://static/resource/1 "),
        ReasonCode::P_POLICY_ALLOW
    );
}

/// A URI the WHATWG parser refuses has no WHATWG reading (a TypeScript server cannot look it
/// up); its other readings are judged. Unreadable decoded readings are refused.
#[test]
fn readings_the_parser_refuses_and_unreadable_decodings() {
    let open = ok(r#"{deny: ["test://static/resource/1"]}"#);
    // An invalid port: the parser refuses it; as written and decoded it is allowed.
    assert!(whatwg("https://x.example:99999/a").is_none());
    assert_eq!(
        code(&open, "https://x.example:99999/a"),
        ReasonCode::P_POLICY_ALLOW
    );
    let rs = readings("https://x.example:99999/a");
    assert!(rs.iter().all(|(r, _)| *r != Reading::Whatwg), "{rs:?}");
    // Not UTF-8 once decoded, or a control character once decoded twice over: unreadable.
    for uri in ["test://static/resource/%ff", "test://static/resource/%C3"] {
        let v = open.evaluate(Some(uri));
        assert_eq!(v.reason_code, ReasonCode::P_RESOURCE_NOT_ALLOWED, "{uri}");
        assert!(v.reason.contains("not UTF-8"), "{}", v.reason);
    }
    // A `%` that starts no escape stays; the URI is read as written.
    assert_eq!(
        code(&open, "test://static/resource/100%"),
        ReasonCode::P_POLICY_ALLOW
    );
    assert_eq!(
        code(&open, "test://static/resource/%zz"),
        ReasonCode::P_POLICY_ALLOW
    );
    // A file URI is decoded once, by `within`: `%25` is a literal `%` in the name.
    let files = ok(r#"{allow: ["file:///workspace/**"]}"#);
    assert_eq!(
        code(&files, "file:///workspace/100%25.txt"),
        ReasonCode::P_POLICY_ALLOW
    );
}

#[test]
fn percent_decoding_once() {
    assert_eq!(percent_decoded("a%31b").as_deref(), Ok("a1b"));
    assert_eq!(percent_decoded("%2525").as_deref(), Ok("%25"));
    assert_eq!(percent_decoded("%").as_deref(), Ok("%"));
    assert_eq!(percent_decoded("a%4").as_deref(), Ok("a%4"));
    assert_eq!(percent_decoded("%C3%A9").as_deref(), Ok("é"));
    assert!(percent_decoded("%ff").is_err());
    assert!(percent_decoded("%0a").is_err());
    assert!(percent_decoded("%7F").is_err());
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

    /// A URI denied in some reading is never allowed: spelled any way the URL parser or a
    /// percent-decoder maps to `test://static/resource/1`, it is denied.
    #[test]
    fn respellings_of_a_denied_uri_are_refused(
        scheme in prop_oneof![Just("test"), Just("TEST"), Just("tEsT")],
        pad in prop_oneof![Just(""), Just(" "), Just("\u{1}"), Just("  ")],
        segs in proptest::collection::vec(
            prop_oneof![Just("."), Just("%2e"), Just("%2E"), Just("x/.."), Just("x/%2e%2e")],
            0..3,
        ),
        id in prop_oneof![Just("1"), Just("%31")],
    ) {
        let mut path = String::from("static");
        for s in &segs {
            path.push('/');
            path.push_str(s);
        }
        let uri = format!("{scheme}://{path}/resource/{id}{pad}");
        let v = canonical_denies().evaluate(Some(&uri));
        prop_assert_eq!(v.decision, Decision::Deny, "{:?}: {}", uri, v.reason);
    }
}
