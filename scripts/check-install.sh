#!/usr/bin/env bash
# Installs assay the documented way (`cargo install --locked --path crates/assay-cli`) into a temporary root and
# runs a real session with the installed binary: the demo server behind the demo policy, a short
# client session, then the reader on the capture it wrote. Run by scripts/test.sh.
#
# The build goes to this checkout's target/ (release profile), so a second run is quick.
# `--debug` (what scripts/test.sh passes) installs with the dev profile instead, reusing what the
# tests compiled: the install path and the installed binary are checked all the same, and the
# release profile is compiled by the wheel build that follows.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=()
if [ "${1:-}" = "--debug" ]; then
  profile=(--debug)
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cargo install --locked "${profile[@]}" --path crates/assay-cli --root "$tmp/root" --target-dir "$PWD/target"
assay="$tmp/root/bin/assay"
test -x "$assay" || { echo "check-install: $assay was not installed" >&2; exit 1; }
"$assay" --version

# A session as a host runs it: from another directory, absolute paths.
(cd / && "$assay" mcp wrap --policy "$OLDPWD/examples/demo/policy.yaml" \
  --event-source assay://check-install/demo --label installed \
  --capture-dir "$tmp/capture" -- python3 "$OLDPWD/examples/demo/server.py" \
  < "$OLDPWD/examples/demo/session.jsonl" > "$tmp/responses")
grep -q '"text":"hello"' "$tmp/responses" || { echo "check-install: no echo response" >&2; exit 1; }
grep -q '"reason_code":"P_TOOL_DENIED"' "$tmp/responses" || { echo "check-install: exec was not refused" >&2; exit 1; }
"$assay" capture read "$tmp/capture" > "$tmp/verdict"   # exit 0: closed
grep -q '"closure": "closed"' "$tmp/verdict" || { echo "check-install: capture not closed" >&2; exit 1; }
"$assay" capture show "$tmp/capture" > "$tmp/shown"
grep -q 'server_id       installed' "$tmp/shown" \
  || { echo "check-install: capture show did not name the label" >&2; exit 1; }
echo "check-install: cargo install --path crates/assay-cli gave a working assay ($("$assay" --version))"
