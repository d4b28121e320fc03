//! Evidence records and configuration checks through the real binary (SPEC §4, §6, §10).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde_json::Value;

use crate::util::*;

fn assert_envelope(v: &Value, kind: &str, source: &str) {
    assert_eq!(v["specversion"], "1.0");
    assert_eq!(v["type"], kind);
    assert_eq!(v["source"], source);
    assert_eq!(v["datacontenttype"], "application/json");
    let t = v["time"].as_str().unwrap();
    assert!(t.ends_with('Z') && t.contains('T'), "{t}");
    assert!(v["data"].is_object());
}

#[test]
fn capture_files_have_the_documented_shapes_and_mode_0600() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut opts = capture_opts(&cap);
    opts.extend(["--label".to_string(), "fs-server".to_string()]);
    let r = run(
        &wrap_args(&strs(&opts), &["python3", &demo_server()]),
        &script(&[INIT, &call(2, "echo", r#"{"text":"a"}"#)]),
    );
    r.expect_status(0);
    for name in SESSION_CAPTURE_FILES {
        let m = std::fs::metadata(cap.join(name)).unwrap();
        assert_eq!(m.mode() & 0o777, 0o600, "{name}");
    }
    let protocol = read_json(&cap.join("protocol.json"));
    let ctx = read_json(&cap.join("session-context.json"));
    let stop = read_json(&cap.join("session-stop.json"));
    let sid = protocol["session_id"].as_str().unwrap().to_string();
    assert_eq!(sid.len(), 32);
    assert!(
        sid.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert_eq!(protocol["schema"], "assay.capture.protocol.v1");
    assert_eq!(protocol["server_id"], "fs-server");
    assert_eq!(protocol["event_source"], "assay://test/session");
    assert_eq!(protocol["decision_log"], "decisions.ndjson");

    assert_envelope(&ctx, "assay.mcp.session.context.v1", "assay://test/session");
    assert_eq!(ctx["id"], format!("evt_context_{sid}"));
    let d = &ctx["data"];
    let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    for k in [
        "session_id",
        "server_id",
        "server_pid",
        "started_at",
        "policy_sha256",
        "policy_name",
        "decision_log",
        "session_stop_requested",
        "dry_run",
        "command_sha256",
        "producer",
        "assertion_basis",
        "non_claims",
    ] {
        assert!(keys.contains(&k), "context lacks {k}");
    }
    assert_eq!(d["decision_log"], "new");
    assert_eq!(d["session_stop_requested"], true);
    assert_eq!(d["policy_name"], "demo");
    // SPEC §4.2, §5.2: the demo policy governs `tools/call` only and records no arguments.
    assert_eq!(d["governed"], serde_json::json!([]));
    assert_eq!(d["record_arguments"], false);
    assert_eq!(d["policy_sha256"], sha256_file(&demo_policy()).as_str());
    assert_eq!(d["producer"]["name"], "assay");
    // The raw argv is not recorded, only its digest.
    assert!(
        !std::fs::read_to_string(cap.join("session-context.json"))
            .unwrap()
            .contains("server.py")
    );

    assert_envelope(&stop, "assay.mcp.session.stop.v1", "assay://test/session");
    assert_eq!(stop["id"], format!("evt_stop_{sid}"));
    let s = &stop["data"];
    assert_eq!(
        s.as_object().unwrap().len(),
        17,
        "every stop key, always: {s}"
    );
    assert_eq!(s["session_context_id"], ctx["id"]);
    assert_eq!(s["server_pid"], d["server_pid"]);
    assert_eq!(s["assertion_basis"], "producer_observation");
    assert_eq!(
        s["non_claims"],
        serde_json::json!([
            "not_execution_proof",
            "not_authentication",
            "not_global_coverage",
            "not_durable_storage_proof"
        ])
    );
    // Child stderr is retained.
    assert!(
        std::fs::read_to_string(cap.join("proxy-stderr.log"))
            .unwrap()
            .contains("ready")
    );
}

#[test]
fn without_a_log_the_accounting_is_null_and_the_state_absent() {
    let dir = tempdir();
    let stop = dir.path().join("stop.json");
    let opts = evidence_opts(&["--session-stop-out".into(), stop.display().to_string()]);
    run(
        &wrap_args(&strs(&opts), &["python3", &demo_server()]),
        &script(&[INIT]),
    )
    .expect_status(0);
    let s = read_json(&stop)["data"].clone();
    assert_eq!(s["decision_log"], "absent");
    assert!(s["decision_events_written"].is_null());
    assert!(s["decision_events_dropped"].is_null());
    assert!(s["decision_prefix_sha256"].is_null());
    assert!(s["session_context_id"].is_null());
}

#[test]
fn append_mode_accounts_for_this_invocation_only() {
    let dir = tempdir();
    let log = dir.path().join("d.ndjson");
    std::fs::write(&log, "historical line\n").unwrap();
    let opts = evidence_opts(&["--decision-log".into(), log.display().to_string()]);
    run(
        &wrap_args(&strs(&opts), &["python3", &demo_server()]),
        &script(&[&call(1, "echo", "{}")]),
    )
    .expect_status(0);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("historical line\n"));
    assert_eq!(text.lines().count(), 2);
}

/// Runs a config that must fail: exit 2, one `assay:` line naming `option`, nothing spawned.
fn config_error(dir: &Path, opts: &[String], option: &str) {
    let marker = dir.join("spawned");
    let r = run(
        &wrap_args(
            &strs(opts),
            &["/bin/sh", "-c", &format!("touch {}", marker.display())],
        ),
        b"",
    );
    r.expect_status(2);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", r.report());
    assert!(lines[0].starts_with("assay: "), "{}", r.report());
    assert!(
        lines[0].contains(option),
        "expected {option}: {}",
        r.report()
    );
    assert!(!marker.exists(), "nothing may be spawned");
}

/// Configuration errors (SPEC §6): the options, with `{dir}` for the test's directory and
/// `{policy}` for the demo policy, and what the one `assay:` line must name.
const CONFIG_ERRORS: &[(&[&str], &str)] = &[
    (&["--policy", "{dir}/missing.yaml"], "policy"),
    (&["--policy", "{dir}/bad.yaml"], "bogus"),
    (
        &[
            "--policy",
            "{policy}",
            "--event-source",
            "not a uri",
            "--session-stop-out",
            "{dir}/s.json",
        ],
        "event-source",
    ),
    (
        &["--policy", "{policy}", "--session-stop-out", "{dir}/s.json"],
        "event-source",
    ),
    (
        &[
            "--policy",
            "{policy}",
            "--event-source",
            "assay://t/x",
            "--decision-log",
            "{dir}/d.ndjson",
            "--session-stop-out",
            "{dir}/s.json",
        ],
        "decision-log-new",
    ),
    (
        &[
            "--policy",
            "{policy}",
            "--event-source",
            "assay://t/x",
            "--decision-log",
            "{dir}/exists.ndjson",
            "--decision-log-new",
        ],
        "decision-log",
    ),
    (
        &[
            "--policy",
            "{policy}",
            "--event-source",
            "assay://t/x",
            "--session-context-out",
            "{dir}/same.json",
            "--session-stop-out",
            "{dir}/same.json",
        ],
        "same file",
    ),
    (
        &[
            "--policy",
            "{policy}",
            "--event-source",
            "assay://t/x",
            "--session-stop-out",
            "{policy}",
        ],
        "session-stop-out",
    ),
    (
        &[
            "--policy",
            "{policy}",
            "--event-source",
            "assay://t/x",
            "--session-stop-out",
            "{dir}/link.json",
        ],
        "session-stop-out",
    ),
    (
        &[
            "--policy",
            "{policy}",
            "--event-source",
            "assay://t/x",
            "--capture-dir",
            "{dir}/cap",
            "--decision-log",
            "{dir}/d.ndjson",
        ],
        "decision-log",
    ),
    (
        &[
            "--policy",
            "{policy}",
            "--event-source",
            "assay://t/x",
            "--capture-dir",
            "{dir}/cap2",
        ],
        "already exists",
    ),
];

#[test]
fn configuration_errors_exit_2_spawn_nothing_and_create_nothing() {
    let dir = tempdir();
    let d = dir.path();
    let policy = demo_policy().display().to_string();
    std::fs::write(
        d.join("bad.yaml"),
        "version: \"1\"\nallow: [\"*\"]\nbogus: 1\n",
    )
    .unwrap();
    std::fs::write(d.join("exists.ndjson"), "x").unwrap();
    std::os::unix::fs::symlink(d.join("elsewhere.json"), d.join("link.json")).unwrap();
    std::fs::create_dir(d.join("cap2")).unwrap();
    std::fs::write(d.join("cap2/session-stop.json"), "old").unwrap();

    for (opts, option) in CONFIG_ERRORS {
        let opts: Vec<String> = opts
            .iter()
            .map(|o| {
                o.replace("{dir}", &d.display().to_string())
                    .replace("{policy}", &policy)
            })
            .collect();
        config_error(d, &opts, option);
    }
    // Nothing was created by any of them.
    let mut names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["bad.yaml", "cap2", "exists.ndjson", "link.json"]);
    assert_eq!(
        std::fs::read_to_string(d.join("cap2/session-stop.json")).unwrap(),
        "old"
    );
}

#[test]
fn usage_errors_exit_2() {
    let r = run(&["mcp".into(), "wrap".into()], b"");
    r.expect_status(2);
}
