//! Capture roots (SPEC §10, §3 item 8): the real `assay mcp wrap --capture-root` launched again
//! and again into one root, discovery-only runs leaving `no-session.json`, and the real
//! `assay capture summary ROOT` judging a root of every kind of capture.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::util::*;

const DISCOVER: &str = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#;

fn root_opts(root: &Path) -> Vec<String> {
    evidence_opts(&["--capture-root".into(), root.display().to_string()])
}

/// One launch of `assay mcp wrap --capture-root ROOT` in front of the fault server.
fn launch(root: &Path, extra: &[&str], mode: &str, input: &[u8]) -> Run {
    let mut opts = root_opts(root);
    opts.extend(extra.iter().map(|s| s.to_string()));
    run(
        &wrap_args(&strs(&opts), &["python3", &fault_server(), mode]),
        input,
    )
}

fn session() -> Vec<u8> {
    script(&[
        INIT,
        &call(2, "echo", r#"{"text":"a"}"#),
        &call(3, "exec", "{}"),
    ])
}

/// The run directories under `root`, in name order.
fn runs(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// `YYYYMMDDTHHMMSS.ffffffZ-<32 hex>`.
fn is_run_name(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() == 23 + 1 + 32
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'.'
        && b[16..22].iter().all(u8::is_ascii_digit)
        && &b[22..24] == b"Z-"
        && b[24..]
            .iter()
            .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn summary(root: &Path) -> (Run, Vec<Value>) {
    let r = run(
        &[
            "capture".into(),
            "summary".into(),
            root.display().to_string(),
        ],
        b"",
    );
    let lines = r.lines();
    (r, lines)
}

/// A summary line. Every capture here has the default label (`server_id`, SPEC §10), read from
/// its stop record or its protocol.json; an entry with no session id (a symlink) has none.
fn line(capture: &str, closure: &str, session_id: Value, reasons: &[&str]) -> Value {
    let server_id = if session_id.is_null() {
        Value::Null
    } else {
        json!("default-mcp-server")
    };
    json!({"capture": capture, "closure": closure, "session_id": session_id,
           "server_id": server_id, "reasons": reasons})
}

/// The session id at the end of a run directory's name.
fn sid(run: &Path) -> Value {
    Value::from(name_of(run)[24..].to_string())
}

#[test]
fn two_launches_into_one_root_give_two_closed_captures() {
    let d = tempdir();
    let root = d.path().join("captures");
    let first = launch(&root, &["--verbose"], "normal", &session());
    first.expect_status(0);
    launch(&root, &[], "exit7", &session()).expect_status(7);

    // The root was created 0700; each run got its own new 0700 directory, named by UTC start
    // time and session id, so the names sort by start time.
    assert_eq!(mode(&root), 0o700);
    let dirs = runs(&root);
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    for dir in &dirs {
        assert!(is_run_name(&name_of(dir)), "{}", dir.display());
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
        let protocol = read_json(&dir.join("protocol.json"));
        assert_eq!(protocol["session_id"], sid(dir));
    }
    let stop = read_json(&dirs[1].join("session-stop.json"));
    assert_eq!(
        stop["data"]["exit_code"], 7,
        "the second launch is listed second"
    );
    // --verbose names the chosen directory on stderr.
    assert!(
        first
            .stderr
            .contains(&format!("assay: capture directory {}", dirs[0].display())),
        "{}",
        first.report()
    );

    let (r, lines) = summary(&root);
    r.expect_status(0);
    assert_eq!(
        lines,
        vec![
            line(&name_of(&dirs[0]), "closed", sid(&dirs[0]), &[]),
            line(&name_of(&dirs[1]), "closed", sid(&dirs[1]), &[]),
            json!({"summary": {"closed": 2, "incomplete": 0, "unknown": 0, "no_session": 0}}),
        ]
    );
    for dir in &dirs {
        read_verdict(dir).0.expect_status(0);
    }
}

#[test]
fn version_probe_then_session_gives_one_no_session_and_one_closed() {
    // The TypeScript SDK v2 client starts the server command twice: a discovery probe (only
    // `server/discover`, or nothing at all), then the session.
    let d = tempdir();
    let root = d.path().join("captures");
    let probe = launch(&root, &[], "normal", &script(&[DISCOVER]));
    probe.expect_status(0);
    launch(&root, &[], "normal", &session()).expect_status(0);

    let dirs = runs(&root);
    assert_eq!(dirs.len(), 2);
    let (probe_dir, session_dir) = (&dirs[0], &dirs[1]);
    assert!(!probe_dir.join("session-stop.json").exists());
    let marker = probe_dir.join("no-session.json");
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        format!(
            "{{\"schema\":\"assay.capture.no_session.v1\",\"session_id\":{}}}\n",
            sid(probe_dir)
        )
    );
    assert_eq!(mode(&marker), 0o600);
    assert!(!session_dir.join("no-session.json").exists());

    let (r, v) = read_verdict(probe_dir);
    r.expect_status(3);
    assert_eq!(v["closure"], "unknown");
    assert_eq!(codes(&v), ["no_session"]);
    assert_eq!(v["session_id"], sid(probe_dir));

    let (r, lines) = summary(&root);
    r.expect_status(0);
    assert_eq!(
        lines,
        vec![
            line(
                &name_of(probe_dir),
                "no_session",
                sid(probe_dir),
                &["no_session"]
            ),
            line(&name_of(session_dir), "closed", sid(session_dir), &[]),
            json!({"summary": {"closed": 1, "incomplete": 0, "unknown": 0, "no_session": 1}}),
        ]
    );

    // A launch that gets no client message at all is discovery-only too.
    launch(&root, &[], "normal", b"").expect_status(0);
    let newest = runs(&root).pop().unwrap();
    assert!(newest.join("no-session.json").exists());
    assert!(!newest.join("session-stop.json").exists());

    // A root holding only discovery-only runs vouches for no session: exit 3.
    let only = d.path().join("only-probes");
    launch(&only, &[], "normal", &script(&[DISCOVER, DISCOVER])).expect_status(0);
    let (r, lines) = summary(&only);
    r.expect_status(3);
    assert_eq!(
        lines.last().unwrap(),
        &json!({"summary": {"closed": 0, "incomplete": 0, "unknown": 0, "no_session": 1}})
    );
}

#[test]
fn summary_of_a_root_with_every_kind_of_entry() {
    let d = tempdir();
    let root = d.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let make_with = |name: &str, mode: &str, input: &[u8], extra: &[&str]| -> PathBuf {
        let cap = root.join(name);
        let mut opts = capture_opts(&cap);
        opts.extend(extra.iter().map(|s| s.to_string()));
        let r = run(
            &wrap_args(&strs(&opts), &["python3", &fault_server(), mode]),
            input,
        );
        assert!(r.status.is_some(), "{}", r.report());
        cap
    };
    let make = |name: &str, mode: &str, input: &[u8]| make_with(name, mode, input, &[]);
    let closed = make("a-closed", "normal", &session());
    // A client line over `max_line_bytes`: proxy_error, `incomplete`.
    let long = call(4, "echo", &format!(r#"{{"text":"{}"}}"#, "x".repeat(300)));
    let mut input = session();
    input.extend_from_slice(&script(&[&long]));
    let incomplete = make_with(
        "b-incomplete",
        "normal",
        &input,
        &["--max-line-bytes", "200"],
    );
    let unknown = make("c-unknown", "normal", &session());
    std::fs::remove_file(unknown.join("session-stop.json")).unwrap();
    let probe = make("d-probe", "normal", &script(&[DISCOVER]));
    // A symlinked entry is reported unknown, never followed (its target is a closed capture).
    std::os::unix::fs::symlink(&closed, root.join("e-link")).unwrap();
    // Not captures: a directory without protocol.json, a plain file.
    std::fs::create_dir(root.join("f-empty")).unwrap();
    std::fs::write(root.join("g-file"), b"x").unwrap();
    let sid_of = |cap: &Path| read_json(&cap.join("protocol.json"))["session_id"].clone();

    let expected_all = vec![
        line("a-closed", "closed", sid_of(&closed), &[]),
        line(
            "b-incomplete",
            "incomplete",
            sid_of(&incomplete),
            &["proxy_error"],
        ),
        line("c-unknown", "unknown", sid_of(&unknown), &["missing_file"]),
        line("d-probe", "no_session", sid_of(&probe), &["no_session"]),
        line("e-link", "unknown", Value::Null, &["not_regular_file"]),
    ];
    let (r, lines) = summary(&root);
    r.expect_status(3);
    let mut want = expected_all.clone();
    want.push(json!({"summary": {"closed": 1, "incomplete": 1, "unknown": 2, "no_session": 1}}));
    assert_eq!(lines, want, "{}", r.report());

    // Without the unknown entries: some incomplete → 1.
    std::fs::remove_dir_all(&unknown).unwrap();
    std::fs::remove_file(root.join("e-link")).unwrap();
    let (r, lines) = summary(&root);
    r.expect_status(1);
    assert_eq!(
        lines.last().unwrap(),
        &json!({"summary": {"closed": 1, "incomplete": 1, "unknown": 0, "no_session": 1}})
    );
    // Only closed (and a discovery-only run, left out of the status) → 0.
    std::fs::remove_dir_all(&incomplete).unwrap();
    summary(&root).0.expect_status(0);

    // No capture at all → 3.
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (r, lines) = summary(&empty);
    r.expect_status(3);
    assert_eq!(
        lines,
        vec![json!({"summary": {"closed": 0, "incomplete": 0, "unknown": 0, "no_session": 0}})]
    );

    // A ROOT that is not a directory (or does not exist) is a usage error, with a clear message.
    for (bad, what) in [
        (root.join("g-file"), "is not a directory"),
        (d.path().join("missing"), "does not exist"),
    ] {
        let (r, lines) = summary(&bad);
        r.expect_status(2);
        assert!(lines.is_empty(), "{}", r.report());
        assert!(
            r.stderr.contains("assay: capture root") && r.stderr.contains(what),
            "{}",
            r.report()
        );
    }
}

#[test]
fn no_session_markers_that_contradict_the_capture_are_inconsistent() {
    let d = tempdir();
    let root = d.path().join("root");
    launch(&root, &[], "normal", &session()).expect_status(0);
    launch(&root, &[], "normal", &script(&[DISCOVER])).expect_status(0);
    let dirs = runs(&root);
    let (session_dir, probe_dir) = (&dirs[0], &dirs[1]);
    let marker =
        |sid: &Value| format!(r#"{{"schema":"assay.capture.no_session.v1","session_id":{sid}}}"#);

    // Beside a stop record and a non-empty decision log.
    std::fs::write(
        session_dir.join("no-session.json"),
        marker(&sid(session_dir)),
    )
    .unwrap();
    let (r, v) = read_verdict(session_dir);
    r.expect_status(3);
    assert_eq!(v["closure"], "unknown");
    assert_eq!(
        codes(&v),
        [
            "no_session",
            "inconsistent_accounting",
            "inconsistent_accounting"
        ]
    );

    // Beside a non-empty decision log only.
    let log = probe_dir.join("decisions.ndjson");
    std::fs::write(&log, b"{}\n").unwrap();
    let (_, v) = read_verdict(probe_dir);
    assert!(
        codes(&v).contains(&"inconsistent_accounting".to_string()),
        "{v}"
    );
    std::fs::write(&log, b"").unwrap();
    read_verdict(probe_dir).0.expect_status(3);
    assert_eq!(codes(&read_verdict(probe_dir).1), ["no_session"]);

    // Another session's marker, a wrong schema, a symlinked marker.
    let path = probe_dir.join("no-session.json");
    let original = std::fs::read(&path).unwrap();
    for (bytes, code) in [
        (
            marker(&Value::from("0123456789abcdef0123456789abcdef")).into_bytes(),
            "protocol_mismatch",
        ),
        (
            original
                .clone()
                .iter()
                .map(|&b| if b == b'1' { b'2' } else { b })
                .collect::<Vec<u8>>(),
            "schema_mismatch",
        ),
        (b"{\"schema\":1,\"schema\":2}".to_vec(), "duplicate_key"),
    ] {
        std::fs::write(&path, &bytes).unwrap();
        let (r, v) = read_verdict(probe_dir);
        r.expect_status(3);
        assert!(
            codes(&v).contains(&code.to_string()),
            "{code}: {v}\n{}",
            String::from_utf8_lossy(&bytes)
        );
        let (_, lines) = summary(&root);
        assert_eq!(
            lines[1]["closure"], "unknown",
            "{code}: counted apart only when clean"
        );
    }
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(d.path(), &path).unwrap();
    let (_, v) = read_verdict(probe_dir);
    assert!(codes(&v).contains(&"not_regular_file".to_string()), "{v}");

    // The packager copies a marker that is present.
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, &original).unwrap();
    let pkg = d.path().join("pkg");
    let r = package(probe_dir, &pkg, &[]);
    r.expect_status(0);
    assert_eq!(
        std::fs::read(pkg.join("no-session.json")).unwrap(),
        original
    );
    assert_eq!(
        read_json(&pkg.join("manifest.json"))["closure"]["reasons"][0]["code"],
        "no_session"
    );
}

#[test]
fn capture_root_config_errors_create_nothing() {
    let d = tempdir();
    let file = d.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let real = d.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let root = d.path().join("root");
    let root_s = root.display().to_string();
    let other = |name: &str| d.path().join(name).display().to_string();
    let policy = demo_policy().display().to_string();
    let source = "assay://test/session".to_string();
    let base = |root: &str| {
        vec![
            "--policy".to_string(),
            policy.clone(),
            "--event-source".into(),
            source.clone(),
            "--capture-root".into(),
            root.to_string(),
        ]
    };
    let with = |extra: &[String]| {
        let mut v = base(&root_s);
        v.extend_from_slice(extra);
        v
    };
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "parent missing",
            base(&d.path().join("no/such/root").display().to_string()),
            "--capture-root: parent directory",
        ),
        (
            "root is a file",
            base(&file.display().to_string()),
            "--capture-root: ",
        ),
        (
            "root is a symlink",
            base(&link.display().to_string()),
            "symbolic link",
        ),
        (
            "with --capture-dir",
            with(&["--capture-dir".into(), other("cap")]),
            "--capture-dir: cannot be combined with --capture-root",
        ),
        (
            "with --decision-log",
            with(&[
                "--decision-log".into(),
                other("log"),
                "--decision-log-new".into(),
            ]),
            "--decision-log: cannot be combined with --capture-root",
        ),
        (
            "with --session-context-out",
            with(&["--session-context-out".into(), other("ctx")]),
            "--session-context-out: cannot be combined",
        ),
        (
            "with --session-stop-out",
            with(&["--session-stop-out".into(), other("stop")]),
            "--session-stop-out: cannot be combined",
        ),
        (
            "with --coverage-out",
            with(&["--coverage-out".into(), other("cov")]),
            "--coverage-out: cannot be combined",
        ),
        (
            "without --event-source",
            vec![
                "--policy".to_string(),
                policy.clone(),
                "--capture-root".into(),
                root_s.clone(),
            ],
            "--event-source: required",
        ),
        (
            "missing policy",
            vec![
                "--policy".to_string(),
                other("none.yaml"),
                "--event-source".into(),
                source.clone(),
                "--capture-root".into(),
                root_s.clone(),
            ],
            "--policy",
        ),
    ];
    let before = runs(d.path());
    for (what, opts, message) in cases {
        let marker = d.path().join("spawned");
        let r = run(
            &wrap_args(
                &strs(&opts),
                &["sh", "-c", &format!("touch {}", marker.display())],
            ),
            b"",
        );
        assert_eq!(r.status, Some(2), "{what}\n{}", r.report());
        assert!(r.stderr.contains(message), "{what}\n{}", r.report());
        assert!(!marker.exists(), "{what}: nothing is spawned");
        assert_eq!(runs(d.path()), before, "{what}: nothing is created");
        assert!(std::fs::read_dir(&real).unwrap().next().is_none(), "{what}");
    }
}

#[test]
fn run_directories_are_0700_under_a_hostile_umask() {
    let d = tempdir();
    let root = d.path().join("root");
    // umask 0277 would make mkdir(0700) a 0500 directory the wrapper could not write into.
    let mut argv = vec![
        "-c".to_string(),
        "umask 0277; exec \"$@\"".to_string(),
        "sh".to_string(),
        bin().display().to_string(),
    ];
    argv.extend(wrap_args(
        &strs(&root_opts(&root)),
        &["python3", &fault_server(), "normal"],
    ));
    let r = run_program("/bin/sh", &argv, &session());
    r.expect_status(0);
    assert_eq!(mode(&root), 0o700);
    let dirs = runs(&root);
    assert_eq!(dirs.len(), 1);
    assert_eq!(mode(&dirs[0]), 0o700);
    read_verdict(&dirs[0]).0.expect_status(0);

    // An existing root keeps its owner's mode.
    let shared = d.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o750)).unwrap();
    launch(&shared, &[], "normal", &session()).expect_status(0);
    assert_eq!(mode(&shared), 0o750);
    assert_eq!(mode(&runs(&shared)[0]), 0o700);
}

