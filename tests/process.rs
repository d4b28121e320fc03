//! The server process and the host defaults (SPEC §3 items 7 and 9, §3.1a, §10): the fallbacks
//! when a sandbox or an old kernel refuses the preferred spawn (for real: a seccomp filter,
//! tests/fixtures/refuse_spawn.c), exec errors under valgrind, the idle drain, a slow and a
//! stalled reader, Ctrl-C, and what a spawn failure leaves behind. Real wrapper processes, real
//! servers, real signals.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::faults::{Expected, assert_stop_record, ended, session, stop_of};
use crate::lifecycle::{Live, alive, assert_gone, server_pid};
use crate::util::*;

/// tests/fixtures/refuse_spawn.c, compiled once (gcc is part of the setup: a missing compiler
/// fails the test, never skips it).
fn refuse_spawn() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = root().join("target/refuse_spawn");
            let status = Command::new("gcc")
                .args([
                    "-std=c11",
                    "-Wall",
                    "-Wextra",
                    "-Werror",
                    "-pedantic",
                    "-O1",
                ])
                .arg(root().join("tests/fixtures/refuse_spawn.c"))
                .arg("-o")
                .arg(&out)
                .status()
                .unwrap_or_else(|e| panic!("gcc is required for the spawn tests: {e}"));
            assert!(status.success(), "refuse_spawn.c did not compile");
            out
        })
        .clone()
}

/// `assay mcp wrap` under the seccomp filter `mode` of refuse_spawn.
fn refused_wrap(mode: &str, opts: &[&str], server: &[&str]) -> Command {
    let mut cmd = Command::new(refuse_spawn());
    cmd.arg(mode).arg(bin()).args(wrap_args(opts, server));
    cmd
}

/// SPEC §3.1a: when a sandbox refuses the preferred spawn (`EPERM` from seccomp) or the kernel
/// lacks pidfds and `close_range` (before 5.3: emulated by refusing them), the server still starts
/// with the same set-up — descriptors 0, 1 and 2 only, the wrapper's signal mask — and the session
/// ends with a closed capture.
#[test]
fn refused_spawns_fall_back_to_a_fork_with_the_same_child_set_up() {
    for mode in ["vfork", "old", "noclose"] {
        let dir = tempdir();
        let cap = dir.path().join("cap");
        let mut opts = capture_opts(&cap);
        opts.push("--verbose".into());
        let cmd = refused_wrap(mode, &strs(&opts), &["python3", &fault_server(), "fds"]);
        let r = run_command(cmd, &session());
        r.expect_status(0);
        let log = std::fs::read_to_string(cap.join("proxy-stderr.log")).unwrap();
        assert!(log.lines().any(|l| l == "fds: 0 1 2"), "{mode}: {log}");
        assert!(
            log.lines().any(|l| l == "sigblk: 0000000000000000"),
            "{mode}: {log}"
        );
        // The fork fallback says so (with --verbose); the noclose mode keeps the preferred spawn.
        assert_eq!(
            log.contains("was refused; the server was forked"),
            mode != "noclose",
            "{mode}: {log}"
        );
        assert_stop_record(&cap, &ended("exited", json!(0), Value::Null));
    }
}

/// SPEC §3.1a: an exec failure is a spawn failure (127/126), never a server that ran, whichever
/// way the child was created: no session context, no stop record.
#[test]
fn exec_errors_are_spawn_failures_in_every_fallback() {
    let dir = tempdir();
    let not_exec = dir.path().join("server.sh");
    std::fs::write(&not_exec, "#!/bin/sh\n").unwrap();
    let not_exec = not_exec.display().to_string();
    for mode in ["vfork", "old", "noclose"] {
        for (program, status) in [("/nonexistent/mcp-server", 127), (not_exec.as_str(), 126)] {
            let cap = dir.path().join(format!("cap-{mode}-{status}"));
            let cmd = refused_wrap(mode, &strs(&capture_opts(&cap)), &[program]);
            let r = run_command(cmd, b"");
            r.expect_status(status);
            assert!(r.stderr.starts_with("assay: "), "{}", r.report());
            assert!(
                !cap.exists(),
                "{mode} {program}: the capture directory is removed"
            );
        }
    }
}

