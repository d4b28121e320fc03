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
//! fail). A missing node, npm package, Python SDK or Go toolchain fails the test.

use std::collections::BTreeMap;
use std::process::Command;

use crate::util::*;

const POLICY: &str = "version: \"1\"\nallow: [\"*\"]\ndeny: [exec]\nhide_refused_tools: true\n";

fn python() -> String {
    std::env::var("ASSAY_TEST_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

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

#[test]
fn no_client_is_shown_a_hidden_tool_whatever_the_server_sends() {
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
    let go_client = dir.path().join("go-client");
    go_build("go-client", &go_client);

    let mut all = rows(
        Command::new("node")
            .arg(interop.join("list_differential.mjs"))
            .args(&modes)
            .current_dir(&interop)
            .env("ASSAY_BIN", bin())
            .env("ASSAY_POLICY", &policy)
            .env("ASSAY_PYTHON", "python3")
            .env("ASSAY_HOSTILE_SERVER", &server)
            .output()
            .unwrap_or_else(|e| panic!("cannot run node (install nodejs and npm): {e}")),
        "the TypeScript SDK clients",
    );
    all.extend(rows(
        Command::new(python())
            .arg(root().join("tests/fixtures/list_differential.py"))
            .arg(bin())
            .arg(&policy)
            .args(&modes)
            .output()
            .expect("run the Python SDK client"),
        "the Python SDK client",
    ));
    all.extend(rows(
        Command::new(&go_client)
            .arg(bin())
            .arg(&policy)
            .arg("python3")
            .arg(&server)
            .args(&modes)
            .output()
            .expect("run the Go client"),
        "the Go client",
    ));
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
