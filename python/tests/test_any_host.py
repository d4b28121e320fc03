"""A library in any host (SPEC §3.1b): a host that closed its standard descriptors, forks during a
session, installs a signal handler during one, changes directory during one, passes a command
with a NUL byte, or ignores SIGXFSZ for itself. Each host runs in a process of its own (its
descriptors, dispositions and working directory never touch the test runner) and reports through a
file; every wait is on an event (a pipe byte, a response line, waitpid), never a sleep."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict

import pytest

from conftest import INIT, call

PRELUDE = r"""
import json, os, signal, sys, threading
import assay_stop

cfg = json.loads(sys.argv[1])
report = open(cfg["report"], "w")  # opened first: numbered 3 or above

def done(result):
    report.write(json.dumps(result))
    report.close()

def session(in_r, out_w, **kw):
    result = {}
    def run():
        try:
            result["outcome"] = assay_stop.wrap_session(
                cfg["command"], policy=cfg["policy"], event_source="assay://pytest/any-host",
                stdin=in_r, stdout=out_w, **kw)
        except BaseException as e:
            result["error"] = repr(e)
            os.write(out_w, b"session error\n")  # wakes a host waiting for a response
    t = threading.Thread(target=run)
    t.start()
    return t, result

def read_line(fd, buf):
    while b"\n" not in buf[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf[0] += chunk
    line, _, rest = buf[0].partition(b"\n")
    buf[0] = rest
    return line

def read_all(fd, buf):
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return buf[0]
        buf[0] += chunk
"""


def _run_host(tmp_path: Path, body: str, **cfg: Any) -> Dict[str, Any]:
    script = tmp_path / "host.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    report = tmp_path / "report.json"
    cfg["report"] = str(report)
    proc = subprocess.run([sys.executable, str(script), json.dumps(cfg)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result: Dict[str, Any] = json.loads(report.read_text())
    return result


CLOSED_STDIO = r"""
lines = cfg["lines"]
if cfg["pipes_first"]:
    # The client's pipes are made first (3 and above); then 0, 1 and 2 are closed, free for
    # whatever the library opens next.
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.close(0); os.close(1); os.close(2)
else:
    # A daemon that closed 0, 1 and 2 and then made its pipes: they take 0, 1 and 2.
    os.close(0); os.close(1); os.close(2)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
t, result = session(in_r, out_w, capture_dir=cfg["cap"])
buf = [b""]
os.write(in_w, (lines[0] + "\n").encode())
first = read_line(out_r, buf)
# The session runs (it answered): what is numbered 0, 1 and 2 now?
during = {n: os.path.exists(f"/proc/self/fd/{n}") and os.readlink(f"/proc/self/fd/{n}")
          for n in (0, 1, 2)}
for line in lines[1:]:
    os.write(in_w, (line + "\n").encode())
os.close(in_w)
t.join(60)
os.close(out_w)
rest = read_all(out_r, buf)
o = result["outcome"]
closure = assay_stop.read_capture(cfg["cap"])
with open(os.path.join(cfg["cap"], "decisions.ndjson"), "rb") as f:
    log_lines = f.read().count(b"\n")
done({
    "error": result.get("error"),
    "output": (first + b"\n" + rest).decode("utf-8", "replace"),
    "during": during,
    "own": {"in_r": in_r, "in_w": in_w, "out_r": out_r, "out_w": out_w},
    "closure": closure.closure, "reasons": [r.code for r in closure.reasons],
    "written": o.decision_events_written, "log_lines": log_lines,
    "termination": o.termination, "session_end": o.session_end,
})
"""


@pytest.mark.parametrize("pipes_first", [True, False])
def test_a_host_with_0_1_2_closed_gets_a_closed_capture_and_no_diagnostic_in_its_streams(
    tmp_path: Path, demo_server: Path, demo_policy: Path, pipes_first: bool
) -> None:
    lines = [INIT, call(2, "echo", '{"text":"a"}'), call(3, "exec", "{}")]
    r = _run_host(tmp_path, CLOSED_STDIO, command=[sys.executable, str(demo_server)],
                  policy=str(demo_policy), cap=str(tmp_path / "cap"), lines=lines,
                  pipes_first=pipes_first)
    assert r["error"] is None, r
    assert r["session_end"] == "client_closed" and r["termination"] == "exited", r
    # The capture is closed: the log has exactly the lines the stop record counts.
    assert r["closure"] == "closed", r
    assert r["written"] == 2 and r["log_lines"] == 2, r
    # The client's stream carries protocol only: three responses, no `assay:` line.
    out = r["output"].splitlines()
    assert len(out) == 3 and all(line.startswith("{") for line in out), r
    if pipes_first:
        # Nothing of the library's took 0, 1 or 2 while the session ran.
        assert r["during"] == {"0": False, "1": False, "2": False}, r
    else:
        assert sorted(r["own"].values())[:3] == [0, 1, 2], r


FORK_DURING_SESSION = r"""
in_r, in_w = os.pipe()
out_r, out_w = os.pipe()
t, result = session(in_r, out_w, forward_signals=True)
buf = [b""]
os.write(in_w, (cfg["init"] + "\n").encode())
read_line(out_r, buf)
# The session runs. A child forked now waits (on a pipe) until the parent is done.
hold_r, hold_w = os.pipe()
child = os.fork()
if child == 0:
    # The host's own descriptors are the host's to close; the session's are gone already.
    for fd in (hold_w, in_r, in_w, out_r, out_w):
        os.close(fd)
    os.read(hold_r, 1)
    os._exit(0)
os.close(hold_r)
# The client ends its input: the server ends at the end of its input, the session returns, and
# the client sees end of file, all while the forked child is alive.
os.close(in_w)
t.join(60)
returned = not t.is_alive()
os.close(out_w)
read_all(out_r, buf)
child_alive = os.waitpid(child, os.WNOHANG) == (0, 0)
os.close(hold_w)
os.waitpid(child, 0)
o = result.get("outcome")
done({
    "error": result.get("error"), "returned": returned, "child_alive": child_alive,
    "termination": o and o.termination, "child_exit_code": o and o.child_exit_code,
    "kill": o and o.assay_kill_requested,
})
"""


def test_a_process_forked_during_a_session_keeps_none_of_its_descriptors(
    tmp_path: Path, demo_server: Path, demo_policy: Path
) -> None:
    r = _run_host(tmp_path, FORK_DURING_SESSION, command=[sys.executable, str(demo_server)],
                  policy=str(demo_policy), init=INIT)
    assert r["error"] is None and r["returned"] is True, r
    # The child was still alive when everything ended: it held nothing of the session's.
    assert r["child_alive"] is True, r
    assert r["termination"] == "exited" and r["child_exit_code"] == 0, r
    assert r["kill"] is False, r


HOST_HANDLER = r"""
in_r, in_w = os.pipe()
out_r, out_w = os.pipe()
t, result = session(in_r, out_w, forward_signals=True)
buf = [b""]
os.write(in_w, (cfg["init"] + "\n").encode())
read_line(out_r, buf)
got = []
signal.signal(signal.SIGTERM, lambda s, f: got.append(s))
os.close(in_w)
t.join(60)
os.close(out_w)
read_all(out_r, buf)
# The handler the host installed during the session is still its handler.
os.kill(os.getpid(), signal.SIGTERM)
done({"error": result.get("error"), "got": got,
      "handler_is_host": signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)})
