"""The server process in a Python host (SPEC §3.1a): forks of a host that forwards signals behave
as if the wrapper had never been there, no thread or descriptor of a session outlives
``wrap_session``, a stalled client cannot hold the call, and the fork fallback works in a host
whose sandbox refuses the preferred spawn. Each host runs in its own process, so its signal
dispositions and threads never touch the test runner."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List

from conftest import INIT, ROOT

# Shared by the hosts below: a session on pipes the host made itself, run on a thread.
PRELUDE = r"""
import json, os, signal, sys, threading, time
import assay_stop

cfg = json.loads(sys.argv[1])

def start_session(extra=None, close_input=False, read_output=True, lines=None):
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    for line in (lines if lines is not None else [cfg["init"]]):
        os.write(in_w, (line + "\n").encode())
    got = {"out": b""}
    def reader():
        while True:
            chunk = os.read(out_r, 65536)
            if not chunk:
                break
            got["out"] += chunk
        os.close(out_r)
    if read_output:
        threading.Thread(target=reader, daemon=True).start()
    result = {}
    def run():
        try:
            result["outcome"] = assay_stop.wrap_session(
                cfg["command"], policy=cfg["policy"], event_source="assay://pytest/process",
                capture_dir=cfg.get("capture_dir"), stdin=in_r, stdout=out_w, **(extra or {}))
        except BaseException as e:
            result["error"] = repr(e)
    t = threading.Thread(target=run)
    t.start()
    if close_input:
        os.close(in_w)
        in_w = -1
    return {"thread": t, "in_r": in_r, "in_w": in_w, "out_r": out_r, "out_w": out_w,
            "result": result, "got": got}

def wait_for(path, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit(f"{path} never appeared")
        time.sleep(0.02)

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] not in "ZX"
    except OSError:
        return False

def threads():
    return sorted(os.listdir("/proc/self/task"))

def fds():
    return sorted(int(n) for n in os.listdir("/proc/self/fd"))
"""


def _run_host(tmp_path: Path, body: str, wrapper: List[str] = (), **cfg: Any) -> Dict[str, Any]:
    script = tmp_path / "host.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    cfg.setdefault("init", INIT)
    proc = subprocess.run([*wrapper, sys.executable, str(script), json.dumps(cfg)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result: Dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


FORKED_CHILDREN = r"""
import multiprocessing
got_sigterm = []
def host_handler(sig, frame):
    got_sigterm.append(sig)
signal.signal(signal.SIGUSR1, lambda s, f: None)
# The dispositions before the session, set here: a host started from a background job inherits
# SIGINT ignored, and Python then installs no KeyboardInterrupt handler of its own.
signal.signal(signal.SIGTERM, signal.SIG_DFL)
signal.signal(signal.SIGINT, signal.default_int_handler)

s = start_session(extra={"forward_signals": True})
wait_for(os.path.join(cfg["capture_dir"], "session-context.json"))
pid = json.load(open(os.path.join(cfg["capture_dir"], "session-context.json")))["data"]["server_pid"]

# 1. multiprocessing.Pool.terminate() SIGTERMs its forked workers: they die (default action),
#    the session's server is untouched, and join() returns.
ctx = multiprocessing.get_context("fork")
pool = ctx.Pool(2)
assert pool.map(abs, [-1, -2, -3]) == [1, 2, 3]
workers = [p.pid for p in pool._pool]
t0 = time.monotonic()
pool.terminate()
pool.join()
pool_join_s = time.monotonic() - t0
workers_gone = not any(alive(w) for w in workers)
server_alive_after_pool = alive(pid)

# 2. os.fork(): a child that gets SIGTERM dies of SIGTERM (the disposition before the session
#    was the default). Each child says it is ready (a byte on a pipe) once its Python runs:
#    CPython drops a signal that arrives before its after-fork handler ran, so the signal is
#    sent only after that byte.
def forked(body):
    ready_r, ready_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(ready_r)
        body(ready_w)
        os._exit(0)
    os.close(ready_w)
    assert os.read(ready_r, 1) == b"r"
    os.close(ready_r)
    return child

def wait_for_term(ready_w):
    os.write(ready_w, b"r")
    time.sleep(30)

child = forked(wait_for_term)
os.kill(child, signal.SIGTERM)
_, st = os.waitpid(child, 0)
fork_default = [os.WIFSIGNALED(st), os.WTERMSIG(st) if os.WIFSIGNALED(st) else None]

