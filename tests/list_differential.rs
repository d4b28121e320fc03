//! Server→client parser differential (SPEC §5 "Reading the server fails closed too", §11): real
//! clients list the tools of a hostile server (tests/fixtures/hostile_list_server.py), once
//! directly and once through `assay mcp wrap` with `hide_refused_tools`, for every attack the
//! server knows:
//!
//! - the official TypeScript SDK clients, 1.x and 2.x (`listTools`;
//!   tests/interop/list_differential.mjs, pinned in tests/interop/package-lock.json),
//! - the official MCP Python SDK client (`list_tools`; tests/fixtures/list_differential.py),
//! - a Go `encoding/json` client decoder, as mcp-go reads (tests/fixtures/go-client).
//!
//! Through the wrapper no client may be shown the refused tool `exec`, for any attack; directly,
//! some client must be shown it for every attack (so each attack is real and the check can
//! fail). Without node, the npm packages, the Python SDK or Go the test is skipped and says so
//! (in CI, `CI=true`, it fails).

use std::collections::BTreeMap;
use std::process::Command;

use crate::util::*;

const POLICY: &str = "version: \"1\"\nallow: [\"*\"]\ndeny: [exec]\nhide_refused_tools: true\n";

fn rows(out: std::process::Output, what: &str) -> Vec<serde_json::Value> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{what} failed ({:?})\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{what}: {e}: {l}")))
        .collect()
}

/// Starts `cmd` with its output piped and reads that output on a thread of its own, so several
/// clients run at once; [`output_of`] waits for it.
fn collect(
    cmd: &mut Command,
    cannot: &'static str,
) -> std::thread::JoinHandle<std::process::Output> {
    let child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cannot}: {e}"));
    std::thread::spawn(move || child.wait_with_output().expect("wait for a client"))
}

fn output_of(client: std::thread::JoinHandle<std::process::Output>) -> std::process::Output {
    client.join().expect("the client's reader thread")
}

