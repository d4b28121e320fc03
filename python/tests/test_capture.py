"""assay_stop.read_capture (never raises), assay_stop.package_capture, and
`python -m assay_stop read` against `assay capture read` (SPEC §7, §9, §10)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import assay_stop
from conftest import INIT, SOURCE, Client, call


def test_read_capture_closed(cli_capture: Path, assay_bin: Path) -> None:
    closure = assay_stop.read_capture(cli_capture)
    assert isinstance(closure, assay_stop.Closure)
    assert closure.closure == "closed" and closure.reasons == []
    assert closure.schema == "assay.capture.closure.v1"
    assert closure.session_id is not None and len(closure.session_id) == 32
    assert closure.stop is not None and closure.stop["decision_log"] == "complete"
    assert closure.stop["termination"] == "exited"
    assert set(closure.files) >= {"protocol.json", "session-context.json", "session-stop.json", "decisions.ndjson"}
    digest = hashlib.sha256((cli_capture / "decisions.ndjson").read_bytes()).hexdigest()
    assert closure.files["decisions.ndjson"]["sha256"] == digest
    assert "not_producer_authentication" in closure.non_claims
    # to_dict is the verdict object of `assay capture read`.
    cli = subprocess.run([str(assay_bin), "capture", "read", str(cli_capture)], capture_output=True, timeout=60)
    assert cli.returncode == 0
    assert closure.to_dict() == json.loads(cli.stdout)
    assert json.loads(closure.to_json()) == closure.to_dict()


@pytest.mark.parametrize("kind", ["missing", "empty", "garbage", "duplicate", "symlink", "file", "huge"])
def test_read_capture_never_raises(tmp_path: Path, cli_capture: Path, kind: str) -> None:
    cap = tmp_path / "c"
    if kind == "empty":
        cap.mkdir()
    elif kind == "garbage":
        cap.mkdir()
        for name in ("protocol.json", "session-context.json", "session-stop.json", "decisions.ndjson"):
            (cap / name).write_bytes(b'{"a":1}\xff\n')
    elif kind == "duplicate":
        cap.mkdir()
        for name in ("protocol.json", "session-context.json", "session-stop.json", "decisions.ndjson"):
            (cap / name).write_bytes(b'{"a":1,"a":2}\n')
    elif kind == "symlink":
        cap.mkdir()
        for p in cli_capture.iterdir():
            (cap / p.name).symlink_to(p)
    elif kind == "file":
        cap.write_text("not a directory")
    elif kind == "huge":
        cap.mkdir()
        for p in cli_capture.iterdir():
            (cap / p.name).write_bytes(p.read_bytes())
        with open(cap / "session-stop.json", "ab") as f:
            f.write(b" " * (64 * 1024))
    closure = assay_stop.read_capture(str(cap))
    assert closure.closure == "unknown"
    assert closure.reasons and all(isinstance(r, assay_stop.Reason) for r in closure.reasons)
    codes = {r.code for r in closure.reasons}
    expected = {"missing": "missing_file", "empty": "missing_file", "garbage": "invalid_json", "duplicate": "duplicate_key",
                "symlink": "not_regular_file", "file": "missing_file", "huge": "too_large"}[kind]
    assert expected in codes, closure.to_dict()
    assert closure.reasons[0].to_dict() == {"code": closure.reasons[0].code, "detail": closure.reasons[0].detail}
    assert closure.to_dict()["closure"] == "unknown"


def test_read_capture_accepts_bytes_paths(cli_capture: Path) -> None:
    assert assay_stop.read_capture(os.fsencode(cli_capture)).closure == "closed"


def _incomplete_capture(tmp_path: Path, client: Client, demo_server: Path, demo_policy: Path) -> Path:
    cap = tmp_path / "incomplete"
    client.send(INIT, call(2, "echo", '{"text":"a"}'), call(3, "echo", '{"text":"%s"}' % ("x" * 600)))
    client.close_input()
    outcome = assay_stop.wrap_session([sys.executable, str(demo_server)], policy=demo_policy,
                                      event_source=SOURCE, capture_dir=cap, max_line_bytes=400,
                                      stdin=client.stdin, stdout=client.stdout)
    client.finish()
    assert outcome.session_end == "proxy_error" and outcome.decision_log == "incomplete"
    return cap


def test_read_capture_incomplete(tmp_path: Path, client: Client, demo_server: Path, demo_policy: Path) -> None:
    closure = assay_stop.read_capture(_incomplete_capture(tmp_path, client, demo_server, demo_policy))
    assert closure.closure == "incomplete"
    # Every event was written: the reason names the ending, never a loss (issue 41).
    assert {r.code for r in closure.reasons} == {"proxy_error"}


def test_package_capture_with_extra_files(tmp_path: Path, cli_capture: Path, demo_policy: Path) -> None:
    dst = tmp_path / "pkg"
    manifest = assay_stop.package_capture(cli_capture, dst, extra_files=[demo_policy, str(Path(__file__))])
    assert isinstance(manifest, assay_stop.PackageManifest)
    assert manifest.schema == "assay.capture.package.v1"
    assert manifest.closure["closure"] == "closed"
    assert "not_producer_authentication" in manifest.non_claims
    assert manifest.producer["version"] == assay_stop.__version__
    assert len(manifest.producer["binary_sha256"]) == 64
    names = {f["name"] for f in manifest.files}
    assert {"protocol.json", "decisions.ndjson", "session-stop.json", "session-context.json"} <= names
    for f in manifest.files:
        data = (dst / f["name"]).read_bytes()
        assert data == (cli_capture / f["name"]).read_bytes()
        assert f["sha256"] == hashlib.sha256(data).hexdigest() and f["bytes"] == len(data)
    extras = {e["path"]: e for e in manifest.extra_files}
    assert extras[str(demo_policy)]["sha256"] == hashlib.sha256(demo_policy.read_bytes()).hexdigest()
    assert extras[str(Path(__file__))]["bytes"] == Path(__file__).stat().st_size
    assert manifest.to_dict() == json.loads((dst / "manifest.json").read_text())
    assert assay_stop.read_capture(dst).closure == "closed"
    assert "closed" in repr(manifest)


def test_package_capture_errors_are_wrap_errors(tmp_path: Path, cli_capture: Path) -> None:
    dst = tmp_path / "exists"
    dst.mkdir()
    with pytest.raises(assay_stop.WrapError) as info:
        assay_stop.package_capture(cli_capture, dst)
    assert isinstance(info.value, OSError) and "exists" in str(info.value)
    with pytest.raises(OSError):
        assay_stop.package_capture(cli_capture, tmp_path / "p2", extra_files=[tmp_path / "missing"])
    assert not (tmp_path / "p2").exists()


def test_package_capture_of_a_missing_or_non_directory_source_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for src in (tmp_path / "missing", tmp_path / "file"):
        with pytest.raises(assay_stop.ConfigError) as info:
            assay_stop.package_capture(src, tmp_path / "out")
        assert str(src) in str(info.value)
        assert not (tmp_path / "out").exists()


def _module_read(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "assay_stop", *args], capture_output=True, timeout=60)


def test_python_m_read_matches_the_cli(
    tmp_path: Path, cli_capture: Path, assay_bin: Path, client: Client, demo_server: Path, demo_policy: Path
) -> None:
    incomplete = _incomplete_capture(tmp_path, client, demo_server, demo_policy)
    for cap, status in ((cli_capture, 0), (incomplete, 1)):
        py = _module_read("read", str(cap))
        cli = subprocess.run([str(assay_bin), "capture", "read", str(cap)], capture_output=True, timeout=60)
        assert py.returncode == cli.returncode == status, (py, cli)
        assert py.stdout == cli.stdout
        assert json.loads(py.stdout)["closure"] == ("closed", "incomplete")[status]
    # A DIR that does not exist is a usage error that says so (SPEC §10), with no verdict.
    absent = tmp_path / "absent"
    py = _module_read("read", str(absent))
    cli = subprocess.run([str(assay_bin), "capture", "read", str(absent)], capture_output=True, timeout=60)
    assert py.returncode == cli.returncode == 2, (py, cli)
    assert py.stdout == cli.stdout == b""
    assert py.stderr == cli.stderr and b"does not exist" in cli.stderr


@pytest.mark.parametrize("args", [[], ["read"], ["read", "a", "b"], ["package", "x"], ["read", "--bogus"]])
def test_python_m_usage_errors(args: list[str]) -> None:
    r = _module_read(*args)
    assert r.returncode == 2 and b"usage" in r.stderr and r.stdout == b""
