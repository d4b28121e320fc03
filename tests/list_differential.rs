//! Server→client parser differential (SPEC §5 "Reading the server fails closed too" and
//! "Answers nobody asked for", §11): real clients list the tools of a hostile server
//! (tests/fixtures/hostile_list_server.py), once directly and once through `assay mcp wrap` with
//! each policy (`hide_refused_tools` refusing `exec`; pins of `echo` alone), for every attack the
//! server knows:
//!
//! - the official TypeScript SDK clients, 1.x and 2.x (`listTools`;
//!   tests/interop/list_differential.mjs, pinned in tests/interop/package-lock.json),
//! - the official MCP Python SDK client (`list_tools`; tests/fixtures/list_differential.py),
//!   as it is (mcp 2.3, .venv) and as it was before python-sdk #1178 (mcp 1.12.0,
//!   .venv-mcp-1.12: ids read with pydantic's lax `int`, so `true` and `"0__1"` are 1),
//! - a Go `encoding/json` client decoder, as mcp-go reads (tests/fixtures/go-client).
//!
//! Through the wrapper no client may be shown the refused tool `exec`, for any attack and either
//! policy; directly, some client must be shown it for every attack (so each attack is real and
//! the check can fail). Without node, the npm packages, the two Python SDKs or Go the test is
//! skipped and says so (in CI, `CI=true`, it fails).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::util::*;

const POLICY_HIDE: &str =
    "version: \"1\"\nallow: [\"*\"]\ndeny: [exec]\nhide_refused_tools: true\n";
/// Every tool allowed by name; `exec` is removed only because it is not pinned.
const POLICY_PINS: &str = "version: \"1\"\nallow: [\"*\"]\npins: pins.json\n";

/// The modes whose answers nobody asked for (hostile_list_server.py UNSOLICITED): their honest
/// answer lists `echo` alone.
const UNSOLICITED: [&str; 7] = [
    "ahead",
    "ahead_early",
    "bool_id",
    "lax_int_double_underscore",
    "lax_int_underscore",
    "twice",
    "late",
];

const PYTHON_NOW: &str = "python-mcp2.3.0";
const PYTHON_BEFORE_1178: &str = "python-mcp1.12.0";

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

