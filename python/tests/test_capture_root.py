"""Capture roots from Python (SPEC §9, §10): ``wrap_session(capture_root=...)`` gives every call a
new capture directory, a discovery-only run leaves ``no-session.json``, and
``assay_stop.read_captures`` judges a whole root like ``assay capture summary``."""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, List

import pytest

import assay_stop
from conftest import INIT, SOURCE, Client, Reader, call

DISCOVER = '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}'
RUN_NAME = re.compile(r"^\d{8}T\d{6}\.\d{6}Z-[0-9a-f]{32}$")


def _wrap(root: Path, server: Path, policy: Path, lines: List[str], **kwargs: Any) -> assay_stop.WrapOutcome:
    """One wrap_session call into ``root`` with a client that sends ``lines`` and closes."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    reader = Reader(out_r)
    reader.start()
    c = Client(stdin=in_r, stdout=out_w, writer=in_w, reader=reader)
    if lines:
        c.send(*lines)
    c.close_input()
    try:
        return assay_stop.wrap_session([sys.executable, str(server)], policy=policy, event_source=SOURCE,
                                       capture_root=root, stdin=c.stdin, stdout=c.stdout, **kwargs)
    finally:
        c.finish()


def _summary(assay_bin: Path, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(assay_bin), "capture", "summary", str(root)], capture_output=True, text=True,
                          timeout=120)


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


SESSION = [INIT, call(2, "echo", '{"text":"a"}'), call(3, "exec", "{}")]


def test_two_calls_into_one_root_give_two_closed_captures(
    tmp_path: Path, demo_server: Path, demo_policy: Path, assay_bin: Path
) -> None:
    root = tmp_path / "captures"
    first = _wrap(root, demo_server, demo_policy, SESSION)
    second = _wrap(root, demo_server, demo_policy, SESSION)
    assert _mode(root) == 0o700
    dirs = sorted(root.iterdir())
    assert [str(d) for d in dirs] == [first.capture_dir, second.capture_dir]
    for outcome, d in ((first, dirs[0]), (second, dirs[1])):
        assert RUN_NAME.match(d.name) and d.name.endswith("-" + outcome.session_id)
        assert _mode(d) == 0o700
        assert outcome.paths["capture_dir"] == str(d)
        assert outcome.paths["session_stop"] == str(d / "session-stop.json")
        assert outcome.paths["no_session"] is None
        assert outcome.stop_written and outcome.exit_code == 0

    verdicts = assay_stop.read_captures(root)
    assert [(v.capture, v.closure, v.no_session, v.session_id) for v in verdicts] == [
        (dirs[0].name, "closed", False, first.session_id),
        (dirs[1].name, "closed", False, second.session_id),
    ]
    assert all(isinstance(v, assay_stop.Closure) and v.reasons == [] for v in verdicts)
    # Each is the verdict `read_capture` gives the same directory.
    assert verdicts[0].to_dict() == assay_stop.read_capture(dirs[0]).to_dict()
    assert assay_stop.read_capture(dirs[0]).capture is None
    assert repr(verdicts[0]).startswith(f'Closure(capture="{dirs[0].name}", closure="closed"')


def test_probe_then_session_one_no_session_one_closed(
    tmp_path: Path, demo_server: Path, demo_policy: Path, assay_bin: Path
) -> None:
    # The TypeScript SDK v2 client's pattern: a discovery probe, then the session.
    root = tmp_path / "captures"
    probe = _wrap(root, demo_server, demo_policy, [DISCOVER])
    session = _wrap(root, demo_server, demo_policy, SESSION)
    assert probe.discovery_only and not probe.stop_written
    marker = Path(probe.capture_dir or "") / "no-session.json"
    assert probe.paths["no_session"] == str(marker)
    assert json.loads(marker.read_text()) == {"schema": "assay.capture.no_session.v1",
                                              "session_id": probe.session_id}
    assert _mode(marker) == 0o600

    verdicts = assay_stop.read_captures(root)
    assert [(v.closure, v.no_session) for v in verdicts] == [("unknown", True), ("closed", False)]
    assert [r.code for r in verdicts[0].reasons] == ["no_session"]
    assert verdicts[1].session_id == session.session_id

    cli = _summary(assay_bin, root)
    assert cli.returncode == 0, cli.stderr
    lines = [json.loads(x) for x in cli.stdout.splitlines()]
    assert [x["capture"] for x in lines[:-1]] == [v.capture for v in verdicts]
    assert [x["closure"] for x in lines[:-1]] == ["no_session", "closed"]
    assert lines[-1] == {"summary": {"closed": 1, "incomplete": 0, "unknown": 0, "no_session": 1}}


def test_read_captures_matches_capture_summary_on_a_mixed_root(
    tmp_path: Path, demo_server: Path, demo_policy: Path, assay_bin: Path
) -> None:
    root = tmp_path / "root"
    closed = _wrap(root, demo_server, demo_policy, SESSION)
    _wrap(root, demo_server, demo_policy, [])  # no client message at all: no session
    broken = Path(_wrap(root, demo_server, demo_policy, SESSION).capture_dir or "")
    (broken / "session-stop.json").unlink()
    (root / "zz-link").symlink_to(closed.capture_dir or "")
    (root / "not-a-capture").mkdir()
    (root / "plain-file").write_text("x")

    verdicts = assay_stop.read_captures(root)
    cli = _summary(assay_bin, root)
    assert cli.returncode == 3
    lines = [json.loads(x) for x in cli.stdout.splitlines()]
    summary = {"closed": 0, "incomplete": 0, "unknown": 0, "no_session": 0}
    for v, line in zip(verdicts, lines, strict=False):
        listed = "no_session" if v.no_session else v.closure
        # The capture's label (SPEC §10): the default one, absent for the symlinked entry.
        label = None if v.session_id is None else "default-mcp-server"
        assert line == {"capture": v.capture, "closure": listed, "session_id": v.session_id,
                        "server_id": label, "reasons": [r.code for r in v.reasons]}
        summary[listed] += 1
    assert len(lines) == len(verdicts) + 1 == 5
    assert lines[-1] == {"summary": summary} == {
        "summary": {"closed": 1, "incomplete": 0, "unknown": 2, "no_session": 1}}
    link = verdicts[-1]
    assert link.capture == "zz-link" and link.closure == "unknown" and link.session_id is None
    assert [r.code for r in link.reasons] == ["not_regular_file"]


def test_read_captures_of_an_empty_root_and_a_bad_root(tmp_path: Path) -> None:
    assert assay_stop.read_captures(tmp_path) == []
    (tmp_path / "f").write_text("x")
    for bad in (tmp_path / "f", tmp_path / "missing"):
        with pytest.raises(assay_stop.ConfigError) as info:
            assay_stop.read_captures(bad)
        assert "capture root" in str(info.value) and info.value.kind == "invalid_argument"
        assert info.value.exit_status == 2


@pytest.mark.parametrize(
    "root_name, extra, option",
    [
        ("no/such/root", {}, "capture_root"),
        ("a-file", {}, "capture_root"),
        ("root", {"capture_dir": "cap"}, "capture_dir"),
        ("root", {"decision_log": "log", "decision_log_new": True}, "decision_log"),
        ("root", {"session_stop_out": "stop.json"}, "session_stop_out"),
        ("root", {"coverage_out": "cov.json"}, "coverage_out"),
    ],
)
def test_capture_root_config_errors_create_nothing(
    tmp_path: Path, demo_server: Path, demo_policy: Path, root_name: str, extra: dict[str, Any], option: str
) -> None:
    (tmp_path / "a-file").write_text("x")
    kwargs = {k: (str(tmp_path / v) if isinstance(v, str) else v) for k, v in extra.items()}
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(assay_stop.ConfigError) as info:
        assay_stop.wrap_session([sys.executable, str(demo_server)], policy=demo_policy, event_source=SOURCE,
                                capture_root=tmp_path / root_name, stdin=0, stdout=1, **kwargs)
    assert info.value.option == option, str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_probe_wrap_entry_with_capture_root(
    tmp_path: Path, probe_dir: Path, demo_server: Path, assay_bin: Path
) -> None:
    root = tmp_path / "probe-root"
    cmd = [sys.executable, str(probe_dir / "wrap_entry.py"), "--capture-root", str(root), "--",
           sys.executable, str(demo_server)]
    for stdin in (DISCOVER + "\n", "\n".join(SESSION) + "\n", "\n".join(SESSION) + "\n"):
        r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    cli = _summary(assay_bin, root)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert json.loads(cli.stdout.splitlines()[-1]) == {
        "summary": {"closed": 2, "incomplete": 0, "unknown": 0, "no_session": 1}}
    both = subprocess.run([*cmd[:2], "--capture-root", str(root), "--capture-dir", str(tmp_path / "c"), "--",
                           "true"], capture_output=True, text=True, timeout=60)
    assert both.returncode == 2 and "not allowed with" in both.stderr