/// SPEC §3.1a: under valgrind (which runs the shared-memory clone as a plain fork, so the
/// spawning thread is not suspended until the exec) a missing command is still exit 127 with
/// no session context and no stop record.
#[test]
fn a_missing_command_is_127_under_valgrind() {
    let dir = tempdir();
    let root_dir = dir.path().join("root");
    let mut opts = evidence_opts(&["--capture-root".into(), root_dir.display().to_string()]);
    opts.push("--verbose".into());
    let mut args = vec!["-q".to_string(), "--error-exitcode=99".into()];
    args.push(bin().display().to_string());
    args.extend(wrap_args(&strs(&opts), &["/nonexistent/mcp-server"]));
    let r = run_program("valgrind", &args, b"");
    r.expect_status(127);
    assert!(r.stderr.contains("command not found"), "{}", r.report());
    // Nothing is left: not even the capture root, which the run created (SPEC §10).
    assert!(!root_dir.exists(), "{}", r.report());
    // And a server that runs is a session (the valgrind path works at all).
    let cap = dir.path().join("cap");
    let mut args = vec!["-q".to_string(), bin().display().to_string()];
    args.extend(wrap_args(
        &strs(&capture_opts(&cap)),
        &["python3", &fault_server(), "exit7"],
    ));
    run_program("valgrind", &args, &session()).expect_status(7);
    assert_stop_record(&cap, &ended("exited", json!(7), Value::Null));
}

/// SPEC §10: a server that cannot be started inside a capture directory the run created leaves
/// nothing behind (the empty files, the directory and a capture root the run created are
/// removed); the reason is on stderr.
#[test]
fn a_spawn_failure_leaves_no_capture_directory() {
    let dir = tempdir();
    let root_dir = dir.path().join("root");
    let not_exec = dir.path().join("server.sh");
    std::fs::write(&not_exec, "#!/bin/sh\n").unwrap();
    let opts = evidence_opts(&["--capture-root".into(), root_dir.display().to_string()]);
    for _ in 0..3 {
        let r = run(&wrap_args(&strs(&opts), &["mistyped-mcp-server-x"]), b"");
        r.expect_status(127);
        assert!(r.stderr.contains("mistyped-mcp-server-x"), "{}", r.report());
        // The root the run created goes with its directory (SPEC §10).
        assert!(!root_dir.exists(), "{}", r.report());
    }
    // A root that existed before the run stays, holding nothing the run made.
    std::fs::create_dir(&root_dir).unwrap();
    let r = run(
        &wrap_args(&strs(&opts), &[&not_exec.display().to_string()]),
        b"",
    );
    r.expect_status(126);
    let left: Vec<_> = std::fs::read_dir(&root_dir).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    // A --capture-dir the run created goes too; one that existed keeps only what it had.
    let new_cap = dir.path().join("new-cap");
    run(
        &wrap_args(&strs(&capture_opts(&new_cap)), &["mistyped-mcp-server-x"]),
        b"",
    )
    .expect_status(127);
    assert!(!new_cap.exists());
    let old_cap = dir.path().join("old-cap");
    std::fs::create_dir(&old_cap).unwrap();
    std::fs::write(old_cap.join("notes.txt"), "mine").unwrap();
    run(
        &wrap_args(&strs(&capture_opts(&old_cap)), &["mistyped-mcp-server-x"]),
        b"",
    )
    .expect_status(127);
    let names: Vec<String> = std::fs::read_dir(&old_cap)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["notes.txt"]);
}

/// SPEC §10: `assay capture read` of a DIR that does not exist (or is not a directory) is a usage
/// error that says so.
#[test]
fn capture_read_of_a_missing_directory_is_a_usage_error() {
    let dir = tempdir();
    let missing = dir.path().join("nope");
    let r = run(
        &[
            "capture".into(),
            "read".into(),
            missing.display().to_string(),
        ],
        b"",
    );
    r.expect_status(2);
    assert!(r.stdout.is_empty(), "{}", r.report());
    assert!(
        r.stderr.contains("does not exist") && r.stderr.contains("nope"),
        "{}",
        r.report()
    );
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let r = run(
        &["capture".into(), "read".into(), file.display().to_string()],
        b"",
    );
    r.expect_status(2);
    assert!(r.stderr.contains("not a directory"), "{}", r.report());
}

