//! Real launchers in front of real servers (issue 45, SPEC §3 item 9, §3.1, §4.3): almost every
//! host configuration starts its server through a launcher — `npx`, `sh -c`, a shell script,
//! `mcp-remote` for a remote server — so the process the wrapper spawns is rarely the server.
//! Each launcher here runs behind the real `assay mcp wrap --capture-root R`, ended four ways:
//! the official TypeScript SDK client closing normally (tests/interop/launcher_client.mjs), the
//! official Python SDK client closing normally (tests/fixtures/launcher_client.py), SIGTERM to
//! the wrapper mid-session and SIGKILL to the wrapper mid-session (a raw client). Each ending
//! asserts the capture's verdict (`closed`; `unknown` after SIGKILL, which leaves no stop
//! record, SPEC §4.3), the stop record's observed ending, and that **no process of the server's
//! tree is alive afterwards**: every process the wrapper starts inherits an environment marker
//! the test sets (`ASSAY_LAUNCHER_TEST_MARK`, random per case), found in `/proc/*/environ`. A
//! case that leaves one fails and kills it, so one failure does not poison the machine.
//!
//! Every case runs [`RUNS`] times (a flaky launcher test is a defect); the four endings of a
//! launcher run side by side in threads of their own.

mod http;
mod scan;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::lifecycle::{HANG, Live};
use crate::util::*;
use scan::{Marked, Proc};

/// How many times each launcher × ending runs.
const RUNS: usize = 5;

/// After the wrapper is SIGKILLed, every process of its server's tree is gone within this
/// (SPEC §3 item 9: a watchdog in the server's group ends it).
const AFTER_SIGKILL: Duration = Duration::from_secs(2);

/// After a session that ended any other way (the client has seen the wrapper exit): the stop
/// record is written only once no process of the group is left (issue 45), so nothing should be
/// left at all; the bound is the SIGKILL window plus a margin for a loaded machine.
const AFTER_EXIT: Duration = Duration::from_millis(2500);

/// The environment variable every process of a case's tree carries.
const MARK: &str = "ASSAY_LAUNCHER_TEST_MARK";

/// The four ways a session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// `@modelcontextprotocol/sdk` StdioClientTransport: initialize, tools/list, tools/call,
    /// `close()` (stdin end, ~2 s, SIGTERM, ~2 s, SIGKILL).
    TsSdk,
    /// `mcp.client.stdio.stdio_client` + `ClientSession`, the same calls, leaving the context
    /// (stdin close, 2 s, SIGTERM to the process group, 2 s, SIGKILL).
    PythonSdk,
    /// A raw client: the same calls, then SIGTERM to the wrapper with its stdin still open.
    Sigterm,
    /// The same, then SIGKILL to the wrapper.
    Sigkill,
}

const ENDINGS: [Ending; 4] = [
    Ending::TsSdk,
    Ending::PythonSdk,
    Ending::Sigterm,
    Ending::Sigkill,
];

/// What the stop record must say about the server's leader; `None`: not determined (the
/// launcher's own reaction to a signal, a race the SPEC leaves open).
#[derive(Debug, Clone, Copy, Default)]
struct Expect {
    termination: Option<&'static str>,
    exit_code: Option<i64>,
    signal: Option<i64>,
    kill_requested: Option<bool>,
    group_killed: Option<bool>,
}

impl Expect {
    fn exited(code: i64) -> Expect {
        Expect {
            termination: Some("exited"),
            exit_code: Some(code),
            kill_requested: Some(false),
            group_killed: Some(false),
            ..Expect::default()
        }
    }

    fn signaled(signal: i64) -> Expect {
        Expect {
            termination: Some("signaled"),
            signal: Some(signal),
            ..Expect::default()
        }
    }

    fn killed(self, kill_requested: bool, group_killed: bool) -> Expect {
        Expect {
            kill_requested: Some(kill_requested),
            group_killed: Some(group_killed),
            ..self
        }
    }
}

