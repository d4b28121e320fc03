#!/usr/bin/env python3
"""The wrapper's CPU per thread on one pipelined session, for binaries and policies side by side.

Usage: threads.py ROUNDS LINES_FILE BIN:POLICY...

Each round runs every BIN:POLICY once (rotating order): `BIN mcp wrap --policy POLICY
--decision-log … --decision-log-new -- echo-server --list-exec`, the first line of LINES_FILE
alone and the rest once it is answered (as `pingpong.py --first-answered` and the targets group
send them). Once the last response is read, and before stdin closes, every thread's time on a
CPU is read from /proc/PID/task/TID/schedstat (nanoseconds, unlike the 10 ms ticks of
/proc/…/stat). Prints, per configuration, the median over rounds of each thread's CPU, their
total, the total time the threads waited runnable for a CPU (schedstat's second field: on two
vCPUs a large figure means threads queued beside each other while a CPU idled) and the session's
wall time (spawn to last response), in ms. LINES_FILE: one JSON-RPC
line each, e.g. `bench/target/release/assay-bench --emit calls 100000 > lines`.
Needs `sh bench/setup.sh` (or `cargo build --release` in bench/) for the echo server.
"""
import collections
import os
import statistics
import tempfile

from first_answered import arguments, run_session

HERE = os.path.dirname(os.path.abspath(__file__))
ECHO = os.path.join(HERE, "..", "target", "release", "echo-server")


def thread_cpu(proc):
    """({thread name: CPU ms}, ms all threads waited runnable) of `proc`, from each thread's
    schedstat."""
    cpu = collections.Counter()
    waited = 0.0
    task = f"/proc/{proc.pid}/task"
    for tid in os.listdir(task):
        with open(f"{task}/{tid}/comm") as f:
            name = f.read().strip()
        with open(f"{task}/{tid}/schedstat") as f:
            fields = f.read().split()
        cpu[name] += int(fields[0]) / 1e6
        waited += int(fields[1]) / 1e6
    return cpu, waited


def session(binary, policy, log, lines):
    """One session; returns ({thread name: CPU ms}, ms waited runnable, wall ms to the last
    response)."""
    argv = [binary, "mcp", "wrap", "--policy", policy, "--decision-log", log,
            "--decision-log-new", "--event-source", "assay://bench/local", "--",
            ECHO, "--list-exec"]
    answered, _, (cpu, waited) = run_session(argv, lines, thread_cpu)
    return cpu, waited, answered * 1e3


def main():
    rounds, lines, args = arguments(__doc__)
    configs = [c.rsplit(":", 1) for c in args]
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    with tempfile.TemporaryDirectory() as work:
        log = os.path.join(work, "decisions.ndjson")
        for r in range(rounds):
            for i in range(len(configs)):
                binary, policy = configs[(i + r) % len(configs)]
                if os.path.exists(log):
                    os.unlink(log)
                cpu, waited, wall = session(binary, policy, log, lines)
                key = f"{binary}:{policy}"
                main_thread = os.path.basename(binary)[:15]
                for name, ms in cpu.items():
                    runs[key]["main" if name == main_thread else name].append(ms)
                runs[key]["TOTAL"].append(sum(cpu.values()))
                runs[key]["WAITING"].append(waited)
                runs[key]["WALL"].append(wall)
    for binary, policy in configs:
        key = f"{binary}:{policy}"
        last = ("TOTAL", "WAITING", "WALL")
        cols = sorted(runs[key].items(), key=lambda kv: (kv[0] in last, last.index(kv[0])
                                                         if kv[0] in last else 0, kv[0]))
        print(key + ": " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in cols))


if __name__ == "__main__":
    main()