"""


def test_a_handler_the_host_installs_during_a_forwarding_session_stays(
    tmp_path: Path, demo_server: Path, demo_policy: Path
) -> None:
    r = _run_host(tmp_path, HOST_HANDLER, command=[sys.executable, str(demo_server)],
                  policy=str(demo_policy), init=INIT)
    assert r["error"] is None, r
    assert r["got"] == [15] and r["handler_is_host"] is True, r


def test_a_nul_byte_in_a_command_argument_is_a_config_error_that_creates_nothing(
    tmp_path: Path, demo_policy: Path
) -> None:
    import assay_stop

    root = tmp_path / "root"
    with pytest.raises(assay_stop.ConfigError) as e:
        assay_stop.wrap_session(["/bin/cat", "a\0b"], policy=str(demo_policy),
                                event_source="assay://pytest/nul", capture_root=str(root))
    assert e.value.option == "command", e.value
    assert not root.exists()


def test_the_server_starts_with_sigpipe_and_sigxfsz_at_their_defaults(
    tmp_path: Path, demo_policy: Path
) -> None:
    # Python ignores SIGPIPE and SIGXFSZ for itself; the server gets the defaults, as
    # subprocess gives them.
    import assay_stop
    import signal

    # A shell (Python would ignore both again for itself) that writes its own SigIgn mask.
    script = 'grep ^SigIgn: /proc/$$/status > "$1"; cat > /dev/null'
    assert signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.close(in_w)
    mask_file = tmp_path / "mask"
    try:
        assay_stop.wrap_session(["/bin/sh", "-c", script, "sh", str(mask_file)],
                                policy=str(demo_policy), event_source="assay://pytest/sig",
                                stdin=in_r, stdout=out_w)
    finally:
        for fd in (in_r, out_r, out_w):
            os.close(fd)
    ignored = int(mask_file.read_text().split()[1], 16)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not ignored & (1 << (sig - 1)), hex(ignored)


CHDIR = r"""
in_r, in_w = os.pipe()
out_r, out_w = os.pipe()
t, result = session(in_r, out_w, capture_dir="cap", decision_log=None)
buf = [b""]
os.write(in_w, (cfg["init"] + "\n").encode())
read_line(out_r, buf)
os.chdir(cfg["elsewhere"])
os.write(in_w, (cfg["call"] + "\n").encode())
read_line(out_r, buf)
os.close(in_w)
t.join(60)
os.close(out_w)
read_all(out_r, buf)
o = result.get("outcome")
done({"error": result.get("error"), "stop_written": o and o.stop_written,
      "capture_dir": o and o.capture_dir,
      "elsewhere": sorted(os.listdir(cfg["elsewhere"]))})