# 3. A fork whose host had its own SIGINT handler before the session (Python's own:
#    KeyboardInterrupt) runs that handler.
def wait_for_int(ready_w):
    try:
        os.write(ready_w, b"r")
        time.sleep(30)
    except KeyboardInterrupt:
        os._exit(42)

child = forked(wait_for_int)
os.kill(child, signal.SIGINT)
_, st = os.waitpid(child, 0)
fork_host_handler = os.WEXITSTATUS(st) if os.WIFEXITED(st) else -os.WTERMSIG(st)

server_alive_at_end = alive(pid)
os.close(s["in_w"])
s["thread"].join(60)
o = s["result"]["outcome"].to_dict()
print(json.dumps({
    "pool_join_s": pool_join_s, "workers_gone": workers_gone,
    "server_alive_after_pool": server_alive_after_pool, "fork_default": fork_default,
    "fork_host_handler": fork_host_handler, "server_alive_at_end": server_alive_at_end,
    "termination": o["termination"], "child_exit_code": o["child_exit_code"],
    "handler_back": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
}))
"""


def test_forked_children_of_a_forwarding_host_behave_as_if_the_wrapper_were_not_there(
    tmp_path: Path, demo_server: Path, demo_policy: Path
) -> None:
    r = _run_host(tmp_path, FORKED_CHILDREN, command=[sys.executable, str(demo_server)],
                  policy=str(demo_policy), capture_dir=str(tmp_path / "cap"))
    assert r["workers_gone"] is True and r["pool_join_s"] < 10, r
    assert r["server_alive_after_pool"] is True, r
    assert r["fork_default"] == [True, 15], r
    assert r["fork_host_handler"] == 42, r
    assert r["server_alive_at_end"] is True, r
    # The server was never signalled: it ended at the end of its input.
    assert r["termination"] == "exited" and r["child_exit_code"] == 0, r
    assert r["handler_back"] is True, r


NO_LEFTOVERS = r"""
threads_before, fds_before = threads(), fds()

# A normal session, then one whose client stops reading: the server floods 4 MiB after the
# client closed its input, and nobody reads the output.
s = start_session(close_input=True)
s["thread"].join(60)
normal = s["result"]["outcome"].to_dict()["session_end"]
for k in ("in_r", "out_w"):
    os.close(s[k])

s = start_session(close_input=True, read_output=False)
t0 = time.monotonic()
s["thread"].join(60)
returned_s = time.monotonic() - t0
stalled = s["result"].get("outcome")
stalled = stalled.to_dict()["session_end"] if stalled else s["result"]
# The host closes its own descriptors; no thread of the session is left holding the pipe, so
# the host's reader drains what was delivered and then sees end of file.
for k in ("in_r", "out_w"):
    os.close(s[k])
# The first session's reader thread ends at end of file: wait for its OS thread to go too (the
# timeout only bounds a failure).
deadline = time.monotonic() + 30.0
while time.monotonic() < deadline and threads() != threads_before:
    time.sleep(0.02)
threads_after = threads()
got = 0
os.set_blocking(s["out_r"], True)
while True:
    chunk = os.read(s["out_r"], 1 << 20)
    if not chunk:
        break
    got += len(chunk)
os.close(s["out_r"])
fds_after = fds()
print(json.dumps({
    "normal": normal, "stalled": stalled, "returned_s": returned_s,
    "threads_before": threads_before, "threads_after": threads_after,
    "fds_before": fds_before, "fds_after": fds_after, "got": got,
}))
"""


def test_no_thread_or_descriptor_outlives_wrap_session(
    tmp_path: Path, fault_server: Path, demo_policy: Path
) -> None:
    r = _run_host(tmp_path, NO_LEFTOVERS,
                  command=[sys.executable, str(fault_server), "flood", str(4 << 20)],
                  policy=str(demo_policy))
    assert r["normal"] == "client_closed", r
    assert r["stalled"] == "proxy_error", r
    assert r["returned_s"] < 15, r
    assert r["threads_after"] == r["threads_before"], r
    # Every descriptor the sessions opened is closed (the host closed its own pipe ends).
    assert r["fds_after"] == r["fds_before"], r
    # The host's reader saw end of file after what had been delivered.
    assert r["got"] > 0, r


PIPELINED = r"""
threads_before = threads()

def names():
    out = []
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/comm") as f:
                out.append(f.read().strip())
        except OSError:
            pass
    return out

def wait_until(done, timeout=30.0):
    # Waits for a condition the session makes true (a thread that starts or ends); the timeout
    # only bounds a failure.
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True

def echo(i):
    return ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo",'
            '"arguments":{"text":"%s"}}}' % (i, "x" * (i % 50)))

