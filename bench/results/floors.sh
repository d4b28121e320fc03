#!/bin/sh
# What a second log line per call costs at the floor (issue 47 item 6, SPEC §5.3): the answer-heavy
# session (one `tools/list`, then N−1 `tools/call`s written at once, bench/pingpong.py
# --first-answered, every call answered by `echo-server --list-exec`) through
#   - the hash floor (`hash-floor-relay`: one ~400-byte log line per client line, OpenSSL SHA-256
#     of the log's prefix), and the answer floor (`answer-floor-relay`: the same, plus one
#     ~680-byte line per server line — the size of an `assay.mcp.result` event — into the same
#     log under its lock, hashed into the same digest): the least a logging proxy that records
#     every answer can do;
#   - the spec floor (`spec-floor-relay`: the hash floor that also reads each call line as JSON,
#     hashes its arguments and writes a log line as long as the wrapper's decision line: the
#     least SPEC §4.1 asks of every call, issue 50 item 4), and the same work spread over threads
#     as a proxy on two CPUs spreads it (`pipelined-spec-floor-relay`: read and hash the
#     arguments; write the log line, then forward; hash the log);
#   - the wrapper with the plain policy, `record-only.yaml` (`results: {}`) and
#     `every-option.yaml`.
# Each process's user + system CPU (and wall) from /usr/bin/time around the relay (which waits
# for the server: the server's own CPU, from a direct session, is subtracted), ROUNDS rounds
# interleaved, medians; then the ratios within the same run.
#
# Usage: bench/results/floors.sh [LINES [ROUNDS]]   (default 200000 lines, 5 rounds)
#   ANSWER="--answer-bytes 4096"   answers of 4 KiB instead of `ok` (add --answer-accented for
#                                  French prose naming a token prefix)
#   ASSAY_BIN=…                    the wrapper (default target/release/assay)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
n=${1:-200000}
rounds=${2:-5}
answer=${ANSWER:-}
. "$here/setup.sh"
"$b/assay-bench" --emit calls "$n" > lines
"$b/assay-bench" --emit plain-policy > plain.yaml
cp "$here/record-only.yaml" "$here/every-option.yaml" "$here/rules.toml" .

# one NAME COMMAND…: one session, its time appended to `times`.
one() {
  rm -f log log.sha256
  name=$1
  shift
  # shellcheck disable=SC2086 # the server's words
  python3 "$bench/pingpong.py" --first-answered lines -- \
    /usr/bin/time -f "$name %e %U %S" -a -o times "$@" > /dev/null 2>&1
}
wrap() {
  # shellcheck disable=SC2086 # the server's words
  one "$1" "$assay" mcp wrap --policy "$1.yaml" --decision-log log --decision-log-new \
    --event-source assay://bench/floors -- "$b/echo-server" --list-exec $answer
}
echo "$(machine "$n") ${answer:-(answers: ok)}"
for _ in $(seq "$rounds"); do
  # shellcheck disable=SC2086 # the server's words
  one direct "$b/echo-server" --list-exec $answer
  # shellcheck disable=SC2086
  one hash-floor "$b/hash-floor-relay" log -- "$b/echo-server" --list-exec $answer
  # shellcheck disable=SC2086
  one answer-floor "$b/answer-floor-relay" log -- "$b/echo-server" --list-exec $answer
  # shellcheck disable=SC2086
  one spec-floor "$b/spec-floor-relay" log -- "$b/echo-server" --list-exec $answer
  # shellcheck disable=SC2086
  one pipelined-spec-floor "$b/pipelined-spec-floor-relay" log -- "$b/echo-server" --list-exec $answer
  wrap plain
  wrap record-only
  wrap every-option
done
python3 - <<'PY'
import collections, statistics
runs = collections.defaultdict(list)
for line in open("times"):
    name, wall, user, system = line.split()
    runs[name].append((float(wall), float(user) + float(system)))
med = {n: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for n, v in runs.items()}
server = med["direct"][1]
cpu = {n: c - server for n, (_, c) in med.items()}
print("| session | wall (s) | CPU without the server's (s) |")
print("|---|---|---|")
for n in ("hash-floor", "spec-floor", "pipelined-spec-floor", "answer-floor", "plain", "record-only", "every-option"):
    print(f"| {n} | {med[n][0]:.3f} | {cpu[n]:.3f} |")
def ratio(a, b):
    return f"{med[a][0] / med[b][0]:.2f}x wall, {cpu[a] / cpu[b]:.2f}x CPU"
print()
print("answer floor / hash floor:", ratio("answer-floor", "hash-floor"))
print("record-only / plain:      ", ratio("record-only", "plain"))
print("every-option / plain:     ", ratio("every-option", "plain"))
print("plain / hash floor:       ", ratio("plain", "hash-floor"))
print("spec floor / hash floor:  ", ratio("spec-floor", "hash-floor"))
print("plain / spec floor:       ", ratio("plain", "spec-floor"))
print("pipelined spec floor / hash floor:", ratio("pipelined-spec-floor", "hash-floor"))
print("plain / pipelined spec floor:     ", ratio("plain", "pipelined-spec-floor"))
PY
