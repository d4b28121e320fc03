//! Lifecycle rows of the fault matrix (SPEC §3 items 3, 7, 8, 9, §3.1, §4.1, §4.4): never hang,
//! never orphan a server, never lose a session's ending. Real wrapper processes, real servers,
//! real signals. Every wait has a generous deadline, so a regression fails instead of hanging.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::faults::{
    Expected, assert_log_write_failure, assert_stop_record, ended, session, stop_of,
};
use crate::util::*;

/// How long anything may take before the test calls it a hang (the machine may be loaded).
pub(crate) const HANG: Duration = Duration::from_secs(30);

/// A wrapper process the test talks to while it runs, as an MCP client would.
pub(crate) struct Live {
    pub(crate) child: Child,
    pub(crate) stdin: Option<ChildStdin>,
    /// Chunks of the wrapper's stdout; the channel closes at end of file.
    out: mpsc::Receiver<Vec<u8>>,
    pub(crate) seen: Vec<u8>,
    pub(crate) eof: bool,
    err: std::thread::JoinHandle<String>,
}

impl Live {
    pub(crate) fn spawn(mut cmd: Command) -> Live {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn assay");
        let stdin = child.stdin.take();
        let mut stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let (tx, out) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Live {
            child,
            stdin,
            out,
            seen: Vec::new(),
            eof: false,
            err,
        }
    }

    pub(crate) fn wrap(opts: &[String], server: &[&str]) -> Live {
        Live::spawn(wrap_command(&strs(opts), server))
    }

    pub(crate) fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Reads until `pred(seen)` holds or end of file; panics after [`HANG`].
    pub(crate) fn read_until(&mut self, pred: impl Fn(&[u8]) -> bool) {
        let deadline = Instant::now() + HANG;
        while !pred(&self.seen) && !self.eof {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.out.recv_timeout(left) {
                Ok(chunk) => self.seen.extend_from_slice(&chunk),
                Err(mpsc::RecvTimeoutError::Disconnected) => self.eof = true,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                    "no progress within {HANG:?}; stdout so far:\n{}",
                    String::from_utf8_lossy(&self.seen)
                ),
            }
        }
    }

    /// Reads the wrapper's stdout to end of file (the client's view of "connection closed").
    pub(crate) fn read_to_eof(&mut self) {
        self.read_until(|_| false);
    }

    /// Waits for the wrapper to exit; kills it and panics after [`HANG`].
    pub(crate) fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + HANG;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "the wrapper hung (> {HANG:?}); stdout:\n{}",
                    String::from_utf8_lossy(&self.seen)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn stderr(self) -> String {
        drop(self.stdin);
        self.err.join().unwrap()
    }
}

/// The server's PID as the session context recorded it.
pub(crate) fn server_pid(cap: &Path) -> i32 {
    let deadline = Instant::now() + HANG;
    let path = cap.join("session-context.json");
    loop {
        if let Ok(bytes) = std::fs::read(&path) {
            if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                return v["data"]["server_pid"].as_i64().unwrap() as i32;
            }
        }
        assert!(Instant::now() < deadline, "no session context");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// True while `pid` is a live process (a zombie waiting for a reaper counts as gone: it runs
/// nothing and holds nothing but its PID).
pub(crate) fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next());
            !matches!(state, Some('Z') | Some('X'))
        }
        Err(_) => false,
    }
}

