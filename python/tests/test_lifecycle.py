"""Lifecycle in a Python host (SPEC §3 item 9, §3.1): ``forward_signals`` and what it leaves
alone, a host that ignores SIGCHLD, and the probe's SDK-style shutdown. Each host runs in its own
process, so its signal dispositions never touch the test runner."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict

import assay_stop
from conftest import INIT, call

# A Python host: runs one session on pipes it made itself and prints what it observed as JSON.
# argv: CONFIG_JSON. The client writes INIT and closes its input once `close_when` exists (or at
# once when it is empty). The host's own SIGTERM handler counts what reaches it.
HOST = r"""
import json, os, signal, sys, threading, time
import assay_stop

cfg = json.loads(sys.argv[1])
hits = []
def handler(sig, frame):
    hits.append(sig)
signal.signal(signal.SIGTERM, handler)
if cfg.get("ignore_sigchld"):
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)

in_r, in_w = os.pipe()
out_r, out_w = os.pipe()
os.write(in_w, (cfg["init"] + "\n").encode())

def client():
    while cfg["close_when"] and not os.path.exists(cfg["close_when"]):
        time.sleep(0.02)
    os.close(in_w)
    while os.read(out_r, 65536):
        pass
threading.Thread(target=client, daemon=True).start()

outcome = assay_stop.wrap_session(
    cfg["command"], policy=cfg["policy"], event_source="assay://pytest/lifecycle",
    capture_dir=cfg["capture_dir"], forward_signals=cfg["forward_signals"],
    idle_drain=cfg.get("idle_drain"), stdin=in_r, stdout=out_w,
)
restored = signal.getsignal(signal.SIGTERM) is handler
seen_during_session = list(hits)
# The host's own handling is back: raise_signal runs the handler before it returns.
signal.raise_signal(signal.SIGTERM)
print(json.dumps({
    "outcome": outcome.to_dict(), "handler_restored": restored,
    "hits_during_session": seen_during_session, "hits": hits,
}))
"""


def _start_host(tmp_path: Path, **cfg: Any) -> "subprocess.Popen[str]":
    script = tmp_path / "host.py"
    script.write_text(HOST)
    cfg.setdefault("init", INIT)
    cfg.setdefault("close_when", "")
    cfg.setdefault("forward_signals", False)
    return subprocess.Popen([sys.executable, str(script), json.dumps(cfg)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _result(proc: "subprocess.Popen[str]") -> Dict[str, Any]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    result: Dict[str, Any] = json.loads(out)
    return result


def test_forward_signals_sends_sigterm_to_the_server_and_restores_the_host_handler(
    tmp_path: Path, fault_server: Path, demo_policy: Path
) -> None:
    cap = tmp_path / "cap"
    eof = tmp_path / "server-saw-eof"
    # The client closes its input at once; the server outlives stdin EOF until SIGTERM (no idle
    # deadline: idle_drain=0). The signal is sent once the server saw the end of its input, so
    # the session saw the client's end first.
    proc = _start_host(tmp_path, command=[sys.executable, str(fault_server), "linger", str(eof)],
                       policy=str(demo_policy), capture_dir=str(cap), forward_signals=True,
                       idle_drain=0)
    _wait_for(eof)
    os.kill(proc.pid, signal.SIGTERM)
    r = _result(proc)
    o = r["outcome"]
    assert o["session_end"] == "client_closed"
    assert o["termination"] == "signaled" and o["signal"] == signal.SIGTERM
    assert o["exit_code"] == 128 + signal.SIGTERM and o["assay_kill_requested"] is False
    assert o["stop_written"] is True
    # The signal went to the server, not to the host's handler; the handler is back afterwards.
    assert r["hits_during_session"] == [] and r["handler_restored"] is True
    assert r["hits"] == [signal.SIGTERM]
    assert assay_stop.read_capture(cap).closure == "closed"


def test_without_forward_signals_the_host_handler_is_untouched(
    tmp_path: Path, demo_server: Path, demo_policy: Path
) -> None:
    cap = tmp_path / "cap"
    sent = tmp_path / "sent"
    proc = _start_host(tmp_path, command=[sys.executable, str(demo_server)],
                       policy=str(demo_policy), capture_dir=str(cap), close_when=str(sent))
    _wait_for(cap / "session-context.json")
    os.kill(proc.pid, signal.SIGTERM)
    time.sleep(0.3)
    sent.touch()
    r = _result(proc)
    o = r["outcome"]
    # The server never saw the signal: it exited normally at end of input.
    assert o["termination"] == "exited" and o["child_exit_code"] == 0 and o["exit_code"] == 0
    # The host's handler got both signals (the one during the session runs once the call returns).
    assert r["handler_restored"] is True
    assert r["hits"] == [signal.SIGTERM, signal.SIGTERM]


def test_library_host_ignoring_sigchld_records_unknown_and_kills_nothing(
    tmp_path: Path, demo_server: Path, demo_policy: Path
) -> None:
    cap = tmp_path / "cap"
    proc = _start_host(tmp_path, command=[sys.executable, str(demo_server)],
                       policy=str(demo_policy), capture_dir=str(cap), ignore_sigchld=True)
    o = _result(proc)["outcome"]
    # The kernel reaped the server (ECHILD): no status, and no kill of a PID we no longer own.
    assert o["termination"] == "unknown" and o["assay_kill_requested"] is False
    assert o["signal"] is None and o["child_exit_code"] is None
    assert o["exit_code"] == 3 and o["session_end"] == "client_closed"
    assert json.loads((cap / "session-stop.json").read_text())["data"]["termination"] == "unknown"
    # A recorded ending with a complete log: closed, though the status could not be observed.
    assert assay_stop.read_capture(cap).closure == "closed"


def test_probe_sdk_shutdown_leaves_a_closed_capture(
    tmp_path: Path, probe_dir: Path, fault_server: Path
) -> None:
    """The official SDKs close stdin, wait about 2 s, then SIGTERM the server command. A server
    that outlives stdin EOF is ended by the idle drain (1 s quiet with no request pending) or by
    the forwarded SIGTERM, whichever comes first; either way the capture is closed."""
    cap = tmp_path / "cap"
    proc = subprocess.Popen(
        [sys.executable, str(probe_dir / "wrap_entry.py"), "--capture-dir", str(cap), "--",
         sys.executable, str(fault_server), "linger"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT + "\n" + call(2, "echo", '{"text":"a"}') + "\n")
    proc.stdin.close()
    assert json.loads(proc.stdout.readline())["id"] == 1
    assert json.loads(proc.stdout.readline())["id"] == 2
    time.sleep(2)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode in (128 + signal.SIGKILL, 128 + signal.SIGTERM), err
    verdict = assay_stop.read_capture(cap)
    assert verdict.closure == "closed", verdict.to_dict()
    killed = proc.returncode == 128 + signal.SIGKILL
    assert verdict.to_dict()["signal"] == (signal.SIGKILL if killed else signal.SIGTERM)
    assert verdict.to_dict()["assay_kill_requested"] is killed
