//! Policy files fail closed (SPEC §5 "a policy is read as strictly as a protocol line", §6,
//! §10 `assay policy check`): every defect the red-team passes found in policy loading, through
//! the real binary. No timing assertions: hostile files must be refused with the documented
//! error, and the test harness's timeout catches a hang (bench/ reports what loading costs).

use std::path::{Path, PathBuf};

use crate::util::*;

fn write(dir: &Path, name: &str, body: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn check(path: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["policy".to_string(), "check".to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push(path.display().to_string());
    run(&args, b"")
}

/// `mcp wrap` with this policy in front of the recording server: it must refuse before
/// spawning anything, so the server never records a line (or even starts).
fn wrap_refuses(policy: &Path) -> Run {
    let d = tempdir();
    let rec = d.path().join("received");
    let r = run(
        &wrap_args(
            &["--policy", &policy.display().to_string()],
            &strs(&recording_server(&rec)),
        ),
        &script(&[INIT, &call(2, "exec", r#"{"cmd":"rm -rf /"}"#)]),
    );
    r.expect_status(2);
    assert!(!rec.exists(), "the server ran:\n{}", r.report());
    assert!(r.stdout.is_empty(), "{}", r.report());
    r
}

/// `policy check` fails with exit 2 and exactly the message `mcp wrap` prints; returns it.
fn refused(policy: &Path) -> String {
    let c = check(policy, &[]);
    c.expect_status(2);
    assert!(c.stdout.is_empty(), "{}", c.report());
    let w = wrap_refuses(policy);
    assert_eq!(c.stderr, w.stderr, "policy check and mcp wrap disagree");
    let line = c.stderr.trim_end();
    assert!(
        line.starts_with("assay: --policy: ") && !line.contains('\n'),
        "{line}"
    );
    line.to_owned()
}

#[test]
fn a_merge_key_inside_schemas_is_refused_not_kept_as_a_keyword() {
    let d = tempdir();
    // Before: kept as a literal `<<` keyword, so `exec {"cmd":"rm -rf /"}` reached the server.
    let p = write(
        d.path(),
        "merge.yaml",
        b"version: \"1\"\nschemas: {exec: {<<: {type: object, required: [cmd], properties: {cmd: {const: ls}}}}}\n",
    );
    let msg = refused(&p);
    assert!(
        msg.contains("line 2 column 18") && msg.contains("merge key `<<`"),
        "{msg}"
    );
    // Block style, deeper, and as a property name: refused wherever it stands.
    for body in [
        "version: \"1\"\nschemas:\n  exec:\n    type: object\n    properties:\n      <<: {cmd: {const: ls}}\n",
        "version: \"1\"\n<<: {deny: [exec]}\n",
        "version: \"1\"\ndeny: [<<]\n",
    ] {
        let p = write(d.path(), "m.yaml", body.as_bytes());
        assert!(refused(&p).contains("merge key"), "{body}");
    }
    // Quoted, `<<` is a string to every reader: as a schema keyword it is an unknown one.
    let p = write(
        d.path(),
        "quoted.yaml",
        b"version: \"1\"\nschemas:\n  exec: {\"<<\": {type: object}}\n",
    );
    let msg = refused(&p);
    assert!(
        msg.contains("`schemas.exec`") && msg.contains("`<<`") && msg.contains("`/<<`"),
        "{msg}"
    );
}

#[test]
fn standard_and_custom_tags_are_refused() {
    let d = tempdir();
    for (body, tag, at) in [
        // Before: denied the literal text `ZXhlYw==`; YAML readers read `exec`.
        (
            "version: \"1\"\ndeny: [!!binary ZXhlYw==]\n",
            "!!binary",
            "line 2 column 8",
        ),
        (
            "version: \"1\"\ndeny: [!!str exec]\n",
            "!!str",
            "line 2 column 8",
        ),
        (
            "version: \"1\"\nname: !!python/object/apply:os.system [\"true\"]\n",
            "!!python/object/apply:os.system",
            "line 2 column 7",
        ),
        ("version: !custom \"1\"\n", "!custom", "line 1 column 10"),
        ("--- !!map\nversion: \"1\"\n", "!!map", "line 1 column 5"),
    ] {
        let p = write(d.path(), "t.yaml", body.as_bytes());
        let msg = refused(&p);
        assert!(
            msg.contains(&format!("{at}: YAML tag `{tag}`")),
            "{body:?}: {msg}"
        );
    }
}

/// A ~1 KB policy of anchors and aliases that expands to hundreds of MiB (it cost 6-9 s and
/// 0.5-1 GiB before it was refused).
fn alias_bomb(scalars: usize, fanouts: &[usize]) -> String {
    let mut s = format!(
        "version: \"1\"\nx:\n a0: &a0 [{}]\n",
        vec!["x"; scalars].join(",")
    );
    for (i, n) in fanouts.iter().enumerate() {
        let alias = format!("*a{i}");
        s.push_str(&format!(
            " a{}: &a{} [{}]\n",
            i + 1,
            i + 1,
            vec![alias.as_str(); *n].join(",")
        ));
    }
    s
}

#[test]
fn alias_bombs_are_refused_at_the_first_anchor() {
    let d = tempdir();
    for bomb in [
        alias_bomb(200, &[30, 30, 30, 30]),
        alias_bomb(250, &[40, 40, 40]),
        alias_bomb(9, &[9, 9, 9, 9, 9, 9, 9, 9, 9]),
    ] {
        assert!(bomb.len() < 1100, "{}", bomb.len());
        let p = write(d.path(), "bomb.yaml", bomb.as_bytes());
        let msg = refused(&p);
        assert!(msg.contains("line 3 column 6: YAML anchor"), "{msg}");
    }
}

/// The most stack-hungry admissible policies: nesting to level 64 (SPEC §5), and a constraint
/// regex of 125 nested repetitions (the most the regex nesting bound admits; a debug build needs
/// 1.5–2 MiB of stack to compile it).
fn stack_hungry_policies(dir: &Path) -> [PathBuf; 2] {
    let mut schema = r#"{"type":"string","enum":["x"]}"#.to_string();
    for _ in (3..63).step_by(2) {
        schema = format!(r#"{{"type":"object","properties":{{"a":{schema}}}}}"#);
    }
    let nesting = format!(r#"{{"version":"1","schemas":{{"t":{schema}}}}}"#);
    let pattern = format!("{}a{}", "(?:".repeat(125), ")*".repeat(125));
    let regex = format!(
        "version: \"1\"\nconstraints:\n  - tool: x\n    params:\n      \
         p: {{ matches: \"{pattern}\" }}\n"
    );
    [
        write(dir, "deepest.json", nesting.as_bytes()),
        write(dir, "regex.yaml", regex.as_bytes()),
    ]
}

/// SPEC §3.1b "Small stacks": the command line compiles a policy on its main thread only when
/// `RLIMIT_STACK` lets that stack grow to 8 MiB; under a smaller limit (256 KiB: the regex alone
/// would overflow it) the policy is compiled on a thread of 8 MiB, so both compile under every
/// limit.
#[test]
fn the_most_stack_hungry_policies_compile_under_any_stack_limit() {
    let d = tempdir();
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let hard = run_program("/bin/sh", &owned(&["-c", "ulimit -Hs"]), b"");
    let mut limits = vec!["256", "8192"];
    if hard.stdout.trim_ascii() == b"unlimited" {
        limits.push("unlimited");
    }
    for policy in stack_hungry_policies(d.path()) {
        for limit in &limits {
            let script = r#"ulimit -s "$1" || exit 97; shift; exec "$@""#;
            let mut args = owned(&["-c", script, "sh", limit]);
            args.push(bin().display().to_string());
            args.extend(owned(&["policy", "check", &policy.display().to_string()]));
            let r = run_program("/bin/sh", &args, b"");
            r.expect_status(0);
            let out = String::from_utf8_lossy(&r.stdout);
            assert!(out.contains(": valid"), "{limit}: {}", r.report());
        }
    }
}

#[test]
fn deep_nesting_is_refused_by_the_pre_scan() {
    let d = tempdir();
    let n = 100_000;
    for (name, body, at) in [
        // Before: N unclosed `[` cost time in N squared (80 KB 35 s, 100 KB 54 s).
        ("open.yaml", "[".repeat(n), "line 1 column 65"),
        (
            "value.yaml",
            format!("version: \"1\"\nallow: {}", "[".repeat(80_000)),
            "line 2 column 72",
        ),
        (
            "balanced.yaml",
            format!(
                "version: \"1\"\nallow: {}{}\n",
                "[".repeat(n / 2),
                "]".repeat(n / 2)
            ),
            "line 2 column 72",
        ),
        ("braces.yaml", "{a: ".repeat(n / 4), "line 1 column 257"),
        (
            "quoted.yaml",
            format!("version: \"1\"\nallow: {}", "[\"]\", ".repeat(n / 6)),
            "line 2 column 392",
        ),
    ] {
        let p = write(d.path(), name, body.as_bytes());
        let msg = refused(&p);
        assert!(
            msg.contains(&format!("{at}: nested deeper than 64 levels")),
            "{name}: {msg}"
        );
    }
    // Block nesting is counted exactly by the reader: 64 levels load, 65 do not.
    let block = |levels: usize| {
        let mut s = String::from("version: \"1\"\nx:\n");
        for i in 1..levels - 1 {
            s.push_str(&" ".repeat(i));
            s.push_str("k:\n");
        }
        s.push_str(&" ".repeat(levels - 1));
        s.push_str("k: v\n");
        s
    };
    let p = write(d.path(), "b64.yaml", block(64).as_bytes());
    assert!(refused(&p).contains("unknown key `x`"));
    let p = write(d.path(), "b65.yaml", block(65).as_bytes());
    assert!(refused(&p).contains("nested deeper than 64 levels"));
}

#[test]
fn unknown_schema_keywords_name_the_tool_and_the_pointer() {
    let d = tempdir();
    for (body, tool, keyword, pointer) in [
        (
            "version: \"1\"\nschemas:\n  exec: {type: object, requird: [cmd]}\n",
            "exec",
            "requird",
            "/requird",
        ),
        (
            "version: \"1\"\nschemas:\n  write_file:\n    type: object\n    properties:\n      path: {type: string, maxLenght: 10}\n",
            "write_file",
            "maxLenght",
            "/properties/path/maxLenght",
        ),
        (
            "version: \"1\"\nschemas:\n  t: {items: {anyOf: [{type: string}, {type: integer, minimim: 0}]}}\n",
            "t",
            "minimim",
            "/items/anyOf/1/minimim",
        ),
        (
            "version: \"1\"\nschemas:\n  t: {definitions: {a: {type: string}}}\n",
            "t",
            "definitions",
            "/definitions",
        ),
    ] {
        let p = write(d.path(), "s.yaml", body.as_bytes());
        let msg = refused(&p);
        assert!(
            msg.contains(&format!(
                "key `schemas.{tool}` uses `{keyword}` at `{pointer}`"
            )),
            "{msg}"
        );
    }
    // JSON too.
    let p = write(
        d.path(),
        "s.json",
        br#"{"version": "1", "schemas": {"exec": {"type": "object", "<<": {"required": ["cmd"]}}}}"#,
    );
    assert!(refused(&p).contains("uses `<<` at `/<<`"));
    // Names under `properties` are names, not keywords; `const` holds data.
    let p = write(
        d.path(),
        "ok.yaml",
        b"version: \"1\"\nschemas:\n  t: {type: object, properties: {requird: {const: {bogus: 1}}}, required: [requird]}\n",
    );
    check(&p, &[]).expect_status(0);
    // A reference into `const` would make a value a rule.
    let p = write(
        d.path(),
        "ref.yaml",
        b"version: \"1\"\nschemas:\n  t: {const: {requird: [x]}, $ref: \"#/const\"}\n",
    );
    assert!(refused(&p).contains("does not point at a subschema"));
}

/// A 1 MiB policy whose cost grows with depth × name length × leaves (each compiled subschema
/// and each collection used to carry its whole path): 12.7 s and 9.1 GiB, 11 s before.
#[test]
fn long_paths_over_many_leaves_cost_what_their_bytes_cost() {
    let d = tempdir();
    let mib = 1024 * 1024;
    let mut names = String::from("version: \"1\"\nschemas:\n t: ");
    for i in 0..28 {
        names.push_str(&format!("{{properties: {{k{i}{}: ", "x".repeat(995)));
    }
    names.push_str("{allOf: [");
    while names.len() + 64 < mib {
        names.push_str("{},");
    }
    names.push_str("{}]}");
    names.push_str(&"}}".repeat(28));
    names.push('\n');
    let p = write(d.path(), "names.yaml", names.as_bytes());
    let msg = refused(&p);
    assert!(
        msg.contains("key `schemas.t`") && msg.contains("more than 10000 subschemas"),
        "{msg}"
    );
    let mut keys = String::from("version: \"1\"\nx:\n");
    for i in 0..60 {
        keys.push_str(&format!("{}k{i}{}:\n", " ".repeat(i + 1), "x".repeat(995)));
    }
    keys.push_str(&" ".repeat(61));
    keys.push_str("z: [");
    while keys.len() + 8 < mib {
        keys.push_str("[],");
    }
    keys.push_str("[]]\n");
    let p = write(d.path(), "keys.yaml", keys.as_bytes());
    assert!(refused(&p).contains("unknown key `x`"));
}

#[test]
fn ambiguous_scalars_and_disputed_characters_are_refused() {
    let d = tempdir();
    for (body, expect) in [
        (
            "version: \"1\"\nhide_refused_tools: yes\n",
            "unquoted `yes` is the boolean true to YAML 1.1 readers",
        ),
        ("version: \"1\"\ndeny: [no]\n", "unquoted `no`"),
        (
            "version: \"1\"\nschemas: {t: {maxLength: 010}}\n",
            "the integer 8 to YAML 1.1 readers (PyYAML) but the integer 10",
        ),
        (
            "version: \"1\"\nschemas: {t: {maximum: 1e3}}\n",
            "unquoted `1e3`",
        ),
        (
            "version: \"1\"\ndeny: [exec]\t# tab\n",
            "line 2 column 13: a tab character",
        ),
        (
            "version: \"1\"\ndeny: [\"ex\u{2028}ec\"]\n",
            "character U+2028",
        ),
        (
            "%YAML 1.1\n---\nversion: \"1\"\n",
            "line 1 column 1: YAML directive",
        ),
        (
            "version: \"1\"\n---\ndeny: [exec]\n",
            "a second YAML document",
        ),
        (
            "version: \"1\"\n? deny\n: [exec]\n",
            "a mapping key must stand on one line",
        ),
    ] {
        let p = write(d.path(), "a.yaml", body.as_bytes());
        let msg = refused(&p);
        assert!(msg.contains(expect), "{body:?}: {msg}");
    }
}

#[test]
fn policy_files_are_at_most_one_mebibyte() {
    let d = tempdir();
    let head = b"version: \"1\"\ndeny: [exec]\n";
    let mut at_bound = head.to_vec();
    at_bound.resize(1024 * 1024, b'\n');
    let p = write(d.path(), "max.yaml", &at_bound);
    check(&p, &[]).expect_status(0);
    at_bound.push(b'\n');
    let p = write(d.path(), "over.yaml", &at_bound);
    let msg = refused(&p);
    assert!(msg.contains("is larger than 1048576 bytes"), "{msg}");
}

#[test]
fn policy_check_prints_what_the_policy_allows_denies_and_constrains() {
    let d = tempdir();
    let p = write(
        d.path(),
        "team.yaml",
        br#"version: "1"
tools:
  allow: [read_file, "list_*", write_file, fetch]
  deny: [exec, "shell*"]
constraints:
  - tool: read_file
    params:
      path: { within: ["/workspace", "/data"] }
  - tool: fetch
    params:
      url: { matches: "^https://docs\\.example\\.com/" }
schemas:
  write_file: { type: object, required: [path], properties: { path: { type: string } } }
hide_refused_tools: true
"#,
    );
    let r = check(&p, &[]);
    r.expect_status(0);
    assert!(r.stderr.is_empty(), "{}", r.report());
    let text = String::from_utf8_lossy(&r.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with(&format!(
        "policy {}: valid (name team, sha256 ",
        p.display()
    )));
    assert_eq!(
        &lines[1..],
        [
            "deny: exec, shell*",
            "allow: read_file, list_*, write_file, fetch",
            "constraints:",
            "  read_file: path within /workspace, /data",
            // Text for people (SPEC §10) writes a backslash as written (issue 41).
            "  fetch: url matches ^https://docs\\.example\\.com/",
            "schemas: write_file",
            "hide_refused_tools: true",
            "pins: none",
            // What an absent section leaves unjudged: its methods, from the one method table
            // (docs/methods.md).
            "resources: not governed (resources/list, resources/templates/list, resources/read, \
             resources/subscribe, subscriptions/listen, completion/complete pass unjudged)",
            "prompts: not governed (prompts/list, prompts/get, completion/complete pass unjudged)",
            "client_features: not governed (sampling/createMessage, elicitation/create, \
             roots/list pass unjudged)",
            "limits: none",
            "record_arguments: off",
        ],
        "{text}"
    );
    let r = check(&p, &["--format", "json"]);
    r.expect_status(0);
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["schema"], "assay.policy.summary.v1");
    assert_eq!(v["sha256"], sha256_file(&p).as_str());
    assert_eq!(v["deny"], serde_json::json!(["exec", "shell*"]));
    assert_eq!(
        v["constraints"][1]["params"][0]["matches"],
        "^https://docs\\.example\\.com/"
    );
    assert_eq!(
        v["schemas"]["write_file"]["required"],
        serde_json::json!(["path"])
    );
    assert_eq!(v["hide_refused_tools"], true);

    // No allow list, an empty allow list, nothing else.
    let p = write(d.path(), "open.yaml", b"version: \"1\"\n");
    let out = String::from_utf8_lossy(&check(&p, &[]).stdout).into_owned();
    assert!(out.contains("deny: no tool\nallow: every tool not denied (no allow list)\nconstraints: none\nschemas: none\n"), "{out}");
    let p = write(d.path(), "closed.json", br#"{"version": "1", "allow": []}"#);
    let out = String::from_utf8_lossy(&check(&p, &[]).stdout).into_owned();
    assert!(
        out.contains("allow: no tool (the allow list is empty)"),
        "{out}"
    );
    // The SPEC §5.2 sections, in words.
    let p = write(
        d.path(),
        "sections.yaml",
        br#"version: "1"
resources:
  allow: ["file:///workspace/**", "test://static/resource/*"]
  deny: ["file:///workspace/.env"]
prompts: { deny: ["debug_*"] }
client_features: { sampling: deny, elicitation: allow }
limits: { tool_calls: 500, per_tool: { write_file: 20 }, repeated_call: 5 }
record_arguments: true
redact: ["*token*", authorization]
"#,
    );
    let r = check(&p, &[]);
    r.expect_status(0);
    let text = String::from_utf8_lossy(&r.stdout).into_owned();
    let tail: Vec<&str> = text.lines().rev().take(5).collect();
    assert_eq!(
        tail,
        [
            "record_arguments: on, redact *token*, authorization",
            "limits: tool_calls 500, per_tool write_file 20, repeated_call 5",
            "client_features: sampling deny, elicitation allow, roots not governed",
            "prompts: allow every prompt not denied (no allow list); deny 1 pattern (debug_*)",
            "resources: allow 2 patterns (file:///workspace/**, test://static/resource/*); deny 1 pattern (file:///workspace/.env)",
        ],
        "{text}"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&check(&p, &["--format", "json"]).stdout).unwrap();
    assert_eq!(
        v["governed"],
        serde_json::json!(["resources", "prompts", "client_features", "limits"])
    );
    assert_eq!(
        v["client_features"],
        serde_json::json!({"sampling": "deny", "elicitation": "allow"})
    );
    assert_eq!(v["limits"]["per_tool"]["write_file"], 20);
    let p = write(
        d.path(),
        "closed-sections.yaml",
        b"version: \"1\"\nresources: {allow: []}\nprompts: {allow: [a], deny: []}\nredact: [\"*key*\"]\n",
    );
    let out = String::from_utf8_lossy(&check(&p, &[]).stdout).into_owned();
    assert!(
        out.contains("resources: allow no URI (the allow list is empty); deny none\n"),
        "{out}"
    );
    assert!(
        out.contains("prompts: allow 1 pattern (a); deny none\n"),
        "{out}"
    );
    assert!(
        out.contains("record_arguments: off (redact *key* take effect when it is on)\n"),
        "{out}"
    );
    // Control characters in names cannot forge lines.
    let p = write(
        d.path(),
        "ctl.yaml",
        b"version: \"1\"\ndeny: [\"a\\nallow: *\"]\n",
    );
    let out = String::from_utf8_lossy(&check(&p, &[]).stdout).into_owned();
    assert!(out.contains("deny: a\\u{a}allow: *\n"), "{out}");
}

#[test]
fn policy_check_errors_are_the_ones_mcp_wrap_prints() {
    let d = tempdir();
    let missing = d.path().join("missing.yaml");
    let msg = refused(&missing);
    assert!(msg.contains("cannot read policy"), "{msg}");
    let msg = refused(d.path());
    assert!(msg.ends_with("is not a regular file"), "{msg}");
    for body in [
        "version: \"1\"\nallows: [x]\n",
        "version: \"1\"\ndeny: [a]\ndeny: [b]\n",
        "deny: [x]\n",
        "version: \"1\"\nconstraints: [{tool: t, params: {p: {matches: \"(\"}}}]\n",
        "version: \"1\"\nschemas: {t: {type: 7}}\n",
        "version: \"1\"\ndeny: [a\n",
    ] {
        let p = write(d.path(), "bad.yaml", body.as_bytes());
        refused(&p);
    }
    // Usage: no FILE.
    run(&["policy".into(), "check".into()], b"").expect_status(2);
}

#[test]
fn json_and_flow_style_policies_keep_working() {
    let d = tempdir();
    let body = br#"{"version": "1", "deny": ["exec"], "schemas": {"t": {"type": "object", "maxLength": 5, "minimum": 1.5, "maximum": 1.5e+3}}}"#;
    let yaml = write(d.path(), "p.yaml", body);
    let json = write(d.path(), "p.json", body);
    let a = check(&yaml, &["--format", "json"]);
    let b = check(&json, &["--format", "json"]);
    a.expect_status(0);
    b.expect_status(0);
    assert_eq!(a.stdout, b.stdout);
    // Tab-indented JSON: PyYAML cannot read it, so it is refused with the fix.
    let tabs = write(d.path(), "tabs.json", b"{\n\t\"version\": \"1\"\n}\n");
    let msg = refused(&tabs);
    assert!(msg.contains("line 2 column 1: a tab character"), "{msg}");
}

#[test]
fn capture_package_of_a_missing_or_non_directory_source_is_a_usage_error() {
    let d = tempdir();
    let out = d.path().join("pkg");
    for src in [
        d.path().join("does-not-exist"),
        write(d.path(), "file", b"x"),
    ] {
        let r = package(&src, &out, &[]);
        r.expect_status(2);
        assert!(r.stdout.is_empty(), "{}", r.report());
        let why = if src.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        assert_eq!(
            r.stderr,
            format!("assay: capture directory {} {why}\n", src.display()),
            "{}",
            r.report()
        );
        assert!(!out.exists(), "nothing is created");
    }
}

/// Issue 41: Windows-style names and patterns read as written in `policy check`, not with
/// doubled backslashes; a control character beside them is still escaped.
#[test]
fn policy_check_prints_windows_paths_and_patterns_as_written() {
    let d = tempdir();
    let p = write(
        d.path(),
        "win.yaml",
        br#"version: "1"
tools:
  allow: ['C:\tools\*', read_file, "bell\u0007\\"]
constraints:
  - tool: read_file
    params:
      path: { matches: '^C:\\Users\\me\\' }
"#,
    );
    let r = check(&p, &[]);
    r.expect_status(0);
    let text = String::from_utf8_lossy(&r.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[2], r"allow: C:\tools\*, read_file, bell\u{7}\",
        "{text}"
    );
    assert_eq!(
        lines[4], r"  read_file: path matches ^C:\\Users\\me\\",
        "{text}"
    );
}
