#!/usr/bin/env python3
"""The signing-cost benchmark (run by bench/sign.sh): the stop of `assay mcp wrap --capture-dir`
with and without `--sign-key`, side by side in one run.

usage: sign_stop.py ASSAY ECHO_SERVER ROUNDS

A session is `initialize` then N pipelined `tools/call echo` lines (N = 100, a typical session,
and N = 10,000, the reader's bound: the largest capture the reader judges), every answer read;
then stdin is closed and the clock runs until the wrapper has exited — the drain, the server's
cleanup, the stop record and, signed, the attestation. Each round runs both configurations once
(order rotated) and takes the difference signed − unsigned inside the round; the table shows
medians over rounds. Every capture is checked: `assay capture read` closed, and the signed one
`assay capture verify` exit 0. Beside it, what the reader's pass alone costs on the same capture
(`assay capture read` minus `assay --version`, process wall time): signing runs that pass for
the verdict it signs. Prints a Markdown table.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

POLICY = 'version: "1"\nname: bench\nallow: ["echo", "bench_*"]\n'
INIT = ('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"assay-bench-sign","version":"1"}}}')


def call(i: int) -> str:
    return ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":'
            '{"n":%d,"text":"%s"}}}' % (i, i, "x" * 100))


def session(assay: str, server: str, policy: Path, cap: Path, key: Path | None, calls: int) -> float:
    """One session; returns the seconds from closing stdin to the wrapper's exit."""
    argv = [assay, "mcp", "wrap", "--policy", str(policy), "--event-source", "assay://bench/sign",
            "--capture-dir", str(cap)]
    if key is not None:
        argv += ["--sign-key", str(key)]
    proc = subprocess.Popen(argv + ["--", server], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    lines = "\n".join([INIT] + [call(i) for i in range(1, calls + 1)]) + "\n"
    writer = threading.Thread(target=lambda: (proc.stdin.write(lines.encode()), proc.stdin.flush()))
    writer.start()
    for _ in range(calls + 1):
        if not proc.stdout.readline():
            raise SystemExit(f"the session ended early: {argv}")
    writer.join()
    start = time.perf_counter()
    proc.stdin.close()
    proc.wait()
    elapsed = time.perf_counter() - start
    proc.stdout.read()
    if proc.returncode != 0:
        raise SystemExit(f"exit {proc.returncode}: {argv}")
    return elapsed


def check(assay: str, cap: Path, public: Path | None) -> None:
    verdict = json.loads(subprocess.run([assay, "capture", "read", str(cap)], capture_output=True,
                                        check=True).stdout)
    assert verdict["closure"] == "closed", verdict
    if public is not None:
        subprocess.run([assay, "capture", "verify", str(cap), "--pub", str(public)], check=True,
                       stdout=subprocess.DEVNULL)


def reader_time(assay: str, cap: Path, rounds: int) -> float:
    """Median over rounds of (`assay capture read CAP` − `assay --version`), process wall time:
    what the reader's pass over the capture costs, which signing repeats for its verdict."""
    diffs = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run([assay, "capture", "read", str(cap)], stdout=subprocess.DEVNULL, check=True)
        t1 = time.perf_counter()
        subprocess.run([assay, "--version"], stdout=subprocess.DEVNULL, check=True)
        t2 = time.perf_counter()
        diffs.append((t1 - t0) - (t2 - t1))
    return statistics.median(diffs)


def main() -> None:
    assay, server, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with tempfile.TemporaryDirectory(prefix="assay-bench-sign-") as tmp:
        work = Path(tmp)
        policy = work / "policy.yaml"
        policy.write_text(POLICY)
        key = work / "signing.key"
        subprocess.run([assay, "keygen", "--out", str(key)], check=True, stdout=subprocess.DEVNULL)
        public = Path(str(key) + ".pub")
        print("| session | stop, unsigned (median) | stop, signed (median) | signing adds (median of per-round differences) | max added | the reader alone: `capture read` − `--version` (median) | attestation |")
        print("|---|---|---|---|---|---|---|")
        for calls in (100, 10_000):
            unsigned: list[float] = []
            signed: list[float] = []
            added: list[float] = []
            n = 0
            for r in range(rounds):
                times: dict[bool, float] = {}
                for with_key in ([False, True] if r % 2 == 0 else [True, False]):
                    n += 1
                    cap = work / f"cap-{calls}-{n}"
                    times[with_key] = session(assay, server, policy, cap, key if with_key else None, calls)
                    if r == 0:
                        check(assay, cap, public if with_key else None)
                unsigned.append(times[False])
                signed.append(times[True])
                added.append(times[True] - times[False])
            size = (work / f"cap-{calls}-2" / "attestation.dsse.json").stat().st_size \
                if (work / f"cap-{calls}-2" / "attestation.dsse.json").exists() \
                else (work / f"cap-{calls}-1" / "attestation.dsse.json").stat().st_size
            reader = reader_time(assay, work / f"cap-{calls}-1", rounds)
            ms = lambda s: f"{s * 1000:.2f} ms"  # noqa: E731
            print(f"| {calls:,} calls | {ms(statistics.median(unsigned))} | {ms(statistics.median(signed))} "
                  f"| {ms(statistics.median(added))} | {ms(max(added))} | {ms(reader)} | {size} bytes |")


if __name__ == "__main__":
    main()
