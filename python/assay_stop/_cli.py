"""The ``assay`` console script: the same command line as the native ``assay`` binary.

The package's ``[project.scripts]`` entry ``assay = "assay_stop._cli:main"`` runs the command
line linked into the extension from the binary's own crate (``crates/assay-cli``), so ``pip install``,
``pipx install`` and ``uv tool install`` all put the same ``assay`` on ``PATH``: same commands,
options, output and exit statuses.
"""
from __future__ import annotations

import signal
import sys
from typing import List, Optional

from assay_stop import _native


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``assay`` with ``argv`` (default ``sys.argv``) and return its exit status."""
    args = sys.argv if argv is None else argv
    # Start as the native binary starts: SIGPIPE ignored (Python ignores it too) and every other
    # signal at its default disposition. Python's own SIGINT handler would turn Ctrl-C into a
    # KeyboardInterrupt that cannot be raised while the command runs, and Python ignores SIGXFSZ,
    # which the server would inherit.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    # The path of this script is the `assay` that `mcp wrap-config` writes into host
    # configurations (made absolute by the command line).
    exe = args[0] if args else "assay"
    return _native.run_cli(args, exe)


if __name__ == "__main__":
    sys.exit(main())
