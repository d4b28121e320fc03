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
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel scripts/test.sh built with scripts/build-wheel.sh (`ASSAY_WHEEL`), or a new one."""
    env = os.environ.get("ASSAY_WHEEL")
    if env:
        return Path(env)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(["bash", str(ROOT / "scripts" / "build-wheel.sh"), str(out)], check=True,
                   timeout=1500, env={**os.environ, "PYTHON": sys.executable})
    (built,) = out.glob("assay_stop-*.whl")
    return built


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


# --- fixtures and helpers for the assay_stop package tests ---------------------------------------

import json  # noqa: E402
import threading  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any, Callable, List, Optional  # noqa: E402

SOURCE = "assay://pytest/python"


@pytest.fixture(scope="session")
def fault_server() -> Path:
    return ROOT / "tests" / "fixtures" / "fault_server.py"


@pytest.fixture(scope="session")
def sdk_server() -> Path:
    return ROOT / "tests" / "fixtures" / "sdk_server.py"


@pytest.fixture(scope="session")
def probe_dir() -> Path:
    return ROOT / "python" / "examples" / "agent-session-evidence-probe"


class Reader(threading.Thread):
    """Reads everything from a descriptor on its own thread (so a session never blocks on a
    full pipe) and lets the test wait for a given number of lines."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd = fd
        self.data = b""
        self.cond = threading.Condition()

    def run(self) -> None:
        while True:
            chunk = os.read(self.fd, 65536)
            with self.cond:
                if not chunk:
                    self.cond.notify_all()
                    break
                self.data += chunk
                self.cond.notify_all()
        os.close(self.fd)

    def wait_lines(self, n: int, timeout: float = 30.0) -> List[Any]:
        with self.cond:
            ok = self.cond.wait_for(lambda: self.data.count(b"\n") >= n, timeout)
        assert ok, f"expected {n} lines, got {self.data!r}"
        return self.lines()

    def lines(self) -> List[Any]:
        return [json.loads(x) for x in self.data.splitlines() if x.strip()]


@dataclass
class Client:
    """An MCP client made of two pipes: the session reads `stdin`, writes `stdout`."""

    stdin: int  # the session's end (read)
    stdout: int  # the session's end (write)
    writer: int  # the test's end of the session's input
    reader: Reader = field(repr=False)

    def send(self, *lines: str) -> None:
        os.write(self.writer, ("\n".join(lines) + "\n").encode())

    def close_input(self) -> None:
        if self.writer >= 0:
            os.close(self.writer)
            self.writer = -1

    def finish(self) -> List[Any]:
        """After the session returned: close the session's ends and collect its responses."""
        self.close_input()
        for fd in (self.stdin, self.stdout):
            os.close(fd)
        self.reader.join(30)
        return self.reader.lines()


@pytest.fixture
def client() -> Any:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    reader = Reader(out_r)
    reader.start()
    c = Client(stdin=in_r, stdout=out_w, writer=in_w, reader=reader)
    yield c
    for fd in (c.writer, c.stdin, c.stdout):
        try:
            os.close(fd)
        except OSError:
            pass


class SessionThread(threading.Thread):
    """Runs a callable (a wrap_session call) on a thread and keeps its result or exception."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.fn = fn
        self.result: Any = None
        self.error: Optional[BaseException] = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            self.error = e


def session_of(lines: List[str], wrap: Callable[[int, int], Any]) -> Any:
    """Writes `lines` as a client that then closes its input, and runs `wrap(stdin, stdout)` (a
    `wrap_session` call given the session's ends of the two pipes); returns its result. The
    client's ends are closed and its responses read whatever the call does."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    reader = Reader(out_r)
    reader.start()
    c = Client(stdin=in_r, stdout=out_w, writer=in_w, reader=reader)
    c.send(*lines)
    c.close_input()
    try:
        return wrap(c.stdin, c.stdout)
    finally:
        c.finish()