/// Asserts the server `pid` is gone within [`HANG`]; kills it if not, so no test leaks it.
pub(crate) fn assert_gone(pid: i32) {
    let deadline = Instant::now() + HANG;
    while alive(pid) {
        if Instant::now() >= deadline {
            // SAFETY: best-effort cleanup of the orphan this test found.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("server {pid} outlived the wrapper (orphaned)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn kill(child: &Child, sig: i32) {
    // SAFETY: signalling our own unreaped child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// The crash server's partial response to call `id`: its last bytes, without a newline.
fn fragment(id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"partial"#)
}

fn crashed() -> Expected {
    let mut e = ended("signaled", Value::Null, json!(9));
    e.core_dumped = Some(json!(false));
    e.written = Some(1);
    e
}

/// SPEC §3 item 7: a server that dies mid-call. The client (a real reader of the wrapper's
/// stdout) sees end of file with its stdin still open, right after the server's unterminated
/// last bytes; it then closes its side as an MCP client does, and the session ends normally.
#[test]
fn server_dying_mid_call_gives_the_client_eof_and_a_stop_record() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut live = Live::wrap(&capture_opts(&cap), &["python3", &fault_server(), "crash"]);
    live.send(INIT);
    live.send(&call(2, "echo", r#"{"text":"a"}"#));
    live.read_to_eof();
    let out = String::from_utf8(live.seen.clone()).unwrap();
    let (first, last) = out.split_once('\n').expect("initialize response");
    assert!(first.contains("protocolVersion"), "{out}");
    assert_eq!(last, fragment(2), "the server's last bytes end the output");
    live.close_stdin();
    let status = live.wait();
    assert_eq!(status.code(), Some(128 + 9));
    assert_stop_record(&cap, &crashed());
}

/// SPEC §3 item 7: after the server's output ends, a client that keeps its input open and says
/// nothing (the TypeScript SDK waits for the process to exit) does not hang the wrapper.
#[test]
fn silent_client_after_server_eof_does_not_hang_the_wrapper() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut live = Live::wrap(&capture_opts(&cap), &["python3", &fault_server(), "crash"]);
    live.send(INIT);
    live.send(&call(2, "echo", r#"{"text":"a"}"#));
    live.read_to_eof();
    let status = live.wait();
    assert_eq!(status.code(), Some(128 + 9));
    assert_stop_record(&cap, &crashed());
    drop(live.stderr());
}

/// SPEC §3 item 7: a client line that can no longer be forwarded ends the session as
/// `proxy_error`, and no byte of the wrapper's (here the refusal of a denied call) is ever
/// glued onto the server's unterminated last line.
#[test]
fn client_line_after_server_eof_is_proxy_error_and_nothing_is_glued() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut live = Live::wrap(&capture_opts(&cap), &["python3", &fault_server(), "crash"]);
    live.send(INIT);
    live.send(&call(2, "echo", r#"{"text":"a"}"#));
    live.read_until(|seen| seen.ends_with(fragment(2).as_bytes()));
    // The wrapper would refuse this call itself: its refusal must not follow the fragment.
    live.send(&call(3, "exec", "{}"));
    live.read_to_eof();
    let status = live.wait();
    let out = String::from_utf8(live.seen.clone()).unwrap();
    assert!(out.ends_with(&fragment(2)), "{out}");
    assert!(!out.contains("P_TOOL_DENIED"), "{out}");
    assert_eq!(status.code(), Some(3));
    let stderr = live.stderr();
    assert!(stderr.contains("cannot be forwarded"), "{stderr}");
    let mut e = crashed();
    e.session_end = "proxy_error";
    e.decision_log = "incomplete";
    e.verdict = 1;
    assert_stop_record(&cap, &e);
}

/// SPEC §3 item 9: whatever ends the wrapper — SIGKILL included — ends its server.
#[test]
fn sigkill_of_the_wrapper_leaves_no_orphan() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    // The server ignores SIGTERM and stdin EOF: only PR_SET_PDEATHSIG can end it.
    let mut live = Live::wrap(&capture_opts(&cap), &["python3", &fault_server(), "ignore"]);
    live.send(INIT);
    live.read_until(|seen| seen.contains(&b'\n'));
    let pid = server_pid(&cap);
    assert!(alive(pid));
    kill(&live.child, libc::SIGKILL);
    assert_eq!(live.wait().signal(), Some(libc::SIGKILL));
    assert_gone(pid);
}

/// The official SDKs' shutdown: close stdin, wait about 2 s, SIGTERM the wrapper (a wrapper
/// that already ended is left alone). Returns the wrapper's status and the server's PID.
pub(crate) fn sdk_shutdown(cap: &Path, extra: &[&str], server: &str) -> (ExitStatus, i32, Live) {
    let mut opts = capture_opts(cap);
    opts.extend(extra.iter().map(|s| s.to_string()));
    let mut live = Live::wrap(&opts, &["python3", &fault_server(), server]);
    for line in String::from_utf8(session()).unwrap().lines() {
        live.send(line);
    }
    live.read_until(|seen| seen.iter().filter(|b| **b == b'\n').count() >= 3);
    let pid = server_pid(cap);
    live.close_stdin();
    std::thread::sleep(Duration::from_secs(2));
    if live.child.try_wait().unwrap().is_none() {
        kill(&live.child, libc::SIGTERM);
    }
    let status = live.wait();
    (status, pid, live)
}

/// With `--no-forward-signals` (and no idle deadline, so the lingering server outlives stdin
/// EOF) the SIGTERM ends the wrapper (no handler is installed), and the server goes with it: no
/// orphan. No stop record can be written.
#[test]
fn sdk_shutdown_without_forward_signals_leaves_no_orphan() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let (status, pid, _live) = sdk_shutdown(
        &cap,
        &["--no-forward-signals", "--idle-drain", "0"],
        "linger",
    );
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    assert_gone(pid);
    assert!(!cap.join("session-stop.json").exists());
}

/// SPEC §3 item 9: the CLI forwards by default (`--forward-signals` is still accepted). With no
/// idle deadline the server outlives stdin EOF; the SIGTERM goes to it and the session ends
/// through the normal path: drain, cleanup, a stop record with the observed signal, exit 143, a
/// closed capture.
#[test]
fn sdk_shutdown_forwards_sigterm_by_default_and_closes_the_capture() {
    for extra in [
        &["--idle-drain", "0"][..],
        &["--forward-signals", "--idle-drain", "0"],
    ] {
        let dir = tempdir();
        let cap = dir.path().join("cap");
        let (status, pid, live) = sdk_shutdown(&cap, extra, "linger");
        let stderr = live.stderr();
        assert_eq!(
            status.code(),
            Some(128 + 15),
            "{extra:?} {status:?}\n{stderr}"
        );
        assert_gone(pid);
        let mut e = ended("signaled", Value::Null, json!(15));
        e.core_dumped = Some(json!(false));
        assert_stop_record(&cap, &e);
    }
}

/// SPEC §3 item 7, 9 with the CLI's defaults (no flag): the SDK shutdown of a server that
/// outlives stdin EOF leaves a closed capture, whichever ends it first: the idle deadline (1 s
/// quiet with no request pending: the bounded cleanup's kill) or the client's SIGTERM 2 s after
/// EOF (forwarded by default).
#[test]
fn sdk_shutdown_with_cli_defaults_closes_the_capture() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let (status, pid, live) = sdk_shutdown(&cap, &[], "linger");
    let stderr = live.stderr();
    assert_gone(pid);
    let mut e = if status.code() == Some(128 + 9) {
        let log = std::fs::read_to_string(cap.join("proxy-stderr.log")).unwrap();
        assert!(log.contains("treated as done"), "{log}");
        let mut e = ended("signaled", Value::Null, json!(9));
        e.kill_requested = true;
        e
    } else {
        assert_eq!(status.code(), Some(128 + 15), "{status:?}\n{stderr}");
        ended("signaled", Value::Null, json!(15))
    };
    e.core_dumped = Some(json!(false));
    assert_stop_record(&cap, &e);
}

/// SPEC §3 item 3: the server inherits exactly descriptors 0, 1 and 2 — here from a wrapper
/// started with extra descriptors open without close-on-exec.
#[test]
fn server_inherits_only_stdin_stdout_stderr() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut cmd = wrap_command(
        &strs(&capture_opts(&cap)),
        &["python3", &fault_server(), "fds"],
    );
    // SAFETY: pipe(2) and dup2 only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let mut fds = [0; 2];
            if libc::pipe(fds.as_mut_ptr()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Plain descriptors with no close-on-exec, as a C host would leave them.
            libc::dup2(fds[0], 40);
            libc::dup2(fds[1], 41);
            Ok(())
        });
    }
    let r = run_command(cmd, &script(&[INIT]));
    r.expect_status(0);
    let log = std::fs::read_to_string(cap.join("proxy-stderr.log")).unwrap();
    assert!(log.lines().any(|l| l == "fds: 0 1 2"), "{log}");
    // The wrapper blocks SIGPIPE and SIGXFSZ for its own writes; the server starts with the
    // mask the wrapper had (none blocked here).
    assert!(
        log.lines().any(|l| l == "sigblk: 0000000000000000"),
        "{log}"
    );
}

