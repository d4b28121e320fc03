"""The release wheel (scripts/build-wheel.sh) is portable and installs into a clean virtual
environment with nothing else (`--no-index`, so no dependency could be fetched), where
`import assay_stop` works.

Portable means what auditwheel checks for the manylinux2014 policy (PEP 599): the wheel is tagged
`manylinux_2_17` / `manylinux2014` for this machine's architecture, the extension module needs no
glibc symbol version newer than 2.17, and it links only libraries that policy allows."""
from __future__ import annotations

import os
import platform
import re
import subprocess
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# PEP 599: the libraries a manylinux2014 extension may link dynamically.
MANYLINUX2014_LIBS = {
    "libgcc_s.so.1", "libstdc++.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libc.so.6",
    "libnsl.so.1", "libutil.so.1", "libpthread.so.0", "libresolv.so.2", "libX11.so.6",
    "libXext.so.6", "libXrender.so.1", "libICE.so.6", "libSM.so.6", "libGL.so.1",
    "libgobject-2.0.so.0", "libgthread-2.0.so.0", "libglib-2.0.so.0",
}
# The glibc dynamic loader, which the libraries above come with.
LOADER = re.compile(r"ld-linux-[a-z0-9_-]+\.so\.[12]")


def _extension(wheel: Path, into: Path) -> Path:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if re.fullmatch(r"assay_stop/_native[^/]*\.so", n)]
        z.extract(name, into)
    return into / name


def test_wheel_is_tagged_manylinux2014(wheel: Path) -> None:
    arch = platform.machine()
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/WHEEL")]
        tags = {line.split(":", 1)[1].strip() for line in z.read(meta).decode().splitlines()
                if line.startswith("Tag:")}
    assert tags == {f"cp39-abi3-manylinux_2_17_{arch}", f"cp39-abi3-manylinux2014_{arch}"}, tags
    assert wheel.name.endswith(f"-cp39-abi3-manylinux2014_{arch}.manylinux_2_17_{arch}.whl"), wheel.name


def test_extension_needs_nothing_newer_than_glibc_2_17(wheel: Path, tmp_path: Path) -> None:
    so = _extension(wheel, tmp_path)
    symbols = subprocess.run(["objdump", "-T", str(so)], capture_output=True, text=True, check=True,
                             timeout=60).stdout
    versions = {tuple(int(p) for p in v.split(".")) for v in re.findall(r"\bGLIBC_([0-9.]+)\b", symbols)}
    assert versions, "no versioned glibc symbols found"
    assert max(versions) <= (2, 17), sorted(versions)
    headers = subprocess.run(["objdump", "-p", str(so)], capture_output=True, text=True, check=True,
                             timeout=60).stdout
    needed = {lib for lib in re.findall(r"^\s*NEEDED\s+(\S+)$", headers, re.M) if not LOADER.fullmatch(lib)}
    assert "libc.so.6" in needed and needed <= MANYLINUX2014_LIBS, needed


@pytest.mark.timeout(300)
def test_wheel_installs_into_a_clean_venv(wheel: Path, tmp_path: Path, cli_capture: Path) -> None:
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
    # The package metadata carries the SPDX license expression and the license file (PEP 639).
    show = subprocess.run([str(py), "-I", "-c",
                           "import importlib.metadata as m; d = m.distribution('assay-stop'); "
                           "print(d.metadata['License-Expression']); "
                           "print(*(f.name for f in d.files if f.name == 'LICENSE'))"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, env=clean_env)
    assert show.stdout.split() == ["Apache-2.0", "LICENSE"], show.stdout + show.stderr
