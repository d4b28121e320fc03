#!/bin/sh
# The signing-cost benchmark (SPEC §4.5, issue 49 item 4): how much `--sign-key` adds to a
# session's stop — from the client closing stdin to the wrapper's exit with its stop record (and,
# signed, its attestation) written — for a typical session (100 calls) and a maximal capture
# (10,000 calls, the reader's bound). Paired runs: every round runs both configurations, order
# rotated, and the difference is taken inside the round. Target: signing adds at most 2 ms.
#
# usage: bench/sign.sh [ROUNDS (default 15)]   ASSAY_BIN=/path/to/assay measures another binary;
# ECHO_SERVER=/path/to/echo-server (default bench/target/release/echo-server, built if missing).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
rounds=${1:-15}
python=${PYTHON:-python3}
if [ -z "${ASSAY_BIN:-}" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p assay-cli --bin assay
  ASSAY_BIN="$root/target/release/assay"
fi
if [ -z "${ECHO_SERVER:-}" ]; then
  cargo build --release --quiet --manifest-path "$here/Cargo.toml" --bin echo-server
  ECHO_SERVER="$here/target/release/echo-server"
fi
sha=no
if grep -qw sha_ni /proc/cpuinfo; then sha=yes; fi
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), SHA extensions: $sha, $(nproc) CPUs, $(uname -r), loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $ASSAY_BIN ($("$ASSAY_BIN" --version)), bench scripts at $(git -C "$root" rev-parse --short HEAD), $rounds rounds"
exec "$python" "$here/sign_stop.py" "$ASSAY_BIN" "$ECHO_SERVER" "$rounds"