/// SPEC §3 item 8: an over-long first client line is client bytes — a session existed, and it
/// ended as `proxy_error` with its stop record.
#[test]
fn first_line_over_max_line_bytes_writes_the_stop_record() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut opts = capture_opts(&cap);
    opts.extend(["--max-line-bytes".to_string(), "100".to_string()]);
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"{}"}}"#,
        "x".repeat(200)
    );
    let r = run(
        &wrap_args(&strs(&opts), &["python3", &demo_server()]),
        &script(&[&long]),
    );
    r.expect_status(3);
    assert!(r.stdout.is_empty(), "{}", r.report());
    let s = stop_of(&cap);
    assert_eq!(s["session_end"], "proxy_error", "{s}");
    assert_eq!(s["decision_log"], "incomplete", "{s}");
    assert_eq!(s["decision_events_written"], 0, "{s}");
    assert!(!cap.join("no-session.json").exists());
}

/// SPEC §4.1: a decision-log write past RLIMIT_FSIZE poisons the writer; SIGXFSZ (default
/// disposition here: it would kill the process) must not end the wrapper.
#[test]
fn decision_log_past_rlimit_fsize_poisons_instead_of_killing_the_wrapper() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut lines = vec![INIT.to_string()];
    for i in 0..8 {
        lines.push(call(10 + i, "echo", r#"{"text":"a"}"#));
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let mut cmd = wrap_command(&strs(&capture_opts(&cap)), &["python3", &demo_server()]);
    // SAFETY: setrlimit and signal only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 2048,
                rlim_max: 2048,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            Ok(())
        });
    }
    let r = run_command(cmd, &script(&refs));
    let (_, dropped) = assert_log_write_failure(&r, &cap, 8);
    assert!(dropped >= 1, "{dropped} dropped");
}

