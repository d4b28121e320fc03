#!/usr/bin/env bash
# Sets up everything the tests need and runs every test: Rust (unit + integration against real
# child processes), the C/C++ ABI hosts, and the Python package. Safe to run on a fresh clone:
# it creates .venv and installs what it needs there.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "python environment (.venv)"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -r python/requirements-test.txt

step "C toolchain (gcc, g++, pkg-config: the C ABI tests build the example hosts)"
missing=()
for tool in gcc g++ pkg-config; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq gcc g++ pkg-config
  else
    echo "missing: ${missing[*]} (install gcc, g++ and pkg-config)" >&2
    exit 1
  fi
fi

step "node and the pinned MCP packages (tests/interop: the TypeScript SDK and reference servers)"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq nodejs npm
  else
    echo "missing: node/npm (install nodejs and npm; the interop tests need them)" >&2
    exit 1
  fi
fi
(cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)

step "Go toolchain (golang-go: the parser differential runs a Go encoding/json server)"
if ! command -v go >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq golang-go
  else
    echo "missing: go (install golang-go)" >&2
    exit 1
  fi
fi

step "rust: format and lints"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo clippy -p assay-stop-python -- -D warnings

step "rust: unit and integration tests"
export ASSAY_TEST_PYTHON="$PWD/.venv/bin/python"
cargo test --all-targets

step "rust: docs build without warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet

step "python: build the portable release wheel (scripts/build-wheel.sh) and install it into .venv"
# The wheel users get: release profile, tagged manylinux2014 (glibc 2.17), linked with zig. The
# tests use the installed wheel, never the source tree, and python/tests/test_wheel.py checks its
# tag and glibc symbol versions and installs the same wheel into a clean venv with --no-index.
rm -rf target/wheels
PYTHON="$PWD/.venv/bin/python" bash scripts/build-wheel.sh target/wheels
export ASSAY_WHEEL
ASSAY_WHEEL="$(ls target/wheels/assay_stop-*.whl)"
.venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$ASSAY_WHEEL"

step "python: tests"
.venv/bin/python -m pytest python/tests -q -W error --timeout 300 -p no:cacheprovider

step "python: mypy --strict (package, probe scripts, typed usage; stubtest runs in test_typing.py)"
.venv/bin/python -m mypy
