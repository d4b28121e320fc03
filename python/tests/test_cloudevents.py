"""Every evidence event parses with the CloudEvents Python SDK (SPEC §4)."""
from __future__ import annotations

import stat
from pathlib import Path

from cloudevents.core.formats.json import JSONFormat


def _events(cap: Path) -> list[bytes]:
    events = [
        (cap / "session-context.json").read_bytes(),
        (cap / "session-stop.json").read_bytes(),
    ]
    events += [line for line in (cap / "decisions.ndjson").read_bytes().splitlines() if line]
    return events


def test_every_event_parses_with_the_cloudevents_sdk(cli_capture: Path) -> None:
    fmt = JSONFormat()
    types = []
    for raw in _events(cli_capture):
        event = fmt.read(None, raw)
        assert event.get_specversion() == "1.0"
        assert event.get_source() == "assay://pytest/session"
        assert event.get_time() is not None and event.get_time().utcoffset().total_seconds() == 0
        assert event.get_datacontenttype() == "application/json"
        assert isinstance(event.get_data(), dict)
        types.append(event.get_type())
    assert types == [
        "assay.mcp.session.context.v1",
        "assay.mcp.session.stop.v1",
        "assay.tool.decision",
        "assay.tool.decision",
    ]


def test_evidence_files_are_owner_only(cli_capture: Path) -> None:
    for f in cli_capture.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f.name
