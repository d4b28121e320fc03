#!/usr/bin/env python3
"""The clients of bench/profile.sh. Runs COMMAND and writes the lines of LINES to it:

- one in flight (the default): each line after the answer to the one before (the latency
  row's client, without the clock);
- --first-answered: the first line, then, once it is answered, every other line at once (the
  targets group's pipelined sessions: a client that lists the tools before it calls them).

Then closes COMMAND's input, reads its output to the end and waits for it.

Usage: pingpong.py [--first-answered] LINES -- COMMAND [ARGS...]
"""
import subprocess
import sys
import threading


def main() -> int:
    args = sys.argv[1:]
    first_answered = bool(args) and args[0] == "--first-answered"
    if first_answered:
        args = args[1:]
    if len(args) < 3 or args[1] != "--":
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(args[0], "rb") as f:
        lines = f.read().splitlines(keepends=True)
    proc = subprocess.Popen(args[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    one_by_one = lines if not first_answered else lines[:1]
    for i, line in enumerate(one_by_one):
        stdin.write(line)
        stdin.flush()
        if not stdout.readline().endswith(b"\n"):
            print(f"pingpong.py: no answer to line {i + 1}", file=sys.stderr)
            return 1

    def rest() -> None:
        stdin.write(b"".join(lines[len(one_by_one):]))
        stdin.close()

    writer = threading.Thread(target=rest)
    writer.start()
    while stdout.read(1 << 16):
        pass
    writer.join()
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
