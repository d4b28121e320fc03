#!/usr/bin/env python3
"""One request in flight, for bench/profile.sh's latency profile: runs COMMAND, writes the
lines of LINES one at a time, each after the answer to the one before, then closes its input
and waits for it (the latency row's client, without the clock).

Usage: pingpong.py LINES -- COMMAND [ARGS...]
"""
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(sys.argv[1], "rb") as f:
        lines = f.read().splitlines(keepends=True)
    proc = subprocess.Popen(sys.argv[3:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    for i, line in enumerate(lines):
        proc.stdin.write(line)
        proc.stdin.flush()
        if not proc.stdout.readline().endswith(b"\n"):
            print(f"pingpong.py: no answer to line {i + 1}", file=sys.stderr)
            return 1
    proc.stdin.close()
    proc.stdout.read()
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