/// One launcher: the server command after `--`, where and with what it runs, the tool call the
/// clients make, and what its stop record says for each ending.
struct Launcher {
    name: &'static str,
    server: Vec<String>,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    /// The tool every client calls, its arguments (JSON), and a word its answer echoes.
    tool: &'static str,
    arguments: &'static str,
    /// A tool the server offers that the policy refuses: hidden from every listing.
    hidden: &'static str,
    /// The stop record of `ending`; `sigterm_sent`: the SDK client's close took past its
    /// 2 s SIGTERM (a loaded machine), so the wrapper also received a SIGTERM.
    expect: fn(ending: Ending, sigterm_sent: bool) -> Expect,
}

/// The policy of every case: everything allowed but two tools, which are hidden.
const POLICY: &str = "version: \"1\"\nname: launchers\nallow: [\"*\"]\ndeny: [\"get-env\", \"exec\"]\nhide_refused_tools: true\n";

/// The word each client's call carries, and expects back.
const WORD: &str = "through-the-launcher";

fn interop() -> PathBuf {
    root().join("tests/interop")
}

fn fixture(name: &str) -> String {
    root()
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// npm run offline: the packages come from tests/interop/node_modules, and a registry that
/// cannot be reached makes any attempt to use the network fail at once.
fn npm_offline(cache: &Path) -> Vec<(String, String)> {
    vec![
        ("npm_config_offline".into(), "true".into()),
        ("npm_config_registry".into(), "http://127.0.0.1:9/".into()),
        ("npm_config_cache".into(), cache.display().to_string()),
        ("npm_config_update_notifier".into(), "false".into()),
    ]
}

/// Whether the launcher suites can run: node with the pinned packages and the Python SDK.
fn ready(suite: &str) -> bool {
    can_run(suite, &[Needs::Node, Needs::PythonVenv])
}

/// Runs every ending of `l` [`RUNS`] times (the endings in parallel threads), then fails with
/// every failure seen.
fn run_launcher(l: &Launcher) {
    let started = Instant::now();
    let failures: Vec<String> = std::thread::scope(|s| {
        let threads: Vec<_> = ENDINGS
            .iter()
            .map(|&ending| {
                s.spawn(move || {
                    (0..RUNS)
                        .filter_map(|run| {
                            let outcome = std::panic::catch_unwind(|| run_case(l, ending));
                            match outcome {
                                Ok(Ok(())) => None,
                                Ok(Err(e)) => Some(format!("{} {ending:?} run {run}: {e}", l.name)),
                                Err(p) => Some(format!(
                                    "{} {ending:?} run {run}: panicked: {}",
                                    l.name,
                                    panic_text(&p)
                                )),
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("the case thread catches its panics"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} {} sessions failed ({:?}):\n\n{}",
        failures.len(),
        RUNS * ENDINGS.len(),
        l.name,
        started.elapsed(),
        failures.join("\n\n")
    );
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(not a string)".into())
}

/// One session of `l` ended by `ending`.
fn run_case(l: &Launcher, ending: Ending) -> Result<(), String> {
    let dir = tempdir();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let capture_root = dir.path().join("captures");
    let marked = Marked::new();
    let mut wrapper = vec![
        bin().display().to_string(),
        "mcp".into(),
        "wrap".into(),
        "--policy".into(),
        policy.display().to_string(),
        "--event-source".into(),
        "assay://test/launchers".into(),
        "--label".into(),
        l.name.into(),
        "--capture-root".into(),
        capture_root.display().to_string(),
        "--".into(),
    ];
    wrapper.extend(l.server.iter().cloned());
    let env = |cmd: &mut Command| {
        cmd.current_dir(&l.cwd)
            .env(MARK, marked.mark())
            .envs(l.env.iter().map(|(k, v)| (k, v)));
    };
    let (ended_at, sigterm_sent, wrapper_status, what) = match ending {
        Ending::TsSdk | Ending::PythonSdk => {
            let mut cmd = if ending == Ending::TsSdk {
                let mut c = Command::new("node");
                c.arg(interop().join("launcher_client.mjs"));
                c
            } else {
                let mut c = Command::new(python());
                c.arg(fixture("launcher_client.py"));
                c
            };
            cmd.args([l.tool, l.arguments]).args(&wrapper);
            env(&mut cmd);
            let out = sdk_client(cmd, dir.path())?;
            let ended_at = Instant::now();
            check_client(l, &out)?;
            let close_ms = out["close_ms"].as_u64().unwrap_or(0);
            (
                ended_at,
                close_ms >= 2000,
                None,
                format!("close took {close_ms} ms"),
            )
        }
        Ending::Sigterm | Ending::Sigkill => {
            let mut cmd = Command::new(&wrapper[0]);
            cmd.args(&wrapper[1..]);
            env(&mut cmd);
            let mut live = Live::spawn(cmd);
            raw_session(l, &mut live)?;
            let sig = if ending == Ending::Sigterm {
                libc::SIGTERM
            } else {
                libc::SIGKILL
            };
            crate::lifecycle::kill(&live.child, sig);
            let status = live.wait();
            let ended_at = Instant::now();
            let stderr = live.stderr();
            (ended_at, false, Some(status), format!("stderr: {stderr}"))
        }
    };
    let bound = if ending == Ending::Sigkill {
        AFTER_SIGKILL
    } else {
        AFTER_EXIT
    };
    let mut left = marked.wait_gone(ended_at + bound);
    if ending == Ending::Sigkill {
        // SPEC §3 item 9: a SIGKILL of the wrapper ends every process of the server's group
        // (the watchdog); a descendant that left the group and the session (`setsid`) is
        // reached only by the subreaper, which died with the wrapper (docs/decisions.md).
        // `wait_gone` has killed it; what is left to judge is the group.
        left.retain(|p| !p.left_the_session());
    }
    let capture = one_capture(&capture_root)?;
    let verdict = verdict_of(&capture, ending)?;
    let record = check_stop(l, ending, sigterm_sent, &capture, wrapper_status)?;
    if !left.is_empty() {
        return Err(format!(
            "{} process(es) of the server's tree still alive {bound:?} after the session \
             ended (killed now):\n{}\nverdict {verdict}\nstop {record}\n{what}",
            left.len(),
            Proc::describe(&left)
        ));
    }
    Ok(())
}

/// Runs an SDK client to its end (bounded); returns the JSON object it printed.
fn sdk_client(mut cmd: Command, dir: &Path) -> Result<Value, String> {
    let out_path = dir.join("client.out");
    let err_path = dir.join("client.err");
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {shown}: {e}"))?;
    let status = wait_bounded(&mut child, HANG * 2);
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let report = || format!("{shown}\nstatus {status:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    match status {
        Some(s) if s.success() => {}
        _ => return Err(format!("the SDK client failed: {}", report())),
    }
    serde_json::from_str(stdout.trim())
        .map_err(|e| format!("the SDK client printed no JSON ({e}): {}", report()))
}

/// Waits for `child`; kills it after `limit` (then `None`).
fn wait_bounded(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What an SDK client saw: the tool listed (and the refused one hidden), the call answered.
fn check_client(l: &Launcher, out: &Value) -> Result<(), String> {
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !tools.contains(&l.tool) || tools.contains(&l.hidden) {
        return Err(format!(
            "listed {tools:?}: want {} and not {}\n{out}",
            l.tool, l.hidden
        ));
    }
    let call = &out["call"];
    if call["isError"] == true || !call.to_string().contains(WORD) {
        return Err(format!("the call was not answered: {out}"));
    }
    Ok(())
}

/// initialize, notifications/initialized, tools/list, tools/call, each answer awaited.
fn raw_session(l: &Launcher, live: &mut Live) -> Result<(), String> {
    let answered = |id: u64| {
        move |seen: &[u8]| {
            seen.split(|b| *b == b'\n')
                .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
                .any(|v| v["id"] == id)
        }
    };
    live.send(INIT);
    live.read_until(answered(1));
    live.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    live.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    live.read_until(answered(2));
    live.send(&call(3, l.tool, l.arguments));
    live.read_until(answered(3));
    let seen = String::from_utf8_lossy(&live.seen).into_owned();
    let answer = seen
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|v| v["id"] == 3);
    match answer {
        Some(a) if a["result"]["isError"] != true && a.to_string().contains(WORD) => Ok(()),
        _ => Err(format!("the call was not answered:\n{seen}")),
    }
}

/// The one capture directory a session left under `root`.
fn one_capture(root: &Path) -> Result<PathBuf, String> {
    let dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .map_err(|e| format!("no capture root {}: {e}", root.display()))?
        .map(|e| e.unwrap().path())
        .collect();
    match dirs.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!("want one capture under the root, found {dirs:?}")),
    }
}

/// The reader's verdict: `closed`, or `unknown` without a stop record after SIGKILL.
fn verdict_of(capture: &Path, ending: Ending) -> Result<Value, String> {
    let (r, v) = read_verdict(capture);
    let want = if ending == Ending::Sigkill {
        (3, "unknown")
    } else {
        (0, "closed")
    };
    if r.status != Some(want.0) || v["closure"] != want.1 {
        let stderr = std::fs::read_to_string(capture.join("proxy-stderr.log")).unwrap_or_default();
        return Err(format!(
            "verdict {v} (exit {:?}), want {}\nstop: {}\nproxy-stderr.log:\n{stderr}",
            r.status,
            want.1,
            std::fs::read_to_string(capture.join("session-stop.json")).unwrap_or_default()
        ));
    }
    Ok(v)
}

/// The stop record against the launcher's expectation (none after SIGKILL), and the wrapper's
/// exit status against the record (SPEC §10) where the test saw it.
fn check_stop(
    l: &Launcher,
    ending: Ending,
    sigterm_sent: bool,
    capture: &Path,
    status: Option<ExitStatus>,
) -> Result<Value, String> {
    use std::os::unix::process::ExitStatusExt;
    let path = capture.join("session-stop.json");
    if ending == Ending::Sigkill {
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
            return Err("a stop record after SIGKILL of the wrapper".into());
        }
        return match status.and_then(|s| s.signal()) {
            Some(libc::SIGKILL) => Ok(Value::Null),
            _ => Err(format!("the wrapper was not ended by SIGKILL: {status:?}")),
        };
    }
    let s = read_json(&path)["data"].clone();
    let e = (l.expect)(ending, sigterm_sent);
    let mut wrong = Vec::new();
    let mut check = |field: &str, want: Option<Value>| {
        if let Some(w) = want {
            if s[field] != w {
                wrong.push(format!("{field} is {}, want {w}", s[field]));
            }
        }
    };
    check("session_end", Some(json!("client_closed")));
    check("termination", e.termination.map(|t| json!(t)));
    check("exit_code", e.exit_code.map(|c| json!(c)));
    check("signal", e.signal.map(|c| json!(c)));
    check("assay_kill_requested", e.kill_requested.map(|b| json!(b)));
    check("group_killed", e.group_killed.map(|b| json!(b)));
    if !s["group_killed"].is_boolean() {
        wrong.push(format!(
            "group_killed is {}, want a boolean",
            s["group_killed"]
        ));
    }
    // SPEC §10: the exit status follows the observed status.
    if let Some(status) = status {
        let want = match (
            s["termination"].as_str(),
            s["exit_code"].as_i64(),
            s["signal"].as_i64(),
        ) {
            (Some("exited"), Some(c), _) => Some(c as i32),
            (Some("signaled"), _, Some(n)) => Some(128 + n as i32),
            _ => None,
        };
        if want.is_some() && status.code() != want {
            wrong.push(format!("the wrapper exited {status:?}, want {want:?}"));
        }
    }
    if wrong.is_empty() {
        Ok(s)
    } else {
        Err(format!("stop record: {}\n{s}", wrong.join("; ")))
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The arguments of the echo tools: server-everything's takes `message`, the Python ones `text`.
const MESSAGE: &str = r#"{"message":"through-the-launcher"}"#;
const TEXT: &str = r#"{"text":"through-the-launcher"}"#;

/// `npx -y @modelcontextprotocol/server-everything` (stdio), resolved offline from
/// tests/interop/node_modules: npm exec → sh -c → node, the server a great-grandchild. It exits
/// at stdin EOF.
#[test]
fn npx_server_everything() {
    if !ready("launchers::npx_server_everything") {
        return;
    }
    let cache = tempdir();
    run_launcher(&Launcher {
        name: "npx",
        server: strings(&["npx", "-y", "@modelcontextprotocol/server-everything"]),
        cwd: interop(),
        env: npm_offline(cache.path()),
        tool: "echo",
        arguments: MESSAGE,
        hidden: "get-env",
        expect: |ending, sigterm_sent| match ending {
            Ending::TsSdk | Ending::PythonSdk if !sigterm_sent => Expect::exited(0),
            _ => Expect::default(),
        },
    });
}

/// `sh -c 'python3 launcher_server.py stubborn; :'`: the server is a grandchild (the `; :`
/// keeps sh from exec'ing it), keeps running after stdin EOF and traps SIGTERM: only the group
/// kill ends it.
#[test]
fn sh_c_stubborn_grandchild() {
    if !ready("launchers::sh_c_stubborn_grandchild") {
        return;
    }
    let script = format!("python3 {} stubborn; :", fixture("launcher_server.py"));
    run_launcher(&Launcher {
        name: "sh-c",
        server: vec!["sh".into(), "-c".into(), script],
        cwd: root(),
        env: Vec::new(),
        tool: "echo",
        arguments: TEXT,
        hidden: "exec",
        expect: |ending, sigterm_sent| match ending {
            Ending::TsSdk | Ending::PythonSdk if !sigterm_sent => {
                Expect::signaled(libc::SIGKILL as i64).killed(true, true)
            }
            _ => Expect::default(),
        },
    });
}

/// A server that starts a `setsid` daemon holding its stdout, then exits at stdin EOF: the
/// daemon is in a session of its own, outside the server's group.
#[test]
fn setsid_daemon_holding_stdout() {
    if !ready("launchers::setsid_daemon_holding_stdout") {
        return;
    }
    run_launcher(&Launcher {
        name: "setsid-stdout",
        server: vec![
            "python3".into(),
            fixture("launcher_server.py"),
            "daemon".into(),
        ],
        cwd: root(),
        env: Vec::new(),
        tool: "echo",
        arguments: TEXT,
        hidden: "exec",
        expect: |ending, sigterm_sent| match ending {
            Ending::TsSdk | Ending::PythonSdk if !sigterm_sent => Expect {
                termination: Some("exited"),
                exit_code: Some(0),
                ..Expect::default()
            },
            _ => Expect::default(),
        },
    });
}

/// The same with a daemon that holds nothing: nothing keeps the session open, and nothing may
/// outlive it.
#[test]
fn setsid_daemon_holding_nothing() {
    if !ready("launchers::setsid_daemon_holding_nothing") {
        return;
    }
    run_launcher(&Launcher {
        name: "setsid-detached",
        server: vec![
            "python3".into(),
            fixture("launcher_server.py"),
            "daemon-detached".into(),
        ],
        cwd: root(),
        env: Vec::new(),
        tool: "echo",
        arguments: TEXT,
        hidden: "exec",
        expect: |ending, sigterm_sent| match ending {
            Ending::TsSdk | Ending::PythonSdk if !sigterm_sent => Expect::exited(0),
            _ => Expect::default(),
        },
    });
}

/// `bash launcher_script.sh PYTHON`: a launcher script that runs the official Python SDK server
/// as a module (`python -m sdk_server`), without exec.
#[test]
fn bash_script_python_sdk_server() {
    if !ready("launchers::bash_script_python_sdk_server") {
        return;
    }
    run_launcher(&Launcher {
        name: "bash-script",
        server: vec!["bash".into(), fixture("launcher_script.sh"), python()],
        cwd: root(),
        env: Vec::new(),
        tool: "echo",
        arguments: TEXT,
        hidden: "exec",
        expect: |ending, sigterm_sent| match ending {
            Ending::TsSdk | Ending::PythonSdk if !sigterm_sent => Expect::exited(0),
            Ending::Sigterm => Expect::signaled(libc::SIGTERM as i64),
            _ => Expect::default(),
        },
    });
}

/// `npx mcp-remote http://127.0.0.1:PORT/mcp` (SPEC §10: remote servers through a stdio
/// bridge) in front of server-everything's Streamable HTTP mode, started here on a free
/// loopback port.
#[test]
fn npx_mcp_remote_streamable_http() {
    if !ready("launchers::npx_mcp_remote_streamable_http") {
        return;
    }
    let http = http::Everything::start();
    let cache = tempdir();
    let mut env = npm_offline(cache.path());
    env.push((
        "MCP_REMOTE_CONFIG_DIR".into(),
        cache.path().join("mcp-auth").display().to_string(),
    ));
    run_launcher(&Launcher {
        name: "mcp-remote",
        server: vec!["npx".into(), "mcp-remote".into(), http.url()],
        cwd: interop(),
        env,
        tool: "echo",
        arguments: MESSAGE,
        hidden: "get-env",
        // mcp-remote closes its HTTP session at stdin EOF before it exits: waiting on the
        // network it uses no CPU, and on a loaded machine it may stay silent past the idle
        // drain (SPEC §3 item 7), which then ends it (SIGKILL, `assay_kill_requested`). Either
        // ending is a closed capture; the verdict and the tree are checked for every ending.
        expect: |_, _| Expect::default(),
    });
}

/// The README's remote-server command (SPEC §10: "The README shows it"), as written, with its
/// URL pointing at the local HTTP server and its policy and capture root in a scratch
/// directory: a TypeScript SDK session through it reads `closed` and leaves nothing behind.
#[test]
fn the_readme_remote_server_command_runs() {
    if !ready("launchers::the_readme_remote_server_command_runs") {
        return;
    }
    let http = http::Everything::start();
    let dir = tempdir();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let captures = dir.path().join("captures");
    let mut want = vec![
        ("assay", bin().display().to_string()),
        ("assay.yaml", policy.display().to_string()),
        ("captures", captures.display().to_string()),
        ("https://mcp.example.com/mcp", http.url()),
    ];
    let argv: Vec<String> = readme_remote_command()
        .into_iter()
        .map(|word| match want.iter().position(|(w, _)| *w == word) {
            Some(i) => want.remove(i).1,
            None => word,
        })
        .collect();
    assert!(
        want.is_empty(),
        "the README's remote-server block no longer names {want:?}: update this test with it\n{argv:?}"
    );
    let marked = Marked::new();
    let mut cmd = Command::new("node");
    cmd.arg(interop().join("launcher_client.mjs"))
        .args(["echo", MESSAGE])
        .args(&argv)
        .current_dir(interop())
        .env(MARK, marked.mark())
        .envs(npm_offline(dir.path()))
        .env("MCP_REMOTE_CONFIG_DIR", dir.path().join("mcp-auth"));
    let out = sdk_client(cmd, dir.path()).unwrap();
    let ended = Instant::now();
    let l = Launcher {
        name: "readme",
        server: Vec::new(),
        cwd: interop(),
        env: Vec::new(),
        tool: "echo",
        arguments: MESSAGE,
        hidden: "get-env",
        expect: |_, _| Expect::exited(0),
    };
    check_client(&l, &out).unwrap();
    let left = marked.wait_gone(ended + AFTER_EXIT);
    assert!(left.is_empty(), "left behind:\n{}", Proc::describe(&left));
    verdict_of(&one_capture(&captures).unwrap(), Ending::TsSdk).unwrap();
}

/// The words of the README's remote-server block (the fenced block after its `readme-test`
/// line naming this file), continuation lines joined.
fn readme_remote_command() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut lines = readme.lines();
    lines
        .by_ref()
        .find(|l| l.starts_with("<!-- readme-test: skip (tests/launchers.rs runs this command"))
        .expect("README.md has the remote-server block that tests/launchers.rs runs");
    assert_eq!(lines.next(), Some("```sh"));
    let block: Vec<&str> = lines.take_while(|l| *l != "```").collect();
    let text = block.join("\n").replace("\\\n", " ");
    assert_eq!(text.lines().count(), 1, "one command: {text}");
    text.split_whitespace().map(String::from).collect()
}
