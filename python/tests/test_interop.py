"""Interop (SPEC §11): the official MCP Python SDK stdio client talks to an official SDK stdio
server through wrap_entry.py, unchanged: it lists tools, gets the real result of an allowed call,
gets an isError result for a denied call, and the capture reads `closed`."""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import assay_stop


def _field(obj: Any, *names: str) -> Any:
    # mcp 2.x uses snake_case attributes (is_error), 1.x camelCase (isError).
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    raise AttributeError(names)


async def _session(params: StdioServerParameters) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            out["tools"] = sorted(t.name for t in tools.tools)
            out["echo"] = await session.call_tool("echo", {"text": "through the wrapper"})
            out["exec"] = await session.call_tool("exec", {"cmd": "id"})
    return out


def test_official_sdk_client_and_server_through_wrap_entry(
    tmp_path: Path, probe_dir: Path, sdk_server: Path, demo_policy: Path
) -> None:
    cap = tmp_path / "cap"
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(probe_dir / "wrap_entry.py"), "--capture-dir", str(cap), "--policy", str(demo_policy),
              "--", sys.executable, str(sdk_server)],
    )
    out = asyncio.run(asyncio.wait_for(_session(params), 90))

    assert out["tools"] == ["echo", "exec"]
    echo = out["echo"]
    assert _field(echo, "is_error", "isError") is False
    assert echo.content[0].text == "echo: through the wrapper"  # the tool's real result
    denied = out["exec"]
    assert _field(denied, "is_error", "isError") is True
    assert "P_TOOL_DENIED" in denied.content[0].text
    structured = _field(denied, "structured_content", "structuredContent")
    assert structured["assay"]["decision"] == "deny"

    closure = assay_stop.read_capture(cap)
    assert closure.closure == "closed", closure.to_dict()
    assert closure.stop is not None
    assert closure.stop["decision_events_written"] == 2 and closure.stop["exit_code"] == 0
    decisions = [json.loads(x)["data"] for x in (cap / "decisions.ndjson").read_text().splitlines()]
    assert [(d["tool"], d["decision"]) for d in decisions] == [("echo", "allow"), ("exec", "deny")]
    assert "EXEC REACHED" not in (cap / "proxy-stderr.log").read_text()  # never forwarded
