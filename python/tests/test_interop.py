"""Interop (SPEC §11): the official MCP Python SDK (mcp 2.3) talks to an official SDK stdio server
through wrap_entry.py, unchanged, with both handshakes: the `initialize` handshake (ClientSession,
and mcp.Client in legacy mode) and the 2026-07-28 stateless one (mcp.Client `server/discover`).
Allowed calls get the server's real results (the same as a direct session); a denied call gets
the wrapper's refusal as an isError result the SDK accepts — also for a tool with an output
schema, and with `resultType` on 2026-07-28; a multi-round-trip call (`input_required`, then the
re-issued `tools/call` with `inputResponses`) works and is logged as one decision per line; and
the capture reads `closed`."""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import ElicitResult

import assay_stop


def _wrapped(probe_dir: Path, cap: Path, policy: Path, server: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[str(probe_dir / "wrap_entry.py"), "--capture-dir", str(cap), "--policy", str(policy),
              "--", sys.executable, str(server)],
    )


def _direct(server: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(server)])


def _decisions(cap: Path) -> list[dict[str, Any]]:
    """The `tools/call` decisions of the capture (listing events, SPEC §4.1a, left out)."""
    lines = [json.loads(x) for x in (cap / "decisions.ndjson").read_text().splitlines()]
    return [x["data"] for x in lines if x["type"] == "assay.tool.decision"]


def _assert_refusal(denied: Any, result_type: str | None) -> None:
    assert denied.is_error is True
    assert "P_TOOL_DENIED" in denied.content[0].text
    # SPEC §3 item 5: the decision is in _meta; no structuredContent for the output schema.
    assert denied.structured_content is None
    decision = (denied.meta or {})["assay/decision"]
    assert decision["decision"] == "deny" and decision["reason_code"] == "P_TOOL_DENIED"
    assert decision["decision_id"].startswith("evt_decision_")
    if result_type is not None:
        assert denied.result_type == result_type


def _assert_closed(cap: Path, written: int) -> None:
    closure = assay_stop.read_capture(cap)
    assert closure.closure == "closed", closure.to_dict()
    assert closure.stop is not None
    assert closure.stop["decision_events_written"] == written and closure.stop["exit_code"] == 0
    assert "EXEC REACHED" not in (cap / "proxy-stderr.log").read_text()  # never forwarded