/// `assay_wrap_session` of libassay.so (called from Rust) with `config_json`, feeding `input` as
/// the client.
fn c_wrap(config: Value, input: Vec<u8>) -> (u32, Option<Value>) {
    use std::ffi::{CStr, CString};
    use std::io::Write;
    use std::os::fd::AsRawFd;

    let (client_in_r, mut client_in_w) = std::io::pipe().unwrap();
    let (client_out_r, client_out_w) = std::io::pipe().unwrap();
    let mut config = config;
    config["stdin"] = Value::from(client_in_r.as_raw_fd());
    config["stdout"] = Value::from(client_out_w.as_raw_fd());
    let config = CString::new(config.to_string()).unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut r = client_out_r;
        std::io::Read::read_to_end(&mut r, &mut out).unwrap();
    });
    let session = std::thread::spawn(move || {
        let mut out: *mut std::os::raw::c_char = std::ptr::null_mut();
        // SAFETY (test): a valid NUL-terminated config and a valid out pointer.
        let lib = crate::c_library::c_library();
        let status = unsafe { (lib.wrap_session)(config.as_ptr(), &mut out) };
        let outcome = (!out.is_null()).then(|| {
            // SAFETY (test): the library returned a NUL-terminated string it allocated.
            let s = unsafe { CStr::from_ptr(out) }.to_str().unwrap().to_owned();
            unsafe { (lib.string_free)(out) };
            serde_json::from_str::<Value>(&s).unwrap()
        });
        drop(client_in_r);
        drop(client_out_w);
        (status, outcome)
    });
    client_in_w.write_all(&input).unwrap();
    drop(client_in_w);
    let result = session.join().unwrap();
    reader.join().unwrap();
    result
}

