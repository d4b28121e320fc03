"""Tool pinning from Python (SPEC §5.1): ``assay_stop.list_tools`` lists a live server as
``assay mcp pin`` does — the same digests as the pins file the CLI writes and as an independent
RFC 8785 implementation (``rfc8785``) — and fails closed on servers it cannot list."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import rfc8785

import assay_stop

ROOT = Path(__file__).resolve().parents[2]
DRIFT = ROOT / "tests" / "interop" / "drift_server.mjs"
HOSTILE = ROOT / "tests" / "fixtures" / "hostile_list_server.py"


def test_list_tools_matches_the_cli_pins_and_rfc8785(tmp_path: Path, assay_bin: Path) -> None:
    listing = assay_stop.list_tools(["node", str(DRIFT)])
    assert listing.protocol_version in ("2025-06-18", "2025-11-25", "2026-07-28")
    assert listing.server_info is not None and listing.server_info["name"] == "assay-drift-ts"
    names = [t.name for t in listing.tools]
    assert names == ["read_note", "add", "rug_pull"]
    for tool in listing.tools:
        assert tool.definition["name"] == tool.name
        assert tool.sha256 == hashlib.sha256(rfc8785.dumps(tool.definition)).hexdigest()
    pins = tmp_path / "pins.json"
    subprocess.run([str(assay_bin), "mcp", "pin", "--out", str(pins), "--", "node", str(DRIFT)],
                   check=True, capture_output=True)
    pinned = json.loads(pins.read_text())["tools"]
    assert {t.name: t.sha256 for t in listing.tools} == {k: v["sha256"] for k, v in pinned.items()}
    as_dict = listing.to_dict()
    assert [t["name"] for t in as_dict["tools"]] == names


def test_list_tools_fails_closed(tmp_path: Path) -> None:
    with pytest.raises(assay_stop.WrapError, match="cannot list"):
        assay_stop.list_tools([sys.executable, str(HOSTILE), "duplicate_tools_key"])
    with pytest.raises(assay_stop.WrapError, match="within"):
        assay_stop.list_tools(["sleep", "30"], timeout=0.5)
    with pytest.raises(assay_stop.WrapError):
        assay_stop.list_tools([str(tmp_path / "missing-server")])
    with pytest.raises(ValueError):
        assay_stop.list_tools([])
    with pytest.raises(TypeError):
        assay_stop.list_tools("node server.js")  # type: ignore[arg-type]
