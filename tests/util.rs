//! Shared helpers: temp dirs, the binary under test, fixture servers, and a runner that feeds
//! stdin from a thread and reports everything on failure.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The repository root (these tests belong to `crates/assay-cli`, two levels below it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/assay-cli sits two levels below the repository root")
        .to_path_buf()
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_assay"))
}

pub fn demo_server() -> String {
    root().join("examples/demo/server.py").display().to_string()
}

pub fn demo_policy() -> PathBuf {
    root().join("examples/demo/policy.yaml")
}

pub fn fault_server() -> String {
    root()
        .join("tests/fixtures/fault_server.py")
        .display()
        .to_string()
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// What one run produced.
pub struct Run {
    pub cmd: String,
    pub status: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    pub fn lines(&self) -> Vec<serde_json::Value> {
        self.stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                serde_json::from_slice(l).unwrap_or_else(|e| {
                    panic!(
                        "stdout line is not JSON ({e}): {}",
                        String::from_utf8_lossy(l)
                    )
                })
            })
            .collect()
    }

    pub fn expect_status(&self, code: i32) -> &Self {
        assert_eq!(self.status, Some(code), "{}", self.report());
        self
    }

    pub fn report(&self) -> String {
        format!(
            "command: {}\nstatus: {:?}\nelapsed: {:?}\nstdout:\n{}\nstderr:\n{}",
            self.cmd,
            self.status,
            self.elapsed,
            String::from_utf8_lossy(&self.stdout),
            self.stderr
        )
    }

    /// The response whose id equals `id`.
    pub fn response(&self, id: serde_json::Value) -> serde_json::Value {
        self.lines()
            .into_iter()
            .find(|v| v.get("id") == Some(&id))
            .unwrap_or_else(|| panic!("no response with id {id}\n{}", self.report()))
    }
}

/// Runs `assay <args>` with `input` on stdin (written from a thread, then closed).
pub fn run(args: &[String], input: &[u8]) -> Run {
    run_with(args, input, None)
}

/// Like [`run`], but optionally keeps stdin open for `hold` after writing the input.
pub fn run_with(args: &[String], input: &[u8], hold: Option<Duration>) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(args);
    let mut r = run_cmd(cmd, input, hold, None);
    r.cmd = format!("assay {}", args.join(" "));
    r
}

/// `mcp wrap` arguments: the given options, `--`, then the server argv.
pub fn wrap_args(opts: &[&str], server: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = vec!["mcp".into(), "wrap".into()];
    v.extend(opts.iter().map(|s| s.to_string()));
    v.push("--".into());
    v.extend(server.iter().map(|s| s.to_string()));
    v
}

/// A `Command` for `assay mcp wrap` with `opts` in front of the server argv, to prepare further
/// (limits, signal dispositions, descriptors) before it runs.
pub fn wrap_command(opts: &[&str], server: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(wrap_args(opts, server));
    cmd
}

/// The recording fault server's argv: it appends every raw line it receives to `rec`.
pub fn recording_server(rec: &Path) -> Vec<String> {
    vec![
        "python3".into(),
        fault_server(),
        "record".into(),
        rec.display().to_string(),
    ]
}

/// `--policy <demo policy> --event-source assay://test/session` followed by `extra`.
pub fn evidence_opts(extra: &[String]) -> Vec<String> {
    let mut v = vec![
        "--policy".to_string(),
        demo_policy().display().to_string(),
        "--event-source".into(),
        "assay://test/session".into(),
    ];
    v.extend_from_slice(extra);
    v
}

/// Capture options for `dir`.
pub fn capture_opts(dir: &Path) -> Vec<String> {
    evidence_opts(&["--capture-dir".into(), dir.display().to_string()])
}

pub fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

pub fn decision_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read(path)
        .unwrap()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

pub fn sha256_file(path: &Path) -> String {
    use sha2::Digest;
    let bytes = std::fs::read(path).unwrap();
    sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A tools/call line.
pub fn call(id: u64, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
    )
}

/// Joins lines with `\n` and a final newline.
pub fn script(lines: &[&str]) -> Vec<u8> {
    let mut s = lines.join("\n");
    s.push('\n');
    s.into_bytes()
}

/// Runs an arbitrary program (e.g. `/bin/sh` setting limits before exec'ing assay).
pub fn run_program(program: &str, args: &[String], input: &[u8]) -> Run {
    let mut cmd = Command::new(program);
    cmd.args(args);
    run_cmd(cmd, input, None, None)
}

/// Runs a prepared command (e.g. with a changed environment), feeding it `input`.
pub fn run_command(cmd: Command, input: &[u8]) -> Run {
    run_cmd(cmd, input, None, None)
}

