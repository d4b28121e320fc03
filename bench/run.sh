#!/bin/sh
# One command for the SPEC §11 benchmarks: builds the wrapper (release) and the harness, then runs
# every benchmark and prints a Markdown table. Extra arguments go to the harness
# (e.g. `bench/run.sh --quick`, `bench/run.sh --only throughput,latency`).
#
# Both kinds of CPU (SPEC §11: with and without SHA extensions). On a CPU with SHA extensions the
# harness runs twice: as the CPU is, then as a CPU without them — OpenSSL (the hash floor,
# `openssl dgst`, Python's hashlib) told to ignore them with OPENSSL_ia32cap, the wrapper built
# by bench/build-no-sha.sh with its SHA-256 detection not reporting them. On a CPU without SHA
# extensions it runs once. `--kind native` or `--kind no-sha` runs only that kind.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kind=both
if [ "${1:-}" = "--kind" ]; then
  kind="${2:?--kind native|no-sha|both}"
  shift 2
fi
cargo build --release --quiet --manifest-path "$here/../Cargo.toml" -p assay-cli --bin assay
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
bench="$here/target/release/assay-bench"

has_sha=no
if grep -qw sha_ni /proc/cpuinfo; then has_sha=yes; fi

if [ "$kind" = native ] || [ "$kind" = both ]; then
  "$bench" "$@"
fi
if [ "$has_sha" = yes ] && { [ "$kind" = no-sha ] || [ "$kind" = both ]; }; then
  echo
  no_sha_bin=$("$here/build-no-sha.sh")
  # OpenSSL: clear CPUID leaf 7 EBX bit 29 (SHA) in its capability vector.
  OPENSSL_ia32cap=':~0x20000000' \
    ASSAY_BIN="${ASSAY_BIN_NO_SHA:-$no_sha_bin}" \
    ASSAY_BENCH_KIND="no SHA extensions (emulated on this CPU: OPENSSL_ia32cap=':~0x20000000' for OpenSSL and Python; the wrapper from bench/build-no-sha.sh)" \
    "$bench" "$@"
fi
