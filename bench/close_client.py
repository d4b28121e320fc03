#!/usr/bin/env python3
"""The close-to-exit benchmark (issue 45; run by bench/close.sh): how long `assay mcp wrap` takes,
from the client closing its stdin to the wrapper's exit with its stop record written, for a
server started directly, through `npx` and through `sh -c 'server; :'`, with a server that exits
at stdin EOF and one that does not. MCP SDK clients send SIGTERM 2 s after closing stdin: the
target is the wrapper gone before that.

usage: close_client.py ASSAY ROUNDS   (environment: see bench/close.sh)

Each round runs every configuration once, in an order rotated round by round. A session is
initialize, notifications/initialized and tools/list, each answer awaited, then stdin is closed
and the clock runs until the wrapper has exited. Each session checks its capture (`assay capture
read`: closed) and counts processes of the server's tree (found by an environment marker) still
alive 2 s after the wrapper's exit (then killed). Prints a Markdown table.
"""
from __future__ import annotations

import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
INTEROP = ROOT / "tests" / "interop"
EVERYTHING = INTEROP / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
LINGER = f"--import={(HERE / 'close_linger.mjs').as_uri()}"
OFFLINE = {"npm_config_offline": "true", "npm_config_registry": "http://127.0.0.1:9/",
           "npm_config_update_notifier": "false"}
MARK = "ASSAY_BENCH_CLOSE_MARK"

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "assay-bench-close", "version": "1"}}}


def configs() -> list[tuple[str, str, list[str], dict[str, str]]]:
    """(server kind, launcher, server argv, extra environment)."""
    node = ["node", str(EVERYTHING), "stdio"]
    out = []
    for kind, extra in (("exits at EOF", {}), ("stays after EOF", {"NODE_OPTIONS": LINGER})):
        out.append((kind, "node server", node, extra))
        out.append((kind, "npx server", ["npx", "-y", "@modelcontextprotocol/server-everything"], extra))
        out.append((kind, "sh -c 'server; :'", ["sh", "-c", " ".join(node) + "; :"], extra))
    return out


def marked(mark: str) -> list[int]:
    needle = f"{MARK}={mark}".encode()
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(") ", 1)[1][0]
        except OSError:
            continue
        if needle in env.split(b"\0") and state not in "ZX":
            pids.append(int(name))
    return pids


def session(assay: str, policy: Path, work: Path, argv: list[str], extra: dict[str, str]) -> dict:
    mark = secrets.token_hex(8)
    root = work / f"captures-{mark}"
    env = dict(os.environ, **OFFLINE, **extra, npm_config_cache=str(work / "npm-cache"))
    env[MARK] = mark
    cmd = [assay, "mcp", "wrap", "--policy", str(policy), "--event-source", "assay://bench/close",
           "--capture-root", str(root), "--", *argv]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         cwd=INTEROP, env=env)
    answered: dict[int, threading.Event] = {1: threading.Event(), 2: threading.Event()}

    def read() -> None:
        for line in p.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and msg.get("id") in answered:
                answered[msg["id"]].set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def send(msg: dict) -> None:
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()

    send(INIT)
    if not answered[1].wait(60):
        p.kill()
        raise SystemExit(f"no initialize answer: {cmd}")
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    if not answered[2].wait(60):
        p.kill()
        raise SystemExit(f"no tools/list answer: {cmd}")
    started = time.perf_counter()
    p.stdin.close()
    p.wait()
    close_ms = (time.perf_counter() - started) * 1000
    deadline = time.monotonic() + 2
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.01)
    left = marked(mark)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    reader.join(5)
    [capture] = list(root.iterdir())
    verdict = json.loads(subprocess.run([assay, "capture", "read", str(capture)], capture_output=True).stdout)
    stop_path = capture / "session-stop.json"
    stop = json.loads(stop_path.read_text())["data"] if stop_path.exists() else {}
    return {"close_ms": close_ms, "closure": verdict.get("closure"), "left": len(left),
            "ending": f"{stop.get('termination')} {stop.get('exit_code') if stop.get('termination') == 'exited' else stop.get('signal')}",
            "kill": stop.get("assay_kill_requested"), "group_killed": stop.get("group_killed")}


def main() -> None:
    assay, rounds = sys.argv[1], int(sys.argv[2])
    cfgs = configs()
    results: dict[int, list[dict]] = {i: [] for i in range(len(cfgs))}
    ratios: dict[int, list[float]] = {i: [] for i in range(len(cfgs))}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        policy = work / "policy.yaml"
        policy.write_text('version: "1"\nallow: ["*"]\n')
        for r in range(rounds):
            order = list(range(len(cfgs)))
            order = order[r % len(order):] + order[:r % len(order)]
            this_round = {}
            for i in order:
                _, _, argv, extra = cfgs[i]
                this_round[i] = session(assay, policy, work, argv, extra)
                results[i].append(this_round[i])
            for i in range(len(cfgs)):
                base = i - i % 3  # the `node server` row of the same server kind
                ratios[i].append(this_round[i]["close_ms"] / this_round[base]["close_ms"])
    print("| server | launcher | close-to-exit, median | max | × node server (median of per-round ratios) "
          "| exited before 2 s | closed | left after 2 s | stop record (termination, kill, group_killed) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for i, (kind, launcher, _, _) in enumerate(cfgs):
        rs = results[i]
        ms = [x["close_ms"] for x in rs]
        endings = sorted({f"{x['ending']}, {json.dumps(x['kill'])}, {json.dumps(x['group_killed'])}" for x in rs})
        print(f"| {kind} | {launcher} | {statistics.median(ms):.0f} ms | {max(ms):.0f} ms "
              f"| {statistics.median(ratios[i]):.2f}× | {sum(m < 2000 for m in ms)}/{len(ms)} "
              f"| {sum(x['closure'] == 'closed' for x in rs)}/{len(rs)} | {sum(x['left'] for x in rs)} "
              f"| {'; '.join(endings)} |")


if __name__ == "__main__":
    main()
