#!/usr/bin/env python3
"""An MCP server entry for a host: wraps a real MCP server into a capture directory.

usage: wrap_entry.py (--capture-root ROOT | --capture-dir DIR) [--policy P] [--event-source URI]
                     [--label NAME] -- SERVER [ARGS...]

Configure this script as the MCP server command in the host (agent, IDE). It runs
``assay_stop.wrap_session`` on its own stdin/stdout: the host talks to SERVER through the
wrapper, every ``tools/call`` is checked against the policy, and the capture directory receives
protocol.json, session-context.json, decisions.ndjson, session-stop.json and proxy-stderr.log
(SERVER's stderr and the wrapper's diagnostics).

Hosts start the configured command on every launch and reconnect (and some clients probe it
first), so use ``--capture-root ROOT``: each run gets its own new directory
``ROOT/<UTC time>-<session id>``, and a discovery-only probe leaves ``no-session.json`` instead
of a stop record. Judge them all with ``assay capture summary ROOT`` (or
``assay_stop.read_captures``), one with ``session_stop.py DIR``. ``--capture-dir DIR`` writes
one run into DIR, which must not already hold a capture.

Signals are forwarded (``forward_signals=True``): the official MCP SDKs shut a server down by
closing its stdin, waiting about 2 s, then sending SIGTERM to this process. A SERVER that is still
running then gets the SIGTERM, and the session ends through its normal path, so that shutdown
still leaves a closed capture (its stop record shows how SERVER ended); a SERVER that stays silent
after its stdin closed, with no request pending, is ended by the bounded cleanup after 1 s (the
default ``idle_drain``). Whatever ends this process, SERVER ends too.

Exit status: that of ``assay mcp wrap`` (the server's exit code, 128+signal, 3 for a wrapper or
evidence failure including a failed stop write, 2 for a configuration error, 126/127 when the
server cannot be executed / is not found).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

import assay_stop

HERE = Path(__file__).resolve().parent
DEFAULT_POLICY = HERE.parents[2] / "examples" / "demo" / "policy.yaml"
DEFAULT_EVENT_SOURCE = "assay://agent-session-evidence-probe/session"


def _parse(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="wrap_entry.py",
        description="Wrap an MCP stdio server into an assay capture directory.",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--capture-root", type=Path,
                       help="a new capture directory per run under ROOT (created if missing)")
    where.add_argument("--capture-dir", type=Path, help="one capture directory (must be new)")
    parser.add_argument("--policy", type=Path, default=DEFAULT_POLICY, help="tool policy file")
    parser.add_argument("--event-source", default=DEFAULT_EVENT_SOURCE, help="CloudEvents source")
    parser.add_argument("--label", default=None, help="server_id label")
    parser.add_argument("server", nargs="+", help="the MCP server command (after --)")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    try:
        outcome = assay_stop.wrap_session(
            args.server,
            policy=args.policy,
            event_source=args.event_source,
            label=args.label,
            capture_dir=args.capture_dir,
            capture_root=args.capture_root,
            forward_signals=True,
            stdin=sys.stdin,
            stdout=sys.stdout,
        )
    except assay_stop.ConfigError as e:
        print(f"assay: {e}", file=sys.stderr)
        return 2
    except assay_stop.StopWriteError as e:
        print(f"assay: {e} ({e.outcome.termination}, child exit {e.outcome.child_exit_code})", file=sys.stderr)
        return 3
    except assay_stop.WrapError as e:
        print(f"assay: {e}", file=sys.stderr)
        return int(getattr(e, "exit_status", 3))
    for err in outcome.evidence_errors:
        print(f"assay: {err}", file=sys.stderr)
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(main())
