#!/bin/sh
# The close-to-exit benchmark (issue 45): from the client closing stdin to the wrapper's exit with
# its stop record written, for server-everything started directly (`node server`), through
# `npx` and through `sh -c 'server; :'`, as it is (it exits at stdin EOF) and kept running after
# EOF (bench/close_linger.mjs preloaded). Target: the wrapper has exited before the 2 s after
# which MCP SDK clients send SIGTERM. Paired runs: every round runs every configuration once
# (order rotated), the ratio to `node server` is taken inside the round.
#
# usage: bench/close.sh [ROUNDS (default 7)]     ASSAY_BIN=/path/to/assay measures another binary
# Needs node and tests/interop/node_modules (`cd tests/interop && npm ci`); npx runs offline.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
rounds=${1:-7}
python=${PYTHON:-python3}
if [ -z "${ASSAY_BIN:-}" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p assay-cli --bin assay
  ASSAY_BIN="$root/target/release/assay"
fi
sha=no
if grep -qw sha_ni /proc/cpuinfo; then sha=yes; fi
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), SHA extensions: $sha, $(nproc) CPUs, $(uname -r), loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $ASSAY_BIN ($("$ASSAY_BIN" --version)), bench scripts at $(git -C "$root" rev-parse --short HEAD), $rounds rounds, node $(node --version)"
exec "$python" "$here/close_client.py" "$ASSAY_BIN" "$rounds"