/// Runs `assay <args>`, writes `input`, waits `after`, runs `action` while stdin is still open,
/// then closes stdin.
pub fn run_during(
    args: &[String],
    input: &[u8],
    after: Duration,
    action: impl FnOnce() + Send + 'static,
) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(args);
    run_cmd(cmd, input, Some(after), Some(Box::new(action)))
}

type Action = Box<dyn FnOnce() + Send>;

fn run_cmd(mut cmd: Command, input: &[u8], hold: Option<Duration>, action: Option<Action>) -> Run {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let shown = format!("{cmd:?}");
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
        let _ = stdin.flush();
        if let Some(h) = hold {
            std::thread::sleep(h);
        }
        if let Some(a) = action {
            a();
        }
        drop(stdin);
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut out = Vec::new();
    let _ = stdout.read_to_end(&mut out);
    let status = child.wait().expect("wait");
    writer.join().unwrap();
    Run {
        cmd: shown,
        status: status.code(),
        stdout: out,
        stderr: err_reader.join().unwrap(),
        elapsed: started.elapsed(),
    }
}

/// Runs `input` through `assay mcp wrap` into the capture `cap`, in front of the recording fault
/// server, which appends every raw line it receives to `rec`.
pub fn run_recorded(cap: &Path, rec: &Path, input: &[u8]) -> Run {
    run(
        &wrap_args(&strs(&capture_opts(cap)), &strs(&recording_server(rec))),
        input,
    )
}

