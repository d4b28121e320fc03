//! `assay demo`: the whole loop on embedded defaults. The bundled example MCP server
//! (`examples/demo/server.py`) is wrapped with the bundled policy (`examples/demo/policy.yaml`)
//! into a capture directory by this same binary's `mcp wrap`; a scripted client makes allowed and
//! denied calls; then the reader's verdict is printed for a person to read.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};

use assay::{ClosureKind, read_capture, text};

use super::args::DemoArgs;
use super::exit;
use super::messages::Failure;

/// A line on stdout; a reader that went away ends the demo (quietly on a broken pipe) with
/// status 3, the demo's status for a run it could not finish.
macro_rules! say {
    ($out:expr) => { writeln!($out).map_err(Failure::output(exit::FAILURE))? };
    ($out:expr, $($arg:tt)*) => { writeln!($out, $($arg)*).map_err(Failure::output(exit::FAILURE))? };
}

/// The demo's own I/O failing (its files, the wrapped session): status 3.
fn failed(error: std::io::Error) -> Failure {
    Failure::Io {
        what: "demo failed",
        error,
        status: exit::FAILURE,
    }
}

const SERVER: &str = include_str!("../../../examples/demo/server.py");
const POLICY: &str = include_str!("../../../examples/demo/policy.yaml");

/// The scripted client, one line each: what the line shows, a tab, the JSON-RPC line (a data
/// file: protocol text is not written in the code, whose method names live in one table).
const SCRIPT: &str = include_str!("../../../examples/demo/client.tsv");

/// A new directory for the demo's server and policy files (never the user's directory), and the
/// capture directory: the one asked for, or `capture/` inside the new directory.
fn demo_dir(args: &DemoArgs) -> std::io::Result<(PathBuf, PathBuf)> {
    let base = std::env::temp_dir().join(format!(
        "assay-demo-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0)
    ));
    std::fs::create_dir(&base)?;
    let capture = args
        .capture_dir
        .clone()
        .unwrap_or_else(|| base.join("capture"));
    Ok((base, capture))
}

fn summarize(response: &str) -> String {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(response) else {
        return response.to_string();
    };
    if let Some(err) = v.get("error") {
        return format!(
            "error {} {}",
            err["code"],
            err["message"].as_str().unwrap_or("")
        );
    }
    let r = &v["result"];
    if let Some(assay) = r.pointer("/_meta/assay~1decision") {
        return format!(
            "REFUSED by assay: {} {}",
            assay["decision"].as_str().unwrap_or(""),
            assay["reason_code"].as_str().unwrap_or("")
        );
    }
    if let Some(tools) = r.get("tools").and_then(|t| t.as_array()) {
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        return format!("tools: {}", names.join(", "));
    }
    if let Some(text) = r.pointer("/content/0/text").and_then(|t| t.as_str()) {
        return format!("ok: {text}");
    }
    if let Some(info) = r.pointer("/serverInfo/name").and_then(|t| t.as_str()) {
        return format!("ok: server {info}");
    }
    "ok".to_string()
}

pub(crate) fn run(args: DemoArgs) -> Result<ExitCode, Failure> {
    let (base, capture) = demo_dir(&args).map_err(failed)?;
    let server = base.join("server.py");
    let policy = base.join("policy.yaml");
    std::fs::write(&server, SERVER).map_err(failed)?;
    std::fs::write(&policy, POLICY).map_err(failed)?;
    let exe = super::program_path::get();
    let mut out = std::io::stdout().lock();
    say!(out, "assay demo");
    say!(out, "  server:  python3 {}", server.display());
    say!(out, "  policy:  {}", policy.display());
    say!(out, "  capture: {}", capture.display());
    say!(out);
    let mut child = spawn_wrapped(&exe, &policy, &capture, &server).map_err(failed)?;
    converse(&mut out, &mut child)?;
    let status = child.wait().map_err(failed)?;
    say!(out);
    say!(
        out,
        "wrapper exit status: {}",
        status
            .code()
            .map_or("signal".to_string(), |c| c.to_string())
    );
    let closure = show_verdict(&mut out, &capture)?;
    say!(
        out,
        "decisions: {}",
        capture.join(assay::capture_files::DECISIONS).display()
    );
    out.flush().map_err(Failure::output(exit::FAILURE))?;
    Ok(exit::code(closure.exit_status()))
}

/// `assay mcp wrap` (this same binary) of `python3 server` with `policy`, its evidence in
/// `capture`, its stdin and stdout piped.
fn spawn_wrapped(
    exe: &Path,
    policy: &Path,
    capture: &Path,
    server: &Path,
) -> std::io::Result<Child> {
    Command::new(exe)
        .args(["mcp", "wrap", "--policy"])
        .arg(policy)
        .args([
            "--event-source",
            "assay://demo/session",
            "--label",
            "demo-server",
            "--forward-signals",
            "--capture-dir",
        ])
        .arg(capture)
        .args(["--", "python3"])
        .arg(server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
}

/// The scripted client's session with the wrapped server: each line sent, each answer
/// summarized on `out`; then the client's input closed and any late output shown.
fn converse(out: &mut impl Write, child: &mut Child) -> Result<(), Failure> {
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| failed(std::io::Error::other("no stdin")))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| failed(std::io::Error::other("no stdout")))?;
    let mut lines = BufReader::new(stdout).lines();
    say!(out, "client session (through `assay mcp wrap`):");
    for (label, line) in SCRIPT.lines().filter_map(|l| l.split_once('\t')) {
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(failed)?;
        if line.contains("\"id\"") {
            let response = lines
                .next()
                .transpose()
                .map_err(failed)?
                .unwrap_or_default();
            say!(
                out,
                "  {label:<36} -> {}",
                text::render(&summarize(&response))
            );
        } else {
            say!(out, "  {label:<36} -> (notification, no response)");
        }
    }
    drop(stdin);
    for rest in lines {
        say!(
            out,
            "  (late output) {}",
            text::render(&rest.map_err(failed)?)
        );
    }
    Ok(())
}

/// The reader's verdict on `capture`, in JSON and in a sentence; returns its closure.
fn show_verdict(out: &mut impl Write, capture: &Path) -> Result<ClosureKind, Failure> {
    let verdict = read_capture(capture);
    say!(out);
    say!(
        out,
        "reader verdict (assay capture read {}):",
        capture.display()
    );
    say!(
        out,
        "{}",
        serde_json::to_string_pretty(&verdict).unwrap_or_else(|_| verdict.to_json())
    );
    say!(out);
    let reasons: Vec<String> = verdict
        .reasons
        .iter()
        .map(|r| format!("{}: {}", r.code.as_str(), r.detail))
        .collect();
    match verdict.closure {
        ClosureKind::Closed => say!(
            out,
            "closure: CLOSED: the session has a recorded ending and the retained decision log matches its accounting."
        ),
        other => say!(out, "closure: {other:?}: {}", reasons.join("; ")),
    }
    Ok(verdict.closure)
}
