"""SPEC §5.3 `results` through the official MCP Python SDK client (mcp 2.3): the `assay` binary
wraps tests/fixtures/results_server.py under a policy that redacts secrets, strips terminal, bidi
and tag characters, and enforces output schemas. The SDK reads the rewritten answers as valid
results, gets a schema-violating answer as the wrapper's isError refusal (no client-side
validation error), and every answer has its `assay.mcp.result` event in a `closed` capture."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SECRET = "AKIAIOSFODNN7EXAMPLE"


async def _session(params: StdioServerParameters) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            out["say"] = await session.call_tool(
                "say", {"text": f"\x1b[31mkey\x1b[0m {SECRET} \u202etxt\U000e0041", "parts": 2})
            out["bad"] = await session.call_tool("measure", {"n": "many"})
            out["good"] = await session.call_tool("measure", {"n": 3})
    return out


def test_the_python_sdk_reads_judged_answers(tmp_path: Path, root: Path, assay_bin: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text('version: "1"\nallow: ["*"]\n'
                      "results: {secrets: redact, strip: [terminal, bidi, invisible], output_schema: enforce}\n")
    cap = tmp_path / "cap"
    params = StdioServerParameters(
        command=str(assay_bin),
        args=["mcp", "wrap", "--policy", str(policy), "--event-source", "assay://test/results",
              "--capture-dir", str(cap), "--", sys.executable,
              str(root / "tests" / "fixtures" / "results_server.py")],
    )
    out = asyncio.run(_session(params))
    texts = [c.text for c in out["say"].content]
    assert texts == ["key [redacted:aws-access-key-id] txt"] * 2
    bad = out["bad"]
    assert bad.is_error is True and bad.structured_content is None
    assert bad.meta["assay/decision"]["reason_code"] == "P_RESULT_SCHEMA"
    assert out["good"].structured_content == {"n": 3}
    verdict = json.loads(subprocess.run([str(assay_bin), "capture", "read", str(cap)],
                                        capture_output=True, check=False).stdout)
    assert verdict["closure"] == "closed", verdict["reasons"]
    events = [json.loads(x) for x in (cap / "decisions.ndjson").read_text().splitlines()]
    results = [e["data"] for e in events if e["type"] == "assay.mcp.result"]
    assert [r["action"] for r in results] == ["redacted", "refused", "forwarded"]
    assert SECRET not in (cap / "decisions.ndjson").read_text()