#[test]
fn c_config_capture_root_outcome_names_the_run_directory() {
    use crate::c_library::{ASSAY_ERR_CONFIG, ASSAY_OK};
    let d = tempdir();
    let root = d.path().join("root");
    let config = |extra: Value| {
        let mut c = json!({
            "command": ["python3", fault_server(), "normal"],
            "policy": demo_policy(),
            "event_source": "assay://t/ffi",
            "capture_root": root,
        });
        if let (Value::Object(c), Value::Object(extra)) = (&mut c, extra) {
            c.extend(extra);
        }
        c
    };

    let (status, outcome) = c_wrap(config(json!({})), session());
    assert_eq!(status, ASSAY_OK);
    let outcome = outcome.unwrap();
    let dirs = runs(&root);
    assert_eq!(dirs.len(), 1);
    let dir = dirs[0].display().to_string();
    assert_eq!(outcome["paths"]["capture_dir"], dir.as_str());
    assert_eq!(
        outcome["paths"]["session_stop"],
        format!("{dir}/session-stop.json").as_str()
    );
    assert_eq!(outcome["paths"]["no_session"], Value::Null);
    assert_eq!(outcome["session_id"], sid(&dirs[0]));

    let (status, outcome) = c_wrap(config(json!({})), script(&[DISCOVER]));
    assert_eq!(status, ASSAY_OK);
    let outcome = outcome.unwrap();
    let dirs = runs(&root);
    assert_eq!(dirs.len(), 2);
    assert_eq!(outcome["discovery_only"], true);
    assert_eq!(outcome["stop_written"], false);
    assert_eq!(
        outcome["paths"]["no_session"],
        format!("{}/no-session.json", dirs[1].display()).as_str()
    );

    let (status, outcome) = c_wrap(
        config(json!({"capture_dir": d.path().join("cap")})),
        Vec::new(),
    );
    assert_eq!(status, ASSAY_ERR_CONFIG);
    assert!(outcome.is_none());
    assert_eq!(runs(&root).len(), 2, "a config error creates nothing");
    assert!(!d.path().join("cap").exists());
}

