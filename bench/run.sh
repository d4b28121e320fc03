#!/bin/sh
# One command for the SPEC §11 benchmarks: builds the wrapper (release) and the harness, then runs
# every benchmark and prints a Markdown table. Extra arguments go to the harness
# (e.g. `bench/run.sh --quick`, `bench/run.sh --only throughput,latency`).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cargo build --release --quiet --manifest-path "$here/../Cargo.toml" --bin assay
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
exec "$here/target/release/assay-bench" "$@"
