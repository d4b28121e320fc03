#!/bin/sh
# Where the proxy's time goes, per scenario of the targets group (bench/src/targets.rs):
# instruction counts from callgrind (deterministic, load-independent) and flame graphs from
# `perf record` (cpu-clock samples; perf has no hardware counters on a VM).
#
# Usage: bench/profile.sh [LINES] [PERF_LINES]   (defaults 20000 and 200000)
#
# Writes into bench/profiles/:
#   summary.md              instructions per line (or per session) of each scenario, SHA-256 apart
#   SCENARIO.callgrind.txt  callgrind_annotate of the LINES run: top functions, inclusive and self
#   SCENARIO.svg            flame graph of the PERF_LINES run (when `perf record` works here)
#   SCENARIO.perf.txt       the same samples by thread and function (self)
# and the raw data (callgrind.out, perf.data) into bench/target/profiles/.
#
# Needs valgrind, python3, and for the flame graphs perf and inferno (`cargo install inferno`).
# The wrapper is built with line tables and symbols (the shipped profile otherwise) into
# target/profiling (PROFILE_TARGET_DIR overrides); ASSAY_BIN measures another binary.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
n=${1:-20000}
perf_n=${2:-200000}
small=$((n / 10))
out="$here/profiles"
raw="$here/target/profiles"
mkdir -p "$out" "$raw"

if [ -z "${ASSAY_BIN:-}" ]; then
  target=${PROFILE_TARGET_DIR:-$root/target/profiling}
  CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_PROFILE_RELEASE_STRIP=none \
    cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p assay-cli --bin assay \
    --target-dir "$target"
  ASSAY_BIN="$target/release/assay"
fi
assay=$ASSAY_BIN
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
bench="$here/target/release/assay-bench"
echo_server="$here/target/release/echo-server"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bench" --emit plain-policy > "$work/plain.yaml"
"$bench" --emit every-policy > "$work/every.yaml"
"$assay" mcp pin --out "$work/pins-listing.json" -- "$echo_server" --list-exec > /dev/null
for k in calls listing; do
  "$bench" --emit "$k" "$n" > "$work/$k-$n"
  "$bench" --emit "$k" "$small" > "$work/$k-$small"
  "$bench" --emit "$k" "$perf_n" > "$work/$k-$perf_n"
done
latency_n=$((n / 10))
"$bench" --emit calls "$latency_n" > "$work/pingpong-$latency_n"
"$bench" --emit calls "$((latency_n / 10))" > "$work/pingpong-$((latency_n / 10))"

# wrap POLICY SERVER_ARGS...: the wrapper's argv with a decision log (the targets group's);
# `run` removes the log before each run.
wrap() {
  policy=$1
  shift
  echo "$assay" mcp wrap --policy "$work/$policy.yaml" --decision-log "$work/decisions.ndjson" \
    --decision-log-new --event-source assay://bench/local -- "$echo_server" "$@"
}

# Scenarios: name, client (pipe: the first line, once answered the others at once; pingpong: one in flight; none: stdin
# /dev/null, the server exits at once), lines kind, wrapper argv (split into words: the
# repository, bench/target and mktemp paths must hold no spaces).
scenarios() {
  echo "hash-floor pipe calls $here/target/release/hash-floor-relay $work/decisions.ndjson -- $echo_server"
  echo "throughput-plain pipe calls $(wrap plain)"
  echo "listing-plain pipe listing $(wrap plain --list-exec)"
  echo "listing-every pipe listing $(wrap every --list-exec)"
  echo "calls-plain pipe calls $(wrap plain --list-exec)"
  echo "calls-every pipe calls $(wrap every --list-exec)"
  echo "latency-plain pingpong pingpong $(wrap plain)"
  echo "startup-bare none - $assay mcp wrap --policy $work/plain.yaml -- $echo_server"
  echo "startup-log none - $(wrap plain)"
}

# run CLIENT INPUT PROFILER ARGV...: the wrapper (ARGV) under PROFILER (one string, split into
# words), fed as CLIENT says; `loop`: 200 sessions of `none` in a row under one profiler (one
# session is a few samples).
run() {
  client=$1
  input=$2
  profiler=$3
  shift 3
  rm -f "$work/decisions.ndjson"
  # shellcheck disable=SC2086 # the profiler's words
  case $client in
    pipe) python3 "$here/pingpong.py" --first-answered "$input" -- $profiler "$@" \
      < /dev/null > /dev/null ;;
    pingpong) python3 "$here/pingpong.py" "$input" -- $profiler "$@" < /dev/null > /dev/null ;;
    none) $profiler "$@" < /dev/null > /dev/null ;;
    loop) $profiler sh -c 'i=0; while [ $i -lt 200 ]; do rm -f "$0"; "$@" < /dev/null > /dev/null;
      i=$((i + 1)); done' "$work/decisions.ndjson" "$@" < /dev/null ;;
  esac
}

# The total instructions (Ir) of a callgrind output file.
total_ir() {
  awk '/^(summary|totals):/ { print $2; exit }' "$1"
}

