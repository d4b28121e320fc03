"""assay_stop.wrap_session: every keyword, descriptor and file-object inputs, the result object,
and every exception path (SPEC §9)."""
from __future__ import annotations

import errno
import io
import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import assay_stop
from conftest import INIT, SOURCE, Client, SessionThread, call

ECHO = call(2, "echo", '{"text":"hello"}')
EXEC = call(3, "exec", '{"cmd":"ls"}')


def by_id(lines: list[Any]) -> dict[Any, Any]:
    return {m.get("id"): m for m in lines}


def test_minimal_session_with_raw_descriptors(client: Client, demo_server: Path, demo_policy: Path) -> None:
    client.send(INIT, ECHO, EXEC)
    client.close_input()
    outcome = assay_stop.wrap_session(
        [sys.executable, str(demo_server)], policy=str(demo_policy),
        stdin=client.stdin, stdout=client.stdout,
    )
    responses = by_id(client.finish())
    assert responses[2]["result"]["content"][0]["text"] == "hello"
    assert responses[3]["result"]["isError"] is True
    assert responses[3]["result"]["_meta"]["assay/decision"]["reason_code"] == "P_TOOL_DENIED"

    assert isinstance(outcome, assay_stop.WrapOutcome)
    assert outcome.exit_code == 0 and outcome.child_exit_code == 0
    assert outcome.termination == "exited" and outcome.session_end == "client_closed"
    assert outcome.decision_log == "absent" and outcome.decision_events_written is None
    assert outcome.stop_written is False and outcome.discovery_only is False
    assert outcome.evidence_errors == [] and outcome.proxy_error is None
    assert outcome.server_id == "default-mcp-server" and outcome.server_pid > 0
    assert len(outcome.session_id) == 32
    assert outcome.signal is None and outcome.core_dumped is None
    assert outcome.assay_kill_requested is False
    assert outcome.assertion_basis == "producer_observation"
    assert "not_execution_proof" in outcome.non_claims
    assert outcome.stop["exit_code"] == 0 and outcome.stop["session_id"] == outcome.session_id
    d = outcome.to_dict()
    assert d["exit_code"] == 0 and d["termination"] == "exited" and d["stop"] == outcome.stop
    assert set(d["paths"]) == {"decision_log", "session_context", "session_stop", "coverage", "protocol", "capture_dir",
                                  "no_session"}
    json.dumps(d)  # plain data only
    assert "WrapOutcome(" in repr(outcome)
    with pytest.raises(AttributeError):
        outcome.exit_code = 5  # type: ignore[misc]


def test_descriptors_are_duplicated_not_closed(client: Client, demo_server: Path, demo_policy: Path) -> None:
    client.send(INIT)
    client.close_input()
    assay_stop.wrap_session([sys.executable, str(demo_server)], policy=demo_policy,
                            stdin=client.stdin, stdout=client.stdout)
    # The caller's descriptors are still open and still the caller's.
    os.fstat(client.stdin)
    os.fstat(client.stdout)
    client.finish()


def test_file_object_inputs(client: Client, demo_server: Path, demo_policy: Path) -> None:
    class FilenoOnly:
        def __init__(self, fd: int) -> None:
            self.fd = fd

        def fileno(self) -> int:
            return self.fd

    client.send(INIT, ECHO)
    client.close_input()
    with open(client.stdin, "rb", closefd=False) as fin:
        outcome = assay_stop.wrap_session(
            [sys.executable, demo_server], policy=demo_policy,
            stdin=fin, stdout=FilenoOnly(client.stdout),
        )
    assert outcome.exit_code == 0
    assert by_id(client.finish())[2]["result"]["content"][0]["text"] == "hello"


