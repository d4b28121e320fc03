#!/bin/sh
# Two wrapper binaries side by side (a change measured against the tree before it): the targets
# group's pipelined session (bench/pingpong.py --first-answered; `listing`: every 10th line a
# `tools/list` answered with two tools, `calls`: one `tools/list`, then calls) through each
# binary under the plain policy and the every-section policy (bench/src/listing.rs), stderr to a
# file as a host keeps it. Each wrapper's wall and user + system CPU from /usr/bin/time, ROUNDS
# rounds with the four runs interleaved; medians, and every ÷ plain taken within each round.
#
# Usage: bench/results/ab.sh A_BIN B_BIN [listing|calls [LINES [ROUNDS]]]
#   (absolute paths; default listing, 200000 lines, 9 rounds)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
a=$1
b_bin=$2
kind=${3:-listing}
n=${4:-200000}
rounds=${5:-9}
. "$here/setup.sh"
"$b/assay-bench" --emit "$kind" "$n" > lines
"$b/assay-bench" --emit plain-policy > plain.yaml
"$b/assay-bench" --emit every-policy > every.yaml
"$a" mcp pin --out pins-listing.json -- "$b/echo-server" --list-exec > /dev/null

machine "$n $kind"
for round in $(seq "$rounds"); do
  for which in A B; do
    bin=$a
    [ "$which" = B ] && bin=$b_bin
    for policy in plain every; do
      rm -f log
      python3 "$bench/pingpong.py" --first-answered lines -- \
        /usr/bin/time -f "$round $which-$policy %e %U %S" -a -o times \
        "$bin" mcp wrap --policy "$policy.yaml" --decision-log log --decision-log-new \
        --event-source assay://bench/ab -- "$b/echo-server" --list-exec > /dev/null 2> stderr.log
    done
  done
done
python3 - <<'PY'
import collections, statistics
runs = collections.defaultdict(dict)
for line in open("times"):
    r, name, wall, user, system = line.split()
    runs[name][r] = (float(wall), float(user) + float(system))
print("| run | wall (s) | CPU (s) |")
print("|---|---|---|")
for n, v in sorted(runs.items()):
    print(f"| {n} | {statistics.median(w for w, _ in v.values()):.3f} | {statistics.median(c for _, c in v.values()):.3f} |")
def ratio(x, y):
    w = statistics.median(runs[x][r][0] / runs[y][r][0] for r in runs[x])
    c = statistics.median(runs[x][r][1] / runs[y][r][1] for r in runs[x])
    return f"{w:.2f}x wall, {c:.2f}x CPU"
print()
for which in "AB":
    print(f"{which}: every section / plain: {ratio(which + '-every', which + '-plain')}")
print(f"B / A, every section: {ratio('B-every', 'A-every')}")
print(f"B / A, plain:         {ratio('B-plain', 'A-plain')}")
PY
