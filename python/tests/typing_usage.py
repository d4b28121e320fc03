"""Typed usage of assay_stop, checked with `mypy --strict` against the package's stubs by
test_typing.py. It is never run: it only has to type-check."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import assay_stop
from assay_stop import Closure, ConfigError, PackageManifest, StopWriteError, WrapError, WrapOutcome


def run(server: Path, policy: Path, capture: Path) -> int:
    r, w = os.pipe()
    try:
        outcome: WrapOutcome = assay_stop.wrap_session(
            [sys.executable, server],
            policy=policy,
            event_source="assay://typing/session",
            label="typed",
            capture_dir=capture,
            coverage_out=capture / "coverage.json",
            dry_run=False,
            drain_timeout=1.5,
            max_line_bytes=1 << 20,
            stdin=r,
            stdout=sys.stdout,
            stderr=None,
        )
    except ConfigError as e:
        option: Optional[str] = e.option
        print(option, e.exit_status)
        return 2
    except StopWriteError as e:
        failed: WrapOutcome = e.outcome
        return failed.exit_code
    except WrapError as e:
        errno: Optional[int] = e.errno
        kind: str = e.kind
        print(errno, kind)
        return e.exit_status
    finally:
        os.close(w)
        os.close(r)
    code: int = outcome.exit_code
    child: Optional[int] = outcome.child_exit_code
    end: str = outcome.session_end
    written: Optional[int] = outcome.decision_events_written
    errors: List[str] = outcome.evidence_errors
    data: Dict[str, Any] = outcome.to_dict()
    print(child, end, written, errors, data, outcome.stop["termination"], outcome.paths["capture_dir"])
    return code


def judge(capture: str) -> bool:
    closure: Closure = assay_stop.read_capture(capture)
    for reason in closure.reasons:
        print(reason.code, reason.detail, reason.to_dict()["code"])
    stop = closure.stop
    if stop is not None:
        print(stop["decision_log"])
    print(closure.files, closure.non_claims, closure.session_id, closure.to_json(indent=True))
    return closure.closure == "closed"


def package(src: Path, dst: str, extra: List[Path]) -> Dict[str, Any]:
    manifest: PackageManifest = assay_stop.package_capture(src, dst, extra_files=extra)
    verdict: Dict[str, Any] = manifest.closure
    print(verdict["closure"], manifest.files, manifest.producer, manifest.extra_files, manifest.schema)
    return manifest.to_dict()


version: str = assay_stop.__version__


def audit(root: Path) -> int:
    outcome: WrapOutcome = assay_stop.wrap_session(
        [sys.executable, "server.py"], policy="p.yaml", event_source="assay://typing/session",
        capture_root=root,
    )
    print(outcome.capture_dir, outcome.paths["no_session"])
    verdicts: List[Closure] = assay_stop.read_captures(root)
    sessions = [v for v in verdicts if not v.no_session]
    name: Optional[str] = sessions[0].capture if sessions else None
    print(name)
    return sum(v.closure != "closed" for v in sessions)