def test_every_evidence_keyword(tmp_path: Path, client: Client, demo_server: Path, demo_policy: Path) -> None:
    log = tmp_path / "decisions.ndjson"
    ctx = tmp_path / "context.json"
    stop = tmp_path / "stop.json"
    cov = tmp_path / "coverage.json"
    err = tmp_path / "stderr.log"
    client.send(INIT, ECHO, EXEC)
    client.close_input()
    outcome = assay_stop.wrap_session(
        [sys.executable, str(demo_server)],
        policy=demo_policy,
        event_source=SOURCE,
        label="py-label",
        decision_log=log,
        decision_log_new=True,
        session_context_out=ctx,
        session_stop_out=stop,
        coverage_out=cov,
        capture_dir=None,
        dry_run=False,
        drain_timeout=10,
        max_line_bytes=1 << 20,
        stdin=client.stdin,
        stdout=client.stdout,
        stderr=err,
    )
    client.finish()
    assert outcome.exit_code == 0 and outcome.stop_written
    assert outcome.server_id == "py-label"
    assert outcome.decision_log == "complete" and outcome.decision_events_written == 2
    assert outcome.decision_events_dropped == 0
    assert outcome.session_context_id == f"evt_context_{outcome.session_id}"
    assert outcome.paths["decision_log"] is not None and Path(outcome.paths["decision_log"]).name == log.name
    assert outcome.paths["session_stop"] is not None and Path(outcome.paths["session_stop"]).name == stop.name
    for p in (log, ctx, stop, cov):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    decisions = [json.loads(x) for x in log.read_text().splitlines()]
    assert [d["data"]["decision"] for d in decisions] == ["allow", "deny"]
    assert all(d["source"] == SOURCE for d in decisions)
    stop_event = json.loads(stop.read_text())
    assert stop_event["data"] == outcome.stop
    assert json.loads(ctx.read_text())["data"]["server_id"] == "py-label"
    coverage = json.loads(cov.read_text())
    assert coverage["schema"] == "assay.coverage.v1"
    assert coverage["calls"]["exec"]["deny"] == 1
    assert err.exists()  # the child's stderr sink


def test_decision_log_append_mode(tmp_path: Path, client: Client, demo_server: Path, demo_policy: Path) -> None:
    log = tmp_path / "history.ndjson"
    log.write_text('{"earlier":"line"}\n')
    client.send(INIT, ECHO)
    client.close_input()
    outcome = assay_stop.wrap_session([sys.executable, str(demo_server)], policy=demo_policy,
                                      event_source=SOURCE, decision_log=str(log),
                                      stdin=client.stdin, stdout=client.stdout)
    client.finish()
    lines = log.read_text().splitlines()
    assert lines[0] == '{"earlier":"line"}' and len(lines) == 2
    assert outcome.decision_events_written == 1


def test_capture_dir_with_coverage(tmp_path: Path, client: Client, demo_server: Path, demo_policy: Path) -> None:
    cap = tmp_path / "cap"
    client.send(INIT, ECHO, EXEC)
    client.close_input()
    outcome = assay_stop.wrap_session([sys.executable, str(demo_server)], policy=demo_policy,
                                      event_source=SOURCE, capture_dir=cap,
                                      coverage_out=cap / "coverage.json",
                                      stdin=client.stdin, stdout=client.stdout)
    client.finish()
    assert outcome.capture_dir is not None and Path(outcome.capture_dir).name == "cap"
    assert sorted(p.name for p in cap.iterdir()) == [
        "coverage.json", "decisions.ndjson", "protocol.json", "proxy-stderr.log",
        "session-context.json", "session-stop.json",
    ]
    assert outcome.decision_log == "complete"
    closure = assay_stop.read_capture(cap)
    assert closure.closure == "closed", closure.to_dict()
    assert closure.session_id == outcome.session_id


def test_dry_run_forwards_denied_calls(tmp_path: Path, client: Client, demo_server: Path, demo_policy: Path) -> None:
    log = tmp_path / "d.ndjson"
    client.send(INIT, EXEC)
    client.close_input()
    assay_stop.wrap_session([sys.executable, str(demo_server)], policy=demo_policy, dry_run=True,
                            event_source=SOURCE, decision_log=log, decision_log_new=True,
                            stdin=client.stdin, stdout=client.stdout)
    resp = by_id(client.finish())[3]
    assert resp["result"]["isError"] is False and "executed" in resp["result"]["content"][0]["text"]
    event = json.loads(log.read_text())
    assert event["data"]["decision"] == "deny" and event["data"]["enforced"] is False


def test_max_line_bytes_ends_the_session_as_proxy_error(client: Client, demo_server: Path, demo_policy: Path) -> None:
    client.send(INIT, call(2, "echo", '{"text":"%s"}' % ("x" * 500)))
    client.close_input()
    outcome = assay_stop.wrap_session([sys.executable, str(demo_server)], policy=demo_policy,
                                      max_line_bytes=300, stdin=client.stdin, stdout=client.stdout)
    client.finish()
    assert outcome.session_end == "proxy_error"
    assert outcome.proxy_error is not None
    assert outcome.exit_code == 3


def test_drain_timeout_bounds_a_server_that_ignores_eof(client: Client, fault_server: Path, demo_policy: Path) -> None:
    session = SessionThread(lambda: assay_stop.wrap_session(
        [sys.executable, str(fault_server), "ignore"], policy=demo_policy, drain_timeout=0.3,
        stdin=client.stdin, stdout=client.stdout))
    start = time.monotonic()
    session.start()
    client.send(INIT)
    # The server answers once it ignores SIGTERM: the input closes (and the drain starts) only
    # then, so the drain's SIGTERM never lands on a server still starting up.
    client.reader.wait_lines(1)
    client.close_input()
    session.join(60)
    elapsed = time.monotonic() - start
    assert session.error is None, session.error
    outcome = session.result
    client.finish()
    assert elapsed < 10
    assert outcome.assay_kill_requested is True
    assert outcome.termination == "signaled" and outcome.signal == 9
    assert outcome.exit_code == 128 + 9


