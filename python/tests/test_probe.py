"""The agent-session-evidence-probe scripts: wrap_entry.py as a host's server command and
session_stop.py as the reader (SPEC §9)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import INIT, call


def _wrap(probe_dir: Path, args: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(probe_dir / "wrap_entry.py"), *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


def _read(probe_dir: Path, cap: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(probe_dir / "session_stop.py"), str(cap)],
                          capture_output=True, text=True, timeout=60)


def test_wrap_entry_then_session_stop_closed(tmp_path: Path, probe_dir: Path, demo_server: Path) -> None:
    cap = tmp_path / "cap"
    lines = [INIT, call(2, "echo", '{"text":"probe"}'), call(3, "exec", '{"cmd":"id"}')]
    r = _wrap(probe_dir, ["--capture-dir", str(cap), "--", sys.executable, str(demo_server)],
              "\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    responses = {m["id"]: m for m in map(json.loads, r.stdout.splitlines())}
    assert responses[2]["result"]["content"][0]["text"] == "probe"
    assert responses[3]["result"]["isError"] is True  # the default (demo) policy denies exec
    # stderr of the server is retained in the capture
    assert "assay-demo-server" in (cap / "proxy-stderr.log").read_text()
    protocol = json.loads((cap / "protocol.json").read_text())
    assert protocol["event_source"] == "assay://agent-session-evidence-probe/session"

    v = _read(probe_dir, cap)
    assert v.returncode == 0, v.stdout + v.stderr
    verdict = json.loads(v.stdout)
    assert verdict["closure"] == "closed" and verdict["decision_events_written"] == 2


def test_nonzero_child_exit_is_passed_on_and_still_closed(
    tmp_path: Path, probe_dir: Path, fault_server: Path
) -> None:
    cap = tmp_path / "cap"
    r = _wrap(probe_dir, ["--capture-dir", str(cap), "--", sys.executable, str(fault_server), "exit7"], INIT + "\n")
    assert r.returncode == 7, r.stderr
    v = _read(probe_dir, cap)
    assert v.returncode == 0 and json.loads(v.stdout)["exit_code"] == 7


def test_wrap_entry_config_error_exits_2(tmp_path: Path, probe_dir: Path, demo_server: Path) -> None:
    r = _wrap(probe_dir, ["--capture-dir", str(tmp_path / "cap"), "--policy", str(tmp_path / "none.yaml"),
                          "--", sys.executable, str(demo_server)], "")
    assert r.returncode == 2 and "assay: policy: " in r.stderr, r.stderr
    assert not (tmp_path / "cap").exists()


def test_wrap_entry_missing_server_exits_127(tmp_path: Path, probe_dir: Path) -> None:
    r = _wrap(probe_dir, ["--capture-dir", str(tmp_path / "cap"), "--", str(tmp_path / "nope")], "")
    assert r.returncode == 127 and "command not found" in r.stderr


def test_session_stop_exits_nonzero_unless_closed(tmp_path: Path, probe_dir: Path) -> None:
    (tmp_path / "empty").mkdir()
    v = _read(probe_dir, tmp_path / "empty")
    assert v.returncode == 1
    assert json.loads(v.stdout)["closure"] == "unknown" and "missing_file" in v.stderr
    u = subprocess.run([sys.executable, str(probe_dir / "session_stop.py")], capture_output=True, text=True, timeout=60)
    assert u.returncode == 2
