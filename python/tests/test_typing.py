"""The package's type stubs: a typed usage file passes `mypy --strict`, a misuse fails it, and
`mypy.stubtest` finds the stubs of the native module in line with the built extension."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _mypy(*args: str, cwd: Path = HERE) -> subprocess.CompletedProcess[str]:
    # Checked against the installed package (stubs + py.typed), from a directory where the
    # source tree's python/assay_stop is not importable in its place.
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--strict", *args],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def test_typed_usage_passes_mypy_strict() -> None:
    r = _mypy(str(HERE / "typing_usage.py"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_misuse_is_caught_by_the_stubs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import assay_stop\n"
        "assay_stop.wrap_session(['x'], policy='p', dry_run='yes')\n"
        "c: int = assay_stop.read_capture('d').closure\n"
        "assay_stop.wrap_session(['x'])\n"
    )
    r = _mypy(str(bad), cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout.count("error:") == 3, r.stdout


def test_stubtest_native_module(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "assay_stop",
         "--allowlist", str(ROOT / "python" / ".mypy-stubtest-allowlist")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout + r.stderr
