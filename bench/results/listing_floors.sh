#!/bin/sh
# What the every-section policy must write, priced at the floor (issue 50 item 4): the
# listing-heavy session of the targets group (every 10th line a `tools/list`, answered with two
# tools by `echo-server --list-exec`; bench/pingpong.py --first-answered) through
#   - `pipelined-spec-floor-relay` writing what the plain policy writes: one decision line per
#     client line of the plain policy's mean length (FLOOR_RECORD, default 719 bytes);
#   - the same relay writing what the every-section policy writes: longer decision lines (the
#     recorded, redacted arguments: 880 bytes), and per `tools/list` a listing event in the log
#     (679 bytes) and the line on stderr saying which tool was hidden (92 bytes), each with one
#     write(2) — the policy's judgement itself costing nothing;
#   - the wrapper under both policies (bench/src/listing.rs's PLAIN and every section).
# The lengths are the means of a wrapper session of this shape (measured 2026-12-06). Each
# process's wall and user + system CPU from /usr/bin/time, ROUNDS rounds interleaved, medians of
# the within-round ratios.
#
# Usage: bench/results/listing_floors.sh [LINES [ROUNDS]]   (default 200000 lines, 9 rounds)
#   ASSAY_BIN=/absolute/path/to/assay   the wrapper (default target/release/assay)
#   PLAIN_RECORD=719 EVERY_RECORD=880 LISTING_EVENT=679 STDERR_LINE=92   other lengths
set -eu
here=$(cd "$(dirname "$0")" && pwd)
n=${1:-200000}
rounds=${2:-9}
. "$here/setup.sh"
"$b/assay-bench" --emit listing "$n" > lines
"$b/assay-bench" --emit plain-policy > plain.yaml
"$b/assay-bench" --emit every-policy > every.yaml
"$assay" mcp pin --out pins-listing.json -- "$b/echo-server" --list-exec > /dev/null

one() {
  rm -f log log.sha256
  timed "$@"
}
machine "$n"
for round in $(seq "$rounds"); do
  one floor-plain env FLOOR_RECORD="${PLAIN_RECORD:-719}" \
    "$b/pipelined-spec-floor-relay" log -- "$b/echo-server" --list-exec
  one floor-every env FLOOR_RECORD="${EVERY_RECORD:-880}" FLOOR_LISTING_EVENT="${LISTING_EVENT:-679}" \
    FLOOR_STDERR="${STDERR_LINE:-92}" "$b/pipelined-spec-floor-relay" log -- "$b/echo-server" --list-exec
  for policy in plain every; do
    one "wrap-$policy" "$assay" mcp wrap --policy "$policy.yaml" --decision-log log \
      --decision-log-new --event-source assay://bench/floors -- "$b/echo-server" --list-exec
  done
done
python3 "$here/medians.py" \
  "floor, every section's bytes / plain's=floor-every/floor-plain" \
  "wrap, every section / plain=wrap-every/wrap-plain" \
  "wrap plain / its floor=wrap-plain/floor-plain" \
  "wrap every / its floor=wrap-every/floor-every"
