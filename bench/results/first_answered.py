"""One pipelined session as the targets group runs it, for the scripts of bench/results/: the
first line alone, the rest once it is answered (a client lists before it calls), every response
read, then end of input. Imported by threads.py and hash_floor_ab.py."""
import subprocess
import sys
import threading
import time


def run_session(argv, lines, at_last_response=None):
    """Runs `argv` over `lines` (bytes, one JSON-RPC line each, newline included). Returns the
    wall time to the last response and to the process's exit, in seconds, and what
    `at_last_response(proc)` returned, called once the last response is read and before stdin
    closes (None without it). Exits the script if responses are missing."""
    first, rest = lines[0], b"".join(lines[1:])
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, bufsize=0)
    proc.stdin.write(first)
    proc.stdout.readline()
    writer = threading.Thread(target=proc.stdin.write, args=(rest,))
    writer.start()
    got = 1
    while got < len(lines):
        chunk = proc.stdout.read(1 << 20)
        if not chunk:
            break
        got += chunk.count(b"\n")
    answered = time.perf_counter() - t0
    seen = at_last_response(proc) if at_last_response else None
    writer.join()
    proc.stdin.close()
    proc.wait()
    if got < len(lines):
        sys.exit(f"{argv[0]}: {got} of {len(lines)} responses")
    return answered, time.perf_counter() - t0, seen


def arguments(usage):
    """`ROUNDS LINES_FILE ARG...` from the command line: the rounds, the lines (bytes, newline
    included) and the other arguments; exits with `usage` when there are fewer."""
    if len(sys.argv) < 4:
        sys.exit(usage)
    with open(sys.argv[2], "rb") as f:
        lines = f.read().splitlines(keepends=True)
    return int(sys.argv[1]), lines, sys.argv[3:]