/// The interpreter `python3` runs (not a launcher such as a pyenv shim, which costs a shell and
/// a hundred milliseconds of CPU per server started).
fn python3_executable() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3");
    assert!(out.status.success(), "python3: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Writes the two policies into `dir`, the pins file by `assay mcp pin` against the server's
/// honest listing; returns the clients' path arguments `hide=PATH` and `pins=PATH`.
fn policies(dir: &Path, python3: &str, server: &Path) -> (String, String) {
    let hide = dir.join("hide.yaml");
    std::fs::write(&hide, POLICY_HIDE).unwrap();
    let pins = dir.join("pins.yaml");
    std::fs::write(&pins, POLICY_PINS).unwrap();
    let pinned = Command::new(bin())
        .args(["mcp", "pin", "--out"])
        .arg(dir.join("pins.json"))
        .arg("--")
        .arg(python3)
        .arg(server)
        .arg("--honest")
        .output()
        .unwrap();
    assert!(pinned.status.success(), "assay mcp pin: {pinned:?}");
    (
        format!("hide={}", hide.display()),
        format!("pins={}", pins.display()),
    )
}

#[test]
fn no_client_is_shown_a_hidden_tool_whatever_the_server_sends() {
    if !can_run(
        "list_differential::no_client_is_shown_a_hidden_tool_whatever_the_server_sends",
        &[
            Needs::Go,
            Needs::Node,
            Needs::PythonVenv,
            Needs::PythonMcp112,
        ],
    ) {
        return;
    }
    let dir = tempdir();
    let server = root().join("tests/fixtures/hostile_list_server.py");
    let python3 = python3_executable();
    let (hide, pins) = policies(dir.path(), &python3, &server);
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
    assert!(modes.len() >= 32, "{modes:?}");
    for mode in UNSOLICITED {
        assert!(modes.iter().any(|m| m == mode), "{mode} missing: {modes:?}");
    }
    let interop = root().join("tests/interop");
    assert!(
        interop
            .join("node_modules/@modelcontextprotocol/sdk")
            .is_dir(),
        "tests/interop/node_modules is missing: run `npm ci` in tests/interop (scripts/test.sh does)"
    );
    let go_client = dir.path().join("go-client");
    go_build("go-client", &go_client);

    // Every mode directly and with hiding; the pins policy for the answers nobody asked for (and
    // the plain listing). Each client program runs its sessions a few at a time.
    let all_modes = ("direct,".to_string() + &hide, modes.clone());
    let pinned_modes = (
        pins,
        ["plain"]
            .iter()
            .chain(&UNSOLICITED)
            .map(|m| m.to_string())
            .collect::<Vec<_>>(),
    );
    let mut runs = Vec::new();
    for (paths, modes) in [&all_modes, &pinned_modes] {
        let python_client = |python: String| {
            let mut c = Command::new(python);
            c.arg(root().join("tests/fixtures/list_differential.py"))
                .arg(bin())
                .arg(paths)
                .args(modes);
            c
        };
        let mut typescript = Command::new("node");
        typescript
            .arg(interop.join("list_differential.mjs"))
            .args(modes)
            .current_dir(&interop)
            .env("ASSAY_BIN", bin())
            .env("ASSAY_PATHS", paths)
            .env("ASSAY_PYTHON", &python3)
            .env("ASSAY_HOSTILE_SERVER", &server);
        let mut go = Command::new(&go_client);
        go.arg(bin())
            .arg(paths)
            .arg(&python3)
            .arg(&server)
            .args(modes);
        runs.extend([
            ("the TypeScript SDK clients", typescript),
            ("the Python SDK client (mcp 2.3)", python_client(python())),
            (
                "the Python SDK client before #1178 (mcp 1.12.0)",
                python_client(python_mcp_1_12()),
            ),
            ("the Go client", go),
        ]);
    }
    let all: Vec<serde_json::Value> = std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .into_iter()
            .map(|(what, mut cmd)| {
                s.spawn(move || {
                    let out = cmd
                        .output()
                        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
                    rows(out, what)
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let clients = [
        "typescript-v1",
        "typescript-v2",
        PYTHON_NOW,
        PYTHON_BEFORE_1178,
        "go",
    ];
    assert_eq!(
        all.len(),
        (modes.len() * 2 + pinned_modes.1.len()) * clients.len(),
        "{all:#?}"
    );

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
        assert!(clients.contains(&client), "{row}");
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
            "attack {mode} shows `exec` to no client even directly: it tests nothing\n{:#?}",
            all.iter()
                .filter(|r| r["mode"] == mode.as_str() && r["wrapped"] == false)
                .collect::<Vec<_>>()
        );
    }
    // The Python SDK before #1178 takes a boolean or lax-integer id for its request's; today's
    // does not. Every SDK client takes an answer written after its request left it and before the
    // server read it: it registered the request's handler before writing the request.
    let takes = |mode: &str, client: &str| shown_directly[mode].contains(&client);
    for mode in ["bool_id", "lax_int_double_underscore", "lax_int_underscore"] {
        assert!(
            takes(mode, PYTHON_BEFORE_1178),
            "{mode}: {shown_directly:?}"
        );
    }
    // (`"0_1"` is 1 to Python's `int()`, which today's SDK reads a string id with as well.)
    for mode in ["bool_id", "lax_int_double_underscore"] {
        assert!(!takes(mode, PYTHON_NOW), "{mode}: {shown_directly:?}");
    }
    for client in clients {
        assert!(takes("ahead", client), "ahead: {shown_directly:?}");
    }
    // Answers ahead of the request, twice or late cost a client nothing through the wrapper: the
    // first answer to its pending request reaches it, judged; the others are dropped.
    for row in all.iter().filter(|r| {
        r["wrapped"] == true
            && ["ahead", "ahead_early", "twice", "late"].contains(&r["mode"].as_str().unwrap())
    }) {
        assert_eq!(row["tools"], serde_json::json!(["echo"]), "{row}");
    }
    // An answer under a boolean or lax-integer id reaches every client under the id the client
    // wrote (the wrapper respells it): no client, strict or lenient, waits for an answer it was
    // sent.
    for row in all.iter().filter(|r| {
        r["wrapped"] == true
            && ["bool_id", "lax_int_double_underscore", "lax_int_underscore"]
                .contains(&r["mode"].as_str().unwrap())
    }) {
        assert!(row.get("error").is_none(), "{row}");
        assert!(row["tools"].is_array(), "{row}");
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