"""


def test_evidence_lands_where_it_was_configured_when_the_host_changes_directory(
    tmp_path: Path, demo_server: Path, demo_policy: Path
) -> None:
    import assay_stop

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = _run_host(tmp_path, CHDIR, command=[sys.executable, str(demo_server)],
                  policy=str(demo_policy), init=INIT, call=call(2, "echo", '{"text":"a"}'),
                  elsewhere=str(elsewhere))
    assert r["error"] is None and r["stop_written"] is True, r
    assert r["elsewhere"] == [], r
    closure = assay_stop.read_capture(str(tmp_path / "cap"))
    assert closure.closure == "closed", closure.to_dict()


def test_bytes_paths_round_trip_and_a_non_utf8_argument_reaches_the_server_byte_for_byte(
    tmp_path: Path, demo_policy: Path
) -> None:
    import assay_stop

    root = os.fsencode(tmp_path) + b"/root-\xff"
    got = tmp_path / "arg"
    # The server writes its first argument, byte for byte, then reads to the end of its input.
    script = 'printf %s "$1" > "$2"; cat > /dev/null'
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(in_w, (INIT + "\n").encode())
    os.close(in_w)
    try:
        outcome = assay_stop.wrap_session(
            [b"/bin/sh", b"-c", script.encode(), b"sh", b"\xff\xfe-arg", os.fsencode(got)],
            policy=str(demo_policy), event_source="assay://pytest/bytes",
            capture_root=root, stdin=in_r, stdout=out_w)
    finally:
        for fd in (in_r, out_r, out_w):
            os.close(fd)
    assert got.read_bytes() == b"\xff\xfe-arg"
    # The outcome's paths are os.fsdecode-style str naming what exists.
    cap = outcome.capture_dir
    assert isinstance(cap, str) and os.fsencode(cap).startswith(root), cap
    assert os.path.isdir(cap), cap
    paths = outcome.paths
    assert paths["capture_dir"] == cap and os.path.isfile(paths["session_stop"]), paths
    assert outcome.to_dict()["paths"] == paths
    closure = assay_stop.read_capture(os.fsencode(cap))
    assert closure.closure == "closed", closure.to_dict()
    assert closure.session_id == outcome.session_id
    assert repr(closure) == (
        f'Closure(closure="closed", session_id="{outcome.session_id}", reasons=0)'
    )
    assert "Some(" not in repr(assay_stop.read_capture(tmp_path / "none"))


SHUTDOWN = r"""
import atexit
# Eight daemon threads read captures in a loop (the GIL released in each call) and another runs
# a session whose client input the host closes at exit: they return while the interpreter
# finalizes, several of them waiting for the GIL at once. The process must exit 0, never crash
# (a guard that only asks Py_IsFinalizing crashed 25 runs in 40 of this host on CPython 3.11).
looping = threading.Event()
def reader():
    while True:
        assay_stop.read_capture(cfg["cap"])
        looping.set()
for _ in range(8):
    threading.Thread(target=reader, daemon=True).start()
in_r, in_w = os.pipe()
out_r, out_w = os.pipe()
os.write(in_w, (cfg["init"] + "\n").encode())
def run():
    assay_stop.wrap_session(cfg["command"], policy=cfg["policy"],
                            event_source="assay://pytest/shutdown", stdin=in_r, stdout=out_w)
threading.Thread(target=run, daemon=True).start()
buf = [b""]
read_line(out_r, buf)
looping.wait(30)
atexit.register(os.close, in_w)
done({"started": True})
"""


def test_calls_returning_while_the_interpreter_finalizes_never_crash_the_host(
    tmp_path: Path, demo_server: Path, demo_policy: Path
) -> None:
    for _ in range(3):
        r = _run_host(tmp_path, SHUTDOWN, command=[sys.executable, str(demo_server)],
                      policy=str(demo_policy), init=INIT, cap=str(tmp_path / "none"))
        assert r == {"started": True}
