#!/usr/bin/env python3
"""The reader: judge a capture directory written through wrap_entry.py.

usage: session_stop.py CAPTURE

Prints the closure verdict (JSON) on stdout. Exit status 0 only for ``closed``; 1 for
``incomplete`` or ``unknown`` (the reasons are in the verdict); 2 for a usage error.
``closed`` means a recorded ending with matching retained decision accounting. It is not proof
of what the server executed, nor an authentication of the producer.
"""
from __future__ import annotations

import sys
from typing import List, Optional

import assay_stop


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: session_stop.py CAPTURE", file=sys.stderr)
        return 2
    closure = assay_stop.read_capture(args[0])
    print(closure.to_json(indent=True))
    if closure.closure != "closed":
        for reason in closure.reasons:
            print(f"session_stop: {closure.closure}: {reason.code}: {reason.detail}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