#[test]
fn a_capture_dir_already_holding_a_no_session_marker_is_refused() {
    let d = tempdir();
    let cap = d.path().join("cap");
    std::fs::create_dir(&cap).unwrap();
    std::fs::write(cap.join("no-session.json"), b"{}").unwrap();
    let r = run(
        &wrap_args(
            &strs(&capture_opts(&cap)),
            &["python3", &fault_server(), "normal"],
        ),
        &session(),
    );
    r.expect_status(2);
    assert!(
        r.stderr.contains("--capture-dir") && r.stderr.contains("no-session.json already exists"),
        "{}",
        r.report()
    );
    let names: Vec<String> = runs(&cap).iter().map(|p| name_of(p)).collect();
    assert_eq!(names, ["no-session.json"], "nothing else is created");
}

#[test]
fn concurrent_launches_share_a_root_they_race_to_create() {
    let d = tempdir();
    let root = d.path().join("root");
    let launches: Vec<_> = (0..4)
        .map(|_| {
            let root = root.clone();
            std::thread::spawn(move || launch(&root, &[], "normal", &session()))
        })
        .collect();
    for l in launches {
        l.join().unwrap().expect_status(0);
    }
    let (r, lines) = summary(&root);
    r.expect_status(0);
    assert_eq!(
        lines.last().unwrap(),
        &json!({"summary": {"closed": 4, "incomplete": 0, "unknown": 0, "no_session": 0}})
    );
}