async def _session(params: StdioServerParameters) -> dict[str, Any]:
    out: dict[str, Any] = {}

    async def on_elicit(_ctx: Any, _params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": True})

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
            await session.initialize()
            tools = await session.list_tools()
            out["tools"] = sorted(t.name for t in tools.tools)
            out["echo"] = await session.call_tool("echo", {"text": "through the wrapper"})
            out["exec"] = await session.call_tool("exec", {"cmd": "id"})
            out["confirm"] = await session.call_tool("confirm", {})
    return out


def test_client_session_initialize_handshake_through_wrap_entry(
    tmp_path: Path, probe_dir: Path, sdk_server: Path, demo_policy: Path
) -> None:
    cap = tmp_path / "cap"
    out = asyncio.run(asyncio.wait_for(_session(_wrapped(probe_dir, cap, demo_policy, sdk_server)), 90))

    assert out["tools"] == ["confirm", "echo", "exec", "typed"]
    assert out["echo"].is_error is False
    assert out["echo"].content[0].text == "echo: through the wrapper"  # the tool's real result
    assert out["confirm"].content[0].text == "confirmed: True"  # elicitation/create mid-call
    _assert_refusal(out["exec"], None)
    _assert_closed(cap, 3)
    assert [(d["tool"], d["decision"]) for d in _decisions(cap)] == [
        ("echo", "allow"), ("exec", "deny"), ("confirm", "allow")]


async def _client(params: StdioServerParameters, mode: str) -> dict[str, Any]:
    out: dict[str, Any] = {}

    async def on_elicit(_ctx: Any, _params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": True})

    async with Client(params, mode=mode, elicitation_callback=on_elicit) as client:
        out["protocol"] = client.protocol_version
        tools = await client.list_tools()
        out["tools"] = sorted(t.name for t in tools.tools)
        out["echo"] = await client.call_tool("echo", {"text": "hi"})
        out["typed"] = await client.call_tool("typed", {"n": 7})
        out["exec"] = await client.call_tool("exec", {"cmd": "id"})
        out["confirm"] = await client.call_tool("confirm", {})
    return out


def _comparable(result: Any) -> dict[str, Any]:
    return dict(result.model_dump(by_alias=True, exclude_none=True))


@pytest.mark.parametrize(("mode", "protocol"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_mcp_client_matches_a_direct_session_in_both_handshakes(
    tmp_path: Path, probe_dir: Path, sdk_server: Path, demo_policy: Path, mode: str, protocol: str
) -> None:
    cap = tmp_path / "cap"
    direct = asyncio.run(asyncio.wait_for(_client(_direct(sdk_server), mode), 90))
    wrapped = asyncio.run(asyncio.wait_for(
        _client(_wrapped(probe_dir, cap, demo_policy, sdk_server), mode), 90))

    assert direct["protocol"] == wrapped["protocol"] == protocol
    assert wrapped["tools"] == direct["tools"] == ["confirm", "echo", "exec", "typed"]
    for name in ("echo", "typed", "confirm"):  # allowed: the same results as direct, call by call
        assert _comparable(wrapped[name]) == _comparable(direct[name]), name
    assert wrapped["typed"].structured_content == {"value": 7}
    assert wrapped["confirm"].content[0].text == "confirmed: True"
    _assert_refusal(wrapped["exec"], "complete")

    decisions = _decisions(cap)
    calls = [(d["tool"], d["decision"], d["reason_code"]) for d in decisions]
    if protocol == "2026-07-28":
        # `confirm` answered input_required, and the client re-issued the tools/call with
        # inputResponses: each tools/call line is a call, one decision each.
        assert calls == [
            ("echo", "allow", "P_POLICY_ALLOW"), ("typed", "allow", "P_POLICY_ALLOW"),
            ("exec", "deny", "P_TOOL_DENIED"),
            ("confirm", "allow", "P_POLICY_ALLOW"), ("confirm", "allow", "P_POLICY_ALLOW")]
        assert decisions[3]["tool_call_id"] != decisions[4]["tool_call_id"]
        assert decisions[3]["arguments_sha256"] == decisions[4]["arguments_sha256"]
    else:
        assert calls == [
            ("echo", "allow", "P_POLICY_ALLOW"), ("typed", "allow", "P_POLICY_ALLOW"),
            ("exec", "deny", "P_TOOL_DENIED"), ("confirm", "allow", "P_POLICY_ALLOW")]
    _assert_closed(cap, len(calls))


async def _hidden(params: StdioServerParameters, mode: str) -> dict[str, Any]:
    async with Client(params, mode=mode) as client:
        tools = await client.list_tools()
        return {
            "tools": sorted(t.name for t in tools.tools),
            "exec": await client.call_tool("exec", {"cmd": "id"}),
            "echo": await client.call_tool("echo", {"text": "still here"}),
        }


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_hidden_tools_are_not_listed_and_still_refused(
    tmp_path: Path, probe_dir: Path, sdk_server: Path, mode: str
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text('version: "1"\ndeny: ["exec"]\nhide_refused_tools: true\n')
    cap = tmp_path / "cap"
    out = asyncio.run(asyncio.wait_for(_hidden(_wrapped(probe_dir, cap, policy, sdk_server), mode), 90))

    assert out["tools"] == ["confirm", "echo", "typed"]  # exec is refused by name: hidden
    assert out["echo"].content[0].text == "echo: still here"
    _assert_refusal(out["exec"], "complete")  # a call to a hidden tool is still refused
    context = json.loads((cap / "session-context.json").read_text())
    assert context["data"]["hide_refused_tools"] is True
    # Two tools/call decisions and the listing event of the one judged tools/list answer
    # (SPEC §4.1a), which names the hidden tool.
    _assert_closed(cap, 3)
    lines = [json.loads(line) for line in (cap / "decisions.ndjson").read_text().splitlines()]
    listings = [line["data"] for line in lines if line["type"] == "assay.tool.listing"]
    assert len(listings) == 1, lines
    assert [r["name"] for r in listings[0]["removed"]] == ["exec"], listings
    assert sorted(t["name"] for t in listings[0]["shown"]) == out["tools"], listings
    assert [(d["tool"], d["decision"]) for d in _decisions(cap)] == [("exec", "deny"), ("echo", "allow")]
