#!/usr/bin/env python3
"""The every-section policy's CPU against the plain policy's, per wrapper binary, to the
nanosecond: the targets group's call-heavy and listing-heavy sessions (100,000 lines, the first
a `tools/list` written alone, the rest once it is answered) through `assay mcp wrap` with a
decision log to `echo-server --list-exec`. The wrapper's CPU is the sum of the on-CPU time of
all its threads (`/proc/PID/task/*/schedstat`, ns) read once every answer has arrived, before
its input closes: not the server's, and without the 10 ms ticks of `/proc/PID/stat`. Every
round runs every configuration once (order rotated); the every ÷ plain ratio is taken inside
the round, then the median over rounds.

Usage (from the repository root, after `cd bench && cargo build --release`):
  python3 bench/cpu_ratio.py ROUNDS NAME=ASSAY_BIN [NAME=ASSAY_BIN ...]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "target", "release", "assay-bench")
ECHO = os.path.join(HERE, "target", "release", "echo-server")
LINES = 100_000


def cpu_ns(pid: int) -> int:
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # a thread that just ended
    return total


def session(work: str, binary: str, policy: str, lines: list) -> int:
    log = os.path.join(work, "decisions.ndjson")
    if os.path.exists(log):
        os.unlink(log)
    p = subprocess.Popen(
        [binary, "mcp", "wrap", "--policy", os.path.join(work, f"{policy}.yaml"),
         "--decision-log", log, "--decision-log-new", "--event-source", "assay://bench/local",
         "--", ECHO, "--list-exec"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(lines[0])
    p.stdin.flush()
    p.stdout.readline()
    rest = threading.Thread(target=lambda: (p.stdin.write(b"".join(lines[1:])), p.stdin.flush()))
    rest.start()
    for _ in range(len(lines) - 1):
        if not p.stdout.readline():
            raise SystemExit(f"{binary}: the session ended early")
    rest.join()
    spent = cpu_ns(p.pid)
    p.stdin.close()
    p.stdout.read()
    p.wait()
    return spent


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    rounds = int(sys.argv[1])
    bins = dict(a.split("=", 1) for a in sys.argv[2:])
    with tempfile.TemporaryDirectory() as work:
        def emit(what: list, name: str) -> None:
            with open(os.path.join(work, name), "wb") as f:
                subprocess.run([BENCH, "--emit", *what], stdout=f, check=True)
        emit(["plain-policy"], "plain.yaml")
        emit(["every-policy"], "every.yaml")
        subprocess.run([next(iter(bins.values())), "mcp", "pin", "--out",
                        os.path.join(work, "pins-listing.json"), "--", ECHO, "--list-exec"],
                       stdout=subprocess.DEVNULL, check=True)
        sessions = {}
        for kind in ("calls", "listing"):
            emit([kind, str(LINES)], kind)
            with open(os.path.join(work, kind), "rb") as f:
                sessions[kind] = f.read().splitlines(keepends=True)
        configs = [(b, k, pol) for b in bins for k in sessions for pol in ("plain", "every")]
        spent: dict = {c: [] for c in configs}
        for r in range(rounds):
            for c in configs[r % len(configs):] + configs[:r % len(configs)]:
                spent[c].append(session(work, bins[c[0]], c[2], sessions[c[1]]))
    for b in bins:
        for k in sessions:
            plain, every = spent[(b, k, "plain")], spent[(b, k, "every")]
            ratios = [e / p for p, e in zip(plain, every)]
            print(f"{b} {k}-heavy: CPU plain {statistics.median(plain) / 1e6:.1f} ms, every "
                  f"section {statistics.median(every) / 1e6:.1f} ms (medians); every ÷ plain "
                  f"{statistics.median(ratios):.3f} (median of {rounds} rounds, "
                  f"{min(ratios):.3f}–{max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
