#!/usr/bin/env bash
# Builds the release wheel of the Python package with the portable tag manylinux2014
# (manylinux_2_17): maturin links the extension with `zig cc` against glibc 2.17 symbols, so the
# wheel installs on any x86_64/aarch64 Linux with glibc >= 2.17, not only on this machine's.
# zig comes from the `ziglang` package on PyPI (python/requirements-test.txt), so the build needs
# no toolchain beyond Rust and the venv.
#
# usage: scripts/build-wheel.sh OUT_DIR    (the wheel is written into OUT_DIR)
# PYTHON: the interpreter with maturin and ziglang installed (default: .venv/bin/python).
set -euo pipefail
out="${1:?usage: scripts/build-wheel.sh OUT_DIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/.."

python="${PYTHON:-$PWD/.venv/bin/python}"
if ! "$python" -c 'import ziglang' 2>/dev/null; then
  echo "build-wheel.sh: $python has no ziglang (pip install -r python/requirements-test.txt)" >&2
  exit 1
fi
# maturin runs zig as `python -m ziglang` with the first python3 on PATH.
export PATH="$(dirname "$python"):$PATH"
# The compatibility tag is pinned in pyproject.toml ([tool.maturin] compatibility).
"$python" -m maturin build --release --strip --zig --out "$out"
