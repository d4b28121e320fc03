"""`assay_stop.wrap_session(otlp_endpoint=...)` (SPEC §10 `--otlp-endpoint`, as the CLI and the C
ABI's `otlp_endpoint`): a real session's spans reach a local OTLP/HTTP receiver started by the
test, each request parsed with the official `opentelemetry-proto` package; the stop record counts
them; a receiver that is down loses the spans with a counted loss and leaves the session and its
capture as they are; a URL that is not `http://` is a ConfigError before anything runs."""
from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, List, Tuple

import pytest

import assay_stop
from conftest import INIT, call, session_of
from test_export import need

SOURCE = "assay://test/python-live-export"
SESSION = [INIT, call(2, "echo", '{"text":"a"}'), call(3, "exec", "{}")]


class Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP receiver on a free local port that keeps every request it accepted."""

    def __init__(self) -> None:
        self.got: List[Tuple[str, str, bytes]] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            self.server.got.append((self.path, self.headers.get("Content-Type", ""), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


def session(tmp_path: Path, demo_server: Path, demo_policy: Path, url: str) -> assay_stop.WrapOutcome:
    return session_of(SESSION, lambda stdin, stdout: assay_stop.wrap_session(
        [sys.executable, str(demo_server)], policy=str(demo_policy), event_source=SOURCE,
        capture_dir=str(tmp_path / "cap"), otlp_endpoint=url, stdin=stdin, stdout=stdout))


def test_spans_reach_the_receiver_and_are_counted(tmp_path: Path, demo_server: Path,
                                                  demo_policy: Path) -> None:
    json_format = need("google.protobuf.json_format")
    trace_service = need("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    receiver = Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        outcome = session(tmp_path, demo_server, demo_policy, receiver.url)
    finally:
        receiver.shutdown()
        receiver.server_close()
    assert outcome.exit_code == 0, outcome.to_dict()
    assert assay_stop.read_capture(tmp_path / "cap").closure == "closed"
    counts = outcome.to_dict()["stop"]["otlp_export"]
    # The session span and one per decision-log line (two calls).
    assert counts == {"spans": 3, "exported": 3, "dropped": 0}
    spans = []
    for path, content_type, body in receiver.got:
        assert path == "/v1/traces"
        assert content_type == "application/json"
        req = json_format.Parse(body, trace_service.ExportTraceServiceRequest())
        for rs in req.resource_spans:
            for ss in rs.scope_spans:
                spans.extend(ss.spans)
    assert len(spans) == 3
    assert sorted(s.name for s in spans) == ["assay.session", "tools/call echo", "tools/call exec"]


def test_a_receiver_that_is_down_costs_counted_spans_only(tmp_path: Path, demo_server: Path,
                                                          demo_policy: Path) -> None:
    # A port nothing listens on: bound, then closed.
    receiver = Receiver()
    url = receiver.url
    receiver.server_close()
    outcome = session(tmp_path, demo_server, demo_policy, url)
    assert assay_stop.read_capture(tmp_path / "cap").closure == "closed"
    counts = outcome.to_dict()["stop"]["otlp_export"]
    assert counts["spans"] == 3 and counts["exported"] == 0 and counts["dropped"] == 3, counts
    assert outcome.stop_written


@pytest.mark.parametrize("url", ["https://127.0.0.1:4318", "ftp://x", "not a url"])
def test_an_endpoint_that_is_not_http_is_a_config_error(tmp_path: Path, demo_server: Path,
                                                        demo_policy: Path, url: str) -> None:
    with pytest.raises(assay_stop.ConfigError) as e:
        assay_stop.wrap_session([sys.executable, str(demo_server)], policy=str(demo_policy),
                                event_source=SOURCE, capture_dir=str(tmp_path / "cap"),
                                otlp_endpoint=url, stdin=0, stdout=1)
    assert e.value.option == "otlp_endpoint"
    assert not (tmp_path / "cap").exists()
