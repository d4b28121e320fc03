#!/usr/bin/env bash
# Builds the C ABI libraries (libassay.so, libassay.a: the crate crates/assay-capi) and writes target/<profile>/assay.pc, so
# that `PKG_CONFIG_PATH=target/<profile> pkg-config --cflags --libs assay` works from this
# checkout.
#
# usage: scripts/build-c.sh [--release]
set -euo pipefail
cd "$(dirname "$0")/.."

profile=debug
args=(-p assay-capi)
if [ "${1:-}" = "--release" ]; then
  profile=release
  args+=(--release)
fi
cargo build "${args[@]}"

target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
libdir="$(cd "$target_dir/$profile" && pwd)"
if [ "$profile" = release ]; then
  # The release libraries carry no debug info (SPEC §11): the profile strips libassay.so, but an
  # archive is never linked by cargo, so it still holds the standard library's debug info and the
  # LLVM bitcode cargo embeds for link-time optimization, neither of which a C linker reads.
  strip --strip-debug --remove-section=.llvmbc --remove-section=.llvmcmd "$libdir/libassay.a"
fi
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
sed -e "s|@PREFIX@|$PWD|g" -e "s|@LIBDIR@|$libdir|g" -e "s|@VERSION@|$version|g" \
  bindings/c/assay.pc.in >"$libdir/assay.pc"
echo "wrote $libdir/assay.pc"
echo "  PKG_CONFIG_PATH=$libdir pkg-config --cflags --libs assay"
