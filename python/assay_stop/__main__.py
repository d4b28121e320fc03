"""``python -m assay_stop read DIR``: judge a capture directory like ``assay capture read DIR``.

Prints the verdict JSON on stdout; exit status 0 closed, 1 incomplete, 3 unknown, 2 usage error
(DIR does not exist or is not a directory).
"""
from __future__ import annotations

import os
import sys
from typing import List, Optional

from assay_stop import read_capture

USAGE = "usage: python -m assay_stop read DIR"


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if len(args) != 2 or args[0] != "read" or args[1].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    path = args[1]
    # Like `assay capture read`: no directory there is a usage error that says so.
    if not os.path.exists(path):
        print(f"assay: capture read: missing capture directory: {path} does not exist",
              file=sys.stderr)
        return 2
    if not os.path.isdir(path):
        print(f"assay: capture read: not a capture directory: {path} is not a directory",
              file=sys.stderr)
        return 2
    closure = read_capture(path)
    try:
        sys.stdout.write(closure.to_json(indent=True) + "\n")
        sys.stdout.flush()
    except OSError:
        return 3
    return closure.exit_status


if __name__ == "__main__":
    sys.exit(main())