/// Issue 41: a root given to `capture read` and one capture given to `capture summary` are
/// usage errors (status 2) whose one line says what to run instead, never a verdict on missing
/// files or an empty summary.
#[test]
fn read_of_a_root_and_summary_of_a_capture_say_what_to_run() {
    let d = tempdir();
    let root = d.path().join("root");
    launch(&root, &[], "normal", &session()).expect_status(0);
    let cap = runs(&root).remove(0);

    let r = run(
        &["capture".into(), "read".into(), root.display().to_string()],
        b"",
    );
    r.expect_status(2);
    assert!(r.stdout.is_empty(), "{}", r.report());
    let want = format!("use `assay capture summary {}`", root.display());
    assert!(
        r.stderr.contains("is a capture root") && r.stderr.contains(&want),
        "{}",
        r.report()
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.report());

    for format in ["json", "table"] {
        let r = run(
            &[
                "capture".into(),
                "summary".into(),
                cap.display().to_string(),
                "--format".into(),
                format.into(),
            ],
            b"",
        );
        r.expect_status(2);
        assert!(r.stdout.is_empty(), "{format}: {}", r.report());
        let want = format!("use `assay capture read {}`", cap.display());
        assert!(
            r.stderr.contains("is a capture directory") && r.stderr.contains(&want),
            "{format}: {}",
            r.report()
        );
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.report());
    }
    // The right command on each still works.
    summary(&root).0.expect_status(0);
    run(
        &["capture".into(), "read".into(), cap.display().to_string()],
        b"",
    )
    .expect_status(0);
}
