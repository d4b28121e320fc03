# Sourced by the scripts of bench/results/: the paths they share, the harness built, a work
# directory (removed at exit) made the current one, and `machine`, the line naming the CPU.
# Expects `here` (the script's directory) to be set.
bench=$(cd "$here/.." && pwd)
root=$(cd "$bench/.." && pwd)
assay=${ASSAY_BIN:-$root/target/release/assay}
cargo build --release --quiet --manifest-path "$bench/Cargo.toml"
b="$bench/target/release"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# machine LINES: the CPU, whether it has the SHA extensions, the time and the load.
machine() {
  echo "$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs, SHA extensions (sha_ni): $(grep -qw sha_ni /proc/cpuinfo && echo yes || echo no); $(date -u '+%Y-%m-%d %H:%M UTC'); load $(cut -d' ' -f1-3 /proc/loadavg); $1 lines"
}
