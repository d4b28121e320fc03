#!/usr/bin/env bash
# Sets up everything the tests need and runs every test: Rust (unit + integration against real
# child processes), the C/C++ ABI hosts, `cargo install`, the Python package and its `assay`
# command, and the README's examples. Safe to run on a fresh clone: it creates .venv and
# tests/interop/node_modules in this checkout and installs the test tools there; it installs
# nothing system-wide unless ASSAY_INSTALL_SYSTEM_PACKAGES=1 (see need_system below).
# Every test runs here (CI=true: a test whose tool is missing fails instead of skipping). The
# Python and npm installs run only when their lock files (or the interpreter) changed since the
# last run, and in the background while the first Rust build compiles; the release wheel builds
# in the background, at the lowest CPU priority, while the Rust tests (which mostly wait on
# child processes) run. Each step prints the time since the start; docs/development.md has the
# measured figures.
set -euo pipefail
cd "$(dirname "$0")/.."
export CI=true
# A first build (no target/debug yet: a fresh clone, as CI's) has no incremental cache to reuse;
# writing one costs ~10% of the build (docs/development.md). Later runs keep cargo's default.
if [ ! -d target/debug ]; then
  export CARGO_INCREMENTAL=0
fi

started=$SECONDS
step() { printf '\n==> [%dm%02ds] %s\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)) "$*"; }

# up_to_date STAMP INPUT...: whether STAMP holds the digest of the inputs (files, or `cmd:…`
# outputs), as written by `stamp` after the last successful install.
digest_of() {
  local x
  for x in "$@"; do
    case "$x" in
      cmd:*) ${x#cmd:} 2>&1 ;;
      *) cat "$x" ;;
    esac
  done | sha256sum | cut -d' ' -f1
}
up_to_date() { local stamp="$1"; shift; [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(digest_of "$@")" ]; }
stamp() { local stamp="$1"; shift; digest_of "$@" >"$stamp"; }

# System tools are never installed silently: a missing one is reported with the Debian package
# and the command to run, and the script stops. With ASSAY_INSTALL_SYSTEM_PACKAGES=1 (CI sets it
# on the fresh machine it owns) the script runs that command itself, after printing it.
need_system() { # need_system WHY PACKAGES... -- COMMANDS...
  local why="$1"; shift
  local packages=() commands=() missing=()
  while [ "$1" != "--" ]; do packages+=("$1"); shift; done
  shift
  commands=("$@")
  for c in "${commands[@]}"; do command -v "$c" >/dev/null || missing+=("$c"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  local cmd="apt-get update && apt-get install -y ${packages[*]}"
  if [ "${ASSAY_INSTALL_SYSTEM_PACKAGES:-}" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "scripts/test.sh: missing ${missing[*]} ($why)."
    echo "scripts/test.sh: installing system-wide, as ASSAY_INSTALL_SYSTEM_PACKAGES=1 asks: $cmd"
    apt-get update -qq
    apt-get install -y -qq "${packages[@]}"
  else
    echo "scripts/test.sh: missing ${missing[*]} ($why)." >&2
    echo "scripts/test.sh: install the Debian packages ${packages[*]} (as root: $cmd) and run it again," >&2
    echo "scripts/test.sh: or set ASSAY_INSTALL_SYSTEM_PACKAGES=1 to let this script run that command (as root)." >&2
    exit 1
  fi
}

step "C toolchain (gcc, g++, pkg-config: the C ABI tests build the example hosts)"
need_system "the C/C++ ABI tests compile the example hosts" gcc g++ pkg-config -- gcc g++ pkg-config

step "node and npm (the interop tests run the MCP TypeScript SDK, the reference servers and the Inspector)"
need_system "the interop tests run the MCP TypeScript SDK, the reference servers and the Inspector" \
  nodejs npm -- node npm

step "Go toolchain (golang-go: the parser differential runs a Go encoding/json server)"
need_system "the parser differential builds a Go encoding/json server" golang-go -- go

# The installs wait on the network and the disk, the Rust build on the CPU: they run side by side.
mkdir -p target
step "background: python environments (.venv, .venv-mcp-1.12) and the pinned npm packages (tests/interop)"
(
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
  fi
  inputs=(python/requirements-test.txt "cmd:.venv/bin/python --version")
  if up_to_date .venv/.assay-requirements.sha256 "${inputs[@]}"; then
    echo "python/requirements-test.txt unchanged since the last install: nothing to install"
  else
    .venv/bin/python -m pip install --upgrade pip
    .venv/bin/python -m pip install -r python/requirements-test.txt
    stamp .venv/.assay-requirements.sha256 "${inputs[@]}"
  fi
  # The MCP Python SDK before python-sdk #1178 (lax integer ids), a client of
  # tests/list_differential.rs: its own venv, locked in tests/fixtures/requirements-mcp-1.12.txt.
  if [ ! -x .venv-mcp-1.12/bin/python ]; then
    python3 -m venv .venv-mcp-1.12
  fi
  inputs=(tests/fixtures/requirements-mcp-1.12.txt "cmd:.venv-mcp-1.12/bin/python --version")
  if up_to_date .venv-mcp-1.12/.assay-requirements.sha256 "${inputs[@]}"; then
    echo "tests/fixtures/requirements-mcp-1.12.txt unchanged since the last install: nothing to install"
  else
    .venv-mcp-1.12/bin/python -m pip install -r tests/fixtures/requirements-mcp-1.12.txt
    stamp .venv-mcp-1.12/.assay-requirements.sha256 "${inputs[@]}"
  fi
) >target/test-venv.log 2>&1 &
venv_job=$!
(
  inputs=(tests/interop/package-lock.json "cmd:node --version")
  if up_to_date tests/interop/node_modules/.assay-package-lock.sha256 "${inputs[@]}"; then
    echo "tests/interop/package-lock.json unchanged since the last npm ci: nothing to install"
  else
    (cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)
    stamp tests/interop/node_modules/.assay-package-lock.sha256 "${inputs[@]}"
  fi
) >target/test-npm.log 2>&1 &
npm_job=$!
# A step that fails before the installs are waited for takes them down with it (and the wheel
# build started below, in a process group of its own: cargo and rustc with it).
wheel_job=
stop_background() {
  kill $(jobs -p) 2>/dev/null || true
  if [ -n "$wheel_job" ]; then kill -- "-$wheel_job" 2>/dev/null || true; fi
}
trap stop_background EXIT
# wait_for JOB NAME LOG: the background install's status; its log is shown either way.
wait_for() {
  local status=0
  wait "$1" || status=$?
  sed "s/^/  [$2] /" "$3"
  if [ "$status" -ne 0 ]; then
    echo "scripts/test.sh: the $2 install failed (log above, also in $3)" >&2
    exit "$status"
  fi
}

step "rust: format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings

step "waiting for the python environment and the npm packages"
wait_for "$venv_job" venv target/test-venv.log
wait_for "$npm_job" npm target/test-npm.log

# The release build below (the wheel) is optimized crate by crate in 16 units, without the
# shipped profile's fat LTO in one unit (Cargo.toml [profile.release]): the same code at the same
# optimization level, with no inlining across crates, which keeps this command within its time on
# two cores (a third less CPU than thin LTO; docs/development.md). The shipped profile is what
# `cargo install`, scripts/build-wheel.sh, scripts/build-c.sh --release and bench/run.sh use
# outside this script (docs/decisions.md, "Start-up and size").
step "background: the portable release wheel (scripts/build-wheel.sh; lowest CPU priority, log in target/test-wheel.log)"
# The wheel users get: release profile, tagged manylinux2014 (glibc 2.17), linked with zig. Its
# build needs only the venv, and the tests below mostly wait on child processes: the build
# takes the CPU time they leave (nice 19), and the tests (and cargo doc, cargo install) keep the
# priority. target/release and target/debug have separate build locks, so the builds overlap.
# It runs in a session of its own (setsid), so that a failing step can end it whole; where the
# kernel groups sessions for scheduling (sched_autogroup), the new session's group gets nice 19
# too, else the build would get an equal share beside the tests.
rm -rf target/wheels
CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 PYTHON="$PWD/.venv/bin/python" \
  setsid bash -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null || true
    exec nice -n 19 bash scripts/build-wheel.sh target/wheels' >target/test-wheel.log 2>&1 &
wheel_job=$!

step "rust: unit and integration tests"
export ASSAY_TEST_PYTHON="$PWD/.venv/bin/python"
export ASSAY_TEST_PYTHON_MCP_1_12="$PWD/.venv-mcp-1.12/bin/python"
# The integration tests spend most of their time waiting on child processes (servers, SDK
# clients, drains), not on the CPU: four at a time on two cores (libtest's default is one per
# core; docs/development.md has the measurements).
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"
cargo test --all-targets

step "rust: docs build without warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

step "install: cargo install --path crates/assay-cli into a temporary root, then a session with that assay"
# With the dev profile (`--debug`), reusing most of what the tests compiled (the CLI alone
# resolves some dependencies' features differently: about 26 crates are compiled again): the
# install and the installed binary are checked the same way, and the release profile is compiled
# by the wheel build running in the background.
bash scripts/check-install.sh --debug

step "python: waiting for the release wheel, then installing it into .venv"
# The tests use the installed wheel, never the source tree, and python/tests/test_wheel.py checks
# its tag and glibc symbol versions and installs the same wheel into a clean venv with --no-index.
status=0
wait "$wheel_job" || status=$?
wheel_job=
sed 's/^/  [wheel] /' target/test-wheel.log
if [ "$status" -ne 0 ]; then
  echo "scripts/test.sh: the wheel build failed (log above, also in target/test-wheel.log)" >&2
  exit "$status"
fi
export ASSAY_WHEEL
ASSAY_WHEEL="$(ls target/wheels/assay_stop-*.whl)"
.venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$ASSAY_WHEEL"

step "python: tests"
# Two at a time (pytest-xdist): the suite is CPU-bound (48 s user in 63 s one at a time, 30 s
# two at a time on two cores; docs/development.md), and nothing else runs once the wheel is
# built. ASSAY_PYTHON_TEST_WORKERS picks another count (0: in this process, one at a time).
.venv/bin/python -m pytest python/tests -q -W error --timeout 300 -p no:cacheprovider \
  -n "${ASSAY_PYTHON_TEST_WORKERS:-2}"

step "python: mypy --strict (package, probe scripts, typed usage; stubtest runs in test_typing.py)"
.venv/bin/python -m mypy

step "done: every test passed"
