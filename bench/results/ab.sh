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
      timed "$which-$policy" "$bin" mcp wrap --policy "$policy.yaml" --decision-log log \
        --decision-log-new --event-source assay://bench/ab -- "$b/echo-server" --list-exec
    done
  done
done
python3 "$here/medians.py" \
  "A: every section / plain=A-every/A-plain" \
  "B: every section / plain=B-every/B-plain" \
  "B / A, every section=B-every/A-every" \
  "B / A, plain=B-plain/A-plain"
