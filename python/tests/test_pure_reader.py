"""bench/pure_reader.py (the SPEC §11 pure-Python comparison reader) agrees with
`assay capture read` on a maximal capture and on corrupted copies of it."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

SID = "0123456789abcdef0123456789abcdef"
SOURCE = "urn+assay://host/test"
POLICY_SHA = "a" * 64
NON_CLAIMS = ["not_execution_proof", "not_authentication", "not_global_coverage", "not_durable_storage_proof"]


@pytest.fixture(scope="module")
def pure(root: Path) -> Any:
    spec = importlib.util.spec_from_file_location("pure_reader", root / "bench" / "pure_reader.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def event(eid: str, ty: str, data: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "specversion": "1.0", "id": eid, "type": ty, "source": SOURCE,
        "time": "2025-06-01T12:00:01.5Z", "datacontenttype": "application/json", "data": data,
    }


def decision(seq: int, pad: int) -> bytes:
    allow = seq % 3 != 1
    data = {
        "session_id": SID, "seq": seq,
        "tool": None if seq % 5 == 4 else f"tool_{seq % 7}",
        "tool_call_id": None if seq % 4 == 3 else str(seq),
        "decision": "allow" if allow else "deny",
        "reason_code": "P_POLICY_ALLOW" if allow else "P_TOOL_DENIED",
        "reason": 'policy says so "quoted" ' + "r" * pad,
        "matched_rule": "*" if allow else "exec",
        "enforced": True, "policy_sha256": POLICY_SHA,
        "arguments_sha256": hashlib.sha256(str(seq).encode()).hexdigest() if seq % 2 == 0 else None,
    }
    ev = event(f"evt_decision_{SID}_{seq}", "assay.tool.decision", data)
    return json.dumps(ev, separators=(",", ":")).encode() + b"\n"


def other_event(seq: int, pad: int) -> bytes:
    """A listing (seq % 4 == 1) or MCP decision (seq % 4 == 2) line of SPEC §4.1a, a tool decision
    with recorded arguments (seq % 4 == 3, `record_arguments`), else a tool decision."""
    digest = hashlib.sha256(str(seq).encode()).hexdigest()
    if seq % 4 == 1:
        ev = event(f"evt_listing_{SID}_{seq}", "assay.tool.listing", {
            "session_id": SID, "seq": seq, "request_id": str(seq),
            "shown": [{"name": "read_file", "sha256": digest}, {"name": 't"\u202e', "sha256": digest}],
            "removed": [{"name": "exec", "sha256": digest, "reason_code": "P_TOOL_DRIFT"},
                        {"name": "(instructions)", "sha256": None, "reason_code": "P_INSTRUCTIONS_DRIFT"}],
            "replaced_by_error": False, "policy_sha256": POLICY_SHA,
        })
    elif seq % 4 == 2:
        ev = event(f"evt_decision_{SID}_{seq}", "assay.mcp.decision", {
            "session_id": SID, "seq": seq, "method": "resources/read", "direction": "client_to_server",
            "target": "file:///workspace/.env", "request_id": str(seq), "decision": "deny",
            "reason_code": "P_RESOURCE_DENIED", "reason": "denied", "matched_rule": "resources.deny:x",
            "enforced": True, "policy_sha256": POLICY_SHA, "params_sha256": digest,
        })
    elif seq % 4 == 3:
        ev = json.loads(decision(seq, pad))
        ev["data"]["tool_definition_sha256"] = None
        ev["data"]["arguments"] = json.dumps({"path": "/w/\"a\"", "token": "[redacted]"}, separators=(",", ":"))
        ev["data"]["arguments_truncated"] = False
    else:
        return decision(seq, pad)
    return json.dumps(ev, separators=(",", ":")).encode() + b"\n"


def write_capture(d: Path, decisions: int = 10_000, pad: int = 255,
                  line: Callable[[int, int], bytes] = decision,
                  context_extra: Dict[str, Any] = {}) -> None:
    """A valid maximal capture (10,000 decisions, log just under 8 MiB), as the wrapper writes it."""
    d.mkdir()
    log = b"".join(line(i, pad) for i in range(decisions))
    assert len(log) <= 8 * 1024 * 1024
    protocol = {
        "schema": "assay.capture.protocol.v1", "session_id": SID, "event_source": SOURCE,
        "server_id": "srv", "created_at": "2025-06-01T12:00:00Z", "decision_log": "decisions.ndjson",
        "session_context": "session-context.json", "session_stop": "session-stop.json",
        "producer": {"name": "assay", "version": "0.1.0"},
    }
    producer = {"name": "assay", "version": "0.1.0"}
    context = event(f"evt_context_{SID}", "assay.mcp.session.context.v1", {
        "session_id": SID, "server_id": "srv", "server_pid": 4242, "started_at": "2025-06-01T12:00:00Z",
        "policy_sha256": POLICY_SHA, "policy_name": "example", "decision_log": "new",
        "session_stop_requested": True, "dry_run": False, "command_sha256": "b" * 64,
        "producer": producer, "assertion_basis": "producer_observation", "non_claims": NON_CLAIMS,
        **context_extra,
    })
    stop = event(f"evt_stop_{SID}", "assay.mcp.session.stop.v1", {
        "session_id": SID, "server_id": "srv", "server_pid": 4242,
        "session_context_id": f"evt_context_{SID}", "session_end": "client_closed",
        "termination": "exited", "exit_code": 0, "signal": None, "core_dumped": None,
        "assay_kill_requested": False, "decision_log": "complete",
        "decision_events_written": decisions, "decision_events_dropped": 0,
        "decision_prefix_sha256": hashlib.sha256(log).hexdigest(),
        "assertion_basis": "producer_observation", "non_claims": NON_CLAIMS,
    })
    (d / "protocol.json").write_text(json.dumps(protocol) + "\n")
    (d / "session-context.json").write_text(json.dumps(context, indent=2) + "\n")
    (d / "session-stop.json").write_text(json.dumps(stop) + "\n")
    (d / "decisions.ndjson").write_bytes(log)


def edit(name: str, old: bytes, new: bytes, count: int = 1) -> Callable[[Path], None]:
    def go(d: Path) -> None:
        p = d / name
        data = p.read_bytes()
        assert old in data, (name, old)
        p.write_bytes(data.replace(old, new, count))
    return go


def append(name: str, extra: bytes) -> Callable[[Path], None]:
    def go(d: Path) -> None:
        with open(d / name, "ab") as f:
            f.write(extra)
    return go


def symlink_stop(d: Path) -> None:
    os.rename(d / "session-stop.json", d / "real-stop.json")
    os.symlink("real-stop.json", d / "session-stop.json")


def huge_sparse_log(d: Path) -> None:
    with open(d / "decisions.ndjson", "r+b") as f:
        f.truncate(1 << 30)


CORRUPTIONS: Dict[str, Callable[[Path], None]] = {
    "flipped_log_byte": edit("decisions.ndjson", b"tool_3", b"tool_4"),
    "seq_out_of_order": edit("decisions.ndjson", b'"seq":7,', b'"seq":8,'),
    "partial_tail": append("decisions.ndjson", b'{"specversion"'),
    "duplicate_key_stop": edit("session-stop.json", b'"signal": null', b'"signal": null, "signal": 1'),
    "nan_in_context": edit("session-context.json", b'"server_pid": 4242', b'"server_pid": NaN'),
    "truncated_stop": lambda d: (d / "session-stop.json").write_bytes((d / "session-stop.json").read_bytes()[:100]),
    "missing_stop": lambda d: (d / "session-stop.json").unlink(),
    "symlinked_stop": symlink_stop,
    "oversized_companion": append("session-context.json", b" " * (64 * 1024)),
    "log_over_bound": append("decisions.ndjson", b" " * (8 * 1024 * 1024)),
    "sparse_1gib_log": huge_sparse_log,
    "protocol_server_id": edit("protocol.json", b'"server_id": "srv"', b'"server_id": "other"'),
    "wrong_session_in_line": edit("decisions.ndjson", f'"session_id":"{SID}","seq":5,'.encode(),
                                  f'"session_id":"{"f" * 32}","seq":5,'.encode()),
    "deep_line": edit("decisions.ndjson", b'"seq":9,', b'"x":' + b"[" * 40 + b"]" * 40 + b',"seq":9,'),
    "incomplete_with_loss": edit("session-stop.json", b'"decision_log": "complete", "decision_events_written": 10000, "decision_events_dropped": 0',
                                 b'"decision_log": "incomplete", "decision_events_written": 10000, "decision_events_dropped": 2'),
}


@pytest.fixture(scope="module")
def maximal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pure") / "max"
    write_capture(d)
    return d


def rust_verdict(assay_bin: Path, d: Path) -> Dict[str, Any]:
    out = subprocess.run([str(assay_bin), "capture", "read", str(d)], capture_output=True, timeout=60)
    assert out.returncode in (0, 1, 3), out.stderr
    return json.loads(out.stdout)


def codes(v: Dict[str, Any]) -> List[str]:
    return sorted({r["code"] for r in v["reasons"]})


def test_maximal_capture_closed_by_both(maximal: Path, assay_bin: Path, pure: Any) -> None:
    size = (maximal / "decisions.ndjson").stat().st_size
    assert 7 * 1024 * 1024 < size <= 8 * 1024 * 1024
    rust = rust_verdict(assay_bin, maximal)
    py = pure.read_capture(str(maximal))
    assert rust["closure"] == py["closure"] == "closed", (rust["reasons"], py["reasons"])
    assert rust["session_id"] == py["session_id"] == SID
    assert rust["files"] == py["files"]


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corrupted_copies_agree(name: str, maximal: Path, tmp_path: Path, assay_bin: Path, pure: Any) -> None:
    d = tmp_path / "c"
    shutil.copytree(maximal, d)
    CORRUPTIONS[name](d)
    rust = rust_verdict(assay_bin, d)
    py = pure.read_capture(str(d))
    assert rust["closure"] == py["closure"], (rust["reasons"], py["reasons"])
    assert rust["closure"] in ("unknown", "incomplete")
    assert codes(rust) == codes(py), (rust["reasons"], py["reasons"])
    assert sorted(rust["files"]) == sorted(py["files"])


PROXY_ERROR_STOP = b'"session_end": "client_closed"'


@pytest.mark.parametrize("dropped,want", [(0, ["proxy_error"]), (2, ["decision_loss", "proxy_error"])])
def test_proxy_error_names_its_ending_and_loss_only_when_events_were_dropped(
        dropped: int, want: List[str], maximal: Path, tmp_path: Path, assay_bin: Path, pure: Any) -> None:
    """A proxy_error session whose events were all written is `incomplete` with reason
    `proxy_error` and no `decision_loss` (issue 41); both readers say so."""
    d = tmp_path / "c"
    shutil.copytree(maximal, d)
    edit("session-stop.json", PROXY_ERROR_STOP, b'"session_end": "proxy_error"')(d)
    edit("session-stop.json", b'"decision_log": "complete", "decision_events_written": 10000, "decision_events_dropped": 0',
         f'"decision_log": "incomplete", "decision_events_written": 10000, "decision_events_dropped": {dropped}'.encode())(d)
    rust = rust_verdict(assay_bin, d)
    py = pure.read_capture(str(d))
    assert rust["closure"] == py["closure"] == "incomplete", (rust["reasons"], py["reasons"])
    assert codes(rust) == codes(py) == want, (rust["reasons"], py["reasons"])


def test_policy_codes_are_the_one_homes(root: Path, pure: Any) -> None:
    """The pure reader's copy of the policy reason codes is src/reason_code.rs's list."""
    import re
    text = (root / "src" / "reason_code.rs").read_text()
    listed = set(re.findall(r"^\s+(P_[A-Z_]+),$", text, re.M))
    assert len(listed) >= 19
    assert pure.POLICY_CODES == listed


def result_event(seq: int, pad: int) -> bytes:
    """An `assay.mcp.result` line (SPEC §5.3) answering the decision of line 0."""
    data = {
        "session_id": SID, "seq": seq, "method": "tools/call", "request_id": "r" * pad or 0,
        "decision_id": f"evt_decision_{SID}_0", "sha256": "b" * 64, "bytes": 10, "is_error": False,
        "parts": {"text": 1}, "findings": [{"kind": "secret", "rule": "jwt", "path": "/result/content/0/text"}],
        "findings_total": 1, "action": "forwarded", "reason_code": "P_POLICY_ALLOW", "enforced": True,
        "policy_sha256": POLICY_SHA,
    }
    ev = event(f"evt_result_{SID}_{seq}", "assay.mcp.result", data)
    return json.dumps(ev, separators=(",", ":")).encode() + b"\n"


RESULT_FORGERIES: Dict[str, Callable[[bytes], bytes]] = {
    "refused_with_allow": lambda b: b.replace(b'"action":"forwarded"', b'"action":"refused"'),
    "redacted_with_refusal": lambda b: b.replace(b'"action":"forwarded","reason_code":"P_POLICY_ALLOW"',
                                                 b'"action":"redacted","reason_code":"P_RESULT_SECRET"'),
    "forwarded_enforced_refusal": lambda b: b.replace(b'"P_POLICY_ALLOW"', b'"P_RESULT_SECRET"'),
    "tool_code": lambda b: b.replace(b'"P_POLICY_ALLOW"', b'"P_TOOL_DENIED"'),
    "unknown_method": lambda b: b.replace(b'"tools/call"', b'"tools/list"'),
    "no_such_decision": lambda b: b.replace(f"evt_decision_{SID}_0".encode(), f"evt_decision_{SID}_7".encode()),
    "decision_is_itself": lambda b: b.replace(f"evt_decision_{SID}_0".encode(), f"evt_decision_{SID}_1".encode()),
    "short_digest": lambda b: b.replace(b'"b' + b"b" * 63 + b'"', b'"' + b"b" * 63 + b'"'),
    "request_id_null": lambda b: b.replace(b'"request_id":0', b'"request_id":null'),
    "request_id_bool": lambda b: b.replace(b'"request_id":0', b'"request_id":true'),
    "finding_kind": lambda b: b.replace(b'"kind":"secret"', b'"kind":"gossip"'),
    "findings_over_total": lambda b: b.replace(b'"findings_total":1', b'"findings_total":0'),
    "findings_missing": lambda b: b.replace(b'"findings_total":1', b'"findings_total":2').replace(
        b'[{"kind":"secret","rule":"jwt","path":"/result/content/0/text"}]', b'[]'),
    "escaped_duplicate_action": lambda b: b.replace(b'"action":"forwarded"', b'"action":"forwarded","\\u0061ction":"refused"'),
    "id_prefix": lambda b: b.replace(f"evt_result_{SID}_1".encode(), f"evt_decision_{SID}_1".encode()),
    "parts_negative": lambda b: b.replace(b'"text":1', b'"text":-1'),
}


def test_result_events_both_readers_close_and_refuse_forgeries(tmp_path: Path, assay_bin: Path, pure: Any) -> None:
    """SPEC §5.3: a well-formed result line is read by both readers; each forgery is refused by both."""
    def line(forge: Callable[[bytes], bytes]) -> Callable[[int, int], bytes]:
        return lambda seq, pad: forge(result_event(seq, 0)) if seq == 1 else decision(seq, pad)
    d = tmp_path / "ok"
    write_capture(d, decisions=3, pad=0, line=line(lambda b: b))
    rust, py = rust_verdict(assay_bin, d), pure.read_capture(str(d))
    assert rust["closure"] == py["closure"] == "closed", (rust["reasons"], py["reasons"])
    for name, forge in RESULT_FORGERIES.items():
        d = tmp_path / name
        write_capture(d, decisions=3, pad=0, line=line(forge))
        assert forge(result_event(1, 0)) != result_event(1, 0), name
        rust, py = rust_verdict(assay_bin, d), pure.read_capture(str(d))
        assert rust["closure"] == py["closure"] == "unknown", (name, rust["reasons"], py["reasons"])
        assert codes(rust) == codes(py), (name, rust["reasons"], py["reasons"])


def _carrier_line(kind: str, code: str) -> Callable[[int, int], bytes]:
    """Line 1 of a small log carries `code` in an event of `kind` (`tool`, `mcp`, or a listing's
    method); the other lines are plain tool decisions."""
    def line(seq: int, pad: int) -> bytes:
        if seq != 1:
            return decision(seq, pad)
        verdict = "allow" if code == "P_POLICY_ALLOW" else "deny"
        if kind == "tool":
            ev = json.loads(decision(seq, pad))
            ev["data"].update({"decision": verdict, "reason_code": code})
        elif kind == "mcp":
            ev = json.loads(other_event(2, pad))
            ev["id"] = f"evt_decision_{SID}_{seq}"
            ev["data"].update({"seq": seq, "decision": verdict, "reason_code": code})
        elif kind == "result":
            ev = json.loads(result_event(seq, pad))
            refused = code != "P_POLICY_ALLOW"
            ev["data"].update({"reason_code": code, "action": "refused" if refused else "forwarded"})
        else:
            ev = json.loads(other_event(1, pad))
            ev["data"]["method"] = kind
            ev["data"]["removed"] = [{"name": "x", "sha256": None, "reason_code": code}]
        return json.dumps(ev, separators=(",", ":")).encode() + b"\n"
    return line


def test_reason_codes_per_event_type_agree_with_the_rust_reader(tmp_path: Path, assay_bin: Path, pure: Any) -> None:
    """SPEC §4.1a: which codes each event type (and each listing's list) carries. The pure
    reader's table is `Carrier`'s in src/reason_code.rs: every code in every carrier is read by
    both readers, and both close exactly the captures the table allows."""
    kinds = {"tool": pure.TOOL_DECISION_CODES, "mcp": pure.MCP_DECISION_CODES, "result": pure.RESULT_CODES}
    kinds.update(pure.LISTING_REMOVAL_CODES)
    n = 0
    for kind, carried in kinds.items():
        for code in sorted(pure.POLICY_CODES):
            if kind in pure.LISTING_REMOVAL_CODES and code == "P_POLICY_ALLOW":
                continue
            d = tmp_path / f"c{n}"
            n += 1
            write_capture(d, decisions=3, pad=0, line=_carrier_line(kind, code))
            rust = rust_verdict(assay_bin, d)
            py = pure.read_capture(str(d))
            want = "closed" if code in carried else "unknown"
            assert rust["closure"] == py["closure"] == want, (kind, code, rust["reasons"], py["reasons"])
    # Every code has some carrier.
    assert set().union(*kinds.values()) | {"P_POLICY_ALLOW"} == pure.POLICY_CODES


OTHER_EVENT_CORRUPTIONS: Dict[str, Callable[[Path], None]] = {
    "listing_shown_digest": edit("decisions.ndjson", b'"shown":[{"name":"read_file","sha256":"',
                                 b'"shown":[{"name":"read_file","sha256":"X'),
    "listing_removed_allow": edit("decisions.ndjson", b'"P_TOOL_DRIFT"', b'"P_POLICY_ALLOW"'),
    "listing_unknown_code": edit("decisions.ndjson", b'"P_INSTRUCTIONS_DRIFT"', b'"P_NOPE"'),
    "listing_request_id_number": edit("decisions.ndjson", b'"request_id":"5"', b'"request_id":5'),
    "listing_id_prefix": edit("decisions.ndjson", f"evt_listing_{SID}_1".encode(), f"evt_decision_{SID}_1".encode()),
    "mcp_direction": edit("decisions.ndjson", b'"client_to_server"', b'"upward"'),
    "mcp_allow_with_denial": edit("decisions.ndjson", b'"decision":"deny","reason_code":"P_RESOURCE_DENIED"',
                                  b'"decision":"allow","reason_code":"P_RESOURCE_DENIED"'),
    "mcp_duplicate_escaped_key": edit("decisions.ndjson", b'"direction":"client_to_server"',
                                      b'"direction":"client_to_server","\\u0064irection":"x"'),
    "mcp_direction_number": edit("decisions.ndjson", b'"direction":"client_to_server"', b'"direction":1'),
    "arguments_object": edit("decisions.ndjson", b'"arguments":"', b'"arguments":{"a":1},"x":"'),
    "arguments_alone": edit("decisions.ndjson", b',"arguments_truncated":false', b''),
    "arguments_truncated_null": edit("decisions.ndjson", b'"arguments_truncated":false', b'"arguments_truncated":null'),
    "context_governed_string": edit("session-context.json", b'"governed": [', b'"governed": "x", "was": ['),
    "context_governed_number": edit("session-context.json", b'"resources"', b'7'),
    "context_record_arguments_string": edit("session-context.json", b'"record_arguments": true',
                                            b'"record_arguments": "true"'),
    # Reason codes per event type (SPEC §4.1a: `Carrier` in src/reason_code.rs).
    "listing_method_unknown": edit("decisions.ndjson", b'"request_id":"5"', b'"method":"tools/call","request_id":"5"'),
    "listing_method_number": edit("decisions.ndjson", b'"request_id":"5"', b'"method":5,"request_id":"5"'),
    "listing_method_null": edit("decisions.ndjson", b'"request_id":"5"', b'"method":null,"request_id":"5"'),
    "listing_method_wrong_list": edit("decisions.ndjson", b'"request_id":"5"', b'"method":"prompts/list","request_id":"5"'),
    "mcp_tool_only_code": edit("decisions.ndjson", b'"decision":"deny","reason_code":"P_RESOURCE_DENIED"',
                               b'"decision":"deny","reason_code":"P_ARG_SCHEMA"'),
    "tool_decision_instructions_code": edit("decisions.ndjson", b'"decision":"deny","reason_code":"P_TOOL_DENIED"',
                                            b'"decision":"deny","reason_code":"P_INSTRUCTIONS_DRIFT"'),
    "mcp_not_enforced": edit("decisions.ndjson", b'"enforced":true,"policy_sha256":"' + POLICY_SHA.encode() + b'","params',
                             b'"enforced":false,"policy_sha256":"' + POLICY_SHA.encode() + b'","params'),
}


@pytest.mark.parametrize("name", [""] + sorted(OTHER_EVENT_CORRUPTIONS))
def test_logs_with_other_events_agree(name: str, tmp_path: Path, assay_bin: Path, pure: Any) -> None:
    """SPEC §4.1a, §4.2: a log with listing, MCP-decision and recorded-argument lines and a context
    with `governed` and `record_arguments` is closed by both readers, and each corruption of one
    gets the same verdict and codes from both."""
    d = tmp_path / "c"
    write_capture(d, decisions=12, pad=0, line=other_event,
                  context_extra={"governed": ["resources", "prompts"], "record_arguments": True})
    if name:
        OTHER_EVENT_CORRUPTIONS[name](d)
    rust = rust_verdict(assay_bin, d)
    py = pure.read_capture(str(d))
    assert rust["closure"] == py["closure"] == ("unknown" if name else "closed"), (rust["reasons"], py["reasons"])
    assert codes(rust) == codes(py), (rust["reasons"], py["reasons"])