/// Eight allowed `echo` calls (ids 10..18) after `initialize`, wrapped into the capture `cap`
/// under a real write failure: RLIMIT_FSIZE of 4 blocks, with SIGXFSZ ignored so the write
/// returns EFBIG. Each decision line is ~600 bytes, so a write part-way through the log fails.
pub fn run_with_file_size_limit(cap: &Path) -> Run {
    let mut lines = vec![INIT.to_string()];
    for i in 0..8 {
        lines.push(call(10 + i, "echo", r#"{"text":"a"}"#));
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    run_under_file_size_limit(cap, 4, &script(&refs))
}

/// `input` through the demo server wrapped into the capture `cap` under RLIMIT_FSIZE of `blocks`
/// 512-byte blocks, with SIGXFSZ ignored so a write past it returns EFBIG.
pub fn run_under_file_size_limit(cap: &Path, blocks: u32, input: &[u8]) -> Run {
    let mut argv = vec![
        "-c".to_string(),
        format!("trap '' XFSZ; ulimit -f {blocks}; exec \"$@\""),
        "sh".to_string(),
        bin().display().to_string(),
    ];
    argv.extend(wrap_args(
        &strs(&capture_opts(cap)),
        &["python3", &demo_server()],
    ));
    run_program("/bin/sh", &argv, input)
}

/// A tool some suites need that a fresh clone (plain `cargo test`) may lack (SPEC §11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// `node` and the pinned packages in tests/interop/node_modules (TypeScript SDK, reference
    /// servers, MCP Inspector).
    Node,
    /// The Go toolchain (`go`).
    Go,
    /// A Python with the test packages (`mcp`, `rfc8785`, `yaml`, `cloudevents`): `.venv`.
    PythonVenv,
    /// A Python with the MCP Python SDK as it was before python-sdk #1178 (mcp 1.12.0, lax
    /// integer ids): `.venv-mcp-1.12` (see [`python_mcp_1_12`]).
    PythonMcp112,
}

impl Needs {
    /// What to install, said to the person who ran `cargo test`.
    fn what(self) -> &'static str {
        match self {
            Needs::Node => {
                "node and tests/interop/node_modules (`cd tests/interop && npm ci`, or scripts/test.sh)"
            }
            Needs::Go => "the Go toolchain (`go`; Debian package golang-go, or scripts/test.sh)",
            Needs::PythonVenv => {
                "the test Python packages (`python3 -m venv .venv && .venv/bin/pip install -r \
                 python/requirements-test.txt`, or ASSAY_TEST_PYTHON; scripts/test.sh does both)"
            }
            Needs::PythonMcp112 => {
                "mcp 1.12.0 (`python3 -m venv .venv-mcp-1.12 && .venv-mcp-1.12/bin/pip install -r \
                 tests/fixtures/requirements-mcp-1.12.txt`, or ASSAY_TEST_PYTHON_MCP_1_12; \
                 scripts/test.sh does both)"
            }
        }
    }

    fn present(self) -> bool {
        use std::sync::OnceLock;
        static FOUND: [OnceLock<bool>; 4] = [const { OnceLock::new() }; 4];
        let runs = |program: &str, args: &[&str]| {
            Command::new(program)
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        *FOUND[self as usize].get_or_init(|| match self {
            Needs::Node => {
                root()
                    .join("tests/interop/node_modules/@modelcontextprotocol/sdk")
                    .is_dir()
                    && runs("node", &["--version"])
            }
            Needs::Go => runs("go", &["version"]),
            Needs::PythonVenv => runs(&python(), &["-c", "import mcp, rfc8785, yaml, cloudevents"]),
            Needs::PythonMcp112 => runs(
                &python_mcp_1_12(),
                &[
                    "-c",
                    "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '1.12.0')",
                ],
            ),
        })
    }
}

/// Whether CI runs these tests (`CI` set to anything but empty, `0` or `false`): then every
/// suite is required and a missing tool fails the test.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

/// Whether `suite` can run: every tool in `needs` is there. When one is missing, outside CI,
/// says so in one line (straight to the process's stderr, which the test harness does not
/// capture) and returns false: the test then returns early, as skipped. In CI (see [`in_ci`])
/// a missing tool panics: every suite is required there.
pub fn can_run(suite: &str, needs: &[Needs]) -> bool {
    let missing: Vec<&str> = needs
        .iter()
        .filter(|n| !n.present())
        .map(|n| n.what())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let line = format!("skipped {suite}: needs {}", missing.join("; "));
    assert!(!in_ci(), "{line} (CI=true: every suite is required)");
    let _ = writeln!(std::io::stderr(), "assay tests: {line}");
    false
}

/// The Python the tests run their Python fixtures with: `$ASSAY_TEST_PYTHON`, else the
/// checkout's `.venv` (scripts/test.sh creates it), else `python3`.
pub fn python() -> String {
    if let Ok(p) = std::env::var("ASSAY_TEST_PYTHON") {
        return p;
    }
    let venv = root().join(".venv/bin/python");
    if venv.exists() {
        return venv.display().to_string();
    }
    "python3".to_string()
}

/// The Python with mcp 1.12.0, the last MCP Python SDK before python-sdk #1178 (which made ids
/// strict): `$ASSAY_TEST_PYTHON_MCP_1_12`, else the checkout's `.venv-mcp-1.12` (scripts/test.sh
/// creates it from tests/fixtures/requirements-mcp-1.12.txt).
pub fn python_mcp_1_12() -> String {
    if let Ok(p) = std::env::var("ASSAY_TEST_PYTHON_MCP_1_12") {
        return p;
    }
    root()
        .join(".venv-mcp-1.12/bin/python")
        .display()
        .to_string()
}

/// Builds the Go program in `tests/fixtures/<fixture>` (standard library only) into `out` with
/// the real Go toolchain. Offline: no module download, caches under target/. Callers check
/// `can_run(…, &[Needs::Go])` first.
pub fn go_build(fixture: &str, out: &Path) {
    let target = root().join("target");
    let status = Command::new("go")
        .args(["build", "-o"])
        .arg(out)
        .arg(".")
        .current_dir(root().join("tests/fixtures").join(fixture))
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .env("GOCACHE", target.join("go-cache"))
        .env("GOPATH", target.join("go-path"))
        .status()
        .unwrap_or_else(|e| {
            panic!("the Go toolchain is required (scripts/test.sh installs golang-go): {e}")
        });
    assert!(
        status.success(),
        "go build of tests/fixtures/{fixture} failed"
    );
}

/// Runs `assay <args>` with stdout a pipe whose reader is already gone (as after
/// `assay … | head -1` once `head` has exited): every write to stdout fails with `EPIPE`.
/// stdin is empty.
pub fn run_without_reader(args: &[&str]) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(args);
    without_reader(cmd, args)
}

/// [`run_without_reader`] for `assay demo ARGS`, its scratch directory under `tmp` (see
/// [`demo_in`]).
pub fn demo_without_reader(tmp: &Path, args: &[&str]) -> Run {
    without_reader(demo_command(tmp, args), &[&["demo"], args].concat())
}

fn without_reader(mut cmd: Command, args: &[&str]) -> Run {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped());
    let started = Instant::now();
    let out = cmd.output().expect("spawn");
    // `cmd` (and with it the parent's copy of the writer) lives until here: no reader either way.
    Run {
        cmd: format!("assay {} >&(pipe without reader)", args.join(" ")),
        status: out.status.code(),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// `assay demo ARGS` with stdin empty and the demo's scratch directory (its server and policy
/// files, which it leaves for the user to look at) under `tmp` rather than the system's
/// temporary directory, which the tests would otherwise fill.
pub fn demo_in(tmp: &Path, args: &[&str]) -> Run {
    let mut r = run_cmd(demo_command(tmp, args), b"", None, None);
    r.cmd = format!("TMPDIR={} assay demo {}", tmp.display(), args.join(" "));
    r
}

fn demo_command(tmp: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("demo").args(args).env("TMPDIR", tmp);
    cmd
}

/// `assay capture read CAP`: the run and the verdict JSON it printed.
pub fn read_verdict(cap: &Path) -> (Run, serde_json::Value) {
    let r = run(
        &["capture".into(), "read".into(), cap.display().to_string()],
        b"",
    );
    let v = serde_json::from_slice(&r.stdout)
        .unwrap_or_else(|e| panic!("verdict is not JSON ({e})\n{}", r.report()));
    (r, v)
}

/// `assay capture package CAP OUT` with `--hash-file` for each of `hash_files`.
pub fn package(cap: &Path, out: &Path, hash_files: &[&Path]) -> Run {
    let mut args = vec![
        "capture".to_string(),
        "package".to_string(),
        cap.display().to_string(),
        out.display().to_string(),
    ];
    for f in hash_files {
        args.extend(["--hash-file".to_string(), f.display().to_string()]);
    }
    run(&args, b"")
}

/// The `(tool, reason_code)` of each `tools/call` decision of a decision log, in order (other
/// event types, SPEC §4.1a, are left out).
pub fn tools_and_reasons(log: &Path) -> Vec<(String, String)> {
    decision_lines(log)
        .iter()
        .filter(|d| d["type"] == "assay.tool.decision")
        .map(|d| {
            (
                d["data"]["tool"].as_str().unwrap().to_string(),
                d["data"]["reason_code"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The files every capture directory of a session with a decision log holds (SPEC §7).
pub const SESSION_CAPTURE_FILES: [&str; 5] = [
    "protocol.json",
    "session-context.json",
    "session-stop.json",
    "decisions.ndjson",
    "proxy-stderr.log",
];

/// The reason codes of a verdict, in order.
pub fn codes(verdict: &serde_json::Value) -> Vec<String> {
    verdict["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_string())
        .collect()
}

/// Runs `assay <args>`: writes `first`, waits until a stdout line contains `needle` (at most
/// 60 s), then writes `then` and closes stdin — a client that sends its next requests only after
/// an answer, as a real one does. Collects all output.
pub fn run_after_reply(args: &[String], first: &[u8], needle: &str, then: &[u8]) -> Run {
    use std::io::{BufRead, BufReader};
    let started = Instant::now();
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(first).unwrap();
    stdin.flush().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut r = BufReader::new(stdout);
        loop {
            let mut line = Vec::new();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    all.extend_from_slice(&line);
                    let _ = tx.send(line);
                }
            }
        }
        all
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if String::from_utf8_lossy(&line).contains(needle) {
            let _ = stdin.write_all(then);
            break;
        }
    }
    drop(stdin);
    let mut stderr = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr);
    let stdout = reader.join().unwrap();
    let status = child.wait().expect("wait").code();
    Run {
        cmd: format!("assay {}", args.join(" ")),
        status,
        stdout,
        stderr,
        elapsed: started.elapsed(),
    }
}

/// Runs `cmd` (the wrapper or a server itself): writes `input`, then keeps stdin open until a
/// stdout line answers each id in `ids` (at most 60 s) — servers that answer requests
/// concurrently, or stop reading once stdin closes, answer every one — then closes stdin and
/// collects all output.
pub fn run_until_answered(mut cmd: Command, input: &[u8], ids: &[serde_json::Value]) -> Run {
    use std::io::{BufRead, BufReader};
    let started = Instant::now();
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    stdin.flush().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut r = BufReader::new(stdout);
        loop {
            let mut line = Vec::new();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    all.extend_from_slice(&line);
                    let _ = tx.send(line);
                }
            }
        }
        all
    });
    let mut waiting: Vec<&serde_json::Value> = ids.iter().collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !waiting.is_empty() {
        let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) else {
            break;
        };
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) {
            if v.get("method").is_none() {
                waiting.retain(|id| v.get("id") != Some(*id));
            }
        }
    }
    drop(stdin);
    let stdout = reader.join().unwrap();
    let status = child.wait().expect("wait").code();
    Run {
        cmd: shown,
        status,
        stdout,
        stderr: err_reader.join().unwrap(),
        elapsed: started.elapsed(),
    }
}
