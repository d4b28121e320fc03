#!/usr/bin/env python3
"""Wrapper binaries against the hash floor relay, side by side, on one pipelined session.

Usage: hash_floor_ab.py ROUNDS LINES_FILE BIN...

Each round runs `hash-floor-relay` and `BIN mcp wrap --policy P --decision-log … --decision-log-new
-- echo-server` for every BIN (P: the plain policy, `allow: ["echo", "bench_*"]`), in a rotating
order; the first line of LINES_FILE alone and the rest once it is answered (as the targets group
sends them), wall time from spawn to the child's exit. Prints each median wall time and, per BIN,
the median of its wall ÷ the floor's in the same round. LINES_FILE: e.g.
`bench/target/release/assay-bench --emit calls 100000 > lines`. The client is Python here, not the
harness's: compare the figures with each other, not with `assay-bench --only targets`.
Needs `sh bench/setup.sh` (or `cargo build --release` in bench/) for the relay and the server.
"""
import os
import statistics
import tempfile

from first_answered import arguments, run_session

HERE = os.path.dirname(os.path.abspath(__file__))
RELEASE = os.path.join(HERE, "..", "target", "release")
ECHO = os.path.join(RELEASE, "echo-server")
FLOOR = os.path.join(RELEASE, "hash-floor-relay")
PLAIN = 'version: "1"\nname: bench\nallow: ["echo", "bench_*"]\n'


def session(argv, log, lines):
    """One session's wall time to the process's exit, in seconds."""
    if os.path.exists(log):
        os.unlink(log)
    return run_session(argv, lines)[1]


def main():
    rounds, lines, binaries = arguments(__doc__)
    with tempfile.TemporaryDirectory() as work:
        log = os.path.join(work, "decisions.ndjson")
        policy = os.path.join(work, "plain.yaml")
        with open(policy, "w") as f:
            f.write(PLAIN)
        configs = [("hash floor", [FLOOR, log, "--", ECHO])]
        for b in binaries:
            configs.append((b, [b, "mcp", "wrap", "--policy", policy, "--decision-log", log,
                                "--decision-log-new", "--event-source", "assay://bench/local",
                                "--", ECHO]))
        walls = {name: [] for name, _ in configs}
        ratios = {name: [] for name, _ in configs[1:]}
        for r in range(rounds):
            wall = {}
            for i in range(len(configs)):
                name, argv = configs[(i + r) % len(configs)]
                wall[name] = session(argv, log, lines)
                walls[name].append(wall[name])
            for name in ratios:
                ratios[name].append(wall[name] / wall["hash floor"])
    for name, _ in configs:
        line = f"{name}: wall {statistics.median(walls[name]) * 1e3:.1f} ms"
        if name in ratios:
            line += f", ÷ hash floor {statistics.median(ratios[name]):.3f}"
        print(line)


if __name__ == "__main__":
    main()
