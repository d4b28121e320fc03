"""The wheel's `assay` command (`[project.scripts] assay = "assay_stop._cli:main"`) is the same
command line as the native binary: installed with `pip install` into a clean venv, with
`pipx install` and with `uv tool install` (both installed into the test venv from PyPI by
scripts/test.sh), it runs a real `assay mcp wrap` session and reads its capture back.

The wheel is the one scripts/build-wheel.sh built (`ASSAY_WHEEL`), or a new one."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import INIT, call

BIN = Path(sys.executable).parent


def _clean_env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def _session(assay: Path, tmp: Path, demo_server: Path, demo_policy: Path, env: Dict[str, str]) -> Path:
    """A real session through `assay mcp wrap` (started from another directory, as a host
    would), then `capture read` and `capture show` of its capture."""
    cap = tmp / "cap"
    lines = [INIT, call(2, "echo", '{"text":"through the console script"}'), call(3, "exec", "{}")]
    proc = subprocess.run(
        [str(assay), "mcp", "wrap", "--policy", str(demo_policy), "--event-source",
         "assay://pytest/console-script", "--label", "console-script", "--capture-dir", str(cap),
         "--", sys.executable, str(demo_server)],
        input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120, cwd="/", env=env,
    )
    assert proc.returncode == 0, proc.stderr
    responses = {r["id"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert responses[2]["result"]["content"][0]["text"] == "through the console script"
    assert responses[3]["result"]["isError"] is True
    read = subprocess.run([str(assay), "capture", "read", str(cap)], capture_output=True, text=True,
                          timeout=60, env=env)
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout)["closure"] == "closed"
    show = subprocess.run([str(assay), "capture", "show", str(cap)], capture_output=True, text=True,
                          timeout=60, env=env)
    assert show.returncode == 0, show.stderr
    assert "server_id       console-script" in show.stdout
    assert "counts: 1 allow, 1 deny, 0 error" in show.stdout
    return cap


def _same_cli_as_the_binary(assay: Path, assay_bin: Path, env: Dict[str, str]) -> None:
    for args in (["--version"], ["--help"], ["mcp", "wrap-config", "--help"], ["completions", "bash"]):
        ours = subprocess.run([str(assay), *args], capture_output=True, text=True, timeout=60, env=env)
        native = subprocess.run([str(assay_bin), *args], capture_output=True, text=True, timeout=60)
        assert ours.returncode == native.returncode == 0, ours.stderr
        assert ours.stdout == native.stdout, args
    # Usage errors: the same status (2) and message.
    ours = subprocess.run([str(assay), "capture", "read"], capture_output=True, text=True, timeout=60,
                          env=env)
    native = subprocess.run([str(assay_bin), "capture", "read"], capture_output=True, text=True, timeout=60)
    assert ours.returncode == native.returncode == 2
    assert ours.stderr == native.stderr


@pytest.mark.timeout(300)
def test_pip_install_gives_the_assay_command(wheel: Path, tmp_path: Path, assay_bin: Path,
                                             demo_server: Path, demo_policy: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    env = _clean_env()
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-index",
                    "--no-deps", str(wheel)], check=True, timeout=240, env=env)
    assay = env_dir / "bin" / "assay"
    assert assay.is_file()
    _same_cli_as_the_binary(assay, assay_bin, env)
    _session(assay, tmp_path, demo_server, demo_policy, env)
    # `wrap-config` writes the console script's own absolute path into host configurations.
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"mcpServers": {"demo": {"command": sys.executable,
                                                          "args": [str(demo_server)]}}}))
    r = subprocess.run([str(assay), "mcp", "wrap-config", str(config), "--policy", str(demo_policy)],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(config.read_text())["mcpServers"]["demo"]["command"] == str(assay)


@pytest.mark.timeout(600)
def test_pipx_install_gives_the_assay_command(wheel: Path, tmp_path: Path,
                                              demo_server: Path, demo_policy: Path) -> None:
    pipx = BIN / "pipx"
    assert pipx.is_file(), "pipx is installed into the test venv by scripts/test.sh"
    home, bin_dir = tmp_path / "pipx-home", tmp_path / "pipx-bin"
    env = _clean_env(PIPX_HOME=str(home), PIPX_BIN_DIR=str(bin_dir), PIPX_MAN_DIR=str(tmp_path / "man"),
                     PIPX_DEFAULT_PYTHON=sys.executable)
    r = subprocess.run([str(pipx), "install", "--pip-args=--no-index --no-deps", str(wheel)],
                       capture_output=True, text=True, timeout=500, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assay = bin_dir / "assay"
    assert assay.exists(), r.stdout
    _session(assay, tmp_path, demo_server, demo_policy, env)


@pytest.mark.timeout(600)
def test_uv_tool_install_gives_the_assay_command(wheel: Path, tmp_path: Path,
                                                 demo_server: Path, demo_policy: Path) -> None:
    uv = BIN / "uv"
    assert uv.is_file(), "uv is installed into the test venv by scripts/test.sh"
    bin_dir = tmp_path / "uv-bin"
    env = _clean_env(UV_TOOL_DIR=str(tmp_path / "uv-tools"), UV_TOOL_BIN_DIR=str(bin_dir),
                     UV_CACHE_DIR=str(tmp_path / "uv-cache"), UV_PYTHON_DOWNLOADS="never")
    args: List[str] = [str(uv), "tool", "install", "--offline", "--no-index", "--python", sys.executable,
                       str(wheel)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=500, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assay = bin_dir / "assay"
    assert assay.exists(), r.stdout + r.stderr
    _session(assay, tmp_path, demo_server, demo_policy, env)
    assert shutil.which("assay", path=str(bin_dir)) == str(assay)
