//! The command line's own behaviour (SPEC §10): a reader that goes away from stdout is a normal
//! end, never a panic or an error message.

use crate::util::*;

/// A closed capture made by the real wrapper around the demo server, in `dir/root/one`.
fn closed_capture(dir: &std::path::Path) -> std::path::PathBuf {
    let cap = dir.join("root").join("one");
    std::fs::create_dir(dir.join("root")).unwrap();
    run(
        &wrap_args(&strs(&capture_opts(&cap)), &["python3", &demo_server()]),
        &script(&[INIT, &call(2, "echo", r#"{"text":"a"}"#)]),
    )
    .expect_status(0);
    cap
}

/// Nothing on stderr: neither a panic nor an `assay:` diagnostic.
fn expect_quiet(r: &Run, status: i32) {
    r.expect_status(status);
    assert_eq!(r.stderr, "", "{}", r.report());
}

#[test]
fn broken_pipe_on_stdout_ends_capture_commands_quietly() {
    let dir = tempdir();
    let cap = closed_capture(dir.path());
    let root = dir.path().join("root");
    // The verdict was not delivered: never "closed" (status 3), and no message.
    expect_quiet(
        &run_without_reader(&["capture", "summary", &root.display().to_string()]),
        3,
    );
    expect_quiet(
        &run_without_reader(&["capture", "read", &cap.display().to_string()]),
        3,
    );
    // The package is complete before the manifest is printed.
    let pkg = dir.path().join("pkg");
    expect_quiet(
        &run_without_reader(&[
            "capture",
            "package",
            &cap.display().to_string(),
            &pkg.display().to_string(),
        ]),
        0,
    );
    assert!(pkg.join("manifest.json").is_file());
    expect_quiet(&run_without_reader(&["--help"]), 0);
}

#[test]
fn broken_pipe_on_stdout_ends_the_demo_quietly() {
    let dir = tempdir();
    let cap = dir.path().join("demo");
    expect_quiet(
        &demo_without_reader(dir.path(), &["--capture-dir", &cap.display().to_string()]),
        3,
    );
}

#[test]
fn summary_into_head_prints_one_line_and_no_error() {
    let dir = tempdir();
    let root = dir.path().join("root");
    closed_capture(dir.path());
    // A second capture, so there is more than one line to write.
    let cap2 = root.join("two");
    run(
        &wrap_args(&strs(&capture_opts(&cap2)), &["python3", &demo_server()]),
        &script(&[INIT]),
    )
    .expect_status(0);
    let r = run_program(
        "/bin/sh",
        &[
            "-c".into(),
            format!(
                "'{}' capture summary '{}' | head -1",
                bin().display(),
                root.display()
            ),
        ],
        b"",
    );
    expect_quiet(&r, 0);
    let lines = r.lines();
    assert_eq!(lines.len(), 1, "{}", r.report());
    assert_eq!(lines[0]["capture"], "one", "{}", r.report());
}