/// Runs `cmd` with stdin closed; kills it and panics after [`HANG`].
fn run_bounded(cmd: Command) -> (ExitStatus, String) {
    let mut live = Live::spawn(cmd);
    live.close_stdin();
    let status = live.wait();
    (status, live.stderr())
}

/// SPEC §4.1, §6: a FIFO at an append-mode decision-log path is a configuration error found
/// without blocking; nothing is spawned.
#[test]
fn fifo_at_an_append_mode_decision_log_is_a_config_error() {
    let dir = tempdir();
    let fifo = dir.path().join("decisions.ndjson");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let marker = dir.path().join("spawned");
    let opts = evidence_opts(&["--decision-log".into(), fifo.display().to_string()]);
    let cmd = wrap_command(
        &strs(&opts),
        &["/bin/sh", "-c", &format!("touch {}", marker.display())],
    );
    let (status, stderr) = run_bounded(cmd);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("assay: "), "{stderr}");
    assert!(stderr.contains("decision-log"), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
    assert!(!marker.exists(), "nothing is spawned");
}

/// SPEC §3.1: a host that ignores SIGCHLD passes that on; the CLI resets it, so the server's
/// status is still observed and nothing is killed.
#[test]
fn cli_started_with_sigchld_ignored_still_observes_the_server() {
    let dir = tempdir();
    let cap = dir.path().join("cap");
    let mut cmd = wrap_command(
        &strs(&capture_opts(&cap)),
        &["python3", &fault_server(), "exit7"],
    );
    // SAFETY: signal(2) only, between fork and exec; an ignored disposition survives exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGCHLD, libc::SIG_IGN);
            Ok(())
        });
    }
    let r = run_command(cmd, &session());
    r.expect_status(7);
    assert_stop_record(&cap, &ended("exited", json!(7), Value::Null));
}

/// SPEC §4.4: with an append-mode log, the coverage report counts this invocation's lines only.
#[test]
fn coverage_with_an_append_mode_log_counts_this_invocation_only() {
    let dir = tempdir();
    let log = dir.path().join("decisions.ndjson");
    let run_once = |name: &str, lines: &[&str]| -> Value {
        let cov = dir.path().join(name);
        let opts = evidence_opts(&[
            "--decision-log".into(),
            log.display().to_string(),
            "--coverage-out".into(),
            cov.display().to_string(),
        ]);
        run(
            &wrap_args(&strs(&opts), &["python3", &demo_server()]),
            &script(lines),
        )
        .expect_status(0);
        read_json(&cov)
    };
    let echo2 = call(2, "echo", r#"{"text":"a"}"#);
    let echo3 = call(3, "echo", r#"{"text":"b"}"#);
    let first = run_once("cov1.json", &[INIT, &echo2, &echo3]);
    assert_eq!(
        first["calls"]["echo"],
        json!({"allow": 2, "deny": 0, "error": 0})
    );
    let exec = call(3, "exec", "{}");
    let second = run_once("cov2.json", &[INIT, &echo2, &exec]);
    assert_eq!(decision_lines(&log).len(), 4, "the log holds both sessions");
    assert_eq!(
        second["calls"]["echo"],
        json!({"allow": 1, "deny": 0, "error": 0}),
        "{second}"
    );
    assert_eq!(
        second["calls"]["exec"],
        json!({"allow": 0, "deny": 1, "error": 0})
    );
    assert_eq!(second["decision_lines"], 2);
}
