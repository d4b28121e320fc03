#!/usr/bin/env python3
"""Start-up and shutdown of wrapper binaries side by side, over the floor relay in each round.

Usage: startup_ab.py ROUNDS BIN... [--log] [--policy FILE]

Each round runs the floor relay (`bench/target/release/floor-relay`, a fresh log file) and then
`BIN mcp wrap --policy FILE -- echo-server` for every BIN, in a rotating order, with stdin and
stdout on /dev/null: the server exits at once, as in `assay-bench --only startup`. With `--log`
the wrappers keep a fresh decision log too. Prints the floor's median and, per binary, the
median of its time minus the floor's in the same round, in ms.

Compare binaries whose files entered the page cache the same way (all copied with `cp`, or all
read back after `echo 1 > /proc/sys/vm/drop_caches`): a freshly linked binary was measured
~20 page faults and up to 0.3 ms slower to start than a copy of the same bytes (bench/README.md).
Needs `sh bench/setup.sh` (or `cargo build --release` in bench/) for the relay and the server.
"""
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RELEASE = os.path.join(HERE, "..", "target", "release")
ECHO = os.path.join(RELEASE, "echo-server")
FLOOR = os.path.join(RELEASE, "floor-relay")


def main() -> None:
    args = sys.argv[1:]
    log = "--log" in args
    args = [a for a in args if a != "--log"]
    policy = None
    if "--policy" in args:
        i = args.index("--policy")
        policy = args[i + 1]
        del args[i : i + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    rounds, bins = int(args[0]), args[1:]
    work = tempfile.mkdtemp(prefix="startup-ab-")
    if policy is None:
        policy = os.path.join(work, "plain.yaml")
        with open(policy, "w") as f:
            f.write('version: "1"\nname: bench\ntools:\n  allow: ["*"]\n')
    null = os.open(os.devnull, os.O_RDWR)
    n = 0

    def run(argv: list) -> float:
        t = time.perf_counter()
        pid = os.posix_spawn(
            argv[0],
            argv,
            os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1)],
        )
        _, status = os.waitpid(pid, 0)
        dt = (time.perf_counter() - t) * 1e3
        if status != 0:
            sys.exit(f"{argv}: status {status}")
        return dt

    def command(b: str) -> list:
        nonlocal n
        n += 1
        if b == "floor":
            return [FLOOR, f"{work}/f{n}.log", "--", ECHO]
        a = [b, "mcp", "wrap", "--policy", policy]
        if log:
            a += ["--decision-log", f"{work}/d{n}.ndjson", "--decision-log-new"]
            a += ["--event-source", "assay://bench/startup"]
        return a + ["--", ECHO]

    names = ["floor"] + bins
    over = {b: [] for b in bins}
    floor = []
    for r in range(rounds):
        this = {}
        for b in names[r % len(names) :] + names[: r % len(names)]:
            this[b] = run(command(b))
        floor.append(this["floor"])
        for b in bins:
            over[b].append(this[b] - this["floor"])
        if r % 50 == 49:
            for e in os.listdir(work):
                if e.endswith((".log", ".ndjson")):
                    os.unlink(os.path.join(work, e))
    shutil.rmtree(work, ignore_errors=True)
    print(f"floor {statistics.median(floor):.3f} ms" + (" (decision log)" if log else ""))
    for b in bins:
        print(f"  {b}: +{statistics.median(over[b]):.3f} ms over the floor")


if __name__ == "__main__":
    main()