#[test]
fn no_client_is_shown_a_hidden_tool_whatever_the_server_sends() {
    if !can_run(
        "list_differential::no_client_is_shown_a_hidden_tool_whatever_the_server_sends",
        &[Needs::Go, Needs::Node, Needs::PythonVenv],
    ) {
        return;
    }
    let dir = tempdir();
    let policy = dir.path().join("hide.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let server = root().join("tests/fixtures/hostile_list_server.py");
    let listed = Command::new("python3")
        .arg(&server)
        .arg("--modes")
        .output()
        .expect("python3");
    let modes: Vec<String> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(modes.len() >= 25, "{modes:?}");
    let interop = root().join("tests/interop");
    assert!(
        interop
            .join("node_modules/@modelcontextprotocol/sdk")
            .is_dir(),
        "tests/interop/node_modules is missing: run `npm ci` in tests/interop (scripts/test.sh does)"
    );
    // The three clients run side by side (each waits mostly on its sessions' timeouts); the Go
    // client is compiled while the other two run.
    let typescript = collect(
        Command::new("node")
            .arg(interop.join("list_differential.mjs"))
            .args(&modes)
            .current_dir(&interop)
            .env("ASSAY_BIN", bin())
            .env("ASSAY_POLICY", &policy)
            .env("ASSAY_PYTHON", "python3")
            .env("ASSAY_HOSTILE_SERVER", &server),
        "cannot run node (install nodejs and npm)",
    );
    let python_sdk = collect(
        Command::new(python())
            .arg(root().join("tests/fixtures/list_differential.py"))
            .arg(bin())
            .arg(&policy)
            .args(&modes),
        "cannot run the Python SDK client",
    );
    let go_client = dir.path().join("go-client");
    go_build("go-client", &go_client);
    let go = collect(
        Command::new(&go_client)
            .arg(bin())
            .arg(&policy)
            .arg("python3")
            .arg(&server)
            .args(&modes),
        "cannot run the Go client",
    );
    let mut all = rows(output_of(typescript), "the TypeScript SDK clients");
    all.extend(rows(output_of(python_sdk), "the Python SDK client"));
    all.extend(rows(output_of(go), "the Go client"));
    let clients = ["typescript-v1", "typescript-v2", "python", "go"];
    assert_eq!(all.len(), modes.len() * 2 * clients.len(), "{all:#?}");

    let shows = |row: &serde_json::Value, tool: &str| {
        row["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|n| n == tool))
    };
    let mut shown_directly: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut leaks = Vec::new();
    for row in &all {
        let mode = row["mode"].as_str().unwrap();
        let client = row["client"].as_str().unwrap();
        if row["wrapped"] == true {
            if shows(row, "exec") {
                leaks.push(row.clone());
            }
        } else if shows(row, "exec") {
            shown_directly.entry(mode).or_default().push(client);
        }
    }
    assert!(
        leaks.is_empty(),
        "the wrapper showed a hidden tool:\n{leaks:#?}"
    );
    for mode in &modes {
        assert!(
            shown_directly.contains_key(mode.as_str()),
            "attack {mode} shows `exec` to no client even directly: it tests nothing"
        );
    }
    // The ordinary case still works for every client: the refused tool is gone, the rest stays.
    for row in all.iter().filter(|r| r["mode"] == "plain") {
        let expected = if row["wrapped"] == true {
            serde_json::json!(["echo"])
        } else {
            serde_json::json!(["exec", "echo"])
        };
        assert_eq!(row["tools"], expected, "{row}");
    }
}

/// The id readings of `src/proxy/rpc_id.rs` against the real ones: Node's `Number(s)` and
/// Python's `int(s)`, over a corpus of spellings (whitespace of both languages, signs, radix
/// prefixes, exponents, underscores, Unicode digits, and what each refuses).
#[test]
fn id_readings_match_node_and_python() {
    if !can_run(
        "list_differential::id_readings_match_node_and_python",
        &[Needs::Node, Needs::PythonVenv],
    ) {
        return;
    }
    let mut corpus: Vec<String> = [
        "",
        " ",
        "0",
        "1",
        "-1",
        "+1",
        "00",
        "007",
        "1.",
        ".5",
        "1.0",
        "1e0",
        "1E2",
        "1e",
        "e1",
        "1_0",
        "1__0",
        "_1",
        "1_",
        "0x10",
        "0X1f",
        "+0x10",
        "-0x10",
        "0b11",
        "0o7",
        "0x",
        "0b2",
        "Infinity",
        "-Infinity",
        "+Infinity",
        "infinity",
        "inf",
        "nan",
        "NaN",
        "1 2",
        "--1",
        "9007199254740993",
        "123456789012345678901234567890",
        "١٢",
        "１０",
        "𝟎",
        "1١",
        "\u{a0}1\u{a0}",
        "\u{feff}1",
        "\u{85}1",
        "\u{1c}1",
        "\u{2028}7\u{2029}",
        "\u{3000}3",
        "\t\n\u{b}\u{c}\r 4 ",
        "\u{180e}1",
        "0.1e-2",
        "-0",
        "+-1",
        "1e309",
        "0e999999",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for c in ['\u{2000}', '\u{200a}', '\u{202f}', '\u{205f}', '\u{1680}'] {
        corpus.push(format!("{c}5{c}"));
    }
    let input = serde_json::to_string(&corpus).unwrap();
    let node = std::process::Command::new("node")
        .arg("-e")
        .arg(
            "const xs = JSON.parse(require('fs').readFileSync(0, 'utf8'));\
             console.log(JSON.stringify(xs.map((x) => { const n = Number(x); \
             return Number.isNaN(n) ? null : (Number.isFinite(n) ? n : String(n)); })));",
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run node: {e}"));
    let python = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import json,sys\nxs=json.load(sys.stdin)\nout=[]\nfor x in xs:\n  try: out.append(str(int(x)))\n  except ValueError: out.append(None)\nprint(json.dumps(out))",
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let run = |mut child: std::process::Child| {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap()
    };
    let (js, py) = (run(node), run(python));
    for (i, s) in corpus.iter().enumerate() {
        let (ours_js, ours_py) = assay::fuzzing::id_string_readings(s);
        let want_js = match &js[i] {
            serde_json::Value::Null => None,
            serde_json::Value::String(t) if t == "Infinity" => Some(f64::INFINITY),
            serde_json::Value::String(t) if t == "-Infinity" => Some(f64::NEG_INFINITY),
            v => v.as_f64(),
        };
        assert_eq!(ours_js, want_js, "Number({s:?})");
        assert_eq!(ours_py.as_deref(), py[i].as_str(), "int({s:?})");
    }
}