# Instructions in SHA-256's block functions (under valgrind the SHA extensions are not emulated:
# ring takes its AVX code, OpenSSL its AVX2 code, so this is the software cost).
sha_ir() {
  python3 "$here/callgrind_top.py" "$1" --sha
}

perf_ok=no
if perf record -q -e cpu-clock -o "$work/probe.data" true 2>/dev/null &&
  command -v inferno-collapse-perf > /dev/null; then
  perf_ok=yes
fi

{
  echo "# Profiles (bench/profile.sh $n $perf_n)"
  echo
  echo "$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), SHA extensions (sha_ni): $(grep -qw sha_ni /proc/cpuinfo && echo yes || echo no); $(date -u '+%Y-%m-%d %H:%M UTC'); wrapper: $("$assay" --version)"
  echo
  echo "Instructions (callgrind Ir, all threads of the wrapper — of the relay for the hash floor — not the server): per line = (Ir of $n lines − Ir of $small lines) / $((n - small)); latency: $latency_n − $((latency_n / 10)) round trips; start-up: the whole session. SHA-256 under valgrind is software code (no SHA extensions emulated: ring takes its AVX code, OpenSSL its AVX2 code), shown apart; natively both use the SHA extensions."
  echo
  echo "| scenario | Ir total | Ir per line (per session) | of which SHA-256 (soft) | without SHA-256 |"
  echo "|---|---|---|---|---|"
} > "$out/summary.md"

scenarios > "$work/scenarios"
callgrind="valgrind --tool=callgrind --dump-instr=no --dump-line=no --trace-children=no"
while read -r name client kind argv; do
  echo "profile.sh: $name" >&2
  case $client in
    pipe) big="$work/$kind-$n" little="$work/$kind-$small" count=$((n - small)) ;;
    pingpong) big="$work/pingpong-$latency_n" little="$work/pingpong-$((latency_n / 10))"
      count=$((latency_n - latency_n / 10)) ;;
    none) big=- little=- count=1 ;;
  esac
  # shellcheck disable=SC2086 # argv is word-split on purpose (see scenarios)
  run "$client" "$big" "$callgrind --callgrind-out-file=$raw/$name.callgrind.out" $argv 2>/dev/null
  ir=$(total_ir "$raw/$name.callgrind.out")
  sha=$(sha_ir "$raw/$name.callgrind.out")
  if [ "$client" = none ]; then
    per=$ir
    sha_per=$sha
  else
    # shellcheck disable=SC2086
    run "$client" "$little" "$callgrind --callgrind-out-file=$raw/$name-small.callgrind.out" \
      $argv 2>/dev/null
    ir_small=$(total_ir "$raw/$name-small.callgrind.out")
    sha_small=$(sha_ir "$raw/$name-small.callgrind.out")
    per=$(( (ir - ir_small) / count ))
    sha_per=$(( (sha - sha_small) / count ))
  fi
  echo "| $name | $ir | $per | $sha_per | $((per - sha_per)) |" >> "$out/summary.md"
  {
    echo "# $name: $argv"
    echo "# callgrind_annotate --inclusive=yes (top 45)"
    python3 "$here/callgrind_top.py" "$raw/$name.callgrind.out" --inclusive
    echo
    echo "# callgrind_annotate, self (top 45)"
    python3 "$here/callgrind_top.py" "$raw/$name.callgrind.out"
  } > "$out/$name.callgrind.txt"

  if [ "$perf_ok" = yes ]; then
    perf_client=$client
    case $client in
      pipe) input="$work/$kind-$perf_n" ;;
      none) input=- perf_client=loop ;;
      *) input=$big ;;
    esac
    # shellcheck disable=SC2086
    run "$perf_client" "$input" \
      "perf record -q -F 1999 -m 1024 -e cpu-clock --call-graph dwarf,16384 -o $raw/$name.perf.data" \
      $argv 2>/dev/null
    # The wrapper's threads only (their names start with `assay`; the relay's), not the server's.
    perf script -i "$raw/$name.perf.data" 2>/dev/null | inferno-collapse-perf |
      grep -E '^(assay|hash-floor)' > "$raw/$name.folded"
    inferno-flamegraph --minwidth 1 --title "assay: $name" < "$raw/$name.folded" > "$out/$name.svg"
    {
      echo "# $name: perf report --no-children (self samples of the wrapper's threads — the relay's for the hash floor — kernel included)"
      perf report -i "$raw/$name.perf.data" --no-children --comms assay,assay-client-to,assay-client-em,assay-server-to,assay-log-hash,assay-deep,hash-floor-rela \
        --sort comm,symbol \
        --stdio -g none --percent-limit 0.7 2>/dev/null | grep -v '^$' | grep -v '^#' |
        sed 's/ *- *- *$//' | head -60
    } > "$out/$name.perf.txt"
  fi
done < "$work/scenarios"
echo "profile.sh: $out/summary.md" >&2
cat "$out/summary.md"
