#!/usr/bin/env python3
"""Spawn cost in a host with a large resident heap (SPEC §3.1a: the spawn is chosen by
measurement). A Python process holding HEAP_MIB of touched memory runs ROUNDS short sessions
through the C ABI (`assay_wrap_session`, libassay.so via ctypes), each wrapping a server that
exits at end of input, and after each session writes one byte per page of its heap again — what
a host that keeps working does. It prints one JSON line: the median wall time of a session, the
median time of the re-touch, and the same re-touch without any session before it.

Run it plainly (the wrapper's preferred spawn, `clone(CLONE_VM|CLONE_VFORK)`) and under
`refuse_spawn vfork` (tests/fixtures/refuse_spawn.c: a seccomp filter refusing that clone, so
the wrapper falls back to fork+exec) — bench/spawn.sh does both, interleaved.

usage: spawn_host.py LIBASSAY SERVER HEAP_MIB ROUNDS
"""
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time


def main() -> None:
    lib_path, server, heap_mib, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    lib = ctypes.CDLL(lib_path)
    lib.assay_wrap_session.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
    lib.assay_wrap_session.restype = ctypes.c_int
    lib.assay_string_free.argtypes = [ctypes.c_char_p]

    page = os.sysconf("SC_PAGE_SIZE")
    heap = bytearray(heap_mib << 20)
    stamp = 1

    def touch() -> float:
        nonlocal stamp
        stamp = (stamp + 1) % 256
        t = time.perf_counter()
        for i in range(0, len(heap), page):
            heap[i] = stamp
        return time.perf_counter() - t

    touch()
    tmp = tempfile.mkdtemp(prefix="assay-spawn-bench-")
    policy = os.path.join(tmp, "policy.yaml")
    with open(policy, "w") as f:
        f.write('version: "1"\nallow: ["*"]\n')

    def session() -> float:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        os.close(in_w)  # the client sends nothing: the session ends at once
        config = json.dumps({"command": [server], "policy": policy, "stdin": in_r, "stdout": out_w})
        out = ctypes.c_char_p()
        t = time.perf_counter()
        status = lib.assay_wrap_session(config.encode(), ctypes.byref(out))
        took = time.perf_counter() - t
        lib.assay_string_free(out)
        for fd in (in_r, out_r, out_w):
            os.close(fd)
        if status != 0:
            raise SystemExit(f"assay_wrap_session returned {status}")
        return took

    sessions, retouch, baseline = [], [], []
    for _ in range(rounds):
        baseline.append(touch())
        sessions.append(session())
        retouch.append(touch())
    rss_kib = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
    ms = lambda xs: round(statistics.median(xs) * 1e3, 3)  # noqa: E731
    print(json.dumps({
        "heap_mib": heap_mib, "rss_mib": rss_kib // 1024, "rounds": rounds,
        "session_ms": ms(sessions), "retouch_after_session_ms": ms(retouch),
        "retouch_without_session_ms": ms(baseline),
    }))


if __name__ == "__main__":
    main()
