#!/bin/sh
# What the `results` section (SPEC §5.3) costs per answer, in instructions (callgrind: the
# count does not depend on the machine's load), against the plain policy in the same run.
#
# Usage: bench/results/profile.sh [LINES]   (default 20000; the 4 KiB answers run LINES/4)
#
# The answer-heavy session: one `tools/list`, then LINES−1 `tools/call`s written at once
# (bench/pingpong.py --first-answered), every call answered by `echo-server --list-exec` —
# with `ok` (a 2-byte text, an 80-byte line) and with `--answer-bytes 4096` (a 4 KiB text, as a
# `resources/read` of a document carries). Three policies: the plain one, `record-only.yaml`
# (`results: {}`: every answer recorded, nothing judged) and `every-option.yaml` (every option).
# Per answer = (Ir of LINES lines − Ir of LINES/10) ÷ (the difference in lines); the SHA-256
# block functions (software code under valgrind) are shown apart. ASSAY_BIN measures another
# binary (default: the profiling build of bench/profile.sh). The callgrind output of each
# configuration's longer session is kept in bench/target/profiles/results-ANSWER-POLICY.callgrind.out
# and its top functions (inclusive) written beside it as .txt.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bench=$(cd "$here/.." && pwd)
root=$(cd "$bench/.." && pwd)
n=${1:-20000}
if [ -z "${ASSAY_BIN:-}" ]; then
  target=${PROFILE_TARGET_DIR:-$root/target/profiling}
  CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_PROFILE_RELEASE_STRIP=none \
    cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p assay-cli --bin assay \
    --target-dir "$target"
  ASSAY_BIN="$target/release/assay"
fi
cargo build --release --quiet --manifest-path "$bench/Cargo.toml"
tool="$bench/target/release/assay-bench"
echo_server="$bench/target/release/echo-server"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tool" --emit plain-policy > "$work/plain.yaml"
cp "$here/every-option.yaml" "$here/record-only.yaml" "$here/rules.toml" "$work/"
raw="$bench/target/profiles"
mkdir -p "$raw"
callgrind="valgrind --tool=callgrind --dump-instr=no --dump-line=no --trace-children=no"

# ir POLICY LINES ANSWER_BYTES: the wrapper's instructions for one session.
ir() {
  "$tool" --emit calls "$2" > "$work/lines"
  rm -f "$work/decisions.ndjson"
  extra=
  [ "$3" -gt 0 ] && extra="--answer-bytes $3"
  # shellcheck disable=SC2086 # the server's words
  python3 "$bench/pingpong.py" --first-answered "$work/lines" -- $callgrind \
    --callgrind-out-file="$work/out" "$ASSAY_BIN" mcp wrap --policy "$work/$1.yaml" \
    --decision-log "$work/decisions.ndjson" --decision-log-new \
    --event-source assay://bench/local -- "$echo_server" --list-exec $extra \
    < /dev/null > /dev/null 2>&1
  total=$(awk '/^(summary|totals):/ { print $2; exit }' "$work/out")
  sha=$(python3 "$bench/callgrind_top.py" "$work/out" --sha)
  echo "$total $sha"
}

echo "$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), SHA extensions (sha_ni): $(grep -qw sha_ni /proc/cpuinfo && echo yes || echo no); $(date -u '+%Y-%m-%d %H:%M UTC'); wrapper: $("$ASSAY_BIN" --version)"
echo
echo "| answer | policy | Ir per answer | of which SHA-256 (soft) | without SHA-256 | × plain | × plain without SHA |"
echo "|---|---|---|---|---|---|---|"
for bytes in 0 4096; do
  big=$n
  [ "$bytes" -gt 0 ] && big=$((n / 4))
  small=$((big / 10))
  count=$((big - small))
  plain_per=0
  plain_nosha=0
  for policy in plain record-only every-option; do
    set -- $(ir "$policy" "$big" "$bytes")
    b_ir=$1 b_sha=$2
    cp "$work/out" "$raw/results-$bytes-$policy.callgrind.out"
    python3 "$bench/callgrind_top.py" "$raw/results-$bytes-$policy.callgrind.out" --inclusive \
      > "$raw/results-$bytes-$policy.txt"
    set -- $(ir "$policy" "$small" "$bytes")
    per=$(( (b_ir - $1) / count ))
    sha=$(( (b_sha - $2) / count ))
    nosha=$((per - sha))
    if [ "$policy" = plain ]; then
      plain_per=$per
      plain_nosha=$nosha
    fi
    label="ok (80-byte line)"
    [ "$bytes" -gt 0 ] && label="$bytes-byte text"
    echo "| $label | $policy | $per | $sha | $nosha | $(python3 -c "print(f'{$per/$plain_per:.2f}×')") | $(python3 -c "print(f'{$nosha/$plain_nosha:.2f}×')") |"
  done
done
