"""The built wheel installs into a clean virtual environment with nothing else (`--no-index`,
so no dependency could be fetched) and `import assay_stop` works there."""
from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _wheel() -> Path:
    env = os.environ.get("ASSAY_WHEEL")
    if env:
        return Path(env)
    wheels = sorted((ROOT / "target" / "wheels").glob("assay_stop-*.whl"))
    if not wheels:
        pytest.skip("no built wheel (scripts/test.sh builds one and sets ASSAY_WHEEL)")
    return wheels[-1]


@pytest.mark.timeout(300)
def test_wheel_installs_into_a_clean_venv(tmp_path: Path, cli_capture: Path) -> None:
    wheel = _wheel()
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    py = env_dir / "bin" / "python"
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", str(wheel)],
                   check=True, timeout=240, env=clean_env)
    check = (
        "import assay_stop, sys; "
        "assert assay_stop.__file__.startswith(sys.prefix), assay_stop.__file__; "
        "c = assay_stop.read_capture(sys.argv[1]); "
        "print(assay_stop.__version__, c.closure)"
    )
    r = subprocess.run([str(py), "-I", "-c", check, str(cli_capture)], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path, env=clean_env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [__import__("assay_stop").__version__, "closed"]
    listed = subprocess.run([str(py), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                            timeout=60, env=clean_env).stdout
    assert "assay-stop==" in listed or "assay_stop==" in listed
    r = subprocess.run([str(py), "-I", "-m", "assay_stop", "read", str(cli_capture)], capture_output=True,
                       timeout=60, cwd=tmp_path, env=clean_env)
    assert r.returncode == 0