def test_discovery_only_run_writes_no_stop(tmp_path: Path, client: Client, demo_server: Path, demo_policy: Path) -> None:
    client.close_input()
    outcome = assay_stop.wrap_session([sys.executable, str(demo_server)], policy=demo_policy,
                                      event_source=SOURCE, capture_dir=tmp_path / "cap",
                                      stdin=client.stdin, stdout=client.stdout)
    client.finish()
    assert outcome.discovery_only is True and outcome.stop_written is False
    assert not (tmp_path / "cap" / "session-stop.json").exists()


# --- exceptions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, option",
    [
        (dict(policy="/nonexistent/policy.yaml"), "policy"),
        (dict(decision_log="LOG"), "event_source"),
        (dict(event_source="not a uri"), "event_source"),
        (dict(event_source=SOURCE, decision_log="LOG", session_stop_out="STOP"), "decision_log_new"),
        (dict(drain_timeout=-1.0), "drain_timeout"),
        (dict(idle_drain=float("nan")), "idle_drain"),
        (dict(max_line_bytes=0), "max_line_bytes"),
        (dict(label=""), "label"),
        (dict(event_source=SOURCE, capture_dir="CAP", decision_log="LOG"), "decision_log"),
    ],
)
def test_config_errors_are_value_errors_and_create_nothing(
    tmp_path: Path, demo_server: Path, demo_policy: Path, kwargs: dict[str, Any], option: str
) -> None:
    kwargs = {k: (str(tmp_path / v) if v in ("LOG", "STOP", "CAP") else v) for k, v in kwargs.items()}
    kwargs.setdefault("policy", demo_policy)
    marker = tmp_path / "spawned"
    with pytest.raises(assay_stop.ConfigError) as info:
        assay_stop.wrap_session(["sh", "-c", f"touch {marker}"], stdin=0, stdout=1, **kwargs)
    e = info.value
    assert isinstance(e, ValueError)
    assert e.option == option and e.kind == "config" and e.exit_status == 2
    # Options are spelled as Python keywords, never as CLI flags.
    assert str(e).startswith(f"{option}: ") and "--" not in str(e), str(e)
    assert list(tmp_path.iterdir()) == []  # nothing spawned, nothing created


def test_existing_evidence_path_is_a_config_error(tmp_path: Path, demo_policy: Path) -> None:
    stop = tmp_path / "stop.json"
    stop.write_text("keep")
    with pytest.raises(ValueError, match="already exists"):
        assay_stop.wrap_session(["true"], policy=demo_policy, event_source=SOURCE, session_stop_out=stop)
    assert stop.read_text() == "keep"


def test_empty_command_is_a_config_error(demo_policy: Path) -> None:
    with pytest.raises(assay_stop.ConfigError) as info:
        assay_stop.wrap_session([], policy=demo_policy)
    assert info.value.option == "command"


