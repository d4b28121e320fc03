//! Interop with real MCP clients (SPEC §11): `tests/interop/interop.mjs` drives the official
//! TypeScript SDK clients (`@modelcontextprotocol/sdk` 1.x, and `@modelcontextprotocol/client`
//! 2.x on both handshakes) against the published reference servers and official Python and
//! TypeScript SDK servers, directly and through `assay mcp wrap`, and compares the responses call
//! by call. scripts/test.sh installs
//! node and the pinned packages (`npm ci`); without them the test is skipped and says so (in CI,
//! `CI=true`, it fails).

use std::process::Command;

use crate::util::*;

#[test]
fn typescript_sdk_clients_and_reference_servers_match_a_direct_session() {
    if !can_run(
        "interop::typescript_sdk_clients_and_reference_servers_match_a_direct_session",
        &[Needs::Node, Needs::PythonVenv],
    ) {
        return;
    }
    let dir = root().join("tests/interop");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk").is_dir(),
        "tests/interop/node_modules is missing: run `npm ci` in tests/interop (scripts/test.sh does)"
    );
    let python = python();
    // The Python SDK server needs `mcp`; without it the TypeScript client only sees its
    // connection close, so say what is missing up front.
    let sdk = Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        sdk.status.success(),
        "the MCP Python SDK is not importable by {python}: set ASSAY_TEST_PYTHON to the .venv \
         interpreter (scripts/test.sh does)\n{}",
        String::from_utf8_lossy(&sdk.stderr)
    );
    let work = tempdir();
    let out = Command::new("node")
        .arg(dir.join("interop.mjs"))
        .current_dir(&dir)
        .env("ASSAY_BIN", bin())
        .env("ASSAY_WORK", work.path())
        .env("ASSAY_PYTHON", &python)
        .env(
            "ASSAY_SDK_SERVER",
            root().join("tests/fixtures/sdk_server.py"),
        )
        .output()
        .unwrap_or_else(|e| panic!("cannot run node (install nodejs and npm): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "interop.mjs failed ({:?})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    // Every scenario reported.
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok ")).count(),
        8,
        "{stdout}"
    );
}
