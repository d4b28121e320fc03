#!/bin/sh
# Builds the `assay` binary as it runs on a CPU without SHA extensions, for bench/run.sh on a CPU
# that has them: the same source, with `ring` (the crate's SHA-256, src/sha256.rs) patched so its
# CPU detection never reports the SHA extensions, exactly as CPUID does on a CPU without them
# (ring then takes its AVX or SSSE3 block function), and the crate's own look at the same CPUID bit
# (src/sha256.rs) answered the same way. Nothing in the repository changes: ring's
# source is copied from cargo's registry and patched under bench/target/no-sha/, and the build
# runs on a copy of the tracked files (its Cargo.lock records the patch). Prints the binary's path.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work="$here/target/no-sha"
mkdir -p "$work"

version=$(awk '/^name = "ring"$/ { getline; gsub(/"/, "", $3); print $3; exit }' "$root/Cargo.lock")
[ -n "$version" ] || { echo "build-no-sha.sh: no ring in Cargo.lock" >&2; exit 1; }
cargo fetch --quiet --manifest-path "$root/Cargo.toml"
src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"ring-$version" | head -n 1)
[ -d "$src" ] || { echo "build-no-sha.sh: ring $version is not in cargo's registry" >&2; exit 1; }

ring="$work/ring-$version"
intel="$ring/src/cpu/intel.rs"
if [ ! -f "$ring/.patched" ]; then
  rm -rf "$ring"
  cp -Rp "$src" "$ring"
  # The one place ring turns CPUID leaf 7 EBX bit 29 (SHA) into its SHA capability.
  sed -i 's/if check(extended_features_ebx, 29) {/if false \&\& check(extended_features_ebx, 29) {/' "$intel"
  [ "$(grep -c 'if false && check(extended_features_ebx, 29)' "$intel")" = 1 ] || {
    echo "build-no-sha.sh: ring $version's SHA detection is not where expected ($intel)" >&2
    exit 1
  }
  touch "$ring/.patched"
fi

# A fresh copy of the tracked files (tar keeps their mtimes, so rebuilds stay incremental; files
# the tree no longer tracks must not linger).
rm -rf "$work/tree"
mkdir -p "$work/tree"
(cd "$root" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$work/tree"
# The crate asks the CPU the same question where it decides where the decision log is hashed
# (src/sha256.rs, `accelerated`): it gets CPUID's answer too.
own="$work/tree/src/sha256.rs"
sed -i 's/std::arch::is_x86_feature_detected!("sha") \&\& /false \&\& /' "$own"
[ "$(grep -c 'false && std::arch::is_x86_feature_detected!("ssse3")' "$own")" = 1 ] || {
  echo "build-no-sha.sh: the crate's SHA check is not where expected ($own)" >&2
  exit 1
}
# (ring's own warnings, which a path dependency no longer caps, go to build.log.)
if ! CARGO_TARGET_DIR="$work/build" cargo build --release --quiet -p assay-cli --bin assay \
  --manifest-path "$work/tree/Cargo.toml" \
  --config "patch.crates-io.ring.path=\"$ring\"" 2>"$work/build.log"; then
  cat "$work/build.log" >&2
  exit 1
fi
echo "$work/build/release/assay"