def test_argument_type_errors(demo_policy: Path) -> None:
    with pytest.raises(TypeError, match="list of arguments"):
        assay_stop.wrap_session("python3 server.py", policy=demo_policy)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fileno"):
        assay_stop.wrap_session(["true"], policy=demo_policy, stdin="0")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        assay_stop.wrap_session(["true"], policy=demo_policy, stdin=True)
    with pytest.raises(TypeError):
        assay_stop.wrap_session(["true"], policy=demo_policy, event_source=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        assay_stop.wrap_session(["true"], policy=demo_policy, drain_timeout="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-negative"):
        assay_stop.wrap_session(["true"], policy=demo_policy, stdin=-1)


def test_closed_descriptor_is_an_os_error(demo_policy: Path) -> None:
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    with pytest.raises(assay_stop.WrapError) as info:
        assay_stop.wrap_session(["true"], policy=demo_policy, stdin=r, stdout=w)
    assert info.value.errno == errno.EBADF


def test_missing_command_is_a_wrap_error(client: Client, demo_policy: Path, tmp_path: Path) -> None:
    with pytest.raises(assay_stop.WrapError) as info:
        assay_stop.wrap_session([str(tmp_path / "no-such-server")], policy=demo_policy,
                                stdin=client.stdin, stdout=client.stdout)
    e = info.value
    assert isinstance(e, OSError) and not isinstance(e, assay_stop.StopWriteError)
    assert e.errno == errno.ENOENT
    assert e.kind == "command_not_found" and e.exit_status == 127
    assert "no-such-server" in str(e)


def test_not_executable_command_is_a_wrap_error(client: Client, demo_policy: Path, tmp_path: Path) -> None:
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(OSError) as info:
        assay_stop.wrap_session([str(script)], policy=demo_policy, stdin=client.stdin, stdout=client.stdout)
    assert isinstance(info.value, assay_stop.WrapError)
    assert info.value.errno == errno.EACCES and info.value.exit_status == 126


def test_stop_write_failure_raises_with_the_outcome(
    tmp_path: Path, client: Client, fault_server: Path, demo_policy: Path
) -> None:
    log = tmp_path / "decisions.ndjson"
    ctx = tmp_path / "context.json"
    stop_dir = tmp_path / "stopdir"
    stop_dir.mkdir()
    session = SessionThread(lambda: assay_stop.wrap_session(
        [sys.executable, str(fault_server), "exit7"], policy=demo_policy, event_source=SOURCE,
        decision_log=log, decision_log_new=True, session_context_out=ctx,
        session_stop_out=stop_dir / "stop.json", stdin=client.stdin, stdout=client.stdout))
    session.start()
    client.send(INIT, ECHO, EXEC)
    client.reader.wait_lines(3)  # the session is live: stdin is still open
    stop_dir.rmdir()
    client.close_input()
    session.join(60)
    assert not session.is_alive()
    e = session.error
    assert isinstance(e, assay_stop.StopWriteError), e
    assert isinstance(e, assay_stop.WrapError) and isinstance(e, OSError)
    assert e.kind == "stop_write" and e.exit_status == 3
    outcome = e.outcome
    assert isinstance(outcome, assay_stop.WrapOutcome)
    assert outcome.child_exit_code == 7 and outcome.termination == "exited"
    assert outcome.exit_code == 3 and outcome.stop_written is False
    assert not stop_dir.exists()
    # Earlier evidence is intact.
    assert len(log.read_text().splitlines()) == 2
    assert json.loads(ctx.read_text())["type"] == "assay.mcp.session.context.v1"
    client.finish()


# --- the GIL ------------------------------------------------------------------------------------


def _count_for(seconds: float) -> int:
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        n += 1
    return n


def test_gil_is_released_while_a_session_runs(client: Client, demo_server: Path, demo_policy: Path) -> None:
    baseline = _count_for(0.5)
    session = SessionThread(lambda: assay_stop.wrap_session(
        [sys.executable, str(demo_server)], policy=demo_policy,
        stdin=client.stdin, stdout=client.stdout))
    session.start()
    client.send(INIT)
    client.reader.wait_lines(1)  # the session thread is inside wrap_session
    during = _count_for(0.5)
    still_running = session.is_alive()
    client.close_input()
    session.join(30)
    client.finish()
    print(f"\nGIL test: {baseline} iterations/0.5s alone, {during} while a session ran "
          f"({during / baseline:.0%})")
    assert still_running, "the session must still be running while the main thread counts"
    assert session.error is None and session.result.exit_code == 0
    # With the GIL held by the session, the main thread could not count at all.
    assert during > baseline * 0.3


def test_two_sessions_run_concurrently(demo_server: Path, demo_policy: Path) -> None:
    import conftest

    clients = []
    for _ in range(2):
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        reader = conftest.Reader(out_r)
        reader.start()
        clients.append(Client(stdin=in_r, stdout=out_w, writer=in_w, reader=reader))
    threads = [SessionThread(lambda c=c: assay_stop.wrap_session(
        [sys.executable, str(demo_server)], policy=demo_policy, stdin=c.stdin, stdout=c.stdout))
        for c in clients]
    for t in threads:
        t.start()
    for c in clients:
        c.send(INIT)
    for c in clients:  # both sessions answer while both are open
        c.reader.wait_lines(1)
    for c in clients:
        c.close_input()
    for t, c in zip(threads, clients):
        t.join(30)
        c.finish()
        assert t.error is None and t.result.exit_code == 0
    assert threads[0].result.session_id != threads[1].result.session_id


def test_bytes_and_pathlike_paths(tmp_path: Path, client: Client, demo_server: Path, demo_policy: Path) -> None:
    client.send(INIT)
    client.close_input()
    outcome = assay_stop.wrap_session([sys.executable.encode(), demo_server], policy=bytes(demo_policy),
                                      event_source=SOURCE, capture_dir=os.fsencode(tmp_path / "c"),
                                      stdin=io.FileIO(client.stdin, closefd=False),
                                      stdout=client.stdout)
    client.finish()
    assert outcome.stop_written
