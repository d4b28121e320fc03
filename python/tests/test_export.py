"""`assay capture export` read by the tools it is for (SPEC §10, docs/export.md): the README's
DuckDB query run as written with the `duckdb` package over rows exported from real sessions, and
every OTLP/JSON line parsed with the official `opentelemetry-proto` package, its attribute names
checked against the `opentelemetry-semantic-conventions` package. The packages are pinned in
python/requirements-test.txt; a missing one fails under CI=true and skips otherwise."""
from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List

import pytest

from conftest import INIT, call

ROOT = Path(__file__).resolve().parents[2]


def need(module: str) -> ModuleType:
    """The module, or a skip (a failure under CI=true, where every test tool is installed)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"{module} is not installed (pip install -r python/requirements-test.txt): {e}")


# What each server's agents did, one session per label: the tools called and the policy's
# answers (examples/demo/policy.yaml: exec denied, read_file confined to /workspace).
SESSIONS: Dict[str, List[str]] = {
    "files": [
        call(2, "read_file", '{"path":"/workspace/notes.txt"}'),
        call(3, "exec", '{"cmd":"id"}'),
        call(4, "read_file", '{"path":"/etc/passwd"}'),
        call(5, "echo", '{"text":"hi"}'),
        call(6, "read_file", '{"path":"/workspace/todo.txt"}'),
    ],
    "web": [
        call(2, "echo", '{"text":"a"}'),
        call(3, "shell_run", "{}"),
    ],
}


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory, assay_bin: Path, demo_server: Path,
             demo_policy: Path) -> Path:
    root = tmp_path_factory.mktemp("export") / "captures"
    for label, calls in SESSIONS.items():
        proc = subprocess.run(
            [str(assay_bin), "mcp", "wrap", "--policy", str(demo_policy), "--event-source",
             "assay://pytest/export", "--label", label, "--capture-root", str(root), "--",
             "python3", str(demo_server)],
            input="\n".join([INIT, *calls]) + "\n", capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    return root


def export(assay_bin: Path, fmt: str, root: Path) -> str:
    proc = subprocess.run([str(assay_bin), "capture", "export", "--format", fmt, str(root)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def readme_query() -> str:
    """The SQL block of README.md that follows `<!-- export-test: duckdb -->`."""
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- export-test: duckdb -->\n```sql\n(.*?)```", text, re.S)
    assert m, "README.md shows the DuckDB query after <!-- export-test: duckdb -->"
    return m.group(1)


def test_the_readme_duckdb_query_answers_which_tools_each_server_used(
        captures: Path, assay_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    duckdb = need("duckdb")
    work = tmp_path / "work"
    work.mkdir()
    (work / "decisions.ndjson").write_text(export(assay_bin, "ndjson", captures))
    monkeypatch.chdir(work)
    rows = duckdb.connect().execute(readme_query()).fetchall()
    # Allowed calls only: exec and shell_run were denied, read_file outside /workspace too.
    assert rows == [("files", ["echo", "read_file"], 3), ("web", ["echo"], 1)]


def test_every_row_has_the_documented_columns(captures: Path, assay_bin: Path) -> None:
    lines = export(assay_bin, "ndjson", captures).splitlines()
    assert len(lines) == 7
    doc = (ROOT / "docs" / "export.md").read_text()
    table = re.search(r"<!-- columns -->\n(.*?)\n\n", doc, re.S)
    assert table, "docs/export.md lists the columns after <!-- columns -->"
    documented = re.findall(r"^\| `([a-z_0-9]+)` \|", table.group(1), re.M)
    for line in lines:
        row = json.loads(line)
        assert list(row) == documented
        assert all(not isinstance(v, (dict, list)) for v in row.values())


def semconv_names() -> Dict[str, Any]:
    mcp = need("opentelemetry.semconv._incubating.attributes.mcp_attributes")
    gen_ai = need("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
    jsonrpc = need("opentelemetry.semconv._incubating.attributes.jsonrpc_attributes")
    error = need("opentelemetry.semconv.attributes.error_attributes")
    network = need("opentelemetry.semconv.attributes.network_attributes")
    service = need("opentelemetry.semconv.attributes.service_attributes")
    return {
        "span": {mcp.MCP_METHOD_NAME, mcp.MCP_SESSION_ID, mcp.MCP_RESOURCE_URI,
                 jsonrpc.JSONRPC_REQUEST_ID, gen_ai.GEN_AI_TOOL_NAME, gen_ai.GEN_AI_PROMPT_NAME,
                 gen_ai.GEN_AI_OPERATION_NAME, error.ERROR_TYPE, network.NETWORK_TRANSPORT},
        "resource": {service.SERVICE_NAME, service.SERVICE_VERSION},
        "mcp": mcp, "gen_ai": gen_ai, "jsonrpc": jsonrpc, "error": error, "network": network,
        "service": service,
    }


def test_every_otlp_line_parses_as_an_export_request_with_semantic_convention_names(
        captures: Path, assay_bin: Path) -> None:
    json_format = need("google.protobuf.json_format")
    trace_service = need("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    trace_pb2 = need("opentelemetry.proto.trace.v1.trace_pb2")
    names = semconv_names()
    mcp, gen_ai, jsonrpc, error, network = (
        names[k] for k in ("mcp", "gen_ai", "jsonrpc", "error", "network"))
    text = export(assay_bin, "otlp-json", captures)
    lines = text.splitlines()
    assert len(lines) == len(SESSIONS)
    calls = 0
    for line in lines:
        # Every field known to the schema (ignore_unknown_fields is off).
        req = json_format.Parse(line, trace_service.ExportTraceServiceRequest())
        raw = json.loads(line)
        (rs,) = req.resource_spans
        resource = {a.key: a.value.string_value for a in rs.resource.attributes}
        assert resource[names["service"].SERVICE_NAME] == "assay"
        assert set(resource) - names["resource"] <= {
            "assay.server_id", "assay.capture.id", "assay.capture.verdict"}
        assert resource["assay.capture.verdict"] == "closed"
        (ss,) = rs.scope_spans
        session, *events = ss.spans
        assert session.name == "assay.session"
        assert session.kind == trace_pb2.Span.SPAN_KIND_INTERNAL
        assert session.end_time_unix_nano >= session.start_time_unix_nano > 0
        sid = {a.key: a.value.string_value for a in session.attributes}[mcp.MCP_SESSION_ID]
        assert re.fullmatch("[0-9a-f]{32}", sid)
        # OTLP/JSON writes ids as hex (json_format reads bytes fields as base64, so the ids are
        # checked in the JSON text, as the OTLP JSON mapping defines them).
        raw_spans = raw["resourceSpans"][0]["scopeSpans"][0]["spans"]
        for s in raw_spans:
            assert re.fullmatch("[0-9a-f]{32}", s["traceId"]) and re.fullmatch("[0-9a-f]{16}", s["spanId"])
            assert s["traceId"] == raw_spans[0]["traceId"]
        assert all(s["parentSpanId"] == raw_spans[0]["spanId"] for s in raw_spans[1:])
        for span in events:
            calls += 1
            attrs = {a.key: a.value for a in span.attributes}
            unknown = {k for k in attrs if not k.startswith("assay.")} - names["span"]
            assert not unknown, f"not semantic-convention names: {unknown}"
            assert span.kind == trace_pb2.Span.SPAN_KIND_SERVER
            assert attrs[mcp.MCP_METHOD_NAME].string_value == "tools/call"
            assert attrs[mcp.MCP_SESSION_ID].string_value == sid
            tool = attrs[gen_ai.GEN_AI_TOOL_NAME].string_value
            assert span.name == f"tools/call {tool}"
            assert attrs[gen_ai.GEN_AI_OPERATION_NAME].string_value == \
                gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
            assert attrs[jsonrpc.JSONRPC_REQUEST_ID].string_value.isdigit()
            assert attrs[network.NETWORK_TRANSPORT].string_value == \
                network.NetworkTransportValues.PIPE.value
            denied = attrs["assay.decision"].string_value == "deny"
            assert (error.ERROR_TYPE in attrs) == denied
            if denied:
                assert attrs[error.ERROR_TYPE].string_value == attrs["assay.reason_code"].string_value
                assert span.status.code == trace_pb2.Status.STATUS_CODE_ERROR
            assert attrs["assay.seq"].int_value >= 0
            assert span.start_time_unix_nano > session.start_time_unix_nano
    assert calls == sum(len(c) for c in SESSIONS.values())
