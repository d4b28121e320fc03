#!/usr/bin/env bash
# Builds assay and runs the demo: the bundled example MCP server wrapped with the bundled policy
# into a capture directory, a scripted client session with allowed and denied calls, then the
# reader's verdict.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p assay-cli
exec target/release/assay demo "$@"
