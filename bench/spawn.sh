#!/bin/sh
# The spawn decision (SPEC §3.1a): the wrapper's clone(CLONE_VM|CLONE_VFORK) spawn against
# fork+exec, from a Python host holding a large resident heap (bench/spawn_host.py, through the C
# ABI) and from the CLI. fork+exec is the wrapper's own fallback, forced for real by a seccomp
# filter that refuses the shared-memory clone (tests/fixtures/refuse_spawn.c, mode `vfork`); the
# other side runs under the same filter refusing nothing relevant (mode `none`), so both pay the
# same filter overhead. Variants alternate round by round; medians are printed as JSON lines.
#
# usage: bench/spawn.sh [HEAP_MIB (default 2048)] [ROUNDS (default 5)]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
heap=${1:-2048}
rounds=${2:-5}
python=${PYTHON:-python3}

cargo build --release --quiet --manifest-path "$root/Cargo.toml" --lib --bin assay
cargo build --release --quiet --manifest-path "$here/Cargo.toml" --bin echo-server
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -std=c11 -O1 "$root/tests/fixtures/refuse_spawn.c" -o "$tmp/refuse_spawn"
lib="$root/target/release/libassay.so"
assay="$root/target/release/assay"
server="$here/target/release/echo-server"
printf 'version: "1"\nallow: ["*"]\n' > "$tmp/policy.yaml"

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $(uname -r), loadavg $(cut -d' ' -f1 /proc/loadavg)"
echo "# Python host, ${heap} MiB resident, 20 sessions per run, ${rounds} runs per variant"
i=0
while [ "$i" -lt "$rounds" ]; do
  for mode in none vfork; do
    case $mode in none) label=clone ;; vfork) label=fork ;; esac
    printf '{"host":"python","spawn":"%s",' "$label"
    "$tmp/refuse_spawn" "$mode" "$python" "$here/spawn_host.py" "$lib" "$server" "$heap" 20 | cut -c2-
  done
  i=$((i + 1))
done

echo "# CLI: assay mcp wrap --policy P -- echo-server </dev/null, 200 runs per variant and round"
i=0
while [ "$i" -lt "$rounds" ]; do
  for mode in none vfork; do
    case $mode in none) label=clone ;; vfork) label=fork ;; esac
    "$python" - "$tmp/refuse_spawn" "$mode" "$assay" "$tmp/policy.yaml" "$server" "$label" <<'EOF'
import json, statistics, subprocess, sys, time
helper, mode, assay, policy, server, label = sys.argv[1:]
argv = [helper, mode, assay, "mcp", "wrap", "--policy", policy, "--", server]
times = []
for _ in range(200):
    t = time.perf_counter()
    subprocess.run(argv, stdin=subprocess.DEVNULL, check=True)
    times.append(time.perf_counter() - t)
print(json.dumps({"host": "cli", "spawn": label, "wall_ms": round(statistics.median(times) * 1e3, 3)}))
EOF
  done
  i=$((i + 1))
done