/// SPEC §3 item 7: a server that ignores stdin EOF and SIGTERM ends by default — no
/// `--drain-timeout` — once no request is pending and it stays silent for `idle_drain` (1 s).
#[test]
fn a_stubborn_server_ends_by_default() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let r = run(
        &wrap_args(
            &strs(&capture_opts(&cap)),
            &["python3", &fault_server(), "ignore"],
        ),
        &session(),
    );
    r.expect_status(128 + 9);
    let mut e = ended("signaled", Value::Null, json!(9));
    e.core_dumped = Some(json!(false));
    e.kill_requested = true;
    assert_stop_record(&cap, &e);
    assert!(r.elapsed < Duration::from_secs(10), "{:?}", r.elapsed);
}

/// SPEC §3 item 7: no idle deadline while a client request awaits its response — a tool call the
/// server answers 2.5 s after the client closed its input is delivered, and nothing is killed
/// before it; `--idle-drain 0` waits forever (here bounded by `--drain-timeout`).
#[test]
fn a_pending_request_keeps_the_drain_open() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let r = run(
        &wrap_args(
            &strs(&capture_opts(&cap)),
            &["python3", &fault_server(), "slow"],
        ),
        &script(&[INIT, &call(2, "echo", r#"{"text":"late"}"#)]),
    );
    // The answer arrived 2.5 s after EOF; the silent server was ended 1 s after that.
    assert_eq!(
        r.response(json!(2))["result"]["isError"],
        false,
        "{}",
        r.report()
    );
    r.expect_status(128 + 9);
    assert!(r.elapsed >= Duration::from_millis(3400), "{:?}", r.elapsed);
    let s = stop_of(&cap);
    assert_eq!(s["assay_kill_requested"], true, "{s}");
    assert_eq!(s["session_end"], "client_closed", "{s}");

    let cap = dir.path().join("cap0");
    let mut opts = capture_opts(&cap);
    opts.extend(["--idle-drain", "0", "--drain-timeout", "4"].map(String::from));
    let r = run(
        &wrap_args(&strs(&opts), &["python3", &fault_server(), "ignore"]),
        &script(&[INIT]),
    );
    r.expect_status(128 + 9);
    assert!(r.elapsed >= Duration::from_secs(4), "{:?}", r.elapsed);
}

/// SPEC §3 item 7: a request the client cancelled is not awaited. The cancellation comes in the
/// same read as its request (their notes reach the pending set together, in line order): the
/// idle deadline (1 s) applies at once, and the silent server is ended long before the 60 s
/// after which it would have answered (an awaited request would keep the session past them).
#[test]
fn a_cancelled_request_does_not_keep_the_drain_open() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}"#;
    let r = run(
        &wrap_args(
            &strs(&capture_opts(&cap)),
            &["python3", &fault_server(), "slow", "60"],
        ),
        &script(&[INIT, &call(2, "echo", r#"{"text":"late"}"#), cancel]),
    );
    r.expect_status(128 + 9);
    assert!(r.elapsed < Duration::from_secs(30), "{:?}", r.elapsed);
    assert!(
        !r.lines().iter().any(|v| v.get("id") == Some(&json!(2))),
        "{}",
        r.report()
    );
    let s = stop_of(&cap);
    assert_eq!(s["assay_kill_requested"], true, "{s}");
    assert_eq!(s["session_end"], "client_closed", "{s}");
}

/// A wrapper whose stdout the test reads itself (or not at all).
struct Raw {
    child: std::process::Child,
    stdout: std::process::ChildStdout,
}

fn raw_wrap(opts: &[String], server: &[&str], input: &[u8]) -> Raw {
    use std::io::Write;
    let mut cmd = wrap_command(&strs(opts), server);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    // The client sends its lines and closes its input at once.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    let stdout = child.stdout.take().unwrap();
    Raw { child, stdout }
}

impl Raw {
    /// Waits for the wrapper to exit; kills it and panics after 60 s.
    fn wait(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!("the wrapper hung");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// SPEC §3.1a: a client that closes its input and then reads slowly receives every byte the
/// server wrote (here 1 MiB, read 32 KiB every 150 ms: about 5 s, far longer than the 2 s
/// window), and the session ends normally.
#[test]
fn a_slow_reader_loses_nothing() {
    use std::io::Read;
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let size = 1 << 20;
    let mut w = raw_wrap(
        &capture_opts(&cap),
        &["python3", &fault_server(), "flood", &size.to_string()],
        &script(&[INIT]),
    );
    let mut seen = Vec::new();
    let mut buf = vec![0u8; 32 * 1024];
    let started = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(150));
        let n = w.stdout.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
        assert!(started.elapsed() < Duration::from_secs(120), "no end");
    }
    assert!(
        started.elapsed() > Duration::from_secs(3),
        "the reading was slow"
    );
    let status = w.wait();
    assert_eq!(status.code(), Some(0));
    let lines: Vec<&[u8]> = seen
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 2, "the initialize response and the flood");
    let v: Value = serde_json::from_slice(lines[1]).expect("the last line arrived whole");
    assert_eq!(v["params"]["data"].as_str().unwrap().len(), size);
    assert_stop_record(&cap, &ended_without_calls());
}

/// A normal ending of a session that made no tool call.
fn ended_without_calls() -> Expected {
    let mut e = ended("exited", json!(0), Value::Null);
    e.written = Some(0);
    e
}

/// SPEC §3.1a: a client that stopped reading (and keeps its end of the output pipe open) never
/// hangs the wrapper: once the server's output has closed and the client accepted nothing for
/// 2 s, the output worker is abandoned and the session ends as `proxy_error`.
#[test]
fn a_stalled_reader_is_bounded() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut w = raw_wrap(
        &capture_opts(&cap),
        &["python3", &fault_server(), "flood", &(4 << 20).to_string()],
        &script(&[INIT]),
    );
    let started = Instant::now();
    let status = w.wait();
    let took = started.elapsed();
    assert_eq!(status.code(), Some(3), "{status:?}");
    assert!(took < Duration::from_secs(15), "{took:?}");
    let s = stop_of(&cap);
    assert_eq!(s["session_end"], "proxy_error", "{s}");
    assert_eq!(s["termination"], "exited", "{s}");
    assert_eq!(s["exit_code"], 0, "{s}");
    let log = std::fs::read_to_string(cap.join("proxy-stderr.log")).unwrap();
    assert!(log.contains("accepted no output"), "{log}");
    drop(w.stdout);
}

/// Ctrl-C in a terminal: SIGINT goes to the whole foreground process group, the wrapper and its
/// server alike. With the CLI's defaults the session still ends with a closed capture.
#[test]
fn ctrl_c_leaves_a_closed_capture() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut cmd = wrap_command(
        &strs(&capture_opts(&cap)),
        &["python3", &fault_server(), "linger"],
    );
    cmd.process_group(0);
    let mut live = Live::spawn(cmd);
    live.send(INIT);
    live.read_until(|seen| seen.contains(&b'\n'));
    let pid = server_pid(&cap);
    assert!(alive(pid));
    // SAFETY: signals the process group this test created.
    assert_eq!(
        unsafe { libc::kill(-(live.child.id() as i32), libc::SIGINT) },
        0
    );
    let status = live.wait();
    assert_gone(pid);
    let s = stop_of(&cap);
    assert_eq!(s["session_end"], "client_closed", "{s}");
    // Python ends on an unhandled KeyboardInterrupt by re-raising SIGINT.
    assert_eq!(s["termination"], "signaled", "{s}");
    assert_eq!(s["signal"], libc::SIGINT, "{s}");
    assert_eq!(s["assay_kill_requested"], false, "{s}");
    assert_eq!(status.code(), Some(128 + libc::SIGINT), "{status:?}");
    let (r, _) = read_verdict(&cap);
    r.expect_status(0);
}

/// SPEC §3.1a under an old kernel (no pidfds: the PID is the handle): a forwarded SIGTERM still
/// reaches the server and the capture is closed.
#[test]
fn signals_are_forwarded_by_pid_where_there_are_no_pidfds() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut opts = capture_opts(&cap);
    opts.extend(["--idle-drain".to_string(), "0".to_string()]);
    let cmd = refused_wrap("old", &strs(&opts), &["python3", &fault_server(), "linger"]);
    let mut live = Live::spawn(cmd);
    live.send(INIT);
    live.read_until(|seen| seen.contains(&b'\n'));
    let pid = server_pid(&cap);
    live.close_stdin();
    std::thread::sleep(Duration::from_millis(300));
    crate::lifecycle::kill(&live.child, libc::SIGTERM);
    let status = live.wait();
    assert_eq!(status.code(), Some(128 + 15), "{status:?}");
    assert_gone(pid);
    let mut e = ended_without_calls();
    e.termination = "signaled";
    e.exit_code = Value::Null;
    e.signal = json!(15);
    e.core_dumped = Some(json!(false));
    assert_stop_record(&cap, &e);
}
