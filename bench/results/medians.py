#!/usr/bin/env python3
"""The summary of a bench/results script's interleaved runs.

Reads `times` in the working directory, one line per run: ROUND NAME WALL USER SYSTEM (seconds,
as /usr/bin/time -f "%e %U %S" writes them). Prints each name's median wall and CPU (user +
system), then one line per LABEL=A/B argument: the median over rounds of A's wall and CPU
divided by B's in the same round.

Usage: medians.py [LABEL=A/B ...]
"""
import collections
import statistics
import sys


def main() -> int:
    runs: dict[str, dict[str, tuple[float, float]]] = collections.defaultdict(dict)
    with open("times", encoding="utf-8") as f:
        for line in f:
            r, name, wall, user, system = line.split()
            runs[name][r] = (float(wall), float(user) + float(system))
    print("| run | wall (s) | CPU (s) |")
    print("|---|---|---|")
    for name, v in runs.items():
        wall = statistics.median(w for w, _ in v.values())
        cpu = statistics.median(c for _, c in v.values())
        print(f"| {name} | {wall:.3f} | {cpu:.3f} |")
    print()
    width = max((len(a.split("=", 1)[0]) for a in sys.argv[1:]), default=0)
    for arg in sys.argv[1:]:
        label, pair = arg.split("=", 1)
        a, b = pair.split("/", 1)
        rounds = [r for r in runs[a] if r in runs[b]]
        wall = statistics.median(runs[a][r][0] / runs[b][r][0] for r in rounds)
        cpu = statistics.median(runs[a][r][1] / runs[b][r][1] for r in rounds)
        print(f"{label + ':':<{width + 1}} {wall:.2f}x wall, {cpu:.2f}x CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
