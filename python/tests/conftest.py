"""Shared fixtures: the repository root, the `assay` binary built by cargo, the demo server and
policy, and a capture produced by a real wrapped session."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _assay_bin() -> Path:
    env = os.environ.get("ASSAY_BIN")
    if env:
        return Path(env)
    for profile in ("debug", "release"):
        p = ROOT / "target" / profile / "assay"
        if p.exists():
            return p
    raise RuntimeError("build the assay binary first (cargo build)")


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def assay_bin() -> Path:
    return _assay_bin()


@pytest.fixture(scope="session")
def demo_server() -> Path:
    return ROOT / "examples" / "demo" / "server.py"


@pytest.fixture(scope="session")
def demo_policy() -> Path:
    return ROOT / "examples" / "demo" / "policy.yaml"


INIT = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"pytest","version":"1"}}}'
)


def call(i: int, tool: str, args: str) -> str:
    return (
        '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
        % (i, tool, args)
    )


@pytest.fixture
def cli_capture(tmp_path: Path, assay_bin: Path, demo_server: Path, demo_policy: Path) -> Path:
    """A capture directory written by `assay mcp wrap --capture-dir` for a short session."""
    cap = tmp_path / "cap"
    lines = [INIT, call(2, "echo", '{"text":"a"}'), call(3, "exec", "{}")]
    proc = subprocess.run(
        [
            str(assay_bin), "mcp", "wrap", "--policy", str(demo_policy),
            "--event-source", "assay://pytest/session", "--capture-dir", str(cap),
            "--", sys.executable, str(demo_server),
        ],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return cap