# The decision log's digest moves to its hashing thread once a chunk of decision lines
# (`prefix_digest::CHUNK`, 128 KiB) is written without the writer idling. A JSON-RPC batch of
# 400 allowed calls is one line whose 400 decision lines are written in one go: the thread
# starts on it, whatever the timing, and runs until the session reads the digest at its end. The
# host waits until it sees the thread, then pipelines 3,000 more calls behind it, so the session
# goes on hashing there.
in_r, in_w = os.pipe()
out_r, out_w = os.pipe()
got = {"n": 0}
def reader():
    while True:
        chunk = os.read(out_r, 65536)
        if not chunk:
            break
        got["n"] += chunk.count(b"\n")
    os.close(out_r)
result = {}
def run():
    result["outcome"] = assay_stop.wrap_session(
        cfg["command"], policy=cfg["policy"], event_source="assay://pytest/process",
        capture_dir=cfg["capture_dir"], stdin=in_r, stdout=out_w)
rt = threading.Thread(target=reader, daemon=True)
rt.start()
t = threading.Thread(target=run)
t.start()
batch = "[" + ",".join(echo(i) for i in range(2, 402)) + "]"
os.write(in_w, (cfg["init"] + "\n" + batch + "\n").encode())
seen_hasher = wait_until(lambda: "assay-log-hash" in names())
pipelined = "".join(echo(i) + "\n" for i in range(402, 3402)).encode()
while pipelined:
    pipelined = pipelined[os.write(in_w, pipelined):]
os.close(in_w)
t.join()
os.close(in_r)
os.close(out_w)
rt.join()
# A joined Python thread's OS thread may still be listed for a moment after join returns.
wait_until(lambda: threads() == threads_before)
closure = assay_stop.read_capture(cfg["capture_dir"])
print(json.dumps({
    "session_end": result["outcome"].to_dict()["session_end"],
    "seen_hasher": seen_hasher, "answers": got["n"],
    "threads_before": threads_before, "threads_after": threads(),
    "verdict": closure.closure,
}))
"""


def test_a_pipelined_session_hashes_its_log_on_a_thread_that_ends_with_it(
    tmp_path: Path, fault_server: Path, demo_policy: Path
) -> None:
    # SPEC §4.1 accounting with the digest computed off the writer's thread: the reader verifies
    # it (`closed`), and no thread of the session is left afterwards.
    r = _run_host(tmp_path, PIPELINED, command=[sys.executable, str(fault_server), "normal"],
                  policy=str(demo_policy), capture_dir=str(tmp_path / "cap"))
    assert r["session_end"] == "client_closed", r
    # The initialize answer, one array answering the batch, one answer per pipelined call.
    assert r["answers"] == 1 + 1 + 3000, r
    assert r["seen_hasher"] is True, r
    assert r["threads_after"] == r["threads_before"], r
    assert r["verdict"] == "closed", r


FALLBACK = r"""
s = start_session(close_input=True)
s["thread"].join(60)
o = s["result"]["outcome"].to_dict()
for k in ("in_r", "out_w"):
    os.close(s[k])
missing = None
try:
    assay_stop.wrap_session(["/nonexistent/mcp-server"], policy=cfg["policy"],
                            capture_root=cfg["root"], event_source="assay://pytest/process")
except assay_stop.WrapError as e:
    missing = [e.errno, e.exit_status]
print(json.dumps({"termination": o["termination"], "exit_code": o["exit_code"],
                  "missing": missing, "root": os.listdir(cfg["root"])}))
"""


def test_a_sandbox_refusing_the_preferred_spawn_gets_a_forked_server(
    tmp_path: Path, fault_server: Path, demo_policy: Path
) -> None:
    helper = tmp_path / "refuse_spawn"
    subprocess.run(["gcc", "-std=c11", "-O1", str(ROOT / "tests" / "fixtures" / "refuse_spawn.c"),
                    "-o", str(helper)], check=True)
    root = tmp_path / "root"
    root.mkdir()
    for mode in ("vfork", "old"):
        r = _run_host(tmp_path, FALLBACK, wrapper=[str(helper), mode],
                      command=[sys.executable, str(fault_server), "exit7"],
                      policy=str(demo_policy), root=str(root))
        assert r["termination"] == "exited" and r["exit_code"] == 7, (mode, r)
        # A missing command is a spawn failure (ENOENT, 127) and leaves no capture directory.
        assert r["missing"] == [2, 127], (mode, r)
        assert r["root"] == [], (mode, r)
