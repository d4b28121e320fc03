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

# timed NAME COMMAND...: one pipelined session of `lines` (bench/pingpong.py --first-answered)
# through COMMAND, its wall and CPU appended to `times` as "$round NAME WALL USER SYSTEM" (what
# medians.py reads); COMMAND's stderr to stderr.log, as a host keeps a server's.
timed() {
  name=$1
  shift
  python3 "$bench/pingpong.py" --first-answered lines -- \
    /usr/bin/time -f "$round $name %e %U %S" -a -o times "$@" > /dev/null 2> stderr.log
}
