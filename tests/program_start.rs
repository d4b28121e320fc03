//! What the `assay` binary does with its process before any work, now that it starts without
//! Rust's runtime start-up (docs/decisions.md, "The command line starts without the runtime's
//! stack probe"): a closed standard descriptor is opened on `/dev/null` before any file of its
//! own is, so no log, policy or capture file can take the place of its standard input or output;
//! its arguments are the bytes `execve` was given. (`SIGPIPE` ignored: `cli::broken_pipe_*`,
//! whose exit statuses a death by the signal would not give.) Real wrapper processes with their
//! descriptors closed by `exec` itself, a real server.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::process::Stdio;

use crate::util::*;

/// `assay mcp wrap` with a decision log in `dir`, stdin from `input` (written to a file) unless
/// descriptor 0 is in `closed`, every descriptor of `closed` closed in the child before `exec`.
/// Returns the exit status, stderr and the log's path.
fn wrap_with_closed(
    dir: &std::path::Path,
    closed: &'static [libc::c_int],
    input: &[u8],
) -> (Option<i32>, String, std::path::PathBuf) {
    let log = dir.join("decisions.ndjson");
    let script = dir.join("input.ndjson");
    std::fs::write(&script, input).unwrap();
    let policy = demo_policy().display().to_string();
    let log_arg = log.display().to_string();
    let mut cmd = wrap_command(
        &[
            "--policy",
            &policy,
            "--event-source",
            "assay://test/session",
            "--decision-log",
            &log_arg,
            "--decision-log-new",
        ],
        &["python3", &demo_server()],
    );
    cmd.stdin(File::open(&script).unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: close(2) is async-signal-safe; the child closes its own copies before exec.
    unsafe {
        cmd.pre_exec(move || {
            for &fd in closed {
                libc::close(fd);
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("spawn");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        log,
    )
}

#[test]
fn a_session_started_with_its_standard_output_closed_keeps_its_log_a_log() {
    let dir = tempdir();
    let input = script(&[INIT, &call(2, "echo", r#"{"text":"a"}"#)]);
    let (status, stderr, log) = wrap_with_closed(dir.path(), &[1], &input);
    assert_eq!(status, Some(0), "stderr: {stderr}");
    // The answers went to /dev/null: the log holds the one decision and nothing a server wrote.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("\"jsonrpc\""),
        "protocol bytes in the log:\n{text}"
    );
    let decisions = decision_lines(&log);
    assert_eq!(decisions.len(), 1, "{text}");
    assert_eq!(decisions[0]["type"], "assay.tool.decision");
    assert_eq!(decisions[0]["data"]["tool"], "echo");
    assert_eq!(decisions[0]["data"]["decision"], "allow");
}

#[test]
fn a_session_started_with_every_standard_descriptor_closed_is_an_empty_session() {
    let dir = tempdir();
    // stdin closed too: the session reads /dev/null (no line), writes nothing anywhere but its
    // log, which stays empty, and ends as a session whose client left at once.
    let (status, stderr, log) = wrap_with_closed(dir.path(), &[0, 1, 2], b"");
    assert_eq!(status, Some(0), "stderr: {stderr}");
    assert_eq!(std::fs::read(&log).unwrap(), b"");
}

#[test]
fn arguments_reach_the_command_line_as_the_bytes_given() {
    use std::os::unix::ffi::OsStrExt;
    // A capture directory whose name is not UTF-8: written by one run, read by another, both
    // naming it with the same bytes (a Unix argument is bytes; none is respelled on the way).
    let dir = tempdir();
    let cap = dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"capture-\xff\xfe-x"));
    let mut wrap = std::process::Command::new(bin());
    wrap.args(["mcp", "wrap", "--policy"])
        .arg(demo_policy())
        .args(["--event-source", "assay://test/session", "--capture-dir"])
        .arg(&cap)
        .args(["--", "python3", &demo_server()]);
    let input = script(&[INIT, &call(2, "echo", r#"{"text":"a"}"#)]);
    let r = run_command(wrap, &input);
    assert_eq!(r.status, Some(0), "{}", r.report());
    assert_eq!(decision_lines(&cap.join("decisions.ndjson")).len(), 1);
    let read = std::process::Command::new(bin())
        .args(["capture", "read"])
        .arg(&cap)
        .output()
        .expect("spawn");
    let stderr = String::from_utf8_lossy(&read.stderr);
    assert_eq!(read.status.code(), Some(0), "{stderr}");
    let verdict: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(verdict["closure"], "closed", "{verdict}");
}
