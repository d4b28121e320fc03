"""Every example of README.md and of every page of docs/ runs as written.

The fenced blocks of README.md, docs/python.md, docs/c-abi.md, then every other docs/*.md page in
name order (the libraries' examples moved out of the README kept their tests) are read in order. A `sh` block runs with `bash -euo pipefail`, a
`python` block with this interpreter (which has the installed wheel), a `c` block is compiled
against include/assay.h; all of them in one scratch directory that holds links to the checkout's
`examples/` and `tests/`, one after the other (a block may use what an earlier one wrote), with
the installed `assay` command first on PATH. The line before a block may direct the test:

- `<!-- readme-test: file NAME -->`: the block (any language) is written to NAME;
- `<!-- readme-test: in-checkout -->`: the block runs in the checkout (it writes only into
  `target/`);
- `<!-- readme-test: skip (WHY) -->`: the block is not run; a reason is required.

A `console` block is a sample session: each `$ COMMAND` line runs with `bash -euo pipefail`, and
the lines after it, up to the next `$ ` line, are its output sample, compared with what the command
printed on stdout and stderr (issue 41: a sample cannot go stale). Only what differs from run to
run is normalized ([`normalize`]): temporary paths, times, session ids and SHA-256 digests (a
sample may shorten a digest to its first hex digits and `…`).

Every `sh`, `console`, `python` and `c` block is either run or skipped with a reason: none is
silently left out."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = {"sh", "console", "python", "c"}
FIRST_PAGES = ("README.md", "docs/python.md", "docs/c-abi.md")
PAGES = FIRST_PAGES + tuple(sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")
    if str(p.relative_to(ROOT)) not in FIRST_PAGES))
DIRECTIVE = re.compile(r"<!-- readme-test: (file (?P<file>\S+)|(?P<checkout>in-checkout)|skip \((?P<why>[^)]+)\)) -->")


@dataclass
class Block:
    page: str
    line: int
    lang: str
    text: str
    directive: Optional[re.Match[str]]


def blocks() -> List[Block]:
    out: List[Block] = []
    for page in PAGES:
        out.extend(page_blocks(page))
    return out


def page_blocks(page: str) -> List[Block]:
    lines = (ROOT / page).read_text().splitlines()
    out: List[Block] = []
    i = 0
    while i < len(lines):
        m = re.fullmatch(r"```(\w*)", lines[i])
        if m is None:
            i += 1
            continue
        start = i
        j = i + 1
        while lines[j] != "```":
            j += 1
        before = lines[start - 1] if start > 0 else ""
        out.append(Block(page, start + 1, m.group(1), "\n".join(lines[start + 1:j]) + "\n",
                         DIRECTIVE.fullmatch(before)))
        i = j + 1
    return out


def normalize(text: str, work: Optional[Path] = None) -> str:
    """What differs from run to run: the scratch directory, times, 32-hex ids and SHA-256
    digests (whole, or a prefix the sample shortened with `…`)."""
    if work is not None:
        text = text.replace(str(work), "WORK")
    text = re.sub(r"/tmp/[^\s:,)]+", "TMP", text)
    text = re.sub(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "TIME", text)
    text = re.sub(r"\d{8}T\d{6}\.\d{6}Z", "TIME", text)
    text = re.sub(r"\b[0-9a-f]{64}\b|\b[0-9a-f]{4,63}…", "SHA256", text)
    text = re.sub(r"\b[0-9a-f]{32}\b", "ID", text)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def console_steps(text: str) -> List[tuple[str, str]]:
    """A console block's `$ COMMAND` lines, each with the output sample after it."""
    steps: List[tuple[str, List[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"a console block starts with a `$ ` line: {line!r}"
            steps[-1][1].append(line)
    return [(cmd, "\n".join(out)) for cmd, out in steps]


def test_console_samples_are_compared_after_normalizing_only_what_varies() -> None:
    steps = console_steps("$ assay x\nline sha256 3f5c…\n$ assay y\n")
    assert steps == [("assay x", "line sha256 3f5c…"), ("assay y", "")]
    real = "line sha256 " + "3f5c" + "0" * 60 + "\n"
    assert normalize(real) == normalize(steps[0][1])
    assert normalize("deny: exec") != normalize("deny: exec, shell*")
    assert normalize("at 2026-12-04T21:09:49.5Z in /tmp/x/y: ok") == "at TIME in TMP: ok"


def test_every_page_of_docs_is_read() -> None:
    assert "docs/policy.md" in PAGES and "docs/hosts.md" in PAGES
    assert sum(b.lang == "console" for b in blocks()) >= 1


def test_every_runnable_block_is_run_or_skipped_for_a_reason() -> None:
    seen = blocks()
    assert sum(b.lang == "sh" for b in seen) >= 8
    for b in seen:
        text = (ROOT / b.page).read_text().splitlines()[b.line - 2]
        if "readme-test" in text:
            assert b.directive is not None, f"{b.page}:{b.line - 1}: malformed directive {text!r}"


def test_the_readme_is_a_users_document_that_opens_with_the_five_steps() -> None:
    """SPEC §11: at most 350 lines; its first screen shows the five steps."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 350, len(lines)
    first_screen = "\n".join(lines[:40])
    for step in ("assay mcp pin", "policy", "assay policy check", "assay mcp wrap-config",
                 "assay capture summary"):
        assert step in first_screen, step


def _assay_on_path() -> str:
    """The directory of the installed `assay` command (the wheel's console script)."""
    found = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert found, "the wheel's `assay` console script is installed beside this interpreter"
    return str(Path(found).parent)


@pytest.mark.timeout(3600)
def test_readme_examples_run_as_written(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for name in ("examples", "tests"):
        (work / name).symlink_to(ROOT / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PATH"] = _assay_on_path() + os.pathsep + env.get("PATH", "")
    ran = 0
    for b in blocks():
        d = b.directive
        if d is not None and d.group("file"):
            (work / d.group("file")).write_text(b.text)
            if b.lang == "json":
                json.loads(b.text)
            continue
        if b.lang not in RUNNABLE:
            continue
        if d is not None and d.group("why"):
            continue
        cwd = ROOT if d is not None and d.group("checkout") else work
        where = f"{b.page}:{b.line}"
        if b.lang == "console":
            for cmd, sample in console_steps(b.text):
                r = subprocess.run(["bash", "-euo", "pipefail", "-c", cmd], cwd=cwd, env=env,
                                   capture_output=True, text=True, timeout=600,
                                   stdin=subprocess.DEVNULL)
                assert r.returncode == 0, f"{where} `{cmd}` failed:\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
                got = normalize(r.stdout + r.stderr, work)
                assert got == normalize(sample, work), f"{where} `{cmd}`: the sample is stale; the real output is:\n{r.stdout}{r.stderr}"
            ran += 1
            continue
        if b.lang == "sh":
            r = subprocess.run(["bash", "-euo", "pipefail", "-c", b.text], cwd=cwd, env=env,
                               capture_output=True, text=True, timeout=2400, stdin=subprocess.DEVNULL)
        elif b.lang == "python":
            r = subprocess.run([sys.executable, "-c", b.text], cwd=cwd, env=env, capture_output=True,
                               text=True, timeout=300, stdin=subprocess.DEVNULL)
        else:
            src = tmp_path / f"readme_{b.line}.c"
            src.write_text('#include "assay.h"\n' + b.text)
            r = subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", "-fsyntax-only",
                                f"-I{ROOT / 'include'}", str(src)], capture_output=True, text=True,
                               timeout=120)
        assert r.returncode == 0, f"{where} ({b.lang}) failed:\n{b.text}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
        ran += 1
    assert ran >= 10, ran
    # What the examples promise they leave behind (the quick start writes into a new temporary
    # directory, never into the scratch directory or the checkout).
    assert not (work / "quickstart").exists()
    assert not (ROOT / "quickstart").exists()
    assert (work / "handoff" / "manifest.json").is_file()
    assert (work / "mcp.json.assay-backup").is_file()
    assert (work / "mcp.json").read_bytes() == (ROOT / "tests/fixtures/hosts/cursor_mcp.json").read_bytes()
    assert (work / "py-capture-pkg" / "manifest.json").is_file()
    assert len(list((work / "py-captures").iterdir())) == 2
    assert any((work / "captures").iterdir())
